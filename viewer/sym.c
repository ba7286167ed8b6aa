/* Symbolizing recorded stacks after the process is gone: each return
 * address is matched to the module that held it at that event (the trace's
 * module table), and libdwfl (elfutils) reads that file's symbols and line
 * tables at the recorded load address. A file whose build-id is not the
 * recorded one is flagged, never silently misread. The module paths come
 * from the trace (untrusted): only a regular file is opened, without
 * blocking, and of at most VW_MODULE_MAX_BYTES (libelf maps it, it does not
 * read it whole). */
#include "vw.h"

#include <dlfcn.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mod {
    int64_t id;
    char *path;
    uint64_t base, start, end;
    int64_t loaded, unloaded; /* seq range, unloaded 0 = never */
    char *build_id;
    Dwfl *dwfl;  /* one per module: reported at its own base */
    int tried;   /* dwfl attempted */
    int changed; /* the file on disk is not the one that ran */
};

struct vw_sym {
    struct mod *m;
    int n;
    char cwd[4096];
    struct vw_trace *t;
    sqlite3_stmt *frame;   /* id -> parent, ip */
    sqlite3_stmt *pyframe; /* Python frame id -> parent, line, file, function; prepared when first needed */
    int pyframe_tried;
};

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

struct vw_sym *vw_sym_new(struct vw_trace *t) {
    struct vw_sym *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->t = t;
    if (!getcwd(s->cwd, sizeof s->cwd)) s->cwd[0] = '\0';
    sqlite3_stmt *st = vw_prep(t, "SELECT id, path, base, start, end, loaded_seq, COALESCE(unloaded_seq, 0), "
                                  "COALESCE(build_id, '') FROM modules ORDER BY id");
    if (st) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            struct mod *nm = realloc(s->m, sizeof *nm * (size_t)(s->n + 1));
            if (!nm) break;
            s->m = nm;
            struct mod *m = &s->m[s->n++];
            memset(m, 0, sizeof *m);
            m->id = sqlite3_column_int64(st, 0);
            m->path = strdup(sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "");
            m->base = (uint64_t)sqlite3_column_int64(st, 2);
            m->start = (uint64_t)sqlite3_column_int64(st, 3);
            m->end = (uint64_t)sqlite3_column_int64(st, 4);
            m->loaded = sqlite3_column_int64(st, 5);
            m->unloaded = sqlite3_column_int64(st, 6);
            m->build_id = strdup((const char *)sqlite3_column_text(st, 7));
        }
        sqlite3_finalize(st);
    }
    s->frame = vw_prep(t, "SELECT parent, ip FROM frames WHERE id = ?");
    return s;
}

void vw_sym_free(struct vw_sym *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        if (s->m[i].dwfl) dwfl_end(s->m[i].dwfl);
        free(s->m[i].path);
        free(s->m[i].build_id);
    }
    free(s->m);
    if (s->frame) sqlite3_finalize(s->frame);
    if (s->pyframe) sqlite3_finalize(s->pyframe);
    free(s);
}

/* The module that held ip at event seq. The tracer notices a dlopen at its
 * next commit, so a library's first events can come before the scan that
 * recorded it: with no module seen by then, the first one seen after seq
 * that covers ip is taken (it was loaded at the event: the event ran its code). */
static struct mod *module_at(struct vw_sym *s, uint64_t ip, int64_t seq) {
    struct mod *best = NULL, *later = NULL;
    for (int i = 0; i < s->n; i++) {
        struct mod *m = &s->m[i];
        if (ip < m->start || ip >= m->end) continue;
        if (m->unloaded && seq >= m->unloaded) continue;
        if (seq && seq < INT64_MAX && m->loaded > seq + 1) { /* seq from a trace: any value */
            if (!later || m->loaded < later->loaded) later = m;
            continue;
        }
        best = m; /* the latest matching load wins */
    }
    return best ? best : later;
}

