/* Every op on every available backend: each case builds the same inputs
 * (same seed) on the cpu and on cuda:0, runs the op, and compares dtype,
 * shape, device and values within float tolerance. ctest runs this suite
 * twice: on simulated GPUs (always), and on the real CUDA backend (skipped,
 * with the reason printed, when no GPU is present). */
#include "tu_autofree.h"

#include <stdio.h>

static void setup(void) { tu_catch_errors(); }

/* Inputs: seeded normal values, positive values, small integers. */
static dt_tensor *R(dt_device d, int nd, const int64_t *shape) { return dt_randn(nd, shape, d); }
static dt_tensor *P(dt_device d, int nd, const int64_t *shape) { return dt_add_scalar(dt_rand(nd, shape, d), 0.5); }
static dt_tensor *I(dt_device d, int nd, const int64_t *shape, int64_t hi) { return dt_randint(0, hi, nd, shape, d); }

typedef dt_tensor *(*case_fn)(dt_device d);
/* Each case returns a tensor already kept for teardown (the wrappers of
 * tu_autofree.h keep every API result). */
#define CASE(name, ...)                                                                                                \
    static dt_tensor *case_##name(dt_device d) { __VA_ARGS__ }
#define SH DT_SHAPE

/* elementwise */
CASE(add_broadcast, return dt_add(R(d, SH(4, 1, 5)), R(d, SH(3, 1)));)
CASE(sub, return dt_sub(R(d, SH(7, 9)), R(d, SH(9)));)
CASE(mul, return dt_mul(R(d, SH(33, 17)), R(d, SH(33, 17)));)
CASE(div, return dt_div(R(d, SH(10)), P(d, SH(10)));)
CASE(pow, return dt_pow(P(d, SH(12)), R(d, SH(12)));)
CASE(add_int, return dt_add(I(d, SH(5, 5), 100), I(d, SH(5), 7));)
CASE(mul_int_bool, return dt_mul(I(d, SH(6), 9), dt_gt_scalar(R(d, SH(6)), 0));)
CASE(div_int, return dt_div(I(d, SH(8), 50), dt_add_scalar(I(d, SH(8), 5), 1));)
CASE(pow_int, return dt_pow(I(d, SH(8), 5), I(d, SH(8), 4));)
CASE(add_scalar, return dt_add_scalar(R(d, SH(3, 4)), 2.5);)
CASE(sub_scalar, return dt_sub_scalar(I(d, SH(9), 10), 3);)
CASE(mul_scalar, return dt_mul_scalar(R(d, SH(3, 4)), -1.5);)
CASE(div_scalar, return dt_div_scalar(I(d, SH(9), 10), 4);)
CASE(pow_scalar, return dt_pow_scalar(P(d, SH(9)), 0.5);)
CASE(rsub_scalar, return dt_rsub_scalar(R(d, SH(9)), 1);)
CASE(neg, return dt_neg(R(d, SH(100)));)
CASE(exp, return dt_exp(R(d, SH(100)));)
CASE(log, return dt_log(P(d, SH(100)));)
CASE(sqrt, return dt_sqrt(P(d, SH(100)));)
CASE(abs, return dt_abs(R(d, SH(100)));)
CASE(relu, return dt_relu(R(d, SH(100)));)
CASE(sigmoid, return dt_sigmoid(R(d, SH(100)));)
CASE(tanh, return dt_tanh(R(d, SH(100)));)
CASE(clamp, return dt_clamp(R(d, SH(100)), -0.5, 0.7);)
CASE(cast_f32_i64, return dt_cast(dt_mul_scalar(R(d, SH(50)), 10), DT_I64);)
CASE(cast_i64_f32, return dt_cast(I(d, SH(50), 1000), DT_F32);)
CASE(cast_bool, return dt_cast(dt_sub_scalar(I(d, SH(50), 3), 1), DT_BOOL);)
CASE(eq, return dt_eq(I(d, SH(40), 3), I(d, SH(40), 3));)
CASE(ne, return dt_ne(I(d, SH(40), 3), I(d, SH(40), 3));)
CASE(lt, return dt_lt(R(d, SH(40)), R(d, SH(40)));)
CASE(le, return dt_le(I(d, SH(40), 3), I(d, SH(40), 3));)
CASE(gt, return dt_gt(R(d, SH(8, 5)), R(d, SH(5)));)
CASE(ge, return dt_ge(R(d, SH(40)), R(d, SH(40)));)
CASE(eq_scalar, return dt_eq_scalar(I(d, SH(40), 3), 1);)
CASE(gt_scalar, return dt_gt_scalar(R(d, SH(40)), 0.1);)
CASE(lt_scalar, return dt_lt_scalar(R(d, SH(40)), -0.1);)
CASE(where, return dt_where(dt_gt_scalar(R(d, SH(6, 1)), 0), R(d, SH(6, 4)), R(d, SH(4)));)
CASE(masked_fill, return dt_masked_fill(R(d, SH(6, 4)), dt_lt_scalar(R(d, SH(4)), 0), -7);)
CASE(cpu_scalar_joins, {
    dt_tensor *s = dt_full(DT_SCALAR, 3, DT_F32, dt_cpu_device());
    return dt_mul(R(d, SH(5, 5)), s);
})
/* in place: the case returns self */
#define INPLACE(name, call)                                                                                            \
    CASE(name, {                                                                                                       \
        dt_tensor *x = R(d, SH(6, 5)), *y = R(d, SH(5));                                                               \
        (void)y;                                                                                                       \
        ck_assert_int_eq(call, 0);                                                                                     \
        return x;                                                                                                      \
    })
