/* Unit tests of the diagnosis engine (viewer/diag.h) on hand-built facts, beside the end-to-end fixtures of
 * tests/rules/: the registry's entries, the model's questions about names, and rules matched on cases built
 * by hand over an in-memory trace (`:memory:`, the trace's schema from common/ and the tracer's views) that
 * holds only the source facts a case needs. Its own runner: `check_rules [SUITE]` (ctest viewer-rules-unit). */
#include "diag.h"
#include "op_families.h"
#include "trace_schema.h"

#include <check.h>
#include <devtrace/probe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char tr_schema_views[]; /* tracer/core/schema.c: the views the viewer reads */

#define CUDA0 ((int64_t)1 << 16) /* cuda:0, as the trace codes devices (cpu is 0) */

/* ---------------------------------------------------------------- an in-memory trace */

static struct vw_trace trace;
static struct vw_model model;

static void exec_sql(const char *sql) {
    char *err = NULL;
    ck_assert_msg(sqlite3_exec(trace.db, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql, err ? err : "?");
}

static void trace_open(void) {
    static char create[1 << 16];
    memset(&trace, 0, sizeof trace);
    trace.path = ":memory:";
    ck_assert_int_eq(sqlite3_open(":memory:", &trace.db), SQLITE_OK);
    ck_assert_int_lt(ts_create_sql(create, sizeof create), (int)sizeof create);
    exec_sql(create);
    exec_sql(tr_schema_views);
    ck_assert_int_eq(vw_model_open(&model, &trace), 0);
    ck_assert_msg(model.have_facts, "the schema has source_facts");
}

static void trace_close(void) {
    vw_model_close(&model);
    sqlite3_close(trace.db);
}

static int64_t string_id(const char *text) {
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(trace.db,
                                        "INSERT OR IGNORE INTO strings(text) SELECT ?1 WHERE NOT EXISTS "
                                        "(SELECT 1 FROM strings WHERE text = ?1)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    ck_assert_int_eq(sqlite3_prepare_v2(trace.db, "SELECT id FROM strings WHERE text = ?1", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

/* One source fact of train.py, as the PyTorch recorder writes them. */
static void fact(int line, const char *key, const char *value) {
    char sql[512];
    snprintf(sql, sizeof sql, "INSERT INTO source_facts VALUES(%lld, %d, %lld, %lld)", (long long)string_id("train.py"),
             line, (long long)string_id(key), (long long)string_id(value));
    exec_sql(sql);
}

/* A statement of one line at `line` of train.py, in function fn, binding `binds`. */
static void statement(int line, const char *fn, const char *binds) {
    char stmt[32];
    snprintf(stmt, sizeof stmt, "%d %d", line, line);
    fact(line, DT_FACT_STMT, stmt);
    fact(line, DT_FACT_FUNCTION, fn);
    fact(line, DT_FACT_INDENT, "    ");
    if (binds) fact(line, DT_FACT_BINDS, binds);
    if (binds) fact(line, DT_FACT_BINDS_KIND, strchr(binds, ',') ? "unpack" : "call");
}

/* The program named tensor `tensor` `name` at event seq (the recorder's names of a statement's targets). */
static void named(int64_t tensor, int64_t seq, const char *name) {
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO names VALUES(%lld, %lld, %lld)", (long long)seq, (long long)tensor,
             (long long)string_id(name));
    exec_sql(sql);
}

/* ---------------------------------------------------------------- hand-built cases */

static struct vw_operand ops[2];
static struct vw_case kase;

static struct vw_step py_step(int64_t tensor, int64_t dev, int origin, const char *what, int line, int64_t seq) {
    struct vw_step s;
    memset(&s, 0, sizeof s);
    s.tensor = tensor, s.dev = dev, s.origin = origin, s.seq = seq;
    snprintf(s.what, sizeof s.what, "%s", what);
    s.param = !strcmp(what, DT_WHAT_PARAMETER);
    snprintf(s.site.module, sizeof s.site.module, "python");
    snprintf(s.site.file, sizeof s.site.file, "train.py");
    snprintf(s.site.function, sizeof s.site.function, "main");
    s.site.line = line;
    s.has_site = 1;
    return s;
}

/* A failing op at line 20 of train.py with two operands: `peer` on cuda:0 and the odd one, whose chain (newest
 * first) is given, on the cpu. */
static void case_of(const char *odd_name, const struct vw_step *chain, int nsteps) {
    memset(ops, 0, sizeof ops);
    memset(&kase, 0, sizeof kase);
    snprintf(ops[0].arg, sizeof ops[0].arg, "input");
    snprintf(ops[0].name, sizeof ops[0].name, "x");
    ops[0].tensor = 1, ops[0].dev = CUDA0;
    ops[0].chain[0] = py_step(1, CUDA0, DTP_ORIGIN_TRANSFER, "to", 12, 50);
    ops[0].nsteps = 1;
    snprintf(ops[1].arg, sizeof ops[1].arg, "other");
    snprintf(ops[1].name, sizeof ops[1].name, "%s", odd_name);
    ops[1].tensor = chain[0].tensor, ops[1].dev = 0, ops[1].odd = 1;
    for (int i = 0; i < nsteps; i++) ops[1].chain[i] = chain[i];
    ops[1].nsteps = nsteps;
    ops[1].arrived = nsteps - 1;
    kase.seq = 100, kase.first = 0, kase.other = 1;
    kase.ops = ops, kase.n = 2;
    kase.want = kase.in.want = CUDA0;
    kase.odd = &ops[1];
    kase.call = py_step(0, CUDA0, -1, "mul", 20, 100);
    snprintf(kase.opname, sizeof kase.opname, "mul");
}

/* ---------------------------------------------------------------- the registry */

START_TEST(test_registry_entries) {
    ck_assert_int_ge(vw_nrules, 17);
    for (int i = 0; i < vw_nrules; i++) {
        const struct vw_rule *r = vw_rules[i];
        ck_assert_msg(r->id && r->id[0] && r->summary && r->summary[0], "rule %d: an id and a summary", i);
        ck_assert_msg(r->doc && strlen(r->doc) > 200, "%s: a paragraph of documentation", r->id);
        ck_assert_msg(strstr(r->doc, "Example") && strstr(r->doc, "Fix"), "%s: its doc has an example and a fix",
                      r->id);
        ck_assert_msg(r->example && r->example[0] && r->match, "%s: an example and a match", r->id);
        ck_assert_msg(r->fixes && !(r->fixes >> VW_FIX_NKINDS), "%s: the kinds of fix it returns", r->id);
        for (const char *p = r->id; *p; p++)
            ck_assert_msg((*p >= 'a' && *p <= 'z') || *p == '-', "%s: kebab-case", r->id);
        ck_assert_ptr_eq(vw_rule_find(r->id), r);
        for (int j = 0; j < i; j++) ck_assert_msg(strcmp(vw_rules[j]->id, r->id), "%s listed twice", r->id);
    }
    ck_assert_ptr_null(vw_rule_find("no-such-rule"));
    for (int f = 0; f < VW_FIX_NKINDS; f++)
        ck_assert_msg(strcmp(vw_fix_kind_name((enum vw_fix_kind)f), "?") &&
                          strcmp(vw_fix_kind_doc((enum vw_fix_kind)f), "?"),
                      "fix kind %d has a name and a doc", f);
    ck_assert_str_eq(vw_fix_kind_name(VW_FIX_NKINDS), "?");
}
END_TEST

/* ---------------------------------------------------------------- the model's questions */

START_TEST(test_model_names) {
    struct vw_src_call c;
    memset(&c, 0, sizeof c);
    snprintf(c.func, sizeof c.func, "model.to");
    ck_assert_uint_eq(vw_src_call_method(&c, DT_METHOD_MOVE_TO), 5);
    ck_assert_uint_eq(vw_src_call_method(&c, DT_METHOD_MOVE_CUDA), 0);
    snprintf(c.func, sizeof c.func, "to"); /* a function, no receiver */
    ck_assert_uint_eq(vw_src_call_method(&c, DT_METHOD_MOVE_TO), 0);
    snprintf(c.func, sizeof c.func, "x.proto");
    ck_assert_uint_eq(vw_src_call_method(&c, DT_METHOD_MOVE_TO), 0);
    snprintf(c.func, sizeof c.func, "logits.cpu");
    ck_assert_uint_eq(vw_src_call_method(&c, DT_METHOD_COPY_CPU), 6);
    ck_assert_uint_eq(vw_py_constructor("Net.<locals>.Layer.__init__"), strlen("Net.<locals>.Layer"));
    ck_assert_uint_eq(vw_py_constructor("__init__"), 0);
    ck_assert_uint_eq(vw_py_constructor("Net.forward"), 0);
    ck_assert(vw_same_function("Net.__init__", "Net.__init__.<locals>.<listcomp>"));
    ck_assert(!vw_same_function("Net.__init__", "Net.forward"));
    ck_assert(vw_same_function("PolynomialImpl::forward(at::Tensor const&)", "forward"));
}
END_TEST

START_TEST(test_model_source_facts) {
    trace_open();
    statement(5, "main", "w");
    fact(5, DT_FACT_CALL, "torch.ones\t\t1\t5\t22\t1");
    struct vw_src src;
    ck_assert(vw_src_at(&model, "train.py", 5, &src));
    ck_assert(src.known && src.first == 5 && src.last == 5);
    ck_assert_str_eq(src.function, "main");
    ck_assert(vw_src_binds(&src, "w") && !vw_src_binds(&src, "x"));
    ck_assert_int_eq(src.ncalls, 1);
    ck_assert_str_eq(src.calls[0].func, "torch.ones");
    ck_assert(src.calls[0].temporary && src.calls[0].end_line == 5 && src.calls[0].end_col == 22);
    ck_assert(!vw_src_at(&model, "train.py", 6, &src));
    ck_assert(!vw_src_at(&model, "other.py", 5, &src));
    trace_close();
}
END_TEST

/* ---------------------------------------------------------------- rules on hand-built cases */

static void diagnose(struct vw_fix *fx, const char *rule) {
    ck_assert_msg(vw_diagnose(&model, &kase, fx), "no rule fits");
    ck_assert_str_eq(fx->rule, rule);
    ck_assert_msg(vw_rule_find(rule)->fixes & (1u << fx->kind), "%s returned a kind it does not list: %s", rule,
                  vw_fix_kind_name(fx->kind));
}

START_TEST(test_no_odd_operand) {
    trace_open();
    struct vw_step s = py_step(2, 0, DTP_ORIGIN_FACTORY, "zeros", 5, 10);
    case_of("w", &s, 1);
    kase.odd = NULL;
    struct vw_fix fx;
    ck_assert(!vw_diagnose(&model, &kase, &fx));
    trace_close();
}
END_TEST

START_TEST(test_never_moved) {
    trace_open();
    statement(5, "main", "w");
    struct vw_step s = py_step(2, 0, DTP_ORIGIN_FACTORY, "tensor", 5, 10);
    case_of("w", &s, 1);
    struct vw_fix fx;
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_AFTER);
    ck_assert_int_eq(fx.site.site.line, 5);
    ck_assert_str_eq(fx.code, "w = w.to(\"cuda:0\")");
    ck_assert(!fx.before && !fx.replace);
    trace_close();
}
END_TEST

START_TEST(test_never_moved_without_facts) {
    trace_open(); /* no source fact: the rule still explains it, in words */
    struct vw_step s = py_step(2, 0, DTP_ORIGIN_FACTORY, "tensor", 5, 10);
    case_of("w", &s, 1);
    struct vw_fix fx;
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.kind, VW_FIX_ADVICE);
    ck_assert_str_eq(fx.code, "");
    ck_assert_int_eq(fx.site.site.line, 5);
    trace_close();
}
END_TEST

