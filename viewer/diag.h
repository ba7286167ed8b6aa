/* The diagnosis engine of `devtrace report` and `devtrace fix`, in four
 * parts read in this order, each calling only those before it
 * (scripts/check_include_graph.py checks it): the model (model.c: each
 * device mismatch's operands, their chains, where the program meant the op
 * to run, and the facts the rules ask about the trace and the program's
 * source; no English), the rules (rules/: one file per rule, each an id, its
 * documentation, a match on facts and the kind of fix it proposes;
 * rules/registry.c lists them in priority order), the fix's words (words.c:
 * the advice's sentence from the kind of sentence a rule chose and its
 * parameters), the code (code.c: every
 * piece of code a fix holds, per language) and the rendering (report.c:
 * text, JSON, a chain's steps in words; export.c: HTML; fix.c: a patch).
 * Nothing here prints. */
#ifndef DEVTRACE_DIAG_H
#define DEVTRACE_DIAG_H

#include "trace_schema.h"
#include "vw.h"

/* The probe ABI's kinds (include/devtrace/probe.h) as SQL literals, for the model's and the code's queries:
 * named where a query reads them; the vocabulary's (common/vocab.h), checked there against the enums. */
#define VW_SQL_TRANSFER_TO    DT_SQL_TRANSFER_TO
#define VW_SQL_TRANSFER_COPY  DT_SQL_TRANSFER_COPY
#define VW_SQL_TRANSFER_MOVE  DT_SQL_TRANSFER_MOVE
#define VW_SQL_ORIGIN_FACTORY DT_SQL_ORIGIN_FACTORY
#define VW_SQL_ORIGIN_CKPT    DT_SQL_ORIGIN_CHECKPOINT

#define VW_MAX_STEPS   24
#define VW_DEV_UNKNOWN INT64_MIN /* a device the trace does not give */
#define VW_MAX_ARGS    16

/* ---------------------------------------------------------------- the model (model.c) */

/* A step's origin when the tensor, made earlier elsewhere, took a role there (roles: an optimizer's state,
 * as torch 2.x's load_state_dict keeps a loaded tensor as it is): its what is the role's key ("exp_avg"), its
 * from the tensor it is the role of, its site where the producer named the tensor as it gave the role. */
#define VW_STEP_ROLE (-2)

/* One step of a tensor's chain: how it was made, an in-place move, or a role taken. */
struct vw_step {
    int64_t tensor, dev, seq, stack, pystack;
    int origin;           /* tensors.origin (DT_ORIGIN_*), -1 for an in-place move, VW_STEP_ROLE for a role taken */
    char what[256];       /* what made it: a factory's, op's or copy's name ("zeros", "nn.Parameter", "to") */
    int param;            /* made as a module's parameter (what is DT_WHAT_PARAMETER, common/op_families.h) */
    int role;             /* a VW_STEP_ROLE step's role (enum dtp_tensor_role) */
    int64_t from;         /* what it was made from: a view's base, a copy's source, the op input it follows, a
                           * factory's inside a library call: the call's input whose device it took; or 0 */
    int64_t from_dev;     /* an in-place move's or a copy's source device; VW_DEV_UNKNOWN when not in the trace */
    char detail[512];     /* a checkpoint load's file; a role's: the name of the tensor it is the role of */
    char op[128];         /* an op output's op */
    char from_arg[64];    /* the argument of that op it follows ("" when none was on its device) */
    struct vw_frame site; /* where it happened, when has_site */
    int has_site;
};

struct vw_operand {
    char arg[64], name[256], dtype[16], shape[96];
    char src_name[256]; /* no name in the trace: the name the failing call's source passed it by (native code) */
    int64_t tensor, dev;
    int scalar, odd;
    int buffer; /* a buffer a module registered (its producer's role fact, schema 12): it moves with the module */
    struct vw_step chain[VW_MAX_STEPS]; /* newest first */
    int nsteps;
    int arrived;     /* index in chain where it reached its device */
    int64_t missing; /* a tensor of the chain whose making is not in the trace (the chain ends there), or 0 */
    int gap;         /* events were dropped over the chain's span: a link may be missing */
    int pruned;      /* events of freed tensors were pruned over the chain's span (none of its links) */
    int64_t span_lo; /* the chain's span: its first event's seq (0: the failing op's) to the failing op's */
};

/* Where the program meant the failing op to run, from what it did rather than from how many operands sit
 * where: per device an operand is on, the tensors it explicitly sent there, the device expressions of its
 * own code that sent them, and the ops of its latest work that ran there. */
struct vw_intent {
    int n;                        /* candidate devices */
    int64_t dev[VW_MAX_ARGS];     /* the operands' devices */
    long long sent[VW_MAX_ARGS];  /* tensors explicitly sent there */
    long long work[VW_MAX_ARGS];  /* of the latest ops, those that ran there */
    long long coded[VW_MAX_ARGS]; /* moves there by a line of the program with a device expression */
    enum vw_intent_by {
        VW_INTENT_OPERANDS,   /* where most operands are: nothing the program did says otherwise */
        VW_INTENT_TRANSFERS,  /* the tensors the program explicitly sent there */
        VW_INTENT_WORK,       /* where the ops of its latest work ran */
        VW_INTENT_DEVICE_EXPR /* where its own device expressions sent tensors */
    } by;                     /* what decided */
    int64_t majority;         /* the device most operands are on */
    int ambiguous;            /* nothing settles it: a guess, said as such */
    int64_t want;             /* the intended device */
};

/* Source facts of one line, as the producer that knows the language wrote them (table source_facts); all
 * empty (known = 0) when the trace has none for it. */
