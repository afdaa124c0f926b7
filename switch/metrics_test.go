package swtch_test

import (
	"encoding/binary"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/internal/inproctest"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// scrapeAll is one scrape of the admin port: each sample, by its name and
// labels as exported, to its value.
func scrapeAll(t *testing.T, sw *swtch.Switch) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for line := range strings.Lines(inproctest.Scrape(t, sw.AdminAddr().String())) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// series are the samples of name in m, by their labels ("" for none).
func series(m map[string]float64, name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if k == name {
			out[""] = v
		} else if labels, ok := strings.CutPrefix(k, name+"{"); ok {
			out[strings.TrimSuffix(labels, "}")] = v
		}
	}
	return out
}

func sum(s map[string]float64) (n float64) {
	for _, v := range s {
		n += v
	}
	return n
}

// TestMetricsOfAJob holds every series of /metrics to a job whose traffic
// the test knows to the datagram: two members played by bare sockets, 4
// blocks each, sent one member after the other (no two handlers of a block
// at once), a packet the handler refuses, and a stranger's runts and
// oversized datagrams. Each counter is exact, each gauge what the switch
// holds, each time within the test's own time; and what a job counted
// stays counted after the job ends.
func TestMetricsOfAJob(t *testing.T) {
	const clusters, cores, l1 = 2, 2, 256 << 10
	const job, token, blocks = 5, 0x77, 4
	cfg := swtch.Config{Admin: "127.0.0.1:0", MaxMemory: 64 << 20}
	cfg.Socket.DisableOffload = true // without GRO's 64 KiB regions, the socket layer discards a datagram over Socket.MaxDatagram
	cfg.HPU.Clusters, cfg.HPU.CoresPerCluster, cfg.HPU.L1Bytes = clusters, cores, l1
	start := time.Now()
	sw := startSwitch(t, cfg)
	m := scrapeAll(t, sw)
	for name, want := range map[string]float64{
		"flare_rx_packets_total": 0, "flare_tx_packets_total": 0, "flare_jobs_active": 0, "flare_jobs_pending": 0,
		"flare_memory_reserved_bytes": 0, "flare_memory_budget_bytes": 64 << 20, "flare_buffers": clusters * l1 / 1024,
		"flare_buffers_in_use": 0, "flare_multicast_groups_in_use": 0, "flare_tau_cycles": 0,
	} {
		if v, ok := m[name]; !ok || v != want {
			t.Errorf("before any traffic: %s = %v (exported %v), want %v", name, v, ok, want)
		}
	}

	stranger := newRawHost(t, sw)
	for range 3 {
		stranger.send(make([]byte, 10)) // shorter than a header
	}
	big, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sw.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	for range 2 {
		if _, err := big.Write(make([]byte, 9500)); err != nil { // more than a receive buffer holds (Socket.MaxDatagram, 9000)
			t.Fatal(err)
		}
	}
	waitMetric(t, sw, func(m map[string]float64) bool {
		return m[`flare_dropped_packets_total{reason="short"}`] == 3 && m[`flare_dropped_packets_total{reason="oversize"}`] == 2
	}, "the stranger's 3 runts and 2 oversized datagrams counted as dropped")

	members := []*rawHost{newRawHost(t, sw), newRawHost(t, sw)}
	base := wire.Header{Job: job, Token: token, DType: wire.Float32, Op: wire.OpSum}
	join := func(r int) {
		h := base
		h.Child = uint16(r)
		members[r].send(wire.AppendJoin(nil, &h, &wire.JoinBody{World: 2, Elements: blocks * 256, Algo: wire.AlgoSingle}))
	}
	join(0)
	waitMetric(t, sw, func(m map[string]float64) bool { return m["flare_jobs_pending"] == 1 }, "rank 0's join pending")
	join(1)
	for _, h := range members {
		if a, _ := h.next(); a.Type != wire.TypeJoinAck {
			t.Fatalf("join answered with %v", a.Type)
		}
	}
	m = scrapeAll(t, sw)
	if m["flare_jobs_active"] != 1 || m["flare_jobs_pending"] != 0 || !(m["flare_memory_reserved_bytes"] > 0) {
		t.Errorf("admitted: %v jobs, %v pending, %v bytes reserved; want 1, 0 and the job's footprint",
			m["flare_jobs_active"], m["flare_jobs_pending"], m["flare_memory_reserved_bytes"])
	}

	ones := make([]byte, 1024)
	for i := range 256 {
		binary.LittleEndian.PutUint32(ones[4*i:], math.Float32bits(1))
	}
	data := func(r, b int, count uint32) []byte {
		h := base
		h.Type, h.Block, h.Child, h.Count = wire.TypeData, uint32(b), uint16(r), count
		return wire.AppendPacket(nil, &h, ones[:4*count])
	}
	handled := func(n float64) func(map[string]float64) bool {
		return func(m map[string]float64) bool { return m["flare_handler_seconds_count"] == n }
	}
	members[0].send(data(0, 0, 255)) // a block of 256 elements: the handler refuses it
	waitMetric(t, sw, handled(1), "the refused packet handled")
	for b := range blocks {
		members[0].send(data(0, b, 256))
	}
	waitMetric(t, sw, handled(1+blocks), "rank 0's blocks handled")
	for b := range blocks {
		members[1].send(data(1, b, 256))
	}
	for _, h := range members {
		for range blocks {
			if a, _ := h.next(); a.Type != wire.TypeResult {
				t.Fatalf("a block answered with %v", a.Type)
			}
		}
	}
	// The writer counts a datagram once its send returns, which may be
	// after the member has read it; a core leaves its cluster's queue
	// after it has counted the handler.
	waitMetric(t, sw, func(m map[string]float64) bool {
		return handled(1+2*blocks)(m) && m["flare_tx_packets_total"] == 2+2*blocks &&
			sum(series(m, "flare_queue_occupancy")) == 0
	}, "every packet handled, every answer counted as sent, the queues empty")
	elapsed := time.Since(start).Seconds()
	m = scrapeAll(t, sw)

	// Datagrams: 3 runts, 2 joins and 9 data packets in (the oversized
	// ones never reach the switch's buffers); 2 join-acks and 4 results
	// to each member out.
	for name, want := range map[string]float64{
		"flare_rx_packets_total":                               3 + 2 + 1 + 2*blocks,
		"flare_tx_packets_total":                               2 + 2*blocks,
		`flare_dropped_packets_total{reason="short"}`:          3,
		`flare_dropped_packets_total{reason="oversize"}`:       2,
		`flare_job_rx_packets_total{job="5"}`:                  1 + 2*blocks,
		`flare_job_tx_packets_total{job="5"}`:                  blocks,
		"flare_blocks_completed_total":                         blocks,
		"flare_handler_seconds_count":                          1 + 2*blocks, // the refused packet's handler ran too
		`flare_handler_seconds_bucket{le="+Inf"}`:              1 + 2*blocks,
		"flare_jobs_active":                                    1,
		"flare_jobs_pending":                                   0,
		"flare_buffers_in_use":                                 0, // every block finished
		"flare_buffers":                                        clusters * l1 / 1024,
		"flare_multicast_groups_in_use":                        0,
		"flare_memory_budget_bytes":                            64 << 20,
		`flare_queue_occupancy{cluster="0"}`:                   0,
		`flare_queue_occupancy{cluster="1"}`:                   0,
		`flare_io_errors_total{dir="rx",errno="ECONNREFUSED"}`: 0,
	} {
		if v, ok := m[name]; !ok || v != want {
			t.Errorf("%s = %v (exported %v), want %v", name, v, ok, want)
		}
	}
	byDir := func(name string) (rx, tx float64) {
		for labels, v := range series(m, name) {
			switch {
			case strings.Contains(labels, `dir="rx"`):
				rx += v
			case strings.Contains(labels, `dir="tx"`):
				tx += v
			default:
				t.Errorf("%s{%s}: no direction", name, labels)
			}
		}
		return rx, tx
	}
	if rx, tx := byDir("flare_reader_packets_total"); rx != m["flare_rx_packets_total"] || tx != m["flare_tx_packets_total"] {
		t.Errorf("the readers received %v and sent %v; the switch %v and %v", rx, tx, m["flare_rx_packets_total"], m["flare_tx_packets_total"])
	}
	byDir("flare_io_errors_total")

	// Each member's link, to the byte: its data packets in (rank 0's
	// refused one too; the joins come before the link), its join-ack and
	// results out.
	const pkt, ack = wire.HeaderLen + 1024, wire.HeaderLen + wire.JoinAckBodyLen
	for r, want := range [][4]float64{{5, 5*pkt - 4, 1 + blocks, ack + blocks*pkt}, {4, 4 * pkt, 1 + blocks, ack + blocks*pkt}} {
		peer := members[r].conn.LocalAddr().String()
		got := [4]float64{
			m[`flare_link_packets_total{direction="rx",link="child",peer="`+peer+`"}`],
			m[`flare_link_bytes_total{direction="rx",link="child",peer="`+peer+`"}`],
			m[`flare_link_packets_total{direction="tx",link="child",peer="`+peer+`"}`],
			m[`flare_link_bytes_total{direction="tx",link="child",peer="`+peer+`"}`],
		}
		if got != want {
			t.Errorf("rank %d's link: %v packets and bytes in, packets and bytes out; want %v", r, got, want)
		}
	}

	// The cores: one series each, numbered across the clusters; the
	// packets their handlers ran (not the refused one) and their time,
	// which the histogram sums too.
	busy, packets := series(m, "flare_core_busy_seconds_total"), series(m, "flare_core_packets_total")
	var labels []string
	for i := range clusters * cores {
		labels = append(labels, `core="`+strconv.Itoa(i)+`"`)
	}
	if got := slices.Sorted(maps.Keys(packets)); !slices.Equal(got, labels) || !slices.Equal(slices.Sorted(maps.Keys(busy)), labels) {
		t.Errorf("core series %v and %v, want %v", got, slices.Sorted(maps.Keys(busy)), labels)
	}
	if n := sum(packets); n != 2*blocks {
		t.Errorf("the cores ran %v packets' handlers, want %d", n, 2*blocks)
	}
	hsum := m["flare_handler_seconds_sum"]
	if b := sum(busy); !(hsum > 0) || math.Abs(b-hsum) > 1e-9 || hsum > elapsed*clusters*cores {
		t.Errorf("the handlers took %v s, the cores were busy %v s, in %v s on %d cores", hsum, b, elapsed, clusters*cores)
	}
	if w := m["flare_lock_wait_seconds_total"]; !(w >= 0 && w < hsum) {
		t.Errorf("lock waits of %v s, in handlers that took %v s", w, hsum)
	}
	prev := 0.0
	for i := range hpu.HistBuckets - 1 {
		le := strconv.FormatFloat(float64(hpu.HistBound(i))/1e9, 'g', -1, 64)
		v, ok := m[`flare_handler_seconds_bucket{le="`+le+`"}`]
		if !ok || v < prev || v > m["flare_handler_seconds_count"] {
			t.Errorf("handler time bucket le=%s: %v (exported %v), after %v of %v", le, v, ok, prev, m["flare_handler_seconds_count"])
		}
		prev = v
	}
	// τ in the cost model's cycles: each block's first packet copies into
	// its buffer, the second folds, and the result is stored and copied
	// out; the refused packet costs nothing.
	cost := hpu.PsPINCost()
	if tau, want := m["flare_tau_cycles"], float64(blocks*(3*cost.Copy(1024)+cost.Aggregate(wire.Float32, 256)))/(1+2*blocks); tau != want {
		t.Errorf("τ = %v cycles, want %v", tau, want)
	}
	// Block latency and buffer time: positive, and at most every block
	// (one buffer each) for the whole test.
	latency, held := m["flare_block_latency_seconds_total"], m["flare_buffer_seconds_total"]
	if !(latency > 0 && latency <= blocks*elapsed) || !(held > 0 && held <= blocks*elapsed) {
		t.Errorf("%v s of block latency and %v buffer-seconds for %d blocks in %v s", latency, held, blocks, elapsed)
	}
	if m["flare_memory_reserved_bytes"] <= 0 {
		t.Errorf("the job holds %v bytes of the budget", m["flare_memory_reserved_bytes"])
	}

	// The job ends: what it counted stays counted; what it held is back.
	for r, h := range members {
		hd := base
		hd.Type, hd.Child = wire.TypeLeave, uint16(r)
		h.send(wire.AppendPacket(nil, &hd, nil))
	}
	waitMetric(t, sw, func(m map[string]float64) bool {
		return m["flare_jobs_active"] == 0 && m["flare_memory_reserved_bytes"] == 0
	}, "the job ended and its memory given back")
	after := scrapeAll(t, sw)
	for name, want := range map[string]float64{
		"flare_blocks_completed_total":      blocks,
		"flare_block_latency_seconds_total": latency,
		"flare_buffer_seconds_total":        held,
		"flare_memory_reserved_bytes":       0,
		"flare_buffers_in_use":              0,
	} {
		if after[name] != want {
			t.Errorf("after the job: %s = %v, want %v", name, after[name], want)
		}
	}
	if s := series(after, "flare_job_rx_packets_total"); len(s) != 0 {
		t.Errorf("an ended job's series are still exported: %v", s)
	}
}

// waitMetric scrapes until ok holds of a scrape, for at most 5 s.
func waitMetric(t *testing.T, sw *swtch.Switch, ok func(map[string]float64) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok(scrapeAll(t, sw)) {
		if time.Now().After(deadline) {
			t.Fatalf("5 s without %s: %v", what, scrapeAll(t, sw))
		}
		time.Sleep(2 * time.Millisecond)
	}
}
