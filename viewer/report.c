/* devtrace report: for each device mismatch in a trace, the op and where it
 * was called, its operands, which one is the odd one out, the chain of
 * events that put it on its device, where its peers reached theirs, and the
 * line where the missing move belongs. With no mismatch: says so, and
 * summarizes tensors per device and transfers by call site. First, how the
 * program ended and how long after the mismatch; last, the traces of the
 * processes it forked.
 *
 * The odd operand is the one off the intended device, which comes from what
 * the program did (the tensors it sent to each device, the work it ran
 * there), else from the operands' majority; an unclear intent is said. The
 * chain walks provenance backwards: op output -> the input on the same
 * device, transfer -> source, view -> base, until a factory or a checkpoint
 * load; in-place moves (module.to) are steps too. The fix is, in order: the
 * move of a parameter that left its optimizer state behind; the move of a
 * tensor that left behind what was made from it; the checkpoint load that
 * needed a map_location; the place a peer that came from the same line was
 * moved; the copy that took it off the device; else right after the odd
 * operand was made (a view: after its base was made, once). */
#include "diag.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Colors on a terminal only (text to stdout; never in JSON or HTML). */
#include <devtrace/probe.h>

/* Colors on a terminal only (text to stdout; never in JSON or HTML). */
#define C(x) (f == stdout ? vw_color(x) : "")

#define MAX_ARGS VW_MAX_ARGS

struct ctx {
    struct vw_trace *t;
    struct vw_sym *sym; /* the model's */
    struct vw_model m;
    int json, all_frames;
    int no_source; /* --no-source: no snippets of the program's source (text and JSON) */
    int brief;     /* --brief: the headline, the odd operand, its origin and the fix */
    int patches;   /* fixes given with code so far (devtrace fix can write them) */
    int compiled;  /* of those, fixes of C or C++ code (fix --verify cannot re-run them) */
    FILE *out;
    FILE *key; /* what makes two ranks' mismatches the same (op, message, sites, culprit), or NULL */
};

#define MAX_FRAMES 64

#define MAX_FRAMES 64

/* The call stack of the failing op: the program's frames, or every frame
 * with --all-frames (libdtrt, libdevtrace and libc ones marked). */
static void print_stack(struct ctx *c, FILE *f, int64_t stack, int64_t seq) {
    struct vw_frame *fr = calloc(MAX_FRAMES, sizeof *fr);
    int n = fr ? vw_sym_stack(c->sym, stack, seq, fr, MAX_FRAMES) : 0;
    char buf[1200];
    int shown = 0, hidden = 0;
    if (c->json) fputs(", \"stack\": [", f);
    for (int i = 0; i < n; i++) {
        if (fr[i].hidden && !c->all_frames) {
            hidden++;
            continue;
        }
        if (c->json) {
            fprintf(f, "%s{\"frame\": ", shown ? ", " : "");
            vw_put_json_string(f, vw_site_str(&fr[i], buf, sizeof buf));
            fprintf(f, ", \"hidden\": %s, \"inlined\": %s}", fr[i].hidden ? "true" : "false",
                    fr[i].inlined ? "true" : "false");
        } else {
            fprintf(f, "%s    #%-2d ", shown ? "" : "  call stack:\n", i);
            vw_put_escaped(f, vw_site_str(&fr[i], buf, sizeof buf));
            fputs(fr[i].inlined ? "  [inlined]" : "", f);
            fputs(fr[i].hidden ? "  [hidden by default]\n" : "\n", f);
        }
        shown++;
    }
    if (c->json)
        fputs("]", f);
    else if (hidden)
        fprintf(f, "    (%d frame%s inside libdtrt, libdevtrace and libc hidden; --all-frames shows them)\n", hidden,
                hidden == 1 ? "" : "s");
    free(fr);
}

static int py_frame_at(struct ctx *c, int64_t id, struct vw_frame *f, int64_t *parent) {
    return vw_sym_py_frame(c->sym, id, f, parent);
}

static int site_of(struct ctx *c, int64_t stack, int64_t pystack, int64_t seq, struct vw_frame *f) {
    return vw_sym_event_site(c->sym, stack, pystack, seq, f);
}

static void print_site(FILE *f, const struct vw_step *s) {
    char buf[1024];
    if (s->has_site) {
        fputs("  ", f);
        vw_put_escaped(f, vw_site_str(&s->site, buf, sizeof buf));
    }
}

const char *vw_intent_by_name(enum vw_intent_by by) {
    switch (by) {
    case VW_INTENT_OPERANDS: return "operands";
    case VW_INTENT_TRANSFERS: return "transfers";
    case VW_INTENT_WORK: return "work";
    case VW_INTENT_DEVICE_EXPR: return "device expression";
    }
    return "?";
}

/* A step of a chain as a person reads it, from the step's facts (the model writes no English). */
static const char *step_text(const struct vw_step *s, char *buf, size_t size) {
    char d1[32], d2[32];
    long long id = (long long)s->tensor, from = (long long)s->from;
    vw_device_name(s->dev, d1, sizeof d1);
    if (s->from_dev != VW_DEV_UNKNOWN)
        vw_device_name(s->from_dev, d2, sizeof d2);
    else
        snprintf(d2, sizeof d2, "?");
    switch (s->origin) {
    case -1: snprintf(buf, size, "moved in place %s -> %s by %s", d2, d1, s->what); break;
    case VW_STEP_ROLE:
        if (s->role == DTP_ROLE_OPTIMIZER_STATE)
            snprintf(buf, size, "t%lld on %s became optimizer state \"%s\" of %s%s%s", id, d1, s->what,
                     s->detail[0] ? "\"" : "", s->detail[0] ? s->detail : "an unnamed parameter",
                     s->detail[0] ? "\"" : "");
        else
            snprintf(buf, size, "t%lld on %s took role %d (\"%s\") of t%lld", id, d1, s->role, s->what, from);
        break;
    case DTP_ORIGIN_FACTORY:
        if (s->from) /* inside a library call, on the device of a tensor the call took (model.c) */
            snprintf(buf, size, "t%lld created on %s by %s inside the call, on the device of t%lld, which it took", id,
                     d1, s->what, from);
        else
            snprintf(buf, size, "t%lld created on %s by %s", id, d1, s->what);
        break;
    case DTP_ORIGIN_CHECKPOINT:
        snprintf(buf, size, "t%lld loaded on %s from checkpoint key \"%s\" of %s", id, d1, s->what, s->detail);
        break;
    case DTP_ORIGIN_VIEW: snprintf(buf, size, "t%lld is a view (%s) of t%lld", id, s->what, from); break;
    case DTP_ORIGIN_TRANSFER:
        snprintf(buf, size, "t%lld copied %s -> %s from t%lld by %s", id, d2, d1, from, s->what);
        break;
    case DTP_ORIGIN_OP_OUTPUT:
        if (s->from)
            snprintf(buf, size, "t%lld made on %s by %s from t%lld ('%s')", id, d1, s->op, from, s->from_arg);
        else
            snprintf(buf, size, "t%lld made on %s by %s", id, d1, s->op);
        break;
    default: snprintf(buf, size, "t%lld created on %s (%s)", id, d1, s->what); break;
    }
    return buf;
}

static void json_site(FILE *f, const struct vw_step *s) {
    if (!s || !s->has_site) {
        fputs("null", f);
        return;
    }
    fputs("{\"file\": ", f);
    vw_put_json_string(f, s->site.file);
    fprintf(f, ", \"line\": %d, \"function\": ", s->site.line);
    vw_put_json_string(f, s->site.function);
    fputs(", \"module\": ", f);
    vw_put_json_string(f, s->site.module);
    fprintf(f, ", \"module_changed\": %s}", s->site.changed ? "true" : "false");
}

/* ---------------------------------------------------------------- source snippets */

#define SNIP_CONTEXT 1 /* lines shown either side of a line */

/* A source line escaped for the terminal, its tabs as 4 spaces (an escaped tab would read "\t"). */
static void put_source_line(FILE *f, const char *s) {
    size_t len = strlen(s), k = 0;
    char *out = malloc(4 * len + 1);
    if (!out) return;
    for (const char *p = s; *p; p++)
        if (*p == '\t')
            memcpy(out + k, "    ", 4), k += 4;
        else
            out[k++] = *p;
    out[k] = 0;
    vw_put_escaped(f, out);
    free(out);
}

#define SNIP_MAX_SPAN 9 /* lines one snippet may show */

/* Lines of the source to show: one or more of the failing, origin and fix lines close together in one file. */
struct snippet {
    const struct vw_frame *site; /* the first of them */
    char what[96];               /* "failing line 28, origin 23" */
    int line[3], n;              /* the marked lines */
    const char *mark[3];         /* what each is: "failing", "origin", "fix" */
};

/* Adds a line to the last snippet when it is in the same file and close by, else starts one. */
static void snippet_add(struct snippet *sn, int *n, const char *what, const char *mark, const struct vw_frame *site) {
    if (!site->file[0] || site->line <= 0) return;
    struct snippet *last = *n ? &sn[*n - 1] : NULL;
    if (last && !strcmp(last->site->file, site->file)) {
        int lo = site->line, hi = site->line;
        for (int i = 0; i < last->n; i++) {
            lo = last->line[i] < lo ? last->line[i] : lo;
            hi = last->line[i] > hi ? last->line[i] : hi;
        }
        if (hi - lo + 1 + 2 * SNIP_CONTEXT <= SNIP_MAX_SPAN) {
            size_t k = strlen(last->what);
            snprintf(last->what + k, sizeof last->what - k, ", %s %d", what, site->line);
            last->mark[last->n] = mark;
            last->line[last->n++] = site->line;
            return;
        }
    }
    sn[*n] = (struct snippet){.site = site, .line = {site->line}, .mark = {mark}, .n = 1};
    snprintf(sn[*n].what, sizeof sn[*n].what, "%s %d", what, site->line);
    (*n)++;
}

/* The snippets of a mismatch: its failing line, the origin of the odd operand and the fix site (each when
 * known), those close together in one file sharing one; the number of them. */
static int snippets_of(struct snippet sn[3], const struct vw_step *call, const struct vw_step *origin,
                       const struct vw_step *fix) {
    int n = 0;
    if (call && call->has_site) snippet_add(sn, &n, "failing line", "failing", &call->site);
    if (origin && origin->has_site) snippet_add(sn, &n, "origin", "origin", &origin->site);
    if (fix && fix->has_site) snippet_add(sn, &n, "fix", "fix", &fix->site);
    return n;
}

/* A snippet's lines as read: the marked lines with SNIP_CONTEXT lines either side. */
struct snippet_text {
    int lo, got;
    char text[SNIP_MAX_SPAN][VW_SNIP_WIDTH + 1];
};

