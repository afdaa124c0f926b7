package hpu

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/flare-net/flare/wire"
)

// reset clears every per-packet field of a Task and keeps the runner's:
// it sets fields one by one, so a field added to Task must be added there
// (or here, to the kept ones) too.
func TestTaskResetClearsPacketFields(t *testing.T) {
	kept := map[string]bool{"cost": true, "egress": true, "pegress": true, "cegress": true, "kegress": true, "index": true, "now": true, "sim": true,
		"out": true} // out: Emit's copy of a header, written whole before each use
	var task Task
	v := reflect.ValueOf(&task).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(7)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Interface:
			f.Set(reflect.ValueOf(&coreEgress{})) // every egress interface
		case reflect.Struct:
			// wire.Header: left as it is (out is kept)
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	p := &Packet{}
	task.reset(p, 2, 3)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		f := v.Field(i)
		switch {
		case name == "Pkt":
			if task.Pkt != p {
				t.Errorf("Pkt not set")
			}
		case name == "Cluster" || name == "Core":
			if task.Cluster != 2 || task.Core != 3 {
				t.Errorf("Cluster, Core = %d, %d; want 2, 3", task.Cluster, task.Core)
			}
		case name == "started":
			if task.started != task.now {
				t.Errorf("started = %d, want now (%d)", task.started, task.now)
			}
		case kept[name]:
			if f.IsZero() && f.Kind() != reflect.Struct {
				t.Errorf("runner field %s was cleared", name)
			}
		case !f.IsZero():
			t.Errorf("per-packet field %s = %v after reset, want zero", name, f)
		}
	}
}

// EmitKept on an egress that cannot send in place is Emit of the
// handler's own copy: the virtual-time unit's egresses, and the plain
// ones, see the same packet, read from memory no other core rewrites.
func TestEmitKeptFallsBackToEmit(t *testing.T) {
	e := &payloadEgress{}
	var task Task
	task.egress = e
	kept, own := []byte{1, 2}, []byte{1, 2}
	task.EmitKept(&wire.Header{Type: wire.TypeResult}, kept, own)
	if len(e.payloads) != 1 {
		t.Fatalf("EmitKept on a plain Egress made %d Emit calls, want 1", len(e.payloads))
	}
	if p := e.payloads[0]; len(p) == 0 || &p[0] != &own[0] {
		t.Errorf("EmitKept on a plain Egress emitted %v, not the handler's own copy", p)
	}
}

// payloadEgress records the payloads of its Emit calls.
type payloadEgress struct{ payloads [][]byte }

func (e *payloadEgress) Emit(_ *wire.Header, payload []byte) {
	e.payloads = append(e.payloads, payload)
}
