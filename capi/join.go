package main

// #include "flare.h"
import "C"

import (
	"context"
	"math"
	"time"

	"github.com/flare-net/flare/conn"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// flare_go_join is flare_join: it converts *o, joins and stores the session
// behind a new handle in *out.
//
//export flare_go_join
func flare_go_join(o *C.flare_options, out *C.flare_session) C.int {
	if o == nil || out == nil {
		return failf("flare_join: opts and out must not be NULL")
	}
	*out = 0
	opts, code := options(o)
	if code != C.FLARE_OK {
		return code
	}
	s, err := hostlib.Join(context.Background(), opts)
	if err != nil {
		return fail(codeOf(err, true), err)
	}
	*out = register(&session{s: s, opts: opts})
	return C.FLARE_OK
}

// options converts the C options into hostlib's, checking what the C types
// allow and hostlib's cannot hold (a required field left 0, a negative
// count, milliseconds that overflow a Duration). hostlib checks the rest
// when joining, with messages naming its fields, which flare.h lists next
// to the C ones.
func options(o *C.flare_options) (hostlib.Options, C.int) {
	var opts hostlib.Options
	switch {
	case o.switch_addr == nil:
		return opts, failf(`switch_addr is NULL: give the switch's UDP address, e.g. "127.0.0.1:7470"`)
	case o.world == 0:
		return opts, failf("world is 0: required, 1..%d", hostlib.MaxWorld)
	case o.dtype == 0:
		return opts, failf("dtype is 0: required, one of FLARE_INT8 (1) .. FLARE_FLOAT16 (8)")
	case o.op == 0:
		return opts, failf("op is 0: required, FLARE_SUM (1) .. FLARE_XOR (7), or a custom op 128..255")
	case o.elements <= 0:
		return opts, failf("elements = %d: required, at least 1", int64(o.elements))
	case o.dtype < 0 || o.dtype > math.MaxUint8:
		return opts, failf("dtype = %d: must be FLARE_INT8 (1) .. FLARE_FLOAT16 (8)", int32(o.dtype))
	case o.op < 0 || o.op > math.MaxUint8:
		return opts, failf("op = %d: must be FLARE_SUM (1) .. FLARE_XOR (7), or a custom op 128..255", int32(o.op))
	case o.design < 0 || o.design > math.MaxUint8:
		return opts, failf("design = %d: must be FLARE_DESIGN_AUTO (0) .. FLARE_DESIGN_TREE (3)", int32(o.design))
	case o.storage < 0 || o.storage > math.MaxUint8:
		return opts, failf("storage = %d: must be FLARE_STORAGE_DEFAULT (0), _HASH (1) or _ARRAY (2)", int32(o.storage))
	case int64(o.elements) > math.MaxInt || int64(o.block_elems) > math.MaxInt:
		return opts, failf("elements = %d, block_elems = %d: too large for this machine", int64(o.elements), int64(o.block_elems))
	}
	deadline, code := millis("deadline_ms", o.deadline_ms)
	if code != C.FLARE_OK {
		return opts, code
	}
	joinTimeout, code := millis("join_timeout_ms", o.join_timeout_ms)
	if code != C.FLARE_OK {
		return opts, code
	}
	timeout, code := millis("timeout_ms", o.timeout_ms)
	if code != C.FLARE_OK {
		return opts, code
	}
	busyPoll, code := busyPoll(o.busy_poll_us)
	if code != C.FLARE_OK {
		return opts, code
	}
	opts = hostlib.Options{
		Switch:         C.GoString(o.switch_addr),
		Job:            uint32(o.job),
		Token:          uint64(o.token),
		Rank:           int(o.rank),
		World:          int(o.world),
		DType:          wire.DType(o.dtype),
		Op:             wire.Op(o.op),
		Elements:       int(o.elements),
		Algo:           wire.Algo(o.design),
		Buffers:        int(o.buffers),
		Reproducible:   o.reproducible != 0,
		PacketElems:    int(o.packet_elems),
		Sparse:         o.sparse != 0,
		Storage:        wire.Storage(o.storage),
		BlockElems:     int(o.block_elems),
		BlockDeadline:  deadline,
		JoinTimeout:    joinTimeout,
		Timeout:        timeout,
		DisableOffload: o.disable_offload != 0,
		Multicast:      o.multicast != 0,
		BusyPoll:       busyPoll,
	}
	return opts, C.FLARE_OK
}

// busyPoll converts busy_poll_us: 0 is conn.DefaultBusyPoll, since a C or
// Python caller is one rank in a process of its own; -1 is none.
func busyPoll(us C.int64_t) (time.Duration, C.int) {
	switch {
	case us == 0:
		return conn.DefaultBusyPoll, C.FLARE_OK
	case us == -1:
		return 0, C.FLARE_OK
	case us < 0 || int64(us) > conn.MaxBusyPoll.Microseconds():
		return 0, failf("busy_poll_us = %d: must be -1 (sleep at once), 0 (the default, %d) or 1..%d µs", int64(us),
			conn.DefaultBusyPoll.Microseconds(), conn.MaxBusyPoll.Microseconds())
	}
	return time.Duration(us) * time.Microsecond, C.FLARE_OK
}

// millis converts a field in milliseconds, 0 meaning hostlib's default.
func millis(field string, ms C.int64_t) (time.Duration, C.int) {
	if ms < 0 || int64(ms) > math.MaxInt64/int64(time.Millisecond) {
		return 0, failf("%s = %d: must be 0 (the default) or a positive number of milliseconds", field, int64(ms))
	}
	return time.Duration(ms) * time.Millisecond, C.FLARE_OK
}
