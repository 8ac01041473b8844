/*
 * join.h: internals of polygon layers and the exact spatial joins (RayJoin: LSI and PIP as rays
 * through a BVH of R's edges). Nothing here is public.
 *
 * The public calls validate their arguments once (layer.c for rdx_polygons_*, join.c for the
 * index and PIP, join_lsi.c for LSI), stage arrays into the backend's memory and call the ops
 * table of (operation, backend) from registry.c (*_cpu in .c files, *_cuda in .cu files, nocuda.c
 * when CUDA is not built). A backend function sees only valid, non-empty input in its own memory.
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
 * box, in an rt scene of AABBs (scene primitive g is group g); and the rings' boxes (each the union
 * of its groups' boxes) in a second scene with, per group, the y-span of its ring, for
 * PIP's general rule (pip_hd.h). index_hd.h states the grouping rule, the boxes and why the engine
 * never misses a candidate. On OptiX contexts the scenes are compacted GASes (scene.gas, rings.gas;
 * their bvh empty) that only the join's OptiX programs (src/join/optix/) trace. */
typedef struct rdx_jn_index {
  int built;                 /* 1 once made; 0 for a zeroed, empty struct */
  int32_t pad_ulps;          /* float32 ulps stepped outward after rounding, 1..64; or
                                RDX_JN_PAD_NAIVE (0): naive boxes (rdx_join_force_naive) */
  double group_threshold;    /* RayJoin's s, 1..64 (1: one edge per group) */
  double magnitude;          /* largest |coordinate| the absolute pad covers (the layer's, or more
                                when the maker asked) */
  double extent;             /* the layer's larger box side (0 when empty), for OptiX's range */
  double abs_pad;            /* rdx_jn_abs_pad(magnitude), applied to every box before rounding
                                (0 for naive boxes) */
  int64_t n_groups;
  uint32_t *group_first;     /* n_groups + 1 (backend memory): group g covers edges
                                [group_first[g], group_first[g + 1]) */
  rdx_rt_scene scene;
  int64_t n_rings;           /* the layer's rings */
  int64_t n_ring_boxes;      /* primitives of the ring scene: the rings no earlier ring of their
                                feature dominates (index_hd.h), >= 1 */
  rdx_rt_scene rings;        /* those rings' boxes in ring order (index_hd.h) */
  float *group_span;         /* 2 * n_groups (backend memory): group g's ring's y-span, the float32
                                floor of its lowest y and ceiling of its highest (index_hd.h) */
  double build_ms;           /* for benchmarks: grouping + boxes + BVH build, milliseconds */
  double group_ms;           /* the grouping and boxes (groups' and rings') alone */
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
/* rdx_polygons_create's work, its messages naming fn (rdx_polygons_load reads files through it);
 * normalized: the rings' orientation is taken as it is (a .rdxp file that says so, rdxp.c). */
rdx_status rdx_jn_layer_make(rdx_context *ctx, const char *fn, const rdx_polygons_input *in, int normalized,
                             rdx_polygons **out);
/* Bytes the layer holds: host and device arrays, and its join index when built. */
int64_t rdx_jn_layer_bytes(const rdx_polygons *p);
/* Store every ring of a layer being made (host arrays, edge_end filled) with its feature's
 * interior on its left: shells counter-clockwise, holes clockwise (layer_orient.c). */
rdx_status rdx_jn_orient_rings(rdx_context *ctx, double *xy, const uint64_t *ring_off, const uint64_t *feat_off,
                               const uint32_t *edge_end, int64_t n_features, int64_t n_rings);

/* ---- options (join.c) ---- */
/* *o = opts (may be NULL) with every field set: pad_ulps in [1, 64], group_threshold in [1, 64];
 * RDX_ERR_INVALID_ARGUMENT naming fn for a bad size or value. Every join call reads them so. */
rdx_status rdx_jn_get_options(rdx_context *ctx, const char *fn, const rdx_join_options *opts, rdx_join_options *o);

/* ---- index (index.c, index.cu) ---- */
/* Make an index of p for the context's backend into *out (zeroed first; on failure it holds
 * nothing). pad_ulps 1..64 and group_threshold 1..64 are validated by the caller; magnitude: the
 * largest |coordinate| the absolute pad must cover, at least the layer's (a smaller value, 0
 * included, means the layer's). p is only read: joins make temporary indexes this way. */
rdx_status rdx_jn_index_make(rdx_context *ctx, const rdx_polygons *p, int32_t pad_ulps, double group_threshold,
                             double magnitude, rdx_jn_index *out);
/* Build the layer's index for the context's backend with these (validated) options, replacing
 * the old index only on success. */
rdx_status rdx_jn_index_build(rdx_context *ctx, rdx_polygons *p, int32_t pad_ulps,
                              double group_threshold);
/* Free what the index holds and zero it; a zeroed index is fine. */
void rdx_jn_index_free(rdx_context *ctx, rdx_jn_index *ix);
/* Bytes the index holds (0 when not built). */
int64_t rdx_jn_index_bytes(const rdx_jn_index *ix);
/* The largest |coordinate| of the layer (0 when empty). */
double rdx_jn_layer_magnitude(const rdx_polygons *p);

/* ---- PIP (pip.c, pip.cu): points are (n, 2) f64 in backend memory, n >= 1; the layer has at
 * least one edge and ix is built for the context's backend ---- */
/* COUNT: counts[i] (u64) and/or first[i] (i64, the smallest feature or -1), either may be NULL.
 * FILL: the features of point i ascending at features[offsets[i] ..] (offsets already checked
 * against this batch's counts; features are written as 64-bit values, i64 or u64 alike).
 * planar: RayJoin's nearest-edge rule (points on a boundary take the general rule); else the
 * crossing parity per feature (pip_hd.h). */
typedef struct rdx_jn_pip_out {
  uint64_t *counts;
  int64_t *first;
  const uint64_t *offsets;
  uint64_t *features;
} rdx_jn_pip_out;
rdx_status rdx_jn_pip_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                          int64_t n, int planar, const rdx_jn_pip_out *out);
rdx_status rdx_jn_pip_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                           int64_t n, int planar, const rdx_jn_pip_out *out);
/* Side PIP (the overlay's): for each edge i of a layer X, the features of R containing the point
 * just after X's vertex a = xy[i] along its edge to b = xy[dir_end[i]], moved off the edge to
 * `side` (+1 left, -1 right): q = a + delta (b - a) + side eps n, n = (a.y - b.y, b.x - a.x) the
 * left normal, with 0 < eps << delta infinitesimal (pip_hd.h's file comment: every comparison
 * exact, decided lexicographically). xy = X's vertices and dir_end = X's edge_end in backend
 * memory (rdx_jn_backend_arrays(X, gpu)->xy, ->edge_end), n = X's n_vertices >= 1 (any xy and
 * dir_end with xy[dir_end[i]] != xy[i] will do; a layer has no zero-length edge); R has at least
 * one edge and ix is R's index built for the context's backend (any magnitude: PIP needs no pad).
 * q lies on no edge of R, so the answer is the crossing parity per feature (the general rule;
 * there is no planar form), and for X = R the left side of edge i lies in edge_feat[i]. Outputs
 * (rdx_jn_pip_out) in backend memory, two-phase as for PIP: counts[i] (and/or first[i]), then
 * the features of query i ascending at features[offsets[i] ..], offsets scanned from those counts.
 * Returns RDX_OK, out of memory, a CUDA or OptiX status, or RDX_ERR_INTERNAL (a pass-2 mismatch);
 * on failure the outputs are undefined. Reached through the PIP ops table's side_pip. */
