#!/usr/bin/env python3
"""What the Go scheduler did in an execution trace: how busy each P was,
and for how long a P stood idle while a goroutine waited to run.

A CPU profile counts the CPU a process spent; it cannot show the CPU it
left idle. On a box whose idle vCPU takes tens of microseconds to wake
(docs/PERFORMANCE.md), work readied onto a busy P waits there while the
other P sleeps: this prints that time, from the trace `flare bench
--profile` writes for every row (or any `go test -trace`).

usage: tools/trace-sched.py TRACE [TOP]
Reads `go tool trace -d=parsed TRACE` (Go 1.26's text dump of the parsed
events) and prints, over the trace less its regions named "between" (the
work flare bench does between measured calls):
  - each P's busy share (a goroutine running on it, system calls made
    without giving up the P included);
  - the share of the time by (goroutines running, goroutines runnable),
    and the sum of the shares where fewer ran than there are Ps while
    some were runnable: "idle with work waiting"; that time by the length
    of its spells, by the goroutines that waited (a spell's time shared
    among those runnable in it), and, for spells of 50 µs or more, by the
    transition that began them (most often a goroutine readied while a P
    idled: the runtime wakes a thread for that P, and the kernel may queue
    it on the busy CPU; tools/wake-placement.py, docs/PERFORMANCE.md);
  - the TOP (default 8) goroutines by running time, with their share on
    each P, how often they moved between Ps, and their function.
"""
import collections
import re
import subprocess
import sys

TRANSITION = re.compile(
    r'M=-?\d+ P=(-?\d+) G=(-?\d+) StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)')
REGION = re.compile(r'Region(Begin|End) Time=(\d+) .*Type="between"')
FRAME = re.compile(r'^\s+(\S+) @ 0x')
CLOSURE = re.compile(r'\.func\d+(\.\d+)*$')


# Spell lengths, in ns: each bucket's name and its bound; LONG_SPELL is
# where a spell is long enough to be a thread's wake-up rather than a hand-off.
SPELLS = [('<10 µs', 10_000), ('10-50 µs', 50_000), ('50-200 µs', 200_000), ('>=200 µs', float('inf'))]
LONG_SPELL = 50_000


def name(stack):
    """The goroutine's own function in a stack of its: the outermost
    frame that is neither the runtime's nor a closure."""
    own = [f for f in stack if not f.startswith(('runtime.', 'internal/', 'sync.', 'syscall.'))]
    named = [f for f in own if not CLOSURE.search(f)]
    return (named or own or stack or ['?'])[-1]


