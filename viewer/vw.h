/* Shared declarations of the devtrace command: one function per subcommand
 * (one file each), and the helpers they share. */
#ifndef DEVTRACE_VW_H
#define DEVTRACE_VW_H

#include "vocab.h"

#include <stdio.h>

#define VW_VERSION "0.1.0"

/* Exit statuses of the devtrace command itself. */
enum {
    VW_EXIT_OK = 0,       /* read fine (report: no device mismatch) */
    VW_EXIT_FOUND = 1,    /* report: the trace holds a device mismatch */
    VW_EXIT_USAGE = 2,    /* bad usage or unreadable input */
    VW_EXIT_LAUNCH = 125, /* run: devtrace itself could not start the program */
};

int vw_cmd_run(int argc, char **argv);
int vw_cmd_report(int argc, char **argv);
int vw_cmd_tensors(int argc, char **argv);
int vw_cmd_show(int argc, char **argv);
int vw_cmd_transfers(int argc, char **argv);
int vw_cmd_export(int argc, char **argv);
int vw_cmd_fix(int argc, char **argv);
/* How `fix --verify` runs the patched program (argv NULL-terminated, in cwd, with the environment additions
 * env: NAME=VALUE strings, NULL-terminated): its exit status, or -1. The fuzzer replaces it, so that no input
 * runs anything. */
extern int (*vw_fix_runner)(char *const *argv, const char *cwd, char *const *env);

/* ---------------------------------------------------------------- traces (trace.c) */

#include <sqlite3.h>
#include <stdint.h>

struct vw_trace {
    sqlite3 *db;
    const char *path; /* as given */
    char tmpdir[256]; /* private copy of a trace left with a WAL ($TMPDIR/devtrace-read.*), or "" */
    int version;      /* its schema version (PRAGMA user_version), TS_SCHEMA_MIN_VERSION to TS_SCHEMA_VERSION */
};
/* Whether the trace has a table (an enum ts_table_id of common/trace_schema.h): one added to the schema after
 * the trace's version (source_facts, since 10) is absent from it; read it only where this says so. */
int vw_trace_has(const struct vw_trace *t, int table);
/* Opens a trace read-only, or prints one line saying what is wrong and
 * returns -1 (the caller exits VW_EXIT_USAGE). */
int vw_trace_open(const char *path, struct vw_trace *t);
void vw_trace_close(struct vw_trace *t);
/* Opens a file that may be a trace for a quick look (a sibling's meta),
 * quietly and with no check of its contents: 0, or -1. Opened as
 * vw_trace_open opens, never written to; closed with vw_trace_close. Every
 * reading command opens a trace with one of these two, and only these. */
int vw_trace_peek(const char *path, struct vw_trace *t);
/* Opens every path before anything is printed: an array of n traces, or
 * NULL after printing why (none left open). */
struct vw_trace *vw_trace_open_all(const char *const *paths, int n);
void vw_trace_close_all(struct vw_trace *tr, int n);
/* Whether a trace is whole: complete (finished by the tracer) and nothing
 * dropped. Returns 0 when it is, 1 with the texts set when not. */
struct vw_health {
    int64_t dropped;       /* events dropped (lossy mode) */
    int64_t first_dropped; /* seq of the first, 0 when unknown */
    int64_t last_dropped;  /* seq of the last, 0 when unknown */
    int complete;          /* meta complete = 1 */
    int all_kept;          /* not complete, but a fatal signal the tracer caught: every event before it kept */
    char why[256];         /* why it is not complete, or "" */
    char lost[200];        /* how many events were dropped (and from when), or "" */
    char stopped[160];     /* meta tracing_stopped: why the tracer stopped early, or "" */
    /* The flight recorder (DEVTRACE_MAX_MB): events of freed tensors pruned
     * by design, never a link of a live tensor's chain; not a loss that
     * makes the trace less than whole. */
    int64_t max_mb;        /* the cap the trace was written under, MiB; 0: unbounded, -1: not recorded */
    int64_t pruned;        /* events pruned */
    int64_t first_pruned;  /* seq of the first, 0 when none */
    int64_t last_pruned;   /* seq of the last, 0 when none */
    char pruned_text[200]; /* "N events of freed tensors pruned (...)", or "" */
};
int vw_health(sqlite3 *db, struct vw_health *h);
/* 1 when events were pruned between seqs lo and hi (inclusive). */
int vw_health_pruned(const struct vw_health *h, int64_t lo, int64_t hi);
/* 1 when events between seqs lo and hi (inclusive) may have been dropped:
 * a chain of events over that span may miss links. */
int vw_health_gap(const struct vw_health *h, int64_t lo, int64_t hi);
/* Where the dropped events were: " between events #a and #b", " at event
 * #a" or " from event #a on" (without "event(s)" unless words); "" when
 * not known. Returns buf. */
