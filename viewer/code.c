/* The code a fix writes, per language, and nothing else writes code: a move of a named tensor to a device
 * expression, in Python (`x = x.to(device)`), C on libdtrt (`x = dt_to(x, dev);`, wrapped as the program
 * wraps its own moves) and C++ on libtorch (`x = x.to(device);`); the program's device expression to write
 * (vw_device_expr); the module moves, state reloads and buffer registrations of native code; and the edits
 * inside a Python statement (.to(EXPR) on a call, device=, a keyword argument, .cpu() taken out,
 * register_buffer). The language and every text come from the source facts the producer recorded; nothing
 * here parses source. Where the code goes is source.c's. */
#include "diag.h"
#include "validate.h"

#include "op_families.h"
#include "trace_schema.h"

#include <ctype.h>
#include <devtrace/probe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether some statement of file has `key` (module_var, optimizer_var, device_var) naming `name` (a
 * module holder's as NAME->). */
static int names_var(void *ctx, const char *file, int line, const char *key, const char *v) {
    (void)file, (void)line, (void)key;
    const char *name = ctx;
    char holder[300];
    snprintf(holder, sizeof holder, "%s->", name);
    return vw_list_has(v, name) || vw_list_has(v, holder);
}

static int is_var_of(struct vw_model *m, const char *file, const char *key, const char *name) {
    if (!m->have_facts || !file || !file[0] || !name[0] || strlen(name) > 256) return 0;
    return vw_facts_each(vw_model_facts(m), file, 0, VW_FACTS_ALL_LINES, key, names_var, (void *)name) != 0;
}

const char *vw_code_module_var(struct vw_model *m, const struct vw_frame *site, char *buf, size_t size) {
    char v[256];
    buf[0] = 0;
    if (!site || vw_code_lang(m, site) != VW_LANG_C ||
        !vw_fact_value(m, site->file, site->line, DT_FACT_MODULE_VAR, v, sizeof v) || strchr(v, ','))
        return buf;
    snprintf(buf, size, "%s", v);
    return buf;
}

/* A device named by a string literal ("cuda:1", quotes included) as lang writes it: dt_cuda_device(1) in C,
 * torch::Device("cuda:1") in C++; expr itself otherwise. */
static const char *device_in(enum vw_lang lang, const char *expr, char *buf, size_t size) {
    size_t n = strlen(expr);
    if (lang == VW_LANG_PYTHON || n < 2 || expr[0] != '"' || expr[n - 1] != '"') return expr;
    if (lang == VW_LANG_CXX)
        snprintf(buf, size, "torch::Device(%s)", expr);
    else if (!strncmp(expr, "\"cuda:", 6))
        snprintf(buf, size, "dt_cuda_device(%.*s)", (int)(n - 7), expr + 6);
    else if (!strcmp(expr, "\"cuda\""))
        snprintf(buf, size, "dt_cuda_device(0)");
    else if (!strcmp(expr, "\"cpu\""))
        snprintf(buf, size, "dt_cpu_device()");
    else
        return expr;
    return buf;
}

int vw_code_move(struct vw_model *m, const struct vw_frame *site, const char *name, const char *dev, char *out,
                 size_t size) {
    char wrap[64] = "", ebuf[192];
    enum vw_lang lang = vw_code_lang(m, site);
    /* C++ on libdtrt (its moves are dt_to calls) writes the C API's moves */
    if (lang == VW_LANG_CXX && vw_fact_value(m, site->file, -1, DT_FACT_MOVE_WRAP, wrap, sizeof wrap)) lang = VW_LANG_C;
    out[0] = 0;
    /* only names and the program's plain device expressions become code: anything else from a trace is not
     * what a producer writes (or a tensor's name that is no variable: fc1.weight is the model's) */
    if (!vw_shape_member(name, lang != VW_LANG_PYTHON) || !vw_shape_device_code(dev) ||
        (wrap[0] && strcmp(wrap, "-") && !vw_shape_ident(wrap)))
        return 0;
    const char *expr = device_in(lang, dev, ebuf, sizeof ebuf);
    switch (lang) {
    case VW_LANG_PYTHON: snprintf(out, size, "%.200s = %.200s.to(%.150s)", name, name, expr); return 1;
    case VW_LANG_C:
        /* a module (a local of type dt_module *, as DWARF says) moves in place, its parameters with it */
        if (is_var_of(m, site->file, DT_FACT_MODULE_VAR, name)) {
            snprintf(out, size, "dt_module_to(%.200s, %.150s);", name, expr);
            return 1;
        }
        /* dt_to returns a new reference (the old one stays the caller's to free) or NULL after the runtime's
         * error handler ran: wrapped in the program's own check when its moves in this file use one */
        if (vw_fact_value(m, site->file, -1, DT_FACT_MOVE_WRAP, wrap, sizeof wrap) && strcmp(wrap, "-"))
            snprintf(out, size, "%.200s = %.60s(dt_to(%.200s, %.150s));", name, wrap, name, expr);
        else
            snprintf(out, size, "%.200s = dt_to(%.200s, %.150s);", name, name, expr);
        return 1;
    case VW_LANG_CXX: snprintf(out, size, "%.200s = %.200s.to(%.150s);", name, name, expr); return 1;
    case VW_LANG_NONE: break;
    }
    return 0;
}

static int ident(const char *s) {
    if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return 0;
    return 1;
}

int vw_code_in_scope(struct vw_model *m, const struct vw_frame *site, const char *name) {
    enum vw_lang lang = vw_code_lang(m, site);
    if ((lang != VW_LANG_C && lang != VW_LANG_CXX) || !name[0]) return 0;
    struct vw_src at, src;
    if (!vw_src_at(m, site->file, site->line, &at) || !at.function[0]) return 0;
    for (int l = at.first - 1; l > 0 && l >= at.first - 400; l--) {
        if (!vw_src_at(m, site->file, l, &src) || src.first != l) continue;
        if (strcmp(src.function, at.function)) break; /* out of the function */
        if (!vw_src_binds(&src, name)) continue;
        /* declared (or assigned) in a block that still holds the site */
        char block[64];
        int lo = 0, hi = 0;
        if (vw_fact_value(m, site->file, l, DT_FACT_BLOCK, block, sizeof block) &&
            sscanf(block, "%d %d", &lo, &hi) == 2 && lo <= site->line && site->line <= hi)
            return 1;
    }
    /* a parameter of the function (its header's params fact, as a Python def line's) is in scope in all of it */
    if (at.function_line > 0 && vw_src_at(m, site->file, at.function_line, &src))
        for (const char *p = src.params; (p = strstr(p, name)) != NULL; p++)
            if ((p == src.params || p[-1] == ',') && (p[strlen(name)] == ',' || !p[strlen(name)])) return 1;
    return 0;
}

/* The fields of the first `args` fact (FUNC \t ARG0 \t ARG1 ...) at `line` of file whose FUNC is `func`, split
 * in place into field[]; how many (0: none). */
static int call_args_at(struct vw_model *m, const char *file, int line, const char *func, char *v, size_t vsize,
                        char **field, int max) {
    const char *vals[256];
    int nvals = vw_facts_values(vw_model_facts(m), file, line, line, DT_FACT_CALL_ARGS, vals, NULL, 256), nf = 0;
    vw_facts_sort_values(vals, nvals);
    for (int r = 0; !nf && r < nvals; r++) {
        nf = vw_fact_args_fields(m, file, vals[r], v, vsize, field, max);
        if (nf && strcmp(field[0], func)) nf = 0;
    }
    return nf;
}

