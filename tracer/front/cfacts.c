/* Source facts for native programs (C and C++): at the first device mismatch of a process, the DWARF of
 * the program's own modules names its source files, languages, functions and the locals each line
 * declares, and each of those files' text gives its statements (span to the ';' at depth 0, indentation,
 * blocks and loops, a plain assignment's target, the calls and device expressions of the program's
 * moves); all written as the producers' facts are (tr_source_fact) under the keys of common/trace_schema.h, once the op
 * that failed has ended (its end, the error probe or the C++ throw that follows the mismatch on that thread: the writer
 * keeps an open op's row only so long). It does not evaluate variable locations, nor read system headers or devtrace's
 * own libraries. */
#include "front.h"

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "op_families.h"
#include "trace_schema.h"

#if defined(__has_include)
#if __has_include(<elfutils/libdw.h>)
#include <dwarf.h>
#include <elfutils/libdw.h>
#define CF_HAVE_LIBDW 1
#endif
#endif

#define CF_MAX_FILES 256        /* source files written per process */
#define CF_MAX_BYTES (4u << 20) /* a larger source file is skipped */

/* ---------------------------------------------------------------- what DWARF says */

struct cf_local {
    const char *file; /* as the line table names it (owned by cf_files) */
    int line;         /* DW_AT_decl_line */
    char name[64];
    int device;    /* its type is a device (dt_device, torch::Device) */
    int module;    /* a module: 1 a torch::nn::Module, 2 a ModuleHolder (torch::nn::Linear), 3 libdtrt's dt_module * */
    int optimizer; /* its type is a pointer to libdtrt's optimizer (dt_optimizer *) */
    int param;     /* a function's parameter (DW_TAG_formal_parameter): declared by its header, not a statement */
};

struct cf_func {
    const char *file;
    int line; /* DW_AT_decl_line of the definition */
    char name[128];
};

struct cf_state {
    char *files[CF_MAX_FILES];  /* program source files, malloc'd */
    char lang[CF_MAX_FILES][8]; /* "c", "c++" */
    int nfiles;
    struct cf_local *locals;
    int nlocals, caplocals;
    struct cf_func *funcs;
    int nfuncs, capfuncs;
};

/* A file of the program rather than of the system or a library it installed. */
static int program_file(const char *path) {
    static const char *const sys[] = {"/usr/", "/lib/", "/lib64/", "/opt/", "<"};
    for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
        if (!strncmp(path, sys[i], strlen(sys[i]))) return 0;
    const char *dot = strrchr(path, '.');
    static const char *const ext[] = {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".C", ".cu", ".cuh"};
    for (size_t i = 0; dot && i < sizeof ext / sizeof ext[0]; i++)
        if (!strcmp(dot, ext[i])) return 1;
    return 0;
}

static int file_index(struct cf_state *s, const char *path) {
    for (int i = 0; i < s->nfiles; i++)
        if (!strcmp(s->files[i], path)) return i;
    return -1;
}

/* The program file `path`, added once; NULL when it is not one or the table is full. */
static const char *add_file(struct cf_state *s, const char *path, const char *lang) {
    if (!path || !program_file(path)) return NULL;
    int i = file_index(s, path);
    if (i >= 0) return s->files[i];
    if (s->nfiles >= CF_MAX_FILES || !(s->files[s->nfiles] = strdup(path))) return NULL;
    snprintf(s->lang[s->nfiles], sizeof s->lang[0], "%s", lang);
    return s->files[s->nfiles++];
}

#ifdef CF_HAVE_LIBDW
/* libdw, opened at run time as libunwind is: a traced program never links it. */
#define CF_DW(X)                                                                                                       \
    X(dwarf_begin)                                                                                                     \
    X(dwarf_end)                                                                                                       \
    X(dwarf_nextcu)                                                                                                    \
    X(dwarf_offdie)                                                                                                    \
    X(dwarf_getsrclines)                                                                                               \
    X(dwarf_onesrcline)                                                                                                \
    X(dwarf_linesrc)                                                                                                   \
    X(dwarf_child)                                                                                                     \
    X(dwarf_siblingof)                                                                                                 \
    X(dwarf_tag)                                                                                                       \
    X(dwarf_attr_integrate)                                                                                            \
    X(dwarf_formstring)                                                                                                \
    X(dwarf_formref_die)                                                                                               \
    X(dwarf_decl_line)                                                                                                 \
    X(dwarf_decl_file)                                                                                                 \
    X(dwarf_srclang)                                                                                                   \
    X(dwarf_hasattr)
#define CF_DW_PTR(f) static __typeof__(&f) p_##f;
CF_DW(CF_DW_PTR)

