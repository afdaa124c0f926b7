package bench

import (
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// A tree's shape: 2 or more leaves, 1 or more hosts each, MaxRanks in all,
// each end allowed and one past it refused by name.
func TestTreeShapeValidate(t *testing.T) {
	for _, ok := range []TreeShape{{2, 1}, {MaxRanks, 1}, {2, MaxRanks / 2}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for shape, want := range map[TreeShape]string{
		{1, 4}: "TreeShape.Leaves = 1", {4, 0}: "TreeShape.Hosts = 0",
		{2, MaxRanks/2 + 1}: "TreeShape.Hosts = 513", {MaxRanks + 1, 1}: "TreeShape.Hosts = 1",
	} {
		if err := shape.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want an error naming %q", shape, err, want)
		}
	}
}

// Each path of a tree's rows: sparse ones with their storage and density
// (a dense tree design asked for the dense rows turns to auto for them),
// the host baselines around the ring, every row its own job.
func TestTreeConfig(t *testing.T) {
	tr := &treeRun{s: Suite{Tree: TreeShape{2, 3}, DType: wire.Float32, Op: wire.OpSum, Algo: "tree", Iters: 2, Overlap: 0.5}, tree: &inproc.Tree{}, job: 100}
	for _, tc := range []struct {
		path    string
		sparse  bool
		storage wire.Storage
		algo    string
	}{
		{PathInNetwork, false, 0, "tree"},
		{PathRing, false, 0, PathRing},
		{PathHash, true, wire.StorageHash, "auto"},
		{PathArray, true, wire.StorageArray, "auto"},
		{PathHostSparse, true, 0, PathRing},
	} {
		job := tr.job + 1
		c := tr.config(tc.path, 4096, 0.01)
		density := 0.0
		if tc.sparse {
			density = 0.01
		}
		if c.Sparse != tc.sparse || c.Storage != tc.storage || c.Algo != tc.algo || c.Density != density ||
			c.Job != job || c.Ranks != 6 || c.Count != 1024 || c.Overlap != 0.5 {
			t.Errorf("%s: sparse %v, storage %v, algo %q, density %v, job %d, %d ranks, %d elements, overlap %v; want %v, %v, %q, %v, %d, 6, 1024, 0.5",
				tc.path, c.Sparse, c.Storage, c.Algo, c.Density, c.Job, c.Ranks, c.Count, c.Overlap, tc.sparse, tc.storage, tc.algo, density, job)
		}
	}
}

// A row's model columns and ratios: the model's row for its algorithm,
// the baseline's time and link bytes over its own (measured and in the
// model), and the measured traffic ratio over the model's.
func TestSetModel(t *testing.T) {
	model := map[string]models.CollectiveRow{
		models.AlgInNetworkDense: {TimeS: 2, HostBytes: 10, WireBytes: 40},
		models.AlgRing:           {TimeS: 6, HostBytes: 30, WireBytes: 200},
	}
	base := &TreeRow{Path: PathRing, MedianS: 0.75, LinkBytes: 3000}
	r := &TreeRow{Path: PathInNetwork, MedianS: 0.25, LinkBytes: 1000}
	setModel(r, base, model, models.AlgInNetworkDense, models.AlgRing)
	want := TreeRow{Path: PathInNetwork, MedianS: 0.25, LinkBytes: 1000, ModelAlgorithm: models.AlgInNetworkDense, ModelTimeS: 2, ModelHostBytes: 10, ModelLinkBytes: 40,
		Baseline: PathRing, TimeVsBaseline: 3, ModelTimeVsBaseline: 3, TrafficVsBaseline: 3, ModelTrafficVsBase: 5, TrafficVsModel: 0.6}
	if *r != want {
		t.Errorf("row %+v,\nwant %+v", *r, want)
	}
	// A baseline set against itself has ratios of 1; a row without one,
	// only the model's columns.
	setModel(base, base, model, models.AlgRing, models.AlgRing)
	if base.TimeVsBaseline != 1 || base.ModelTimeVsBaseline != 1 || base.TrafficVsModel != 1 || base.ModelAlgorithm != models.AlgRing {
		t.Errorf("the baseline against itself: %+v", *base)
	}
	lone := &TreeRow{MedianS: 1, LinkBytes: 1}
	setModel(lone, nil, model, models.AlgRing, models.AlgRing)
	if lone.ModelTimeS != 6 || lone.Baseline != "" || lone.TimeVsBaseline != 0 || lone.TrafficVsModel != 0 {
		t.Errorf("a row without a baseline: %+v", *lone)
	}
}

// The model's setting for a tree: its hosts on a fat tree of 2×HOSTS-port
// switches, the suite's dtype, density and overlap; and the command line
// that prints it.
func TestTreeModelParams(t *testing.T) {
	tr := &treeRun{s: Suite{Tree: TreeShape{4, 3}, DType: wire.Float64, Overlap: 0.25}}
	p := tr.modelParams(8192, 0.02)
	if p.Hosts != 12 || p.Bytes != 8192 || p.ElemBytes != 8 || p.IndexBytes != wire.IndexLen || p.Density != 0.02 || p.Overlap != 0.25 ||
		p.SwitchPorts != 6 || p.Topology != models.TopoFatTree {
		t.Errorf("model params %+v", p)
	}
	want := "flare model collectives --hosts 12 --bytes 8KiB --dtype float64 --ports 6 --topology fattree --density 0.02 --overlap 0.25"
	if got := tr.modelCommand(8192, 0.02); got != want {
		t.Errorf("model command %q, want %q", got, want)
	}
}

// The table: the model commands of the dense rows, and of the sparse ones
// only where the suite measures them; a sparse row's density in percent.
func TestTreeTable(t *testing.T) {
	for _, sparse := range []bool{false, true} {
		tr := &treeRun{s: Suite{Tree: TreeShape{2, 2}, Sizes: []int64{4096}, Densities: []float64{0.01}, Sparse: sparse, DType: wire.Float32, Op: wire.OpSum}}
		var out strings.Builder
		tw := tr.writeHeader(&out)
		if err := tr.write(&out, tw, &TreeRow{Path: PathHash, Bytes: 4096, Density: 0.01, Algo: "single"}); err != nil {
			t.Fatal(err)
		}
		tw.Flush()
		text := out.String()
		if got := strings.Contains(text, "model, sparse rows at 1%"); got != sparse || !strings.Contains(text, "model, dense rows: flare model collectives --hosts 4") {
			t.Errorf("sparse %v: header\n%s", sparse, text)
		}
		if !strings.Contains(text, "1.0%  hash") {
			t.Errorf("sparse %v: a row at 1%% density:\n%s", sparse, text)
		}
	}
}
