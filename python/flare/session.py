"""flare.Session: one rank's membership in a job on a Flare switch."""

import ctypes
import dataclasses
import datetime
import sys
import threading

from . import _lib
from .buffers import view, is_tensor, name
from .dtypes import DESIGNS, STORAGES, dtype_code, op_code, SIZES, OP_NAMES, NAMES
from .errors import InvalidArgumentError, HandleError, EINVAL, EHANDLE

__all__ = ["Session", "Stats", "Info"]


@dataclasses.dataclass(frozen=True)
class Stats:
    """A session's counters (flare_counters of flare.h); durations in seconds."""
    calls: int
    failed: int
    packets_sent: int
    packets_received: int
    retransmits: int
    duplicates: int
    ignored: int
    partial: int
    send_errors: int
    bytes_sent: int
    bytes_received: int
    spilled_pairs: int
    last_seconds: float
    total_seconds: float


@dataclasses.dataclass(frozen=True)
class Info:
    """The parameters the switch admitted the session with."""
    rank: int
    world: int
    dtype: str
    op: str
    elements: int
    design: str
    buffers: int
    window: int
    packet_elems: int
    blocks: int


def _millis(field, v):
    """Seconds (a number or a timedelta) as whole milliseconds; None or 0 is the default."""
    if v is None:
        return 0
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if v < 0:
        raise InvalidArgumentError(EINVAL, f"flare: {field} = {v}: must be positive seconds (or None for the default)")
    return int(round(v * 1000))


def _busy_poll_us(v):
    """busy_poll in seconds (a number or a timedelta) as flare_options'
    busy_poll_us: None is 0 (the default, 50 µs), 0 is -1 (sleep at once),
    anything else whole microseconds, at least one; the library checks
    the upper bound."""
    if v is None:
        return 0
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if v < 0:
        raise InvalidArgumentError(EINVAL, f"flare: busy_poll = {v}: must be 0 (sleep at once) or positive seconds, at most 0.01 "
                                           "(or None for the default, 50 µs)")
    if v == 0:
        return -1
    return max(1, int(round(v * 1e6)))


