/*
 * test_dist_points.c: distributed point indexes (rdx_dist_points_*), run by CTest as R = 1, 2, 3
 * ranks, under `mpirun -np R --oversubscribe` (built with MPI: dist_points.np1, .np2, .np3) and as R
 * threads of one process over rdx_comm_create_local (`--local R`: dist_points.local.n1, .n2, .n3);
 * the launcher and the checks between ranks are tests/dist_check.h's.
 *
 * Every rank draws the same global data from the shared seed (every rank's points, ids and query
 * batches), keeps its own share, and checks its answers against a brute-force oracle over all
 * ranks' points, as one rdx_points over them would answer (ids ascending; kNN by distance, then
 * id): uneven shares, an empty rank, every point on one rank, clustered points (one rank's box
 * tiny), integer grids (many equal distances, duplicates), given and implied ids, f32 and f64,
 * both kinds; windows spanning every rank, kNN with k past a rank's points, moves that migrate
 * points across ranks. Faults and mismatches: a memory fault walked through build, queries and
 * moves on one rank, bad and mismatched arguments; each must fail on every rank with the same
 * status and sentence, leave the index as it was and hold no memory.
 */
#include <math.h>

#include "dist_check.h"

/* The global points (as doubles of the dtype), their ids, and the ranks' shares cut[r] .. cut[r+1]. */
typedef struct scenario {
  const char *name;
  rdx_dtype dtype;
  int64_t n;
  double *xy;       /* 2n */
  uint64_t *ids;    /* n: the index's ids (given or implied) */
  int given;        /* ids given to the build */
  int64_t cut[8];
  int64_t cap;      /* rows xy and ids have room for (inserts) */
  unsigned char *live; /* cap: the row's point is in the index (erases clear it) */
} scenario;

static double draw_coord(int shape, rdx_dtype dt) {
  double v;
  if (shape == 1) v = (double)check_below(40);                          /* integer grid: ties */
  else if (shape == 2) v = check_below(10) ? 0.5 + (double)check_below(1000) * 1e-7 : (double)check_below(1000000) * 1e-6;
  /* far from the origin: a grid of 1/64 over a span of 64 at 10^9 (exact in f64; one value in f32),
   * so the Morton cells' rounding moves points by several cells and many lie on the edges of
   * the ranks' grid blocks (points_hd.h) */
  else if (shape == 3) v = 1e9 + (double)check_below(1u << 12) / 64.0;
  else v = (double)check_below(1u << 30) / (double)(1u << 30) * 200.0 - 100.0;
  return dt == RDX_F32 ? (double)(float)v : v;
}

/* shape 0: uniform, 1: integer grid, 2: clustered, 3: far from the origin; split: dist_cuts'
 * (dist_check.h) */
static void make_scenario(scenario *s, const char *name, rdx_dtype dt, int64_t n, int shape, int split, int given) {
  s->name = name;
  s->dtype = dt;
  s->n = n;
  s->given = given;
  s->cap = n + n / 4 + 16;
  s->xy = (double *)malloc((size_t)(2 * s->cap) * 8);
  s->ids = (uint64_t *)malloc((size_t)s->cap * 8);
  s->live = (unsigned char *)malloc((size_t)s->cap);
  memset(s->live, 1, (size_t)s->cap);
  for (int64_t i = 0; i < n; i++) {
    s->xy[2 * i] = draw_coord(shape, dt);
    s->xy[2 * i + 1] = draw_coord(shape, dt);
    s->ids[i] = given ? (uint64_t)(n - i) * 7919 + 1000000 : (uint64_t)i;
  }
  dist_cuts(s->cut, n, split);
}
static void free_scenario(scenario *s) {
  free(s->live);
  free(s->xy);
  free(s->ids);
}

/* count rows x cols doubles as the dtype (a fresh malloc) */
static void *as_dtype(const double *v, int64_t count, rdx_dtype dt) {
  void *p = malloc((size_t)(count + 1) * 8);
  for (int64_t i = 0; i < count; i++) {
    if (dt == RDX_F64) ((double *)p)[i] = v[i];
    else ((float *)p)[i] = (float)v[i];
  }
  return p;
}

static double d2(double px, double py, double qx, double qy) {
  double dx = px - qx, dy = py - qy;
  return dx * dx + dy * dy;
}

typedef struct cand {
  double d2;
  uint64_t id;
} cand;
static int cmp_cand(const void *a, const void *b) {
  const cand *x = (const cand *)a, *y = (const cand *)b;
  if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* The oracle's answer to query q (cols doubles) over the live points: ids into out (n entries
 * room), their number returned. */
