/* Unit tests of tensors: factories, ids, names, dtypes, accessors, views
 * sharing storage, random seeding, reading values back. On cpu and on a
 * simulated GPU (the suite enables two). */
#include "testutil.h"

static void setup(void) {
    tu_catch_errors();
    ck_assert_int_eq(dt_sim_cuda_enable(2), 0);
}

static const dt_device devs[] = {{DT_DEVICE_CPU, 0}, {DT_DEVICE_CUDA, 0}, {DT_DEVICE_CUDA, 1}};

START_TEST(test_factories) {
    dt_device d = devs[_i];
    dt_tensor *z = dt_zeros(DT_SHAPE(2, 3), DT_F32, d), *o = dt_ones(DT_SHAPE(3), DT_I64, d);
    dt_tensor *f = dt_full(DT_SHAPE(2), 2.5, DT_F32, d), *b = dt_full(DT_SHAPE(2), 3, DT_BOOL, d);
    EXPECT_SHAPE(z, 2, 3);
    EXPECT_VALUES(z, 0, 0, 0, 0, 0, 0);
    EXPECT_VALUES(o, 1, 1, 1);
    EXPECT_VALUES(f, 2.5, 2.5);
    EXPECT_VALUES(b, 1, 1);
    ck_assert(dt_device_equal(dt_device_of(z), d));
    ck_assert_int_eq(dt_dtype_of(o), DT_I64);
    dt_tensor *a = dt_arange(0, 5, 1, DT_I64, d), *af = dt_arange(1, 0, -0.25, DT_F32, d);
    EXPECT_VALUES(a, 0, 1, 2, 3, 4);
    EXPECT_VALUES(af, 1, 0.75, 0.5, 0.25);
    dt_tensor *s = dt_full(DT_SCALAR, 7, DT_F32, d);
    ck_assert_int_eq(dt_ndim(s), 0);
    ck_assert_int_eq(dt_numel(s), 1);
    ck_assert(dt_item(s) == 7.0);
    dt_tensor *e = dt_zeros(DT_SHAPE(0, 4), DT_F32, d);
    ck_assert_int_eq(dt_numel(e), 0);
    dt_tensor *zl = dt_zeros_like(f), *ol = dt_ones_like(a), *fl = dt_full_like(a, 9);
    EXPECT_VALUES(zl, 0, 0);
    EXPECT_VALUES(ol, 1, 1, 1, 1, 1);
    EXPECT_VALUES(fl, 9, 9, 9, 9, 9);
    ck_assert_int_eq(dt_dtype_of(fl), DT_I64);
    ck_assert(dt_device_equal(dt_device_of(fl), d));
    dt_tensor *all[] = {z, o, f, b, a, af, s, e, zl, ol, fl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) dt_free(all[i]);
}
END_TEST

START_TEST(test_from_data_and_readback) {
    dt_device d = devs[_i];
    dt_tensor *t = TF(d, DT_SHAPE(2, 2), 1, 2, 3, 4);
    float buf[4];
    ck_assert_int_eq(dt_to_host(t, buf, sizeof buf), 0);
    ck_assert(buf[0] == 1 && buf[3] == 4);
    /* a buffer too small is an error, not an overflow */
    ck_assert_int_eq(dt_to_host(t, buf, 8), -1);
    EXPECT_ERROR(DT_ERR_ARG, "too small");
    /* a transposed view reads back in its own row-major order */
    dt_tensor *tt = dt_transpose(t, 0, 1);
    EXPECT_VALUES(tt, 1, 3, 2, 4);
    /* dt_item needs exactly one element */
    ck_assert(isnan(dt_item(t)));
    EXPECT_ERROR(DT_ERR_ARG, "cannot be converted to Scalar");
    dt_free(tt);
}
END_TEST

START_TEST(test_ids_unique_never_reused) {
    dt_tensor *a = dt_zeros(DT_SHAPE(1), DT_F32, CPU);
    uint64_t ida = dt_id(a);
    dt_free(a);
    dt_tensor *b = dt_zeros(DT_SHAPE(1), DT_F32, CPU), *c = dt_transpose(b, 0, 0), *d = dt_to(b, CUDA(0));
    ck_assert_uint_gt(dt_id(b), ida);
    ck_assert_uint_ne(dt_id(c), dt_id(b));
    ck_assert_uint_ne(dt_id(d), dt_id(b));
    ck_assert_uint_ne(dt_id(d), dt_id(c));
    dt_free(b);
    dt_free(c);
    dt_free(d);
}
END_TEST

