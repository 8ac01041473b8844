/*
 * launch.cu: PIP and LSI on OptiX contexts: the engines that pip.cu's rdx_jn_pip_gpu and lsi.cu's
 * rdx_jn_lsi_gpu run (join.h), whose traversals are the join's OptiX programs (programs.cu, embedded
 * as OptiX-IR) over the join index's GAS, launched through rt's rdx_optix_launch. Everything around
 * the traversal (pass 2 of PIP, LSI's scans, points and pairs) is the CUDA backend's own code, so
 * the two GPU backends differ only in the engine that meets the boxes, and answer alike.
 *
 * Compiled only when OptiX is built (cmake/optix.cmake); other builds have src/join/optix_stub.c,
 * and their OptiX contexts cannot be created.
 */
#include <atomic>
#include <string.h>

#include "core/cuda_util.cuh"
#include "join/optix/launch.h"
#include "rdx_join_optix_ir.h"

namespace {

constexpr int TPB = 128;

const rdx_optix_program lsi_program = {
    "join lsi", rdx_join_optix_ir, sizeof rdx_join_optix_ir, "__raygen__lsi", NULL, NULL,
};
const rdx_optix_program pip_program = {
    "join pip", rdx_join_optix_ir, sizeof rdx_join_optix_ir, "__raygen__pip", NULL, NULL,
};

/* rdx_optix_launch copies at most 512 bytes of parameters */
static_assert(sizeof(rdx_jn_optix_params) <= 512, "the join's OptiX parameters outgrow rt's buffer");

std::atomic<int64_t> g_launches{0}; /* rdx_jn_optix_launches */

/* Launch prog over n queries on the index's group GAS, or its ring GAS when rings is set (n >= 1;
 * the index has at least one group and one ring, so each GAS holds at least one primitive: the
 * boxes are finite). */
rdx_status launch(rdx_context *ctx, const rdx_optix_program *prog, const rdx_jn_index *ix, rdx_jn_optix_params *p,
                  int64_t n, int rings = 0) {
  const rdx_optix_gas *gas = rings ? ix->rings.gas : ix->scene.gas;
  if (gas == NULL || ix->n_groups < 1 || ix->n_rings < 1)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_join: %s: the join index has no OptiX GAS (%lld groups, %lld rings)",
                    prog->name, (long long)ix->n_groups, (long long)ix->n_rings);
  /* R's magnitude or extent outside the range the GAS is traced in: every ray scans (programs.cu) */
  p->scan_all = !(ix->magnitude >= RDX_JN_OPTIX_MAG_MIN && ix->magnitude <= RDX_JN_OPTIX_MAG_MAX &&
                  ix->extent >= ix->magnitude * RDX_JN_OPTIX_EXTENT_MIN);
  p->n_groups = (uint32_t)ix->n_groups;
  RDX_CHECK(rdx_optix_launch(ctx, prog, gas, p, sizeof *p, n));
  g_launches.fetch_add(1, std::memory_order_relaxed);
  return RDX_OK;
}

rdx_jn_pip_geom geom_of(const rdx_polygons *r, const rdx_jn_index *ix) {
  rdx_jn_pip_geom g;
  g.xy = r->dev.xy;
  g.edge_end = r->dev.edge_end;
  g.edge_feat = r->dev.edge_feat;
  g.group_first = ix->group_first;
  g.group_span = ix->group_span;
  return g;
}

/* ---- PIP (rdx_jn_pip_engine) ----
 * Each pass is two launches: phase (A) of its queries on the ring GAS into reaches (4 bytes per
 * query, scratch), then the pass itself on the group GAS reading them (pip_hd.h). One program
 * cannot trace both GASes: rt hands a launch one GAS (rdx_optix_base). */

/* p's queries (the points, or p->list's) through phase (A) into p->reach (scratch of n floats),
 * then p's own op on the group GAS. */
