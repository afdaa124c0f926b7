package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/flare-net/flare/internal/jsonl"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/sim/sweep"
	"github.com/flare-net/flare/wire"
)

// runFlare runs the command in this process and returns what it printed.
func runFlare(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("flare %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// jsonText is rows as the commands print them with --format json: one
// JSON object a line.
func jsonText[T any](t *testing.T, rows []T) string {
	t.Helper()
	var b strings.Builder
	if err := jsonl.Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// jsonLines decodes one JSON object per line into maps.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("%v in\n%s", err, s)
		}
		rows = append(rows, m)
	}
	return rows
}

// The paper's rule with the flare preset, the reproducible override and
// the model policy under a budget (docs/MODEL.md, "Choosing the design").
func TestModelChoose(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bytes", "100KiB"}, "tree"},
		{[]string{"--bytes", "200KiB"}, "multi2"},
		{[]string{"--bytes", "300KiB"}, "multi4"},
		{[]string{"--bytes", "600KiB"}, "single"},
		{[]string{"--bytes", "600KiB", "--reproducible"}, "tree"},
		{[]string{"--bytes", "4MiB", "--policy", "model"}, "tree"},
		{[]string{"--bytes", "512KiB", "--policy", "model", "--budget", "1MiB"}, "single"},
		{[]string{"--bytes", "64KiB", "--policy", "model", "--budget", "1MiB"}, "multi4"},
		{[]string{"--bytes", "512KiB", "--policy", "model", "--budget", "1MiB", "--reproducible"}, "tree"},
	} {
		args := append([]string{"model", "choose", "--preset", "flare"}, tc.args...)
		if got := strings.TrimSpace(runFlare(t, args...)); got != tc.want {
			t.Errorf("flare %s = %q, want %q", strings.Join(args, " "), got, tc.want)
		}
	}
}

