/* A device mismatch inside a helper the compiler inlines into main: the
 * report's call stack must show the helper as its own frame (marked
 * inlined) at the failing line, and main at the line that called it. */
#include <devtrace/dt.h>

static inline __attribute__((always_inline)) dt_tensor *add_bias(dt_tensor *x, dt_tensor *bias) {
    return dt_add(x, bias); /* inlined: fails here */
}

int main(void) {
    int64_t shape[1] = {3};
    dt_tensor *x = dt_ones(1, shape, DT_F32, dt_cuda_device(0));
    dt_tensor *bias = dt_ones(1, shape, DT_F32, dt_cpu_device());
    dt_tensor *y = add_bias(x, bias); /* calls the inlined helper */
    return y == NULL;
}
