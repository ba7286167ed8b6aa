/* Errors of libdtrt: the thread-local last error, the replaceable
 * process-wide handler, and the backend message buffer. Device-mismatch
 * detection itself is in op.c; this file only reports. */
#include "dt_impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#define DT_ERRMSG_MAX 1024

static _Thread_local char tl_msg[DT_ERRMSG_MAX];         /* last error on this thread */
static _Thread_local dt_error_kind tl_kind;              /* its kind, DT_OK when none */
static _Thread_local char tl_backend_msg[DT_ERRMSG_MAX]; /* left by a failing kernel */

/* THREAD SAFETY NOTES: the handler and its context change together under
 * g_lock; raising reads them under the lock and calls the handler outside it,
 * so a handler may itself call the runtime. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_error_handler g_handler = dt_error_handler_default;
static void *g_ctx;

void dt_error_handler_default(const dt_error_info *err, void *ctx) {
    (void)ctx;
    const char *cls = err->kind == DT_ERR_INDEX ? "IndexError" : "RuntimeError";
    fflush(stdout);
    fprintf(stderr, "%s: %s\n", cls, err->message);
    exit(1);
}

void dt_error_handler_return(const dt_error_info *err, void *ctx) {
    (void)err;
    (void)ctx;
}

dt_error_handler dt_set_error_handler(dt_error_handler h, void *ctx, void **old_ctx) {
    pthread_mutex_lock(&g_lock);
    dt_error_handler old = g_handler;
    if (old_ctx) *old_ctx = g_ctx;
    g_handler = h ? h : dt_error_handler_default;
    g_ctx = h ? ctx : NULL;
    pthread_mutex_unlock(&g_lock);
    return old;
}

const char *dt_last_error(void) { return tl_msg; }
dt_error_kind dt_last_error_kind(void) { return tl_kind; }
void dt_clear_error(void) {
    tl_msg[0] = '\0';
    tl_kind = DT_OK;
}

void dt__raise_msg(dt_error_kind kind, const char *op, const char *msg) {
    if (msg != tl_msg) snprintf(tl_msg, sizeof tl_msg, "%s", msg);
    tl_kind = kind;
    dtp_error(op ? op : "", (int32_t)kind, tl_msg);
    pthread_mutex_lock(&g_lock);
    dt_error_handler h = g_handler;
    void *ctx = g_ctx;
    pthread_mutex_unlock(&g_lock);
    dt_error_info info = {kind, op ? op : "", tl_msg};
    h(&info, ctx);
}

void dt__raise(dt_error_kind kind, const char *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    va_end(ap);
    dt__raise_msg(kind, op, tl_msg);
}

void dt__backend_msg(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_backend_msg, sizeof tl_backend_msg, fmt, ap);
    va_end(ap);
}

const char *dt__backend_last_msg(void) { return tl_backend_msg[0] ? tl_backend_msg : "unknown backend failure"; }

void dt__assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "devtrace runtime: internal error: %s failed at %s:%d\n", cond, file, line);
    abort();
}
