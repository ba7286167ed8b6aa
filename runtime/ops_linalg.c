/* Matrix ops and gathers of libdtrt: matmul (2-D, batched with broadcast
 * batch dims, 1-D operands as vectors), linear, embedding, index_select.
 * Their device check is strict: unlike elementwise ops, PyTorch lets no
 * 0-dim cpu tensor join a cuda matmul or gather. float32 only for matmul. */
#include "dt_impl.h"

#include <string.h>

static const char *tensor_type(const dt_tensor *t) {
    static const char *const cpu[] = {"torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor"};
    static const char *const cuda[] = {"torch.cuda.FloatTensor", "torch.cuda.LongTensor", "torch.cuda.BoolTensor"};
    return (t->storage->device.type == DT_DEVICE_CPU ? cpu : cuda)[t->dtype];
}

/* Collapses dims [0, nb) of v into one; 0 when their strides do not allow it.
 * Size-1 dims are skipped (their stride means nothing). */
static int collapse_batch(struct dt_view *v, int nb) {
    int64_t n = 1, stride = 0;
    int prev = -1; /* previous dim of size > 1 */
    for (int i = 0; i < nb; i++) {
        n *= v->shape[i];
        if (v->shape[i] == 1) continue;
        if (prev >= 0 && v->strides[prev] != v->strides[i] * v->shape[i]) return 0;
        prev = i;
        stride = v->strides[i];
    }
    int64_t s1 = v->shape[nb], s2 = v->shape[nb + 1], t1 = v->strides[nb], t2 = v->strides[nb + 1];
    v->ndim = 3;
    v->shape[0] = n;
    v->strides[0] = stride;
    v->shape[1] = s1;
    v->strides[1] = t1;
    v->shape[2] = s2;
    v->strides[2] = t2;
    return 1;
}

/* Makes v (any layout) a contiguous copy in a temporary storage on dev. */
static int materialize(struct dt_opctx *c, struct dt_view *v, struct dt_storage **tmp) {
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->shape[i];
    *tmp = dt__storage_new(c->device, (size_t)n * dt_dtype_size(v->dtype), c->name);
    if (!*tmp) return -1;
    struct dt_ew_args a = {.op = DT_EW_COPY, .compute = v->dtype, .nin = 1};
    a.in[0].v = *v;
    a.out = *v;
    a.out.base = (*tmp)->data;
    a.out.offset = 0;
    dt__contig_strides(v->ndim, v->shape, a.out.strides);
    if (c->backend->ew(c->device.index, &a)) return dt__op_kernel_status(c, DT_ERR_BACKEND);
    *v = a.out;
    return 0;
}

/* A 3-D (B, r, c) view of v whose leading nb dims are batch dims. */
static int batch3(struct dt_opctx *c, struct dt_view *v, int nb, struct dt_storage **tmp) {
    *tmp = NULL;
    if (collapse_batch(v, nb)) return 0;
    if (materialize(c, v, tmp) < 0) return -1;
    if (!collapse_batch(v, nb)) DT_ASSERT(0);
    return 0;
}

/* float32 only: names the first operand that is not (NULL operands skipped). */
static int check_f32(struct dt_opctx *c, int n, const dt_tensor *const *ts, const char *const *names) {
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->dtype != DT_F32)
            return dt__op_fail(c, DT_ERR_DTYPE, "%s: expected float32 operands, got %s (%s)", c->name,
                               dt_dtype_name(ts[i]->dtype), names[i]);
    return 0;
}

