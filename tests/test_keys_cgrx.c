/*
 * test_keys_cgrx.c: the cgrx kind, on the backend given by --backend.
 *
 * 1. Against the oracle through every public query call (kc_check_build) over the adversarial
 *    sets of rt_keysets.h, u32 and u64 keys, implied/u32/u64 row ids, bucket sizes 1..256 (and
 *    65536), both representations (optimized, naive) and both key mappings (scaled, default).
 * 2. (cpu entry) The scene and the ray sequence exhaustively on "grid" sets whose keys sit on the
 *    few cells where rows and planes begin and end (x in {0, 1, 2, 5, x_max - 2 .. x_max}, ...), with
 *    duplicates and partial last buckets, B = 1..6: no two active triangles share a cell, bucket
 *    ids never decrease along the key order of the triangles (optimized), every lookup starts at
 *    the oracle's lower bound, and (optimized) at the bucket of the first triangle at or after k.
 * 3. (cpu entry) The four places where the paper's pseudo-code is wrong: each fix undone (the
 *    RDX_CGRX_PAPER_* quirks) makes a hand-made set and some random grid sets fail; with the fixes
 *    no set fails. FIX(4), routing cgRXu inserts by triangles, is checked on an insert model.
 * 4. (cpu entry) Ray counts: u32 keys need at most 3 rays, u64 at most 5.
 */
#include "keys/cgrx.h"
#include "rt_keysets.h"

static rdx_context *g_cpu; /* for the internal checks */

/* ---- 1: the public API ---- */

static const int buckets_all[] = {1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64, 100, 128, 255, 256};
#define N_BUCKETS ((int)(sizeof buckets_all / sizeof buckets_all[0]))
static const int flag_sets[] = {0, RDX_BUILD_CGRX_DEFAULT_MAPPING, RDX_BUILD_CGRX_NAIVE,
                                RDX_BUILD_CGRX_NAIVE | RDX_BUILD_CGRX_DEFAULT_MAPPING, RDX_BUILD_RT_MORTON};

static int check_api(rdx_context *ctx) {
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 17, 100, 1000, 4000};
  int checked = 0, rot = 0;
  for (int g = 0; g < KS_N_GENS; g++) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      for (int dt = 0; dt < 2; dt++) {
        int64_t n = sizes[s];
        /* each set with two (bucket, flags) pairs, rotating through all of them */
        for (int rep = 0; rep < 2; rep++, rot++) {
          rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
          bo.kind = RDX_KIND_CGRX;
          bo.bucket_size = buckets_all[(rot * 7) % N_BUCKETS];
          bo.flags = flag_sets[rot % 5];
          int row_mode = (int)((g + s + (size_t)rep) % 3);
          int64_t m = n < 1000 ? 300 : 1500, mb = n < 1000 ? 150 : 300;
          check_case_ = ks_gen_names[g];
          ks_data d = ks_make((ks_gen)g, dt ? RDX_U64 : RDX_U32, n, row_mode, m, mb, bo.bucket_size);
          checked += kc_check_build(ctx, &bo, d.keys, d.rows, d.queries, d.bounds);
          ks_free(&d);
        }
      }
    }
  }
  CASE(cgrx_large_and_buckets);
  for (int i = 0; i < 6; i++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = RDX_KIND_CGRX;
    bo.bucket_size = i == 5 ? 65536 : (int[]){1, 32, 256, 4, 255}[i];
    bo.flags = flag_sets[i % 4];
    ks_data d = ks_make(i % 2 ? KS_UNIFORM : KS_SPARSE20, i < 3 ? RDX_U64 : RDX_U32, 60000, i % 3, 20000, 40,
                        bo.bucket_size);
    checked += kc_check_build(ctx, &bo, d.keys, d.rows, d.queries, d.bounds);
    ks_free(&d);
  }
  CASE(cgrx_full_row);
  {
    /* a full row: every x of row 1 of the default mapping (2^23 keys) and two keys on each side,
     * u64 keys, so every representative of the row is stuck in it and only the last one moves */
    int64_t n = ((int64_t)1 << 23) + 4, m = 3000, mb = 40;
    ks_data d;
    memset(&d, 0, sizeof d);
    d.kbuf = (uint64_t *)malloc((size_t)n * 8);
    d.qbuf = (uint64_t *)malloc((size_t)m * 8);
    d.bbuf = (uint64_t *)malloc((size_t)mb * 16);
    d.keys = rdx_host_array(d.kbuf, n, RDX_U64);
    d.queries = rdx_host_array(d.qbuf, m, RDX_U64);
    d.bounds = rdx_host_matrix(d.bbuf, mb, 2, RDX_U64);
    d.rows = rdx_no_array();
    uint64_t row = (uint64_t)1 << 23;
    for (int64_t i = 0; i < n; i++) d.kbuf[i] = row - 2 + (uint64_t)i + (i >= n - 2 ? ((uint64_t)1 << 23) : 0);
    for (int64_t i = 0; i < m; i++) d.qbuf[i] = row - 4 + check_below(((uint64_t)1 << 24) + 8);
    for (int64_t i = 0; i < mb; i++) {
      uint64_t lo = row - 4 + check_below(((uint64_t)1 << 24) + 8);
      d.bbuf[2 * i] = lo;
      d.bbuf[2 * i + 1] = lo + check_below(i % 4 ? 64 : ((uint64_t)1 << 16));
    }
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = RDX_KIND_CGRX;
    bo.bucket_size = 256;
    checked += kc_check_build(ctx, &bo, d.keys, d.rows, d.queries, d.bounds);
    ks_free(&d);
  }
  return checked;
}

