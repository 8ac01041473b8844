/*
 * bench_api.h: the internal calls the raydex program (tools/) uses beyond raydex.h, and only
 * these: the data generators and their byte estimates, overflow-checked sizes, escaping for
 * messages, a clock, the entry points that force a path for tests and benchmarks, the limits of
 * the point-index options, what a point index's last build or update did, its points and nodes
 * for the benchmarks' checks, and the brute-force oracles. Not installed, not public: the
 * library keeps no promise here beyond its own tools and tests.
 *
 * Each of these is declared here alone: core.h includes this file, so the library's modules,
 * which define them, see the same declarations. The tools include raydex.h, cli.h and this, no
 * module header (the tools_includes test checks it).
 */
#ifndef RDX_BENCH_API_H
#define RDX_BENCH_API_H

#include <stddef.h>
#include <stdint.h>

#include "raydex.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sizes (core) ---- */
/* Overflow-checked size arithmetic. Every byte count computed from an element count (an array's,
 * a generator's, a file's) goes through these, so a huge or hostile count is refused instead of
 * wrapping into a small allocation that is then written past. Each returns 1 and sets *out when
 * the exact value fits in size_t, else 0 (and leaves *out alone).
 *
 * Bound: rdx_array_check refuses an array of more than RDX_MAX_ARRAY_BYTES (2^56, the largest
 * user address space, x86-64's with 5-level paging, so no real array is refused). Every array
 * that reaches an index therefore has fewer than 2^54 elements, and a buffer of count times any
 * per-element size below 1 KiB (pairs, triangles, nodes per key or point) fits size_t: the
 * internal buffers sized that way need no check of their own. */
#define RDX_MAX_ARRAY_BYTES ((uint64_t)1 << 56)
static inline int rdx_size_add(size_t a, size_t b, size_t *out) {
  if (a > SIZE_MAX - b) return 0;
  *out = a + b;
  return 1;
}
static inline int rdx_size_mul(size_t a, size_t b, size_t *out) {
  if (b != 0 && a > SIZE_MAX / b) return 0;
  *out = a * b;
  return 1;
}
/* count rows of `columns` elements of `elem_bytes` each; 0 also for a negative count or columns. */
static inline int rdx_size_rows(int64_t count, int64_t columns, size_t elem_bytes, size_t *out) {
  size_t row;
  if (count < 0 || columns < 0 || (uint64_t)count > SIZE_MAX || (uint64_t)columns > SIZE_MAX) return 0;
  return rdx_size_mul((size_t)columns, elem_bytes, &row) && rdx_size_mul((size_t)count, row, out);
}

/* ---- messages and time (core) ---- */
/* Untrusted bytes (a file's header, a path, an environment variable) made printable for a
 * message: printable ASCII stays, a backslash is doubled, any other byte becomes \xNN. At most
 * cap - 1 characters are written (and a NUL); an escape that does not fit ends the text with
 * "...". Returns out. */
const char *rdx_escape(char *out, size_t cap, const void *bytes, size_t len);
/* rdx_escape's buffer size for the short strings messages quote (keys, values, dtypes). */
#define RDX_ESCAPE_SHORT 64
/* Milliseconds from a monotonic clock. */
double rdx_now_ms(void);
/* Whether the CUDA backend is compiled in (rdx_info's cuda_built, without rdx_info_get's device
 * queries). */
int rdx_cuda_built(void);

/* ---- paths forced by tests and benchmarks, never by the environment (core, rt, spatial, join) ---- */
/* The GPU's CSR sort path (core/csr_sort.cu): AUTO is the cost model's choice, and PACKED falls
 * back to SEGMENTED when the packed keys do not fit 64 bits. */
enum { RDX_CSR_SORT_AUTO = 0, RDX_CSR_SORT_SEGMENTED = 1, RDX_CSR_SORT_PACKED = 2 };
void rdx_csr_force_sort(rdx_context *ctx, int method);
/* The width of the soft BVHs this context builds when the build's options leave it at 0 (2 or 4;
 * 0 restores the default, 4), so every RT algorithm's tests also run on the binary tree
 * (tests/CMakeLists.txt's .bvh2 entries, `--bvh 2`). */
