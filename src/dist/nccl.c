/*
 * nccl.c: the device all-to-all of MPI ranks through NCCL (issue 33): when every rank of an MPI
 * communicator holds a GPU context on a GPU of its own, rdx_comm_create_mpi starts an NCCL
 * communicator over the same ranks and mpi.c's transport gains alltoallv_device, so the sharded
 * lookups' keys and answers go from GPU to GPU (NVLink, PCIe or the network, as NCCL finds them)
 * instead of through both hosts and MPI. Built only with CUDA, MPI and NCCL (nonccl.c stands in
 * otherwise). Plain C, since NCCL's API is; its CUDA is the stream the calls are queued on and the
 * reading of the rank's device (PCI bus id, UUID).
 *
 * Whether NCCL is used is agreed (dist.h's invariant): each rank gathers every rank's host name,
 * PCI bus id, UUID and NCCL version through the MPI transport and computes the same answer from
 * them. NCCL refuses two ranks on one GPU ("Duplicate GPU detected"; it compares host and bus id
 * as we do), so ranks that share a GPU keep the staged path, as do groups with a CPU context.
 * Starting NCCL (ncclGetUniqueId on rank 0, ncclCommInitRank on each) and a first exchange of one
 * byte between every pair of ranks, which makes NCCL connect them, each end in an agreement: a
 * rank where NCCL fails makes every rank drop it and stage through the host, with the reason sent
 * to the context's log_fn. Two failures cannot be agreed on: a rank that fails inside
 * ncclCommInitRank before the others reach it can leave them waiting there (as NCCL itself
 * would), and a failure in a later exchange aborts the NCCL communicator on the ranks that see it
 * (rdx_dist_nccl_alltoallv), which is then a failed transport, as a failure of MPI is.
 *
 * An exchange is one NCCL group of a ncclSend and a ncclRecv per peer with data (bytes, as
 * ncclChar), on the context's stream, then a wait for that stream that also watches NCCL's
 * asynchronous error, so that a peer's failure returns a status instead of waiting forever. NCCL's
 * own buffers (a few MiB per connected peer) are NCCL's allocations, outside the context's memory
 * account.
 */
#include "dist/dist.h"

#include <nccl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rdx_nccl {
  ncclComm_t comm; /* NULL once aborted after a failure */
};

/* What a rank tells the others about its GPU; memcmp-able (zero-filled). */
typedef struct gpu_id {
  char host[96];     /* gethostname, cut */
  char bus[32];      /* cudaDeviceGetPCIBusId: "0000:3b:00.0" */
  uint8_t uuid[16];  /* cudaDeviceProp.uuid */
  int32_t gpu;       /* 1: a GPU context whose bus id and UUID were read */
  int32_t version;   /* ncclGetVersion of the library this rank loaded */
} gpu_id;

