#!/usr/bin/env bash
# What a second CPU buys the switch's own path (issue 14, item 4):
# BenchmarkGenPath's one reader on one CPU (taskset -c A, GOMAXPROCS 1)
# against its two readers on two (taskset -c A,B, GOMAXPROCS 2), in
# alternated rounds, so that both sides of a ratio share the machine's
# spell. Odd rounds run the one-CPU side first and even rounds the
# two-CPU side: on a shared VM the second of two runs back to back often
# met a quieter machine (docs/PERFORMANCE.md), and a fixed order could
# lend that to one side. Each round prints which side ran first, both
# rates, the two-CPU run's cache-line time between the CPUs (line-ns,
# internal/xcpu) and the ratio; the summary
# gives the median ratio of the rounds where the CPUs sat near (a line
# under 100 ns) and of those where they sat far apart, which on a VM can
# change from minute to minute (docs/PERFORMANCE.md).
#
# usage: tools/bench-scaling.sh [ROUNDS [CALLS]]   (defaults 6 and 400)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
calls=${2:-400}
GO=${GO:-go}

# The first two CPUs the shell may run on.
mapfile -t allowed < <(awk -F'\t' '/^Cpus_allowed_list/ {
  n = split($2, parts, ",")
  for (i = 1; i <= n; i++) { m = split(parts[i], r, "-"); for (c = r[1]; c <= (m > 1 ? r[2] : r[1]); c++) print c }
}' /proc/self/status)
if [ "${#allowed[@]}" -lt 2 ]; then
  echo "bench-scaling: needs two CPUs, this shell may use ${#allowed[@]}" >&2
  exit 1
fi
a=${allowed[0]} b=${allowed[1]}

bin=$(mktemp -d)/switch.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
$GO test -pgo=cmd/flare/default.pgo -c -o "$bin" ./switch

# metric NAME reads the value before NAME in a benchmark line on stdin.
metric() { awk -v m="$1" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}'; }

# side N CPUS runs readers-N at N CPUs on the CPUs CPUS.
side() { taskset -c "$2" "$bin" -test.run '^$' -test.bench "GenPath/readers-$1\$" -test.cpu "$1" -test.benchtime "${calls}x" | grep '^Benchmark'; }

echo "round  first  1 CPU pkts/s  2 CPUs pkts/s  line-ns  ratio"
ratios=()
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then
    first=1; one=$(side 1 "$a"); two=$(side 2 "$a,$b")
  else
    first=2; two=$(side 2 "$a,$b"); one=$(side 1 "$a")
  fi
  p1=$(metric pkts/s <<<"$one")
  p2=$(metric pkts/s <<<"$two")
  line=$(metric line-ns <<<"$two")
  ratio=$(awk -v x="$p2" -v y="$p1" 'BEGIN {printf "%.3f", x / y}')
  printf "%5d  %5s  %13.0f  %13.0f  %7s  %5s\n" "$r" "$first" "$p1" "$p2" "${line:--}" "$ratio"
  ratios+=("${line:-0} $ratio")
done
printf '%s\n' "${ratios[@]}" | awk '
  function median(v, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  $1 > 0 && $1 < 100 { near[++nn] = $2; if ($2 >= 1.7) hit++ }
  $1 >= 100 { far[++nf] = $2 }
  END {
    if (nn) printf "CPUs near (line < 100 ns): %d rounds, median %.3fx, %d at or above 1.70x\n", nn, median(near, nn), hit
    if (nf) printf "CPUs far apart (line >= 100 ns): %d rounds, median %.3fx\n", nf, median(far, nf)
  }'
