/* The trace's source facts, read once into memory (issue 40: the model loads what a mismatch needs, and the
 * rules and the code writer run no SQL on facts). Rows are kept in the table's key order (file, line, key,
 * value: the string ids), grouped by file; a reader asks for the rows of one file (as a frame names it, matched
 * as VW_FACT_FILE_MATCH does: the same text, or a relative name that ends the fact's file after a '/') over a
 * range of lines, of one key or all. A trace is untrusted input: the facts' text is bounded (VW_FACTS_MAX_BYTES)
 * and a table over it is not read (the report says the facts were too large). */
#include "diag.h"

#include <stdlib.h>
#include <string.h>

#define VW_FACTS_MAX_BYTES (256u << 20)
#define VW_FACTS_MAX_ROWS  (8u << 20)

void vw_facts_free(struct vw_facts *fs) {
    free(fs->rows);
    free(fs->files);
    free(fs->arena);
    memset(fs, 0, sizeof *fs);
}

/* Interned text: the strings the facts use, each copied once into the arena (offsets: the arena grows). */
struct intern {
    int64_t *ids;
    size_t *offs, n, cap;
};

static int intern_find(const struct intern *in, int64_t id, size_t *off) {
    size_t lo = 0, hi = in->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (in->ids[mid] == id) return *off = in->offs[mid], 1;
        if (in->ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

int vw_facts_load(struct vw_facts *fs, sqlite3 *db, const char **why) {
    memset(fs, 0, sizeof *fs);
    *why = NULL;
    /* the strings the facts name, by id, then the rows in key order */
    sqlite3_stmt *st = NULL;
    struct intern in = {0};
    size_t used = 0, cap = 0;
    int ok = 1;
    if (sqlite3_prepare_v2(db,
                           "SELECT s.id, s.text FROM strings s WHERE s.id IN (SELECT file FROM source_facts UNION "
                           "SELECT key FROM source_facts UNION SELECT value FROM source_facts) ORDER BY s.id",
                           -1, &st, NULL) != SQLITE_OK)
        return *why = "unreadable", -1;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(st, 1);
        size_t len = text ? (size_t)sqlite3_column_bytes(st, 1) : 0;
        if (used + len + 1 > VW_FACTS_MAX_BYTES) {
            *why = "larger than the 256 MiB the viewer reads";
            ok = 0;
            break;
        }
        if (used + len + 1 > cap) {
            size_t nc = cap ? cap : 1 << 16;
            while (nc < used + len + 1) nc *= 2;
            char *na = realloc(fs->arena, nc);
            if (!na) {
                ok = 0, *why = "out of memory";
                break;
            }
            fs->arena = na, cap = nc;
        }
        if (in.n == in.cap) {
            size_t nc = in.cap ? in.cap * 2 : 1024;
            int64_t *ni = realloc(in.ids, nc * sizeof *ni);
            if (ni) in.ids = ni;
            size_t *no = ni ? realloc(in.offs, nc * sizeof *no) : NULL;
            if (!ni || !no) {
                ok = 0, *why = "out of memory";
                break;
            }
            in.offs = no, in.cap = nc;
        }
        if (len) memcpy(fs->arena + used, text, len);
        fs->arena[used + len] = 0;
        in.ids[in.n] = sqlite3_column_int64(st, 0), in.offs[in.n++] = used;
        used += len + 1;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (ok && sqlite3_prepare_v2(db, "SELECT file, line, key, value FROM source_facts ORDER BY file, line, key, value",
                                 -1, &st, NULL) != SQLITE_OK)
        ok = 0, *why = "unreadable";
    size_t rcap = 0;
    struct {
        int64_t file, line;
        size_t key, value, ftext;
    } *raw = NULL;
    size_t nraw = 0;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        size_t fo, ko, vo;
        if (!intern_find(&in, sqlite3_column_int64(st, 0), &fo) || !intern_find(&in, sqlite3_column_int64(st, 2), &ko) ||
            !intern_find(&in, sqlite3_column_int64(st, 3), &vo))
            continue; /* a dangling string: the trace's validation says so; not a fact */
        if (nraw == VW_FACTS_MAX_ROWS) {
            *why = "more rows than the viewer reads";
            ok = 0;
            break;
        }
        if (nraw == rcap) {
            size_t nc = rcap ? rcap * 2 : 4096;
            void *nr = realloc(raw, nc * sizeof *raw);
            if (!nr) {
                ok = 0, *why = "out of memory";
                break;
            }
            raw = nr, rcap = nc;
        }
        raw[nraw].file = sqlite3_column_int64(st, 0), raw[nraw].line = sqlite3_column_int64(st, 1);
        raw[nraw].ftext = fo, raw[nraw].key = ko, raw[nraw].value = vo;
        nraw++;
    }
    if (st) sqlite3_finalize(st);
    free(in.ids);
    free(in.offs);
    if (!ok) {
        free(raw);
        vw_facts_free(fs);
        if (!*why) *why = "unreadable";
        return -1;
    }
    /* the arena stays put from here: pointers into it */
    fs->rows = calloc(nraw ? nraw : 1, sizeof *fs->rows);
    size_t nfiles = 0;
    for (size_t i = 0; i < nraw; i++) nfiles += !i || raw[i].file != raw[i - 1].file;
    fs->files = calloc(nfiles ? nfiles : 1, sizeof *fs->files);
    if (!fs->rows || !fs->files) {
        free(raw);
        vw_facts_free(fs);
        return *why = "out of memory", -1;
    }
    for (size_t i = 0; i < nraw; i++) {
        if (!i || raw[i].file != raw[i - 1].file) {
            fs->files[fs->nfiles].text = fs->arena + raw[i].ftext;
            fs->files[fs->nfiles].lo = i;
            fs->nfiles++;
        }
        fs->files[fs->nfiles - 1].hi = i + 1;
        fs->rows[i].line = raw[i].line > VW_FACTS_ALL_LINES ? VW_FACTS_ALL_LINES : (int)raw[i].line;
        fs->rows[i].key = fs->arena + raw[i].key;
        fs->rows[i].value = fs->arena + raw[i].value;
    }
    fs->n = nraw;
    free(raw);
    fs->loaded = 1;
    return 0;
}

/* Whether the facts' file `ftext` is the file a frame names `file` (VW_FACT_FILE_MATCH). */
static int file_match(const char *ftext, const char *file) {
    if (!strcmp(ftext, file)) return 1;
    if (file[0] == '/') return 0;
    size_t fl = strlen(ftext), l = strlen(file);
    return fl > l && ftext[fl - l - 1] == '/' && !strcmp(ftext + fl - l, file);
}

int vw_facts_each(const struct vw_facts *fs, const char *file, int first, int last, const char *key,
                  int (*fn)(void *ctx, const char *file, int line, const char *key, const char *value), void *ctx) {
    if (!fs->loaded || !file || !file[0]) return 0;
    for (size_t f = 0; f < fs->nfiles; f++) {
        if (!file_match(fs->files[f].text, file)) continue;
        /* the first row of the file at line >= first */
        size_t lo = fs->files[f].lo, hi = fs->files[f].hi;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (fs->rows[mid].line < first) lo = mid + 1;
            else hi = mid;
        }
        for (size_t i = lo; i < fs->files[f].hi && fs->rows[i].line <= last; i++)
            if (!key || !strcmp(fs->rows[i].key, key)) {
                int stop = fn(ctx, fs->files[f].text, fs->rows[i].line, fs->rows[i].key, fs->rows[i].value);
                if (stop) return stop;
            }
    }
    return 0;
}

