package swtch_test

import (
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// TestOldVersionJoinOverUDP: a host that speaks protocol version 1 joins a
// running switch over loopback and hears, in version 1, why it is refused.
func TestOldVersionJoinOverUDP(t *testing.T) {
	sw := startSwitch(t, swtch.Config{})
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sw.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := wire.Header{Version: wire.Version1, Type: wire.TypeJoin, Job: 11, Token: 3, Child: 0, DType: wire.Float32, Op: wire.OpSum}
	body := make([]byte, wire.JoinBodyLenV1)
	binary.BigEndian.PutUint16(body[0:], 1)     // world
	binary.BigEndian.PutUint64(body[8:], 1<<10) // elements
	if _, err := c.Write(wire.AppendPacket(nil, &h, body)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound for a busy machine, not a speed check
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no answer to a version-1 join: %v", err)
	}
	reply := buf[:n]
	if reply[wire.OffVersion] != wire.Version1 {
		t.Fatalf("answer in version %d, want 1", reply[wire.OffVersion])
	}
	reply[wire.OffVersion] = wire.Version // the same layout: decode it as the old host would
	var rh wire.Header
	payload, err := rh.Unmarshal(reply)
	if err != nil || rh.Type != wire.TypeError || rh.Job != 11 || rh.Token != 3 {
		t.Fatalf("answer %+v (%v), want an Error to job 11", rh, err)
	}
	var e wire.ErrorBody
	if err := e.Unmarshal(payload); err != nil || e.Code != wire.CodeBadRequest ||
		!strings.Contains(e.Message(), "protocol version 1") || !strings.Contains(e.Message(), "speaks version 2") {
		t.Fatalf("answer %v %q (%v): want bad-request naming versions 1 and 2", e.Code, e.Message(), err)
	}
}
