/* Python stacks of the calling thread, when the process is CPython 3.10 to
 * 3.13 and the thread holds the GIL: (code object, line) per frame, through
 * the frame API found with dlsym(RTLD_DEFAULT) — libpython is never linked.
 * Each code object is resolved (file, qualified name, first line) once, when
 * first seen, emitted as a TR_EV_PYCODE record, and kept alive with a
 * reference so its address is never reused for another. A call site's line
 * is found once too: from 3.11, (code object, instruction offset) -> line is
 * kept in a table, since PyFrame_GetLineNumber decodes the code object's
 * line table from its start on every call. Both tables are touched only
 * with the GIL held, which serialises them. */
#include "tr_impl.h"

TR_HIDDEN const char *tr_py_version(void);

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef void PyObject;
static char g_version[32]; /* "3.11" once the frame API was found */
static struct {
    int ready; /* 1 when every symbol was found and the version fits */
    int (*is_initialized)(void);
    int (*gil_check)(void);
    void *(*this_tstate)(void);
    PyObject *(*tstate_frame)(void *);
    PyObject *(*frame_back)(PyObject *);
    PyObject *(*frame_code)(PyObject *);
    int (*frame_line)(PyObject *);
    int (*frame_lasti)(PyObject *); /* 3.11 on; NULL before: no table of lines */
    void (*incref)(PyObject *);
    void (*decref)(PyObject *);
    PyObject *(*getattr)(PyObject *, const char *);
    const char *(*as_utf8)(PyObject *);
    long (*as_long)(PyObject *);
    void (*err_fetch)(PyObject **, PyObject **, PyObject **);
    void (*err_restore)(PyObject *, PyObject *, PyObject *);
} py;

#define PY_TABLE (1u << 16) /* code objects remembered (open addressing) */
static uintptr_t *g_seen;   /* mmap'd; guarded by the GIL */
static unsigned g_nseen;

/* (code object, instruction offset) -> line, for code objects in g_seen
 * (held, so their addresses are not reused); mmap'd; guarded by the GIL. */
#define PY_SITES (1u << 16)
static struct py_site {
    uintptr_t code; /* 0: an empty slot */
    int32_t lasti;  /* the frame's last instruction, in bytes */
    int32_t line;   /* its line */
} * g_sites;
static unsigned g_nsites;

#define SYM(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

