/*
 * dist.h: raydex internals of the distributed layer: the communicator and its transport ops.
 *
 * A communicator is a rank of a group plus a transport: an ops table of the few collectives the
 * sharded indexes need (all-to-all of variable sizes, all-gather, broadcast, a minimum), so the
 * index code (keys.c, points.c) names no library. mpi.c is the MPI transport and local.c the transport of
 * ranks that are threads of one process; NCCL under MPI is mpi.c's second table, "mpi+nccl", whose
 * alltoallv_device is nccl.c's (STYLE rule 34's shape). Every collective moves host memory, except
 * alltoallv_device, which local.c offers when every rank's context is a GPU's, and mpi.c when
 * moreover each rank has a GPU of its own and NCCL is built; elsewhere the index code stages device
 * data through the host.
 *
 * Invariant: every rank of a group calls the same collectives in the same order; the index code
 * makes every decision that chooses a path from values all ranks hold (agreed statuses, gathered
 * descriptors), never from local values alone.
 */
#ifndef RDX_DIST_H
#define RDX_DIST_H

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RDX_COMM_MAGIC 0x5244434du       /* "RDCM" */
#define RDX_DIST_INDEX_MAGIC 0x52444449u /* "RDDI" */

typedef struct rdx_comm_ops {
  const char *name; /* "mpi", "mpi+nccl", "local" (rdx_dist_comm_transport) */
  /* Each rank sends send_counts[p] items of `item` bytes to rank p, packed in rank order in send,
   * and receives recv_counts[p] items from rank p, packed in rank order in recv; any counts (the
   * MPI transport splits what passes its int counts into several messages). */
  rdx_status (*alltoallv)(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                          const int64_t *recv_counts, size_t item);
  /* send[p] to rank p; recv[p] from rank p. */
  rdx_status (*alltoall_i64)(rdx_comm *comm, const int64_t *send, int64_t *recv);
  /* Every rank's `bytes` bytes at mine, in rank order into all (size * bytes). */
  rdx_status (*allgather)(rdx_comm *comm, const void *mine, void *all, size_t bytes);
  /* Every rank's counts[r] items (known to all) in rank order into all. */
  rdx_status (*allgatherv)(rdx_comm *comm, const void *mine, const int64_t *counts, void *all, size_t item);
  rdx_status (*bcast)(rdx_comm *comm, void *buf, size_t bytes, int root);
  /* *value = the minimum of every rank's *value. */
  rdx_status (*allreduce_min_int)(rdx_comm *comm, int *value);
  /* alltoallv's twin for device memory: send and recv in the device memory of each rank's GPU
   * context; returns when recv holds every item. send must be whole when the call begins (the
   * caller has waited for the kernels that wrote it): local.c's ranks pull their parts from the
   * others' buffers. NULL where the transport moves host memory only (then device data is staged
   * through the host). */
  rdx_status (*alltoallv_device)(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                 const int64_t *recv_counts, size_t item);
  void (*destroy)(rdx_comm *comm);
} rdx_comm_ops;

struct rdx_comm {
  uint32_t magic;            /* RDX_COMM_MAGIC while alive */
  rdx_context *ctx;          /* this rank's context: messages, memory account, shards; borrowed */
  int rank, size;            /* this rank in [0, size); size >= 1 */
  const rdx_comm_ops *ops;   /* the transport */
  void *impl;                /* the transport's state (mpi.c: the duplicated MPI_Comm) */
  int64_t n_live_indexes;    /* distributed indexes made over it and not destroyed */
  int64_t next_index_id;     /* serial of the next index built (equal on every rank, since builds
                                are collective): calls compare it to catch different indexes */
};

/* A communicator handle on entry: NULL is RDX_ERR_INVALID_ARGUMENT, a pointer without the magic
 * word RDX_ERR_MISUSE; neither has a context to write a sentence in, nor a group to tell. */
rdx_status rdx_comm_check(rdx_comm *comm);

/* Agree on a status: every rank passes its own; if any failed, every rank returns the status of
 * the lowest failing rank and every rank's context holds the same sentence, "<fn>: rank R: <that
 * rank's sentence>" (its own leading "<fn>: " dropped). A failed transport is returned as it is,
 * on the ranks where it failed. */
rdx_status rdx_comm_agree(rdx_comm *comm, const char *fn, rdx_status st);
/* A phase's end in the index code: st agreed over the ranks (rdx_comm_agree, with the caller's
 * comm and fn), and on failure `goto done`. */
#define RDX_DIST_AGREE(st)                 \
  do {                                     \
    (st) = rdx_comm_agree(comm, fn, (st)); \
    if ((st) != RDX_OK) goto done;         \
  } while (0)

/* ---- split.c: what the sharded indexes (keys.c, points.c) share ---- */

/* n items of `item` bytes of host scratch through ctx's account into *ptr (a pointer to a
 * pointer); RDX_ERR_HOST_OUT_OF_MEMORY with "<what>: ..." when n is negative or overflows size_t,
 * or past the account's limit. */
