/*
 * test_rt_layouts.c: the binary BVH and the BVH4 (rdx_bvh_options.width 2 and 4) answer the same,
 * on the backend given by --backend (cpu or cuda: the soft traversals; optix has neither tree and
 * skips). For each scene both trees are built and traced in all three modes, then compared:
 *   - the trees share their leaves (leaf-ordered prims and ids byte for byte), and on cuda each
 *     tree equals the CPU build's byte for byte (nodes, BVH4 nodes, prims, ids);
 *   - all-hits: counts and (ascending) ids byte for byte;
 *   - closest-hit: hit or not, t and facing bit for bit; the primitive too, except where several
 *     primitives are hit at exactly the closest t: the contract (rt.h, test_rt_bvh, OptiX) is one
 *     of them, so there each answer is checked to be a hit at that t with that facing, and the
 *     number of such ties is printed;
 *   - first-hit: hit or not equal; each hit is one of the ray's all-hits set at its exact t and
 *     facing (the contract is "any hit"; a ray with one hit has one answer).
 * Scenes: random triangle and box soups of 0 .. 5000 primitives, inactive (NaN) primitives,
 * stacks of coincident duplicates, one primitive, boxes on an integer grid that touch, with axis
 * rays lying in box faces (parallel to boxes) and starting exactly on faces, flat scenes, and the
 * half-step triangle grids of rx and cgrx with long row rays; rays axis-aligned and general, with
 * zero direction components, tmin > 0 and short tmax.
 */
#include <math.h>

#include "check.h"
#include "rt/rt.h"

static rdx_context *g_ctx, *g_cpu; /* the backend under test; a CPU context for the tree check */
static int64_t g_ties, g_first_differ, g_rays;

static float frand(float lo, float hi) { return lo + (hi - lo) * (float)((double)check_below(1u << 24) / (1u << 24)); }

/* a host copy of a tree array (NULL for none) */
static void *host_copy(rdx_context *ctx, const void *p, size_t bytes) {
  if (!p || !bytes) return NULL;
  void *h = malloc(bytes);
  check_fetch(ctx, h, p, bytes);
  return h;
}

typedef struct answers {
  rdx_rt_hit *first, *closest;
  uint64_t *counts, *offsets;
  uint32_t *ids;
} answers;

static void answers_free(answers *a) {
  free(a->first);
  free(a->closest);
  free(a->counts);
  free(a->offsets);
  free(a->ids);
}

/* All three modes of rays (host) on scene sc of ctx, answers on the host. */
static answers trace_all(rdx_context *ctx, const rdx_rt_scene *sc, const rdx_ray *rays, int64_t m) {
  answers a;
  a.first = (rdx_rt_hit *)malloc((size_t)(m + 1) * sizeof(rdx_rt_hit));
  a.closest = (rdx_rt_hit *)malloc((size_t)(m + 1) * sizeof(rdx_rt_hit));
  a.counts = (uint64_t *)malloc((size_t)(m + 1) * 8);
  a.offsets = (uint64_t *)malloc((size_t)(m + 1) * 8);
  void *dr = check_place(ctx, rays, (size_t)m * sizeof *rays);
  void *dh = check_place(ctx, a.first, (size_t)m * sizeof(rdx_rt_hit));
  CHECK_OK(ctx, rdx_rt_trace(ctx, sc, (const rdx_ray *)dr, m, RDX_RT_FIRST_HIT, (rdx_rt_hit *)dh, NULL, NULL, NULL));
  check_fetch(ctx, a.first, dh, (size_t)m * sizeof(rdx_rt_hit));
  CHECK_OK(ctx, rdx_rt_trace(ctx, sc, (const rdx_ray *)dr, m, RDX_RT_CLOSEST_HIT, (rdx_rt_hit *)dh, NULL, NULL, NULL));
  check_fetch(ctx, a.closest, dh, (size_t)m * sizeof(rdx_rt_hit));
  check_unplace(ctx, dh);
  memset(a.counts, 0, (size_t)(m + 1) * 8);
  void *dc = check_place(ctx, a.counts, (size_t)m * 8);
  CHECK_OK(ctx, rdx_rt_trace(ctx, sc, (const rdx_ray *)dr, m, RDX_RT_ALL_HITS, NULL, (uint64_t *)dc, NULL, NULL));
  check_fetch(ctx, a.counts, dc, (size_t)m * 8);
  check_unplace(ctx, dc);
  a.offsets[0] = 0;
  for (int64_t i = 0; i < m; i++) a.offsets[i + 1] = a.offsets[i] + a.counts[i];
  a.ids = (uint32_t *)malloc((size_t)a.offsets[m] * 4 + 4);
  void *doff = check_place(ctx, a.offsets, (size_t)(m + 1) * 8), *dids = check_place(ctx, a.ids, (size_t)a.offsets[m] * 4);
  CHECK_OK(ctx, rdx_rt_trace(ctx, sc, (const rdx_ray *)dr, m, RDX_RT_ALL_HITS, NULL, NULL, (const uint64_t *)doff,
                             (uint32_t *)dids));
  check_fetch(ctx, a.ids, dids, (size_t)a.offsets[m] * 4);
  check_unplace(ctx, doff);
  check_unplace(ctx, dids);
  check_unplace(ctx, dr);
  return a;
}

