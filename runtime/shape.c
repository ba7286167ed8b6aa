/* Shape ops of libdtrt. Views (view, reshape when possible, transpose,
 * permute, slice, narrow, select, unsqueeze, squeeze, expand) share their
 * base's storage and fire dtp_tensor_created with a VIEW origin; copies
 * (reshape otherwise, contiguous, clone, cat, stack) are ops. */
#include "dt_impl.h"

#include <string.h>

static dt_tensor *make_view(const dt_tensor *base, int ndim, const int64_t *shape, const int64_t *strides,
                            int64_t offset, const char *what) {
    dt_tensor *t = dt__tensor_wrap(base->storage, base->dtype, ndim, shape, strides, offset);
    if (t) dt__tensor_announce(t, DTP_ORIGIN_VIEW, what, base->id, 0);
    return t;
}

/* A contiguous copy of self with the given shape (same numel), as op `name`. */
static dt_tensor *copy_op(const char *name, const dt_tensor *self, int ndim, const int64_t *shape) {
    static const char *const names[] = {"self"};
    struct dt_opctx c;
    if (dt__op_begin(&c, name, 1, &self, names, DT_CHECK_STRICT) < 0) return NULL;
    dt_tensor *out = dt__op_output(&c, ndim, shape, self->dtype);
    if (!out) return NULL;
    struct dt_ew_args a = {.op = DT_EW_COPY, .compute = self->dtype, .nin = 1};
    dt__view_of(self, &a.in[0].v);
    a.out = a.in[0].v; /* walk self's shape, write out's memory in row-major order */
    a.out.base = out->storage->data;
    a.out.offset = 0;
    dt__contig_strides(self->ndim, self->shape, a.out.strides);
    if (dt__op_kernel_status(&c, c.backend->ew(c.device.index, &a)) < 0) {
        dt_free(out);
        return NULL;
    }
    dt__op_end(&c, 0, 1, &out);
    return out;
}

/* ---------------------------------------------------------------- view / reshape */

/* Fills shape with -1 inferred; raises and returns -1 when impossible. */
static int infer_shape(const dt_tensor *self, int ndim, const int64_t *in, int64_t *shape, const char *op) {
    char buf[256];
    if (ndim < 0 || ndim > DT_MAX_DIMS || (ndim && !in)) {
        dt__raise(DT_ERR_SHAPE, op, "%s: a tensor has 0 to %d dimensions, got %d", op, DT_MAX_DIMS, ndim);
        return -1;
    }
    int infer = -1;
    int64_t known = 1, numel = dt_numel(self);
    for (int i = 0; i < ndim; i++) {
        shape[i] = in[i];
        if (in[i] == -1) {
            if (infer >= 0) {
                dt__raise(DT_ERR_SHAPE, op, "only one dimension can be inferred");
                return -1;
            }
            infer = i;
        } else if (in[i] < 0) {
            dt__raise(DT_ERR_SHAPE, op, "invalid shape dimension %lld", (long long)in[i]);
            return -1;
        } else {
            known *= in[i];
        }
    }
    if (infer >= 0 && known != 0 && numel % known == 0) shape[infer] = numel / known;
    if ((infer >= 0 && (known == 0 || numel % known != 0)) || dt__numel(ndim, shape) != numel) {
        dt__raise(DT_ERR_SHAPE, op, "shape '%s' is invalid for input of size %lld",
                  dt__shape_str(ndim, in, buf, sizeof buf), (long long)numel);
        return -1;
    }
    return 0;
}

/* PyTorch's computeStride: strides that let (ndim, shape) view self, or -1. */
static int view_strides(const dt_tensor *self, int ndim, const int64_t *shape, int64_t *strides) {
    if (dt_numel(self) == 0 || self->ndim == 0) {
        dt__contig_strides(ndim, shape, strides);
        return 0;
    }
    int view_d = ndim - 1;
    int64_t chunk = self->strides[self->ndim - 1], tnumel = 1, vnumel = 1;
    for (int td = self->ndim - 1; td >= 0; td--) {
        tnumel *= self->shape[td];
        if (td == 0 || (self->shape[td - 1] != 1 && self->strides[td - 1] != tnumel * chunk)) {
            while (view_d >= 0 && (vnumel < tnumel || shape[view_d] == 1)) {
                strides[view_d] = vnumel * chunk;
                vnumel *= shape[view_d];
                view_d--;
            }
            if (vnumel != tnumel) return -1;
            if (td > 0) {
                chunk = self->strides[td - 1];
                tnumel = vnumel = 1;
            }
        }
    }
    return view_d == -1 ? 0 : -1;
}

