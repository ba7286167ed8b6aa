/* Tests of what libdevtrace.so records through CUPTI, on fakes of the CUDA
 * stack (fake_cuda.c, fake_cupti.c, fake_cudart_drv.c: no GPU needed): the
 * calls of a program that links cudart statically, and of one that calls
 * the driver API, with their call sites (the program's line, past the
 * static cudart's own frames); each call once when the interposition sees
 * it too; by default only what the viewer reads (copies, sets,
 * allocations), with the launch callbacks never delivered and launches and
 * frees of the interposed cudart counted in meta; with
 * DEVTRACE_CUDA_ACTIVITY=1 (or its older name) launches, frees and
 * CUPTI's activity records joined to their calls; and every way CUPTI can
 * fail (another profiler subscribed, no driver, a version it cannot use, no
 * activity API, no libcupti) giving one warning and the program's own
 * output and status. */
#include "testutil.h"
#include "tracetest.h"

#define LIBS   "LD_LIBRARY_PATH=" FAKE_CUPTI_DIR
#define INJECT "CUDA_INJECTION64_PATH=" TRACER_LIB

/* Runs argv untraced then traced (trace t.db, CUPTI started by the fake
 * driver's injection) with env_extra: same stdout and status. */
static void run_both(const char *const *env_extra, const char *const *argv, int want_status) {
    /* untraced: no injection either (the driver would load the tracer) */
    const char *env[10] = {LIBS, "DEVTRACE_OUTPUT=t.db", "CUDA_INJECTION64_PATH=", NULL};
    int n = 3;
    for (int i = 0; env_extra && env_extra[i] && n < 9; i++) env[n++] = env_extra[i];
    env[n] = NULL;
    int st = run(0, env, argv);
    env[2] = INJECT;
    snprintf(plain_out, sizeof plain_out, "%s", out_buf);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == want_status, "untraced: status %d, stderr: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "rc 0"), "untraced: %s", out_buf);
    st = run(1, env, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == want_status, "traced: status %d, stderr: %s", st, err_buf);
    ck_assert_str_eq(out_buf, plain_out);
}

static int count_in(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Runs devtrace CMD on t.db; output in out_buf. */
static int cli(const char *cmd) {
    char trace[256];
    snprintf(trace, sizeof trace, "%s/t.db", dir);
    int st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, cmd, trace, NULL});
    ck_assert_msg(WIFEXITED(st), "devtrace %s: killed; stderr: %s", cmd, err_buf);
    return WEXITSTATUS(st);
}

/* ------------------------------------------------------------------ static cudart, the driver API */

/* FAKE_CUPTI_STATS's value of key in the file the fake libcupti wrote. */
static long fake_stat(const char *key) {
    char path[256], text[512], want[64];
    snprintf(path, sizeof path, "%s/stats", dir);
    slurp(path, text, sizeof text);
    snprintf(want, sizeof want, "%s ", key);
    const char *at = strstr(text, want);
    ck_assert_msg(at, "no '%s' in the fake libcupti's stats: '%s'", key, text);
    return atol(at + strlen(want));
}

