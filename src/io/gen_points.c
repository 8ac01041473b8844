/*
 * gen_points.c: point sets and spatial query batches for `raydex gen points`, the spatial tests'
 * CLI checks and `raydex bench points`.
 *
 * The taxi-like set stands in for the bottom-up quadtree paper's data (168.9 M NYC yellow-taxi
 * pickups of 2009 in EPSG:2263 feet, not redistributable here): about 85% of points fall in 1024
 * Zipf-weighted hot spots whose spreads range from 30 ft (a hotel entrance) to 3000 ft (a
 * neighbourhood), three fifths of them along a Manhattan-like strip; 8% lie on a street lattice
 * (600 ft blocks); 3% repeat 32 taxi-stand coordinates exactly (what fills leaves at the maximum
 * depth in the paper); the rest are uniform in the box. So it is skewed, clustered at several
 * scales and duplicate-heavy like the real data.
 *
 * Points and queries are made in chunks of 65536 on the context's threads, each chunk with its
 * own generator (rdx_rng_seed_chunk), so the output depends on the seed only. Neither holds
 * anything but its output (and a few KiB of hot spots), and every size is overflow-checked
 * before the output is allocated.
 */
#include "io/io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GCHUNK 65536
#define HOT 1024
#define STANDS 32

static const double TAXI_BOX[4] = {913000.0, 120000.0, 1067000.0, 273000.0};

typedef struct hot_spot {
  double x, y, sigma;
} hot_spot;

typedef struct gen_job {
  int64_t n;
  rdx_point_dist dist;
  int f64;
  uint64_t seed;
  void *out;
  const hot_spot *hot;   /* taxi: HOT spots; clustered: 64 clusters */
  const double *stands;  /* taxi: STANDS x, y pairs */
  rdx_zipf zipf;
} gen_job;