static dt_tensor *view_raw(const dt_tensor *self, int ndim, const int64_t *in) {
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    if (infer_shape(self, ndim, in, shape, "view") < 0) return NULL;
    if (view_strides(self, ndim, shape, strides) < 0) {
        dt__raise(DT_ERR_SHAPE, "view",
                  "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                  "across two contiguous subspaces). Use .reshape(...) instead.");
        return NULL;
    }
    return make_view(self, ndim, shape, strides, self->offset, "view");
}

static dt_tensor *reshape_raw(const dt_tensor *self, int ndim, const int64_t *in) {
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    if (infer_shape(self, ndim, in, shape, "reshape") < 0) return NULL;
    if (view_strides(self, ndim, shape, strides) == 0)
        return make_view(self, ndim, shape, strides, self->offset, "reshape");
    return copy_op("reshape", self, ndim, shape);
}

static dt_tensor *flatten_raw(const dt_tensor *self, int start_dim, int end_dim) {
    if (self->ndim == 0) return dt_reshape(self, DT_SHAPE(1));
    int s = dt__wrap_dim(start_dim, self->ndim, "flatten"),
        e = s < 0 ? -1 : dt__wrap_dim(end_dim, self->ndim, "flatten");
    if (s < 0 || e < 0) return NULL;
    if (s > e) {
        dt__raise(DT_ERR_ARG, "flatten", "flatten() has invalid args: start_dim cannot come after end_dim");
        return NULL;
    }
    int64_t shape[DT_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < s; i++) shape[nd++] = self->shape[i];
    shape[nd++] = dt__numel(e - s + 1, self->shape + s);
    for (int i = e + 1; i < self->ndim; i++) shape[nd++] = self->shape[i];
    return dt_reshape(self, nd, shape);
}

/* ---------------------------------------------------------------- strided views */

static dt_tensor *transpose_raw(const dt_tensor *self, int dim0, int dim1) {
    int a = dt__wrap_dim(dim0, self->ndim, "transpose"), b = a < 0 ? -1 : dt__wrap_dim(dim1, self->ndim, "transpose");
    if (a < 0 || b < 0) return NULL;
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    memcpy(shape, self->shape, sizeof shape);
    memcpy(strides, self->strides, sizeof strides);
    if (self->ndim) {
        shape[a] = self->shape[b], shape[b] = self->shape[a];
        strides[a] = self->strides[b], strides[b] = self->strides[a];
    }
    return make_view(self, self->ndim, shape, strides, self->offset, "transpose");
}

static dt_tensor *permute_raw(const dt_tensor *self, const int *dims) {
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    int seen[DT_MAX_DIMS] = {0};
    for (int i = 0; i < self->ndim; i++) {
        int d = dt__wrap_dim(dims[i], self->ndim, "permute");
        if (d < 0) return NULL;
        if (seen[d]++) {
            dt__raise(DT_ERR_ARG, "permute", "permute(): duplicate dims are not allowed.");
            return NULL;
        }
        shape[i] = self->shape[d];
        strides[i] = self->strides[d];
    }
    return make_view(self, self->ndim, shape, strides, self->offset, "permute");
}

