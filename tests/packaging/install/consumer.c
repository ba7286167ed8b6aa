/* A user's program built against an installed devtrace: libdtrt found
 * through pkg-config (libdtrt.pc) or find_package(devtrace). It adds a
 * cpu bias to a tensor moved to the default device: on a (simulated) GPU,
 * the device-placement bug; with --fixed the bias is moved too. */
#include <devtrace/dt.h>
#include <devtrace/probe.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int fixed = argc > 1 && strcmp(argv[1], "--fixed") == 0;
    dt_device dev = dt_default_device();
    printf("probe ABI %u\n", DTP_ABI_VERSION);
    dt_tensor *x_cpu = dt_ones(DT_SHAPE(4, 3), DT_F32, dt_cpu_device());
    dt_tensor *x = dt_to(x_cpu, dev);
    dt_tensor *bias = dt_zeros(DT_SHAPE(3), DT_F32, dt_cpu_device()); /* devtrace: origin */
    dt_set_name(bias, "bias");
    if (fixed) {
        dt_tensor *moved = dt_to(bias, dev);
        dt_free(bias);
        bias = moved;
    }
    dt_tensor *y = dt_add(x, bias); /* fails here on a GPU unless fixed */
    printf("sum: %g\n", dt_item(dt_sum(y)));
    return 0;
}
