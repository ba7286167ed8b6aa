/* devtrace fix: the first device mismatch's fix as a patch (a unified diff
 * that `patch -p0` and `git apply` take), and with --verify, that patch
 * applied to a copy of the program's source and the program run again
 * (on the same simulated GPUs) to say whether the mismatch is gone.
 * The patch comes from the rule that explains the mismatch (rules.c), made
 * only of source facts of a producer's shape (validate.c), and only for a
 * file whose text is what the trace recorded (its SHA-256, the indentation
 * of the line the code goes after). A trace is untrusted input: --verify
 * runs a command only with the user's say (typed after --, confirmed at a
 * terminal, or --run-recorded-command), and copies or links only files
 * under the directory it is run from (or --root). Nothing is written but
 * -o's file and a temporary directory. */
#include "diag.h"
#include "trace_schema.h"
#include "validate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sha2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIX_SOURCE_MAX (64 << 20) /* bytes of a source file fix reads at most: no program's file is larger */

static void usage(FILE *f) {
    fputs("usage: devtrace fix [-o FILE] TRACE\n"
          "       devtrace fix --verify [--root DIR] [-o FILE] TRACE [--run-recorded-command | -- COMMAND...]\n\n"
          "The suggested change for the trace's first device mismatch as a unified diff (to stdout, or to FILE),\n"
          "for `patch -p0` or `git apply` from the directory the report names its files from. A fact of the\n"
          "trace that no producer writes (edited by hand, say) means no patch: the trace is inconsistent.\n\n"
          "With --verify, the patch is applied to a copy of the program's files and the program is run again under\n"
          "devtrace, on the same simulated GPUs when the trace was made on them: says whether the mismatch is\n"
          "gone, and reports another one if it fires. The file it patches must lie under the current directory\n"
          "(or --root DIR), which is what the copy holds. What runs is your say, never the trace's alone:\n"
          "  -- COMMAND...            your command (devtrace fix --verify run.db -- python3 train.py), run in the\n"
          "                           copy of the current directory, its files under the tree taken from the copy\n"
          "  --run-recorded-command   the command and directory the trace recorded (its meta argv and cwd)\n"
          "  neither, at a terminal   the recorded command is shown, with its directory and environment, and runs\n"
          "                           only when you answer y\n"
          "  neither, no terminal     nothing runs: one line, exit 2\n\n"
          "Exit status: 0 a patch was written (--verify: and the program then ran without a device mismatch),\n"
          "1 --verify: the patched program still fails, 2 bad usage, an unreadable or inconsistent trace, no patch\n"
          "to give (the rule proposes no code, or the source is gone or changed since the run), or --verify not\n"
          "allowed to run the command.\n",
          f);
}

/* A patch's lines: control bytes escaped (the added code comes from the trace), tabs kept. */
static void put_raw(FILE *f, const char *s) { vw_put_escaped_line(f, s); }

/* s for a message line: control bytes as \xNN (escape.c). */
static const char *shown(const char *s, char *buf, size_t size) { return vw_escape_ctl(s, buf, size); }

/* A file fix reads (never a FIFO or a device, never more than FIX_SOURCE_MAX bytes: files.c), or NULL. */
static FILE *open_regular(const char *path) { return vw_fopen_regular(path, FIX_SOURCE_MAX); }

/* The hex SHA-256 of a file into hex[65]; 0, or -1 when it cannot be read. */
static int file_sha256(const char *path, char hex[65]) {
    FILE *f = vw_fopen_regular(path, VW_SOURCE_MAX_BYTES); /* a FIFO or /dev/zero never holds fix */
    if (!f) return -1;
    SHA2_CTX ctx;
    SHA256Init(&ctx);
    unsigned char buf[65536];
    size_t n, total = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && (total += n) <= FIX_SOURCE_MAX) SHA256Update(&ctx, buf, n);
    int bad = ferror(f) || total > FIX_SOURCE_MAX;
    fclose(f);
    if (bad) return -1;
    SHA256End(&ctx, hex);
    return 0;
}

/* The value of the producer's line-0 fact `key` for file into out (checked for its shape: a value of another
 * shape is refused and makes the trace inconsistent); 1 when there is one. */
static int file_fact(struct vw_model *m, const char *file, const char *key, char *out, size_t size) {
    out[0] = 0;
    if (!m->have_facts) return 0;
    const char *vals[1];
    const char *why;
    if (vw_facts_values(vw_model_facts(m), file, 0, 0, key, vals, NULL, 1) == 1) {
        if (vw_fact_shape(key, vals[0], &why))
            snprintf(out, size, "%s", vals[0]);
        else
            vw_model_refuse(m, file, 0, key, why);
    }
    return out[0] != 0;
}

/* The path of a frame's file as it can be opened now (as named, or under the directory the program ran
 * in, and under the source root: source.c), into buf; NULL when it is gone, may not be read or is no
 * regular file. */
static const char *source_path(struct vw_trace *t, const char *file, char *buf, size_t size) {
    const char *p = vw_source_path(t, file, buf, size);
    if (!p) return NULL;
    FILE *f = open_regular(p);
    if (!f) return NULL;
    fclose(f);
    return p;
}

