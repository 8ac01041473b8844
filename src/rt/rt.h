/*
 * rt.h: the ray-tracing engine's internal API (DESIGN.md §4): scenes of triangles or of AABBs
 * with a custom intersection, a BVH over them, and batched traversal in first-hit, closest-hit
 * and all-hits modes, on three backends:
 *   soft-CPU   raydex's LBVH (bvh.c), by default collapsed into a BVH4 (bvh4.c;
 *              rdx_bvh_options.width = 2 or rdx_rt_force_bvh_width keeps the binary tree), and
 *              the stack traversals of rt_hd.h, on the thread pool;
 *   soft-CUDA  the same tree built on the GPU (bvh.cu) and the same traversal in kernels;
 *   OptiX      a compacted GAS (src/rt/optix/), with programs that call the same RDX_HD logic;
 *              rt's own programs are rdx_rt_trace's, each user module's live in that module and
 *              run through rdx_optix_launch (rt includes nothing from its users).
 * A scene is built for the context's backend: OPTIX contexts get a GAS, CUDA contexts a device
 * BVH, CPU contexts a host BVH. Algorithms (src/keys/rx*, cgrx*) instantiate the traversal of
 * rt_hd.h with their own hit programs; rdx_rt_trace is the generic entry with the three modes.
 */
#ifndef RDX_RT_H
#define RDX_RT_H

#include "rt/rt_hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A soft BVH in host (CPU backend) or device (CUDA backend) memory, all through the account. */
typedef struct rdx_bvh {
  int kind;                 /* rdx_rt_prim_kind */
  int64_t n_input;          /* primitives given, active or not */
  int64_t n_prims;          /* active primitives in the tree */
  int width;                /* 2: binary nodes; 4: BVH4 nodes (the binary ones freed) */
  int64_t n_nodes;          /* binary nodes (0 when n_prims == 0 or width 4) */
  rdx_bvh_node *nodes;      /* n_nodes, root first */
  int64_t n_nodes4;         /* BVH4 nodes (0 when n_prims == 0 or width 2) */
  rdx_bvh4_node *nodes4;    /* n_nodes4, root first */
  float *prims;             /* n_prims primitives in leaf order */
  uint32_t *ids;            /* n_prims input indices in leaf order */
  int coincident;           /* 1 when two active primitives have the same box (conservative:
                               also 1 when a long run of equal codes was not checked) */
  float lo[3], hi[3];       /* box of all active primitives (+inf/-inf when empty) */
} rdx_bvh;

/* Build options. */
typedef struct rdx_bvh_options {
  const uint64_t *codes;    /* optional sort codes, one per input primitive in the build's
                               memory: used instead of Morton codes (must be spatially coherent) */
  int width;                /* 2 (binary) or 4 (BVH4); 0: the context's forced width
                               (rdx_rt_force_bvh_width), else 4. Both answer the same */
} rdx_bvh_options;

/* Build a BVH over n input primitives (9 floats per triangle, 6 per box) in the backend's memory.
 * The input is only read; the tree keeps its own leaf-ordered copy. */
rdx_status rdx_bvh_build_cpu(rdx_context *ctx, int kind, const float *prims, int64_t n,
                             const rdx_bvh_options *opts, rdx_bvh *out);
rdx_status rdx_bvh_build_cuda(rdx_context *ctx, int kind, const float *prims, int64_t n,
                              const rdx_bvh_options *opts, rdx_bvh *out);
void rdx_bvh_free(rdx_context *ctx, rdx_bvh *b);
/* The tree width (2 or 4) a build with these options makes; RDX_ERR_INVALID_ARGUMENT for any
 * other width. */
rdx_status rdx_bvh_width(rdx_context *ctx, const rdx_bvh_options *opts, int *width);
/* Step 7 (bvh_hd.h): replace a finished binary tree by its BVH4, in the same memory. On failure
 * the tree is left as it was. */
rdx_status rdx_bvh_collapse_cpu(rdx_context *ctx, rdx_bvh *b);
rdx_status rdx_bvh_collapse_cuda(rdx_context *ctx, rdx_bvh *b);
/* The CPU build's compactions (kept binary nodes, BVH4 nodes): flags[0..n) of 0s and 1s become
 * their exclusive prefix sums, on the thread pool, and *total how many were set. Fails only when
 * host memory for the per-chunk counts runs out (flags then untouched). */
rdx_status rdx_bvh_flags_to_offsets(rdx_context *ctx, uint32_t *flags, int64_t n, int64_t *total);
/* Step 2's frame, shared by both builders: per axis, the centroid box cb (lo x,y,z, hi x,y,z)
 * onto [0, 2^21). */
void rdx_bvh_code_frame(const float *cb, float *lo, float *scale);
/* Bytes the tree holds. */
int64_t rdx_bvh_bytes(const rdx_bvh *b);

static inline rdx_bvh_view rdx_bvh_view_of(const rdx_bvh *b) {
  rdx_bvh_view v;
  v.nodes = b->nodes;
  v.nodes4 = b->nodes4;
  v.prims = b->prims;
  v.ids = b->ids;
  v.n_prims = b->n_prims;
  v.kind = b->kind;
  return v;
}

/* ---- scenes: a BVH or an OptiX GAS, whichever the context's backend uses ---- */

typedef struct rdx_optix_gas rdx_optix_gas; /* src/rt/optix */