INPLACE(add_, dt_add_(x, y))
INPLACE(add_scaled_, dt_add_scaled_(x, y, 0.25))
INPLACE(sub_, dt_sub_(x, y))
INPLACE(mul_, dt_mul_(x, y))
INPLACE(div_, dt_div_(x, dt_add_scalar(dt_abs(y), 1)))
INPLACE(add_scalar_, dt_add_scalar_(x, 4))
INPLACE(mul_scalar_, dt_mul_scalar_(x, 4))
INPLACE(zero_, dt_zero_(x))
INPLACE(fill_, dt_fill_(x, -2))
INPLACE(clamp_, dt_clamp_(x, -0.3, 0.3))
INPLACE(inplace_strided, dt_add_scalar_(dt_transpose(dt_narrow(x, 0, 1, 3), 0, 1), 10))
INPLACE(copy_strided, dt_copy_(dt_transpose(x, 0, 1), dt_transpose(R(d, SH(6, 5)), 0, 1)))
/* linear algebra */
CASE(matmul_2d, return dt_matmul(R(d, SH(67, 33)), R(d, SH(33, 45)));)
CASE(matmul_transposed, return dt_matmul(dt_transpose(R(d, SH(20, 30)), 0, 1), dt_transpose(R(d, SH(17, 20)), 0, 1));)
CASE(matmul_batched, return dt_matmul(R(d, SH(3, 1, 9, 7)), R(d, SH(4, 7, 5)));)
CASE(matmul_vec, return dt_matmul(R(d, SH(7)), R(d, SH(2, 7, 3)));)
CASE(matmul_dot, return dt_matmul(R(d, SH(300)), R(d, SH(300)));)
CASE(linear, return dt_linear(R(d, SH(64, 20)), R(d, SH(10, 20)), R(d, SH(10)));)
CASE(linear_3d_nobias, return dt_linear(R(d, SH(2, 5, 8)), R(d, SH(3, 8)), NULL);)
CASE(embedding, return dt_embedding(R(d, SH(50, 16)), I(d, SH(4, 7), 50));)
CASE(index_select, return dt_index_select(R(d, SH(5, 6, 7)), 1, I(d, SH(9), 6));)
CASE(index_select_int, return dt_index_select(I(d, SH(30), 99), 0, I(d, SH(12), 30));)
CASE(softmax_last, return dt_softmax(R(d, SH(8, 1000)), -1);)
CASE(softmax_dim0, return dt_softmax(R(d, SH(13, 6)), 0);)
CASE(log_softmax, return dt_log_softmax(dt_mul_scalar(R(d, SH(4, 3, 50)), 20), 1);)
/* reductions */
CASE(sum_all_large, return dt_sum(R(d, SH(100003)));)
CASE(sum_dim_keep, return dt_sum_dim(R(d, SH(4, 300, 3)), 1, 1);)
CASE(sum_int, return dt_sum(I(d, SH(1000), 1000));)
CASE(sum_bool_dim, return dt_sum_dim(dt_gt_scalar(R(d, SH(7, 40)), 0), 1, 0);)
CASE(mean, return dt_mean(R(d, SH(5000)));)
CASE(mean_dim, return dt_mean_dim(dt_transpose(R(d, SH(30, 20)), 0, 1), 1, 0);)
CASE(max_all, return dt_max(R(d, SH(9999)));)
CASE(max_dim_values, return dt_max_dim(R(d, SH(6, 700)), 1, 0, NULL);)
CASE(max_dim_indices, {
    dt_tensor *ix = NULL;
    dt_max_dim(R(d, SH(6, 700)), -1, 1, &ix);
    return K(ix);
})
CASE(max_int, return dt_max(I(d, SH(500), 100000));)
CASE(argmax_all, return dt_argmax(R(d, SH(12345)));)
CASE(argmax_dim, return dt_argmax_dim(R(d, SH(300, 7)), 0, 0);)
CASE(argmax_ties, return dt_argmax_dim(I(d, SH(20, 600), 3), 1, 0);)
/* shape ops (views read back through the backend's copy kernel) */
CASE(reshape_view, return dt_reshape(R(d, SH(4, 6)), SH(3, -1));)
CASE(reshape_copy, return dt_reshape(dt_transpose(R(d, SH(4, 6)), 0, 1), SH(-1));)
CASE(view, return dt_view(R(d, SH(24)), SH(2, 3, 4));)
CASE(permute, {
    int p[] = {2, 0, 1};
    return dt_contiguous(dt_permute(R(d, SH(2, 3, 4)), p));
})
CASE(slice, return dt_clone(dt_slice(R(d, SH(10, 4)), 0, 1, 9, 3));)
CASE(narrow, return dt_narrow(R(d, SH(10, 4)), 1, 1, 2);)
CASE(select, return dt_select(R(d, SH(10, 4)), 1, 3);)
CASE(unsqueeze, return dt_unsqueeze(R(d, SH(3, 4)), 1);)
CASE(squeeze, return dt_squeeze(R(d, SH(3, 1, 4)), 1);)
CASE(squeeze_all, return dt_squeeze_all(R(d, SH(1, 3, 1)));)
CASE(flatten, return dt_flatten(R(d, SH(2, 3, 4)), 1, 2);)
CASE(expand, return dt_contiguous(dt_expand(R(d, SH(3, 1)), SH(2, 3, 4)));)
CASE(clone, return dt_clone(dt_transpose(R(d, SH(5, 3)), 0, 1));)
CASE(cat, return dt_cat(3, (dt_tensor *[]){R(d, SH(2, 3)), R(d, SH(4, 3)), dt_transpose(R(d, SH(3, 1)), 0, 1)}, 0);)
CASE(cat_dim1_mixed, return dt_cat(2, (dt_tensor *[]){R(d, SH(2, 3)), dt_cast(I(d, SH(2, 2), 9), DT_I64)}, 1);)
CASE(stack, return dt_stack(3, (dt_tensor *[]){R(d, SH(2, 3)), R(d, SH(2, 3)), R(d, SH(2, 3))}, 1);)
/* factories */
CASE(zeros, return dt_zeros(SH(3, 3), DT_I64, d);)
CASE(ones, return dt_ones(SH(3, 3), DT_BOOL, d);)
CASE(full, return dt_full(SH(3, 3), -4.25, DT_F32, d);)
CASE(arange, return dt_arange(-3, 7, 0.5, DT_F32, d);)
CASE(like, return dt_add(dt_full_like(R(d, SH(4)), 2), dt_add(dt_ones_like(R(d, SH(4))), dt_zeros_like(R(d, SH(4)))));)

