/* Elementwise ops of libdtrt: arithmetic, math functions, comparisons,
 * where/masked_fill, casts and their in-place forms. Each checks devices
 * (0-dim cpu tensors join any device, as in PyTorch), broadcasts, promotes
 * dtypes, and runs one backend ew kernel. */
#include "dt_impl.h"

#include <math.h>
#include <string.h>

static int is_cmp(enum dt_ew_op op) { return op >= DT_EW_EQ && op <= DT_EW_GE; }

/* Fills operand o from tensor t for an op running on c->device with output
 * shape (nd, shape). A 0-dim cpu tensor on another device becomes a scalar
 * read on the host, as PyTorch passes such tensors to kernels by value. */
static void operand_of(struct dt_opctx *c, const dt_tensor *t, int nd, const int64_t *shape, struct dt_operand *o) {
    memset(o, 0, sizeof *o);
    dt__view_of(t, &o->v);
    if (dt__is_cpu_scalar(t) && c->device.type != DT_DEVICE_CPU) {
        o->is_scalar = 1;
        const void *p = (const char *)t->storage->data + t->offset * (int64_t)dt_dtype_size(t->dtype);
        o->scalar = t->dtype == DT_F32   ? *(const float *)p
                    : t->dtype == DT_I64 ? (double)*(const int64_t *)p
                                         : *(const uint8_t *)p;
    }
    dt__broadcast_view(&o->v, nd, shape);
}

static void scalar_operand(double s, dt_dtype dt, int nd, const int64_t *shape, struct dt_operand *o) {
    memset(o, 0, sizeof *o);
    o->is_scalar = 1;
    o->scalar = s;
    o->v.dtype = dt;
    o->v.ndim = nd;
    if (nd) memcpy(o->v.shape, shape, sizeof(int64_t) * (size_t)nd);
}

/* A Python number's dtype against a tensor's: it never widens the category
 * of the tensor unless it must (an int tensor plus 0.5 is float). */
static dt_dtype weak_promote(dt_dtype t, double s) {
    if (t == DT_F32) return DT_F32;
    if (s != floor(s) || !isfinite(s)) return DT_F32;
    return t == DT_BOOL ? DT_I64 : t;
}

/* Checks the op's dtypes; raises inside c and returns -1 when unsupported. */
static int check_dtypes(struct dt_opctx *c, enum dt_ew_op op, dt_dtype a, dt_dtype b, int nin) {
    int bools = a == DT_BOOL && (nin < 2 || b == DT_BOOL);
    if (op == DT_EW_SUB && bools)
        return dt__op_fail(c, DT_ERR_DTYPE,
                           "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.");
    if (op == DT_EW_NEG && a == DT_BOOL)
        return dt__op_fail(c, DT_ERR_DTYPE,
                           "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.");
    return 0;
}

/* Compute dtype for op given the promoted operand dtype. */
static dt_dtype compute_of(enum dt_ew_op op, dt_dtype promoted) {
    switch (op) {
    case DT_EW_DIV:
    case DT_EW_EXP:
    case DT_EW_LOG:
    case DT_EW_SQRT:
    case DT_EW_SIGMOID:
    case DT_EW_TANH: return DT_F32;
    default: return promoted == DT_BOOL && !is_cmp(op) && op != DT_EW_WHERE ? DT_I64 : promoted;
    }
}

static dt_dtype out_dtype_of(enum dt_ew_op op, dt_dtype promoted) {
    if (is_cmp(op)) return DT_BOOL;
    dt_dtype c = compute_of(op, promoted);
    /* bool + bool stays bool (logical or), as in PyTorch */
    return promoted == DT_BOOL && (op == DT_EW_ADD || op == DT_EW_MUL || op == DT_EW_WHERE || op == DT_EW_COPY ||
                                   op == DT_EW_RELU || op == DT_EW_ABS || op == DT_EW_CLAMP)
               ? DT_BOOL
               : c;
}

/* Runs a prepared ew kernel for c, producing out. Ends the op. */
static dt_tensor *finish(struct dt_opctx *c, struct dt_ew_args *a, dt_tensor *out) {
    dt__view_of(out, &a->out);
    if (dt__op_kernel_status(c, c->backend->ew(c->device.index, a)) < 0) {
        dt_free(out);
        return NULL;
    }
    dt__op_end(c, 0, 1, &out);
    return out;
}

