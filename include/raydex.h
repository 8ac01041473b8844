/*
 * raydex.h: the whole public C API of raydex, a GPU-resident index library.
 *
 * raydex answers batched point lookups, range scans, spatial queries and spatial joins over
 * key columns and point layers held in host or GPU memory. One context owns a backend (CPU
 * threads, CUDA, or OptiX for the ray-tracing kinds), a memory account and a message buffer.
 *
 * Conventions for every call in this header:
 *  - Every fallible call returns an rdx_status; none aborts or prints. On failure
 *    rdx_context_message(ctx) holds one sentence naming the function, the problem and the
 *    offending value.
 *  - A context and the objects made in it are used by one thread at a time; separate contexts are
 *    independent and may be used from separate threads. A call on a GPU context runs on the
 *    context's device: it makes that device the calling thread's current CUDA device
 *    (cudaSetDevice) when it is not, and leaves it so.
 *  - Calls are synchronous: they return with results in caller memory.
 *  - The caller owns every buffer it passes; raydex keeps no pointer to it after the call returns.
 *    raydex owns its scratch memory, which the context's memory account counts and limits.
 *  - Mutating calls are all-or-nothing: on any failure the object is exactly as it was. Queries
 *    never change their index; a failed query leaves its outputs' contents unspecified unless its
 *    doc says more.
 *  - Arrays cross the API as rdx_array (pointer, rows, columns, dtype, location) so host or device
 *    memory is handed over without copies the caller did not ask for.
 *  - Handles (contexts, indexes, point indexes) carry a magic word: a pointer that is not a handle
 *    of the expected type, or a handle of another context, is RDX_ERR_MISUSE; a NULL handle is
 *    RDX_ERR_INVALID_ARGUMENT. Every call that takes a context may return these two for it (a NULL
 *    context has no message to read), and every call on a GPU context may return RDX_ERR_CUDA
 *    when the CUDA runtime fails (the message gives CUDA's error); the lists below take these as
 *    read.
 *  - Destroying and freeing: rdx_context_destroy, rdx_index_destroy, rdx_points_destroy,
 *    rdx_result_free, rdx_free and rdx_npy_free return void, accept NULL (doing nothing) and
 *    never fail. Each frees the handle or memory: any later use of it is undefined behaviour, as
 *    in SQLite and cuBLAS (freed memory holds no magic word to check), and so is destroying a
 *    context before the objects made in it. A call takes the context only where the object does
 *    not know it: a result and rdx_malloc's memory belong to the memory account of the context
 *    that made them, which rdx_result_free and rdx_free hand back to (with a NULL or destroyed
 *    context they free nothing of it); indexes keep their context; rdx_npy_read's arrays are
 *    plain host memory that no context counts.
 *
 * ABI policy: within a major version, functions are only added and option structs only grow at
 * their end (each starts with its own size, so an old caller keeps working). Enum values and
 * status numbers are never reused.
 */
#ifndef RAYDEX_H
#define RAYDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDX_VERSION_MAJOR 0
#define RDX_VERSION_MINOR 1
#define RDX_VERSION_PATCH 0
#define RDX_VERSION_NUMBER (RDX_VERSION_MAJOR * 10000 + RDX_VERSION_MINOR * 100 + RDX_VERSION_PATCH)

#if defined(_WIN32)
#define RDX_API __declspec(dllexport)
#elif defined(__GNUC__)
#define RDX_API __attribute__((visibility("default")))
#else
#define RDX_API
#endif

#if defined(__cplusplus) && __cplusplus >= 201703L
#define RDX_NODISCARD [[nodiscard]]
#elif defined(__GNUC__)
#define RDX_NODISCARD __attribute__((warn_unused_result))
#else
#define RDX_NODISCARD
#endif

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* X(name, number, sentence). Numbers are stable and never reused. */
#define RDX_STATUS_MAP(X)                                                                      \
  X(OK, 0, "success")                                                                          \
  X(ERR_INVALID_ARGUMENT, 1, "invalid argument")                                               \
  X(ERR_UNSUPPORTED, 2, "operation not supported by this index kind or backend")               \
  X(ERR_HOST_OUT_OF_MEMORY, 3, "out of host memory")                                           \
  X(ERR_DEVICE_OUT_OF_MEMORY, 4, "out of device memory")                                       \
  X(ERR_NO_BACKEND, 5, "the requested backend is not built or has no device")                  \
  X(ERR_CUDA, 6, "CUDA runtime error")                                                         \
  X(ERR_OPTIX, 7, "OptiX error")                                                               \
  X(ERR_IO, 8, "file input or output failed")                                                  \
  X(ERR_PARSE, 9, "malformed input file")                                                      \
  X(ERR_MISUSE, 10, "misuse of a handle (not a handle, or one of another context)")            \
  X(ERR_INTERNAL, 11, "internal error")

typedef enum rdx_status {
#define RDX_STATUS_ENUM_(name, number, sentence) RDX_##name = number,
  RDX_STATUS_MAP(RDX_STATUS_ENUM_)
#undef RDX_STATUS_ENUM_
} rdx_status;

/* "RDX_ERR_PARSE" for RDX_ERR_PARSE; "RDX_UNKNOWN_STATUS" for numbers not in the map. Since 0.1. */
RDX_API const char *rdx_status_name(rdx_status status);
/* The sentence of the map above. Since 0.1. */
RDX_API const char *rdx_status_string(rdx_status status);

/* ------------------------------------------------------------------------------------------ */
/* Version and build information                                                              */
/* ------------------------------------------------------------------------------------------ */

/* RDX_VERSION_NUMBER of the library actually linked; compare with the header's. Since 0.1. */
RDX_API int rdx_version_number(void);
/* "0.1.0". Since 0.1. */
RDX_API const char *rdx_version_string(void);

/* ------------------------------------------------------------------------------------------ */
/* Enumerations. Each takes its own numeric range so that a swapped argument is rejected.      */
/* ------------------------------------------------------------------------------------------ */

typedef enum rdx_backend {
  RDX_BACKEND_AUTO = 0x200,  /* the fastest backend built and usable here */
  RDX_BACKEND_CPU = 0x201,   /* portable C11, a thread pool of RAYDEX_THREADS threads */
  RDX_BACKEND_CUDA = 0x202,  /* CUDA kernels; ray-tracing kinds use raydex's software BVH */
  RDX_BACKEND_OPTIX = 0x203  /* CUDA plus OptiX for the ray-tracing kinds */
} rdx_backend;

typedef enum rdx_dtype {
  RDX_U32 = 0x301,
  RDX_U64 = 0x302,
  RDX_I64 = 0x303,
  RDX_F32 = 0x304,
  RDX_F64 = 0x305
} rdx_dtype;

/* Where an array lives. The numbers are DLPack's device types, so tensors pass unchanged. */
typedef enum rdx_location {
  RDX_HOST = 1,        /* ordinary host memory */
  RDX_DEVICE = 2,      /* CUDA device memory of the context's device */
  RDX_HOST_PINNED = 3  /* page-locked host memory (cudaMallocHost) */
} rdx_location;

/* Key index kinds. A kind that cannot do an operation answers RDX_ERR_UNSUPPORTED. */
typedef enum rdx_kind {
  RDX_KIND_SCAN = 0x101,    /* full scan of the unsorted column: no build work, O(n) per query */
  RDX_KIND_SORTED = 0x102,  /* sorted (key, row) array with a cache-resident k-ary search tree */
  RDX_KIND_BTREE = 0x103,   /* bulk-loaded B+-tree with cache-line nodes */
  RDX_KIND_HASH = 0x104,    /* open-addressing hash table; point lookups only */
  RDX_KIND_RX = 0x105,      /* RX: one triangle per key, lookups are rays */
  RDX_KIND_CGRX = 0x106,    /* cgRX: one representative triangle per bucket of keys */
  RDX_KIND_CGRXU = 0x107    /* cgRXu: cgRX whose buckets are chains of fixed-size nodes, so batches
                               of inserts and erases never touch the BVH. Since 0.2. */
} rdx_kind;

/* "scan", "sorted", ...; NULL for a value that is not a kind. Since 0.1. */
RDX_API const char *rdx_kind_name(rdx_kind kind);
/* "auto", "cpu", "cuda", "optix"; NULL otherwise. Since 0.1. */
RDX_API const char *rdx_backend_name(rdx_backend backend);
/* Size in bytes of one element of dtype; 0 for a value that is not a dtype. Since 0.1. */
RDX_API size_t rdx_dtype_size(rdx_dtype dtype);

/* ------------------------------------------------------------------------------------------ */
/* Arrays                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* A borrowed, dense, row-major array of `count` rows of `columns` elements each. Input arrays
 * are only read, even though `data` is not const; output arrays are written in place. */
typedef struct rdx_array {
  void *data;            /* first element; may be NULL only when count == 0 */
  int64_t count;         /* number of rows, >= 0; batches past 2^31 are fine; count x columns x
                            dtype size is at most 2^56 bytes (more than any address space holds) */
  int32_t columns;       /* elements per row, >= 1 (2 for [lo, hi] bounds, 2 for x,y points) */
  rdx_dtype dtype;       /* element type */
  rdx_location where;    /* host or device memory */
} rdx_array;

static inline rdx_array rdx_host_array(const void *data, int64_t count, rdx_dtype dtype) {
  rdx_array a;
  a.data = (void *)(uintptr_t)data;
  a.count = count;
  a.columns = 1;
  a.dtype = dtype;
  a.where = RDX_HOST;
  return a;
}
static inline rdx_array rdx_device_array(const void *data, int64_t count, rdx_dtype dtype) {
  rdx_array a = rdx_host_array(data, count, dtype);
  a.where = RDX_DEVICE;
  return a;
}
static inline rdx_array rdx_host_matrix(const void *data, int64_t rows, int32_t columns,
                                        rdx_dtype dtype) {
  rdx_array a = rdx_host_array(data, rows, dtype);
  a.columns = columns;
  return a;
}
static inline rdx_array rdx_device_matrix(const void *data, int64_t rows, int32_t columns,
                                          rdx_dtype dtype) {
  rdx_array a = rdx_device_array(data, rows, dtype);
  a.columns = columns;
  return a;
}
/* The "no array" value, for optional arguments such as implied row ids. */
static inline rdx_array rdx_no_array(void) { return rdx_host_array(NULL, 0, RDX_U64); }

/* ------------------------------------------------------------------------------------------ */
/* Context                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct rdx_context rdx_context;

/* Log levels for rdx_context_options.log_fn. */
enum { RDX_LOG_ERROR = 1, RDX_LOG_WARN = 2, RDX_LOG_INFO = 3, RDX_LOG_DEBUG = 4 };

