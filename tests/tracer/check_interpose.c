/* Tests of what libdevtrace.so records from programs not built on the
 * runtime: the CUDA runtime calls of a program linked against libcudart
 * (run on the fake libcudart.so.13, so no GPU is needed; launches and frees
 * counted into meta by default, recorded with DEVTRACE_CUDA_ACTIVITY=1),
 * the same from a Python host that loads it RTLD_LOCAL with ctypes, C++
 * throws (type, what(), rethrows, the per-site limit, a std::exception base
 * at an offset), the parsing of device-mismatch messages, and PyTorch's own
 * device-mismatch error under Debian's python3-torch. Each traced run's
 * output and exit status are compared with an untraced run's. */
#include "testutil.h"
#include "tracetest.h"
#include "mismatch.h"

#define FAKE_ENV "LD_LIBRARY_PATH=" FAKE_CUDART_DIR

/* Runs argv untraced then traced (trace t.db): same stdout and status. */
static void run_both(const char *const *env_extra, const char *const *argv, int want_status) {
    const char *env[8] = {FAKE_ENV, "DEVTRACE_OUTPUT=t.db", NULL};
    int n = 2;
    for (int i = 0; env_extra && env_extra[i] && n < 7; i++) env[n++] = env_extra[i];
    env[n] = NULL;
    int st = run(0, env, argv);
    snprintf(plain_out, sizeof plain_out, "%s", out_buf);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == want_status, "untraced: status %d, stderr: %s", st, err_buf);
    st = run(1, env, argv);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == want_status, "traced: status %d, stderr: %s", st, err_buf);
    ck_assert_str_eq(out_buf, plain_out);
}

/* ------------------------------------------------------------------ cudart */

START_TEST(test_cudart_calls_recorded) {
    run_both(NULL, (const char *const[]){CUDA_USER, "fail", NULL}, 0);
    ck_assert_msg(strstr(out_buf, "checksum 65280.0 rc 0 failing copy ") != NULL, "%s", out_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_str_eq(q_text(db, "PRAGMA integrity_check"), "ok");
    /* one row per outermost call: the 2D copy's 16 inner cudaMemcpy calls are not rows */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls WHERE kind = 1"), 8);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpy2D' AND dir = 'HtoD' AND "
                               "bytes = 1024 AND host = 'pageable'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpy' AND dir = 'HtoD' AND "
                               "host = 'pageable' AND bytes = 1024 AND rc = 0 AND device = 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpyAsync' AND dir = 'HtoD' "
                               "AND host = 'pinned'"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpy_ptds' AND dir = 'DtoD'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpyPeer' AND dir = 'DtoD' AND "
                               "device = 1 AND peer = 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpyToSymbol' AND dir = 'HtoD' "
                               "AND host = 'pinned' AND bytes = 16"),
                     1);
    /* cudaMemcpyDefault: the direction comes from the pointers */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMemcpy' AND dir = 'DtoH' AND "
                               "host = 'pageable' AND rc = 0"),
                     1);
    /* the failing copy keeps its return code */
    ck_assert_int_ge(q_int(db, "SELECT rc FROM cuda_calls c JOIN strings a ON a.id = c.api WHERE a.text = "
                               "'cudaMemcpy' AND c.rc <> 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'malloc'"), 4);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE api = 'cudaMallocHost' AND host = 'pinned' "
                               "AND bytes = 1024"),
                     1);
    /* by default the launch and the frees are forwarded and counted, not recorded */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind IN ('free', 'launch')"), 0);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key = 'cuda_launches_counted'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT value FROM meta WHERE key = 'cuda_frees_counted'"), 4);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'sync'"), 2);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'memset' AND bytes = 16"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'set_device' AND device = 0"), 1);
    /* each call's innermost frame is the program's own, not the tracer's */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls c JOIN frames f ON f.id = c.stack JOIN modules m ON "
                               "f.ip >= m.start AND f.ip < m.end WHERE m.path NOT LIKE '%/cuda_user'"),
                     0);
    sqlite3_close(db);
}
END_TEST

/* DEVTRACE_CUDA_ACTIVITY=1, and its older name: launches and frees recorded
 * too, with their stacks, and nothing counted instead. */
