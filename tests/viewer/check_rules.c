/* Unit tests of the diagnosis engine (viewer/diag.h) on hand-built facts, beside the end-to-end fixtures of
 * tests/rules/: the registry's entries, the model's questions about names, and rules matched on cases built
 * by hand over an in-memory trace (`:memory:`, the trace's schema from common/ and the tracer's views) that
 * holds only the facts a case needs (source facts; the Python stacks, tensors, transfers and ops a rule's
 * question reads). Its own runner: `check_rules [SUITE]` (ctest viewer-rules-unit). */
#include "diag.h"
#include "op_families.h"
#include "trace_schema.h"
#include "vocab.h"

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
    trace.version = TS_SCHEMA_VERSION;
    ck_assert_int_eq(vw_model_open(&model, &trace), 0);
    ck_assert_msg(model.have_facts, "the schema has source_facts");
}

/* A trace of an older schema version (10 or later: with source facts), without the tables added since. */
static void trace_open_version(int version) {
    ck_assert_int_ge(version, 10);
    trace_open();
    for (int i = 0; i < TS_NTABLES; i++)
        if (ts_table_since((enum ts_table_id)i) > version) {
            char sql[160];
            snprintf(sql, sizeof sql, "DROP VIEW IF EXISTS v_%s; DROP TABLE %s", ts_tables[i].name, ts_tables[i].name);
            exec_sql(sql);
        }
    trace.version = version;
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

/* A Python code object of `file` named fn; its id (the same for the same file and name). */
static int64_t py_code_in(const char *file, const char *fn) {
    char sql[256];
    int64_t f = string_id(file), n = string_id(fn);
    snprintf(sql, sizeof sql, "INSERT INTO py_code(file, name, first_line) SELECT %lld, %lld, 1 WHERE NOT EXISTS "
             "(SELECT 1 FROM py_code WHERE file = %lld AND name = %lld)", (long long)f, (long long)n, (long long)f,
             (long long)n);
    exec_sql(sql);
    sqlite3_stmt *st;
    ck_assert_int_eq(
        sqlite3_prepare_v2(trace.db, "SELECT id FROM py_code WHERE file = ?1 AND name = ?2", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_int64(st, 1, f);
    sqlite3_bind_int64(st, 2, n);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

/* A Python stack: a frame at `line` of function fn of `file`, called from the stack `parent` (0: the outermost
 * frame); its id, as an event's pystack. */
static int64_t py_frame_in(int64_t parent, const char *file, const char *fn, int line) {
    char sql[256];
    int64_t code = py_code_in(file, fn);
    if (parent)
        snprintf(sql, sizeof sql, "INSERT INTO py_frames(parent, code, line) VALUES(%lld, %lld, %d)",
                 (long long)parent, (long long)code, line);
    else
        snprintf(sql, sizeof sql, "INSERT INTO py_frames(parent, code, line) VALUES(NULL, %lld, %d)", (long long)code,
                 line);
    exec_sql(sql);
    return sqlite3_last_insert_rowid(trace.db);
}

/* The same in train.py, the program's own file. */
static int64_t py_frame(int64_t parent, const char *fn, int line) { return py_frame_in(parent, "train.py", fn, line); }

/* Tensor id made at event seq on dev, by the Python stack pystack (its row in the trace). */
static void tensor_made(int64_t id, int64_t seq, int64_t dev, int64_t pystack) {
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO tensor_attrs(id, device, origin) VALUES(%lld, %lld, %d)", (long long)id,
             (long long)dev, DTP_ORIGIN_FACTORY);
    exec_sql(sql);
    snprintf(sql, sizeof sql, "INSERT INTO tensor_rows(id, seq, pystack, attrs) VALUES(%lld, %lld, %lld, %lld)",
             (long long)id, (long long)seq, (long long)pystack, (long long)id);
    exec_sql(sql);
}

/* A transfer at event seq of tensor src (a move in place: dst = src) from the cpu to cuda:0, of `kind`
 * (DTP_TRANSFER_*), via the op or method named via, by the Python stack pystack. */
static void transfer(int64_t seq, int64_t src, int64_t dst, int kind, const char *via, int64_t pystack) {
    char sql[320];
    snprintf(sql, sizeof sql, "INSERT INTO transfers VALUES(%lld, %lld, %lld, 0, %lld, 64, %d, %lld)", (long long)seq,
             (long long)src, (long long)dst, (long long)CUDA0, kind, (long long)string_id(via));
    exec_sql(sql);
    snprintf(sql, sizeof sql, "INSERT INTO misc_events(seq, kind, tensor, pystack) VALUES(%lld, %d, %lld, %lld)",
             (long long)seq, DT_EV_TRANSFER, (long long)src, (long long)pystack);
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
    s.site.python = 1;
    snprintf(s.site.file, sizeof s.site.file, "train.py");
    snprintf(s.site.function, sizeof s.site.function, "main");
    s.site.line = line;
    s.has_site = 1;
    return s;
}

/* The step made in function fn (of train.py) by the Python stack pystack. */
static struct vw_step in_function(struct vw_step s, const char *fn, int64_t pystack) {
    snprintf(s.site.function, sizeof s.site.function, "%s", fn);
    s.pystack = pystack;
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

/* ---------------------------------------------------------------- the device expression a fix writes */

/* In the program's terms, never a literal the program did not write: a device variable the function binds
 * before the site, else a peer's .device by a name bound there (a parameter: the def line's params fact), else
 * (nothing bound) the literal. */
START_TEST(test_device_expr_in_program_terms) {
    char buf[160];
    trace_open();
    statement(3, "Net", NULL); /* def forward(self, x): */
    fact(3, DT_FACT_PARAMS, "self,x");
    statement(6, "Net.forward", "h");
    fact(6, DT_FACT_FUNCTION_LINE, "3");
    struct vw_step s = py_step(2, 0, DTP_ORIGIN_FACTORY, "zeros", 6, 40);
    snprintf(s.site.function, sizeof s.site.function, "Net.forward");
    case_of("h", &s, 1);
    ck_assert_str_eq(vw_device_expr(&model, &kase, CUDA0, &s.site, buf, sizeof buf), "x.device");
    trace_close();
    /* the peer's name bound nowhere in the function: the literal */
    trace_open();
    statement(3, "Net", NULL);
    fact(3, DT_FACT_PARAMS, "self,y");
    statement(6, "Net.forward", "h");
    fact(6, DT_FACT_FUNCTION_LINE, "3");
    case_of("h", &s, 1);
    ck_assert_str_eq(vw_device_expr(&model, &kase, CUDA0, &s.site, buf, sizeof buf), "\"cuda:0\"");
    trace_close();
    /* a device variable of the function (device = y.device) before the site: the program's own */
    trace_open();
    statement(3, "Net", NULL);
    fact(3, DT_FACT_PARAMS, "self,y");
    statement(5, "Net.forward", "device");
    fact(5, DT_FACT_FUNCTION_LINE, "3");
    fact(5, DT_FACT_DEVICE_VAR, "device");
    statement(6, "Net.forward", "h");
    fact(6, DT_FACT_FUNCTION_LINE, "3");
    case_of("h", &s, 1);
    ck_assert_str_eq(vw_device_expr(&model, &kase, CUDA0, &s.site, buf, sizeof buf), "device");
    trace_close();
}
END_TEST

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
    /* the vocabulary's op names (common/op_families.h): libtorch's namespace stripped, nothing else */
    ck_assert_str_eq(dt_op_bare(DT_OP_NS_ATEN "eq"), "eq");
    ck_assert_str_eq(dt_op_bare("eq"), "eq");
    ck_assert_str_eq(dt_op_bare("aten:eq"), "aten:eq");
    ck_assert_uint_eq(dt_op_families_of(DT_OP_NS_ATEN "to"), dt_op_families_of("to"));
    ck_assert(dt_op_families_of("to") & DT_OPF_MOVE);
    /* factories that take no device: by the last dotted name, and the legacy <kind>Tensor constructors */
    ck_assert(dt_op_takes_no_device("torch.from_numpy") && dt_op_takes_no_device("torch.Tensor") &&
              dt_op_takes_no_device("torch.cuda.LongTensor") && dt_op_takes_no_device("from_numpy"));
    ck_assert(!dt_op_takes_no_device("torch.zeros") && !dt_op_takes_no_device("torch.FooTensor") &&
              !dt_op_takes_no_device("Tensor.") && !dt_op_takes_no_device(NULL));
    /* the kinds the viewer's SQL names (common/vocab.h) are the tables' numbers */
    ck_assert_int_eq(atoi(DT_SQL_EV_OP_END), DT_EV_OP_END);
    ck_assert_int_eq(atoi(DT_SQL_EV_SIGNAL), DT_EV_SIGNAL);
    ck_assert_int_eq(atoi(VW_SQL_TRANSFER_MOVE), DTP_TRANSFER_MOVE);
    ck_assert_int_eq(atoi(DT_SQL_ERROR_DEVICE), DTP_ERROR_DEVICE);
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

/* Facts read into typed fields, so that no rule parses a value: a statement's function nested in another (by the
 * def lines, not by the name's "<locals>"), a statement's attributes, and whether setattr's object is the
 * method's receiver (the producer's field since schema 13; OBJ's conventional name in an older fact). */
START_TEST(test_model_typed_source_facts) {
    trace_open();
    const struct {
        int line;
        const char *fn, *def;
    } lines[] = {{9, "<module>", "0"},
                 {10, "make", "9"},
                 {11, "make", "9"},
                 {12, "make.<locals>.inner", "11"},
                 {13, "make.<locals>.inner", "11"},
                 {14, "make.<locals>.inner.<locals>.deeper", "13"},
                 {15, "make_more", "0"}};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        statement(lines[i].line, lines[i].fn, NULL);
        fact(lines[i].line, DT_FACT_FUNCTION_LINE, lines[i].def);
    }
    /* every fact first: the model loads them once, at the first question */
    statement(20, "Net.__init__", NULL);
    fact(20, DT_FACT_BINDS_ATTR, "self.pe,self.b");
    fact(20, DT_FACT_SETATTR, "self\tk\tv");
    statement(21, "Net.__init__", NULL);
    fact(21, DT_FACT_BINDS_ATTR, "self->scale");
    fact(21, DT_FACT_SETATTR, "self\tk\tv\t0");
    statement(22, "Net.__init__", NULL);
    fact(22, DT_FACT_BINDS_ATTR, "a.b.c");
    fact(22, DT_FACT_SETATTR, "me\t'k'\tv\t1");
    struct vw_src src;
    ck_assert(vw_src_at(&model, "train.py", 12, &src));
    ck_assert(vw_src_nested_in(&model, "train.py", &src, "make"));
    ck_assert(!vw_src_nested_in(&model, "train.py", &src, "make.<locals>.inner")); /* its own function */
    ck_assert(!vw_src_nested_in(&model, "train.py", &src, "make_more"));
    ck_assert(vw_src_at(&model, "train.py", 14, &src));
    ck_assert(vw_src_nested_in(&model, "train.py", &src, "make"));
    ck_assert(vw_src_nested_in(&model, "train.py", &src, "make.<locals>.inner"));
    ck_assert(vw_src_at(&model, "train.py", 10, &src));
    ck_assert(!vw_src_nested_in(&model, "train.py", &src, "make"));
    ck_assert(vw_src_at(&model, "train.py", 15, &src));
    ck_assert(!vw_src_nested_in(&model, "train.py", &src, "make")); /* a name that starts the same: no nesting */
    ck_assert(vw_src_at(&model, "train.py", 20, &src));
    ck_assert(src.nattrs == 2 && !strcmp(src.attr_name, "pe") && src.setattr_receiver);
    ck_assert_str_eq(src.setattr_value, "v");
    ck_assert(vw_src_at(&model, "train.py", 21, &src));
    ck_assert(src.nattrs == 1 && !strcmp(src.attr_name, "scale") && !src.setattr_receiver);
    ck_assert_str_eq(src.setattr_value, "v");
    ck_assert(vw_src_at(&model, "train.py", 22, &src));
    ck_assert(src.nattrs == 1 && !src.attr_name[0] && src.setattr_receiver);
    ck_assert_str_eq(src.setattr_obj, "me");
    ck_assert_str_eq(src.setattr_name, "'k'");
    trace_close();
}
END_TEST

/* The parameter a caller hands a device (device_arg facts): by position (a method's receiver is no positional
 * argument), by keyword, and none where the call names another function or a position past the parameters. */
START_TEST(test_model_device_param) {
    trace_open();
    statement(30, "<module>", NULL);
    fact(30, DT_FACT_FUNCTION_LINE, "0");
    fact(30, DT_FACT_PARAMS, "device,n_mels");
    statement(31, "mel_filters", NULL);
    fact(31, DT_FACT_FUNCTION_LINE, "30");
    statement(32, "Net", NULL);
    fact(32, DT_FACT_FUNCTION_LINE, "29");
    fact(32, DT_FACT_PARAMS, "self,length,device");
    statement(33, "Net.positions", NULL);
    fact(33, DT_FACT_FUNCTION_LINE, "32");
    statement(40, "main", "f");
    fact(40, DT_FACT_DEVICE_ARG, "audio.mel_filters\t#0");
    statement(41, "Net.forward", "p");
    fact(41, DT_FACT_DEVICE_ARG, "self.positions\t#1");
    statement(42, "Net.forward", "q");
    fact(42, DT_FACT_DEVICE_ARG, "self.positions\tdevice");
    statement(43, "main", "g");
    fact(43, DT_FACT_DEVICE_ARG, "other_filters\t#0");
    statement(44, "Net.forward", "r");
    fact(44, DT_FACT_DEVICE_ARG, "self.positions\t#5");
    struct vw_step made;
    memset(&made, 0, sizeof made);
    made.site.python = 1;
    snprintf(made.site.file, sizeof made.site.file, "train.py");
    struct vw_frame caller = made.site;
    char p[64];
    made.site.line = 31;
    snprintf(made.site.function, sizeof made.site.function, "mel_filters");
    caller.line = 40;
    ck_assert_str_eq(vw_fact_device_param(&model, &made, &caller, p, sizeof p), "device");
    caller.line = 43; /* a call of another function */
    ck_assert_str_eq(vw_fact_device_param(&model, &made, &caller, p, sizeof p), "");
    made.site.line = 33;
    snprintf(made.site.function, sizeof made.site.function, "Net.positions");
    caller.line = 41; /* self.positions(n, x.device): the 2nd argument is the 3rd parameter */
    ck_assert_str_eq(vw_fact_device_param(&model, &made, &caller, p, sizeof p), "device");
    caller.line = 42;
    ck_assert_str_eq(vw_fact_device_param(&model, &made, &caller, p, sizeof p), "device");
    caller.line = 44;
    ck_assert_str_eq(vw_fact_device_param(&model, &made, &caller, p, sizeof p), "");
    trace_close();
}
END_TEST

/* The parameter of a function that made a tensor, to which its caller handed (its args fact, a plain name) a tensor
 * the program held on the intended device only: what a factory there without device= follows (device=ids.device).
 * A name held on the cpu, a call of another function, a parameter the function rebinds before the factory: none. */
START_TEST(test_model_tensor_param) {
    trace_open();
    statement(30, "<module>", NULL);
    fact(30, DT_FACT_FUNCTION_LINE, "0");
    fact(30, DT_FACT_PARAMS, "ids,pad");
    statement(31, "shift", "out");
    fact(31, DT_FACT_FUNCTION_LINE, "30");
    statement(32, "Net", NULL);
    fact(32, DT_FACT_FUNCTION_LINE, "29");
    fact(32, DT_FACT_PARAMS, "self,ids");
    statement(33, "Net.positions", "ids");
    fact(33, DT_FACT_FUNCTION_LINE, "32");
    statement(34, "Net.positions", "pos");
    fact(34, DT_FACT_FUNCTION_LINE, "32");
    statement(36, "Net", NULL);
    fact(36, DT_FACT_FUNCTION_LINE, "29");
    fact(36, DT_FACT_PARAMS, "self,ids");
    statement(37, "Net.ranks", "r");
    fact(37, DT_FACT_FUNCTION_LINE, "36");
    statement(40, "main", "dec");
    fact(40, DT_FACT_CALL_ARGS, "shift\tlabels\t0");
    statement(41, "main", "dec");
    fact(41, DT_FACT_CALL_ARGS, "shift\tx\t0");
    statement(42, "main", "dec");
    fact(42, DT_FACT_CALL_ARGS, "other\tlabels");
    statement(43, "Net.forward", "pos");
    fact(43, DT_FACT_CALL_ARGS, "self.positions\tlabels");
    statement(44, "Net.forward", "r");
    fact(44, DT_FACT_CALL_ARGS, "self.ranks\tlabels");
    int64_t at = py_frame(py_frame(0, "<module>", 50), "main", 40);
    tensor_made(1, 10, CUDA0, at); /* labels, on the device */
    tensor_made(2, 12, 0, at);     /* x, on the cpu */
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, pystack, nargs) VALUES(7, %lld, 100, %lld, 0)",
             (long long)string_id("embedding"), (long long)at);
    exec_sql(sql);
    named(1, 101, "labels");
    named(2, 102, "x");
    struct vw_case k;
    memset(&k, 0, sizeof k);
    k.seq = 110, k.op = 7;
    struct vw_step made;
    memset(&made, 0, sizeof made);
    made.site.python = 1;
    snprintf(made.site.file, sizeof made.site.file, "train.py");
    struct vw_frame caller = made.site;
    char p[64];
    made.site.line = 31;
    snprintf(made.site.function, sizeof made.site.function, "shift");
    caller.line = 40;
    ck_assert_str_eq(vw_fact_tensor_param(&model, &k, CUDA0, &made, &caller, p, sizeof p), "ids");
    ck_assert_str_eq(vw_fact_tensor_param(&model, &k, 0, &made, &caller, p, sizeof p), ""); /* not on the cpu */
    caller.line = 41; /* x: held on the cpu */
    ck_assert_str_eq(vw_fact_tensor_param(&model, &k, CUDA0, &made, &caller, p, sizeof p), "");
    caller.line = 42; /* a call of another function */
    ck_assert_str_eq(vw_fact_tensor_param(&model, &k, CUDA0, &made, &caller, p, sizeof p), "");
    /* self.positions(labels): the receiver is no positional argument; the method rebinds ids (line 33) before
     * it makes the tensor at 34, but not before 33 */
    snprintf(made.site.function, sizeof made.site.function, "Net.positions");
    caller.line = 43;
    made.site.line = 34;
    ck_assert_str_eq(vw_fact_tensor_param(&model, &k, CUDA0, &made, &caller, p, sizeof p), "");
    snprintf(made.site.function, sizeof made.site.function, "Net.ranks");
    caller.line = 44;
    made.site.line = 37;
    ck_assert_str_eq(vw_fact_tensor_param(&model, &k, CUDA0, &made, &caller, p, sizeof p), "ids");
    trace_close();
}
END_TEST

/* The tensors on a device the program held by a name at a mismatch (the names given after its op began), and
 * where each was made: what a fix follows when no operand of the failing op is in scope at its site. */
START_TEST(test_model_held_on) {
    trace_open();
    int64_t fwd = py_frame(py_frame(0, "<module>", 40), "Net.forward", 20);
    int64_t fwd_pos = py_frame(py_frame(0, "<module>", 40), "Net.forward", 21);
    int64_t helper = py_frame(py_frame(0, "<module>", 40), "helper", 8);
    tensor_made(1, 10, CUDA0, fwd);   /* h = self.embed(ids): on the device */
    tensor_made(2, 12, 0, fwd_pos);   /* pos = torch.arange(n): on the cpu */
    tensor_made(3, 14, CUDA0, helper); /* w, on the device, moved off it in place after */
    tensor_made(4, 16, CUDA0, helper); /* named before the mismatch's op only */
    transfer(18, 3, 3, DTP_TRANSFER_MOVE, "to", helper);
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, pystack, nargs) VALUES(7, %lld, 100, %lld, 0)",
             (long long)string_id("mul"), (long long)fwd);
    exec_sql(sql);
    named(4, 50, "early");
    named(1, 101, "h");
    named(2, 102, "pos");
    named(3, 103, "w");
    struct vw_case k;
    memset(&k, 0, sizeof k);
    k.seq = 110, k.op = 7;
    char names[8][128];
    struct vw_frame made[8];
    ck_assert_int_eq(vw_fact_held_on(&model, &k, CUDA0, names, made, 8), 1);
    ck_assert_str_eq(names[0], "h");
    ck_assert_str_eq(made[0].function, "Net.forward");
    ck_assert_int_eq(made[0].line, 20);
    ck_assert_int_eq(vw_fact_held_on(&model, &k, 0, names, made, 8), 1);
    ck_assert_str_eq(names[0], "pos");
    k.op = 0; /* no op: no names of its own */
    ck_assert_int_eq(vw_fact_held_on(&model, &k, CUDA0, names, made, 8), 0);
    trace_close();
}
END_TEST

