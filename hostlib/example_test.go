package hostlib_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// One rank of a four-rank job sums its gradients with the others' through
// the switch at 127.0.0.1:7470 (start one with `flare switch`). Every rank
// runs the same code with its own Rank. The example needs a switch, so it is
// compiled but not run.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	grads := make([]float32, 1<<20)
	s, err := hostlib.Join(ctx, hostlib.Options{
		Switch:   "127.0.0.1:7470",
		Job:      7,
		Token:    0x5ec7e7,
		Rank:     0,
		World:    4,
		DType:    wire.Float32,
		Op:       wire.OpSum,
		Elements: len(grads),
	})
	if errors.Is(err, hostlib.ErrRefused) {
		log.Fatalf("the switch is out of aggregation memory: %v", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	log.Printf("rank %d of %d: %d blocks of %d elements, window %d, %v design",
		s.Rank(), s.World(), s.Blocks(), s.PacketElems(), s.Window(), s.Algo())

	for step := range 3 {
		for i := range grads {
			grads[i] = float32(step) // this rank's contribution
		}
		if err := hostlib.AllReduce(ctx, s, grads); err != nil {
			log.Fatal(err) // a *hostlib.TimeoutError says which blocks are missing
		}
		// grads now holds the sum over the four ranks.
	}
	log.Printf("%+v", s.Stats())
}
