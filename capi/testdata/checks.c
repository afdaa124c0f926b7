/* checks.c: libflare's own checks of what a C caller passes, each alone.
 * The Python package checks its arguments before it calls the library,
 * and examples/c/allreduce.c passes good ones, so neither reaches these.
 * A bad argument gets its code and a message naming it, and changes
 * nothing: the buffer is left as it was and the session stays usable.
 * Run by capi's TestCChecks against a switch: `checks HOST:PORT`. It
 * prints "ok NAME" for each check passed and exits 1 if any failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flare.h"

static const char *addr;
static int failed;

/* expect checks that a call returned want with a last error containing
 * text (NULL: an empty message, as after a call that succeeded). */
static void expect(const char *name, int rc, int want, const char *text) {
    const char *msg = flare_last_error();
    int ok = rc == want && (text != NULL ? strstr(msg, text) != NULL : msg[0] == '\0');
    if (!ok) {
        fprintf(stderr, "%s: code %d (\"%s\"), want %d and a message saying \"%s\"\n", name, rc, msg, want,
                text != NULL ? text : "");
        failed = 1;
        return;
    }
    printf("ok %s\n", name);
}

/* options of a one-rank float32 sum job of 8 elements (or 8 indices). */
static flare_options job(int id, int sparse) {
    flare_options o = {0};
    o.switch_addr = addr;
    o.job = id;
    o.token = 77;
    o.world = 1;
    o.dtype = FLARE_FLOAT32;
    o.op = FLARE_SUM;
    o.elements = 8;
    o.sparse = sparse;
    return o;
}

