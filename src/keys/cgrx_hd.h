/*
 * cgrx_hd.h: cgRX (Henneberg, Schuhknecht, Kharal, Brown, "More Bang For Your Buck(et)", seed
 * 000) for the CPU, CUDA and OptiX: key mappings, the scene of one bucket (Algorithms 1 and 3,
 * corrected), the ray sequence of a lookup (Algorithm 2 and its optimized form) and the bucket
 * search, written once.
 *
 * Data: the (key, row) entries sorted by key ("row layout", keys.h), cut into buckets of B;
 * bucket b is entries [b B, min((b+1) B, n)), its representative rep(b) its last key.
 *
 * Grid: x = bits 22..0, y = bits 45..23, z = bits 63..46 (RX's default split, 23/23/18; u32 keys
 * lie in one plane). Space coordinates: (x, y, z) with the default mapping, (x, 2^15 y, 2^25 z)
 * with the scaled one (Section V-A; the default here). Every coordinate and every half step is
 * exact in float32: x +- 1/2 needs 24 bits, y and z are powers of two times odd numbers below 2^24.
 *
 * Slots (primitive indices): [0, nb) one per bucket, [nb, 2nb) row markers, [2nb, 3nb) plane
 * markers, the marker ranges present only when the representatives span several rows (ML) or
 * planes (MP). An unused slot is a triangle with NaN vertices, which every backend skips.
 *
 * Triangle of a cell centre c with half steps h: c + h (1,-1,0), c + h (-1,0,1), c + h (0,1,-1).
 * Its centroid is c and its normal is along -(1,1,1), so rays along +x, +y and +z all pass
 * through c and see a front face; a flipped triangle (v1, v2 swapped) shows them its back face.
 * It stays within half a step of c on every axis, so triangles of distinct cells never touch.
 *
 * The paper's pseudo-code is wrong in four places (the digest, [sim]); each fix is marked FIX(n)
 * below and each has a test in tests/test_keys_cgrx.c that fails with the paper's version
 * (selected here by the RDX_CGRX_PAPER_* quirk bits, for those tests only):
 *   FIX(1) the previous representative of bucket b is keys[b B - 1], not keys[repIdx - B] (they
 *          differ for a partial last bucket: duplicate triangles or markers at one spot);
 *   FIX(2) no row-end marker when the representative itself sits at x_max (duplicates there put
 *          the marker on top of the representative's triangle, one bucket too late);
 *   FIX(3) the last bucket still emits the plane-end marker of the last populated plane, or a
 *          z ray from an earlier plane cannot find that plane;
 *   FIX(4) (cgRXu) inserts must be routed by the triangles (rdx_cgrx_locate), not by
 *          representative values, because moved representatives shift bucket borders.
 * Also, every ray starts half a step before the cell it must find (Algorithm 2 starts X1 at the
 * key itself, which the exclusive tmin would miss when the key is a representative).
 */
#ifndef RDX_CGRX_HD_H
#define RDX_CGRX_HD_H

#include "keys/keys.h"
#include "rt/rt_hd.h"

#define RDX_CGRX_XMAX 8388607u   /* 2^23 - 1 */
#define RDX_CGRX_YMAX 8388607u
#define RDX_CGRX_ZMAX 262143u    /* 2^18 - 1 */
#define RDX_CGRX_SCALE_Y 32768.0f     /* 2^15 */
#define RDX_CGRX_SCALE_Z 33554432.0f  /* 2^25 */

/* The paper's versions, for the tests that show why the fixes are needed. */
#define RDX_CGRX_PAPER_PREV 0x1       /* FIX(1) undone */
#define RDX_CGRX_PAPER_ROWMARK 0x2    /* FIX(2) undone */
#define RDX_CGRX_PAPER_LASTPLANE 0x4  /* FIX(3) undone */

RDX_HD uint32_t rdx_cgrx_x(uint64_t k) { return (uint32_t)(k & RDX_CGRX_XMAX); }
RDX_HD uint32_t rdx_cgrx_y(uint64_t k) { return (uint32_t)((k >> 23) & RDX_CGRX_YMAX); }
RDX_HD uint32_t rdx_cgrx_z(uint64_t k) { return (uint32_t)(k >> 46); }
RDX_HD uint64_t rdx_cgrx_row(uint64_t k) { return k >> 23; }   /* the yz part */
RDX_HD uint64_t rdx_cgrx_plane(uint64_t k) { return k >> 46; }
RDX_HD uint64_t rdx_cgrx_pos(uint64_t x, uint64_t y, uint64_t z) { return z << 46 | y << 23 | x; }

