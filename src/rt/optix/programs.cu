/*
 * programs.cu: rt's own OptiX device programs, those of rdx_rt_trace, compiled to OptiX-IR at
 * build time (cmake/optix.cmake: nvcc -optix-ir) and embedded in the library: first hit (any-hit,
 * terminate), closest hit (closest-hit) and all hits (any-hit, ignore), plus the miss and box
 * programs every pipeline links (device.cuh). The programs of rt's users live in their modules
 * (src/keys/optix/programs.cu for RX and cgRX). Rays are traced with the same origins, directions
 * and (tmin, tmax) as the soft traversal, so a GPU with RT cores and raydex's soft BVH answer the
 * same.
 */
#include "rt/optix/device.cuh"

extern "C" {
__constant__ rdx_rt_optix_params params;
}

RDX_OPTIX_SHARED_PROGRAMS(params)

extern "C" __global__ void __raygen__generic() {
  int64_t i = rdx_optix_query_index(params.base);
  if (i >= params.base.n) return;
  rdx_ray r = params.rays[i];
  unsigned p0 = RDX_RT_NO_HIT, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = (unsigned)i, p6 = (unsigned)(i >> 32);
  unsigned flags = params.op == RDX_RT_FIRST_HIT     ? OPTIX_RAY_FLAG_TERMINATE_ON_FIRST_HIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT
                   : params.op == RDX_RT_CLOSEST_HIT ? OPTIX_RAY_FLAG_DISABLE_ANYHIT
                                                     : OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT;
  optixTrace(params.base.handle, make_float3(r.o[0], r.o[1], r.o[2]), make_float3(r.d[0], r.d[1], r.d[2]), r.tmin, r.tmax, 0.0f,
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
  uint32_t prim = rdx_optix_input_prim(params.base);
  if (params.op == RDX_RT_FIRST_HIT) {
    optixSetPayload_0(prim);
    optixSetPayload_1(__float_as_uint(optixGetRayTmax()));
    optixSetPayload_2((unsigned)rdx_optix_front_face());
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
  optixSetPayload_0(rdx_optix_input_prim(params.base));
  optixSetPayload_1(__float_as_uint(optixGetRayTmax()));
  optixSetPayload_2((unsigned)rdx_optix_front_face());
}
