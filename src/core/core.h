/*
 * core.h: raydex internals shared by every module: the context, failure messages, the memory
 * account, the thread pool and the CUDA glue. Nothing here is public.
 *
 * Invariant: every allocation raydex makes on behalf of a context goes through rdx_mem_alloc, so
 * the context's in_use/peak counters are exact and its memory limit and fault injection apply to
 * every buffer (SQLite's malloc accounting; Lua's debug_realloc for fault injection).
 */
#ifndef RDX_CORE_H
#define RDX_CORE_H

#include "raydex.h"
#include "bench_api.h" /* what the tools use too: sizes, rdx_escape, rdx_now_ms, forced paths */

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RDX_HD marks functions compiled for host and device; plain C compilers see nothing. */
#if defined(__CUDACC__)
#define RDX_HD __host__ __device__ __forceinline__
#else
#define RDX_HD static inline
#endif
/* The same, for a large function called from several places that should exist once. */
#if defined(__CUDACC__)
#define RDX_HD_NOINLINE static __host__ __device__ __noinline__
#else
#define RDX_HD_NOINLINE static __attribute__((unused))
#endif

#define RDX_CONTEXT_MAGIC 0x52445843u /* "RDXC" */
#define RDX_INDEX_MAGIC 0x52445849u   /* "RDXI" */

typedef struct rdx_pool rdx_pool;

/* Freed host blocks of at least RDX_HOST_CACHE_MIN bytes are kept (up to this many, and
 * RDX_HOST_CACHE_LIMIT bytes in all, or a sixteenth of the machine's memory where that is less)
 * for the context's next allocations: see memory.c. */
#define RDX_HOST_CACHE_BLOCKS 16
#define RDX_HOST_CACHE_MIN ((size_t)256 << 10)
#define RDX_HOST_CACHE_LIMIT ((size_t)1 << 30)

typedef struct rdx_allocation {
  void *ptr;            /* as returned to the caller */
  size_t bytes;         /* requested size */
  size_t cap;           /* host: the block's real size (it may come from the host cache) */
  rdx_location where;   /* RDX_HOST or RDX_DEVICE (pinned counts as host) */
} rdx_allocation;

struct rdx_context {
  uint32_t magic;               /* RDX_CONTEXT_MAGIC while alive */
  rdx_backend backend;          /* never AUTO once created */
  int device;                   /* CUDA ordinal (GPU backends) */
  int n_threads;                /* CPU threads in the pool, >= 1 */
  rdx_pool *pool;               /* owned; NULL until first parallel call */
  void *stream;                 /* cudaStream_t, owned; NULL on CPU */
  void *side;                   /* cuda.cu's side stream and events for rdx_cuda_fork, made
                                   with the context (or, if that failed, by the first fork) */
  int pooled;                   /* device memory from the stream-ordered pool (cuda.cu) */
  double trace_ms;              /* time of the last rdx_trace mark */
  struct {                      /* freed large host blocks kept for reuse (memory.c) */
    void *ptr;
    size_t cap;
  } host_cache[RDX_HOST_CACHE_BLOCKS];
  int n_host_cache;
  size_t host_cache_bytes;
  void *optix;                  /* OptiX device context and pipelines, owned; NULL unless OPTIX */
  void *ring;                   /* the staging ring (staging.cu): pinned host memory held through the
                                   account from creation; NULL on cpu or where it could not be had */
  void *ring_state;             /* staging.cu's slots and events; NULL without a ring */
  int64_t memory_limit;         /* bytes, 0 = none */
  int64_t in_use;               /* bytes currently allocated through the account */
  int64_t peak;                 /* most bytes ever in use */
  int64_t fail_countdown;       /* fault injection: the Nth allocation from now fails; 0 = off */
  rdx_allocation *live;         /* table of live allocations (few: tens) */
  int n_live, cap_live;
  int n_live_indexes;           /* indexes made in this context and not destroyed */
  void (*log_fn)(int, const char *, void *);
  void *log_user;
  int stream_priority;          /* rdx_context_options.stream_priority (GPU contexts) */
  double dist_exchange_ms;      /* the last sharded device query's all-to-alls (dist/gpu.cu) */
  double dist_shard_ms;         /* the last sharded device point query's own shard's answer
                                   (dist/points_gpu.cu) */
  struct {                      /* paths forced by tests and benchmarks, never by the environment;
                                   0 = the library's choice. Internal: set through
                                   rdx_rt_force_bvh_width (rt.h), rdx_csr_force_sort and
                                   rdx_join_force_naive (bench_api.h) */
    int bvh_width;              /* soft BVH width, 2 or 4 (rt/bvh.c) */
    int csr_sort;               /* RDX_CSR_SORT_* (csr_sort.cu) */
    int join_naive;             /* 1: join indexes get naive boxes (join/index.c) */
    int join_input_order;       /* 1: GPU PIP takes the points in input order (join/pip.cu) */
    int join_one_stream;        /* 1: polygon joins locate both directions on one stream (join/overlay.cu) */
    int staging;                /* RDX_STAGING_*: host copies through the ring or not (staging.cu) */
    int dist_host;              /* 1: sharded key queries stage through the host (dist/keys.c) */
    int64_t dist_message_items; /* > 0: MPI all-to-alls send at most this many items a message, as
                                   past 2^31 - 1 (dist/mpi.c) */
  } force;
  char message[1024];           /* last failure sentence */
};

