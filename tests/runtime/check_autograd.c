/* Autograd: every differentiable op, layer and loss checked against central
 * finite differences (float32, with tolerances), on the cpu and on a
 * simulated GPU (where every gradient must also live on its leaf's device);
 * plus the engine's rules: accumulation, no_grad, leaf in-place refusal,
 * detach, non-scalar backward, gradients of 0-dim cpu operands. */
#include "testutil.h"

#include <devtrace/dt_nn.h>

static void setup(void) { tu_catch_errors(); }

/* Temporaries of one function evaluation, freed by the driver. */
static dt_tensor *gc_tmp[4096];
static int gc_n;
static dt_tensor *G(dt_tensor *t) {
    ck_assert_msg(t != NULL, "op failed: %s", dt_last_error());
    ck_assert(gc_n < 4096);
    return gc_tmp[gc_n++] = t;
}
static void gc_flush(void) {
    while (gc_n) dt_free(gc_tmp[--gc_n]);
}

typedef dt_tensor *(*gc_fn)(dt_tensor *const *x);

enum init { ANY, POS, UNIT, SPREAD /* distinct by 0.1, none near a kink */ };

struct gc_case {
    const char *name;
    gc_fn f;
    int nin;
    int nd[3];
    int64_t shape[3][5];
    enum init init[3];
    unsigned no_grad_mask; /* inputs not checked */
};

static dt_device dev_of(dt_tensor *const *x) { return dt_device_of(x[0]); }
static dt_tensor *idx_on(dt_device d, int n, const int64_t *v) {
    return G(dt_from_data(v, DT_I64, 1, (int64_t[]){n}, d));
}

