/*
 * test_spatial_update.c: bulk moves, inserts and erases, for the backend given by --backend. Every
 * update engine of that backend runs (spatial.h's table): the CPU planner; on a GPU, paging and
 * the merge (a quadtree built with each layout), the k-d repair, and the rebuild that takes a
 * batch too large for paging or the repair (also forced, rdx_sp_force_rebuild). No case sets an
 * environment variable.
 *
 * Cases:
 *  - points_update_sequences: random sequences of batches on quadtrees (both methods, both GPU
 *    layouts) and k-d trees over uniform, clustered, duplicate-heavy and lattice sets: moves of
 *    1%..60% of the points (small steps that stay in their leaf, jumps anywhere, jumps onto other
 *    points), inserts (into empty quadrants too), erases (down to nothing, then inserts again).
 *    After every batch: tree invariants; every query type equals the oracle of the points then
 *    present; a quadtree's nodes equal a fresh build's (same box) except leaf offsets. On a GPU a
 *    k-d tree's nodes, splits included, equal those of a twin index on the CPU backend, which
 *    takes the same batches with the CPU planner, a different engine with the same rule; after a
 *    GPU rebuild they equal a fresh CPU build's instead, and the twin starts again from one. (On
 *    the CPU backend the planner is the k-d tree's one engine: there is nothing to compare it
 *    with but the oracle.) The sequences must reach every engine and every path of the planner;
 *  - points_update_big_batches: batches far larger than the index, landing in one small area;
 *  - points_update_bad_input: unknown, erased and repeated ids, NaN, points outside the box,
 *    wrong dtypes: RDX_ERR_INVALID_ARGUMENT and the index unchanged;
 *  - points_update_deep_kd: a k-d tree driven past 32 levels by identical points;
 *  - points_update_big_leaves: leaf capacities past one block's sort (GPU paging);
 *  - points_update_page_reuse, points_update_relayout (GPU paging): pages given up and reused;
 *    relayouts that remap an id map;
 *  - points_update_faults: the memory account fails its 1st, 2nd, ... allocation during an
 *    update (each engine): out of memory and the index unchanged, until the update goes through.
 */
#include "points_check.h"

typedef struct model {
  int64_t cap;
  uint64_t id_end;
  double *x, *y;
  uint8_t *alive;
  rdx_dtype dt;
} model;

static void model_grow(model *m, uint64_t need) {
  if ((int64_t)need <= m->cap) return;
  int64_t c = (int64_t)need * 2 + 16;
  m->x = (double *)realloc(m->x, (size_t)c * 8);
  m->y = (double *)realloc(m->y, (size_t)c * 8);
  m->alive = (uint8_t *)realloc(m->alive, (size_t)c);
  memset(m->alive + m->cap, 0, (size_t)(c - m->cap));
  m->cap = c;
}

static int64_t model_live(const model *m) {
  int64_t c = 0;
  for (uint64_t i = 0; i < m->id_end; i++) c += m->alive[i];
  return c;
}

/* The live points as a pset (ids 0..n-1, in id order) and their model ids. */
static pset model_pset(const model *m, uint64_t **ids) {
  int64_t n = model_live(m);
  pset p;
  pset_alloc(&p, n, m->dt);
  *ids = (uint64_t *)malloc((size_t)(n + 1) * 8);
  int64_t w = 0;
  for (uint64_t i = 0; i < m->id_end; i++)
    if (m->alive[i]) {
      pset_set(&p, w, m->x[i], m->y[i]);
      (*ids)[w++] = i;
    }
  return p;
}

/* Build options of pts's kind, leaf capacity, depth and box (the method is the default). */
static rdx_points_options options_like(const rdx_points *pts) {
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = pts->kind;
  o.leaf_capacity = pts->cap;
  o.max_depth = pts->depth;
  o.use_box = true;
  o.box[0] = pts->grid.x0, o.box[1] = pts->grid.y0, o.box[2] = pts->grid.x1, o.box[3] = pts->grid.y1;
  return o;
}

static void check_against_model(rdx_context *ctx, rdx_points *pts, const model *m, int64_t queries) {
  uint64_t *ids;
  pset p = model_pset(m, &ids);
  CHECK_EQ(rdx_points_count(pts), p.n);
  CHECK(pc_tree_ok(ctx, pts, 1));
  points_oracle o;
  CHECK(points_oracle_init(&o, p.n, p.x, p.y, ids));
  pc_check_all(ctx, pts, &o, &p, queries);
  points_oracle_free(&o);
  if (pts->kind == RDX_POINTS_QUADTREE) { /* the nodes of a fresh build over the same box */
    rdx_points_options opt = options_like(pts);
    opt.method = RDX_POINTS_BOTTOM_UP;
    rdx_points *fresh = NULL;
    CHECK_OK(ctx, rdx_points_build(ctx, pset_array(&p), &opt, &fresh));
    if (fresh) CHECK_OK(ctx, rdx_sp_sync_host_nodes(ctx, fresh));
    CHECK_OK(ctx, rdx_sp_sync_host_nodes(ctx, pts));
    if (fresh) {
      const rdx_sp_nodes *a = &pts->host, *b = &fresh->host;
      CHECK_EQ(a->n, b->n);
      for (int64_t i = 0; i < a->n && a->n == b->n; i++) {
        int bad = a->key[i] != b->key[i] || a->level[i] != b->level[i] || a->leaf[i] != b->leaf[i] || a->len[i] != b->len[i] ||
                  a->count[i] != b->count[i] || (!a->leaf[i] && a->fpos[i] != b->fpos[i]);
        if (bad) {
          CHECK_FAIL_("[%s] node %lld differs from a fresh build: (key %llu level %d leaf %d len %lld count %lld) vs "
                      "(key %llu level %d leaf %d len %lld count %lld)",
                      pc_label, (long long)i, (unsigned long long)a->key[i], a->level[i], a->leaf[i], (long long)a->len[i],
                      (long long)a->count[i], (unsigned long long)b->key[i], b->level[i], b->leaf[i], (long long)b->len[i],
                      (long long)b->count[i]);
          break;
        }
      }
      rdx_points_destroy(fresh);
    }
  }
  free(ids);
  pset_free(&p);
}