#define VW_SRC_MAX_CALLS 8
struct vw_src_call {
    char func[256];        /* callee as written ("torch.arange", "x.to", "torch::tensor({1, 2}).view") */
    char device[128];      /* its device= argument's text, or "" */
    int temporary;         /* a temporary inside a larger expression */
    int end_line, end_col; /* just past its closing parenthesis (col 0-based) */
    int has_args;
    int trailing_comma; /* its last argument is followed by a comma: `f(a, b,)` */
};
struct vw_src {
    int known;
    int first, last;           /* the statement's lines */
    char indent[64];           /* its leading whitespace */
    int opens;                 /* a compound statement's header */
    char body_indent[64];      /* then its body's leading whitespace */
    char function[256];        /* enclosing function ("<module>" at the top) */
    int loop_first, loop_last; /* the innermost enclosing loop, 0 when none */
    char loop_indent[64];      /* its body's leading whitespace */
    char binds[256];           /* names the statement binds, comma-separated */
    enum dt_binds_kind binds_kind; /* how it binds them (DT_BINDS_CALL: x = f()); DT_BINDS_NONE: not said */
    char binds_attr[256];      /* the attributes it binds, as written, comma-separated: self.x (Python), p->x, s.x (C) */
    int nattrs;                /* how many */
    char attr_name[128];       /* the first one's name in its object (self.pe: pe), "" when it is no OBJ.NAME */
    char attr_set_before[256]; /* of those, the ones an earlier statement of the function set */
    char attr_from[128];       /* the name one attribute is assigned from (self.pe = pe), or "" */
    int function_line;         /* the enclosing function's def line, 0 at the top */
    char class_bases[256];     /* on a method's def line: its class's bases as written ("nn.Module") */
    int module_class;          /* on a method's def line: its class is a torch.nn.Module (the producer's check) */
    char defaults[256];        /* on a def line: "NAME=DEFAULT" of its parameters with a default, tab-separated */
    char params[256];          /* on a def line: its parameters' names, comma-separated ("" from older producers) */
    int returns;               /* a return statement */
    char device_expr[128];     /* the first device expression used on the line, or "" */
    char device_var[128];      /* a name it binds to a device, or "" */
    char guard[208];           /* the condition under which the line's move runs (`if args.cuda:`), or "" */
    char setattr_obj[64], setattr_name[128], setattr_value[128]; /* setattr(OBJ, NAME, VALUE) alone, or "" */
    int setattr_receiver; /* that OBJ is the receiver of the method it stands in (setattr(self, ...)) */
    char device_of[4][64]; /* the names whose .device a device expression of the line is (device=ts.device: ts) */
    int ndevice_of;
    char device_args[4][160]; /* FUNC \t PARAM: a call of the line hands FUNC a device as PARAM (#N: positional) */
    int ndevice_args;
    struct vw_src_call calls[VW_SRC_MAX_CALLS];
    int ncalls;
};

/* The trace's source facts, read once when the model opens (facts.c): rows in the table's key order, grouped by
 * file; no SQL on facts after that. */
struct vw_facts {
    int loaded;
    struct {
        const char *text; /* the file as the producer named it */
        size_t lo, hi;    /* its rows */
    } *files;
    size_t nfiles;
    struct {
        int line;
        const char *key, *value;
    } *rows;
    size_t n;
    char *arena; /* the text */
};
/* The last line a fact may name: first..VW_FACTS_ALL_LINES asks for every line of a file. */
#define VW_FACTS_ALL_LINES 0x7fffffff
/* Reads the source_facts table of db; 0, or -1 with *why (the table is unreadable or too large: no facts). */
int vw_facts_load(struct vw_facts *fs, sqlite3 *db, const char **why);
void vw_facts_free(struct vw_facts *fs);
/* fn(ctx, FILE, LINE, KEY, VALUE) for each fact of file (as a frame names it: VW_FACT_FILE_MATCH) on lines
 * first..last, of key (NULL: every key), in key order; a non-zero return stops and is returned. */
int vw_facts_each(const struct vw_facts *fs, const char *file, int first, int last, const char *key,
                  int (*fn)(void *ctx, const char *file, int line, const char *key, const char *value), void *ctx);
/* The values of key (NULL: every key) on lines first..last of file (NULL: every file, every line), in key
 * order, max at most, into out (pointers to the facts' text, kept while the model is open) and their lines
 * into lines (when not NULL); how many. */
int vw_facts_values(const struct vw_facts *fs, const char *file, int first, int last, const char *key,
                    const char **out, int *lines, int max);
/* Sorts values as SQL's ORDER BY on text does (byte order). */
void vw_facts_sort_values(const char **vals, int n);
/* The same over every file's facts of key. */
int vw_facts_each_file(const struct vw_facts *fs, const char *key,
                       int (*fn)(void *ctx, const char *file, int line, const char *key, const char *value),
                       void *ctx);

struct vw_made_on;
struct vw_model {
    struct vw_trace *t;
    struct vw_sym *sym;
    struct vw_health health;
    int have_facts; /* the trace has the source_facts table (read into facts) */
    struct vw_facts facts;
    sqlite3_stmt *tensor, *moves, *args, *opname;
    struct vw_src_slot *src_cache; /* VW_SRC_CACHE lines' facts, by (file, line) (malloc'd on first use) */
    char inconsistent[400];        /* the first source fact refused as not what a producer writes, said; or "" */
    struct vw_made_on *made_on;    /* the last answer of vw_fact_made_on (malloc'd on first use) */
};

/* The model's source facts, read from the trace the first time they are asked for (then never again). */
const struct vw_facts *vw_model_facts(struct vw_model *m);

/* One device mismatch, loaded. */
struct vw_case {
    int64_t seq, op, stack, pystack;
    char opname[128];
    const char *message;
    int first, other; /* the operands the message named, or -1 */
    struct vw_operand *ops;
    int n;
    struct vw_intent in;
    int64_t want;                 /* the intended device */
    int tie;                      /* split evenly between two accelerators */
    struct vw_step call;          /* the failing call */
    const struct vw_operand *odd; /* the first operand off the intended device, or NULL */
};

