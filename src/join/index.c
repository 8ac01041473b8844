/*
 * index.c: the join index of a polygon layer (join.h's rdx_jn_index): the backend-independent
 * part (options, the absolute pad, timing, replace-on-success, free) and the CPU build.
 *
 * CPU build, on the thread pool, in three passes that index_hd.h's functions make identical to the
 * CUDA build (index.cu):
 *   1. per block of RDX_JN_GROUP_BLOCK edges (index_hd.h), the number of groups of RayJoin's
 *      greedy adaptive grouping;
 *   2. an exclusive scan of those counts (serial: one add per block) gives each block its first
 *      group, and each block writes its groups' first edges into group_first;
 *   3. per group (chunks of groups), the conservative float32 box and the y-span of its edges;
 *   4. per ring (chunks of rings, each chunk finding its first group by binary search and walking
 *      on), the union of its groups' boxes and spans, whose span goes back to each of its groups;
 *   5. per feature (chunks of features), the rings the ring scene keeps (index_hd.h's dominance
 *      rule: a running maximum over the feature's rings), their boxes then moved to the front;
 * then the scenes: the soft BVHs over the group boxes and over the ring boxes (Morton order; the
 * edge order of groups is coherent within a ring but not across rings). The boxes are scratch:
 * the trees keep their own copies. Tuned for maps of 10^4 to 10^8 edges in 10^2 to 10^7 rings.
 */
#include "join/index_hd.h"
#include "join/join.h"

#include <math.h>
#include <string.h>

#define BLOCKS_PER_TASK 256
#define GROUPS_PER_TASK 16384
#define RINGS_PER_TASK 16384
#define FEATURES_PER_TASK 64

double rdx_jn_layer_magnitude(const rdx_polygons *p) {
  if (p->host.n_vertices == 0) return 0.0;
  double m = 0.0;
  for (int a = 0; a < 2; a++) {
    if (fabs(p->lo[a]) > m) m = fabs(p->lo[a]);
    if (fabs(p->hi[a]) > m) m = fabs(p->hi[a]);
  }
  return m;
}

int64_t rdx_jn_index_bytes(const rdx_jn_index *ix) {
  if (!ix->built) return 0;
  return rdx_rt_scene_bytes(&ix->scene) + rdx_rt_scene_bytes(&ix->rings) + 4 * (ix->n_groups + 1) +
         8 * (ix->group_span ? ix->n_groups : 0);
}

void rdx_jn_index_free(rdx_context *ctx, rdx_jn_index *ix) {
  if (ix == NULL) return;
  rdx_rt_scene_free(ctx, &ix->scene);
  rdx_rt_scene_free(ctx, &ix->rings);
  rdx_mem_free(ctx, ix->group_first);
  rdx_mem_free(ctx, ix->group_span);
  memset(ix, 0, sizeof *ix);
}

void rdx_join_force_naive(rdx_context *ctx, int on) { ctx->force.join_naive = on != 0; }

rdx_status rdx_jn_index_make(rdx_context *ctx, const rdx_polygons *p, int32_t pad_ulps, double group_threshold,
                             double magnitude, rdx_jn_index *out) {
  memset(out, 0, sizeof *out);
  double m = rdx_jn_layer_magnitude(p);
  if (magnitude > m) m = magnitude;
  if (m > RDX_JN_F32_CLAMP) m = RDX_JN_F32_CLAMP; /* boxes are clamped there anyway */
  const int naive = ctx->force.join_naive; /* benchmarks only (index_hd.h) */
  out->pad_ulps = naive ? RDX_JN_PAD_NAIVE : pad_ulps;
  out->group_threshold = group_threshold;
  out->magnitude = m;
  if (p->host.n_vertices > 0)
    out->extent = fmax(p->hi[0] - p->lo[0], p->hi[1] - p->lo[1]);
  out->abs_pad = naive ? 0.0 : rdx_jn_abs_pad(m);
  out->n_rings = p->host.n_rings;
  out->scene.kind = out->rings.kind = RDX_RT_AABBS;
  out->scene.backend = out->rings.backend = ctx->backend;
  double t0 = rdx_now_ms();
  if (p->host.n_vertices > 0) { /* an empty layer has an empty index: no groups, an empty scene */
    const rdx_jn_ops *ops = rdx_jn_find_ops(RDX_JN_OP_INDEX, ctx->backend);
    if (ops == NULL)
      return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "rdx_polygons_build_index: no join index on backend %s",
                      rdx_backend_name(ctx->backend));
    rdx_status st = ops->index_build(ctx, p, out);
    if (st != RDX_OK) {
      rdx_jn_index_free(ctx, out);
      return st;
    }
  }
  out->build_ms = rdx_now_ms() - t0;
  out->built = 1;
  return RDX_OK;
}

