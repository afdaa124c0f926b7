/*
 * flare.h — the C interface of Flare's host library (libflare.so).
 *
 * A session is one rank's membership in an allreduce job on a Flare switch,
 * as an MPI or NCCL communicator is: join it with flare_join, reduce
 * buffers in place with flare_allreduce (or index/value pairs with
 * flare_sparse_allreduce), read its counters with flare_stats, and end it
 * with flare_close. Every rank of a job must make the same calls in the same
 * order. The usage loop (examples/c/allreduce.c is a complete program):
 *
 *     flare_options o = {0};               // zero fields take their defaults
 *     o.switch_addr = "127.0.0.1:7470";
 *     o.job = 7; o.token = secret; o.rank = rank; o.world = 4;
 *     o.dtype = FLARE_FLOAT32; o.op = FLARE_SUM; o.elements = n;
 *     flare_session s;
 *     if (flare_join(&o, &s) != FLARE_OK) { puts(flare_last_error()); ... }
 *     for (step ...) {
 *         compute(grads);
 *         if (flare_allreduce(s, grads, n, FLARE_FLOAT32, FLARE_SUM) != FLARE_OK) ...
 *         // grads now holds the sum over all ranks
 *     }
 *     flare_close(s);
 *
 * Build: `make lib` writes bin/libflare.so and bin/flare.h; link with
 * -Lbin -lflare (and -Wl,-rpath or LD_LIBRARY_PATH to find it at run time).
 *
 * Rules of the interface:
 *  - Every function returns FLARE_OK (0) or a positive FLARE_E* code; after
 *    a failure flare_last_error() returns the message (the switch's own
 *    text where the switch said why), kept per thread until that thread's
 *    next flare_* call.
 *  - A session is an integer handle (0 is never a session). A handle that
 *    was closed, or never was one, gives FLARE_EHANDLE, never a crash.
 *  - The library keeps no pointer the caller passed after a call returns:
 *    buffers are read and written during the call only. The caller keeps no
 *    pointer into the library's memory except a flare_sparse_result, which
 *    it owns until flare_sparse_free.
 *  - Functions may be called from any thread; calls on one session run one
 *    at a time, in the order they take its lock. flare_close from another
 *    thread interrupts a running call (it returns FLARE_ECLOSED).
 *  - Fork: the library runs Go's runtime, whose threads a fork does not
 *    copy. In a child forked after the library was loaded, every call
 *    returns FLARE_EFORK at once instead of hanging; start workers with
 *    spawn or forkserver (Python), or exec, instead.
 *  - Byte order: buffers hold elements in the machine's own order.
 */
#ifndef FLARE_H
#define FLARE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types (the wire's dtype codes). */
enum {
    FLARE_INT8 = 1,
    FLARE_INT16 = 2,
    FLARE_INT32 = 3,
    FLARE_INT64 = 4,
    FLARE_FLOAT32 = 5,
    FLARE_FLOAT64 = 6,
    FLARE_BFLOAT16 = 7, /* a uint16_t holding the upper half of a float32 */
    FLARE_FLOAT16 = 8   /* a uint16_t holding an IEEE 754 binary16 (_Float16, __fp16, numpy.float16) */
};

/* Reductions (the wire's op codes). AND, OR and XOR are defined on the
 * integer types only; the switch's custom ops take codes 128..255. */
enum {
    FLARE_SUM = 1,
    FLARE_MIN = 2,
    FLARE_MAX = 3,
    FLARE_PROD = 4,
    FLARE_AND = 5,
    FLARE_OR = 6,
    FLARE_XOR = 7
};

/* Aggregation designs (flare_options.design). TREE is the reproducible one:
 * bit-identical floating-point results whatever the packets' order. */
enum {
    FLARE_DESIGN_AUTO = 0, /* the switch chooses by message size */
    FLARE_DESIGN_SINGLE = 1,
    FLARE_DESIGN_MULTI = 2,
    FLARE_DESIGN_TREE = 3
};

/* Sparse storage on the switch (flare_options.storage). */
enum {
    FLARE_STORAGE_DEFAULT = 0, /* hash for a sparse job */
    FLARE_STORAGE_HASH = 1,
    FLARE_STORAGE_ARRAY = 2
};