/* ---- the functions under test */
static dt_tensor *f_add(dt_tensor *const *x) { return G(dt_add(x[0], x[1])); }
static dt_tensor *f_sub(dt_tensor *const *x) { return G(dt_sub(x[0], x[1])); }
static dt_tensor *f_mul(dt_tensor *const *x) { return G(dt_mul(x[0], x[1])); }
static dt_tensor *f_div(dt_tensor *const *x) { return G(dt_div(x[0], x[1])); }
static dt_tensor *f_pow(dt_tensor *const *x) { return G(dt_pow(x[0], x[1])); }
static dt_tensor *f_scalars(dt_tensor *const *x) {
    dt_tensor *a = G(dt_add_scalar(x[0], 2)), *b = G(dt_sub_scalar(a, 0.5)), *c = G(dt_mul_scalar(b, -3));
    dt_tensor *d = G(dt_div_scalar(c, 4)), *e = G(dt_rsub_scalar(d, 1));
    return G(dt_neg(e));
}
static dt_tensor *f_pow_scalar(dt_tensor *const *x) { return G(dt_pow_scalar(x[0], 2.5)); }
static dt_tensor *f_exp(dt_tensor *const *x) { return G(dt_exp(x[0])); }
static dt_tensor *f_log(dt_tensor *const *x) { return G(dt_log(x[0])); }
static dt_tensor *f_sqrt(dt_tensor *const *x) { return G(dt_sqrt(x[0])); }
static dt_tensor *f_abs(dt_tensor *const *x) { return G(dt_abs(x[0])); }
static dt_tensor *f_relu(dt_tensor *const *x) { return G(dt_relu(x[0])); }
static dt_tensor *f_sigmoid(dt_tensor *const *x) { return G(dt_sigmoid(x[0])); }
static dt_tensor *f_tanh(dt_tensor *const *x) { return G(dt_tanh(x[0])); }
static dt_tensor *f_clamp(dt_tensor *const *x) { return G(dt_clamp(x[0], -0.41, 0.59)); }
static dt_tensor *f_cast(dt_tensor *const *x) { return G(dt_cast(x[0], DT_F32)); }
static dt_tensor *f_where(dt_tensor *const *x) {
    dt_tensor *cond = G(dt_gt_scalar(x[0], 0));
    return G(dt_where(cond, x[0], x[1]));
}
static dt_tensor *f_masked_fill(dt_tensor *const *x) { return G(dt_masked_fill(x[0], G(dt_lt_scalar(x[0], 0)), 7)); }
static dt_tensor *f_matmul(dt_tensor *const *x) { return G(dt_matmul(x[0], x[1])); }
static dt_tensor *f_linear(dt_tensor *const *x) { return G(dt_linear(x[0], x[1], x[2])); }
static dt_tensor *f_embedding(dt_tensor *const *x) {
    dt_tensor *ids = G(dt_from_data((int64_t[]){2, 0, 2, 3, 1, 2}, DT_I64, 2, (int64_t[]){2, 3}, dev_of(x)));
    return G(dt_embedding(x[0], ids));
}
static dt_tensor *f_index_select(dt_tensor *const *x) {
    return G(dt_index_select(x[0], 1, idx_on(dev_of(x), 4, (int64_t[]){2, 0, 2, 1})));
}
static dt_tensor *f_softmax(dt_tensor *const *x) { return G(dt_softmax(x[0], 1)); }
static dt_tensor *f_log_softmax(dt_tensor *const *x) { return G(dt_log_softmax(x[0], -1)); }
static dt_tensor *f_sum(dt_tensor *const *x) { return G(dt_mul_scalar(G(dt_sum(x[0])), 1)); }
static dt_tensor *f_sum_dim(dt_tensor *const *x) {
    return G(dt_add(G(dt_sum_dim(x[0], 0, 0)), G(dt_sum_dim(x[0], -1, 1))));
}
static dt_tensor *f_mean(dt_tensor *const *x) { return G(dt_mean(x[0])); }
static dt_tensor *f_mean_dim(dt_tensor *const *x) {
    return G(dt_add(G(dt_mean_dim(x[0], 1, 0)), G(dt_mean_dim(x[0], 0, 1))));
}
static dt_tensor *f_max(dt_tensor *const *x) { return G(dt_max(x[0])); }
static dt_tensor *f_max_dim(dt_tensor *const *x) {
    return G(dt_add(G(dt_max_dim(x[0], 1, 0, NULL)), G(dt_max_dim(x[0], -1, 1, NULL))));
}
static dt_tensor *f_views(dt_tensor *const *x) { /* (2,3,4) */
    dt_tensor *a = G(dt_reshape(x[0], 2, (int64_t[]){6, 4})), *b = G(dt_transpose(a, 0, 1));
    dt_tensor *c = G(dt_view(G(dt_contiguous(b)), 3, (int64_t[]){4, 3, 2}));
    dt_tensor *d = G(dt_permute(c, (int[]){2, 0, 1})), *e = G(dt_flatten(d, 0, 1));
    dt_tensor *f = G(dt_unsqueeze(e, 1)), *g = G(dt_squeeze(f, 1)), *h = G(dt_squeeze_all(G(dt_unsqueeze(g, 0))));
    return G(dt_mul(h, G(dt_clone(h))));
}
static dt_tensor *f_slices(dt_tensor *const *x) { /* (4,5) */
    dt_tensor *a = G(dt_slice(x[0], 1, 0, 5, 2)), *b = G(dt_narrow(x[0], 0, -3, 2)), *c = G(dt_select(x[0], 0, -1));
    return G(dt_add(G(dt_sum_dim(a, 1, 0)), G(dt_add(G(dt_sum(b)), G(dt_mul(G(dt_sum(c)), G(dt_sum(c))))))));
}
static dt_tensor *f_expand(dt_tensor *const *x) { return G(dt_mul(G(dt_expand(x[0], 3, (int64_t[]){2, 3, 4})), x[1])); }
static dt_tensor *f_cat_stack(dt_tensor *const *x) {
    dt_tensor *c = G(dt_cat(2, (dt_tensor *[]){x[0], x[1]}, 1)), *s = G(dt_stack(2, (dt_tensor *[]){x[0], x[0]}, -1));
    return G(dt_add(G(dt_sum_dim(c, 1, 0)), G(dt_sum_dim(G(dt_sum_dim(s, -1, 0)), 1, 0))));
}
static dt_tensor *f_to(dt_tensor *const *x) {
    dt_device other = dt_device_of(x[0]).type == DT_DEVICE_CPU ? dt_cuda_device(0) : dt_cpu_device();
    dt_tensor *moved = G(dt_to(x[0], other));
    return G(dt_to(G(dt_mul(moved, moved)), dt_device_of(x[0])));
}
static dt_tensor *f_conv(dt_tensor *const *x) { return G(dt_conv2d(x[0], x[1], x[2], 2, 1)); }
static dt_tensor *f_conv_plain(dt_tensor *const *x) { return G(dt_conv2d(x[0], x[1], NULL, 1, 0)); }
static dt_tensor *f_pool(dt_tensor *const *x) { return G(dt_max_pool2d(x[0], 2, 2, 0)); }
static dt_tensor *f_pool_pad(dt_tensor *const *x) { return G(dt_max_pool2d(x[0], 3, 2, 1)); }
static dt_tensor *f_layer_norm(dt_tensor *const *x) { return G(dt_layer_norm(x[0], x[1], x[2], 1e-5)); }
static dt_tensor *f_dropout(dt_tensor *const *x) {
    dt_manual_seed(7); /* the same mask at every evaluation */
    return G(dt_dropout(x[0], 0.4, 1));
}
static dt_tensor *f_mse(dt_tensor *const *x) { return G(dt_mse_loss(x[0], x[1])); }
static dt_tensor *f_cross_entropy(dt_tensor *const *x) {
    dt_tensor *t = idx_on(dev_of(x), 4, (int64_t[]){2, 0, -100, 1});
    dt_tensor *w = G(dt_from_data((float[]){0.5f, 2.0f, 1.0f}, DT_F32, 1, (int64_t[]){3}, dev_of(x)));
    return G(dt_cross_entropy(x[0], t, w, -100));
}
static dt_tensor *f_cross_entropy_plain(dt_tensor *const *x) {
    return G(dt_cross_entropy(x[0], idx_on(dev_of(x), 4, (int64_t[]){2, 0, 0, 1}), NULL, DT_IGNORE_INDEX_DEFAULT));
}
static dt_tensor *f_nll(dt_tensor *const *x) {
    return G(dt_nll_loss(G(dt_log_softmax(x[0], 1)), idx_on(dev_of(x), 4, (int64_t[]){1, 1, 0, 2}), x[1], -100));
}
static dt_tensor *f_bce(dt_tensor *const *x) { return G(dt_bce_with_logits(x[0], x[1], x[2])); }
static dt_tensor *f_bce_plain(dt_tensor *const *x) { return G(dt_bce_with_logits(x[0], x[1], NULL)); }