/* Reads a snippet's lines; 0 when the file is not there, or not as long as it was. */
static int snippet_read(struct ctx *c, const struct snippet *sn, struct snippet_text *st) {
    int lo = sn->line[0], hi = sn->line[0];
    for (int i = 1; i < sn->n; i++) {
        lo = sn->line[i] < lo ? sn->line[i] : lo;
        hi = sn->line[i] > hi ? sn->line[i] : hi;
    }
    lo = lo > SNIP_CONTEXT ? lo - SNIP_CONTEXT : 1;
    hi += SNIP_CONTEXT;
    st->lo = lo;
    st->got = vw_source_lines(c->t, sn->site->file, lo, hi, st->text);
    return lo + st->got > hi - SNIP_CONTEXT;
}

/* "  FILE: failing line N, ..." and those lines with SNIP_CONTEXT lines either side, numbered, each marked
 * '>'. */
static void print_snippet(struct ctx *c, FILE *f, const struct snippet *sn) {
    struct snippet_text st;
    if (!snippet_read(c, sn, &st)) { /* said, and the report goes on */
        char why[PATH_MAX + 100];
        fputs("\n  ", f);
        vw_put_escaped(f, sn->site->file);
        fputs(": source not available: ", f);
        vw_put_escaped(f, vw_source_unavailable(c->t, sn->site->file, why, sizeof why));
        fputc('\n', f);
        return;
    }
    fputs("\n  ", f);
    vw_put_escaped(f, sn->site->file);
    fputs(": ", f);
    vw_put_escaped(f, sn->what);
    fputc('\n', f);
    for (int i = 0; i < st.got; i++) {
        int mark = 0;
        for (int k = 0; k < sn->n; k++) mark |= sn->line[k] == st.lo + i;
        fprintf(f, "  %c %5d | ", mark ? '>' : ' ', st.lo + i);
        put_source_line(f, st.text[i]);
        fputc('\n', f);
    }
}

/* {"file", "first_line", "lines": [{"n", "text", "marks": [...]}]}; nothing when the file cannot be read.
 * sep is written first; 1 when written. */
static int json_snippet(struct ctx *c, FILE *f, const struct snippet *sn, const char *sep) {
    struct snippet_text st;
    if (!snippet_read(c, sn, &st)) return 0;
    fprintf(f, "%s{\"file\": ", sep);
    vw_put_json_string(f, sn->site->file);
    fprintf(f, ", \"first_line\": %d, \"lines\": [", st.lo);
    for (int i = 0; i < st.got; i++) {
        fprintf(f, "%s{\"n\": %d, \"text\": ", i ? ", " : "", st.lo + i);
        vw_put_json_string(f, st.text[i]);
        fputs(", \"marks\": [", f);
        for (int k = 0, m = 0; k < sn->n; k++)
            if (sn->line[k] == st.lo + i) fprintf(f, "%s\"%s\"", m++ ? ", " : "", sn->mark[k]);
        fputs("]}", f);
    }
    fputs("]}", f);
    return 1;
}

/* ---------------------------------------------------------------- intent */

/* The candidates of an unclear intent (or the reason a clear one overrode
 * the operands' majority): per device, what the program sent there, the
 * work it ran there, and an operand on it with where it reached it. */
static void print_intent(FILE *f, const struct vw_intent *in, const struct vw_operand *ops, int n) {
    char d1[32], d2[32], buf[1200];
    if (!in->ambiguous && (in->by == VW_INTENT_OPERANDS || in->want == in->majority)) return;
    if (in->ambiguous)
        fprintf(f,
                "\n  which device was meant is not clear: the program's moves and its work do not point at one "
                "device; %s, %s, is taken (check both chains):\n",
                vw_device_name(in->want, d1, sizeof d1),
                in->by == VW_INTENT_WORK ? "where its work ran" : "where most operands are");
    else
        fprintf(f, "\n  %s is taken as meant, though most operands are on %s: %s\n",
                vw_device_name(in->want, d1, sizeof d1), vw_device_name(in->majority, d2, sizeof d2),
                in->by == VW_INTENT_WORK          ? "the program's latest ops ran there"
                : in->by == VW_INTENT_DEVICE_EXPR ? "the program's own device expressions sent tensors there"
                                                  : "the program's own moves went there");
    for (int k = 0; k < in->n; k++) {
        const struct vw_operand *o = NULL;
        for (int i = 0; i < n && !o; i++)
            if (!ops[i].scalar && ops[i].dev == in->dev[k] && ops[i].nsteps) o = &ops[i];
        fprintf(f, "    %-8s %lld tensor%s sent there, %lld of the latest ops ran there",
                vw_device_name(in->dev[k], d1, sizeof d1), in->sent[k], in->sent[k] == 1 ? "" : "s", in->work[k]);
        if (o) {
            const struct vw_step *a = &o->chain[o->arrived];
            fprintf(f, "; '%s' t%lld got there", o->arg, (long long)o->tensor);
            if (a->has_site) fputs(" at ", f), vw_put_escaped(f, vw_site_str(&a->site, buf, sizeof buf));
        }
        fputc('\n', f);
    }
}

static void json_intent(FILE *f, const struct vw_intent *in, const struct vw_operand *ops, int n) {
    char d1[32];
    fprintf(f, ", \"intent\": {\"by\": \"%s\", \"ambiguous\": %s, \"majority\": \"%s\", \"candidates\": [",
            vw_intent_by_name(in->by), in->ambiguous ? "true" : "false", vw_device_name(in->majority, d1, sizeof d1));
    for (int k = 0; k < in->n; k++) {
        const struct vw_operand *o = NULL;
        for (int i = 0; i < n && !o; i++)
            if (!ops[i].scalar && ops[i].dev == in->dev[k] && ops[i].nsteps) o = &ops[i];
        fprintf(f, "%s{\"device\": \"%s\", \"sent\": %lld, \"work\": %lld, \"operand\": ", k ? ", " : "",
                vw_device_name(in->dev[k], d1, sizeof d1), in->sent[k], in->work[k]);
        if (o) {
            vw_put_json_string(f, o->arg);
            fputs(", \"origin\": ", f);
            json_site(f, &o->chain[o->arrived]);
        } else
            fputs("null, \"origin\": null", f);
        fputs("}", f);
    }
    fputs("]}", f);
}

static int print_pystack(struct ctx *c, FILE *f, int64_t pystack, const char *indent);

/* "suggested change:" and the fix as a diff, in the text. */
static void print_fix_diff(struct ctx *c, FILE *f, const struct vw_fix *fix) {
    char *diff = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&diff, &size);
    if (!m) return;
    int ok = vw_fix_diff(&c->m, fix, m, put_source_line);
    fclose(m);
    if (ok) fprintf(f, "\n  suggested change:\n%s", diff);
    free(diff);
}

static void put_raw(FILE *f, const char *s) { fputs(s, f); }

/* "source": the snippets, "diff": the suggested change as one string (the source as it is), or null. */
static void json_source(struct ctx *c, FILE *f, const struct snippet *sn, int nsn, const struct vw_fix *fix) {
    fputs(",\n     \"source\": [", f);
    for (int i = 0, w = 0; i < nsn; i++) w += json_snippet(c, f, &sn[i], w ? ", " : "");
    fputs("], \"diff\": ", f);
    char *diff = NULL;
    size_t size = 0;
    FILE *m = fix ? open_memstream(&diff, &size) : NULL;
    int ok = m && vw_fix_diff(&c->m, fix, m, put_raw);
    if (m) fclose(m);
    if (ok)
        vw_put_json_string(f, diff);
    else
        fputs("null", f);
    free(diff);
}

/* The fix: its text, the rule that gave it, where, and the code, in JSON. */
static void json_fix(FILE *f, const struct vw_fix *fix) {
    if (!fix) {
        fputs("null", f);
        return;
    }
    fputs("{\"rule\": ", f);
    vw_put_json_string(f, fix->rule);
    fputs(", \"text\": ", f);
    vw_put_json_string(f, fix->text);
    fputs(", \"code\": ", f);
    if (fix->code[0])
        vw_put_json_string(f, fix->code);
    else
        fputs("null", f);
    fputs(", \"site\": ", f);
    json_site(f, fix->has_site ? &fix->site : NULL);
    fprintf(f, ", \"placement\": \"%s\", \"evidence\": [", fix->replace ? "in-call" : fix->before ? "before" : "after");
    for (int i = 0; i < fix->nevidence; i++) {
        fputs(i ? ", " : "", f);
        vw_put_json_string(f, fix->evidence[i]);
    }
    fputs("]}", f);
}

/* The fix's code, each line indented under the fix. */
static void put_code(FILE *f, const char *code) {
    for (const char *p = code; *p;) {
        size_t k = strcspn(p, "\n");
        char line[700];
        snprintf(line, sizeof line, "%.*s", (int)(k < sizeof line - 1 ? k : sizeof line - 1), p);
        fputs("     ", f), vw_put_escaped(f, line), fputc('\n', f);
        p += k + (p[k] == '\n');
    }
}

/* "fix: TEXT, after SITE" and the code under it. */
static void print_fix(FILE *f, const struct vw_fix *fix) {
    char buf[1200];
    fprintf(f, "%sfix:%s ", C(VW_GREEN), C(VW_RESET));
    vw_put_escaped(f, fix->text);
    if (fix->has_site)
        fputs(fix->replace  ? ", in the call at "
              : fix->before ? ", before "
                            : ", after ",
              f),
            vw_put_escaped(f, vw_site_str(&fix->site.site, buf, sizeof buf));
    fputc('\n', f);
    put_code(f, fix->code);
}

/* "rule ID: the evidence; ..." under the fix: why this fix, in facts. */
static void put_rule(FILE *f, const struct vw_fix *fix) {
    fputs("     rule ", f);
    vw_put_escaped(f, fix->rule);
    for (int i = 0; i < fix->nevidence; i++) fputs(i ? "; " : ": ", f), vw_put_escaped(f, fix->evidence[i]);
    fputc('\n', f);
}

/* The short report (--brief, and `devtrace run` at the end of a failed run): the headline, the odd operand
 * and where it was made, the fix and its code. */
static void print_brief(FILE *f, const struct vw_case *k, const struct vw_fix *fix) {
    char d1[32], buf[1200];
    fprintf(f, "%serror: device mismatch in ", C(VW_RED));
    vw_put_escaped(f, k->opname);
    fputs(C(VW_RESET), f);
    if (k->call.has_site) fprintf(f, " at "), vw_put_escaped(f, vw_site_str(&k->call.site, buf, sizeof buf));
    fputs("\n  ", f);
    vw_put_escaped(f, k->message);
    fputc('\n', f);
    const struct vw_operand *o = k->odd;
    if (o) {
        fputs("  the odd one out: '", f);
        vw_put_escaped(f, o->arg);
        fputc('\'', f);
        if (o->name[0])
            fputs(" \"", f), vw_put_escaped(f, o->name), fputc('"', f);
        else if (o->src_name[0])
            fputs(" \"", f), vw_put_escaped(f, o->src_name), fputc('"', f);
        fprintf(f, " on %s", vw_device_name(o->dev, d1, sizeof d1));
        const struct vw_step *origin = o->nsteps ? &o->chain[o->nsteps - 1] : NULL;
        if (origin && origin->has_site)
            fputs(", made at ", f), vw_put_escaped(f, vw_site_str(&origin->site, buf, sizeof buf));
        fputc('\n', f);
    }
    if (fix) print_fix(f, fix);
}

