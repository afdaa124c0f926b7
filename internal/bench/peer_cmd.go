package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// PeerCmd is a host-based library's benchmark that a Suite runs itself,
// in turn with its own rows of every P and size and round
// (Suite.PeerCmds), so that a peer's time and the switch's come from the
// same spell of a shared machine; rows measured apart (Suite.Peers) may
// come from a quieter or a busier one.
type PeerCmd struct {
	// Name is the path of the rows it prints (mpi-tcp, gloo-ring).
	Name string
	// Command is a shell command line (sh -c) that measures one P and
	// size and prints one `flare bench --json` row (peers/row.h); {ranks},
	// {bytes}, {iters} and {warmup} in it are replaced by the row's P,
	// vector bytes, measured and warmup calls.
	Command string
}

// ParsePeerCmd reads NAME=COMMAND.
func ParsePeerCmd(s string) (PeerCmd, error) {
	name, cmd, ok := strings.Cut(s, "=")
	pc := PeerCmd{Name: strings.TrimSpace(name), Command: strings.TrimSpace(cmd)}
	if !ok || pc.Command == "" {
		return PeerCmd{}, fmt.Errorf("%q: want NAME=COMMAND, such as 'gloo-ring=bin/peers-gloo-ring --ranks {ranks} --bytes {bytes} --iters {iters}'", s)
	}
	if err := checkPeerName(pc.Name); err != nil {
		return PeerCmd{}, fmt.Errorf("%q: %w", s, err)
	}
	return pc, nil
}

// expand is the command line for a row of p ranks and size bytes.
func (pc PeerCmd) expand(p int, size int64, iters, warmup int) string {
	return strings.NewReplacer("{ranks}", strconv.Itoa(p), "{bytes}", strconv.FormatInt(size, 10),
		"{iters}", strconv.Itoa(iters), "{warmup}", strconv.Itoa(warmup)).Replace(pc.Command)
}

// run measures one row: the command's one row, for this P, size, dtype
// and op, under the peer's name.
func (pc PeerCmd) run(ctx context.Context, c Config, p int, size int64) (*Row, error) {
	line := pc.expand(p, size, c.Iters, c.Warmup)
	var out, errs bytes.Buffer
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("peer %s: %s: %w\n%s", pc.Name, line, err, strings.TrimSpace(errs.String()))
	}
	peers, err := ParsePeers(&out, "peer "+pc.Name+"'s output")
	if err != nil {
		return nil, err
	}
	if len(peers.rows) != 1 {
		return nil, fmt.Errorf("peer %s: %s printed %d rows, want one", pc.Name, line, len(peers.rows))
	}
	r := peers.rows[0]
	dt, op := c.DType.String(), c.Op.String()
	switch {
	case r.Path != pc.Name:
		return nil, fmt.Errorf("peer %s: %s printed a row of path %q, want %q", pc.Name, line, r.Path, pc.Name)
	case r.Ranks != p || r.Bytes != size || r.DType != dt || r.Op != op:
		return nil, fmt.Errorf("peer %s: %s printed a row of %d ranks, %d bytes of %s %s; want %d, %d of %s %s",
			pc.Name, line, r.Ranks, r.Bytes, r.DType, r.Op, p, size, dt, op)
	case !r.Verified:
		return nil, fmt.Errorf("peer %s: %s: its sums were not verified", pc.Name, line)
	}
	return &r, nil
}

// validatePeerCmds refuses peer commands where the dense table does not
// run, beside rows measured apart, and a name twice.
func (s Suite) validatePeerCmds() error {
	switch {
	case len(s.PeerCmds) == 0:
		return nil
	case s.Peers != nil:
		return fmt.Errorf("Suite.PeerCmds with Suite.Peers: give the peers' rows measured apart or the commands that measure them in turn, not both")
	case s.Sparse || s.Tree != (TreeShape{}):
		return fmt.Errorf("Suite.PeerCmds: the peers are measured in the dense table only, not with Sparse or Tree")
	}
	seen := map[string]bool{}
	for _, pc := range s.PeerCmds {
		if seen[pc.Name] {
			return fmt.Errorf("Suite.PeerCmds %q: given twice", pc.Name)
		}
		seen[pc.Name] = true
	}
	return nil
}