START_TEST(test_names) {
    dt_tensor *t = dt_zeros(DT_SHAPE(2), DT_F32, CPU);
    ck_assert_ptr_null(dt_name(t));
    dt_set_name(t, "labels");
    ck_assert_str_eq(dt_name(t), "labels");
    dt_set_name(t, "targets");
    ck_assert_str_eq(dt_name(t), "targets");
    /* the moved copy keeps the name: it is the same value on another device */
    dt_tensor *g = dt_to(t, CUDA(0));
    ck_assert_str_eq(dt_name(g), "targets");
    dt_set_name(t, NULL);
    ck_assert_ptr_null(dt_name(t));
    dt_free(g);
    dt_free(t);
}
END_TEST

START_TEST(test_retain_free) {
    dt_tensor *t = dt_ones(DT_SHAPE(3), DT_F32, CPU);
    ck_assert_ptr_eq(dt_retain(t), t);
    dt_free(t);
    EXPECT_VALUES(t, 1, 1, 1); /* still alive: one reference left */
    dt_free(t);
    dt_free(NULL);
}
END_TEST

START_TEST(test_views_share_storage) {
    dt_device d = devs[_i];
    dt_tensor *base = dt_arange(0, 12, 1, DT_F32, d);
    dt_tensor *m = dt_view(base, DT_SHAPE(3, 4));
    dt_tensor *row = dt_select(m, 0, 1), *col = dt_narrow(m, 1, 2, 1), *tr = dt_transpose(m, 0, 1);
    ck_assert(dt_shares_storage(base, m) && dt_shares_storage(m, row) && dt_shares_storage(m, tr));
    EXPECT_VALUES(row, 4, 5, 6, 7);
    EXPECT_VALUES(col, 2, 6, 10);
    ck_assert(!dt_is_contiguous(tr));
    ck_assert(dt_is_contiguous(m));
    ck_assert_int_eq(dt_storage_offset(row), 4);
    /* writing through a view is visible in the base, and the base outlives nothing */
    ck_assert_int_eq(dt_fill_(row, -1), 0);
    dt_free(m);
    EXPECT_VALUES(base, 0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11);
    ck_assert_int_eq(dt_mul_scalar_(col, 10), 0);
    EXPECT_VALUES(base, 0, 1, 20, 3, -1, -1, -10, -1, 8, 9, 100, 11);
    EXPECT_VALUES(tr, 0, -1, 8, 1, -1, 9, 20, -10, 100, 3, -1, 11);
    /* a view keeps the storage alive after its base is freed */
    dt_free(base);
    EXPECT_VALUES(row, -1, -1, -10, -1);
    dt_tensor *cc = dt_contiguous(tr);
    ck_assert(!dt_shares_storage(cc, tr));
    ck_assert(dt_is_contiguous(cc));
    dt_tensor *same = dt_contiguous(cc);
    ck_assert_ptr_eq(same, cc);
    dt_free(same);
    dt_free(cc);
    dt_free(row);
    dt_free(col);
    dt_free(tr);
}
END_TEST

START_TEST(test_random_seeded_same_on_every_device) {
    dt_device d = devs[_i];
    dt_manual_seed(123);
    dt_tensor *a = dt_randn(DT_SHAPE(1000), CPU);
    dt_manual_seed(123);
    dt_tensor *b = dt_randn(DT_SHAPE(1000), d);
    int64_t n;
    double *va = tu_values(a, &n), *vb = tu_values(b, &n);
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++) {
        ck_assert(va[i] == vb[i]);
        mean += va[i];
    }
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) var += (va[i] - mean) * (va[i] - mean);
    var /= (double)n;
    ck_assert_msg(fabs(mean) < 0.15 && fabs(var - 1) < 0.15, "randn mean %g var %g", mean, var);
    free(va);
    free(vb);
    dt_tensor *u = dt_rand(DT_SHAPE(1000), d), *r = dt_randint(-3, 4, DT_SHAPE(1000), d);
    double *vu = tu_values(u, &n), *vr = tu_values(r, &n);
    int seen[7] = {0};
    for (int64_t i = 0; i < n; i++) {
        ck_assert(vu[i] >= 0 && vu[i] < 1);
        ck_assert(vr[i] >= -3 && vr[i] < 4);
        seen[(int)vr[i] + 3] = 1;
    }
    for (int k = 0; k < 7; k++) ck_assert_msg(seen[k], "randint never drew %d", k - 3);
    ck_assert_int_eq(dt_dtype_of(r), DT_I64);
    free(vu);
    free(vr);
    dt_free(a);
    dt_free(b);
    dt_free(u);
    dt_free(r);
}
END_TEST