static double normal(rdx_rng *r) {
  double u = rdx_rng_double(r), v = rdx_rng_double(r);
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static void put(void *out, int f64, int64_t i, double x, double y) {
  if (f64) {
    ((double *)out)[2 * i] = x;
    ((double *)out)[2 * i + 1] = y;
  } else {
    ((float *)out)[2 * i] = (float)x;
    ((float *)out)[2 * i + 1] = (float)y;
  }
}

static void gen_task(void *arg, int64_t t, int thread) {
  gen_job *j = (gen_job *)arg;
  rdx_rng r;
  rdx_rng_seed_chunk(&r, j->seed, t);
  int64_t lo = t * GCHUNK, hi = lo + GCHUNK < j->n ? lo + GCHUNK : j->n;
  for (int64_t i = lo; i < hi; i++) {
    double x, y;
    if (j->dist == RDX_PDIST_UNIFORM) {
      x = rdx_rng_double(&r), y = rdx_rng_double(&r);
    } else if (j->dist == RDX_PDIST_CLUSTERED) {
      if (rdx_rng_double(&r) < 0.1) {
        x = rdx_rng_double(&r), y = rdx_rng_double(&r);
      } else {
        const hot_spot *h = &j->hot[rdx_zipf_draw(&j->zipf, &r) - 1];
        x = clampd(h->x + h->sigma * normal(&r), 0.0, nextafter(1.0, 0.0));
        y = clampd(h->y + h->sigma * normal(&r), 0.0, nextafter(1.0, 0.0));
      }
    } else {
      const double *b = TAXI_BOX;
      double u = rdx_rng_double(&r);
      if (u < 0.85) {
        const hot_spot *h = &j->hot[rdx_zipf_draw(&j->zipf, &r) - 1];
        x = h->x + h->sigma * normal(&r), y = h->y + h->sigma * normal(&r);
      } else if (u < 0.93) { /* on a street of the 600 ft lattice */
        x = b[0] + (b[2] - b[0]) * rdx_rng_double(&r), y = b[1] + (b[3] - b[1]) * rdx_rng_double(&r);
        if (rdx_rng_next(&r) & 1) x = b[0] + 600.0 * floor((x - b[0]) / 600.0) + 10.0 * normal(&r);
        else y = b[1] + 600.0 * floor((y - b[1]) / 600.0) + 10.0 * normal(&r);
      } else if (u < 0.96) { /* a taxi stand: the same coordinates exactly */
        int s = (int)rdx_rng_below(&r, STANDS);
        x = j->stands[2 * s], y = j->stands[2 * s + 1];
      } else {
        x = b[0] + (b[2] - b[0]) * rdx_rng_double(&r), y = b[1] + (b[3] - b[1]) * rdx_rng_double(&r);
      }
      x = clampd(x, b[0], b[2]), y = clampd(y, b[1], b[3]);
    }
    put(j->out, j->f64, i, x, y);
  }
}

static rdx_status check_point_dtype(rdx_context *ctx, const char *fn, const char *what, rdx_dtype dtype) {
  if (dtype != RDX_F32 && dtype != RDX_F64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s must be f32 or f64 (dtype 0x%x)", fn, what, (unsigned)dtype);
  return RDX_OK;
}

rdx_status rdx_gen_points_bytes(rdx_context *ctx, int64_t n, rdx_dtype dtype, size_t *bytes) {
  static const char fn[] = "rdx_gen_points";
  RDX_CHECK(check_point_dtype(ctx, fn, "points", dtype));
  return rdx_gen_out_bytes(ctx, fn, "n", n, 2, dtype, bytes);
}

rdx_status rdx_gen_points(rdx_context *ctx, int64_t n, rdx_point_dist dist, rdx_dtype dtype, uint64_t seed,
                          rdx_array *out) {
  static const char fn[] = "rdx_gen_points";
  size_t bytes;
  memset(out, 0, sizeof *out);
  RDX_CHECK(rdx_gen_points_bytes(ctx, n, dtype, &bytes));
  if (dist != RDX_PDIST_UNIFORM && dist != RDX_PDIST_CLUSTERED && dist != RDX_PDIST_TAXI)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: unknown distribution (%d)", fn, (int)dist);
  RDX_CHECK(rdx_gen_alloc(ctx, fn, "n", n, 2, dtype, out));
  gen_job j;
  memset(&j, 0, sizeof j);
  j.n = n, j.dist = dist, j.f64 = dtype == RDX_F64, j.seed = seed, j.out = out->data;
  hot_spot hot[HOT];
  double stands[2 * STANDS];
  rdx_rng r;
  rdx_rng_seed(&r, seed ^ 0x5851F42D4C957F2Dull);
  if (dist == RDX_PDIST_CLUSTERED) {
    for (int c = 0; c < 64; c++) {
      hot[c].x = rdx_rng_double(&r), hot[c].y = rdx_rng_double(&r);
      hot[c].sigma = 0.002 * pow(25.0, rdx_rng_double(&r)); /* 0.002 .. 0.05 */
    }
    rdx_zipf_init(&j.zipf, 64, 0.7);
  } else if (dist == RDX_PDIST_TAXI) {
    const double *b = TAXI_BOX;
    for (int c = 0; c < HOT; c++) {
      if (rdx_rng_double(&r) < 0.6) { /* along a Manhattan-like strip, 2.5 by 13 miles */
        double t = rdx_rng_double(&r), o = 4000.0 * (2 * rdx_rng_double(&r) - 1);
        hot[c].x = 980000.0 + 25000.0 * t + 0.93 * o;
        hot[c].y = 195000.0 + 63000.0 * t - 0.37 * o;
      } else {
        hot[c].x = b[0] + (b[2] - b[0]) * rdx_rng_double(&r), hot[c].y = b[1] + (b[3] - b[1]) * rdx_rng_double(&r);
      }
      hot[c].sigma = 30.0 * pow(100.0, rdx_rng_double(&r)); /* 30 .. 3000 ft */
    }
    for (int s = 0; s < STANDS; s++) {
      stands[2 * s] = b[0] + (b[2] - b[0]) * rdx_rng_double(&r);
      stands[2 * s + 1] = b[1] + (b[3] - b[1]) * rdx_rng_double(&r);
    }
    rdx_zipf_init(&j.zipf, HOT, 1.0);
  }
  j.hot = hot;
  j.stands = stands;
  rdx_status st = rdx_parallel_for(ctx, (n + GCHUNK - 1) / GCHUNK, gen_task, &j);
  if (st != RDX_OK) rdx_npy_free(out);
  return st;
}

void rdx_gen_points_box(rdx_point_dist dist, double box[4]) {
  static const double unit[4] = {0, 0, 1, 1};
  memcpy(box, dist == RDX_PDIST_TAXI ? TAXI_BOX : unit, 4 * sizeof(double));
}

/* Columns of a query type's rows: match and kNN (x, y), window (xmin, ymin, xmax, ymax), within
 * (x, y, r); 0 for a type that is none of these. */
static int query_columns(int type) { return type == 0 || type == 3 ? 2 : type == 1 ? 4 : type == 2 ? 3 : 0; }

typedef struct query_job {
  rdx_array points, out;
  int type;
  double size, box[4];
  uint64_t seed;
} query_job;

static inline double coord(rdx_array a, int64_t i) {
  return a.dtype == RDX_F64 ? ((const double *)a.data)[i] : ((const float *)a.data)[i];
}

static void query_task(void *arg, int64_t t, int thread) {
  const query_job *j = (const query_job *)arg;
  const double *b = j->box, size = j->size;
  int64_t n = j->points.count, lo = t * GCHUNK, hi = lo + GCHUNK < j->out.count ? lo + GCHUNK : j->out.count;
  int cols = j->out.columns, f64 = j->out.dtype == RDX_F64, type = j->type;
  rdx_rng r;
  (void)thread;
  rdx_rng_seed_chunk(&r, j->seed, t);
  for (int64_t i = lo; i < hi; i++) {
    double cx, cy;
    int near = n > 0 && rdx_rng_double(&r) < (type == 0 ? 0.5 : 0.8);
    if (near) {
      int64_t p = (int64_t)rdx_rng_below(&r, (uint64_t)n);
      cx = coord(j->points, 2 * p), cy = coord(j->points, 2 * p + 1);
      if (type != 0) { /* not exactly on the point: a little way off, up to a quarter of the size */
        cx += size * 0.25 * (2 * rdx_rng_double(&r) - 1);
        cy += size * 0.25 * (2 * rdx_rng_double(&r) - 1);
      }
    } else {
      cx = b[0] + (b[2] - b[0]) * rdx_rng_double(&r);
      cy = b[1] + (b[3] - b[1]) * rdx_rng_double(&r);
    }
    double v[4] = {cx, cy, 0, 0};
    if (type == 1) v[0] = cx - size / 2, v[1] = cy - size / 2, v[2] = cx + size / 2, v[3] = cy + size / 2;
    if (type == 2) v[2] = size;
    for (int c = 0; c < cols; c++) {
      if (f64) ((double *)j->out.data)[i * cols + c] = v[c];
      else ((float *)j->out.data)[i * cols + c] = (float)v[c];
    }
  }
}

rdx_status rdx_gen_point_queries_bytes(rdx_context *ctx, rdx_dtype dtype, int type, int64_t m, size_t *bytes) {
  static const char fn[] = "rdx_gen_point_queries";
  RDX_CHECK(check_point_dtype(ctx, fn, "points", dtype));
  if (query_columns(type) == 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query type is not 0 to 3 (%d)", fn, type);
  return rdx_gen_out_bytes(ctx, fn, "m", m, query_columns(type), dtype, bytes);
}

rdx_status rdx_gen_point_queries(rdx_context *ctx, rdx_array points, int type, int64_t m, double size, uint64_t seed,
                                 rdx_array *out) {
  static const char fn[] = "rdx_gen_point_queries";
  size_t bytes;
  memset(out, 0, sizeof *out);
  RDX_CHECK(rdx_array_check(ctx, fn, "points", points));
  if (points.columns != 2 || points.where == RDX_DEVICE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points must be a host (n, 2) array (columns %d)", fn,
                    (int)points.columns);
  RDX_CHECK(rdx_gen_point_queries_bytes(ctx, points.dtype, type, m, &bytes));
  if (!(size >= 0) || !isfinite(size))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: size must be finite and >= 0 (%g)", fn, size);
  query_job j = {.points = points, .type = type, .size = size, .box = {0, 0, 1, 1}, .seed = seed};
  if (points.count > 0) {
    double *b = j.box;
    b[0] = b[1] = INFINITY, b[2] = b[3] = -INFINITY;
    for (int64_t i = 0; i < points.count; i++) {
      double x = coord(points, 2 * i), y = coord(points, 2 * i + 1);
      if (x < b[0]) b[0] = x;
      if (y < b[1]) b[1] = y;
      if (x > b[2]) b[2] = x;
      if (y > b[3]) b[3] = y;
    }
  }
  RDX_CHECK(rdx_gen_alloc(ctx, fn, "m", m, query_columns(type), points.dtype, out));
  j.out = *out;
  rdx_status st = rdx_parallel_for(ctx, (m + GCHUNK - 1) / GCHUNK, query_task, &j);
  if (st != RDX_OK) rdx_npy_free(out);
  return st;
}
