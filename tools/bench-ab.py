#!/usr/bin/env python3
"""Two builds of flare, or one with two settings, compared row by row in
alternated runs of `flare bench --json`.

On a shared VM two runs back to back meet different spells: the second of
them often meets a quieter machine, and the vCPUs sit near or far apart
for minutes at a time (docs/PERFORMANCE.md). A change's effect is
therefore read as a paired ratio: B's figure over A's in the same round,
the runs of a round back to back, A first in odd rounds and B first in
even ones, the median over the rounds. For the switch's rows the ratio
that counts is B's switch of fan-out over A's, where both rows of a run
met the same spell; the times' ratios are printed beside it, and a change
to the switch is read by the switch's own time too: over forty rounds
the ratio once moved 8% through the relay's row alone (docs/PERFORMANCE.md).

usage: tools/bench-ab.py [--rounds N] [--out DIR] A B [-- BENCH FLAGS]
       tools/bench-ab.py --from DIR   (the summary again, from --out's files)
A and B are commands that run flare, as a shell would split them, with
leading NAME=VALUE words taken as environment: `bin/flare`,
`/tmp/old/flare`, `'FLARE_X=1 bin/flare --busy-poll 0'`. Each round runs
`A bench --json FLAGS` and `B bench --json FLAGS`; FLAGS default to the
issue's table (P = 8, 1 MiB and 16 MiB, 1 KiB and 8 KiB packets, the
switch and its fan-out relay, a process per rank). --out keeps each
run's rows (a-N.json, b-N.json) and its standard error.

For each row it prints the rounds paired; for switch rows each side's
median switch of fan-out, with how many runs reached 0.8, and the paired
medians: switch of fan-out (with its middle half over the rounds, from
four rounds on), the switch's time, the fan-out relay's time and the
server's CPU (user + system a call); for other rows the time.
Rounds where either run found the vCPUs far apart (cpu_line_ns of 100 or
more) are summarised apart from the near ones, and then all together.
It exits 1 when a run fails or no row could be paired.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

DEFAULT_FLAGS = ["--ranks", "8", "--bytes", "1MiB,16MiB", "--packet", "1KiB,8KiB",
                 "--iters", "5", "--rounds", "3", "--paths", "switch,fanout"]
FAR_NS = 100  # a cache line between the two CPUs from here on: far apart


def command(spec):
    """Splits a side's command into its environment and argv."""
    words = shlex.split(spec)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith(("-", "/", ".")):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words:
        raise SystemExit(f"bench-ab: {spec!r} names no command")
    return env, words


def run(spec, flags, out, name):
    """One `flare bench --json` run: its rows by key, and its line time."""
    env, argv = command(spec)
    argv = argv[:1] + ["bench", "--json"] + flags + argv[1:]
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True)
    except OSError as e:
        raise SystemExit(f"bench-ab: cannot run {spec!r}: {e.strerror}: {argv[0]}")
    if out:
        with open(os.path.join(out, name + ".json"), "w") as f:
            f.write(p.stdout)
        with open(os.path.join(out, name + ".err"), "w") as f:
            f.write(p.stderr)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"bench-ab: {shlex.join(argv)} exited {p.returncode}")
    return parse(p.stdout)


def parse(stdout):
    """A run's rows by key, and the largest cache-line time they give."""
    rows, line = {}, 0
    for text in stdout.splitlines():
        if not text.startswith("{"):
            continue
        r = json.loads(text)
        key = (r["ranks"], r["bytes"], r["packet_bytes"], r["path"], r.get("algo", ""))
        rows[key] = r
        line = max(line, r.get("cpu_line_ns", 0))
    return rows, line


def size(n):
    """n bytes as flare's flags write them (0: none, as the ring's packet)."""
    if n == 0:
        return "-"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def find(rows, key, path):
    """The row of rows with key's P, size and packet on path, if any."""
    for k, r in rows.items():
        if k[:3] == key[:3] and k[3] == path:
            return r
    return None


def cpu(r):
    """The server's CPU a call, user and system."""
    return r.get("server_user_s", 0) + r.get("server_sys_s", 0)


def spread(v):
    """The middle half of v, " [q1–q3]", from four values on."""
    if len(v) < 4:
        return ""
    q = statistics.quantiles(v, n=4)
    return f" [{q[0]:.3f}–{q[2]:.3f}]"


