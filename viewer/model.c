/* The model of a device mismatch: its operands, each operand's chain of
 * events back to where it was made (op output -> the input on its device,
 * copy -> source, view -> base, until a factory or a checkpoint load;
 * in-place moves are steps too), where the program meant the op to run,
 * and the facts the rules ask about: moves of the program's that left a
 * tensor behind, who made a tensor and who called them, and the source
 * facts the producer recorded for a line, and the native call facts (a
 * file's language, the name an operand had at the failing call). Queries
 * only: no rule, no code, no English, no printing. */
#include "diag.h"
#include "validate.h"

#include "op_families.h"
#include "trace_schema.h"

#include <ctype.h>
#include <devtrace/probe.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(DTP_TRANSFER_TO == 0 && DTP_TRANSFER_COPY == 1 && DTP_TRANSFER_MOVE == 3, "VW_SQL_TRANSFER_*");
_Static_assert(DTP_ORIGIN_FACTORY == 0 && DTP_ORIGIN_CHECKPOINT == 4, "VW_SQL_ORIGIN_*");

static int site_of(struct vw_model *m, int64_t stack, int64_t pystack, int64_t seq, struct vw_frame *f) {
    return vw_sym_event_site(m->sym, stack, pystack, seq, f);
}

/* Row of tensor id: fills what the chain needs; 0 when unknown. */
static int tensor_row(struct vw_model *m, int64_t id, int64_t *seq, int64_t *dev, int *origin, int64_t *src,
                      int64_t *op, int64_t *stack, int64_t *pystack, char *what, size_t wsize, char *detail,
                      size_t dsize) {
    sqlite3_stmt *st = m->tensor;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_ROW) return 0;
    *seq = sqlite3_column_int64(st, 0);
    *dev = sqlite3_column_int64(st, 1);
    *origin = sqlite3_column_int(st, 2);
    *src = sqlite3_column_int64(st, 3);
    *op = sqlite3_column_int64(st, 4);
    *stack = sqlite3_column_int64(st, 5);
    *pystack = sqlite3_column_int64(st, 8);
    snprintf(what, wsize, "%s", sqlite3_column_text(st, 6) ? (const char *)sqlite3_column_text(st, 6) : "?");
    snprintf(detail, dsize, "%s", sqlite3_column_text(st, 7) ? (const char *)sqlite3_column_text(st, 7) : "");
    return 1;
}

static void op_name(struct vw_model *m, int64_t op, char *buf, size_t size) {
    sqlite3_reset(m->opname);
    sqlite3_bind_int64(m->opname, 1, op);
    snprintf(buf, size, "%s",
             sqlite3_step(m->opname) == SQLITE_ROW && sqlite3_column_text(m->opname, 0)
                 ? (const char *)sqlite3_column_text(m->opname, 0)
                 : "?");
}

static struct vw_step *add_step(struct vw_operand *o) {
    return o->nsteps < VW_MAX_STEPS ? &o->chain[o->nsteps++] : NULL;
}

/* The roles tensor id took after it was made (its step o->chain[made]) and before event `before`, each a step
 * put in seq order among the tensor's own steps (o->chain[base..made], newest first), where the producer
 * named it as it gave the role: torch 2.x's optimizer keeps a loaded state tensor as it is, so the line that
 * made it the state is no making of a tensor. A role taken at the line that made the tensor (torch 1.x's
 * deep copy, libdtrt's optimizer) is that step already and adds none. A trace before schema 11 has no roles. */
static void add_role_steps(struct vw_model *m, struct vw_operand *o, int base, int made, int64_t id, int64_t before) {
    if (!vw_trace_has(m->t, TS_T_roles)) return;
    sqlite3_stmt *st = vw_prep(
        m->t, "SELECT r.seq, COALESCE(r.of_tensor, 0), COALESCE(k.text, ''), COALESCE(e.stack, 0), "
              "COALESCE(e.pystack, 0), r.role FROM roles r LEFT JOIN strings k ON k.id = r.key JOIN misc_events e ON "
              "e.seq = (SELECT MIN(n.seq) FROM misc_events n WHERE n.tensor = r.tensor AND n.kind = " DT_SQL_EV_NAMED
              " AND n.seq > r.seq AND n.seq < ?3) WHERE r.tensor = ?1 AND r.seq > ?2 AND r.seq < ?3 ORDER BY r.seq");
    if (!st) return;
    const struct vw_step made_step = o->chain[made];
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, made_step.seq);
    sqlite3_bind_int64(st, 3, before);
    while (sqlite3_step(st) == SQLITE_ROW && o->nsteps < VW_MAX_STEPS) {
        struct vw_step r;
        memset(&r, 0, sizeof r);
        r.tensor = id;
        r.seq = sqlite3_column_int64(st, 0);
        r.from = sqlite3_column_int64(st, 1);
        r.origin = VW_STEP_ROLE;
        r.role = sqlite3_column_int(st, 5);
        r.from_dev = VW_DEV_UNKNOWN;
        snprintf(r.what, sizeof r.what, "%s", (const char *)sqlite3_column_text(st, 2));
        r.stack = sqlite3_column_int64(st, 3);
        r.pystack = sqlite3_column_int64(st, 4);
        r.has_site = site_of(m, r.stack, r.pystack, r.seq, &r.site);
        /* a module's buffer is what it was from its making (registered where made): no step of its history */
        if (r.role == DTP_ROLE_MODULE_BUFFER || r.role == DTP_ROLE_PARAMETER) continue; /* so is a parameter */
        if (!r.has_site || (made_step.has_site && vw_same_site(&made_step, &r))) continue;
        if (r.from) vw_tensor_name(m, r.from, before, r.detail, sizeof r.detail); /* as the failing op knew it */
        /* the device it had then: that of the newest of its steps before the role */
        int at = base;
        while (at < o->nsteps && o->chain[at].seq > r.seq) at++;
        r.dev = at < o->nsteps ? o->chain[at].dev : made_step.dev;
        memmove(&o->chain[at + 1], &o->chain[at], (size_t)(o->nsteps - at) * sizeof o->chain[0]);
        o->chain[at] = r;
        o->nsteps++;
    }
    sqlite3_finalize(st);
}

