/* Unit tests of viewer/validate.c: the shapes a source fact may have (each producer's own examples accepted,
 * the same facts with code injected refused) and the shapes of the code a fix writes. Its own runner (ctest
 * `validate`): it links only validate.c. */
#include <check.h>
#include <stdlib.h>

#include "trace_schema.h"
#include "validate.h"

static const struct {
    const char *key, *value;
    int ok;
} facts[] = {
    /* what the producers write (docs/source-facts.md's examples, source.py's and cfacts.c's shapes) */
    {DT_FACT_SHA256, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 1},
    {DT_FACT_LINES, "39", 1},
    {DT_FACT_STMT, "13 14", 1},
    {DT_FACT_BLOCK, "23 33", 1},
    {DT_FACT_LOOP, "23 33             ", 1},
    {DT_FACT_LOOP, "16 22 \t", 1},
    {DT_FACT_LOOP, "16 22", 1},
    {DT_FACT_INDENT, "        ", 1},
    {DT_FACT_INDENT, "\t\t", 1},
    {DT_FACT_INDENT, "", 1},
    {DT_FACT_BODY_INDENT, "\f    ", 1},
    {DT_FACT_LANG, "c++", 1},
    {DT_FACT_FUNCTION, "outer.<locals>.inner", 1},
    {DT_FACT_FUNCTION, "<module>", 1},
    {DT_FACT_FUNCTION_LINE, "12", 1},
    {DT_FACT_BINDS, "inputs,labels", 1},
    {DT_FACT_BINDS, "données", 1},
    {DT_FACT_BINDS_KIND, "unpack", 1},
    {DT_FACT_BINDS_ATTR, "self.pe,self.bias", 1},
    {DT_FACT_BINDS_ATTR, "self->scale", 1},
    {DT_FACT_ATTR_FROM, "pe", 1},
    {DT_FACT_DEVICE_VAR, "self.device", 1},
    {DT_FACT_MODULE_VAR, "model,fc->", 1},
    {DT_FACT_MOVE_WRAP, "must", 1},
    {DT_FACT_MOVE_WRAP, "-", 1},
    {DT_FACT_DEVICE_EXPR, "torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")", 1},
    {DT_FACT_DEVICE_EXPR, "f\"cuda:{rank}\"", 1},
    {DT_FACT_DEVICE_EXPR, "\"a;b\"", 1}, /* a `;` inside a literal */
    {DT_FACT_RETURN_VALUE, "self.emb(torch.arange(x.size(1), device=x.device)) + mask", 1},
    {DT_FACT_DEFAULTS, "path='./cora'\tdevice='cpu'", 1},
    {DT_FACT_PARAMS, "self,x,mask", 1},
    {DT_FACT_CALL, "self.make_mask\tx.device\t0\t14\t46\t1", 1},
    {DT_FACT_CALL, "torch::tensor({0.5, 0.5}, torch::kFloat).view\t\t1\t24\t57\t1\t0", 1},
    {DT_FACT_CALL_ARGS, "dt_to\tbatch[0]\tdev", 1},
    {DT_FACT_SETATTR, "self\tk\tv", 1},
    {DT_FACT_SETATTR, "self\t\"scale\"\ttorch.ones(n)", 1},
    {DT_FACT_SETATTR, "self\tk", 0},
    {DT_FACT_SETATTR, "self\t\tv", 0},
    {DT_FACT_SETATTR, "self\tk\tv\tw", 0},
    {DT_FACT_SETATTR, "self\tk\tv\t1", 1}, /* since schema 13: whether OBJ is the method's receiver */
    {DT_FACT_SETATTR, "obj\tk\tv\t0", 1},
    {DT_FACT_DEVICE_ARG, "mel_filters\t#0", 1}, /* since schema 14: a call hands a function a device */
    {DT_FACT_MODULE_CLASS, "1", 1},              /* since schema 15: a method's class is a module */
    {DT_FACT_MODULE_CLASS, "nn.Module", 0},
    {DT_FACT_DEVICE_ARG, "self.make_mask\tdevice", 1},
    {DT_FACT_DEVICE_ARG, "mel_filters\t#", 0},
    {DT_FACT_DEVICE_ARG, "mel_filters\t#1234", 0},
    {DT_FACT_DEVICE_ARG, "mel_filters\t#-1", 0},
    {DT_FACT_DEVICE_ARG, "mel_filters", 0},
    {DT_FACT_DEVICE_ARG, "\tdevice", 0},
    {DT_FACT_DEVICE_ARG, "f\tdevice\tx", 0},
    {DT_FACT_DEVICE_ARG, "f\tdev ice", 0},
    {DT_FACT_DEVICE_ARG, "f\nimport os\tdevice", 0},
    {DT_FACT_SETATTR, "self\tk\tv\t2", 0},
    {DT_FACT_SETATTR, "self\tk\tv\t", 0},
    {DT_FACT_SETATTR, "self\tk\t\t1", 0},
    {DT_FACT_SETATTR, "self\tk\tv\t1\t1", 0},
    {DT_FACT_SETATTR, "self\tk\tv; import os", 0},
    {DT_FACT_CALL_ARGS, "std::for_each\tv.begin()\t[](int x) { f(x); }", 1},
    {"a_key_the_viewer_does_not_read", "anything;at all\n", 1},
    /* the same facts with code in them, or of no producer's shape */
    {DT_FACT_SHA256, "", 0},
    {DT_FACT_SHA256, "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08", 0},
    {DT_FACT_LINES, "-1", 0},
    {DT_FACT_STMT, "13", 0},
    {DT_FACT_STMT, "13 14 15", 0},
    {DT_FACT_LOOP, "16 22 x", 0},
    {DT_FACT_INDENT, "        import os;os.system('touch /tmp/x')\n        ", 0},
    {DT_FACT_INDENT, "\n", 0},
    {DT_FACT_BODY_INDENT, "    x", 0},
    {DT_FACT_LANG, "python", 0},
    {DT_FACT_FUNCTION, "f\x1b[2J", 0},
    {DT_FACT_BINDS, "labels;import os", 0},
    {DT_FACT_BINDS, "labels,", 0},
    {DT_FACT_BINDS, "1abc", 0},
    {DT_FACT_PARAMS, "self,x.device", 0},
    {DT_FACT_PARAMS, "self,x=1", 0},
    {DT_FACT_BINDS, "a\xe2\x80\xae" "b", 0}, /* a bidi override inside a name */
    {DT_FACT_BINDS_ATTR, "self.x=1", 0},
    {DT_FACT_DEVICE_VAR, "device=os.system('x')", 0},
    {DT_FACT_MODULE_VAR, "model);system(\"x\");(", 0},
    {DT_FACT_MOVE_WRAP, "must(0));system(\"x\");(must", 0},
    {DT_FACT_DEVICE_EXPR, "device);import os;os.system('x');(device", 0},
    {DT_FACT_DEVICE_EXPR, "device\nimport os", 0},
    {DT_FACT_DEFAULTS, "device='cpu';import os", 0},
    {DT_FACT_DEFAULTS, "1x=2", 0},
    {DT_FACT_CALL, "inputs.to(device);os.system('x');inputs.to\tdevice\t0\t17\t34\t1\t0", 0},
    {DT_FACT_CALL, "x.to\tdevice\t0\t17\t34", 0},
    {DT_FACT_CALL, "x.to\tdevice\t2\t17\t34\t1", 0},
    {DT_FACT_CALL, "x.to\tdevice\t0\t17\t-3\t1", 0},
    {DT_FACT_CALL_ARGS, "dt_to\tbatch[0]\tdev\nsystem(\"x\")", 0},
};