/* What decided the intended device, as the report and its JSON name it ("operands", "device expression"). */
const char *vw_intent_by_name(enum vw_intent_by by);

/* The device mismatches of a trace, in order: seq, first_arg, other_arg, message, op, stack, pystack. A
 * mismatch a producer recorded before an op that then succeeded (the libtorch observer checks before libtorch
 * does) did not happen. */
#define VW_MISMATCHES_SQL                                                                                              \
    "SELECT r.seq, r.first_arg, r.other_arg, r.message, COALESCE(e.op, 0), COALESCE(e.stack, 0), COALESCE(e.pystack, " \
    "0) FROM errors r JOIN misc_events e ON e.seq = r.seq LEFT JOIN ops o ON o.op = e.op WHERE r.first_arg IS NOT "    \
    "NULL AND (o.op IS NULL OR COALESCE(" VW_OP_STATUS_SQL ", -1) <> 0) ORDER BY r.seq"

int vw_model_open(struct vw_model *m, struct vw_trace *t);
void vw_model_close(struct vw_model *m);
/* Loads the mismatch recorded at seq; 0, or -1 after saying why. vw_case_free frees what it holds. */
int vw_case_load(struct vw_model *m, struct vw_case *k, int64_t seq, int first, int other, const char *message,
                 int64_t op, int64_t stack, int64_t pystack);
void vw_case_free(struct vw_case *k);

/* Facts the rules ask about, each a question about the trace (model.c). */
int vw_same_site(const struct vw_step *a, const struct vw_step *b);
int vw_same_function(const char *a, const char *b);
/* From how many places (distinct calling lines) the function that made `made` was called at that line, as
 * far as the trace saw, or, for Python, as the program's source facts have calls of it (a plain function by
 * its bare name; a method as self.NAME in its own file), whichever is more: a helper making batches for
 * training and evaluation counts 2, even when the failure came before the evaluation. */
/* The parameter of the Python function that made `made` to which its caller (the frame that called it) handed a
 * device (device_arg facts of the caller's statement: mel_filters(audio.device, n) -> "device"), into buf; ""
 * when none is known (older traces have no device_arg facts). */
const char *vw_fact_device_param(struct vw_model *m, const struct vw_step *made, const struct vw_frame *caller,
                                 char *buf, size_t size);
/* The parameter of the Python function that made `made` to which its caller handed, by a plain name, a tensor
 * the program held on dev only at the mismatch (the caller's `args` facts: dec = shift_tokens_right(labels, 0, 1)
 * -> "input_ids"), and that nothing in the function rebinds before `made` is made, into buf; "" when none. */
const char *vw_fact_tensor_param(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_step *made,
                                 const struct vw_frame *caller, char *buf, size_t size);
int vw_fact_callers(struct vw_model *m, const struct vw_step *made);
/* Tensors made the same way as made, in the statements next to it in its block (constants defined together:
 * MEAN and STD), still on its device and never moved before seq: each by the name its statement binds. */
struct vw_sibling {
    char name[256];
    int line, last; /* its statement's first and last lines */
};
int vw_fact_siblings(struct vw_model *m, const struct vw_step *made, int64_t seq, struct vw_sibling *out, int max);
/* What the advice calls an operand: its name in the program, else the name its source passed it by, else the
 * argument it was passed as ("the tensor passed as 'input'"); never a trace's internal id. */
const char *vw_operand_called(const struct vw_operand *o, char *buf, size_t size);
/* The latest name tensor id had before seq, into buf ("" when none). */
const char *vw_tensor_name(struct vw_model *m, int64_t id, int64_t seq, char *buf, size_t size);
/* The frames of Python stack pystack (hidden ones too: torch's, Python's library), innermost first, max at most,
 * into out; how many. */
int vw_py_frames(struct vw_model *m, int64_t pystack, struct vw_frame *out, int max);
#define VW_PY_FRAMES 256 /* the most frames of a Python stack the rules look at */
/* Whether a frame of function (a frame not hidden) in file is on Python stack pystack. */
int vw_py_on_stack(struct vw_model *m, int64_t pystack, const char *file, const char *function);
/* Tensor `tensor` as an operand (its chain back from event seq, where it arrived on its device) named name,
 * into *o; 0 when the trace has no row for it. */
int vw_operand_of(struct vw_model *m, struct vw_operand *o, int64_t tensor, const char *name, int64_t seq);
/* The tensor the program held by `name` at the failure (a name the recorder gave it before event seq), when one
 * tensor only went by it; 0 when none or several. */
int64_t vw_tensor_named(struct vw_model *m, const char *name, int64_t seq);
/* 1 when the program named a tensor `name` (before seq) that is on dev and was never moved. */
int vw_fact_unmoved_name(struct vw_model *m, const char *name, int64_t dev, int64_t seq);
/* Up to max names tensor id had before seq, newest first; how many. */
int vw_tensor_names(struct vw_model *m, int64_t id, int64_t seq, char (*out)[256], int max);
/* The move of an optimizer state's parameter that left the state behind (see model.c). */
int vw_fact_state_left_behind(struct vw_model *m, const struct vw_operand *odd, int64_t seq, struct vw_step *s,
                              char *param, size_t psize);
/* A tensor of odd's chain made from one that a later move in place took to want. */
int vw_fact_made_before_source_moved(struct vw_model *m, const struct vw_operand *odd, int64_t want, int64_t seq,
                                     struct vw_step *move, int *src);
/* A module's move (1) or the program's own move in the same function (2) that left made's tensor behind. */
int vw_fact_module_move(struct vw_model *m, const struct vw_step *made, int64_t dev, int64_t want, int64_t seq,
                        struct vw_step *move);
/* A tensor made on made's line, after it, that the program itself moved to want. */
int vw_fact_sibling_moved(struct vw_model *m, const struct vw_step *made, int64_t dev, int64_t want, int64_t seq,
                          struct vw_step *move, char *sname, size_t size);
