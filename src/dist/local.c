/*
 * local.c: the in-process transport (rdx_comm_create_local): n ranks of one process, one thread
 * per rank, each over its own context (a GPU's, or a CPU context), exchanging host data through
 * host memory they all see and, when every context is a GPU's, device data from GPU to GPU
 * (gpu.cu pulls the parts with one kernel reading the peers, over NVLink where the GPUs have it;
 * peer access is enabled at creation).
 *
 * Every collective has the same shape: each rank publishes its buffer (and counts) in its slot of
 * the group's table; a barrier; each rank copies what is addressed to it straight out of the
 * others' buffers, so an exchange costs one copy and the ranks copy in parallel; a second barrier,
 * after which every buffer may be reused. The mutex of the barrier orders the slots' writes
 * before the reads.
 *
 * A group belongs to its n communicators; the last one destroyed frees it. Nothing here can fail
 * once the group exists, so a collective fails only by a mismatch the index code never makes
 * (counts that do not pair up), which is still refused as RDX_ERR_INTERNAL after both barriers.
 */
#include "dist/dist.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct local_slot {
  const void *buf;        /* what this rank publishes for the collective under way */
  const int64_t *counts;  /* its send counts (alltoallv) or the ranks' counts (allgatherv) */
  int value;              /* allreduce_min_int's operand */
  int device;             /* the CUDA device of the rank's context (GPU contexts) */
  uint64_t reach;         /* the CUDA devices whose memory its kernels may read (GPU contexts) */
} local_slot;

typedef struct local_group {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n;              /* ranks */
  int arrived;        /* ranks at the barrier under way */
  uint64_t round;     /* barriers completed */
  int live;           /* communicators not yet destroyed */
  local_slot slot[];  /* one per rank */
} local_group;

static local_group *group(rdx_comm *comm) { return (local_group *)comm->impl; }

static void barrier(local_group *g) {
  pthread_mutex_lock(&g->mu);
  if (++g->arrived == g->n) {
    g->arrived = 0;
    g->round++;
    pthread_cond_broadcast(&g->cv);
  } else {
    uint64_t round = g->round;
    while (round == g->round) pthread_cond_wait(&g->cv, &g->mu);
  }
  pthread_mutex_unlock(&g->mu);
}

/* Both all-to-alls: each rank copies its items straight out of the others' send buffers, host
 * memory by memcpy or, on device, pulled from the others' GPUs into its own (rdx_dist_peer_pull:
 * one kernel reading every peer at once over NVLink where the GPUs have it, then a wait for it
 * before the second barrier). Starting with the next rank spreads the host copies over the ranks. */
static rdx_status exchange(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                           const int64_t *recv_counts, size_t item, int device) {
  local_group *g = group(comm);
  int me = comm->rank, mismatch = -1, m = 0;
  rdx_dist_part part[RDX_DIST_PULL_MAX];
  g->slot[me].buf = send;
  g->slot[me].counts = send_counts;
  barrier(g);
  rdx_status st = RDX_OK;
  for (int k = 0; k < g->n; k++) {
    int p = (me + k) % g->n;
    const int64_t *c = g->slot[p].counts;
    int64_t from = 0, at = 0; /* rank p's items for ranks before me; mine from ranks before p */
    for (int r = 0; r < me; r++) from += c[r];
    for (int r = 0; r < p; r++) at += recv_counts[r];
    const char *src = (const char *)g->slot[p].buf + (size_t)from * item;
    char *dst = (char *)recv + (size_t)at * item;
    const int dev = g->slot[p].device;
    if (c[me] != recv_counts[p]) mismatch = p;
    else if (c[me] > 0 && !device) memcpy(dst, src, (size_t)c[me] * item);
    else if (c[me] > 0)
      part[m++] = (rdx_dist_part){dst, src, (size_t)c[me] * item, dev, dev < 64 && (g->slot[me].reach >> dev & 1)};
    if (m == RDX_DIST_PULL_MAX || (k == g->n - 1 && m > 0)) {
      if (st == RDX_OK) st = rdx_dist_peer_pull(comm->ctx, part, m);
      m = 0;
    }
  }
  if (device && st == RDX_OK) st = rdx_dist_peer_wait(comm->ctx);
  barrier(g);
  if (st == RDX_OK && mismatch >= 0)
    return rdx_fail(comm->ctx, RDX_ERR_INTERNAL, "local all-to-all: rank %d expected other counts from rank %d",
                    me, mismatch);
  return st;
}

static rdx_status local_alltoallv(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                  const int64_t *recv_counts, size_t item) {
  return exchange(comm, send, send_counts, recv, recv_counts, item, 0);
}

static rdx_status local_alltoallv_device(rdx_comm *comm, const void *send, const int64_t *send_counts, void *recv,
                                         const int64_t *recv_counts, size_t item) {
  return exchange(comm, send, send_counts, recv, recv_counts, item, 1);
}

static rdx_status local_alltoall_i64(rdx_comm *comm, const int64_t *send, int64_t *recv) {
  local_group *g = group(comm);
  g->slot[comm->rank].buf = send;
  barrier(g);
  for (int p = 0; p < g->n; p++) recv[p] = ((const int64_t *)g->slot[p].buf)[comm->rank];
  barrier(g);
  return RDX_OK;
}