/* A copy's uses before the failing op: an op of the failing statement itself is none (its result is on its way
 * into that statement), an op of another statement is one. */
START_TEST(test_model_used_in_failing_statement) {
    trace_open();
    statement(25, "bucket", "out");
    statement(24, "bucket", "log_pos");
    int64_t at25 = py_frame(py_frame(0, "<module>", 40), "bucket", 25);
    int64_t at24 = py_frame(py_frame(0, "<module>", 40), "bucket", 24);
    tensor_made(2, 10, 0, at24);
    char sql[320];
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, pystack, nargs, arg0_tensor, arg0_device, out0) "
             "VALUES(8, %lld, 60, %lld, 1, 2, 0, 9)", (long long)string_id("le"), (long long)at25);
    exec_sql(sql);
    struct vw_frame failing;
    memset(&failing, 0, sizeof failing);
    failing.python = 1, failing.line = 25;
    snprintf(failing.file, sizeof failing.file, "train.py");
    snprintf(failing.function, sizeof failing.function, "bucket");
    ck_assert_int_eq(vw_fact_used_between(&model, 2, 10, 100, 0, NULL, 0, &failing), 0);
    ck_assert_int_eq(vw_fact_used_between(&model, 2, 10, 100, 0, NULL, 0, NULL), 1); /* the statement not given */
    failing.line = 24; /* failing elsewhere: the comparison at 25 was a use of its own */
    ck_assert_int_eq(vw_fact_used_between(&model, 2, 10, 100, 0, NULL, 0, &failing), 1);
    trace_close();
}
END_TEST

