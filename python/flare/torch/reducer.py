"""Reducer: allreduce of tensors through the switch, one job per (dtype,
op, size), with an agreed fallback. Shared by the backend and the hook."""

import collections
import warnings

import torch
import torch.distributed as dist

from .. import Session, FlareError, supported
from ..dtypes import DTYPES

# torch's reduce ops that the switch has, by name; AVG is SUM then a division.
_OPS = {"SUM": "sum", "MIN": "min", "MAX": "max", "PRODUCT": "prod",
        "BAND": "and", "BOR": "or", "BXOR": "xor", "AVG": "sum"}


def op_name(op):
    """(flare op name, whether to average) of a dist.ReduceOp; (None, False)
    for ops the switch lacks (PREMUL_SUM)."""
    for n, f in _OPS.items():
        if hasattr(dist.ReduceOp, n) and op == getattr(dist.ReduceOp, n):
            return f, n == "AVG"
    return None, False


class Reducer:
    """Reduces tensors in place through the switch.

    Each (dtype, op, numel) is a job of its own on the switch (a job's
    vector length is fixed when it is joined); the first call with a new
    key joins it, on every rank in the same order, since collectives are
    called in the same order. At most config.max_jobs stay joined; the
    least recently used is left first (the same one on every rank).

    agree(ok) must return whether every rank's ok is true (a collective
    over another transport); gloo(tensor, op) reduces with gloo. When a
    join fails on any rank, every rank learns it through agree and all fall
    back to gloo for good (one warning), or raise with config.fallback ==
    "error". A call that fails after the join raises: the ranks may be out
    of step, as with any collective's failure.
    """

    def __init__(self, config, rank, world, job_base, token, agree, gloo):
        self.config, self.rank, self.world = config, rank, world
        self.job_base, self.token = job_base, token
        self.agree, self.gloo = agree, gloo
        self.sessions = collections.OrderedDict()
        self.joined = 0
        self.fallen = None  # the reason, once fallen back to gloo

    def allreduce(self, t, op):
        """Reduce t (any shape) in place across the ranks with op."""
        name, avg = op_name(op)
        dtype = str(t.dtype).replace("torch.", "")
        if (self.fallen is not None or name is None or dtype not in DTYPES or t.device.type != "cpu"
                or t.numel() == 0 or not supported(dtype, name) or (avg and not t.is_floating_point())):
            return self._gloo(t, op, avg)
        buf = t.detach()
        if not buf.is_contiguous():
            buf = buf.contiguous()
        s = self._session(dtype, name, buf.numel())
        if s is None:
            return self._gloo(t, op, avg)
        s.allreduce(buf)
        if avg:
            buf.div_(self.world)
        if buf.data_ptr() != t.data_ptr():
            t.detach().copy_(buf)
        return t

    def _gloo(self, t, op, avg):
        self.gloo(t, dist.ReduceOp.SUM if avg else op)
        if avg:
            t.detach().div_(self.world)
        return t

    def _session(self, dtype, op, n):
        key = (dtype, op, n)
        s = self.sessions.get(key)
        if s is not None:
            self.sessions.move_to_end(key)
            return s
        if len(self.sessions) >= self.config.max_jobs:
            _, old = self.sessions.popitem(last=False)
            old.close()
        job = (self.job_base + self.joined) % (1 << 32)
        self.joined += 1
        err = None
        try:
            s = Session(self.config.switch, job=job, token=self.token, rank=self.rank, world=self.world,
                        dtype=dtype, op=op, elements=n, design=self.config.design,
                        reproducible=self.config.reproducible, deadline=self.config.deadline_ms / 1000,
                        timeout=self.config.timeout, join_timeout=self.config.join_timeout,
                        multicast=self.config.multicast, busy_poll=self.config.busy_poll_us / 1e6)
        except FlareError as e:
            s, err = None, e
        if not self.agree(s is not None):
            if s is not None:
                s.close()
            self._give_up(err)
            return None
        self.sessions[key] = s
        return s

    def _give_up(self, err):
        why = str(err) if err is not None else "another rank could not join the job on the switch"
        if self.config.fallback == "error":
            raise RuntimeError(f"flare: allreduce through the switch at {self.config.switch} failed "
                               f"(FLARE_FALLBACK=error): {why}") from err
        self.fallen = why
        self.close()
        warnings.warn(f"flare: the switch at {self.config.switch} cannot serve this job ({why}); "
                      "falling back to gloo for every allreduce of this process group "
                      "(set FLARE_FALLBACK=error to fail instead)", RuntimeWarning, stacklevel=3)

    def close(self):
        while self.sessions:
            _, s = self.sessions.popitem(last=False)
            s.close()


def completed(result):
    """A torch Future already holding result."""
    fut = torch.futures.Future()
    fut.set_result(result)
    return fut