/* Line n of the regular file at path (no newline), malloc'd; NULL when it has none. */
static char *real_line(const char *path, int n) {
    FILE *f = open_regular(path);
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len = -1;
    for (int i = 0; i < n && (len = getline(&buf, &cap, f)) >= 0; i++) {
    }
    fclose(f);
    if (len < 0) {
        free(buf);
        return NULL;
    }
    buf[strcspn(buf, "\r\n")] = 0;
    return buf;
}

/* Whether the file at path is where the fix's code goes as the trace recorded it: the leading whitespace of
 * the line the code is placed by (its statement's first line) is the recorded indentation, and each edit
 * inside a statement lands next to a closing parenthesis (or removes a `.cpu()`). 0, with why, otherwise. */
static int matches_recorded(struct vw_model *m, const struct vw_fix *fix, const char *path, const char **why) {
    struct vw_src src;
    const char *file = fix->site.site.file;
    if (!fix->replace) {
        if (!vw_src_at(m, file, fix->site.site.line, &src)) return *why = "no source facts for the line", 0;
        char *text = real_line(path, src.first);
        if (!text) return *why = "the file is shorter", 0;
        size_t n = strspn(text, " \t\f");
        int same = strlen(src.indent) == n && !strncmp(text, src.indent, n);
        free(text);
        return same ? 1 : (*why = "its indentation is not the one recorded", 0);
    }
    for (int i = 0; i < fix->nedits; i++) {
        const struct vw_edit *e = &fix->edits[i];
        char *text = real_line(path, e->line);
        if (!text) return *why = "the file is shorter", 0;
        size_t len = strlen(text);
        int ok = e->col >= 0 && (size_t)e->col <= len;
        const char *at = text + (ok ? e->col : 0);
        ok = ok && (e->del ? e->del == 6 && !strncmp(at, ".cpu()", 6) : *at == ')' || (e->col > 0 && at[-1] == ')'));
        free(text);
        if (!ok) return *why = "an edit's place is not a call's end", 0;
    }
    return 1;
}

/* The fix of the first mismatch that has one with code; its patch in *diff (malloc'd). 0, or an exit
 * status after saying why. */
static int first_patch(struct vw_model *m, struct vw_fix *fix, char **diff, int *nmismatch) {
    sqlite3_stmt *mm = vw_prep(m->t, VW_MISMATCHES_SQL);
    if (!mm) return VW_EXIT_USAGE;
    int rc = -1, n = 0;
    char why[600] = "", name[600];
    while (rc < 0 && sqlite3_step(mm) == SQLITE_ROW) {
        struct vw_case k;
        n++;
        if (vw_case_load(m, &k, sqlite3_column_int64(mm, 0), sqlite3_column_int(mm, 1), sqlite3_column_int(mm, 2),
                         (const char *)sqlite3_column_text(mm, 3), sqlite3_column_int64(mm, 4),
                         sqlite3_column_int64(mm, 5), sqlite3_column_int64(mm, 6)) < 0) {
            vw_case_free(&k);
            rc = VW_EXIT_USAGE;
            break;
        }
        if (!vw_diagnose(m, &k, fix)) {
            if (!why[0]) snprintf(why, sizeof why, "no rule explains the mismatch in %.300s", k.opname);
        } else if (fix->inconsistent || m->inconsistent[0]) {
            rc = VW_EXIT_USAGE; /* said below */
        } else if (!fix->code[0] || !fix->has_site) {
            if (!why[0])
                snprintf(why, sizeof why, "the fix (rule %s) is advice, not code: %.500s", fix->rule, fix->text);
        } else {
            char path[4096], want[65], have[65];
            const char *file = fix->site.site.file, *bad = NULL;
            int py = vw_code_lang(m, &fix->site.site) == VW_LANG_PYTHON;
            int hashed = file_fact(m, file, DT_FACT_SHA256, want, sizeof want);
            if (m->inconsistent[0]) {
                rc = VW_EXIT_USAGE;
            } else if (!source_path(m->t, file, path, sizeof path)) {
                char why2[4200]; /* "not found": gone since the run; or outside the source root, not regular... */
                const char *w = vw_source_unavailable(m->t, file, why2, sizeof why2);
                if (!strcmp(w, "not found"))
                    vw_error("fix: %s is gone since the run: no patch", shown(file, name, sizeof name));
                else
                    vw_error("fix: %s: source not available: %s: no patch", shown(file, name, sizeof name), w);
                rc = VW_EXIT_USAGE;
            } else if (py && !hashed) { /* the Python producer records every file's hash */
                snprintf(m->inconsistent, sizeof m->inconsistent, "the Python file %s has no recorded SHA-256",
                         shown(file, name, sizeof name));
                rc = VW_EXIT_USAGE;
            } else if (hashed && (file_sha256(path, have) < 0 || strcmp(want, have))) {
                vw_error("fix: %s changed since the run (its SHA-256 differs from the one recorded): no patch",
                         shown(file, name, sizeof name));
                rc = VW_EXIT_USAGE;
            } else if (!matches_recorded(m, fix, path, &bad)) {
                snprintf(m->inconsistent, sizeof m->inconsistent, "%s is not the file its facts describe: %s",
                         shown(file, name, sizeof name), bad);
                rc = VW_EXIT_USAGE;
            } else {
                size_t size = 0;
                FILE *f = open_memstream(diff, &size);
                int ok = f && vw_fix_diff(m, fix, f, put_raw);
                if (f) fclose(f);
                if (ok)
                    rc = 0;
                else {
                    free(*diff);
                    *diff = NULL;
                    if (!why[0])
                        snprintf(why, sizeof why,
                                 "the fix (rule %s) cannot be placed: the trace has no source facts for %.300s:%d",
                                 fix->rule, shown(file, name, sizeof name), fix->site.site.line);
                }
            }
        }
        vw_case_free(&k);
    }
    sqlite3_finalize(mm);
    *nmismatch = n;
    if (rc > 0 && m->inconsistent[0])
        vw_error("fix: %s is inconsistent: %s: no patch", shown(m->t->path, name, sizeof name), m->inconsistent);
    if (rc < 0) {
        if (!n)
            vw_error("fix: %s holds no device mismatch: nothing to fix", shown(m->t->path, name, sizeof name));
        else
            vw_error("fix: no patch to give: %s", shown(why, name, sizeof name));
        rc = VW_EXIT_USAGE;
    }
    return rc;
}

