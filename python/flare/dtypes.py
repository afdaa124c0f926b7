"""Element types and operators: names, codes (flare.h's), and the numpy
and torch types that hold them."""

__all__ = ["DTYPES", "OPS", "DESIGNS", "dtype_code", "op_code", "supported"]

# flare.h's FLARE_INT8 .. FLARE_FLOAT16, and their sizes in bytes. The names
# are numpy's and torch's: numpy.float16 and torch.float16 (torch.half) are
# float16; torch.bfloat16 is bfloat16, which numpy lacks.
DTYPES = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "float32": 5, "float64": 6, "bfloat16": 7,
          "float16": 8}
SIZES = {1: 1, 2: 2, 3: 4, 4: 8, 5: 4, 6: 8, 7: 2, 8: 2}
NAMES = {v: k for k, v in DTYPES.items()}

# FLARE_SUM .. FLARE_XOR; codes 128..255 are the switch's custom ops.
OPS = {"sum": 1, "min": 2, "max": 3, "prod": 4, "and": 5, "or": 6, "xor": 7}
OP_NAMES = {v: k for k, v in OPS.items()}

DESIGNS = {"auto": 0, "single": 1, "multi": 2, "tree": 3}
STORAGES = {None: 0, "hash": 1, "array": 2}

INTEGERS = {"int8", "int16", "int32", "int64"}


def supported(dtype, op):
    """Whether the built-in op is defined on dtype: and, or and xor are
    defined on the integers only."""
    d, o = NAMES[dtype_code(dtype)], OP_NAMES.get(op_code(op))
    return o is not None and (o not in ("and", "or", "xor") or d in INTEGERS)


def dtype_code(dt):
    """The code of a dtype given as a name ("float32"), a code, a numpy
    dtype or type, or a torch dtype (torch.bfloat16 is bfloat16, numpy.float16
    and torch.float16 are float16)."""
    if isinstance(dt, int) and dt in NAMES:
        return dt
    name = dt if isinstance(dt, str) else _name_of(dt)
    if name not in DTYPES:
        raise ValueError(f"dtype {dt!r}: must be one of {', '.join(DTYPES)} (or the numpy/torch type)")
    return DTYPES[name]


def _name_of(dt):
    s = str(dt)
    if s.startswith("torch."):
        return s[len("torch."):]
    try:
        import numpy as np
        return np.dtype(dt).name
    except (ImportError, TypeError):
        return s


def op_code(op):
    """The code of an op given as a name ("sum") or a code (1..7, 128..255)."""
    if isinstance(op, int) and (op in OP_NAMES or 128 <= op <= 255):
        return op
    if isinstance(op, str) and op.lower() in OPS:
        return OPS[op.lower()]
    raise ValueError(f"op {op!r}: must be one of {', '.join(OPS)}, or a custom op code 128..255")
