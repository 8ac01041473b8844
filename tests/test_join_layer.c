/*
 * test_join_layer.c: polygon layers (rdx_polygons_create, _load, _save, _describe, _destroy) on
 * the backend given by --backend.
 *
 * Cases:
 *  - layer_bad_input: every validation error (arguments, shapes, dtypes, locations, offsets,
 *    rings of too few distinct vertices, NaN, infinite and out-of-range coordinates), each
 *    RDX_ERR_INVALID_ARGUMENT with its sentence naming feature, ring and vertex, *out NULL and
 *    nothing held; with many chunks on the thread pool, the smallest bad ring is named;
 *  - layer_merge: closing repeats dropped, consecutive equal vertices merged (also across the
 *    ring's end, and -0.0 with 0.0), nothing else changed;
 *  - layer_orientation: a square with a hole with an island, each ring given in either
 *    orientation and the rings in every order, comes out shell CCW, hole CW, island CCW, with
 *    ids unchanged; a hole touching its shell at a vertex; separate shells of a MultiPolygon;
 *  - layer_large_feature: one feature of 70001 nested squares (shell, holes, islands, holes in
 *    islands) in random orientations, past the per-thread buckets: every ring oriented by its depth;
 *  - layer_crossing_rings: invalid features (crossing, touching, repeated rings): normalizing a
 *    normalized layer changes nothing, so saved layers reload identical whatever they hold;
 *  - layer_identical_threads: a large random layer is stored the same with 1 thread and many;
 *  - layer_generator: `raydex gen polygons`' layers: grids of strictly convex quads sharing their
 *    edges exactly, no edge axis-aligned; random polygons simple, counter-clockwise, overlapping;
 *    the same bits for the same seed; refused requests;
 *  - layer_f32: f32 coordinates widened exactly, dtype kept;
 *  - layer_device_input: device arrays on GPU backends give the layer host arrays give;
 *    on the CPU backend a device claim is refused;
 *  - layer_describe: what rdx_polygons_describe says; misuse (another context's layer, a
 *    pointer that is not a layer, NULLs, a small info->size);
 *  - layer_empty: no features, and features without rings;
 *  - layer_save_load: round trips give the identical layer (f64, f32, empty);
 *  - layer_files_refused: truncated, corrupted (each section and the header), foreign,
 *    future-version, trailing bytes, missing and directory paths: RDX_ERR_PARSE or RDX_ERR_IO with
 *    what is wrong; a mutation loop over a valid file never crashes;
 *  - layer_killed_writer (cpu): a save killed mid-write (fork, SIGKILL) leaves the old file;
 *  - layer_gdal: GeoJSON and WKT in CSV written here read through GDAL (Polygon, MultiPolygon,
 *    3D, named layers, refused geometry types, empty and absent geometries as features without
 *    rings), or a visible "skipped: no GDAL" line and RDX_ERR_UNSUPPORTED;
 *  - layer_faults: the memory account fails the 1st, 2nd, ... allocation of a create and a load:
 *    out of memory and nothing held, until the call goes through.
 */
#include "io/layers.h"
#include "join/exact_hd.h"
#include "join/join.h"
#include "join_check.h"

#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[256], path2[256];
static int64_t held0;

static rdx_polygons_input input_of(const uint64_t *fo, int64_t nf, const uint64_t *ro, int64_t nr, const void *xy,
                                   int64_t nv, rdx_dtype dt) {
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = rdx_host_array(fo, nf + 1, RDX_U64);
  in.ring_offsets = rdx_host_array(ro, nr + 1, RDX_U64);
  in.coords = rdx_host_matrix(xy, nv, 2, dt);
  return in;
}

/* create must fail with status and a message containing part, holding nothing */
static void expect_refused(rdx_context *ctx, const rdx_polygons_input *in, rdx_status want, const char *part) {
  rdx_polygons *p = (rdx_polygons *)1;
  CHECK_STATUS(ctx, rdx_polygons_create(ctx, in, &p), want);
  CHECK(p == NULL);
  expect_message(ctx, part);
  CHECK_EQ(held(ctx), held0);
  if (p != NULL && p != (rdx_polygons *)1) rdx_polygons_destroy(p);
}

/* Twice the signed area of stored ring r, exact for the small integers used here. */
static double ring_area2(const rdx_polygons *p, int64_t r) {
  const rdx_jn_arrays *a = &p->host;
  long double s = 0;
  for (uint64_t v = a->ring_off[r]; v < a->ring_off[r + 1]; v++) {
    uint64_t w = v + 1 < a->ring_off[r + 1] ? v + 1 : a->ring_off[r];
    s += (long double)a->xy[2 * v] * a->xy[2 * w + 1] - (long double)a->xy[2 * w] * a->xy[2 * v + 1];
  }
  return (double)s;
}

/* Ring r of p holds the points of ring (pts, n) as a cycle, in either direction. */
static int same_cycle(const rdx_polygons *p, int64_t r, const double *pts, int n) {
  const rdx_jn_arrays *a = &p->host;
  uint64_t v0 = a->ring_off[r];
  if ((int)(a->ring_off[r + 1] - v0) != n) return 0;
  for (int start = 0; start < n; start++)
    for (int dir = -1; dir <= 1; dir += 2) {
      int ok = 1;
      for (int k = 0; k < n && ok; k++) {
        int i = ((start + dir * k) % n + n) % n;
        ok = a->xy[2 * (v0 + (uint64_t)k)] == pts[2 * i] && a->xy[2 * (v0 + (uint64_t)k) + 1] == pts[2 * i + 1];
      }
      if (ok) return 1;
    }
  return 0;
}

/* The storage of two layers is the same, byte for byte. */
static void check_identical(const rdx_polygons *a, const rdx_polygons *b) {
  CHECK_EQ(a->host.n_features, b->host.n_features);
  CHECK_EQ(a->host.n_rings, b->host.n_rings);
  CHECK_EQ(a->host.n_vertices, b->host.n_vertices);
  CHECK_EQ(a->dtype, b->dtype);
  if (a->host.n_features != b->host.n_features || a->host.n_rings != b->host.n_rings ||
      a->host.n_vertices != b->host.n_vertices)
    return;
  size_t nv = (size_t)a->host.n_vertices;
  CHECK(memcmp(a->host.xy, b->host.xy, 16 * nv) == 0);
  CHECK(memcmp(a->host.ring_off, b->host.ring_off, 8 * ((size_t)a->host.n_rings + 1)) == 0);
  CHECK(memcmp(a->host.feat_off, b->host.feat_off, 8 * ((size_t)a->host.n_features + 1)) == 0);
  CHECK(memcmp(a->host.edge_feat, b->host.edge_feat, 4 * nv) == 0);
  CHECK(memcmp(a->host.edge_end, b->host.edge_end, 4 * nv) == 0);
  CHECK(memcmp(a->lo, b->lo, sizeof a->lo) == 0 && memcmp(a->hi, b->hi, sizeof a->hi) == 0);
}

/* The device copy (GPU contexts) equals the host arrays. */
static void check_device_copy(rdx_context *ctx, const rdx_polygons *p) {
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) {
    CHECK(p->dev.xy == NULL && p->dev_block == NULL);
    return;
  }
  size_t nv = (size_t)p->host.n_vertices;
  double *xy = (double *)malloc(16 * nv + 16);
  uint32_t *ef = (uint32_t *)malloc(4 * nv + 4);
  CHECK_OK(ctx, rdx_copy(ctx, xy, RDX_HOST, p->dev.xy, RDX_DEVICE, 16 * nv));
  CHECK_OK(ctx, rdx_copy(ctx, ef, RDX_HOST, p->dev.edge_end, RDX_DEVICE, 4 * nv));
  CHECK(memcmp(xy, p->host.xy, 16 * nv) == 0);
  CHECK(memcmp(ef, p->host.edge_end, 4 * nv) == 0);
  free(xy);
  free(ef);
}

/* ---- layer_bad_input ---- */