#define S(...)                                                                                                         \
    { __VA_ARGS__ }
static const struct gc_case cases[] = {
    {"add", f_add, 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, 0},
    {"sub", f_sub, 2, {2, 2}, {S(2, 3), S(2, 1)}, {ANY, ANY}, 0},
    {"mul", f_mul, 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, 0},
    {"div", f_div, 2, {2, 2}, {S(2, 3), S(1, 3)}, {ANY, POS}, 0},
    {"pow", f_pow, 2, {2, 1}, {S(2, 3), S(3)}, {POS, ANY}, 0},
    {"scalar ops", f_scalars, 1, {2}, {S(2, 3)}, {ANY}, 0},
    {"pow_scalar", f_pow_scalar, 1, {1}, {S(5)}, {POS}, 0},
    {"exp", f_exp, 1, {1}, {S(5)}, {ANY}, 0},
    {"log", f_log, 1, {1}, {S(5)}, {POS}, 0},
    {"sqrt", f_sqrt, 1, {1}, {S(5)}, {POS}, 0},
    {"abs", f_abs, 1, {1}, {S(6)}, {SPREAD}, 0},
    {"relu", f_relu, 1, {1}, {S(6)}, {SPREAD}, 0},
    {"sigmoid", f_sigmoid, 1, {1}, {S(6)}, {ANY}, 0},
    {"tanh", f_tanh, 1, {1}, {S(6)}, {ANY}, 0},
    {"clamp", f_clamp, 1, {1}, {S(14)}, {SPREAD}, 0},
    {"cast", f_cast, 1, {1}, {S(3)}, {ANY}, 0},
    {"where", f_where, 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, 0},
    {"masked_fill", f_masked_fill, 1, {2}, {S(2, 3)}, {ANY}, 0},
    {"matmul 2d", f_matmul, 2, {2, 2}, {S(2, 3), S(3, 4)}, {ANY, ANY}, 0},
    {"matmul batched", f_matmul, 2, {3, 2}, {S(2, 2, 3), S(3, 2)}, {ANY, ANY}, 0},
    {"matmul 1d-2d", f_matmul, 2, {1, 2}, {S(3), S(3, 2)}, {ANY, ANY}, 0},
    {"matmul 2d-1d", f_matmul, 2, {2, 1}, {S(2, 3), S(3)}, {ANY, ANY}, 0},
    {"matmul 1d-1d", f_matmul, 2, {1, 1}, {S(3), S(3)}, {ANY, ANY}, 0},
    {"linear", f_linear, 3, {3, 2, 1}, {S(2, 2, 3), S(4, 3), S(4)}, {ANY, ANY, ANY}, 0},
    {"embedding", f_embedding, 1, {2}, {S(4, 3)}, {ANY}, 0},
    {"index_select", f_index_select, 1, {2}, {S(2, 3)}, {ANY}, 0},
    {"softmax", f_softmax, 1, {2}, {S(2, 4)}, {ANY}, 0},
    {"log_softmax", f_log_softmax, 1, {2}, {S(2, 4)}, {ANY}, 0},
    {"sum", f_sum, 1, {2}, {S(2, 3)}, {ANY}, 0},
    {"sum_dim", f_sum_dim, 1, {2}, {S(3, 3)}, {ANY}, 0},
    {"mean", f_mean, 1, {2}, {S(2, 3)}, {ANY}, 0},
    {"mean_dim", f_mean_dim, 1, {2}, {S(3, 3)}, {ANY}, 0},
    {"max", f_max, 1, {2}, {S(2, 3)}, {SPREAD}, 0},
    {"max_dim", f_max_dim, 1, {2}, {S(3, 3)}, {SPREAD}, 0},
    {"views", f_views, 1, {3}, {S(2, 3, 4)}, {ANY}, 0},
    {"slices", f_slices, 1, {2}, {S(4, 5)}, {ANY}, 0},
    {"expand", f_expand, 2, {2, 3}, {S(3, 1), S(2, 3, 4)}, {ANY, ANY}, 0},
    {"cat stack", f_cat_stack, 2, {2, 2}, {S(2, 2), S(2, 3)}, {ANY, ANY}, 0},
    {"to", f_to, 1, {1}, {S(4)}, {ANY}, 0},
    {"conv2d", f_conv, 3, {4, 4, 1}, {S(2, 2, 5, 5), S(3, 2, 3, 3), S(3)}, {ANY, ANY, ANY}, 0},
    {"conv2d no bias", f_conv_plain, 2, {4, 4}, {S(1, 1, 4, 4), S(2, 1, 2, 2)}, {ANY, ANY}, 0},
    {"max_pool2d", f_pool, 1, {4}, {S(1, 2, 4, 4)}, {SPREAD}, 0},
    {"max_pool2d padded", f_pool_pad, 1, {4}, {S(1, 1, 5, 5)}, {SPREAD}, 0},
    {"layer_norm", f_layer_norm, 3, {2, 1, 1}, {S(3, 4), S(4), S(4)}, {ANY, ANY, ANY}, 0},
    {"dropout", f_dropout, 1, {2}, {S(3, 4)}, {ANY}, 0},
    {"mse_loss", f_mse, 2, {2, 2}, {S(3, 2), S(3, 2)}, {ANY, ANY}, 0},
    {"cross_entropy weight ignore_index", f_cross_entropy, 1, {2}, {S(4, 3)}, {ANY}, 0},
    {"cross_entropy", f_cross_entropy_plain, 1, {2}, {S(4, 3)}, {ANY}, 0},
    {"nll_loss weight", f_nll, 2, {2, 1}, {S(4, 3), S(3)}, {ANY, POS}, 2},
    {"bce_with_logits pos_weight", f_bce, 3, {2, 2, 1}, {S(3, 2), S(3, 2), S(2)}, {ANY, UNIT, POS}, 6},
    {"bce_with_logits", f_bce_plain, 2, {2, 2}, {S(3, 2), S(3, 2)}, {ANY, UNIT}, 0},
};