rdx_status rdx_jn_side_pip_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                               const uint32_t *dir_end, int64_t n, int side, const rdx_jn_pip_out *out);
rdx_status rdx_jn_side_pip_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy,
                                const uint32_t *dir_end, int64_t n, int side, const rdx_jn_pip_out *out);
/* A batch of PIP queries (pip_hd.h reads query i with rdx_jn_pip_at_of): points, or side queries. */
typedef struct rdx_jn_pip_query {
  const double *xy;          /* (n, 2) f64, backend memory: the points, or X's vertices */
  const uint32_t *dir_end;   /* NULL: query i is the point xy[i]; else X's edge_end: query i is
                                the side query of X's edge i (above) */
  int side;                  /* with dir_end: +1 left, -1 right; else 0 */
} rdx_jn_pip_query;
/* Query points as f64 in backend memory: src ((n, 2) f32 when f32, else f64, backend memory) is
 * checked (finite; 0 or of magnitude in [2^-400, 2^400], the range of exact_hd.h) and, when dst
 * is not NULL, widened into dst. *bad = the first bad row, or -1. */
rdx_status rdx_jn_points_cpu(rdx_context *ctx, const void *src, int f32, int64_t n, double *dst, int64_t *bad);
rdx_status rdx_jn_points_cuda(rdx_context *ctx, const void *src, int f32, int64_t n, double *dst, int64_t *bad);

