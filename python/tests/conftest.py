"""Fixtures: a real `flare switch` process on free loopback ports, and a
runner of one thread per rank (ctypes releases the GIL during calls)."""

import concurrent.futures
import itertools
import os
import pathlib
import socket
import subprocess
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def free_port(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Switch:
    """A `flare switch` process; addr is its data address."""

    def __init__(self, *extra):
        self.bin = os.environ.get("FLARE_BIN", str(ROOT / "bin" / "flare"))
        if not os.path.exists(self.bin):
            pytest.fail(f"{self.bin} not found: run `make build` (or set FLARE_BIN)")
        self.addr = f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}"
        self.admin = f"127.0.0.1:{free_port(socket.SOCK_STREAM)}"
        self.proc = subprocess.Popen([self.bin, "switch", "--listen", self.addr, "--admin", self.admin,
                                      "--l1", "4MiB", *extra], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.admin}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                pytest.fail("flare switch not healthy after 10 s")
            time.sleep(0.02)

    def metric(self, name):
        """The sum of the samples of metric name on /metrics."""
        with urllib.request.urlopen(f"http://{self.admin}/metrics", timeout=5) as r:
            text = r.read().decode()
        return sum(float(l.split()[-1]) for l in text.splitlines()
                   if l.startswith(name) and l[len(name):len(name) + 1] in (" ", "{"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stderr.close()


@pytest.fixture(scope="session")
def switch():
    s = Switch("--multicast", "239.255.87.0/28")
    yield s
    s.stop()


_jobs = itertools.count(1000)


@pytest.fixture
def job():
    """A job id no other test uses."""
    return next(_jobs)


def ranks(world, fn):
    """Run fn(rank) for every rank on its own thread; return the results
    in rank order, raising the first exception."""
    with concurrent.futures.ThreadPoolExecutor(world) as ex:
        futs = [ex.submit(fn, r) for r in range(world)]
        return [f.result(timeout=120) for f in futs]
