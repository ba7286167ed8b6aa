/* devtrace export: the traces as a Chrome trace / Perfetto JSON timeline
 * (--format chrome: ops and CUDA runtime calls as slices of their recorded
 * duration on one track per thread, nested or disjoint per track;
 * transfers, errors and C++ exceptions (a rethrow shown once) as instant
 * events, transfers and device work (copies, memsets, kernel launches)
 * again on the device's track; call sites and tensor ids in args; one
 * process per trace, "host pid N (program)", two traces never sharing a
 * pid; clocks aligned on their start times), or
 * as one self-contained HTML file (--format html): the report of each
 * mismatch with its chain and fix, and a timeline that fills its column,
 * zooms and pans, with a legend and each mismatch's events outlined on
 * request, drawn by inline script from JSON embedded in the page; no
 * network access needed to view it.
 * Everything from the trace reaches the page as JSON data and is put in the
 * document with textContent, never parsed as HTML. */
#include "vw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HTML_MAX_OPS 20000 /* ops drawn in the HTML timeline: the last ones */

static void usage(FILE *f) {
    fprintf(f, "usage: devtrace export --format chrome|html -o OUT FILE...\n\n"
               "  --format chrome  a Chrome trace / Perfetto JSON timeline: one process per trace and host,\n"
               "                   ops and CUDA calls (nested slices) and transfers (instants) per thread,\n"
               "                   with call sites and tensor ids, transfers per device, errors; open it in\n"
               "                   ui.perfetto.dev or chrome://tracing\n"
               "  --format html    one HTML file: the report (each mismatch, its chain and its fix) and a\n"
               "                   timeline (zoom, pan, legend, a mismatch's events outlined); opens offline\n"
               "                   in any browser\n"
               "  -o OUT           the file to write (replaced if it exists; '-' for standard output)\n\n"
               "Exit status: 0 written, 2 bad usage, an unreadable trace, or OUT cannot be written.\n");
}

struct tl {
    struct vw_trace *t;
    int64_t pid, start_ns; /* the process; its start on the Unix clock */
};

/* A CUDA runtime call's device as the trace's packed device number (the
 * device track it is drawn on), and the condition for drawing it there:
 * copies, memsets and kernel launches with a known device. */
#define CUDA_TRACK_SQL     "(65536 | device)"
#define CUDA_ON_DEVICE_SQL                                                                                             \
    "kind IN (" DT_SQL_CUDA_MEMCPY ", " DT_SQL_CUDA_MEMSET ", " DT_SQL_CUDA_LAUNCH                                     \
    ") AND device IS NOT NULL AND device >= 0 AND device < 65536"
/* A CUDA runtime call as text: "cudaMemcpy HtoD 1024 bytes", "cudaLaunchKernel". */
#define CUDA_TEXT_SQL                                                                                                  \
    "COALESCE(a.text, '?') || COALESCE(' ' || " DT_VOCAB_SQL_CASE("c.dir", DT_CUDA_DIRS) ", '') || CASE WHEN "        \
    "c.kind IN (" DT_SQL_CUDA_MEMCPY ", " DT_SQL_CUDA_MALLOC ", " DT_SQL_CUDA_MEMSET ") THEN ' ' || c.bytes || "       \
    "' bytes' ELSE '' END || CASE WHEN c.rc <> 0 THEN ' (failed: ' || c.rc || ')' ELSE '' END"
/* An error row's title: what kind of error it is. */
#define ERROR_TITLE_SQL                                                                                                \
    "CASE WHEN r.signal IS NOT NULL THEN 'fatal signal ' || r.signal WHEN r.first_arg IS NOT NULL OR r.device_a IS "   \
    "NOT NULL THEN 'device mismatch' WHEN r.exception IS NOT NULL THEN 'exception ' || r.exception ELSE 'error' END"

/* A slice of the Chrome timeline, kept until its track is known whole: on
 * one track slices must nest or be disjoint, and recorded times from
 * different sources (an op, a CUDA call the op made, another thread's
 * copy on the same device) may cross by a few ns; such a slice is cut at
 * its enclosing slice's end (args "cut_ns"). */
struct cev {
    int64_t tid;     /* the track */
    int64_t ts, dur; /* ns on the shared clock */
    int64_t order;   /* emission order: ties keep it */
    char *body;      /* the event's JSON after its times: ", \"cat\": ..." up to the closing brace */
};

struct cevs {
    struct cev *v;
    size_t n, cap;
};

static int cev_cmp(const void *pa, const void *pb) {
    const struct cev *a = pa, *b = pb;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    if (a->dur != b->dur) return a->dur > b->dur ? -1 : 1; /* the enclosing one first */
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Takes body (malloc'd); drops the event when out of memory. */
static void cev_add(struct cevs *c, int64_t tid, int64_t ts, int64_t dur, char *body) {
    if (!body) return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        struct cev *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            free(body);
            return;
        }
        c->v = v, c->cap = cap;
    }
    if (dur < 0) dur = 0;
    if (ts > 0 && dur > INT64_MAX - ts) dur = INT64_MAX - ts; /* times from a trace: any value; ts + dur must hold */
    c->v[c->n] = (struct cev){tid, ts, dur, (int64_t)c->n, body};
    c->n++;
}

/* Prints the slices of one process, nested per track, and empties c. */
static void cev_flush(FILE *f, struct cevs *c, int64_t pid, int *first) {
    if (!c->n) return; /* a trace with no slices (a program on no library devtrace observes) */
    qsort(c->v, c->n, sizeof *c->v, cev_cmp);
    int64_t stack[256];
    int depth = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct cev *e = &c->v[i];
        if (i == 0 || c->v[i - 1].tid != e->tid) depth = 0;
        while (depth && stack[depth - 1] <= e->ts) depth--;
        int64_t cut = 0;
        if (depth && e->ts + e->dur > stack[depth - 1]) cut = e->ts + e->dur - stack[depth - 1], e->dur -= cut;
        if (depth < 256) stack[depth++] = e->ts + e->dur;
        fprintf(f, "%s{\"ph\": \"X\", \"pid\": %lld, \"tid\": %lld, \"ts\": %.3f, \"dur\": %.3f", *first ? "" : ",\n",
                (long long)pid, (long long)e->tid, (double)e->ts / 1e3, (double)e->dur / 1e3);
        *first = 0;
        if (cut) fprintf(f, ", \"cut_ns\": %lld", (long long)cut);
        fputs(e->body, f);
        free(e->body);
    }
    c->n = 0;
}

/* One event's JSON text, built in memory. */
struct buf {
    char *s;
    size_t len;
    FILE *f;
};
static FILE *buf_open(struct buf *b) {
    b->s = NULL, b->len = 0;
    b->f = open_memstream(&b->s, &b->len);
    return b->f;
}
static char *buf_take(struct buf *b) {
    if (!b->f) return NULL;
    if (fclose(b->f) != 0) {
        free(b->s);
        return NULL;
    }
    return b->s;
}

