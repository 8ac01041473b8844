/*
 * test_rt_identical.c: the backends answer byte for byte the same. On --backend cuda (soft-CUDA)
 * and --backend optix, every query call of rx and cgrx (several bucket sizes, both
 * representations, both mappings, u32 and u64 keys, duplicates) and the generic closest-hit and
 * all-hits traversals are run on that backend and on a CPU context, and the outputs compared with
 * memcmp; the first difference is printed with its case, seed and query. On --backend cpu the
 * same comparison runs between a 1-thread and a 4-thread CPU context (determinism).
 * (First-hit traversals may legitimately return different hits and are not compared here;
 * test_rt_bvh checks that each is a hit.)
 */
#include "rt/rt.h"
#include "rt_keysets.h"

static rdx_context *g_a, *g_b; /* a: the backend under test; b: the CPU reference */

static int same(const char *what, const void *a, const void *b, size_t bytes, size_t elem) {
  if (memcmp(a, b, bytes) == 0) return 1;
  for (size_t i = 0; i < bytes / elem; i++)
    if (memcmp((const char *)a + i * elem, (const char *)b + i * elem, elem) != 0) {
      uint64_t x = 0, y = 0;
      memcpy(&x, (const char *)a + i * elem, elem < 8 ? elem : 8);
      memcpy(&y, (const char *)b + i * elem, elem < 8 ? elem : 8);
      CHECK_FAIL_("%s: element %zu differs: %s gives %llu (0x%llx), cpu gives %llu (0x%llx)", what, i,
                  rdx_backend_name(rdx_context_backend(g_a)), (unsigned long long)x, (unsigned long long)x,
                  (unsigned long long)y, (unsigned long long)y);
      return 0;
    }
  return 1;
}

/* Every query call of one index on both contexts. */
static void compare_index(const rdx_build_options *bo, rdx_array keys, rdx_array rows, rdx_array q, rdx_array b) {
  rdx_index *ia = NULL, *ib = NULL;
  CHECK_OK(g_a, rdx_index_build(g_a, keys, rows, bo, &ia));
  CHECK_OK(g_b, rdx_index_build(g_b, keys, rows, bo, &ib));
  if (!ia || !ib) {
    rdx_index_destroy(ia);
    rdx_index_destroy(ib);
    return;
  }
  int64_t m = q.count, mb = b.count;
  uint64_t *ra = (uint64_t *)malloc((size_t)(m + mb + 1) * 8), *rb = (uint64_t *)malloc((size_t)(m + mb + 1) * 8);
  CHECK_OK(g_a, rdx_index_lookup(g_a, ia, q, rdx_host_array(ra, m, RDX_U64)));
  CHECK_OK(g_b, rdx_index_lookup(g_b, ib, q, rdx_host_array(rb, m, RDX_U64)));
  same("rdx_index_lookup", ra, rb, (size_t)m * 8, 8);
  rdx_result *xa = NULL, *xb = NULL;
  for (int range = 0; range < 2; range++) {
    rdx_array in = range ? b : q;
    CHECK_OK(g_a, range ? rdx_index_range_alloc(g_a, ia, in, &xa) : rdx_index_lookup_alloc(g_a, ia, in, &xa));
    CHECK_OK(g_b, range ? rdx_index_range_alloc(g_b, ib, in, &xb) : rdx_index_lookup_alloc(g_b, ib, in, &xb));
    if (xa && xb) {
      const char *w = range ? "rdx_index_range_alloc" : "rdx_index_lookup_alloc";
      if (same(w, xa->offsets, xb->offsets, (size_t)(in.count + 1) * 8, 8))
        same(w, xa->row_ids, xb->row_ids, (size_t)xa->total * 8, 8);
    }
    rdx_result_free(g_a, xa);
    rdx_result_free(g_b, xb);
    xa = xb = NULL;
  }
  CHECK_OK(g_a, rdx_index_range_count(g_a, ia, b, rdx_host_array(ra, mb, RDX_U64)));
  CHECK_OK(g_b, rdx_index_range_count(g_b, ib, b, rdx_host_array(rb, mb, RDX_U64)));
  same("rdx_index_range_count", ra, rb, (size_t)mb * 8, 8);
  free(ra);
  free(rb);
  rdx_index_destroy(ia);
  rdx_index_destroy(ib);
}

