package main

/*
#include <stdlib.h>
#include "flare.h"
*/
import "C"

import (
	"context"
	"math"
	"unsafe"

	"github.com/flare-net/flare/elem"
	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/wire"
)

// flare_go_allreduce is flare_allreduce: buf is C memory, viewed as a Go
// slice for the call only (hostlib drops its reference when a call ends).
//
//export flare_go_allreduce
func flare_go_allreduce(h C.flare_session, buf unsafe.Pointer, count C.size_t, dtype, op C.int) C.int {
	s, code := lookup(h)
	if code != C.FLARE_OK {
		return code
	}
	if code := s.check("flare_allreduce", count, dtype, op); code != C.FLARE_OK {
		return code
	}
	if buf == nil {
		return failf("flare_allreduce: buf is NULL")
	}
	if s.opts.Sparse {
		return failf("flare_allreduce: the session joined a sparse job: use flare_sparse_allreduce")
	}
	var err error
	switch n := int(count); s.opts.DType {
	case wire.Int8:
		err = dense[int8](s, buf, n)
	case wire.Int16:
		err = dense[int16](s, buf, n)
	case wire.Int32:
		err = dense[int32](s, buf, n)
	case wire.Int64:
		err = dense[int64](s, buf, n)
	case wire.Float32:
		err = dense[float32](s, buf, n)
	case wire.Float64:
		err = dense[float64](s, buf, n)
	case wire.BFloat16:
		err = dense[elem.BFloat16](s, buf, n)
	case wire.Float16:
		err = dense[elem.Float16](s, buf, n)
	default: // join admits only valid dtypes: this is a dtype the switch above lacks
		return failf("flare_allreduce: internal error: no element type for dtype %v", s.opts.DType)
	}
	if err != nil {
		return fail(codeOf(err, false), err)
	}
	return C.FLARE_OK
}

// dense reduces n elements of T at p in place.
func dense[T hostlib.Element](s *session, p unsafe.Pointer, n int) error {
	return hostlib.AllReduce(context.Background(), s.s, unsafe.Slice((*T)(p), n))
}

// check compares a call's count, dtype and op with the job's, naming what
// differs in C's terms.
func (s *session) check(fn string, count C.size_t, dtype, op C.int) C.int {
	switch {
	case dtype != C.int(s.opts.DType):
		return failf("%s: dtype = %d, but the session's dtype is %d (%v): the dtype is fixed at flare_join",
			fn, int(dtype), int(s.opts.DType), s.opts.DType)
	case op != C.int(s.opts.Op):
		return failf("%s: op = %d, but the job reduces with %d (%s): the op is fixed at flare_join",
			fn, int(op), int(s.opts.Op), elem.OpName(s.opts.Op))
	case !s.opts.Sparse && uint64(count) != uint64(s.opts.Elements):
		return failf("%s: count = %d, but the job's vector has %d elements", fn, uint64(count), s.opts.Elements)
	case s.opts.Sparse && uint64(count) > uint64(s.opts.Elements):
		return failf("%s: count = %d pairs, more than the job's %d indices", fn, uint64(count), s.opts.Elements)
	}
	return C.FLARE_OK
}

// flare_go_sparse_allreduce is flare_sparse_allreduce. The C side zeroed
// *out; on success it gets malloc'd arrays the caller frees.
//
//export flare_go_sparse_allreduce
func flare_go_sparse_allreduce(h C.flare_session, idx *C.uint32_t, val unsafe.Pointer, count C.size_t, dtype, op C.int, out *C.flare_sparse_result) C.int {
	s, code := lookup(h)
	if code != C.FLARE_OK {
		return code
	}
	switch {
	case out == nil:
		return failf("flare_sparse_allreduce: out is NULL")
	case !s.opts.Sparse:
		return failf("flare_sparse_allreduce: the session joined a dense job: use flare_allreduce, or join with sparse = 1")
	case count > 0 && (idx == nil || val == nil):
		return failf("flare_sparse_allreduce: indices or values is NULL with count = %d", uint64(count))
	}
	if code := s.check("flare_sparse_allreduce", count, dtype, op); code != C.FLARE_OK {
		return code
	}
	n := int(count)
	ix := unsafe.Slice((*uint32)(unsafe.Pointer(idx)), n)
	var err error
	switch s.opts.DType {
	case wire.Int8:
		err = sparse[int8](s, ix, val, n, out)
	case wire.Int16:
		err = sparse[int16](s, ix, val, n, out)
	case wire.Int32:
		err = sparse[int32](s, ix, val, n, out)
	case wire.Int64:
		err = sparse[int64](s, ix, val, n, out)
	case wire.Float32:
		err = sparse[float32](s, ix, val, n, out)
	case wire.Float64:
		err = sparse[float64](s, ix, val, n, out)
	case wire.BFloat16:
		err = sparse[elem.BFloat16](s, ix, val, n, out)
	case wire.Float16:
		err = sparse[elem.Float16](s, ix, val, n, out)
	default: // as in flare_go_allreduce
		return failf("flare_sparse_allreduce: internal error: no element type for dtype %v", s.opts.DType)
	}
	if err != nil {
		return fail(codeOf(err, false), err)
	}
	return C.FLARE_OK
}