/* ---------------------------------------------------------------- out-of-place */

static dt_tensor *binary(const char *name, enum dt_ew_op op, const dt_tensor *x, const dt_tensor *y) {
    static const char *const names[] = {"self", "other"};
    const dt_tensor *ts[] = {x, y};
    struct dt_opctx c;
    if (dt__op_begin(&c, name, 2, ts, names, DT_CHECK_SCALARS) < 0) return NULL;
    if (check_dtypes(&c, op, x->dtype, y->dtype, 2) < 0) return NULL;
    int nd;
    int64_t shape[DT_MAX_DIMS];
    if (dt__broadcast_shapes(2, ts, &nd, shape, name) < 0) {
        dt__op_end(&c, DT_ERR_SHAPE, 0, NULL);
        return NULL;
    }
    dt_dtype p = dt__promote(x->dtype, y->dtype);
    struct dt_ew_args a = {.op = op, .compute = compute_of(op, p), .nin = 2, .p0 = 1.0};
    operand_of(&c, x, nd, shape, &a.in[0]);
    operand_of(&c, y, nd, shape, &a.in[1]);
    dt_tensor *out = dt__op_output(&c, nd, shape, out_dtype_of(op, p));
    return out ? finish(&c, &a, out) : NULL;
}

/* x op s, or s op x when reversed. */
static dt_tensor *binary_scalar(const char *name, enum dt_ew_op op, const dt_tensor *x, double s, int reversed) {
    static const char *const names[] = {"self"};
    struct dt_opctx c;
    if (dt__op_begin(&c, name, 1, &x, names, DT_CHECK_SCALARS) < 0) return NULL;
    dt_dtype p = weak_promote(x->dtype, s);
    if (check_dtypes(&c, op, x->dtype, p, 1) < 0) return NULL;
    struct dt_ew_args a = {.op = op, .compute = compute_of(op, p), .nin = 2, .p0 = 1.0};
    operand_of(&c, x, x->ndim, x->shape, &a.in[reversed]);
    scalar_operand(s, p == DT_F32 ? DT_F32 : DT_I64, x->ndim, x->shape, &a.in[!reversed]);
    dt_tensor *out = dt__op_output(&c, x->ndim, x->shape, out_dtype_of(op, p));
    return out ? finish(&c, &a, out) : NULL;
}

static dt_tensor *unary(const char *name, enum dt_ew_op op, const dt_tensor *x, double p0, double p1, dt_dtype *force) {
    static const char *const names[] = {"self"};
    struct dt_opctx c;
    if (dt__op_begin(&c, name, 1, &x, names, DT_CHECK_SCALARS) < 0) return NULL;
    if (check_dtypes(&c, op, x->dtype, x->dtype, 1) < 0) return NULL;
    dt_dtype od = force ? *force : out_dtype_of(op, x->dtype);
    /* a cast computes in its source's category: exact for integers */
    dt_dtype compute = force ? (x->dtype == DT_F32 ? DT_F32 : DT_I64) : compute_of(op, x->dtype);
    struct dt_ew_args a = {.op = op, .compute = compute, .nin = 1, .p0 = p0, .p1 = p1};
    operand_of(&c, x, x->ndim, x->shape, &a.in[0]);
    dt_tensor *out = dt__op_output(&c, x->ndim, x->shape, od);
    return out ? finish(&c, &a, out) : NULL;
}