typedef struct rdx_context_options {
  size_t size;            /* sizeof(rdx_context_options); fields past it are treated as unset */
  rdx_backend backend;    /* 0 = RDX_BACKEND_AUTO */
  int device;             /* CUDA device ordinal; 0 by default */
  int n_threads;          /* CPU backend threads; 0 = RAYDEX_THREADS or the number of cores */
  int64_t memory_limit;   /* bytes the context may hold (host for cpu, device for cuda); 0 = no limit */
  void (*log_fn)(int level, const char *message, void *user); /* NULL = no logging (but see
                             RAYDEX_TRACE at rdx_context_create) */
  void *log_user;         /* passed back to log_fn */
  int stream_priority;    /* GPU contexts: the CUDA priority of the context's stream, as
                             cudaStreamCreateWithPriority takes it (lower is greater; CUDA clamps it
                             to the device's range); 0 = the default priority, which leaves the
                             caller's other work on the device as it was. Since 0.1 */
  size_t staging_bytes;   /* GPU contexts: pinned host memory the context holds from its creation
                             for copies to and from ordinary (pageable) host memory, which move
                             through it in pieces while the context's threads fill or empty the
                             next; counted in the memory account (rdx_context_memory). 0 = 64 MiB.
                             Where it cannot be had (memory_limit below it, no pinned memory left)
                             the context copies as the CUDA driver does, slower. Host memory that
                             is pinned already (rdx_malloc's RDX_HOST_PINNED, cudaHostRegister) is
                             copied directly. Lookups and counts of host batches go in chunks
                             through it, the copies of one chunk beside the work on the next.
                             Since 0.2 */
} rdx_context_options;

#define RDX_CONTEXT_OPTIONS_INIT {sizeof(rdx_context_options), RDX_BACKEND_AUTO, 0, 0, 0, NULL, NULL, 0, 0}

/* Create a context. opts may be NULL for defaults. *out is set even on failure (unless out is
 * NULL), so rdx_context_message explains it; the caller always destroys it.
 * Returns RDX_OK, RDX_ERR_NO_BACKEND (backend not built, no GPU), RDX_ERR_INVALID_ARGUMENT (also
 * for an environment variable the library reads that is set to a value it does not accept; the
 * message names it: RAYDEX_THREADS, an integer in [1, 4096]; RAYDEX_TRACE, 1 or events; an
 * empty value means unset, except for the integers), RDX_ERR_CUDA (the GPU's stream or context could not be made),
 * RDX_ERR_OPTIX, RDX_ERR_HOST_OUT_OF_MEMORY (then *out is NULL).
 * The library reads no tuning knob from the environment: RAYDEX_THREADS sets the CPU threads when
 * n_threads is 0, and RAYDEX_TRACE (a diagnostic) logs timing marks of some calls, each a line
 * beginning "[raydex trace]", through log_fn at RDX_LOG_DEBUG, or on stderr when log_fn is NULL.
 * GPU contexts take device memory from CUDA's stream-ordered pool of their device and leave
 * freed memory there for reuse (cudaMalloc and cudaFree would cost milliseconds per gigabyte and
 * synchronise the device); every context also keeps up to 256 MiB of freed large host blocks.
 * Both go back to the system when the context is destroyed. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_context_create(const rdx_context_options *opts,
                                                    rdx_context **out);
/* Destroy a context and everything its memory account still holds (results and rdx_malloc
 * memory the caller did not free). Destroy its indexes and point indexes first. Since 0.1. */
RDX_API void rdx_context_destroy(rdx_context *ctx);
/* The sentence describing the context's last failure, "" if none. Owned by the context, valid
 * until the next call on it. Reading it changes nothing; a NULL or non-context pointer gives a
 * sentence saying so. Since 0.1. */
RDX_API const char *rdx_context_message(const rdx_context *ctx);
/* The backend the context runs on (never AUTO); RDX_BACKEND_CPU for a NULL or non-context
 * pointer. Since 0.1. */
RDX_API rdx_backend rdx_context_backend(const rdx_context *ctx);
/* Change the memory limit in bytes (0 = none). Allocations that would pass it fail with
 * RDX_ERR_DEVICE_OUT_OF_MEMORY (cuda, optix) or RDX_ERR_HOST_OUT_OF_MEMORY (cpu); memory already
 * held stays. Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (bytes < 0). On failure the limit is
 * unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_context_set_memory_limit(rdx_context *ctx, int64_t bytes);
/* Bytes the context holds now and the most it has held since creation. Host blocks it freed (up
 * to 1 GiB, at most a sixteenth of the machine's memory) are kept for its next allocations, not
 * counted, and given back by rdx_context_destroy. Since 0.1. */
RDX_API void rdx_context_memory(const rdx_context *ctx, int64_t *in_use, int64_t *peak);
/* GPU contexts: the work the context does from now on (it runs on a CUDA stream of its own, which
 * waits for no other) starts after everything enqueued so far on `stream`, a cudaStream_t of the
 * caller's (cudaStreamLegacy, (void *)1, for the legacy default stream; (void *)2 for the calling
 * thread's default stream), without blocking the host: for device arrays that another library's
 * kernels were still writing. Returns RDX_OK (also on a CPU context, with nothing to wait for),
 * RDX_ERR_CUDA (stream is not a stream of the context's device). Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_context_wait_stream(rdx_context *ctx, void *stream);

/* What this build and machine offer: filled by rdx_info_get. */
typedef struct rdx_info {
  size_t size;                  /* sizeof(rdx_info) */
  const char *version;          /* "0.1.0" */
  bool cuda_built;              /* the cuda backend is compiled in */
  bool optix_built;             /* the optix backend is compiled in */
  int n_gpus;                   /* CUDA devices visible (0 without CUDA) */
  char gpu_name[128];           /* name of device 0, "" without a GPU */
  int gpu_sms;                  /* multiprocessors of device 0 */
  int64_t gpu_memory;           /* bytes of device 0 */
  bool optix_usable;            /* OptiX initialises with this driver */
  bool rt_cores;                /* the GPU has ray-tracing cores */
  rdx_backend auto_backend;     /* what RDX_BACKEND_AUTO picks for key indexes */
  int cpu_threads;              /* threads the CPU backend uses by default */
  char cpu_name[128];           /* from /proc/cpuinfo where available */
  bool have_gdal;               /* rdx_polygons_load reads GDAL/OGR formats. Since 0.1 */
} rdx_info;

/* Fill *info (info->size must be set). Never fails for lack of a GPU. Returns RDX_OK, or
 * RDX_ERR_INVALID_ARGUMENT for a NULL info or an info->size below this header's sizeof(rdx_info),
 * and then *info is unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_info_get(rdx_info *info);

/* ------------------------------------------------------------------------------------------ */
/* Key indexes                                                                                */
/* ------------------------------------------------------------------------------------------ */

/*
 * A key index maps u32 or u64 keys to row ids. Every key value is valid, 0 and the maximum
 * included (no sentinel keys). Duplicate keys are allowed; lookups return all their rows.
 * Row ids are given (u32 or u64) or implied by position (0..n-1). Results are u64 row ids;
 * RDX_MISS (2^64-1) marks a miss in one-row-per-query results. An empty key set builds an
 * empty index on which every lookup misses. An empty batch returns an empty result.
 *
 * Edge cases common to every kind:
 *  - Within one query's result, row ids are in ascending order.
 *  - rdx_index_lookup returns the smallest row id among equal keys.
 *  - A range [lo, hi] is inclusive; lo > hi is an empty range, not an error.
 *  - Results are deterministic: the same inputs give the same bytes on every backend.
 */
typedef struct rdx_index rdx_index;

#define RDX_MISS UINT64_MAX

typedef struct rdx_build_options {
  size_t size;          /* sizeof(rdx_build_options) */
  rdx_kind kind;        /* 0 = RDX_KIND_SORTED */
  int bucket_size;      /* cgrx: keys per bucket (1..65536); 0 = 32 */
  int flags;            /* kind-specific RDX_BUILD_* flags; 0 = the kind's defaults */
  double load_factor;   /* hash: target fill of the table in (0, 0.95]; 0 = 0.5. The table has
                           n / load_factor slots in at most 2^32 windows (128 GiB): 4 slots each for
                           u32 keys, 2 for u64, so n / load_factor must stay below 2^34 (u32 keys)
                           or 2^33 (u64 keys), else RDX_ERR_INVALID_ARGUMENT */
  int node_bytes;       /* cgrxu: bytes of (key, row) pairs per node, a power of two in [32, 4096];
                           0 = 128 (one cache line). The build fills each bucket's node to half.
                           Since 0.2 (an older, smaller size gets 0). */
} rdx_build_options;

#define RDX_BUILD_OPTIONS_INIT {sizeof(rdx_build_options), RDX_KIND_SORTED, 0, 0, 0.0, 0}

/* rdx_build_options.flags */
/* sorted (cuda): sort each point-lookup batch of 2^16 or more queries on the device before
 * searching, and scatter the answers back to query order. Neighbouring queries then share tree
 * nodes and leaves; whether that repays the sort depends on the GPU, key width and batch
 * (bench/results/ measures both). */
#define RDX_BUILD_SORT_QUERIES 0x1
/* The ray-tracing kinds (rx, cgrx; they ignore RDX_BUILD_SORT_QUERIES). Since 0.1. */
#define RDX_BUILD_CGRX_NAIVE 0x10           /* cgrx: marker triangles at x = -1 (the paper's naive
                                               representation) instead of moved and auxiliary
                                               representatives (the optimized one, the default) */
#define RDX_BUILD_CGRX_DEFAULT_MAPPING 0x20 /* cgrx: RX's key mapping (x, y, z) instead of the scaled
                                               mapping (x, 2^15 y, 2^25 z), the default */
#define RDX_BUILD_RT_MORTON 0x40            /* rx, cgrx on cpu and cuda: build the software BVH from
                                               Morton codes of the triangles' centres instead of key
                                               order (which keeps every leaf box within one row) */

/* Build an index over keys (u32 or u64, 1-D) with row ids (NULL data for implied 0..n-1, else u32
 * or u64 of the same count). Arrays may be on the host or, for GPU contexts, on the device. No row
 * id may be RDX_MISS (2^64-1, the miss marker): every kind refuses it with RDX_ERR_INVALID_ARGUMENT
 * naming its position.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT, RDX_ERR_UNSUPPORTED (kind not on this backend),
 * RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA, RDX_ERR_OPTIX. On failure *out is NULL and the context
 * holds nothing more than before. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_index_build(rdx_context *ctx, rdx_array keys,
                                                 rdx_array row_ids,
                                                 const rdx_build_options *opts, rdx_index **out);
/* Destroy an index (see "Destroying and freeing" above). Since 0.1. */
RDX_API void rdx_index_destroy(rdx_index *idx);

