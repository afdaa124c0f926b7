"""The PyTorch backend "flare" in real DDP training: 4 processes started
with spawn, a small MLP on synthetic data, through a real switch process.
Compared with the same run on gloo, with results on a multicast group,
repeated with the reproducible tree design, and run with no switch
(fallback to gloo)."""

import pathlib
import socket
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (apt-get install python3-torch): "
                                             "skipping the PyTorch backend's DDP tests")
import torch.distributed as dist  # noqa: E402

from conftest import free_port  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "pytorch"))
import ddp_mlp  # noqa: E402

WORLD, STEPS = 4, 60


def relative(a, b):
    return ((a - b).norm() / b.norm()).item(), ((a - b).abs().max() / b.abs().max()).item()


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory):
    return ddp_mlp.run("gloo", WORLD, STEPS, str(tmp_path_factory.mktemp("gloo") / "w.pt"))


def test_flare_trains_like_gloo(switch, tmp_path, gloo_run):
    before = switch.metric("flare_blocks_completed_total")
    r = ddp_mlp.run("flare", WORLD, STEPS, str(tmp_path / "w.pt"), env={"FLARE_SWITCH": switch.addr})
    blocks = switch.metric("flare_blocks_completed_total") - before
    assert blocks >= STEPS, f"only {blocks} blocks went through the switch in {STEPS} steps"
    assert r["fallbacks"] == [0] * WORLD
    norm, peak = relative(r["weights"], gloo_run["weights"])
    assert norm <= 1e-5 and peak <= 1e-5, f"flare vs gloo: relative difference {norm:.3g} (norm), {peak:.3g} (max)"
    # and it trained: the loss on the first batch fell from the initial one
    assert r["loss"] < 2.0


def test_multicast_results_train_like_gloo(switch, tmp_path, gloo_run):
    """FLARE_MULTICAST=1: the switch sends each result once, to the job's
    group, and the training is gloo's."""
    blocks0, tx0 = switch.metric("flare_blocks_completed_total"), switch.metric("flare_tx_packets_total")
    r = ddp_mlp.run("flare", WORLD, STEPS, str(tmp_path / "w.pt"), env={"FLARE_SWITCH": switch.addr, "FLARE_MULTICAST": "1"})
    blocks = switch.metric("flare_blocks_completed_total") - blocks0
    tx = switch.metric("flare_tx_packets_total") - tx0
    assert blocks >= STEPS and r["fallbacks"] == [0] * WORLD
    assert tx < 2 * blocks, f"{tx} datagrams sent for {blocks} blocks: the results went to each of {WORLD} ranks"
    norm, peak = relative(r["weights"], gloo_run["weights"])
    assert norm <= 1e-5 and peak <= 1e-5, f"flare vs gloo: relative difference {norm:.3g} (norm), {peak:.3g} (max)"


def test_reproducible_design_is_bitwise_identical(switch, tmp_path):
    env = {"FLARE_SWITCH": switch.addr, "FLARE_REPRODUCIBLE": "1", "FLARE_BUSY_POLL": "0"}  # and sockets that sleep at once
    a = ddp_mlp.run("flare", WORLD, STEPS, str(tmp_path / "a.pt"), env=env)
    b = ddp_mlp.run("flare", WORLD, STEPS, str(tmp_path / "b.pt"), env=env)
    assert torch.equal(a["weights"], b["weights"])
    assert a["fallbacks"] == b["fallbacks"] == [0] * WORLD


def test_no_switch_falls_back_to_gloo_once(tmp_path, gloo_run):
    # a port with no switch behind it: every join times out
    env = {"FLARE_SWITCH": f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}", "FLARE_JOIN_TIMEOUT": "1"}
    r = ddp_mlp.run("flare", WORLD, STEPS, str(tmp_path / "w.pt"), env=env)
    assert r["fallbacks"] == [1] * WORLD, "each rank warns exactly once"
    assert torch.equal(r["weights"], gloo_run["weights"]), "the fallback is gloo's allreduce"


def test_comm_hook_with_gloo_backend(switch, tmp_path, gloo_run):
    before = switch.metric("flare_blocks_completed_total")
    r = ddp_mlp.run("gloo", WORLD, STEPS, str(tmp_path / "w.pt"), env={"FLARE_SWITCH": switch.addr}, hook=True)
    assert switch.metric("flare_blocks_completed_total") - before >= STEPS
    norm, peak = relative(r["weights"], gloo_run["weights"])
    assert norm <= 1e-5 and peak <= 1e-5, f"hook vs gloo: {norm:.3g} (norm), {peak:.3g} (max)"


