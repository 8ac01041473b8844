/*
 * csr.c: the CSR helpers every module's lookups and fills share (keys and spatial): the checks of
 * a fill's caller arrays, the counts-to-offsets scan (and the public rdx_counts_to_offsets), runs
 * of u64 set to one value, the search for a value, and the per-query sort of rows. The CPU halves
 * are here; the GPU halves are csr.cu and csr_sort.cu (nocuda.c without CUDA).
 *
 * Invariant: a fill writes row_ids only inside [0, offsets[n]), and only once the caller's
 * offsets are exactly the exclusive scan of this batch's counts (rdx_csr_check_offsets), so
 * stale or hostile offsets are refused instead of writing out of bounds.
 */
#include "core.h"

#include <string.h>

static const char *dtype_name(rdx_dtype d) {
  switch (d) {
    case RDX_U32: return "u32";
    case RDX_U64: return "u64";
    case RDX_F32: return "f32";
    case RDX_F64: return "f64";
    default: return "unknown";
  }
}

rdx_status rdx_array_check_u64(rdx_context *ctx, const char *fn, const char *name, rdx_array a, int64_t want) {
  RDX_CHECK(rdx_array_check(ctx, fn, name, a));
  if (a.dtype != RDX_U64 || a.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s must be 1-D u64 (dtype %s, columns %d)", fn, name,
                    dtype_name(a.dtype), a.columns);
  if (want >= 0 && a.count != want)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.count %lld != %lld", fn, name, (long long)a.count,
                    (long long)want);
  return RDX_OK;
}

rdx_status rdx_read_u64(rdx_context *ctx, const uint64_t *p, rdx_location where, int64_t i, uint64_t *v) {
  if (where == RDX_DEVICE) return rdx_copy(ctx, v, RDX_HOST, p + i, RDX_DEVICE, 8);
  *v = p[i];
  return RDX_OK;
}

rdx_status rdx_csr_fill_begin(rdx_context *ctx, const char *fn, int64_t n, rdx_array offsets, rdx_array row_ids,
                              uint64_t *total) {
  *total = 0;
  RDX_CHECK(rdx_array_check_u64(ctx, fn, "offsets", offsets, n + 1));
  RDX_CHECK(rdx_array_check_u64(ctx, fn, "row_ids", row_ids, -1));
  RDX_CHECK(rdx_read_u64(ctx, (const uint64_t *)offsets.data, offsets.where, n, total));
  if ((uint64_t)row_ids.count < *total)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: row_ids.count %lld < offsets[%lld] = %llu", fn,
                    (long long)row_ids.count, (long long)n, (unsigned long long)*total);
  if (n == 0 && *total != 0) /* offsets is {0}: its one entry is offsets[n] */
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: offsets[0] is %llu, not 0", fn, (unsigned long long)*total);
  return RDX_OK;
}

rdx_status rdx_csr_check_offsets(rdx_context *ctx, const char *fn, const uint64_t *offsets, const uint64_t *counts,
                                 int64_t n, const char *unit) {
  rdx_location loc = rdx_compute_location(ctx);
  uint64_t lo = 0, hi = 0, count = 0;
  RDX_CHECK(rdx_read_u64(ctx, offsets, loc, 0, &lo));
  if (lo != 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: offsets[0] is %llu, not 0", fn, (unsigned long long)lo);
  int64_t bad = -1;
  if (loc == RDX_DEVICE) {
    RDX_CHECK(rdx_offsets_check_cuda(ctx, fn, offsets, counts, n, &bad));
  } else {
    for (int64_t i = 0; i < n && bad < 0; i++)
      if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] != counts[i]) bad = i;
  }
  if (bad < 0) return RDX_OK;
  RDX_CHECK(rdx_read_u64(ctx, offsets, loc, bad, &lo));
  RDX_CHECK(rdx_read_u64(ctx, offsets, loc, bad + 1, &hi));
  RDX_CHECK(rdx_read_u64(ctx, counts, loc, bad, &count));
  if (hi < lo)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: offsets descend at query %lld (offsets[%lld] = %llu > offsets[%lld] = %llu)", fn,
                    (long long)bad, (long long)bad, (unsigned long long)lo, (long long)bad + 1, (unsigned long long)hi);
  return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                  "%s: offsets do not match this batch's counts (query %lld has %llu %s, offsets give %llu)", fn,
                  (long long)bad, (unsigned long long)count, unit, (unsigned long long)(hi - lo));
}

rdx_status rdx_csr_scan(rdx_context *ctx, const uint64_t *counts, int64_t n, rdx_location where, uint64_t *offsets,
                        uint64_t *total) {
  if (where == RDX_DEVICE) return rdx_csr_scan_cuda(ctx, counts, n, offsets, total);
  uint64_t s = 0;
  for (int64_t i = 0; i < n; i++) {
    offsets[i] = s;
    s += counts[i];
  }
  offsets[n] = s;
  *total = s;
  return RDX_OK;
}