void rdx_rt_force_bvh_width(rdx_context *ctx, int width);
/* Mode 1 makes every later update of pts a rebuild, -1 none that its layout's engine can take,
 * 0 (the default) decides by the batch's size. Layouts whose engine takes any batch (the CPU
 * planner, the dense quadtree) ignore it. */
void rdx_sp_force_rebuild(rdx_points *pts, int mode);
/* Crash tests of snapshots (io/snapshot.c): from now on this process's snapshot writer kills the
 * process (SIGKILL) once more than `bytes` bytes of its temporary would be written, or, for bytes
 * at or past the file's size, after the fsync and before the rename; -1 (the default) turns it
 * off. Process-wide: a test sets it in a forked child only. */
void rdx_snapshot_kill_at(int64_t bytes);
/* On (1), the join indexes this context builds from now on have naive boxes: every bound rounded
 * to the nearest float32, no pad (RayJoin's plain float32 version, digest section 5), and LSI
 * casts every ray whatever its rounding error instead of testing such S edges against every R
 * edge; the exact tests of the candidates stay, so each wrong answer is a missed candidate.
 * `raydex bench join --naive` counts them. 0 (the default) restores the conservative boxes.
 * Indexes already built keep their boxes. */
void rdx_join_force_naive(rdx_context *ctx, int on);
/* On (1), the GPU's PIP traces the points in input order instead of sorting them by their Morton
 * cell first (join/pip.cu), for `raydex bench join --input-order`; 0 (the default) sorts. */
void rdx_join_force_input_order(rdx_context *ctx, int on);
/* On (1), the polygon joins on GPU contexts locate the two directions' queries one after the
 * other on the context's stream instead of side by side on two (join/overlay.cu's locate_all), for
 * `raydex bench join --one-stream`; 0 (the default) runs them side by side. */
void rdx_join_force_one_stream(rdx_context *ctx, int on);
/* Copies between pageable host memory and the device (core/staging.cu): AUTO, the library's
 * choice (through the context's staging ring from 256 KiB up); RING, every such copy through the
 * ring whatever its size (tests, with a ring of a few bytes); DIRECT, cudaMemcpy from pageable
 * memory as the driver does it (the benchmarks' baseline). A no-op on builds without CUDA. */
enum { RDX_STAGING_AUTO = 0, RDX_STAGING_RING = 1, RDX_STAGING_DIRECT = 2 };
void rdx_staging_force(rdx_context *ctx, int mode);
/* Bytes of the context's staging ring (0: none, as on cpu). */
size_t rdx_staging_bytes(const rdx_context *ctx);
/* On (1), a sharded key index's builds, point lookups, counts and range counts on this rank stage
 * through the host as on CPU ranks (dist/keys.c), instead of staying on the GPUs; every rank must
 * agree, or the path is the host's. For `raydex bench keys --gpus N --host-path` and the tests of
 * both paths. */
void rdx_dist_force_host(rdx_context *ctx, int on);
/* items > 0: this rank's MPI all-to-alls go as messages of at most that many items, the path they
 * take past MPI's int counts (2^31 - 1 items); 0: that limit. For the tests of that path. */
void rdx_dist_force_message_items(rdx_context *ctx, int64_t items);
/* This rank's time in the device all-to-alls of its last sharded call on the GPUs (a build: the
 * keys and rows out; a lookup, count or range count: the queries out, the answers back), in ms; 0
 * after one that staged through the host. */
double rdx_dist_exchange_ms(const rdx_context *ctx);
/* This rank's time answering its shard's part of its last sharded point query on the GPUs (the
 * shard's own query, its ids mapped, until they are ready to go back), in ms: with the exchange
 * time, where a batch's time goes and how evenly the shards share the work. */
double rdx_dist_shard_ms(const rdx_context *ctx);
/* 1 when idx (this rank's handle) was built on the GPUs (dist/gpu.cu), 0 when its build staged
 * through the host: the tests' check that each path ran. */
