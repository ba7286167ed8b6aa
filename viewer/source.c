/* The program's source text, for what the report shows of it (snippets)
 * and for the suggested patch: a rule's fix as a unified diff, placed by
 * the source facts the producer recorded (the statement's last line, its
 * indentation, a block's body). Only reads files: what a line means comes
 * from the facts, never from parsing it here. */
#include "diag.h"

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

int vw_fix_diff(struct vw_model *m, const struct vw_fix *fix, FILE *f, void (*put)(FILE *, const char *)) {
    if (!fix->has_site || !fix->code[0]) return 0;
    const char *file = fix->site.site.file;
    struct vw_src src;
    if (!vw_src_at(m, file, fix->site.site.line, &src)) return 0; /* placed by facts only */
    int first, last;                                              /* lines shown as context or changed */
    int changed;                                                  /* the line replaced, or 0 */
    char *added = NULL; /* the line added after `last - DIFF_CONTEXT`, or the replacement of `changed` */
    if (fix->replace) {
        char *line = whole_line(m->t, file, fix->edit_line);
        if (!line || fix->edit_col < 0 || (size_t)fix->edit_col > strlen(line)) {
            free(line);
            return 0;
        }
        size_t len = strlen(line) + strlen(fix->edit_text) + 1;
        if (!(added = malloc(len))) {
            free(line);
            return 0;
        }
        snprintf(added, len, "%.*s%s%s", fix->edit_col, line, fix->edit_text, line + fix->edit_col);
        free(line);
        changed = fix->edit_line;
        first = changed > DIFF_CONTEXT ? changed - DIFF_CONTEXT : 1;
        last = changed + DIFF_CONTEXT;
    } else {
        const char *indent = src.opens ? (src.body_indent[0] ? src.body_indent : NULL) : src.indent;
        size_t len = strlen(src.indent) + 4 + strlen(fix->code) + 1;
        if (!(added = malloc(len))) return 0;
        if (indent)
            snprintf(added, len, "%s%s", indent, fix->code);
        else /* a header whose body the facts do not give: one level in */
            snprintf(added, len, "%s    %s", src.indent, fix->code);
        changed = 0;
        first = src.last > DIFF_CONTEXT ? src.last - DIFF_CONTEXT : 1;
        last = src.last + DIFF_CONTEXT;
    }
    char *text[2 * DIFF_CONTEXT + 1] = {0}; /* whole lines: a patch's context must match exactly */
    int got = 0;
    while (got < last - first + 1 && (text[got] = whole_line(m->t, file, first + got))) got++;
    int anchor = fix->replace ? changed : src.last;
    if (first + got <= anchor) { /* the file is shorter than the trace says: changed since */
        for (int i = 0; i < got; i++) free(text[i]);
        free(added);
        return 0;
    }
    fputs("--- ", f);
    put(f, file);
    fputs("\n+++ ", f);
    put(f, file);
    if (fix->replace)
        fprintf(f, "\n@@ -%d,%d +%d,%d @@\n", first, got, first, got);
    else
        fprintf(f, "\n@@ -%d,%d +%d,%d @@\n", first, got, first, got + 1);
    for (int i = 0; i < got; i++) {
        int n = first + i;
        if (fix->replace && n == changed) {
            fputc('-', f), put(f, text[i]), fputc('\n', f);
            fputc('+', f), put(f, added), fputc('\n', f);
            continue;
        }
        fputc(' ', f), put(f, text[i]), fputc('\n', f);
        if (!fix->replace && n == src.last) fputc('+', f), put(f, added), fputc('\n', f);
    }
    for (int i = 0; i < got; i++) free(text[i]);
    free(added);
    return 1;
}
