// Package hpu emulates a PsPIN-style switch processing unit: clusters of
// small cores that run packet handlers out of a per-cluster L1 memory.
//
// The shape follows PsPIN (4 clusters × 8 cores at 1 GHz, 1 MiB L1 per
// cluster, 20 handler requests queued per cluster) and every part is a
// parameter:
//
//   - one goroutine per core; a packet runs to completion on one core;
//   - a scheduler that sends a packet to its home cluster (block mod
//     clusters), where it waits for room when the home queue is full (or,
//     with Config.Overflow, PsPIN's default, goes to the least-loaded
//     cluster), and within a cluster to the lowest-numbered idle core of the
//     block's subset of S cores (S = 1 lets one core own a block), except
//     that a parked core is not woken while every CPU already runs an
//     awake core of the unit and one of the subset can queue the packet,
//     and, when the submitters take every CPU, the submitter runs a
//     parked idle core's packet itself, as that core (borrow.go);
//   - bounded per-cluster input queues whose occupancy is sampled on every
//     arrival;
//   - a per-cluster L1 arena of fixed-size aggregation buffers, carved into
//     per-job quotas;
//   - a Task that gives a handler its packet, memory, Emit and Lock/Unlock
//     with measured waiting, and charges PsPIN cycle costs (CostModel), so a
//     run reports the service time τ in cycles as well as in nanoseconds.
//
// The usage loop:
//
//	u, err := hpu.New(cfg, egress, done) // egress receives what handlers Emit; done gets each packet back
//	go u.Run(ctx)                        // starts the core goroutines
//	p.Handler = jobHandler               // the daemon's match rule picks it
//	err = u.Submit(p)                    // or SubmitWait(ctx, p) for back-pressure
//	stats := u.Stats()                   // per-core and per-cluster counters
//
// A Handler is plain code over a Task: it never touches a socket, and the same
// handler runs under the goroutine-per-core runner here and under the
// virtual-time runner (NewVirtual, a VirtualUnit) that only advances a cycle
// clock.
package hpu