/* A copy written into another tensor (state.copy_(copy): its source, position 1) is no use of the copy; the copy
 * as the destination (copy.copy_(x)) is one. */
START_TEST(test_model_copied_into_is_no_use) {
    trace_open();
    char sql[320];
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, nargs, arg0_tensor, arg0_device, arg1_tensor, "
             "arg1_device, out0) VALUES(8, %lld, 60, 2, 5, 1, 2, 0, 5)", (long long)string_id("copy_"));
    exec_sql(sql);
    ck_assert_int_eq(vw_fact_used_between(&model, 2, 10, 100, 0, NULL, 0, NULL), 0);
    ck_assert_int_eq(vw_fact_used_between(&model, 5, 10, 100, 0, NULL, 0, NULL), 0); /* it returned 5 itself */
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, nargs, arg0_tensor, arg0_device, arg1_tensor, "
             "arg1_device, out0) VALUES(9, %lld, 70, 2, 2, 0, 5, 1, 2)", (long long)string_id("copy_"));
    exec_sql(sql);
    ck_assert_int_eq(vw_fact_used_between(&model, 5, 10, 100, 0, NULL, 0, NULL), 0); /* 5 copied into 2 */
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, nargs, arg0_tensor, arg0_device, arg1_tensor, "
             "arg1_device, out0) VALUES(10, %lld, 80, 2, 2, 0, 5, 1, 11)", (long long)string_id("mul"));
    exec_sql(sql);
    ck_assert_int_eq(vw_fact_used_between(&model, 2, 10, 100, 0, NULL, 0, NULL), 1); /* a product is a use */
    ck_assert_int_eq(vw_fact_used_between(&model, 2, 10, 75, 0, NULL, 0, NULL), 0);  /* not before 75 */
    trace_close();
}
END_TEST