// sparse reduces n pairs and copies the result into C memory at *out.
func sparse[T hostlib.Element](s *session, idx []uint32, val unsafe.Pointer, n int, out *C.flare_sparse_result) error {
	ri, rv, err := hostlib.SparseAllReduce(context.Background(), s.s, idx, unsafe.Slice((*T)(val), n))
	if err != nil {
		return err
	}
	if len(ri) == 0 {
		return nil
	}
	var v T
	ci := (*uint32)(C.malloc(C.size_t(len(ri)) * 4))
	cv := (*T)(C.malloc(C.size_t(len(rv)) * C.size_t(unsafe.Sizeof(v))))
	if ci == nil || cv == nil {
		C.free(unsafe.Pointer(ci))
		C.free(unsafe.Pointer(cv))
		return errNoMemory
	}
	copy(unsafe.Slice(ci, len(ri)), ri)
	copy(unsafe.Slice(cv, len(rv)), rv)
	out.indices, out.values, out.count = (*C.uint32_t)(unsafe.Pointer(ci)), unsafe.Pointer(cv), C.size_t(len(ri))
	return nil
}

// flare_go_stats is flare_stats.
//
//export flare_go_stats
func flare_go_stats(h C.flare_session, out *C.flare_counters) C.int {
	s, code := lookup(h)
	if code != C.FLARE_OK {
		return code
	}
	if out == nil {
		return failf("flare_stats: out is NULL")
	}
	st := s.s.Stats()
	*out = C.flare_counters{
		calls: C.uint64_t(st.Calls), failed: C.uint64_t(st.Failed),
		packets_sent: C.uint64_t(st.PacketsSent), packets_received: C.uint64_t(st.PacketsReceived),
		retransmits: C.uint64_t(st.Retransmits), duplicates: C.uint64_t(st.Duplicates),
		ignored: C.uint64_t(st.Ignored), partial: C.uint64_t(st.Partial),
		send_errors: C.uint64_t(st.SendErrors), bytes_sent: C.uint64_t(st.BytesSent),
		bytes_received: C.uint64_t(st.BytesReceived), spilled_pairs: C.uint64_t(st.SpilledPairs),
		last_ns: C.int64_t(st.LastDuration), total_ns: C.int64_t(st.TotalDuration),
	}
	return C.FLARE_OK
}

// flare_go_info is flare_info.
//
//export flare_go_info
func flare_go_info(h C.flare_session, out *C.flare_session_info) C.int {
	s, code := lookup(h)
	if code != C.FLARE_OK {
		return code
	}
	if out == nil {
		return failf("flare_info: out is NULL")
	}
	*out = C.flare_session_info{
		rank: C.int32_t(s.s.Rank()), world: C.int32_t(s.s.World()),
		dtype: C.int32_t(s.opts.DType), op: C.int32_t(s.opts.Op), elements: C.int64_t(s.opts.Elements),
		design: C.int32_t(s.s.Algo()), buffers: C.int32_t(s.s.Buffers()), window: C.int32_t(s.s.Window()),
		packet_elems: C.int32_t(s.s.PacketElems()), blocks: C.int64_t(s.s.Blocks()),
	}
	return C.FLARE_OK
}

// flare_go_contributors is flare_contributors.
//
//export flare_go_contributors
func flare_go_contributors(h C.flare_session, out *C.uint16_t, capacity C.size_t, n *C.size_t) C.int {
	s, code := lookup(h)
	if code != C.FLARE_OK {
		return code
	}
	switch {
	case n == nil:
		return failf("flare_contributors: n is NULL")
	case out == nil && capacity > 0:
		return failf("flare_contributors: out is NULL with cap = %d", uint64(capacity))
	}
	c := s.s.Contributors()
	*n = C.size_t(len(c))
	if k := min(uint64(capacity), uint64(len(c)), math.MaxInt); k > 0 {
		copy(unsafe.Slice((*uint16)(unsafe.Pointer(out)), int(k)), c)
	}
	return C.FLARE_OK
}

// flare_go_close is flare_close.
//
//export flare_go_close
func flare_go_close(h C.flare_session) C.int {
	s, code := unregister(h)
	if code != C.FLARE_OK {
		return code
	}
	if err := s.s.Close(); err != nil {
		return fail(C.FLARE_EIO, err)
	}
	return C.FLARE_OK
}
