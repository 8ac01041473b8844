/*
 * programs.cu: the join module's OptiX device programs, compiled to OptiX-IR at build time
 * (cmake/optix.cmake: nvcc -optix-ir) and embedded in the library; rt makes the module and the
 * pipelines from it (rdx_optix_launch). They trace the join index's GAS (one custom primitive per
 * group of R's edges, index_hd.h's conservative boxes) with RayJoin's shape (digest sections 3, 4
 * and 7): all the work is folded into the intersection program, which scans the group's edges and
 * decides each exactly; any-hit and closest-hit programs are disabled on every ray.
 *
 * One copy of the logic. The rays, the per-edge decisions, the states and the answers are
 * lsi_hd.h's and pip_hd.h's, the very functions the soft backends run (side PIP's queries
 * included: pip_hd.h decides them in the same programs, and its file comment shows the boxes'
 * margins hold for them as for points): the raygen programs
 * instantiate RDX_JN_LSI_DEFINE_EDGE and RDX_JN_PIP_DEFINE_POINT with an OptiX cast, and
 * __intersection__box calls rdx_jn_lsi_isect, rdx_jn_pip_general_isect or rdx_jn_pip_planar_isect
 * on the ray's state. The state lives in the raygen program's frame; its address travels in
 * payload words 0 and 1 (the per-ray-data pointer of the OptiX SDK's samples) and the rule in
 * word 2, so the intersection program updates it in place.
 *
 * Why OptiX finds what the soft BVH finds. index_hd.h and lsi_hd.h prove that every group holding
 * an edge that decides an answer has a box around the exact float32 ray with room to spare: the
 * pads put the PIP ray's origin strictly inside the box's x-range and below its top, and keep a
 * ball of radius tol around the LSI ray's points inside the box; where clamping (or a subnormal
 * flushed to zero) could put a ray on a face instead, the GAS's boxes are widened
 * (rdx_jn_optix_boxes, launch.cu). Ray-tracing hardware tests boxes conservatively (it may report
 * a box the ray misses, never miss one it meets: the DXR and Vulkan specifications allow false
 * positives only), so the intersection program runs on every such group. It may run on a few
 * more, whose edges the exact tests then reject or count as the soft path would: answers never
 * depend on which extra groups are scanned. So the soft box test is not repeated here (only
 * statistics such as LSI's candidates may differ from the soft BVH's). Each
 * group must be scanned at most once per ray (PIP's crossing parity counts every crossing): the
 * GAS is built with OPTIX_GEOMETRY_FLAG_REQUIRE_SINGLE_ANYHIT_CALL (rt/optix/optix.cu), under
 * which a primitive is referenced once by the BVH and met once per ray.
 *
 * Rules:
 *   LSI      the program never reports: the ray runs through every box, like the soft all-hits
 *            traversal, and its state counts or fills the intersecting R edges.
 *   general  never reports either: every crossing and boundary event of the point's ray.
 *   planar   reports the float32 bound rdx_jn_pip_planar_isect returns, only when it is inside
 *            (tmin, tmax) as the soft traversal requires; OptiX then shrinks tmax to it, exactly
 *            the soft hit program's *tmax = t, and culls only boxes that begin above it, which
 *            hold no edge as low as the best (pip_hd.h). On a boundary the soft hit program also
 *            stops the ray; here the bound just past tmin leaves only boxes around the origin,
 *            whose program returns at once, so no any-hit call is spent on every improvement.
 *   rings    pip_hd.h's phase (A), in a launch of its own on the ring GAS (the ring boxes, made
 *            like the group boxes and widened alike): a point ray (direction 0, so +z below) whose
 *            program widens the state's top and bottom to the box's and never reports. pip_hd.h
 *            shows that the rings that matter hold the origin with the pads' margins, so the
 *            hardware meets them; extra boxes only lengthen the ray, which changes no answer.
 * A zero direction (an LSI ray whose piece of S edge rounds to a point) is cast along +z instead:
 * over t in [0, 1] that ray meets exactly the boxes holding the origin, which is what the soft
 * box test answers for a zero direction (boxes span z in [-1, 1]).
 *
 * Range. The GAS is traced only for layers of moderate magnitude and rays near them (launch.h's
 * RDX_JN_OPTIX_MAG_*, RDX_JN_OPTIX_RAY_MAX). On the GPU runs (H100, OptiX 9.0, driver 580,
 * 2026-11-26) OptiX found no box at all for tests/test_join_pip.c's grid beyond float32's range,
 * whose boxes and rays clamp at 2^125, with or without the faces widened; extents that large also
 * overflow the areas a BVH builder weighs (2^64 squared). Nor did it for tests/test_join_geos.c's random
 * layers of extent 2^25 at an offset of 3e15 (2^-26 of their magnitude: the whole layer lies within
 * one float32 step), hence RDX_JN_OPTIX_EXTENT_MIN. Outside the range a ray scans every group through the same
 * intersection program (scan_all): the soft traversal visits a subset of the groups and answers
 * never depend on extra groups, so the answers are the same, at a cost in edges per ray that only
 * such inputs (no map in any unit comes near 2^60 or 2^-60) pay.
 */
