/*
 * csr_sort.cu: sort each query's rows ascending on the GPU (CSR segments: query q owns
 * rows[offsets[q] .. offsets[q + 1])). The last step of every range fill (keys/index.c), of rx
 * lookup fills with duplicate keys and of spatial query fills; the API promises ascending rows
 * per query. The CPU half is csr.c's.
 *
 * Invariant: the caller's rows are written only by the last kernel or copy, after every sort
 * step succeeded, so a failure leaves them exactly as the fill left them (the all-or-nothing
 * contract of fills into device memory). Scratch: two total-sized u64 buffers plus CUB's temp
 * storage, all through the memory account.
 *
 * Steps:
 *   1. One pass over the rows and offsets (csr_facts_kernel) finds the OR of the rows (bits of
 *      the largest row), whether any segment has a descent, and how many rows lie in segments of
 *      2..64 rows ("small") and of more than 64 ("large"). Nothing to do when every segment has
 *      <= 1 row or is already ascending (dense keys loaded in order, implied rows, most fills of
 *      narrow ranges), so those cost one read of the rows.
 *   2. Otherwise one of two sorts, whichever choose_method's cost model says is faster:
 *      - packed: key = (query << row_bits) | row, one cub::DeviceRadixSort::SortKeys over just
 *        query_bits + row_bits bits, then the rows are unpacked into place; needs
 *        query_bits + row_bits <= 64. Its cost is the same per row whatever the segment sizes.
 *      - segmented: cub::DeviceSegmentedSort::SortKeys on a copy of the rows. CUB sorts
 *        segments of up to 64 u64 rows in registers and is fastest there; longer ones take a
 *        block radix sort over all 64 bits, mostly idle for a few hundred rows.
 *    The model's rates come from bench/segsort_probe.cu (bench/README.md, "CSR sorts", has the
 *    table, GPU and date). Tests force a path with rdx_csr_force_sort (core.h). The path taken
 *    and the model's estimates go to the context's log at debug level.
 */
#include <cub/cub.cuh>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.cuh"

namespace {

/* Longest segment CUB sorts in registers for u64 keys on sm_86+ (Policy860: 16 threads x 4). */
constexpr uint64_t kMediumMax = 64;
/* Queries per DeviceSegmentedSort call: it counts segments in int. */
constexpr int64_t kSlice = (int64_t)1 << 30;

struct csr_facts {
  unsigned long long row_or;            /* OR of every row: bits(max row) = bits(row_or) */
  unsigned long long descents;          /* i in [1, total) with rows[i] < rows[i - 1] */
  unsigned long long boundary_descents; /* those where i starts a non-empty segment */
  unsigned long long small_segments;    /* segments of 2 .. kMediumMax rows */
  unsigned long long small_rows;
  unsigned long long large_segments;    /* segments of more than kMediumMax rows */
  unsigned long long large_rows;
};

__device__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ unsigned long long warp_or(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v |= __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* Block size a multiple of 32: every lane reaches the warp reductions. */
__global__ void csr_facts_kernel(const uint64_t *offsets, int64_t n, const uint64_t *rows, int64_t total,
                                 csr_facts *f) {
  unsigned long long ror = 0, desc = 0, bdesc = 0, ss = 0, sr = 0, ls = 0, lr = 0;
  int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = first; i < total; i += stride) {
    uint64_t r = rows[i];
    ror |= r;
    if (i > 0 && r < rows[i - 1]) desc++;
  }
  for (int64_t q = first; q < n; q += stride) {
    uint64_t b = offsets[q], e = offsets[q + 1];
    if (e <= b) continue; /* empty */
    uint64_t len = e - b;
    /* a descent into the first row of a segment is allowed: it is not inside the segment */
    if (b > 0 && b < (uint64_t)total && rows[b] < rows[b - 1]) bdesc++;
    if (len >= 2) {
      if (len <= kMediumMax) ss++, sr += len;
      else ls++, lr += len;
    }
  }
  ror = warp_or(ror);
  desc = warp_sum(desc);
  bdesc = warp_sum(bdesc);
  ss = warp_sum(ss);
  sr = warp_sum(sr);
  ls = warp_sum(ls);
  lr = warp_sum(lr);
  if ((threadIdx.x & 31) == 0) {
    if (ror) atomicOr(&f->row_or, ror);
    if (desc) atomicAdd(&f->descents, desc);
    if (bdesc) atomicAdd(&f->boundary_descents, bdesc);
    if (ss) atomicAdd(&f->small_segments, ss), atomicAdd(&f->small_rows, sr);
    if (ls) atomicAdd(&f->large_segments, ls), atomicAdd(&f->large_rows, lr);
  }
}

/* keys[i] = (query of row i) << row_bits | rows[i]. The query is found by binary search over
 * the offsets (the last q with offsets[q] <= i; empty segments share their offset with the next
 * one). Neighbouring threads search for neighbouring i, so the search path mostly hits cache. */
__global__ void pack_kernel(const uint64_t *offsets, int64_t n, const uint64_t *rows, int64_t total, int row_bits,
                            uint64_t *keys) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t lo = 0, hi = n; /* offsets[lo] <= i < offsets[hi] */
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      if (offsets[mid] <= (uint64_t)i) lo = mid;
      else hi = mid;
    }
    /* row_bits == 64 only when query_bits == 0 (one query): no shift by 64 */
    keys[i] = (row_bits < 64 ? (uint64_t)lo << row_bits : 0) | rows[i];
  }
}