static int dw_open(void) {
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
#define CF_DW_SYM(f)                                                                                                   \
    if (!(*(void **)&p_##f = dlsym(h, #f))) return 0;
    CF_DW(CF_DW_SYM)
    return 1;
}

static const char *die_name(Dwarf_Die *d) {
    Dwarf_Attribute a;
    return p_dwarf_attr_integrate(d, DW_AT_name, &a) ? p_dwarf_formstring(&a) : NULL;
}

/* A variable's type past const and volatile (and, with pointer, past one pointer), into *t; 0 when none. */
static int var_type(Dwarf_Die *var, int pointer, Dwarf_Die *t) {
    Dwarf_Attribute a;
    if (!p_dwarf_attr_integrate(var, DW_AT_type, &a) || !p_dwarf_formref_die(&a, t)) return 0;
    for (int i = 0; i < 4 && (p_dwarf_tag(t) == DW_TAG_const_type || p_dwarf_tag(t) == DW_TAG_volatile_type); i++)
        if (!p_dwarf_attr_integrate(t, DW_AT_type, &a) || !p_dwarf_formref_die(&a, t)) return 0;
    if (!pointer) return 1;
    if (p_dwarf_tag(t) != DW_TAG_pointer_type) return 0;
    return var_type(t, 0, t);
}

/* Whether a variable's type, past const and volatile, is named as a device type. */
static int device_type(Dwarf_Die *var) {
    Dwarf_Die t;
    const char *n = var_type(var, 0, &t) ? die_name(&t) : NULL;
    return n && (!strcmp(n, "dt_device") || !strcmp(n, "Device"));
}

/* Whether a variable is a pointer to the type named `type` (libdtrt's dt_module, dt_optimizer). */
static int pointer_to(Dwarf_Die *var, const char *type) {
    Dwarf_Die t;
    const char *n = var_type(var, 1, &t) ? die_name(&t) : NULL;
    return n && !strcmp(n, type);
}

/* Whether the type t (past qualifiers and typedefs) is a libtorch module: 2 when it is, or derives from, a
 * torch::nn::ModuleHolder (moved with ->to), 1 when it derives from torch::nn::Module (moved with .to). */
static int module_class(Dwarf_Die *t, int depth) {
    Dwarf_Attribute a;
    for (int i = 0; i < 8; i++) {
        int tag = p_dwarf_tag(t);
        if (tag != DW_TAG_const_type && tag != DW_TAG_volatile_type && tag != DW_TAG_typedef) break;
        if (!p_dwarf_attr_integrate(t, DW_AT_type, &a) || !p_dwarf_formref_die(&a, t)) return 0;
    }
    if (p_dwarf_tag(t) != DW_TAG_class_type && p_dwarf_tag(t) != DW_TAG_structure_type) return 0;
    const char *n = die_name(t);
    if (n && !strncmp(n, "ModuleHolder<", 13)) return 2;
    if (depth > 0 && n && !strcmp(n, "Module")) return 1;
    Dwarf_Die c, b;
    if (depth > 8 || p_dwarf_child(t, &c) != 0) return 0;
    int found = 0;
    do
        if (p_dwarf_tag(&c) == DW_TAG_inheritance && p_dwarf_attr_integrate(&c, DW_AT_type, &a) &&
            p_dwarf_formref_die(&a, &b))
            found = module_class(&b, depth + 1);
    while (!found && p_dwarf_siblingof(&c, &c) == 0);
    return found;
}

static int module_type(Dwarf_Die *var) {
    Dwarf_Attribute a;
    Dwarf_Die t;
    return p_dwarf_attr_integrate(var, DW_AT_type, &a) && p_dwarf_formref_die(&a, &t) ? module_class(&t, 0) : 0;
}

/* The functions and variables under die, in the program's files. */
static void walk(struct cf_state *s, Dwarf_Die *die, int depth) {
    Dwarf_Die c;
    if (depth > 48 || p_dwarf_child(die, &c) != 0) return;
    do {
        int tag = p_dwarf_tag(&c), line = 0;
        int param = tag == DW_TAG_formal_parameter && p_dwarf_tag(die) == DW_TAG_subprogram &&
                    !p_dwarf_hasattr(die, DW_AT_declaration);
        if (tag == DW_TAG_variable || tag == DW_TAG_subprogram || param) {
            const char *name = die_name(&c), *file = p_dwarf_decl_file(&c);
            int fi = file ? file_index(s, file) : -1;
            if (name && fi >= 0 && p_dwarf_decl_line(&c, &line) == 0 && line > 0) {
                if ((tag == DW_TAG_variable || param) && s->nlocals < 65536) {
                    if (s->nlocals == s->caplocals) {
                        int cap = s->caplocals ? 2 * s->caplocals : 256;
                        struct cf_local *n = realloc(s->locals, sizeof *n * (size_t)cap);
                        if (!n) return;
                        s->locals = n, s->caplocals = cap;
                    }
                    struct cf_local *l = &s->locals[s->nlocals++];
                    l->file = s->files[fi], l->line = line, l->device = device_type(&c);
                    l->module = pointer_to(&c, "dt_module") ? 3 : module_type(&c);
                    l->optimizer = pointer_to(&c, "dt_optimizer");
                    l->param = param;
                    snprintf(l->name, sizeof l->name, "%s", name);
                } else if (tag == DW_TAG_subprogram && !p_dwarf_hasattr(&c, DW_AT_declaration) && s->nfuncs < 65536) {
                    if (s->nfuncs == s->capfuncs) {
                        int cap = s->capfuncs ? 2 * s->capfuncs : 64;
                        struct cf_func *n = realloc(s->funcs, sizeof *n * (size_t)cap);
                        if (!n) return;
                        s->funcs = n, s->capfuncs = cap;
                    }
                    struct cf_func *f = &s->funcs[s->nfuncs++];
                    f->file = s->files[fi], f->line = line;
                    snprintf(f->name, sizeof f->name, "%s", name);
                }
            }
        }
        if (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine ||
            tag == DW_TAG_namespace || tag == DW_TAG_structure_type || tag == DW_TAG_class_type)
            walk(s, &c, depth + 1);
    } while (p_dwarf_siblingof(&c, &c) == 0);
}

/* The program files of one module (those its line table names) and what its DWARF says of them. */
static void read_module(struct cf_state *s, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    Dwarf *dw = p_dwarf_begin(fd, DWARF_C_READ);
    if (dw) {
        Dwarf_Off off = 0, next;
        size_t hsize;
        for (int pass = 0; pass < 2; pass++) /* files first, so a header's inline functions find theirs */
            for (off = 0; p_dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0; off = next) {
                Dwarf_Die cu;
                if (!p_dwarf_offdie(dw, off + hsize, &cu)) continue;
                int lang = p_dwarf_srclang(&cu);
                const char *ln = lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_11 ||
                                         lang == DW_LANG_C_plus_plus_14 || lang == DW_LANG_C_plus_plus_03
                                     ? DT_FACT_LANG_CXX
                                     : DT_FACT_LANG_C;
                if (pass == 1) {
                    walk(s, &cu, 0);
                    continue;
                }
                Dwarf_Lines *lines;
                size_t n;
                if (p_dwarf_getsrclines(&cu, &lines, &n) != 0) continue;
                const char *last = NULL;
                for (size_t i = 0; i < n; i++) {
                    Dwarf_Line *l = p_dwarf_onesrcline(lines, i);
                    const char *f = l ? p_dwarf_linesrc(l, NULL, NULL) : NULL;
                    if (f && f != last) add_file(s, f, ln), last = f;
                }
            }
        p_dwarf_end(dw);
    }
    close(fd);
}

/* Modules to read: the main program and libraries outside the system's directories, never devtrace's. */
static int each_module(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    char **paths = data;
    const char *name = info->dlpi_name;
    static const char *const own[] = {"libdtrt", "libdevtrace", "_probes", "libdevtrace_torch", "linux-vdso"};
    int n = 0;
    while (n < 64 && paths[n]) n++;
    if (n >= 63) return 1;
    if (!name || !name[0]) { /* the main program */
        paths[n] = strdup("/proc/self/exe");
        return 0;
    }
    if (!program_file(name) && (!strncmp(name, "/usr/", 5) || !strncmp(name, "/lib", 4) || strstr(name, "-packages/")))
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strncmp(base, own[i], strlen(own[i]))) return 0;
    paths[n] = strdup(name);
    return 0;
}
#endif

/* ---------------------------------------------------------------- what the text says */

struct cf_block {
    int first, last; /* its header's first line (the '{' line for a bare block), the '}' line */
    int hdr_last;    /* the line of its '{' */
    int parent;      /* enclosing block, -1 at file scope */
    int loop;        /* a for, while or do body */
    int func;        /* a function's body (its header holds a '(' and it is at file or namespace scope) */
    char fname[128]; /* then the function's name as the header writes it */
    char body_indent[64];
    int has_body;
};

struct cf_stmt {
    int first, last; /* lines */
    int start, end;  /* byte offsets in the text: [start, end) */
    int block;       /* the block it is in */
    int own;         /* for a header, the block it opens; else -1 */
};

struct cf_text {
    const char *src; /* the file */
    char *code;      /* the file with comments, strings' contents and preprocessor lines blanked */
    int len;
    int *line_at; /* line of each byte, 1-based */
    int nlines;
    struct cf_block *blocks;
    int nblocks;
    struct cf_stmt *stmts;
    int nstmts;
};

/* Blanks comments, the insides of string and character literals (their quotes kept) and preprocessor lines
 * with spaces, so that brackets and semicolons in them count for nothing. */
static void blank(struct cf_text *t) {
    char *c = t->code;
    int i = 0, bol = 1;
    while (i < t->len) {
        if (bol && (c[i] == ' ' || c[i] == '\t')) {
            i++;
            continue;
        }
        if (bol && c[i] == '#') { /* a directive, with its continuation lines */
            while (i < t->len && c[i] != '\n') {
                if (c[i] == '\\' && i + 1 < t->len && c[i + 1] == '\n') c[i++] = ' ';
                c[i++] = ' ';
            }
            continue;
        }
        bol = c[i] == '\n';
        if (c[i] == '/' && i + 1 < t->len && c[i + 1] == '/') {
            while (i < t->len && c[i] != '\n') c[i++] = ' ';
        } else if (c[i] == '/' && i + 1 < t->len && c[i + 1] == '*') {
            c[i++] = ' ', c[i++] = ' ';
            while (i < t->len && !(c[i] == '*' && i + 1 < t->len && c[i + 1] == '/')) {
                if (c[i] != '\n') c[i] = ' ';
                i++;
            }
            if (i < t->len) c[i++] = ' ', c[i++] = ' ';
        } else if (c[i] == '"' || c[i] == '\'') {
            char q = c[i++];
            while (i < t->len && c[i] != q && c[i] != '\n') {
                if (c[i] == '\\' && i + 1 < t->len) c[i++] = ' ';
                c[i++] = q == '"' ? '_' : ' ';
            }
            i++;
        } else {
            i++;
        }
    }
}

static int is_ident(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* Whether the text at [p, end) starts with keyword kw as a whole word. */
static int keyword(const char *p, const char *end, const char *kw) {
    size_t n = strlen(kw);
    return (size_t)(end - p) >= n && !strncmp(p, kw, n) && (p + n == end || !is_ident(p[n]));
}

static void indent_of(const struct cf_text *t, int line, char *out, size_t size) {
    int off = 0;
    for (int l = 1; l < line && off < t->len; off++)
        if (t->src[off] == '\n') l++;
    size_t n = 0;
    while (off + (int)n < t->len && (t->src[off + n] == ' ' || t->src[off + n] == '\t') && n + 1 < size) n++;
    memcpy(out, t->src + off, n);
    out[n] = 0;
}

/* Splits the text into statements and blocks. 0, or -1 when out of memory. */
static int split(struct cf_text *t) {
    const char *c = t->code;
    int paren = 0, init = 0, start = -1, cur = -1, cap_b = 0, cap_s = 0;
    char prev = 0; /* the last significant character */
    for (int i = 0; i < t->len; i++) {
        char ch = c[i];
        if (isspace((unsigned char)ch)) continue;
        if (start < 0) {
            start = i;
            if (cur >= 0 && !t->blocks[cur].has_body && ch != '}') {
                indent_of(t, t->line_at[i], t->blocks[cur].body_indent, sizeof t->blocks[cur].body_indent);
                t->blocks[cur].has_body = 1;
            }
        }
        int end_stmt = 0, open = 0;
        if (ch == '(' || ch == '[')
            paren++;
        else if ((ch == ')' || ch == ']') && paren > 0)
            paren--;
        else if (ch == '{' && (paren > 0 || init > 0 || prev == '=' || prev == ','))
            init++;
        else if (ch == '}' && init > 0)
            init--;
        else if (ch == '{')
            open = 1;
        else if (ch == '}') {
            if (cur >= 0) {
                t->blocks[cur].last = t->line_at[i];
                cur = t->blocks[cur].parent;
            }
            start = -1, paren = 0, prev = ch;
            continue;
        } else if (ch == ';' && paren == 0 && init == 0)
            end_stmt = 1;
        prev = ch;
        if (!end_stmt && !open) continue;
        if (open) {
            if (t->nblocks == cap_b) {
                cap_b = cap_b ? 2 * cap_b : 64;
                struct cf_block *n = realloc(t->blocks, sizeof *n * (size_t)cap_b);
                if (!n) return -1;
                t->blocks = n;
            }
            struct cf_block *b = &t->blocks[t->nblocks];
            memset(b, 0, sizeof *b);
            b->first = t->line_at[start], b->hdr_last = t->line_at[i], b->last = t->line_at[i], b->parent = cur;
            const char *h = c + start, *he = c + i;
            b->loop = keyword(h, he, "for") || keyword(h, he, "while") || keyword(h, he, "do");
            int outer = 1;
            for (int k = cur; k >= 0 && outer; k = t->blocks[k].parent) outer = !t->blocks[k].func;
            const char *paren_at = memchr(h, '(', (size_t)(he - h));
            if (outer && paren_at && start != i && !keyword(h, he, "if") && !keyword(h, he, "switch") && !b->loop) {
                const char *e = paren_at;
                while (e > h && isspace((unsigned char)e[-1])) e--;
                const char *s = e;
                while (s > h && (is_ident(s[-1]) || s[-1] == ':' || s[-1] == '~')) s--;
                if (s < e) {
                    b->func = 1;
                    snprintf(b->fname, sizeof b->fname, "%.*s", (int)(e - s), s);
                }
            }
        }
        if (start != i || end_stmt) { /* not a bare block's brace */
            if (t->nstmts == cap_s) {
                cap_s = cap_s ? 2 * cap_s : 256;
                struct cf_stmt *n = realloc(t->stmts, sizeof *n * (size_t)cap_s);
                if (!n) return -1;
                t->stmts = n;
            }
            struct cf_stmt *p = t->nstmts ? &t->stmts[t->nstmts - 1] : NULL;
            int first = t->line_at[start], last = t->line_at[i];
            if (end_stmt && start == i) {
                /* an empty statement (after a struct's '}') */
            } else if (end_stmt && p && p->own < 0 && p->block == cur && p->last == first) {
                p->last = last, p->end = i + 1; /* two statements on one line: one span */
            } else {
                t->stmts[t->nstmts++] = (struct cf_stmt){first, last, start, i + 1, cur, open ? t->nblocks : -1};
            }
        }
        if (open) cur = t->nblocks++;
        start = -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- facts */

static void fact(const char *file, int line, const char *key, const char *value) {
    if (tr_in_emit) return; /* never inside a record being built: facts are written between probes */
    tr_in_emit = 1;
    tr_source_fact(file, line, key, value);
    tr_in_emit = 0;
}

/* A copy of [p, e) with runs of whitespace made one space and the ends trimmed. */
static void squeeze(const char *p, const char *e, char *out, size_t size) {
    size_t n = 0;
    int sp = 0;
    while (p < e && isspace((unsigned char)*p)) p++;
    while (e > p && isspace((unsigned char)e[-1])) e--;
    for (; p < e && n + 1 < size; p++) {
        if (isspace((unsigned char)*p)) {
            sp = 1;
            continue;
        }
        if (sp && n + 2 < size) out[n++] = ' ';
        sp = 0;
        out[n++] = *p;
    }
    out[n] = 0;
}

/* The end of the bracketed group opening at p ('(' or '[' or '{'), or NULL. */
static const char *close_of(const char *p, const char *e) {
    int d = 0;
    for (; p < e; p++) {
        if (*p == '(' || *p == '[' || *p == '{') d++;
        if ((*p == ')' || *p == ']' || *p == '}') && --d == 0) return p;
    }
    return NULL;
}

/* The bracket that opens the one closing at p, scanning back to b; NULL if none. */
static const char *open_of(const char *p, const char *b) {
    int d = 0;
    for (; p >= b; p--) {
        if (*p == ')' || *p == ']' || *p == '}') d++;
        if ((*p == '(' || *p == '[' || *p == '{') && --d == 0) return p;
    }
    return NULL;
}

static int known_device(struct cf_state *s, const char *file, const char *name) {
    for (int i = 0; i < s->nlocals; i++)
        if (s->locals[i].device && s->locals[i].file == file && !strcmp(s->locals[i].name, name)) return 1;
    return 0;
}

static void add_name(char *list, size_t size, const char *name) {
    size_t n = strlen(name), at = strlen(list);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p++)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return;
    if (at + n + 2 < size) snprintf(list + at, size - at, "%s%s", at ? "," : "", name);
}

/* The calls of one statement: each call's facts on the line it starts, and the device expressions and
 * program's own move wrappers they show. whole: the offset of the call that is the statement's whole value
 * (or -1). */
static void calls_of(struct cf_state *s, const struct cf_text *t, const char *file, const struct cf_stmt *st, int whole,
                     int cxx) {
    const char *c = t->code, *e = c + st->end;
    static const char *const kw[] = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case"};
    for (const char *p = c + st->start; p < e; p++) {
        if (*p != '(' || p == c + st->start) continue;
        const char *q = p;
        while (q > c + st->start && isspace((unsigned char)q[-1])) q--;
        const char *fe = q;
        for (;;) {
            if (q > c + st->start && (is_ident(q[-1]) || q[-1] == '.' || q[-1] == ':'))
                q--;
            else if (q - 1 > c + st->start && q[-1] == '>' && q[-2] == '-')
                q -= 2;
            else if (q > c + st->start && q < fe && (*q == '.' || *q == '-') && q[-1] == ')' &&
                     open_of(q - 1, c + st->start) > c + st->start)
                q = open_of(q - 1, c + st->start); /* a method of a call's result: torch::tensor(...).view */
            else
                break;
        }
        if (q == fe || !is_ident(fe[-1])) continue;
        int skip = 0;
        for (size_t k = 0; k < sizeof kw / sizeof kw[0]; k++)
            skip |= keyword(q, fe, kw[k]) && (size_t)(fe - q) == strlen(kw[k]);
        if (skip || isdigit((unsigned char)*q)) continue;
        const char *close = close_of(p, e);
        if (!close) continue;
        char func[256], args[1024], dev[128] = "", text[160], v[1400];
        squeeze(q, fe, func, sizeof func);
        /* its arguments, split at top-level commas; from the original text */
        const char *o = t->src;
        int nargs = 0;
        char arg[8][160];
        const char *a = p + 1;
        for (const char *r = p + 1; r <= close && nargs < 8; r++) {
            if (*r == '(' || *r == '[' || *r == '{') {
                const char *cl = close_of(r, close + 1);
                if (cl) r = cl;
                continue;
            }
            if (*r == ',' || r == close) {
                squeeze(o + (a - c), o + (r - c), arg[nargs], sizeof arg[0]);
                if (arg[nargs][0] || nargs) nargs++;
                a = r + 1;
            }
        }
        args[0] = 0;
        snprintf(args, sizeof args, "%s", func);
        for (int k = 0; k < nargs; k++) {
            size_t at = strlen(args);
            snprintf(args + at, sizeof args - at, "\t%.150s", arg[k]);
        }
        const char *base = func + strlen(func);
        while (base > func && is_ident(base[-1])) base--;
        int move = (!strcmp(base, "dt_to") || !strcmp(base, "dt_module_to")) && nargs == 2;
        int line = t->line_at[q - c];
        if (move) {
            fact(file, t->line_at[p - c], DT_FACT_DEVICE_EXPR, arg[1]);
            /* the program's own wrapper of its moves: move_wrap WRAP when the move is WRAP's only argument */
            const char *w = q;
            while (w > c + st->start && isspace((unsigned char)w[-1])) w--;
            char wrap[64] = "-";
            if (w > c + st->start && w[-1] == '(') {
                const char *wc = close_of(w - 1, e), *we = w - 1, *ws;
                while (we > c + st->start && isspace((unsigned char)we[-1])) we--;
                for (ws = we; ws > c + st->start && is_ident(ws[-1]); ws--) {
                }
                const char *after = close + 1;
                while (after < e && isspace((unsigned char)*after)) after++;
                if (ws < we && wc && after == wc) snprintf(wrap, sizeof wrap, "%.*s", (int)(we - ws), ws);
            }
            if (!strcmp(base, "dt_to")) fact(file, line, DT_FACT_MOVE_WRAP, wrap);
        } else if (cxx && !strcmp(base, "to") && base > func && base[-1] == '.' && nargs >= 1 &&
                   !strstr(arg[0], "::k") && !strstr(arg[0], "dtype")) {
            fact(file, line, DT_FACT_DEVICE_EXPR, arg[0]);
        } else if (cxx && (!strcmp(func, "torch::Device") || !strcmp(func, "c10::Device"))) {
            squeeze(o + (q - c), o + (close + 1 - c), text, sizeof text);
            fact(file, line, DT_FACT_DEVICE_EXPR, text);
        } else {
            for (int k = 0; k < nargs && !dev[0]; k++)
                if (known_device(s, file, arg[k])) snprintf(dev, sizeof dev, "%.120s", arg[k]);
            if (dev[0]) fact(file, line, DT_FACT_DEVICE_EXPR, dev);
        }
        int end_col = 0;
        for (const char *b = close; b > c && b[-1] != '\n'; b--) end_col++;
        /* the whole value ends the statement: in torch::tensor(...).view(...) the receiver's call is a temporary */
        const char *after = close + 1;
        while (after < e && isspace((unsigned char)*after)) after++;
        snprintf(v, sizeof v, "%s\t%s\t%d\t%d\t%d\t%d", func, dev, q - c != whole || after != e - 1,
                 t->line_at[close - c], end_col + 1, nargs > 0);
        fact(file, line, DT_FACT_CALL, v);
        fact(file, line, DT_FACT_CALL_ARGS, args);
    }
}

/* C++: the binary arithmetic operators of a statement whose two operands are plain names (image - mean), as
 * args facts of a call "operatorSYM" (common/op_families.h's DT_OP_CXX_OPERATORS): a tensor operator is a call
 * of an op like any other, and its operands are named as a call's arguments are. An operand counts only when
 * the operator binds it, by precedence: `a - b * c` records b * c, not a - b. */
static int op_char(char ch) { return ch == '+' || ch == '-' || ch == '*' || ch == '/'; }

/* Whether what comes right before a left operand (at lb, spaces skipped; b the statement's start) binds it less
 * tightly than the operator does (mul: * or /): the statement's start, `return`, or a character that is no
 * member access, unary operator or operator of the same or a tighter precedence. */
static int left_free(const char *b, const char *lb, int mul) {
    if (lb == b) return 1;
    const char *w = lb;
    while (w > b && is_ident(w[-1])) w--;
    if (w < lb) return keyword(w, lb, "return") && (w == b || !is_ident(w[-1])); /* a name before: `return` only */
    char before = lb[-1];
    return !strchr(".:>&~!*/", before) && (mul || (before != '+' && before != '-'));
}

static void operators_of(const struct cf_text *t, const char *file, const struct cf_stmt *st) {
    const char *c = t->code, *b = c + st->start, *e = c + st->end;
    for (const char *p = b + 1; p + 1 < e; p++) {
        if (!op_char(*p) || op_char(p[1]) || p[1] == '=' || p[1] == '>' || op_char(p[-1])) continue;
        int mul = *p == '*' || *p == '/';
        /* the left operand: a name right before, itself after something that binds less tightly */
        const char *le = p;
        while (le > b && isspace((unsigned char)le[-1])) le--;
        const char *ls = le;
        while (ls > b && is_ident(ls[-1])) ls--;
        if (ls == le || isdigit((unsigned char)*ls)) continue;
        const char *lb = ls;
        while (lb > b && isspace((unsigned char)lb[-1])) lb--;
        if (!left_free(b, lb, mul)) continue;
        /* the right operand: a name right after, before something that binds less tightly (or as tightly: the
         * operators are left-associative) */
        const char *rs = p + 1;
        while (rs < e && isspace((unsigned char)*rs)) rs++;
        const char *re = rs;
        while (re < e && is_ident(*re)) re++;
        if (re == rs || isdigit((unsigned char)*rs)) continue;
        const char *ra = re;
        while (ra < e && isspace((unsigned char)*ra)) ra++;
        char after = ra < e ? *ra : ';';
        if (after == '(' || after == '.' || after == '[' || after == ':' || (after == '-' && ra + 1 < e && ra[1] == '>') ||
            (!mul && (after == '*' || after == '/')))
            continue;
        /* T *x = ..., T *x;: a declaration (its type the statement's first word), not a product */
        if (*p == '*' && lb == b) continue;
        char v[400];
        snprintf(v, sizeof v, DT_OP_CXX_OPERATOR_PREFIX "%c\t%.*s\t%.*s", *p, (int)(le - ls < 150 ? le - ls : 150),
                 ls, (int)(re - rs < 150 ? re - rs : 150), rs);
        fact(file, t->line_at[p - c], DT_FACT_CALL_ARGS, v);
    }
}

/* The facts of one statement, on each of its lines. */
static void stmt_facts(struct cf_state *s, const struct cf_text *t, const char *file, const struct cf_stmt *st,
                       int cxx) {
    const char *c = t->code, *p = c + st->start, *e = c + st->end;
    char buf[1024], indent[64], binds[256] = "", devvar[128] = "", modvar[256] = "", optvar[256] = "",
                                attr[256] = "", ret[512] = "", params[256] = "";
    int returns = 0, whole = -1;
    enum dt_binds_kind kind = DT_BINDS_NONE;
    indent_of(t, st->first, indent, sizeof indent);
    if (st->own < 0) {
        /* a plain assignment's target, or a declaration's name with its initializer */
        const char *eq = NULL;
        for (const char *q = p; q < e && !eq; q++) {
            if (*q == '(' || *q == '[' || *q == '{') {
                const char *cl = close_of(q, e);
                if (!cl) break;
                q = cl;
                continue;
            }
            if (*q == '=' && q[1] != '=' && (q == p || !strchr("=!<>", q[-1]))) eq = q;
        }
        if (keyword(p, e, "return")) {
            returns = 1;
            const char *r = p + 6;
            squeeze(t->src + (r - c), t->src + (e - 1 - c), ret, sizeof ret);
            while (r < e && isspace((unsigned char)*r)) r++;
            whole = (int)(r - c); /* a call that is the whole value returned is no temporary, as in Python */
        } else if (eq) {
            const char *l = eq;
            if (l > p && strchr("+-*/%&|^", l[-1])) l--;
            if (l > p + 1 && (l[-1] == '<' || l[-1] == '>') && l[-2] == l[-1]) l -= 2;
            while (l > p && isspace((unsigned char)l[-1])) l--;
            const char *n = l;
            while (n > p && is_ident(n[-1])) n--;
            const char *before = n;
            while (before > p && isspace((unsigned char)before[-1])) before--;
            int plain = n < l && !isdigit((unsigned char)*n) &&
                        (before == p || is_ident(before[-1]) || before[-1] == '*' || before[-1] == '&');
            if (!plain && n < l && before > p + 1 && (before[-1] == '.' || (before[-1] == '>' && before[-2] == '-'))) {
                /* a field of a struct the program holds (self->scale = ...), as Python's self.NAME: its text */
                const char *oe = before[-1] == '.' ? before - 1 : before - 2, *ob;
                while (oe > p && isspace((unsigned char)oe[-1])) oe--;
                for (ob = oe; ob > p && is_ident(ob[-1]);) ob--;
                if (ob == p && ob < oe && !isdigit((unsigned char)*ob))
                    squeeze(t->src + (p - c), t->src + (l - c), attr, sizeof attr);
            }
            if (plain) {
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int)(l - n), n);
                add_name(binds, sizeof binds, name);
                char type[128];
                squeeze(t->src + (p - c), t->src + (before - c), type, sizeof type);
                size_t tl = strlen(type);
                if (!strcmp(type, "dt_device") || !strcmp(type, "const dt_device") ||
                    (tl >= 6 && !strcmp(type + tl - 6, "Device")))
                    snprintf(devvar, sizeof devvar, "%s", name);
                /* dt_module *NAME, dt_optimizer *NAME (const or not): one pointer to libdtrt's module or optimizer */
                size_t ml = tl && type[tl - 1] == '*' ? tl - 1 : 0;
                while (ml && type[ml - 1] == ' ') ml--;
                if (ml >= 9 && !strncmp(type + ml - 9, "dt_module", 9) && (ml == 9 || !is_ident(type[ml - 10])))
                    add_name(modvar, sizeof modvar, name);
                if (ml >= 12 && !strncmp(type + ml - 12, "dt_optimizer", 12) && (ml == 12 || !is_ident(type[ml - 13])))
                    add_name(optvar, sizeof optvar, name);
            }
            /* the value is one call: NAME(...) to the ';' */
            const char *v = eq + 1;
            while (v < e && isspace((unsigned char)*v)) v++;
            const char *f = v;
            while (f < e && (is_ident(*f) || *f == '.' || *f == ':' || (*f == '-' && f[1] == '>') || *f == '>')) f++;
            while (f < e && isspace((unsigned char)*f)) f++;
            const char *cl = f < e && *f == '(' ? close_of(f, e) : NULL;
            while (cl) {
                const char *after = cl + 1;
                while (after < e && isspace((unsigned char)*after)) after++;
                if (after == e - 1 && f > v) whole = (int)(v - c);
                if (*after != '.' && !(*after == '-' && after[1] == '>')) break;
                /* a method of the call's result: torch::tensor(...).view(...) is one call too */
                for (f = after + 1 + (*after == '-'); f < e && isspace((unsigned char)*f); f++) {
                }
                const char *id = f;
                while (f < e && is_ident(*f)) f++;
                while (f < e && isspace((unsigned char)*f)) f++;
                cl = f > id && f < e && *f == '(' ? close_of(f, e) : NULL;
            }
            kind = whole >= 0 ? DT_BINDS_CALL : DT_BINDS_OTHER;
        } else {
            whole = (int)(p - c); /* an expression statement's call is its whole value */
        }
    }
    /* the locals DWARF says the statement declares */
    for (int i = 0; i < s->nlocals; i++) {
        const struct cf_local *l = &s->locals[i];
        if (l->file != file || l->line < st->first || l->line > st->last) continue;
        if (l->param) { /* the header's parameters, as a def line's (what is in scope in the function's body) */
            add_name(params, sizeof params, l->name);
            continue;
        }
        add_name(binds, sizeof binds, l->name);
        if (l->device && !devvar[0]) snprintf(devvar, sizeof devvar, "%s", l->name);
        if (l->module) {
            char held[72];
            snprintf(held, sizeof held, "%s%s", l->name, l->module == 2 ? "->" : ""); /* a holder: model->to */
            add_name(modvar, sizeof modvar, held);
        }
        if (l->optimizer) add_name(optvar, sizeof optvar, l->name);
        if (!kind) kind = DT_BINDS_OTHER;
    }
    /* its block, function and loop */
    int fn_line = 0, loop = -1;
    char fname[128] = "";
    for (int b = st->own >= 0 ? st->own : st->block; b >= 0; b = t->blocks[b].parent) {
        const struct cf_block *k = &t->blocks[b];
        if (k->func && !(st->own == b)) {
            fn_line = k->first;
            snprintf(fname, sizeof fname, "%s", k->fname);
            for (int f = 0; f < s->nfuncs; f++) /* DWARF's name, where a definition starts in its header */
                if (s->funcs[f].file == file && s->funcs[f].line >= k->first && s->funcs[f].line <= k->hdr_last)
                    snprintf(fname, sizeof fname, "%s", s->funcs[f].name);
            break;
        }
        if (k->loop && loop < 0) loop = b;
    }
    for (int line = st->first; line <= st->last; line++) {
        snprintf(buf, sizeof buf, "%d %d", st->first, st->last);
        fact(file, line, DT_FACT_STMT, buf);
        fact(file, line, DT_FACT_INDENT, indent);
        if (st->own >= 0) {
            const struct cf_block *k = &t->blocks[st->own];
            fact(file, line, DT_FACT_OPENS, "1");
            if (k->has_body) fact(file, line, DT_FACT_BODY_INDENT, k->body_indent);
        }
        if (st->block >= 0) {
            snprintf(buf, sizeof buf, "%d %d", t->blocks[st->block].first, t->blocks[st->block].last);
            fact(file, line, DT_FACT_BLOCK, buf);
        }
        if (fname[0]) {
            fact(file, line, DT_FACT_FUNCTION, fname);
            snprintf(buf, sizeof buf, "%d", fn_line);
            fact(file, line, DT_FACT_FUNCTION_LINE, buf);
        }
        if (loop >= 0) {
            snprintf(buf, sizeof buf, "%d %d %s", t->blocks[loop].first, t->blocks[loop].last,
                     t->blocks[loop].body_indent);
            fact(file, line, DT_FACT_LOOP, buf);
        }
        if (binds[0]) {
            fact(file, line, DT_FACT_BINDS, binds);
            fact(file, line, DT_FACT_BINDS_KIND, dt_binds_kind_text(kind ? kind : DT_BINDS_OTHER));
        }
        if (devvar[0]) fact(file, line, DT_FACT_DEVICE_VAR, devvar);
        if (attr[0]) fact(file, line, DT_FACT_BINDS_ATTR, attr);
        if (modvar[0]) fact(file, line, DT_FACT_MODULE_VAR, modvar);
        if (optvar[0]) fact(file, line, DT_FACT_OPTIMIZER_VAR, optvar);
        if (params[0]) fact(file, line, DT_FACT_PARAMS, params);
        if (returns) {
            fact(file, line, DT_FACT_RETURNS, "1");
            if (ret[0]) fact(file, line, DT_FACT_RETURN_VALUE, ret);
        }
    }
    if (st->own < 0 || !t->blocks[st->own].func) {
        calls_of(s, t, file, st, whole, cxx);
        if (cxx) operators_of(t, file, st);
    }
}

/* Every fact of one source file. */
static void file_facts(struct cf_state *s, const char *file, const char *lang) {
    struct cf_text t;
    memset(&t, 0, sizeof t);
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) return;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 || (size_t)sb.st_size > CF_MAX_BYTES) {
        close(fd);
        return;
    }
    char *src = malloc((size_t)sb.st_size + 1);
    t.code = malloc((size_t)sb.st_size + 2);
    t.line_at = malloc(sizeof *t.line_at * ((size_t)sb.st_size + 1));
    ssize_t got = src ? read(fd, src, (size_t)sb.st_size) : -1;
    close(fd);
    if (!src || !t.code || !t.line_at || got != sb.st_size) goto out;
    src[got] = 0;
    t.src = src, t.len = (int)got;
    memcpy(t.code, src, (size_t)got + 1);
    t.code[got + 1] = 0;
    t.nlines = 1;
    for (int i = 0; i < t.len; i++) {
        t.line_at[i] = t.nlines;
        if (src[i] == '\n' && i + 1 < t.len) t.nlines++;
    }
    blank(&t);
    if (split(&t) != 0) goto out;
    char n[16];
    snprintf(n, sizeof n, "%d", t.nlines);
    fact(file, 0, DT_FACT_LINES, n);
    fact(file, 0, DT_FACT_LANG, lang);
    /* only this file's locals, for the statements to look through */
    struct cf_state mine = *s;
    mine.nlocals = 0;
    mine.locals = malloc(sizeof *mine.locals * (size_t)(s->nlocals ? s->nlocals : 1));
    if (!mine.locals) goto out;
    for (int i = 0; i < s->nlocals; i++)
        if (s->locals[i].file == file) mine.locals[mine.nlocals++] = s->locals[i];
    for (int i = 0; i < t.nstmts; i++) stmt_facts(&mine, &t, file, &t.stmts[i], !strcmp(lang, DT_FACT_LANG_CXX));
    free(mine.locals);