int vw_code_move_first(struct vw_model *m, const struct vw_step *move, const struct vw_step *made, struct vw_frame *at,
                       char *out, size_t size) {
    out[0] = 0;
    if (!move->has_site || !made->stack || vw_code_lang(m, &move->site) != VW_LANG_C) return 0;
    char v[1400], *field[3];
    if (call_args_at(m, move->site.file, move->site.line, "dt_module_to", v, sizeof v, field, 3) != 3 ||
        !ident(field[1]) || !ident(field[2]))
        return 0;
    /* the frame of the made step's stack in the function of the move, before it: where the program called
     * what made it (a step(), a load) */
    struct vw_frame frames[64];
    int n = vw_sym_stack(m->sym, made->stack, made->seq, frames, 64);
    for (int i = 0; i < n; i++) {
        const struct vw_frame *f = &frames[i];
        if (f->hidden || f->library || strcmp(f->file, move->site.file) || strcmp(f->function, move->site.function))
            continue;
        if (f->line >= move->site.line || !vw_code_in_scope(m, f, field[1]) || !vw_code_in_scope(m, f, field[2]))
            return 0;
        *at = *f;
        snprintf(out, size, "dt_module_to(%.200s, %.200s);", field[1], field[2]);
        return 1;
    }
    return 0;
}

int vw_code_module_move(struct vw_model *m, const struct vw_case *k, const struct vw_step *made, struct vw_frame *at,
                        char *name, size_t nsize, char *code, size_t size) {
    struct vw_frame fr[64];
    char var[160], expr[160], ebuf[192];
    if (!m->have_facts || !made->stack) return 0;
    int n = vw_sym_stack(m->sym, made->stack, made->seq, fr, 64);
    for (int i = 0; i < n; i++) {
        char wrap[64];
        if (fr[i].hidden || fr[i].library || !fr[i].file[0] || vw_code_lang(m, &fr[i]) != VW_LANG_CXX ||
            vw_fact_value(m, fr[i].file, -1, DT_FACT_MOVE_WRAP, wrap, sizeof wrap) || /* C++ on libdtrt: dt_to */
            !vw_fact_value(m, fr[i].file, fr[i].line, DT_FACT_MODULE_VAR, var, sizeof var))
            continue;
        size_t len = strlen(var);
        int holder = len > 2 && !strcmp(var + len - 2, "->");
        if (holder) var[len - 2] = 0;
        if (!ident(var)) return 0;
        *at = fr[i];
        snprintf(name, nsize, "%s", var);
        vw_device_expr(m, k, k->want, at, expr, sizeof expr); /* the program's, in the module's function */
        if (!vw_shape_device_code(expr)) return 0;
        snprintf(code, size, "%.150s%s(%.150s);", var, holder ? "->to" : ".to",
                 device_in(VW_LANG_CXX, expr, ebuf, sizeof ebuf));
        return 1;
    }
    return 0;
}

const char *vw_code_module_holder(struct vw_model *m, const struct vw_case *k, const struct vw_step *made,
                                  struct vw_frame *at, char *buf, size_t size) {
    struct vw_frame fr[64];
    char var[160], expr[160];
    buf[0] = 0;
    if (!m->have_facts || !made->stack || made->pystack) return buf;
    int n = vw_sym_stack(m->sym, made->stack, made->seq, fr, 64);
    for (int i = 0; i < n; i++) {
        if (fr[i].hidden || fr[i].library || !fr[i].file[0] || vw_code_lang(m, &fr[i]) != VW_LANG_C ||
            !vw_code_module_var(m, &fr[i], var, sizeof var)[0] || !ident(var))
            continue;
        /* the first frame outward that holds the module with the program's own device expression there */
        vw_device_expr(m, k, k->want, &fr[i], expr, sizeof expr);
        if (!buf[0] || (expr[0] != '"' && vw_shape_device_code(expr))) {
            *at = fr[i];
            snprintf(buf, size, "%s", var);
        }
        if (expr[0] != '"' && vw_shape_device_code(expr)) break;
    }
    return buf;
}

int vw_code_state_replace(struct vw_model *m, const struct vw_step *move, char *out, size_t size) {
    out[0] = 0;
    if (!move->has_site || vw_code_lang(m, &move->site) != VW_LANG_C) return 0;
    const struct vw_frame *site = &move->site;
    struct vw_src at, src;
    if (!vw_src_at(m, site->file, site->line, &at) || !at.function[0]) return 0;
    /* the one optimizer the function declared before the move (a local of type dt_optimizer *) */
    char opt[128] = "", v[120];
    for (int l = at.first - 1; l > 0 && l >= at.first - 400; l--) {
        if (!vw_src_at(m, site->file, l, &src) || src.first != l) continue;
        if (strcmp(src.function, at.function)) break;
        if (!vw_fact_value(m, site->file, l, DT_FACT_OPTIMIZER_VAR, v, sizeof v)) continue;
        if (strchr(v, ',') || !ident(v) || (opt[0] && strcmp(opt, v))) return 0; /* which one is not clear */
        snprintf(opt, sizeof opt, "%s", v);
    }
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s_state", opt);
    if (!opt[0] || !vw_code_in_scope(m, site, opt) || vw_code_in_scope(m, site, tmp)) return 0;
    snprintf(out, size,
             "dt_state_dict *%s = dt_optimizer_state_dict(%s);\n"
             "if (%s) dt_optimizer_load_state_dict(%s, %s), dt_state_dict_free(%s);",
             tmp, opt, tmp, opt, tmp, tmp);
    return 1;
}

int vw_code_register_field(struct vw_model *m, const struct vw_frame *made, struct vw_frame *at, char *out,
                           size_t size) {
    out[0] = 0;
    struct vw_src src, s;
    if (!made || vw_code_lang(m, made) != VW_LANG_C || !vw_src_at(m, made->file, made->line, &src) ||
        !src.binds_attr[0] || strchr(src.binds_attr, ',') || !src.function[0])
        return 0;
    /* the field's own name: after the last -> or . of the target's text (self->scale) */
    const char *field = src.binds_attr + strlen(src.binds_attr);
    while (field > src.binds_attr && field[-1] != '>' && field[-1] != '.') field--;
    if (field == src.binds_attr || !ident(field)) return 0;
    /* the one module (a dt_module * local) the function that made it declares, before it or after it */
    char mod[128] = "", v[120];
    int mod_first = 0;
    for (int dir = -1; dir <= 1; dir += 2)
        for (int l = dir < 0 ? src.first - 1 : src.last + 1; l > 0 && abs(l - src.first) <= 400; l += dir) {
            if (!vw_src_at(m, made->file, l, &s)) continue;
            if (strcmp(s.function, src.function)) break; /* out of the function */
            if (s.first != l || !vw_fact_value(m, made->file, l, DT_FACT_MODULE_VAR, v, sizeof v)) continue;
            if (strchr(v, ',') || !ident(v) || (mod[0] && strcmp(mod, v))) return 0; /* which one is not clear */
            snprintf(mod, sizeof mod, "%s", v);
            if (!mod_first || l > mod_first) mod_first = l;
        }
    if (!mod[0]) return 0;
    /* registered once both exist: after the later of the two statements, where both names are in scope */
    *at = *made;
    if (mod_first > src.first)
        at->line = mod_first;
    else if (!vw_code_in_scope(m, made, mod))
        return 0;
    snprintf(out, size, "dt_module_register_buffer(%s, \"%s\", %s);", mod, field, src.binds_attr);
    return 1;
}

