/* The registry of the diagnosis's rules: every rule of viewer/rules/, in the order they are tried (the
 * first that fits decides), and the diagnosis that tries them. `devtrace rules`, README's rule table,
 * docs/rules.md and the rule fixtures' tests (rule-<id>) all come from this list. Adding a rule is its file
 * (viewer/rules/<id>.c, defining vw_rule_<id>), its row below and its fixture (tests/rules/<id>.py). */
#include "rule.h"
#include "validate.h"

/* One row per rule, in priority order: the specific mechanisms first, the never-moved family last (its
 * members exclude each other: one analysis decides which of them explains a case, unmoved.c). */
#define VW_RULE_LIST(X)                                                                                                \
    X(optimizer_state_left_behind)                                                                                     \
    X(made_before_source_moved)                                                                                        \
    X(checkpoint_map_location)                                                                                         \
    X(peer_moved_from_same_source)                                                                                     \
    X(input_not_moved)                                                                                                 \
    X(sibling_moved)                                                                                                   \
    X(copied_off_device)                                                                                               \
    X(temporary_in_expression)                                                                                         \
    X(device_argument_default)                                                                                         \
    X(never_moved)                                                                                                     \
    X(module_never_moved)                                                                                              \
    X(made_in_callee)                                                                                                  \
    X(device_parameter_ignored)                                                                                        \
    X(loader_batch)                                                                                                    \
    X(library_callback)                                                                                                \
    X(moved_with_others)                                                                                               \
    X(plain_attribute)                                                                                                 \
    X(derived_from_unmoved)                                                                                            \
    X(view_of_unmoved_base)

#define VW_RULE_DECLARE(name) extern const struct vw_rule vw_rule_##name;
VW_RULE_LIST(VW_RULE_DECLARE)
#define VW_RULE_ROW(name) &vw_rule_##name,
const struct vw_rule *const vw_rules[] = {VW_RULE_LIST(VW_RULE_ROW)};
const int vw_nrules = (int)(sizeof vw_rules / sizeof vw_rules[0]);

const struct vw_rule *vw_rule_find(const char *id) {
    for (int i = 0; i < vw_nrules; i++)
        if (!strcmp(vw_rules[i]->id, id)) return vw_rules[i];
    return NULL;
}

/* Each kind of fix: its name and what it changes, as `devtrace rules` and docs/rules.md print them. */
static const struct {
    const char *name, *doc;
} fix_kinds[VW_FIX_NKINDS] = {
    [VW_FIX_ADVICE] = {"advice", "words only: the program's facts allow no code"},
    [VW_FIX_MOVE_AFTER] = {"move-after", "a move of a named tensor after a statement that binds it (x = x.to(device))"},
    [VW_FIX_MOVE_BEFORE] = {"move-before", "a move of a named tensor right before the statement that uses it"},
    [VW_FIX_DEVICE_ARG] = {"device-argument", "device= at the call of the factory that made it"},
    [VW_FIX_PASS_DEVICE] = {"pass-device",
                            "the device passed to a function whose device parameter defaults to the cpu"},
    [VW_FIX_MOVE_CALL] = {"move-call",
                          ".to(device) on a call inside an expression (a module constructed inline, a copy)"},
    [VW_FIX_DROP_COPY] = {"drop-copy", "the copy off the device taken out of the expression (.cpu() removed)"},
    [VW_FIX_REGISTER_BUFFER] = {"register-buffer", "a plain attribute or field registered as its module's buffer"},
    [VW_FIX_MOVE_MODULE] = {"move-module", "the module moved once it is made"},
    [VW_FIX_MOVE_MODEL_FIRST] = {"move-model-first",
                                 "the program's own move of the model, before the statement that made the tensor"},
    [VW_FIX_RELOAD_STATE] = {"reload-state",
                             "the optimizer's state dict loaded back after the move, which places each state"},
};

const char *vw_fix_kind_name(enum vw_fix_kind kind) {
    return kind >= 0 && kind < VW_FIX_NKINDS && fix_kinds[kind].name ? fix_kinds[kind].name : "?";
}

const char *vw_fix_kind_doc(enum vw_fix_kind kind) {
    return kind >= 0 && kind < VW_FIX_NKINDS && fix_kinds[kind].doc ? fix_kinds[kind].doc : "?";
}

/* The last word on a rule's fix before anyone prints it: made of facts that all had a producer's shape, and
 * code of the shapes the rules write (validate.c). Otherwise the trace is inconsistent (edited, or written by
 * no producer of ours): the fix keeps no code, no edit, and no text taken from the facts. */
static void refuse_inconsistent(struct vw_model *m, struct vw_fix *f) {
    const char *why = NULL;
    const char *texts[sizeof f->edits / sizeof f->edits[0]];
    int dels[sizeof f->edits / sizeof f->edits[0]];
    for (int i = 0; i < f->nedits; i++) texts[i] = f->edits[i].text, dels[i] = f->edits[i].del;
    if (!m->inconsistent[0] && (f->code[0] || f->nedits) &&
        (!f->code[0] || !vw_fix_code_shape(f->code, f->replace, rl_is_python(&f->site), texts, dels, f->nedits, &why)))
        snprintf(m->inconsistent, sizeof m->inconsistent, "the code made of its source facts is %s",
                 why ? why : "an edit without code");
    if (!m->inconsistent[0]) return;
    f->code[0] = 0;
    f->replace = f->before = 0;
    f->nedits = 0;
    f->nevidence = 0;
    f->inconsistent = 1;
    f->has_site = 0; /* no place to change either: the facts that placed it are not to be trusted */
    f->kind = VW_FIX_ADVICE;
    rl_say(f, "no fix: the trace is inconsistent (%.1900s)", m->inconsistent);
}

int vw_diagnose(struct vw_model *m, const struct vw_case *k, struct vw_fix *fix) {
    memset(fix, 0, sizeof *fix);
    if (!k->odd) return 0;
    struct vw_rule_ctx cx = {.m = m, .k = k};
    for (int i = 0; i < vw_nrules; i++) {
        struct vw_fix f;
        memset(&f, 0, sizeof f);
        if (!vw_rules[i]->match(&cx, &f)) continue;
        f.rule = vw_rules[i]->id;
        vw_fix_words(k, &f);
        /* a line after a return never runs: the code goes before it, and what it returns is then moved */
        struct vw_src src;
        if (f.code[0] && !f.before && !f.replace && !f.nedits && rl_is_python(&f.site) &&
            vw_src_at(m, f.site.site.file, f.site.site.line, &src) && src.returns) {
            f.before = 1;
            if (f.kind == VW_FIX_MOVE_AFTER) f.kind = VW_FIX_MOVE_BEFORE;
            rl_evidence(&f, "line %d returns: code after it would never run", f.site.site.line);
        }
        /* code that goes after or before a statement names the statement, not the inner line of it where the
         * tensor was made (model = nn.Sequential(\n nn.Linear(...),\n ...): its first line */
        if (f.code[0] && !f.replace && !f.nedits && rl_is_python(&f.site) &&
            vw_src_at(m, f.site.site.file, f.site.site.line, &src) && src.first > 0 && src.first < f.site.site.line)
            f.site.site.line = src.first;
        refuse_inconsistent(m, &f);
        *fix = f;
        return 1;
    }
    return 0;
}
