/*
 * gen_polygons.c: synthetic polygon layers for the join tests and benchmarks (`raydex gen
 * polygons`), as the CSR rdx_polygons_create takes (one ring per feature).
 *
 *  - grid: a planar subdivision. Features are the cells of a cols x rows lattice (cols =
 *    ceil(sqrt(n)), row-major, the last row possibly short) whose lattice points are each moved
 *    by up to 0.2 in x and in y, so no edge is axis-aligned and neighbours share their edges
 *    exactly (both take the same lattice point). A move below 0.25 keeps every quad strictly
 *    convex: at a corner the two edges' cross product is at least 0.5 x 0.5 minus 0.4 x 0.4 > 0.
 *    4 segments per feature; the layer covers about [0, cols] x [0, rows].
 *  - random: star-shaped polygons of `vertices` vertices, overlapping freely (not a planar
 *    subdivision): centres uniform in a square of side sqrt(n) (so about one polygon per unit
 *    area, each of radius 0.25 to 0.75), vertex k in its own angular sector at a radius of 0.4 to
 *    1 times the polygon's. Directions come from the boundary of a square, not from sin and cos,
 *    so the coordinates are the same bits on every machine: each sector's direction is a point
 *    of that boundary, and distinct sectors give strictly increasing angles, so the polygon is
 *    simple.
 *
 * Each feature's numbers come from its own generator (the seed and the feature's index; the grid's
 * lattice points from the seed and the point's indices), so the layer depends on the seed only,
 * whatever the thread count, and a chunk of features is made anywhere.
 */
#include "io/io.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK ((int64_t)1 << 14) /* features per task */

static uint64_t mix(uint64_t z) { /* splitmix64's finalizer */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Uniform in [0, 1) from a key, 53 bits. */
static double unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t z = mix(seed ^ mix(a * 0x9E3779B97F4A7C15ull ^ mix(b * 0xD1B54A32D192ED03ull ^ mix(c + 0x632BE59BD9B4E019ull))));
  return (double)(z >> 11) * 0x1p-53;
}

typedef struct poly_job {
  int kind;
  int64_t n, cols;
  int vertices;
  uint64_t seed;
  double side;          /* random: the square of the centres */
  uint64_t *fo, *ro;
  double *xy;
} poly_job;

static void lattice(const poly_job *j, int64_t c, int64_t r, double *x, double *y) {
  *x = (double)c + 0.4 * (unit(j->seed, (uint64_t)c, (uint64_t)r, 0) - 0.5);
  *y = (double)r + 0.4 * (unit(j->seed, (uint64_t)c, (uint64_t)r, 1) - 0.5);
}

/* The point of the square's boundary at s in [0, 8): a direction whose angle grows with s. */
static void square_dir(double s, double *dx, double *dy) {
  if (s < 2) *dx = 1, *dy = s - 1;            /* right side, upwards */
  else if (s < 4) *dx = 3 - s, *dy = 1;       /* top, leftwards */
  else if (s < 6) *dx = -1, *dy = 5 - s;      /* left side, downwards */
  else *dx = s - 7, *dy = -1;                 /* bottom, rightwards */
}

static void poly_task(void *arg, int64_t chunk, int thread) {
  (void)thread;
  poly_job *j = (poly_job *)arg;
  int64_t f1 = (chunk + 1) * CHUNK < j->n ? (chunk + 1) * CHUNK : j->n;
  int v = j->vertices;
  for (int64_t f = chunk * CHUNK; f < f1; f++) {
    double *p = j->xy + 2 * (size_t)v * (size_t)f;
    j->fo[f + 1] = (uint64_t)f + 1, j->ro[f + 1] = (uint64_t)(f + 1) * (uint64_t)v;
    if (j->kind == RDX_PGEN_GRID) {
      int64_t c = f % j->cols, r = f / j->cols;
      lattice(j, c, r, &p[0], &p[1]); /* counter-clockwise */
      lattice(j, c + 1, r, &p[2], &p[3]);
      lattice(j, c + 1, r + 1, &p[4], &p[5]);
      lattice(j, c, r + 1, &p[6], &p[7]);
      continue;
    }
    uint64_t key = (uint64_t)f;
    double cx = j->side * unit(j->seed, key, 0, 0), cy = j->side * unit(j->seed, key, 0, 1);
    double radius = 0.25 + 0.5 * unit(j->seed, key, 0, 2);
    for (int k = 0; k < v; k++) {
      /* sector k of 8 / v, the direction in its first 80% so neighbours never share one */
      double s = 8.0 * ((double)k + 0.8 * unit(j->seed, key, 1, (uint64_t)k)) / (double)v, dx, dy;
      square_dir(s, &dx, &dy);
      double rho = radius * (0.4 + 0.6 * unit(j->seed, key, 2, (uint64_t)k));
      p[2 * k] = cx + rho * dx, p[2 * k + 1] = cy + rho * dy;
    }
  }
}