// json rows carry the fields the simulator's rows share; csv and table
// have a row per design and size.
func TestModelSweepFormats(t *testing.T) {
	base := []string{"model", "sweep", "--preset", "flare", "--from", "64KiB", "--to", "1MiB"}
	rows := jsonLines(t, runFlare(t, append(base, "--format", "json")...))
	if len(rows) != 5*4 {
		t.Fatalf("%d json rows, want 20", len(rows))
	}
	for _, r := range rows {
		for _, k := range []string{"algo", "bytes", "hosts", "tau_cycles", "bandwidth_gbps", "memory_bytes", "latency_cycles", "queue_occupancy"} {
			if _, ok := r[k]; !ok {
				t.Fatalf("json row lacks %q: %v", k, r)
			}
		}
	}
	if r := rows[len(rows)-1]; r["algo"] != "tree" || r["bytes"] != float64(1<<20) || r["hosts"] != float64(64) {
		t.Errorf("last row %v, want tree at 1MiB with 64 hosts", r)
	}

	recs, err := csv.NewReader(strings.NewReader(runFlare(t, append(base, "--format", "csv", "--algos", "single,tree")...))).ReadAll()
	if err != nil || len(recs) != 1+5*2 || recs[0][0] != "algo" || recs[1][0] != "single" {
		t.Fatalf("csv: %d records, %v: %v", len(recs), err, recs)
	}

	table := runFlare(t, append(base, "--hosts", "16", "--dtype", "float32", "--subset", "2")...)
	for _, want := range []string{"S=2", "P=16 hosts", "float32", "design", "multi4    1MiB"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestModelSweepPlot(t *testing.T) {
	f := filepath.Join(t.TempDir(), "flare.svg")
	runFlare(t, "model", "sweep", "--plot", f, "--format", "csv")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("SHARP")) || !bytes.Contains(b, []byte("SwitchML")) {
		t.Fatalf("%s (%d bytes) is not an SVG with the reference lines", f, len(b))
	}
}

// size prints Little's-law memory as models.JobMemory computes it.
func TestModelSize(t *testing.T) {
	rows := jsonLines(t, runFlare(t, "model", "size", "--bytes", "1MiB", "--hosts", "32", "--algo", "auto,tree", "--format", "json"))
	if len(rows) != 2 || rows[0]["algo"] != "single" || rows[1]["algo"] != "tree" {
		t.Fatalf("rows %v", rows)
	}
	p, _ := models.Preset("flare")
	p.Hosts, p.InterArrival, p.Bytes = 32, 0, 1<<20
	buffers, bytes := models.JobMemory(p, models.Tree)
	if rows[1]["memory_buffers"] != float64(buffers) || rows[1]["memory_bytes"] != float64(bytes) {
		t.Errorf("tree: %v, want %d buffers, %d bytes", rows[1], buffers, bytes)
	}
	if out := runFlare(t, "model", "size", "--preset", "pspin"); !strings.Contains(out, "buffers") || !strings.Contains(out, "single") {
		t.Errorf("table:\n%s", out)
	}
}

// The defaults are the Figure 15 setting and print the paper's comparisons.
func TestModelCollectives(t *testing.T) {
	out := runFlare(t, "model", "collectives")
	for _, want := range []string{"in-network-dense", "halving-doubling", "fattree: in-network-dense vs ring: 2.00x faster, 1.97x less traffic"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	rows := jsonLines(t, runFlare(t, "model", "collectives", "--topology", "both", "--density", "0", "--format", "json"))
	if len(rows) != 10 || rows[0]["topology"] != "single" || rows[9]["topology"] != "fattree" {
		t.Fatalf("%d rows: %v", len(rows), rows)
	}
}

func TestModelSparse(t *testing.T) {
	out := runFlare(t, "model", "sparse", "--density", "0.01,0.2")
	if strings.Count(out, "\n") != 6 || !strings.Contains(out, "hash") || !strings.Contains(out, "array") {
		t.Errorf("want a line, a header and 4 rows:\n%s", out)
	}
	rows := jsonLines(t, runFlare(t, "model", "sparse", "--storage", "array", "--format", "json"))
	if len(rows) != len(models.SparseDensities()) || rows[0]["storage"] != "array" {
		t.Errorf("rows %v", rows)
	}
	if rows := jsonLines(t, runFlare(t, "model", "sparse", "--density", "1", "--format", "json")); len(rows) != 2 || rows[0]["density"] != 1.0 {
		t.Errorf("--density 1 (dense): rows %v", rows)
	}
	p, err := models.Preset(models.PresetFlare)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("; %d pairs per host per block\n", p.SparsePairsPerBlock); !strings.Contains(strings.SplitAfterN(out, "\n", 2)[0], want) {
		t.Errorf("first line %q lacks %q", strings.SplitAfterN(out, "\n", 2)[0], want)
	}
}

// Bad flags name the flag.
func TestModelSimFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "choose"}, "--bytes is required"},
		{[]string{"model", "choose", "--bytes", "lots"}, "--bytes: size \"lots\""},
		{[]string{"model", "choose", "--bytes", "1MiB", "--policy", "best"}, "--policy: \"best\""},
		{[]string{"model", "choose", "--bytes", "1MiB", "--budget", "1MiB"}, "--budget: only the model policy"},
		{[]string{"model", "choose", "--bytes", "1MiB", "--policy", "model", "--budget", "lots"}, "--budget: size \"lots\""},
		{[]string{"model", "choose", "--bytes", "0"}, "--bytes: 0: must be in 1B..1TiB"},
		{[]string{"model", "size", "--bytes", "1025GiB"}, "--bytes: 1025GiB: must be in 1B..1TiB"},
		{[]string{"model", "collectives", "--link-gbps", "-1"}, "--link-gbps: models: CollectiveParams.LinkGbps = -1"},
		{[]string{"model", "sweep", "--format", "xml"}, "--format: \"xml\": want table, csv, json"},
		{[]string{"model", "sweep", "--algos", "single,multi1"}, "--algos: models: design \"multi1\""},
		{[]string{"model", "sweep", "--from", "1MiB", "--to", "4KiB"}, "--to: 4KiB is below --from 1MiB"},
		{[]string{"model", "sweep", "--hosts", "1"}, "--hosts: models: Params.Hosts = 1"},
		{[]string{"model", "sweep", "--subset", "9"}, "--subset: models: Params.SubsetS = 9"},
		{[]string{"model", "sweep", "--clusters", "0"}, "--clusters: models: Params.Clusters = 0"},
		{[]string{"model", "sweep", "--host-gbps", "-1"}, "--host-gbps:"},
		{[]string{"model", "sweep", "--preset", "tofino"}, "--preset: models: unknown preset"},
		{[]string{"model", "sweep", "--dtype", "int128"}, "--dtype: unknown dtype"},
		{[]string{"model", "sweep", "--reading", "both"}, "--reading:"},
		{[]string{"model", "sweep", "--tree-m", "random"}, "--tree-m: \"random\": want paper or order"},
		{[]string{"sim", "--tree-m", "log"}, "--tree-m: \"log\""},
		{[]string{"model", "sweep", "--plot", "x.pdf"}, "--plot: models: plot x.pdf"},
		{[]string{"model", "sweep", "--hostz", "3"}, "did you mean --hosts?"},
		{[]string{"model", "size", "--algo", "ring"}, "--algo: models: unknown design \"ring\""},
		{[]string{"model", "collectives", "--ports", "7"}, "--ports: models: CollectiveParams.SwitchPorts = 7"},
		{[]string{"model", "collectives", "--density", "2"}, "--density: models: CollectiveParams.Density = 2"},
		{[]string{"model", "collectives", "--topology", "torus"}, "--topology:"},
		{[]string{"model", "sparse", "--storage", "tree"}, "--storage: \"tree\""},
		{[]string{"model", "sparse", "--density", "0"}, "--density: \"0\""},
		{[]string{"model", "calibrate", "--runs", "0"}, "--runs 0: must be in 1..100"},
		{[]string{"model", "calibrate", "--algo", "ring"}, "--algo: models: unknown design"},
		{[]string{"model", "calibrate", "--bytes", "1023"}, "--bytes: 1023"},
		{[]string{"model", "calibrate", "--bytes", "65MiB"}, "--bytes: 65MiB: must be a multiple of the int32 size (4) up to 64MiB"},
		{[]string{"model", "nosuch"}, "unknown subcommand \"nosuch\""},
		{[]string{"model", "chose"}, "did you mean \"choose\""},
		{[]string{"sim", "--to", "128MiB"}, "--to: 128MiB"},
		{[]string{"sim", "--format", "yaml"}, "--format:"},
		{[]string{"sim", "--algos", "ring"}, "--algos:"},
		{[]string{"sim", "--window", "-1"}, "--window: models: Params.Window = -1"},
		{[]string{"sim", "--sead", "1"}, "did you mean --seed?"},
		{[]string{"sim", "--from", "1002", "--to", "2004"}, "--from: 1002: must be a multiple of the int32 size (4)"},
		{[]string{"sim", "--rounds", "-1"}, "--rounds: -1: must be >= 0"},
		{[]string{"sim", "--rounds", "2", "--from", "1000", "--to", "2000"}, "--rounds: 2 with --from 1000: back-to-back rounds need sizes of whole 1024-byte packets"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("flare %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// --tree-m order gives model sweep, size and choose the tree's M that
// sim --compare sets beside each run, so that the model and the
// simulation join on equal terms; paper (the default) is the paper's M.
func TestModelTreeM(t *testing.T) {
	args := []string{"--preset", "pspin", "--algos", "single,tree", "--from", "16KiB", "--to", "32KiB", "--format", "json"}
	paper := jsonLines(t, runFlare(t, append([]string{"model", "sweep"}, args...)...))
	if dflt := jsonLines(t, runFlare(t, append([]string{"model", "sweep", "--tree-m", "paper"}, args...)...)); !reflectEqual(paper, dflt) {
		t.Errorf("--tree-m paper is not the default:\n%v\n%v", paper, dflt)
	}
	order := jsonLines(t, runFlare(t, append([]string{"model", "sweep", "--tree-m", "order", "--copies"}, args...)...))
	cmp := runFlare(t, append([]string{"sim", "--compare"}, args...)...)
	var sim []sweep.CompareRow
	dec := json.NewDecoder(strings.NewReader(cmp))
	for dec.More() {
		var r sweep.CompareRow
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		sim = append(sim, r)
	}
	if len(order) != 4 || len(sim) != 4 {
		t.Fatalf("%d model rows, %d compared rows; want 4 each", len(order), len(sim))
	}
	for i, m := range order {
		c := sim[i].Model
		if m["algo"] != c.Algo || m["memory_bytes"] != c.MemoryBytes || m["buffers_per_block"] != c.M {
			t.Errorf("row %d: model sweep --tree-m order --copies: %v %v M=%v; sim --compare: %s %v M=%v",
				i, m["algo"], m["memory_bytes"], m["buffers_per_block"], c.Algo, c.MemoryBytes, c.M)
		}
		if m["algo"] == "tree" && m["buffers_per_block"] == paper[i]["buffers_per_block"] {
			t.Errorf("tree at %v: M = %v with either --tree-m", m["bytes"], m["buffers_per_block"])
		}
	}
	// size and choose take it too.
	sizeArgs := []string{"model", "size", "--preset", "pspin", "--algo", "tree", "--bytes", "64KiB", "--format", "json"}
	a := jsonLines(t, runFlare(t, sizeArgs...))
	b := jsonLines(t, runFlare(t, append(sizeArgs, "--tree-m", "order")...))
	if a[0]["buffers_per_block"] == b[0]["buffers_per_block"] {
		t.Errorf("model size: M = %v with either --tree-m", a[0]["buffers_per_block"])
	}
	if got := strings.TrimSpace(runFlare(t, "model", "choose", "--bytes", "4MiB", "--policy", "model", "--tree-m", "order")); got == "" {
		t.Error("model choose --tree-m order printed nothing")
	}
}

func reflectEqual(a, b []map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// Every model subcommand has --help with its flags and examples.
func TestModelHelp(t *testing.T) {
	for name := range modelCommands() {
		var out strings.Builder
		if err := run(context.Background(), []string{"model", name, "--help"}, &out, io.Discard); err != nil && !errors.Is(err, pflag.ErrHelp) {
			t.Errorf("flare model %s --help: %v", name, err)
		}
		if s := out.String(); !strings.Contains(s, "usage: flare model "+name) || !strings.Contains(s, "examples:\n  flare model "+name) {
			t.Errorf("flare model %s --help lacks its usage or examples:\n%s", name, s)
		}
	}
}

// The parameter flags set the model's parameters: model sweep's rows with
// every one of them moved from its default are the library's for the same
// parameters, set by hand; and model size sizes the job --bytes asks for.
func TestModelParamFlags(t *testing.T) {
	out := runFlare(t, "model", "sweep", "--preset", "flare", "--hosts", "16", "--dtype", "bfloat16", "--clusters", "32", "--subset", "2",
		"--window", "4", "--host-gbps", "40", "--copies", "--reading", "waiting-only", "--tree-m", "order",
		"--from", "64KiB", "--to", "128KiB", "--format", "json")
	p, err := models.Preset(models.PresetFlare)
	if err != nil {
		t.Fatal(err)
	}
	p.Hosts, p.InterArrival, p.DType, p.CyclesPerPacket = 16, 0, wire.BFloat16, 0 // L is twice int32's
	p.Clusters, p.SubsetS, p.Window, p.HostGbps = 32, 2, 4, 40
	p.CountCopies, p.TreeArrivalOrder = true, true
	if p.Reading, err = models.ParseReading("waiting-only"); err != nil {
		t.Fatal(err)
	}
	ds, err := models.ParseDesigns(allDesigns)
	if err != nil {
		t.Fatal(err)
	}
	if want := jsonText(t, models.Sweep(p.Resolve(), ds, 64<<10, 128<<10)); out != want {
		t.Errorf("flare model sweep with every parameter flag:\n%s\nwant the library's rows:\n%s", out, want)
	}
	if dflt := runFlare(t, "model", "sweep", "--from", "64KiB", "--to", "128KiB", "--format", "json"); dflt == out {
		t.Error("the defaults give the same rows: the comparison shows nothing")
	}
	// One size, --from equal to --to.
	if rows := jsonLines(t, runFlare(t, "model", "sweep", "--from", "64KiB", "--to", "64KiB", "--format", "json")); len(rows) != 4 {
		t.Errorf("--from 64KiB --to 64KiB: %d rows, want the 4 designs at 64KiB", len(rows))
	}
	if rows := jsonLines(t, runFlare(t, "model", "size", "--bytes", "64KiB", "--format", "json")); len(rows) != 1 || rows[0]["bytes"] != float64(64<<10) {
		t.Errorf("model size --bytes 64KiB: %v", rows)
	}
}

// model collectives' flags set the collective parameters: its rows are
// the library's for the same parameters, under a line naming the dtype.
func TestModelCollectivesFlags(t *testing.T) {
	args := []string{"model", "collectives", "--hosts", "16", "--dtype", "float64", "--link-gbps", "25", "--topology", "single"}
	c := models.Figure15Params()
	c.Hosts, c.ElemBytes, c.LinkGbps, c.Topology = 16, 8, 25, models.TopoSingle
	if got, want := runFlare(t, append(args, "--format", "json")...), jsonText(t, models.Collectives(c)); got != want {
		t.Errorf("flare %s:\n%s\nwant the library's rows:\n%s", strings.Join(args, " "), got, want)
	}
	if got := runFlare(t, args...); !strings.HasPrefix(got, "# "+models.DescribeCollectives(c, "float64")+"\n") {
		t.Errorf("table's first line: %q", strings.SplitN(got, "\n", 2)[0])
	}
}

// flare model with no subcommand, -h, --help or help prints its usage.
func TestModelUsage(t *testing.T) {
	for _, args := range [][]string{{"model"}, {"model", "-h"}, {"model", "--help"}, {"model", "help"}} {
		if out := runFlare(t, args...); !strings.Contains(out, "usage: flare model <subcommand>") || !strings.Contains(out, "calibrate") {
			t.Errorf("flare %s printed:\n%s", strings.Join(args, " "), out)
		}
	}
}