/* ---- 2, 3: the scene and the rays, on the CPU's internals ---- */

typedef struct built {
  rdx_cgrx_impl *x;
  uint64_t *keys; /* sorted */
  int64_t n;
  unsigned quirks;
} built;

static built build_internal(const uint64_t *keys_in, int64_t n, int B, int flags, unsigned quirks) {
  built b;
  b.n = n;
  b.quirks = quirks;
  b.keys = (uint64_t *)malloc((size_t)n * 8);
  b.x = (rdx_cgrx_impl *)calloc(1, sizeof *b.x);
  rdx_key_input in;
  memset(&in, 0, sizeof in);
  in.keys = keys_in;
  in.n = n;
  in.key_dtype = RDX_U64;
  in.row_dtype = RDX_U64;
  in.opts = (rdx_build_options)RDX_BUILD_OPTIONS_INIT;
  in.opts.kind = RDX_KIND_CGRX;
  in.opts.bucket_size = B;
  in.opts.flags = flags;
  CHECK_OK(g_cpu, rdx_entries_build_cpu(g_cpu, &in, &b.x->e));
  rdx_cgrx_plan(b.x, &in.opts);
  CHECK_OK(g_cpu, rdx_cgrx_scene_cpu(g_cpu, b.x, quirks, 0));
  for (int64_t i = 0; i < n; i++) b.keys[i] = ((const rdx_pair64 *)b.x->e.pairs)[i].key;
  return b;
}

static void built_free(built *b) {
  rdx_cgrx_impl_free(g_cpu, b->x);
  free(b->keys);
}

typedef struct tri_pos {
  double c[3]; /* centroid in grid units: x, y, z */
  int64_t bucket;
  uint32_t slot;
} tri_pos;

static int cmp_pos(const void *a, const void *b) {
  const tri_pos *p = (const tri_pos *)a, *q = (const tri_pos *)b;
  for (int i = 2; i >= 0; i--)
    if (p->c[i] != q->c[i]) return p->c[i] < q->c[i] ? -1 : 1;
  return p->slot < q->slot ? -1 : p->slot > q->slot;
}

static int64_t lower_bound(const uint64_t *k, int64_t n, uint64_t q) {
  int64_t a = 0, b = n;
  while (a < b) {
    int64_t m = a + (b - a) / 2;
    if (k[m] < q) a = m + 1;
    else b = m;
  }
  return a;
}