rdx_status pip_launch(rdx_context *ctx, const rdx_jn_index *ix, rdx_jn_optix_params *p, int64_t n) {
  rdx_status st = rdx_scratch(ctx, "rdx_join_pip: phase (A) reaches", (void **)&p->reach, (size_t)n * 4);
  if (st != RDX_OK) return st;
  const int op = p->op;
  p->op = RDX_JN_OPTIX_PIP_RINGS;
  st = launch(ctx, &pip_program, ix, p, n, 1);
  p->op = op;
  if (st == RDX_OK) st = launch(ctx, &pip_program, ix, p, n);
  rdx_mem_free(ctx, p->reach); /* stream-ordered, and rdx_optix_launch has waited anyway */
  p->reach = NULL;
  return st;
}

rdx_status pip_pass1(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                     const int64_t *order, int64_t n, int planar, const rdx_jn_pip_out *out, uint32_t *pending) {
  rdx_jn_optix_params p;
  memset(&p, 0, sizeof p);
  p.op = RDX_JN_OPTIX_PIP;
  p.g = geom_of(r, ix);
  p.q = *q;
  p.list = order;
  p.planar = planar;
  p.out = *out;
  p.pending = pending;
  return pip_launch(ctx, ix, &p, n);
}

rdx_status pip_events(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                      const int64_t *list, int64_t nb, const uint64_t *boff, uint64_t *ev, int *mismatch) {
  rdx_jn_optix_params p;
  memset(&p, 0, sizeof p);
  p.op = RDX_JN_OPTIX_PIP_EVENTS;
  p.g = geom_of(r, ix);
  p.q = *q;
  p.list = list;
  p.boff = boff;
  p.ev = ev;
  p.mismatch = mismatch;
  return pip_launch(ctx, ix, &p, nb);
}

const rdx_jn_pip_engine optix_engine = {pip_pass1, pip_events};

rdx_status pip_optix(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy, int64_t n,
                     int planar, const rdx_jn_pip_out *out) {
  const rdx_jn_pip_query q = {xy, NULL, 0};
  return rdx_jn_pip_gpu(ctx, &optix_engine, r, ix, &q, n, planar, out);
}

/* Side PIP (join.h): the same engine over side queries. */
rdx_status side_pip_optix(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                          const uint32_t *dir_end, int64_t n, int side, const rdx_jn_pip_out *out) {
  const rdx_jn_pip_query q = {xy, dir_end, side < 0 ? -1 : 1};
  return rdx_jn_pip_gpu(ctx, &optix_engine, r, ix, &q, n, 0, out);
}

/* ---- LSI (rdx_jn_lsi_pass_fn) ---- */

__device__ uint64_t warp_sum(uint64_t v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, off);
  return v;
}

/* tally[0..3] += candidates, rays, clipped, brute over the counting pass's per-edge words: the
 * statistics lsi.cu's edges_kernel sums per warp as it goes, which OptiX programs cannot (they
 * have no warp-wide operations). Every lane reaches the warp sums. */
__global__ void tally_kernel(const uint64_t *edge_tally, int64_t n, unsigned long long *tally) {
  uint64_t t[4] = {0, 0, 0, 0};
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
    uint64_t w = edge_tally[e];
    int how = (int)(w >> RDX_JN_OPTIX_HOW_SHIFT);
    t[0] += w & ((1ull << RDX_JN_OPTIX_HOW_SHIFT) - 1);
    t[1] += how == RDX_JN_LSI_RAY;
    t[2] += how == RDX_JN_LSI_CLIPPED;
    t[3] += how == RDX_JN_LSI_BRUTE;
  }
  for (int k = 0; k < 4; k++) {
    uint64_t v = warp_sum(t[k]);
    if ((threadIdx.x & 31) == 0 && v != 0) atomicAdd(tally + k, (unsigned long long)v);
  }
}

rdx_status lsi_pass(rdx_context *ctx, const rdx_jn_lsi_r *r, const rdx_jn_index *ix, const rdx_polygons *s,
                    uint64_t *counts, const uint64_t *offsets, uint64_t *pairs, unsigned long long *tally,
                    int *mismatch) {
  const int64_t n_s = s->dev.n_vertices;
  rdx_jn_optix_params p;
  memset(&p, 0, sizeof p);
  p.op = RDX_JN_OPTIX_LSI;
  p.r = *r;
  p.s_xy = s->dev.xy;
  p.s_end = s->dev.edge_end;
  p.counts = counts;
  p.offsets = offsets;
  p.pairs = pairs;
  p.mismatch = mismatch;
  if (pairs != NULL) return launch(ctx, &lsi_program, ix, &p, n_s);
  RDX_CHECK(rdx_scratch(ctx, "rdx_join_lsi: statistics", (void **)&p.edge_tally, (size_t)n_s * 8));
  rdx_status st = launch(ctx, &lsi_program, ix, &p, n_s);
  if (st == RDX_OK) {
    tally_kernel<<<rdx_grid(n_s, TPB), TPB, 0, rdx_stream(ctx)>>>(p.edge_tally, n_s, tally);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_join_lsi: tally kernel");
  }
  rdx_mem_free(ctx, p.edge_tally); /* stream-ordered: after the tally kernel */
  return st;
}

