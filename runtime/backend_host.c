/* The two backends whose memory is host memory: cpu, and simulated cuda.
 * A simulated GPU is a separate allocation domain per device: every block
 * carries a header naming its device, and every kernel checks that all the
 * memory it touches belongs to the device it runs on, so a placement bug the
 * op layer failed to catch still cannot silently mix devices. Both share the
 * kernels of kernels_host.c. */
#include "dt_impl.h"

#include <string.h>

#define DT_ALIGN 64

static size_t round_up(size_t n) { return (n + DT_ALIGN - 1) / DT_ALIGN * DT_ALIGN; }

/* ---------------------------------------------------------------- cpu */

static int cpu_count(void) { return 1; }
static void *cpu_alloc(int index, size_t bytes) {
    (void)index;
    return aligned_alloc(DT_ALIGN, round_up(bytes));
}
static void cpu_free(int index, void *p, size_t bytes) {
    (void)index;
    (void)bytes;
    free(p);
}
static int cpu_copy(int di, void *dst, size_t doff, int si, const void *src, size_t soff, size_t bytes) {
    (void)di;
    (void)si;
    memmove((char *)dst + doff, (const char *)src + soff, bytes);
    return 0;
}
static int cpu_ew(int i, const struct dt_ew_args *a) {
    (void)i;
    return dt__host_ew(a);
}
static int cpu_reduce(int i, const struct dt_reduce_args *a) {
    (void)i;
    return dt__host_reduce(a);
}
static int cpu_softmax(int i, const struct dt_softmax_args *a) {
    (void)i;
    return dt__host_softmax(a);
}
static int cpu_matmul(int i, const struct dt_matmul_args *a) {
    (void)i;
    return dt__host_matmul(a);
}
static int cpu_index(int i, const struct dt_index_args *a, int64_t *bad) {
    (void)i;
    return dt__host_index_select(a, bad);
}

const struct dt_backend dt__backend_cpu = {
    .name = "cpu",
    .host_accessible = 1,
    .device_count = cpu_count,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_peer = cpu_copy,
    .upload = NULL, /* host memory: transfer.c copies directly */
    .download = NULL,
    .ew = cpu_ew,
    .reduce = cpu_reduce,
    .softmax = cpu_softmax,
    .matmul = cpu_matmul,
    .index_select = cpu_index,
    .synchronize = NULL, /* nothing is ever queued */
};

/* ---------------------------------------------------------------- simulated cuda */

#define SIM_MAGIC 0x44545349u /* "DTSI" */

/* Precedes every simulated block. */
struct sim_header {
    uint32_t magic; /* SIM_MAGIC while the block is live */
    int32_t device; /* N of cuda:N */
    uint64_t bytes; /* payload size */
    char pad[DT_ALIGN - 16];
};

static struct sim_header *sim_hdr(const void *p) {
    return (struct sim_header *)((char *)p - sizeof(struct sim_header));
}

/* Dies loudly if p is not a live block of device `index`: the op layer let
 * memory of another device (or the host) reach a simulated kernel. */
static void sim_own(int index, const void *p) {
    const struct sim_header *h = sim_hdr(p);
    if (h->magic != SIM_MAGIC || h->device != index) {
        fprintf(stderr, "devtrace runtime: internal error: simulated cuda:%d kernel got memory of %s\n", index,
                h->magic == SIM_MAGIC ? "another simulated device" : "no simulated device");
        abort();
    }
}

static int sim_count(void) { return DT_MAX_CUDA; } /* the configured count is enforced by device.c */

static void *sim_alloc(int index, size_t bytes) {
    struct sim_header *h = aligned_alloc(DT_ALIGN, sizeof *h + round_up(bytes));
    if (!h) return NULL;
    memset(h, 0, sizeof *h);
    h->magic = SIM_MAGIC;
    h->device = index;
    h->bytes = bytes;
    return h + 1;
}
static void sim_free(int index, void *p, size_t bytes) {
    (void)bytes;
    sim_own(index, p);
    struct sim_header *h = sim_hdr(p);
    h->magic = 0;
    free(h);
}
static int sim_copy(int di, void *dst, size_t doff, int si, const void *src, size_t soff, size_t bytes) {
    sim_own(di, dst);
    sim_own(si, src);
    memmove((char *)dst + doff, (const char *)src + soff, bytes);
    return 0;
}
static int sim_ew(int i, const struct dt_ew_args *a) {
    sim_own(i, a->out.base);
    for (int k = 0; k < a->nin; k++)
        if (!a->in[k].is_scalar) sim_own(i, a->in[k].v.base);
    return dt__host_ew(a);
}
static int sim_reduce(int i, const struct dt_reduce_args *a) {
    sim_own(i, a->in.base);
    if (a->out.base) sim_own(i, a->out.base);
    if (a->idx.base) sim_own(i, a->idx.base);
    return dt__host_reduce(a);
}
static int sim_softmax(int i, const struct dt_softmax_args *a) {
    sim_own(i, a->in.base);
    sim_own(i, a->out.base);
    return dt__host_softmax(a);
}
static int sim_matmul(int i, const struct dt_matmul_args *a) {
    sim_own(i, a->a.base);
    sim_own(i, a->b.base);
    sim_own(i, a->out.base);
    if (a->has_bias) sim_own(i, a->bias.base);
    return dt__host_matmul(a);
}
static int sim_index(int i, const struct dt_index_args *a, int64_t *bad) {
    sim_own(i, a->in.base);
    sim_own(i, a->index.base);
    sim_own(i, a->out.base);
    return dt__host_index_select(a, bad);
}

const struct dt_backend dt__backend_sim = {
    .name = "cuda-sim",
    .host_accessible = 1,
    .device_count = sim_count,
    .alloc = sim_alloc,
    .free = sim_free,
    .copy_peer = sim_copy,
    .upload = NULL,
    .download = NULL,
    .ew = sim_ew,
    .reduce = sim_reduce,
    .softmax = sim_softmax,
    .matmul = sim_matmul,
    .index_select = sim_index,
    .synchronize = NULL,
};