START_TEST(test_bad_factory_args) {
    ck_assert_ptr_null(dt_zeros(DT_SHAPE(2, -1), DT_F32, CPU));
    EXPECT_ERROR(DT_ERR_SHAPE, "negative dimension -1", "[2, -1]");
    int64_t big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_ptr_null(dt_zeros(9, big, DT_F32, CPU));
    EXPECT_ERROR(DT_ERR_SHAPE, "0 to 8 dimensions");
    ck_assert_ptr_null(dt_zeros(DT_SHAPE(2), (dt_dtype)7, CPU));
    EXPECT_ERROR(DT_ERR_DTYPE, "invalid dtype");
    ck_assert_ptr_null(dt_arange(0, 1, 0, DT_F32, CPU));
    EXPECT_ERROR(DT_ERR_ARG, "step must be nonzero");
    ck_assert_ptr_null(dt_randint(5, 5, DT_SHAPE(2), CPU));
    EXPECT_ERROR(DT_ERR_ARG, "from=5 >= to=5");
    ck_assert_ptr_null(dt_from_data(NULL, DT_F32, DT_SHAPE(2), CPU));
    EXPECT_ERROR(DT_ERR_ARG, "data is NULL");
    ck_assert_ptr_null(dt_zeros(DT_SHAPE(2), DT_F32, CUDA(2)));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:2 does not exist", "2 simulated GPUs");
}
END_TEST

START_TEST(test_data_pointer_cpu_only) {
    dt_tensor *c = TF(CPU, DT_SHAPE(3), 1, 2, 3), *g = dt_to(c, CUDA(0));
    float *p = dt_data(c);
    ck_assert_ptr_nonnull(p);
    ck_assert(p[2] == 3);
    dt_tensor *s = dt_slice(c, 0, 1, 3, 1);
    ck_assert_ptr_eq(dt_data(s), p + 1);
    /* device memory is never host memory, simulated or not */
    ck_assert_ptr_null(dt_data(g));
    EXPECT_ERROR(DT_ERR_DEVICE, "cuda:0 tensor", "dt_cpu()");
    dt_free(s);
    dt_free(g);
}
END_TEST

START_TEST(test_describe_and_names_of_dtypes) {
    char buf[64];
    dt_tensor *t = dt_zeros(DT_SHAPE(64, 10), DT_F32, CUDA(1)), *l = dt_zeros(DT_SHAPE(64), DT_I64, CPU);
    ck_assert_str_eq(dt_describe(t, buf, sizeof buf), "f32[64,10] cuda:1");
    ck_assert_str_eq(dt_describe(l, buf, sizeof buf), "i64[64] cpu");
    ck_assert_str_eq(dt_dtype_name(DT_BOOL), "bool");
    ck_assert_int_eq(dt_dtype_size(DT_I64), 8);
    ck_assert_int_eq(dt_size(t, -1), 10);
    ck_assert_int_eq(dt_strides(t)[0], 10);
    dt_free(t);
    dt_free(l);
}
END_TEST

Suite *make_tensor_suite(void) {
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_loop_test(tc, test_factories, 0, 3);
    tcase_add_loop_test(tc, test_from_data_and_readback, 0, 3);
    tcase_add_test(tc, test_ids_unique_never_reused);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_retain_free);
    tcase_add_loop_test(tc, test_views_share_storage, 0, 3);
    tcase_add_loop_test(tc, test_random_seeded_same_on_every_device, 0, 3);
    tcase_add_test(tc, test_bad_factory_args);
    tcase_add_test(tc, test_data_pointer_cpu_only);
    tcase_add_test(tc, test_describe_and_names_of_dtypes);
    suite_add_tcase(s, tc);
    return s;
}
