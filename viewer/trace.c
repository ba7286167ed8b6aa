/* Opening a trace for reading, refusing anything that is not a finished,
 * readable devtrace trace with one clear line, and never writing to the
 * input: a finished trace is opened immutable; one left with a write-ahead
 * log (the program was killed) is read from a private copy. Every reading
 * command opens its traces here, so what is checked here (the layout of
 * common/trace_schema.h, the references and ranges it names, acyclic
 * stacks) holds for all of them. */
#include "trace_schema.h"
#include "vw.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
    if (in < 0) return -1;
    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out >= 0) {
        char buf[1 << 16];
        ssize_t n;
        rc = 0;
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)n) != n) {
                rc = -1;
                break;
            }
        if (n < 0) rc = -1;
        if (close(out) != 0) rc = -1;
    }
    close(in);
    return rc;
}

static int64_t scalar_int(sqlite3 *db, const char *sql, int64_t dflt) {
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return dflt;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int64_t meta_int(sqlite3 *db, const char *key, int64_t dflt);
static const char *sig_name(int sig, char *buf, size_t size);

/* "<path>: damaged trace: <what>" with the untrusted part escaped. */
static void damaged(const char *path, const char *what, const char *untrusted) {
    fprintf(stderr, "devtrace: %s: damaged trace: %s", path, what);
    if (untrusted) vw_put_escaped(stderr, untrusted);
    fputc('\n', stderr);
}

int vw_trace_has(const struct vw_trace *t, int table) {
    return table >= 0 && table < TS_NTABLES && t->version >= ts_table_since((enum ts_table_id)table);
}

/* Every table of the description, with its columns named and typed as
 * described, in order. A trace may hold more: tables the viewer does not
 * know (a user's own, made in the sqlite3 shell; a newer writer's come with
 * a newer schema version, refused before this) and columns after the
 * described ones are not read, so they are let be. */
static int check_layout(struct vw_trace *t) {
    sqlite3_stmt *kind = NULL, *cols = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(t->db, "SELECT type FROM sqlite_master WHERE name = ?1", -1, &kind, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(t->db, "SELECT name, type FROM pragma_table_info(?1) ORDER BY cid", -1, &cols, NULL) !=
            SQLITE_OK) {
        damaged(t->path, "its tables cannot be listed: ", sqlite3_errmsg(t->db));
        goto out;
    }
    for (int i = 0; i < TS_NTABLES; i++) {
        const struct ts_table *tb = &ts_tables[i];
        char what[256];
        if (!vw_trace_has(t, i)) continue; /* newer than the trace: absent from it, never read */
        sqlite3_reset(kind);
        sqlite3_bind_text(kind, 1, tb->name, -1, SQLITE_STATIC);
        int found = sqlite3_step(kind);
        const char *type = found == SQLITE_ROW ? (const char *)sqlite3_column_text(kind, 0) : NULL;
        if (found != SQLITE_ROW && found != SQLITE_DONE) {
            damaged(t->path, "its tables cannot be listed: ", sqlite3_errmsg(t->db));
            goto out;
        }
        if (!type && i == 0 && scalar_int(t->db, "SELECT count(*) FROM sqlite_master", -1) == 0) {
            /* the tracer sets the header, then makes every table in one
             * transaction: a program that ended (or was killed) between the
             * two leaves none */
            vw_error("%s: the trace holds no tables: the traced program ended (or was killed) before the tracer "
                     "made them",
                     t->path);
            goto out;
        }
        if (!type || strcmp(type, "table") != 0) {
            snprintf(what, sizeof what, "no table %s (a version %d trace has one)", tb->name, t->version);
            damaged(t->path, what, NULL);
            goto out;
        }
        sqlite3_reset(cols);
        sqlite3_bind_text(cols, 1, tb->name, -1, SQLITE_STATIC);
        int c = 0, step;
        for (; (step = sqlite3_step(cols)) == SQLITE_ROW && c < tb->ncols; c++) {
            const char *name = (const char *)sqlite3_column_text(cols, 0), *decl = tb->cols[c].decl;
            const char *ctype = (const char *)sqlite3_column_text(cols, 1);
            size_t tl = strcspn(decl, " "); /* the declared type: the first word */
            if (!name || strcmp(name, tb->cols[c].name) != 0) {
                snprintf(what, sizeof what, "table %s: column %d is not %s but ", tb->name, c + 1, tb->cols[c].name);
                damaged(t->path, what, name ? name : "NULL");
                goto out;
            }
            if (!ctype || strlen(ctype) != tl || strncasecmp(ctype, decl, tl) != 0) {
                snprintf(what, sizeof what, "table %s: column %s is declared '%.*s', not ", tb->name, name, (int)tl,
                         decl);
                damaged(t->path, what, ctype ? ctype : "NULL");
                goto out;
            }
        }
        if (step != SQLITE_ROW && step != SQLITE_DONE) {
            damaged(t->path, "its tables cannot be listed: ", sqlite3_errmsg(t->db));
            goto out;
        }
        if (c < tb->ncols) {
            snprintf(what, sizeof what, "table %s has no column %s (column %d of %d)", tb->name, tb->cols[c].name,
                     c + 1, tb->ncols);
            damaged(t->path, what, NULL);
            goto out;
        }
    }
    rc = 0;
out:
    sqlite3_finalize(kind);
    sqlite3_finalize(cols);
    return rc;
}

/* The links the viewer walks (the description's TS_CHECK_PARENT columns: a
 * stack's frames) lead to ever earlier rows, as the writer adds a frame
 * after its parent, so every walk ends; a trace where one does not is
 * damaged, and never walked. Every row: these tables are small (one row
 * per distinct frame of a stack). */
static int check_parents(struct vw_trace *t) {
    for (int i = 0; i < TS_NTABLES; i++) {
        const struct ts_table *tb = &ts_tables[i];
        if (!vw_trace_has(t, i)) continue;
        for (int c = 0; c < tb->ncols; c++) {
            if (tb->cols[c].check != TS_CHECK_PARENT) continue;
            char sql[256];
            snprintf(sql, sizeof sql,
                     "SELECT EXISTS(SELECT 1 FROM %s WHERE %s IS NOT NULL AND NOT (%s BETWEEN 1 AND %s - 1))", tb->name,
                     tb->cols[c].name, tb->cols[c].name, tb->cols[0].name);
            int64_t bad = scalar_int(t->db, sql, -1);
            if (bad < 0)
                vw_error("%s: damaged trace: its stacks cannot be read (%s)", t->path, sqlite3_errmsg(t->db));
            else if (bad)
                vw_error("%s: damaged trace: a %s has a frame whose parent is not an earlier frame", t->path, tb->noun);
            if (bad) return -1;
        }
    }
    return 0;
}

/* Appends to an SQL buffer; 0, or -1 when it is full. */
static int sql_add(char *buf, size_t size, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int sql_add(char *buf, size_t size, size_t *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = *n < size ? vsnprintf(buf + *n, size - *n, fmt, ap) : -1;
    va_end(ap);
    if (k < 0 || (size_t)k >= size - *n) return -1;
    *n += (size_t)k;
    return 0;
}

/* The values the description allows, checked with one query per table
 * (per window of a large one) that finds the first row with a value out of
 * place, and names it. A reference to a table whose ids are 1 to N (the
 * writer numbers strings, threads, stacks, code objects and tensor
 * attributes so, and the trace holds every one or, cut short, a prefix) is
 * a range test on the row itself; only where the ids have a gap (a trace
 * edited by hand) is each reference looked up. Parent links are the stack
 * check's (vw_trace_open).
 * The cost is bounded: a table of up to CHECK_WHOLE rows is checked whole,
 * a larger one in CHECK_WINDOWS windows of CHECK_WINDOW rows in its
 * primary key's order, the first at its first row, the last ending at its
 * last (where a trace cut short ends), the others spread evenly between.
 * Checking every row of bench/report.sh's 10 M-event trace cost more than
 * the report itself (0.58 s against 0.42 s: a pass over 3.4 M tensor rows
 * and 1.7 M ops); with the windows every check at open takes 5 ms there
 * (1.3 %), and 2 ms on mlp_train's trace. A bad row outside the windows is not
 * found here: the commands still read it without harm (they are fuzzed on
 * damaged traces), they only cannot name the damage. */
#define CHECK_WHOLE   8192
#define CHECK_WINDOWS 8
#define CHECK_WINDOW  1024
static int check_values(struct vw_trace *t) {
    int64_t max_id[TS_NTABLES];
    for (int i = 0; i < TS_NTABLES; i++) max_id[i] = -1; /* -1: look every reference up */
    int referenced[TS_NTABLES] = {0};
    for (int i = 0; i < TS_NTABLES; i++)
        for (int c = 0; c < ts_tables[i].ncols; c++)
            if (ts_tables[i].cols[c].check == TS_CHECK_REF) referenced[ts_tables[i].cols[c].ref] = 1;
    for (int i = 0; i < TS_NTABLES; i++) {
        const struct ts_table *tb = &ts_tables[i];
        if (!tb->counted || !referenced[i] || !vw_trace_has(t, i)) continue;
        char sql[256];
        /* one subquery each: count(*), min() and max() alone are each cheap (the b-tree's count, one seek) */
        snprintf(sql, sizeof sql,
                 "SELECT (SELECT count(*) FROM %s), (SELECT min(%s) FROM %s), (SELECT max(%s) FROM %s)", tb->name,
                 tb->cols[0].name, tb->name, tb->cols[0].name, tb->name);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
            damaged(t->path, "it cannot be read: ", sqlite3_errmsg(t->db));
            sqlite3_finalize(st);
            return -1;
        }
        int64_t n = sqlite3_column_int64(st, 0);
        if (n == 0 || (sqlite3_column_type(st, 1) == SQLITE_INTEGER && sqlite3_column_int64(st, 1) == 1 &&
                       sqlite3_column_type(st, 2) == SQLITE_INTEGER && sqlite3_column_int64(st, 2) == n))
            max_id[i] = n;
        sqlite3_finalize(st);
    }
    for (int i = 0; i < TS_NTABLES; i++) {
        const struct ts_table *tb = &ts_tables[i];
        char where[8192], cases[16384], sql[24576];
        size_t nw = 0, nc = 0;
        int full = 0;
        if (!vw_trace_has(t, i)) continue;
        for (int c = 0; c < tb->ncols && !full; c++) {
            const struct ts_column *col = &tb->cols[c];
            char bad[512], msg[256];
            if (col->check == TS_CHECK_REF) {
                const struct ts_table *to = &ts_tables[col->ref];
                if (max_id[col->ref] >= 0)
                    snprintf(bad, sizeof bad, "NOT (%s BETWEEN 1 AND %lld)", col->name, (long long)max_id[col->ref]);
                else
                    snprintf(bad, sizeof bad, "(%s IS NOT NULL AND NOT EXISTS(SELECT 1 FROM %s WHERE %s = %s.%s))",
                             col->name, to->name, to->cols[0].name, tb->name, col->name);
                snprintf(msg, sizeof msg, " is not a recorded %s", to->noun);
            } else if (col->check == TS_CHECK_RANGE) {
                snprintf(bad, sizeof bad, "NOT (%s BETWEEN %lld AND %lld)", col->name, (long long)col->lo,
                         (long long)col->hi);
                if (col->hi == INT64_MAX)
                    snprintf(msg, sizeof msg, " is not an integer >= %lld", (long long)col->lo);
                else
                    snprintf(msg, sizeof msg, " is not an integer from %lld to %lld", (long long)col->lo,
                             (long long)col->hi);
            } else {
                continue;
            }
            full = sql_add(where, sizeof where, &nw, "%s%s", nw ? " OR " : "", bad) < 0 ||
                   sql_add(cases, sizeof cases, &nc, " WHEN %s THEN '%s ' || substr(quote(%s), 1, 40) || '%s'", bad,
                           col->name, col->name, msg) < 0;
        }
        if (full) {
            damaged(t->path, "the checks of table ", tb->name); /* a description too large for the buffers */
            return -1;
        }
        if (nw == 0) continue;
        /* the whole table when it is small; else windows of its rows in
         * the order of its primary key, spread from the first to the last */
        const char *c0 = tb->cols[0].name;
        char key[256];
        snprintf(key, sizeof key, "%s", tb->key ? tb->key : "'row ' || ");
        if (!tb->key) snprintf(key + strlen(key), sizeof key - strlen(key), "%s", c0);
        char count_sql[256], range_sql[256];
        snprintf(count_sql, sizeof count_sql, "SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %d)", tb->name,
                 CHECK_WHOLE + 1);
        /* two subqueries: each is one b-tree seek, min() and max() in one SELECT a scan */
        snprintf(range_sql, sizeof range_sql, "SELECT (SELECT min(%s) FROM %s), (SELECT max(%s) FROM %s)", c0, tb->name,
                 c0, tb->name);
        int64_t rows = scalar_int(t->db, count_sql, -1), lo = 0, hi = 0;
        if (rows < 0) {
            damaged(t->path, "it cannot be read: ", sqlite3_errmsg(t->db));
            return -1;
        }
        if (rows == 0) continue;
        int windows = 1;
        if (rows > CHECK_WHOLE) {
            sqlite3_stmt *st = NULL;
            if (sqlite3_prepare_v2(t->db, range_sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
                damaged(t->path, "it cannot be read: ", sqlite3_errmsg(t->db));
                sqlite3_finalize(st);
                return -1;
            }
            lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);
            sqlite3_finalize(st);
            windows = CHECK_WINDOWS;
        }
        /* one statement per table, run over each window [?1, ?2] of its
         * primary key; a window's bound is found by walking the key alone */
        size_t ns = 0;
        char bound_sql[2][512];
        snprintf(bound_sql[0], sizeof bound_sql[0],
                 "SELECT max(%s) FROM (SELECT %s FROM %s WHERE %s >= ?1 ORDER BY %s LIMIT %d)", c0, c0, tb->name, c0,
                 c0, CHECK_WINDOW);
        snprintf(bound_sql[1], sizeof bound_sql[1],
                 "SELECT min(%s) FROM (SELECT %s FROM %s WHERE %s <= ?1 ORDER BY %s DESC LIMIT %d)", c0, c0, tb->name,
                 c0, c0, CHECK_WINDOW);
        if (sql_add(sql, sizeof sql, &ns, "SELECT %s, CASE%s END FROM %s WHERE %s BETWEEN ?1 AND ?2 AND (%s) LIMIT 1",
                    key, cases, tb->name, c0, where) < 0) {
            damaged(t->path, "the checks of table ", tb->name);
            return -1;
        }
        sqlite3_stmt *st = NULL, *bound[2] = {NULL, NULL};
        int rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
        for (int d = 0; d < 2 && rc == SQLITE_OK && windows > 1; d++)
            rc = sqlite3_prepare_v2(t->db, bound_sql[d], -1, &bound[d], NULL);
        int step = rc == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
        for (int w = 0; w < windows && step == SQLITE_DONE; w++) {
            int64_t from = INT64_MIN, to = INT64_MAX;
            if (windows > 1) {
                /* from lo + (hi - lo) * w / (windows - 1) up, without
                 * overflow; the last window ends at the last row */
                int last = w == windows - 1;
                uint64_t span = (uint64_t)hi - (uint64_t)lo;
                int64_t at = last ? hi : (int64_t)((uint64_t)lo + span / (uint64_t)(windows - 1) * (uint64_t)w);
                sqlite3_reset(bound[last]);
                sqlite3_bind_int64(bound[last], 1, at);
                if (sqlite3_step(bound[last]) != SQLITE_ROW || sqlite3_column_type(bound[last], 0) == SQLITE_NULL)
                    continue; /* no row there */
                from = last ? sqlite3_column_int64(bound[last], 0) : at;
                to = last ? at : sqlite3_column_int64(bound[last], 0);
            }
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, from);
            sqlite3_bind_int64(st, 2, to);
            step = sqlite3_step(st);
        }
        if (step == SQLITE_ROW) {
            char what[512];
            const char *k = (const char *)sqlite3_column_text(st, 0), *m = (const char *)sqlite3_column_text(st, 1);
            snprintf(what, sizeof what, "%s %s: %s", tb->name, k ? k : "?", m ? m : "a value out of place");
            damaged(t->path, "", what);
        } else if (step != SQLITE_DONE) {
            damaged(t->path, "it cannot be read: ", sqlite3_errmsg(t->db));
        }
        sqlite3_finalize(st);
        sqlite3_finalize(bound[0]);
        sqlite3_finalize(bound[1]);
        if (step != SQLITE_DONE) return -1;
    }
    return 0;
}