rdx_status rdx_jn_index_build(rdx_context *ctx, rdx_polygons *p, int32_t pad_ulps, double group_threshold) {
  rdx_jn_index fresh;
  RDX_CHECK(rdx_jn_index_make(ctx, p, pad_ulps, group_threshold, 0.0, &fresh));
  rdx_jn_index_free(ctx, &p->index);
  p->index = fresh;
  return RDX_OK;
}

/* ---- the CPU build ---- */

typedef struct group_job {
  const rdx_jn_arrays *a;
  double s;
  int64_t n_blocks;     /* grouping blocks (index_hd.h) */
  uint64_t *block_group; /* pass 1: groups per block; pass 2: the block's first group */
  uint32_t *group_first;
  int pad_ulps;
  double abs_pad;
  float *boxes;         /* 6 per group */
  float *spans;         /* 2 per group: pass 3, its own y-span; pass 4, its ring's */
  float *ring_boxes;    /* 6 per ring */
  uint8_t *keep;        /* per ring: 1 when the ring scene keeps it */
  int64_t n_groups;
} group_job;

static void count_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const group_job *j = (const group_job *)arg;
  int64_t end = (t + 1) * BLOCKS_PER_TASK < j->n_blocks ? (t + 1) * BLOCKS_PER_TASK : j->n_blocks;
  for (int64_t k = t * BLOCKS_PER_TASK; k < end; k++)
    j->block_group[k] = rdx_jn_group_block(j->a->xy, j->a->edge_end, j->a->n_vertices, k, j->s, NULL);
}

static void starts_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const group_job *j = (const group_job *)arg;
  int64_t end = (t + 1) * BLOCKS_PER_TASK < j->n_blocks ? (t + 1) * BLOCKS_PER_TASK : j->n_blocks;
  for (int64_t k = t * BLOCKS_PER_TASK; k < end; k++)
    rdx_jn_group_block(j->a->xy, j->a->edge_end, j->a->n_vertices, k, j->s, j->group_first + j->block_group[k]);
}

static void boxes_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const group_job *j = (const group_job *)arg;
  int64_t end = (t + 1) * GROUPS_PER_TASK < j->n_groups ? (t + 1) * GROUPS_PER_TASK : j->n_groups;
  for (int64_t g = t * GROUPS_PER_TASK; g < end; g++)
    rdx_jn_group_box(j->a->xy, j->a->edge_end, j->group_first[g], j->group_first[g + 1], j->pad_ulps, j->abs_pad,
                     j->boxes + 6 * g, j->spans + 2 * g);
}

/* The first group at or after edge e: group_first is increasing and holds every ring's first
 * edge, so for e = ring_off[r] it is ring r's first group. */
static int64_t group_at(const uint32_t *group_first, int64_t n_groups, uint64_t e) {
  int64_t lo = 0, hi = n_groups; /* the answer is in [lo, hi] */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (group_first[mid] < e) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void rings_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const group_job *j = (const group_job *)arg;
  const int64_t n_rings = j->a->n_rings;
  int64_t r1 = (t + 1) * RINGS_PER_TASK < n_rings ? (t + 1) * RINGS_PER_TASK : n_rings;
  int64_t g = group_at(j->group_first, j->n_groups, j->a->ring_off[t * RINGS_PER_TASK]);
  for (int64_t r = t * RINGS_PER_TASK; r < r1; r++) {
    const uint64_t end = j->a->ring_off[r + 1];
    const int64_t g0 = g;
    rdx_jn_ring_acc acc = rdx_jn_ring_of_group(j->boxes + 6 * g, j->spans + 2 * g);
    for (g++; g < j->n_groups && j->group_first[g] < end; g++)
      acc = rdx_jn_ring_union(acc, rdx_jn_ring_of_group(j->boxes + 6 * g, j->spans + 2 * g));
    rdx_jn_ring_box(&acc, j->ring_boxes + 6 * r);
    for (int64_t k = g0; k < g; k++) j->spans[2 * k] = acc.span[0], j->spans[2 * k + 1] = acc.span[1];
  }
}

