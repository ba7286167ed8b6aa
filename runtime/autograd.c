/* Reverse-mode autograd of libdtrt, with PyTorch's semantics: ops on tensors
 * that require grad record a node (what was computed, from which inputs) on
 * their output; dt_backward() walks the nodes in reverse topological order
 * and accumulates each leaf's gradient on the leaf's device.
 *
 * Every gradient is computed with the runtime's own public ops, with grad
 * mode off, so the backward pass runs on the devices the forward pass used,
 * fires the same probes, and is traced like any other op. The ops record
 * nodes through dt__ag_record() from their public entry points; the formulas
 * are all here, one case per enum dt_ag_kind. */
#include "dt_impl.h"

#include <math.h>
#include <string.h>

struct dt_node {
    atomic_int refs;                /* tensors whose grad_fn this is */
    enum dt_ag_kind kind;           /* what the op computed */
    int nin;                        /* entries in in */
    dt_tensor **in;                 /* inputs, retained (NULL for an absent bias) */
    dt_tensor *in_inline[3];        /* storage for in when nin <= 3 */
    double p0, p1;                  /* scalar parameters, see enum dt_ag_kind */
    int ni;                         /* entries in ip */
    int64_t ip[DT_MAX_DIMS + 2];    /* integer parameters (dims, sizes) */
    int out_ndim;                   /* the output's shape */
    int64_t out_shape[DT_MAX_DIMS]; /* ... */
    uint64_t mark;                  /* last backward pass that visited it */
    dt_tensor *gbuf;                /* gradient of the output, during backward */
};

static const char *const kind_names[DT_AG_NKINDS] = {
    [DT_AG_ADD] = "AddBackward0",
    [DT_AG_MUL] = "MulBackward0",
    [DT_AG_DIV] = "DivBackward0",
    [DT_AG_POW] = "PowBackward1",
    [DT_AG_SCALE] = "MulBackward1",
    [DT_AG_POW_S] = "PowBackward0",
    [DT_AG_EXP] = "ExpBackward0",
    [DT_AG_LOG] = "LogBackward0",
    [DT_AG_SQRT] = "SqrtBackward0",
    [DT_AG_ABS] = "AbsBackward0",
    [DT_AG_RELU] = "ReluBackward0",
    [DT_AG_SIGMOID] = "SigmoidBackward0",
    [DT_AG_TANH] = "TanhBackward0",
    [DT_AG_CLAMP] = "ClampBackward1",
    [DT_AG_IDENTITY] = "CloneBackward0",
    [DT_AG_WHERE] = "WhereBackward0",
    [DT_AG_MASKED] = "MaskedFillBackward0",
    [DT_AG_MATMUL] = "MmBackward0",
    [DT_AG_LINEAR] = "AddmmBackward0",
    [DT_AG_EMBED] = "EmbeddingBackward0",
    [DT_AG_INDEX] = "IndexSelectBackward0",
    [DT_AG_SOFTMAX] = "SoftmaxBackward0",
    [DT_AG_LOGSM] = "LogSoftmaxBackward0",
    [DT_AG_SUM] = "SumBackward0",
    [DT_AG_SUM_DIM] = "SumBackward1",
    [DT_AG_MEAN] = "MeanBackward0",
    [DT_AG_MEAN_DIM] = "MeanBackward1",
    [DT_AG_MAX] = "MaxBackward1",
    [DT_AG_MAX_DIM] = "MaxBackward0",
    [DT_AG_RESHAPE] = "ViewBackward0",
    [DT_AG_TRANSPOSE] = "TransposeBackward0",
    [DT_AG_PERMUTE] = "PermuteBackward0",
    [DT_AG_SLICE] = "SliceBackward0",
    [DT_AG_SELECT] = "SelectBackward0",
    [DT_AG_EXPAND] = "ExpandBackward0",
    [DT_AG_CAT] = "CatBackward0",
    [DT_AG_STACK] = "StackBackward0",
    [DT_AG_TO] = "ToCopyBackward0",
    [DT_AG_PAD2D] = "ConstantPadNdBackward0",
    [DT_AG_UNFOLD2D] = "UnfoldBackward0",
};

/* ---------------------------------------------------------------- grad mode */

static _Thread_local int t_no_grad; /* 0: recording (the default) */

