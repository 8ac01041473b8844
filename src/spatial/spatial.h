/*
 * spatial.h: internals of the spatial point indexes (quadtrees built bottom-up and top-down, the
 * k-d tree, G-PICS batched queries and bulk updates). Nothing here is public.
 *
 * points.c validates every public call once, stages arrays into the backend's memory and calls
 * the index's ops table: one per (kind, backend), found in registry.c (the keys module's shape,
 * keys.h). A kind is added by its own files (qtree.c/.cu and kdtree.c/.cu define theirs) and one
 * registry line; without CUDA the registry has no CUDA entries. An ops function sees only valid,
 * non-empty input in its backend's memory.
 *
 * Storage of an index (all in backend memory, through the context's memory account):
 *
 *   pool  x[cap], y[cap]  coordinates in the index dtype, SoA (G-PICS: scans of a leaf coalesce)
 *         id[cap]         u64 ids
 *         key[cap]        a code per slot, whose meaning the kind and layout fix (below), or
 *                         NULL where its readers derive it
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
 * A leaf's points are slots [fpos, fpos + len), with no holes. An index keeps the pool layout
 * its build chose (rdx_points_options.layout) for life, and each layout has one update engine
 * per backend and kind (the ops table's engine for the layout; update.c runs it):
 *
 *   layout  backend, kind   engine                    pool.key                     finds ids by
 *   paged   CPU, both       planner, update_cpu.c     quadtree: finest Morton      slot: id ->
 *                                                     code (u32 to depth 16, else  slot map
 *                                                     u64); k-d: rdx_sp_code of
 *                                                     the slot's leaf (u64), none
 *                                                     before the first update
 *   paged   GPU, quadtree   paging, update_paged.cu   finest Morton code, or NULL  slot
 *   dense   GPU, quadtree   merge, update_qt.cu       finest Morton code           live: a bit
 *   dense   GPU, k-d tree   repair, update_kd.cu      the slot's leaf's path,      per live id
 *                                                     left-aligned, or NULL
 *
 * Paged: each leaf owns a page of slots [fpos, fpos + room), and an update rewrites only the
 * pages of the leaves that change (G-PICS's paging). A build leaves room == len; the first update
 * spreads the pages out with spare room and makes the id map. Dense: slots [0, n) hold the live
 * points in key order (Morton order; k-d leaf order) and an update merges the sorted batch into
 * them in one pass. A batch too large for its engine rebuilds the index in the same layout
 * (update.c, rdx_sp_rebuilds; update.cu).
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

typedef struct rdx_sp_ops rdx_sp_ops;

struct rdx_points {
  uint32_t magic;            /* RDX_POINTS_MAGIC while alive */
  rdx_context *ctx;
  const rdx_sp_ops *ops;     /* the (kind, backend) pair's functions, from the registry */
  rdx_points_kind kind;
  rdx_points_method method;
  rdx_points_layout layout;  /* RDX_POINTS_PAGED or RDX_POINTS_DENSE, for life (see above) */
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
  uint64_t *slot;            /* paged: id -> pool slot or RDX_SP_NONE, slot_cap entries; NULL until
                                the first update (and after a rebuild) */
  int64_t slot_cap;
  uint32_t *live;            /* dense: a bit per id, set while the id is in the index; NULL until
                                the first update */
  int64_t live_bits;
  void *pfree;               /* paged GPU quadtrees: the pages leaves gave up, for later batches
                                (update.cuh, pgfree), pfree_k room classes in pfree_bytes; or NULL */
  int pfree_k;
  int64_t pfree_bytes;
  int kd_levels;             /* GPU k-d trees: 1 + the deepest node's level, 0 when not known */
  int force_rebuild;         /* tests and benchmarks (rdx_sp_force_rebuild): 1 every update
                                rebuilds, -1 none does that its engine can take, 0 by size */
  int64_t peak;              /* most bytes the build held */
  void *arena;               /* GPU: device scratch kept between queries and updates, or NULL */
  size_t arena_bytes;        /* its size: at most 64 MiB + 48 bytes per pool slot */
  rdx_sp_stats stats;        /* the last build's or update's figures (bench_api.h) */
};