static void compare_trace(int kind, int64_t n, int64_t m) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  float *p = (float *)malloc((size_t)n * w * 4);
  for (int64_t i = 0; i < n; i++) {
    float c[3];
    for (int a = 0; a < 3; a++) c[a] = (float)(check_below(1 << 20)) / 1024.0f;
    for (int k = 0; k < w; k++)
      p[i * w + k] = kind == RDX_RT_TRIANGLES ? c[k % 3] + (float)((int)check_below(200) - 100) / 64.0f
                                              : c[k % 3] + (k < 3 ? -1.0f : 1.0f) * (float)check_below(100) / 64.0f;
    if (check_below(50) == 0) p[i * w] = NAN;
  }
  rdx_ray *r = (rdx_ray *)malloc((size_t)m * sizeof *r);
  for (int64_t i = 0; i < m; i++) {
    for (int a = 0; a < 3; a++) r[i].o[a] = (float)check_below(1 << 20) / 1024.0f, r[i].d[a] = 0.0f;
    if (check_below(2)) r[i].d[check_below(3)] = 1.0f; /* axis rays */
    else
      for (int a = 0; a < 3; a++) r[i].d[a] = (float)((int)check_below(2000) - 1000) / 1000.0f;
    r[i].tmin = 0.0f;
    r[i].tmax = 1e30f;
  }
  rdx_rt_scene sa, sb;
  void *pa = check_place(g_a, p, (size_t)n * w * 4), *pb = check_place(g_b, p, (size_t)n * w * 4);
  CHECK_OK(g_a, rdx_rt_scene_build(g_a, kind, (const float *)pa, n, NULL, &sa));
  CHECK_OK(g_b, rdx_rt_scene_build(g_b, kind, (const float *)pb, n, NULL, &sb));
  check_unplace(g_a, pa);
  check_unplace(g_b, pb);
  void *ra = check_place(g_a, r, (size_t)m * sizeof *r), *rb = check_place(g_b, r, (size_t)m * sizeof *r);
  rdx_rt_hit *ha = (rdx_rt_hit *)malloc((size_t)m * sizeof *ha), *hb = (rdx_rt_hit *)malloc((size_t)m * sizeof *hb);
  void *oa = check_place(g_a, ha, (size_t)m * sizeof *ha), *ob = check_place(g_b, hb, (size_t)m * sizeof *hb);
  CHECK_OK(g_a, rdx_rt_trace(g_a, &sa, (const rdx_ray *)ra, m, RDX_RT_CLOSEST_HIT, (rdx_rt_hit *)oa, NULL, NULL, NULL));
  CHECK_OK(g_b, rdx_rt_trace(g_b, &sb, (const rdx_ray *)rb, m, RDX_RT_CLOSEST_HIT, (rdx_rt_hit *)ob, NULL, NULL, NULL));
  check_fetch(g_a, ha, oa, (size_t)m * sizeof *ha);
  check_fetch(g_b, hb, ob, (size_t)m * sizeof *hb);
  /* the closest hit's primitive can tie at equal t (test_rt_bvh checks it is one of the
   * nearest): compare the distance and whether there is a hit */
  /* soft-CUDA runs the CPU's code: bit for bit. OptiX intersects with its own code: on these
   * arbitrary float triangles (unlike the key indexes' grid geometry) distances may differ in the
   * last bits and edge-grazing rays may differ, so there: a tolerance, and at most 1 ray in 200 */
  int exact = rdx_context_backend(g_a) != RDX_BACKEND_OPTIX;
  int64_t differ = 0;
  for (int64_t i = 0; i < m; i++) {
    int t_ok = exact ? ha[i].t == hb[i].t : fabsf(ha[i].t - hb[i].t) <= 1e-5f * fmaxf(1.0f, fabsf(hb[i].t));
    if ((ha[i].prim == RDX_RT_NO_HIT) != (hb[i].prim == RDX_RT_NO_HIT) && !exact) {
      differ++;
      continue;
    }
    if (!(t_ok || hb[i].prim == RDX_RT_NO_HIT) || (ha[i].prim == RDX_RT_NO_HIT) != (hb[i].prim == RDX_RT_NO_HIT)) {
      CHECK_FAIL_("closest hit of ray %lld: prim %u t %.9g vs cpu prim %u t %.9g (kind %d)", (long long)i, ha[i].prim,
                  (double)ha[i].t, hb[i].prim, (double)hb[i].t, kind);
      break;
    }
  }
  uint64_t *ca = (uint64_t *)malloc((size_t)(m + 1) * 8), *cb = (uint64_t *)malloc((size_t)(m + 1) * 8);
  void *da = check_place(g_a, ca, (size_t)m * 8), *db = check_place(g_b, cb, (size_t)m * 8);
  CHECK_OK(g_a, rdx_rt_trace(g_a, &sa, (const rdx_ray *)ra, m, RDX_RT_ALL_HITS, NULL, (uint64_t *)da, NULL, NULL));
  CHECK_OK(g_b, rdx_rt_trace(g_b, &sb, (const rdx_ray *)rb, m, RDX_RT_ALL_HITS, NULL, (uint64_t *)db, NULL, NULL));
  check_fetch(g_a, ca, da, (size_t)m * 8);
  check_fetch(g_b, cb, db, (size_t)m * 8);
  if (!exact) { /* OptiX: count the rays whose hit counts differ; compare ids of the others */
    for (int64_t i = 0; i < m; i++)
      if (ca[i] != cb[i]) differ++, ca[i] = cb[i] = 0;
    if (differ * 200 > m)
      CHECK_FAIL_("%lld of %lld rays differ between optix and cpu (more than 1 in 200)", (long long)differ, (long long)m);
    else if (differ)
      printf("note: %lld of %lld rays differ between optix and cpu (edge-grazing rays)\n", (long long)differ, (long long)m);
  }
  if (exact && same("all-hits counts", ca, cb, (size_t)m * 8, 8)) {
    uint64_t *off = (uint64_t *)malloc((size_t)(m + 1) * 8);
    off[0] = 0;
    for (int64_t i = 0; i < m; i++) off[i + 1] = off[i] + ca[i];
    uint32_t *ia = (uint32_t *)malloc((size_t)off[m] * 4 + 4), *ib = (uint32_t *)malloc((size_t)off[m] * 4 + 4);
    void *offa = check_place(g_a, off, (size_t)(m + 1) * 8), *offb = check_place(g_b, off, (size_t)(m + 1) * 8);
    void *xa = check_place(g_a, ia, (size_t)off[m] * 4), *xb = check_place(g_b, ib, (size_t)off[m] * 4);
    CHECK_OK(g_a, rdx_rt_trace(g_a, &sa, (const rdx_ray *)ra, m, RDX_RT_ALL_HITS, NULL, NULL, (const uint64_t *)offa,
                               (uint32_t *)xa));
    CHECK_OK(g_b, rdx_rt_trace(g_b, &sb, (const rdx_ray *)rb, m, RDX_RT_ALL_HITS, NULL, NULL, (const uint64_t *)offb,
                               (uint32_t *)xb));
    check_fetch(g_a, ia, xa, (size_t)off[m] * 4);
    check_fetch(g_b, ib, xb, (size_t)off[m] * 4);
    same("all-hits ids", ia, ib, (size_t)off[m] * 4, 4);
    check_unplace(g_a, offa);
    check_unplace(g_b, offb);
    check_unplace(g_a, xa);
    check_unplace(g_b, xb);
    free(ia);
    free(ib);
    free(off);
  }
  check_unplace(g_a, ra);
  check_unplace(g_b, rb);
  check_unplace(g_a, oa);
  check_unplace(g_b, ob);
  check_unplace(g_a, da);
  check_unplace(g_b, db);
  free(ca);
  free(cb);
  free(ha);
  free(hb);
  free(r);
  free(p);
  rdx_rt_scene_free(g_a, &sa);
  rdx_rt_scene_free(g_b, &sb);
}

