/* The real CUDA backend of libdtrt: device memory through the shared cudart,
 * and kernels for the backend contract of backend.h (elementwise, reduce,
 * softmax, matmul, index_select). Used for cuda:N when a GPU is present and
 * simulation was not asked for. Elementwise math is shared with the host
 * kernels (ew_math.h); reductions, softmax and matmul accumulate in their
 * own order, so they agree with the host within float tolerance.
 * Memory movement between devices is requested by transfer.c only. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "../backend.h"
#include "../ew_math.h"

namespace {

/* Turns a failed cudart call into a backend status with a message naming the
 * call, file and line (STYLE.md: CUDA_CHECK). */
#define CUDA_CHECK(call)                                                                                               \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            (void)cudaGetLastError();                                                                                  \
            dt__backend_msg("CUDA error: %s (%s) from %s at %s:%d", cudaGetErrorString(e_), cudaGetErrorName(e_),      \
                            #call, __FILE__, __LINE__);                                                                \
            return e_ == cudaErrorMemoryAllocation ? DT_ERR_MEMORY : DT_ERR_BACKEND;                                   \
        }                                                                                                              \
    } while (0)

#define CUDA_LAUNCHED() CUDA_CHECK(cudaGetLastError())

constexpr int kThreads = 256;

int64_t numel_of(const struct dt_view &v) {
    int64_t n = 1;
    for (int i = 0; i < v.ndim; i++) n *= v.shape[i];
    return n;
}