/* ---- batch updates (since 0.2) ----
 * Every kind takes batches of inserts and erases, all or nothing: a batch that fails (a bad
 * argument, memory past the context's limit or the device's) leaves the index exactly as it was,
 * and then answers every query as before. Kinds update in place (sorted and btree merge the batch,
 * hash inserts into its table, cgrxu into its buckets' node chains, scan appends), except rx and
 * cgrx: their BVH would have to be rebuilt, so they refuse a batch with RDX_ERR_UNSUPPORTED unless
 * the caller asks for that rebuild with RDX_UPDATE_REBUILD. */
typedef struct rdx_update_options {
  size_t size; /* sizeof(rdx_update_options) */
  int flags;   /* RDX_UPDATE_* */
} rdx_update_options;
#define RDX_UPDATE_OPTIONS_INIT {sizeof(rdx_update_options), 0}
/* rx, cgrx: rebuild the whole index with the batch applied (a new BVH over every key). Kinds that
 * update in place ignore it. */
#define RDX_UPDATE_REBUILD 0x1

/* Insert (key, row) pairs: keys 1-D of the index's key dtype; row_ids (u32 or u64, same count, never
 * RDX_MISS), or NULL data for implied row ids: the index's row counter and up. The counter starts
 * at the build's key count and grows by every batch inserted, whether its rows were given or not
 * (rdx_index_next_row). Duplicate keys, and pairs already in the index, are added again: an index
 * is a multiset of pairs. Arrays on the host or, for GPU contexts, on the device. opts may be NULL.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT, RDX_ERR_MISUSE (not an index, or one of another
 * context), RDX_ERR_UNSUPPORTED (rx, cgrx without RDX_UPDATE_REBUILD), RDX_ERR_*_OUT_OF_MEMORY,
 * RDX_ERR_CUDA, RDX_ERR_OPTIX. An empty batch changes nothing. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_index_insert(rdx_context *ctx, rdx_index *idx, rdx_array keys,
                                                  rdx_array row_ids, const rdx_update_options *opts);
/* Erase every row of each key listed (1-D, the index's key dtype; duplicates and absent keys are
 * fine). *n_erased (may be NULL) receives the number of pairs removed. Returns what
 * rdx_index_insert does. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_index_erase(rdx_context *ctx, rdx_index *idx, rdx_array keys,
                                                 const rdx_update_options *opts, int64_t *n_erased);
/* The first implied row id of the next insert (see rdx_index_insert); 0 for a NULL or non-index
 * pointer. Since 0.2. */
RDX_API uint64_t rdx_index_next_row(const rdx_index *idx);

/* ---- snapshots (since 0.2) ----
 * rdx_index_save writes the index's (key, row) pairs and its build options to path in raydex's
 * versioned snapshot format (a header, then sections, each with its CRC32C): to a temporary file
 * beside path, flushed to the disk, then renamed over path, so a crash at any moment leaves either
 * the old file or the new one whole. rdx_index_load reads one back on the given context (any
 * backend that has the kind) and rebuilds the index with the saved options; it answers every
 * query as the saved one did. A truncated, corrupted or foreign file is refused with
 * RDX_ERR_PARSE and a message that says what is wrong (which section, which check).
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT, RDX_ERR_MISUSE, RDX_ERR_IO (the file system said no),
 * RDX_ERR_PARSE,
 * RDX_ERR_UNSUPPORTED (the kind is not on this backend), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA,
 * RDX_ERR_OPTIX. On failure *out is NULL and nothing is held. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_index_save(rdx_context *ctx, const rdx_index *idx, const char *path);
RDX_API RDX_NODISCARD rdx_status rdx_index_load(rdx_context *ctx, const char *path, rdx_index **out);

/* Number of keys, key dtype and kind of an index; 0 for a NULL or non-index pointer. Since 0.1. */
RDX_API int64_t rdx_index_count(const rdx_index *idx);
RDX_API rdx_dtype rdx_index_dtype(const rdx_index *idx);
RDX_API rdx_kind rdx_index_kind(const rdx_index *idx);
/* Bytes the index holds now (resident) and the most that its build held at once (peak, index plus
 * scratch); either pointer may be NULL. Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (idx NULL),
 * RDX_ERR_MISUSE (not an index, or one of another context); on failure nothing is written.
 * Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_index_bytes(rdx_context *ctx, const rdx_index *idx,
                                                 int64_t *resident, int64_t *peak);

/* Point lookups, fast path: row_ids[i] = the smallest row id whose key equals queries[i], or
 * RDX_MISS. queries: 1-D, the index's key dtype. row_ids: u64, same count, caller-owned, same
 * location kind as queries or any location the context can write.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (idx NULL; queries not 1-D of the index's key dtype;
 * row_ids not u64 of the same count; memory the context cannot reach, or host memory claimed as
 * device memory), RDX_ERR_MISUSE (not an index, or one of another context),
 * RDX_ERR_*_OUT_OF_MEMORY (staging host arrays on a GPU context, scratch), RDX_ERR_CUDA,
 * RDX_ERR_OPTIX, RDX_ERR_INTERNAL (a cgrx scene that fails its own invariant). The index is never
 * changed; on failure row_ids' contents are unspecified (host row_ids of a GPU context are
 * written only once the whole batch succeeded). Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_index_lookup(rdx_context *ctx, const rdx_index *idx,
                                                  rdx_array queries, rdx_array row_ids);

/* Point lookups returning every match, two-phase. counts[i] (u64) = number of keys equal to
 * queries[i]. Then offsets (u64, count + 1, the exclusive prefix sum of counts; see
 * rdx_counts_to_offsets) and row_ids (u64, offsets[count] entries) receive the matches of query i
 * in row_ids[offsets[i] .. offsets[i+1]) in ascending order.
 * The fill checks the offsets before it writes anything, and counts the batch again to do so:
 * offsets[0] must be 0, offsets[count] <= row_ids.count, and each offsets[i+1] - offsets[i] the
 * count of query i (so they never descend). Offsets that do not are RDX_ERR_INVALID_ARGUMENT
 * naming the first wrong query, and row_ids is then untouched.
 * Returns what rdx_index_lookup does (counts and offsets: u64, count and count + 1 entries;
 * row_ids: u64, at least offsets[count]). The index is never changed; on other failures the
 * outputs' contents are unspecified. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_index_lookup_count(rdx_context *ctx, const rdx_index *idx,
                                                        rdx_array queries, rdx_array counts);
RDX_API RDX_NODISCARD rdx_status rdx_index_lookup_fill(rdx_context *ctx, const rdx_index *idx,
                                                       rdx_array queries, rdx_array offsets,
                                                       rdx_array row_ids);

/* Range lookups over bounds, an (m, 2) array of [lo, hi] in the key dtype, two-phase as above,
 * with the same checks of the offsets. The rows of one range are in ascending order. Returns what
 * the point calls do, and RDX_ERR_UNSUPPORTED from hash indexes. The index is never changed; on
 * failure the outputs' contents are unspecified (row_ids untouched when the offsets are wrong).
 * Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_index_range_count(rdx_context *ctx, const rdx_index *idx,
                                                       rdx_array bounds, rdx_array counts);
RDX_API RDX_NODISCARD rdx_status rdx_index_range_fill(rdx_context *ctx, const rdx_index *idx,
                                                      rdx_array bounds, rdx_array offsets,
                                                      rdx_array row_ids);

/* offsets[0] = 0, offsets[i+1] = offsets[i] + counts[i] (u64, count + 1 entries, same location as
 * counts). *total (may be NULL) receives offsets[count] on the host. Returns RDX_OK,
 * RDX_ERR_INVALID_ARGUMENT (not 1-D u64, wrong count, counts and offsets in different kinds of
 * memory, device memory on a CPU context), RDX_ERR_DEVICE_OUT_OF_MEMORY (scan scratch). counts
 * is only read; on failure *total is unchanged and offsets' contents are unspecified. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_counts_to_offsets(rdx_context *ctx, rdx_array counts,
                                                       rdx_array offsets, uint64_t *total);

/* A result owned by raydex, for the convenience calls below: CSR of n_queries rows, in the
 * location of the query array. Free with rdx_result_free. */
typedef struct rdx_result {
  int64_t n_queries;   /* rows */
  uint64_t total;      /* offsets[n_queries], the number of row ids */
  uint64_t *offsets;   /* n_queries + 1 entries */
  uint64_t *row_ids;   /* total entries */
  rdx_location where;  /* where offsets and row_ids live */
} rdx_result;

/* Count, scan, allocate and fill in one call; the result lives where the queries live. Returns
 * what the count and fill calls do (out NULL is RDX_ERR_INVALID_ARGUMENT), and
 * RDX_ERR_*_OUT_OF_MEMORY for the result's arrays. On failure *out is NULL, nothing is held, and
 * the index is unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_index_lookup_alloc(rdx_context *ctx, const rdx_index *idx,
                                                        rdx_array queries, rdx_result **out);
RDX_API RDX_NODISCARD rdx_status rdx_index_range_alloc(rdx_context *ctx, const rdx_index *idx,
                                                       rdx_array bounds, rdx_result **out);
/* Free a result, given the context that made it (see "Destroying and freeing" above). Since 0.1. */
RDX_API void rdx_result_free(rdx_context *ctx, rdx_result *result);

/* ------------------------------------------------------------------------------------------ */
/* Device memory helpers, so C callers need no CUDA headers                                   */
/* ------------------------------------------------------------------------------------------ */

/* Copy bytes between any two locations the context reaches (the ranges must not overlap unless
 * both are host memory). Returns RDX_OK (also for bytes == 0), RDX_ERR_INVALID_ARGUMENT (dst or
 * src NULL; device memory on a CPU context), RDX_ERR_CUDA. src is only read; on failure dst's
 * contents are unspecified. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_copy(rdx_context *ctx, void *dst, rdx_location dst_where,
                                          const void *src, rdx_location src_where, size_t bytes);
/* Allocate memory in a location through the context's account (counted and limited); free it with
 * rdx_free and the same context. A size past 2^63 - 1 bytes is refused as out of memory before
 * anything is allocated. Returns RDX_OK (bytes == 0 gives a valid unique pointer),
 * RDX_ERR_INVALID_ARGUMENT (ptr NULL, where not an rdx_location, device or pinned memory on a CPU
 * context), RDX_ERR_HOST_OUT_OF_MEMORY, RDX_ERR_DEVICE_OUT_OF_MEMORY (also past the memory
 * limit), RDX_ERR_CUDA. On failure *ptr is unchanged or NULL and nothing is held. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_malloc(rdx_context *ctx, void **ptr, size_t bytes,
                                            rdx_location where);
/* Free memory from rdx_malloc of this context (see "Destroying and freeing" above); where is not
 * read. On a GPU context it first waits for the device, as cudaFree does. Since 0.1. */
RDX_API void rdx_free(rdx_context *ctx, void *ptr, rdx_location where);

/* ------------------------------------------------------------------------------------------ */
/* .npy files: u32, u64, i64, f32, f64; 1-D or 2-D; little-endian; C order                    */
/* ------------------------------------------------------------------------------------------ */

