/*
 * rx.h: the rx kind's state, shared by its CPU (rx.c), CUDA (rx.cu) and OptiX (src/keys/optix/)
 * code. See rx_hd.h for the geometry.
 */
#ifndef RDX_RX_H
#define RDX_RX_H

#include "keys/rx_hd.h"
#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Key sets whose rows (key >> 22) span fewer than this many rows fire one ray per row of a
 * range's span; wider sets keep a sorted list of populated rows (8 bytes per distinct row) so a
 * range never fires rays into empty rows. u32 keys have at most 2^10 rows, so never need it. */
#define RDX_RX_ROW_SPAN_MAX 1024

/* Query operations. */
enum {
  RDX_RX_OP_LOOKUP = 0,
  RDX_RX_OP_LOOKUP_COUNT = 1,
  RDX_RX_OP_LOOKUP_FILL = 2,
  RDX_RX_OP_RANGE_COUNT = 3,
  RDX_RX_OP_RANGE_FILL = 4
};

typedef struct rdx_rx_impl {
  rdx_rt_scene scene;       /* one triangle per key; primitive i = input position i */
  void *rows;               /* input row ids (u32 or u64), backend memory; NULL when implied */
  int row_width;            /* 32 or 64 when rows != NULL */
  int unique;               /* no key repeats: point lookups stop at the first hit */
  uint64_t *row_list;       /* owned storage of rows_info.list (backend memory) or NULL */
  void *keys;               /* OptiX builds: the input keys (primitive i's, the index's dtype), since
                               a GAS keeps no vertices to read them back from; NULL elsewhere */
  rdx_rx_rows rows_info;    /* populated rows, for ranges */
} rdx_rx_impl;

void rdx_rx_impl_free(rdx_context *ctx, rdx_rx_impl *x);
rdx_status rdx_rx_facts_from_sorted_cpu(rdx_context *ctx, const rdx_entries *e, rdx_rx_impl *x);
/* The queries of an OPTIX-built index (src/keys/optix/rx_cgrx.cu): op's outputs as the soft
 * kernels write them (rows of fills in traversal order). */
rdx_status rdx_rx_optix_query(rdx_context *ctx, const rdx_rx_impl *x, rdx_dtype dt, int op, const void *q, int64_t n,
                              uint64_t *out, uint64_t *rows);

/* The hit program's mode and state for an operation (rows: prim -> row id or NULL). */
RDX_HD void rdx_rx_state_init(const void *rows, int row_width, int unique, int op, rdx_rx_state *s, uint64_t *out) {
  s->rows = rows;
  s->row_width = row_width;
  s->best = RDX_MISS;
  s->count = 0;
  s->out = out;
  switch (op) {
    case RDX_RX_OP_LOOKUP: s->mode = unique ? RDX_RX_FIRST : RDX_RX_MIN; break;
    case RDX_RX_OP_LOOKUP_COUNT: s->mode = unique ? RDX_RX_FIRST : RDX_RX_COUNT; break;
    case RDX_RX_OP_LOOKUP_FILL: s->mode = unique ? RDX_RX_FIRST : RDX_RX_FILL; break;
    case RDX_RX_OP_RANGE_COUNT: s->mode = RDX_RX_COUNT; break;
    default: s->mode = RDX_RX_FILL; break;
  }
}

/* A query's output once its rays are done (the fills wrote their rows already). */
RDX_HD void rdx_rx_finish(int op, int64_t i, const rdx_rx_state *s, uint64_t *out, uint64_t *rows) {
  if (op == RDX_RX_OP_LOOKUP) out[i] = s->best;
  else if (op == RDX_RX_OP_LOOKUP_COUNT) out[i] = s->mode == RDX_RX_FIRST ? (s->best != RDX_MISS) : s->count;
  else if (op == RDX_RX_OP_RANGE_COUNT) out[i] = s->count;
  else if (op == RDX_RX_OP_LOOKUP_FILL && s->mode == RDX_RX_FIRST && s->best != RDX_MISS) rows[out[i]] = s->best;
}

#ifdef __cplusplus
}
#endif
#endif /* RDX_RX_H */