/* Writes text to path whole or not at all; 0, or -1 after saying why. */
static int write_file(const char *path, const char *text) {
    char tmp[4200];
    FILE *f = vw_out_open("fix", path, tmp, sizeof tmp);
    if (!f) return -1;
    fputs(text, f);
    return vw_out_finish("fix", path, tmp, f, 1);
}

/* ---------------------------------------------------------------- --verify */

/* Runs argv (NULL-terminated) in cwd with env's NAME=VALUE additions; waits; the exit status, or -1. The
 * program's standard output goes to /dev/null: stdout is the patch's and the verdict's. */
static int run_wait(char *const *argv, const char *cwd, char *const *env) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (cwd && chdir(cwd) != 0) _exit(125);
        for (int i = 0; env && env[i]; i++) putenv(env[i]);
        FILE *n = freopen("/dev/null", "w", stdout);
        (void)n;
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int (*vw_fix_runner)(char *const *argv, const char *cwd, char *const *env) = run_wait;

/* dir's entries as symbolic links in tmp (an existing directory). */
static int link_entries(const char *dir, const char *tmp) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    char from[PATH_MAX + 512], to[PATH_MAX + 512];
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "__pycache__")) continue;
        snprintf(from, sizeof from, "%s/%s", dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", tmp, e->d_name);
        if (symlink(from, to) != 0) rc = -1;
    }
    closedir(d);
    return rc;
}

/* Makes rel (a file under root, no symbolic link on its way: a real path) a real file in the mirror tmp of
 * root: each directory on its way a real directory whose other entries link to the originals, the file a
 * copy (Python takes a script's real path for its modules' directory: a link would lead it back to the
 * original tree). Only what lies under root is linked or copied. */
static int materialize(const char *root, const char *tmp, const char *rel) {
    char from[PATH_MAX + 512], to[PATH_MAX + 512], name[PATH_MAX];
    const char *slash = strchr(rel, '/');
    snprintf(name, sizeof name, "%.*s", slash ? (int)(slash - rel) : (int)strlen(rel), rel);
    if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..")) return -1;
    snprintf(from, sizeof from, "%s/%s", root, name);
    snprintf(to, sizeof to, "%s/%s", tmp, name);
    struct stat st;
    int linked = lstat(to, &st) == 0 && S_ISLNK(st.st_mode), missing = lstat(to, &st) != 0;
    if (slash) {
        if (linked || missing) {
            if ((linked && unlink(to) != 0) || mkdir(to, 0700) != 0 || link_entries(from, to) != 0) return -1;
        }
        return materialize(from, to, slash + 1);
    }
    if (linked && unlink(to) != 0) return -1;
    if (!linked && !missing) return 0; /* made already */
    FILE *in = open_regular(from), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int rc = out ? 0 : -1;
    while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = -1;
    if (in) fclose(in);
    if (out && fclose(out) != 0) rc = -1;
    return rc;
}

/* path under root (a directory, both real paths) as its place under tmp, into out; 0 when it is not under
 * root. */
static int under(const char *path, const char *root, const char *tmp, char *out, size_t size) {
    size_t n = strlen(root);
    if (!strcmp(root, "/")) n = 0;
    if (strncmp(path, root, n) || (path[n] && path[n] != '/')) return 0;
    snprintf(out, size, "%s%s", tmp, path + n);
    return 1;
}