const char *vw_health_span(const struct vw_health *h, int words, char *buf, size_t size);
/* A prepared statement, or NULL after printing why. */
sqlite3_stmt *vw_prep(struct vw_trace *t, const char *sql);
/* A meta value ("" when absent) into buf. */
const char *vw_meta(struct vw_trace *t, const char *key, char *buf, size_t size);
/* ---------------------------------------------------------------- escaping (escape.c) */

/* Text from a trace is untrusted. For a terminal: control bytes (C0, DEL,
 * C1) and bytes that are not UTF-8 as \xNN. */
void vw_put_escaped(FILE *f, const char *s);
/* vw_put_escaped with tabs kept: a source line in a patch. */
void vw_put_escaped_line(FILE *f, const char *s);
/* s into buf (size > 0) with control bytes as \xNN, for a message line that names a trace's text; at most
 * size - 1 bytes; buf. */
const char *vw_escape_ctl(const char *s, char *buf, size_t size);
/* vw_put_escaped, then spaces up to width columns. */
void vw_put_escaped_pad(FILE *f, const char *s, int width);
/* A JSON string: valid UTF-8 (U+FFFD for what is not), with <, >, &,
 * U+2028 and U+2029 escaped so that it may sit in a <script> element. */
void vw_put_json_string(FILE *f, const char *s);
/* A meta value as JSON: a number when it is a plain integer, null when
 * empty, else a string. */
void vw_put_json_meta(FILE *f, const char *v);
/* A JSON document that must not be left half-written: what the command
 * prints to stdout goes to memory from vw_doc_capture (0, or -1 after
 * printing why) until vw_doc_release, which writes it all to the real
 * stdout when keep, and frees it; 0, or -1 when it could not be written. */
struct vw_doc {
    FILE *f;     /* the document's stream (memory) */
    char *buf;   /* its bytes, once closed */
    size_t size; /* bytes */
    FILE *saved; /* the real stdout, while vw_doc_capture holds it */
};
int vw_doc_capture(struct vw_doc *d);
int vw_doc_release(struct vw_doc *d, int keep);

/* Terminal colors: escape sequences when stdout is a terminal and NO_COLOR
 * is unset or empty, else "". */
enum vw_color { VW_RESET, VW_BOLD, VW_RED, VW_GREEN, VW_YELLOW, VW_DIM };
const char *vw_color(enum vw_color c);
/* "float32", "int64", "bool" from tensors.dtype. */
const char *vw_dtype_name(int dtype);

/* SQL for an op's status, alias o for ops: from its row, or from the late
 * op_end event when the row was committed before the op ended. */
#define VW_OP_STATUS_SQL                                                                                               \
    "COALESCE(o.status, (SELECT m.value FROM misc_events m WHERE m.op = o.op AND m.kind = " DT_SQL_EV_OP_END "))"
/* SQL condition, alias r for errors: not the generic error row that echoes
 * the device_mismatch row just before it (the runtime fires both). */
#define VW_NOT_MISMATCH_ECHO_SQL                                                                                       \
    "NOT (r.first_arg IS NULL AND r.kind = " DT_SQL_ERROR_DEVICE " AND EXISTS(SELECT 1 FROM errors q WHERE "           \
    "q.first_arg IS NOT NULL AND q.seq BETWEEN r.seq - 3 AND r.seq - 1))"

/* a + b for values read from a trace (counts, bytes, times): saturates at
 * the int64 limits instead of overflowing, since a damaged or hostile
 * trace may hold any value. */
static inline int64_t vw_add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
/* The time t of a trace that started at start_ns, on a clock that starts
 * at base_ns (all read from traces): saturating. */
static inline int64_t vw_time_at(int64_t start_ns, int64_t base_ns, int64_t t) {
    int64_t d;
    if (__builtin_sub_overflow(start_ns, base_ns, &d)) d = start_ns > base_ns ? INT64_MAX : INT64_MIN;
    return vw_add(d, t);
}

/* "cpu" / "cuda:N" from the trace's packed device number. */
const char *vw_device_name(int64_t dev, char *buf, size_t size);

/* The report of one trace (report.c), text or JSON, to out (the index-th of
 * nfiles; text has no heading, the caller prints it): the number of device
 * mismatches, or -1 after printing why it could not be read. flags: the
 * VW_REPORT_ values. key, unless NULL: a malloc'd text (the caller frees)
 * equal for two traces whose mismatches are the same (op, message, site,
 * culprit argument, origin site), so that ranks can be reported as one. */
#define VW_REPORT_ALL_FRAMES 1 /* frames inside libdtrt, libdevtrace and libc too */
#define VW_REPORT_NO_SOURCE  2 /* no source snippets or suggested diff (text, JSON) */
#define VW_REPORT_BRIEF      4 /* text: per mismatch, the headline, the odd operand, its origin, the fix */
int vw_report_trace(struct vw_trace *t, int json, int flags, FILE *out, int index, int nfiles, char **key);