/* ---- helpers (points.c) ---- */
/* Nodes: n entries in `where`, one allocation. */
rdx_status rdx_sp_nodes_alloc(rdx_context *ctx, int64_t n, rdx_location where, rdx_sp_nodes *out);
void rdx_sp_nodes_free(rdx_context *ctx, rdx_sp_nodes *nodes);
/* The empty index's nodes: one root leaf holding nothing, in `where`. */
rdx_status rdx_sp_nodes_empty(rdx_context *ctx, rdx_location where, rdx_sp_nodes *out);
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
/* Everything an index holds freed (its handle stays). */
void rdx_sp_storage_free(rdx_context *ctx, rdx_points *pts);
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
#include "spatial/update_hd.h"
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
/* A host rdx_sp_nodes with the list's nodes. */
rdx_status rdx_sp_hlist_to_nodes(rdx_context *ctx, const rdx_sp_hlist *l, rdx_sp_nodes *out);

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

/* ---- updates (update.c picks the engine; G-PICS Section 5, rules in update_hd.h) ---- */
enum { RDX_SP_MOVE = 1, RDX_SP_INSERT = 2, RDX_SP_ERASE = 3 };
typedef struct rdx_sp_batch {
  int op;
  int64_t m;                 /* >= 1 */
  const void *ids;           /* move/erase: m ids, backend memory */
  int ids64;                 /* ids are u64 (else u32) */
  const void *xy;            /* move/insert: m interleaved (x, y), backend memory */
  uint64_t first_id;         /* insert: id of row 0 */
  int check_xy;              /* move/insert: xy is not validated yet; the engine checks it */
  /* out, with the index unchanged: */
  int bad_xy;                /* the engine found a non-finite point or one outside the box */
  int64_t bad_row;           /* -1, or the ids row reported bad (update_hd.h's rule): */
  int bad_what;              /* RDX_SP_BAD_UNKNOWN, _ERASED or _REPEATED */
  uint64_t bad_id;
  /* out, on success: */
  int64_t in_place;          /* moves that stayed in their leaf, or -1 where not tracked */
} rdx_sp_batch;
/* One batch, all-or-nothing: bad ids and points come back in b with RDX_ERR_INVALID_ARGUMENT. */
rdx_status rdx_sp_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b);
/* Whether a batch of m rows rebuilds the index rather than going through its layout's engine. */
int rdx_sp_rebuilds(const rdx_points *pts, int64_t m);

/* The engines, which the ops tables name: one entry point each, the same contract as
 * rdx_sp_update (bad input in b, the index unchanged; on success pts->stats set, counts and ids
 * left to update.c). */
typedef rdx_status (*rdx_sp_update_fn)(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b);
rdx_status rdx_sp_update_cpu(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b);    /* update_cpu.c */
rdx_status rdx_sp_qt_paged_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b); /* update_paged.cu */
rdx_status rdx_sp_qt_merge_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b); /* update_qt.cu */
rdx_status rdx_sp_kd_repair_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b); /* update_kd.cu */
rdx_status rdx_sp_rebuild_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b);  /* update.cu */
/* A GPU quadtree pool built top-down put in Morton order, as the dense layout keeps it
 * (rdx_sp_qt_build_cuda calls it after such a build; update_qt.cu). */
rdx_status rdx_sp_qt_dense_cuda(rdx_context *ctx, rdx_points *pts);
/* A paged GPU quadtree's leaves spread out to room RDX_SP_GROW(len), headroom free slots past
 * them, and its id map made or remapped (update.cu); tests call it to check the remap. */
rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom);
/* pts->pfree freed (update.c). */
void rdx_sp_drop_pages(rdx_context *ctx, rdx_points *pts);
/* Paging takes batches of up to n / RDX_SP_PAGED_SHARE rows, the k-d repair up to
 * n / RDX_SP_REPAIR_SHARE (their rdx_sp_engine.share; update.c says why). */
#define RDX_SP_PAGED_SHARE 10
#define RDX_SP_REPAIR_SHARE 2
#define RDX_SP_GROW(c) ((c) + (c) / 2 + 8)  /* room given to a relocated, merged or new leaf */
#define RDX_SP_SLACK(c) ((c) + (c) / 4 + 4) /* room per leaf at a CPU relayout */

