/* Kernels over host memory, shared by the cpu and the simulated cuda
 * backends: elementwise (strided, broadcast), reductions, softmax, matmul,
 * index_select. Float math runs in double and rounds to float32 on store;
 * integer math in int64. The real CUDA backend has its own kernels. */
#include "backend.h"
#include "ew_math.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- loads and stores */

static inline double ld_d(const void *base, dt_dtype t, int64_t off) {
    switch (t) {
    case DT_F32: return ((const float *)base)[off];
    case DT_I64: return (double)((const int64_t *)base)[off];
    default: return ((const uint8_t *)base)[off];
    }
}
static inline int64_t ld_i(const void *base, dt_dtype t, int64_t off) {
    switch (t) {
    case DT_F32: return (int64_t)((const float *)base)[off];
    case DT_I64: return ((const int64_t *)base)[off];
    default: return ((const uint8_t *)base)[off];
    }
}
static inline void st_d(void *base, dt_dtype t, int64_t off, double v) {
    switch (t) {
    case DT_F32: ((float *)base)[off] = (float)v; break;
    case DT_I64: ((int64_t *)base)[off] = (int64_t)v; break;
    default: ((uint8_t *)base)[off] = v != 0; break;
    }
}
static inline void st_i(void *base, dt_dtype t, int64_t off, int64_t v) {
    switch (t) {
    case DT_F32: ((float *)base)[off] = (float)v; break;
    case DT_I64: ((int64_t *)base)[off] = v; break;
    default: ((uint8_t *)base)[off] = v != 0; break;
    }
}

static int64_t view_numel(const struct dt_view *v) {
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->shape[i];
    return n;
}

/* ---------------------------------------------------------------- elementwise */

static int is_contig_of(const struct dt_operand *o, const struct dt_view *out) {
    if (o->is_scalar) return 1;
    int64_t expect = 1;
    for (int d = out->ndim - 1; d >= 0; d--) {
        if (out->shape[d] != 1 && o->v.strides[d] != expect) return 0;
        expect *= out->shape[d];
    }
    return 1;
}

/* The common case of training loops: float32, contiguous, same shapes. */
static int ew_fast_f32(const struct dt_ew_args *a, int64_t n) {
    if (a->out.dtype != DT_F32 || a->compute != DT_F32) return 0;
    struct dt_operand self = {.v = a->out};
    if (!is_contig_of(&self, &a->out)) return 0;
    for (int i = 0; i < a->nin; i++)
        if (a->in[i].v.dtype != DT_F32 || !is_contig_of(&a->in[i], &a->out)) return 0;
    float *o = (float *)a->out.base + a->out.offset;
    const float *x = a->nin > 0 && !a->in[0].is_scalar ? (const float *)a->in[0].v.base + a->in[0].v.offset : NULL;
    const float *y = a->nin > 1 && !a->in[1].is_scalar ? (const float *)a->in[1].v.base + a->in[1].v.offset : NULL;
    float ys = a->nin > 1 ? (float)a->in[1].scalar : 0, p0 = (float)a->p0;
    switch (a->op) {
    case DT_EW_FILL:
        for (int64_t i = 0; i < n; i++) o[i] = p0;
        return 1;
    case DT_EW_COPY:
        if (!x) return 0;
        memmove(o, x, (size_t)n * sizeof(float));
        return 1;
    case DT_EW_RELU:
        if (!x) return 0;
        for (int64_t i = 0; i < n; i++) o[i] = x[i] > 0 ? x[i] : (x[i] != x[i] ? x[i] : 0.0f);
        return 1;
    case DT_EW_ADD:
    case DT_EW_SUB: {
        if (!x) return 0;
        float al = a->op == DT_EW_ADD ? p0 : -p0;
        if (y)
            for (int64_t i = 0; i < n; i++) o[i] = x[i] + al * y[i];
        else
            for (int64_t i = 0; i < n; i++) o[i] = x[i] + al * ys;
        return 1;
    }
    case DT_EW_MUL:
        if (!x) return 0;
        if (y)
            for (int64_t i = 0; i < n; i++) o[i] = x[i] * y[i];
        else
            for (int64_t i = 0; i < n; i++) o[i] = x[i] * ys;
        return 1;
    default: return 0;
    }
}

