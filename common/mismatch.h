/* Device-mismatch messages (mismatch.c), shared by the tracer (C++ throws)
 * and the PyTorch adapter's extension (errors raised to Python): 1 when msg
 * is one, with the odd operand's device in a, its peers' in b, and the
 * argument it names (or ""). */
#ifndef DEVTRACE_MISMATCH_H
#define DEVTRACE_MISMATCH_H

#include <stddef.h>

struct dt_mismatch {
    char a[32], b[32], arg[64];
};
__attribute__((visibility("hidden"))) int dt_parse_mismatch(const char *msg, size_t len, struct dt_mismatch *m);

#endif