START_TEST(test_static_cudart_recorded) {
    run_both((const char *const[]){"FAKE_CUPTI_STATS=stats", NULL},
             (const char *const[]){CUPTI_USER_STATIC, "driver", NULL}, 0);
    ck_assert_msg(strstr(out_buf, "checksum 65271.0 rc 0"), "%s", out_buf);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s", err_buf);
    /* enabled one id at a time, and never a launch's: CUPTI never calls the tracer for one */
    ck_assert_int_eq(fake_stat("enabled_domains"), 0);
    ck_assert_int_eq(fake_stat("launch_callbacks"), 0);
    ck_assert_int_gt(fake_stat("callbacks"), 0);
    sqlite3 *db = open_trace("t.db");
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    /* what the viewer reads, each runtime call once, none of the driver
     * calls it made inside, and the driver calls the program made itself;
     * no launch, no free, no activity record */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api NOT GLOB 'cupti:*'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 11);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cu*' AND api NOT GLOB "
                               "'cupti:cuda*'"),
                     3);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind IN ('launch', 'free')"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_activity"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key GLOB 'cuda_*_counted'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpy' AND dir = 'HtoD' "
                               "AND bytes = 1024 AND rc = 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpy' AND dir = 'DtoH' "
                               "AND bytes = 1024"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpyAsync' AND dir = "
                               "'DtoH'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cuMemcpyHtoD_v2' AND dir = "
                               "'HtoD' AND bytes = 256"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'memset' AND bytes = 16"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'malloc' AND host = 'pinned'"), 2);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'malloc'"), 6);
    /* the 2D copy is one row, not its 16 driver copies; a peer copy is DtoD */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpy2D' AND dir = 'HtoD' "
                               "AND bytes = 1024"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpyPeer' AND dir = 'DtoD' "
                               "AND bytes = 1024"),
                     1);
    /* the allocations' pointers, read at the calls' exits, are their copies' (a 1D and a 2D one) */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls m JOIN cuda_calls c ON c.dst = m.dst JOIN strings a "
                               "ON a.id = m.api WHERE a.text = 'cupti:cudaMalloc' AND c.kind = 1 AND c.dir = 1"),
                     2);
    /* stacks of the calling thread, without a frame of the tracer, libcupti or libcuda */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls WHERE stack IS NULL"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls c JOIN frames f ON f.id = c.stack JOIN modules m ON "
                               "f.ip >= m.start AND f.ip < m.end WHERE m.path NOT GLOB '*/cupti_user_static'"),
                     0);
    sqlite3_close(db);
    /* the call sites are the program's lines */
    ck_assert_int_eq(cli("transfers"), 0);
    char want[160];
    snprintf(want, sizeof want, "cupti_user.c:%d (main)\n  host -> cuda:0 by cupti:cudaMemcpy: 1 x, 1024 bytes",
             marker_line(CUPTI_USER_SOURCE, "devtrace: batch to the device"));
    ck_assert_msg(strstr(out_buf, want), "no '%s' in:\n%s", want, out_buf);
    snprintf(want, sizeof want, "cupti_user.c:%d (driver_calls)",
             marker_line(CUPTI_USER_SOURCE, "devtrace: driver copy"));
    ck_assert_msg(strstr(out_buf, want), "no '%s' in:\n%s", want, out_buf);
}
END_TEST

/* The program as nvcc builds it by default, with no line tables: the site
 * is its own function, never the static cudart's entry point or internal
 * function (whose frames are left out by their symbols). */
START_TEST(test_static_cudart_site_without_lines) {
    char copy[128], cmd[512];
    snprintf(copy, sizeof copy, "%s/nolines", dir);
    snprintf(cmd, sizeof cmd, "objcopy --strip-debug '%s' '%s'", CUPTI_USER_STATIC, copy);
    ck_assert_msg(system(cmd) == 0, "%s failed (objcopy is in binutils)", cmd);
    run_both(NULL, (const char *const[]){copy, NULL}, 0);
    ck_assert_int_eq(cli("transfers"), 0);
    ck_assert_msg(strstr(out_buf, "5 CUDA runtime copies"), "%s", out_buf);
    ck_assert_int_eq(count_in(out_buf, "nolines+0x"), 5);
    ck_assert_msg(count_in(out_buf, " (main)\n") == 5, "sites not in main:\n%s", out_buf);
    ck_assert_msg(!strstr(out_buf, "libcudart_static") && !strstr(out_buf, "(cudaMemcpy)"), "%s", out_buf);
    /* and the cudart frames are left out of the stack, not just passed over by the viewer */
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls"), 11);
    sqlite3_close(db);
}
END_TEST

/* DEVTRACE_CUDA_ACTIVITY=1 (and its older name, DEVTRACE_CUPTI_ACTIVITY=1):
 * launches and frees recorded too, and CUPTI's activity records. */