/* A line for the context's log_fn (none without one): the library prints nothing itself. */
static void note(rdx_context *ctx, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void note(rdx_context *ctx, int level, const char *fmt, ...) {
  if (ctx->log_fn == NULL) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  ctx->log_fn(level, line, ctx->log_user);
}

static void read_id(rdx_context *ctx, gpu_id *me) {
  memset(me, 0, sizeof *me);
  int v = 0;
  if (ncclGetVersion(&v) == ncclSuccess) me->version = v;
  if (gethostname(me->host, sizeof me->host - 1) != 0) snprintf(me->host, sizeof me->host, "?");
  me->host[sizeof me->host - 1] = '\0'; /* gethostname need not end a cut name */
  if (!rdx_is_gpu(ctx)) return;
  struct cudaDeviceProp p;
  if (cudaDeviceGetPCIBusId(me->bus, (int)sizeof me->bus, ctx->device) == cudaSuccess &&
      cudaGetDeviceProperties(&p, ctx->device) == cudaSuccess) {
    memcpy(me->uuid, p.uuid.bytes, sizeof me->uuid);
    me->gpu = 1;
  }
  (void)cudaGetLastError(); /* an unreadable device only keeps NCCL out */
}

/* 0 when NCCL can serve these ranks (every one a GPU context, as agreed before the gather); else
 * the log level of the reason, written to why. A function of the gathered ids alone, so every rank
 * decides alike. */
static int decide(const gpu_id *all, int size, char *why, size_t cap) {
  for (int r = 1; r < size; r++)
    if (all[r].version != all[0].version) {
      snprintf(why, cap, "rank 0 loaded NCCL %d and rank %d NCCL %d", all[0].version, r, all[r].version);
      return RDX_LOG_WARN;
    }
  for (int r = 0; r < size; r++)
    for (int q = r + 1; q < size; q++)
      if ((strcmp(all[r].host, all[q].host) == 0 && strcmp(all[r].bus, all[q].bus) == 0) ||
          memcmp(all[r].uuid, all[q].uuid, sizeof all[r].uuid) == 0) {
        snprintf(why, cap, "ranks %d and %d share the GPU %s on %s (NCCL takes one rank per GPU)", r, q, all[r].bus,
                 all[r].host);
        return RDX_LOG_INFO;
      }
  return 0;
}

/* NCCL's failure as a status with a sentence; the communicator is aborted (NCCL's rule after an
 * error: it may hold a half-done operation), so every later exchange fails at once. */
static rdx_status nccl_fail(rdx_comm *comm, rdx_nccl *n, const char *what, ncclResult_t r) {
  const char *last = ncclGetLastError(n != NULL ? n->comm : NULL);
  rdx_status st = rdx_fail(comm->ctx, r == ncclUnhandledCudaError ? RDX_ERR_CUDA : RDX_ERR_INTERNAL,
                           "device all-to-all: %s failed on rank %d of %d: %s%s%s%s", what, comm->rank, comm->size,
                           ncclGetErrorString(r), last && *last ? " (" : "", last ? last : "", last && *last ? ")" : "");
  if (n != NULL && n->comm != NULL) {
    (void)ncclCommAbort(n->comm);
    n->comm = NULL;
  }
  return st;
}

/* Wait for the context's stream, watching NCCL's asynchronous error meanwhile: a peer that failed
 * or vanished shows there, while the stream would wait for its bytes forever. */
static rdx_status wait_exchange(rdx_comm *comm, rdx_nccl *n) {
  cudaStream_t s = (cudaStream_t)comm->ctx->stream;
  for (;;) {
    if (cudaStreamQuery(s) != cudaErrorNotReady) /* done, or a CUDA error that the sync words */
      return rdx_cuda_sync(comm->ctx, "device all-to-all: cudaStreamSynchronize");
    ncclResult_t a = ncclSuccess, r = ncclCommGetAsyncError(n->comm, &a);
    if (r != ncclSuccess) a = r;
    if (a != ncclSuccess && a != ncclInProgress) return nccl_fail(comm, n, "the NCCL exchange", a);
    sched_yield();
  }
}

rdx_status rdx_dist_nccl_alltoallv(rdx_comm *comm, rdx_nccl *n, const void *send, const int64_t *send_counts,
                                   void *recv, const int64_t *recv_counts, size_t item) {
  if (n->comm == NULL)
    return rdx_fail(comm->ctx, RDX_ERR_INTERNAL,
                    "device all-to-all: NCCL was aborted after an earlier failure on rank %d (destroy the communicator)",
                    comm->rank);
  rdx_cuda_make_current(comm->ctx);
  cudaStream_t s = (cudaStream_t)comm->ctx->stream;
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return nccl_fail(comm, n, "ncclGroupStart", r);
  size_t at_send = 0, at_recv = 0; /* byte offsets of peer p's items */
  for (int p = 0; p < comm->size && r == ncclSuccess; p++) {
    size_t sb = (size_t)send_counts[p] * item, rb = (size_t)recv_counts[p] * item;
    /* a pair with nothing to move is skipped on both sides alike (p's recv_counts[me] is my
     * send_counts[p]), so NCCL never waits for an operation the peer did not post */
    if (sb > 0) r = ncclSend((const char *)send + at_send, sb, ncclChar, p, n->comm, s);
    if (r == ncclSuccess && rb > 0) r = ncclRecv((char *)recv + at_recv, rb, ncclChar, p, n->comm, s);
    at_send += sb;
    at_recv += rb;
  }
  ncclResult_t end = ncclGroupEnd(); /* always closes the group, even after a failed post */
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) return nccl_fail(comm, n, "ncclSend/ncclRecv", r);
  return wait_exchange(comm, n);
}

/* One byte from every rank to every rank (itself included), so that NCCL connects each pair now,
 * where a failure still leaves the staged path, and not in the first query. RDX_OK or a status
 * with a sentence on this rank. */
