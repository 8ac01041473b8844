/*
 * bvh4.c: step 7 of the build on the CPU (rule in bvh_hd.h): the finished binary tree collapsed
 * into a BVH4, on the thread pool. Parallel loops over chunks of binary nodes: parents, kept
 * flags (depth parity, by walking up), their offsets (rdx_bvh_flags_to_offsets), the BVH4 nodes.
 */
#include "rt/bvh_hd.h"
#include "rt/rt.h"

#include <string.h>

#define CHUNK 16384

typedef struct collapse_job {
  const rdx_bvh_node *nodes;
  int64_t n;            /* binary nodes */
  uint32_t *parent;     /* n */
  uint32_t *newidx;     /* n: kept flags, then exclusive prefix sums */
  rdx_bvh4_node *out;
} collapse_job;

static int64_t chunk_end(int64_t t, int64_t n) { return (t + 1) * CHUNK < n ? (t + 1) * CHUNK : n; }

static void parents_task(void *arg, int64_t t, int thread) {
  collapse_job *j = (collapse_job *)arg;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n); i++) rdx_bvh4_parents(j->nodes, i, j->parent);
}

static void kept_task(void *arg, int64_t t, int thread) {
  collapse_job *j = (collapse_job *)arg;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n); i++) j->newidx[i] = rdx_bvh4_kept(j->parent, i);
}

static void emit_task(void *arg, int64_t t, int thread) {
  collapse_job *j = (collapse_job *)arg;
  for (int64_t i = t * CHUNK; i < chunk_end(t, j->n); i++)
    if (rdx_bvh4_kept(j->parent, i)) rdx_bvh4_emit(j->nodes, j->newidx, i, j->out);
}

rdx_status rdx_bvh_collapse_cpu(rdx_context *ctx, rdx_bvh *b) {
  static const char what[] = "rdx_bvh_build";
  if (b->n_nodes == 0) { /* empty tree */
    b->width = 4;
    return RDX_OK;
  }
  collapse_job j;
  memset(&j, 0, sizeof j);
  j.nodes = b->nodes;
  j.n = b->n_nodes;
  int64_t n_chunks = (j.n + CHUNK - 1) / CHUNK;
  void *scratch = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, what, &scratch, (size_t)j.n * 8, RDX_HOST));
  j.parent = (uint32_t *)scratch;
  j.newidx = j.parent + j.n;
  j.parent[0] = 0;
  rdx_parallel_for(ctx, n_chunks, parents_task, &j);
  rdx_parallel_for(ctx, n_chunks, kept_task, &j);
  int64_t total = 0;
  rdx_status st = rdx_bvh_flags_to_offsets(ctx, j.newidx, j.n, &total);
  if (st == RDX_OK) st = rdx_mem_alloc(ctx, what, (void **)&j.out, (size_t)total * sizeof(rdx_bvh4_node), RDX_HOST);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, scratch);
    return st;
  }
  rdx_parallel_for(ctx, n_chunks, emit_task, &j);
  rdx_mem_free(ctx, scratch);
  rdx_mem_free(ctx, b->nodes);
  b->nodes = NULL;
  b->n_nodes = 0;
  b->nodes4 = j.out;
  b->n_nodes4 = total;
  b->width = 4;
  return RDX_OK;
}
