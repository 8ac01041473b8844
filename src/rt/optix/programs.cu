/*
 * programs.cu: raydex's OptiX device programs, compiled to OptiX-IR at build time
 * (cmake/optix.cmake: nvcc -optix-ir) and embedded in the library. Every algorithm's logic is the
 * RDX_HD code the soft backends run (rt_hd.h, rx_hd.h, cgrx_hd.h); these programs only move it
 * between OptiX's payload registers and its trace calls:
 *   generic  first hit (any-hit, terminate), closest hit (closest-hit), all hits (any-hit,
 *            ignore), and the AABB entry intersection of rdx_rt_trace's box scenes;
 *   rx       the paper's any-hit: record the row, terminate (unique keys) or ignore (all hits);
 *   cgrx     closest hit with facing, for every ray of the lookup sequence.
 * Rays are traced with the same origins, directions and (tmin, tmax) as the soft traversal, so a
 * GPU with RT cores and raydex's soft BVH answer the same.
 */
#include <optix.h>

#include "rt/optix/launch.h"

extern "C" {
__constant__ rdx_optix_params params;
}

static __forceinline__ __device__ uint32_t input_prim() {
  uint32_t p = optixGetPrimitiveIndex();
  return params.ids ? params.ids[p] : p;
}

static __forceinline__ __device__ int64_t query_index() {
  return params.offset + (int64_t)optixGetLaunchIndex().x;
}

static __forceinline__ __device__ uint64_t query_key(int64_t j) {
  return params.key64 ? ((const uint64_t *)params.queries)[j] : ((const uint32_t *)params.queries)[j];
}

static __forceinline__ __device__ int front_face() {
  return optixGetPrimitiveType() == OPTIX_PRIMITIVE_TYPE_CUSTOM ? 1 : (optixIsFrontFaceHit() ? 1 : 0);
}

extern "C" __global__ void __miss__rdx() {}

/* ---- generic ---- */

extern "C" __global__ void __raygen__generic() {
  int64_t i = query_index();
  if (i >= params.n) return;
  rdx_ray r = params.rays[i];
  unsigned p0 = RDX_RT_NO_HIT, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = (unsigned)i, p6 = (unsigned)(i >> 32);
  unsigned flags = params.op == RDX_RT_FIRST_HIT     ? OPTIX_RAY_FLAG_TERMINATE_ON_FIRST_HIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT
                   : params.op == RDX_RT_CLOSEST_HIT ? OPTIX_RAY_FLAG_DISABLE_ANYHIT
                                                     : OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT;
  optixTrace(params.handle, make_float3(r.o[0], r.o[1], r.o[2]), make_float3(r.d[0], r.d[1], r.d[2]), r.tmin, r.tmax, 0.0f,
             OptixVisibilityMask(255), flags, 0, 1, 0, p0, p1, p2, p3, p4, p5, p6);
  if (params.op == RDX_RT_ALL_HITS) {
    if (params.counts) params.counts[i] = (uint64_t)p3 | (uint64_t)p4 << 32;
  } else {
    rdx_rt_hit h;
    h.prim = p0;
    h.t = __uint_as_float(p1);
    h.front = p2;
    params.hits[i] = h;
  }
}

extern "C" __global__ void __anyhit__generic() {
  uint32_t prim = input_prim();
  if (params.op == RDX_RT_FIRST_HIT) {
    optixSetPayload_0(prim);
    optixSetPayload_1(__float_as_uint(optixGetRayTmax()));
    optixSetPayload_2((unsigned)front_face());
    return; /* accept: the ray's terminate-on-first-hit flag ends it */
  }
  uint64_t count = (uint64_t)optixGetPayload_3() | (uint64_t)optixGetPayload_4() << 32;
  if (params.out_ids) {
    int64_t i = (int64_t)((uint64_t)optixGetPayload_5() | (uint64_t)optixGetPayload_6() << 32);
    params.out_ids[params.offsets[i] + count] = prim;
  }
  count++;
  optixSetPayload_3((unsigned)count);
  optixSetPayload_4((unsigned)(count >> 32));
  optixIgnoreIntersection();
}

