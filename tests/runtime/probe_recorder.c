/* A probe implementation for tests: loaded with LD_PRELOAD in front of
 * libdtrt, it replaces every dtp_* probe and records each call, exactly as
 * the tracer will. check_probes.c reads the records with dlsym(RTLD_DEFAULT). */
#include "probe_recorder.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define EXPORT  __attribute__((visibility("default")))
#define REC_MAX 100000

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec_event g_ev[REC_MAX];
static int g_n;

static struct rec_event *add(enum rec_kind k) {
    pthread_mutex_lock(&g_lock);
    struct rec_event *e = g_n < REC_MAX ? &g_ev[g_n++] : NULL;
    if (e) {
        memset(e, 0, sizeof *e);
        e->kind = k;
    }
    pthread_mutex_unlock(&g_lock);
    return e;
}

static void copy_args(struct rec_event *e, const struct dtp_op *op) {
    e->seq = op->seq;
    snprintf(e->s1, sizeof e->s1, "%s", op->name);
    e->nargs = op->nargs;
    for (int i = 0; i < op->nargs && i < 8; i++) {
        snprintf(e->args[i].name, sizeof e->args[i].name, "%s", op->args[i].name);
        e->args[i].id = op->args[i].id;
        e->args[i].device = op->args[i].device;
    }
}

EXPORT int rec_count(void) { return g_n; }
EXPORT const struct rec_event *rec_get(int i) { return i >= 0 && i < g_n ? &g_ev[i] : NULL; }
EXPORT void rec_reset(void) { g_n = 0; }

EXPORT void dtp_runtime_init(uint32_t abi_version, const char *runtime, const char *version) {
    struct rec_event *e = add(REC_INIT);
    if (!e) return;
    e->i1 = (int32_t)abi_version;
    snprintf(e->s1, sizeof e->s1, "%s", runtime);
    snprintf(e->s2, sizeof e->s2, "%s", version);
}
EXPORT void dtp_device_backend(struct dtp_device device, const char *backend) {
    struct rec_event *e = add(REC_BACKEND);
    if (!e) return;
    e->d1 = device;
    snprintf(e->s1, sizeof e->s1, "%s", backend);
}
EXPORT void dtp_tensor_created(const struct dtp_tensor *t, const struct dtp_origin *o) {
    struct rec_event *e = add(REC_CREATED);
    if (!e) return;
    e->id = t->id;
    e->u1 = t->storage_id;
    e->dtype = t->dtype;
    e->ndim = t->ndim;
    for (int i = 0; i < t->ndim && i < 8; i++) e->shape[i] = t->shape[i], e->strides[i] = t->strides[i];
    e->offset = t->storage_offset;
    e->d1 = t->device;
    e->i3 = (int32_t)t->nbytes;
    e->i1 = o->kind;
    snprintf(e->s1, sizeof e->s1, "%s", o->what);
    snprintf(e->s2, sizeof e->s2, "%s", t->name ? t->name : "");
    snprintf(e->detail, sizeof e->detail, "%s", o->detail ? o->detail : "");
    e->id2 = o->src_id;
    e->seq = o->op_seq;
}
EXPORT void dtp_tensor_transferred(const struct dtp_transfer *x) {
    struct rec_event *e = add(REC_TRANSFER);
    if (!e) return;
    e->id = x->src_id;
    e->id2 = x->dst_id;
    e->d1 = x->from;
    e->d2 = x->to;
    e->u1 = x->bytes;
    e->i1 = x->kind;
    snprintf(e->s1, sizeof e->s1, "%s", x->via);
}
EXPORT void dtp_tensor_named(uint64_t id, const char *name) {
    struct rec_event *e = add(REC_NAMED);
    if (!e) return;
    e->id = id;
    snprintf(e->s1, sizeof e->s1, "%s", name);
}
EXPORT void dtp_tensor_role(uint64_t id, int32_t role, uint64_t of, const char *key) {
    struct rec_event *e = add(REC_ROLE);
    if (!e) return;
    e->id = id;
    e->id2 = of;
    e->i1 = role;
    snprintf(e->s1, sizeof e->s1, "%s", key);
}
EXPORT void dtp_tensor_freed(uint64_t id) {
    struct rec_event *e = add(REC_FREED);
    if (e) e->id = id;
}
EXPORT void dtp_op_begin(const struct dtp_op *op) {
    struct rec_event *e = add(REC_OP_BEGIN);
    if (e) copy_args(e, op);
}
EXPORT void dtp_op_end(uint64_t seq, const char *name, int32_t status, int32_t n, const uint64_t *outs) {
    struct rec_event *e = add(REC_OP_END);
    if (!e) return;
    e->seq = seq;
    snprintf(e->s1, sizeof e->s1, "%s", name);
    e->i1 = status;
    e->nargs = n;
    for (int i = 0; i < n && i < 8; i++) e->outputs[i] = outs[i];
}
EXPORT void dtp_device_mismatch(const struct dtp_op *op, int32_t first, int32_t other, const char *message) {
    struct rec_event *e = add(REC_MISMATCH);
    if (!e) return;
    copy_args(e, op);
    e->i1 = first;
    e->i2 = other;
    snprintf(e->s2, sizeof e->s2, "%s", message);
}
EXPORT void dtp_error(const char *op, int32_t kind, const char *message) {
    struct rec_event *e = add(REC_ERROR);
    if (!e) return;
    snprintf(e->s1, sizeof e->s1, "%s", op);
    e->i1 = kind;
    snprintf(e->s2, sizeof e->s2, "%s", message);
}
