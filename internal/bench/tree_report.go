package bench

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flare-net/flare/internal/units"
	"github.com/flare-net/flare/models"
	"github.com/flare-net/flare/wire"
)

// writeHeader writes the tree bench's preamble, with the model commands
// of its rows, and returns the table its rows go into.
func (t *treeRun) writeHeader(w io.Writer) *tabwriter.Writer {
	s, shape := t.s, t.s.Tree
	fmt.Fprintf(w, "Flare bench --tree %s: a root and %d leaf switches, %d hosts per leaf (%d ranks), all in this process on loopback; %s %s.\n",
		shape, shape.Leaves, shape.Hosts, shape.Leaves*shape.Hosts, s.DType, s.Op)
	fmt.Fprintf(w, "Times on loopback through a few shared cores do not compare with the model's 100 Gbit/s links: compare the ratios\n"+
		"(in-network vs the host baseline of the same size), not the absolute times.\n"+
		"Bytes per call: host↑/↓ per host link (mean), leaf↑/↓ per leaf-root link (mean), links = summed over every link,\n"+
		"of them recovery = the datagrams marked as retransmissions (a host's, and the switches' answers to them).\n"+
		"In-network rows: the switches' link counters. Host rows (ring, host-sparse): the ranks' own counters placed on the same\n"+
		"tree (a hop between leaves crosses host↑, leaf↑, leaf↓, host↓).\n")
	for _, size := range s.Sizes {
		fmt.Fprintf(w, "model, dense rows: %s\n", t.modelCommand(size, 0))
		for _, d := range s.Densities {
			if s.Sparse {
				fmt.Fprintf(w, "model, sparse rows at %g%%: %s\n", d*100, t.modelCommand(size, d))
			}
		}
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "size\tdensity\tpath\talgo\tmedian\thost↑\thost↓\tleaf↑\tleaf↓\tlinks\tof them recovery\tmodel links\ttime vs base\tmodel\ttraffic vs base\tmodel\tmeasured/model\tretx\tverified\t")
	return tw
}

// write writes one row, to the table or as JSON.
func (t *treeRun) write(w io.Writer, tw *tabwriter.Writer, r *TreeRow) error {
	if t.s.JSON {
		return writeJSON(w, r)
	}
	d := "-"
	if r.Density > 0 {
		d = fmt.Sprintf("%.1f%%", r.Density*100)
	}
	hb := func(f float64) string { return units.HumanBytes(int64(f)) }
	_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f ms\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n",
		units.FormatSize(r.Bytes), d, r.Path, r.Algo, r.MedianS*1e3,
		hb(r.HostUpBytes), hb(r.HostDownBytes), hb(r.LeafUpBytes), hb(r.LeafDownBytes), hb(r.LinkBytes), hb(r.RetxLinkBytes), hb(r.ModelLinkBytes),
		units.Ratio(r.TimeVsBaseline), units.Ratio(r.ModelTimeVsBaseline), units.Ratio(r.TrafficVsBaseline), units.Ratio(r.ModelTrafficVsBase),
		plainRatio(r.TrafficVsModel), r.Retransmits, yesNo(r.Verified, r.Path))
	return err
}

func plainRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// modelParams is the model's setting for the tree: LEAVES×HOSTS hosts
// on a two-level fat tree of 2×HOSTS-port switches, so each leaf has HOSTS
// hosts (and HOSTS uplinks to as many spines, where the emulator has one
// root: the bytes a leaf sends up are the same, spread or not), the
// paper's links otherwise.
func (t *treeRun) modelParams(size int64, density float64) models.CollectiveParams {
	s := t.s
	p := models.Figure15Params()
	p.Hosts, p.Bytes, p.ElemBytes, p.IndexBytes = s.Tree.Leaves*s.Tree.Hosts, size, s.DType.Size(), wire.IndexLen
	p.Density, p.Overlap = density, s.Overlap
	p.SwitchPorts, p.Topology = 2*s.Tree.Hosts, models.TopoFatTree
	return p
}

// model is the model's rows for the tree, by algorithm.
func (t *treeRun) model(size int64, density float64) map[string]models.CollectiveRow {
	rows := map[string]models.CollectiveRow{}
	for _, r := range models.Collectives(t.modelParams(size, density)) {
		rows[r.Algorithm] = r
	}
	return rows
}

// modelCommand is the `flare model collectives` command line of the
// same setting.
func (t *treeRun) modelCommand(size int64, density float64) string {
	p := t.modelParams(size, density)
	return fmt.Sprintf("flare model collectives --hosts %d --bytes %s --dtype %s --ports %d --topology fattree --density %g --overlap %g",
		p.Hosts, units.FormatSize(size), t.s.DType, p.SwitchPorts, density, t.s.Overlap)
}

// setModel fills r's model columns from the model's alg row and, with a
// measured baseline row, its ratios against the baseline's (model row
// baseAlg).
func setModel(r, base *TreeRow, model map[string]models.CollectiveRow, alg, baseAlg string) {
	m := model[alg]
	r.ModelAlgorithm, r.ModelTimeS, r.ModelHostBytes, r.ModelLinkBytes = alg, m.TimeS, m.HostBytes, m.WireBytes
	if base == nil {
		return
	}
	r.Baseline = base.Path
	mb := model[baseAlg]
	if r.MedianS > 0 {
		r.TimeVsBaseline = base.MedianS / r.MedianS
	}
	if r.LinkBytes > 0 {
		r.TrafficVsBaseline = base.LinkBytes / r.LinkBytes
	}
	if m.TimeS > 0 && m.WireBytes > 0 {
		r.ModelTimeVsBaseline = mb.TimeS / m.TimeS
		r.ModelTrafficVsBase = mb.WireBytes / m.WireBytes
	}
	if r.ModelTrafficVsBase > 0 {
		r.TrafficVsModel = r.TrafficVsBaseline / r.ModelTrafficVsBase
	}
}