int dt__grad_mode(void) { return !t_no_grad; }
int dt_is_grad_enabled(void) { return !t_no_grad; }
int dt_set_grad_enabled(int on) {
    int prev = !t_no_grad;
    t_no_grad = !on;
    return prev;
}

/* ---------------------------------------------------------------- recording */

static void node_release(struct dt_node *n) {
    if (!n || atomic_fetch_sub(&n->refs, 1) != 1) return;
    for (int i = 0; i < n->nin; i++) dt_free(n->in[i]);
    if (n->in != n->in_inline) free(n->in);
    dt_free(n->gbuf);
    free(n);
}

void dt__ag_release(dt_tensor *t) {
    node_release(t->grad_fn);
    t->grad_fn = NULL;
    dt_free(t->grad);
    t->grad = NULL;
}

dt_tensor *dt__ag_record(dt_tensor *out, enum dt_ag_kind kind, int nin, const dt_tensor *const *in, double p0,
                         double p1, int ni, const int64_t *ip) {
    /* out->grad_fn set: an inner public op (flatten -> reshape) recorded it already */
    if (!out || t_no_grad || out->dtype != DT_F32 || out->grad_fn) return out;
    int need = 0;
    for (int i = 0; i < nin; i++) {
        if (in[i] == out) return out; /* the op returned its input (contiguous, to the same device) */
        if (in[i] && in[i]->requires_grad) need = 1;
    }
    if (!need) return out;
    struct dt_node *n = calloc(1, sizeof *n);
    dt_tensor **ins = n && nin > 3 ? calloc((size_t)nin, sizeof *ins) : n ? n->in_inline : NULL;
    if (!n || !ins) {
        free(n);
        dt_free(out);
        dt__raise(DT_ERR_MEMORY, "autograd", "out of host memory recording the autograd graph");
        return NULL;
    }
    atomic_init(&n->refs, 1);
    n->kind = kind;
    n->nin = nin;
    n->in = ins;
    for (int i = 0; i < nin; i++) n->in[i] = dt_retain((dt_tensor *)in[i]);
    n->p0 = p0;
    n->p1 = p1;
    n->ni = ni < DT_MAX_DIMS + 2 ? ni : DT_MAX_DIMS + 2;
    if (n->ni) memcpy(n->ip, ip, sizeof(int64_t) * (size_t)n->ni);
    n->out_ndim = out->ndim;
    memcpy(n->out_shape, out->shape, sizeof n->out_shape);
    out->grad_fn = n;
    out->requires_grad = 1;
    return out;
}

int dt__ag_check_inplace(const dt_tensor *self, const char *op) {
    if (t_no_grad || !self->requires_grad) return 0;
    if (!self->grad_fn)
        dt__raise(DT_ERR_STATE, op,
                  "a leaf Variable that requires grad is being used in an in-place operation. (%s; turn grad mode off "
                  "with dt_set_grad_enabled(0) to update it)",
                  op);
    else
        dt__raise(DT_ERR_STATE, op,
                  "%s: in-place operation on a tensor that is part of an autograd graph is not supported by "
                  "libdtrt; use the out-of-place op",
                  op);
    return -1;
}

/* ---------------------------------------------------------------- public accessors */

int dt_requires_grad(const dt_tensor *t) { return t->requires_grad; }
int dt_is_leaf(const dt_tensor *t) { return t->grad_fn == NULL; }
dt_tensor *dt_grad(const dt_tensor *t) { return t->grad; }
const char *dt_grad_fn_name(const dt_tensor *t) { return t->grad_fn ? kind_names[t->grad_fn->kind] : NULL; }

void dt_zero_grad(dt_tensor *t) {
    dt_free(t->grad);
    t->grad = NULL;
}