int dt__host_ew(const struct dt_ew_args *a) {
    int64_t n = view_numel(&a->out);
    if (n == 0 || ew_fast_f32(a, n)) return 0;
    const int nd = a->out.ndim, nin = a->nin, fp = a->compute == DT_F32;
    int64_t idx[DT_MAX_DIMS] = {0}, off[4];
    off[0] = a->out.offset;
    for (int k = 0; k < nin; k++) off[k + 1] = a->in[k].v.offset;
    int bad = 0;
    for (int64_t e = 0; e < n; e++) {
        if (fp) {
            double v[3] = {0, 0, 0};
            for (int k = 0; k < nin; k++)
                v[k] = a->in[k].is_scalar ? a->in[k].scalar : ld_d(a->in[k].v.base, a->in[k].v.dtype, off[k + 1]);
            st_d(a->out.base, a->out.dtype, off[0], dt_ew_f(a->op, v[0], v[1], v[2], a->p0, a->p1));
        } else {
            int64_t v[3] = {0, 0, 0};
            for (int k = 0; k < nin; k++)
                v[k] =
                    a->in[k].is_scalar ? (int64_t)a->in[k].scalar : ld_i(a->in[k].v.base, a->in[k].v.dtype, off[k + 1]);
            st_i(a->out.base, a->out.dtype, off[0], dt_ew_i(a->op, v[0], v[1], v[2], a->p0, a->p1, &bad));
        }
        for (int d = nd - 1; d >= 0; d--) { /* advance the odometer */
            off[0] += a->out.strides[d];
            for (int k = 0; k < nin; k++) off[k + 1] += a->in[k].v.strides[d];
            if (++idx[d] < a->out.shape[d]) break;
            off[0] -= a->out.strides[d] * a->out.shape[d];
            for (int k = 0; k < nin; k++) off[k + 1] -= a->in[k].v.strides[d] * a->out.shape[d];
            idx[d] = 0;
        }
    }
    if (bad) {
        dt__backend_msg("Integers to negative integer powers are not allowed.");
        return DT_ERR_ARG;
    }
    return 0;
}

/* ---------------------------------------------------------------- row iteration */

/* Offset of the j-th combination (row-major) of all dims of v but dim. */
static int64_t row_base(const struct dt_view *v, int dim, int64_t j) {
    int64_t off = v->offset;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        off += (j % v->shape[d]) * v->strides[d];
        j /= v->shape[d];
    }
    return off;
}

static int64_t rows_of(const struct dt_view *v, int dim) {
    int64_t r = 1;
    for (int d = 0; d < v->ndim; d++)
        if (d != dim) r *= v->shape[d];
    return r;
}

int dt__host_reduce(const struct dt_reduce_args *a) {
    const struct dt_view *in = &a->in;
    int64_t rows = rows_of(in, a->dim), len = in->shape[a->dim], st = in->strides[a->dim];
    int fp = in->dtype == DT_F32;
    for (int64_t j = 0; j < rows; j++) {
        int64_t base = row_base(in, a->dim, j);
        switch (a->op) {
        case DT_RED_SUM:
        case DT_RED_MEAN:
            if (fp) {
                double s = 0;
                for (int64_t k = 0; k < len; k++) s += ld_d(in->base, in->dtype, base + k * st);
                if (a->op == DT_RED_MEAN) s /= (double)len;
                st_d(a->out.base, a->out.dtype, a->out.offset + j, s);
            } else {
                int64_t s = 0;
                for (int64_t k = 0; k < len; k++) s += ld_i(in->base, in->dtype, base + k * st);
                st_i(a->out.base, a->out.dtype, a->out.offset + j, s);
            }
            break;
        case DT_RED_MAX:
        case DT_RED_ARGMAX: {
            int64_t best = 0;
            double bv = ld_d(in->base, in->dtype, base);
            int64_t bi = ld_i(in->base, in->dtype, base);
            for (int64_t k = 1; k < len && !isnan(bv); k++) {
                if (fp) {
                    double v = ld_d(in->base, in->dtype, base + k * st);
                    if (v > bv || isnan(v)) bv = v, best = k;
                } else {
                    int64_t v = ld_i(in->base, in->dtype, base + k * st);
                    if (v > bi) bi = v, best = k;
                }
            }
            if (a->op == DT_RED_MAX) {
                if (fp)
                    st_d(a->out.base, a->out.dtype, a->out.offset + j, bv);
                else
                    st_i(a->out.base, a->out.dtype, a->out.offset + j, bi);
            }
            if (a->idx.base) ((int64_t *)a->idx.base)[a->idx.offset + j] = best;
            break;
        }
        }
    }
    return 0;
}