START_TEST(test_module_never_moved) {
    trace_open();
    statement(7, "main", "model");
    struct vw_step s = py_step(3, 0, DTP_ORIGIN_FACTORY, DT_WHAT_PARAMETER, 7, 10);
    case_of("model.fc.weight", &s, 1);
    struct vw_fix fx;
    diagnose(&fx, "module-never-moved");
    ck_assert_str_eq(fx.code, "model = model.to(\"cuda:0\")");
    ck_assert_int_eq(fx.site.site.line, 7);
    trace_close();
}
END_TEST

START_TEST(test_view_of_unmoved_base) {
    trace_open();
    statement(4, "main", "gain");
    statement(15, "main", "g");
    named(4, 6, "gain");
    struct vw_step chain[2] = {py_step(5, 0, DTP_ORIGIN_VIEW, "expand", 15, 60),
                               py_step(4, 0, DTP_ORIGIN_FACTORY, "tensor", 4, 5)};
    case_of("g", chain, 2);
    ops[1].arrived = 1;
    struct vw_fix fx;
    diagnose(&fx, "view-of-unmoved-base");
    ck_assert_int_eq(fx.site.site.line, 4); /* the base, once: not the view in the loop */
    ck_assert_str_eq(fx.code, "gain = gain.to(\"cuda:0\")");
    trace_close();
}
END_TEST

