/* Native libtorch programs under `devtrace run` (built only when CMake found
 * Torch): the observer gives the report the failing op's operands, the odd
 * one's origin line and the fix line, the user's own line in the headline
 * and in the stack; a clean program's report exits 0; the traced program's
 * output and exit status are the untraced ones. Without the observer, the
 * thrown c10::Error still gets the user's line. A process that does not
 * map libtorch at start (a CPython one) never gets the observer. */
#include "testutil.h"

#include <stdarg.h>
#include <sys/wait.h>

static char dir[64];
static char out[1 << 16], err[1 << 16];

/* A shell command in dir (its working directory); stdout and stderr land in out and err. */
#define sh(...) tu_sh(dir, 1, out, sizeof out, err, sizeof err, __VA_ARGS__)

/* The first n lines of s (libtorch's own backtrace after them holds addresses). */
static void head_lines(const char *s, int n, char *buf, size_t size) {
    const char *p = s;
    for (int i = 0; i < n && p && *p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    size_t len = p ? (size_t)(p - s) : strlen(s);
    snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), s);
}

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/dt_libtorch.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_libtorch_mismatch) {
    int fails = marker_line(TORCH_SOURCE, "devtrace: fails here"), call = marker_line(TORCH_SOURCE, "calls forward"),
        origin = marker_line(TORCH_SOURCE, "devtrace: origin"), fix = marker_line(TORCH_SOURCE, "devtrace: fix");
    /* untraced, then traced: same stdout, same exit status, same error text */
    int plain = sh("%s", TORCH_TARGET);
    ck_assert_int_eq(plain, 128 + 6); /* the uncaught c10::Error: std::terminate, abort */
    static char plain_out[1 << 16];
    char plain_err[4096], traced_err[4096];
    snprintf(plain_out, sizeof plain_out, "%s", out);
    head_lines(err, 2, plain_err, sizeof plain_err);
    ck_assert_msg(strstr(plain_err, "found at least two devices, meta and cpu!"), "%s", err);
    ck_assert_int_eq(sh("DEVTRACE_QUIET=1 %s run -o t.db -- %s", DEVTRACE_CLI, TORCH_TARGET), plain);
    ck_assert_str_eq(out, plain_out);
    head_lines(err, 2, traced_err, sizeof traced_err);
    ck_assert_str_eq(traced_err, plain_err);
    ck_assert_msg(!strstr(err, "devtrace:"), "devtrace spoke under DEVTRACE_QUIET=1:\n%s", err);

    ck_assert_int_eq(sh("%s report t.db", DEVTRACE_CLI), 1);
    char want[256], *p;
    /* the headline: the op and the user's line */
    snprintf(want, sizeof want, "torch_target.cc:%d (forward)\n", fails);
    ck_assert_msg(on_line(report_headline(out, "error: device mismatch in aten::add at "), want),
                  "no '%s' in the headline:\n%s", want, out);
    /* the stack: the user's lines, the helper's and main's call of it */
    p = strstr(out, "call stack:");
    ck_assert_msg(p && strstr(p, want), "no '%s' in the stack:\n%s", want, out);
    snprintf(want, sizeof want, "torch_target.cc:%d (main)\n", call);
    ck_assert_msg(p && strstr(p, want), "no '%s' in the stack:\n%s", want, out);
    /* the odd operand, the cpu bias, and where it was made */
    ck_assert_msg(strstr(out, "other       cpu") && strstr(out, "float32[4]   <- the odd one out"), "%s", out);
    snprintf(want, sizeof want, "created on cpu by zeros  ");
    p = strstr(out, want);
    ck_assert_msg(p, "no '%s' in:\n%s", want, out);
    snprintf(want, sizeof want, "torch_target.cc:%d (make_bias)", origin);
    ck_assert_msg(strstr(p, want) && strstr(p, want) < strchr(p, '\n'), "origin line %d not in:\n%s", origin, out);
    ck_assert_msg(strstr(out, "reached meta here:") && strstr(out, "copied cpu -> meta"), "%s", out);
    /* the fix: move the cpu operand, at the marked line */
    /* (the helpers have no device of their own: the move goes where main binds what they return, by its name) */
    p = strstr(out, "fix: move \"b\" (passed as 'other') to meta");
    ck_assert_msg(p, "%s", out);
    snprintf(want, sizeof want, "torch_target.cc:%d", fix);
    ck_assert_msg(strstr(p, want), "fix line %d not in: %s", fix, p);
    ck_assert_msg(strstr(out, "killed by SIGABRT"), "%s", out);
    /* one mismatch: the c10::Error libtorch threw is that mismatch, not another */
    ck_assert_msg(!strstr(out, "c10::Error thrown"), "%s", out);

    ck_assert_int_eq(sh("%s report --json t.db | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)"
                        "[\"traces\"][0]; m=t[\"mismatches\"]; print(len(m), t[\"exit_status\"], "
                        "t[\"signal\"][\"name\"], m[0][\"site\"][\"line\"], m[0][\"fix\"][\"site\"][\"line\"], "
                        "[o[\"device\"] for o in m[0][\"operands\"] if o[\"odd\"]][0])'",
                        DEVTRACE_CLI),
                     0);
    snprintf(want, sizeof want, "1 134 SIGABRT %d %d cpu\n", fails, fix);
    ck_assert_str_eq(out, want);
}
END_TEST

