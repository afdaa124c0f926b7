#!/usr/bin/env python3
"""Where the kernel put the threads a process woke, and how long each then
waited to run: the other half of tools/trace-sched.py's "idle with work
waiting".

A Go program wakes one of its sleeping threads (futex) when it readies a
goroutine while a P is idle. The kernel then picks the CPU the thread
runs on. Where it queues the thread on the waker's own, busy, CPU while
another CPU sits idle, the goroutine waits until the waker blocks or its
time slice ends, hundreds of microseconds on the 2-vCPU VMs here, and
the P it was woken for idles meanwhile (docs/PERFORMANCE.md).

usage:
  perf record -e sched:sched_waking,sched:sched_wakeup,sched:sched_switch \\
      -a -o sched.data -- sleep 1      # while the process runs
  perf script -i sched.data | tools/wake-placement.py [COMM]

Reads `perf script`'s text and, for the wake-ups of threads named COMM
(default flare) by threads of the same name, prints how many were queued
on the waker's CPU or another, whether another CPU was idle (running its
idle task) at the wake-up, and the time from the wake-up until the thread
ran: median, 90th and 99th percentiles, and the sum.
"""
import collections
import re
import sys

EVENT = re.compile(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)$')
FIELD = re.compile(r'(\w+)=(\S+)')


def read(lines, comm):
    """Yields (case, microseconds) for each wake-up of a thread named comm
    by a thread of that name, from waking to running."""
    running = {}  # cpu -> pid of the task on it (0: idle)
    waking = {}   # pid -> (time, waker's cpu, another cpu idle)
    placed = {}   # pid -> the cpu it was queued on
    for line in lines:
        m = EVENT.match(line)
        if not m:
            continue
        who, _, cpu, t, name, rest = m.groups()
        cpu, t = int(cpu), float(t)
        f = dict(FIELD.findall(rest))
        if name == 'sched_waking' and who == comm and f.get('comm') == comm:
            idle = any(p == 0 for c, p in running.items() if c != cpu)
            waking[int(f['pid'])] = (t, cpu, idle)
        elif name == 'sched_wakeup' and int(f.get('pid', -1)) in waking:
            placed[int(f['pid'])] = int(f['target_cpu'])
        elif name == 'sched_switch':
            nxt = int(f['next_pid'])
            running[cpu] = nxt
            if nxt in waking and nxt in placed:
                t0, by, idle = waking.pop(nxt)
                on = placed.pop(nxt)
                case = ("on the waker's CPU" if on == by else 'on another CPU') + \
                    (', another idle' if idle else ', none idle')
                yield case, (t - t0) * 1e6


def percentile(v, q):
    return v[min(len(v) - 1, int(len(v) * q))]


def main():
    if len(sys.argv) > 2 or sys.argv[1:2] in (['-h'], ['--help']):
        sys.exit(__doc__)
    comm = sys.argv[1] if len(sys.argv) == 2 else 'flare'
    waits = collections.defaultdict(list)
    for case, us in read(sys.stdin, comm):
        waits[case].append(us)
    if not waits:
        sys.exit(f'no wake-ups of {comm} by {comm} in the input (perf script of sched_waking, sched_wakeup, sched_switch)')
    print(f'wake-ups of {comm} threads by {comm} threads, and the time until each ran:')
    for case in sorted(waits):
        v = sorted(waits[case])
        print(f'  {case:35s} {len(v):6d}  median {percentile(v, .5):7.1f} µs  '
              f'p90 {percentile(v, .9):7.1f}  p99 {percentile(v, .99):8.1f}  sum {sum(v) / 1e3:7.1f} ms')


if __name__ == '__main__':
    main()