/* The same, the sibling made at most `before` events before made too (a batch's halves collated in either
 * order: the labels first, then the inputs). */
/* The call of src's statement that made step s (its function's last component is s's op: torch.rand, x.to,
 * dt_rand in C on libdtrt), or NULL. */
const struct vw_src_call *vw_src_making_call(const struct vw_src *src, const struct vw_step *s);
int vw_fact_sibling_moved_near(struct vw_model *m, const struct vw_step *made, int before, int64_t dev, int64_t want,
                               int64_t seq, struct vw_step *move, char *sname, size_t size);
/* The program's frame that called the library that called back the function that made it. */
int vw_fact_callback_caller(struct vw_model *m, const struct vw_step *made, int64_t failing_pystack,
                            struct vw_frame *out);
/* How many ops took tensor as an argument after seq `after` and before seq `before`, other than op (the failing
 * one), those that made one of the tensors made[] (the failing operand's chain after the copy) and those that
 * returned the tensor itself (x.float() of a float tensor, an in-place op): a copy used for something else before
 * the failing op (a metric, a log); 1 when the trace cannot say. A call that takes it for its shape only
 * (y.expand_as(copy): DT_OPS_SHAPE_OF) is no use, nor is one that copies it into another tensor, whose device
 * decides (state.copy_(copy): DT_OPS_COPY_INTO), nor is an op of the failing statement itself (at, when given:
 * the failing call's site): its result is still on its way into that statement with the device's tensors
 * (torch.where(copy <= m, a, b * c)). */
int vw_fact_used_between(struct vw_model *m, int64_t tensor, int64_t after, int64_t before, int64_t op,
                         const int64_t *made, int nmade, const struct vw_frame *at);
/* Whether view (a step made as a view) covers the whole of its base: as many elements, from the same offset
 * (b = buf.reshape(-1), x.t(), not x[i] or x[:n]): the base under another shape. */
int vw_fact_whole_view(struct vw_model *m, const struct vw_step *view);
/* Python: the program's frame that called the function made was made in, directly (the program's own code
 * made it there, not a library it called): its call's line. 0 when there is none. */
int vw_fact_caller_of(struct vw_model *m, const struct vw_step *made, struct vw_frame *out);
/* Whether step s was made inside a library call: its innermost Python frame is a library's (torch's, a
 * package's), its site the program's line that called it. */
int vw_fact_made_in_library(struct vw_model *m, const struct vw_step *s);
/* Whether every use of tensor root before event `before` went into what odd is computed from (each op that took
 * it made a tensor odd was computed from, each view of it is one): a tensor made for odd alone (h_idx, used only
 * by the comparisons that built a mask), not one the program used otherwise too (labels, of which class weights
 * were counted, sliced and moved batch by batch). */
int vw_fact_feeds_only(struct vw_model *m, int64_t root, int64_t odd, int64_t before);
/* How many tensors (not 0-dim) on s's device the op that made s took (an indexing op's index not counted), those
 * computed from one tensor by ops of one tensor each counted once. */
int vw_fact_combined(struct vw_model *m, const struct vw_step *s);
/* The frame of made's Python stack, innermost first, whose statement binds name (source facts). */
int vw_fact_bound_in_caller(struct vw_model *m, const struct vw_step *made, const char *name, struct vw_frame *out);
/* Native code: the frame, outside the function that made it, of the program's code on made's stack whose
 * statement binds name (mask = padding_mask(lengths, n) around a helper that made and returned its own mask);
 * 0 when none. */
int vw_fact_bound_by_native_caller(struct vw_model *m, const struct vw_step *made, const char *name,
                                   struct vw_frame *out);
/* made's innermost frame of the program is a constructor (`Layer.__init__`): that frame in *ctor, and the
 * program's frame that called it (where `Layer(...)` is written) in *caller. */
int vw_fact_constructed_at(struct vw_model *m, const struct vw_step *made, struct vw_frame *ctor,
                           struct vw_frame *caller);
/* A move the program wrote that moved nothing (x.to(device) where device held the tensor's own device), of
 * a tensor of o's chain before seq: where it ran (its frame) and the program's frame that called the function
 * it is in. */
int vw_fact_idle_move(struct vw_model *m, const struct vw_operand *o, int64_t seq, struct vw_frame *at,
                      struct vw_frame *caller);
/* Python: whether the trace saw a parameter made while a module of class cls (its qualified name's first cl
 * bytes) was constructed (a frame of cls.__init__ on the parameter's stack). */
int vw_fact_params_made_in(struct vw_model *m, const char *cls, size_t cl);
/* The sites (the program's frames) of the copies and moves to dev before event `before`, newest first, max at
 * most, into out; how many. */
int vw_fact_moves_to(struct vw_model *m, int64_t dev, int64_t before, struct vw_frame *out, int max);
/* The sites of the program's own copies (a tensor's .to/.cuda, not a module's move) from device `from` to dev
 * before event `before`, one per site, newest first, max at most, into out; how many. */
int vw_fact_copies_to(struct vw_model *m, int64_t from, int64_t dev, int64_t before, struct vw_frame *out, int max);
/* Whether the program copied tensor id, or a view of it or a tensor an op made from it, to want before event
 * `before` (a dataset's labels it moves a batch at a time: it keeps the whole where it is on purpose). */
int vw_fact_parts_moved(struct vw_model *m, int64_t id, int64_t want, int64_t before);
/* The program's sites (innermost frames of its own) that made tensors on dev by a factory before event `before`,
 * one per site, newest first, into out (at most max); how many. */
int vw_fact_made_on(struct vw_model *m, int64_t dev, int64_t before, struct vw_frame *out, int max);
/* The names the program's frames held tensors by when mismatch k happened (given at the mismatch, after its op
 * began) that held tensors on dev only, the odd operand none of them: into names, at most max; how many. */
