/* Layers and losses of libdtrt's training layer, composed from the tensor
 * core's ops so that their gradients come from autograd and they run on any
 * backend. Each is one op for the probes (its own dtp_op_begin/end around
 * the ops it is made of) with PyTorch's device check over its tensor
 * arguments, named as in PyTorch, so that a loss weight on the wrong device
 * is reported as an argument of the loss. */
#include "dt_impl.h"

#include <devtrace/dt_nn.h>
#include <math.h>
#include <string.h>

#define T(e) DT_T(ar, e)

/* Ends composite op c with out (NULL: failed, the error already raised). */
static dt_tensor *finish(struct dt_opctx *c, struct dt_arena *ar, dt_tensor *out) {
    dt__arena_free(ar);
    dt__op_end(c, out ? 0 : (int)(dt_last_error_kind() ? dt_last_error_kind() : DT_ERR_BACKEND), out ? 1 : 0, &out);
    return out;
}

static int need_f32(struct dt_opctx *c, const dt_tensor *t, const char *what) {
    if (!t || t->dtype == DT_F32) return 0;
    return dt__op_fail(c, DT_ERR_DTYPE, "%s: expected %s to have dtype float32, but got %s", c->name, what,
                       dt_dtype_name(t->dtype));
}

/* ---------------------------------------------------------------- 2-d helpers */

/* x with its last two dims padded by p on every side with value. */
static dt_tensor *pad2d(const dt_tensor *x, int64_t p, double value) {
    if (p == 0) return dt_retain((dt_tensor *)x);
    int64_t shape[DT_MAX_DIMS];
    int nd = x->ndim;
    memcpy(shape, x->shape, sizeof shape);
    shape[nd - 2] += 2 * p;
    shape[nd - 1] += 2 * p;
    dt_tensor *out = dt_full(nd, shape, value, DT_F32, x->storage->device);
    if (!out) return NULL;
    dt_tensor *rows = dt_slice(out, nd - 2, p, p + x->shape[nd - 2], 1);
    dt_tensor *inner = rows ? dt_slice(rows, nd - 1, p, p + x->shape[nd - 1], 1) : NULL;
    int rc = inner ? dt_copy_(inner, x) : -1;
    dt_free(inner);
    dt_free(rows);
    if (rc < 0) {
        dt_free(out);
        return NULL;
    }
    return dt__agi(out, DT_AG_PAD2D, x, 1, &p);
}

/* The (N, C, OH, OW, KH, KW) view of x's windows: no copy. */
static dt_tensor *unfold2d(const dt_tensor *x, int64_t kh, int64_t kw, int64_t s) {
    int64_t oh = (x->shape[2] - kh) / s + 1, ow = (x->shape[3] - kw) / s + 1;
    int64_t shape[6] = {x->shape[0], x->shape[1], oh, ow, kh, kw};
    int64_t strides[6] = {x->strides[0],     x->strides[1], x->strides[2] * s,
                          x->strides[3] * s, x->strides[2], x->strides[3]};
    dt_tensor *v = dt__tensor_wrap(x->storage, x->dtype, 6, shape, strides, x->offset);
    if (!v) return NULL;
    dt__tensor_announce(v, DTP_ORIGIN_VIEW, "unfold", x->id, 0);
    int64_t ip[3] = {kh, kw, s};
    return dt__agi(v, DT_AG_UNFOLD2D, x, 3, ip);
}

static int check_window(struct dt_opctx *c, const dt_tensor *x, int64_t kh, int64_t kw, int64_t s, int64_t p) {
    char sh[160];
    if (x->ndim != 4)
        return dt__op_fail(c, DT_ERR_SHAPE, "%s: expected a 4-D input (N, C, H, W), but got input of size: %s", c->name,
                           dt__shape_str(x->ndim, x->shape, sh, sizeof sh));
    if (s <= 0 || p < 0 || kh <= 0 || kw <= 0)
        return dt__op_fail(c, DT_ERR_ARG, "%s: kernel and stride must be positive and padding non-negative", c->name);
    if (x->shape[2] + 2 * p < kh || x->shape[3] + 2 * p < kw)
        return dt__op_fail(
            c, DT_ERR_SHAPE, "%s: kernel size (%lld x %lld) can't be greater than padded input size (%lld x %lld)",
            c->name, (long long)kh, (long long)kw, (long long)(x->shape[2] + 2 * p), (long long)(x->shape[3] + 2 * p));
    return 0;
}

/* ---------------------------------------------------------------- layers */

