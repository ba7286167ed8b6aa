/* The browsing commands: devtrace tensors (a table of tensors), devtrace
 * show (one tensor's whole life) and devtrace transfers (transfers grouped
 * by call site, with the per-step copies a user may not know about). Each
 * reads one or more traces, in text or --json (shapes in docs/viewer.md). */
#include "vw.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shared */

/* Call sites by stack id (Python stack id, negated, when the event has
 * one: the Python line is the site): symbolizing is the slow part of a
 * long table. */
struct site_cache {
    int64_t *keys;
    char **vals;
    size_t cap, n;
};

static const char *cached_site(struct site_cache *c, struct vw_sym *sym, int64_t stack, int64_t pystack, int64_t seq) {
    static char unknown[] = "(unknown site)";
    int64_t key = pystack > 0 ? -pystack : stack;
    if (!key) return unknown;
    if (c->n * 2 >= c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        int64_t *k = calloc(cap, sizeof *k);
        char **v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k), free(v);
            return unknown;
        }
        for (size_t i = 0; i < c->cap; i++)
            if (c->keys[i]) {
                size_t j = (size_t)c->keys[i] * 0x9e3779b97f4a7c15ull >> 7 & (cap - 1);
                while (k[j]) j = (j + 1) & (cap - 1);
                k[j] = c->keys[i], v[j] = c->vals[i];
            }
        free(c->keys), free(c->vals);
        c->keys = k, c->vals = v, c->cap = cap;
    }
    size_t j = (size_t)key * 0x9e3779b97f4a7c15ull >> 7 & (c->cap - 1);
    while (c->keys[j] && c->keys[j] != key) j = (j + 1) & (c->cap - 1);
    if (c->keys[j]) return c->vals[j];
    struct vw_frame f;
    char buf[1200];
    const char *s = vw_sym_event_site(sym, stack, pystack, seq, &f) ? vw_site_str(&f, buf, sizeof buf) : unknown;
    char *copy = strdup(s);
    if (!copy) return unknown;
    c->keys[j] = key, c->vals[j] = copy, c->n++;
    return copy;
}

static void site_cache_free(struct site_cache *c) {
    for (size_t i = 0; i < c->cap; i++) free(c->vals[i]);
    free(c->keys), free(c->vals);
    memset(c, 0, sizeof *c);
}

static const char *col_text(sqlite3_stmt *st, int i, const char *dflt) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : dflt;
}

static const char *origin_name(int o) {
    static const char *n[] = {"factory", "op output", "view", "transfer", "checkpoint", "other"};
    return o >= 0 && o <= 5 ? n[o] : "other";
}

/* Parses "cpu", "cuda" (cuda:0) or "cuda:N" into the trace's packed device
 * number; -1 when it is none of these. */
static int64_t parse_device(const char *s) {
    if (!strcmp(s, "cpu")) return 0;
    if (!strcmp(s, "cuda")) return 1 << 16;
    if (!strncmp(s, "cuda:", 5) && s[5]) {
        char *end;
        long n = strtol(s + 5, &end, 10);
        if (!*end && n >= 0 && n < 65536) return (1 << 16) | n;
    }
    return -1;
}

/* A line naming the trace, before its rows, when several are read. */
static void trace_heading(struct vw_trace *t, FILE *f) {
    char prog[512], pid[32];
    vw_meta(t, "program", prog, sizeof prog);
    vw_meta(t, "pid", pid, sizeof pid);
    fprintf(f, "%s== ", vw_color(VW_BOLD));
    vw_put_escaped(f, t->path);
    fprintf(f, " (");
    vw_put_escaped(f, prog);
    fprintf(f, ", pid ");
    vw_put_escaped(f, pid);
    fprintf(f, ")%s\n", vw_color(VW_RESET));
}

static void json_trace_open(struct vw_trace *t, FILE *f, int index) {
    char prog[512], pid[32];
    vw_meta(t, "program", prog, sizeof prog);
    vw_meta(t, "pid", pid, sizeof pid);
    fprintf(f, "%s{\"file\": ", index ? ", " : "");
    vw_put_json_string(f, t->path);
    fprintf(f, ", \"program\": ");
    vw_put_json_string(f, prog);
    fprintf(f, ", \"pid\": %lld", atoll(pid));
}

/* The seq of the first device mismatch (else the first error or fatal
 * signal); 0 when the trace holds none. */
static int64_t first_error_seq(struct vw_trace *t) {
    sqlite3_stmt *st = vw_prep(t, "SELECT COALESCE((SELECT min(seq) FROM errors WHERE first_arg IS NOT NULL), "
                                  "(SELECT min(seq) FROM errors), 0)");
    int64_t seq = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (st) sqlite3_finalize(st);
    return seq;
}

/* Whether the trace holds runtime tensors at all; when not (a program not
 * built on libdtrt: PyTorch, a CUDA C++ program), prints to f what it does
 * hold and which command shows it, unless json. */
static int has_runtime_tensors(struct vw_trace *t, FILE *f, int json) {
    sqlite3_stmt *st = vw_prep(t, "SELECT EXISTS(SELECT 1 FROM tensors), (SELECT count(*) FROM cuda_calls), "
                                  "(SELECT count(*) FROM errors WHERE exception IS NOT NULL)");
    if (!st || sqlite3_step(st) != SQLITE_ROW) {
        if (st) sqlite3_finalize(st);
        return 1;
    }
    int yes = sqlite3_column_int(st, 0);
    long long calls = sqlite3_column_int64(st, 1), throws = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);
    if (!yes && !json) {
        fprintf(f, "(no runtime tensors: this program does not run on libdtrt");
        if (calls || throws) {
            fprintf(f, ". Recorded instead:");
            if (calls) fprintf(f, " %lld CUDA runtime call%s (devtrace transfers)", calls, calls == 1 ? "" : "s");
            if (calls && throws) fputc(',', f);
            if (throws) fprintf(f, " %lld C++ exception%s (devtrace report)", throws, throws == 1 ? "" : "s");
        }
        fprintf(f, ")\n");
    }
    return yes;
}

/* Options shared by the browsing commands; returns the number of files
 * (their argv indexes in files[]), or -1 after printing why. */
struct opts {
    int json, alive;
    int64_t device;
    const char *tensor; /* show */
    const char *files[256];
};

/* ---------------------------------------------------------------- tensors */

static void tensors_usage(FILE *f) {
    fprintf(f, "usage: devtrace tensors [--device D] [--alive-at-error] [--json] FILE...\n\n"
               "A table of the tensors in the traces: id, name, dtype, shape, device (where a module's move\n"
               "took it, else where it was made), how it was made, where,\n"
               "and whether it was freed.\n\n"
               "  --device D        only tensors on D (cpu, cuda, cuda:N)\n"
               "  --alive-at-error  only tensors that existed when the first device mismatch (else the first\n"
               "                    error) happened\n"
               "  --json            JSON instead of text (shape in docs/viewer.md)\n\n"
               "Exit status: 0 read fine, 2 bad usage or an unreadable trace.\n");
}

