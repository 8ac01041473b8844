/*
 * launch.h: the launch parameters of raydex's OptiX pipelines, shared by the host code
 * (optix.cu, optix_keys.cu) and the device programs (programs.cu). Plain C types only: the
 * device programs see the same bytes the host copies into the parameter buffer.
 *
 * Pipelines, one per hit program (DESIGN.md §4):
 *   RDX_OPTIX_PIPE_GENERIC  rdx_rt_trace's first / closest / all hits (any-hit + closest-hit, and
 *                           the AABB entry intersection for box scenes)
 *   RDX_OPTIX_PIPE_RX       RX: any-hit that records rows (rx_hd.h's rdx_rx_anyhit)
 *   RDX_OPTIX_PIPE_CGRX     cgRX: closest-hit of each ray of the lookup sequence (cgrx_hd.h)
 */
#ifndef RDX_OPTIX_LAUNCH_H
#define RDX_OPTIX_LAUNCH_H

#include <stdint.h>

#include "keys/cgrx.h"
#include "keys/rx.h"
#include "rt/rt.h"

enum { RDX_OPTIX_PIPE_GENERIC = 0, RDX_OPTIX_PIPE_RX = 1, RDX_OPTIX_PIPE_CGRX = 2, RDX_OPTIX_N_PIPES = 3 };

typedef struct rdx_optix_params {
  unsigned long long handle; /* OptixTraversableHandle of the GAS */
  const uint32_t *ids;       /* GAS primitive -> input primitive, NULL when every input was active */
  const float *aabbs;        /* AABB scenes: the boxes in GAS primitive order (custom intersection) */
  int64_t offset;            /* first query of this launch (launches are cut at 2^30) */
  int64_t n;                 /* queries in the whole batch */
  int op;                    /* generic: rdx_rt_mode; rx: RDX_RX_OP_*; cgrx: RDX_CGRX_OP_* */
  int key64;                 /* queries are u64 (else u32) */
  /* generic */
  const rdx_ray *rays;
  rdx_rt_hit *hits;
  uint64_t *counts;
  const uint64_t *offsets;
  uint32_t *out_ids;
  /* rx */
  const void *queries;       /* keys, or (lo, hi) pairs */
  uint64_t *out;             /* rows / counts, or the offsets of fills */
  uint64_t *rows;            /* fill target */
  const void *rx_rows;       /* prim -> row id, or NULL (implied) */
  int rx_row_width;
  int rx_unique;
  rdx_rx_rows rx_rows_info;
  /* cgrx */
  rdx_cgrx_params cg;
  void *spans;               /* rdx_cgrx_span per query (fills) */
  int *broken;
} rdx_optix_params;

#endif /* RDX_OPTIX_LAUNCH_H */
