/* library-callback: never moved, made in a function that library code called back; the move goes where the result comes
 * back from the library (never-moved family; the analysis is unmoved.c's). */
#include "rule.h"

#include <stdio.h>

static int match(struct vw_rule_ctx *cx, struct vw_fix *fx) {
    return rl_unmoved_match(cx, RL_UNMOVED_LIBRARY_CALLBACK, fx);
}

const struct vw_rule vw_rule_library_callback = {
    .id = "library-callback",
    .summary = "(never-moved) made in a function a library called back (a `collate_fn`): the move goes where the "
               "result comes back from the library",
    .doc = "A function the program hands to a library (a collate_fn, a transform, a hook) runs inside the "
           "library, often in a worker, and its result reaches the program only where the library returns it; a "
           "move inside the callback would run in the worker, on every item. The rule matches a never-moved "
           "tensor made in a function whose caller on the stack is library code, called from a frame of the "
           "program's own. Example: torch.tensor(lengths) made in a collate_fn, used by the model in the "
           "training loop. Fix: a move where the program receives what the library returned.",
    .example = "a temporary made in a `collate_fn`",
    .fixes = 1u << VW_FIX_ADVICE | 1u << VW_FIX_MOVE_AFTER | 1u << VW_FIX_MOVE_BEFORE | 1u << VW_FIX_DEVICE_ARG,
    .langs = VW_LANGS_PY,
    .match = match,
};