static int tensors_one(struct vw_trace *t, const struct opts *o, int index) {
    FILE *f = stdout;
    int json = o->json, alive = o->alive;
    int64_t device = o->device;
    int64_t err = alive ? first_error_seq(t) : 0;
    if (alive && !err) {
        vw_error("%s: the trace holds no error, so no tensor was alive at one (drop --alive-at-error)", t->path);
        return -1;
    }
    sqlite3_stmt *st = vw_prep(
        /* the device a tensor is on: where it was made, or where its latest move in place took it (a
         * module's .to) before the error (?3), else by the end */
        t, "WITH m AS (SELECT dst, dst_device FROM (SELECT dst, dst_device, row_number() OVER (PARTITION BY dst "
           "ORDER BY seq DESC) AS rn FROM transfers WHERE kind = " DT_SQL_TRANSFER_MOVE
           " AND (?3 = 0 OR seq < ?3)) WHERE rn = 1) "
           "SELECT r.id, r.seq, a.dtype, COALESCE(sh.text, '?'), COALESCE(m.dst_device, a.device) AS dev, a.origin, "
           "COALESCE(w.text, '?'), "
           "COALESCE(r.stack, 0), (SELECT s.text FROM names n JOIN strings s ON s.id = n.name WHERE n.tensor = r.id "
           "AND (?3 = 0 OR n.seq < ?3) ORDER BY n.seq DESC LIMIT 1), COALESCE(r.free_seq, (SELECT l.seq FROM "
           "frees_late l WHERE l.tensor = r.id)) AS fseq, a.nbytes, COALESCE(r.pystack, 0) FROM tensor_rows r JOIN "
           "tensor_attrs a ON a.id = r.attrs LEFT JOIN m ON m.dst = r.id LEFT JOIN strings sh ON sh.id = a.shape "
           "LEFT JOIN strings w ON w.id = a.what WHERE (?1 < 0 OR dev = ?1) AND (?3 = 0 OR (r.seq < ?3 AND (fseq IS "
           "NULL OR fseq > ?3))) ORDER BY r.id");
    struct vw_sym *sym = vw_sym_new(t);
    if (!st || !sym) {
        if (st) sqlite3_finalize(st);
        vw_sym_free(sym);
        return -1;
    }
    sqlite3_bind_int64(st, 1, device);
    sqlite3_bind_int64(st, 3, err);
    struct site_cache sc = {0};
    char dev[32];
    int64_t rows = 0;
    if (json) {
        json_trace_open(t, f, index);
        fprintf(f, ", \"alive_at_seq\": ");
        if (err)
            fprintf(f, "%lld", (long long)err);
        else
            fprintf(f, "null");
        fprintf(f, ", \"tensors\": [");
    } else {
        fprintf(f, "%-8s %-28s %-8s %-14s %-7s %-22s %-6s %s\n", "id", "name", "dtype", "shape", "device", "made by",
                "freed", "created at");
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), seq = sqlite3_column_int64(st, 1);
        const char *name = col_text(st, 8, ""), *shape = col_text(st, 3, "?"), *what = col_text(st, 6, "?");
        int origin = sqlite3_column_int(st, 5), freed = sqlite3_column_type(st, 9) != SQLITE_NULL;
        const char *site = cached_site(&sc, sym, sqlite3_column_int64(st, 7), sqlite3_column_int64(st, 11), seq);
        vw_device_name(sqlite3_column_int64(st, 4), dev, sizeof dev);
        if (json) {
            fprintf(f, "%s{\"id\": %lld, \"name\": ", rows ? ", " : "", (long long)id);
            if (*name)
                vw_put_json_string(f, name);
            else
                fputs("null", f);
            fprintf(f, ", \"dtype\": \"%s\", \"shape\": ", vw_dtype_name(sqlite3_column_int(st, 2)));
            vw_put_json_string(f, shape);
            fprintf(f, ", \"device\": \"%s\", \"origin\": \"%s\", \"what\": ", dev, origin_name(origin));
            vw_put_json_string(f, what);
            fprintf(f, ", \"bytes\": %lld, \"created_seq\": %lld, \"freed_seq\": ",
                    (long long)sqlite3_column_int64(st, 10), (long long)seq);
            if (freed)
                fprintf(f, "%lld", (long long)sqlite3_column_int64(st, 9));
            else
                fputs("null", f);
            fputs(", \"created_at\": ", f);
            vw_put_json_string(f, site);
            fputc('}', f);
        } else {
            char idbuf[24], made[300];
            snprintf(idbuf, sizeof idbuf, "t%lld", (long long)id);
            snprintf(made, sizeof made, "%s%s%s", origin == 0 || origin == 4 ? "" : origin_name(origin),
                     origin == 0 || origin == 4 ? "" : " ", what);
            fprintf(f, "%-8s ", idbuf);
            vw_put_escaped_pad(f, *name ? name : "-", 28);
            fprintf(f, " %-8s ", vw_dtype_name(sqlite3_column_int(st, 2)));
            vw_put_escaped_pad(f, shape, 14);
            fprintf(f, " %-7s ", dev);
            vw_put_escaped_pad(f, made, 22);
            fprintf(f, " %-6s ", freed ? "yes" : "no");
            vw_put_escaped(f, site);
            fputc('\n', f);
        }
        rows++;
    }
    if (json)
        fprintf(f, "], \"count\": %lld, \"runtime\": %s}", (long long)rows,
                has_runtime_tensors(t, f, 1) ? "true" : "false");
    else
        fprintf(f, "%lld tensor%s%s%s\n", (long long)rows, rows == 1 ? "" : "s", device >= 0 ? " on " : "",
                device >= 0 ? vw_device_name(device, dev, sizeof dev) : "");
    if (!json && !rows) has_runtime_tensors(t, f, 0);
    sqlite3_finalize(st);
    site_cache_free(&sc);
    vw_sym_free(sym);
    return 0;
}

static int parse(int argc, char **argv, const char *cmd, void (*usage)(FILE *), int want_tensor, int allow_filter,
                 struct opts *o) {
    int n = 0;
    memset(o, 0, sizeof *o);
    o->device = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -2;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (allow_filter && !strcmp(a, "--alive-at-error")) {
            o->alive = 1;
        } else if (allow_filter && (!strcmp(a, "--device") || !strncmp(a, "--device=", 9))) {
            const char *v = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : NULL;
            if (!v || (o->device = parse_device(v)) < 0) {
                vw_error("%s: --device takes cpu, cuda or cuda:N%s%s%s", cmd, v ? ", not '" : "", v ? v : "",
                         v ? "'" : "");
                return -1;
            }
        } else if (a[0] == '-' && a[1] && strcmp(a, "--")) {
            vw_error("%s: unknown option '%s'; see 'devtrace %s --help'", cmd, a, cmd);
            return -1;
        } else if (strcmp(a, "--")) {
            if (n == (int)(sizeof o->files / sizeof o->files[0])) {
                vw_error("%s: too many files (at most %d)", cmd, n);
                return -1;
            }
            o->files[n++] = a;
        }
    }
    if (want_tensor) {
        if (n < 2) {
            usage(stderr);
            return -1;
        }
        o->tensor = o->files[--n];
    }
    if (!n) {
        usage(stderr);
        return -1;
    }
    return n;
}

/* A browsing command: parses, opens every file, then runs one() on each
 * (a heading per trace when several are read, one JSON object around all). */
static int run_each(int argc, char **argv, const char *cmd, void (*usage)(FILE *), int want_tensor, int allow_filter,
                    int (*one)(struct vw_trace *t, const struct opts *o, int index)) {
    struct opts o;
    int n = parse(argc, argv, cmd, usage, want_tensor, allow_filter, &o);
    if (n < 0) return n == -2 ? VW_EXIT_OK : VW_EXIT_USAGE;
    struct vw_trace *tr = vw_trace_open_all(o.files, n);
    if (!tr) return VW_EXIT_USAGE;
    int rc = VW_EXIT_OK;
    struct vw_doc doc;
    if (o.json && vw_doc_capture(&doc) < 0) {
        vw_trace_close_all(tr, n);
        return VW_EXIT_USAGE;
    }
    if (o.json) printf("{\"traces\": [");
    for (int i = 0; i < n && rc == VW_EXIT_OK; i++) {
        if (!o.json && n > 1) trace_heading(&tr[i], stdout);
        if (one(&tr[i], &o, i) < 0) rc = VW_EXIT_USAGE;
    }
    if (o.json && rc == VW_EXIT_OK) printf("]}\n");
    if (o.json && vw_doc_release(&doc, rc == VW_EXIT_OK) < 0 && rc == VW_EXIT_OK) {
        vw_error("%s: cannot write to standard output", cmd);
        rc = VW_EXIT_USAGE;
    }
    vw_trace_close_all(tr, n);
    return rc;
}

int vw_cmd_tensors(int argc, char **argv) { return run_each(argc, argv, "tensors", tensors_usage, 0, 1, tensors_one); }

/* ---------------------------------------------------------------- show */

static void show_usage(FILE *f) {
    fprintf(f, "usage: devtrace show [--json] FILE... TENSOR\n\n"
               "One tensor's whole life: how and where it was created, its names, the views and copies made\n"
               "from it, its transfers, the ops that used or wrote it, and where it was freed. TENSOR is an id\n"
               "(12 or t12) or a name the tensor had (fc1.weight); a name several tensors had lists them.\n\n"
               "Exit status: 0 read fine, 2 bad usage, an unreadable trace, or no such tensor.\n");
}

#define SHOW_MAX_USES 40 /* ops listed in text; --json lists all */