static const float input[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* unchanged checks that buf still holds input. */
static void unchanged(const char *name, const float *buf) {
    if (memcmp(buf, input, sizeof input) != 0) {
        fprintf(stderr, "%s: the buffer changed\n", name);
        failed = 1;
    }
}

static void join_options(void) {
    flare_session s;
    flare_options o = job(40, 0);
    o.elements = 0;
    expect("join elements 0", flare_join(&o, &s), FLARE_EINVAL, "elements = 0: required");
    o = job(40, 0);
    o.busy_poll_us = 1000000000;
    expect("join busy_poll_us too long", flare_join(&o, &s), FLARE_EINVAL, "busy_poll_us = 1000000000: must be");
    o = job(40, 0);
    o.timeout_ms = INT64_MAX;
    expect("join timeout_ms overflowing", flare_join(&o, &s), FLARE_EINVAL, "timeout_ms = 9223372036854775807: must be");
}

/* joined joins with o, checking that it succeeds; it reports whether it did. */
static int joined(const char *name, const flare_options *o, flare_session *s) {
    int rc = flare_join(o, s);
    expect(name, rc, FLARE_OK, NULL);
    return rc == FLARE_OK;
}

static void dense_calls(void) {
    flare_session s;
    flare_options o = job(41, 0);
    o.deadline_ms = 5000; /* bounded time, for flare_contributors' counts */
    if (!joined("join dense", &o, &s)) {
        return;
    }
    float buf[8];
    memcpy(buf, input, sizeof buf);
    expect("allreduce dtype", flare_allreduce(s, buf, 8, FLARE_INT32, FLARE_SUM), FLARE_EINVAL, "dtype = 3, but the session's dtype is 5");
    unchanged("allreduce dtype", buf);
    expect("allreduce op", flare_allreduce(s, buf, 8, FLARE_FLOAT32, FLARE_MAX), FLARE_EINVAL, "op = 3, but the job reduces with 1");
    unchanged("allreduce op", buf);
    expect("allreduce count", flare_allreduce(s, buf, 4, FLARE_FLOAT32, FLARE_SUM), FLARE_EINVAL, "count = 4, but the job's vector has 8");
    unchanged("allreduce count", buf);
    expect("allreduce NULL", flare_allreduce(s, NULL, 8, FLARE_FLOAT32, FLARE_SUM), FLARE_EINVAL, "buf is NULL");
    flare_sparse_result r;
    uint32_t idx[1] = {0};
    expect("sparse on a dense job", flare_sparse_allreduce(s, idx, input, 1, FLARE_FLOAT32, FLARE_SUM, &r), FLARE_EINVAL,
           "joined a dense job");
    expect("allreduce after the refusals", flare_allreduce(s, buf, 8, FLARE_FLOAT32, FLARE_SUM), FLARE_OK, NULL);
    unchanged("allreduce of one rank", buf);

    /* contributors: one block, its one rank; cap 0 writes nothing. */
    uint16_t out[2] = {0xBEEF, 0xBEEF};
    size_t n = 0;
    expect("contributors cap 0", flare_contributors(s, out, 0, &n), FLARE_OK, NULL);
    if (n != 1 || out[0] != 0xBEEF) {
        fprintf(stderr, "contributors cap 0: n = %zu, out[0] = %#x; want 1 and nothing written\n", n, out[0]);
        failed = 1;
    }
    expect("contributors cap 2", flare_contributors(s, out, 2, &n), FLARE_OK, NULL);
    if (n != 1 || out[0] != 1 || out[1] != 0xBEEF) {
        fprintf(stderr, "contributors cap 2: n = %zu, out = %#x %#x; want 1, then 1 and 0xbeef\n", n, out[0], out[1]);
        failed = 1;
    }

    expect("close", flare_close(s), FLARE_OK, NULL);
    expect("allreduce on a closed session", flare_allreduce(s, buf, 8, FLARE_FLOAT32, FLARE_SUM), FLARE_EHANDLE,
           "not a live session");
    expect("stats on a closed session", flare_stats(s, &(flare_counters){0}), FLARE_EHANDLE, "not a live session");
    expect("close twice", flare_close(s), FLARE_EHANDLE, "not a live session");
}

static void sparse_calls(void) {
    flare_session s;
    flare_options o = job(42, 1);
    if (!joined("join sparse", &o, &s)) {
        return;
    }
    float buf[8];
    memcpy(buf, input, sizeof buf);
    expect("dense on a sparse job", flare_allreduce(s, buf, 8, FLARE_FLOAT32, FLARE_SUM), FLARE_EINVAL,
           "joined a sparse job: use flare_sparse_allreduce");
    unchanged("dense on a sparse job", buf);
    uint32_t idx[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    float val[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    flare_sparse_result r;
    expect("sparse count", flare_sparse_allreduce(s, idx, val, 9, FLARE_FLOAT32, FLARE_SUM, &r), FLARE_EINVAL,
           "count = 9 pairs, more than the job's 8 indices");
    expect("sparse NULL indices", flare_sparse_allreduce(s, NULL, val, 2, FLARE_FLOAT32, FLARE_SUM, &r), FLARE_EINVAL,
           "indices or values is NULL with count = 2");
    expect("sparse NULL values", flare_sparse_allreduce(s, idx, NULL, 2, FLARE_FLOAT32, FLARE_SUM, &r), FLARE_EINVAL,
           "indices or values is NULL with count = 2");
    uint32_t two[2] = {1, 5};
    float vals[2] = {1.5f, 2.5f};
    int rc = flare_sparse_allreduce(s, two, vals, 2, FLARE_FLOAT32, FLARE_SUM, &r);
    expect("sparse after the refusals", rc, FLARE_OK, NULL);
    if (rc == FLARE_OK) {
        const float *v = r.values;
        if (r.count != 2 || r.indices[0] != 1 || r.indices[1] != 5 || v[0] != 1.5f || v[1] != 2.5f) {
            fprintf(stderr, "sparse result: %zu pairs, want (1, 1.5) and (5, 2.5)\n", r.count);
            failed = 1;
        }
        flare_sparse_free(&r);
    }
    expect("close sparse", flare_close(s), FLARE_OK, NULL);
}

struct joining {
    flare_options o;
    flare_session s;
    int rc;
};

static void *join_rank(void *arg) {
    struct joining *j = arg;
    j->rc = flare_join(&j->o, &j->s);
    return NULL;
}

/* aborted: a job of two ranks in this process; rank 0's call times out
 * waiting for rank 1 and aborts the job, so rank 1's call then fails
 * with FLARE_EABORTED, naming rank 0 and its reason. */
static void aborted(void) {
    struct joining r[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        r[i].o = job(43, 0);
        r[i].o.rank = i;
        r[i].o.world = 2;
        r[i].o.timeout_ms = 500;
        pthread_create(&th[i], NULL, join_rank, &r[i]);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
    }
    expect("join two ranks", r[0].rc == FLARE_OK && r[1].rc == FLARE_OK ? FLARE_OK : r[0].rc | r[1].rc, FLARE_OK, NULL);
    if (r[0].rc != FLARE_OK || r[1].rc != FLARE_OK) {
        return;
    }
    float buf[8];
    memcpy(buf, input, sizeof buf);
    expect("timeout", flare_allreduce(r[0].s, buf, 8, FLARE_FLOAT32, FLARE_SUM), FLARE_ETIMEOUT, "waits for rank 1");
    expect("aborted", flare_allreduce(r[1].s, buf, 8, FLARE_FLOAT32, FLARE_SUM), FLARE_EABORTED, "rank 0");
    flare_close(r[0].s);
    flare_close(r[1].s);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: checks HOST:PORT\n");
        return 2;
    }
    addr = argv[1];
    join_options();
    dense_calls();
    sparse_calls();
    aborted();
    return failed;
}
