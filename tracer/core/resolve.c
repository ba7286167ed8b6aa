/* Finding a library's own definition of a symbol when the usual lookups
 * cannot: a library loaded RTLD_LOCAL (ctypes, Python extension modules and
 * everything they pull in, libstdc++ and libcudart included) is outside the
 * global scope, so dlsym(RTLD_NEXT) and dlsym(RTLD_DEFAULT) both miss it.
 * The loaded objects are walked by name instead, and the symbol is looked up
 * in the scope of that object's own handle (dlopen with RTLD_NOLOAD, which
 * never loads anything). */
#include "tr_impl.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#define LOOKUP_MAX 16 /* objects whose names match, looked into */

struct lookup {
    const char *const *prefixes;
    int n;                       /* names collected */
    char names[LOOKUP_MAX][512]; /* matching objects' paths */
};

/* Only collects: dlopen inside dl_iterate_phdr's callback would take the loader's lock while the walk holds
 * its own, the reverse of another thread's dlopen (seen: the writer resolving __cxa_demangle while the
 * program dlopen'd a torchvision extension: both waited forever). */
static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct lookup *l = data;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    int match = 0;
    for (const char *const *p = l->prefixes; *p && !match; p++) match = strncmp(base, *p, strlen(*p)) == 0;
    if (match && strlen(info->dlpi_name) < sizeof l->names[0]) strcpy(l->names[l->n++], info->dlpi_name);
    return l->n == LOOKUP_MAX;
}

void *tr_lib_sym(const char *const *prefixes, const char *name) {
    struct lookup l;
    l.prefixes = prefixes;
    l.n = 0;
    dl_iterate_phdr(visit, &l);
    void *fn = NULL;
    for (int i = 0; i < l.n && !fn; i++) { /* after the walk, outside its lock */
        void *h = dlopen(l.names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        fn = dlsym(h, name);
        dlclose(h);
    }
    return fn;
}

void *tr_sym_once(_Atomic(void *) *slot, const char *const *prefixes, const char *name, int next) {
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (fn) return fn;
    fn = dlsym(next ? RTLD_NEXT : RTLD_DEFAULT, name);
    if (!fn) fn = tr_lib_sym(prefixes, name);
    if (fn) atomic_store_explicit(slot, fn, memory_order_release);
    return fn;
}

/* The C++ runtimes, where __cxa_throw and __cxa_demangle live (cxa.c, the writer's demangling). */
const char *const tr_cxx_libs[] = {"libstdc++.so", "libc++abi.so", "libc++.so", NULL};