/* Resolves TENSOR in t: its id, 0 when absent, -1 when ambiguous (listed). */
static int64_t resolve_tensor(struct vw_trace *t, const char *spec) {
    const char *p = spec[0] == 't' ? spec + 1 : spec;
    char *end;
    long long id = strtoll(p, &end, 10);
    if (*p && !*end && id > 0) {
        sqlite3_stmt *st = vw_prep(t, "SELECT id FROM tensors WHERE id = ?");
        if (!st) return 0;
        sqlite3_bind_int64(st, 1, id);
        int found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        return found ? id : 0;
    }
    sqlite3_stmt *st = vw_prep(t, "SELECT DISTINCT n.tensor FROM names n JOIN strings s ON s.id = n.name WHERE "
                                  "s.text = ?1 UNION SELECT r.id FROM tensor_rows r WHERE r.attrs IN (SELECT a.id "
                                  "FROM tensor_attrs a JOIN strings s ON s.id = a.name WHERE s.text = ?1) "
                                  "ORDER BY 1 LIMIT 21");
    if (!st) return 0;
    sqlite3_bind_text(st, 1, spec, -1, SQLITE_TRANSIENT);
    int64_t ids[21];
    int n = 0;
    while (n < 21 && sqlite3_step(st) == SQLITE_ROW) ids[n++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (n <= 1) return n ? ids[0] : 0;
    fprintf(stderr, "devtrace: %s: %d%s tensors were named '", t->path, n > 20 ? 20 : n, n > 20 ? "+" : "");
    vw_put_escaped(stderr, spec);
    fprintf(stderr, "': ");
    for (int i = 0; i < n && i < 20; i++) fprintf(stderr, "%st%lld", i ? ", " : "", (long long)ids[i]);
    fprintf(stderr, "%s; give one id\n", n > 20 ? ", ..." : "");
    return -1;
}

struct show_ctx {
    struct vw_trace *t;
    struct vw_sym *sym;
    struct site_cache sc;
    int json, items; /* items printed in the current JSON array */
};

static const char *site(struct show_ctx *c, int64_t stack, int64_t pystack, int64_t seq) {
    return cached_site(&c->sc, c->sym, stack, pystack, seq);
}

/* One line of the life (text) or one object of an array (JSON): a kind,
 * the event's seq, a description and a call site. */
static void life_item(struct show_ctx *c, const char *kind, int64_t seq, const char *text, int64_t stack,
                      int64_t pystack) {
    const char *s = site(c, stack, pystack, seq);
    if (c->json) {
        fprintf(stdout, "%s{\"kind\": \"%s\", \"seq\": %lld, \"text\": ", c->items++ ? ", " : "", kind, (long long)seq);
        vw_put_json_string(stdout, text);
        fputs(", \"site\": ", stdout);
        vw_put_json_string(stdout, s);
        fputc('}', stdout);
    } else {
        printf("  %-9s #%-8lld ", kind, (long long)seq);
        vw_put_escaped(stdout, text);
        printf("\n  %-9s %-9s at ", "", "");
        vw_put_escaped(stdout, s);
        putchar('\n');
    }
}

static int show_one(struct vw_trace *t, const struct opts *o, int index) {
    const char *spec = o->tensor;
    int json = o->json;
    int64_t id = resolve_tensor(t, spec);
    if (id < 0) return -1;
    if (id == 0) {
        fprintf(stderr, "devtrace: %s: no tensor '", t->path);
        vw_put_escaped(stderr, spec);
        if (!has_runtime_tensors(t, NULL, 1)) {
            fprintf(stderr, "' ");
            has_runtime_tensors(t, stderr, 0);
            return -1;
        }
        fprintf(stderr, "' (give an id such as t12, or a name; 'devtrace tensors %s' lists them)\n", t->path);
        return -1;
    }
    struct show_ctx c = {.t = t, .json = json};
    c.sym = vw_sym_new(t);
    sqlite3_stmt *st = vw_prep(
        t, "SELECT t.seq, t.dtype, COALESCE(sh.text, '?'), COALESCE(sd.text, 'contiguous'), "
           "t.storage_offset, t.device, t.storage, t.nbytes, t.origin, COALESCE(w.text, '?'), "
           "t.src, t.op, COALESCE(d.text, ''), COALESCE(t.stack, 0), COALESCE(nm.text, ''), "
           "(SELECT s.text FROM ops o JOIN strings s ON s.id = o.name WHERE o.op = t.op), "
           "COALESCE(t.pystack, 0) FROM tensors t LEFT JOIN strings sh ON sh.id = t.shape LEFT JOIN strings sd ON "
           "sd.id = t.strides LEFT JOIN strings w ON w.id = t.what LEFT JOIN strings d ON "
           "d.id = t.detail LEFT JOIN strings nm ON nm.id = t.name WHERE t.id = ?");
    if (!c.sym || !st || (sqlite3_bind_int64(st, 1, id), sqlite3_step(st)) != SQLITE_ROW) {
        if (st) sqlite3_finalize(st);
        vw_sym_free(c.sym);
        return -1;
    }
    char dev[32], dev2[32], text[1024];
    int64_t cseq = sqlite3_column_int64(st, 0);
    int origin = sqlite3_column_int(st, 8);
    vw_device_name(sqlite3_column_int64(st, 5), dev, sizeof dev);
    const char *what = col_text(st, 9, "?"), *detail = col_text(st, 12, "");
    if (json) {
        json_trace_open(t, stdout, index);
        printf(", \"tensor\": {\"id\": %lld, \"dtype\": \"%s\", \"shape\": ", (long long)id,
               vw_dtype_name(sqlite3_column_int(st, 1)));
        vw_put_json_string(stdout, col_text(st, 2, "?"));
        printf(", \"strides\": ");
        vw_put_json_string(stdout, col_text(st, 3, "?"));
        printf(", \"storage_offset\": %lld, \"device\": \"%s\", \"storage\": %lld, \"bytes\": %lld, \"origin\": "
               "\"%s\", \"what\": ",
               (long long)sqlite3_column_int64(st, 4), dev, (long long)sqlite3_column_int64(st, 6),
               (long long)sqlite3_column_int64(st, 7), origin_name(origin));
        vw_put_json_string(stdout, what);
        printf("}, \"life\": [");
    } else {
        printf("%st%lld%s %s ", vw_color(VW_BOLD), (long long)id, vw_color(VW_RESET),
               vw_dtype_name(sqlite3_column_int(st, 1)));
        vw_put_escaped(stdout, col_text(st, 2, "?"));
        printf(" on %s", dev);
        if (strcmp(col_text(st, 3, ""), "contiguous"))
            printf(", strides "), vw_put_escaped(stdout, col_text(st, 3, ""));
        if (sqlite3_column_int64(st, 4)) printf(", offset %lld", (long long)sqlite3_column_int64(st, 4));
        printf(", %lld bytes, storage s%lld\n", (long long)sqlite3_column_int64(st, 7),
               (long long)sqlite3_column_int64(st, 6));
    }
    switch (origin) {
    case 1:
        snprintf(text, sizeof text, "created on %s as the output of %s (op #%lld)", dev, col_text(st, 15, what),
                 (long long)sqlite3_column_int64(st, 11));
        break;
    case 2:
        snprintf(text, sizeof text, "created on %s as a %s view of t%lld", dev, what,
                 (long long)sqlite3_column_int64(st, 10));
        break;
    case 3:
        snprintf(text, sizeof text, "created on %s as a copy of t%lld by %s", dev,
                 (long long)sqlite3_column_int64(st, 10), what);
        break;
    case 4: snprintf(text, sizeof text, "loaded on %s from checkpoint %s, key %s", dev, detail, what); break;
    default: snprintf(text, sizeof text, "created on %s by %s", dev, what); break;
    }
    if (*col_text(st, 14, "")) {
        size_t k = strlen(text);
        snprintf(text + k, sizeof text - k, ", named %s", col_text(st, 14, ""));
    }
    if (!json) printf("life:\n");
    life_item(&c, "created", cseq, text, sqlite3_column_int64(st, 13), sqlite3_column_int64(st, 16));
    sqlite3_finalize(st);

    /* the rest in event order: names, views and copies, transfers, ops, free */
    st = vw_prep(
        t, "WITH m AS MATERIALIZED (SELECT * FROM ops WHERE arg0_tensor = ?1 OR arg1_tensor = ?1 OR out0 = ?1) "
           "SELECT * FROM ("
           "SELECT n.seq, 1, s.text, NULL, NULL, NULL, e.stack, e.pystack FROM names n JOIN strings s ON s.id = "
           "n.name LEFT JOIN misc_events e ON e.seq = n.seq WHERE n.tensor = ?1 "
           "UNION ALL SELECT v.seq, 2, w.text, v.id, v.device, v.origin, v.stack, v.pystack FROM derived d JOIN "
           "tensors v ON v.id = d.tensor LEFT JOIN strings w ON w.id = v.what WHERE d.src = ?1 "
           "UNION ALL SELECT x.seq, 3, v.text, x.dst, x.dst_device, x.kind, e.stack, e.pystack FROM transfers x "
           "LEFT JOIN strings v ON v.id = x.via LEFT JOIN misc_events e ON e.seq = x.seq WHERE (x.src = ?1 AND "
           "x.kind != " DT_SQL_TRANSFER_TO ") OR (x.dst = ?1 AND x.kind = " DT_SQL_TRANSFER_MOVE ") "
           /* ops that read it (4) or wrote it in place (5): from the ops
            * rows that name it (one scan: m), a row per column that does
            * (k: first argument, second, out0); then the keyed tables */
           "UNION ALL SELECT o.seq, CASE k.k WHEN 2 THEN 5 ELSE 4 END, s.text, o.op, CASE k.k WHEN 0 THEN "
           "o.arg0_device WHEN 1 THEN o.arg1_device ELSE 0 END, CASE WHEN k.k < 2 THEN " VW_OP_STATUS_SQL
           " END, o.stack, o.pystack FROM m o CROSS JOIN (SELECT 0 AS k UNION ALL SELECT 1 UNION ALL SELECT 2) k "
           "JOIN strings s ON s.id = o.name WHERE CASE k.k WHEN 0 THEN o.nargs > 0 AND o.arg0_tensor = ?1 WHEN 1 "
           "THEN o.nargs > 1 AND o.arg1_tensor = ?1 ELSE o.out0 = ?1 END "
           "UNION ALL SELECT o.seq, 4, s.text, o.op, a.device, " VW_OP_STATUS_SQL
           ", o.stack, o.pystack FROM op_args_more a JOIN ops o ON o.op = a.op JOIN strings s "
           "ON s.id = o.name WHERE a.tensor = ?1 "
           "UNION ALL SELECT o.seq, 5, s.text, o.op, x.pos, NULL, o.stack, o.pystack FROM op_outputs_more x JOIN "
           "ops o ON o.op = x.op JOIN strings s ON s.id = o.name WHERE x.tensor = ?1 "
           "UNION ALL SELECT free_seq, 6, NULL, NULL, NULL, NULL, free_stack, free_pystack FROM tensors WHERE id = ?1 "
           "AND free_seq IS NOT NULL "
           "UNION ALL SELECT f.seq, 6, NULL, NULL, NULL, NULL, f.stack, f.pystack FROM frees_late f WHERE f.tensor = "
           "?1"
           ") ORDER BY 1");
    if (!st) {
        site_cache_free(&c.sc);
        vw_sym_free(c.sym);
        return -1;
    }
    sqlite3_bind_int64(st, 1, id);
    int uses = 0, freed = 0;
    int64_t more = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 0), stack = sqlite3_column_int64(st, 6);
        int kind = sqlite3_column_int(st, 1);
        const char *s2 = col_text(st, 2, "?");
        int64_t other = sqlite3_column_int64(st, 3), d = sqlite3_column_int64(st, 4);
        int k5 = sqlite3_column_int(st, 5);
        const char *label = "?";
        switch (kind) {
        case 1: label = "named", snprintf(text, sizeof text, "named %s", s2); break;
        case 2:
            label = k5 == 2 ? "view" : "copy";
            snprintf(text, sizeof text, k5 == 2 ? "t%lld made from it: a %s view" : "t%lld made from it on %s by %s",
                     (long long)other, k5 == 2 ? s2 : vw_device_name(d, dev2, sizeof dev2), s2);
            break;
        case 3:
            label = k5 == 3 ? "moved" : k5 == 2 ? "read" : "copied";
            if (k5 == 3)
                snprintf(text, sizeof text, "moved in place to %s by %s", vw_device_name(d, dev2, sizeof dev2), s2);
            else if (k5 == 2)
                snprintf(text, sizeof text, "read into host memory by %s", s2);
            else
                snprintf(text, sizeof text, "copied into t%lld by %s", (long long)other, s2);
            break;
        case 4:
        case 5:
            if (!json && uses >= SHOW_MAX_USES) {
                more++;
                continue;
            }
            uses++;
            label = kind == 4 ? "used" : "written";
            snprintf(text, sizeof text, kind == 4 ? "used by %s (op #%lld) on %s%s" : "written by %s (op #%lld)%s%s",
                     s2, (long long)other, kind == 4 ? vw_device_name(d, dev2, sizeof dev2) : "",
                     kind == 4 && k5 ? ", which failed" : "");
            break;
        case 6:
            label = "freed", freed = 1;
            snprintf(text, sizeof text, "freed");
            break;
        }
        life_item(&c, label, seq, text, stack, sqlite3_column_int64(st, 7));
    }
    sqlite3_finalize(st);
    if (json) {
        printf("], \"freed\": %s}", freed ? "true" : "false");
    } else {
        if (more) printf("  ... and %lld more uses (--json lists them all)\n", (long long)more);
        if (!freed) printf("  never freed: alive when the trace ended\n");
    }
    site_cache_free(&c.sc);
    vw_sym_free(c.sym);
    return 0;
}