/* A training step written as a template on its data (C++ loops are): the
 * batch's data moved, its targets left on the cpu. The template's name is
 * shortened ("train_step<...>", not hundreds of characters cut off), and
 * the fix is where the data made with the targets is moved, not a module's
 * register_buffer advice: with the batch made in the step (--batch) and
 * made on other threads by library code alone (--worker, a DataLoader's
 * workers: no frame of the program's on their stacks). */
START_TEST(test_libtorch_batch_template) {
    int made = marker_line(TORCH_SOURCE, "devtrace: batch made"), moved = marker_line(TORCH_SOURCE, "batch moved"),
        fails = marker_line(TORCH_SOURCE, "devtrace: batch fails");
    static const char *const modes[] = {"--batch", "--worker"};
    for (int i = 0; i < 2; i++) {
        int plain = sh("%s %s", TORCH_TARGET, modes[i]);
        ck_assert_int_eq(plain, 128 + 6);
        ck_assert_int_eq(
            sh("rm -f t.db && DEVTRACE_QUIET=1 %s run -o t.db -- %s %s", DEVTRACE_CLI, TORCH_TARGET, modes[i]), plain);
        ck_assert_int_eq(sh("%s report t.db", DEVTRACE_CLI), 1);
        char want[256], *p;
        snprintf(want, sizeof want, "torch_target.cc:%d (train_step<...>", fails);
        ck_assert_msg(on_line(report_headline(out, "error: device mismatch in aten::sub at "), want),
                      "%s: no '%s' in the headline:\n%s", modes[i], want, out);
        ck_assert_msg(strstr(out, "other       cpu") && !strstr(out, "std::allocator"), "%s", out);
        p = strstr(out, "by aten::stack from ");
        snprintf(want, sizeof want, "torch_target.cc:%d (", made);
        ck_assert_msg(p && (i || (strstr(p, want) && strstr(p, want) < strchr(p, '\n'))), "made line %d not in:\n%s",
                      made, out);
        p = strstr(out, "fix: move the tensor passed as 'other' to meta where the tensors made with it are moved");
        snprintf(want, sizeof want, "torch_target.cc:%d", moved);
        ck_assert_msg(p && strstr(p, want) && strstr(p, want) < strchr(p, '\n') && !strstr(out, "register_buffer"),
                      "%s: fix line %d not in:\n%s", modes[i], moved, out);
        ck_assert_int_eq(
            sh("%s report --json t.db | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)"
               "[\"traces\"][0]; m=t[\"mismatches\"]; print(len(m), m[0][\"site\"][\"line\"], "
               "m[0][\"fix\"][\"site\"][\"line\"], [o[\"arg\"] for o in m[0][\"operands\"] if o[\"odd\"]])'",
               DEVTRACE_CLI),
            0);
        snprintf(want, sizeof want, "1 %d %d ['other']\n", fails, moved);
        ck_assert_str_eq(out, want);
    }
}
END_TEST

/* The bias made by torch::tensor({...}): libtorch fills an empty() and hands
 * back a shallow copy of its TensorImpl, made outside any op. The report
 * still gives the user's line that made it, not the first op that used it. */