/* Deterministic values spread so that no two are equal and none sits on a
 * kink (0, clamp bounds). */
static void fill(float *v, int64_t n, enum init kind, int salt) {
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(salt + 1);
    if (kind == SPREAD) { /* 0.1 k + 0.037, shuffled: maxima never tie under a 0.01 nudge */
        for (int64_t i = 0; i < n; i++) v[i] = (float)(0.1 * (double)(i - n / 2) + 0.037);
        for (int64_t i = n - 1; i > 0; i--) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int64_t j = (int64_t)((s >> 33) % (uint64_t)(i + 1));
            float t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0; /* [0,1) */
        double x = kind == POS ? 0.5 + u : kind == UNIT ? u : (u < 0.5 ? -1 : 1) * (0.12 + 0.9 * u);
        v[i] = (float)(x + 0.003 * (double)i);
    }
}

static double loss_of(const struct gc_case *c, dt_tensor *const *x, const float *w) {
    dt_tensor *out = c->f(x);
    int64_t n = dt_numel(out);
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    ck_assert_int_eq(dt_to_host(out, v, sizeof(float) * (size_t)n), 0);
    double l = 0;
    for (int64_t i = 0; i < n; i++) l += (double)v[i] * w[i];
    free(v);
    gc_flush();
    return l;
}

