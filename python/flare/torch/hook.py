"""A DDP comm hook for users who keep gloo as their backend: each bucket's
allreduce goes through the switch, the rest of DDP through gloo.

    state = flare.torch.HookState()        # after init_process_group("gloo")
    model.register_comm_hook(state, flare.torch.allreduce_hook)
"""

import secrets

import torch
import torch.distributed as dist

from .config import Config
from .reducer import Reducer, completed


class HookState:
    """The hook's sessions and configuration (Config.from_env by default)
    for group (the default group if None). Collective: every rank creates
    it at the same point, as rank 0's job ids and token are broadcast."""

    def __init__(self, group=None, config=None):
        self.group = group
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        ids = torch.tensor([secrets.randbits(31), secrets.randbits(62)], dtype=torch.int64)
        src = 0 if group is None else dist.distributed_c10d._get_global_rank(group, 0)
        dist.broadcast(ids, src=src, group=group)
        self.reducer = Reducer(config or Config.from_env(), rank, world, int(ids[0]), int(ids[1]),
                               self._agree, self._gloo)

    def _agree(self, ok):
        flag = torch.tensor([1 if ok else 0], dtype=torch.int32)
        dist.all_reduce(flag, group=self.group)
        return int(flag.item()) == dist.get_world_size(self.group)

    def _gloo(self, t, op):
        dist.all_reduce(t, op=op, group=self.group)


def allreduce_hook(state, bucket):
    """Average the bucket's gradients across the ranks through the switch,
    as DDP's default hook does through its backend. (torch 1.13 requires
    the parameter to be named bucket.)"""
    t = bucket.buffer()
    state.reducer.allreduce(t, dist.ReduceOp.AVG)
    return completed(t)