/* Result codes. */
enum {
    FLARE_OK = 0,
    FLARE_EINVAL = 1,    /* a bad argument: an option out of range, a wrong count, dtype or op, a NULL pointer */
    FLARE_EHANDLE = 2,   /* not a live session handle (closed, or never one) */
    FLARE_EREFUSED = 3,  /* the switch refused the join: no memory, parameters that differ from the job's, job full ... */
    FLARE_ETIMEOUT = 4,  /* a join or a call did not complete in time; the message names the ranks the switch waits for */
    FLARE_ESWITCH = 5,   /* the switch failed the job during a call */
    FLARE_ECLOSED = 6,   /* the session was closed (by flare_close on another thread) */
    FLARE_EFORK = 7,     /* called in a child forked after the library was loaded */
    FLARE_EIO = 8,       /* a socket or other system error */
    FLARE_EABORTED = 9   /* another member's call failed and it aborted the job for everyone; the message names
                          * that rank and why (for its timeout, the ranks the switch waits for): close and join again */
};

/*
 * Options of flare_join; hostlib.Options in Go, field for field.
 * The zero rule: start from `flare_options o = {0};`. A field left 0 (or
 * NULL) takes its default, named below; the fields marked "required" have
 * none, and leaving them 0 gives FLARE_EINVAL with a message naming the
 * field. Every rank of a job must give the same values, except rank.
 */
typedef struct flare_options {
    const char *switch_addr; /* required: the switch's UDP address "host:port"; without a port, 7470. Copied during the call */
    uint32_t job;            /* the job id on the switch, chosen by the hosts (0 is a valid id) */
    uint64_t token;          /* the job's secret: the switch drops packets of the job that carry another */
    int32_t rank;            /* this host's rank, 0..world-1 */
    int32_t world;           /* required: ranks in the job, 1..65535 */
    int32_t dtype;           /* required: FLARE_INT8 .. FLARE_FLOAT16 */
    int32_t op;              /* required: FLARE_SUM ..; defined on dtype (no AND/OR/XOR on floats); sparse: SUM, MIN or MAX */
    int64_t elements;        /* required: the vector's length in elements; sparse: the index space (indices < elements) */
    int32_t design;          /* FLARE_DESIGN_*; 0 = auto */
    int32_t buffers;         /* B of the multi-buffer design, 0..255; 0 = the switch chooses */
    int32_t reproducible;    /* nonzero: bit-identical floating-point sums (the tree design; design must be auto or tree) */
    int32_t packet_elems;    /* elements per packet; 0 = the switch chooses (1 KiB of payload) */
    int32_t sparse;          /* nonzero: a sparse job, reduced with flare_sparse_allreduce */
    int32_t storage;         /* sparse: FLARE_STORAGE_*; 0 = hash */
    int64_t block_elems;     /* sparse: indices per block; 0 = the switch chooses (4096) */
    int64_t deadline_ms;     /* > 0: bounded time: the switch releases each block this long after its first packet
                                without the ranks that are late (dense, single-buffer design); 1..65535; 0 = exact */
    int64_t join_timeout_ms; /* bound on flare_join (every rank must join within it); 0 = 10000 */
    int64_t timeout_ms;      /* bound on each allreduce call; 0 = 30000 */
    int32_t disable_offload; /* nonzero: no UDP GSO/GRO on the session's socket */
    int32_t multicast;       /* nonzero: ask for the results on the job's multicast group (a switch run with --multicast;
                                IPv4; the job runs unicast unless every rank asks and the switch has a group free) */
    int64_t busy_poll_us;    /* how long the session's sockets keep polling once they find nothing to read, yielding the
                                CPU between polls, before they sleep: 1..10000 µs; 0 = 50 (a rank is a process of its
                                own, whose CPU would otherwise sleep between a call's datagrams; docs/DEPLOY.md);
                                -1 = sleep at once. This rank's alone */
} flare_options;

/* A session: an integer handle, never 0. */
typedef uint64_t flare_session;

/* The parameters the switch admitted the session with (flare_info). */
typedef struct flare_session_info {
    int32_t rank, world, dtype, op;
    int64_t elements;
    int32_t design;       /* FLARE_DESIGN_SINGLE, _MULTI or _TREE: the switch's choice */
    int32_t buffers;      /* B of the multi-buffer design */
    int32_t window;       /* blocks in flight per host */
    int32_t packet_elems; /* elements per packet and per block */
    int64_t blocks;       /* blocks per allreduce */
} flare_session_info;