/* Whether query sql, its ?1, ?2 and ?3 bound to a, b and c, has a row. */
static int has_row(struct vw_model *m, const char *sql, int64_t a, int64_t b, int64_t c) {
    sqlite3_stmt *st = vw_prep(m->t, sql);
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    sqlite3_bind_int64(st, 3, c);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* Whether tensor id took role `role` before event `before` (the roles table: schema 11). */
static int has_role(struct vw_model *m, int64_t id, int role, int64_t before) {
    return id && vw_trace_has(m->t, TS_T_roles) &&
           has_row(m, "SELECT 1 FROM roles WHERE tensor = ?1 AND role = ?2 AND seq < ?3 LIMIT 1", id, role, before);
}

/* Whether tensor id, made by `what`, is a parameter: since schema 13 its producer's fact (role parameter, given
 * where it was made, before `before`); in an older trace only (the fallback, nowhere else) the name of the call
 * that made it says it, as the PyTorch recorder wrote it (DT_WHAT_PARAMETER). */
static int is_parameter(struct vw_model *m, int64_t id, const char *what, int64_t before) {
    if (m->t->version >= TS_ROLE_PARAMETER_SINCE) return has_role(m, id, DTP_ROLE_PARAMETER, before);
    return !strcmp(what, DT_WHAT_PARAMETER);
}

/* Where tensor id was made (the program's frame), into *f; 0 when unknown. */
static int tensor_site(struct vw_model *m, int64_t id, struct vw_frame *f) {
    int64_t seq, dev, src, op, stack, pystack;
    int origin;
    char what[64], detail[64];
    return tensor_row(m, id, &seq, &dev, &origin, &src, &op, &stack, &pystack, what, sizeof what, detail,
                      sizeof detail) &&
           site_of(m, stack, pystack, seq, f);
}

/* Python: an op's first input on the device (pick) was made on a line that gave it the device of a parameter of
 * its function (device_of: a factory's device=NAME.device, a .to(NAME.device)), and its other input on the device
 * (other) was made in another function: that is the tensor passed as the parameter, whose device the first one
 * followed (a lookup table made on the device of the indices passed in, then indexed by them): the chain follows
 * it instead. */
static int followed_input(struct vw_model *m, int64_t pick, int64_t other) {
    struct vw_frame at, of;
    struct vw_src src, def;
    /* on every op of two inputs on one device while the chain is walked: the other input's site, the costlier
     * question, is asked last */
    if (!m->have_facts || !tensor_site(m, pick, &at) || !at.python || !vw_src_at(m, at.file, at.line, &src) ||
        !src.ndevice_of || src.function_line <= 0 || !vw_src_at(m, at.file, src.function_line, &def))
        return 0;
    int param = 0;
    for (int i = 0; i < src.ndevice_of && !param; i++) param = vw_list_has(def.params, src.device_of[i]);
    return param && tensor_site(m, other, &of) &&
           (strcmp(of.file, at.file) || !vw_same_function(of.function, at.function));
}

/* The innermost frame of Python stack id that is not devtrace's adapter's (the recorder's frames are innermost on
 * every event it records): the code that made the call; 0 when there is none. */
static int caller_frame(struct vw_model *m, int64_t id, struct vw_frame *f) {
    int64_t next;
    for (int depth = 0; id && depth < 64 && vw_sym_py_frame(m->sym, id, f, &next); depth++, id = next)
        if (!vw_py_file_is_adapter(f->file)) return 1;
    return 0;
}

/* A tensor that a factory made inside a library call (its innermost Python frame a library's, its site the
 * program's line of the call: a cache's `torch.tensor([], device=key_states.device)` in `layer_past.update(...)`)
 * usually takes its device from a tensor the call was given. That input, when the trace says which: the one
 * tensor on the factory's device, made before the factory outside that line, that an op of the same call (the
 * same program line, before `before`, within the next 64 ops) combined with a tensor a factory of the call made
 * (the factory's own, or a sibling's: keys made with values, then cat([keys, key_states])). 0 when none or
 * several. */
#define LIB_CALL_OPS 64
static int64_t library_call_input(struct vw_model *m, int64_t id, int64_t seq, int64_t dev, int64_t pystack,
                                  const struct vw_frame *site, int64_t before) {
    struct vw_frame f;
    if (!pystack || !site->python || !caller_frame(m, pystack, &f) || !f.hidden) return 0;
    sqlite3_stmt *ops = vw_prep(m->t, "SELECT o.op, o.seq, COALESCE(o.stack, 0), COALESCE(o.pystack, 0) FROM ops o "
                                      "WHERE o.seq > ?1 AND o.seq < ?2 ORDER BY o.seq LIMIT ?3");
    if (!ops) return 0;
    sqlite3_bind_int64(ops, 1, seq);
    sqlite3_bind_int64(ops, 2, before);
    sqlite3_bind_int(ops, 3, LIB_CALL_OPS);
    int64_t found = 0;
    int several = 0;
    while (!several && sqlite3_step(ops) == SQLITE_ROW) {
        int64_t op = sqlite3_column_int64(ops, 0), oseq = sqlite3_column_int64(ops, 1);
        struct vw_frame at;
        if (!site_of(m, sqlite3_column_int64(ops, 2), sqlite3_column_int64(ops, 3), oseq, &at) || !at.python ||
            at.line != site->line || strcmp(at.file, site->file) || strcmp(at.function, site->function))
            continue;
        /* its tensor arguments: one made by a factory of this call, and the others on dev made elsewhere */
        int64_t cand = 0;
        int from_call = 0, ncand = 0;
        sqlite3_reset(m->args);
        sqlite3_bind_int64(m->args, 1, op);
        int64_t args[8];
        int n = 0;
        while (n < 8 && sqlite3_step(m->args) == SQLITE_ROW)
            if (sqlite3_column_int64(m->args, 0) && sqlite3_column_int64(m->args, 1) == dev)
                args[n++] = sqlite3_column_int64(m->args, 0);
        for (int i = 0; i < n; i++) {
            int64_t tseq, tdev, src, top, tstack, tpy;
            int origin;
            char what[64], detail[8];
            struct vw_frame made;
            if (args[i] == id) {
                from_call = 1;
                continue;
            }
            if (!tensor_row(m, args[i], &tseq, &tdev, &origin, &src, &top, &tstack, &tpy, what, sizeof what, detail,
                            sizeof detail))
                continue;
            int here = site_of(m, tstack, tpy, tseq, &made) && made.python && made.line == site->line &&
                       !strcmp(made.file, site->file) && !strcmp(made.function, site->function);
            if (here && origin == DTP_ORIGIN_FACTORY)
                from_call = 1;
            else if (!here && tseq < seq && args[i] != cand)
                cand = args[i], ncand++;
        }
        if (!from_call || !ncand) continue;
        if (ncand > 1 || (found && found != cand))
            several = 1;
        else
            found = cand;
    }
    sqlite3_finalize(ops);
    return several ? 0 : found;
}

/* Walks tensor id's provenance backwards from event `before`. */
static void build_chain(struct vw_model *m, struct vw_operand *o, int64_t id, int64_t before) {
    char what[256], detail[512];
    for (int guard = 0; id && guard < VW_MAX_STEPS; guard++) {
        int64_t seq, dev, src, op, stack, pystack;
        int origin;
        const int base = o->nsteps;
        const int64_t upto = before;
        if (!tensor_row(m, id, &seq, &dev, &origin, &src, &op, &stack, &pystack, what, sizeof what, detail,
                        sizeof detail)) {
            o->missing = id;
            return;
        }
        /* in-place moves of this tensor before `before`, newest first */
        sqlite3_reset(m->moves);
        sqlite3_bind_int64(m->moves, 1, id);
        sqlite3_bind_int64(m->moves, 2, before);
        while (sqlite3_step(m->moves) == SQLITE_ROW) {
            struct vw_step *s = add_step(o);
            if (!s) return;
            s->tensor = id;
            s->seq = sqlite3_column_int64(m->moves, 0);
            s->dev = sqlite3_column_int64(m->moves, 2);
            s->stack = sqlite3_column_int64(m->moves, 4);
            s->pystack = sqlite3_column_int64(m->moves, 5);
            s->origin = -1;
            snprintf(s->what, sizeof s->what, "%s",
                     sqlite3_column_text(m->moves, 3) ? (const char *)sqlite3_column_text(m->moves, 3) : "?");
            s->from_dev = sqlite3_column_int64(m->moves, 1);
            s->has_site = site_of(m, s->stack, sqlite3_column_int64(m->moves, 5), s->seq, &s->site);
        }
        struct vw_step *s = add_step(o);
        if (!s) return;
        s->tensor = id;
        s->seq = seq;
        s->dev = dev;
        s->stack = stack;
        s->pystack = pystack;
        s->origin = origin;
        snprintf(s->what, sizeof s->what, "%s", what);
        s->param = is_parameter(m, id, what, before);
        s->has_site = site_of(m, stack, pystack, seq, &s->site);
        s->from_dev = VW_DEV_UNKNOWN;
        int64_t next = 0;
        switch (origin) {
        case DTP_ORIGIN_CHECKPOINT: snprintf(s->detail, sizeof s->detail, "%s", detail); break;
        case DTP_ORIGIN_FACTORY:
            if (s->has_site) s->from = next = library_call_input(m, id, seq, dev, pystack, &s->site, upto);
            break;
        case DTP_ORIGIN_VIEW: s->from = next = src; break;
        case DTP_ORIGIN_TRANSFER: {
            int64_t sseq, sdev, ssrc, sop, sstack, spy;
            int sorigin;
            if (tensor_row(m, src, &sseq, &sdev, &sorigin, &ssrc, &sop, &sstack, &spy, what, sizeof what, detail,
                           sizeof detail))
                s->from_dev = sdev;
            s->from = next = src;
            break;
        }
        case DTP_ORIGIN_OP_OUTPUT: {
            char *name = s->op;
            op_name(m, op, name, sizeof s->op);
            /* follow the input that carried the device (first one on it) */
            int64_t pick = 0, first = 0, on[2] = {0, 0};
            char arg[64] = "", args[2][64];
            int non = 0;
            sqlite3_reset(m->args);
            sqlite3_bind_int64(m->args, 1, op);
            while (sqlite3_step(m->args) == SQLITE_ROW) {
                int64_t tid = sqlite3_column_int64(m->args, 0), adev = sqlite3_column_int64(m->args, 1);
                if (!first) first = tid;
                if (tid && adev == dev && non++ < 2) { /* the first two inputs on the device, and how many */
                    on[non - 1] = tid;
                    snprintf(args[non - 1], sizeof args[0], "%s", (const char *)sqlite3_column_text(m->args, 2));
                }
                if (!pick && adev == dev) {
                    pick = tid;
                    snprintf(arg, sizeof arg, "%s", (const char *)sqlite3_column_text(m->args, 2));
                }
            }
            if (non == 2 && pick == on[0] && followed_input(m, on[0], on[1])) {
                pick = on[1];
                snprintf(arg, sizeof arg, "%s", args[1]);
            }
            if (!pick) pick = first;
            snprintf(s->from_arg, sizeof s->from_arg, "%s", arg);
            s->from = next = pick;
            break;
        }
        default: break;
        }
        before = s->seq;
        add_role_steps(m, o, base, o->nsteps - 1, id, upto); /* s moves when a role goes before it */
        id = next;
    }
}

/* The oldest step, counting from the newest, still on dev: where it got there; or the newest that assembled
 * it from several tensors (stack, cat: a batch made from a dataset's rows is made there, not where the dataset
 * was). */
static int arrival(const struct vw_operand *o) {
    int a = 0, combined = -1;
    for (int i = 0; i < o->nsteps && o->chain[i].dev == o->dev; i++) {
        a = i;
        if (combined < 0 && o->chain[i].origin == DTP_ORIGIN_OP_OUTPUT &&
            (dt_op_families_of(o->chain[i].what) & DT_OPF_COMBINE))
            combined = i;
    }
    /* a copy to the device is where it got there, whatever was assembled from it after; only what was made on
     * it from the start and cut into rows (views, indexing: a dataset's rows) has the assembly for its origin,
     * not what was computed before it was assembled (x ** i for i in ...: there the tensor's making is) */
    if (combined < 0 || o->chain[a].origin == DTP_ORIGIN_TRANSFER || o->chain[a].origin == DTP_ORIGIN_CHECKPOINT ||
        o->chain[a].origin == -1)
        return a;
    for (int j = combined + 1; j < a; j++)
        if (o->chain[j].origin != DTP_ORIGIN_VIEW &&
            !(o->chain[j].origin == DTP_ORIGIN_OP_OUTPUT && (dt_op_families_of(o->chain[j].what) & DT_OPF_INDEX)))
            return a;
    return combined;
}

/* An optimizer's state tensor left behind by a move of its parameter: the first in-place move of the
 * parameter away from the state's device, after the state reached that device and before the failing op
 * (seq). Which tensor is whose state is the producer's fact: since schema 11 its role (roles: role
 * optimizer_state, of_tensor the parameter, recorded by dtp_tensor_role), the parameter named as it was before
 * its move. A trace older than schema 11 has no roles table, and there only (the fallback, nowhere else) the
 * state's name says it: "optimizer.state.<param>.<key>" (DT_NAME_OPTIMIZER_STATE), the move of a tensor named
 * <param>. Fills *s (the move) and param; 0 when there is none. */
int vw_fact_state_left_behind(struct vw_model *m, const struct vw_operand *odd, int64_t seq, struct vw_step *s,
                              char *param, size_t psize) {
    const struct vw_step *arrived = &odd->chain[odd->arrived];
    const int by_role = vw_trace_has(m->t, TS_T_roles);
    sqlite3_stmt *st;
    if (by_role) {
        /* ?1: the state, ?5: the role; the move is of_tensor's own (a move in place: dst = src) */
        st = vw_prep(m->t, "SELECT x.seq, x.dst_device, COALESCE(e.stack, 0), COALESCE(e.pystack, 0), "
                           "COALESCE(v.text, '?'), r.of_tensor FROM roles r JOIN transfers x ON x.dst = r.of_tensor "
                           "LEFT JOIN misc_events e ON e.seq = x.seq LEFT JOIN strings v ON v.id = x.via WHERE "
                           "r.tensor = ?1 AND r.role = ?5 AND r.seq < ?3 AND x.kind = " VW_SQL_TRANSFER_MOVE
                           " AND x.seq > ?2 AND x.seq < ?3 AND x.src_device = ?4 ORDER BY x.seq LIMIT 1");
        if (!st) return 0;
        sqlite3_bind_int64(st, 1, odd->tensor);
        sqlite3_bind_int(st, 5, DTP_ROLE_OPTIMIZER_STATE);
    } else {
        static const char prefix[] = DT_NAME_OPTIMIZER_STATE;
        if (strncmp(odd->name, prefix, sizeof prefix - 1) != 0) return 0;
        const char *p = odd->name + sizeof prefix - 1, *key = strrchr(p, '.');
        if (!key || key == p) return 0;
        snprintf(param, psize, "%.*s", (int)(key - p), p);
        st = vw_prep(m->t, "SELECT x.seq, x.dst_device, COALESCE(e.stack, 0), COALESCE(e.pystack, 0), "
                           "COALESCE(v.text, '?') FROM transfers x JOIN names n ON n.tensor = x.dst JOIN strings s ON "
                           "s.id = n.name LEFT JOIN misc_events e ON e.seq = x.seq LEFT JOIN strings v ON v.id = x.via "
                           "WHERE s.text = ?1 AND x.kind = " VW_SQL_TRANSFER_MOVE
                           " AND x.seq > ?2 AND x.seq < ?3 AND x.src_device = ?4 AND n.seq < x.seq ORDER BY x.seq "
                           "LIMIT 1");
        if (!st) return 0;
        sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(st, 2, arrived->seq);
    sqlite3_bind_int64(st, 3, seq);
    sqlite3_bind_int64(st, 4, odd->dev);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) {
        memset(s, 0, sizeof *s);
        s->seq = sqlite3_column_int64(st, 0);
        s->dev = sqlite3_column_int64(st, 1);
        s->stack = sqlite3_column_int64(st, 2);
        s->origin = -1;
        s->from_dev = odd->dev;
        snprintf(s->what, sizeof s->what, "%s", (const char *)sqlite3_column_text(st, 4));
        s->has_site = site_of(m, s->stack, sqlite3_column_int64(st, 3), s->seq, &s->site);
        /* the parameter, for people: the name it had before its move (a parameter the program never named is
         * said to be unnamed, not by the trace's id) */
        if (by_role && !vw_tensor_name(m, sqlite3_column_int64(st, 5), s->seq, param, psize)[0])
            snprintf(param, psize, "(unnamed)");
    }
    sqlite3_finalize(st);
    return found;
}

/* A C++ function's name as DWARF's DW_AT_name gives it (the source facts' `function`): the frame's
 * demangled name less its parameters, template arguments and qualifiers ("PolynomialImpl::forward(at::Tensor
 * const&)": forward; "train<...>": train); a lambda's, its enclosing function's ("main::{lambda(...)#1}::
 * operator()": main), as the facts name the lines of its body. Other names as they are. */
static const char *native_base(const char *s, size_t *n) {
    *n = strlen(s);
    if (s[0] == '<' || strchr(s, '.') || (!strchr(s, ':') && !strchr(s, '(') && !strchr(s, '<'))) return s;
    const char *lam = strstr(s, "::{lambda");
    size_t len = lam ? (size_t)(lam - s) : strcspn(s, "(");
    const char *lt = memchr(s, '<', len);
    if (lt && lt > s && strncmp(lt - 8 < s ? s : lt - 8, "operator", 8)) len = (size_t)(lt - s);
    const char *b = s;
    for (const char *q = s; q < s + len; q++)
        if ((q[0] == ':' && q + 1 < s + len && q[1] == ':') || q[0] == ' ') b = q + (q[0] == ' ' ? 1 : 2);
    *n = (size_t)(s + len - b);
    return b;
}

/* Two Python or C function names are one function's, a comprehension inside
 * it ("Net.__init__.<locals>.<listcomp>") counting as the function; a C++ frame's name is its DWARF name's
 * (native_base). */
int vw_same_function(const char *a, const char *b) {
    const char *ca = strstr(a, ".<locals>.<"), *cb = strstr(b, ".<locals>.<"); /* a comprehension's frame */
    size_t la = ca ? (size_t)(ca - a) : strlen(a), lb = cb ? (size_t)(cb - b) : strlen(b);
    if (la == lb && !strncmp(a, b, la)) return 1;
    if (ca || cb) return 0;
    a = native_base(a, &la), b = native_base(b, &lb);
    return la && la == lb && !strncmp(a, b, la);
}

/* The transfers of tensors from dev to want after made and before seq that meet `where` (SQL over kind:
 * 0 a copy, 3 a move in place; made: the seq the tensor copied was made at; by_module: a module's move, in
 * place or via "Net.to", not a tensor's own .to), oldest first: read with next_move. Columns: 6
 * by_module, 7 the tensor copied. NULL after saying why. */
static sqlite3_stmt *moves_to(struct vw_model *m, const char *where, const struct vw_step *made, int64_t dev,
                              int64_t want, int64_t seq) {
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT * FROM (SELECT x.seq, COALESCE(e.stack, 0), COALESCE(e.pystack, 0), COALESCE(t.stack, 0), "
             "COALESCE(t.pystack, 0), t.seq AS made, x.kind = " VW_SQL_TRANSFER_MOVE
             " OR instr(COALESCE((SELECT v.text FROM strings v "
             "WHERE v.id = x.via), ''), '.') > 0 AS by_module, x.src, x.kind AS kind FROM transfers x JOIN tensors t "
             "ON t.id = x.src LEFT JOIN misc_events e ON e.seq = x.seq WHERE x.src_device = ?1 AND x.dst_device = "
             "?2 AND x.seq > ?3 AND x.seq < ?4) WHERE %s ORDER BY 1 LIMIT 256",
             where);
    sqlite3_stmt *st = vw_prep(m->t, sql);
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, dev);
    sqlite3_bind_int64(st, 2, want);
    sqlite3_bind_int64(st, 3, made->seq);
    sqlite3_bind_int64(st, 4, seq);
    return st;
}

/* The next row of moves_to: where the tensor copied was made in *made_at, the move as a step in *move;
 * 0 at the end. Rows whose tensor has no known site are skipped. */
static int next_move(struct vw_model *m, sqlite3_stmt *st, struct vw_frame *made_at, struct vw_step *move) {
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!site_of(m, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5), made_at))
            continue;
        memset(move, 0, sizeof *move);
        move->seq = sqlite3_column_int64(st, 0);
        move->stack = sqlite3_column_int64(st, 1);
        move->origin = -1;
        move->has_site = site_of(m, move->stack, sqlite3_column_int64(st, 2), move->seq, &move->site);
        return 1;
    }
    return 0;
}