class Session:
    """One rank's membership in an allreduce job on a Flare switch.

    Joining returns once all world ranks have joined. Every rank of a job
    gives the same job, token, world, dtype, op, elements and design; the
    op and the vector's length are fixed for the session, as the switch
    sets up its handler for them. Timeouts are in seconds; deadline (bounded
    time) in seconds, whole milliseconds, 0 for exact results. multicast
    asks for the results on the job's multicast group (a switch run with
    --multicast; the job runs unicast unless every rank asks). busy_poll
    is how long, in seconds, the session's sockets keep polling once they
    find nothing to read before they sleep: None for 50 µs (this process
    is one rank, whose CPU would otherwise sleep between a call's
    datagrams), 0 to sleep at once, at most 0.01.

        with flare.Session("127.0.0.1:7470", job=7, token=secret, rank=r, world=4,
                           dtype="float32", op="sum", elements=grad.size) as s:
            s.allreduce(grad)      # in place: grad now holds the sum over the ranks
    """

    def __init__(self, switch, *, job, rank, world, dtype, elements, op="sum", token=0, design="auto",
                 buffers=0, reproducible=False, packet_elems=0, sparse=False, storage=None, block_elems=0,
                 deadline=0, join_timeout=None, timeout=None, disable_offload=False,
                 multicast=False, busy_poll=None):
        if design not in DESIGNS:
            raise InvalidArgumentError(EINVAL, f"flare: design {design!r}: must be one of {', '.join(DESIGNS)}")
        if storage not in STORAGES:
            raise InvalidArgumentError(EINVAL, f"flare: storage {storage!r}: must be None (hash), 'hash' or 'array'")
        o = _lib.Options(
            switch_addr=str(switch).encode(), job=job, token=token, rank=rank, world=world,
            dtype=dtype_code(dtype), op=op_code(op), elements=elements, design=DESIGNS[design],
            buffers=buffers, reproducible=int(bool(reproducible)), packet_elems=packet_elems,
            sparse=int(bool(sparse)), storage=STORAGES[storage], block_elems=block_elems,
            deadline_ms=_millis("deadline", deadline), join_timeout_ms=_millis("join_timeout", join_timeout),
            timeout_ms=_millis("timeout", timeout), disable_offload=int(bool(disable_offload)),
            multicast=int(bool(multicast)), busy_poll_us=_busy_poll_us(busy_poll))
        self._lib = _lib.lib()
        h = ctypes.c_uint64()
        _lib.check(self._lib.flare_join(ctypes.byref(o), ctypes.byref(h)))
        self._h = h.value
        self._lock = threading.Lock()
        self.dtype, self.op, self.elements = o.dtype, o.op, o.elements
        self.sparse = bool(sparse)

    # The handle, or an error if closed.
    def _handle(self):
        if self._h is None:
            raise HandleError(EHANDLE, "flare: the session is closed")
        return self._h

    def allreduce(self, x, op=None):
        """Reduce x across every rank in place and return it. x is a
        C-contiguous numpy array or a contiguous CPU tensor of the
        session's dtype with the session's number of elements; op, if
        given, must be the session's."""
        code = self._op(op)
        addr, n, dt = view(x, "x")
        self._check(dt, n)
        _lib.check(self._lib.flare_allreduce(self._handle(), addr, n, dt, code))
        return x

    def sparse_allreduce(self, indices, values, op=None):
        """Reduce (index, value) pairs across every rank: indices strictly
        increasing and below elements, values of the session's dtype. Returns
        (indices, values) of the union of every rank's indices, as numpy
        arrays (uint32 indices), or as tensors when values is a tensor."""
        code = self._op(op)
        idx, keep = self._indices(indices)
        vaddr, n, dt = view(values, "values", writable=False)
        self._check(dt, None)
        if n != len(idx):
            raise InvalidArgumentError(EINVAL, f"flare: {len(idx)} indices but {n} values")
        res = _lib.SparseResult()
        _lib.check(self._lib.flare_sparse_allreduce(self._handle(), idx.ctypes.data, vaddr, n, dt, code, ctypes.byref(res)))
        try:
            return self._copy_result(res, values)
        finally:
            self._lib.flare_sparse_free(ctypes.byref(res))
            del keep

    def _indices(self, indices):
        import numpy as np
        if is_tensor(indices):
            indices = indices.detach().cpu().numpy()
        a = np.asarray(indices)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise InvalidArgumentError(EINVAL, f"flare: indices must be a 1-D integer array, not {a.dtype} of shape {a.shape}")
        if a.size and (a.min() < 0 or a.max() >= self.elements):
            raise InvalidArgumentError(EINVAL, f"flare: indices must be in 0..{self.elements - 1} (the job's elements)")
        u = np.ascontiguousarray(a, dtype=np.uint32)
        return u, (a, u)

    def _copy_result(self, res, like):
        import numpy as np
        n = res.count
        size = SIZES[self.dtype]
        idx = np.empty(n, dtype=np.uint32)
        raw = np.empty(n * size, dtype=np.uint8)
        if n:
            ctypes.memmove(idx.ctypes.data, res.indices, n * 4)
            ctypes.memmove(raw.ctypes.data, res.values, n * size)
        if is_tensor(like):
            import torch
            t = torch.from_numpy(raw).view(like.dtype)
            return torch.from_numpy(idx.astype(np.int64)), t
        return idx, raw.view(np.dtype(NAMES[self.dtype]))

    def _op(self, op):
        if op is None:
            return self.op
        code = op_code(op)
        if code != self.op:
            raise InvalidArgumentError(EINVAL, f"flare: op {op!r}, but the session reduces with "
                                       f"{OP_NAMES.get(self.op, self.op)}: the op is fixed when joining")
        return code

    def _check(self, dt, n):
        if dt != self.dtype:
            raise InvalidArgumentError(EINVAL, f"flare: a {name(dt)} buffer, but the session's dtype is {name(self.dtype)}")
        if n is not None and n != self.elements:
            raise InvalidArgumentError(EINVAL, f"flare: {n} elements, but the job's vector has {self.elements}")

    def stats(self):
        """The session's counters (Stats)."""
        c = _lib.Counters()
        _lib.check(self._lib.flare_stats(self._handle(), ctypes.byref(c)))
        vals = {k: getattr(c, k) for k in _lib.COUNTER_NAMES}
        return Stats(**vals, last_seconds=c.last_ns / 1e9, total_seconds=c.total_ns / 1e9)

    def info(self):
        """The parameters the switch admitted (Info)."""
        i = _lib.Info()
        _lib.check(self._lib.flare_info(self._handle(), ctypes.byref(i)))
        design = {v: k for k, v in DESIGNS.items()}[i.design]
        return Info(i.rank, i.world, NAMES[i.dtype], OP_NAMES.get(i.op, str(i.op)), i.elements, design,
                    i.buffers, i.window, i.packet_elems, i.blocks)

    def contributors(self):
        """Bounded time (deadline > 0): how many ranks each block of the
        last call holds, a list with one count per block (packet_elems
        elements each); [] for exact jobs."""
        n = ctypes.c_size_t()
        _lib.check(self._lib.flare_contributors(self._handle(), None, 0, ctypes.byref(n)))
        buf = (ctypes.c_uint16 * n.value)()
        _lib.check(self._lib.flare_contributors(self._handle(), buf, n.value, ctypes.byref(n)))
        return list(buf)

    def close(self):
        """Leave the job. Idempotent."""
        with self._lock:
            h, self._h = self._h, None
        if h is not None:
            _lib.check(self._lib.flare_close(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        # A session dropped without close leaves the job; never in a
        # forked child (the library refuses there) or at interpreter exit.
        if getattr(self, "_h", None) is not None and not sys.is_finalizing():
            try:
                self.close()
            except Exception:
                pass