static int64_t oracle(const scenario *s, const unsigned char *live, int type, int k, const double *q, uint64_t *out,
                      cand *tmp) {
  int64_t c = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (live && !live[i]) continue;
    double x = s->xy[2 * i], y = s->xy[2 * i + 1];
    int hit = 0;
    if (type == RDX_POINTS_MATCH) hit = x == q[0] && y == q[1];
    else if (type == RDX_POINTS_WINDOW) hit = q[0] <= x && x <= q[2] && q[1] <= y && y <= q[3];
    else if (type == RDX_POINTS_WITHIN) hit = d2(x, y, q[0], q[1]) <= q[2] * q[2];
    else hit = 1;
    if (hit) tmp[c++] = (cand){type == RDX_POINTS_KNN ? d2(x, y, q[0], q[1]) : 0.0, s->ids[i]};
  }
  qsort(tmp, (size_t)c, sizeof(cand), cmp_cand);
  if (type == RDX_POINTS_KNN && c > k) c = k;
  for (int64_t j = 0; j < c; j++) out[j] = tmp[j].id;
  return c;
}

static const char *tname(int t) {
  return t == RDX_POINTS_MATCH ? "match" : t == RDX_POINTS_WINDOW ? "window" : t == RDX_POINTS_WITHIN ? "within" : "knn";
}

/* One query type against the oracle, each rank with its own batch of m queries. */
static void check_type(rdx_context *ctx, const rdx_dist_points *dp, const scenario *s, const unsigned char *live, int type,
                       int k, int64_t m) {
  const int cols = type == RDX_POINTS_WINDOW ? 4 : type == RDX_POINTS_WITHIN ? 3 : 2;
  double *q = (double *)malloc((size_t)(m * size_ * cols + 1) * 8);
  const int f32 = s->dtype == RDX_F32;
  for (int64_t i = 0; i < m * size_; i++) {
    double *r = q + i * cols;
    int64_t pick = s->n ? (int64_t)check_below((uint64_t)s->n) : 0;
    r[0] = s->n && check_below(2) ? s->xy[2 * pick] : draw_coord((int)check_below(3), s->dtype);
    r[1] = s->n && check_below(2) ? s->xy[2 * pick + 1] : draw_coord((int)check_below(3), s->dtype);
    if (type == RDX_POINTS_WINDOW) {
      double w = check_below(3) == 0 ? 1e-6 : (double)check_below(60);
      r[2] = r[0] + w;
      r[3] = r[1] + (double)check_below(60);
      if (i % 7 == 0) r[0] = -200, r[1] = -200, r[2] = 200, r[3] = 200; /* every rank */
      if (i % 11 == 0) r[2] = r[0] - 1;                                  /* empty */
      if (f32) r[2] = (float)r[2], r[3] = (float)r[3], r[0] = (float)r[0], r[1] = (float)r[1];
    } else if (type == RDX_POINTS_WITHIN) {
      r[2] = check_below(5) == 0 ? 0.0 : (double)check_below(3000) * 0.01;
      if (i % 13 == 0) r[2] = 400;
      if (f32) r[2] = (float)r[2];
    } else if (type == RDX_POINTS_KNN && i % 9 == 0) {
      r[0] = 1000, r[1] = -1000; /* outside the box */
    }
  }
  double *mine = q + m * rank_ * cols;
  void *qa = as_dtype(mine, m * cols, s->dtype);
  rdx_points_query pq = RDX_POINTS_QUERY_INIT;
  pq.type = (rdx_points_query_type)type;
  pq.k = k;
  rdx_result *res = NULL;
  /* on a GPU, every other call passes its queries in device memory and gets the result there */
  static _Thread_local int calls_;
  void *dq = NULL;
  const int on_device = check_backend_ != RDX_BACKEND_CPU && calls_++ % 2 == 1;
  const size_t qbytes = (size_t)(m * cols) * (s->dtype == RDX_F32 ? 4 : 8);
  if (on_device) {
    CHECK_OK(ctx, rdx_malloc(ctx, &dq, qbytes, RDX_DEVICE));
    CHECK_OK(ctx, rdx_copy(ctx, dq, RDX_DEVICE, qa, RDX_HOST, qbytes));
  }
  rdx_status st = rdx_dist_points_query_alloc(comm_, dp, on_device ? rdx_device_matrix(dq, m, cols, s->dtype)
                                                                    : rdx_host_matrix(qa, m, cols, s->dtype), &pq, &res);
  CHECK_OK(ctx, st);
  if (st == RDX_OK && on_device) { /* the result's arrays to the host, to compare */
    CHECK(res->where == RDX_DEVICE);
    uint64_t *o = (uint64_t *)malloc((size_t)(m + 1) * 8), *r = (uint64_t *)malloc((size_t)(res->total + 1) * 8);
    CHECK_OK(ctx, rdx_copy(ctx, o, RDX_HOST, res->offsets, RDX_DEVICE, (size_t)(m + 1) * 8));
    CHECK_OK(ctx, rdx_copy(ctx, r, RDX_HOST, res->row_ids, RDX_DEVICE, (size_t)res->total * 8));
    rdx_result_free(ctx, res);
    res = (rdx_result *)calloc(1, sizeof *res);
    res->n_queries = m, res->total = o[m], res->offsets = o, res->row_ids = r, res->where = RDX_HOST;
  }
  rdx_free(ctx, dq, RDX_DEVICE);
  uint64_t *want = (uint64_t *)malloc((size_t)(s->n + 1) * 8);
  cand *tmp = (cand *)malloc((size_t)(s->n + 1) * sizeof(cand));
  for (int64_t i = 0; st == RDX_OK && i < m; i++) {
    int64_t c = oracle(s, live, type, k, mine + i * cols, want, tmp);
    uint64_t got = res->offsets[i + 1] - res->offsets[i];
    int bad = got != (uint64_t)c;
    for (int64_t j = 0; !bad && j < c; j++) bad = res->row_ids[res->offsets[i] + (uint64_t)j] != want[j];
    if (bad) {
      CHECK_FAIL_("%s %s k %d query %lld on rank %d (%g, %g, ...): %llu ids, oracle %lld (first %llu vs %llu)", s->name,
                  tname(type), k, (long long)i, rank_, mine[i * cols], mine[i * cols + 1], (unsigned long long)got, (long long)c,
                  got ? (unsigned long long)res->row_ids[res->offsets[i]] : 0ull, c ? (unsigned long long)want[0] : 0ull);
      break;
    }
  }
  if (on_device && res != NULL) {
    free(res->offsets), free(res->row_ids), free(res);
  } else {
    rdx_result_free(ctx, res);
  }
  free(want);
  free(tmp);
  free(qa);
  free(q);
}