static rdx_status check_args(rdx_context *ctx, const char *fn, rdx_polygon_kind kind, int64_t n, int vertices) {
  if (kind != RDX_PGEN_GRID && kind != RDX_PGEN_RANDOM)
    return ctx ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: unknown kind (%d)", fn, (int)kind) : RDX_ERR_INVALID_ARGUMENT;
  if (kind == RDX_PGEN_GRID && vertices != 4)
    return ctx ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: a grid's cells have 4 vertices, not %d", fn, vertices)
               : RDX_ERR_INVALID_ARGUMENT;
  if (vertices < 3 || vertices > RDX_PGEN_MAX_VERTICES)
    return ctx ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: vertices %d is not in [3, %d]", fn, vertices,
                          RDX_PGEN_MAX_VERTICES)
               : RDX_ERR_INVALID_ARGUMENT;
  if (n < 0 || n > (int64_t)(0xFFFFFFFEull / (uint64_t)vertices))
    return ctx ? rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                          "%s: n %lld of %d vertices each is not in [0, 2^32 - 2] vertices (what a layer holds)", fn,
                          (long long)n, vertices)
               : RDX_ERR_INVALID_ARGUMENT;
  return RDX_OK;
}

rdx_status rdx_gen_polygons_bytes(rdx_context *ctx, rdx_polygon_kind kind, int64_t n, int vertices, size_t *bytes) {
  RDX_CHECK(check_args(ctx, "rdx_gen_polygons", kind, n, vertices));
  *bytes = 16 * (size_t)(n + 1) + 16 * (size_t)vertices * (size_t)n; /* below 2^32 vertices: no overflow */
  return RDX_OK;
}

rdx_status rdx_gen_polygons(rdx_context *ctx, rdx_polygon_kind kind, int64_t n, int vertices, uint64_t seed,
                            rdx_array *feature_offsets, rdx_array *ring_offsets, rdx_array *coords) {
  static const char fn[] = "rdx_gen_polygons";
  memset(feature_offsets, 0, sizeof *feature_offsets);
  memset(ring_offsets, 0, sizeof *ring_offsets);
  memset(coords, 0, sizeof *coords);
  RDX_CHECK(check_args(ctx, fn, kind, n, vertices));
  rdx_status st = rdx_gen_alloc(ctx, fn, "n", n + 1, 1, RDX_U64, feature_offsets);
  if (st == RDX_OK) st = rdx_gen_alloc(ctx, fn, "n", n + 1, 1, RDX_U64, ring_offsets);
  if (st == RDX_OK) st = rdx_gen_alloc(ctx, fn, "n", n * vertices, 2, RDX_F64, coords);
  poly_job j;
  memset(&j, 0, sizeof j);
  j.kind = kind, j.n = n, j.vertices = vertices, j.seed = seed;
  int64_t cols = 1;
  while (cols * cols < n) cols++; /* ceil(sqrt(n)), exactly */
  j.cols = cols, j.side = (double)cols;
  j.fo = (uint64_t *)feature_offsets->data, j.ro = (uint64_t *)ring_offsets->data, j.xy = (double *)coords->data;
  if (st == RDX_OK) {
    j.fo[0] = 0, j.ro[0] = 0;
    st = rdx_parallel_for(ctx, (n + CHUNK - 1) / CHUNK, poly_task, &j);
  }
  if (st != RDX_OK) {
    rdx_npy_free(feature_offsets);
    rdx_npy_free(ring_offsets);
    rdx_npy_free(coords);
  }
  return st;
}
