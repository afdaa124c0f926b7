package testbed

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// end is one side of a link: a veth device in a namespace with an address.
type end struct {
	ns, dev, addr string // addr: a.b.c.d (the /24 is the link's)
}

// link is a veth pair between two namespaces, shaped to rateBps in each
// direction by a tbf on each end's egress: the A end's qdisc is the A → B
// direction.
type link struct {
	name    string // what the report calls it: "h3", "leaf1-root"
	a, b    end    // a: the host (or leaf) side, b: the switch (or root) side
	rateBps float64
}

// tbfParams are the token bucket's burst and queue limit for a rate. The
// burst holds at least 1 ms of the rate and four of the largest frames, so
// the bucket never caps the rate below what tbf is asked for (a burst
// smaller than the timer's reach would); the queue holds at least 100 ms
// and 4 MiB, more than a UDP socket's send buffer, so a sender on this
// box blocks on its buffer before the qdisc drops (drops are reported).
func tbfParams(rateBps float64, mtu int) (burst, limit int64) {
	burst = max(int64(rateBps/8/1000), int64(4*(mtu+ethHeader)))
	limit = max(int64(rateBps/8/10), 4<<20)
	return burst, limit
}

// create makes the veth pair, moves each end into its namespace, sets
// the MTU, the addresses (/24) and shapes both directions.
func (l *link) create(mtu int) error {
	if err := ipIn(l.b.ns, "link", "add", l.b.dev, "mtu", strconv.Itoa(mtu), "type", "veth",
		"peer", "name", l.a.dev, "mtu", strconv.Itoa(mtu), "netns", l.a.ns); err != nil {
		return err
	}
	for _, e := range []end{l.a, l.b} {
		if err := ipIn(e.ns, "addr", "add", e.addr+"/24", "dev", e.dev); err != nil {
			return err
		}
		if err := ipIn(e.ns, "link", "set", e.dev, "up"); err != nil {
			return err
		}
		if err := shape(e.ns, e.dev, l.rateBps, mtu); err != nil {
			return err
		}
	}
	return nil
}

// shape puts a tbf of rate bits/s at the root of dev's egress.
func shape(ns, dev string, rateBps float64, mtu int) error {
	burst, limit := tbfParams(rateBps, mtu)
	_, err := execIn(ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
		"rate", strconv.FormatInt(int64(rateBps), 10)+"bit",
		"burst", strconv.FormatInt(burst, 10), "limit", strconv.FormatInt(limit, 10))
	return err
}

// qdiscStats are one qdisc's counters since it was made, and the packets
// the loss rule of its device dropped before they reached it (Lost: nft's
// counter, not tc's).
type qdiscStats struct {
	Bytes   int64 `json:"bytes"`
	Packets int64 `json:"packets"`
	Drops   int64 `json:"drops"`
	Lost    int64 `json:"-"`
}

// egress reads the counters of the tbf on dev in ns: every frame that
// direction of the link carried (Ethernet header included) and the ones
// its queue dropped.
func egress(ns, dev string) (qdiscStats, error) {
	out, err := execIn(ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev, "root")
	if err != nil {
		return qdiscStats{}, err
	}
	var qs []struct {
		Kind string `json:"kind"`
		qdiscStats
	}
	if err := json.Unmarshal(out, &qs); err != nil {
		return qdiscStats{}, fmt.Errorf("tc -j qdisc show dev %s in %s: %w (%q)", dev, ns, err, out)
	}
	for _, q := range qs {
		if q.Kind == "tbf" {
			return q.qdiscStats, nil
		}
	}
	return qdiscStats{}, fmt.Errorf("no tbf on %s in %s: %s", dev, ns, out)
}

// lossTable is the nftables table of a namespace's loss rules.
const lossTable = "flaretb"

// addLoss drops ppm in a million of the IPv4 packets leaving dev (on the
// postrouting hook: the namespace's own packets and those it forwards),
// counted in a rule whose comment is dev (lossDrops reads it); the chain
// is made on first use in the namespace.
func addLoss(ns, dev string, ppm int, chainMade bool) error {
	if !chainMade {
		if _, err := execIn(ns, "nft", "add", "table", "inet", lossTable); err != nil {
			return err
		}
		if _, err := execIn(ns, "nft", "add", "chain", "inet", lossTable, "post",
			"{ type filter hook postrouting priority 0; policy accept; }"); err != nil {
			return err
		}
	}
	_, err := execIn(ns, "nft", "add", "rule", "inet", lossTable, "post", "oifname", dev, "meta", "nfproto", "ipv4",
		"numgen", "random", "mod", "1000000", "<", strconv.Itoa(ppm), "counter", "drop", "comment", dev)
	return err
}

// lossDrops reads how many packets dev's loss rule in ns has dropped.
func lossDrops(ns, dev string) (int64, error) {
	out, err := execIn(ns, "nft", "-j", "list", "chain", "inet", lossTable, "post")
	if err != nil {
		return 0, err
	}
	return ruleCounter(out, dev)
}

// ruleCounter is the packets counted by the rule commented dev in `nft -j
// list chain` output.
func ruleCounter(nftJSON []byte, dev string) (int64, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Comment string `json:"comment"`
				Expr    []struct {
					Counter *struct {
						Packets int64 `json:"packets"`
					} `json:"counter"`
				} `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(nftJSON, &doc); err != nil {
		return 0, fmt.Errorf("nft -j list chain: %w (%q)", err, nftJSON)
	}
	for _, o := range doc.Nftables {
		if o.Rule == nil || o.Rule.Comment != dev {
			continue
		}
		for _, e := range o.Rule.Expr {
			if e.Counter != nil {
				return e.Counter.Packets, nil
			}
		}
	}
	return 0, fmt.Errorf("no counted loss rule for %s in %s", dev, nftJSON)
}
