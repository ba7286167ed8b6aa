/* The ground of libdevtrace.so: the process-wide state and the one-warning
 * failure path (tr_fail, tr_info) every module reports through. It uses
 * nothing else of the tracer. */
#include "ground.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

struct tr_state g_tr = {
    .writer_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake_fd = {-1, -1},
    .exit_status = -1,
};

int64_t tr_gettid(void) { return (int64_t)syscall(SYS_gettid); }

/* One line on stderr: "devtrace: " head, the message, tail. */
static void say(const char *head, const char *tail, const char *fmt, va_list ap) {
    char msg[1024], out[4 * sizeof msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* paths and a producer's text: control bytes shown, never sent to the terminal */
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            n += (size_t)snprintf(out + n, sizeof out - n, "\\x%02x", *p);
        else
            out[n++] = (char)*p;
    out[n] = '\0';
    fprintf(stderr, "devtrace: %s%s%s\n", head, out, tail);
}

void tr_fail(const char *fmt, ...) {
    atomic_store(&g_tr.enabled, 0);
    if (atomic_exchange(&g_tr.warned, 1)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_tr.fail_msg, sizeof g_tr.fail_msg, fmt, ap); /* the trace says why (meta tracing_stopped) */
    va_end(ap);
    if (g_tr.cfg.quiet) return;
    va_start(ap, fmt);
    say("warning: ", "; tracing is off, the program goes on", fmt, ap);
    va_end(ap);
}

void tr_info(const char *fmt, ...) {
    if (g_tr.cfg.quiet) return;
    va_list ap;
    va_start(ap, fmt);
    say("", "", fmt, ap);
    va_end(ap);
}