/* A tensor a module keeps outside its registered parameters and buffers
 * (a plain struct field, a plain attribute): made in the same function as
 * tensors that a later in-place move (the module's .to()) took from its
 * device to `want`, while it stayed behind. That function must not be the
 * program's outermost one (main, a script's <module>), where unrelated
 * tensors are made side by side. Fills *move with that move; 0 when none.
 * 2 when the move is in that function itself: no module's, but the
 * program's own move of what was made with it (a batch's data moved, its
 * targets not: a C++ loop where the batch is made inline). Where it was
 * made is no code of the program's (a data loader's worker thread, where
 * the stack holds only the library's frames), the program's own move of
 * what that library code made with it: 2 as well. */
int vw_fact_module_move(struct vw_model *m, const struct vw_step *made, int64_t dev, int64_t want, int64_t seq,
                        struct vw_step *move) {
    const int lib = made->has_site && made->site.library;
    if (!made->has_site || !made->site.function[0] ||
        (!lib && (!strcmp(made->site.function, DT_C_MAIN) || !strcmp(made->site.function, DT_PY_TOP_LEVEL))))
        return 0;
    /* moves in place (the runtime's module.to, PyTorch's on cuda) and copies to the device by a module's
     * move (PyTorch's module.to where it swaps the parameters, on meta: via "Net.to"), of tensors made where
     * the odd one was; a tensor's own .to (via "to") is no module's move, and counts only when the program
     * made it in the function that made the odd one (a batch's data moved by hand, its targets not) */
    sqlite3_stmt *st = moves_to(m, "kind IN (" VW_SQL_TRANSFER_TO ", " VW_SQL_TRANSFER_MOVE ")", made, dev, want, seq);
    if (!st) return 0;
    int found = 0;
    struct vw_frame f;
    while (!found && next_move(m, st, &f, move)) {
        if (!vw_same_function(f.function, made->site.function) || strcmp(f.file, made->site.file)) continue;
        int by_module = sqlite3_column_int(st, 6);
        if (lib)
            found = move->has_site && !move->site.library ? 2 : 0;
        else
            found = move->has_site && vw_same_function(move->site.function, made->site.function) &&
                            !strcmp(move->site.file, made->site.file)
                        ? 2
                    : by_module ? 1
                                : 0;
    }
    sqlite3_finalize(st);
    return found;
}

/* A tensor made on the same line as the odd one (the other half of a batch), after it, that the program
 * itself copied to `want` (a tensor's own .to, no module's move) before the failing op: the line where
 * the odd one's move was forgotten. Fills *move and the sibling's name; 0 when there is none. */
int vw_fact_sibling_moved(struct vw_model *m, const struct vw_step *made, int64_t dev, int64_t want, int64_t seq,
                          struct vw_step *move, char *sname, size_t size) {
    return vw_fact_sibling_moved_near(m, made, 0, dev, want, seq, move, sname, size);
}

int vw_fact_sibling_moved_near(struct vw_model *m, const struct vw_step *made, int before, int64_t dev, int64_t want,
                               int64_t seq, struct vw_step *move, char *sname, size_t size) {
    if (!made->has_site || !made->site.file[0]) return 0;
    char where[128];
    snprintf(where, sizeof where, "kind = " VW_SQL_TRANSFER_TO " AND NOT by_module AND made > ?3 - %d", before);
    sqlite3_stmt *st = moves_to(m, where, made, dev, want, seq);
    if (!st) return 0;
    int found = 0;
    struct vw_frame f;
    while (!found && next_move(m, st, &f, move)) {
        if (f.line != made->site.line || strcmp(f.file, made->site.file)) continue;
        found = move->has_site;
        char n[200];
        struct vw_src ms;
        if (found && vw_tensor_name(m, sqlite3_column_int64(st, 7), seq, n, sizeof n)[0])
            snprintf(sname, size, "\"%s\"", n);
        else if (found && vw_src_at(m, move->site.file, move->site.line, &ms) &&
                 vw_shape_ident(ms.binds)) /* the one name the move's statement binds (y = y.to(device)) */
            snprintf(sname, size, "\"%s\"", ms.binds);
        else if (found) /* no name in the program: said as what it is, never by the trace's id */
            snprintf(sname, size, "the tensor");
    }
    sqlite3_finalize(st);
    return found;
}

int vw_same_site(const struct vw_step *a, const struct vw_step *b) {
    return a->has_site && b->has_site && a->site.file[0] && !strcmp(a->site.file, b->site.file) &&
           a->site.line == b->site.line;
}

/* The latest name tensor id had before event seq, into buf ("" when none). */
const char *vw_tensor_name(struct vw_model *m, int64_t id, int64_t seq, char *buf, size_t size) {
    buf[0] = '\0';
    sqlite3_stmt *st = vw_prep(m->t, "SELECT s.text FROM names n JOIN strings s ON s.id = n.name WHERE n.tensor = ?1 "
                                     "AND n.seq < ?2 ORDER BY n.seq DESC LIMIT 1");
    if (!st) return buf;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, seq);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

/* A tensor made from another (a clone, an op's result, a view) while that
 * one was on the odd device, before a move in place (a module's .to())
 * took the source to `want` and left what was made from it behind: an
 * EMA's shadow weights, a copy kept of a parameter. Fills *move and *src
 * (the source's index in odd's chain); 0 when there is none. */
int vw_fact_made_before_source_moved(struct vw_model *m, const struct vw_operand *odd, int64_t want, int64_t seq,
                                     struct vw_step *move, int *src) {
    sqlite3_stmt *st =
        vw_prep(m->t, "SELECT x.seq, COALESCE(e.stack, 0), COALESCE(e.pystack, 0) FROM transfers x LEFT JOIN "
                      "misc_events e ON e.seq = x.seq WHERE x.dst = ?1 AND x.kind = " VW_SQL_TRANSFER_MOVE
                      " AND x.src_device = ?2 AND "
                      "x.dst_device = ?3 AND x.seq > ?4 AND x.seq < ?5 ORDER BY x.seq LIMIT 1");
    if (!st) return 0;
    int found = 0;
    for (int k = 1; k <= odd->arrived && k < odd->nsteps && !found; k++) {
        if (odd->chain[k].origin < 0 || odd->chain[k - 1].origin < 0) continue;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, odd->chain[k].tensor);
        sqlite3_bind_int64(st, 2, odd->dev);
        sqlite3_bind_int64(st, 3, want);
        sqlite3_bind_int64(st, 4, odd->chain[k - 1].seq);
        sqlite3_bind_int64(st, 5, seq);
        if (sqlite3_step(st) != SQLITE_ROW) continue;
        memset(move, 0, sizeof *move);
        move->seq = sqlite3_column_int64(st, 0);
        move->stack = sqlite3_column_int64(st, 1);
        move->tensor = odd->chain[k].tensor;
        move->dev = want;
        move->origin = -1;
        move->has_site = site_of(m, move->stack, sqlite3_column_int64(st, 2), move->seq, &move->site);
        *src = k;
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

/* A tensor a Python program made in a function that a library called back
 * (a DataLoader's collate_fn, a Dataset's __getitem__, a transform) and that
 * had returned before the failing call: the program's own frame that called
 * the library (the loop over the loader), where the tensor comes back to
 * it. Fills *out; 0 when made is not such a tensor. */
int vw_fact_callback_caller(struct vw_model *m, const struct vw_step *made, int64_t failing_pystack,
                            struct vw_frame *out) {
    struct vw_frame f, made_frame;
    int64_t id = made->pystack, next;
    int state = 0; /* 0: before the made frame, 1: in library frames after it, 2: found */
    for (int depth = 0; id && depth < 256 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next) {
        if (state == 0 && !f.hidden)
            made_frame = f, state = 1;
        else if (state == 1 && f.hidden)
            state = 3; /* a library frame between: a callback */
        else if (state == 1 && !f.hidden)
            return 0; /* called by the program itself */
        else if (state == 3 && !f.hidden) {
            *out = f;
            state = 2;
            break;
        }
    }
    if (state != 2) return 0;
    /* the making function must have returned: it is not on the failing call's stack */
    for (id = failing_pystack; id && vw_sym_py_frame(m->sym, id, &f, &next); id = next)
        if (!f.hidden && !strcmp(f.file, made_frame.file) && !strcmp(f.function, made_frame.function)) return 0;
    return 1;
}

int vw_fact_used_between(struct vw_model *m, int64_t tensor, int64_t after, int64_t before, int64_t op,
                         const int64_t *made, int nmade, const struct vw_frame *at) {
    char sql[2048], in[400] = "0";
    size_t len = 1;
    for (int i = 0; i < nmade && i < 24; i++)
        len += (size_t)snprintf(in + len, sizeof in - len, ",%lld", (long long)made[i]);
    snprintf(sql, sizeof sql,
             "SELECT o.seq, COALESCE(o.stack, 0), COALESCE(o.pystack, 0) FROM op_args a JOIN ops o ON o.op = a.op "
             "WHERE a.tensor = ?1 AND o.seq > ?2 AND "
             "o.seq < ?3 AND o.op <> ?4 AND COALESCE(o.out0, 0) <> a.tensor AND NOT (a.pos = 1 AND (SELECT s.text FROM "
             "strings s WHERE s.id = o.name) IN (" DT_OPS_SQL(DT_OPS_SHAPE_OF) ", " DT_OPS_SQL(
                 DT_OPS_COPY_INTO) ")) AND o.op NOT IN (SELECT r.op "
             "FROM tensor_rows r WHERE r.id IN (%s) AND r.op IS NOT NULL)",
             in);
    sqlite3_stmt *st = vw_prep(m->t, sql);
    if (!st) return 1; /* not known: as if it were used */
    sqlite3_bind_int64(st, 1, tensor);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, before);
    sqlite3_bind_int64(st, 4, op);
    struct vw_src stmt, src;
    int have = at && at->python && at->file[0] && vw_src_at(m, at->file, at->line, &stmt) && stmt.first > 0;
    int n = 0, rc;
    while (!n && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct vw_frame f;
        if (have && vw_sym_event_site(m->sym, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                                      sqlite3_column_int64(st, 0), &f) &&
            f.python && !strcmp(f.file, at->file) && vw_same_function(f.function, at->function) &&
            vw_src_at(m, f.file, f.line, &src) && src.first == stmt.first)
            continue; /* the failing statement's own op */
        n = 1;
    }
    if (!n && rc != SQLITE_DONE) n = 1; /* not known: as if it were used */
    sqlite3_finalize(st);
    return n;
}

/* The number of elements a shape's text ("[D0,D1,...]", common/trace_schema.h) gives, -1 when it is not one. */
static int64_t shape_numel(const char *shape) {
    if (!shape || shape[0] != '[') return -1;
    int64_t n = 1;
    const char *p = shape + 1;
    if (*p == ']') return p[1] ? -1 : 1;
    for (;;) {
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || (d && n > INT64_MAX / d)) return -1;
        n *= d;
        if (*end == ']') return end[1] ? -1 : n;
        if (*end != ',') return -1;
        p = end + 1;
    }
}

int vw_fact_whole_view(struct vw_model *m, const struct vw_step *view) {
    if (view->origin != DTP_ORIGIN_VIEW || !view->from) return 0;
    sqlite3_stmt *st = vw_prep(m->t, "SELECT v.storage_offset, sv.text, sb.text, b.storage_offset FROM tensors v JOIN "
                                     "tensors b ON b.id = ?2 LEFT JOIN strings sv ON sv.id = v.shape LEFT JOIN strings "
                                     "sb ON sb.id = b.shape WHERE v.id = ?1");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, view->tensor);
    sqlite3_bind_int64(st, 2, view->from);
    int whole = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        int64_t nv = shape_numel((const char *)sqlite3_column_text(st, 1));
        int64_t nb = shape_numel((const char *)sqlite3_column_text(st, 2));
        whole = sqlite3_column_int64(st, 0) == sqlite3_column_int64(st, 3) && nv >= 0 && nv == nb;
    }
    sqlite3_finalize(st);
    return whole;
}

/* The tensors (not 0-dim) on dev that the op that made tensor id took, one per argument, up to max, into out; how
 * many.
 * An index (x[idx], DT_OPS_INDEX) is no operand of its own: a cpu integer index indexes a tensor on any device,
 * and the result is on the indexed tensor's. */
static int op_inputs_on(struct vw_model *m, int64_t id, int64_t dev, int64_t *out, int max) {
    sqlite3_stmt *st = vw_prep(m->t, "SELECT a.tensor FROM tensor_rows r JOIN op_args a ON a.op = r.op "
                                     "JOIN ops o ON o.op = r.op LEFT JOIN strings n ON n.id = o.name "
                                     "JOIN tensors t ON t.id = a.tensor LEFT JOIN strings sh ON sh.id = t.shape WHERE "
                                     "r.id = ?1 AND a.device = ?2 AND COALESCE(sh.text, '') <> '" DT_SHAPE_SCALAR "' "
                                     "AND NOT (a.pos > 0 AND COALESCE(n.text, '') IN (" DT_OPS_SQL(DT_OPS_INDEX) "))");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, dev);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW) out[n++] = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Where tensor id's values came from on dev: back through views and ops of one tensor on dev (a comparison with
 * a number, a cast), to the first tensor made otherwise (a factory's, a copy's, an op's of several, a stack's). */
static int one_tensor(const int64_t *in, int n) {
    for (int i = 1; i < n; i++)
        if (in[i] != in[0]) return 0;
    return 1;
}

