/* devtrace's vocabulary, defined once for every side: device codes, origins, transfer kinds, error kinds,
 * tensor roles (their numbers are the probe ABI's, include/devtrace/probe.h, checked here) with the names the
 * trace's views and the reports use, the event kinds of the trace's `kind` columns, and what a CUDA call does
 * (cuda_calls.kind, .dir). The tracer writes
 * them, the viewer reads them, and the PyTorch adapter takes every one from its extension (_probes.c exports
 * them as DEVICE_<NAME>, ORIGIN_<NAME>, TRANSFER_<NAME>, ERROR_<NAME>, ROLE_<NAME>, EV_<NAME>). The op
 * families (which op names move, copy, make, index) are common/op_families.h. */
#ifndef DEVTRACE_VOCAB_H
#define DEVTRACE_VOCAB_H

#include <devtrace/probe.h>
#include <stdint.h>

/* ---------------------------------------------------------------- devices */

/* A device as the trace stores it (every `device` column): (type << 16) | index. cpu is 0. */
#define DT_DEVICE_CODE(type, index) (((uint32_t)(type) << 16) | ((uint32_t)(index) & 0xffffu))
#define DT_DEVICE_CODE_TYPE(code)   ((uint32_t)(code) >> 16)
#define DT_DEVICE_CODE_INDEX(code)  ((uint32_t)(code) & 0xffffu)

/* X(NAME, number, text): enum dtp_device_type. A device of a type past these is named "device<code>". */
#define DT_DEVICE_TYPES(X) X(CPU, 0, "cpu") X(CUDA, 1, "cuda") X(META, 2, "meta") X(OTHER, 3, "other")

/* ---------------------------------------------------------------- tensors */

/* X(NAME, number, text): enum dtp_origin_kind, how a tensor came to exist (tensors.origin). */
#define DT_ORIGINS(X)                                                                                                  \
    X(FACTORY, 0, "factory")                                                                                           \
    X(OP_OUTPUT, 1, "op_output")                                                                                       \
    X(VIEW, 2, "view") X(TRANSFER, 3, "transfer") X(CHECKPOINT, 4, "checkpoint") X(OTHER, 5, "other")

/* X(NAME, number, text): enum dtp_transfer_kind (transfers.kind). */
#define DT_TRANSFER_KINDS(X) X(TO, 0, "to") X(COPY, 1, "copy_") X(READ, 2, "read") X(MOVE, 3, "move")

/* X(NAME, number, text): enum dtp_error_kind (errors.kind, ops.status). */
#define DT_ERROR_KINDS(X)                                                                                              \
    X(DEVICE, 1, "device")                                                                                             \
    X(SHAPE, 2, "shape")                                                                                               \
    X(DTYPE, 3, "dtype") X(INDEX, 4, "index") X(MEMORY, 5, "memory") X(BACKEND, 6, "backend") X(ARG, 7, "arg")         \
        X(STATE, 8, "state") X(IO, 9, "io")

/* X(NAME, number, text): enum dtp_tensor_role, what a tensor is to the program beyond how it was made
 * (roles.role; probe ABI 4). */
#define DT_TENSOR_ROLES(X) X(OPTIMIZER_STATE, 1, "optimizer_state") X(MODULE_BUFFER, 2, "module_buffer") \
    X(PARAMETER, 3, "parameter")

/* ---------------------------------------------------------------- CUDA calls */

/* X(NAME, number, text): what a CUDA runtime or driver call does (cuda_calls.kind), as the tracer's cudart wrappers
 * (tracer/front/cuda.c) and CUPTI (tracer/front/cupti.c) record it; cuda_activity.kind takes MEMCPY, MEMSET and
 * LAUNCH (a kernel). */
#define DT_CUDA_CALL_KINDS(X)                                                                                          \
    X(MEMCPY, 1, "memcpy")                                                                                             \
    X(MALLOC, 2, "malloc")                                                                                             \
    X(FREE, 3, "free") X(MEMSET, 4, "memset") X(LAUNCH, 5, "launch") X(SYNC, 6, "sync") X(SET_DEVICE, 7, "set_device")

/* X(NAME, number, text): a copy's direction (cuda_calls.dir, cuda_activity.dir), cudaMemcpyKind's first four. */
#define DT_CUDA_DIRS(X) X(HTOH, 0, "HtoH") X(HTOD, 1, "HtoD") X(DTOH, 2, "DtoH") X(DTOD, 3, "DtoD")