START_TEST(test_libtorch_tensor_list) {
    int listed = marker_line(TORCH_SOURCE, "devtrace: listed"),
        fails = marker_line(TORCH_SOURCE, "devtrace: fails here");
    ck_assert_int_eq(sh("DEVTRACE_QUIET=1 %s run -o t.db -- %s --list", DEVTRACE_CLI, TORCH_TARGET), 128 + 6);
    ck_assert_int_eq(sh("%s report t.db", DEVTRACE_CLI), 1);
    char want[256];
    const char *p = strstr(out, "created on cpu by ");
    snprintf(want, sizeof want, "torch_target.cc:%d (make_listed_bias", listed);
    ck_assert_msg(p && strstr(p, want) && strstr(p, want) < strchr(p, '\n') && !strstr(out, "first seen"),
                  "origin line %d not in:\n%s", listed, out);
    ck_assert_int_eq(sh("%s report --json t.db | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)"
                        "[\"traces\"][0]; m=t[\"mismatches\"]; print(len(m), m[0][\"site\"][\"line\"], "
                        "m[0][\"fix\"][\"site\"][\"line\"])'",
                        DEVTRACE_CLI),
                     0);
    snprintf(want, sizeof want, "1 %d %d\n", fails, marker_line(TORCH_SOURCE, "devtrace: fix"));
    ck_assert_str_eq(out, want);
}
END_TEST

/* libtorch's c10::Error caught and thrown again inside a std::runtime_error
 * with more words (what the TorchScript interpreter does to every error of
 * a scripted model's op): still one mismatch, the observer's; with the
 * observer off, the thrown c10::Error's. */
START_TEST(test_libtorch_rethrown_wrapped) {
    int fails = marker_line(TORCH_SOURCE, "devtrace: wrapped fails");
    int plain = sh("%s --wrap", TORCH_TARGET);
    ck_assert_int_eq(plain, 128 + 6);
    ck_assert_msg(strstr(err, "std::runtime_error") && strstr(err, "add failed: Expected all tensors"), "%s", err);
    ck_assert_int_eq(sh("DEVTRACE_QUIET=1 %s run -o t.db -- %s --wrap", DEVTRACE_CLI, TORCH_TARGET), plain);
    ck_assert_int_eq(sh("%s report t.db", DEVTRACE_CLI), 1);
    ck_assert_msg(report_headline(out, "error: device mismatch in aten::add at ") && !strstr(out, "thrown) at"), "%s",
                  out);
    ck_assert_int_eq(sh("%s report --json t.db | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)"
                        "[\"traces\"][0]; m=t[\"mismatches\"]; print(len(m), m[0][\"site\"][\"line\"])'",
                        DEVTRACE_CLI),
                     0);
    char want[64];
    snprintf(want, sizeof want, "1 %d\n", fails);
    ck_assert_str_eq(out, want);
    /* the observer off: the thrown c10::Error, once, not its wrapper again */
    ck_assert_int_eq(sh("DEVTRACE_LIBTORCH_OBSERVER=0 %s run -o t0.db -- %s --wrap", DEVTRACE_CLI, TORCH_TARGET),
                     plain);
    ck_assert_int_eq(sh("%s report --json t0.db | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)"
                        "[\"traces\"][0]; m=t[\"mismatches\"]; print(len(m), m[0][\"site\"][\"line\"])'",
                        DEVTRACE_CLI),
                     0);
    ck_assert_str_eq(out, want);
}
END_TEST

/* The same program with the observer off: libtorch's thrown c10::Error
 * alone, with the user's line, one record, and the cpu operand to move. */