/* Tensor id made at event seq on the cpu by op `op` (named name) of tensors a0 and a1 (0: none), on the cpu. */
static void op_made(int64_t id, int64_t seq, int64_t op, const char *name, int64_t a0, int64_t a1) {
    char sql[400];
    snprintf(sql, sizeof sql, "INSERT INTO tensor_attrs(id, device, origin) VALUES(%lld, 0, %d)", (long long)id,
             DTP_ORIGIN_OP_OUTPUT);
    exec_sql(sql);
    snprintf(sql, sizeof sql, "INSERT INTO tensor_rows(id, seq, attrs, op) VALUES(%lld, %lld, %lld, %lld)",
             (long long)id, (long long)seq, (long long)id, (long long)op);
    exec_sql(sql);
    char second[32] = "NULL";
    if (a1) snprintf(second, sizeof second, "%lld", (long long)a1);
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, nargs, arg0_tensor, arg0_device, arg1_tensor, "
             "arg1_device) VALUES(%lld, %lld, %lld, %d, %lld, 0, %s, 0)", (long long)op, (long long)string_id(name),
             (long long)seq, a1 ? 2 : 1, (long long)a0, second);
    exec_sql(sql);
}

/* Two comparisons of one range added (a window mask's region: (h >= a).long() + (h >= b).long()) combine one
 * tensor, not two; an op of that sum and another factory's tensor combines two. The range feeds only the sum until
 * another op takes it. */
