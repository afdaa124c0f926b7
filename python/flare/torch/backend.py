"""The distributed backend "flare": a ProcessGroup whose allreduce goes
through the switch and whose other collectives go through an inner gloo
group (torch 1.13's Python ProcessGroup extension point)."""

import atexit
import datetime
import secrets

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future
from torch._C import _distributed_c10d as c10d

from .config import Config
from .reducer import Reducer, completed

NAME = "flare"


class ProcessGroupFlare(dist.ProcessGroup):
    """A process group of world ranks reducing through a Flare switch.

    Every collective returns a Work made from a completed Future: the calls
    run in the caller's thread, one at a time, so the inner gloo group sees
    them in the same order on every rank."""

    def __init__(self, store, rank, world, timeout=datetime.timedelta(minutes=30), config=None):
        super().__init__(rank, world)
        self.config = config or Config.from_env()
        self.gloo_group = dist.ProcessGroupGloo(dist.PrefixStore("flare-gloo", store), rank, world, timeout)
        # rank 0 draws the job ids and a fresh secret token; the store hands
        # them to the others (get blocks until set)
        if rank == 0:
            store.set("flare/job", str(secrets.randbits(32)))
            store.set("flare/token", str(secrets.randbits(64)))
        job, token = int(store.get("flare/job")), int(store.get("flare/token"))
        self.reducer = Reducer(self.config, rank, world, job, token, self._agree, self._gloo_allreduce)
        atexit.register(self.shutdown)

    def shutdown(self):
        """Close the switch sessions and release the inner gloo group while
        the interpreter is still whole. A gloo group left to interpreter
        finalization can abort the process ("terminate called without an
        active exception": its worker threads take the GIL as it goes), and
        destroy_process_group does not reach the group this one holds.
        Registered with atexit; a second call does nothing."""
        if self.gloo_group is None:
            return
        self.reducer.close()
        self.gloo_group = None

    def getBackendName(self):
        return NAME

    def _agree(self, ok):
        flag = torch.tensor([1 if ok else 0], dtype=torch.int32)
        self.gloo_group.allreduce([flag], c10d.AllreduceOptions()).wait()  # SUM
        return int(flag.item()) == self.size()

    def _gloo_allreduce(self, t, op):
        o = c10d.AllreduceOptions()
        o.reduceOp = op
        self.gloo_group.allreduce([t], o).wait()

    def allreduce(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        for t in tensors:
            self.reducer.allreduce(t, op)
        return _create_work_from_future(completed(tensors))

    def allreduce_coalesced(self, tensors, opts=None):
        op = opts.reduceOp if opts is not None else dist.ReduceOp.SUM
        for t in tensors:
            self.reducer.allreduce(t, op)
        return _create_work_from_future(completed(tensors))

    # Everything else: gloo, waited for here so that the order holds.
    def _via_gloo(self, name, result, *args):
        getattr(self.gloo_group, name)(*args).wait()
        return _create_work_from_future(completed(result))

    def broadcast(self, tensors, opts=None):
        return self._via_gloo("broadcast", tensors, tensors, opts or c10d.BroadcastOptions())

    def allgather(self, output_tensors, input_tensors, opts=None):
        return self._via_gloo("allgather", output_tensors, output_tensors, input_tensors, opts or c10d.AllgatherOptions())

    def _allgather_base(self, output, input, opts=None):
        return self._via_gloo("_allgather_base", [output], output, input, opts or c10d.AllgatherOptions())

    def barrier(self, opts=None):
        return self._via_gloo("barrier", [], opts or c10d.BarrierOptions())

    def reduce(self, tensors, opts=None):
        return self._via_gloo("reduce", tensors, tensors, opts or c10d.ReduceOptions())

    def gather(self, output_tensors, input_tensors, opts=None):
        return self._via_gloo("gather", output_tensors, output_tensors, input_tensors, opts or c10d.GatherOptions())

    def scatter(self, output_tensors, input_tensors, opts=None):
        return self._via_gloo("scatter", output_tensors, output_tensors, input_tensors, opts or c10d.ScatterOptions())

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        return self._via_gloo("reduce_scatter", output_tensors, output_tensors, input_tensors,
                              opts or c10d.ReduceScatterOptions())

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self._via_gloo("alltoall_base", [output], output, input, output_split_sizes, input_split_sizes,
                              opts or c10d.AllToAllOptions())


def _create(store, rank, world, timeout):
    return ProcessGroupFlare(store, rank, world, timeout)


def register():
    """Register the backend as "flare" (done when flare.torch is imported)."""
    if not hasattr(dist.Backend, NAME.upper()):
        dist.Backend.register_backend(NAME, _create)
