/* Reductions of libdtrt (sum, mean, max, argmax over a dim or over all) and
 * softmax / log_softmax. PyTorch's dtype rules: sums of integers are int64,
 * mean needs a float, max keeps the dtype, argmax is int64. */
#include "dt_impl.h"

#include <string.h>

enum { RED_ALL = -1000 };

/* Reduces self along dim (RED_ALL: over every element) into new tensors:
 * *values (unless op is ARGMAX) and *indices (if asked or op is ARGMAX). */
static int reduce(const char *name, enum dt_reduce_op op, const dt_tensor *self, int dim, int keepdim,
                  dt_tensor **values, dt_tensor **indices) {
    static const char *const names[] = {"self"};
    struct dt_opctx c;
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (dt__op_begin(&c, name, 1, &self, names, DT_CHECK_STRICT) < 0) return -1;
    if (op == DT_RED_MEAN && self->dtype != DT_F32)
        return dt__op_fail(&c, DT_ERR_DTYPE,
                           "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           "complex dtype. Got: %s",
                           self->dtype == DT_I64 ? "Long" : "Bool");
    struct dt_reduce_args a = {.op = op};
    struct dt_storage *tmp = NULL;
    int64_t oshape[DT_MAX_DIMS];
    int ond = 0;
    if (dim == RED_ALL) {
        if ((op == DT_RED_MAX || op == DT_RED_ARGMAX) && dt_numel(self) == 0)
            return dt__op_fail(&c, DT_ERR_SHAPE,
                               "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.",
                               name);
        if (dt__contig_view(self, &a.in, &tmp, name) < 0) {
            dt__op_end(&c, (int)dt_last_error_kind(), 0, NULL);
            return -1;
        }
        a.dim = 0;
    } else {
        int d = dt__wrap_dim(dim, self->ndim, name);
        if (d < 0) {
            dt__op_end(&c, DT_ERR_INDEX, 0, NULL);
            return -1;
        }
        dt__view_of(self, &a.in);
        if (self->ndim == 0) { /* a scalar reduces along its one virtual dim */
            a.in.ndim = 1;
            a.in.shape[0] = 1;
            a.in.strides[0] = 1;
        }
        a.dim = d;
        if ((op == DT_RED_MAX || op == DT_RED_ARGMAX) && a.in.shape[d] == 0)
            return dt__op_fail(&c, DT_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
        for (int i = 0; i < self->ndim; i++)
            if (i != d)
                oshape[ond++] = self->shape[i];
            else if (keepdim)
                oshape[ond++] = 1;
    }
    dt_dtype vd = op == DT_RED_SUM && self->dtype != DT_F32 ? DT_I64 : self->dtype;
    dt_tensor *v = NULL, *ix = NULL;
    if (op != DT_RED_ARGMAX && !(v = dt__op_output(&c, ond, oshape, vd))) goto fail;
    if ((indices || op == DT_RED_ARGMAX) && !(ix = dt__op_output(&c, ond, oshape, DT_I64))) goto fail;
    if (v) dt__view_of(v, &a.out);
    if (ix) dt__view_of(ix, &a.idx);
    if (dt__op_kernel_status(&c, c.backend->reduce(c.device.index, &a)) < 0) goto fail;
    dt__storage_release(tmp);
    dt_tensor *outs[2] = {v, ix};
    dt__op_end(&c, 0, 2, outs);
    if (values) *values = v;
    if (indices) *indices = ix;
    return 0;
fail:
    dt__storage_release(tmp);
    dt__op_end(&c, (int)dt_last_error_kind(), 0, NULL);
    dt_free(v);
    dt_free(ix);
    return -1;
}

static dt_tensor *sum_raw(const dt_tensor *self) {
    dt_tensor *v;
    return reduce("sum", DT_RED_SUM, self, RED_ALL, 0, &v, NULL) ? NULL : v;
}
static dt_tensor *sum_dim_raw(const dt_tensor *self, int dim, int keepdim) {
    dt_tensor *v;
    return reduce("sum", DT_RED_SUM, self, dim, keepdim, &v, NULL) ? NULL : v;
}
static dt_tensor *mean_raw(const dt_tensor *self) {
    dt_tensor *v;
    return reduce("mean", DT_RED_MEAN, self, RED_ALL, 0, &v, NULL) ? NULL : v;
}
static dt_tensor *mean_dim_raw(const dt_tensor *self, int dim, int keepdim) {
    dt_tensor *v;
    return reduce("mean", DT_RED_MEAN, self, dim, keepdim, &v, NULL) ? NULL : v;
}
static dt_tensor *max_raw(const dt_tensor *self) {
    dt_tensor *v;
    return reduce("max", DT_RED_MAX, self, RED_ALL, 0, &v, NULL) ? NULL : v;
}
static dt_tensor *max_dim_raw(const dt_tensor *self, int dim, int keepdim, dt_tensor **indices) {
    dt_tensor *v;
    return reduce("max", DT_RED_MAX, self, dim, keepdim, &v, indices) ? NULL : v;
}
dt_tensor *dt_argmax(const dt_tensor *self) {
    dt_tensor *i;
    return reduce("argmax", DT_RED_ARGMAX, self, RED_ALL, 0, NULL, &i) ? NULL : i;
}
dt_tensor *dt_argmax_dim(const dt_tensor *self, int dim, int keepdim) {
    dt_tensor *i;
    return reduce("argmax", DT_RED_ARGMAX, self, dim, keepdim, NULL, &i) ? NULL : i;
}

/* ---------------------------------------------------------------- softmax */

static dt_tensor *softmax(const char *name, const dt_tensor *self, int dim, int log) {
    static const char *const names[] = {"self"};
    struct dt_opctx c;
    if (dt__op_begin(&c, name, 1, &self, names, DT_CHECK_STRICT) < 0) return NULL;
    if (self->dtype != DT_F32) {
        dt__op_fail(&c, DT_ERR_DTYPE, "\"%s_lastdim_kernel_impl\" not implemented for '%s'", name,
                    self->dtype == DT_I64 ? "Long" : "Bool");
        return NULL;
    }
    int d = dt__wrap_dim(dim, self->ndim, name);
    if (d < 0) {
        dt__op_end(&c, DT_ERR_INDEX, 0, NULL);
        return NULL;
    }
    dt_tensor *out = dt__op_output(&c, self->ndim, self->shape, DT_F32);
    if (!out) return NULL;
    struct dt_softmax_args a = {.log = log, .dim = d};
    dt__view_of(self, &a.in);
    dt__view_of(out, &a.out);
    if (self->ndim == 0) {
        a.in.ndim = a.out.ndim = 1;
        a.in.shape[0] = a.out.shape[0] = 1;
        a.in.strides[0] = a.out.strides[0] = 1;
    }
    if (dt_numel(self) > 0 && dt__op_kernel_status(&c, c.backend->softmax(c.device.index, &a)) < 0) {
        dt_free(out);
        return NULL;
    }
    dt__op_end(&c, 0, 1, &out);
    return out;
}

dt_tensor *dt_softmax(const dt_tensor *self, int dim) {
    int64_t d = dt__dim_index(dim, self->ndim);
    return dt__agi(softmax("softmax", self, dim, 0), DT_AG_SOFTMAX, self, 1, &d);
}
dt_tensor *dt_log_softmax(const dt_tensor *self, int dim) {
    int64_t d = dt__dim_index(dim, self->ndim);
    return dt__agi(softmax("log_softmax", self, dim, 1), DT_AG_LOGSM, self, 1, &d);
}

/* ---------------------------------------------------------------- autograd entry points */

dt_tensor *dt_sum(const dt_tensor *self) { return dt__agi(sum_raw(self), DT_AG_SUM, self, 0, NULL); }
dt_tensor *dt_mean(const dt_tensor *self) { return dt__agi(mean_raw(self), DT_AG_MEAN, self, 0, NULL); }
dt_tensor *dt_max(const dt_tensor *self) { return dt__agi(max_raw(self), DT_AG_MAX, self, 0, NULL); }
dt_tensor *dt_sum_dim(const dt_tensor *self, int dim, int keepdim) {
    int64_t ip[2] = {dt__dim_index(dim, self->ndim), keepdim != 0};
    return dt__agi(sum_dim_raw(self, dim, keepdim), DT_AG_SUM_DIM, self, 2, ip);
}
dt_tensor *dt_mean_dim(const dt_tensor *self, int dim, int keepdim) {
    int64_t ip[2] = {dt__dim_index(dim, self->ndim), keepdim != 0};
    return dt__agi(mean_dim_raw(self, dim, keepdim), DT_AG_MEAN_DIM, self, 2, ip);
}
dt_tensor *dt_max_dim(const dt_tensor *self, int dim, int keepdim, dt_tensor **indices) {
    int64_t ip[2] = {dt__dim_index(dim, self->ndim), keepdim != 0};
    return dt__agi(max_dim_raw(self, dim, keepdim, indices), DT_AG_MAX_DIM, self, 2, ip);
}