def _collectives(rank, world, port, addr, out):
    import os
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), FLARE_SWITCH=addr, FLARE_FALLBACK="error")
    import flare.torch  # noqa: F401
    dist.init_process_group("flare", rank=rank, world_size=world)
    sessions = dist.distributed_c10d._get_default_group().reducer.sessions
    res = {}
    for op in ("SUM", "MIN", "MAX", "PRODUCT", "AVG"):
        for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int8):
            if op == "AVG" and not dt.is_floating_point:
                continue
            t = (torch.arange(1000) % 3 + rank + 1).to(dt)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            res[(op, str(dt))] = t
            # the switch's job for (dtype, op, numel), not gloo, reduced it
            key = (str(dt).replace("torch.", ""), "sum" if op == "AVG" else op.lower().replace("product", "prod"), 1000)
            res[("via", op, str(dt))] = key in sessions
    t = torch.full((5,), float(rank))
    dist.broadcast(t, src=2)
    res["broadcast"] = t
    g = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(g, torch.full((2,), float(rank)))
    res["allgather"] = torch.cat(g)
    dist.barrier()
    h = torch.ones(4, 6).t()  # not contiguous
    dist.all_reduce(h)
    res["noncontiguous"] = h
    u8 = torch.ones(8, dtype=torch.uint8)  # no uint8 on the switch: gloo
    dist.all_reduce(u8)
    res["uint8"] = u8
    res["uint8 via"] = any(k[0] == "uint8" for k in sessions)
    z = torch.full((4,), complex(rank + 1, 1))  # torch hands the backend its real view: float32 through the switch
    dist.all_reduce(z, op=dist.ReduceOp.AVG)
    res["complex avg"] = z
    if rank == 0:
        torch.save(res, out)
    dist.destroy_process_group()


def test_collectives(switch, tmp_path):
    out = str(tmp_path / "c.pt")
    torch.multiprocessing.start_processes(_collectives, args=(3, free_port(socket.SOCK_STREAM),
                                                              switch.addr, out), nprocs=3, start_method="spawn")
    res = torch.load(out)
    base = torch.arange(1000) % 3
    inputs = [base + r + 1 for r in range(3)]
    want = {"SUM": sum(inputs), "MIN": base + 1, "MAX": base + 3, "PRODUCT": inputs[0] * inputs[1] * inputs[2],
            "AVG": sum(inputs) / 3}
    for (op, dt), t in ((k, v) for k, v in res.items() if isinstance(k, tuple) and len(k) == 2):
        assert torch.equal(t, want[op].to(t.dtype)), (op, dt)
        assert res[("via", op, dt)], f"{op} on {dt} did not go through the switch"
    assert torch.equal(res["broadcast"], torch.full((5,), 2.0))
    assert torch.equal(res["allgather"], torch.tensor([0.0, 0, 1, 1, 2, 2]))
    assert torch.equal(res["noncontiguous"], torch.full((6, 4), 3.0))
    assert torch.equal(res["uint8"], torch.full((8,), 3, dtype=torch.uint8)) and not res["uint8 via"]
    assert torch.equal(res["complex avg"], torch.full((4,), complex(2, 1))), res["complex avg"]


def test_reducer_avg_through_gloo_is_the_mean():
    """After a fallback, AVG is gloo's sum divided by the world."""
    from flare.torch.reducer import Reducer
    ops = []

    def gloo(t, op):  # two ranks with the same tensor: the sum is twice it
        ops.append(op)
        t.mul_(2)
    r = Reducer(None, 0, 2, 0, 1, None, gloo)
    r.fallen = "no switch"
    t = torch.arange(4, dtype=torch.float32)
    r.allreduce(t, dist.ReduceOp.AVG)
    assert torch.equal(t, torch.arange(4, dtype=torch.float32)), t
    assert ops == [dist.ReduceOp.SUM]


def test_config_busy_poll():
    """FLARE_BUSY_POLL: microseconds, 50 by default, 0 to sleep at once."""
    from flare.torch import Config
    assert Config.from_env({}).busy_poll_us == 50
    assert Config.from_env({"FLARE_BUSY_POLL": "0"}).busy_poll_us == 0
    assert Config.from_env({"FLARE_BUSY_POLL": "200"}).busy_poll_us == 200
    with pytest.raises(ValueError, match=r"FLARE_BUSY_POLL=20000: must be in 0\.\.10000 microseconds"):
        Config.from_env({"FLARE_BUSY_POLL": "20000"})