void vw_trace_close(struct vw_trace *t) {
    if (t->db) sqlite3_close(t->db);
    t->db = NULL;
    if (t->tmpdir[0]) {
        char p[4200];
        snprintf(p, sizeof p, "%s/trace.db", t->tmpdir);
        unlink(p);
        snprintf(p, sizeof p, "%s/trace.db-wal", t->tmpdir);
        unlink(p);
        snprintf(p, sizeof p, "%s/trace.db-shm", t->tmpdir);
        unlink(p);
        rmdir(t->tmpdir);
        vw_cleanup_drop_dir(t->tmpdir);
        t->tmpdir[0] = '\0';
    }
}

/* path as an SQLite URI naming that very file, then query: every byte but the unreserved ones and '/'
 * percent-encoded, so that a '#', '?' or '%41' in a trace's name is part of the name (an SQLite URI would
 * end the path at '#' or '?' and decode '%41'). An absolute path gets an empty authority (file:///...),
 * so that one starting "//" is not read as a host. */
static int file_uri(const char *path, const char *query, char *out, size_t size) {
    static const char hex[] = "0123456789ABCDEF";
    size_t at = (size_t)snprintf(out, size, "%s", path[0] == '/' ? "file://" : "file:");
    const unsigned char *p = (const unsigned char *)path;
    for (; *p && at + 4 < size; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("/-._~", *p);
        if (plain)
            out[at++] = (char)*p;
        else
            out[at++] = '%', out[at++] = hex[*p >> 4], out[at++] = hex[*p & 15];
    }
    if (*p || at + strlen(query) >= size) return -1; /* cut short, it would name another file */
    out[at] = 0;
    strcat(out, query);
    return 0;
}