/* An event's call site as the JSON member ", \"site\": ..." (Python line when
 * there is one), or nothing when unknown. */
static void put_site(FILE *f, struct vw_sym *sym, sqlite3_stmt *st, int col_stack, int64_t seq) {
    struct vw_frame fr;
    char buf[1200];
    if (!sym ||
        !vw_sym_event_site(sym, sqlite3_column_int64(st, col_stack), sqlite3_column_int64(st, col_stack + 1), seq, &fr))
        return;
    fputs(", \"site\": ", f);
    vw_put_json_string(f, vw_site_str(&fr, buf, sizeof buf));
}

/* SQL: an op's tensors as "1,2,3" (integers only: a trace is untrusted and
 * the list goes into the JSON as is). */
#define OP_INPUTS_SQL                                                                                                  \
    "(SELECT group_concat(v) FROM (SELECT CAST(o.arg0_tensor AS INTEGER) AS v WHERE o.arg0_tensor IS NOT NULL "        \
    "UNION ALL SELECT CAST(o.arg1_tensor AS INTEGER) WHERE o.arg1_tensor IS NOT NULL UNION ALL SELECT v FROM (SELECT " \
    "CAST(m.tensor AS INTEGER) AS v FROM op_args_more m WHERE m.op = o.op AND m.tensor IS NOT NULL ORDER BY m.pos)))"
#define OP_OUTPUTS_SQL                                                                                                 \
    "(SELECT group_concat(v) FROM (SELECT CAST(o.out0 AS INTEGER) AS v WHERE o.out0 IS NOT NULL UNION ALL SELECT v "   \
    "FROM (SELECT CAST(m.tensor AS INTEGER) AS v FROM op_outputs_more m WHERE m.op = o.op AND m.tensor IS NOT NULL "   \
    "ORDER BY m.pos)))"

/* The tensors each op made (tensor_rows.op), joined as "made": its
 * outputs when the op's own output columns are empty. */
#define OP_MADE_JOIN_SQL                                                                                               \
    " LEFT JOIN (SELECT op, group_concat(CAST(id AS INTEGER)) AS ids FROM tensor_rows WHERE op IS NOT NULL GROUP BY "  \
    "op) made ON made.op = o.op "
#define OP_ALL_OUTPUTS_SQL "COALESCE(" OP_OUTPUTS_SQL ", made.ids)"

/* An int list from OP_*_SQL, checked again (digits, '-' and commas only). */
static void put_ids(FILE *f, const char *key, const unsigned char *s) {
    fprintf(f, ", \"%s\": [", key);
    if (s && strspn((const char *)s, "-0123456789,") == strlen((const char *)s)) fputs((const char *)s, f);
    fputc(']', f);
}

/* The pid each trace shows as: its own, unless an earlier trace (another
 * host, or the same pid again) took it: then one above the kernel's pid
 * range, so two processes never merge into one. */
static void chrome_pids(struct tl *x, int n, int64_t *out) {
    for (int i = 0; i < n; i++) {
        int64_t p = x[i].pid;
        for (int k = 0, taken = 1; taken; k++) {
            taken = 0;
            for (int j = 0; j < i; j++)
                if (out[j] == p) taken = 1;
            if (taken) p = vw_add(4194304 * (int64_t)(k + 1), x[i].pid % 4194304);
        }
        out[i] = p;
    }
}

