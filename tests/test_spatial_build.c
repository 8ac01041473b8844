/*
 * test_spatial_build.c: quadtree and k-d tree construction, for the backend given by --backend.
 *
 * Cases:
 *  - qtree_fixture_paper: the worked example of the quadtree digest (D = 2, n_t = 2, nine points
 *    with codes 0,0,1,3,4,6,15,15,15), node arrays checked value by value for bottom-up and
 *    top-down;
 *  - qtree_paper_line9_fails: Fig. 5 line 9 as printed (leaf offsets by a BFS scan) puts leaves'
 *    points in the wrong place whenever leaves sit on several levels; the invariant check must
 *    catch it on the fixture and on random sets, and must pass on our fix;
 *  - qtree_bottom_up_equals_top_down: on uniform, clustered, duplicate-heavy, lattice (cell
 *    boundaries), box-edge, identical and -0.0 sets, sizes 0..10^5, f32 and f64, several
 *    capacities and depths (1, 2, 16, 17, 31): bottom-up equals the binary-search reference
 *    exactly, top-down equals it except leaf offsets, invariants hold;
 *  - kdtree_build: invariants and equality with the CPU build (on GPU backends).
 */
#include "points_check.h"

static rdx_points *build(rdx_context *ctx, const pset *p, rdx_points_kind kind, rdx_points_method method, int cap, int depth,
                         int debug, const double *box) {
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = kind;
  o.method = method;
  o.leaf_capacity = cap;
  o.max_depth = depth;
  if (box) {
    o.use_box = true;
    memcpy(o.box, box, sizeof o.box);
  }
  rdx_points *pts = NULL;
  /* half the time from device memory on GPU backends */
  rdx_array a = pset_array(p);
  rdx_array d = pc_gpu(ctx) && (check_rand_() & 1) ? pc_to_device(ctx, a) : a;
  CHECK_OK(ctx, rdx_points_build_ex(ctx, d, &o, debug, &pts));
  pc_free_device(ctx, d);
  if (pts) CHECK_OK(ctx, rdx_sp_sync_host_nodes(ctx, pts)); /* the tests read the host copy */
  return pts;
}

/* The reference quadtree: codes sorted on the host, nodes by binary search. */
static void reference(rdx_context *cpu, const rdx_points *pts, const pset *p, rdx_sp_hlist *l) {
  uint64_t *k = (uint64_t *)malloc((size_t)(p->n + 1) * 8), *v = (uint64_t *)malloc((size_t)(p->n + 1) * 8);
  for (int64_t i = 0; i < p->n; i++) k[i] = rdx_sp_point_key(&pts->grid, p->x[i], p->y[i]), v[i] = (uint64_t)i;
  CHECK_OK(cpu, rdx_sp_radix_sort_cpu(cpu, k, v, p->n, 0, 64));
  memset(l, 0, sizeof *l);
  if (p->n == 0) {
    rdx_sp_hnode r;
    memset(&r, 0, sizeof r);
    r.leaf = 1;
    CHECK_OK(cpu, rdx_sp_hlist_push(cpu, l, r));
  } else {
    CHECK_OK(cpu, rdx_sp_qt_subtree(cpu, k, p->n, 0, 0, pts->depth, pts->cap, l));
  }
  CHECK_OK(cpu, rdx_sp_hlist_link(cpu, l, 0));
  free(k);
  free(v);
}

/* Compare an index's nodes with a reference list; leaf fpos only when `leaf_fpos`. */
static int same_nodes(const rdx_points *pts, const rdx_sp_hlist *l, int leaf_fpos, int report, const char *what) {
  const rdx_sp_nodes *H = &pts->host;
  if (H->n != l->n) {
    if (report) CHECK_FAIL_("%s: %lld nodes, reference %lld", what, (long long)H->n, (long long)l->n);
    return 0;
  }
  for (int64_t i = 0; i < H->n; i++) {
    const rdx_sp_hnode *r = &l->v[i];
    int bad = H->key[i] != r->key || H->level[i] != r->level || H->leaf[i] != r->leaf || H->len[i] != r->len ||
              H->count[i] != r->count || ((!r->leaf || leaf_fpos) && H->fpos[i] != r->fpos) ||
              (pts->kind == RDX_POINTS_KDTREE && H->split[i] != r->split);
    if (bad) {
      if (report)
        CHECK_FAIL_("%s: node %lld is (key %llu, level %d, leaf %d, fpos %lld, len %lld, count %lld, split %g), reference "
                    "(key %llu, level %d, leaf %d, fpos %lld, len %lld, count %lld, split %g)",
                    what, (long long)i, (unsigned long long)H->key[i], H->level[i], H->leaf[i], (long long)H->fpos[i],
                    (long long)H->len[i], (long long)H->count[i], H->split[i], (unsigned long long)r->key, r->level, r->leaf,
                    (long long)r->fpos, (long long)r->len, (long long)r->count, r->split);
      return 0;
    }
  }
  return 1;
}