static void check_all_types(rdx_context *ctx, const rdx_dist_points *dp, const scenario *s, const unsigned char *live,
                            int64_t m) {
  check_type(ctx, dp, s, live, RDX_POINTS_WINDOW, 0, m);
  check_type(ctx, dp, s, live, RDX_POINTS_WITHIN, 0, m);
  check_type(ctx, dp, s, live, RDX_POINTS_MATCH, 0, m);
  static const int ks[] = {1, 7, 300, 1024};
  for (int j = 0; j < 4; j++) check_type(ctx, dp, s, live, RDX_POINTS_KNN, ks[j], ks[j] > 100 ? m / 4 + 1 : m);
}

static rdx_status build(rdx_context *ctx, const scenario *s, rdx_points_kind kind, rdx_dist_points **dp) {
  const int64_t from = s->cut[rank_], count = s->cut[rank_ + 1] - from;
  void *p = as_dtype(s->xy + 2 * from, 2 * count, s->dtype);
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = kind;
  o.leaf_capacity = 8;
  rdx_status st = rdx_dist_points_build(comm_, rdx_host_matrix(p, count, 2, s->dtype),
                                        s->given ? rdx_host_array(s->ids + from, count, RDX_U64) : rdx_no_array(), &o, dp);
  (void)ctx;
  free(p);
  return st;
}

/* A batch of moves drawn from the shared seed: rank r moves the points of its rows
 * rows[bcut[r] .. bcut[r+1]) (distinct rows of the scenario, any rank's points) to new places
 * (often far, so they migrate); the scenario's coordinates follow once the call succeeds. */
typedef struct moves {
  int64_t total, bcut[8];
  int64_t *rows;
  double *to;
} moves;
static void draw_moves(const scenario *s, moves *mv, int64_t total) {
  mv->total = total < s->n ? total : s->n;
  mv->rows = (int64_t *)malloc((size_t)(s->n + 1) * 8);
  mv->to = (double *)malloc((size_t)(2 * mv->total + 2) * 8);
  for (int64_t i = 0; i < s->n; i++) mv->rows[i] = i;
  for (int64_t i = 0; i < mv->total; i++) { /* a partial shuffle: distinct rows */
    int64_t j = i + (int64_t)check_below((uint64_t)(s->n - i)), t = mv->rows[i];
    mv->rows[i] = mv->rows[j];
    mv->rows[j] = t;
    /* within the build's box: another point's place, or a mix of two */
    int64_t a = (int64_t)check_below((uint64_t)s->n), b = (int64_t)check_below((uint64_t)s->n);
    mv->to[2 * i] = s->xy[2 * a];
    mv->to[2 * i + 1] = check_below(2) ? s->xy[2 * a + 1] : s->xy[2 * b + 1];
  }
  mv->bcut[0] = 0;
  mv->bcut[size_] = mv->total;
  for (int r = 1; r < size_; r++) mv->bcut[r] = mv->total * r / size_;
  if (size_ > 1) mv->bcut[1] = 0; /* rank 0 moves nothing */
}
static rdx_status apply_moves(const scenario *s, const rdx_dist_points *dp, const moves *mv) {
  const int64_t from = mv->bcut[rank_], count = mv->bcut[rank_ + 1] - from;
  uint64_t *ids = (uint64_t *)malloc((size_t)(count + 1) * 8);
  for (int64_t i = 0; i < count; i++) ids[i] = s->ids[mv->rows[from + i]];
  void *p = as_dtype(mv->to + 2 * from, 2 * count, s->dtype);
  rdx_status st = rdx_dist_points_move(comm_, (rdx_dist_points *)dp, rdx_host_array(ids, count, RDX_U64),
                                       rdx_host_matrix(p, count, 2, s->dtype));
  free(ids);
  free(p);
  return st;
}
static void commit_moves(scenario *s, const moves *mv) {
  for (int64_t i = 0; i < mv->total; i++) {
    s->xy[2 * mv->rows[i]] = mv->to[2 * i];
    s->xy[2 * mv->rows[i] + 1] = mv->to[2 * i + 1];
  }
}
static void free_moves(moves *mv) {
  free(mv->rows);
  free(mv->to);
}