typedef struct rdx_rt_scene {
  int kind;                 /* rdx_rt_prim_kind */
  rdx_backend backend;      /* CPU, CUDA or OPTIX */
  int64_t n_input;
  rdx_bvh bvh;              /* CPU and CUDA backends */
  rdx_optix_gas *gas;       /* OPTIX backend */
} rdx_rt_scene;

/* Build a scene over n primitives in the backend's memory (host for cpu, device otherwise).
 * Inactive primitives (a NaN coordinate) are skipped by every backend. */
rdx_status rdx_rt_scene_build(rdx_context *ctx, int kind, const float *prims, int64_t n,
                              const rdx_bvh_options *opts, rdx_rt_scene *out);
void rdx_rt_scene_free(rdx_context *ctx, rdx_rt_scene *s);
int64_t rdx_rt_scene_bytes(const rdx_rt_scene *s);

/* Generic batched traversal modes. */
typedef enum rdx_rt_mode {
  RDX_RT_FIRST_HIT = 1,   /* any one hit; the ray ends there */
  RDX_RT_CLOSEST_HIT = 2, /* the hit with the smallest t (t, facing and hit-or-not are exact on every
                             soft layout; when several primitives are hit at exactly that t, any
                             one of them, which may differ between layouts and backends) */
  RDX_RT_ALL_HITS = 3     /* every hit */
} rdx_rt_mode;

/* Trace n rays (backend memory). FIRST/CLOSEST: hits[i] gets the hit or prim = RDX_RT_NO_HIT.
 * ALL_HITS: counts[i] = the number of hits, and when ids is not NULL (with offsets, the exclusive
 * prefix sum of counts, n + 1 entries) ids[offsets[i] ..] receives the hit primitives in
 * ascending order. AABB scenes use the generic intersection (the ray's entry into the box). */
rdx_status rdx_rt_trace(rdx_context *ctx, const rdx_rt_scene *s, const rdx_ray *rays, int64_t n,
                        rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts,
                        const uint64_t *offsets, uint32_t *ids);
rdx_status rdx_rt_trace_cpu(rdx_context *ctx, const rdx_bvh *b, const rdx_ray *rays, int64_t n,
                            rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts,
                            const uint64_t *offsets, uint32_t *ids);
rdx_status rdx_rt_trace_cuda(rdx_context *ctx, const rdx_bvh *b, const rdx_ray *rays, int64_t n,
                             rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts,
                             const uint64_t *offsets, uint32_t *ids);
/* Sort each ray's all-hits ids ascending (device memory; CUDA builds only). */
rdx_status rdx_rt_sort_ids_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint32_t *ids);

/* ---- OptiX (src/rt/optix/; stubs in optix_stub.c when OptiX is not built) ---- */

int rdx_optix_built(void);
/* 1 when optixInit succeeds and a GPU is present (cached). */
int rdx_optix_usable(void);
/* Create / destroy the context's OptiX state (device context; pipelines made on first use). */
rdx_status rdx_optix_context_init(rdx_context *ctx);
void rdx_optix_context_fini(rdx_context *ctx);
/* Build a compacted GAS over n primitives in device memory. */
rdx_status rdx_optix_gas_build(rdx_context *ctx, int kind, const float *prims, int64_t n,
                               rdx_optix_gas **out);
void rdx_optix_gas_free(rdx_context *ctx, rdx_optix_gas *g);
int64_t rdx_optix_gas_bytes(const rdx_optix_gas *g);
/* The generic trace on a GAS (same contract as rdx_rt_trace). */
rdx_status rdx_optix_trace(rdx_context *ctx, const rdx_optix_gas *g, const rdx_ray *rays, int64_t n,
                           rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts,
                           const uint64_t *offsets, uint32_t *ids);

/* A module's OptiX programs, one pipeline (DESIGN.md §4: each module's programs live in that
 * module; rt runs them). The module compiles its programs.cu to OptiX-IR and embeds it
 * (cmake/optix.cmake's rdx_optix_embed); rt makes one OptiX module per IR and one pipeline per
 * program set, on first use, once per context. The IR must define __miss__rdx and
 * __intersection__box (RDX_OPTIX_SHARED_PROGRAMS in rt/optix/device.cuh), use at most 7 payload
 * and 2 attribute values, and read its launch parameters from a __constant__ named `params` whose
 * struct begins with rdx_optix_base (rt/optix/launch.h). The object must outlive the context's
 * use of it (a static const): pipelines are found by its address. */
typedef struct rdx_optix_program {
  const char *name;            /* for messages, e.g. "rx" */
  const unsigned char *ir;     /* the embedded OptiX-IR */
  size_t ir_bytes;
  const char *raygen;          /* entry names; anyhit and closesthit may be NULL */
  const char *anyhit;
  const char *closesthit;
} rdx_optix_program;
/* Launch prog over queries [0, n) of the batch on the scene g, on the context's stream, and wait
 * for it. params (bytes of it, at most 512) is the program's parameter struct: rt sets its
 * rdx_optix_base (GAS handle, primitive map, boxes, n, and the offset of each launch of up to
 * 2^30 queries) and copies it to the device; the rest is the caller's. RDX_ERR_OPTIX when a
 * pipeline cannot be made or a launch fails, RDX_ERR_CUDA for the copies, RDX_ERR_INTERNAL for a
 * parameter size out of range or more program sets than a context holds (8, from 4 IR blobs). */
rdx_status rdx_optix_launch(rdx_context *ctx, const rdx_optix_program *prog, const rdx_optix_gas *g,
                            void *params, size_t bytes, int64_t n);

#ifdef __cplusplus
}
#endif
#endif /* RDX_RT_H */