#define VW_MODULE_MAX_BYTES ((int64_t)4 << 30) /* larger than any real library (libtorch_cuda.so: ~1.5 GB) */

static void open_dwfl(struct mod *m) {
    m->tried = 1;
    if (!m->path[0]) return;
    int fd = vw_open_regular(m->path, VW_MODULE_MAX_BYTES);
    if (fd < 0) return;
    m->dwfl = dwfl_begin(&callbacks);
    if (!m->dwfl) {
        close(fd);
        return;
    }
    dwfl_report_begin(m->dwfl);
    /* given a descriptor, libdwfl reads that file (and owns fd on success) instead of opening the path */
    Dwfl_Module *dm = dwfl_report_elf(m->dwfl, m->path, m->path, fd, m->base, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!dm) {
        close(fd);
        dwfl_end(m->dwfl);
        m->dwfl = NULL;
        return;
    }
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(dm, &bits, &vaddr);
    if (len > 0 && m->build_id[0]) {
        char hex[256];
        int k = 0;
        for (int i = 0; i < len && k + 2 < (int)sizeof hex; i++)
            k += snprintf(hex + k, sizeof hex - (size_t)k, "%02x", bits[i]);
        if (strcmp(hex, m->build_id) != 0) m->changed = 1;
    }
}

/* Hidden by default: frames inside the runtime, the tracer (the libtorch
 * observer included), and libc. */
static int hidden_module(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return !strncmp(b, "libdtrt.", 8) || !strncmp(b, "libdevtrace", 11) || !strncmp(b, "libc.so", 7) ||
           !strncmp(b, "ld-linux", 8);
}

/* Not the user's own code: the libraries a tensor program runs on (libdtrt,
 * libtorch and libc10 with their siblings, the C++ and C runtimes, CUDA's),
 * any shared object under the system's library directories, and code from
 * the headers of those libraries inlined into the user's program (the
 * system's include directories, and libtorch's own tree wherever it was
 * unpacked). The user's line is the first frame outside all of them. */
static int library_module(const char *path) {
    static const char *const names[] = {"libtorch",  "libc10",   "libstdc++.", "libgcc_s.", "libm.so", "libcudart.",
                                        "libcublas", "libcudnn", "libgomp.",   "libpython", "libshm.", NULL};
    static const char *const dirs[] = {"/usr/lib/", "/lib/", "/lib64/", "/usr/lib64/", "/usr/local/cuda", NULL};
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    if (hidden_module(path)) return 1;
    /* by name only a shared object: a program may be called libtorch_demo */
    for (int i = 0; names[i] && strstr(b, ".so"); i++)
        if (!strncmp(b, names[i], strlen(names[i]))) return 1;
    for (int i = 0; dirs[i]; i++)
        if (!strncmp(path, dirs[i], strlen(dirs[i]))) return 1;
    return 0;
}

static int library_source(const char *file) {
    static const char *const dirs[] = {"/usr/include/", "/usr/local/include/", "/usr/lib/gcc/", NULL};
    static const char *const parts[] = {"/include/ATen/", "/include/c10/", "/include/torch/", "/include/caffe2/", NULL};
    for (int i = 0; dirs[i]; i++)
        if (!strncmp(file, dirs[i], strlen(dirs[i]))) return 1;
    for (int i = 0; parts[i]; i++)
        if (strstr(file, parts[i])) return 1;
    return 0;
}

/* A C++ name as the report shows it: each template argument list longer
 * than a few words written "<...>", as a debugger's short form does; a
 * function template instantiated on a data loader is otherwise a few
 * hundred characters ("void train<torch::data::StatelessDataLoader<...>
 * >(unsigned long, ...)") and its parameters fall past the frame's end.
 * The '<' of "operator<", "operator<<" and "operator<=" opens no list; a
 * list that is not closed is kept as it is. */