dt_tensor *dt_add(const dt_tensor *a, const dt_tensor *b) {
    return dt__ag2(binary("add", DT_EW_ADD, a, b), DT_AG_ADD, a, b, 1);
}
dt_tensor *dt_sub(const dt_tensor *a, const dt_tensor *b) {
    return dt__ag2(binary("sub", DT_EW_SUB, a, b), DT_AG_ADD, a, b, -1);
}
dt_tensor *dt_mul(const dt_tensor *a, const dt_tensor *b) {
    return dt__ag2(binary("mul", DT_EW_MUL, a, b), DT_AG_MUL, a, b, 0);
}
dt_tensor *dt_div(const dt_tensor *a, const dt_tensor *b) {
    return dt__ag2(binary("div", DT_EW_DIV, a, b), DT_AG_DIV, a, b, 0);
}
dt_tensor *dt_pow(const dt_tensor *a, const dt_tensor *b) {
    return dt__ag2(binary("pow", DT_EW_POW, a, b), DT_AG_POW, a, b, 0);
}
dt_tensor *dt_eq(const dt_tensor *a, const dt_tensor *b) { return binary("eq", DT_EW_EQ, a, b); }
dt_tensor *dt_ne(const dt_tensor *a, const dt_tensor *b) { return binary("ne", DT_EW_NE, a, b); }
dt_tensor *dt_lt(const dt_tensor *a, const dt_tensor *b) { return binary("lt", DT_EW_LT, a, b); }
dt_tensor *dt_le(const dt_tensor *a, const dt_tensor *b) { return binary("le", DT_EW_LE, a, b); }
dt_tensor *dt_gt(const dt_tensor *a, const dt_tensor *b) { return binary("gt", DT_EW_GT, a, b); }
dt_tensor *dt_ge(const dt_tensor *a, const dt_tensor *b) { return binary("ge", DT_EW_GE, a, b); }

dt_tensor *dt_add_scalar(const dt_tensor *a, double s) {
    return dt__ag1(binary_scalar("add", DT_EW_ADD, a, s, 0), DT_AG_SCALE, a, 1, 0);
}
dt_tensor *dt_sub_scalar(const dt_tensor *a, double s) {
    return dt__ag1(binary_scalar("sub", DT_EW_SUB, a, s, 0), DT_AG_SCALE, a, 1, 0);
}
dt_tensor *dt_mul_scalar(const dt_tensor *a, double s) {
    return dt__ag1(binary_scalar("mul", DT_EW_MUL, a, s, 0), DT_AG_SCALE, a, s, 0);
}
dt_tensor *dt_div_scalar(const dt_tensor *a, double s) {
    return dt__ag1(binary_scalar("div", DT_EW_DIV, a, s, 0), DT_AG_SCALE, a, 1.0 / s, 0);
}
dt_tensor *dt_pow_scalar(const dt_tensor *a, double s) {
    return dt__ag1(binary_scalar("pow", DT_EW_POW, a, s, 0), DT_AG_POW_S, a, s, 0);
}
dt_tensor *dt_rsub_scalar(const dt_tensor *a, double s) {
    return dt__ag1(binary_scalar("rsub", DT_EW_SUB, a, s, 1), DT_AG_SCALE, a, -1, 0);
}
dt_tensor *dt_eq_scalar(const dt_tensor *a, double s) { return binary_scalar("eq", DT_EW_EQ, a, s, 0); }
dt_tensor *dt_gt_scalar(const dt_tensor *a, double s) { return binary_scalar("gt", DT_EW_GT, a, s, 0); }
dt_tensor *dt_lt_scalar(const dt_tensor *a, double s) { return binary_scalar("lt", DT_EW_LT, a, s, 0); }