static void bad_input(rdx_context *ctx) {
  CASE(layer_bad_input);
  /* feature 0: one square; feature 1: a square and a triangle */
  uint64_t fo[3] = {0, 1, 3}, ro[4] = {0, 4, 8, 11};
  double xy[22] = {0, 0, 1, 0, 1, 1, 0, 1, 5, 5, 9, 5, 9, 9, 5, 9, 6, 6, 7, 6, 6, 7};
  rdx_polygons_input in = input_of(fo, 2, ro, 3, xy, 11, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  rdx_polygons_destroy(p);
  CHECK_EQ(held(ctx), held0);

  rdx_polygons *q = (rdx_polygons *)1;
  CHECK_STATUS(ctx, rdx_polygons_create(ctx, &in, NULL), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_polygons_create: out is NULL");
  CHECK_STATUS(ctx, rdx_polygons_create(ctx, NULL, &q), RDX_ERR_INVALID_ARGUMENT);
  CHECK(q == NULL);
  expect_message(ctx, "in is NULL");
  CHECK_STATUS(ctx, rdx_polygons_create(NULL, &in, &q), RDX_ERR_INVALID_ARGUMENT);

  rdx_polygons_input b = in;
  b.size = 8;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "in->size 8");
  b = in, b.feature_offsets.dtype = RDX_I64;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature_offsets must be 1-D u64 (dtype i64");
  b = in, b.ring_offsets.columns = 2, b.ring_offsets.count = 2;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "ring_offsets must be 1-D u64 (dtype u64, columns 2)");
  b = in, b.coords.dtype = RDX_U32;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "coords must be (n, 2) f32 or f64 (dtype u32");
  b = in, b.coords.columns = 3;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "coords must be (n, 2) f32 or f64 (dtype f64, columns 3)");
  b = in, b.feature_offsets.count = 0;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature_offsets has no entries");
  b = in, b.coords.data = NULL;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "coords.data is NULL but count is 11");
  b = in, b.coords.count = -1;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "coords.count -1 is negative");
  if (rdx_context_backend(ctx) != RDX_BACKEND_CPU) {
    b = in, b.coords.where = RDX_DEVICE;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "claimed as device memory but is host memory");
  } else {
    b = in, b.ring_offsets.where = RDX_DEVICE;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "ring_offsets is device memory but the context's backend is cpu");
  }

  /* offsets */
  uint64_t fo_b[3] = {1, 1, 3}, fo_d[3] = {0, 2, 1}, fo_l[3] = {0, 1, 2}, ro_b[4] = {0, 4, 8, 12}, ro_d[4] = {0, 8, 4, 11};
  b = in, b.feature_offsets.data = fo_b;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "rdx_polygons_create: feature_offsets[0] is 1, not 0");
  b = in, b.feature_offsets.data = fo_d;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature_offsets[2] 1 < feature_offsets[1] 2 (offsets never descend)");
  b = in, b.feature_offsets.data = fo_l;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature_offsets[2] is 2, but there are 3 rings");
  b = in, b.ring_offsets.data = ro_b;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "ring_offsets[3] is 12, but there are 11 coords rows");
  b = in, b.ring_offsets.data = ro_d;
  expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "ring_offsets[2] 4 < ring_offsets[1] 8");

  /* coordinates: each named by feature, ring within the feature, vertex within the ring */
  struct {
    int at;
    double v;
    const char *msg;
  } bad[] = {
      {2 * 9, NAN, "rdx_polygons_create: feature 1 ring 1 vertex 1 (coords row 9) x is NaN"},
      {2 * 6 + 1, INFINITY, "feature 1 ring 0 vertex 2 (coords row 6) y is inf"},
      {2 * 0, -INFINITY, "feature 0 ring 0 vertex 0 (coords row 0) x is -inf"},
      {2 * 3 + 1, 1e-300, "feature 0 ring 0 vertex 3 (coords row 3) y 1"},
      {2 * 3 + 1, -1e-300, "is neither 0 nor of magnitude in [2^-256, 2^256]"},
      {2 * 10, -0x1p257, "feature 1 ring 1 vertex 2 (coords row 10) x -2.31"},
      {2 * 10, 0x1p-257, "feature 1 ring 1 vertex 2 (coords row 10) x 4.31"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    double c[22];
    memcpy(c, xy, sizeof c);
    c[bad[i].at] = bad[i].v;
    b = in, b.coords.data = c;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, bad[i].msg);
  }
  /* the range's ends are in it */
  {
    double c[22];
    memcpy(c, xy, sizeof c);
    c[0] = 0x1p-256, c[3] = -0x1p256, c[8] = -0.0;
    b = in, b.coords.data = c;
    CHECK_OK(ctx, rdx_polygons_create(ctx, &b, &p));
    rdx_polygons_destroy(p);
  }
  /* rings of too few distinct vertices */
  {
    uint64_t ro2[4] = {0, 4, 8, 11};
    double c[22];
    memcpy(c, xy, sizeof c);
    c[16] = 7, c[17] = 6; /* the triangle's first vertex repeats its second: 2 distinct */
    b = in, b.coords.data = c, b.ring_offsets.data = ro2;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT,
                   "rdx_polygons_create: feature 1 ring 1 has 2 distinct vertices (at least 3 needed)");
    memcpy(c, xy, sizeof c);
    c[4] = 0, c[5] = 0, c[6] = 1, c[7] = 0; /* A B A B: 4 vertices after merging, 2 distinct */
    b = in, b.coords.data = c;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature 0 ring 0 has 2 distinct vertices (at least 3 needed)");
    memcpy(c, xy, sizeof c);
    for (int k = 8; k < 16; k++) c[k] = 3; /* four equal vertices: 1 distinct */
    b = in, b.coords.data = c;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature 1 ring 0 has 1 distinct vertices");
    uint64_t ro3[4] = {0, 4, 4, 11}; /* an empty ring */
    b = in, b.ring_offsets.data = ro3;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature 1 ring 0 has 0 distinct vertices");
    uint64_t ro4[4] = {0, 4, 9, 11}; /* a ring closed onto itself: 0 1 2 3 0 of the triangle's... */
    double c4[22];
    memcpy(c4, xy, sizeof c4);
    c4[16] = 5, c4[17] = 5; /* ring 1 = square + its closing repeat; ring 2 = 2 vertices */
    b = in, b.coords.data = c4, b.ring_offsets.data = ro4;
    expect_refused(ctx, &b, RDX_ERR_INVALID_ARGUMENT, "feature 1 ring 1 has 2 distinct vertices");
  }
  /* many rings over many chunks and threads: the first bad ring is named, not the first found */
  {
    int64_t n = 200000;
    uint64_t *f = (uint64_t *)malloc(8 * (size_t)(n + 1)), *r = (uint64_t *)malloc(8 * (size_t)(n + 1));
    double *c = (double *)malloc(sizeof(double) * 6 * (size_t)n);
    for (int64_t i = 0; i <= n; i++) f[i] = (uint64_t)i, r[i] = 3 * (uint64_t)i;
    for (int64_t i = 0; i < n; i++) {
      double x = (double)(i % 1000) * 2, y = (double)(i / 1000) * 2;
      double t[6] = {x, y, x + 1, y, x, y + 1};
      memcpy(c + 6 * i, t, sizeof t);
    }
    c[6 * (n - 5)] = NAN;
    c[6 * 150001 + 3] = NAN;
    rdx_polygons_input m = input_of(f, n, r, n, c, 3 * n, RDX_F64);
    expect_refused(ctx, &m, RDX_ERR_INVALID_ARGUMENT, "feature 150001 ring 0 vertex 1 (coords row 450004) y is NaN");
    c[6 * 7 + 2] = c[6 * 7], c[6 * 7 + 3] = c[6 * 7 + 1];
    expect_refused(ctx, &m, RDX_ERR_INVALID_ARGUMENT, "feature 7 ring 0 has 2 distinct vertices");
    free(f);
    free(r);
    free(c);
  }
}

/* ---- layer_merge ---- */

static void merge(rdx_context *ctx) {
  CASE(layer_merge);
  /* ring 0: A A B C C C A A (closing repeats after duplicates); ring 1: a triangle with -0.0 and
   * 0.0 as one coordinate and an explicit closing vertex; ring 2 untouched */
  uint64_t fo[3] = {0, 2, 3}, ro[4] = {0, 8, 12, 15};
  double xy[30] = {0, 0, 0, 0, 4, 0, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, /* ring 0 */
                   10, 10, 11, 10, 10, 11, 10, 10,                 /* ring 1 */
                   -0.0, 20, 0.0, 20, 1, 21};                      /* ring 2 */
  xy[16] = 10, xy[17] = 10;
  double t2[6] = {-0.0, 20, 1, 21, 0, 22};
  memcpy(xy + 24, t2, sizeof t2);
  rdx_polygons_input in = input_of(fo, 2, ro, 3, xy, 15, RDX_F64);
  /* ring 2 as given: (-0, 20) (1, 21) (0, 22) */
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  if (p == NULL) return;
  CHECK_EQ(p->host.n_vertices, 3 + 3 + 3);
  CHECK_EQ(p->host.ring_off[1], 3);
  CHECK_EQ(p->host.ring_off[2], 6);
  double r0[6] = {0, 0, 4, 0, 4, 4}, r1[6] = {10, 10, 11, 10, 10, 11};
  CHECK(same_cycle(p, 0, r0, 3));
  CHECK(same_cycle(p, 1, r1, 3));
  CHECK(same_cycle(p, 2, t2, 3));
  for (int64_t e = 0; e < 9; e++) {
    CHECK_EQ(p->host.edge_feat[e], e < 6 ? 0 : 1);
    CHECK_EQ(p->host.edge_end[e], e % 3 == 2 ? e - 2 : e + 1);
  }
  rdx_polygons_info info;
  info.size = sizeof info;
  CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
  CHECK_EQ(info.n_vertices, 9);
  CHECK_EQ(info.n_edges, 9);
  CHECK_EQ(info.n_rings, 3);
  CHECK_EQ(info.n_features, 2);
  check_device_copy(ctx, p);
  rdx_polygons_destroy(p);
  /* -0.0 and 0.0 merge: (0, 0) (-0, 0) (1, 0) (0, 1) keeps 3 vertices */
  uint64_t fo1[2] = {0, 1}, ro1[2] = {0, 4};
  double z[8] = {0.0, 0, -0.0, 0, 1, 0, 0, 1};
  rdx_polygons_input zi = input_of(fo1, 1, ro1, 1, z, 4, RDX_F64);
  CHECK_OK(ctx, rdx_polygons_create(ctx, &zi, &p));
  if (p) CHECK_EQ(p->host.n_vertices, 3);
  rdx_polygons_destroy(p);
}

