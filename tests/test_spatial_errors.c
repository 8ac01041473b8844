/*
 * test_spatial_errors.c: the spatial calls' contracts outside the happy path, and the Morton
 * grid, for the backend given by --backend.
 *
 * Cases:
 *  - morton_codes: interleave round trips, x in the even bits, parent = code >> 2, the cell map
 *    at the box edges, on cell boundaries and monotone;
 *  - points_build_bad_input: options (sizes, kinds, methods, capacities, depths, boxes), arrays
 *    (dtype, columns, NULL data), NaN and infinite coordinates, points outside a given box: each
 *    RDX_ERR_INVALID_ARGUMENT with a sentence naming the row, nothing held afterwards;
 *  - points_query_bad_input: type, k = 0 and k > 1024, columns, dtype, NaN and infinite query
 *    values, negative radius, output shapes;
 *  - points_misuse: a handle of another context, a handle that is not one;
 *  - points_negative_zero: -0.0 and 0.0 are one coordinate for builds, matches and windows;
 *  - points_describe: what rdx_points_describe and rdx_points_bytes say;
 *  - points_faults: the memory account fails the 1st, 2nd, ... allocation of a build or query:
 *    out of memory, nothing held afterwards, the index unchanged, until the call goes through.
 */
#include "points_check.h"

static void expect_message(rdx_context *ctx, const char *part) {
  if (strstr(rdx_context_message(ctx), part) == NULL)
    CHECK_FAIL_("message '%s' lacks '%s'", rdx_context_message(ctx), part);
}

