"""DDP training of a small MLP on synthetic data, on any backend.

    python3 examples/pytorch/ddp_mlp.py --backend flare --world 4 --steps 60 --out /tmp/w.pt

Fixed seeds, so two runs of the same backend and design train the same
model; rank 0 saves the final weights (a flat float32 tensor), the number
of flare fallback warnings each rank saw and the samples per second. With
--backend flare the switch is FLARE_SWITCH (start one with bin/flare
switch). Processes are started with spawn: libflare does not survive fork.
"""

import argparse
import gc
import os
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

IN, HIDDEN, OUT, BATCH = 32, 64, 10, 32


def model():
    torch.manual_seed(1234)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, OUT))


def data(rank, steps):
    """Rank rank's batches: inputs from its own seed, labels from a fixed
    random teacher, so the ranks see different data of one task."""
    g = torch.Generator().manual_seed(99)
    teacher = torch.randn(IN, OUT, generator=g)
    g = torch.Generator().manual_seed(1000 + rank)
    xs = torch.randn(steps, BATCH, IN, generator=g)
    return xs, (xs @ teacher).argmax(-1)


def worker(rank, world, backend, port, steps, out, env, hook):
    os.environ.update(env)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if backend == "flare" or hook:
        import flare.torch  # noqa: F401 - registers the backend
    torch.set_num_threads(1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dist.init_process_group(backend, rank=rank, world_size=world)
        net = nn.parallel.DistributedDataParallel(model())
        if hook:
            import flare.torch
            net.register_comm_hook(flare.torch.HookState(), flare.torch.allreduce_hook)
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        xs, ys = data(rank, steps)
        loss_fn = nn.CrossEntropyLoss()
        dist.barrier()
        start = time.perf_counter()
        for i in range(steps):
            opt.zero_grad()
            loss = loss_fn(net(xs[i]), ys[i])
            loss.backward()
            opt.step()
        elapsed = time.perf_counter() - start
        first_loss = loss_fn(net(xs[0]), ys[0]).item()
    fallbacks = sum("falling back to gloo" in str(w.message) for w in seen)
    counts = torch.tensor([fallbacks], dtype=torch.int64)
    all_counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(all_counts, counts)
    if rank == 0:
        flat = torch.cat([p.detach().reshape(-1) for p in net.module.parameters()])
        torch.save({"weights": flat, "fallbacks": [int(c) for c in all_counts], "loss": first_loss,
                    "samples_per_s": steps * BATCH * world / elapsed}, out)
    # DDP holds the process group: let it go first, so that destroying the
    # group ends it here and not during interpreter finalization, which can
    # abort a process whose gloo threads are still alive.
    del net, opt
    dist.destroy_process_group()
    gc.collect()


def run(backend, world, steps, out, env=None, port=None, hook=False):
    """Train on world spawned processes; return rank 0's saved results."""
    port = port or _free_port()
    mp.start_processes(worker, args=(world, backend, port, steps, out, dict(env or {}), hook),
                       nprocs=world, start_method="spawn")
    return torch.load(out)


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="flare", choices=["flare", "gloo"])
    ap.add_argument("--hook", action="store_true", help="gloo backend with flare.torch.allreduce_hook")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", default="ddp_mlp.pt")
    a = ap.parse_args()
    r = run(a.backend, a.world, a.steps, a.out, hook=a.hook)
    print(f"{a.backend}{' + flare hook' if a.hook else ''}: {a.steps} steps on {a.world} ranks, "
          f"{r['samples_per_s']:.0f} samples/s, loss {r['loss']:.4f}, fallback warnings {r['fallbacks']}")


if __name__ == "__main__":
    main()