/* The one way a trace is opened for reading (vw_trace_open, vw_trace_peek):
 * read-only and immutable (no lock, no -shm, nothing written beside the
 * input), or, when it has a write-ahead log, from a private copy of both.
 * quiet: no line on failure (a look at a sibling trace that may be
 * anything). 0, or -1 with nothing left open; *has_wal and *st say what was
 * found. */
static int trace_db_open(const char *path, struct vw_trace *t, int quiet, struct stat *stp, int *has_walp) {
    memset(t, 0, sizeof *t);
    t->path = path;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (!quiet) vw_error("%s: %s (give the path of a trace written by 'devtrace run')", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (!quiet) vw_error("%s: is a directory, not a trace file", path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* a FIFO, a device: reading it could block or never end */
        if (!quiet) vw_error("%s: not a regular file, not a trace", path);
        return -1;
    }
    if (st.st_size == 0) {
        if (!quiet)
            vw_error("%s: empty file: the traced program ended (or was killed) before the tracer wrote anything", path);
        return -1;
    }
    char head[16] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (!quiet) vw_error("%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n != (ssize_t)sizeof head || memcmp(head, "SQLite format 3", 16) != 0) {
        if (!quiet) vw_error("%s: not a devtrace trace (not an SQLite database)", path);
        return -1;
    }
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat ws;
    int has_wal = stat(wal, &ws) == 0 && ws.st_size > 0;
    char uri[3 * 4200 + 64];
    const char *target = path;
    char copy[4200];
    if (has_wal) {
        /* killed, or still running: read committed data from a copy */
        const char *tmp = getenv("TMPDIR");
        if (!tmp || tmp[0] != '/' || strlen(tmp) > sizeof t->tmpdir - 32) tmp = "/tmp";
        snprintf(t->tmpdir, sizeof t->tmpdir, "%s/devtrace-read.XXXXXX", tmp);
        sigset_t all, old;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old); /* a signal between the two would leave the dir behind */
        char *made = mkdtemp(t->tmpdir);
        if (made) vw_cleanup_add_dir(t->tmpdir);
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (!made) {
            t->tmpdir[0] = '\0';
            if (!quiet)
                vw_error("%s: has a write-ahead log and no private copy could be made: %s", path, strerror(errno));
            return -1;
        }
        char cwal[4200];
        snprintf(copy, sizeof copy, "%s/trace.db", t->tmpdir);
        snprintf(cwal, sizeof cwal, "%s/trace.db-wal", t->tmpdir);
        if (copy_file(path, copy) != 0 || copy_file(wal, cwal) != 0) {
            if (!quiet) vw_error("%s: cannot copy it with its write-ahead log for reading: %s", path, strerror(errno));
            vw_trace_close(t);
            return -1;
        }
        target = copy;
        file_uri(target, "", uri, sizeof uri); /* $TMPDIR/devtrace-read.XXXXXX/trace.db: fits */
    } else if (file_uri(target, "?immutable=1", uri, sizeof uri) < 0) {
        /* immutable: no locks, no -shm, nothing written next to the input */
        if (!quiet) vw_error("%s: path too long", path);
        return -1;
    }
    int flags = (has_wal ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_URI;
    if (sqlite3_open_v2(uri, &t->db, flags, NULL) != SQLITE_OK) {
        if (!quiet) vw_error("%s: cannot open as SQLite: %s", path, t->db ? sqlite3_errmsg(t->db) : "out of memory");
        vw_trace_close(t);
        return -1;
    }
    *stp = st;
    *has_walp = has_wal;
    return 0;
}

int vw_trace_peek(const char *path, struct vw_trace *t) {
    struct stat st;
    int has_wal;
    return trace_db_open(path, t, 1, &st, &has_wal);
}

int vw_trace_open(const char *path, struct vw_trace *t) {
    struct stat st;
    int has_wal;
    if (trace_db_open(path, t, 0, &st, &has_wal) < 0) return -1;
    int64_t app = scalar_int(t->db, "PRAGMA application_id", -1);
    if (app == -1) {
        vw_error("%s: truncated or corrupt SQLite file (%s)", path, sqlite3_errmsg(t->db));
        vw_trace_close(t);
        return -1;
    }
    if (app != TS_APPLICATION_ID) {
        vw_error("%s: an SQLite database, but not a devtrace trace (application_id 0x%llx)", path,
                 (unsigned long long)app);
        vw_trace_close(t);
        return -1;
    }
    int64_t ver = scalar_int(t->db, "PRAGMA user_version", -1);
    if (ver < TS_SCHEMA_MIN_VERSION || ver > TS_SCHEMA_VERSION) {
        vw_error("%s: trace schema version %lld; this devtrace (%s) reads versions %d to %d: %s", path, (long long)ver,
                 VW_VERSION, TS_SCHEMA_MIN_VERSION, TS_SCHEMA_VERSION,
                 ver > TS_SCHEMA_VERSION ? "upgrade devtrace"
                 : ver >= 1              ? "it was written by an older devtrace; record it again with this one"
                                         : "the file is damaged");
        vw_trace_close(t);
        return -1;
    }
    t->version = (int)ver;
    if (!has_wal) { /* a cut file: SQLite would only notice on the pages that are gone */
        int64_t pages = scalar_int(t->db, "PRAGMA page_count", -1), psize = scalar_int(t->db, "PRAGMA page_size", -1);
        if (pages < 0 || psize <= 0 || pages * psize > (int64_t)st.st_size) {
            vw_error("%s: truncated trace (%lld bytes, its header says %lld): copy it again from where it was "
                     "written",
                     path, (long long)st.st_size, (long long)(pages * psize));
            vw_trace_close(t);
            return -1;
        }
    }
    if (has_wal) {
        /* a live writer on this host: the trace is not finished */
        int64_t pid = scalar_int(t->db, "SELECT value FROM meta WHERE key = 'pid'", 0);
        char host[256] = "", thost[256];
        gethostname(host, sizeof host - 1);
        vw_meta(t, "host", thost, sizeof thost);
        /* ... unless the writer itself asks, having committed what it recorded (tr_api_flush): the
         * pytest plugin, after a test failed, names its own pid in DEVTRACE_READ_LIVE */
        const char *asker = getenv("DEVTRACE_READ_LIVE");
        int asked = asker && *asker && strtoll(asker, NULL, 10) == pid;
        if (pid > 0 && pid <= INT32_MAX && !strcmp(host, thost) && kill((pid_t)pid, 0) == 0 && !asked) {
            vw_error("%s: still being written by process %lld; wait for it to finish (or stop it) and read it again",
                     path, (long long)pid);
            vw_trace_close(t);
            return -1;
        }
    }
    if (check_layout(t) < 0) {
        vw_trace_close(t);
        return -1;
    }
    if (check_parents(t) < 0) {
        vw_trace_close(t);
        return -1;
    }
    if (check_values(t) < 0) {
        vw_trace_close(t);
        return -1;
    }
    /* A process that ran and ended with no tensor, op or error in its trace
     * is a clean run (a program on a library devtrace does not observe), not
     * an empty trace; so is one killed before its first event (a Python
     * stopped while it started): the report says who it was, how it ended
     * and that nothing was recorded before. One with no event is refused
     * when it stopped tracing, or has no sign that the process ended. */
    struct vw_health h;
    int killed = (int)meta_int(t->db, "killed_by_signal", 0),
        ended = (int)scalar_int(
            t->db, "SELECT EXISTS(SELECT 1 FROM meta WHERE key IN ('complete', 'exit_status', 'fatal_signal'))", 0);
    int healthy = vw_health(t->db, &h) ? h.complete || ended : ended;
    if (scalar_int(t->db, "SELECT EXISTS(SELECT 1 FROM events)", 0) == 0 && !killed && !healthy) {
        if (vw_health(t->db, &h) && !h.complete && h.why[0])
            vw_error("%s: the trace holds no events: %s", path, h.why);
        else
            vw_error("%s: the trace holds no events (the program made no tensor, or tracing was turned off at start)",
                     path);
        vw_trace_close(t);
        return -1;
    }
    return 0;
}

static const char *sig_name(int sig, char *buf, size_t size) {
    const char *abbrev = sig > 0 && sig < 65 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, size, "SIG%s", abbrev);
    else
        snprintf(buf, size, "signal %d", sig);
    return buf;
}