/* ---- layer_orientation ---- */

static void orientation(rdx_context *ctx) {
  CASE(layer_orientation);
  /* shell [0,10]^2, hole [2,8]^2, island [4,6]^2, as a feature of three rings, plus a feature
   * that is a square on its own; every orientation and every order of the three rings */
  static const double sq[3][8] = {{0, 0, 10, 0, 10, 10, 0, 10}, {2, 2, 8, 2, 8, 8, 2, 8}, {4, 4, 6, 4, 6, 6, 4, 6}};
  static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  int runs = 0;
  for (int pm = 0; pm < 6; pm++)
    for (int flips = 0; flips < 8; flips++) {
      double xy[32];
      for (int k = 0; k < 3; k++) {
        int ring = perms[pm][k];
        for (int v = 0; v < 4; v++) {
          int src = (flips >> ring) & 1 ? 3 - v : v;
          xy[8 * k + 2 * v] = sq[ring][2 * src], xy[8 * k + 2 * v + 1] = sq[ring][2 * src + 1];
        }
      }
      double lone[8] = {20, 0, 20, 3, 23, 3, 23, 0}; /* clockwise as given */
      memcpy(xy + 24, lone, sizeof lone);
      uint64_t fo[3] = {0, 3, 4}, ro[5] = {0, 4, 8, 12, 16};
      rdx_polygons_input in = input_of(fo, 2, ro, 4, xy, 16, RDX_F64);
      rdx_polygons *p = NULL;
      CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
      if (p == NULL) continue;
      for (int k = 0; k < 3; k++) {
        int ring = perms[pm][k];
        double a = ring_area2(p, k);
        if (ring == 1 ? !(a < 0) : !(a > 0))
          CHECK_FAIL_("perm %d flips %d: ring %d (%s) has area2 %g", pm, flips, k,
                      ring == 0 ? "shell" : ring == 1 ? "hole" : "island", a);
        CHECK(same_cycle(p, k, sq[ring], 4)); /* ids and vertices unchanged */
      }
      CHECK(ring_area2(p, 3) > 0);
      CHECK(same_cycle(p, 3, lone, 4));
      runs++;
      rdx_polygons_destroy(p);
    }
  CHECK_EQ(runs, 48);

  /* a hole touching its shell at a vertex (valid OGC), given counter-clockwise; and two shells
   * of a MultiPolygon, one given clockwise */
  {
    double xy[] = {0, 0, 10, 0, 10, 10, 0, 10,  /* shell, CCW */
                   0, 0, 5, 2, 2, 5,            /* hole touching (0, 0), CCW as given */
                   20, 0, 20, 5, 25, 5, 25, 0}; /* second shell, CW as given */
    uint64_t fo[2] = {0, 3}, ro[4] = {0, 4, 7, 11};
    rdx_polygons_input in = input_of(fo, 1, ro, 3, xy, 11, RDX_F64);
    rdx_polygons *p = NULL;
    CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
    if (p) {
      CHECK(ring_area2(p, 0) > 0);
      CHECK(ring_area2(p, 1) < 0);
      CHECK(ring_area2(p, 2) > 0);
      check_device_copy(ctx, p);
    }
    rdx_polygons_destroy(p);
  }
  /* the lowest-leftmost vertex with a horizontal edge on each side of... (a ring whose lowest
   * row holds several vertices), and a nested hole found through a vertex on the shell */
  {
    double xy[] = {0, 0, 3, 0, 6, 0, 6, 6, 0, 6, /* shell CW after reversal below */
                   1, 1, 1, 5, 5, 5, 5, 1};      /* hole, CW as given already */
    double rev[10];
    for (int v = 0; v < 5; v++) rev[2 * v] = xy[2 * (4 - v)], rev[2 * v + 1] = xy[2 * (4 - v) + 1];
    memcpy(xy, rev, sizeof rev);
    uint64_t fo[2] = {0, 2}, ro[3] = {0, 5, 9};
    rdx_polygons_input in = input_of(fo, 1, ro, 2, xy, 9, RDX_F64);
    rdx_polygons *p = NULL;
    CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
    if (p) {
      CHECK(ring_area2(p, 0) > 0);
      CHECK(ring_area2(p, 1) < 0);
    }
    rdx_polygons_destroy(p);
  }
}

/* ---- a random layer: n features of nested squares (a shell, maybe a hole, maybe an island),
 * each ring in a random orientation and starting vertex ---- */

typedef struct gen_layer {
  uint64_t *fo, *ro;
  double *xy;
  int64_t nf, nr, nv;
} gen_layer;

static void gen_free(gen_layer *g) {
  free(g->fo);
  free(g->ro);
  free(g->xy);
}

static gen_layer gen_nested(int64_t nf) {
  gen_layer g;
  g.fo = (uint64_t *)malloc(8 * (size_t)(nf + 1));
  g.ro = (uint64_t *)malloc(8 * (size_t)(3 * nf + 1));
  g.xy = (double *)malloc(sizeof(double) * 2 * 3 * 12 * (size_t)nf);
  g.nf = nf, g.nr = 0, g.nv = 0;
  g.fo[0] = 0, g.ro[0] = 0;
  for (int64_t f = 0; f < nf; f++) {
    double cx = (double)(f % 512) * 100, cy = (double)(f / 512) * 100;
    int rings = 1 + (int)check_below(3);
    for (int k = 0; k < rings; k++) {
      double h = 40.0 - 12.0 * k;
      int per_side = 1 + (int)check_below(3), n = 4 * per_side; /* vertices along each side */
      double pts[2 * 12];
      for (int i = 0; i < n; i++) {
        int side = i / per_side, j = i % per_side;
        double t = -h + 2 * h * j / per_side;
        double x = side == 0 ? t : side == 1 ? h : side == 2 ? -t : -h;
        double y = side == 0 ? -h : side == 1 ? t : side == 2 ? h : -t;
        pts[2 * i] = cx + x, pts[2 * i + 1] = cy + y;
      }
      int start = (int)check_below((uint64_t)n), dir = check_below(2) ? 1 : -1;
      for (int i = 0; i < n; i++) {
        int s = ((start + dir * i) % n + n) % n;
        g.xy[2 * g.nv] = pts[2 * s], g.xy[2 * g.nv + 1] = pts[2 * s + 1];
        g.nv++;
      }
      g.ro[++g.nr] = (uint64_t)g.nv;
    }
    g.fo[f + 1] = (uint64_t)g.nr;
  }
  return g;
}

static void identical_threads(rdx_context *ctx) {
  CASE(layer_identical_threads);
  gen_layer g = gen_nested(40000);
  rdx_polygons_input in = input_of(g.fo, g.nf, g.ro, g.nr, g.xy, g.nv, RDX_F64);
  rdx_polygons *a = NULL, *b = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &a));
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  o.n_threads = 1;
  rdx_context *one = NULL;
  CHECK_OK(one, rdx_context_create(&o, &one));
  CHECK_OK(one, rdx_polygons_create(one, &in, &b));
  if (a && b) {
    check_identical(a, b);
    /* shells CCW, holes CW, islands CCW */
    for (int64_t f = 0; f < g.nf; f++)
      for (uint64_t r = g.fo[f]; r < g.fo[f + 1]; r++) {
        double ar = ring_area2(a, (int64_t)r);
        if ((r - g.fo[f]) % 2 == 0 ? !(ar > 0) : !(ar < 0)) {
          CHECK_FAIL_("feature %lld ring %lld has area2 %g", (long long)f, (long long)(r - g.fo[f]), ar);
          break;
        }
      }
    check_device_copy(ctx, a);
  }
  rdx_polygons_destroy(a);
  rdx_polygons_destroy(b);
  rdx_context_destroy(one);
  gen_free(&g);
}

