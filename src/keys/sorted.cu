/*
 * sorted.cu: the sorted kind on the GPU: the layout of sorted_hd.h (sorted (key, row) pairs in
 * 64-byte leaf blocks under an 8-ary separator tree), searched one thread per query; point
 * lookups read their leaf blocks in groups of four lanes (below).
 *
 * Per lookup the upper separator levels come from shared memory (each block loads the top
 * levels, up to TOP_BYTES, once), the lower ones from L2 as single aligned 32-byte sectors
 * (64 at width 64), and the leaf block from DRAM as one 64-byte access. Queries and results
 * stream with evict-first hints so the separators keep their place in L2. Tuned for 2^26 keys
 * and 2^27 lookups on an H200 (bench/results/NVIDIA-H200/).
 *
 * Ranges: a count pass finds both ends per query; a fill pass finds the first entry per query,
 * then an expand kernel copies rows with one thread per output row (load-balanced whatever the
 * range widths), and index.c sorts each query's rows.
 */
#include <new>

#include <cub/device/device_radix_sort.cuh>

#include "core/cuda_util.cuh"
#include "keys/sorted_hd.h"

namespace {

constexpr int THREADS = 256;
constexpr int TOP_BYTES = 12 * 1024; /* shared-memory budget for the upper separator levels */

struct sorted_impl {
  rdx_entries e;
  rdx_sorted_layout L;
  void *seps;       /* L.total separators (device), padding entries set to the max key */
  int top_level;    /* levels >= top_level live in shared memory during searches */
  int64_t top_off;  /* first element of the shared-memory part (== L.off[top_level]) */
  int64_t top_len;  /* elements copied to shared memory */
};

template <typename KEY>
struct key_traits;
template <>
struct key_traits<uint32_t> {
  typedef rdx_pair32 pair;
};
template <>
struct key_traits<uint64_t> {
  typedef rdx_pair64 pair;
};

/* Count of the 8 separators at p (one aligned node) that are < q. */
__device__ __forceinline__ int count_less8(const uint32_t *p, uint32_t q) {
  uint4 a = __ldg((const uint4 *)p), b = __ldg((const uint4 *)p + 1);
  return (a.x < q) + (a.y < q) + (a.z < q) + (a.w < q) + (b.x < q) + (b.y < q) + (b.z < q) + (b.w < q);
}
__device__ __forceinline__ int count_less8(const uint64_t *p, uint64_t q) {
  int c = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    ulonglong2 v = __ldg((const ulonglong2 *)p + i);
    c += (v.x < q) + (v.y < q);
  }
  return c;
}
__device__ __forceinline__ int count_less8_shared(const uint32_t *p, uint32_t q) {
  uint4 a = ((const uint4 *)p)[0], b = ((const uint4 *)p)[1];
  return (a.x < q) + (a.y < q) + (a.z < q) + (a.w < q) + (b.x < q) + (b.y < q) + (b.z < q) + (b.w < q);
}
__device__ __forceinline__ int count_less8_shared(const uint64_t *p, uint64_t q) {
  int c = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) c += p[i] < q;
  return c;
}

/* Leaf block search: index of the first entry >= q in the block starting at b (full block). */
__device__ __forceinline__ int leaf_count(const rdx_pair32 *e, int64_t b, uint32_t q, rdx_pair32 *hit) {
  const uint4 *p = (const uint4 *)(e + b); /* 8 pairs = 4 x 16 bytes */
  uint4 v[4];
#pragma unroll
  for (int i = 0; i < 4; i++) v[i] = __ldcs(p + i); /* read once: evict first */
  int c = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) c += (v[i].x < q) + (v[i].z < q);
  /* the entry at c (c < 8 by the separator invariant) */
  uint32_t k = 0, r = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    if (c == 2 * i) k = v[i].x, r = v[i].y;
    if (c == 2 * i + 1) k = v[i].z, r = v[i].w;
  }
  hit->key = k;
  hit->row = r;
  return c;
}
__device__ __forceinline__ int leaf_count(const rdx_pair64 *e, int64_t b, uint64_t q, rdx_pair64 *hit) {
  const ulonglong2 *p = (const ulonglong2 *)(e + b); /* 4 pairs = 4 x 16 bytes */
  ulonglong2 v[4];
#pragma unroll
  for (int i = 0; i < 4; i++) v[i] = __ldcs(p + i);
  int c = 0;
#pragma unroll
  for (int i = 0; i < 4; i++) c += v[i].x < q;
  uint64_t k = 0, r = 0;
#pragma unroll
  for (int i = 0; i < 4; i++)
    if (c == i) k = v[i].x, r = v[i].y;
  hit->key = k;
  hit->row = r;
  return c;
}