/* Whether primitive p (input index) is hit by ray r at exactly t with facing f, by the same test. */
static int hit_at(int kind, const float *prims, uint32_t p, const rdx_ray *r, float t, uint32_t f) {
  rdx_ray_pre pre;
  rdx_ray_prepare(r, &pre);
  float u;
  int front = 1;
  if (kind == RDX_RT_TRIANGLES) {
    if (!rdx_rt_tri_hit(prims + (int64_t)p * 9, r, &pre, r->tmin, r->tmax, &u, &front)) return 0;
  } else {
    const float *b = prims + (int64_t)p * 6;
    if (!rdx_rt_box_hit(b, b + 3, r, &pre, r->tmin, r->tmax)) return 0;
    rdx_rt_generic_state s;
    rdx_rt_box_entry_isect(&s, p, b, r, &pre, r->tmin, r->tmax, &u);
    if (!(r->tmin < u && u < r->tmax)) return 0;
  }
  return u == t && (uint32_t)front == f;
}

static int in_list(const uint32_t *ids, uint64_t c, uint32_t p) {
  for (uint64_t k = 0; k < c; k++)
    if (ids[k] == p) return 1;
  return 0;
}

/* The trees of one build: host copies of every array. */
typedef struct tree_copy {
  rdx_bvh b;
  void *nodes, *nodes4, *prims, *ids;
} tree_copy;

static tree_copy tree_of(rdx_context *ctx, const rdx_rt_scene *sc) {
  tree_copy t;
  t.b = sc->bvh;
  int w = sc->kind == RDX_RT_TRIANGLES ? 9 : 6;
  t.nodes = host_copy(ctx, sc->bvh.nodes, (size_t)sc->bvh.n_nodes * sizeof(rdx_bvh_node));
  t.nodes4 = host_copy(ctx, sc->bvh.nodes4, (size_t)sc->bvh.n_nodes4 * sizeof(rdx_bvh4_node));
  t.prims = host_copy(ctx, sc->bvh.prims, (size_t)sc->bvh.n_prims * w * 4);
  t.ids = host_copy(ctx, sc->bvh.ids, (size_t)sc->bvh.n_prims * 4);
  return t;
}
static void tree_free(tree_copy *t) {
  free(t->nodes);
  free(t->nodes4);
  free(t->prims);
  free(t->ids);
}
static int same_bytes(const void *a, const void *b, size_t bytes) {
  if (!bytes) return 1;
  return a && b && memcmp(a, b, bytes) == 0;
}
static void same_tree(const char *what, const tree_copy *a, const tree_copy *b, int w) {
  if (a->b.width != b->b.width || a->b.n_nodes != b->b.n_nodes || a->b.n_nodes4 != b->b.n_nodes4 ||
      a->b.n_prims != b->b.n_prims || a->b.coincident != b->b.coincident) {
    CHECK_FAIL_("%s: widths %d/%d, nodes %lld/%lld, bvh4 nodes %lld/%lld, prims %lld/%lld", what, a->b.width,
                b->b.width, (long long)a->b.n_nodes, (long long)b->b.n_nodes, (long long)a->b.n_nodes4,
                (long long)b->b.n_nodes4, (long long)a->b.n_prims, (long long)b->b.n_prims);
    return;
  }
  if (!same_bytes(a->nodes, b->nodes, (size_t)a->b.n_nodes * sizeof(rdx_bvh_node)) ||
      !same_bytes(a->nodes4, b->nodes4, (size_t)a->b.n_nodes4 * sizeof(rdx_bvh4_node)) ||
      !same_bytes(a->prims, b->prims, (size_t)a->b.n_prims * w * 4) ||
      !same_bytes(a->ids, b->ids, (size_t)a->b.n_prims * 4))
    CHECK_FAIL_("%s: the trees differ (width %d, %lld prims)", what, a->b.width, (long long)a->b.n_prims);
}