/* ---- the ops table: one per (kind, backend), listed in registry.c ----
 * points.c validates and stages every call, handles the empty cases and the memory bookkeeping,
 * and calls these. OPTIX contexts use the CUDA ops: no point index uses rays. */

/* A layout's update engine (update.c). Batches of more than n / share rows rebuild the index in
 * its layout through rdx_sp_ops.rebuild, as do batches that could take a slots32 engine's pool
 * past 2^31 slots. */
typedef struct rdx_sp_engine {
  rdx_sp_update_fn update;   /* NULL: the pair does not offer the layout (rdx_sp_ops.one_layout) */
  int share;                 /* 0: takes any batch (and rdx_sp_force_rebuild is ignored) */
  int slots32;               /* 1: its lists hold 32-bit pool slots */
} rdx_sp_engine;

struct rdx_sp_ops {
  rdx_points_kind kind;
  rdx_backend backend;       /* CPU or CUDA */
  const char *name;          /* "quadtree", "k-d tree": the messages' word for the kind */
  int top_down;              /* 1: builds top-down as well as bottom-up (rdx_points_options.method) */
  int max_depth;             /* rdx_points_options.max_depth in [1, max_depth], */
  int default_depth;         /* default_depth when 0 */
  int morton;                /* 1: the grid's cells and the pool's keys are Morton codes to max_depth
                                (u32 keys to depth 16, u64 beyond); 0: the grid gives the box only,
                                and a build leaves the pool without keys */
  rdx_points_layout default_layout;
  const char *one_layout;    /* the pair offers one layout: why the other is refused; else NULL */
  rdx_sp_engine engine[2];   /* by layout: [0] paged, [1] dense (rdx_sp_engine_of) */
  rdx_sp_update_fn rebuild;  /* the batches the engine does not take; NULL where it takes all */
  int checks_xy;             /* 1: the engines check a batch's coordinates in the kernel that reads
                                them, so points.c scans them only to word a failure */
  /* The input scan: the backend's, the same for every kind. */
  rdx_status (*scan)(rdx_context *ctx, const void *data, int f64, int64_t rows, int cols, const double *box,
                     int radius_col, rdx_sp_scan *out);
  /* Pool and nodes (and what the layout keeps) from n >= 1 points, by pts->method. */
  rdx_status (*build)(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in);
  rdx_status (*query)(rdx_context *ctx, const rdx_points *pts, const rdx_sp_qin *in, uint64_t *counts,
                      const uint64_t *offsets, uint64_t *rows);
  int64_t (*bytes)(const rdx_points *pts);
  void (*destroy)(rdx_context *ctx, rdx_points *pts); /* frees what the index holds */
  /* Waits for a query's or an update's device work before the call returns; NULL on the CPU. */
  rdx_status (*sync)(rdx_context *ctx, const char *what);
};

/* The registry: ops for (kind, backend), or NULL when that pair does not exist. */
const rdx_sp_ops *rdx_sp_find_ops(rdx_points_kind kind, rdx_backend backend);
/* The engine of the index's layout. */
static inline const rdx_sp_engine *rdx_sp_engine_of(const rdx_sp_ops *ops, rdx_points_layout layout) {
  return &ops->engine[layout == RDX_POINTS_DENSE];
}
extern const rdx_sp_ops rdx_sp_qt_cpu_ops, rdx_sp_kd_cpu_ops; /* qtree.c, kdtree.c */
extern const rdx_sp_ops rdx_sp_qt_cuda_ops, rdx_sp_kd_cuda_ops; /* qtree.cu, kdtree.cu */

/* ---- CPU sorting helper: stable LSD radix sort of (key, value) pairs on `bits` low key bits ---- */
rdx_status rdx_sp_radix_sort_cpu(rdx_context *ctx, uint64_t *keys, uint64_t *vals, int64_t n, int begin_bit,
                                 int end_bit);

#ifdef __cplusplus
}
#endif
#endif /* RDX_SPATIAL_H */