static _Thread_local int64_t migrated_; /* points that changed ranks in the oracle scenarios' moves */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
/* The index ids this rank's shard holds, sorted (a fresh malloc); their number matches the shard. */
static uint64_t *held_ids(const rdx_dist_points *dp, int64_t *n) {
  int64_t slots = 0, c = 0;
  const uint64_t *map = rdx_dist_points_shard_ids(dp, &slots);
  uint64_t *ids = (uint64_t *)malloc((size_t)(slots + 1) * 8);
  for (int64_t i = 0; i < slots; i++)
    if (map[i] != RDX_MISS) ids[c++] = map[i];
  qsort(ids, (size_t)c, 8, cmp_u64);
  CHECK_EQ(c, rdx_points_count(rdx_dist_points_shard(dp)));
  *n = c;
  return ids;
}

/* Inserts (each rank but rank 0 a share; ids from id_end on, in rank order) and erases (rows of
 * any rank, including inserted ones, split unevenly), checked against the oracle after each. */
static void check_insert_erase(rdx_context *ctx, rdx_dist_points *dp, scenario *s) {
  int64_t add = s->cap - s->n - 1;
  if (add > s->n / 5 + 3) add = s->n / 5 + 3;
  if (s->n == 0) return; /* an empty build's box is a point: nothing but it fits */
  uint64_t id_end = 0;
  for (int64_t i = 0; i < s->n; i++)
    if (s->ids[i] + 1 > id_end) id_end = s->ids[i] + 1;
  if (!s->given) id_end = (uint64_t)s->n;
  int64_t bcut[8];
  bcut[0] = 0;
  bcut[size_] = add;
  for (int r = 1; r < size_; r++) bcut[r] = r == 1 ? 0 : add * r / size_;
  double *np = (double *)malloc((size_t)(2 * add + 2) * 8);
  for (int64_t i = 0; i < add; i++) {
    int64_t a = (int64_t)check_below((uint64_t)s->n), b = (int64_t)check_below((uint64_t)s->n);
    np[2 * i] = s->xy[2 * a];
    np[2 * i + 1] = s->xy[2 * b + 1];
  }
  void *mine = as_dtype(np + 2 * bcut[rank_], 2 * (bcut[rank_ + 1] - bcut[rank_]), s->dtype);
  uint64_t first = 12345;
  rdx_status st = rdx_dist_points_insert(comm_, dp, rdx_host_matrix(mine, bcut[rank_ + 1] - bcut[rank_], 2, s->dtype), &first);
  CHECK_OK(ctx, st);
  check_same(ctx, st, "insert");
  free(mine);
  if (st == RDX_OK) {
    CHECK_EQ(first, id_end + (uint64_t)bcut[rank_]);
    for (int64_t i = 0; i < add; i++) {
      s->xy[2 * (s->n + i)] = np[2 * i];
      s->xy[2 * (s->n + i) + 1] = np[2 * i + 1];
      s->ids[s->n + i] = id_end + (uint64_t)i;
      s->live[s->n + i] = 1;
    }
    s->n += add;
  }
  free(np);
  CHECK_EQ(rdx_dist_points_count(dp), s->n);
  check_all_types(ctx, dp, s, s->live, 10);
  /* erase a quarter of the rows, drawn distinct; rank r passes rows ecut[r] .. ecut[r+1] */
  const int64_t del = s->n / 4 + 1;
  int64_t *rows = (int64_t *)malloc((size_t)(s->n + 1) * 8), ecut[8];
  for (int64_t i = 0; i < s->n; i++) rows[i] = i;
  for (int64_t i = 0; i < del; i++) {
    int64_t j = i + (int64_t)check_below((uint64_t)(s->n - i)), t = rows[i];
    rows[i] = rows[j];
    rows[j] = t;
  }
  ecut[0] = 0;
  ecut[size_] = del;
  for (int r = 1; r < size_; r++) ecut[r] = (int64_t)check_below((uint64_t)del + 1);
  for (int r = 1; r < size_; r++)
    for (int q = r; q > 1 && ecut[q - 1] > ecut[q]; q--) {
      int64_t t = ecut[q];
      ecut[q] = ecut[q - 1];
      ecut[q - 1] = t;
    }
  const int64_t from = ecut[rank_], cnt = ecut[rank_ + 1] - from;
  uint64_t *ids = (uint64_t *)malloc((size_t)(cnt + 1) * 8);
  for (int64_t i = 0; i < cnt; i++) ids[i] = s->ids[rows[from + i]];
  st = rdx_dist_points_erase(comm_, dp, rdx_host_array(ids, cnt, RDX_U64));
  CHECK_OK(ctx, st);
  check_same(ctx, st, "erase");
  if (st == RDX_OK)
    for (int64_t i = 0; i < del; i++) s->live[rows[i]] = 0;
  /* erasing one of them again is refused on every rank */
  st = rdx_dist_points_erase(comm_, dp, rdx_host_array(ids, rank_ == size_ - 1 && cnt > 0 ? 1 : 0, RDX_U64));
  if (ecut[size_] - ecut[size_ - 1] > 0) {
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "erase twice");
  }
  free(ids);
  free(rows);
  CHECK_EQ(rdx_dist_points_count(dp), s->n - del);
  check_all_types(ctx, dp, s, s->live, 10);
}

