/*
 * programs.cu: the keys module's OptiX device programs, compiled to OptiX-IR at build time
 * (cmake/optix.cmake: nvcc -optix-ir) and embedded in the library; rt makes the module and the
 * pipelines from it (rdx_optix_launch). The algorithms' logic is the RDX_HD code the soft
 * backends run (rx_hd.h, cgrx_hd.h); these programs only move it between OptiX's payload
 * registers and its trace calls:
 *   rx    the paper's any-hit: record the row, terminate (unique keys) or ignore (all hits);
 *   cgrx  closest hit with facing, for every ray of the lookup sequence.
 * Rays are traced with the same origins, directions and (tmin, tmax) as the soft traversal, so a
 * GPU with RT cores and raydex's soft BVH answer the same.
 */
#include "keys/optix/launch.h"
#include "rt/optix/device.cuh"

extern "C" {
__constant__ rdx_keys_optix_params params;
}

RDX_OPTIX_SHARED_PROGRAMS(params)

static __forceinline__ __device__ uint64_t query_key(int64_t j) {
  return params.key64 ? ((const uint64_t *)params.queries)[j] : ((const uint32_t *)params.queries)[j];
}

/* ---- rx ---- */

static __forceinline__ __device__ void rx_trace(const rdx_ray &r, unsigned flags, unsigned &p0, unsigned &p1,
                                                unsigned &p2, unsigned &p3, unsigned &p4, unsigned &p5, unsigned &p6) {
  optixTrace(params.base.handle, make_float3(r.o[0], r.o[1], r.o[2]), make_float3(r.d[0], r.d[1], r.d[2]), r.tmin, r.tmax, 0.0f,
             OptixVisibilityMask(255), flags, 0, 1, 0, p0, p1, p2, p3, p4, p5, p6);
}

extern "C" __global__ void __raygen__rx() {
  int64_t i = rdx_optix_query_index(params.base);
  if (i >= params.base.n) return;
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
  int act = rdx_rx_anyhit(&s, rdx_optix_input_prim(params.base), tmax, 1, &tmax);
  optixSetPayload_0((unsigned)s.best);
  optixSetPayload_1((unsigned)(s.best >> 32));
  optixSetPayload_2((unsigned)s.count);
  optixSetPayload_3((unsigned)(s.count >> 32));
  if (act == RDX_RT_STOP) return; /* accept; terminate-on-first-hit ends the ray */
  optixIgnoreIntersection();    /* keep going: every triangle of the range or the duplicates */
}

/* RDX_RX_FIRST rays: the hit's row in payload 0, 1 (rdx_rx_anyhit's FIRST branch). */
extern "C" __global__ void __closesthit__rx() {
  uint64_t row = rdx_rx_row_of(params.rx_rows, params.rx_row_width, rdx_optix_input_prim(params.base));
  optixSetPayload_0((unsigned)row);
  optixSetPayload_1((unsigned)(row >> 32));
}

/* ---- cgrx ---- */

static __forceinline__ __device__ void cgrx_cast(int unused, const rdx_ray *r, rdx_rt_hit *h) {
  unsigned p0 = RDX_RT_NO_HIT, p1 = 0;
  optixTrace(params.base.handle, make_float3(r->o[0], r->o[1], r->o[2]), make_float3(r->d[0], r->d[1], r->d[2]), r->tmin,
             r->tmax, 0.0f, OptixVisibilityMask(255), OPTIX_RAY_FLAG_DISABLE_ANYHIT, 0, 1, 0, p0, p1);
  h->prim = p0;
  h->t = 0.0f;
  h->front = p1;
}

RDX_CGRX_DEFINE_LOCATE(static __forceinline__ __device__, cgrx_locate_optix, int, cgrx_cast)

extern "C" __global__ void __raygen__cgrx() {
  int64_t i = rdx_optix_query_index(params.base);
  if (i >= params.base.n) return;
  int op = params.op, range = op == RDX_CGRX_OP_RANGE_COUNT || op == RDX_CGRX_OP_RANGE_FILL; /* LOCATE: keys */
  uint64_t lo = query_key(range ? 2 * i : i), hi = range ? query_key(2 * i + 1) : lo;
  int rays = 0;
  int64_t b = range && lo > hi ? RDX_CGRX_MISS : cgrx_locate_optix(&params.cg, 0, lo, &rays);
  if (b == RDX_CGRX_BROKEN) {
    *(volatile int *)params.broken = 1; /* pinned host or device memory: a plain store */
    b = RDX_CGRX_MISS;
  }
  if (op == RDX_CGRX_OP_LOCATE) ((int64_t *)params.out)[i] = b;
  else rdx_cgrx_finish(&params.cg, op, i, b, lo, hi, params.out, (rdx_cgrx_span *)params.spans);
}

extern "C" __global__ void __closesthit__cgrx() {
  optixSetPayload_0(rdx_optix_input_prim(params.base));
  optixSetPayload_1((unsigned)rdx_optix_front_face());
}
