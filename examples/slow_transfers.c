/* A loop that runs correctly but copies more than it should, for
 * `devtrace transfers` to flag (tests/viewer/transfers_flags.py): a constant made
 * on the CPU once and moved to the device again on every step, a
 * device -> cpu -> device round trip on every step, and a helper that moves
 * each batch once but a running statistic four times a step. The move of
 * each batch and the read of each step's loss are what correct code does:
 * not flagged.
 *
 *   DEVTRACE_SIM_CUDA=1 devtrace run -- ./slow_transfers && devtrace transfers devtrace.slow_transfers.*.db
 */
#include <devtrace/dt.h>
#include <stdio.h>

#define STEPS 8
#define B     16 /* batch */
#define D     8  /* features */

/* Every batch goes through here once a step, the statistic four times. */
static dt_tensor *to_device(const dt_tensor *t, dt_device dev) {
    return dt_to(t, dev); /* devtrace: transfers outlier */
}

int main(void) {
    dt_device dev = dt_default_device(), cpu = dt_cpu_device();
    dt_manual_seed(0);
    dt_tensor *mean_cpu = dt_full(DT_SHAPE(D), 0.5, DT_F32, cpu);
    dt_tensor *stat_cpu = dt_zeros(DT_SHAPE(D), DT_F32, cpu); /* updated on the cpu, in place */
    double total = 0;
    for (int step = 0; step < STEPS; step++) {
        dt_tensor *x_cpu = dt_randn(DT_SHAPE(B, D), cpu);
        dt_tensor *x = to_device(x_cpu, dev); /* the batch's move: fine */
        for (int k = 0; k < 4; k++) {
            dt_add_scalar_(stat_cpu, 0.25);
            dt_tensor *stat = to_device(stat_cpu, dev);
            dt_free(stat);
        }
        dt_tensor *mean = dt_to(mean_cpu, dev); /* devtrace: transfers same_content */
        dt_tensor *centered = dt_sub(x, mean);  /* (B, D) on the device */
        dt_tensor *host = dt_to(centered, cpu); /* down to the cpu ... */
        dt_tensor *sq = dt_mul(host, host);     /* ... squared there ... */
        dt_tensor *back = dt_to(sq, dev);       /* devtrace: transfers round_trip */
        dt_tensor *loss = dt_mean(back);
        total += dt_item(loss); /* the loss read each step: fine */
        dt_tensor *all[] = {x_cpu, x, mean, centered, host, sq, back, loss};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
    }
    printf("mean loss %.4f\n", total / STEPS);
    dt_free(mean_cpu);
    dt_free(stat_cpu);
    return 0;
}