START_TEST(test_checkpoint_map_location) {
    trace_open();
    statement(9, "main", "stats");
    struct vw_step s = py_step(6, 0, DTP_ORIGIN_CHECKPOINT, "stats", 9, 10);
    case_of("stats", &s, 1);
    struct vw_fix fx;
    diagnose(&fx, "checkpoint-map-location");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_AFTER);
    ck_assert_str_eq(fx.code, "stats = stats.to(\"cuda:0\")");
    ck_assert_int_eq(fx.site.site.line, 9);
    ck_assert(strstr(fx.text, "map_location"));
    trace_close();
}
END_TEST

START_TEST(test_copied_off_device_in_expression) {
    trace_open();
    statement(20, "main", NULL);
    fact(20, DT_FACT_CALL, "logits.cpu\t\t1\t20\t30\t0");
    struct vw_step chain[2] = {py_step(7, 0, DTP_ORIGIN_TRANSFER, "cpu", 20, 90),
                               py_step(8, CUDA0, DTP_ORIGIN_OP_OUTPUT, "linear", 19, 80)};
    case_of("", chain, 2);
    ops[1].arrived = 0;
    struct vw_fix fx;
    diagnose(&fx, "copied-off-device");
    ck_assert_int_eq(fx.kind, VW_FIX_DROP_COPY);
    ck_assert_int_eq(fx.nedits, 1);
    ck_assert(fx.replace && fx.edits[0].line == 20 && fx.edits[0].col == 24 && fx.edits[0].del == 6);
    ck_assert_str_eq(fx.code, "logits.cpu() -> logits");
    trace_close();
}
END_TEST

