/* The trace's tables and columns, described once for the tracer (which
 * creates them and fills them by position) and the viewer (which checks a
 * trace against them when it opens one): name, columns in order with their
 * SQL declaration, table constraint, and per column the check the viewer
 * applies. docs/trace-format.md says what each column means; the views, the
 * indexes and the kinds rows are SQL text in tracer/core/schema.c. */
#ifndef DEVTRACE_TRACE_SCHEMA_H
#define DEVTRACE_TRACE_SCHEMA_H

#include <stdint.h>
#include <string.h>

/* PRAGMA application_id of a trace ("DTRC") and PRAGMA user_version: the
 * schema version, bumped on any change to the tables below, their meaning
 * or the views'. 10: source_facts (and its view source_facts_v).
 * 11: roles (and v_roles): a tensor's role recorded by its producer
 * (dtp_tensor_role, probe ABI 4), such as an optimizer's state of a
 * parameter, which older traces say only by a name prefix.
 * 12: roles.role 2 (module_buffer): a buffer a module registered.
 * 13: roles.role 3 (parameter): a parameter, which older traces say only
 * by the name of the call that made it (tensors.what "nn.Parameter");
 * the source fact setattr says whether its object is the method's receiver.
 * 14: the source fact device_arg: which parameter of a called function a
 * call hands a device.
 * 15: the source fact module_class: a method's class is a torch.nn.Module (the
 * producer asks the class itself, whatever its bases are called).
 * 16: the source fact guard: the condition under which a line's move runs
 * (`if args.cuda: model.cuda()`), in a program that names no device.
 * The viewer reads versions TS_SCHEMA_MIN_VERSION to TS_SCHEMA_VERSION: a
 * table added since (ts_table_since) is absent from an older trace, whose
 * other tables are as described. */
#define TS_APPLICATION_ID     0x44545243
#define TS_SCHEMA_VERSION     16
#define TS_SCHEMA_MIN_VERSION 9
/* The first version whose producers give every parameter its role (roles.role 3). */
#define TS_ROLE_PARAMETER_SINCE 13

/* ---------------------------------------------------------------- checks */

/* What the viewer requires of a column's values (NULL always passes). Only
 * what the writer guarantees for every trace it leaves readable: one cut
 * short (a killed program, read with its WAL), lossy with dropped events,
 * written for libdtrt, the libtorch observer or the PyTorch adapter.
 * References to tensors (op arguments and outputs, transfers, derived.src,
 * names, frees) and to ops are not checked: a tensor or op may predate
 * tracing or be dropped. Values the producer passes through the probe ABI
 * are checked only where the writer makes them so (dtype and origin: an
 * unknown one is written as `other`). */
enum ts_check {
    TS_CHECK_NONE = 0, /* anything */
    TS_CHECK_REF,      /* the id of a row of table `ref` (its INTEGER PRIMARY KEY) */
    TS_CHECK_PARENT,   /* an earlier row of the same table (parent < id): the viewer's stack check */
    TS_CHECK_RANGE,    /* an integer from lo to hi */
};

#define TS_NOCHECK  .check = TS_CHECK_NONE
#define TS_REFS(t)  .check = TS_CHECK_REF, .ref = TS_T_##t
#define TS_PARENT   .check = TS_CHECK_PARENT
#define TS_IN(l, h) .check = TS_CHECK_RANGE, .lo = (l), .hi = (h)
#define TS_NONNEG   TS_IN(0, INT64_MAX)

/* ---------------------------------------------------------------- tables */

/* T(table, noun, constraint, options, key, counted): noun names one of its
 * rows in the viewer's messages ("is not a recorded <noun>"); constraint
 * follows the columns inside the parentheses of its CREATE TABLE; options
 * follow them; key is the SQL expression that names a row in a message
 * (NULL: its rowid); counted is 1 when the writer numbers its rows 1, 2,
 * 3... as it adds them, so a trace holds ids 1 to N with no gap (the rows
 * of a commit are in it whole or not at all), and a reference to it is
 * checked as a range. The order is the order of the CREATE TABLE
 * statements. */