/* ---- LSI (lsi_hd.h; lsi.c, lsi.cu; the public calls in join_lsi.c; rdx_jn_lsi_stats and the
 * benchmarks' entry rdx_jn_lsi_run: bench_api.h) ---- */
/* Allocate the result's arrays for n_pairs pairs and n_points points (0 allowed) in the context's
 * compute location through its account, setting the counts and `where`. On failure nothing is
 * held (rdx_join_lsi_free frees what succeeded). */
rdx_status rdx_jn_lsi_result_arrays(rdx_context *ctx, rdx_join_lsi_result *res, int64_t n_pairs, int64_t n_points);
/* The backends: R and S each have at least one edge, ix is an index of R built for the context's
 * backend, out is zeroed and gets its arrays from rdx_jn_lsi_result_arrays; stats is never NULL
 * (its counts and stage times are set here). On failure out holds nothing. */
rdx_status rdx_jn_lsi_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                          int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats);
rdx_status rdx_jn_lsi_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                           int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats);

/* Every intersecting edge pair of R and S (R's index ix) into *pairs (host, n = *n_pairs), as
 * (r edge << 32 | s edge), grouped by S edge: LSI's count and fill passes (lsi.c), for the polygon
 * joins. stats gets the passes' counts and times. */
rdx_status rdx_jn_lsi_edge_pairs_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                     const rdx_polygons *s, uint64_t **pairs, int64_t *n_pairs,
                                     rdx_jn_lsi_stats *stats);

/* The same on CUDA contexts (device pairs; rdx_jn_lsi_edge_pairs_gpu with the soft BVH's passes). */
rdx_status rdx_jn_lsi_edge_pairs_cuda(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                      const rdx_polygons *s, uint64_t **pairs, int64_t *n_pairs,
                                      rdx_jn_lsi_stats *stats);

/* ---- polygon joins (overlay_hd.h; overlay.c; the public call in join_polygons.c) ---- */
/* A join's stages as they go (join_polygons.c): the caller's progress function and the
 * benchmarks' statistics (either may be NULL). */
typedef struct rdx_jn_track {
  rdx_jn_polygons_stats *stats;
  void (*progress)(void *user, const char *stage, double done);
  void *user;
  int stage;                 /* the stage running, rdx_jn_stage */
  double t;                  /* when it began (rdx_now_ms), with stats */
} rdx_jn_track;
/* The running stage has ended and `next` begins: with stats, the stage's work waited for (GPU
 * contexts) and its time added; the progress function told. */
rdx_status rdx_jn_track_stage(rdx_context *ctx, rdx_jn_track *t, rdx_jn_stage next);
/* The feature pairs (r << 32 | s, host, sorted unique, *n_out of them) of predicate OVERLAY,
 * INTERSECTS, CONTAINS or WITHIN; ixr and ixs are indexes of R and S for the CPU; both layers have
 * edges. areas (OVERLAY only; may be NULL): *areas gets each pair's intersection area (host). On
 * failure *out and *areas are NULL. */
rdx_status rdx_jn_polygons_cpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ixr, const rdx_polygons *s,
                               const rdx_jn_index *ixs, rdx_join_predicate pred, rdx_jn_track *track, uint64_t **out,
                               int64_t *n_out, double **areas);
/* The same on GPU contexts (overlay.cu), through the context's LSI and PIP tables; *out and *areas
 * in device memory (rdx_mem_alloc's, which the result keeps). */
rdx_status rdx_jn_polygons_gpu(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ixr, const rdx_polygons *s,
                               const rdx_jn_index *ixs, rdx_join_predicate pred, rdx_jn_track *track, uint64_t **out,
                               int64_t *n_out, double **areas);

/* The m pairs r << 32 | s of keys (device) as the result's (r, s) rows of int64 (device, 2 m). */
rdx_status rdx_jn_split_pairs_gpu(rdx_context *ctx, const uint64_t *keys, int64_t m, int64_t *pairs);

/* ---- ops tables: one per (operation, backend), listed in registry.c (STYLE rule 34) ----
 * join.c and join_lsi.c validate the public calls and stage arrays, then call the table of the
 * context's backend. OptiX contexts build the index with the CUDA table (index.cu makes a GAS
 * there) and run PIP and LSI with the OptiX tables (src/join/optix/launch.cu), whose programs trace
 * the GAS and share everything around the traversal with the CUDA backend (below). */