static void chrome_trace(FILE *f, struct tl *x, int n) {
    int64_t base = INT64_MAX;
    for (int i = 0; i < n; i++)
        if (x[i].start_ns < base) base = x[i].start_ns;
    int64_t *pids = calloc((size_t)n, sizeof *pids);
    if (!pids) return;
    chrome_pids(x, n, pids);
    struct cevs cs = {0};
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", f);
    int first = 1;
#define SEP() (first ? (first = 0, "") : ",\n")
    for (int i = 0; i < n; i++) {
        struct vw_trace *t = x[i].t;
        struct vw_sym *sym = vw_sym_new(t);
        int64_t pid = pids[i];
        char prog[512], host[256], name[1024], dev[32];
        vw_meta(t, "program", prog, sizeof prog);
        vw_meta(t, "host", host, sizeof host);
        const char *b = strrchr(prog, '/');
        snprintf(name, sizeof name, "%s%spid %lld (%s)", host, host[0] ? " " : "", (long long)x[i].pid,
                 b ? b + 1 : prog);
        fprintf(f, "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %lld, \"args\": {\"name\": ", SEP(),
                (long long)pid);
        vw_put_json_string(f, name);
        fputs("}}", f);
        sqlite3_stmt *st = vw_prep(t, "SELECT tid, COALESCE(name, '') FROM threads");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            fprintf(f,
                    "%s{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %lld, \"tid\": %lld, \"args\": {\"name\": ",
                    SEP(), (long long)pid, (long long)sqlite3_column_int64(st, 0));
            vw_put_json_string(f, (const char *)sqlite3_column_text(st, 1));
            fputs("}}", f);
        }
        if (st) sqlite3_finalize(st);
        /* device tracks: tid 1000000 + packed device number */
        st = vw_prep(t, "SELECT device FROM devices UNION SELECT dst_device FROM transfers WHERE dst_device IS NOT "
                        "NULL UNION SELECT " CUDA_TRACK_SQL " FROM cuda_calls WHERE " CUDA_ON_DEVICE_SQL);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            fprintf(f,
                    "%s{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %lld, \"tid\": %lld, \"args\": {\"name\": "
                    "\"device %s\"}}",
                    SEP(), (long long)pid, (long long)vw_add(1000000, sqlite3_column_int64(st, 0)),
                    vw_device_name(sqlite3_column_int64(st, 0), dev, sizeof dev));
        }
        if (st) sqlite3_finalize(st);
        /* ops: slices of their recorded duration (an op with none: an instant) */
        st = vw_prep(t, "SELECT o.op, s.text, o.t, o.dur, th.tid, " VW_OP_STATUS_SQL
                        ", o.stack, o.pystack, o.seq, " OP_INPUTS_SQL ", " OP_ALL_OUTPUTS_SQL
                        " FROM ops o JOIN strings s ON s.id = o.name" OP_MADE_JOIN_SQL "LEFT JOIN "
                        "threads th ON th.id = o.thread ORDER BY o.seq");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            struct buf bb;
            FILE *g = buf_open(&bb);
            if (!g) break;
            int instant = sqlite3_column_type(st, 3) == SQLITE_NULL;
            fputs(", \"cat\": \"op\", \"name\": ", g);
            vw_put_json_string(g, (const char *)sqlite3_column_text(st, 1));
            fprintf(g, ", \"args\": {\"op\": %lld", (long long)sqlite3_column_int64(st, 0));
            if (sqlite3_column_type(st, 5) != SQLITE_NULL)
                fprintf(g, ", \"status\": %lld", (long long)sqlite3_column_int64(st, 5));
            put_site(g, sym, st, 6, sqlite3_column_int64(st, 8));
            put_ids(g, "inputs", sqlite3_column_text(st, 9));
            put_ids(g, "outputs", sqlite3_column_text(st, 10));
            fputs("}}", g);
            char *body = buf_take(&bb);
            int64_t ts = vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 2));
            if (instant) {
                if (body)
                    fprintf(f, "%s{\"ph\": \"i\", \"s\": \"t\", \"pid\": %lld, \"tid\": %lld, \"ts\": %.3f%s", SEP(),
                            (long long)pid, (long long)sqlite3_column_int64(st, 4), (double)ts / 1e3, body);
                free(body);
            } else {
                cev_add(&cs, sqlite3_column_int64(st, 4), ts, sqlite3_column_int64(st, 3), body);
            }
        }
        if (st) sqlite3_finalize(st);
        /* transfers have no duration: instants on the thread and on the device reached */
        st = vw_prep(t, "SELECT x.src, x.dst, x.src_device, x.dst_device, x.bytes, COALESCE(v.text, '?'), e.t, "
                        "th.tid, e.stack, e.pystack, x.seq FROM transfers x JOIN misc_events e ON e.seq = x.seq LEFT "
                        "JOIN strings v ON v.id = x.via LEFT JOIN threads th ON th.id = e.thread ORDER BY x.seq");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            char d1[32], d2[32];
            int64_t to = sqlite3_column_type(st, 3) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 3);
            vw_device_name(sqlite3_column_int64(st, 2), d1, sizeof d1);
            vw_device_name(to, d2, sizeof d2);
            struct buf bb;
            FILE *g = buf_open(&bb);
            if (!g) break;
            fprintf(g, ", \"cat\": \"transfer\", \"name\": \"%s -> %s\", \"args\": {\"via\": ", d1, d2);
            vw_put_json_string(g, (const char *)sqlite3_column_text(st, 5));
            fprintf(g, ", \"src\": %lld, \"dst\": %lld, \"bytes\": %lld", (long long)sqlite3_column_int64(st, 0),
                    (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 4));
            put_site(g, sym, st, 8, sqlite3_column_int64(st, 10));
            fputs("}}", g);
            char *body = buf_take(&bb);
            if (!body) break;
            for (int track = 0; track < 2; track++)
                fprintf(f, "%s{\"ph\": \"i\", \"s\": \"t\", \"pid\": %lld, \"tid\": %lld, \"ts\": %.3f%s", SEP(),
                        (long long)pid, track ? (long long)vw_add(1000000, to) : (long long)sqlite3_column_int64(st, 7),
                        (double)vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 6)) / 1e3, body);
            free(body);
        }
        if (st) sqlite3_finalize(st);
        st = vw_prep(t, "SELECT c.seq, " CUDA_TEXT_SQL ", c.t, c.dur, th.tid, c.kind, c.dir, c.bytes, c.rc, "
                        "c.device, c.stream, " CUDA_ON_DEVICE_SQL ", " CUDA_TRACK_SQL ", c.stack, c.pystack FROM "
                        "cuda_calls c LEFT JOIN strings a ON a.id = c.api LEFT JOIN threads th ON th.id = c.thread "
                        "ORDER BY c.seq");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            const char *kind = dt_cuda_call_kind_text(sqlite3_column_int(st, 5));
            struct buf bb;
            FILE *g = buf_open(&bb);
            if (!g) break;
            fputs(", \"cat\": \"cuda\", \"name\": ", g);
            vw_put_json_string(g, (const char *)sqlite3_column_text(st, 1));
            fprintf(g, ", \"args\": {\"seq\": %lld, \"kind\": \"%s\", \"rc\": %lld",
                    (long long)sqlite3_column_int64(st, 0), kind ? kind : "?",
                    (long long)sqlite3_column_int64(st, 8));
            if (sqlite3_column_type(st, 7) != SQLITE_NULL)
                fprintf(g, ", \"bytes\": %lld", (long long)sqlite3_column_int64(st, 7));
            if (sqlite3_column_type(st, 9) != SQLITE_NULL)
                fprintf(g, ", \"device\": %lld", (long long)sqlite3_column_int64(st, 9));
            put_site(g, sym, st, 13, sqlite3_column_int64(st, 0));
            fputs("}}", g);
            char *body = buf_take(&bb);
            if (!body) break;
            int64_t ts = vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 2));
            int instant = sqlite3_column_type(st, 3) == SQLITE_NULL;
            for (int track = 0; track < 1 + sqlite3_column_int(st, 11); track++) {
                int64_t tid = track ? vw_add(1000000, sqlite3_column_int64(st, 12)) : sqlite3_column_int64(st, 4);
                if (instant)
                    fprintf(f, "%s{\"ph\": \"i\", \"s\": \"t\", \"pid\": %lld, \"tid\": %lld, \"ts\": %.3f%s", SEP(),
                            (long long)pid, (long long)tid, (double)ts / 1e3, body);
                else
                    cev_add(&cs, tid, ts, sqlite3_column_int64(st, 3), strdup(body));
            }
            free(body);
        }
        if (st) sqlite3_finalize(st);
        /* errors; a C++ exception once: a rethrow (misc_events value 1) of an
         * object thrown before is the same exception */
        st = vw_prep(t, "SELECT COALESCE(r.message, ''), e.t, th.tid, " ERROR_TITLE_SQL ", r.exception, e.stack, "
                        "e.pystack, r.seq FROM errors r JOIN misc_events e ON e.seq = r.seq LEFT JOIN threads th ON "
                        "th.id = e.thread WHERE " VW_NOT_MISMATCH_ECHO_SQL " AND NOT (r.exception IS NOT NULL AND "
                        "COALESCE(e.value, 0) = 1 AND r.object IS NOT NULL AND EXISTS (SELECT 1 FROM errors p JOIN "
                        "misc_events pe ON pe.seq = p.seq WHERE p.object = r.object AND p.exception IS NOT NULL AND "
                        "COALESCE(pe.value, 0) = 0 AND p.seq < r.seq)) ORDER BY r.seq");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            fprintf(f, "%s{\"ph\": \"i\", \"s\": \"p\", \"cat\": \"error\", \"name\": ", SEP());
            vw_put_json_string(f, (const char *)sqlite3_column_text(st, 3));
            fprintf(f, ", \"pid\": %lld, \"tid\": %lld, \"ts\": %.3f, \"args\": {\"message\": ", (long long)pid,
                    (long long)sqlite3_column_int64(st, 2),
                    (double)vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 1)) / 1e3);
            vw_put_json_string(f, (const char *)sqlite3_column_text(st, 0));
            if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
                fputs(", \"exception\": ", f);
                vw_put_json_string(f, (const char *)sqlite3_column_text(st, 4));
            }
            put_site(f, sym, st, 5, sqlite3_column_int64(st, 7));
            fputs("}}", f);
        }
        if (st) sqlite3_finalize(st);
        if (cs.n && !first) fputs(",\n", f), first = 1;
        cev_flush(f, &cs, pid, &first);
        if (sym) vw_sym_free(sym);
    }
