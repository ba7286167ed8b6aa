/* devtrace fix: the first device mismatch's fix as a patch (a unified diff
 * that `patch -p0` and `git apply` take), and with --verify, that patch
 * applied to a copy of the program's source and the traced command run
 * again (on the same simulated GPUs) to say whether the mismatch is gone.
 * The patch comes from the rule that explains the mismatch (rules.c);
 * a source file changed since the run (its hash differs from the one the
 * producer recorded) gets no patch. Nothing is written but -o's file and a
 * temporary directory. */
#include "diag.h"
#include "trace_schema.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sha2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f) {
    fputs("usage: devtrace fix [--verify] [-o FILE] TRACE\n\n"
          "The suggested change for the trace's first device mismatch as a unified diff (to stdout, or to FILE),\n"
          "for `patch -p0` or `git apply` from the directory the report names its files from. With --verify, the\n"
          "patch is applied to a copy of the program's file and the traced command is run again, on the same\n"
          "simulated GPUs when the trace was made on them: says whether the mismatch is gone, and reports another\n"
          "one if it fires. It runs the command the trace recorded: use it on traces you made.\n\n"
          "Exit status: 0 a patch was written (--verify: and the program then ran without a device mismatch),\n"
          "1 --verify: the patched program still fails, 2 bad usage, an unreadable trace, or no patch to give\n"
          "(the rule proposes no code, or the source is gone or changed since the run).\n",
          f);
}

/* A patch's lines: control bytes escaped (the added code comes from the trace), tabs kept. */
static void put_raw(FILE *f, const char *s) { vw_put_escaped_line(f, s); }

/* The hex SHA-256 of a file into hex[65]; 0, or -1 when it cannot be read. */
static int file_sha256(const char *path, char hex[65]) {
    FILE *f = vw_fopen_regular(path, VW_SOURCE_MAX_BYTES); /* a FIFO or /dev/zero never holds fix */
    if (!f) return -1;
    SHA2_CTX ctx;
    SHA256Init(&ctx);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) SHA256Update(&ctx, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return -1;
    SHA256End(&ctx, hex);
    return 0;
}

