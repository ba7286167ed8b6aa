/* Loading the libtorch observer (adapters/libtorch/) into a native program
 * on libtorch, at the tracer's start: after the libraries the program needs
 * were initialized (libtorch among them) and before the program's own static
 * initializers and main. It does not load it into a program that does not
 * map libtorch_cpu at that point (libtorch is never brought into one), into
 * a CPython process (the Python adapter records those ops: one record per
 * op), nor next to a libtorch_cpu other than the one the observer was
 * compiled against (a C++ ABI, checked by GNU build-id): that gets one
 * line, and native tracing goes on. A program that dlopens libtorch later
 * is not observed.
 *
 * The observer is DEVTRACE_LIBTORCH_OBSERVER when set ("" or "0" turns it
 * off), else libdevtrace_libtorch.so next to this library. It reaches the
 * probes through this library's exported dtp_* functions. */
#include "tr_impl.h"

#include <dlfcn.h>
#include <libgen.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TR_LIBTORCH_BUILD_ID

struct found {
    char path[PATH_MAX];
    char build_id[41];
    int seen;
};

static int find_torch(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct found *f = arg;
    const char *b = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    b = b ? b + 1 : info->dlpi_name;
    if (!b || strncmp(b, "libtorch_cpu.so", 15) != 0) return 0;
    snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
    tr_build_id_of(info, f->build_id);
    f->seen = 1;
    return 1;
}

/* The observer's path into out; 0 when there is none to load. */
static int observer_path(char *out, size_t size) {
    const char *env = getenv("DEVTRACE_LIBTORCH_OBSERVER");
    if (env) {
        if (!*env || !strcmp(env, "0")) return 0;
        snprintf(out, size, "%s", env);
        return 1;
    }
    Dl_info self;
    if (!dladdr((void *)observer_path, &self) || !self.dli_fname) return 0;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", self.dli_fname);
    snprintf(out, size, "%s/libdevtrace_libtorch.so", dirname(dir));
    return 1;
}

static void libtorch_load(void) {
    struct found f = {.seen = 0};
    dl_iterate_phdr(find_torch, &f);
    if (!f.seen) return;                                 /* not a libtorch program */
    if (dlsym(RTLD_DEFAULT, "Py_IsInitialized")) return; /* CPython: the Python adapter's */
    char path[PATH_MAX];
    if (!observer_path(path, sizeof path)) return;
    if (strcmp(f.build_id, TR_LIBTORCH_BUILD_ID) != 0) {
        tr_info("%s is not the libtorch the observer was built against (build-id %s, not %s): libtorch's tensors "
                "and ops are not recorded; native tracing goes on",
                f.path, f.build_id[0] ? f.build_id : "none", TR_LIBTORCH_BUILD_ID);
        return;
    }
    if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
        tr_info("cannot load the libtorch observer (%s): libtorch's tensors and ops are not recorded; native "
                "tracing goes on",
                dlerror());
}

/* Once the preloaded library's constructor started tracing: the program's libraries are loaded by then. */
TR_FRONT(libtorch) = {.name = "libtorch", .started = libtorch_load};

#endif /* built without Torch: no observer, no hook */