int rdx_dist_index_built_on_gpus(const rdx_dist_index *idx);
/* The exchange alone, as nccl-tests' alltoall measures it: collectively, every rank sends `bytes`
 * bytes of its device memory in equal parts to every rank through comm's device all-to-all;
 * *ms is this rank's time. RDX_ERR_UNSUPPORTED when the transport has no device exchange or a
 * context is not a GPU's. */
rdx_status rdx_dist_probe_exchange(rdx_comm *comm, int64_t bytes, double *ms);
/* `raydex bench keys --gpus --device-input` (dist/gpu.cu): data made on each rank's GPU, so that
 * a set larger than one GPU never sits whole on one GPU or in one process's host memory. Key
 * number g (0 <= g < n_total) of the distinct set drawn from seed is a bijection of g (u32 keys:
 * n_total <= 2^32) and its row g + row_base. rdx_dist_bench_keys writes key numbers first ..
 * first + n - 1 into keys (device, dtype u32 or u64) and, when rows is not NULL, their rows (u64,
 * device). rdx_dist_bench_lookups writes lookups first .. first + m - 1 of those drawn from seed
 * over the n_total keys (every one a hit) into queries (device); rdx_dist_bench_check sets *wrong
 * to the number of answers (device u64, one per lookup) that are not the row of their key.
 * RDX_ERR_UNSUPPORTED on a CPU context, RDX_ERR_NO_BACKEND without CUDA. */
rdx_status rdx_dist_bench_keys(rdx_context *ctx, rdx_dtype dtype, uint64_t seed, uint64_t first, int64_t n,
                               void *keys, uint64_t row_base, uint64_t *rows);
rdx_status rdx_dist_bench_lookups(rdx_context *ctx, rdx_dtype dtype, uint64_t seed, int64_t n_total, uint64_t first,
                                  int64_t m, void *queries);
rdx_status rdx_dist_bench_check(rdx_context *ctx, uint64_t seed, int64_t n_total, uint64_t first, int64_t m,
                                const uint64_t *answers, uint64_t row_base, int64_t *wrong);

/* ---- data generators (io: gen.c, gen_points.c) ---- */
/* Key sets. */
typedef enum rdx_key_dist {
  RDX_DIST_DENSE = 1,   /* 0 .. n-1 */
  RDX_DIST_SPARSE = 2,  /* cgRX's uniformity u: 0 .. d-1 dense (d = (1-u) n) plus u n distinct keys
                           uniform in [d, 2^w - 1] */
  RDX_DIST_UNIFORM = 3  /* n distinct keys uniform over the whole width (sparse with u = 100%) */
} rdx_key_dist;

/* n distinct keys of dtype (u32/u64) in random order, malloc'd host array (free with
 * rdx_npy_free). uniformity in [0,1] is used by SPARSE only. Row ids are implied: a key's position
 * is its row id. The same seed gives the same keys whatever the thread count; no scratch beyond
 * the output (see rdx_gen_keys_bytes). */
rdx_status rdx_gen_keys(rdx_context *ctx, int64_t n, rdx_dtype dtype, rdx_key_dist dist,
                        double uniformity, uint64_t seed, rdx_array *out);

typedef enum rdx_miss_kind {
  RDX_MISS_INSIDE = 1,  /* absent keys between the smallest and largest key (where possible) */
  RDX_MISS_OUTSIDE = 2  /* keys above the largest (or below the smallest) key */
} rdx_miss_kind;

/* m lookups into keys: each a hit with probability hit_ratio, picking a key by Zipf(zipf) over
 * key positions (0 = uniform), else a miss of the given kind. */
rdx_status rdx_gen_lookups(rdx_context *ctx, rdx_array keys, int64_t m, double hit_ratio,
                           rdx_miss_kind miss, double zipf, uint64_t seed, rdx_array *out);

/* m ranges [lo, lo + width - 1] (clamped at the maximum) with lo a key of the set picked
 * uniformly; an (m, 2) array. */