/* A random place in the box, or on an existing point, or a small step from (x, y). */
static void new_place(const model *m, int64_t live, const double *box, double x, double y, int style, double *nx, double *ny) {
  if (style == 0) { /* a small step, clamped to the box */
    double w = (box[2] - box[0]) * 0.002, h = (box[3] - box[1]) * 0.002;
    *nx = x + w * (pc_unit() - 0.5), *ny = y + h * (pc_unit() - 0.5);
  } else if (style == 1 && live > 0) { /* onto a live point (duplicates) */
    uint64_t j = check_below(m->id_end);
    while (!m->alive[j]) j = (j + 1) % m->id_end;
    *nx = m->x[j], *ny = m->y[j];
  } else if (style == 2) { /* into one small corner: empty quadrants fill, leaves split */
    *nx = box[0] + (box[2] - box[0]) * 0.01 * pc_unit(), *ny = box[1] + (box[3] - box[1]) * 0.01 * pc_unit();
  } else {
    *nx = box[0] + (box[2] - box[0]) * pc_unit(), *ny = box[1] + (box[3] - box[1]) * pc_unit();
  }
  if (*nx < box[0]) *nx = box[0];
  if (*nx > box[2]) *nx = box[2];
  if (*ny < box[1]) *ny = box[1];
  if (*ny > box[3]) *ny = box[3];
  *nx = pc_round(m->dt, *nx);
  *ny = pc_round(m->dt, *ny);
  if (*nx > box[2]) *nx = box[2]; /* rounding to f32 may step outside */
  if (*ny > box[3]) *ny = box[3];
  if (*nx < box[0]) *nx = box[0];
  if (*ny < box[1]) *ny = box[1];
}

static void put2(void *xy, rdx_dtype dt, int64_t i, double x, double y) {
  if (dt == RDX_F32) ((float *)xy)[2 * i] = (float)x, ((float *)xy)[2 * i + 1] = (float)y;
  else ((double *)xy)[2 * i] = x, ((double *)xy)[2 * i + 1] = y;
}

/* Pick c distinct live ids. */
static int64_t pick_ids(const model *m, int64_t c, uint64_t *out) {
  int64_t live = model_live(m), w = 0;
  if (c > live) c = live;
  uint8_t *taken = (uint8_t *)calloc((size_t)m->id_end + 1, 1);
  while (w < c) {
    uint64_t j = check_below(m->id_end);
    while (!m->alive[j] || taken[j]) j = (j + 1) % m->id_end;
    taken[j] = 1;
    out[w++] = j;
  }
  free(taken);
  return w;
}

/* A GPU k-d index's twin: an index on the CPU backend over the same points and ids, which takes
 * the same batches with the CPU planner while the GPU repairs; after a GPU rebuild, a fresh CPU
 * build over the points then present (twin_check). */
typedef struct twin {
  rdx_context *cpu;
  rdx_points *pts;
} twin;

/* One batch on the index (arrays where the test placed them), and on the twin (host arrays)
 * unless the index rebuilt. */
static rdx_status apply(rdx_context *ctx, rdx_points *pts, twin *tw, int op, rdx_array ids, rdx_array xy, rdx_array ids_h,
                        rdx_array xy_h, uint64_t *first) {
  rdx_status st = op == 0 ? rdx_points_move(ctx, pts, ids, xy) : op == 1 ? rdx_points_erase(ctx, pts, ids)
                                                                     : rdx_points_insert(ctx, pts, xy, first);
  if (st != RDX_OK || tw == NULL || tw->pts == NULL || pts->stats.rebuilt) return st;
  uint64_t tf = 0;
  rdx_context *c = tw->cpu;
  st = op == 0 ? rdx_points_move(c, tw->pts, ids_h, xy_h) : op == 1 ? rdx_points_erase(c, tw->pts, ids_h)
                                                               : rdx_points_insert(c, tw->pts, xy_h, &tf);
  if (st != RDX_OK) CHECK_FAIL_("[%s] the twin refused the batch: %s", pc_label, rdx_context_message(c));
  if (st == RDX_OK && op == 2) CHECK_EQ(tf, *first);
  return RDX_OK;
}