/* What a lookup needs, in the memory of the code that looks up. */
typedef struct rdx_cgrx_params {
  const void *pairs;      /* the sorted entries: rdx_pair32 (width 32) or rdx_pair64 */
  int width;
  int bucket;             /* B, 1..65536 */
  int64_t n;              /* entries, >= 1 */
  int64_t nb;             /* buckets, ceil(n / B) */
  int ml, mp;             /* row markers and plane markers present (multi-line, multi-plane) */
  int naive;              /* the naive representation (markers at x = -1) */
  float sy, sz;           /* scale of y and z: 1 (default mapping) or 2^15, 2^25 (scaled) */
  uint64_t min_rep;       /* rep(0) */
  uint64_t max_key;       /* keys[n - 1] */
} rdx_cgrx_params;

RDX_HD uint64_t rdx_cgrx_key(const rdx_cgrx_params *P, int64_t i) {
  return P->width == 32 ? ((const rdx_pair32 *)P->pairs)[i].key : ((const rdx_pair64 *)P->pairs)[i].key;
}
RDX_HD uint64_t rdx_cgrx_rowid(const rdx_cgrx_params *P, int64_t i) {
  return P->width == 32 ? ((const rdx_pair32 *)P->pairs)[i].row : ((const rdx_pair64 *)P->pairs)[i].row;
}
RDX_HD int64_t rdx_cgrx_rep_index(const rdx_cgrx_params *P, int64_t b) {
  int64_t e = (b + 1) * (int64_t)P->bucket;
  return (e < P->n ? e : P->n) - 1;
}
RDX_HD uint64_t rdx_cgrx_rep(const rdx_cgrx_params *P, int64_t b) { return rdx_cgrx_key(P, rdx_cgrx_rep_index(P, b)); }

/* Fill the derived fields from n, B, rep(0) and the largest key. */
RDX_HD void rdx_cgrx_params_finish(rdx_cgrx_params *P, uint64_t min_rep, uint64_t max_key) {
  P->nb = (P->n + P->bucket - 1) / P->bucket;
  P->min_rep = min_rep;
  P->max_key = max_key;
  P->ml = rdx_cgrx_row(P->min_rep) != rdx_cgrx_row(P->max_key);
  P->mp = rdx_cgrx_plane(P->min_rep) != rdx_cgrx_plane(P->max_key);
}
/* The same, reading the entries (memory the caller can read). */
RDX_HD void rdx_cgrx_params_init(rdx_cgrx_params *P) {
  int64_t i0 = (P->bucket < P->n ? P->bucket : P->n) - 1;
  rdx_cgrx_params_finish(P, rdx_cgrx_key(P, i0), rdx_cgrx_key(P, P->n - 1));
}

RDX_HD int64_t rdx_cgrx_slots(const rdx_cgrx_params *P) { return (1 + P->ml + P->mp) * P->nb; }

/* ---- scene ---- */

/* The triangle of grid cell (x, y, z) (x or y may be -1: the naive markers). */
RDX_HD void rdx_cgrx_triangle(const rdx_cgrx_params *P, double x, double y, double z, int flip, float *v) {
  float cx = (float)x, cy = (float)(y * (double)P->sy), cz = (float)(z * (double)P->sz);
  float hx = 0.5f, hy = 0.5f * P->sy, hz = 0.5f * P->sz;
  float a[3] = {cx + hx, cy - hy, cz}, b[3] = {cx - hx, cy, cz + hz}, c[3] = {cx, cy + hy, cz - hz};
  for (int i = 0; i < 3; i++) {
    v[i] = a[i];
    v[3 + i] = flip ? c[i] : b[i];
    v[6 + i] = flip ? b[i] : c[i];
  }
}

RDX_HD void rdx_cgrx_inactive(float *v) {
  for (int i = 0; i < 9; i++) v[i] = NAN;
}

/* Emit the slots bucket b owns (b, and nb + b, 2 nb + b when present) into tris (9 floats per
 * slot) and, when codes is not NULL, each slot's key-order sort code (its cell as a key). */
