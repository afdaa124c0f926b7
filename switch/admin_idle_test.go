package swtch

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A keep-alive connection to the admin port that sends no further request
// is closed after adminIdle, not kept for as long as its client likes.
func TestAdminClosesIdleConnections(t *testing.T) {
	defer func(d time.Duration) { adminIdle = d }(adminIdle)
	adminIdle = 200 * time.Millisecond
	s, err := New(Config{Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.AdminAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: switch\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /healthz: %v, %v; want 200 on a connection kept open", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("an idle connection: read %d bytes, %v; want it closed by the switch (EOF)", n, err)
	}
}