/* The leaf block of q's lower bound (its first entry), or -1 when every key is < q; the top levels
 * come from shared memory `top` (elements [top_off, top_off+top_len)). */
template <typename KEY>
__device__ __forceinline__ int64_t leaf_of(const KEY *seps, const KEY *top, const rdx_sorted_layout &L, int top_level,
                                           int64_t top_off, KEY q) {
  int64_t c = 0;
  /* the top level has at most 8 entries, padded to 8 with the max key */
  for (int l = L.n_levels - 1; l >= 0; l--) {
    int64_t b = l == L.n_levels - 1 ? 0 : c * RDX_SORTED_FANOUT;
    int cnt = l >= top_level ? count_less8_shared(top + (L.off[l] - top_off) + b, q) : count_less8(seps + L.off[l] + b, q);
    c = b + cnt;
    if (c == L.len[l]) return -1;
  }
  return c * L.block;
}

/* lower_bound: the index of the first entry >= q (L.n when every key is < q), *hit that entry. */
template <typename KEY>
__device__ __forceinline__ int64_t lower_bound(const typename key_traits<KEY>::pair *e, const KEY *seps,
                                               const KEY *top, const rdx_sorted_layout &L, int top_level,
                                               int64_t top_off, KEY q, typename key_traits<KEY>::pair *hit) {
  const int64_t b = leaf_of<KEY>(seps, top, L, top_level, top_off, q);
  if (b < 0) return L.n; /* every key is < q */
  if (b + L.block <= L.n) return b + leaf_count(e, b, q, hit);
  /* partial last block: scalar, never reading past the array */
  int64_t i = b;
  while (i < L.n && e[i].key < q) i++;
  if (i < L.n) *hit = e[i];
  return i;
}

template <typename KEY>
__device__ __forceinline__ void load_top(KEY *top, const KEY *seps, int64_t top_off, int64_t top_len) {
  for (int64_t i = threadIdx.x; i < top_len; i += blockDim.x) top[i] = seps[top_off + i];
  __syncthreads();
}

/* ---- point lookups: one query per thread, leaf blocks read by groups of GROUP lanes ----
 *
 * A lookup is a chain of dependent reads (the separator levels, then the 64-byte leaf block), so
 * its speed comes from the number of lookups in flight: one query per thread. The leaf read is
 * the random DRAM access; one thread loading its 64 bytes as four 16-byte loads makes four
 * requests, four lanes loading 16 bytes each make one, and the GPU serves about three times as
 * many random 64-byte reads a second that way (bench/results/NVIDIA-H200/ceiling.csv: "random
 * read 4 lanes x 16B"). So once the four lanes of a group have each found their leaf block, the
 * group reads the four blocks one after the other, all four lanes on one block at a time, and
 * the block's owner keeps the entry at its lower bound. The lanes of a group run the same number
 * of loop iterations, so the group is whole at every shuffle. */
constexpr int GROUP = 4;

__device__ __forceinline__ int group_sum(int c, unsigned mask) {
  c += __shfl_xor_sync(mask, c, 1, GROUP);
  return c + __shfl_xor_sync(mask, c, 2, GROUP);
}
/* The full leaf block at b, lane t reading its 16-byte part: the entry at the lower bound of q
 * (the separator invariant puts it in the block), for every lane of the group. */
__device__ __forceinline__ void group_leaf(const rdx_pair32 *e, int64_t b, uint32_t q, int t, unsigned mask,
                                           rdx_pair32 *hit) {
  uint4 v = __ldcs((const uint4 *)(e + b) + t); /* pairs 2t, 2t + 1; read once: evict first */
  int c = group_sum((v.x < q) + (v.z < q), mask);
  int second = c & 1;
  hit->key = __shfl_sync(mask, second ? v.z : v.x, c >> 1, GROUP);
  hit->row = __shfl_sync(mask, second ? v.w : v.y, c >> 1, GROUP);
}
__device__ __forceinline__ void group_leaf(const rdx_pair64 *e, int64_t b, uint64_t q, int t, unsigned mask,
                                           rdx_pair64 *hit) {
  ulonglong2 v = __ldcs((const ulonglong2 *)(e + b) + t); /* pair t */
  int c = group_sum(v.x < q, mask);
  hit->key = __shfl_sync(mask, v.x, c, GROUP);
  hit->row = __shfl_sync(mask, v.y, c, GROUP);
}

