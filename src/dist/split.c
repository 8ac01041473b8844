/*
 * split.c: what the sharded indexes (keys.c, points.c) share: how they split their items over the
 * ranks (splitters from a stratified sample; the exclusive scans that place each rank's items: a
 * rank's offset in the concatenation in rank order, a destination's start in a send buffer), the
 * host scratch they take through the context's account, and the CSR result they hand back.
 *
 * Splitters (sample sort's regular sampling, stratified): rank r draws s_r ~ n_r / N of about 256
 * samples a rank, one at a pseudo-random place in each equal slice of its input, so a sorted or a
 * periodic input samples as well as a random one; the samples are gathered and sorted, and every
 * (T / size)-th of the T samples is a splitter. The draw is a fixed hash sequence seeded by the
 * rank, so a build's splitters depend only on the ranks' inputs.
 */
#include "dist/dist.h"
#include "keys/hash_hd.h"

#include <stdlib.h>

rdx_status rdx_dist_take(rdx_context *ctx, const char *what, void *ptr, int64_t n, size_t item) {
  size_t bytes = 0;
  if (n < 0 || !rdx_size_rows(n, 1, item, &bytes))
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %lld items of %zu bytes overflow size_t", what, (long long)n, item);
  return rdx_mem_alloc(ctx, what, (void **)ptr, bytes, RDX_HOST);
}

int rdx_dist_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

const char *rdx_dist_dtype_name(int32_t d) {
  return d == RDX_U32 ? "u32" : d == RDX_U64 ? "u64" : d == RDX_I64 ? "i64" : d == RDX_F32 ? "f32" : d == RDX_F64 ? "f64" : "?";
}

int64_t rdx_dist_scan(const int64_t *counts, int size, int64_t *starts) {
  int64_t at = 0;
  for (int p = 0; p < size; p++) {
    starts[p] = at;
    at += counts[p];
  }
  return at;
}

rdx_status rdx_dist_splitters(rdx_comm *comm, const char *fn, const int64_t *rank_counts, const uint64_t *values, int64_t n,
                              uint64_t *splitters) {
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  int64_t n_total = 0, t = 0, *counts = NULL; /* counts: each rank's samples */
  uint64_t *mine = NULL, *every = NULL;
  for (int r = 0; r < size; r++) n_total += rank_counts[r];
  rdx_status st = rdx_dist_take(ctx, fn, &counts, size, 8);
  if (st == RDX_OK) {
    for (int r = 0; r < size; r++) {
      int64_t n_r = rank_counts[r], s = 0;
      if (n_r > 0) {
        s = 1 + (int64_t)((double)n_r / (double)n_total * (256.0 * size));
        if (s > n_r) s = n_r;
      }
      counts[r] = s;
      t += s;
    }
    st = rdx_dist_take(ctx, fn, &mine, counts[comm->rank], 8);
  }
  if (st == RDX_OK) st = rdx_dist_take(ctx, fn, &every, t, 8);
  if (st == RDX_OK && counts[comm->rank] > 0) {
    const int64_t s = counts[comm->rank], stride = n / s; /* >= 1, as s <= n */
    uint64_t z = 0x243F6A8885A308D3ull ^ (uint64_t)comm->rank;
    for (int64_t j = 0; j < s; j++) {
      z = rdx_hash_mix64(z + 0x9E3779B97F4A7C15ull);
      mine[j] = values[j * stride + (int64_t)(z % (uint64_t)stride)];
    }
  }
  st = rdx_comm_agree(comm, fn, st);
  if (st != RDX_OK) goto done;
  RDX_CHECK_GOTO(comm->ops->allgatherv(comm, mine, counts, every, 8), st, done);
  qsort(every, (size_t)t, 8, rdx_dist_cmp_u64);
  for (int p = 0; p + 1 < size; p++) {
    int64_t at = t == 0 ? -1 : (int64_t)((double)(p + 1) * (double)t / size) - 1;
    splitters[p] = at < 0 ? (t ? every[0] : 0) : every[at];
  }
done:
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, mine);
  rdx_mem_free(ctx, every);
  return st;
}

/* rdx_result_make's count and fill over answers already on the host. */
typedef struct made {
  rdx_context *ctx;
  const uint64_t *counts; /* n */
  const uint64_t *rows;   /* sum of counts */
  uint64_t total;
} made;
static rdx_status made_count(void *arg, rdx_array counts) {
  const made *a = (const made *)arg;
  return rdx_copy(a->ctx, counts.data, counts.where, a->counts, RDX_HOST, (size_t)counts.count * 8);
}
static rdx_status made_fill(void *arg, rdx_array offsets, rdx_array rows) {
  const made *a = (const made *)arg;
  (void)offsets; /* made from the same counts */
  return rdx_copy(a->ctx, rows.data, rows.where, a->rows, RDX_HOST, (size_t)a->total * 8);
}

rdx_status rdx_dist_result(rdx_context *ctx, const char *fn, int64_t n, rdx_location where, const uint64_t *counts,
                           const uint64_t *rows, rdx_result **out) {
  made a = {ctx, counts, rows, 0};
  for (int64_t i = 0; i < n; i++) a.total += counts[i];
  return rdx_result_make(ctx, fn, n, where == RDX_DEVICE ? RDX_DEVICE : RDX_HOST, made_count, made_fill, &a, out);
}

int rdx_dist_gpu_capable(const rdx_comm *comm, int max_ranks) {
  return comm->ops->alltoallv_device != NULL && rdx_is_gpu(comm->ctx) && !comm->ctx->force.dist_host &&
         comm->size <= max_ranks;
}
