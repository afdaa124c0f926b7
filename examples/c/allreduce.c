/*
 * allreduce.c — libflare from C: one rank of a job on a Flare switch.
 *
 * Start a switch (bin/flare switch --listen 127.0.0.1:7470), then one
 * process per rank:
 *
 *     make lib
 *     gcc -O2 -Wall -Ibin -o allreduce examples/c/allreduce.c -Lbin -lflare -Wl,-rpath,$PWD/bin
 *     for r in 0 1 2; do ./allreduce 127.0.0.1:7470 100 $r 3 & done; wait
 *
 * Every rank runs the same sequence, each step a job of its own (job ids
 * from JOB up), and checks every result against the reduction computed
 * here from all ranks' inputs:
 *   1. a dense allreduce of every dtype with every op defined on it (the
 *      bitwise ops on integers only), and one op that is not (a clear
 *      FLARE_EINVAL before anything is sent);
 *   2. a sparse allreduce of (index, value) pairs;
 *   3. a job the switch refuses (packets larger than its own), with its
 *      message;
 *   4. a call that times out because the last rank never calls, whose
 *      message names that rank;
 *   5. a call in a forked child, refused with FLARE_EFORK instead of
 *      hanging.
 * It prints one "ok ..." line per check and exits 0 if all passed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flare.h"

enum { N = 3000 }; /* elements of each dense vector: several packets of every dtype */

static const char *dtype_names[] = {"", "int8", "int16", "int32", "int64", "float32", "float64", "bfloat16", "float16"};
static const size_t dtype_sizes[] = {0, 1, 2, 4, 8, 4, 8, 2, 2};
static const char *op_names[] = {"", "sum", "min", "max", "prod", "and", "or", "xor"};

static const char *sw;
static uint32_t job;
static int rank, world;

static void die(const char *what, int code) {
    fprintf(stderr, "rank %d: %s: code %d: %s\n", rank, what, code, flare_last_error());
    exit(1);
}

/* input is rank r's element i for op: small integers, exact in every dtype
 * (bfloat16 holds integers up to 256 exactly, float16 up to 2048), so the
 * results are exact. */
static int64_t input(int op, int r, int i) {
    switch (op) {
    case FLARE_PROD:
        return 1 + (r + i) % 2;
    case FLARE_AND:
    case FLARE_OR:
    case FLARE_XOR:
        return (r * 37 + i * 11 + 5) & 0x7f;
    }
    return (r * 7 + i * 3) % 11 - 5;
}

static int64_t fold(int op, int64_t a, int64_t b) {
    switch (op) {
    case FLARE_SUM: return a + b;
    case FLARE_MIN: return a < b ? a : b;
    case FLARE_MAX: return a > b ? a : b;
    case FLARE_PROD: return a * b;
    case FLARE_AND: return a & b;
    case FLARE_OR: return a | b;
    }
    return a ^ b;
}

/* bfloat16 is the upper half of a float32; the values here are exact. */
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* float16 is IEEE 754 binary16: 1 sign, 5 exponent (bias 15) and 10
 * fraction bits. Written out so the example needs no _Float16 support; the
 * encoder only rebiases the exponent and keeps the top fraction bits, which
 * is exact for the small integers here (0 and normal numbers), not a
 * rounding conversion. */
static uint16_t to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
    if ((u & 0x7fffffff) == 0) return sign;
    return (uint16_t)(sign | ((u >> 23 & 0xff) - 127 + 15) << 10 | (u >> 13 & 0x3ff));
}