int vw_fact_named_only_on(struct vw_model *m, const struct vw_case *k, int64_t dev, char (*names)[128], int max);
/* The tensors on dev the program's frames held by a name when mismatch k happened (the names the recorder
 * gives them at the mismatch, after its op began; a tensor moved in place is left out): each name into
 * names, where the tensor was made (the program's innermost frame) into made, at most max; how many. */
int vw_fact_held_on(struct vw_model *m, const struct vw_case *k, int64_t dev, char (*names)[128],
                    struct vw_frame *made, int max);
/* A statement over the source facts of `file` (as a frame names it: relative to the cwd when under it), the
 * file bound as ?1 and the facts' file name joined as fs. */
#define VW_FACT_FILE_MATCH                                                                                             \
    "(fs.text = ?1 OR (substr(?1, 1, 1) <> '/' AND substr(fs.text, -length(?1) - 1) = '/' || ?1))"
/* The first value of source fact `key` at `line` of file (line < 0: any line, the most frequent value), into
 * out; 1 when found. */
int vw_fact_value(struct vw_model *m, const char *file, int line, const char *key, char *out, size_t size);
/* An `args` fact's text (FUNC \t ARG0 \t ARG1 ...) copied into v and split in place into field[] (FUNC
 * first); how many fields (0: a value no producer writes, refused: vw_model_refuse). */
int vw_fact_args_fields(struct vw_model *m, const char *file, const char *text, char *v, size_t vsize, char **field,
                        int max);
/* The source facts of a line, into the caller's struct (the model keeps the lines asked for: see model.c). */
int vw_src_at(struct vw_model *m, const char *file, int line, struct vw_src *out);
/* A source fact of (file, line) whose value has no shape a producer writes (validate.c): refused, never used;
 * the first one is kept in m->inconsistent, and no fix is made of the trace's facts after it. */
void vw_model_refuse(struct vw_model *m, const char *file, int line, const char *key, const char *why);
/* The length of a method call's receiver when the call (as the source facts write its callee: "model.to") is
 * that method (DT_METHOD_* of common/op_families.h: "to"), else 0. */
size_t vw_src_call_method(const struct vw_src_call *c, const char *method);
/* A Python constructor's frame ("Net.<locals>.Layer.__init__"): the length of its class's qualified name
 * ("Net.<locals>.Layer"), else 0. */
size_t vw_py_constructor(const char *function);
/* 1 when name is an item of the comma-separated list (a binds or params fact). */
int vw_list_has(const char *list, const char *name);
/* Whether the def line def is a method of a torch.nn.Module: the producer's check of the class at run time (schema
 * 15), else its bases as written naming torch's module class ("nn.Module", "torch.nn.Module", "Module":
 * DT_PY_MODULE_CLASS). */
int vw_py_module_def(const struct vw_src *def);
/* 1 when the statement at (file, line) binds name (a plain name among its targets). */
int vw_src_binds(const struct vw_src *s, const char *name);
/* 1 when statement s of file stands in a function (or class) defined inside `function`, at any depth, as the
 * source facts say: the def line of its function (function_line) is a statement of `function`, or of one
 * defined there. Not when s is of `function` itself. */
int vw_src_nested_in(struct vw_model *m, const char *file, const struct vw_src *s, const char *function);

/* The language of a file, as its producer recorded it, and the name an operand had at a native call (model.c:
 * facts, read for the code a fix writes and for the report). */
enum vw_lang { VW_LANG_NONE, VW_LANG_PYTHON, VW_LANG_C, VW_LANG_CXX };
#define VW_LANG_BIT(l) (1u << (l))
#define VW_LANGS_PY VW_LANG_BIT(VW_LANG_PYTHON)
#define VW_LANGS_PY_C (VW_LANGS_PY | VW_LANG_BIT(VW_LANG_C))
#define VW_LANGS_PY_CXX (VW_LANGS_PY | VW_LANG_BIT(VW_LANG_CXX))
#define VW_LANGS_ALL (VW_LANGS_PY_C | VW_LANG_BIT(VW_LANG_CXX))
/* The language of the file at site, as its producer recorded it (none: no facts, no code). */
enum vw_lang vw_code_lang(struct vw_model *m, const struct vw_frame *site);
/* The name the program passed operand o by at the failing native call (the argument's text, when a plain
 * identifier), from the call-site facts; "" when not known. */
const char *vw_code_operand_name(struct vw_model *m, const struct vw_case *k, const struct vw_operand *o, char *buf,
                                 size_t size);

/* ---------------------------------------------------------------- the rules (rules/) */

#define VW_MAX_EVIDENCE 6

/* The kind of change a fix proposes, with its parameters in the fix (site, edits, code): the data a rule
 * returns. */
enum vw_fix_kind {
    VW_FIX_ADVICE,           /* words only: no code the program's facts allow */
    VW_FIX_MOVE_AFTER,       /* move a named tensor after a statement that binds it (x = x.to(device)) */
    VW_FIX_MOVE_BEFORE,      /* move a named tensor right before the statement that uses it */
    VW_FIX_DEVICE_ARG,       /* device= at the call of the factory that made it */
    VW_FIX_PASS_DEVICE,      /* pass the device to a function whose device parameter defaults to the cpu */
    VW_FIX_MOVE_CALL,        /* .to(device) on a call inside an expression (a module constructed inline, a copy) */
    VW_FIX_DROP_COPY,        /* take the copy off the device out of the expression (.cpu() removed) */
    VW_FIX_REGISTER_BUFFER,  /* register a plain attribute or field as its module's buffer */
    VW_FIX_MOVE_MODULE,      /* move the module once it is made */
    VW_FIX_MOVE_MODEL_FIRST, /* the program's own move of the model, before the statement that made the tensor */
    VW_FIX_RELOAD_STATE,     /* load the optimizer's state dict back after the move, which places each state */
    VW_FIX_NKINDS
};
/* The kind's name, as `devtrace rules` and docs/rules.md print it. */
const char *vw_fix_kind_name(enum vw_fix_kind kind);
/* What the kind changes, in one line. */
const char *vw_fix_kind_doc(enum vw_fix_kind kind);