rdx_status rdx_dist_take(rdx_context *ctx, const char *what, void *ptr, int64_t n, size_t item);
/* qsort's comparison of two uint64_t. */
int rdx_dist_cmp_u64(const void *a, const void *b);
/* "u32", "u64", "i64", "f32", "f64", or "?" for an rdx_dtype. */
const char *rdx_dist_dtype_name(int32_t dtype);
/* The exclusive scan of counts[0 .. size): starts[p] = counts[0] + ... + counts[p-1]; returns the
 * sum of all. A rank's offset in the concatenation of the ranks' items is starts[rank]; a
 * destination's first slot in a send buffer grouped by destination is starts[p]. */
int64_t rdx_dist_scan(const int64_t *counts, int size, int64_t *starts);
/* Collective (size > 1): size - 1 ascending splitters of the values, from a stratified sample
 * (split.c's comment). rank_counts[r] is rank r's number of values (known to every rank), values
 * this rank's n of them, in any order. Agreed: a failure (memory) fails every rank alike; a failed
 * transport is returned as it is. Every rank gets the same splitters. */
rdx_status rdx_dist_splitters(rdx_comm *comm, const char *fn, const int64_t *rank_counts, const uint64_t *values,
                              int64_t n, uint64_t *splitters);
/* A CSR result of n queries (rdx_result_make) from answers on the host: counts[i] rows for query
 * i, their rows concatenated in rows; in device memory when `where` is RDX_DEVICE, else host. */
rdx_status rdx_dist_result(rdx_context *ctx, const char *fn, int64_t n, rdx_location where, const uint64_t *counts,
                           const uint64_t *rows, rdx_result **out);
/* Whether this rank can take a call's device path (gpu.cu, points_gpu.cu): a GPU context, a
 * transport that moves device memory, not forced through the host (rdx_dist_force_host), and at
 * most max_ranks ranks. Its word goes into the call's descriptor; the path is the minimum over the
 * ranks. */
int rdx_dist_gpu_capable(const rdx_comm *comm, int max_ranks);

/* ---- gpu.cu (nocuda.c without CUDA): the device half ---- */

/* The most ranks the device path routes to (a shard number is a byte on the device). */
#define RDX_DIST_GPU_MAX_RANKS 256

/* What rdx_dist_gpu_query answers. */
enum {
  RDX_DIST_GPU_LOOKUP = 0,     /* point lookups: the smallest row, or RDX_MISS */
  RDX_DIST_GPU_COUNT = 1,      /* point counts */
  RDX_DIST_GPU_RANGE_COUNT = 2 /* range counts: in is (n, 2) bounds; each range's pieces summed */
};

/* Point lookups, their counts or range counts (`what`) of a sharded key index, answered on the
 * GPUs: collective; every rank's context is a GPU's, comm's transport has alltoallv_device,
 * comm->size <= RDX_DIST_GPU_MAX_RANKS and in.count < 2^32 (the caller agrees on that first).
 * in: this rank's queries (host or device); out: u64 answers, written only when every rank has
 * its own. shard: this rank's shard; hashed and splitters route as route_hd.h (a range goes to
 * every shard from its lo's to its hi's). Agreed, but for a failed transport (returned as it is);
 * rdx_dist_exchange_ms gets the call's time in the two exchanges. */
rdx_status rdx_dist_gpu_query(rdx_comm *comm, const char *fn, const rdx_index *shard, int hashed,
                              const uint64_t *splitters, int what, rdx_array in, rdx_array out);
/* The device path of rdx_dist_index_build: collective, under the same conditions as
 * rdx_dist_gpu_query's (keys.c decides from the gathered descriptors). keys (u32 or u64) and rows
 * (u32 or u64, never RDX_MISS: checked by the caller; or no array for implied rows) in host or
 * device memory; rank_counts: every rank's number of keys, in rank order (implied rows number the
 * ranks' keys concatenated). Range kinds (hashed 0) on several ranks get size - 1 splitters, drawn
 * from a sorted sample of each rank's keys on its GPU (rdx_dist_splitters), into splitters (host);
 * the pairs are grouped by shard on the GPU, exchanged GPU to GPU, and the shard built with opts
 * from the received device arrays into *out, set only on success. Agreed, but for a failed
 * transport. Device memory: the rank's own inputs (a copy when they came in host memory, freed
 * once grouped), the grouped pairs and the received ones at the exchange; the received pairs and
 * the shard's build at the end. */
rdx_status rdx_dist_gpu_build(rdx_comm *comm, const char *fn, rdx_array keys, rdx_array rows,
                              const int64_t *rank_counts, int hashed, uint64_t *splitters,
                              const rdx_build_options *opts, rdx_index **out);
/* The most ranks the points device path routes to (a query's ranks are a 64-bit mask). */
#define RDX_DIST_GPU_POINTS_MAX_RANKS 64

/* What a rank's part of a distributed point index brings to the device path: its shard, the
 * partition table (host: boxes size x 4, rank_counts size, the index box, size - 1 splitters), and
 * in this GPU's memory l2g (shard id -> index id) and xy (the points' coordinates by shard id,
 * as doubles), both n_slots long; here: the shard's point count. */
