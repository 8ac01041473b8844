/*
 * cmd_bench_gpus.c: `raydex bench keys --gpus N,...`: a sharded key index over N GPUs of this
 * process (rdx_comm_create_local, one thread and one cuda context per GPU), built and queried
 * with point lookups, beside one GPU's plain index; and the device all-to-all alone (issue 33's
 * strong and weak scaling and its exchange measurement; usage below).
 *
 * Inputs: n distinct keys (rank r builds from its slice of the generated keys, rows implied, so
 * the answer for key keys[i] is i) and m lookups drawn from the keys (hit ratio 1), each rank's
 * slice placed in its GPU's memory before any clock starts. --weak makes n and m per GPU. The
 * build is timed once (on the GPUs, or staged through the host with --host-path); lookups get one
 * warm-up, then the median of --reps runs; a run is timed on rank 0 between two barriers of all
 * ranks, so it is the slowest rank's time. check: every answer of the last run read back and
 * checked exactly (keys[answer] == query, since keys are distinct: "ok"), and the sharded
 * answers equal to the plain index's where both ran.
 *
 * --device-input: each rank makes its own keys and lookups on its GPU (rdx_dist_bench_*: key
 * number g is a bijection of g, so the keys are distinct), so a set larger than one GPU never sits
 * whole on one GPU or in this process's memory; the build's inputs are freed once it is built, and
 * each rank checks its answers on its GPU (answer == its key's row). No plain index is built; the
 * row gives the index's device bytes over all shards beside one GPU's memory (device 0's).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bench_api.h"

const char cli_bench_gpus_usage[] =
    "usage: raydex bench keys --gpus N[,N...] [--kind sorted] [--dtype u32|u64] [--n 2^27] [--lookups 2^28]\n"
    "                         [--weak] [--reps 3] [--seed 1] [--host-path] [--exchange BYTES]\n"
    "                         [--device-input [--given-rows]] [--load-factor F] [--header]\n"
    "A sharded key index over N GPUs of this process, one thread and one cuda context per GPU (GPU r\n"
    "gets rank r; N may exceed the GPUs, then ranks share them), built from --n distinct keys with\n"
    "implied rows and queried with --lookups point lookups drawn from the keys, each rank's share in\n"
    "its GPU's memory. --weak: --n and --lookups per GPU. Rows: one per N (path sharded: keys and\n"
    "answers move GPU to GPU; --host-path forces the path that stages through the host), and one\n"
    "for a plain index on GPU 0 (path index, N 1) over the same keys and lookups. Columns: build and\n"
    "lookup ms (median of --reps after one warm-up), lookups per second, exchange_ms (rank 0's time\n"
    "in the two all-to-alls of a lookup), speedup over the plain index, check (every answer exact),\n"
    "index_bytes (the shards' device bytes together) and gpu_bytes (one GPU's memory).\n"
    "--device-input: each rank makes its keys and lookups on its GPU (distinct keys, every lookup a\n"
    "hit, each answer checked on the GPU), so an index larger than one GPU can be built and queried;\n"
    "no plain index. --given-rows: u64 row ids (2^40 + the key's number) come with the keys.\n"
    "--load-factor: the hash kind's table load (default the library's, 0.5).\n"
    "--exchange BYTES adds rows of the all-to-all alone (each rank sends BYTES in equal parts to\n"
    "every rank) with nccl-tests' bus bandwidth: BYTES / time x (N - 1) / N.\n"
    "Under mpirun with --exchange, each MPI rank takes GPU rank modulo the GPUs visible and only the\n"
    "all-to-all of the MPI communicator's transport is measured (path mpi+nccl where NCCL carries it,\n"
    "mpi where device data is staged through the host); rank 0 prints the row.\n";

/* --given-rows: key number g's row is g + ROW_BASE, past 2^32 so the rows are u64 */
#define ROW_BASE ((uint64_t)1 << 40)

