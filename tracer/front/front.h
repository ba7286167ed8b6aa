/* What the front-ends (tracer/front/) share among themselves: the cudart wrappers' state that CUPTI reads,
 * CUPTI's start, and the native source facts' two entry points. The core never includes this header: it
 * reaches a front-end only through the hooks the front-end registers (tr_impl.h's TR_FRONT). */
#ifndef DEVTRACE_FRONT_H
#define DEVTRACE_FRONT_H

#include "tr_impl.h"

/* The cudart wrappers (cuda.c): calls in progress on this thread, and the
 * CUPTI correlation id of the outermost one (0 when CUPTI is off). */
extern TR_HIDDEN _Thread_local int tr_cuda_depth;
extern TR_HIDDEN _Thread_local uint32_t tr_cuda_corr;
/* DEVTRACE_CUDA_ACTIVITY=1 (or its old name DEVTRACE_CUPTI_ACTIVITY): launches,
 * frees and CUPTI's activity records recorded; else launches and frees are
 * only counted, and the counts go into the trace's meta at its end. */
TR_HIDDEN int tr_cuda_activity(void);

/* CUPTI (cupti.c): started once, when CUDA is (InitializeInjection), or at
 * the tracer's start when libcuda is already loaded or DEVTRACE_CUPTI=1;
 * flushed (activity buffers written) before the trace is finished (its hooks). */
TR_HIDDEN void tr_cupti_start(const char *why);

/* cfacts.c: the first device mismatch writes the source facts of the program's native files: marked at the
 * mismatch, written by tr_cfacts_flush at the next op end, error or C++ throw of that thread */
TR_HIDDEN void tr_cfacts_at_mismatch(void);
TR_HIDDEN void tr_cfacts_flush(void);

#endif /* DEVTRACE_FRONT_H */
