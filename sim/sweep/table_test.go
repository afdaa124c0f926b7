package sweep

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/schematest"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim"
)

// distinctResult is a run whose every number differs from the others',
// so a column that prints the wrong field shows.
func distinctResult() sim.Result {
	var r sim.Result
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(100 + 10*i))
		case reflect.Float64:
			f.SetFloat(float64(100+10*i) + 0.25)
		}
	}
	r.Algo, r.DType = "multi4", "float32"
	return r
}

// cells splits a right-aligned table's line into its cells (two spaces
// or more apart; a header's cell may hold one).
func cells(line string) []string {
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
}

// csvByName reads CSV with a header into one map per row.
func csvByName(t *testing.T, s string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("csv: %v, %d records:\n%s", err, len(recs), s)
	}
	var rows []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// WriteRows: the CSV's columns are the JSON fields of the same name, every
// one of them holding that field's value; the table prints each cell
// under its header, after a line with the switch's parameters.
func TestWriteRows(t *testing.T) {
	r := distinctResult()
	p := models.Params{Clusters: 4, CoresPerCluster: 8, SubsetS: 3, QueueDepth: 5, L1Bytes: 1 << 20, Hosts: 6, HostGbps: 100}
	var b bytes.Buffer
	if err := WriteRows(&b, p, []sim.Result{r}, "csv"); err != nil {
		t.Fatal(err)
	}
	if columns, _ := schematest.CSVColumns(t, b.String(), r); columns < 20 {
		t.Errorf("%d CSV columns, want the run's fields", columns)
	}

	b.Reset()
	if err := WriteRows(&b, p, []sim.Result{r}, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "K=32 cores (4 clusters x 8), S=3, Q=5 per cluster, 1MiB L1 per cluster; P=6 hosts at 100 Gbit/s") {
		t.Fatalf("table:\n%s", b.String())
	}
	head, cell := cells(lines[1]), cells(lines[2])
	want := map[string]string{
		"design": "multi4", "rounds": strconv.Itoa(r.Rounds), "window": strconv.Itoa(r.Window),
		"tau": fmt.Sprintf("%.1f", r.TauCycles), "lock wait": fmt.Sprintf("%.1f", r.LockWaitCycles),
		"Gbit/s": fmt.Sprintf("%.1f", r.BandwidthGbps), "latency": fmt.Sprintf("%.0f", r.LatencyCycles),
		"buffers": fmt.Sprintf("%.1f", r.MemoryBuffers), "memory": models.FormatBytes(r.MemoryBytes),
		"occupancy": fmt.Sprintf("%.2f", r.QueueOccupancy), "cycles": strconv.FormatInt(r.Cycles, 10),
	}
	if len(head) != len(cell) {
		t.Fatalf("%d headers, %d cells:\n%s", len(head), len(cell), b.String())
	}
	for i, h := range head {
		if w, ok := want[h]; ok && cell[i] != w {
			t.Errorf("table column %q = %q, want %q", h, cell[i], w)
		}
	}
	if cell[9] != strconv.Itoa(r.MemoryBuffersMax) || cell[12] != strconv.FormatInt(r.QueueOccupancyMax, 10) {
		t.Errorf("the two max columns: %q and %q, want %d and %d", cell[9], cell[12], r.MemoryBuffersMax, r.QueueOccupancyMax)
	}
}

// WriteComparison: each row's model, simulation and relative error side by
// side for bandwidth, memory, τ and latency; the CSV's columns by name;
// and the rankings by size, model and simulation apart, with whether they
// agree.
func TestWriteComparison(t *testing.T) {
	row := func(algo string, rankModel, rankSim int) CompareRow {
		r := CompareRow{Algo: algo, Bytes: 64 << 10, Hosts: 8, RankModel: rankModel, RankSim: rankSim,
			BandwidthErr: 0.125, MemoryErr: -0.25, TauErr: 0.375, LatencyErr: -0.5}
		r.Model.Gbps, r.Sim.BandwidthGbps = 11.5, 12.5
		r.Model.MemoryBytes, r.Sim.MemoryBytes = 2048, 3072
		r.Model.Tau, r.Sim.TauCycles = 101, 202
		r.Model.Latency, r.Sim.LatencyCycles = 3003, 4004
		return r
	}
	rows := []CompareRow{row("single", 1, 2), row("tree", 2, 1)}
	p, err := models.Preset(models.PresetPsPIN)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, p, rows, "table"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "single") {
			got = cells(l)
		}
	}
	want := []string{"single", "64KiB", "11.5", "12.5", "+12.5%", "2KiB", "3KiB", "-25.0%", "101", "202", "+37.5%", "3003", "4004", "-50.0%"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("table row %q, want %q:\n%s", got, want, out)
	}
	rank := regexp.MustCompile(`(?m)^64KiB\s+single > tree\s+tree > single\s+no$`)
	if !rank.MatchString(out) {
		t.Errorf("no ranking line '64KiB single > tree tree > single no':\n%s", out)
	}
	rows[0].RankMatch, rows[1].RankMatch = true, true
	b.Reset()
	if err := WriteComparison(&b, p, rows, "table"); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)\s+yes$`).MatchString(b.String()) {
		t.Errorf("rankings that agree are not marked yes:\n%s", b.String())
	}

	b.Reset()
	if err := WriteComparison(&b, p, rows, "csv"); err != nil {
		t.Fatal(err)
	}
	c := csvByName(t, b.String())
	for name, w := range map[string]string{"algo": "single", "model_gbps": "11.5", "sim_gbps": "12.5", "bandwidth_rel_err": "0.125",
		"model_memory_bytes": "2048", "sim_memory_bytes": "3072", "memory_rel_err": "-0.25", "model_tau_cycles": "101", "sim_tau_cycles": "202",
		"tau_rel_err": "0.375", "model_latency_cycles": "3003", "sim_latency_cycles": "4004", "latency_rel_err": "-0.5",
		"rank_model": "1", "rank_sim": "2", "rank_match": "true", "hosts": "8", "bytes": "65536"} {
		if c[0][name] != w {
			t.Errorf("CSV column %s = %q, want %q", name, c[0][name], w)
		}
	}
}