static void check_activity_on(const char *env) {
    run_both((const char *const[]){env, "FAKE_CUPTI_STATS=stats", NULL},
             (const char *const[]){CUPTI_USER_STATIC, "driver", NULL}, 0);
    ck_assert_msg(strstr(out_buf, "checksum 65271.0 rc 0"), "%s", out_buf);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s: %s", env, err_buf);
    ck_assert_int_eq(fake_stat("enabled_domains"), 0);
    ck_assert_int_eq(fake_stat("launch_callbacks"), 4); /* entry and exit of the launch and its driver call */
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 17);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cu*' AND api NOT GLOB "
                               "'cupti:cuda*'"),
                     4);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'launch' AND func <> '0x0'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'free'"), 6);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_api = 'cupti:cudaMemcpy2D' AND "
                               "bytes = 64 AND dir = 'HtoD'"),
                     16);
    /* the activity records: bytes, direction, host memory, joined to their call */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE kind = 'memcpy'"), 22);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_seq IS NULL"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_api = 'cupti:cudaMemcpy' AND dir = "
                               "'HtoD' AND host = 'pageable' AND bytes = 1024 AND device = 0 AND dur_ns > 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_api = 'cupti:cudaMemcpyAsync' AND "
                               "dir = 'DtoH' AND host = 'pinned'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE kind = 'memset' AND call_api = "
                               "'cupti:cudaMemset' AND bytes = 16"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE kind = 'kernel' AND name = "
                               "'fake_kernel' AND call_api = 'cupti:cudaLaunchKernel'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls c JOIN frames f ON f.id = c.stack JOIN modules m ON "
                               "f.ip >= m.start AND f.ip < m.end WHERE m.path NOT GLOB '*/cupti_user_static'"),
                     0);
    sqlite3_close(db);
}

START_TEST(test_activity_opt_in) { check_activity_on("DEVTRACE_CUDA_ACTIVITY=1"); }
END_TEST

START_TEST(test_activity_old_name) { check_activity_on("DEVTRACE_CUPTI_ACTIVITY=1"); }
END_TEST

/* A value that is neither 0 nor 1: one warning, the default. */
START_TEST(test_activity_bad_value) {
    run_both((const char *const[]){"DEVTRACE_CUDA_ACTIVITY=yes", NULL}, (const char *const[]){CUPTI_USER_STATIC, NULL},
             0);
    ck_assert_msg(count_in(err_buf, "devtrace: warning:") == 1 &&
                      strstr(err_buf, "DEVTRACE_CUDA_ACTIVITY=yes is not 0 or 1"),
                  "%s", err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 11);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_activity"), 0);
    sqlite3_close(db);
}
END_TEST