/* A layer made from a made layer's own arrays is the same layer (normalization is idempotent,
 * for valid and crossing rings alike). */
static void check_renormalizes(rdx_context *ctx, const rdx_polygons *p) {
  rdx_polygons_input in = input_of(p->host.feat_off, p->host.n_features, p->host.ring_off, p->host.n_rings,
                                   p->host.xy, p->host.n_vertices, RDX_F64);
  rdx_polygons *q = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &q));
  if (q) check_identical(p, q);
  rdx_polygons_destroy(q);
}

static void large_feature(rdx_context *ctx) {
  CASE(layer_large_feature);
  /* one feature: a shell [0, 1000]^2, 200 x 200 square holes in it, an island in every other hole,
   * a square inside every fourth island: 70001 rings, 280004 edges, past the threads' buckets */
  int64_t g = 200, nr = 1 + g * g + (g * g + 1) / 2 + (g * g + 3) / 4;
  uint64_t fo[2] = {0, (uint64_t)nr}, *ro = (uint64_t *)malloc(8 * (size_t)(nr + 1));
  double *xy = (double *)malloc(sizeof(double) * 8 * (size_t)nr);
  int64_t r = 0, v = 0;
  int8_t *want = (int8_t *)malloc((size_t)nr);
  ro[0] = 0;
#define SQUARE(x0, y0, side, w)                                                                    \
  do {                                                                                           \
    double sq_[8] = {(x0), (y0), (x0) + (side), (y0), (x0) + (side), (y0) + (side), (x0), (y0) + (side)}; \
    int cw_ = (int)check_below(2);                                                               \
    for (int k_ = 0; k_ < 4; k_++) {                                                             \
      int s_ = cw_ ? 3 - k_ : k_;                                                                \
      xy[2 * v] = sq_[2 * s_], xy[2 * v + 1] = sq_[2 * s_ + 1], v++;                             \
    }                                                                                            \
    want[r] = (w);                                                                               \
    ro[++r] = (uint64_t)v;                                                                       \
  } while (0)
  SQUARE(0.0, 0.0, 1000.0, 1);
  for (int64_t i = 0; i < g * g; i++) {
    double x = 2 + 4.9 * (double)(i % g), y = 2 + 4.9 * (double)(i / g);
    SQUARE(x, y, 4.0, -1);
    if (i % 2 == 0) SQUARE(x + 0.5, y + 0.5, 3.0, 1);
    if (i % 4 == 0) SQUARE(x + 1.0, y + 1.0, 2.0, -1);
  }
#undef SQUARE
  CHECK_EQ(r, nr);
  rdx_polygons_input in = input_of(fo, 1, ro, nr, xy, v, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  if (p) {
    int64_t wrong = 0;
    for (int64_t k = 0; k < nr; k++) {
      double a = ring_area2(p, k);
      if (want[k] > 0 ? !(a > 0) : !(a < 0)) wrong++;
    }
    CHECK_EQ(wrong, 0);
    check_renormalizes(ctx, p);
  }
  rdx_polygons_destroy(p);
  free(ro);
  free(xy);
  free(want);
}

static void crossing_rings(rdx_context *ctx) {
  CASE(layer_crossing_rings);
  /* invalid features: rings that cross, touch along edges, repeat, in random orientations and
   * first vertices; whatever they normalize to, normalizing again changes nothing */
  for (int it = 0; it < 300; it++) {
    int n_rings = 2 + (int)check_below(5);
    uint64_t fo[2] = {0, (uint64_t)n_rings}, ro[8];
    double xy[2 * 8 * 6];
    int64_t v = 0;
    ro[0] = 0;
    for (int k = 0; k < n_rings; k++) {
      int n = 3 + (int)check_below(4);
      for (int i = 0; i < n; i++) { /* small integers: many shared points, collinear edges */
        xy[2 * v] = (double)check_below(6), xy[2 * v + 1] = (double)check_below(6);
        v++;
      }
      ro[k + 1] = (uint64_t)v;
    }
    rdx_polygons_input in = input_of(fo, 1, ro, n_rings, xy, v, RDX_F64);
    rdx_polygons *p = NULL;
    rdx_status st = rdx_polygons_create(ctx, &in, &p);
    if (st == RDX_OK) check_renormalizes(ctx, p);
    else CHECK_EQ(st, RDX_ERR_INVALID_ARGUMENT); /* a ring of fewer than 3 distinct points */
    rdx_polygons_destroy(p);
  }
}

/* ---- layer_generator ---- */

static void generator(rdx_context *ctx) {
  CASE(layer_generator);
  rdx_array fo, ro, xy, fo2, ro2, xy2;
  /* grid: strictly convex counter-clockwise quads, no axis-aligned edge, neighbours sharing edges */
  int64_t n = 1000, cols = 32;
  CHECK_OK(ctx, rdx_gen_polygons(ctx, RDX_PGEN_GRID, n, 4, 7, &fo, &ro, &xy));
  CHECK_OK(ctx, rdx_gen_polygons(ctx, RDX_PGEN_GRID, n, 4, 7, &fo2, &ro2, &xy2));
  CHECK_EQ(xy.count, 4 * n);
  CHECK(memcmp(xy.data, xy2.data, (size_t)xy.count * 16) == 0); /* the same seed, the same bits */
  const double *q = (const double *)xy.data;
  int64_t bad_turn = 0, aligned = 0, unshared = 0;
  for (int64_t f = 0; f < n; f++) {
    const double *c = q + 8 * f;
    CHECK_EQ(((const uint64_t *)fo.data)[f + 1], f + 1);
    CHECK_EQ(((const uint64_t *)ro.data)[f + 1], 4 * (f + 1));
    for (int k = 0; k < 4; k++) {
      const double *a = c + 2 * ((k + 3) % 4), *b = c + 2 * k, *d = c + 2 * ((k + 1) % 4);
      bad_turn += rdx_jn_orient(a[0], a[1], b[0], b[1], d[0], d[1]) <= 0;
      aligned += b[0] == d[0] || b[1] == d[1];
    }
    if (f % cols + 1 < cols && f + 1 < n) { /* the right neighbour's left edge is this right edge */
      const double *r = q + 8 * (f + 1);
      unshared += !(c[2] == r[0] && c[3] == r[1] && c[4] == r[6] && c[5] == r[7]);
    }
    if (f + cols < n) { /* the upper neighbour's bottom edge is this top edge */
      const double *u = q + 8 * (f + cols);
      unshared += !(c[6] == u[0] && c[7] == u[1] && c[4] == u[2] && c[5] == u[3]);
    }
  }
  CHECK_EQ(bad_turn, 0);
  CHECK_EQ(aligned, 0);
  CHECK_EQ(unshared, 0);
  rdx_polygons_input in = input_of((const uint64_t *)fo.data, n, (const uint64_t *)ro.data, n, xy.data, xy.count, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  if (p) CHECK(memcmp(p->host.xy, xy.data, (size_t)xy.count * 16) == 0); /* already oriented, closed, merged */
  rdx_polygons_destroy(p);
  rdx_npy_free(&fo2), rdx_npy_free(&ro2), rdx_npy_free(&xy2);
  CHECK_OK(ctx, rdx_gen_polygons(ctx, RDX_PGEN_GRID, n, 4, 8, &fo2, &ro2, &xy2));
  CHECK(memcmp(xy.data, xy2.data, (size_t)xy.count * 16) != 0); /* another seed, another layer */
  rdx_npy_free(&fo), rdx_npy_free(&ro), rdx_npy_free(&xy);
  rdx_npy_free(&fo2), rdx_npy_free(&ro2), rdx_npy_free(&xy2);

  /* random: simple polygons (no two edges of one meet but neighbours at their shared vertex),
   * counter-clockwise, overlapping one another somewhere */
  n = 2000;
  int v = 9;
  CHECK_OK(ctx, rdx_gen_polygons(ctx, RDX_PGEN_RANDOM, n, v, 11, &fo, &ro, &xy));
  q = (const double *)xy.data;
  int64_t crossing = 0, cw = 0, overlaps = 0;
  for (int64_t f = 0; f < n; f++) {
    const double *c = q + 2 * v * f;
    double area = 0;
    for (int i = 0; i < v; i++) {
      const double *a0 = c + 2 * i, *a1 = c + 2 * ((i + 1) % v);
      area += a0[0] * a1[1] - a1[0] * a0[1];
      for (int k = i + 2; k < v; k++) {
        if (i == 0 && k == v - 1) continue; /* adjacent through the closing edge */
        crossing += rdx_jn_seg_relation(a0, a1, c + 2 * k, c + 2 * ((k + 1) % v)) != RDX_JN_DISJOINT;
      }
    }
    cw += !(area > 0);
    if (f > 0) { /* this polygon's first vertex inside the previous one's box: not a subdivision */
      const double *pb = c - 2 * v;
      double lx = pb[0], hx = pb[0], ly = pb[1], hy = pb[1];
      for (int i = 1; i < v; i++) {
        lx = fmin(lx, pb[2 * i]), hx = fmax(hx, pb[2 * i]);
        ly = fmin(ly, pb[2 * i + 1]), hy = fmax(hy, pb[2 * i + 1]);
      }
      overlaps += c[0] > lx && c[0] < hx && c[1] > ly && c[1] < hy;
    }
  }
  CHECK_EQ(crossing, 0);
  CHECK_EQ(cw, 0);
  CHECK(overlaps > 0 || n < 100);
  in = input_of((const uint64_t *)fo.data, n, (const uint64_t *)ro.data, n, xy.data, xy.count, RDX_F64);
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  rdx_polygons_destroy(p);
  rdx_npy_free(&fo), rdx_npy_free(&ro), rdx_npy_free(&xy);
  /* refused requests */
  CHECK_STATUS(ctx, rdx_gen_polygons(ctx, RDX_PGEN_GRID, 10, 5, 1, &fo, &ro, &xy), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "a grid's cells have 4 vertices, not 5");
  CHECK_STATUS(ctx, rdx_gen_polygons(ctx, RDX_PGEN_RANDOM, 10, 2, 1, &fo, &ro, &xy), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_gen_polygons(ctx, RDX_PGEN_RANDOM, (int64_t)1 << 31, 8, 1, &fo, &ro, &xy),
               RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "what a layer holds");
  CHECK(xy.data == NULL);
  CHECK_EQ(held(ctx), held0);
}

/* ---- layer_f32, layer_device_input ---- */

static void f32_input(rdx_context *ctx) {
  CASE(layer_f32);
  uint64_t fo[2] = {0, 1}, ro[2] = {0, 5};
  float xy[10] = {0.1f, 0.2f, 1.3f, 0.2f, 1.3f, 1.7f, 0.1f, 1.7f, 0.1f, 0.2f};
  rdx_polygons_input in = input_of(fo, 1, ro, 1, xy, 5, RDX_F32);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  if (p == NULL) return;
  CHECK_EQ(p->dtype, RDX_F32);
  CHECK_EQ(p->host.n_vertices, 4);
  for (int v = 0; v < 4; v++) {
    CHECK(p->host.xy[2 * v] == (double)xy[2 * v] && p->host.xy[2 * v + 1] == (double)xy[2 * v + 1]);
  }
  CHECK(p->lo[0] == (double)0.1f && p->hi[1] == (double)1.7f);
  rdx_polygons_info info;
  info.size = sizeof info;
  CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
  CHECK_EQ(info.dtype, RDX_F32);
  rdx_polygons_destroy(p);
  xy[3] = NAN;
  expect_refused(ctx, &in, RDX_ERR_INVALID_ARGUMENT, "feature 0 ring 0 vertex 1 (coords row 1) y is NaN");
  xy[3] = 1e-45f; /* the smallest f32 subnormals are far above 2^-256 */
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  rdx_polygons_destroy(p);
}

static void device_input(rdx_context *ctx) {
  CASE(layer_device_input);
  gen_layer g = gen_nested(3000);
  rdx_polygons_input in = input_of(g.fo, g.nf, g.ro, g.nr, g.xy, g.nv, RDX_F64);
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) {
    in.coords.where = in.ring_offsets.where = in.feature_offsets.where = RDX_DEVICE;
    expect_refused(ctx, &in, RDX_ERR_INVALID_ARGUMENT, "is device memory but the context's backend is cpu");
    gen_free(&g);
    return;
  }
  rdx_polygons *a = NULL, *b = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &a));
  void *dfo = check_place(ctx, g.fo, 8 * (size_t)(g.nf + 1)), *dro = check_place(ctx, g.ro, 8 * (size_t)(g.nr + 1));
  void *dxy = check_place(ctx, g.xy, 16 * (size_t)g.nv);
  rdx_polygons_input d = in;
  d.feature_offsets = rdx_device_array(dfo, g.nf + 1, RDX_U64);
  d.ring_offsets = rdx_device_array(dro, g.nr + 1, RDX_U64);
  d.coords = rdx_device_matrix(dxy, g.nv, 2, RDX_F64);
  int64_t before = held(ctx);
  CHECK_OK(ctx, rdx_polygons_create(ctx, &d, &b));
  if (a && b) {
    check_identical(a, b);
    check_device_copy(ctx, b);
  }
  rdx_polygons_destroy(b);
  CHECK_EQ(held(ctx), before);
  /* mixed locations are refused */
  d.coords = in.coords;
  rdx_polygons *q = (rdx_polygons *)1;
  CHECK_STATUS(ctx, rdx_polygons_create(ctx, &d, &q), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "coords is in host memory but feature_offsets in device memory");
  /* a bad coordinate in device memory is named as in host memory */
  double nan = NAN;
  CHECK_OK(ctx, rdx_copy(ctx, (double *)dxy + 2 * 17 + 1, RDX_DEVICE, &nan, RDX_HOST, 8));
  d.coords = rdx_device_matrix(dxy, g.nv, 2, RDX_F64);
  CHECK_STATUS(ctx, rdx_polygons_create(ctx, &d, &q), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "(coords row 17) y is NaN");
  CHECK_EQ(held(ctx), before);
  check_unplace(ctx, dfo);
  check_unplace(ctx, dro);
  check_unplace(ctx, dxy);
  rdx_polygons_destroy(a);
  gen_free(&g);
}