START_TEST(test_temporary_in_expression) {
    trace_open();
    statement(20, "main", NULL);
    fact(20, DT_FACT_CALL, "torch.arange\t\t1\t20\t40\t1");
    struct vw_step s = py_step(9, 0, DTP_ORIGIN_FACTORY, "arange", 20, 95);
    case_of("", &s, 1);
    struct vw_fix fx;
    diagnose(&fx, "temporary-in-expression");
    ck_assert_int_eq(fx.kind, VW_FIX_DEVICE_ARG);
    ck_assert_int_eq(fx.nedits, 1);
    ck_assert(fx.edits[0].line == 20 && fx.edits[0].col == 39);
    ck_assert_str_eq(fx.edits[0].text, ", device=\"cuda:0\"");
    ck_assert_str_eq(fx.code, "torch.arange(..., device=\"cuda:0\")");
    ck_assert_str_eq(fx.text, "make the tensor passed as 'other' on cuda:0 where it is made, inside the expression at "
                              "train.py:20: torch.arange(..., device=\"cuda:0\")");
    trace_close();
    /* the call already passes a device (an expression that was on the cpu): nothing to add there */
    trace_open();
    statement(20, "main", NULL);
    fact(20, DT_FACT_CALL, "torch.arange\tcpu\t1\t20\t40\t1");
    vw_diagnose(&model, &kase, &fx);
    ck_assert_str_ne(fx.rule, "temporary-in-expression");
    trace_close();
}
END_TEST