/* One row per query, or RDX_MISS. With perm (a sorted batch) the answer goes to the query's place. */
template <typename KEY, typename Q, typename P>
__global__ void __launch_bounds__(THREADS) lookup_kernel(const typename key_traits<KEY>::pair *e, const KEY *seps,
                                                         rdx_sorted_layout L, int top_level, int64_t top_off,
                                                         int64_t top_len, const Q *queries, const P *perm, int64_t n,
                                                         uint64_t *out) {
  extern __shared__ __align__(16) unsigned char smem[];
  KEY *top = (KEY *)smem;
  load_top(top, seps, top_off, top_len);
  const int t = threadIdx.x & (GROUP - 1);
  const unsigned mask = 0xFu << ((threadIdx.x & 31) & ~(GROUP - 1));
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t base = blockIdx.x * (int64_t)blockDim.x + threadIdx.x - t; base < n; base += stride) {
    const int64_t i = base + t;
    KEY q = i < n ? (KEY)__ldcs(queries + i) : (KEY)0;
    int64_t b = i < n ? leaf_of<KEY>(seps, top, L, top_level, top_off, q) : -1;
    typename key_traits<KEY>::pair hit;
    int found = 0;
    /* full blocks: each group member's in turn, read by the whole group */
#pragma unroll
    for (int j = 0; j < GROUP; j++) {
      int64_t bj = __shfl_sync(mask, b, j, GROUP);
      if (bj < 0 || bj + L.block > L.n) continue; /* the same for every lane of the group */
      KEY qj = __shfl_sync(mask, q, j, GROUP);
      typename key_traits<KEY>::pair h;
      group_leaf(e, bj, qj, t, mask, &h);
      if (j == t) hit = h, found = h.key == q;
    }
    if (b >= 0 && b + L.block > L.n) { /* the partial last block: scalar, never past the array */
      int64_t k = b;
      while (k < L.n && e[k].key < q) k++;
      found = k < L.n && e[k].key == q;
      if (found) hit = e[k];
    }
    if (i < n) {
      uint64_t r = found ? (uint64_t)hit.row : RDX_MISS;
      if (perm) out[perm[i]] = r;
      else __stcs(out + i, r);
    }
  }
}

/* first[i] = lower bound of lo_i; counts[i] = entries in [lo_i, hi_i] (point lookups: lo = hi) */
template <typename KEY, typename Q>
__global__ void __launch_bounds__(THREADS) span_kernel(const typename key_traits<KEY>::pair *e, const KEY *seps,
                                                       rdx_sorted_layout L, int top_level, int64_t top_off,
                                                       int64_t top_len, const Q *q, int64_t n, int range,
                                                       uint64_t *counts, uint64_t *first) {
  extern __shared__ __align__(16) unsigned char smem[];
  KEY *top = (KEY *)smem;
  load_top(top, seps, top_off, top_len);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    Q lo = range ? q[2 * i] : q[i], hi = range ? q[2 * i + 1] : q[i];
    typename key_traits<KEY>::pair hit;
    int64_t b = 0, end = 0;
    if (lo <= hi) {
      b = lower_bound<KEY>(e, seps, top, L, top_level, top_off, (KEY)lo, &hit);
      if (counts) {
        KEY kh = (KEY)hi;
        end = kh == (KEY)~(KEY)0 ? L.n : lower_bound<KEY>(e, seps, top, L, top_level, top_off, (KEY)(kh + 1), &hit);
      }
    }
    if (counts) counts[i] = (uint64_t)(end - b);
    if (first) first[i] = (uint64_t)b;
  }
}