static void morton(void) {
  CASE(morton_codes);
  for (int i = 0; i < 2000; i++) {
    uint32_t x = (uint32_t)check_rand_(), y = (uint32_t)check_rand_();
    uint64_t k = rdx_sp_morton(x, y);
    CHECK_EQ(rdx_sp_morton_x(k), x);
    CHECK_EQ(rdx_sp_morton_y(k), y);
    CHECK_EQ(rdx_sp_morton(x, 0) & 0xAAAAAAAAAAAAAAAAull, 0); /* x in the even bits */
    for (int l = 1; l <= 31; l++) {
      int D = 31;
      uint64_t kd = rdx_sp_morton(x >> 1, y >> 1); /* 31-bit coordinates */
      uint64_t kl = kd >> (2 * (D - l));
      CHECK_EQ(kl, rdx_sp_morton((x >> 1) >> (D - l), (y >> 1) >> (D - l)));
      CHECK_EQ(kl >> 2, kd >> (2 * (D - l + 1)));
    }
  }
  /* the grid over [0, 2^D]: integer coordinates fall exactly at cell starts */
  for (int D = 1; D <= 31; D += 5) {
    double side = ldexp(1.0, D);
    rdx_sp_grid g;
    memset(&g, 0, sizeof g);
    g.x0 = 0, g.y0 = 0, g.x1 = side, g.y1 = side, g.depth = D, g.max_cell = (uint32_t)(side - 1);
    g.sx = g.sy = 1.0, g.cw = g.ch = 1.0;
    CHECK_EQ(rdx_sp_cell(0.0, 0, 1, g.max_cell), 0);
    CHECK_EQ(rdx_sp_cell(-0.0, 0, 1, g.max_cell), 0);
    CHECK_EQ(rdx_sp_cell(side, 0, 1, g.max_cell), g.max_cell); /* the box's far edge: last cell */
    CHECK_EQ(rdx_sp_cell(-5, 0, 1, g.max_cell), 0);
    CHECK_EQ(rdx_sp_cell(1e300, 0, 1, g.max_cell), g.max_cell);
    for (int i = 0; i < 200; i++) {
      uint32_t c = (uint32_t)check_below((uint64_t)g.max_cell + 1);
      CHECK_EQ(rdx_sp_cell((double)c, 0, 1, g.max_cell), c);
      if (c > 0) CHECK_EQ(rdx_sp_cell(nextafter((double)c, 0), 0, 1, g.max_cell), c - 1);
    }
  }
  /* monotone on an awkward box */
  double lo = -123.456, hi = 789.012, s = ldexp(1.0, 16) / (hi - lo);
  for (int i = 0; i < 20000; i++) {
    double a = lo - 10 + (hi - lo + 20) * pc_unit(), b = a + (check_below(2) ? 1e-9 : 3 * pc_unit());
    CHECK(rdx_sp_cell(a, lo, s, 65535) <= rdx_sp_cell(b, lo, s, 65535));
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  pc_watchdog(240);
  morton();
  int64_t held0 = 0;
  rdx_context_memory(ctx, &held0, NULL);

  CASE(points_build_bad_input);
  {
    double xy[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    rdx_array a = rdx_host_matrix(xy, 4, 2, RDX_F64);
    rdx_points *pts = (rdx_points *)1;
    rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, NULL), RDX_ERR_INVALID_ARGUMENT);
    o.size = 3;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    CHECK(pts == NULL);
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    o.kind = (rdx_points_kind)RDX_POINTS_TOP_DOWN; /* a swapped enum */
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "kind");
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    o.method = (rdx_points_method)RDX_POINTS_KDTREE;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    o.kind = RDX_POINTS_KDTREE, o.method = RDX_POINTS_TOP_DOWN;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    o.leaf_capacity = -1;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o.leaf_capacity = (1 << 30) + 1;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    o.max_depth = 32;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o.kind = RDX_POINTS_KDTREE, o.max_depth = 57;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o.max_depth = -3;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    o.use_box = true, o.box[0] = 0, o.box[1] = 0, o.box[2] = NAN, o.box[3] = 4;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o.box[2] = -1;
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    o.box[2] = 2.5, o.box[3] = 5; /* row 3 (3, 3) lies outside */
    CHECK_STATUS(ctx, rdx_points_build(ctx, a, &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "row 3");
    expect_message(ctx, "outside");
    o.box[2] = 3; /* on the edge is inside */
    CHECK_OK(ctx, rdx_points_build(ctx, a, &o, &pts));
    rdx_points_destroy(pts);
    pts = NULL;
    o = (rdx_points_options)RDX_POINTS_OPTIONS_INIT;
    uint64_t u[8] = {0};
    CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_host_matrix(u, 4, 2, RDX_U64), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_host_matrix(xy, 2, 4, RDX_F64), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_host_array(xy, 8, RDX_F64), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_host_matrix(NULL, 4, 2, RDX_F64), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    for (int kind = 0; kind < 2; kind++) {
      o.kind = kind ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
      double bad_xy[8] = {0, 0, 1, 1, 2, NAN, 3, 3};
      CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_host_matrix(bad_xy, 4, 2, RDX_F64), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
      expect_message(ctx, "row 2");
      float inf_xy[8] = {0, 0, 1, 1, 2, 2, -INFINITY, 3};
      CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_host_matrix(inf_xy, 4, 2, RDX_F32), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
      expect_message(ctx, "row 3");
      expect_message(ctx, "non-finite");
      CHECK(pts == NULL);
    }
    if (!pc_gpu(ctx)) { /* device memory claimed on a CPU context */
      CHECK_STATUS(ctx, rdx_points_build(ctx, rdx_device_matrix(xy, 4, 2, RDX_F64), &o, &pts), RDX_ERR_INVALID_ARGUMENT);
    }
    int64_t held = 0;
    rdx_context_memory(ctx, &held, NULL);
    CHECK_EQ(held, held0);
  }

  pset p = pset_make(GEN_UNIFORM, 1000, RDX_F64);
  rdx_points *pts = NULL;
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.leaf_capacity = 16;
  CHECK_OK(ctx, rdx_points_build(ctx, pset_array(&p), &o, &pts));

  CASE(points_query_bad_input);
  if (pts) {
    double q4[8] = {0, 10, 50, 60, 1, 2, 3, 4};
    uint64_t counts[4], offs[5] = {0, 0, 0, 0, 0}, rows[4];
    rdx_array ca = rdx_host_array(counts, 2, RDX_U64);
    rdx_points_query q = RDX_POINTS_QUERY_INIT;
    q.type = (rdx_points_query_type)0x999;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 2, 4, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    q.type = RDX_POINTS_KNN, q.k = 0;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 4, 2, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "k 0");
    q.k = 1025;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 4, 2, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    q.k = 1024;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 2, 4, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    q.type = RDX_POINTS_WINDOW;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 4, 2, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    float qf[8] = {0};
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(qf, 2, 4, RDX_F32), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "f64");
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 2, 4, RDX_F64), &q, rdx_host_array(counts, 3, RDX_U64)),
                 RDX_ERR_INVALID_ARGUMENT);
    q4[5] = NAN;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 2, 4, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "row 1");
    q4[5] = INFINITY;
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(q4, 2, 4, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    q.type = RDX_POINTS_WITHIN;
    double c3[6] = {1, 20, 5, 2, 30, -0.5};
    CHECK_STATUS(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(c3, 2, 3, RDX_F64), &q, ca), RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "negative radius");
    c3[5] = 0.0;
    CHECK_OK(ctx, rdx_points_query_count(ctx, pts, rdx_host_matrix(c3, 2, 3, RDX_F64), &q, ca));
    /* offsets of the wrong length, and row_ids too short for offsets[m] */
    CHECK_STATUS(ctx, rdx_points_query_fill(ctx, pts, rdx_host_matrix(c3, 2, 3, RDX_F64), &q, rdx_host_array(offs, 2, RDX_U64),
                                            rdx_host_array(rows, 4, RDX_U64)),
                 RDX_ERR_INVALID_ARGUMENT);
    offs[2] = 9;
    CHECK_STATUS(ctx, rdx_points_query_fill(ctx, pts, rdx_host_matrix(c3, 2, 3, RDX_F64), &q, rdx_host_array(offs, 3, RDX_U64),
                                            rdx_host_array(rows, 4, RDX_U64)),
                 RDX_ERR_INVALID_ARGUMENT);
    /* an empty batch's one offset must be 0, as for the key fills */
    uint64_t rows9[9];
    CHECK_STATUS(ctx, rdx_points_query_fill(ctx, pts, rdx_host_matrix(c3, 0, 3, RDX_F64), &q, rdx_host_array(offs + 2, 1, RDX_U64),
                                            rdx_host_array(rows9, 9, RDX_U64)),
                 RDX_ERR_INVALID_ARGUMENT);
    expect_message(ctx, "offsets[0] is 9, not 0");
    rdx_result *r = (rdx_result *)1;
    CHECK_STATUS(ctx, rdx_points_query_alloc(ctx, pts, rdx_host_matrix(c3, 2, 3, RDX_F64), NULL, &r), RDX_ERR_INVALID_ARGUMENT);
    CHECK(r == NULL);
  }

  CASE(points_misuse);
  if (pts) {
    rdx_context_options co = RDX_CONTEXT_OPTIONS_INIT;
    co.backend = RDX_BACKEND_CPU;
    rdx_context *other = NULL;
    CHECK_OK(other, rdx_context_create(&co, &other));
    uint64_t counts[2];
    double q4[8] = {0, 10, 50, 60, 1, 2, 3, 4};
    rdx_points_query q = RDX_POINTS_QUERY_INIT;
    CHECK_STATUS(other, rdx_points_query_count(other, pts, rdx_host_matrix(q4, 2, 4, RDX_F64), &q, rdx_host_array(counts, 2, RDX_U64)),
                 RDX_ERR_MISUSE);
    CHECK_STATUS(other, rdx_points_erase(other, pts, rdx_host_array(counts, 0, RDX_U64)), RDX_ERR_MISUSE);
    rdx_points fake;
    memset(&fake, 0, sizeof fake);
    CHECK_STATUS(ctx, rdx_points_bytes(ctx, &fake, NULL, NULL), RDX_ERR_MISUSE);
    CHECK_STATUS(ctx, rdx_points_bytes(ctx, NULL, NULL, NULL), RDX_ERR_INVALID_ARGUMENT);
    CHECK_EQ(rdx_points_count(&fake), 0);
    rdx_points_destroy(&fake); /* not a live handle: ignored */
    rdx_points_destroy(NULL);
    rdx_context_destroy(other);
  }

  CASE(points_describe);
  if (pts) {
    rdx_points_info info;
    info.size = sizeof info;
    CHECK_OK(ctx, rdx_points_describe(ctx, pts, &info));
    CHECK_EQ(info.count, 1000);
    CHECK_EQ(info.id_end, 1000);
    CHECK_EQ(info.kind, RDX_POINTS_QUADTREE);
    CHECK_EQ(info.method, RDX_POINTS_BOTTOM_UP);
    CHECK_EQ(info.dtype, RDX_F64);
    CHECK_EQ(info.leaf_capacity, 16);
    CHECK_EQ(info.max_depth, 16);
    CHECK(info.n_leaves > 1000 / 16 && info.n_nodes > info.n_leaves && info.depth >= 2);
    double bx[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    for (int64_t i = 0; i < p.n; i++) {
      if (p.x[i] < bx[0]) bx[0] = p.x[i];
      if (p.y[i] < bx[1]) bx[1] = p.y[i];
      if (p.x[i] > bx[2]) bx[2] = p.x[i];
      if (p.y[i] > bx[3]) bx[3] = p.y[i];
    }
    for (int i = 0; i < 4; i++) CHECK(info.box[i] == bx[i]); /* the computed box is the tight one */
    int64_t res = 0, peak = 0;
    CHECK_OK(ctx, rdx_points_bytes(ctx, pts, &res, &peak));
    CHECK(res >= 1000 * 24 && peak >= res);
    info.size = 8;
    CHECK_STATUS(ctx, rdx_points_describe(ctx, pts, &info), RDX_ERR_INVALID_ARGUMENT);
  }
  rdx_points_destroy(pts);
  pset_free(&p);

  CASE(points_faults);
  /* the memory account fails its 1st, 2nd, ... allocation: builds and queries report out of
   * memory, hold nothing afterwards, and an existing index answers as before */
  for (int kind = 0; kind < 3; kind++) {
    pset fp = pset_make(GEN_CLUSTERED, 3000, kind == 1 ? RDX_F32 : RDX_F64);
    rdx_points_options fo = RDX_POINTS_OPTIONS_INIT;
    fo.kind = kind == 2 ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
    fo.method = kind == 1 ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
    fo.leaf_capacity = 8;
    int64_t base = 0, now = 0;
    rdx_context_memory(ctx, &base, NULL);
    rdx_points *fpts = NULL;
    rdx_status st = RDX_OK;
    int64_t nth;
    for (nth = 1; nth < 100000; nth += 1 + (nth > 64 ? nth / 8 : 0)) {
      rdx_mem_fail_after(ctx, nth);
      st = rdx_points_build(ctx, pset_array(&fp), &fo, &fpts);
      rdx_mem_fail_after(ctx, 0);
      if (st == RDX_OK) break;
      if (st != RDX_ERR_HOST_OUT_OF_MEMORY && st != RDX_ERR_DEVICE_OUT_OF_MEMORY)
        CHECK_FAIL_("build fault %lld: %s (%s)", (long long)nth, rdx_status_name(st), rdx_context_message(ctx));
      CHECK(fpts == NULL);
      rdx_context_memory(ctx, &now, NULL);
      if (now != base) {
        CHECK_FAIL_("build fault %lld left %lld bytes held", (long long)nth, (long long)(now - base));
        break;
      }
    }
    CHECK_OK(ctx, st);
    if (!fpts) {
      pset_free(&fp);
      continue;
    }
    points_oracle fo_oracle;
    CHECK(points_oracle_init(&fo_oracle, fp.n, fp.x, fp.y, fp.id));
    for (int type = 0; type < 4; type++) {
      qset qs = qset_make(&fp, type, type == PO_KNN ? 9 : 0, 80);
      rdx_points_query fq = RDX_POINTS_QUERY_INIT;
      fq.type = pc_api_type(type);
      fq.k = qs.k;
      rdx_array qa = rdx_host_matrix(qs.data, qs.m, pc_cols(type), qs.dt);
      rdx_result *r = NULL;
      for (nth = 1; nth < 100000; nth += 1 + (nth > 64 ? nth / 8 : 0)) {
        rdx_context_memory(ctx, &base, NULL);
        rdx_mem_fail_after(ctx, nth);
        st = rdx_points_query_alloc(ctx, fpts, qa, &fq, &r);
        rdx_mem_fail_after(ctx, 0);
        if (st == RDX_OK) break;
        if (st != RDX_ERR_HOST_OUT_OF_MEMORY && st != RDX_ERR_DEVICE_OUT_OF_MEMORY)
          CHECK_FAIL_("query fault %lld: %s (%s)", (long long)nth, rdx_status_name(st), rdx_context_message(ctx));
        CHECK(r == NULL);
        rdx_context_memory(ctx, &now, NULL);
        if (now != base) {
          CHECK_FAIL_("query fault %lld left %lld bytes held", (long long)nth, (long long)(now - base));
          break;
        }
      }
      CHECK_OK(ctx, st);
      if (r) {
        uint64_t *ho = r->offsets, *hr = r->row_ids;
        pc_compare(&fo_oracle, &qs, ho, hr, "after faults");
        rdx_result_free(ctx, r);
      }
      qset_free(&qs);
    }
    points_oracle_free(&fo_oracle);
    rdx_points_destroy(fpts);
    pset_free(&fp);
  }

  CASE(points_negative_zero);
  for (int kind = 0; kind < 2; kind++) {
    double xy[8] = {-0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 1.0, 1.0};
    rdx_points_options oz = RDX_POINTS_OPTIONS_INIT;
    oz.kind = kind ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
    oz.leaf_capacity = 1;
    rdx_points *z = NULL;
    CHECK_OK(ctx, rdx_points_build(ctx, rdx_host_matrix(xy, 4, 2, RDX_F64), &oz, &z));
    if (!z) continue;
    double qm[4] = {0.0, 0.0, -0.0, 0.0};
    rdx_points_query q = RDX_POINTS_QUERY_INIT;
    q.type = RDX_POINTS_MATCH;
    rdx_result *r = NULL;
    CHECK_OK(ctx, rdx_points_query_alloc(ctx, z, rdx_host_matrix(qm, 2, 2, RDX_F64), &q, &r));
    if (r) {
      CHECK_EQ(r->total, 6);
      CHECK_EQ(r->offsets[1], 3);
      for (int i = 0; i < 3; i++) CHECK_EQ(r->row_ids[i], (uint64_t)i);
      rdx_result_free(ctx, r);
    }
    double w[4] = {-0.0, -0.0, 0.0, 0.0};
    q.type = RDX_POINTS_WINDOW;
    CHECK_OK(ctx, rdx_points_query_alloc(ctx, z, rdx_host_matrix(w, 1, 4, RDX_F64), &q, &r));
    if (r) {
      CHECK_EQ(r->total, 3);
      rdx_result_free(ctx, r);
    }
    rdx_points_destroy(z);
  }
  return check_end(ctx);
}