int vw_cmd_show(int argc, char **argv) { return run_each(argc, argv, "show", show_usage, 1, 0, show_one); }

/* ---------------------------------------------------------------- transfers */

static void transfers_usage(FILE *f) {
    fprintf(f, "usage: devtrace transfers [--json] FILE...\n\n"
               "Transfers grouped by call site and direction: how many, bytes, the API, first and last time.\n"
               "Flags only what is worth changing: the same unchanged tensor copied again on every step (a\n"
               "constant moved inside the loop: move it once, before), device -> cpu -> device round trips\n"
               "inside the loop, and one tensor copied from a line far more often than its peers. The move of\n"
               "each batch and a module's .to are never flagged.\n\n"
               "Exit status: 0 read fine, 2 bad usage or an unreadable trace.\n");
}

#define MAX_GROUPS 4096

/* Rows grouped by call site, API and route. The route is, for the
 * runtime's transfers: from and to (source and destination device; to -1
 * for a read into host memory); for CUDA copies: from (the direction,
 * 0 HtoH 1 HtoD 2 DtoH 3 DtoD, -1 unknown), to (the device) and peer. */
struct group {
    char site[1200];
    char via[64]; /* the API */
    int64_t from, to, peer;
    int64_t count, bytes, distinct_src, pageable, failed, t_first, t_last, first_seq;
    /* runtime transfers only (transfer_patterns): */
    int64_t moves;                  /* in-place moves (a module's .to): never flagged */
    int64_t same_srcs, same_copies; /* tensors copied >= 3 times with no write between, and their copies */
    int64_t top_src, top_n;         /* the tensor copied most often here, and how often */
    int64_t trips;                  /* copies back to a device of what a device -> cpu copy made */
    const char *trip_from;          /* where that device -> cpu copy was (the site cache owns it) */
    /* CUDA copies only (cuda_copies): the tensor ops they were made in */
    struct joined {
        char what[200];  /* op name and the tensor it worked on, by name: 'to of "images"', or 'to' */
        int64_t example; /* that tensor's id (the first one's, when unnamed) */
        int64_t n;
    } ops[4];
    int64_t ops_more; /* copies in other ops than those four */
    int64_t ops_none; /* copies made outside any recorded op */
};

/* The group of (site, via, route) in g[0..n), or NULL. */
static struct group *group_find(struct group *g, int n, const char *site, const char *via, int64_t from, int64_t to,
                                int64_t peer) {
    for (int k = 0; k < n; k++)
        if (g[k].from == from && g[k].to == to && g[k].peer == peer && !strcmp(g[k].site, site) &&
            !strcmp(g[k].via, via))
            return &g[k];
    return NULL;
}

/* The group of (site, via, route) in g[0..*n), added when new; NULL when
 * MAX_GROUPS are taken. Stacks that differ only above the site merge. */
