/* Native stacks: raw return addresses of the calling thread, captured with
 * libunwind's unw_backtrace. libunwind is opened with dlopen(RTLD_LOCAL),
 * never linked: linked, its _Unwind_* would replace libgcc's for the whole
 * process and make every C++ throw far slower (DESIGN.md). glibc's
 * backtrace() is the fallback when libunwind is missing. Symbols are resolved
 * later, by the viewer, from the module table. */
#include "tr_impl.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

static uintptr_t g_own_lo, g_own_hi; /* libdevtrace.so's own mapping */

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_addr != (uintptr_t)data) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!g_own_lo || lo < g_own_lo) g_own_lo = lo;
        if (hi > g_own_hi) g_own_hi = hi;
    }
    return 1;
}

typedef int (*unw_backtrace_fn)(void **buffer, int size);
static unw_backtrace_fn g_unw;

void tr_stack_init(void) {
    Dl_info di;
    if (dladdr((void *)tr_stack_init, &di) && di.dli_fbase) dl_iterate_phdr(find_own, di.dli_fbase);
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h) g_unw = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
    if (!g_unw) {
        void *warm[4];
        backtrace(warm, 4); /* loads libgcc_s now, not inside a signal handler */
    }
}

int tr_stack_capture(uint64_t *ips, int max, int skip, int own) {
    void *buf[TR_MAX_DEPTH + 16];
    int want = max + skip + 1; /* + this function */
    if (want > (int)(sizeof buf / sizeof buf[0])) want = (int)(sizeof buf / sizeof buf[0]);
    int n = g_unw ? g_unw(buf, want) : backtrace(buf, want);
    int k = 0, i = skip + 1;
    if (own) /* interposed calls: the innermost frame is the first outside libdevtrace */
        while (i < n && (uintptr_t)buf[i] >= g_own_lo && (uintptr_t)buf[i] < g_own_hi) i++;
    for (; i < n && k < max; i++) ips[k++] = (uint64_t)(uintptr_t)buf[i];
    return k;
}