static rdx_status local_allgather(rdx_comm *comm, const void *mine, void *all, size_t bytes) {
  local_group *g = group(comm);
  g->slot[comm->rank].buf = mine;
  barrier(g);
  for (int p = 0; p < g->n; p++)
    if (bytes > 0) memcpy((char *)all + (size_t)p * bytes, g->slot[p].buf, bytes);
  barrier(g);
  return RDX_OK;
}

static rdx_status local_allgatherv(rdx_comm *comm, const void *mine, const int64_t *counts, void *all, size_t item) {
  local_group *g = group(comm);
  g->slot[comm->rank].buf = mine;
  barrier(g);
  int64_t at = 0;
  for (int p = 0; p < g->n; p++) {
    if (counts[p] > 0) memcpy((char *)all + (size_t)at * item, g->slot[p].buf, (size_t)counts[p] * item);
    at += counts[p];
  }
  barrier(g);
  return RDX_OK;
}

static rdx_status local_bcast(rdx_comm *comm, void *buf, size_t bytes, int root) {
  local_group *g = group(comm);
  if (comm->rank == root) g->slot[root].buf = buf;
  barrier(g);
  if (comm->rank != root && bytes > 0) memcpy(buf, g->slot[root].buf, bytes);
  barrier(g);
  return RDX_OK;
}

static rdx_status local_allreduce_min_int(rdx_comm *comm, int *value) {
  local_group *g = group(comm);
  g->slot[comm->rank].value = *value;
  barrier(g);
  int m = g->slot[0].value;
  for (int p = 1; p < g->n; p++)
    if (g->slot[p].value < m) m = g->slot[p].value;
  barrier(g);
  *value = m;
  return RDX_OK;
}

static void local_destroy(rdx_comm *comm) {
  local_group *g = group(comm);
  if (g == NULL) return;
  comm->impl = NULL;
  pthread_mutex_lock(&g->mu);
  int last = --g->live == 0;
  pthread_mutex_unlock(&g->mu);
  if (!last) return;
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

void rdx_dist_force_host(rdx_context *ctx, int on) { ctx->force.dist_host = on != 0; }
void rdx_dist_force_message_items(rdx_context *ctx, int64_t items) {
  ctx->force.dist_message_items = items > 0 ? items : 0;
}

static const rdx_comm_ops local_ops = {
    .name = "local",
    .alltoallv = local_alltoallv,
    .alltoall_i64 = local_alltoall_i64,
    .allgather = local_allgather,
    .allgatherv = local_allgatherv,
    .bcast = local_bcast,
    .allreduce_min_int = local_allreduce_min_int,
    .alltoallv_device = local_alltoallv_device,
    .destroy = local_destroy,
};

rdx_status rdx_comm_create_local(rdx_context *const *ctxs, int n, rdx_comm **comms) {
  static const char fn[] = "rdx_comm_create_local";
  if (ctxs == NULL || n < 1) return RDX_ERR_INVALID_ARGUMENT; /* no context to write a sentence in */
  RDX_CHECK(rdx_check_context(ctxs[0]));
  rdx_context *ctx = ctxs[0];
  if (comms == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: comms is NULL", fn);
  for (int i = 0; i < n; i++) comms[i] = NULL;
  for (int i = 1; i < n; i++) {
    rdx_status st = rdx_check_context(ctxs[i]);
    if (st != RDX_OK) return rdx_fail(ctx, st, "%s: ctxs[%d] is not a live context", fn, i);
  }
  /* a context serves one thread at a time, and every rank's thread runs at once */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (ctxs[i] == ctxs[j])
        return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ctxs[%d] and ctxs[%d] are the same context (one per rank)",
                        fn, j, i);
  local_group *g = (local_group *)calloc(1, sizeof *g + (size_t)n * sizeof(local_slot));
  int made = 0; /* communicators allocated one by one, since rdx_comm_destroy frees one at a time */
  while (g != NULL && made < n && (comms[made] = (rdx_comm *)calloc(1, sizeof(rdx_comm))) != NULL) made++;
  if (made < n) {
    for (int i = 0; i < made; i++) free(comms[i]), comms[i] = NULL;
    free(g);
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for a group of %d ranks", fn, n);
  }
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->n = n;
  g->live = n;
  for (int i = 0; i < n; i++) {
    rdx_comm *c = comms[i];
    c->ctx = ctxs[i];
    c->rank = i;
    c->size = n;
    c->ops = &local_ops;
    c->impl = g;
    c->magic = RDX_COMM_MAGIC;
    g->slot[i].device = ctxs[i]->device;
  }
  int gpus = 1;
  for (int i = 0; i < n; i++) gpus &= rdx_is_gpu(ctxs[i]);
  uint64_t *reach = gpus ? (uint64_t *)calloc((size_t)n, sizeof *reach) : NULL;
  if (reach != NULL) { /* without it (no memory), every device part goes by copy engine */
    rdx_dist_peers_enable(ctxs, n, reach);
    for (int i = 0; i < n; i++) g->slot[i].reach = reach[i];
    free(reach);
  }
  return RDX_OK;
}
