/*
 * bvh.c: the LBVH build on the CPU (steps in bvh_hd.h), on the context's thread pool.
 *
 * Every step is a parallel loop over chunks of primitives or nodes, except two short sequential
 * scans (active primitives, kept nodes) over per-chunk counts. The (code, index) sort is an LSD
 * radix sort over the 8-bit digits of the code that vary; indices start ascending and the sort
 * is stable, so equal codes stay in index order, as on the GPU. Tuned for the tests and the CPU
 * backend's key indexes (up to ~2^24 primitives on 2..16 cores).
 */
#include "rt/bvh_hd.h"
#include "rt/rt.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK 16384
#define RUN_CHECK_MAX 64 /* longer runs of equal codes count as coincident without a check */

typedef struct build_job {
  int kind;
  const float *in;       /* input primitives */
  int64_t n_in;
  const uint64_t *user_codes;
  int64_t n_chunks;
  /* step 1 */
  float (*chunk_box)[6]; /* per chunk: centroid box */
  int64_t *chunk_count;  /* per chunk: active primitives, then their offsets */
  uint32_t *active;      /* active input indices, ascending */
  int64_t n;             /* active primitives */
  float lo[3], scale[3];
  /* step 2, 3 */
  uint64_t *codes, *codes2;
  uint32_t *idx, *idx2;
  /* step 4.. */
  rdx_lbvh_node *tree;
  uint32_t *kept;        /* flags, then exclusive prefix sums */
  int64_t n_nodes;
  rdx_bvh *out;
  uint32_t *parent, *n_internal, *counter;
  int coincident;
} build_job;

static int64_t chunk_end(int64_t t, int64_t n) { return (t + 1) * CHUNK < n ? (t + 1) * CHUNK : n; }

static void boxes_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  float cb[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t cnt = 0;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n_in); i++) {
    float lo[3], hi[3];
    if (!rdx_lbvh_prim_box(j->kind, j->in, i, lo, hi)) continue;
    cnt++;
    for (int a = 0; a < 3; a++) {
      float c = RDX_FMUL(RDX_FADD(lo[a], hi[a]), 0.5f);
      if (c < cb[a]) cb[a] = c;
      if (c > cb[3 + a]) cb[3 + a] = c;
    }
  }
  memcpy(j->chunk_box[t], cb, sizeof cb);
  j->chunk_count[t] = cnt;
}

static void active_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  int64_t o = j->chunk_count[t];
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n_in); i++) {
    float lo[3], hi[3];
    if (rdx_lbvh_prim_box(j->kind, j->in, i, lo, hi)) j->active[o++] = (uint32_t)i;
  }
}

static void codes_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  for (int64_t s = t * CHUNK; s < chunk_end(t, j->n); s++) {
    uint32_t i = j->active[s];
    j->idx[s] = i;
    if (j->user_codes) {
      j->codes[s] = j->user_codes[i];
    } else {
      float lo[3], hi[3];
      rdx_lbvh_prim_box(j->kind, j->in, i, lo, hi);
      j->codes[s] = rdx_lbvh_code(lo, hi, j->lo, j->scale);
    }
  }
}

static void internal_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n - 1); i++) {
    rdx_lbvh_internal(j->codes, j->n, i, &j->tree[i]);
  }
}

static void kept_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n - 1); i++) j->kept[i] = rdx_lbvh_kept(j->tree, i);
}

typedef struct flags_job {
  uint32_t *flags;
  int64_t n;
  int64_t *chunk_count;
} flags_job;

static void flags_count_task(void *arg, int64_t t, int thread) {
  flags_job *j = (flags_job *)arg;
  int64_t c = 0;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n); i++) c += j->flags[i];
  j->chunk_count[t] = c;
}

static void flags_prefix_task(void *arg, int64_t t, int thread) {
  flags_job *j = (flags_job *)arg;
  uint32_t o = (uint32_t)j->chunk_count[t];
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n); i++) {
    uint32_t k = j->flags[i];
    j->flags[i] = o;
    o += k;
  }
}