static dt_tensor *matmul_raw(const dt_tensor *x, const dt_tensor *y) {
    static const char *const names[] = {"self", "mat2"};
    const dt_tensor *ts[] = {x, y};
    struct dt_opctx c;
    if (dt__op_begin(&c, "matmul", 2, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (x->ndim == 0 || y->ndim == 0) {
        dt__op_fail(&c, DT_ERR_SHAPE, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                    x->ndim, y->ndim);
        return NULL;
    }
    if (check_f32(&c, 2, ts, names) < 0) return NULL;
    struct dt_view A, B;
    dt__view_of(x, &A);
    dt__view_of(y, &B);
    if (x->ndim == 1) { /* (K) -> (1, K) */
        A.ndim = 2;
        A.shape[1] = A.shape[0];
        A.strides[1] = A.strides[0];
        A.shape[0] = 1;
        A.strides[0] = 0;
    }
    if (y->ndim == 1) { /* (K) -> (K, 1) */
        B.ndim = 2;
        B.shape[1] = 1;
        B.strides[1] = 0;
    }
    int64_t M = A.shape[A.ndim - 2], K = A.shape[A.ndim - 1], K2 = B.shape[B.ndim - 2], N = B.shape[B.ndim - 1];
    if (K != K2) {
        dt__op_fail(&c, DT_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                    (long long)(dt__numel(A.ndim - 1, A.shape)), (long long)K, (long long)K2, (long long)N);
        return NULL;
    }
    /* broadcast the batch dims */
    int na = A.ndim - 2, nbb = B.ndim - 2, nb = na > nbb ? na : nbb;
    int64_t bshape[DT_MAX_DIMS];
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - na), ib = i - (nb - nbb);
        int64_t sa = ia >= 0 ? A.shape[ia] : 1, sb = ib >= 0 ? B.shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            dt__op_fail(
                &c, DT_ERR_SHAPE,
                "The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton dimension %d",
                (long long)sa, (long long)sb, i);
            return NULL;
        }
        bshape[i] = sa == 1 ? sb : sa;
    }
    if (nb + 2 > DT_MAX_DIMS) {
        dt__op_fail(&c, DT_ERR_SHAPE, "matmul: result would have more than %d dimensions", DT_MAX_DIMS);
        return NULL;
    }
    int64_t full[DT_MAX_DIMS];
    memcpy(full, bshape, sizeof(int64_t) * (size_t)nb);
    full[nb] = M;
    full[nb + 1] = K;
    dt__broadcast_view(&A, nb + 2, full);
    full[nb] = K;
    full[nb + 1] = N;
    dt__broadcast_view(&B, nb + 2, full);
    /* output shape, dropping the vector dims */
    int64_t oshape[DT_MAX_DIMS];
    int ond = 0;
    for (int i = 0; i < nb; i++) oshape[ond++] = bshape[i];
    if (x->ndim > 1) oshape[ond++] = M;
    if (y->ndim > 1) oshape[ond++] = N;
    struct dt_storage *ta = NULL, *tb = NULL;
    dt_tensor *out = NULL;
    if (batch3(&c, &A, nb, &ta) < 0 || batch3(&c, &B, nb, &tb) < 0) goto fail;
    if (!(out = dt__op_output(&c, ond, oshape, DT_F32))) goto fail;
    struct dt_matmul_args a = {.a = A, .b = B};
    dt__view_of(out, &a.out);
    a.out.ndim = 3;
    a.out.shape[0] = dt__numel(nb, bshape);
    a.out.shape[1] = M;
    a.out.shape[2] = N;
    a.out.strides[0] = M * N;
    a.out.strides[1] = N;
    a.out.strides[2] = 1;
    if (dt_numel(out) && dt__op_kernel_status(&c, c.backend->matmul(c.device.index, &a)) < 0) goto fail;
    dt__storage_release(ta);
    dt__storage_release(tb);
    dt__op_end(&c, 0, 1, &out);
    return out;
fail:
    dt__storage_release(ta);
    dt__storage_release(tb);
    dt_free(out);
    dt__op_end(&c, (int)dt_last_error_kind(), 0, NULL);
    return NULL;
}