def events(path):
    """Yields ('t', time, P, goroutine, from, to) for every goroutine
    transition, ('region', time, begin) for the between regions, and
    ('name', goroutine, function) from the stack of a transition a
    goroutine made itself."""
    dump = subprocess.run(['go', 'tool', 'trace', '-d=parsed', path],
                          check=True, capture_output=True, text=True).stdout
    own, stack = None, []
    for line in dump.splitlines() + ['']:
        f = FRAME.match(line)
        if f:
            stack.append(f.group(1))
            continue
        if line.endswith('Stack=') or line.startswith('\t\t'):  # a stack's header, a frame's file:line
            continue
        if own is not None and stack:
            yield ('name', own, name(stack))
        own, stack = None, []
        m = TRANSITION.search(line)
        if m:
            p, by, t, g, a, b = m.groups()
            if by == g:
                own = g
            yield ('t', int(t), int(p), g, a, b)
            continue
        r = REGION.search(line)
        if r:
            yield ('region', int(r.group(2)), r.group(1) == 'Begin')


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) == 3 else 8
    timeline, names = [], {}
    for e in events(sys.argv[1]):
        if e[0] == 'name':
            names.setdefault(e[1], e[2])
        else:
            timeline.append(e)
    if not any(e[0] == 't' for e in timeline):
        sys.exit('no goroutine transitions in the trace')
    timeline.sort(key=lambda e: e[1])
    procs = max(e[2] for e in timeline if e[0] == 't') + 1

    # clock advances outside the between regions only.
    clock, last, between = 0, timeline[0][1], 0
    state, started = {}, {}
    busy = collections.Counter()
    per_g = collections.defaultdict(collections.Counter)
    moved, where = collections.Counter(), {}
    shares = collections.Counter()
    running = 0
    waiting = set()  # the runnable goroutines
    waited = collections.Counter()  # idle-with-work-waiting time by goroutine
    spells = collections.Counter()  # that time by spell length
    begun = collections.Counter()  # long spells' time by what began them
    spell = None  # (start, what began it) of the spell under way
    for e in timeline:
        t = e[1]
        if not between:
            clock += t - last
            shares[(running, min(len(waiting), 3))] += t - last
            if running < procs and waiting:
                for g in waiting:
                    waited[g] += (t - last) / len(waiting)
        last = t
        if e[0] == 'region':
            between = max(0, between + (1 if e[2] else -1))
            continue
        _, _, p, g, a, b = e
        old = state.get(g, a)
        running += (b == 'Running') - (old == 'Running')
        if b == 'Runnable':
            waiting.add(g)
        else:
            waiting.discard(g)
        state[g] = b
        idle_now = not between and running < procs and bool(waiting)
        if idle_now and spell is None:
            spell = (t, (g, f'{old}->{b}'))
        elif not idle_now and spell is not None:
            length = t - spell[0]
            spells[next(k for k, top in SPELLS if length < top)] += length
            if length >= LONG_SPELL:
                begun[spell[1]] += length
            spell = None
        if b == 'Running':
            started[g] = (clock, p)
            if g in where and where[g] != p:
                moved[g] += 1
            where[g] = p
        elif g in started:
            since, on = started.pop(g)
            busy[on] += clock - since
            per_g[g][on] += clock - since

    span = max(1, clock)
    print(f'{span / 1e6:.1f} ms outside the between regions, {procs} Ps')
    for p in range(procs):
        print(f'P{p} busy {100 * busy[p] / span:5.1f}%')
    idle_waiting = 0
    for (r, q), ns in sorted(shares.items()):
        share = 100 * ns / span
        if share >= 0.05:
            print(f'running {r}, runnable {q if q < 3 else "3+"}: {share:5.1f}%')
        if r < procs and q > 0:
            idle_waiting += share
    print(f'idle with work waiting (fewer running than Ps, some runnable): {idle_waiting:.1f}%')
    print('  in spells of ' + (', '.join(
        f'{k} {100 * spells[k] / span:.1f}%' for k, _ in SPELLS if spells[k]) or 'none'))
    if spells:
        by_fn, began = collections.Counter(), collections.Counter()
        for g, ns in waited.items():
            by_fn[names.get(g, '?')] += ns
        for (g, how), ns in begun.items():
            began[(names.get(g, '?'), how)] += ns
        print('  by the goroutines that waited (their function):')
        for fn, ns in by_fn.most_common(top // 2 or 1):
            print(f'    {ns / 1e6:8.1f} ms  {fn}')
        print(f'  spells of {LONG_SPELL // 1000} µs or more, by what began them:')
        for (fn, how), ns in began.most_common(top // 2 or 1):
            print(f'    {ns / 1e6:8.1f} ms  {fn} {how}')
    print('goroutines by running time:')
    # A goroutine that ran only inside the between regions has a total of
    # 0 here: it did none of the measured work.
    ran = {g: on for g, on in per_g.items() if sum(on.values()) > 0}
    for g, on in sorted(ran.items(), key=lambda kv: -sum(kv[1].values()))[:top]:
        total = sum(on.values())
        split = ' '.join(f'P{p} {100 * on[p] / total:3.0f}%' for p in sorted(on))
        print(f'  G{g:<5} {total / 1e6:8.1f} ms  {split:16s} {moved[g]:6d} moves  {names.get(g, "?")}')


if __name__ == '__main__':
    main()