/* The nodes of two k-d trees: equal but for leaf offsets and rooms. */
static void same_kd_nodes(rdx_context *ctx, rdx_points *a_, rdx_points *b_) {
  CHECK_OK(ctx, rdx_sp_sync_host_nodes(ctx, a_));
  CHECK_OK(b_->ctx, rdx_sp_sync_host_nodes(b_->ctx, b_));
  const rdx_sp_nodes *a = &a_->host, *b = &b_->host;
  CHECK_EQ(a->n, b->n);
  for (int64_t i = 0; i < a->n && a->n == b->n; i++) {
    int bad = a->key[i] != b->key[i] || a->level[i] != b->level[i] || a->leaf[i] != b->leaf[i] || a->count[i] != b->count[i] ||
              (a->leaf[i] && a->len[i] != b->len[i]) || (!a->leaf[i] && (a->split[i] != b->split[i] || a->fpos[i] != b->fpos[i]));
    if (bad) {
      CHECK_FAIL_("[%s] k-d node %lld differs from the CPU's: (key %llu level %d leaf %d count %lld split %g) vs "
                  "(key %llu level %d leaf %d count %lld split %g)",
                  pc_label, (long long)i, (unsigned long long)a->key[i], a->level[i], a->leaf[i], (long long)a->count[i],
                  a->split[i], (unsigned long long)b->key[i], b->level[i], b->leaf[i], (long long)b->count[i], b->split[i]);
      break;
    }
  }
}

/* One random batch applied to the index (and its twin) and the model. */
static void random_batch(rdx_context *ctx, rdx_points *pts, twin *tw, model *m, const double *box) {
  int64_t live = model_live(m);
  int op = (int)check_below(10);
  int dev = pc_gpu(ctx) && (check_rand_() & 1);
  if (live == 0) op = 9;
  if (op < 6) { /* move */
    static const double fr[] = {0.01, 0.05, 0.1, 0.3, 0.6};
    int64_t c = (int64_t)(live * fr[check_below(5)]) + 1;
    uint64_t *ids = (uint64_t *)malloc((size_t)c * 8);
    c = pick_ids(m, c, ids);
    void *xy = malloc((size_t)c * 16);
    int style = (int)check_below(4);
    double *nx = (double *)malloc((size_t)c * 8), *ny = (double *)malloc((size_t)c * 8);
    for (int64_t i = 0; i < c; i++) {
      new_place(m, live, box, m->x[ids[i]], m->y[ids[i]], check_below(3) ? style : 3, &nx[i], &ny[i]);
      put2(xy, m->dt, i, nx[i], ny[i]);
    }
    rdx_array ih = rdx_host_array(ids, c, RDX_U64), ph = rdx_host_matrix(xy, c, 2, m->dt), ia = ih, pa = ph;
    if (dev) ia = pc_to_device(ctx, ia), pa = pc_to_device(ctx, pa);
    CHECK_OK(ctx, apply(ctx, pts, tw, 0, ia, pa, ih, ph, NULL));
    pc_free_device(ctx, ia);
    pc_free_device(ctx, pa);
    for (int64_t i = 0; i < c; i++) m->x[ids[i]] = nx[i], m->y[ids[i]] = ny[i];
    free(ids), free(xy), free(nx), free(ny);
  } else if (op < 8) { /* erase */
    int64_t c = check_below(4) == 0 ? live : (int64_t)check_below((uint64_t)(live / 3 + 1)) + 1;
    uint64_t *ids = (uint64_t *)malloc((size_t)c * 8);
    c = pick_ids(m, c, ids);
    /* u32 ids half the time */
    uint32_t *ids32 = (uint32_t *)malloc((size_t)c * 4);
    for (int64_t i = 0; i < c; i++) ids32[i] = (uint32_t)ids[i];
    rdx_array ih = check_below(2) ? rdx_host_array(ids32, c, RDX_U32) : rdx_host_array(ids, c, RDX_U64), ia = ih;
    if (dev) ia = pc_to_device(ctx, ia);
    const rdx_array none = rdx_host_matrix(NULL, 0, 2, m->dt);
    CHECK_OK(ctx, apply(ctx, pts, tw, 1, ia, none, ih, none, NULL));
    pc_free_device(ctx, ia);
    for (int64_t i = 0; i < c; i++) m->alive[ids[i]] = 0;
    free(ids), free(ids32);
  } else { /* insert */
    int64_t c = (int64_t)check_below((uint64_t)(live / 2 + 50)) + 1;
    void *xy = malloc((size_t)c * 16);
    int style = (int)check_below(4);
    uint64_t first = 0;
    model_grow(m, m->id_end + (uint64_t)c);
    for (int64_t i = 0; i < c; i++) {
      double nx, ny;
      new_place(m, live, box, box[0], box[1], style == 0 ? 3 : style, &nx, &ny);
      put2(xy, m->dt, i, nx, ny);
      m->x[m->id_end + (uint64_t)i] = nx, m->y[m->id_end + (uint64_t)i] = ny;
    }
    rdx_array ph = rdx_host_matrix(xy, c, 2, m->dt), pa = ph;
    if (dev) pa = pc_to_device(ctx, pa);
    const rdx_array none = rdx_host_array(NULL, 0, RDX_U64);
    CHECK_OK(ctx, apply(ctx, pts, tw, 2, none, pa, none, ph, &first));
    pc_free_device(ctx, pa);
    CHECK_EQ(first, m->id_end);
    for (int64_t i = 0; i < c; i++) m->alive[m->id_end + (uint64_t)i] = 1;
    m->id_end += (uint64_t)c;
    free(xy);
  }
}

