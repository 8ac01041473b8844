/*
 * spatial.h: internals of the spatial point indexes (quadtrees built bottom-up and top-down, the
 * k-d tree, G-PICS batched queries and bulk updates). Nothing here is public.
 *
 * points.c validates every public call once, stages arrays into the backend's memory and calls
 * the backend functions declared here (*_cpu in .c files, *_cuda in .cu files, nocuda.c when CUDA
 * is not built). A backend function sees only valid, non-empty input in its own memory.
 *
 * Storage of an index (all in backend memory, through the context's memory account):
 *
 *   pool  x[cap], y[cap]  coordinates in the index dtype, SoA (G-PICS: scans of a leaf coalesce)
 *         id[cap]         u64 ids
 *         key[cap]        quadtree: finest Morton code of the slot's point (u32 for D <= 16, else
 *                         u64), or none in a paged GPU pool (rdx_sp_qt_relayout_cuda's), whose
 *                         readers derive codes from the coordinates; k-d tree: code of the slot's leaf, from the first update on:
 *                         rdx_sp_code(level, key) on the planned path (u64), the path
 *                         left-aligned (key << (depth - level)) after a GPU repair (update_kd.cu;
 *                         u32 for depth <= 32, else u64)
 *   nodes (BFS order: by level, then key; children of a node are contiguous)
 *         key    u64   quadtree: Morton code at the node's level; k-d: path bits (left 0, right 1)
 *         fpos   i64   internal: index of the first child; leaf: first pool slot
 *         len    i64   internal: number of children (1..4 quadtree, 2 k-d); leaf: points
 *         count  i64   points in the subtree
 *         room   i64   leaf: pool slots reserved from fpos (>= len); internal: 0
 *         split  f64   k-d internal: split coordinate; else 0
 *         level  u8    root = 0
 *         leaf   u8    1 = leaf
 *
 * After a build the pool is dense (room == len) and, for a bottom-up quadtree, in Morton order
 * (a k-d tree's: in leaf order). Updates that page (the planned path, which the CPU runs; GPU
 * quadtree batches of up to 1/10 of the points, update_qt.cu) spread the leaves out with spare
 * room at their first update and keep an id -> slot map, so later updates touch only the leaves
 * that change (G-PICS's paging, with one variable-size page per leaf). Larger GPU quadtree
 * batches, and GPU k-d batches (update_kd.cu), are merged into a dense pool in key order. Either
 * way a leaf's points are slots [fpos, fpos + len) with no holes.
 */
#ifndef RDX_SPATIAL_H
#define RDX_SPATIAL_H

#include "core/core.h"
#include "spatial/traverse_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RDX_POINTS_MAGIC 0x52445850u /* "RDXP" */
#define RDX_SP_NONE UINT64_MAX
#define RDX_SP_DEFAULT_CAPACITY 256
#define RDX_SP_DEFAULT_QT_DEPTH 16
#define RDX_SP_DEFAULT_KD_DEPTH 48
#define RDX_SP_MAX_QT_DEPTH 31
#define RDX_SP_MAX_KD_DEPTH 56
#define RDX_SP_MAX_K 1024

typedef struct rdx_sp_nodes {
  int64_t n;                 /* nodes */
  int64_t cap;               /* nodes the arrays have room for (>= n; the block's layout) */
  uint64_t *key;
  int64_t *fpos, *len, *count, *room;
  double *split;
  uint8_t *level, *leaf;
  void *block;               /* the one allocation holding the arrays (NULL for an alias) */
  rdx_location where;
} rdx_sp_nodes;

typedef struct rdx_sp_pool {
  void *x, *y;               /* cap coordinates each, f32 or f64 */
  uint64_t *id;              /* cap ids */
  void *key;                 /* see the file comment; own allocation */
  int key_bytes;             /* per slot, 0 without keys */
  int64_t cap, used;         /* slots allocated; slots below `used` may belong to leaves */
  void *block;               /* x, y and id */
} rdx_sp_pool;

