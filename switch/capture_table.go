package swtch

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/flare-net/flare/wire"
)

// WriteCaptureTable prints every Flare packet c reads as a row of a
// table: the time since the first packet, the direction, the addresses
// and the header fields (`flare decode`). On a read error it prints
// nothing and returns the error.
func WriteCaptureTable(w io.Writer, c *CaptureReader) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "time\tdir\tsrc\tdst\ttype\tjob\tgen\tblock\tchild\tcount\tflags")
	var first int64
	for n := 0; ; n++ {
		p, err := c.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if n == 0 {
			first = p.Time.UnixNano()
		}
		h := &p.Header
		fmt.Fprintf(tw, "%.6f\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", float64(p.Time.UnixNano()-first)/1e9,
			p.Dir, p.Src, p.Dst, h.Type, h.Job, h.Generation, h.Block, h.Child, h.Count, flagNames(h.Flags))
	}
	return tw.Flush()
}

// flagNames lists the set flags, "-" for none.
func flagNames(f wire.Flags) string {
	var names []string
	for _, x := range []struct {
		f    wire.Flags
		name string
	}{{wire.FlagLast, "last"}, {wire.FlagRetransmit, "retransmit"}, {wire.FlagPartial, "partial"}, {wire.FlagFromSwitch, "from-switch"}, {wire.FlagGroup, "group"}} {
		if f&x.f != 0 {
			names = append(names, x.name)
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