START_TEST(test_peer_moved_from_same_source) {
    trace_open();
    statement(10, "main", "x,labels"); /* for x, labels in loader: */
    statement(12, "main", "x");        /* x = x.to(device) */
    struct vw_step s = py_step(2, 0, DTP_ORIGIN_FACTORY, "collate", 10, 40);
    case_of("labels", &s, 1);
    /* the peer: copied to cuda:0 at line 12 from a tensor made on line 10 with the odd one */
    ops[0].chain[0] = py_step(1, CUDA0, DTP_ORIGIN_TRANSFER, "to", 12, 50);
    ops[0].chain[1] = py_step(3, 0, DTP_ORIGIN_FACTORY, "collate", 10, 39);
    ops[0].nsteps = 2, ops[0].arrived = 0;
    struct vw_fix fx;
    diagnose(&fx, "peer-moved-from-same-source");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_AFTER);
    ck_assert_int_eq(fx.site.site.line, 12); /* beside the peer's move */
    ck_assert_str_eq(fx.code, "labels = labels.to(\"cuda:0\")");
    /* the peer made elsewhere: not this rule's */
    ops[0].chain[1].site.line = 11;
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 10);
    trace_close();
}
END_TEST

START_TEST(test_derived_from_unmoved) {
    trace_open();
    statement(4, "main", "causal");
    statement(15, "Net.forward", NULL);
    named(11, 5, "causal");
    /* mask = causal[:t, :t] == 0 in a forward: an op of one tensor from a tensor the program holds by name */
    struct vw_step chain[2] = {py_step(10, 0, DTP_ORIGIN_OP_OUTPUT, "eq", 15, 60),
                               py_step(11, 0, DTP_ORIGIN_FACTORY, "ones", 4, 5)};
    snprintf(chain[0].site.function, sizeof chain[0].site.function, "Net.forward");
    case_of("", chain, 2);
    ops[1].arrived = 1;
    struct vw_fix fx;
    diagnose(&fx, "derived-from-unmoved");
    ck_assert_int_eq(fx.site.site.line, 4); /* where it came from, not the op in the forward */
    ck_assert_str_eq(fx.code, "causal = causal.to(\"cuda:0\")");
    trace_close();
}
END_TEST

START_TEST(test_made_before_source_moved) {
    trace_open();
    statement(5, "main", "table");
    statement(8, "main", "rows");
    /* rows = table[idx] made at line 8 while table was on the cpu; table.data = table.data.to(device) after */
    struct vw_step chain[2] = {py_step(21, 0, DTP_ORIGIN_OP_OUTPUT, "index", 8, 30),
                               py_step(20, 0, DTP_ORIGIN_FACTORY, "randn", 5, 10)};
    case_of("rows", chain, 2);
    ops[1].arrived = 1;
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO transfers VALUES(40, 20, 20, 0, %lld, 64, %d, NULL)", (long long)CUDA0,
             DTP_TRANSFER_MOVE);
    exec_sql(sql);
    struct vw_fix fx;
    diagnose(&fx, "made-before-source-moved");
    ck_assert_int_eq(fx.site.seq, 40); /* at the move */
    ck_assert_int_eq(fx.words.say, VW_SAY_SOURCE_MOVED_AFTER);
    ck_assert_str_eq(fx.words.name, "its source"); /* the trace names no tensor */
    ck_assert(strstr(fx.text, "\"rows\" was made from \"its source\" while that was on cpu"));
    /* the move before rows was made: no longer this rule's (rows is computed from a tensor left on the cpu) */
    exec_sql("UPDATE transfers SET seq = 20 WHERE seq = 40");
    diagnose(&fx, "derived-from-unmoved");
    trace_close();
}
END_TEST