/* ---- layer_describe, layer_empty ---- */

static void describe(rdx_context *ctx) {
  CASE(layer_describe);
  uint64_t fo[3] = {0, 1, 2}, ro[3] = {0, 4, 7};
  double xy[14] = {-3, -1, 2, -1, 2, 4, -3, 4, 5, 5, 7, 5, 6, 9};
  rdx_polygons_input in = input_of(fo, 2, ro, 2, xy, 7, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  if (p == NULL) return;
  rdx_polygons_info info;
  memset(&info, 0xAB, sizeof info);
  info.size = sizeof info;
  CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
  CHECK_EQ(info.size, sizeof info);
  CHECK_EQ(info.n_features, 2);
  CHECK_EQ(info.n_rings, 2);
  CHECK_EQ(info.n_vertices, 7);
  CHECK_EQ(info.n_edges, 7);
  CHECK_EQ(info.dtype, RDX_F64);
  CHECK(info.lo[0] == -3 && info.lo[1] == -1 && info.hi[0] == 7 && info.hi[1] == 9);
  CHECK(info.bytes > 7 * (16 + 8) && info.bytes <= held(ctx) - held0);
  CHECK(!info.indexed);
  /* with a join index: indexed, and its bytes counted */
  CHECK_OK(ctx, rdx_polygons_build_index(ctx, p, NULL));
  rdx_polygons_info ix;
  ix.size = sizeof ix;
  CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &ix));
  CHECK(ix.indexed);
  CHECK(ix.bytes > info.bytes);
  CHECK_EQ(ix.n_vertices, 7);
  info.size = sizeof info - 1;
  CHECK_STATUS(ctx, rdx_polygons_describe(ctx, p, &info), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "info->size");
  CHECK_STATUS(ctx, rdx_polygons_describe(ctx, p, NULL), RDX_ERR_INVALID_ARGUMENT);
  info.size = sizeof info;
  CHECK_STATUS(ctx, rdx_polygons_describe(ctx, NULL, &info), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "rdx_polygons_describe: layer is NULL");
  uint64_t junk[64] = {0};
  CHECK_STATUS(ctx, rdx_polygons_describe(ctx, (const rdx_polygons *)junk, &info), RDX_ERR_MISUSE);
  expect_message(ctx, "is not a polygon layer");
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  rdx_context *other = NULL;
  CHECK_OK(other, rdx_context_create(&o, &other));
  CHECK_STATUS(other, rdx_polygons_describe(other, p, &info), RDX_ERR_MISUSE);
  expect_message(other, "belongs to another context");
  CHECK_STATUS(other, rdx_polygons_save(other, p, path), RDX_ERR_MISUSE);
  rdx_context_destroy(other);
  rdx_polygons_destroy(NULL);
  rdx_polygons_destroy((rdx_polygons *)junk); /* not a layer: nothing happens */
  rdx_polygons_destroy(p);
  CHECK_EQ(held(ctx), held0);
}