/* An eighth of the live points moved by new_place(style), in the model and the index. */
static void move_eighth(rdx_context *ctx, rdx_points *pts, model *m, const double *box, int style) {
  int64_t live = model_live(m), c = live / 8;
  uint64_t *ids = (uint64_t *)malloc((size_t)c * 8);
  float *xy = (float *)malloc((size_t)c * 8);
  c = pick_ids(m, c, ids);
  for (int64_t i = 0; i < c; i++) {
    double nx, ny;
    new_place(m, live, box, 0, 0, style, &nx, &ny);
    m->x[ids[i]] = nx, m->y[ids[i]] = ny;
    xy[2 * i] = (float)nx, xy[2 * i + 1] = (float)ny;
  }
  CHECK_OK(ctx, rdx_points_move(ctx, pts, rdx_host_array(ids, c, RDX_U64), rdx_host_matrix(xy, c, 2, RDX_F32)));
  free(ids), free(xy);
}

static rdx_points *build_model(rdx_context *ctx, model *m, int gen, int64_t n, rdx_dtype dt, int kind, int dense, int cap,
                               int depth, const double *box) {
  pset p = pset_make(gen, n, dt);
  memset(m, 0, sizeof *m);
  m->dt = dt;
  model_grow(m, (uint64_t)n + 1);
  for (int64_t i = 0; i < n; i++) m->x[i] = p.x[i], m->y[i] = p.y[i], m->alive[i] = 1;
  m->id_end = (uint64_t)n;
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = kind == 2 ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
  o.method = kind == 1 ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
  o.layout = dense ? RDX_POINTS_DENSE : (rdx_points_layout)0; /* 0: the kind's default on the backend */
  o.leaf_capacity = cap;
  o.max_depth = depth;
  o.use_box = true;
  memcpy(o.box, box, sizeof o.box);
  rdx_points *pts = NULL;
  CHECK_OK(ctx, rdx_points_build(ctx, pset_array(&p), &o, &pts));
  if (pts) CHECK_OK(ctx, rdx_sp_sync_host_nodes(ctx, pts)); /* the tests read the host copy */
  pset_free(&p);
  return pts;
}

/* A fresh CPU build over the model's points with the model's ids (their order kept, so a k-d
 * median's ties go as on the index): the twin of a GPU k-d index. */
static rdx_points *cpu_build(rdx_context *cpu, const model *m, const rdx_points *pts) {
  uint64_t *ids;
  pset p = model_pset(m, &ids);
  rdx_points_options o = options_like(pts);
  rdx_points *fresh = NULL;
  CHECK_OK(cpu, rdx_points_build(cpu, pset_array(&p), &o, &fresh));
  if (fresh) { /* the build numbered the points 0..n-1 */
    for (int64_t s = 0; s < fresh->pool.used; s++) fresh->pool.id[s] = ids[fresh->pool.id[s]];
    fresh->id_end = m->id_end;
  }
  free(ids);
  pset_free(&p);
  return fresh;
}

/* After a batch on a GPU k-d index: its nodes against the twin's, or, after a rebuild, against a
 * fresh CPU build's, which becomes the twin. */
static void twin_check(rdx_context *ctx, rdx_points *pts, twin *tw, const model *m) {
  if (tw->pts == NULL) return;
  if (pts->stats.rebuilt) {
    rdx_points_destroy(tw->pts);
    tw->pts = cpu_build(tw->cpu, m, pts);
    if (tw->pts == NULL) return;
  }
  same_kd_nodes(ctx, pts, tw->pts);
}

static void model_free(model *m) {
  free(m->x), free(m->y), free(m->alive);
  memset(m, 0, sizeof *m);
}

/* Answers of a fixed batch, to see that a failed update changed nothing. */
static uint64_t fingerprint(rdx_context *ctx, rdx_points *pts) {
  double w[4 * 16];
  float wf[4 * 16];
  for (int i = 0; i < 16; i++) {
    w[4 * i] = -60 + 14 * i, w[4 * i + 1] = 0, w[4 * i + 2] = -60 + 14 * i + 30, w[4 * i + 3] = 80;
    for (int c = 0; c < 4; c++) wf[4 * i + c] = (float)w[4 * i + c];
  }
  rdx_points_query q = RDX_POINTS_QUERY_INIT;
  rdx_result *r = NULL;
  uint64_t h = 1469598103934665603ull;
  rdx_array qa = pts->f64 ? rdx_host_matrix(w, 16, 4, RDX_F64) : rdx_host_matrix(wf, 16, 4, RDX_F32);
  rdx_status st = rdx_points_query_alloc(ctx, pts, qa, &q, &r);
  if (st != RDX_OK) {
    CHECK_OK(ctx, st);
    return 0;
  }
  for (uint64_t i = 0; i < r->total; i++) h = (h ^ r->row_ids[i]) * 1099511628211ull;
  for (int i = 0; i <= 16; i++) h = (h ^ r->offsets[i]) * 1099511628211ull;
  rdx_result_free(ctx, r);
  return h;
}

/* The setups of the cases that run every engine: kind (0 quadtree bottom-up, 1 top-down, 2 k-d)
 * and layout (dense: GPU quadtrees only). */
typedef struct setup {
  int kind, dense;
} setup;
static int setups_of(rdx_context *ctx, setup *out) {
  int n = 0;
  for (int kind = 0; kind < 3; kind++)
    for (int dense = 0; dense < (kind < 2 && pc_gpu(ctx) ? 2 : 1); dense++) out[n++] = (setup){kind, dense};
  return n;
}

/* Which engine a GPU batch took: 0 paging, 1 a quadtree rebuild, 2 the merge, 3 the k-d repair, 4 a
 * k-d rebuild. */
