/* A C program on libdtrt whose first device mismatch makes the tracer write its source facts
 * (tracer/front/cfacts.c); tests/tracer/c_facts_check.sh compares them with the lines below, which it names by number:
 * keep the line numbers when editing (hence no clang-format). */ /* clang-format off */
#include <devtrace/dt.h>
#include <stdio.h>
#include <stdlib.h>
#include <devtrace/dt_nn.h>
static void *check(void *p) { /* the program's own wrapper of its calls */
    if (!p) exit(1);
    return p;
}

int main(void) {
    dt_device dev = dt_default_device();
    dt_tensor *a, *b;
    a = check(dt_ones(DT_SHAPE(4), DT_F32,
                      dt_cpu_device()));
    b = check(dt_to(a, dev));
    for (int step = 0; step < 2; step++) {
        dt_tensor *c = dt_add(a, b); /* a is on the cpu, b on dev: fails on a GPU */
        printf("step %d: %s\n", step, c ? "ok" : "failed");
        dt_free(c);
    }
    dt_free(a), dt_free(b);
    dt_module *lin = check(dt_nn_linear(4, 4, 1)), *none = NULL; /* a module's local (DWARF) */
    dt_optimizer *sgd = check(dt_sgd(lin, 0.1, 0, 0)); /* an optimizer's local */
    dt_optimizer_free(sgd), dt_module_free(lin), dt_module_free(none);
    return 0;
}

/* a tensor kept in a field of the program's own struct: binds_attr (not called) */
struct c_facts_holder {
    dt_tensor *t;
};
void c_facts_fill(struct c_facts_holder *h);
void c_facts_fill(struct c_facts_holder *h) { h->t = dt_ones(DT_SHAPE(2), DT_F32, dt_cpu_device()); }
