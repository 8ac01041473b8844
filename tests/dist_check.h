/*
 * dist_check.h: the harness of the distributed tests (tests/test_dist_*.c). One test body runs as
 * every rank of a group, launched either
 *  - as MPI processes under mpirun (built with MPI: the CTest entries <name>.np<R>), each rank over
 *    its own context and a communicator over MPI_COMM_WORLD (rdx_comm_create_mpi); or
 *  - as threads of one process, `--local N` (every build: the entries <name>.local.n<N>): N
 *    contexts of the --backend, rdx_comm_create_local over them, and one thread per rank.
 * A test file includes this header first (before keys_check.h and the like), writes its body as
 * `static void body(rdx_context *ctx)` and its main as `return dist_main(argc, argv, body);`. In
 * the body, rank_, size_ and comm_ are this rank's (per thread: _Thread_local), and check_same,
 * dist_sum_i64 and dist_abort are the collective checks. Without --local, an MPI build runs as MPI
 * (one process is an MPI singleton) and a build without MPI runs as `--local 1`.
 *
 * On a GPU backend rank r runs on GPU r modulo the GPUs visible, in either mode, so that two MPI
 * ranks on a machine of two GPUs exchange device data through NCCL (in a build with NCCL) and on a
 * machine of one share it (staged through the host). Each rank prints its communicator's transport
 * ("local", "mpi" or "mpi+nccl"); `--expect-nccl` makes MPI ranks fail unless it is "mpi+nccl",
 * or skip (77) where NCCL cannot be used: a build without it, or fewer GPUs than ranks.
 *
 * The checks between ranks never use the library's transport (that is what is under test): MPI's
 * own MPI_Allgather under mpirun, and in local mode a barrier and a table of slots of the harness's
 * own (dist_gather_).
 *
 * check.h keeps its generator, case name and failure label per thread and counts failures
 * atomically, so the ranks' threads use its macros as they are: dist_enter_ starts each rank's
 * generator at the run's seed (every rank draws the same sequence, as MPI ranks do), labels its
 * failure lines with the rank, and leaves the progress lines to rank 0.
 */
#ifndef RDX_DIST_CHECK_H
#define RDX_DIST_CHECK_H

#include <pthread.h>

#include "check.h"

#ifdef RDX_TEST_MPI
#include <mpi.h>
#endif

/* Internal (src/core/core.h): the n-th allocation of the context from now fails. */
void rdx_mem_fail_after(rdx_context *ctx, int64_t n);
/* Internal (src/bench_api.h): the communicator's transport, and this rank's time in the device
 * all-to-alls of its last sharded lookup (0 after one staged through the host). */
const char *rdx_dist_comm_transport(const rdx_comm *comm);
double rdx_dist_exchange_ms(const rdx_context *ctx);
/* Internal (src/bench_api.h): MPI all-to-alls in messages of at most `items` items (0: MPI's limit). */
void rdx_dist_force_message_items(rdx_context *ctx, int64_t items);

#define DIST_MAX_RANKS 7

static _Thread_local int rank_, size_;     /* this rank, and the group's size */
static _Thread_local rdx_comm *comm_;      /* this rank's communicator */
static int dist_local_;                    /* 0: MPI ranks; else the ranks of the local group */
static int dist_expect_nccl_;              /* --expect-nccl: MPI ranks must exchange through NCCL */

/* ---- the local group's barrier and slots (the harness's own, not the library's) ---- */

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived;
  uint64_t round;
  const void *slot[DIST_MAX_RANKS];
} dist_group_ = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, {0}};

static inline void dist_barrier_(void) {
  pthread_mutex_lock(&dist_group_.mu);
  if (++dist_group_.arrived == dist_local_) {
    dist_group_.arrived = 0;
    dist_group_.round++;
    pthread_cond_broadcast(&dist_group_.cv);
  } else {
    uint64_t round = dist_group_.round;
    while (round == dist_group_.round) pthread_cond_wait(&dist_group_.cv, &dist_group_.mu);
  }
  pthread_mutex_unlock(&dist_group_.mu);
}

/* Every rank's `bytes` bytes at mine, in rank order into all (size_ * bytes). */
static inline void dist_gather_(const void *mine, void *all, size_t bytes) {
  if (dist_local_) {
    dist_group_.slot[rank_] = mine;
    dist_barrier_();
    for (int r = 0; r < size_; r++) memcpy((char *)all + (size_t)r * bytes, dist_group_.slot[r], bytes);
    dist_barrier_();
    return;
  }
#ifdef RDX_TEST_MPI
  MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
#endif
}

/* ---- the collective checks ---- */

/* Stop every rank: MPI_Abort under MPI, exit in local mode. */
static inline void dist_abort(const char *why) {
  fprintf(stderr, "rank %d: %s\n", rank_, why);
#ifdef RDX_TEST_MPI
  if (!dist_local_) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  exit(1);
}