extern "C" __global__ void __closesthit__generic() {
  optixSetPayload_0(input_prim());
  optixSetPayload_1(__float_as_uint(optixGetRayTmax()));
  optixSetPayload_2((unsigned)front_face());
}

/* The box entry of rdx_rt_trace's AABB scenes, with the soft traversal's box test first. */
extern "C" __global__ void __intersection__box() {
  const float *box = params.aabbs + (int64_t)optixGetPrimitiveIndex() * 6;
  float3 o = optixGetObjectRayOrigin(), d = optixGetObjectRayDirection();
  rdx_ray r;
  r.o[0] = o.x, r.o[1] = o.y, r.o[2] = o.z;
  r.d[0] = d.x, r.d[1] = d.y, r.d[2] = d.z;
  r.tmin = optixGetRayTmin();
  r.tmax = optixGetRayTmax();
  rdx_ray_pre pre;
  rdx_ray_prepare(&r, &pre);
  if (!rdx_rt_box_hit(box, box + 3, &r, &pre, r.tmin, r.tmax)) return;
  float t;
  rdx_rt_box_entry_isect(NULL, 0, box, &r, &pre, r.tmin, r.tmax, &t);
  if (r.tmin < t && t < r.tmax) optixReportIntersection(t, 0);
}

/* ---- rx ---- */

static __forceinline__ __device__ void rx_trace(const rdx_ray &r, unsigned flags, unsigned &p0, unsigned &p1,
                                                unsigned &p2, unsigned &p3, unsigned &p4, unsigned &p5, unsigned &p6) {
  optixTrace(params.handle, make_float3(r.o[0], r.o[1], r.o[2]), make_float3(r.d[0], r.d[1], r.d[2]), r.tmin, r.tmax, 0.0f,
             OptixVisibilityMask(255), flags, 0, 1, 0, p0, p1, p2, p3, p4, p5, p6);
}

extern "C" __global__ void __raygen__rx() {
  int64_t i = query_index();
  if (i >= params.n) return;
  int op = params.op;
  int fill = op == RDX_RX_OP_LOOKUP_FILL || op == RDX_RX_OP_RANGE_FILL;
  rdx_rx_state s;
  rdx_rx_state_init(params.rx_rows, params.rx_row_width, params.rx_unique, op, &s, fill ? params.rows + params.out[i] : NULL);
  /* the state travels in the payload: best, count, out pointer, mode */
  unsigned p0 = (unsigned)s.best, p1 = (unsigned)(s.best >> 32), p2 = 0, p3 = 0;
  unsigned p4 = (unsigned)(uintptr_t)s.out, p5 = (unsigned)((uint64_t)(uintptr_t)s.out >> 32), p6 = (unsigned)s.mode;
  /* unique keys: the first hit is the answer, taken by the closest-hit program with no any-hit
   * call at all (OptiX's cheapest path); otherwise the any-hit program visits every hit */
  unsigned flags = s.mode == RDX_RX_FIRST ? OPTIX_RAY_FLAG_TERMINATE_ON_FIRST_HIT | OPTIX_RAY_FLAG_DISABLE_ANYHIT
                                          : OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT;
  if (op >= RDX_RX_OP_RANGE_COUNT) {
    uint64_t lo = query_key(2 * i), hi = query_key(2 * i + 1);
    if (lo <= hi) {
      int64_t pos = 0;
      uint64_t last = hi >> 22;
      for (uint64_t row = rdx_rx_first_row(&params.rx_rows_info, lo >> 22, &pos); row <= last && row != UINT64_MAX;
           row = rdx_rx_next_row(&params.rx_rows_info, row, &pos)) {
        rdx_ray r = rdx_rx_row_ray(row, lo, hi);
        rx_trace(r, flags, p0, p1, p2, p3, p4, p5, p6);
      }
    }
  } else {
    rdx_ray r = rdx_rx_point_ray(query_key(i));
    rx_trace(r, flags, p0, p1, p2, p3, p4, p5, p6);
  }
  s.best = (uint64_t)p0 | (uint64_t)p1 << 32;
  s.count = (uint64_t)p2 | (uint64_t)p3 << 32;
  rdx_rx_finish(op, i, &s, params.out, params.rows);
}

