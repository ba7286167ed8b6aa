/* Data movement between devices: dt__mem_copy() is the only code in libdtrt
 * that moves bytes between two devices or between a host buffer and a
 * device, and dt__transfer() the only tensor-level copy across devices (it
 * fires dtp_tensor_transferred). The public dt_to, dt_cpu, dt_cuda, dt_copy_,
 * dt_to_host and dt_item are built on them. */
#include "dt_impl.h"

#include <math.h>
#include <string.h>

int dt__mem_copy(dt_device dst_dev, void *dst_base, size_t dst_off, dt_device src_dev, const void *src_base,
                 size_t src_off, size_t bytes, const char *op) {
    if (bytes == 0) return 0;
    const struct dt_backend *db = dt__backend_for(dst_dev, op), *sb = dt__backend_for(src_dev, op);
    if (!db || !sb) return -1;
    void *dst = (char *)dst_base + dst_off;
    const void *src = (const char *)src_base + src_off;
    int st;
    if (db == sb)
        st = db->copy_peer(dst_dev.index, dst_base, dst_off, src_dev.index, src_base, src_off, bytes);
    else if (db->host_accessible && sb->host_accessible) {
        memcpy(dst, src, bytes);
        st = 0;
    } else if (sb->host_accessible)
        st = db->upload(dst_dev.index, dst, src, bytes);
    else if (db->host_accessible)
        st = sb->download(src_dev.index, dst, src, bytes);
    else { /* two device backends: stage through the host */
        void *stage = malloc(bytes);
        if (!stage) {
            dt__raise(DT_ERR_MEMORY, op, "out of host memory staging %zu bytes", bytes);
            return -1;
        }
        st = sb->download(src_dev.index, stage, src, bytes);
        if (!st) st = db->upload(dst_dev.index, dst, stage, bytes);
        free(stage);
    }
    if (st) {
        dt__raise((dt_error_kind)st, op, "%s", dt__backend_last_msg());
        return -1;
    }
    return 0;
}

static void fire_transfer(uint64_t src, uint64_t dst, dt_device from, dt_device to, uint64_t bytes, int kind,
                          const char *via) {
    struct dtp_transfer x = {src, dst, dt__pdev(from), dt__pdev(to), bytes, kind, via};
    dtp_tensor_transferred(&x);
}

/* Copies src (any layout, any device) into dst (any layout, any device,
 * shapes broadcasting src -> dst, dtype converted). Fires the transfer probe
 * when the devices differ. Returns 0 or -1 (raised). */
static int transfer(dt_tensor *dst, const dt_tensor *src, int kind, const char *via) {
    dt_device sd = src->storage->device, dd = dst->storage->device;
    size_t esz = dt_dtype_size(src->dtype);
    int64_t n = dt_numel(src);
    struct dt_view sv;
    struct dt_storage *stmp = NULL, *dtmp = NULL;
    if (dt__contig_view(src, &sv, &stmp, via) < 0) return -1;
    size_t soff = (size_t)(sv.offset * (int64_t)esz);

    int direct = dst->dtype == src->dtype && dt_is_contiguous(dst) && dst->ndim == src->ndim &&
                 memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)src->ndim) == 0;
    int rc = 0;
    if (direct) {
        rc = dt__mem_copy(dd, dst->storage->data, (size_t)(dst->offset * (int64_t)esz), sd, sv.base, soff,
                          (size_t)n * esz, via);
    } else {
        /* land the raw bytes on dst's device, then convert / scatter there */
        dtmp = dt__storage_new(dd, (size_t)n * esz, via);
        rc = dtmp ? dt__mem_copy(dd, dtmp->data, 0, sd, sv.base, soff, (size_t)n * esz, via) : -1;
        if (rc == 0) {
            struct dt_ew_args a = {.op = DT_EW_COPY, .compute = dt__promote(src->dtype, dst->dtype), .nin = 1};
            dt__view_of(dst, &a.out);
            dt__view_of(src, &a.in[0].v);
            a.in[0].v.base = dtmp->data;
            a.in[0].v.offset = 0;
            dt__contig_strides(src->ndim, src->shape, a.in[0].v.strides);
            dt__broadcast_view(&a.in[0].v, dst->ndim, dst->shape);
            rc = dt__ew_run(dd, &a, via);
        }
    }
    dt__storage_release(stmp);
    dt__storage_release(dtmp);
    if (rc == 0 && !dt_device_equal(sd, dd)) fire_transfer(src->id, dst->id, sd, dd, (uint64_t)n * esz, kind, via);
    return rc;
}

static dt_tensor *to_device(const dt_tensor *t, dt_device dev, const char *via) {
    dt__runtime_init();
    if (dt_device_equal(t->storage->device, dev)) return dt_retain((dt_tensor *)t);
    dt_tensor *out = dt__tensor_alloc(t->ndim, t->shape, t->dtype, dev, via);
    if (!out) return NULL;
    if (t->name) { /* the copy keeps the name: it is the same value, elsewhere */
        out->name = strdup(t->name);
    }
    dt__tensor_announce(out, DTP_ORIGIN_TRANSFER, via, t->id, 0);
    if (transfer(out, t, DTP_TRANSFER_TO, via) < 0) {
        dt_free(out);
        return NULL;
    }
    return out;
}