/* What the last build or update did, for benchmarks and tests. */
typedef struct rdx_sp_stats {
  double phase_ms[4];        /* build: keys+sort, phase 1, phase 2, point gather (quadtree);
                                update: find, plan, reserve+commit, 0 (GPU quadtrees, update_qt.cu:
                                classify+plan, split groups+node sort+allocations, commit, 0) */
  int64_t moved, in_place, left_leaf, erased, inserted; /* last update */
  int64_t splits, merges, relocated, new_leaves;
  int64_t reused_pages;      /* last update: pages of earlier ones a paged GPU quadtree reused */
  int64_t relayouts, growths; /* since the build: relayouts, and growths of a paged pool */
  int64_t ahead, ahead_missed; /* since the build: GPU quadtree batches whose split work ran ahead
                                of the plan's read, and those whose work launched ahead did not fit */
} rdx_sp_stats;

struct rdx_points {
  uint32_t magic;            /* RDX_POINTS_MAGIC while alive */
  rdx_context *ctx;
  rdx_points_kind kind;
  rdx_points_method method;
  rdx_dtype dtype;
  int f64;                   /* dtype == RDX_F64 */
  int cap;                   /* leaf capacity */
  int depth;                 /* max depth */
  int key64;                 /* quadtree pool keys are u64 */
  rdx_sp_grid grid;          /* box and cell map; for the k-d tree only the box is used */
  int64_t n;                 /* live points */
  uint64_t id_end;           /* next id for inserts */
  rdx_sp_pool pool;          /* backend memory */
  rdx_sp_nodes nodes;        /* backend memory */
  rdx_sp_nodes host;         /* host copy of the nodes (GPU contexts); aliases `nodes` on the CPU */
  int host_stale;            /* GPU: `host` lags `nodes` (a build leaves it so: see points.c) */
  uint64_t *slot;            /* planned path: id -> pool slot or RDX_SP_NONE, slot_cap entries; NULL
                                before its first update */
  int64_t slot_cap;
  uint32_t *live;            /* GPU updates (update_qt.cu, update_kd.cu): a bit per id, set while the id
                                is in the index; NULL until then. At most one of slot and live. */
  int64_t live_bits;
  void *pfree;               /* paged GPU quadtrees: the pages leaves gave up, for later batches
                                (update.cuh, pgfree), pfree_k room classes in pfree_bytes; or NULL */
  int pfree_k;
  int64_t pfree_bytes;
  int sorted;                /* the pool's slots [0, n) hold the live points in key order with their
                                keys: Morton codes (a GPU bottom-up build, a GPU quadtree update) or
                                k-d leaf codes (a GPU k-d repair; a GPU k-d build leaves its pool in
                                leaf order without codes); the merges need it */
  struct {
    int64_t m, surv, subnodes, groups, splits;
  } plan_last;               /* GPU quadtree updates (paged or merged): the last batch's rows and
                                split work, which size the next batch's split work launched ahead of
                                its plan's read (update_qt.cu, qspec); m = 0 before the first */
  int kd_levels;             /* GPU k-d trees: 1 + the deepest node's level, 0 when not known */
  int64_t peak;              /* most bytes the build held */
  void *arena;               /* GPU: device scratch kept between queries and updates, or NULL */
  size_t arena_bytes;        /* its size: at most 64 MiB + 48 bytes per pool slot */
  rdx_sp_stats stats;
};