dt_tensor *dt_conv2d(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias, int stride, int padding) {
    static const char *const names[] = {"input", "weight", "bias"};
    const dt_tensor *ts[] = {input, weight, bias};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "conv2d", 3, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (need_f32(&c, input, "input") || need_f32(&c, weight, "weight") || need_f32(&c, bias, "bias")) return NULL;
    char a[160], b[160];
    if (weight->ndim != 4)
        return dt__op_fail(&c, DT_ERR_SHAPE, "conv2d: expected a 4-D weight (OC, C, KH, KW), got %s",
                           dt__shape_str(weight->ndim, weight->shape, a, sizeof a)),
               NULL;
    if (check_window(&c, input, weight->shape[2], weight->shape[3], stride, padding) < 0) return NULL;
    if (input->shape[1] != weight->shape[1])
        return dt__op_fail(&c, DT_ERR_SHAPE,
                           "Given groups=1, weight of size %s, expected input%s to have %lld channels, but got %lld "
                           "channels instead",
                           dt__shape_str(4, weight->shape, a, sizeof a), dt__shape_str(4, input->shape, b, sizeof b),
                           (long long)weight->shape[1], (long long)input->shape[1]),
               NULL;
    if (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0]))
        return dt__op_fail(&c, DT_ERR_SHAPE, "conv2d: bias of shape %s does not match %lld output channels",
                           dt__shape_str(bias->ndim, bias->shape, a, sizeof a), (long long)weight->shape[0]),
               NULL;
    int64_t n = input->shape[0], oc = weight->shape[0], kh = weight->shape[2], kw = weight->shape[3];
    int64_t k = weight->shape[1] * kh * kw;
    dt_tensor *xp = T(pad2d(input, padding, 0));
    dt_tensor *u = T(unfold2d(xp, kh, kw, stride));
    int64_t oh = u->shape[2], ow = u->shape[3];
    dt_tensor *cols = T(dt_reshape(T(dt_permute(u, (const int[]){0, 2, 3, 1, 4, 5})), 2, (int64_t[]){n * oh * ow, k}));
    dt_tensor *y = T(dt_linear(cols, T(dt_reshape(weight, 2, (int64_t[]){oc, k})), bias));
    dt_tensor *y4 = T(dt_reshape(y, 4, (int64_t[]){n, oh, ow, oc}));
    return finish(&c, ar, dt_contiguous(T(dt_permute(y4, (const int[]){0, 3, 1, 2}))));
fail:
    return finish(&c, ar, NULL);
}

dt_tensor *dt_max_pool2d(const dt_tensor *input, int k, int stride, int padding) {
    static const char *const names[] = {"self"};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "max_pool2d", 1, &input, names, DT_CHECK_STRICT) < 0) return NULL;
    if (stride == 0) stride = k;
    if (need_f32(&c, input, "input") || check_window(&c, input, k, k, stride, padding) < 0) return NULL;
    if (padding * 2 > k)
        return dt__op_fail(&c, DT_ERR_ARG,
                           "pad should be at most half of effective kernel size, but got pad=%d, "
                           "kernel_size=%d",
                           padding, k),
               NULL;
    dt_tensor *xp = T(pad2d(input, padding, -INFINITY));
    dt_tensor *u = T(unfold2d(xp, k, k, stride));
    dt_tensor *w = T(dt_reshape(u, 5, (int64_t[]){u->shape[0], u->shape[1], u->shape[2], u->shape[3], (int64_t)k * k}));
    return finish(&c, ar, dt_max_dim(w, 4, 0, NULL));
fail:
    return finish(&c, ar, NULL);
}

dt_tensor *dt_layer_norm(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias, double eps) {
    static const char *const names[] = {"input", "weight", "bias"};
    const dt_tensor *ts[] = {input, weight, bias};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "layer_norm", 3, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (need_f32(&c, input, "input") || need_f32(&c, weight, "weight") || need_f32(&c, bias, "bias")) return NULL;
    char a[160], b[160];
    int64_t d = input->ndim ? input->shape[input->ndim - 1] : 1;
    for (int i = 1; i < 3; i++)
        if (ts[i] && (ts[i]->ndim != 1 || ts[i]->shape[0] != d))
            return dt__op_fail(&c, DT_ERR_SHAPE,
                               "Given normalized_shape=[%lld], expected %s of shape [%lld], but got %s of shape %s",
                               (long long)d, names[i], (long long)d, names[i],
                               dt__shape_str(ts[i]->ndim, ts[i]->shape, a, sizeof a)),
                   NULL;
    if (input->ndim == 0)
        return dt__op_fail(&c, DT_ERR_SHAPE, "layer_norm: input of shape %s has no dimension to normalize",
                           dt__shape_str(0, NULL, b, sizeof b)),
               NULL;
    dt_tensor *xc = T(dt_sub(input, T(dt_mean_dim(input, -1, 1))));
    dt_tensor *var = T(dt_mean_dim(T(dt_mul(xc, xc)), -1, 1));
    dt_tensor *y = T(dt_mul(xc, T(dt_pow_scalar(T(dt_add_scalar(var, eps)), -0.5))));
    if (weight) y = T(dt_mul(y, weight));
    if (bias) y = T(dt_add(y, bias));
    return finish(&c, ar, dt_retain(y));
fail:
    return finish(&c, ar, NULL);
}