/* Applies the fix to a copy of its file at dst: the source with the diff's change. 0, or -1. */
static int apply_copy(struct vw_model *m, const struct vw_fix *fix, const char *src, const char *dst) {
    int after = -1;
    char *lines = NULL;
    if (!fix->replace && !vw_fix_place(m, fix, &after, &lines)) return -1;
    FILE *in = open_regular(src), *out = in ? fopen(dst, "w") : NULL;
    if (!out) {
        if (in) fclose(in);
        free(lines);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0;
    if (after == 0) fprintf(out, "%s\n", lines);
    while ((len = getline(&line, &cap, in)) >= 0) {
        n++;
        char *edited = NULL;
        if (fix->replace) {
            int nl = len && line[len - 1] == '\n';
            if (nl) line[len - 1] = 0;
            edited = vw_edited_line(fix, n, line);
            if (nl) line[len - 1] = '\n';
        }
        if (edited) {
            fprintf(out, "%s%s", edited, len && line[len - 1] == '\n' ? "\n" : "");
            free(edited);
            continue;
        }
        fputs(line, out);
        if (n == after) fprintf(out, "%s%s\n", len && line[len - 1] == '\n' ? "" : "\n", lines);
    }
    free(line);
    free(lines);
    fclose(in);
    return fclose(out) == 0 ? 0 : -1;
}

static int rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    return rmdir(dir);
}

/* The worst of the brief reports of the traces in dir whose names start with stem's (a verifying run's
 * children: spawned ranks): 1 a mismatch, 0 none, -1 none readable. */
static int children_found(const char *dir, const char *stem) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 512];
    int found = 0;
    for (int seen = 0; d && (e = readdir(d)) && seen < 4096; seen++) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".db") || strncmp(e->d_name, stem, strlen(stem)) ||
            !strcmp(e->d_name + strlen(stem), ".db"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct vw_trace c;
        if (vw_trace_peek(path, &c) != 0) continue;
        FILE *null = fopen("/dev/null", "w");
        int f = null ? vw_report_trace(&c, 0, VW_REPORT_BRIEF | VW_REPORT_NO_SOURCE, null, 0, 1, NULL) : -1;
        if (null) fclose(null);
        vw_trace_close(&c);
        if (f > 0) found = 1;
    }
    if (d) closedir(d);
    return found;
}

/* What the user said --verify may run. */
struct verify_say {
    char **cmd;       /* the command after --, or NULL */
    int ncmd;         /* its words */
    int recorded;     /* --run-recorded-command */
    const char *root; /* --root DIR, or NULL: the current directory */
};

#define VERIFY_MAX_ARGS 250

/* The command the trace recorded (meta argv, a JSON array of strings) into given[] (strdup'd); how many. */
static int recorded_argv(struct vw_trace *t, char **given) {
    sqlite3_stmt *st = vw_prep(t, "SELECT CASE WHEN json_valid(value) AND json_type(value) = 'array' THEN 1 END, "
                                  "value FROM meta WHERE key = 'argv'");
    int ok = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (st) sqlite3_finalize(st);
    if (!ok) return 0;
    st = vw_prep(t, "SELECT value FROM json_each((SELECT value FROM meta WHERE key = 'argv'))");
    int n = 0;
    while (st && n < VERIFY_MAX_ARGS && sqlite3_step(st) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(st, 0);
        given[n++] = strdup(a ? a : "");
    }
    if (st) sqlite3_finalize(st);
    return n;
}

/* argv as a shell would read it, each word quoted where it needs to be, control bytes as \xNN; into buf. */
static const char *shell_words(char *const *argv, int n, char *buf, size_t size) {
    size_t at = 0;
    char esc[1200];
    buf[0] = 0;
    for (int i = 0; i < n && at + 8 < size; i++) {
        const char *w = shown(argv[i], esc, sizeof esc);
        static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=+,@%";
        int plain = w[0] && strspn(w, safe) == strlen(w);
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? " " : "", plain ? "" : "'");
        for (const char *p = w; *p && at + 6 < size; p++)
            at += (size_t)snprintf(buf + at, size - at, *p == '\'' ? "'\\''" : "%c", *p);
        if (!plain && at + 2 < size) at += (size_t)snprintf(buf + at, size - at, "'");
    }
    return buf;
}

/* Asks at the terminal (stderr, stdin) whether to run; 1 on y or yes. */
static int confirmed(void) {
    fputs("devtrace: run it? [y/N] ", stderr);
    fflush(stderr);
    char answer[64];
    if (!fgets(answer, sizeof answer, stdin)) return 0;
    answer[strcspn(answer, "\r\n")] = 0;
    return !strcmp(answer, "y") || !strcmp(answer, "Y") || !strcmp(answer, "yes") || !strcmp(answer, "YES");
}

/* The program's tree (the directory the user runs devtrace from, or --root) into root, and the patched file as
 * it can be opened (path) and resolved (real), which must lie under it whatever the trace says. 0, or an exit
 * status after one line that says why. */
static int fix_in_tree(struct vw_trace *t, const struct vw_fix *fix, const struct verify_say *say, char *path,
                       size_t path_size, char root[PATH_MAX], char real[PATH_MAX]) {
    char msg[1200], full[PATH_MAX + 1100];
    if (!source_path(t, fix->site.site.file, path, path_size)) return VW_EXIT_USAGE;
    if (!realpath(say->root ? say->root : ".", root)) {
        vw_error("fix: --root %s: %s", shown(say->root ? say->root : ".", msg, sizeof msg), strerror(errno));
        return VW_EXIT_USAGE;
    }
    if (!realpath(path, real) || !under(real, root, "", full, sizeof full) || !strcmp(real, root)) {
        vw_error("fix: --verify copies only files under %s (the current directory, or --root DIR): %s is not "
                 "under it: nothing run",
                 shown(root, msg, sizeof msg), shown(path, full, sizeof full));
        return VW_EXIT_USAGE;
    }
    return 0;
}

