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
 * growing temporary-storage area for CUB calls. Query and update calls, which allocate tens of
 * buffers per call, draw them from the index's arena (a bump allocator over
 * memory kept between calls; calls are synchronous, so nothing from the last call still uses
 * it) and fall back to fresh allocations beyond it; settle() grows the arena to what the call
 * needed, up to its limit, after a successful call. */
struct scratch {
  rdx_context *ctx;
  void *p[256];
  int n;
  void *temp;
  size_t temp_bytes;
  void **arena;
  size_t *arena_bytes;
  size_t used, want, limit;
  explicit scratch(rdx_context *c)
      : ctx(c), n(0), temp(nullptr), temp_bytes(0), arena(nullptr), arena_bytes(nullptr), used(0), want(0), limit(0) {}
  scratch(rdx_context *c, void **a, size_t *ab, size_t lim)
      : ctx(c), n(0), temp(nullptr), temp_bytes(0), arena(a), arena_bytes(ab), used(0), want(0), limit(lim) {}
  ~scratch() {
    for (int i = n - 1; i >= 0; i--) rdx_mem_free(ctx, p[i]);
  }
  scratch(const scratch &) = delete;
  scratch &operator=(const scratch &) = delete;
  rdx_status raw(void **out, size_t bytes, const char *what) {
    bytes = (bytes + 16 + 255) & ~(size_t)255;
    want += bytes;
    if (arena && *arena && used + bytes <= *arena_bytes) {
      *out = (char *)*arena + used;
      used += bytes;
      return RDX_OK;
    }
    *out = nullptr;
    if (n == 256) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: too many scratch buffers", what);
    void *q = nullptr;
    RDX_CHECK(rdx_scratch(ctx, what, &q, bytes));
    p[n++] = q;
    *out = q;
    return RDX_OK;
  }
  template <class T>
  rdx_status get(T **out, size_t count, const char *what) {
    void *q = nullptr;
    rdx_status st = raw(&q, count * sizeof(T), what);
    *out = (T *)q;
    return st;
  }
  void drop(void *q) { /* arena memory is reused by the next call, not freed */
    for (int i = 0; i < n; i++)
      if (p[i] == q) {
        rdx_mem_free(ctx, q);
        p[i] = p[--n];
        return;
      }
  }
  /* After a successful call: let the arena hold what this call needed and a quarter more, so
   * that the next, slightly larger batch fits too (best effort). */
  void settle() {
    if (!arena || want <= *arena_bytes) return;
    const size_t ask = want + want / 4;
    size_t grow = ask < limit ? ask : limit;
    if (grow <= *arena_bytes) return;
    for (int i = n - 1; i >= 0; i--) rdx_mem_free(ctx, p[i]);
    n = 0;
    temp = nullptr, temp_bytes = 0;
    if (*arena) rdx_mem_free(ctx, *arena);
    *arena = nullptr;
    *arena_bytes = 0;
    keep_message keep(ctx); /* a failed growth is no failure of the call */
    if (rdx_scratch(ctx, "rdx_points: scratch arena", arena, grow) == RDX_OK) *arena_bytes = grow;
  }
  /* Temporary storage for a CUB algorithm f (its size query only), taken now so that running f
   * later allocates nothing: updates take all their memory before their first write. f is
   * [&](void *temp, size_t &bytes) -> cudaError_t. */
  template <class F>
  rdx_status cub_reserve(const char *what, F f) {
    size_t bytes = 0;
    cudaError_t e = f(nullptr, bytes);
    if (e != cudaSuccess) return rdx_cuda_fail(ctx, e, what);
    if (bytes <= temp_bytes && temp != nullptr) return RDX_OK;
    size_t grow = bytes + bytes / 4 + 256;
    RDX_CHECK(raw(&temp, grow, what));
    temp_bytes = grow;
    return RDX_OK;
  }
  /* Run a CUB algorithm: size query, temporary storage, work. */
  template <class F>
  rdx_status cub(const char *what, F f) {
    RDX_CHECK(cub_reserve(what, f));
    size_t have = temp_bytes;
    cudaError_t e = f(temp, have);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) return rdx_cuda_fail(ctx, e, what);
    return RDX_OK;
  }
};

/* The arena limit of an index: 64 MiB plus 48 bytes per pool slot. */
static inline size_t arena_limit(const rdx_points *pts) { return ((size_t)64 << 20) + 48 * (size_t)pts->pool.cap; }

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

/* bytes (a multiple of 4) at p set to the 32-bit word v, by a kernel: its launch costs the host
 * less than cudaMemsetAsync, while the GPU waits for it (bench/results/NVIDIA-H200/UPDATES.md). */