static void check_activity_on(const char *env) {
    run_both((const char *const[]){env, NULL}, (const char *const[]){CUDA_USER, "fail", NULL}, 0);
    ck_assert_msg(!strstr(err_buf, "warning"), "%s: %s", env, err_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls WHERE kind = 1"), 8);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'free'"), 4);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_cuda_calls WHERE kind = 'launch' AND func <> '0x0'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM meta WHERE key GLOB 'cuda_*_counted'"), 0);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls c JOIN frames f ON f.id = c.stack JOIN modules m ON "
                               "f.ip >= m.start AND f.ip < m.end WHERE m.path NOT LIKE '%/cuda_user'"),
                     0);
    /* the kernel launched is the program's function, found by the viewer's symbolizer */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls c JOIN modules m ON c.func >= m.start AND c.func < "
                               "m.end WHERE c.kind = 5 AND m.path LIKE '%/cuda_user'"),
                     1);
    sqlite3_close(db);
}

START_TEST(test_cudart_activity_opt_in) { check_activity_on("DEVTRACE_CUDA_ACTIVITY=1"); }
END_TEST

START_TEST(test_cudart_activity_old_name) { check_activity_on("DEVTRACE_CUPTI_ACTIVITY=1"); }
END_TEST

START_TEST(test_cudart_off_when_tracing_off) {
    /* with tracing off (an unwritable output), the wrappers only forward */
    run_both((const char *const[]){"DEVTRACE_OUTPUT=/proc/nope/t.db", NULL}, (const char *const[]){CUDA_USER, NULL}, 0);
    ck_assert_msg(strstr(out_buf, "checksum 65280.0 rc 0 failing copy 0") != NULL, "%s", out_buf);
    char path[256];
    snprintf(path, sizeof path, "%s/t.db", dir);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_msg(strstr(err_buf, "devtrace:") != NULL, "no warning: %s", err_buf);
}
END_TEST

static int python_or_skip(void) {
#ifdef DEVTRACE_SANITIZED
    printf(TU_SKIP_PYTHON_UNDER_SANITIZERS);
    return 0;
#else
    ck_assert_msg(access(PYTHON3, X_OK) == 0, "%s is missing: run scripts/install-deps.sh", PYTHON3);
    return 1;
#endif
}

START_TEST(test_cudart_under_ctypes_host) {
    if (!python_or_skip()) return;
    char script[512];
    snprintf(script, sizeof script, "%s/tracer/ctypes_host.py", TESTS_SOURCE_DIR);
    /* untraced: rc 0 with a failing copy reported; traced: the same, and no
     * crash although cudart is outside the global scope (RTLD_LOCAL) */
    run_both(NULL, (const char *const[]){PYTHON3, script, CUDA_EXT, NULL}, 0);
    ck_assert_msg(strstr(out_buf, "checksum 65280.0 rc 0") != NULL, "%s", out_buf);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM cuda_calls WHERE kind = 1"), 8);
    /* the Python line that made the copies */
    ck_assert_int_eq(q_int(db, "SELECT count(DISTINCT c.seq) FROM cuda_calls c JOIN v_py_frames p ON p.stack = "
                               "c.pystack AND p.level = 0 WHERE p.file LIKE '%ctypes_host.py' AND p.line = 9"),
                     q_int(db, "SELECT count(*) FROM cuda_calls"));
    sqlite3_close(db);
}
END_TEST

/* ------------------------------------------------------------------ C++ throws */

