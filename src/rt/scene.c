/*
 * scene.c: scenes (a soft BVH or an OptiX GAS, by the context's backend) and the generic batched
 * traversal on the CPU. Rays are cut into chunks of 1024 over the thread pool.
 */
#include "rt/rt.h"

#include <stdlib.h>
#include <string.h>

rdx_status rdx_rt_scene_build(rdx_context *ctx, int kind, const float *prims, int64_t n,
                              const rdx_bvh_options *opts, rdx_rt_scene *out) {
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->backend = ctx->backend;
  out->n_input = n;
  if (kind != RDX_RT_TRIANGLES && kind != RDX_RT_AABBS)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_rt_scene_build: primitive kind %d", kind);
  switch (ctx->backend) {
    case RDX_BACKEND_CPU: return rdx_bvh_build_cpu(ctx, kind, prims, n, opts, &out->bvh);
    case RDX_BACKEND_CUDA: return rdx_bvh_build_cuda(ctx, kind, prims, n, opts, &out->bvh);
    case RDX_BACKEND_OPTIX: return rdx_optix_gas_build(ctx, kind, prims, n, &out->gas);
    default: break;
  }
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_rt_scene_build: backend 0x%x", (unsigned)ctx->backend);
}

void rdx_rt_scene_free(rdx_context *ctx, rdx_rt_scene *s) {
  rdx_bvh_free(ctx, &s->bvh);
  if (s->gas) rdx_optix_gas_free(ctx, s->gas);
  s->gas = NULL;
}

int64_t rdx_rt_scene_bytes(const rdx_rt_scene *s) {
  return s->gas ? rdx_optix_gas_bytes(s->gas) : rdx_bvh_bytes(&s->bvh);
}

rdx_status rdx_rt_trace(rdx_context *ctx, const rdx_rt_scene *s, const rdx_ray *rays, int64_t n,
                        rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts, const uint64_t *offsets,
                        uint32_t *ids) {
  if (s->backend != ctx->backend)
    return rdx_fail(ctx, RDX_ERR_MISUSE, "rdx_rt_trace: the scene was built for backend %s, not %s",
                    rdx_backend_name(s->backend), rdx_backend_name(ctx->backend));
  if (n == 0) return RDX_OK;
  switch (ctx->backend) {
    case RDX_BACKEND_CPU: return rdx_rt_trace_cpu(ctx, &s->bvh, rays, n, mode, hits, counts, offsets, ids);
    case RDX_BACKEND_CUDA: return rdx_rt_trace_cuda(ctx, &s->bvh, rays, n, mode, hits, counts, offsets, ids);
    case RDX_BACKEND_OPTIX: return rdx_optix_trace(ctx, s->gas, rays, n, mode, hits, counts, offsets, ids);
    default: break;
  }
  return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_rt_trace: backend 0x%x", (unsigned)ctx->backend);
}

/* ---- the CPU traversal ---- */

#define RCHUNK 1024

typedef struct trace_job {
  rdx_bvh_view v;
  const rdx_ray *rays;
  int64_t n;
  rdx_rt_mode mode;
  rdx_rt_hit *hits;
  uint64_t *counts;
  const uint64_t *offsets;
  uint32_t *ids;
} trace_job;

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void trace_task(void *arg, int64_t t, int thread) {
  const trace_job *j = (const trace_job *)arg;
  int64_t end = (t + 1) * RCHUNK < j->n ? (t + 1) * RCHUNK : j->n;
  int tri = j->v.kind == RDX_RT_TRIANGLES;
  for (int64_t i = t * RCHUNK; i < end; i++) {
    rdx_rt_generic_state s;
    s.hit.prim = RDX_RT_NO_HIT;
    s.hit.t = 0.0f;
    s.hit.front = 0;
    s.count = 0;
    s.out = NULL;
    const rdx_ray *r = j->rays + i;
    switch (j->mode) {
      case RDX_RT_FIRST_HIT:
        if (tri) rdx_rt_trace_first(&j->v, r, &s);
        else rdx_rt_trace_first_aabb(&j->v, r, &s);
        j->hits[i] = s.hit;
        break;
      case RDX_RT_CLOSEST_HIT:
        if (tri) rdx_rt_trace_closest(&j->v, r, &s);
        else rdx_rt_trace_closest_aabb(&j->v, r, &s);
        j->hits[i] = s.hit;
        break;
      case RDX_RT_ALL_HITS:
        if (j->ids) s.out = j->ids + j->offsets[i];
        if (tri) rdx_rt_trace_all(&j->v, r, &s);
        else rdx_rt_trace_all_aabb(&j->v, r, &s);
        if (j->counts) j->counts[i] = s.count;
        if (s.out && s.count > 1) qsort(s.out, (size_t)s.count, 4, cmp_u32);
        break;
    }
  }
}

rdx_status rdx_rt_trace_cpu(rdx_context *ctx, const rdx_bvh *b, const rdx_ray *rays, int64_t n,
                            rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts, const uint64_t *offsets,
                            uint32_t *ids) {
  trace_job j = {rdx_bvh_view_of(b), rays, n, mode, hits, counts, offsets, ids};
  return rdx_parallel_for(ctx, (n + RCHUNK - 1) / RCHUNK, trace_task, &j);
}