dt_tensor *dt_neg(const dt_tensor *a) { return dt__ag1(unary("neg", DT_EW_NEG, a, 0, 0, NULL), DT_AG_SCALE, a, -1, 0); }
dt_tensor *dt_exp(const dt_tensor *a) { return dt__ag1(unary("exp", DT_EW_EXP, a, 0, 0, NULL), DT_AG_EXP, a, 0, 0); }
dt_tensor *dt_log(const dt_tensor *a) { return dt__ag1(unary("log", DT_EW_LOG, a, 0, 0, NULL), DT_AG_LOG, a, 0, 0); }
dt_tensor *dt_sqrt(const dt_tensor *a) {
    return dt__ag1(unary("sqrt", DT_EW_SQRT, a, 0, 0, NULL), DT_AG_SQRT, a, 0, 0);
}
dt_tensor *dt_abs(const dt_tensor *a) { return dt__ag1(unary("abs", DT_EW_ABS, a, 0, 0, NULL), DT_AG_ABS, a, 0, 0); }
dt_tensor *dt_relu(const dt_tensor *a) {
    return dt__ag1(unary("relu", DT_EW_RELU, a, 0, 0, NULL), DT_AG_RELU, a, 0, 0);
}
dt_tensor *dt_sigmoid(const dt_tensor *a) {
    return dt__ag1(unary("sigmoid", DT_EW_SIGMOID, a, 0, 0, NULL), DT_AG_SIGMOID, a, 0, 0);
}
dt_tensor *dt_tanh(const dt_tensor *a) {
    return dt__ag1(unary("tanh", DT_EW_TANH, a, 0, 0, NULL), DT_AG_TANH, a, 0, 0);
}
dt_tensor *dt_clamp(const dt_tensor *a, double lo, double hi) {
    return dt__ag1(unary("clamp", DT_EW_CLAMP, a, lo, hi, NULL), DT_AG_CLAMP, a, lo, hi);
}
dt_tensor *dt_cast(const dt_tensor *a, dt_dtype dtype) {
    if ((unsigned)dtype > DT_BOOL) {
        dt__raise(DT_ERR_DTYPE, "to", "invalid dtype %d", (int)dtype);
        return NULL;
    }
    return dt__ag1(unary("to", DT_EW_COPY, a, 0, 0, &dtype), DT_AG_IDENTITY, a, 0, 0);
}

dt_tensor *dt_where(const dt_tensor *cond, const dt_tensor *x, const dt_tensor *y) {
    static const char *const names[] = {"condition", "self", "other"};
    const dt_tensor *ts[] = {cond, x, y};
    struct dt_opctx c;
    if (dt__op_begin(&c, "where", 3, ts, names, DT_CHECK_SCALARS) < 0) return NULL;
    if (cond->dtype != DT_BOOL) {
        dt__op_fail(&c, DT_ERR_DTYPE, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                    cond->dtype == DT_F32 ? "Float" : "Long");
        return NULL;
    }
    int nd;
    int64_t shape[DT_MAX_DIMS];
    if (dt__broadcast_shapes(3, ts, &nd, shape, "where") < 0) {
        dt__op_end(&c, DT_ERR_SHAPE, 0, NULL);
        return NULL;
    }
    dt_dtype p = dt__promote(x->dtype, y->dtype);
    struct dt_ew_args a = {.op = DT_EW_WHERE, .compute = p == DT_F32 ? DT_F32 : DT_I64, .nin = 3};
    for (int i = 0; i < 3; i++) operand_of(&c, ts[i], nd, shape, &a.in[i]);
    dt_tensor *out = dt__op_output(&c, nd, shape, p);
    return out ? dt__ag_record(finish(&c, &a, out), DT_AG_WHERE, 3, ts, 0, 0, 0, NULL) : NULL;
}

dt_tensor *dt_masked_fill(const dt_tensor *x, const dt_tensor *mask, double value) {
    static const char *const names[] = {"self", "mask"};
    const dt_tensor *ts[] = {x, mask};
    struct dt_opctx c;
    if (dt__op_begin(&c, "masked_fill", 2, ts, names, DT_CHECK_SCALARS) < 0) return NULL;
    if (mask->dtype != DT_BOOL) {
        dt__op_fail(&c, DT_ERR_DTYPE, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                    dt_dtype_name(mask->dtype));
        return NULL;
    }
    if (!dt__can_broadcast_to(mask, x->ndim, x->shape)) {
        char a[160], b[160];
        dt__op_fail(&c, DT_ERR_SHAPE, "The shape of the mask %s must be broadcastable to the shape of self %s",
                    dt__shape_str(mask->ndim, mask->shape, a, sizeof a), dt__shape_str(x->ndim, x->shape, b, sizeof b));
        return NULL;
    }
    struct dt_ew_args a = {.op = DT_EW_WHERE, .compute = x->dtype == DT_F32 ? DT_F32 : DT_I64, .nin = 3};
    operand_of(&c, mask, x->ndim, x->shape, &a.in[0]);
    scalar_operand(value, x->dtype, x->ndim, x->shape, &a.in[1]);
    operand_of(&c, x, x->ndim, x->shape, &a.in[2]);
    dt_tensor *out = dt__op_output(&c, x->ndim, x->shape, x->dtype);
    return out ? dt__ag2(finish(&c, &a, out), DT_AG_MASKED, x, mask, 0) : NULL;
}

