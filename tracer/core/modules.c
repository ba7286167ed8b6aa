/* The module table: every object loaded in the process (path, load base,
 * address range, GNU build-id), with the sequence numbers between which it
 * was loaded, so the viewer can symbolize raw addresses after the process is
 * gone. Rescanned by the writer when dl_iterate_phdr's load/unload counters
 * move, and around every dlclose (interposed here: a module must be seen
 * before it disappears). dlopen is deliberately not interposed: a wrapper
 * would become the "caller" whose RUNPATH and $ORIGIN the loader uses, and
 * so change which library the traced program gets. */
#include "tr_impl.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tr_module {
    char *path;                        /* file, or the main program's /proc/self/exe target */
    uint64_t base;                     /* dlpi_addr */
    uint64_t start, end;               /* mapped address range [start, end) */
    char build_id[41];                 /* hex, "" when none */
    uint64_t loaded_seq, unloaded_seq; /* 0 = not yet */
    int seen;                          /* present in the current scan */
    int dirty;                         /* not yet written (or changed since) */
    int64_t row;                       /* its row id once written, else 0 */
};

/* THREAD SAFETY NOTES: g_mods is changed under g_lock by whoever scans (the
 * writer, or a thread in dlclose); the writer reads dirty entries under it. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tr_module *g_mods;
static int g_nmods, g_cap;
static unsigned long long g_adds, g_subs; /* counters at the last scan */

void tr_build_id_of(const struct dl_phdr_info *info, char *out) {
    out[0] = '\0';
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const unsigned char *name = p + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                desc + n->n_descsz <= end) {
                unsigned len = n->n_descsz > 20 ? 20 : n->n_descsz;
                for (unsigned k = 0; k < len; k++) {
                    static const char hex[] = "0123456789abcdef";
                    out[2 * k] = hex[desc[k] >> 4];
                    out[2 * k + 1] = hex[desc[k] & 15];
                }
                out[2 * len] = '\0';
                return;
            }
            p = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    uint64_t seq = *(uint64_t *)arg;
    g_adds = info->dlpi_adds;
    g_subs = info->dlpi_subs;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        if (ph->p_vaddr < lo) lo = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > hi) hi = ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0) return 0;
    uint64_t start = info->dlpi_addr + lo, end = info->dlpi_addr + hi;
    char path[4096];
    const char *name = info->dlpi_name;
    if (!name || !*name) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
        name = path;
    }
    for (int i = 0; i < g_nmods; i++) {
        struct tr_module *m = &g_mods[i];
        if (!m->unloaded_seq && m->base == info->dlpi_addr && m->start == start && strcmp(m->path, name) == 0) {
            m->seen = 1;
            return 0;
        }
    }
    if (g_nmods == g_cap) {
        int cap = g_cap ? 2 * g_cap : 64;
        struct tr_module *n = realloc(g_mods, sizeof *n * (size_t)cap);
        if (!n) return 1;
        g_mods = n;
        g_cap = cap;
    }
    struct tr_module *m = &g_mods[g_nmods];
    memset(m, 0, sizeof *m);
    m->path = strdup(name);
    if (!m->path) return 1;
    m->base = info->dlpi_addr;
    m->start = start;
    m->end = end;
    tr_build_id_of(info, m->build_id);
    m->loaded_seq = seq;
    m->seen = m->dirty = 1;
    g_nmods++;
    return 0;
}

void tr_modules_scan(uint64_t seq) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nmods; i++) g_mods[i].seen = 0;
    dl_iterate_phdr(scan_one, &seq);
    for (int i = 0; i < g_nmods; i++)
        if (!g_mods[i].seen && !g_mods[i].unloaded_seq) {
            g_mods[i].unloaded_seq = seq;
            g_mods[i].dirty = 1;
        }
    pthread_mutex_unlock(&g_lock);
}

static int peek_counters(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    unsigned long long *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1; /* the first object is enough */
}

int tr_modules_changed(void) {
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(peek_counters, c);
    pthread_mutex_lock(&g_lock);
    int changed = c[0] != g_adds || c[1] != g_subs;
    pthread_mutex_unlock(&g_lock);
    return changed;
}

/* A fork copies the table in whatever state it was: held across the fork,
 * so the child never inherits it half-changed by a thread that is gone. */
void tr_modules_atfork_prepare(void) { pthread_mutex_lock(&g_lock); }
void tr_modules_atfork_parent(void) { pthread_mutex_unlock(&g_lock); }
void tr_modules_atfork_child(void) { pthread_mutex_init(&g_lock, NULL); }

/* A forked child starting its own trace: it has the parent's mappings, and
 * so the parent's table, but none of those modules is a row of its file.
 * Every module still loaded is written again, as loaded from the start of
 * the child's trace (its seq restarts); those the parent had unloaded are
 * gone from this process before its first event, and dropped. */
void tr_modules_new_trace(void) {
    pthread_mutex_lock(&g_lock);
    int n = 0;
    for (int i = 0; i < g_nmods; i++) {
        struct tr_module m = g_mods[i];
        if (m.unloaded_seq) {
            free(m.path);
            continue;
        }
        m.loaded_seq = 0;
        m.row = 0;
        m.dirty = 1;
        g_mods[n++] = m;
    }
    g_nmods = n;
    pthread_mutex_unlock(&g_lock);
}

/* Hands each dirty module to fn (writer side); fn returns its row id. */
void tr_modules_flush(int64_t (*fn)(void *ctx, const char *path, uint64_t base, uint64_t start, uint64_t end,
                                    const char *build_id, uint64_t loaded, uint64_t unloaded, int64_t row),
                      void *ctx) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nmods; i++) {
        struct tr_module *m = &g_mods[i];
        if (!m->dirty) continue;
        int64_t row = fn(ctx, m->path, m->base, m->start, m->end, m->build_id, m->loaded_seq, m->unloaded_seq, m->row);
        if (row > 0) {
            m->row = row;
            m->dirty = 0;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

/* ---------------------------------------------------------------- dlclose */

TR_EXPORT int dlclose(void *handle) {
    static int (*real)(void *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "dlclose");
    if (!real) return -1;
    int on = atomic_load(&g_tr.enabled);
    if (on) tr_modules_scan(atomic_load(&g_tr.next_seq));
    int rc = real(handle);
    if (on) tr_modules_scan(atomic_load(&g_tr.next_seq));
    return rc;
}