static int64_t g_bytes[5], g_prims; /* bytes of the last large scene by width */

/* Build both layouts of one scene, trace, compare. */
static void check_layouts(int kind, const float *prims, int64_t n, const rdx_ray *rays, int64_t m) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  rdx_rt_scene sc[5];
  tree_copy tc[5];
  answers an[5];
  for (int width = 2; width <= 4; width += 2) {
    rdx_bvh_options o;
    memset(&o, 0, sizeof o);
    o.width = width;
    void *dp = check_place(g_ctx, prims, (size_t)n * w * 4);
    CHECK_OK(g_ctx, rdx_rt_scene_build(g_ctx, kind, (const float *)dp, n, &o, &sc[width]));
    check_unplace(g_ctx, dp);
    CHECK_EQ(sc[width].bvh.width, width);
    g_bytes[width] = rdx_rt_scene_bytes(&sc[width]);
    tc[width] = tree_of(g_ctx, &sc[width]);
    if (g_cpu) { /* the GPU build equals the CPU build */
      rdx_rt_scene hs;
      CHECK_OK(g_cpu, rdx_rt_scene_build(g_cpu, kind, prims, n, &o, &hs));
      tree_copy ht = tree_of(g_cpu, &hs);
      same_tree(width == 2 ? "cuda vs cpu binary tree" : "cuda vs cpu bvh4", &tc[width], &ht, w);
      tree_free(&ht);
      rdx_rt_scene_free(g_cpu, &hs);
    }
    an[width] = trace_all(g_ctx, &sc[width], rays, m);
  }
  g_prims = sc[2].bvh.n_prims;
  /* the same leaves */
  if (tc[2].b.n_prims != tc[4].b.n_prims || !same_bytes(tc[2].prims, tc[4].prims, (size_t)tc[2].b.n_prims * w * 4) ||
      !same_bytes(tc[2].ids, tc[4].ids, (size_t)tc[2].b.n_prims * 4))
    CHECK_FAIL_("the two layouts have other leaves (n %lld)", (long long)n);
  /* every other binary level goes: fewer nodes once there are two levels */
  if (tc[4].b.n_nodes4 > tc[2].b.n_nodes || (tc[2].b.n_nodes > 1 && tc[4].b.n_nodes4 >= tc[2].b.n_nodes))
    CHECK_FAIL_("bvh4 has %lld nodes, binary %lld", (long long)tc[4].b.n_nodes4, (long long)tc[2].b.n_nodes);
  const answers *a = &an[2], *b = &an[4];
  int before = check_failures_;
  if (memcmp(a->counts, b->counts, (size_t)m * 8) != 0) {
    for (int64_t i = 0; i < m; i++)
      if (a->counts[i] != b->counts[i]) {
        CHECK_FAIL_("all-hits of ray %lld (n %lld, kind %d): %llu hits on binary, %llu on bvh4", (long long)i,
                    (long long)n, kind, (unsigned long long)a->counts[i], (unsigned long long)b->counts[i]);
        break;
      }
  } else if (memcmp(a->ids, b->ids, (size_t)a->offsets[m] * 4) != 0) {
    for (int64_t i = 0; i < m; i++)
      if (memcmp(a->ids + a->offsets[i], b->ids + b->offsets[i], (size_t)a->counts[i] * 4) != 0) {
        CHECK_FAIL_("all-hits ids of ray %lld differ (n %lld, kind %d)", (long long)i, (long long)n, kind);
        break;
      }
  }
  for (int64_t i = 0; i < m && check_failures_ == before; i++) {
    const rdx_ray *r = rays + i;
    const uint32_t *ids = a->ids + a->offsets[i];
    uint64_t c = a->counts[i];
    g_rays++;
    const rdx_rt_hit *x = &a->closest[i], *y = &b->closest[i];
    if ((x->prim == RDX_RT_NO_HIT) != (y->prim == RDX_RT_NO_HIT) || (c == 0) != (x->prim == RDX_RT_NO_HIT)) {
      CHECK_FAIL_("closest hit of ray %lld: binary prim %u, bvh4 prim %u, %llu hits (n %lld, kind %d)", (long long)i,
                  x->prim, y->prim, (unsigned long long)c, (long long)n, kind);
      break;
    }
    if (x->prim != RDX_RT_NO_HIT) {
      if (memcmp(&x->t, &y->t, 4) != 0) {
        CHECK_FAIL_("closest hit of ray %lld: t %.9g on binary, %.9g on bvh4 (n %lld, kind %d)", (long long)i,
                    (double)x->t, (double)y->t, (long long)n, kind);
        break;
      }
      if (x->prim != y->prim || x->front != y->front) { /* must be a tie at the same t */
        g_ties++;
        if (!in_list(ids, c, y->prim) || !hit_at(kind, prims, y->prim, r, y->t, y->front) ||
            !hit_at(kind, prims, x->prim, r, x->t, x->front)) {
          CHECK_FAIL_("closest hit of ray %lld: binary prim %u, bvh4 prim %u at t %.9g: not a tie (n %lld, kind %d)",
                      (long long)i, x->prim, y->prim, (double)y->t, (long long)n, kind);
          break;
        }
      }
    }
    for (int l = 0; l < 2; l++) {
      const rdx_rt_hit *f = l ? &b->first[i] : &a->first[i];
      if ((f->prim == RDX_RT_NO_HIT) != (c == 0)) {
        CHECK_FAIL_("first hit of ray %lld on %s: prim %u but %llu hits (n %lld, kind %d)", (long long)i,
                    l ? "bvh4" : "binary", f->prim, (unsigned long long)c, (long long)n, kind);
        break;
      }
      if (c && (!in_list(ids, c, f->prim) || !hit_at(kind, prims, f->prim, r, f->t, f->front))) {
        CHECK_FAIL_("first hit of ray %lld on %s: prim %u at t %.9g is not a hit (n %lld, kind %d)", (long long)i,
                    l ? "bvh4" : "binary", f->prim, (double)f->t, (long long)n, kind);
        break;
      }
    }
    if (memcmp(&a->first[i], &b->first[i], sizeof(rdx_rt_hit)) != 0) g_first_differ++;
  }
  for (int width = 2; width <= 4; width += 2) {
    answers_free(&an[width]);
    tree_free(&tc[width]);
    rdx_rt_scene_free(g_ctx, &sc[width]);
  }
}

