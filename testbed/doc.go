// Package testbed builds an emulated cluster on one Linux box and runs
// allreduces across it: a network namespace per host and per switch,
// joined by veth pairs whose every direction is shaped to a link rate by
// a tbf qdisc, with optional loss per link (nftables), on one switch or a
// two-level tree. The switch daemons run in their namespaces and every
// host is a `flare allreduce` process in its own; the host ring baseline
// runs over the same shaped links. Times are then bound by the links, as
// on a network, not by the loopback's CPU cost per byte, so they can be
// set against the model (models.Collectives) for the same rates.
//
// The usage loop:
//
//	rows, err := testbed.Run(ctx, testbed.Config{
//		Hosts: 4, LinkBps: 200e6, Bytes: 4 << 20, Exe: "bin/flare",
//	})
//	for _, r := range rows {
//		fmt.Println(r.Path, r.MedianS, r.IdealS, r.CPUBound)
//	}
//
// Run needs root and iproute2 (ip, tc), and nftables for loss; Check says
// what is missing. Everything it makes is named with a per-run prefix
// (RunPrefix(Kind, ...)) and removed before Run returns, on success, error
// or cancellation; a run killed outright leaves namespaces that the next
// run's SweepStale deletes.
package testbed