static void check_scenario(rdx_context *ctx, scenario *s, rdx_points_kind kind) {
  rdx_dist_points *dp = NULL;
  int64_t held = check_held(ctx);
  rdx_status st = build(ctx, s, kind, &dp);
  CHECK_OK(ctx, st);
  check_same(ctx, st, s->name);
  if (st != RDX_OK) return;
  CHECK_EQ(rdx_dist_points_count(dp), s->n);
  /* the partition table adds up, and this rank's shard holds its count */
  int64_t sum = 0, c = 0;
  for (int r = 0; r < size_; r++) {
    CHECK_OK(ctx, rdx_dist_points_rank_info(dp, r, &c, NULL));
    sum += c;
  }
  CHECK_EQ(sum, s->n);
  CHECK_OK(ctx, rdx_dist_points_rank_info(dp, rank_, &c, NULL));
  CHECK_EQ(rdx_points_count(rdx_dist_points_shard(dp)), c);
  check_all_types(ctx, dp, s, s->live, 24);
  if (s->n > 0) {
    int64_t nb = 0;
    uint64_t *before = held_ids(dp, &nb);
    moves mv;
    draw_moves(s, &mv, s->n / 3 + 1);
    st = apply_moves(s, dp, &mv);
    CHECK_OK(ctx, st);
    check_same(ctx, st, "moves");
    if (st == RDX_OK) commit_moves(s, &mv);
    free_moves(&mv);
    CHECK_EQ(rdx_dist_points_count(dp), s->n);
    /* points changed ranks (the draw moves a third of them to other points' places) */
    int64_t na = 0, arrived = 0;
    uint64_t *after = held_ids(dp, &na);
    for (int64_t i = 0; i < na; i++)
      if (bsearch(&after[i], before, (size_t)nb, 8, cmp_u64) == NULL) arrived++;
    const int64_t all_arrived = dist_sum_i64(arrived);
    if (size_ > 1 && s->n >= 100) CHECK(all_arrived > 0);
    migrated_ += all_arrived;
    free(before);
    free(after);
    check_all_types(ctx, dp, s, s->live, 16);
    check_insert_erase(ctx, dp, s);
  }
  rdx_dist_points_destroy(dp);
  CHECK_EQ(check_held(ctx), held);
}

/* A memory fault on the last rank, walked through build, every query type and moves: every rank
 * fails alike; a failed build leaves no index and no memory held; a failed query or move leaves
 * the index answering as before (a move may keep room it grew, as rdx_points_move may). */
