/* Unit tests of error reporting: the default handler prints
 * "RuntimeError: <message>" (IndexError for index errors) and exits 1 as an
 * uncaught Python exception would; a replaced handler sees kind, op and
 * message, and failing calls then return NULL / -1; errors are per thread. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static char stderr_path[64];
static const char *expect_line;

/* Runs at exit(): the default handler's output must be the expected line. */
static void verify_stderr_at_exit(void) {
    fflush(stderr);
    FILE *f = fopen(stderr_path, "r");
    char buf[1024] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    unlink(stderr_path);
    if (strcmp(buf, expect_line) != 0) {
        fprintf(stdout, "stderr was \"%s\", expected \"%s\"\n", buf, expect_line);
        fflush(stdout);
        _exit(3); /* the exit test expects 1 */
    }
}

static void capture_stderr(const char *expected) {
    snprintf(stderr_path, sizeof stderr_path, "/tmp/dt_stderr_%d", (int)getpid());
    ck_assert_ptr_nonnull(freopen(stderr_path, "w", stderr));
    expect_line = expected;
    atexit(verify_stderr_at_exit);
}

START_TEST(test_default_handler_exits_like_python) {
    dt_sim_cuda_enable(1);
    capture_stderr("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                   "cuda:0 and cpu! (when checking argument for argument mat2 in method matmul)\n");
    dt_tensor *a = dt_ones(DT_SHAPE(2, 2), DT_F32, dt_cuda_device(0)),
              *b = dt_ones(DT_SHAPE(2, 2), DT_F32, dt_cpu_device());
    dt_matmul(a, b);
    ck_abort_msg("the default handler returned");
}
END_TEST

START_TEST(test_default_handler_index_error) {
    capture_stderr("IndexError: index out of range in self (index 5, size 2 along dimension 0)\n");
    int64_t ids[] = {5};
    dt_tensor *w = dt_ones(DT_SHAPE(2, 2), DT_F32, dt_cpu_device()),
              *i = dt_from_data(ids, DT_I64, DT_SHAPE(1), dt_cpu_device());
    dt_embedding(w, i);
    ck_abort_msg("the default handler returned");
}
END_TEST

struct seen {
    int calls;
    dt_error_kind kind;
    char op[64], message[512], last_error_inside[512];
};

static void recording_handler(const dt_error_info *err, void *ctx) {
    struct seen *s = ctx;
    s->calls++;
    s->kind = err->kind;
    snprintf(s->op, sizeof s->op, "%s", err->op);
    snprintf(s->message, sizeof s->message, "%s", err->message);
    /* a handler may call back into the runtime */
    snprintf(s->last_error_inside, sizeof s->last_error_inside, "%s", dt_last_error());
}

START_TEST(test_custom_handler_and_return_values) {
    struct seen s = {0};
    void *old_ctx = (void *)1;
    dt_error_handler old = dt_set_error_handler(recording_handler, &s, &old_ctx);
    ck_assert_ptr_eq((void *)old, (void *)dt_error_handler_default);
    ck_assert_ptr_null(old_ctx);
    ck_assert_int_eq(dt_last_error_kind(), DT_OK);
    ck_assert_str_eq(dt_last_error(), "");
    dt_tensor *a = dt_ones(DT_SHAPE(2, 3), DT_F32, dt_cpu_device());
    ck_assert_ptr_null(dt_matmul(a, a));
    ck_assert_int_eq(s.calls, 1);
    ck_assert_int_eq(s.kind, DT_ERR_SHAPE);
    ck_assert_str_eq(s.op, "matmul");
    ck_assert_str_eq(s.message, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
    ck_assert_str_eq(s.last_error_inside, s.message);
    ck_assert_int_eq(dt_fill_(a, 1), 0); /* success leaves the error as it was */
    ck_assert_int_eq(dt_last_error_kind(), DT_ERR_SHAPE);
    ck_assert_int_eq(dt_add_(a, K(dt_zeros(DT_SHAPE(5), DT_F32, dt_cpu_device()))), -1);
    ck_assert_int_eq(s.calls, 2);
    ck_assert_str_eq(s.op, "add_");
    dt_clear_error();
    ck_assert_int_eq(dt_last_error_kind(), DT_OK);
    /* NULL restores the default */
    void *ctx;
    ck_assert_ptr_eq((void *)dt_set_error_handler(NULL, NULL, &ctx), (void *)recording_handler);
    ck_assert_ptr_eq(ctx, &s);
    ck_assert_ptr_eq((void *)dt_set_error_handler(dt_error_handler_return, NULL, NULL),
                     (void *)dt_error_handler_default);
    dt_free(a);
}
END_TEST

static void *fail_in_thread(void *arg) {
    (void)arg;
    dt_tensor *a = dt_ones(DT_SHAPE(2), DT_F32, dt_cpu_device());
    dt_tensor *r = dt_reshape(a, DT_SHAPE(3));
    dt_free(a);
    return (void *)(intptr_t)(r == NULL && dt_last_error_kind() == DT_ERR_SHAPE);
}

START_TEST(test_errors_are_per_thread) {
    tu_catch_errors();
    pthread_t th;
    void *ok;
    ck_assert_int_eq(pthread_create(&th, NULL, fail_in_thread, NULL), 0);
    pthread_join(th, &ok);
    ck_assert(ok);
    ck_assert_int_eq(dt_last_error_kind(), DT_OK); /* this thread saw nothing */
}
END_TEST

Suite *make_errors_suite(void) {
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("handler");
    tcase_add_checked_fixture(tc, NULL, tu_teardown);
    tcase_add_exit_test(tc, test_default_handler_exits_like_python, 1);
    tcase_add_exit_test(tc, test_default_handler_index_error, 1);
    tcase_add_test(tc, test_custom_handler_and_return_values);
    tcase_add_test(tc, test_errors_are_per_thread);
    suite_add_tcase(s, tc);
    return s;
}