enum dt_cuda_call_kind {
#define DT_CUDA_ENUM_(name, n, text) DT_CUDA_##name = n,
    DT_CUDA_CALL_KINDS(DT_CUDA_ENUM_)
#undef DT_CUDA_ENUM_
};
enum dt_cuda_dir {
#define DT_CUDA_DIR_ENUM_(name, n, text) DT_CUDA_DIR_##name = n,
    DT_CUDA_DIRS(DT_CUDA_DIR_ENUM_)
#undef DT_CUDA_DIR_ENUM_
};

/* ---------------------------------------------------------------- events */

/* X(NAME, number, text): the kinds of the trace's events (the events view's and misc_events' kind column,
 * rows of its kinds table). The tracer's ring records carry the same numbers (tracer/core/tr_impl.h says
 * what each record holds). */
#define DT_EVENT_KINDS(X)                                                                                              \
    X(INIT, 1, "runtime_init")                                                                                         \
    X(BACKEND, 2, "device_backend")                                                                                    \
    X(CREATED, 3, "tensor_created")                                                                                    \
    X(TRANSFER, 4, "tensor_transferred")                                                                               \
    X(NAMED, 5, "tensor_named")                                                                                        \
    X(FREED, 6, "tensor_freed")                                                                                        \
    X(OP_BEGIN, 7, "op_begin")                                                                                         \
    X(OP_END, 8, "op_end")                                                                                             \
    X(MISMATCH, 9, "device_mismatch")                                                                                  \
    X(ERROR, 10, "error")                                                                                              \
    X(SIGNAL, 11, "fatal_signal")                                                                                      \
    X(CUDA, 13, "cuda_call")                                                                                           \
    X(THROW, 14, "cxx_throw")

/* X(NAME, number, text): what else the tracer's records carry, never an event of the trace (no kinds row). */
#define DT_RECORD_KINDS(X)                                                                                             \
    X(PYCODE, 12, "py_code")                                                                                           \
    X(PAD, 15, "pad") X(CUPTI, 16, "cuda_activity") X(SOURCE_FACT, 17, "source_fact") X(ROLE, 18, "tensor_role")

enum dt_event_kind {
#define DT_EV_ENUM_(name, n, text) DT_EV_##name = n,
    DT_EVENT_KINDS(DT_EV_ENUM_) DT_RECORD_KINDS(DT_EV_ENUM_)
#undef DT_EV_ENUM_
};

/* The text of a value of one of the tables above, or NULL: DT_VOCAB_TEXT(DT_ORIGINS, origin). */
#define DT_VOCAB_CASE_(name, n, text)                                                                                  \
    case n: return text;
#define DT_VOCAB_TEXT_FN_(fn, table)                                                                                   \
    static inline const char *fn(int64_t v) {                                                                          \
        switch (v) { table(DT_VOCAB_CASE_) default : return 0; }                                                       \
    }
DT_VOCAB_TEXT_FN_(dt_device_type_text, DT_DEVICE_TYPES)
DT_VOCAB_TEXT_FN_(dt_origin_text, DT_ORIGINS)
DT_VOCAB_TEXT_FN_(dt_transfer_kind_text, DT_TRANSFER_KINDS)
DT_VOCAB_TEXT_FN_(dt_error_kind_text, DT_ERROR_KINDS)
DT_VOCAB_TEXT_FN_(dt_role_text, DT_TENSOR_ROLES)
DT_VOCAB_TEXT_FN_(dt_event_kind_text, DT_EVENT_KINDS)
DT_VOCAB_TEXT_FN_(dt_cuda_call_kind_text, DT_CUDA_CALL_KINDS)

/* An SQL CASE over a column of one of these tables: DT_VOCAB_SQL_CASE("x.kind", DT_TRANSFER_KINDS) is
 * "CASE x.kind WHEN 0 THEN 'to' ... END" (NULL for another value). */
#define DT_VOCAB_SQL_WHEN_(name, n, text) " WHEN " #n " THEN '" text "'"
#define DT_VOCAB_SQL_CASE(col, table)     "CASE " col table(DT_VOCAB_SQL_WHEN_) " END"