rdx_status rdx_bvh_flags_to_offsets(rdx_context *ctx, uint32_t *flags, int64_t n, int64_t *total) {
  flags_job j = {flags, n, NULL};
  int64_t n_chunks = (n + CHUNK - 1) / CHUNK;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_bvh_build", (void **)&j.chunk_count, (size_t)(n_chunks + 1) * 8, RDX_HOST));
  rdx_parallel_for(ctx, n_chunks, flags_count_task, &j);
  int64_t sum = 0; /* per-chunk counts to chunk offsets */
  for (int64_t t = 0; t < n_chunks; t++) {
    int64_t c = j.chunk_count[t];
    j.chunk_count[t] = sum;
    sum += c;
  }
  rdx_parallel_for(ctx, n_chunks, flags_prefix_task, &j);
  rdx_mem_free(ctx, j.chunk_count);
  *total = sum;
  return RDX_OK;
}

static void emit_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n - 1); i++)
    if (rdx_lbvh_kept(j->tree, i)) rdx_lbvh_emit(j->tree, j->kept, i, j->out->nodes, j->parent, j->n_internal);
}

static void gather_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  int w = j->kind == RDX_RT_TRIANGLES ? 9 : 6;
  for (int64_t s = t * CHUNK; s < chunk_end(t, j->n); s++) {
    uint32_t i = j->idx[s];
    memcpy(j->out->prims + s * w, j->in + (int64_t)i * w, (size_t)w * sizeof(float));
    j->out->ids[s] = i;
  }
}

static void refit_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  rdx_bvh_node *nodes = j->out->nodes;
  for (int64_t m0 = t * CHUNK; m0 < chunk_end(t, j->n_nodes); m0++) {
    if (j->n_internal[m0] != 0) continue;
    uint32_t m = (uint32_t)m0;
    float box[6];
    rdx_lbvh_finish_node(j->kind, j->out->prims, nodes, m, box);
    while (m != 0) {
      uint32_t p = j->parent[m] >> 1, slot = j->parent[m] & 1;
      memcpy(nodes[p].box[slot], box, sizeof box);
      /* release our box, acquire the sibling's: the last of p's internal children goes on */
      uint32_t old = __atomic_fetch_add(&j->counter[p], 1u, __ATOMIC_ACQ_REL);
      if (old + 1 < j->n_internal[p]) break;
      rdx_lbvh_finish_node(j->kind, j->out->prims, nodes, p, box);
      m = p;
    }
  }
}

/* Runs of equal codes: do two primitives share a box? */
static void coincident_task(void *arg, int64_t t, int thread) {
  build_job *j = (build_job *)arg;
  int found = 0;
  for (int64_t s = t * CHUNK; s < chunk_end(t, j->n) && !found; s++) {
    if (s > 0 && j->codes[s] == j->codes[s - 1]) continue; /* not a run start */
    int64_t e = s + 1;
    while (e < j->n && j->codes[e] == j->codes[s]) e++;
    if (e - s > RUN_CHECK_MAX) {
      found = 1;
      break;
    }
    for (int64_t a = s; a < e && !found; a++)
      for (int64_t b = a + 1; b < e && !found; b++) {
        float la[3], ha[3], lb[3], hb[3];
        rdx_lbvh_prim_box(j->kind, j->out->prims, a, la, ha);
        rdx_lbvh_prim_box(j->kind, j->out->prims, b, lb, hb);
        found = memcmp(la, lb, sizeof la) == 0 && memcmp(ha, hb, sizeof ha) == 0;
      }
  }
  if (found) __atomic_store_n(&j->coincident, 1, __ATOMIC_RELAXED);
}

void rdx_bvh_free(rdx_context *ctx, rdx_bvh *b) {
  rdx_mem_free(ctx, b->nodes);
  rdx_mem_free(ctx, b->nodes4);
  rdx_mem_free(ctx, b->prims);
  rdx_mem_free(ctx, b->ids);
  b->nodes = NULL;
  b->nodes4 = NULL;
  b->prims = NULL;
  b->ids = NULL;
  b->n_nodes = b->n_nodes4 = b->n_prims = 0;
}