/* Read path into a host array allocated by raydex (free with rdx_npy_free). *ndim (may be NULL)
 * receives 1 or 2; a 1-D file gives columns == 1. Anything but the formats above is
 * RDX_ERR_PARSE with a sentence naming the problem; a missing or unreadable file is RDX_ERR_IO.
 * The header is read as strictly as numpy reads it: versions 1.0, 2.0 and 3.0; a dict with exactly
 * the keys descr, fortran_order (True or False) and shape (a tuple of non-negative integers),
 * each once; only spaces and a final newline after it; printable ASCII throughout. Messages show
 * the file's bytes escaped (\xNN). Also RDX_ERR_INVALID_ARGUMENT (path or out NULL) and
 * RDX_ERR_HOST_OUT_OF_MEMORY. The array is plain host memory (malloc), not counted by the
 * context. On failure out->data is NULL and nothing is held. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_npy_read(rdx_context *ctx, const char *path, rdx_array *out,
                                              int *ndim);
/* Write a host array as 1-D (ndim 1, columns must be 1) or 2-D (ndim 2), replacing the file.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (path NULL, not host memory, dtype not one of the
 * five, ndim or columns wrong), RDX_ERR_IO (cannot create or write the file). Validation failures
 * leave the file untouched; after RDX_ERR_IO it may be partly written. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_npy_write(rdx_context *ctx, const char *path, rdx_array a,
                                               int ndim);
/* Free an array returned by rdx_npy_read and reset it to the empty array (see "Destroying and
 * freeing" above). Since 0.1. */
RDX_API void rdx_npy_free(rdx_array *a);

/* ------------------------------------------------------------------------------------------ */
/* Spatial point indexes                                                                      */
/* ------------------------------------------------------------------------------------------ */

/*
 * A point index holds 2-D points (f32 or f64) and answers batches of point searches, window
 * queries, within-distance queries and exact k-nearest-neighbour queries, with bulk moves,
 * inserts and erases in between. Two kinds share the handle and every call:
 *  - RDX_POINTS_QUADTREE: a PR quadtree over a 2^D x 2^D Morton grid of the index's box, built
 *    bottom-up (one sort by Morton code, per-level reduction, pruning; Zhang and Gruenwald 2019)
 *    or top-down (one partition per level). Both methods give the same tree.
 *  - RDX_POINTS_KDTREE: a k-d tree with median splits on alternating axes (x first).
 * A leaf holds at most leaf_capacity points, except leaves at max_depth, which hold every point
 * that falls there (duplicates). Queries follow G-PICS (Lewis and Tu): each query descends the tree
 * to the leaves it needs, and each leaf's points are tested against all queries listed at it.
 *
 * Points, ids and results:
 *  - Points are an (n, 2) array of x, y in f32 or f64, host or device memory. Point i of the build
 *    gets id i; inserted points get the next ids (rdx_points_describe's id_end); ids are never
 *    reused. Results are u64 ids.
 *  - Every coordinate must be finite: NaN or +-inf in points or queries is RDX_ERR_INVALID_ARGUMENT.
 *    -0.0 and 0.0 are the same coordinate everywhere.
 *  - The box: given in the options, or computed at build as the tight bounding box of the points
 *    ([0, 0] x [0, 0] for an empty build). A point outside the box (at build or in an update) is
 *    RDX_ERR_INVALID_ARGUMENT, never clamped; the box never changes after the build.
 *  - Distances are computed in double precision as (x - qx)^2 + (y - qy)^2, each operation rounded
 *    to nearest (no fused multiply-add), on every backend; r^2 likewise. Results are the same ids in
 *    the same order on every backend and for both kinds.
 *
 * Query types and their query arrays (same dtype as the points, one row per query):
 *  - RDX_POINTS_MATCH  (m, 2) x, y: ids of the points with exactly these coordinates.
 *  - RDX_POINTS_WINDOW (m, 4) xmin, ymin, xmax, ymax: ids of the points with xmin <= x <= xmax and
 *    ymin <= y <= ymax (boundary inclusive); xmin > xmax or ymin > ymax is an empty window.
 *  - RDX_POINTS_WITHIN (m, 3) x, y, r: ids of the points at distance <= r (inclusive); r must be
 *    >= 0 (r = 0 finds exact matches); a negative r is RDX_ERR_INVALID_ARGUMENT.
 *  - RDX_POINTS_KNN    (m, 2) x, y with k in 1..1024: the min(k, n) nearest points, by ascending
 *    distance, ties broken by ascending id. kNN is exact.
 * Within one query's result, ids ascend (kNN: distance order). An empty batch gives an empty
 * result; an empty index answers every query with no ids.
 */
typedef struct rdx_points rdx_points;

typedef enum rdx_points_kind {
  RDX_POINTS_QUADTREE = 0x401,   /* PR quadtree over a Morton grid */
  RDX_POINTS_KDTREE = 0x402      /* median-split k-d tree */
} rdx_points_kind;

typedef enum rdx_points_method {
  RDX_POINTS_BOTTOM_UP = 0x411,  /* quadtree: sort once, reduce per level, prune (the default) */
  RDX_POINTS_TOP_DOWN = 0x412    /* quadtree: sort and partition the unfinished points per level */
} rdx_points_method;

/* How an index keeps its points between updates, chosen at build for the index's life (the
 * updates' doc below says what each costs). */
typedef enum rdx_points_layout {
  RDX_POINTS_PAGED = 0x421,      /* each leaf a page of slots with spare room, an id -> slot map */
  RDX_POINTS_DENSE = 0x422       /* the points dense in key order, a bit per live id (GPU only) */
} rdx_points_layout;

typedef enum rdx_points_query_type {
  RDX_POINTS_MATCH = 0x501,      /* exact coordinates */
  RDX_POINTS_WINDOW = 0x502,     /* axis-aligned rectangle, boundary inclusive */
  RDX_POINTS_WITHIN = 0x503,     /* circle, boundary inclusive */
  RDX_POINTS_KNN = 0x504         /* k nearest neighbours, exact */
} rdx_points_query_type;

typedef struct rdx_points_options {
  size_t size;                   /* sizeof(rdx_points_options); fields past it are treated as unset */
  rdx_points_kind kind;          /* 0 = RDX_POINTS_QUADTREE */
  rdx_points_method method;      /* 0 = RDX_POINTS_BOTTOM_UP; the k-d tree has one method */
  int leaf_capacity;             /* most points per leaf above max_depth, 1..2^30; 0 = 256 */
  int max_depth;                 /* deepest level, root = 0. quadtree 1..31 (<= 16 keeps 32-bit Morton
                                    codes), 0 = 16; k-d tree 1..56, 0 = 48 */
  bool use_box;                  /* true: box below is the index space; false: computed at build */
  double box[4];                 /* xmin, ymin, xmax, ymax; finite, xmin <= xmax, ymin <= ymax */
  rdx_points_layout layout;      /* 0 = the default: RDX_POINTS_PAGED, except the k-d tree on a GPU,
                                    which is dense; a layout the kind lacks on the context's backend
                                    is RDX_ERR_UNSUPPORTED (see the updates below). Since 0.1 */
} rdx_points_options;

#define RDX_POINTS_OPTIONS_INIT \
  {sizeof(rdx_points_options), RDX_POINTS_QUADTREE, RDX_POINTS_BOTTOM_UP, 0, 0, false, {0, 0, 0, 0}, (rdx_points_layout)0}

/* Build an index over points, an (n, 2) f32 or f64 array (host, or device for GPU contexts); opts
 * may be NULL for the defaults. The index keeps its own copy of the points.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (bad options or array, NaN/inf coordinates, a point
 * outside a given box: the message names the first offending row), RDX_ERR_UNSUPPORTED (a layout
 * the kind lacks on this backend), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA. On failure *out is NULL
 * and nothing is held. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_build(rdx_context *ctx, rdx_array points,
                                                  const rdx_points_options *opts, rdx_points **out);
/* Destroy a point index (see "Destroying and freeing" above). Since 0.1. */
RDX_API void rdx_points_destroy(rdx_points *pts);
/* Snapshots of a point index, as rdx_index_save and rdx_index_load do for key indexes (the same
 * file format with its own kind of content, the same crash safety and the same refusals): the
 * points, their ids and the build options; the load rebuilds the tree with them on the given
 * context. A snapshot whose ids have gaps of more than 4 times its points (and 2^16), as many
 * inserts and erases leave, saves but does not load yet: RDX_ERR_UNSUPPORTED with a sentence.
 * Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_points_save(rdx_context *ctx, const rdx_points *pts, const char *path);
RDX_API RDX_NODISCARD rdx_status rdx_points_load(rdx_context *ctx, const char *path, rdx_points **out);
/* Number of points in the index now; 0 for NULL or a pointer that is not a point index. Since 0.1. */
RDX_API int64_t rdx_points_count(const rdx_points *pts);
/* Bytes the index holds now (resident: points with ids and codes, nodes, the id map or id bitmap
 * after updates, and on GPUs a scratch cache kept between queries and updates, at most 64 MiB +
 * 48 bytes per point slot) and the most its build held at once (peak); either pointer may be
 * NULL. Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (pts NULL), RDX_ERR_MISUSE (not a point index,
 * or one of another context); on failure nothing is written. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_bytes(rdx_context *ctx, const rdx_points *pts,
                                                  int64_t *resident, int64_t *peak);

/* What an index is: filled by rdx_points_describe. */
typedef struct rdx_points_info {
  size_t size;                   /* sizeof(rdx_points_info), set by the caller */
  rdx_points_kind kind;
  rdx_points_method method;      /* how it was built */
  rdx_dtype dtype;               /* RDX_F32 or RDX_F64 */
  int64_t count;                 /* points now */
  uint64_t id_end;               /* the id the next inserted point gets */
  int leaf_capacity, max_depth;  /* as used (defaults applied) */
  double box[4];                 /* xmin, ymin, xmax, ymax of the index space */
  int64_t n_nodes, n_leaves;     /* tree size now */
  int depth;                     /* deepest level with a node */
} rdx_points_info;

/* Fill *info (info->size must be set). Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (pts or info NULL,
 * info->size below this header's sizeof(rdx_points_info)), RDX_ERR_MISUSE, and on GPU contexts
 * RDX_ERR_HOST_OUT_OF_MEMORY (the nodes are read to the host). The index's answers never change;
 * on failure *info's contents are unspecified. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_describe(rdx_context *ctx, const rdx_points *pts,
                                                     rdx_points_info *info);

/* A query batch's type and parameters. */
typedef struct rdx_points_query {
  size_t size;                   /* sizeof(rdx_points_query) */
  rdx_points_query_type type;    /* required */
  int k;                         /* RDX_POINTS_KNN: 1..1024; ignored otherwise */
} rdx_points_query;

