/* The protocol every op of libdtrt follows: number it, fire dtp_op_begin,
 * check its operands' devices with PyTorch's rule and text, make its outputs,
 * fire dtp_op_end. Also the broadcasting and promotion rules the ops share.
 * The ops themselves are in ops_*.c and shape.c. */
#include "dt_impl.h"

#include <stdarg.h>
#include <string.h>

static _Atomic uint64_t g_op_seq = 1;

dt_dtype dt__promote(dt_dtype a, dt_dtype b) {
    if (a == DT_F32 || b == DT_F32) return DT_F32;
    if (a == DT_I64 || b == DT_I64) return DT_I64;
    return DT_BOOL;
}

static void fire_begin(struct dt_opctx *c) {
    struct dtp_op op = {c->seq, c->name, c->nargs, c->args};
    dtp_op_begin(&op);
}

void dt__op_end(struct dt_opctx *c, int status, int nout, dt_tensor *const *outs) {
    if (c->ended) return;
    c->ended = 1;
    uint64_t ids[8];
    int n = 0;
    for (int i = 0; i < nout && n < 8; i++)
        if (outs && outs[i]) ids[n++] = outs[i]->id;
    dtp_op_end(c->seq, c->name, status, n, ids);
    if (c->args != c->args_inline) {
        free(c->args);
        free((void *)c->tensors);
        c->args = c->args_inline;
        c->tensors = c->tensors_inline;
    }
}

int dt__op_fail(struct dt_opctx *c, dt_error_kind kind, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dt__op_end(c, (int)kind, 0, NULL);
    dt__raise_msg(kind, c->name, msg);
    return -1;
}

int dt__op_kernel_status(struct dt_opctx *c, int status) {
    if (!status) return 0;
    return dt__op_fail(c, (dt_error_kind)status, "%s", dt__backend_last_msg());
}

int dt__op_begin(struct dt_opctx *c, const char *name, int n, const dt_tensor *const *tensors, const char *const *names,
                 enum dt_check check) {
    dt__runtime_init();
    c->seq = atomic_fetch_add(&g_op_seq, 1);
    c->name = name;
    c->nargs = 0;
    c->args = c->args_inline;
    c->tensors = c->tensors_inline;
    c->device = dt_cpu_device();
    c->backend = NULL;
    c->ended = 0;
    if (n > DT_OP_INLINE_ARGS) {
        c->args = malloc(sizeof *c->args * (size_t)n);
        c->tensors = malloc(sizeof *c->tensors * (size_t)n);
        if (!c->args || !c->tensors) {
            free(c->args);
            free((void *)c->tensors);
            c->args = c->args_inline;
            c->tensors = c->tensors_inline;
            fire_begin(c);
            return dt__op_fail(c, DT_ERR_MEMORY, "%s: out of host memory for %d arguments", name, n);
        }
    }
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) continue;
        c->args[c->nargs] = (struct dtp_arg){names[i], tensors[i]->id, dt__pdev(tensors[i]->storage->device)};
        c->tensors[c->nargs++] = tensors[i];
    }
    fire_begin(c);

    /* PyTorch's rule: every tensor operand on one device, except that a 0-dim
     * cpu tensor may join any device as a scalar (when the op allows it). The
     * first operand that is not such a scalar fixes the device. */
    int first = -1;
    for (int i = 0; check != DT_CHECK_NONE && i < c->nargs; i++) {
        const dt_tensor *t = c->tensors[i];
        if (check == DT_CHECK_SCALARS && dt__is_cpu_scalar(t)) continue;
        if (first < 0) {
            first = i;
            continue;
        }
        dt_device d0 = c->tensors[first]->storage->device, d1 = t->storage->device;
        if (dt_device_equal(d0, d1)) continue;
        char a[32], b[32], msg[512];
        snprintf(msg, sizeof msg,
                 "Expected all tensors to be on the same device, but found at least two devices, %s and "
                 "%s! (when checking argument for argument %s in method %s)",
                 dt_device_str(d0, a, sizeof a), dt_device_str(d1, b, sizeof b), c->args[i].name, name);
        struct dtp_op op = {c->seq, c->name, c->nargs, c->args};
        dtp_device_mismatch(&op, first, i, msg);
        dt__op_end(c, DT_ERR_DEVICE, 0, NULL);
        dt__raise_msg(DT_ERR_DEVICE, name, msg);
        return -1;
    }
    c->device = first >= 0 ? c->tensors[first]->storage->device
                : c->nargs ? c->tensors[0]->storage->device
                           : dt_cpu_device();
    c->backend = dt__backend_for(c->device, name);
    if (!c->backend) {
        dt__op_end(c, (int)dt_last_error_kind(), 0, NULL);
        return -1;
    }
    return 0;
}

