/* The C side of libflare: every public function of flare.h is here. Each
 * checks that it runs in the process that loaded the library (a forked
 * child has no Go runtime threads, and entering Go there hangs), clears
 * this thread's last error, and calls the Go side (flare_go_*, exported
 * from capi/*.go). The last error is per thread, so it needs no lock and a
 * message cannot be overwritten by another thread's call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flare.h"
#include "flare_internal.h"
#include "_cgo_export.h"

/* The process that loaded the library (set before any call can run). */
static pid_t flare_loader_pid;

__attribute__((constructor)) static void flare_record_loader(void) { flare_loader_pid = getpid(); }

/* This thread's last error message; NULL until the first failure. One
 * buffer per thread that ever failed a call, reused. */
static __thread char *flare_err;
static __thread size_t flare_err_cap;

void flare_set_error(const char *p, size_t n) {
    if (n + 1 > flare_err_cap) {
        char *b = realloc(flare_err, n + 1);
        if (b == NULL) {
            return; /* keep the old text; the code still says what failed */
        }
        flare_err = b;
        flare_err_cap = n + 1;
    }
    memcpy(flare_err, p, n);
    flare_err[n] = '\0';
}

static void flare_clear_error(void) {
    if (flare_err != NULL) {
        flare_err[0] = '\0';
    }
}

const char *flare_last_error(void) { return flare_err != NULL ? flare_err : ""; }

/* flare_forked reports whether this is a child forked after loading, and
 * sets the error saying what to do instead. */
static int flare_forked(void) {
    pid_t pid = getpid();
    if (pid == flare_loader_pid) {
        return 0;
    }
    char msg[320];
    int n = snprintf(msg, sizeof msg,
                     "libflare: called in process %ld, forked from process %ld after it loaded libflare: "
                     "the library's Go runtime does not survive fork; start workers with spawn or forkserver "
                     "(Python multiprocessing), or exec them, and load libflare there",
                     (long)pid, (long)flare_loader_pid);
    flare_set_error(msg, n < 0 ? 0 : (n >= (int)sizeof msg ? sizeof msg - 1 : (size_t)n));
    return 1;
}

#define FLARE_ENTER()           \
    do {                        \
        if (flare_forked()) {   \
            return FLARE_EFORK; \
        }                       \
        flare_clear_error();    \
    } while (0)

int flare_join(const flare_options *opts, flare_session *out) {
    FLARE_ENTER();
    return flare_go_join((flare_options *)opts, out);
}

int flare_allreduce(flare_session s, void *buf, size_t count, int dtype, int op) {
    FLARE_ENTER();
    return flare_go_allreduce(s, buf, count, dtype, op);
}

int flare_sparse_allreduce(flare_session s, const uint32_t *indices, const void *values, size_t count,
                           int dtype, int op, flare_sparse_result *out) {
    if (out != NULL) {
        memset(out, 0, sizeof *out);
    }
    FLARE_ENTER();
    return flare_go_sparse_allreduce(s, (uint32_t *)indices, (void *)values, count, dtype, op, out);
}

void flare_sparse_free(flare_sparse_result *r) {
    if (r == NULL) {
        return;
    }
    free(r->indices);
    free(r->values);
    memset(r, 0, sizeof *r);
}

int flare_stats(flare_session s, flare_counters *out) {
    FLARE_ENTER();
    return flare_go_stats(s, out);
}

int flare_info(flare_session s, flare_session_info *out) {
    FLARE_ENTER();
    return flare_go_info(s, out);
}

int flare_contributors(flare_session s, uint16_t *out, size_t cap, size_t *n) {
    FLARE_ENTER();
    return flare_go_contributors(s, out, cap, n);
}

int flare_close(flare_session s) {
    FLARE_ENTER();
    return flare_go_close(s);
}

const char *flare_version(void) {
    if (flare_forked()) {
        return "flare (unavailable in a forked child)";
    }
    return flare_go_version();
}