static struct group *group_of(struct group *g, int *n, const char *site, const char *via, int64_t from, int64_t to,
                              int64_t peer, int64_t seq) {
    struct group *x = group_find(g, *n, site, via, from, to, peer);
    if (x) return x;
    if (*n == MAX_GROUPS) return NULL;
    x = &g[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->site, sizeof x->site, "%s", site);
    snprintf(x->via, sizeof x->via, "%s", via);
    x->from = from, x->to = to, x->peer = peer, x->t_first = INT64_MAX, x->first_seq = seq;
    return x;
}

/* Adds one query row's aggregates to a group. */
static void group_add(struct group *x, int64_t count, int64_t bytes, int64_t distinct_src, int64_t t_min, int64_t t_max,
                      int64_t seq) {
    x->count = vw_add(x->count, count);
    x->bytes = vw_add(x->bytes, bytes);
    x->distinct_src = vw_add(x->distinct_src, distinct_src); /* exact unless one site's stacks share a source */
    if (t_min < x->t_first) x->t_first = t_min;
    if (t_max > x->t_last) x->t_last = t_max;
    if (seq < x->first_seq) x->first_seq = seq;
}

static int group_cmp(const void *a, const void *b) {
    const struct group *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
    return x->first_seq < y->first_seq ? -1 : x->first_seq > y->first_seq;
}

/* What a user should change about a group of runtime transfers, or NULL.
 * Only three patterns, in this order: a device -> cpu -> device round trip
 * repeated in the loop, the same unchanged tensor copied again (a constant
 * moved every step), one tensor copied far more often than its peers at
 * the same line. The move of each batch (a new tensor each step) and a
 * module's .to are what correct code does: never flagged. */
static const char *loop_flag(const struct group *g, const char **reason, char *buf, size_t size) {
    *reason = NULL;
    if (g->moves == g->count) return NULL;
    if (g->trips >= 3) {
        *reason = "round_trip";
        snprintf(buf, size,
                 "device -> cpu -> device round trip, %lld times: what the copy to the cpu at %s made comes back "
                 "to the device here; keep the computation on the device",
                 (long long)g->trips, g->trip_from ? g->trip_from : "?");
    } else if (g->same_srcs) {
        *reason = "same_content";
        snprintf(buf, size,
                 "the same content copied again each step (%lld copies of %lld unchanged tensor%s): move it once, "
                 "before the loop",
                 (long long)g->same_copies, (long long)g->same_srcs, g->same_srcs == 1 ? "" : "s");
    } else if (g->top_n >= 3 && g->distinct_src >= 2 && g->top_n * (g->distinct_src - 1) >= 4 * (g->count - g->top_n)) {
        *reason = "outlier";
        snprintf(buf, size,
                 "t%lld is copied %lld times here, its %lld peers %.1f times each on average: copy it as often as "
                 "they are (once a step), or keep it on the device",
                 (long long)g->top_src, (long long)g->top_n, (long long)(g->distinct_src - 1),
                 (double)(g->count - g->top_n) / (double)(g->distinct_src - 1));
    } else {
        return NULL;
    }
    return buf;
}

/* The group of a transfer_patterns row (columns 0-4: stack, pystack,
 * source device, destination device or -1, API; 5: a seq for the site). */
static struct group *pattern_group(sqlite3_stmt *st, struct site_cache *sc, struct vw_sym *sym, struct group *g,
                                   int *n) {
    const char *site =
        cached_site(sc, sym, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 5));
    struct group *x = group_of(g, n, site, col_text(st, 4, "?"), sqlite3_column_int64(st, 2),
                               sqlite3_column_int64(st, 3), 0, sqlite3_column_int64(st, 5));
    return x;
}

/* Fills each group's pattern counts (see struct group). A tensor's content
 * is "unchanged" between two copies when no op wrote it in place, or into
 * its storage, and no copy_ landed in it, between them. A round trip is a
 * device -> cpu copy whose result, a view of it, or an op's output made
 * from it, is copied to a device later. */
static int transfer_patterns(struct vw_trace *t, struct vw_sym *sym, struct site_cache *sc, struct group *g, int *n) {
#define PATTERN_BASE                                                                                                   \
    "WITH base AS MATERIALIZED (SELECT x.seq, COALESCE(e.stack, 0) AS stack, COALESCE(e.pystack, 0) AS pystack, "      \
    "x.src_device AS sd, CASE WHEN x.dst IS NULL THEN -1 ELSE x.dst_device END AS dd, x.via, x.src, x.dst, x.kind "    \
    "FROM transfers x LEFT JOIN misc_events e ON e.seq = x.seq) "
    /* per group: its moves, the tensor copied most often (SQLite's bare
     * columns: src and a of the max() row) and the tensors copied >= 3 times
     * with nothing written into them in between */
    sqlite3_stmt *st = vw_prep(
        t, PATTERN_BASE
        ", per_src AS MATERIALIZED (SELECT stack, pystack, sd, dd, via, src, kind = " DT_SQL_TRANSFER_MOVE
        " AS mv, count(*) AS n, min(seq) "
        "AS a, max(seq) AS b FROM base GROUP BY 1, 2, 3, 4, 5, 6, 7), "
        "cand AS MATERIALIZED (SELECT DISTINCT r.storage FROM per_src p JOIN tensor_rows r ON r.id = p.src WHERE "
        "p.n >= 3 AND NOT p.mv), "
        "writes AS MATERIALIZED (SELECT r.storage, o.seq FROM ops o JOIN tensor_rows r ON r.id = o.out0 WHERE "
        "o.out0 IS NOT NULL AND r.storage IN cand UNION ALL SELECT r.storage, o.seq FROM op_outputs_more m JOIN ops "
        "o ON o.op = m.op JOIN tensor_rows r ON r.id = m.tensor WHERE r.storage IN cand UNION ALL SELECT r.storage, "
        "x.seq FROM transfers x JOIN tensor_rows r ON r.id = x.dst WHERE x.kind = " DT_SQL_TRANSFER_COPY
        " AND r.storage IN cand), "
        "marked AS (SELECT p.*, CASE WHEN p.n >= 3 AND NOT p.mv AND NOT EXISTS (SELECT 1 FROM writes w WHERE "
        "w.storage = (SELECT storage FROM tensor_rows r WHERE r.id = p.src) AND w.seq BETWEEN p.a AND p.b) THEN 1 "
        "ELSE 0 END AS same FROM per_src p) "
        "SELECT stack, pystack, sd, dd, COALESCE(v.text, '?'), a, sum(CASE WHEN mv THEN n ELSE 0 END), "
        "max(CASE WHEN mv THEN 0 ELSE n END), src, sum(same), sum(same * n) FROM marked p LEFT JOIN strings v ON "
        "v.id = p.via GROUP BY 1, 2, 3, 4, p.via");
    if (!st) return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct group *x = pattern_group(st, sc, sym, g, n);
        if (!x) continue;
        x->moves += sqlite3_column_int64(st, 6);
        if (sqlite3_column_int64(st, 7) > x->top_n)
            x->top_n = sqlite3_column_int64(st, 7), x->top_src = sqlite3_column_int64(st, 8);
        x->same_srcs += sqlite3_column_int64(st, 9), x->same_copies += sqlite3_column_int64(st, 10);
    }
    sqlite3_finalize(st);

    /* round trips: only when there is a device -> cpu copy into a tensor */
    st = vw_prep(t, "SELECT EXISTS(SELECT 1 FROM transfers WHERE src_device >> 16 <> 0 AND dst_device = 0 AND dst IS "
                    "NOT NULL AND kind <> " DT_SQL_TRANSFER_MOVE ")");
    int any = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    if (st) sqlite3_finalize(st);
    if (!any) return 0;
    st = vw_prep(
        t, PATTERN_BASE
        ", down AS MATERIALIZED (SELECT seq AS dseq, dst AS b FROM base WHERE sd >> 16 <> 0 AND dd = 0 AND dst IS NOT "
        "NULL AND kind <> " DT_SQL_TRANSFER_MOVE "), "
        "fed AS MATERIALIZED (SELECT o.op, d.dseq FROM ops o JOIN down d ON d.b = o.arg0_tensor UNION SELECT o.op, "
        "d.dseq FROM ops o JOIN down d ON d.b = o.arg1_tensor), "
        "fam AS MATERIALIZED (SELECT b AS t, dseq FROM down UNION ALL SELECT v.tensor, d.dseq FROM derived v JOIN down "
        "d ON d.b = v.src UNION ALL SELECT r.id, f.dseq FROM tensor_rows r JOIN fed f ON f.op = r.op), "
        "trip AS (SELECT u.stack, u.pystack, u.sd, u.dd, u.via, u.seq, max(f.dseq) AS dseq FROM base u JOIN fam f ON "
        "f.t = u.src AND f.dseq < u.seq WHERE u.sd = 0 AND u.dd >> 16 <> 0 AND u.kind <> " DT_SQL_TRANSFER_MOVE
        " GROUP BY u.seq) "
        "SELECT p.stack, p.pystack, p.sd, p.dd, COALESCE(v.text, '?'), min(p.seq), count(*), COALESCE(e.stack, 0), "
        "COALESCE(e.pystack, 0), p.dseq FROM trip p LEFT JOIN strings v ON v.id = p.via LEFT JOIN misc_events e ON "
        "e.seq = p.dseq GROUP BY 1, 2, 3, 4, p.via");
    if (!st) return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct group *x = pattern_group(st, sc, sym, g, n);
        if (!x) continue;
        x->trips += sqlite3_column_int64(st, 6);
        x->trip_from =
            cached_site(sc, sym, sqlite3_column_int64(st, 7), sqlite3_column_int64(st, 8), sqlite3_column_int64(st, 9));
    }
    sqlite3_finalize(st);
    return 0;
