/* Unit tests of op semantics on the cpu with known values: elementwise ops,
 * broadcasting, dtype promotion, scalar forms, comparisons, where and
 * masked_fill, in-place ops, linear algebra, gathers, reductions, softmax,
 * shape ops; and the shape and dtype errors each reports. The comparison of
 * every op across backends is in check_backends.c. */
#include "tu_autofree.h"

static void setup(void) { tu_catch_errors(); }

START_TEST(test_binary_and_broadcast) {
    dt_tensor *a = TF(CPU, DT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *row = TF(CPU, DT_SHAPE(3), 10, 20, 30);
    dt_tensor *col = TF(CPU, DT_SHAPE(2, 1), 100, 200);
    EXPECT_VALUES(dt_add(a, row), 11, 22, 33, 14, 25, 36);
    EXPECT_VALUES(dt_sub(a, col), -99, -98, -97, -196, -195, -194);
    EXPECT_VALUES(dt_mul(row, col), 1000, 2000, 3000, 2000, 4000, 6000);
    EXPECT_SHAPE(dt_mul(row, col), 2, 3);
    EXPECT_VALUES(dt_div(a, row), 0.1, 0.1, 0.1, 0.4, 0.25, 0.2);
    EXPECT_VALUES(dt_pow(a, TF(CPU, DT_SHAPE(1), 2)), 1, 4, 9, 16, 25, 36);
    /* (2,1,3) with (4,1) -> (2,4,3) */
    dt_tensor *x = dt_ones(DT_SHAPE(2, 1, 3), DT_F32, CPU), *y = dt_arange(0, 4, 1, DT_F32, CPU);
    dt_tensor *y41 = dt_reshape(y, DT_SHAPE(4, 1));
    dt_tensor *z = dt_add(x, y41);
    EXPECT_SHAPE(z, 2, 4, 3);
    EXPECT_VALUES(dt_sum(z), 2 * 3 * (1 + 2 + 3 + 4));
    /* incompatible shapes name both sizes and the dimension, as PyTorch does */
    ck_assert_ptr_null(dt_add(a, TF(CPU, DT_SHAPE(2), 1, 2)));
    EXPECT_ERROR(DT_ERR_SHAPE,
                 "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1");
}
END_TEST

START_TEST(test_promotion_and_scalars) {
    dt_tensor *i = TI(CPU, DT_SHAPE(3), 1, 2, 3), *f = TF(CPU, DT_SHAPE(3), 0.5, 0.5, 0.5),
              *b = TB(CPU, DT_SHAPE(3), 1, 0, 1);
    ck_assert_int_eq(dt_dtype_of(dt_add(i, i)), DT_I64);
    ck_assert_int_eq(dt_dtype_of(dt_add(i, f)), DT_F32);
    ck_assert_int_eq(dt_dtype_of(dt_add(b, i)), DT_I64);
    ck_assert_int_eq(dt_dtype_of(dt_add(b, b)), DT_BOOL);
    EXPECT_VALUES(dt_add(i, f), 1.5, 2.5, 3.5);
    /* true division of integers is float */
    dt_tensor *q = dt_div(i, TI(CPU, DT_SHAPE(1), 2));
    ck_assert_int_eq(dt_dtype_of(q), DT_F32);
    EXPECT_VALUES(q, 0.5, 1, 1.5);
    /* Python numbers: an integral scalar keeps an int tensor int, 0.5 makes it float */
    ck_assert_int_eq(dt_dtype_of(dt_add_scalar(i, 2)), DT_I64);
    ck_assert_int_eq(dt_dtype_of(dt_add_scalar(i, 0.5)), DT_F32);
    EXPECT_VALUES(dt_mul_scalar(i, 3), 3, 6, 9);
    EXPECT_VALUES(dt_sub_scalar(f, 1), -0.5, -0.5, -0.5);
    EXPECT_VALUES(dt_rsub_scalar(i, 10), 9, 8, 7);
    EXPECT_VALUES(dt_div_scalar(i, 4), 0.25, 0.5, 0.75);
    EXPECT_VALUES(dt_pow_scalar(i, 2), 1, 4, 9);
    /* exact int64 arithmetic beyond float precision */
    dt_tensor *big = TI(CPU, DT_SHAPE(1), 9007199254740993LL);
    dt_tensor *big1 = dt_add_scalar(big, 1);
    int64_t v;
    dt_to_host(big1, &v, sizeof v);
    ck_assert(v == 9007199254740994LL);
    ck_assert_ptr_null(dt_pow(i, TI(CPU, DT_SHAPE(1), -1)));
    EXPECT_ERROR(DT_ERR_ARG, "Integers to negative integer powers are not allowed.");
    ck_assert_ptr_null(dt_sub(b, b));
    EXPECT_ERROR(DT_ERR_DTYPE, "Subtraction, the `-` operator, with two bool tensors is not supported");
    ck_assert_ptr_null(dt_neg(b));
    EXPECT_ERROR(DT_ERR_DTYPE, "Negation, the `-` operator, on a bool tensor is not supported");
}
END_TEST

START_TEST(test_unary) {
    dt_tensor *x = TF(CPU, DT_SHAPE(4), -2, -0.5, 0, 3);
    EXPECT_VALUES(dt_neg(x), 2, 0.5, 0, -3);
    EXPECT_VALUES(dt_abs(x), 2, 0.5, 0, 3);
    EXPECT_VALUES(dt_relu(x), 0, 0, 0, 3);
    EXPECT_VALUES(dt_exp(x), exp(-2), exp(-0.5), 1, exp(3));
    EXPECT_VALUES(dt_sigmoid(x), 1 / (1 + exp(2)), 1 / (1 + exp(0.5)), 0.5, 1 / (1 + exp(-3)));
    EXPECT_VALUES(dt_tanh(x), tanh(-2), tanh(-0.5), 0, tanh(3));
    EXPECT_VALUES(dt_clamp(x, -1, 1), -1, -0.5, 0, 1);
    EXPECT_VALUES(dt_clamp(x, -INFINITY, 0), -2, -0.5, 0, 0);
    dt_tensor *p = TF(CPU, DT_SHAPE(3), 1, 4, 0);
    EXPECT_VALUES(dt_sqrt(p), 1, 2, 0);
    EXPECT_VALUES(dt_log(p), 0, log(4), -INFINITY);
    dt_tensor *li = dt_log(TI(CPU, DT_SHAPE(1), 1));
    ck_assert_int_eq(dt_dtype_of(li), DT_F32);
    dt_tensor *c = dt_cast(x, DT_I64);
    ck_assert_int_eq(dt_dtype_of(c), DT_I64);
    EXPECT_VALUES(c, -2, 0, 0, 3);
    EXPECT_VALUES(dt_cast(x, DT_BOOL), 1, 1, 0, 1);
    EXPECT_VALUES(dt_cast(TI(CPU, DT_SHAPE(2), 7, 0), DT_F32), 7, 0);
}
END_TEST

START_TEST(test_compare_where_mask) {
    dt_tensor *a = TF(CPU, DT_SHAPE(4), 1, 2, 3, 4), *b = TF(CPU, DT_SHAPE(4), 4, 2, 2, 4);
    dt_tensor *lt = dt_lt(a, b);
    ck_assert_int_eq(dt_dtype_of(lt), DT_BOOL);
    EXPECT_VALUES(lt, 1, 0, 0, 0);
    EXPECT_VALUES(dt_le(a, b), 1, 1, 0, 1);
    EXPECT_VALUES(dt_gt(a, b), 0, 0, 1, 0);
    EXPECT_VALUES(dt_ge(a, b), 0, 1, 1, 1);
    EXPECT_VALUES(dt_eq(a, b), 0, 1, 0, 1);
    EXPECT_VALUES(dt_ne(a, b), 1, 0, 1, 0);
    EXPECT_VALUES(dt_gt_scalar(a, 2.5), 0, 0, 1, 1);
    EXPECT_VALUES(dt_eq_scalar(a, 3), 0, 0, 1, 0);
    EXPECT_VALUES(dt_lt_scalar(a, 2), 1, 0, 0, 0);
    EXPECT_VALUES(dt_where(lt, a, b), 1, 2, 2, 4);
    /* where broadcasts all three */
    dt_tensor *w = dt_where(TB(CPU, DT_SHAPE(2, 1), 1, 0), a, TF(CPU, DT_SCALAR, -1));
    EXPECT_SHAPE(w, 2, 4);
    EXPECT_VALUES(w, 1, 2, 3, 4, -1, -1, -1, -1);
    EXPECT_VALUES(dt_masked_fill(a, dt_gt_scalar(a, 2), -9), 1, 2, -9, -9);
    dt_tensor *m2 = dt_masked_fill(dt_reshape(a, DT_SHAPE(2, 2)), TB(CPU, DT_SHAPE(2), 0, 1), 0);
    EXPECT_VALUES(m2, 1, 0, 3, 0);
    ck_assert_ptr_null(dt_where(a, a, b));
    EXPECT_ERROR(DT_ERR_DTYPE, "where expected condition to be a boolean tensor");
    ck_assert_ptr_null(dt_masked_fill(a, a, 0));
    EXPECT_ERROR(DT_ERR_DTYPE, "only supports boolean masks");
    ck_assert_ptr_null(dt_masked_fill(a, TB(CPU, DT_SHAPE(3), 1, 0, 1), 0));
    EXPECT_ERROR(DT_ERR_SHAPE, "must be broadcastable");
}
END_TEST

START_TEST(test_inplace) {
    dt_tensor *a = TF(CPU, DT_SHAPE(2, 2), 1, 2, 3, 4), *r = TF(CPU, DT_SHAPE(2), 10, 20);
    uint64_t id = dt_id(a);
    ck_assert_int_eq(dt_add_(a, r), 0);
    EXPECT_VALUES(a, 11, 22, 13, 24);
    ck_assert_int_eq(dt_add_scaled_(a, r, -0.5), 0);
    EXPECT_VALUES(a, 6, 12, 8, 14);
    ck_assert_int_eq(dt_sub_(a, r), 0);
    EXPECT_VALUES(a, -4, -8, -2, -6);
    ck_assert_int_eq(dt_mul_(a, r), 0);
    EXPECT_VALUES(a, -40, -160, -20, -120);
    ck_assert_int_eq(dt_div_(a, r), 0);
    EXPECT_VALUES(a, -4, -8, -2, -6);
    ck_assert_int_eq(dt_add_scalar_(a, 1), 0);
    ck_assert_int_eq(dt_mul_scalar_(a, -1), 0);
    EXPECT_VALUES(a, 3, 7, 1, 5);
    ck_assert_int_eq(dt_clamp_(a, 2, 6), 0);
    EXPECT_VALUES(a, 3, 6, 2, 5);
    ck_assert_int_eq(dt_zero_(a), 0);
    EXPECT_VALUES(a, 0, 0, 0, 0);
    ck_assert_int_eq(dt_fill_(a, 2.5), 0);
    EXPECT_VALUES(a, 2.5, 2.5, 2.5, 2.5);
    ck_assert_uint_eq(dt_id(a), id);
    /* the result must fit self: shape and dtype */
    ck_assert_int_eq(dt_add_(r, a), -1);
    EXPECT_ERROR(DT_ERR_SHAPE, "output with shape [2] doesn't match the broadcast shape [2, 2]");
    dt_tensor *i = TI(CPU, DT_SHAPE(2), 1, 2);
    ck_assert_int_eq(dt_add_(i, r), -1);
    EXPECT_ERROR(DT_ERR_DTYPE, "result type Float can't be cast to the desired output type Long");
    ck_assert_int_eq(dt_div_(i, i), -1);
    EXPECT_ERROR(DT_ERR_DTYPE, "result type Float can't be cast");
    ck_assert_int_eq(dt_add_(r, i), 0); /* int into float is fine */
    EXPECT_VALUES(r, 11, 22);
    /* in place through a strided view */
    dt_tensor *m = dt_arange(0, 6, 1, DT_F32, CPU), *m23 = dt_view(m, DT_SHAPE(2, 3)), *c1 = dt_select(m23, 1, 1);
    ck_assert_int_eq(dt_add_scalar_(c1, 100), 0);
    EXPECT_VALUES(m, 0, 101, 2, 3, 104, 5);
}
END_TEST

START_TEST(test_copy_) {
    dt_tensor *dst = dt_zeros(DT_SHAPE(2, 3), DT_F32, CPU);
    ck_assert_int_eq(dt_copy_(dst, TI(CPU, DT_SHAPE(3), 1, 2, 3)), 0); /* broadcast and cast */
    EXPECT_VALUES(dst, 1, 2, 3, 1, 2, 3);
    dt_tensor *tr = dt_transpose(dst, 0, 1);
    ck_assert_int_eq(dt_copy_(tr, TF(CPU, DT_SHAPE(3, 2), 1, 2, 3, 4, 5, 6)), 0);
    EXPECT_VALUES(dst, 1, 3, 5, 2, 4, 6);
    ck_assert_int_eq(dt_copy_(dst, TF(CPU, DT_SHAPE(2), 1, 2)), -1);
    EXPECT_ERROR(DT_ERR_SHAPE, "doesn't match the broadcast shape");
}
END_TEST

START_TEST(test_matmul_linear) {
    dt_tensor *a = TF(CPU, DT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), *b = TF(CPU, DT_SHAPE(3, 2), 7, 8, 9, 10, 11, 12);
    dt_tensor *ab = dt_matmul(a, b);
    EXPECT_SHAPE(ab, 2, 2);
    EXPECT_VALUES(ab, 58, 64, 139, 154);
    /* transposed (strided) operands */
    EXPECT_VALUES(dt_matmul(dt_transpose(b, 0, 1), dt_transpose(a, 0, 1)), 58, 139, 64, 154);
    /* vectors: 1-D @ 2-D, 2-D @ 1-D, 1-D @ 1-D */
    dt_tensor *v = TF(CPU, DT_SHAPE(3), 1, 0, -1);
    EXPECT_SHAPE(dt_matmul(v, b), 2);
    EXPECT_VALUES(dt_matmul(v, b), -4, -4);
    EXPECT_VALUES(dt_matmul(a, v), -2, -2);
    dt_tensor *dot = dt_matmul(v, v);
    ck_assert_int_eq(dt_ndim(dot), 0);
    EXPECT_VALUES(dot, 2);
    /* batched with a broadcast batch: (2,2,3) @ (3,2) and (1,2,3) @ (4,3,2) */
    dt_tensor *ba = dt_stack(2, (dt_tensor *[]){a, dt_mul_scalar(a, 2)}, 0);
    dt_tensor *bab = dt_matmul(ba, b);
    EXPECT_SHAPE(bab, 2, 2, 2);
    EXPECT_VALUES(bab, 58, 64, 139, 154, 116, 128, 278, 308);
    dt_tensor *b4 = dt_expand(dt_unsqueeze(b, 0), DT_SHAPE(4, 3, 2));
    dt_tensor *r4 = dt_matmul(dt_unsqueeze(a, 0), b4);
    EXPECT_SHAPE(r4, 4, 2, 2);
    EXPECT_VALUES(dt_sum(r4), 4 * (58 + 64 + 139 + 154));
    /* (2,1,2,3) @ (3,3,2) broadcasts to (2,3,2,2): batch dims that do not collapse */
    dt_tensor *a4 = dt_reshape(ba, DT_SHAPE(2, 1, 2, 3));
    dt_tensor *b3 = dt_stack(3, (dt_tensor *[]){b, b, b}, 0);
    dt_tensor *r5 = dt_matmul(a4, dt_transpose(dt_transpose(b3, 1, 2), 1, 2));
    EXPECT_SHAPE(r5, 2, 3, 2, 2);
    EXPECT_VALUES(dt_sum(r5), 3 * (58 + 64 + 139 + 154) * 3);
    ck_assert_ptr_null(dt_matmul(a, a));
    EXPECT_ERROR(DT_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
    ck_assert_ptr_null(dt_matmul(a, TI(CPU, DT_SHAPE(3), 1, 2, 3)));
    EXPECT_ERROR(DT_ERR_DTYPE, "float32");
    ck_assert_ptr_null(dt_matmul(a, TF(CPU, DT_SCALAR, 1)));
    EXPECT_ERROR(DT_ERR_SHAPE, "at least 1D");
    /* linear: x (.., in) W (out, in) b (out) */
    dt_tensor *w = TF(CPU, DT_SHAPE(2, 3), 1, 0, 0, 0, 1, 1), *bias = TF(CPU, DT_SHAPE(2), 0.5, -0.5);
    dt_tensor *y = dt_linear(a, w, bias);
    EXPECT_SHAPE(y, 2, 2);
    EXPECT_VALUES(y, 1.5, 4.5, 4.5, 10.5);
    EXPECT_VALUES(dt_linear(a, w, NULL), 1, 5, 4, 11);
    dt_tensor *y3 = dt_linear(ba, w, bias);
    EXPECT_SHAPE(y3, 2, 2, 2);
    EXPECT_VALUES(y3, 1.5, 4.5, 4.5, 10.5, 2.5, 9.5, 8.5, 21.5);
    EXPECT_VALUES(dt_linear(v, w, bias), 1.5, -1.5);
    /* a transposed input (strided leading dims) */
    EXPECT_VALUES(dt_linear(dt_transpose(b, 0, 1), w, NULL), 7, 20, 8, 22);
    ck_assert_ptr_null(dt_linear(b, w, bias));
    EXPECT_ERROR(DT_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (3x2 and 3x2)");
}
END_TEST

START_TEST(test_embedding_index_select) {
    dt_tensor *w = TF(CPU, DT_SHAPE(4, 2), 0, 1, 10, 11, 20, 21, 30, 31);
    dt_tensor *ids = TI(CPU, DT_SHAPE(2, 2), 3, 0, 1, 1);
    dt_tensor *e = dt_embedding(w, ids);
    EXPECT_SHAPE(e, 2, 2, 2);
    EXPECT_VALUES(e, 30, 31, 0, 1, 10, 11, 10, 11);
    EXPECT_VALUES(dt_index_select(w, 1, TI(CPU, DT_SHAPE(3), 1, 1, 0)), 1, 1, 0, 11, 11, 10, 21, 21, 20, 31, 31, 30);
    EXPECT_VALUES(dt_index_select(dt_transpose(w, 0, 1), 0, TI(CPU, DT_SHAPE(1), 1)), 1, 11, 21, 31);
    ck_assert_ptr_null(dt_embedding(w, TI(CPU, DT_SHAPE(2), 1, 4)));
    EXPECT_ERROR(DT_ERR_INDEX, "index out of range in self", "index 4");
    ck_assert_ptr_null(dt_embedding(w, TI(CPU, DT_SHAPE(1), -1)));
    EXPECT_ERROR(DT_ERR_INDEX, "index out of range in self");
    ck_assert_ptr_null(dt_embedding(w, TF(CPU, DT_SHAPE(1), 1)));
    EXPECT_ERROR(DT_ERR_DTYPE,
                 "'indices' to have one of the following scalar types: Long, Int; but got torch.FloatTensor");
    ck_assert_ptr_null(dt_index_select(w, 0, ids));
    EXPECT_ERROR(DT_ERR_SHAPE, "Index is supposed to be a vector");
}
END_TEST

START_TEST(test_reductions) {
    dt_tensor *a = TF(CPU, DT_SHAPE(2, 3), 1, 5, 3, 4, 2, 6);
    EXPECT_VALUES(dt_sum(a), 21);
    ck_assert_int_eq(dt_ndim(dt_sum(a)), 0);
    EXPECT_VALUES(dt_sum_dim(a, 0, 0), 5, 7, 9);
    EXPECT_VALUES(dt_sum_dim(a, -1, 0), 9, 12);
    EXPECT_SHAPE(dt_sum_dim(a, 1, 1), 2, 1);
    EXPECT_VALUES(dt_mean(a), 3.5);
    EXPECT_VALUES(dt_mean_dim(a, 1, 0), 3, 4);
    EXPECT_VALUES(dt_max(a), 6);
    dt_tensor *idx = NULL, *mx = dt_max_dim(a, 1, 0, &idx);
    K(idx);
    EXPECT_VALUES(mx, 5, 6);
    EXPECT_VALUES(idx, 1, 2);
    ck_assert_int_eq(dt_dtype_of(idx), DT_I64);
    EXPECT_VALUES(dt_argmax(a), 5);
    EXPECT_VALUES(dt_argmax_dim(a, 0, 0), 1, 0, 1);
    EXPECT_SHAPE(dt_argmax_dim(a, 0, 1), 1, 3);
    /* over a transposed view */
    EXPECT_VALUES(dt_sum_dim(dt_transpose(a, 0, 1), 1, 0), 5, 7, 9);
    EXPECT_VALUES(dt_argmax(dt_transpose(a, 0, 1)), 5); /* [1,4,5,2,3,6]: 6 at 5 */
    /* ties pick the first, NaN wins */
    EXPECT_VALUES(dt_argmax(TF(CPU, DT_SHAPE(3), 2, 2, 1)), 0);
    EXPECT_VALUES(dt_argmax(TF(CPU, DT_SHAPE(3), 2, NAN, 1)), 1);
    /* integer sums are int64, bool sums count */
    dt_tensor *si = dt_sum(TB(CPU, DT_SHAPE(4), 1, 0, 1, 1));
    ck_assert_int_eq(dt_dtype_of(si), DT_I64);
    EXPECT_VALUES(si, 3);
    ck_assert_ptr_null(dt_mean(TI(CPU, DT_SHAPE(2), 1, 2)));
    EXPECT_ERROR(DT_ERR_DTYPE, "mean(): could not infer output dtype", "Got: Long");
    ck_assert_ptr_null(dt_max(dt_zeros(DT_SHAPE(0), DT_F32, CPU)));
    EXPECT_ERROR(DT_ERR_SHAPE, "Specify the reduction dim");
    ck_assert_ptr_null(dt_sum_dim(a, 2, 0));
    EXPECT_ERROR(DT_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    EXPECT_VALUES(dt_sum(dt_zeros(DT_SHAPE(0), DT_F32, CPU)), 0);
}
END_TEST

START_TEST(test_softmax) {
    dt_tensor *x = TF(CPU, DT_SHAPE(2, 3), 1, 2, 3, 1000, 1000, 1000);
    double e1 = exp(-2), e2 = exp(-1), s = e1 + e2 + 1;
    dt_tensor *sm = dt_softmax(x, 1);
    EXPECT_VALUES(sm, e1 / s, e2 / s, 1 / s, 1.0 / 3, 1.0 / 3, 1.0 / 3);
    EXPECT_VALUES(dt_log_softmax(x, -1), -2 - log(s), -1 - log(s), -log(s), -log(3), -log(3), -log(3));
    EXPECT_VALUES(dt_sum_dim(dt_softmax(x, 0), 0, 0), 1, 1, 1);
    ck_assert_ptr_null(dt_softmax(TI(CPU, DT_SHAPE(2), 1, 2), 0));
    EXPECT_ERROR(DT_ERR_DTYPE, "not implemented for 'Long'");
}
END_TEST

START_TEST(test_shape_ops) {
    dt_tensor *a = dt_arange(0, 24, 1, DT_F32, CPU);
    dt_tensor *r = dt_reshape(a, DT_SHAPE(2, -1, 4));
    EXPECT_SHAPE(r, 2, 3, 4);
    ck_assert(dt_shares_storage(a, r));
    int perm[] = {2, 0, 1};
    dt_tensor *p = dt_permute(r, perm);
    EXPECT_SHAPE(p, 4, 2, 3);
    EXPECT_VALUES(dt_select(dt_select(p, 0, 1), 0, 1), 13, 17, 21);
    /* reshape of a non-viewable tensor copies; view refuses */
    dt_tensor *pr = dt_reshape(p, DT_SHAPE(-1));
    ck_assert(!dt_shares_storage(pr, p));
    EXPECT_VALUES(dt_narrow(pr, 0, 0, 4), 0, 4, 8, 12);
    ck_assert_ptr_null(dt_view(p, DT_SHAPE(24)));
    EXPECT_ERROR(DT_ERR_SHAPE, "view size is not compatible with input tensor's size and stride");
    ck_assert_ptr_null(dt_reshape(a, DT_SHAPE(5, -1)));
    EXPECT_ERROR(DT_ERR_SHAPE, "shape '[5, -1]' is invalid for input of size 24");
    ck_assert_ptr_null(dt_reshape(a, DT_SHAPE(-1, -1)));
    EXPECT_ERROR(DT_ERR_SHAPE, "only one dimension can be inferred");
    /* slicing follows Python: clamped bounds, negative indices, steps */
    EXPECT_VALUES(dt_slice(a, 0, -3, 100, 1), 21, 22, 23);
    EXPECT_VALUES(dt_slice(a, 0, 1, 10, 4), 1, 5, 9);
    EXPECT_SHAPE(dt_slice(a, 0, 5, 2, 1), 0);
    ck_assert_ptr_null(dt_slice(a, 0, 0, 2, 0));
    EXPECT_ERROR(DT_ERR_ARG, "slice step must be positive");
    ck_assert_ptr_null(dt_narrow(a, 0, 20, 5));
    EXPECT_ERROR(DT_ERR_INDEX, "start (20) + length (5) exceeds dimension size (24).");
    ck_assert_ptr_null(dt_select(r, 1, 3));
    EXPECT_ERROR(DT_ERR_INDEX, "select(): index 3 out of range for tensor of size [2, 3, 4] at dimension 1");
    /* unsqueeze / squeeze / flatten / expand */
    dt_tensor *u = dt_unsqueeze(r, 1);
    EXPECT_SHAPE(u, 2, 1, 3, 4);
    EXPECT_SHAPE(dt_unsqueeze(r, -1), 2, 3, 4, 1);
    EXPECT_SHAPE(dt_squeeze(u, 1), 2, 3, 4);
    EXPECT_SHAPE(dt_squeeze(u, 0), 2, 1, 3, 4); /* not size 1: unchanged, as PyTorch */
    EXPECT_SHAPE(dt_squeeze_all(dt_zeros(DT_SHAPE(1, 2, 1), DT_F32, CPU)), 2);
    EXPECT_SHAPE(dt_flatten(r, 1, -1), 2, 12);
    EXPECT_SHAPE(dt_flatten(r, 0, 1), 6, 4);
    dt_tensor *ex = dt_expand(TF(CPU, DT_SHAPE(2, 1), 1, 2), DT_SHAPE(3, -1, 2));
    EXPECT_SHAPE(ex, 3, 2, 2);
    EXPECT_VALUES(ex, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2);
    ck_assert_int_eq(dt_strides(ex)[0], 0);
    ck_assert_ptr_null(dt_expand(TF(CPU, DT_SHAPE(2), 1, 2), DT_SHAPE(3)));
    EXPECT_ERROR(DT_ERR_SHAPE, "The expanded size of the tensor (3) must match the existing size (2)");
    ck_assert_ptr_null(dt_transpose(r, 0, 3));
    EXPECT_ERROR(DT_ERR_INDEX, "Dimension out of range");
    int dup[] = {0, 0, 1};
    ck_assert_ptr_null(dt_permute(r, dup));
    EXPECT_ERROR(DT_ERR_ARG, "duplicate dims");
    dt_tensor *cl = dt_clone(r);
    ck_assert(!dt_shares_storage(cl, r));
    EXPECT_VALUES(dt_sum(cl), 276);
}
END_TEST

START_TEST(test_cat_stack) {
    dt_tensor *a = TF(CPU, DT_SHAPE(2, 2), 1, 2, 3, 4), *b = TF(CPU, DT_SHAPE(1, 2), 5, 6);
    dt_tensor *c0 = dt_cat(2, (dt_tensor *[]){a, b}, 0);
    EXPECT_SHAPE(c0, 3, 2);
    EXPECT_VALUES(c0, 1, 2, 3, 4, 5, 6);
    dt_tensor *c1 = dt_cat(2, (dt_tensor *[]){a, dt_transpose(a, 0, 1)}, 1);
    EXPECT_VALUES(c1, 1, 2, 1, 3, 3, 4, 2, 4);
    dt_tensor *s0 = dt_stack(2, (dt_tensor *[]){a, a}, 0), *s2 = dt_stack(2, (dt_tensor *[]){a, a}, 2);
    EXPECT_SHAPE(s0, 2, 2, 2);
    EXPECT_SHAPE(s2, 2, 2, 2);
    EXPECT_VALUES(s2, 1, 1, 2, 2, 3, 3, 4, 4);
    /* many inputs (more than the inline argument slots), mixed dtypes promote */
    dt_tensor *parts[20];
    for (int i = 0; i < 20; i++) parts[i] = i % 2 ? TI(CPU, DT_SHAPE(1), i) : TF(CPU, DT_SHAPE(1), i);
    dt_tensor *many = dt_cat(20, parts, 0);
    ck_assert_int_eq(dt_dtype_of(many), DT_F32);
    EXPECT_VALUES(dt_sum(many), 190);
    ck_assert_ptr_null(dt_cat(2, (dt_tensor *[]){a, b}, 1));
    EXPECT_ERROR(
        DT_ERR_SHAPE,
        "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 1 for tensor number 1");
    ck_assert_ptr_null(dt_stack(2, (dt_tensor *[]){a, b}, 0));
    EXPECT_ERROR(DT_ERR_SHAPE,
                 "stack expects each tensor to be equal size, but got [2, 2] at entry 0 and [1, 2] at entry 1");
    ck_assert_ptr_null(dt_cat(1, (dt_tensor *[]){TF(CPU, DT_SCALAR, 1)}, 0));
    EXPECT_ERROR(DT_ERR_SHAPE, "zero-dimensional tensor (at position 0) cannot be concatenated");
    ck_assert_ptr_null(dt_cat(0, NULL, 0));
    EXPECT_ERROR(DT_ERR_ARG, "non-empty list");
}
END_TEST

Suite *make_ops_suite(void) {
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("cpu");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_test(tc, test_binary_and_broadcast);
    tcase_add_test(tc, test_promotion_and_scalars);
    tcase_add_test(tc, test_unary);
    tcase_add_test(tc, test_compare_where_mask);
    tcase_add_test(tc, test_inplace);
    tcase_add_test(tc, test_copy_);
    tcase_add_test(tc, test_matmul_linear);
    tcase_add_test(tc, test_embedding_index_select);
    tcase_add_test(tc, test_reductions);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_shape_ops);
    tcase_add_test(tc, test_cat_stack);
    suite_add_tcase(s, tc);
    return s;
}