static dt_tensor *slice_raw(const dt_tensor *self, int dim, int64_t start, int64_t end, int64_t step) {
    if (self->ndim == 0) {
        dt__raise(DT_ERR_INDEX, "slice", "slice() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    int d = dt__wrap_dim(dim, self->ndim, "slice");
    if (d < 0) return NULL;
    if (step <= 0) {
        dt__raise(DT_ERR_ARG, "slice", "slice step must be positive");
        return NULL;
    }
    int64_t n = self->shape[d];
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    memcpy(shape, self->shape, sizeof shape);
    memcpy(strides, self->strides, sizeof strides);
    shape[d] = (end - start + step - 1) / step;
    strides[d] = self->strides[d] * step;
    return make_view(self, self->ndim, shape, strides, self->offset + start * self->strides[d], "slice");
}

static dt_tensor *narrow_raw(const dt_tensor *self, int dim, int64_t start, int64_t length) {
    if (self->ndim == 0) {
        dt__raise(DT_ERR_INDEX, "narrow", "narrow() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    int d = dt__wrap_dim(dim, self->ndim, "narrow");
    if (d < 0) return NULL;
    int64_t n = self->shape[d];
    if (start < -n || start > n) {
        dt__raise(DT_ERR_INDEX, "narrow", "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                  (long long)-n, (long long)n, (long long)start);
        return NULL;
    }
    if (start < 0) start += n;
    if (length < 0 || start + length > n) {
        dt__raise(DT_ERR_INDEX, "narrow", "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                  (long long)start, (long long)length, (long long)n);
        return NULL;
    }
    int64_t shape[DT_MAX_DIMS];
    memcpy(shape, self->shape, sizeof shape);
    shape[d] = length;
    return make_view(self, self->ndim, shape, self->strides, self->offset + start * self->strides[d], "narrow");
}

static dt_tensor *select_raw(const dt_tensor *self, int dim, int64_t index) {
    if (self->ndim == 0) {
        dt__raise(DT_ERR_INDEX, "select", "select() cannot be applied to a 0-dim tensor.");
        return NULL;
    }
    int d = dt__wrap_dim(dim, self->ndim, "select");
    if (d < 0) return NULL;
    int64_t n = self->shape[d];
    if (index < -n || index >= n) {
        char buf[160];
        dt__raise(DT_ERR_INDEX, "select", "select(): index %lld out of range for tensor of size %s at dimension %d",
                  (long long)index, dt__shape_str(self->ndim, self->shape, buf, sizeof buf), d);
        return NULL;
    }
    if (index < 0) index += n;
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < self->ndim; i++)
        if (i != d) shape[nd] = self->shape[i], strides[nd++] = self->strides[i];
    return make_view(self, nd, shape, strides, self->offset + index * self->strides[d], "select");
}

static dt_tensor *unsqueeze_raw(const dt_tensor *self, int dim) {
    if (self->ndim >= DT_MAX_DIMS) {
        dt__raise(DT_ERR_SHAPE, "unsqueeze", "unsqueeze: a tensor has at most %d dimensions", DT_MAX_DIMS);
        return NULL;
    }
    int d = dt__wrap_dim(dim, self->ndim + 1, "unsqueeze");
    if (d < 0) return NULL;
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    for (int i = 0, j = 0; i <= self->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = d < self->ndim ? self->strides[d] * self->shape[d] : 1;
            continue;
        }
        shape[i] = self->shape[j];
        strides[i] = self->strides[j++];
    }
    return make_view(self, self->ndim + 1, shape, strides, self->offset, "unsqueeze");
}

static dt_tensor *squeeze(const dt_tensor *self, int only) {
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < self->ndim; i++)
        if (self->shape[i] != 1 || (only >= 0 && i != only))
            shape[nd] = self->shape[i], strides[nd++] = self->strides[i];
    return make_view(self, nd, shape, strides, self->offset, "squeeze");
}

static dt_tensor *squeeze_raw(const dt_tensor *self, int dim) {
    int d = dt__wrap_dim(dim, self->ndim, "squeeze");
    return d < 0 ? NULL : squeeze(self, d);
}
static dt_tensor *squeeze_all_raw(const dt_tensor *self) { return squeeze(self, -1); }

static dt_tensor *expand_raw(const dt_tensor *self, int ndim, const int64_t *in) {
    char a[160], b[160];
    if (ndim < self->ndim || ndim > DT_MAX_DIMS) {
        dt__raise(DT_ERR_SHAPE, "expand",
                  "expand: the number of sizes provided (%d) must be greater or equal to the number of dimensions in "
                  "the tensor (%d)",
                  ndim, self->ndim);
        return NULL;
    }
    int64_t shape[DT_MAX_DIMS], strides[DT_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        int k = i - (ndim - self->ndim);
        int64_t have = k >= 0 ? self->shape[k] : 1, want = in[i];
        if (want == -1) {
            if (k < 0) {
                dt__raise(DT_ERR_SHAPE, "expand", "expand: -1 is not allowed in a leading, non-existing dimension (%d)",
                          i);
                return NULL;
            }
            want = have;
        }
        if (have != want && have != 1) {
            dt__raise(DT_ERR_SHAPE, "expand",
                      "The expanded size of the tensor (%lld) must match the existing size (%lld) at non-singleton "
                      "dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                      (long long)want, (long long)have, i, dt__shape_str(ndim, in, a, sizeof a),
                      dt__shape_str(self->ndim, self->shape, b, sizeof b));
            return NULL;
        }
        shape[i] = want;
        strides[i] = (k < 0 || have != want) ? 0 : self->strides[k];
    }
    return make_view(self, ndim, shape, strides, self->offset, "expand");
}

/* ---------------------------------------------------------------- copies */

static dt_tensor *contiguous_raw(const dt_tensor *self) {
    if (dt_is_contiguous(self)) return dt_retain((dt_tensor *)self);
    return copy_op("contiguous", self, self->ndim, self->shape);
}

static dt_tensor *clone_raw(const dt_tensor *self) { return copy_op("clone", self, self->ndim, self->shape); }

/* cat (stack = 0) or stack (stack = 1) of n tensors along dim. */
static dt_tensor *join(const char *name, int n, dt_tensor *const *ts, int dim, int stack) {
    dt__runtime_init();
    if (n <= 0 || !ts) {
        dt__raise(DT_ERR_ARG, name, "%s(): expected a non-empty list of Tensors", name);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!ts[i]) {
            dt__raise(DT_ERR_ARG, name, "%s(): tensor at position %d is NULL", name, i);
            return NULL;
        }
    /* argument names "tensors[i]" live in one block for the probes */
    char(*names_buf)[24] = malloc(sizeof *names_buf * (size_t)n);
    const char **names = malloc(sizeof *names * (size_t)n);
    if (!names_buf || !names) {
        free(names_buf);
        free(names);
        dt__raise(DT_ERR_MEMORY, name, "out of host memory for %d tensors", n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        snprintf(names_buf[i], sizeof names_buf[i], "tensors[%d]", i);
        names[i] = names_buf[i];
    }
    struct dt_opctx c;
    dt_tensor *out = NULL;
    char a[160], b[160];
    if (dt__op_begin(&c, name, n, (const dt_tensor *const *)ts, names, DT_CHECK_STRICT) < 0) goto done;
    const dt_tensor *t0 = ts[0];
    dt_dtype dtype = t0->dtype;
    for (int i = 0; i < n; i++) {
        if (!stack && ts[i]->ndim == 0) {
            dt__op_fail(&c, DT_ERR_SHAPE, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
            goto done;
        }
        dtype = dt__promote(dtype, ts[i]->dtype);
    }
    int ond = t0->ndim + stack;
    int d = dt__wrap_dim(dim, ond, name);
    if (d < 0) {
        dt__op_end(&c, DT_ERR_INDEX, 0, NULL);
        goto done;
    }
    if (ond > DT_MAX_DIMS) {
        dt__op_fail(&c, DT_ERR_SHAPE, "%s: result would have more than %d dimensions", name, DT_MAX_DIMS);
        goto done;
    }
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const dt_tensor *t = ts[i];
        int ok = t->ndim == t0->ndim;
        int bad_dim = -1;
        for (int k = 0; ok && k < t->ndim; k++)
            if ((stack || k != d) && t->shape[k] != t0->shape[k]) ok = 0, bad_dim = k;
        if (!ok) {
            if (stack)
                dt__op_fail(&c, DT_ERR_SHAPE,
                            "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
                            dt__shape_str(t0->ndim, t0->shape, a, sizeof a),
                            dt__shape_str(t->ndim, t->shape, b, sizeof b), i);
            else if (bad_dim >= 0)
                dt__op_fail(
                    &c, DT_ERR_SHAPE,
                    "Sizes of tensors must match except in dimension %d. Expected size %lld but got size %lld for "
                    "tensor number %d in the list.",
                    d, (long long)t0->shape[bad_dim], (long long)t->shape[bad_dim], i);
            else
                dt__op_fail(&c, DT_ERR_SHAPE, "Tensors must have same number of dimensions: got %d and %d", t0->ndim,
                            t->ndim);
            goto done;
        }
        total += stack ? 1 : t->shape[d];
    }
    int64_t oshape[DT_MAX_DIMS];
    for (int k = 0; k < ond; k++) oshape[k] = k == d ? total : t0->shape[stack && k > d ? k - 1 : k];
    if (!(out = dt__op_output(&c, ond, oshape, dtype))) goto done;
    int64_t pos = 0;
    for (int i = 0; i < n; i++) {
        const dt_tensor *t = ts[i];
        struct dt_ew_args ea = {.op = DT_EW_COPY, .compute = dtype, .nin = 1};
        dt__view_of(out, &ea.out);
        dt__view_of(t, &ea.in[0].v);
        int64_t len = stack ? 1 : t->shape[d];
        ea.out.offset = pos * out->strides[d];
        ea.out.shape[d] = len;
        if (stack) { /* view the input with a size-1 dim at d */
            struct dt_view *v = &ea.in[0].v;
            for (int k = ond - 1; k > d; k--) v->shape[k] = v->shape[k - 1], v->strides[k] = v->strides[k - 1];
            v->shape[d] = 1;
            v->strides[d] = 0;
            v->ndim = ond;
        }
        pos += len;
        if (dt__op_kernel_status(&c, c.backend->ew(c.device.index, &ea)) < 0) {
            dt_free(out);
            out = NULL;
            goto done;
        }
    }
    dt__op_end(&c, 0, 1, &out);
done:
    free(names);
    free(names_buf);
    return out;
}

static dt_tensor *cat_raw(int n, dt_tensor *const *tensors, int dim) { return join("cat", n, tensors, dim, 0); }
static dt_tensor *stack_raw(int n, dt_tensor *const *tensors, int dim) { return join("stack", n, tensors, dim, 1); }

/* ---------------------------------------------------------------- autograd entry points */

dt_tensor *dt_view(const dt_tensor *self, int ndim, const int64_t *shape) {
    return dt__agi(view_raw(self, ndim, shape), DT_AG_RESHAPE, self, 0, NULL);
}
dt_tensor *dt_reshape(const dt_tensor *self, int ndim, const int64_t *shape) {
    return dt__agi(reshape_raw(self, ndim, shape), DT_AG_RESHAPE, self, 0, NULL);
}
dt_tensor *dt_flatten(const dt_tensor *self, int start_dim, int end_dim) {
    return dt__agi(flatten_raw(self, start_dim, end_dim), DT_AG_RESHAPE, self, 0, NULL);
}
dt_tensor *dt_unsqueeze(const dt_tensor *self, int dim) {
    return dt__agi(unsqueeze_raw(self, dim), DT_AG_RESHAPE, self, 0, NULL);
}
dt_tensor *dt_squeeze(const dt_tensor *self, int dim) {
    return dt__agi(squeeze_raw(self, dim), DT_AG_RESHAPE, self, 0, NULL);
}
dt_tensor *dt_squeeze_all(const dt_tensor *self) {
    return dt__agi(squeeze_all_raw(self), DT_AG_RESHAPE, self, 0, NULL);
}
dt_tensor *dt_transpose(const dt_tensor *self, int dim0, int dim1) {
    int64_t ip[2] = {dt__dim_index(dim0, self->ndim), dt__dim_index(dim1, self->ndim)};
    return dt__agi(transpose_raw(self, dim0, dim1), DT_AG_TRANSPOSE, self, 2, ip);
}
dt_tensor *dt_permute(const dt_tensor *self, const int *dims) {
    int64_t ip[DT_MAX_DIMS];
    for (int i = 0; i < self->ndim; i++) ip[i] = dt__dim_index(dims[i], self->ndim);
    return dt__agi(permute_raw(self, dims), DT_AG_PERMUTE, self, self->ndim, ip);
}
dt_tensor *dt_slice(const dt_tensor *self, int dim, int64_t start, int64_t end, int64_t step) {
    int64_t ip[4] = {dt__dim_index(dim, self->ndim), start, end, step};
    return dt__agi(slice_raw(self, dim, start, end, step), DT_AG_SLICE, self, 4, ip);
}
dt_tensor *dt_narrow(const dt_tensor *self, int dim, int64_t start, int64_t length) {
    dt_tensor *out = narrow_raw(self, dim, start, length);
    if (!out) return NULL;
    int d = (int)dt__dim_index(dim, self->ndim);
    if (start < 0) start += self->shape[d];
    int64_t ip[4] = {d, start, start + length, 1};
    return dt__agi(out, DT_AG_SLICE, self, 4, ip);
}
dt_tensor *dt_select(const dt_tensor *self, int dim, int64_t index) {
    int64_t ip[2] = {dt__dim_index(dim, self->ndim), index};
    return dt__agi(select_raw(self, dim, index), DT_AG_SELECT, self, 2, ip);
}
dt_tensor *dt_expand(const dt_tensor *self, int ndim, const int64_t *shape) {
    return dt__agi(expand_raw(self, ndim, shape), DT_AG_EXPAND, self, 0, NULL);
}
dt_tensor *dt_contiguous(const dt_tensor *self) { return dt__agi(contiguous_raw(self), DT_AG_IDENTITY, self, 0, NULL); }
dt_tensor *dt_clone(const dt_tensor *self) { return dt__agi(clone_raw(self), DT_AG_IDENTITY, self, 0, NULL); }

static dt_tensor *join_grad(dt_tensor *out, enum dt_ag_kind kind, int n, dt_tensor *const *ts, int dim) {
    if (!out) return NULL;
    int64_t d = dt__dim_index(dim, kind == DT_AG_STACK ? ts[0]->ndim + 1 : ts[0]->ndim);
    return dt__ag_record(out, kind, n, (const dt_tensor *const *)ts, 0, 0, 1, &d);
}
dt_tensor *dt_cat(int n, dt_tensor *const *tensors, int dim) {
    return join_grad(cat_raw(n, tensors, dim), DT_AG_CAT, n, tensors, dim);
}
dt_tensor *dt_stack(int n, dt_tensor *const *tensors, int dim) {
    return join_grad(stack_raw(n, tensors, dim), DT_AG_STACK, n, tensors, dim);
}