#define ENTRY(name)                                                                                                    \
    { #name, case_##name }
static const struct {
    const char *name;
    case_fn fn;
} cases[] = {
    ENTRY(add_broadcast),
    ENTRY(sub),
    ENTRY(mul),
    ENTRY(div),
    ENTRY(pow),
    ENTRY(add_int),
    ENTRY(mul_int_bool),
    ENTRY(div_int),
    ENTRY(pow_int),
    ENTRY(add_scalar),
    ENTRY(sub_scalar),
    ENTRY(mul_scalar),
    ENTRY(div_scalar),
    ENTRY(pow_scalar),
    ENTRY(rsub_scalar),
    ENTRY(neg),
    ENTRY(exp),
    ENTRY(log),
    ENTRY(sqrt),
    ENTRY(abs),
    ENTRY(relu),
    ENTRY(sigmoid),
    ENTRY(tanh),
    ENTRY(clamp),
    ENTRY(cast_f32_i64),
    ENTRY(cast_i64_f32),
    ENTRY(cast_bool),
    ENTRY(eq),
    ENTRY(ne),
    ENTRY(lt),
    ENTRY(le),
    ENTRY(gt),
    ENTRY(ge),
    ENTRY(eq_scalar),
    ENTRY(gt_scalar),
    ENTRY(lt_scalar),
    ENTRY(where),
    ENTRY(masked_fill),
    ENTRY(cpu_scalar_joins),
    ENTRY(add_),
    ENTRY(add_scaled_),
    ENTRY(sub_),
    ENTRY(mul_),
    ENTRY(div_),
    ENTRY(add_scalar_),
    ENTRY(mul_scalar_),
    ENTRY(zero_),
    ENTRY(fill_),
    ENTRY(clamp_),
    ENTRY(inplace_strided),
    ENTRY(copy_strided),
    ENTRY(matmul_2d),
    ENTRY(matmul_transposed),
    ENTRY(matmul_batched),
    ENTRY(matmul_vec),
    ENTRY(matmul_dot),
    ENTRY(linear),
    ENTRY(linear_3d_nobias),
    ENTRY(embedding),
    ENTRY(index_select),
    ENTRY(index_select_int),
    ENTRY(softmax_last),
    ENTRY(softmax_dim0),
    ENTRY(log_softmax),
    ENTRY(sum_all_large),
    ENTRY(sum_dim_keep),
    ENTRY(sum_int),
    ENTRY(sum_bool_dim),
    ENTRY(mean),
    ENTRY(mean_dim),
    ENTRY(max_all),
    ENTRY(max_dim_values),
    ENTRY(max_dim_indices),
    ENTRY(max_int),
    ENTRY(argmax_all),
    ENTRY(argmax_dim),
    ENTRY(argmax_ties),
    ENTRY(reshape_view),
    ENTRY(reshape_copy),
    ENTRY(view),
    ENTRY(permute),
    ENTRY(slice),
    ENTRY(narrow),
    ENTRY(select),
    ENTRY(unsqueeze),
    ENTRY(squeeze),
    ENTRY(squeeze_all),
    ENTRY(flatten),
    ENTRY(expand),
    ENTRY(clone),
    ENTRY(cat),
    ENTRY(cat_dim1_mixed),
    ENTRY(stack),
    ENTRY(zeros),
    ENTRY(ones),
    ENTRY(full),
    ENTRY(arange),
    ENTRY(like),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

START_TEST(test_case_matches_cpu) {
    const char *name = cases[_i].name;
    dt_device dev = dt_cuda_device(0);
    ck_assert_msg(dt_cuda_is_available(), "no cuda device to compare (set DEVTRACE_SIM_CUDA)");
    dt_manual_seed(1234);
    dt_tensor *ref = cases[_i].fn(dt_cpu_device()); /* kept by the case */
    ck_assert_msg(ref != NULL, "%s on cpu failed: %s", name, dt_last_error());
    dt_manual_seed(1234);
    dt_tensor *got = cases[_i].fn(dev);
    ck_assert_msg(got != NULL, "%s on cuda:0 (%s) failed: %s", name, dt_device_backend_name(dev), dt_last_error());
    ck_assert_msg(dt_device_equal(dt_device_of(got), dev), "%s: result not on cuda:0", name);
    ck_assert_msg(dt_dtype_of(got) == dt_dtype_of(ref), "%s: dtype %s vs %s", name, dt_dtype_name(dt_dtype_of(got)),
                  dt_dtype_name(dt_dtype_of(ref)));
    ck_assert_int_eq(dt_ndim(got), dt_ndim(ref));
    for (int i = 0; i < dt_ndim(ref); i++) ck_assert_int_eq(dt_shape(got)[i], dt_shape(ref)[i]);
    int64_t n;
    double *want = tu_values(ref, &n), *have = tu_values(got, &n);
    for (int64_t i = 0; i < n; i++) {
        double tol = 1e-4 * (1 + fabs(want[i])) * (n > 10000 ? 10 : 1);
        int ok = (isnan(want[i]) && isnan(have[i])) || fabs(have[i] - want[i]) <= tol;
        ck_assert_msg(ok, "%s on %s: element %lld is %.9g, cpu gives %.9g", name, dt_device_backend_name(dev),
                      (long long)i, have[i], want[i]);
    }
    free(want);
    free(have);
}
END_TEST

START_TEST(test_errors_match_cpu) {
    /* failures are reported the same way on the device as on the cpu */
    dt_device dev = dt_cuda_device(0);
    ck_assert_msg(dt_cuda_is_available(), "no cuda device to compare (set DEVTRACE_SIM_CUDA)");
    ck_assert_ptr_null(dt_embedding(R(dev, SH(4, 2)), TI(dev, SH(2), 1, 9)));
    EXPECT_ERROR(DT_ERR_INDEX, "index out of range in self", "index 9");
    ck_assert_ptr_null(dt_pow(TI(dev, SH(2), 2, 3), TI(dev, SH(1), -2)));
    EXPECT_ERROR(DT_ERR_ARG, "Integers to negative integer powers are not allowed.");
    ck_assert_ptr_null(dt_matmul(R(dev, SH(2, 3)), R(dev, SH(2, 3))));
    EXPECT_ERROR(DT_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied");
}
END_TEST

Suite *make_backends_suite(void) {
    Suite *s = suite_create("backends");
    TCase *tc = tcase_create("cpu_vs_cuda0");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_loop_test(tc, test_case_matches_cpu, 0, NCASES);
    tcase_add_test(tc, test_errors_match_cpu);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