static __global__ void sp_fill_kernel(uint32_t *p, int64_t words, uint32_t v) { SP_FOR(i, words) p[i] = v; }
static inline cudaError_t sp_fill(void *p, size_t bytes, uint32_t v, cudaStream_t s) {
  const int64_t words = (int64_t)(bytes / 4);
  if (words == 0) return cudaSuccess;
  sp_fill_kernel<<<blocks_for(words, 256), 256, 0, s>>>((uint32_t *)p, words, v);
  return cudaGetLastError();
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

/* The segment holding position j: the last of starts[0, n_seg) (ascending) <= j. */
static __device__ __forceinline__ int64_t seg_of(const int64_t *starts, int64_t n_seg, int64_t j) {
  int64_t lo = 0, hi = n_seg;
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (starts[mid] <= j) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* A growable host array through the memory account. Its blocks come back from the context's host
 * cache (memory.c), so a call that fills a megabyte of plan does not fault in fresh pages each
 * time, as std::vector's would in the VMs GPUs are lent in; and a failed allocation is a status. */
template <class T>
struct hbuf {
  rdx_context *ctx;
  T *v;
  int64_t n, cap;
  explicit hbuf(rdx_context *c) : ctx(c), v(nullptr), n(0), cap(0) {}
  ~hbuf() { rdx_mem_free(ctx, v); }
  hbuf(const hbuf &) = delete;
  hbuf &operator=(const hbuf &) = delete;
  rdx_status reserve(int64_t c) {
    if (c <= cap) return RDX_OK;
    int64_t nc = cap ? 2 * cap : 1024;
    while (nc < c) nc *= 2;
    T *q = nullptr;
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: host plan", (void **)&q, (size_t)nc * sizeof(T), RDX_HOST));
    if (n) memcpy((void *)q, (const void *)v, (size_t)n * sizeof(T));
    rdx_mem_free(ctx, v);
    v = q, cap = nc;
    return RDX_OK;
  }
  rdx_status resize(int64_t m) {
    RDX_CHECK(reserve(m));
    n = m;
    return RDX_OK;
  }
  rdx_status push(const T &x) {
    if (n == cap) RDX_CHECK(reserve(n + 1));
    v[n++] = x;
    return RDX_OK;
  }
  void swap(hbuf &o) {
    T *tv = v;
    int64_t tn = n, tc = cap;
    v = o.v, n = o.n, cap = o.cap;
    o.v = tv, o.n = tn, o.cap = tc;
  }
  T &operator[](int64_t i) { return v[i]; }
  const T &operator[](int64_t i) const { return v[i]; }
  T *data() { return v; }
  const T *data() const { return v; }
  int64_t size() const { return n; }
  void clear() { n = 0; }
};

/* k-d subtrees (kdtree.cu: builds, and update_kd.cu's splitting leaves) in two steps. Where a
 * node splits depends on its count only, so the host plans every level first (kd_plan_make) and
 * the device runs it without a wait (kd_run_orders, kd_run_levels); the split values come back
 * at the end.
 * Root r stands at (level, key) over positions [start, start + count) of the points, roots in
 * ascending start order, each root's points in id order (ties of a median go by id) and in its
 * own frame: the node r levels below a root splits on coordinate r % 2 (a caller swaps x and y
 * for roots at odd levels). */
struct kd_root {
  int64_t start, count;
  uint64_t key;
  int level;
};
struct kd_plan {
  hbuf<int64_t> tab;        /* the device tables: per level the segments' starts, halves (or -1),
                               places in the next level, split positions; then per leaf the list
                               that holds its order */
  hbuf<int64_t> rounds;     /* per level: segments, splitting ones, offset in tab */
  hbuf<int64_t> split_node; /* the node of each split value, in the run's order */
  hbuf<int64_t> leaf_node;  /* the leaves' nodes, in position order */
  int64_t leaf_off, max_ns;
  explicit kd_plan(rdx_context *c) : tab(c), rounds(c), split_node(c), leaf_node(c), leaf_off(0), max_ns(0) {}
};
/* The roots' nodes and their subtrees appended to *out (a leaf's fpos: its first position; the
 * split values: 0 until the run's come back), and the plan. */
rdx_status kd_plan_make(rdx_context *ctx, const kd_root *roots, int64_t n_roots, int depth, int64_t cap, rdx_sp_hlist *out,
                        kd_plan *p);
/* The device's part, in two steps so that the first overlaps the host's plan: kd_run_orders sorts
 * n < 2^32 points xy (interleaved, the index dtype, device) along both axes within their roots
 * (sid: each position's root) into *ls; kd_run_levels runs the plan p (its tab at d_tab) over
 * them and releases *ls. On return sid holds each position's leaf as an index into
 * p->leaf_node, perm the positions in leaf order, split the split values in p->split_node's
 * order. */
template <typename I>
struct kd_lists_t {
  I *L[2], *alt, *rank[2];
};
typedef kd_lists_t<uint32_t> kd_lists;
rdx_status kd_run_orders(scratch &m, const void *xy, int f64, int64_t n, int64_t n_roots, const uint32_t *sid, kd_lists *ls);
rdx_status kd_run_levels(scratch &m, const void *xy, int f64, int64_t n, const kd_plan &p, const int64_t *d_tab, kd_lists *ls,
                         uint32_t *sid, uint32_t *perm, double *split);

}  // namespace rdx_sp

#endif /* RDX_SP_CUDA_CUH */
