package swtch

import (
	"slices"
	"testing"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/wire"
)

// A flood of joins the switch refuses gets an answer for each only up to
// refusalReplies a second (after a burst of as many): the rest are counted
// under refused-join and not answered, so a stranger cannot make the
// switch a reflector of Errors. Every refusal is answered or counted.
func TestRefusalAnswersLimited(t *testing.T) {
	fx := newHandleFixture(t, fuzzVariants[0])
	defer fx.close(t)
	s := fx.s
	h := wire.Header{Job: 999, Token: 1, DType: wire.Float32, Op: wire.OpSum}
	bad := wire.AppendJoin(nil, &h, &wire.JoinBody{World: 2, Elements: 64, PacketElems: 1 << 20}) // packets larger than the switch's
	reason := slices.Index(s.drops.reasons, dropRefusedJoin)
	before := s.drops.counts[reason].Load()
	const n = 1000
	answered := 0
	start := time.Now()
	for range n {
		ip := s.slot()
		d := conn.Datagram{Buf: ip.buf, N: copy(ip.buf, bad), Addr: fzStranger}
		if s.handle(&d, ip, 0) {
			t.Fatal("a refused join was taken as data")
		}
		s.inFree[ip.rd].put(ip)
		for _, o := range fx.drain(t) {
			var rh wire.Header
			payload, _ := rh.Unmarshal(o.pkt)
			var e wire.ErrorBody
			if o.to != fzStranger || rh.Type != wire.TypeError || e.Unmarshal(payload) != nil || e.Code != wire.CodeBadRequest {
				t.Fatalf("a refused join answered with %v %v to %v", rh.Type, e.Code, o.to)
			}
			answered++
		}
	}
	allowed := refusalReplies + int(refusalReplies*time.Since(start).Seconds()) + 1
	counted := int(s.drops.counts[reason].Load() - before)
	if answered+counted != n || answered < refusalReplies || answered > allowed {
		t.Fatalf("%d refused joins: %d answered, %d counted as %s; want all %d one or the other, %d..%d answered",
			n, answered, counted, dropRefusedJoin, n, refusalReplies, allowed)
	}
}