int dt__host_softmax(const struct dt_softmax_args *a) {
    int64_t rows = rows_of(&a->in, a->dim), len = a->in.shape[a->dim];
    int64_t is = a->in.strides[a->dim], os = a->out.strides[a->dim];
    const float *x = a->in.base;
    float *o = a->out.base;
    for (int64_t j = 0; j < rows; j++) {
        int64_t ib = row_base(&a->in, a->dim, j), ob = row_base(&a->out, a->dim, j);
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < len; k++)
            if (x[ib + k * is] > m || isnan(x[ib + k * is])) m = x[ib + k * is];
        for (int64_t k = 0; k < len; k++) s += exp((double)x[ib + k * is] - m);
        double ls = log(s);
        for (int64_t k = 0; k < len; k++) {
            double d = (double)x[ib + k * is] - m;
            o[ob + k * os] = (float)(a->log ? d - ls : exp(d) / s);
        }
    }
    return 0;
}

int dt__host_matmul(const struct dt_matmul_args *a) {
    int64_t B = a->out.shape[0], M = a->out.shape[1], N = a->out.shape[2], K = a->a.shape[2];
    const float *A = a->a.base, *Bm = a->b.base, *bias = a->has_bias ? a->bias.base : NULL;
    float *O = a->out.base;
    int64_t as0 = a->a.strides[0], as1 = a->a.strides[1], as2 = a->a.strides[2];
    int64_t bs0 = a->b.strides[0], bs1 = a->b.strides[1], bs2 = a->b.strides[2];
    int64_t os0 = a->out.strides[0], os1 = a->out.strides[1], os2 = a->out.strides[2];
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < M; i++) {
            float *orow = O + a->out.offset + b * os0 + i * os1;
            for (int64_t j = 0; j < N; j++) orow[j * os2] = bias ? bias[a->bias.offset + j * a->bias.strides[0]] : 0.0f;
            const float *arow = A + a->a.offset + b * as0 + i * as1;
            const float *bmat = Bm + a->b.offset + b * bs0;
            if (bs2 == 1 && os2 == 1) { /* i-k-j: unit stride inner loop */
                for (int64_t k = 0; k < K; k++) {
                    float av = arow[k * as2];
                    const float *brow = bmat + k * bs1;
                    for (int64_t j = 0; j < N; j++) orow[j] += av * brow[j];
                }
            } else {
                for (int64_t j = 0; j < N; j++) {
                    float acc = 0;
                    for (int64_t k = 0; k < K; k++) acc += arow[k * as2] * bmat[k * bs1 + j * bs2];
                    orow[j * os2] += acc;
                }
            }
        }
    return 0;
}

int dt__host_index_select(const struct dt_index_args *a, int64_t *bad) {
    const int64_t *idx = (const int64_t *)a->index.base + a->index.offset;
    int64_t nidx = a->index.shape[0], size = a->in.shape[a->dim];
    for (int64_t i = 0; i < nidx; i++)
        if (idx[i * a->index.strides[0]] < 0 || idx[i * a->index.strides[0]] >= size) {
            *bad = idx[i * a->index.strides[0]];
            dt__backend_msg("index out of range in self");
            return DT_ERR_INDEX;
        }
    /* out has in's shape with dim replaced by nidx; walk it row-major */
    int nd = a->in.ndim;
    int64_t n = view_numel(&a->out), co[DT_MAX_DIMS] = {0};
    size_t esz = dt_dtype_size(a->in.dtype);
    for (int64_t e = 0; e < n; e++) {
        int64_t src = a->in.offset;
        for (int d = 0; d < nd; d++) src += (d == a->dim ? idx[co[d] * a->index.strides[0]] : co[d]) * a->in.strides[d];
        memcpy((char *)a->out.base + (size_t)(a->out.offset + e) * esz, (const char *)a->in.base + (size_t)src * esz,
               esz);
        for (int d = nd - 1; d >= 0; d--) {
            if (++co[d] < a->out.shape[d]) break;
            co[d] = 0;
        }
    }
    return 0;
}
