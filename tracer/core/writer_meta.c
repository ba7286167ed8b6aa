/* The trace's meta table: key/value rows, and the ones written when the
 * trace is made (program, argv, host, rank, clock, settings). The end's
 * rows are written by writer_exit.c, the pruning's by writer_prune.c. */
#include "writer_impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Binds the key, steps and resets tr_w.ins_meta (value already bound). */
static int meta_step(const char *key) {
    sqlite3_bind_text(tr_w.ins_meta, 1 + TS_meta_key, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(tr_w.ins_meta);
    sqlite3_reset(tr_w.ins_meta);
    if (rc != SQLITE_DONE) tr_sql_fail("meta");
    return rc == SQLITE_DONE ? 0 : -1;
}

int tr_meta_textn(const char *key, const char *value, size_t len) {
    if (tr_w.failed) return -1;
    sqlite3_bind_text(tr_w.ins_meta, 1 + TS_meta_value, value, (int)len, SQLITE_TRANSIENT);
    return meta_step(key);
}

int tr_meta_text(const char *key, const char *value) { return tr_meta_textn(key, value, strlen(value)); }

int tr_meta_int(const char *key, int64_t value) {
    if (tr_w.failed) return -1;
    sqlite3_bind_int64(tr_w.ins_meta, 1 + TS_meta_value, value);
    return meta_step(key);
}

int64_t tr_unix_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* argv as a JSON array, from /proc/self/cmdline. */
static void argv_json(char *out, size_t size) {
    char buf[16384];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    size_t k = 0;
    out[k++] = '[';
    for (ssize_t i = 0, first = 1; i < n && k + 8 < size; first = 0) {
        if (!first) out[k++] = ',';
        out[k++] = '"';
        for (; i < n && buf[i] && k + 8 < size; i++) {
            unsigned char c = (unsigned char)buf[i];
            if (c == '"' || c == '\\')
                out[k++] = '\\', out[k++] = (char)c;
            else if (c < 0x20)
                k += (size_t)snprintf(out + k, size - k, "\\u%04x", c);
            else
                out[k++] = (char)c;
        }
        out[k++] = '"';
        i++;
    }
    out[k++] = ']';
    out[k] = '\0';
}

int tr_meta_start(void) {
    char buf[16384];
    tr_meta_int("schema_version", TS_SCHEMA_VERSION);
    tr_meta_text("devtrace_version", TR_VERSION);
    tr_meta_int("probe_abi", DTP_ABI_VERSION);
    tr_meta_int("pid", getpid());
    tr_meta_int("ppid", getppid());
    gethostname(buf, 256);
    buf[255] = '\0';
    tr_meta_text("host", buf);
    const char *rank = tr_rank();
    if (rank) tr_meta_text("rank", rank);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    tr_meta_text("program", buf);
    if (getcwd(buf, sizeof buf)) tr_meta_text("cwd", buf);
    const char *sim =
        getenv("DEVTRACE_SIM_CUDA"); /* the simulated GPUs asked for: `devtrace fix --verify` asks again */
    if (sim && sim[0]) tr_meta_text("sim_cuda", sim);
    argv_json(buf, sizeof buf);
    tr_meta_text("argv", buf);
    tr_meta_int("start_time_ns", tr_unix_ns());
    tr_meta_text("clock", g_tr.tsc ? "tsc" : "monotonic");
    tr_meta_int("stack_depth", g_tr.cfg.depth);
    tr_meta_int("ring_bytes", (int64_t)g_tr.cfg.ring_bytes);
    tr_meta_int("max_mb", g_tr.cfg.max_mb);
    tr_meta_int("complete", 0);
    return tr_w.failed ? -1 : 0;
}