dt_tensor *dt_dropout(const dt_tensor *input, double p, int training) {
    static const char *const names[] = {"input"};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "dropout", 1, &input, names, DT_CHECK_STRICT) < 0) return NULL;
    if (!(p >= 0 && p <= 1))
        return dt__op_fail(&c, DT_ERR_ARG, "dropout probability has to be between 0 and 1, but got %g", p), NULL;
    if (!training || p == 0) return finish(&c, ar, dt_retain((dt_tensor *)input));
    if (need_f32(&c, input, "input")) return NULL;
    dt_tensor *mask = T(dt_cast(T(dt_lt_scalar(T(dt_rand_like(input)), 1 - p)), DT_F32));
    if (p < 1) mask = T(dt_mul_scalar(mask, 1 / (1 - p)));
    return finish(&c, ar, dt_mul(input, mask));
fail:
    return finish(&c, ar, NULL);
}

/* ---------------------------------------------------------------- losses */

dt_tensor *dt_mse_loss(const dt_tensor *input, const dt_tensor *target) {
    static const char *const names[] = {"self", "target"};
    const dt_tensor *ts[] = {input, target};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "mse_loss", 2, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (need_f32(&c, input, "input") || need_f32(&c, target, "target")) return NULL;
    dt_tensor *d = T(dt_sub(input, target));
    return finish(&c, ar, dt_mean(T(dt_mul(d, d))));
fail:
    return finish(&c, ar, NULL);
}

/* Reads target's values straight from memory when its device's memory is
 * host memory (cpu, simulated cuda) and checks their range, as PyTorch's
 * kernels do (a device-side assert on real CUDA, which is not checked). */
static int check_targets(struct dt_opctx *c, const dt_tensor *target, int64_t classes, int64_t ignore) {
    if (!target->storage->backend->host_accessible) return 0;
    const int64_t *p = (const int64_t *)target->storage->data + target->offset;
    for (int64_t i = 0; i < target->shape[0]; i++) {
        int64_t v = p[i * target->strides[0]];
        if (v != ignore && (v < 0 || v >= classes))
            return dt__op_fail(c, DT_ERR_INDEX, "Target %lld is out of bounds.", (long long)v);
    }
    return 0;
}

/* nll over log-probabilities lp (N, C), inside op c whose arguments were checked. */
static dt_tensor *nll_core(struct dt_opctx *c, struct dt_arena *ar, const dt_tensor *lp, const dt_tensor *target,
                           const dt_tensor *weight, int64_t ignore) {
    char a[160], b[160];
    if (lp->ndim != 2)
        return dt__op_fail(c, DT_ERR_SHAPE, "%s: expected input of shape (N, C), got %s", c->name,
                           dt__shape_str(lp->ndim, lp->shape, a, sizeof a)),
               NULL;
    if (target->dtype != DT_I64)
        return dt__op_fail(c, DT_ERR_DTYPE, "expected scalar type Long but found %s",
                           target->dtype == DT_F32 ? "Float" : "Bool"),
               NULL;
    if (target->ndim != 1 || target->shape[0] != lp->shape[0])
        return dt__op_fail(c, DT_ERR_SHAPE, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                           (long long)lp->shape[0], (long long)(target->ndim ? target->shape[0] : 0)),
               NULL;
    int64_t classes = lp->shape[1];
    if (weight && (weight->ndim != 1 || weight->shape[0] != classes))
        return dt__op_fail(c, DT_ERR_SHAPE,
                           "weight tensor should be defined either for all %lld classes or no classes but got weight "
                           "tensor of shape: %s",
                           (long long)classes, dt__shape_str(weight->ndim, weight->shape, b, sizeof b)),
               NULL;
    if (check_targets(c, target, classes, ignore) < 0) return NULL;
    /* one-hot rows select each sample's class; an ignored target's row is all
     * zero, so it counts neither in the sum nor in the weight total */
    dt_tensor *cls =
        T(dt_reshape(T(dt_arange(0, (double)classes, 1, DT_I64, lp->storage->device)), 2, (int64_t[]){1, classes}));
    dt_tensor *w = T(dt_cast(T(dt_eq(T(dt_unsqueeze(target, 1)), cls)), DT_F32));
    if (weight) w = T(dt_mul(w, T(dt_unsqueeze(weight, 0))));
    dt_tensor *num = T(dt_sum(T(dt_mul(lp, w))));
    return dt_neg(T(dt_div(num, T(dt_sum(w)))));
fail:
    return NULL;
}