/* ---- helpers (points.c) ---- */
/* Nodes: n entries in `where`, one allocation. */
rdx_status rdx_sp_nodes_alloc(rdx_context *ctx, int64_t n, rdx_location where, rdx_sp_nodes *out);
void rdx_sp_nodes_free(rdx_context *ctx, rdx_sp_nodes *nodes);
/* The empty index's nodes: one root leaf holding nothing, on the host. */
rdx_status rdx_sp_nodes_empty(rdx_context *ctx, rdx_sp_nodes *out);
/* Copy all arrays between equally sized node sets (any locations). */
rdx_status rdx_sp_nodes_copy(rdx_context *ctx, rdx_sp_nodes *dst, const rdx_sp_nodes *src);
/* Pool of cap slots in backend memory (x, y, id; key when with_key, of key_bytes per slot). */
rdx_status rdx_sp_pool_alloc(rdx_context *ctx, int64_t cap, int f64, int key_bytes, rdx_sp_pool *out);
void rdx_sp_pool_free(rdx_context *ctx, rdx_sp_pool *pool);
/* Host pools (CPU builds): slot i takes input point s of the (n, 2) array xy, and id s. */
static inline void rdx_sp_pool_put(rdx_sp_pool *pool, int64_t i, const void *xy, int f64, int64_t s) {
  if (f64) {
    ((double *)pool->x)[i] = ((const double *)xy)[2 * s];
    ((double *)pool->y)[i] = ((const double *)xy)[2 * s + 1];
  } else {
    ((float *)pool->x)[i] = ((const float *)xy)[2 * s];
    ((float *)pool->y)[i] = ((const float *)xy)[2 * s + 1];
  }
  pool->id[i] = (uint64_t)s;
}
/* Bytes held by an index now. */
int64_t rdx_sp_resident(const rdx_points *pts);
/* View of the tree in backend memory (nodes + pool). */
rdx_sp_view rdx_sp_view_of(const rdx_points *pts);
/* The same with the host copy of the nodes (pool pointers stay in backend memory). */
rdx_sp_view rdx_sp_host_view_of(const rdx_points *pts);
/* Make the host copy of the nodes current (a no-op when it is). Builds leave it stale: only
 * updates, rdx_points_info and tests read it, and copying it costs a build of 1.7e8 points
 * about 100 MB of device-to-host traffic. */
rdx_status rdx_sp_sync_host_nodes(rdx_context *ctx, rdx_points *pts);
/* Build with test-only flags (RDX_SP_DEBUG_*); rdx_points_build calls it with 0. */
#define RDX_SP_DEBUG_PAPER_LINE9 1 /* bottom-up leaf offsets as the paper's Fig. 5 line 9 (wrong) */
rdx_status rdx_points_build_ex(rdx_context *ctx, rdx_array points, const rdx_points_options *opts, int debug,
                               rdx_points **out);
/* Copy the live points of an index to the host as (x, y, id) triples of doubles/ids, in pool
 * order of the leaves (tests and benchmarks). Arrays of pts->n entries, caller-owned. */
rdx_status rdx_sp_export_points(rdx_context *ctx, const rdx_points *pts, double *x, double *y, uint64_t *id);

/* ---- input scans (finite, inside the box, radius >= 0) and bounding box ---- */
typedef struct rdx_sp_scan {
  double box[4];             /* bounding box of columns 0, 1 of the rows scanned */
  int64_t bad_row;           /* first row breaking a rule, -1 if none */
  int bad_what;              /* 1 non-finite, 2 outside the box, 3 negative radius */
} rdx_sp_scan;
/* rows x cols values of f32/f64 in backend memory. box (may be NULL): points must lie in it.
 * radius_col >= 0: that column must be >= 0. */
rdx_status rdx_sp_scan_cpu(rdx_context *ctx, const void *data, int f64, int64_t rows, int cols, const double *box,
                           int radius_col, rdx_sp_scan *out);
rdx_status rdx_sp_scan_cuda(rdx_context *ctx, const void *data, int f64, int64_t rows, int cols, const double *box,
                            int radius_col, rdx_sp_scan *out);

/* ---- builds: fill pts->pool and pts->nodes (and pts->host on GPUs) from n >= 1 points ---- */
typedef struct rdx_sp_build_in {
  const void *xy;            /* n interleaved (x, y) in the index dtype, backend memory, validated */
  int64_t n;
  int debug;                 /* RDX_SP_DEBUG_* */
} rdx_sp_build_in;
rdx_status rdx_sp_qt_build_cpu(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in);
rdx_status rdx_sp_qt_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in);
rdx_status rdx_sp_kd_build_cpu(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in);
rdx_status rdx_sp_kd_build_cuda(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in);