int dt_set_requires_grad(dt_tensor *t, int on) {
    dt__runtime_init();
    if (t->grad_fn) {
        dt__raise(DT_ERR_STATE, "requires_grad_",
                  "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                  "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
        return -1;
    }
    if (on && t->dtype != DT_F32) {
        dt__raise(DT_ERR_DTYPE, "requires_grad_", "only Tensors of floating point dtype can require gradients (got %s)",
                  dt_dtype_name(t->dtype));
        return -1;
    }
    t->requires_grad = on != 0;
    return 0;
}

dt_tensor *dt_detach(const dt_tensor *t) {
    dt__runtime_init();
    dt_tensor *v = dt__tensor_wrap(t->storage, t->dtype, t->ndim, t->shape, t->strides, t->offset);
    if (v) dt__tensor_announce(v, DTP_ORIGIN_VIEW, "detach", t->id, 0);
    return v;
}

/* ---------------------------------------------------------------- formulas */

#define T(e) DT_T(ar, e)

/* g summed down to (ndim, shape), the shape an operand had before broadcasting. */
static dt_tensor *sum_to(struct dt_arena *ar, dt_tensor *g, int ndim, const int64_t *shape) {
    dt_tensor *r = g;
    while (r->ndim > ndim) r = T(dt_sum_dim(r, 0, 0));
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 1 && r->shape[d] != 1) r = T(dt_sum_dim(r, d, 1));
    return r;
fail:
    return NULL;
}
#define SUM_TO(g, t)                                                                                                   \
    ({                                                                                                                 \
        dt_tensor *s_ = sum_to(ar, (g), (t)->ndim, (t)->shape);                                                        \
        if (!s_) goto fail;                                                                                            \
        s_;                                                                                                            \
    })

/* A one-hot f32 matrix (numel(idx), classes) on idx's device. */
static dt_tensor *one_hot(struct dt_arena *ar, const dt_tensor *idx, int64_t classes) {
    int64_t flat = -1, row[2] = {1, classes};
    dt_tensor *cls = T(dt_arange(0, (double)classes, 1, DT_I64, idx->storage->device));
    dt_tensor *col = T(dt_reshape(idx, 2, (int64_t[]){flat, 1}));
    dt_tensor *eq = T(dt_eq(col, T(dt_reshape(cls, 2, row))));
    return T(dt_cast(eq, DT_F32));
fail:
    return NULL;
}

/* Fills gin[i] (new references, NULL when input i needs no gradient) with
 * the gradient of n's inputs given g, the gradient of its output. */