static rdx_status connect_all(rdx_comm *comm, rdx_nccl *n) {
  static const char fn[] = "rdx_comm_create_mpi";
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  int64_t *ones = (int64_t *)malloc((size_t)size * sizeof *ones);
  if (ones == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for %d counts", fn, size);
  for (int p = 0; p < size; p++) ones[p] = 1;
  void *buf = NULL;
  rdx_cuda_make_current(ctx);
  rdx_status st = rdx_mem_alloc(ctx, fn, &buf, 2 * (size_t)size, RDX_DEVICE);
  if (st == RDX_OK && cudaMemsetAsync(buf, 0, 2 * (size_t)size, (cudaStream_t)ctx->stream) != cudaSuccess) {
    (void)cudaGetLastError();
    st = rdx_fail(ctx, RDX_ERR_CUDA, "%s: cudaMemsetAsync of the first exchange failed", fn);
  }
  if (st == RDX_OK) st = rdx_dist_nccl_alltoallv(comm, n, buf, ones, (char *)buf + size, ones, 1);
  rdx_mem_free(ctx, buf);
  free(ones);
  return st;
}

rdx_status rdx_dist_nccl_begin(rdx_comm *comm, rdx_nccl **out) {
  static const char fn[] = "rdx_comm_create_mpi";
  rdx_context *ctx = comm->ctx;
  const int size = comm->size;
  *out = NULL;
  gpu_id me;
  read_id(ctx, &me);
  gpu_id *all = (gpu_id *)calloc((size_t)size, sizeof *all);
  rdx_nccl *n = (rdx_nccl *)calloc(1, sizeof *n);
  /* the minimum of 0 (no memory), 1 (not a GPU context: a group of CPU ranks stops here) and 2 */
  int ok = all == NULL || n == NULL ? 0 : me.gpu ? 2 : 1;
  rdx_status st = comm->ops->allreduce_min_int(comm, &ok);
  if (st == RDX_OK && ok == 2) st = comm->ops->allgather(comm, &me, all, sizeof me);
  if (st != RDX_OK || ok < 2) { /* a failed transport, no memory somewhere, or a rank without a GPU */
    free(all);
    free(n);
    if (st == RDX_OK)
      note(ctx, ok ? RDX_LOG_DEBUG : RDX_LOG_WARN, "%s: NCCL not used: %s", fn,
           ok ? "a rank's context is not a GPU's (or its GPU could not be read)"
              : "a rank had no memory for the GPUs' ids");
    return st;
  }
  char why[256] = "";
  int level = decide(all, size, why, sizeof why);
  free(all);
  if (level != 0) {
    free(n);
    note(ctx, level, "%s: NCCL not used: %s; device data is staged through the host", fn, why);
    return RDX_OK;
  }

  /* rank 0's unique id to every rank */
  struct {
    ncclUniqueId id;
    int32_t ok;
    char why[124];
  } u;
  memset(&u, 0, sizeof u);
  if (comm->rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&u.id);
    u.ok = r == ncclSuccess;
    if (!u.ok) snprintf(u.why, sizeof u.why, "%s (%s)", ncclGetErrorString(r), ncclGetLastError(NULL));
  }
  st = comm->ops->bcast(comm, &u, sizeof u, 0);
  if (st != RDX_OK || !u.ok) {
    free(n);
    if (st == RDX_OK) note(ctx, RDX_LOG_WARN, "%s: NCCL not used: ncclGetUniqueId failed on rank 0: %s", fn, u.why);
    return st;
  }

  /* every rank starts NCCL on its context's device, then they agree */
  rdx_cuda_make_current(ctx);
  ncclResult_t r = ncclCommInitRank(&n->comm, size, u.id, comm->rank);
  ok = r == ncclSuccess;
  if (!ok) {
    note(ctx, RDX_LOG_WARN, "%s: ncclCommInitRank failed on rank %d of %d: %s (%s)", fn, comm->rank, size,
         ncclGetErrorString(r), ncclGetLastError(NULL));
    if (n->comm != NULL) (void)ncclCommAbort(n->comm); /* NCCL 2.28 frees it and hands back NULL */
    n->comm = NULL;
  }
  st = comm->ops->allreduce_min_int(comm, &ok);
  /* then connect every pair, and agree again */
  if (st == RDX_OK && ok) {
    rdx_status c = connect_all(comm, n);
    ok = c == RDX_OK;
    if (!ok) note(ctx, RDX_LOG_WARN, "%s: NCCL's first exchange failed on rank %d: %s", fn, comm->rank, ctx->message);
    st = comm->ops->allreduce_min_int(comm, &ok);
  }
  if (st != RDX_OK || !ok) {
    if (n->comm != NULL) (void)ncclCommAbort(n->comm); /* local: the others may not have one */
    free(n);
    if (st == RDX_OK)
      note(ctx, RDX_LOG_WARN, "%s: NCCL not used: it failed on a rank; device data is staged through the host", fn);
    return st;
  }
  note(ctx, RDX_LOG_INFO, "%s: NCCL %d carries the device all-to-all of %d ranks", fn, me.version, size);
  *out = n;
  return RDX_OK;
}

void rdx_dist_nccl_end(rdx_comm *comm, rdx_nccl *n) {
  if (n == NULL) return;
  if (n->comm != NULL) {
    rdx_cuda_make_current(comm->ctx);
    (void)ncclCommDestroy(n->comm); /* waits for the others' finalisation: every rank destroys */
  }
  free(n);
}

void rdx_dist_nccl_info(rdx_dist_info *info) {
  info->nccl_built = true;
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess || v <= 0) return;
  /* NCCL_VERSION(X, Y, Z): X * 1000 + Y * 100 + Z up to 2.8, X * 10000 + Y * 100 + Z after */
  int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  snprintf(info->nccl_version, sizeof info->nccl_version, "%d.%d.%d", major, minor, v % 100);
}