/* A random ray through the cube [lo, hi]^3: axis or general, sometimes with zero components,
 * tmin > 0 or a short tmax. */
static void random_ray(rdx_ray *r, float lo, float hi) {
  int kind = (int)check_below(4);
  for (int a = 0; a < 3; a++) r->o[a] = frand(lo, hi), r->d[a] = 0.0f;
  if (kind < 2) {
    int axis = (int)check_below(3);
    r->d[axis] = 1.0f;
    r->o[axis] = lo - 1.0f;
  } else {
    for (int a = 0; a < 3; a++) r->d[a] = frand(-1, 1);
    if (check_below(4) == 0) r->d[check_below(3)] = 0.0f;
  }
  r->tmin = check_below(4) == 0 ? frand(0, 0.5f * (hi - lo)) : 0.0f;
  r->tmax = check_below(4) == 0 ? frand(0, 2.0f * (hi - lo)) : 1e30f;
}

static void scene_random(int kind, int64_t n, int dup, int nan) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  float ext = 100.0f;
  float *p = (float *)malloc((size_t)(n + 1) * w * 4);
  for (int64_t i = 0; i < n; i++) {
    float c[3], s = frand(0.05f, 8.0f);
    for (int a = 0; a < 3; a++) c[a] = frand(0, ext);
    for (int k = 0; k < w; k++)
      p[i * w + k] = kind == RDX_RT_TRIANGLES ? c[k % 3] + frand(-s, s) : c[k % 3] + (k < 3 ? -1.0f : 1.0f) * frand(0, s);
    if (dup && i > 0 && check_below(3) == 0) memcpy(p + i * w, p + (int64_t)check_below((uint64_t)i) * w, (size_t)w * 4);
    if (nan && check_below(6) == 0) p[i * w + check_below((uint64_t)w)] = NAN;
  }
  int64_t m = 1500;
  rdx_ray *r = (rdx_ray *)malloc((size_t)m * sizeof *r);
  for (int64_t i = 0; i < m; i++) {
    random_ray(r + i, -5.0f, ext + 5.0f);
    if (n > 0 && check_below(2) == 0) { /* through a primitive's first vertex or corner */
      int64_t k = (int64_t)check_below((uint64_t)n);
      for (int a = 0; a < 3; a++)
        if (r[i].d[a] == 0.0f) r[i].o[a] = p[k * w + a];
    }
  }
  check_layouts(kind, p, n, r, m);
  free(r);
  free(p);
}