static void cxx_short(const char *in, char *out, size_t size) {
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < size;) {
        if (in[i] == '<' && i >= 8 && !strncmp(in + i - 8, "operator", 8)) {
            while ((in[i] == '<' || in[i] == '=') && o + 1 < size) out[o++] = in[i++];
            continue;
        }
        if (in[i] != '<') {
            out[o++] = in[i++];
            continue;
        }
        size_t j = i + 1;
        int depth = 1, paren = 0;
        for (; in[j] && depth; j++) {
            if (in[j] == '(')
                paren++;
            else if (in[j] == ')')
                paren--;
            else if (!paren && in[j] == '<')
                depth++;
            else if (!paren && in[j] == '>' && in[j - 1] != '-')
                depth--;
        }
        if (depth || j - i <= 32) { /* unclosed, or short enough to read: as it is */
            out[o++] = in[i++];
            continue;
        }
        for (const char *e = "<...>"; *e && o + 1 < size; e++) out[o++] = *e;
        i = j;
    }
    out[o] = '\0';
}

/* A C++ name demangled with the C++ runtime's own __cxa_demangle, opened
 * at run time (the viewer is C and links no C++ runtime), then shortened
 * (cxx_short); the mangled name stays when there is none. A name that is
 * not mangled (DWARF's name of an inlined template) is shortened alone. */
static void demangle(char *name, size_t size, const char *from) {
    static char *(*fn)(const char *, char *, size_t *, int *);
    static int tried;
    if (strncmp(from, "_Z", 2) != 0) {
        cxx_short(from, name, size);
        return;
    }
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h) *(void **)&fn = dlsym(h, "__cxa_demangle");
    }
    int status = -1;
    char *out = fn ? fn(from, NULL, NULL, &status) : NULL;
    if (out && status == 0)
        cxx_short(out, name, size);
    else
        snprintf(name, size, "%s", from);
    free(out);
}

const char *vw_sym_relative(struct vw_sym *s, const char *file) {
    size_t n = strlen(s->cwd);
    if (n && !strncmp(file, s->cwd, n) && file[n] == '/') return file + n + 1;
    return file;
}

/* devtrace's own adapter (its recorder's frames, innermost on the stack of every event it records). */
int vw_py_file_is_adapter(const char *file) { return strstr(file, "/devtrace_torch/") != NULL; }

/* A Python file that is not the program's own: an installed package (torch
 * and every other one: site-packages, dist-packages), the standard library,
 * devtrace's own adapter, or code without a file (<frozen importlib...>). */
int vw_py_file_is_library(const char *file) {
    if (file[0] == '<') return strncmp(file, "<frozen", 7) == 0;
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") || vw_py_file_is_adapter(file)) return 1;
    const char *b = strrchr(file, '/');
    if (b && !strcmp(b, "/sitecustomize.py") && strstr(file, "/adapters/pytorch/")) return 1;
    /* the standard library: .../lib/python3.N/<file>, not below a site dir (above) */
    const char *p = strstr(file, "/lib/python3");
    if (p) {
        p += strlen("/lib/python3");
        if (*p == '.') p++;
        while (*p >= '0' && *p <= '9') p++;
        if (*p == '/') return 1;
    }
    return 0;
}

int vw_sym_py_frame(struct vw_sym *s, int64_t id, struct vw_frame *f, int64_t *parent) {
    if (!id) return 0;
    if (!s->pyframe_tried) {
        s->pyframe_tried = 1;
        s->pyframe = vw_prep(s->t, "SELECT p.parent, p.line, fs.text, ns.text FROM py_frames p LEFT JOIN py_code k "
                                   "ON k.id = p.code LEFT JOIN strings fs ON fs.id = k.file LEFT JOIN strings ns ON "
                                   "ns.id = k.name WHERE p.id = ?");
    }
    sqlite3_stmt *st = s->pyframe;
    if (!st) return 0;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) return 0;
    memset(f, 0, sizeof *f);
    const char *file = sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "?";
    snprintf(f->file, sizeof f->file, "%s", vw_sym_relative(s, file));
    f->hidden = vw_py_file_is_library(file);
    f->line = sqlite3_column_int(st, 1);
    snprintf(f->function, sizeof f->function, "%s",
             sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "?");
    snprintf(f->module, sizeof f->module, "python");
    f->python = 1;
    if (parent) *parent = sqlite3_column_int64(st, 0);
    return 1;
}