static int64_t one_source_root(struct vw_model *m, int64_t id, int64_t dev) {
    int n;
    for (int depth = 0; id && depth < 16; depth++) {
        int64_t seq, tdev, src, op, stack, pystack, in[8];
        int origin;
        char what[64], detail[8];
        if (!tensor_row(m, id, &seq, &tdev, &origin, &src, &op, &stack, &pystack, what, sizeof what, detail,
                        sizeof detail) ||
            tdev != dev)
            break;
        if (origin == DTP_ORIGIN_VIEW && src)
            id = src;
        else if (origin == DTP_ORIGIN_OP_OUTPUT && !(dt_op_families_of(what) & DT_OPF_COMBINE) &&
                 (n = op_inputs_on(m, id, dev, in, 8)) >= 1 && one_tensor(in, n))
            id = in[0];
        else
            break;
    }
    return id;
}

/* How many tensors (not 0-dim) on step s's device the op that made it took, counting those computed from one
 * tensor by ops of one tensor each once ((h >= a).long() + (h >= b).long() computes from h alone): 2 or more when
 * it combined them (a mask from positions and lengths), 1 for an op of one tensor (a comparison with a number). */
int vw_fact_combined(struct vw_model *m, const struct vw_step *s) {
    int64_t in[8], roots[8];
    int n = op_inputs_on(m, s->tensor, s->dev, in, 8), nroots = 0;
    /* a batch stacked from one dataset's rows (the same tensor twice, too): made there, each row counted */
    if (dt_op_families_of(s->what) & DT_OPF_COMBINE) return n;
    for (int i = 0; i < n; i++) {
        int64_t r = one_source_root(m, in[i], s->dev);
        int seen = 0;
        for (int j = 0; j < nroots && !seen; j++) seen = roots[j] == r;
        if (!seen) roots[nroots++] = r;
    }
    return nroots;
}

int vw_fact_caller_of(struct vw_model *m, const struct vw_step *made, struct vw_frame *out) {
    struct vw_frame f;
    int64_t id = made->pystack, next;
    if (!made->has_site || !made->site.python || !caller_frame(m, id, &f) || f.hidden || f.line != made->site.line ||
        strcmp(f.file, made->site.file))
        return 0;
    /* caller_frame found made's own frame; the frame above it that is the program's */
    for (int depth = 0; id && depth < 64 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
        if (!vw_py_file_is_adapter(f.file)) break;
    for (int depth = 0; next && depth < 64 && vw_sym_py_frame(m->sym, next, out, &next); depth++)
        if (!out->hidden) return 1;
    return 0;
}

int vw_fact_made_in_library(struct vw_model *m, const struct vw_step *s) {
    struct vw_frame f;
    return s->pystack && caller_frame(m, s->pystack, &f) && f.hidden;
}

#define FEEDS_MAX 128 /* the tensors a failing operand is computed from, looked at */

int vw_fact_feeds_only(struct vw_model *m, int64_t root, int64_t odd, int64_t before) {
    /* what odd is computed from: every input of the ops that made it and them, and views' bases */
    int64_t *from = calloc(FEEDS_MAX, sizeof *from);
    if (!from) return 0;
    int n = 0;
    from[n++] = odd;
    sqlite3_stmt *args = vw_prep(m->t, "SELECT a.tensor FROM op_args a WHERE a.op = ?1 AND a.tensor IS NOT NULL");
    for (int i = 0; args && i < n; i++) {
        int64_t seq, dev, src, op, stack, pystack;
        int origin;
        char what[64], detail[8];
        if (from[i] == root || !tensor_row(m, from[i], &seq, &dev, &origin, &src, &op, &stack, &pystack, what,
                                           sizeof what, detail, sizeof detail))
            continue;
        int64_t add[16];
        int na = 0;
        if (src) add[na++] = src;
        if (op) {
            sqlite3_reset(args);
            sqlite3_bind_int64(args, 1, op);
            while (na < 16 && sqlite3_step(args) == SQLITE_ROW) add[na++] = sqlite3_column_int64(args, 0);
        }
        for (int j = 0; j < na && n < FEEDS_MAX; j++) {
            int seen = 0;
            for (int q = 0; q < n && !seen; q++) seen = from[q] == add[j];
            if (!seen) from[n++] = add[j];
        }
    }
    if (args) sqlite3_finalize(args);
    /* every op that took root before `before` made a tensor of that set (none: a read, an in-place op, is a use
     * of its own); every view of root is in it */
    sqlite3_stmt *st = vw_prep(m->t, "SELECT o.op, (SELECT group_concat(r.id) FROM tensor_rows r WHERE r.op = o.op) "
                                     "FROM op_args a JOIN ops o ON o.op = a.op WHERE a.tensor = ?1 AND o.seq < ?2 "
                                     "UNION ALL SELECT 0, t.id FROM tensors t WHERE t.src = ?1 AND t.seq < ?2");
    int ok = st != NULL;
    if (st) {
        sqlite3_bind_int64(st, 1, root);
        sqlite3_bind_int64(st, 2, before);
        while (ok && sqlite3_step(st) == SQLITE_ROW) {
            const char *outs = (const char *)sqlite3_column_text(st, 1);
            if (!outs || !outs[0]) {
                ok = 0;
                break;
            }
            for (const char *p = outs; ok && *p;) {
                char *end;
                long long t = strtoll(p, &end, 10);
                if (end == p) break;
                int in = 0;
                for (int q = 0; q < n && !in; q++) in = from[q] == t;
                ok = in;
                p = *end == ',' ? end + 1 : end;
            }
        }
        sqlite3_finalize(st);
    }
    free(from);
    return ok;
}

#define INTENT_SENDS 4096 /* the program's earliest and latest transfers and tensors looked at */
#define INTENT_WORK  512  /* its latest ops looked at */

/* Index of the candidate that clearly leads v (at least twice any other,
 * and at least min), or -1. */
static int leader(const long long *v, int n, long long min) {
    int best = -1;
    for (int k = 0; k < n; k++)
        if (best < 0 || v[k] > v[best]) best = k;
    if (best < 0 || v[best] < min) return -1;
    for (int k = 0; k < n; k++)
        if (k != best && v[k] * 2 > v[best]) return -1;
    return best;
}

/* Fills in: the candidates and their evidence, the intended device and
 * what decided it. majority is the device most operands are on, kept when
 * the program's actions do not say otherwise. */
static void intent_of(struct vw_model *m, const struct vw_operand *ops, int n, int64_t majority, int64_t seq,
                      struct vw_intent *in) {
    memset(in, 0, sizeof *in);
    for (int i = 0; i < n; i++) {
        if (ops[i].scalar) continue;
        int k = 0;
        while (k < in->n && in->dev[k] != ops[i].dev) k++;
        if (k == in->n) in->dev[in->n++] = ops[i].dev;
    }
    in->want = in->majority = majority;
    in->by = VW_INTENT_OPERANDS;
    if (in->n < 2) return;
    /* the earliest and the latest of each kind of event: the setup and the step, at any trace's size; of the
     * tensors sent, those sent as a whole model's (moves in place) or made there */
    long long whole[VW_MAX_ARGS] = {0};
    static const char *const sql[] = {
        "SELECT dst_device, count(*), sum(kind = " VW_SQL_TRANSFER_MOVE
        ") FROM (SELECT * FROM (SELECT seq, dst_device, kind FROM transfers "
        "WHERE seq < ?1 AND kind IN (" VW_SQL_TRANSFER_TO ", " VW_SQL_TRANSFER_COPY ", " VW_SQL_TRANSFER_MOVE
        ") ORDER BY seq DESC LIMIT ?2) UNION SELECT * FROM (SELECT seq, "
        "dst_device, kind FROM transfers WHERE seq < ?1 AND kind IN (" VW_SQL_TRANSFER_TO ", " VW_SQL_TRANSFER_COPY
        ", " VW_SQL_TRANSFER_MOVE ") ORDER BY seq LIMIT ?2)) GROUP BY 1",
        "SELECT a.device, count(*), count(*) FROM (SELECT * FROM (SELECT id, attrs FROM tensor_rows WHERE seq < ?1 "
        "ORDER BY id "
        "DESC LIMIT ?2) UNION SELECT * FROM (SELECT id, attrs FROM tensor_rows WHERE seq < ?1 ORDER BY id LIMIT ?2)) "
        "r JOIN tensor_attrs a ON a.id = r.attrs WHERE a.origin IN (" VW_SQL_ORIGIN_FACTORY ", " VW_SQL_ORIGIN_CKPT
        ") AND a.device <> 0 GROUP BY 1",
        /* work: not the moves themselves (a to's input is where the data came from) nor the in-place random
         * and fill initializers of a module's parameters (its construction, on the cpu wherever the model is
         * meant to run) */
        "SELECT arg0_device, count(*), 0 FROM (SELECT o.arg0_device FROM ops o LEFT JOIN strings s ON s.id = o.name "
        "WHERE o.op < ?1 AND o.nargs > 0 AND COALESCE(CASE WHEN substr(s.text, 1, length('" DT_OP_NS_ATEN "')) = '"
        DT_OP_NS_ATEN "' THEN substr(s.text, length('" DT_OP_NS_ATEN "') + 1) ELSE "
        "s.text END, '') NOT IN (" DT_OPS_MOVE_SQL ", " DT_OPS_INIT_SQL ") ORDER BY o.op DESC LIMIT ?3) GROUP BY 1",
    };
    if (m->have_facts) { /* the latest moves to each candidate made by a line with a device expression */
        sqlite3_stmt *st = vw_prep(m->t, "SELECT x.seq, COALESCE(e.stack, 0), COALESCE(e.pystack, 0) FROM transfers "
                                         "x LEFT JOIN misc_events e ON e.seq = x.seq WHERE x.dst_device = ?1 AND x.seq "
                                         "< ?2 AND x.kind IN (" VW_SQL_TRANSFER_TO ", " VW_SQL_TRANSFER_MOVE
                                         ") ORDER BY x.seq DESC LIMIT 64");
        for (int k = 0; st && k < in->n; k++) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, in->dev[k]);
            sqlite3_bind_int64(st, 2, seq);
            while (sqlite3_step(st) == SQLITE_ROW) {
                struct vw_frame f;
                struct vw_src src;
                if (site_of(m, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 0),
                            &f) &&
                    vw_src_at(m, f.file, f.line, &src) && src.device_expr[0])
                    in->coded[k]++;
            }
        }
        if (st) sqlite3_finalize(st);
    }
    for (int q = 0; q < 3; q++) {
        sqlite3_stmt *st = vw_prep(m->t, sql[q]);
        if (!st) continue;
        sqlite3_bind_int64(st, 1, seq);
        sqlite3_bind_int(st, 2, INTENT_SENDS);
        sqlite3_bind_int(st, 3, INTENT_WORK);
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int k = 0; k < in->n; k++)
                if (sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_int64(st, 0) == in->dev[k]) {
                    *(q < 2 ? &in->sent[k] : &in->work[k]) += sqlite3_column_int64(st, 1);
                    whole[k] += sqlite3_column_int64(st, 2);
                }
        sqlite3_finalize(st);
    }
    /* work on the cpu, where everything runs by default, says where the program meant to run only when it
     * also sent tensors there */
    long long work[VW_MAX_ARGS], cpu_work = 0;
    for (int k = 0; k < in->n; k++) {
        work[k] = in->dev[k] == 0 && !in->sent[k] ? 0 : in->work[k];
        if (in->dev[k] == 0) cpu_work = in->work[k];
    }
    int senders = 0, s = leader(in->sent, in->n, 1), w = leader(work, in->n, 4);
    for (int k = 0; k < in->n; k++) senders += in->sent[k] > 0;
    if (!senders) return; /* nothing sent anywhere: nothing says more than the operands */
    /* the program's own device expressions (x.to(device), model.to(args.device), device=...) say what it
     * meant, whatever the counts: when they sent tensors to one of the candidates only, that one */
    int coders = 0, ck = -1;
    for (int k = 0; k < in->n; k++)
        if (in->coded[k] > 0) coders++, ck = k;
    if (coders == 1) {
        in->want = in->dev[ck];
        in->by = VW_INTENT_DEVICE_EXPR;
        return;
    }
    if (senders == 1 && in->dev[s] != 0 && !whole[s] && in->sent[s] <= 2 && cpu_work >= 16 &&
        cpu_work >= 4 * (in->sent[s] + in->work[s])) {
        /* a copy or two to an accelerator (no model moved there, nothing made there) in a program that
         * otherwise works on the cpu: the work is taken, and said to be a guess against the moves */
        in->want = 0;
        in->by = VW_INTENT_WORK;
        in->ambiguous = 1;
    } else if (senders == 1 || (s >= 0 && (w < 0 || w == s))) {
        in->want = in->dev[s];
        in->by = VW_INTENT_TRANSFERS;
    } else if (s < 0 && w >= 0) {
        in->want = in->dev[w];
        in->by = VW_INTENT_WORK;
    } else {
        /* sent one way and worked the other, or sent and worked on both alike: the operands' majority, said
         * to be a guess */
        in->ambiguous = 1;
    }
}

/* ---------------------------------------------------------------- source facts */

/* Facts of (file, line) as the producer wrote them; file as a frame names it (relative to the cwd when
 * under it), the facts' file as the program named it (often absolute). */
static int src_query(struct vw_model *m, const char *file, int line, struct vw_src *out);

/* The facts of a line are asked for again and again (each rule, each candidate line of a placement), and the
 * query scans source_facts (its key starts with the file, which the frame and the facts name differently):
 * the lines asked for are kept, VW_SRC_CACHE of them, each slot by a hash of (file, line). */
