/*
 * launch.h: the launch parameters of the keys module's OptiX pipelines, shared by the host code
 * (rx_cgrx.cu) and the device programs (programs.cu). Plain C types only: the device programs
 * see the same bytes the host copies into the parameter buffer. They begin with rt's
 * rdx_optix_base, which rdx_optix_launch fills (DESIGN.md §4: rt runs the pipelines, the module
 * owns its programs and their parameters).
 *
 * Pipelines (one per hit program):
 *   rx    any-hit that records rows (rx_hd.h's rdx_rx_anyhit), closest-hit for unique keys
 *   cgrx  closest-hit of each ray of the lookup sequence (cgrx_hd.h)
 */
#ifndef RDX_KEYS_OPTIX_LAUNCH_H
#define RDX_KEYS_OPTIX_LAUNCH_H

#include <stdint.h>

#include "keys/cgrx.h"
#include "keys/rx.h"
#include "rt/optix/launch.h"

typedef struct rdx_keys_optix_params {
  rdx_optix_base base;       /* set by rdx_optix_launch */
  int op;                    /* rx: RDX_RX_OP_*; cgrx: RDX_CGRX_OP_* */
  int key64;                 /* queries are u64 (else u32) */
  const void *queries;       /* keys, or (lo, hi) pairs */
  uint64_t *out;             /* rows / counts, or the offsets of fills */
  /* rx */
  uint64_t *rows;            /* fill target */
  const void *rx_rows;       /* prim -> row id, or NULL (implied) */
  int rx_row_width;
  int rx_unique;
  rdx_rx_rows rx_rows_info;
  /* cgrx */
  rdx_cgrx_params cg;
  void *spans;               /* rdx_cgrx_span per query (fills) */
  int *broken;
} rdx_keys_optix_params;

#endif /* RDX_KEYS_OPTIX_LAUNCH_H */