static int leaf_levels(const rdx_points *pts) {
  uint64_t mask = 0;
  for (int64_t i = 0; i < pts->host.n; i++)
    if (pts->host.leaf[i] && pts->host.len[i]) mask |= 1ull << pts->host.level[i];
  int c = 0;
  for (; mask; mask &= mask - 1) c++;
  return c;
}

static void fixture(rdx_context *ctx) {
  /* codes 0,0,1,3,4,6,15,15,15 on a 4 x 4 grid over [0, 4]^2: cell centres, shuffled */
  static const double xy[9][2] = {{3.5, 3.5}, {0.5, 0.5}, {2.5, 1.5}, {1.5, 0.5}, {3.5, 3.5},
                                  {0.5, 0.5}, {1.5, 1.5}, {2.5, 0.5}, {3.5, 3.5}};
  static const double box[4] = {0, 0, 4, 4};
  static const uint64_t key[8] = {0, 0, 1, 3, 0, 1, 3, 15};
  static const int level[8] = {0, 1, 1, 1, 2, 2, 2, 2}, leaf[8] = {0, 0, 1, 0, 1, 1, 1, 1};
  static const int64_t len[8] = {3, 3, 2, 1, 2, 1, 1, 3}, count[8] = {9, 4, 2, 3, 2, 1, 1, 3};
  /* the digest's f_pos with the root stored at index 0 (n_top = 1): internal + 1, leaves same */
  static const int64_t fpos_bu[8] = {1, 4, 4, 7, 0, 2, 3, 6}, fpos_td[8] = {1, 4, 0, 7, 2, 4, 5, 6};
  for (int dt = 0; dt < 2; dt++) {
    pset p;
    pset_alloc(&p, 9, dt ? RDX_F64 : RDX_F32);
    for (int i = 0; i < 9; i++) pset_set(&p, i, xy[i][0], xy[i][1]);
    for (int variant = 0; variant < 3; variant++) {
      CASE(qtree_fixture_paper);
      rdx_points_method method = variant == 1 ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
      int debug = variant == 2 ? RDX_SP_DEBUG_PAPER_LINE9 : 0;
      rdx_points *pts = build(ctx, &p, RDX_POINTS_QUADTREE, method, 2, 2, debug, box);
      if (!pts) continue;
      const rdx_sp_nodes *H = &pts->host;
      CHECK_EQ(H->n, 8);
      for (int i = 0; i < 8 && H->n == 8; i++) {
        CHECK_EQ(H->key[i], key[i]);
        CHECK_EQ(H->level[i], level[i]);
        CHECK_EQ(H->leaf[i], leaf[i]);
        CHECK_EQ(H->len[i], len[i]);
        CHECK_EQ(H->count[i], count[i]);
        /* line 9 as printed yields TD's offsets on BU's point order */
        CHECK_EQ(H->fpos[i], variant == 0 ? fpos_bu[i] : fpos_td[i]);
      }
      if (variant == 2) {
        CASE(qtree_paper_line9_fails);
        CHECK(!pc_tree_ok(ctx, pts, 0));
      } else {
        CHECK(pc_tree_ok(ctx, pts, 1));
      }
      rdx_points_destroy(pts);
    }
    pset_free(&p);
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  pc_watchdog(240);
  rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
  co.backend = RDX_BACKEND_CPU;
  rdx_context *cpu = NULL;
  CHECK_OK(cpu, rdx_context_create(&co, &cpu));
  fixture(ctx);

  static const int64_t sizes[] = {0, 1, 2, 7, 300, 5000, 60000};
  static const struct {
    int cap, depth;
  } shapes[] = {{4, 16}, {1, 16}, {32, 2}, {16, 1}, {8, 17}, {200, 31}, {3, 31}};
  int paper_caught = 0, paper_tried = 0;
  for (int gen = 0; gen < GEN_COUNT; gen++) {
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      int64_t n = sizes[si];
      if (gen == GEN_IDENTICAL && n > 5000) continue;
      rdx_dtype dt = (si + (size_t)gen) % 2 ? RDX_F64 : RDX_F32;
      pset p = pset_make(gen, n, dt);
      for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        if (n > 5000 && sh % 2) continue;
        if (shapes[sh].cap == 1 && n > 5000) continue; /* one point per leaf down to 16 levels */
        check_case_ = gen_names[gen];
        int cap = shapes[sh].cap, depth = shapes[sh].depth;
        /* a given box (a bit larger than the points) half the time */
        double box[4] = {-60, 0, 160, 80};
        const double *bp = check_below(2) ? box : NULL;
        if (gen == GEN_NEGZERO) bp = NULL;
        rdx_points *bu = build(ctx, &p, RDX_POINTS_QUADTREE, RDX_POINTS_BOTTOM_UP, cap, depth, 0, bp);
        rdx_points *td = build(ctx, &p, RDX_POINTS_QUADTREE, RDX_POINTS_TOP_DOWN, cap, depth, 0, bp);
        if (!bu || !td) {
          rdx_points_destroy(bu);
          rdx_points_destroy(td);
          continue;
        }
        CASE(qtree_bottom_up_equals_top_down);
        check_case_ = gen_names[gen];
        rdx_sp_hlist ref;
        reference(cpu, bu, &p, &ref);
        char what[160];
        snprintf(what, sizeof what, "bottom-up, %s n %lld cap %d depth %d", gen_names[gen], (long long)n, cap, depth);
        same_nodes(bu, &ref, 1, 1, what);
        snprintf(what, sizeof what, "top-down, %s n %lld cap %d depth %d", gen_names[gen], (long long)n, cap, depth);
        same_nodes(td, &ref, 0, 1, what);
        CHECK(pc_tree_ok(ctx, bu, 1));
        CHECK(pc_tree_ok(ctx, td, 1));
        CHECK_EQ(rdx_points_count(bu), n);
        /* The paper's line 9: wherever its leaf offsets differ from the fix (leaves on several
         * levels, out of Z order), the invariant check must fail; where they agree, pass. */
        if (leaf_levels(bu) > 1 && paper_tried < 60) {
          CASE(qtree_paper_line9_fails);
          check_case_ = gen_names[gen];
          rdx_points *pl = build(ctx, &p, RDX_POINTS_QUADTREE, RDX_POINTS_BOTTOM_UP, cap, depth, RDX_SP_DEBUG_PAPER_LINE9, bp);
          if (pl && pl->host.n == bu->host.n) {
            int differs = 0;
            for (int64_t i = 0; i < pl->host.n; i++) differs |= pl->host.fpos[i] != bu->host.fpos[i];
            paper_tried++;
            int ok = pc_tree_ok(ctx, pl, 0);
            if (differs) paper_caught++;
            if (ok == differs) CHECK_FAIL_("paper line 9: offsets %s the fix but the check %s", differs ? "differ from" : "equal",
                                           ok ? "passes" : "fails");
          }
          rdx_points_destroy(pl);
        }
        rdx_sp_hlist_free(cpu, &ref);
        rdx_points_destroy(bu);
        rdx_points_destroy(td);

        /* k-d tree: invariants, and the same nodes as the CPU build */
        CASE(kdtree_build);
        check_case_ = gen_names[gen];
        int kdepth = depth > 16 ? 48 : depth;
        rdx_points *kd = build(ctx, &p, RDX_POINTS_KDTREE, RDX_POINTS_BOTTOM_UP, cap, kdepth, 0, bp);
        if (kd) {
          CHECK(pc_tree_ok(ctx, kd, 1));
          if (pc_gpu(ctx)) {
            rdx_points *kc = build(cpu, &p, RDX_POINTS_KDTREE, RDX_POINTS_BOTTOM_UP, cap, kdepth, 0, bp);
            rdx_sp_hlist l;
            memset(&l, 0, sizeof l);
            for (int64_t i = 0; kc && i < kc->host.n; i++) {
              rdx_sp_hnode h;
              h.key = kc->host.key[i], h.fpos = kc->host.fpos[i], h.len = kc->host.len[i], h.count = kc->host.count[i];
              h.room = kc->host.room[i], h.split = kc->host.split[i], h.level = kc->host.level[i], h.leaf = kc->host.leaf[i];
              CHECK_OK(cpu, rdx_sp_hlist_push(cpu, &l, h));
            }
            snprintf(what, sizeof what, "k-d vs cpu, %s n %lld cap %d", gen_names[gen], (long long)n, cap);
            same_nodes(kd, &l, 1, 1, what);
            rdx_sp_hlist_free(cpu, &l);
            rdx_points_destroy(kc);
          }
          rdx_points_destroy(kd);
        }
      }
      pset_free(&p);
    }
  }
  CASE(qtree_paper_line9_fails);
  printf("paper line 9 caught on %d of %d random multi-level trees\n", paper_caught, paper_tried);
  CHECK(paper_caught >= 10);
  rdx_context_destroy(cpu);
  return check_end(ctx);
}
