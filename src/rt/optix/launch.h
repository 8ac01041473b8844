/*
 * launch.h: the launch parameters of rt's OptiX pipelines, shared by the host code (optix.cu)
 * and the device programs (programs.cu, and every user module's programs through device.cuh).
 * Plain C types only: the device programs see the same bytes the host copies into the parameter
 * buffer.
 *
 * Every pipeline's parameters begin with rdx_optix_base, which rdx_optix_launch fills (the GAS,
 * its primitive map, the launch's slice of the batch); the rest belongs to the module whose
 * programs read it. rt's own pipeline is rdx_rt_trace's generic first / closest / all hits
 * (rdx_rt_optix_params below).
 */
#ifndef RDX_OPTIX_LAUNCH_H
#define RDX_OPTIX_LAUNCH_H

#include <stdint.h>

#include "rt/rt.h"

typedef struct rdx_optix_base {
  unsigned long long handle; /* OptixTraversableHandle of the GAS */
  const uint32_t *ids;       /* GAS primitive -> input primitive, NULL when every input was active */
  const float *aabbs;        /* AABB scenes: the boxes in GAS primitive order (custom intersection) */
  int64_t offset;            /* first query of this launch (launches are cut at 2^30) */
  int64_t n;                 /* queries in the whole batch */
} rdx_optix_base;

/* rdx_rt_trace's pipeline. */
typedef struct rdx_rt_optix_params {
  rdx_optix_base base;
  int op;                    /* rdx_rt_mode */
  const rdx_ray *rays;
  rdx_rt_hit *hits;
  uint64_t *counts;
  const uint64_t *offsets;
  uint32_t *out_ids;
} rdx_rt_optix_params;

#endif /* RDX_OPTIX_LAUNCH_H */