typedef enum rdx_jn_op {
  RDX_JN_OP_INDEX = 1,       /* index_build */
  RDX_JN_OP_PIP = 2,         /* points, pip */
  RDX_JN_OP_LSI = 3,         /* lsi, edge_pairs */
  RDX_JN_OP_POLYGONS = 4     /* polygons */
} rdx_jn_op;

typedef rdx_status (*rdx_jn_side_pip_fn)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix,
                                         const double *xy, const uint32_t *dir_end, int64_t n, int side,
                                         const rdx_jn_pip_out *out);
struct rdx_jn_pip_engine;
typedef struct rdx_jn_ops {
  rdx_jn_op op;
  rdx_backend backend;       /* CPU, CUDA or OPTIX */
  /* INDEX: groups, boxes and scene of p into *out, whose options (pad_ulps, group_threshold,
   * magnitude, abs_pad) rdx_jn_index_make has set; p has at least one edge. */
  rdx_status (*index_build)(rdx_context *ctx, const rdx_polygons *p, rdx_jn_index *out);
  /* PIP, and the side PIP of edge starts (rdx_jn_side_pip_cpu / _cuda's contract) */
  rdx_status (*points)(rdx_context *ctx, const void *src, int f32, int64_t n, double *dst, int64_t *bad);
  rdx_status (*pip)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const double *xy, int64_t n,
                    int planar, const rdx_jn_pip_out *out);
  rdx_jn_side_pip_fn side_pip;
  /* LSI: rdx_jn_lsi_cpu / _cuda's contract; its edge pairs alone (rdx_jn_lsi_edge_pairs_cpu /
   * _gpu's, in the backend's memory) */
  rdx_status (*lsi)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                    int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats);
  rdx_status (*edge_pairs)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_polygons *s,
                           uint64_t **pairs, int64_t *n_pairs, rdx_jn_lsi_stats *stats);
  /* POLYGONS: rdx_jn_polygons_cpu / _gpu's contract */
  rdx_status (*polygons)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ixr, const rdx_polygons *s,
                         const rdx_jn_index *ixs, rdx_join_predicate pred, rdx_jn_track *track, uint64_t **out,
                         int64_t *n_out, double **areas);
  /* PIP on GPU backends: the traversal that rdx_jn_pip_gpu_start and _finish run (NULL on CPU) */
  const struct rdx_jn_pip_engine *engine;
} rdx_jn_ops;

/* The registry: the table for (op, backend), or NULL when that pair does not exist. */
const rdx_jn_ops *rdx_jn_find_ops(rdx_jn_op op, rdx_backend backend);

/* Tables, one per (operation, backend), defined in the files that implement them. */
extern const rdx_jn_ops rdx_jn_index_cpu_ops, rdx_jn_pip_cpu_ops, rdx_jn_lsi_cpu_ops, rdx_jn_polygons_cpu_ops;
extern const rdx_jn_ops rdx_jn_index_cuda_ops, rdx_jn_pip_cuda_ops, rdx_jn_lsi_cuda_ops, rdx_jn_polygons_cuda_ops;
extern const rdx_jn_ops rdx_jn_pip_optix_ops, rdx_jn_lsi_optix_ops, rdx_jn_polygons_optix_ops; /* OptiX builds */

/* ---- the GPU stages the soft kernels and the OptiX programs share (pip.cu, lsi.cu) ----
 * The CUDA backend traces the soft BVH in kernels and the OptiX backend traces a GAS with its
 * programs (src/join/optix/), both through pip_hd.h's and lsi_hd.h's functions; everything around
 * the traversal (pass 2's lists, blocks, sorts and reductions; LSI's scans, points and pairs) is
 * written once here and calls the engine's launches. A launch is stream-ordered on the context's
 * stream and reports launch failures; the caller waits. */