/* The patched program run again under devtrace, in a temp dir that mirrors the program's tree (root); 0
 * when it ran without a device mismatch, or an exit status after saying why. */
/* One run of the command in argv (`devtrace run ... -- PROGRAM...`, its trace at db) in wd with env: the
 * worst of its trace's brief reports, written to out (NULL: none kept), 0 for no mismatch, -1 when it cannot
 * be read, -2 when the command could not run or left no trace; its exit status in *status. */
static int run_judged(char *const *argv, const char *wd, char *const *env, const char *db, int *status, FILE *out) {
    *status = vw_fix_runner(argv, wd, env);
    struct vw_trace after;
    if (*status < 0 || vw_trace_open(db, &after) < 0) return -2;
    FILE *null = out ? NULL : fopen("/dev/null", "w"), *to = out ? out : null;
    int found = to ? vw_report_trace(&after, 0, VW_REPORT_BRIEF | VW_REPORT_NO_SOURCE, to, 0, 1, NULL) : -1;
    if (null) fclose(null);
    vw_trace_close(&after);
    return found;
}

/* The patch ran on the simulated GPUs; a fix must not break the program where it has no GPU (issue 41: a
 * device literal in library code does). The patched program runs again on the cpu alone
 * (DEVTRACE_SIM_CUDA=0, CUDA_VISIBLE_DEVICES empty); when it fails there, the program as it was runs on the
 * cpu too, in a second copy: when that one runs, the patch broke the cpu path and is not verified; when it
 * fails as well, the program has no cpu path and the patch is judged on the GPUs alone, and said so.
 * VW_EXIT_OK or VW_EXIT_FOUND, having said why not. */
static int verify_cpu(const char *root, const char *tmpl, char **argv, int argc, int prog, const char *wd,
                      char *const *simenv, int nsimenv) {
    char *env[8];
    int nenv = 0;
    for (int i = 0; i < nsimenv && nenv < 5; i++)
        if (strncmp(simenv[i], "DEVTRACE_SIM_CUDA=", 18)) env[nenv++] = simenv[i];
    env[nenv++] = "DEVTRACE_SIM_CUDA=0";
    env[nenv++] = "CUDA_VISIBLE_DEVICES=";
    env[nenv] = NULL;
    char db[PATH_MAX + 256];
    snprintf(db, sizeof db, "%s/verify-cpu.db", tmpl);
    char *saved = argv[prog - 2];
    argv[prog - 2] = db; /* -o DB */
    fprintf(stderr, "devtrace: verifying: the patched program run again on the cpu alone (DEVTRACE_SIM_CUDA=0 "
                    "CUDA_VISIBLE_DEVICES=)\n");
    int status, found = run_judged(argv, wd, env, db, &status, NULL);
    if (found == 0 && status == 0) {
        argv[prog - 2] = saved;
        printf("verified: with the patch, the program ran to the end (exit status 0) without a device mismatch "
               "on the simulated GPU(s), and on the cpu alone\n");
        return VW_EXIT_OK;
    }
    /* did it run on the cpu before the patch? the same command in a copy without it */
    char orig[] = "/tmp/devtrace-fix.XXXXXX", odb[PATH_MAX + 256];
    int ostatus = -1, ofound = -1;
    if (mkdtemp(orig)) {
        vw_cleanup_add_dir(orig);
        snprintf(odb, sizeof odb, "%s/verify-orig.db", orig);
        if (link_entries(root, orig) == 0) {
            char *oargv[VERIFY_MAX_ARGS + 16];
            int n = 0, ok = 1;
            size_t tl = strlen(tmpl);
            for (int i = 0; i < argc && n < VERIFY_MAX_ARGS + 15; i++) {
                /* the program's files the first copy made real: the same, real again, in this one */
                if (i >= prog && !strncmp(argv[i], tmpl, tl) && argv[i][tl] == '/') {
                    ok = ok && materialize(root, orig, argv[i] + tl + 1) == 0;
                    oargv[n++] = strdup(argv[i]);
                    memcpy(oargv[n - 1], orig, tl); /* both templates have the same length */
                } else
                    oargv[n++] = strdup(i == prog - 2 ? odb : argv[i]);
            }
            oargv[n] = NULL;
            char wdo[PATH_MAX + 256];
            snprintf(wdo, sizeof wdo, "%s%s", orig, wd + tl);
            if (ok) ofound = run_judged(oargv, wdo, env, odb, &ostatus, NULL);
            for (int i = 0; i < n; i++) free(oargv[i]);
        }
        rm_tree(orig);
        vw_cleanup_drop_dir(orig);
    }
    argv[prog - 2] = saved;
    if (ofound == 0 && ostatus == 0) {
        if (found > 0)
            printf("not verified: with the patch, the program runs on the simulated GPU(s) but a device mismatch "
                   "fires on the cpu alone, where it ran before the patch: the fix names a device the cpu run does "
                   "not have\n");
        else
            printf("not verified: with the patch, the program runs on the simulated GPU(s) but exits with status %d "
                   "on the cpu alone, where it ran before the patch: the fix names a device the cpu run does not "
                   "have\n",
                   status);
        return VW_EXIT_FOUND;
    }
    printf("verified: with the patch, the program ran to the end (exit status 0) without a device mismatch on the "
           "simulated GPU(s); its cpu path was not checked: without the patch it does not run to the end on the cpu "
           "alone either\n");
    return VW_EXIT_OK;
}