/* copies stacks of one primitive each: ties at every closest hit */
static void scene_stacks(int kind, int64_t copies, int64_t stacks) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  int64_t n = copies * stacks;
  float *p = (float *)malloc((size_t)n * w * 4);
  for (int64_t s = 0; s < stacks; s++) {
    float c[3] = {(float)(s % 7) * 4.0f, (float)(s / 7 % 7) * 4.0f, (float)(s / 49) * 4.0f};
    float one[9];
    for (int k = 0; k < w; k++)
      one[k] = kind == RDX_RT_TRIANGLES ? c[k % 3] + (float)((int)check_below(5) - 2) * 0.5f
                                        : c[k % 3] + (k < 3 ? -1.0f : 1.0f) * (float)(1 + check_below(3)) * 0.5f;
    for (int64_t k = 0; k < copies; k++) memcpy(p + (s * copies + k) * w, one, (size_t)w * 4);
  }
  int64_t m = 800;
  rdx_ray *r = (rdx_ray *)malloc((size_t)m * sizeof *r);
  for (int64_t i = 0; i < m; i++) {
    random_ray(r + i, -2.0f, 30.0f);
    for (int a = 0; a < 3; a++) /* on the half grid: rays through edges and vertices */
      if (check_below(2)) r[i].o[a] = (float)(int)(r[i].o[a] * 2.0f) * 0.5f;
  }
  check_layouts(kind, p, n, r, m);
  free(r);
  free(p);
}

/* Boxes (or triangles in their diagonal planes) on an integer grid, touching; axis rays whose
 * other two coordinates lie on box faces or edges (parallel to the boxes, in their faces) and
 * that start exactly on faces; general rays through grid points. */
static void scene_grid(int kind, int nx, int ny, int nz, float cell) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  int64_t n = (int64_t)nx * ny * nz;
  float *p = (float *)malloc((size_t)n * w * 4);
  int64_t i = 0;
  for (int z = 0; z < nz; z++)
    for (int y = 0; y < ny; y++)
      for (int x = 0; x < nx; x++, i++) {
        float lo[3] = {x * cell, y * cell, z * cell}, hi[3] = {(x + 1) * cell, (y + 1) * cell, (z + 1) * cell};
        if (kind == RDX_RT_AABBS) {
          for (int a = 0; a < 3; a++) p[i * 6 + a] = lo[a], p[i * 6 + 3 + a] = hi[a];
          if ((x + 2 * y + 3 * z) % 11 == 0) p[i * 6 + 3] = lo[0]; /* some flat boxes */
        } else {
          float v[9] = {lo[0], lo[1], lo[2], hi[0], lo[1], hi[2], lo[0], hi[1], hi[2]};
          memcpy(p + i * 9, v, sizeof v);
        }
        if ((x * 5 + y * 3 + z) % 13 == 0) p[i * w + 1] = NAN;
      }
  int64_t m = 1500;
  rdx_ray *r = (rdx_ray *)malloc((size_t)m * sizeof *r);
  int dims[3] = {nx, ny, nz};
  for (int64_t k = 0; k < m; k++) {
    rdx_ray *q = r + k;
    int axis = (int)check_below(3);
    for (int a = 0; a < 3; a++) {
      int j = (int)check_below((uint64_t)dims[a] + 1);
      /* on a grid plane, at a half cell, or just beside a plane */
      int how = (int)check_below(3);
      q->o[a] = how == 0 ? j * cell : how == 1 ? (j + 0.5f) * cell : nextafterf(j * cell, check_below(2) ? 1e9f : -1e9f);
      q->d[a] = 0.0f;
    }
    if (check_below(5) == 0) {
      for (int a = 0; a < 3; a++) q->d[a] = (float)((int)check_below(5) - 2);
      if (q->d[0] == 0 && q->d[1] == 0 && q->d[2] == 0) q->d[axis] = 1.0f;
    } else {
      q->d[axis] = 1.0f;
      if (check_below(2)) q->o[axis] = -cell; /* from outside; else from a face or inside */
    }
    q->tmin = check_below(3) == 0 ? (float)check_below(3) * cell : 0.0f;
    q->tmax = check_below(3) == 0 ? (float)(1 + check_below(6)) * cell : 1e30f;
  }
  check_layouts(kind, p, n, r, m);
  free(r);
  free(p);
}