#undef SEP
    fputs("\n]}\n", f);
    free(cs.v);
    free(pids);
}

/* ---------------------------------------------------------------- html */

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'\">\n"
    "<title>devtrace report</title>\n<style>\n"
    "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222;padding:0 1em}\n"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}code,.mono{font-family:ui-monospace,monospace}\n"
    ".mm{border:1px solid #ccc;border-radius:6px;padding:1em;margin:1em 0}.msg{color:#a00}\n"
    "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;border-bottom:1px solid #eee}\n"
    "tr.odd td{background:#fee;font-weight:bold}.fix{background:#efe;border-left:4px solid #3a3;padding:.5em 1em}\n"
    "ol.chain li{margin:.2em 0}.site{color:#555;font-family:ui-monospace,monospace;font-size:.9em}\n"
    ".lane{font:11px sans-serif}svg{border:1px solid "
    "#ddd;background:#fafafa;display:block;max-width:100%;cursor:grab}\n"
    "#timeline{overflow:hidden;width:100%}#tlctl button{margin-right:4px}.hl{opacity:1}\n"
    "#legend{margin:.5em 0;font-size:.9em}#legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;"
    "vertical-align:middle}#legend i.dot{border-radius:5px}.tl-link{display:inline-block;margin-top:.5em}\n"
    "pre.snip,pre.diff{font:12px/1.4 ui-monospace,monospace;background:#f7f7f7;border:1px solid #e3e3e3;"
    "padding:.4em 0;margin:.3em 0 .8em;overflow-x:auto}pre.snip div,pre.diff div{padding:0 .8em;white-space:pre}\n"
    "pre.snip .ln{color:#888;user-select:none}pre.snip div.mark{background:#fff3c4;font-weight:bold}"
    "pre.snip .mk{color:#a60;font-weight:normal}pre.diff .add{background:#dfd;color:#060}pre.diff .del{background:#fdd;"
    "color:#900}pre.diff .hunk{color:#58a}pre.code{font:12px/1.4 ui-monospace,monospace;margin:.3em "
    "0;white-space:pre}\n"
    "</style></head><body>\n<h1>devtrace report</h1>\n<div id=\"summary\"></div>\n<div id=\"report\"></div>\n"
    "<h2>Timeline</h2>\n<p id=\"tlnote\"></p>\n"
    "<div id=\"tlctl\"><button id=\"tl-in\" type=\"button\">Zoom in</button><button id=\"tl-out\" "
    "type=\"button\">Zoom out</button><button id=\"tl-left\" type=\"button\">&larr;</button><button "
    "id=\"tl-right\" type=\"button\">&rarr;</button><button id=\"tl-reset\" type=\"button\">Reset</button> "
    "wheel: zoom, shift+wheel or drag: pan</div>\n"
    "<div id=\"legend\"><i style=\"background:#69c\"></i>op<i style=\"background:#d33\"></i>failed op"
    "<i style=\"background:#e90\"></i>transfer host &rarr; device<i style=\"background:#2a2\"></i>device &rarr; "
    "host<i style=\"background:#0aa\"></i>device &rarr; device<i style=\"background:#888\"></i>host &rarr; host"
    "<i style=\"background:#96c\"></i>CUDA runtime call<i class=\"dot\" style=\"background:#c00\"></i>error</div>\n"
    "<p id=\"tlhl\"></p>\n<div id=\"timeline\"></div>\n"
    "<script type=\"application/json\" id=\"data\">\n";