/* Host node lists: what builds on the host and the update planner assemble trees in. */
typedef struct rdx_sp_hnode {
  uint64_t key;
  int64_t fpos, len, count, room;
  double split;
  int level, leaf;
} rdx_sp_hnode;
typedef struct rdx_sp_hlist {
  rdx_sp_hnode *v;
  int64_t n, cap;
} rdx_sp_hlist;
rdx_status rdx_sp_hlist_push(rdx_context *ctx, rdx_sp_hlist *l, rdx_sp_hnode node);
/* Room for cap nodes in all (one allocation; the nodes stay). */
rdx_status rdx_sp_hlist_reserve(rdx_context *ctx, rdx_sp_hlist *l, int64_t cap);
void rdx_sp_hlist_free(rdx_context *ctx, rdx_sp_hlist *l);
/* Sort nodes into BFS order (level, key) and set fpos/len of internal nodes to their children. */
rdx_status rdx_sp_hlist_link(rdx_context *ctx, rdx_sp_hlist *l, int kd);
/* Set fpos/len of the internal nodes of host nodes already in BFS order (RDX_ERR_INTERNAL if they
 * are not, or a node lacks children). */
rdx_status rdx_sp_nodes_link(rdx_context *ctx, rdx_sp_nodes *nodes, int kd);
/* A host rdx_sp_nodes with the list's nodes. */
rdx_status rdx_sp_hlist_to_nodes(rdx_context *ctx, const rdx_sp_hlist *l, rdx_sp_nodes *out);
/* Node i of host nodes N from a list node (room only for leaves). */
void rdx_sp_nodes_put(rdx_sp_nodes *N, int64_t i, const rdx_sp_hnode *p);

/* Quadtree nodes by binary search over n >= 1 sorted finest codes (host) whose quadrant at
 * (level, key) holds them all: breadth first down to leaves of <= cap points or level depth.
 * Appends to out; leaf fpos are positions in keys. Used by updates for leaves that split and by
 * the tests as the reference tree. */
rdx_status rdx_sp_qt_subtree(rdx_context *ctx, const uint64_t *keys, int64_t n, int level, uint64_t key, int depth,
                             int64_t cap, rdx_sp_hlist *out);
/* k-d nodes over n >= 1 host points (x, y, id) from (level, key) down: median splits by
 * (coordinate, id). perm (n entries) receives the point order of the leaves; leaf fpos are
 * positions in perm. The CPU build and updates' splitting leaves use it. */
rdx_status rdx_sp_kd_subtree(rdx_context *ctx, const double *x, const double *y, const uint64_t *id, int64_t n,
                             int level, uint64_t key, int depth, int64_t cap, rdx_sp_hlist *out, int64_t *perm);

/* ---- queries ---- */
typedef struct rdx_sp_qin {
  int type;                  /* RDX_SP_MATCH .. RDX_SP_KNN */
  int k;                     /* kNN */
  const void *q;             /* m rows, backend memory, validated */
  int64_t m;                 /* >= 1 */
} rdx_sp_qin;
/* rows == NULL: counts[m] receives the counts. Otherwise the fill: offsets[m + 1] (backend
 * memory) must match the counts (RDX_ERR_INVALID_ARGUMENT if not), rows receives the ids. */
rdx_status rdx_sp_query_cpu(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts,
                            const uint64_t *offsets, uint64_t *rows);
rdx_status rdx_sp_query_cuda(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts,
                             const uint64_t *offsets, uint64_t *rows);