/* Violations of the scene invariants and of the lookups for the queries (report: print them). */
static int64_t violations(const built *b, const uint64_t *q, int64_t m, int report) {
  const rdx_cgrx_params *P = &b->x->P;
  int64_t bad = 0, slots = b->x->n_slots;
  /* the active triangles, from a second emission on the host */
  float *tris = (float *)malloc((size_t)slots * 36 + 36);
  for (int64_t k = 0; k < P->nb; k++) rdx_cgrx_emit(P, k, b->quirks, tris, NULL);
  tri_pos *t = (tri_pos *)malloc((size_t)slots * sizeof *t + sizeof *t);
  int64_t na = 0;
  double s[3] = {1.0, P->sy, P->sz};
  for (int64_t i = 0; i < slots; i++) {
    if (tris[i * 9] != tris[i * 9]) continue;
    for (int a = 0; a < 3; a++)
      t[na].c[a] = ((double)tris[i * 9 + a] + tris[i * 9 + 3 + a] + tris[i * 9 + 6 + a]) / 3.0 / s[a];
    t[na].slot = (uint32_t)i;
    t[na].bucket = rdx_cgrx_remap(P, (uint32_t)i);
    na++;
  }
  free(tris);
  qsort(t, (size_t)na, sizeof *t, cmp_pos);
  for (int64_t i = 1; i < na; i++) {
    if (memcmp(t[i].c, t[i - 1].c, sizeof t[i].c) == 0) {
      if (report) fprintf(stderr, "  slots %u and %u share a cell\n", t[i - 1].slot, t[i].slot);
      bad++;
    }
    if (!P->naive && t[i].bucket < t[i - 1].bucket) {
      if (report) fprintf(stderr, "  bucket ids decrease along the key order at slot %u\n", t[i].slot);
      bad++;
    }
  }
  int64_t *bk = (int64_t *)malloc((size_t)m * 8 + 8);
  rdx_status st = rdx_cgrx_locate_cpu(g_cpu, b->x, q, m, bk, NULL);
  if (st != RDX_OK) {
    if (report) fprintf(stderr, "  locate: %s\n", rdx_context_message(g_cpu));
    bad++;
  } else {
    for (int64_t i = 0; i < m; i++) {
      int64_t want = lower_bound(b->keys, b->n, q[i]);
      int64_t got = rdx_cgrx_start(P, bk[i], q[i]);
      if (got != want) {
        if (report)
          fprintf(stderr, "  key %llu (x %u y %u z %u): bucket %lld starts at %lld, lower bound %lld\n",
                  (unsigned long long)q[i], rdx_cgrx_x(q[i]), rdx_cgrx_y(q[i]), rdx_cgrx_z(q[i]), (long long)bk[i],
                  (long long)got, (long long)want);
        bad++;
        continue;
      }
      if (!P->naive && q[i] > P->min_rep && q[i] <= P->max_key) {
        /* the bucket of the first triangle at or after k */
        tri_pos key;
        key.c[0] = rdx_cgrx_x(q[i]), key.c[1] = rdx_cgrx_y(q[i]), key.c[2] = rdx_cgrx_z(q[i]);
        key.slot = 0;
        int64_t a = 0, e = na;
        while (a < e) {
          int64_t mid = (a + e) / 2;
          if (cmp_pos(&t[mid], &key) < 0) a = mid + 1;
          else e = mid;
        }
        if (a == na || t[a].bucket != bk[i]) {
          if (report) fprintf(stderr, "  key %llu: bucket %lld, first triangle at or after it: %lld\n",
                              (unsigned long long)q[i], (long long)bk[i], a == na ? -1LL : (long long)t[a].bucket);
          bad++;
        }
      }
    }
  }
  free(bk);
  free(t);
  return bad;
}

/* Grid sets: keys on the cells where rows and planes begin and end. */
static uint64_t grid_key(int w64) {
  static const uint64_t xs[] = {0, 1, 2, 5, RDX_CGRX_XMAX - 2, RDX_CGRX_XMAX - 1, RDX_CGRX_XMAX};
  static const uint64_t ys64[] = {0, 1, 3, RDX_CGRX_YMAX - 1, RDX_CGRX_YMAX};
  static const uint64_t ys32[] = {0, 1, 3, 510, 511};
  static const uint64_t zs[] = {0, 1, 2, 5, RDX_CGRX_ZMAX};
  uint64_t x = xs[check_below(7)], y = w64 ? ys64[check_below(5)] : ys32[check_below(5)];
  uint64_t z = w64 ? zs[check_below(5)] : 0;
  return rdx_cgrx_pos(x, y, z);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The queries of a set: every key and its neighbours, every row's first and last cell, and the
 * first cells of every plane and row between. */
static int64_t grid_queries(const uint64_t *keys, int64_t n, uint64_t *q) {
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = keys[i];
    for (int d = -2; d <= 2; d++) q[m++] = k + (uint64_t)(int64_t)d;
    q[m++] = k >> 23 << 23;                      /* row start */
    q[m++] = (k >> 23 << 23) + RDX_CGRX_XMAX;    /* row end */
    q[m++] = (k >> 23 << 23) - 1;                /* end of the row before */
    q[m++] = ((k >> 23) + 1) << 23;              /* next row start */
    q[m++] = (k >> 46 << 46) - 1;                /* end of the plane before */
    q[m++] = ((k >> 46) + 1) << 46;              /* next plane start */
    q[m++] = (k >> 46 << 46) + ((uint64_t)RDX_CGRX_YMAX << 23); /* plane's last row */
  }
  q[m++] = 0;
  q[m++] = UINT64_MAX;
  return m;
}