static void set_values(dt_tensor *t, const float *v) {
    dt_tensor *src = dt_from_data(v, DT_F32, dt_ndim(t), dt_shape(t), CPU);
    int prev = dt_set_grad_enabled(0);
    ck_assert_int_eq(dt_copy_(t, src), 0);
    dt_set_grad_enabled(prev);
    dt_free(src);
}

static void gradcheck(const struct gc_case *c, dt_device dev) {
    dt_tensor *x[3] = {0};
    float *vals[3] = {0};
    int64_t n[3] = {0};
    for (int i = 0; i < c->nin; i++) {
        n[i] = 1;
        for (int d = 0; d < c->nd[i]; d++) n[i] *= c->shape[i][d];
        vals[i] = malloc(sizeof(float) * (size_t)n[i]);
        fill(vals[i], n[i], c->init[i], i + 3 * (int)(c - cases));
        x[i] = dt_from_data(vals[i], DT_F32, c->nd[i], c->shape[i], dev);
        ck_assert(x[i] != NULL);
        if (!(c->no_grad_mask & (1u << i))) ck_assert_int_eq(dt_set_requires_grad(x[i], 1), 0);
    }
    /* L = sum(out * w) with fixed weights: every output element matters */
    dt_tensor *out = c->f(x);
    int64_t nout = dt_numel(out);
    float *w = malloc(sizeof(float) * (size_t)(nout ? nout : 1));
    fill(w, nout, ANY, 99);
    dt_tensor *wt = G(dt_from_data(w, DT_F32, dt_ndim(out), dt_shape(out), dt_device_of(out)));
    dt_tensor *loss = G(dt_sum(G(dt_mul(out, wt))));
    ck_assert_msg(dt_backward(loss) == 0, "%s: backward failed: %s", c->name, dt_last_error());
    gc_flush();
    const double eps = 1e-2;
    for (int i = 0; i < c->nin; i++) {
        if (c->no_grad_mask & (1u << i)) continue;
        dt_tensor *g = dt_grad(x[i]);
        ck_assert_msg(g != NULL, "%s: input %d got no gradient", c->name, i);
        ck_assert_msg(dt_device_equal(dt_device_of(g), dev), "%s: gradient of input %d is not on its device", c->name,
                      i);
        ck_assert_int_eq(dt_numel(g), n[i]);
        float *ana = malloc(sizeof(float) * (size_t)n[i]);
        ck_assert_int_eq(dt_to_host(g, ana, sizeof(float) * (size_t)n[i]), 0);
        int prev = dt_set_grad_enabled(0);
        for (int64_t k = 0; k < n[i]; k++) {
            float keep = vals[i][k];
            vals[i][k] = keep + (float)eps;
            set_values(x[i], vals[i]);
            double lp = loss_of(c, x, w);
            vals[i][k] = keep - (float)eps;
            set_values(x[i], vals[i]);
            double lm = loss_of(c, x, w);
            vals[i][k] = keep;
            set_values(x[i], vals[i]);
            double num = (lp - lm) / (2 * eps);
            ck_assert_msg(fabs(num - ana[k]) <= 2e-2 + 2e-2 * fabs(num),
                          "%s on %s: d/dx%d[%lld] is %.6g by autograd, %.6g by finite differences", c->name,
                          dt_device_of(g).type ? "cuda:0" : "cpu", i, (long long)k, ana[k], num);
        }
        dt_set_grad_enabled(prev);
        free(ana);
    }
    free(w);
    for (int i = 0; i < c->nin; i++) {
        dt_free(x[i]);
        free(vals[i]);
    }
}

