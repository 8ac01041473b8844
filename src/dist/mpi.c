/*
 * mpi.c: the MPI transport of a communicator (rdx_comm_create_mpi) and the MPI half of
 * rdx_dist_info_get. Built only when CMake finds MPI (nompi.c stands in otherwise).
 *
 * The caller's communicator is duplicated, so raydex's collectives never match the caller's own
 * messages, and the copy returns errors (MPI_ERRORS_RETURN) instead of aborting the job, so an MPI
 * failure becomes RDX_ERR_INTERNAL with MPI's sentence. Items of any size travel as one contiguous
 * datatype of that many bytes, so counts are in items. MPI counts them in ints, and Open MPI 4 has
 * no large-count calls: an all-to-all past 2^31 - 1 items to a peer or in all becomes messages of
 * at most that many items each, sent and received point to point.
 *
 * Device memory moves through NCCL where nccl.c starts it (every rank a GPU context on a GPU of its
 * own): the communicator then has the second table, "mpi+nccl", whose alltoallv_device is NCCL's;
 * elsewhere the first, "mpi", without one, and the index code stages device data through the host.
 */
#include "dist/dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_state {
  MPI_Comm comm;   /* our duplicate of the caller's communicator */
  int *counts[4];  /* send counts, send displacements, receive counts, receive displacements:
                      size ints each, kept for the communicator's life so that an exchange needs
                      no allocation of its own */
  rdx_nccl *nccl;  /* NCCL over the same ranks (nccl.c), or NULL */
} mpi_state;

static rdx_status mpi_fail(rdx_comm *comm, const char *what, int err) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", err);
  return rdx_fail(comm->ctx, RDX_ERR_INTERNAL, "%s failed on rank %d of %d: %s", what, comm->rank, comm->size, text);
}

#define MPI_TRY(comm, what, call)                      \
  do {                                                 \
    int mpi_err_ = (call);                             \
    if (mpi_err_ != MPI_SUCCESS) return mpi_fail((comm), (what), mpi_err_); \
  } while (0)

static MPI_Comm handle(rdx_comm *comm) { return ((mpi_state *)comm->impl)->comm; }

/* A contiguous datatype of `item` bytes; the caller frees it. */
static rdx_status item_type(rdx_comm *comm, size_t item, MPI_Datatype *t) {
  if (item > INT_MAX) return rdx_fail(comm->ctx, RDX_ERR_UNSUPPORTED, "an item of %zu bytes is past MPI's int", item);
  MPI_TRY(comm, "MPI_Type_contiguous", MPI_Type_contiguous((int)item, MPI_BYTE, t));
  int err = MPI_Type_commit(t);
  if (err != MPI_SUCCESS) {
    MPI_Type_free(t);
    return mpi_fail(comm, "MPI_Type_commit", err);
  }
  return RDX_OK;
}

/* The all-to-all as point-to-point messages of at most `cap` items each (an exchange past MPI's
 * int counts): every receive posted first, then every send, then one wait. MPI delivers the
 * messages of one pair in the order sent, so a part's pieces land in order. */
static rdx_status alltoallv_messages(rdx_comm *comm, const char *send, const int64_t *send_counts, char *recv,
                                     const int64_t *recv_counts, size_t item, MPI_Datatype t, int64_t cap) {
  int64_t n = 0;
  for (int p = 0; p < comm->size; p++) n += (send_counts[p] + cap - 1) / cap + (recv_counts[p] + cap - 1) / cap;
  MPI_Request *req = (MPI_Request *)malloc((size_t)(n > 0 ? n : 1) * sizeof *req);
  if (req == NULL) return rdx_fail(comm->ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "all-to-all: no memory for %lld requests", (long long)n);
  int64_t k = 0;
  int err = MPI_SUCCESS;
  for (int pass = 0; pass < 2 && err == MPI_SUCCESS; pass++) { /* receives, then sends */
    const int64_t *counts = pass == 0 ? recv_counts : send_counts;
    size_t at = 0;
    for (int p = 0; p < comm->size && err == MPI_SUCCESS; p++) {
      for (int64_t done = 0; done < counts[p] && err == MPI_SUCCESS; done += cap) {
        int c = (int)(counts[p] - done < cap ? counts[p] - done : cap);
        char *buf = (pass == 0 ? recv : (char *)send) + at + (size_t)done * item;
        err = pass == 0 ? MPI_Irecv(buf, c, t, p, 0, handle(comm), &req[k])
                        : MPI_Isend(buf, c, t, p, 0, handle(comm), &req[k]);
        if (err == MPI_SUCCESS) k++;
      }
      at += (size_t)counts[p] * item;
    }
  }
  if (err != MPI_SUCCESS) { /* what was posted is cancelled; this rank's failure is reported */
    for (int64_t i = 0; i < k; i++) MPI_Cancel(&req[i]), MPI_Request_free(&req[i]);
    free(req);
    return mpi_fail(comm, "MPI_Isend/MPI_Irecv", err);
  }
  err = MPI_Waitall((int)k, req, MPI_STATUSES_IGNORE);
  free(req);
  return err == MPI_SUCCESS ? RDX_OK : mpi_fail(comm, "MPI_Waitall", err);
}