static int64_t meta_int(sqlite3 *db, const char *key, int64_t dflt) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = '%s'", key);
    return scalar_int(db, sql, dflt);
}

int vw_health(sqlite3 *db, struct vw_health *h) {
    char sig[32];
    memset(h, 0, sizeof *h);
    h->dropped = meta_int(db, "events_dropped", -1);
    if (h->dropped < 0) /* not finished (killed): the writer's running count per thread */
        h->dropped = scalar_int(db, "SELECT sum(dropped) FROM threads WHERE dropped > 0", 0);
    if (h->dropped < 0) h->dropped = 0;
    h->complete = meta_int(db, "complete", 0) == 1;
    int killed = (int)meta_int(db, "killed_by_signal", 0), fatal = (int)meta_int(db, "fatal_signal", 0);
    int64_t stopped = scalar_int(db, "SELECT EXISTS(SELECT 1 FROM meta WHERE key = 'tracing_stopped')", 0);
    if (stopped > 0) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'tracing_stopped'", -1, &st, NULL) ==
            SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
                snprintf(h->stopped, sizeof h->stopped, "%s", (const char *)sqlite3_column_text(st, 0));
            sqlite3_finalize(st);
        }
    }
    h->all_kept = !h->complete && fatal && !stopped;
    if (!h->complete) {
        if ((fatal || killed) && scalar_int(db, "SELECT EXISTS(SELECT 1 FROM events)", 1) == 0)
            snprintf(h->why, sizeof h->why, "the program was killed by %s: nothing recorded before it was killed",
                     sig_name(fatal ? fatal : killed, sig, sizeof sig));
        else if (fatal || killed)
            snprintf(h->why, sizeof h->why, "the program was killed by %s%s",
                     sig_name(fatal ? fatal : killed, sig, sizeof sig),
                     fatal ? " (every event before it was kept)"
                           : " (the events of its last commit window, 20 ms, may be missing)");
        else if (h->stopped[0])
            snprintf(h->why, sizeof h->why, "tracing stopped before the program ended: %s", h->stopped);
        else
            snprintf(h->why, sizeof h->why,
                     "the tracer stopped writing before the program ended (a write error or a full disk: see the "
                     "warning it printed)%s",
                     scalar_int(db, "SELECT EXISTS(SELECT 1 FROM meta WHERE key = 'exit_status')", 0) > 0
                         ? ""
                         : ", or the program was killed");
    }
    if (h->dropped) {
        char since[80] = "", span[72];
        h->first_dropped = meta_int(db, "first_dropped_seq", 0);
        h->last_dropped = meta_int(db, "last_dropped_seq", 0);
        if (h->first_dropped < 0 || h->last_dropped < 0 || (h->last_dropped && h->last_dropped < h->first_dropped))
            h->first_dropped = h->last_dropped = 0; /* nonsense: not known */
        if (h->first_dropped > 0) snprintf(since, sizeof since, ",%s", vw_health_span(h, 1, span, sizeof span));
        snprintf(h->lost, sizeof h->lost, "%lld event%s dropped (full rings%s%s): a chain may miss links",
                 (long long)h->dropped, h->dropped == 1 ? "" : "s",
                 meta_int(db, "lossy", 0) == 1 ? " in lossy mode, DEVTRACE_LOSSY=1" : "", since);
    }
    h->max_mb = meta_int(db, "max_mb", -1);
    h->pruned = meta_int(db, "pruned_events", 0);
    if (h->pruned > 0) {
        h->first_pruned = meta_int(db, "pruned_first_seq", 0);
        h->last_pruned = meta_int(db, "pruned_last_seq", 0);
        if (h->first_pruned <= 0 || h->last_pruned < h->first_pruned) h->first_pruned = h->last_pruned = 0;
        char span[72] = "", cap[48] = "";
        if (h->first_pruned > 0)
            snprintf(span, sizeof span, " between events #%lld and #%lld", (long long)h->first_pruned,
                     (long long)h->last_pruned);
        if (h->max_mb > 0) snprintf(cap, sizeof cap, ", under a cap of %lld MB", (long long)h->max_mb);
        snprintf(h->pruned_text, sizeof h->pruned_text,
                 "%lld event%s of freed tensors pruned%s%s; every live tensor's chain is kept", (long long)h->pruned,
                 h->pruned == 1 ? "" : "s", span, cap);
    } else {
        h->pruned = 0;
    }
    return h->complete && !h->dropped ? 0 : 1;
}