#include "join/optix/launch.h"
#include "rt/optix/device.cuh"

extern "C" {
__constant__ rdx_jn_optix_params params;
}

extern "C" __global__ void __miss__rdx() {}

/* The state of the ray being traced (payload words 0, 1). */
static __forceinline__ __device__ void *ray_state() {
  return (void *)(uintptr_t)((uint64_t)optixGetPayload_0() | (uint64_t)optixGetPayload_1() << 32);
}

/* The group grp through rule's intersection program for state s (tmin, tmax: the ray's interval
 * so far); 1 with *t when the planar rule reports a hit. */
static __forceinline__ __device__ int isect(void *s, unsigned rule, uint32_t grp, float tmin, float tmax, float *t) {
  /* the join's programs take the box, the ray and its constants only for the traversal's
   * signature and read none of them (NULL) */
  if (rule == RDX_JN_OPTIX_RULE_LSI)
    return rdx_jn_lsi_isect((rdx_jn_lsi_state *)s, grp, NULL, NULL, NULL, tmin, tmax, t);
  if (rule == RDX_JN_OPTIX_RULE_GENERAL)
    return rdx_jn_pip_general_isect((rdx_jn_pip_state *)s, grp, NULL, NULL, NULL, tmin, tmax, t);
  return rdx_jn_pip_planar_isect((rdx_jn_pip_state *)s, grp, NULL, NULL, NULL, tmin, tmax, t);
}

/* Cast r for rule with state s: through the GAS, no any-hit or closest-hit program; or, outside
 * the traced range, over every group (the file comment). */
static __forceinline__ __device__ void cast(const rdx_ray *r, void *s, unsigned rule) {
  if (params.scan_all || !(fabsf(r->o[0]) <= RDX_JN_OPTIX_RAY_MAX && fabsf(r->o[1]) <= RDX_JN_OPTIX_RAY_MAX)) {
    float t = 0.0f; /* reports only prune: here nothing is pruned */
    for (uint32_t g = 0; g < params.n_groups; g++) isect(s, rule, g, r->tmin, r->tmax, &t);
    return;
  }
  uint64_t a = (uint64_t)(uintptr_t)s;
  unsigned p0 = (unsigned)a, p1 = (unsigned)(a >> 32), p2 = rule;
  float3 d = make_float3(r->d[0], r->d[1], r->d[2]);
  if (d.x == 0.0f && d.y == 0.0f && d.z == 0.0f) d.z = 1.0f; /* a point: the file comment */
  /* PIP rays run to +inf; FLT_MAX ends them beyond every box (bounds are clamped to 2^125) and
   * beyond every t the planar rule reports, so the rays meet the same boxes */
  float tmax = r->tmax < FLT_MAX ? r->tmax : FLT_MAX;
  optixTrace(params.base.handle, make_float3(r->o[0], r->o[1], r->o[2]), d, r->tmin, tmax, 0.0f,
             OptixVisibilityMask(255), OPTIX_RAY_FLAG_DISABLE_ANYHIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT, 0, 1, 0, p0,
             p1, p2);
}

/* The group's edges against the ray's state, by its rule (the file comment); on the ring GAS,
 * the ring's box against phase (A)'s state (pip_hd.h), which reads the box and reports nothing. */
extern "C" __global__ void __intersection__box() {
  float tmin = optixGetRayTmin(), tmax = optixGetRayTmax(), t = 0.0f;
  const unsigned rule = optixGetPayload_2();
  if (rule == RDX_JN_OPTIX_RULE_RINGS) {
    const float *box = params.base.aabbs + (int64_t)optixGetPrimitiveIndex() * 6;
    rdx_jn_pip_rings_isect((rdx_jn_pip_rings_state *)ray_state(), 0, box, NULL, NULL, tmin, tmax, &t);
    return;
  }
  if (isect(ray_state(), rule, rdx_optix_input_prim(params.base), tmin, tmax, &t) && tmin < t && t < tmax)
    optixReportIntersection(t, 0); /* the planar rule's bound (LSI and general report nothing) */
}

/* ---- LSI ---- */

static __forceinline__ __device__ void lsi_cast(const rdx_jn_lsi_r *r, const rdx_ray *ray, rdx_jn_lsi_state *st) {
  (void)r; /* the GAS of params.base stands for r->v */
  cast(ray, st, RDX_JN_OPTIX_RULE_LSI);
}