def summarise(pairs, label):
    """Prints one line per row over the rounds in pairs: [(a rows, b rows)]."""
    keys = sorted({k for a, b in pairs for k in a if k in b})
    for key in keys:
        ranks, nbytes, packet, path, _ = key
        # a switch row's relay, whose time is read beside it; other rows have
        # none, and find finds no row of path None
        fan = "fanout" + path[len("switch"):] if path.startswith("switch") else None
        both, fan_t = [], []
        for a, b in pairs:
            if key in a and key in b:
                both.append((a[key], b[key]))
                x, y = find(a, key, fan), find(b, key, fan)
                if x and y:
                    fan_t.append(y["median_s"] / x["median_s"])
        head = f"{label:4}  P={ranks:<3} {size(nbytes):>6} {size(packet):>5} {path:>9}  rounds {len(both):2}"
        t = statistics.median(y["median_s"] / x["median_s"] for x, y in both)
        if path.startswith("switch") and all(x.get("of_fanout") and y.get("of_fanout") for x, y in both):
            fa = [x["of_fanout"] for x, _ in both]
            fb = [y["of_fanout"] for _, y in both]
            paired = [y / x for x, y in zip(fa, fb)]
            cpus = [cpu(y) / cpu(x) for x, y in both if cpu(x) > 0 and cpu(y) > 0]
            print(f"{head}  of fan-out A {statistics.median(fa):.3f} ({sum(f >= 0.8 for f in fa)}≥0.8)"
                  f"  B {statistics.median(fb):.3f} ({sum(f >= 0.8 for f in fb)}≥0.8)"
                  f"  paired B/A: of fan-out {statistics.median(paired):.3f}{spread(paired)}"
                  f"  time {t:.3f}"
                  + (f"  fan-out time {statistics.median(fan_t):.3f}" if fan_t else "")
                  + (f"  server cpu {statistics.median(cpus):.3f}" if cpus else ""))
        else:
            print(f"{head}  paired B/A: time {t:.3f}")


def saved(src):
    """The rounds --out kept in src, each as (A's run, B's run)."""
    r = 1
    while os.path.exists(os.path.join(src, f"a-{r}.json")):
        try:
            with open(os.path.join(src, f"a-{r}.json")) as fa, open(os.path.join(src, f"b-{r}.json")) as fb:
                yield parse(fa.read()), parse(fb.read())
        except OSError as e:
            raise SystemExit(f"bench-ab: --from {src}: round {r}: {e.strerror}: {e.filename}")
        r += 1
    if r == 1:
        raise SystemExit(f"bench-ab: --from {src}: no a-1.json there (the files --out writes)")
    print(f"{src}: {r - 1} rounds")


def alternated(args, flags):
    """Runs the rounds, A first in odd ones, each as (A's run, B's run)."""
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for r in range(1, args.rounds + 1):
        order = [("a", args.a), ("b", args.b)] if r % 2 else [("b", args.b), ("a", args.a)]
        got = {side: run(spec, flags, args.out, f"{side}-{r}") for side, spec in order}
        yield got["a"], got["b"]
        print(f"round {r:2}: {order[0][0].upper()} first, cache line {got['a'][1]} and {got['b'][1]} ns", flush=True)
    print(f"A = {args.a}\nB = {args.b}\nflare bench --json {shlex.join(flags)}")


def main():
    argv = sys.argv[1:]
    flags = DEFAULT_FLAGS
    if "--" in argv:
        i = argv.index("--")
        argv, flags = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description="A/B of flare bench in alternated rounds (see the file's docstring)")
    ap.add_argument("--rounds", type=int, default=6, help="alternated rounds (default 6)")
    ap.add_argument("--out", help="a directory for each run's JSON rows and standard error")
    ap.add_argument("--from", dest="src", metavar="DIR", help="summarise the runs --out kept in DIR, running nothing")
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.src is None and args.b is None:
        ap.error("give A and B, or --from DIR")
    near, far = [], []
    for (a, la), (b, lb) in (saved(args.src) if args.src is not None else alternated(args, flags)):
        (far if max(la, lb) >= FAR_NS else near).append((a, b))
    if not any(k in b for a, b in near + far for k in a):
        raise SystemExit("bench-ab: no row of A's runs is in B's")
    blocks = [("near", near), ("far", far)]
    if near and far:
        blocks.append(("all", near + far))
    for label, pairs in blocks:
        if pairs:
            summarise(pairs, label)


if __name__ == "__main__":
    main()