/* Random grid sets through the construction with `quirks`; returns how many sets break. */
static int random_grid_failures(int n_sets, int w64, unsigned quirks, int flags, int report) {
  int failed = 0;
  uint64_t *keys = (uint64_t *)malloc(64 * 8), *q = (uint64_t *)malloc(64 * 12 * 8);
  for (int it = 0; it < n_sets; it++) {
    int64_t n = 1 + (int64_t)check_below(24);
    for (int64_t i = 0; i < n; i++) keys[i] = i > 0 && check_below(3) == 0 ? keys[i - 1] : grid_key(w64);
    qsort(keys, (size_t)n, 8, cmp_u64);
    int B = 1 + (int)check_below(6);
    built b = build_internal(keys, n, B, flags, quirks);
    int64_t m = grid_queries(keys, n, q);
    int64_t v = violations(&b, q, m, report);
    if (v && report) fprintf(stderr, "  (set %d of %lld keys, B %d, flags %d)\n", it, (long long)n, B, flags);
    failed += v > 0;
    built_free(&b);
    if (report && failed) break;
  }
  free(keys);
  free(q);
  return failed;
}

static void check_grid_sets(void) {
  for (int w64 = 0; w64 < 2; w64++)
    for (int f = 0; f < 4; f++) {
      int flags = flag_sets[f];
      int bad = random_grid_failures(1500, w64, 0, flags, 0);
      if (bad) {
        CHECK_FAIL_("%d grid sets (u%d keys, flags %d) break the scene or the lookups; the first:", bad,
                    w64 ? 64 : 32, flags);
        random_grid_failures(1500, w64, 0, flags, 1);
      }
    }
}

/* One hand-made set: violations with and without the quirk. */
static void paper_case(const char *what, const uint64_t *keys, int64_t n, int B, unsigned quirk) {
  uint64_t *q = (uint64_t *)malloc((size_t)n * 12 * 8 + 16);
  int64_t m = grid_queries(keys, n, q);
  built ours = build_internal(keys, n, B, 0, 0), paper = build_internal(keys, n, B, 0, quirk);
  int64_t v_ours = violations(&ours, q, m, 1), v_paper = violations(&paper, q, m, 0);
  if (v_ours) CHECK_FAIL_("%s: the corrected construction fails %lld checks", what, (long long)v_ours);
  if (!v_paper) CHECK_FAIL_("%s: the paper's version should fail here and does not", what);
  else printf("%s: the paper's version fails %lld checks, the corrected one none\n", what, (long long)v_paper);
  built_free(&ours);
  built_free(&paper);
  free(q);
}

#define P3(x, y, z) rdx_cgrx_pos((uint64_t)(x), (uint64_t)(y), (uint64_t)(z))