static void empty(rdx_context *ctx) {
  CASE(layer_empty);
  uint64_t zero[3] = {0, 0, 0};
  rdx_polygons_input in = input_of(zero, 0, zero, 0, NULL, 0, RDX_F64);
  rdx_polygons *p = NULL, *q = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  if (p == NULL) return;
  rdx_polygons_info info;
  info.size = sizeof info;
  CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
  CHECK_EQ(info.n_features, 0);
  CHECK_EQ(info.n_vertices, 0);
  CHECK(info.lo[0] == INFINITY && info.lo[1] == INFINITY && info.hi[0] == -INFINITY && info.hi[1] == -INFINITY);
  CHECK_OK(ctx, rdx_polygons_save(ctx, p, path));
  CHECK_OK(ctx, rdx_polygons_load(ctx, path, NULL, &q));
  if (q) check_identical(p, q);
  rdx_polygons_destroy(q);
  rdx_polygons_destroy(p);
  /* features without rings hold no point, but keep their ids */
  rdx_polygons_input two = input_of(zero, 2, zero, 0, NULL, 0, RDX_F32);
  CHECK_OK(ctx, rdx_polygons_create(ctx, &two, &p));
  CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &info));
  CHECK_EQ(info.n_features, 2);
  CHECK_EQ(info.n_rings, 0);
  CHECK_EQ(info.n_empty, 2);
  rdx_polygons_destroy(p);
  CHECK_EQ(held(ctx), held0);
}

/* ---- files ---- */

static void save_load(rdx_context *ctx) {
  CASE(layer_save_load);
  gen_layer g = gen_nested(2000);
  for (int f32 = 0; f32 < 2; f32++) {
    float *x32 = (float *)malloc(8 * (size_t)g.nv);
    for (int64_t i = 0; i < 2 * g.nv; i++) x32[i] = (float)(g.xy[i] * 0.37);
    rdx_polygons_input in = input_of(g.fo, g.nf, g.ro, g.nr, f32 ? (const void *)x32 : g.xy, g.nv,
                                     f32 ? RDX_F32 : RDX_F64);
    rdx_polygons *p = NULL, *q = NULL;
    CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
    CHECK_OK(ctx, rdx_polygons_save(ctx, p, path));
    CHECK_OK(ctx, rdx_polygons_load(ctx, path, NULL, &q));
    if (p && q) {
      check_identical(p, q);
      check_device_copy(ctx, q);
    }
    struct stat st;
    CHECK(stat(path, &st) == 0);
    size_t es = f32 ? 4 : 8;
    if (p)
      CHECK_EQ((uint64_t)st.st_size, 80 + 8 * (uint64_t)(g.nf + 1) + 8 + 8 * (uint64_t)(g.nr + 1) + 8 +
                                          2 * es * (uint64_t)p->host.n_vertices + 8);
    /* saving over an existing file replaces it; no temporary is left */
    CHECK_OK(ctx, rdx_polygons_save(ctx, q, path));
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    CHECK(access(tmp, F_OK) != 0);
    rdx_polygons_destroy(q);
    q = NULL;
    CHECK_OK(ctx, rdx_polygons_load(ctx, path, NULL, &q));
    if (p && q) check_identical(p, q);
    rdx_polygons_destroy(q);
    rdx_polygons_destroy(p);
    free(x32);
  }
  gen_free(&g);
  rdx_polygons *p = (rdx_polygons *)1;
  CHECK_STATUS(ctx, rdx_polygons_load(ctx, NULL, NULL, &p), RDX_ERR_INVALID_ARGUMENT);
  CHECK(p == NULL);
  CHECK_STATUS(ctx, rdx_polygons_load(ctx, path, NULL, NULL), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_polygons_load(ctx, path, "counties", &p), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "a .rdxp file holds one layer");
  CHECK_STATUS(ctx, rdx_polygons_save(ctx, NULL, path), RDX_ERR_INVALID_ARGUMENT);
  CHECK_EQ(held(ctx), held0);
}

static unsigned char *slurp(const char *file, size_t *len) {
  FILE *f = fopen(file, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static void spill(const char *file, const void *b, size_t len) {
  FILE *f = fopen(file, "wb");
  if (len) fwrite(b, 1, len, f);
  fclose(f);
}

static void expect_load_error(rdx_context *ctx, const char *file, rdx_status want, const char *part) {
  rdx_polygons *p = (rdx_polygons *)1;
  CHECK_STATUS(ctx, rdx_polygons_load(ctx, file, NULL, &p), want);
  CHECK(p == NULL);
  expect_message(ctx, part);
  CHECK_EQ(held(ctx), held0);
  if (p != NULL && p != (rdx_polygons *)1) rdx_polygons_destroy(p);
}

static void files_refused(rdx_context *ctx) {
  CASE(layer_files_refused);
  uint64_t fo[3] = {0, 1, 2}, ro[3] = {0, 4, 7};
  double xy[14] = {0, 0, 1, 0, 1, 1, 0, 1, 5, 5, 7, 5, 6, 9};
  rdx_polygons_input in = input_of(fo, 2, ro, 2, xy, 7, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  CHECK_OK(ctx, rdx_polygons_save(ctx, p, path));
  rdx_polygons_destroy(p);
  size_t len = 0;
  unsigned char *good = slurp(path, &len), *b = (unsigned char *)malloc(len + 16);
  CHECK_EQ(len, 80 + 24 + 8 + 24 + 8 + 112 + 8);
  /* truncated at every length */
  for (size_t cut = 0; cut < len; cut++) {
    spill(path2, good, cut);
    expect_load_error(ctx, path2, RDX_ERR_PARSE, cut < 8 ? "not a raydex polygon layer" : "truncated .rdxp file");
  }
  /* corrupted: one flipped bit in each part of the file */
  struct {
    size_t at;
    const char *msg;
  } flips[] = {{20, "corrupted .rdxp header"},
               {80 + 9, "corrupted .rdxp feature offsets"},
               {80 + 32 + 16, "corrupted .rdxp ring offsets"},
               {80 + 64 + 50, "corrupted .rdxp coordinates"},
               {len - 5, "corrupted .rdxp coordinates"},
               {len - 2, "padding after the coordinates"}};
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    memcpy(b, good, len);
    b[flips[i].at] ^= 0x10;
    spill(path2, b, len);
    expect_load_error(ctx, path2, RDX_ERR_PARSE, flips[i].msg);
  }
  /* foreign: another format with the .rdxp name, or our magic's prefix with another end */
  spill(path2, "{\"type\": \"FeatureCollection\"}", 30);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, "not a raydex polygon layer (.rdxp): it begins \"{\"type\":\"");
  memcpy(b, good, len);
  b[7] = 'X';
  spill(path2, b, len);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, "it begins \"RDXPOLYX\"");
  /* a future version, with a valid header checksum */
  memcpy(b, good, len);
  b[8] = 2;
  uint32_t c = rdx_crc32c(0, b, 76);
  for (int k = 0; k < 4; k++) b[76 + k] = (unsigned char)(c >> (8 * k));
  spill(path2, b, len);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, ".rdxp version 2 is newer than this library reads (1)");
  /* flags, dtype and counts that do not match the length */
  memcpy(b, good, len);
  b[72] = 3;
  c = rdx_crc32c(0, b, 76);
  for (int k = 0; k < 4; k++) b[76 + k] = (unsigned char)(c >> (8 * k));
  spill(path2, b, len);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, ".rdxp flags 0x3 are not known in version 1");
  memcpy(b, good, len);
  b[16] = 0xff, b[23] = 0x7f; /* n_features huge */
  c = rdx_crc32c(0, b, 76);
  for (int k = 0; k < 4; k++) b[76 + k] = (unsigned char)(c >> (8 * k));
  spill(path2, b, len);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, "impossibly large");
  /* trailing bytes */
  memcpy(b, good, len);
  b[len] = 0;
  spill(path2, b, len + 1);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, "1 bytes after the end of the .rdxp layer");
  /* a file whose checksums hold but whose geometry is bad (a NaN) is a malformed file too */
  memcpy(b, good, len);
  double nan = NAN;
  memcpy(b + 80 + 64 + 16, &nan, 8); /* vertex 1's x (stored order) */
  uint32_t cs = rdx_crc32c(0, b + 80 + 64, 112);
  for (int k = 0; k < 4; k++) b[80 + 64 + 112 + k] = (unsigned char)(cs >> (8 * k));
  spill(path2, b, len);
  expect_load_error(ctx, path2, RDX_ERR_PARSE, "feature 0 ring 0 vertex 1 (coords row 1) x is NaN");
  /* unreadable */
  expect_load_error(ctx, "/nonexistent/raydex/layer.rdxp", RDX_ERR_IO, "cannot open /nonexistent/raydex/layer.rdxp");
  char dir[300];
  snprintf(dir, sizeof dir, "%s.dir.rdxp", path);
  mkdir(dir, 0700);
  expect_load_error(ctx, dir, RDX_ERR_IO, "dir.rdxp is not a regular file");
  rmdir(dir);
  rdx_polygons *q = NULL;
  CHECK_OK(ctx, rdx_polygons_load(ctx, path, NULL, &q));
  CHECK_STATUS(ctx, rdx_polygons_save(ctx, q, "/nonexistent/raydex/out.rdxp"), RDX_ERR_IO);
  expect_message(ctx, "rdx_polygons_save: cannot create /nonexistent/raydex/out.rdxp.tmp.");
  rdx_polygons_destroy(q);
  /* mutations never crash, and a file that loads is a valid layer */
  int loaded = 0;
  for (int it = 0; it < 3000; it++) {
    memcpy(b, good, len);
    size_t n = len;
    int edits = 1 + (int)check_below(4);
    for (int e = 0; e < edits; e++) {
      size_t at = (size_t)check_below(n);
      int kind = (int)check_below(3);
      if (kind == 0) b[at] = (unsigned char)check_rand_();
      else if (kind == 1) b[at] ^= (unsigned char)(1u << check_below(8));
      else n = at + 1;
    }
    if (n == len && memcmp(b, good, len) == 0) continue; /* a byte replaced by itself */
    spill(path2, b, n);
    rdx_polygons *m = NULL;
    rdx_status st = rdx_polygons_load(ctx, path2, NULL, &m);
    if (st == RDX_OK) loaded++;
    else if (st != RDX_ERR_PARSE) CHECK_FAIL_("mutation %d: %s (%s)", it, rdx_status_name(st), rdx_context_message(ctx));
    rdx_polygons_destroy(m);
  }
  CHECK_EQ(held(ctx), held0);
  printf("mutations: %d of 3000 still loaded (none expected: CRC32C sees every change of up to 32 bits)\n", loaded);
  CHECK_EQ(loaded, 0);
  free(good);
  free(b);
  unlink(path2);
}

