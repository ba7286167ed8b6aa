/* Probe cost: calls dtp_* probes directly from a 20-frame deep stack, N
 * times, and prints ns per call: `created` or `freed` (each unwinds), or
 * `op` (op begin, its output, its end, a free: one unwind in four calls,
 * the others take the op's stack, as in a training loop). Run untraced (the empty probes of libdtrt)
 * and traced (libdevtrace.so preloaded): the difference is the producer's
 * cost per event. Used by bench/run.sh. */
#include <devtrace/probe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long n_calls;
static uint64_t next_id = 1; /* ids are never reused, as the probe ABI requires */
static const char *which;

__attribute__((noinline)) static double burst(void) {
    int64_t shape[2] = {64, 10}, strides[2] = {10, 1};
    struct dtp_tensor t = {.id = 1,
                           .storage_id = 1,
                           .dtype = 0,
                           .ndim = 2,
                           .shape = shape,
                           .strides = strides,
                           .device = {1, 0},
                           .nbytes = 2560};
    struct dtp_origin o = {.kind = 1, .what = "linear", .op_seq = 7};
    double t0 = now();
    if (strcmp(which, "created") == 0)
        for (long i = 0; i < n_calls; i++) {
            t.id = next_id++;
            dtp_tensor_created(&t, &o);
        }
    else if (strcmp(which, "op") == 0) /* the training-loop mix: an op (one unwind), its output, a free */
        for (long i = 0; i < n_calls; i += 4) {
            struct dtp_arg args[2] = {{"self", t.id, {1, 0}}, {"other", t.id, {1, 0}}};
            struct dtp_op op = {.seq = (uint64_t)i + 8, .name = "add", .nargs = 2, .args = args};
            uint64_t out = next_id++;
            dtp_op_begin(&op);
            t.id = out;
            o.op_seq = op.seq;
            dtp_tensor_created(&t, &o);
            dtp_op_end(op.seq, "add", 0, 1, &out);
            dtp_tensor_freed(out);
        }
    else
        for (long i = 0; i < n_calls; i++) dtp_tensor_freed(next_id++);
    return now() - t0;
}

/* Recurses to make the stack `depth` frames deeper, then measures. */
__attribute__((noinline)) static double deep(int depth) {
    if (depth > 0) {
        double r = deep(depth - 1);
        __asm__ volatile("" ::: "memory"); /* no tail call: the frame stays */
        return r;
    }
    return burst();
}

int main(int argc, char **argv) {
    which = argc > 1 ? argv[1] : "freed";
    n_calls = argc > 2 ? atol(argv[2]) : 200000;
    dtp_runtime_init(DTP_ABI_VERSION, "bench", "0");
    double warm = deep(16); /* page in the ring, resolve symbols */
    (void)warm;
    double s = deep(16); /* main + deep*17 + burst: about 20 frames at the probe */
    printf("%s %.1f ns/call\n", which, s * 1e9 / (double)n_calls);
    return 0;
}