/* Set the context's message (printf-style, prefixed by nothing) and return code. */
rdx_status rdx_fail(rdx_context *ctx, rdx_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void rdx_clear_message(rdx_context *ctx);

/* Validate a handle: NULL is RDX_ERR_INVALID_ARGUMENT, a pointer without the magic word (garbage,
 * another object) RDX_ERR_MISUSE. A destroyed handle's memory is freed, so it cannot be told
 * apart: using one is undefined, as in SQLite and cuBLAS. */
rdx_status rdx_check_context(rdx_context *ctx);

/* Check the RAYDEX_* environment variables the library reads (rdx_context_create's first step):
 * an unparsable or out-of-range value is RDX_ERR_INVALID_ARGUMENT naming the variable and the
 * value, so a typo is never silently ignored. The reading sites may then trust what they read. */
rdx_status rdx_env_check(rdx_context *ctx);

#define RDX_CHECK(expr)                                                                        \
  do {                                                                                         \
    rdx_status rdx_check_st_ = (expr);                                                         \
    if (rdx_check_st_ != RDX_OK) return rdx_check_st_;                                         \
  } while (0)
#define RDX_CHECK_GOTO(expr, st, label)                                                        \
  do {                                                                                         \
    (st) = (expr);                                                                             \
    if ((st) != RDX_OK) goto label;                                                            \
  } while (0)

/* ---- memory account (the overflow-checked size helpers: bench_api.h) ---- */
/* Allocate bytes (0 allowed: returns a valid unique pointer) in where (HOST or DEVICE). `what`
 * names the caller and buffer for the out-of-memory sentence. */
rdx_status rdx_mem_alloc(rdx_context *ctx, const char *what, void **ptr, size_t bytes,
                         rdx_location where);
void rdx_mem_free(rdx_context *ctx, void *ptr);
/* Return the host cache's blocks to the system (context destruction). */
void rdx_mem_trim(rdx_context *ctx);
/* Free memory the caller has held (rdx_free, result frees): first waits for the device, as
 * cudaFree does, since the caller may have used it on its own streams. */
void rdx_mem_release_to_caller(rdx_context *ctx, void *ptr);
/* Fault injection for tests: the n-th allocation from now fails (n >= 1); 0 turns it off. */
void rdx_mem_fail_after(rdx_context *ctx, int64_t n);
/* Where the GPU backends keep data: RDX_DEVICE on cuda/optix, RDX_HOST on cpu. */
rdx_location rdx_compute_location(const rdx_context *ctx);
static inline int rdx_is_gpu(const rdx_context *ctx) {
  return ctx->backend == RDX_BACKEND_CUDA || ctx->backend == RDX_BACKEND_OPTIX;
}

/* ---- arrays ---- */
/* Check an input array: dtype, columns, pointer, location reachable by the context. `fn` and
 * `name` build the sentence, e.g. "rdx_index_build: keys.dtype ...". */
rdx_status rdx_array_check(rdx_context *ctx, const char *fn, const char *name, rdx_array a);
/* A view of `a` in the compute location: the same pointer if already there, else a copy made
 * through the account (free with rdx_array_release). For outputs, `copy_in` = 0 allocates only. */
typedef struct rdx_staged {
  void *data;          /* in the compute location */
  size_t bytes;
  int owned;           /* data was allocated here and must be freed */
} rdx_staged;
rdx_status rdx_array_stage(rdx_context *ctx, const char *what, rdx_array a, int copy_in,
                           rdx_staged *out);
/* Copy a staged output back into `a` (when it was a copy). */
rdx_status rdx_array_unstage(rdx_context *ctx, rdx_array a, const rdx_staged *s);
void rdx_array_release(rdx_context *ctx, rdx_staged *s);

/* ---- CPU radix sort (radix.c) ---- */
/* Sort n keys ascending, stably, moving the u32 payload along when vals is not NULL. The sort
 * ping-pongs between each array and its _tmp twin (n entries each): on return *keys (and *vals)
 * point at the sorted data and the _tmp pointers at the other buffers, swapped as needed. */
rdx_status rdx_radix_sort_u64(rdx_context *ctx, uint64_t **keys, uint64_t **keys_tmp, uint32_t **vals,
                              uint32_t **vals_tmp, int64_t n);

/* ---- results of the _alloc calls (result.c) ---- */
/* Count into n_queries counts, scan them, allocate the rows and fill, all in `where`; *out is
 * set only on success. count and fill get `arg` and arrays in `where`. */
rdx_status rdx_result_make(rdx_context *ctx, const char *fn, int64_t n_queries, rdx_location where,
                           rdx_status (*count)(void *arg, rdx_array counts),
                           rdx_status (*fill)(void *arg, rdx_array offsets, rdx_array rows), void *arg,
                           rdx_result **out);

/* ---- CSR results (csr.c; GPU halves in csr.cu, csr_sort.cu): what every module's lookups and
 * fills share. Arrays are in the compute location unless a `where` is given. ---- */
/* a must be 1-D u64 with `want` entries (any count when want < 0); `name` is its name in fn. */
rdx_status rdx_array_check_u64(rdx_context *ctx, const char *fn, const char *name, rdx_array a, int64_t want);
/* *v = p[i], wherever p lives. */
rdx_status rdx_read_u64(rdx_context *ctx, const uint64_t *p, rdx_location where, int64_t i, uint64_t *v);
/* A fill call's first checks, before anything is staged: offsets is 1-D u64 of n + 1 entries,
 * row_ids 1-D u64 with at least *total = offsets[n] entries, and offsets[0] == 0 when n == 0.
 * RDX_ERR_INVALID_ARGUMENT naming fn otherwise. */
rdx_status rdx_csr_fill_begin(rdx_context *ctx, const char *fn, int64_t n, rdx_array offsets, rdx_array row_ids,
                              uint64_t *total);
/* A fill's caller offsets (n + 1) against this batch's counts (n): offsets[0] == 0, never
 * descending, offsets[i + 1] - offsets[i] == counts[i]. Otherwise RDX_ERR_INVALID_ARGUMENT naming
 * fn and the first wrong query, its count given in `unit` ("rows", "ids"). */
rdx_status rdx_csr_check_offsets(rdx_context *ctx, const char *fn, const uint64_t *offsets, const uint64_t *counts,
                                 int64_t n, const char *unit);
/* Exclusive scan of n counts into n + 1 offsets, both in where; *total on the host. */
rdx_status rdx_csr_scan(rdx_context *ctx, const uint64_t *counts, int64_t n, rdx_location where, uint64_t *offsets,
                        uint64_t *total);
/* Sort each query's rows ascending (CSR segments: query q owns rows[offsets[q], offsets[q + 1])).
 * On failure the rows are as they were. */
rdx_status rdx_csr_sort(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows);
/* Set n u64 to all-zero or all-one bits (RDX_MISS). */
rdx_status rdx_fill_u64(rdx_context *ctx, uint64_t *p, int64_t n, int all_ones);
/* *first = the smallest i < n with p[i] == value, or -1; p in where. */
rdx_status rdx_find_u64(rdx_context *ctx, const uint64_t *p, int64_t n, rdx_location where, uint64_t value,
                        int64_t *first);
/* The GPU halves (stubs in nocuda.c). offsets_check: *first = the smallest i < n whose span is
 * wrong (descending, or not counts[i] long), or -1. */
rdx_status rdx_csr_scan_cuda(rdx_context *ctx, const uint64_t *counts, int64_t n, uint64_t *offsets, uint64_t *total);
rdx_status rdx_csr_sort_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint64_t *rows);
rdx_status rdx_fill_u64_cuda(rdx_context *ctx, uint64_t *p, int64_t n, int all_ones);
rdx_status rdx_find_u64_cuda(rdx_context *ctx, const uint64_t *p, int64_t n, uint64_t value, int64_t *first);
rdx_status rdx_offsets_check_cuda(rdx_context *ctx, const char *fn, const uint64_t *offsets, const uint64_t *counts,
                                  int64_t n, int64_t *first);