__global__ void unpack_kernel(const uint64_t *keys, int64_t total, uint64_t mask, uint64_t *rows) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
    rows[i] = keys[i] & mask;
}

int bits_used(unsigned long long v) { return v ? 64 - __builtin_clzll(v) : 0; }

unsigned grid_for(int64_t n) {
  unsigned g = rdx_grid(n, 256);
  return g < 4096 ? g : 4096;
}

rdx_status get_facts(rdx_context *ctx, const uint64_t *offsets, int64_t n, const uint64_t *rows, int64_t total,
                     csr_facts *h) {
  csr_facts *d = NULL;
  RDX_CHECK(rdx_scratch(ctx, "csr sort: sort facts", (void **)&d, sizeof *d));
  rdx_status st = RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(d, 0, sizeof *d, s), "csr sort: sort facts memset", st, done);
  csr_facts_kernel<<<grid_for(total > n ? total : n), 256, 0, s>>>(offsets, n, rows, total, d);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "csr sort: sort facts kernel", st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(h, d, sizeof *h, cudaMemcpyDeviceToHost, s), "csr sort: sort facts copy",
                st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "csr sort: sort facts", st, done);
done:
  rdx_mem_free(ctx, d);
  return st;
}

enum method { M_SEGMENTED, M_PACKED };

/* CUB's block path for segments of more than 64 rows (the probe's rates, G rows/s). */
double large_rate(double mean_len) {
  static const double len_l2[] = {8, 10, 14, 16}, rate[] = {3.327, 12.811, 17.466, 13.637};
  double l2 = mean_len > 1 ? log2(mean_len) : 0;
  if (l2 <= len_l2[0]) return rate[0];
  for (int k = 0; k < 3; k++)
    if (l2 <= len_l2[k + 1]) return rate[k] + (rate[k + 1] - rate[k]) * (l2 - len_l2[k]) / (len_l2[k + 1] - len_l2[k]);
  return rate[3];
}

method choose_method(const csr_facts &f, int64_t total, int bits, double *t_seg, double *t_packed) {
  double seg = (double)f.small_rows / 66.8;
  if (f.large_segments) seg += (double)f.large_rows / large_rate((double)f.large_rows / (double)f.large_segments);
  double packed = (double)total * (double)((bits + 7) / 8) / 113.0;
  *t_seg = seg;
  *t_packed = packed;
  return packed < seg ? M_PACKED : M_SEGMENTED;
}

rdx_status sort_packed(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows, int64_t total,
                       int row_bits, int bits) {
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  void *a = NULL, *b = NULL, *temp = NULL;
  size_t temp_bytes = 0;
  RDX_CHECK_GOTO(rdx_scratch(ctx, "csr sort: packed sort keys", &a, (size_t)total * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "csr sort: packed sort buffer", &b, (size_t)total * 8), st, done);
  {
    cub::DoubleBuffer<uint64_t> buf((uint64_t *)a, (uint64_t *)b);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, buf, total, 0, bits, s),
                  "csr sort: packed sort size", st, done);
    RDX_CHECK_GOTO(rdx_scratch(ctx, "csr sort: packed sort scratch", &temp, temp_bytes), st, done);
    pack_kernel<<<grid_for(total), 256, 0, s>>>(offsets, n, rows, total, row_bits, (uint64_t *)a);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "csr sort: pack kernel", st, done);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortKeys(temp, temp_bytes, buf, total, 0, bits, s),
                  "csr sort: packed sort", st, done);
    /* surface asynchronous sort errors before the caller's rows are touched */
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "csr sort: packed sort", st, done);
    uint64_t mask = row_bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << row_bits) - 1;
    unpack_kernel<<<grid_for(total), 256, 0, s>>>(buf.Current(), total, mask, rows);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "csr sort: unpack kernel", st, done);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "csr sort: unpack", st, done);
  }
done:
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, a);
  return st;
}

/* Read one offset to the host (stream-ordered, synchronous). */
rdx_status read_offset(rdx_context *ctx, const uint64_t *offsets, int64_t q, uint64_t *v) {
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemcpyAsync(v, offsets + q, 8, cudaMemcpyDeviceToHost, s), "csr sort: read offset");
  RDX_CUDA(ctx, cudaStreamSynchronize(s), "csr sort: read offset");
  return RDX_OK;
}