/* ---------------------------------------------------------------- symbols (sym.c) */

struct vw_frame {
    uint64_t ip, offset; /* return address; offset in its module */
    char module[256];    /* file name of the module, "?" when unknown */
    char function[256];  /* "" when unknown */
    char file[512];      /* source file, relative to the cwd when under it; "" when unknown */
    int line;
    int hidden;  /* inside libdtrt, libdevtrace or libc */
    int changed; /* the module's file changed since the trace */
    int inlined; /* a function inlined into the frame after it (same return address) */
    int library; /* not the user's own code: a tensor or C++ library, libc, or their headers */
    int python;  /* a Python frame (py_frames; module "python", for people), not a native one */
};
struct vw_sym;
struct vw_sym *vw_sym_new(struct vw_trace *t);
void vw_sym_free(struct vw_sym *s);
void vw_sym_frame(struct vw_sym *s, uint64_t ip, int64_t seq, struct vw_frame *f);
/* The frames at one return address: inlined ones first, then the real one. */
int vw_sym_frames(struct vw_sym *s, uint64_t ip, int64_t seq, struct vw_frame *out, int max);
/* Frames of a recorded stack (inlined ones included), innermost first; returns how many. */
int vw_sym_stack(struct vw_sym *s, int64_t stack, int64_t seq, struct vw_frame *out, int max);
/* The innermost frame of the user's own code: not hidden, not in a library
 * (vw_frame.library); the innermost not hidden when there is none; 0 when
 * there is not even that. */
int vw_sym_site(struct vw_sym *s, int64_t stack, int64_t seq, struct vw_frame *site);
/* Python frame id (py_frames.id) as a frame (module "python"), the id of
 * the next outer one in *parent (0 at the outermost); 0 when unknown. */
int vw_sym_py_frame(struct vw_sym *s, int64_t id, struct vw_frame *f, int64_t *parent);
/* 1 when a Python file is not the program's own (an installed package, the
 * standard library, devtrace's adapter): its frames are hidden as sites. */
int vw_py_file_is_library(const char *file);
int vw_py_file_is_adapter(const char *file);
/* Where an event happened: its innermost Python frame when it has a Python
 * stack (the line a Python user wrote), else the program's own innermost
 * native frame; 0 when neither is known. */
int vw_sym_event_site(struct vw_sym *s, int64_t stack, int64_t pystack, int64_t seq, struct vw_frame *f);
/* file relative to the current directory when under it, else as given. */
const char *vw_sym_relative(struct vw_sym *s, const char *file);
/* "file:line (function)" or "module+0xoff". */
const char *vw_site_str(const struct vw_frame *f, char *buf, size_t size);

/* ---------------------------------------------------------------- cleanup (cleanup.c) */

/* Temp files and private trace copies removed if a signal (SIGINT, SIGTERM,
 * SIGHUP, SIGPIPE, SIGQUIT) ends the viewer; add before creating, drop once
 * removed or renamed. 0, or -1 when the table is full (not removed then). */
int vw_cleanup_add_file(const char *path);
void vw_cleanup_drop_file(const char *path);
int vw_cleanup_add_dir(const char *dir);
void vw_cleanup_drop_dir(const char *dir);
/* 0 when path is a regular file or does not exist; else -1 after one line
 * naming what it is (a device node, a FIFO, a directory is never replaced). */
int vw_output_check(const char *cmd, const char *path);
/* A temp file beside out (its name in tmp), to be renamed over out by vw_out_finish; NULL after saying
 * why. */
FILE *vw_out_open(const char *cmd, const char *out, char *tmp, size_t size);
/* Closes f; when keep, renames tmp over out (0, or -1 after saying why), else removes it (-1). */
int vw_out_finish(const char *cmd, const char *out, const char *tmp, FILE *f, int keep);

/* ---------------------------------------------------------------- files a trace names (files.c, source.c) */

/* A path a trace names, opened read-only without blocking (a FIFO, a device, /dev/zero never hold the
 * viewer): the descriptor when it is a regular file of at most cap bytes, else -1 with errno set (EINVAL:
 * not a regular file; EFBIG: larger than cap). */
int vw_open_regular(const char *path, int64_t cap);
/* The same as a stdio stream ("r"), or NULL. */
FILE *vw_fopen_regular(const char *path, int64_t cap);
/* The source roots: the directories whose files a trace may show lines of (docs/security.md). Each
 * --source-root DIR (0, or -1 when DIR is not a directory), else each directory of DEVTRACE_SOURCE_ROOT
 * (colon-separated), else the current directory. vw_source_root returns the first, resolved. */
int vw_source_root_set(const char *dir);
const char *vw_source_root(void);

/* "devtrace: <message>" on stderr. */
void vw_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
