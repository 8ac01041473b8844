/*
 * cgrx.c: the cgrx kind on the CPU (soft BVH), and the build steps every backend shares.
 *
 * Build: sort the (key, row) pairs (rdx_entries_build_cpu, charged to the build as in the paper),
 * plan the buckets, emit every bucket's slots in parallel (cgrx_hd.h), build the tree over the
 * active triangles in key order (each slot's cell as its sort code; RDX_BUILD_RT_MORTON for
 * Morton codes), free the triangles. Resident: the entries and the tree.
 * Queries: locate the bucket with the ray sequence, binary-search it, then count or copy;
 * chunks of 1024 queries on the thread pool.
 */
#include "keys/cgrx.h"

#include <stdlib.h>
#include <string.h>

#define QCHUNK 1024
#define BCHUNK 16384

void rdx_cgrx_plan(rdx_cgrx_impl *x, const rdx_build_options *o) {
  rdx_cgrx_params *P = &x->P;
  memset(P, 0, sizeof *P);
  P->pairs = x->e.pairs;
  P->width = x->e.width;
  P->bucket = o->bucket_size;
  P->n = x->e.n;
  P->naive = (o->flags & RDX_BUILD_CGRX_NAIVE) != 0;
  int dflt = (o->flags & RDX_BUILD_CGRX_DEFAULT_MAPPING) != 0;
  P->sy = dflt ? 1.0f : RDX_CGRX_SCALE_Y;
  P->sz = dflt ? 1.0f : RDX_CGRX_SCALE_Z;
}

typedef struct emit_job {
  const rdx_cgrx_params *P;
  unsigned quirks;
  float *tris;
  uint64_t *codes;
} emit_job;

static void emit_task(void *arg, int64_t t, int thread) {
  const emit_job *j = (const emit_job *)arg;
  int64_t end = (t + 1) * BCHUNK < j->P->nb ? (t + 1) * BCHUNK : j->P->nb;
  for (int64_t b = t * BCHUNK; b < end; b++) rdx_cgrx_emit(j->P, b, j->quirks, j->tris, j->codes);
}

rdx_status rdx_cgrx_scene_cpu(rdx_context *ctx, rdx_cgrx_impl *x, unsigned quirks, int morton) {
  static const char what[] = "rdx_index_build: cgrx triangles";
  rdx_cgrx_params_init(&x->P);
  x->n_slots = rdx_cgrx_slots(&x->P);
  float *tris = NULL;
  uint64_t *codes = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&tris, (size_t)x->n_slots * 36, RDX_HOST), st, done);
  if (!morton) RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&codes, (size_t)x->n_slots * 8, RDX_HOST), st, done);
  emit_job j = {&x->P, quirks, tris, codes};
  rdx_parallel_for(ctx, (x->P.nb + BCHUNK - 1) / BCHUNK, emit_task, &j);
  rdx_bvh_options bo = {codes, 0}; /* width 0: the context's forced width, else BVH4 */
  st = rdx_rt_scene_build(ctx, RDX_RT_TRIANGLES, tris, x->n_slots, &bo, &x->scene);
done:
  rdx_mem_free(ctx, tris);
  rdx_mem_free(ctx, codes);
  return st;
}

void rdx_cgrx_impl_free(rdx_context *ctx, rdx_cgrx_impl *x) {
  if (x == NULL) return;
  rdx_rt_scene_free(ctx, &x->scene);
  rdx_entries_free(ctx, &x->e);
  rdx_mem_free(ctx, x->flag);
  free(x);
}

static rdx_status cgrx_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_cgrx_impl *x = (rdx_cgrx_impl *)calloc(1, sizeof *x);
  if (x == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: cgrx handle");
  rdx_status st;
  RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, in, &x->e), st, fail);
  rdx_cgrx_plan(x, &in->opts);
  RDX_CHECK_GOTO(rdx_cgrx_scene_cpu(ctx, x, 0, (in->opts.flags & RDX_BUILD_RT_MORTON) != 0), st, fail);
  idx->impl = x;
  return RDX_OK;
fail:
  rdx_cgrx_impl_free(ctx, x);
  return st;
}

static void cgrx_destroy(rdx_context *ctx, rdx_index *idx) { rdx_cgrx_impl_free(ctx, (rdx_cgrx_impl *)idx->impl); }

/* cgrx's buckets are its sorted entries: a copy of them. */
static rdx_status cgrx_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  return rdx_entries_copy_cpu(ctx, &((const rdx_cgrx_impl *)idx->impl)->e, out);
}

