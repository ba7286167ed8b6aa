/* The analysis the never-moved family of rules shares (rule.h): an operand made off the intended device and
 * never moved, where it was made (past views, in-place moves and ops of one tensor each), who holds it
 * there (a module's parameter, a plain attribute, a callee's caller, a loader's loop, a library's callback,
 * the program's move of what was made with it) and so which rule of the family explains it, with the fix
 * that rule proposes. Each rule of the family (never_moved.c, module_never_moved.c, ...) matches its own
 * outcome of this one analysis, made once per diagnosis. */
#include "rule.h"

#include <stdio.h>
/* A parameter (nn.Parameter in the chain, through views: self.weight.T) of a module the program constructs
 * inside an expression and never moves (self.layers = self.layers + [Layer(a, b)]): .to(device) on that
 * constructor call, the one place the module is held before it is used. 1 when written (fx's rule, site,
 * text and edit set). */
static int module_made_inline(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, int own,
                              enum rl_unmoved *v) {
    const struct vw_operand *o = k->odd;
    int p = -1;
    for (int s = 0; s <= own && s < o->nsteps && p < 0; s++)
        if (o->chain[s].param)
            p = s;
        else if (o->chain[s].origin != DTP_ORIGIN_VIEW && o->chain[s].origin != -1)
            break;
    struct vw_frame ctor, caller;
    struct vw_src src;
    if (p < 0 || !rl_is_python(&o->chain[p]) || !vw_fact_constructed_at(m, &o->chain[p], &ctor, &caller) ||
        !vw_src_at(m, caller.file, caller.line, &src))
        return 0;
    /* the class whose constructor made it: "Net.<locals>.Layer.__init__" -> "Layer" */
    char cls[256];
    snprintf(cls, sizeof cls, "%.*s", (int)vw_py_constructor(ctor.function), ctor.function);
    const char *short_cls = strrchr(cls, '.') ? strrchr(cls, '.') + 1 : cls;
    const struct vw_src_call *c = NULL;
    for (int i = 0; i < src.ncalls && !c; i++) {
        const char *fn = src.calls[i].func, *last = strrchr(fn, '.') ? strrchr(fn, '.') + 1 : fn;
        if (!strcmp(last, short_cls) && src.calls[i].temporary && src.calls[i].end_col > 0) c = &src.calls[i];
    }
    if (!c) return 0;
    char d1[32], d2[32], expr[160], on[300];
    /* no device bound where it is made inline (Trainer(Net(), lr) in a script that names none): moved where the
     * class that calls it as its attribute, and holds the program's device, binds it (self.model.to(self.dev)) */
    char hattr[140];
    struct vw_frame hat, hcall;
    int hbefore = 0;
    if (!vw_device_expr_bound(m, k, k->want, &caller, expr, sizeof expr)[0] &&
        vw_code_module_in_holder(m, k, &hat, &hbefore, &hcall, hattr, sizeof hattr, fx->code, sizeof fx->code)) {
        rl_at_frame(fx, &hat, o->chain[p].seq);
        fx->before = hbefore;
        fx->kind = VW_FIX_MOVE_MODULE;
        *v = RL_UNMOVED_MODULE;
        rl_say(fx,
               "move the %s made inside the expression at %s:%d to %s where %s binds %s, with the device that object "
               "keeps: %s is its parameter%s, still where it was made, on %s",
               c->func, caller.file, caller.line, rl_dev_name(k->want, d1), hat.function, hattr,
               vw_operand_called(o, on, sizeof on), p ? " (through a view)" : "", rl_dev_name(o->dev, d2));
        rl_evidence(fx, "a parameter (nn.Parameter) made by %s", ctor.function);
        rl_evidence(fx, "%s calls it as %s (line %d); no device is bound at line %d, where %s(...) is called inside "
                        "an expression", hcall.function, hattr, hcall.line, caller.line, c->func);
        return 1;
    }
    vw_device_expr(m, k, k->want, &caller, expr, sizeof expr);
    rl_at_frame(fx, &caller, o->chain[p].seq);
    *v = RL_UNMOVED_MODULE;
    fx->replace = 1;
    fx->kind = VW_FIX_MOVE_CALL;
    struct vw_edit *e = &fx->edits[fx->nedits++];
    e->line = c->end_line;
    e->col = c->end_col;
    vw_code_call_to(c->func, expr, e->text, sizeof e->text, fx->code, sizeof fx->code);
    rl_say(
        fx,
        "move the %s made inside the expression at %s:%d to %s: %s is its parameter%s, still where it was made, on %s",
        c->func, caller.file, caller.line, rl_dev_name(k->want, d1), vw_operand_called(o, on, sizeof on),
        p ? " (through a view)" : "", rl_dev_name(o->dev, d2));
    rl_evidence(fx, "a parameter (nn.Parameter) made by %s", ctor.function);
    rl_evidence(fx, "%s(...) is called inside an expression at line %d and never moved", c->func, caller.line);
    return 1;
}


/* The odd operand (or the base it is a view of) was made in the constructor of a class of torch's modules and
 * stored by a later statement of that constructor as a plain attribute (pe = torch.zeros(...); ...; self.pe =
 * pe): a module with no parameter made there has nothing its move takes along to show it, yet the attribute is
 * the module's. It is registered as a buffer right before that statement, so that the module's move moves it.
 * 1 when written (fx's rule, site, text and code set). */
static int attribute_in_init(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, int own,
                             enum rl_unmoved *v) {
    const struct vw_operand *o = k->odd;
    const struct vw_step *made = &o->chain[own];
    struct vw_src src, def;
    if (!rl_is_python(made) || !vw_py_constructor(made->site.function) ||
        !vw_src_at(m, made->site.file, made->site.line, &src) || !src.function_line ||
        !vw_src_at(m, made->site.file, src.function_line, &def) || !vw_py_module_def(&def))
        return 0;
    char names[16][256];
    int nn = 0;
    for (int s = 0; s <= own && nn < 12; s++)
        nn += vw_tensor_names(m, o->chain[s].tensor, k->seq, names + nn, 16 - nn > 4 ? 4 : 16 - nn);
    for (int l = src.last + 1; l <= made->site.line + 80; l++) {
        struct vw_src a;
        if (!vw_src_at(m, made->site.file, l, &a) || a.first != l) continue;
        if (strcmp(a.function, made->site.function)) break;
        if (!a.attr_from[0] || a.nattrs != 1 || !a.attr_name[0]) continue; /* self.NAME = NAME2 */
        /* the name it is set from, or the module's attribute by that name ("pos.pe": the recorder names a
         * module's tensors by their path from the program's variable) */
        int held = 0;
        size_t al = strlen(a.attr_name);
        for (int i = 0; i < nn && !held; i++) {
            size_t nl = strlen(names[i]);
            held = !strcmp(names[i], a.attr_from) ||
                   (nl > al && names[i][nl - al - 1] == '.' && !strcmp(names[i] + nl - al, a.attr_name));
        }
        if (!held) continue;
        char d1[32], d2[32], on[300];
        struct vw_step site = *made;
        site.site.line = l;
        rl_at(fx, &site);
        *v = RL_UNMOVED_PLAIN_ATTRIBUTE;
        fx->before = 1;
        fx->kind = VW_FIX_REGISTER_BUFFER;
        int again = !strcmp(a.attr_set_before, a.binds_attr);
        vw_code_register_attr(a.binds_attr, again, fx->code, sizeof fx->code);
        rl_say(fx,
               "register %s as a buffer of its module, so that moving the module moves it: %s is a plain attribute, "
               "set from \"%s\" at line %d of %s, and %s %s on %s where it was made",
               a.binds_attr, a.binds_attr, a.attr_from, l, made->site.function, vw_operand_called(o, on, sizeof on),
               own ? "is a view of what stayed" : "stayed", rl_dev_name(o->dev, d2));
        rl_evidence(fx, "made in %s, a constructor of a class of %s", made->site.function, def.class_bases);
        rl_evidence(fx, "\"%s\" is stored as %s at line %d", a.attr_from, a.binds_attr, l);
        rl_evidence(fx, "never moved to %s", rl_dev_name(k->want, d1));
        return 1;
    }
    return 0;
}