RDX_HD void rdx_cgrx_emit(const rdx_cgrx_params *P, int64_t b, unsigned quirks, float *tris, uint64_t *codes) {
  const int64_t nb = P->nb, n = P->n, B = P->bucket;
  const int64_t ri = rdx_cgrx_rep_index(P, b);
  const uint64_t r = rdx_cgrx_key(P, ri);
  const int first = b == 0, last = b == nb - 1;
  /* FIX(1): keys[b B - 1]; the paper reads keys[repIdx - B] */
  int64_t pi = (quirks & RDX_CGRX_PAPER_PREV) ? ri - B : b * B - 1;
  const uint64_t p = first || pi < 0 ? 0 : rdx_cgrx_key(P, pi);
  int64_t nri = ri + B < n ? ri + B : n - 1; /* the next representative, clamped for bucket nb - 2 */
  const uint64_t nk = last ? 0 : rdx_cgrx_key(P, ri + 1), nr = last ? 0 : rdx_cgrx_key(P, nri);
  float *slot_rep = tris + b * 9, *slot_row = P->ml ? tris + (nb + b) * 9 : NULL,
        *slot_plane = P->mp ? tris + (2 * nb + b) * 9 : NULL;
  int rep_on = 0, row_on = 0, plane_on = 0;
  uint64_t rep_code = r, row_code = 0, plane_code = 0;
  if (P->naive) {
    /* Algorithm 1: representative at its own cell unless it repeats the previous one; a row
     * marker at (-1, y, z) from the first representative of each row, a plane marker at
     * (-1, -1, z) from the first of each plane. */
    int new_rep = first || r != p;
    if (new_rep) {
      rdx_cgrx_triangle(P, rdx_cgrx_x(r), rdx_cgrx_y(r), rdx_cgrx_z(r), 0, slot_rep);
      rep_on = 1;
    }
    if (slot_row && new_rep && (first || rdx_cgrx_row(r) != rdx_cgrx_row(p))) {
      rdx_cgrx_triangle(P, -1.0, rdx_cgrx_y(r), rdx_cgrx_z(r), 0, slot_row);
      row_on = 1;
      row_code = rdx_cgrx_row(r) << 23; /* sorts with its row */
    }
    if (slot_plane && new_rep && (first || rdx_cgrx_plane(r) != rdx_cgrx_plane(p))) {
      rdx_cgrx_triangle(P, -1.0, -1.0, rdx_cgrx_z(r), 0, slot_plane);
      plane_on = 1;
      plane_code = rdx_cgrx_plane(r) << 46;
    }
  } else {
    /* Algorithm 3 with FIX(1..3): move a representative to x_max when the next key is in a later
     * row (the last bucket counts as movable), add a row-end marker when it is the last of its row
     * but cannot move, a plane-end marker at (x_max, y_max, z) from the last of each plane. */
    const int movable = last || rdx_cgrx_row(nk) != rdx_cgrx_row(r);
    const int at_end = rdx_cgrx_x(r) == RDX_CGRX_XMAX;
    if (first || r != p || (movable && !at_end)) {
      int flip = movable && (first || rdx_cgrx_row(p) != rdx_cgrx_row(r));
      uint32_t x = movable ? RDX_CGRX_XMAX : rdx_cgrx_x(r);
      rdx_cgrx_triangle(P, x, rdx_cgrx_y(r), rdx_cgrx_z(r), flip, slot_rep);
      rep_on = 1;
      rep_code = rdx_cgrx_pos(x, rdx_cgrx_y(r), rdx_cgrx_z(r));
    }
    int guard = (quirks & RDX_CGRX_PAPER_ROWMARK) ? 1 : !at_end; /* FIX(2) */
    if (slot_row && !last && !movable && rdx_cgrx_row(nr) != rdx_cgrx_row(r) && guard) {
      rdx_cgrx_triangle(P, RDX_CGRX_XMAX, rdx_cgrx_y(r), rdx_cgrx_z(r), 0, slot_row);
      row_on = 1;
      row_code = rdx_cgrx_pos(RDX_CGRX_XMAX, rdx_cgrx_y(r), rdx_cgrx_z(r));
    }
    int plane_end = last ? !(quirks & RDX_CGRX_PAPER_LASTPLANE) /* FIX(3) */
                         : rdx_cgrx_plane(nr) != rdx_cgrx_plane(r);
    if (slot_plane && rdx_cgrx_y(r) != RDX_CGRX_YMAX && plane_end) {
      rdx_cgrx_triangle(P, RDX_CGRX_XMAX, RDX_CGRX_YMAX, rdx_cgrx_z(r), 0, slot_plane);
      plane_on = 1;
      plane_code = rdx_cgrx_pos(RDX_CGRX_XMAX, RDX_CGRX_YMAX, rdx_cgrx_z(r));
    }
  }
  if (!rep_on) rdx_cgrx_inactive(slot_rep);
  if (slot_row && !row_on) rdx_cgrx_inactive(slot_row);
  if (slot_plane && !plane_on) rdx_cgrx_inactive(slot_plane);
  if (codes) {
    codes[b] = rep_code;
    if (slot_row) codes[nb + b] = row_code;
    if (slot_plane) codes[2 * nb + b] = plane_code;
  }
}