#undef PATTERN_BASE
}

/* The tensor op each CUDA copy was made in: the innermost op open on the
 * copy's thread at its seq. Every producer wraps the work of an op between
 * its begin and its end on the calling thread (libdtrt's ops, the PyTorch
 * adapter's calls, the libtorch observer's RecordFunction scopes), and the
 * copies an op asks for are issued there; so a copy is joined to the
 * tensors of the op that made it, where an address could not say (a
 * caching allocator hands one device address to tensor after tensor).
 * A copy outside any op that the runtime then reports as a read of a
 * tensor's values to the host (libdtrt's to_host and item, PyTorch's
 * .item(), .tolist(), .numpy(): a transfer of kind read, fired once the
 * copy is done, next on that thread) is joined to that read.
 * One pass over ops, reads and copies in seq order, a stack of open ops
 * per thread. Fills seqs[] and ops[] of n copies, sorted by seq: the op,
 * or minus the read's seq, or 0 when neither; -1 after saying why. */
struct copy_ops {
    int64_t *seq, *op;
    size_t n;
};
#define JOIN_THREADS 256
#define JOIN_DEPTH   64
static int copy_ops_join(struct vw_trace *t, struct copy_ops *j) {
    memset(j, 0, sizeof *j);
    sqlite3_stmt *st = vw_prep(
        t, "SELECT 0, seq, thread, op FROM ops UNION ALL SELECT 2, seq + len, thread, op FROM ops WHERE len IS NOT "
           "NULL UNION ALL SELECT 2, seq, thread, op FROM misc_events WHERE kind = " DT_SQL_EV_OP_END
           " UNION ALL SELECT 1, seq, thread, "
           "0 FROM cuda_calls WHERE kind = " DT_SQL_CUDA_MEMCPY
           " UNION ALL SELECT 3, x.seq, e.thread, x.kind FROM transfers x JOIN misc_events e ON e.seq = x.seq "
           "ORDER BY 2, 1");
    if (!st) return -1;
    struct open {
        int64_t thread;
        int depth;
        int64_t op[JOIN_DEPTH];
        size_t pend[8]; /* copies outside any op waiting for a read (their index in j), the last 8 */
        int npend;
    } *th = calloc(JOIN_THREADS, sizeof *th);
    size_t cap = 0;
    int nth = 0, rc = 0;
    if (!th) rc = -1;
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        int what = sqlite3_column_int(st, 0);
        int64_t seq = sqlite3_column_int64(st, 1), thread = sqlite3_column_int64(st, 2),
                op = sqlite3_column_int64(st, 3);
        struct open *o = NULL;
        for (int k = 0; k < nth && !o; k++)
            if (th[k].thread == thread) o = &th[k];
        if (!o && nth < JOIN_THREADS) o = &th[nth++], o->thread = thread, o->depth = 0;
        if (what == 3) {      /* a transfer: a read joins the copies waiting for it, anything else ends the wait */
            if (o && op == 2) /* kind read */
                for (int k = 0; k < o->npend; k++) j->op[o->pend[k]] = -seq;
            if (o) o->npend = 0;
            continue;
        }
        if (o && what != 1) o->npend = 0;
        if (what == 0 && o) {
            if (o->depth == JOIN_DEPTH) memmove(o->op, o->op + 1, sizeof o->op[0] * (JOIN_DEPTH - 1)), o->depth--;
            o->op[o->depth++] = op;
        } else if (what == 2 && o) { /* its end: and of any op begun in it and never ended (an error inside) */
            int k = o->depth - 1;
            while (k >= 0 && o->op[k] != op) k--;
            if (k >= 0) o->depth = k;
        } else if (what == 1) {
            if (j->n == cap) {
                size_t ncap = cap ? 2 * cap : 256;
                int64_t *a = realloc(j->seq, ncap * sizeof *a), *b = a ? realloc(j->op, ncap * sizeof *b) : NULL;
                if (a) j->seq = a;
                if (!b) {
                    rc = -1;
                    break;
                }
                j->op = b, cap = ncap;
            }
            j->seq[j->n] = seq;
            j->op[j->n++] = o && o->depth ? o->op[o->depth - 1] : 0;
            if (o && !o->depth) {
                if (o->npend == 8) memmove(o->pend, o->pend + 1, sizeof o->pend[0] * 7), o->npend--;
                o->pend[o->npend++] = j->n - 1;
            }
        }
    }
    sqlite3_finalize(st);
    free(th);
    if (rc) {
        free(j->seq), free(j->op);
        memset(j, 0, sizeof *j);
        vw_error("out of memory");
    }
    return rc;
}

static int64_t copy_op_of(const struct copy_ops *j, int64_t seq) {
    size_t lo = 0, hi = j->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->seq[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < j->n && j->seq[lo] == seq ? j->op[lo] : 0;
}

/* An op's name and its first tensor argument's name as of seq (ops:
 * COPY_OP_SQL), or a read's API and its tensor's (reads: COPY_READ_SQL):
 * 'to of "images"', 'item of "loss"', or the name alone ('to') when that
 * tensor is unnamed; its id in *tensor (0 when none). */
#define COPY_OP_SQL                                                                                                    \
    "SELECT name, x, (SELECT s2.text FROM names m JOIN strings s2 ON s2.id = m.name WHERE m.tensor = x AND m.seq <= "  \
    "?2 ORDER BY m.seq DESC LIMIT 1) FROM (SELECT s.text AS name, (SELECT a.tensor FROM op_args a WHERE a.op = o.op "  \
    "ORDER BY a.pos LIMIT 1) AS x FROM ops o LEFT JOIN strings s ON s.id = o.name WHERE o.op = ?1)"
#define COPY_READ_SQL                                                                                                  \
    "SELECT COALESCE(v.text, 'read'), x.src, (SELECT s2.text FROM names m JOIN strings s2 ON s2.id = m.name WHERE "    \
    "m.tensor = x.src AND m.seq <= ?2 ORDER BY m.seq DESC LIMIT 1) FROM transfers x LEFT JOIN strings v ON v.id = "    \
    "x.via WHERE x.seq = ?1"
static void op_and_tensor(sqlite3_stmt *ops, sqlite3_stmt *reads, int64_t op, int64_t seq, char *buf, size_t size,
                          int64_t *tensor) {
    sqlite3_stmt *q = op < 0 ? reads : ops; /* a read: minus its transfer's seq */
    if (op < 0) op = -op;
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, op);
    sqlite3_bind_int64(q, 2, seq);
    *tensor = 0;
    if (sqlite3_step(q) != SQLITE_ROW) {
        snprintf(buf, size, "op %lld", (long long)op);
        return;
    }
    const char *name = col_text(q, 0, "?"), *tname = col_text(q, 2, "");
    *tensor = sqlite3_column_int64(q, 1);
    if (tname[0])
        snprintf(buf, size, "%.120s of \"%.60s\"", name, tname);
    else
        snprintf(buf, size, "%.120s", name);
}