void tr_py_init(void) {
    if (py.ready) return;
    const char *(*version)(void);
    *(void **)&version = dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (!version) return; /* not a Python process (yet) */
    int major = 0, minor = 0;
    if (sscanf(version(), "%d.%d", &major, &minor) != 2 || major != 3 || minor < 10 || minor > 13) {
        tr_info("Python %d.%d: Python stacks are recorded for CPython 3.10 to 3.13 only", major, minor);
        return;
    }
    int ok = SYM(is_initialized, "Py_IsInitialized") && SYM(gil_check, "PyGILState_Check") &&
             SYM(this_tstate, "PyGILState_GetThisThreadState") && SYM(tstate_frame, "PyThreadState_GetFrame") &&
             SYM(frame_back, "PyFrame_GetBack") && SYM(frame_code, "PyFrame_GetCode") &&
             SYM(frame_line, "PyFrame_GetLineNumber") && SYM(incref, "Py_IncRef") && SYM(decref, "Py_DecRef") &&
             SYM(getattr, "PyObject_GetAttrString") && SYM(as_utf8, "PyUnicode_AsUTF8") &&
             SYM(as_long, "PyLong_AsLong") && SYM(err_fetch, "PyErr_Fetch") && SYM(err_restore, "PyErr_Restore");
    if (!ok) {
        tr_info("Python %d.%d: part of the frame API is missing; Python stacks are off", major, minor);
        return;
    }
    void *m = mmap(NULL, PY_TABLE * sizeof(uintptr_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return;
    g_seen = m;
    if (minor >= 11) { /* PyFrame_GetLasti: 3.11's; without it each line is decoded as before */
        SYM(frame_lasti, "PyFrame_GetLasti");
        void *s = py.frame_lasti ? mmap(NULL, PY_SITES * sizeof *g_sites, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                 : MAP_FAILED;
        if (s != MAP_FAILED) g_sites = s;
    }
    snprintf(g_version, sizeof g_version, "%d.%d", major, minor);
    py.ready = 1;
}

const char *tr_py_version(void) { return py.ready ? g_version : NULL; }

/* Records a code object the first time it is seen; 1 when it is held (in
 * the table), 0 when the table is full. */
static int note_code(PyObject *code) {
    uintptr_t key = (uintptr_t)code;
    unsigned h = (unsigned)((key >> 4) * 2654435761u) & (PY_TABLE - 1);
    for (unsigned i = 0; i < PY_TABLE; i++, h = (h + 1) & (PY_TABLE - 1)) {
        if (g_seen[h] == key) return 1;
        if (g_seen[h] == 0) break;
    }
    if (g_nseen >= PY_TABLE * 3 / 4) return 0; /* table full: frames still recorded, names not */
    g_seen[h] = key;
    g_nseen++;
    py.incref(code); /* never freed: its address stays unique */
    PyObject *et, *ev, *tb;
    py.err_fetch(&et, &ev, &tb); /* leave the thread's exception state as it was */
    PyObject *file = py.getattr(code, "co_filename"), *name = py.getattr(code, "co_qualname");
    if (!name) name = py.getattr(code, "co_name");
    PyObject *first = py.getattr(code, "co_firstlineno");
    struct tr_ev e = {.kind = TR_EV_PYCODE, .nint = 2, .nstr = 2};
    e.ints[0] = key;
    e.ints[1] = first ? (uint64_t)py.as_long(first) : 0;
    e.strs[0] = file ? py.as_utf8(file) : "?";
    e.strs[1] = name ? py.as_utf8(name) : "?";
    if (!e.strs[0]) e.strs[0] = "?";
    if (!e.strs[1]) e.strs[1] = "?";
    tr_ev_emit(&e);
    if (file) py.decref(file);
    if (name) py.decref(name);
    if (first) py.decref(first);
    py.err_restore(et, ev, tb);
    return 1;
}

/* The line frame f (of code, a held code object) is at: from the table of
 * call sites, or decoded once and kept there. */
static int site_line(PyObject *f, PyObject *code) {
    int lasti = py.frame_lasti(f);
    uintptr_t key = (uintptr_t)code;
    unsigned h = (unsigned)(((key >> 4) ^ ((uintptr_t)(unsigned)lasti * 40503u)) * 2654435761u) & (PY_SITES - 1);
    for (unsigned i = 0; i < PY_SITES; i++, h = (h + 1) & (PY_SITES - 1)) {
        struct py_site *s = &g_sites[h];
        if (s->code == key && s->lasti == lasti) return s->line;
        if (s->code == 0) break;
    }
    int line = py.frame_line(f);
    if (g_nsites < PY_SITES * 3 / 4 && g_sites[h].code == 0) { /* else: full, each line decoded as before */
        g_sites[h] = (struct py_site){key, lasti, line};
        g_nsites++;
    }
    return line;
}

int tr_py_held(void) { return g_tr.cfg.python && py.ready && py.is_initialized() && py.gil_check(); }

int tr_py_capture(uint64_t *pairs, int max) {
    if (!py.ready || !py.is_initialized() || !py.gil_check()) return 0;
    void *ts = py.this_tstate();
    if (!ts) return 0;
    PyObject *f = py.tstate_frame(ts); /* new reference, or NULL */
    int n = 0;
    while (f && n < max) {
        PyObject *code = py.frame_code(f); /* new reference */
        int held = note_code(code);
        pairs[2 * n] = (uint64_t)(uintptr_t)code;
        pairs[2 * n + 1] = (uint64_t)(held && g_sites ? site_line(f, code) : py.frame_line(f));
        n++;
        py.decref(code); /* the table holds its own reference */
        PyObject *back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    if (f) py.decref(f);
    return n;
}