typedef struct rdx_jn_pip_engine {
  /* Pass 1 over the n queries q (device arrays), taken in the order order[0..n) (NULL: 0..n):
   * query i answered into out (pip_hd.h's POINT), and pending[i] = 0; or pending[i] = its event
   * count (>= 1) when pass 2 must answer it. */
  rdx_status (*pass1)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                      const int64_t *order, int64_t n, int planar, const rdx_jn_pip_out *out, uint32_t *pending);
  /* Pass 2's tracing: query list[k], k < nb, again, its events at ev + boff[k] (pip_hd.h's
   * EVENTS, room for boff[k + 1] - boff[k]); *mismatch = 1 when it meets another number. */
  rdx_status (*events)(rdx_context *ctx, const rdx_polygons *r, const rdx_jn_index *ix, const rdx_jn_pip_query *q,
                       const int64_t *list, int64_t nb, const uint64_t *boff, uint64_t *ev, int *mismatch);
} rdx_jn_pip_engine;
/* rdx_jn_pip_cuda's and rdx_jn_side_pip_cuda's contracts for the n queries q, with the traversal
 * of eng (the CUDA backend: the soft BVH's). */
rdx_status rdx_jn_pip_gpu(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r,
                          const rdx_jn_index *ix, const rdx_jn_pip_query *q, int64_t n, int planar,
                          const rdx_jn_pip_out *out);
/* rdx_jn_pip_gpu in two halves, so that batches run side by side (rdx_cuda_switch): _start
 * enqueues the ordering and pass 1 on the context's stream without waiting on the host (an OptiX
 * launch on a side stream does not wait either); _finish runs pass 2, which waits, and leaves
 * every answer in out. pending: the caller's n words of scratch between them. */
rdx_status rdx_jn_pip_gpu_start(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r,
                                const rdx_jn_index *ix, const rdx_jn_pip_query *q, int64_t n, int planar,
                                const rdx_jn_pip_out *out, uint32_t *pending);
rdx_status rdx_jn_pip_gpu_finish(rdx_context *ctx, const rdx_jn_pip_engine *eng, const rdx_polygons *r,
                                 const rdx_jn_index *ix, const rdx_jn_pip_query *q, int64_t n,
                                 const rdx_jn_pip_out *out, const uint32_t *pending);

struct rdx_jn_lsi_r; /* lsi_hd.h: R's side of a join */
/* One LSI pass over S's edges (device) through R (r: device pointers, r->v the soft BVH when
 * there is one): counting when pairs is NULL (counts[e] = the R edges S edge e meets, and
 * tally[0..3] += candidates, rays, clipped, brute over all edges), else filling (edge e's pairs at
 * pairs + offsets[e], *mismatch = 1 when an edge meets another count than the counting pass). */
typedef rdx_status (*rdx_jn_lsi_pass_fn)(rdx_context *ctx, const struct rdx_jn_lsi_r *r, const rdx_jn_index *ix,
                                         const rdx_polygons *s, uint64_t *counts, const uint64_t *offsets,
                                         uint64_t *pairs, unsigned long long *tally, int *mismatch);
/* Every intersecting edge pair through pass's count and fill (lsi.cu): the GPU form of
 * rdx_jn_lsi_edge_pairs_cpu, *pairs in device memory. */
rdx_status rdx_jn_lsi_edge_pairs_gpu(rdx_context *ctx, rdx_jn_lsi_pass_fn pass, const rdx_polygons *r,
                                     const rdx_jn_index *ix, const rdx_polygons *s, uint64_t **pairs,
                                     int64_t *n_pairs, rdx_jn_lsi_stats *stats);
/* rdx_jn_lsi_cuda's contract, with the count and fill passes of pass (rdx_jn_lsi_cuda: the soft
 * BVH's). */
rdx_status rdx_jn_lsi_gpu(rdx_context *ctx, rdx_jn_lsi_pass_fn pass, const rdx_polygons *r, const rdx_jn_index *ix,
                          const rdx_polygons *s, int want_points, rdx_join_lsi_result *out, rdx_jn_lsi_stats *stats);

/* The group boxes (device, 6 floats each, index_hd.h) made ready for an OptiX GAS, in place
 * (optix/launch.cu; OptiX builds only): the bounds that can equal a ray coordinate are moved
 * outward, so that every ray lies strictly inside the boxes it needs. */
rdx_status rdx_jn_optix_boxes(rdx_context *ctx, float *boxes, int64_t n);

/* Launches of the join's OptiX programs since the process began, over all contexts (0 in builds
 * without OptiX): tests and benchmarks read it around a join on an OptiX context to see that the
 * OptiX programs, not the soft kernels, answered it. */
int64_t rdx_jn_optix_launches(void);

#ifdef __cplusplus
}
#endif
#endif /* RDX_JOIN_H */