/* ---- lookups ---- */

/* Bucket of a slot hit by a ray (the paper's remap; naive scenes return only slots < nb). */
RDX_HD int64_t rdx_cgrx_remap(const rdx_cgrx_params *P, uint32_t s) {
  int64_t nb = P->nb;
  if ((int64_t)s >= 2 * nb) return (int64_t)s - 2 * nb + 1;
  if ((int64_t)s >= nb) return (int64_t)s - nb + 1;
  return (int64_t)s;
}

/* Row (y) and plane (z) of the cell of slot s, from the representative that placed it. */
RDX_HD void rdx_cgrx_slot_cell(const rdx_cgrx_params *P, uint32_t s, uint32_t *y, uint32_t *z) {
  int64_t nb = P->nb, b = (int64_t)s % nb;
  uint64_t r = rdx_cgrx_rep(P, b);
  *z = rdx_cgrx_z(r);
  *y = ((int64_t)s >= 2 * nb) ? (P->naive ? 0xFFFFFFFFu : RDX_CGRX_YMAX) : rdx_cgrx_y(r);
}

/* An axis ray (+x, +y or +z) from grid position (x, y, z) (in steps, may be fractional) to grid
 * coordinate `end` on its axis (exclusive). */
RDX_HD rdx_ray rdx_cgrx_ray(const rdx_cgrx_params *P, int axis, double x, double y, double z, double end) {
  rdx_ray r;
  double s[3] = {1.0, (double)P->sy, (double)P->sz};
  double g[3] = {x, y, z};
  for (int a = 0; a < 3; a++) {
    r.o[a] = (float)(g[a] * s[a]);
    r.d[a] = a == axis ? 1.0f : 0.0f;
  }
  r.tmin = 0.0f;
  r.tmax = (float)((end - g[axis]) * s[axis]);
  return r;
}

/* Error results of a lookup that cannot happen in a correct scene (reported as internal errors). */
/* Rays end this many steps past the last cell of their axis, where no triangle lies. Ending
 * them at the last cell's far edge (+0.5) left a moved representative at x_max half a step
 * before tmax: at t near 2^23 that is one float ulp, and OptiX's software traversal rounded such
 * hits past tmax and missed them. */
#define RDX_CGRX_RAY_END 8.0
#define RDX_CGRX_MISS (-1)
#define RDX_CGRX_BROKEN (-2)

/*
 * RDX_CGRX_DEFINE_LOCATE(QUAL, NAME, CTX, CAST) defines
 *     QUAL int64_t NAME(const rdx_cgrx_params *P, CTX c, uint64_t k, int *n_rays)
 * the bucket in which a lookup of k starts (the bucket of the first triangle at or after k), or
 * RDX_CGRX_MISS for k above the largest key, with the ray sequence of Section III:
 *     X1, then (Y1, [X2]) within k's plane, then (Z1, Y2, [X3]) for a later plane;
 * every ray a closest-hit ray, cast by void CAST(CTX c, const rdx_ray *r, rdx_rt_hit *h). QUAL is
 * RDX_HD for the soft backends and a device-only qualifier in OptiX programs.
 */