#define RDX_POINTS_QUERY_INIT {sizeof(rdx_points_query), RDX_POINTS_WINDOW, 0}

/* Two-phase queries (the key indexes' protocol). counts (u64, m entries) receives the number of
 * ids of each query. Then offsets (u64, m + 1: the exclusive prefix sum of those counts, see
 * rdx_counts_to_offsets) and row_ids (u64, at least offsets[m] entries) receive query i's ids in
 * row_ids[offsets[i] .. offsets[i+1]). queries: as listed above, host or device memory; outputs in
 * any memory the context can write. The fill checks that offsets match this batch's counts.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (shapes, dtypes, NaN/inf, negative radius, k outside
 * 1..1024, offsets that do not match), RDX_ERR_MISUSE, RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA. The
 * index never changes; on failure the outputs' contents are unspecified. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_query_count(rdx_context *ctx, const rdx_points *pts,
                                                        rdx_array queries,
                                                        const rdx_points_query *query,
                                                        rdx_array counts);
RDX_API RDX_NODISCARD rdx_status rdx_points_query_fill(rdx_context *ctx, const rdx_points *pts,
                                                       rdx_array queries,
                                                       const rdx_points_query *query,
                                                       rdx_array offsets, rdx_array row_ids);
/* Count, scan, allocate and fill in one call; the result lives where the queries live. Free it
 * with rdx_result_free. Returns what the count and fill calls do (out NULL is
 * RDX_ERR_INVALID_ARGUMENT), and RDX_ERR_*_OUT_OF_MEMORY for the result's arrays. On failure
 * *out is NULL, nothing is held, and the index is unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_query_alloc(rdx_context *ctx, const rdx_points *pts,
                                                        rdx_array queries,
                                                        const rdx_points_query *query,
                                                        rdx_result **out);

/*
 * Bulk updates (G-PICS Section 5). Each call is one batch: ids u32 or u64, 1-D; points (m, 2) of
 * the index's dtype; host or device memory, caller-owned, not kept. An empty batch is RDX_OK and
 * changes nothing. Each call is all-or-nothing: on any failure the points, ids and answers of the
 * index are exactly as before. After any sequence of updates every query answers exactly as an
 * index freshly built from the points then present (with the same ids), and a quadtree has the
 * nodes of a fresh build with the same box (only where a leaf keeps its points differs).
 *
 * The layout (rdx_points_options.layout) decides how an update works and what it holds:
 *  - RDX_POINTS_PAGED (the default; both kinds on the CPU, quadtrees on a GPU): each leaf keeps a
 *    page of slots with spare room and an id -> slot map finds a point, so an update rewrites only
 *    the leaves it changes. The first update spreads the leaves out and adds the map (8 bytes per
 *    id); on a GPU, paging takes batches of up to a tenth of the points, and a larger batch
 *    rebuilds the index, which keeps its layout.
 *  - RDX_POINTS_DENSE (GPU only; the k-d tree's only GPU layout): the points stay dense in key
 *    order (Morton order as a bottom-up build leaves them; k-d leaf order), with a bit per id, and
 *    an update merges the sorted batch into them in one pass, so its cost hardly depends on the
 *    batch. A k-d batch of more than half the points rebuilds the index instead.
 * rdx_points_bytes counts what either holds. What an update adds to an index before it fails
 * (pages spread out, an id map, room for growth) may stay; it changes no answer.
 */
/* Move the points with these ids to new coordinates (points[i] is the new place of ids[i]).
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (ids or points not 1-D / (m, 2) of the right dtypes,
 * ids.count != points.count, an id that is unknown, erased or repeated in the batch, NaN/inf
 * coordinates, a point outside the box: the message names the first offending row),
 * RDX_ERR_MISUSE (an index of another context), RDX_ERR_HOST_OUT_OF_MEMORY,
 * RDX_ERR_DEVICE_OUT_OF_MEMORY, RDX_ERR_CUDA. On any failure the index's points, ids and answers
 * are unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_move(rdx_context *ctx, rdx_points *pts, rdx_array ids,
                                                 rdx_array points);
/* Insert points; they get ids id_end, id_end + 1, ... in order. *first_id (may be NULL) receives
 * the index's id_end before the call, the first new id, whenever pts is a live index of ctx, also
 * for an empty or a failed batch. Returns what rdx_points_move does (no id errors), and
 * RDX_ERR_INVALID_ARGUMENT when the ids would pass 2^63. On failure the index's points, ids and
 * answers are unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_insert(rdx_context *ctx, rdx_points *pts,
                                                   rdx_array points, uint64_t *first_id);
/* Erase the points with these ids. Returns what rdx_points_move does (no coordinate errors). On
 * failure the index's points, ids and answers are unchanged. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_points_erase(rdx_context *ctx, rdx_points *pts, rdx_array ids);

/* ------------------------------------------------------------------------------------------ */
/* Polygon layers and exact spatial joins (RayJoin)                                           */
/* ------------------------------------------------------------------------------------------ */

/*
 * A polygon layer holds features (Polygon or MultiPolygon, holes allowed), each identified by its
 * position in the input (0, 1, ...). Input is CSR, feature -> ring -> vertex:
 *  - feature_offsets (u64, n_features + 1): feature f owns rings [fo[f], fo[f + 1]);
 *  - ring_offsets (u64, n_rings + 1): ring r owns vertices [ro[r], ro[r + 1]);
 *  - coords ((n_vertices, 2) of f32 or f64, x then y).
 * All three in host memory or all in device memory (device memory on a GPU context only); they
 * are copied, never kept. A feature may own no ring (it holds no point); a layer holds at most
 * 2^32 - 2 features and 2^32 - 2 vertices (after merging).
 *
 * What a feature is: the points whose crossing parity over all of the feature's rings is odd
 * (the even-odd rule), together with the feature's boundary (every point of every ring). For a
 * valid OGC Polygon or MultiPolygon (shells, holes inside them, islands inside holes) this is
 * exactly its closed region; ring orientation is not used, and rings of one feature may come in
 * any order. Boundaries are closed sets throughout: a point on a feature's boundary is in it.
 *
 * Rings: a ring may repeat its first vertex at its end or not; both mean the same closed ring.
 * Consecutive equal vertices are merged (a zero-length edge has no effect on the region). After
 * that a ring needs at least 3 distinct vertices. Every coordinate must be finite and either 0
 * or of magnitude in [2^-256, 2^256] (inside that range every exact predicate below is exact; a
 * map in degrees, metres or any projection is far inside it). A bad feature is
 * RDX_ERR_INVALID_ARGUMENT with a message naming the feature, the ring (its position within the
 * feature) and the vertex; nothing is dropped silently. f32 coordinates are widened to f64
 * (exactly); every answer is exact on the coordinates as given.
 *
 * Exactness: every predicate (which side of an edge a point lies, whether two edges share a point,
 * whether a point is on an edge) is decided in exact arithmetic on the input coordinates: a
 * floating-point filter with a proven error bound decides almost every test, and an exact
 * expansion arithmetic (Shewchuk 1997) the rest, on host and device alike. Float32 boxes for the
 * ray-tracing engine are rounded outward and padded (rdx_join_options.pad_ulps), so the engine
 * never misses a candidate; answers equal an exact reference (GEOS) on every backend.
 */
typedef struct rdx_polygons rdx_polygons;

typedef struct rdx_polygons_input {
  size_t size;                 /* sizeof(rdx_polygons_input) */
  rdx_array feature_offsets;   /* u64, n_features + 1 entries, [0] = 0, non-decreasing */
  rdx_array ring_offsets;      /* u64, n_rings + 1 entries, [0] = 0, non-decreasing */
  rdx_array coords;            /* (n_vertices, 2) f32 or f64 */
} rdx_polygons_input;

/* Make a layer in the context's backend memory (plus the host copy the CPU refinement reads).
 * An empty layer (0 features) is valid. Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (shapes, dtypes,
 * offsets that do not start at 0, descend or overrun; a bad ring or coordinate: the message names
 * feature, ring and vertex), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA. On failure *out is NULL and
 * nothing is held. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_polygons_create(rdx_context *ctx, const rdx_polygons_input *in,
                                                     rdx_polygons **out);
/* Read a layer from a file: raydex's own binary format (.rdxp, see rdx_polygons_save), or, when the
 * library was built with GDAL (rdx_info.have_gdal), any polygon layer GDAL/OGR reads (GeoJSON,
 * TopoJSON, Shapefile, GeoPackage, FlatGeobuf, WKT in CSV, ...): its first layer, or the layer
 * named by `layer` (may be NULL). Features keep the file's order; Polygon and MultiPolygon
 * geometries are taken, and any other geometry type is RDX_ERR_PARSE naming the feature. A
 * feature whose geometry GDAL reads as empty or absent (GDAL's TopoJSON driver empties a ring
 * that quantization collapsed, as in us-atlas and world-atlas) becomes a feature without rings,
 * keeping every later feature's id; rdx_polygons_info.n_empty counts them.
 * A file is .rdxp when it begins with the format's magic or its name ends in ".rdxp".
 * Returns RDX_OK, RDX_ERR_IO (cannot open or read), RDX_ERR_PARSE (truncated, corrupted or
 * foreign file; a checksum that does not match; a version this library does not read; and a
 * geometry rdx_polygons_create would refuse, with its sentence after the file's name),
 * RDX_ERR_INVALID_ARGUMENT (path or out NULL; no layer of that name, the message listing the
 * dataset's layers; a layer name with a .rdxp file), RDX_ERR_UNSUPPORTED (not .rdxp and no GDAL
 * in this build), RDX_ERR_*_OUT_OF_MEMORY. On failure *out is NULL. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_polygons_load(rdx_context *ctx, const char *path,
                                                   const char *layer, rdx_polygons **out);
/* Write the layer in raydex's binary format (.rdxp, little-endian, version 1; src/io/rdxp.c draws
 * its bytes): a versioned header with the counts and the bounding box, the feature and ring
 * offsets and the coordinates as the layer stores them (closing repeats and duplicates merged,
 * rings oriented; f32 stays f32), and a CRC32C per section, so rdx_polygons_load makes the
 * identical layer. The file is written to path.tmp.<pid>, flushed to the disk and renamed over
 * path, so a failed or interrupted save leaves any previous file intact. Returns RDX_OK,
 * RDX_ERR_INVALID_ARGUMENT (path NULL or empty), RDX_ERR_MISUSE, RDX_ERR_IO. The layer is never
 * changed. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_polygons_save(rdx_context *ctx, const rdx_polygons *layer,
                                                   const char *path);
/* Destroy a layer (see "Destroying and freeing" above). Since 0.1. */
RDX_API void rdx_polygons_destroy(rdx_polygons *layer);

