/* Unit tests of devices: PyTorch's device check (text, argument names, the
 * 0-dim cpu exception, cuda:0 against cuda:1), transfers (to, cpu, cuda,
 * copy_, to_host), per-device memory accounting, and the simulated-GPU
 * configuration (DEVTRACE_SIM_CUDA, dt_sim_cuda_enable). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

static void setup(void) {
    tu_catch_errors();
    ck_assert_int_eq(dt_sim_cuda_enable(2), 0);
}

#define MISMATCH(a, b, arg, op)                                                                                        \
    "Expected all tensors to be on the same device, but found at least two devices, " a " and " b                      \
    "! (when checking argument for argument " arg " in method " op ")"

START_TEST(test_mismatch_text_names_op_and_argument) {
    dt_tensor *x = dt_ones(DT_SHAPE(2, 3), DT_F32, CUDA(0)), *w = dt_ones(DT_SHAPE(3, 4), DT_F32, CPU);
    ck_assert_ptr_null(dt_matmul(x, w));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cpu", "mat2", "matmul"));
    EXPECT_ERROR(DT_ERR_DEVICE, "");
    /* the first operand fixes the device; the message follows that order */
    ck_assert_ptr_null(dt_matmul(w, K(dt_ones(DT_SHAPE(4, 2), DT_F32, CUDA(0)))));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cpu", "cuda:0", "mat2", "matmul"));
    dt_tensor *b = dt_ones(DT_SHAPE(4), DT_F32, CPU), *wt = dt_ones(DT_SHAPE(4, 3), DT_F32, CUDA(0));
    ck_assert_ptr_null(dt_linear(x, wt, b));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cpu", "bias", "linear"));
    ck_assert_ptr_null(dt_add(x, K(dt_ones(DT_SHAPE(3), DT_F32, CPU))));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cpu", "other", "add"));
    dt_tensor *cond = dt_ones(DT_SHAPE(3), DT_BOOL, CPU);
    ck_assert_ptr_null(dt_where(cond, x, x));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cpu", "cuda:0", "self", "where"));
    dt_tensor *ids = dt_zeros(DT_SHAPE(5), DT_I64, CPU);
    ck_assert_ptr_null(dt_embedding(wt, ids));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cpu", "indices", "embedding"));
    ck_assert_ptr_null(dt_cat(2, (dt_tensor *[]){x, K(dt_ones(DT_SHAPE(2, 3), DT_F32, CPU))}, 0));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cpu", "tensors[1]", "cat"));
    ck_assert_int_eq(dt_add_(x, K(dt_ones(DT_SHAPE(3), DT_F32, CPU))), -1);
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cpu", "other", "add_"));
    dt_free(x);
    dt_free(w);
    dt_free(b);
    dt_free(wt);
    dt_free(cond);
    dt_free(ids);
}
END_TEST

START_TEST(test_cuda0_vs_cuda1_is_a_mismatch) {
    dt_tensor *a = dt_ones(DT_SHAPE(2), DT_F32, CUDA(0)), *b = dt_ones(DT_SHAPE(2), DT_F32, CUDA(1));
    ck_assert_ptr_null(dt_mul(a, b));
    ck_assert_str_eq(dt_last_error(), MISMATCH("cuda:0", "cuda:1", "other", "mul"));
    dt_clear_error();
    /* even a 0-dim tensor on another GPU: the exception is for cpu scalars only */
    dt_tensor *s1 = dt_full(DT_SCALAR, 2, DT_F32, CUDA(1));
    ck_assert_ptr_null(dt_mul(a, s1));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:0 and cuda:1");
    dt_free(a);
    dt_free(b);
    dt_free(s1);
}
END_TEST