START_TEST(test_model_combined_from_one_tensor) {
    trace_open();
    tensor_made(2, 10, 0, 0);
    op_made(3, 20, 20, "ge", 2, 0);
    op_made(4, 21, 21, "ge", 2, 0);
    op_made(5, 22, 22, "add", 3, 4);
    struct vw_step s = py_step(5, 0, DTP_ORIGIN_OP_OUTPUT, "add", 5, 22);
    ck_assert_int_eq(vw_fact_combined(&model, &s), 1);
    tensor_made(6, 23, 0, 0);
    op_made(7, 24, 24, "add", 5, 6);
    s = py_step(7, 0, DTP_ORIGIN_OP_OUTPUT, "add", 5, 24);
    ck_assert_int_eq(vw_fact_combined(&model, &s), 2);
    s = py_step(5, 0, DTP_ORIGIN_OP_OUTPUT, "stack", 5, 22); /* a batch stacked from one tensor's rows: made there */
    ck_assert_int_eq(vw_fact_combined(&model, &s), 2);
    ck_assert(vw_fact_feeds_only(&model, 2, 5, 100));
    op_made(8, 30, 30, "mul", 2, 0); /* the range used for something else too */
    ck_assert(!vw_fact_feeds_only(&model, 2, 5, 100));
    ck_assert(vw_fact_feeds_only(&model, 2, 5, 30)); /* not before event 30 */
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
    /* the facts give no device expression of the program; the peer x, bound there, lends its device */
    ck_assert_str_eq(fx.code, "labels = labels.to(x.device)");
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

/* Adam's exp_avg (tensor 31, named state_name), made on the cpu by the first step at event 10; model.to(device)
 * moved the parameter (tensor 30, named param_name unless NULL) in place at event move_seq. */
static void state_case(const char *state_name, const char *param_name, int64_t move_seq) {
    struct vw_step s = py_step(31, 0, DTP_ORIGIN_FACTORY, "zeros_like", 14, 10);
    case_of(state_name, &s, 1);
    if (param_name) named(30, 5, param_name);
    transfer(move_seq, 30, 30, DTP_TRANSFER_MOVE, "Net.to", 0);
}

/* The producer's fact (schema 11, dtp_tensor_role): tensor `state` is the optimizer's state of parameter `of`. */
static void state_role(int64_t state, int64_t of) {
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO roles(seq, tensor, role, of_tensor, key) VALUES(12, %lld, %d, %lld, %lld)",
             (long long)state, DTP_ROLE_OPTIMIZER_STATE, (long long)of, (long long)string_id("exp_avg"));
    exec_sql(sql);
}