typedef struct rdx_polygons_info {
  size_t size;                 /* sizeof(rdx_polygons_info), set by the caller */
  int64_t n_features;
  int64_t n_rings;
  int64_t n_vertices;          /* distinct ring vertices kept (closing repeats and merged
                                  duplicates not counted) */
  int64_t n_edges;             /* = n_vertices: each ring is closed */
  rdx_dtype dtype;             /* the coordinates' dtype as given */
  double lo[2], hi[2];         /* bounding box (+inf / -inf when empty) */
  int64_t bytes;               /* memory the layer holds, its join index included */
  bool indexed;                /* rdx_polygons_build_index has run */
  int64_t n_empty;             /* features without a ring (empty geometries): they hold no
                                  point but keep their ids */
} rdx_polygons_info;
/* Fill *info. Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (layer or info NULL, info->size too
 * small), RDX_ERR_MISUSE. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_polygons_describe(rdx_context *ctx, const rdx_polygons *layer,
                                                       rdx_polygons_info *info);

/* Join options; RDX_JOIN_OPTIONS_INIT gives the defaults. */
typedef struct rdx_join_options {
  size_t size;                 /* sizeof(rdx_join_options) */
  int32_t pad_ulps;            /* float32 box padding in ulps after outward rounding; 0 = the
                                  default 2; 1..64 */
  double group_threshold;      /* adaptive grouping of consecutive edges of a ring into one box
                                  while area(union) / max(area) < s (RayJoin's s): 0 = the default
                                  3.5; 1 turns grouping off; at most 64 */
  bool planar;                 /* the caller states that R's features do not overlap (a planar
                                  subdivision: counties, countries): PIP may take RayJoin's
                                  nearest-edge rule. Answers are the same when the statement holds;
                                  when it does not, a point in several features may get fewer */
  /* rdx_join_polygons calls progress (when not NULL) on the calling thread as each stage of the
   * join begins: its name ("pairs", "classify", "groups", "pip", "merge", "select", "areas",
   * "result") and the fraction of the stages done, in [0, 1). It must not call raydex with the
   * same context. Since 0.1 (a caller with an older, smaller size field gets none). */
  void (*progress)(void *user, const char *stage, double done);
  void *progress_user;         /* progress's first argument */
} rdx_join_options;
#define RDX_JOIN_OPTIONS_INIT {sizeof(rdx_join_options), 0, 0.0, false, NULL, NULL}

/* Build (or rebuild with other options) the layer's join index: the edges' conservative float32
 * boxes, grouped, in a BVH (raydex's soft BVH; on optix contexts the soft BVH on the device, as the
 * joins have no OptiX programs yet). Joins with R build a temporary index when R has none, with
 * opts' pad_ulps and group_threshold; once R has an index, joins use it with the options it was
 * built with (opts' are then not read for the index). Building it once makes later joins pay only
 * for queries. Answers never depend on these options or on the backend, only the time does.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (options out of range), RDX_ERR_*_OUT_OF_MEMORY,
 * RDX_ERR_CUDA, RDX_ERR_OPTIX. On failure the layer is as it was (its old index kept). Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_polygons_build_index(rdx_context *ctx, rdx_polygons *layer,
                                                          const rdx_join_options *opts);

/* Point in polygon: for each point (an (n, 2) f32 or f64 array, host or device memory; each
 * coordinate 0 or of magnitude in [2^-256, 2^256], so finite, like R's), the features of R
 * containing it: those with the point on their boundary, and those whose rings an upward ray from
 * it crosses an odd number of times (a feature as defined above; exact). With opts->planar, a
 * point on no boundary takes RayJoin's nearest-edge rule, and a point on a boundary the general
 * rule, so points on shared boundaries get every feature that holds them either way.
 * rdx_join_pip_first: first (i64, n) gets the smallest such feature index, or -1.
 * rdx_join_pip_count / _fill: counts (u64, n) gets how many features contain point i; fill writes
 * them ascending into features (i64, offsets[n]) at offsets (u64, n + 1, as rdx_counts_to_offsets
 * makes). rdx_join_pip_alloc does both into a result owned by raydex (row_ids are the features).
 * Outputs may be host or device memory the context reaches; _alloc's result lives where the points
 * live. The fill counts the batch again and checks the offsets before it writes any feature.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (shapes, dtypes, a coordinate out of range (the message
 * names the row), options out of range, offsets that do not match the counts: features then
 * untouched), RDX_ERR_MISUSE, RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA. The layer is never changed;
 * on failure the outputs' contents are unspecified except as said. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_join_pip_first(rdx_context *ctx, const rdx_polygons *r,
                                                    rdx_array points, const rdx_join_options *opts,
                                                    rdx_array first);
RDX_API RDX_NODISCARD rdx_status rdx_join_pip_count(rdx_context *ctx, const rdx_polygons *r,
                                                    rdx_array points, const rdx_join_options *opts,
                                                    rdx_array counts);
RDX_API RDX_NODISCARD rdx_status rdx_join_pip_fill(rdx_context *ctx, const rdx_polygons *r,
                                                   rdx_array points, const rdx_join_options *opts,
                                                   rdx_array offsets, rdx_array features);
RDX_API RDX_NODISCARD rdx_status rdx_join_pip_alloc(rdx_context *ctx, const rdx_polygons *r,
                                                    rdx_array points, const rdx_join_options *opts,
                                                    rdx_result **out);

/* Segment intersection (LSI) of two layers' boundaries. */
typedef struct rdx_join_lsi_result {
  int64_t n_pairs;             /* sorted unique (r, s) feature pairs whose boundaries share at
                                  least one point (they cross, touch or overlap; closed edges) */
  int64_t *pairs;              /* 2 * n_pairs: r0, s0, r1, s1, ... ascending by (r, s) */
  int64_t n_points;            /* with want_points: the common points of intersecting edge pairs
                                  (one per pair; a collinear overlap gives both ends of the shared
                                  piece), with their feature pair, sorted by (r, s, x, y) and
                                  unique (a point met through several edge pairs of one feature
                                  pair, as at a shared vertex, is one row); 0 without */
  int64_t *point_pairs;        /* 2 * n_points: the (r, s) feature pair of each point */
  double *points;              /* 2 * n_points: x, y, each the exact intersection rounded to the
                                  nearest double (ties to even; -0 written as +0), the same bits on
                                  every backend */
  rdx_location where;          /* host for a cpu context, device otherwise */
} rdx_join_lsi_result;
/* Every edge of S as a ray through R's index (R's own, or a temporary one as
 * rdx_polygons_build_index says), each candidate edge pair decided exactly. The result is sized
 * from the data (nothing to guess, nothing dropped) and owned by raydex: free it with
 * rdx_join_lsi_free. Features without rings and empty layers meet nothing. Returns RDX_OK,
 * RDX_ERR_INVALID_ARGUMENT (out, r or s NULL; options out of range), RDX_ERR_MISUSE (a layer that
 * is not one, or of another context), RDX_ERR_UNSUPPORTED (want_points and more than 2^32 - 1
 * points before duplicates are removed), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA. On failure *out
 * is NULL and nothing is held; the layers are never changed. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_join_lsi(rdx_context *ctx, const rdx_polygons *r,
                                              const rdx_polygons *s, const rdx_join_options *opts,
                                              bool want_points, rdx_join_lsi_result **out);
/* Free an LSI result with the context that made it (NULL is accepted). Since 0.1. */
RDX_API void rdx_join_lsi_free(rdx_context *ctx, rdx_join_lsi_result *result);

/* Polygon joins: the (r, s) feature pairs of two layers that satisfy a spatial predicate, the ones
 * PostGIS users write every day. Features are closed regions as defined above; the interior of a
 * feature is its region without its boundary. Exact on every backend, degenerate inputs included
 * (shared boundaries, collinear overlaps, features touching at one vertex, a feature inside a hole
 * of another). OVERLAY, CONTAINS and WITHIN read the side of an edge on which its feature lies, so
 * they are exact for features whose rings do not cross one another (rings may touch at points:
 * OGC-valid polygons and multipolygons, which GEOS and PostGIS take as their reference too). */
typedef enum rdx_join_predicate {
  RDX_JOIN_OVERLAY = 1,        /* the interiors share a point: ST_Relate(r, s, 'T********'),
                                  RayJoin's overlay */
  RDX_JOIN_INTERSECTS = 2,     /* the features share a point (boundaries or interiors):
                                  ST_Intersects */
  RDX_JOIN_CONTAINS = 3,       /* no point of s lies outside r: ST_Contains(r, s) */
  RDX_JOIN_WITHIN = 4,         /* no point of r lies outside s: ST_Within(r, s) */
  RDX_JOIN_BOXES = 5           /* the features' closed bounding boxes meet: the candidates of
                                  the others (PostGIS's && operator) */
} rdx_join_predicate;

typedef struct rdx_join_pairs_result {
  int64_t n_pairs;
  int64_t *pairs;              /* 2 * n_pairs: r0, s0, r1, s1, ... sorted ascending by (r, s),
                                  unique */
  double *areas;               /* RDX_JOIN_OVERLAY with want_areas: the area of each pair's
                                  intersection (f64, the pairs' order); else NULL */
  rdx_location where;          /* host for a cpu context, device otherwise */
} rdx_join_pairs_result;
/* The pairs of R's and S's features that satisfy the predicate, sized from the data and owned by
 * raydex (free with rdx_join_pairs_free). The joins are built from segment intersection and point
 * in polygon (RayJoin's overlay): every edge is located in the other layer by its first point,
 * moved an infinitesimal step along the edge and off it to either side, and the intersections
 * along it; so both layers get a join index (their own, or a temporary one as
 * rdx_polygons_build_index says). want_areas (OVERLAY only) adds the area of each intersection,
 * computed in f64 from the exact pieces of the boundaries (intersection points rounded to the
 * nearest double). Features without rings and empty layers satisfy nothing. Returns RDX_OK,
 * RDX_ERR_INVALID_ARGUMENT (out, r or s NULL; an unknown predicate; want_areas with another
 * predicate; options out of range), RDX_ERR_MISUSE, RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA. On
 * failure *out is NULL and nothing is held; the layers are never changed. Since 0.1. */
RDX_API RDX_NODISCARD rdx_status rdx_join_polygons(rdx_context *ctx, const rdx_polygons *r,
                                                   const rdx_polygons *s, rdx_join_predicate predicate,
                                                   const rdx_join_options *opts, bool want_areas,
                                                   rdx_join_pairs_result **out);
/* Free a polygon join's result with the context that made it (NULL is accepted). Since 0.1. */
RDX_API void rdx_join_pairs_free(rdx_context *ctx, rdx_join_pairs_result *result);

/* ------------------------------------------------------------------------------------------ */
/* Distributed key indexes: a communicator and sharded indexes (since 0.2; issue 33)          */
/* ------------------------------------------------------------------------------------------ */