/* Each group's copies by the op they were made in (copy_ops_join); the
 * number of copies made in one, or -1 after saying why. */
static int64_t join_copies(struct vw_trace *t, struct vw_sym *sym, struct group *g, int n) {
    int64_t joined = 0;
    struct copy_ops j;
    if (copy_ops_join(t, &j) < 0) return -1;
    sqlite3_stmt *st = vw_prep(t, "SELECT c.seq, COALESCE(c.stack, 0), COALESCE(c.pystack, 0), COALESCE(c.dir, -1), "
                                  "COALESCE(c.device, -1), COALESCE(c.peer, -1), COALESCE(a.text, '?') FROM "
                                  "cuda_calls c LEFT JOIN strings a ON a.id = c.api WHERE c.kind = "
                                  DT_SQL_CUDA_MEMCPY);
    sqlite3_stmt *q = st ? vw_prep(t, COPY_OP_SQL) : NULL, *r = q ? vw_prep(t, COPY_READ_SQL) : NULL;
    struct site_cache sc = {0};
    while (r && sqlite3_step(st) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 0);
        const char *site = cached_site(&sc, sym, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), seq);
        const char *api = col_text(st, 6, "?");
        int64_t dir = sqlite3_column_int64(st, 3), dev = sqlite3_column_int64(st, 4),
                peer = sqlite3_column_int64(st, 5);
        struct group *x = group_find(g, n, site, api, dir, dev, peer);
        if (!x) continue; /* a group not shown */
        int64_t op = copy_op_of(&j, seq), tensor;
        if (!op) {
            x->ops_none++;
            continue;
        }
        char what[200];
        op_and_tensor(q, r, op, seq, what, sizeof what, &tensor);
        int k = 0;
        while (k < 4 && x->ops[k].n && strcmp(x->ops[k].what, what)) k++;
        if (k == 4) {
            x->ops_more++;
            continue;
        }
        if (!x->ops[k].n) snprintf(x->ops[k].what, sizeof x->ops[k].what, "%s", what), x->ops[k].example = tensor;
        x->ops[k].n++;
        joined++;
    }
    if (st) sqlite3_finalize(st);
    if (q) sqlite3_finalize(q);
    if (r) sqlite3_finalize(r);
    site_cache_free(&sc);
    free(j.seq), free(j.op);
    return r ? joined : -1;
}

/* Whether the trace holds CUDA runtime copies (cuda_calls of kind DT_CUDA_MEMCPY). */
static int has_cuda_copies(struct vw_trace *t) {
    sqlite3_stmt *st = vw_prep(t, "SELECT EXISTS(SELECT 1 FROM cuda_calls WHERE kind = " DT_SQL_CUDA_MEMCPY ")");
    int yes = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    if (st) sqlite3_finalize(st);
    return yes;
}

static const char *cuda_flag(const struct group *g, char *buf, size_t size) {
    if (g->count < 3) return NULL;
    if (g->from == 2)
        snprintf(buf, size,
                 "runs every step: a device-to-host copy %lld times, each waits for the device (.item(), .cpu(), "
                 "printing a device tensor); keep the value on the device or read it less often",
                 (long long)g->count);
    else if (g->from == 1 && g->distinct_src < g->count)
        snprintf(buf, size,
                 "runs every step: copies from the same host address again each time (%lld copies from %lld "
                 "address%s); if the data does not change, copy it once, before the loop",
                 (long long)g->count, (long long)g->distinct_src, g->distinct_src == 1 ? "" : "es");
    else if (g->from == 1 && g->pageable == g->count)
        snprintf(buf, size,
                 "runs every step (%lld times) from pageable memory, which cannot overlap with compute: pin the "
                 "source (pin_memory=True in a DataLoader) and copy with non_blocking=True",
                 (long long)g->count);
    else
        return NULL; /* a copy each step, of new data: what a training loop does */
    return buf;
}

/* "host -> cuda:0" and the like. */
static const char *cuda_route(const struct group *g, char *buf, size_t size) {
    char d[32], p[32];
    if (g->to >= 0)
        snprintf(d, sizeof d, "cuda:%lld", (long long)g->to);
    else
        snprintf(d, sizeof d, "a device");
    if (g->peer >= 0)
        snprintf(p, sizeof p, "cuda:%lld", (long long)g->peer);
    else
        snprintf(p, sizeof p, "%s", d);
    switch (g->from) {
    case 0: snprintf(buf, size, "host -> host"); break;
    case 1: snprintf(buf, size, "host -> %s", d); break;
    case 2: snprintf(buf, size, "%s -> host", d); break;
    case 3: snprintf(buf, size, "%s -> %s", p, d); break;
    default: snprintf(buf, size, "direction unknown"); break;
    }
    return buf;
}

/* CUDA runtime copies (cudaMemcpy and its family, recorded from any program
 * on libcudart: PyTorch, a ctypes host, a CUDA C++ program), grouped by call
 * site (the Python line when recorded, else the program's own native frame),
 * direction, devices and API. Flags the per-step patterns a user may not
 * know about: a device-to-host read on every step (.item(), .cpu(), printing
 * a device tensor: each waits for the device), the same host address copied
 * to the device again and again, and copies from pageable memory (which
 * cannot overlap with compute: pin the source). */
