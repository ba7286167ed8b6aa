/* The private seam between the fakes of the CUDA stack used by the CUPTI
 * tests (no GPU): the fake driver (fake_cuda.c, libcuda.so.1) announces
 * every API call, runtime calls included (the fake cudart of
 * fake_cudart_drv.c brackets its own with fakecuda_api_enter/exit, as the
 * real cudart reports to the driver), and the work each copy, set and
 * kernel did, to the one tool attached: the fake libcupti (fake_cupti.c),
 * which turns them into CUPTI callbacks and activity records. */
#ifndef DEVTRACE_FAKE_CUDA_H
#define DEVTRACE_FAKE_CUDA_H

#include <stdint.h>

struct fakecuda_tool {
    /* an API call's entry (site 0) or exit (site 1); data: 8 bytes per call */
    void (*api)(int domain, int cbid, const char *name, const void *params, const void *ret, int site, uint32_t corr,
                uint64_t *data);
    /* work done, as CUPTI's activity records describe it (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind) */
    void (*copy)(int copy_kind, int src_kind, int dst_kind, uint64_t bytes, int device, uint32_t corr, uint64_t start,
                 uint64_t end);
    void (*set)(uint64_t bytes, int device, uint32_t corr, uint64_t start, uint64_t end);
    void (*kernel)(const char *name, int device, uint32_t corr, uint64_t start, uint64_t end);
};

typedef void (*fakecuda_set_tool_fn)(const struct fakecuda_tool *);
typedef uint32_t (*fakecuda_api_enter_fn)(int domain, int cbid, const char *name, const void *params, uint64_t *data);
typedef void (*fakecuda_api_exit_fn)(int domain, int cbid, const char *name, const void *params, const void *ret,
                                     uint32_t corr, uint64_t *data);

#endif