#define RDX_CGRX_DEFINE_LOCATE(QUAL, NAME, CTX, CAST)                                             \
  QUAL int64_t NAME(const rdx_cgrx_params *P, CTX c, uint64_t k, int *n_rays) {                   \
    *n_rays = 0;                                                                                  \
    if (k > P->max_key) return RDX_CGRX_MISS;                                                     \
    if (k <= P->min_rep) return 0;                                                                \
    const double X = RDX_CGRX_XMAX, Y = RDX_CGRX_YMAX, Z = RDX_CGRX_ZMAX, E = RDX_CGRX_RAY_END;  \
    const double kx = rdx_cgrx_x(k), ky = rdx_cgrx_y(k), kz = rdx_cgrx_z(k);                      \
    const int nv = P->naive;                                                                      \
    rdx_rt_hit h;                                                                                 \
    rdx_ray r = rdx_cgrx_ray(P, 0, kx - 0.5, ky, kz, X + E); /* X1: k's row */                  \
    CAST(c, &r, &h);                                                                              \
    ++*n_rays;                                                                                    \
    if (h.prim != RDX_RT_NO_HIT) return rdx_cgrx_remap(P, h.prim);                                \
    if (!P->ml) return RDX_CGRX_BROKEN;                                                           \
    uint32_t yy, zz;                                                                              \
    /* Y1: the next populated row of k's plane (row markers at x = -1, or row ends at x_max) */  \
    r = rdx_cgrx_ray(P, 1, nv ? -1.0 : X, ky + 0.5, kz, Y + E);                                 \
    CAST(c, &r, &h);                                                                              \
    ++*n_rays;                                                                                    \
    double zrow = kz;                                                                             \
    if (h.prim == RDX_RT_NO_HIT) {                                                                \
      if (!P->mp) return RDX_CGRX_BROKEN;                                                         \
      /* Z1: the next populated plane (plane markers at (-1, -1), or ends at (x_max, y_max)) */   \
      r = rdx_cgrx_ray(P, 2, nv ? -1.0 : X, nv ? -1.0 : Y, kz + 0.5, Z + E);                    \
      CAST(c, &r, &h);                                                                            \
      ++*n_rays;                                                                                  \
      if (h.prim == RDX_RT_NO_HIT) return RDX_CGRX_BROKEN;                                        \
      rdx_cgrx_slot_cell(P, h.prim, &yy, &zz);                                                    \
      zrow = zz;                                                                                  \
      /* Y2: the first populated row of that plane */                                             \
      r = rdx_cgrx_ray(P, 1, nv ? -1.0 : X, -0.5, zrow, Y + E);                                 \
      CAST(c, &r, &h);                                                                            \
      ++*n_rays;                                                                                  \
      if (h.prim == RDX_RT_NO_HIT) return RDX_CGRX_BROKEN;                                        \
    }                                                                                             \
    /* a flipped representative is alone in its row: the y ray already found the answer */       \
    if (!nv && !h.front) return rdx_cgrx_remap(P, h.prim);                                        \
    rdx_cgrx_slot_cell(P, h.prim, &yy, &zz);                                                      \
    /* X2 / X3: the first triangle of that row */                                                 \
    r = rdx_cgrx_ray(P, 0, -0.5, yy, zrow, X + E);                                              \
    CAST(c, &r, &h);                                                                              \
    ++*n_rays;                                                                                    \
    if (h.prim == RDX_RT_NO_HIT) return RDX_CGRX_BROKEN;                                          \
    return rdx_cgrx_remap(P, h.prim);                                                             \
  }