/* 1 when the ranks are MPI processes, 0 when they are threads of a local group. */
static inline int dist_mpi(void) { return !dist_local_; }

/* The sum of every rank's v. */
static inline int64_t dist_sum_i64(int64_t v) {
  int64_t all[DIST_MAX_RANKS], sum = 0;
  dist_gather_(&v, all, sizeof v);
  for (int r = 0; r < size_; r++) sum += all[r];
  return sum;
}

/* Every rank got the same status, and, for a failure, the same sentence after the name of the
 * rank's own call (ranks in different calls each name theirs). */
static inline void check_same(rdx_context *ctx, rdx_status st, const char *what) {
  struct {
    int st;
    char msg[240];
  } mine, all[DIST_MAX_RANKS];
  memset(&mine, 0, sizeof mine);
  mine.st = (int)st;
  if (st != RDX_OK) {
    const char *m = rdx_context_message(ctx), *colon = strstr(m, ": ");
    snprintf(mine.msg, sizeof mine.msg, "%s", colon ? colon + 2 : m);
  }
  dist_gather_(&mine, all, sizeof mine);
  for (int r = 0; r < size_; r++) {
    if (all[r].st != mine.st)
      CHECK_FAIL_("%s: rank %d returned %s, rank %d %s", what, rank_, rdx_status_name(st), r,
                  rdx_status_name((rdx_status)all[r].st));
    else if (strcmp(all[r].msg, mine.msg) != 0)
      CHECK_FAIL_("%s: rank %d says '%s', rank %d '%s'", what, rank_, mine.msg, r, all[r].msg);
  }
}

/* ---- scenarios ---- */

/* The ranks' shares of n items: rank r's is cut[r] .. cut[r + 1], cut[0] = 0, cut[size_] = n.
 * split 0: random cuts (uneven; drawn from the shared seed, so alike on every rank); 1: the last
 * rank gets nothing; 2: all on rank 0; 3: equal. */
static inline void dist_cuts(int64_t *cut, int64_t n, int split) {
  cut[0] = 0;
  cut[size_] = n;
  for (int r = 1; r < size_; r++) {
    if (split == 0) cut[r] = (int64_t)check_below((uint64_t)n + 1);
    else if (split == 1) cut[r] = r == size_ - 1 ? n : n * r / (size_ - 1);
    else if (split == 2) cut[r] = n;
    else cut[r] = n * r / size_;
  }
  for (int r = 1; r < size_; r++) /* sorted cuts: the random ones in any order */
    for (int q = r; q > 1 && cut[q - 1] > cut[q]; q--) {
      int64_t t = cut[q];
      cut[q] = cut[q - 1];
      cut[q - 1] = t;
    }
}

/* ---- the launcher ---- */

typedef void (*dist_body)(rdx_context *ctx);

typedef struct dist_rank_ {
  dist_body body;
  rdx_context *ctx;
  rdx_comm *comm;
  int rank;
} dist_rank_;

static inline void dist_enter_(int rank, int size, rdx_comm *comm) {
  rank_ = rank;
  size_ = size;
  comm_ = comm;
  check_seed_ = check_seed0_; /* check.h's state is per thread: this rank's */
  check_quiet_ = rank != 0;
  snprintf(check_who_, sizeof check_who_, ", rank %d of %d%s", rank, size, dist_local_ ? " (local)" : "");
  printf("rank %d of %d%s, transport %s\n", rank, size, dist_local_ ? " (local)" : "", rdx_dist_comm_transport(comm));
}

/* 1 when this rank's sharded point lookups must have taken the device path (keys.c's rule): GPU
 * contexts, a transport with a device all-to-all, and no --dist-host. */
static inline int dist_device_exchange(rdx_context *ctx) {
  const char *t = rdx_dist_comm_transport(comm_);
  return rdx_context_backend(ctx) != RDX_BACKEND_CPU && !check_dist_host_ && t != NULL &&
         (strcmp(t, "local") == 0 || strcmp(t, "mpi+nccl") == 0);
}

static inline void *dist_thread_(void *arg) {
  dist_rank_ *r = (dist_rank_ *)arg;
  dist_enter_(r->rank, dist_local_, r->comm);
  r->body(r->ctx);
  return NULL;
}

/* The GPUs visible (0 on the cpu backend's builds and machines without one). */
static inline int dist_gpus_(void) {
  rdx_info info;
  info.size = sizeof info;
  return rdx_info_get(&info) == RDX_OK ? info.n_gpus : 0;
}

/* A context like check_begin's, for rank r >= 1 of a local group (and MPI rank r on a GPU other
 * than 0): on GPU r modulo the GPUs visible, so a group spreads over a machine's GPUs (and shares
 * one where there is one). */
