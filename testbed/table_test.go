package testbed

import (
	"strings"
	"testing"
)

// A tree's table names its uplinks' rate, and its model command is the
// fat tree of every host with a port per host of a leaf and one up; a
// single switch's has no uplinks line, and a link that dropped or lost
// nothing says nothing of either.
func TestTableOfATree(t *testing.T) {
	cfg := Config{Leaves: 2, PerLeaf: 4, LinkBps: 1e9, UplinkBps: 400e6, Bytes: 1 << 20, Exe: "flare", Overlap: 0.5}.withDefaults()
	row := Row{Path: PathSwitch, Ranks: 8, Bytes: 1 << 20, Topology: "2x4", LinkBps: 1e9, UplinkBps: 400e6, PacketBytes: 1024,
		Window: 32, Links: []LinkStat{{Link: "leaf0-root", UpBytes: 1 << 20, DownBytes: 1 << 20, Drops: 1, Lost: 1}}}
	var b strings.Builder
	WriteTable(&b, cfg, []Row{row})
	for _, want := range []string{"\nuplinks (leaf-root) 400Mbit\n", "--hosts 8 --bytes 1MiB --dtype float32 --link-gbps 1 --topology fattree --ports 8 --overlap 0.5\n",
		"leaf0-root 1.0 MiB/1.0 MiB 0%/0% (1 dropped) (1 lost)\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	single := Config{Hosts: 4, LinkBps: 1e9, Bytes: 1 << 20, Exe: "flare"}.withDefaults()
	row.UplinkBps, row.Topology, row.Links[0].Drops, row.Links[0].Lost = 0, "4", 0, 0
	b.Reset()
	WriteTable(&b, single, []Row{row})
	if strings.Contains(b.String(), "uplinks") || strings.Contains(b.String(), "dropped") || strings.Contains(b.String(), "lost") {
		t.Errorf("a single switch's table, with no drops or losses:\n%s", b.String())
	}
}

// The sweep's header says what holding a rate means, and each row reads
// under it.
func TestSweepTable(t *testing.T) {
	var b strings.Builder
	WriteSweepHeader(&b, Config{Hosts: 4, Bytes: 16 << 20})
	WriteSweepRow(&b, SweepRow{Row: Row{PacketBytes: 8192, LinkBps: 2e9, MedianS: 0.0712, IdealS: 0.0688, OfIdeal: 1.035,
		CPUBusy: 0.42, SwitchCPU: 0.61, SwitchThreadCPU: 0.33}, Held: true})
	lines := strings.Split(b.String(), "\n")
	if len(lines) != 5 || lines[0] != "Flare testbed capacity sweep: 4 hosts, 16MiB per host, in-network dense; held = verified and within 10% of ideal" ||
		!strings.HasPrefix(strings.TrimSpace(lines[2]), "packet") ||
		strings.Join(strings.Fields(lines[3]), " ") != "8192 2Gbit 71.20ms 68.80ms 1.03× 42% 0.61/0.33 false true" {
		t.Errorf("sweep table:\n%s", b.String())
	}
}