typedef struct gpus_run {
  int n_ranks, rank_of_max;
  rdx_context *ctxs[64];
  rdx_comm *comms[64];
  rdx_dist_index *idx[64];
  rdx_array keys;            /* host, every key (not with --device-input) */
  void *key_dev[64];         /* each rank's keys on its GPU, until built */
  uint64_t *row_dev[64];     /* --given-rows: their rows */
  void *q_dev[64];           /* each rank's lookups on its GPU */
  void *out_dev[64];         /* its answers */
  int64_t key_from[65], q_from[65];
  rdx_array q;               /* host, every lookup (not with --device-input) */
  rdx_dtype dtype;
  rdx_kind kind;
  int reps, host_path, device_input;
  double load_factor;        /* the build options' (0: the library's default) */
  uint64_t seed, row_base;
  int64_t exchange_bytes;
  pthread_barrier_t bar;
  double build_ms[64], lookup_ms[64], exchange_ms[64], probe_ms[64];
  int64_t wrong[64];         /* --device-input: answers this rank found wrong */
  int64_t index_bytes[64];   /* this rank's shard's device bytes */
  rdx_status st[64];
} gpus_run;

typedef struct { gpus_run *run; int rank; } rank_arg;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static rdx_array slice(rdx_array a, int64_t from, int64_t to) {
  rdx_array s = a;
  s.data = (char *)a.data + (size_t)from * rdx_dtype_size(a.dtype);
  s.count = to - from;
  return s;
}

/* After a local step (no collective) on every rank: 1 when some rank failed it, so that every
 * rank stops before the next collective instead of waiting there for one that left. */
static int any_failed(gpus_run *r) {
  pthread_barrier_wait(&r->bar);
  int failed = 0;
  for (int k = 0; k < r->n_ranks; k++) failed |= r->st[k] != RDX_OK;
  pthread_barrier_wait(&r->bar); /* every rank has read the statuses before any writes again */
  return failed;
}

/* One rank: build, a warm-up and --reps timed lookups, the probe; the times on every rank, the
 * wall times between barriers on rank 0. */
static void *rank_main(void *p) {
  rank_arg *ra = (rank_arg *)p;
  gpus_run *r = ra->run;
  int me = ra->rank;
  rdx_context *ctx = r->ctxs[me];
  rdx_comm *comm = r->comms[me];
  rdx_build_options o = RDX_BUILD_OPTIONS_INIT;
  o.kind = r->kind;
  o.load_factor = r->load_factor;
  rdx_dist_force_host(ctx, r->host_path);
  const int64_t nk = r->key_from[me + 1] - r->key_from[me], m = r->q_from[me + 1] - r->q_from[me];
  rdx_array keys = rdx_device_array(r->key_dev[me], nk, r->dtype);
  rdx_array rows = r->row_dev[me] != NULL ? rdx_device_array(r->row_dev[me], nk, RDX_U64) : rdx_no_array();
  pthread_barrier_wait(&r->bar);
  double t0 = rdx_now_ms();
  rdx_status st = rdx_dist_index_build(comm, keys, rows, &o, &r->idx[me]);
  pthread_barrier_wait(&r->bar);
  r->build_ms[me] = rdx_now_ms() - t0;
  /* the inputs go, leaving the GPU to the index and the lookups */
  rdx_free(ctx, r->key_dev[me], RDX_DEVICE), r->key_dev[me] = NULL;
  rdx_free(ctx, r->row_dev[me], RDX_DEVICE), r->row_dev[me] = NULL;
  if (st == RDX_OK) {
    int64_t resident = 0;
    st = rdx_index_bytes(ctx, rdx_dist_index_shard(r->idx[me]), &resident, NULL);
    r->index_bytes[me] = resident;
  }
  if (st == RDX_OK && r->device_input) {
    size_t qb = (size_t)(m ? m : 1) * rdx_dtype_size(r->dtype);
    st = rdx_malloc(ctx, &r->q_dev[me], qb, RDX_DEVICE);
    if (st == RDX_OK) st = rdx_malloc(ctx, &r->out_dev[me], (size_t)(m ? m : 1) * 8, RDX_DEVICE);
    if (st == RDX_OK) st = rdx_dist_bench_lookups(ctx, r->dtype, r->seed, r->key_from[r->n_ranks], (uint64_t)r->q_from[me], m, r->q_dev[me]);
  }
  r->st[me] = st;
  if (any_failed(r)) return NULL;
  rdx_array q = rdx_device_array(r->q_dev[me], m, r->dtype), out = rdx_device_array(r->out_dev[me], m, RDX_U64);
  double times[64], ex[64];
  for (int i = 0; st == RDX_OK && i <= r->reps; i++) {
    pthread_barrier_wait(&r->bar);
    t0 = rdx_now_ms();
    st = rdx_dist_index_lookup(comm, r->idx[me], q, out);
    pthread_barrier_wait(&r->bar);
    if (i > 0) times[i - 1] = rdx_now_ms() - t0, ex[i - 1] = rdx_dist_exchange_ms(ctx);
  }
  if (st == RDX_OK) {
    r->lookup_ms[me] = median(times, r->reps);
    r->exchange_ms[me] = median(ex, r->reps);
  }
  if (st == RDX_OK && r->device_input)
    st = rdx_dist_bench_check(ctx, r->seed, r->key_from[r->n_ranks], (uint64_t)r->q_from[me], m, (const uint64_t *)r->out_dev[me],
                              r->row_base, &r->wrong[me]);
  r->st[me] = st;
  if (any_failed(r)) return NULL;
  if (r->exchange_bytes > 0 && !r->host_path) {
    for (int i = 0; st == RDX_OK && i <= r->reps; i++) {
      st = rdx_dist_probe_exchange(comm, r->exchange_bytes, &times[i]);
    }
    if (st == RDX_OK) r->probe_ms[me] = median(times + 1, r->reps);
  }
  r->st[me] = st;
  return NULL;
}