#define VW_SRC_CACHE 256
struct vw_src_slot {
    char file[512]; /* as the caller named it; "" for an empty slot */
    int line;
    int found; /* what src_query returned */
    struct vw_src src;
};

const struct vw_facts *vw_model_facts(struct vw_model *m) {
    /* the source facts, once, when first asked for: every reader of them after this runs no SQL */
    if (m->have_facts && !m->facts.loaded) {
        const char *why = NULL;
        if (vw_facts_load(&m->facts, m->t->db, &why) < 0) {
            m->have_facts = 0; /* none then, and the report says why (the fixes keep no code made of facts) */
            snprintf(m->inconsistent, sizeof m->inconsistent, "its source facts are %s", why ? why : "unreadable");
        }
    }
    return &m->facts;
}

int vw_src_at(struct vw_model *m, const char *file, int line, struct vw_src *out) {
    memset(out, 0, sizeof *out);
    if (!m->have_facts || !vw_model_facts(m)->loaded || !file || !file[0] || line <= 0) return 0;
    if (!m->src_cache) m->src_cache = calloc(VW_SRC_CACHE, sizeof *m->src_cache);
    if (!m->src_cache || strlen(file) >= sizeof m->src_cache->file) return src_query(m, file, line, out);
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = file; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    struct vw_src_slot *slot = &m->src_cache[(h ^ (uint32_t)line * 2654435761u) % VW_SRC_CACHE];
    if (slot->line == line && !strcmp(slot->file, file)) {
        *out = slot->src;
        return slot->found;
    }
    int found = src_query(m, file, line, out);
    snprintf(slot->file, sizeof slot->file, "%s", file);
    slot->line = line;
    slot->found = found;
    slot->src = *out;
    return found;
}

struct src_ctx {
    struct vw_model *m;
    const char *file; /* as asked for */
    int line;
    struct vw_src *out;
};

/* The attributes of a statement's binds_attr fact (OBJ.NAME or OBJ->NAME, comma-separated; its shape checked):
 * how many, and the first one's NAME when OBJ is one identifier. */
static void attr_parts(struct vw_src *out) {
    const char *v = out->binds_attr, *end = strchr(v, ',');
    out->nattrs = 1;
    for (const char *c = end; c; c = strchr(c + 1, ',')) out->nattrs++;
    size_t len = end ? (size_t)(end - v) : strlen(v), obj = 0;
    while (obj < len && (isalnum((unsigned char)v[obj]) || v[obj] == '_')) obj++;
    size_t sep = obj < len && v[obj] == '.' ? 1 : obj + 1 < len && v[obj] == '-' && v[obj + 1] == '>' ? 2 : 0;
    out->attr_name[0] = 0;
    if (!obj || !sep || len - obj - sep >= sizeof out->attr_name) return;
    snprintf(out->attr_name, sizeof out->attr_name, "%.*s", (int)(len - obj - sep), v + obj + sep);
    for (const char *c = out->attr_name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_') {
            out->attr_name[0] = 0;
            return;
        }
}

/* One fact of the line, into the vw_src being read. */
static int src_fact(void *ctx, const char *ffile, int fline, const char *key, const char *v) {
    (void)ffile, (void)fline;
    struct src_ctx *sc = ctx;
    struct vw_model *m = sc->m;
    const char *file = sc->file;
    int line = sc->line;
    struct vw_src *out = sc->out;
    const char *why;
    if (!vw_fact_shape(key, v, &why)) { /* not what a producer writes: refused, and the trace said to be so */
        vw_model_refuse(m, file, line, key, why);
        return 0;
    }
    out->known = 1;
    if (!strcmp(key, DT_FACT_STMT))
        sscanf(v, "%d %d", &out->first, &out->last);
    else if (!strcmp(key, DT_FACT_INDENT))
        snprintf(out->indent, sizeof out->indent, "%s", v);
    else if (!strcmp(key, DT_FACT_OPENS))
        out->opens = atoi(v);
    else if (!strcmp(key, DT_FACT_BODY_INDENT))
        snprintf(out->body_indent, sizeof out->body_indent, "%s", v);
    else if (!strcmp(key, DT_FACT_FUNCTION))
        snprintf(out->function, sizeof out->function, "%s", v);
    else if (!strcmp(key, DT_FACT_LOOP)) {
        char ind[64] = "";
        if (sscanf(v, "%d %d %63[ \t]", &out->loop_first, &out->loop_last, ind) >= 2)
            snprintf(out->loop_indent, sizeof out->loop_indent, "%s", ind);
    } else if (!strcmp(key, DT_FACT_BINDS))
        snprintf(out->binds, sizeof out->binds, "%s", v);
    else if (!strcmp(key, DT_FACT_BINDS_KIND))
        out->binds_kind = dt_binds_kind_of(v);
    else if (!strcmp(key, DT_FACT_BINDS_ATTR)) {
        snprintf(out->binds_attr, sizeof out->binds_attr, "%s", v);
        attr_parts(out);
    } else if (!strcmp(key, DT_FACT_ATTR_AGAIN))
        snprintf(out->attr_set_before, sizeof out->attr_set_before, "%s", v);
    else if (!strcmp(key, DT_FACT_ATTR_FROM))
        snprintf(out->attr_from, sizeof out->attr_from, "%s", v);
    else if (!strcmp(key, DT_FACT_FUNCTION_LINE))
        out->function_line = atoi(v);
    else if (!strcmp(key, DT_FACT_CLASS_BASES))
        snprintf(out->class_bases, sizeof out->class_bases, "%s", v);
    else if (!strcmp(key, DT_FACT_MODULE_CLASS))
        out->module_class = !strcmp(v, "1");
    else if (!strcmp(key, DT_FACT_DEFAULTS))
        snprintf(out->defaults, sizeof out->defaults, "%s", v);
    else if (!strcmp(key, DT_FACT_PARAMS))
        snprintf(out->params, sizeof out->params, "%s", v);
    else if (!strcmp(key, DT_FACT_RETURNS))
        out->returns = atoi(v);
    else if (!strcmp(key, DT_FACT_GUARD))
        snprintf(out->guard, sizeof out->guard, "%s", v);
    else if (!strcmp(key, DT_FACT_DEVICE_ARG) && out->ndevice_args < 4 && strlen(v) < sizeof out->device_args[0])
        snprintf(out->device_args[out->ndevice_args++], sizeof out->device_args[0], "%s", v);
    else if (!strcmp(key, DT_FACT_DEVICE_OF) && out->ndevice_of < 4)
        snprintf(out->device_of[out->ndevice_of++], sizeof out->device_of[0], "%s", v);
    else if (!strcmp(key, DT_FACT_DEVICE_EXPR) && !out->device_expr[0])
        snprintf(out->device_expr, sizeof out->device_expr, "%s", v);
    else if (!strcmp(key, DT_FACT_DEVICE_VAR))
        snprintf(out->device_var, sizeof out->device_var, "%s", v);
    else if (!strcmp(key, DT_FACT_SETATTR)) { /* OBJ \t NAME \t VALUE [\t RECEIVER] (its shape checked above) */
        const char *t1 = strchr(v, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        const char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL;
        size_t vl = t3 ? (size_t)(t3 - t2 - 1) : (t2 ? strlen(t2 + 1) : 0);
        if (t1 && t2 && (size_t)(t1 - v) < sizeof out->setattr_obj &&
            (size_t)(t2 - t1 - 1) < sizeof out->setattr_name && vl < sizeof out->setattr_value) {
            snprintf(out->setattr_obj, sizeof out->setattr_obj, "%.*s", (int)(t1 - v), v);
            snprintf(out->setattr_name, sizeof out->setattr_name, "%.*s", (int)(t2 - t1 - 1), t1 + 1);
            snprintf(out->setattr_value, sizeof out->setattr_value, "%.*s", (int)vl, t2 + 1);
            /* whether OBJ is the receiver of the method it stands in: the producer's fact since schema 13; a
             * fact of an older trace has three fields, and there only (the fallback) OBJ's conventional name
             * says it */
            out->setattr_receiver = t3 ? t3[1] == '1' : !strcmp(out->setattr_obj, DT_PY_RECEIVER);
        }
    } else if (!strcmp(key, DT_FACT_CALL) && out->ncalls < VW_SRC_MAX_CALLS) {
        /* FUNC \t DEVICE \t TEMP \t END_LINE \t END_COL \t HAS_ARGS [\t TRAILING_COMMA] (older traces: 6) */
        struct vw_src_call *c = &out->calls[out->ncalls];
        const char *f[7];
        size_t len[7];
        int nf = 0;
        for (const char *p = v; nf < 7; nf++) {
            const char *tab = strchr(p, '\t');
            f[nf] = p;
            len[nf] = tab ? (size_t)(tab - p) : strlen(p);
            if (!tab) {
                nf++;
                break;
            }
            p = tab + 1;
        }
        if (nf < 6) return 0;
        /* a callee longer than the field keeps its head and its tail: rules match its method (a suffix) */
        if (len[0] < sizeof c->func)
            snprintf(c->func, sizeof c->func, "%.*s", (int)len[0], f[0]);
        else
            snprintf(c->func, sizeof c->func, "%.120s...%.*s", f[0], 120, f[0] + len[0] - 120);
        snprintf(c->device, sizeof c->device, "%.*s", (int)(len[1] < 127 ? len[1] : 127), f[1]);
        c->temporary = f[2][0] == '1';
        c->end_line = atoi(f[3]);
        c->end_col = atoi(f[4]);
        c->has_args = f[5][0] == '1';
        c->trailing_comma = nf > 6 && f[6][0] == '1';
        out->ncalls++;
    }
    return 0;
}

static int src_query(struct vw_model *m, const char *file, int line, struct vw_src *out) {
    struct src_ctx c = {m, file, line, out};
    vw_facts_each(vw_model_facts(m), file, line, line, NULL, src_fact, &c);
    if (out->known && (out->first <= 0 || out->last < out->first)) out->first = out->last = line;
    return out->known;
}

void vw_model_refuse(struct vw_model *m, const char *file, int line, const char *key, const char *why) {
    if (m->inconsistent[0]) return; /* the first says enough */
    /* the file as a trace names it may hold anything: control bytes shown as \xNN, never the value itself */
    char name[200];
    vw_escape_ctl(file ? file : "?", name, sizeof name);
    snprintf(m->inconsistent, sizeof m->inconsistent, "its source fact '%s' of %s:%d is %s", key, name, line, why);
}

int vw_list_has(const char *list, const char *name) {
    size_t len = strlen(name);
    if (!len) return 0;
    for (const char *p = list; (p = strstr(p, name)) != NULL; p++)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || !p[len])) return 1;
    return 0;
}

int vw_src_binds(const struct vw_src *s, const char *name) { return vw_list_has(s->binds, name); }

int vw_src_nested_in(struct vw_model *m, const char *file, const struct vw_src *s, const char *function) {
    if (!strcmp(s->function, function)) return 0;
    struct vw_src def = *s;
    for (int depth = 0; depth < 32; depth++) {
        int at = def.function_line;
        /* the def statement of its function, which stands in the function around it (a def line that is its own
         * function's, as a native producer may write it, goes no further) */
        if (at <= 0 || !vw_src_at(m, file, at, &def) || def.function_line == at) return 0;
        if (!strcmp(def.function, function)) return 1;
    }
    return 0;
}

/* The frame of made's native stack, innermost first, of the program's own code, whose statement binds name; with
 * outside, only the first such frame outside made's own function, and 0 when that one does not bind it. */
static int native_frame_binding(struct vw_model *m, const struct vw_step *made, const char *name, int outside,
                                struct vw_frame *out) {
    struct vw_frame fr[64];
    struct vw_src src;
    int n = vw_sym_stack(m->sym, made->stack, made->seq, fr, 64);
    for (int i = 0; i < n; i++) {
        if (fr[i].hidden || fr[i].library || !fr[i].file[0]) continue;
        if (outside && !strcmp(fr[i].file, made->site.file) && !strcmp(fr[i].function, made->site.function)) continue;
        if (vw_src_at(m, fr[i].file, fr[i].line, &src) && vw_src_binds(&src, name)) {
            *out = fr[i];
            return 1;
        }
        if (outside) return 0;
    }
    return 0;
}

