/* A fake libcupti.so.13 for the CUPTI tests (no GPU): the subset of the
 * callback and activity APIs libdevtrace.so uses, over the fake driver
 * (fake_cuda.c), which it attaches to as the real libcupti attaches to
 * libcuda. Callbacks run on the calling thread with a CUpti_CallbackData
 * as the real one fills it; activity records (CUpti_ActivityMemcpy6,
 * Memset4, Kernel10) go into the buffers the client hands out and come
 * back when one is full and at cuptiActivityFlushAll.
 *
 * FAKE_CUPTI_FAIL makes it fail the way the real one does: "multiple"
 * (another profiler subscribed: cuptiSubscribe returns
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), "init" (no driver:
 * CUPTI_ERROR_NOT_INITIALIZED), "activity" (cuptiActivityEnable refuses),
 * "version" (cuptiGetVersion fails).
 *
 * FAKE_CUPTI_STATS=FILE: at exit, what the client asked for and what it
 * cost it, one "key value" a line: callbacks delivered, of them launches,
 * callback ids enabled, whole domains enabled (cuptiEnableDomain). */
#include "fake_cuda.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int subscribed;
static CUpti_CallbackFunc callback;
static void *userdata;
static unsigned char enabled[2][1024]; /* [driver, runtime][cbid] */
static int activity_on[64];            /* by CUpti_ActivityKind */
static CUpti_BuffersCallbackRequestFunc buf_request;
static CUpti_BuffersCallbackCompleteFunc buf_complete;
static uint8_t *buf; /* the buffer being filled */
static size_t buf_size, buf_used;
static unsigned long n_delivered, n_launches, n_domains; /* FAKE_CUPTI_STATS (atomic adds) */

__attribute__((destructor)) static void write_stats(void) {
    const char *path = getenv("FAKE_CUPTI_STATS");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (!f) return;
    unsigned long ids = 0;
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 1024; i++) ids += enabled[d][i];
    fprintf(f, "callbacks %lu\nlaunch_callbacks %lu\nenabled_ids %lu\nenabled_domains %lu\n",
            __atomic_load_n(&n_delivered, __ATOMIC_RELAXED), __atomic_load_n(&n_launches, __ATOMIC_RELAXED), ids,
            n_domains);
    fclose(f);
}

