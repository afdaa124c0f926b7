// Package bench measures allreduces: it joins a configuration's ranks
// (sessions through a switch or a tree of switches, or the host ring
// baseline), runs warmup and timed calls, checks every element of each
// result against a plain reference of the ranks' deterministic patterns,
// and reports the times, bandwidths and traffic as rows. It is the engine
// of `flare allreduce`, `flare bench` (the switch against the ring and the
// two UDP relays, the sparse comparison, the tree of switches with its
// per-link bytes), `flare demo` and `flare model calibrate`; cmd/flare only
// turns flags into its Configs.
//
// One measurement, the loop every command runs:
//
//	res, err := bench.Run(ctx, bench.Config{Switch: "127.0.0.1:7470", Ranks: 8,
//		Count: 1 << 18, DType: wire.Float32, Op: wire.OpSum, Algo: "auto",
//		Iters: 10, Warmup: 2, Verify: true, Timeout: 30 * time.Second, Token: token})
//	// res.MedianS, res.AlgbwGBps, res.BusbwGBps, res.Verified, ...
//
// Errors in a Config name its field (Config.Ranks, Suite.Paths); the CLI
// maps them to its flags.
package bench