START_TEST(test_optimizer_state_left_behind) {
    trace_open();
    state_case("exp_avg", "fc.weight", 40); /* a state's name is for people: the role decides */
    state_role(31, 30);
    struct vw_fix fx;
    diagnose(&fx, "optimizer-state-left-behind");
    ck_assert_int_eq(fx.site.seq, 40);
    ck_assert_int_eq(fx.words.say, VW_SAY_STATE_MOVE_MODEL);
    ck_assert_str_eq(fx.words.name, "fc.weight");
    ck_assert(strstr(fx.text, "next to its parameter \"fc.weight\", which was then moved to cuda:0 here"));
    ck_assert_str_eq(fx.evidence[0], "\"exp_avg\" is optimizer state of parameter \"fc.weight\"");
    trace_close();
    /* a parameter the program never named: said so, never by the trace's id */
    trace_open();
    state_case("exp_avg", NULL, 40);
    state_role(31, 30);
    diagnose(&fx, "optimizer-state-left-behind");
    ck_assert_str_eq(fx.words.name, "(unnamed)");
    trace_close();
    /* the state of another parameter (32), never moved: the move of tensor 30 left nothing of it behind */
    trace_open();
    state_case("exp_avg", "fc.weight", 40);
    state_role(31, 32);
    diagnose(&fx, "never-moved");
    trace_close();
    /* named as the runtime names a state, no role: since schema 11 the name alone is no optimizer state */
    trace_open();
    state_case(DT_NAME_OPTIMIZER_STATE "fc.weight.exp_avg", "fc.weight", 40);
    diagnose(&fx, "never-moved");
    trace_close();
    /* the parameter moved before the state was made: the state was made where it is, not left behind */
    trace_open();
    state_case("exp_avg", "fc.weight", 8);
    state_role(31, 30);
    diagnose(&fx, "never-moved");
    trace_close();
}
END_TEST

/* A trace older than schema 11 (no roles table): the state's name, the fallback, says whose state it is. */
START_TEST(test_optimizer_state_by_name) {
    trace_open_version(10);
    state_case(DT_NAME_OPTIMIZER_STATE "fc.weight.exp_avg", "fc.weight", 40);
    struct vw_fix fx;
    diagnose(&fx, "optimizer-state-left-behind");
    ck_assert_int_eq(fx.site.seq, 40);
    ck_assert_int_eq(fx.words.say, VW_SAY_STATE_MOVE_MODEL);
    ck_assert_str_eq(fx.words.name, "fc.weight");
    ck_assert(strstr(fx.text, "next to its parameter \"fc.weight\", which was then moved to cuda:0 here"));
    ck_assert_str_eq(fx.evidence[0], "\"" DT_NAME_OPTIMIZER_STATE "fc.weight.exp_avg\" is optimizer state of parameter "
                                     "\"fc.weight\"");
    trace_close();
    /* another name: no state */
    trace_open_version(10);
    state_case("exp_avg", "fc.weight", 40);
    diagnose(&fx, "never-moved");
    trace_close();
    /* the parameter moved before the state was made */
    trace_open_version(10);
    state_case(DT_NAME_OPTIMIZER_STATE "fc.weight.exp_avg", "fc.weight", 8);
    diagnose(&fx, "never-moved");
    trace_close();
}
END_TEST

/* ---------------------------------------------------------------- the rules the tests above leave out */

/* x = batch[0].to(device) at line 12 of a tensor made on line 10 with the odd one, which the program holds by no
 * name of its own (batch[1]); the sibling made on line `sibling_line`. */
static void sibling_case(int sibling_line) {
    int64_t made_at = py_frame(0, "main", 10), sib_at = py_frame(0, "main", sibling_line),
            moved_at = py_frame(0, "main", 12);
    struct vw_step s = in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "collate", 10, 10), "main", made_at);
    case_of("", &s, 1);
    tensor_made(3, 11, 0, sib_at);
    named(3, 13, "x");
    transfer(15, 3, 4, DTP_TRANSFER_TO, DT_METHOD_MOVE_TO, moved_at);
}

START_TEST(test_sibling_moved) {
    trace_open();
    sibling_case(10);
    struct vw_fix fx;
    diagnose(&fx, "sibling-moved");
    ck_assert_int_eq(fx.kind, VW_FIX_ADVICE); /* no name to move it by */
    ck_assert_int_eq(fx.site.seq, 15);        /* beside the sibling's move */
    ck_assert_int_eq(fx.site.site.line, 12);
    ck_assert_int_eq(fx.words.say, VW_SAY_SIBLING_MOVED);
    ck_assert_str_eq(fx.words.name2, "\"x\"");
    ck_assert_int_eq(fx.words.at.site.line, 10);
    ck_assert_str_eq(fx.evidence[0], "made on one line with \"x\", which the program moved to cuda:0");
    trace_close();
    /* the tensor the program moved was made on another line: nothing made with the odd one was moved */
    trace_open();
    sibling_case(11);
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 10);
    trace_close();
}
END_TEST

/* def load(path, device="cpu"): x = torch.tensor(...) at line 5, x = x.to(device) at line 6 (a move that moved
 * nothing); main calls data = load("cora") at line 30, its call's arguments as `call` writes them. */
static void device_default_case(const char *call) {
    int64_t main_at = py_frame(0, "main", 30), move_at = py_frame(main_at, "load", 6);
    statement(4, "<module>", NULL);
    fact(4, DT_FACT_DEFAULTS, "device=\"cpu\"");
    statement(5, "load", "x");
    statement(6, "load", "x");
    fact(6, DT_FACT_FUNCTION_LINE, "4");
    fact(6, DT_FACT_DEVICE_EXPR, "device");
    statement(30, "main", "data");
    fact(30, DT_FACT_CALL, call);
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO ops(op, name, seq, pystack, nargs, arg0_tensor, out0) VALUES(1, %lld, 60, "
             "%lld, 1, 2, 2)", (long long)string_id(DT_METHOD_MOVE_TO), (long long)move_at);
    exec_sql(sql);
    struct vw_step s = in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "tensor", 5, 10), "load", 0);
    case_of("x", &s, 1);
}

START_TEST(test_device_argument_default) {
    trace_open();
    device_default_case("load\t\t0\t30\t22\t1");
    struct vw_fix fx;
    diagnose(&fx, "device-argument-default");
    ck_assert_int_eq(fx.kind, VW_FIX_PASS_DEVICE);
    ck_assert_int_eq(fx.site.site.line, 30); /* the call, not the helper's move */
    ck_assert_str_eq(fx.site.site.function, "main");
    ck_assert(fx.replace);
    ck_assert_int_eq(fx.nedits, 1);
    ck_assert(fx.edits[0].line == 30 && fx.edits[0].col == 21 && fx.edits[0].del == 0);
    ck_assert_str_eq(fx.edits[0].text, ", device=\"cuda:0\"");
    ck_assert_str_eq(fx.code, "load(..., device=\"cuda:0\")");
    ck_assert_str_eq(fx.words.text, "\"cpu\""); /* the default it fell back on */
    ck_assert_int_eq(fx.words.frame2.line, 6);
    trace_close();
    /* the call passes a device already (the cpu, on purpose): no argument left to pass */
    trace_open();
    device_default_case("load\tdevice\t0\t30\t36\t1");
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 5);
    trace_close();
}
END_TEST