rdx_status lsi_optix(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                     int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats) {
  return rdx_jn_lsi_gpu(ctx, lsi_pass, r, ix, s, want_points, out, stats);
}

rdx_status lsi_edge_pairs_optix(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                                uint64_t **pairs, int64_t *n_pairs, rdx_jn_lsi_stats *stats) {
  return rdx_jn_lsi_edge_pairs_gpu(ctx, lsi_pass, r, ix, s, pairs, n_pairs, stats);
}

/* ---- the GAS's boxes ---- */

/* Box bound b widened for the hardware (rdx_jn_optix_boxes): lo when lo is set, else hi. */
__device__ float widen(float b, int lo) {
  const float c = (float)RDX_JN_F32_CLAMP;
  const float s = lo ? -1.0f : 1.0f; /* outward */
  if (b == s * c) return 2.0f * s * c;                         /* clamped outward: beyond every ray */
  if (b == -s * c) return nextafterf(-s * c, s * INFINITY);    /* clamped inward: past the rays there */
  if (fabsf(b) < FLT_MIN) return s * FLT_MIN;                  /* tiny: 0 inside */
  return b;
}

__global__ void widen_kernel(float *boxes, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    for (int a = 0; a < 2; a++) { /* x, y; z is [-1, 1] */
      boxes[6 * i + a] = widen(boxes[6 * i + a], 1);
      boxes[6 * i + 3 + a] = widen(boxes[6 * i + 3 + a], 0);
    }
}

}  // namespace

/* The boxes index_hd.h proves sufficient contain every ray coordinate the soft test needs within
 * closed bounds; the pads make that strict everywhere except where a bound or a ray coordinate is
 * clamped to +-RDX_JN_F32_CLAMP (both then equal it) and, on hardware that flushes subnormal
 * numbers to zero, near 0. A ray lying exactly on a face of a box, along an axis where its
 * direction is 0, meets it only under closed arithmetic that hardware does not promise (the slab
 * test's 0 / 0), so the GAS gets its boxes widened: a bound clamped on its outer side moves to
 * +-2 RDX_JN_F32_CLAMP (box sums stay finite), one clamped on its inner side (a box wholly beyond
 * the clamp) one float past it, and a subnormal or zero bound to -+FLT_MIN on its outer side.
 * Every widening enlarges the box, so nothing the soft BVH finds is lost; the extra candidates
 * are decided exactly like the others. */
extern "C" rdx_status rdx_jn_optix_boxes(rdx_context *ctx, float *boxes, int64_t n) {
  if (n == 0) return RDX_OK;
  widen_kernel<<<rdx_grid(n, TPB), TPB, 0, rdx_stream(ctx)>>>(boxes, n);
  return rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_polygons_build_index: OptiX box kernel");
}

extern "C" int64_t rdx_jn_optix_launches(void) { return g_launches.load(std::memory_order_relaxed); }

/* The points' check and widening are plain kernels (pip.cu), the same on both GPU backends. */
extern "C" const rdx_jn_ops rdx_jn_pip_optix_ops = {
    RDX_JN_OP_PIP, RDX_BACKEND_OPTIX, NULL, rdx_jn_points_cuda, pip_optix, side_pip_optix, NULL, NULL, NULL,
    &optix_engine,
};
extern "C" const rdx_jn_ops rdx_jn_lsi_optix_ops = {
    RDX_JN_OP_LSI, RDX_BACKEND_OPTIX, NULL, NULL, NULL, NULL, lsi_optix, lsi_edge_pairs_optix, NULL, NULL,
};