/*
 * A communicator joins one raydex context per rank into a group that builds and queries one index
 * together. A rank is either
 *  - an MPI process (rdx_comm_create_mpi: one rank per process, over the rank's own context of any
 *    backend). raydex.h includes no mpi.h: the caller hands over a pointer to its MPI_Comm, which
 *    is copied (MPI_Comm_dup), so raydex's messages never meet the caller's. MPI must be
 *    initialised by the caller (MPI_Init) and finalised after every communicator is destroyed.
 *    raydex moves host data only through MPI's own collectives (no transport of its own), and
 *    device data, when every rank's context is a GPU's on a GPU of its own and the build has NCCL
 *    (rdx_dist_info.nccl_built), from GPU to GPU through NCCL (started by rdx_comm_create_mpi; its
 *    own buffers, a few MiB per peer, are outside the context's memory account), else staged
 *    through the host; or
 *  - a thread of this process (rdx_comm_create_local: n communicators over n contexts, typically
 *    one per GPU, each used by its own thread as an MPI rank is used: NCCL's model of one thread
 *    per device). The ranks exchange host data through host memory all of them see, and device
 *    data from GPU to GPU (CUDA peer copies, over NVLink where present; the group enables peer
 *    access between its devices).
 * Where every rank's context is a GPU's and device data moves GPU to GPU (a local group, or MPI
 * with NCCL), sharded key builds, point lookups, their counts and range counts, and every query of
 * a distributed point index stay on the GPUs: only a few counts a rank pass through the host.
 * Elsewhere (and for the calls not named) the data is staged through the host; the answers are
 * the same.
 * Every rdx_dist_* call below works the same over either. A build without MPI
 * (rdx_dist_info.mpi_built false) has every call here: rdx_comm_create_mpi then returns
 * RDX_ERR_NO_BACKEND with a sentence; local groups work in every build.
 *
 * Collective calls. Every rdx_dist_* call that takes a communicator is collective: each rank of
 * the group makes it, in the same order, with its own arguments (its own share of the keys, its own
 * batch of queries). The calls agree before they act: a bad argument on one rank (a wrong dtype, a
 * NULL output, a row id RDX_MISS), a failure on one rank mid-call (memory past its context's limit,
 * a failure of its shard) and arguments that differ across ranks where they must be equal (the key
 * dtype, the kind and build options, whether row ids are given, the call itself, the index) make
 * the call fail on every rank with the same status, and every rank's context holds the same
 * sentence after its call's name: the rank that failed and why ("rdx_dist_index_lookup: rank 1:
 * rdx_index_lookup: ..."), or what the ranks disagree on ("...: the ranks disagree on the kind
 * (rank 0 sorted, rank 2 btree)").
 * Builds then hand back no index on any rank; queries never change the index. Two things cannot be
 * agreed on: a communicator handle that is not one (that rank returns at once, the others wait for
 * it, as MPI itself does), and a failure of MPI itself (RDX_ERR_INTERNAL with MPI's sentence; the
 * communicator should then be destroyed).
 *
 * Messages: a call's sentence lands in the context of the communicator (rdx_context_message).
 *
 * Sizes: an exchange may move any number of items; over MPI, what passes its int counts (2^31 - 1
 * items between two ranks or into one) travels as several messages.
 */
typedef struct rdx_comm rdx_comm;

/* What this build offers for several processes and GPUs: filled by rdx_dist_info_get. */
typedef struct rdx_dist_info {
  size_t size;                  /* sizeof(rdx_dist_info), set by the caller */
  bool mpi_built;               /* rdx_comm_create_mpi works (built with an MPI library) */
  bool nccl_built;              /* MPI ranks on GPUs of their own exchange device data through
                                   NCCL (built with CUDA, MPI and NCCL: CMake's RAYDEX_NCCL, and
                                   NCCL_ROOT, the system or the nvidia-nccl Python wheel; README) */
  char mpi_library[256];        /* MPI_Get_library_version's first line, "" without MPI */
  int mpi_rank;                 /* this process's rank in MPI_COMM_WORLD, and the world's size:
                                   from MPI when it is initialised, else from the launcher's
                                   environment (Open MPI's mpirun, PMI, PMIx, Slurm), else -1 */
  int mpi_size;                 /* 0 when mpi_rank is -1 */
  char nccl_version[32];        /* the loaded NCCL's version, "2.28.3"; "" without NCCL */
} rdx_dist_info;

/* Fill *info (info->size must be set). Never initialises MPI. Returns RDX_OK, or
 * RDX_ERR_INVALID_ARGUMENT for a NULL info or an info->size below this header's
 * sizeof(rdx_dist_info), and then *info is unchanged. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_info_get(rdx_dist_info *info);

/* Make a communicator over the MPI communicator *mpi_comm (a pointer to the caller's MPI_Comm, of
 * any size >= 1) and this rank's context ctx, which the communicator uses for every call and keeps
 * until rdx_comm_destroy. Collective over *mpi_comm (MPI_Comm_dup); the ranks' contexts may have
 * different backends. Returns RDX_OK, RDX_ERR_NO_BACKEND (built without MPI), RDX_ERR_INVALID_ARGUMENT
 * (mpi_comm or out NULL; MPI not initialised, or finalised; *mpi_comm is MPI_COMM_NULL),
 * RDX_ERR_HOST_OUT_OF_MEMORY, RDX_ERR_INTERNAL (MPI failed). On failure *out is NULL. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_comm_create_mpi(rdx_context *ctx, const void *mpi_comm, rdx_comm **out);
/* Make a group of n ranks in this process: comms[i] is rank i's communicator, over ctxs[i] (its
 * context for every call, kept until rdx_comm_destroy; n distinct contexts, of any backends and
 * devices). Not collective: one thread makes the group, then each rank's communicator is used by
 * one thread, and every rdx_dist_* call is made by all n threads together (a rank whose thread
 * never calls leaves the others waiting, as with MPI). Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT
 * (ctxs NULL or n < 1: no sentence; comms NULL; a ctxs[i] NULL; a context twice), RDX_ERR_MISUSE
 * (a ctxs[i] that is not a context), RDX_ERR_HOST_OUT_OF_MEMORY; on failure every comms[i] is
 * NULL, and the sentence is in ctxs[0] (none when ctxs[0] itself is not a context). Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_comm_create_local(rdx_context *const *ctxs, int n, rdx_comm **comms);
/* This rank's number in [0, size) and the group's size; -1 for a NULL or non-communicator
 * pointer. Since 0.2. */
RDX_API int rdx_comm_rank(const rdx_comm *comm);
RDX_API int rdx_comm_size(const rdx_comm *comm);
/* The context the communicator was made over; NULL for a NULL or non-communicator pointer.
 * Since 0.2. */
RDX_API rdx_context *rdx_comm_context(const rdx_comm *comm);
/* Destroy a communicator (MPI: MPI_Comm_free, collective, as MPI asks; a local group's ranks are
 * destroyed one by one, and the last frees the group). Destroy its indexes first. NULL is
 * accepted. Since 0.2. */
RDX_API void rdx_comm_destroy(rdx_comm *comm);

/*
 * A sharded key index: one logical key index whose (key, row) pairs are spread over the ranks,
 * each rank holding one shard, an ordinary rdx_index of the requested kind in its own context.
 * Answers are those of one rdx_index_build over every rank's keys: the same rows, in the same
 * order, with the same misses.
 *
 * Partitioning: hash indexes send a key to the rank that the low half of its 64-bit mix
 * (Murmur3's finaliser) picks; every other kind is range-partitioned by splitters chosen from a
 * sample of the keys (each rank samples in proportion to its keys, the samples are gathered, and
 * size - 1 of them split the sorted sample evenly), so shard r holds the keys in (splitter[r-1], splitter[r]]. Both send every
 * copy of a key to one shard, so duplicates never straddle a boundary; many copies of one key can
 * leave shards uneven (never wrong). The splitters stay fixed after the build.
 *
 * Row ids: given (u32 or u64, never RDX_MISS) and used as they are, or implied by position in the
 * concatenation of the ranks' keys in rank order: rank r's key i gets row offset_r + i, offset_r
 * being the number of keys on ranks 0..r-1 (an exclusive scan). Every rank must give row ids or
 * every rank must leave them implied. Inserted keys' implied rows go on from there
 * (rdx_dist_index_insert).
 */
typedef struct rdx_dist_index rdx_dist_index;

/* Build collectively from each rank's keys (u32 or u64, 1-D, any count, 0 included; host memory,
 * or device memory on GPU contexts) and row ids (rdx_no_array() for implied, else u32 or u64 of the
 * keys' count), with opts (may be NULL; equal on every rank, as the kind and the key dtype must
 * be). The pairs are exchanged all-to-all and each rank builds its shard with rdx_index_build.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (on any rank: what rdx_index_build refuses; arguments
 * that differ across ranks), RDX_ERR_UNSUPPORTED (the kind on a rank's backend; an exchange past
 * the limits above), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA, RDX_ERR_OPTIX, RDX_ERR_INTERNAL (MPI).
 * On failure *out is NULL on every rank and each context holds no more than before. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_build(rdx_comm *comm, rdx_array keys, rdx_array row_ids,
                                                      const rdx_build_options *opts, rdx_dist_index **out);
/* Destroy this rank's part of the index (local: no communication). NULL is accepted. Since 0.2. */
RDX_API void rdx_dist_index_destroy(rdx_dist_index *idx);
/* Keys in the whole index (every rank's shard); 0 for a NULL or non-index pointer. Since 0.2. */
RDX_API int64_t rdx_dist_index_count(const rdx_dist_index *idx);
/* This rank's shard, an ordinary index of its context that the distributed index owns (read it, do
 * not destroy or update it); NULL for a NULL or non-index pointer. Since 0.2. */
RDX_API const rdx_index *rdx_dist_index_shard(const rdx_dist_index *idx);