/* An event's site: its innermost Python frame of the program's own (not of
 * torch, another package or Python's library), else its innermost Python
 * frame, else its innermost native frame of the program's own. */
int vw_sym_event_site(struct vw_sym *s, int64_t stack, int64_t pystack, int64_t seq, struct vw_frame *f) {
    if (pystack && vw_sym_py_frame(s, pystack, f, NULL)) {
        struct vw_frame g;
        int64_t id = pystack, next;
        for (int depth = 0; id && depth < 256 && vw_sym_py_frame(s, id, &g, &next); depth++, id = next)
            if (!g.hidden) {
                *f = g;
                return 1;
            }
        return 1;
    }
    return stack ? vw_sym_site(s, stack, seq, f) : 0;
}

void vw_sym_frame(struct vw_sym *s, uint64_t ip, int64_t seq, struct vw_frame *f) {
    memset(f, 0, sizeof *f);
    f->ip = ip;
    struct mod *m = module_at(s, ip, seq);
    if (!m) {
        snprintf(f->module, sizeof f->module, "?");
        return;
    }
    const char *b = strrchr(m->path, '/');
    snprintf(f->module, sizeof f->module, "%s", b ? b + 1 : m->path);
    f->offset = ip - m->base;
    f->hidden = hidden_module(m->path);
    f->library = library_module(m->path);
    if (!m->tried) open_dwfl(m);
    f->changed = m->changed;
    if (!m->dwfl || m->changed) return;
    Dwarf_Addr pc = ip - 1; /* a return address: the call is just before it */
    Dwfl_Module *dm = dwfl_addrmodule(m->dwfl, pc);
    if (!dm) return;
    const char *fn = dwfl_module_addrname(dm, pc);
    if (fn) demangle(f->function, sizeof f->function, fn);
    Dwfl_Line *line = dwfl_module_getsrc(dm, pc);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file) {
        snprintf(f->file, sizeof f->file, "%s", vw_sym_relative(s, file));
        f->line = lineno;
        f->library |= library_source(file);
    }
}

/* The frames at ip: those of functions the compiler inlined there,
 * innermost first (marked inlined), then the real one; at least 1. The
 * innermost location comes from the line table, each outer one from the
 * inlined call's DW_AT_call_file / DW_AT_call_line.
 *
 * dwarf_getscopes alone is not enough: past the innermost inlined
 * subroutine it continues with the scopes of that function's abstract
 * definition, so a helper inlined into a helper inlined into main loses
 * the outer helper and main's line. As eu-addr2line -i does, the innermost
 * scope's concrete parents (dwarf_getscopes_die) give every nested
 * inlined_subroutine on the way out. */