int vw_health_pruned(const struct vw_health *h, int64_t lo, int64_t hi) {
    if (h->pruned <= 0) return 0;
    if (h->first_pruned <= 0) return 1; /* not known where */
    return h->first_pruned <= hi && h->last_pruned >= lo;
}

const char *vw_health_span(const struct vw_health *h, int words, char *buf, size_t size) {
    buf[0] = '\0';
    if (h->first_dropped > 0 && h->last_dropped > h->first_dropped)
        snprintf(buf, size, " between %s#%lld and #%lld", words ? "events " : "", (long long)h->first_dropped,
                 (long long)h->last_dropped);
    else if (h->first_dropped > 0)
        snprintf(buf, size, h->last_dropped ? " at %s#%lld" : " from %s#%lld on", words ? "event " : "",
                 (long long)h->first_dropped);
    return buf;
}

int vw_health_gap(const struct vw_health *h, int64_t lo, int64_t hi) {
    if (h->dropped <= 0) return 0;
    if (h->first_dropped <= 0) return 1; /* not known when: any chain may */
    return h->first_dropped <= hi && (!h->last_dropped || h->last_dropped >= lo);
}

sqlite3_stmt *vw_prep(struct vw_trace *t, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK) {
        vw_error("%s: unexpected trace contents (%s)", t->path, sqlite3_errmsg(t->db));
        return NULL;
    }
    return st;
}

