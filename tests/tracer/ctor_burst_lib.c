/* A library whose constructor records a burst of events while the program
 * is inside dlopen (the loader's lock held): the tracer's test that a full
 * ring waits for the writer there as anywhere, with nothing dropped. */
#include <devtrace/dt.h>
#include <stdlib.h>

__attribute__((constructor)) static void burst(void) {
    const char *n = getenv("DT_CTOR_BURST");
    dt_tensor *t = dt_zeros(DT_SHAPE(2), DT_F32, dt_cpu_device());
    for (int i = 0, k = n ? atoi(n) : 1000; i < k; i++) dt_set_name(t, "ctor");
    dt_free(t);
}

int dt_dummy_answer(void) { return 42; }
