/* What probe_recorder.c (an LD_PRELOAD library implementing the dtp_*
 * probes) records, for check_probes.c to read through dlsym. Test code. */
#ifndef DEVTRACE_PROBE_RECORDER_H
#define DEVTRACE_PROBE_RECORDER_H

#include <devtrace/probe.h>

enum rec_kind {
    REC_INIT,
    REC_BACKEND,
    REC_CREATED,
    REC_TRANSFER,
    REC_NAMED,
    REC_FREED,
    REC_OP_BEGIN,
    REC_OP_END,
    REC_MISMATCH,
    REC_ERROR,
    REC_ROLE
};

struct rec_arg {
    char name[32];
    uint64_t id;
    struct dtp_device device;
};

/* One probe call; which fields are set depends on kind. */
struct rec_event {
    enum rec_kind kind;
    uint64_t id, id2, seq;    /* tensor ids / op sequence */
    int32_t i1, i2, i3;       /* abi version, origin kind, status, first/other, error kind, role */
    char s1[64], s2[512];     /* names, op, what; message */
    char detail[256];         /* origin detail (checkpoint path) */
    struct dtp_device d1, d2; /* devices */
    uint64_t u1;              /* bytes, storage id */
    int32_t ndim, dtype;
    int64_t shape[8], strides[8], offset;
    int32_t nargs; /* op args, or outputs for REC_OP_END */
    struct rec_arg args[8];
    uint64_t outputs[8];
};

typedef int (*rec_count_fn)(void);
typedef const struct rec_event *(*rec_get_fn)(int i);
typedef void (*rec_reset_fn)(void);

#endif
