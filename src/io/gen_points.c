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
 * Generation runs in chunks of 65536 points on the context's threads, each chunk with its own
 * generator seeded from (seed, chunk), so the output depends on the seed only.
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
  rdx_rng_seed(&r, j->seed * 0x9E3779B97F4A7C15ull + (uint64_t)t * 0xD1B54A32D192ED03ull + 1);
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

static rdx_status alloc_out(rdx_context *ctx, const char *fn, int64_t rows, int cols, rdx_dtype dtype, rdx_array *out) {
  size_t bytes = (size_t)rows * (size_t)cols * rdx_dtype_size(dtype);
  memset(out, 0, sizeof *out);
  out->data = malloc(bytes ? bytes : 1);
  if (out->data == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: %zu bytes", fn, bytes);
  out->count = rows;
  out->columns = cols;
  out->dtype = dtype;
  out->where = RDX_HOST;
  return RDX_OK;
}

rdx_status rdx_gen_points(rdx_context *ctx, int64_t n, rdx_point_dist dist, rdx_dtype dtype, uint64_t seed,
                          rdx_array *out) {
  static const char fn[] = "rdx_gen_points";
  memset(out, 0, sizeof *out);
  if (dtype != RDX_F32 && dtype != RDX_F64)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: dtype must be f32 or f64", fn);
  if (n < 0) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: n %lld is negative", fn, (long long)n);
  if (dist != RDX_PDIST_UNIFORM && dist != RDX_PDIST_CLUSTERED && dist != RDX_PDIST_TAXI)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: unknown distribution %d", fn, (int)dist);
  RDX_CHECK(alloc_out(ctx, fn, n, 2, dtype, out));
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

rdx_status rdx_gen_point_queries(rdx_context *ctx, rdx_array points, int type, int64_t m, double size, uint64_t seed,
                                 rdx_array *out) {
  static const char fn[] = "rdx_gen_point_queries";
  memset(out, 0, sizeof *out);
  if ((points.dtype != RDX_F32 && points.dtype != RDX_F64) || points.columns != 2 || points.where != RDX_HOST)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: points must be a host (n, 2) f32 or f64 array", fn);
  if (type < 0 || type > 3) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: query type %d", fn, type);
  if (m < 0 || !(size >= 0) || !isfinite(size))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: need m >= 0 and a finite size >= 0 (m %lld, size %g)", fn,
                    (long long)m, size);
  int f64 = points.dtype == RDX_F64, cols = type == 1 ? 4 : type == 2 ? 3 : 2;
  int64_t n = points.count;
  double b[4] = {0, 0, 1, 1};
  if (n > 0) {
    b[0] = b[1] = INFINITY, b[2] = b[3] = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      double x = f64 ? ((const double *)points.data)[2 * i] : ((const float *)points.data)[2 * i];
      double y = f64 ? ((const double *)points.data)[2 * i + 1] : ((const float *)points.data)[2 * i + 1];
      if (x < b[0]) b[0] = x;
      if (y < b[1]) b[1] = y;
      if (x > b[2]) b[2] = x;
      if (y > b[3]) b[3] = y;
    }
  }
  RDX_CHECK(alloc_out(ctx, fn, m, cols, points.dtype, out));
  rdx_rng r;
  rdx_rng_seed(&r, seed);
  for (int64_t i = 0; i < m; i++) {
    double cx, cy;
    int near = n > 0 && rdx_rng_double(&r) < (type == 0 ? 0.5 : 0.8);
    if (near) {
      int64_t p = (int64_t)rdx_rng_below(&r, (uint64_t)n);
      cx = f64 ? ((const double *)points.data)[2 * p] : ((const float *)points.data)[2 * p];
      cy = f64 ? ((const double *)points.data)[2 * p + 1] : ((const float *)points.data)[2 * p + 1];
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
      if (f64) ((double *)out->data)[i * cols + c] = v[c];
      else ((float *)out->data)[i * cols + c] = (float)v[c];
    }
  }
  return RDX_OK;
}