static rdx_status mpi_alltoallv(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                const int64_t *recv_counts, size_t item) {
  mpi_state *s = (mpi_state *)comm->impl;
  /* the most items one message may carry: MPI's int, or less where a test forces it */
  const int64_t cap = comm->ctx->force.dist_message_items > 0 ? comm->ctx->force.dist_message_items : INT_MAX;
  int64_t sd = 0, rd = 0;
  int large = 0;
  for (int p = 0; p < comm->size; p++) {
    large |= send_counts[p] > cap || recv_counts[p] > cap || sd > cap - send_counts[p] || rd > cap - recv_counts[p];
    sd += send_counts[p];
    rd += recv_counts[p];
  }
  /* every rank takes the same path, since the paths' messages do not match each other */
  MPI_TRY(comm, "MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, &large, 1, MPI_INT, MPI_LOR, s->comm));
  MPI_Datatype t;
  RDX_CHECK(item_type(comm, item, &t));
  rdx_status st = RDX_OK;
  if (large) {
    st = alltoallv_messages(comm, (const char *)send, send_counts, (char *)recv, recv_counts, item, t, cap);
  } else {
    for (int p = 0, d0 = 0, d1 = 0; p < comm->size; p++) {
      s->counts[0][p] = (int)send_counts[p];
      s->counts[1][p] = d0;
      s->counts[2][p] = (int)recv_counts[p];
      s->counts[3][p] = d1;
      d0 += (int)send_counts[p];
      d1 += (int)recv_counts[p];
    }
    /* MPI reads no byte of an empty buffer, but its pointer must still be one */
    static char none;
    int err = MPI_Alltoallv(send ? send : &none, s->counts[0], s->counts[1], t, recv ? recv : &none, s->counts[2],
                            s->counts[3], t, s->comm);
    if (err != MPI_SUCCESS) st = mpi_fail(comm, "MPI_Alltoallv", err);
  }
  MPI_Type_free(&t);
  return st;
}

static rdx_status mpi_alltoall_i64(rdx_comm *comm, const int64_t *send, int64_t *recv) {
  MPI_TRY(comm, "MPI_Alltoall", MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, handle(comm)));
  return RDX_OK;
}

static rdx_status mpi_allgather(rdx_comm *comm, const void *mine, void *all, size_t bytes) {
  if (bytes > INT_MAX) return rdx_fail(comm->ctx, RDX_ERR_UNSUPPORTED, "MPI_Allgather of %zu bytes a rank", bytes);
  MPI_TRY(comm, "MPI_Allgather", MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, handle(comm)));
  return RDX_OK;
}

static rdx_status mpi_allgatherv(rdx_comm *comm, const void *mine, const int64_t *counts, void *all, size_t item) {
  mpi_state *s = (mpi_state *)comm->impl;
  int64_t d = 0;
  for (int p = 0; p < comm->size; p++) {
    if (counts[p] > INT_MAX || d > INT_MAX - counts[p])
      return rdx_fail(comm->ctx, RDX_ERR_UNSUPPORTED, "MPI_Allgatherv of more than 2^31 - 1 items");
    s->counts[2][p] = (int)counts[p];
    s->counts[3][p] = (int)d;
    d += counts[p];
  }
  MPI_Datatype t;
  RDX_CHECK(item_type(comm, item, &t));
  static char none;
  int err = MPI_Allgatherv(mine ? mine : &none, s->counts[2][comm->rank], t, all ? all : &none, s->counts[2],
                           s->counts[3], t, s->comm);
  MPI_Type_free(&t);
  return err == MPI_SUCCESS ? RDX_OK : mpi_fail(comm, "MPI_Allgatherv", err);
}

static rdx_status mpi_bcast(rdx_comm *comm, void *buf, size_t bytes, int root) {
  if (bytes > INT_MAX) return rdx_fail(comm->ctx, RDX_ERR_UNSUPPORTED, "MPI_Bcast of %zu bytes", bytes);
  MPI_TRY(comm, "MPI_Bcast", MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, handle(comm)));
  return RDX_OK;
}

static rdx_status mpi_allreduce_min_int(rdx_comm *comm, int *value) {
  int in = *value;
  MPI_TRY(comm, "MPI_Allreduce", MPI_Allreduce(&in, value, 1, MPI_INT, MPI_MIN, handle(comm)));
  return RDX_OK;
}

static rdx_status mpi_alltoallv_device(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                       const int64_t *recv_counts, size_t item) {
  return rdx_dist_nccl_alltoallv(comm, ((mpi_state *)comm->impl)->nccl, send, send_counts, recv, recv_counts, item);
}

