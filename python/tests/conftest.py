"""Fixtures: a real `flare switch` process on loopback ports it binds, and a
runner of one thread per rank (ctypes releases the GIL during calls)."""

import concurrent.futures
import itertools
import os
import pathlib
import queue
import re
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def free_port(kind):
    """A port free now (for what picks its own port no other way: an
    address with nothing behind it, torch's rendezvous)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LISTENING = re.compile(r'msg="switch listening" data=(\S+) admin=(\S+)')


class Switch:
    """A `flare switch` process on ports the kernel picks (a port found
    free and handed to the process could be another socket's by the time
    it binds it); addr is its data address, read from its log."""

    def __init__(self, *extra):
        self.bin = os.environ.get("FLARE_BIN", str(ROOT / "bin" / "flare"))
        if not os.path.exists(self.bin):
            pytest.fail(f"{self.bin} not found: run `make build` (or set FLARE_BIN)")
        self.proc = subprocess.Popen([self.bin, "switch", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
                                      "--l1", "4MiB", *extra], stderr=subprocess.PIPE, text=True)
        self.log = []
        listening = queue.Queue()

        def drain():  # the log, read to its end so that the daemon never blocks writing it
            for line in self.proc.stderr:
                self.log.append(line)
                if m := LISTENING.search(line):
                    listening.put(m.groups())
            listening.put(None)

        self.drainer = threading.Thread(target=drain, daemon=True)
        self.drainer.start()
        try:
            got = listening.get(timeout=10)
        except queue.Empty:
            got = None
        if got is None:
            self.stop()
            pytest.fail("flare switch not listening after 10 s:\n" + "".join(self.log))
        self.addr, self.admin = got
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
                pytest.fail("flare switch not healthy after 10 s:\n" + "".join(self.log))
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
        self.drainer.join(timeout=5)


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