START_TEST(test_libtorch_throw_without_observer) {
    int fails = marker_line(TORCH_SOURCE, "devtrace: fails here");
    ck_assert_int_eq(sh("DEVTRACE_LIBTORCH_OBSERVER=0 %s run -o t.db -- %s", DEVTRACE_CLI, TORCH_TARGET), 128 + 6);
    ck_assert_int_eq(sh("%s report t.db", DEVTRACE_CLI), 1);
    char want[256];
    const char *head = report_headline(out, "error: device mismatch (c10::Error thrown) at ");
    ck_assert_msg(head, "%s", out);
    snprintf(want, sizeof want, "torch_target.cc:%d (forward)\n", fails);
    ck_assert_msg(on_line(head, want), "no '%s' in the headline:\n%s", want, out);
    ck_assert_msg(strstr(out, "fix: move the operand on cpu to meta before this call") && !strstr(out, "other way"),
                  "%s", out);
    ck_assert_int_eq(sh("%s report --json t.db | /usr/bin/python3 -c 'import json,sys; t=json.load(sys.stdin)"
                        "[\"traces\"][0]; m=t[\"mismatches\"]; print(len(m), m[0][\"throws\"], "
                        "t[\"summary\"][\"cxx_exceptions\"], m[0][\"site\"][\"line\"], t[\"exit_status\"])'",
                        DEVTRACE_CLI),
                     0);
    snprintf(want, sizeof want, "1 1 1 %d 134\n", fails);
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_libtorch_clean) {
    ck_assert_int_eq(sh("%s --clean", TORCH_TARGET), 0);
    static char plain_out[1 << 16];
    snprintf(plain_out, sizeof plain_out, "%s", out);
    ck_assert_int_eq(sh("%s run -o t.db -- %s --clean", DEVTRACE_CLI, TORCH_TARGET), 0);
    ck_assert_str_eq(out, plain_out);
    ck_assert_int_eq(sh("%s report t.db", DEVTRACE_CLI), 0);
    ck_assert_msg(strstr(out, "no device mismatch in ") && strstr(out, "exit status 0)") && strstr(out, "  meta ") &&
                      strstr(out, "  cpu "),
                  "%s", out);
    /* what the observer made of it: three copies to meta (bias, input,
     * weights), the result's view sharing its storage, matmul's output */
    ck_assert_int_eq(
        sh("sqlite3 t.db \"SELECT (SELECT count(*) FROM transfers x JOIN tensors t ON t.id = x.dst WHERE "
           "x.src_device = 0 AND x.dst_device = 131072 AND x.kind = 0 AND t.origin = 3 AND t.src = x.src), "
           "(SELECT count(*) FROM tensors v JOIN tensors b ON b.id = v.src WHERE v.origin = 2 AND "
           "v.storage = b.storage AND b.origin = 1), (SELECT count(*) FROM v_tensors WHERE origin = "
           "'factory' AND device = 'cpu' AND what IN ('ones', 'randn', 'zeros'))\""),
        0);
    ck_assert_str_eq(out, "3|1|3\n");
    /* and with the observer off: no tensors, still a clean run */
    ck_assert_int_eq(sh("DEVTRACE_LIBTORCH_OBSERVER=0 %s run -o t0.db -- %s --clean", DEVTRACE_CLI, TORCH_TARGET), 0);
    ck_assert_int_eq(sh("%s report t0.db", DEVTRACE_CLI), 0);
    ck_assert_msg(strstr(out, "no device mismatch in ") && strstr(out, "no tensors recorded"), "%s", out);
}
END_TEST

/* The observer goes only where libtorch is mapped at start, and never into
 * CPython (Debian's torch, imported later, is the Python adapter's). */
START_TEST(test_observer_only_in_libtorch_programs) {
    ck_assert_int_eq(sh("DEVTRACE_SIM_CUDA=1 %s run -o c.db -- %s", DEVTRACE_CLI, INLINE_TARGET), 1);
    ck_assert_int_eq(sh("sqlite3 c.db \"SELECT value FROM meta WHERE key = 'runtime'\""), 0);
    ck_assert_str_eq(out, "libdtrt\n");
    ck_assert_int_eq(sh("%s run -o p.db -- /usr/bin/python3 -c 'import torch; "
                        "torch.ones(2) + torch.ones(2)'",
                        DEVTRACE_CLI),
                     0);
    ck_assert_int_eq(sh("sqlite3 p.db \"SELECT count(*) FROM meta WHERE key = 'runtime' AND value = 'libtorch'\""), 0);
    ck_assert_str_eq(out, "0\n");
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(sh("sqlite3 %s \"SELECT count(*) FROM modules WHERE path LIKE '%%libdevtrace_libtorch%%' OR "
                            "path LIKE '%%libtorch_cpu%%'\"",
                            i ? "p.db" : "c.db"),
                         0);
        ck_assert_msg(!strcmp(out, "0\n") || i == 1, "libtorch was loaded into a program without it: %s", out);
        if (i == 1) { /* python imported torch: libtorch_cpu, but never the observer */
            ck_assert_int_eq(sh("sqlite3 p.db \"SELECT count(*) FROM modules WHERE path LIKE "
                                "'%%libdevtrace_libtorch%%'\""),
                             0);
            ck_assert_str_eq(out, "0\n");
        }
    }
}
END_TEST

Suite *make_libtorch_suite(void) {
    Suite *s = suite_create("libtorch");
    TCase *tc = tcase_create("libtorch");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_libtorch_mismatch);
    tcase_add_test(tc, test_libtorch_batch_template);
    tcase_add_test(tc, test_libtorch_tensor_list);
    tcase_add_test(tc, test_libtorch_rethrown_wrapped);
    tcase_add_test(tc, test_libtorch_throw_without_observer);
    tcase_add_test(tc, test_libtorch_clean);
    tcase_add_test(tc, test_observer_only_in_libtorch_programs);
    suite_add_tcase(s, tc);
    return s;
}