static void mpi_destroy(rdx_comm *comm) {
  mpi_state *s = (mpi_state *)comm->impl;
  if (s == NULL) return;
  rdx_dist_nccl_end(comm, s->nccl); /* NCCL first: it was started over this communicator's ranks */
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&s->comm); /* after MPI_Finalize nothing is left to free */
  free(s->counts[0]);
  free(s);
  comm->impl = NULL;
}

static const rdx_comm_ops mpi_ops = {
    .name = "mpi",
    .alltoallv = mpi_alltoallv,
    .alltoall_i64 = mpi_alltoall_i64,
    .allgather = mpi_allgather,
    .allgatherv = mpi_allgatherv,
    .bcast = mpi_bcast,
    .allreduce_min_int = mpi_allreduce_min_int,
    .alltoallv_device = NULL, /* device data is staged through the host */
    .destroy = mpi_destroy,
};

/* The same with NCCL's device all-to-all (the name is what rdx_dist_comm_transport reports). */
static const rdx_comm_ops mpi_nccl_ops = {
    .name = "mpi+nccl",
    .alltoallv = mpi_alltoallv,
    .alltoall_i64 = mpi_alltoall_i64,
    .allgather = mpi_allgather,
    .allgatherv = mpi_allgatherv,
    .bcast = mpi_bcast,
    .allreduce_min_int = mpi_allreduce_min_int,
    .alltoallv_device = mpi_alltoallv_device,
    .destroy = mpi_destroy,
};

rdx_status rdx_comm_create_mpi(rdx_context *ctx, const void *mpi_comm, rdx_comm **out) {
  static const char fn[] = "rdx_comm_create_mpi";
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = NULL;
  if (mpi_comm == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: mpi_comm is NULL (pass &comm)", fn);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: MPI is %s (call MPI_Init first)", fn,
                    finalized ? "finalized" : "not initialized");
  MPI_Comm given = *(const MPI_Comm *)mpi_comm;
  if (given == MPI_COMM_NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: *mpi_comm is MPI_COMM_NULL", fn);
  rdx_comm *c = (rdx_comm *)calloc(1, sizeof *c);
  mpi_state *s = (mpi_state *)calloc(1, sizeof *s);
  if (c == NULL || s == NULL) {
    free(c);
    free(s);
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for the communicator", fn);
  }
  c->ctx = ctx;
  c->ops = &mpi_ops;
  c->rank = 0;
  c->size = 1;
  /* The duplicate is collective: every rank reaches it, whatever it found above (a rank that
   * returned earlier had no usable communicator to tell the others with). */
  int err = MPI_Comm_dup(given, &s->comm);
  if (err != MPI_SUCCESS) {
    free(c);
    free(s);
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: MPI_Comm_dup failed: %s", fn, text);
  }
  c->impl = s;
  MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(s->comm, &c->rank);
  MPI_Comm_size(s->comm, &c->size);
  s->counts[0] = (int *)calloc((size_t)c->size * 4, sizeof(int));
  rdx_status st = s->counts[0] ? RDX_OK
                               : rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for %d ranks' counts", fn, c->size);
  for (int i = 1; i < 4 && s->counts[0]; i++) s->counts[i] = s->counts[0] + (size_t)i * (size_t)c->size;
  /* every rank hands back a communicator or none (the agreement needs no buffer of ours) */
  st = rdx_comm_agree(c, fn, st);
  /* then NCCL where every rank has a GPU of its own: agreed inside, so every rank takes the same
   * table; only a failure of MPI fails the communicator */
  if (st == RDX_OK) st = rdx_dist_nccl_begin(c, &s->nccl);
  if (st == RDX_OK && s->nccl != NULL) c->ops = &mpi_nccl_ops;
  if (st != RDX_OK) {
    mpi_destroy(c);
    free(c);
    return st;
  }
  c->magic = RDX_COMM_MAGIC;
  *out = c;
  return RDX_OK;
}

void rdx_dist_mpi_info(rdx_dist_info *info) {
  info->mpi_built = true;
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(v, &len) == MPI_SUCCESS) {
    v[strcspn(v, "\n,")] = '\0'; /* Open MPI's string goes on with its build details */
    snprintf(info->mpi_library, sizeof info->mpi_library, "%s", v);
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &info->mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &info->mpi_size);
  }
}

/* ---- the launcher's world, for the command line (bench_api.h) ---- */

static int world_ours; /* MPI_Init was this file's, so MPI_Finalize is too */

rdx_status rdx_dist_world_begin(rdx_context *ctx, rdx_comm **out) {
  RDX_CHECK(rdx_check_context(ctx));
  *out = NULL;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return rdx_fail(ctx, RDX_ERR_INTERNAL, "mpi: MPI_Init_thread failed");
    world_ours = 1;
  }
  MPI_Comm world = MPI_COMM_WORLD;
  return rdx_comm_create_mpi(ctx, &world, out);
}

void rdx_dist_world_end(rdx_comm *comm) {
  rdx_comm_destroy(comm);
  if (world_ours) MPI_Finalize();
  world_ours = 0;
}
