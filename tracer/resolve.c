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

struct lookup {
    const char *const *prefixes;
    const char *name;
    void *fn;
};

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct lookup *l = data;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    int match = 0;
    for (const char *const *p = l->prefixes; *p && !match; p++) match = strncmp(base, *p, strlen(*p)) == 0;
    if (!match) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    l->fn = dlsym(h, l->name);
    dlclose(h);
    return l->fn != NULL;
}

void *tr_lib_sym(const char *const *prefixes, const char *name) {
    struct lookup l = {prefixes, name, NULL};
    dl_iterate_phdr(visit, &l);
    return l.fn;
}

void *tr_sym_once(_Atomic(void *) *slot, const char *const *prefixes, const char *name, int next) {
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (fn) return fn;
    fn = dlsym(next ? RTLD_NEXT : RTLD_DEFAULT, name);
    if (!fn) fn = tr_lib_sym(prefixes, name);
    if (fn) atomic_store_explicit(slot, fn, memory_order_release);
    return fn;
}
