/* row.h: what the peers' allreduce benchmarks share with `flare bench`.
 *
 * The same float32 pattern flare fills (internal/bench/pattern.go
 * patternValue: small integers, so every sum is exact), the same check of
 * every element against the plain sum over all ranks, the same time
 * statistic (each rank's median and p99 of its measured calls; the row
 * takes the slowest rank's) and the same JSON row as `flare bench --json`
 * (internal/bench Row: every field, zero where a peer has none, as the
 * fixed schema has them). Plain C, included by the C and the C++
 * benchmark alike.
 */
#ifndef PEERS_ROW_H
#define PEERS_ROW_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* pattern_value is element i of rank r's vector in call it: patternValue
 * for sums, an element's part plus a rank's part, so the sum over the
 * ranks is world x the element's part plus one number per call. */
static inline int64_t sum_elem_part(uint64_t i, uint64_t it) {
  uint64_t h = i * 0x9E3779B97F4A7C15ull ^ it * 0x94D049BB133111EBull;
  h ^= h >> 31;
  return (int64_t)(h % 41) - 20;
}

static inline int64_t sum_rank_part(uint64_t r, uint64_t it) {
  uint64_t h = (r + 1) * 0xBF58476D1CE4E5B9ull ^ it * 0x94D049BB133111EBull;
  h ^= h >> 29;
  return (int64_t)(h % 21) - 10;
}

static inline float pattern_value(uint64_t r, uint64_t i, uint64_t it) {
  return (float)(sum_elem_part(i, it) + sum_rank_part(r, it));
}

static inline void fill_pattern(float *buf, size_t n, int rank, int it) {
  for (size_t i = 0; i < n; i++) buf[i] = pattern_value(rank, i, it);
}

/* check_sum returns the first element that is not the sum over world
 * ranks' patterns, or -1 when all are. */