/* weight = inverse_frequency(labels) at line 30 of main (binding `bound`); the helper made it at line 5 and
 * returned it. A loop header (for weight in ...:) when loop. */
static void callee_case(const char *bound, int loop) {
    int64_t main_at = py_frame(0, "main", 30), made_at = py_frame(main_at, "inverse_frequency", 5);
    statement(5, "inverse_frequency", NULL); /* return 1.0 / counts */
    statement(30, "main", bound);
    if (loop) {
        fact(30, DT_FACT_OPENS, "1");
        fact(30, DT_FACT_LOOP, "30 34 ");
    }
    struct vw_step s = in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "ones", 5, 10), "inverse_frequency", made_at);
    case_of("weight", &s, 1);
}

START_TEST(test_made_in_callee) {
    trace_open();
    callee_case("weight", 0);
    struct vw_fix fx;
    diagnose(&fx, "made-in-callee");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_AFTER);
    ck_assert_int_eq(fx.site.site.line, 30); /* where the caller binds it, not in the helper */
    ck_assert_str_eq(fx.site.site.function, "main");
    ck_assert_str_eq(fx.code, "weight = weight.to(\"cuda:0\")");
    ck_assert_str_eq(fx.evidence[1], "made in inverse_frequency, which returned it to main");
    trace_close();
    /* the caller binds the result to another name: the helper's value is not what the program holds by it */
    trace_open();
    callee_case("w", 0);
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 5);
    trace_close();
}
END_TEST

/* mask = self._make_mask(n) at line 30 of Net.forward(self, PARAMS30); the method (def line 4, parameters
 * PARAMS4) made the mask inside its return statement at line 5 with torch.ones and returned torch.triu's result. */
static void call_site_case(const char *params4) {
    int64_t fwd = py_frame(0, "Net.forward", 30), made_at = py_frame(fwd, "Net._make_mask", 5);
    statement(4, "Net", NULL);
    fact(4, DT_FACT_PARAMS, params4);
    statement(5, "Net._make_mask", NULL);
    fact(5, DT_FACT_FUNCTION_LINE, "4");
    fact(5, DT_FACT_RETURNS, "1");
    fact(5, DT_FACT_CALL, "torch.triu\t\t0\t5\t60\t1");
    fact(5, DT_FACT_CALL, "torch.ones\t\t1\t5\t40\t1");
    statement(28, "Net", NULL);
    fact(28, DT_FACT_PARAMS, "self,x");
    statement(30, "Net.forward", "mask");
    fact(30, DT_FACT_FUNCTION_LINE, "28");
    fact(30, DT_FACT_CALL, "self._make_mask\t\t0\t30\t44\t1");
    struct vw_step chain[2] = {
        in_function(py_step(3, 0, DTP_ORIGIN_OP_OUTPUT, "triu", 5, 11), "Net._make_mask", made_at),
        in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "ones", 5, 10), "Net._make_mask", made_at),
    };
    chain[0].from = 2;
    case_of("mask", chain, 2);
}

/* A tensor made by a method that has no device of its own to follow (only a size), inside its return: .to() on
 * the method's call in the caller, by the peer bound there (x, the forward's parameter), never a literal in the
 * method; with a peer bound in the method too, device= at the factory there. */
START_TEST(test_move_at_call_site) {
    trace_open();
    call_site_case("self,sz");
    struct vw_fix fx;
    diagnose(&fx, "temporary-in-expression");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_CALL);
    ck_assert_str_eq(fx.site.site.function, "Net.forward");
    ck_assert_int_eq(fx.site.site.line, 30);
    ck_assert_int_eq(fx.nedits, 1);
    ck_assert(fx.edits[0].line == 30 && fx.edits[0].col == 44);
    ck_assert_str_eq(fx.edits[0].text, ".to(x.device)");
    ck_assert_str_eq(fx.code, "self._make_mask(...).to(x.device)");
    ck_assert_str_eq(fx.text, "move \"mask\" to cuda:0 where train.py:30 calls self._make_mask: Net._make_mask made "
                              "it at line 5 with no tensor or device of its own to follow, the caller has x.device: "
                              "self._make_mask(...).to(x.device)");
    trace_close();
    /* the method has the peer too (a parameter x): made there on its device */
    trace_open();
    call_site_case("self,sz,x");
    diagnose(&fx, "temporary-in-expression");
    ck_assert_int_eq(fx.kind, VW_FIX_DEVICE_ARG);
    ck_assert_int_eq(fx.site.site.line, 5);
    ck_assert_str_eq(fx.edits[0].text, ", device=x.device");
    trace_close();
}
END_TEST

START_TEST(test_loader_batch) {
    trace_open();
    callee_case("weight,y", 1); /* for weight, y in loader: */
    struct vw_fix fx;
    diagnose(&fx, "loader-batch");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_AFTER);
    ck_assert_int_eq(fx.site.site.line, 30); /* in the loop that receives it */
    ck_assert_str_eq(fx.code, "weight = weight.to(\"cuda:0\")");
    ck_assert(strstr(fx.text, "in the loop that receives it (train.py:30)"));
    trace_close();
    /* the same statement, no loop's header: a callee's value, not a batch */
    trace_open();
    callee_case("weight,y", 0);
    diagnose(&fx, "made-in-callee");
    trace_close();
}
END_TEST

/* ids = torch.tensor(...) at line 5 of collate, which the loader (library code) called from main's loop at
 * line 30 (that binds `batch`); through the library when via_library, else called by main itself. */