START_TEST(test_cxx_throws_recorded) {
    run_both(NULL, (const char *const[]){THROW_TARGET, NULL}, 0);
    ck_assert_str_eq(out_buf, "caught 20\nrethrown: Expected object of device type cuda but got device type cpu "
                              "for argument #1 'self' in call to _th_addmm\nbase at offset: mixed\nint 42\n");
    sqlite3 *db = open_trace("t.db");
    /* 20 throws from one site: 16 recorded, all 20 counted */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM v_errors WHERE exception = 'std::runtime_error' AND what = "
                               "'device_mismatch' AND device_a = 'cuda:0' AND device_b = 'cpu' AND arg = 'mat1'"),
                     16);
    ck_assert_int_eq(q_int(db, "SELECT max(throws) FROM throw_sites"), 20);
    ck_assert_int_eq(q_int(db, "SELECT recorded FROM throw_sites WHERE throws = 20"), 16);
    /* thrown, caught and rethrown with `throw;`: one exception, one record */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM errors WHERE exception = 'legacy_error'"), 1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM errors r JOIN misc_events e ON e.seq = r.seq WHERE "
                               "r.exception = 'legacy_error' AND r.device_a = 'cpu' AND r.device_b = 'cuda' AND "
                               "r.arg = 'self' AND e.value = 0"),
                     1);
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM misc_events WHERE kind = 14 AND value = 1"), 0);
    /* what() through a std::exception base that is not at offset 0 */
    ck_assert_str_eq(q_text(db, "SELECT message FROM errors WHERE exception = 'mixed_error'"), "mixed");
    /* not a std::exception: the type only */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM errors WHERE exception = 'int' AND message IS NULL"), 1);
    /* the innermost frame is the thrower's, in the target program */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM errors r JOIN misc_events e ON e.seq = r.seq JOIN frames f ON "
                               "f.id = e.stack JOIN modules m ON f.ip >= m.start AND f.ip < m.end WHERE m.path NOT "
                               "LIKE '%/throw_target'"),
                     0);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_mismatch_messages_parsed) {
    static const struct {
        const char *msg, *a, *b, *arg;
    } cases[] = {
        {"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!", "cpu",
         "cuda:0", ""},
        {"Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:1! (when "
         "checking argument for argument mat1 in method wrapper_addmm)",
         "cuda:1", "cpu", "mat1"},
        {"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when "
         "checking arugment for argument target in method wrapper_nll_loss_forward)",
         "cpu", "cuda:0", "target"},
        {"Expected all tensors to be on the same device, but got index is on cpu, different from other tensors on "
         "cuda:0 (when checking argument in method wrapper_CUDA__index_select)",
         "cpu", "cuda:0", "index"},
        {"Expected object of device type cuda but got device type cpu for argument #2 'mat2' in call to _th_mm", "cpu",
         "cuda", "mat2"},
        {"Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (while checking arguments for addmm)",
         "cpu", "cuda", "mat1"},
        {"Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same", "cpu", "cuda",
         "input"},
        {"Input type (CUDAFloatType) and weight type (CPUFloatType) should be the same", "cuda", "cpu", "input"},
        {"Expected all tensors to be on the same device, but found at least two devices, meta and cpu!\nException "
         "raised from compute_types at ../aten/src/ATen/TensorIterator.cpp:484",
         "cpu", "meta", ""},
        {"Expected all tensors to be on the same device. Found: cuda:0, cpu", "cuda:0", "cpu", ""},
        {"expected device cuda:1 but got device cpu", "cpu", "cuda:1", ""},
        {"Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden tensor at cpu",
         "cpu", "cuda:0", "hx"},
        {"Input and parameter tensors are not at the same device, found input tensor at cpu and parameter tensor at "
         "cuda:0",
         "cpu", "cuda:0", "input"},
    };
    struct dt_mismatch m;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(dt_parse_mismatch(cases[i].msg, strlen(cases[i].msg), &m), "not recognised: %s", cases[i].msg);
        ck_assert_str_eq(m.a, cases[i].a);
        ck_assert_str_eq(m.b, cases[i].b);
        ck_assert_str_eq(m.arg, cases[i].arg);
    }
    static const char *not_mismatch[] = {
        "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same",
        "Expected all tensors to be on the same device, but found at least two devices, ",
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        "",
        "Expected object of device type cuda but got",
    };
    for (size_t i = 0; i < sizeof not_mismatch / sizeof not_mismatch[0]; i++)
        ck_assert_msg(!dt_parse_mismatch(not_mismatch[i], strlen(not_mismatch[i]), &m), "taken as a mismatch: %s",
                      not_mismatch[i]);
    /* bounded by len: a message cut right after the first device is not read past */
    const char *cut = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!";
    ck_assert(!dt_parse_mismatch(cut, strlen(cut) - 9, &m));
}
END_TEST