/* The hash the producer recorded for file (facts of line 0), into hex; 0 when none was. */
static int recorded_sha256(struct vw_model *m, const char *file, char hex[65]) {
    hex[0] = 0;
    if (!m->have_facts) return 0;
    sqlite3_stmt *st =
        vw_prep(m->t, "SELECT v.text FROM source_facts f JOIN strings fs ON fs.id = f.file JOIN "
                      "strings k ON k.id = f.key AND k.text = '" DT_FACT_SHA256 "' JOIN strings v ON v.id = f.value "
                      "WHERE f.line = 0 AND (fs.text = ?1 OR (substr(?1, 1, 1) <> '/' AND "
                      "substr(fs.text, -length(?1) - 1) = '/' || ?1)) LIMIT 1");
    if (!st) return 0;
    sqlite3_bind_text(st, 1, file, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(hex, 65, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return hex[0] != 0;
}

/* The path of a frame's file as it can be opened now (as named, or under the directory the program ran
 * in, and under the source root: source.c), into buf; NULL when it is gone or may not be read. */
static const char *source_path(struct vw_trace *t, const char *file, char *buf, size_t size) {
    const char *p = vw_source_path(t, file, buf, size);
    return p && access(p, R_OK) == 0 ? p : NULL;
}

/* The fix of the first mismatch that has one with code; its patch in *diff (malloc'd). 0, or an exit
 * status after saying why. */
static int first_patch(struct vw_model *m, struct vw_fix *fix, char **diff, int *nmismatch) {
    sqlite3_stmt *mm = vw_prep(m->t, VW_MISMATCHES_SQL);
    if (!mm) return VW_EXIT_USAGE;
    int rc = -1, n = 0;
    char why[600] = "";
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
            if (!why[0]) snprintf(why, sizeof why, "no rule explains the mismatch in %s", k.opname);
        } else if (!fix->code[0] || !fix->has_site) {
            if (!why[0])
                snprintf(why, sizeof why, "the fix (rule %s) is advice, not code: %.500s", fix->rule, fix->text);
        } else {
            char path[4096], want[65], have[65];
            const char *file = fix->site.site.file;
            if (!source_path(m->t, file, path, sizeof path)) {
                char why2[4200]; /* "not found": gone since the run; or outside the source root, not regular... */
                const char *w = vw_source_unavailable(m->t, file, why2, sizeof why2);
                if (!strcmp(w, "not found"))
                    vw_error("fix: %s is gone since the run: no patch", file);
                else
                    vw_error("fix: %s: source not available: %s: no patch", file, w);
                rc = VW_EXIT_USAGE;
            } else if (recorded_sha256(m, file, want) && (file_sha256(path, have) < 0 || strcmp(want, have))) {
                vw_error("fix: %s changed since the run (its SHA-256 differs from the one recorded): no patch", file);
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
                                 "the fix (rule %s) cannot be placed: the trace has no source facts for %s:%d",
                                 fix->rule, file, fix->site.site.line);
                }
            }
        }
        vw_case_free(&k);
    }
    sqlite3_finalize(mm);
    *nmismatch = n;
    if (rc < 0) {
        if (!n)
            vw_error("fix: %s holds no device mismatch: nothing to fix", m->t->path);
        else
            vw_error("fix: no patch to give: %s", why);
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

/* Runs argv (NULL-terminated) with env additions, cwd; waits; the exit status, or -1. */
static int run_wait(char *const *argv, const char *cwd, const char *sim, const char *pypath, int quiet) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (cwd && chdir(cwd) != 0) _exit(125);
        if (sim) setenv("DEVTRACE_SIM_CUDA", sim, 1);
        if (pypath) setenv("PYTHONPATH", pypath, 1);
        setenv("DEVTRACE_QUIET", "1", 1);
        if (quiet) {
            FILE *n = freopen("/dev/null", "w", stdout);
            (void)n;
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* dir's entries as symbolic links in tmp (an existing directory), but skip. */
static int link_entries(const char *dir, const char *tmp, const char *skip) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    char from[PATH_MAX + 512], to[PATH_MAX + 512];
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (skip && !strcmp(e->d_name, skip)) ||
            !strcmp(e->d_name, "__pycache__"))
            continue;
        snprintf(from, sizeof from, "%s/%s", dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", tmp, e->d_name);
        if (symlink(from, to) != 0) rc = -1;
    }
    closedir(d);
    return rc;
}

/* Makes rel (a file under root) a real file in the mirror tmp of root: each directory on its way a real
 * directory whose other entries link to the originals, the file a copy (Python takes a script's real
 * path for its modules' directory: a link would lead it back to the original tree). */
static int materialize(const char *root, const char *tmp, const char *rel) {
    char from[PATH_MAX + 512], to[PATH_MAX + 512], name[PATH_MAX];
    const char *slash = strchr(rel, '/');
    snprintf(name, sizeof name, "%.*s", slash ? (int)(slash - rel) : (int)strlen(rel), rel);
    snprintf(from, sizeof from, "%s/%s", root, name);
    snprintf(to, sizeof to, "%s/%s", tmp, name);
    struct stat st;
    int linked = lstat(to, &st) == 0 && S_ISLNK(st.st_mode), missing = lstat(to, &st) != 0;
    if (slash) {
        if (linked || missing) {
            if ((linked && unlink(to) != 0) || mkdir(to, 0700) != 0 || link_entries(from, to, NULL) != 0) return -1;
        }
        return materialize(from, to, slash + 1);
    }
    if (linked && unlink(to) != 0) return -1;
    if (!linked && !missing) return 0; /* made already */
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int rc = out ? 0 : -1;
    while (out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) rc = -1;
    if (in) fclose(in);
    if (out && fclose(out) != 0) rc = -1;
    return rc;
}

/* The deepest directory holding both a and b (absolute paths), into out; its length. */
static size_t common_dir(const char *a, const char *b, char *out, size_t size) {
    size_t n = 0, last = 0;
    while (a[n] && a[n] == b[n]) {
        if (a[n] == '/') last = n;
        n++;
    }
    if ((!a[n] || a[n] == '/') && (!b[n] || b[n] == '/')) last = n; /* one is the other's directory */
    snprintf(out, size, "%.*s", (int)(last ? last : 1), a);
    return last;
}