/* ---- thread pool ---- */
/* Run fn(arg, task, thread) for task in [0, n_tasks) on the context's threads; returns when all
 * are done. Tasks are taken dynamically. With one thread, runs inline. */
typedef void (*rdx_task_fn)(void *arg, int64_t task, int thread);
rdx_status rdx_parallel_for(rdx_context *ctx, int64_t n_tasks, rdx_task_fn fn, void *arg);
rdx_pool *rdx_pool_create(int n_threads);
void rdx_pool_destroy(rdx_pool *pool);
int rdx_default_threads(void);

/* ---- CUDA glue (src/core/cuda.cu); stubs answer RDX_ERR_NO_BACKEND when CUDA is not built ---- */
int rdx_cuda_device_count(void);
rdx_status rdx_cuda_context_init(rdx_context *ctx);
void rdx_cuda_context_fini(rdx_context *ctx);
rdx_status rdx_cuda_malloc(rdx_context *ctx, void **ptr, size_t bytes, int pinned);
void rdx_cuda_free(rdx_context *ctx, void *ptr, int pinned);
/* Wait for every stream of the context's device (what cudaFree would wait for). */
void rdx_cuda_device_sync(rdx_context *ctx);
/* Make the context's device the calling thread's current one (cudaSetDevice) when it is not:
 * kernels launch on the current device, and one thread may hold contexts of several devices, or
 * a rank thread of rdx_comm_create_local use a context made on another thread. */