/* One mismatch: returns 0, or -1 on a read error. */
static int report_one(struct ctx *c, int64_t seq, int first, int other, const char *message, int64_t op, int64_t stack,
                      int64_t pystack, int index) {
    FILE *f = c->out;
    char d1[32], buf[1024], text[1024];
    struct vw_case k;
    if (vw_case_load(&c->m, &k, seq, first, other, message, op, stack, pystack) < 0) {
        vw_case_free(&k);
        return -1;
    }
    struct vw_fix fixbuf;
    const struct vw_fix *fix = vw_diagnose(&c->m, &k, &fixbuf) ? &fixbuf : NULL;
    const struct vw_operand *ops = k.ops, *odd = k.odd;
    int n = k.n;
    const char *name = k.opname;
    const struct vw_step *origin = odd && odd->nsteps ? &odd->chain[odd->nsteps - 1] : NULL;
    if (c->key) { /* ranks whose mismatches agree on these are reported once */
        fprintf(c->key, "%s\x1f%s\x1f%s:%d\x1f%s\x1f", name, message ? message : "", k.call.site.file,
                k.call.has_site ? k.call.site.line : 0, odd ? odd->arg : "");
        if (origin && origin->has_site) fprintf(c->key, "%s:%d", origin->site.file, origin->site.line);
        fputc('\n', c->key);
    }
    if (fix && fix->code[0]) {
        enum vw_lang lang = vw_code_lang(&c->m, &fix->site.site);
        c->patches++;
        c->compiled += lang == VW_LANG_C || lang == VW_LANG_CXX;
    }
    if (c->brief && !c->json) {
        print_brief(f, &k, fix);
        vw_case_free(&k);
        return 0;
    }

    if (c->json) {
        fprintf(f, "%s\n    {\"index\": %d, \"seq\": %lld, \"op\": ", index ? "," : "", index, (long long)seq);
        vw_put_json_string(f, name);
        fputs(", \"message\": ", f);
        vw_put_json_string(f, message);
        fputs(", \"site\": ", f);
        json_site(f, &k.call);
        print_stack(c, f, stack, seq);
        fputs(", \"python_stack\": ", f);
        print_pystack(c, f, pystack, "");
        fprintf(f, ", \"intended_device\": \"%s\", \"tie\": %s", vw_device_name(k.want, d1, sizeof d1),
                k.tie ? "true" : "false");
        json_intent(f, &k.in, ops, n);
        fputs(", \"operands\": [", f);
        for (int i = 0; i < n; i++) {
            const struct vw_operand *o = &ops[i];
            fprintf(f, "%s\n      {\"arg\": ", i ? "," : "");
            vw_put_json_string(f, o->arg);
            fprintf(f, ", \"tensor\": %lld, \"device\": \"%s\", \"name\": ", (long long)o->tensor,
                    vw_device_name(o->dev, d1, sizeof d1));
            vw_put_json_string(f, o->name);
            fprintf(f, ", \"dtype\": \"%s\", \"shape\": ", o->dtype);
            vw_put_json_string(f, o->shape);
            fprintf(f, ", \"odd\": %s, \"first\": %s, \"other\": %s, \"chain\": [", o->odd ? "true" : "false",
                    i == first ? "true" : "false", i == other ? "true" : "false");
            for (int s = o->nsteps - 1; s >= 0; s--) {
                fprintf(f, "%s{\"tensor\": %lld, \"device\": \"%s\", \"text\": ", s == o->nsteps - 1 ? "" : ", ",
                        (long long)o->chain[s].tensor, vw_device_name(o->chain[s].dev, d1, sizeof d1));
                vw_put_json_string(f, step_text(&o->chain[s], text, sizeof text));
                fputs(", \"site\": ", f);
                json_site(f, &o->chain[s]);
                fputs("}", f);
            }
            fputs("], \"reached_device_at\": ", f);
            json_site(f, o->nsteps ? &o->chain[o->arrived] : NULL);
            fputs(", \"not_recorded\": ", f);
            if (o->missing)
                fprintf(f, "%lld", (long long)o->missing);
            else
                fputs("null", f);
            fprintf(f, ", \"may_miss_links\": %s, \"pruned_in_span\": %s", o->gap ? "true" : "false",
                    o->pruned ? "true" : "false");
            fputs("}", f);
        }
        fputs("],\n     \"fix\": ", f);
        json_fix(f, fix);
        struct snippet sn[3];
        int nsn = c->no_source ? 0 : snippets_of(sn, &k.call, origin, fix ? &fix->site : NULL);
        json_source(c, f, sn, nsn, c->no_source ? NULL : fix);
        fputs("}", f);
        vw_case_free(&k);
        return 0;
    }

    fprintf(f, "%serror: device mismatch in ", C(VW_RED));
    vw_put_escaped(f, name);
    fputs(C(VW_RESET), f);
    if (k.call.has_site) fprintf(f, " at "), vw_put_escaped(f, vw_site_str(&k.call.site, buf, sizeof buf));
    fputs("\n  ", f);
    vw_put_escaped(f, message);
    fputc('\n', f);
    print_stack(c, f, stack, seq);
    if (pystack) {
        fputs("  Python stack:\n", f);
        print_pystack(c, f, pystack, "    ");
    }
    fputs("\n  arg         device   tensor\n", f);
    for (int i = 0; i < n; i++) {
        const struct vw_operand *o = &ops[i];
        fprintf(f, "%s  ", o->odd ? C(VW_RED) : "");
        vw_put_escaped_pad(f, o->arg, 11);
        fprintf(f, " %-8s t%-6lld ", vw_device_name(o->dev, d1, sizeof d1), (long long)o->tensor);
        if (o->name[0]) fputc('"', f), vw_put_escaped(f, o->name), fputs("\" ", f);
        vw_put_escaped(f, o->dtype);
        vw_put_escaped(f, o->shape);
        fprintf(f, "%s%s\n",
                o->odd      ? "   <- the odd one out"
                : o->scalar ? "   (cpu scalar: allowed)"
                            : "",
                o->odd ? C(VW_RESET) : "");
    }
    print_intent(f, &k.in, ops, n);
    if (k.tie)
        fprintf(f,
                "\n  (the operands are split evenly between two GPUs; %s, where the first operand is, is taken as "
                "intended: check both chains)\n",
                vw_device_name(k.want, d1, sizeof d1));
    for (int i = 0; i < n; i++) {
        const struct vw_operand *o = &ops[i];
        if (!o->odd) continue;
        fprintf(f, "\nwhy t%lld%s", (long long)o->tensor, o->name[0] ? " \"" : "");
        vw_put_escaped(f, o->name);
        fprintf(f, "%s is on %s:\n", o->name[0] ? "\"" : "", vw_device_name(o->dev, d1, sizeof d1));
        int step = 1;
        if (o->missing)
            fprintf(f, "  %d. t%lld: how it was made is not in the trace (made before tracing began%s)\n", step++,
                    (long long)o->missing, o->gap ? ", or among the dropped events" : "");
        for (int s = o->nsteps - 1; s >= 0; s--, step++) {
            fprintf(f, "  %d. ", step);
            vw_put_escaped(f, step_text(&o->chain[s], text, sizeof text));
            print_site(f, &o->chain[s]);
            fputc('\n', f);
        }
        fprintf(f, "  %d. passed to ", step);
        vw_put_escaped(f, name);
        fputs(" as '", f);
        vw_put_escaped(f, o->arg);
        fputc('\'', f);
        if (k.call.has_site) fputs("  ", f), vw_put_escaped(f, vw_site_str(&k.call.site, buf, sizeof buf));
        fputc('\n', f);
        int moved = 0;
        for (int s = 0; s < o->nsteps; s++)
            moved |= o->chain[s].origin == DTP_ORIGIN_TRANSFER || o->chain[s].origin == -1;
        if (!moved && !o->missing) fprintf(f, "     never moved to another device\n");
        if (o->gap) {
            const struct vw_health *h = &c->m.health;
            char span[72];
            fprintf(f, "     %s%lld event%s dropped%s", C(VW_YELLOW), (long long)h->dropped,
                    h->dropped == 1 ? " was" : "s were", vw_health_span(h, 0, span, sizeof span));
            fprintf(f, ", within this chain's span (#%lld to #%lld): a link of it may be missing%s\n",
                    (long long)(o->nsteps ? o->chain[o->nsteps - 1].seq : 0), (long long)seq, C(VW_RESET));
        }
        if (c->m.health.pruned > 0) { /* a bounded trace: its span lost nothing, or only other tensors' events */
            const struct vw_health *h = &c->m.health;
            if (o->pruned)
                fprintf(f,
                        "     events of freed tensors%s were pruned within this chain's span (#%lld to #%lld); none "
                        "of its links\n",
                        h->first_pruned > 0 ? "" : " (where: not recorded)", (long long)o->span_lo, (long long)seq);
            else
                fprintf(f, "     this chain's span (#%lld to #%lld) lost nothing to pruning\n", (long long)o->span_lo,
                        (long long)seq);
        }
    }
    for (int i = 0; i < n; i++) {
        const struct vw_operand *p = &ops[i];
        if (p->odd || p->scalar || !p->nsteps) continue;
        const struct vw_step *a = &p->chain[p->arrived];
        /* peers that reached the device the same way at the same line (a module's parameters): one block */
        int more = 0, seen = 0;
        for (int j = 0; j < n; j++) {
            const struct vw_operand *q = &ops[j];
            if (j == i || q->odd || q->scalar || !q->nsteps || q->dev != p->dev) continue;
            const struct vw_step *qa = &q->chain[q->arrived];
            if (qa->origin != a->origin || !vw_same_site(qa, a)) continue;
            if (j < i) seen = 1;
            more++;
        }
        if (seen) continue;
        fprintf(f, "\nits peer t%lld%s", (long long)p->tensor, p->name[0] ? " \"" : "");
        vw_put_escaped(f, p->name);
        fputs(p->name[0] ? "\"" : "", f);
        if (more) fprintf(f, " and %d more", more);
        fprintf(f, " reached %s here:\n  ", vw_device_name(p->dev, d1, sizeof d1));
        vw_put_escaped(f, step_text(a, text, sizeof text));
        print_site(f, a);
        fputc('\n', f);
    }
    if (fix) {
        fputc('\n', f);
        print_fix(f, fix);
        put_rule(f, fix);
    } else if (odd)
        fputs("\nno rule explains this mismatch: the chains above are what the trace holds\n", f);
    if (!c->no_source) {
        struct snippet sn[3];
        int nsn = snippets_of(sn, &k.call, origin, fix ? &fix->site : NULL);
        for (int i = 0; i < nsn; i++) print_snippet(c, f, &sn[i]);
        if (fix) print_fix_diff(c, f, fix);
    }
    vw_case_free(&k);
    return 0;
}

/* ---------------------------------------------------------------- exceptions */