/* The innermost frame of the program's on made's Python stack that is a constructor of a class of nn.Module
 * (`Layer.__init__`), into *f, with *a its statement there and *def its def line (whose class_bases say the
 * module); how deep it is (0: the frame that made it), or -1 when there is none. */
static int module_constructor_frame(struct vw_model *m, const struct vw_step *made, struct vw_frame *f,
                                    struct vw_src *a, struct vw_src *def) {
    int64_t id = made->pystack, next;
    for (int depth = 0; id && depth < 64 && vw_sym_py_frame(m->sym, id, f, &next); depth++, id = next) {
        if (f->hidden || f->library) continue;
        if (!vw_py_constructor(f->function)) continue;
        return vw_src_at(m, f->file, f->line, a) && a->function_line &&
                       vw_src_at(m, f->file, a->function_line, def) && vw_py_module_def(def)
                   ? depth
                   : -1;
    }
    return -1;
}

/* The same, the tensor made in a helper that a module's constructor called and stored what it returned as a
 * plain attribute (self.positional_embedding = sinusoids(n_ctx, n_state)): registered as a buffer right
 * before that statement of the constructor. */
static int attribute_from_helper(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, int own,
                                 enum rl_unmoved *v) {
    const struct vw_operand *o = k->odd;
    const struct vw_step *made = &o->chain[own];
    if (!rl_is_python(made) || vw_py_constructor(made->site.function) || !made->pystack) return 0;
    struct vw_frame f;
    struct vw_src a, def;
    if (module_constructor_frame(m, made, &f, &a, &def) <= 0) return 0; /* a helper's caller, not made there */
    if (a.nattrs != 1 || !a.attr_name[0] || a.binds_kind != DT_BINDS_CALL || a.binds[0]) return 0; /* self.NAME = f() */
    /* the module's tensor by that attribute: the recorder names it by its path ("model.encoder.NAME") */
    char names[16][256];
    int nn = 0, held = 0;
    for (int s = 0; s <= own && nn < 12; s++)
        nn += vw_tensor_names(m, o->chain[s].tensor, k->seq, names + nn, 16 - nn > 4 ? 4 : 16 - nn);
    size_t al = strlen(a.attr_name);
    for (int i = 0; i < nn && !held; i++) {
        size_t nl = strlen(names[i]);
        held = nl > al && names[i][nl - al - 1] == '.' && !strcmp(names[i] + nl - al, a.attr_name);
    }
    if (!held) return 0;
    char d1[32], d2[32], on[300];
    struct vw_step site = *made;
    site.site = f;
    site.site.line = a.first;
    rl_at(fx, &site);
    *v = RL_UNMOVED_PLAIN_ATTRIBUTE;
    fx->before = 1;
    fx->kind = VW_FIX_REGISTER_BUFFER;
    vw_code_register_attr(a.binds_attr, !strcmp(a.attr_set_before, a.binds_attr), fx->code, sizeof fx->code);
    rl_say(fx,
           "register %s as a buffer of its module, so that moving the module moves it: %s is a plain attribute, "
           "set at line %d of %s from what %s returned, and %s %s on %s where it was made",
           a.binds_attr, a.binds_attr, a.first, f.function, made->site.function, vw_operand_called(o, on, sizeof on),
           own ? "is a view of what stayed" : "stayed", rl_dev_name(o->dev, d2));
    rl_evidence(fx, "made in %s, called by %s, a constructor of a class of %s", made->site.function, f.function,
                def.class_bases);
    rl_evidence(fx, "what it returned is stored as %s at line %d", a.binds_attr, a.first);
    rl_evidence(fx, "never moved to %s", rl_dev_name(k->want, d1));
    return 1;
}

/* The same, the attribute set by a name computed at run time: a module's constructor that sets its tensors with
 * setattr(self, k, v) (in a loop over a dict a helper returned, or over names): each is a plain attribute its
 * module's move leaves behind. Registered as a buffer by the same name and value right before that statement
 * (the setattr that follows then sets the buffer). */
static int attribute_by_setattr(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, int own,
                                enum rl_unmoved *v) {
    const struct vw_operand *o = k->odd;
    const struct vw_step *made = &o->chain[own];
    if (!rl_is_python(made) || !made->pystack || made->param || o->buffer || !strchr(o->name, '.')) return 0;
    struct vw_frame f;
    struct vw_src a, def, st;
    if (module_constructor_frame(m, made, &f, &a, &def) < 0) return 0;
    /* the statement itself, or the one statement of the loop it heads (for k, v in tables(n).items():) */
    int at = 0, n = 0;
    if (a.setattr_receiver)
        at = a.first, n = 1;
    else if (a.opens && a.loop_first == a.first)
        for (int l = a.last + 1; l <= a.loop_last && l - a.last < 200; l++)
            if (vw_src_at(m, f.file, l, &st) && st.first == l && !strcmp(st.function, a.function) &&
                st.setattr_receiver)
                at = l, n++;
    if (n != 1 || !vw_src_at(m, f.file, at, &st) || !rl_ident(st.setattr_value)) return 0;
    size_t nl = strlen(st.setattr_name);
    int literal = nl > 2 && (st.setattr_name[0] == '"' || st.setattr_name[0] == '\'') &&
                  st.setattr_name[nl - 1] == st.setattr_name[0];
    if (literal) { /* "NAME": the name between the quotes is an identifier */
        char inner[128];
        snprintf(inner, sizeof inner, "%.*s", (int)(nl - 2), st.setattr_name + 1);
        literal = rl_ident(inner);
    }
    if (!rl_ident(st.setattr_name) && !literal) return 0;
    char d1[32], d2[32], on[300];
    struct vw_step site = *made;
    site.site = f;
    site.site.line = at;
    rl_at(fx, &site);
    *v = RL_UNMOVED_PLAIN_ATTRIBUTE;
    fx->before = 1;
    fx->kind = VW_FIX_REGISTER_BUFFER;
    vw_code_register_named(st.setattr_obj, st.setattr_name, st.setattr_value, fx->code, sizeof fx->code);
    rl_say(fx,
           "register it as a buffer of its module, so that moving the module moves it: %s is a plain attribute, set "
           "with setattr at line %d of %s, and stayed on %s where it was made",
           vw_operand_called(o, on, sizeof on), at, f.function, rl_dev_name(o->dev, d2));
    rl_evidence(fx, "set by setattr(self, %s, %s) in %s, a constructor of a class of %s", st.setattr_name,
                st.setattr_value, f.function, def.class_bases);
    rl_evidence(fx, "never moved to %s", rl_dev_name(k->want, d1));
    return 1;
}