static int cuda_copies(struct vw_trace *t, struct vw_sym *sym, int json, int alone) {
    sqlite3_stmt *st = vw_prep(
        t, "SELECT COALESCE(c.stack, 0), COALESCE(c.pystack, 0), COALESCE(c.dir, -1), COALESCE(c.device, -1), "
           "COALESCE(c.peer, -1), COALESCE(a.text, '?'), count(*), COALESCE(sum(c.bytes), 0), count(DISTINCT c.src), "
           "min(c.t), max(c.t), min(c.seq), COALESCE(sum(c.host = 0), 0), COALESCE(sum(c.rc <> 0), 0) FROM "
           "cuda_calls c LEFT JOIN strings a ON a.id = c.api WHERE c.kind = " DT_SQL_CUDA_MEMCPY
           " GROUP BY 1, 2, 3, 4, 5, c.api ORDER BY 12");
    struct group *g = st ? calloc(MAX_GROUPS, sizeof *g) : NULL;
    if (!g) {
        if (st) sqlite3_finalize(st), vw_error("out of memory");
        return -1;
    }
    int n = 0;
    int64_t total = 0, bytes = 0, dropped = 0;
    struct vw_frame f;
    char site[1200];
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 11);
        if (!vw_sym_event_site(sym, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), seq, &f))
            snprintf(site, sizeof site, "(unknown site)");
        else
            vw_site_str(&f, site, sizeof site);
        int dir = sqlite3_column_int(st, 2);
        int64_t dev = sqlite3_column_int64(st, 3), peer = sqlite3_column_int64(st, 4);
        const char *api = col_text(st, 5, "?");
        total = vw_add(total, sqlite3_column_int64(st, 6)), bytes = vw_add(bytes, sqlite3_column_int64(st, 7));
        struct group *x = group_of(g, &n, site, api, dir, dev, peer, seq);
        if (!x) {
            dropped++;
            continue;
        }
        group_add(x, sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7), sqlite3_column_int64(st, 8),
                  sqlite3_column_int64(st, 9), sqlite3_column_int64(st, 10), seq);
        x->pageable = vw_add(x->pageable, sqlite3_column_int64(st, 12));
        x->failed = vw_add(x->failed, sqlite3_column_int64(st, 13));
    }
    sqlite3_finalize(st);
    int64_t joined = join_copies(t, sym, g, n);
    if (joined < 0) {
        free(g);
        return -1;
    }
    qsort(g, (size_t)n, sizeof *g, group_cmp);
    static const char *dirs[] = {"HtoH", "HtoD", "DtoH", "DtoD"};
    char route[96], flag[512];
    if (json)
        printf(", \"cuda_copies\": %lld, \"cuda_bytes\": %lld, \"cuda_sites\": [", (long long)total, (long long)bytes);
    else if (n)
        printf("%s%lld CUDA runtime cop%s (cudaMemcpy and its family), %lld bytes, from %d call site%s\n",
               alone ? "" : "\n", (long long)total, total == 1 ? "y" : "ies", (long long)bytes, n, n == 1 ? "" : "s");
    for (int k = 0; k < n; k++) {
        const struct group *x = &g[k];
        const char *fl = cuda_flag(x, flag, sizeof flag);
        cuda_route(x, route, sizeof route);
        if (json) {
            printf("%s{\"site\": ", k ? ", " : "");
            vw_put_json_string(stdout, x->site);
            printf(", \"api\": ");
            vw_put_json_string(stdout, x->via);
            printf(", \"direction\": \"%s\", \"route\": \"%s\", \"count\": %lld, \"bytes\": %lld, "
                   "\"distinct_sources\": %lld, \"pageable\": %lld, \"failed\": %lld, \"first_ms\": %.3f, "
                   "\"last_ms\": %.3f, \"per_step\": %s, \"flag\": ",
                   x->from >= 0 && x->from <= 3 ? dirs[x->from] : "unknown", route, (long long)x->count,
                   (long long)x->bytes, (long long)x->distinct_src, (long long)x->pageable, (long long)x->failed,
                   x->t_first / 1e6, x->t_last / 1e6, fl ? "true" : "false");
            if (fl)
                vw_put_json_string(stdout, fl);
            else
                fputs("null", stdout);
            fputs(", \"ops\": [", stdout);
            for (int i = 0; i < 4 && x->ops[i].n; i++) {
                fputs(i ? ", {\"op\": " : "{\"op\": ", stdout);
                vw_put_json_string(stdout, x->ops[i].what);
                printf(", \"tensor\": %lld, \"count\": %lld}", (long long)x->ops[i].example, (long long)x->ops[i].n);
            }
            printf("], \"in_other_ops\": %lld, \"outside_ops\": %lld}", (long long)x->ops_more, (long long)x->ops_none);
        } else {
            printf("\n%s", vw_color(VW_BOLD));
            vw_put_escaped(stdout, x->site);
            printf("%s\n  %s by ", vw_color(VW_RESET), route);
            vw_put_escaped(stdout, x->via);
            printf(": %lld x, %lld bytes, first at %.3f ms, last at %.3f ms", (long long)x->count, (long long)x->bytes,
                   x->t_first / 1e6, x->t_last / 1e6);
            if (x->pageable && x->from != 3) printf(", %lld from pageable memory", (long long)x->pageable);
            if (x->failed) printf(", %s%lld failed%s", vw_color(VW_RED), (long long)x->failed, vw_color(VW_RESET));
            putchar('\n');
            if (!x->ops[0].n && x->ops_none && joined) /* a runtime's program, and this copy in none of its ops */
                printf("  made outside any tensor op\n");
            if (x->ops[0].n) {
                fputs("  made by ", stdout);
                for (int i = 0; i < 4 && x->ops[i].n; i++) {
                    fputs(i ? ", " : "", stdout);
                    vw_put_escaped(stdout, x->ops[i].what);
                    if (!strchr(x->ops[i].what, '"') && x->ops[i].example)
                        printf(" (t%lld%s)", (long long)x->ops[i].example, x->ops[i].n > 1 ? ", ..." : "");
                    printf(" x %lld", (long long)x->ops[i].n);
                }
                if (x->ops_more) printf(", %lld in other ops", (long long)x->ops_more);
                if (x->ops_none) printf(", %lld outside any tensor op", (long long)x->ops_none);
                putchar('\n');
            }
            if (fl) printf("  %s%s%s\n", vw_color(VW_YELLOW), fl, vw_color(VW_RESET));
        }
    }
    if (json)
        printf("]");
    else if (dropped)
        printf("(%lld more groups not shown)\n", (long long)dropped);
    free(g);
    return 0;
}

static int transfers_one(struct vw_trace *t, const struct opts *o, int index) {
    int json = o->json;
    sqlite3_stmt *st = vw_prep(t, "SELECT COALESCE(e.stack, 0), x.src_device, CASE WHEN x.dst IS NULL THEN -1 "
                                  "ELSE x.dst_device END, "
                                  "count(*), sum(x.bytes), count(DISTINCT x.src), min(e.t), max(e.t), min(x.seq), "
                                  "COALESCE(v.text, '?'), COALESCE(e.pystack, 0) FROM transfers x LEFT JOIN "
                                  "misc_events e ON e.seq = x.seq LEFT JOIN strings v ON v.id = x.via GROUP BY 1, 2, "
                                  "3, x.via, 11 ORDER BY 9");
    struct vw_sym *sym = vw_sym_new(t);
    struct group *g = calloc(MAX_GROUPS, sizeof *g);
    if (!st || !sym || !g) {
        if (st) sqlite3_finalize(st);
        vw_sym_free(sym);
        free(g);
        if (!g) vw_error("out of memory");
        return -1;
    }
    struct site_cache sc = {0};
    int n = 0;
    int64_t total = 0, bytes = 0, dropped_groups = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 8);
        const char *s = cached_site(&sc, sym, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 10), seq);
        int64_t from = sqlite3_column_int64(st, 1), to = sqlite3_column_int64(st, 2);
        const char *via = col_text(st, 9, "?");
        total = vw_add(total, sqlite3_column_int64(st, 3)), bytes = vw_add(bytes, sqlite3_column_int64(st, 4));
        struct group *x = group_of(g, &n, s, via, from, to, 0, seq);
        if (!x) {
            dropped_groups++;
            continue;
        }
        group_add(x, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
                  sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7), seq);
    }
    sqlite3_finalize(st);
    if (transfer_patterns(t, sym, &sc, g, &n) < 0) {
        vw_sym_free(sym);
        free(g);
        site_cache_free(&sc);
        return -1;
    }
    qsort(g, (size_t)n, sizeof *g, group_cmp);
    char d1[32], d2[32], flag[1600];
    if (json) {
        json_trace_open(t, stdout, index);
        printf(", \"transfers\": %lld, \"bytes\": %lld, \"sites\": [", (long long)total, (long long)bytes);
    } else if (total || !has_cuda_copies(t)) {
        printf("%lld transfer%s, %lld bytes, from %d call site%s\n", (long long)total, total == 1 ? "" : "s",
               (long long)bytes, n, n == 1 ? "" : "s");
    }
    for (int k = 0; k < n; k++) {
        const struct group *x = &g[k];
        vw_device_name(x->from, d1, sizeof d1);
        if (x->to >= 0)
            vw_device_name(x->to, d2, sizeof d2);
        else
            snprintf(d2, sizeof d2, "host memory");
        const char *reason, *fl = loop_flag(x, &reason, flag, sizeof flag);
        if (json) {
            printf("%s{\"site\": ", k ? ", " : "");
            vw_put_json_string(stdout, x->site);
            printf(", \"from\": \"%s\", \"to\": \"%s\", \"via\": ", d1, x->to >= 0 ? d2 : "host");
            vw_put_json_string(stdout, x->via);
            printf(", \"count\": %lld, \"bytes\": %lld, \"distinct_sources\": %lld, \"first_ms\": %.3f, "
                   "\"last_ms\": %.3f, \"per_step\": %s, \"flag\": ",
                   (long long)x->count, (long long)x->bytes, (long long)x->distinct_src, x->t_first / 1e6,
                   x->t_last / 1e6, fl ? "true" : "false");
            if (fl)
                vw_put_json_string(stdout, fl);
            else
                fputs("null", stdout);
            printf(", \"reason\": ");
            if (reason)
                printf("\"%s\"", reason);
            else
                fputs("null", stdout);
            putchar('}');
        } else {
            printf("\n%s", vw_color(VW_BOLD));
            vw_put_escaped(stdout, x->site);
            printf("%s\n  %s -> %s by ", vw_color(VW_RESET), d1, d2);
            vw_put_escaped(stdout, x->via);
            printf(": %lld x, %lld bytes, first at %.3f ms, last at %.3f ms\n", (long long)x->count,
                   (long long)x->bytes, x->t_first / 1e6, x->t_last / 1e6);
            if (fl) {
                printf("  %s", vw_color(VW_YELLOW));
                vw_put_escaped(stdout, fl);
                printf("%s\n", vw_color(VW_RESET));
            }
        }
    }
    if (json)
        printf("]");
    else if (dropped_groups)
        printf("(%lld more groups not shown)\n", (long long)dropped_groups);
    free(g);
    site_cache_free(&sc);
    int rc = cuda_copies(t, sym, json, total == 0);
    if (json) printf("}");
    vw_sym_free(sym);
    return rc;
}

int vw_cmd_transfers(int argc, char **argv) {
    return run_each(argc, argv, "transfers", transfers_usage, 0, 0, transfers_one);
}