/* First index in [lo, hi) with key >= k (hi if none): binary search on the row layout. */
RDX_HD int64_t rdx_cgrx_lower(const rdx_cgrx_params *P, int64_t lo, int64_t hi, uint64_t k) {
  while (lo < hi) {
    int64_t m = lo + (hi - lo) / 2;
    if (rdx_cgrx_key(P, m) < k) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/* First index >= start with key > u (n if none), by galloping from start: O(log count).
 * Where the keys from start on are consecutive integers (a dense column: row numbers, serials),
 * the answer is start + (u - key[start]) + 1; two loads check that guess before the gallop,
 * which for a range of 256 keys saves about eight dependent cache-line misses. A wrong guess
 * costs one load more. */
RDX_HD int64_t rdx_cgrx_upper_from(const rdx_cgrx_params *P, int64_t start, uint64_t u) {
  int64_t n = P->n;
  uint64_t k0;
  if (start >= n || (k0 = rdx_cgrx_key(P, start)) > u) return start;
  if (u - k0 < (uint64_t)(n - start)) {
    int64_t g = start + (int64_t)(u - k0); /* the last key <= u, if dense */
    if (g > start && rdx_cgrx_key(P, g) <= u && (g + 1 == n || rdx_cgrx_key(P, g + 1) > u)) return g + 1;
  }
  int64_t good = start, step = 1; /* key[good] <= u */
  for (;;) {
    int64_t probe = good + step;
    if (probe >= n || rdx_cgrx_key(P, probe) > u) {
      int64_t hi = probe < n ? probe : n;
      /* answer in (good, hi] */
      int64_t lo = good + 1;
      while (lo < hi) {
        int64_t m = lo + (hi - lo) / 2;
        if (rdx_cgrx_key(P, m) <= u) lo = m + 1;
        else hi = m;
      }
      return lo;
    }
    good = probe;
    step *= 2;
  }
}

/* Where a lookup of k starts in the entries: the first index with key >= k (n for none), given
 * the bucket the rays found (the global lower bound lies in that bucket or at its end). */
RDX_HD int64_t rdx_cgrx_start(const rdx_cgrx_params *P, int64_t bucket, uint64_t k) {
  if (bucket < 0) return P->n;
  int64_t lo = bucket * (int64_t)P->bucket, hi = lo + P->bucket < P->n ? lo + P->bucket : P->n;
  return rdx_cgrx_lower(P, lo, hi, k);
}

/* ---- the soft backends' ray cast: the generic closest-hit traversal of rt_hd.h ---- */

/* not inlined: the ray sequence calls it from five places */
RDX_HD_NOINLINE void rdx_cgrx_cast_soft(const rdx_bvh_view *v, const rdx_ray *r, rdx_rt_hit *h) {
  rdx_rt_generic_state s;
  s.hit.prim = RDX_RT_NO_HIT;
  s.hit.t = 0.0f;
  s.hit.front = 0;
  s.count = 0;
  s.out = NULL;
  rdx_rt_trace_closest(v, r, &s);
  *h = s.hit;
}

RDX_CGRX_DEFINE_LOCATE(RDX_HD, rdx_cgrx_locate_soft, const rdx_bvh_view *, rdx_cgrx_cast_soft)

/* Query operations and what one query does once its start is known. */
enum {
  RDX_CGRX_OP_LOOKUP = 0,
  RDX_CGRX_OP_LOOKUP_COUNT = 1,
  RDX_CGRX_OP_LOOKUP_FILL = 2,
  RDX_CGRX_OP_RANGE_COUNT = 3,
  RDX_CGRX_OP_RANGE_FILL = 4,
  RDX_CGRX_OP_LOCATE = 5 /* the bucket of each key alone (int64, RDX_CGRX_MISS for none): cgrxu's */
};

/* The number of results of a query whose lookup starts at `start`: [start, end) are the
 * entries with key == lo (point) or lo <= key <= hi (range). */
RDX_HD int64_t rdx_cgrx_end(const rdx_cgrx_params *P, int op, int64_t start, uint64_t lo, uint64_t hi) {
  if (op >= RDX_CGRX_OP_RANGE_COUNT) return lo > hi ? start : rdx_cgrx_upper_from(P, start, hi);
  if (start >= P->n || rdx_cgrx_key(P, start) != lo) return start;
  return op == RDX_CGRX_OP_LOOKUP ? start + 1 : rdx_cgrx_upper_from(P, start, lo);
}

/* Where one query of a fill copies from: entries [start, start + count). */
typedef struct rdx_cgrx_span {
  int64_t start;
  int64_t count;
} rdx_cgrx_span;

/* The GPU backends' end of query i once the rays gave bucket b: LOOKUP and the COUNT ops write
 * out[i]; the FILL ops (out = offsets) write the span the copy kernel then copies. */
RDX_HD void rdx_cgrx_finish(const rdx_cgrx_params *P, int op, int64_t i, int64_t b, uint64_t lo, uint64_t hi,
                            uint64_t *out, rdx_cgrx_span *spans) {
  int64_t start = rdx_cgrx_start(P, b, lo);
  int64_t stop = rdx_cgrx_end(P, op, start, lo, hi);
  if (op == RDX_CGRX_OP_LOOKUP) {
    out[i] = stop > start ? rdx_cgrx_rowid(P, start) : RDX_MISS;
  } else if (op == RDX_CGRX_OP_LOOKUP_COUNT || op == RDX_CGRX_OP_RANGE_COUNT) {
    out[i] = (uint64_t)(stop - start);
  } else {
    int64_t want = (int64_t)(out[i + 1] - out[i]);
    rdx_cgrx_span sp;
    sp.start = start;
    sp.count = stop - start < want ? stop - start : want;
    spans[i] = sp;
  }
}

#endif /* RDX_CGRX_HD_H */