/* ---- queries ---- */

typedef struct query_job {
  const rdx_cgrx_impl *x;
  rdx_bvh_view v;
  const void *q;       /* queries or (lo, hi) pairs, or u64 keys (locate) */
  rdx_dtype dt;
  int64_t n;
  int op;              /* RDX_CGRX_OP_*, or -1: locate only */
  uint64_t *out;       /* rows / counts / offsets */
  uint64_t *rows;      /* fill target */
  int64_t *buckets;    /* locate: the bucket of each query */
  int *n_rays;         /* locate: rays of each query, or NULL */
  int broken;          /* a ray sequence ended without an answer */
} query_job;

static inline uint64_t key_at(const void *keys, rdx_dtype dt, int64_t i) {
  return dt == RDX_U32 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
}

static void query_task(void *arg, int64_t t, int thread) {
  query_job *j = (query_job *)arg;
  const rdx_cgrx_params *P = &j->x->P;
  int64_t end = (t + 1) * QCHUNK < j->n ? (t + 1) * QCHUNK : j->n;
  int range = j->op >= RDX_CGRX_OP_RANGE_COUNT;
  for (int64_t i = t * QCHUNK; i < end; i++) {
    uint64_t lo = key_at(j->q, j->dt, range ? 2 * i : i), hi = range ? key_at(j->q, j->dt, 2 * i + 1) : lo;
    int rays = 0;
    int64_t b = range && lo > hi ? RDX_CGRX_MISS : rdx_cgrx_locate_soft(P, &j->v, lo, &rays);
    if (b == RDX_CGRX_BROKEN) {
      __atomic_store_n(&j->broken, 1, __ATOMIC_RELAXED);
      b = RDX_CGRX_MISS;
    }
    if (j->op < 0) {
      j->buckets[i] = b;
      if (j->n_rays) j->n_rays[i] = rays;
      continue;
    }
    int64_t start = rdx_cgrx_start(P, b, lo);
    int64_t stop = rdx_cgrx_end(P, j->op, start, lo, hi);
    switch (j->op) {
      case RDX_CGRX_OP_LOOKUP: j->out[i] = stop > start ? rdx_cgrx_rowid(P, start) : RDX_MISS; break;
      case RDX_CGRX_OP_LOOKUP_COUNT:
      case RDX_CGRX_OP_RANGE_COUNT: j->out[i] = (uint64_t)(stop - start); break;
      default: {
        uint64_t *dst = j->rows + j->out[i];
        int64_t want = (int64_t)(j->out[i + 1] - j->out[i]);
        if (stop - start < want) want = stop - start; /* never past this query's results */
        for (int64_t k = 0; k < want; k++) dst[k] = rdx_cgrx_rowid(P, start + k);
      }
    }
  }
}

static rdx_status run(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, const void *q, int64_t n, int op,
                      uint64_t *out, uint64_t *rows, int64_t *buckets, int *n_rays) {
  query_job j = {x, rdx_bvh_view_of(&x->scene.bvh), q, dt, n, op, out, rows, buckets, n_rays, 0};
  RDX_CHECK(rdx_parallel_for(ctx, (n + QCHUNK - 1) / QCHUNK, query_task, &j));
  if (j.broken)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "cgrx: a lookup's ray sequence found no representative (a broken scene)");
  return RDX_OK;
}

rdx_status rdx_cgrx_locate_cpu(rdx_context *ctx, const rdx_cgrx_impl *x, const uint64_t *q, int64_t n,
                               int64_t *buckets, int *n_rays) {
  return run(ctx, x, RDX_U64, q, n, -1, NULL, NULL, buckets, n_rays);
}

_Static_assert(RDX_CGRX_OP_LOOKUP_FILL == (int)RDX_KEY_LOOKUP_FILL && RDX_CGRX_OP_RANGE_FILL == (int)RDX_KEY_RANGE_FILL,
               "cgrx ops follow rdx_key_op");
static rdx_status cgrx_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                             uint64_t *out, uint64_t *rows) {
  /* RDX_CGRX_OP_* share rdx_key_op's numbers */
  return run(ctx, (const rdx_cgrx_impl *)idx->impl, idx->dtype, q, n, (int)op, out, rows, NULL, NULL);
}

const rdx_key_ops rdx_cgrx_cpu_ops = {
    RDX_KIND_CGRX, RDX_BACKEND_CPU, cgrx_build, cgrx_destroy, cgrx_query, 1, 0, NULL, NULL, cgrx_entries,
};