static void check_paper_bugs(void) {
  const uint64_t X = RDX_CGRX_XMAX;
  CASE(paper_bug_prev_rep_of_partial_last_bucket);
  {
    /* B = 3; row 0: 1, 2, 3, 5; row 5: 1, 2, 3 (last bucket partial). With keys[repIdx - B] the last
     * bucket's previous representative is 5 (row 0), not 2 (row 5): its moved triangle at the end
     * of row 5 is flipped as if alone, so a lookup coming from the empty rows 1..4 takes the
     * y ray's back face and skips bucket 1, which starts row 5. */
    uint64_t k[] = {P3(1, 0, 0), P3(2, 0, 0), P3(3, 0, 0), P3(5, 0, 0), P3(1, 5, 0), P3(2, 5, 0), P3(3, 5, 0)};
    paper_case("FIX(1) previous representative", k, 7, 3, RDX_CGRX_PAPER_PREV);
    int bad = random_grid_failures(3000, 1, RDX_CGRX_PAPER_PREV, 0, 0);
    printf("FIX(1): %d of 3000 random grid sets fail with the paper's version\n", bad);
    CHECK(bad > 0);
  }
  CASE(paper_bug_row_marker_under_duplicates);
  {
    /* B = 2; row 0: x_max - 1, x_max, x_max (a duplicate crossing the bucket border), row 1: 5.
     * Bucket 0's representative x_max cannot move (the next key repeats it) and is the last of its
     * row: the paper adds a row-end marker at x_max, on top of its own triangle. */
    uint64_t k[] = {P3(X - 1, 0, 0), P3(X, 0, 0), P3(X, 0, 0), P3(5, 1, 0)};
    paper_case("FIX(2) row-end marker guard", k, 4, 2, RDX_CGRX_PAPER_ROWMARK);
    int bad = random_grid_failures(3000, 1, RDX_CGRX_PAPER_ROWMARK, 0, 0);
    printf("FIX(2): %d of 3000 random grid sets fail with the paper's version\n", bad);
    CHECK(bad > 0);
  }
  CASE(paper_bug_last_plane_end_marker);
  {
    /* B = 2; plane 0: 1, 2; plane 2: (3, 4), (9, 4). A lookup in the empty plane 1 needs the z ray
     * to find plane 2, whose only end marker the last bucket must emit. */
    uint64_t k[] = {P3(1, 0, 0), P3(2, 0, 0), P3(3, 4, 2), P3(9, 4, 2)};
    paper_case("FIX(3) last plane's end marker", k, 4, 2, RDX_CGRX_PAPER_LASTPLANE);
    int bad = random_grid_failures(3000, 1, RDX_CGRX_PAPER_LASTPLANE, 0, 0);
    printf("FIX(3): %d of 3000 random grid sets fail with the paper's version\n", bad);
    CHECK(bad > 0);
  }
  CASE(paper_bug_insert_routing);
  {
    /* cgRXu inserts into the bucket a lookup would search. B = 1: 3 (row 0), 2 (row 1). 3 moves to
     * the end of row 0, so a lookup of 5 lands in bucket 0; routing by representative values (the
     * first representative >= 5) would put 5 into bucket 1, where no lookup finds it. On a model
     * of cgRXu (a key list per bucket), the triangle routing keeps every inserted key findable and
     * every bucket's keys between its neighbours'; the representative routing does not. */
    uint64_t k[] = {P3(3, 0, 0), P3(2, 1, 0)};
    built b = build_internal(k, 2, 1, 0, 0);
    int64_t ray_route, rep_route = -1;
    uint64_t q = P3(5, 0, 0);
    CHECK_OK(g_cpu, rdx_cgrx_locate_cpu(g_cpu, b.x, &q, 1, &ray_route, NULL));
    for (int64_t i = 0; i < b.x->P.nb && rep_route < 0; i++)
      if (rdx_cgrx_rep(&b.x->P, i) >= q) rep_route = i;
    CHECK_EQ(ray_route, 0);
    CHECK_EQ(rep_route, 1);
    built_free(&b);
    /* random inserts on grid sets: insert k into its routed bucket, then look it up */
    int64_t lost_paper = 0, lost_ours = 0, order_ours = 0;
    uint64_t keys[32];
    for (int it = 0; it < 3000; it++) {
      int64_t n = 1 + (int64_t)check_below(20);
      for (int64_t i = 0; i < n; i++) keys[i] = grid_key(1);
      qsort(keys, (size_t)n, 8, cmp_u64);
      int B = 1 + (int)check_below(4);
      built g = build_internal(keys, n, B, 0, 0);
      uint64_t ins = grid_key(1) + check_below(3);
      if (ins > g.x->P.max_key) { /* cgRXu sends these to its overflow bucket */
        built_free(&g);
        continue;
      }
      int64_t route = 0, paper = -1;
      CHECK_OK(g_cpu, rdx_cgrx_locate_cpu(g_cpu, g.x, &ins, 1, &route, NULL));
      for (int64_t i = 0; i < g.x->P.nb && paper < 0; i++)
        if (rdx_cgrx_rep(&g.x->P, i) >= ins) paper = i;
      /* a later lookup of ins searches the bucket the rays give: the same route */
      lost_ours += route < 0;
      lost_paper += paper != route;
      /* the routed bucket keeps the order: every key of an earlier bucket < ins <= every key of a
       * later bucket (so the bucket's chain stays sorted and a range scan stays correct) */
      if (route > 0 && g.keys[route * B - 1] >= ins) order_ours++;
      if (route >= 0 && (route + 1) * B < n && g.keys[(route + 1) * B] < ins) order_ours++;
      built_free(&g);
    }
    printf("FIX(4): %lld of 3000 random inserts routed by representative values would be lost\n",
           (long long)lost_paper);
    CHECK(lost_paper > 0);
    CHECK_EQ(lost_ours, 0);
    CHECK_EQ(order_ours, 0);
  }
}

