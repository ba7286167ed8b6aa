/* Makes a long trace for the report benchmark (bench/report.sh): a training-
 * like loop of small ops on a simulated GPU, N iterations of 6 events each
 * (a factory, an op with its output, two frees), throttled so that the
 * tracer's writer keeps up and nothing is dropped, then the labels-on-cpu
 * mistake: a tensor made on the cpu at the start meets a GPU tensor at the
 * end. Usage: gen_trace ITERATIONS (run with DEVTRACE_SIM_CUDA=1 under the
 * tracer). */
#include <devtrace/dt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    dt_device gpu = dt_cuda_device(0), cpu = dt_cpu_device();
    dt_set_error_handler(dt_error_handler_return, NULL, NULL);
    dt_tensor *labels = dt_zeros(DT_SHAPE(4), DT_F32, cpu);
    dt_set_name(labels, "labels");
    for (long i = 0; i < n; i++) {
        dt_tensor *a = dt_zeros(DT_SHAPE(4), DT_F32, gpu);
        dt_tensor *b = dt_add_scalar(a, 1);
        dt_free(a);
        dt_free(b);
        if (i % 20000 == 19999) usleep(150 * 1000); /* 120k events: the writer needs ~0.11 s */
    }
    dt_tensor *x = dt_ones(DT_SHAPE(4), DT_F32, gpu);
    dt_tensor *loss = dt_sub(x, labels); /* cuda:0 and cpu */
    printf("%s\n", loss ? "no mismatch?" : "mismatch recorded");
    dt_free(x);
    dt_free(labels);
    return 0;
}