int vw_fact_bound_in_caller(struct vw_model *m, const struct vw_step *made, const char *name, struct vw_frame *out) {
    struct vw_frame f;
    struct vw_src src;
    int64_t id = made->pystack, next;
    for (int depth = 0; id && depth < 256 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
        if (!f.hidden && vw_src_at(m, f.file, f.line, &src) && vw_src_binds(&src, name)) {
            *out = f;
            return 1;
        }
    /* native code (no Python stack): the frames of its native stack */
    return !made->pystack && made->stack && native_frame_binding(m, made, name, 0, out);
}

int vw_fact_bound_by_native_caller(struct vw_model *m, const struct vw_step *made, const char *name,
                                   struct vw_frame *out) {
    return !made->pystack && made->stack && made->has_site && native_frame_binding(m, made, name, 1, out);
}

int vw_fact_constructed_at(struct vw_model *m, const struct vw_step *made, struct vw_frame *ctor,
                           struct vw_frame *caller) {
    struct vw_frame f;
    int64_t id = made->pystack, next;
    int found = 0;
    for (int depth = 0; id && depth < 256 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next) {
        if (f.hidden || f.library) continue;
        if (found) {
            *caller = f;
            return 1;
        }
        if (!vw_py_constructor(f.function)) return 0;
        *ctor = f;
        found = 1;
    }
    return 0;
}

int vw_fact_idle_move(struct vw_model *m, const struct vw_operand *o, int64_t seq, struct vw_frame *at,
                      struct vw_frame *caller) {
    /* a move op (PyTorch's Tensor.to, .cuda) whose result is its own input: it returned the tensor as it was */
    sqlite3_stmt *st =
        vw_prep(m->t, "SELECT o.seq, COALESCE(o.stack, 0), COALESCE(o.pystack, 0) FROM ops o JOIN "
                      "strings s ON s.id = o.name WHERE s.text IN (" DT_OPS_MOVE_TO_SQL ") AND o.arg0_tensor = ?1 "
                      "AND o.out0 = ?1 AND o.seq < ?2 ORDER BY o.seq DESC LIMIT 1");
    if (!st) return 0;
    int found = 0;
    for (int s = 0; s < o->nsteps && !found; s++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, o->chain[s].tensor);
        sqlite3_bind_int64(st, 2, seq);
        if (sqlite3_step(st) != SQLITE_ROW) continue;
        int64_t pystack = sqlite3_column_int64(st, 2), id = pystack, next;
        if (!site_of(m, sqlite3_column_int64(st, 1), pystack, sqlite3_column_int64(st, 0), at) || !pystack) continue;
        /* the program's innermost frame is the move's line; the next one of the program's called its function */
        struct vw_frame f;
        int own = 0;
        for (int depth = 0; id && depth < 256 && !found && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next) {
            if (f.hidden || f.library) continue;
            if (own++ == 0) {
                if (f.line != at->line || strcmp(f.file, at->file)) break;
                continue;
            }
            *caller = f;
            found = 1;
        }
    }
    sqlite3_finalize(st);
    return found;
}

/* The distinct lines that call `func` (a call fact FUNC\t...), in `file` only when not NULL. */
struct callers_ctx {
    const char *func, *file;
    struct {
        const char *file;
        int line;
    } seen[64];
    int n;
};

static int count_call_site(void *ctx, const char *file, int line, const char *key, const char *v) {
    (void)key;
    struct callers_ctx *c = ctx;
    size_t fl = strlen(c->func);
    if (strncmp(v, c->func, fl) || v[fl] != '\t' || (c->file && strcmp(file, c->file))) return 0;
    for (int i = 0; i < c->n; i++)
        if (c->seen[i].line == line && !strcmp(c->seen[i].file, file)) return 0;
    if (c->n == 64) return 1;
    c->seen[c->n].file = file, c->seen[c->n++].line = line;
    return 0;
}

static int ident_like(const char *s);

/* The signature of the Python function that made `made` as its caller's calls see it: its own name (the last
 * component, or its class's for a constructor), whether a call's first positional argument is its second
 * parameter (a method called on an object, a constructor), and its parameters in order. 0 when unknown. */
struct callee_sig {
    const char *own;
    size_t ol;
    int method, ctor, np;
    char params[16][64];
};
static int callee_sig(struct vw_model *m, const struct vw_step *made, struct callee_sig *g) {
    struct vw_src at, def;
    memset(g, 0, sizeof *g);
    if (!made->site.python || !vw_src_at(m, made->site.file, made->site.line, &at) || at.function_line <= 0 ||
        !vw_src_at(m, made->site.file, at.function_line, &def) || !def.params[0])
        return 0;
    /* the made function's own name, and whether it is a method (its qualified name is its def's scope's, one
     * level down: Net.make_mask, not make.<locals>.inner): its receiver is no positional argument of a call */
    const char *fn = made->site.function, *dot = strrchr(fn, '.');
    g->own = dot ? dot + 1 : fn;
    g->ol = strlen(g->own);
    size_t sl = strlen(def.function);
    g->method = def.function_line > 0 && dot && (size_t)(dot - fn) == sl && !strncmp(fn, def.function, sl);
    /* a constructor is called by its class's name (KVCache(b, n, d, device): b is its 2nd parameter) */
    size_t cl = vw_py_constructor(fn);
    if (cl) {
        const char *c = fn + cl;
        while (c > fn && c[-1] != '.') c--;
        g->own = c, g->ol = (size_t)(fn + cl - c), g->ctor = 1;
    }
    for (const char *p = def.params; *p && g->np < 16;) {
        size_t n = strcspn(p, ",");
        if (n >= sizeof g->params[0]) return 0;
        snprintf(g->params[g->np++], sizeof g->params[0], "%.*s", (int)n, p);
        p += n + (p[n] == ',');
    }
    return 1;
}

/* Whether the text [v, tab) is a call of g's function: its last component is g's name. *bare: written without
 * an object (f(a), not obj.f(a)). */
static int calls_callee(const struct callee_sig *g, const char *v, const char *tab, int *bare) {
    const char *last = v;
    for (const char *c = v; c < tab; c++)
        if (*c == '.') last = c + 1;
    *bare = last == v;
    return tab > v && (size_t)(tab - last) == g->ol && !strncmp(last, g->own, g->ol);
}

const char *vw_fact_device_param(struct vw_model *m, const struct vw_step *made, const struct vw_frame *caller,
                                 char *buf, size_t size) {
    struct vw_src cs;
    struct callee_sig g;
    buf[0] = 0;
    if (!caller->python || !callee_sig(m, made, &g) || !vw_src_at(m, caller->file, caller->line, &cs)) return buf;
    /* the device_arg facts of the caller's statement's lines that name it: FUNC (its last component) \t PARAM */
    for (int l = cs.first; l <= cs.last && l - cs.first < 64 && !buf[0]; l++) {
        struct vw_src ls;
        if (!vw_src_at(m, caller->file, l, &ls)) continue;
        for (int i = 0; i < ls.ndevice_args && !buf[0]; i++) {
            const char *v = ls.device_args[i], *tab = strchr(v, '\t');
            int bare;
            if (!tab || !calls_callee(&g, v, tab, &bare)) continue;
            const char *param = tab + 1;
            const char *name = NULL;
            if (param[0] == '#') {
                int pos = atoi(param + 1) + (g.ctor || (g.method && !bare)); /* obj.method(a): a is the 2nd */
                if (pos < g.np) name = g.params[pos];
            } else {
                for (int j = 0; j < g.np && !name; j++)
                    if (!strcmp(g.params[j], param)) name = g.params[j];
            }
            if (name && strlen(name) < size) snprintf(buf, size, "%s", name);
        }
    }
    return buf;
}

const char *vw_fact_tensor_param(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_step *made,
                                 const struct vw_frame *caller, char *buf, size_t size) {
    struct vw_src cs, at, ls;
    struct callee_sig g;
    buf[0] = 0;
    if (!k || !caller->python || !callee_sig(m, made, &g) || !vw_src_at(m, caller->file, caller->line, &cs) ||
        !vw_src_at(m, made->site.file, made->site.line, &at))
        return buf;
    const char *vals[256];
    int nv = vw_facts_values(vw_model_facts(m), caller->file, cs.first, cs.last, DT_FACT_CALL_ARGS, vals, NULL, 256);
    if (!nv) return buf; /* no call of the caller's statement with a name among its arguments: no query of names */
    vw_facts_sort_values(vals, nv);
    char(*named)[128] = calloc(64, sizeof *named);
    int nn = named ? vw_fact_named_only_on(m, k, dev, named, 64) : 0;
    for (int r = 0; r < nv && !buf[0]; r++) {
        char v[1400], *field[9];
        int nf = vw_fact_args_fields(m, caller->file, vals[r], v, sizeof v, field, 9), bare;
        if (nf < 2 || !calls_callee(&g, field[0], field[0] + strlen(field[0]), &bare)) continue;
        for (int i = 1; i < nf && !buf[0]; i++) {
            int pos = i - 1 + (g.ctor || (g.method && !bare)), held = 0;
            if (pos >= g.np || !ident_like(field[i])) continue;
            for (int j = 0; j < nn && !held; j++) held = !strcmp(named[j], field[i]); /* (a receiver has no name) */
            const char *p = g.params[pos];
            if (!held || !ident_like(p) || strlen(p) >= size) continue;
            /* the parameter still holds it where the function makes its tensor: no statement of the function
             * before it (that one included) binds the name again */
            int rebound = 0;
            for (int l = at.function_line + 1; l <= at.last && !rebound; l++)
                rebound = vw_src_at(m, made->site.file, l, &ls) && ls.first == l &&
                          !strcmp(ls.function, at.function) && vw_src_binds(&ls, p);
            if (!rebound) snprintf(buf, size, "%s", p);
        }
    }
    free(named);
    return buf;
}

int vw_fact_callers(struct vw_model *m, const struct vw_step *made) {
    struct vw_frame f;
    int64_t id = made->pystack, next, own = 0;
    for (int depth = 0; id && depth < 256 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
        if (!f.hidden) {
            own = id;
            break;
        }
    if (!own) return 0;
    sqlite3_stmt *st = vw_prep(m->t, "SELECT count(DISTINCT pp.code || ':' || pp.line) FROM py_frames f JOIN py_frames "
                                     "pp ON pp.id = f.parent JOIN py_frames o ON o.id = ?1 WHERE f.code = o.code AND "
                                     "f.line = o.line");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, own);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    /* and as far as the program's source says: a helper the training loop called before the failure and the
     * evaluation loop would have called after it has two callers (the call facts of the program's files: a
     * plain function by its bare name, a method as self.NAME in its own file) */
    const char *fn = made->site.function, *dot = strrchr(fn, '.');
    if (!made->site.python || !fn[0] || strstr(fn, "<") || strlen(fn) > 200) return n;
    char bare[256], self_call[264];
    snprintf(bare, sizeof bare, "%s", dot ? dot + 1 : fn);
    snprintf(self_call, sizeof self_call, "self.%s", bare);
    struct callers_ctx c = {dot ? self_call : bare, dot ? made->site.file : NULL, {{0}}, 0};
    vw_facts_each_file(vw_model_facts(m), DT_FACT_CALL, count_call_site, &c);
    return c.n > n ? c.n : n;
}

int vw_fact_siblings(struct vw_model *m, const struct vw_step *made, int64_t seq, struct vw_sibling *out, int max) {
    struct vw_src own;
    if (!made->has_site || !vw_src_at(m, made->site.file, made->site.line, &own)) return 0;
    sqlite3_stmt *st = vw_prep(
        m->t,
        "SELECT r.id, r.seq, COALESCE(r.stack, 0), COALESCE(r.pystack, 0) FROM tensor_rows r JOIN tensor_attrs a "
        "ON a.id = r.attrs WHERE r.seq BETWEEN ?1 - 4096 AND ?1 + 4096 AND r.seq < ?4 AND r.id <> ?2 AND a.device "
        "= ?3 AND a.origin = ?5 AND a.what = (SELECT a2.what FROM tensor_rows r2 JOIN tensor_attrs a2 ON a2.id = "
        "r2.attrs WHERE r2.id = ?2) AND (r.free_seq IS NULL OR r.free_seq > ?4) AND NOT EXISTS (SELECT 1 FROM "
        "transfers x WHERE x.src = r.id AND x.seq < ?4) ORDER BY r.seq LIMIT 256");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, made->seq);
    sqlite3_bind_int64(st, 2, made->tensor);
    sqlite3_bind_int64(st, 3, made->dev);
    sqlite3_bind_int64(st, 4, seq);
    sqlite3_bind_int(st, 5, made->origin);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW) {
        struct vw_frame f;
        struct vw_src src;
        if (!site_of(m, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 1), &f) ||
            strcmp(f.file, made->site.file) || strcmp(f.function, made->site.function) || f.line == made->site.line ||
            abs(f.line - made->site.line) > 4 || !vw_src_at(m, f.file, f.line, &src) ||
            strcmp(src.indent, own.indent) || !src.binds[0] || strchr(src.binds, ',') || src.opens)
            continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = !strcmp(out[i].name, src.binds);
        if (seen || !strcmp(src.binds, own.binds)) continue;
        snprintf(out[n].name, sizeof out[n].name, "%s", src.binds);
        out[n].line = f.line;
        out[n].last = src.last;
        n++;
    }
    sqlite3_finalize(st);
    return n;
}

int vw_fact_unmoved_name(struct vw_model *m, const char *name, int64_t dev, int64_t seq) {
    sqlite3_stmt *st = vw_prep(m->t, "SELECT 1 FROM names n JOIN strings s ON s.id = n.name AND s.text = ?1 JOIN "
                                     "tensor_rows r ON r.id = n.tensor JOIN tensor_attrs a ON a.id = r.attrs WHERE "
                                     "n.seq < ?3 AND a.device = ?2 AND NOT EXISTS (SELECT 1 FROM transfers x WHERE "
                                     "x.src = r.id AND x.seq < ?3) LIMIT 1");
    if (!st) return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, dev);
    sqlite3_bind_int64(st, 3, seq);
    int yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

int vw_tensor_names(struct vw_model *m, int64_t id, int64_t seq, char (*out)[256], int max) {
    sqlite3_stmt *st = vw_prep(m->t, "SELECT DISTINCT s.text FROM names n JOIN strings s ON s.id = n.name WHERE "
                                     "n.tensor = ?1 AND n.seq < ?2 ORDER BY n.seq DESC LIMIT ?3");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, seq);
    sqlite3_bind_int(st, 3, max);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW)
        if (sqlite3_column_text(st, 0)) snprintf(out[n++], 256, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return n;
}

const char *vw_operand_called(const struct vw_operand *o, char *buf, size_t size) {
    if (o->name[0])
        snprintf(buf, size, "\"%s\"", o->name);
    else if (o->src_name[0])
        snprintf(buf, size, "\"%.200s\" (passed as '%.60s')", o->src_name, o->arg);
    else
        snprintf(buf, size, "the tensor passed as '%s'", o->arg);
    return buf;
}