/* CRC32C against the published check values (RFC 3720's iSCSI vectors and "123456789"), and
 * continued over any split, which exercises the byte tails of the 8-byte loop. */
static void crc32c(void) {
  CASE(layer_crc32c);
  unsigned char z[32], f[32], c[64];
  memset(z, 0, 32), memset(f, 0xFF, 32);
  CHECK_EQ(rdx_crc32c(0, "123456789", 9), 0xE3069283u);
  CHECK_EQ(rdx_crc32c(0, z, 32), 0x8A9136AAu);
  CHECK_EQ(rdx_crc32c(0, f, 32), 0x62A8AB43u);
  for (int i = 0; i < 64; i++) c[i] = (unsigned char)(i * 37 + 11);
  const uint32_t whole = rdx_crc32c(0, c, 64);
  for (size_t cut = 0; cut <= 64; cut++) CHECK_EQ(rdx_crc32c(rdx_crc32c(0, c, cut), c + cut, 64 - cut), whole);
}

/* A saved layer says in its header that its rings are normalized (RDXP_FLAG_NORMALIZED), and a
 * load takes such rings as they are; a file without the flag is normalized on load. Seen through a
 * clockwise shell written both ways with the internal writer. */
static void normalized_flag(rdx_context *ctx) {
  CASE(layer_normalized_flag);
  uint64_t fo[2] = {0, 1}, ro[2] = {0, 4};
  double ccw[8] = {0, 0, 2, 0, 2, 2, 0, 2}, cw[8] = {0, 0, 0, 2, 2, 2, 2, 0};
  rdx_polygons_input in = input_of(fo, 1, ro, 1, ccw, 4, RDX_F64);
  rdx_polygons *p = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &p));
  CHECK_OK(ctx, rdx_polygons_save(ctx, p, path));
  rdx_polygons_destroy(p);
  size_t len = 0;
  unsigned char *b = slurp(path, &len);
  CHECK(len > 80 && b[72] == RDXP_FLAG_NORMALIZED && b[73] == 0);
  free(b);
  for (int flag = 0; flag < 2; flag++) {
    rdx_rdxp_layer L = {RDX_F64, 1, 1, 4, fo, ro, cw, {0, 0}, {2, 2}, flag};
    CHECK_OK(ctx, rdx_rdxp_write(ctx, "test", path2, &L));
    p = NULL;
    CHECK_OK(ctx, rdx_polygons_load(ctx, path2, NULL, &p));
    int64_t nv = 0;
    const double *xy = rdx_polygons_host_xy(p, &nv);
    CHECK_EQ(nv, 4);
    /* the shoelace sum's sign: clockwise as written, counterclockwise once normalized */
    double twice_area = 0;
    for (int64_t i = 0; i < nv; i++) {
      const int64_t k = (i + 1) % nv;
      twice_area += xy[2 * i] * xy[2 * k + 1] - xy[2 * k] * xy[2 * i + 1];
    }
    CHECK(flag ? twice_area == -8.0 : twice_area == 8.0);
    rdx_polygons_destroy(p);
  }
  CHECK_EQ(held(ctx), held0);
}

static void killed_writer(rdx_context *ctx) {
  CASE(layer_killed_writer);
  if (rdx_context_backend(ctx) != RDX_BACKEND_CPU) {
    printf("layer_killed_writer: on the cpu entry (saving runs on the host alike on every backend)\n");
    return;
  }
  uint64_t fo[2] = {0, 1}, ro[2] = {0, 3};
  double xy[6] = {0, 0, 1, 0, 0, 1};
  rdx_polygons_input in = input_of(fo, 1, ro, 1, xy, 3, RDX_F64);
  rdx_polygons *old = NULL, *big = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &old));
  gen_layer g = gen_nested(200000); /* about 40 MB on disk */
  rdx_polygons_input bi = input_of(g.fo, g.nf, g.ro, g.nr, g.xy, g.nv, RDX_F64);
  CHECK_OK(ctx, rdx_polygons_create(ctx, &bi, &big));
  gen_free(&g);
  if (!old || !big) return;
  int killed_mid = 0;
  for (int attempt = 0; attempt < 20 && !killed_mid; attempt++) {
    CHECK_OK(ctx, rdx_polygons_save(ctx, old, path));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      rdx_status st = rdx_polygons_save(ctx, big, path);
      _exit(st == RDX_OK ? 0 : 1);
    }
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)pid);
    struct stat s;
    for (int spin = 0; spin < 200000; spin++) { /* until the writer has written some of it */
      if (stat(tmp, &s) == 0 && s.st_size > (1 << 20)) break;
      usleep(20);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    int mid = WIFSIGNALED(status) && stat(tmp, &s) == 0;
    unlink(tmp);
    rdx_polygons *q = NULL;
    CHECK_OK(ctx, rdx_polygons_load(ctx, path, NULL, &q));
    if (q && mid) {
      check_identical(q, old);
      killed_mid = 1;
    }
    rdx_polygons_destroy(q);
  }
  CHECK(killed_mid); /* coverage: a writer was killed mid-save at least once */
  rdx_polygons_destroy(old);
  rdx_polygons_destroy(big);
}

/* ---- GDAL ---- */

static void write_text(const char *file, const char *text) { spill(file, text, strlen(text)); }