START_TEST(test_gradcheck_cpu) { gradcheck(&cases[_i], CPU); }
END_TEST

START_TEST(test_gradcheck_sim_cuda) { gradcheck(&cases[_i], CUDA(0)); }
END_TEST

/* ---- engine rules */

START_TEST(test_accumulation_and_zero_grad) {
    dt_tensor *x = TF(CPU, DT_SHAPE(2), 1, 2);
    ck_assert_int_eq(dt_set_requires_grad(x, 1), 0);
    ck_assert(dt_is_leaf(x));
    for (int i = 0; i < 2; i++) {
        dt_tensor *y = K(dt_mul(x, x)), *l = K(dt_sum(y));
        ck_assert_str_eq(dt_grad_fn_name(l), "SumBackward0");
        ck_assert(!dt_is_leaf(y));
        ck_assert_int_eq(dt_backward(l), 0);
    }
    EXPECT_VALUES(dt_grad(x), 4, 8); /* 2x, twice */
    dt_zero_grad(x);
    ck_assert_ptr_null(dt_grad(x));
    /* the same tensor used twice in one graph: both paths add up */
    dt_tensor *l = K(dt_sum(K(dt_add(K(dt_mul_scalar(x, 3)), x))));
    ck_assert_int_eq(dt_backward(l), 0);
    EXPECT_VALUES(dt_grad(x), 4, 4);
}
END_TEST

