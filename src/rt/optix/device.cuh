/*
 * device.cuh: what every OptiX program set of raydex shares on the device, for rt's own
 * programs (programs.cu) and each user module's (src/keys/optix/programs.cu): the input index of
 * the primitive hit, the query a launch index stands for, the facing of a hit, and the box entry
 * intersection of AABB scenes. Included only by files compiled with nvcc -optix-ir.
 *
 * rdx_optix_launch links every pipeline with a miss program named __miss__rdx and, for AABB
 * scenes, an intersection program named __intersection__box; RDX_OPTIX_SHARED_PROGRAMS(params)
 * defines both in a program set whose launch parameters `params` begin with rdx_optix_base.
 */
#ifndef RDX_OPTIX_DEVICE_CUH
#define RDX_OPTIX_DEVICE_CUH

#include <optix.h>

#include "rt/optix/launch.h"

/* The input primitive (the scene builder's index) of the hit being reported. */
static __forceinline__ __device__ uint32_t rdx_optix_input_prim(const rdx_optix_base &b) {
  uint32_t p = optixGetPrimitiveIndex();
  return b.ids ? b.ids[p] : p;
}

/* The query this launch index answers (launches are cut at 2^30 queries). */
static __forceinline__ __device__ int64_t rdx_optix_query_index(const rdx_optix_base &b) {
  return b.offset + (int64_t)optixGetLaunchIndex().x;
}

/* 1 for a front-face triangle hit and for every box hit (boxes have no facing). */
static __forceinline__ __device__ int rdx_optix_front_face() {
  return optixGetPrimitiveType() == OPTIX_PRIMITIVE_TYPE_CUSTOM ? 1 : (optixIsFrontFaceHit() ? 1 : 0);
}

/* The box entry of AABB scenes, with the soft traversal's box test first, so OptiX reports the
 * hits the soft backends find. */
static __forceinline__ __device__ void rdx_optix_box_intersection(const rdx_optix_base &b) {
  const float *box = b.aabbs + (int64_t)optixGetPrimitiveIndex() * 6;
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

#define RDX_OPTIX_SHARED_PROGRAMS(P)                                                              \
  extern "C" __global__ void __miss__rdx() {}                                                     \
  extern "C" __global__ void __intersection__box() { rdx_optix_box_intersection((P).base); }

#endif /* RDX_OPTIX_DEVICE_CUH */