out:
    free(src), free(t.code), free(t.line_at), free(t.blocks), free(t.stmts);
}

static _Atomic int g_done;           /* written once per process */
static _Thread_local int tl_pending; /* a mismatch on this thread, its facts not written yet */

TR_HIDDEN void tr_cfacts_at_mismatch(void) {
    if (!atomic_load_explicit(&g_done, memory_order_relaxed)) tl_pending = 1;
}

TR_HIDDEN void tr_cfacts_flush(void) {
    if (!tl_pending) return;
    tl_pending = 0;
    if (atomic_exchange(&g_done, 1)) return;
    const char *off = getenv("DEVTRACE_C_FACTS");
    if (off && !strcmp(off, "0")) return;
    struct cf_state s;
    memset(&s, 0, sizeof s);
#ifdef CF_HAVE_LIBDW
    char *paths[64] = {0};
    if (dw_open()) {
        dl_iterate_phdr(each_module, paths);
        for (int i = 0; i < 64 && paths[i]; i++) read_module(&s, paths[i]);
    }
    for (int i = 0; i < 64; i++) free(paths[i]);
#endif
    for (int i = 0; i < s.nfiles; i++) file_facts(&s, s.files[i], s.lang[i]);
    for (int i = 0; i < s.nfiles; i++) free(s.files[i]);
    free(s.locals), free(s.funcs);
}