dt_tensor *dt_to(const dt_tensor *t, dt_device dev) { return dt__ag1(to_device(t, dev, "to"), DT_AG_TO, t, 0, 0); }
dt_tensor *dt_cpu(const dt_tensor *t) { return dt__ag1(to_device(t, dt_cpu_device(), "cpu"), DT_AG_TO, t, 0, 0); }
dt_tensor *dt_cuda(const dt_tensor *t, int index) {
    return dt__ag1(to_device(t, dt_cuda_device(index), "cuda"), DT_AG_TO, t, 0, 0);
}

int dt__move_inplace(dt_tensor *t, dt_device dev, const char *via) {
    dt__runtime_init();
    dt_device from = t->storage->device;
    if (dt_device_equal(from, dev)) return 0;
    size_t esz = dt_dtype_size(t->dtype);
    int64_t n = dt_numel(t);
    struct dt_view v;
    struct dt_storage *tmp = NULL, *st = dt__storage_new(dev, (size_t)n * esz, via);
    if (!st) return -1;
    if (dt__contig_view(t, &v, &tmp, via) < 0 ||
        dt__mem_copy(dev, st->data, 0, from, v.base, (size_t)(v.offset * (int64_t)esz), (size_t)n * esz, via) < 0) {
        dt__storage_release(tmp);
        dt__storage_release(st);
        return -1;
    }
    dt__storage_release(tmp);
    if (t->grad && dt__move_inplace(t->grad, dev, via) < 0) {
        dt__storage_release(st);
        return -1;
    }
    dt__storage_release(t->storage);
    t->storage = st; /* same tensor, new memory: strides become contiguous */
    t->offset = 0;
    dt__contig_strides(t->ndim, t->shape, t->strides);
    fire_transfer(t->id, t->id, from, dev, (uint64_t)n * esz, DTP_TRANSFER_MOVE, via);
    return 0;
}

int dt_copy_(dt_tensor *dst, const dt_tensor *src) {
    static const char *const names[] = {"self", "src"};
    const dt_tensor *ts[] = {dst, src};
    struct dt_opctx c; /* copy_ is the one op that may cross devices */
    if (dt__op_begin(&c, "copy_", 2, ts, names, DT_CHECK_NONE) < 0) return -1;
    if (dt__ag_check_inplace(dst, "copy_") < 0) {
        dt__op_end(&c, DT_ERR_STATE, 0, NULL);
        return -1;
    }
    if (!dt__can_broadcast_to(src, dst->ndim, dst->shape)) {
        char a[160], b[160];
        return dt__op_fail(&c, DT_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                           dt__shape_str(dst->ndim, dst->shape, a, sizeof a),
                           dt__shape_str(src->ndim, src->shape, b, sizeof b));
    }
    int rc = transfer(dst, src, DTP_TRANSFER_COPY, "copy_");
    dt__op_end(&c, rc ? (int)dt_last_error_kind() : 0, 1, &dst);
    return rc;
}

int dt_to_host(const dt_tensor *t, void *buf, size_t size) {
    dt__runtime_init();
    size_t esz = dt_dtype_size(t->dtype), need = (size_t)dt_numel(t) * esz;
    if (!buf || size < need) {
        dt__raise(DT_ERR_ARG, "to_host",
                  "to_host: buffer of %zu bytes is too small for %lld elements of %s (%zu bytes)", buf ? size : 0,
                  (long long)dt_numel(t), dt_dtype_name(t->dtype), need);
        return -1;
    }
    struct dt_view v;
    struct dt_storage *tmp;
    if (dt__contig_view(t, &v, &tmp, "to_host") < 0) return -1;
    int rc = dt__mem_copy(dt_cpu_device(), buf, 0, t->storage->device, v.base, (size_t)(v.offset * (int64_t)esz), need,
                          "to_host");
    dt__storage_release(tmp);
    if (rc == 0 && t->storage->device.type != DT_DEVICE_CPU)
        fire_transfer(t->id, 0, t->storage->device, dt_cpu_device(), need, DTP_TRANSFER_READ, "to_host");
    return rc;
}

double dt_item(const dt_tensor *t) {
    dt__runtime_init();
    if (dt_numel(t) != 1) {
        dt__raise(DT_ERR_ARG, "item", "a Tensor with %lld elements cannot be converted to Scalar",
                  (long long)dt_numel(t));
        return NAN;
    }
    union {
        float f;
        int64_t i;
        uint8_t b;
    } u;
    if (dt_to_host(t, &u, sizeof u) < 0) return NAN;
    return t->dtype == DT_F32 ? (double)u.f : t->dtype == DT_I64 ? (double)u.i : (double)u.b;
}