START_TEST(test_fact_shapes) {
    const char *why = NULL;
    int ok = vw_fact_shape(facts[_i].key, facts[_i].value, &why);
    ck_assert_msg(ok == facts[_i].ok, "fact %d (%s): %s, expected %s (%s)", _i, facts[_i].key,
                  ok ? "accepted" : "refused", facts[_i].ok ? "accepted" : "refused", why ? why : "");
    if (!ok) ck_assert_msg(why && why[0], "fact %d refused without saying why", _i);
}
END_TEST

START_TEST(test_names_and_devices) {
    ck_assert(vw_shape_ident("labels") && vw_shape_ident("_x1") && !vw_shape_ident("") && !vw_shape_ident("a b"));
    ck_assert(vw_shape_member("args.device", 0) && !vw_shape_member("self->x", 0) && vw_shape_member("self->x", 1));
    ck_assert(!vw_shape_member("a.", 1) && !vw_shape_member(".a", 1) && !vw_shape_member("a..b", 1));
    ck_assert(vw_shape_device_literal("\"cuda:1\"") && vw_shape_device_literal("'cpu'"));
    ck_assert(!vw_shape_device_literal("\"cuda:1'") && !vw_shape_device_literal("\"cuda:x\"") &&
              !vw_shape_device_literal("\"a;b\""));
    ck_assert(vw_shape_device_code("device") && vw_shape_device_code("x.device") && vw_shape_device_code("0"));
    ck_assert(vw_shape_device_code("gpus[0]") && vw_shape_device_code("args.devs[rank]"));
    ck_assert(!vw_shape_device_code("gpus[0") && !vw_shape_device_code("gpus[f(x)]") && !vw_shape_device_code("a[]"));
    ck_assert(!vw_shape_device_code("torch.device('cuda')") && !vw_shape_device_code("__import__('os')"));
    /* a native peer's device: C++'s x.device(), C's dt_device_of(x); nothing else inside */
    ck_assert(vw_shape_device_code("image.device()") && vw_shape_device_code("dt_device_of(x)"));
    ck_assert(!vw_shape_device_code("f(x).device()") && !vw_shape_device_code("dt_device_of(f(x))") &&
              !vw_shape_device_code(".device()") && !vw_shape_device_code("dt_device_of()") &&
              !vw_shape_device_code("dt_device_of(x);system(y)"));
    /* a guard: members, torch.cuda.is_available() and device_count(), literals, not/and/or/is, comparisons */
    ck_assert(vw_shape_guard("use_cuda") && vw_shape_guard("args.cuda and torch.cuda.is_available()") &&
              vw_shape_guard("not args.no_cuda") && vw_shape_guard("args.gpu is not None") &&
              vw_shape_guard("torch.cuda.device_count() > 1") && vw_shape_guard("args.device == \"cuda\"") &&
              vw_shape_guard("(a or b) and not c") && vw_shape_guard("self.use_gpu"));
    ck_assert(!vw_shape_guard("") && !vw_shape_guard("os.system()") && !vw_shape_guard("f(x)") &&
              !vw_shape_guard("__import__(\"os\")") && !vw_shape_guard("a b") && !vw_shape_guard("a and") &&
              !vw_shape_guard("and a") && !vw_shape_guard("a not b") && !vw_shape_guard("(a") &&
              !vw_shape_guard("a)") && !vw_shape_guard("x := 1") && !vw_shape_guard("a; b") &&
              !vw_shape_guard("lambda: 1") && !vw_shape_guard("a[0]") && !vw_shape_guard("\"a b\""));
    ck_assert(vw_shape_callee("torch.zeros") && vw_shape_callee("torch::randn") && vw_shape_callee("fc->to"));
    ck_assert(!vw_shape_callee("__import__('os').system") && !vw_shape_callee("f;g"));
}
END_TEST

