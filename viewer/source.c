/* The program's source text, for what the report shows of it (snippets)
 * and for the suggested patch: a rule's fix as a unified diff, placed by
 * the source facts the producer recorded (the statement's last line, its
 * indentation, a block's body). Only reads files: what a line means comes
 * from the facts, never from parsing it here. */
#include "diag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

FILE *vw_source_open(struct vw_trace *t, const char *file) {
    char path[2048], cwd[1024];
    if (!file || !file[0]) return NULL;
    FILE *src = fopen(file, "r");
    if (src || file[0] == '/') return src;
    snprintf(path, sizeof path, "%s/%s", vw_meta(t, "cwd", cwd, sizeof cwd), file);
    return fopen(path, "r");
}

int vw_source_lines(struct vw_trace *t, const char *file, int lo, int hi, char (*text)[VW_SNIP_WIDTH + 1]) {
    FILE *src = vw_source_open(t, file);
    if (!src) return 0;
    char buf[4096];
    int n = 0, got = 0;
    while (n < hi && fgets(buf, sizeof buf, src)) {
        size_t len = strlen(buf);
        int whole = len && buf[len - 1] == '\n';
        if (++n >= lo) {
            size_t k = strcspn(buf, "\r\n"); /* cut at VW_SNIP_WIDTH bytes */
            if (k > VW_SNIP_WIDTH) k = VW_SNIP_WIDTH;
            memcpy(text[n - lo], buf, k);
            text[n - lo][k] = 0;
            got++;
        }
        while (!whole && fgets(buf, sizeof buf, src)) { /* the rest of a long line */
            len = strlen(buf);
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
    while ((len = getline(&buf, &cap, src)) >= 0 && ++n < line) {
    }
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
    fputs("--- ", f);
    put(f, file);
    fputs("\n+++ ", f);
    put(f, file);
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
