/*
 * test_spatial_query.c: batched point, window, within-distance and kNN queries against the
 * brute-force oracle, for the backend given by --backend, on quadtrees (bottom-up and top-down)
 * and k-d trees.
 *
 * Cases:
 *  - points_query_sets: uniform, clustered, duplicate-heavy, lattice (points and query edges on
 *    cell boundaries), box-edge, identical and -0.0 sets; sizes 0, 1, 2, 50, 3000, 12000; f32
 *    and f64; capacities 1..512 and depths 1..31; queries on points, at exact distances, far
 *    outside, empty windows, zero radii, k from 1 to beyond n; every public route (count + fill,
 *    allocating call, device queries on GPUs);
 *  - points_query_knn: k in {1, 16, 31, 32, 33} (the GPU's warp kernel and its per-thread walk)
 *    on uniform, clustered, duplicate, lattice and identical sets of 20 (k > n) and 2500
 *    points, quadtrees and k-d trees, ties by id at equal distances;
 *  - points_query_empty: empty batches and the empty index;
 *  - points_query_bad_offsets: a fill with offsets that do not match is refused.
 */
#include "points_check.h"

static rdx_points *build(rdx_context *ctx, const pset *p, rdx_points_kind kind, rdx_points_method method, int cap, int depth) {
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = kind;
  o.method = method;
  o.leaf_capacity = cap;
  o.max_depth = depth;
  rdx_points *pts = NULL;
  rdx_array a = pset_array(p);
  rdx_array d = pc_gpu(ctx) && (check_rand_() & 1) ? pc_to_device(ctx, a) : a;
  CHECK_OK(ctx, rdx_points_build(ctx, d, &o, &pts));
  pc_free_device(ctx, d);
  return pts;
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  pc_watchdog(240);
  static const int64_t sizes[] = {0, 1, 2, 50, 3000, 12000};
  static const struct {
    int cap, qdepth, kdepth;
  } shapes[] = {{16, 16, 48}, {1, 12, 20}, {512, 31, 56}, {4, 2, 3}, {64, 20, 10}};
  for (int gen = 0; gen < GEN_COUNT; gen++) {
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      int64_t n = sizes[si];
      rdx_dtype dt = (si + (size_t)gen) % 2 ? RDX_F64 : RDX_F32;
      pset p = pset_make(gen, n, dt);
      points_oracle o;
      CHECK(points_oracle_init(&o, p.n, p.x, p.y, p.id));
      for (int kind = 0; kind < 3; kind++) {
        size_t sh = (size_t)check_below(sizeof shapes / sizeof shapes[0]);
        if (n > 3000 && shapes[sh].cap == 1) sh = 0;
        static char part[64];
        snprintf(part, sizeof part, "%s/%s", gen_names[gen], pc_kind_name(kind));
        if (!CASE_PART(points_query_sets, part)) continue;
        rdx_points *pts = kind == 2 ? build(ctx, &p, RDX_POINTS_KDTREE, RDX_POINTS_BOTTOM_UP, shapes[sh].cap, shapes[sh].kdepth)
                                    : build(ctx, &p, RDX_POINTS_QUADTREE, kind ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP,
                                            shapes[sh].cap, shapes[sh].qdepth);
        if (!pts) continue;
        snprintf(pc_label, sizeof pc_label, "%s n %lld %s cap %d", pc_kind_name(kind), (long long)n,
                 dt == RDX_F32 ? "f32" : "f64", shapes[sh].cap);
        pc_check_all(ctx, pts, &o, &p, n > 3000 ? 120 : 250);
        rdx_points_destroy(pts);
      }
      points_oracle_free(&o);
      pset_free(&p);
    }
  }

  /* kNN at the GPU's limits (k <= 32 runs one warp per query, k = 33 the per-thread walk), with
   * ties (duplicates; a small integer lattice queried on its sites and cell centres, where many
   * points lie at equal distances), k > n, leaves of one to many 32-point chunks, both kinds. */
  if (CASE_RUN(points_query_knn)) {
    static const int kk[] = {1, 16, 31, 32, 33};
    static const int gens[] = {GEN_UNIFORM, GEN_CLUSTERED, GEN_DUPLICATES, GEN_GRID, GEN_IDENTICAL, -1}; /* -1: lattice */
    static const int64_t kn[] = {20, 2500};
    /* > 64: the GPU's warp kNN starts a leaf's scan near the query and wraps round the leaf */
    static const int caps[] = {4, 40, 100, 300};
    for (size_t gi = 0; gi < sizeof gens / sizeof gens[0]; gi++) {
      for (size_t ni = 0; ni < sizeof kn / sizeof kn[0]; ni++) {
        int64_t n = kn[ni];
        rdx_dtype dt = (gi + ni) % 2 ? RDX_F64 : RDX_F32;
        pset p;
        if (gens[gi] >= 0) {
          p = pset_make(gens[gi], n, dt);
        } else {
          pset_alloc(&p, n, dt);
          for (int64_t i = 0; i < n; i++) pset_set(&p, i, (double)check_below(12) - 3, (double)check_below(12) + 20);
        }
        points_oracle o;
        CHECK(points_oracle_init(&o, p.n, p.x, p.y, p.id));
        for (int kind = 0; kind < 3; kind++) {
          int cap = caps[check_below(4)];
          check_case_ = gens[gi] >= 0 ? gen_names[gens[gi]] : "lattice";
          rdx_points *pts = kind == 2 ? build(ctx, &p, RDX_POINTS_KDTREE, RDX_POINTS_BOTTOM_UP, cap, 48)
                                      : build(ctx, &p, RDX_POINTS_QUADTREE, kind ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP,
                                              cap, check_below(2) ? 16 : 31);
          if (!pts) continue;
          snprintf(pc_label, sizeof pc_label, "knn %s %s n %lld %s cap %d", check_case_, pc_kind_name(kind),
                   (long long)n, dt == RDX_F32 ? "f32" : "f64", cap);
          for (size_t ki = 0; ki < sizeof kk / sizeof kk[0]; ki++) {
            qset s = qset_make(&p, PO_KNN, kk[ki], 60);
            if (gens[gi] < 0) /* lattice: sites, cell centres and edge midpoints (2 or 4 points at equal distances) */
              for (int64_t i = 0; i < s.m; i += 2) {
                double x = (double)check_below(14) - 4, y = (double)check_below(14) + 19;
                int r = (int)check_below(3);
                qset_put(&s, i, 0, x + (r == 1 || r == 2 ? 0.5 : 0.0));
                qset_put(&s, i, 1, y + (r == 2 ? 0.5 : 0.0));
              }
            pc_check_batch(ctx, pts, &o, &s);
            qset_free(&s);
          }
          rdx_points_destroy(pts);
        }
        points_oracle_free(&o);
        pset_free(&p);
      }
    }
  }

  if (CASE_RUN(points_query_empty)) {
    pset p = pset_make(GEN_UNIFORM, 10, RDX_F64);
    rdx_points *pts = build(ctx, &p, RDX_POINTS_QUADTREE, RDX_POINTS_BOTTOM_UP, 4, 16);
    rdx_points_query q = RDX_POINTS_QUERY_INIT;
    rdx_result *r = NULL;
    CHECK_OK(ctx, rdx_points_query_alloc(ctx, pts, rdx_host_matrix(NULL, 0, 4, RDX_F64), &q, &r));
    CHECK(r != NULL && r->n_queries == 0 && r->total == 0);
    rdx_result_free(ctx, r);
    rdx_points_destroy(pts);
    pset_free(&p);
    /* the empty index answers everything with nothing */
    pset e = pset_make(GEN_UNIFORM, 0, RDX_F32);
    pset ten = pset_make(GEN_UNIFORM, 10, RDX_F32);
    for (int kind = 0; kind < 2; kind++) {
      pts = build(ctx, &e, kind ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE, RDX_POINTS_BOTTOM_UP, 4, 8);
      CHECK_EQ(rdx_points_count(pts), 0);
      points_oracle o;
      CHECK(points_oracle_init(&o, 0, NULL, NULL, NULL));
      pc_check_all(ctx, pts, &o, &ten, 20);
      for (int k = 16; k <= 33; k += 17) { /* both GPU kNN kernels */
        qset s = qset_make(&ten, PO_KNN, k, 20);
        pc_check_batch(ctx, pts, &o, &s);
        qset_free(&s);
      }
      points_oracle_free(&o);
      rdx_points_destroy(pts);
    }
    pset_free(&e);
    pset_free(&ten);
  }

  if (CASE_RUN(points_query_bad_offsets)) {
    pset p = pset_make(GEN_UNIFORM, 500, RDX_F64);
    rdx_points *pts = build(ctx, &p, RDX_POINTS_QUADTREE, RDX_POINTS_BOTTOM_UP, 8, 16);
    qset s = qset_make(&p, PO_WINDOW, 0, 20);
    rdx_points_query q = RDX_POINTS_QUERY_INIT;
    uint64_t counts[20], offsets[21], rows[4096];
    rdx_array qa = rdx_host_matrix(s.data, 20, 4, RDX_F64);
    CHECK_OK(ctx, rdx_points_query_count(ctx, pts, qa, &q, rdx_host_array(counts, 20, RDX_U64)));
    uint64_t total = 0;
    CHECK_OK(ctx, rdx_counts_to_offsets(ctx, rdx_host_array(counts, 20, RDX_U64), rdx_host_array(offsets, 21, RDX_U64), &total));
    /* shift one boundary: the total stays, one query's range is wrong */
    int j = 0;
    while (j < 19 && counts[j] == 0) j++;
    if (counts[j] > 0 && total < 4096) {
      offsets[j + 1] -= 1;
      CHECK_STATUS(ctx, rdx_points_query_fill(ctx, pts, qa, &q, rdx_host_array(offsets, 21, RDX_U64),
                                              rdx_host_array(rows, (int64_t)total, RDX_U64)),
                   RDX_ERR_INVALID_ARGUMENT);
    }
    qset_free(&s);
    rdx_points_destroy(pts);
    pset_free(&p);
  }
  return check_end(ctx);
}