/* path under root (a directory) as its place under tmp, into out; 0 when it is not under root. */
static int under(const char *path, const char *root, const char *tmp, char *out, size_t size) {
    size_t n = strlen(root);
    if (strncmp(path, root, n) || (path[n] && path[n] != '/' && strcmp(root, "/"))) return 0;
    snprintf(out, size, "%s%s", tmp, path + n);
    return 1;
}

/* Applies the fix to a copy of its file at dst: the source with the diff's change. 0, or -1. */
static int apply_copy(struct vw_model *m, const struct vw_fix *fix, const char *src, const char *dst) {
    int after = -1;
    char *lines = NULL;
    if (!fix->replace && !vw_fix_place(m, fix, &after, &lines)) return -1;
    FILE *in = fopen(src, "r"), *out = in ? fopen(dst, "w") : NULL;
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

/* The trace, in t's directory, of the process that started t's (its meta pid is t's ppid, on t's host), and
 * of the one that started that, up to the job's root: its path into out, 1; 0 when t's is the root. A rank
 * that torch.multiprocessing.spawn started runs multiprocessing's own command line: the job is the root's. */
static int root_trace(struct vw_trace *t, char *out, size_t size) {
    char ppid[32], host[256], dirpath[4096], path[4352], cur[4352];
    const char *slash = strrchr(t->path, '/');
    if (slash)
        snprintf(dirpath, sizeof dirpath, "%.*s", (int)(slash - t->path) ? (int)(slash - t->path) : 1, t->path);
    else
        snprintf(dirpath, sizeof dirpath, ".");
    vw_meta(t, "ppid", ppid, sizeof ppid);
    vw_meta(t, "host", host, sizeof host);
    int found = 0;
    for (int depth = 0; depth < 8 && ppid[0]; depth++) {
        DIR *d = opendir(dirpath);
        struct dirent *e;
        int up = 0;
        for (int seen = 0; d && !up && (e = readdir(d)) && seen < 4096; seen++) {
            size_t len = strlen(e->d_name);
            if (len < 4 || strcmp(e->d_name + len - 3, ".db")) continue;
            snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
            struct vw_trace peek;
            if (vw_trace_peek(path, &peek) != 0) continue;
            char pid[32], phost[256], pp[32];
            if (!strcmp(vw_meta(&peek, "pid", pid, sizeof pid), ppid) &&
                !strcmp(vw_meta(&peek, "host", phost, sizeof phost), host)) {
                snprintf(cur, sizeof cur, "%s", path);
                snprintf(ppid, sizeof ppid, "%s", vw_meta(&peek, "ppid", pp, sizeof pp));
                up = found = 1;
            }
            vw_trace_close(&peek);
        }
        if (d) closedir(d);
        if (!up) break;
    }
    if (found) snprintf(out, size, "%s", cur);
    return found;
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

/* The patched program run again under devtrace, in a temp dir; 0 when it ran without a device mismatch. */
static int verify(struct vw_model *m, const struct vw_fix *fix, const char *self) {
    struct vw_trace *t = m->t;
    char path[4096], tmpl[] = "/tmp/devtrace-fix.XXXXXX", cwd[PATH_MAX], sim[16] = "";
    if (!source_path(t, fix->site.site.file, path, sizeof path)) return VW_EXIT_USAGE;
    enum vw_lang lang = vw_code_lang(m, &fix->site.site);
    if (lang == VW_LANG_C || lang == VW_LANG_CXX) { /* running the traced binary again would not run the patch */
        vw_error("fix: cannot verify a compiled program (%s): apply the patch, rebuild it, and run it again under "
                 "devtrace run",
                 fix->site.site.file);
        return VW_EXIT_USAGE;
    }
    if (!mkdtemp(tmpl)) {
        vw_error("fix: cannot make a temporary directory: %s", strerror(errno));
        return VW_EXIT_USAGE;
    }
    vw_cleanup_add_dir(tmpl);
    char real[PATH_MAX], root[PATH_MAX], copy[PATH_MAX + 256], db[PATH_MAX + 256], ra[PATH_MAX], full[PATH_MAX + 1100];
    if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
    const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
    snprintf(db, sizeof db, "%s/verify.db", tmpl);
    /* the command as traced: the job's, when another traced process of it started this one */
    char rootpath[4352];
    struct vw_trace jobt;
    int own = !root_trace(t, rootpath, sizeof rootpath) || vw_trace_open(rootpath, &jobt) != 0;
    struct vw_trace *job = own ? t : &jobt;
    vw_meta(job, "cwd", cwd, sizeof cwd);
    sqlite3_stmt *st = vw_prep(job, "SELECT value FROM json_each((SELECT value FROM meta WHERE key = 'argv'))");
    char *argv[260], *given[256];
    int argc = 0, ngiven = 0, rc = VW_EXIT_USAGE;
    while (st && ngiven < 250 && sqlite3_step(st) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(st, 0);
        given[ngiven++] = strdup(a ? a : "");
    }
    if (st) sqlite3_finalize(st);
    /* the program's tree: the deepest directory holding the patched file and the program's own files named
     * on its command line (the script: it finds its modules beside it), so that the copy is what it imports */
    size_t len = common_dir(real, real, root, sizeof root);
    if (strrchr(root, '/') && strrchr(root, '/') != root) *strrchr(root, '/') = 0; /* the file's directory */
    for (int i = 1; i < ngiven; i++) {
        struct stat sb;
        snprintf(full, sizeof full, "%s/%s", cwd, given[i]);
        if (!realpath(given[i][0] == '/' ? given[i] : full, ra) || stat(ra, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        char both[PATH_MAX];
        size_t k = common_dir(root, ra, both, sizeof both);
        if (k > 1 && strchr(both + 1, '/')) /* never wider than two levels below / (/home/you) */
            snprintf(root, sizeof root, "%s", both), len = k;
    }
    (void)len;
    size_t skip = strcmp(root, "/") ? strlen(root) + 1 : 1;
    int ok = link_entries(root, tmpl, NULL) == 0 && materialize(root, tmpl, real + skip) == 0;
    for (int i = 1; ok && i < ngiven; i++) { /* the program's own files on its command line: copies too */
        char moved[PATH_MAX + 256];
        snprintf(full, sizeof full, "%s/%s", cwd, given[i]);
        struct stat sb;
        if (realpath(given[i][0] == '/' ? given[i] : full, ra) && stat(ra, &sb) == 0 && S_ISREG(sb.st_mode) &&
            under(ra, root, tmpl, moved, sizeof moved))
            ok = materialize(root, tmpl, ra + skip) == 0;
    }
    snprintf(copy, sizeof copy, "%s%s", tmpl, real + (strcmp(root, "/") ? strlen(root) : 0));
    if (!ok || apply_copy(m, fix, path, copy) < 0) {
        vw_error("fix: cannot copy %s into %s: %s", root, tmpl, strerror(errno));
        goto free_given;
    }
    argv[argc++] = (char *)self;
    argv[argc++] = "run";
    argv[argc++] = "--overwrite";
    argv[argc++] = "-o";
    argv[argc++] = db;
    argv[argc++] = "--";
    int prog = argc;
    /* paths into the program's tree point into the copy */
    for (int i = 0; i < ngiven; i++) {
        char moved[PATH_MAX + 256];
        snprintf(full, sizeof full, "%s/%s", cwd, given[i]);
        int in =
            i > 0 && realpath(given[i][0] == '/' ? given[i] : full, ra) && under(ra, root, tmpl, moved, sizeof moved);
        argv[argc++] = strdup(in ? moved : given[i]);
    }
    argv[argc] = NULL;
    if (argc == prog) {
        vw_error("fix: the trace does not say what command was run (no argv): cannot verify");
        goto free_argv;
    }
    char rcwd[PATH_MAX], wd[PATH_MAX + 256];
    if (!cwd[0] || !realpath(cwd, rcwd) || !under(rcwd, root, tmpl, wd, sizeof wd)) snprintf(wd, sizeof wd, "%s", cwd);
    /* PYTHONPATH entries into the tree, too */
    char *pypath = NULL;
    const char *old = getenv("PYTHONPATH");
    if (old && old[0]) {
        size_t cap = strlen(old) * 2 + strlen(tmpl) * 8 + 64, at = 0;
        pypath = calloc(1, cap);
        char *copyp = strdup(old), *save = NULL;
        for (char *e = copyp ? strtok_r(copyp, ":", &save) : NULL; e && pypath; e = strtok_r(NULL, ":", &save)) {
            char moved[PATH_MAX + 256];
            const char *v = realpath(e, ra) && under(ra, root, tmpl, moved, sizeof moved) ? moved : e;
            at += (size_t)snprintf(pypath + at, cap > at ? cap - at : 0, "%s%s", at ? ":" : "", v);
        }
        free(copyp);
    }
    /* the same simulated GPUs: as many as the run asked for (an older trace: its highest cuda-sim device) */
    char asked[16];
    if (atoi(vw_meta(job, "sim_cuda", asked, sizeof asked)) > 0)
        snprintf(sim, sizeof sim, "%d", atoi(asked));
    else {
        st = vw_prep(t, "SELECT max(device & 65535) + 1 FROM devices WHERE backend = 'cuda-sim'");
        if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            snprintf(sim, sizeof sim, "%d", sqlite3_column_int(st, 0));
        if (st) sqlite3_finalize(st);
    }
    fprintf(stderr, "devtrace: verifying: the patched %s in %s, run again%s%s%s\n", base, tmpl, sim[0] ? " on " : "",
            sim, sim[0] ? " simulated GPU(s)" : "");
    int status = run_wait(argv, wd[0] ? wd : NULL, sim[0] ? sim : NULL, pypath, 1);
    free(pypath);
    struct vw_trace after;
    if (status < 0 || vw_trace_open(db, &after) < 0) {
        vw_error("fix: the patched program could not be run again");
        goto free_argv;
    }
    char *doc = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&doc, &size);
    int found = mem ? vw_report_trace(&after, 0, VW_REPORT_BRIEF | VW_REPORT_NO_SOURCE, mem, 0, 1, NULL) : -1;
    if (mem) fclose(mem);
    vw_trace_close(&after);
    if (found == 0 && children_found(tmpl, "verify") > 0) {
        printf("with the patch, a device mismatch still fires in a process the program started (a rank): run "
               "the patched program under devtrace to see it\n");
        rc = VW_EXIT_FOUND;
        goto free_argv;
    }
    if (found == 0 && status == 0) {
        printf("verified: with the patch, the program ran to the end (exit status 0) without a device mismatch\n");
        rc = VW_EXIT_OK;
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
free_argv:
    for (int i = prog; i < argc; i++) free(argv[i]);
free_given:
    for (int i = 0; i < ngiven; i++) free(given[i]);
    if (!own) vw_trace_close(&jobt);
    rm_tree(tmpl);
    vw_cleanup_drop_dir(tmpl);
    return rc;
}

int vw_cmd_fix(int argc, char **argv) {
    const char *out = NULL, *file = NULL;
    int check = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return VW_EXIT_OK;
        } else if (!strcmp(a, "--verify"))
            check = 1;
        else if (!strcmp(a, "-o")) {
            if (i + 1 == argc) {
                vw_error("fix: -o needs a file; see 'devtrace fix --help'");
                return VW_EXIT_USAGE;
            }
            out = argv[++i];
            if (!strcmp(out, "-")) out = NULL; /* standard output, as without -o */
        } else if (a[0] == '-' && a[1]) {
            vw_error("fix: unknown option '%s'; see 'devtrace fix --help'", a);
            return VW_EXIT_USAGE;
        } else if (file) {
            vw_error("fix: one trace at a time ('%s' and '%s')", file, a);
            return VW_EXIT_USAGE;
        } else
            file = a;
    }
    if (!file) {
        fputs("usage: devtrace fix [--verify] [-o FILE] TRACE\n", stderr);
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
    if (rc == 0) {
        if (out) {
            if (write_file(out, diff) < 0)
                rc = VW_EXIT_USAGE;
            else
                fprintf(stderr, "devtrace: wrote %s (rule %s)\n", out, fix.rule);
        } else if (!check) {
            fputs(diff, stdout);
            if (fflush(stdout) != 0 || ferror(stdout)) {
                vw_error("fix: cannot write to standard output: %s", strerror(errno));
                rc = VW_EXIT_USAGE;
            }
        }
        if (rc == 0 && check) {
            char self[PATH_MAX];
            ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
            if (k <= 0) {
                vw_error("fix: cannot find the devtrace command itself: %s", strerror(errno));
                rc = VW_EXIT_USAGE;
            } else {
                self[k] = 0;
                if (!out) fputs(diff, stdout), fflush(stdout);
                rc = verify(&m, &fix, self);
            }
        }
    }
    free(diff);
    vw_model_close(&m);
    vw_trace_close(&t);
    return rc;
}