static dt_tensor *linear_raw(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias) {
    static const char *const names[] = {"input", "weight", "bias"};
    const dt_tensor *ts[] = {input, weight, bias};
    struct dt_opctx c;
    if (dt__op_begin(&c, "linear", 3, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (check_f32(&c, 3, ts, names) < 0) return NULL;
    if (input->ndim < 1 || weight->ndim != 2) {
        dt__op_fail(&c, DT_ERR_SHAPE,
                    "linear: expected input of at least 1 dimension and a 2-D weight, got %dD and %dD", input->ndim,
                    weight->ndim);
        return NULL;
    }
    int64_t K = input->shape[input->ndim - 1], M = dt_numel(input) / (K ? K : 1), N = weight->shape[0];
    if (K == 0) M = dt__numel(input->ndim - 1, input->shape);
    if (weight->shape[1] != K) {
        dt__op_fail(&c, DT_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                    (long long)M, (long long)K, (long long)weight->shape[1], (long long)N);
        return NULL;
    }
    if (bias && (bias->ndim > 1 || (bias->ndim == 1 && bias->shape[0] != N && bias->shape[0] != 1))) {
        char b[160];
        dt__op_fail(&c, DT_ERR_SHAPE, "linear: bias of shape %s does not match %lld output features",
                    dt__shape_str(bias->ndim, bias->shape, b, sizeof b), (long long)N);
        return NULL;
    }
    struct dt_view A, B;
    dt__view_of(input, &A);
    /* (..., K) -> (M, K) -> (1, M, K) */
    struct dt_storage *ta = NULL;
    dt_tensor *out = NULL;
    int nb = input->ndim - 1;
    if (nb == 0) {
        A.ndim = 2;
        A.shape[1] = K;
        A.strides[1] = A.strides[0];
        A.shape[0] = 1;
        A.strides[0] = 0;
        nb = 1;
    }
    /* collapse the leading dims of input into M: treat them as "batch" of a (.., 1, K) view */
    A.shape[A.ndim] = K;
    A.strides[A.ndim] = A.strides[A.ndim - 1];
    A.shape[A.ndim - 1] = 1;
    A.strides[A.ndim - 1] = 0;
    A.ndim += 1;
    if (batch3(&c, &A, nb, &ta) < 0) goto fail;
    /* A is (M, 1, K): reinterpret as (1, M, K) */
    A.shape[1] = A.shape[0];
    A.strides[1] = A.strides[0];
    A.shape[0] = 1;
    A.strides[0] = 0;
    dt__view_of(weight, &B); /* (N, K) -> (1, K, N) */
    B.ndim = 3;
    B.shape[0] = 1;
    B.shape[1] = K;
    B.shape[2] = N;
    int64_t ws0 = weight->strides[0], ws1 = weight->strides[1];
    B.strides[0] = 0;
    B.strides[1] = ws1;
    B.strides[2] = ws0;
    int64_t oshape[DT_MAX_DIMS];
    memcpy(oshape, input->shape, sizeof(int64_t) * (size_t)input->ndim);
    oshape[input->ndim - 1] = N;
    if (!(out = dt__op_output(&c, input->ndim, oshape, DT_F32))) goto fail;
    struct dt_matmul_args a = {.a = A, .b = B, .has_bias = bias != NULL};
    dt__view_of(out, &a.out);
    a.out.ndim = 3;
    a.out.shape[0] = 1;
    a.out.shape[1] = M;
    a.out.shape[2] = N;
    a.out.strides[0] = M * N;
    a.out.strides[1] = N;
    a.out.strides[2] = 1;
    if (bias) {
        dt__view_of(bias, &a.bias);
        if (bias->ndim == 0 || bias->shape[0] == 1) { /* broadcast a single value */
            a.bias.ndim = 1;
            a.bias.shape[0] = N;
            a.bias.strides[0] = 0;
        }
    }
    if (dt_numel(out) && dt__op_kernel_status(&c, c.backend->matmul(c.device.index, &a)) < 0) goto fail;
    dt__storage_release(ta);
    dt__op_end(&c, 0, 1, &out);
    return out;
fail:
    dt__storage_release(ta);
    dt_free(out);
    dt__op_end(&c, (int)dt_last_error_kind(), 0, NULL);
    return NULL;
}

/* Gathers entries of self along dim at index (any shape, flattened), into a
 * new tensor of shape self.shape with dim replaced by index's shape. */
static dt_tensor *gather(struct dt_opctx *c, const dt_tensor *self, int dim, const dt_tensor *index) {
    struct dt_index_args a = {.dim = dim};
    struct dt_storage *ti = NULL;
    dt__view_of(self, &a.in);
    if (dt__contig_view(index, &a.index, &ti, c->name) < 0) {
        dt__op_end(c, (int)dt_last_error_kind(), 0, NULL);
        return NULL;
    }
    int64_t oshape[DT_MAX_DIMS];
    int ond = 0;
    for (int i = 0; i < self->ndim; i++) {
        if (i != dim) {
            oshape[ond++] = self->shape[i];
            continue;
        }
        for (int k = 0; k < index->ndim; k++) oshape[ond++] = index->shape[k];
    }
    if (ond > DT_MAX_DIMS) {
        dt__storage_release(ti);
        dt__op_fail(c, DT_ERR_SHAPE, "%s: result would have more than %d dimensions", c->name, DT_MAX_DIMS);
        return NULL;
    }
    dt_tensor *out = dt__op_output(c, ond, oshape, self->dtype);
    if (!out) {
        dt__storage_release(ti);
        return NULL;
    }
    dt__view_of(self, &a.out);
    a.out.base = out->storage->data;
    a.out.offset = 0;
    a.out.shape[dim] = a.index.shape[0];
    dt__contig_strides(self->ndim, a.out.shape, a.out.strides);
    int64_t bad = 0;
    int st = dt_numel(out) ? c->backend->index_select(c->device.index, &a, &bad) : 0;
    dt__storage_release(ti);
    if (st == DT_ERR_INDEX) {
        dt_free(out);
        dt__op_fail(c, DT_ERR_INDEX, "index out of range in self (index %lld, size %lld along dimension %d)",
                    (long long)bad, (long long)self->shape[dim], dim);
        return NULL;
    }
    if (dt__op_kernel_status(c, st) < 0) {
        dt_free(out);
        return NULL;
    }
    dt__op_end(c, 0, 1, &out);
    return out;
}

static dt_tensor *embedding_raw(const dt_tensor *weight, const dt_tensor *indices) {
    static const char *const names[] = {"weight", "indices"};
    const dt_tensor *ts[] = {weight, indices};
    struct dt_opctx c;
    if (dt__op_begin(&c, "embedding", 2, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (indices->dtype != DT_I64) {
        dt__op_fail(&c, DT_ERR_DTYPE,
                    "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
                    "but got %s instead (while checking arguments for embedding)",
                    tensor_type(indices));
        return NULL;
    }
    if (weight->ndim != 2) {
        dt__op_fail(&c, DT_ERR_SHAPE, "'weight' must be 2-D, got %dD", weight->ndim);
        return NULL;
    }
    return gather(&c, weight, 0, indices);
}

static dt_tensor *index_select_raw(const dt_tensor *self, int dim, const dt_tensor *index) {
    static const char *const names[] = {"self", "index"};
    const dt_tensor *ts[] = {self, index};
    struct dt_opctx c;
    if (dt__op_begin(&c, "index_select", 2, ts, names, DT_CHECK_STRICT) < 0) return NULL;
    if (index->dtype != DT_I64) {
        dt__op_fail(&c, DT_ERR_DTYPE, "index_select(): Expected dtype int64 for index, got %s",
                    dt_dtype_name(index->dtype));
        return NULL;
    }
    if (index->ndim > 1) {
        dt__op_fail(&c, DT_ERR_SHAPE, "index_select(): Index is supposed to be a vector");
        return NULL;
    }
    if (self->ndim == 0) {
        dt__op_fail(&c, DT_ERR_SHAPE, "index_select(): self must have at least one dimension");
        return NULL;
    }
    int d = dt__wrap_dim(dim, self->ndim, "index_select");
    if (d < 0) {
        dt__op_end(&c, DT_ERR_INDEX, 0, NULL);
        return NULL;
    }
    if (index->ndim == 0) { /* a 0-dim index selects one entry and keeps the dim */
        dt_tensor *out = NULL;
        dt_tensor *idx1 = dt_reshape(index, DT_SHAPE(1));
        if (idx1) out = gather(&c, self, d, idx1);
        dt_free(idx1);
        return out;
    }
    return gather(&c, self, d, index);
}

/* ---------------------------------------------------------------- autograd entry points */

dt_tensor *dt_matmul(const dt_tensor *self, const dt_tensor *mat2) {
    return dt__ag2(matmul_raw(self, mat2), DT_AG_MATMUL, self, mat2, 0);
}
dt_tensor *dt_linear(const dt_tensor *input, const dt_tensor *weight, const dt_tensor *bias) {
    const dt_tensor *in[3] = {input, weight, bias};
    return dt__ag_record(linear_raw(input, weight, bias), DT_AG_LINEAR, 3, in, 0, 0, 0, NULL);
}
dt_tensor *dt_embedding(const dt_tensor *weight, const dt_tensor *indices) {
    return dt__ag2(embedding_raw(weight, indices), DT_AG_EMBED, weight, indices, 0);
}
dt_tensor *dt_index_select(const dt_tensor *self, int dim, const dt_tensor *index) {
    const dt_tensor *in[2] = {self, index};
    int64_t d = dt__dim_index(dim, self->ndim);
    return dt__ag_record(index_select_raw(self, dim, index), DT_AG_INDEX, 2, in, 0, 0, 1, &d);
}