/* Every row of tests/adapters/data/torch2.11-device-errors.txt (PyTorch 2.11's texts, measured on a GPU) that
 * raised is recognised, with the odd operand's device, its peers' and the argument the text names. The
 * expectations are read off each row's call (which operand the setup left on the cpu) and PyTorch's
 * rule (the first tensor sets the common device), not off the message; a row added to the table
 * without an expectation here fails the test. */
START_TEST(test_mismatch_table_parsed) {
    static const struct {
        const char *name, *odd, *arg; /* the row, the odd operand's device, the argument named ("": none) */
    } want[] = {
        {"add", "cpu", ""},
        {"mm", "cpu", "mat2"},
        {"matmul_op", "cpu", "mat2"},
        {"linear_input_cpu", "cuda:0", "mat2"},
        {"masked_fill", "cpu", "mask"},
        {"index_select", "cpu", "index"},
        {"cat", "cpu", "tensors"},
        {"stack", "cpu", "tensors"},
        {"where_cond_cpu", "cpu", ""},
        {"embedding_idx_cpu", "cpu", "index"},
        {"cross_entropy_target_cpu", "cpu", "target"},
        {"nll_weight_cpu", "cpu", "weight"},
        {"bce_pos_weight_cpu", "cpu", ""},
        {"conv2d_input_cpu", "cuda:0", "weight"},
        {"lstm_hidden_cpu", "cpu", "hx"},
        {"bmm", "cpu", "mat2"},
        {"gather_idx_cpu", "cpu", "index"},
        {"scatter_idx_cpu", "cpu", "index"},
        {"index_add_idx_cpu", "cpu", "index"},
        {"layer_norm_weight_cpu", "cpu", "weight"},
        {"batch_norm_running_cpu", "cpu", "running_mean"},
        {"addcmul", "cpu", ""},
        {"sdpa_mask_cpu", "cpu", "attn_bias"},
        {"mha_mask_cpu", "cuda:0", "batch1"},
        {"clamp_min_tensor_cpu", "cpu", "min"},
        {"lerp", "cpu", ""},
        {"mse_loss", "cpu", ""},
        {"grid_sample_grid_cpu", "cpu", "grid"},
        {"take_along_dim", "cpu", ""},
        {"searchsorted", "cpu", "self"},
        {"bucketize_bounds_cpu", "cpu", "boundaries"},
        {"einsum", "cpu", "mat2"},
        {"cdist", "cpu", "x2"},
        {"cosine_similarity", "cuda:0", "min"},
        {"index_fill_idx_cpu", "cpu", ""},
        {"embedding_bag_offsets_cpu", "cpu", "offsets"},
        {"foreach_add", "cpu", ""},
        {"maximum", "cpu", ""},
        {"pow_tensor", "cpu", ""},
        {"dot", "cpu", "tensor"},
        {"kl_div", "cpu", ""},
        {"ctc_like_smooth_l1", "cpu", ""},
        {"prelu_weight_cpu", "cpu", "weight"},
        {"normal_mean_cpu_std_cuda", "cuda:0", "std"},
    };
    const size_t nwant = sizeof want / sizeof want[0];
    char path[512], line[2048];
    snprintf(path, sizeof path, "%s/adapters/data/torch2.11-device-errors.txt", TESTS_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t raised = 0, quiet = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == '#' || line[0] == 0) continue;
        char *col[5] = {line}; /* name | call | raised | exception type | message */
        int nc = 1;
        for (char *p = line; *p && nc < 5; p++)
            if (*p == '|') {
                *p = 0;
                col[nc++] = p + 1;
            }
        ck_assert_msg(nc == 5, "row %s: %d columns", col[0], nc);
        if (strcmp(col[2], "yes") != 0) {
            quiet++;
            continue;
        }
        raised++;
        size_t w = 0;
        while (w < nwant && strcmp(want[w].name, col[0]) != 0) w++;
        ck_assert_msg(w < nwant, "row %s has no expectation in this test", col[0]);
        struct dt_mismatch m;
        ck_assert_msg(dt_parse_mismatch(col[4], strlen(col[4]), &m), "%s not recognised: %s", col[0], col[4]);
        const char *peers = strcmp(want[w].odd, "cpu") == 0 ? "cuda:0" : "cpu";
        ck_assert_msg(strcmp(m.a, want[w].odd) == 0 && strcmp(m.b, peers) == 0 && strcmp(m.arg, want[w].arg) == 0,
                      "%s: got odd %s, peers %s, arg '%s'; want %s, %s, '%s'", col[0], m.a, m.b, m.arg, want[w].odd,
                      peers, want[w].arg);
    }
    fclose(f);
    ck_assert_uint_eq(raised, nwant);
    ck_assert_uint_eq(raised + quiet, 49);
}
END_TEST

