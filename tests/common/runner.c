/* The Check runner for devtrace's unit tests: `dt_tests [SUITE]` runs one
 * suite (as ctest does, one ctest test per suite) or all of them. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

static const struct {
    const char *name;
    Suite *(*make)(void);
} suites[] = {
    {"tensor", make_tensor_suite},       {"ops", make_ops_suite},
    {"device", make_device_suite},       {"backends", make_backends_suite},
    {"errors", make_errors_suite},       {"probes", make_probes_suite},
    {"tracer", make_tracer_suite},       {"autograd", make_autograd_suite},
    {"train", make_train_suite},         {"viewer", make_viewer_suite},
    {"interpose", make_interpose_suite}, {"bugs", make_bugs_suite},
#ifdef DT_HAVE_TORCH
    {"libtorch", make_libtorch_suite},
#endif
#ifdef DT_HAVE_CUPTI
    {"cupti", make_cupti_suite},
#endif
    {"hardening", make_hardening_suite}, {"run", make_run_suite},
    {"flight", make_flight_suite},
};

/* `dt_tests backends-real`: the backends suite on the real CUDA backend; exits
 * 77 (ctest's skip) with the reason when there is no GPU to run it on. */
static int real_cuda_or_skip(void) {
    dt_set_error_handler(dt_error_handler_return, NULL, NULL);
    const char *b = dt_device_backend_name(dt_cuda_device(0));
    if (b && strcmp(b, "cuda") == 0) return 0;
    printf("SKIP: real CUDA backend not available (%s); the simulated-GPU suites ('backends', 'bugs') run the same "
           "cases\n",
           getenv("DEVTRACE_SIM_CUDA") ? "DEVTRACE_SIM_CUDA is set"
           : b                         ? "cuda:0 is not real"
                                       : "no CUDA GPU found, or built without the CUDA toolkit");
    return 77;
}

int main(int argc, char **argv) {
    SRunner *sr = NULL;
    if (argc > 1 && strcmp(argv[1], "backends-real") == 0) {
        int rc = real_cuda_or_skip();
        if (rc) return rc;
        argv[1] = "backends";
    }
    if (argc > 1 && strcmp(argv[1], "bugs-real") == 0) { /* the real bugs, on the real CUDA backend */
        int rc = real_cuda_or_skip();
        if (rc) return rc;
        setenv("DT_BUGS_REAL", "1", 1);
        argv[1] = "bugs";
    }
    int n = (int)(sizeof suites / sizeof suites[0]);
    for (int i = 0; i < n; i++) {
        if (argc > 1 && strcmp(argv[1], suites[i].name) != 0) continue;
        if (!sr)
            sr = srunner_create(suites[i].make());
        else
            srunner_add_suite(sr, suites[i].make());
    }
    if (!sr) {
        fprintf(stderr, "dt_tests: no suite named '%s'; suites:", argv[1]);
        for (int i = 0; i < n; i++) fprintf(stderr, " %s", suites[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