typedef struct rdx_dist_gpu_points {
  const rdx_points *shard;
  const double *boxes, *box, *cover; /* cover: size x RDX_DIST_COVER_MAX x 4 (points_hd.h) */
  const int64_t *rank_counts, *n_cover;
  const uint64_t *splitters;
  const uint64_t *l2g;
  const double *xy;
  int64_t here;
  int ascending; /* l2g ascends over the ids still held */
} rdx_dist_gpu_points;

/* Queries of a distributed point index answered on the GPUs (points_gpu.cu): collective; every
 * rank's context is a GPU's, comm's transport has alltoallv_device, comm->size <=
 * RDX_DIST_GPU_POINTS_MAX_RANKS and in.count < 2^31 (the caller agrees on that first). in: this
 * rank's queries, (count, columns) of the index's dtype, host or device, checked here as points.c
 * checks them; query: normalized (size, and k 0 unless kNN). *out: the CSR result where `in`
 * lives, as one index over all points answers, set only when every rank has its own. */
rdx_status rdx_dist_gpu_points_query(rdx_comm *comm, const char *fn, const rdx_dist_gpu_points *gp,
                                     const rdx_points_query *query, rdx_array in, rdx_result **out);
/* A copy of n host 8-byte words in ctx's GPU memory (through the account) into *dev. */
rdx_status rdx_dist_gpu_upload(rdx_context *ctx, const char *fn, const void *host, int64_t n, void **dev);
/* n items of `item` bytes of device scratch (at least one item) through ctx's account into *ptr
 * (a pointer to a pointer), or a sentence naming fn. */
rdx_status rdx_dist_dev_take(rdx_context *ctx, const char *fn, void *ptr, int64_t n, size_t item);
/* Let every GPU of the group's contexts reach the others' memory (peer access, and access to
 * their memory pools) where the hardware allows it; best effort, since copies work without it.
 * reach[i]: the CUDA devices (bit d for device d < 64) whose memory ctxs[i]'s kernels may read,
 * its own included. */
void rdx_dist_peers_enable(rdx_context *const *ctxs, int n, uint64_t *reach);
/* One part of a device all-to-all that a rank pulls into its own GPU's memory: `bytes` bytes from
 * src, on CUDA device src_device, to dst. direct: ctx's kernels may read src (rdx_dist_peers_enable's
 * reach), so a kernel copies it; else a copy engine does (cudaMemcpyPeerAsync). */
typedef struct rdx_dist_part {
  void *dst;
  const void *src;
  size_t bytes;
  int src_device, direct;
} rdx_dist_part;
/* The most parts one rdx_dist_peer_pull takes. */
#define RDX_DIST_PULL_MAX 16
/* Pull n <= RDX_DIST_PULL_MAX parts at once on ctx's stream: the direct ones by one kernel whose
 * blocks read every peer at once (as NCCL's own kernels do), which keeps the links busier than
 * copy engines taking the parts in turn. */
rdx_status rdx_dist_peer_pull(rdx_context *ctx, const rdx_dist_part *parts, int n);
/* Wait for ctx's stream (the copies above). */
rdx_status rdx_dist_peer_wait(rdx_context *ctx);

/* The transport's half of rdx_dist_info_get (mpi.c, or nompi.c without MPI): mpi_built, the
 * library's name, and the world rank and size when MPI is initialised. */
void rdx_dist_mpi_info(rdx_dist_info *info);

/* ---- nccl.c (nonccl.c without NCCL): the device all-to-all of MPI ranks, for mpi.c ---- */

/* An NCCL communicator over the ranks of an MPI transport (nccl.c's state; opaque elsewhere). */
typedef struct rdx_nccl rdx_nccl;
/* Collective, from rdx_comm_create_mpi once comm's MPI transport works: *out gets an NCCL
 * communicator over comm's ranks when every rank's context is a GPU's on a GPU that no other rank
 * has (host names, PCI bus ids and UUIDs gathered through comm) and NCCL starts and connects on
 * every rank; otherwise NULL on every rank (agreed), and device data is staged through the host.
 * Fails (then *out is NULL) only when comm's transport fails. */
rdx_status rdx_dist_nccl_begin(rdx_comm *comm, rdx_nccl **out);
/* comm's alltoallv_device through nccl, on the context's stream; returns when recv holds every
 * item. RDX_ERR_INTERNAL (NCCL failed: nccl is then aborted, and the communicator should be
 * destroyed) or RDX_ERR_CUDA, with a sentence, on the ranks where it failed. */
rdx_status rdx_dist_nccl_alltoallv(rdx_comm *comm, rdx_nccl *nccl, const void *send, const int64_t *send_counts,
                                   void *recv, const int64_t *recv_counts, size_t item);
/* Collective (as MPI_Comm_free is): free nccl (NULL accepted). */
void rdx_dist_nccl_end(rdx_comm *comm, rdx_nccl *nccl);
/* rdx_dist_info_get's nccl_built and nccl_version. */
void rdx_dist_nccl_info(rdx_dist_info *info);

#ifdef __cplusplus
}
#endif

#endif /* RDX_DIST_H */