int vw_sym_frames(struct vw_sym *s, uint64_t ip, int64_t seq, struct vw_frame *out, int max) {
    if (max < 1) return 0;
    vw_sym_frame(s, ip, seq, &out[0]);
    struct mod *m = module_at(s, ip, seq);
    if (!m || !m->dwfl || m->changed || max < 2) return 1;
    Dwarf_Addr pc = ip - 1, bias = 0;
    Dwfl_Module *dm = dwfl_addrmodule(m->dwfl, pc);
    Dwarf_Die *cu = dm ? dwfl_module_addrdie(dm, pc, &bias) : NULL;
    Dwarf_Die *scopes = NULL;
    int ns = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
    if (ns > 0) {
        Dwarf_Die innermost = scopes[0];
        free(scopes);
        scopes = NULL;
        ns = dwarf_getscopes_die(&innermost, &scopes);
    }
    struct vw_frame real = out[0];
    int n = 0;
    for (int i = 0; i < ns && n < max - 1; i++) {
        if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
        struct vw_frame *f = &out[n++];
        *f = real;
        f->inlined = 1;
        Dwarf_Attribute a;
        const char *name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &a));
        if (!name) name = dwarf_diename(&scopes[i]);
        demangle(f->function, sizeof f->function, name ? name : "?");
        /* the caller's location: where this inlined call was made */
        Dwarf_Word line = 0, file = 0;
        Dwarf_Files *files;
        size_t nfiles;
        const char *path = NULL;
        if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &file) == 0 &&
            dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && file < nfiles)
            path = dwarf_filesrc(files, file, NULL, NULL);
        if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &line) != 0) line = 0;
        if (path) snprintf(real.file, sizeof real.file, "%s", vw_sym_relative(s, path));
        real.line = (int)line;
        real.library = library_module(m->path) || (path && library_source(path));
    }
    free(scopes);
    out[n++] = real;
    return n;
}

/* Steps from trie node *stack to its ip and parent; 0 at the end. */
static int next_frame(struct vw_sym *s, int64_t *stack, uint64_t *ip) {
    if (!*stack || !s->frame) return 0;
    sqlite3_reset(s->frame);
    sqlite3_bind_int64(s->frame, 1, *stack);
    if (sqlite3_step(s->frame) != SQLITE_ROW) return 0;
    *stack = sqlite3_column_type(s->frame, 0) == SQLITE_NULL ? 0 : sqlite3_column_int64(s->frame, 0);
    *ip = (uint64_t)sqlite3_column_int64(s->frame, 1);
    return 1;
}

int vw_sym_stack(struct vw_sym *s, int64_t stack, int64_t seq, struct vw_frame *out, int max) {
    int n = 0;
    uint64_t ip;
    while (n < max && next_frame(s, &stack, &ip)) n += vw_sym_frames(s, ip, seq, out + n, max - n);
    return n;
}

int vw_sym_site(struct vw_sym *s, int64_t stack, int64_t seq, struct vw_frame *site) {
    /* frames are symbolized only up to the first one of the user's code with
     * a source line. Fallbacks, best first: the first of the user's code
     * without one, the first not hidden with one, the first not hidden. */
    struct vw_frame f[16], best[3];
    int have[3] = {0, 0, 0};
    uint64_t ip;
    memset(site, 0, sizeof *site);
    while (next_frame(s, &stack, &ip)) {
        int n = vw_sym_frames(s, ip, seq, f, 16);
        for (int i = 0; i < n; i++) {
            if (f[i].hidden) continue;
            if (!f[i].library && f[i].file[0]) {
                *site = f[i];
                return 1;
            }
            int rank = !f[i].library ? 0 : f[i].file[0] ? 1 : 2;
            if (!have[rank]) best[rank] = f[i], have[rank] = 1;
        }
    }
    for (int r = 0; r < 3; r++)
        if (have[r]) {
            *site = best[r];
            return 1;
        }
    return 0;
}

const char *vw_site_str(const struct vw_frame *f, char *buf, size_t size) {
    if (f->file[0])
        snprintf(buf, size, "%s:%d%s%s%s", f->file, f->line, f->function[0] ? " (" : "", f->function,
                 f->function[0] ? ")" : "");
    else if (f->module[0])
        snprintf(buf, size, "%s+0x%llx%s%s%s", f->module, (unsigned long long)f->offset, f->function[0] ? " (" : "",
                 f->function, f->function[0] ? ")" : "");
    else
        snprintf(buf, size, "(unknown site)");
    if (f->changed) {
        size_t n = strlen(buf);
        snprintf(buf + n, size - n, " [module changed since the trace: not symbolized]");
    }
    return buf;
}