static inline long check_sum(const float *buf, size_t n, int world, int it) {
  int64_t ranks = 0;
  for (int r = 0; r < world; r++) ranks += sum_rank_part(r, it);
  for (size_t i = 0; i < n; i++) {
    float want = (float)(world * sum_elem_part(i, it) + ranks);
    if (buf[i] != want) return (long)i;
  }
  return -1;
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* cpu_read takes this process's user and kernel seconds so far into
 * at[0..1]; cpu_add adds to cpu[0..1] what it has used since the reading
 * in from. A reading before each call and cpu_add after it sum the
 * process's CPU inside its calls, as flare's rank processes read theirs
 * (bench.Result.RanksUserS). */
static inline void cpu_read(double *at) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  at[0] = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  at[1] = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static inline void cpu_add(double *cpu, const double *from) {
  double to[2];
  cpu_read(to);
  cpu[0] += to[0] - from[0];
  cpu[1] += to[1] - from[1];
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* summarise sorts times and returns its median and p99 as flare's
 * bench.Result.summarise picks them. */
static inline void summarise(double *times, int n, double *median, double *p99) {
  qsort(times, n, sizeof *times, cmp_double);
  int k = (n * 99 + 99) / 100 - 1;
  *median = times[n / 2];
  *p99 = times[k < n - 1 ? k : n - 1];
}

/* busbw is nccl-tests' bus bandwidth of an allreduce among p ranks, as
 * bench.Busbw computes it: algbw × 2(p−1)/p (0 below one rank). */
static inline double busbw(double algbw, int p) {
  return p < 1 ? 0 : algbw * 2 * (double)(p - 1) / (double)p;
}

/* print_row writes one `flare bench --json` row: every field of flare's
 * bench.Row, in its order, zero (or empty) where a peer has none
 * (cpu_line_ns: flare bench sets it on the peers' rows it measured beside
 * its own).
 * ranks_cpu is the user and kernel seconds per measured call of every
 * rank's process inside its calls, summed over the ranks. */
static inline void print_row(const char *path, const char *algo, int ranks, long long bytes, int iters,
                             double median, double p99, int verified, const double *ranks_cpu) {
  double algbw = bytes / median / 1e9;
  printf("{\"path\":\"%s\",\"ranks\":%d,\"bytes\":%lld,\"dtype\":\"float32\",\"op\":\"sum\",\"algo\":\"%s\","
         "\"iters\":%d,\"median_s\":%.9g,\"p99_s\":%.9g,\"algbw_GBps\":%.9g,\"busbw_GBps\":%.9g,\"verified\":%s,"
         "\"retransmits\":0,\"packet_bytes\":0,\"deadline_ms\":0,\"tail_ratio\":0,\"dropped_fraction\":0,"
         "\"partial_blocks\":0,\"tx_bytes\":0,\"rx_bytes\":0,\"density\":0,\"storage\":\"\",\"spilled_pairs\":0,\"ranks_user_s\":%.9g,\"ranks_sys_s\":%.9g,\"rounds\":1,\"server_user_s\":0,\"server_sys_s\":0,"
         "\"over_best_peer\":0,\"vs_ring\":0,\"of_relay\":0,\"of_fanout\":0,\"host_link_up_bytes\":0,"
         "\"host_link_down_bytes\":0,\"link_bytes_from\":\"\",\"cpu_line_ns\":0}\n",
         path, ranks, bytes, algo, iters, median, p99, algbw, busbw(algbw, ranks), verified ? "true" : "false",
         ranks_cpu[0], ranks_cpu[1]);
  fflush(stdout);
}

/* parse_size reads 1000, 64KiB or 16MiB; 0 when it is none of those. */
static inline long long parse_size(const char *s) {
  char *end;
  long long n = strtoll(s, &end, 10);
  if (end == s || n <= 0) return 0;
  if (strcmp(end, "") == 0 || strcmp(end, "B") == 0) return n;
  if (strcmp(end, "KiB") == 0) return n << 10;
  if (strcmp(end, "MiB") == 0) return n << 20;
  return 0;
}

/* parse_count reads a decimal count; -1 when s is not one. */
static inline int parse_count(const char *s) {
  char *end;
  long n = strtol(s, &end, 10);
  return end == s || *end != '\0' || n < 0 || n > 1000000 ? -1 : (int)n;
}

/* bench_args are the flags both benchmarks take. */
struct bench_args {
  long long bytes;
  int iters, warmup, ranks;
};

/* parse_args reads --bytes SIZE --iters N --warmup N [--ranks P] (the
 * defaults are flare bench's) and returns 0, or prints why not and
 * returns -1. */
static inline int parse_args(int argc, char **argv, struct bench_args *a) {
  *a = (struct bench_args){1 << 20, 5, 1, 0};
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    int *count = strcmp(argv[i], "--iters") == 0    ? &a->iters
                 : strcmp(argv[i], "--warmup") == 0 ? &a->warmup
                 : strcmp(argv[i], "--ranks") == 0  ? &a->ranks
                                                    : NULL;
    if (count != NULL && (*count = parse_count(v)) < 0) {
      fprintf(stderr, "%s: %s \"%s\": want a count in 0..1000000\n", argv[0], argv[i], v);
      return -1;
    } else if (count == NULL && strcmp(argv[i], "--bytes") == 0) {
      a->bytes = parse_size(v);
    } else if (count == NULL) {
      fprintf(stderr, "%s: unknown flag %s (want --bytes SIZE --iters N --warmup N [--ranks P])\n", argv[0], argv[i]);
      return -1;
    }
    i++;
  }
  if (a->bytes < 4 || a->bytes > (1ll << 30) || a->bytes % 4 != 0) {
    fprintf(stderr, "%s: --bytes: want a multiple of 4 in 4..1GiB (1000, 64KiB, 16MiB)\n", argv[0]);
    return -1;
  }
  if (a->iters < 1 || a->iters > 100000 || a->warmup < 0 || a->warmup > 100000) {
    fprintf(stderr, "%s: --iters %d --warmup %d: want iters in 1..100000 and warmup in 0..100000\n", argv[0],
            a->iters, a->warmup);
    return -1;
  }
  return 0;
}

#endif