static int verify(struct vw_model *m, const struct vw_fix *fix, const char *self, const struct verify_say *say) {
    struct vw_trace *t = m->t;
    char path[4096], tmpl[] = "/tmp/devtrace-fix.XXXXXX", cwd[PATH_MAX] = "", sim[16] = "", msg[1200];
    char root[PATH_MAX], real[PATH_MAX], ra[PATH_MAX], full[PATH_MAX + 1100], rcwd[PATH_MAX];
    int bad = fix_in_tree(t, fix, say, path, sizeof path, root, real);
    if (bad) return bad;
    const char *base = strrchr(real, '/') + 1;
    /* the command: the user's, or the one the trace recorded (with its directory) */
    char *given[VERIFY_MAX_ARGS + 1];
    int ngiven = 0, rc = VW_EXIT_USAGE;
    if (say->cmd) {
        for (int i = 0; i < say->ncmd && ngiven < VERIFY_MAX_ARGS; i++) given[ngiven++] = strdup(say->cmd[i]);
        if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    } else {
        ngiven = recorded_argv(t, given);
        vw_meta(t, "cwd", cwd, sizeof cwd);
    }
    if (!ngiven) {
        vw_error("fix: the trace does not say what command was run (no argv): pass yours after --");
        return VW_EXIT_USAGE;
    }
    if (!cwd[0] || !realpath(cwd, rcwd) || !under(rcwd, root, "", full, sizeof full)) {
        vw_error("fix: the command would run in %s, which is not under %s (the current directory, or --root "
                 "DIR): nothing run",
                 shown(cwd[0] ? cwd : "(no directory)", msg, sizeof msg), shown(root, full, sizeof full));
        goto free_given;
    }
    if (!mkdtemp(tmpl)) {
        vw_error("fix: cannot make a temporary directory: %s", strerror(errno));
        goto free_given;
    }
    vw_cleanup_add_dir(tmpl);
    char db[PATH_MAX + 256], copy[PATH_MAX + 256], wd[PATH_MAX + 256];
    snprintf(db, sizeof db, "%s/verify.db", tmpl);
    size_t skip = strcmp(root, "/") ? strlen(root) + 1 : 1;
    int ok = link_entries(root, tmpl) == 0 && materialize(root, tmpl, real + skip) == 0;
    char *argv[VERIFY_MAX_ARGS + 16];
    int argc = 0;
    argv[argc++] = (char *)self;
    argv[argc++] = "run";
    argv[argc++] = "--overwrite";
    argv[argc++] = "-o";
    argv[argc++] = db;
    argv[argc++] = "--";
    int prog = argc;
    /* the program's own files on its command line that lie under the tree: real copies, named there */
    for (int i = 0; i < ngiven; i++) {
        char moved[PATH_MAX + 256];
        struct stat sb;
        snprintf(full, sizeof full, "%s/%s", rcwd, given[i]);
        int in = ok && i > 0 && realpath(given[i][0] == '/' ? given[i] : full, ra) && stat(ra, &sb) == 0 &&
                 S_ISREG(sb.st_mode) && under(ra, root, tmpl, moved, sizeof moved) && strcmp(ra, root);
        if (in) ok = materialize(root, tmpl, ra + skip) == 0;
        argv[argc++] = strdup(in ? moved : given[i]);
    }
    argv[argc] = NULL;
    snprintf(copy, sizeof copy, "%s%s", tmpl, real + (strcmp(root, "/") ? strlen(root) : 0));
    under(rcwd, root, tmpl, wd, sizeof wd);
    if (!ok || apply_copy(m, fix, path, copy) < 0) {
        vw_error("fix: cannot copy %s into %s: %s", shown(root, msg, sizeof msg), tmpl, strerror(errno));
        goto free_argv;
    }
    /* the environment: PYTHONPATH entries into the tree point into the copy; the same simulated GPUs: as many
     * as the run asked for (an older trace: its highest cuda-sim device) */
    char *env[4] = {NULL};
    int nenv = 0;
    char asked[16];
    if (atoi(vw_meta(t, "sim_cuda", asked, sizeof asked)) > 0 && atoi(asked) <= 64)
        snprintf(sim, sizeof sim, "%d", atoi(asked));
    else {
        sqlite3_stmt *st = vw_prep(t, "SELECT max(device & 65535) + 1 FROM devices WHERE backend = 'cuda-sim'");
        if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
            sqlite3_column_int(st, 0) > 0 && sqlite3_column_int(st, 0) <= 64)
            snprintf(sim, sizeof sim, "%d", sqlite3_column_int(st, 0));
        if (st) sqlite3_finalize(st);
    }
    char simvar[48];
    if (sim[0]) snprintf(simvar, sizeof simvar, "DEVTRACE_SIM_CUDA=%s", sim), env[nenv++] = simvar;
    env[nenv++] = "DEVTRACE_QUIET=1";
    const char *old = getenv("PYTHONPATH");
    if (old && old[0]) {
        size_t cap = strlen(old) * 2 + strlen(tmpl) * 8 + 4096, at = 0;
        char *pp = calloc(1, cap), *copyp = strdup(old), *save = NULL;
        if (pp) at = (size_t)snprintf(pp, cap, "PYTHONPATH=");
        for (char *e = copyp && pp ? strtok_r(copyp, ":", &save) : NULL; e; e = strtok_r(NULL, ":", &save)) {
            char moved[PATH_MAX + 256];
            const char *v = realpath(e, ra) && under(ra, root, tmpl, moved, sizeof moved) ? moved : e;
            at += (size_t)snprintf(pp + at, cap > at ? cap - at : 0, "%s%s", at > 11 ? ":" : "", v);
        }
        free(copyp);
        if (pp) env[nenv++] = pp;
    }
    env[nenv] = NULL;
    /* what runs, said before it runs: the exact command, its directory, the environment it adds */
    char *words = malloc(65536);
    if (!words) goto free_env;
    fprintf(stderr, "devtrace: fix --verify runs %s:\n  command:   %s\n",
            say->cmd ? "your command" : "the command the trace recorded", shell_words(argv, argc, words, 65536));
    fprintf(stderr, "  directory: %s/ (a copy of %s%s)\n", shown(wd, msg, sizeof msg), shown(rcwd, full, sizeof full),
            strcmp(rcwd, "/") ? "/" : "");
    fprintf(stderr, "  adds:      %s\n", shell_words(env, nenv, words, 65536));
    if (sim[0]) /* verify_cpu's runs, said before any runs */
        fprintf(stderr, "  then:      the same on the cpu alone (DEVTRACE_SIM_CUDA=0 CUDA_VISIBLE_DEVICES=), and if that "
                        "fails, the program without the patch the same way\n");
    free(words);
    if (!say->cmd && !say->recorded && !confirmed()) {
        vw_error("fix: --verify: not run");
        goto free_env;
    }
    fprintf(stderr, "devtrace: verifying: the patched %s in %s, run again%s%s%s\n", shown(base, msg, sizeof msg),
            tmpl, sim[0] ? " on " : "", sim, sim[0] ? " simulated GPU(s)" : "");
    char *doc = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&doc, &size);
    int status = -1, found = mem ? run_judged(argv, wd, env, db, &status, mem) : -1;
    if (mem) fclose(mem);
    if (found == -2) {
        free(doc);
        vw_error("fix: the patched program could not be run again");
        goto free_env;
    }
    if (found == 0 && children_found(tmpl, "verify") > 0) {
        printf("with the patch, a device mismatch still fires in a process the program started (a rank): run "
               "the patched program under devtrace to see it\n");
        rc = VW_EXIT_FOUND;
    } else if (found == 0 && status == 0) {
        if (sim[0])
            rc = verify_cpu(root, tmpl, argv, argc, prog, wd, env, nenv);
        else {
            printf("verified: with the patch, the program ran to the end (exit status 0) without a device "
                   "mismatch\n");
            rc = VW_EXIT_OK;
        }
    } else if (found == 0) {
        printf("with the patch, the device mismatch is gone, but the program exited with status %d: its own output "
               "says why\n",
               status);
        rc = VW_EXIT_FOUND;
    } else if (found > 0) {
        printf("with the patch, a device mismatch still fires:\n%s", doc ? doc : "");
        rc = VW_EXIT_FOUND;
    } else
        vw_error("fix: the patched run's trace cannot be read");
    free(doc);