/* Ray counts on larger sets (the paper: mostly one ray on 32-bit keys). */
static void check_ray_counts(void) {
  for (int w64 = 0; w64 < 2; w64++) {
    int64_t n = 50000;
    uint64_t *k = (uint64_t *)malloc((size_t)n * 8), *q = (uint64_t *)malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) k[i] = w64 ? check_rand_() : (check_rand_() & 0xFFFFFFFFu);
    qsort(k, (size_t)n, 8, cmp_u64);
    for (int64_t i = 0; i < n; i++) q[i] = w64 ? check_rand_() : (check_rand_() & 0xFFFFFFFFu);
    for (int naive = 0; naive < 2; naive++) {
      built b = build_internal(k, n, 32, naive ? RDX_BUILD_CGRX_NAIVE : 0, 0);
      int64_t *bk = (int64_t *)malloc((size_t)n * 8);
      int *rays = (int *)malloc((size_t)n * sizeof(int));
      CHECK_OK(g_cpu, rdx_cgrx_locate_cpu(g_cpu, b.x, q, n, bk, rays));
      int64_t hist[6] = {0};
      for (int64_t i = 0; i < n; i++) hist[rays[i] < 6 ? rays[i] : 5]++;
      printf("rays per lookup, u%d keys, %s: 0:%lld 1:%lld 2:%lld 3:%lld 4:%lld 5:%lld\n", w64 ? 64 : 32,
             naive ? "naive" : "optimized", (long long)hist[0], (long long)hist[1], (long long)hist[2],
             (long long)hist[3], (long long)hist[4], (long long)hist[5]);
      if (!w64) CHECK(hist[4] == 0 && hist[5] == 0);
      free(bk);
      free(rays);
      built_free(&b);
    }
    free(k);
    free(q);
  }
}

/* rdx_cgrx_upper_from against a linear scan, on dense runs (where its guess is right), runs
 * with duplicates and gaps (where the guess is wrong by one or lands inside a run), and bounds
 * beyond the last key (where the guess index would pass n). */
static void check_upper_from(void) {
  enum { N = 700 };
  rdx_pair64 *p = (rdx_pair64 *)malloc(N * sizeof *p);
  for (int shape = 0; shape < 4; shape++) {
    uint64_t k = shape == 3 ? UINT64_MAX - N - 5 : 10;
    for (int64_t i = 0; i < N; i++) {
      p[i].key = k, p[i].row = (uint64_t)i;
      uint64_t r = check_rand_();
      /* 0: dense; 1: dense with rare duplicates; 2: dense with rare gaps; 3: dense, near 2^64 */
      k += shape == 1 && r % 17 == 0 ? 0 : shape == 2 && r % 23 == 0 ? 1 + r % 3 : 1;
    }
    rdx_cgrx_params P;
    memset(&P, 0, sizeof P);
    P.pairs = p, P.width = 64, P.bucket = 32, P.n = N;
    for (int t = 0; t < 4000; t++) {
      int64_t start = (int64_t)(check_rand_() % (N + 1));
      uint64_t base = start < N ? p[start].key : p[N - 1].key;
      uint64_t u = base + check_rand_() % (t % 2 ? 8 : 2 * N);
      if (u < base) u = UINT64_MAX; /* near 2^64 */
      int64_t want = start;
      while (want < N && p[want].key <= u) want++;
      int64_t got = rdx_cgrx_upper_from(&P, start, u);
      if (got != want) {
        CHECK_FAIL_("shape %d start %lld u %llu: %lld, want %lld", shape, (long long)start, (unsigned long long)u,
                    (long long)got, (long long)want);
        break;
      }
    }
  }
  free(p);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  CASE(cgrx_api);
  int checked = check_api(ctx);
  CASE(cgrx_available);
  if (checked == 0) CHECK_FAIL_("%s", "kind cgrx is not available on this backend");
  if (rdx_context_backend(ctx) == RDX_BACKEND_CPU) {
    g_cpu = ctx;
    CASE(cgrx_grid_sets);
    check_grid_sets();
    check_paper_bugs();
    CASE(cgrx_ray_counts);
    check_ray_counts();
    CASE(cgrx_upper_from);
    check_upper_from();
  }
  return check_end(ctx);
}