const char *vw_code_operand_binding(struct vw_model *m, const struct vw_case *k, const struct vw_operand *o,
                                    struct vw_frame *at, char *buf, size_t size) {
    buf[0] = 0;
    const struct vw_frame *call = &k->call.site;
    if (!m->have_facts || !k->call.has_site || !o->nsteps) return buf;
    enum vw_lang lang = vw_code_lang(m, call);
    if (lang != VW_LANG_C && lang != VW_LANG_CXX) return buf;
    struct vw_src src, s;
    if (!vw_src_at(m, call->file, call->line, &src) || !src.function[0]) return buf;
    const struct vw_step *made = &o->chain[o->arrived];
    const char *vals[256];
    int nvals = vw_facts_values(vw_model_facts(m), call->file, src.first, src.last, DT_FACT_CALL_ARGS, vals, NULL, 256);
    int n = 0, bound_at = 0;
    for (int r = 0; n < 2 && r < nvals; r++) {
        char v[1400], *field[17];
        int nf = vw_fact_args_fields(m, call->file, vals[r], v, sizeof v, field, 17);
        for (int i = 1; i < nf && n < 2; i++) {
            const char *a = field[i];
            if (!ident(a) || !strcmp(a, buf) || is_var_of(m, call->file, DT_FACT_MODULE_VAR, a) ||
                is_var_of(m, call->file, DT_FACT_OPTIMIZER_VAR, a) || is_var_of(m, call->file, DT_FACT_DEVICE_VAR, a))
                continue;
            /* its latest binding before the failing statement, in its function and in scope there */
            int line = 0;
            for (int l = src.first - 1; l > 0 && l >= src.first - 400 && !line; l--) {
                if (!vw_src_at(m, call->file, l, &s) || s.first != l) continue;
                if (strcmp(s.function, src.function)) break;
                if (vw_src_binds(&s, a)) line = l;
            }
            char dexpr[8];
            if (!line || !vw_code_in_scope(m, call, a) ||
                vw_fact_value(m, call->file, line, DT_FACT_DEVICE_EXPR, dexpr, sizeof dexpr)) /* a move: moved */
                continue;
            /* made later in the same function than that binding: not what the binding holds */
            if (made->has_site && !strcmp(made->site.file, call->file) &&
                !strcmp(made->site.function, call->function) && made->site.line > line)
                continue;
            n++;
            snprintf(buf, size, "%s", a);
            bound_at = line;
        }
    }
    if (n != 1) {
        buf[0] = 0;
        return buf;
    }
    *at = *call;
    at->line = bound_at;
    return buf;
}

int vw_code_device_arg(struct vw_model *m, const struct vw_frame *site, int line, const char *func, int has_args,
                       int trailing_comma, const char *expr, char *out, size_t size) {
    char ebuf[192];
    enum vw_lang lang = vw_code_lang(m, site);
    out[0] = 0;
    if (!vw_shape_device_code(expr)) return 0;
    if (lang == VW_LANG_PYTHON) {
        snprintf(out, size, "%sdevice=%.150s", has_args && !trailing_comma ? ", " : "", expr);
        return 1;
    }
    if (lang != VW_LANG_CXX) return 0;
    /* the call's last argument, from its args fact (FUNC \t ARG0 \t ARG1 ...) */
    const char *vals[256];
    int nvals = vw_facts_values(vw_model_facts(m), site->file, line, line, DT_FACT_CALL_ARGS, vals, NULL, 256);
    int found = 0, options = 0;
    size_t fl = strlen(func);
    for (int r = 0; !found && r < nvals; r++) {
        const char *v = vals[r];
        if (!v || strncmp(v, func, fl) || (v[fl] && v[fl] != '\t')) continue;
        found = 1;
        const char *last = strrchr(v, '\t');
        options = last && (strstr(last, "::k") || strstr(last, "ptions") || strstr(last, "dtype") ||
                           strstr(last, "device") || strstr(last, "Device"));
    }
    if (!found || options) return 0;
    snprintf(out, size, "%s%.150s", has_args ? ", " : "", device_in(VW_LANG_CXX, expr, ebuf, sizeof ebuf));
    return 1;
}