free_env:
    if (old && old[0] && nenv > 0 && !strncmp(env[nenv - 1], "PYTHONPATH=", 11)) free(env[nenv - 1]);
free_argv:
    for (int i = prog; i < argc; i++) free(argv[i]);
    rm_tree(tmpl);
    vw_cleanup_drop_dir(tmpl);
free_given:
    for (int i = 0; i < ngiven; i++) free(given[i]);
    return rc;
}

/* Whether --verify may go on (checked before the patch is printed): the patched file and the directory the
 * command runs in lie under the tree (the current directory, or --root), and the user's command or flag, or
 * a terminal to ask at, says to run. 0, or an exit status after one line that says why not. */
static int verify_allowed(struct vw_trace *t, const struct vw_fix *fix, const struct verify_say *say) {
    char path[4096], root[PATH_MAX], real[PATH_MAX], msg[1200], full[PATH_MAX + 1100];
    char *given[VERIFY_MAX_ARGS + 1], cwd[PATH_MAX] = "", words[1024], dir[1100];
    int bad = fix_in_tree(t, fix, say, path, sizeof path, root, real);
    if (bad) return bad;
    if (say->cmd ? !getcwd(cwd, sizeof cwd) : !vw_meta(t, "cwd", cwd, sizeof cwd)[0]) cwd[0] = 0;
    if (!cwd[0] || !realpath(cwd, real) || !under(real, root, "", full, sizeof full)) {
        vw_error("fix: the command would run in %s, which is not under %s (the current directory, or --root "
                 "DIR): nothing run",
                 shown(cwd[0] ? cwd : "(no directory)", msg, sizeof msg), shown(root, full, sizeof full));
        return VW_EXIT_USAGE;
    }
    if (say->cmd || say->recorded || (isatty(STDIN_FILENO) && isatty(STDERR_FILENO))) return 0;
    int n = recorded_argv(t, given);
    shell_words(given, n, words, sizeof words);
    for (int i = 0; i < n; i++) free(given[i]);
    vw_error("fix: --verify will not run the command this trace recorded (%s, in %s) without your say: pass your "
             "command after --, add --run-recorded-command, or run it at a terminal to be asked",
             n ? words : "none", shown(vw_meta(t, "cwd", cwd, sizeof cwd)[0] ? cwd : "?", dir, sizeof dir));
    return VW_EXIT_USAGE;
}