START_TEST(test_code_shapes) {
    const char *why = NULL, *texts[2] = {", device=device", ".to(\"cuda:0\")"}, *none[1] = {""};
    int dels[2] = {0, 0}, six[1] = {6}, seven[1] = {7};
    /* what the rules write (code, replace, python, edits) */
    ck_assert(vw_fix_code_shape("labels = labels.to(device)", 0, 1, NULL, NULL, 0, &why));
    ck_assert(vw_fix_code_shape("labels = must(dt_to(labels, dev));", 0, 0, NULL, NULL, 0, &why));
    ck_assert(vw_fix_code_shape("dt_state_dict *opt_state = dt_optimizer_state_dict(opt);\n"
                                "if (opt_state) dt_optimizer_load_state_dict(opt, opt_state), "
                                "dt_state_dict_free(opt_state);",
                                0, 0, NULL, NULL, 0, &why));
    ck_assert(vw_fix_code_shape("del self.bias\nself.register_buffer(\"bias\", None)", 0, 1, NULL, NULL, 0, &why));
    ck_assert(vw_fix_code_shape("torch.zeros(..., device=device)", 1, 1, texts, dels, 1, &why));
    ck_assert(vw_fix_code_shape("x.cpu() -> x", 1, 1, none, six, 1, &why));
    ck_assert(vw_fix_code_shape("self.embed(tokens).cpu() -> self.embed(tokens)", 1, 1, none, six, 1, &why));
    ck_assert(!vw_fix_code_shape("self.embed(tokens).cpu() -> self.other(tokens)", 1, 1, none, six, 1, &why));
    ck_assert(!vw_fix_code_shape("f(x; y).cpu() -> f(x; y)", 1, 1, none, six, 1, &why));
    ck_assert(vw_fix_code_shape("Layer(...).to(\"cuda:0\")", 1, 1, texts + 1, dels, 1, &why));
    ck_assert(vw_fix_code_shape("torch::randn(..., device)", 1, 0, texts, dels, 2, &why));
    /* a move under the program's own condition (the .cuda() idiom) */
    ck_assert(vw_fix_code_shape("if args.cuda: model = model.cuda()", 0, 1, NULL, NULL, 0, &why));
    ck_assert(vw_fix_code_shape("if use_cuda and not args.cpu: x = x.cuda()\nif use_cuda: y = y.cuda()", 0, 1, NULL,
                                NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("if args.cuda: import os", 0, 1, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("if f(x): model = model.cuda()", 0, 1, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("if a: if b: x = x.cuda()", 0, 1, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("if a:x = x.cuda()", 0, 1, NULL, NULL, 0, &why));
    /* code no rule writes */
    ck_assert(!vw_fix_code_shape("labels = labels.to(device)\nimport os", 0, 1, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("labels = labels.to(device); os.system('x')", 0, 1, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("exec x", 0, 0, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("x = f(\"a b\")", 0, 0, NULL, NULL, 0, &why)); /* a string of other characters */
    ck_assert(!vw_fix_code_shape("x = f(y", 0, 0, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("x = y # z", 0, 1, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("\n", 0, 0, NULL, NULL, 0, &why));
    ck_assert(!vw_fix_code_shape("__import__('os').system('x').zeros(..., device=device)", 1, 1, texts, dels, 1,
                                 &why));
    ck_assert(!vw_fix_code_shape("torch.zeros(..., device=device)", 1, 1, (const char *[]){", x;y"}, dels, 1, &why));
    ck_assert(!vw_fix_code_shape("torch.zeros(..., device=device)", 1, 1, (const char *[]){"\nimport os"}, dels, 1,
                                 &why));
    ck_assert(!vw_fix_code_shape("torch.zeros(..., device=device)", 1, 1, texts, seven, 1, &why));
    ck_assert(!vw_fix_code_shape("torch.zeros(..., device=device)", 1, 1, texts, dels, 0, &why));
}
END_TEST

int main(void) {
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("shapes");
    tcase_add_loop_test(tc, test_fact_shapes, 0, (int)(sizeof facts / sizeof facts[0]));
    tcase_add_test(tc, test_names_and_devices);
    tcase_add_test(tc, test_code_shapes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
