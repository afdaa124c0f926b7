"""flare.Session against a real `flare switch` process: every dtype and
op, numpy and torch, sparse, a refused job, a timeout naming the missing
rank, bad buffers and a forked child."""

import datetime
import multiprocessing
import os
import re

import pytest

np = pytest.importorskip("numpy", reason="numpy is not installed (apt-get install python3-numpy): skipping flare's Python tests")

import flare
from conftest import _jobs, ranks

WORLD = 3
N = 3000  # elements: several packets of every dtype

PAIRS = [(d, o) for d in flare.DTYPES for o in flare.OPS if flare.supported(d, o)]


def inputs(op, r):
    """Rank r's vector: small integers, exact in every dtype (bfloat16 and
    float16 too)."""
    i = np.arange(N, dtype=np.int64)
    if op == "prod":
        return 1 + (r + i) % 2
    if op in ("and", "or", "xor"):
        return (r * 37 + i * 11 + 5) & 0x7F
    return (r * 7 + i * 3) % 11 - 5


def expected(op):
    f = {"sum": np.add, "min": np.minimum, "max": np.maximum, "prod": np.multiply,
         "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    out = inputs(op, 0)
    for r in range(1, WORLD):
        out = f(out, inputs(op, r))
    return out


def test_pairs_cover_the_switch():
    # The switch defines every op on the integers and sum, min, max, prod
    # on the floats (capi's Go test checks this against elem.KernelFor).
    assert len(PAIRS) == 4 * 7 + 4 * 4
    assert flare.DTYPES["float16"] == 8 and flare.dtypes.dtype_code(np.float16) == 8


@pytest.mark.parametrize("dtype,op", [p for p in PAIRS if p[0] != "bfloat16"])
def test_numpy_every_dtype_and_op(switch, job, dtype, op):
    def rank(r):
        x = inputs(op, r).astype(dtype)
        with flare.Session(switch.addr, job=job, token=job * 31, rank=r, world=WORLD, dtype=dtype, op=op, elements=N) as s:
            assert s.allreduce(x) is x
            st = s.stats()
        assert st.calls == 1 and st.failed == 0 and st.packets_sent > 0
        return x
    for x in ranks(WORLD, rank):
        np.testing.assert_array_equal(x, expected(op).astype(dtype))


def test_multicast(switch, job):
    """Ranks that all ask get the results on a multicast group, sent once."""
    def rank(r):
        x = inputs("sum", r).astype("float32")
        with flare.Session(switch.addr, job=job, token=job * 31, rank=r, world=WORLD, dtype="float32", op="sum",
                           elements=N, multicast=True) as s:
            s.allreduce(x)
            held = switch.metric("flare_multicast_groups_in_use")
        return x, held
    for x, held in ranks(WORLD, rank):
        np.testing.assert_array_equal(x, expected("sum").astype("float32"))
        assert held == 1


@pytest.mark.parametrize("dtype,op", PAIRS)
def test_torch_every_dtype_and_op(switch, job, dtype, op):
    torch = pytest.importorskip("torch", reason="torch is not installed (apt-get install python3-torch)")
    tdt = getattr(torch, dtype)

    def rank(r):
        x = torch.from_numpy(inputs(op, r)).to(tdt)
        with flare.Session(switch.addr, job=job, rank=r, world=WORLD, dtype=tdt, op=op, elements=N) as s:
            s.allreduce(x, op)
        return x
    want = torch.from_numpy(expected(op)).to(tdt)
    for x in ranks(WORLD, rank):
        assert torch.equal(x, want), (dtype, op)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_sparse(switch, job, dtype):
    space = 100_000

    def rank(r):
        idx = np.arange(0, space, r + 2, dtype=np.uint32)
        val = np.full(idx.size, r + 1, dtype=dtype)
        with flare.Session(switch.addr, job=job, rank=r, world=WORLD, dtype=dtype, op="sum",
                           elements=space, sparse=True) as s:
            return s.sparse_allreduce(idx, val)
    dense = np.zeros(space, dtype=dtype)
    present = np.zeros(space, dtype=bool)
    for r in range(WORLD):
        dense[:: r + 2] += r + 1
        present[:: r + 2] = True
    for idx, val in ranks(WORLD, rank):
        np.testing.assert_array_equal(idx, np.flatnonzero(present).astype(np.uint32))
        np.testing.assert_array_equal(val, dense[present])


def test_refused_carries_the_switch_message(switch, job):
    def rank(r):
        with pytest.raises(flare.RefusedError) as e:
            flare.Session(switch.addr, job=job, rank=r, world=WORLD, dtype="float32", elements=N, packet_elems=512)
        return e.value
    for e in ranks(WORLD, rank):
        assert "packets carry at most 1024" in e.message and e.code == 3


def test_timeout_names_the_missing_rank(switch, job):
    # Every rank joins; the last never calls. A second job is the barrier
    # that keeps it joined until the others have timed out. The first rank
    # to time out aborts the job for all: a rank whose own timer has not
    # fired yet hears that abort, which names the same missing rank.
    def rank(r):
        s = flare.Session(switch.addr, job=job, rank=r, world=WORLD, dtype="int32", elements=N, timeout=2)
        err = None
        if r < WORLD - 1:
            with pytest.raises((flare.TimeoutError, flare.AbortedError)) as e:
                s.allreduce(np.zeros(N, dtype=np.int32))
            err = e.value
        with flare.Session(switch.addr, job=job + 100_000, rank=r, world=WORLD, dtype="int32", elements=1,
                           join_timeout=60) as bar:
            bar.allreduce(np.ones(1, dtype=np.int32))
        s.close()
        return err
    errs = ranks(WORLD, rank)
    for e in errs[:-1]:
        assert e.ranks == [WORLD - 1], e.message
        assert isinstance(e, (TimeoutError, flare.AbortedError)) and f"waits for rank {WORLD - 1}" in e.message
        if isinstance(e, flare.AbortedError):
            assert e.rank is not None and e.rank != WORLD - 1, e.message


def test_bad_buffers_say_why(switch, job):
    with flare.Session(switch.addr, job=job, rank=0, world=1, dtype="float32", elements=8) as s:
        cases = [
            (np.zeros(16, dtype=np.float32)[::2], "not C-contiguous"),
            (np.zeros(8, dtype=np.float64), "float64 buffer, but the session's dtype is float32"),
            (np.zeros(9, dtype=np.float32), "9 elements, but the job's vector has 8"),
            (np.zeros(8, dtype=">f4"), "byte order"),
            ([0.0] * 8, "pass a numpy array or a torch tensor"),
        ]
        ro = np.zeros(8, dtype=np.float32)
        ro.flags.writeable = False
        cases.append((ro, "read-only"))
        try:
            import torch
            cases.append((torch.zeros(16)[::2], "not contiguous"))
        except ImportError:
            pass
        for x, msg in cases:
            with pytest.raises(flare.InvalidArgumentError, match=msg):
                s.allreduce(x)
        with pytest.raises(flare.InvalidArgumentError, match="op is fixed"):
            s.allreduce(np.zeros(8, dtype=np.float32), "max")
        x = np.arange(8, dtype=np.float32)
        s.allreduce(x)  # world 1: the sum is the input
        np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))
        assert s.info().blocks >= 1 and s.stats().calls == 1
    with pytest.raises(flare.HandleError):
        s.allreduce(x)
    s.close()  # idempotent