/* The probe ABI's numbers are these tables' (a change to one without the other does not compile). */
#ifdef __cplusplus
#define DT_VOCAB_ASSERT_ static_assert
#else
#define DT_VOCAB_ASSERT_ _Static_assert
#endif
#define DT_VOCAB_CHECK_(prefix, name, n, text) DT_VOCAB_ASSERT_(prefix##name == n, #prefix #name);
#define DT_VOCAB_DEV_(name, n, text)           DT_VOCAB_CHECK_(DTP_DEVICE_, name, n, text)
#define DT_VOCAB_ORI_(name, n, text)           DT_VOCAB_CHECK_(DTP_ORIGIN_, name, n, text)
#define DT_VOCAB_XFER_(name, n, text)          DT_VOCAB_CHECK_(DTP_TRANSFER_, name, n, text)
#define DT_VOCAB_ERR_(name, n, text)           DT_VOCAB_CHECK_(DTP_ERROR_, name, n, text)
#define DT_VOCAB_ROLE_(name, n, text)          DT_VOCAB_CHECK_(DTP_ROLE_, name, n, text)
DT_DEVICE_TYPES(DT_VOCAB_DEV_)
DT_ORIGINS(DT_VOCAB_ORI_)
DT_TRANSFER_KINDS(DT_VOCAB_XFER_)
DT_ERROR_KINDS(DT_VOCAB_ERR_)
DT_TENSOR_ROLES(DT_VOCAB_ROLE_)
#undef DT_VOCAB_DEV_
#undef DT_VOCAB_ORI_
#undef DT_VOCAB_XFER_
#undef DT_VOCAB_ERR_
#undef DT_VOCAB_ROLE_
#undef DT_VOCAB_CHECK_

/* ---------------------------------------------------------------- the numbers in SQL text */

/* The values above that a reader's SQL names (`WHERE kind = ` DT_SQL_EV_OP_END), as SQL literals: a query says
 * which value it means by name. Each number is written once (DT_SQL_N_*), checked against its table's constant
 * below, and made the literal by the preprocessor. */
#define DT_SQL_N_EV_OP_END         8  /* an op's late end (misc_events.kind), its status in value */
#define DT_SQL_N_EV_SIGNAL         11 /* a fatal signal */
#define DT_SQL_N_EV_NAMED          5  /* a tensor named (misc_events.kind), with the stacks of where */
#define DT_SQL_N_TRANSFER_TO       0
#define DT_SQL_N_TRANSFER_COPY     1
#define DT_SQL_N_TRANSFER_MOVE     3 /* a move in place */
#define DT_SQL_N_ORIGIN_FACTORY    0
#define DT_SQL_N_ORIGIN_CHECKPOINT 4
#define DT_SQL_N_ERROR_DEVICE      1 /* errors.kind */
#define DT_SQL_N_ROLE_PARAMETER    3 /* roles.role */
#define DT_SQL_N_CUDA_MEMCPY       1 /* cuda_calls.kind */
#define DT_SQL_N_CUDA_MALLOC       2
#define DT_SQL_N_CUDA_MEMSET       4
#define DT_SQL_N_CUDA_LAUNCH       5
#define DT_SQL_N_CUDA_SYNC         6
#define DT_SQL_N_CUDA_DIR_HTOD     1 /* cuda_calls.dir */
#define DT_SQL_N_CUDA_DIR_DTOH     2
#define DT_SQL_N_CUDA_DIR_DTOD     3

#define DT_SQL_STR_(n)           #n
#define DT_SQL_(n)               DT_SQL_STR_(n)
#define DT_SQL_EV_OP_END         DT_SQL_(DT_SQL_N_EV_OP_END)
#define DT_SQL_EV_SIGNAL         DT_SQL_(DT_SQL_N_EV_SIGNAL)
#define DT_SQL_EV_NAMED          DT_SQL_(DT_SQL_N_EV_NAMED)
#define DT_SQL_TRANSFER_TO       DT_SQL_(DT_SQL_N_TRANSFER_TO)
#define DT_SQL_TRANSFER_COPY     DT_SQL_(DT_SQL_N_TRANSFER_COPY)
#define DT_SQL_TRANSFER_MOVE     DT_SQL_(DT_SQL_N_TRANSFER_MOVE)
#define DT_SQL_ORIGIN_FACTORY    DT_SQL_(DT_SQL_N_ORIGIN_FACTORY)
#define DT_SQL_ORIGIN_CHECKPOINT DT_SQL_(DT_SQL_N_ORIGIN_CHECKPOINT)
#define DT_SQL_ERROR_DEVICE      DT_SQL_(DT_SQL_N_ERROR_DEVICE)
#define DT_SQL_ROLE_PARAMETER    DT_SQL_(DT_SQL_N_ROLE_PARAMETER)
#define DT_SQL_CUDA_MEMCPY       DT_SQL_(DT_SQL_N_CUDA_MEMCPY)
#define DT_SQL_CUDA_MALLOC       DT_SQL_(DT_SQL_N_CUDA_MALLOC)
#define DT_SQL_CUDA_MEMSET       DT_SQL_(DT_SQL_N_CUDA_MEMSET)
#define DT_SQL_CUDA_LAUNCH       DT_SQL_(DT_SQL_N_CUDA_LAUNCH)
#define DT_SQL_CUDA_SYNC         DT_SQL_(DT_SQL_N_CUDA_SYNC)
#define DT_SQL_CUDA_DIR_HTOD     DT_SQL_(DT_SQL_N_CUDA_DIR_HTOD)
#define DT_SQL_CUDA_DIR_DTOH     DT_SQL_(DT_SQL_N_CUDA_DIR_DTOH)
#define DT_SQL_CUDA_DIR_DTOD     DT_SQL_(DT_SQL_N_CUDA_DIR_DTOD)