/* `devtrace run` sets CUDA_INJECTION64_PATH itself. */
START_TEST(test_devtrace_run_injects) {
    const char *env[] = {LIBS, NULL};
    int st = run(0, env, (const char *const[]){DEVTRACE_CLI, "run", "-o", "t.db", "--", CUPTI_USER_STATIC, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "checksum 65268.0 rc 0"), "%s", out_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpy'"), 2);
    sqlite3_close(db);
}
END_TEST

#ifdef STATIC_CUDART
/* A real nvcc program, static cudart, under `devtrace run` with the real
 * driver and libcupti when there are any (not the fakes): the same output
 * and status; on a GPU, its two copies recorded at their lines. */
START_TEST(test_real_static_cudart) {
    int st = run(0, NULL, (const char *const[]){STATIC_CUDART, NULL});
    ck_assert_msg(WIFEXITED(st), "untraced: killed, %s", err_buf);
    int want = WEXITSTATUS(st);
    snprintf(plain_out, sizeof plain_out, "%s", out_buf);
    st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, "run", "-o", "t.db", "--", STATIC_CUDART, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == want, "traced: status %d (untraced %d): %s", st, want, err_buf);
    ck_assert_str_eq(out_buf, plain_out);
    if (want != 0) { /* no GPU here: the first call failed, untraced as traced */
        printf("test_real_static_cudart: no GPU (%s); checked only that tracing changed nothing\n", plain_out);
        return;
    }
    ck_assert_int_eq(cli("transfers"), 0);
    char want_site[128];
    snprintf(want_site, sizeof want_site, "static_cudart.cu:%d (main)",
             marker_line(STATIC_CUDART_SOURCE, "devtrace: static copy in"));
    ck_assert_msg(strstr(out_buf, want_site) && strstr(out_buf, "by cupti:cudaMemcpy"), "no '%s' in:\n%s", want_site,
                  out_buf);
    ck_assert_msg(!strstr(out_buf, "libcudart_static") && !strstr(out_buf, "(cudaMemcpy)"), "%s", out_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cupti:cudaMemcpy' AND bytes = 1024"), 2);
    sqlite3_close(db);
}
END_TEST
#endif

/* CUDA_INJECTION64_PATH alone, no LD_PRELOAD: the driver loads the
 * tracer, which records what CUPTI sees. */
START_TEST(test_injection_alone) {
    const char *env[] = {LIBS, INJECT, "DEVTRACE_OUTPUT=t.db", NULL};
    int st = run(0, env, (const char *const[]){CUPTI_USER_STATIC, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "checksum 65268.0 rc 0"), "%s", out_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 11);
    sqlite3_close(db);
}
END_TEST

/* DEVTRACE_CUPTI=1 starts CUPTI with the tracer, no injection needed. */
START_TEST(test_cupti_at_start) {
    run_both((const char *const[]){"DEVTRACE_CUPTI=1", "CUDA_INJECTION64_PATH=", "DEVTRACE_CUDA_ACTIVITY=1", NULL},
             (const char *const[]){CUPTI_USER_STATIC, NULL}, 0);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s", err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 17);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_seq IS NOT NULL"), 22);
    sqlite3_close(db);
}
END_TEST

/* DEVTRACE_CUPTI_ACTIVITY=0, as before the default was: the calls without
 * launches, frees and activity records; the newer name wins. */
START_TEST(test_activity_switched_off) {
    run_both((const char *const[]){"DEVTRACE_CUPTI_ACTIVITY=1", "DEVTRACE_CUDA_ACTIVITY=0", NULL},
             (const char *const[]){CUPTI_USER_STATIC, NULL}, 0);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s", err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_activity"), 0);
    sqlite3_close(db);
    run_both((const char *const[]){"DEVTRACE_CUPTI_ACTIVITY=0", "DEVTRACE_OVERWRITE=1", NULL},
             (const char *const[]){CUPTI_USER_STATIC, NULL}, 0);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s", err_buf);
    db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 11);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_activity"), 0);
    sqlite3_close(db);
}
END_TEST

/* cudart as a shared library: the wrappers record each call, CUPTI adds
 * none of them again, and its activity joins the wrappers' rows. */
START_TEST(test_no_double_counting) {
    run_both((const char *const[]){"FAKE_CUPTI_STATS=stats", NULL},
             (const char *const[]){CUPTI_USER_DYN, "driver", NULL}, 0);
    ck_assert_msg(strstr(out_buf, "checksum 65271.0 rc 0"), "%s", out_buf);
    ck_assert_int_eq(fake_stat("launch_callbacks"), 0);
    sqlite3 *db = open_trace("t.db");
    /* by default: the launch and the 5 frees counted, not recorded */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api NOT GLOB 'cupti:*'"), 12);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cu*'"), 3);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key = 'cuda_launches_counted'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key = 'cuda_frees_counted'"), 5);
    sqlite3_close(db);
    run_both((const char *const[]){"DEVTRACE_CUDA_ACTIVITY=1", "DEVTRACE_OVERWRITE=1", NULL},
             (const char *const[]){CUPTI_USER_DYN, "driver", NULL}, 0);
    db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key GLOB 'cuda_*_counted'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cuda*'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpy'"), 2);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMalloc'"), 3);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api NOT GLOB 'cupti:*'"), 18);
    /* what the program asked of the driver itself: CUPTI only */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api GLOB 'cupti:cu*'"), 4);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_api = 'cudaMemcpy' AND corr > 0"), 2);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_activity WHERE call_seq IS NULL"), 0);
    sqlite3_close(db);
}
END_TEST