/* The key indexes' half-step triangle grids (test_rt_bvh's case_grid shapes), rows of cells along
 * x with long +x rays along a whole row and short +y / +z rays, as cgrx and rx fire them. */
static void scene_key_grid(int rx_shape, int64_t nx, int64_t ny, int64_t nz) {
  int64_t n = nx * ny * nz;
  float *p = (float *)malloc((size_t)n * 9 * 4);
  static const float d_cg[9] = {1, -1, 0, -1, 0, 1, 0, 1, -1}, d_rx[9] = {-1, 1, -1, -1, -1, -1, 1, 0, 1};
  const float *d = rx_shape ? d_rx : d_cg;
  int64_t i = 0;
  for (int64_t z = 0; z < nz; z++)
    for (int64_t y = 0; y < ny; y++)
      for (int64_t x = 0; x < nx; x++, i++) {
        float c[3] = {(float)x, (float)y, (float)z};
        for (int k = 0; k < 9; k++) p[i * 9 + k] = c[k % 3] + 0.5f * d[k];
        if (check_below(4) == 0) p[i * 9] = NAN; /* empty cells */
      }
  int64_t m = 2000;
  rdx_ray *r = (rdx_ray *)malloc((size_t)m * sizeof *r);
  for (int64_t k = 0; k < m; k++) {
    rdx_ray *q = r + k;
    int axis = check_below(2) ? 0 : 1 + (int)check_below(2);
    int64_t dims[3] = {nx, ny, nz};
    for (int a = 0; a < 3; a++) q->o[a] = (float)check_below((uint64_t)dims[a]), q->d[a] = 0.0f;
    q->d[axis] = 1.0f;
    q->o[axis] -= 0.5f;
    q->tmin = 0.0f;
    q->tmax = axis == 0 && check_below(2) ? (float)(nx + 8) : (float)(1 + check_below(4));
  }
  check_layouts(RDX_RT_TRIANGLES, p, n, r, m);
  free(r);
  free(p);
}

int main(int argc, char **argv) {
  g_ctx = check_begin(argc, argv);
  if (rdx_context_backend(g_ctx) == RDX_BACKEND_OPTIX) {
    printf("skipped: the tree layouts belong to the soft traversals (cpu, cuda)\n");
    rdx_context_destroy(g_ctx);
    return RDX_SKIP_CODE;
  }
  if (rdx_context_backend(g_ctx) == RDX_BACKEND_CUDA) {
    rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
    o.backend = RDX_BACKEND_CPU;
    CHECK_OK(NULL, rdx_context_create(&o, &g_cpu));
  }
  static const int64_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 8, 9, 16, 17, 33, 100, 1000, 5000};
  for (int kind = RDX_RT_TRIANGLES; kind <= RDX_RT_AABBS; kind++) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      CASE(random);
      scene_random(kind, sizes[s], 0, 0);
      CASE(duplicates_and_nan);
      scene_random(kind, sizes[s], 1, 1);
    }
    if (kind == RDX_RT_TRIANGLES)
      printf("bytes per primitive (5000 triangles, duplicates): binary %.1f, bvh4 %.1f\n",
             (double)g_bytes[2] / (double)g_prims, (double)g_bytes[4] / (double)g_prims);
    CASE(one_stack_of_copies);
    scene_stacks(kind, 300, 1);
    CASE(stacks_of_copies);
    scene_stacks(kind, 7, 100);
    CASE(single_copies);
    scene_stacks(kind, 1, 1);
    CASE(grid_touching);
    scene_grid(kind, 17, 9, 5, 1.0f);
    CASE(grid_touching_fine);
    scene_grid(kind, 12, 12, 12, 0.125f);
    CASE(flat);
    scene_grid(kind, 40, 30, 1, 2.0f);
  }
  CASE(cgrx_grid);
  scene_key_grid(0, 200, 20, 3);
  CASE(rx_grid);
  scene_key_grid(1, 64, 8, 8);
  printf("%lld rays compared; %lld closest-hit ties answered by other primitives at the same t; "
         "%lld first hits differ (both valid)\n",
         (long long)g_rays, (long long)g_ties, (long long)g_first_differ);
  if (g_cpu) {
    int64_t used = 0;
    rdx_context_memory(g_cpu, &used, NULL);
    if (used) CHECK_FAIL_("the cpu context still holds %lld bytes", (long long)used);
    rdx_context_destroy(g_cpu);
  }
  return check_end(g_ctx);
}