rdx_status sort_segmented(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows, int64_t total) {
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  void *a = NULL, *b = NULL, *temp = NULL;
  size_t temp_bytes = 0;
  const uint64_t *result = NULL;
  RDX_CHECK_GOTO(rdx_scratch(ctx, "csr sort: segmented sort copy", &a, (size_t)total * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, "csr sort: segmented sort buffer", &b, (size_t)total * 8), st, done);
  /* sort a copy: the caller's rows stay as they are until every slice has succeeded */
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(a, rows, (size_t)total * 8, cudaMemcpyDeviceToDevice, s),
                "csr sort: segmented sort copy", st, done);
  for (int64_t q0 = 0; q0 < n; q0 += kSlice) {
    int64_t len = n - q0 < kSlice ? n - q0 : kSlice;
    cub::DoubleBuffer<uint64_t> buf((uint64_t *)a, (uint64_t *)b);
    size_t need = 0;
    RDX_CUDA_GOTO(ctx, cub::DeviceSegmentedSort::SortKeys(NULL, need, buf, total, len, offsets + q0, offsets + q0 + 1, s),
                  "csr sort: segmented sort size", st, done);
    if (need > temp_bytes) {
      rdx_mem_free(ctx, temp);
      temp = NULL;
      temp_bytes = need;
      RDX_CHECK_GOTO(rdx_scratch(ctx, "csr sort: segmented sort scratch", &temp, temp_bytes), st, done);
    }
    RDX_CUDA_GOTO(ctx, cub::DeviceSegmentedSort::SortKeys(temp, temp_bytes, buf, total, len, offsets + q0, offsets + q0 + 1, s),
                  "csr sort: segmented sort", st, done);
    if (len == n) { /* one slice: the result is wherever CUB left it */
      result = buf.Current();
      break;
    }
    if (buf.Current() != (uint64_t *)a) { /* gather this slice's segments back into a */
      uint64_t lo = 0, hi = 0;
      RDX_CHECK_GOTO(read_offset(ctx, offsets, q0, &lo), st, done);
      RDX_CHECK_GOTO(read_offset(ctx, offsets, q0 + len, &hi), st, done);
      if (hi > lo)
        RDX_CUDA_GOTO(ctx, cudaMemcpyAsync((uint64_t *)a + lo, (uint64_t *)b + lo, (hi - lo) * 8, cudaMemcpyDeviceToDevice, s),
                      "csr sort: segmented sort gather", st, done);
    }
    result = (const uint64_t *)a;
  }
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "csr sort: segmented sort", st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(rows, result, (size_t)total * 8, cudaMemcpyDeviceToDevice, s),
                "csr sort: segmented sort copy back", st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "csr sort: segmented sort copy back", st, done);
done:
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, b);
  rdx_mem_free(ctx, a);
  return st;
}

/* The path taken, for the context's log (debug level), or RAYDEX_TRACE's marks when set. */
void log_debug(rdx_context *ctx, const char *msg) {
  if (rdx_trace_on()) rdx_trace(ctx, msg);
  else if (ctx->log_fn) ctx->log_fn(RDX_LOG_DEBUG, msg, ctx->log_user);
}

}  // namespace

extern "C" rdx_status rdx_csr_sort_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows) {
  if (n <= 0) return RDX_OK;
  uint64_t total = 0;
  RDX_CHECK(read_offset(ctx, offsets, n, &total));
  if (total < 2) return RDX_OK;
  csr_facts f;
  rdx_trace(ctx, "csr sort: start");
  RDX_CHECK(get_facts(ctx, offsets, n, rows, (int64_t)total, &f));
  rdx_trace(ctx, "csr sort: facts");
  char msg[256];
  if (f.small_segments + f.large_segments == 0 || f.descents == f.boundary_descents) {
    snprintf(msg, sizeof msg, "csr sort: %lld queries, %llu rows: %s, nothing to sort", (long long)n,
             (unsigned long long)total,
             f.small_segments + f.large_segments == 0 ? "no segment has 2 rows" : "every segment ascending");
    log_debug(ctx, msg);
    return RDX_OK;
  }
  int row_bits = bits_used(f.row_or), query_bits = bits_used((unsigned long long)(n - 1));
  int bits = row_bits + query_bits, fits = bits <= 64;
  double t_seg = 0, t_packed = 0;
  method m = choose_method(f, (int64_t)total, bits, &t_seg, &t_packed);
  if (ctx->force.csr_sort == RDX_CSR_SORT_SEGMENTED) m = M_SEGMENTED;
  if (ctx->force.csr_sort == RDX_CSR_SORT_PACKED) m = M_PACKED;
  if (!fits) m = M_SEGMENTED;
  snprintf(msg, sizeof msg,
           "csr sort: %lld queries, %llu rows (%llu in %llu segments of 2..64, %llu in %llu longer), %d query + %d row "
           "bits: %s (model: segmented %.3g ms, packed %.3g ms%s)",
           (long long)n, (unsigned long long)total, f.small_rows, f.small_segments, f.large_rows, f.large_segments,
           query_bits, row_bits, m == M_PACKED ? "packed" : "segmented", t_seg * 1e-6, t_packed * 1e-6,
           fits ? "" : ", packed does not fit 64 bits");
  log_debug(ctx, msg);
  rdx_status st = m == M_PACKED ? sort_packed(ctx, offsets, n, rows, (int64_t)total, row_bits, bits)
                                 : sort_segmented(ctx, offsets, n, rows, (int64_t)total);
  rdx_trace(ctx, m == M_PACKED ? "csr sort: packed radix sort" : "csr sort: segmented sort");
  return st;
}