/* The forms of ATen's TensorUtils checks, cuDNN's and a generator's, beside the table's. */
START_TEST(test_mismatch_checks_parsed) {
    static const struct {
        const char *msg, *a, *b, *arg;
    } cases[] = {
        {"Expected tensor for argument #1 'input' to have the same device as tensor for argument #2 'weight'; but "
         "device 1 does not equal 0 (while checking arguments for cudnn_convolution)",
         "cuda:1", "cuda:0", "input"},
        {"Expected tensor for argument #1 'input' to have the same device as tensor for argument #2 'target'; but "
         "device cpu does not equal cuda:0 (while checking arguments for nll_loss)",
         "cpu", "cuda:0", "input"},
        {"Expected tensor for argument #1 'self' to have the same device type as tensor for argument #2 'other'; "
         "but device type cpu does not equal cuda (while checking arguments for foo)",
         "cpu", "cuda", "self"},
        {"Expected tensor to have CUDA DeviceType, but got tensor with CPU DeviceType (while checking arguments "
         "for cudnn_rnn)",
         "cpu", "cuda", ""},
        {"expected self and other to be on the same device, but got other on cuda:1 and self on cuda:0", "cuda:1",
         "cuda:0", "other"},
        {"Expected a 'cuda' device type for generator but found 'cpu'", "cpu", "cuda", "generator"},
    };
    struct dt_mismatch m;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(dt_parse_mismatch(cases[i].msg, strlen(cases[i].msg), &m), "not recognised: %s", cases[i].msg);
        ck_assert_str_eq(m.a, cases[i].a);
        ck_assert_str_eq(m.b, cases[i].b);
        ck_assert_str_eq(m.arg, cases[i].arg);
    }
    static const char *not_mismatch[] = {
        "expected self and mask to be on the same device, but got",
        "Expected tensor to have cuda:0 Device, but got",
        "Expected tensor for argument #1 'input' to have the same device as tensor for argument #2 'weight'",
        "expected scalar type Float but found Double",
    };
    for (size_t i = 0; i < sizeof not_mismatch / sizeof not_mismatch[0]; i++)
        ck_assert_msg(!dt_parse_mismatch(not_mismatch[i], strlen(not_mismatch[i]), &m), "taken as a mismatch: %s",
                      not_mismatch[i]);
}
END_TEST

/* ------------------------------------------------------------------ the viewer on these traces */

/* Runs devtrace CMD [A1 [A2 [A3]]] on trace t.db of the test directory;
 * returns its exit status, output in out_buf. */
static int cli4(const char *cmd, const char *a1, const char *a2, const char *a3) {
    char trace[256];
    snprintf(trace, sizeof trace, "%s/t.db", dir);
    const char *argv[7] = {DEVTRACE_CLI, cmd};
    int n = 2;
    if (a1) argv[n++] = a1;
    if (a2) argv[n++] = a2;
    if (a3) argv[n++] = a3;
    argv[n++] = trace;
    argv[n] = NULL;
    int st = run(0, NULL, argv);
    ck_assert_msg(WIFEXITED(st), "devtrace %s: killed by a signal; stderr: %s", cmd, err_buf);
    return WEXITSTATUS(st);
}
static int cli(const char *cmd, const char *a1, const char *a2) { return cli4(cmd, a1, a2, NULL); }

