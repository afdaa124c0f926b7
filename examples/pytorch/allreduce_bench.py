"""Allreduce bandwidth of a torch.distributed backend, nccl-tests style,
and DDP training throughput.

    make python build
    .venv/bin/python examples/pytorch/allreduce_bench.py --backend both

For each size from 4 KiB to 64 MiB (float32, SUM) it prints: size, count
(elements), type, time per call (us, rank 0's mean), algbw (size / time,
GB/s), busbw (algbw x 2(n-1)/n, the bytes each rank's link carries in a
ring allreduce, as nccl-tests reports) and #wrong (elements that differ
from the exact sum, on any rank). Then samples/s of examples/pytorch's DDP
MLP on each backend. With --backend flare or both and no FLARE_SWITCH, it
starts bin/flare switch on a free port for the run.
"""

import argparse
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SIZES = [4 << 10 << (2 * i) for i in range(8)]  # 4 KiB .. 64 MiB


def iters_for(nbytes):
    return max(3, min(50, (256 << 20) // (nbytes * 4)))


def worker(rank, world, backend, port, env, out):
    os.environ.update(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if backend == "flare":
        import flare.torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group(backend, rank=rank, world_size=world)
    rows = []
    for nbytes in SIZES:
        n = nbytes // 4
        base = (torch.arange(n) % 7).float()
        want = base * world + world * (world + 1) / 2
        t = base + rank + 1
        dist.all_reduce(t)  # warm-up: joins flare's job for this size
        iters = iters_for(nbytes)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            t.copy_(base + rank + 1)
            dist.all_reduce(t)
        elapsed = (time.perf_counter() - start) / iters
        wrong = torch.tensor([int((t != want).sum())])
        dist.all_reduce(wrong)  # every rank's count
        rows.append((nbytes, n, elapsed, int(wrong)))
    if rank == 0:
        torch.save(rows, out)
    dist.destroy_process_group()


def table(backend, world, env):
    port = free_port(socket.SOCK_STREAM)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "rows.pt")
        mp.start_processes(worker, args=(world, backend, port, env, out), nprocs=world, start_method="spawn")
        rows = torch.load(out)
    print(f"\n# {backend}: allreduce, float32, sum, {world} ranks (one process each)")
    print(f"{'size':>10} {'count':>10} {'type':>8} {'time(us)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12} {'#wrong':>7}")
    for nbytes, n, t, wrong in rows:
        alg = nbytes / t / 1e9
        print(f"{nbytes:>10} {n:>10} {'float':>8} {t * 1e6:>10.1f} {alg:>12.3f} {alg * 2 * (world - 1) / world:>12.3f} {wrong:>7}")
    return rows


def free_port(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_switch():
    data, admin = f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}", f"127.0.0.1:{free_port(socket.SOCK_STREAM)}"
    p = subprocess.Popen([str(ROOT / "bin" / "flare"), "switch", "--listen", data, "--admin", admin, "--l1", "4MiB"],
                         stderr=subprocess.DEVNULL)
    for _ in range(500):
        try:
            urllib.request.urlopen(f"http://{admin}/healthz", timeout=1).close()
            return p, data
        except OSError:
            time.sleep(0.02)
    p.kill()
    sys.exit("bin/flare switch did not become healthy (run make build)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="both", choices=["gloo", "flare", "both"])
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--ddp-steps", type=int, default=200)
    a = ap.parse_args()
    backends = ["gloo", "flare"] if a.backend == "both" else [a.backend]
    env, sw = {}, None
    if "flare" in backends:
        if os.environ.get("FLARE_SWITCH"):
            env["FLARE_SWITCH"] = os.environ["FLARE_SWITCH"]
        else:
            sw, env["FLARE_SWITCH"] = start_switch()
        env["FLARE_FALLBACK"] = "error"  # measure the switch, not gloo
    try:
        for b in backends:
            table(b, a.world, env)
        sys.path.insert(0, str(HERE))
        import ddp_mlp
        print(f"\n# DDP: MLP {ddp_mlp.IN}-{ddp_mlp.HIDDEN}-{ddp_mlp.HIDDEN}-{ddp_mlp.OUT}, batch {ddp_mlp.BATCH} per rank, "
              f"{a.ddp_steps} steps, {a.world} ranks")
        with tempfile.TemporaryDirectory() as d:
            for b in backends:
                r = ddp_mlp.run(b, a.world, a.ddp_steps, os.path.join(d, b + ".pt"), env=env)
                print(f"{b:>6}: {r['samples_per_s']:10.0f} samples/s")
    finally:
        if sw is not None:
            sw.kill()
            sw.wait()


if __name__ == "__main__":
    main()
