"""Loading libflare.so with ctypes, and the process it belongs to.

libflare runs Go's runtime, whose threads a fork does not copy: a child
forked after the library was loaded hangs as soon as it enters Go. The
library itself refuses such calls (FLARE_EFORK); this module refuses
earlier, at load and at every call, with ForkError naming both processes.
"""

import ctypes
import os
import pathlib
import threading

from .errors import ForkError, EFORK, error_for

_lock = threading.Lock()
_lib = None
_loader_pid = None


class Options(ctypes.Structure):
    """flare_options of flare.h, field for field."""

    _fields_ = [
        ("switch_addr", ctypes.c_char_p), ("job", ctypes.c_uint32), ("token", ctypes.c_uint64),
        ("rank", ctypes.c_int32), ("world", ctypes.c_int32), ("dtype", ctypes.c_int32),
        ("op", ctypes.c_int32), ("elements", ctypes.c_int64), ("design", ctypes.c_int32),
        ("buffers", ctypes.c_int32), ("reproducible", ctypes.c_int32), ("packet_elems", ctypes.c_int32),
        ("sparse", ctypes.c_int32), ("storage", ctypes.c_int32), ("block_elems", ctypes.c_int64),
        ("deadline_ms", ctypes.c_int64), ("join_timeout_ms", ctypes.c_int64), ("timeout_ms", ctypes.c_int64),
        ("disable_offload", ctypes.c_int32), ("multicast", ctypes.c_int32), ("busy_poll_us", ctypes.c_int64),
    ]


class Info(ctypes.Structure):
    """flare_session_info of flare.h."""

    _fields_ = [
        ("rank", ctypes.c_int32), ("world", ctypes.c_int32), ("dtype", ctypes.c_int32), ("op", ctypes.c_int32),
        ("elements", ctypes.c_int64), ("design", ctypes.c_int32), ("buffers", ctypes.c_int32),
        ("window", ctypes.c_int32), ("packet_elems", ctypes.c_int32), ("blocks", ctypes.c_int64),
    ]


COUNTER_NAMES = ["calls", "failed", "packets_sent", "packets_received", "retransmits", "duplicates",
                 "ignored", "partial", "send_errors", "bytes_sent", "bytes_received", "spilled_pairs"]


class Counters(ctypes.Structure):
    """flare_counters of flare.h."""

    _fields_ = [(n, ctypes.c_uint64) for n in COUNTER_NAMES] + [("last_ns", ctypes.c_int64), ("total_ns", ctypes.c_int64)]


class SparseResult(ctypes.Structure):
    """flare_sparse_result of flare.h."""

    _fields_ = [("indices", ctypes.POINTER(ctypes.c_uint32)), ("values", ctypes.c_void_p), ("count", ctypes.c_size_t)]


def _find():
    """libflare.so's path: $FLARE_LIB, else the copy installed with the
    package, else bin/ of the source tree this file is in."""
    env = os.environ.get("FLARE_LIB")
    if env:
        return env
    here = pathlib.Path(__file__).resolve().parent
    for p in (here / "libflare.so", here.parent.parent / "bin" / "libflare.so"):
        if p.exists():
            return str(p)
    raise OSError("libflare.so not found: run `make python` (or `make lib` and set FLARE_LIB=bin/libflare.so)")


def _forked_error():
    return ForkError(EFORK, (
        f"flare: process {os.getpid()} was forked from process {_loader_pid} after that process loaded "
        "libflare: its Go runtime does not survive fork, and using it here would hang. Start workers with "
        "multiprocessing's 'spawn' or 'forkserver' method (torch.multiprocessing.spawn does), and use flare there"))


def lib():
    """The loaded library, loading it on first use. In a child forked
    after the load it raises ForkError instead of hanging."""
    global _lib, _loader_pid
    with _lock:
        if _lib is not None:
            if os.getpid() != _loader_pid:
                raise _forked_error()
            return _lib
        l = ctypes.CDLL(_find())  # CDLL calls release the GIL
        _declare(l)
        _loader_pid = os.getpid()
        _lib = l
        return l


def _declare(l):
    c_int, c_size, c_u64, c_void = ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_void_p
    sigs = {
        "flare_join": (c_int, [ctypes.POINTER(Options), ctypes.POINTER(c_u64)]),
        "flare_allreduce": (c_int, [c_u64, c_void, c_size, c_int, c_int]),
        "flare_sparse_allreduce": (c_int, [c_u64, c_void, c_void, c_size, c_int, c_int, ctypes.POINTER(SparseResult)]),
        "flare_sparse_free": (None, [ctypes.POINTER(SparseResult)]),
        "flare_stats": (c_int, [c_u64, ctypes.POINTER(Counters)]),
        "flare_info": (c_int, [c_u64, ctypes.POINTER(Info)]),
        "flare_contributors": (c_int, [c_u64, ctypes.POINTER(ctypes.c_uint16), c_size, ctypes.POINTER(c_size)]),
        "flare_close": (c_int, [c_u64]),
        "flare_last_error": (ctypes.c_char_p, []),
        "flare_version": (ctypes.c_char_p, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(l, name)
        f.restype, f.argtypes = res, args


def check(code):
    """Raise the exception for a nonzero result code, with the message the
    library kept for this thread (read on the same thread, right after)."""
    if code != 0:
        raise error_for(code, _lib.flare_last_error().decode("utf-8", "replace"))


def version():
    """libflare's version string."""
    return lib().flare_version().decode()