int blocks_for(int64_t n) {
    int64_t b = (n + kThreads - 1) / kThreads;
    return (int)(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

/* ---------------------------------------------------------------- device helpers */

__device__ double ld_d(const void *base, int t, int64_t off) {
    if (t == DT_F32) return ((const float *)base)[off];
    if (t == DT_I64) return (double)((const int64_t *)base)[off];
    return ((const uint8_t *)base)[off];
}
__device__ int64_t ld_i(const void *base, int t, int64_t off) {
    if (t == DT_F32) return (int64_t)((const float *)base)[off];
    if (t == DT_I64) return ((const int64_t *)base)[off];
    return ((const uint8_t *)base)[off];
}
__device__ void st_f(void *base, int t, int64_t off, float v) {
    if (t == DT_F32)
        ((float *)base)[off] = v;
    else if (t == DT_I64)
        ((int64_t *)base)[off] = (int64_t)v;
    else
        ((uint8_t *)base)[off] = v != 0.0f;
}
__device__ void st_i(void *base, int t, int64_t off, int64_t v) {
    if (t == DT_F32)
        ((float *)base)[off] = (float)v;
    else if (t == DT_I64)
        ((int64_t *)base)[off] = v;
    else
        ((uint8_t *)base)[off] = v != 0;
}

__device__ int d_bad_flag;        /* set by a kernel that met a bad value */
__device__ long long d_bad_value; /* the first bad value it met */

__device__ void flag_bad(long long v) {
    if (atomicExch(&d_bad_flag, 1) == 0) d_bad_value = v;
}

/* ---------------------------------------------------------------- kernels */

__global__ void k_ew(dt_ew_args a, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = e, off[4] = {a.out.offset, a.in[0].v.offset, a.in[1].v.offset, a.in[2].v.offset};
        for (int d = a.out.ndim - 1; d >= 0; d--) {
            int64_t i = rem % a.out.shape[d];
            rem /= a.out.shape[d];
            off[0] += i * a.out.strides[d];
            for (int k = 0; k < a.nin; k++) off[k + 1] += i * a.in[k].v.strides[d];
        }
        if (a.compute == DT_F32) {
            double v[3] = {0, 0, 0};
            for (int k = 0; k < a.nin; k++)
                v[k] = a.in[k].is_scalar ? a.in[k].scalar : ld_d(a.in[k].v.base, a.in[k].v.dtype, off[k + 1]);
            st_f(a.out.base, a.out.dtype, off[0], (float)dt_ew_f(a.op, v[0], v[1], v[2], a.p0, a.p1));
        } else {
            int64_t v[3] = {0, 0, 0};
            int bad = 0;
            for (int k = 0; k < a.nin; k++)
                v[k] = a.in[k].is_scalar ? (int64_t)a.in[k].scalar : ld_i(a.in[k].v.base, a.in[k].v.dtype, off[k + 1]);
            st_i(a.out.base, a.out.dtype, off[0], dt_ew_i(a.op, v[0], v[1], v[2], a.p0, a.p1, &bad));
            if (bad) flag_bad(v[1]);
        }
    }
}

/* Offset of the j-th combination (row-major) of all dims of v but dim. */
__device__ int64_t row_base(const struct dt_view &v, int dim, int64_t j) {
    int64_t off = v.offset;
    for (int d = v.ndim - 1; d >= 0; d--) {
        if (d == dim) continue;
        off += (j % v.shape[d]) * v.strides[d];
        j /= v.shape[d];
    }
    return off;
}

/* Whether (v1, i1) beats (v2, i2) for max: NaN wins, then larger, then the
 * lower index (first occurrence), as in the host kernels. */
__device__ bool better(double v1, long long i1, double v2, long long i2) {
    bool n1 = isnan(v1), n2 = isnan(v2);
    if (n1 != n2) return n1;
    if (!n1 && v1 != v2) return v1 > v2;
    return i1 < i2;
}

/* One block per output row; kThreads threads stride along the reduced dim. */
__global__ void k_reduce(dt_reduce_args a, int64_t rows, int64_t len) {
    __shared__ double sv[kThreads];
    __shared__ long long si[kThreads];
    __shared__ long long sl[kThreads];
    const int t = threadIdx.x;
    const bool fp = a.in.dtype == DT_F32;
    const int64_t st = a.in.strides[a.dim];
    for (int64_t j = blockIdx.x; j < rows; j += gridDim.x) {
        int64_t base = row_base(a.in, a.dim, j);
        if (a.op == DT_RED_SUM || a.op == DT_RED_MEAN) {
            double s = 0;
            long long is = 0;
            for (int64_t k = t; k < len; k += kThreads) {
                if (fp)
                    s += ld_d(a.in.base, a.in.dtype, base + k * st);
                else
                    is += ld_i(a.in.base, a.in.dtype, base + k * st);
            }
            sv[t] = s;
            sl[t] = is;
            __syncthreads();
            for (int w = kThreads / 2; w > 0; w >>= 1) {
                if (t < w) sv[t] += sv[t + w], sl[t] += sl[t + w];
                __syncthreads();
            }
            if (t == 0) {
                if (fp)
                    st_f(a.out.base, a.out.dtype, a.out.offset + j,
                         (float)(a.op == DT_RED_MEAN ? sv[0] / (double)len : sv[0]));
                else
                    st_i(a.out.base, a.out.dtype, a.out.offset + j, sl[0]);
            }
        } else {
            double bv = 0;
            long long bl = 0, bi = -1;
            for (int64_t k = t; k < len; k += kThreads) {
                if (fp) {
                    double v = ld_d(a.in.base, a.in.dtype, base + k * st);
                    if (bi < 0 || better(v, k, bv, bi)) bv = v, bi = k;
                } else {
                    long long v = ld_i(a.in.base, a.in.dtype, base + k * st);
                    if (bi < 0 || v > bl) bl = v, bi = k;
                }
            }
            sv[t] = bv;
            sl[t] = bl;
            si[t] = bi;
            __syncthreads();
            for (int w = kThreads / 2; w > 0; w >>= 1) {
                if (t < w && si[t + w] >= 0) {
                    bool take = si[t] < 0 || (fp ? better(sv[t + w], si[t + w], sv[t], si[t])
                                                 : (sl[t + w] > sl[t] || (sl[t + w] == sl[t] && si[t + w] < si[t])));
                    if (take) sv[t] = sv[t + w], sl[t] = sl[t + w], si[t] = si[t + w];
                }
                __syncthreads();
            }
            if (t == 0) {
                if (a.op == DT_RED_MAX) {
                    if (fp)
                        st_f(a.out.base, a.out.dtype, a.out.offset + j, (float)sv[0]);
                    else
                        st_i(a.out.base, a.out.dtype, a.out.offset + j, sl[0]);
                }
                if (a.idx.base) ((int64_t *)a.idx.base)[a.idx.offset + j] = si[0];
            }
        }
        __syncthreads();
    }
}

/* One block per row: max, sum of exponentials, then the outputs. */
__global__ void k_softmax(dt_softmax_args a, int64_t rows, int64_t len) {
    __shared__ float sm[kThreads];
    const int t = threadIdx.x;
    const int64_t is = a.in.strides[a.dim], os = a.out.strides[a.dim];
    const float *x = (const float *)a.in.base;
    float *o = (float *)a.out.base;
    for (int64_t j = blockIdx.x; j < rows; j += gridDim.x) {
        int64_t ib = row_base(a.in, a.dim, j), ob = row_base(a.out, a.dim, j);
        float m = -INFINITY;
        for (int64_t k = t; k < len; k += kThreads) {
            float v = x[ib + k * is];
            if (v > m || isnan(v)) m = v;
        }
        sm[t] = m;
        __syncthreads();
        for (int w = kThreads / 2; w > 0; w >>= 1) {
            if (t < w && (sm[t + w] > sm[t] || isnan(sm[t + w]))) sm[t] = sm[t + w];
            __syncthreads();
        }
        m = sm[0];
        __syncthreads();
        float s = 0;
        for (int64_t k = t; k < len; k += kThreads) s += expf(x[ib + k * is] - m);
        sm[t] = s;
        __syncthreads();
        for (int w = kThreads / 2; w > 0; w >>= 1) {
            if (t < w) sm[t] += sm[t + w];
            __syncthreads();
        }
        s = sm[0];
        float ls = logf(s);
        for (int64_t k = t; k < len; k += kThreads) {
            float d = x[ib + k * is] - m;
            o[ob + k * os] = a.log ? d - ls : expf(d) / s;
        }
        __syncthreads();
    }
}

constexpr int kTile = 16;

__global__ void k_matmul(dt_matmul_args a) {
    __shared__ float As[kTile][kTile + 1], Bs[kTile][kTile + 1];
    const int64_t Bn = a.out.shape[0], M = a.out.shape[1], N = a.out.shape[2], K = a.a.shape[2];
    const float *A = (const float *)a.a.base, *B = (const float *)a.b.base;
    const float *bias = a.has_bias ? (const float *)a.bias.base : nullptr;
    float *O = (float *)a.out.base;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t row = blockIdx.y * (int64_t)kTile + ty, col = blockIdx.x * (int64_t)kTile + tx;
    for (int64_t b = blockIdx.z; b < Bn; b += gridDim.z) {
        float acc = 0;
        for (int64_t k0 = 0; k0 < K; k0 += kTile) {
            As[ty][tx] = row < M && k0 + tx < K
                             ? A[a.a.offset + b * a.a.strides[0] + row * a.a.strides[1] + (k0 + tx) * a.a.strides[2]]
                             : 0.0f;
            Bs[ty][tx] = k0 + ty < K && col < N
                             ? B[a.b.offset + b * a.b.strides[0] + (k0 + ty) * a.b.strides[1] + col * a.b.strides[2]]
                             : 0.0f;
            __syncthreads();
            for (int kk = 0; kk < kTile; kk++) acc += As[ty][kk] * Bs[kk][tx];
            __syncthreads();
        }
        if (row < M && col < N) {
            if (bias) acc += bias[a.bias.offset + col * a.bias.strides[0]];
            O[a.out.offset + b * a.out.strides[0] + row * a.out.strides[1] + col * a.out.strides[2]] = acc;
        }
    }
}

__global__ void k_check_index(struct dt_view index, int64_t size) {
    const int64_t n = index.shape[0];
    const int64_t *idx = (const int64_t *)index.base + index.offset;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t v = idx[i * index.strides[0]];
        if (v < 0 || v >= size) flag_bad(v);
    }
}

