#!/usr/bin/env python3
"""Mutation check of the tests that guard the aggregation's correctness.

Each mutant is one deliberate defect in the code that decides what a sum
holds, who may add to it and where a result goes: the generation rule,
the dense handler (its tree and multi-buffer designs, and a non-root
switch's blocks), the sparse handler (its tables' flush and the sparse
tree), bounded mode, waiting reports and block-state pools, the element
kernels and custom operators, the socket layer's send checks, GRO split
and GSO runs, the wire's checks and error bodies, the processing unit's
L1 memory, stages, placement, configuration and statistics and the
virtual unit the simulator runs on (its locks and agenda too), the
daemon's configuration, its member, join, abort, admission and parent
checks, what admission charges, a sparse job's shape, registered
admission and the admin port's jobs API, and its limits on what
strangers can make it hold, its egress and multicast pool, a child
switch's tree code, the host's options, join, call, its checks of a
join-ack, its receive path, sparse stream assembly and merge and
staggered order, the host ring baseline, the C library, the Python
package's buffers and PyTorch reducer, the analytic model's formulas,
parameters, design choice and job memory, the reference (its float16
too) and the checkers every test holds a sum to, the harness the
handlers' property tests run on, the packet path's buffer recycling and
receive regions, cores a submitter borrows, socket groups and their
steering, socket errors and per-link counts, the fan-out relay, which
field each of the command line's flags sets, flare bench's medians and
ratios, packet captures, a Go slice's dtype, the simulator's checks and
measurements and their comparison with the model, the daemon's metrics,
the in-memory network, the host's errors, Aborts, waiting reports and
top-k sparsification, a block table's layout and the handlers' counters,
and flare bench's configuration and verification. A guard removed, a
comparison moved by one (either way), a sum made a copy. For each, the
script applies it to a scratch copy of the tree (a git worktree of HEAD
under a temporary directory; this tree is never touched), runs `go test`
on the mutant's package (its tests that RUN names, where it names some,
and what ALSO names for it), or `make python-test` for a mutant in
python/, and says which test failed first ("killed"; -failfast stops
there, as a mutant of the generation rule can make a real-time test wait
out its timeouts) or that every test passed ("SURVIVED"). A survivor is
a defect the tests let through, unless the mutant is marked equivalent:
one that cannot change what the code does for any input (the reason is
given). A mutant whose text is no longer in its file is reported, so the
list goes stale loudly.

    tools/mutation-check.py            # every mutant
    tools/mutation-check.py G1 D3      # some of them
    tools/mutation-check.py --list

docs/RELIABILITY.md ("Mutation check") gives the last run's results.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
import time

# (name, file, text, replacement, equivalent-because or None)
MUTANTS = [
    # the generation rule (handlers/generation.go)
    ("G1", "handlers/generation.go", "\tcase gen < b.gen:\n\t\treturn genStale", "\tcase gen+1 < b.gen:\n\t\treturn genStale", None),
    ("G2", "handlers/generation.go", "\tif g.abandoned {\n\t\treturn false, g.settled == g.admitted", "\tif false {\n\t\treturn false, g.settled == g.admitted", None),
    ("G3", "handlers/generation.go", "\tg.abandoned = true\n\treturn g.settled == g.admitted", "\tg.abandoned = true\n\treturn false", None),
    ("G4", "handlers/generation.go", "\tcase genFinished:\n\t\td.resend(t)", "\tcase genFinished:", None),
    ("G5", "handlers/generation.go", "if gen+1 == b.gen {", "if gen == b.gen {", None),
    ("G6", "handlers/generation.go", "return false, g.settled == g.admitted", "return false, false", None),
    ("G7", "handlers/generation.go", "return g.settled != g.admitted }", "return g.settled == g.admitted }", None),
    ("G8", "handlers/generation.go", "if g := b.work.gstate(); g.abandon() {", "if g := b.work.gstate(); !g.abandon() {", None),
    # the dense handler (handlers/dense.go)
    ("D1", "handlers/dense.go", "\tif bm[word]&bit != 0 {\n\t\td.Stats.Duplicate", "\tif false && bm[word]&bit != 0 {\n\t\td.Stats.Duplicate", None),
    ("D2", "handlers/dense.go", "\td.bitmap(w)[child/64] &^= uint64(1) << (child % 64)\n", "",
     "every unadmit is of a block's first packet, so the work goes back to the pool, and releaseWork clears the bitmap"),
    ("D3", "handlers/dense.go", "return held == 0 || held-1 <= gen", "return held == 0 || true", None),
    ("D4", "handlers/dense.go", "switch int(w.gs.settled) {", "switch int(w.gs.admitted) {", None),
    ("D5", "handlers/dense.go", "\tclear(d.bitmap(w))\n", "", None),
    ("D6", "handlers/dense.go", "\t\td.kernel(w.acc[:len(p.Payload)], p.Payload)\n\t\tt.ChargeAggregate",
     "\t\tcopy(w.acc[:len(p.Payload)], p.Payload)\n\t\tt.ChargeAggregate", None),
    ("D7", "handlers/dense.go", "\tslot := p.Hdr.Generation & 1\n\tif d.results[0] == nil",
     "\tslot := (p.Hdr.Generation + 1) & 1\n\tif d.results[0] == nil", None),
    ("D8", "handlers/dense.go", "\t\tif b.state != blockActive {\n\t\t\tb.expires.Store(0)", "\t\tif false {\n\t\t\tb.expires.Store(0)",
     "Expire skips a block that is not active, and opening a block sets its deadline afresh"),
    ("D9", "handlers/dense.go", "\t\td.blocks[i].drop(d.releaseWork)\n", "", None),
    ("T1", "handlers/dense.go", "\treturn (n<<shift)-d.pow2 < d.cfg.Children", "\treturn (n<<shift)-d.pow2 <= d.cfg.Children", None),
    ("T2", "handlers/dense.go", "\t\tif w.gs.abandoned {\n\t\t\td.settle(t, b, w, x)\n\t\t\treturn",
     "\t\tif false {\n\t\t\td.settle(t, b, w, x)\n\t\t\treturn",
     "a handler of an abandoned work that climbs on folds only that work's buffers; every settle finds the work abandoned, so nothing is emitted, and its release frees what the work holds: cycles wasted, nothing else"),
    # a non-root switch's dense blocks (handlers/dense.go): its partial until the parent's result, and bounded resends
    ("N1", "handlers/dense.go", "\tif d.cfg.Uplink != nil && (d.final[0] == nil || !d.final[slot][p.Hdr.Block]) {", "\tif false {", None),
    ("N2", "handlers/dense.go", "\tif d.resultGen[slot][p.Hdr.Block] != p.Hdr.Generation+1 {\n\t\tt.Unlock(&b.lock)\n\t\td.Stats.Stale", "\tif false {\n\t\tt.Unlock(&b.lock)\n\t\td.Stats.Stale", None),
    ("N3", "handlers/dense.go", "\td.final[slot][p.Hdr.Block] = true\n", "", None),
    ("N4", "handlers/dense.go", "\t\t\td.final[slot][blk] = false\n", "", None),
    ("N5", "handlers/dense.go", "\t\th.Flags |= wire.FlagPartial\n\t\th.Child = d.resultCount[slot][p.Hdr.Block]\n", "", None),
    # bounded-time mode (handlers/bounded.go)
    ("B1", "handlers/bounded.go", "w, gen, count := b.work, b.gen, int(b.work.gs.admitted)",
     "w, gen, count := b.work, b.gen, int(b.work.gs.admitted)+1", None),
    ("B2", "handlers/bounded.go", "\t\tb.complete()\n\t\tb.expires.Store(0)\n\t\tt.Unlock(&b.lock)\n\t\td.release",
     "\t\tb.expires.Store(0)\n\t\tt.Unlock(&b.lock)\n\t\td.release", None),
    # the sparse handler (handlers/sparse*.go)
    ("S1", "handlers/sparse.go", "\tcase *word&bit != 0:\n\t\ts.Stats.Duplicate", "\tcase false && *word&bit != 0:\n\t\ts.Stats.Duplicate", None),
    ("S2", "handlers/sparse.go", "case k.total != 0 && (last || seq >= k.total), last && k.hi > seq+1:",
     "case k.total != 0 && (last || seq >= k.total):", None),
    ("S3", "handlers/sparse.go", "fin := live && int(w.done) == s.cfg.Children && !w.gs.busy()",
     "fin := live && int(w.done) == s.cfg.Children", None),
    ("S4", "handlers/sparse_store.go", "\t\tif binary.LittleEndian.Uint32(c) == idx {", "\t\tif true {", None),
    ("S5", "handlers/sparse_store.go", "\tif s.occupied(w, j, idx) {\n\t\ts.kernel(c, val)", "\tif false {\n\t\ts.kernel(c, val)", None),
    ("S6", "handlers/sparse_resend.go", "if len(r.lens) > 0 && r.gen > h.Generation {", "if false {", None),
    ("S7", "handlers/sparse_resend.go", "if r.gen == gen && !r.unstored {", "if !r.unstored {",
     "a record of another generation replays packets that carry that generation, which hosts drop"),
    # the sparse tree (handlers/sparse_tree.go): a child switch's record of its parent's stream
    ("R1", "handlers/sparse_tree.go", "\tcase p.Hdr.Generation < r.gen:\n", "\tcase false:\n", None),
    ("R2", "handlers/sparse_tree.go", "\tcase r.seen[seq/64]&bit != 0:", "\tcase false:", None),
    ("R3", "handlers/sparse_tree.go", "\tcase r.last >= 0 && (last || int(seq) > r.last):", "\tcase false:", None),
    ("R4", "handlers/sparse_tree.go", "\tif down.complete(gen) {", "\tif down.started && down.gen == gen {", None),
    ("R5", "handlers/sparse_tree.go", "r.got == r.last+1", "r.got >= r.last", None),
    # the multi-buffer design and the sparse tables' flush (handlers/dense.go, sparse_store.go, sparse_flush.go)
    ("M1", "handlers/dense.go", "\tfor k := range nb {", "\tfor k := range nb - 1 {", None),
    ("M2", "handlers/dense.go", "\tif w.filled[j] {\n\t\td.kernel(w.bufs[j].Data[:n], p.Payload)", "\tif false {\n\t\td.kernel(w.bufs[j].Data[:n], p.Payload)", None),
    ("M3", "handlers/dense.go", "\t\t\tw.filled[j] = false\n", "", None),
    ("M4", "handlers/sparse_flush.go", "\t\t\t\tif w.occ[j*s.occWords+wi]&(1<<b) == 0 {", "\t\t\t\tif false {", None),
    ("M5", "handlers/sparse_flush.go", "\t\tcopy(v, s.cell(w, g/s.cells, g%s.cells)[wire.IndexLen:])", "\t\tcopy(v, s.cell(w, 0, g%s.cells)[wire.IndexLen:])", None),
    ("M6", "handlers/sparse_flush.go", "\tif w.nspill > 0 {", "\tif w.nspill > 1 {", None),
    ("M7", "handlers/sparse_store.go", "\tif w.nspill == s.cfg.PacketPairs {", "\tif w.nspill == s.cfg.PacketPairs+1 {", None),
    # the processing unit's L1 memory (hpu/memory.go): quotas, reservations, the arenas' free stacks
    ("U1", "hpu/memory.go", "\tif u > q.limit || q.released.Load() {", "\tif q.released.Load() {", None),
    ("U2", "hpu/memory.go", "\tif free := m.freeLocked(); n > free {", "\tif free := m.freeLocked(); n > free+1 {", None),
    ("U3", "hpu/memory.go", "\t\t\theld += u\n", "", None),
    ("U4", "hpu/memory.go", "\tq.mem.reserved -= int(q.limit)\n", "", None),
    ("U5", "hpu/memory.go", "\tif !b.inUse {\n\t\ta.mu.Unlock()", "\tif false {\n\t\ta.mu.Unlock()",
     "put's only caller is Quota.Free, whose owner check refuses a second free first (Free clears the owner): the arena's check is a second line"),
    ("U6", "hpu/memory.go", "\tif u > q.limit || q.released.Load() {", "\tif u > q.limit {", None),
    ("U7", "hpu/memory.go", "\tif b.owner != q {", "\tif false {", None),
    # the host's sparse stream and merge, and the staggered sending order (proto/)
    ("P1", "proto/sparse_stream.go", "\tcase a.seen[seq/64]&bit != 0:\n\t\treturn a.Complete(), nil", "\tcase false:\n\t\treturn a.Complete(), nil", None),
    ("P2", "proto/sparse_stream.go", "\tcase a.last >= 0 && (last || int(seq) > a.last):", "\tcase a.last >= 0 && last:", None),
    ("P3", "proto/sparse_stream.go", "\tcase last && a.highest() > int(seq):", "\tcase false:", None),
    ("P4", "proto/sparse_stream.go", "a.got == a.last+1 }", "a.got >= a.last }", None),
    ("P5", "proto/sparse_merge.go", "\t\t\tk(v, sp.Value(order[j]))", "\t\t\t_, _ = k, v", None),
    ("P6", "proto/sparse_merge.go", "res.Index(i) <= sp.Index(order[j])", "res.Index(i) < sp.Index(order[j])", None),
    ("P7", "proto/sparse_merge.go", "\t\tif res.Index(i) <= res.Index(i-1) {", "\t\tif res.Index(i) < res.Index(i-1) {", None),
    ("P8", "proto/stagger.go", "\t\t\tdst = append(dst, uint32(g+(off+k)%r))", "\t\t\tdst = append(dst, uint32(g+(off+k)%window))", None),
    ("P9", "proto/stagger.go", "\t\t\toff = rank % world * r / world", "\t\t\toff = 0", None),
    # the element kernels (elem): the vector sums, the narrow integers' lanes, float min/max, float16 and bfloat16 rounding
    ("E1", "elem/sum_amd64.go", "\tif n := len(dst) &^ 127; n < len(dst) {", "\tif n := len(dst) &^ 127; false {", None),
    ("E2", "elem/sum_amd64.s", "\tSHRQ $7, CX \\", "\tSHRQ $8, CX \\", None),
    ("E3", "elem/kernel.go", "\t\tdone = len(dw) * 8 / sizeOf[T]()", "\t\tdone = len(dw) * 4 / sizeOf[T]()", None),
    ("E4", "elem/kernel.go", "\t\td[i] = (a&^top + b&^top) ^ (a^b)&top", "\t\td[i] = (a&^top + b&^top) | (a^b)&top", None),
    ("E5", "elem/kernel.go", "\tif m := min(a, b); m == m {", "\tif m := min(a, b); true {", None),
    ("E6", "elem/float16.go", "\t\ta += 0x0fff + (a>>13)&1", "\t\ta += 0x1000", None),
    ("E7", "elem/float16.go", "\tif rest > half || rest == half && q&1 == 1 {", "\tif rest >= half {", None),
    ("E8", "elem/float16.go", "\tif e < 102 {", "\tif e < 103 {", None),
    ("E9", "elem/float16.go", "\t\treturn -int32(h&^f16Sign) - 1", "\t\treturn -int32(h&^f16Sign)", None),
    ("E10", "elem/float16.go", "math.Float32bits(float32(frac)*0x1p-24)", "math.Float32bits(float32(frac)*0x1p-23)", None),
    ("E11", "elem/bfloat16.go", "\tif u&0x7fffffff > 0x7f800000 {", "\tif u&0x7fffffff >= 0x7f800000 {", None),
    ("E12", "elem/bfloat16.go", "\tu += 0x7fff + (u>>16)&1", "\tu += 0x8000", None),
    ("E13", "elem/kernel.go", "\tif len(dst) != len(src) || len(dst)&(size-1) != 0 {", "\tif len(dst)&(size-1) != 0 {", None),
    # the socket layer (conn/udp_linux.go): GRO's split, GSO's runs, the iovecs a send gathers
    ("C1", "conn/udp_linux.go", "j*groBufSize+min(r.off+seg, total)]", "j*groBufSize+r.off+seg]", None),
    ("C2", "conn/udp_linux.go", "\t\t\tif es < size {\n\t\t\t\tbreak // a shorter datagram ends the run\n\t\t\t}\n", "", None),
    ("C3", "conn/udp_linux.go", "e.Seg > 0 || e.Addr != d.Addr || es <= 0", "e.Seg > 0 || es <= 0", None),
    ("C4", "conn/udp_linux.go", "uintptr(unsafe.Pointer(last.Base))+uintptr(last.Len) == uintptr(unsafe.Pointer(unsafe.SliceData(b)))", "true", None),
    ("C5", "conn/udp_linux.go", "\treturn w.offs[w.start-1]", "\treturn 0", None),
    ("C6", "conn/udp_linux.go", "(end-off+d.Seg-1)/d.Seg, d.Seg)", "(end-off)/d.Seg, d.Seg)", None),
    ("C7", "conn/udp_linux.go", "\t\t\treturn int(int32(binary.NativeEndian.Uint32(oob[unix.CmsgLen(0):])))", "\t\t\treturn 0", None),
    # the wire's checks (wire/): the header's, and a sparse payload's pair count
    ("X1", "wire/header.go", "\tif h.Version != Version {\n\t\treturn nil, ErrVersion", "\tif false {\n\t\treturn nil, ErrVersion", None),
    ("X2", "wire/header.go", "\tif !h.Flags.Known() {", "\tif false {", None),
    ("X3", "wire/header.go", "\t\tif h.Count == 0 {\n\t\t\treturn ErrLength", "\t\tif false {\n\t\t\treturn ErrLength", None),
    ("X4", "wire/header.go", "\tif uint64(len(p)) != h.payloadLen() {", "\tif uint64(len(p)) < h.payloadLen() {", None),
    ("X5", "wire/header.go", "\tif (required || h.DType != 0) && !h.DType.Valid() {", "\tif required && !h.DType.Valid() {", None),
    ("X6", "wire/pairs.go", "\tif uint64(len(payload)) != uint64(count)*uint64(size) {", "\tif uint64(len(payload)) < uint64(count)*uint64(size) {", None),
    # the daemon's member checks, its parent's packets, and the memory budget (switch/)
    ("W1", "switch/switch.go", "\tcase p.Hdr.Token != j.token:\n\t\ts.drops.add(dropToken)\n\t\treturn false\n\tcase live == nil:",
     "\tcase false:\n\t\ts.drops.add(dropToken)\n\t\treturn false\n\tcase live == nil:", None),
    ("W2", "switch/switch.go", "\tcase int(p.Hdr.Child) >= len(live.addrs) || live.addrs[p.Hdr.Child] != d.Addr:",
     "\tcase int(p.Hdr.Child) >= len(live.addrs):", None),
    ("W3", "switch/switch.go", "\tcase live.sparse != (p.Hdr.Type == wire.TypeSparse):", "\tcase false:", None),
    ("W4", "switch/budget.go", "\t\tif n < 0 || cur+n > b.limit {", "\t\tif n < 0 {", None),
    ("W5", "switch/budget.go", "func (b *memBudget) release(n int64) { b.reserved.Add(-n) }", "func (b *memBudget) release(n int64) {}", None),
    ("W6", "switch/abort.go", "\tcase h.Token != j.token:", "\tcase false:", None),
    ("W7", "switch/abort.go", "\tcase members[member] != from:", "\tcase false:", None),
    ("W8", "switch/jobs.go", "if spec := jobSpec(body); spec != j.spec || h.DType != j.dtype || h.Op != j.op {", "if false {", None),
    ("W9", "switch/jobs.go", "case int(member) >= len(j.members) || j.members[member] != from:", "case int(member) >= len(j.members):", None),
    ("W10", "switch/admit.go", "\tif s.hasParent() && j.spec.Options&wire.OptBounded != 0 {", "\tif false {", None),
    ("W11", "switch/admit.go", "cfg.Uplink = &handlers.Uplink{Child: uint16(s.cfg.ChildIndex)}", "cfg.Uplink = &handlers.Uplink{Child: 0}", None),
    ("W12", "switch/jobs.go", "case b.Options&wire.OptSparse != 0 && h.Op != wire.OpSum && h.Op != wire.OpMin && h.Op != wire.OpMax:", "case false:", None),
    ("W13", "switch/switch.go", "\tcase wire.TypeResult, wire.TypeSpill: // a parent's result or spill, for this switch's members\n\t\tif !fromParent {",
     "\tcase wire.TypeResult, wire.TypeSpill: // a parent's result or spill, for this switch's members\n\t\tif false {", None),
    ("W14", "switch/switch.go", "\tfromParent := s.hasParent() && d.Addr == s.parent", "\tfromParent := s.hasParent()", None),
    ("W15", "switch/switch.go", "\tcase wire.TypeJoinAck, wire.TypeError:\n\t\tif !fromParent {", "\tcase wire.TypeJoinAck, wire.TypeError:\n\t\tif false {", None),
    ("W16", "switch/switch.go", "\t\tif live.sparse == (p.Hdr.Type == wire.TypeResult) || p.Hdr.Type == wire.TypeData {", "\t\tif p.Hdr.Type == wire.TypeData {", None),
    ("W17", "switch/abort.go", "\t\tif i == skip || !addr.IsValid() {", "\t\tif i != skip || !addr.IsValid() {", None),
    # the daemon's limits on what strangers can make it hold (switch/): half-open jobs, idle jobs, join floods, registration
    ("L1", "switch/pending.go", "\tif p.bySource[src] >= s.cfg.MaxPendingPerSource {", "\tif false {", None),
    ("L2", "switch/pending.go", "\tif p.order.Len() >= s.cfg.MaxPending {", "\tif false {", None),
    ("L3", "switch/pending.go", "\tif len(s.jobs.all()) >= s.cfg.MaxJobs && !s.evictOldest(nil, evictTableFull) {", "\tif false {", None),
    ("L4", "switch/jobs.go", "\t\tcase j.pend != nil && now.Sub(time.Unix(0, j.created)) > s.cfg.JoinTimeout:", "\t\tcase false:", None),
    ("L5", "switch/jobs.go", "\t\tcase now.Sub(time.Unix(0, j.lastActive())) > s.cfg.JobIdle:", "\t\tcase false:", None),
    ("L6", "switch/jobs.go", "\tif !s.joinLimit.allow(time.Now()) {", "\tif false {", None),
    ("L7", "switch/registry.go", "\tcase !g.allows(from.Addr()):", "\tcase false:", None),
    ("L8", "switch/registry.go", "\tcase !g.tokenIs(h.Token):", "\tcase false:", None),
    ("L9", "switch/registry.go", "\tif held := s.heldBytes(j.charge, p.quota); held > g.memoryCap {", "\tif held := s.heldBytes(j.charge, p.quota); held > g.memoryCap && false {", None),
    ("L10", "switch/pending.go", "\tif !s.budget.reserve(charge) {", "\tif false {", None),
    # the host's call (hostlib): the tracker, the window's launches, retransmission, partial results, sparse calls, a member's abort
    ("A1", "hostlib/allreduce.go", "\t\tif t.isDone(b) {\n\t\t\tcontinue // released before", "\t\tif false {\n\t\t\tcontinue // released before", None),
    ("A2", "hostlib/tracker.go", "\t\tt.pos[t.flights[i].block] = i\n", "", None),
    ("A3", "hostlib/tracker.go", "\tclear(t.done)\n", "", None),
    ("A4", "hostlib/tracker.go", "\tfor _, f := range t.flights {\n\t\tt.pos[f.block] = -1\n\t}\n", "", None),
    ("A5", "hostlib/allreduce.go", "s.contrib[i] = uint16(min(s.opts.World, 1<<16-1))", "s.contrib[i] = 0", None),
    ("A6", "hostlib/receive.go", "\t\ts.contrib[b] = h.Child\n", "", None),
    ("A7", "hostlib/sparse.go", "\t\tsp.asm[b].Reset()\n", "", None),
    ("A8", "hostlib/sparse.go", "case i > 0 && x <= p.Index(i-1):", "case i > 0 && x < p.Index(i-1):", None),
    ("A9", "hostlib/sparse.go", "\tcase h.Generation == s.gen+1 && len(sp.next) < maxEarlyPackets:", "\tcase false:", None),
    ("A10", "hostlib/receive.go", "\tif e.Code == wire.CodeAborted {", "\tif false {", None),
    ("A11", "hostlib/tracker.go", "if f := &t.flights[i]; !f.again {", "if f := &t.flights[i]; true {", None),
    ("A12", "hostlib/allreduce.go", "\t\tnext = min(next, f.due)\n", "", None),
    ("A13", "hostlib/allreduce.go", "\t\ts.stats.failed.Add(1)\n\t\ts.abortFor(err, s.gen)\n", "\t\ts.stats.failed.Add(1)\n", None),
    # the Python package (python/flare): what it hands the library, and the PyTorch backend's reducer
    ("Y1", "python/flare/torch/reducer.py", "        if buf.data_ptr() != t.data_ptr():\n            t.detach().copy_(buf)\n", "", None),
    ("Y2", "python/flare/torch/reducer.py", "        if avg:\n            buf.div_(self.world)\n", "", None),
    ("Y3", "python/flare/torch/reducer.py", "        if avg:\n            t.detach().div_(self.world)\n", "", None),
    ("Y4", "python/flare/buffers.py", "    if not a.flags.c_contiguous:", "    if False:", None),
    ("Y5", "python/flare/buffers.py", "    if not a.dtype.isnative:", "    if False:", None),
    ("Y6", "python/flare/buffers.py", "    if not t.is_contiguous():", "    if False:", None),
    # the host's checks of the switch's join-ack (hostlib/kind.go, sparse.go; wire/body.go): a switch out of step with the job, or lying
    ("K1", "hostlib/kind.go", "\tif a.Window == 0 {", "\tif false {", None),
    ("K2", "hostlib/kind.go", "\tcase int64(a.Blocks) != int64(blockCount(n, pe)):", "\tcase false:", None),
    ("K3", "hostlib/kind.go", "\tcase pe < 1 || pe > maxPE:", "\tcase pe < 1:", None),
    ("K4", "hostlib/sparse.go", "\tif blockCount(n, be) != blocks {", "\tif false {", None),
    ("K5", "hostlib/sparse.go", "\tcase blocks < 1 || blocks > wire.MaxSparseBlocks || blocks > n:", "\tcase blocks < 1:", None),
    ("K6", "wire/body.go", "\tif !g.Addr().IsMulticast() || g.Port() == 0 || binary.BigEndian.Uint16(b[ackOffGroupRes:]) != 0 {", "\tif g.Port() == 0 {", None),
    # the host's receive path (hostlib/receive.go)
    ("H1", "hostlib/receive.go", "\tcase h.Generation != s.gen:\n\t\treturn dropGeneration", "\tcase false:\n\t\treturn dropGeneration", None),
    ("H2", "hostlib/receive.go", "\tcase int64(h.Block) >= int64(s.blocks):\n\t\treturn dropBlock", "\tcase false:\n\t\treturn dropBlock", None),
    ("H3", "hostlib/receive.go", "\tif s.trk.isDone(b) {\n\t\ts.stats.duplicates", "\tif false {\n\t\ts.stats.duplicates", None),
    ("H4", "hostlib/receive.go", "(s.contrib == nil || h.Child == 0 || int(h.Child) > s.opts.World)", "(s.contrib == nil)", None),
    ("H5", "hostlib/receive.go", "\tif _, n := s.blockSpan(h.Block); int(h.Count) != n {", "\tif _, n := s.blockSpan(h.Block); int(h.Count) > n {", None),
    ("H6", "hostlib/receive.go", "\tcase d.Addr != s.sw:\n\t\tr = dropSource", "\tcase false:\n\t\tr = dropSource", None),
    ("H7", "hostlib/receive.go", "\t\tcase h.Token != s.opts.Token:", "\t\tcase false:", None),
    ("H8", "hostlib/receive.go", "\t\tif int64(p.Index(i)) >= int64(n) {", "\t\tif int64(p.Index(i)) > int64(n) {", None),
    # the host ring, the baseline (hostlib/ring.go, ring_sparse.go): its chunks, its folds, its frame and hello checks, its failure
    ("O1", "hostlib/ring.go", "\t\treturn buf[i*n/p*size : (i+1)*n/p*size]", "\t\treturn buf[i*n/p*size : (i+1)*n/p*size-size*(i&1)]", None),
    ("O2", "hostlib/ring.go", "chunk(r.pos-s), chunk(r.pos-s-1), fold)", "chunk(r.pos-s), chunk(r.pos-s+1), fold)", None),
    ("O3", "hostlib/ring.go", "chunk(r.pos+1-s), chunk(r.pos-s), nil)", "chunk(r.pos+1-s), chunk(r.pos-s), fold)", None),
    ("O4", "hostlib/ring.go", "\t\t\tfold(in[off:off+len(piece)], piece)", "\t\t\tcopy(in[off:off+len(piece)], piece)", None),
    ("O5", "hostlib/ring.go", "gen != r.gen || step", "step", None),
    ("O6", "hostlib/ring.go", "step != uint16(s) || gotDT", "gotDT", None),
    ("O7", "hostlib/ring.go", "gotDT != dt || gotOp", "gotOp", None),
    ("O8", "hostlib/ring.go", "gotOp != op || gotLen", "gotLen", None),
    ("O9", "hostlib/ring.go", " || gotLen != uint32(length):", ":", None),
    ("O10", "hostlib/ring.go", "\tcase marker != ringMarker:", "\tcase false && marker != ringMarker:", None),
    ("O11", "hostlib/ring.go", "\tcase world != uint32(r.world):", "\tcase false:", None),
    ("O12", "hostlib/ring.go", "\tcase rank != uint32(want):", "\tcase false:", None),
    ("O13", "hostlib/ring.go", "\tcase binary.BigEndian.Uint64(h[16:]) != r.fingerprint:", "\tcase false:", None),
    ("O14", "hostlib/ring.go", "rank < 0 || rank >= p || seen[rank]", "rank < 0 || rank >= p", None),
    ("O15", "hostlib/ring.go", "\tif err := receive(); err != nil {\n\t\tr.abort(err)\n\t}", "\t_ = receive()", None),
    ("O16", "hostlib/ring.go", "\t\treturn fmt.Errorf(\"hostlib: ring rank %d: unusable after an earlier failure: %w\", r.rank, err)\n\t}\n\tif r.world == 1 {",
     "\t\t_ = err\n\t}\n\tif r.world == 1 {", None),
    ("O17", "hostlib/ring.go", "\tstop := context.AfterFunc(ctx, func() {\n\t\tr.abort(fmt.Errorf(\"hostlib: ring rank %d: allreduce interrupted",
     "\tstop := context.AfterFunc(context.Background(), func() {\n\t\tr.abort(fmt.Errorf(\"hostlib: ring rank %d: allreduce interrupted", None),
    ("O18", "hostlib/ring.go", "\tcase h[4] != ringVersion:", "\tcase false:", None),
    ("O19", "hostlib/ring.go", "\tif len(buf)%dt.Size() != 0 {", "\tif false {", None),
    ("O20", "hostlib/ring_sparse.go", "\t\tall = append(all, next...)\n\t\tcur = next", "\t\tall = append(all, next...)", None),
    ("O21", "hostlib/ring_sparse.go", "\tif n > ringSparseMax || int(n)%wire.PairSize(dt) != 0 {", "\tif n > ringSparseMax {", None),
    ("O22", "hostlib/ring_sparse.go", "\tr.gen++\n\tall :=", "\tall :=", None),
    # the switch's egress (switch/egress.go, multicast.go): who a packet goes to, the writer's batches and fan-out, what finished packets give back, the multicast pool
    ("F1", "switch/egress.go", "\t\top.to = live.addrs[h.Child]", "\t\top.to = live.addrs[0]", None),
    ("F2", "switch/egress.go", "\tcase h.Flags&wire.FlagFromSwitch != 0: // a non-root switch's aggregate, up\n\t\top.to = s.parent\n", "", None),
    ("F3", "switch/egress.go", "\tif w.rest == nil {\n\t\tw.rest = op\n\t\treturn\n\t}", "\tif w.rest == nil {\n\t\treturn\n\t}", None),
    ("F4", "switch/egress.go", "\tfor m := 0; m < fan; m++ {\n\t\tfor _, op := range w.held {", "\tfor m := 1; m < fan; m++ {\n\t\tfor _, op := range w.held {", None),
    ("F5", "switch/egress.go", "\tfor m := 0; m < fan; m++ {\n\t\tfor i := range w.spans {", "\tfor m := 1; m < fan; m++ {\n\t\tfor i := range w.spans {", None),
    ("F6", "switch/egress.go", "sp.job == op.job && size <= sp.seg && sp.n%sp.seg == 0", "sp.job == op.job && sp.n%sp.seg == 0", None),
    ("F7", "switch/egress.go", "sp.job == op.job && size <= sp.seg", "size <= sp.seg", None),
    ("F8", "switch/egress.go", "\tif c != r.c {\n\t\tr.flushJob()\n\t\tr.c = c\n\t}", "\tif r.c == nil {\n\t\tr.c = c\n\t}", None),
    ("F9", "switch/egress.go", "\tif g != r.region {\n\t\tr.flushRegion()\n\t\tr.region = g\n\t}", "\tif r.region == nil {\n\t\tr.region = g\n\t}", None),
    ("F10", "switch/egress.go", "\t\tl.held.flush()\n\t\tl.freed.flush()", "\t\tl.freed.flush()", None),
    ("F11", "switch/egress.go", "\t\tcase transient(err) && !retried:", "\t\tcase false && transient(err) && !retried:", None),
    ("F12", "switch/egress.go", "\t\tcase op.job != nil && !op.to.IsValid(): // once, to every member (multicast.go)\n\t\t\tmsgs = append(msgs, op.datagram(op.job.group))\n", "", None),
    ("F13", "switch/egress.go", "\tif ln := &s.sends[rd]; ln.own != nil && s.unit.Borrowed(core) {", "\tif ln := &s.sends[rd]; ln.own != nil {", None),
    ("F14", "switch/multicast.go", "\t\tif !p.used[i] {\n\t\t\tp.used[i], p.next = true, i+1", "\t\tif true {\n\t\t\tp.used[i], p.next = true, i+1", None),
    ("F15", "switch/multicast.go", "\t\tp.used[i] = false\n", "", None),
    ("F16", "switch/multicast.go", "\tif bits := 32 - prefix.Bits(); bits < 16 {\n\t\tn = 1 << bits", "\tif bits := 32 - prefix.Bits(); bits < 16 {\n\t\tn = 1 << bits + 1", None),
    # the C library (capi/): its handles, its checks of a call's arguments against the job, the results it hands C, a forked child
    ("Z1", "capi/handles.go", "\tif !live.m[ch] {\n\t\treturn nil, fail(C.FLARE_EHANDLE, fmt.Errorf(\"session handle %d: not a live session (closed, or", "\tif false {\n\t\treturn nil, fail(C.FLARE_EHANDLE, fmt.Errorf(\"session handle %d: not a live session (closed, or", None),
    ("Z2", "capi/handles.go", "\tif !live.m[ch] {\n\t\treturn nil, fail(C.FLARE_EHANDLE, fmt.Errorf(\"session handle %d: not a live session (closed already", "\tif false {\n\t\treturn nil, fail(C.FLARE_EHANDLE, fmt.Errorf(\"session handle %d: not a live session (closed already", None),
    ("Z3", "capi/calls.go", "\tcase dtype != C.int(s.opts.DType):", "\tcase false:", None),
    ("Z4", "capi/calls.go", "\tcase op != C.int(s.opts.Op):", "\tcase false:", None),
    ("Z5", "capi/calls.go", "\tcase !s.opts.Sparse && uint64(count) != uint64(s.opts.Elements):", "\tcase !s.opts.Sparse && uint64(count) > uint64(s.opts.Elements):", None),
    ("Z6", "capi/calls.go", "\tcase s.opts.Sparse && uint64(count) > uint64(s.opts.Elements):", "\tcase false:", None),
    ("Z7", "capi/calls.go", "\tcase count > 0 && (idx == nil || val == nil):", "\tcase false:", None),
    ("Z8", "capi/calls.go", "\tif buf == nil {\n\t\treturn failf(\"flare_allreduce: buf is NULL\")", "\tif false {\n\t\treturn failf(\"flare_allreduce: buf is NULL\")", None),
    ("Z9", "capi/calls.go", "min(uint64(capacity), uint64(len(c)), math.MaxInt)", "min(uint64(len(c)), math.MaxInt)", None),
    ("Z10", "capi/calls.go", "\tcopy(unsafe.Slice(cv, len(rv)), rv)\n", "", None),
    ("Z11", "capi/calls.go", "\tif s.opts.Sparse {\n\t\treturn failf(\"flare_allreduce: the session joined a sparse job", "\tif false {\n\t\treturn failf(\"flare_allreduce: the session joined a sparse job", None),
    ("Z12", "capi/calls.go", "\tcase !s.opts.Sparse:\n\t\treturn failf(", "\tcase false:\n\t\treturn failf(", None),
    ("Z13", "capi/join.go", "\tcase o.elements <= 0:", "\tcase o.elements < 0:", None),
    ("Z14", "capi/join.go", "\tcase us < 0 || int64(us) > conn.MaxBusyPoll.Microseconds():", "\tcase us < 0:", None),
    ("Z15", "capi/join.go", "\tif ms < 0 || int64(ms) > math.MaxInt64/int64(time.Millisecond) {", "\tif ms < 0 {", None),
    ("Z16", "capi/errors.go", "\tcase errors.Is(err, hostlib.ErrAborted):\n\t\treturn C.FLARE_EABORTED\n", "", None),
    ("Z17", "capi/errors.go", "\t\tif joining {\n\t\t\treturn C.FLARE_EREFUSED\n\t\t}\n", "", None),
    ("Z18", "capi/flare.c", "    if (pid == flare_loader_pid) {\n        return 0;", "    if (1) {\n        return 0;", None),
    ("Z19", "capi/flare.c", "        flare_err[0] = '\\0';", "        (void)0;", None),
    # a child switch in a tree (switch/tree.go): its join at the parent, the parent's answers, local hosts' ranks, its leave
    ("J1", "switch/tree.go", "\tif body.PacketElems != j.ack.PacketElems || body.Blocks != j.ack.Blocks {", "\tif false {", None),
    ("J2", "switch/tree.go", "\tj.ack.Window = min(j.ack.Window, body.Window)\n", "", None),
    ("J3", "switch/tree.go", "\tif j == nil || h.Token != j.token || !j.admitted || j.upAcked {", "\tif j == nil || !j.admitted || j.upAcked {", None),
    ("J4", "switch/tree.go", "\tif j == nil || h.Token != j.token {\n\t\ts.jobs.mu.Unlock()\n\t\treturn\n\t}\n\tmembers", "\tif j == nil {\n\t\ts.jobs.mu.Unlock()\n\t\treturn\n\t}\n\tmembers", None),
    ("J5", "switch/tree.go", "\t\tif body.Code == wire.CodeWaiting {\n\t\t\treturn // the parent waits for a sibling: the hosts' retransmissions go on\n\t\t}\n", "", None),
    ("J6", "switch/tree.go", "\tif int(h.Child) >= s.cfg.LocalHosts {\n\t\treturn 0, false\n\t}\n", "", None),
    ("J7", "switch/tree.go", "\tif s.cfg.LocalHosts > 0 && rank >= s.cfg.Children {\n\t\trank -= s.cfg.Children\n\t}\n", "", None),
    ("J8", "switch/tree.go", "\tbody.World = uint16(min(j.hosts, 1<<16-1))\n", "", None),
    ("J9", "switch/tree.go", "const parentLeaveCopies = 2", "const parentLeaveCopies = 0", None),
    ("J10", "switch/tree.go", "\t\tbody.PacketElems = j.ack.PacketElems // resolved here, so every level cuts the same blocks\n", "",
     "resolveShape fills a join's packet size in before the job is made, so the spec's is already the one the job was cut with"),
    # the handlers' waiting reports and their pools of block states (handlers/waiting.go, workpool.go)
    ("V1", "handlers/waiting.go", "\th0 := &t.Pkt.Hdr\n\tif h0.Flags&wire.FlagRetransmit == 0 {\n\t\treturn\n\t}\n", "\th0 := &t.Pkt.Hdr\n\t_ = h0\n", None),
    ("V2", "handlers/waiting.go", "\t\tif missing(c) {\n\t\t\tn++\n\t\t}", "\t\tif missing(c) || true {\n\t\t\tn++\n\t\t}", None),
    ("V3", "handlers/waiting.go", "\t\t\tif missing(c) {\n\t\t\t\tif named > 0 {", "\t\t\tif !missing(c) {\n\t\t\t\tif named > 0 {", None),
    ("V4", "handlers/waiting.go", "\t\tif n > named {\n", "\t\tif false {\n", None),
    ("V5", "handlers/waiting.go", "\tif t.Pkt.Hdr.Flags&wire.FlagRetransmit == 0 {\n\t\treturn\n\t}\n\tsendWaiting", "\tsendWaiting", None),
    ("V6", "handlers/workpool.go", "\tfor i := range poolShards {\n\t\ts := &p.shards[(int(shard)+i)%poolShards]", "\tfor i := range 1 {\n\t\ts := &p.shards[(int(shard)+i)%poolShards]", None),
    ("V7", "handlers/waiting.go", "\t\tGeneration: h0.Generation, Block: h0.Block, Child: h0.Child, DType: dt, Op: op}", "\t\tGeneration: h0.Generation, Block: h0.Block, DType: dt, Op: op}", None),
    # the processing unit's running of a packet (hpu/task.go, hpu.go): its stages, and giving the packet back
    ("Q1", "hpu/task.go", "\tif hh, ok := h.(HeaderHandler); ok && !hh.Header(t) {", "\tif hh, ok := h.(HeaderHandler); ok && !hh.Header(t) && false {", None),
    ("Q2", "hpu/task.go", "\tif t.complete {\n\t\tif ch, ok := h.(CompletionHandler); ok {", "\tif true {\n\t\tif ch, ok := h.(CompletionHandler); ok {", None),
    ("Q3", "hpu/task.go", "\tt.cycles, t.waitNs, t.waitCyc, t.contends = 0, 0, 0, 0\n\tt.complete = false\n", "\tt.cycles, t.waitNs, t.waitCyc, t.contends = 0, 0, 0, 0\n", None),
    ("Q4", "hpu/hpu.go", "\tif _, ok := co.push(p, true); !ok {\n\t\th.unplace(co)\n\t\treturn ErrClosed", "\tif _, ok := co.push(p, true); !ok {\n\t\treturn ErrClosed", None),
    ("Q5", "hpu/hpu.go", "\tif ok {\n\t\tb.packets++\n\t} else {", "\tif ok || true {\n\t\tb.packets++\n\t} else {", None),
    # a join's checks (switch/jobs.go, wire/body.go) and its admission (switch/admit.go): what a well-formed, abusive join may ask for, and what admitting it reserves
    ("I1", "switch/jobs.go", "\tcase b.World < 1 || int(b.World) > maxChildren:", "\tcase int(b.World) > maxChildren:", None),
    ("I2", "switch/jobs.go", "\tcase int(h.Child) >= int(b.World):", "\tcase int(h.Child) > int(b.World):", None),
    ("I3", "switch/jobs.go", "\tcase b.Elements < 1 || b.Elements > maxElements:", "\tcase b.Elements > maxElements:", None),
    ("I4", "switch/jobs.go", "\tcase b.Elements < 1 || b.Elements > maxElements:", "\tcase b.Elements < 1 || b.Elements > maxElements+1:", None),
    ("I5", "switch/jobs.go", "\tcase b.Options&wire.OptSparse == 0 && b.Storage != wire.StorageDense:", "\tcase false:", None),
    ("I6", "switch/jobs.go", "\tcase b.Options&wire.OptSparse != 0 && b.Storage == wire.StorageDense:", "\tcase false:", None),
    ("I7", "switch/jobs.go", "\tcase b.Options&wire.OptBounded != 0 && (b.Options&(wire.OptSparse|wire.OptReproducible) != 0 || (b.Algo != wire.AlgoAuto && b.Algo != wire.AlgoSingle)):",
     "\tcase b.Options&wire.OptBounded != 0 && b.Options&(wire.OptSparse|wire.OptReproducible) != 0:", None),
    ("I8", "switch/jobs.go", "\tcase b.Options&wire.OptSparse != 0 && b.Algo == wire.AlgoTree:", "\tcase false:", None),
    ("I9", "switch/jobs.go", "\tcase b.Algo == wire.AlgoMulti && (b.Buffers < 2 || b.Buffers > proto.MaxBuffers):", "\tcase b.Algo == wire.AlgoMulti && b.Buffers > proto.MaxBuffers:", None),
    ("I10", "switch/jobs.go", "b.Options&wire.OptSparse == 0 && pe*h.DType.Size() > s.cfg.PacketBytes {", "b.Options&wire.OptSparse == 0 && pe > s.cfg.PacketBytes {", None),
    ("I11", "switch/jobs.go", "\tif _, err := elem.KernelFor(h.DType, h.Op); err != nil {", "\tif _, err := elem.KernelFor(h.DType, h.Op); err != nil && false {", None),
    ("I12", "switch/jobs.go", "\tcase sparse && b.PacketElems != 0:", "\tcase false:", None),
    ("I13", "switch/jobs.go", "\tcase !sparse && b.BlockElems != 0:", "\tcase false:", None),
    ("I14", "switch/jobs.go", "\tcase b.StreamPackets != 0 && (!sparse || h.Flags&wire.FlagFromSwitch == 0):", "\tcase b.StreamPackets != 0 && !sparse:", None),
    ("I15", "switch/jobs.go", "\tcase cur.IsValid():\n\t\treturn nil, refuse(wire.CodeJobMismatch, \"job %d: rank %d already joined", "\tcase false:\n\t\treturn nil, refuse(wire.CodeJobMismatch, \"job %d: rank %d already joined", None),
    ("I16", "switch/jobs.go", "\tcase j.group.IsValid() && !multicast:", "\tcase false:", None),
    ("I17", "switch/jobs.go", "\t\tj.members[rank] = from\n\t\tj.joined++\n", "\t\tj.members[rank] = from\n", None),
    ("I18", "switch/jobs.go", "\tspec.TimeoutMillis, spec.StreamPackets = 0, 0\n", "\tspec.StreamPackets = 0\n", None),
    ("I19", "switch/jobs.go", "\tspec.Options &^= wire.OptMulticast\n", "", None),
    ("I20", "switch/jobs.go", "\tif j.left == j.joined {\n\t\ts.endLocked(j, \"left\")", "\tif j.left >= 1 {\n\t\ts.endLocked(j, \"left\")", None),
    ("I21", "switch/admit.go", "\tif uint64(nblocks) > math.MaxUint32 {", "\tif false {", None),
    ("I22", "switch/admit.go", "\tif bounded {\n\t\talgo, b = wire.AlgoSingle, 0", "\tif bounded && false {\n\t\talgo, b = wire.AlgoSingle, 0", None),
    ("I23", "switch/admit.go", "\tfor w > 1 && need(w) > free {", "\tfor false && w > 1 && need(w) > free {", None),
    ("I24", "switch/admit.go", "\ts.budget.release(j.charge)\n\tj.charge = 0\n", "\tj.charge = 0\n", None),
    ("I25", "switch/admit.go", "\tif !s.budget.reserve(f.total()) {\n\t\tq.Release()\n", "\tif !s.budget.reserve(f.total()) {\n", None),
    ("I26", "switch/admit.go", "Members: int64(j.world()) * memberBytes}", "Members: 0}", None),
    ("I27", "switch/admit.go", "\tif jerr := s.capGranted(j, p); jerr != nil {\n\t\tp.quota.Release()", "\tif jerr := s.capGranted(j, p); jerr != nil {\n", None),
    ("I28", "switch/admit.go", "\tif err == nil && !j.closing.Load() {", "\tif err == nil {", None),
    ("I29", "switch/admit.go", "\tw := min(target, nblocks)\n", "\tw := target\n", None),
    ("I30", "wire/body.go", "\t\t(j.DeadlineMillis != 0) != (j.Options&OptBounded != 0) {", "\t\t(j.DeadlineMillis != 0 && j.Options&OptBounded == 0) {", None),
    ("I31", "wire/body.go", "\tif !j.Algo.Valid() || !j.Options.Known() || !j.Storage.Valid() ||", "\tif !j.Algo.Valid() || !j.Storage.Valid() ||", None),
    ("I32", "wire/body.go", "\tif !j.Algo.Valid() || !j.Options.Known() || !j.Storage.Valid() ||", "\tif !j.Algo.Valid() || !j.Options.Known() ||", None),
    ("I33", "wire/body.go", "\tif !a.Algo.Valid() || a.Algo == AlgoAuto || binary.BigEndian.Uint16(b[ackOffReserved:]) != 0 {", "\tif !a.Algo.Valid() || binary.BigEndian.Uint16(b[ackOffReserved:]) != 0 {", None),
    ("I34", "wire/body.go", "\tif !a.Algo.Valid() || a.Algo == AlgoAuto || binary.BigEndian.Uint16(b[ackOffReserved:]) != 0 {", "\tif !a.Algo.Valid() || a.Algo == AlgoAuto {", None),
    # the daemon's configuration (switch/config.go): each limit's both ends, and the defaults that must validate
    ("CF1", "switch/config.go", "c.PacketBytes > 8192 ||", "c.PacketBytes > 8200 ||", None),
    ("CF2", "switch/config.go", "\tcase c.MaxJobs < 1 || c.MaxJobs > MaxJobsLimit:", "\tcase c.MaxJobs < 1 || c.MaxJobs > MaxJobsLimit+1:", None),
    ("CF3", "switch/config.go", "\tcase c.MaxMemory < 1<<20 || c.MaxMemory > 1<<40:", "\tcase c.MaxMemory < 1<<19 || c.MaxMemory > 1<<40:", None),
    ("CF4", "switch/config.go", "\tcase c.MaxMemory < 1<<20 || c.MaxMemory > 1<<40:", "\tcase c.MaxMemory < 1<<20 || c.MaxMemory > 1<<41:", None),
    ("CF5", "switch/config.go", "\tcase c.MaxPending < 1 || c.MaxPending > c.MaxJobs:", "\tcase c.MaxPending < 1 || c.MaxPending > c.MaxJobs+1:", None),
    ("CF6", "switch/config.go", "\tcase c.MaxPendingPerSource < 1 || c.MaxPendingPerSource > c.MaxPending:", "\tcase c.MaxPendingPerSource < 1 || c.MaxPendingPerSource >= c.MaxPending:", None),
    ("CF7", "switch/config.go", "\tcase c.JoinTimeout < 100*time.Millisecond || c.JoinTimeout > time.Hour:", "\tcase c.JoinTimeout < 10*time.Millisecond || c.JoinTimeout > time.Hour:", None),
    ("CF8", "switch/config.go", "\tcase c.JoinTimeout < 100*time.Millisecond || c.JoinTimeout > time.Hour:", "\tcase c.JoinTimeout < 100*time.Millisecond || c.JoinTimeout > 2*time.Hour:", None),
    ("CF9", "switch/config.go", "\tcase c.JobIdle < time.Second || c.JobIdle > 24*time.Hour:", "\tcase c.JobIdle < time.Second || c.JobIdle >= 24*time.Hour:", None),
    ("CF10", "switch/config.go", "\tcase c.Window < 0 || c.Window > MaxWindow:", "\tcase c.Window < 0 || c.Window > MaxWindow+1:", None),
    ("CF11", "switch/config.go", "\tcase c.JoinRate < 1 || c.JoinRate > MaxJoinRate:", "\tcase c.JoinRate < 1 || c.JoinRate >= MaxJoinRate:", None),
    ("CF12", "switch/config.go", "\tcase c.PcapMax < 1<<10 || c.PcapMax > 1<<40:", "\tcase c.PcapMax < 1<<9 || c.PcapMax > 1<<40:", None),
    ("CF13", "switch/config.go", "\tcase c.SteerRun < 1 || c.SteerRun > MaxSteerRun ||", "\tcase c.SteerRun < 1 || c.SteerRun >= MaxSteerRun ||", None),
    ("CF14", "switch/config.go", "\tcase c.ChildIndex < 0 || c.ChildIndex >= proto.MaxChildren:", "\tcase c.ChildIndex < 0 || c.ChildIndex > proto.MaxChildren:", None),
    ("CF15", "switch/config.go", "\tcase c.Children < 0 || c.Children > proto.MaxChildren:", "\tcase c.Children < 0 || c.Children >= proto.MaxChildren:", None),
    ("CF16", "switch/config.go", "\tcase c.LocalHosts < 0 || c.Children+c.LocalHosts > proto.MaxChildren:", "\tcase c.LocalHosts < 0 || c.Children+c.LocalHosts > proto.MaxChildren+1:", None),
    ("CF17", "switch/config.go", "\tcase c.MulticastPort < 0 || c.MulticastPort > 65535:", "\tcase c.MulticastPort > 65535:", None),
    ("CF18", "switch/config.go", "\t\tc.MaxPending = min(DefaultMaxPending, c.MaxJobs)", "\t\tc.MaxPending = DefaultMaxPending", None),
    ("CF19", "switch/config.go", "\t\tc.MaxPendingPerSource = min(DefaultMaxPendingPerSource, c.MaxPending)", "\t\tc.MaxPendingPerSource = DefaultMaxPendingPerSource", None),
    ("CF20", "switch/config.go", "\tcase c.Readers < 1 || c.Readers > conn.MaxGroup:", "\tcase c.Readers < 1:", None),
    ("CF21", "switch/config.go", "\tcase c.ChildIndex > 0 && c.Parent == \"\":", "\tcase false:", None),
    ("CF22", "switch/config.go", "\t\tm = max(min(m, machine/4), 1<<20)", "\t\tm = max(m, 1<<20)", None),
    # a host's options (hostlib/options.go): each check of what Join refuses before it sends anything, and where the session binds
    ("HO1", "hostlib/options.go", "\tcase o.World < 1 || o.World > MaxWorld:", "\tcase o.World < 1:", None),
    ("HO2", "hostlib/options.go", "\tcase o.Elements < 1 || o.Elements > math.MaxInt/o.DType.Size():", "\tcase o.Elements < 1:", None),
    ("HO3", "hostlib/options.go", "\tcase o.Buffers < 0 || o.Buffers > MaxBuffers:", "\tcase o.Buffers > MaxBuffers:", None),
    ("HO4", "hostlib/options.go", "\tcase o.Sparse && o.Op != wire.OpSum && o.Op != wire.OpMin && o.Op != wire.OpMax:", "\tcase false:", None),
    ("HO5", "hostlib/options.go", "\tcase o.Sparse && (o.Algo == wire.AlgoTree || o.Reproducible):", "\tcase o.Sparse && o.Algo == wire.AlgoTree:", None),
    ("HO6", "hostlib/options.go", "\tcase o.Sparse && o.Storage != wire.StorageHash && o.Storage != wire.StorageArray && o.Storage != wire.StorageDense:", "\tcase false:", None),
    ("HO7", "hostlib/options.go", "\tcase o.Sparse && o.PacketElems != 0:", "\tcase false:", None),
    ("HO8", "hostlib/options.go", "\tcase o.Sparse && (o.BlockElems < 0 || uint64(o.BlockElems) > math.MaxUint32):", "\tcase o.Sparse && o.BlockElems < 0:", None),
    ("HO9", "hostlib/options.go", "\tcase !o.Sparse && (o.Storage != wire.StorageDense || o.BlockElems != 0):", "\tcase !o.Sparse && o.Storage != wire.StorageDense:", None),
    ("HO10", "hostlib/options.go", "\tcase o.BlockDeadline < 0 || o.BlockDeadline > 65535*time.Millisecond ||", "\tcase o.BlockDeadline < 0 ||", None),
    ("HO11", "hostlib/options.go", " || (o.BlockDeadline > 0 && o.BlockDeadline%time.Millisecond != 0) ||", " ||", None),
    ("HO12", "hostlib/options.go", "\tcase o.BlockDeadline > 0 && (o.Sparse || o.Reproducible || (o.Algo != wire.AlgoAuto && o.Algo != wire.AlgoSingle)):", "\tcase o.BlockDeadline > 0 && o.Sparse:", None),
    ("HO13", "hostlib/options.go", "o.PacketElems < 0 || o.PacketElems > maxPE {", "o.PacketElems < 0 || o.PacketElems > maxPE+1 {", None),
    ("HO14", "hostlib/options.go", "\t\tif n := blockCount(o.Elements, o.PacketElems); uint64(n) > math.MaxUint32 {", "\t\tif n := blockCount(o.Elements, o.PacketElems); false {", None),
    ("HO15", "hostlib/options.go", "\tif o.Sparse && o.Storage == wire.StorageDense {\n\t\to.Storage = wire.StorageHash", "\tif false {\n\t\to.Storage = wire.StorageHash", None),
    ("HO16", "hostlib/options.go", "\t\ts = net.JoinHostPort(s, strconv.Itoa(wire.DefaultPort))", "\t\ts = net.JoinHostPort(s, strconv.Itoa(wire.DefaultPort+1))", None),
    ("HO17", "hostlib/options.go", "\tcase a.Is4() && a.IsLoopback():\n\t\treturn \"127.0.0.1:0\"", "\tcase a.Is4() && a.IsLoopback():\n\t\treturn \":0\"", None),
    ("HO18", "hostlib/options.go", "\tcase o.Reproducible && o.Algo != wire.AlgoAuto && o.Algo != wire.AlgoTree:", "\tcase o.Reproducible && o.Algo == wire.AlgoMulti:", None),
    # operators registered at run time (elem/customop.go): what RegisterOp refuses, the kernels it builds, the registry's copies
    ("CU1", "elem/customop.go", "\tif op.Name == \"\" {", "\tif false {", None),
    ("CU2", "elem/customop.go", "\tif _, ok := builtinByName(op.Name); ok {", "\tif _, ok := builtinByName(op.Name); ok && false {", None),
    ("CU3", "elem/customop.go", "\tif op.Float32 != nil {\n\t\tsetCustom(e, wire.BFloat16", "\tif false {\n\t\tsetCustom(e, wire.BFloat16", None),
    ("CU4", "elem/customop.go", "\tif !e.any() {", "\tif false {", None),
    ("CU5", "elem/customop.go", "\t\tif prev := old.ops[code-wire.OpCustomBase]; prev != nil {", "\t\tif prev := old.ops[code-wire.OpCustomBase]; prev != nil && false {", None),
    ("CU6", "elem/customop.go", "\t\tif prev, ok := old.byName[op.Name]; ok {", "\t\tif prev, ok := old.byName[op.Name]; ok && false {", None),
    ("CU7", "elem/customop.go", "\t\tnext.ops = old.ops\n", "", None),
    ("CU8", "elem/customop.go", "\t\tfor name, c := range old.byName {\n\t\t\tnext.byName[name] = c\n\t\t}", "\t\tfor range old.byName {\n\t\t}", None),
    ("CU9", "elem/customop.go", "\tsetCustom(e, wire.Int64, op.Int64)\n", "", None),
    ("CU10", "elem/customop.go", "\tif r == nil || op < wire.OpCustomBase {", "\tif r == nil {", None),
    ("CU11", "elem/customop.go", "\t\tif k.native != nil {\n\t\t\treturn true", "\t\tif k.native == nil {\n\t\t\treturn true", None),
    # error and abort bodies (wire/errorbody.go): their checks, and the cut that keeps a long reason decodable
    ("EB1", "wire/errorbody.go", "\tif n > MaxErrorText {\n\t\treturn 0, ErrBody", "\tif false {\n\t\treturn 0, ErrBody", None),
    ("EB2", "wire/errorbody.go", "\tif len(b) != ErrorBodyMinLen+n {", "\tif len(b) < ErrorBodyMinLen+n {", None),
    ("EB3", "wire/errorbody.go", "\tif !e.Code.Valid() || !utf8.Valid(e.Text) {", "\tif !utf8.Valid(e.Text) {", None),
    ("EB4", "wire/errorbody.go", "\tif !e.Code.Valid() || !utf8.Valid(e.Text) {", "\tif !e.Code.Valid() {", None),
    ("EB5", "wire/errorbody.go", "\tif len(e.Text) > MaxErrorText {\n\t\treturn ErrBody", "\tif false {\n\t\treturn ErrBody", None),
    ("EB6", "wire/errorbody.go", "\tif !utf8.ValidString(text) {", "\tif false {", None),
    ("EB7", "wire/errorbody.go", "\t\t\tif i+runeLen(s[i]) > len(s) {", "\t\t\tif i+runeLen(s[i]) > len(s)+1 {", None),
    ("EB8", "wire/errorbody.go", "\tcase b&0xF0 == 0xE0:\n\t\treturn 3", "\tcase b&0xF0 == 0xE0:\n\t\treturn 2", None),
    ("EB9", "wire/errorbody.go", "i >= 0 && i > len(s)-utf8.UTFMax; i--", "i >= 0 && i > len(s)-2; i--", None),
    # a sparse job's shape (switch/sparse.go)
    ("SB1", "switch/sparse.go", "\tif be == 0 {\n\t\tbe = DefaultSparseBlockElems", "\tif true {\n\t\tbe = DefaultSparseBlockElems", None),
    ("SB2", "switch/sparse.go", "(elements+wire.MaxSparseBlocks-1)/wire.MaxSparseBlocks", "elements/wire.MaxSparseBlocks", None),
    ("SB3", "switch/sparse.go", "\tif algo != wire.AlgoMulti {\n\t\talgo, b = wire.AlgoSingle, 1", "\tif algo == wire.AlgoAuto {\n\t\talgo, b = wire.AlgoSingle, 1", None),
    ("SB4", "switch/sparse.go", "\t\tif slices.Min(streams) < 1 {", "\t\tif false {", None),
    ("SB5", "switch/sparse.go", "\t\tj.streamBytes.Add(n)\n", "", None),
    ("SB6", "switch/sparse.go", "\tif algo == wire.AlgoSingle {\n\t\tackBuffers = 0", "\tif false {\n\t\tackBuffers = 0", None),
    # registered admission (switch/registry.go): a registration's checks, its sources and token, the admin secret
    ("RG1", "switch/registry.go", "\tcase g.Token != \"\" && g.TokenSHA256 != \"\":", "\tcase false:", None),
    ("RG2", "switch/registry.go", "\t\tif err != nil || len(h) != sha256.Size {", "\t\tif err != nil {", None),
    ("RG3", "switch/registry.go", "\tcase g.World < 1 || g.World > maxGrantWorld:", "\tcase g.World < 1:", None),
    ("RG4", "switch/registry.go", "\tcase g.MemoryCapBytes < 1 || g.MemoryCapBytes > maxMemoryCap:", "\tcase g.MemoryCapBytes < 1:", None),
    ("RG5", "switch/registry.go", "\tcase len(g.Sources) < 1 || len(g.Sources) > maxGrantSources:", "\tcase len(g.Sources) < 1:", None),
    ("RG6", "switch/registry.go", "\tif p.Masked() != p {", "\tif false {", None),
    ("RG7", "switch/registry.go", "\tif a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {", "\tif a := p.Addr(); false && a.Is4In6() && p.Bits() >= 96 {", None),
    ("RG8", "switch/registry.go", "\tfrom = from.Unmap()\n", "", None),
    ("RG9", "switch/registry.go", "\tcase int(body.World) != g.world:", "\tcase false:", None),
    ("RG10", "switch/registry.go", "\tcase fi.Mode().Perm()&0o004 != 0:", "\tcase false:", None),
    ("RG11", "switch/registry.go", "\tcase len(b) < minSecretBytes:", "\tcase false:", None),
    ("RG12", "switch/registry.go", "\tcase fi.Size() > maxSecretBytes:", "\tcase false:", None),
    ("RG13", "switch/registry.go", "\tif r.secret == nil {\n\t\treturn false\n\t}\n\tgot, want", "\tif r.secret == nil {\n\t\treturn true\n\t}\n\tgot, want",
     "authorize answers a switch without a secret before it asks authorized; the guard keeps authorized safe on its own"),
    ("RG14", "switch/registry.go", "\tcase r.mode == AdmissionRegistered && cfg.AdminSecretFile == \"\":", "\tcase false:", None),
    ("RG15", "switch/registry.go", "\tcase r.mode == AdmissionRegistered && cfg.Admin == \"off\":", "\tcase false:", None),
    ("RG16", "switch/registry.go", "g.tokenHash == o.tokenHash && g.world == o.world && g.memoryCap == o.memoryCap &&", "g.tokenHash == o.tokenHash && g.world == o.world &&", None),
    ("RG17", "switch/registry.go", "\tcase len(b) == 0:\n", "\tcase false:\n", None),
    # the admin port's jobs API (switch/admin_jobs.go): who may read and write, what a registration request may hold
    ("AD1", "switch/admin_jobs.go", "\t\treturn s.registry.secret == nil\n", "\t\treturn true\n", None),
    ("AD2", "switch/admin_jobs.go", "\tcase !s.registry.authorized(bearer):", "\tcase !s.registry.authorized(bearer) && false:", None),
    ("AD3", "switch/admin_jobs.go", "!strings.EqualFold(scheme, \"Bearer\")", "scheme != \"Bearer\"", None),
    ("AD4", "switch/admin_jobs.go", "\tif s.registry.mode != AdmissionRegistered {\n\t\twriteError(w, http.StatusConflict", "\tif false {\n\t\twriteError(w, http.StatusConflict", None),
    ("AD5", "switch/admin_jobs.go", "\tdec.DisallowUnknownFields()\n", "", None),
    ("AD6", "switch/admin_jobs.go", "\tif dec.Decode(&struct{}{}) != io.EOF {", "\tif dec.Decode(&struct{}{}) != io.EOF && false {", None),
    ("AD7", "switch/admin_jobs.go", "\tcase old == nil && len(r.grants) >= maxGrants:", "\tcase false:", None),
    ("AD8", "switch/admin_jobs.go", "\tcase old != nil && !old.equal(g):", "\tcase old != nil:", None),
    ("AD9", "switch/admin_jobs.go", "\t\tif j := s.jobs.get(g.job); j != nil {\n\t\t\tended = s.endGranted(j, \"re-registered\")", "\t\tif j := s.jobs.get(g.job); j != nil && false {\n\t\t\tended = s.endGranted(j, \"re-registered\")", None),
    ("AD10", "switch/admin_jobs.go", "\tif j := s.jobs.get(id); j != nil {\n\t\tended = s.endGranted(j, \"unregistered\")", "\tif j := s.jobs.get(id); j != nil && false {\n\t\tended = s.endGranted(j, \"unregistered\")", None),
    ("AD11", "switch/admin_jobs.go", "strconv.ParseUint(r.PathValue(\"id\"), 10, 32)", "strconv.ParseUint(r.PathValue(\"id\"), 10, 64)", None),
    ("AD12", "switch/admin_jobs.go", "\tcase old != nil && !replace:", "\tcase false:", None),
    ("AD13", "switch/admin_jobs.go", "\treturn cred, cred != \"\"", "\treturn cred, true", None),
    # a host's join and leave (hostlib/session.go): what the join asks for, its resends, the answers it takes, the leave
    ("SE1", "hostlib/session.go", "\t\tbody.Options |= wire.OptReproducible\n", "", None),
    ("SE2", "hostlib/session.go", "\t\tbody.Options |= wire.OptMulticast\n", "", None),
    ("SE3", "hostlib/session.go", "\t\tbody.DeadlineMillis = uint16(s.opts.BlockDeadline / time.Millisecond)\n", "\t\tbody.DeadlineMillis = 1\n", None),
    ("SE4", "hostlib/session.go", "\t\tcase <-resend.C:\n\t\t\tif err := s.sendControl(s.ctl[:1]); err != nil {\n\t\t\t\treturn err\n\t\t\t}\n", "\t\tcase <-resend.C:\n", None),
    ("SE5", "hostlib/session.go", "\t\t\tcase e.Code == wire.CodeAborted: // another member", "\t\t\tcase false: // another member", None),
    ("SE6", "hostlib/session.go", "\t\t\tcase e.Code == wire.CodeWaiting:\n", "\t\t\tcase false:\n", None),
    ("SE7", "hostlib/session.go", "\t\t\tif ack.Unmarshal(payload) != nil {\n\t\t\t\ts.drop(dropMalformed)", "\t\t\tif ack.Unmarshal(payload) != nil && false {\n\t\t\t\ts.drop(dropMalformed)", None),
    ("SE8", "hostlib/session.go", "\t\t_ = s.sendControl(s.ctl) // best effort", "\t\t_ = s.sendControl(s.ctl[:1]) // best effort", None),
    ("SE9", "hostlib/session.go", "\t\ts.joinAbort(err)\n", "", None),
    ("SE10", "hostlib/session.go", "\t\t\tif errors.Is(ctx.Err(), context.DeadlineExceeded) {", "\t\t\tif false {", None),
    ("SE11", "hostlib/session.go", "\tif err != nil && (errors.Is(err, net.ErrClosed) ||", "\tif err != nil && false && (errors.Is(err, net.ErrClosed) ||", None),
    ("SE12", "hostlib/session.go", "\ts.closeOnce.Do(func() { s.closeErr = s.shutdown(true) })", "\ts.closeErr = s.shutdown(true)", None),
    ("SE13", "hostlib/session.go", "\t\tif h.Type == wire.TypeResult || h.Type == wire.TypeSparse || h.Type == wire.TypeSpill {\n\t\t\ts.drop(dropUnexpected)", "\t\tif false {\n\t\t\ts.drop(dropUnexpected)", None),
    ("SE14", "hostlib/session.go", "\tif o.Multicast && !sw.Addr().Is4() {", "\tif false {", None),
    # the analytic model (models/dense.go): each formula of §4–6 that a result is held to
    ("MD1", "models/dense.go", "s := shape{work: L + (B-1)*L/P,", "s := shape{work: L + (B-1)*L,", None),
    ("MD2", "models/dense.go", "m: (P - 1) / math.Log2(P)}", "m: (P - 1)}", None),
    ("MD3", "models/dense.go", "\tconc := math.Min(float64(p.SubsetS), P)", "\tconc := P", None),
    ("MD4", "models/dense.go", "\treturn s.work + s.crit*(n-1)/2\n", "\treturn s.work + s.crit*n/2\n", None),
    ("MD5", "models/dense.go", "math.Max(1, s.crit/(s.spread*deltaC))", "math.Max(1, s.crit/deltaC)", None),
    ("MD6", "models/dense.go", "\tcase p.Window > 0 && int64(p.Window) < p.Blocks():", "\tcase false:", None),
    ("MD7", "models/dense.go", "\t\ts.work = ((P-1)*L + 2*D) / P", "\t\ts.work = ((P-1)*L + D) / P", None),
    ("MD8", "models/dense.go", "s.crit*math.Max(0, (n-3)/2)", "s.crit*math.Max(0, (n-1)/2)", None),
    ("MD9", "models/dense.go", "\tlatency := (P-1)*deltaC + wait + last", "\tlatency := P*deltaC + wait + last", None),
    ("MD10", "models/dense.go", "\tr := s.m * (bw / P) * latency", "\tr := s.m * bw * latency", None),
    ("MD11", "models/dense.go", "\t\tlast = math.Ceil(math.Log2(P)) * p.CyclesPerPacket", "\t\tlast = math.Floor(math.Log2(P)) * p.CyclesPerPacket", None),
    ("MD12", "models/dense.go", "\t\tlast = tau + s.fold*(1-1/P)", "\t\tlast = tau + s.fold", None),
    ("MD13", "models/dense.go", "\t\tde = math.Max(p.InterArrival, tau/K)", "\t\tde = math.Max(p.InterArrival, tau/K/2)", None),
    ("MD14", "models/dense.go", "\tif p.InterArrival > 0 && 1/p.InterArrival < bw {", "\tif false {", None),
    # the virtual-time unit the simulator runs on (hpu/vsim.go): its cluster queues and what it measures
    ("VS1", "hpu/vsim.go", "\tif cl.occ >= u.cfg.QueueDepth {", "\tif cl.occ > u.cfg.QueueDepth {", None),
    ("VS2", "hpu/vsim.go", "\t\tif u.pl.inSubset(p.Hdr.Block, co.id) {", "\t\tif true {", None),
    ("VS3", "hpu/vsim.go", "\t\tu.ingressWaitCycles += u.clock - p.Arrival\n", "", None),
    ("VS4", "hpu/vsim.go", "\tcl.occSum += occ\n", "", None),
    ("VS5", "hpu/vsim.go", "\ts.busy += busy\n", "", None),
    ("VS6", "hpu/vsim.go", "\ts.waitCycles += t.waitCyc\n", "", None),
    ("VS7", "hpu/vsim.go", "\tu.ingressMax = max(u.ingressMax, u.nwait)\n", "", None),
    # the socket layer's checks (conn/conn.go): what a send may hold, and a socket's settings
    ("CS1", "conn/conn.go", "\tcase d.N < 0 || d.N > cap(d.Buf) ||", "\tcase d.N > cap(d.Buf) ||", None),
    ("CS2", "conn/conn.go", "\tcase d.N < 0 || d.N > cap(d.Buf) ||", "\tcase d.N < 0 ||", None),
    ("CS3", "conn/conn.go", "(d.Seg <= 0 && d.Size() > max):", "(d.Seg <= 0 && d.Size() > max+1):", None),
    ("CS4", "conn/conn.go", "\tcase d.Seg > max:", "\tcase false:", None),
    ("CS5", "conn/conn.go", "\tcase d.Seg > 0 && (len(d.Tail) > 0 || d.N == 0):", "\tcase d.Seg > 0 && len(d.Tail) > 0:", None),
    ("CS6", "conn/conn.go", "\tcase !d.Addr.IsValid() || d.Addr.Port() == 0 || d.Addr.Addr().IsUnspecified():", "\tcase !d.Addr.IsValid() || d.Addr.Addr().IsUnspecified():", None),
    ("CS7", "conn/conn.go", "\tcase !d.Addr.IsValid() || d.Addr.Port() == 0 || d.Addr.Addr().IsUnspecified():", "\tcase !d.Addr.IsValid() || d.Addr.Port() == 0:", None),
    ("CS8", "conn/conn.go", "\tcase c.BatchSize < 1 || c.BatchSize > MaxBatchSize:", "\tcase c.BatchSize < 1:", None),
    ("CS9", "conn/conn.go", "\tcase c.MaxDatagram < 1 || c.MaxDatagram > MaxDatagramLimit:", "\tcase c.MaxDatagram < 1:", None),
    ("CS10", "conn/conn.go", "\tcase c.BusyPoll < 0 || c.BusyPoll > MaxBusyPoll:", "\tcase c.BusyPoll < 0:", None),
    ("CS11", "conn/conn.go", " || c.MulticastInterface.IsUnspecified() || c.MulticastInterface.IsMulticast()):", " || c.MulticastInterface.IsUnspecified()):", None),
    # the wire's enumerations (wire/codes.go): which values of each field are known, each end
    ("WC1", "wire/codes.go", "func (t Type) Valid() bool { return t >= TypeJoin && t <= typeMax }", "func (t Type) Valid() bool { return t <= typeMax }", None),
    ("WC2", "wire/codes.go", "func (t Type) Valid() bool { return t >= TypeJoin && t <= typeMax }", "func (t Type) Valid() bool { return t >= TypeJoin && t <= typeMax+1 }", None),
    ("WC3", "wire/codes.go", "func (d DType) Valid() bool { return d >= Int8 && d <= dtypeMax }", "func (d DType) Valid() bool { return d <= dtypeMax }", None),
    ("WC4", "wire/codes.go", "func (o Op) Builtin() bool { return o >= OpSum && o <= opMax }", "func (o Op) Builtin() bool { return o <= opMax }", None),
    ("WC5", "wire/codes.go", "func (o Op) Valid() bool { return o.Builtin() || o >= OpCustomBase }", "func (o Op) Valid() bool { return o.Builtin() || o > OpCustomBase }", None),
    ("WC6", "wire/codes.go", "func (f Flags) Known() bool { return f&^flagsKnown == 0 }", "func (f Flags) Known() bool { return true }", None),
    ("WC7", "wire/codes.go", "func (o JoinOptions) Known() bool { return o&^optionsKnown == 0 }", "func (o JoinOptions) Known() bool { return true }", None),
    ("WC8", "wire/codes.go", "func (c ErrorCode) Valid() bool { return c >= CodeRefusedMemory && c <= codeMax }", "func (c ErrorCode) Valid() bool { return c <= codeMax }", None),
    ("WC9", "wire/codes.go", "func (o Op) BitwiseOnly() bool { return o == OpAnd || o == OpOr || o == OpXor }", "func (o Op) BitwiseOnly() bool { return o == OpAnd || o == OpOr }", None),
    ("WC10", "wire/codes.go", "func (s Storage) Valid() bool { return s <= storageMax }", "func (s Storage) Valid() bool { return s <= storageMax+1 }", None),
    # what admission charges a job (handlers/footprint.go): each allocation the formulas count, which the budget holds a job to
    ("FP1", "handlers/footprint.go", "\t\tf.Results = 2 * heapObject(elements*int64(c.DType.Size()), noPointers)", "\t\tf.Results = heapObject(elements*int64(c.DType.Size()), noPointers)", None),
    ("FP2", "handlers/footprint.go", "\tif pointers && n > 512 && n+8 <= maxSmall {\n\t\tn += 8\n\t}\n", "", None),
    ("FP3", "handlers/footprint.go", "\t\treturn (n + 8191) &^ 8191", "\t\treturn n", None),
    ("FP4", "handlers/footprint.go", "\t\tnbufs = 2 * int64(1) << bits.Len(uint(max(c.Children, 1)-1))", "\t\tnbufs = int64(1) << bits.Len(uint(max(c.Children, 1)-1))", None),
    ("FP5", "handlers/footprint.go", "\twords := int64(c.Children+63) / 64", "\twords := int64(c.Children) / 64", None),
    ("FP6", "handlers/footprint.go", "\tif c.KeepResults {\n\t\tf.Blocks += 2 * records", "\tif false {\n\t\tf.Blocks += 2 * records", None),
    ("FP7", "handlers/footprint.go", "\t\tperWork += heapObject(b*int64(cells)*8, noPointers) // the flush's sort keys\n", "", None),
    ("FP8", "handlers/footprint.go", "\tf.Work = nwork*perWork + poolBytes(nwork)\n", "\tf.Work = nwork * perWork\n", None),
    ("FP9", "handlers/footprint.go", "\t\t\tf.Blocks += 2 * (heapObject(nblocks, noPointers) + heapObject(nblocks*int64(unsafe.Sizeof(int64(0))), noPointers)) // final, upAt\n", "", None),
    ("FP10", "handlers/footprint.go", "\t\t\tf.Blocks += 2 * heapObject(nblocks*int64(unsafe.Sizeof(uint16(0))), noPointers) // resultCount\n", "", None),
    ("FP11", "handlers/footprint.go", "\tif pointers && n > 512 && n+8 <= maxSmall {", "\tif pointers && n > 512 && n <= maxSmall {", None),
    # the design a job gets by its size (proto/choose.go)
    ("CH1", "proto/choose.go", "\tcase n > SingleAbove:", "\tcase n >= SingleAbove:", None),
    ("CH2", "proto/choose.go", "\t\treturn wire.AlgoMulti, 4", "\t\treturn wire.AlgoMulti, 2", None),
    ("CH3", "proto/choose.go", "\tcase reproducible:", "\tcase false:", None),
    ("CH4", "proto/choose.go", "\tcase n > Multi2Above:", "\tcase n >= Multi2Above:", None),
    # the reference and the checkers every test holds a sum to (elem/reference.go, sparse_reference.go): a checker made loose lets any wrong sum through
    ("ER1", "elem/reference.go", "\tif len(got) != len(want) {\n\t\treturn fmt.Errorf(\"result has", "\tif false {\n\t\treturn fmt.Errorf(\"result has", None),
    ("ER2", "elem/reference.go", "op == wire.OpMax || len(inputs) <= 2", "op == wire.OpMax || len(inputs) <= 1", None),
    ("ER3", "elem/reference.go", "exact := !dt.IsFloat() || op == wire.OpMin || op == wire.OpMax", "exact := !dt.IsFloat() || op == wire.OpMax", None),
    ("ER4", "elem/reference.go", "\t\tif g == w || (math.IsNaN(g) && math.IsNaN(w)) {", "\t\tif g == w || math.IsNaN(g) {", None),
    ("ER5", "elem/reference.go", "bound := roundingBound(dt, float64(len(inputs)-1), scale)", "bound := roundingBound(dt, float64(len(inputs)), scale)", None),
    ("ER6", "elem/reference.go", "\treturn 2*ops*u*scale + ops*tiny", "\treturn 4*ops*u*scale + ops*tiny", None),
    ("ER7", "elem/reference.go", "\t\tu, tiny = 0x1p-24, 0x1p-149", "\t\tu, tiny = 0x1p-23, 0x1p-149", None),
    ("ER8", "elem/reference.go", "\t\tif math.IsNaN(g) || math.IsNaN(w) || math.Abs(g-w) > bound || math.IsInf(g, 0) != math.IsInf(w, 0) {", "\t\tif math.IsNaN(g) || math.IsNaN(w) || math.Abs(g-w) > bound {", None),
    ("ER20", "elem/reference.go", "\t\tif math.IsNaN(g) || math.IsNaN(w) || math.Abs(g-w) > bound", "\t\tif math.Abs(g-w) > bound", None),
    ("ER9", "elem/reference.go", "\t\tif math.Signbit(a) {\n\t\t\treturn a\n\t\t}\n\t\treturn b", "\t\tif math.Signbit(a) {\n\t\t\treturn b\n\t\t}\n\t\treturn a", None),
    ("ER10", "elem/reference.go", "\tcase math.IsNaN(a) || math.IsNaN(b):\n\t\treturn math.NaN()", "\tcase math.IsNaN(b):\n\t\treturn math.NaN()", None),
    ("ER11", "elem/reference.go", "\tcase wire.OpProd:\n\t\treturn a * b", "\tcase wire.OpProd:\n\t\treturn a + b", None),
    ("ER12", "elem/reference.go", "\t\treturn int64(int16(binary.LittleEndian.Uint16(b)))", "\t\treturn int64(binary.LittleEndian.Uint16(b))", None),
    ("ER13", "elem/reference.go", "\tcase wire.Float32:\n\t\treturn float64(float32(r))", "\tcase wire.Float32:\n\t\treturn r", None),
    ("ER14", "elem/reference.go", "\tif !op.Builtin() || (dt.IsFloat() && op.BitwiseOnly()) || !dt.Valid() {", "\tif !op.Builtin() || !dt.Valid() {", None),
    ("ER15", "elem/reference.go", "\t\t\tif string(got[i:i+sz]) != string(want[i:i+sz]) {", "\t\t\tif got[i] != want[i] {", None),
    ("ER16", "elem/reference.go", "\t\tu, tiny = 0x1p-8, 0x1p-133", "\t\tu, tiny = 0x1p-7, 0x1p-133", None),
    ("ER17", "elem/reference.go", "\t\tu, tiny = 0x1p-11, 0x1p-24", "\t\tu, tiny = 0x1p-10, 0x1p-24", None),
    ("ER18", "elem/reference.go", "\t\t} else {\n\t\t\tscale = math.Abs(w)\n\t\t}", "\t\t} else {\n\t\t\tscale = math.Abs(w) * 2\n\t\t}", None),
    ("ER19", "elem/reference.go", "\t\treturn float64(BFloat16From(float32(r)).Float32())", "\t\treturn float64(float32(r))", None),
    ("SR1", "elem/sparse_reference.go", "\t\tif !dt.IsFloat() || op != wire.OpSum || k <= 2 {", "\t\tif !dt.IsFloat() || op != wire.OpSum || k <= 1 {", None),
    ("SR2", "elem/sparse_reference.go", "\t\tbound := roundingBound(dt, float64(k-1), scale)", "\t\tbound := roundingBound(dt, float64(k), scale)", None),
    ("SR3", "elem/sparse_reference.go", "\t\tif gf == wf || (math.IsNaN(gf) && math.IsNaN(wf)) {", "\t\tif gf == wf || math.IsNaN(gf) {", None),
    ("SR4", "elem/sparse_reference.go", "\t\tif math.IsNaN(gf) || math.IsNaN(wf) || math.Abs(gf-wf) > bound || math.IsInf(gf, 0) != math.IsInf(wf, 0) {", "\t\tif math.IsNaN(gf) || math.IsNaN(wf) || math.Abs(gf-wf) > bound {", None),
    ("SR9", "elem/sparse_reference.go", "\t\tif math.IsNaN(gf) || math.IsNaN(wf) || math.Abs(gf-wf) > bound", "\t\tif math.Abs(gf-wf) > bound", None),
    ("SR5", "elem/sparse_reference.go", "\tif g.Len() != w.Len() {\n\t\treturn fmt.Errorf(\"%d pairs, want %d\"", "\tif false {\n\t\treturn fmt.Errorf(\"%d pairs, want %d\"", None),
    ("SR6", "elem/sparse_reference.go", "\t\tif g.Index(i) != w.Index(i) {", "\t\tif false {", None),
    ("SR7", "elem/sparse_reference.go", "\t\tif n := len(groups); n > 0 && groups[n-1].idx == o.idx {", "\t\tif n := len(groups); n > 0 && groups[n-1].idx == o.idx && false {", None),
    ("SR8", "elem/sparse_reference.go", "\tslices.SortStableFunc(all, func(a, b operand) int { return cmp.Compare(a.idx, b.idx) })", "\tslices.SortStableFunc(all, func(a, b operand) int { return cmp.Compare(b.idx, a.idx) })", None),
    # the packet path's buffer recycling (switch/freelist.go, region.go): a buffer handed out twice is two packets in one buffer, a sum corrupted
    ("FL1", "switch/freelist.go", "\t\tf.free = f.free[:n-1]\n\t\tf.mu.Unlock()\n\t\treturn x", "\t\tf.mu.Unlock()\n\t\treturn x", None),
    ("FL2", "switch/freelist.go", "\tif len(f.free) < f.max {\n\t\tf.free = append(f.free, x)", "\tif true {\n\t\tf.free = append(f.free, x)", None),
    ("FL3", "switch/freelist.go", "\tn := min(len(f.free), cap(dst)-len(dst))", "\tn := len(f.free)", None),
    ("FL4", "switch/freelist.go", "\tclear(f.free[from:])\n\tf.free = f.free[:from]\n", "\tclear(f.free[from:])\n", None),
    ("FL5", "switch/freelist.go", "\tn := min(len(xs), f.max-len(f.free))", "\tn := len(xs)", None),
    ("FL6", "switch/freelist.go", "\tc.items[n] = nil\n\tc.items = c.items[:n]\n\treturn x", "\tc.items[n] = nil\n\treturn x", None),
    ("FL7", "switch/freelist.go", "len(c.items) == cap(c.items) {", "len(c.items) > cap(c.items) {", None),
    ("FL8", "switch/freelist.go", "\tc.list.putAll(c.items)\n\tclear(c.items)\n\tc.items = c.items[:0]", "\tc.list.putAll(c.items)\n\tc.items = c.items[:0]",
     "clear only drops the cache's pointers to what it handed on (for the collector); the slice is cut to 0 and every slot is written before it is read again"),
    ("FL9", "switch/freelist.go", "\t\tif c.items = c.list.take(c.items); len(c.items) == 0 {", "\t\tif len(c.items) == 0 {", None),
    ("RE1", "switch/region.go", "\tif g.refs.Add(-n) == 0 {", "\tif g.refs.Add(-n) <= 1 {", None),
    ("RE2", "switch/region.go", "\t\tr.release()\n\t\treturn nil, 0, err", "\t\treturn nil, 0, err", None),
    ("RE3", "switch/region.go", "\tselect {\n\tcase p.back <- struct{}{}:\n\tdefault:\n\t}", "", None),
    ("RE4", "switch/region.go", "\tr.refs.Store(1)\n", "\tr.refs.Store(2)\n", None),
    # the daemon's socket errors (switch/ioerrors.go): which it counts by name, which a send retries, when a reader stops
    ("IE1", "switch/ioerrors.go", "\tcase errors.Is(err, net.ErrClosed):\n\t\treturn ioClosed\n", "", None),
    ("IE2", "switch/ioerrors.go", "syscall.EINTR, syscall.ECONNREFUSED} {", "syscall.EINTR} {", None),
    ("IE3", "switch/ioerrors.go", "\tif ctx.Err() != nil || errors.Is(err, net.ErrClosed) {", "\tif ctx.Err() != nil {", None),
    ("IE4", "switch/ioerrors.go", "func (r *readRetry) ok() { r.consecutive = 0 }", "func (r *readRetry) ok() {}", None),
    ("IE5", "switch/ioerrors.go", "\t\t\tc.counts[dir][i].Add(1)", "\t\t\tc.counts[dirRx][i].Add(1)", None),
    ("IE6", "switch/ioerrors.go", "\tif r.consecutive == 1 {\n\t\treturn false\n\t}", "\tif r.consecutive == 0 {\n\t\treturn false\n\t}", None),
    ("IE7", "switch/ioerrors.go", "\tcase errors.Is(err, conn.ErrBadAddr):\n\t\treturn ioBadAddr\n", "", None),
    # per-link traffic (switch/links.go): whose datagrams count where, what counts as a retransmission, when a peer is forgotten
    ("LK1", "switch/links.go", "wire.Flags(binary.BigEndian.Uint16(b[wire.OffFlags:]))&wire.FlagRetransmit != 0", "wire.Flags(binary.BigEndian.Uint16(b[wire.OffFlags:]))&wire.FlagRetransmit == 0", None),
    ("LK2", "switch/links.go", "\treturn len(b) >= wire.HeaderLen && b[wire.OffVersion] == wire.Version &&", "\treturn len(b) >= wire.HeaderLen &&", None),
    ("LK3", "switch/links.go", "\t\t\tif l.refs--; l.refs <= 0 {", "\t\t\tif l.refs--; l.refs < 0 {", None),
    ("LK4", "switch/links.go", "\t\tl.refs++\n", "", None),
    ("LK5", "switch/links.go", "\t\tfor ; i < len(msgs) && msgs[i].Addr == addr; i++ {", "\t\tfor ; i < len(msgs); i++ {", None),
    ("LK6", "switch/links.go", "\tif d.Seg <= 0 {\n\t\tr.addOne(d.Buf[:d.N], d.Size())", "\tif true {\n\t\tr.addOne(d.Buf[:d.N], d.Size())", None),
    ("LK7", "switch/links.go", "\tif rx {\n\t\tbytes, packets, retxBytes, retxPackets = &l.rxBytes", "\tif !rx {\n\t\tbytes, packets, retxBytes, retxPackets = &l.rxBytes", None),
    ("LK8", "switch/links.go", "\tif r.retxPackets > 0 {", "\tif r.retxPackets > 1 {", None),
    ("LK9", "switch/links.go", "\t\tall.TxPackets += c.txPackets.Load()", "\t\tall.TxPackets += c.rxPackets.Load()", None),
    ("LK10", "switch/links.go", "\t\tretx.RxBytes += c.rxRetxBytes.Load()", "\t\tretx.RxBytes += c.rxBytes.Load()", None),
    # a socket group (conn/group.go, group_linux.go): its checks, and which socket a datagram reaches, in memory and by the kernel's steering program
    ("GR1", "conn/group.go", "\tcase g.Sockets < 1 || g.Sockets > MaxGroup:", "\tcase g.Sockets < 1:", None),
    ("GR2", "conn/group.go", "\tcase g.ByKey && (g.KeyOffset < 0 || g.KeyOffset > MaxDatagramLimit-4):", "\tcase g.ByKey && (g.KeyOffset < 0 || g.KeyOffset > MaxDatagramLimit-3):", None),
    ("GR3", "conn/group.go", "\tcase g.KeyShift < 0 || g.KeyShift > MaxKeyShift:", "\tcase g.KeyShift < 0:", None),
    ("GR4", "conn/group.go", "\tcase g.Only != nil && g.Only.Min > g.Only.Max:", "\tcase false:", None),
    ("GR5", "conn/group.go", "\t\tif len(b) < g.KeyOffset+4 || (g.Only != nil && !g.Only.has(b)) {", "\t\tif len(b) < g.KeyOffset+3 || (g.Only != nil && !g.Only.has(b)) {", None),
    ("GR6", "conn/group.go", "\t\tif len(b) < g.KeyOffset+4 || (g.Only != nil && !g.Only.has(b)) {", "\t\tif len(b) < g.KeyOffset+4 {", None),
    ("GR7", "conn/group.go", "\t\treturn int((binary.BigEndian.Uint32(b[g.KeyOffset:]) >> g.KeyShift) % uint32(n))", "\t\treturn int(binary.BigEndian.Uint32(b[g.KeyOffset:]) % uint32(n))", None),
    ("GR8", "conn/group.go", "\treturn len(b) > r.Offset && b[r.Offset] >= r.Min && b[r.Offset] <= r.Max", "\treturn len(b) >= r.Offset && b[r.Offset] >= r.Min && b[r.Offset] <= r.Max", None),
    ("GR9", "conn/group.go", "\treturn len(b) > r.Offset && b[r.Offset] >= r.Min && b[r.Offset] <= r.Max", "\treturn len(b) > r.Offset && b[r.Offset] >= r.Min && b[r.Offset] < r.Max", None),
    ("GR10", "conn/group.go", "\tif g.ByKey {\n\t\treturn SteerKey\n\t}\n\treturn SteerFlow", "\treturn SteerFlow", None),
    ("GR11", "conn/group.go", "\tcase g.Only != nil && (g.Only.Offset < 0 || g.Only.Offset > MaxDatagramLimit-1):", "\tcase g.Only != nil && g.Only.Offset < 0:", None),
    ("GR12", "conn/group_linux.go", "bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(r.Min), SkipFalse: n + 1},", "bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(r.Min), SkipFalse: n + 1},", None),
    ("GR13", "conn/group_linux.go", "bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(r.Max), SkipTrue: n},", "bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(r.Max), SkipTrue: n},", None),
    ("GR14", "conn/group_linux.go", "\tif g.KeyShift > 0 {\n\t\tkey = append(key, bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight", "\tif false {\n\t\tkey = append(key, bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight", None),
    ("GR15", "conn/group_linux.go", "SkipFalse: n + 1},", "SkipFalse: n},", None),
    # cores a submitter borrows (hpu/borrow.go): the queue and work counts a borrowed packet leaves to its submitter, and giving the cores back
    ("BW1", "hpu/borrow.go", "\tif b.room[ci] > 0 {\n\t\tb.room[ci]--", "\tif b.room[ci] >= 0 {\n\t\tb.room[ci]--", None),
    ("BW2", "hpu/borrow.go", "\tif co.cluster.waiting.Load() > 0 {\n\t\tco.leave()\n\t\treturn\n\t}\n", "", None),
    ("BW3", "hpu/borrow.go", "\t\t\tco.cluster.signalRoom()\n", "", None),
    ("BW4", "hpu/borrow.go", "\t\t\tb.room[co.cluster.id] = 0\n", "", None),
    ("BW5", "hpu/borrow.go", "\t\t\tco.load.Add(-int64(n))\n", "", None),
    ("BW6", "hpu/borrow.go", "\tif !co.sleeping || len(co.q) > 0 || co.exited {", "\tif !co.sleeping || co.exited {",
     "a core's goroutine sleeps only with nothing queued, and a push to a sleeping core clears sleeping under the same lock: a sleeping core with something queued is never seen"),
    ("BW7", "hpu/borrow.go", "\t\tif queued {\n\t\t\tco.signal()\n\t\t}", "", None),
    ("BW8", "hpu/borrow.go", "\t\tco.batch.publish(&co.stats)\n", "", None),
    ("BW9", "hpu/borrow.go", "\t\t\tce.Flush(co.task.index)\n", "", None),
    ("BW10", "hpu/borrow.go", "\t\tif i := b.index(co); i >= 0 && b.idle[i] > 0 {", "\t\tif i := b.index(co); i >= 0 && b.idle[i] >= 0 {", None),
    ("BW11", "hpu/borrow.go", "\tif i := int(co.slot.Load()); i < b.n && b.cores[i] == co {", "\tif i := int(co.slot.Load()); i < b.n {", None),
    ("BW12", "hpu/borrow.go", "\t\treturn co.load.Load() - int64(b.idle[i])", "\t\treturn co.load.Load()", None),
    ("BW13", "hpu/borrow.go", "func (b *borrowed) held(ci int) int64 { return b.h.held(ci) - int64(b.room[ci]) }", "func (b *borrowed) held(ci int) int64 { return b.h.held(ci) }", None),
    ("BW14", "hpu/borrow.go", "\tif b.n == len(b.cores) || co.borrowed.Load() {", "\tif co.borrowed.Load() {", None),
    ("BW15", "hpu/borrow.go", "\t\tb.idle[i] = 0\n", "", None),
    # the command line (cmd/flare): which field each flag sets, the flags an error names, the zeros it refuses, a bench rank's command line
    ("CL1", "cmd/flare/fields.go", "\t\"MaxPending\": \"--max-pending\", \"MaxPendingPerSource\"", "\t\"MaxPending\": \"--max-jobs\", \"MaxPendingPerSource\"", None),
    ("CL2", "cmd/flare/switch.go", "\tfs.IntVar(&cfg.MaxPendingPerSource, \"max-pending-per-source\", 0,", "\tfs.IntVar(&cfg.MaxPending, \"max-pending-per-source\", 0,", None),
    ("CL3", "cmd/flare/switch.go", "\tn, err := parseSize(*sf.l1)", "\tn, err := parseSize(*sf.packet)", None),
    ("CL4", "cmd/flare/switch.go", ", {\"queue\", cfg.HPU.QueueDepth, hpu.MaxQueueDepth}} {", "} {", None),
    ("CL5", "cmd/flare/switch.go", "\t\t{\"job-idle\", \"0s\", \"in 1s..24h\", cfg.JobIdle == 0},", "\t\t{\"job-idle\", \"0s\", \"in 1s..24h\", false},", None),
    ("CL6", "cmd/flare/switch.go", "\tfs.DurationVar(&cfg.JobIdle, \"job-idle\",", "\tfs.DurationVar(&cfg.JoinTimeout, \"job-idle\",", None),
    ("CL7", "cmd/flare/allreduce.go", "\tfs.IntVar(&c.Warmup, \"warmup\", 2,", "\tfs.IntVar(&c.Iters, \"warmup\", 2,", None),
    ("CL8", "cmd/flare/allreduce.go", "\"--warmup\", strconv.Itoa(c.Warmup),", "\"--warmup\", strconv.Itoa(c.Iters),", None),
    ("CL9", "cmd/flare/allreduce.go", "\"--op\", c.Op.String(),", "\"--op\", \"sum\",", None),
    ("CL10", "cmd/flare/allreduce.go", "\tif c.Verify {\n\t\targs = append(args, \"--verify\")", "\tif false {\n\t\targs = append(args, \"--verify\")", None),
    ("CL11", "cmd/flare/allreduce.go", "\"--overlap\", strconv.FormatFloat(c.Overlap,", "\"--overlap\", strconv.FormatFloat(c.Density,", None),
    ("CL12", "cmd/flare/allreduce.go", "\t\tc.Count = int(n) / c.DType.Size()", "\t\tc.Count = int(n)", None),
    ("CL13", "cmd/flare/allreduce.go", "\t\tc.Storage = wire.StorageArray", "\t\tc.Storage = wire.StorageHash", None),
    ("CL14", "cmd/flare/fields.go", "\t\"Iters\": \"--iters\", \"Warmup\": \"--warmup\", \"Verify\": \"--verify\", \"Timeout\": \"--timeout\", \"Sparse\": \"--sparse\",", "\t\"Iters\": \"--iters\", \"Warmup\": \"--iters\", \"Verify\": \"--verify\", \"Timeout\": \"--timeout\", \"Sparse\": \"--sparse\",", None),
    ("CL15", "cmd/flare/fields.go", "\"HPU.L1Bytes\": \"--l1\", \"HPU.Overflow\": \"--overflow\",", "\"HPU.L1Bytes\": \"--l1\",", None),
    # the fan-out relay (switch/relay_fanout.go), the ceiling the switch is measured against: who may join, what it counts, when a block is complete, where its result goes
    ("RL1", "switch/relay_fanout.go", "\tif int(h.Child) >= shape.world {", "\tif int(h.Child) > shape.world {", None),
    ("RL2", "switch/relay_fanout.go", "\tif j != nil && (j.token != h.Token || j.shape != shape) {", "\tif j != nil && j.shape != shape {", None),
    ("RL3", "switch/relay_fanout.go", "need > fanoutMaxBytes {", "need > fanoutMaxBytes*2 {", None),
    ("RL4", "switch/relay_fanout.go", "\t\tif len(f.order) == fanoutMaxJobs {", "\t\tif len(f.order) == fanoutMaxJobs+1 {", None),
    ("RL5", "switch/relay_fanout.go", " ||\n\t\tj.members[h.Child] != d.Addr {", " {", None),
    ("RL6", "switch/relay_fanout.go", "int(h.Block) >= j.shape.blocks ||", "int(h.Block) > j.shape.blocks ||", None),
    ("RL7", "switch/relay_fanout.go", "\tcase delta < 0:\n\t\treturn out\n", "", None),
    ("RL8", "switch/relay_fanout.go", "\tif seen[w]&bit != 0 {", "\tif false {", None),
    ("RL9", "switch/relay_fanout.go", "\t\tj.gen[b], j.count[b] = h.Generation, 0", "\t\tj.gen[b] = h.Generation", None),
    ("RL10", "switch/relay_fanout.go", "\t\tif int(j.count[b]) == j.shape.world {\n\t\t\ttoResult(h, d)\n\t\t\tout = append(out, *d)\n\t\t}\n", "", None),
    ("RL11", "switch/relay_fanout.go", "\t\t\t\tif f.done[k].j == j {\n\t\t\t\t\tout = append(out,", "\t\t\t\tif f.done[k].j != nil {\n\t\t\t\t\tout = append(out,", None),
    ("RL12", "switch/relay_fanout.go", "\t\twords := (shape.world + 63) / 64", "\t\twords := (shape.world + 62) / 64", None),
    ("RL13", "switch/relay_fanout.go", "\t\tclear(seen)\n", "", None),
    # the analytic model's sparse storages and host collectives (models/sparse.go, collectives.go): the formulas a researcher's sweep reads
    ("MS1", "models/sparse.go", "\t\towned = H * (1 - math.Exp(-b.union/H))", "\t\towned = H * (1 - math.Exp(-b.union/H/2))", None),
    ("MS2", "models/sparse.go", "\tbytes := b.span*float64(b.esize) + math.Ceil(b.span/8)", "\tbytes := b.span*float64(b.esize) + math.Ceil(b.span/64)", None),
    ("MS3", "models/sparse.go", "\trow.Fits = row.MemoryBytes <= float64(p.Clusters)*float64(p.L1Bytes)", "\trow.Fits = row.MemoryBytes <= float64(p.L1Bytes)", None),
    ("MS4", "models/sparse.go", "\trow.Tau = blockCycles / (b.hosts * float64(b.pkts))", "\trow.Tau = blockCycles / float64(b.pkts)", None),
    ("MS5", "models/sparse.go", "\tb.union = b.span * (1 - math.Pow(1-density, b.hosts))", "\tb.union = math.Min(b.span, b.span*density*b.hosts)", None),
    ("MS6", "models/sparse.go", "\trow.SpillCycles = b.packets(row.SpillPairs)", "\trow.SpillCycles = 0", None),
    ("MS7", "models/sparse.go", "\tb.pkts = int(math.Ceil(b.pairs / float64(b.ppp)))", "\tb.pkts = int(math.Floor(b.pairs / float64(b.ppp)))", None),
    ("MC1", "models/collectives.go", "\tsteps := 2 * (P - 1)", "\tsteps := 2 * P", None),
    ("MC2", "models/collectives.go", "\t\tWireBytes: 2 * m * float64(hsum)}", "\t\tWireBytes: m * float64(hsum)}", None),
    ("MC3", "models/collectives.go", "\tcase n.topo == TopoSingle || i/n.g == j/n.g:", "\tcase n.topo == TopoSingle:", None),
    ("MC4", "models/collectives.go", "\treturn m/md.bw + float64(h)*md.lat + md.c.StepOverheadNs*1e-9", "\treturn m/md.bw + md.lat + md.c.StepOverheadNs*1e-9", None),
    ("MC5", "models/collectives.go", "leaves: (p + g - 1) / g,", "leaves: p / g,", None),
    ("MC6", "models/collectives.go", "\tfor dist, m := 1, md.z/2; dist < p2;", "\tfor dist, m := 1, md.z; dist < p2;", None),
    # the harness the handlers' concurrent property tests run on (internal/harness): the duplicates it claims to inject
    ("HA1", "internal/harness/dense.go", "\t\tif h.rng.Float64() < cfg.Dup {", "\t\tif false {", None),
    ("HA2", "internal/harness/sparse.go", "\t\tif s.rng.Float64() < s.cfg.Dup {\n\t\t\ts.held = append(s.held, s.packet(pool, gen, b, seq, true))", "\t\tif false {\n\t\t\ts.held = append(s.held, s.packet(pool, gen, b, seq, true))", None),
    # flare bench's numbers (internal/bench): each row's median and p99, its ratios to the relays and the faster peer, rounds merged
    ("BN1", "internal/bench/legs.go", "\t\tif best == 0 || p.MedianS < best {", "\t\tif best == 0 || p.MedianS > best {", None),
    ("BN2", "internal/bench/legs.go", "\t\trow.OfFanout = ratioOf(res[fanoutOf(row.Path, pk, res)], row.MedianS)", "\t\trow.OfFanout = ratioOf(res[leg{PathRelay, pk}], row.MedianS)", None),
    ("BN3", "internal/bench/legs.go", "\treturn base.MedianS / t", "\treturn t / base.MedianS", None),
    ("BN4", "internal/bench/legs.go", "(path == PathMulticast || path == PathFanoutMC) && res[mc] != nil {", "false && res[mc] != nil {", None),
    ("BN5", "internal/bench/result.go", "\tr.MedianS = times[len(times)/2]", "\tr.MedianS = times[0]", None),
    ("BN6", "internal/bench/result.go", "\tr.P99S = times[min(len(times)-1, (len(times)*99+99)/100-1)]", "\tr.P99S = times[max(0, min(len(times)-1, (len(times)*99)/100-1))]", None),
    ("BN7", "internal/bench/rounds.go", "\trow.MedianS = medians[len(medians)/2]", "\trow.MedianS = medians[0]", None),
    ("BN8", "internal/bench/rounds.go", "\t\t\trow.P99S = max(row.P99S, r.P99S)", "\t\t\trow.P99S = r.P99S", None),
    ("BN9", "internal/bench/rounds.go", "\t\t\trow.Verified = row.Verified && r.Verified", "\t\t\trow.Verified = r.Verified", None),
    ("BN10", "internal/bench/result.go", "\treturn algbw * 2 * float64(p-1) / float64(p)", "\treturn algbw * 2", None),
    ("BN11", "internal/bench/rounds.go", "\t\t\trow.Retransmits += r.Retransmits\n", "", None),
    ("BN12", "internal/bench/rounds.go", "\trow.ServerUserS, row.ServerSysS = user/float64(row.Iters), sys/float64(row.Iters)", "\trow.ServerUserS, row.ServerSysS = user/float64(len(rs)), sys/float64(len(rs))", None),
    # packet captures (switch/capture.go): each datagram's direction and addresses, a run's segments, a kept payload, the file's size bound
    ("CP1", "switch/capture.go", "\t\tif !received {\n\t\t\tsrc, dst = c.local, d.Addr", "\t\tif received {\n\t\t\tsrc, dst = c.local, d.Addr", None),
    ("CP2", "switch/capture.go", "\tif received {\n\t\tsrcMAC, dstMAC = captureHostMAC, CaptureSwitchMAC", "\tif !received {\n\t\tsrcMAC, dstMAC = captureHostMAC, CaptureSwitchMAC", None),
    ("CP3", "switch/capture.go", "\tif c.written+16+int64(len(frame)) > c.max {", "\tif c.written+int64(len(frame)) > c.max {", None),
    ("CP4", "switch/capture.go", "\tc.written += 16 + int64(len(frame))", "\tc.written += int64(len(frame))", None),
    ("CP5", "switch/capture.go", "max: max, written: 24,", "max: max, written: 0,", None),
    ("CP6", "switch/capture.go", "\tif c.full {\n\t\treturn\n\t}\n\tsrcMAC", "\tsrcMAC", None),
    ("CP7", "switch/capture.go", "\t\tc.whole = c.whole[:0]\n", "", None),
    ("CP8", "switch/capture.go", "\t\tfor pkt := range d.Datagrams(&c.whole) {\n\t\t\tc.write(now, src, dst, pkt, received)\n\t\t}", "\t\tc.write(now, src, dst, d.Buf[:d.N], received)", None),
    ("CP9", "switch/capture.go", "\tif s.Is4() && t.Is4() {", "\tif s.Is4() {", None),
    # a Go slice's dtype (hostlib/dtype.go): which wire dtype each element type is, the check against the session's, the portable encoding
    ("DT1", "hostlib/dtype.go", "\tcase reflect.Int16:\n\t\treturn wire.Int16", "\tcase reflect.Int16:\n\t\treturn wire.BFloat16", None),
    ("DT2", "hostlib/dtype.go", "\tcase reflect.Float32:\n\t\treturn wire.Float32", "\tcase reflect.Float32:\n\t\treturn wire.Int32", None),
    ("DT3", "hostlib/dtype.go", "\t\tif reflect.TypeFor[T]() == reflect.TypeFor[elem.Float16]() {", "\t\tif reflect.TypeFor[T]() != reflect.TypeFor[elem.Float16]() {", None),
    ("DT4", "hostlib/dtype.go", "\tif got := DTypeOf[T](); got != dt {", "\tif got := DTypeOf[T](); got.Size() != dt.Size() {", None),
    ("DT5", "hostlib/dtype.go", "\t\t\tbinary.LittleEndian.PutUint64(dst[8*i:], *(*uint64)(unsafe.Pointer(&src[i])))", "\t\t\tbinary.BigEndian.PutUint64(dst[8*i:], *(*uint64)(unsafe.Pointer(&src[i])))", None),
    ("DT6", "hostlib/dtype.go", "\t\t\t*(*uint16)(unsafe.Pointer(&dst[i])) = binary.LittleEndian.Uint16(src[2*i:])", "\t\t\t*(*uint16)(unsafe.Pointer(&dst[i])) = binary.BigEndian.Uint16(src[2*i:])", None),
    ("DT7", "hostlib/dtype.go", "\tcase reflect.Int64:\n\t\treturn wire.Int64", "\tcase reflect.Int64:\n\t\treturn wire.Float64", None),
    # the simulator (sim/sim.go, host.go): the checks that make a wrong run an error, the steady state's and the latency's arithmetic, the window and quota its hosts keep to, its inputs
    ("SM1", "sim/sim.go", "\t\tlat += at - s.firstIn[b]", "\t\tlat += at - s.firstIn[max(0, b-1)]", None),
    ("SM2", "sim/sim.go", "\tr.LatencyCycles = float64(lat) / float64(s.nblocks)", "\tr.LatencyCycles = float64(lat) / float64(s.perRound)", None),
    ("SM3", "sim/host.go", "\tif s.firstIn[blk] < 0 {\n\t\ts.firstIn[blk] = now", "\tif true {\n\t\ts.firstIn[blk] = now", None),
    ("SM4", "sim/sim.go", "\ts.steady = [2]int64{max(1, packets/steadyTrim), packets - packets/steadyTrim}", "\ts.steady = [2]int64{1, packets}", None),
    ("SM5", "sim/sim.go", "\t\tr.MemoryBuffers = float64(b.area-a.area) / float64(b.at-a.at)\n", "", None),
    ("SM6", "sim/sim.go", "\t\tr.SteadyTauCycles = float64(b.busy-a.busy) / float64(s.steady[1]-s.steady[0])\n", "", None),
    ("SM7", "sim/sim.go", "\t\treturn pktsPerCycle * float64(cfg.Bytes) / float64(s.perRound) * 8 * cfg.HPU.Cost.ClockHz / 1e9", "\t\treturn pktsPerCycle * float64(cfg.Bytes) / float64(s.nblocks) * 8 * cfg.HPU.Cost.ClockHz / 1e9", None),
    ("SM8", "sim/host.go", "\tcase b >= s.nblocks || s.emitted[b] >= 0:", "\tcase b >= s.nblocks:", None),
    ("SM9", "sim/host.go", "\tcase h.Type != wire.TypeResult || h.Flags&wire.FlagRetransmit != 0:", "\tcase h.Type != wire.TypeResult:", None),
    ("SM10", "sim/sim.go", "\tif err := elem.Check(s.cfg.DType, s.cfg.Op, s.inputs, s.out); err != nil {", "\tif err := error(nil); err != nil {", None),
    ("SM11", "sim/sim.go", "d+nb+inv != 0 {", "d+nb != 0 {", None),
    ("SM12", "sim/sim.go", "\t\tif at < 0 {\n\t\t\treturn fmt.Errorf(\"sim: block %d of %d never completed", "\t\tif at < -1 {\n\t\t\treturn fmt.Errorf(\"sim: block %d of %d never completed", None),
    ("SM13", "sim/sim.go", "\t\treturn min(n, w*p) * b", "\t\treturn min(n, w*p)", None),
    ("SM14", "sim/sim.go", "\t\treturn min(n, w) * p", "\t\treturn min(n, w*p)", None),
    ("SM15", "sim/sim.go", "\t\tr.IngressWaitCycles = float64(st.IngressWaitCycles) / float64(st.Arrivals)", "\t\tr.IngressWaitCycles = float64(st.IngressWaitCycles)", None),
    ("SM16", "sim/sim.go", "\ts.group = min(s.perRound, s.window)", "\ts.group = s.perRound", None),
    ("SM17", "sim/sim.go", "\tif len(s.problems) > 0 {", "\tif len(s.problems) > 1 {", None),
    ("SM18", "sim/host.go", "\tif h.Type == wire.TypeError {\n\t\treturn // a waiting", "\tif h.Type == wire.TypeError && false {\n\t\treturn // a waiting", None),
    ("SM19", "sim/sim.go", "\tif s.window == 0 || s.window > n {", "\tif s.window == 0 {", None),
    ("SM20", "sim/sim.go", "\tneed = max(need, dcfg.MinBuffers())", "\t_ = dcfg.MinBuffers()", "for n, w >= 1 buffersFor is never below MinBuffers: single min(n, wP) >= 1, multi min(n, wP)·B >= B, tree min(n, w)·P >= P"),
    ("SM21", "sim/sim.go", "\t\tc.MeanInterArrival = float64(c.PacketBytes) * 8 / (c.HostGbps * 1e9) * c.HPU.Cost.ClockHz", "\t\tc.MeanInterArrival = float64(c.PacketBytes) / (c.HostGbps * 1e9) * c.HPU.Cost.ClockHz", None),
    ("SM22", "sim/sim.go", "\tif c.HPU.BufferBytes == 0 {\n\t\tc.HPU.BufferBytes = c.PacketBytes", "\tif c.HPU.BufferBytes == 0 {\n\t\tc.HPU.BufferBytes = 2 * c.PacketBytes", None),
    ("SM23", "sim/sim.go", "\t\tr.MemoryBytes = r.MemoryBuffers * float64(cfg.HPU.BufferBytes)\n\t\tr.SteadyTau", "\t\tr.MemoryBytes = r.MemoryBuffers * float64(cfg.PacketBytes)\n\t\tr.SteadyTau", None),
    ("SM24", "sim/sim.go", "\treturn max(1, (cores+n-1)/n)", "\treturn max(1, cores/n)", None),
    ("SM25", "sim/sim.go", "\tcase c.Bytes < es || c.Bytes%es != 0:", "\tcase c.Bytes < 0 || c.Bytes%es != 0:", None),
    ("SM26", "sim/sim.go", "\tcase c.Hosts < 1 || c.Hosts > proto.MaxChildren:", "\tcase c.Hosts < 1:", None),
    ("SM27", "sim/host.go", "\t\tif h.inflight >= s.window {\n\t\t\tcontinue", "\t\tif h.inflight > s.window {\n\t\t\tcontinue", None),
    ("SM28", "sim/host.go", "\tif h.inflight >= s.window {\n\t\th.blocked = true", "\tif h.inflight > s.window {\n\t\th.blocked = true", None),
    ("SM29", "sim/host.go", "\t\tf.turn = (h.rank + 1) % p", "\t\tf.turn = h.rank", None),
    ("SM30", "sim/sim.go", "\t\t\t\telem.StoreFloat(dt, b[i:], 0.75+r.Float64()/2)", "\t\t\t\telem.StoreFloat(dt, b[i:], r.Float64()*2-1)", None),
    # the model against the simulation (sim/sweep): the relative errors, the ranking's ties, what the simulated run is given
    ("SW1", "sim/sweep/compare.go", "\t\tif r.StaggerBlocks < r.Blocks {", "\t\tif false {", None),
    ("SW2", "sim/sweep/rank.go", "\t\t\tif apart(model(rows[i]), model(rows[j]))*apart(sim(rows[i]), sim(rows[j])) < 0 {", "\t\t\tif apart(model(rows[i]), model(rows[j]))*apart(sim(rows[i]), sim(rows[j])) > 0 {", None),
    ("SW3", "sim/sweep/rank.go", "\t\tcase a > b*(1+rankTol):", "\t\tcase a > b:", None),
    ("SW4", "sim/sweep/compare.go", "\treturn (got - want) / want", "\treturn (got - want) / got", None),
    ("SW5", "sim/sweep/sweep.go", "\t\tMeanInterArrival: p.Delta() * float64(p.Hosts),", "\t\tMeanInterArrival: p.Delta(),", None),
    ("SW6", "sim/sweep/sweep.go", "\t\trounds = sim.SteadyRounds(p.Cores(), int(bytes), p.PacketBytes)", "\t\trounds = 1", None),
    ("SW7", "sim/sweep/compare.go", "\t\t\tTauErr: relErr(r.TauCycles, m.Tau), LatencyErr: relErr(r.LatencyCycles, m.Latency),", "\t\t\tTauErr: relErr(r.TauCycles, m.Tau), LatencyErr: relErr(r.LatencyCycles, m.Tau),", None),
    # the daemon's metrics (switch/metrics.go): each series an operator reads, its labels, its units, what an ended job leaves counted, the handler-time histogram
    ("MT1", "switch/metrics.go", "\tcounter(c.rx, float64(rx))\n\tcounter(c.tx, float64(tx))", "\tcounter(c.rx, float64(tx))\n\tcounter(c.tx, float64(rx))", None),
    ("MT2", "switch/metrics.go", "\t\tcounter(c.reader, float64(s.perReader[i].rx.Load()), r, \"rx\")", "\t\tcounter(c.reader, float64(s.perReader[i].tx.Load()), r, \"rx\")", None),
    ("MT3", "switch/metrics.go", "\t\t\tdrops[dropOversize] += int64(tc.Truncated())", "\t\t\t_ = tc.Truncated()", None),
    ("MT4", "switch/metrics.go", "\t\tcounter(c.jobRx, float64(rx), id)\n\t\tcounter(c.jobTx, float64(tx), id)", "\t\tcounter(c.jobRx, float64(tx), id)\n\t\tcounter(c.jobTx, float64(rx), id)", None),
    ("MT5", "switch/metrics.go", "\tcompleted, latency := s.completedEnded.Load(), s.latencyEnded.Load()", "\tcompleted, latency := int64(0), s.latencyEnded.Load()", None),
    ("MT6", "switch/metrics.go", "\tcompleted, latency := s.completedEnded.Load(), s.latencyEnded.Load()", "\tcompleted, latency := s.completedEnded.Load(), int64(0)", None),
    ("MT7", "switch/metrics.go", "\tcounter(c.blockLat, float64(latency)/1e9)", "\tcounter(c.blockLat, float64(latency)/1e6)", None),
    ("MT8", "switch/metrics.go", "\tcounter(c.bufSeconds, float64(s.unit.Memory().HeldNs())/1e9)", "\tcounter(c.bufSeconds, float64(s.unit.Memory().HeldNs())/1e6)", None),
    ("MT9", "switch/metrics.go", "\t\tcounter(c.linkBytes, float64(all.RxBytes), p, l.role, \"rx\")", "\t\tcounter(c.linkBytes, float64(all.TxBytes), p, l.role, \"rx\")", None),
    ("MT10", "switch/metrics.go", "\t\tcounter(c.linkPackets, float64(all.RxPackets), p, l.role, \"rx\")", "\t\tcounter(c.linkPackets, float64(all.RxBytes), p, l.role, \"rx\")", None),
    ("MT11", "switch/metrics.go", "\t\tcounter(c.linkPackets, float64(all.TxPackets), p, l.role, \"tx\")", "\t\tcounter(c.linkPackets, float64(all.RxPackets), p, l.role, \"tx\")", None),
    ("MT12", "switch/metrics.go", "\tgauge(c.memReserved, float64(s.budget.reserved.Load()))", "\tgauge(c.memReserved, float64(s.budget.limit))", None),
    ("MT13", "switch/metrics.go", "\tgauge(c.pending, float64(s.pending.n.Load()))", "\tgauge(c.pending, float64(len(jobs)))", None),
    ("MT14", "switch/metrics.go", "\tgauge(c.jobs, float64(len(jobs)))", "\tgauge(c.jobs, float64(s.pending.n.Load()))", None),
    ("MT15", "switch/metrics.go", "\t\tcounter(c.ioErrors, float64(n), k.dir, k.errno)", "\t\tcounter(c.ioErrors, float64(n), k.errno, k.dir)", None),
    ("MT16", "switch/metrics.go", "\tgauge(c.bufs, float64(mem.InUse()))\n\tgauge(c.bufsTotal, float64(mem.Total()))", "\tgauge(c.bufs, float64(mem.Total()))\n\tgauge(c.bufsTotal, float64(mem.InUse()))", None),
    ("MT17", "switch/metrics.go", "\t\tgauge(c.queue, float64(cl.QueueNow), l)\n\t\tgauge(c.queueMean, cl.QueueMean, l)", "\t\tgauge(c.queue, cl.QueueMean, l)\n\t\tgauge(c.queueMean, float64(cl.QueueNow), l)", None),
    ("MT18", "switch/metrics.go", "\t\tl := strconv.Itoa(co.Cluster*s.cfg.HPU.CoresPerCluster + co.Core)", "\t\tl := strconv.Itoa(co.Cluster*s.cfg.HPU.Clusters + co.Core)", None),
    ("MT19", "switch/metrics.go", "\t\tcounter(c.coreBusy, float64(co.BusyNs)/1e9, l)", "\t\tcounter(c.coreBusy, float64(co.BusyNs)/1e6, l)", None),
    ("MT20", "switch/metrics.go", "\t\tcounter(c.corePackets, float64(co.Packets), l)", "\t\tcounter(c.corePackets, float64(co.Packets+co.Rejected), l)", None),
    ("MT21", "switch/metrics.go", "\tcounter(c.lockWait, float64(tot.LockWaitNs)/1e9)", "\tcounter(c.lockWait, float64(tot.BusyNs)/1e9)", None),
    ("MT22", "switch/metrics.go", "\tgauge(c.tauC, st.TauCycles())", "\tgauge(c.tauC, st.TauNs())", None),
    ("MT23", "switch/metrics.go", "\t\tcount += uint64(tot.Hist[i])", "\t\tcount = uint64(tot.Hist[i])", None),
    ("MT24", "switch/metrics.go", "\tcount += uint64(tot.Hist[hpu.HistBuckets-1])\n", "", None),
    ("MT25", "switch/metrics.go", "\treturn count, float64(tot.BusyNs) / 1e9, buckets", "\treturn count, float64(tot.LockWaitNs) / 1e9, buckets", None),
    ("MT26", "switch/metrics.go", "\t\tbuckets[float64(hpu.HistBound(i))/1e9] = count", "\t\tbuckets[float64(hpu.HistBound(i+1))/1e9] = count", None),
    ("MT27", "switch/metrics.go", "\tgauge(c.groups, float64(s.groups.held()))", "\tgauge(c.groups, 0)", None),
    ("MT28", "switch/metrics.go", "\t\t\tlatency += live.handler.latencyNs()\n", "", None),
    ("MT29", "switch/metrics.go", "\t\t\tcompleted += live.handler.completed()\n", "", None),
    # the in-memory network tests and benchmarks run on (conn/mem.go): its faults, its queues' bounds and counts, its addressing, the checks a socket would make, a closed receiver
    ("ME1", "conn/mem.go", "\tif f.Drop > 0 && n.draw() < f.Drop {", "\tif f.Drop > 0 && n.draw() < f.Drop/2 {", None),
    ("ME2", "conn/mem.go", "\t\tn.duplicated.Add(1)\n\t\tcopies = 2", "\t\tn.duplicated.Add(1)\n\t\tcopies = 1", None),
    ("ME3", "conn/mem.go", "\t\tn.reordered.Add(1)\n\t\tdelay += MemReorderHold", "\t\tn.reordered.Add(1)", None),
    ("ME4", "conn/mem.go", "\tif dst.closed() {\n\t\tn.noRoute.Add(uint64(len(bs)))", "\tif false {\n\t\tn.noRoute.Add(uint64(len(bs)))", None),
    ("ME5", "conn/mem.go", "\tk := min(len(bs), len(q.ring)-q.n)", "\tk := min(len(bs), len(q.ring)-q.n+1)", None),
    ("ME6", "conn/mem.go", "\tif len(p.b) > cap(msgs[out].Buf) {", "\tif len(p.b) >= cap(msgs[out].Buf) {", None),
    ("ME7", "conn/mem.go", "\tmsgs[out].Addr = p.from\n", "", None),
    ("ME8", "conn/mem.go", "\t\tif err := checkSend(d, DefaultMaxDatagram); err != nil {", "\t\tif err := error(nil); err != nil {", None),
    ("ME9", "conn/mem.go", "\tif a.Is4() {\n\t\tif c := n.conns[netip.AddrPortFrom(netip.IPv4Unspecified(), dst.Port())]", "\tif !a.Is4() {\n\t\tif c := n.conns[netip.AddrPortFrom(netip.IPv4Unspecified(), dst.Port())]", None),
    ("ME10", "conn/mem.go", "\t\tif len(g.conns) == 0 {\n\t\t\tdelete(c.net.conns, c.addr)", "\t\tif len(g.conns) < 0 {\n\t\t\tdelete(c.net.conns, c.addr)", None),
    ("ME11", "conn/mem.go", "\treturn g.conns[g.cfg.pick(len(g.conns), b, from)]", "\treturn g.conns[0]", None),
    ("ME12", "conn/mem.go", "\tfaults := n.Faults != (Faults{})", "\tfaults := n.Faults.Drop+n.Faults.Dup > 0", None),
    ("ME13", "conn/mem.go", "\tif dst != r.to || r.k == len(r.bs) {", "\tif dst != r.to {", None),
    ("ME14", "conn/mem.go", "\t\theld := append([]byte(nil), b...)", "\t\theld := b", None),
    ("ME15", "conn/mem.go", "\tif queued < len(bs) {", "\tif queued < len(bs)-1 {", None),
    ("ME16", "conn/mem.go", "\tqueued.Add(uint64(k))", "\tqueued.Add(uint64(len(bs)))", None),
    ("ME17", "conn/mem.go", "\tdelay := f.Delay\n", "\tdelay := time.Duration(0)\n", None),
    ("ME18", "conn/mem.go", "\t\t\tif ap = netip.AddrPortFrom(a, n.port); n.conns[ap] == nil {", "\t\t\tif ap = netip.AddrPortFrom(a, n.port); true {", None),
    ("ME19", "conn/mem.go", "\tif n.conns[ap] != nil {\n\t\treturn nil, fmt.Errorf(\"mem listen %v: address already in use\", ap)", "\tif false {\n\t\treturn nil, fmt.Errorf(\"mem listen %v: address already in use\", ap)", None),
    ("ME20", "conn/mem.go", "\t\tif f := len(q.free); f > 0 {", "\t\tif f := len(q.free); f > 1 {", "whether a datagram's copy is reused or allocated, never what is delivered"),
    ("ME21", "conn/mem.go", "\treturn n.conns[netip.AddrPortFrom(netip.IPv6Unspecified(), dst.Port())]", "\treturn nil", None),
    ("ME22", "conn/mem.go", "\ta := addr.Addr().Unmap()", "\ta := addr.Addr()", None),
    # the host's errors (hostlib/errors.go): which sentinels each matches, what it says
    ("HE1", "hostlib/errors.go", "func (e *AbortedError) Is(target error) bool { return target == ErrAborted }", "func (e *AbortedError) Is(target error) bool { return target == ErrClosed }", None),
    ("HE2", "hostlib/errors.go", "\tif e.Generation == 0 {\n\t\twhat = \"join\"", "\tif e.Generation == 1 {\n\t\twhat = \"join\"", None),
    ("HE3", "hostlib/errors.go", "\treturn target == ErrRefused && e.Code == wire.CodeRefusedMemory", "\treturn target == ErrRefused", None),
    ("HE4", "hostlib/errors.go", "\treturn target == ErrRefused && e.Code == wire.CodeRefusedMemory", "\treturn e.Code == wire.CodeRefusedMemory", None),
    ("HE5", "hostlib/errors.go", "\treturn target == ErrTimeout || target == context.DeadlineExceeded", "\treturn target == ErrTimeout || target == context.Canceled", None),
    ("HE6", "hostlib/errors.go", "\treturn target == ErrTimeout || target == context.DeadlineExceeded", "\treturn target == context.DeadlineExceeded", None),
    ("HE7", "hostlib/errors.go", "func (e *TimeoutError) Timeout() bool { return true }", "func (e *TimeoutError) Timeout() bool { return false }", None),
    ("HE8", "hostlib/errors.go", "\t\tif e.Missing > len(e.First) {", "\t\tif e.Missing >= len(e.First) {", None),
    ("HE9", "hostlib/errors.go", "\tif e.Waiting != \"\" {", "\tif false {", None),
    ("HE10", "hostlib/errors.go", "\tif e.LastSend != nil {", "\tif false {", None),
    ("HE11", "hostlib/errors.go", "\tif e.Message == \"\" {", "\tif true {", None),
    ("HE12", "hostlib/errors.go", "const maxFirstMissing = 8", "const maxFirstMissing = 9", None),
    ("HE13", "hostlib/errors.go", "\t\t\tif i > 0 {\n\t\t\t\tb.WriteString(\", \")", "\t\t\tif i > 1 {\n\t\t\t\tb.WriteString(\", \")", None),
    # flare bench's configuration (internal/bench/config.go): each range's both ends, and where each rank of a tree joins
    ("BC1", "internal/bench/config.go", "\tcase c.Count < 1 || c.Count > MaxCount:", "\tcase c.Count < 1 || c.Count >= MaxCount:", None),
    ("BC2", "internal/bench/config.go", "\tcase c.Count < 1 || c.Count > MaxCount:", "\tcase c.Count < 1 || c.Count > MaxCount+1:", None),
    ("BC3", "internal/bench/config.go", "\tcase c.Iters < 1 || c.Warmup < 0:", "\tcase c.Iters < 1 || c.Warmup < 1:", None),
    ("BC4", "internal/bench/config.go", "\tcase c.Iters < 1 || c.Warmup < 0:", "\tcase c.Iters < 1:", None),
    ("BC5", "internal/bench/config.go", "c.Deadline < time.Millisecond || c.Deadline > 65535*time.Millisecond ||", "c.Deadline < time.Millisecond || c.Deadline >= 65535*time.Millisecond ||", None),
    ("BC6", "internal/bench/config.go", "c.Deadline < time.Millisecond || c.Deadline > 65535*time.Millisecond ||", "c.Deadline <= time.Millisecond || c.Deadline > 65535*time.Millisecond ||", None),
    ("BC7", "internal/bench/config.go", "\tcase c.Deadline != 0 && (c.Sparse || (c.Algo != \"auto\" && c.Algo != \"single\")):", "\tcase c.Deadline != 0 && (c.Algo != \"auto\" && c.Algo != \"single\"):", None),
    ("BC8", "internal/bench/config.go", "(c.TailRatio < 1 || c.TailRatio > 100 || c.TailMedian <= 0):", "(c.TailRatio <= 1 || c.TailRatio > 100 || c.TailMedian <= 0):", None),
    ("BC9", "internal/bench/config.go", "(c.TailRatio < 1 || c.TailRatio > 100 || c.TailMedian <= 0):", "(c.TailRatio < 1 || c.TailRatio > 100):", None),
    ("BC10", "internal/bench/config.go", "\tcase c.BusyPoll < 0 || c.BusyPoll > conn.MaxBusyPoll:", "\tcase c.BusyPoll < 0 || c.BusyPoll >= conn.MaxBusyPoll:", None),
    ("BC11", "internal/bench/config.go", "\tcase c.BusyPoll < 0 || c.BusyPoll > conn.MaxBusyPoll:", "\tcase c.BusyPoll > conn.MaxBusyPoll:", None),
    ("BC12", "internal/bench/config.go", "\tcase c.BlockElems < 0 || uint64(c.BlockElems) > math.MaxUint32:", "\tcase c.BlockElems < 0 || uint64(c.BlockElems) >= math.MaxUint32:", None),
    ("BC13", "internal/bench/config.go", "\tcase c.Ranks < 0 || c.Ranks > MaxRanks:", "\tcase c.Ranks < 0 || c.Ranks >= MaxRanks:", None),
    ("BC14", "internal/bench/config.go", "(c.World < 1 || c.World > hostlib.MaxWorld || c.Rank < 0 || c.Rank >= c.World):", "(c.World < 1 || c.World >= hostlib.MaxWorld || c.Rank < 0 || c.Rank >= c.World):", None),
    ("BC15", "internal/bench/config.go", "(c.World < 1 || c.World > hostlib.MaxWorld || c.Rank < 0 || c.Rank >= c.World):", "(c.World < 1 || c.World > hostlib.MaxWorld || c.Rank < 0 || c.Rank > c.World):", None),
    ("BC16", "internal/bench/config.go", "(c.World < 1 || c.World > hostlib.MaxWorld || c.Rank < 0 || c.Rank >= c.World):", "(c.World < 1 || c.World > hostlib.MaxWorld || c.Rank >= c.World):", None),
    ("BC17", "internal/bench/config.go", "\tcase !(c.Density > 0 && c.Density <= 1):", "\tcase !(c.Density > 0 && c.Density < 1):", None),
    ("BC18", "internal/bench/config.go", "\tcase !(c.Density > 0 && c.Density <= 1):", "\tcase !(c.Density >= 0 && c.Density <= 1):", None),
    ("BC19", "internal/bench/config.go", "\tcase !(c.Overlap >= 0 && c.Overlap <= 1):", "\tcase !(c.Overlap > 0 && c.Overlap <= 1):", None),
    ("BC20", "internal/bench/config.go", "\tcase !(c.Overlap >= 0 && c.Overlap <= 1):", "\tcase !(c.Overlap >= 0 && c.Overlap < 1):", None),
    ("BC21", "internal/bench/config.go", "\tcase c.Op != wire.OpSum && c.Op != wire.OpMin && c.Op != wire.OpMax:", "\tcase c.Op != wire.OpSum && c.Op != wire.OpMin:", None),
    ("BC22", "internal/bench/config.go", "\tcase c.Algo == \"tree\" || c.Reproducible:", "\tcase c.Algo == \"tree\":", None),
    ("BC23", "internal/bench/config.go", "\tcase uint64(c.Count) > math.MaxUint32:", "\tcase uint64(c.Count) >= math.MaxUint32:", "Count is at most MaxCount, 2^30, by the check before: no count reaches 2^32-1"),
    ("BC24", "internal/bench/config.go", "\tcase c.Algo != \"ring\" && c.Storage != wire.StorageHash && c.Storage != wire.StorageArray:", "\tcase c.Storage != wire.StorageHash && c.Storage != wire.StorageArray:", None),
    ("BC25", "internal/bench/config.go", "\tcase n > world:", "\tcase n >= world:", None),
    ("BC26", "internal/bench/config.go", "\t\tif err != nil || v < 1 {", "\t\tif err != nil || v < 0 {", None),
    ("BC27", "internal/bench/config.go", "b >= 2 && b <= proto.MaxBuffers {", "b >= 2 && b < proto.MaxBuffers {", None),
    ("BC28", "internal/bench/config.go", "b >= 2 && b <= proto.MaxBuffers {", "b >= 1 && b <= proto.MaxBuffers {", None),
    ("BC29", "internal/bench/config.go", "\tfor (i+1)*world/len(l) <= r {\n\t\ti++", "\tfor (i+1)*world/len(l) < r {\n\t\ti++", None),
    ("BC31", "internal/bench/config.go", "\t\t\tif r < lo+n {", "\t\t\tif r <= lo+n {", None),
    ("BC32", "internal/bench/config.go", "\tcase c.Ranks == 0 && c.World == 0:", "\tcase false:", None),
    ("BC33", "internal/bench/config.go", "\tcase len(c.Peers) > 0 && (c.Algo != \"ring\" || c.Ranks != 0):", "\tcase len(c.Peers) > 0 && c.Algo != \"ring\":", None),
    ("BC34", "internal/bench/config.go", "\tcase c.Algo == \"ring\" && c.Ranks == 0 && len(c.Peers) != c.World:", "\tcase c.Algo == \"ring\" && c.Ranks == 0 && len(c.Peers) < c.World:", None),
    # flare bench's verification (internal/bench/pattern.go, payload.go): patterns that tell calls, ranks and operators apart, the checks of a call's results, bounded time's blocks
    ("PV1", "internal/bench/pattern.go", "\tfor i := 0; 4*i+4 <= len(buf); i++ {\n\t\twant := w*sumElemPart(first+i, it) + ranks", "\tfor i := 0; 4*i+8 <= len(buf); i++ {\n\t\twant := w*sumElemPart(first+i, it) + ranks", None),
    ("PV2", "internal/bench/pattern.go", "\th := uint64(r+1)*0xBF58476D1CE4E5B9 ^ uint64(it)*0x94D049BB133111EB\n\th ^= h >> 29", "\th := uint64(it) * 0x94D049BB133111EB\n\th ^= h >> 29", None),
    ("PV3", "internal/bench/pattern.go", "\th := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(it)*0x94D049BB133111EB\n\th ^= h >> 31\n\treturn int64(h%41) - 20", "\th := uint64(i) * 0x9E3779B97F4A7C15\n\th ^= h >> 31\n\treturn int64(h%41) - 20", None),
    ("PV4", "internal/bench/pattern.go", "\t\tcase 0:\n\t\t\treturn -1\n\t\tcase 1:\n\t\t\treturn 2\n\t\t}", "\t\t}", None),
    ("PV5", "internal/bench/pattern.go", "\th := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(r)*0xBF58476D1CE4E5B9 ^ uint64(it)*0x94D049BB133111EB", "\th := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(it)*0x94D049BB133111EB", None),
    ("PV6", "internal/bench/pattern.go", "\t\t\tbinary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(patternValue(op, rank, i, it))))", "\t\t\tbinary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(patternValue(op, 0, i, it))))", None),
    ("PV7", "internal/bench/pattern.go", "\tshared := mrand.New(mrand.NewPCG(uint64(it), 0x5eed))", "\tshared := mrand.New(mrand.NewPCG(uint64(it), uint64(r)+1))", None),
    ("PV8", "internal/bench/payload.go", "\t\tif i > 0 && bytes.Equal(got[i], got[0]) {", "\t\tif i > 0 && !bytes.Equal(got[i], got[0]) {", None),
    ("PV9", "internal/bench/payload.go", "\t\tif int(n) < p.world {\n\t\t\tpartial++", "\t\tif int(n) <= p.world {\n\t\t\tpartial++", None),
    ("PV10", "internal/bench/payload.go", "\t\t\tmissed += p.world - int(n)", "\t\t\tmissed++", None),
    ("PV11", "internal/bench/payload.go", "\t\t\tif err := verifyPattern(c.DType, c.Op, p.world, it, buf[lo*sz:hi*sz], lo); err != nil {", "\t\t\tif err := verifyPattern(c.DType, c.Op, p.world, it, buf[lo*sz:hi*sz], 0); err != nil {", None),
    ("PV12", "internal/bench/payload.go", "\t\t\tall[r] = sparsePattern(c.DType, r, it, c.Count, c.Density, c.Overlap)", "\t\t\tall[r] = sparsePattern(c.DType, 0, it, c.Count, c.Density, c.Overlap)", None),
    ("PV13", "internal/bench/payload.go", "\t\tn := min(chunk, len(buf)/sz-lo)", "\t\tn := min(chunk, len(buf)/sz-lo-1)", None),
    ("PV14", "internal/bench/payload.go", "\tif dt == wire.Float32 && op == wire.OpSum && sumsExactly(world, it, buf, first) {", "\tif dt == wire.Float32 && sumsExactly(world, it, buf, first) {", None),
    ("PV15", "internal/bench/payload.go", "\t\tif c.Verify {\n\t\t\terr = verifyPattern(c.DType, c.Op, p.world, it, buf, 0)", "\t\tif false {\n\t\t\terr = verifyPattern(c.DType, c.Op, p.world, it, buf, 0)", None),
    ("PV16", "internal/bench/pattern.go", "\tk := min(count, max(1, int(density*float64(count)+0.5)))", "\tk := min(count, max(1, int(density*float64(count))))", None),
    ("PV17", "internal/bench/pattern.go", "\tnShared := int(overlap * float64(k))", "\tnShared := 0", None),
    ("PV18", "internal/bench/pattern.go", "\t\tif used[i/64]&(1<<(i%64)) != 0 {\n\t\t\treturn false", "\t\tif false {\n\t\t\treturn false", None),
    ("PV19", "internal/bench/pattern.go", "\tfor i := 0; i*sz < len(buf); i++ {\n\t\tputValue(dt, buf[i*sz:], patternValue(op, rank, i, it))", "\tfor i := 0; (i+1)*sz < len(buf); i++ {\n\t\tputValue(dt, buf[i*sz:], patternValue(op, rank, i, it))", None),
    # the processing unit's placement and configuration (hpu/place.go, config.go): home clusters, subsets, the core a packet takes, overflow, each range's both ends
    ("HP1", "hpu/place.go", "\tif !pl.overflow || pl.subset == 1 {", "\tif !pl.overflow {", None),
    ("HP2", "hpu/place.go", "\t\tif o.held(j) < o.held(ci) {", "\t\tif o.held(j) <= o.held(ci) {", None),
    ("HP3", "hpu/place.go", "\treturn int(uint64(block/uint32(pl.clusters)) * uint64(pl.subset) % uint64(pl.cores))", "\treturn int(uint64(block) * uint64(pl.subset) % uint64(pl.cores))", None),
    ("HP4", "hpu/place.go", "\treturn (j-pl.subsetBase(block)+pl.cores)%pl.cores < pl.subset", "\treturn (j-pl.subsetBase(block)+pl.cores)%pl.cores <= pl.subset", None),
    ("HP5", "hpu/place.go", "\t\tif best < 0 || w < bestWork {", "\t\tif best < 0 || w <= bestWork {", None),
    ("HP6", "hpu/place.go", "\tfor c, k := pl.subsetBase(block), 0; k < pl.subset; c, k = pl.next(c), k+1 {", "\tfor c, k := pl.subsetBase(block), 0; k < pl.subset-1 || k == 0; c, k = pl.next(c), k+1 {", None),
    ("HP7", "hpu/place.go", "\t\tif w == 0 {\n\t\t\treturn c, true", "\t\tif w == 0 && c == pl.subsetBase(block) {\n\t\t\treturn c, true", None),
    ("HP8", "hpu/place.go", "\tif ci == home || !o.enter(ci) {", "\tif !o.enter(ci) {", None),
    ("HP9", "hpu/config.go", "\tcase c.Clusters < 1 || c.Clusters > MaxClusters:", "\tcase c.Clusters < 1 || c.Clusters >= MaxClusters:", None),
    ("HP10", "hpu/config.go", "\tcase c.CoresPerCluster < 1 || c.CoresPerCluster > MaxCoresPerCluster:", "\tcase c.CoresPerCluster < 1 || c.CoresPerCluster >= MaxCoresPerCluster:", None),
    ("HP11", "hpu/config.go", "\tcase c.QueueDepth < 1 || c.QueueDepth > MaxQueueDepth:", "\tcase c.QueueDepth < 1 || c.QueueDepth >= MaxQueueDepth:", None),
    ("HP12", "hpu/config.go", "\tcase c.SubsetS < 1 || c.SubsetS > c.CoresPerCluster:", "\tcase c.SubsetS < 1 || c.SubsetS >= c.CoresPerCluster:", None),
    ("HP13", "hpu/config.go", "\tcase c.Submitters < 0 || c.Submitters > MaxSubmitters:", "\tcase c.Submitters < 0 || c.Submitters >= MaxSubmitters:", None),
    ("HP14", "hpu/config.go", "c.BufferBytes > MaxBufferBytes || c.BufferBytes%8 != 0:", "c.BufferBytes > MaxBufferBytes || c.BufferBytes%4 != 0:", None),
    ("HP15", "hpu/config.go", "\tcase c.L1Bytes < MinL1Bytes || c.L1Bytes > MaxL1Bytes:", "\tcase c.L1Bytes <= MinL1Bytes || c.L1Bytes > MaxL1Bytes:", None),
    ("HP16", "hpu/config.go", "\tcase c.L1Bytes < MinL1Bytes || c.L1Bytes > MaxL1Bytes:", "\tcase c.L1Bytes < MinL1Bytes || c.L1Bytes >= MaxL1Bytes:", None),
    ("HP17", "hpu/config.go", "\tcase c.L1Bytes < c.BufferBytes:", "\tcase c.L1Bytes <= c.BufferBytes:", None),
    ("HP18", "hpu/config.go", "\tif c.SubsetS == 0 {\n\t\tc.SubsetS = c.CoresPerCluster", "\tif c.SubsetS == 0 {\n\t\tc.SubsetS = 1", None),
    ("HP19", "hpu/config.go", "\tcase c.BufferBytes < MinBufferBytes || c.BufferBytes > MaxBufferBytes", "\tcase c.BufferBytes <= MinBufferBytes || c.BufferBytes > MaxBufferBytes", None),
    ("HP20", "hpu/config.go", "\tcase c.BufferBytes < MinBufferBytes || c.BufferBytes > MaxBufferBytes", "\tcase c.BufferBytes < MinBufferBytes || c.BufferBytes >= MaxBufferBytes", None),
    ("HP21", "hpu/config.go", "\tcase c.Submitters < 0 || c.Submitters > MaxSubmitters:", "\tcase c.Submitters > MaxSubmitters:", None),
    # the analytic model's parameters (models/params.go): each range's both ends
    ("MP1", "models/params.go", "\tcase p.Clusters < 1 || p.Clusters > MaxClusters:", "\tcase p.Clusters < 1 || p.Clusters >= MaxClusters:", None),
    ("MP2", "models/params.go", "\tcase p.CoresPerCluster < 1 || p.CoresPerCluster > MaxCoresPerCluster:", "\tcase p.CoresPerCluster < 1 || p.CoresPerCluster >= MaxCoresPerCluster:", None),
    ("MP3", "models/params.go", "\tcase p.SubsetS < 1 || p.SubsetS > p.CoresPerCluster:", "\tcase p.SubsetS < 1 || p.SubsetS >= p.CoresPerCluster:", None),
    ("MP4", "models/params.go", "\tcase p.SubsetS < 1 || p.SubsetS > p.CoresPerCluster:", "\tcase p.SubsetS > p.CoresPerCluster:", None),
    ("MP5", "models/params.go", "\tcase !(p.ClockHz > 0 && p.ClockHz <= MaxClockHz):", "\tcase !(p.ClockHz > 0 && p.ClockHz < MaxClockHz):", None),
    ("MP6", "models/params.go", "\tcase p.PacketBytes < MinPacketBytes || p.PacketBytes > MaxPacketBytes", "\tcase p.PacketBytes <= MinPacketBytes || p.PacketBytes > MaxPacketBytes", None),
    ("MP7", "models/params.go", "\tcase p.PacketBytes < MinPacketBytes || p.PacketBytes > MaxPacketBytes", "\tcase p.PacketBytes < MinPacketBytes || p.PacketBytes >= MaxPacketBytes", None),
    ("MP8", "models/params.go", "\tcase !(p.CyclesPerPacket >= 0) || math.IsInf(p.CyclesPerPacket, 0):", "\tcase !(p.CyclesPerPacket > 0) || math.IsInf(p.CyclesPerPacket, 0):", None),
    ("MP9", "models/params.go", "\tcase !(p.DMACycles >= 0) || math.IsInf(p.DMACycles, 0):", "\tcase !(p.DMACycles > 0) || math.IsInf(p.DMACycles, 0):", None),
    ("MP10", "models/params.go", "\tcase p.Hosts < 2 || p.Hosts > MaxHosts:", "\tcase p.Hosts < 2 || p.Hosts >= MaxHosts:", None),
    ("MP11", "models/params.go", "\tcase p.Bytes < 1 || p.Bytes > MaxBytes:", "\tcase p.Bytes < 1 || p.Bytes >= MaxBytes:", None),
    ("MP12", "models/params.go", "\tcase p.Bytes < 1 || p.Bytes > MaxBytes:", "\tcase p.Bytes < 1:", None),
    ("MP13", "models/params.go", "\tcase !(p.InterArrival >= 0) || math.IsInf(p.InterArrival, 0):", "\tcase !(p.InterArrival >= 0):", None),
    ("MP14", "models/params.go", "\tcase p.InterArrival == 0 && !(p.HostGbps > 0 && p.HostGbps < math.Inf(1)):", "\tcase p.InterArrival == 0 && !(p.HostGbps > 0):", None),
    ("MP15", "models/params.go", "\tcase p.Window < 0:", "\tcase p.Window < 1:", None),
    ("MP16", "models/params.go", "\tcase p.Buffers < 2 || p.Buffers > proto.MaxBuffers:", "\tcase p.Buffers < 2 || p.Buffers >= proto.MaxBuffers:", None),
    ("MP17", "models/params.go", "\tcase p.QueueDepth < p.CoresPerCluster || p.QueueDepth > MaxQueueDepth:", "\tcase p.QueueDepth <= p.CoresPerCluster || p.QueueDepth > MaxQueueDepth:", None),
    ("MP18", "models/params.go", "\tcase p.QueueDepth < p.CoresPerCluster || p.QueueDepth > MaxQueueDepth:", "\tcase p.QueueDepth < p.CoresPerCluster:", None),
    ("MP19", "models/params.go", "\tcase p.L1Bytes < p.PacketBytes || p.L1Bytes > hpu.MaxL1Bytes:", "\tcase p.L1Bytes <= p.PacketBytes || p.L1Bytes > hpu.MaxL1Bytes:", None),
    ("MP20", "models/params.go", "\tcase p.L1Bytes < p.PacketBytes || p.L1Bytes > hpu.MaxL1Bytes:", "\tcase p.L1Bytes < p.PacketBytes:", None),
    ("MP21", "models/params.go", "\tcase p.SparseBlockElems < 0:", "\tcase p.SparseBlockElems < 1:", None),
    ("MP22", "models/params.go", "\tcase p.SparseHashSlots < 0:", "\tcase p.SparseHashSlots < 1:", None),
    ("MP23", "models/params.go", "\tcase !(q.CyclesPerPacket > 0):", "\tcase !(q.CyclesPerPacket >= 0):", "an L given is at least 0 by the check before, and one derived (0) is the cost model's copies and folds of at least 64 bytes: never 0"),
    ("MP24", "models/params.go", "\tcase p.Hosts < 2 || p.Hosts > MaxHosts:", "\tcase p.Hosts < 1 || p.Hosts > MaxHosts:", None),
    # the reference's float16 (elem/reference_float16.go): its decoding, its rounding's edges, its NaNs
    ("RF1", "elem/reference_float16.go", "\t\tv = math.Ldexp(frac, -24) // subnormal", "\t\tv = math.Ldexp(frac, -25) // subnormal", None),
    ("RF2", "elem/reference_float16.go", "\t\tv = math.Ldexp(1024+frac, exp-15-10)", "\t\tv = math.Ldexp(1023+frac, exp-15-10)", None),
    ("RF3", "elem/reference_float16.go", "\tif neg {\n\t\tv = math.Copysign(v, -1)", "\tif neg && exp != 0 {\n\t\tv = math.Copysign(v, -1)", None),
    ("RF4", "elem/reference_float16.go", "0x7ff<<52 | uint64(h&0x3ff)<<42)", "0x7ff<<52 | uint64(h&0x3ff)<<41)", None),
    ("RF5", "elem/reference_float16.go", "\tcase ax >= 65520:", "\tcase ax > 65520:", None),
    ("RF6", "elem/reference_float16.go", "\te := max(exp-1, -14)", "\te := max(exp-1, -15)", None),
    ("RF7", "elem/reference_float16.go", "\tulp := math.Ldexp(1, e-10) // 11 significant bits", "\tulp := math.Ldexp(1, e-11) // 11 significant bits", None),
    ("RF8", "elem/reference_float16.go", "\treturn math.Copysign(math.RoundToEven(ax/ulp)*ulp, x)", "\treturn math.Copysign(math.Round(ax/ulp)*ulp, x)", None),
    ("RF9", "elem/reference_float16.go", "\tcase ax < 0x1p-14:", "\tcase ax <= 0x1p-14:", "at 2^-14 exactly both branches give 0x0400: 2^-14 × 2^24 is 1024, the least normal's exponent field"),
    ("RF10", "elem/reference_float16.go", "\t\treturn sign | 0x7e00 | uint16(math.Float64bits(x)>>42)&0x3ff", "\t\treturn sign | 0x7c00 | uint16(math.Float64bits(x)>>42)&0x3ff", None),
    ("RF11", "elem/reference_float16.go", "\tcase ax != ax || ax == 0 || math.IsInf(ax, 0):\n\t\treturn x", "\tcase ax != ax || math.IsInf(ax, 0):\n\t\treturn x", "a zero rounds to a zero of its own sign: RoundToEven(0) × ulp is 0 and Copysign keeps the sign"),
    ("RF12", "elem/reference_float16.go", "\tif math.Signbit(x) {\n\t\tsign = 0x8000", "\tif x < 0 {\n\t\tsign = 0x8000", None),
    ("RF13", "elem/reference_float16.go", "\t\treturn sign | uint16(ax*0x1p24) // subnormal", "\t\treturn sign | uint16(ax*0x1p23) // subnormal", None),
    ("RF14", "elem/reference_float16.go", "\tcase 0x1f:\n\t\tif frac != 0 {", "\tcase 0x1f:\n\t\tif frac > 1 {", None),
    # the virtual unit's locks and agenda (hpu/vsim_lock.go, vsim_queue.go): a handler's yield, its spin and back-off, the events' order
    ("VL1", "hpu/vsim_lock.go", "\tif u.events.len() > 0 && u.events.min().at < now {", "\tif false {", None),
    ("VL2", "hpu/vsim_lock.go", "\twait := t.now - c.lockFrom\n\tt.cycles += wait", "\twait := t.now - c.lockFrom\n\tt.cycles += 0", None),
    ("VL3", "hpu/vsim_lock.go", "\tt.waitCyc += wait\n", "", None),
    ("VL4", "hpu/vsim_lock.go", "\tt.contends++\n}", "}", None),
    ("VL5", "hpu/vsim_lock.go", "\t\t\tpolls := max(1, (now-w.lockFrom+b-1)/b)", "\t\t\tpolls := max(1, (now-w.lockFrom)/b)", None),
    ("VL6", "hpu/vsim_lock.go", "\t\t\tpolls := max(1, (now-w.lockFrom+b-1)/b)", "\t\t\tpolls := (now - w.lockFrom + b - 1) / b", None),
    ("VL7", "hpu/vsim_lock.go", "\t\tif w.lockWant != l {\n\t\t\tkept = append(kept, w)\n\t\t\tcontinue", "\t\tif w.lockWant == nil {\n\t\t\tkept = append(kept, w)\n\t\t\tcontinue", "a core woken for another lock finds its own still held and parks again; its polls count from when it began to spin, so it takes its lock at the same cycle"),
    ("VL8", "hpu/vsim_lock.go", "func (c *vcore) tryLock(l *Lock) bool {\n\tif l.freeAt == lockHeld {\n\t\treturn false", "func (c *vcore) tryLock(l *Lock) bool {\n\tif false {\n\t\treturn false", None),
    ("VL9", "hpu/vsim_lock.go", "\tif l.freeAt != lockHeld {\n\t\tl.freeAt = lockHeld\n\t\treturn\n\t}", "\tif l.freeAt != lockHeld || true {\n\t\tl.freeAt = lockHeld\n\t\treturn\n\t}", None),
    ("VL10", "hpu/vsim_queue.go", "\treturn e.at < o.at || (e.at == o.at && e.seq < o.seq)", "\treturn e.at < o.at || (e.at == o.at && e.seq > o.seq)", None),
    ("VL11", "hpu/vsim_queue.go", "\treturn e.at < o.at || (e.at == o.at && e.seq < o.seq)", "\treturn e.at < o.at", None),
    ("VL12", "hpu/vsim_queue.go", "\t\tif r < n && h[r].before(&h[m]) {", "\t\tif r < n-1 && h[r].before(&h[m]) {", None),
    ("VL13", "hpu/vsim_queue.go", "\t\tif l < n && h[l].before(&h[m]) {", "\t\tif l < n-1 && h[l].before(&h[m]) {", None),
    ("VL14", "hpu/vsim_queue.go", "\t\t\tnb[i] = f.buf[(f.head+i)%len(f.buf)]", "\t\t\tnb[i] = f.buf[i]", None),
    ("VL15", "hpu/vsim_queue.go", "\t\tif !h[i].before(&h[p]) {\n\t\t\tbreak", "\t\tif h[p].before(&h[i]) {\n\t\t\tbreak", "seq orders every two events: not before is after"),
    # top-k sparsification (hostlib/topk.go): how many it keeps, which, in what order, and its checks
    ("TK1", "hostlib/topk.go", "\tif !(fraction > 0 && fraction <= 1) {", "\tif !(fraction > 0 && fraction < 1) {", None),
    ("TK2", "hostlib/topk.go", "\t\t\tif math.IsNaN(ma) {\n\t\t\t\treturn -1\n\t\t\t}\n\t\t\treturn 1", "\t\t\tif math.IsNaN(ma) {\n\t\t\t\treturn 1\n\t\t\t}\n\t\t\treturn -1", None),
    ("TK3", "hostlib/topk.go", "\tk := min(len(acc), int(math.Ceil(fraction*float64(len(acc)))))", "\tk := min(len(acc), int(fraction*float64(len(acc))))", None),
    ("TK4", "hostlib/topk.go", "\t\treturn cmp.Compare(a, b)\n\t})", "\t\treturn cmp.Compare(b, a)\n\t})", None),
    ("TK5", "hostlib/topk.go", "\tidx := order[:k:k]\n\tslices.Sort(idx)", "\tidx := order[:k:k]", None),
    ("TK6", "hostlib/topk.go", "\tif residual != nil && len(residual) != len(grad) {", "\tif residual != nil && len(residual) < len(grad) {", None),
    ("TK7", "hostlib/topk.go", "\tmag := func(i uint32) float64 { return math.Abs(float64(acc[i])) }", "\tmag := func(i uint32) float64 { return float64(acc[i]) }", None),
    ("TK8", "hostlib/topk.go", "\t\t\treturn cmp.Compare(mb, ma)", "\t\t\treturn cmp.Compare(ma, mb)", None),
    ("TK9", "hostlib/topk.go", "\t\tcase math.IsNaN(ma) != math.IsNaN(mb):", "\t\tcase false:", None),
    # the host's account of the switch's waiting reports (hostlib/waiting.go): which ranks each names, the summary a timeout gives
    ("WT1", "hostlib/waiting.go", "\tif !ok || !ok2 || bytes.Contains(list, []byte(\"more\")) {", "\tif !ok || !ok2 {", None),
    ("WT2", "hostlib/waiting.go", "\tlist = bytes.TrimPrefix(bytes.TrimPrefix(list, []byte(\"ranks \")), []byte(\"rank \"))", "\tlist = bytes.TrimPrefix(list, []byte(\"rank \"))", None),
    ("WT3", "hostlib/waiting.go", "\tif len(b) == 0 || len(b) > 9 {", "\tif len(b) > 9 {", None),
    ("WT4", "hostlib/waiting.go", "\t\tif c < '0' || c > '9' {", "\t\tif c < '0' || c >= '9' {", None),
    ("WT5", "hostlib/waiting.go", "\tw.reports, w.last = 0, w.last[:0]\n\tclear(w.named)", "\tw.reports, w.last = 0, w.last[:0]", None),
    ("WT6", "hostlib/waiting.go", "\t\tcase n == best:\n\t\t\ttop = append(top, r)", "\t\tcase n == best && false:\n\t\t\ttop = append(top, r)", None),
    ("WT7", "hostlib/waiting.go", "\tif best == w.reports {", "\tif best >= w.reports-1 {", None),
    ("WT8", "hostlib/waiting.go", "\tslices.Sort(top)\n", "\tslices.SortFunc(top, func(a, b int) int { return b - a })\n", None),
    ("WT9", "hostlib/waiting.go", "\tw.reports++\n", "", None),
    ("WT10", "hostlib/waiting.go", "\tw.last = append(w.last[:0], text...)", "\tw.last = append(w.last, text...)", None),
    # a block table's layout (handlers/layout.go): one record a block, each reader's region, the steering's checks
    ("LY1", "handlers/layout.go", "\t\tat += whole*r + min(r, rest-min(rest, k*r))", "\t\tat += whole*r + min(r, rest)", None),
    ("LY2", "handlers/layout.go", "\t\tkeyBits: uint8(min(bits.Len(uint(max(readers, 1)-1)), maxRegionBits))}", "\t\tkeyBits: uint8(min(bits.Len(uint(max(readers, 1))), maxRegionBits))}", None),
    ("LY3", "handlers/layout.go", "\treturn l.start[run&l.keys] + (run>>kb<<s | b&l.low)", "\treturn l.start[run&l.keys] + (run>>kb | b&l.low)", None),
    ("LY4", "handlers/layout.go", "\tcase run < 0 || run > MaxSteerRun || run&(run-1) != 0:", "\tcase run < 0 || run > MaxSteerRun:", None),
    ("LY5", "handlers/layout.go", "\tcase run < 0 || run > MaxSteerRun || run&(run-1) != 0:", "\tcase run < 0 || run >= MaxSteerRun || run&(run-1) != 0:", None),
    ("LY6", "handlers/layout.go", "\tcase readers < 0:", "\tcase readers < -1:", None),
    ("LY7", "handlers/layout.go", "\tperiod := r * regions // every key's run once", "\tperiod := r * (regions + 1) // every key's run once", None),
    # the model's design choice and a job's memory (models/chooser.go, design.go): the budget's edge, the leanest when none fits, a block's peak need, the designs' names
    ("DC1", "models/chooser.go", "\t\tif i == 0 || r.MemoryBytes < leanRow.MemoryBytes {", "\t\tif i == 0 || r.MemoryBytes > leanRow.MemoryBytes {", None),
    ("DC2", "models/chooser.go", "\t\tif budgetBytes > 0 && r.MemoryBytes > float64(budgetBytes) {", "\t\tif budgetBytes > 0 && r.MemoryBytes >= float64(budgetBytes) {", None),
    ("DC3", "models/chooser.go", "\t\t\tr.Bandwidth >= bestRow.Bandwidth*(1-1e-3) && r.MemoryBytes < bestRow.MemoryBytes:", "\t\t\tr.Bandwidth >= bestRow.Bandwidth*(1-1e-3) && r.MemoryBytes > bestRow.MemoryBytes:", None),
    ("DC4", "models/chooser.go", "\tif !found {\n\t\treturn leanest", "\tif !found && false {\n\t\treturn leanest", None),
    ("DC5", "models/chooser.go", "\tbuffers = max(int(math.Ceil(r.R-1e-9)), peak)", "\tbuffers = max(int(math.Ceil(r.R-1e-9)), min(peak, 1))", None),
    ("DC6", "models/chooser.go", "\tcase wire.AlgoTree:\n\t\tpeak = p.Hosts", "\tcase wire.AlgoTree:\n\t\tpeak = 1", None),
    ("DC7", "models/chooser.go", "\tcase wire.AlgoMulti:\n\t\tpeak = d.Buffers", "\tcase wire.AlgoMulti:\n\t\tpeak = 1", "R = B·λ·𝓛 for B buffers a block, and a block holds its buffers for its own latency: λ·𝓛 >= 1, so R is never below B (4.009 for multi4 at 65,536 hosts, one block)"),
    ("DC8", "models/design.go", "\t\tif err == nil && b >= 2 && b <= proto.MaxBuffers {", "\t\tif err == nil && b >= 1 && b <= proto.MaxBuffers {", None),
    ("DC9", "models/design.go", "\t\tif err == nil && b >= 2 && b <= proto.MaxBuffers {", "\t\tif err == nil && b >= 2 && b < proto.MaxBuffers {", None),
    ("DC10", "models/design.go", "\tif d.Algo == wire.AlgoMulti && d.Buffers == 0 {", "\tif d.Algo == wire.AlgoMulti && d.Buffers == 1 {", None),
    ("DC11", "models/design.go", "\tif d.Algo != wire.AlgoMulti {", "\tif d.Algo == wire.AlgoSingle {", None),
    # what a failed call tells the switch (hostlib/abort.go): when it aborts, as whom, why, how often
    ("AB1", "hostlib/abort.go", "\tcase errors.As(err, &se), errors.As(err, &ae):\n\t\treturn 0, \"\", false", "\tcase errors.As(err, &se), errors.As(err, &ae) && false:\n\t\treturn 0, \"\", false", None),
    ("AB2", "hostlib/abort.go", "\tcase errors.As(err, &se), errors.As(err, &ae):\n\t\treturn 0, \"\", false", "\tcase errors.As(err, &se) && false, errors.As(err, &ae):\n\t\treturn 0, \"\", false", None),
    ("AB3", "hostlib/abort.go", "\t\tif te.Waiting != \"\" {\n\t\t\tb.WriteString(\": \" + te.Waiting)", "\t\tif false {\n\t\t\tb.WriteString(\": \" + te.Waiting)", None),
    ("AB4", "hostlib/abort.go", "\t\treturn wire.CodeTimeout, b.String(), true", "\t\treturn wire.CodeInternal, b.String(), true", None),
    ("AB5", "hostlib/abort.go", "\t\treturn wire.CodeAborted, fmt.Sprintf(\"session closed during allreduce generation %d\", gen), true", "\t\treturn wire.CodeInternal, fmt.Sprintf(\"session closed during allreduce generation %d\", gen), true", None),
    ("AB6", "hostlib/abort.go", "\t\treturn wire.CodeAborted, fmt.Sprintf(\"allreduce generation %d cancelled\", gen), true", "\t\treturn wire.CodeTimeout, fmt.Sprintf(\"allreduce generation %d cancelled\", gen), true", None),
    ("AB7", "hostlib/abort.go", "\t\tBlock: uint32(s.opts.Rank), Child: uint16(s.opts.Rank)}", "\t\tChild: uint16(s.opts.Rank)}", None),
    ("AB8", "hostlib/abort.go", "const abortCopies = 3", "const abortCopies = 1", None),
    ("AB9", "hostlib/abort.go", "\tif errors.Is(err, context.Canceled) {\n\t\ts.sendAbort(0, wire.CodeAborted, \"join cancelled\")", "\tif errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {\n\t\ts.sendAbort(0, wire.CodeAborted, \"join cancelled\")", None),
    ("AB10", "hostlib/abort.go", "\ts.sendAbort(gen, code, reason)\n\ts.stats.aborts.Add(1)", "\ts.sendAbort(gen, code, reason)", None),
    ("AB11", "hostlib/abort.go", "\th := wire.Header{Version: wire.Version, Job: s.opts.Job, Token: s.opts.Token, Generation: gen,", "\th := wire.Header{Version: wire.Version, Job: s.opts.Job, Token: s.opts.Token, Generation: gen + 1,", None),
    # the processing unit's statistics (hpu/stats.go): each counter summed, τ and the queue's mean over what they count
    ("ST1", "hpu/stats.go", "\t\tt.Rejected += c.Rejected\n", "", None),
    ("ST2", "hpu/stats.go", "\t\tt.LockWaitNs += c.LockWaitNs\n", "", None),
    ("ST3", "hpu/stats.go", "\t\tt.LockWaitCycles += c.LockWaitCycles\n", "", None),
    ("ST4", "hpu/stats.go", "\t\tt.Contended += c.Contended\n", "", None),
    ("ST5", "hpu/stats.go", "\tif n := t.Packets + t.Rejected; n > 0 {\n\t\treturn float64(t.BusyNs) / float64(n)", "\tif n := t.Packets; n > 0 {\n\t\treturn float64(t.BusyNs) / float64(n)", None),
    ("ST6", "hpu/stats.go", "\t\tsum += c.occupancySum\n\t\tn += c.arrivals", "\t\tsum += c.occupancySum\n\t\tn++", None),
    ("ST7", "hpu/stats.go", "\t\t\tcs.QueueMean = float64(cs.occupancySum) / float64(cs.arrivals)", "\t\t\tcs.QueueMean = float64(cs.occupancySum) / float64(cs.arrivals+1)", None),
    ("ST8", "hpu/stats.go", "QueueMax: cl.occMax.Load(), QueueNow: int(cl.occ.Load()),", "QueueMax: cl.occMax.Load(), QueueNow: int(cl.occMax.Load()),", None),
    ("ST9", "hpu/stats.go", "\t\t\tOverflow: cl.overflowIn.Load(), BuffersInUse: a.InUse(), BuffersPeak: a.Peak(), BuffersTotal: a.Cap(),", "\t\t\tOverflow: 0, BuffersInUse: a.InUse(), BuffersPeak: a.Peak(), BuffersTotal: a.Cap(),", None),
    ("ST10", "hpu/stats.go", "\tif n := t.Packets + t.Rejected; n > 0 {\n\t\treturn float64(t.Cycles) / float64(n)", "\tif n := t.Packets; n > 0 {\n\t\treturn float64(t.Cycles) / float64(n)", None),
    # the handlers' counters (handlers/stats.go): a sharded count's sum, the line errors quote
    ("HS1", "handlers/stats.go", "\tfor i := range c.shards {\n\t\tn += c.shards[i].n.Load()", "\tfor i := range c.shards[:1] {\n\t\tn += c.shards[i].n.Load()", None),
    ("HS2", "handlers/stats.go", "func (c *Count) Add(shard uint8, n int64) { c.shards[shard%poolShards].n.Add(n) }", "func (c *Count) Add(shard uint8, n int64) { c.shards[shard%poolShards].n.Store(n) }", None),
    ("HS3", "handlers/stats.go", "\t\ts.Packets.Load(), s.Completed.Load(), s.Duplicate.Load(), s.Stale.Load(), s.Invalid.Load(), s.NoBuffer.Load())", "\t\ts.Packets.Load(), s.Completed.Load(), s.Duplicate.Load(), s.Stale.Load(), s.NoBuffer.Load(), s.Invalid.Load())", None),
]

# What else guards a mutant besides its own package's tests: the host
# library's sparse calls, and the Abort a failed call sends the other
# ranks, are tested through the daemon's package, with a real switch; the
# C library is called by the Python package too ("python": `make
# python-test`); a child switch's tree code runs end to end in the CLI's
# tree tests, daemons as processes ("PKG:REGEX": those tests alone); the
# virtual unit runs under the simulator, whose tests run too.
ALSO = {name: ["./switch"] for name in ("A7", "A8", "A13")}
ALSO.update({m[0]: ["python"] for m in MUTANTS if m[1].startswith("capi/")})  # the Python package calls libflare too
ALSO.update({m[0]: ["./cmd/flare:Tree"] for m in MUTANTS if m[1] == "switch/tree.go"})  # trees of daemons, end to end
ALSO.update({m[0]: ["./sim"] for m in MUTANTS if m[1] in ("hpu/vsim.go", "hpu/vsim_lock.go", "hpu/vsim_queue.go", "hpu/place.go")})  # the simulator, which the virtual unit runs
ALSO.update({m[0]: ["./sim/sweep"] for m in MUTANTS if m[1].startswith("sim/") and not m[1].startswith("sim/sweep/")})  # the model-vs-simulation tests, which run it
ALSO.update({m[0]: ["./sim", "./switch:Metric"] for m in MUTANTS if m[1] == "hpu/stats.go"})  # what reads the unit's statistics: the simulator's rows, the daemon's metrics

# Which of its own package's tests a mutant runs, where not all: the CLI's
# end-to-end tests start daemons and ranks as processes for minutes, and
# a flag's mapping is held by its flag tests.
RUN = {m[0]: "Flag|Fields|AllReduce(Args|Bytes)|BusyPoll|Help|ParseSize" for m in MUTANTS if m[0].startswith("CL")}
ALSO.update({m[0]: ["./handlers:Harness"] for m in MUTANTS if m[1].startswith("internal/harness/")})  # its users' tests


def change(old, new):
    """What the mutant changes: the lines it removes and the lines it adds."""
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    gone = [l[2:].strip() for l in diff if l.startswith("- ")]
    added = [l[2:].strip() for l in diff if l.startswith("+ ")]
    return " / ".join(map(repr, gone)) + " -> " + (" / ".join(map(repr, added)) or "(removed)")


def run(root, name, path, old, new):
    full = os.path.join(root, path)
    with open(full) as f:
        src = f.read()
    if src.count(old) != 1:
        return f"STALE: its text occurs {src.count(old)} times in {path}, not once"
    with open(full, "w") as f:
        f.write(src.replace(old, new))
    also = ALSO.get(name, [])
    cmds = []
    gotest = ["go", "test", "-count=1", "-failfast", "-timeout", "600s", "-p", "1"]
    if not path.endswith(".py"):
        own = ["-run", RUN[name]] if name in RUN else []
        cmds.append(gotest + own + ["./" + os.path.dirname(path)] + [p for p in also if p != "python" and ":" not in p])
        for pkg, pattern in (p.split(":", 1) for p in also if ":" in p):  # some of a package's tests
            cmds.append(gotest + ["-run", pattern, pkg])
    if path.endswith(".py") or "python" in also:  # the Python package: its tests, against the library built from this tree
        cmds.append(["make", "-s", "python-test"])
    try:
        for cmd in cmds:  # until one fails
            r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=700)
            if r.returncode != 0:
                break
    except subprocess.TimeoutExpired:
        return "killed (the tests did not end in 700 s)"
    finally:
        with open(full, "w") as f:
            f.write(src)
    out = r.stdout + r.stderr
    if "python-test: SKIPPED" in out:
        return "COULD NOT RUN: " + out.strip().splitlines()[-1]
    if r.returncode == 0:
        return "SURVIVED"
    failed = re.findall(r"^_{3,} (test\w+)(?:\[.*\])? _{3,}$", out, re.M)  # pytest's header of each failure
    if failed:
        return "killed by " + ", ".join(sorted(set(failed)))
    if "[build failed]" in out or "[setup failed]" in out:
        return "BUILD FAILED: the mutant does not compile; fix its replacement"
    fails = sorted({m.split("/")[0] for m in re.findall(r"--- FAIL: (\S+)", out)})
    if fails:
        return "killed by " + ", ".join(fails)  # -failfast: the first test that failed
    died = re.search(r"^(fatal error: .*|panic: .*)$", out, re.M)
    return "killed (the test process died: " + died.group(1) + ")" if died else "killed (a failure outside a test)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="mutants to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = ap.parse_args()
    chosen = [m for m in MUTANTS if not args.names or m[0] in args.names]
    if args.list:
        for name, path, old, new, eq in chosen:
            print(f"{name}\t{path}\t{change(old, new)}" + (f"\tequivalent: {eq}" if eq else ""))
        return 0
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
    survivors = 0
    with tempfile.TemporaryDirectory(prefix="flare-mutants-") as tmp:
        root = os.path.join(tmp, "tree")
        subprocess.run(["git", "-C", top, "worktree", "add", "-q", "--detach", root, "HEAD"], check=True)
        try:
            for name, path, old, new, eq in chosen:
                t0 = time.monotonic()
                verdict = run(root, name, path, old, new)
                if verdict == "SURVIVED" and eq:
                    verdict = f"survived (equivalent: {eq})"
                elif not verdict.startswith("killed"):
                    survivors += 1
                print(f"{name}  {path}: {verdict} ({time.monotonic() - t0:.0f} s)", flush=True)
        finally:
            subprocess.run(["git", "-C", top, "worktree", "remove", "--force", root], check=False)
    print(f"{len(chosen)} mutants, {survivors} survived or could not run (equivalent ones not counted)")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
