/*
 * join.h: internals of polygon layers and the exact spatial joins (RayJoin: LSI and PIP as rays
 * through a BVH of R's edges). Nothing here is public.
 *
 * layer.c validates every public call once, stages arrays into the backend's memory and calls the
 * backend functions declared here (*_cpu in .c files, *_cuda in .cu files, nocuda.c when CUDA is
 * not built). A backend function sees only valid, non-empty input in its own memory.
 *
 * Storage of a layer (through the context's memory account):
 *
 *   host   xy[2 * n_vertices]   f64 x, y of every kept vertex, ring after ring; no closing repeat,
 *                               no two consecutive equal vertices (merged at load)
 *          ring_off[n_rings+1]  ring r's vertices are [ring_off[r], ring_off[r + 1]), >= 3 of them
 *          feat_off[n_feat+1]   feature f's rings are [feat_off[f], feat_off[f + 1])
 *          edge_feat[n_vertices] u32: the feature of edge e (vertex e to the next vertex of its
 *                               ring, the last vertex closing back to the first)
 *          edge_end[n_vertices]  u32: the vertex edge e ends at (e + 1, or its ring's first
 *                               vertex for the ring's last edge)
 *   device the same arrays on GPU contexts (CUDA and OptiX), for the kernels
 *   index  the edges' conservative float32 boxes, grouped (rdx_jn_group), in an rt scene
 *
 * Edge e (0 <= e < n_vertices) runs from vertex e to vertex e + 1, or to its ring's first vertex
 * when e is the ring's last. Rings are stored so that their feature's interior lies on the left
 * of every edge (shells counter-clockwise, holes clockwise, by the even-odd depth of the ring
 * among its feature's rings, computed at load): PIP's nearest-edge rule reads the face below an
 * edge from its direction alone.
 *
 * Identifiers: features and edges are u32 inside the engine (a layer holds at most 2^32 - 2
 * vertices); the public results carry them as i64.
 */
#ifndef RDX_JOIN_H
#define RDX_JOIN_H

#include "core/core.h"
#include "rt/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RDX_POLYGONS_MAGIC 0x52445047u /* "RDPG" */
#define RDX_JN_MAX_VERTICES 0xFFFFFFFEull
#define RDX_JN_DEFAULT_PAD_ULPS 2
#define RDX_JN_DEFAULT_GROUP 3.5
#define RDX_JN_MAX_GROUP_EDGES 32 /* a group box covers at most this many consecutive edges */

/* A layer's arrays in one memory (host or device). */
typedef struct rdx_jn_arrays {
  const double *xy;          /* 2 * n_vertices */
  const uint64_t *ring_off;  /* n_rings + 1 */
  const uint64_t *feat_off;  /* n_features + 1 */
  const uint32_t *edge_feat; /* n_vertices */
  const uint32_t *edge_end;  /* n_vertices: the vertex edge e ends at */
  int64_t n_features, n_rings, n_vertices;
} rdx_jn_arrays;

/* A layer's join index: groups of consecutive edges of one ring, each with a conservative f32
 * box, in an rt scene of AABBs (scene primitive g is group g). */
typedef struct rdx_jn_index {
  int built;
  int32_t pad_ulps;
  double group_threshold;
  int64_t n_groups;
  uint32_t *group_first;     /* n_groups + 1 (backend memory): group g covers edges
                                [group_first[g], group_first[g + 1]) */
  rdx_rt_scene scene;
  double build_ms;           /* for benchmarks: grouping + BVH build */
  double group_ms;
} rdx_jn_index;

struct rdx_polygons {
  uint32_t magic;            /* RDX_POLYGONS_MAGIC while alive */
  rdx_context *ctx;
  rdx_dtype dtype;           /* as given */
  double lo[2], hi[2];
  rdx_jn_arrays host;        /* always present */
  rdx_jn_arrays dev;         /* GPU contexts; pointers NULL on CPU contexts */
  void *host_block, *dev_block; /* the allocations behind host and dev */
  int64_t host_bytes, dev_bytes;
  rdx_jn_index index;
};

/* The arrays of a layer in the context's backend memory. */
static inline const rdx_jn_arrays *rdx_jn_backend_arrays(const rdx_polygons *p, int gpu) {
  return gpu ? &p->dev : &p->host;
}

/* ---- layers (layer.c) ---- */
/* Validate a handle: NULL is RDX_ERR_INVALID_ARGUMENT, not a layer or a layer of another context
 * RDX_ERR_MISUSE; fn names the public call in the message. */
rdx_status rdx_jn_check_layer(rdx_context *ctx, const char *fn, const rdx_polygons *p);
/* rdx_polygons_create's work, its messages naming fn (rdx_polygons_load reads files through it). */
rdx_status rdx_jn_layer_make(rdx_context *ctx, const char *fn, const rdx_polygons_input *in, rdx_polygons **out);
/* Bytes the layer holds: host and device arrays, and its join index when built. */
int64_t rdx_jn_layer_bytes(const rdx_polygons *p);

/* ---- index (index.c, index.cu) ---- */
/* Build the layer's index for the context's backend with these (validated) options, replacing
 * the old index only on success. */
rdx_status rdx_jn_index_build(rdx_context *ctx, rdx_polygons *p, int32_t pad_ulps,
                              double group_threshold);
void rdx_jn_index_free(rdx_context *ctx, rdx_jn_index *ix);

/* ---- PIP (pip.c, pip.cu): points are (n, 2) f64 in backend memory ---- */
/* planar: nearest-edge rule; else crossing parity per feature. counts may be NULL when first is
 * set; first (i64) may be NULL. */
rdx_status rdx_jn_pip_count_cpu(rdx_context *ctx, const rdx_polygons *r, const double *xy, int64_t n,
                                int planar, uint64_t *counts, int64_t *first);
rdx_status rdx_jn_pip_fill_cpu(rdx_context *ctx, const rdx_polygons *r, const double *xy, int64_t n,
                               int planar, const uint64_t *offsets, int64_t *features);
rdx_status rdx_jn_pip_count_cuda(rdx_context *ctx, const rdx_polygons *r, const double *xy,
                                 int64_t n, int planar, uint64_t *counts, int64_t *first);
rdx_status rdx_jn_pip_fill_cuda(rdx_context *ctx, const rdx_polygons *r, const double *xy, int64_t n,
                                int planar, const uint64_t *offsets, int64_t *features);

/* ---- LSI (lsi.c, lsi.cu) ---- */
/* Edge pairs found by LSI, before they become feature pairs: (r edge, s edge). */
rdx_status rdx_jn_lsi_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                          int want_points, rdx_join_lsi_result *out);
rdx_status rdx_jn_lsi_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                           int want_points, rdx_join_lsi_result *out);

#ifdef __cplusplus
}
#endif
#endif /* RDX_JOIN_H */