rdx_status rdx_counts_to_offsets(rdx_context *ctx, rdx_array counts, rdx_array offsets, uint64_t *total) {
  static const char fn[] = "rdx_counts_to_offsets";
  RDX_CHECK(rdx_check_context(ctx));
  RDX_CHECK(rdx_array_check_u64(ctx, fn, "counts", counts, -1));
  RDX_CHECK(rdx_array_check_u64(ctx, fn, "offsets", offsets, counts.count + 1));
  if ((counts.where == RDX_DEVICE) != (offsets.where == RDX_DEVICE))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: counts and offsets must be in the same kind of memory (%d, %d)",
                    fn, (int)counts.where, (int)offsets.where);
  uint64_t t = 0;
  RDX_CHECK(rdx_csr_scan(ctx, (const uint64_t *)counts.data, counts.count,
                         counts.where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, (uint64_t *)offsets.data, &t));
  if (total) *total = t;
  return RDX_OK;
}

rdx_status rdx_fill_u64(rdx_context *ctx, uint64_t *p, int64_t n, int all_ones) {
  if (rdx_is_gpu(ctx)) return rdx_fill_u64_cuda(ctx, p, n, all_ones);
  memset(p, all_ones ? 0xFF : 0, (size_t)n * 8);
  return RDX_OK;
}

rdx_status rdx_find_u64(rdx_context *ctx, const uint64_t *p, int64_t n, rdx_location where, uint64_t value,
                        int64_t *first) {
  if (where == RDX_DEVICE) return rdx_find_u64_cuda(ctx, p, n, value, first);
  *first = -1;
  for (int64_t i = 0; i < n; i++)
    if (p[i] == value) {
      *first = i;
      break;
    }
  return RDX_OK;
}

/* ---- the per-query sort of rows on the CPU ----
 *
 * Small segments by insertion sort; larger ones by an LSD radix sort over the bytes that vary
 * within the segment (row ids below 2^32 take four passes), in a per-thread scratch buffer: the
 * passes stream where qsort pays a comparator call per comparison (bench/README.md, "CSR sorts"). */
typedef struct csr_job {
  const uint64_t *offsets;
  uint64_t *rows;
  int64_t n, chunk;
  uint64_t *scratch;      /* n_threads * max_len */
  uint64_t max_len;
} csr_job;

static void sort_segment(uint64_t *a, uint64_t len, uint64_t *tmp) {
  if (len <= 32) {
    for (uint64_t i = 1; i < len; i++) {
      uint64_t v = a[i], k = i;
      while (k > 0 && a[k - 1] > v) a[k] = a[k - 1], k--;
      a[k] = v;
    }
    return;
  }
  uint64_t any = 0, all = ~(uint64_t)0;
  for (uint64_t i = 0; i < len; i++) any |= a[i], all &= a[i];
  uint64_t varies = any ^ all; /* bits that are not the same in every row */
  uint64_t *src = a, *dst = tmp;
  for (int shift = 0; shift < 64; shift += 8) {
    if (((varies >> shift) & 255) == 0) continue;
    uint64_t count[257] = {0};
    for (uint64_t i = 0; i < len; i++) count[((src[i] >> shift) & 255) + 1]++;
    for (int d = 0; d < 256; d++) count[d + 1] += count[d];
    for (uint64_t i = 0; i < len; i++) dst[count[(src[i] >> shift) & 255]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, len * 8);
}

static void csr_sort_task(void *arg, int64_t t, int thread) {
  csr_job *j = (csr_job *)arg;
  int64_t lo = t * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n;
  uint64_t *tmp = j->scratch + (uint64_t)thread * j->max_len;
  for (int64_t q = lo; q < hi; q++) {
    uint64_t b = j->offsets[q], e = j->offsets[q + 1];
    if (e - b > 1) sort_segment(j->rows + b, e - b, tmp);
  }
}

static rdx_status csr_sort_cpu(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows) {
  csr_job j = {offsets, rows, n, 64, NULL, 0};
  for (int64_t q = 0; q < n; q++)
    if (offsets[q + 1] - offsets[q] > j.max_len) j.max_len = offsets[q + 1] - offsets[q];
  if (j.max_len <= 32) j.max_len = 0; /* insertion sort only: no scratch */
  RDX_CHECK(rdx_mem_alloc(ctx, "csr sort: scratch", (void **)&j.scratch,
                          (size_t)j.max_len * 8 * (size_t)ctx->n_threads, RDX_HOST));
  rdx_status st = rdx_parallel_for(ctx, (n + j.chunk - 1) / j.chunk, csr_sort_task, &j);
  rdx_mem_free(ctx, j.scratch);
  return st;
}

rdx_status rdx_csr_sort(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows) {
  return rdx_is_gpu(ctx) ? rdx_csr_sort_cuda(ctx, offsets, n, rows) : csr_sort_cpu(ctx, offsets, n, rows);
}

void rdx_csr_force_sort(rdx_context *ctx, int method) { ctx->force.csr_sort = method; }