int64_t rdx_bvh_bytes(const rdx_bvh *b) {
  int w = b->kind == RDX_RT_TRIANGLES ? 9 : 6;
  return b->n_nodes * (int64_t)sizeof(rdx_bvh_node) + b->n_nodes4 * (int64_t)sizeof(rdx_bvh4_node) +
         b->n_prims * (int64_t)(w * 4 + 4);
}

rdx_status rdx_bvh_width(rdx_context *ctx, const rdx_bvh_options *opts, int *width) {
  int w = opts && opts->width != 0 ? opts->width : ctx->force.bvh_width != 0 ? ctx->force.bvh_width : 4;
  if (w != 2 && w != 4)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_bvh_build: width must be 2 or 4 (%d)", w);
  *width = w;
  return RDX_OK;
}

void rdx_rt_force_bvh_width(rdx_context *ctx, int width) { ctx->force.bvh_width = width; }

/* The normalisation of step 2, shared with bvh.cu: per axis, the centroid box onto [0, 2^21). */
void rdx_bvh_code_frame(const float *cb, float *lo, float *scale) {
  for (int a = 0; a < 3; a++) {
    float ext = cb[3 + a] - cb[a];
    lo[a] = cb[a];
    scale[a] = ext > 0.0f ? (float)(2097151.0 / (double)ext) : 0.0f;
  }
}

