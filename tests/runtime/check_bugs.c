/* End-to-end tests of the real bugs (examples/bug_*.c, issue 7): each
 * program runs untraced and traced (devtrace run) on simulated CUDA, exits
 * the same way with the same output, and `devtrace report` names the
 * culprit operand, its device, the line where it was made (the source's
 * devtrace: origin marker) and the line after (or before) which the fix belongs (the
 * devtrace: fix marker), in text and in JSON. The markers are read from the
 * sources, so moving code keeps the tests true. ok_scalar_and_correct (0-dim
 * cpu tensors used as scalars) must get no mismatch at all.
 *
 * `dt_tests bugs-real` runs the same on the real CUDA backend (the runner
 * skips it, saying why, without a GPU). */
#include "testutil.h"
#include "tracetest.h"

#include <ctype.h>
#include <devtrace/probe.h>
#include <sqlite3.h>

static const struct scenario {
    const char *name;
    const char *arg, *device, *tensor_name; /* the culprit; tensor_name "" when it has none */
    const char *intended;                   /* the device the op runs on */
    const char *fix_says;                   /* a phrase the fix must hold */
    int gpus;                               /* GPUs it needs */
    int odd;                                /* operands off the intended device */
    int ambiguous;                          /* the program's moves and work do not settle the intended device */
} scenarios[] = {
    {"bug_batch_on_cpu", "input", "cpu", "", "cuda:0", "move \"inputs\" to cuda:0 where the program binds it", 1, 1, 0},
    {"bug_labels_on_cpu", "target", "cpu", "", "cuda:0", "where its peer \"logits\" is moved", 1, 1, 0},
    {"bug_resume_checkpoint", "self", "cpu", "optimizer.state.0.weight.exp_avg", "cuda:0",
     "move the model to cuda:0 before the optimizer's state is created or loaded", 1, 1, 0},
    {"bug_step_before_move", "self", "cpu", "optimizer.state.0.weight.exp_avg", "cuda:0",
     "after this move, load the optimizer's own state dict back into it", 1, 1, 0},
    {"bug_pos_weight", "pos_weight", "cpu", "pos_weight", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_class_weight", "weight", "cpu", "class_weight", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_token_ids", "indices", "cpu", "token_ids", "cuda:0", "move \"ids\" to cuda:0 where the program binds it", 1,
     1, 0},
    {"bug_normalize_const", "other", "cpu", "mean", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_plain_field", "other", "cpu", "scale", "cuda:0", "register it as a buffer of its module", 1, 1, 0},
    {"bug_data_parallel", "target", "cuda:1", "labels", "cuda:0", "was copied to cuda:1 here", 2, 1, 1},
    {"bug_cpu_roundtrip", "target", "cpu", "", "cuda:0", "it was copied off the device at", 1, 1, 0},
    {"ok_scalar_and_correct", NULL, NULL, NULL, NULL, NULL, 1, 1, 0},
    /* issue 24: intent from the program's moves, not the operands' count; view chains; copies left behind */
    {"bug_fresh_module_cpu", "weight", "cpu", "weight", "cuda:0", "move the module \"model\" to cuda:0 once it is made",
     1, 2, 0},
    {"bug_rebuilt_after_load", "weight", "cpu", "weight", "cuda:0",
     "move the module \"eval_model\" to cuda:0 once it is made", 1, 2, 0},
    {"bug_broadcast_view", "other", "cpu", "", "cuda:0", "move \"gain\" to cuda:0 right after it is made, once", 1, 1,
     0},
    {"bug_warmup_schedule", "other", "cpu", "", "cuda:0", "move \"warmup\" to cuda:0 right after it is made, once", 1,
     1, 0},
    {"bug_hidden_state", "other", "cpu", "", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_running_loss", "self", "cpu", "running_loss", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_padding_mask", "mask", "cpu", "", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_grad_accum", "self", "cpu", "acc.weight", "cuda:0", "right after it is made", 1, 1, 0},
    {"bug_ema_shadow", "self", "cpu", "ema.weight", "cuda:0", "make that move before the statement that made it", 1, 1,
     0},
    {"bug_metrics_on_cpu", "target", "cpu", "", "cuda:0", "it was copied off the device at", 1, 1, 0},
    {"bug_stray_cuda", "other", "cuda:0", "", "cpu", "was copied to cuda:0 here, but the op runs on cpu", 1, 1, 1},
    {"ok_setup_on_device", NULL, NULL, NULL, NULL, NULL, 1, 1, 0},
    {"ok_copies_after_move", NULL, NULL, NULL, NULL, NULL, 1, 1, 0},
};
#define NSCENARIOS (int)(sizeof scenarios / sizeof scenarios[0])

static int real_cuda(void) { return getenv("DT_BUGS_REAL") != NULL; }

/* One value from JSON text, by SQLite's json_extract (path), as text ("" for null). */
static const char *json_at(const char *json, const char *sql) {
    static char buf[2048];
    sqlite3 *db;
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    buf[0] = '\0';
    int rc = sqlite3_step(st);
    ck_assert_msg(rc == SQLITE_ROW || rc == SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(db));
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, sizeof buf, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return buf;
}

/* The culprit's JSON fields (operands[].odd) and the fix's. */
#define ODD(field)                                                                                                     \
    "SELECT json_extract(value, '$." field "') FROM json_each(?1, '$.traces[0].mismatches[0].operands') WHERE "        \
    "json_extract(value, '$.odd')"

START_TEST(test_bug_diagnosed) {
    const struct scenario *s = &scenarios[_i];
    char bin[512], src[512], trace[256], want[512];
    snprintf(bin, sizeof bin, "%s/%s", EXAMPLES_BINARY_DIR, s->name);
    snprintf(src, sizeof src, "%s/%s.c", EXAMPLES_SOURCE_DIR, s->name);
    snprintf(trace, sizeof trace, "%s/t.db", dir);
    const char *env[] = {real_cuda() ? "DEVTRACE_SIM_CUDA=" : "DEVTRACE_SIM_CUDA=2", NULL};
    if (real_cuda() && s->gpus > 1) {
        run(0, env, (const char *const[]){bin, NULL});
        if (!strstr(out_buf, "cuda:0 (cuda)")) ck_abort_msg("%s: not on the real CUDA backend: %s", s->name, out_buf);
        printf("SKIP: %s needs %d GPUs; its simulated run covers it\n", s->name, s->gpus);
        return;
    }
    int bug = s->arg != NULL;

    /* untraced, then under devtrace run: same output, same exit status */
    int st = run(0, env, (const char *const[]){bin, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == (bug ? 1 : 0), "%s untraced: status %d\n%s%s", s->name, st,
                  out_buf, err_buf);
    ck_assert_msg(strstr(out_buf, real_cuda() ? "device: cuda:0 (cuda)\n" : "device: cuda:0 (cuda-sim)\n"), "%s",
                  out_buf);
    snprintf(plain_out, sizeof plain_out, "%s", out_buf);
    static char plain_err[sizeof err_buf];
    snprintf(plain_err, sizeof plain_err, "%s", err_buf);
    st = run(0, env, (const char *const[]){DEVTRACE_CLI, "run", "-o", trace, "--", bin, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == (bug ? 1 : 0), "%s traced: status %d\n%s", s->name, st, err_buf);
    ck_assert_str_eq(out_buf, plain_out);
    ck_assert_msg(strstr(err_buf, plain_err), "%s: traced stderr lost the program's own:\n%s\nuntraced:\n%s", s->name,
                  err_buf, plain_err);
    if (s->tensor_name && !strncmp(s->tensor_name, "optimizer.state.", 16)) {
        /* the runtime's optimizer says what its state is (probe ABI 4): a role of its parameter's tensor, the
         * fact a reader decides on; the name is for people */
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM roles r JOIN names n ON n.tensor = r.tensor JOIN strings s ON s.id = n.name "
                 "JOIN names pn ON pn.tensor = r.of_tensor JOIN strings ps ON ps.id = pn.name JOIN strings k ON "
                 "k.id = r.key WHERE r.role = %d AND s.text = '%s' AND ps.text = '0.weight' AND k.text = 'exp_avg'",
                 DTP_ROLE_OPTIMIZER_STATE, s->tensor_name);
        sqlite3 *db = open_trace("t.db");
        ck_assert_int_ge(q_int(db, sql), 1);
        sqlite3_close(db);
    }

    st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, "report", trace, NULL});
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == (bug ? 1 : 0), "%s report: status %d\n%s%s", s->name, st, out_buf,
                  err_buf);
    if (!bug) {
        ck_assert_msg(strstr(out_buf, "no device mismatch in "), "%s", out_buf);
        st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, "report", "--json", trace, NULL});
        ck_assert_int_eq(WEXITSTATUS(st), 0);
        ck_assert_str_eq(json_at(out_buf, "SELECT json_array_length(?1, '$.traces[0].mismatches')"), "0");
        if (strcmp(s->name, "ok_scalar_and_correct")) return;
        /* the 0-dim cpu tensors were really used with device tensors */
        sqlite3 *db = open_trace("t.db");
        ck_assert_int_ge(q_int(db, "SELECT count(*) FROM op_args a JOIN tensors t ON t.id = a.tensor JOIN op_args b "
                                   "ON b.op = a.op AND b.device <> 0 JOIN strings sh ON sh.id = t.shape WHERE "
                                   "a.device = 0 AND sh.text = '[]'"),
                         2);
        sqlite3_close(db);
        return;
    }
    int origin = marker_line(src, "devtrace: origin"), fix = marker_line(src, "devtrace: fix");
    /* the culprit's row in the operand table, marked */
    char *row = strstr(out_buf, "<- the odd one out");
    ck_assert_msg(row, "%s: no odd one out in:\n%s", s->name, out_buf);
    char *bol = row;
    while (bol > out_buf && bol[-1] != '\n') bol--;
    snprintf(want, sizeof want, "  %-11s %-8s ", s->arg, s->device);
    ck_assert_msg(!strncmp(bol, want, strlen(want)), "%s: culprit row '%.*s', want '%s'", s->name, (int)(row - bol),
                  bol, want);
    if (*s->tensor_name) {
        snprintf(want, sizeof want, "\"%s\"", s->tensor_name);
        ck_assert_msg(strstr(bol, want) && strstr(bol, want) < row, "%s: culprit not named %s", s->name, want);
    }
    /* where it was made, and the fix line */
    snprintf(want, sizeof want, "%s.c:%d (", s->name, origin);
    char *why = strstr(out_buf, "\nwhy t");
    ck_assert_msg(why && strstr(why, want), "%s: origin '%s' not in the chain:\n%s", s->name, want, out_buf);
    char *fx = strstr(out_buf, "\nfix: ");
    ck_assert_msg(fx, "%s: no fix in:\n%s", s->name, out_buf);
    ck_assert_msg(strstr(fx, s->fix_says), "%s: the fix does not say '%s':\n%s", s->name, s->fix_says, fx);
    /* after the marked line, or before it (a move back to the device right before the failing call) */
    char before[sizeof want];
    snprintf(want, sizeof want, "after %s/%s.c:%d (", EXAMPLES_SOURCE_DIR, s->name, fix);
    snprintf(before, sizeof before, "before %s/%s.c:%d (", EXAMPLES_SOURCE_DIR, s->name, fix);
    ck_assert_msg(strstr(fx, want) || strstr(fx, before), "%s: fix line %d not in:\n%s", s->name, fix, fx);

    /* the same facts in JSON */
    char *out_text = strdup(out_buf);
    st = run(0, NULL, (const char *const[]){DEVTRACE_CLI, "report", "--json", trace, NULL});
    ck_assert_int_eq(WEXITSTATUS(st), 1);
    char *json = strdup(out_buf);
    ck_assert_str_eq(json_at(json, "SELECT json_array_length(?1, '$.traces[0].mismatches')"), "1");
    snprintf(want, sizeof want, "%d", s->odd ? s->odd : 1);
    ck_assert_str_eq(json_at(json, "SELECT count(*) FROM json_each(?1, '$.traces[0].mismatches[0].operands') WHERE "
                                   "json_extract(value, '$.odd')"),
                     want);
    ck_assert_str_eq(json_at(json, ODD("arg") " LIMIT 1"), s->arg);
    ck_assert_str_eq(json_at(json, ODD("device") " LIMIT 1"), s->device);
    ck_assert_str_eq(json_at(json, ODD("name") " LIMIT 1"), s->tensor_name);
    ck_assert_str_eq(json_at(json, "SELECT json_extract(?1, '$.traces[0].mismatches[0].intended_device')"),
                     s->intended);
    ck_assert_str_eq(json_at(json, "SELECT json_extract(?1, '$.traces[0].mismatches[0].intent.ambiguous')"),
                     s->ambiguous ? "1" : "0");
    ck_assert_msg(!s->ambiguous == !strstr(out_text, "which device was meant is not clear"), "%s: %s", s->name,
                  out_text);
    snprintf(want, sizeof want, "%d", origin);
    ck_assert_str_eq(json_at(json, ODD("reached_device_at.line") " LIMIT 1"), want);
    snprintf(want, sizeof want, "%s/%s.c", EXAMPLES_SOURCE_DIR, s->name);
    ck_assert_str_eq(json_at(json, ODD("reached_device_at.file") " LIMIT 1"), want);
    ck_assert_str_eq(json_at(json, "SELECT json_extract(?1, '$.traces[0].mismatches[0].fix.site.file')"), want);
    snprintf(want, sizeof want, "%d", fix);
    ck_assert_str_eq(json_at(json, "SELECT json_extract(?1, '$.traces[0].mismatches[0].fix.site.line')"), want);
    ck_assert_msg(strstr(json_at(json, "SELECT json_extract(?1, '$.traces[0].mismatches[0].fix.text')"), s->fix_says),
                  "%s", json);
    /* the fix names tensors by the program's names or by what they are, never by the trace's ids ("t639") */
    const char *text = json_at(json, "SELECT json_extract(?1, '$.traces[0].mismatches[0].fix.text')");
    for (const char *p = text; *p; p++)
        ck_assert_msg(!(*p == 't' && p[1] >= '0' && p[1] <= '9' && (p == text || !isalnum((unsigned char)p[-1]))),
                      "%s: an internal id in the fix: %s", s->name, text);
    free(json);
    free(out_text);
}
END_TEST

Suite *make_bugs_suite(void) {
    Suite *s = suite_create("bugs");
    TCase *tc = tcase_create("scenarios");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_bug_diagnosed, 0, NSCENARIOS);
    suite_add_tcase(s, tc);
    return s;
}