static void fault_walk(rdx_context *ctx, scenario *s) {
  const int last = size_ - 1;
  int64_t held = check_held(ctx), failures = 0;
  rdx_dist_points *dp = NULL;
  for (int64_t n = 1; n < 2000; n++) {
    if (rank_ == last) rdx_mem_fail_after(ctx, n);
    rdx_status st = build(ctx, s, RDX_POINTS_QUADTREE, &dp);
    rdx_mem_fail_after(ctx, 0);
    check_same(ctx, st, "build under a fault");
    if (st == RDX_OK) break;
    failures++;
    CHECK(dp == NULL);
    CHECK_EQ(check_held(ctx), held);
  }
  CHECK(failures > 0);
  if (dp == NULL) return;
  static const int types[] = {RDX_POINTS_WINDOW, RDX_POINTS_WITHIN, RDX_POINTS_MATCH, RDX_POINTS_KNN};
  double q[8 * 4];
  for (int i = 0; i < 8; i++) {
    q[4 * i] = draw_coord(0, s->dtype), q[4 * i + 1] = draw_coord(0, s->dtype);
    q[4 * i + 2] = i == 0 ? 200 : q[4 * i] + 30, q[4 * i + 3] = q[4 * i + 1] + 30;
  }
  for (int t = 0; t < 4; t++) {
    const int cols = types[t] == RDX_POINTS_WINDOW ? 4 : types[t] == RDX_POINTS_WITHIN ? 3 : 2;
    double qq[8 * 4];
    for (int i = 0; i < 8; i++)
      for (int c = 0; c < cols; c++) qq[i * cols + c] = c == 2 && cols == 3 ? 25.0 : q[4 * i + c];
    void *qa = as_dtype(qq, 8 * cols, s->dtype);
    rdx_points_query pq = RDX_POINTS_QUERY_INIT;
    pq.type = (rdx_points_query_type)types[t];
    pq.k = 40;
    /* one query first: what a GPU shard keeps from its first query of a type (its scratch) is
     * not held by the failures, which must hold nothing more */
    rdx_result *warm = NULL;
    rdx_status wst = rdx_dist_points_query_alloc(comm_, dp, rdx_host_matrix(qa, 8, cols, s->dtype), &pq, &warm);
    check_same(ctx, wst, "query before the fault walk");
    rdx_result_free(ctx, warm);
    held = check_held(ctx);
    failures = 0;
    for (int64_t n = 1; n < 2000; n++) {
      rdx_result *r = NULL;
      if (rank_ == last) rdx_mem_fail_after(ctx, n);
      rdx_status st = rdx_dist_points_query_alloc(comm_, dp, rdx_host_matrix(qa, 8, cols, s->dtype), &pq, &r);
      rdx_mem_fail_after(ctx, 0);
      check_same(ctx, st, "query under a fault");
      if (st == RDX_OK) {
        rdx_result_free(ctx, r);
        break;
      }
      failures++;
      CHECK(r == NULL);
      CHECK_EQ(check_held(ctx), held);
    }
    CHECK(failures > 0);
    free(qa);
  }
  /* moves: each failure leaves the answers of the points as they were */
  moves mv;
  draw_moves(s, &mv, s->n / 4 + 1);
  failures = 0;
  for (int64_t n = 1; n < 4000; n++) {
    if (rank_ == last) rdx_mem_fail_after(ctx, n);
    rdx_status st = apply_moves(s, dp, &mv);
    rdx_mem_fail_after(ctx, 0);
    check_same(ctx, st, "move under a fault");
    if (st == RDX_OK) {
      commit_moves(s, &mv);
      break;
    }
    failures++;
    CHECK(st == RDX_ERR_HOST_OUT_OF_MEMORY || st == RDX_ERR_DEVICE_OUT_OF_MEMORY); /* host or GPU memory */
    if (failures % 7 == 1) check_all_types(ctx, dp, s, s->live, 6); /* unchanged (a sample of the failures) */
  }
  CHECK(failures > 0);
  free_moves(&mv);
  check_all_types(ctx, dp, s, s->live, 12);
  /* inserts: 3 points a rank at existing places; ids from 1 + the largest given */
  uint64_t id_end = 0;
  for (int64_t i = 0; i < s->n; i++)
    if (s->ids[i] + 1 > id_end) id_end = s->ids[i] + 1;
  double np[6];
  for (int i = 0; i < 3; i++) np[2 * i] = s->xy[2 * (rank_ * 3 + i)], np[2 * i + 1] = s->xy[2 * (rank_ * 3 + i) + 1];
  failures = 0;
  for (int64_t n = 1; n < 4000; n++) {
    uint64_t first = 7;
    if (rank_ == last) rdx_mem_fail_after(ctx, n);
    rdx_status st = rdx_dist_points_insert(comm_, dp, rdx_host_matrix(np, 3, 2, RDX_F64), &first);
    rdx_mem_fail_after(ctx, 0);
    check_same(ctx, st, "insert under a fault");
    if (st == RDX_OK) {
      CHECK_EQ(first, id_end + 3 * (uint64_t)rank_);
      for (int64_t i = 0; i < 3 * size_; i++) {
        s->xy[2 * (s->n + i)] = s->xy[2 * i];
        s->xy[2 * (s->n + i) + 1] = s->xy[2 * i + 1];
        s->ids[s->n + i] = id_end + (uint64_t)i;
      }
      s->n += 3 * size_;
      break;
    }
    failures++;
    CHECK_EQ(first, 7);
    if (failures % 5 == 1) check_all_types(ctx, dp, s, s->live, 4);
  }
  CHECK(failures > 0);
  check_all_types(ctx, dp, s, s->live, 8);
  /* erases: rank r erases rows 10r .. 10r + 9 and its own inserted ones */
  uint64_t del[13];
  for (int i = 0; i < 10; i++) del[i] = s->ids[10 * rank_ + i];
  for (int i = 0; i < 3; i++) del[10 + i] = id_end + 3 * (uint64_t)rank_ + (uint64_t)i;
  failures = 0;
  for (int64_t n = 1; n < 4000; n++) {
    if (rank_ == last) rdx_mem_fail_after(ctx, n);
    rdx_status st = rdx_dist_points_erase(comm_, dp, rdx_host_array(del, 13, RDX_U64));
    rdx_mem_fail_after(ctx, 0);
    check_same(ctx, st, "erase under a fault");
    if (st == RDX_OK) {
      for (int64_t i = 0; i < s->n; i++)
        for (int j = 0; j < 13; j++)
          if (s->ids[i] == del[j]) s->live[i] = 0;
      break;
    }
    failures++;
    if (failures % 5 == 1) check_all_types(ctx, dp, s, s->live, 4);
  }
  CHECK(failures > 0);
  /* every rank's erased rows are gone (each rank erased its own; the oracle needs all of them) */
  for (int r = 0; r < size_; r++) {
    for (int i = 0; i < 10; i++) s->live[10 * r + i] = 0;
    for (int64_t i = 0; i < s->n; i++)
      if (s->ids[i] >= id_end + 3 * (uint64_t)r && s->ids[i] < id_end + 3 * (uint64_t)r + 3) s->live[i] = 0;
  }
  CHECK_EQ(rdx_dist_points_count(dp), s->n - 13 * size_);
  check_all_types(ctx, dp, s, s->live, 12);
  rdx_dist_points_destroy(dp);
}