static int print_pystack(struct ctx *c, FILE *f, int64_t pystack, const char *indent) {
    struct vw_frame fr;
    int n = 0, hidden = 0;
    if (c->json) fputs("[", f);
    for (int64_t id = pystack, k = 0; id && k < 256 && py_frame_at(c, id, &fr, &id); k++) {
        if (vw_py_file_is_adapter(fr.file)) continue; /* the adapter's own frames: never the program's */
        if (fr.hidden && !c->all_frames && !c->json) {
            hidden++;
            continue;
        }
        if (c->json) {
            fprintf(f, "%s{\"file\": ", n ? ", " : "");
            vw_put_json_string(f, fr.file);
            fprintf(f, ", \"line\": %d, \"function\": ", fr.line);
            vw_put_json_string(f, fr.function);
            fprintf(f, ", \"hidden\": %s}", fr.hidden ? "true" : "false");
        } else {
            fprintf(f, "%s#%-2d ", indent, n);
            vw_put_escaped(f, fr.file);
            fprintf(f, ":%d (", fr.line);
            vw_put_escaped(f, fr.function);
            fputs(")\n", f);
        }
        n++;
    }
    if (c->json)
        fputs("]", f);
    else if (hidden)
        fprintf(f, "%s(%d frame%s of torch, other packages and Python's library hidden; --all-frames shows them)\n",
                indent, hidden, hidden == 1 ? "" : "s");
    return n;
}

/* The innermost Python frame of a stack as "file:line (function)". */
static int py_site(struct ctx *c, int64_t pystack, char *buf, size_t size) {
    struct vw_frame f;
    if (!py_frame_at(c, pystack, &f, NULL)) return 0;
    vw_site_str(&f, buf, size);
    return 1;
}

/* CUDA copies and allocations before an error, by call site (the Python
 * line when there is one, else the program's innermost native frame). */
static void cuda_before(struct ctx *c, FILE *f, int64_t seq) {
    sqlite3_stmt *st = vw_prep(
        c->t, "SELECT c.kind, c.dir, count(*), COALESCE(sum(c.bytes), 0), min(c.seq), COALESCE(c.pystack, 0), "
              "COALESCE(c.stack, 0), a.text, sum(c.host = 0), sum(c.rc <> 0) FROM cuda_calls c LEFT JOIN strings a "
              "ON a.id = c.api WHERE c.seq < ? AND c.kind IN (" DT_SQL_CUDA_MEMCPY ", " DT_SQL_CUDA_MALLOC
              ") GROUP BY c.kind, c.dir, c.api, c.pystack, c.stack ORDER BY count(*) DESC, min(c.seq) LIMIT 12");
    if (!st) return;
    sqlite3_bind_int64(st, 1, seq);
    static const char *dirs[] = {"HtoH", "HtoD", "DtoH", "DtoD"};
    int n = 0;
    if (c->json) fputs(", \"cuda_calls_before\": [", f);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int kind = sqlite3_column_int(st, 0),
            dir = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 1);
        const char *what = kind == 2 ? "alloc" : dir >= 0 && dir <= 3 ? dirs[dir] : "copy";
        const char *api = sqlite3_column_text(st, 7) ? (const char *)sqlite3_column_text(st, 7) : "?";
        char site[1200] = "";
        struct vw_frame fr;
        int64_t py = sqlite3_column_int64(st, 5), stack = sqlite3_column_int64(st, 6);
        if (!(py && py_site(c, py, site, sizeof site)) && stack &&
            site_of(c, stack, 0, sqlite3_column_int64(st, 4), &fr))
            vw_site_str(&fr, site, sizeof site);
        long long count = sqlite3_column_int64(st, 2), bytes = sqlite3_column_int64(st, 3);
        long long pageable = sqlite3_column_int64(st, 8), failed = sqlite3_column_int64(st, 9);
        if (c->json) {
            fprintf(f, "%s{\"api\": ", n ? ", " : "");
            vw_put_json_string(f, api);
            fprintf(f,
                    ", \"what\": \"%s\", \"count\": %lld, \"bytes\": %lld, \"pageable\": %lld, \"failed\": %lld, "
                    "\"site\": ",
                    what, count, bytes, pageable, failed);
            if (site[0])
                vw_put_json_string(f, site);
            else
                fputs("null", f);
            fputs("}", f);
        } else {
            if (!n) fputs("\n  CUDA copies and allocations before it, by call site:\n", f);
            fprintf(f, "    %-5s %6lld x %12lld bytes  ", what, count, bytes);
            vw_put_escaped_pad(f, api, 22);
            vw_put_escaped(f, site[0] ? site : "(unknown site)");
            if (pageable) fprintf(f, "  [%lld from pageable memory]", pageable);
            if (failed) fprintf(f, "  [%lld failed]", failed);
            fputc('\n', f);
        }
        n++;
    }
    if (c->json) fputs("]", f);
    sqlite3_finalize(st);
}

/* SQL: every recorded C++ exception once. A rethrow's row (misc_events
 * value 1) belongs to the latest throw of the same object before it (an
 * object's address is reused only after its exception is freed); a row
 * with no such throw is an exception of its own. h: (seq, pystack, head),
 * head being the seq of the exception's first row. */
#define EXCEPTIONS_SQL                                                                                                 \
    "WITH x AS (SELECT r.seq, r.object, COALESCE(m.value, 0) AS re, m.pystack FROM errors r JOIN misc_events m ON "    \
    "m.seq = r.seq WHERE r.exception IS NOT NULL), h AS (SELECT x.seq, x.pystack, CASE WHEN x.re = 0 OR x.object IS "  \
    "NULL THEN x.seq ELSE COALESCE((SELECT max(y.seq) FROM x y WHERE y.object = x.object AND y.re = 0 AND y.seq < "    \
    "x.seq), x.seq) END AS head FROM x) "

/* Where a thrown mismatch's missing move goes: returns 1 when the operand
 * to move is the one on device a (to b), 0 when it is the one on b (to a).
 * A program that put anything on an accelerator meant it to go there: the
 * operand on the cpu is the one to move, unless the program's own recorded
 * moves between the two went the other way (more of them to the cpu than
 * from it). Two accelerators: the message's order (a is the odd one when
 * the message says which). */
static int move_a(struct ctx *c, const char *a, const char *b) {
    int a_cpu = !strcmp(a, "cpu"), b_cpu = !strcmp(b, "cpu");
    if (a_cpu == b_cpu) return 1;
    const char *acc = a_cpu ? b : a;
    long long to_cpu = 0, from_cpu = 0;
    sqlite3_stmt *st = vw_prep(c->t, "SELECT src_device, dst_device, count(*) FROM transfers WHERE (src_device = 0) "
                                     "<> (COALESCE(dst_device, 0) = 0) GROUP BY 1, 2");
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        char d1[32], d2[32];
        vw_device_name(sqlite3_column_int64(st, 0), d1, sizeof d1);
        vw_device_name(sqlite3_column_int64(st, 1), d2, sizeof d2);
        /* "cuda" in a message matches cuda:N */
        size_t n = strlen(acc);
        if (!strcmp(d2, "cpu") && !strncmp(d1, acc, n) && (!d1[n] || d1[n] == ':'))
            to_cpu += sqlite3_column_int64(st, 2);
        if (!strcmp(d1, "cpu") && !strncmp(d2, acc, n) && (!d2[n] || d2[n] == ':'))
            from_cpu += sqlite3_column_int64(st, 2);
    }
    if (st) sqlite3_finalize(st);
    int move_cpu = to_cpu <= from_cpu;
    return move_cpu ? a_cpu : !a_cpu;
}

/* Device-mismatch exceptions thrown by a program not built on the runtime
 * (PyTorch's c10::Error, for one): each exception once, its rethrows
 * folded in. Its message, devices, site (the Python line, else the first
 * frame of the user's own code), the Python stack (from whichever record
 * held the GIL), the native stack where it was first thrown, the CUDA
 * copies and allocations before it, and the fix. An exception thrown
 * inside an op whose device mismatch a producer already recorded (the
 * libtorch observer fires it before the op throws), or whose message a
 * mismatch recorded after it carries (the PyTorch adapter records the error
 * PyTorch raised, with its operands), is that mismatch, reported with its
 * operands: it is not repeated. Nor is one that names the devices of a
 * mismatch recorded on its thread with no op since: that error caught and
 * thrown again with more words around it (the TorchScript interpreter's
 * "The following operation failed in the TorchScript interpreter.", a
 * program's own catch and throw); nor, where no op was recorded (no
 * observer), one whose message holds, past its start, the first line of a
 * mismatch thrown before it on its thread (the same error again is not
 * folded: its text starts with that line). Returns how many. */