START_TEST(test_optimizer_state_left_behind) {
    trace_open();
    /* Adam's exp_avg of fc.weight, made on the cpu at the first step; model.to(device) moved fc.weight after */
    struct vw_step s = py_step(31, 0, DTP_ORIGIN_FACTORY, "zeros_like", 14, 10);
    case_of(DT_NAME_OPTIMIZER_STATE "fc.weight.exp_avg", &s, 1);
    named(30, 5, "fc.weight");
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO transfers VALUES(40, 30, 30, 0, %lld, 64, %d, NULL)", (long long)CUDA0,
             DTP_TRANSFER_MOVE);
    exec_sql(sql);
    struct vw_fix fx;
    diagnose(&fx, "optimizer-state-left-behind");
    ck_assert_int_eq(fx.site.seq, 40);
    ck_assert_int_eq(fx.words.say, VW_SAY_STATE_MOVE_MODEL);
    ck_assert_str_eq(fx.words.name, "fc.weight");
    ck_assert(strstr(fx.text, "next to its parameter \"fc.weight\", which was then moved to cuda:0 here"));
    ck_assert_str_eq(fx.evidence[0], "\"" DT_NAME_OPTIMIZER_STATE "fc.weight.exp_avg\" is optimizer state of parameter "
                                     "\"fc.weight\"");
    /* the parameter moved before the state was made: the state was made where it is, not left behind */
    exec_sql("UPDATE transfers SET seq = 8 WHERE seq = 40");
    vw_diagnose(&model, &kase, &fx);
    ck_assert_str_ne(fx.rule, "optimizer-state-left-behind");
    trace_close();
}
END_TEST

/* The fix's words (words.c) from a hand-built fix: each sentence names the case's odd operand and device. */
START_TEST(test_fix_words) {
    struct vw_step s = py_step(2, 0, DTP_ORIGIN_FACTORY, "zeros", 5, 10);
    case_of("labels", &s, 1);
    struct vw_fix fx;
    memset(&fx, 0, sizeof fx);
    snprintf(fx.text, sizeof fx.text, "kept");
    vw_fix_words(&kase, &fx); /* VW_SAY_RULE: the rule's own text stays */
    ck_assert_str_eq(fx.text, "kept");
    fx.words.say = VW_SAY_PEER_MOVED;
    snprintf(fx.words.name, sizeof fx.words.name, "x");
    vw_fix_words(&kase, &fx);
    ck_assert_str_eq(fx.text, "move \"labels\" to cuda:0 where its peer \"x\" is moved");
    memset(&fx.words, 0, sizeof fx.words);
    fx.words.say = VW_SAY_TEMPORARY_DEVICE;
    fx.words.at = s;
    snprintf(fx.words.func, sizeof fx.words.func, "torch.zeros");
    snprintf(fx.words.text, sizeof fx.words.text, "device=device");
    fx.words.count = 2;
    ops[1].name[0] = '\0'; /* no name: the argument it was passed as */
    vw_fix_words(&kase, &fx);
    ck_assert_str_eq(fx.text, "make the tensor passed as 'other' on cuda:0 where it is made, inside the expression at "
                              "train.py:5: torch.zeros(..., device=device) (and the 2 other torch.zeros calls of that "
                              "statement)");
    fx.words.say = VW_SAY_COPIED_OFF_DEVICE;
    vw_fix_words(&kase, &fx); /* written anew, not appended */
    ck_assert_str_eq(fx.text, "keep the tensor passed as 'other' on cuda:0: it was copied off the device here; use "
                              "the device tensor, or move the copy back to cuda:0");
}
END_TEST

static Suite *make_rules_suite(void) {
    Suite *s = suite_create("rules");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, test_registry_entries);
    suite_add_tcase(s, tc);
    tc = tcase_create("model");
    tcase_add_test(tc, test_model_names);
    tcase_add_test(tc, test_model_source_facts);
    suite_add_tcase(s, tc);
    tc = tcase_create("rules");
    tcase_add_test(tc, test_no_odd_operand);
    tcase_add_test(tc, test_never_moved);
    tcase_add_test(tc, test_never_moved_without_facts);
    tcase_add_test(tc, test_module_never_moved);
    tcase_add_test(tc, test_view_of_unmoved_base);
    tcase_add_test(tc, test_checkpoint_map_location);
    tcase_add_test(tc, test_copied_off_device_in_expression);
    tcase_add_test(tc, test_temporary_in_expression);
    tcase_add_test(tc, test_peer_moved_from_same_source);
    tcase_add_test(tc, test_derived_from_unmoved);
    tcase_add_test(tc, test_made_before_source_moved);
    tcase_add_test(tc, test_optimizer_state_left_behind);
    tcase_add_test(tc, test_fix_words);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(make_rules_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