START_TEST(test_no_grad_detach_and_errors) {
    dt_tensor *x = TF(CPU, DT_SHAPE(2), 1, 2);
    dt_set_requires_grad(x, 1);
    ck_assert(dt_is_grad_enabled());
    int prev = dt_set_grad_enabled(0);
    dt_tensor *y = K(dt_mul(x, x));
    dt_set_grad_enabled(prev);
    ck_assert(!dt_requires_grad(y));
    ck_assert_int_eq(dt_backward(y), -1);
    EXPECT_ERROR(DT_ERR_STATE, "does not require grad");
    dt_tensor *d = K(dt_detach(x));
    ck_assert(!dt_requires_grad(d) && dt_shares_storage(d, x));
    /* in place on a leaf that requires grad is refused while recording */
    ck_assert_int_eq(dt_add_scalar_(x, 1), -1);
    EXPECT_ERROR(DT_ERR_STATE, "a leaf Variable that requires grad is being used in an in-place operation");
    dt_tensor *z = K(dt_mul_scalar(x, 2));
    ck_assert_int_eq(dt_copy_(z, x), -1);
    EXPECT_ERROR(DT_ERR_STATE, "in-place operation on a tensor that is part of an autograd graph");
    prev = dt_set_grad_enabled(0);
    ck_assert_int_eq(dt_add_scalar_(x, 1), 0);
    dt_set_grad_enabled(prev);
    /* non-scalar outputs need an explicit gradient */
    ck_assert_int_eq(dt_backward(z), -1);
    EXPECT_ERROR(DT_ERR_SHAPE, "grad can be implicitly created only for scalar outputs");
    /* only float leaves */
    ck_assert_int_eq(dt_set_requires_grad(TI(CPU, DT_SHAPE(1), 1), 1), -1);
    EXPECT_ERROR(DT_ERR_DTYPE, "only Tensors of floating point dtype can require gradients");
    ck_assert_int_eq(dt_set_requires_grad(z, 0), -1);
    EXPECT_ERROR(DT_ERR_STATE, "leaf variables");
}
END_TEST

START_TEST(test_cpu_scalar_grad_goes_home) {
    /* a 0-dim cpu tensor used with a device tensor gets its gradient on the cpu */
    dt_tensor *s = TF(CPU, DT_SCALAR, 3), *v = K(dt_ones(DT_SHAPE(4), DT_F32, CUDA(0)));
    dt_set_requires_grad(s, 1);
    dt_set_requires_grad(v, 1);
    dt_tensor *l = K(dt_sum(K(dt_mul(v, s))));
    ck_assert_int_eq(dt_backward(l), 0);
    ck_assert_int_eq(dt_device_of(dt_grad(s)).type, DT_DEVICE_CPU);
    ck_assert_int_eq(dt_device_of(dt_grad(v)).type, DT_DEVICE_CUDA);
    EXPECT_VALUES(dt_grad(s), 4);
    EXPECT_VALUES(dt_grad(v), 3, 3, 3, 3);
}
END_TEST

START_TEST(test_named_leaf_gets_named_grad) {
    dt_tensor *w = TF(CPU, DT_SHAPE(2), 1, 2);
    dt_set_name(w, "fc.weight");
    dt_set_requires_grad(w, 1);
    ck_assert_int_eq(dt_backward(K(dt_sum(w))), 0);
    ck_assert_str_eq(dt_name(dt_grad(w)), "fc.weight.grad");
}
END_TEST

Suite *make_autograd_suite(void) {
    Suite *s = suite_create("autograd");
    int n = (int)(sizeof cases / sizeof cases[0]);
    TCase *tc = tcase_create("gradcheck");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_loop_test(tc, test_gradcheck_cpu, 0, n);
    tcase_add_loop_test(tc, test_gradcheck_sim_cuda, 0, n);
    suite_add_tcase(s, tc);
    tc = tcase_create("engine");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_add_test(tc, test_accumulation_and_zero_grad);
    tcase_add_test(tc, test_no_grad_detach_and_errors);
    tcase_add_test(tc, test_cpu_scalar_grad_goes_home);
    tcase_add_test(tc, test_named_leaf_gets_named_grad);
    suite_add_tcase(s, tc);
    return s;
}