def test_invalid_option_names_the_field(switch, job):
    with pytest.raises(flare.InvalidArgumentError, match=r"Rank = 5: must be in 0\.\.1"):
        flare.Session(switch.addr, job=job, rank=5, world=2, dtype="int8", elements=4)
    with pytest.raises(flare.InvalidArgumentError, match="not defined on float32"):
        flare.Session(switch.addr, job=job, rank=0, world=1, dtype="float32", op="xor", elements=4)


def test_busy_poll(switch):
    """busy_poll: None polls 50 µs, 0 sleeps at once, seconds up to 0.01;
    a value out of range names the field and the range."""
    for poll in [None, 0, 1e-4, datetime.timedelta(microseconds=10)]:
        with flare.Session(switch.addr, job=next(_jobs), rank=0, world=1, dtype="float32", elements=8, busy_poll=poll) as s:
            x = np.arange(8, dtype=np.float32)
            s.allreduce(x)  # world 1: the sum is the input
            np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))
    with pytest.raises(flare.InvalidArgumentError, match=r"busy_poll = -1: must be 0 \(sleep at once\) or positive seconds"):
        flare.Session(switch.addr, job=next(_jobs), rank=0, world=1, dtype="float32", elements=8, busy_poll=-1)
    with pytest.raises(flare.InvalidArgumentError, match=r"busy_poll_us = 20000: must be -1 \(sleep at once\), 0 \(the default, 50\) or 1\.\.10000 µs"):
        flare.Session(switch.addr, job=next(_jobs), rank=0, world=1, dtype="float32", elements=8, busy_poll=0.02)


def _child(q, addr):
    try:
        flare.Session(addr, job=1, rank=0, world=1, dtype="int8", elements=1)
        q.put("joined")
    except flare.ForkError as e:
        q.put("ForkError: " + e.message)
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        q.put(repr(e))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_forked_child_fails_clearly(switch):
    flare.version()  # loaded in this process
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, switch.addr))
    p.start()
    msg = q.get(timeout=30)
    p.join(30)
    assert msg.startswith("ForkError: ") and "spawn" in msg and str(os.getpid()) in msg, msg


def test_version_names_the_build():
    # The library reads its build information: the commit where the build
    # stamped one, "(devel)" where it did not (a worktree, -buildvcs=false);
    # never "(unknown)", which means no build information at all.
    v = flare.version()
    assert re.fullmatch(r"flare ([0-9a-f]{12}(-dirty)?|\(devel\))", v), v
