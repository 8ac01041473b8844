/*
 * sp_cuda.cuh: what the spatial module's .cu files share: scratch memory that frees itself, the
 * CUB two-phase call pattern, kernel launch checks, host reads of device scalars, and the
 * order-preserving bit image of coordinates.
 *
 * Every allocation goes through the context's memory account (rdx_scratch), every CUDA call is
 * checked, and every kernel uses grid-stride loops with 64-bit indices, so batches past 2^31
 * work and any grid size is correct.
 */
#ifndef RDX_SP_CUDA_CUH
#define RDX_SP_CUDA_CUH

#include <cub/cub.cuh>

#include "core/cuda_util.cuh"
#include "spatial/spatial.h"

namespace rdx_sp {

/* Scratch buffers freed when the holder goes out of scope (or earlier with drop()), and one
 * growing temporary-storage arena for CUB calls (freeing device memory synchronises the device,
 * so reusing one arena keeps a pipeline of CUB calls asynchronous). */
struct scratch {
  rdx_context *ctx;
  void *p[256];
  int n;
  void *temp;
  size_t temp_bytes;
  explicit scratch(rdx_context *c) : ctx(c), n(0), temp(nullptr), temp_bytes(0) {}
  ~scratch() {
    for (int i = n - 1; i >= 0; i--) rdx_mem_free(ctx, p[i]);
    if (temp) rdx_mem_free(ctx, temp);
  }
  scratch(const scratch &) = delete;
  scratch &operator=(const scratch &) = delete;
  template <class T>
  rdx_status get(T **out, size_t count, const char *what) {
    *out = nullptr;
    if (n == 256) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: too many scratch buffers", what);
    void *q = nullptr;
    RDX_CHECK(rdx_scratch(ctx, what, &q, count * sizeof(T) + 16));
    p[n++] = q;
    *out = (T *)q;
    return RDX_OK;
  }
  void drop(void *q) {
    for (int i = 0; i < n; i++)
      if (p[i] == q) {
        rdx_mem_free(ctx, q);
        p[i] = p[--n];
        return;
      }
  }
  /* Hand a buffer over to a longer-lived owner: it is no longer freed here. */
  void keep(void *q) {
    for (int i = 0; i < n; i++)
      if (p[i] == q) {
        p[i] = p[--n];
        return;
      }
  }
  /* Run a CUB algorithm: size query, arena growth, work. f is
   * [&](void *temp, size_t &bytes) -> cudaError_t. */
  template <class F>
  rdx_status cub(const char *what, F f) {
    size_t bytes = 0;
    cudaError_t e = f(nullptr, bytes);
    if (e != cudaSuccess) return rdx_cuda_fail(ctx, e, what);
    if (bytes > temp_bytes || temp == nullptr) {
      if (temp) rdx_mem_free(ctx, temp);
      temp = nullptr;
      temp_bytes = 0;
      size_t want = bytes + bytes / 4 + 256;
      RDX_CHECK(rdx_scratch(ctx, what, &temp, want));
      temp_bytes = want;
    }
    size_t have = temp_bytes;
    e = f(temp, have);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) return rdx_cuda_fail(ctx, e, what);
    return RDX_OK;
  }
};

/* Copy `count` device values to the host and wait. */
template <class T>
rdx_status to_host(rdx_context *ctx, T *h, const T *d, size_t count, const char *what) {
  if (count == 0) return RDX_OK;
  RDX_CUDA(ctx, cudaMemcpyAsync(h, d, count * sizeof(T), cudaMemcpyDeviceToHost, rdx_stream(ctx)), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(rdx_stream(ctx)), what);
  return RDX_OK;
}
template <class T>
rdx_status to_device(rdx_context *ctx, T *d, const T *h, size_t count, const char *what) {
  if (count == 0) return RDX_OK;
  RDX_CUDA(ctx, cudaMemcpyAsync(d, h, count * sizeof(T), cudaMemcpyHostToDevice, rdx_stream(ctx)), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(rdx_stream(ctx)), what);
  return RDX_OK;
}

#define SP_LAUNCH_CHECK(ctx, what) RDX_CUDA(ctx, cudaGetLastError(), what)

/* Grid-stride loop over [0, n) with 64-bit indices. */
#define SP_FOR(i, n) \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)(n); i += (int64_t)gridDim.x * blockDim.x)

/* Blocks for n items: enough to fill the GPU, never more than needed. */
static inline unsigned blocks_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65536) b = 65536; /* grid-stride loops cover the rest */
  return (unsigned)b;
}

/* Order-preserving image of a double (-0.0 as 0.0), as the CPU k-d tree uses. */
__host__ __device__ __forceinline__ uint64_t order_bits(double v) {
  if (v == 0.0) v = 0.0;
#if defined(__CUDA_ARCH__)
  uint64_t b = (uint64_t)__double_as_longlong(v);
#else
  uint64_t b;
  memcpy(&b, &v, 8);
#endif
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}
__host__ __device__ __forceinline__ double from_order_bits(uint64_t u) {
  uint64_t b = (u >> 63) ? (u & 0x7FFFFFFFFFFFFFFFull) : ~u;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double((long long)b);
#else
  double v;
  memcpy(&v, &b, 8);
  return v;
#endif
}

static inline int bits_for(uint64_t v) { /* bits needed for values <= v */
  int b = 0;
  while (b < 64 && (v >> b) != 0) b++;
  return b;
}

}  // namespace rdx_sp

#endif /* RDX_SP_CUDA_CUH */