/* ---- updates (update.c drives; the backends move the points) ---- */
enum { RDX_SP_MOVE = 1, RDX_SP_INSERT = 2, RDX_SP_ERASE = 3 };
typedef struct rdx_sp_batch {
  int op;
  int64_t m;                 /* >= 1 */
  const void *ids;           /* move/erase: m ids, backend memory */
  int ids64;                 /* ids are u64 (else u32) */
  const void *xy;            /* move/insert: m interleaved (x, y), backend memory, validated */
  uint64_t first_id;         /* insert: id of row 0 */
  int check_xy;              /* move/insert: xy is not validated yet; the update checks it */
  int bad_xy;                /* out: the update found a non-finite point or one outside the box */
} rdx_sp_batch;
/* Whether rdx_sp_update checks the coordinates itself (batch.check_xy may be set): the GPU
 * quadtree path does, in the kernel that reads them anyway. */
int rdx_sp_update_checks_xy(rdx_context *ctx, const rdx_points *pts);
rdx_status rdx_sp_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b);
/* Spread every leaf to room RDX_SP_SLACK(len) (RDX_SP_GROW(len) when wide: the GPU's paged
 * quadtree updates) in a new pool with `headroom` free slots past them, and build the id -> slot
 * map if there is none (update.c; host nodes must be current). */
rdx_status rdx_sp_relayout(rdx_context *ctx, rdx_points *pts, int wide, int64_t headroom);
#define RDX_SP_GROW(c) ((c) + (c) / 2 + 8)  /* room given to a relocated, merged or new leaf */
#define RDX_SP_SLACK(c) ((c) + (c) / 4 + 4) /* room per leaf at a relayout */

/* A run of a sorted list: entries [start, start + n) share `what` (a leaf, or a target code). */
typedef struct rdx_sp_run {
  int64_t what, start, n;
} rdx_sp_run;

/* A copy job of the update (and relayout): points to dst .. dst + n - 1 of the destination. */
enum { RDX_SP_SEG_STAYERS = 1, RDX_SP_SEG_INCOMING = 2, RDX_SP_SEG_SCRATCH = 3 };
typedef struct rdx_sp_seg {
  int64_t src;               /* STAYERS: old leaf node; INCOMING: first entry of I; SCRATCH: first entry of the order */
  int64_t n;                 /* points copied */
  int64_t dst;               /* first destination slot */
  uint64_t code;             /* k-d: leaf code written with the points */
  int32_t kind;
  int32_t to_scratch;        /* destination is the split scratch, not the pool */
} rdx_sp_seg;

/* An in-place leaf repair: removed slots out, incoming in, no relocation. */
typedef struct rdx_sp_keep {
  int64_t start, old_len;    /* extent of the leaf */
  int64_t r_start, r_n;      /* its removals in R (sorted slots) */
  int64_t i_start, i_n;      /* its incoming in I */
  uint64_t code;             /* k-d leaf code */
} rdx_sp_keep;

/* Backend state of one update between its phases (lists R, I, P, dead flags, scratch, reserved
 * memory); opaque to update.c. */
typedef struct rdx_sp_work rdx_sp_work;

/* What `find` tells the planner (host memory, allocated through the account; update.c frees
 * r_runs and i_runs). */
typedef struct rdx_sp_found {
  int64_t n_remove, n_incoming, n_inplace;
  rdx_sp_run *r_runs;        /* removals per old leaf (what = node index), by node */
  int64_t n_r_runs;
  rdx_sp_run *i_runs;        /* incoming per target (what = node * 5 + quadrant + 1), by target */
  int64_t n_i_runs;
  int64_t bad_row;           /* -1, or the first ids row that is bad: */
  int bad_what;              /* 1 not an id of the index, 2 erased, 3 repeated in the batch */
  uint64_t bad_id;
} rdx_sp_found;