rdx_status rdx_gen_ranges(rdx_context *ctx, rdx_array keys, int64_t m, uint64_t width,
                          uint64_t seed, rdx_array *out);

/* Point sets and spatial query batches. */
typedef enum rdx_point_dist {
  RDX_PDIST_UNIFORM = 1,    /* uniform in [0, 1)^2 */
  RDX_PDIST_CLUSTERED = 2,  /* 64 Gaussian clusters of varied spread in [0, 1)^2, 10% background */
  RDX_PDIST_TAXI = 3        /* taxi-pickup-like: Zipf-weighted hot spots in an NYC-sized box in feet
                               (EPSG:2263-like), street lines, exact duplicates at taxi stands */
} rdx_point_dist;

/* n points as an (n, 2) f32 or f64 host array (malloc'd; free with rdx_npy_free), reproducible
 * from the seed whatever the thread count. */
rdx_status rdx_gen_points(rdx_context *ctx, int64_t n, rdx_point_dist dist, rdx_dtype dtype, uint64_t seed,
                          rdx_array *out);

/* The box a distribution's points lie in: xmin, ymin, xmax, ymax. */
void rdx_gen_points_box(rdx_point_dist dist, double box[4]);

/* m queries over a host (n, 2) point array, in its dtype. type 0 match (m, 2): half existing
 * points, half anywhere in their box; 1 window (m, 4): squares of side `size` around existing
 * points (80%) or anywhere; 2 within (m, 3): circles of radius `size`, centred likewise; 3 kNN
 * (m, 2): near existing points (80%) or anywhere. */
rdx_status rdx_gen_point_queries(rdx_context *ctx, rdx_array points, int type, int64_t m, double size, uint64_t seed,
                                 rdx_array *out);

/* Polygon layers (gen_polygons.c), one ring per feature. */
typedef enum rdx_polygon_kind {
  RDX_PGEN_GRID = 1,   /* a planar subdivision: quads of a lattice whose points are moved by up to 0.2
                          (no edge axis-aligned, neighbours share edges exactly); 4 vertices each */
  RDX_PGEN_RANDOM = 2  /* simple star-shaped polygons, about one per unit area, overlapping freely */
} rdx_polygon_kind;
#define RDX_PGEN_MAX_VERTICES 1024
/* n features as rdx_polygons_create's CSR, each array malloc'd (free each with rdx_npy_free):
 * feature_offsets and ring_offsets u64 (n + 1), coords (n * vertices, 2) f64, the same bits for the
 * same seed whatever the machine or thread count. vertices is 4 for the grid, 3..1024 for random
 * polygons; n * vertices at most 2^32 - 2 (what a layer holds). On failure the arrays are empty. */
rdx_status rdx_gen_polygons(rdx_context *ctx, rdx_polygon_kind kind, int64_t n, int vertices, uint64_t seed,
                            rdx_array *feature_offsets, rdx_array *ring_offsets, rdx_array *coords);
rdx_status rdx_gen_polygons_bytes(rdx_context *ctx, rdx_polygon_kind kind, int64_t n, int vertices, size_t *bytes);

/* Memory: what a generator needs, known before it runs.
 *
 * Each rdx_gen_*_bytes sets *bytes to the most host bytes the generator holds at once for that
 * request (its malloc'd output plus its scratch; the inputs the caller holds are not counted),
 * computed without allocating, so a caller can refuse a request that cannot fit before running
 * it. They refuse what the generator refuses for its sizes, with the same status and sentence:
 * a negative count, or one whose bytes do not fit in size_t (RDX_ERR_INVALID_ARGUMENT, the
 * sentence naming the count and the byte count). They read only counts and dtypes, so a caller
 * can ask from a .npy header before reading the data, and need no context: with ctx NULL they
 * return the status alone. */