/* 1 when bases (a class's bases as written, the class_bases fact) name torch's module class. */
static int py_module_bases(const char *bases) {
    size_t n = strlen(DT_PY_MODULE_CLASS);
    for (const char *p = bases; (p = strstr(p, DT_PY_MODULE_CLASS)) != NULL; p += n)
        if ((p == bases || p[-1] == ',' || p[-1] == '.' || p[-1] == ' ') && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

int vw_py_module_def(const struct vw_src *def) { return def->module_class || py_module_bases(def->class_bases); }

size_t vw_src_call_method(const struct vw_src_call *c, const char *method) {
    size_t fl = strlen(c->func), ml = strlen(method);
    return fl > ml + 1 && c->func[fl - ml - 1] == '.' && !strcmp(c->func + fl - ml, method) ? fl - ml - 1 : 0;
}

size_t vw_py_constructor(const char *function) {
    size_t fl = strlen(function), cl = strlen(DT_PY_CONSTRUCTOR);
    return fl > cl + 1 && function[fl - cl - 1] == '.' && !strcmp(function + fl - cl, DT_PY_CONSTRUCTOR) ? fl - cl - 1
                                                                                                         : 0;
}

/* ---------------------------------------------------------------- source facts of native calls */

/* The first value of `key` at `line` of file (line < 0: any line, the most frequent value), into out. */
struct value_ctx {
    const char *best;
    int best_n;
    const char *vals[256];
    int counts[256], n;
};

static int count_value(void *ctx, const char *ffile, int fline, const char *key, const char *v) {
    (void)ffile, (void)fline, (void)key;
    struct value_ctx *c = ctx;
    int i = 0;
    while (i < c->n && strcmp(c->vals[i], v)) i++;
    if (i == c->n) {
        if (c->n == 256) return 0; /* more distinct values than any producer writes of one key: the first kept */
        c->vals[c->n] = v, c->counts[c->n++] = 0;
    }
    c->counts[i]++;
    return 0;
}

int vw_fact_value(struct vw_model *m, const char *file, int line, const char *key, char *out, size_t size) {
    out[0] = 0;
    if (!m->have_facts || !file || !file[0]) return 0;
    struct value_ctx c;
    memset(&c, 0, sizeof c);
    vw_facts_each(vw_model_facts(m), file, line < 0 ? 0 : line, line < 0 ? VW_FACTS_ALL_LINES : line, key, count_value, &c);
    /* the most frequent, then the first in the strings' order (as SQL's ORDER BY n DESC, v.text) */
    for (int i = 0; i < c.n; i++)
        if (!c.best || c.counts[i] > c.best_n || (c.counts[i] == c.best_n && strcmp(c.vals[i], c.best) < 0))
            c.best = c.vals[i], c.best_n = c.counts[i];
    if (!c.best) return 0;
    const char *why;
    if (!vw_fact_shape(key, c.best, &why)) {
        vw_model_refuse(m, file, line, key, why); /* never used: not what a producer writes */
        return 0;
    }
    snprintf(out, size, "%s", c.best);
    return 1;
}

/* The current row's `args` fact (FUNC \t ARG0 \t ARG1 ...) of file copied into v and split in place into
 * field[] (FUNC first); how many fields (0: a value no producer writes, refused). */
int vw_fact_args_fields(struct vw_model *m, const char *file, const char *text, char *v, size_t vsize, char **field,
                        int max) {
    int nf = 0;
    const char *why;
    if (!vw_fact_shape(DT_FACT_CALL_ARGS, text ? text : "", &why)) {
        vw_model_refuse(m, file, -1, DT_FACT_CALL_ARGS, why);
        return 0;
    }
    snprintf(v, vsize, "%s", text);
    for (char *p = v, *tab; nf < max && p; p = tab ? tab + 1 : NULL) {
        tab = strchr(p, '\t');
        if (tab) *tab = 0;
        field[nf++] = p;
    }
    return nf;
}

enum vw_lang vw_code_lang(struct vw_model *m, const struct vw_frame *site) {
    char lang[16];
    if (!site || !site->file[0]) return VW_LANG_NONE;
    if (site->python) return VW_LANG_PYTHON;
    if (!vw_fact_value(m, site->file, 0, DT_FACT_LANG, lang, sizeof lang)) return VW_LANG_NONE;
    return !strcmp(lang, DT_FACT_LANG_C) ? VW_LANG_C : !strcmp(lang, DT_FACT_LANG_CXX) ? VW_LANG_CXX : VW_LANG_NONE;
}

/* Whether the call FUNC (as written: "dt_cross_entropy", "x.add", "torch::mm") is the op `op` (libtorch's
 * with its aten:: namespace): its last name is the op's, bare or with the runtime's dt_ prefix. *method:
 * called on a receiver (x.add). */
static int call_is_op(const char *func, const char *op, int *method) {
    op = dt_op_bare(op); /* libtorch's ops: aten::eq is x.eq(y), torch::eq(x, y) */
    const char *base = func + strlen(func);
    while (base > func && base[-1] != '.' && base[-1] != '>' && base[-1] != ':') base--;
    *method = base > func && (base[-1] == '.' || base[-1] == '>');
    size_t pl = sizeof DT_OP_C_PREFIX - 1, xl = sizeof DT_OP_CXX_OPERATOR_PREFIX - 1;
    const char *sym = dt_op_cxx_operator(op); /* image - mean: "operator-" (the statement reader's) */
    if (sym && !strncmp(func, DT_OP_CXX_OPERATOR_PREFIX, xl) && !strcmp(func + xl, sym)) return 1;
    return !strcmp(base, op) || (!strncmp(base, DT_OP_C_PREFIX, pl) && !strcmp(base + pl, op));
}

static int ident_like(const char *s) {
    if (!*s || isdigit((unsigned char)*s)) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

const char *vw_code_operand_name(struct vw_model *m, const struct vw_case *k, const struct vw_operand *o, char *buf,
                                 size_t size) {
    buf[0] = 0;
    int pos = (int)(o - k->ops);
    if (!m->have_facts || !k->call.has_site || pos < 0 || pos >= k->n || !k->opname[0]) return buf;
    enum vw_lang lang = vw_code_lang(m, &k->call.site);
    if (lang != VW_LANG_C && lang != VW_LANG_CXX) return buf;
    struct vw_src src;
    if (!vw_src_at(m, k->call.site.file, k->call.site.line, &src)) return buf;
    const char *vals[256];
    int nvals = vw_facts_values(vw_model_facts(m), k->call.site.file, src.first, src.last, DT_FACT_CALL_ARGS, vals, NULL, 256);
    int found = 0;
    for (int r = 0; !found && r < nvals; r++) {
        /* FUNC \t ARG0 \t ARG1 ... */
        char v[1400], *field[17];
        int method, nf = vw_fact_args_fields(m, k->call.site.file, vals[r], v, sizeof v, field, 17);
        if (!nf || !call_is_op(field[0], k->opname, &method)) continue;
        char recv[256] = "";
        if (method) { /* x.add(y): operand 0 is the receiver */
            const char *base = field[0] + strlen(field[0]);
            while (base > field[0] && base[-1] != '.' && base[-1] != '>') base--;
            size_t n = (size_t)(base - field[0]) - (base[-1] == '>' ? 2 : 1);
            snprintf(recv, sizeof recv, "%.*s", (int)(n < 255 ? n : 255), field[0]);
        }
        const char *a = method         ? (pos == 0   ? recv
                                          : pos < nf ? field[pos]
                                                     : NULL)
                        : pos + 1 < nf ? field[pos + 1]
                                       : NULL;
        if (a && ident_like(a)) {
            snprintf(buf, size, "%s", a);
            found = 1;
        }
    }
    return buf;
}

int vw_fact_params_made_in(struct vw_model *m, const char *cls, size_t cl) {
    /* the parameters: by their role since schema 13, by the name of the call that made them before (is_parameter) */
    sqlite3_stmt *st =
        m->t->version >= TS_ROLE_PARAMETER_SINCE
            ? vw_prep(m->t, "SELECT r.pystack FROM tensor_rows r WHERE COALESCE(r.pystack, 0) <> 0 AND r.id IN "
                            "(SELECT x.tensor FROM roles x WHERE x.role = " DT_SQL_ROLE_PARAMETER ") LIMIT 4096")
            : vw_prep(m->t, "SELECT r.pystack FROM tensor_rows r JOIN tensor_attrs a ON a.id = r.attrs JOIN "
                            "strings w ON w.id = a.what AND w.text = '" DT_WHAT_PARAMETER "' WHERE "
                            "COALESCE(r.pystack, 0) <> 0 LIMIT 4096");
    if (!st) return 0;
    int found = 0;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        struct vw_frame f;
        int64_t id = sqlite3_column_int64(st, 0), next;
        for (int depth = 0; id && depth < 64 && !found && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
            found = !strncmp(f.function, cls, cl) && !strcmp(f.function + cl, "." DT_PY_CONSTRUCTOR);
    }
    sqlite3_finalize(st);
    return found;
}

/* The sites of the rows of st (seq, stack, pystack; its dev, before and max bound as ?1, ?2 and ?3), into out:
 * how many. st is finalized. */
static int sites_of_rows(struct vw_model *m, sqlite3_stmt *st, int64_t dev, int64_t before, struct vw_frame *out,
                         int max) {
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, dev);
    sqlite3_bind_int64(st, 2, before);
    sqlite3_bind_int(st, 3, max);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW)
        if (vw_sym_event_site(m->sym, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                              sqlite3_column_int64(st, 0), &out[n]))
            n++;
    sqlite3_finalize(st);
    return n;
}

int vw_fact_moves_to(struct vw_model *m, int64_t dev, int64_t before, struct vw_frame *out, int max) {
    return sites_of_rows(
        m,
        vw_prep(m->t, "SELECT x.seq, COALESCE(e.stack, 0), COALESCE(e.pystack, 0) FROM transfers x "
                      "LEFT JOIN misc_events e ON e.seq = x.seq WHERE x.dst_device = ?1 AND x.seq < ?2 "
                      "AND x.kind IN (" VW_SQL_TRANSFER_TO ", " VW_SQL_TRANSFER_MOVE ") ORDER BY x.seq DESC LIMIT ?3"),
        dev, before, out, max);
}

int vw_fact_copies_to(struct vw_model *m, int64_t from, int64_t dev, int64_t before, struct vw_frame *out, int max) {
    sqlite3_stmt *st = vw_prep(
        m->t, "SELECT MAX(x.seq), COALESCE(e.stack, 0) AS s, COALESCE(e.pystack, 0) AS p FROM transfers x "
              "LEFT JOIN misc_events e ON e.seq = x.seq WHERE x.dst_device = ?1 AND x.seq < ?2 AND x.src_device = ?4 "
              "AND x.kind = " VW_SQL_TRANSFER_TO " AND instr(COALESCE((SELECT v.text FROM strings v WHERE v.id = "
              "x.via), ''), '.') = 0 GROUP BY s, p ORDER BY 1 DESC LIMIT ?3");
    if (st) sqlite3_bind_int64(st, 4, from);
    return sites_of_rows(m, st, dev, before, out, max);
}

int vw_fact_parts_moved(struct vw_model *m, int64_t id, int64_t want, int64_t before) {
    return has_row(m,
                   "SELECT 1 FROM transfers x JOIN tensors t ON t.id = x.src WHERE x.dst_device = ?2 AND x.seq < ?3 "
                   "AND (x.src = ?1 OR t.src = ?1 OR t.op IN (SELECT a.op FROM op_args a WHERE a.tensor = ?1)) LIMIT 1",
                   id, want, before);
}

/* vw_fact_made_on's last answer: the query reads every tensor, and the rules ask it again for each device
 * expression they write. */
struct vw_made_on {
    int64_t dev, before;
    int max, n;
    struct vw_frame f[256];
};

int vw_fact_made_on(struct vw_model *m, int64_t dev, int64_t before, struct vw_frame *out, int max) {
    if (max > 256) max = 256;
    struct vw_made_on *c = m->made_on ? m->made_on : (m->made_on = calloc(1, sizeof *m->made_on));
    if (c && c->max && c->dev == dev && c->before == before && c->max == max) {
        memcpy(out, c->f, (size_t)c->n * sizeof *out);
        return c->n;
    }
    int n = sites_of_rows(
        m,
        vw_prep(m->t, "SELECT MAX(t.seq), COALESCE(t.stack, 0) AS s, COALESCE(t.pystack, 0) AS p FROM tensors t "
                      "WHERE t.device = ?1 AND t.seq < ?2 AND t.origin = " DT_SQL_ORIGIN_FACTORY " GROUP BY s, p "
                      "ORDER BY 1 DESC LIMIT ?3"),
        dev, before, out, max);
    if (c) {
        c->dev = dev, c->before = before, c->max = max, c->n = n;
        memcpy(c->f, out, (size_t)n * sizeof *out);
    }
    return n;
}

int vw_fact_held_on(struct vw_model *m, const struct vw_case *k, int64_t dev, char (*names)[128],
                    struct vw_frame *made, int max) {
    if (!k->op) return 0;
    sqlite3_stmt *st = vw_prep(
        m->t, "SELECT s.text, t.seq, COALESCE(t.stack, 0), COALESCE(t.pystack, 0) FROM names n JOIN strings s ON "
              "s.id = n.name JOIN tensors t ON t.id = n.tensor WHERE n.seq > (SELECT o.seq FROM ops o WHERE o.op = ?2) "
              "AND n.seq < ?3 AND t.device = ?1 AND NOT EXISTS (SELECT 1 FROM transfers x WHERE x.dst = t.id AND "
              "x.kind = " VW_SQL_TRANSFER_MOVE ") ORDER BY n.seq LIMIT ?4");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, dev);
    sqlite3_bind_int64(st, 2, k->op);
    sqlite3_bind_int64(st, 3, k->seq);
    sqlite3_bind_int(st, 4, max);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!name || strlen(name) >= sizeof names[0]) continue;
        if (!vw_sym_event_site(m->sym, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                               sqlite3_column_int64(st, 1), &made[n]))
            continue;
        snprintf(names[n++], sizeof names[0], "%s", name);
    }
    sqlite3_finalize(st);
    return n;
}

