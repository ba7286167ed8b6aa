/* The math of each elementwise op, shared by the host kernels and the CUDA
 * kernels so that an op means the same thing on every backend (floats in
 * double, integers in wrapping int64). Included by kernels_host.c and
 * cuda/backend_cuda.cu only. */
#ifndef DEVTRACE_EW_MATH_H
#define DEVTRACE_EW_MATH_H

#include <math.h>
#include <stdint.h>

#include "backend.h"

#ifdef __CUDACC__
#define DT_EW_FN static inline __host__ __device__
#else
#define DT_EW_FN static inline
#endif

DT_EW_FN double dt_ew_f(enum dt_ew_op op, double x, double y, double z, double p0, double p1) {
    switch (op) {
    case DT_EW_COPY: return x;
    case DT_EW_FILL: return p0;
    case DT_EW_NEG: return -x;
    case DT_EW_EXP: return exp(x);
    case DT_EW_LOG: return log(x);
    case DT_EW_SQRT: return sqrt(x);
    case DT_EW_ABS: return fabs(x);
    case DT_EW_RELU: return x > 0 ? x : (x != x ? x : 0.0);
    case DT_EW_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case DT_EW_TANH: return tanh(x);
    case DT_EW_CLAMP: return x != x ? x : x < p0 ? p0 : x > p1 ? p1 : x;
    case DT_EW_ADD: return x + p0 * y;
    case DT_EW_SUB: return x - p0 * y;
    case DT_EW_MUL: return x * y;
    case DT_EW_DIV: return x / y;
    case DT_EW_POW: return pow(x, y);
    case DT_EW_EQ: return x == y;
    case DT_EW_NE: return x != y;
    case DT_EW_LT: return x < y;
    case DT_EW_LE: return x <= y;
    case DT_EW_GT: return x > y;
    case DT_EW_GE: return x >= y;
    case DT_EW_WHERE: return x != 0 ? y : z;
    default: return 0; /* unreachable: the op layer sends only the ops above */
    }
}

/* Integer form; *bad is set by a negative integer power (the result is 0). */
DT_EW_FN int64_t dt_ew_i(enum dt_ew_op op, int64_t x, int64_t y, int64_t z, double p0, double p1, int *bad) {
    switch (op) {
    case DT_EW_COPY: return x;
    case DT_EW_FILL: return (int64_t)p0;
    case DT_EW_NEG: return (int64_t)(0 - (uint64_t)x);
    case DT_EW_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case DT_EW_RELU: return x > 0 ? x : 0;
    case DT_EW_CLAMP: {
        double v = (double)x;
        return v < p0 ? (int64_t)ceil(p0) : v > p1 ? (int64_t)floor(p1) : x;
    }
    case DT_EW_ADD: return (int64_t)((uint64_t)x + (uint64_t)((int64_t)p0 * y));
    case DT_EW_SUB: return (int64_t)((uint64_t)x - (uint64_t)((int64_t)p0 * y));
    case DT_EW_MUL: return (int64_t)((uint64_t)x * (uint64_t)y);
    case DT_EW_POW: {
        if (y < 0) {
            if (x == 1) return 1;
            if (x == -1) return (y & 1) ? -1 : 1;
            *bad = 1;
            return 0;
        }
        uint64_t r = 1, b = (uint64_t)x;
        for (int64_t e = y; e; e >>= 1, b *= b)
            if (e & 1) r *= b;
        return (int64_t)r;
    }
    case DT_EW_EQ: return x == y;
    case DT_EW_NE: return x != y;
    case DT_EW_LT: return x < y;
    case DT_EW_LE: return x <= y;
    case DT_EW_GT: return x > y;
    case DT_EW_GE: return x >= y;
    case DT_EW_WHERE: return x ? y : z;
    default: return 0;
    }
}

#endif /* DEVTRACE_EW_MATH_H */