static float from_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = h >> 10 & 0x1f, frac = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000 | frac << 13; /* Inf or NaN */
    } else if (exp == 0) {
        float f = (float)frac / 16777216.0f; /* zero or subnormal: frac units of 2^-24 */
        return sign ? -f : f;
    } else {
        u = sign | (exp - 15 + 127) << 23 | frac << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void put(int dtype, void *buf, int i, int64_t v) {
    switch (dtype) {
    case FLARE_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case FLARE_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case FLARE_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case FLARE_INT64: ((int64_t *)buf)[i] = v; break;
    case FLARE_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case FLARE_FLOAT64: ((double *)buf)[i] = (double)v; break;
    case FLARE_BFLOAT16: ((uint16_t *)buf)[i] = to_bf16((float)v); break;
    case FLARE_FLOAT16: ((uint16_t *)buf)[i] = to_f16((float)v); break;
    }
}

static double get(int dtype, const void *buf, int i) {
    switch (dtype) {
    case FLARE_INT8: return ((const int8_t *)buf)[i];
    case FLARE_INT16: return ((const int16_t *)buf)[i];
    case FLARE_INT32: return ((const int32_t *)buf)[i];
    case FLARE_INT64: return (double)((const int64_t *)buf)[i];
    case FLARE_FLOAT32: return ((const float *)buf)[i];
    case FLARE_FLOAT64: return ((const double *)buf)[i];
    case FLARE_BFLOAT16: return from_bf16(((const uint16_t *)buf)[i]);
    }
    return from_f16(((const uint16_t *)buf)[i]);
}

/* options for the next job: each step of the sequence joins a job of its
 * own, with the same id and token on every rank. */
static flare_options next_job(int dtype, int op, int64_t elements) {
    flare_options o = {0}; /* zero fields take their defaults */
    o.switch_addr = sw;
    o.job = job;
    o.token = 0x5eed0000u + job;
    job++;
    o.rank = rank;
    o.world = world;
    o.dtype = dtype;
    o.op = op;
    o.elements = elements;
    return o;
}

/* dense joins a job of dtype and op, reduces a vector and checks it. */
static void dense(int dtype, int op) {
    flare_options o = next_job(dtype, op, N);
    o.busy_poll_us = rank % 2 ? -1 : 0; /* each rank's own: odd ranks sleep at once, even ones poll 50 µs */
    flare_session s;
    int rc = flare_join(&o, &s);
    if (rc != FLARE_OK) die("join", rc);
    void *buf = malloc(N * dtype_sizes[dtype]);
    for (int i = 0; i < N; i++) put(dtype, buf, i, input(op, rank, i));
    if ((rc = flare_allreduce(s, buf, N, dtype, op)) != FLARE_OK) die("allreduce", rc);
    for (int i = 0; i < N; i++) {
        int64_t want = input(op, 0, i);
        for (int r = 1; r < world; r++) want = fold(op, want, input(op, r, i));
        if (get(dtype, buf, i) != (double)want) {
            fprintf(stderr, "rank %d: %s %s: element %d = %g, want %lld\n", rank, dtype_names[dtype],
                    op_names[op], i, get(dtype, buf, i), (long long)want);
            exit(1);
        }
    }
    free(buf);
    if ((rc = flare_close(s)) != FLARE_OK) die("close", rc);
    printf("ok %s %s\n", dtype_names[dtype], op_names[op]);
}

/* undefined asks for an op the dtype lacks: refused before anything is sent. */
static void undefined(void) {
    flare_options o = next_job(FLARE_FLOAT32, FLARE_XOR, N);
    flare_session s;
    int rc = flare_join(&o, &s);
    if (rc != FLARE_EINVAL || strstr(flare_last_error(), "not defined on float32") == NULL) {
        fprintf(stderr, "rank %d: float32 xor: code %d (%s), want FLARE_EINVAL\n", rank, rc, flare_last_error());
        exit(1);
    }
    printf("ok undefined: %s\n", flare_last_error());
    o = next_job(FLARE_FLOAT32, FLARE_SUM, N);
    o.busy_poll_us = 20000;
    rc = flare_join(&o, &s);
    if (rc != FLARE_EINVAL || strstr(flare_last_error(), "busy_poll_us = 20000: must be -1") == NULL) {
        fprintf(stderr, "rank %d: busy_poll_us 20000: code %d (%s), want FLARE_EINVAL\n", rank, rc, flare_last_error());
        exit(1);
    }
    printf("ok undefined: %s\n", flare_last_error());
}

/* sparse: rank r holds value r+1 at every index that r+2 divides. */
static void sparse(void) {
    enum { SPACE = 100000 };
    flare_options o = next_job(FLARE_FLOAT32, FLARE_SUM, SPACE);
    o.sparse = 1;
    flare_session s;
    int rc = flare_join(&o, &s);
    if (rc != FLARE_OK) die("sparse join", rc);
    size_t n = 0;
    uint32_t *idx = malloc(SPACE * sizeof *idx);
    float *val = malloc(SPACE * sizeof *val);
    for (uint32_t i = 0; i < SPACE; i += (uint32_t)rank + 2) {
        idx[n] = i;
        val[n++] = (float)(rank + 1);
    }
    flare_sparse_result res;
    if ((rc = flare_sparse_allreduce(s, idx, val, n, FLARE_FLOAT32, FLARE_SUM, &res)) != FLARE_OK) die("sparse", rc);
    size_t k = 0;
    for (uint32_t i = 0; i < SPACE; i++) {
        float want = 0;
        int any = 0;
        for (int r = 0; r < world; r++) {
            if (i % (uint32_t)(r + 2) == 0) {
                want += (float)(r + 1);
                any = 1;
            }
        }
        if (!any) continue;
        if (k >= res.count || res.indices[k] != i || ((float *)res.values)[k] != want) {
            fprintf(stderr, "rank %d: sparse: pair %zu of %zu: want index %u = %g\n", rank, k, res.count, i, want);
            exit(1);
        }
        k++;
    }
    if (k != res.count) {
        fprintf(stderr, "rank %d: sparse: %zu pairs, want %zu\n", rank, res.count, k);
        exit(1);
    }
    flare_counters st;
    if ((rc = flare_stats(s, &st)) != FLARE_OK) die("stats", rc);
    printf("ok sparse: %zu pairs in, %zu out, %llu packets sent, %llu spilled pairs\n", n, res.count,
           (unsigned long long)st.packets_sent, (unsigned long long)st.spilled_pairs);
    flare_sparse_free(&res);
    free(idx);
    free(val);
    if ((rc = flare_close(s)) != FLARE_OK) die("close", rc);
}

/* refused asks for packets of 2 KiB from a switch whose packets carry 1 KiB. */
static void refused(void) {
    flare_options o = next_job(FLARE_FLOAT32, FLARE_SUM, N);
    o.packet_elems = 512;
    flare_session s;
    int rc = flare_join(&o, &s);
    if (rc != FLARE_EREFUSED || strstr(flare_last_error(), "packets carry at most") == NULL) {
        fprintf(stderr, "rank %d: refused: code %d (%s), want FLARE_EREFUSED\n", rank, rc, flare_last_error());
        exit(1);
    }
    printf("ok refused: %s\n", flare_last_error());
}

/* timeout: every rank joins, the last never calls; the others' calls time
 * out naming it. The first rank to time out aborts the job for all, so a
 * rank whose own timer has not fired yet fails with FLARE_EABORTED, its
 * message carrying the first one's reason, which names the same rank. A second job then serves as a barrier: its join returns
 * once every rank is past the timeout. */
static void timeout(void) {
    flare_options o = next_job(FLARE_INT32, FLARE_SUM, N);
    o.timeout_ms = 2000;
    flare_session s, bar;
    int rc = flare_join(&o, &s);
    if (rc != FLARE_OK) die("timeout join", rc);
    flare_options b = next_job(FLARE_INT32, FLARE_SUM, 1);
    b.join_timeout_ms = 60000;
    if (rank < world - 1) {
        int32_t *buf = calloc(N, sizeof *buf);
        char want[64];
        snprintf(want, sizeof want, "waits for rank %d", world - 1);
        rc = flare_allreduce(s, buf, N, FLARE_INT32, FLARE_SUM);
        if ((rc != FLARE_ETIMEOUT && rc != FLARE_EABORTED) || strstr(flare_last_error(), want) == NULL) {
            fprintf(stderr, "rank %d: timeout: code %d (%s), want FLARE_ETIMEOUT or FLARE_EABORTED naming rank %d\n", rank, rc,
                    flare_last_error(), world - 1);
            exit(1);
        }
        printf("ok timeout: %s\n", flare_last_error());
        free(buf);
    } else {
        printf("ok timeout: rank %d stays away\n", rank);
    }
    if ((rc = flare_join(&b, &bar)) != FLARE_OK) die("barrier join", rc);
    int32_t one = 1;
    if ((rc = flare_allreduce(bar, &one, 1, FLARE_INT32, FLARE_SUM)) != FLARE_OK || one != world) die("barrier", rc);
    flare_close(bar);
    flare_close(s);
    if ((rc = flare_close(s)) != FLARE_EHANDLE) {
        fprintf(stderr, "rank %d: second close: code %d, want FLARE_EHANDLE\n", rank, rc);
        exit(1);
    }
}

/* forked: a child forked after the library was loaded gets FLARE_EFORK. */
static void forked(void) {
    pid_t pid = fork();
    if (pid < 0) die("fork", 0);
    if (pid == 0) {
        flare_counters st;
        int rc = flare_stats(1, &st);
        if (rc != FLARE_EFORK || strstr(flare_last_error(), "spawn") == NULL) {
            fprintf(stderr, "rank %d: child: code %d (%s), want FLARE_EFORK\n", rank, rc, flare_last_error());
            _exit(1);
        }
        printf("ok fork: %s\n", flare_last_error());
        fflush(stdout);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rank %d: forked child failed\n", rank);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SWITCH JOB RANK WORLD\n", argv[0]);
        return 2;
    }
    sw = argv[1];
    job = (uint32_t)strtoul(argv[2], NULL, 10);
    rank = atoi(argv[3]);
    world = atoi(argv[4]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int dt = FLARE_INT8; dt <= FLARE_FLOAT16; dt++) {
        int integer = dt <= FLARE_INT64;
        for (int op = FLARE_SUM; op <= (integer ? FLARE_XOR : FLARE_PROD); op++) dense(dt, op);
    }
    undefined();
    sparse();
    refused();
    timeout();
    forked();
    printf("ok all (%s)\n", flare_version());
    return 0;
}