/* The sentence a fix says, chosen by its rule; words.c writes it from the parameters (struct vw_fix_words)
 * and the case's odd operand and intended device. */
enum vw_say {
    VW_SAY_RULE,               /* the rule wrote its own sentence (a rule not yet moved to words.c) */
    VW_SAY_CHECKPOINT_LOAD,    /* load with map_location=EXPR, or move the operand after loading */
    VW_SAY_COPIED_OFF_DEVICE,  /* copied off the device here: keep it there, or copy it back */
    VW_SAY_COPIED_ELSEWHERE,   /* copied to another device than the op's */
    VW_SAY_SOURCE_MOVED_FIRST, /* made from NAME before the move at AT2: that move goes first */
    VW_SAY_SOURCE_MOVED_AFTER, /* made from NAME before this move: make it after the move */
    VW_SAY_STATE_MOVE_MODEL,   /* optimizer state of parameter NAME, left behind by its move to DEV */
    VW_SAY_STATE_RELOAD,       /* the same, made by a step before the move: reload the state dict */
    VW_SAY_PASS_DEVICE,        /* pass the device to FUNC at FRAME: EXPR defaults to TEXT in FRAME2 */
    VW_SAY_PEER_MOVED,         /* move it where its peer NAME is moved */
    VW_SAY_ROOT_PEER_MOVED,    /* move NAME, which it is computed from (at AT), where NAME2 made with it is */
    VW_SAY_SIBLING_MOVED,      /* move it where NAME2 (or "the tensor"), made with it at AT, is moved */
    VW_SAY_TEMPORARY_DEVICE,   /* make it on the device inside the expression at AT: FUNC(..., TEXT) */
    VW_SAY_TEMPORARY_MOVE,     /* move it where it is made, inside the expression at AT: FUNC(...)TEXT (no device=) */
    VW_SAY_THROUGH_ARGUMENT,   /* move NAME, the failing native call's argument that holds it, where it is bound */
    VW_SAY_MOVE_AT_CALL,       /* move it where FRAME calls FUNC, which made it at AT with no device to follow: EXPR */
    VW_SAY_DEVICE_FOLLOWED_COPY, /* made at AT2 with device=EXPR, which follows NAME, copied off the device at AT */
    VW_SAY_INPUT_NOT_MOVED,    /* move NAME where FRAME uses it: the program moves its inputs at AT (COUNT: made
                                * with it, on another path) */
};

/* The parameters of a fix's sentence (what each enum vw_say reads is said there). */
struct vw_fix_words {
    enum vw_say say;
    int64_t dev;                   /* a device besides the operand's and the intended one */
    char name[256], name2[256];    /* the tensors, parameters or peers it names */
    char expr[160];                /* a device expression of the program */
    char func[256];                /* a callee */
    char text[200];                /* an argument as written, a parameter's default */
    struct vw_step at, at2;        /* steps it cites by their site */
    struct vw_frame frame, frame2; /* frames it names: a call's, a function's */
    int count;                     /* more calls of FUNC fixed in the same statement */
};

/* What a rule proposes. */
struct vw_fix {
    const char *rule;      /* the rule's id */
    enum vw_fix_kind kind; /* the change, with its parameters below */
    /* what the advice says, as parameters: words.c writes text from them */
    struct vw_fix_words words;
    char text[2048];     /* the advice, in the program's names */
    struct vw_step site; /* where the change goes (after this line's statement) */
    int has_site;
    char code[600]; /* the code to add there (lines split by newlines), or "" */
    int before;     /* the code goes before the site's statement, not after it */
    int replace;    /* the code is edits inside the statement (an argument added to calls), not a line */
    struct vw_edit {
        int line, col;  /* where text goes: before column col (0-based) of line */
        int del;        /* characters removed there first (".cpu()") */
        char text[200]; /* what is inserted (", device=device") */
    } edits[4];
    int nedits;
    int inconsistent; /* the rule's code was dropped: a fact it rests on, or the code, has no producer's shape */
    char evidence[VW_MAX_EVIDENCE][200]; /* the facts the rule used, as a person reads them */
    int nevidence;
};

struct vw_rule_ctx; /* what one diagnosis shares between its rules (rules/rule.h) */

/* One rule of the registry (viewer/rules/<id>.c, listed in priority order by rules/registry.c). */
struct vw_rule {
    const char *id;
    const char *summary; /* one line: the mechanism it recognizes (README's rule table) */
    const char *doc;     /* one paragraph: what it explains, why it happens, and the fix it proposes */
    const char *example; /* the bug in a few words of code, and where a fixture or example shows it */
    unsigned fixes;      /* the kinds of fix it may return: a bit (1u << VW_FIX_*) per kind */
    unsigned langs;      /* the languages of the programs it explains: a bit (VW_LANG_BIT(VW_LANG_*)) per language,
                          * each with its fixtures (tests/rules/: Python; c/: C on libdtrt; libtorch programs: C++) */
    /* 1 and *fix filled when the rule fits the case */
    int (*match)(struct vw_rule_ctx *cx, struct vw_fix *fix);
};

extern const struct vw_rule *const vw_rules[]; /* in priority order */
extern const int vw_nrules;
/* The rule with that id, or NULL (for tests and `devtrace rules ID`). */
const struct vw_rule *vw_rule_find(const char *id);

/* The first rule that fits, in priority order; 0 when none does (no odd operand). */
int vw_diagnose(struct vw_model *m, const struct vw_case *k, struct vw_fix *fix);