static int report_exceptions(struct ctx *c, int found) {
    FILE *f = c->out;
    sqlite3_stmt *st = vw_prep(
        c->t, EXCEPTIONS_SQL
        ", g AS (SELECT head AS seq, count(*) AS n FROM h GROUP BY head) SELECT g.seq, r.exception, r.message, "
        "r.device_a, r.device_b, r.arg, g.n, e.stack, (SELECT h2.pystack FROM h h2 WHERE h2.head = g.seq AND "
        "h2.pystack IS NOT NULL ORDER BY h2.seq LIMIT 1) FROM g JOIN errors r ON r.seq = g.seq LEFT JOIN misc_events e "
        "ON e.seq = g.seq WHERE r.device_a IS NOT NULL AND r.first_arg IS NULL AND NOT EXISTS(SELECT 1 FROM errors q "
        "JOIN misc_events qe ON qe.seq = q.seq JOIN ops o ON o.op = qe.op WHERE q.first_arg IS NOT NULL AND qe.thread "
        "= e.thread AND q.seq < g.seq AND COALESCE(o.seq + o.len, (SELECT m.seq FROM misc_events m WHERE m.op = o.op "
        "AND m.kind = " DT_SQL_EV_OP_END "), g.seq + 1) > g.seq) AND substr(r.message, 1, instr(r.message || "
        "char(10), char(10)) - 1) NOT "
        "IN (SELECT substr(message, 1, instr(message || char(10), char(10)) - 1) FROM errors WHERE first_arg IS NOT "
        "NULL AND message IS NOT NULL) AND NOT EXISTS(SELECT 1 FROM errors q JOIN misc_events qe ON qe.seq = q.seq "
        "WHERE q.first_arg IS NOT NULL AND q.message IS NOT NULL AND qe.thread = e.thread AND q.seq < g.seq AND "
        "instr(q.message, r.device_a) > 0 AND instr(q.message, r.device_b) > 0 AND NOT EXISTS(SELECT 1 FROM ops o "
        "WHERE o.thread = e.thread AND o.seq > "
        "q.seq AND o.seq < g.seq)) AND NOT EXISTS(SELECT 1 FROM errors p JOIN misc_events pe ON pe.seq = p.seq WHERE "
        "p.exception IS NOT NULL AND p.device_a IS NOT NULL AND pe.thread = e.thread AND p.seq < g.seq AND "
        "instr(r.message, substr(p.message, 1, instr(p.message || char(10), char(10)) - 1)) > 1 AND NOT EXISTS("
        "SELECT 1 FROM ops o WHERE o.thread = e.thread AND o.seq > p.seq AND o.seq < g.seq)) ORDER BY g.seq");
    if (!st) return -1;
    int n = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 0), stack = sqlite3_column_int64(st, 7),
                pystack = sqlite3_column_int64(st, 8);
        const char *type = sqlite3_column_text(st, 1) ? (const char *)sqlite3_column_text(st, 1) : "?";
        const char *msg = sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "";
        const char *a = (const char *)sqlite3_column_text(st, 3);
        const char *b = sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "?";
        const char *arg = (const char *)sqlite3_column_text(st, 5);
        size_t first_line = strcspn(msg, "\n");
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)(first_line < sizeof line - 1 ? first_line : sizeof line - 1), msg);
        struct vw_step site = {.stack = stack, .seq = seq};
        site.has_site = site_of(c, stack, pystack, seq, &site.site);
        char where[1200] = "";
        if (site.has_site) vw_site_str(&site.site, where, sizeof where);
        int odd_a = move_a(c, a, b);
        const char *from = odd_a ? a : b, *to = odd_a ? b : a;
        char fixtext[1024];
        snprintf(fixtext, sizeof fixtext,
                 "move the operand on %s to %s before this call, or where that operand was made", from, to);
        if (c->json) {
            fprintf(f, "%s\n    {\"kind\": \"exception\", \"seq\": %lld, \"exception\": ", found + n ? "," : "",
                    (long long)seq);
            vw_put_json_string(f, type);
            fputs(", \"message\": ", f);
            vw_put_json_string(f, line);
            fputs(", \"devices\": [", f);
            vw_put_json_string(f, a);
            fputs(", ", f);
            vw_put_json_string(f, b);
            fputs("], \"argument\": ", f);
            if (arg)
                vw_put_json_string(f, arg);
            else
                fputs("null", f);
            fputs(", \"site\": ", f);
            json_site(f, &site);
            fprintf(f, ", \"throws\": %lld, \"python_stack\": ", (long long)sqlite3_column_int64(st, 6));
            print_pystack(c, f, pystack, "");
            print_stack(c, f, stack, seq);
            cuda_before(c, f, seq);
            fputs(", \"fix\": {\"text\": ", f);
            vw_put_json_string(f, fixtext);
            fputs(", \"site\": ", f);
            json_site(f, &site);
            fputs("}}", f);
        } else {
            if (found + n) fputc('\n', f);
            fprintf(f, "%serror: device mismatch (", C(VW_RED));
            vw_put_escaped(f, type);
            fprintf(f, " thrown)%s", C(VW_RESET));
            if (where[0]) fputs(" at ", f), vw_put_escaped(f, where);
            fputs("\n  ", f);
            vw_put_escaped(f, line);
            fputs("\n\n  devices: ", f);
            vw_put_escaped(f, a);
            fputs(arg ? " (argument '" : "", f);
            if (arg) vw_put_escaped(f, arg), fputs("')", f);
            fputs(" and ", f);
            vw_put_escaped(f, b);
            fputc('\n', f);
            if (pystack) {
                fputs("  Python stack:\n", f);
                print_pystack(c, f, pystack, "    ");
            } else {
                fputs("  Python stack: none recorded (not a Python program, or the GIL was not held)\n", f);
            }
            print_stack(c, f, stack, seq);
            cuda_before(c, f, seq);
            fprintf(f, "\n%sfix:%s ", C(VW_GREEN), C(VW_RESET));
            vw_put_escaped(f, fixtext);
            if (where[0]) fputs(", at ", f), vw_put_escaped(f, where);
            fputc('\n', f);
        }
        n++;
    }
    if (st) sqlite3_finalize(st);
    return n;
}

/* The busiest call sites of a query's rows (stack, pystack, count, bytes,
 * first seq), under a text heading or as a JSON array named key. */
static void busiest_sites(struct ctx *c, const char *sql, const char *key, const char *heading) {
    FILE *f = c->out;
    char buf[1200];
    sqlite3_stmt *st = vw_prep(c->t, sql);
    if (c->json) fprintf(f, ", \"%s\": [", key);
    for (int i = 0; st && sqlite3_step(st) == SQLITE_ROW; i++) {
        struct vw_step s = {.stack = sqlite3_column_int64(st, 0)};
        s.has_site = site_of(c, s.stack, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 4), &s.site);
        if (c->json) {
            fprintf(f, "%s{\"count\": %lld, \"bytes\": %lld, \"site\": ", i ? ", " : "",
                    (long long)sqlite3_column_int64(st, 2), (long long)sqlite3_column_int64(st, 3));
            json_site(f, &s);
            fputs("}", f);
        } else {
            if (!i) fprintf(f, "%s\n", heading);
            fprintf(f, "  %6lld x  %10lld bytes  ", (long long)sqlite3_column_int64(st, 2),
                    (long long)sqlite3_column_int64(st, 3));
            vw_put_escaped(f, s.has_site ? vw_site_str(&s.site, buf, sizeof buf) : "(unknown site)");
            fputc('\n', f);
        }
    }
    if (st) sqlite3_finalize(st);
    if (c->json) fputs("]", f);
}

/* With no mismatch: what the trace holds. Runtime tensors per device and
 * transfers; for any program on libcudart, its CUDA runtime calls; and the
 * C++ exceptions thrown (none of them a device mismatch). */
static void summary(struct ctx *c) {
    FILE *f = c->out;
    char d[32];
    sqlite3_stmt *st =
        vw_prep(c->t, "SELECT a.device, sum(g.n), sum(g.n * a.nbytes) FROM (SELECT attrs, count(*) AS n FROM "
                      "tensor_rows GROUP BY attrs) g JOIN tensor_attrs a ON a.id = g.attrs GROUP BY a.device "
                      "ORDER BY a.device");
    if (c->json)
        fputs(", \"summary\": {\"tensors_per_device\": [", f);
    else
        fputc('\n', f);
    int devices = 0;
    for (; st && sqlite3_step(st) == SQLITE_ROW; devices++) {
        vw_device_name(sqlite3_column_int64(st, 0), d, sizeof d);
        if (c->json)
            fprintf(f, "%s{\"device\": \"%s\", \"tensors\": %lld, \"bytes\": %lld}", devices ? ", " : "", d,
                    (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2));
        else
            fprintf(f, "%s  %-8s %lld tensors, %lld bytes made\n", devices ? "" : "tensors per device:\n", d,
                    (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2));
    }
    if (st) sqlite3_finalize(st);
    /* everything on the cpu, of a runtime devtrace can give simulated GPUs: a
     * placement bug cannot show there (a GPU-less machine runs the program's
     * `"cuda" if available else "cpu"` branch) */
    char runtime[32];
    vw_meta(c->t, "runtime", runtime, sizeof runtime);
    int cpu_only = devices == 1 && (!strcmp(runtime, "pytorch") || !strcmp(runtime, "libdtrt")) && !strcmp(d, "cpu");
    sqlite3_stmt *gpu = cpu_only ? vw_prep(c->t, "SELECT EXISTS(SELECT 1 FROM devices WHERE device <> 0)") : NULL;
    if (gpu && sqlite3_step(gpu) == SQLITE_ROW && sqlite3_column_int(gpu, 0)) cpu_only = 0;
    if (gpu) sqlite3_finalize(gpu);
    if (cpu_only && !c->json)
        fputs("only the cpu was used, and a device mismatch needs two devices; where there is no GPU, "
              "DEVTRACE_SIM_CUDA=1 devtrace run ... gives the program a simulated one\n",
              f);
    if (!devices && !c->json)
        fputs("no tensors recorded (the program runs on no tensor library devtrace observes: libdtrt, libtorch "
              "with its observer, PyTorch)\n",
              f);
    st = vw_prep(c->t, "SELECT (SELECT count(*) FROM transfers), (SELECT COALESCE(sum(bytes), 0) FROM transfers), "
                       "(SELECT count(*) FROM ops)");
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        if (c->json)
            fprintf(f, "], \"cpu_only\": %s, \"transfers\": %lld, \"bytes_moved\": %lld, \"ops\": %lld",
                    cpu_only ? "true" : "false", (long long)sqlite3_column_int64(st, 0),
                    (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2));
        else if (devices)
            fprintf(f, "ops: %lld; transfers: %lld, %lld bytes moved\n", (long long)sqlite3_column_int64(st, 2),
                    (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
    }
    if (st) sqlite3_finalize(st);
    busiest_sites(c,
                  "SELECT COALESCE(e.stack, 0), COALESCE(e.pystack, 0), count(*) AS n, sum(x.bytes), min(x.seq) FROM "
                  "transfers x JOIN misc_events e ON e.seq = x.seq GROUP BY 1, 2 ORDER BY n DESC LIMIT 5",
                  "busiest_transfer_sites", "busiest transfer sites:");
#define COPY_ "kind = " DT_SQL_CUDA_MEMCPY
#define ALLOC_ "kind = " DT_SQL_CUDA_MALLOC
    st = vw_prep(c->t, "SELECT count(*), COALESCE(sum(" COPY_ "), 0), COALESCE(sum(CASE WHEN " COPY_
                       " THEN bytes END), 0), COALESCE(sum(" COPY_ " AND dir = " DT_SQL_CUDA_DIR_HTOD
                       "), 0), COALESCE(sum(" COPY_ " AND dir = " DT_SQL_CUDA_DIR_DTOH "), 0), COALESCE(sum(" COPY_
                       " AND dir = " DT_SQL_CUDA_DIR_DTOD "), 0), COALESCE(sum(" ALLOC_
                       "), 0), COALESCE(sum(CASE WHEN " ALLOC_ " THEN bytes END), 0), COALESCE(sum(kind = "
                       DT_SQL_CUDA_LAUNCH "), 0), COALESCE(sum(kind = " DT_SQL_CUDA_SYNC
                       "), 0), COALESCE(sum(rc <> 0), 0) FROM cuda_calls");
#undef COPY_
#undef ALLOC_
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        long long v[11];
        for (int i = 0; i < 11; i++) v[i] = sqlite3_column_int64(st, i);
        /* launches forwarded without a record (the default; DEVTRACE_CUDA_ACTIVITY=1 records them) */
        char buf[32];
        const char *m = vw_meta(c->t, "cuda_launches_counted", buf, sizeof buf);
        long long counted = m ? strtoll(m, NULL, 10) : 0;
        if (c->json)
            fprintf(f,
                    ", \"cuda_calls\": {\"calls\": %lld, \"copies\": %lld, \"copy_bytes\": %lld, \"htod\": %lld, "
                    "\"dtoh\": %lld, \"dtod\": %lld, \"allocations\": %lld, \"allocated_bytes\": %lld, "
                    "\"launches\": %lld, \"launches_counted\": %lld, \"synchronizations\": %lld, \"failed\": %lld}",
                    v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], counted, v[9], v[10]);
        else if (v[0] || counted) {
            char launches[96];
            if (counted && !v[8])
                snprintf(launches, sizeof launches, "%lld kernel launches counted, not recorded", counted);
            else
                snprintf(launches, sizeof launches, "%lld kernel launches", v[8] + counted);
            fprintf(f,
                    "CUDA runtime calls: %lld: %lld copies (%lld bytes; %lld HtoD, %lld DtoH, %lld DtoD), %lld "
                    "allocations (%lld bytes), %s, %lld synchronizations",
                    v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], launches, v[9]);
            if (v[10]) fprintf(f, "; %lld failed", v[10]);
            fputc('\n', f);
        }
    }
    if (st) sqlite3_finalize(st);
    busiest_sites(c,
                  "SELECT COALESCE(stack, 0), COALESCE(pystack, 0), count(*) AS n, COALESCE(sum(bytes), 0), "
                  "min(seq) FROM cuda_calls WHERE kind = " DT_SQL_CUDA_MEMCPY
                  " GROUP BY 1, 2 ORDER BY n DESC, 5 LIMIT 5",
                  "busiest_cuda_copy_sites", "busiest CUDA copy sites (devtrace transfers shows them all):");
    st = vw_prep(c->t, EXCEPTIONS_SQL "SELECT count(DISTINCT h.head), count(DISTINCT r.exception) FROM h JOIN errors "
                                      "r ON r.seq = h.seq");
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        long long n = sqlite3_column_int64(st, 0);
        if (c->json)
            fprintf(f, ", \"cxx_exceptions\": %lld", n);
        else if (n)
            fprintf(f, "C++ exceptions thrown: %lld (%lld type%s), none a device mismatch\n", n,
                    (long long)sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 1) == 1 ? "" : "s");
    }
    if (st) sqlite3_finalize(st);
    if (c->json) fputs("}", f);
}