rdx_status rdx_gen_keys_bytes(rdx_context *ctx, int64_t n, rdx_dtype dtype, size_t *bytes);
/* Inside misses need a sorted copy of the keys (n_keys elements of dtype) and a guide table of
 * at most n_keys / 64 + 2 entries of 8 bytes; it is counted whenever a miss may be drawn from a
 * non-empty key set (m > 0, hit_ratio < 1), since misses outside fall back to inside ones when
 * the keys reach both ends of the width. */
rdx_status rdx_gen_lookups_bytes(rdx_context *ctx, int64_t n_keys, rdx_dtype dtype, int64_t m, double hit_ratio,
                                 rdx_miss_kind miss, size_t *bytes);
rdx_status rdx_gen_ranges_bytes(rdx_context *ctx, rdx_dtype dtype, int64_t m, size_t *bytes);
rdx_status rdx_gen_points_bytes(rdx_context *ctx, int64_t n, rdx_dtype dtype, size_t *bytes);
rdx_status rdx_gen_point_queries_bytes(rdx_context *ctx, rdx_dtype dtype, int type, int64_t m, size_t *bytes);

/* ---- MPI for the command line (dist) ---- */
/* The launcher's world (MPI_COMM_WORLD, MPI initialised here when the caller has not) as a
 * communicator over ctx; RDX_ERR_NO_BACKEND without MPI. rdx_dist_world_end destroys it and
 * finalises MPI if this began it. */
rdx_status rdx_dist_world_begin(rdx_context *ctx, rdx_comm **out);
void rdx_dist_world_end(rdx_comm *comm);
/* The transport under a communicator, for the tests and logs that show which exchange ran:
 * "local" (rdx_comm_create_local: host memory, and GPUs reading each other's memory), "mpi" (MPI;
 * device data staged through the host) or "mpi+nccl" (MPI, with NCCL for device data: every
 * rank's context a GPU's on a GPU of its own, in a build with NCCL); NULL for a non-communicator.
 * The same on every rank of a group. */
const char *rdx_dist_comm_transport(const rdx_comm *comm);
/* Collective: every rank's count items of `item` bytes, in rank order, into *all on rank 0
 * (malloc'd, *total items; free with free()); other ranks get NULL and 0. A failure on any rank
 * fails the call on every rank (rdx_comm_agree). fn names the caller in messages. */
rdx_status rdx_dist_gather_root(rdx_comm *comm, const char *fn, const void *mine, int64_t count, size_t item,
                                void **all, int64_t *total);

/* ---- .npy shares (io) ---- */
/* The part-th of n_parts near-equal shares of a .npy file's rows, in order (the first total %
 * n_parts shares hold one row more), read without the other rows: what each rank of `mpirun
 * raydex ...` reads. The header is checked as rdx_npy_read checks it, against the whole file.
 * *first_row and *total_rows (either may be NULL) say which rows came. Free with rdx_npy_free. */
rdx_status rdx_npy_read_share(rdx_context *ctx, const char *path, int part, int n_parts, rdx_array *out, int *ndim,
                              int64_t *first_row, int64_t *total_rows);

/* ---- polygon layers (io) ---- */
/* GDAL's release ("3.6.2") in a build with GDAL (rdx_info.have_gdal), else NULL. */
const char *rdx_gdal_version(void);
/* rdx_polygons_load, except that a ring with fewer than 3 distinct vertices (a quantized map's
 * collapsed island: North Korea's first part in world-atlas's countries-110m) is dropped instead
 * of refused, for `raydex convert --drop-degenerate`. *n_dropped (may be NULL) gets how many, and
 * first (cap bytes, may be NULL with cap 0) names the first ("feature 95 ring 0, 1 distinct
 * vertices"). Every other check stays. */
rdx_status rdx_polygons_load_dropping(rdx_context *ctx, const char *path, const char *layer, rdx_polygons **out,
                                      int64_t *n_dropped, char *first, size_t cap);

/* ---- polygon joins (join: bench.c), for `raydex bench join` ---- */
/* A layer's kept vertices, f64 x, y interleaved, in host memory owned by the layer; *n gets their
 * number. */