/* Bad arguments on one rank and arguments that differ across ranks: refused on every rank alike,
 * no index made, the index unchanged. */
static void check_refusals(rdx_context *ctx) {
  const int last = size_ - 1;
  double pts[8 * 2] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  for (int i = 0; i < 16; i++) pts[i] += rank_ * 10;
  float pts32[16];
  for (int i = 0; i < 16; i++) pts32[i] = (float)pts[i];
  rdx_array p64 = rdx_host_matrix(pts, 8, 2, RDX_F64), p32 = rdx_host_matrix(pts32, 8, 2, RDX_F32);
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  int64_t held = check_held(ctx);
  rdx_dist_points *dp = NULL;
  rdx_status st;
  if (CASE_RUN(dist_points_build_refusals)) {
    /* NaN on one rank */
    double bad[16];
    memcpy(bad, pts, sizeof bad);
    bad[5] = NAN;
    st = rdx_dist_points_build(comm_, rank_ == last ? rdx_host_matrix(bad, 8, 2, RDX_F64) : p64, rdx_no_array(), &o, &dp);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(dp == NULL);
    check_same(ctx, st, "NaN on one rank");
    /* an id given twice, on two ranks (the same id on every rank) */
    uint64_t ids[8];
    for (int i = 0; i < 8; i++) ids[i] = (uint64_t)(rank_ * 8 + i);
    if (size_ > 1 && rank_ == last) ids[3] = 0;
    if (size_ == 1) ids[3] = ids[2];
    st = rdx_dist_points_build(comm_, p64, rdx_host_array(ids, 8, RDX_U64), &o, &dp);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(dp == NULL);
    check_same(ctx, st, "an id given twice");
    CHECK(strstr(rdx_context_message(ctx), "twice") != NULL);
    if (size_ > 1) {
      st = rdx_dist_points_build(comm_, rank_ == 0 ? p32 : p64, rdx_no_array(), &o, &dp);
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "dtype mismatch");
      CHECK(strstr(rdx_context_message(ctx), "disagree") != NULL);
      rdx_points_options k = o;
      k.kind = rank_ == 0 ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
      st = rdx_dist_points_build(comm_, p64, rdx_no_array(), &k, &dp);
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "kind mismatch");
      st = rdx_dist_points_build(comm_, p64, rank_ == 0 ? rdx_host_array(ids, 8, RDX_U64) : rdx_no_array(), &o, &dp);
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "ids on one rank only");
    }
    CHECK(dp == NULL);
    CHECK_EQ(check_held(ctx), held);
  }
  if (CASE_RUN(dist_points_query_and_move_refusals)) {
    CHECK_OK(ctx, rdx_dist_points_build(comm_, p64, rdx_no_array(), &o, &dp));
    if (dp == NULL) return;
    rdx_points_query pq = RDX_POINTS_QUERY_INIT;
    double win[4] = {-1, -1, 100, 100};
    rdx_result *r = NULL;
    /* a window of the wrong dtype on one rank */
    float win32[4] = {-1, -1, 100, 100};
    st = rdx_dist_points_query_alloc(comm_, dp, rank_ == last ? rdx_host_matrix(win32, 1, 4, RDX_F32) : rdx_host_matrix(win, 1, 4, RDX_F64),
                                     &pq, &r);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    CHECK(r == NULL);
    check_same(ctx, st, "query dtype on one rank");
    if (size_ > 1) {
      rdx_points_query other = pq;
      other.type = rank_ == 0 ? RDX_POINTS_WINDOW : RDX_POINTS_KNN;
      other.k = 3;
      double knnq[4] = {-1, -1, 100, 100};
      st = rdx_dist_points_query_alloc(comm_, dp, rdx_host_matrix(knnq, 1, rank_ == 0 ? 4 : 2, RDX_F64), &other, &r);
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "query type mismatch");
      CHECK(strstr(rdx_context_message(ctx), "disagree") != NULL);
    }
    /* k out of range on one rank */
    rdx_points_query kq = RDX_POINTS_QUERY_INIT;
    kq.type = RDX_POINTS_KNN;
    kq.k = rank_ == last ? 1025 : 3;
    st = rdx_dist_points_query_alloc(comm_, dp, rdx_host_matrix(win, 1, 2, RDX_F64), &kq, &r);
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "k on one rank");
    /* moves: an unknown id on one rank, an id repeated across ranks, a place outside the box */
    uint64_t mid[1] = {rank_ == last ? 999999u : (uint64_t)rank_ * 8};
    double to[2] = {3.5, 3.5};
    st = rdx_dist_points_move(comm_, dp, rdx_host_array(mid, 1, RDX_U64), rdx_host_matrix(to, 1, 2, RDX_F64));
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "unknown id");
    CHECK(strstr(rdx_context_message(ctx), "not in the index") != NULL);
    mid[0] = 5;
    st = rdx_dist_points_move(comm_, dp, rdx_host_array(mid, size_ > 1 ? 1 : 1, RDX_U64), rdx_host_matrix(to, 1, 2, RDX_F64));
    if (size_ > 1) {
      CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
      check_same(ctx, st, "id repeated across ranks");
      CHECK(strstr(rdx_context_message(ctx), "repeated") != NULL);
    } else {
      CHECK_OK(ctx, st);
      to[0] = to[1] = 5; /* back where it was */
      CHECK_OK(ctx, rdx_dist_points_move(comm_, dp, rdx_host_array(mid, 1, RDX_U64), rdx_host_matrix(to, 1, 2, RDX_F64)));
    }
    mid[0] = (uint64_t)rank_ * 8;
    to[0] = rank_ == last ? 1e6 : 1;
    st = rdx_dist_points_move(comm_, dp, rdx_host_array(mid, 1, RDX_U64), rdx_host_matrix(to, 1, 2, RDX_F64));
    CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT);
    check_same(ctx, st, "outside the box");
    /* a move batch with another index's serial: not an index on one rank */
    st = rdx_dist_points_move(comm_, rank_ == last ? (rdx_dist_points *)&held : dp, rdx_host_array(mid, 1, RDX_U64),
                              rdx_host_matrix(to, 1, 2, RDX_F64));
    CHECK_EQ(st, RDX_ERR_MISUSE);
    check_same(ctx, st, "not an index on one rank");
    /* unchanged: the window over everything finds 8 points a rank at their build places */
    st = rdx_dist_points_query_alloc(comm_, dp, rdx_host_matrix(win, 1, 4, RDX_F64), &pq, &r);
    CHECK_OK(ctx, st);
    if (st == RDX_OK) {
      uint64_t want = 0;
      for (int rr = 0; rr < size_; rr++) want += 10 * rr <= 100 ? 8 : 0;
      CHECK_EQ(r->total, want);
      rdx_result_free(ctx, r);
    }
    rdx_dist_points_destroy(dp);
    CHECK_EQ(check_held(ctx), held);
  }
}