typedef struct rdx_sp_backend {
  /* Copy every leaf's points to new_fpos[leaf] in a new pool of new_cap slots; build or refresh
   * the id -> slot map; k-d: store each point's leaf code. Host/device nodes are updated by the
   * caller. All-or-nothing. */
  rdx_status (*relayout)(rdx_context *ctx, rdx_points *pts, const int64_t *new_fpos, int64_t new_cap);
  /* Steps 1 of update.c: validate ids, movement check, leaf finding, lists R, I, P. */
  rdx_status (*find)(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, rdx_sp_work **w, rdx_sp_found *f);
  /* Copy the split groups' points into scratch (the segments with to_scratch), sort quadtree
   * groups by (Morton code, id), and hand the host their codes (quadtree) or x, y, id (k-d). */
  rdx_status (*split_gather)(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                             int64_t n_points, const int64_t *group_start, int64_t n_groups, uint64_t *keys_h,
                             double *x_h, double *y_h, uint64_t *id_h);
  /* Allocate what commit needs: pool of new_cap slots (if larger), slot map of slot_cap, device
   * nodes, upload buffers. Changes nothing visible. */
  rdx_status (*reserve)(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, int64_t new_cap, int64_t slot_cap,
                        int64_t n_nodes, int64_t n_segs, int64_t n_keeps, int64_t n_order);
  /* Write the update: erase marks, in-place moves, segment copies (pool), leaf repairs; GPU:
   * upload new_nodes (host) into the reserved device nodes and swap them in. order[j]: scratch
   * index of the j-th point of SCRATCH segments. */
  rdx_status (*commit)(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                       const rdx_sp_keep *keeps, int64_t n_keeps, const int64_t *order, int64_t n_order,
                       const rdx_sp_nodes *new_nodes);
  void (*release)(rdx_context *ctx, rdx_sp_work *w);
} rdx_sp_backend;
extern const rdx_sp_backend rdx_sp_cpu_backend;
extern const rdx_sp_backend rdx_sp_cuda_backend;
/* A quadtree update on the GPU (update_qt.cu). Same contract as the planned path; bad ids come
 * back in f (bad_row >= 0), bad points in b->bad_xy, with nothing changed; pts->stats are set
 * and f->n_inplace is -1 (not tracked). With an id map (pts->slot, which rdx_sp_qt_relayout_cuda gives)
 * it pages: leaves keep their pages and the map. Without one it merges: the pool comes out
 * dense and in Morton order (pts->sorted) and pts->live replaces the map. */
rdx_status rdx_sp_qt_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f);
/* pts->pfree freed: the paged path's pages to reuse (update.cuh, pgfree) hold only under its own
 * layout (update.c). */
void rdx_sp_drop_pages(rdx_context *ctx, rdx_points *pts);
/* A GPU quadtree's leaves spread out to room RDX_SP_GROW(len), headroom free slots past them:
 * rdx_sp_relayout(wide)'s moves planned on the device (update.cu; the caller does the rest of
 * what a relayout leaves behind: update.c, relayouted). */
rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom);
/* A k-d tree update on the GPU by rebuilding (update_kd.cu), same contract; leaves the pool
 * dense as a build does, keeps pts->live and drops the planned path's id map. */
/* Whether a GPU k-d update of m rows rebuilds the tree rather than repairing it (update.c). */
int rdx_sp_kd_rebuilds(const rdx_points *pts, int64_t m);
rdx_status rdx_sp_kd_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f);

/* ---- baselines for the benchmarks (CUDA; brute force over all points) ---- */
rdx_status rdx_sp_brute_count_cuda(rdx_context *ctx, const void *xy, int f64, int64_t n, const rdx_sp_qin *in,
                                   uint64_t *counts);
rdx_status rdx_sp_brute_knn_cuda(rdx_context *ctx, const void *xy, int f64, int64_t n, const rdx_sp_qin *in,
                                 uint64_t *rows);

/* ---- CPU sorting helper: stable LSD radix sort of (key, value) pairs on `bits` low key bits ---- */
rdx_status rdx_sp_radix_sort_cpu(rdx_context *ctx, uint64_t *keys, uint64_t *vals, int64_t n, int begin_bit,
                                 int end_bit);

#ifdef __cplusplus
}
#endif
#endif /* RDX_SPATIAL_H */