int vw_facts_each_file(const struct vw_facts *fs, const char *key,
                       int (*fn)(void *ctx, const char *file, int line, const char *key, const char *value),
                       void *ctx) {
    if (!fs->loaded) return 0;
    for (size_t f = 0; f < fs->nfiles; f++)
        for (size_t i = fs->files[f].lo; i < fs->files[f].hi; i++)
            if (!key || !strcmp(fs->rows[i].key, key)) {
                int stop = fn(ctx, fs->files[f].text, fs->rows[i].line, fs->rows[i].key, fs->rows[i].value);
                if (stop) return stop;
            }
    return 0;
}

struct collect_ctx {
    const char **out;
    int *lines;
    int n, max;
};

static int collect_one(void *ctx, const char *file, int line, const char *key, const char *value) {
    (void)file, (void)key;
    struct collect_ctx *c = ctx;
    if (c->n == c->max) return 1;
    if (c->lines) c->lines[c->n] = line;
    c->out[c->n++] = value;
    return 0;
}

int vw_facts_values(const struct vw_facts *fs, const char *file, int first, int last, const char *key,
                    const char **out, int *lines, int max) {
    struct collect_ctx c = {out, lines, 0, max};
    if (file)
        vw_facts_each(fs, file, first, last, key, collect_one, &c);
    else
        vw_facts_each_file(fs, key, collect_one, &c);
    return c.n;
}

static int by_text(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

void vw_facts_sort_values(const char **vals, int n) { qsort(vals, (size_t)n, sizeof *vals, by_text); }