/* How the process ended: its exit status into status ("" when unknown),
 * and *sig the signal that killed it (0 when none). A process killed by a
 * signal has no exit status of its own: it is 128 + the signal, as a shell
 * and `devtrace run` give it. The signal is the one `devtrace run` saw, or
 * the fatal one the tracer caught (a trace not written under `run`). */
static void ending(struct vw_trace *t, char *status, size_t size, int *sig) {
    char buf[32];
    *sig = atoi(vw_meta(t, "killed_by_signal", buf, sizeof buf));
    if (!*sig) *sig = atoi(vw_meta(t, "fatal_signal", buf, sizeof buf));
    vw_meta(t, "exit_status", status, size);
    if (!status[0] && *sig) snprintf(status, size, "%d", 128 + *sig);
}

/* A duration in ns as text: "0.42 ms", "3.1 s". */
static const char *duration(long long ns, char *buf, size_t size) {
    if (ns < 0) ns = 0;
    if (ns < 1000000000LL)
        snprintf(buf, size, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.1f s", ns / 1e9);
    return buf;
}

/* How the program ended, after its first device mismatch (the event at
 * mismatch_t, ns): its exit status or the fatal signal with the signal's
 * site, whether the error ended it uncaught (nothing ran after the last
 * error a nonzero status followed; for SIGABRT, the C++ exception thrown
 * last before it), and how long after the mismatch. The first lines of the
 * text report, or the JSON object "ending". */
static void print_ending(struct ctx *c, const char *meta_status, int sig, int64_t mismatch_t) {
    FILE *f = c->out;
    /* the status is the trace's text: only a number is shown as one (a damaged or hostile trace's is not) */
    char status[24] = "";
    char *endp = NULL;
    long long sv = meta_status[0] ? strtoll(meta_status, &endp, 10) : 0;
    if (endp && endp != meta_status && !*endp) snprintf(status, sizeof status, "%lld", sv);
    char buf[1200], d[32], v[64];
    struct vw_step site = {0};
    int64_t end_t = -1;
    sqlite3_stmt *st;
    if (sig && (st = vw_prep(c->t, "SELECT seq, t, COALESCE(stack, 0), COALESCE(pystack, 0) FROM misc_events WHERE "
                                   "kind = " DT_SQL_EV_SIGNAL " ORDER BY seq LIMIT 1"))) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            site.seq = sqlite3_column_int64(st, 0);
            end_t = sqlite3_column_int64(st, 1);
            site.stack = sqlite3_column_int64(st, 2);
            site.has_site = site_of(c, site.stack, sqlite3_column_int64(st, 3), site.seq, &site.site);
        }
        sqlite3_finalize(st);
    }
    if (end_t < 0 && vw_meta(c->t, "end_t", v, sizeof v)[0]) end_t = atoll(v); /* exit(), or main's return */
    if (end_t < 0) { /* a trace of an older tracer: the wall clock's start and end */
        long long start = atoll(vw_meta(c->t, "start_time_ns", v, sizeof v)),
                  end = atoll(vw_meta(c->t, "end_time_ns", v, sizeof v));
        if (start && end >= start) end_t = end - start;
    }
    int cut = end_t < 0; /* no end recorded: killed outright (SIGKILL), or still running */
    /* the last event, for a trace cut short, and because the start and end times are the wall clock's while
     * events are stamped by the trace's own */
    if (!site.seq &&
        (st = vw_prep(c->t, "SELECT max(t) FROM (SELECT * FROM (SELECT t FROM misc_events ORDER BY seq DESC LIMIT 1) "
                            "UNION ALL SELECT * FROM (SELECT t FROM ops ORDER BY op DESC LIMIT 1) UNION ALL SELECT * "
                            "FROM (SELECT t FROM tensor_rows ORDER BY seq DESC LIMIT 1))"))) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
            sqlite3_column_int64(st, 0) > end_t)
            end_t = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    /* uncaught: with a signal, the last C++ throw before it (std::terminate aborts); else no op after the
     * last error (the runtime's, a mismatch, a C++ throw a Python program turned into its exception), and a
     * nonzero status */
    char uncaught[512] = "";
    if (sig == SIGABRT && site.seq &&
        (st = vw_prep(c->t, "SELECT exception, COALESCE(message, '') FROM errors WHERE exception IS NOT NULL AND "
                            "seq < ?1 ORDER BY seq DESC LIMIT 1"))) {
        sqlite3_bind_int64(st, 1, site.seq);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(uncaught, sizeof uncaught, "an uncaught C++ exception (%s)",
                     (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    } else if (!sig && status[0] && atoi(status) != 0 &&
               (st = vw_prep(c->t,
                             "SELECT (SELECT count(*) FROM ops WHERE op > (SELECT max(seq) FROM errors WHERE "
                             "first_arg IS NOT NULL OR device_a IS NOT NULL)), r.seq, COALESCE(r.message, ''), "
                             "COALESCE(r.exception, ''), (SELECT count(*) FROM ops WHERE op > r.seq) FROM errors r "
                             "WHERE r.signal IS NULL ORDER BY r.seq DESC LIMIT 1"))) {
        /* nothing ran after the last mismatch: its error ended the program; else the last error, when nothing
         * ran after it */
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *m = (const char *)sqlite3_column_text(st, 2), *type = (const char *)sqlite3_column_text(st, 3);
            size_t len = strcspn(m, "\n");
            if (sqlite3_column_type(st, 0) != SQLITE_NULL && sqlite3_column_int64(st, 0) == 0)
                snprintf(uncaught, sizeof uncaught, "the mismatch's own error, not caught");
            else if (sqlite3_column_int64(st, 4) == 0)
                snprintf(uncaught, sizeof uncaught, "an error not caught (%s%s\"%.*s%s\")", type, type[0] ? ": " : "",
                         (int)(len < 120 ? len : 120), m, len > 120 ? "..." : "");
        }
        sqlite3_finalize(st);
    }
    const char *signame = sig ? sigabbrev_np(sig) : NULL;
    if (c->json) {
        fprintf(f, ", \"ending\": {\"exit_status\": %s, \"signal\": ", status[0] ? status : "null");
        if (sig)
            fprintf(f, "\"SIG%s\"", signame ? signame : "?");
        else
            fputs("null", f);
        fputs(", \"signal_site\": ", f);
        json_site(f, site.has_site ? &site : NULL);
        fputs(", \"ended_by\": ", f);
        if (uncaught[0])
            vw_put_json_string(f, uncaught);
        else
            fputs("null", f);
        fprintf(f, ", \"trace_cut_short\": %s, \"ns_after_mismatch\": ", cut ? "true" : "false");
        if (end_t >= 0 && mismatch_t >= 0)
            fprintf(f, "%lld", (long long)(end_t - mismatch_t));
        else
            fputs("null", f);
        fputs("}", f);
        return;
    }
    if (sig) {
        fprintf(f, "the program was killed by SIG%s (signal %d, exit status %s)", signame ? signame : "?", sig,
                status[0] ? status : "?");
        if (site.has_site) fputs(" at ", f), vw_put_escaped(f, vw_site_str(&site.site, buf, sizeof buf));
    } else if (status[0])
        fprintf(f, "the program exited with status %s", status);
    else if (vw_meta(c->t, "stopped_in_process", buf, sizeof buf)[0] == '1')
        fputs("the trace was stopped by the program itself (devtrace.stop(), the end of a devtrace.trace() block)", f);
    else
        fputs("how the program ended is not in the trace (killed by SIGKILL, or cut short)", f);
    if (end_t >= 0 && mismatch_t >= 0)
        fprintf(f, ", %s%s after the device mismatch", cut ? "its last event " : "",
                duration(end_t - mismatch_t, d, sizeof d));
    if (uncaught[0]) fputs(": ", f), vw_put_escaped(f, uncaught);
    fputs("\n\n", f);
}

/* The traces of the processes this one forked: each process writes its
 * own file (NAME.HOST.PID.db beside the parent's with -o, or
 * devtrace.PROG.PID.db in the directory it ran in), which names its parent
 * in its meta (ppid, host). Looked for beside this trace; listed in text
 * (so the reader knows the rest of the story is there) or as JSON
 * "children". */
static void print_children(struct ctx *c) {
    FILE *f = c->out;
    char pid[32], host[256], dirpath[4096], path[4352];
    vw_meta(c->t, "pid", pid, sizeof pid);
    vw_meta(c->t, "host", host, sizeof host);
    const char *slash = strrchr(c->t->path, '/');
    if (slash)
        snprintf(dirpath, sizeof dirpath, "%.*s", (int)(slash - c->t->path) ? (int)(slash - c->t->path) : 1,
                 c->t->path);
    else
        snprintf(dirpath, sizeof dirpath, ".");
    const char *self = slash ? slash + 1 : c->t->path;
    int n = 0;
    if (c->json) fputs(", \"children\": [", f);
    DIR *d = pid[0] ? opendir(dirpath) : NULL;
    struct dirent *e;
    for (int seen = 0; d && (e = readdir(d)) && seen < 4096; seen++) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".db") || !strcmp(e->d_name, self)) continue;
        snprintf(path, sizeof path, "%s%s%s", slash ? dirpath : "", slash && strcmp(dirpath, "/") ? "/" : "",
                 e->d_name);
        struct vw_trace peek;
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int child = 0;
        char cpid[32] = "";
        if (vw_trace_peek(path, &peek) == 0 && (db = peek.db) &&
            sqlite3_prepare_v2(db,
                               "SELECT (SELECT value FROM meta WHERE key = 'ppid'), (SELECT value FROM meta WHERE key "
                               "= 'host'), (SELECT value FROM meta WHERE key = 'pid')",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) && sqlite3_column_text(st, 2)) {
            child = !strcmp((const char *)sqlite3_column_text(st, 0), pid) &&
                    (!sqlite3_column_text(st, 1) || !strcmp((const char *)sqlite3_column_text(st, 1), host));
            snprintf(cpid, sizeof cpid, "%s", (const char *)sqlite3_column_text(st, 2));
        }
        sqlite3_finalize(st);
        if (db) vw_trace_close(&peek);
        if (!child) continue;
        if (c->json) {
            fprintf(f, "%s{\"file\": ", n ? ", " : "");
            vw_put_json_string(f, path);
            fprintf(f, ", \"pid\": %s}", cpid);
        } else {
            fputs(n ? "" : "\nprocesses it forked wrote traces of their own (devtrace report them too):\n", f);
            fprintf(f, "  pid %-8s ", cpid);
            vw_put_escaped(f, path);
            fputc('\n', f);
        }
        n++;
    }
    if (d) closedir(d);
    if (c->json) fputs("]", f);
}

