// Package inproc runs switches, relays and trees of switches inside this
// process: the embedded switch and relays of `flare bench`, the tree of
// `flare bench --tree`, the switch of `flare demo`, and the switches the
// tests start. A Group starts each one, waits until it listens, and stops
// them all at Close.
//
//	g := inproc.New(ctx)
//	defer g.Close()
//	sw, err := g.Switch(swtch.Config{})          // 127.0.0.1:0, no admin port, quiet
//	tree, err := g.Tree(4, swtch.Config{HPU: ...}) // a root and 4 leaves
package inproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	swtch "github.com/flare-net/flare/switch"
)

// Server is what a Group runs: a switch or a relay.
type Server interface {
	Run(ctx context.Context) error
	Ready() <-chan struct{}
}

var (
	_ Server = (*swtch.Switch)(nil)
	_ Server = (*swtch.Relay)(nil)
)

// Group runs servers until Close. Its methods may be called from one
// goroutine at a time.
type Group struct {
	ctx    context.Context // the caller's: a start gives up when it is done
	run    context.Context // the servers': cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error // the first error a server's Run returned
}

// New makes an empty group. A start gives up when ctx is done; the
// servers run until Close.
func New(ctx context.Context) *Group {
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &Group{ctx: ctx, run: run, cancel: cancel}
}

// Defaults fills what an in-process switch leaves unset: a loopback
// port chosen by the kernel (unless Conn is given), no admin port, and a
// logger that discards.
func Defaults(cfg swtch.Config) swtch.Config {
	if cfg.Listen == "" && cfg.Conn == nil && len(cfg.Conns) == 0 {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Admin == "" {
		cfg.Admin = "off"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return cfg
}

// Start runs srv until Close and returns once it is ready, or with the
// error it stopped with before, or when the group's context is done.
func (g *Group) Start(srv Server) error {
	done := make(chan error, 1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := srv.Run(g.run)
		if err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
		done <- err
	}()
	select {
	case <-srv.Ready():
		return nil
	case err := <-done:
		if err == nil {
			err = errors.New("stopped before it was ready")
		}
		return err
	case <-g.ctx.Done():
		return fmt.Errorf("starting: %w", context.Cause(g.ctx))
	}
}

// Switch builds a switch of Defaults(cfg) and starts it.
func (g *Group) Switch(cfg swtch.Config) (*swtch.Switch, error) {
	sw, err := swtch.New(Defaults(cfg))
	if err != nil {
		return nil, err
	}
	if err := g.Start(sw); err != nil {
		return nil, fmt.Errorf("switch: %w", err)
	}
	return sw, nil
}

// Relay builds an echo relay (fanout false) or a fan-out relay of
// Defaults(cfg) and starts it.
func (g *Group) Relay(fanout bool, cfg swtch.Config) (*swtch.Relay, error) {
	build := swtch.NewRelay
	if fanout {
		build = swtch.NewFanoutRelay
	}
	r, err := build(Defaults(cfg))
	if err != nil {
		return nil, err
	}
	if err := g.Start(r); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return r, nil
}

// Tree is a root switch and the leaf switches under it.
type Tree struct {
	Root   *swtch.Switch
	Leaves []*swtch.Switch
}

// Addrs is the leaves' data addresses, comma-separated: hostlib's and
// `flare allreduce --switch`'s list of a tree's switches.
func (t *Tree) Addrs() string {
	addrs := make([]string, len(t.Leaves))
	for i, l := range t.Leaves {
		addrs[i] = l.Addr().String()
	}
	return strings.Join(addrs, ",")
}

// Tree starts a root of leaves child switches, then the leaves under it,
// every one of Defaults(cfg) with its place in the tree set.
func (g *Group) Tree(leaves int, cfg swtch.Config) (*Tree, error) {
	rc := cfg
	rc.Children = leaves
	root, err := g.Switch(rc)
	if err != nil {
		return nil, fmt.Errorf("the tree's root: %w", err)
	}
	t := &Tree{Root: root}
	for i := range leaves {
		lc := cfg
		lc.Parent, lc.ChildIndex = root.Addr().String(), i
		leaf, err := g.Switch(lc)
		if err != nil {
			return nil, fmt.Errorf("the tree's leaf %d: %w", i, err)
		}
		t.Leaves = append(t.Leaves, leaf)
	}
	return t, nil
}

// Close stops every server, waits for them and returns the first error a
// server's Run returned (a start's error included).
func (g *Group) Close() error {
	g.cancel()
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