/* vw_fact_module_move, less a move made by the failing call itself (DistributedDataParallel moving its
 * forward's inputs to device_ids[0]): the fix cannot go after the line that fails. */
static int module_move_before(struct vw_model *m, const struct vw_case *k, const struct vw_step *made,
                              struct vw_step *move) {
    int lm = vw_fact_module_move(m, made, k->odd->dev, k->want, k->seq, move);
    if (lm == 2 && vw_same_site(move, &k->call)) return 0;
    /* the program's own move runs in a loop that did not make it (x = x.to(device) for each batch, a constant
     * made once before the loop): not made with what the loop moves, its move belongs where it is made */
    struct vw_src ms, mv;
    if (lm == 2 && rl_is_python(made) && rl_is_python(move) && !strcmp(made->site.file, move->site.file) &&
        vw_src_at(m, move->site.file, move->site.line, &mv) && mv.loop_first &&
        vw_src_at(m, made->site.file, made->site.line, &ms) &&
        (made->site.line < mv.loop_first || made->site.line > mv.loop_last) && ms.loop_first != mv.loop_first)
        return 0;
    return lm;
}

/* A step computed from one tensor (a view, an op with one tensor operand, an in-place move): what it was computed
 * from is where its device came from. */
static int one_source(struct vw_model *m, const struct vw_step *s) {
    return s->origin == DTP_ORIGIN_VIEW || s->origin == -1 ||
           (s->origin == DTP_ORIGIN_OP_OUTPUT && vw_fact_combined(m, s) < 2);
}

/* Whether step s was made in the loop around step `at` (loop: the facts of at's statement): in its file and
 * function, on a line of that loop. */
static int in_loop_of(const struct vw_step *s, const struct vw_step *at, const struct vw_src *loop) {
    return s->has_site && !strcmp(s->site.file, at->site.file) &&
           vw_same_function(s->site.function, at->site.function) && s->site.line >= loop->loop_first &&
           s->site.line <= loop->loop_last;
}

/* Python: the odd operand's step `own`, an op's output made in a loop, computed through steps of one source each
 * from a tensor made in the same function before that loop, which the program names: that tensor's step; 0 when
 * there is none (made in no loop, or computed from what was made in the loop, after it or in another function). */
static int loop_root(struct vw_model *m, const struct vw_case *k, const struct vw_operand *o, int own) {
    const struct vw_step *at = &o->chain[own];
    struct vw_src loop;
    if (at->origin != DTP_ORIGIN_OP_OUTPUT || !at->has_site || at->site.library || !rl_is_python(at) ||
        !vw_src_at(m, at->site.file, at->site.line, &loop) || !loop.loop_first)
        return 0;
    char name[256];
    for (int i = own; i < o->nsteps - 1 && one_source(m, &o->chain[i]); i++) {
        const struct vw_step *s = &o->chain[i + 1];
        if (in_loop_of(s, at, &loop)) continue;
        return s->has_site && !strcmp(s->site.file, at->site.file) &&
                       vw_same_function(s->site.function, at->site.function) && s->site.line < loop.loop_first &&
                       rl_step_name(m, k, s, name, sizeof name)[0]
                   ? i + 1
                   : 0;
    }
    return 0;
}

/* Python: the odd operand's step `own`, an op's output in the program's code, computed through ops (of any number
 * of tensors) and views from a tensor a factory of the program's made off the device in another function (the
 * operand's origin: where it reached its device), which passed it in or returned it: that step's index; 0 when it
 * is not so, or when the program moved a part of that tensor (a slice, what an op made from it) to the intended
 * device: it keeps that one where it is on purpose. Code that computes from the tensors it is given computes on
 * their devices: the fix is where that tensor was made (a timestep embedding computed from timesteps its sampler
 * made on the cpu). */
static int computed_from_caller(struct vw_model *m, const struct vw_case *k, const struct vw_operand *o, int own) {
    const struct vw_step *at = &o->chain[own];
    const int a = o->arrived;
    if (at->origin != DTP_ORIGIN_OP_OUTPUT || !at->has_site || at->site.library || !rl_is_python(at) || a <= own)
        return 0;
    for (int i = own; i < a; i++)
        if (o->chain[i].origin != DTP_ORIGIN_OP_OUTPUT && o->chain[i].origin != DTP_ORIGIN_VIEW) return 0;
    const struct vw_step *r = &o->chain[a];
    if (r->origin != DTP_ORIGIN_FACTORY || !r->has_site || r->site.library || !rl_is_python(r) ||
        (!strcmp(r->site.file, at->site.file) && vw_same_function(r->site.function, at->site.function)))
        return 0;
    /* not what the program keeps where it is on purpose and moves a part at a time (a dataset's labels): there the
     * value computed from the whole is the one to move */
    return vw_fact_parts_moved(m, r->tensor, k->want, k->seq) ? 0 : a;
}

/* The function that made it was handed the device by its caller (a parameter: mel_filters(audio.device, n) binds
 * it to `device`) and made the tensor without it: the fix goes in that function, with that parameter, so that
 * every caller gets it there and it holds on any device: device= on a factory that takes one, else .to(PARAM) on
 * the call that made it, the whole value of its statement (a return, a binding). 1 when written. */
/* tensor: ... or handed a tensor on the intended device (dec = shift_tokens_right(labels, 0, 1) binds labels to
 * input_ids) and made its own without a device: the same fix, with that tensor's device (device=input_ids.device),
 * for every caller and any device, not a move in the one caller that failed (made-in-callee). */