static int node_grads(struct dt_node *n, dt_tensor *g, dt_tensor **gin) {
    struct dt_arena arena = {0}, *ar = &arena;
    dt_tensor *a = n->in[0], *b = n->nin > 1 ? n->in[1] : NULL;
    dt_tensor *r[3] = {0}; /* results for in[0..2], arena-owned */
#define WANT(i) (n->in[i] && n->in[i]->requires_grad)
    switch (n->kind) {
    case DT_AG_ADD:
        if (WANT(0)) r[0] = SUM_TO(g, a);
        if (WANT(1)) r[1] = SUM_TO(n->p0 == 1 ? g : T(dt_mul_scalar(g, n->p0)), b);
        break;
    case DT_AG_MUL:
        if (WANT(0)) r[0] = SUM_TO(T(dt_mul(g, b)), a);
        if (WANT(1)) r[1] = SUM_TO(T(dt_mul(g, a)), b);
        break;
    case DT_AG_DIV:
        if (WANT(0)) r[0] = SUM_TO(T(dt_div(g, b)), a);
        if (WANT(1)) r[1] = SUM_TO(T(dt_neg(T(dt_div(T(dt_mul(g, a)), T(dt_mul(b, b)))))), b);
        break;
    case DT_AG_POW:
        if (WANT(0)) r[0] = SUM_TO(T(dt_mul(T(dt_mul(g, b)), T(dt_pow(a, T(dt_sub_scalar(b, 1)))))), a);
        if (WANT(1)) {
            dt_tensor *v = T(dt_mul(T(dt_mul(g, T(dt_pow(a, b)))), T(dt_log(a))));
            r[1] = SUM_TO(T(dt_masked_fill(v, T(dt_eq_scalar(a, 0)), 0)), b); /* 0^b: no gradient, as PyTorch */
        }
        break;
    case DT_AG_SCALE: r[0] = n->p0 == 1 ? g : T(dt_mul_scalar(g, n->p0)); break;
    case DT_AG_POW_S:
        r[0] = n->p0 == 0 ? T(dt_zeros_like(a)) : T(dt_mul(T(dt_mul_scalar(g, n->p0)), T(dt_pow_scalar(a, n->p0 - 1))));
        break;
    case DT_AG_EXP: r[0] = T(dt_mul(g, T(dt_exp(a)))); break;
    case DT_AG_LOG: r[0] = T(dt_div(g, a)); break;
    case DT_AG_SQRT: r[0] = T(dt_div(T(dt_mul_scalar(g, 0.5)), T(dt_sqrt(a)))); break;
    case DT_AG_ABS: {
        dt_tensor *sign =
            T(dt_sub(T(dt_cast(T(dt_gt_scalar(a, 0)), DT_F32)), T(dt_cast(T(dt_lt_scalar(a, 0)), DT_F32))));
        r[0] = T(dt_mul(g, sign));
        break;
    }
    case DT_AG_RELU: r[0] = T(dt_mul(g, T(dt_gt_scalar(a, 0)))); break;
    case DT_AG_SIGMOID: {
        dt_tensor *s = T(dt_sigmoid(a));
        r[0] = T(dt_mul(g, T(dt_mul(s, T(dt_rsub_scalar(s, 1))))));
        break;
    }
    case DT_AG_TANH: {
        dt_tensor *t = T(dt_tanh(a));
        r[0] = T(dt_mul(g, T(dt_rsub_scalar(T(dt_mul(t, t)), 1))));
        break;
    }
    case DT_AG_CLAMP: r[0] = T(dt_mul(g, T(dt_eq(T(dt_clamp(a, n->p0, n->p1)), a)))); break;
    case DT_AG_IDENTITY: r[0] = g; break;
    case DT_AG_WHERE: { /* in = {cond, a, b} */
        dt_tensor *cond = n->in[0];
        if (WANT(1)) r[1] = SUM_TO(T(dt_masked_fill(g, T(dt_eq_scalar(cond, 0)), 0)), n->in[1]);
        if (WANT(2)) r[2] = SUM_TO(T(dt_masked_fill(g, cond, 0)), n->in[2]);
        break;
    }
    case DT_AG_MASKED: r[0] = SUM_TO(T(dt_masked_fill(g, b, 0)), a); break;
    case DT_AG_MATMUL: {
        dt_tensor *a2 = a->ndim == 1 ? T(dt_unsqueeze(a, 0)) : a;
        dt_tensor *b2 = b->ndim == 1 ? T(dt_unsqueeze(b, 1)) : b;
        dt_tensor *g2 = g;
        if (a->ndim == 1 && b->ndim == 1)
            g2 = T(dt_reshape(g, 2, (int64_t[]){1, 1}));
        else if (a->ndim == 1)
            g2 = T(dt_unsqueeze(g, g->ndim - 1));
        else if (b->ndim == 1)
            g2 = T(dt_unsqueeze(g, g->ndim));
        if (WANT(0)) {
            dt_tensor *ga = T(dt_matmul(g2, T(dt_transpose(b2, -1, -2))));
            r[0] = T(dt_reshape(SUM_TO(ga, a2), a->ndim, a->shape));
        }
        if (WANT(1)) {
            dt_tensor *gb = T(dt_matmul(T(dt_transpose(a2, -1, -2)), g2));
            r[1] = T(dt_reshape(SUM_TO(gb, b2), b->ndim, b->shape));
        }
        break;
    }
    case DT_AG_LINEAR: { /* in = {x, w, bias} */
        dt_tensor *w = n->in[1];
        int64_t outf = w->shape[0], inf = w->shape[1];
        dt_tensor *g2 = T(dt_reshape(g, 2, (int64_t[]){-1, outf}));
        if (WANT(0)) r[0] = T(dt_matmul(g, w));
        if (WANT(1)) r[1] = T(dt_matmul(T(dt_transpose(g2, 0, 1)), T(dt_reshape(a, 2, (int64_t[]){-1, inf}))));
        if (WANT(2)) r[2] = T(dt_sum_dim(g2, 0, 0));
        break;
    }
    case DT_AG_EMBED: { /* in = {weight, indices} */
        dt_tensor *oh = one_hot(ar, b, a->shape[0]);
        if (!oh) goto fail;
        dt_tensor *g2 = T(dt_reshape(g, 2, (int64_t[]){-1, a->shape[1]}));
        r[0] = T(dt_matmul(T(dt_transpose(oh, 0, 1)), g2));
        break;
    }
    case DT_AG_INDEX: { /* in = {self, index}, ip = {dim} */
        int dim = (int)n->ip[0];
        dt_tensor *oh = one_hot(ar, b, a->ndim ? a->shape[dim] : 1);
        if (!oh) goto fail;
        if (a->ndim == 0) {
            r[0] = T(dt_reshape(T(dt_matmul(g, oh)), 0, NULL));
            break;
        }
        dt_tensor *moved = T(dt_matmul(T(dt_transpose(g, dim, -1)), oh));
        r[0] = T(dt_transpose(moved, dim, -1));
        break;
    }
    case DT_AG_SOFTMAX: {
        int dim = (int)n->ip[0];
        dt_tensor *y = T(dt_softmax(a, dim));
        r[0] = T(dt_mul(y, T(dt_sub(g, T(dt_sum_dim(T(dt_mul(g, y)), dim, 1))))));
        break;
    }
    case DT_AG_LOGSM: {
        int dim = (int)n->ip[0];
        dt_tensor *y = T(dt_softmax(a, dim));
        r[0] = T(dt_sub(g, T(dt_mul(y, T(dt_sum_dim(g, dim, 1))))));
        break;
    }
    case DT_AG_SUM:
    case DT_AG_MEAN: {
        dt_tensor *s = n->kind == DT_AG_MEAN ? T(dt_div_scalar(g, (double)dt_numel(a))) : g;
        r[0] = T(dt_expand(T(dt_reshape(s, 0, NULL)), a->ndim, a->shape));
        break;
    }
    case DT_AG_SUM_DIM:
    case DT_AG_MEAN_DIM: {
        int dim = (int)n->ip[0], keepdim = (int)n->ip[1];
        if (a->ndim == 0) {
            r[0] = g;
            break;
        }
        dt_tensor *s = n->kind == DT_AG_MEAN_DIM ? T(dt_div_scalar(g, (double)a->shape[dim])) : g;
        r[0] = T(dt_expand(keepdim ? s : T(dt_unsqueeze(s, dim)), a->ndim, a->shape));
        break;
    }
    case DT_AG_MAX: { /* ties share the gradient evenly, as PyTorch's max() */
        dt_tensor *mask = T(dt_cast(T(dt_eq(a, T(dt_max(a)))), DT_F32));
        r[0] = T(dt_mul(mask, T(dt_div(g, T(dt_sum(mask))))));
        break;
    }
    case DT_AG_MAX_DIM: {
        int dim = (int)n->ip[0], keepdim = (int)n->ip[1];
        if (a->ndim == 0) {
            r[0] = g;
            break;
        }
        int64_t shape[DT_MAX_DIMS];
        for (int d = 0; d < a->ndim; d++) shape[d] = d == dim ? a->shape[d] : 1;
        dt_tensor *pos =
            T(dt_reshape(T(dt_arange(0, (double)a->shape[dim], 1, DT_I64, a->storage->device)), a->ndim, shape));
        dt_tensor *mask = T(dt_eq(T(dt_argmax_dim(a, dim, 1)), pos));
        r[0] = T(dt_mul(mask, keepdim ? g : T(dt_unsqueeze(g, dim))));
        break;
    }
    case DT_AG_RESHAPE: r[0] = T(dt_reshape(g, a->ndim, a->shape)); break;
    case DT_AG_TRANSPOSE: r[0] = T(dt_transpose(g, (int)n->ip[0], (int)n->ip[1])); break;
    case DT_AG_PERMUTE: {
        int inv[DT_MAX_DIMS];
        for (int d = 0; d < a->ndim; d++) inv[n->ip[d]] = d;
        r[0] = T(dt_permute(g, inv));
        break;
    }
    case DT_AG_SLICE:
    case DT_AG_SELECT: {
        dt_tensor *z = T(dt_zeros(a->ndim, a->shape, DT_F32, g->storage->device));
        dt_tensor *v = n->kind == DT_AG_SLICE ? T(dt_slice(z, (int)n->ip[0], n->ip[1], n->ip[2], n->ip[3]))
                                              : T(dt_select(z, (int)n->ip[0], n->ip[1]));
        if (dt_copy_(v, g) < 0) goto fail;
        r[0] = z;
        break;
    }
    case DT_AG_EXPAND: r[0] = SUM_TO(g, a); break;
    case DT_AG_CAT:
    case DT_AG_STACK: {
        int dim = (int)n->ip[0];
        int64_t off = 0;
        for (int i = 0; i < n->nin; i++) {
            if (n->kind == DT_AG_STACK) {
                if (WANT(i)) gin[i] = dt_retain(T(dt_select(g, dim, i)));
                continue;
            }
            int64_t len = n->in[i]->ndim ? n->in[i]->shape[dim] : 0;
            if (WANT(i)) gin[i] = dt_retain(T(dt_narrow(g, dim, off, len)));
            off += len;
        }
        break;
    }
    case DT_AG_TO: r[0] = T(dt_to(g, a->storage->device)); break;
    case DT_AG_PAD2D: {
        int64_t p = n->ip[0], h = a->shape[a->ndim - 2], w = a->shape[a->ndim - 1];
        r[0] = T(dt_slice(T(dt_slice(g, -2, p, p + h, 1)), -1, p, p + w, 1));
        break;
    }
    case DT_AG_UNFOLD2D: { /* the patches overlap: add each kernel position's share back */
        int64_t kh = n->ip[0], kw = n->ip[1], s = n->ip[2], oh = n->out_shape[2], ow = n->out_shape[3];
        dt_tensor *z = T(dt_zeros(a->ndim, a->shape, DT_F32, g->storage->device));
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) {
                dt_tensor *dst =
                    T(dt_slice(T(dt_slice(z, 2, i, i + s * (oh - 1) + 1, s)), 3, j, j + s * (ow - 1) + 1, s));
                if (dt_add_(dst, T(dt_select(T(dt_select(g, 5, j)), 4, i))) < 0) goto fail;
            }
        r[0] = z;
        break;
    }
    case DT_AG_NKINDS: break;
    }