/* Batch queries, each rank with its own batch (any count, 0 included; host memory, or device
 * memory on GPU contexts), answered in that rank's order as rdx_index_* answers them:
 *  - rdx_dist_index_lookup: row_ids (u64, the batch's count) = the smallest row of each key, or
 *    RDX_MISS.
 *  - rdx_dist_index_lookup_count / rdx_dist_index_range_count: counts (u64) of rows per query.
 *  - rdx_dist_index_lookup_alloc / rdx_dist_index_range_alloc: every row per query, ascending, in
 *    a CSR result owned by raydex where the queries live (free with rdx_result_free and the
 *    communicator's context).
 * Each query goes to the shard that holds its key; a range [lo, hi] (bounds: (m, 2) in the key
 * dtype; lo > hi is empty) to every shard its interval meets, and the rows that come back are
 * merged in ascending order. Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (on any rank: what the
 * rdx_index_* call refuses; another call or another index on another rank), RDX_ERR_MISUSE (not a
 * distributed index, or one of another communicator), RDX_ERR_UNSUPPORTED (ranges of a hash
 * index; an exchange past the limits), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA, RDX_ERR_INTERNAL.
 * The index is never changed. Outputs are written only once every rank has its answers: on
 * failure *out is NULL on every rank and the other outputs are as they were (except for a copy
 * to device memory that fails on its own rank, RDX_ERR_CUDA, which leaves them unspecified).
 * Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_lookup(rdx_comm *comm, const rdx_dist_index *idx,
                                                       rdx_array queries, rdx_array row_ids);
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_lookup_count(rdx_comm *comm, const rdx_dist_index *idx,
                                                             rdx_array queries, rdx_array counts);
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_lookup_alloc(rdx_comm *comm, const rdx_dist_index *idx,
                                                             rdx_array queries, rdx_result **out);
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_range_count(rdx_comm *comm, const rdx_dist_index *idx,
                                                            rdx_array bounds, rdx_array counts);
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_range_alloc(rdx_comm *comm, const rdx_dist_index *idx,
                                                            rdx_array bounds, rdx_result **out);

/* Batch updates, collectively, each rank with its own batch (any count, 0 included; host memory,
 * or device memory on GPU contexts); the batch is the ranks' batches concatenated in rank order,
 * and the index changes as one rdx_index over every pair would under rdx_index_insert or
 * rdx_index_erase of that batch. Each key goes to the shard that holds it, as a lookup does (the
 * splitters stay those of the build).
 *  - rdx_dist_index_insert: keys of the index's key dtype; row_ids (u32 or u64, the keys' count,
 *    never RDX_MISS) or rdx_no_array() for implied rows: the batch's key j gets next_row + j, where
 *    next_row (rdx_dist_index_next_row) is the build's key count, grown by every insert's total
 *    whether its rows were given or not. Every rank gives row ids or every rank leaves them
 *    implied. Duplicates, and pairs already in the index, are added again.
 *  - rdx_dist_index_erase: every row of each key listed (duplicates and absent keys are fine) goes;
 *    *n_erased (may be NULL; 0 on failure) receives the pairs removed from the whole index, the
 *    same on every rank.
 * opts (may be NULL; its flags equal on every rank) as rdx_index_insert takes them: rx and cgrx
 * indexes take a non-empty batch only with RDX_UPDATE_REBUILD. Each shard the batch touches is
 * rebuilt aside with the batch applied, and swapped in only once every rank's is built (a rebuild
 * of each touched shard per batch, whatever its kind). Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (on
 * any rank: what the rdx_index_* call refuses; another call, index, dtype, row ids given or not,
 * or flags on another rank), RDX_ERR_MISUSE, RDX_ERR_UNSUPPORTED (rx, cgrx without
 * RDX_UPDATE_REBUILD; an exchange past the limits), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA,
 * RDX_ERR_INTERNAL. All or nothing: on failure every rank's shard, count, next_row and answers are
 * exactly as before, and each context holds no more than before. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_insert(rdx_comm *comm, rdx_dist_index *idx, rdx_array keys,
                                                       rdx_array row_ids, const rdx_update_options *opts);
RDX_API RDX_NODISCARD rdx_status rdx_dist_index_erase(rdx_comm *comm, rdx_dist_index *idx, rdx_array keys,
                                                      const rdx_update_options *opts, int64_t *n_erased);
/* The first implied row id of the next rdx_dist_index_insert (equal on every rank); 0 for a NULL
 * or non-index pointer. Since 0.2. */
RDX_API uint64_t rdx_dist_index_next_row(const rdx_dist_index *idx);

/*
 * A distributed point index (G-PICS on several ranks; issue 33): one logical point index whose
 * points are spread over the ranks, each rank holding one shard, an ordinary rdx_points of its own
 * context over the index's whole box. Answers are those of one rdx_points_build over every rank's
 * points: the same ids, in the same order (window, within and match: ascending ids; kNN: by
 * ascending distance, ties by ascending id, min(k, count) of them).
 *
 * Partitioning: the box (given in the options, else the tight box of every rank's points) is cut
 * into a 2^31 x 2^31 Morton grid; each rank owns a contiguous range of Morton codes, chosen from a
 * stratified sample of the points so that ranks hold about equal numbers of points (many points
 * in one cell all go to one rank: uneven, never wrong). The partition table (the "master tree":
 * the code ranges, each also as at most 64 blocks of the grid, and, per rank, its point count and
 * a box holding its points) is replicated on every rank; after moves a rank's box may be looser
 * than its points, never tighter.
 *
 * Ids: given (u32 or u64, unique over all ranks, never RDX_MISS) and kept as they are, or implied
 * by position in the concatenation of the ranks' points in rank order (rank r's point i gets
 * offset_r + i). Every rank gives ids or none does. The shard numbers its points its own way (its
 * ids are rdx_points ids: at the build, in the order of the index's ids; inserted and migrated
 * points after them); rdx_dist_points_shard_ids maps them to the index's ids.
 *
 * Queries: each rank its own batch, answered in its order. A window, within or match query goes
 * only to the ranks whose box and grid blocks it meets; a kNN query first to the rank owning its
 * location's code (or, when that rank holds no points, the nearest non-empty box), then to every
 * other rank whose box and blocks lie within the k-th distance found there; the candidates are
 * merged where the query came from. Option and argument rules are rdx_points_*'s, plus the collective rules above.
 */
typedef struct rdx_dist_points rdx_dist_points;

/* Build collectively from each rank's points ((n, 2) f32 or f64, any n, 0 included; host memory,
 * or device memory on GPU contexts) and ids (rdx_no_array() for implied, else u32 or u64 of n),
 * with opts (may be NULL; equal on every rank, as the dtype must be). The points go all-to-all to
 * the rank owning their code, which builds its shard with rdx_points_build over the index's box.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (on any rank: what rdx_points_build refuses; an id
 * given twice over all ranks, or RDX_MISS; arguments that differ across ranks),
 * RDX_ERR_UNSUPPORTED, RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA, RDX_ERR_INTERNAL (MPI). On failure
 * *out is NULL on every rank and each context holds no more than before. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_points_build(rdx_comm *comm, rdx_array points, rdx_array ids,
                                                       const rdx_points_options *opts, rdx_dist_points **out);
/* Destroy this rank's part (local: no communication). NULL is accepted. Since 0.2. */
RDX_API void rdx_dist_points_destroy(rdx_dist_points *dp);
/* Points in the whole index; 0 for a NULL or non-index pointer. Since 0.2. */
RDX_API int64_t rdx_dist_points_count(const rdx_dist_points *dp);
/* This rank's shard, an ordinary point index of its context owned by dp (read it, do not destroy
 * or update it); NULL for a NULL or non-index pointer. Since 0.2. */
RDX_API const rdx_points *rdx_dist_points_shard(const rdx_dist_points *dp);
/* The index's id of each shard id: *n (may be NULL) receives the shard's id_end, and the returned
 * array (owned by dp, valid until the next update or destroy) holds n entries, RDX_MISS for shard
 * ids no longer in the shard (erased, or moved to another rank). NULL for a NULL or non-index
 * pointer. Since 0.2. */
RDX_API const uint64_t *rdx_dist_points_shard_ids(const rdx_dist_points *dp, int64_t *n);
/* The replicated partition table's entry for a rank: its point count now and a box holding its
 * points (xmin, ymin, xmax, ymax; meaningless when the count is 0); either pointer may be NULL.
 * Returns RDX_OK, RDX_ERR_INVALID_ARGUMENT (dp NULL, rank outside the group), RDX_ERR_MISUSE (not
 * a distributed point index). Local. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_points_rank_info(const rdx_dist_points *dp, int rank,
                                                           int64_t *count, double box[4]);

/* Batch queries, each rank with its own batch (the rdx_points_query_alloc shapes, in the index's
 * dtype; host memory, or device memory on GPU contexts), query equal on every rank. The result is
 * a CSR result where the queries live, as rdx_points_query_alloc gives it for one index over all
 * points (free with rdx_result_free and the communicator's context). Returns RDX_OK,
 * RDX_ERR_INVALID_ARGUMENT (on any rank: what rdx_points_query_alloc refuses; another query type,
 * k, call or index on another rank), RDX_ERR_MISUSE, RDX_ERR_UNSUPPORTED (an exchange past the
 * limits), RDX_ERR_*_OUT_OF_MEMORY, RDX_ERR_CUDA, RDX_ERR_INTERNAL. The index never changes; on
 * failure *out is NULL on every rank. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_points_query_alloc(rdx_comm *comm, const rdx_dist_points *dp,
                                                             rdx_array queries, const rdx_points_query *query,
                                                             rdx_result **out);

/* Move points to new coordinates, collectively: each rank passes its own batch (ids u32 or u64 of
 * the index, 1-D; points (m, 2) of the index's dtype), and the call moves the concatenation of the
 * ranks' batches, wherever the points live. A point whose new place has a code another rank owns
 * migrates there (erased from its shard, inserted into the other). Refused on every rank, as
 * rdx_points_move refuses: an id unknown to every rank or erased, an id repeated anywhere in the
 * batch, NaN/inf, a point outside the box. Every rank sees the whole batch (it is gathered), so a
 * batch costs O(ranks x batch) traffic. All-or-nothing: on failure every rank's points and answers
 * are as before, except when undoing a step that succeeded fails itself (memory): that rank's
 * index is then marked damaged, and every later call on it fails on every rank; destroy it.
 * Returns what rdx_points_move returns, and RDX_ERR_INTERNAL (MPI). Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_points_move(rdx_comm *comm, rdx_dist_points *dp, rdx_array ids,
                                                      rdx_array points);
/* Insert points collectively: each rank its own batch ((m, 2) of the index's dtype); the
 * concatenation of the ranks' batches gets ids id_end, id_end + 1, ... in order, where id_end is the
 * index's count at build for implied ids, else 1 + the largest id given, and grows by each insert's
 * total. *first_id (may be NULL) receives the id of this rank's first point (of the ids its batch
 * would have had, for an empty batch) on success; it is not written on failure. Each point goes to
 * the rank owning its code. Refused as rdx_points_insert refuses it (NaN/inf, outside the box, ids
 * past 2^63). All-or-nothing as rdx_dist_points_move is. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_points_insert(rdx_comm *comm, rdx_dist_points *dp, rdx_array points,
                                                        uint64_t *first_id);
/* Erase points collectively: each rank passes ids (u32 or u64, 1-D) of points on any rank; the
 * batch is their concatenation. Refused as rdx_points_erase refuses it (an id unknown to every rank
 * or already erased, an id repeated anywhere in the batch). All-or-nothing as rdx_dist_points_move
 * is. Since 0.2. */
RDX_API RDX_NODISCARD rdx_status rdx_dist_points_erase(rdx_comm *comm, rdx_dist_points *dp, rdx_array ids);

#ifdef __cplusplus
}
#endif
#endif /* RAYDEX_H */