int vw_cmd_fix(int argc, char **argv) {
    const char *out = NULL, *file = NULL;
    int check = 0;
    struct verify_say say = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return VW_EXIT_OK;
        } else if (!strcmp(a, "--verify"))
            check = 1;
        else if (!strcmp(a, "--run-recorded-command"))
            say.recorded = 1;
        else if (!strcmp(a, "--")) {
            if (i + 1 == argc) {
                vw_error("fix: -- needs a command; see 'devtrace fix --help'");
                return VW_EXIT_USAGE;
            }
            say.cmd = argv + i + 1;
            say.ncmd = argc - i - 1;
            break;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--root")) {
            if (i + 1 == argc) {
                vw_error("fix: %s needs %s; see 'devtrace fix --help'", a, a[1] == 'o' ? "a file" : "a directory");
                return VW_EXIT_USAGE;
            }
            if (a[1] == 'o') {
                out = argv[++i];
                if (!strcmp(out, "-")) out = NULL; /* standard output, as without -o */
            } else
                say.root = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            char name[200];
            vw_error("fix: unknown option '%s'; see 'devtrace fix --help'", shown(a, name, sizeof name));
            return VW_EXIT_USAGE;
        } else if (file) {
            vw_error("fix: one trace at a time");
            return VW_EXIT_USAGE;
        } else
            file = a;
    }
    if (!file) {
        fputs("usage: devtrace fix [--verify] [-o FILE] TRACE\n", stderr);
        return VW_EXIT_USAGE;
    }
    if (!check && (say.cmd || say.recorded || say.root)) {
        vw_error("fix: %s is for --verify; see 'devtrace fix --help'",
                 say.cmd ? "a command after --" : say.recorded ? "--run-recorded-command" : "--root");
        return VW_EXIT_USAGE;
    }
    if (say.cmd && say.recorded) {
        vw_error("fix: either your command after -- or --run-recorded-command, not both");
        return VW_EXIT_USAGE;
    }
    struct vw_trace t;
    if (vw_trace_open(file, &t) < 0) return VW_EXIT_USAGE;
    struct vw_model m;
    if (vw_model_open(&m, &t) < 0) {
        vw_trace_close(&t);
        return VW_EXIT_USAGE;
    }
    struct vw_fix fix;
    char *diff = NULL;
    int n, rc = first_patch(&m, &fix, &diff, &n);
    if (rc == 0 && check) {
        enum vw_lang lang = vw_code_lang(&m, &fix.site.site);
        if (lang == VW_LANG_C || lang == VW_LANG_CXX) /* running the traced binary again would not run the patch */
            check = -1;
        else
            rc = verify_allowed(&t, &fix, &say);
    }
    if (rc == 0) {
        if (out) {
            if (write_file(out, diff) < 0)
                rc = VW_EXIT_USAGE;
            else
                fprintf(stderr, "devtrace: wrote %s (rule %s)\n", out, fix.rule);
        } else {
            fputs(diff, stdout);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                vw_error("fix: cannot write to standard output: %s", strerror(errno));
                rc = VW_EXIT_USAGE;
            }
        }
        if (rc == 0 && check < 0) {
            char name[600];
            vw_error("fix: cannot verify a compiled program (%s): apply the patch, rebuild it, and run it again under "
                     "devtrace run",
                     shown(fix.site.site.file, name, sizeof name));
            rc = VW_EXIT_USAGE;
        } else if (rc == 0 && check) {
            char self[PATH_MAX];
            ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
            if (k <= 0) {
                vw_error("fix: cannot find the devtrace command itself: %s", strerror(errno));
                rc = VW_EXIT_USAGE;
            } else {
                self[k] = 0;
                rc = verify(&m, &fix, self, &say);
            }
        }
    }
    free(diff);
    vw_model_close(&m);
    vw_trace_close(&t);
    return rc;
}