#undef WANT
    for (int i = 0; i < 3 && i < n->nin; i++)
        if (r[i]) gin[i] = dt_retain(r[i]);
    dt__arena_free(ar);
    return 0;
fail:
    for (int i = 0; i < n->nin; i++) {
        dt_free(gin[i]);
        gin[i] = NULL;
    }
    dt__arena_free(ar);
    return -1;
}
#undef T
#undef SUM_TO

/* ---------------------------------------------------------------- temporaries */

dt_tensor *dt__keep(struct dt_arena *a, dt_tensor *t) {
    if (!t) return NULL;
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 32;
        dt_tensor **nt = realloc(a->t, sizeof *nt * (size_t)cap);
        if (!nt) {
            dt_free(t);
            dt__raise(DT_ERR_MEMORY, "arena", "out of host memory for intermediate tensors");
            return NULL;
        }
        a->t = nt;
        a->cap = cap;
    }
    return a->t[a->n++] = t;
}

void dt__arena_free(struct dt_arena *a) {
    while (a->n) dt_free(a->t[--a->n]);
    free(a->t);
    a->t = NULL;
    a->cap = 0;
}

/* ---------------------------------------------------------------- the engine */

static _Atomic uint64_t g_pass = 1;

/* Nodes reachable from root, in reverse topological order (root first). */
static struct dt_node **topo_order(struct dt_node *root, int *count) {
    uint64_t pass = atomic_fetch_add(&g_pass, 1);
    int cap = 64, n = 0, depth = 0, scap = 64;
    struct dt_node **order = malloc(sizeof *order * (size_t)cap);
    struct frame {
        struct dt_node *node;
        int next;
    } *stack = malloc(sizeof *stack * (size_t)scap);
    if (!order || !stack) goto oom;
    root->mark = pass;
    stack[depth++] = (struct frame){root, 0};
    while (depth) {
        struct frame *f = &stack[depth - 1];
        if (f->next < f->node->nin) {
            dt_tensor *t = f->node->in[f->next++];
            struct dt_node *c = t ? t->grad_fn : NULL;
            if (!c || c->mark == pass) continue;
            c->mark = pass;
            if (depth == scap) {
                scap *= 2;
                struct frame *ns = realloc(stack, sizeof *ns * (size_t)scap);
                if (!ns) goto oom;
                stack = ns;
            }
            stack[depth++] = (struct frame){c, 0};
            continue;
        }
        if (n == cap) {
            cap *= 2;
            struct dt_node **no = realloc(order, sizeof *no * (size_t)cap);
            if (!no) goto oom;
            order = no;
        }
        order[n++] = f->node; /* post-order: after everything it depends on */
        depth--;
    }
    free(stack);
    for (int i = 0; i < n / 2; i++) { /* reverse: root first */
        struct dt_node *t = order[i];
        order[i] = order[n - 1 - i];
        order[n - 1 - i] = t;
    }
    *count = n;
    return order;
oom:
    free(order);
    free(stack);
    dt__raise(DT_ERR_MEMORY, "backward", "out of host memory ordering the autograd graph");
    return NULL;
}

