//go:build linux

package conn

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// listenUDPGroup binds g.Sockets sockets to addr with SO_REUSEPORT: the
// first one picks the port when addr's is 0, the others join it. The
// first binds without SO_REUSEPORT and sets it only once bound: a bind
// with it may share a port another group of the same user holds (one
// picked for port 0, too: 156 of 3,000 groups bound at once here did),
// and the two groups' datagrams would then mix. Bound alone first, the
// port is this group's, or the bind fails as the address is in use. With
// g.ByKey a classic BPF program on the group returns each datagram's
// socket (the key mod the sockets); if the kernel refuses it the group
// keeps the kernel's flow hash, and says so.
func listenUDPGroup(addr string, cfg Config, g GroupConfig) ([]Conn, Steering, error) {
	conns := make([]Conn, 0, g.Sockets)
	fail := func(err error) ([]Conn, Steering, error) {
		for _, c := range conns {
			c.Close()
		}
		return nil, SteerFlow, fmt.Errorf("listen udp %s (socket %d of a group of %d): %w", addr, len(conns)+1, g.Sockets, err)
	}
	bind := addr
	for range g.Sockets {
		pc, err := listenMember(bind, len(conns) == 0)
		if err != nil {
			return fail(err)
		}
		c, err := newMmsgConn(pc, bind, cfg)
		if err != nil {
			return fail(err)
		}
		conns = append(conns, c)
		if len(conns) == 1 {
			// The others bind the first one's port (port 0 picked it).
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return fail(err)
			}
			bind = net.JoinHostPort(host, strconv.Itoa(int(c.LocalAddr().Port())))
		}
	}
	steer := SteerFlow
	if g.ByKey {
		if err := attachKeySteering(conns[0].(*mmsgConn), g); err == nil {
			steer = SteerKey
		}
	}
	return conns, steer, nil
}

// listenMember binds one socket of a group: the first alone, with
// SO_REUSEPORT set once it holds the port, the others with it set before
// the bind, to join the first.
func listenMember(addr string, first bool) (*net.UDPConn, error) {
	if !first {
		lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error { return reusePort(rc) }}
		pc, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			return nil, err
		}
		return pc.(*net.UDPConn), nil
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	uc := pc.(*net.UDPConn)
	rc, err := uc.SyscallConn()
	if err == nil {
		err = reusePort(rc)
	}
	if err != nil {
		uc.Close()
		return nil, err
	}
	return uc, nil
}

// reusePort sets SO_REUSEPORT on the socket of rc.
func reusePort(rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setsockopt SO_REUSEPORT: %w", serr)
	}
	return nil
}

// keyProgram is the steering program: with g.Only, datagrams whose byte
// there is outside the range return 0 (socket 0); the others load the
// big-endian word at the key's offset of the UDP payload (the kernel runs
// reuseport programs with the data past the UDP header), shift it right by
// g.KeyShift, take it mod the sockets and return it as the socket's index.
// A datagram too short for a load ends the program with 0: socket 0.
func keyProgram(g GroupConfig) ([]bpf.RawInstruction, error) {
	key := []bpf.Instruction{bpf.LoadAbsolute{Off: uint32(g.KeyOffset), Size: 4}}
	if g.KeyShift > 0 {
		key = append(key, bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: uint32(g.KeyShift)})
	}
	key = append(key, bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: uint32(g.Sockets)}, bpf.RetA{})
	var prog []bpf.Instruction
	if r := g.Only; r != nil {
		n := uint8(len(key)) // the key's instructions, jumped over to ret 0
		prog = append(prog,
			bpf.LoadAbsolute{Off: uint32(r.Offset), Size: 1},
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(r.Min), SkipFalse: n + 1},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(r.Max), SkipTrue: n},
		)
	}
	prog = append(prog, key...)
	if g.Only != nil {
		prog = append(prog, bpf.RetConstant{Val: 0})
	}
	return bpf.Assemble(prog)
}

// attachKeySteering attaches the steering program to c's group.
func attachKeySteering(c *mmsgConn, g GroupConfig) error {
	raw, err := keyProgram(g)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	var serr error
	if err := c.rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_CBPF, &prog)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setsockopt SO_ATTACH_REUSEPORT_CBPF: %w", serr)
	}
	return nil
}