/* ---------------------------------------------------------------- in place */

static const char *category(dt_dtype d) { return d == DT_F32 ? "Float" : d == DT_I64 ? "Long" : "Bool"; }

/* self = self op other (other NULL: self op s; op FILL: self = s). */
static int inplace(const char *name, enum dt_ew_op op, dt_tensor *self, const dt_tensor *other, double s, double p0,
                   double p1) {
    static const char *const names[] = {"self", "other"};
    const dt_tensor *ts[] = {self, other};
    struct dt_opctx c;
    if (dt__op_begin(&c, name, other ? 2 : 1, ts, names, DT_CHECK_SCALARS) < 0) return -1;
    if (dt__ag_check_inplace(self, name) < 0) {
        dt__op_end(&c, DT_ERR_STATE, 0, NULL);
        return -1;
    }
    if (other && !dt__can_broadcast_to(other, self->ndim, self->shape)) {
        char a[160], b[160];
        return dt__op_fail(&c, DT_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                           dt__shape_str(self->ndim, self->shape, a, sizeof a),
                           dt__shape_str(other->ndim, other->shape, b, sizeof b));
    }
    dt_dtype od = other ? other->dtype : weak_promote(self->dtype, s);
    if (op == DT_EW_FILL || op == DT_EW_CLAMP) od = self->dtype;
    if (check_dtypes(&c, op, self->dtype, od, other ? 2 : 1) < 0) return -1;
    dt_dtype p = dt__promote(self->dtype, od), result = out_dtype_of(op, p);
    if (dt__promote(result, self->dtype) != self->dtype)
        return dt__op_fail(&c, DT_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                           category(result), category(self->dtype));
    struct dt_ew_args a = {.op = op,
                           .compute = compute_of(op, p),
                           .nin = op == DT_EW_FILL    ? 0
                                  : op == DT_EW_CLAMP ? 1
                                                      : 2,
                           .p0 = p0,
                           .p1 = p1};
    dt__view_of(self, &a.out);
    if (a.nin >= 1) operand_of(&c, self, self->ndim, self->shape, &a.in[0]);
    if (a.nin == 2) {
        if (other)
            operand_of(&c, other, self->ndim, self->shape, &a.in[1]);
        else
            scalar_operand(s, od == DT_F32 ? DT_F32 : DT_I64, self->ndim, self->shape, &a.in[1]);
    }
    if (dt__op_kernel_status(&c, c.backend->ew(c.device.index, &a)) < 0) return -1;
    dt__op_end(&c, 0, 1, &self);
    return 0;
}

int dt_add_(dt_tensor *self, const dt_tensor *other) { return inplace("add_", DT_EW_ADD, self, other, 0, 1.0, 0); }
int dt_add_scaled_(dt_tensor *self, const dt_tensor *other, double alpha) {
    return inplace("add_", DT_EW_ADD, self, other, 0, alpha, 0);
}
int dt_sub_(dt_tensor *self, const dt_tensor *other) { return inplace("sub_", DT_EW_SUB, self, other, 0, 1.0, 0); }
int dt_mul_(dt_tensor *self, const dt_tensor *other) { return inplace("mul_", DT_EW_MUL, self, other, 0, 0, 0); }
int dt_div_(dt_tensor *self, const dt_tensor *other) { return inplace("div_", DT_EW_DIV, self, other, 0, 0, 0); }
int dt_add_scalar_(dt_tensor *self, double s) { return inplace("add_", DT_EW_ADD, self, NULL, s, 1.0, 0); }
int dt_mul_scalar_(dt_tensor *self, double s) { return inplace("mul_", DT_EW_MUL, self, NULL, s, 0, 0); }
int dt_zero_(dt_tensor *self) { return inplace("zero_", DT_EW_FILL, self, NULL, 0, 0, 0); }
int dt_fill_(dt_tensor *self, double value) { return inplace("fill_", DT_EW_FILL, self, NULL, value, value, 0); }
int dt_clamp_(dt_tensor *self, double lo, double hi) { return inplace("clamp_", DT_EW_CLAMP, self, NULL, 0, lo, hi); }