DT_VOCAB_ASSERT_(DT_EV_OP_END == DT_SQL_N_EV_OP_END, "DT_SQL_EV_OP_END");
DT_VOCAB_ASSERT_(DT_EV_SIGNAL == DT_SQL_N_EV_SIGNAL, "DT_SQL_EV_SIGNAL");
DT_VOCAB_ASSERT_(DT_EV_NAMED == DT_SQL_N_EV_NAMED, "DT_SQL_EV_NAMED");
DT_VOCAB_ASSERT_(DTP_TRANSFER_TO == DT_SQL_N_TRANSFER_TO, "DT_SQL_TRANSFER_TO");
DT_VOCAB_ASSERT_(DTP_TRANSFER_COPY == DT_SQL_N_TRANSFER_COPY, "DT_SQL_TRANSFER_COPY");
DT_VOCAB_ASSERT_(DTP_TRANSFER_MOVE == DT_SQL_N_TRANSFER_MOVE, "DT_SQL_TRANSFER_MOVE");
DT_VOCAB_ASSERT_(DTP_ORIGIN_FACTORY == DT_SQL_N_ORIGIN_FACTORY, "DT_SQL_ORIGIN_FACTORY");
DT_VOCAB_ASSERT_(DTP_ORIGIN_CHECKPOINT == DT_SQL_N_ORIGIN_CHECKPOINT, "DT_SQL_ORIGIN_CHECKPOINT");
DT_VOCAB_ASSERT_(DTP_ERROR_DEVICE == DT_SQL_N_ERROR_DEVICE, "DT_SQL_ERROR_DEVICE");
DT_VOCAB_ASSERT_(DTP_ROLE_PARAMETER == DT_SQL_N_ROLE_PARAMETER, "DT_SQL_ROLE_PARAMETER");
DT_VOCAB_ASSERT_(DT_CUDA_MEMCPY == DT_SQL_N_CUDA_MEMCPY, "DT_SQL_CUDA_MEMCPY");
DT_VOCAB_ASSERT_(DT_CUDA_MALLOC == DT_SQL_N_CUDA_MALLOC, "DT_SQL_CUDA_MALLOC");
DT_VOCAB_ASSERT_(DT_CUDA_MEMSET == DT_SQL_N_CUDA_MEMSET, "DT_SQL_CUDA_MEMSET");
DT_VOCAB_ASSERT_(DT_CUDA_LAUNCH == DT_SQL_N_CUDA_LAUNCH, "DT_SQL_CUDA_LAUNCH");
DT_VOCAB_ASSERT_(DT_CUDA_SYNC == DT_SQL_N_CUDA_SYNC, "DT_SQL_CUDA_SYNC");
DT_VOCAB_ASSERT_(DT_CUDA_DIR_HTOD == DT_SQL_N_CUDA_DIR_HTOD, "DT_SQL_CUDA_DIR_HTOD");
DT_VOCAB_ASSERT_(DT_CUDA_DIR_DTOH == DT_SQL_N_CUDA_DIR_DTOH, "DT_SQL_CUDA_DIR_DTOH");
DT_VOCAB_ASSERT_(DT_CUDA_DIR_DTOD == DT_SQL_N_CUDA_DIR_DTOD, "DT_SQL_CUDA_DIR_DTOD");

#endif /* DEVTRACE_VOCAB_H */