static int failing(const char *what) {
    const char *f = getenv("FAKE_CUPTI_FAIL");
    return f && !strcmp(f, what);
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
    if (!s) return CUPTI_ERROR_INVALID_PARAMETER;
    switch (r) {
    case CUPTI_SUCCESS: *s = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *s = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_NOT_COMPATIBLE: *s = "CUPTI_ERROR_NOT_COMPATIBLE"; break;
    default: *s = "CUPTI_ERROR_UNKNOWN"; break;
    }
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *v) {
    if (failing("version")) return CUPTI_ERROR_UNKNOWN;
    *v = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

/* ---------------------------------------------------------------- callbacks, from the fake driver */

static void on_api(int domain, int cbid, const char *name, const void *params, const void *ret, int site, uint32_t corr,
                   uint64_t *data) {
    int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (!subscribed || cbid < 0 || cbid >= 1024 || !enabled[d][cbid]) return;
    __atomic_add_fetch(&n_delivered, 1, __ATOMIC_RELAXED);
    if (d ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
                cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000
          : cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)
        __atomic_add_fetch(&n_launches, 1, __ATOMIC_RELAXED);
    CUpti_CallbackData cb = {
        .callbackSite = site ? CUPTI_API_EXIT : CUPTI_API_ENTER,
        .functionName = name,
        .functionParams = params,
        .functionReturnValue = (void *)(uintptr_t)ret,
        .correlationData = data,
        .correlationId = corr,
    };
    callback(userdata, (CUpti_CallbackDomain)domain, (CUpti_CallbackId)cbid, &cb);
}

/* Room for len bytes in the current buffer: a full one goes back first. */
static void *reserve(size_t len) {
    uint8_t *done = NULL;
    size_t done_used = 0;
    void *at = NULL;
    pthread_mutex_lock(&lock);
    if (buf && buf_used + len > buf_size) done = buf, done_used = buf_used, buf = NULL;
    if (!buf && buf_request) {
        size_t max = 0;
        buf_request(&buf, &buf_size, &max);
        buf_used = 0;
    }
    if (buf && buf_used + len <= buf_size) at = buf + buf_used, buf_used += (len + 7) & ~(size_t)7;
    pthread_mutex_unlock(&lock);
    if (done) buf_complete(NULL, 0, done, buf_size, done_used);
    return at;
}

static void on_copy(int ck, int sk, int dk, uint64_t bytes, int device, uint32_t corr, uint64_t t0, uint64_t t1) {
    if (!activity_on[CUPTI_ACTIVITY_KIND_MEMCPY]) return;
    CUpti_ActivityMemcpy6 *m = reserve(sizeof *m);
    if (!m) return;
    memset(m, 0, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = (uint8_t)ck, m->srcKind = (uint8_t)sk, m->dstKind = (uint8_t)dk;
    m->bytes = bytes, m->start = t0, m->end = t1, m->deviceId = (uint32_t)device, m->streamId = 7;
    m->correlationId = corr;
}

static void on_set(uint64_t bytes, int device, uint32_t corr, uint64_t t0, uint64_t t1) {
    if (!activity_on[CUPTI_ACTIVITY_KIND_MEMSET]) return;
    CUpti_ActivityMemset4 *m = reserve(sizeof *m);
    if (!m) return;
    memset(m, 0, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m->bytes = bytes, m->start = t0, m->end = t1, m->deviceId = (uint32_t)device, m->streamId = 7;
    m->correlationId = corr;
}

static void on_kernel(const char *name, int device, uint32_t corr, uint64_t t0, uint64_t t1) {
    if (!activity_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) return;
    CUpti_ActivityKernel10 *k = reserve(sizeof *k);
    if (!k) return;
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->name = name, k->start = t0, k->end = t1, k->deviceId = (uint32_t)device, k->streamId = 7;
    k->correlationId = corr;
}

static const struct fakecuda_tool tool = {on_api, on_copy, on_set, on_kernel};

/* ---------------------------------------------------------------- the API */

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud) {
    if (failing("multiple") || subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    fakecuda_set_tool_fn set = drv ? (fakecuda_set_tool_fn)dlsym(drv, "fakecuda_set_tool") : NULL;
    if (failing("init") || !set) return CUPTI_ERROR_NOT_INITIALIZED;
    callback = cb, userdata = ud, subscribed = 1;
    *sub = (CUpti_SubscriberHandle)&subscribed;
    set(&tool);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *device) {
    (void)ctx;
    *device = 0; /* the fake driver has one device */
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub) {
    (void)sub;
    subscribed = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain,
                                       CUpti_CallbackId cbid) {
    (void)sub;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (cbid >= 1024) return CUPTI_ERROR_INVALID_PARAMETER;
    enabled[domain == CUPTI_CB_DOMAIN_RUNTIME_API][cbid] = enable != 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain) {
    (void)sub;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memset(enabled[domain == CUPTI_CB_DOMAIN_RUNTIME_API], enable != 0, 1024);
    n_domains += enable != 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc comp) {
    if (!req || !comp) return CUPTI_ERROR_INVALID_PARAMETER;
    buf_request = req, buf_complete = comp;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    if (failing("activity")) return CUPTI_ERROR_NOT_COMPATIBLE;
    if ((int)kind <= 0 || (int)kind >= 64) return CUPTI_ERROR_INVALID_PARAMETER;
    activity_on[kind] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
    if ((int)kind <= 0 || (int)kind >= 64) return CUPTI_ERROR_INVALID_PARAMETER;
    activity_on[kind] = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    pthread_mutex_lock(&lock);
    uint8_t *done = buf_used ? buf : NULL;
    size_t used = buf_used, size = buf_size;
    if (done) buf = NULL, buf_used = 0;
    pthread_mutex_unlock(&lock);
    if (done) buf_complete(NULL, 0, done, size, used);
    return CUPTI_SUCCESS;
}

static size_t record_size(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    default: return 0;
    }
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **rec) {
    uint8_t *at = *rec ? (uint8_t *)*rec + ((record_size(*rec) + 7) & ~(size_t)7) : buffer;
    if (*rec && !record_size(*rec)) return CUPTI_ERROR_INVALID_KIND;
    if (at >= buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)at;
    return CUPTI_SUCCESS;
}