int main(int argc, char **argv) {
  g_a = check_begin(argc, argv);
  int gpu = rdx_context_backend(g_a) != RDX_BACKEND_CPU;
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  o.n_threads = gpu ? 0 : 1;
  if (!gpu) { /* cpu entry: 4 threads against 1 */
    rdx_context_destroy(g_a);
    rdx_context_options o4 = o;
    o4.n_threads = 4;
    CHECK_OK(NULL, rdx_context_create(&o4, &g_a));
    check_force(g_a);
  }
  CHECK_OK(NULL, rdx_context_create(&o, &g_b));
  check_force(g_b);
  int64_t scale = gpu ? 8 : 1; /* the GPU machine has 16 cores for the CPU reference */
  static const int gens[] = {KS_UNIFORM, KS_DENSE, KS_SPARSE20, KS_DUP_RUNS, KS_BOUNDARIES, KS_MANY_PLANES};
  for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++)
    for (int dt = 0; dt < 2; dt++) {
      check_case_ = ks_gen_names[gens[g]];
      ks_data d = ks_make((ks_gen)gens[g], dt ? RDX_U64 : RDX_U32, 5000 * scale, (int)(g % 3), 5000 * scale,
                          60 * scale, 32);
      rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
      bo.kind = RDX_KIND_RX;
      compare_index(&bo, d.keys, d.rows, d.queries, d.bounds);
      static const int buckets[] = {1, 32, 256};
      static const int flags[] = {0, RDX_BUILD_CGRX_NAIVE, RDX_BUILD_CGRX_DEFAULT_MAPPING};
      for (int k = 0; k < 3; k++) {
        bo.kind = RDX_KIND_CGRX;
        bo.bucket_size = buckets[k];
        bo.flags = flags[(k + g) % 3];
        compare_index(&bo, d.keys, d.rows, d.queries, d.bounds);
      }
      ks_free(&d);
    }
  CASE(trace_triangles);
  compare_trace(RDX_RT_TRIANGLES, 5000 * scale, 5000 * scale);
  CASE(trace_boxes);
  compare_trace(RDX_RT_AABBS, 5000 * scale, 5000 * scale);
  int64_t used = check_held(g_a);
  if (used != 0) CHECK_FAIL_("the %s context still holds %lld bytes", rdx_backend_name(rdx_context_backend(g_a)),
                             (long long)used);
  rdx_context_destroy(g_a);
  return check_end(g_b);
}