/* ---------------------------------------------------------------- the fix's words (words.c) */

/* Writes fix->text from fix->words, the case's odd operand and its intended device (VW_SAY_RULE: leaves it as
 * the rule wrote it). */
void vw_fix_words(const struct vw_case *k, struct vw_fix *fix);

/* ---------------------------------------------------------------- source text (source.c) */

#define VW_SNIP_WIDTH 160 /* bytes of a source line shown */
/* The largest source file read (bytes): a longer one is "source not available" (docs/security.md). */
#define VW_SOURCE_MAX_BYTES (8 << 20)
#define VW_SOURCE_MAX_TEXT  "8 MiB"
/* The path of a trace's source file as it may be read now (as named, or relative to the directory the
 * program ran in), resolved by realpath, into buf: NULL unless it lies under the source root. */
const char *vw_source_path(struct vw_trace *t, const char *file, char *buf, size_t size);
/* Why that file cannot be shown ("not found", "outside the source root ...", "not a regular file", ...):
 * a constant or buf. */
const char *vw_source_unavailable(struct vw_trace *t, const char *file, char *buf, size_t size);
/* That file opened for reading when it is a regular file of at most VW_SOURCE_MAX_BYTES; else NULL. */
FILE *vw_source_open(struct vw_trace *t, const char *file);
/* Lines lo..hi of a source file (1-based, tabs kept, newline dropped); the number read. */
int vw_source_lines(struct vw_trace *t, const char *file, int lo, int hi, char (*text)[VW_SNIP_WIDTH + 1]);
/* Line number `line` of the fixed file, orig as read, with the fix's edits on it (malloc'd); NULL when an
 * edit does not fit the line (the file changed). */
char *vw_edited_line(const struct vw_fix *fix, int line, const char *orig);
/* Where a fix's code goes: after line *after (0: at the top), as *lines (malloc'd), indented; 0 when the
 * source facts do not say. */
int vw_fix_place(struct vw_model *m, const struct vw_fix *fix, int *after, char **lines);
/* The fix as a unified diff of the file it changes (a/ and b/ prefixes off: patch -p0); put writes a line
 * of source. 0 when the file cannot be read or the fix has no code. */
int vw_fix_diff(struct vw_model *m, const struct vw_fix *fix, FILE *f, void (*put)(FILE *, const char *));

/* ---------------------------------------------------------------- code per language (code.c) */

/* The program's own expression for device dev to write into a fix at site (its `device` variable,
 * args.device, self.device, a peer's .device), or a string literal; into buf. */
const char *vw_device_expr(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                           char *buf, size_t size);

/* The same, only where the program's own expression or a peer's is bound at site (1-6 of code.c's list): ""
 * where vw_device_expr would fall back to a module's device or a literal. */
const char *vw_device_expr_bound(struct vw_model *m, const struct vw_case *k, int64_t dev,
                                 const struct vw_frame *site, char *buf, size_t size);

/* Python: site is in a method of an nn.Module class that has parameters (model code, which runs wherever its
 * module was moved): the module's own device, next(self.parameters()).device, into buf; else "". The last
 * program expression vw_device_expr tries before a literal. */
const char *vw_code_module_device(struct vw_model *m, const struct vw_case *k, int64_t dev,
                                  const struct vw_frame *site, char *buf, size_t size);

/* Python: the device of a peer of k's failing op on dev (an operand there, not the odd one) by a name of it
 * that is bound at site ("x.device"), into buf; "" when none is. */
const char *vw_peer_device_expr(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                                char *buf, size_t size);

/* Python: 1 when the program moves to dev (cuda:0) in the .cuda() idiom and names no device a fix could use at
 * site (vw_device_expr_bound finds none): its moves before k's failing op include `X.cuda()` and none names a
 * device (.to(device)). guard: the condition under which the nearest such move runs (its guard fact: `if
 * args.cuda:`, site's function's first, then its file's), when its names can be written at site; "" when that
 * move runs unguarded. 0 as well when the move is guarded by a condition that cannot be written at site. A fix
 * then moves the same way, under the same condition (the program's cpu path stays). */
int vw_code_cuda_idiom(struct vw_model *m, const struct vw_case *k, int64_t dev, const struct vw_frame *site,
                       char *guard, size_t gsize);
/* Python: whether guard, the condition of the program's move at move, can be written at site (code-shaped, its
 * names bound there, as vw_code_cuda_idiom asks of the guard it returns). */
int vw_code_guard_usable(struct vw_model *m, const struct vw_frame *site, const struct vw_frame *move,
                         const char *guard);
/* Python: `NAME = NAME.cuda()` (in_place: `NAME.cuda()`, a module), after `if GUARD: ` when guard is not ""; out
 * "" when name or guard is not code-shaped. */
void vw_code_cuda_move(const char *name, const char *guard, int in_place, char *out, size_t size);
/* The statement that moves `name` to the device expression expr, in site's language, into out; 0 when the
 * language is not known. */
int vw_code_move(struct vw_model *m, const struct vw_frame *site, const char *name, const char *expr, char *out,
                 size_t size);
/* Native code: 1 when a statement of site's function before it binds `name` in a block that holds site (the
 * variable is in scope there). */
/* The one module (a local of type dt_module *, from the C producer's module_var fact) that the statement at
 * site declares, into buf; "" when none, or more than one. */
const char *vw_code_module_var(struct vw_model *m, const struct vw_frame *site, char *buf, size_t size);
/* C on libdtrt: the module a tensor was made for, when a function of the program was building it: of the frames
 * of made's stack whose statement declares one module (a dt_module * local: net = make_net(), model =
 * load_model(path) in its caller), the innermost where the program's own device expression is in scope (a
 * helper that builds and returns the module has none: its caller keeps it), else the innermost; its variable
 * into buf and that frame into *at; "" when none. */