dt_tensor *dt_nll_loss(const dt_tensor *input, const dt_tensor *target, const dt_tensor *weight, int64_t ignore_index) {
    static const char *const names[] = {"self", "target", "weight"};
    const dt_tensor *ts[] = {input, target, weight};
    struct dt_opctx c;
    struct dt_arena arena = {0};
    if (dt__op_begin(&c, "nll_loss", 3, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (need_f32(&c, input, "input") || need_f32(&c, weight, "weight")) return NULL;
    return finish(&c, &arena, nll_core(&c, &arena, input, target, weight, ignore_index));
}

dt_tensor *dt_cross_entropy(const dt_tensor *input, const dt_tensor *target, const dt_tensor *weight,
                            int64_t ignore_index) {
    static const char *const names[] = {"self", "target", "weight"};
    const dt_tensor *ts[] = {input, target, weight};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "cross_entropy", 3, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (need_f32(&c, input, "input") || need_f32(&c, weight, "weight")) return NULL;
    if (input->ndim != 2)
        return dt__op_fail(&c, DT_ERR_SHAPE, "cross_entropy: expected input of shape (N, C), got %d dimensions",
                           input->ndim),
               NULL;
    dt_tensor *lp = T(dt_log_softmax(input, 1));
    return finish(&c, ar, nll_core(&c, ar, lp, target, weight, ignore_index));
fail:
    return finish(&c, ar, NULL);
}

dt_tensor *dt_bce_with_logits(const dt_tensor *input, const dt_tensor *target, const dt_tensor *pos_weight) {
    static const char *const names[] = {"self", "target", "pos_weight"};
    const dt_tensor *ts[] = {input, target, pos_weight};
    struct dt_opctx c;
    struct dt_arena arena = {0}, *ar = &arena;
    if (dt__op_begin(&c, "binary_cross_entropy_with_logits", 3, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (need_f32(&c, input, "input") || need_f32(&c, target, "target") || need_f32(&c, pos_weight, "pos_weight"))
        return NULL;
    char a[160], b[160];
    if (input->ndim != target->ndim || memcmp(input->shape, target->shape, sizeof(int64_t) * (size_t)input->ndim))
        return dt__op_fail(&c, DT_ERR_SHAPE, "Target size (%s) must be the same as input size (%s)",
                           dt__shape_str(target->ndim, target->shape, a, sizeof a),
                           dt__shape_str(input->ndim, input->shape, b, sizeof b)),
               NULL;
    if (pos_weight && !dt__can_broadcast_to(pos_weight, input->ndim, input->shape))
        return dt__op_fail(&c, DT_ERR_SHAPE, "pos_weight of shape %s does not broadcast to input of shape %s",
                           dt__shape_str(pos_weight->ndim, pos_weight->shape, a, sizeof a),
                           dt__shape_str(input->ndim, input->shape, b, sizeof b)),
               NULL;
    /* (1 - y) x + (1 + (pw - 1) y) (log(1 + exp(-|x|)) + max(-x, 0)), stable for any x */
    dt_tensor *lin = T(dt_mul(T(dt_rsub_scalar(target, 1)), input));
    dt_tensor *soft =
        T(dt_add(T(dt_log(T(dt_add_scalar(T(dt_exp(T(dt_neg(T(dt_abs(input)))))), 1)))), T(dt_relu(T(dt_neg(input))))));
    if (pos_weight) soft = T(dt_mul(soft, T(dt_add_scalar(T(dt_mul(T(dt_sub_scalar(pos_weight, 1)), target)), 1))));
    return finish(&c, ar, dt_mean(T(dt_add(lin, soft))));
fail:
    return finish(&c, ar, NULL);
}