extern "C" __global__ void __anyhit__rx() {
  rdx_rx_state s;
  s.rows = params.rx_rows;
  s.row_width = params.rx_row_width;
  s.best = (uint64_t)optixGetPayload_0() | (uint64_t)optixGetPayload_1() << 32;
  s.count = (uint64_t)optixGetPayload_2() | (uint64_t)optixGetPayload_3() << 32;
  s.out = (uint64_t *)(uintptr_t)((uint64_t)optixGetPayload_4() | (uint64_t)optixGetPayload_5() << 32);
  s.mode = (int)optixGetPayload_6();
  float tmax = optixGetRayTmax();
  int act = rdx_rx_anyhit(&s, input_prim(), tmax, 1, &tmax);
  optixSetPayload_0((unsigned)s.best);
  optixSetPayload_1((unsigned)(s.best >> 32));
  optixSetPayload_2((unsigned)s.count);
  optixSetPayload_3((unsigned)(s.count >> 32));
  if (act == RDX_RT_STOP) return; /* accept; terminate-on-first-hit ends the ray */
  optixIgnoreIntersection();    /* keep going: every triangle of the range or the duplicates */
}

/* RDX_RX_FIRST rays: the hit's row in payload 0, 1 (rdx_rx_anyhit's FIRST branch). */
extern "C" __global__ void __closesthit__rx() {
  uint64_t row = rdx_rx_row_of(params.rx_rows, params.rx_row_width, input_prim());
  optixSetPayload_0((unsigned)row);
  optixSetPayload_1((unsigned)(row >> 32));
}

/* ---- cgrx ---- */

static __forceinline__ __device__ void cgrx_cast(int unused, const rdx_ray *r, rdx_rt_hit *h) {
  unsigned p0 = RDX_RT_NO_HIT, p1 = 0;
  optixTrace(params.handle, make_float3(r->o[0], r->o[1], r->o[2]), make_float3(r->d[0], r->d[1], r->d[2]), r->tmin,
             r->tmax, 0.0f, OptixVisibilityMask(255), OPTIX_RAY_FLAG_DISABLE_ANYHIT, 0, 1, 0, p0, p1);
  h->prim = p0;
  h->t = 0.0f;
  h->front = p1;
}

RDX_CGRX_DEFINE_LOCATE(static __forceinline__ __device__, cgrx_locate_optix, int, cgrx_cast)

extern "C" __global__ void __raygen__cgrx() {
  int64_t i = query_index();
  if (i >= params.n) return;
  int op = params.op, range = op >= RDX_CGRX_OP_RANGE_COUNT;
  uint64_t lo = query_key(range ? 2 * i : i), hi = range ? query_key(2 * i + 1) : lo;
  int rays = 0;
  int64_t b = range && lo > hi ? RDX_CGRX_MISS : cgrx_locate_optix(&params.cg, 0, lo, &rays);
  if (b == RDX_CGRX_BROKEN) {
    *(volatile int *)params.broken = 1; /* pinned host memory: a plain store */
    b = RDX_CGRX_MISS;
  }
  rdx_cgrx_finish(&params.cg, op, i, b, lo, hi, params.out, (rdx_cgrx_span *)params.spans);
}

extern "C" __global__ void __closesthit__cgrx() {
  optixSetPayload_0(input_prim());
  optixSetPayload_1((unsigned)front_face());
}
