"""Views of numpy arrays and torch tensors as (pointer, count, dtype code):
what libflare reads and writes in place during a call. numpy and torch
are imported only when an object of theirs is passed."""

import sys

from .dtypes import DTYPES, NAMES
from .errors import InvalidArgumentError, EINVAL


def _bad(msg):
    return InvalidArgumentError(EINVAL, "flare: " + msg)


def is_tensor(x):
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def view(x, what="buffer", writable=True):
    """(address, elements, dtype code) of x's memory: a C-contiguous numpy
    array, or a contiguous CPU torch tensor. The caller keeps x alive for
    the call."""
    if is_tensor(x):
        return _tensor_view(x, what)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        return _array_view(np, x, what, writable)
    raise _bad(f"{what} is a {type(x).__name__}: pass a numpy array or a torch tensor")


def _array_view(np, a, what, writable):
    name = a.dtype.name
    if name not in DTYPES:
        raise _bad(f"{what} has dtype {name}: flare reduces {', '.join(n for n in DTYPES if n != 'bfloat16')} "
                   "numpy arrays (bfloat16: pass a torch.bfloat16 tensor)")
    if not a.flags.c_contiguous:
        raise _bad(f"{what} is not C-contiguous (strides {a.strides}): pass np.ascontiguousarray(x) and copy the result back")
    if writable and not a.flags.writeable:
        raise _bad(f"{what} is read-only: the allreduce writes its result in place")
    if not a.dtype.isnative:
        raise _bad(f"{what} has dtype {a.dtype.str}, not in the machine's byte order: pass x.astype(x.dtype.newbyteorder('='))")
    return a.ctypes.data, a.size, DTYPES[name]


def _tensor_view(t, what):
    name = str(t.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise _bad(f"{what} has dtype {t.dtype}: flare reduces torch.{', torch.'.join(DTYPES)} tensors")
    if t.device.type != "cpu":
        raise _bad(f"{what} is on {t.device}: flare reduces CPU tensors (copy it with .cpu() and back)")
    if not t.is_contiguous():
        raise _bad(f"{what} is not contiguous (strides {tuple(t.stride())}): pass x.contiguous() and copy the result back")
    if t.requires_grad and t.is_leaf:
        raise _bad(f"{what} is a leaf that requires grad: reduce it under torch.no_grad() or reduce .grad")
    return t.data_ptr(), t.numel(), DTYPES[name]


def name(code):
    return NAMES[code]