static const char html_tail[] =
    "\n</script>\n<script>\n"
    "'use strict';\n"
    "const D = JSON.parse(document.getElementById('data').textContent);\n"
    "function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined && text !== null)"
    " e.textContent = String(text); if (cls) e.className = cls; return e; }\n"
    "function site(s) { if (!s) return '(unknown site)'; return s.file ? s.file + ':' + s.line + (s.function ? ' (' +"
    " s.function + ')' : '') : s.module + (s.function ? ' (' + s.function + ')' : ''); }\n"
    "const rep = document.getElementById('report');\n"
    "/* a device mismatch thrown by a program not built on the runtime (PyTorch's c10::Error) */\n"
    "function exceptionBox(box, m, ti, mi) {\n"
    "  const py = m.python_stack || [], nat = (m.stack || []).filter(f => !f.hidden);\n"
    "  box.appendChild(el('h3', 'Device mismatch (' + m.exception + ' thrown)' + (m.site ? ' at ' + site(m.site)"
    " : '')));\n"
    "  box.appendChild(el('p', m.message, 'msg'));\n"
    "  box.appendChild(el('p', 'Devices: ' + m.devices[0] + (m.argument ? ' (argument ' + m.argument + ')' : '') +"
    " ' and ' + m.devices[1]));\n"
    "  const stack = (title, id, items) => { if (!items.length) return; box.appendChild(el('h4', title));"
    " const ol = el('ol', null, 'chain'); ol.id = id; items.forEach(t => ol.appendChild(el('li', t, 'site')));"
    " box.appendChild(ol); };\n"
    "  stack('Python stack', 'pystack-' + ti + '-' + mi, py.map(site));\n"
    "  stack('Native stack', 'stack-' + ti + '-' + mi, nat.map(f => f.frame + (f.inlined ? ' [inlined]' : '')));\n"
    "  const cb = m.cuda_calls_before || [];\n"
    "  if (cb.length) { box.appendChild(el('h4', 'CUDA copies and allocations before it')); const tab = el('table');"
    " cb.forEach(r => { const tr = el('tr'); [r.what, r.count + ' x', r.bytes + ' bytes', r.api, r.site ||"
    " '(unknown site)'].forEach(v => tr.appendChild(el('td', v))); tab.appendChild(tr); }); box.appendChild(tab); }\n"
    "  const fx = el('div', null, 'fix'); fx.id = 'fix-' + ti + '-' + mi; fx.appendChild(el('strong', 'Fix: '));\n"
    "  fx.appendChild(el('span', m.fix.text));\n"
    "  if (m.fix.site) { fx.appendChild(el('br')); fx.appendChild(el('span', site(m.fix.site), 'site')); }\n"
    "  box.appendChild(fx);\n"
    "}\n"
    "/* the program's source around the failing, origin and fix lines (the marked lines highlighted), and the\n"
    " * suggested change as a diff */\n"
    "function sourceBox(box, m, ti, mi) {\n"
    "  if (m.source && m.source.length) { const sd = el('div', null, 'src'); sd.id = 'source-' + ti + '-' + mi;\n"
    "    sd.appendChild(el('strong', 'Source:'));\n"
    "    m.source.forEach(s => { sd.appendChild(el('div', s.file + ':' + s.first_line, 'site'));"
    " const pre = el('pre', null, 'snip');\n"
    "      s.lines.forEach(l => { const r = el('div', null, l.marks.length ? 'mark' : '');"
    " r.appendChild(el('span', String(l.n).padStart(5) + (l.marks.length ? ' > ' : '   '), 'ln'));"
    " r.appendChild(el('span', l.text));"
    " if (l.marks.length) r.appendChild(el('span', '   \\u2190 ' + l.marks.join(', '), 'mk')); pre.appendChild(r); "
    "});\n"
    "      sd.appendChild(pre); });\n"
    "    box.appendChild(sd); }\n"
    "  if (m.diff) { const dd = el('div', null, 'src'); dd.appendChild(el('strong', 'Suggested change:'));"
    " const pre = el('pre', null, 'diff'); pre.id = 'diff-' + ti + '-' + mi;\n"
    "    m.diff.split('\\n').forEach(t => { if (t === '') return; pre.appendChild(el('div', t, t.startsWith('+++') ||"
    " t.startsWith('---') ? '' : t[0] === '+' ? 'add' : t[0] === '-' ? 'del' : t.startsWith('@@') ? 'hunk' : '')); "
    "});\n"
    "    dd.appendChild(pre); box.appendChild(dd); }\n"
    "}\n"
    "/* a link from a mismatch to its events on the timeline (showOnTimeline, below) */\n"
    "function tlLink(box, ti, mi) { const a = el('a', 'Show it on the timeline', 'tl-link'); a.href = '#timeline';"
    " a.id = 'tl-link-' + ti + '-' + mi; a.dataset.ti = ti; a.dataset.mi = mi; box.appendChild(a); }\n"
    "let total = 0;\n"
    "D.report.traces.forEach((tr, ti) => {\n"
    "  rep.appendChild(el('h2', tr.program + ' (pid ' + tr.pid + '), exit status ' + tr.exit_status));\n"
    "  if (tr.incomplete) rep.appendChild(el('p', 'This trace is incomplete: ' + tr.incomplete, 'msg'));\n"
    "  if (tr.events_dropped) rep.appendChild(el('p', tr.events_dropped + ' events dropped (lossy mode)' +"
    " (tr.first_dropped_seq ? ', from event #' + tr.first_dropped_seq + ' on' : '') + ': a chain may miss links.',"
    " 'msg'));\n"
    "  if (!tr.mismatches.length) rep.appendChild(el('p', 'No device mismatch in this trace.', 'none'));\n"
    "  tr.mismatches.forEach((m, mi) => {\n"
    "    total++;\n"
    "    const box = el('div', null, 'mm'); box.id = 'mismatch-' + ti + '-' + mi;\n"
    "    if (m.kind === 'exception') { exceptionBox(box, m, ti, mi); tlLink(box, ti, mi); rep.appendChild(box); "
    "return; }\n"
    "    box.appendChild(el('h3', 'Device mismatch in ' + m.op + ' at ' + site(m.site)));\n"
    "    box.appendChild(el('p', m.message, 'msg'));\n"
    "    /* the answer first, as the text report gives it: the fix and its code, the source with the fix's line,\n"
    "     * then how the odd operand came to be where it is, and the peers folded */\n"
    "    if (m.fix) { const fx = el('div', null, 'fix'); fx.id = 'fix-' + ti + '-' + mi;\n"
    "      fx.appendChild(el('strong', 'Fix: ')); fx.appendChild(el('span', m.fix.text));"
    " fx.appendChild(el('br')); fx.appendChild(el('span', site(m.fix.site), 'site'));\n"
    "      if (m.fix.code) fx.appendChild(el('pre', m.fix.code, 'code'));\n"
    "      if (m.fix.rule) fx.appendChild(el('div', 'rule ' + m.fix.rule + (m.fix.evidence && m.fix.evidence.length ?"
    " ': ' + m.fix.evidence.join('; ') : ''), 'site'));\n"
    "      box.appendChild(fx); }\n"
    "    sourceBox(box, m, ti, mi);\n"
    "    /* an operand by the program's name for it, its argument's where it has none */\n"
    "    const who = o => o.name ? '\"' + o.name + '\"' : 'the tensor passed as ' + o.arg;\n"
    "    const chain = (o, oi, into) => { into.appendChild(el('h4', (o.odd ? 'How ' : 'Where ') + who(o) + ' (t' +"
    " o.tensor + ') ' + (o.odd ? 'came to be on ' : 'reached ') + o.device));\n"
    "      const ol = el('ol', null, 'chain'); ol.id = 'chain-' + ti + '-' + mi + '-' + oi;\n"
    "      o.chain.forEach(s => { const li = el('li', s.text); li.appendChild(el('br'));"
    " li.appendChild(el('span', site(s.site), 'site')); ol.appendChild(li); });\n"
    "      into.appendChild(ol); };\n"
    "    m.operands.forEach((o, oi) => { if (o.odd) chain(o, oi, box); });\n"
    "    const peers = el('details'); peers.appendChild(el('summary', 'All operands, and where the others came "
    "from'));\n"
    "    const tab = el('table'); const hr = el('tr');\n"
    "    ['argument', 'device', 'tensor', 'name', 'dtype', 'shape', ''].forEach(h => hr.appendChild(el('th', h)));\n"
    "    tab.appendChild(hr);\n"
    "    m.operands.forEach(o => { const r = el('tr', null, o.odd ? 'odd' : '');\n"
    "      [o.arg, o.device, 't' + o.tensor, o.name, o.dtype, o.shape, o.odd ? 'odd one out' : ''].forEach(v =>"
    " r.appendChild(el('td', v))); tab.appendChild(r); });\n"
    "    peers.appendChild(tab);\n"
    "    m.operands.forEach((o, oi) => { if (!o.odd) chain(o, oi, peers); });\n"
    "    box.appendChild(peers); tlLink(box, ti, mi); rep.appendChild(box);\n"

    "  });\n"
    "});\n"
    "document.getElementById('summary').appendChild(el('p', total ? total + ' device mismatch' + (total > 1 ? 'es'"
    " : '') + ' found.' : 'No device mismatch found.'));\n"
    "/* the timeline: one lane per thread, one per device; ops, transfers (colored by direction), CUDA calls, errors;\n"
    "   it fills its column, zooms (wheel, buttons) and pans (drag, shift+wheel, buttons) */\n"
    "const T = D.timeline, NS = 'http://www.w3.org/2000/svg';\n"
    "document.getElementById('tlnote').textContent = T.ops.length + ' ops' + (T.ops_total > T.ops.length ? ' (the last "
    "' + T.ops.length + ' of ' + T.ops_total + ')' : '') + ', ' + T.transfers.length + ' transfers, ' + "
    "T.errors.length + ' errors, ' + T.cuda.length + ' CUDA runtime calls.';\n"
    "const lanes = []; const laneOf = k => { let i = lanes.indexOf(k); if (i < 0) { lanes.push(k); i = lanes.length - "
    "1; } return i; };\n"
    "T.ops.forEach(o => laneOf(o.lane)); T.transfers.forEach(x => { laneOf(x.lane); laneOf(x.device); });\n"
    "T.errors.forEach(e => laneOf(e.lane)); T.cuda.forEach(c => { laneOf(c.lane); if (c.device) laneOf(c.device); });\n"
    "let t0 = Infinity, t1 = -Infinity; const see = t => { t0 = Math.min(t0, t); t1 = Math.max(t1, t); };\n"
    "T.ops.forEach(o => { see(o.t); see(o.t + o.dur); }); T.transfers.forEach(x => see(x.t)); T.errors.forEach(e => "
    "see(e.t)); T.cuda.forEach(c => { see(c.t); see(c.t + c.dur); });\n"
    "if (!isFinite(t0)) { t0 = 0; t1 = 1; } if (t1 <= t0) t1 = t0 + 1;\n"
    "const COLORS = {op: '#69c', failed: '#d33', htod: '#e90', dtoh: '#2a2', dtod: '#0aa', htoh: '#888', cuda: '#96c', "
    "error: '#c00'};\n"
    "const LH = 22, L = 150, tlbox = document.getElementById('timeline'), svg = document.createElementNS(NS, 'svg');\n"
    "svg.id = 'tlsvg'; tlbox.appendChild(svg);\n"
    "let v0 = t0, v1 = t1, nhl = 0;\n"
    "function add(tag, attrs, title) { const e = document.createElementNS(NS, tag); for (const k in attrs) "
    "e.setAttribute(k, attrs[k]); if (title) { const ti = document.createElementNS(NS, 'title'); ti.textContent = "
    "title; e.appendChild(ti); } svg.appendChild(e); return e; }\n"
    "function plotWidth() { return Math.max(100, Math.max(320, tlbox.clientWidth) - L - 10); }\n"
    "function draw() {\n"
    "  while (svg.firstChild) svg.removeChild(svg.firstChild);\n"
    "  const full = Math.max(320, tlbox.clientWidth), W = full - L - 10, H = lanes.length * LH + 30;\n"
    "  svg.setAttribute('width', full); svg.setAttribute('height', H); svg.setAttribute('viewBox', '0 0 ' + full + ' ' "
    "+ H);\n"
    "  svg.setAttribute('data-highlighted', nhl);\n"
    "  const X = t => L + (t - v0) / (v1 - v0) * W, C = x => Math.max(L, Math.min(L + W, x)), vis = (a, b) => b >= v0 "
    "&& a <= v1;\n"
    "  const hl = (e, a) => { if (e.hl) { a.stroke = '#000'; a['stroke-width'] = 2; a.class = 'hl'; } return a; };\n"
    "  lanes.forEach((k, i) => { const tx = add('text', {x: 4, y: i * LH + 15, class: 'lane'}); tx.textContent = "
    "k.length > 24 ? k.slice(0, 23) + '\\u2026' : k; const tt = document.createElementNS(NS, 'title'); tt.textContent "
    "= k; tx.appendChild(tt); });\n"
    "  T.ops.forEach(o => { if (!vis(o.t, o.t + o.dur)) return; const x = C(X(o.t)); add('rect', hl(o, {x: x, y: "
    "laneOf(o.lane) * LH + 4, width: Math.max(1, C(X(o.t + o.dur)) - x), height: LH - 8, fill: o.status ? "
    "COLORS.failed : COLORS.op}), o.name + ' (op #' + o.op + ')' + (o.site ? ' at ' + o.site : '')); });\n"
    "  T.cuda.forEach(c => { if (!vis(c.t, c.t + c.dur)) return; const x = C(X(c.t)); [c.lane, c.device].forEach(k => "
    "{ if (k) add('rect', {x: x, y: laneOf(k) * LH + 6, width: Math.max(1, C(X(c.t + c.dur)) - x), height: LH - 12, "
    "fill: COLORS.cuda}, c.text); }); });\n"
    "  T.transfers.forEach(x => { if (!vis(x.t, x.t)) return; [x.lane, x.device].forEach(k => add('rect', hl(x, {x: "
    "X(x.t) - 1, y: laneOf(k) * LH + 2, width: 2, height: LH - 4, fill: COLORS[x.dir] || COLORS.htoh}), x.text)); });\n"
    "  T.errors.forEach(e => { if (!vis(e.t, e.t)) return; add('circle', hl(e, {cx: X(e.t), cy: laneOf(e.lane) * LH + "
    "LH / 2, r: 6, fill: COLORS.error}), e.text); });\n"
    "  const ax = add('text', {x: L, y: lanes.length * LH + 20, class: 'lane'}); ax.textContent = ((v0 - t0) / "
    "1e6).toFixed(3) + ' ms';\n"
    "  const ax2 = add('text', {x: L + W, y: lanes.length * LH + 20, class: 'lane', 'text-anchor': 'end'}); "
    "ax2.textContent = ((v1 - t0) / 1e6).toFixed(3) + ' ms';\n"
    "}\n"
    "function clampView() { const w = Math.min(v1 - v0, t1 - t0); if (v0 < t0) v0 = t0; if (v0 + w > t1) v0 = t1 - w; "
    "v1 = v0 + w; }\n"
    "function zoom(f, at) { const c = at === undefined ? (v0 + v1) / 2 : at, w = Math.min(t1 - t0, Math.max(1000, (v1 "
    "- v0) * f)); v0 = c - (c - v0) * w / (v1 - v0); v1 = v0 + w; clampView(); draw(); }\n"
    "function pan(frac) { const d = (v1 - v0) * frac; v0 += d; v1 += d; clampView(); draw(); }\n"
    "const at = ev => { const r = svg.getBoundingClientRect(); return v0 + (ev.clientX - r.left - L) / plotWidth() * "
    "(v1 - v0); };\n"
    "svg.addEventListener('wheel', ev => { ev.preventDefault(); if (ev.shiftKey) pan(ev.deltaY > 0 ? 0.1 : -0.1); else "
    "zoom(ev.deltaY > 0 ? 1.25 : 0.8, at(ev)); }, {passive: false});\n"
    "/* dragging redraws once per frame, not once per mouse event */\n"
    "let drag = null, pending = false;\n"
    "function redraw() { if (pending) return; pending = true; requestAnimationFrame(() => { pending = false; draw(); "
    "}); }\n"
    "svg.addEventListener('mousedown', ev => { drag = {x: ev.clientX, v0: v0, v1: v1}; });\n"
    "window.addEventListener('mousemove', ev => { if (!drag) return; const d = (drag.x - ev.clientX) / plotWidth() * "
    "(drag.v1 - drag.v0); v0 = drag.v0 + d; v1 = drag.v1 + d; clampView(); redraw(); });\n"
    "window.addEventListener('mouseup', () => { drag = null; });\n"
    "const btn = (id, f) => document.getElementById(id).addEventListener('click', f);\n"
    "btn('tl-in', () => zoom(0.5)); btn('tl-out', () => zoom(2)); btn('tl-left', () => pan(-0.25)); btn('tl-right', () "
    "=> pan(0.25));\n"
    "btn('tl-reset', () => { v0 = t0; v1 = t1; T.ops.concat(T.transfers, T.errors).forEach(e => { e.hl = false; }); "
    "nhl = 0; document.getElementById('tlhl').textContent = ''; draw(); });\n"
    "/* a mismatch on the timeline: its failing op and error, and the ops and transfers that made its chains' tensors "
    "*/\n"
    "function showOnTimeline(ti, mi) {\n"
    "  const m = D.report.traces[ti].mismatches[mi], ts = new Set();\n"
    "  (m.operands || []).forEach(o => { ts.add(o.tensor); (o.chain || []).forEach(s => ts.add(s.tensor)); });\n"
    "  nhl = 0; let a = Infinity, b = -Infinity;\n"
    "  const mark = (e, on) => { e.hl = on; if (on) { nhl++; a = Math.min(a, e.t); b = Math.max(b, e.t + (e.dur || "
    "0)); } };\n"
    "  const errs = T.errors.filter(e => e.trace === ti && e.seq === m.seq);\n"
    "  T.ops.forEach(o => mark(o, o.trace === ti && ((m.seq >= o.seq && m.seq <= o.end) || o.outs.some(t => "
    "ts.has(t)))));\n"
    "  T.transfers.forEach(x => mark(x, x.trace === ti && (ts.has(x.dst) || ts.has(x.src))));\n"
    "  T.errors.forEach(e => mark(e, errs.includes(e)));\n"
    "  if (nhl) { const pad = Math.max(2000, (b - a) * 0.1); v0 = a - pad; v1 = b + pad; clampView(); }\n"
    "  document.getElementById('tlhl').textContent = nhl ? 'Highlighted: ' + nhl + ' events of mismatch ' + (mi + 1) + "
    "(D.report.traces.length > 1 ? ' of trace ' + (ti + 1) : '') + ' (outlined). Reset clears it.' : 'None of its "
    "events is in the timeline.';\n"
    "  draw();\n"
    "}\n"
    "document.querySelectorAll('a.tl-link').forEach(a => a.addEventListener('click', () => "
    "showOnTimeline(+a.dataset.ti, +a.dataset.mi)));\n"
    "draw();\n"
    "window.addEventListener('resize', redraw);\n"
    "const hm = /^#show-(\\d+)-(\\d+)$/.exec(location.hash);\n"
    "if (hm && D.report.traces[+hm[1]] && D.report.traces[+hm[1]].mismatches[+hm[2]]) showOnTimeline(+hm[1], +hm[2]);\n"
    "document.body.setAttribute('data-rendered', 'yes');\n"
    "</script>\n</body></html>\n";