void rdx_cuda_make_current(rdx_context *ctx);
/* Copies with the device on one side or both (staging.cu): through the staging ring when the
 * other side is pageable host memory; returns when the bytes are at dst. */
rdx_status rdx_cuda_memcpy(rdx_context *ctx, void *dst, const void *src, size_t bytes);
/* The staging ring of `bytes` (0: the default, 64 MiB), made once the GPU context works; without
 * the memory (the context's limit, the host's pinned memory) the context copies without it. */
void rdx_staging_init(rdx_context *ctx, size_t bytes);
void rdx_staging_fini(rdx_context *ctx);
/* A batch of n items whose answers are item for item (lookups, counts), from host memory to host
 * memory on a GPU context, answered in chunks through the staging ring so that the copies of one
 * chunk overlap the work on the next. work runs one chunk on the context's stream: `count` items
 * at in (in_item bytes each, device memory) to out (out_item bytes each); it may launch and need
 * not synchronise. rdx_staged_map_chunk is the items per chunk, 0 where the batch is not to be
 * pipelined (no ring, a slot smaller than an item, a batch of one chunk, copies forced direct);
 * call rdx_staged_map only where it is not 0. On failure out's contents are unspecified. */
typedef rdx_status (*rdx_chunk_fn)(void *arg, const void *in, void *out, int64_t count);
int64_t rdx_staged_map_chunk(const rdx_context *ctx, int64_t n, size_t in_item, size_t out_item);
rdx_status rdx_staged_map(rdx_context *ctx, const char *what, const void *in, size_t in_item, void *out,
                          size_t out_item, int64_t n, rdx_chunk_fn work, void *arg);
