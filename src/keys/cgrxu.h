/*
 * cgrxu.h: the cgrxu kind's state, shared by its CPU (cgrxu.c) and CUDA (cgrxu.cu) code. The
 * layout of the nodes and the update rules are cgrxu_hd.h's.
 */
#ifndef RDX_CGRXU_H
#define RDX_CGRXU_H

#include "keys/cgrx.h"
#include "keys/cgrxu_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RDX_CGRXU_MAX_SLABS 4096

typedef struct rdx_cgrxu_impl {
  /* cgRX's scene over the build's buckets of C/2 pairs. x.e holds the nb representative pairs
   * (rdx_cgrxu_view.reps), and x.P reads them as a cgRX of nb entries in buckets of one: the ray
   * sequence needs only the representatives' keys. */
  rdx_cgrx_impl x;
  rdx_cgrxu_view v;    /* v.slabs: slab_table (CPU) or its device copy (CUDA) */
  char **slab_table;   /* host array of the slabs' bases (backend memory), RDX_CGRXU_MAX_SLABS */
  char **dev_table;    /* CUDA: the table in device memory */
  int n_slabs;
  uint32_t n_nodes;    /* ids below this were handed out (those on the free stack included) */
  uint32_t *free_ids;  /* free stack, capacity n_slabs << shift, backend memory */
  uint32_t n_free;
  uint32_t *counters;  /* backend memory: [0] free stack top, [1] nodes taken, [2..3] a u64 sum */
} rdx_cgrxu_impl;

/* Bytes of one slab of 2^shift nodes. */
static inline size_t rdx_cgrxu_slab_bytes(const rdx_cgrxu_view *v) { return ((size_t)16 + v->node_bytes) << v->shift; }

/* Room for `more` nodes beyond those handed out and free: whole slabs added, and a free stack
 * of the new capacity (its entries copied). On failure nothing changed. (cgrxu.c, for both
 * backends: location is the backend's.) */
rdx_status rdx_cgrxu_reserve(rdx_context *ctx, rdx_cgrxu_impl *u, uint64_t more);
void rdx_cgrxu_impl_free(rdx_context *ctx, rdx_cgrxu_impl *u);
/* Set the slab shift for a build of nb buckets and allocate the first slabs (nb + 1 nodes). */
rdx_status rdx_cgrxu_store_init(rdx_context *ctx, rdx_cgrxu_impl *u, int64_t nb);
/* The view's reps and x.P switched from the build's entries to the representatives (after the
 * scene is built and the nodes are filled): reps is the nb-pair array, owned from now on. */
void rdx_cgrxu_adopt_reps(rdx_cgrxu_impl *u, void *reps);

#ifdef __cplusplus
}
#endif
#endif /* RDX_CGRXU_H */
