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

uintptr_t tr_own_lo, tr_own_hi; /* libdevtrace.so's own mapping */

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_addr != (uintptr_t)data) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!tr_own_lo || lo < tr_own_lo) tr_own_lo = lo;
        if (hi > tr_own_hi) tr_own_hi = hi;
    }
    return 1;
}

int (*tr_unw_backtrace)(void **buffer, int size);

void tr_stack_init(void) {
    Dl_info di;
    if (dladdr((void *)tr_stack_init, &di) && di.dli_fbase) dl_iterate_phdr(find_own, di.dli_fbase);
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h) tr_unw_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
    if (!tr_unw_backtrace) {
        void *warm[4];
        backtrace(warm, 4); /* loads libgcc_s now, not inside a signal handler */
    }
}