/* One thread per output row: find its query by binary search over the offsets, copy the row. */
template <typename PAIR>
__global__ void expand_kernel(const PAIR *e, const uint64_t *offsets, const uint64_t *first, int64_t n,
                              uint64_t total, uint64_t *rows) {
  for (uint64_t j = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; j < total; j += (uint64_t)gridDim.x * blockDim.x) {
    int64_t lo = 0, hi = n; /* last query with offsets[q] <= j */
    while (hi - lo > 1) {
      int64_t mid = (lo + hi) >> 1;
      if (offsets[mid] <= j) lo = mid;
      else hi = mid;
    }
    rows[j] = e[first[lo] + (j - offsets[lo])].row;
  }
}

template <typename KEY>
__global__ void build_level_kernel(const typename key_traits<KEY>::pair *e, KEY *seps, rdx_sorted_layout L, int l) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.len[l]; i += (int64_t)gridDim.x * blockDim.x) {
    KEY v;
    if (l == 0) {
      int64_t j = i * L.block + L.block - 1;
      v = e[j < L.n ? j : L.n - 1].key;
    } else {
      int64_t j = i * RDX_SORTED_FANOUT + RDX_SORTED_FANOUT - 1, last = L.len[l - 1] - 1;
      v = seps[L.off[l - 1] + (j < last ? j : last)];
    }
    seps[L.off[l] + i] = v;
  }
}

__global__ void iota_kernel(uint32_t *p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (uint32_t)i;
}

unsigned query_grid(int64_t n) {
  /* enough blocks to fill the GPU several times over; grid-stride beyond that */
  unsigned g = rdx_grid(n, THREADS);
  return g < 132 * 16 ? g : 132 * 16;
}

/* The separator tree over s->e (n >= 1): s->L, s->seps and the shared-memory part planned and
 * written; on failure s->seps is NULL and nothing else is held. */
rdx_status make_seps(rdx_context *ctx, sorted_impl *s) {
  rdx_status st;
  cudaStream_t strm = rdx_stream(ctx);
  rdx_sorted_plan(&s->L, s->e.n, s->e.width);
  size_t ks = s->e.width / 8;
  s->seps = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "sorted: separators", &s->seps, (size_t)s->L.total * ks, RDX_DEVICE));
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(s->seps, 0xFF, (size_t)s->L.total * ks, strm), "sorted: separators", st, fail);
  for (int l = 0; l < s->L.n_levels; l++) {
    if (s->e.width == 32)
      build_level_kernel<uint32_t><<<rdx_grid(s->L.len[l], THREADS), THREADS, 0, strm>>>(
          (const rdx_pair32 *)s->e.pairs, (uint32_t *)s->seps, s->L, l);
    else
      build_level_kernel<uint64_t><<<rdx_grid(s->L.len[l], THREADS), THREADS, 0, strm>>>(
          (const rdx_pair64 *)s->e.pairs, (uint64_t *)s->seps, s->L, l);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "sorted: separator kernel", st, fail);
  }
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), "sorted: separators", st, fail);
  {
    /* the top levels that fit the shared-memory budget */
    int top = s->L.n_levels;
    while (top > 0 && (size_t)(s->L.total - s->L.off[top - 1]) * ks <= (size_t)TOP_BYTES) top--;
    s->top_level = top;
    s->top_off = top < s->L.n_levels ? s->L.off[top] : s->L.total;
    s->top_len = s->L.total - s->top_off;
  }
  return RDX_OK;
fail:
  rdx_mem_free(ctx, s->seps);
  s->seps = NULL;
  return st;
}

rdx_status sorted_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  sorted_impl *s = new (std::nothrow) sorted_impl();
  if (s == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: sorted handle");
  rdx_status st;
  RDX_CHECK_GOTO(rdx_entries_build_cuda(ctx, in, &s->e), st, fail);
  RDX_CHECK_GOTO(make_seps(ctx, s), st, fail);
  idx->impl = s;
  return RDX_OK;
fail:
  rdx_entries_free(ctx, &s->e);
  delete s;
  return st;
}

void sorted_destroy(rdx_context *ctx, rdx_index *idx) {
  sorted_impl *s = (sorted_impl *)idx->impl;
  rdx_mem_free(ctx, s->seps);
  rdx_entries_free(ctx, &s->e);
  delete s;
}

/* ---- updates: the batch merged into the entries or the erased keys filtered out (entries.cu),
 * the separators rebuilt over the result, aside; the old arrays go only once that worked. ---- */