const char *vw_code_module_holder(struct vw_model *m, const struct vw_case *k, const struct vw_step *made,
                                  struct vw_frame *at, char *buf, size_t size);
/* C on libdtrt: the program's own module move at `move` (`dt_module_to(model, dev);`, from its call-site
 * facts), to be written before the statement of the move's function that led to `made` (the call that made
 * it, or the frame of its stack in that function), where the move's names are in scope: that frame into *at,
 * the code into out; 0 when there is no such place. */
int vw_code_move_first(struct vw_model *m, const struct vw_step *move, const struct vw_step *made, struct vw_frame *at,
                       char *out, size_t size);
/* C on libdtrt: after the program's module move at `move`, the optimizer's state put where the parameters
 * now are by the runtime's own state-dict round trip (dt_optimizer_load_state_dict places each state by its
 * parameter), for the one optimizer (a dt_optimizer * local) its function declared before; into out, 0 when
 * that optimizer is not known. */
int vw_code_state_replace(struct vw_model *m, const struct vw_step *move, char *out, size_t size);
/* C on libdtrt: a tensor made into a field of the program's own struct (self->scale = ..., the binds_attr
 * fact) in a function that declares one module (a dt_module * local): its registration as that module's
 * buffer (dt_module_register_buffer(m, "scale", self->scale);), after the later of the two statements, whose
 * frame goes into *at; 0 when either is not known. */
int vw_code_register_field(struct vw_model *m, const struct vw_frame *made, struct vw_frame *at, char *out,
                           size_t size);
/* Native code, where the failing call does not name operand o (it reaches the op through a module's forward:
 * dt_module_forward(model, inputs)): the one plain identifier among the failing statement's call arguments
 * that is no module, optimizer or device variable and whose latest binding in that function is no move (a
 * binding after the operand was made there, when it was made in that function); into buf, and that binding's
 * frame into *at; "" when there is not exactly one. */
const char *vw_code_operand_binding(struct vw_model *m, const struct vw_case *k, const struct vw_operand *o,
                                    struct vw_frame *at, char *buf, size_t size);
int vw_code_in_scope(struct vw_model *m, const struct vw_frame *site, const char *name);
/* Python: a module the failing op's stack calls as an attribute of an object of the program's own class, that
 * holds the program's device (self.model(xb) in Trainer.step, self.dev): where that class binds the attribute, or
 * after the same function binds the device, the move `self.model.to(self.dev)`: the statement's frame into *at
 * (*before: the code goes before it), the frame that calls it into *caller, the attribute into attr, the code
 * into code; 1 when written. */
int vw_code_module_in_holder(struct vw_model *m, const struct vw_case *k, struct vw_frame *at, int *before,
                             struct vw_frame *caller, char *attr, size_t asize, char *code, size_t size);

/* Python: whether name is bound in site's function before site's statement (a parameter, an earlier statement
 * of that function, not a nested one's). */
int vw_code_bound_before(struct vw_model *m, const struct vw_frame *site, const char *name);

/* C++: the frame of the program's code, on the stack that made `made`, whose statement declares a libtorch
 * module variable (`Net model;`, `torch::nn::Linear fc(4, 1);`): made while that module was constructed,
 * it is the module's. That frame into at, the variable into name and the statement that moves the module to
 * k's intended device (the program's device expression there: `fc->to(device);` for a ModuleHolder,
 * `model.to(device);` for a module) into code; 0 when there is none. */
/* Edits inside a statement, in Python, and the code shown for them (what the report prints as the fix's code):
 * .to(EXPR) after a call's closing parenthesis (edit), "FUNC(...).to(EXPR)" (shown). */
void vw_code_call_to(const char *func, const char *expr, char *edit, size_t esize, char *shown, size_t ssize);
/* "FUNC(..., ARG)": an argument added to a call, shown (ARG as vw_code_device_arg wrote it, its ", " dropped). */
void vw_code_call_arg_shown(const char *func, const char *arg, char *out, size_t size);
/* NAME=EXPR added to the call FUNC (edit: with ", " when the call has arguments and no trailing comma), and
 * "FUNC(..., NAME=EXPR)" (shown). */
void vw_code_keyword_arg(const char *func, const char *name, const char *expr, int has_args, int trailing_comma,
                         char *edit, size_t esize, char *shown, size_t ssize);
/* A call taken out of an expression, keeping its receiver: "FUNC() -> RECEIVER" (the first kept bytes of FUNC). */
void vw_code_drop_call(const char *func, size_t kept, char *shown, size_t size);
/* The module attribute ATTR (self.NAME) registered as a buffer before it is assigned, deleted first when the
 * function set it before (again): "del self.NAME\nself.register_buffer("NAME", None)". */
void vw_code_register_attr(const char *attr, int again, char *out, size_t size);
/* Python: OBJ.register_buffer(NAME, VALUE), a buffer registered by a name and value the program computes
 * (what setattr(OBJ, NAME, VALUE) set as a plain attribute). */
void vw_code_register_named(const char *obj, const char *name, const char *value, char *out, size_t size);
/* The object moved in place: "OBJ.to(EXPR)". */
void vw_code_object_to(const char *obj, const char *expr, char *out, size_t size);
/* The text added before the closing parenthesis of the factory call FUNC starting at `line` of site's file
 * (has_args: it has arguments) to make its tensor on the device expression expr: Python's `device=EXPR`;
 * C++'s TensorOptions argument, the device itself (`torch::randn({n, k}, device)`), only where the call's last
 * argument is not already options or a dtype (`torch::kFloat`). 0 when none can be written. */
int vw_code_device_arg(struct vw_model *m, const struct vw_frame *site, int line, const char *func, int has_args,
                       int trailing_comma, const char *expr, char *out, size_t size);
int vw_code_module_move(struct vw_model *m, const struct vw_case *k, const struct vw_step *made, struct vw_frame *at,
                        char *name, size_t nsize, char *code, size_t size);

#endif