START_TEST(test_zero_dim_cpu_tensor_joins_any_device) {
    dt_tensor *a = TF(CUDA(1), DT_SHAPE(3), 1, 2, 3), *s = dt_full(DT_SCALAR, 10, DT_F32, CPU);
    dt_tensor *r = dt_mul(a, s), *r2 = dt_add(s, a), *r3 = dt_where(K(dt_gt_scalar(a, 1.5)), s, a);
    ck_assert_msg(r != NULL, "%s", dt_last_error());
    ck_assert(dt_device_equal(dt_device_of(r), CUDA(1)));
    ck_assert(dt_device_equal(dt_device_of(r2), CUDA(1)));
    EXPECT_VALUES(r, 10, 20, 30);
    EXPECT_VALUES(r2, 11, 12, 13);
    EXPECT_VALUES(r3, 1, 10, 10);
    ck_assert_int_eq(dt_mul_(a, s), 0);
    EXPECT_VALUES(a, 10, 20, 30);
    /* a 1-element but 1-dim cpu tensor is not a scalar */
    dt_tensor *one = TF(CPU, DT_SHAPE(1), 10);
    ck_assert_ptr_null(dt_mul(a, one));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:1 and cpu");
    /* ops whose PyTorch kernels take no cpu scalars stay strict */
    ck_assert_ptr_null(dt_index_select(a, 0, K(dt_zeros(DT_SCALAR, DT_I64, CPU))));
    EXPECT_ERROR(DT_ERR_DEVICE, "argument index in method index_select");
    /* only scalars: the op runs on the cpu */
    dt_tensor *ss = dt_add(s, s);
    ck_assert(dt_device_equal(dt_device_of(ss), CPU));
    dt_tensor *all[] = {s, r, r2, r3, ss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
}
END_TEST

START_TEST(test_transfers) {
    dt_tensor *c = TF(CPU, DT_SHAPE(2, 2), 1, 2, 3, 4);
    dt_tensor *same = dt_to(c, CPU);
    ck_assert_ptr_eq(same, c); /* already there: the tensor itself */
    dt_free(same);
    dt_tensor *g0 = dt_to(c, CUDA(0)), *g1 = dt_cuda(g0, 1), *back = dt_cpu(g1);
    ck_assert(dt_device_equal(dt_device_of(g0), CUDA(0)));
    ck_assert(dt_device_equal(dt_device_of(g1), CUDA(1)));
    ck_assert(!dt_shares_storage(c, g0) && !dt_shares_storage(g0, g1) && !dt_shares_storage(back, c));
    EXPECT_VALUES(back, 1, 2, 3, 4);
    /* a strided source moves as its values, contiguous on arrival */
    dt_tensor *gt = dt_to(K(dt_transpose(c, 0, 1)), CUDA(1));
    ck_assert(dt_is_contiguous(gt));
    EXPECT_VALUES(gt, 1, 3, 2, 4);
    /* copy_ across devices, into a strided destination, with a cast */
    dt_tensor *dst = dt_zeros(DT_SHAPE(2, 2), DT_I64, CUDA(0)), *dview = dt_transpose(dst, 0, 1);
    ck_assert_int_eq(dt_copy_(dview, c), 0);
    EXPECT_VALUES(dst, 1, 3, 2, 4);
    ck_assert_int_eq(dt_copy_(c, TF(CUDA(1), DT_SHAPE(2), -1, -2)), 0); /* broadcast from another device */
    EXPECT_VALUES(c, -1, -2, -1, -2);
    /* the copy is independent of its source */
    ck_assert_int_eq(dt_fill_(g0, 0), 0);
    EXPECT_VALUES(g1, 1, 2, 3, 4);
    dt_tensor *all[] = {g0, g1, back, gt, dst, dview};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
}
END_TEST

START_TEST(test_memory_accounting) {
    uint64_t before0 = dt_memory_allocated(CUDA(0)), before1 = dt_memory_allocated(CUDA(1));
    dt_tensor *t = dt_zeros(DT_SHAPE(256), DT_F32, CUDA(0));
    ck_assert_uint_eq(dt_memory_allocated(CUDA(0)), before0 + 1024);
    ck_assert_uint_eq(dt_memory_allocated(CUDA(1)), before1);
    dt_tensor *v = dt_view(t, DT_SHAPE(16, 16)); /* views allocate nothing */
    ck_assert_uint_eq(dt_memory_allocated(CUDA(0)), before0 + 1024);
    dt_free(t);
    ck_assert_uint_eq(dt_memory_allocated(CUDA(0)), before0 + 1024); /* the view holds the storage */
    dt_free(v);
    ck_assert_uint_eq(dt_memory_allocated(CUDA(0)), before0);
    /* temporaries of ops are released */
    dt_tensor *a = dt_ones(DT_SHAPE(8, 8), DT_F32, CUDA(1));
    uint64_t mid = dt_memory_allocated(CUDA(1));
    dt_tensor *at = dt_transpose(a, 0, 1), *s = dt_sum(at); /* needs a contiguous temporary */
    dt_free(s);
    dt_free(at);
    ck_assert_uint_eq(dt_memory_allocated(CUDA(1)), mid);
    dt_free(a);
    ck_assert_uint_eq(dt_memory_allocated(CUDA(1)), before1);
}
END_TEST

START_TEST(test_device_names) {
    dt_device d;
    char buf[16];
    ck_assert_int_eq(dt_device_parse("cpu", &d), 0);
    ck_assert(dt_device_equal(d, CPU));
    ck_assert_int_eq(dt_device_parse("cuda", &d), 0);
    ck_assert(dt_device_equal(d, CUDA(0)));
    ck_assert_int_eq(dt_device_parse("cuda:1", &d), 0);
    ck_assert_str_eq(dt_device_str(d, buf, sizeof buf), "cuda:1");
    ck_assert_int_eq(dt_device_parse("gpu", &d), -1);
    EXPECT_ERROR(DT_ERR_ARG, "Expected one of cpu, cuda", "gpu");
    ck_assert_int_eq(dt_device_parse("cuda:x", &d), -1);
    EXPECT_ERROR(DT_ERR_ARG, "cuda:x");
    ck_assert(!dt_device_equal(CUDA(0), CUDA(1)));
}
END_TEST

START_TEST(test_sim_config) {
    ck_assert(dt_cuda_is_available());
    ck_assert_int_eq(dt_cuda_device_count(), 2);
    ck_assert(dt_device_equal(dt_default_device(), CUDA(0)));
    ck_assert_str_eq(dt_device_backend_name(CUDA(1)), "cuda-sim");
    ck_assert_str_eq(dt_device_backend_name(CPU), "cpu");
    ck_assert_ptr_null(dt_device_backend_name(CUDA(2)));
    /* may change until the first cuda tensor exists, then not */
    ck_assert_int_eq(dt_sim_cuda_enable(3), 0);
    ck_assert_int_eq(dt_cuda_device_count(), 3);
    dt_tensor *t = dt_zeros(DT_SHAPE(1), DT_F32, CUDA(2));
    ck_assert_int_eq(dt_sim_cuda_enable(3), 0); /* same count: fine */
    ck_assert_int_eq(dt_sim_cuda_enable(1), -1);
    EXPECT_ERROR(DT_ERR_STATE, "cannot switch to 1 simulated GPUs", "before the first cuda tensor");
    ck_assert_int_eq(dt_sim_cuda_enable(0), -1);
    EXPECT_ERROR(DT_ERR_ARG, "1..16");
    ck_assert_int_eq(dt_synchronize(CUDA(2)), 0);
    dt_free(t);
}
END_TEST

/* These run in fresh processes with their own environment (no fixture). */
START_TEST(test_env_sim_count) {
    tu_catch_errors();
    setenv("DEVTRACE_SIM_CUDA", "3", 1);
    ck_assert_int_eq(dt_cuda_device_count(), 3);
    ck_assert_str_eq(dt_device_backend_name(CUDA(2)), "cuda-sim");
}
END_TEST

START_TEST(test_env_sim_malformed) {
    tu_catch_errors();
    setenv("DEVTRACE_SIM_CUDA", "two", 1);
    ck_assert_int_eq(dt_cuda_device_count(), 0);
    EXPECT_ERROR(DT_ERR_ARG, "DEVTRACE_SIM_CUDA='two' is not a number of simulated GPUs");
}
END_TEST

START_TEST(test_no_gpu_no_sim) {
    tu_catch_errors();
    unsetenv("DEVTRACE_SIM_CUDA");
    if (dt_cuda_device_count() > 0) {
        printf("test_no_gpu_no_sim: a real GPU is present; the no-GPU message is not reachable here\n");
        return;
    }
    ck_assert(!dt_cuda_is_available());
    ck_assert(dt_device_equal(dt_default_device(), CPU));
    ck_assert_ptr_null(dt_zeros(DT_SHAPE(1), DT_F32, CUDA(0)));
    EXPECT_ERROR(DT_ERR_DEVICE, "cannot use cuda:0: no CUDA GPU was found", "DEVTRACE_SIM_CUDA=N");
}
END_TEST

Suite *make_device_suite(void) {
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("check");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_test(tc, test_mismatch_text_names_op_and_argument);
    tcase_add_test(tc, test_cuda0_vs_cuda1_is_a_mismatch);
    tcase_add_test(tc, test_zero_dim_cpu_tensor_joins_any_device);
    tcase_add_test(tc, test_transfers);
    tcase_add_test(tc, test_memory_accounting);
    tcase_add_test(tc, test_device_names);
    tcase_add_test(tc, test_sim_config);
    suite_add_tcase(s, tc);
    TCase *env = tcase_create("environment");
    tcase_add_test(env, test_env_sim_count);
    tcase_add_test(env, test_env_sim_malformed);
    tcase_add_test(env, test_no_gpu_no_sim);
    suite_add_tcase(s, env);
    return s;
}