static void body(rdx_context *ctx) {
  static const struct {
    const char *name;
    int64_t n;
    int shape, split, given;
  } plans[] = {
      {"uneven", 1500, 0, 0, 0},
      {"uneven_given_ids", 1200, 0, 0, 1},
      {"empty_rank", 900, 0, 1, 0},
      {"all_on_rank0", 800, 0, 2, 1},
      {"grid_ties", 1000, 1, 3, 0},
      {"grid_ties_random_cuts", 700, 1, 0, 1},
      {"clustered", 1200, 2, 3, 0},
      {"far_from_origin", 1000, 3, 3, 0},
      {"far_from_origin_random_cuts", 700, 3, 0, 1},
      {"no_points", 0, 0, 0, 0},
      {"one_point", 1, 0, 0, 0},
  };
  for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++)
    for (int v = 0; v < 4; v++) {
      const rdx_dtype dtype = v & 1 ? RDX_F64 : RDX_F32;
      const rdx_points_kind kind = v & 2 ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
      if (!CASE_PART(dist_points_oracle, plans[p].name)) continue;
      scenario s;
      make_scenario(&s, plans[p].name, dtype, plans[p].n, plans[p].shape, plans[p].split, plans[p].given);
      check_scenario(ctx, &s, kind);
      free_scenario(&s);
    }

  if (size_ > 1) CHECK(migrated_ > 0);
  if (CASE_RUN(dist_points_fault_walk)) {
    scenario s;
    make_scenario(&s, "fault", RDX_F64, 600, 0, 0, 1);
    fault_walk(ctx, &s);
    free_scenario(&s);
  }
  check_refusals(ctx);
}

int main(int argc, char **argv) { return dist_main(argc, argv, body); }