rdx_status rdx_cuda_sync(rdx_context *ctx, const char *what);
/* Independent work side by side: rdx_cuda_fork gives a second stream (a cudaStream_t) that starts
 * after everything enqueued on the context's stream so far; rdx_cuda_join makes the context's
 * stream wait for everything enqueued on that stream since. Join before returning from the call
 * that forked, on every path: its scratch is freed in the context's stream's order. The side
 * stream has the context's stream's priority. One fork at a time; without a side stream the fork
 * gives the context's own stream and the work runs in order. */
rdx_status rdx_cuda_fork(rdx_context *ctx, void **stream, const char *what);
rdx_status rdx_cuda_join(rdx_context *ctx, void *stream, const char *what);
/* rdx_cuda_switch(ctx, stream) with the fork's stream makes it the context's stream until
 * rdx_cuda_switch(ctx, NULL): code written for the context's stream (kernels, copies, waits,
 * stream-ordered allocations and frees) then runs on the side stream unchanged, beside what the
 * context's own stream gets. Switch back before the join. A fork that gave the context's own
 * stream switches nothing. rdx_cuda_switched: 1 while switched. */
void rdx_cuda_switch(rdx_context *ctx, void *stream);
int rdx_cuda_switched(const rdx_context *ctx);
/* 1 when ptr is device memory (or managed), 0 when host, from cudaPointerGetAttributes. */
int rdx_cuda_is_device_pointer(const void *ptr);
void rdx_cuda_info(rdx_info *info);

/* ---- OptiX glue (src/rt/optix/optix.cu, stubs in src/rt/optix_stub.c) ---- */
int rdx_optix_built(void);
int rdx_optix_usable(void);
rdx_status rdx_optix_context_init(rdx_context *ctx);
void rdx_optix_context_fini(rdx_context *ctx);

/* ---- time (rdx_now_ms: bench_api.h) ---- */
/* Profiling marks: with RAYDEX_TRACE set in the environment, waits for the context's stream and
 * logs the milliseconds since the previous mark and `what`; otherwise nothing. For finding where
 * a call's time goes on machines without a profiler. The lines go to the context's log_fn at
 * RDX_LOG_DEBUG, or to stderr when the context has no log_fn (rdx_trace_line). */
void rdx_trace(rdx_context *ctx, const char *what);
/* Whether RAYDEX_TRACE is set (read once), for traces that print more than a mark. */
int rdx_trace_on(void);
/* One trace line, "[raydex trace] " and text, to log_fn or stderr as rdx_trace says. */
void rdx_trace_line(rdx_context *ctx, const char *text);
/* RAYDEX_TRACE=events on a GPU context: a mark waits for nothing; it records a CUDA event on the
 * stream and the host's clock, and rdx_trace_flush (after the call's own wait) logs, per mark,
 * the GPU's time since the previous mark and how far ahead of the GPU the host enqueued it. A
 * mark the host was not ahead of is a stretch where the GPU waited for the host. Marks wait for
 * the next flush (256 at most). */
void rdx_trace_flush(rdx_context *ctx);
void rdx_cuda_trace_mark(rdx_context *ctx, const char *what);
void rdx_cuda_trace_flush(rdx_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* RDX_CORE_H */