int vw_fact_named_only_on(struct vw_model *m, const struct vw_case *k, int64_t dev, char (*names)[128], int max) {
    if (!k->op) return 0;
    sqlite3_stmt *st = vw_prep(
        m->t, "SELECT s.text FROM names n JOIN strings s ON s.id = n.name JOIN tensors t ON t.id = n.tensor WHERE "
              "n.seq > (SELECT o.seq FROM ops o WHERE o.op = ?2) AND n.seq < ?3 GROUP BY n.name HAVING "
              "MIN(t.device) = ?1 AND MAX(t.device) = ?1 AND SUM(t.id = ?5) = 0 ORDER BY MIN(n.seq) LIMIT ?4");
    if (!st) return 0;
    sqlite3_bind_int64(st, 1, dev);
    sqlite3_bind_int64(st, 2, k->op);
    sqlite3_bind_int64(st, 3, k->seq);
    sqlite3_bind_int(st, 4, max);
    sqlite3_bind_int64(st, 5, k->odd ? k->odd->tensor : 0);
    int n = 0;
    while (n < max && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name && strlen(name) < sizeof names[0]) snprintf(names[n++], sizeof names[0], "%s", name);
    }
    sqlite3_finalize(st);
    return n;
}

/* ---------------------------------------------------------------- loading */

int vw_model_open(struct vw_model *m, struct vw_trace *t) {
    memset(m, 0, sizeof *m);
    m->t = t;
    m->sym = vw_sym_new(t);
    vw_health(t->db, &m->health);
    m->tensor = vw_prep(
        t, "SELECT t.seq, t.device, t.origin, COALESCE(t.src, 0), COALESCE(t.op, 0), "
           "COALESCE(t.stack, 0), w.text, d.text, COALESCE(t.pystack, 0) FROM tensors t LEFT JOIN strings w ON w.id = "
           "t.what LEFT JOIN strings d ON d.id = t.detail WHERE t.id = ?");
    m->moves = vw_prep(t, "SELECT x.seq, x.src_device, x.dst_device, v.text, COALESCE(e.stack, 0), "
                          "COALESCE(e.pystack, 0) FROM "
                          "transfers x LEFT JOIN strings v ON v.id = x.via LEFT JOIN misc_events e ON e.seq = x.seq "
                          "WHERE x.dst = ?1 AND x.kind = " VW_SQL_TRANSFER_MOVE " AND x.seq < ?2 ORDER BY x.seq DESC");
    m->args = vw_prep(t, "SELECT a.tensor, a.device, s.text FROM op_args a JOIN strings s ON s.id = a.name "
                         "WHERE a.op = ? ORDER BY a.pos");
    m->opname = vw_prep(t, "SELECT s.text FROM ops o JOIN strings s ON s.id = o.name WHERE o.op = ?");
    sqlite3_stmt *has = NULL;
    if (sqlite3_prepare_v2(t->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'source_facts'", -1,
                           &has, NULL) == SQLITE_OK &&
        sqlite3_step(has) == SQLITE_ROW)
        m->have_facts = 1;
    sqlite3_finalize(has);
    if (!m->sym || !m->tensor || !m->moves || !m->args || !m->opname) {
        vw_model_close(m);
        return -1;
    }
    return 0;
}

void vw_model_close(struct vw_model *m) {
    sqlite3_stmt *sts[] = {m->tensor, m->moves, m->args, m->opname};
    vw_facts_free(&m->facts);
    for (size_t s = 0; s < sizeof sts / sizeof *sts; s++)
        if (sts[s]) sqlite3_finalize(sts[s]);
    free(m->src_cache);
    free(m->made_on);
    vw_sym_free(m->sym);
    memset(m, 0, sizeof *m);
}

int vw_py_frames(struct vw_model *m, int64_t pystack, struct vw_frame *out, int max) {
    int n = 0;
    int64_t id = pystack, next;
    for (int depth = 0; id && depth < 256 && n < max && vw_sym_py_frame(m->sym, id, &out[n], &next); depth++, id = next)
        n++;
    return n;
}

int vw_py_on_stack(struct vw_model *m, int64_t pystack, const char *file, const char *function) {
    struct vw_frame f;
    int64_t id = pystack, next;
    for (int depth = 0; id && depth < 256 && vw_sym_py_frame(m->sym, id, &f, &next); depth++, id = next)
        if (!f.hidden && !strcmp(f.file, file) && vw_same_function(f.function, function)) return 1;
    return 0;
}

int vw_operand_of(struct vw_model *m, struct vw_operand *o, int64_t tensor, const char *name, int64_t seq) {
    memset(o, 0, sizeof *o);
    if (!tensor) return 0;
    o->tensor = tensor;
    snprintf(o->name, sizeof o->name, "%s", name ? name : "");
    build_chain(m, o, tensor, seq);
    if (!o->nsteps) return 0;
    o->dev = o->chain[0].dev;
    o->arrived = arrival(o);
    return 1;
}

int64_t vw_tensor_named(struct vw_model *m, const char *name, int64_t seq) {
    sqlite3_stmt *st = vw_prep(m->t, "SELECT n.tensor FROM names n JOIN strings s ON s.id = n.name WHERE s.text = ?1 "
                                     "AND n.seq < ?2 ORDER BY n.seq DESC LIMIT 2");
    if (!st) return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, seq);
    int64_t found = 0;
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(st, 0);
        if (n++ && t != found) found = -1; /* two tensors by that name: which one is not known */
        else found = t;
    }
    sqlite3_finalize(st);
    return found > 0 ? found : 0;
}

const struct vw_src_call *vw_src_making_call(const struct vw_src *src, const struct vw_step *s) {
    size_t wl = strlen(s->what);
    for (int i = 0; i < src->ncalls; i++) {
        const char *f = src->calls[i].func;
        size_t fl = strlen(f);
        /* torch.rand, x.to, torch::rand; in C on libdtrt the runtime's own name of the op, dt_rand */
        size_t pl = sizeof DT_OP_C_PREFIX - 1;
        if (wl && fl >= wl && !strcmp(f + fl - wl, s->what) &&
            (fl == wl || f[fl - wl - 1] == '.' || f[fl - wl - 1] == ':' ||
             (fl == wl + pl && !strncmp(f, DT_OP_C_PREFIX, pl))))
            return &src->calls[i];
    }
    return NULL;
}

/* The call of the statement src (at made's line) that made step made: on that line, or, the statement spanning
 * lines, on its first (torch.where(...).cpu() is said where it begins; *first holds that line's facts then);
 * NULL when none. */
static const struct vw_src_call *statement_call(struct vw_model *m, const struct vw_step *made,
                                                const struct vw_src *src, struct vw_src *first) {
    const struct vw_src_call *c = vw_src_making_call(src, made);
    if (!c && src->first != made->site.line && vw_src_at(m, made->site.file, src->first, first))
        c = vw_src_making_call(first, made);
    return c;
}

int vw_case_load(struct vw_model *m, struct vw_case *k, int64_t seq, int first, int other, const char *message,
                 int64_t op, int64_t stack, int64_t pystack) {
    memset(k, 0, sizeof *k);
    k->seq = seq, k->first = first, k->other = other, k->message = message;
    k->op = op, k->stack = stack, k->pystack = pystack;
    op_name(m, op, k->opname, sizeof k->opname);
    struct vw_operand *ops = k->ops = calloc(VW_MAX_ARGS, sizeof *ops);
    if (!ops) {
        vw_error("out of memory");
        return -1;
    }
    sqlite3_stmt *st =
        vw_prep(m->t, "SELECT a.pos, s.text, a.tensor, a.device, t.dtype, COALESCE(sh.text, '?'), "
                      "(SELECT s2.text FROM names m JOIN strings s2 ON s2.id = m.name WHERE m.tensor = "
                      "a.tensor AND m.seq < ?2 ORDER BY m.seq DESC LIMIT 1) FROM op_args a JOIN strings s "
                      "ON s.id = a.name LEFT JOIN tensors t ON t.id = a.tensor LEFT JOIN strings sh ON "
                      "sh.id = t.shape WHERE a.op = ?1 ORDER BY a.pos");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, op);
    sqlite3_bind_int64(st, 2, seq);
    int n = 0;
    while (n < VW_MAX_ARGS && sqlite3_step(st) == SQLITE_ROW) {
        struct vw_operand *o = &ops[n++];
        snprintf(o->arg, sizeof o->arg, "%s", (const char *)sqlite3_column_text(st, 1));
        o->tensor = sqlite3_column_int64(st, 2);
        o->dev = sqlite3_column_int64(st, 3);
        snprintf(o->dtype, sizeof o->dtype, "%s", vw_dtype_name(sqlite3_column_int(st, 4)));
        snprintf(o->shape, sizeof o->shape, "%s", (const char *)sqlite3_column_text(st, 5));
        snprintf(o->name, sizeof o->name, "%s",
                 sqlite3_column_text(st, 6) ? (const char *)sqlite3_column_text(st, 6) : "");
        o->scalar = !strcmp(o->shape, DT_SHAPE_SCALAR) && o->dev == 0;
    }
    sqlite3_finalize(st);
    k->n = n;
    /* the producer's device check named these two as on different devices: a cpu scalar it named is none the op
     * allows (an in-place op's own output: total += loss, total a cpu scalar) */
    if (first >= 0 && first < n && other >= 0 && other < n && ops[first].dev != ops[other].dev)
        ops[first].scalar = ops[other].scalar = 0;
    /* the operands' majority; a tie goes to the accelerator (a program that has one means to use it), between
     * accelerators to the first operand's */
    int64_t devs[VW_MAX_ARGS];
    int counts[VW_MAX_ARGS], nd = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i].scalar) continue;
        int j = 0;
        while (j < nd && devs[j] != ops[i].dev) j++;
        if (j == nd) devs[nd] = ops[i].dev, counts[nd++] = 0;
        counts[j]++;
    }
    int best = 0;
    int64_t first_dev = first >= 0 && first < n ? ops[first].dev : -1;
    for (int j = 1; j < nd; j++)
        if (counts[j] > counts[best] || (counts[j] == counts[best] && devs[best] == 0 && devs[j] != 0) ||
            (counts[j] == counts[best] && devs[best] != 0 && devs[j] == first_dev))
            best = j;
    for (int j = 0; j < nd; j++)
        if (j != best && counts[j] == counts[best] && devs[j] != 0 && devs[best] != 0) k->tie = 1;
    intent_of(m, ops, n, nd ? devs[best] : 0, seq, &k->in);
    k->want = k->in.want;
    if (k->in.by != VW_INTENT_OPERANDS || k->in.ambiguous) k->tie = 0; /* settled by the program, or said */
    for (int i = 0; i < n; i++) {
        ops[i].odd = !ops[i].scalar && ops[i].dev != k->want;
        build_chain(m, &ops[i], ops[i].tensor, seq);
        ops[i].arrived = arrival(&ops[i]);
        ops[i].buffer = has_role(m, ops[i].tensor, DTP_ROLE_MODULE_BUFFER, seq);
        ops[i].span_lo = ops[i].nsteps ? ops[i].chain[ops[i].nsteps - 1].seq : 0;
        ops[i].gap = vw_health_gap(&m->health, ops[i].span_lo, seq);
        ops[i].pruned = vw_health_pruned(&m->health, ops[i].span_lo, seq);
        if (ops[i].odd && !k->odd) k->odd = &ops[i];
    }
    k->call.stack = stack, k->call.seq = seq, k->call.pystack = pystack;
    k->call.has_site = site_of(m, stack, pystack, seq, &k->call.site);
    for (int i = 0; i < n; i++) {
        if (ops[i].scalar || ops[i].name[0]) continue;
        vw_code_operand_name(m, k, &ops[i], ops[i].src_name, sizeof ops[i].src_name);
        /* Python: no variable held it at the failure (an LSTM's state tuple); the one name the statement that
         * made it bound (h0 = torch.zeros(...)) */
        const struct vw_step *made = ops[i].nsteps ? &ops[i].chain[0] : NULL;
        const struct vw_src_call *call;
        struct vw_src src, first;
        if (!ops[i].src_name[0] && made && made->tensor == ops[i].tensor && made->origin >= 0 && made->has_site &&
            vw_code_lang(m, &made->site) == VW_LANG_PYTHON && vw_src_at(m, made->site.file, made->site.line, &src) &&
            src.binds[0] && !strchr(src.binds, ',') && src.binds_kind == DT_BINDS_CALL &&
            /* the statement's value, not a temporary inside it (total += loss(model(x), y).item()) */
            (call = statement_call(m, made, &src, &first)) && !call->temporary)
            snprintf(ops[i].src_name, sizeof ops[i].src_name, "%s", src.binds);
    }
    return 0;
}

void vw_case_free(struct vw_case *k) {
    free(k->ops);
    k->ops = NULL;
}