static int engine_taken(const rdx_points *pts) {
  if (pts->kind == RDX_POINTS_KDTREE) return pts->stats.rebuilt ? 4 : 3;
  return pts->layout == RDX_POINTS_DENSE ? 2 : pts->stats.rebuilt;
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  pc_watchdog(240);
  static const double box[4] = {-60, 0, 160, 80};
  int64_t seen[2][6]; /* per kind family: splits, merges, relocated, new leaves, in place, left leaf */
  memset(seen, 0, sizeof seen);
  int64_t engines[5] = {0, 0, 0, 0, 0}; /* GPU: batches per engine_taken */
  rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
  co.backend = RDX_BACKEND_CPU;
  twin tw = {NULL, NULL};
  if (pc_gpu(ctx)) CHECK_OK(tw.cpu, rdx_context_create(&co, &tw.cpu));
  static const int gens[] = {GEN_UNIFORM, GEN_CLUSTERED, GEN_DUPLICATES, GEN_GRID};
  static const struct {
    int cap, qdepth, kdepth;
  } shapes[] = {{8, 16, 48}, {32, 20, 30}, {3, 6, 8}, {100, 31, 56}};
  for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
    for (int kind = 0; kind < 3; kind++) {
      /* GPU quadtrees: both methods paged, and dense with one method per generator */
      for (int lay = 0; lay < (kind < 2 && pc_gpu(ctx) && (size_t)kind == g % 2 ? 2 : 1); lay++) {
        static char part[64];
        snprintf(part, sizeof part, "%s/%s%s", gen_names[gens[g]], pc_kind_name(kind), lay ? "/dense" : "");
        if (!CASE_PART(points_update_sequences, part)) continue;
        size_t sh = (g + (size_t)kind) % 4;
        int64_t n = check_below(4) == 0 ? 0 : 300 + (int64_t)check_below(5000);
        rdx_dtype dt = check_below(2) ? RDX_F32 : RDX_F64;
        model m;
        rdx_points *pts = build_model(ctx, &m, gens[g], n, dt, kind, lay, shapes[sh].cap,
                                      kind == 2 ? shapes[sh].kdepth : shapes[sh].qdepth, box);
        if (!pts) continue;
        tw.pts = kind == 2 && tw.cpu ? cpu_build(tw.cpu, &m, pts) : NULL;
        for (int round = 0; round < 16; round++) {
          snprintf(pc_label, sizeof pc_label, "%s %s%s cap %d, round %d, %lld points", pc_kind_name(kind), gen_names[gens[g]],
                   lay ? " dense" : "", shapes[sh].cap, round, (long long)model_live(&m));
          /* GPUs: paging and the k-d repair take batches up to a size and rebuild above it; a
           * quarter of the rounds rebuild whatever the size, a quarter never do */
          rdx_sp_force_rebuild(pts, round % 4 == 1 ? 1 : round % 4 == 3 ? -1 : 0);
          random_batch(ctx, pts, &tw, &m, box);
          const rdx_sp_stats *st = &pts->stats;
          int64_t *sn = seen[kind == 2];
          sn[0] += st->splits, sn[1] += st->merges, sn[2] += st->relocated, sn[3] += st->new_leaves;
          if (st->in_place > 0) sn[4] += st->in_place; /* -1: not tracked (GPU engines) */
          if (st->left_leaf > 0) sn[5] += st->left_leaf;
          engines[engine_taken(pts)]++;
          check_against_model(ctx, pts, &m, round % 3 == 2 ? 60 : 25);
          if (tw.pts) twin_check(ctx, pts, &tw, &m);
          if (check_failures_) break;
        }
        rdx_points_destroy(tw.pts);
        tw.pts = NULL;
        rdx_points_destroy(pts);
        model_free(&m);
      }
    }
  }

  /* the sequences reached every engine and every path of the planner; the GPU engines count no
   * moves in place, and paging relocates leaves too rarely in them to count (the page reuse case
   * relocates them) */
  static const char *const what[] = {"splits", "merges", "relocations", "new leaves", "in-place moves", "leaf changes"};
  int gpu = pc_gpu(ctx);
  for (int f = 0; f < 2 && !check_filtered(); f++) /* counts over every generator */
    for (int i = 0; i < 6; i++) {
      if (f == 1 && i == 3) continue; /* k-d trees have no missing quadrants */
      if (gpu && (i == 2 || i >= 4)) continue;
      printf("%s: %lld %s\n", f ? "k-d" : "quadtree", (long long)seen[f][i], what[i]);
      if (seen[f][i] == 0) CHECK_FAIL_("%s sequences had no %s", f ? "k-d" : "quadtree", what[i]);
    }
  static const char *const engine_names[] = {"paging", "quadtree rebuild", "merge", "k-d repair", "k-d rebuild"};
  for (int e = 0; e < 5 && gpu && !check_filtered(); e++) {
    printf("%s: %lld batches\n", engine_names[e], (long long)engines[e]);
    if (engines[e] == 0) CHECK_FAIL_("the sequences never took the %s", engine_names[e]);
  }

  /* batches far larger than the index, landing in a small area: on the GPU one merge tile (2048
   * slots) receives thousands of points, past what it caches in shared memory */
  setup su[5];
  const int n_su = setups_of(ctx, su);
  if (CASE_RUN(points_update_big_batches)) {
    for (int k = 0; k < n_su; k++) {
      const int kind = su[k].kind;
      model m;
      rdx_points *pts = build_model(ctx, &m, GEN_CLUSTERED, 200, RDX_F64, kind, su[k].dense, 16, kind == 2 ? 40 : 16, box);
      if (!pts) continue;
      for (int round = 0; round < 3 && !check_failures_; round++) {
        snprintf(pc_label, sizeof pc_label, "big batches, kind %d%s, round %d", kind, su[k].dense ? " dense" : "", round);
        const int64_t c = 6000;
        double cx = box[0] + (box[2] - box[0]) * pc_unit(), cy = box[1] + (box[3] - box[1]) * pc_unit();
        double *xy = (double *)malloc((size_t)c * 16);
        for (int64_t i = 0; i < c; i++) {
          xy[2 * i] = fmin(box[2], cx + 0.5 * pc_unit()), xy[2 * i + 1] = fmin(box[3], cy + 0.5 * pc_unit());
          if (i % 7 == 0) xy[2 * i] = cx, xy[2 * i + 1] = cy; /* duplicates */
        }
        uint64_t first = 0;
        model_grow(&m, m.id_end + (uint64_t)c);
        rdx_sp_force_rebuild(pts, round > 0 ? -1 : 0); /* GPU: the repair and paging too, not only rebuilds */
        CHECK_OK(ctx, rdx_points_insert(ctx, pts, rdx_host_matrix(xy, c, 2, RDX_F64), &first));
        CHECK_EQ(first, m.id_end);
        for (int64_t i = 0; i < c; i++)
          m.x[first + (uint64_t)i] = xy[2 * i], m.y[first + (uint64_t)i] = xy[2 * i + 1], m.alive[first + (uint64_t)i] = 1;
        m.id_end += (uint64_t)c;
        check_against_model(ctx, pts, &m, 25);
        /* move the inserted points back to one corner of the first area */
        uint64_t *ids = (uint64_t *)malloc((size_t)c * 8);
        for (int64_t i = 0; i < c; i++)
          ids[i] = first + (uint64_t)i, xy[2 * i] = cx, xy[2 * i + 1] = fmin(box[3], cy + 1e-3 * (double)(i % 5));
        CHECK_OK(ctx, rdx_points_move(ctx, pts, rdx_host_array(ids, c, RDX_U64), rdx_host_matrix(xy, c, 2, RDX_F64)));
        for (int64_t i = 0; i < c; i++) m.x[first + (uint64_t)i] = xy[2 * i], m.y[first + (uint64_t)i] = xy[2 * i + 1];
        check_against_model(ctx, pts, &m, 25);
        free(ids), free(xy);
      }
      rdx_points_destroy(pts);
      model_free(&m);
    }
  }

  /* every engine: by size (paging, the merge, the repair, the planner) and rebuilding */
  for (int k = 0; k < 2 * n_su && CASE_RUN(points_update_bad_input); k++) {
    {
      const int kind = su[k / 2].kind;
      model m;
      rdx_points *pts = build_model(ctx, &m, GEN_UNIFORM, 500, RDX_F64, kind, su[k / 2].dense, 16, kind == 2 ? 40 : 16, box);
      rdx_sp_force_rebuild(pts, k % 2);
      snprintf(pc_label, sizeof pc_label, "bad input, kind %d%s%s", kind, su[k / 2].dense ? " dense" : "",
               k % 2 ? ", rebuilding" : "");
      uint64_t ids[3] = {1, 2, 3};
      double xy[6] = {0, 1, 2, 3, 4, 5};
      CHECK_OK(ctx, rdx_points_erase(ctx, pts, rdx_host_array(ids, 1, RDX_U64))); /* id 1 is gone */
      m.alive[1] = 0;
      uint64_t before = fingerprint(ctx, pts);
      int64_t nodes = pts->host.n;
      uint64_t bad[][3] = {{2, 500, 3}, {2, 1, 3}, {2, 3, 2}};
      for (int b = 0; b < 3; b++) {
        CHECK_STATUS(ctx, rdx_points_move(ctx, pts, rdx_host_array(bad[b], 3, RDX_U64), rdx_host_matrix(xy, 3, 2, RDX_F64)),
                     RDX_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(ctx, rdx_points_erase(ctx, pts, rdx_host_array(bad[b], 3, RDX_U64)), RDX_ERR_INVALID_ARGUMENT);
      }
      double nan_xy[6] = {0, 1, NAN, 3, 4, 5}, out_xy[6] = {0, 1, 2, 3, 1e6, 5}, inf_xy[6] = {0, 1, 2, INFINITY, 4, 5};
      CHECK_STATUS(ctx,
                   rdx_points_move(ctx, pts, rdx_host_array(ids + 1, 2, RDX_U64), rdx_host_matrix(nan_xy + 2, 2, 2, RDX_F64)),
                   RDX_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(ctx, rdx_points_insert(ctx, pts, rdx_host_matrix(out_xy, 3, 2, RDX_F64), NULL), RDX_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(ctx, rdx_points_insert(ctx, pts, rdx_host_matrix(inf_xy, 3, 2, RDX_F64), NULL), RDX_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(ctx, rdx_points_insert(ctx, pts, rdx_host_matrix(xy, 3, 2, RDX_F32), NULL), RDX_ERR_INVALID_ARGUMENT);
      CHECK_STATUS(ctx, rdx_points_move(ctx, pts, rdx_host_array(ids + 1, 2, RDX_U64), rdx_host_matrix(xy, 3, 2, RDX_F64)),
                   RDX_ERR_INVALID_ARGUMENT);
      double f64ids[2] = {2, 3};
      CHECK_STATUS(ctx, rdx_points_erase(ctx, pts, rdx_host_array(f64ids, 2, RDX_F64)), RDX_ERR_INVALID_ARGUMENT);
      CHECK_EQ(rdx_points_count(pts), 499);
      CHECK_EQ(pts->host.n, nodes);
      CHECK_EQ(fingerprint(ctx, pts), before);
      /* an empty batch is fine and changes nothing */
      uint64_t first = 0;
      CHECK_OK(ctx, rdx_points_insert(ctx, pts, rdx_host_matrix(NULL, 0, 2, RDX_F64), &first));
      CHECK_EQ(first, 500);
      CHECK_OK(ctx, rdx_points_erase(ctx, pts, rdx_host_array(NULL, 0, RDX_U64)));
      check_against_model(ctx, pts, &m, 20);
      rdx_points_destroy(pts);
      model_free(&m);
    }
  }

  /* a k-d tree driven past 32 levels: identical points keep landing in the leftmost leaf of
   * their spot, which splits again each batch (on a GPU the repair's codes switch from 32 to 64
   * bits on the way; its nodes stay equal to the CPU twin's) */
  if (CASE_RUN(points_update_deep_kd)) {
    model m;
    rdx_points *pts = build_model(ctx, &m, GEN_UNIFORM, 200, RDX_F64, 2, 0, 3, 56, box);
    tw.pts = pts && tw.cpu ? cpu_build(tw.cpu, &m, pts) : NULL;
    int deepest = 0;
    for (int round = 0; pts && round < 14 && !check_failures_; round++) {
      snprintf(pc_label, sizeof pc_label, "deep k-d, round %d", round);
      const int64_t c = 48;
      double xy[2 * 48];
      for (int64_t i = 0; i < c; i++) xy[2 * i] = 12.5, xy[2 * i + 1] = 40.25;
      uint64_t first = 0;
      model_grow(&m, m.id_end + (uint64_t)c);
      const rdx_array none = rdx_host_array(NULL, 0, RDX_U64), pa = rdx_host_matrix(xy, c, 2, RDX_F64);
      CHECK_OK(ctx, apply(ctx, pts, &tw, 2, none, pa, none, pa, &first));
      for (int64_t i = 0; i < c; i++)
        m.x[first + (uint64_t)i] = xy[2 * i], m.y[first + (uint64_t)i] = xy[2 * i + 1], m.alive[first + (uint64_t)i] = 1;
      m.id_end += (uint64_t)c;
      check_against_model(ctx, pts, &m, 20);
      if (tw.pts) twin_check(ctx, pts, &tw, &m);
      for (int64_t i = 0; i < pts->host.n; i++) deepest = pts->host.level[i] > deepest ? pts->host.level[i] : deepest;
    }
    if (pts) CHECK(deepest > 33);
    rdx_points_destroy(tw.pts);
    tw.pts = NULL;
    rdx_points_destroy(pts);
    model_free(&m);
  }

  /* leaves of large capacity: on the GPU paging sorts a split leaf's survivors in one block up to
   * capacity 4096 (two block shapes), and with a device sort past it */
  static const int big_caps[] = {1500, 5000};
  if (CASE_RUN(points_update_big_leaves)) {
    for (int ci = 0; ci < 2; ci++) {
      for (int kind = 0; kind < 2; kind++) {
        model m;
        rdx_points *pts = build_model(ctx, &m, GEN_CLUSTERED, 4 * big_caps[ci] + 500, RDX_F32, kind, 0, big_caps[ci], 16, box);
        if (!pts) continue;
        rdx_sp_force_rebuild(pts, -1); /* paging, whatever the batch */
        for (int round = 0; round < 6 && !check_failures_; round++) {
          snprintf(pc_label, sizeof pc_label, "big leaves cap %d, kind %d, round %d", big_caps[ci], kind, round);
          random_batch(ctx, pts, NULL, &m, box);
          check_against_model(ctx, pts, &m, 20);
        }
        rdx_points_destroy(pts);
        model_free(&m);
      }
    }
  }

  /* pages given up and taken again: paged GPU quadtree batches in a row that move an eighth of
   * the points into one corner (splits there) and then back over the box (merges there,
   * relocations elsewhere), so each batch gives up pages (64-192 slots at capacity 100) that the
   * next ones take */
  if (rdx_is_gpu(ctx) && CASE_RUN(points_update_page_reuse)) {
    model m;
    rdx_points *pts = build_model(ctx, &m, GEN_CLUSTERED, 20000, RDX_F32, 0, 0, 100, 16, box);
    int64_t taken = 0;
    if (pts) rdx_sp_force_rebuild(pts, -1); /* an eighth: paging, not a rebuild */
    for (int round = 0; pts && round < 10 && !check_failures_; round++) {
      move_eighth(ctx, pts, &m, box, round % 2 ? 3 : 2);
      taken += pts->stats.reused_pages;
      snprintf(pc_label, sizeof pc_label, "page reuse, round %d", round);
      check_against_model(ctx, pts, &m, 25);
    }
    printf("page reuse: %lld pages reused, %lld relayouts\n", (long long)taken, pts ? (long long)pts->stats.relayouts : -1ll);
    if (pts && taken < 10) CHECK_FAIL_("%s: %lld pages reused, fewer than 10", "page reuse", (long long)taken);
    rdx_points_destroy(pts);
    model_free(&m);
  }

  /* relayouts of a paged GPU quadtree that has an id map already, which they remap in id order
   * (update.cu, remap_ids_kernel) rather than write from the points: after each, every live id's
   * slot holds that id, and the next batch (which finds its points through the map) leaves the
   * answers of the model */
  if (rdx_is_gpu(ctx) && CASE_RUN(points_update_relayout)) {
    model m;
    rdx_points *pts = build_model(ctx, &m, GEN_CLUSTERED, 20000, RDX_F32, 0, 0, 100, 16, box);
    if (pts) rdx_sp_force_rebuild(pts, -1);
    for (int round = 0; pts && round < 6 && !check_failures_; round++) {
      move_eighth(ctx, pts, &m, box, round % 2 ? 3 : 1);
      snprintf(pc_label, sizeof pc_label, "relayout, round %d, the batch", round);
      check_against_model(ctx, pts, &m, 10);
      if (!pts->slot) {
        CHECK_FAIL_("%s: a paged update left no id map", pc_label);
        break;
      }
      CHECK_OK(ctx, rdx_sp_qt_relayout_cuda(ctx, pts, 1000 * round));
      uint64_t *slot = (uint64_t *)malloc((size_t)pts->slot_cap * 8), *pid = (uint64_t *)malloc((size_t)pts->pool.cap * 8);
      CHECK_OK(ctx, rdx_copy(ctx, slot, RDX_HOST, pts->slot, RDX_DEVICE, (size_t)pts->slot_cap * 8));
      CHECK_OK(ctx, rdx_copy(ctx, pid, RDX_HOST, pts->pool.id, RDX_DEVICE, (size_t)pts->pool.cap * 8));
      int64_t wrong = 0;
      for (uint64_t v = 0; v < m.id_end && (int64_t)v < pts->slot_cap; v++) {
        const uint64_t sl = slot[v];
        if (m.alive[v] ? sl >= (uint64_t)pts->pool.cap || pid[sl] != v : sl != RDX_SP_NONE) wrong++;
      }
      if (wrong) CHECK_FAIL_("relayout, round %d: %lld ids mapped wrong", round, (long long)wrong);
      free(slot), free(pid);
      snprintf(pc_label, sizeof pc_label, "relayout, round %d, relayouted", round);
      check_against_model(ctx, pts, &m, 10);
    }
    rdx_points_destroy(pts);
    model_free(&m);
  }

  /* every engine: round 0 by size (a rebuild for paging, the repair, the merge, the planner),
   * round 1 never rebuilding (paging), round 2 always (the rebuild) */
  if (CASE_RUN(points_update_faults)) {
    for (int e = 0; e < n_su; e++) {
      const int kind = su[e].kind;
      model m;
      rdx_points *pts = build_model(ctx, &m, GEN_CLUSTERED, 2000, RDX_F32, kind, su[e].dense, 8, kind == 2 ? 30 : 12, box);
      for (int round = 0; round < 3; round++) {
        /* a batch that moves, splits and merges: half the points into one corner */
        int64_t live = model_live(&m), c = live / 2;
        uint64_t *ids = (uint64_t *)malloc((size_t)c * 8);
        c = pick_ids(&m, c, ids);
        float *xy = (float *)malloc((size_t)c * 8);
        double *nx = (double *)malloc((size_t)c * 8), *ny = (double *)malloc((size_t)c * 8);
        for (int64_t i = 0; i < c; i++) {
          new_place(&m, live, box, 0, 0, round == 1 ? 3 : 2, &nx[i], &ny[i]);
          xy[2 * i] = (float)nx[i], xy[2 * i + 1] = (float)ny[i];
        }
        uint64_t before = fingerprint(ctx, pts);
        int64_t count = rdx_points_count(pts);
        int done = 0;
        rdx_sp_force_rebuild(pts, round == 0 ? 0 : round == 1 ? -1 : 1);
        /* every fault point up to 64, then a sparser walk (k-d splits allocate per split leaf) */
        for (int64_t k = 1; k < 100000 && !done; k += 1 + (k > 64 ? k / 16 : 0)) {
          rdx_mem_fail_after(ctx, k);
          rdx_status st = rdx_points_move(ctx, pts, rdx_host_array(ids, c, RDX_U64), rdx_host_matrix(xy, c, 2, RDX_F32));
          rdx_mem_fail_after(ctx, 0);
          if (st == RDX_OK) {
            done = 1;
            break;
          }
          if (st != RDX_ERR_HOST_OUT_OF_MEMORY && st != RDX_ERR_DEVICE_OUT_OF_MEMORY) {
            CHECK_FAIL_("fault %lld: %s (%s)", (long long)k, rdx_status_name(st), rdx_context_message(ctx));
            break;
          }
          CHECK_EQ(rdx_points_count(pts), count);
          uint64_t fp = fingerprint(ctx, pts);
          if (fp != before) {
            CHECK_FAIL_("fault %lld changed the index's answers", (long long)k);
            break;
          }
        }
        if (!done) CHECK_FAIL_("[kind %d round %d] the move never went through; last: %s", kind, round, rdx_context_message(ctx));
        for (int64_t i = 0; i < c; i++) m.x[ids[i]] = nx[i], m.y[ids[i]] = ny[i];
        snprintf(pc_label, sizeof pc_label, "faults kind %d%s round %d", kind, su[e].dense ? " dense" : "", round);
        check_against_model(ctx, pts, &m, 20);
        free(ids), free(xy), free(nx), free(ny);
      }
      rdx_points_destroy(pts);
      model_free(&m);
    }
  }
  rdx_context_destroy(tw.cpu);
  return check_end(ctx);
}