/* Swap new entries in; ne is taken over either way, and on failure the index is untouched. */
rdx_status swap_in(rdx_context *ctx, sorted_impl *s, rdx_entries *ne) {
  sorted_impl fresh = *s;
  fresh.e = *ne;
  rdx_status st = make_seps(ctx, &fresh);
  if (st != RDX_OK) {
    rdx_entries_free(ctx, ne);
    return st;
  }
  rdx_mem_free(ctx, s->seps);
  rdx_entries_free(ctx, &s->e);
  *s = fresh;
  return RDX_OK;
}

rdx_status sorted_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_entries ne = {};
  RDX_CHECK(rdx_entries_merge_cuda(ctx, &((sorted_impl *)idx->impl)->e, in, &ne));
  return swap_in(ctx, (sorted_impl *)idx->impl, &ne);
}

/* Erasing every pair changes nothing here: index.c destroys the state when the count reaches 0. */
rdx_status sorted_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  rdx_entries ne = {};
  RDX_CHECK(rdx_entries_erase_cuda(ctx, &((sorted_impl *)idx->impl)->e, keys, idx->dtype, m, &ne, n_erased));
  if (ne.n == 0 || *n_erased == 0) {
    rdx_entries_free(ctx, &ne);
    return RDX_OK;
  }
  return swap_in(ctx, (sorted_impl *)idx->impl, &ne);
}

rdx_status sorted_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  return rdx_entries_copy_cuda(ctx, &((const sorted_impl *)idx->impl)->e, out);
}

/* Dispatch on the entry width and the query dtype. With RDX_BUILD_SORT_QUERIES, large batches
 * are sorted first (CUB radix sort of (query, position) pairs) and answered through the
 * permutation. */
template <typename KEY, typename Q>
rdx_status launch_lookup(rdx_context *ctx, const rdx_index *idx, const sorted_impl *s, const void *q, int64_t n,
                         uint64_t *out) {
  size_t smem = (size_t)s->top_len * sizeof(KEY);
  cudaStream_t strm = rdx_stream(ctx);
  const typename key_traits<KEY>::pair *e = (const typename key_traits<KEY>::pair *)s->e.pairs;
  if (!(idx->opts.flags & RDX_BUILD_SORT_QUERIES) || n < (1 << 16) || n > INT32_MAX) {
    lookup_kernel<KEY, Q, uint32_t><<<query_grid(n), THREADS, smem, strm>>>(
        e, (const KEY *)s->seps, s->L, s->top_level, s->top_off, s->top_len, (const Q *)q, NULL, n, out);
    RDX_LAUNCH_CHECK(ctx, "rdx_index_lookup: sorted lookup kernel");
    return RDX_OK;
  }
  Q *qs[2] = {NULL, NULL};
  uint32_t *ps[2] = {NULL, NULL};
  void *temp = NULL;
  size_t temp_bytes = 0;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_lookup: sorted queries", (void **)&qs[0], (size_t)n * sizeof(Q)), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_lookup: sorted queries", (void **)&qs[1], (size_t)n * sizeof(Q)), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_lookup: query order", (void **)&ps[0], (size_t)n * 4), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_lookup: query order", (void **)&ps[1], (size_t)n * 4), st, done);
  {
    cub::DoubleBuffer<Q> kb(qs[0], qs[1]);
    cub::DoubleBuffer<uint32_t> vb(ps[0], ps[1]);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(qs[0], q, (size_t)n * sizeof(Q), cudaMemcpyDeviceToDevice, strm),
                  "rdx_index_lookup: copy queries", st, done);
    iota_kernel<<<rdx_grid(n, THREADS), THREADS, 0, strm>>>(ps[0], n);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_lookup: iota", st, done);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, kb, vb, (int)n, 0, (int)sizeof(Q) * 8, strm),
                  "rdx_index_lookup: sort size", st, done);
    RDX_CHECK_GOTO(rdx_scratch(ctx, "rdx_index_lookup: sort scratch", &temp, temp_bytes), st, done);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortPairs(temp, temp_bytes, kb, vb, (int)n, 0, (int)sizeof(Q) * 8, strm),
                  "rdx_index_lookup: sort", st, done);
    lookup_kernel<KEY, Q, uint32_t><<<query_grid(n), THREADS, smem, strm>>>(
        e, (const KEY *)s->seps, s->L, s->top_level, s->top_off, s->top_len, kb.Current(), vb.Current(), n, out);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_index_lookup: sorted lookup kernel", st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(strm), "rdx_index_lookup: sorted lookup", st, done);
  }
