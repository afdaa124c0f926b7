package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/flare-net/flare/internal/inproc"
	"github.com/flare-net/flare/internal/units"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// Demo is `flare demo`: a switch on loopback and Ranks hosts in this
// process, verified float32 sums of several sizes with the automatic
// design and the reproducible tree, Iters measured calls each.
type Demo struct {
	Ranks int
	Iters int
}

// Validate names the first field out of range, and the range.
func (d Demo) Validate() error {
	switch {
	case d.Ranks < 1 || d.Ranks > MaxRanks:
		return fmt.Errorf("Demo.Ranks = %d: must be in 1..%d", d.Ranks, MaxRanks)
	case d.Iters < 1:
		return fmt.Errorf("Demo.Iters = %d: must be at least 1", d.Iters)
	}
	return nil
}

// Run runs the demo and writes its table to w.
func (d Demo) Run(ctx context.Context, w io.Writer) error {
	if err := d.Validate(); err != nil {
		return err
	}
	g := inproc.New(ctx)
	defer g.Close()
	sw, err := g.Switch(swtch.Config{SharedCPUs: true}) // the hosts run in this process
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Flare demo: a switch on %s (4 clusters × 8 cores), %d hosts over UDP, float32 sum, every element verified\n\n", sw.Addr(), d.Ranks)
	tw := newTable(w)
	fmt.Fprintln(tw, "size\talgo\tmedian\tp99\talgbw\tpackets/s\tretransmits\tverified\t")
	job := uint32(100)
	for _, size := range []int64{4 << 10, 192 << 10, 384 << 10, 1 << 20, 4 << 20} {
		for _, algo := range []string{"auto", "tree"} {
			job++
			c := Config{Switch: sw.Addr().String(), Job: job, Token: newToken(), Ranks: d.Ranks, Count: int(size / 4),
				DType: wire.Float32, Op: wire.OpSum, Algo: algo, Iters: d.Iters, Warmup: 1, Verify: true, Timeout: 30 * time.Second}
			res, err := Run(ctx, c)
			if err != nil {
				tw.Flush()
				return fmt.Errorf("%s %s: %w", units.FormatSize(size), algo, err)
			}
			blocks := (size + 1023) / 1024
			pps := float64(blocks*int64(d.Ranks)*2) / res.MedianS // data in + results out
			fmt.Fprintf(tw, "%s\t%s\t%.2f ms\t%.2f ms\t%.3f GB/s\t%.0f\t%d\t%s\t\n", units.FormatSize(size), res.Algo,
				res.MedianS*1e3, res.P99S*1e3, res.AlgbwGBps, pps, res.Retransmits, yesNo(res.Verified, res.Algo))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\npackets/s counts datagrams through the switch (P per block in, P per block out).")
	return nil
}