rdx_status rdx_bvh_build_cpu(rdx_context *ctx, int kind, const float *prims, int64_t n_in,
                             const rdx_bvh_options *opts, rdx_bvh *out) {
  static const char what[] = "rdx_bvh_build";
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->n_input = n_in;
  for (int a = 0; a < 3; a++) out->lo[a] = INFINITY, out->hi[a] = -INFINITY;
  if (n_in >= (int64_t)UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld primitives exceed 2^32 - 1", what, (long long)n_in);
  int width = 4;
  RDX_CHECK(rdx_bvh_width(ctx, opts, &width));
  out->width = width;
  build_job j;
  memset(&j, 0, sizeof j);
  j.kind = kind;
  j.in = prims;
  j.n_in = n_in;
  j.user_codes = opts ? opts->codes : NULL;
  j.out = out;
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  rdx_status st = RDX_OK;
  int64_t n_chunks_in = (n_in + CHUNK - 1) / CHUNK;
  void *meta = NULL;
  size_t meta_bytes = (size_t)(n_chunks_in + 1) * (sizeof(float[6]) + 8);
  RDX_CHECK(rdx_mem_alloc(ctx, what, &meta, meta_bytes, RDX_HOST));
  j.chunk_box = (float(*)[6])meta;
  j.chunk_count = (int64_t *)((char *)meta + (size_t)(n_chunks_in + 1) * sizeof(float[6]));

  /* 1: boxes, active primitives, centroid box */
  rdx_parallel_for(ctx, n_chunks_in, boxes_task, &j);
  float cb[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t n = 0;
  for (int64_t t = 0; t < n_chunks_in; t++) {
    for (int a = 0; a < 3; a++) {
      if (j.chunk_box[t][a] < cb[a]) cb[a] = j.chunk_box[t][a];
      if (j.chunk_box[t][3 + a] > cb[3 + a]) cb[3 + a] = j.chunk_box[t][3 + a];
    }
    int64_t c = j.chunk_count[t];
    j.chunk_count[t] = n;
    n += c;
  }
  j.n = n;
  out->n_prims = n;
  if (n == 0) {
    rdx_mem_free(ctx, meta);
    return RDX_OK;
  }
  rdx_bvh_code_frame(cb, j.lo, j.scale);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.active, (size_t)n * 4, RDX_HOST), st, fail);
  rdx_parallel_for(ctx, n_chunks_in, active_task, &j);

  /* 2, 3: codes and the sort */
  j.n_chunks = (n + CHUNK - 1) / CHUNK;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.codes, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.codes2, (size_t)n * 8, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.idx, (size_t)n * 4, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.idx2, (size_t)n * 4, RDX_HOST), st, fail);
  rdx_parallel_for(ctx, j.n_chunks, codes_task, &j);
  rdx_mem_free(ctx, j.active);
  j.active = NULL;
  RDX_CHECK_GOTO(rdx_radix_sort_u64(ctx, &j.codes, &j.codes2, &j.idx, &j.idx2, n), st, fail);
  rdx_mem_free(ctx, j.codes2);
  rdx_mem_free(ctx, j.idx2);
  j.codes2 = NULL;
  j.idx2 = NULL;

  /* leaf-ordered primitives */
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->prims, (size_t)n * w * 4, RDX_HOST), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->ids, (size_t)n * 4, RDX_HOST), st, fail);
  rdx_parallel_for(ctx, j.n_chunks, gather_task, &j);

  if (n <= RDX_RT_LEAF_MAX) {
    out->n_nodes = 1;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->nodes, sizeof(rdx_bvh_node), RDX_HOST), st, fail);
    rdx_bvh_node *nd = out->nodes;
    memset(nd, 0, sizeof *nd);
    nd->child[0] = 0;
    nd->count[0] = (uint32_t)n;
    nd->child[1] = RDX_BVH_NONE;
    nd->count[1] = 0;
    for (int a = 0; a < 3; a++) nd->box[1][a] = INFINITY, nd->box[1][3 + a] = -INFINITY;
    rdx_lbvh_leaf_box(kind, out->prims, 0, (uint32_t)n, nd->box[0]);
  } else {
    /* 4: radix tree; 5: collapse and renumber; 6: boxes */
    int64_t n_int = n - 1, n_chunks_int = (n_int + CHUNK - 1) / CHUNK;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.tree, (size_t)n_int * sizeof(rdx_lbvh_node), RDX_HOST), st, fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.kept, (size_t)n_int * 4, RDX_HOST), st, fail);
    rdx_parallel_for(ctx, n_chunks_int, internal_task, &j);
    rdx_parallel_for(ctx, n_chunks_int, kept_task, &j);
    int64_t total = 0;
    RDX_CHECK_GOTO(rdx_bvh_flags_to_offsets(ctx, j.kept, n_int, &total), st, fail);
    j.n_nodes = total;
    out->n_nodes = total;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->nodes, (size_t)total * sizeof(rdx_bvh_node), RDX_HOST), st,
                   fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.parent, (size_t)total * 12, RDX_HOST), st, fail);
    j.n_internal = j.parent + total;
    j.counter = j.n_internal + total;
    memset(j.counter, 0, (size_t)total * 4);
    rdx_parallel_for(ctx, n_chunks_int, emit_task, &j);
    rdx_parallel_for(ctx, (total + CHUNK - 1) / CHUNK, refit_task, &j);
  }
  rdx_parallel_for(ctx, j.n_chunks, coincident_task, &j);
  out->coincident = j.coincident;
  {
    const rdx_bvh_node *r = out->nodes;
    float root[6];
    rdx_lbvh_union(r->box[0], r->box[1], root);
    for (int a = 0; a < 3; a++) out->lo[a] = root[a], out->hi[a] = root[3 + a];
  }
  rdx_mem_free(ctx, j.tree);
  rdx_mem_free(ctx, j.kept);
  rdx_mem_free(ctx, j.parent);
  rdx_mem_free(ctx, j.codes);
  rdx_mem_free(ctx, j.idx);
  rdx_mem_free(ctx, meta);
  /* 7: the BVH4 */
  if (width == 4 && (st = rdx_bvh_collapse_cpu(ctx, out)) != RDX_OK) {
    rdx_bvh_free(ctx, out);
    return st;
  }
  return RDX_OK;
fail:
  rdx_mem_free(ctx, j.active);
  rdx_mem_free(ctx, j.codes);
  rdx_mem_free(ctx, j.codes2);
  rdx_mem_free(ctx, j.idx);
  rdx_mem_free(ctx, j.idx2);
  rdx_mem_free(ctx, j.tree);
  rdx_mem_free(ctx, j.kept);
  rdx_mem_free(ctx, j.parent);
  rdx_mem_free(ctx, meta);
  rdx_bvh_free(ctx, out);
  return st;
}
