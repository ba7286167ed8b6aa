/* Native stacks: raw return addresses of the calling thread, captured with
 * libunwind's unw_backtrace. libunwind is opened with dlopen(RTLD_LOCAL),
 * never linked: linked, its _Unwind_* would replace libgcc's for the whole
 * process and make every C++ throw far slower (DESIGN.md). glibc's
 * backtrace() is the fallback when libunwind is missing. Symbols are resolved
 * later, by the viewer, from the module table. */
#include "tr_impl.h"

#include <dlfcn.h>
#include <execinfo.h>

typedef int (*unw_backtrace_fn)(void **buffer, int size);
static unw_backtrace_fn g_unw;

void tr_stack_init(void) {
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h) g_unw = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
    if (!g_unw) {
        void *warm[4];
        backtrace(warm, 4); /* loads libgcc_s now, not inside a signal handler */
    }
}

int tr_stack_capture(uint64_t *ips, int max, int skip) {
    void *buf[TR_MAX_DEPTH + 16];
    int want = max + skip + 1; /* + this function */
    if (want > (int)(sizeof buf / sizeof buf[0])) want = (int)(sizeof buf / sizeof buf[0]);
    int n = g_unw ? g_unw(buf, want) : backtrace(buf, want);
    int k = 0;
    for (int i = skip + 1; i < n && k < max; i++) ips[k++] = (uint64_t)(uintptr_t)buf[i];
    return k;
}