static int device_param_fix(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, const struct vw_step *made,
                            const struct vw_frame *caller, enum rl_unmoved *v, int tensor) {
    char param[64], dexpr[80], arg[200], d1[32], d2[32], on[300];
    struct vw_src src;
    const struct vw_src_call *c;
    if (!rl_is_python(made) || !rl_has_code(m, made) || !vw_src_at(m, made->site.file, made->site.line, &src) ||
        !(c = rl_making_call(&src, made)) || c->device[0] || c->end_col < 1 ||
        !(tensor ? vw_fact_tensor_param(m, k, k->want, made, caller, param, sizeof param)
                 : vw_fact_device_param(m, made, caller, param, sizeof param))[0])
        return 0;
    snprintf(dexpr, sizeof dexpr, tensor ? "%s.device" : "%s", param);
    /* the statement does use the parameter as a device (torch.from_numpy(a).to(device)): the function followed the
     * device it was handed, and that one was the wrong one */
    if (!strcmp(src.device_expr, dexpr)) return 0;
    for (int i = 0; i < src.ncalls; i++)
        if (!strcmp(src.calls[i].device, dexpr)) return 0;
    struct vw_fix at;
    memset(&at, 0, sizeof at);
    rl_at(&at, made);
    at.replace = 1;
    struct vw_edit *e = &at.edits[at.nedits++];
    e->line = c->end_line;
    if (made->origin == DTP_ORIGIN_FACTORY && !dt_op_takes_no_device(made->what) &&
        vw_code_device_arg(m, &made->site, made->site.line, c->func, c->has_args, c->trailing_comma, dexpr, arg,
                           sizeof arg)) {
        at.kind = VW_FIX_DEVICE_ARG;
        e->col = c->end_col - 1; /* before the closing parenthesis */
        snprintf(e->text, sizeof e->text, "%s", arg);
        vw_code_call_arg_shown(c->func, arg, at.code, sizeof at.code);
    } else if (!c->temporary) {
        at.kind = VW_FIX_MOVE_CALL;
        e->col = c->end_col;
        vw_code_call_to(c->func, dexpr, e->text, sizeof e->text, at.code, sizeof at.code);
    } else if (src.binds[0] && !strchr(src.binds, ',') && src.binds_kind == DT_BINDS_CALL &&
               vw_code_move(m, &made->site, src.binds, dexpr, at.code, sizeof at.code)) {
        /* made inside the value its statement binds to one name (indices = th.from_numpy(a).long()) */
        at.nedits = 0;
        at.replace = 0;
        at.kind = VW_FIX_MOVE_AFTER;
    } else
        return 0;
    if (tensor) {
        rl_say(&at, "make %s on the device of the tensor %s is handed as \"%s\": %s(...) at %s:%d made it on %s, "
                    "while %s (%s:%d) hands it a tensor on %s there, where the op that failed wanted it",
               vw_operand_called(k->odd, on, sizeof on), made->site.function, param, c->func, made->site.file,
               made->site.line, rl_dev_name(k->odd->dev, d2), caller->function, caller->file, caller->line,
               rl_dev_name(k->want, d1));
        rl_evidence(&at, "made on %s by %s in %s, never moved", d2, made->what, made->site.function);
        rl_evidence(&at, "%s (%s:%d) hands %s a tensor on %s as \"%s\"", caller->function, caller->file,
                    caller->line, made->site.function, d1, param);
    } else {
        rl_say(&at, "make %s on the device %s is handed: %s(...) at %s:%d leaves out its parameter \"%s\", the device "
                    "%s hands it at %s:%d, and made it on %s while the op that failed wanted %s",
               vw_operand_called(k->odd, on, sizeof on), made->site.function, c->func, made->site.file,
               made->site.line, param, caller->function, caller->file, caller->line, rl_dev_name(k->odd->dev, d2),
               rl_dev_name(k->want, d1));
        rl_evidence(&at, "made on %s by %s in %s, never moved", d2, made->what, made->site.function);
        rl_evidence(&at, "%s (%s:%d) hands %s the device as \"%s\"", caller->function, caller->file, caller->line,
                    made->site.function, param);
    }
    *fx = at;
    *v = tensor ? RL_UNMOVED_MADE_IN_CALLEE : RL_UNMOVED_DEVICE_PARAM;
    return 1;
}

/* never-moved: made off the intended device and never moved; the move goes right after it is made (a view:
 * after its base is made, once; computed from an unnamed tensor: where that came from). Variants, each
 * with its own id: module-never-moved (a module's parameter), made-in-callee (made in a function that
 * returned it: where the caller binds it), library-callback (made in a function a library called back),
 * moved-with-others (the program moved what was made with it), plain-attribute (a module's plain field,
 * left by the module's move); a factory that takes device= is said in the text. */
/* Python: from odd's step `own`, back through ops of one tensor each, a factory of the same function, on a line
 * of its own, called by the program itself (not inside a library call), that takes device= (h_idx = torch.arange(h); h_region = (h_idx >= a).long() + (h_idx >= b).long()): where the values were
 * made off the device is the fix, not the first name they got. Its index, or -1. */
static int factory_root(struct vw_model *m, const struct vw_case *k, const struct vw_operand *odd, int own) {
    int r = own;
    /* all on one device: not through a move (t.to("meta") of a cpu tensor: where the device was decided) */
    while (r < odd->nsteps - 1 && one_source(m, &odd->chain[r]) && odd->chain[r + 1].dev == odd->chain[own].dev) r++;
    const struct vw_step *f = &odd->chain[r], *at = &odd->chain[own];
    /* ... made for it alone: a tensor the program used otherwise too (labels it counted for class weights, then
     * sliced into batches it moves) is kept where it is */
    return r > own && f->origin == DTP_ORIGIN_FACTORY && !dt_op_takes_no_device(f->what) && f->has_site &&
                   !f->site.library && rl_is_python(f) && at->has_site && !strcmp(f->site.file, at->site.file) &&
                   vw_same_function(f->site.function, at->site.function) && f->site.line != at->site.line &&
                   !vw_fact_made_in_library(m, f) && vw_fact_feeds_only(m, f->tensor, odd->tensor, k->seq)
               ? r
               : -1;
}