__global__ void k_index_select(dt_index_args a, int64_t n) {
    const int64_t *idx = (const int64_t *)a.index.base + a.index.offset;
    const size_t esz = a.in.dtype == DT_F32 ? 4 : a.in.dtype == DT_I64 ? 8 : 1;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = e, src = a.in.offset;
        for (int d = a.in.ndim - 1; d >= 0; d--) {
            int64_t c = rem % a.out.shape[d];
            rem /= a.out.shape[d];
            src += (d == a.dim ? idx[c * a.index.strides[0]] : c) * a.in.strides[d];
        }
        const char *s = (const char *)a.in.base + src * esz;
        char *o = (char *)a.out.base + (a.out.offset + e) * esz;
        for (size_t b = 0; b < esz; b++) o[b] = s[b];
    }
}

/* ---------------------------------------------------------------- the vtable */

int cu_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* no driver or no GPU: no real devices */
        return 0;
    }
    return n;
}

void *cu_alloc(int index, size_t bytes) {
    void *p = nullptr;
    if (cudaSetDevice(index) != cudaSuccess || cudaMalloc(&p, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return p;
}

void cu_free(int index, void *p, size_t bytes) {
    (void)bytes;
    /* Failures here (a sticky error from an earlier kernel, or a driver in
     * teardown at exit) must not take the program down; the error surfaces
     * at the next checked call. */
    if (cudaSetDevice(index) == cudaSuccess) (void)cudaFree(p);
    (void)cudaGetLastError();
}

int cu_copy_peer(int di, void *dst_base, size_t doff, int si, const void *src_base, size_t soff, size_t bytes) {
    void *dst = (char *)dst_base + doff;
    const void *src = (const char *)src_base + soff;
    if (di == si) {
        CUDA_CHECK(cudaSetDevice(di));
        CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    } else {
        CUDA_CHECK(cudaMemcpyPeer(dst, di, src, si, bytes));
    }
    return 0;
}

int cu_upload(int index, void *dst, const void *src, size_t bytes) {
    CUDA_CHECK(cudaSetDevice(index));
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    return 0;
}

int cu_download(int index, void *dst, const void *src, size_t bytes) {
    CUDA_CHECK(cudaSetDevice(index));
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return 0;
}

int reset_flag(void) {
    int zero = 0;
    CUDA_CHECK(cudaMemcpyToSymbol(d_bad_flag, &zero, sizeof zero));
    return 0;
}

/* Reads the bad-value flag a kernel may have set; 1 when set. */
int read_flag(long long *value, int *st) {
    int flag = 0;
    *st = 0;
    cudaError_t e = cudaMemcpyFromSymbol(&flag, d_bad_flag, sizeof flag);
    if (e == cudaSuccess && flag) e = cudaMemcpyFromSymbol(value, d_bad_value, sizeof *value);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        dt__backend_msg("CUDA error: %s (%s) reading a kernel's status", cudaGetErrorString(e), cudaGetErrorName(e));
        *st = DT_ERR_BACKEND;
        return 0;
    }
    return flag;
}

int cu_ew(int index, const dt_ew_args *a) {
    int64_t n = numel_of(a->out);
    if (n == 0) return 0;
    CUDA_CHECK(cudaSetDevice(index));
    const bool int_pow = a->op == DT_EW_POW && a->compute != DT_F32;
    if (int_pow && reset_flag()) return DT_ERR_BACKEND;
    k_ew<<<blocks_for(n), kThreads>>>(*a, n);
    CUDA_LAUNCHED();
    if (int_pow) {
        long long bad;
        int st;
        if (read_flag(&bad, &st)) {
            dt__backend_msg("Integers to negative integer powers are not allowed.");
            return DT_ERR_ARG;
        }
        return st;
    }
    return 0;
}

int cu_reduce(int index, const dt_reduce_args *a) {
    int64_t len = a->in.shape[a->dim], rows = numel_of(a->in) / (len ? len : 1);
    if (len == 0) rows = 1;
    for (int d = 0; len == 0 && d < a->in.ndim; d++)
        if (d != a->dim) rows *= a->in.shape[d];
    if (rows == 0) return 0;
    CUDA_CHECK(cudaSetDevice(index));
    k_reduce<<<(unsigned)(rows < 65535 ? rows : 65535), kThreads>>>(*a, rows, len);
    CUDA_LAUNCHED();
    return 0;
}

int cu_softmax(int index, const dt_softmax_args *a) {
    int64_t len = a->in.shape[a->dim], rows = len ? numel_of(a->in) / len : 0;
    if (rows == 0) return 0;
    CUDA_CHECK(cudaSetDevice(index));
    k_softmax<<<(unsigned)(rows < 65535 ? rows : 65535), kThreads>>>(*a, rows, len);
    CUDA_LAUNCHED();
    return 0;
}

int cu_matmul(int index, const dt_matmul_args *a) {
    int64_t Bn = a->out.shape[0], M = a->out.shape[1], N = a->out.shape[2];
    if (Bn == 0 || M == 0 || N == 0) return 0;
    if ((M + kTile - 1) / kTile > 65535) {
        dt__backend_msg("matmul: %lld rows exceed this kernel's grid limit", (long long)M);
        return DT_ERR_SHAPE;
    }
    CUDA_CHECK(cudaSetDevice(index));
    dim3 block(kTile, kTile);
    dim3 grid((unsigned)((N + kTile - 1) / kTile), (unsigned)((M + kTile - 1) / kTile),
              (unsigned)(Bn < 65535 ? Bn : 65535));
    k_matmul<<<grid, block>>>(*a);
    CUDA_LAUNCHED();
    return 0;
}

int cu_index_select(int index, const dt_index_args *a, int64_t *bad) {
    CUDA_CHECK(cudaSetDevice(index));
    if (reset_flag()) return DT_ERR_BACKEND;
    int64_t nidx = a->index.shape[0];
    k_check_index<<<blocks_for(nidx), kThreads>>>(a->index, a->in.shape[a->dim]);
    CUDA_LAUNCHED();
    long long v = 0;
    int st;
    if (read_flag(&v, &st)) {
        *bad = v;
        dt__backend_msg("index out of range in self");
        return DT_ERR_INDEX;
    }
    if (st) return st;
    int64_t n = numel_of(a->out);
    if (n == 0) return 0;
    k_index_select<<<blocks_for(n), kThreads>>>(*a, n);
    CUDA_LAUNCHED();
    return 0;
}

int cu_synchronize(int index) {
    CUDA_CHECK(cudaSetDevice(index));
    CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}

dt_backend make_backend() {
    dt_backend b = {};
    b.name = "cuda";
    b.host_accessible = 0;
    b.device_count = cu_count;
    b.alloc = cu_alloc;
    b.free = cu_free;
    b.copy_peer = cu_copy_peer;
    b.upload = cu_upload;
    b.download = cu_download;
    b.ew = cu_ew;
    b.reduce = cu_reduce;
    b.softmax = cu_softmax;
    b.matmul = cu_matmul;
    b.index_select = cu_index_select;
    b.synchronize = cu_synchronize;
    return b;
}

const dt_backend g_cuda_backend = make_backend();

} // namespace

extern "C" DT_HIDDEN const dt_backend *const dt__backend_cuda_ptr = &g_cuda_backend;