const double *rdx_polygons_host_xy(const rdx_polygons *p, int64_t *n);
/* A layer's host CSR as stored (join.h): feature f's rings are [feat_off[f], feat_off[f + 1]),
 * ring r's vertices [ring_off[r], ring_off[r + 1]) of xy (f64 x, y interleaved; no closing
 * repeat; shells counter-clockwise, holes clockwise). Owned by the layer, valid until it is
 * destroyed; for bench/geos_join.c, which builds GEOS geometries of the same rings. */
typedef struct rdx_polygons_host_csr {
  int64_t n_features, n_rings, n_vertices;
  const uint64_t *feat_off;  /* n_features + 1 */
  const uint64_t *ring_off;  /* n_rings + 1 */
  const double *xy;          /* 2 * n_vertices */
} rdx_polygons_host_csr;
void rdx_polygons_host_csr_of(const rdx_polygons *p, rdx_polygons_host_csr *out);
/* What the layer's join index is (zeros when none is built). */
typedef struct rdx_join_index_stats {
  int64_t n_groups;          /* primitives of the scene: groups of consecutive edges */
  int64_t bytes;             /* the index's memory */
  double group_ms;           /* the last build's grouping and boxes */
  double build_ms;           /* the last build, all of it */
} rdx_join_index_stats;
void rdx_polygons_index_stats(const rdx_polygons *p, rdx_join_index_stats *out);
/* What one LSI did, for benchmarks and tests (rdx_jn_lsi_run, join_lsi.c). Times in milliseconds of
 * the host's clock, each stage waited for on GPU contexts. */
typedef struct rdx_jn_lsi_stats {
  int64_t s_edges;           /* edges of S */
  int64_t rays;              /* S edges cast as one ray over the whole edge */
  int64_t clipped;           /* S edges cast as a ray over their piece in R's box */
  int64_t brute;             /* S edges tested against every R edge (lsi_hd.h: the ray's check
                                failed); 0 for maps in float32's normal range */
  int64_t candidates;        /* (R edge, S edge) pairs decided exactly */
  int64_t edge_pairs;        /* intersecting edge pairs */
  int64_t n_pairs, n_points; /* the result's rows */
  int64_t groups;            /* primitives of the index used (R's groups) */
  int temp_index;            /* 1 when R had no index and the join built one */
  double index_ms;           /* that temporary index (0 when R's own was used) */
  double count_ms;           /* the counting pass over S (traversal and exact tests) */
  double fill_ms;            /* the scan of the counts and the filling pass */
  double pairs_ms;           /* edge pairs to sorted unique feature pairs */
  double points_ms;          /* intersection points, sorted and unique (0 without want_points) */
  double total_ms;           /* the whole call */
} rdx_jn_lsi_stats;
/* rdx_join_lsi with the statistics of the run in *stats (may be NULL): the internal entry of
 * benchmarks. Same arguments, statuses and guarantees as rdx_join_lsi. */
rdx_status rdx_jn_lsi_run(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s, const rdx_join_options *opts,
                          int want_points, rdx_join_lsi_result **out, rdx_jn_lsi_stats *stats);
/* The stages of a polygon join, in order (rdx_join_polygons; join_polygons.c names them):
 *   INDEX temporary join indexes of layers that have none; PAIRS the edge pairs (LSI); CLASSIFY
 *   the pairs as crossings and vertex events; GROUPS the vertex events grouped per (edge, feature,
 *   point); PIP the side PIP of every edge's start (INTERSECTS: each ring's first vertex);
 *   MERGE the records ORed per (edge, feature); SELECT the predicate's pairs; AREAS the areas;
 *   RESULT the result made (and copied to the host). The CPU classifies and groups in one stage. */
typedef enum rdx_jn_stage {
  RDX_JN_ST_INDEX, RDX_JN_ST_PAIRS, RDX_JN_ST_CLASSIFY, RDX_JN_ST_GROUPS, RDX_JN_ST_PIP, RDX_JN_ST_MERGE,
  RDX_JN_ST_SELECT, RDX_JN_ST_AREAS, RDX_JN_ST_RESULT, RDX_JN_N_STAGES
} rdx_jn_stage;
extern const char *const rdx_jn_stage_names[RDX_JN_N_STAGES];
/* What one polygon join did (rdx_jn_polygons_run). Times in milliseconds of the host's clock from
 * the start of a stage to the start of the next, each stage waited for on GPU contexts. */