/* `mpirun raydex bench keys --gpus N --exchange BYTES`: the device all-to-all of the MPI
 * communicator alone, one rank per process, rank 0 printing the row. */
static int exchange_mpi(const rdx_info *info, const char *device, int64_t bytes, int reps) {
  rdx_dist_info dist;
  dist.size = sizeof dist;
  if (rdx_dist_info_get(&dist) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_dist_info_get failed");
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CUDA;
  o.device = dist.mpi_rank % info->n_gpus;
  rdx_context *ctx = NULL;
  if (rdx_context_create(&o, &ctx) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "a context on GPU %d: %s", o.device, rdx_context_message(ctx));
  rdx_comm *comm = NULL;
  cli_must(ctx, rdx_dist_world_begin(ctx, &comm), "mpi");
  const int size = rdx_comm_size(comm);
  double times[64], t = 0;
  rdx_status st = RDX_OK;
  for (int i = 0; st == RDX_OK && i <= reps; i++) st = rdx_dist_probe_exchange(comm, bytes, &times[i]);
  cli_must(ctx, st, "the exchange");
  t = median(times + 1, reps);
  if (rdx_comm_rank(comm) == 0) {
    double part = (double)(bytes / size) * size;
    printf("exchange,%s,%d,%d,strong,alltoall-%s,,,,,%d,,%.3f,,,%lld,%.2f,,ok,,\n", device, info->n_gpus, size,
           rdx_dist_comm_transport(comm), reps, t, (long long)(bytes / size * size), part / (t * 1e-3) / 1e9 * (size - 1) / size);
  }
  rdx_dist_world_end(comm);
  rdx_context_destroy(ctx);
  return 0;
}

/* The plain index on one GPU over every key: build and lookup ms, and its answers on the host. */
static void plain_index(const gpus_run *r, rdx_context *ctx, double *build_ms, double *lookup_ms, uint64_t *answers) {
  rdx_build_options o = RDX_BUILD_OPTIONS_INIT;
  o.kind = r->kind;
  o.load_factor = r->load_factor;
  size_t kb = (size_t)r->keys.count * rdx_dtype_size(r->keys.dtype), qb = (size_t)r->q.count * rdx_dtype_size(r->q.dtype);
  void *k = NULL, *q = NULL, *out = NULL;
  cli_must(ctx, rdx_malloc(ctx, &k, kb ? kb : 1, RDX_DEVICE), "keys on the GPU");
  cli_must(ctx, rdx_copy(ctx, k, RDX_DEVICE, r->keys.data, RDX_HOST, kb), "keys to the GPU");
  rdx_index *idx = NULL;
  double t0 = rdx_now_ms();
  cli_must(ctx, rdx_index_build(ctx, rdx_device_array(k, r->keys.count, r->keys.dtype), rdx_no_array(), &o, &idx), "build");
  *build_ms = rdx_now_ms() - t0;
  rdx_free(ctx, k, RDX_DEVICE);
  cli_must(ctx, rdx_malloc(ctx, &q, qb ? qb : 1, RDX_DEVICE), "lookups on the GPU");
  cli_must(ctx, rdx_malloc(ctx, &out, (size_t)(r->q.count ? r->q.count : 1) * 8, RDX_DEVICE), "answers on the GPU");
  cli_must(ctx, rdx_copy(ctx, q, RDX_DEVICE, r->q.data, RDX_HOST, qb), "lookups to the GPU");
  rdx_array qa = rdx_device_array(q, r->q.count, r->q.dtype), oa = rdx_device_array(out, r->q.count, RDX_U64);
  double times[64];
  for (int i = 0; i <= r->reps; i++) {
    t0 = rdx_now_ms();
    cli_must(ctx, rdx_index_lookup(ctx, idx, qa, oa), "lookup");
    if (i > 0) times[i - 1] = rdx_now_ms() - t0;
  }
  *lookup_ms = median(times, r->reps);
  cli_must(ctx, rdx_copy(ctx, answers, RDX_HOST, out, RDX_DEVICE, (size_t)r->q.count * 8), "answers to the host");
  rdx_free(ctx, q, RDX_DEVICE);
  rdx_free(ctx, out, RDX_DEVICE);
  rdx_index_destroy(idx);
}

static uint64_t key_at(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}

/* Every answer exact: keys are distinct and every lookup is a key, so answer i must be the row
 * whose key is q[i]. Returns the number of wrong answers. */
static int64_t wrong_answers(rdx_array keys, rdx_array q, const uint64_t *answers) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < q.count; i++)
    wrong += answers[i] >= (uint64_t)keys.count || key_at(keys, (int64_t)answers[i]) != key_at(q, i);
  return wrong;
}