/* Adds g into the gradient slot of tensor t: its node's buffer, or the
 * leaf's grad. g is borrowed. */
static int accumulate(dt_tensor *t, dt_tensor *g) {
    dt_tensor *moved = NULL;
    if (!dt_device_equal(g->storage->device, t->storage->device)) {
        /* a 0-dim cpu operand of a device op: its gradient goes home, as PyTorch's engine does */
        moved = dt_to(g, t->storage->device);
        if (!moved) return -1;
        g = moved;
    }
    int rc = 0;
    if (t->grad_fn) {
        struct dt_node *n = t->grad_fn;
        if (!n->gbuf)
            n->gbuf = dt_retain(g);
        else {
            dt_tensor *s = dt_add(n->gbuf, g);
            if (!s)
                rc = -1;
            else {
                dt_free(n->gbuf);
                n->gbuf = s;
            }
        }
    } else if (t->requires_grad) {
        if (!t->grad) {
            t->grad = dt_clone(g); /* its own contiguous memory on t's device */
            if (!t->grad)
                rc = -1;
            else if (t->name) {
                size_t len = strlen(t->name) + 6;
                char *name = malloc(len);
                if (name) {
                    snprintf(name, len, "%s.grad", t->name);
                    dt_set_name(t->grad, name);
                    free(name);
                }
            }
        } else if (dt_add_(t->grad, g) < 0)
            rc = -1;
    }
    dt_free(moved);
    return rc;
}