typedef struct rdx_jn_polygons_stats {
  double ms[RDX_JN_N_STAGES];
  double total_ms;           /* the whole call */
  int64_t edge_pairs;        /* intersecting edge pairs */
} rdx_jn_polygons_stats;
/* rdx_join_polygons with the statistics of the run in *stats (may be NULL): the internal entry of
 * benchmarks. Same arguments, statuses and guarantees as rdx_join_polygons. */
rdx_status rdx_jn_polygons_run(rdx_context *ctx, const rdx_polygons *r, const rdx_polygons *s,
                               rdx_join_predicate predicate, const rdx_join_options *opts, int want_areas,
                               rdx_join_pairs_result **out, rdx_jn_polygons_stats *stats);

/* ---- point indexes (spatial) ---- */
/* The limits of rdx_points_options.max_depth (quadtree, k-d tree) and rdx_points_query.k that
 * raydex.h states, which the program checks its options against. */
#define RDX_SP_MAX_QT_DEPTH 31
#define RDX_SP_MAX_KD_DEPTH 56
#define RDX_SP_MAX_K 1024

/* What the last build or update did, for benchmarks and tests (rdx_sp_stats_of). */
typedef struct rdx_sp_stats {
  double phase_ms[4];        /* build: keys+sort, phase 1, phase 2, point gather (quadtree);
                                update: up to the host's read of the plan, from there to the first
                                write, the writes, 0 */
  int64_t moved, in_place, left_leaf, erased, inserted; /* last update; in_place and left_leaf
                                                           -1 where the engine does not track them */
  int64_t splits, merges, relocated, new_leaves;
  int64_t reused_pages;      /* last update: pages of earlier ones a paged GPU quadtree reused */
  int rebuilt;               /* last update: 1 if it rebuilt the index (update.c, rdx_sp_rebuilds) */
  int64_t relayouts, growths; /* since the build: relayouts, and growths of a paged pool */
} rdx_sp_stats;

/* A copy of pts's figures. */
rdx_sp_stats rdx_sp_stats_of(const rdx_points *pts);
/* Copy the live points of an index to the host as (x, y, id) triples of doubles/ids, in pool
 * order of the leaves (tests and benchmarks). Arrays of rdx_points_count(pts) entries,
 * caller-owned. */
rdx_status rdx_sp_export_points(rdx_context *ctx, const rdx_points *pts, double *x, double *y, uint64_t *id);
/* The nodes of an index in host memory, for checks: arrays of n_nodes entries in the index's
 * layout (spatial.h: BFS order, a leaf's points at pool slots [fpos, fpos + len)), owned by the
 * index and valid until it next changes or is destroyed. */
typedef struct rdx_sp_tree {
  int64_t n_nodes;
  const uint64_t *key;       /* quadtree: Morton code at the node's level; k-d: path bits */
  const int64_t *fpos, *len, *count;
  const uint8_t *level, *leaf;
} rdx_sp_tree;
rdx_status rdx_sp_tree_of(rdx_context *ctx, const rdx_points *pts, rdx_sp_tree *out);

/* ---- key indexes (keys) ---- */
/* Whether indexes of this kind answer range queries (the hash index does not). */
int rdx_keys_answers_ranges(rdx_kind kind);

#ifdef __cplusplus
}
#endif

/* ---- the brute-force oracles (tools/oracle/): the raydex_oracle library, which the program and
 * the tests link and which defines RDX_HAVE_ORACLE for them; the library itself never sees them ---- */
#ifdef RDX_HAVE_ORACLE
#include "keys_oracle.h"
#include "points_oracle.h"
#include "polygons_oracle.h"
#endif

#endif /* RDX_BENCH_API_H */