static int ident_like(const char *s) {
    if (!*s || isdigit((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

/* Python: 1 when `name` is bound at site in its function: one of the function's parameters (the def line's
 * params fact), or bound by a statement of that function before site (or by site's statement itself, when
 * after is set: code placed after it). Conditional and loop bindings count: a name bound on one path only
 * is rare in the code a fix goes into, and then it is the program's own name. */
static int py_bound_at(struct vw_model *m, const struct vw_frame *site, const char *name, int after) {
    struct vw_src at, src;
    if (!name[0] || !vw_src_at(m, site->file, site->line, &at) || !at.function[0]) return 0;
    if (at.function_line > 0 && vw_src_at(m, site->file, at.function_line, &src) && vw_list_has(src.params, name))
        return 1;
    if (after && vw_src_binds(&at, name)) return 1;
    int stop = at.function_line > 0 ? at.function_line : 0;
    for (int l = at.first - 1; l > stop && l >= at.first - 600; l--) {
        if (!vw_src_at(m, site->file, l, &src) || src.first != l) continue;
        if (strcmp(src.function, at.function)) continue; /* a nested function's or class's statement */
        if (vw_src_binds(&src, name)) return 1;
    }
    return 0;
}

int vw_code_bound_before(struct vw_model *m, const struct vw_frame *site, const char *name) {
    return vw_code_lang(m, site) == VW_LANG_PYTHON && py_bound_at(m, site, name, 0);
}

/* Python: whether a statement of site's own function after site binds name (not a nested function's): a name
 * the function binds only later is a local that is not bound yet at site. */
static int py_bound_later(struct vw_model *m, const struct vw_frame *site, const char *name) {
    struct vw_src at, src;
    if (!name[0] || !vw_src_at(m, site->file, site->line, &at) || !at.function[0]) return 0;
    size_t fl = strlen(at.function);
    for (int l = at.last + 1; l <= at.last + 600; l++) {
        if (!vw_src_at(m, site->file, l, &src) || src.first != l) continue;
        if (!strcmp(src.function, at.function)) {
            if (vw_src_binds(&src, name)) return 1;
        } else if (strncmp(src.function, at.function, fl) || src.function[fl] != '.')
            break; /* past the function's end */
    }
    return 0;
}

/* Python: whether expression expr (x.device, device, self.device) can be written at site: its leading name is
 * bound there, or is not a local of site's function at all (a global, a closure's). */
static int py_usable_at(struct vw_model *m, const struct vw_frame *site, const char *expr) {
    char root[128];
    size_t n = strspn(expr, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    if (!n || n >= sizeof root) return 1;
    snprintf(root, sizeof root, "%.*s", (int)n, expr);
    return py_bound_at(m, site, root, 0) || !py_bound_later(m, site, root);
}

/* Python: whether a step of odd's chain was made by the statement at (its lines, in file and its function). */
static int odd_made_in(struct vw_model *m, const struct vw_operand *odd, const char *file, const struct vw_src *at) {
    struct vw_src src;
    for (int i = 0; i < odd->nsteps; i++) {
        const struct vw_step *s = &odd->chain[i];
        if (s->has_site && s->site.python && !strcmp(s->site.file, file) &&
            vw_same_function(s->site.function, at->function) && vw_src_at(m, s->site.file, s->site.line, &src) &&
            src.first == at->first)
            return 1;
    }
    return 0;
}

/* Python: the device variable (device_var fact: `device = idx.device`, `dev = torch.device(...)`) that the
 * latest statement of site's function before it binds, into buf; "" when none. A self.NAME one is a
 * method's: the class-wide case below takes it. */
static const char *py_local_device_var(struct vw_model *m, const struct vw_frame *site, char *buf, size_t size) {
    struct vw_src at, src;
    buf[0] = 0;
    if (!vw_src_at(m, site->file, site->line, &at) || !at.function[0] || !strcmp(at.function, "<module>"))
        return buf;
    int stop = at.function_line > 0 ? at.function_line : 0;
    for (int l = at.first; l > stop && l >= at.first - 600; l--) {
        if (!vw_src_at(m, site->file, l, &src) || src.first != l || strcmp(src.function, at.function)) continue;
        if (src.device_var[0] && strncmp(src.device_var, "self.", 5) && vw_src_binds(&src, src.device_var)) {
            snprintf(buf, size, "%s", src.device_var);
            return buf;
        }
    }
    return buf;
}

/* Python: the parameter of the function enclosing site's (a closure's free variable) to which that function's
 * caller handed a device (build_bias(n, device) making its rows in def row(i)), from st, the step made at site;
 * "" when none, or when site's own function binds that name (its own local hides it). */
static const char *py_enclosing_handed_device(struct vw_model *m, const struct vw_step *st,
                                              const struct vw_frame *site, char *buf, size_t size) {
    struct vw_src at;
    struct vw_frame f, caller;
    int64_t id = st->pystack, next;
    buf[0] = 0;
    if (!vw_src_at(m, site->file, site->line, &at)) return buf;
    for (int depth = 0; id && depth < 64 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next) {
        if (f.hidden || !f.python || strcmp(f.file, site->file) || !vw_src_nested_in(m, f.file, &at, f.function))
            continue;
        struct vw_step outer = *st;
        outer.site = f;
        outer.pystack = id;
        if (vw_fact_caller_of(m, &outer, &caller) && vw_fact_device_param(m, &outer, &caller, buf, size)[0] &&
            (py_bound_at(m, site, buf, 0) || py_bound_later(m, site, buf)))
            buf[0] = 0;
        break; /* the innermost enclosing function only */
    }
    return buf;
}

/* Python: the parameter of site's function to which its caller handed a device (the device_arg facts of the
 * caller's call: KVCache(b, n, d, device) -> "device" in KVCache.__init__), else of a function enclosing it,
 * found from a step of the odd operand's chain made at site (its stack names the caller); "" when none. */
static const char *py_handed_device(struct vw_model *m, const struct vw_case *k, int64_t dev,
                                    const struct vw_frame *site, char *buf, size_t size) {
    buf[0] = 0;
    if (!k || !k->odd) return buf;
    /* site's function returned before the op that failed (a helper making a batch's positions): its peers are not
     * the op's, but a tensor on dev its caller handed it is one (ids.device, its parameter's name) */
    int returned = !vw_py_on_stack(m, k->pystack, site->file, site->function);
    for (int i = 0; i < k->odd->nsteps && !buf[0]; i++) {
        const struct vw_step *st = &k->odd->chain[i];
        struct vw_frame caller;
        char p[64];
        if (!st->has_site || !st->site.python || st->site.line != site->line || strcmp(st->site.file, site->file) ||
            strcmp(st->site.function, site->function) || !vw_fact_caller_of(m, st, &caller))
            continue;
        if (vw_fact_device_param(m, st, &caller, buf, size)[0] && !py_usable_at(m, site, buf)) buf[0] = 0;
        if (!buf[0]) py_enclosing_handed_device(m, st, site, buf, size);
        if (!buf[0] && returned && vw_fact_tensor_param(m, k, dev, st, &caller, p, sizeof p)[0] &&
            py_usable_at(m, site, p) && strlen(p) + 8 < size)
            snprintf(buf, size, "%s.device", p);
    }
    /* site a frame of the failing stack (a loop that hands its batch to the model): its caller's call there */
    struct vw_frame *f = buf[0] ? NULL : calloc(VW_PY_FRAMES, sizeof *f);
    int nf = f ? vw_py_frames(m, k->pystack, f, VW_PY_FRAMES) : 0;
    for (int i = 0; i < nf; i++) {
        if (f[i].hidden || !f[i].python || f[i].line != site->line || strcmp(f[i].file, site->file) ||
            strcmp(f[i].function, site->function))
            continue;
        int up = i + 1;
        while (up < nf && f[up].hidden) up++;
        struct vw_step st;
        memset(&st, 0, sizeof st);
        st.has_site = 1;
        st.site = f[i];
        if (up < nf && vw_fact_device_param(m, &st, &f[up], buf, size)[0] && !py_usable_at(m, site, buf)) buf[0] = 0;
        break;
    }
    free(f);
    return buf;
}

/* Python: site is in a method (its function's first parameter is self): the length of its class's qualified
 * name in site's function ("Net" of "Net.forward"), else 0. */
static size_t py_method_class(struct vw_model *m, const struct vw_frame *site, char *fn, size_t fsize) {
    struct vw_src at, def;
    if (!vw_src_at(m, site->file, site->line, &at) || at.function_line <= 0 ||
        !vw_src_at(m, site->file, at.function_line, &def))
        return 0;
    if (strncmp(def.params, "self", 4) || (def.params[4] && def.params[4] != ',')) return 0;
    const char *dot = strrchr(at.function, '.');
    if (!dot || dot == at.function || strstr(at.function, "<locals>") == dot - 8) return 0;
    snprintf(fn, fsize, "%s", at.function);
    return (size_t)(dot - at.function);
}

/* The first device variable a statement of file binds (device_var facts, in line order) that accept takes, given
 * the function it is bound in (that line's statement: vw_src_at), into buf; "" when none. */
static const char *device_var_where(struct vw_model *m, const char *file,
                                    int (*accept)(const char *var, const char *function, void *ctx), void *ctx,
                                    char *buf, size_t size) {
    const char *vals[256];
    int lines[256], n = vw_facts_values(vw_model_facts(m), file, 0, VW_FACTS_ALL_LINES, DT_FACT_DEVICE_VAR, vals,
                                        lines, 256);
    struct vw_src src;
    buf[0] = 0;
    for (int r = 0; r < n && !buf[0]; r++)
        if (strlen(vals[r]) < size && vw_src_at(m, file, lines[r], &src) && accept(vals[r], src.function, ctx))
            snprintf(buf, size, "%s", vals[r]);
    return buf;
}

struct class_ctx {
    const char *fn; /* "Net.forward" */
    size_t cl;      /* its class's length: 3 */
};

/* self.NAME, bound in a method of the same class: "Net.__init__" for "Net.forward", not a nested class's */
static int class_device_attr(const char *v, const char *fnc, void *ctx) {
    const struct class_ctx *c = ctx;
    return !strncmp(v, "self.", 5) && !strncmp(fnc, c->fn, c->cl) && fnc[c->cl] == '.' &&
           !strchr(fnc + c->cl + 1, '.') && vw_shape_device_code(v);
}

/* the name v, bound at the top of the file */
static int module_level_var(const char *v, const char *fnc, void *ctx) {
    return !strcmp(v, (const char *)ctx) && !strcmp(fnc, DT_PY_TOP_LEVEL);
}

/* Python: a device attribute of site's class (self.NAME) that a method of the class binds to a device
 * (device_var fact: `self.device = ...` in __init__), into buf; "" when none. */
static const char *py_class_device_attr(struct vw_model *m, const struct vw_frame *site, char *buf, size_t size) {
    char fn[256];
    buf[0] = 0;
    size_t cl = py_method_class(m, site, fn, sizeof fn);
    if (!cl) return buf;
    struct class_ctx c = {fn, cl};
    return device_var_where(m, site->file, class_device_attr, &c, buf, size);
}

/* Python: whether the trace saw a parameter made while a module of class cls (its qualified name's first cl
 * bytes) was constructed (a frame of cls.__init__ on the parameter's stack): such a module has parameters, and
 * next(self.parameters()) names their device. */
static int py_class_has_params(struct vw_model *m, const char *cls, size_t cl) {
    return vw_fact_params_made_in(m, cls, cl);
}

/* Python: whether site's function was a frame of mismatch k's Python stack. */
static int py_on_stack(struct vw_model *m, const struct vw_case *k, const struct vw_frame *site) {
    return vw_py_on_stack(m, k->pystack, site->file, site->function);
}

/* Whether k's failing op, in site's function, took a parameter on dev (self.weight, in an nn.Embedding subclass's
 * forward that has no constructor of its own to see its parameters made in): the module has parameters. */
static int op_param_here(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site) {
    struct vw_frame f[64];
    int nf = k ? vw_py_frames(m, k->pystack, f, 64) : 0, here = 0; /* the failing op's innermost program frame is
                                                                      * site's function */
    for (int i = 0; i < nf; i++)
        if (!f[i].hidden && f[i].python) {
            here = !strcmp(f[i].file, site->file) && vw_same_function(f[i].function, site->function);
            break;
        }
    for (int i = 0; here && i < k->n; i++) {
        const struct vw_operand *o = &k->ops[i];
        for (int st = 0; o->dev == dev && !o->odd && st < o->nsteps; st++)
            if (o->chain[st].param && o->chain[st].tensor == o->tensor) return 1;
    }
    return 0;
}

/* Python: v, a device attribute of self (self.device) that a method of class cls (qualified, "Trainer") moved to
 * the device with, written at site outside that class by the name that site's function (or the top of its file)
 * bound to an instance of it before site (trainer = Trainer(model, lr): trainer.device), into buf; "" when none.
 * The instance is the latest single name bound by a call of the class before site, not bound again after it. */
static const char *py_instance_attr(struct vw_model *m, const struct vw_frame *site, const char *cls, size_t cl,
                                    const char *v, char *buf, size_t size) {
    struct vw_src at, src;
    buf[0] = 0;
    const char *cname = cls + cl; /* the class's own name: its qualified name's last component */
    while (cname > cls && cname[-1] != '.') cname--;
    size_t nl = (size_t)(cls + cl - cname);
    if (!nl || !vw_src_at(m, site->file, site->line, &at)) return buf;
    char name[128] = "";
    for (int l = at.function_line > 0 ? at.function_line + 1 : 1; l < at.first; l++) {
        if (!vw_src_at(m, site->file, l, &src) || src.first != l || strcmp(src.function, at.function)) continue;
        if (name[0] && vw_src_binds(&src, name)) name[0] = 0; /* bound again: no longer the instance */
        if (!vw_shape_ident(src.binds) || strlen(src.binds) >= sizeof name) continue;
        for (int c = 0; c < src.ncalls; c++) {
            const char *f = src.calls[c].func, *last = strrchr(f, '.');
            last = last ? last + 1 : f;
            if (strlen(last) == nl && !strncmp(last, cname, nl) && !src.calls[c].temporary) {
                size_t bl = strlen(src.binds); /* shorter than name: checked above */
                memcpy(name, src.binds, bl + 1);
                break;
            }
        }
    }
    if (name[0] && strlen(name) + strlen(v + 4) < size) {
        size_t n = strlen(name);
        memcpy(buf, name, n);
        snprintf(buf + n, size - n, "%s", v + 4);
    }
    if (buf[0] && !py_usable_at(m, site, buf)) buf[0] = 0;
    return buf;
}

/* A device expression the fix may use at site, the program's own first and never a device literal the
 * program did not write there:
 *  1. one the program used in a move to dev from the function of site (the variable it moves its batches
 *     with; a literal it wrote is not taken: it may name another device on another run or rank), or, Python,
 *     as the device= of a factory that made a tensor on dev (a variable it passes only to its factories);
 *  2. Python: a device variable the function binds before site (`device = idx.device`), or the parameter its
 *     caller handed a device (`KVCache(b, n, d, device)`: the constructor's `device`);
 *  3. Python, in a method: one the program used in a move to dev from another method of the class, when it
 *     is an attribute of self (`self.device`), or a device attribute a method of the class binds;
 *  4. native code: a variable one of the program's moves to dev used that is declared in site's function
 *     too, in scope at site;
 *  5. a name (Python: or an attribute of one, args.device) bound to a device at the top of the file of site,
 *     that one of its moves used; else, Python, a device attribute of self one of its moves used in a method of
 *     a class, written outside that class by the name site's function bound an instance of it to (trainer =
 *     Trainer(...): trainer.device);
 *  6. Python: the device of a peer of the failing op (an operand on dev) by a name bound at site
 *     (`x.device`): code that receives its tensors from callers, a module's forward, follows them; else of a
 *     tensor on dev that site's function made before site and still held by the name it bound it to at the
 *     mismatch (`inputs_embeds.device`), else of a module parameter by the module's name bound at site;
 *  7. else a string literal.
 * In script code 1 and 5 are the program's variable; in library and model code 1-3 and 6 keep the fix
 * device-agnostic. */
/* vw_device_expr; bound_only: "" instead of the module's device and the literal (1-6 only). */
static const char *device_expr(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                               int bound_only, char *buf, size_t size) {
    char name[32];
    vw_device_name(dev, name, sizeof name);
    snprintf(buf, size, "\"%s\"", name);
    if (bound_only) buf[0] = 0;
    if (!m->have_facts || !site || dev == 0) return buf;
    enum vw_lang lang = vw_code_lang(m, site);
    char fn[256];
    size_t cl = lang == VW_LANG_PYTHON ? py_method_class(m, site, fn, sizeof fn) : 0;
    /* the sites of the program's copies and moves to dev before the failing op, newest first */
    struct vw_frame *moves = calloc(512, sizeof *moves);
    int nmoves = moves ? vw_fact_moves_to(m, dev, k ? k->seq : INT64_MAX, moves, 256) : 0;
    /* then the sites of Python factories that made tensors on dev with the program's device= (a device variable
     * a program passes only to its factories is the program's as well) */
    int nmade = moves ? vw_fact_made_on(m, dev, k ? k->seq : INT64_MAX, moves + nmoves, 256) : 0;
    char local[128] = "", global[128] = "", scoped[128] = "", tried[128] = "", classwide[128] = "", inst[160] = "",
         inst_tried[256] = ""; /* the class whose instance was looked for last: each class's once */
    for (int mv = 0; !local[0] && mv < nmoves + nmade; mv++) {
        const struct vw_frame f = moves[mv];
        struct vw_src src;
        if (!vw_src_at(m, f.file, f.line, &src)) continue;
        const char *v = src.device_expr;
        if (mv >= nmoves) { /* a factory's line: the device= of its calls, when they all say one */
            v = "";
            if (!f.python) continue;
            for (int c = 0; c < src.ncalls; c++)
                if (src.calls[c].device[0]) {
                    if (v[0] && strcmp(v, src.calls[c].device)) {
                        v = "";
                        break;
                    }
                    v = src.calls[c].device;
                }
        }
        int plain = strlen(v) < 128 && vw_shape_device_code(v) && v[0] != '"' && v[0] != '\''; /* no literal */
        if (!plain) continue;
        /* Python: not a name site's function binds only after site (device=causal_mask.device, taken from a
         * factory further down, where causal_mask is not bound yet; a global of that name is shadowed there) */
        if (lang == VW_LANG_PYTHON && !py_usable_at(m, site, v)) continue;
        if (!strcmp(f.file, site->file) && vw_same_function(f.function, site->function))
            snprintf(local, sizeof local, "%s", v);
        else if (cl && !classwide[0] && !strncmp(v, "self.", 5) && !strcmp(f.file, site->file) &&
                 !strncmp(src.function, fn, cl) && src.function[cl] == '.' && !strchr(src.function + cl + 1, '.'))
            snprintf(classwide, sizeof classwide, "%s", v); /* self.device, moved with in another method */
        else if (lang == VW_LANG_PYTHON && !inst[0] && !strncmp(v, "self.", 5)) {
            /* self.device of another class's method, outside that class: by the instance site's function holds
             * (trainer.device) */
            const char *mdot = strrchr(src.function, '.');
            size_t ml = mdot ? (size_t)(mdot - src.function) : 0;
            if (ml && ml < sizeof inst_tried && !(cl && !strncmp(src.function, fn, cl) && src.function[cl] == '.') &&
                (strlen(inst_tried) != ml || strncmp(inst_tried, src.function, ml))) {
                memcpy(inst_tried, src.function, ml);
                inst_tried[ml] = 0;
                py_instance_attr(m, site, src.function, ml, v, inst, sizeof inst);
            }
        }
        else if (!scoped[0] && strcmp(v, tried) && ident_like(v)) {
            /* native code: a device variable the program moves with elsewhere (a lambda, a helper it passed
             * it to) that is declared in the site's function too, in scope there */
            snprintf(tried, sizeof tried, "%s", v);
            if (vw_code_in_scope(m, site, v)) snprintf(scoped, sizeof scoped, "%s", v);
        }
        if (!local[0] && !scoped[0] && !global[0] &&
            (!strchr(v, '.') || (lang == VW_LANG_PYTHON && strncmp(v, "self.", 5)))) {
            /* a name the program bound to a device at the top of the file of the site, or an attribute of one
             * (args.device = torch.device(...) after args = parser.parse_args()) */
            device_var_where(m, site->file, module_level_var, (void *)v, global, sizeof global);
        }
    }
    free(moves);
    char var[128];
    if (local[0]) return snprintf(buf, size, "%s", local), buf;
    if (lang == VW_LANG_PYTHON && py_local_device_var(m, site, var, sizeof var)[0])
        return snprintf(buf, size, "%s", var), buf;
    if (lang == VW_LANG_PYTHON && py_handed_device(m, k, dev, site, var, sizeof var)[0])
        return snprintf(buf, size, "%s", var), buf;
    if (classwide[0]) return snprintf(buf, size, "%s", classwide), buf;
    if (cl && py_class_device_attr(m, site, var, sizeof var)[0]) return snprintf(buf, size, "%s", var), buf;
    if (scoped[0]) return snprintf(buf, size, "%s", scoped), buf;
    if (global[0]) return snprintf(buf, size, "%s", global), buf;
    if (inst[0]) return snprintf(buf, size, "%s", inst), buf;
    if (k && vw_peer_device_expr(m, k, dev, site, var, sizeof var)[0]) return snprintf(buf, size, "%s", var), buf;
    if (bound_only) return buf;
    if (vw_code_module_device(m, k, dev, site, var, sizeof var)[0]) return snprintf(buf, size, "%s", var), buf;
    return buf;
}

const char *vw_code_module_device(struct vw_model *m, const struct vw_case *k, int64_t dev,
                                  const struct vw_frame *site, char *buf, size_t size) {
    char fn[256];
    struct vw_src at, def;
    size_t cl;
    buf[0] = '\0';
    /* a method of a module that has parameters: where they are (the module's own device: model code runs
     * wherever its module was moved) */
    if (m->have_facts && site && vw_code_lang(m, site) == VW_LANG_PYTHON &&
        (cl = py_method_class(m, site, fn, sizeof fn)) && vw_src_at(m, site->file, site->line, &at) &&
        vw_src_at(m, site->file, at.function_line, &def) && vw_py_module_def(&def) &&
        (py_class_has_params(m, fn, cl) || op_param_here(m, k, dev, site)))
        snprintf(buf, size, "next(self.parameters()).device");
    return buf;
}

/* Python: whether the root names of guard (args of args.cuda; not torch's own, nor a word of the language) can be
 * written at site: bound there (a parameter, a statement of its function before it), or bound at the top of
 * site's file and not a local of site's function; self only when move, the guarded move the guard comes from,
 * is in a method of site's class. */
static int py_guard_usable(struct vw_model *m, const struct vw_frame *site, const struct vw_frame *move,
                           const char *guard) {
    static const char *const words[] = {"not", "and", "or", "is", "None", "True", "False", "torch"};
    char fn[256], mfn[256];
    for (const char *p = guard; *p;) {
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (!n || (p > guard && p[-1] == '.') || (*p >= '0' && *p <= '9')) { /* an attribute's name, a number */
            p += n ? n : 1;
            continue;
        }
        char root[128];
        if (n >= sizeof root) return 0;
        snprintf(root, sizeof root, "%.*s", (int)n, p);
        p += n;
        int word = 0;
        for (size_t i = 0; i < sizeof words / sizeof *words; i++) word |= !strcmp(root, words[i]);
        if (word) continue;
        if (!strcmp(root, "self")) {
            size_t cl = py_method_class(m, site, fn, sizeof fn), ml = py_method_class(m, move, mfn, sizeof mfn);
            if (!cl || cl != ml || strncmp(fn, mfn, cl) || strcmp(site->file, move->file)) return 0;
            continue;
        }
        if (py_bound_at(m, site, root, 0)) continue;
        if (py_bound_later(m, site, root)) return 0;
        const char *vals[256];
        int lines[256], nv = vw_facts_values(vw_model_facts(m), site->file, 0, VW_FACTS_ALL_LINES, DT_FACT_BINDS,
                                             vals, lines, 256), top = 0;
        struct vw_src src;
        for (int r = 0; r < nv && !top; r++)
            top = vw_list_has(vals[r], root) && vw_src_at(m, site->file, lines[r], &src) &&
                  !strcmp(src.function, DT_PY_TOP_LEVEL);
        if (!top) return 0;
    }
    return 1;
}

int vw_code_guard_usable(struct vw_model *m, const struct vw_frame *site, const struct vw_frame *move,
                         const char *guard) {
    return vw_code_lang(m, site) == VW_LANG_PYTHON && vw_shape_guard(guard) && py_guard_usable(m, site, move, guard);
}

int vw_code_cuda_idiom(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                       char *guard, size_t gsize) {
    char expr[160];
    guard[0] = 0;
    /* .cuda() goes to the current device: cuda:0 (the device's code, not its name) */
    if (!m->have_facts || !site || dev != (int64_t)DT_DEVICE_CODE(DTP_DEVICE_CUDA, 0) ||
        vw_code_lang(m, site) != VW_LANG_PYTHON ||
        device_expr(m, k, dev, site, 1, expr, sizeof expr)[0])
        return 0;
    struct vw_frame *moves = calloc(256, sizeof *moves);
    int nmoves = moves ? vw_fact_moves_to(m, dev, k ? k->seq : INT64_MAX, moves, 256) : 0, best = -1, rank = 0,
        named = 0;
    struct vw_src src, chosen;
    for (int mv = 0; mv < nmoves; mv++) {
        if (!moves[mv].python || !vw_src_at(m, moves[mv].file, moves[mv].line, &src)) continue;
        int cuda = 0;
        for (int c = 0; c < src.ncalls; c++)
            cuda |= vw_src_call_method(&src.calls[c], DT_METHOD_MOVE_CUDA) && !src.calls[c].has_args;
        if (!cuda) {
            /* a move that names its device (.to(device)) elsewhere: the program's terms are that name, not this
             * idiom */
            if ((named = src.device_expr[0] && src.device_expr[0] != '"' && src.device_expr[0] != '\'')) break;
            continue;
        }
        int r = !strcmp(moves[mv].file, site->file) ? (vw_same_function(moves[mv].function, site->function) ? 3 : 2)
                                                     : 1; /* the nearest: site's function, its file, any */
        if (r > rank) rank = r, best = mv, chosen = src;
    }
    int found = !named && best >= 0;
    if (found && chosen.guard[0]) {
        found = strlen(chosen.guard) < gsize && vw_code_guard_usable(m, site, &moves[best], chosen.guard);
        if (found) snprintf(guard, gsize, "%s", chosen.guard);
    }
    free(moves);
    return found;
}

void vw_code_cuda_move(const char *name, const char *guard, int in_place, char *out, size_t size) {
    out[0] = 0;
    if (!vw_shape_member(name, 0) || (guard[0] && !vw_shape_guard(guard))) return;
    if (in_place)
        snprintf(out, size, "%s%.200s%s%.200s.cuda()", guard[0] ? "if " : "", guard, guard[0] ? ": " : "", name);
    else
        snprintf(out, size, "%s%.200s%s%.200s = %.200s.cuda()", guard[0] ? "if " : "", guard, guard[0] ? ": " : "",
                 name, name);
}

const char *vw_device_expr(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                           char *buf, size_t size) {
    return device_expr(m, k, dev, site, 0, buf, size);
}

const char *vw_device_expr_bound(struct vw_model *m, const struct vw_case *k, int64_t dev,
                                 const struct vw_frame *site, char *buf, size_t size) {
    return device_expr(m, k, dev, site, 1, buf, size);
}

/* Python: 0 when name, which the program gave peer o's tensor (or the step `from` of its chain) somewhere, holds
 * another tensor at site: a statement of site's function that binds it was running when a step of the chain
 * before the tensor came to the operand's device happened (`x, y = make_dataset()`, the dataset a batch was cut
 * from and copied to the device, where only the model's forward called the batch `x`), and none that was running
 * when a step on that device happened (`x = x.cuda()`, `logits = model(x)`). A parameter of site's function, or a
 * name the chain does not say (`input_ids, labels = batch`, plain Python), is taken to hold it. */
static int py_peer_name_at(struct vw_model *m, const struct vw_operand *o, int from, const struct vw_frame *site,
                           const char *name) {
    struct vw_src at, def, src;
    if (!vw_src_at(m, site->file, site->line, &at)) return 0;
    if (at.function_line > 0 && vw_src_at(m, site->file, at.function_line, &def) && vw_list_has(def.params, name))
        return 1;
    struct vw_frame *fs = calloc(VW_PY_FRAMES, sizeof *fs);
    int here = 0, other = 0;
    for (int st = from; fs && st < o->nsteps && !here; st++) {
        int nf = vw_py_frames(m, o->chain[st].pystack, fs, VW_PY_FRAMES), binds = 0;
        for (int i = 0; i < nf && !binds; i++)
            binds = !fs[i].hidden && fs[i].python && !strcmp(fs[i].file, site->file) &&
                    vw_same_function(fs[i].function, site->function) && fs[i].line <= at.last &&
                    vw_src_at(m, fs[i].file, fs[i].line, &src) && vw_src_binds(&src, name);
        if (binds && o->chain[st].dev == o->dev)
            here = 1;
        else if (binds)
            other = 1;
    }
    free(fs);
    return here || !other;
}

const char *vw_peer_device_expr(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                                char *buf, size_t size) {
    buf[0] = 0;
    enum vw_lang lang = site ? vw_code_lang(m, site) : VW_LANG_NONE;
    if (k && (lang == VW_LANG_C || lang == VW_LANG_CXX)) {
        /* C and C++: an operand of the failing call on dev, by the name the call passed it (the call-site
         * facts), declared or a parameter where the fix goes: image.device() (C++), dt_device_of(x) (C) */
        for (int i = 0; i < k->n && !buf[0]; i++) {
            const struct vw_operand *o = &k->ops[i];
            char name[128];
            if (o->dev != dev || o->scalar || o->odd || !o->tensor || (k->odd && o->tensor == k->odd->tensor) ||
                !ident(vw_code_operand_name(m, k, o, name, sizeof name)) || strlen(name) + 16 > size ||
                !vw_code_in_scope(m, site, name))
                continue;
            snprintf(buf, size, lang == VW_LANG_CXX ? "%s.device()" : "dt_device_of(%s)", name);
        }
        return buf;
    }
    if (!k || !site || lang != VW_LANG_PYTHON) return buf;
    const int64_t odd = k->odd ? k->odd->tensor : 0;
    /* a name that site's statement binds to the odd tensor itself (x = self.conv(x).cpu(): the fix goes after
     * it) names the odd tensor there, whatever the peer was called where the op failed */
    struct vw_src here;
    const int odd_here = k->odd && vw_src_at(m, site->file, site->line, &here) && odd_made_in(m, k->odd, site->file, &here);
    /* the operands first, then what each was computed from on that device (self.proj(x) * scale: x) */
    for (int depth = 0; depth < VW_MAX_STEPS && !buf[0]; depth++)
        for (int i = 0; i < k->n && !buf[0]; i++) {
            const struct vw_operand *o = &k->ops[i];
            if (o->dev != dev || o->scalar || o->odd || !o->tensor || o->tensor == odd) continue;
            if (depth && (depth >= o->nsteps || o->chain[depth].dev != dev || !o->chain[depth].tensor ||
                          o->chain[depth].tensor == odd))
                continue;
            int64_t t = depth ? o->chain[depth].tensor : o->tensor;
            char names[8][256];
            int n = vw_tensor_names(m, t, k->seq + 1, names, 8);
            if (!depth && n < 8 && o->name[0]) snprintf(names[n++], 256, "%s", o->name);
            for (int j = 0; j < n && !buf[0]; j++)
                if (ident_like(names[j]) && strlen(names[j]) + 8 < size && py_bound_at(m, site, names[j], 1) &&
                    !(odd_here && vw_src_binds(&here, names[j])) && py_peer_name_at(m, o, depth, site, names[j]))
                    snprintf(buf, size, "%s.device", names[j]);
        }
    /* a tensor on dev the site's function made before site, by a statement that bound it to a name the program
     * still held it by at the mismatch, and that is bound at site: inputs_embeds.device where
     * `inputs_embeds = self.embed_tokens(input_ids)` came first (a peer of the fix's statement, not of the op) */
    if (!buf[0]) {
        char(*held)[128] = calloc(64, sizeof *held);
        struct vw_frame *made = calloc(64, sizeof *made);
        struct vw_src at, src;
        int n = held && made && vw_src_at(m, site->file, site->line, &at) ? vw_fact_held_on(m, k, dev, held, made, 64)
                                                                            : 0;
        for (int i = 0; i < n && !buf[0]; i++)
            if (made[i].python && !strcmp(made[i].file, site->file) &&
                vw_same_function(made[i].function, site->function) && made[i].line < at.first &&
                ident_like(held[i]) && strlen(held[i]) + 8 < size && !vw_src_binds(&at, held[i]) &&
                vw_src_at(m, site->file, made[i].line, &src) && vw_src_binds(&src, held[i]) &&
                py_bound_at(m, site, held[i], 0))
                snprintf(buf, size, "%s.device", held[i]);
        free(held);
        free(made);
    }
    /* a parameter of site's function by which it received tensors on dev only, when the function was on the
     * stack at the mismatch (the recorder named its locals then): input_ids.device in a forward whose failing
     * op embeds a range of positions (a peer of the function, not of the op) */
    struct vw_src at, def;
    if (!buf[0] && py_on_stack(m, k, site) && vw_src_at(m, site->file, site->line, &at) && at.function_line > 0 &&
        vw_src_at(m, site->file, at.function_line, &def) && def.params[0]) {
        char(*named)[128] = calloc(64, sizeof *named);
        int n = named ? vw_fact_named_only_on(m, k, dev, named, 64) : 0;
        for (int i = 0; i < n && !buf[0]; i++)
            if (ident_like(named[i]) && strlen(named[i]) + 8 < size && vw_list_has(def.params, named[i]) &&
                !vw_src_binds(&at, named[i]))
                snprintf(buf, size, "%s.device", named[i]);
        free(named);
    }
    /* a parameter of a module the site holds by a name ("discriminator.0.weight", the recorder's path from the
     * program's variable): that module's device, next(discriminator.parameters()).device */
    for (int i = 0; i < k->n && !buf[0]; i++) {
        const struct vw_operand *o = &k->ops[i];
        int param = 0;
        for (int st = 0; st < o->nsteps && !param; st++) param = o->chain[st].param && o->chain[st].tensor == o->tensor;
        if (o->dev != dev || o->scalar || o->odd || !param) continue;
        const char *dot = strchr(o->name, '.');
        char var[128];
        if (!dot || (size_t)(dot - o->name) >= sizeof var) continue;
        snprintf(var, sizeof var, "%.*s", (int)(dot - o->name), o->name);
        if (ident_like(var) && strlen(var) + 30 < size && py_bound_at(m, site, var, 1))
            snprintf(buf, size, "next(%s.parameters()).device", var);
    }
    return buf;
}

/* Python: the statement of a method of class cls (its qualified name's first cl bytes) that binds attribute attr
 * of self (binds_attr "self.ATTR"), the first in line order; its line, or 0. */
static int py_class_binding(struct vw_model *m, const char *file, const char *cls, size_t cl, const char *attr) {
    const char *vals[256];
    int lines[256], n = vw_facts_values(vw_model_facts(m), file, 0, VW_FACTS_ALL_LINES, DT_FACT_BINDS_ATTR, vals,
                                        lines, 256);
    for (int i = 0; i < n; i++) {
        struct vw_src src;
        if (!vw_list_has(vals[i], attr) || !vw_src_at(m, file, lines[i], &src) || strncmp(src.function, cls, cl) ||
            src.function[cl] != '.' || strchr(src.function + cl + 1, '.'))
            continue;
        return src.first;
    }
    return 0;
}

/* vw_code_module_in_holder over the failing stack's frames fs[] (innermost first). */
static int module_in_holder(struct vw_model *m, const struct vw_case *k, const struct vw_frame *fs, int nf,
                            struct vw_frame *at, int *before, struct vw_frame *caller, char *attr, size_t asize,
                            char *code, size_t size) {
    int inside = 0; /* a frame of a module's method (the program's, or torch's own) is inside the one looked at */
    for (int i = 0; i < nf; i++) {
        const struct vw_frame f = fs[i];
        if (f.hidden || f.library || !f.python) {
            inside = 1;
            continue;
        }
        char fn[256], expr[160], a[128] = "", self_attr[140];
        struct vw_src gs, def;
        size_t cl = py_method_class(m, &f, fn, sizeof fn);
        if (!cl || !vw_src_at(m, f.file, f.line, &gs) || !vw_src_at(m, f.file, gs.function_line, &def)) return 0;
        if (vw_py_module_def(&def)) { /* the module's own forward, or a submodule's */
            inside = 1;
            continue;
        }
        if (!inside) return 0;
        /* a class of the program's that holds the device (self.dev) and calls the module as its attribute */
        if (strncmp(vw_device_expr_bound(m, k, k->want, &f, expr, sizeof expr), "self.", 5) || !ident(expr + 5))
            return 0;
        int calls = 0;
        for (int c = 0; c < gs.ncalls; c++)
            if (!strncmp(gs.calls[c].func, "self.", 5) && ident(gs.calls[c].func + 5) && strlen(gs.calls[c].func) < 130)
                calls++, snprintf(a, sizeof a, "%s", gs.calls[c].func + 5);
        if (calls != 1) return 0;
        snprintf(self_attr, sizeof self_attr, "self.%s", a);
        int bound = py_class_binding(m, f.file, fn, cl, self_attr);
        struct vw_src bs, ds;
        memset(&ds, 0, sizeof ds);
        if (!bound || !vw_src_at(m, f.file, bound, &bs)) return 0;
        /* the device's own binding, when the same function makes it later (self.dev = ... after self.model =
         * model): the move goes after it; at the function's own level, not inside an if of that binding */
        int last = bs.last;
        for (int l = bs.last + 1; l < bs.last + 200; l++) {
            struct vw_src s;
            if (!vw_src_at(m, f.file, l, &s) || s.first != l) continue;
            if (strcmp(s.function, bs.function)) break;
            if (vw_list_has(s.binds_attr, expr) || !strcmp(s.device_var, expr)) ds = s, last = s.last;
        }
        *caller = f;
        *at = f;
        *before = 0;
        at->line = bs.first;
        snprintf(at->function, sizeof at->function, "%s", bs.function);
        if (last > bs.last) {
            /* after the device's binding: before the next statement of the function at the attribute binding's
             * indentation (past an else branch), or right after the binding when it is at that level */
            at->line = 0;
            for (int l = last + 1; l < last + 200 && !at->line; l++) {
                struct vw_src s;
                if (!vw_src_at(m, f.file, l, &s) || s.first != l) continue;
                if (strcmp(s.function, bs.function)) break;
                if (!strcmp(s.indent, bs.indent)) at->line = l, *before = 1;
            }
            if (!strcmp(ds.indent, bs.indent)) at->line = ds.first, *before = 0;
            if (!at->line) return 0;
        }
        snprintf(attr, asize, "%s", self_attr);
        vw_code_object_to(self_attr, expr, code, size);
        return 1;
    }
    return 0;
}

int vw_code_module_in_holder(struct vw_model *m, const struct vw_case *k, struct vw_frame *at, int *before,
                             struct vw_frame *caller, char *attr, size_t asize, char *code, size_t size) {
    struct vw_frame *fs = calloc(VW_PY_FRAMES, sizeof *fs);
    int nf = fs ? vw_py_frames(m, k->pystack, fs, VW_PY_FRAMES) : 0;
    int found = nf && module_in_holder(m, k, fs, nf, at, before, caller, attr, asize, code, size);
    free(fs);
    return found;
}

/* ---------------------------------------------------------------- edits inside a statement (Python) */

void vw_code_call_to(const char *func, const char *expr, char *edit, size_t esize, char *shown, size_t ssize) {
    snprintf(edit, esize, ".to(%.150s)", expr);
    snprintf(shown, ssize, "%.300s(...).to(%.150s)", func, expr);
}

void vw_code_call_arg_shown(const char *func, const char *arg, char *out, size_t size) {
    snprintf(out, size, "%s(..., %s)", func, arg + (arg[0] == ',' ? 2 : 0));
}

void vw_code_keyword_arg(const char *func, const char *name, const char *expr, int has_args, int trailing_comma,
                         char *edit, size_t esize, char *shown, size_t ssize) {
    snprintf(edit, esize, "%s%.60s=%.120s", has_args && !trailing_comma ? ", " : "", name, expr);
    snprintf(shown, ssize, "%.200s(..., %.60s=%.150s)", func, name, expr);
}

void vw_code_drop_call(const char *func, size_t kept, char *shown, size_t size) {
    snprintf(shown, size, "%.300s() -> %.*s", func, (int)kept, func);
}

void vw_code_register_attr(const char *attr, int again, char *out, size_t size) {
    const char *dot = strchr(attr, '.');
    snprintf(out, size, "%s%.250s%sself.register_buffer(\"%.250s\", None)", again ? "del " : "", again ? attr : "",
             again ? "\n" : "", dot ? dot + 1 : attr);
}

void vw_code_register_named(const char *obj, const char *name, const char *value, char *out, size_t size) {
    snprintf(out, size, "%.60s.register_buffer(%.128s, %.128s)", obj, name, value);
}

void vw_code_object_to(const char *obj, const char *expr, char *out, size_t size) {
    snprintf(out, size, "%s.to(%s)", obj, expr);
}
