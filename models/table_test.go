package models

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/schematest"
	"github.com/flare-net/flare/wire"
)

// Sizes print in the largest binary unit that leaves a number below 1024,
// up to TiB and negative ones too, and parse back (K, KB and G read as
// binary units too, spaces around the unit taken); nothing, a word, a
// negative size, a unit taken twice, or a size past 1 TiB is refused.
func TestFormatAndParseBytesUnits(t *testing.T) {
	for _, tc := range []struct {
		n    float64
		text string
	}{{0, "0B"}, {512, "512B"}, {1023, "1023B"}, {1024, "1KiB"}, {4 << 10, "4KiB"}, {1536 << 10, "1.5MiB"}, {100 << 20, "100MiB"},
		{-2048, "-2KiB"}, {1 << 30, "1GiB"}, {2 << 40, "2TiB"}, {3 << 50, "3072TiB"}} {
		if got := FormatBytes(tc.n); got != tc.text {
			t.Errorf("FormatBytes(%v) = %q, want %q", tc.n, got, tc.text)
		}
	}
	for _, tc := range []struct {
		text string
		n    int64
	}{{"0", 0}, {"512B", 512}, {"4KiB", 4 << 10}, {"1.5MiB", 1536 << 10}, {"100MiB", 100 << 20}, {"4K", 4096}, {"4KB", 4096},
		{"4096", 4096}, {" 4 KiB ", 4096}, {"1G", 1 << 30}, {"1GB", 1 << 30}, {"2M", 2 << 20}, {"1T", 1 << 40}, {"1TiB", 1 << 40}, {"7B", 7}} {
		if got, err := ParseBytes(tc.text); err != nil || got != tc.n {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.text, got, err, tc.n)
		}
	}
	for _, s := range []string{"", "x", "-1KiB", "2TiB", "1KMiB", "2KK", "1025GiB"} {
		if n, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want it refused", s, n)
		}
	}
}

// The one-line summary says how the hosts stagger, which copies are
// counted and where the tree's M comes from, and resolves what the
// parameters derive (L, DMA, δ).
func TestDescribe(t *testing.T) {
	p := Params{Clusters: 4, CoresPerCluster: 8, SubsetS: 8, ClockHz: 1e9, PacketBytes: 1024, DType: wire.Int32, Hosts: 8,
		HostGbps: 100, Reading: ReadService, QueueDepth: 20}
	for _, tc := range []struct {
		edit func(*Params)
		want []string
	}{
		{func(*Params) {}, []string{"not staggered", "copies free; Q=20", "L=1024, DMA=64 cycles", "delta=10.24 cycles"}},
		{func(p *Params) { p.Staggered = true }, []string{"; staggered over the whole vector;"}},
		{func(p *Params) { p.Staggered, p.Window = true, 3 }, []string{"; staggered in groups of 3 blocks;"}},
		{func(p *Params) { p.CountCopies = true }, []string{"copies counted; Q=20"}},
		{func(p *Params) { p.TreeArrivalOrder = true }, []string{"copies free, tree M from the arrival order; Q=20"}},
	} {
		p := p
		tc.edit(&p)
		got := Describe(p)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
	}
}

// The CSV has one column per Row field, named by its JSON tag, with the
// value at full precision.
func TestWriteCSVColumnsAreTheRowFields(t *testing.T) {
	r := Row{Algo: "multi", Buffers: 4, Bytes: 1 << 20, Hosts: 8, Blocks: 1024, Tau: 1.0000001, Work: 2.5, Contenders: 3.25,
		DeltaC: 4.5, Bandwidth: 5.125, Gbps: 6.75, ElementsPerS: 7.3e9, LinkBound: true, Utilization: 0.123456789,
		Latency: 9.5, M: 10.5, R: 11.5, MemoryBytes: 12.5, Occupancy: 13.5, QueueWait: 14.5}
	var b bytes.Buffer
	if err := WriteCSV(&b, []Row{r}); err != nil {
		t.Fatal(err)
	}
	if columns, fields := schematest.CSVColumns(t, b.String(), r); columns != fields {
		t.Errorf("%d columns, want one per field of the row (%d)", columns, fields)
	}
}

// failingWriter takes nothing.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A table or CSV that could not be written says so.
func TestWriteTableAndCSVReportWriteErrors(t *testing.T) {
	rows := []Row{{Algo: "single", Bytes: 4096}}
	if err := WriteTable(failingWriter{}, rows); err == nil {
		t.Error("WriteTable to a full disk: no error")
	}
	if err := WriteCSV(failingWriter{}, rows); err == nil {
		t.Error("WriteCSV to a full disk: no error")
	}
}