#define TS_TABLES(T)                                                                                                   \
    T(meta, "meta key", "", "WITHOUT ROWID", "'key ' || quote(key)", 0)                                                \
    T(strings, "string", "", "", NULL, 1)                                                                              \
    T(threads, "thread", "", "", NULL, 1)                                                                              \
    T(devices, "device", "", "", NULL, 0)                                                                              \
    T(modules, "module", "", "", NULL, 1)                                                                              \
    T(frames, "native stack", "", "", NULL, 1)                                                                         \
    T(py_code, "Python code object", "", "", NULL, 1)                                                                  \
    T(py_frames, "Python stack", "", "", NULL, 1)                                                                      \
    T(tensor_attrs, "tensor_attrs row", "", "", NULL, 1)                                                               \
    T(tensor_rows, "tensor", "", "", NULL, 0)                                                                          \
    T(derived, "derived tensor", "", "", NULL, 0)                                                                      \
    T(ops, "op", "", "", NULL, 0)                                                                                      \
    T(op_args_more, "op argument", "PRIMARY KEY(op, pos)", "WITHOUT ROWID", "'op ' || op || ' pos ' || pos", 0)        \
    T(op_outputs_more, "op output", "PRIMARY KEY(op, pos)", "WITHOUT ROWID", "'op ' || op || ' pos ' || pos", 0)       \
    T(frees_late, "free", "", "", NULL, 0)                                                                             \
    T(misc_events, "event", "", "", NULL, 0)                                                                           \
    T(names, "name", "", "", NULL, 0)                                                                                  \
    T(transfers, "transfer", "", "", NULL, 0)                                                                          \
    T(errors, "error", "", "", NULL, 0)                                                                                \
    T(cuda_calls, "CUDA call", "", "", NULL, 0)                                                                        \
    T(cuda_activity, "CUDA activity record", "", "", NULL, 0)                                                          \
    T(throw_sites, "throw site", "", "", NULL, 0)                                                                      \
    T(kinds, "event kind", "", "", NULL, 0)                                                                            \
    T(source_facts, "source fact", "PRIMARY KEY(file, line, key, value)", "WITHOUT ROWID",                             \
      "'file ' || file || ' line ' || line || ' key ' || key", 0)                                                      \
    T(roles, "tensor role", "", "", NULL, 0)

/* ---------------------------------------------------------------- columns */

/* C(table, column, declaration, check), in the table's column order. */
#define TS_COLUMNS_meta(C)                                                                                             \
    C(meta, key, "TEXT PRIMARY KEY", TS_NOCHECK)                                                                       \
    C(meta, value, "", TS_NOCHECK)