static void gdal(rdx_context *ctx) {
  CASE(layer_gdal);
  rdx_info info;
  info.size = sizeof info;
  CHECK_OK(ctx, rdx_info_get(&info));
  char gj[300];
  snprintf(gj, sizeof gj, "%s.geojson", path);
  write_text(gj,
             "{\"type\": \"FeatureCollection\", \"name\": \"tiles\", \"features\": [\n"
             " {\"type\": \"Feature\", \"properties\": {}, \"geometry\": {\"type\": \"Polygon\", \"coordinates\":"
             " [[[0,0],[0,10],[10,10],[10,0],[0,0]], [[2,2],[8,2],[8,8],[2,8],[2,2]]]}},\n"
             " {\"type\": \"Feature\", \"properties\": {}, \"geometry\": {\"type\": \"MultiPolygon\", \"coordinates\":"
             " [[[[20,0],[30,0],[30,10],[20,0]]], [[[40,0],[50,0],[50,10],[40,10],[40,0]],"
             " [[42,2],[48,2],[48,8],[42,8],[42,2]], [[44,4],[46,4],[46,6],[44,6],[44,4]]]]}},\n"
             " {\"type\": \"Feature\", \"properties\": {}, \"geometry\": {\"type\": \"Polygon\", \"coordinates\":"
             " [[[60,0,5],[70,0,6],[70,10,7],[60,0,5]]]}}\n"
             "]}\n");
  rdx_polygons *p = (rdx_polygons *)1;
  if (!info.have_gdal) {
    printf("skipped: no GDAL (layer_gdal: this build reads .rdxp layers only)\n");
    CHECK_STATUS(ctx, rdx_polygons_load(ctx, gj, NULL, &p), RDX_ERR_UNSUPPORTED);
    expect_message(ctx, "this build has no GDAL");
    CHECK(p == NULL);
    unlink(gj);
    return;
  }
  CHECK_OK(ctx, rdx_polygons_load(ctx, gj, NULL, &p));
  if (p && p != (rdx_polygons *)1) {
    CHECK_EQ(p->host.n_features, 3);
    CHECK_EQ(p->host.n_rings, 2 + 4 + 1);
    CHECK_EQ(p->host.n_vertices, 8 + 3 + 12 + 3);
    CHECK_EQ(p->dtype, RDX_F64);
    CHECK_EQ(p->host.feat_off[1], 2);
    CHECK_EQ(p->host.feat_off[2], 6);
    double sh[8] = {0, 0, 10, 0, 10, 10, 0, 10}, tri3[6] = {60, 0, 70, 0, 70, 10};
    CHECK(same_cycle(p, 0, sh, 4));
    CHECK(same_cycle(p, 6, tri3, 3)); /* z dropped */
    int want[7] = {1, -1, 1, 1, -1, 1, 1};
    for (int r = 0; r < 7; r++) {
      double a = ring_area2(p, r);
      if (want[r] > 0 ? !(a > 0) : !(a < 0)) CHECK_FAIL_("GeoJSON ring %d has area2 %g", r, a);
    }
    /* and it saves and reloads as .rdxp identically */
    rdx_polygons *q = NULL;
    CHECK_OK(ctx, rdx_polygons_save(ctx, p, path));
    CHECK_OK(ctx, rdx_polygons_load(ctx, path, NULL, &q));
    if (q) check_identical(p, q);
    rdx_polygons_destroy(q);
    rdx_polygons_destroy(p);
  }
  p = NULL;
  CHECK_OK(ctx, rdx_polygons_load(ctx, gj, "tiles", &p));
  rdx_polygons_destroy(p);
  p = (rdx_polygons *)1;
  CHECK_STATUS(ctx, rdx_polygons_load(ctx, gj, "states", &p), RDX_ERR_INVALID_ARGUMENT);
  expect_message(ctx, "no layer named \"states\" (layers: tiles)");
  CHECK(p == NULL);
  /* refused geometry: a LineString, an empty polygon, no geometry; and a bad ring */
  struct {
    const char *geom, *msg;
    rdx_status st;
  } bad[] = {
      {"{\"type\": \"LineString\", \"coordinates\": [[0,0],[1,1]]}", "feature 1 is a Line String, not a Polygon",
       RDX_ERR_PARSE},
      {"{\"type\": \"Polygon\", \"coordinates\": [[[0,0],[1,1],[0,0]]]}",
       "feature 1 ring 0 has 2 distinct vertices (at least 3 needed)", RDX_ERR_PARSE},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"type\": \"FeatureCollection\", \"features\": [\n"
             " {\"type\": \"Feature\", \"properties\": {}, \"geometry\": {\"type\": \"Polygon\", \"coordinates\":"
             " [[[0,0],[1,0],[0,1],[0,0]]]}},\n"
             " {\"type\": \"Feature\", \"properties\": {}, \"geometry\": %s}]}\n",
             bad[i].geom);
    write_text(gj, text);
    expect_load_error(ctx, gj, bad[i].st, bad[i].msg);
  }
  /* an empty geometry (GeoJSON has none: GDAL reads "coordinates": [] as no geometry), in WKT in CSV */
  char csv[300];
  snprintf(csv, sizeof csv, "%s.csv", path);
  write_text(csv, "id,WKT\n1,\"POLYGON ((0 0,1 0,0 1,0 0))\"\n2,\"MULTIPOLYGON (((5 5,6 5,5 6,5 5)))\"\n");
  CHECK_OK(ctx, rdx_polygons_load(ctx, csv, NULL, &p));
  if (p) CHECK_EQ(p->host.n_features, 2);
  rdx_polygons_destroy(p);
  /* empty and absent geometries are features without rings: every later feature keeps its id */
  write_text(csv, "id,WKT\n1,\"POLYGON ((0 0,1 0,0 1,0 0))\"\n2,\"POLYGON EMPTY\"\n3,\"MULTIPOLYGON EMPTY\"\n"
                  "4,\n5,\"POLYGON ((5 5,6 5,5 6,5 5))\"\n");
  CHECK_OK(ctx, rdx_polygons_load(ctx, csv, NULL, &p));
  if (p) {
    rdx_polygons_info pi;
    pi.size = sizeof pi;
    CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &pi));
    CHECK_EQ(pi.n_features, 5);
    CHECK_EQ(pi.n_empty, 3);
    CHECK_EQ(pi.n_rings, 2);
    CHECK_EQ(p->host.feat_off[4], 1);
    CHECK_EQ(p->host.edge_feat[3], 4);
  }
  rdx_polygons_destroy(p);
  /* collapsed rings: refused, or dropped (counted, the first named) on request */
  write_text(csv, "id,WKT\n1,\"MULTIPOLYGON (((3 3,3 3,3 3,3 3)),((0 0,1 0,0 1,0 0)))\"\n"
                  "2,\"POLYGON ((5 5,6 5,5 5))\"\n3,\"POLYGON ((7 7,8 7,7 8,7 7))\"\n");
  expect_load_error(ctx, csv, RDX_ERR_PARSE, "feature 0 ring 0 has 1 distinct vertices (at least 3 needed)");
  int64_t dropped = -1;
  char first[128];
  p = NULL;
  CHECK_OK(ctx, rdx_polygons_load_dropping(ctx, csv, NULL, &p, &dropped, first, sizeof first));
  CHECK_EQ(dropped, 2);
  if (strcmp(first, "feature 0 ring 0, 1 distinct vertices") != 0) CHECK_FAIL_("first dropped: '%s'", first);
  if (p) {
    rdx_polygons_info pi;
    pi.size = sizeof pi;
    CHECK_OK(ctx, rdx_polygons_describe(ctx, p, &pi));
    CHECK_EQ(pi.n_features, 3);
    CHECK_EQ(pi.n_rings, 2);
    CHECK_EQ(pi.n_empty, 1); /* feature 1 lost its only ring */
    CHECK_EQ(p->host.feat_off[1], 1);
    CHECK_EQ(p->host.edge_feat[3], 2);
  }
  rdx_polygons_destroy(p);
  CHECK_EQ(held(ctx), held0);
  unlink(csv);
  write_text(gj, "this is not a vector file\n");
  expect_load_error(ctx, gj, RDX_ERR_PARSE, "GDAL reads no vector layer from it");
  expect_load_error(ctx, "/nonexistent/raydex/x.geojson", RDX_ERR_IO, "cannot open");
  unlink(gj);
}

/* ---- faults ---- */

static void faults(rdx_context *ctx) {
  CASE(layer_faults);
  gen_layer g = gen_nested(500);
  rdx_polygons_input in = input_of(g.fo, g.nf, g.ro, g.nr, g.xy, g.nv, RDX_F64);
  rdx_polygons *ref = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &ref));
  CHECK_OK(ctx, rdx_polygons_save(ctx, ref, path));
  int64_t base = held(ctx);
  for (int call = 0; call < 2; call++) {
    int done = 0;
    for (int64_t n = 1; n < 64 && !done; n++) {
      rdx_polygons *p = (rdx_polygons *)1;
      rdx_mem_fail_after(ctx, n);
      rdx_status st = call == 0 ? rdx_polygons_create(ctx, &in, &p) : rdx_polygons_load(ctx, path, NULL, &p);
      rdx_mem_fail_after(ctx, 0);
      if (st == RDX_OK) {
        if (p && ref) check_identical(p, ref);
        rdx_polygons_destroy(p);
        done = 1;
      } else {
        if (st != RDX_ERR_HOST_OUT_OF_MEMORY && st != RDX_ERR_DEVICE_OUT_OF_MEMORY)
          CHECK_FAIL_("%s fault %lld: %s", call ? "load" : "create", (long long)n, rdx_status_name(st));
        CHECK(p == NULL);
      }
      CHECK_EQ(held(ctx), base);
    }
    CHECK(done);
  }
  rdx_polygons_destroy(ref);
  gen_free(&g);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  snprintf(path, sizeof path, "/tmp/raydex_test_layer_%d.rdxp", (int)getpid());
  snprintf(path2, sizeof path2, "/tmp/raydex_test_layer_%d_b.rdxp", (int)getpid());
  held0 = held(ctx);
  bad_input(ctx);
  merge(ctx);
  orientation(ctx);
  large_feature(ctx);
  crossing_rings(ctx);
  identical_threads(ctx);
  generator(ctx);
  f32_input(ctx);
  device_input(ctx);
  describe(ctx);
  empty(ctx);
  save_load(ctx);
  files_refused(ctx);
  crc32c();
  normalized_flag(ctx);
  killed_writer(ctx);
  gdal(ctx);
  faults(ctx);
  unlink(path);
  unlink(path2);
  return check_end(ctx);
}
