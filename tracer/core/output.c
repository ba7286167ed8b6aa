/* Where the trace goes. DEVTRACE_OUTPUT names the file; by default it is
 * devtrace.<program>.<pid>.db in the working directory. When several
 * processes would write one name (a forked child, MPI or torchrun ranks),
 * each gets its own: host, rank and pid go into the name. An existing file
 * is never overwritten unless DEVTRACE_OVERWRITE=1: a fresh name is picked
 * and said. Files are created with O_EXCL, readable by their owner only. A
 * name that is a device, a FIFO or a directory is refused, never removed
 * nor given a sibling (no /dev/full.1). */
#include "tr_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* snprintf that reports truncation (-1) instead of cutting a path short. */
__attribute__((format(printf, 3, 4))) static int fmt(char *buf, size_t size, const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    int n = vsnprintf(buf, size, f, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The process's rank: DEVTRACE_RANK first (the PyTorch adapter sets it for the ranks that
 * torch.multiprocessing.spawn starts, which have no launcher's variables), then the launchers'. */
const char *tr_rank(void) {
    static const char *const vars[] = {"DEVTRACE_RANK", "RANK",      "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                       "SLURM_PROCID",  "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return v;
    }
    return NULL;
}

/* Splits path into stem and extension (".db", or "" when it has none). */
static void split_ext(const char *path, char *stem, size_t size, const char **ext) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (dot && (!slash || dot > slash + 1)) {
        snprintf(stem, size, "%.*s", (int)(dot - path), path);
        *ext = dot;
    } else {
        snprintf(stem, size, "%s", path);
        *ext = "";
    }
}

static void program_name(char *out, size_t size) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(out, size, "%s", n > 0 ? basename(exe) : "program");
}

static int try_create(const char *path, int overwrite) {
    if (overwrite) tr_output_remove(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -errno;
    close(fd);
    return 0;
}

int tr_output_claim(char *path, size_t size, int forked_child) {
    const char *env = getenv("DEVTRACE_OUTPUT"), *r = tr_rank(), *ow = getenv("DEVTRACE_OVERWRITE");
    int overwrite = ow && strcmp(ow, "1") == 0;
    char host[256] = "", prog[256], want[4096], stem[4096];
    gethostname(host, sizeof host - 1);
    program_name(prog, sizeof prog);
    int pid = (int)getpid();
    int too_long;
    if (env && *env) {
        const char *ext;
        split_ext(env, stem, sizeof stem, &ext);
        if (r)
            too_long = fmt(want, sizeof want, "%s.%s.rank%s.%d%s", stem, host, r, pid, ext);
        else if (forked_child)
            too_long = fmt(want, sizeof want, "%s.%s.%d%s", stem, host, pid, ext);
        else
            too_long = fmt(want, sizeof want, "%s", env);
    } else if (r) {
        too_long = fmt(want, sizeof want, "devtrace.%s.%s.rank%s.%d.db", prog, host, r, pid);
    } else {
        too_long = fmt(want, sizeof want, "devtrace.%s.%d.db", prog, pid);
    }
    if (too_long) {
        tr_fail("cannot create a trace file: the name from DEVTRACE_OUTPUT is too long");
        return -1;
    }
    struct stat st;
    if (stat(want, &st) == 0 && !S_ISREG(st.st_mode)) {
        tr_fail("cannot create trace file %s: it exists and is not a regular file", want);
        return -1;
    }
    int rc = try_create(want, overwrite);
    if (rc == -EEXIST) {
        const char *ext;
        split_ext(want, stem, sizeof stem, &ext);
        char alt[4096];
        for (int i = 1; i < 1000 && rc == -EEXIST; i++)
            rc = fmt(alt, sizeof alt, "%s.%d%s", stem, i, ext) < 0 ? -ENAMETOOLONG : try_create(alt, 0);
        if (rc == 0) {
            tr_info("%s exists; writing %s instead (DEVTRACE_OVERWRITE=1 overwrites)", want, alt);
            memcpy(want, alt, sizeof alt);
        }
    }
    if (rc < 0) {
        tr_fail("cannot create trace file %s: %s", want, strerror(-rc));
        return -1;
    }
    char cwd[4096] = "";
    if (want[0] != '/' && !getcwd(cwd, sizeof cwd)) cwd[0] = '\0';
    /* absolute, so a later chdir() changes nothing */
    if ((want[0] == '/' ? fmt(path, size, "%s", want) : fmt(path, size, "%s/%s", cwd, want)) < 0) {
        unlink(want);
        tr_fail("cannot create a trace file: its path is too long");
        return -1;
    }
    return 0;
}

void tr_output_remove(const char *path) {
    char side[4200];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}