dt_tensor *dt__op_output(struct dt_opctx *c, int ndim, const int64_t *shape, dt_dtype dtype) {
    dt_tensor *t = dt__tensor_alloc(ndim, shape, dtype, c->device, c->name);
    if (!t) {
        dt__op_end(c, (int)dt_last_error_kind(), 0, NULL);
        return NULL;
    }
    dt__tensor_announce(t, DTP_ORIGIN_OP_OUTPUT, c->name, 0, c->seq);
    return t;
}

int dt__ew_run(dt_device dev, const struct dt_ew_args *a, const char *op) {
    const struct dt_backend *b = dt__backend_for(dev, op);
    if (!b) return -1;
    int st = b->ew(dev.index, a);
    if (st) {
        dt__raise((dt_error_kind)st, op, "%s", dt__backend_last_msg());
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- broadcasting */

int dt__broadcast_shapes(int n, const dt_tensor *const *ts, int *ndim, int64_t *shape, const char *op) {
    int nd = 0;
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->ndim > nd) nd = ts[i]->ndim;
    for (int d = 0; d < nd; d++) shape[d] = 1;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        for (int k = 0; k < ts[i]->ndim; k++) {
            int d = nd - ts[i]->ndim + k;
            int64_t s = ts[i]->shape[k];
            if (s == shape[d] || s == 1) continue;
            if (shape[d] == 1) {
                shape[d] = s;
                continue;
            }
            /* find the earlier tensor that set shape[d], for PyTorch's wording */
            int j = 0;
            for (; j < i; j++) {
                int kj = ts[j] ? d - (nd - ts[j]->ndim) : -1;
                if (ts[j] && kj >= 0 && ts[j]->shape[kj] == shape[d]) break;
            }
            dt__raise(DT_ERR_SHAPE, op,
                      "The size of tensor %c (%lld) must match the size of tensor %c (%lld) at non-singleton "
                      "dimension %d",
                      'a' + j, (long long)shape[d], 'a' + i, (long long)s, d);
            return -1;
        }
    }
    *ndim = nd;
    return 0;
}

int dt__can_broadcast_to(const dt_tensor *t, int ndim, const int64_t *shape) {
    if (t->ndim > ndim) return 0;
    for (int k = 0; k < t->ndim; k++) {
        int64_t s = t->shape[k], want = shape[ndim - t->ndim + k];
        if (s != want && s != 1) return 0;
    }
    return 1;
}

void dt__broadcast_view(struct dt_view *v, int ndim, const int64_t *shape) {
    int64_t st[DT_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        int k = d - (ndim - v->ndim);
        st[d] = (k < 0 || v->shape[k] == 1) ? 0 : v->strides[k];
    }
    v->ndim = ndim;
    memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(v->strides, st, sizeof(int64_t) * (size_t)ndim);
}

int dt__contig_view(const dt_tensor *t, struct dt_view *v, struct dt_storage **tmp, const char *op) {
    *tmp = NULL;
    dt__view_of(t, v);
    int64_t n = dt_numel(t);
    if (!dt_is_contiguous(t)) {
        struct dt_storage *st = dt__storage_new(t->storage->device, (size_t)n * dt_dtype_size(t->dtype), op);
        if (!st) return -1;
        struct dt_ew_args a = {.op = DT_EW_COPY, .compute = t->dtype, .nin = 1};
        dt__view_of(t, &a.in[0].v);
        a.out = a.in[0].v;
        a.out.base = st->data;
        a.out.offset = 0;
        dt__contig_strides(t->ndim, t->shape, a.out.strides);
        if (dt__ew_run(t->storage->device, &a, op) < 0) {
            dt__storage_release(st);
            return -1;
        }
        *tmp = st;
        v->base = st->data;
        v->offset = 0;
    }
    v->ndim = 1;
    v->shape[0] = n;
    v->strides[0] = 1;
    return 0;
}