/* A Python expression over the JSON in out_buf (as d): its printed value. */
static const char *json_eval(const char *expr) {
    char path[256], code[2048];
    snprintf(path, sizeof path, "%s/out.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(out_buf, f);
    fclose(f);
    snprintf(code, sizeof code, "import json; d = json.load(open('%s')); print(%s)", path, expr);
    int st = run(0, NULL, (const char *const[]){PYTHON3, "-c", code, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s", expr, err_buf);
    out_buf[strcspn(out_buf, "\n")] = '\0';
    return out_buf;
}

/* A program on libcudart, not on the runtime: transfers shows its copies
 * by line with the per-step ones flagged, tensors and show say there are no
 * runtime tensors and what there is instead, report sums the CUDA calls up,
 * and the Chrome export has them on the thread's and the device's tracks. */
START_TEST(test_viewer_on_cuda_program) {
    /* with the launches recorded, which the report and the timeline show */
    run_both((const char *const[]){"DEVTRACE_CUDA_ACTIVITY=1", NULL},
             (const char *const[]){CUDA_USER, "loop", "6", NULL}, 0);
    ck_assert_str_eq(out_buf, "loop total 12.0 rc 0\n");
    int batch = marker_line(CUDA_USER_SOURCE, "the batch, every step"),
        item = marker_line(CUDA_USER_SOURCE, "loss.item(), every step");
    char want[256];
    ck_assert_int_eq(cli("transfers", NULL, NULL), 0);
    ck_assert_msg(strstr(out_buf, "12 CUDA runtime copies (cudaMemcpy and its family), 6168 bytes, from 2 call sites"),
                  "%s", out_buf);
    snprintf(want, sizeof want, "cuda_user.c:%d (train_loop)\n  host -> cuda:0 by cudaMemcpy: 6 x, 6144 bytes", batch);
    ck_assert_msg(strstr(out_buf, want), "no '%s' in:\n%s", want, out_buf);
    ck_assert_msg(strstr(out_buf, "copies from the same host address again each time (6 copies from 1 address)"), "%s",
                  out_buf);
    snprintf(want, sizeof want, "cuda_user.c:%d (train_loop)\n  cuda:0 -> host by cudaMemcpy: 6 x, 24 bytes", item);
    ck_assert_msg(strstr(out_buf, want), "no '%s' in:\n%s", want, out_buf);
    ck_assert_msg(strstr(out_buf, "a device-to-host copy 6 times, each waits for the device"), "%s", out_buf);
    ck_assert_int_eq(cli("transfers", "--json", NULL), 0);
    ck_assert_str_eq(json_eval("[(s['direction'], s['count'], s['bytes'], s['per_step'], s['pageable'], "
                               "s['site'].split('/')[-1]) for s in d['traces'][0]['cuda_sites']], "
                               "d['traces'][0]['cuda_copies'], d['traces'][0]['transfers']"),
                     (snprintf(want, sizeof want,
                               "[('HtoD', 6, 6144, True, 6, 'cuda_user.c:%d (train_loop)'), ('DtoH', 6, 24, True, 6, "
                               "'cuda_user.c:%d (train_loop)')] 12 0",
                               batch, item),
                      want));
    ck_assert_int_eq(cli("tensors", NULL, NULL), 0);
    ck_assert_msg(strstr(out_buf, "0 tensors\n(no runtime tensors: this program does not run on libdtrt. Recorded "
                                  "instead: 20 CUDA runtime calls (devtrace transfers))"),
                  "%s", out_buf);
    ck_assert_int_eq(cli("show", NULL, NULL), 2); /* usage: no tensor given */
    {
        char trace[256];
        snprintf(trace, sizeof trace, "%s/t.db", dir);
        int st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, "show", trace, "t1", NULL});
        ck_assert_int_eq(WEXITSTATUS(st), 2);
        ck_assert_msg(strstr(err_buf, "no tensor 't1' (no runtime tensors"), "%s", err_buf);
    }
    ck_assert_int_eq(cli("report", NULL, NULL), 0);
    ck_assert_msg(strstr(out_buf, "CUDA runtime calls: 20: 12 copies (6168 bytes; 6 HtoD, 6 DtoH, 0 DtoD), 1 "
                                  "allocations (1024 bytes), 6 kernel launches, 0 synchronizations\n"),
                  "%s", out_buf);
    ck_assert_int_eq(cli4("export", "--format=chrome", "-o", "-"), 0);
    /* every call on its thread; copies and launches again on cuda:0's track */
    ck_assert_str_eq(
        json_eval("sum(e.get('cat') == 'cuda' and e['tid'] < 1000000 for e in d['traceEvents']), "
                  "sum(e.get('cat') == 'cuda' and e['tid'] == 1000000 + 65536 for e in d['traceEvents']), "
                  "any(e['ph'] == 'M' and e['args']['name'] == 'device cuda:0' for e in d['traceEvents'])"),
        "20 18 True");
}
END_TEST

/* A thrown device mismatch (no runtime tensors, no Python) in the HTML
 * report, rendered by headless Chromium: the message, both devices, the
 * native stack down to the throwing line, and the fix. */
/* A tensor runtime's copies (as libdtrt's CUDA backend, PyTorch and
 * libtorch make them: inside the op that asked) are joined to that op and
 * its tensor; one made outside any op says so. */
START_TEST(test_cuda_copies_joined_to_ops) {
    run_both(NULL, (const char *const[]){CUDA_USER, "runtime", "4", NULL}, 0);
    ck_assert_str_eq(out_buf, "runtime loop total 4.0 rc 0\n");
    ck_assert_int_eq(cli("transfers", NULL, NULL), 0);
    ck_assert_msg(strstr(out_buf, "host -> cuda:0 by cudaMemcpy: 4 x, 4096 bytes, first at") &&
                      strstr(out_buf, "\n  made by to of \"images\" x 4\n") &&
                      strstr(out_buf, "cuda:0 -> host by cudaMemcpy: 4 x, 16 bytes") &&
                      strstr(out_buf, "\n  made by item of \"loss\" x 4\n") &&
                      strstr(out_buf, "host -> cuda:0 by cudaMemcpy: 4 x, 64 bytes") &&
                      strstr(out_buf, "\n  made outside any tensor op\n"),
                  "%s", out_buf);
    ck_assert_int_eq(cli("transfers", "--json", NULL), 0);
    ck_assert_str_eq(
        json_eval("[(s['direction'], s['bytes'], s['ops'], s['outside_ops']) for s in "
                  "d['traces'][0]['cuda_sites']]"),
        "[('HtoD', 4096, [{'op': 'to of \"images\"', 'tensor': 100, 'count': 4}], 0), ('HtoD', 64, [], 4), "
        "('DtoH', 16, [{'op': 'item of \"loss\"', 'tensor': 1101, 'count': 4}], 0)]");
}
END_TEST

START_TEST(test_exception_in_html_report) {
    ck_assert_msg(system("command -v chromium >/dev/null") == 0,
                  "Debian's chromium is needed for this test (scripts/install-deps.sh installs it)");
    run_both(NULL, (const char *const[]){THROW_TARGET, NULL}, 0);
    char html[256], url[300], profile[256];
    snprintf(html, sizeof html, "%s/r.html", dir);
    ck_assert_int_eq(cli4("export", "--format=html", "-o", html), 0);
    snprintf(url, sizeof url, "file://%s", html);
    snprintf(profile, sizeof profile, "--user-data-dir=%s/chr", dir);
    int st = run(0, NULL,
                 (const char *const[]){"/usr/bin/timeout", "60", "/usr/bin/chromium", "--headless", "--no-sandbox",
                                       "--disable-gpu", "--no-first-run", profile, "--dump-dom", url, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "chromium: status %d", st);
    ck_assert_msg(strstr(out_buf, "data-rendered=\"yes\""), "the page's script did not finish:\n%.2000s", out_buf);
    char *box = strstr(out_buf, "id=\"mismatch-0-0\"");
    ck_assert_msg(box, "no rendered mismatch in:\n%.4000s", out_buf);
    ck_assert_msg(strstr(box, "Device mismatch (std::runtime_error thrown)") &&
                      strstr(box, "found at least two devices, cpu and cuda:0!") &&
                      strstr(box, "Devices: cuda:0 (argument mat1) and cpu"),
                  "%.3000s", box);
    char want[128];
    snprintf(want, sizeof want, "throw_target.cc:%d", marker_line(THROW_SOURCE, "devtrace: throws the mismatch"));
    char *stack = strstr(box, "id=\"stack-0-0\"");
    ck_assert_msg(stack && strstr(stack, want), "no '%s' in the native stack:\n%.3000s", want, box);
    ck_assert_msg(strstr(box, "id=\"fix-0-0\"") && strstr(box, "move the operand on cpu to cuda:0"), "%.3000s", box);
}
END_TEST

/* ------------------------------------------------------------------ PyTorch */

START_TEST(test_pytorch_mismatch) {
    if (!python_or_skip()) return;
    char script[512];
    snprintf(script, sizeof script, "%s/tracer/torch_mismatch.py", TESTS_SOURCE_DIR);
    int st = run(0, NULL, (const char *const[]){PYTHON3, "-c", "import torch", NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "Debian's python3-torch is not importable by %s (run scripts/install-deps.sh): %s", PYTHON3, err_buf);
    const char *env[] = {"DEVTRACE_OUTPUT=t.db", NULL};
    st = run(0, env, (const char *const[]){PYTHON3, script, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "untraced: status %d", st);
    ck_assert_msg(strstr(err_buf, "meta and cpu!") != NULL, "%s", err_buf);
    snprintf(plain_out, sizeof plain_out, "%s", err_buf);
    st = run(1, env, (const char *const[]){PYTHON3, script, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "traced: status %d, stderr: %s", st, err_buf);
    ck_assert_msg(strstr(err_buf, plain_out) != NULL, "traced stderr differs:\n%s\nuntraced:\n%s", err_buf, plain_out);
    sqlite3 *db = open_trace("t.db");
    ck_assert_int_ge(q_int(db, "SELECT count(*) FROM v_errors WHERE what = 'device_mismatch' AND exception = "
                               "'c10::Error' AND device_a = 'cpu' AND device_b = 'meta' AND message LIKE 'Expected "
                               "all tensors to be on the same device%'"),
                     1);
    /* the Python line of the failing statement, from the throw that held the GIL */
    ck_assert_int_eq(q_int(db, "SELECT count(*) FROM errors r JOIN misc_events e ON e.seq = r.seq JOIN v_py_frames p "
                               "ON p.stack = e.pystack AND p.level = 0 WHERE r.device_b = 'meta' AND p.file LIKE "
                               "'%torch_mismatch.py' AND p.line = 8 AND p.function = 'forward'"),
                     1);
    /* a native stack through libtorch, from the first throw */
    ck_assert_int_ge(q_int(db, "SELECT count(*) FROM errors r JOIN misc_events e ON e.seq = r.seq JOIN v_stack_frames "
                               "s ON s.stack = e.stack WHERE r.device_b = 'meta' AND s.module LIKE '%libtorch_cpu%'"),
                     1);
    sqlite3_close(db);
    /* and the report says so, with the line */
    char trace[256];
    snprintf(trace, sizeof trace, "%s/t.db", dir);
    st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, "report", trace, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "report: status %d, %s", st, err_buf);
    ck_assert_msg(strstr(out_buf, "device mismatch (c10::Error thrown)") && strstr(out_buf, "devices: cpu and meta") &&
                      strstr(out_buf, "torch_mismatch.py:8 (forward)") && strstr(out_buf, "at::"),
                  "%s", out_buf);
}
END_TEST

Suite *make_interpose_suite(void) {
    Suite *s = suite_create("interpose");
    TCase *tc = tcase_create("interpose");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cudart_calls_recorded);
    tcase_add_test(tc, test_cudart_activity_opt_in);
    tcase_add_test(tc, test_cudart_activity_old_name);
    tcase_add_test(tc, test_cuda_copies_joined_to_ops);
    tcase_add_test(tc, test_cudart_off_when_tracing_off);
    tcase_add_test(tc, test_cudart_under_ctypes_host);
    tcase_add_test(tc, test_cxx_throws_recorded);
    tcase_add_test(tc, test_pytorch_mismatch);
    tcase_add_test(tc, test_viewer_on_cuda_program);
    tcase_add_test(tc, test_exception_in_html_report);
    suite_add_tcase(s, tc);
    /* the parser alone, needing no fixture: CK_RUN_CASE=mismatch runs just these */
    TCase *parse = tcase_create("mismatch");
    tcase_add_test(parse, test_mismatch_messages_parsed);
    tcase_add_test(parse, test_mismatch_table_parsed);
    tcase_add_test(parse, test_mismatch_checks_parsed);
    suite_add_tcase(s, parse);
    return s;
}
