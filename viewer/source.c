/* The program's source text, for what the report shows of it (snippets)
 * and for the suggested patch: a rule's fix as a unified diff, placed by
 * the source facts the producer recorded (the statement's last line, its
 * indentation, a block's body). Only reads files: what a line means comes
 * from the facts, never from parsing it here. A path comes from the trace,
 * which is untrusted (docs/security.md): only a regular file under the
 * source root, of at most VW_SOURCE_MAX_BYTES, is ever opened, without
 * blocking, and read no further than the lines needed. */
#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directories the trace's sources must lie under (realpaths): each --source-root, else each of
 * DEVTRACE_SOURCE_ROOT's (colon-separated), else the current directory. Found when first asked. */
#define MAX_ROOTS 8
static char g_roots[MAX_ROOTS][PATH_MAX];
static int g_nroots = -1;  /* -1: not yet found */
static int g_ngiven;       /* --source-root directories, first in g_roots */

int vw_source_root_set(const char *dir) {
    struct stat st;
    if (g_ngiven == MAX_ROOTS || !dir || !dir[0] || !realpath(dir, g_roots[g_ngiven]) ||
        stat(g_roots[g_ngiven], &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    g_nroots = ++g_ngiven;
    return 0;
}

static void find_roots(void) {
    if (g_nroots >= 0) return;
    g_nroots = 0;
    const char *env = getenv("DEVTRACE_SOURCE_ROOT");
    char dir[PATH_MAX];
    for (const char *p = env; p && *p && g_nroots < MAX_ROOTS;) {
        size_t k = strcspn(p, ":");
        if (k && k < sizeof dir) {
            memcpy(dir, p, k), dir[k] = 0;
            if (realpath(dir, g_roots[g_nroots])) g_nroots++;
        }
        p += k + (p[k] == ':');
    }
    if (!g_nroots && getcwd(dir, sizeof dir) && realpath(dir, g_roots[0])) g_nroots = 1;
}

const char *vw_source_root(void) {
    find_roots();
    return g_nroots ? g_roots[0] : "(none)";
}

/* Whether real (a realpath) lies under a source root. */
static int under_root(const char *real) {
    find_roots();
    for (int i = 0; i < g_nroots; i++) {
        size_t n = strlen(g_roots[i]);
        if (n == 1 && g_roots[i][0] == '/') return real[0] == '/';
        if (!strncmp(real, g_roots[i], n) && (real[n] == '/' || real[n] == 0)) return 1;
    }
    return 0;
}

/* The path a trace's file name stands for, when it may be read: as named, or (relative) under the
 * directory the program ran in; resolved (symlinks and .. followed) and under the source root. */
const char *vw_source_path(struct vw_trace *t, const char *file, char *buf, size_t size) {
    char path[PATH_MAX + 1100], cwd[1024], real[PATH_MAX];
    if (!file || !file[0] || size < 2) return NULL;
    const char *cand[2] = {file, NULL};
    if (file[0] != '/') {
        snprintf(path, sizeof path, "%s/%s", vw_meta(t, "cwd", cwd, sizeof cwd), file);
        cand[1] = path;
    }
    for (int i = 0; i < 2 && cand[i]; i++) {
        if (!realpath(cand[i], real) || !under_root(real)) continue;
        if (strlen(real) >= size) return NULL;
        memcpy(buf, real, strlen(real) + 1);
        return buf;
    }
    return NULL;
}

const char *vw_source_unavailable(struct vw_trace *t, const char *file, char *buf, size_t size) {
    char path[PATH_MAX + 1100], cwd[1024], real[PATH_MAX];
    const char *cand[2] = {file, NULL};
    if (file && file[0] && file[0] != '/') {
        snprintf(path, sizeof path, "%s/%s", vw_meta(t, "cwd", cwd, sizeof cwd), file);
        cand[1] = path;
    }
    int found = 0;
    for (int i = 0; i < 2 && cand[i] && !found; i++) found = realpath(cand[i], real) != NULL;
    if (!found) return "not found";
    if (!vw_source_path(t, file, real, sizeof real)) {
        snprintf(buf, size, "outside the source root %s (--source-root DIR allows another)", vw_source_root());
        return buf;
    }
    int fd = vw_open_regular(real, VW_SOURCE_MAX_BYTES);
    if (fd >= 0) {
        close(fd);
        return "shorter than the trace says: changed since the run";
    }
    if (errno == EINVAL) return "not a regular file";
    if (errno == EFBIG) return "larger than the " VW_SOURCE_MAX_TEXT " a source file may have";
    snprintf(buf, size, "%s", strerror(errno));
    return buf;
}

FILE *vw_source_open(struct vw_trace *t, const char *file) {
    char real[PATH_MAX];
    if (!vw_source_path(t, file, real, sizeof real)) return NULL;
    return vw_fopen_regular(real, VW_SOURCE_MAX_BYTES);
}

int vw_source_lines(struct vw_trace *t, const char *file, int lo, int hi, char (*text)[VW_SNIP_WIDTH + 1]) {
    FILE *src = vw_source_open(t, file);
    if (!src) return 0;
    char buf[4096];
    int n = 0, got = 0;
    int64_t budget = VW_SOURCE_MAX_BYTES; /* a file whose size fstat does not say (/proc) is read no further */
    while (n < hi && budget > 0 && fgets(buf, sizeof buf, src)) {
        size_t len = strlen(buf);
        budget -= (int64_t)len;
        int whole = len && buf[len - 1] == '\n';
        if (++n >= lo) {
            size_t k = strcspn(buf, "\r\n"); /* cut at VW_SNIP_WIDTH bytes */
            if (k > VW_SNIP_WIDTH) k = VW_SNIP_WIDTH;
            memcpy(text[n - lo], buf, k);
            text[n - lo][k] = 0;
            got++;
        }
        while (!whole && budget > 0 && fgets(buf, sizeof buf, src)) { /* the rest of a long line */
            len = strlen(buf);
            budget -= (int64_t)len;
            whole = len && buf[len - 1] == '\n';
        }
    }
    fclose(src);
    return got;
}

/* One whole line of a file (no newline), malloc'd; NULL when it has no such line. */
static char *whole_line(struct vw_trace *t, const char *file, int line) {
    FILE *src = vw_source_open(t, file);
    if (!src) return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len = 0;
    int n = 0;
    int64_t budget = VW_SOURCE_MAX_BYTES;
    while (budget > 0 && (len = getline(&buf, &cap, src)) >= 0 && ++n < line) budget -= len;
    if (budget <= 0) len = -1;
    fclose(src);
    if (n != line || len < 0) {
        free(buf);
        return NULL;
    }
    buf[strcspn(buf, "\r\n")] = 0;
    return buf;
}

#define DIFF_CONTEXT 1 /* unchanged lines either side */

/* Where a fix's code goes, by the source facts of its site: after the line *after (0: before the first
 * line), each line of code indented as *indent says (malloc'd, the caller frees). 0 when the facts do not
 * say. */
int vw_fix_place(struct vw_model *m, const struct vw_fix *fix, int *after, char **lines) {
    struct vw_src src;
    if (!fix->has_site || !fix->code[0] || !vw_src_at(m, fix->site.site.file, fix->site.site.line, &src)) return 0;
    /* after the statement (into its body when it opens a block), or before it */
    char indent[80];
    if (fix->before)
        snprintf(indent, sizeof indent, "%s", src.indent);
    else if (src.opens)
        snprintf(indent, sizeof indent, "%s", src.body_indent[0] ? src.body_indent : src.indent);
    else
        snprintf(indent, sizeof indent, "%s", src.indent);
    if (!fix->before && src.opens && !src.body_indent[0]) strcat(indent, "    ");
    size_t len = strlen(fix->code) + 1, nl = 1;
    for (const char *p = fix->code; *p; p++) nl += *p == '\n';
    len += nl * (strlen(indent) + 1);
    char *out = malloc(len);
    if (!out) return 0;
    out[0] = 0;
    for (const char *p = fix->code; *p;) {
        size_t k = strcspn(p, "\n"), at = strlen(out);
        snprintf(out + at, len - at, "%s%s%.*s", at ? "\n" : "", indent, (int)k, p);
        p += k + (p[k] == '\n');
    }
    *after = fix->before ? src.first - 1 : src.last;
    *lines = out;
    return 1;
}

/* Each line of text, prefixed. */
static void put_lines(FILE *f, char prefix, const char *text, void (*put)(FILE *, const char *)) {
    char *copy = strdup(text);
    for (char *p = copy; p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        fputc(prefix, f), put(f, p), fputc('\n', f);
        p = nl ? nl + 1 : NULL;
    }
    free(copy);
}

char *vw_edited_line(const struct vw_fix *fix, int line, const char *orig) {
    size_t len = strlen(orig) + 1;
    for (int i = 0; i < fix->nedits; i++)
        if (fix->edits[i].line == line) {
            if (fix->edits[i].col < 0 || fix->edits[i].del < 0 ||
                (size_t)fix->edits[i].col + (size_t)fix->edits[i].del > strlen(orig))
                return NULL;
            len += strlen(fix->edits[i].text);
        }
    char *out = malloc(len);
    if (!out) return NULL;
    size_t at = 0;
    int skip = 0;               /* characters of orig an edit removes */
    for (int col = 0;; col++) { /* each edit before its column, in column order */
        for (int i = 0; i < fix->nedits; i++)
            if (fix->edits[i].line == line && fix->edits[i].col == col) {
                at += (size_t)snprintf(out + at, len - at, "%s", fix->edits[i].text);
                skip = fix->edits[i].del > skip ? fix->edits[i].del : skip;
            }
        if (!orig[col]) break;
        if (skip > 0) {
            skip--;
            continue;
        }
        out[at++] = orig[col];
        out[at] = 0;
    }
    out[at] = 0;
    return out;
}

int vw_fix_diff(struct vw_model *m, const struct vw_fix *fix, FILE *f, void (*put)(FILE *, const char *)) {
    if (!fix->has_site || !fix->code[0]) return 0;
    const char *file = fix->site.site.file;
    int first, last, anchor; /* lines shown; the one the code follows (not for edits) */
    char *added = NULL;      /* the lines added after `anchor` */
    if (fix->replace) {
        int lo = INT32_MAX, hi = 0;
        for (int i = 0; i < fix->nedits; i++) {
            lo = fix->edits[i].line < lo ? fix->edits[i].line : lo;
            hi = fix->edits[i].line > hi ? fix->edits[i].line : hi;
        }
        if (!fix->nedits || hi - lo > 2 * DIFF_CONTEXT) return 0;
        anchor = hi;
        first = lo > DIFF_CONTEXT ? lo - DIFF_CONTEXT : 1;
        last = hi + DIFF_CONTEXT;
    } else {
        if (!vw_fix_place(m, fix, &anchor, &added)) return 0;
        first = anchor > DIFF_CONTEXT ? anchor - DIFF_CONTEXT + 1 : 1;
        last = anchor + DIFF_CONTEXT;
    }
    char *text[4 * DIFF_CONTEXT + 2] = {0}; /* whole lines: a patch's context must match exactly */
    int got = 0;
    while (got < last - first + 1 && (text[got] = whole_line(m->t, file, first + got))) got++;
    if (first + got <= anchor) { /* the file is shorter than the trace says: changed since */
        for (int i = 0; i < got; i++) free(text[i]);
        free(added);
        return 0;
    }
    int nadded = 1;
    for (const char *p = added ? added : ""; *p; p++) nadded += *p == '\n';
    char *edited[4 * DIFF_CONTEXT + 2] = {0};
    for (int i = 0; fix->replace && i < got; i++) {
        int has = 0;
        for (int e = 0; e < fix->nedits; e++) has |= fix->edits[e].line == first + i;
        if (has && !(edited[i] = vw_edited_line(fix, first + i, text[i]))) { /* the file changed since */
            for (int k = 0; k < got; k++) free(text[k]), free(edited[k]);
            return 0;
        }
    }
    /* the name comes from the trace: escaped whatever put does, so that a newline or an escape in it can
     * neither break the headers nor reach the terminal */
    fputs("--- ", f);
    vw_put_escaped(f, file);
    fputs("\n+++ ", f);
    vw_put_escaped(f, file);
    fprintf(f, "\n@@ -%d,%d +%d,%d @@\n", first, got, first, fix->replace ? got : got + nadded);
    if (!fix->replace && anchor == 0) put_lines(f, '+', added, put);
    for (int i = 0; i < got; i++) {
        int n = first + i;
        if (edited[i]) {
            put_lines(f, '-', text[i], put);
            put_lines(f, '+', edited[i], put);
            free(edited[i]);
            continue;
        }
        put_lines(f, ' ', text[i], put);
        if (!fix->replace && n == anchor) put_lines(f, '+', added, put);
    }
    for (int i = 0; i < got; i++) free(text[i]);
    free(added);
    return 1;
}