static void keep_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const group_job *j = (const group_job *)arg;
  const int64_t n_feat = j->a->n_features;
  int64_t f1 = (t + 1) * FEATURES_PER_TASK < n_feat ? (t + 1) * FEATURES_PER_TASK : n_feat;
  for (int64_t f = t * FEATURES_PER_TASK; f < f1; f++) {
    const uint64_t r0 = j->a->feat_off[f], r1 = j->a->feat_off[f + 1];
    rdx_jn_ring_big big = {0.0, 0};
    for (uint64_t r = r0; r < r1; r++) {
      const float *box = j->ring_boxes + 6 * r;
      j->keep[r] = r == r0 || !rdx_jn_box_within(box, j->ring_boxes + 6 * (uint64_t)big.ring);
      const rdx_jn_ring_big mine = rdx_jn_ring_big_of(box, (uint32_t)r);
      big = r == r0 ? mine : rdx_jn_ring_bigger(big, mine);
    }
  }
}

/* Passes 4 and 5: the ring boxes, the groups' ring spans, and the kept rings' boxes at the front
 * of j->ring_boxes (*n_kept of them). */
static rdx_status rings_cpu(rdx_context *ctx, group_job *j, int64_t *n_kept) {
  const rdx_jn_arrays *a = j->a;
  RDX_CHECK(rdx_parallel_for(ctx, (a->n_rings + RINGS_PER_TASK - 1) / RINGS_PER_TASK, rings_task, j));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_polygons_build_index", (void **)&j->keep, (size_t)a->n_rings, RDX_HOST));
  rdx_status st = rdx_parallel_for(ctx, (a->n_features + FEATURES_PER_TASK - 1) / FEATURES_PER_TASK, keep_task, j);
  int64_t k = 0;
  for (int64_t r = 0; st == RDX_OK && r < a->n_rings; r++)
    if (j->keep[r]) memmove(j->ring_boxes + 6 * k++, j->ring_boxes + 6 * r, 24);
  *n_kept = k;
  rdx_mem_free(ctx, j->keep);
  j->keep = NULL;
  return st;
}

static rdx_status index_build_cpu(rdx_context *ctx, const rdx_polygons *p, rdx_jn_index *out) {
  static const char what[] = "rdx_polygons_build_index";
  const rdx_jn_arrays *a = &p->host;
  double t0 = rdx_now_ms();
  rdx_status st = RDX_OK;
  float *boxes = NULL;
  group_job j;
  memset(&j, 0, sizeof j);
  j.a = a;
  j.s = out->group_threshold;
  j.pad_ulps = out->pad_ulps;
  j.abs_pad = out->abs_pad;
  j.n_blocks = (a->n_vertices + RDX_JN_GROUP_BLOCK - 1) / RDX_JN_GROUP_BLOCK;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.block_group, (size_t)j.n_blocks * 8, RDX_HOST), st, done);
  int64_t block_tasks = (j.n_blocks + BLOCKS_PER_TASK - 1) / BLOCKS_PER_TASK;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, block_tasks, count_task, &j), st, done);
  uint64_t total = 0;
  for (int64_t k = 0; k < j.n_blocks; k++) {
    uint64_t c = j.block_group[k];
    j.block_group[k] = total;
    total += c;
  }
  out->n_groups = (int64_t)total; /* at most one group per edge, so below 2^32 */
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->group_first, (size_t)(total + 1) * 4, RDX_HOST), st, done);
  j.group_first = out->group_first;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, block_tasks, starts_task, &j), st, done);
  out->group_first[total] = (uint32_t)a->n_vertices;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&boxes, (size_t)total * 24, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->group_span, (size_t)total * 8, RDX_HOST), st, done);
  j.boxes = boxes;
  j.spans = out->group_span;
  j.n_groups = (int64_t)total;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (j.n_groups + GROUPS_PER_TASK - 1) / GROUPS_PER_TASK, boxes_task, &j), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&j.ring_boxes, (size_t)a->n_rings * 24, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rings_cpu(ctx, &j, &out->n_ring_boxes), st, done);
  out->group_ms = rdx_now_ms() - t0;
  {
    rdx_bvh_options bo = {NULL, 0}; /* Morton codes; width 0: the context's forced width, else BVH4 */
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_AABBS, boxes, j.n_groups, &bo, &out->scene), st, done);
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_AABBS, j.ring_boxes, out->n_ring_boxes, &bo, &out->rings), st, done);
  }
done:
  rdx_mem_free(ctx, j.block_group);
  rdx_mem_free(ctx, boxes);
  rdx_mem_free(ctx, j.ring_boxes);
  return st; /* on failure rdx_jn_index_make frees what out holds */
}

const rdx_jn_ops rdx_jn_index_cpu_ops = {
    RDX_JN_OP_INDEX, RDX_BACKEND_CPU, index_build_cpu, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
