"""Flare in-network allreduce from Python.

A Session joins a job on a Flare switch (`flare switch`) and reduces numpy
arrays and CPU torch tensors in place through it:

    import flare
    with flare.Session("127.0.0.1:7470", job=7, token=secret, rank=rank, world=4,
                       dtype="float32", op="sum", elements=x.size) as s:
        s.allreduce(x)

flare.torch adds the PyTorch distributed backend "flare" and a DDP comm
hook; docs/PYTORCH.md covers them. The package loads libflare.so (ctypes)
on first use; in a child forked after that it raises ForkError.
"""

from .errors import (FlareError, InvalidArgumentError, HandleError, RefusedError, TimeoutError,
                     SwitchError, ClosedError, ForkError, FlareOSError, AbortedError)
from .dtypes import DTYPES, OPS, DESIGNS, supported
from .session import Session, Stats, Info
from ._lib import version

__all__ = [
    "Session", "Stats", "Info", "version", "DTYPES", "OPS", "DESIGNS", "supported",
    "FlareError", "InvalidArgumentError", "HandleError", "RefusedError", "TimeoutError",
    "SwitchError", "ClosedError", "ForkError", "FlareOSError", "AbortedError",
]