#define TS_COLUMNS_strings(C)                                                                                          \
    C(strings, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                  \
    C(strings, text, "TEXT NOT NULL", TS_NOCHECK)

#define TS_COLUMNS_threads(C)                                                                                          \
    C(threads, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                  \
    C(threads, tid, "INTEGER", TS_NOCHECK)                                                                             \
    C(threads, name, "TEXT", TS_NOCHECK)                                                                               \
    C(threads, events, "INTEGER", TS_NONNEG)                                                                           \
    C(threads, dropped, "INTEGER", TS_NONNEG)

#define TS_COLUMNS_devices(C)                                                                                          \
    C(devices, device, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                              \
    C(devices, name, "TEXT", TS_NOCHECK)                                                                               \
    C(devices, backend, "TEXT", TS_NOCHECK)

#define TS_COLUMNS_modules(C)                                                                                          \
    C(modules, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                  \
    C(modules, path, "TEXT", TS_NOCHECK)                                                                               \
    C(modules, base, "INTEGER", TS_NOCHECK)                                                                            \
    C(modules, start, "INTEGER", TS_NOCHECK)                                                                           \
    C(modules, end, "INTEGER", TS_NOCHECK)                                                                             \
    C(modules, build_id, "TEXT", TS_NOCHECK)                                                                           \
    C(modules, loaded_seq, "INTEGER", TS_NOCHECK)                                                                      \
    C(modules, unloaded_seq, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_frames(C)                                                                                           \
    C(frames, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                   \
    C(frames, parent, "INTEGER", TS_PARENT)                                                                            \
    C(frames, ip, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_py_code(C)                                                                                          \
    C(py_code, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                  \
    C(py_code, file, "INTEGER", TS_REFS(strings))                                                                      \
    C(py_code, name, "INTEGER", TS_REFS(strings))                                                                      \
    C(py_code, first_line, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_py_frames(C)                                                                                        \
    C(py_frames, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                \
    C(py_frames, parent, "INTEGER", TS_PARENT)                                                                         \
    C(py_frames, code, "INTEGER", TS_REFS(py_code))                                                                    \
    C(py_frames, line, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_tensor_attrs(C)                                                                                     \
    C(tensor_attrs, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                             \
    C(tensor_attrs, dtype, "INTEGER", TS_IN(0, 8))                                                                     \
    C(tensor_attrs, shape, "INTEGER", TS_REFS(strings))                                                                \
    C(tensor_attrs, strides, "INTEGER", TS_REFS(strings))                                                              \
    C(tensor_attrs, storage_offset, "INTEGER", TS_NOCHECK)                                                             \
    C(tensor_attrs, device, "INTEGER", TS_NOCHECK)                                                                     \
    C(tensor_attrs, nbytes, "INTEGER", TS_NOCHECK)                                                                     \
    C(tensor_attrs, origin, "INTEGER", TS_IN(0, 5))                                                                    \
    C(tensor_attrs, what, "INTEGER", TS_REFS(strings))                                                                 \
    C(tensor_attrs, out_pos, "INTEGER", TS_NONNEG)                                                                     \
    C(tensor_attrs, detail, "INTEGER", TS_REFS(strings))                                                               \
    C(tensor_attrs, name, "INTEGER", TS_REFS(strings))

#define TS_COLUMNS_tensor_rows(C)                                                                                      \
    C(tensor_rows, id, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                              \
    C(tensor_rows, seq, "INTEGER", TS_NOCHECK)                                                                         \
    C(tensor_rows, t, "INTEGER", TS_NOCHECK)                                                                           \
    C(tensor_rows, thread, "INTEGER", TS_REFS(threads))                                                                \
    C(tensor_rows, stack, "INTEGER", TS_REFS(frames))                                                                  \
    C(tensor_rows, pystack, "INTEGER", TS_REFS(py_frames))                                                             \
    C(tensor_rows, attrs, "INTEGER", TS_REFS(tensor_attrs))                                                            \
    C(tensor_rows, storage, "INTEGER", TS_NOCHECK)                                                                     \
    C(tensor_rows, op, "INTEGER", TS_NOCHECK)                                                                          \
    C(tensor_rows, free_seq, "INTEGER", TS_NOCHECK)                                                                    \
    C(tensor_rows, free_t, "INTEGER", TS_NOCHECK)                                                                      \
    C(tensor_rows, free_thread, "INTEGER", TS_REFS(threads))                                                           \
    C(tensor_rows, free_stack, "INTEGER", TS_REFS(frames))                                                             \
    C(tensor_rows, free_pystack, "INTEGER", TS_REFS(py_frames))

#define TS_COLUMNS_derived(C)                                                                                          \
    C(derived, tensor, "INTEGER PRIMARY KEY", TS_REFS(tensor_rows))                                                    \
    C(derived, src, "INTEGER NOT NULL", TS_NOCHECK)

#define TS_COLUMNS_ops(C)                                                                                              \
    C(ops, op, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                      \
    C(ops, name, "INTEGER", TS_REFS(strings))                                                                          \
    C(ops, seq, "INTEGER", TS_NOCHECK)                                                                                 \
    C(ops, len, "INTEGER", TS_NONNEG)                                                                                  \
    C(ops, thread, "INTEGER", TS_REFS(threads))                                                                        \
    C(ops, t, "INTEGER", TS_NOCHECK)                                                                                   \
    C(ops, dur, "INTEGER", TS_NOCHECK)                                                                                 \
    C(ops, stack, "INTEGER", TS_REFS(frames))                                                                          \
    C(ops, pystack, "INTEGER", TS_REFS(py_frames))                                                                     \
    C(ops, status, "INTEGER", TS_NOCHECK)                                                                              \
    C(ops, nargs, "INTEGER", TS_NONNEG)                                                                                \
    C(ops, arg0_name, "INTEGER", TS_REFS(strings))                                                                     \
    C(ops, arg0_tensor, "INTEGER", TS_NOCHECK)                                                                         \
    C(ops, arg0_device, "INTEGER", TS_NOCHECK)                                                                         \
    C(ops, arg1_name, "INTEGER", TS_REFS(strings))                                                                     \
    C(ops, arg1_tensor, "INTEGER", TS_NOCHECK)                                                                         \
    C(ops, arg1_device, "INTEGER", TS_NOCHECK)                                                                         \
    C(ops, out0, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_op_args_more(C)                                                                                     \
    C(op_args_more, op, "INTEGER", TS_NOCHECK)                                                                         \
    C(op_args_more, pos, "INTEGER", TS_IN(2, INT64_MAX))                                                               \
    C(op_args_more, name, "INTEGER", TS_REFS(strings))                                                                 \
    C(op_args_more, tensor, "INTEGER", TS_NOCHECK)                                                                     \
    C(op_args_more, device, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_op_outputs_more(C)                                                                                  \
    C(op_outputs_more, op, "INTEGER", TS_NOCHECK)                                                                      \
    C(op_outputs_more, pos, "INTEGER", TS_NONNEG)                                                                      \
    C(op_outputs_more, tensor, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_frees_late(C)                                                                                       \
    C(frees_late, tensor, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                           \
    C(frees_late, seq, "INTEGER", TS_NOCHECK)                                                                          \
    C(frees_late, t, "INTEGER", TS_NOCHECK)                                                                            \
    C(frees_late, thread, "INTEGER", TS_REFS(threads))                                                                 \
    C(frees_late, stack, "INTEGER", TS_REFS(frames))                                                                   \
    C(frees_late, pystack, "INTEGER", TS_REFS(py_frames))

#define TS_COLUMNS_misc_events(C)                                                                                      \
    C(misc_events, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                             \
    C(misc_events, t, "INTEGER", TS_NOCHECK)                                                                           \
    C(misc_events, thread, "INTEGER", TS_REFS(threads))                                                                \
    C(misc_events, kind, "INTEGER", TS_IN(1, 14))                                                                      \
    C(misc_events, tensor, "INTEGER", TS_NOCHECK)                                                                      \
    C(misc_events, op, "INTEGER", TS_NOCHECK)                                                                          \
    C(misc_events, stack, "INTEGER", TS_REFS(frames))                                                                  \
    C(misc_events, pystack, "INTEGER", TS_REFS(py_frames))                                                             \
    C(misc_events, value, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_names(C)                                                                                            \
    C(names, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                   \
    C(names, tensor, "INTEGER", TS_NOCHECK)                                                                            \
    C(names, name, "INTEGER", TS_REFS(strings))

#define TS_COLUMNS_transfers(C)                                                                                        \
    C(transfers, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                               \
    C(transfers, src, "INTEGER", TS_NOCHECK)                                                                           \
    C(transfers, dst, "INTEGER", TS_NOCHECK)                                                                           \
    C(transfers, src_device, "INTEGER", TS_NOCHECK)                                                                    \
    C(transfers, dst_device, "INTEGER", TS_NOCHECK)                                                                    \
    C(transfers, bytes, "INTEGER", TS_NOCHECK)                                                                         \
    C(transfers, kind, "INTEGER", TS_NOCHECK)                                                                          \
    C(transfers, via, "INTEGER", TS_REFS(strings))

#define TS_COLUMNS_errors(C)                                                                                           \
    C(errors, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                  \
    C(errors, kind, "INTEGER", TS_NOCHECK)                                                                             \
    C(errors, op, "INTEGER", TS_REFS(strings))                                                                         \
    C(errors, message, "TEXT", TS_NOCHECK)                                                                             \
    C(errors, signal, "INTEGER", TS_NOCHECK)                                                                           \
    C(errors, first_arg, "INTEGER", TS_NOCHECK)                                                                        \
    C(errors, other_arg, "INTEGER", TS_NOCHECK)                                                                        \
    C(errors, exception, "TEXT", TS_NOCHECK)                                                                           \
    C(errors, device_a, "TEXT", TS_NOCHECK)                                                                            \
    C(errors, device_b, "TEXT", TS_NOCHECK)                                                                            \
    C(errors, arg, "TEXT", TS_NOCHECK)                                                                                 \
    C(errors, object, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_cuda_calls(C)                                                                                       \
    C(cuda_calls, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                              \
    C(cuda_calls, t, "INTEGER", TS_NOCHECK)                                                                            \
    C(cuda_calls, thread, "INTEGER", TS_REFS(threads))                                                                 \
    C(cuda_calls, stack, "INTEGER", TS_REFS(frames))                                                                   \
    C(cuda_calls, pystack, "INTEGER", TS_REFS(py_frames))                                                              \
    C(cuda_calls, api, "INTEGER", TS_REFS(strings))                                                                    \
    C(cuda_calls, kind, "INTEGER", TS_IN(1, 7))                                                                        \
    C(cuda_calls, dir, "INTEGER", TS_IN(0, 3))                                                                         \
    C(cuda_calls, bytes, "INTEGER", TS_NOCHECK)                                                                        \
    C(cuda_calls, dst, "INTEGER", TS_NOCHECK)                                                                          \
    C(cuda_calls, src, "INTEGER", TS_NOCHECK)                                                                          \
    C(cuda_calls, host, "INTEGER", TS_IN(0, 2))                                                                        \
    C(cuda_calls, device, "INTEGER", TS_NOCHECK)                                                                       \
    C(cuda_calls, peer, "INTEGER", TS_NOCHECK)                                                                         \
    C(cuda_calls, stream, "INTEGER", TS_NOCHECK)                                                                       \
    C(cuda_calls, func, "INTEGER", TS_NOCHECK)                                                                         \
    C(cuda_calls, rc, "INTEGER", TS_NOCHECK)                                                                           \
    C(cuda_calls, dur, "INTEGER", TS_NOCHECK)                                                                          \
    C(cuda_calls, corr, "INTEGER", TS_NOCHECK)

#define TS_COLUMNS_cuda_activity(C)                                                                                    \
    C(cuda_activity, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                           \
    C(cuda_activity, t, "INTEGER", TS_NOCHECK)                                                                         \
    C(cuda_activity, thread, "INTEGER", TS_REFS(threads))                                                              \
    C(cuda_activity, what, "INTEGER", TS_REFS(strings))                                                                \
    C(cuda_activity, kind, "INTEGER", TS_IN(1, 5))                                                                     \
    C(cuda_activity, dir, "INTEGER", TS_IN(0, 3))                                                                      \
    C(cuda_activity, bytes, "INTEGER", TS_NOCHECK)                                                                     \
    C(cuda_activity, host, "INTEGER", TS_IN(0, 2))                                                                     \
    C(cuda_activity, device, "INTEGER", TS_NOCHECK)                                                                    \
    C(cuda_activity, stream, "INTEGER", TS_NOCHECK)                                                                    \
    C(cuda_activity, corr, "INTEGER", TS_NOCHECK)                                                                      \
    C(cuda_activity, start, "INTEGER", TS_NOCHECK)                                                                     \
    C(cuda_activity, dur, "INTEGER", TS_NOCHECK)                                                                       \
    C(cuda_activity, name, "INTEGER", TS_REFS(strings))

#define TS_COLUMNS_throw_sites(C)                                                                                      \
    C(throw_sites, site, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                            \
    C(throw_sites, throws, "INTEGER", TS_NONNEG)                                                                       \
    C(throw_sites, recorded, "INTEGER", TS_NONNEG)

#define TS_COLUMNS_kinds(C)                                                                                            \
    C(kinds, kind, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                  \
    C(kinds, name, "TEXT", TS_NOCHECK)

/* Since schema 10: what the producer knows of the program's source (see
 * the DT_FACT_* keys below), each fact once. */
/* A tensor's role (common/vocab.h's DT_TENSOR_ROLES): seq of its record, the tensor, the role, the tensor it
 * is a role of (the parameter of an optimizer's state; NULL when none), and which of its kind (the state's
 * key). Roles the writer does not know are not written. */
#define TS_COLUMNS_roles(C)                                                                                            \
    C(roles, seq, "INTEGER PRIMARY KEY", TS_NOCHECK)                                                                   \
    C(roles, tensor, "INTEGER", TS_NOCHECK)                                                                            \
    C(roles, role, "INTEGER NOT NULL", TS_IN(1, 3))                                                                    \
    C(roles, of_tensor, "INTEGER", TS_NOCHECK)                                                                         \
    C(roles, key, "INTEGER", TS_REFS(strings))

#define TS_COLUMNS_source_facts(C)                                                                                     \
    C(source_facts, file, "INTEGER", TS_REFS(strings))                                                                 \
    C(source_facts, line, "INTEGER", TS_NONNEG)                                                                        \
    C(source_facts, key, "INTEGER", TS_REFS(strings))                                                                  \
    C(source_facts, value, "INTEGER", TS_REFS(strings))

/* tensor_attrs.shape and .strides are the dims' text, "[D0,D1,...]" (tracer/core/writer_intern.c); a 0-dim
 * tensor's (a scalar's) shape is this: */
#define DT_SHAPE_SCALAR "[]"

/* ---------------------------------------------------------------- source facts */

/* The keys of source_facts (dtp_source_fact), defined here once: the
 * PyTorch adapter's extension exports each as FACT_<NAME> to its Python
 * side, the viewer reads them by these names. Every value is text.
 * docs/source-facts.md says each with an example. Line 0 (the whole file): */
#define DT_FACT_SHA256 "sha256" /* hex SHA-256 of the file's bytes as read */
#define DT_FACT_LINES  "lines"  /* its number of lines */
/* Any line inside a statement: the facts of the innermost statement that
 * holds it (of a compound statement's header: its first line to the line
 * before its body), the same on every line of it: */
#define DT_FACT_STMT          "stmt"          /* "FIRST LAST": the statement's (header's) lines, 1-based */
#define DT_FACT_INDENT        "indent"        /* the leading whitespace of its first line */
#define DT_FACT_OPENS         "opens"         /* "1": a compound header (for, while, if, with, def, class, try...) */
#define DT_FACT_BODY_INDENT   "body_indent"   /* a header's: the leading whitespace of its body's first statement */
#define DT_FACT_FUNCTION      "function"      /* qualified name of the enclosing function ("Net.forward"), "<module>" */
#define DT_FACT_FUNCTION_LINE "function_line" /* its def line; 0 at the top level */
#define DT_FACT_LOOP          "loop"          /* innermost for/while of the same function: "FIRST LAST BODY_INDENT" */
#define DT_FACT_BINDS         "binds"         /* names it binds, comma-separated */
#define DT_FACT_BINDS_KIND    "binds_kind"    /* "unpack", "tuple", "call" or "other" */
#define DT_FACT_BINDS_ATTR    "binds_attr"    /* "self.NAME" it assigns, comma-separated */
#define DT_FACT_ATTR_AGAIN    "attr_again"    /* of its binds_attr, those set by an earlier statement of the function */
#define DT_FACT_ATTR_FROM     "attr_from"     /* the name one self.NAME is assigned from (self.pe = pe: "pe") */
#define DT_FACT_CLASS_BASES   "class_bases"   /* a method's def line: its class's bases' text, comma-separated */
#define DT_FACT_DEFAULTS      "defaults"      /* a def line: "NAME=DEFAULT" of each parameter with a default, tabs */
#define DT_FACT_PARAMS        "params"        /* a def line: the names of all its parameters, comma-separated */
#define DT_FACT_RETURNS       "returns"       /* "1": a return statement */
#define DT_FACT_RETURN_VALUE  "return_value"  /* its expression's source text */
#define DT_FACT_DEVICE_VAR    "device_var"    /* the name (or "self.NAME") it binds to a device expression */
#define DT_FACT_SETATTR       "setattr"       /* a statement setattr(OBJ, NAME, VALUE) alone: "OBJ\tNAME\tVALUE\tR" */
/* Per line, for what starts on that line: */
#define DT_FACT_CALL        "call"        /* "FUNC\tDEVICE\tTEMP\tEND_LINE\tEND_COL\tHAS_ARGS[\tTRAILING_COMMA]" */
#define DT_FACT_DEVICE_EXPR "device_expr" /* a device expression's source text (.to(X), .cuda(X), device=X) */
#define DT_FACT_DEVICE_OF   "device_of"   /* NAME, of such an expression that is NAME.device: what is made or moved
                                           * there follows the tensor NAME holds (since schema 13) */
#define DT_FACT_MODULE_CLASS "module_class" /* a method's def line: "1" when its class is a torch.nn.Module, which the
                                             * producer checked on the class at run time (since schema 15) */
#define DT_FACT_GUARD "guard" /* a move's line (.to, .cuda) inside an `if` of its function or a conditional expression
                               * that holds the move: the condition's source text (since schema 16) */
#define DT_FACT_DEVICE_ARG  "device_arg"  /* "FUNC\tPARAM": a call on the line hands the function FUNC (its text) a
                                           * device as the parameter PARAM, a keyword's name or "#N", the Nth
                                           * positional argument (since schema 14) */
/* Written for native (C and C++) files only, by the tracer (tracer/front/cfacts.c): */
#define DT_FACT_LANG      "lang"  /* line 0: "c" or "c++", the language DWARF gives the file's unit */
#define DT_FACT_BLOCK     "block" /* "FIRST LAST": the braces block that holds the statement */
#define DT_FACT_CALL_ARGS "args"  /* per call starting on the line: "FUNC\tARG0\tARG1...", each argument's text */
/* module_var: the locals of a module type it declares, comma-separated: "NAME" (dt_module *, a
 * torch::nn::Module), "NAME->" (a torch::nn::ModuleHolder, moved with ->to) */
#define DT_FACT_MODULE_VAR "module_var"
#define DT_FACT_OPTIMIZER_VAR                                                                                          \
    "optimizer_var" /* the locals of an optimizer type (dt_optimizer *) the statement declares, comma-separated */
#define DT_FACT_MOVE_WRAP                                                                                              \
    "move_wrap" /* per dt_to() move starting on the line: the call wrapping it alone ("must"), or "-" */
/* The facts whose value is one of a few words, those words by name: the producers write them, the viewer reads
 * them into enums and compares those, never the text. lang: */
#define DT_FACT_LANG_C   "c"
#define DT_FACT_LANG_CXX "c++"
/* binds_kind, X(NAME, text): a, b = f() unpacks; x = (a, b) binds a tuple (or list); x = f() a call's value;
 * anything else is other. */
#define DT_BINDS_KINDS(X) X(UNPACK, "unpack") X(TUPLE, "tuple") X(CALL, "call") X(OTHER, "other")
enum dt_binds_kind {
    DT_BINDS_NONE, /* no binds_kind fact (or a word no producer writes) */
#define DT_BINDS_ENUM_(name, text) DT_BINDS_##name,
    DT_BINDS_KINDS(DT_BINDS_ENUM_)
#undef DT_BINDS_ENUM_
};
/* The word of a binds_kind, or NULL for DT_BINDS_NONE. */
static inline const char *dt_binds_kind_text(enum dt_binds_kind k) {
    switch (k) {
#define DT_BINDS_CASE_(name, text)                                                                                     \
    case DT_BINDS_##name: return text;
        DT_BINDS_KINDS(DT_BINDS_CASE_)
#undef DT_BINDS_CASE_
    default: return 0;
    }
}
/* The binds_kind a word names, DT_BINDS_NONE for none. */
static inline enum dt_binds_kind dt_binds_kind_of(const char *text) {
#define DT_BINDS_TEST_(name, text_)                                                                                    \
    if (text && !strcmp(text, text_)) return DT_BINDS_##name;
    DT_BINDS_KINDS(DT_BINDS_TEST_)
#undef DT_BINDS_TEST_
    return DT_BINDS_NONE;
}
/* F(NAME) for every key above, DT_FACT_<NAME>: */
#define DT_FACT_KEYS(F)                                                                                                \
    F(SHA256)                                                                                                          \
    F(LINES)                                                                                                           \
    F(STMT)                                                                                                            \
    F(INDENT)                                                                                                          \
    F(OPENS)                                                                                                           \
    F(BODY_INDENT)                                                                                                     \
    F(FUNCTION)                                                                                                        \
    F(FUNCTION_LINE)                                                                                                   \
    F(LOOP)                                                                                                            \
    F(BINDS)                                                                                                           \
    F(BINDS_KIND)                                                                                                      \
    F(BINDS_ATTR)                                                                                                      \
    F(ATTR_AGAIN)                                                                                                      \
    F(ATTR_FROM)                                                                                                       \
    F(CLASS_BASES)                                                                                                     \
    F(DEFAULTS)                                                                                                        \
    F(PARAMS)                                                                                                          \
    F(RETURNS)                                                                                                         \
    F(RETURN_VALUE)                                                                                                    \
    F(DEVICE_VAR)                                                                                                      \
    F(SETATTR)                                                                                                         \
    F(CALL)                                                                                                            \
    F(DEVICE_EXPR)                                                                                                     \
    F(DEVICE_OF)                                                                                                       \
    F(DEVICE_ARG)                                                                                                      \
    F(MODULE_CLASS)                                                                                                    \
    F(GUARD)                                                                                                           \
    F(LANG)                                                                                                            \
    F(BLOCK)                                                                                                           \
    F(CALL_ARGS)                                                                                                       \
    F(MODULE_VAR)                                                                                                      \
    F(OPTIMIZER_VAR)                                                                                                   \
    F(MOVE_WRAP)

/* ---------------------------------------------------------------- derived names */

/* TS_T_<table>: a table's index in ts_tables. */
#define TS_T_ENUM_(t, noun, constraint, options, key, counted) TS_T_##t,
enum ts_table_id { TS_TABLES(TS_T_ENUM_) TS_NTABLES };

/* TS_<table>_<column>: a column's position in its table (0 first);
 * TS_<table>_NCOLS: its number of columns. */
#define TS_C_ENUM_(t, c, decl, check)                          TS_##t##_##c,
#define TS_T_COLS_(t, noun, constraint, options, key, counted) enum { TS_COLUMNS_##t(TS_C_ENUM_) TS_##t##_NCOLS };
TS_TABLES(TS_T_COLS_)

/* ---------------------------------------------------------------- the description as data */

struct ts_column {
    const char *name; /* as in SQL */
    const char *decl; /* its declaration after the name: type and column constraint ("" for none) */
    enum ts_check check;
    enum ts_table_id ref; /* TS_CHECK_REF: the table it refers to */
    int64_t lo, hi;       /* TS_CHECK_RANGE: the values allowed */
};

struct ts_table {
    const char *name;
    const char *noun;       /* one row, in messages */
    const char *constraint; /* table constraint after the columns, or "" */
    const char *options;    /* after the closing parenthesis ("WITHOUT ROWID"), or "" */
    const char *key;        /* SQL naming a row in messages; NULL: its rowid */
    int counted;            /* ids 1 to N, no gap (references checked as a range) */
    const struct ts_column *cols;
    int ncols;
};

/* Every table, in TS_TABLES order (common/trace_schema.c). */
extern const struct ts_table ts_tables[TS_NTABLES];

/* The schema version that added a table (TS_SCHEMA_MIN_VERSION for those a
 * trace of every version the viewer reads has): a trace of an older version
 * lacks it. */
int ts_table_since(enum ts_table_id table);

/* The CREATE TABLE statements of every table, each ending ";\n", into buf
 * (NUL-terminated); the length it needs (without the NUL), as snprintf. */
int ts_create_sql(char *buf, int size);

#endif