/* ------------------------------------------------------------------ failures */

/* CUPTI failing as FAKE_CUPTI_FAIL=how says: one warning naming the cause
 * (want), the program as untraced, the wrappers' rows still there. */
static void check_failure(const char *how, const char *want, int activity_only) {
    char fail[64];
    snprintf(fail, sizeof fail, "FAKE_CUPTI_FAIL=%s", how);
    /* with DEVTRACE_CUDA_ACTIVITY=1: the activity API is asked for */
    run_both((const char *const[]){fail, "DEVTRACE_CUDA_ACTIVITY=1", NULL}, (const char *const[]){CUPTI_USER_DYN, NULL},
             0);
    ck_assert_msg(count_in(err_buf, "devtrace: warning:") == 1, "%s: %s", how, err_buf);
    ck_assert_msg(strstr(err_buf, want), "%s: no '%s' in %s", how, want, err_buf);
    ck_assert_msg(strstr(err_buf, "trace written to"), "%s: %s", how, err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api NOT GLOB 'cupti:*'"), 18);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_activity"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls WHERE corr IS NOT NULL"), activity_only ? 17 : 0);
    sqlite3_close(db);
}

START_TEST(test_another_subscriber) {
    check_failure("multiple", "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another profiler", 0);
}
END_TEST

START_TEST(test_no_driver) { check_failure("init", "cuptiSubscribe: CUPTI_ERROR_NOT_INITIALIZED", 0); }
END_TEST

START_TEST(test_bad_version) { check_failure("version", "cuptiGetVersion", 0); }
END_TEST

START_TEST(test_no_activity_api) { check_failure("activity", "activity API is off (CUPTI_ERROR_NOT_COMPATIBLE)", 1); }
END_TEST

START_TEST(test_no_libcupti) {
    run_both((const char *const[]){"DEVTRACE_CUPTI_LIB=/nonexistent/libcupti.so", NULL},
             (const char *const[]){CUPTI_USER_STATIC, NULL}, 0);
    ck_assert_msg(count_in(err_buf, "devtrace: warning:") == 1 && strstr(err_buf, "no libcupti"), "%s", err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls"), 0); /* static cudart: nothing else sees it */
    sqlite3_close(db);
}
END_TEST

START_TEST(test_cupti_switched_off) {
    run_both((const char *const[]){"DEVTRACE_CUPTI=0", NULL}, (const char *const[]){CUPTI_USER_STATIC, NULL}, 0);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s", err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM modules WHERE path GLOB '*libcupti*'"), 0);
    sqlite3_close(db);
}
END_TEST

Suite *make_cupti_suite(void) {
    Suite *s = suite_create("cupti");
    TCase *tc = tcase_create("cupti");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_static_cudart_recorded);
    tcase_add_test(tc, test_static_cudart_site_without_lines);
    tcase_add_test(tc, test_activity_opt_in);
    tcase_add_test(tc, test_activity_old_name);
    tcase_add_test(tc, test_activity_bad_value);
    tcase_add_test(tc, test_devtrace_run_injects);
#ifdef STATIC_CUDART
    tcase_add_test(tc, test_real_static_cudart);
#endif
    tcase_add_test(tc, test_injection_alone);
    tcase_add_test(tc, test_cupti_at_start);
    tcase_add_test(tc, test_activity_switched_off);
    tcase_add_test(tc, test_no_double_counting);
    tcase_add_test(tc, test_another_subscriber);
    tcase_add_test(tc, test_no_driver);
    tcase_add_test(tc, test_bad_version);
    tcase_add_test(tc, test_no_activity_api);
    tcase_add_test(tc, test_no_libcupti);
    tcase_add_test(tc, test_cupti_switched_off);
    suite_add_tcase(s, tc);
    return s;
}