const char *vw_meta(struct vw_trace *t, const char *key, char *buf, size_t size) {
    buf[0] = '\0';
    sqlite3_stmt *st = vw_prep(t, "SELECT value FROM meta WHERE key = ?");
    if (!st) return buf;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

struct vw_trace *vw_trace_open_all(const char *const *paths, int n) {
    struct vw_trace *tr = calloc((size_t)n, sizeof *tr);
    if (!tr) {
        vw_error("out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (vw_trace_open(paths[i], &tr[i]) < 0) {
            vw_trace_close_all(tr, i);
            return NULL;
        }
    return tr;
}

void vw_trace_close_all(struct vw_trace *tr, int n) {
    for (int i = 0; tr && i < n; i++) vw_trace_close(&tr[i]);
    free(tr);
}

const char *vw_dtype_name(int d) {
    static const char *const names[] = {"float32",  "int64", "bool",  "float64", "float16",
                                        "bfloat16", "int32", "uint8", "other"};
    return d >= 0 && d < (int)(sizeof names / sizeof names[0]) ? names[d] : "?";
}

const char *vw_device_name(int64_t dev, char *buf, size_t size) {
    switch (dev >> 16) {
    case 0: snprintf(buf, size, "cpu"); break;
    case 1: snprintf(buf, size, "cuda:%lld", (long long)(dev & 0xffff)); break;
    case 2: snprintf(buf, size, "meta"); break;
    case 3: snprintf(buf, size, "other:%lld", (long long)(dev & 0xffff)); break;
    default: snprintf(buf, size, "device%lld", (long long)dev); break;
    }
    return buf;
}
