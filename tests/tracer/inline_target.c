/* A device mismatch two inlined helpers deep: main calls layer, which calls
 * checked_add, which calls dt_add with a cuda:0 input and a cpu bias. Built
 * -O2 -g, both helpers are inlined into main; the report's call stack must
 * show each helper as its own frame (marked inlined) at its own line, and
 * main at the line that called the outer one. */
#include <devtrace/dt.h>

static inline __attribute__((always_inline)) dt_tensor *checked_add(dt_tensor *x, dt_tensor *bias) {
    return dt_add(x, bias); /* inlined: fails here */
}

static inline __attribute__((always_inline)) dt_tensor *layer(dt_tensor *x, dt_tensor *bias) {
    dt_tensor *y = checked_add(x, bias); /* inlined: calls checked_add */
    return y;
}

int main(void) {
    int64_t shape[1] = {3};
    dt_tensor *x = dt_ones(1, shape, DT_F32, dt_cuda_device(0));
    dt_tensor *bias = dt_ones(1, shape, DT_F32, dt_cpu_device()); /* devtrace: origin */
    dt_tensor *y = layer(x, bias);                                /* calls the inlined helper */
    return y == NULL;
}