RDX_JN_LSI_DEFINE_EDGE(static __forceinline__ __device__, lsi_edge_optix, lsi_cast)

/* S edge e: count its intersecting R edges (and its statistics) or fill them, as lsi.cu's
 * edges_kernel does for the soft BVH. */
extern "C" __global__ void __raygen__lsi() {
  int64_t e = rdx_optix_query_index(params.base);
  if (e >= params.base.n) return;
  const double *s0 = params.s_xy + 2 * e, *s1 = params.s_xy + 2 * (uint64_t)params.s_end[e];
  uint64_t *out = params.pairs ? params.pairs + params.offsets[e] : NULL;
  uint64_t cap = params.pairs ? params.offsets[e + 1] - params.offsets[e] : 0;
  rdx_jn_lsi_state st;
  rdx_jn_lsi_begin(&params.r, s0, s1, (uint32_t)e, out, cap, &st);
  int how = lsi_edge_optix(&params.r, &st);
  if (params.pairs) {
    if (st.hits != cap) *params.mismatch = 1;
    return;
  }
  params.counts[e] = st.hits;
  params.edge_tally[e] = st.candidates | (uint64_t)how << RDX_JN_OPTIX_HOW_SHIFT;
}

/* ---- PIP ---- */

/* Phase (A) through the ring GAS (launched on it); outside the traced range the reach is unknown
 * (top and bottom infinite give +inf: pip_hd.h's whole upward ray), as no ring box is met there. */
static __forceinline__ __device__ void pip_rings_cast(int unused, const rdx_ray *ray, rdx_jn_pip_rings_state *s) {
  (void)unused;
  if (params.scan_all || !(fabsf(ray->o[0]) <= RDX_JN_OPTIX_RAY_MAX && fabsf(ray->o[1]) <= RDX_JN_OPTIX_RAY_MAX)) {
    s->top = INFINITY;
    s->bottom = -INFINITY;
    return;
  }
  cast(ray, s, RDX_JN_OPTIX_RULE_RINGS);
}
static __forceinline__ __device__ void pip_planar_cast(int unused, const rdx_ray *ray, rdx_jn_pip_state *s) {
  (void)unused;
  cast(ray, s, RDX_JN_OPTIX_RULE_PLANAR);
}
static __forceinline__ __device__ void pip_general_cast(int unused, const rdx_ray *ray, rdx_jn_pip_state *s) {
  (void)unused;
  cast(ray, s, RDX_JN_OPTIX_RULE_GENERAL);
}

RDX_JN_PIP_DEFINE_POINT(static __forceinline__ __device__, pip_reach_optix, pip_point_optix, pip_events_optix, int,
                        pip_rings_cast, pip_planar_cast, pip_general_cast)

/* Phase (A) for point k or list entry k (on the ring GAS), then pass 1 for point list[k], or k
 * without a list (pip.cu's pass1_kernel), or pass 2's events for list entry k (its events_kernel),
 * with that reach. */
extern "C" __global__ void __raygen__pip() {
  int64_t k = rdx_optix_query_index(params.base);
  if (k >= params.base.n) return;
  if (params.op == RDX_JN_OPTIX_PIP_RINGS) {
    int64_t i = params.list ? params.list[k] : k;
    params.reach[k] = pip_reach_optix(0, params.q.xy[2 * i], params.q.xy[2 * i + 1]); /* the query's a */
    return;
  }
  if (params.op == RDX_JN_OPTIX_PIP_EVENTS) {
    int64_t i = params.list[k];
    uint32_t want = (uint32_t)(params.boff[k + 1] - params.boff[k]);
    uint64_t *ev = params.ev + params.boff[k];
    const rdx_jn_pip_at at = rdx_jn_pip_at_of(&params.q, i);
    uint32_t got = pip_events_optix(0, &params.g, &at, params.reach[k], ev, want);
    if (got != want) *params.mismatch = 1;
    return;
  }
  const int64_t i = params.list ? params.list[k] : k; /* pass 1's order (pip.cu) */
  uint64_t set[RDX_JN_PIP_SET_GPU];
  uint64_t count = 0;
  int64_t first = -1;
  uint32_t n_ev = 0;
  const rdx_jn_pip_out &out = params.out;
  uint64_t *fill = out.features ? out.features + out.offsets[i] : NULL;
  const rdx_jn_pip_at at = rdx_jn_pip_at_of(&params.q, i);
  if (pip_point_optix(0, &params.g, &at, params.reach[k], params.planar, set, RDX_JN_PIP_SET_GPU, &count, &first,
                      fill, &n_ev)) {
    if (out.counts) out.counts[i] = count;
    if (out.first) out.first[i] = first;
    params.pending[i] = 0;
  } else {
    params.pending[i] = n_ev;
  }
}