/* Reports one trace to out (text or JSON, the index-th of nfiles): the
 * number of mismatches found, or -1 after printing why it could not. */
int vw_report_trace(struct vw_trace *t, int json, int flags, FILE *out, int index, int nfiles, char **key) {
    int found = 0;
    struct ctx c = {.t = t,
                    .json = json,
                    .out = out,
                    .all_frames = !!(flags & VW_REPORT_ALL_FRAMES),
                    .no_source = !!(flags & VW_REPORT_NO_SOURCE),
                    .brief = !!(flags & VW_REPORT_BRIEF)};
    char *keybuf = NULL, *excbuf = NULL;
    size_t keylen = 0, exclen = 0;
    (void)nfiles;
    if (key) {
        *key = NULL;
        c.key = open_memstream(&keybuf, &keylen);
        if (!c.key) {
            vw_error("out of memory");
            return -1;
        }
    }
    int opened = vw_model_open(&c.m, t) == 0;
    c.sym = c.m.sym;
    sqlite3_stmt *mm = vw_prep(t, VW_MISMATCHES_SQL);
    if (!opened || !mm) {
        found = -1;
        goto next;
    }
    char prog[512], pid[32], status[32];
    int sig;
    vw_meta(t, "program", prog, sizeof prog);
    vw_meta(t, "pid", pid, sizeof pid);
    ending(t, status, sizeof status, &sig);
    const char *signame = sig ? sigabbrev_np(sig) : NULL;
    /* the time of the first device mismatch, recorded or thrown (-1: none) */
    int64_t first_t = -1;
    sqlite3_stmt *ft =
        vw_prep(t, "SELECT e.t FROM errors r JOIN misc_events e ON e.seq = r.seq LEFT JOIN ops o ON "
                   "o.op = e.op WHERE (r.first_arg IS NOT NULL AND (o.op IS NULL OR COALESCE(" VW_OP_STATUS_SQL
                   ", -1) <> 0)) OR r.device_a IS NOT NULL ORDER BY r.seq LIMIT 1");
    if (ft && sqlite3_step(ft) == SQLITE_ROW) first_t = sqlite3_column_int64(ft, 0);
    if (ft) sqlite3_finalize(ft);
    if (json) {
        fprintf(out, "%s\n  {\"file\": ", index ? "," : "");
        vw_put_json_string(out, t->path);
        fprintf(out, ", \"program\": ");
        vw_put_json_string(out, prog);
        fprintf(out, ", \"pid\": ");
        vw_put_json_meta(out, pid);
        char rank[32], host[256];
        fprintf(out, ", \"rank\": ");
        vw_put_json_meta(out, vw_meta(t, "rank", rank, sizeof rank));
        fprintf(out, ", \"host\": ");
        if (vw_meta(t, "host", host, sizeof host)[0])
            vw_put_json_string(out, host);
        else
            fputs("null", out);
        fprintf(out, ", \"exit_status\": ");
        vw_put_json_meta(out, status);
        fputs(", \"signal\": ", out);
        if (sig)
            fprintf(out, "{\"number\": %d, \"name\": \"SIG%s\"}", sig, signame ? signame : "?");
        else
            fputs("null", out);
        struct vw_health h;
        vw_health(t->db, &h);
        fprintf(out, ", \"complete\": %s, \"incomplete\": ", h.complete ? "true" : "false");
        if (h.why[0])
            vw_put_json_string(out, h.why);
        else
            fputs("null", out);
        fprintf(out, ", \"events_pruned\": %lld", (long long)h.pruned);
        fprintf(out, ", \"events_dropped\": %lld, \"first_dropped_seq\": ", (long long)h.dropped);
        if (h.first_dropped > 0)
            fprintf(out, "%lld", (long long)h.first_dropped);
        else
            fputs("null", out);
        if (first_t >= 0) print_ending(&c, status, sig, first_t);
        fputs(", \"mismatches\": [", out);
    } else if (!c.brief) {
        if (first_t >= 0) print_ending(&c, status, sig, first_t);
        struct vw_health h;
        /* a trace cut short, or with events lost, says so; a death by a signal the tracer caught kept every
         * event, and the ending above says how the program died */
        if (vw_health(t->db, &h) && (h.lost[0] || (h.why[0] && !h.all_kept))) {
            fprintf(out, "%snote:%s ", out == stdout ? vw_color(VW_YELLOW) : "",
                    out == stdout ? vw_color(VW_RESET) : "");
            vw_put_escaped(out, h.why[0] && !h.all_kept ? "this trace is incomplete: " : "");
            vw_put_escaped(out, h.all_kept ? "" : h.why);
            fputs(h.why[0] && !h.all_kept && h.lost[0] ? "; " : "", out);
            vw_put_escaped(out, h.lost);
            fputs("\n\n", out);
        }
        if (h.pruned > 0) { /* a bounded trace (DEVTRACE_MAX_MB) */
            fprintf(out, "%snote:%s a bounded trace: ", out == stdout ? vw_color(VW_YELLOW) : "",
                    out == stdout ? vw_color(VW_RESET) : "");
            vw_put_escaped(out, h.pruned_text);
            fputs("\n\n", out);
        }
    }
    while (sqlite3_step(mm) == SQLITE_ROW) {
        if (!json && found) fprintf(out, "\n");
        report_one(&c, sqlite3_column_int64(mm, 0), sqlite3_column_int(mm, 1), sqlite3_column_int(mm, 2),
                   (const char *)sqlite3_column_text(mm, 3), sqlite3_column_int64(mm, 4), sqlite3_column_int64(mm, 5),
                   sqlite3_column_int64(mm, 6), found);
        found++;
    }
    /* a thrown mismatch's block is its key: caught to a buffer first */
    FILE *exc = c.key ? open_memstream(&excbuf, &exclen) : NULL;
    if (exc) c.out = exc;
    int nexc = report_exceptions(&c, found);
    if (exc) {
        c.out = out;
        fclose(exc);
        if (excbuf) fwrite(excbuf, 1, exclen, out), fwrite(excbuf, 1, exclen, c.key);
        free(excbuf);
    }
    if (nexc < 0) {
        found = -1;
        goto next;
    }
    found += nexc;
    if (json) {
        fprintf(out, "]");
        summary(&c);
        print_children(&c);
        fprintf(out, "}");
    } else if (c.brief) {
        if (found) {
            fputs("\nfor the whole chain and the source: devtrace report ", out);
            vw_put_escaped(out, t->path);
            if (c.patches && c.compiled == c.patches) {
                fputs("\nthe change as a patch (apply it, rebuild, run again): devtrace fix ", out);
                vw_put_escaped(out, t->path);
            } else if (c.patches) {
                /* --verify shows the command it would run and asks first (fix.c): no surprise in the advice */
                fputs("\nthe change as a patch, checked by running it (it asks first): devtrace fix --verify ", out);
                vw_put_escaped(out, t->path);
            }
            fputc('\n', out);
        } else {
            /* a trace cut short (a full disk, a kill) may have lost the very mismatch: never a bare "no" then */
            struct vw_health h;
            if (vw_health(t->db, &h) && h.why[0] && !h.all_kept) {
                fputs("no device mismatch recorded, but this trace is incomplete: ", out);
                vw_put_escaped(out, h.why);
                fputs("; a mismatch after that point would be missing\n", out);
            } else
                fputs("no device mismatch\n", out);
        }
    } else if (!found) {
        fprintf(out, "no device mismatch in ");
        vw_put_escaped(out, t->path);
        fprintf(out, " (");
        vw_put_escaped(out, prog);
        fprintf(out, ", exit status ");
        vw_put_escaped(out, status[0] ? status : "unknown");
        if (sig) fprintf(out, ", killed by SIG%s", signame ? signame : "?");
        fprintf(out, ")\n");
        if (sig || (status[0] && strcmp(status, "0")))
            fprintf(out, "the program %s, but not of a device mismatch: its own error output says what went wrong\n",
                    sig ? "was killed" : "failed");
        summary(&c);
        print_children(&c);
    } else
        print_children(&c);
next:
    if (mm) sqlite3_finalize(mm);
    if (opened) vw_model_close(&c.m);
    if (c.key) {
        fclose(c.key);
        if (found >= 0)
            *key = keybuf;
        else
            free(keybuf);
    }
    return found;
}

static void usage(FILE *f) {
    fprintf(f, "usage: devtrace report [--json] [--brief] [--all-frames] [--no-source] FILE|DIR...\n\n"
               "For each device mismatch in the traces: the op and where it was called, its operands, the odd one\n"
               "out, the chain of events that put it on its device, where its peers reached theirs, and the line\n"
               "where the move belongs, with the source around the failing, origin and fix lines and the fix as a\n"
               "diff when the files are readable (--no-source: without them). With no mismatch, a summary of\n"
               "tensors and transfers. The failing call's stack shows the program's frames; --all-frames adds those\n"
               "inside libdtrt, libdevtrace and libc. --brief: per mismatch, the headline, the odd operand, where it\n"
               "was made and the fix (what `devtrace run` prints when a program ends on a mismatch).\n\n"
               "Several traces (a DIR: every *.db trace in it) are one job's: each is headed by its rank and host,\n"
               "and ranks with the same mismatches are reported once, as \"ranks 0-7\".\n\n"
               "Exit status: 0 no mismatch, 1 a mismatch was found, 2 bad usage or an unreadable trace.\n");
}

/* ---------------------------------------------------------------- several traces: ranks */

