package models

import (
	"math"
	"strings"
	"testing"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/proto"
	"github.com/flare-net/flare/wire"
)

func mustPreset(t testing.TB, name string) Params {
	t.Helper()
	p, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPresets(t *testing.T) {
	ps := mustPreset(t, PresetPsPIN)
	if ps.Cores() != 32 || ps.CoresPerCluster != 8 || ps.SubsetS != 8 || ps.Hosts != 8 {
		t.Errorf("pspin: K=%d C=%d S=%d P=%d, want 32, 8, 8, 8", ps.Cores(), ps.CoresPerCluster, ps.SubsetS, ps.Hosts)
	}
	fl := mustPreset(t, PresetFlare)
	// One block per core for 512 KiB of 1 KiB packets.
	if fl.Cores() != 512 || fl.Clusters != 64 || int64(fl.Cores())*int64(fl.PacketBytes) != 512<<10 {
		t.Errorf("flare: K=%d (%d clusters), want 512 = 512 KiB / 1 KiB", fl.Cores(), fl.Clusters)
	}
	for _, p := range []Params{ps, fl} {
		if err := p.Validate(); err != nil {
			t.Errorf("preset does not validate: %v", err)
		}
		if p.CyclesPerPacket != 1024 || p.DMACycles != 64 || p.ClockHz != 1e9 || p.PacketBytes != 1024 {
			t.Errorf("L=%g DMA=%g clock=%g packet=%d, want 1024, 64, 1e9, 1024", p.CyclesPerPacket, p.DMACycles, p.ClockHz, p.PacketBytes)
		}
		// δ: P hosts at 100 Gbit/s deliver a 8192-bit packet every 81.92 ns in total / P.
		if want := 81.92 / float64(p.Hosts); beyond(p.InterArrival-want, 1e-9) {
			t.Errorf("δ = %g, want %g", p.InterArrival, want)
		}
	}
	if _, err := Preset("tofino"); err == nil || !strings.Contains(err.Error(), "pspin, flare") {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestPacketCycles checks L per dtype against hpu.PsPINCost: one cycle per
// byte up to 32 bits and for 64-bit types, two per byte for bfloat16 and
// float16.
func TestPacketCycles(t *testing.T) {
	want := map[wire.DType]float64{wire.Int8: 1024, wire.Int16: 1024, wire.Int32: 1024, wire.Float32: 1024,
		wire.Int64: 1024, wire.Float64: 1024, wire.BFloat16: 2048, wire.Float16: 2048}
	p := mustPreset(t, PresetFlare)
	for _, d := range wire.DTypes {
		p.DType, p.CyclesPerPacket = d, 0
		if got := p.PacketCycles(); got != want[d] {
			t.Errorf("%s: L = %g, want %g", d, got, want[d])
		}
	}
	// An explicit L is kept.
	p.CyclesPerPacket = 500
	if p.PacketCycles() != 500 {
		t.Errorf("explicit L overwritten: %g", p.PacketCycles())
	}
}

func TestValidateNamesFields(t *testing.T) {
	cases := []struct {
		field string
		mut   func(*Params)
	}{
		{"Clusters", func(p *Params) { p.Clusters = 0 }},
		{"CoresPerCluster", func(p *Params) { p.CoresPerCluster = 1000 }},
		{"SubsetS", func(p *Params) { p.SubsetS = 9 }},
		{"ClockHz", func(p *Params) { p.ClockHz = math.NaN() }},
		{"DType", func(p *Params) { p.DType = 0 }},
		{"PacketBytes", func(p *Params) { p.PacketBytes = 1023 }},
		{"CyclesPerPacket", func(p *Params) { p.CyclesPerPacket = -1 }},
		{"DMACycles", func(p *Params) { p.DMACycles = math.Inf(1) }},
		{"Hosts", func(p *Params) { p.Hosts = 1 }},
		{"Bytes", func(p *Params) { p.Bytes = 0 }},
		{"InterArrival", func(p *Params) { p.InterArrival = -2 }},
		{"HostGbps", func(p *Params) { p.InterArrival, p.HostGbps = 0, 0 }},
		{"SameBlockInterArrival", func(p *Params) { p.SameBlockInterArrival = -1 }},
		{"Window", func(p *Params) { p.Window = -1 }},
		{"Buffers", func(p *Params) { p.Buffers = 1 }},
		{"QueueDepth", func(p *Params) { p.QueueDepth = 7 }},
		{"L1Bytes", func(p *Params) { p.L1Bytes = 10 }},
		{"Reading", func(p *Params) { p.Reading = 9 }},
		{"SparsePairsPerBlock", func(p *Params) { p.SparsePairsPerBlock = 0 }},
		{"SparseBlockElems", func(p *Params) { p.SparseBlockElems = -1 }},
		{"SparseHashSlots", func(p *Params) { p.SparseHashSlots = -1 }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			p := mustPreset(t, PresetFlare)
			tc.mut(&p)
			err := p.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !strings.Contains(err.Error(), "Params."+tc.field+" ") || !strings.Contains(err.Error(), "must be") {
				t.Errorf("error %q does not name Params.%s and its range", err, tc.field)
			}
		})
	}
}

// Each end of every range is allowed, and one past it refused.
func TestValidateLimitsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"the most clusters", func(p *Params) { p.Clusters = MaxClusters }},
		{"the most cores a cluster", func(p *Params) {
			p.CoresPerCluster, p.SubsetS, p.QueueDepth = MaxCoresPerCluster, 1, MaxCoresPerCluster
		}},
		{"S = 1", func(p *Params) { p.SubsetS = 1 }},
		{"S = C", func(p *Params) { p.SubsetS = p.CoresPerCluster }},
		{"the fastest clock", func(p *Params) { p.ClockHz = MaxClockHz }},
		{"the smallest packet", func(p *Params) { p.PacketBytes = MinPacketBytes }},
		{"the largest packet", func(p *Params) { p.PacketBytes = MaxPacketBytes }},
		{"L derived", func(p *Params) { p.CyclesPerPacket = 0 }},
		{"the DMA derived", func(p *Params) { p.DMACycles = 0 }},
		{"two hosts", func(p *Params) { p.Hosts = 2 }},
		{"the most hosts", func(p *Params) { p.Hosts = MaxHosts }},
		{"one byte", func(p *Params) { p.Bytes = 1 }},
		{"the most bytes", func(p *Params) { p.Bytes = MaxBytes }},
		{"δ derived", func(p *Params) { p.InterArrival = 0 }},
		{"δ given", func(p *Params) { p.InterArrival, p.HostGbps = 5, 0 }},
		{"the whole vector", func(p *Params) { p.Window = 0 }},
		{"two buffers", func(p *Params) { p.Buffers = 2 }},
		{"the most buffers", func(p *Params) { p.Buffers = proto.MaxBuffers }},
		{"a queue of C", func(p *Params) { p.QueueDepth = p.CoresPerCluster }},
		{"the deepest queue", func(p *Params) { p.QueueDepth = MaxQueueDepth }},
		{"L1 of a packet", func(p *Params) { p.L1Bytes = p.PacketBytes }},
		{"the largest L1", func(p *Params) { p.L1Bytes = hpu.MaxL1Bytes }},
		{"sparse blocks derived", func(p *Params) { p.SparseBlockElems = 0 }},
		{"hash slots derived", func(p *Params) { p.SparseHashSlots = 0 }},
	} {
		p := mustPreset(t, PresetFlare)
		tc.edit(&p)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		field string
		edit  func(*Params)
	}{
		{"Clusters", func(p *Params) { p.Clusters = MaxClusters + 1 }},
		{"CoresPerCluster", func(p *Params) { p.CoresPerCluster = MaxCoresPerCluster + 1 }},
		{"SubsetS", func(p *Params) { p.SubsetS = 0 }},
		{"ClockHz", func(p *Params) { p.ClockHz = MaxClockHz * 1.001 }},
		{"PacketBytes", func(p *Params) { p.PacketBytes = MinPacketBytes - 4 }},
		{"PacketBytes", func(p *Params) { p.PacketBytes = MaxPacketBytes + 4 }},
		{"Hosts", func(p *Params) { p.Hosts = MaxHosts + 1 }},
		{"Bytes", func(p *Params) { p.Bytes = MaxBytes + 1 }},
		{"InterArrival", func(p *Params) { p.InterArrival = math.Inf(1) }},
		{"HostGbps", func(p *Params) { p.InterArrival, p.HostGbps = 0, math.Inf(1) }},
		{"Buffers", func(p *Params) { p.Buffers = proto.MaxBuffers + 1 }},
		{"QueueDepth", func(p *Params) { p.QueueDepth = MaxQueueDepth + 1 }},
		{"L1Bytes", func(p *Params) { p.L1Bytes = hpu.MaxL1Bytes + 1 }},
	} {
		p := mustPreset(t, PresetFlare)
		tc.edit(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "Params."+tc.field+" ") {
			t.Errorf("%s one past its range: %v", tc.field, err)
		}
	}
}

func TestReadingNames(t *testing.T) {
	for _, r := range []Reading{ReadService, ReadWaitingOnly} {
		got, err := ParseReading(r.String())
		if err != nil || got != r {
			t.Errorf("ParseReading(%q) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseReading("printed"); err == nil {
		t.Error("ParseReading accepted an unknown name")
	}
}