int dt_backward(const dt_tensor *loss) {
    dt__runtime_init();
    if (!loss->requires_grad) {
        dt__raise(DT_ERR_STATE, "backward", "element 0 of tensors does not require grad and does not have a grad_fn");
        return -1;
    }
    if (dt_numel(loss) != 1) {
        char s[160];
        dt__raise(DT_ERR_SHAPE, "backward", "grad can be implicitly created only for scalar outputs (got shape %s)",
                  dt__shape_str(loss->ndim, loss->shape, s, sizeof s));
        return -1;
    }
    struct dt_opctx c;
    if (dt__op_begin(&c, "backward", 0, NULL, NULL, DT_CHECK_NONE) < 0) return -1;
    int prev = dt_set_grad_enabled(0);
    int rc = -1, count = 0;
    struct dt_node **order = NULL;
    dt_tensor *seed = dt_ones_like(loss);
    if (!seed) goto out;
    if (!loss->grad_fn) {
        rc = accumulate((dt_tensor *)loss, seed);
        goto out;
    }
    order = topo_order(loss->grad_fn, &count);
    if (!order) goto out;
    loss->grad_fn->gbuf = dt_retain(seed);
    for (int k = 0; k < count; k++) {
        struct dt_node *n = order[k];
        dt_tensor *g = n->gbuf;
        n->gbuf = NULL;
        if (!g) continue; /* no gradient reached it */
        dt_tensor *inl[3] = {0}, **gin = n->nin <= 3 ? inl : calloc((size_t)n->nin, sizeof *gin);
        int bad = !gin || node_grads(n, g, gin) < 0;
        dt_free(g);
        for (int i = 0; !bad && i < n->nin; i++)
            if (gin[i]) bad = accumulate(n->in[i], gin[i]) < 0;
        for (int i = 0; gin && i < n->nin; i++) dt_free(gin[i]);
        if (gin != inl) free(gin);
        if (bad) {
            if (!gin) dt__raise(DT_ERR_MEMORY, "backward", "out of host memory in the backward pass");
            for (int j = k + 1; j < count; j++) {
                dt_free(order[j]->gbuf);
                order[j]->gbuf = NULL;
            }
            goto out;
        }
    }
    rc = 0;
out:
    free(order);
    dt_free(seed);
    dt_set_grad_enabled(prev);
    dt__op_end(&c, rc ? (int)dt_last_error_kind() : 0, 0, NULL);
    return rc;
}
