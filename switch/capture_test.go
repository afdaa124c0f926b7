package swtch

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/flare-net/flare/conn"
)

// The capture stops at its size bound and says so once.
func TestCaptureBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.pcap")
	var logged int
	c, err := openCapture(path, 3000, netip.MustParseAddrPort("127.0.0.1:7470"), func(string, ...any) { logged++ })
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]conn.Datagram, 5)
	for i := range msgs {
		msgs[i] = conn.Datagram{Buf: make([]byte, 1000), N: 1000, Addr: netip.MustParseAddrPort("[::1]:9000")}
	}
	c.record(msgs, true)
	c.record(msgs, false)
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 3000 || fi.Size() < 2000 {
		t.Errorf("capture of %d bytes, want at most the 3000 bound and two packets' worth", fi.Size())
	}
	if logged != 1 {
		t.Errorf("the bound was reported %d times, want once", logged)
	}
}