/* A session's counters (hostlib.Stats), filled by flare_stats. */
typedef struct flare_counters {
    uint64_t calls;            /* calls that completed */
    uint64_t failed;           /* calls that started and failed */
    uint64_t packets_sent;     /* datagrams sent: data, retransmissions, joins, leaves */
    uint64_t packets_received; /* datagrams received */
    uint64_t retransmits;      /* data packets sent again because their result was overdue */
    uint64_t duplicates;       /* results of blocks already done */
    uint64_t ignored;          /* packets of other calls, jobs or tokens, or malformed */
    uint64_t partial;          /* results released before every rank contributed (bounded time) */
    uint64_t send_errors;      /* datagrams the socket refused */
    uint64_t bytes_sent;       /* UDP payload bytes sent */
    uint64_t bytes_received;   /* UDP payload bytes received */
    uint64_t spilled_pairs;    /* sparse: pairs the switch sent back unaggregated */
    int64_t last_ns;           /* duration of the last completed call */
    int64_t total_ns;          /* of all completed calls */
} flare_counters;

/* The result of a sparse allreduce: count (index, value) pairs, indices
 * strictly increasing; values holds count elements of the session's dtype.
 * The library allocates both arrays (malloc) because their length is known
 * only at the end; release them with flare_sparse_free. */
typedef struct flare_sparse_result {
    uint32_t *indices;
    void *values;
    size_t count;
} flare_sparse_result;

/* flare_join joins the job *opts describes and returns when the switch has
 * admitted it, which happens once all world ranks have joined; *out gets the
 * session. Errors: FLARE_EINVAL (an option, named), FLARE_EREFUSED (the
 * switch's reason), FLARE_ETIMEOUT (no answer within join_timeout_ms),
 * FLARE_EIO. */
int flare_join(const flare_options *opts, flare_session *out);

/* flare_allreduce reduces buf across every rank in place: count elements of
 * dtype, which must be the job's elements and dtype, with op, the job's op.
 * On FLARE_ETIMEOUT the message says which blocks are missing and which
 * ranks the switch waits for; on FLARE_EABORTED another rank failed first
 * (often its own timeout, a moment earlier) and the message carries its
 * reason, with the ranks the switch waits for. After any failure buf holds a mix of input
 * and result and the ranks may be out of step: close and join again. */
int flare_allreduce(flare_session s, void *buf, size_t count, int dtype, int op);

/* flare_sparse_allreduce reduces count (index, value) pairs: indices
 * strictly increasing and below the job's elements, values of dtype. On
 * FLARE_OK *out holds the union of every rank's indices with the reduced
 * values (the same on every rank); free it with flare_sparse_free. On an
 * error *out is zeroed. */
int flare_sparse_allreduce(flare_session s, const uint32_t *indices, const void *values, size_t count,
                           int dtype, int op, flare_sparse_result *out);

/* flare_sparse_free frees a result's arrays and zeroes it; NULL and a
 * zeroed result are fine. */
void flare_sparse_free(flare_sparse_result *r);

/* flare_stats copies the session's counters into *out; it may run during a
 * call on another thread. */
int flare_stats(flare_session s, flare_counters *out);

/* flare_info copies the session's admitted parameters into *out. */
int flare_info(flare_session s, flare_session_info *out);

/* flare_contributors reports, for bounded-time jobs (deadline_ms > 0), how
 * many ranks each block of the last completed call holds: *n gets the
 * number of blocks and the first min(cap, *n) counts go to out (out may be
 * NULL when cap is 0). Exact jobs give *n = 0. Block b covers elements
 * b*packet_elems .. (b+1)*packet_elems-1 (flare_info). */
int flare_contributors(flare_session s, uint16_t *out, size_t cap, size_t *n);

/* flare_close leaves the job and frees the session; the handle is dead
 * afterwards (a second close gives FLARE_EHANDLE). */
int flare_close(flare_session s);

/* flare_last_error returns the message of this thread's last failed call,
 * "" if there was none. Valid until this thread's next flare_* call. */
const char *flare_last_error(void);

/* flare_version returns the library's version string ("flare <commit>"). */
const char *flare_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FLARE_H */