static int analyse(struct vw_model *m, const struct vw_case *k, struct vw_fix *fx, enum rl_unmoved *v) {
    const struct vw_operand *odd = k->odd;
    if (!odd->nsteps) return 0;
    char d1[32], d2[32], on[300], buf[1024];
    rl_dev_name(k->want, d1);
    rl_dev_name(odd->dev, d2);
    vw_operand_called(odd, on, sizeof on);
    int view, own = rl_made_at(odd, &view);
    /* computed by ops of one tensor each from a tensor the program has no name for (a mask from a causal
     * buffer): the fix is where those came from, the first the program holds by a name; not where library
     * code made it (a loader's collation): the program's move of its batch decides */
    int derived = -1, rooted = 0;
    char rootname[256] = "", fixname[256] = "";
    /* ... or one the program names, computed in code that receives its tensors from a tensor its caller made off
     * the device (computed_from_caller), or recomputed in a loop from a tensor made once before that loop (a GAE
     * loop's nextnonterminal = 1.0 - dones[t + 1]: loop_root): moving the result treats the symptom; the fix is
     * where that tensor was made */
    int root = computed_from_caller(m, k, odd, own);
    if (root <= own) root = loop_root(m, k, odd, own);
    if (root > own) {
        derived = own;
        own = root;
        rooted = 1;
        rl_step_name(m, k, &odd->chain[own], rootname, sizeof rootname);
        view = -1;
    } else if (odd->chain[own].origin == DTP_ORIGIN_OP_OUTPUT && own < odd->nsteps - 1 &&
               !odd->chain[own].site.library && !rl_step_name(m, k, &odd->chain[own], rootname, sizeof rootname)[0] &&
               vw_fact_combined(m, &odd->chain[own]) < 2) {
        derived = own;
        while (own < odd->nsteps - 1 && one_source(m, &odd->chain[own]))
            if (rl_step_name(m, k, &odd->chain[++own], rootname, sizeof rootname)[0]) break;
        view = -1;
        int r = factory_root(m, k, odd, own);
        if (r > own) {
            own = r;
            rl_step_name(m, k, &odd->chain[r], rootname, sizeof rootname);
        }
    } else if (odd->chain[own].origin == DTP_ORIGIN_OP_OUTPUT && !odd->chain[own].site.library) {
        /* a tensor the program names, or a view of one, computed so (random_tensor = torch.floor(random_tensor + p)
         * of random_tensor = torch.rand(shape); img_mask = w_region[None, :] of w_region = (w_idx >= a).long()):
         * the same */
        int r = factory_root(m, k, odd, own);
        if (r > own) {
            derived = own;
            own = r;
            view = -1;
            rl_step_name(m, k, &odd->chain[r], rootname, sizeof rootname);
        }
    }
    if (derived >= 0) {
        /* a view of the whole of a tensor a factory made (b_obs = obs.reshape(-1, n) of a rollout buffer) is that
         * tensor under another shape: the move goes where the factory made it, once */
        char basename[256];
        const struct vw_step *b = own < odd->nsteps - 1 ? &odd->chain[own + 1] : NULL;
        if (b && b->tensor == odd->chain[own].from && b->origin == DTP_ORIGIN_FACTORY && b->has_site &&
            !b->site.library && rl_is_python(b) && vw_fact_whole_view(m, &odd->chain[own]) &&
            rl_step_name(m, k, b, basename, sizeof basename)[0]) {
            own++;
            snprintf(rootname, sizeof rootname, "%s", basename);
        }
    }
    if (derived < 0 && (module_made_inline(m, k, fx, own, v) || attribute_in_init(m, k, fx, own, v) ||
                        attribute_from_helper(m, k, fx, own, v) ||
                        attribute_by_setattr(m, k, fx, own, v)))
        return 1;
    const struct vw_step *made = &odd->chain[own];
    rl_at(fx, made);
    *v = RL_UNMOVED_NEVER_MOVED;
    /* C++: made while constructing a module the program declares (its parameter): that module is moved */
    struct vw_frame mat;
    struct vw_step hmove;
    char mname[160];
    if (derived < 0 && view < 0 && !rl_is_python(made) &&
        vw_code_module_move(m, k, made, &mat, mname, sizeof mname, fx->code, sizeof fx->code)) {
        fx->kind = VW_FIX_MOVE_MODULE;
        *v = RL_UNMOVED_MODULE;
        rl_at_frame(fx, &mat, made->seq);
        rl_say(fx,
               "move the module \"%s\" to %s once it is made: %s, made on %s when it was constructed, is still there",
               mname, d1, on, d2);
        rl_evidence(fx, "made on %s by %s while the module \"%s\" was constructed, never moved", d2, made->what, mname);
        return 1;
    }
    const char *codename = odd->name;
    if (derived >= 0) {
        *v = RL_UNMOVED_DERIVED;
        codename = rootname;
        rl_say(fx, "move %s%s%s to %s right after it is made: %s is computed from it (at %s), on %s too",
               rootname[0] ? "\"" : "", rootname[0] ? rootname : "the tensor it is computed from",
               rootname[0] ? "\"" : "", d1, on, rl_site_str(&odd->chain[derived], buf, sizeof buf), d2);
        rl_evidence(fx, "computed from a tensor made on %s by %s", d2, made->what);
    } else if (view >= 0) {
        *v = RL_UNMOVED_VIEW;
        codename = rl_step_name(m, k, made, fixname, sizeof fixname);
        rl_say(fx,
               "move %s%s%s to %s right after it is made, once: %s is a view of it (made at %s), and a view is on its "
               "base's device",
               fixname[0] ? "\"" : "", fixname[0] ? fixname : "its base", fixname[0] ? "\"" : "", d1, on,
               rl_site_str(&odd->chain[view], buf, sizeof buf));
        rl_evidence(fx, "a view (%s) of a tensor made on %s", odd->chain[view].what, d2);
    } else
        rl_say(fx, "move %s to %s right after it is made", on, d1);
    /* the other odd operands made there too (a module's weight and bias) */
    int more = 0;
    for (int i = 0; i < k->n; i++) {
        const struct vw_operand *o = &k->ops[i];
        if (!o->odd || o == odd || !o->nsteps || !vw_same_site(&o->chain[o->arrived], &odd->chain[odd->arrived]))
            continue;
        rl_also(fx, "%s\"%s\"", more++ ? ", " : " (and ", o->name[0] ? o->name : o->arg);
    }
    if (more) rl_also(fx, ", made there too)");
    rl_evidence(fx, "made on %s by %s and never moved", d2, made->what);
    /* a module's parameter (PyTorch names them "model.fc.weight" by the program's variable): the module was
     * never moved */
    char modname[128] = "";
    const char *dot = strchr(odd->name, '.');
    /* ... or its registered buffer (register_buffer: the producer's role fact), which moves with it too */
    const int buffer = odd->buffer && made->tensor == odd->tensor;
    if (view < 0 && derived < 0 && dot && dot > odd->name && (made->param || buffer) &&
        (size_t)(dot - odd->name) < sizeof modname) {
        *v = RL_UNMOVED_MODULE;
        snprintf(modname, sizeof modname, "%.*s", (int)(dot - odd->name), odd->name);
        rl_say(fx,
               "move the module \"%s\" to %s once it is made: its %s \"%s\"%s is still where it was made, on %s",
               modname, d1, made->param ? "parameter" : "buffer", odd->name, more ? " (and the others listed)" : "",
               d2);
        codename = modname;
        if (made->param)
            rl_evidence(fx, "a parameter (nn.Parameter) of \"%s\"", modname);
        else
            rl_evidence(fx, "a buffer (registered) of \"%s\"", modname);
    } else if (view < 0 && derived < 0 && vw_code_module_var(m, &made->site, modname, sizeof modname)[0]) {
        /* C on libdtrt: made inside the call whose value the statement binds to a module (dt_module *) */
        *v = RL_UNMOVED_MODULE;
        rl_say(fx, "move the module \"%s\" to %s once it is made: its parameter %s%s is still where it was made, on %s",
               modname, d1, on, more ? " (and the others listed)" : "", d2);
        codename = modname;
        rl_evidence(fx, "made by the statement that declares the module \"%s\"", modname);
    } else if (view < 0 && derived < 0 && vw_code_module_holder(m, k, made, &mat, modname, sizeof modname)[0] &&
               !module_move_before(m, k, made, &hmove)) {
        /* C on libdtrt: made while a function of the program built a module that a frame of its stack holds
         * (net = example_mlp() in a helper that loads a checkpoint into it and returns it: the caller's
         * restored = load_model(path) keeps it, with the program's device there), and no move of a module
         * left it behind (that is a plain field's: plain-attribute) */
        *v = RL_UNMOVED_MODULE;
        rl_say(fx, "move the module \"%s\" to %s once the program holds it: its parameter %s%s is still where it was "
                   "made, on %s",
               modname, d1, on, more ? " (and the others listed)" : "", d2);
        codename = modname;
        rl_at_frame(fx, &mat, made->seq);
        rl_evidence(fx, "made while building the module \"%s\" of %s:%d", modname, mat.file, mat.line);
    }
    const char *bind = codename && codename[0] ? codename : NULL;
    /* native code: the tensor has no name in the trace; the failing call's argument that holds it is the name a
     * caller binds (weights = class_weights(labels); ... cross_entropy(logits, y, weights)) */
    char natname[256];
    enum vw_lang ml = made->has_site ? vw_code_lang(m, &made->site) : VW_LANG_NONE;
    if (!bind && (ml == VW_LANG_C || ml == VW_LANG_CXX) && vw_code_operand_name(m, k, odd, natname, sizeof natname)[0])
        bind = natname;
    struct vw_frame caller;
    struct vw_step move;
    struct vw_src src;
    int lm;
    int binds_here = bind && vw_src_at(m, made->site.file, made->site.line, &src) && vw_src_binds(&src, bind);
    struct vw_src csrc;
    int in_caller = bind && vw_fact_bound_in_caller(m, made, bind, &caller) &&
                    (caller.line != made->site.line || strcmp(caller.file, made->site.file));
    /* received by a loop of the program's (for x in loader:, an iterator class of its own): the move goes in
     * the loop, where the program first holds it, not in the code that made it */
    int by_loop = in_caller && vw_src_at(m, caller.file, caller.line, &csrc) && csrc.opens &&
                  csrc.loop_first == csrc.first && !vw_same_function(caller.function, made->site.function);
    /* a helper that made it for several callers (training and evaluation): the move goes in the helper,
     * where it binds it, or each caller would need its own */
    int callers = in_caller && binds_here && !by_loop ? 0 : in_caller ? vw_fact_callers(m, made) : 0;
    /* native code: a helper that binds it but has no device of its own to follow (no device variable, no peer
     * in scope where it makes it), called from one place that has one: the move goes where that caller binds
     * what it returned, not a device literal into the helper (Python's is rl_move_at_call_site) */
    struct vw_frame outer;
    if (!in_caller && binds_here && (ml == VW_LANG_C || ml == VW_LANG_CXX) &&
        vw_fact_bound_by_native_caller(m, made, bind, &outer)) {
        char here[160], there[160];
        if (!vw_device_expr_bound(m, k, k->want, &made->site, here, sizeof here)[0] &&
            vw_device_expr_bound(m, k, k->want, &outer, there, sizeof there)[0] && vw_fact_callers(m, made) < 2) {
            in_caller = 1, binds_here = 0, caller = outer;
            rl_evidence(fx, "%s has no device of its own to follow; its caller has %s", made->site.function, there);
        }
    }
    if (in_caller && !by_loop && callers >= 2) {
        struct vw_src hs;
        if (vw_src_at(m, made->site.file, made->site.line, &hs) && hs.binds[0] && !strchr(hs.binds, ',')) {
            in_caller = 0;
            rl_evidence(fx, "%s made it for %d callers: the move goes in it", made->site.function, callers);
        }
    }
    /* the function that made it was given the device as a parameter by its caller: fixed there, with it */
    if (in_caller && !by_loop && (derived < 0 || rooted) && view < 0 && *v != RL_UNMOVED_MODULE &&
        device_param_fix(m, k, fx, made, &caller, v, 0))
        return 1;
    /* ... or handed a tensor on the intended device, and made its own by a factory without one, then returned
     * (the op that failed is not in it): made on that tensor's device there, for every caller (a helper that
     * binds it, or of several callers, would otherwise move it to a device name, which library code has not) */
    struct vw_frame from;
    if (!by_loop && (derived < 0 || rooted) && view < 0 && *v != RL_UNMOVED_MODULE &&
        made->origin == DTP_ORIGIN_FACTORY && k->call.has_site &&
        !(vw_same_function(k->call.site.function, made->site.function) && !strcmp(k->call.site.file, made->site.file)) &&
        (in_caller ? (from = caller, 1) : vw_fact_caller_of(m, made, &from)) &&
        device_param_fix(m, k, fx, made, &from, v, 1))
        return 1;
    /* ... also when no caller binds it by a name the trace knows (its value went on into what failed): a factory
     * in the return statement of a function its caller handed the device (rel_pos = self.relative_pos(pos,
     * stride, device=device), then indexed and expanded) */
    struct vw_frame up;
    struct vw_src ret;
    if (!in_caller && made->origin == DTP_ORIGIN_FACTORY && view < 0 && *v != RL_UNMOVED_MODULE &&
        vw_src_at(m, made->site.file, made->site.line, &ret) && ret.returns && !ret.binds[0] &&
        vw_fact_caller_of(m, made, &up) && device_param_fix(m, k, fx, made, &up, v, 0))
        return 1;
    /* made by a factory in a method of a module (model code, which runs wherever its module was moved) and
     * returned to a caller outside its class (the training loop's hidden = model.init_hidden(bsz)): made on the
     * module's device by that factory, for every caller, not moved by this one (a caller in the class itself,
     * its forward, is model code already: the move goes there, on the method's call) */
    char mdev[160];
    const char *mdot = strrchr(made->site.function, '.');
    size_t mcl = mdot ? (size_t)(mdot - made->site.function) : 0;
    if (in_caller && !binds_here && !by_loop && derived < 0 && view < 0 && *v != RL_UNMOVED_MODULE &&
        made->origin == DTP_ORIGIN_FACTORY && rl_is_python(made) && mcl &&
        !(!strncmp(caller.function, made->site.function, mcl) && caller.function[mcl] == '.') &&
        vw_code_module_device(m, k, k->want, &made->site, mdev, sizeof mdev)[0] &&
        rl_device_at_factory(m, k, fx, made)) {
        *v = RL_UNMOVED_MADE_IN_CALLEE;
        rl_say(fx, "make %s on its module's device where %s makes it, for every caller: %s", on,
               made->site.function, fx->code);
        rl_evidence(fx, "made in %s, a method of a module, which returned it to %s, outside its class",
                    made->site.function, caller.function);
        return 1;
    }
    if (in_caller && (!binds_here || by_loop)) {
        /* made inside a function that returned it (the module's own __init__, a helper making a mask): the
         * fix goes where the caller binds it (model = Net(), mask = self.make_mask(n), for x, y in loader:) */
        rl_at_frame(fx, &caller, made->seq);
        fx->site.tensor = made->tensor;
        if (by_loop) {
            *v = RL_UNMOVED_LOADER_BATCH;
            rl_say(fx, "move %s to %s in the loop that receives it (%s:%d), where the program first holds it", on, d1,
                   caller.file, caller.line);
            rl_evidence(fx, "made by %s in %s, which the loop at line %d iterates", made->what, made->site.function,
                        caller.line);
        } else if (*v != RL_UNMOVED_MODULE) {
            *v = RL_UNMOVED_MADE_IN_CALLEE;
            rl_evidence(fx, "made in %s, which returned it to %s", made->site.function, caller.function);
        }
    } else if (vw_fact_callback_caller(m, made, k->pystack, &caller)) {
        *v = RL_UNMOVED_LIBRARY_CALLBACK;
        rl_say(fx, "move %s to %s where it comes back from the library that called %s (%s:%d), which made it", on, d1,
               made->site.function, made->site.file, made->site.line);
        rl_at_frame(fx, &caller, made->seq);
        rl_evidence(fx, "made in %s, called back by library code", made->site.function);
    } else if ((lm = module_move_before(m, k, made, &move)) == 2) {
        *v = RL_UNMOVED_MOVED_WITH_OTHERS;
        rl_at(fx, &move);
        rl_say(fx, "move %s to %s where the tensors made with it are moved", on, d1);
        rl_evidence(fx, "the program moved tensors made in %s to %s, not this one", made->site.function, d1);
    } else if (lm) {
        *v = RL_UNMOVED_PLAIN_ATTRIBUTE;
        rl_say(
            fx,
            "if a module keeps %s (or the module it belongs to) in a plain attribute, list or dict, register it "
            "there instead (register_buffer; nn.ModuleList or nn.ModuleDict for modules), so that moving the module "
            "moves it; it was made in %s, next to tensors that moving the module%s%s took to %s while it stayed on %s "
            "(or move it to %s right after it is made)",
            on, made->site.function, move.has_site ? " at " : "",
            move.has_site ? rl_site_str(&move, buf, sizeof buf) : "", d1, d2, d1);
        rl_evidence(fx, "the module's move at %s left it on %s", rl_site_str(&move, buf, sizeof buf), d2);
        struct vw_src msrc;
        struct vw_frame reg;
        if (vw_code_register_field(m, &made->site, &reg, fx->code, sizeof fx->code)) { /* C: the runtime's own */
            fx->kind = VW_FIX_REGISTER_BUFFER;
            rl_at_frame(fx, &reg, made->seq);
            rl_evidence(fx, "kept in a field of the program's own struct, made in %s", made->site.function);
            rl_say(fx,
                   "register it as a buffer of its module, so that moving the module moves it: %s is kept in a plain "
                   "field, made in %s, and moving the module%s%s took its parameters to %s while %s stayed on %s",
                   on, made->site.function, move.has_site ? " at " : "",
                   move.has_site ? rl_site_str(&move, buf, sizeof buf) : "", d1, on, d2);
        } else if (rl_is_python(made) && vw_src_at(m, made->site.file, made->site.line, &msrc) &&
                   msrc.binds_attr[0]) {
            const char *attr = msrc.binds_attr, *comma = strchr(attr, ',');
            char a[128];
            snprintf(a, sizeof a, "%.*s", (int)(comma ? (size_t)(comma - attr) : strlen(attr)), attr);
            if (msrc.attr_name[0]) { /* the first of its self.NAME targets */
                /* registered first, the assignment that follows fills the buffer */
                /* a plain attribute the function set before (self.bias = None) is removed first: a buffer
                 * cannot be registered under a name the module already has */
                int again = vw_list_has(msrc.attr_set_before, a);
                fx->kind = VW_FIX_REGISTER_BUFFER;
                vw_code_register_attr(a, again, fx->code, sizeof fx->code);
                if (again) rl_evidence(fx, "%s was set earlier in %s", a, made->site.function);
                fx->before = 1;
                rl_evidence(fx, "bound to the plain attribute %s", a);
                /* the attribute is known: the advice says it first, plainly */
                rl_say(
                    fx,
                    "register %s as a buffer of its module, so that moving the module moves it: %s is a plain "
                    "attribute, made in %s, and moving the module%s%s took its parameters to %s while %s stayed on %s",
                    a, a, made->site.function, move.has_site ? " at " : "",
                    move.has_site ? rl_site_str(&move, buf, sizeof buf) : "", d1, a, d2);
            }
        }
        return 1;
    } else if (!modname[0] && made->origin == DTP_ORIGIN_FACTORY && !dt_op_takes_no_device(made->what) &&
               rl_is_python(made) && vw_src_at(m, made->site.file, made->site.line, &src)) {
        const struct vw_src_call *c = rl_making_call(&src, made);
        char expr[160], guard[208];
        /* a factory that takes a device: made there in the first place (not in a program that names no device:
         * its .cuda() moves go under its own condition, a device= would be a literal) */
        if (c && !c->device[0] && !vw_code_cuda_idiom(m, k, k->want, &made->site, guard, sizeof guard)) {
            vw_device_expr(m, k, k->want, &made->site, expr, sizeof expr);
            rl_also(fx, " (or make it there: %s(..., device=%s))", c->func, expr);
            rl_evidence(fx, "made by %s, which takes device=", c->func);
        }
    }
    if (!fx->code[0]) {
        if (modname[0] || derived >= 0 || view >= 0)
            rl_code_for(m, k, fx, made, codename);
        else
            rl_code_for_odd(m, k, fx, codename);
        if (!fx->code[0] && modname[0]) rl_code_for(m, k, fx, made, modname);
        if (!fx->code[0] && (derived >= 0 || view >= 0)) { /* the other names the program had for it */
            char names[8][256];
            int nn = vw_tensor_names(m, made->tensor, k->seq, names, 8);
            for (int i = 0; i < nn && !fx->code[0]; i++) rl_code_for(m, k, fx, made, names[i]);
            /* or the one name its statement binds (data = data.view(...).contiguous() in a helper) */
            struct vw_src ms;
            const struct vw_src_call *mc;
            if (!fx->code[0] && rl_has_code(m, made) && vw_src_at(m, made->site.file, made->site.line, &ms) &&
                ms.binds[0] && !strchr(ms.binds, ',') && (mc = rl_making_call(&ms, made)) && !mc->temporary)
                rl_code_for(m, k, fx, made, ms.binds);
        }
    }
    /* a module's tensor named from inside its own methods (self.weight: the module is its receiver there, no name
     * the program holds): moved where the statement that constructed it binds it, by that name, with the device
     * bound there (self.loss_fn = SmoothedLoss(...) in a trainer's __init__: self.loss_fn.to(self.device)) */
    struct vw_frame cctor, ccall;
    struct vw_src cs;
    char cexpr[160];
    if (*v == RL_UNMOVED_MODULE && !fx->code[0] && rl_is_python(made) &&
        vw_fact_constructed_at(m, made, &cctor, &ccall) && ccall.python && vw_src_at(m, ccall.file, ccall.line, &cs) &&
        cs.binds_kind == DT_BINDS_CALL &&
        vw_device_expr_bound(m, k, k->want, &ccall, cexpr, sizeof cexpr)[0]) {
        const char *target = cs.nattrs == 1 && !cs.binds[0]    ? cs.binds_attr
                             : !cs.nattrs && rl_ident(cs.binds) ? cs.binds
                                                                : NULL;
        if (target && strlen(target) < 200) {
            rl_at_frame(fx, &ccall, made->seq);
            fx->site.site.line = cs.last;
            fx->kind = VW_FIX_MOVE_MODULE;
            vw_code_object_to(target, cexpr, fx->code, sizeof fx->code);
            rl_say(fx,
                   "move the module \"%s\" to %s once it is made: its %s \"%s\" is still where it was made, on %s",
                   target, d1, made->param ? "parameter" : "buffer", odd->name, d2);
            rl_evidence(fx, "constructed by %s and bound to %s at %s:%d", cctor.function, target, ccall.file, cs.first);
            return 1;
        }
    }
    /* a module made where no device is bound (a script that hands it to a trainer of its own): moved where the
     * class that calls it as its attribute, and holds the program's device, binds it (self.model.to(self.dev)) */
    char here[160], hattr[140], hcode[400];
    struct vw_frame hat, hcall;
    int hbefore = 0;
    if (*v == RL_UNMOVED_MODULE && fx->code[0] && rl_is_python(&fx->site) &&
        !vw_device_expr_bound(m, k, k->want, &fx->site.site, here, sizeof here)[0] &&
        vw_code_module_in_holder(m, k, &hat, &hbefore, &hcall, hattr, sizeof hattr, hcode, sizeof hcode)) {
        rl_at_frame(fx, &hat, made->seq);
        fx->before = hbefore;
        fx->kind = VW_FIX_MOVE_MODULE;
        snprintf(fx->code, sizeof fx->code, "%s", hcode);
        rl_say(fx,
               "move the module \"%s\" to %s where %s binds %s, with the device that object keeps: its %s \"%s\"%s "
               "is still where it was made, on %s",
               modname, d1, hat.function, hattr, made->param ? "parameter" : "buffer", odd->name,
               more ? " (and the others listed)" : "", d2);
        rl_evidence(fx, "%s calls it as %s (line %d); no device is bound where \"%s\" is made", hcall.function, hattr,
                    hcall.line, modname);
        return 1;
    }
    /* made in a function that has no device of its own to follow and returned it (a mask helper given only a
     * length): the move goes on its call, in the caller, where a device or a peer is bound (made-in-callee) */
    struct vw_fix at_call;
    memset(&at_call, 0, sizeof at_call);
    if ((*v == RL_UNMOVED_NEVER_MOVED || *v == RL_UNMOVED_DERIVED || *v == RL_UNMOVED_VIEW) &&
        rl_is_python(&fx->site) && !strcmp(fx->site.site.file, made->site.file) &&
        !strcmp(fx->site.site.function, made->site.function) && rl_move_at_call_site(m, k, &at_call, made)) {
        *fx = at_call;
        *v = RL_UNMOVED_MADE_IN_CALLEE;
        return 1;
    }
    if (!fx->code[0] && (derived >= 0 || view >= 0) && rl_device_at_factory(m, k, fx, made)) return 1;
    if (!fx->code[0] && !fx->before) { /* bound by a later statement of the same function */
        char names[8][256];
        int nn = vw_tensor_names(m, made->tensor, k->seq, names, 8);
        if (odd->name[0]) rl_code_at_binding(m, k, fx, odd->name);
        for (int i = 0; i < nn && !fx->code[0]; i++) rl_code_at_binding(m, k, fx, names[i]);
    }
    /* held by no name the trace knows (an attribute of an object that is no module: a trainer's
     * self.class_weight): made on the device where it is made, by the factory that took no device= */
    if (!fx->code[0] && !fx->nedits && !fx->before && *v == RL_UNMOVED_NEVER_MOVED && !odd->name[0] &&
        vw_same_site(&fx->site, made) && rl_device_at_factory(m, k, fx, made)) {
        struct vw_src as;
        if (vw_src_at(m, made->site.file, made->site.line, &as) && as.nattrs == 1 && !as.binds[0])
            rl_say(fx, "make %s (%s) on %s where it is made: %s", on, as.binds_attr, d1, fx->code);
        else
            rl_say(fx, "make %s on %s where it is made: %s", on, d1, fx->code);
        return 1;
    }
    /* made right where it is made, with others made the same way next to it and never moved either (MEAN and
     * STD): those go too, or the program fails again at the next one */
    struct vw_sibling sib[4];
    int nsib =
        fx->code[0] && !fx->before && vw_same_site(&fx->site, made) ? vw_fact_siblings(m, made, k->seq, sib, 4) : 0;
    if (nsib) {
        char expr[160];
        int last = fx->site.site.line;
        vw_device_expr(m, k, k->want, &made->site, expr, sizeof expr);
        rl_also(fx, "; and with it");
        for (int i = 0; i < nsib; i++) {
            size_t at = strlen(fx->code);
            char line[512];
            if (vw_code_move(m, &fx->site.site, sib[i].name, expr, line, sizeof line))
                snprintf(fx->code + at, sizeof fx->code - at, "\n%s", line);
            rl_also(fx, "%s\"%s\" (line %d)", i ? ", " : " ", sib[i].name, sib[i].line);
            if (sib[i].line > last) last = sib[i].line;
        }
        rl_also(fx, ", made the same way next to it and never moved");
        rl_evidence(fx, "%d more made the same way next to it, never moved", nsib);
        fx->site.site.line = last; /* after the last of them */
    }
    return 1;
}

int rl_unmoved_match(struct vw_rule_ctx *cx, enum rl_unmoved want, struct vw_fix *fx) {
    if (!cx->unmoved_done) {
        cx->unmoved_done = 1;
        cx->unmoved = RL_UNMOVED_NONE;
        memset(&cx->unmoved_fx, 0, sizeof cx->unmoved_fx);
        enum rl_unmoved v = RL_UNMOVED_NONE;
        if (analyse(cx->m, cx->k, &cx->unmoved_fx, &v)) cx->unmoved = v;
    }
    if (cx->unmoved != want) return 0;
    *fx = cx->unmoved_fx;
    return 1;
}
