// Package models is Flare's analytic model: what the paper (De Sensi et
// al., "Flare: Flexible In-Network Allreduce", SC'21) derives for a
// PsPIN-style switch and what the emulator is checked against.
//
//   - Dense aggregation (§4–6): the service time τ of the single-buffer,
//     multi-buffer and tree designs, the bandwidth 𝓑 = min(K/τ, 1/δ), the
//     block latency 𝓛, the input-buffer occupancy, and the Little's-law
//     working memory 𝓡 = M·(𝓑/P)·𝓛 (Evaluate, Sweep, JobMemory).
//   - The algorithm choice: the paper's size thresholds (ChoosePaper) and
//     the model's best design within a memory budget (ChooseModel).
//   - Sparse aggregation (§7): hash and array storage against density
//     (SparseEvaluate).
//   - Host-side allreduce (ring, direct, halving-doubling, hierarchical)
//     against in-network dense and sparse on one switch or a two-level fat
//     tree (Collectives; Figure15Params is the paper's Figure 15 setting).
//   - TopoOpt's ring permutations (TotientPerms, SelectPermutations,
//     RingOrder, PermStats).
//   - Tables and figures (WriteTable, WriteCSV, Plot, PlotDTypes).
//
// The usual loop:
//
//	p, _ := models.Preset("flare")        // or set Params by hand
//	p.Hosts = 32
//	if err := p.Validate(); err != nil { ... }
//	rows := models.Sweep(p, models.Designs(), 4<<10, 4<<20)
//	models.WriteTable(os.Stdout, rows)
//	models.Plot("flare.svg", rows)
//
// Every formula cites the paper's section; docs/MODEL.md derives them, says
// where the paper's text is ambiguous and which reading the code takes,
// and shows the golden tables (testdata/models, go test ./models -update).
// The package is pure: no I/O but the writers and plots it is asked for.
package models