int cmd_bench_keys_gpus(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, argc, argv, cli_bench_gpus_usage);
  int64_t gpus_v[CLI_LIST];
  int n_g = cli_int_list(&a, "gpus", "1", 1, 64, gpus_v);
  rdx_kind kind = cli_parse_kind("kind", cli_opt(&a, "kind") ? cli_opt(&a, "kind") : "sorted");
  rdx_dtype dtype = cli_choice(&a, "dtype", cli_key_dtypes, 2, 0) ? RDX_U64 : RDX_U32;
  int64_t n = cli_int(&a, "n", 1, dtype == RDX_U32 ? (int64_t)1 << 31 : (int64_t)1 << 40, (int64_t)1 << 27);
  int64_t m = cli_int(&a, "lookups", 1, (int64_t)1 << 40, (int64_t)1 << 28);
  int weak = cli_flag(&a, "weak");
  int reps = (int)cli_int(&a, "reps", 1, 63, 3);
  uint64_t seed = (uint64_t)cli_int(&a, "seed", 0, INT64_MAX, 1);
  int host_path = cli_flag(&a, "host-path");
  int64_t exchange = cli_int(&a, "exchange", 0, (int64_t)1 << 40, 0);
  int device_input = cli_flag(&a, "device-input");
  int given_rows = cli_flag(&a, "given-rows");
  double load_factor = cli_double(&a, "load-factor", 0.05, 0.95, 0.0);
  int header = cli_flag(&a, "header");
  cli_kind_fits(kind, RDX_BACKEND_CUDA, NULL);
  cli_args_done(&a);
  if (given_rows && !device_input) cli_die(CLI_EXIT_BAD_INPUT, "bench keys --gpus: --given-rows goes with --device-input");

  rdx_info info;
  info.size = sizeof info;
  if (rdx_info_get(&info) != RDX_OK) cli_die(CLI_EXIT_FAILURE, "rdx_info_get failed");
  if (info.n_gpus < 1) cli_die(CLI_EXIT_BAD_INPUT, "bench keys --gpus: backend cuda cannot run here: no GPU is visible");
  char device[160];
  snprintf(device, sizeof device, "%s", info.gpu_name);
  for (char *p = device; *p; p++)
    if (*p == ',') *p = ' ';
  rdx_dist_info dist;
  dist.size = sizeof dist;
  const int under_mpi = rdx_dist_info_get(&dist) == RDX_OK && dist.mpi_rank >= 0;
  if (header && (!under_mpi || dist.mpi_rank == 0))
    printf("bench,device,gpus_visible,gpus,scaling,path,kind,dtype,n_keys,lookups,reps,build_ms,lookup_ms,"
           "glookups_per_s,exchange_ms,exchange_bytes,busbw_gbs,speedup_vs_index,check,index_bytes,gpu_bytes\n");
  if (under_mpi) {
    if (exchange <= 0) cli_die(CLI_EXIT_BAD_INPUT, "bench keys --gpus under mpirun measures the exchange alone: give --exchange BYTES");
    return exchange_mpi(&info, device, exchange, reps);
  }

  rdx_context *gen = cli_context(RDX_BACKEND_CPU);
  const size_t es = rdx_dtype_size(dtype);
  for (int gi = 0; gi < n_g; gi++) {
    int g = (int)gpus_v[gi];
    int64_t n_all = weak ? n * g : n, m_all = weak ? m * g : m;
    if (dtype == RDX_U32 && n_all > ((int64_t)1 << 32)) cli_die(CLI_EXIT_BAD_INPUT, "bench keys --gpus: u32 keys are at most 2^32");
    gpus_run *r = (gpus_run *)calloc(1, sizeof *r);
    if (r == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
    r->n_ranks = g;
    r->dtype = dtype;
    r->kind = kind;
    r->reps = reps;
    r->host_path = host_path;
    r->device_input = device_input;
    r->load_factor = load_factor;
    r->seed = seed;
    r->row_base = given_rows ? ROW_BASE : 0;
    r->exchange_bytes = exchange;
    if (!device_input) {
      cli_progress("%d GPUs: generating %lld keys and %lld lookups", g, (long long)n_all, (long long)m_all);
      cli_must(gen, rdx_gen_keys(gen, n_all, dtype, RDX_DIST_UNIFORM, 1.0, seed, &r->keys), "keys");
      cli_must(gen, rdx_gen_lookups(gen, r->keys, m_all, 1.0, RDX_MISS_INSIDE, 0, seed + 1, &r->q), "lookups");
    }
    for (int k = 0; k <= g; k++) r->key_from[k] = n_all * k / g, r->q_from[k] = m_all * k / g;
    for (int k = 0; k < g; k++) {
      rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
      o.backend = RDX_BACKEND_CUDA;
      o.device = k % info.n_gpus;
      rdx_status st = rdx_context_create(&o, &r->ctxs[k]);
      if (st != RDX_OK) cli_die_status(r->ctxs[k], st, "a context per GPU");
      rdx_context *c = r->ctxs[k];
      int64_t nk = r->key_from[k + 1] - r->key_from[k], mk = r->q_from[k + 1] - r->q_from[k];
      cli_must(c, rdx_malloc(c, &r->key_dev[k], (size_t)(nk ? nk : 1) * es, RDX_DEVICE), "keys on the GPU");
      if (device_input) {
        /* made on the GPU; the lookups come once the keys are built and freed */
        if (given_rows) cli_must(c, rdx_malloc(c, (void **)&r->row_dev[k], (size_t)(nk ? nk : 1) * 8, RDX_DEVICE), "rows on the GPU");
        cli_must(c, rdx_dist_bench_keys(c, dtype, seed, (uint64_t)r->key_from[k], nk, r->key_dev[k], r->row_base, r->row_dev[k]),
                 "keys made on the GPU");
        continue;
      }
      cli_must(c, rdx_copy(c, r->key_dev[k], RDX_DEVICE, slice(r->keys, r->key_from[k], r->key_from[k + 1]).data, RDX_HOST,
                           (size_t)nk * es), "keys to the GPU");
      size_t qb = (size_t)(mk ? mk : 1) * es;
      cli_must(c, rdx_malloc(c, &r->q_dev[k], qb, RDX_DEVICE), "lookups on the GPU");
      cli_must(c, rdx_malloc(c, &r->out_dev[k], (size_t)(mk ? mk : 1) * 8, RDX_DEVICE), "answers");
      cli_must(c, rdx_copy(c, r->q_dev[k], RDX_DEVICE, slice(r->q, r->q_from[k], r->q_from[k + 1]).data, RDX_HOST,
                           (size_t)mk * es), "lookups to the GPU");
    }
    cli_must(r->ctxs[0], rdx_comm_create_local(r->ctxs, g, r->comms), "a local group");
    pthread_barrier_init(&r->bar, NULL, (unsigned)g);
    pthread_t th[64];
    rank_arg args[64];
    cli_progress("%d GPUs: building and looking up", g);
    for (int k = 0; k < g; k++) {
      args[k] = (rank_arg){r, k};
      if (pthread_create(&th[k], NULL, rank_main, &args[k]) != 0) cli_die(CLI_EXIT_FAILURE, "cannot start a thread");
    }
    for (int k = 0; k < g; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < g; k++)
      if (r->st[k] != RDX_OK) cli_die_status(r->ctxs[k], r->st[k], "the sharded index");
    int64_t wrong = 0, index_bytes = 0;
    for (int k = 0; k < g; k++) index_bytes += r->index_bytes[k];
    uint64_t *answers = NULL, *plain = NULL;
    if (device_input) {
      for (int k = 0; k < g; k++) wrong += r->wrong[k];
    } else {
      /* every answer, read back */
      answers = (uint64_t *)malloc((size_t)m_all * 8 + 8), plain = (uint64_t *)malloc((size_t)m_all * 8 + 8);
      if (answers == NULL || plain == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
      for (int k = 0; k < g; k++)
        cli_must(r->ctxs[k], rdx_copy(r->ctxs[k], answers + r->q_from[k], RDX_HOST, r->out_dev[k], RDX_DEVICE,
                                      (size_t)(r->q_from[k + 1] - r->q_from[k]) * 8), "answers to the host");
      wrong = wrong_answers(r->keys, r->q, answers);
    }
    for (int k = 0; k < g; k++) {
      rdx_dist_index_destroy(r->idx[k]);
      rdx_free(r->ctxs[k], r->q_dev[k], RDX_DEVICE);
      rdx_free(r->ctxs[k], r->out_dev[k], RDX_DEVICE);
      rdx_comm_destroy(r->comms[k]);
    }
    /* the plain index on GPU 0, over the same keys and lookups */
    double pb = 0, pl = 0;
    int same = 0;
    int64_t wrong_plain = 0;
    if (!device_input) {
      cli_progress("one GPU: the plain index");
      plain_index(r, r->ctxs[0], &pb, &pl, plain);
      same = memcmp(plain, answers, (size_t)m_all * 8) == 0;
      wrong_plain = wrong_answers(r->keys, r->q, plain);
    }
    for (int k = 0; k < g; k++) rdx_context_destroy(r->ctxs[k]);
    const char *scaling = weak ? "weak" : "strong";
    char check[96], speedup[32] = "";
    snprintf(check, sizeof check, "%s", device_input ? "ok" : same ? "ok;same-as-index" : "ok;DIFF-from-index");
    if (wrong) snprintf(check, sizeof check, "WRONG:%lld", (long long)wrong);
    if (!device_input) snprintf(speedup, sizeof speedup, "%.3f", pl / r->lookup_ms[0]);
    printf("keys-gpus,%s,%d,%d,%s,%s,%s,%s,%lld,%lld,%d,%.3f,%.3f,%.4f,%.3f,,,%s,%s,%lld,%lld\n", device, info.n_gpus, g,
           scaling, host_path ? "sharded-host" : device_input ? "sharded-device-input" : "sharded", rdx_kind_name(kind),
           cli_dtype_name(dtype), (long long)n_all, (long long)m_all, reps, r->build_ms[0], r->lookup_ms[0],
           (double)m_all / r->lookup_ms[0] / 1e6, r->exchange_ms[0], speedup, check, (long long)index_bytes,
           (long long)info.gpu_memory);
    if (device_input)
      fprintf(stderr, "bench keys --gpus %d: the index holds %.2f GB of device memory over %d GPUs, %.2fx one GPU's %.2f GB\n",
              g, (double)index_bytes / 1e9, g, (double)index_bytes / (double)info.gpu_memory, (double)info.gpu_memory / 1e9);
    if (!device_input)
      printf("keys-gpus,%s,%d,1,%s,index,%s,%s,%lld,%lld,%d,%.3f,%.3f,%.4f,,,,1.000,%s,,%lld\n", device, info.n_gpus, scaling,
             rdx_kind_name(kind), cli_dtype_name(dtype), (long long)n_all, (long long)m_all, reps, pb, pl,
             (double)m_all / pl / 1e6, wrong_plain ? "WRONG" : "ok", (long long)info.gpu_memory);
    if (exchange > 0 && !host_path) {
      double t = r->probe_ms[0], part = (double)(exchange / g) * g;
      printf("exchange,%s,%d,%d,%s,alltoall,,,,,%d,,%.3f,,,%lld,%.2f,,ok,,\n", device, info.n_gpus, g, scaling, reps, t,
             (long long)(exchange / g * g), part / (t * 1e-3) / 1e9 * (g - 1) / g);
    }
    fflush(stdout);
    pthread_barrier_destroy(&r->bar);
    free(answers);
    free(plain);
    rdx_npy_free(&r->keys);
    rdx_npy_free(&r->q);
    free(r);
  }
  cli_context_close(gen);
  return 0;
}
