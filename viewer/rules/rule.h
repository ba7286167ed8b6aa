/* What the rule files of viewer/rules/ share, and nothing outside viewer/rules/ includes: the context a
 * diagnosis hands its rules, the pieces every rule writes a fix with (common.c), and the analysis the
 * never-moved family of rules shares (unmoved.c). A rule file holds one rule: its registry entry (id,
 * documentation, the kinds of fix it returns) and its match. */
#ifndef DEVTRACE_RULES_RULE_H
#define DEVTRACE_RULES_RULE_H

#include "../diag.h"
#include "op_families.h"

#include <devtrace/probe.h>
#include <string.h>

/* ---------------------------------------------------------------- writing a fix (common.c) */

/* The advice's text, written by the rule itself: only the never-moved family (unmoved.c) still does; the other
 * rules set fx->words (a kind of sentence and its parameters) and words.c writes the text after the match. */
void rl_say(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rl_also(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A fact the rule used, as evidence in the report. */
void rl_evidence(struct vw_fix *fx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The fix goes at step s's site / at frame f. */
void rl_at(struct vw_fix *fx, const struct vw_step *s);
void rl_at_frame(struct vw_fix *fx, const struct vw_frame *f, int64_t seq);
const char *rl_dev_name(int64_t dev, char *buf); /* buf: 32 bytes */
const char *rl_site_str(const struct vw_step *s, char *buf, size_t size);
int rl_ident(const char *s);
int rl_is_python(const struct vw_step *s);
/* A site whose language's code the fix can write (code.c): Python, or native code with source facts. */
int rl_has_code(struct vw_model *m, const struct vw_step *s);
/* The name a tensor of the chain went by in the program, or "". */
const char *rl_step_name(struct vw_model *m, const struct vw_case *k, const struct vw_step *s, char *buf, size_t size);
/* The call on the line that made s that made it, from the source facts; NULL when none is known. */
const struct vw_src_call *rl_making_call(const struct vw_src *src, const struct vw_step *s);
/* The move of `name` to the intended device after the fix's statement, where the program binds that name
 * there (common.c says exactly where); 1 when written. */
int rl_code_for(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *own,
                const char *name);
/* rl_code_for at the first later statement of the fix's function that binds `name`; the site moves there. */
int rl_code_at_binding(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const char *name);
/* rl_code_for with the names the odd operand went by. */
void rl_code_for_odd(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const char *first);
/* The program's own move of a module at `move`, written before the statement that made `made`. */
int rl_move_first(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *move,
                  const struct vw_step *made);
/* device= added to the call of the factory that made `made`. */
int rl_device_at_factory(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *made);
/* .to(EXPR) on the call, in its caller, of the function that made the odd operand at `made` and returned it,
 * where that function has no device of its own to follow and its caller has (common.c says exactly when). */
int rl_move_at_call_site(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *made);
/* The step where a never-moved operand was made, past in-place moves and (once) views of its base; *view the
 * index of the view when a view's base is where the move goes, else -1. */
int rl_made_at(const struct vw_operand *o, int *view);

/* ---------------------------------------------------------------- the never-moved family (unmoved.c) */

/* Which rule of the family explains a never-moved operand: the family's decisions interleave (a module's
 * parameter made in a callee stays module-never-moved; a plain attribute is found before and after the
 * callee checks), so one analysis decides and each rule of the family matches its own outcome. */
enum rl_unmoved {
    RL_UNMOVED_NONE,
    RL_UNMOVED_NEVER_MOVED,
    RL_UNMOVED_MODULE,
    RL_UNMOVED_MADE_IN_CALLEE,
    RL_UNMOVED_LOADER_BATCH,
    RL_UNMOVED_LIBRARY_CALLBACK,
    RL_UNMOVED_MOVED_WITH_OTHERS,
    RL_UNMOVED_PLAIN_ATTRIBUTE,
    RL_UNMOVED_DERIVED,
    RL_UNMOVED_VIEW,
    RL_UNMOVED_DEVICE_PARAM,
};

/* What one diagnosis shares between its rules: the case, and the never-moved analysis, made once. */
struct vw_rule_ctx {
    struct vw_model *m;
    const struct vw_case *k;
    int unmoved_done;         /* the analysis ran */
    enum rl_unmoved unmoved;  /* its outcome */
    struct vw_fix unmoved_fx; /* and its fix */
};

/* The never-moved analysis of cx's case (made once per diagnosis); fills *fx and returns 1 when its outcome
 * is `want`. */
int rl_unmoved_match(struct vw_rule_ctx *cx, enum rl_unmoved want, struct vw_fix *fx);

#endif
