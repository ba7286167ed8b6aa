/* An op storm: THREADS threads, each making N tiny ops on the runtime as
 * fast as it can (an in-place add of 0-dim cpu tensors: an op begin and
 * end, no tensor made), and the wall time it took. The producers outrun
 * any writer here (the case where a full ring used to drop events), so the
 * traced/untraced ratio is the writer's rate, not the tracer's cost on a
 * real workload: bench/run.sh reports it with the events lost (goal 0).
 * Usage: op_storm THREADS N */
#include <devtrace/dt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long n_ops;

static void *storm(void *arg) {
    (void)arg;
    dt_tensor *sum = dt_zeros(0, NULL, DT_F32, dt_cpu_device()), *one = dt_ones(0, NULL, DT_F32, dt_cpu_device());
    for (long i = 0; i < n_ops; i++) dt_add_(sum, one);
    double v = dt_item(sum);
    dt_free(one);
    dt_free(sum);
    return (void *)(long)(v == (double)n_ops);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    n_ops = argc > 2 ? atol(argv[2]) : 1000000;
    if (threads < 1 || threads > 64 || n_ops < 1) {
        fprintf(stderr, "usage: op_storm THREADS(1..64) N\n");
        return 2;
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t t[64];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, storm, NULL);
    int ok = 1;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r != NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("ms %.1f %s\n", (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6,
           ok ? "ok" : "WRONG SUM");
    return ok ? 0 : 1;
}