/* The timeline data of the HTML page, as JSON (times in ns, shared clock). */
static void html_timeline(FILE *f, struct tl *x, int n) {
    int64_t base = INT64_MAX, total = 0;
    for (int i = 0; i < n; i++)
        if (x[i].start_ns < base) base = x[i].start_ns;
    /* lanes are named by pid; two traces with one pid (two hosts, or a pid
     * reused) get " (trace N)" after it so that their lanes stay apart */
    char(*tag)[32] = calloc((size_t)n, sizeof *tag);
    if (!tag) return;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (j != i && x[j].pid == x[i].pid) snprintf(tag[i], sizeof tag[i], " (trace %d)", i + 1);
    fputs("{\"ops\": [", f);
    int first = 1;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = vw_prep(x[i].t, "SELECT count(*) FROM ops");
        int64_t nops = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        if (st) sqlite3_finalize(st);
        total += nops;
        st = vw_prep(
            x[i].t, "SELECT * FROM (SELECT o.op, s.text, o.t, COALESCE(o.dur, 0), th.tid, COALESCE(" VW_OP_STATUS_SQL
                    ", 0), o.stack, o.pystack, o.seq, " OP_ALL_OUTPUTS_SQL ", o.len FROM ops o" OP_MADE_JOIN_SQL "JOIN "
                    "strings s ON s.id = o.name LEFT JOIN threads th ON th.id = o.thread ORDER BY o.seq DESC "
                    "LIMIT ?) ORDER BY 1");
        if (!st) continue;
        sqlite3_bind_int64(st, 1, HTML_MAX_OPS / n);
        struct vw_sym *sym = vw_sym_new(x[i].t);
        while (sqlite3_step(st) == SQLITE_ROW) {
            fprintf(f, "%s{\"op\": %lld, \"name\": ", first ? "" : ",\n", (long long)sqlite3_column_int64(st, 0));
            first = 0;
            vw_put_json_string(f, (const char *)sqlite3_column_text(st, 1));
            fprintf(f,
                    ", \"t\": %lld, \"dur\": %lld, \"lane\": \"pid %lld%s thread %lld\", \"status\": %lld, \"trace\": "
                    "%d",
                    (long long)vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 2)),
                    (long long)sqlite3_column_int64(st, 3), (long long)x[i].pid, tag[i],
                    (long long)sqlite3_column_int64(st, 4), (long long)sqlite3_column_int64(st, 5), i);
            fprintf(f, ", \"seq\": %lld, \"end\": %lld", (long long)sqlite3_column_int64(st, 8),
                    (long long)vw_add(sqlite3_column_int64(st, 8), sqlite3_column_int64(st, 10)));
            put_ids(f, "outs", sqlite3_column_text(st, 9));
            put_site(f, sym, st, 6, sqlite3_column_int64(st, 8));
            fputc('}', f);
        }
        sqlite3_finalize(st);
        if (sym) vw_sym_free(sym);
    }
    fprintf(f, "], \"ops_total\": %lld, \"transfers\": [", (long long)total);
    first = 1;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st =
            vw_prep(x[i].t, "SELECT x.src, x.src_device, COALESCE(x.dst_device, 0), x.bytes, "
                            "COALESCE(v.text, '?'), e.t, th.tid, x.dst FROM transfers x JOIN misc_events e "
                            "ON e.seq = x.seq LEFT JOIN strings v ON v.id = x.via LEFT JOIN threads "
                            "th ON th.id = e.thread ORDER BY x.seq");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            char d1[32], d2[32], text[160];
            vw_device_name(sqlite3_column_int64(st, 1), d1, sizeof d1);
            vw_device_name(sqlite3_column_int64(st, 2), d2, sizeof d2);
            snprintf(text, sizeof text, "t%lld %s -> %s, %lld bytes by ", (long long)sqlite3_column_int64(st, 0), d1,
                     d2, (long long)sqlite3_column_int64(st, 3));
            int on1 = (sqlite3_column_int64(st, 1) >> 16) != 0, on2 = (sqlite3_column_int64(st, 2) >> 16) != 0;
            fprintf(
                f,
                "%s{\"t\": %lld, \"lane\": \"pid %lld%s thread %lld\", \"device\": \"pid %lld%s %s\", \"trace\": %d, "
                "\"src\": %lld, \"dst\": %lld, \"dir\": \"%s\", \"text\": ",
                first ? "" : ",\n", (long long)vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 5)),
                (long long)x[i].pid, tag[i], (long long)sqlite3_column_int64(st, 6), (long long)x[i].pid, tag[i], d2, i,
                (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 7),
                on1 ? (on2 ? "dtod" : "dtoh") : (on2 ? "htod" : "htoh"));
            first = 0;
            char full[256];
            snprintf(full, sizeof full, "%s%s", text, (const char *)sqlite3_column_text(st, 4));
            vw_put_json_string(f, full);
            fputc('}', f);
        }
        if (st) sqlite3_finalize(st);
    }
    fputs("], \"errors\": [", f);
    first = 1;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st =
            vw_prep(x[i].t, "SELECT " ERROR_TITLE_SQL " || COALESCE(': ' || r.message, ''), e.t, "
                            "th.tid, r.seq, r.op FROM errors r JOIN misc_events e ON e.seq = r.seq LEFT JOIN "
                            "threads th ON th.id = e.thread WHERE " VW_NOT_MISMATCH_ECHO_SQL " ORDER BY r.seq");
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            fprintf(f,
                    "%s{\"t\": %lld, \"lane\": \"pid %lld%s thread %lld\", \"trace\": %d, \"seq\": %lld, \"op\": %lld, "
                    "\"text\": ",
                    first ? "" : ",\n", (long long)vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 1)),
                    (long long)x[i].pid, tag[i], (long long)sqlite3_column_int64(st, 2), i,
                    (long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4));
            first = 0;
            vw_put_json_string(f, (const char *)sqlite3_column_text(st, 0));
            fputc('}', f);
        }
        if (st) sqlite3_finalize(st);
    }
    fputs("], \"cuda\": [", f);
    first = 1;
    for (int i = 0; i < n; i++) {
        sqlite3_stmt *st = vw_prep(x[i].t, "SELECT * FROM (SELECT c.seq, " CUDA_TEXT_SQL ", c.t, COALESCE(c.dur, 0), "
                                           "th.tid, " CUDA_ON_DEVICE_SQL ", " CUDA_TRACK_SQL " FROM cuda_calls c "
                                           "LEFT JOIN strings a ON a.id = c.api LEFT JOIN threads th ON th.id = "
                                           "c.thread ORDER BY c.seq DESC LIMIT ?) ORDER BY 1");
        if (!st) continue;
        sqlite3_bind_int64(st, 1, HTML_MAX_OPS / n);
        while (sqlite3_step(st) == SQLITE_ROW) {
            char d[32];
            fprintf(f, "%s{\"t\": %lld, \"dur\": %lld, \"lane\": \"pid %lld%s thread %lld\", \"device\": ",
                    first ? "" : ",\n", (long long)vw_time_at(x[i].start_ns, base, sqlite3_column_int64(st, 2)),
                    (long long)sqlite3_column_int64(st, 3), (long long)x[i].pid, tag[i],
                    (long long)sqlite3_column_int64(st, 4));
            first = 0;
            if (sqlite3_column_int(st, 5))
                fprintf(f, "\"pid %lld%s %s\"", (long long)x[i].pid, tag[i],
                        vw_device_name(sqlite3_column_int64(st, 6), d, sizeof d));
            else
                fputs("null", f);
            fputs(", \"text\": ", f);
            vw_put_json_string(f, (const char *)sqlite3_column_text(st, 1));
            fputc('}', f);
        }
        sqlite3_finalize(st);
    }
    fprintf(f, "]}");
    free(tag);
}

