/*
 * cgrx.h: the cgrx kind's state, shared by its CPU (cgrx.c), CUDA (cgrx.cu) and OptiX
 * (src/keys/optix/) code, and the internal entry points the tests use to build scenes with the
 * paper's versions of the construction (RDX_CGRX_PAPER_*). See cgrx_hd.h for the geometry.
 */
#ifndef RDX_CGRX_H
#define RDX_CGRX_H

#include "keys/cgrx_hd.h"
#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdx_cgrx_impl {
  rdx_entries e;            /* sorted (key, row) pairs, backend memory: the buckets */
  rdx_cgrx_params P;        /* P.pairs == e.pairs */
  rdx_rt_scene scene;       /* (1 + ML + MP) nb slots, inactive ones NaN */
  int64_t n_slots;
  int *flag;                /* GPU backends: a pinned host int that queries raise when a ray
                               sequence ends without an answer; allocated with the index so a
                               query allocates nothing it does not return (small batches) */
} rdx_cgrx_impl;

/* Fill P from the entries and the build options (bucket size, flags). */
void rdx_cgrx_plan(rdx_cgrx_impl *x, const rdx_build_options *o);
/* Build the scene of x (entries and P set) on the CPU with the given quirks (0 = raydex's
 * corrected construction). */
rdx_status rdx_cgrx_scene_cpu(rdx_context *ctx, rdx_cgrx_impl *x, unsigned quirks, int morton);
void rdx_cgrx_impl_free(rdx_context *ctx, rdx_cgrx_impl *x);

/* The queries of an OPTIX-built index (src/keys/optix/rx_cgrx.cu): LOOKUP and the COUNT ops write
 * out; the FILL ops write each query's span (the copy is cgrx.cu's). *broken (device int) is set
 * when a ray sequence ends without an answer. */
rdx_status rdx_cgrx_optix_query(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, int op, const void *q,
                                int64_t n, uint64_t *out, const uint64_t *offsets, rdx_cgrx_span *spans, int *broken);
/* The bucket of each of n keys q (int64, RDX_CGRX_MISS above the largest) by an OPTIX-built
 * index's rays (cgrxu's queries); *broken (device or pinned int) set as above. */
rdx_status rdx_cgrx_optix_locate(rdx_context *ctx, const rdx_cgrx_impl *x, rdx_dtype dt, const void *q, int64_t n,
                                 int64_t *buckets, int *broken);
/* Starts (first index with key >= q) of n queries on the CPU's soft scene, and the ray count of
 * each when n_rays is not NULL; RDX_ERR_INTERNAL when a ray sequence ends without an answer. */
rdx_status rdx_cgrx_locate_cpu(rdx_context *ctx, const rdx_cgrx_impl *x, const uint64_t *q, int64_t n,
                               int64_t *buckets, int *n_rays);

#ifdef __cplusplus
}
#endif
#endif /* RDX_CGRX_H */