static void callback_case(int via_library) {
    int64_t at = py_frame(0, "main", 30);
    if (via_library)
        at = py_frame_in(at, "/usr/lib/python3/site-packages/torch/utils/data/fetch.py", "fetch", 52);
    int64_t made_at = py_frame(at, "collate", 5);
    statement(5, "collate", "ids");
    statement(30, "main", "batch");
    struct vw_step s = in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "tensor", 5, 10), "collate", made_at);
    case_of("input_ids", &s, 1);
}

START_TEST(test_library_callback) {
    trace_open();
    callback_case(1);
    struct vw_fix fx;
    diagnose(&fx, "library-callback");
    ck_assert_int_eq(fx.kind, VW_FIX_ADVICE); /* the loop binds no name it goes by */
    ck_assert_int_eq(fx.site.site.line, 30);  /* where it comes back to the program, not in collate */
    ck_assert_str_eq(fx.site.site.function, "main");
    ck_assert_str_eq(fx.evidence[1], "made in collate, called back by library code");
    trace_close();
    /* collate called by the program itself: no callback */
    trace_open();
    callback_case(0);
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 5);
    trace_close();
}
END_TEST

/* x, y = make(...) at line 5 of make_batch, then x = x.to(device) at line 6; the odd one is y. The moved x
 * made in make_batch when own, else in another function (and moved there by its own .to). */
static void moved_with_others_case(int own) {
    int64_t main_at = py_frame(0, "main", 30), made_at = py_frame(main_at, "make_batch", 5);
    int64_t x_at = own ? made_at : py_frame(main_at, "other", 8);
    int64_t moved_at = py_frame(main_at, own ? "make_batch" : "other", own ? 6 : 9);
    statement(5, "make_batch", "x,y");
    statement(6, "make_batch", "x");
    tensor_made(3, 11, 0, x_at);
    transfer(15, 3, 4, DTP_TRANSFER_TO, DT_METHOD_MOVE_TO, moved_at);
    struct vw_step s = in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "tensor", 5, 10), "make_batch", made_at);
    case_of("y", &s, 1);
}

START_TEST(test_moved_with_others) {
    trace_open();
    moved_with_others_case(1);
    struct vw_fix fx;
    diagnose(&fx, "moved-with-others");
    ck_assert_int_eq(fx.kind, VW_FIX_MOVE_AFTER);
    ck_assert_int_eq(fx.site.seq, 15); /* after the program's move of x */
    ck_assert_int_eq(fx.site.site.line, 6);
    ck_assert_str_eq(fx.code, "y = y.to(x.device)"); /* the moved peer x, bound at line 6 */
    ck_assert_str_eq(fx.evidence[1], "the program moved tensors made in make_batch to cuda:0, not this one");
    trace_close();
    /* the program moved a tensor made elsewhere, by a tensor's own .to: nothing made with it */
    trace_open();
    moved_with_others_case(0);
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 5);
    trace_close();
}
END_TEST

/* self.scale = torch.tensor(2.0) at line 5 of Net.__init__, a plain attribute; the module's weight, made at
 * line 4 of it, moved in place by model.to(device) at line 31 of main at event move_seq. */
static void plain_attribute_case(int64_t move_seq) {
    int64_t main_at = py_frame(0, "main", 30), made_at = py_frame(main_at, "Net.__init__", 5),
            weight_at = py_frame(main_at, "Net.__init__", 4), moved_at = py_frame(0, "main", 31);
    statement(5, "Net.__init__", NULL);
    fact(5, DT_FACT_BINDS_ATTR, "self.scale");
    tensor_made(3, 8, 0, weight_at);
    transfer(move_seq, 3, 3, DTP_TRANSFER_MOVE, "Net.to", moved_at);
    struct vw_step s = in_function(py_step(2, 0, DTP_ORIGIN_FACTORY, "tensor", 5, 10), "Net.__init__", made_at);
    case_of("model.scale", &s, 1);
}

START_TEST(test_plain_attribute) {
    trace_open();
    plain_attribute_case(40);
    struct vw_fix fx;
    diagnose(&fx, "plain-attribute");
    ck_assert_int_eq(fx.kind, VW_FIX_REGISTER_BUFFER);
    ck_assert_int_eq(fx.site.site.line, 5); /* registered before the statement that sets it */
    ck_assert(fx.before);
    ck_assert_str_eq(fx.code, "self.register_buffer(\"scale\", None)");
    ck_assert(strstr(fx.text, "register self.scale as a buffer of its module"));
    ck_assert(strstr(fx.text, "moving the module at train.py:31"));
    trace_close();
    /* the module was moved before the attribute was made: its move left nothing behind */
    trace_open();
    plain_attribute_case(9);
    diagnose(&fx, "never-moved");
    ck_assert_int_eq(fx.site.site.line, 5);
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
    tcase_add_test(tc, test_model_typed_source_facts);
    tcase_add_test(tc, test_model_device_param);
    tcase_add_test(tc, test_model_tensor_param);
    tcase_add_test(tc, test_model_held_on);
    tcase_add_test(tc, test_model_used_in_failing_statement);
    tcase_add_test(tc, test_model_copied_into_is_no_use);
    tcase_add_test(tc, test_model_combined_from_one_tensor);
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
    tcase_add_test(tc, test_optimizer_state_by_name);
    tcase_add_test(tc, test_sibling_moved);
    tcase_add_test(tc, test_device_argument_default);
    tcase_add_test(tc, test_made_in_callee);
    tcase_add_test(tc, test_move_at_call_site);
    tcase_add_test(tc, test_loader_batch);
    tcase_add_test(tc, test_library_callback);
    tcase_add_test(tc, test_moved_with_others);
    tcase_add_test(tc, test_plain_attribute);
    tcase_add_test(tc, test_fix_words);
    tcase_add_test(tc, test_device_expr_in_program_terms);
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