/* The traces in a directory: every "*.db" in it, by name, appended to paths; -1 after saying why not. */
static int add_dir(const char *dir, char ***paths, int *n, int *cap) {
    struct dirent **ents;
    int m = scandir(dir, &ents, NULL, alphasort), added = 0, rc = 0;
    if (m < 0) {
        vw_error("%s: cannot read the directory", dir);
        return -1;
    }
    for (int i = 0; i < m; i++) {
        size_t len = strlen(ents[i]->d_name);
        if (!rc && len > 3 && !strcmp(ents[i]->d_name + len - 3, ".db") && ents[i]->d_name[0] != '.') {
            if (*n == *cap) {
                char **more = realloc(*paths, (size_t)(*cap = *cap * 2 + 8) * sizeof *more);
                if (!more)
                    rc = -1;
                else
                    *paths = more;
            }
            char *p = NULL;
            if (!rc && asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", ents[i]->d_name) < 0)
                rc = -1;
            if (!rc) (*paths)[(*n)++] = p, added++;
        }
        free(ents[i]);
    }
    free(ents);
    if (rc)
        vw_error("out of memory");
    else if (!added)
        vw_error("%s: is a directory with no *.db trace in it", dir), rc = -1;
    return rc;
}

/* A trace's rank from its meta (the tracer's RANK and its kin), or -1. */
static long trace_rank(struct vw_trace *t) {
    char buf[32], *end;
    vw_meta(t, "rank", buf, sizeof buf);
    long r = strtol(buf, &end, 10);
    return buf[0] && !*end && r >= 0 ? r : -1;
}

/* "0–3, 5, 7–9": ranks (sorted) with runs of consecutive ones as ranges; a rank twice (a forked child's
 * trace has its parent's) once. */
static void put_ranks(FILE *f, const long *r, int n) {
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && (r[j + 1] == r[j] + 1 || r[j + 1] == r[j])) j++;
        fprintf(f, "%s%ld", i ? ", " : "", r[i]);
        if (r[j] != r[i]) fprintf(f, "%s%ld", r[j] > r[i] + 1 ? "\u2013" : ", ", r[j]);
        i = j + 1;
    }
}

struct rank_report {
    long rank;  /* -1: none */
    char *text; /* the report, text mode */
    size_t len; /* of text */
    char *key;  /* vw_report_trace's key */
    int found;  /* mismatches, -1: unreadable */
    int group;  /* index of the first trace with the same key and a rank, or its own */
};

static int by_rank(const void *a, const void *b) {
    const struct rank_report *x = *(struct rank_report *const *)a, *y = *(struct rank_report *const *)b;
    long rx = x->rank < 0 ? LONG_MAX : x->rank, ry = y->rank < 0 ? LONG_MAX : y->rank;
    return rx < ry ? -1 : rx > ry ? 1 : x < y ? -1 : x > y;
}

/* Text over several traces: each rank's report under its heading, ranks with the same mismatches once. */
static int report_ranks(struct vw_trace *tr, int n, int flags) {
    struct rank_report *rr = calloc((size_t)n, sizeof *rr);
    struct rank_report **order = calloc((size_t)n, sizeof *order);
    long *ranks = calloc((size_t)n, sizeof *ranks);
    int rc = VW_EXIT_OK;
    if (!rr || !order || !ranks) {
        vw_error("out of memory");
        rc = VW_EXIT_USAGE;
        goto out;
    }
    for (int i = 0; i < n && rc == VW_EXIT_OK; i++) {
        FILE *m = open_memstream(&rr[i].text, &rr[i].len);
        if (!m) {
            vw_error("out of memory");
            rc = VW_EXIT_USAGE;
            break;
        }
        rr[i].rank = trace_rank(&tr[i]);
        rr[i].found = vw_report_trace(&tr[i], 0, flags, m, 0, 1, &rr[i].key);
        fclose(m);
        order[i] = &rr[i];
    }
    if (rc != VW_EXIT_OK) goto out;
    qsort(order, (size_t)n, sizeof *order, by_rank);
    for (int i = 0; i < n; i++) {
        struct rank_report *a = order[i];
        a->group = (int)(a - rr);
        if (a->rank < 0 || a->found < 0 || !a->key) continue;
        for (int j = 0; j < i; j++) {
            struct rank_report *b = order[j];
            if (b->rank >= 0 && b->found == a->found && b->key && !strcmp(a->key, b->key) && b->group == b - rr) {
                a->group = (int)(b - rr);
                break;
            }
        }
    }
    int printed = 0;
    for (int i = 0; i < n; i++) {
        struct rank_report *a = order[i];
        int idx = (int)(a - rr), nr = 0, same_host = 1;
        char host[256], other[256], pid[32];
        if (a->found < 0) rc = VW_EXIT_USAGE;
        if (a->found > 0 && rc == VW_EXIT_OK) rc = VW_EXIT_FOUND;
        if (a->group != idx) continue;
        vw_meta(&tr[idx], "host", host, sizeof host);
        for (int j = i; j < n; j++)
            if (order[j]->group == idx) {
                ranks[nr++] = order[j]->rank;
                if (strcmp(vw_meta(&tr[order[j] - rr], "host", other, sizeof other), host)) same_host = 0;
            }
        fputs(printed++ ? "\n== " : "== ", stdout);
        if (nr > 1) {
            fputs("ranks ", stdout);
            put_ranks(stdout, ranks, nr);
            printf(": %d traces with the same %s", nr, a->found ? "device mismatch" : "outcome, no device mismatch");
            if (same_host && host[0])
                fputs(" on ", stdout), vw_put_escaped(stdout, host);
            else if (!same_host)
                fputs(" on several hosts", stdout);
            fputs(" (rank ", stdout);
            printf("%ld's shown: ", a->rank);
            vw_put_escaped(stdout, tr[idx].path);
            fputs(")\n", stdout);
        } else {
            vw_put_escaped(stdout, tr[idx].path);
            fputs(" (", stdout);
            if (a->rank >= 0) printf("rank %ld, ", a->rank);
            if (host[0]) fputs("host ", stdout), vw_put_escaped(stdout, host), fputs(", ", stdout);
            fputs("pid ", stdout);
            vw_put_escaped(stdout, vw_meta(&tr[idx], "pid", pid, sizeof pid));
            fputs(")\n", stdout);
        }
        if (a->text) fwrite(a->text, 1, a->len, stdout);
    }
out:
    for (int i = 0; rr && i < n; i++) free(rr[i].text), free(rr[i].key);
    free(rr);
    free(order);
    free(ranks);
    return rc;
}

/* JSON over several traces: "groups", the traces (by index in "traces") whose mismatches are the same. */
static void json_groups(struct vw_trace *tr, char **keys, const int *found, int n) {
    fputs(",\n \"groups\": [", stdout);
    int first = 1;
    for (int i = 0; i < n; i++) {
        if (found[i] <= 0 || !keys[i]) continue;
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = found[j] == found[i] && keys[j] && !strcmp(keys[j], keys[i]);
        if (dup) continue;
        printf("%s\n  {\"mismatches\": %d, \"ranks\": [", first ? "" : ",", found[i]);
        first = 0;
        int k = 0;
        for (int j = i; j < n; j++)
            if (found[j] == found[i] && keys[j] && !strcmp(keys[j], keys[i])) {
                long r = trace_rank(&tr[j]);
                if (r >= 0)
                    printf("%s%ld", k++ ? ", " : "", r);
                else
                    printf("%snull", k++ ? ", " : "");
            }
        fputs("], \"traces\": [", stdout);
        k = 0;
        for (int j = i; j < n; j++)
            if (found[j] == found[i] && keys[j] && !strcmp(keys[j], keys[i])) printf("%s%d", k++ ? ", " : "", j);
        fputs("]}", stdout);
    }
    fputs("]", stdout);
}

int vw_cmd_report(int argc, char **argv) {
    int json = 0, flags = 0, nfiles = 0, cap = argc, rc = VW_EXIT_OK;
    char **paths = calloc((size_t)argc, sizeof *paths);
    char *owned = calloc((size_t)argc, 1); /* which of the first argc paths are ours: none */
    struct vw_trace *tr = NULL;
    char **keys = NULL;
    int *found = NULL;
    if (!paths || !owned) {
        vw_error("out of memory");
        rc = VW_EXIT_USAGE;
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            goto done;
        } else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--all-frames"))
            flags |= VW_REPORT_ALL_FRAMES;
        else if (!strcmp(argv[i], "--no-source"))
            flags |= VW_REPORT_NO_SOURCE;
        else if (!strcmp(argv[i], "--brief"))
            flags |= VW_REPORT_BRIEF | VW_REPORT_NO_SOURCE;
        else if (argv[i][0] == '-' && argv[i][1]) {
            vw_error("report: unknown option '%s'; see 'devtrace report --help'", argv[i]);
            rc = VW_EXIT_USAGE;
            goto done;
        } else if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            int before = nfiles;
            if (add_dir(argv[i], &paths, &nfiles, &cap) < 0) {
                rc = VW_EXIT_USAGE;
                goto done;
            }
            char *more = realloc(owned, (size_t)cap);
            if (!more) {
                vw_error("out of memory");
                rc = VW_EXIT_USAGE;
                goto done;
            }
            owned = more;
            for (int k = before; k < nfiles; k++) owned[k] = 1;
        } else {
            if (nfiles == cap) { /* only after a directory grew the array */
                char **more = realloc(paths, (size_t)(cap *= 2) * sizeof *more);
                char *mo = more ? realloc(owned, (size_t)cap) : NULL;
                if (more) paths = more;
                if (!mo) {
                    vw_error("out of memory");
                    rc = VW_EXIT_USAGE;
                    goto done;
                }
                owned = mo;
            }
            owned[nfiles] = 0;
            paths[nfiles++] = argv[i];
        }
    }
    if (!nfiles) {
        fprintf(stderr, "usage: devtrace report [--json] [--all-frames] [--no-source] FILE|DIR...  ('devtrace report "
                        "--help' says more)\n");
        rc = VW_EXIT_USAGE;
        goto done;
    }
    tr = vw_trace_open_all((const char *const *)paths, nfiles);
    if (!tr) {
        rc = VW_EXIT_USAGE;
        goto done;
    }
    if (!json && nfiles > 1) {
        rc = report_ranks(tr, nfiles, flags);
        goto done;
    }
    struct vw_doc doc; /* JSON: all or nothing */
    if (json && vw_doc_capture(&doc) < 0) {
        rc = VW_EXIT_USAGE;
        goto done;
    }
    keys = calloc((size_t)nfiles, sizeof *keys);
    found = calloc((size_t)nfiles, sizeof *found);
    if (json) printf("{\"traces\": [");
    for (int i = 0; i < nfiles; i++) {
        found[i] = vw_report_trace(&tr[i], json, flags, stdout, i, nfiles, json && keys ? &keys[i] : NULL);
        if (found[i] < 0) rc = VW_EXIT_USAGE;
        if (found[i] > 0 && rc == VW_EXIT_OK) rc = VW_EXIT_FOUND;
    }
    if (json) printf("\n]");
    if (json && keys) json_groups(tr, keys, found, nfiles);
    if (json) printf("}\n");
    if (json && vw_doc_release(&doc, rc != VW_EXIT_USAGE) < 0 && rc != VW_EXIT_USAGE) {
        vw_error("report: cannot write to standard output");
        rc = VW_EXIT_USAGE;
    }
done:
    for (int i = 0; keys && i < nfiles; i++) free(keys[i]);
    free(keys);
    free(found);
    if (tr) vw_trace_close_all(tr, nfiles);
    for (int i = 0; paths && owned && i < nfiles; i++)
        if (owned[i]) free(paths[i]);
    free(paths);
    free(owned);
    return rc;
}