done:
  rdx_mem_free(ctx, temp);
  for (int i = 0; i < 2; i++) {
    rdx_mem_free(ctx, qs[i]);
    rdx_mem_free(ctx, ps[i]);
  }
  return st;
}

template <typename KEY, typename Q>
rdx_status launch_span(rdx_context *ctx, const sorted_impl *s, const void *q, int64_t n, int range, uint64_t *counts,
                       uint64_t *first) {
  size_t smem = (size_t)s->top_len * sizeof(KEY);
  span_kernel<KEY, Q><<<query_grid(n), THREADS, smem, rdx_stream(ctx)>>>(
      (const typename key_traits<KEY>::pair *)s->e.pairs, (const KEY *)s->seps, s->L, s->top_level, s->top_off,
      s->top_len, (const Q *)q, n, range, counts, first);
  RDX_LAUNCH_CHECK(ctx, "sorted span kernel");
  return RDX_OK;
}

rdx_status span(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, int range, uint64_t *counts,
                uint64_t *first) {
  const sorted_impl *s = (const sorted_impl *)idx->impl;
  if (s->e.width == 32) return launch_span<uint32_t, uint32_t>(ctx, s, q, n, range, counts, first);
  if (idx->dtype == RDX_U32) return launch_span<uint64_t, uint32_t>(ctx, s, q, n, range, counts, first);
  return launch_span<uint64_t, uint64_t>(ctx, s, q, n, range, counts, first);
}

rdx_status sorted_lookup(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, uint64_t *out) {
  const sorted_impl *s = (const sorted_impl *)idx->impl;
  if (s->e.width == 32) return launch_lookup<uint32_t, uint32_t>(ctx, idx, s, q, n, out);
  if (idx->dtype == RDX_U32) return launch_lookup<uint64_t, uint32_t>(ctx, idx, s, q, n, out);
  return launch_lookup<uint64_t, uint64_t>(ctx, idx, s, q, n, out);
}

rdx_status fill(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, int range, const uint64_t *offsets,
                uint64_t *rows) {
  const sorted_impl *s = (const sorted_impl *)idx->impl;
  cudaStream_t strm = rdx_stream(ctx);
  uint64_t total = 0;
  RDX_CUDA(ctx, cudaMemcpyAsync(&total, offsets + n, 8, cudaMemcpyDeviceToHost, strm), "sorted fill: total");
  RDX_CUDA(ctx, cudaStreamSynchronize(strm), "sorted fill: total");
  uint64_t *first = NULL;
  RDX_CHECK(rdx_scratch(ctx, "sorted fill: first entries", (void **)&first, (size_t)n * 8));
  rdx_status st = span(ctx, idx, q, n, range, NULL, first);
  if (st == RDX_OK && total > 0) {
    unsigned g = rdx_grid((int64_t)total, THREADS);
    if (g > 132 * 64) g = 132 * 64;
    if (s->e.width == 32)
      expand_kernel<rdx_pair32><<<g, THREADS, 0, strm>>>((const rdx_pair32 *)s->e.pairs, offsets, first, n, total, rows);
    else
      expand_kernel<rdx_pair64><<<g, THREADS, 0, strm>>>((const rdx_pair64 *)s->e.pairs, offsets, first, n, total, rows);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(strm);
    if (e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "sorted fill: expand kernel");
  }
  rdx_mem_free(ctx, first);
  return st;
}

rdx_status sorted_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n, uint64_t *out,
                        uint64_t *rows) {
  int range = op >= RDX_KEY_RANGE_COUNT;
  if (op == RDX_KEY_LOOKUP) return sorted_lookup(ctx, idx, q, n, out);
  if (op == RDX_KEY_LOOKUP_COUNT || op == RDX_KEY_RANGE_COUNT) return span(ctx, idx, q, n, range, out, NULL);
  return fill(ctx, idx, q, n, range, out, rows);
}

}  // namespace

extern "C" const rdx_key_ops rdx_sorted_cuda_ops = {
    RDX_KIND_SORTED, RDX_BACKEND_CUDA, sorted_build, sorted_destroy, sorted_query, 1, 0, sorted_insert, sorted_erase, sorted_entries,
};