static inline rdx_context *dist_context_(int r) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = check_backend_;
  rdx_info info;
  info.size = sizeof info;
  if (check_backend_ != RDX_BACKEND_CPU && rdx_info_get(&info) == RDX_OK && info.n_gpus > 0) o.device = r % info.n_gpus;
  if (check_ring_) o.staging_bytes = CHECK_RING_BYTES;
  rdx_context *ctx = NULL;
  if (rdx_context_create(&o, &ctx) != RDX_OK) {
    fprintf(stderr, "cannot create a context for a local rank: %s\n", rdx_context_message(ctx));
    exit(1);
  }
  check_force(ctx);
  return ctx;
}

/* Run body as every rank (see the top of this file); the program's exit code. */
static inline int dist_main(int argc, char **argv, dist_body body) {
  int local = 0;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--local") == 0) local = atoi(argv[i + 1]);
  for (int i = 1; i < argc; i++) dist_expect_nccl_ |= strcmp(argv[i], "--expect-nccl") == 0;
#ifndef RDX_TEST_MPI
  if (local == 0) local = 1;
#endif
  if (local < 0 || local > DIST_MAX_RANKS) {
    fprintf(stderr, "--local takes 1 .. %d ranks\n", DIST_MAX_RANKS);
    return 1;
  }
  if (local == 0) {
#ifdef RDX_TEST_MPI
    int rank = 0, size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank_ = rank;
    if (size > DIST_MAX_RANKS) dist_abort("at most 7 ranks");
    rdx_context *ctx = check_begin(argc, argv);
    /* rank r on GPU r modulo the GPUs visible, as in a local group (check_begin's is on GPU 0) */
    int gpus = check_backend_ != RDX_BACKEND_CPU ? dist_gpus_() : 0;
    if (gpus > 0 && rank % gpus != 0) {
      rdx_context_destroy(ctx);
      ctx = dist_context_(rank);
    }
    MPI_Comm world = MPI_COMM_WORLD;
    rdx_comm *comm = NULL;
    if (rdx_comm_create_mpi(ctx, &world, &comm) != RDX_OK) {
      fprintf(stderr, "no communicator: %s\n", rdx_context_message(ctx));
      dist_abort("no communicator");
    }
    dist_enter_(rank, size, comm);
    if (dist_expect_nccl_ && strcmp(rdx_dist_comm_transport(comm), "mpi+nccl") != 0) {
      rdx_dist_info di;
      di.size = sizeof di;
      int built = rdx_dist_info_get(&di) == RDX_OK && di.nccl_built;
      if (!built || check_backend_ == RDX_BACKEND_CPU || gpus < size) { /* the same on every rank */
        printf("skipped: --expect-nccl needs NCCL built (%s), a GPU backend and a GPU per rank (%d visible for %d "
               "ranks)\n", built ? "yes" : "no", gpus, size);
        rdx_comm_destroy(comm);
        rdx_context_destroy(ctx);
        MPI_Finalize();
        return RDX_SKIP_CODE;
      }
      fprintf(stderr, "rank %d: --expect-nccl: the transport is %s with NCCL built and %d GPUs for %d ranks "
              "(NCCL_DEBUG=WARN shows NCCL's own reason)\n", rank, rdx_dist_comm_transport(comm), gpus, size);
      check_failures_++;
    }
    body(ctx);
    rdx_comm_destroy(comm);
    int rc = check_end(ctx);
    MPI_Finalize();
    return rc;
#endif
  }
  dist_local_ = local;
  rdx_context *ctxs[DIST_MAX_RANKS];
  rdx_comm *comms[DIST_MAX_RANKS];
  dist_rank_ ranks[DIST_MAX_RANKS];
  pthread_t threads[DIST_MAX_RANKS];
  ctxs[0] = check_begin(argc, argv);
  for (int r = 1; r < local; r++) ctxs[r] = dist_context_(r);
  if (rdx_comm_create_local(ctxs, local, comms) != RDX_OK) {
    fprintf(stderr, "no local group: %s\n", rdx_context_message(ctxs[0]));
    return 1;
  }
  for (int r = 0; r < local; r++) {
    ranks[r] = (dist_rank_){body, ctxs[r], comms[r], r};
    if (pthread_create(&threads[r], NULL, dist_thread_, &ranks[r]) != 0) {
      fprintf(stderr, "cannot start the thread of rank %d\n", r);
      exit(1);
    }
  }
  for (int r = 0; r < local; r++) pthread_join(threads[r], NULL);
  for (int r = 0; r < local; r++) rdx_comm_destroy(comms[r]);
  for (int r = 1; r < local; r++) {
    int64_t held = check_held(ctxs[r]);
    if (held != 0) {
      fprintf(stderr, "rank %d's context still holds %" PRId64 " bytes at the end\n", r, held);
      check_failures_++;
    }
    rdx_context_destroy(ctxs[r]);
  }
  return check_end(ctxs[0]);
}

#endif /* RDX_DIST_CHECK_H */