static int html_report(FILE *f, struct tl *x, int n) {
    fputs(html_head, f);
    fputs("{\"report\": {\"traces\": [", f);
    for (int i = 0; i < n; i++)
        if (vw_report_trace(x[i].t, 1, 0, f, i, n, NULL) < 0) return -1;
    fputs("]}, \"timeline\": ", f);
    html_timeline(f, x, n);
    fputs("}", f);
    fputs(html_tail, f);
    return 0;
}

/* OUT, or a temp file beside it that is renamed over it at the end (a
 * failed export never leaves a half file under OUT's name); NULL after
 * printing why. */
static FILE *open_out(const char *out, char *tmp, size_t size) {
    return strcmp(out, "-") ? vw_out_open("export", out, tmp, size) : stdout;
}

int vw_cmd_export(int argc, char **argv) {
    const char *format = NULL, *out = NULL;
    const char *files[256];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return VW_EXIT_OK;
        } else if (!strcmp(a, "--format") || !strcmp(a, "-o")) {
            if (i + 1 == argc) {
                vw_error("export: %s needs a value; see 'devtrace export --help'", a);
                return VW_EXIT_USAGE;
            }
            *(a[1] == 'o' ? &out : &format) = argv[++i];
        } else if (!strncmp(a, "--format=", 9)) {
            format = a + 9;
        } else if (a[0] == '-' && a[1]) {
            vw_error("export: unknown option '%s'; see 'devtrace export --help'", a);
            return VW_EXIT_USAGE;
        } else if (n < 256) {
            files[n++] = a;
        }
    }
    if (!format || !out || !n) {
        usage(stderr);
        return VW_EXIT_USAGE;
    }
    int html = !strcmp(format, "html");
    if (!html && strcmp(format, "chrome")) {
        vw_error("export: unknown format '%s' (chrome or html)", format);
        return VW_EXIT_USAGE;
    }
    struct vw_trace *tr = vw_trace_open_all(files, n);
    struct tl *x = tr ? calloc((size_t)n, sizeof *x) : NULL;
    if (!x) {
        if (tr) vw_error("out of memory");
        vw_trace_close_all(tr, n);
        return VW_EXIT_USAGE;
    }
    int rc = VW_EXIT_OK;
    for (int i = 0; i < n; i++) {
        char v[32];
        x[i].t = &tr[i];
        x[i].pid = atoll(vw_meta(&tr[i], "pid", v, sizeof v));
        x[i].start_ns = atoll(vw_meta(&tr[i], "start_time_ns", v, sizeof v));
    }
    char tmp[4200];
    FILE *f = open_out(out, tmp, sizeof tmp);
    if (!f) rc = VW_EXIT_USAGE;
    if (f) {
        if (html) {
            if (html_report(f, x, n) < 0) rc = VW_EXIT_USAGE;
        } else {
            chrome_trace(f, x, n);
        }
        if (f != stdout) {
            if (vw_out_finish("export", out, tmp, f, rc == VW_EXIT_OK) < 0) rc = VW_EXIT_USAGE;
        } else if (fflush(stdout) != 0 || ferror(stdout)) {
            vw_error("export: cannot write to standard output: %s", strerror(errno));
            rc = VW_EXIT_USAGE;
        }
    }
    vw_trace_close_all(tr, n);
    free(x);
    if (rc == VW_EXIT_OK && strcmp(out, "-")) fprintf(stderr, "devtrace: wrote %s\n", out);
    return rc;
}
