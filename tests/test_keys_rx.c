/*
 * test_keys_rx.c: the rx kind against the oracle through every public query call
 * (kc_check_kind), on the backend given by --backend, over the adversarial sets of rt_keysets.h:
 * row and plane boundaries of every mapping, one key per row, row ends, huge gaps, one and many
 * planes, duplicates, 0 and the maximum key, sparse and dense sets; u32 and u64 keys; implied, u32
 * and u64 row ids; misses below, above, in gaps and on boundaries; ranges across rows. Plus the
 * geometry itself: every key's point lies strictly inside its own triangle and in no other.
 */
#include "keys/rx_hd.h"
#include "core/core.h"
#include "rt_keysets.h"

/* The key point is inside its triangle for the z ray and the x ray, at the exact distance, and
 * the neighbouring keys' triangles are not hit by the lookup ray. Host logic. */
static void check_geometry(void) {
  static const uint64_t keys[] = {0, 1, 2, (1ull << 22) - 1, 1ull << 22, (1ull << 44) - 1, 1ull << 44,
                                  UINT64_MAX, UINT64_MAX - 1, 0x123456789ABCDEFull, UINT32_MAX};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    uint64_t k = keys[i];
    float v[9];
    rdx_rx_triangle(k, v);
    rdx_ray r = rdx_rx_point_ray(k);
    rdx_ray_pre p;
    rdx_ray_prepare(&r, &p);
    float t;
    int f;
    CHECK(rdx_rt_tri_hit(v, &r, &p, r.tmin, r.tmax, &t, &f) && t == 0.5f);
    rdx_ray rr = rdx_rx_row_ray(k >> 22, k, k);
    rdx_ray_prepare(&rr, &p);
    CHECK(rdx_rt_tri_hit(v, &rr, &p, rr.tmin, rr.tmax, &t, &f) && t == 0.5f);
    /* neighbours in every direction miss the point ray */
    static const int64_t deltas[] = {1, -1, 1 << 22, -(1 << 22), (int64_t)1 << 44, -((int64_t)1 << 44)};
    for (size_t d = 0; d < 6; d++) {
      uint64_t kn = k + (uint64_t)deltas[d];
      float vn[9];
      rdx_rx_triangle(kn, vn);
      rdx_ray_prepare(&r, &p);
      if (rdx_rt_tri_hit(vn, &r, &p, r.tmin, r.tmax, &t, &f))
        CHECK_FAIL_("point ray of key %llu hits the triangle of %llu", (unsigned long long)k, (unsigned long long)kn);
    }
  }
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  CASE(rx_geometry);
  check_geometry();
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 17, 100, 1000, 5000};
  int checked = 0;
  for (int g = 0; g < KS_N_GENS; g++) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      for (int dt = 0; dt < 2; dt++) {
        rdx_dtype dtype = dt ? RDX_U64 : RDX_U32;
        int64_t n = sizes[s];
        int row_mode = (int)((g + s + (size_t)dt) % 3);
        int64_t m = n < 1000 ? 300 : 1500, mb = n < 1000 ? 150 : 300;
        check_case_ = ks_gen_names[g];
        ks_data d = ks_make((ks_gen)g, dtype, n, row_mode, m, mb, 8);
        double t0 = rdx_now_ms();
        checked += kc_check_kind(ctx, RDX_KIND_RX, 0, d.keys, d.rows, d.queries, d.bounds);
        if (getenv("RDX_TEST_TIMES")) printf("%s n %lld dt %d: %.1f ms\n", ks_gen_names[g], (long long)n, dt, rdx_now_ms() - t0);
        ks_free(&d);
      }
    }
  }
  CASE(rx_large);
  {
    /* a larger uniform set and a dense set spanning rows, fewer queries */
    for (int dt = 0; dt < 2; dt++) {
      ks_data d = ks_make(KS_UNIFORM, dt ? RDX_U64 : RDX_U32, 60000, 1, 10000, 100, 8);
      checked += kc_check_kind(ctx, RDX_KIND_RX, 0, d.keys, d.rows, d.queries, d.bounds);
      ks_free(&d);
    }
  }
  CASE(rx_full_row);
  {
    /* a full row: every x of RX row 1 (2^22 keys) and two keys on each side, u32 keys */
    int64_t n = ((int64_t)1 << 22) + 4, m = 3000, mb = 40;
    ks_data d;
    memset(&d, 0, sizeof d);
    d.kbuf = (uint64_t *)malloc((size_t)n * 8);
    d.qbuf = (uint64_t *)malloc((size_t)m * 8);
    d.bbuf = (uint64_t *)malloc((size_t)mb * 16);
    d.keys = rdx_host_array(d.kbuf, n, RDX_U32);
    d.queries = rdx_host_array(d.qbuf, m, RDX_U32);
    d.bounds = rdx_host_matrix(d.bbuf, mb, 2, RDX_U32);
    d.rows = rdx_no_array();
    uint64_t row = (uint64_t)1 << 22;
    for (int64_t i = 0; i < n; i++) ks_put(d.keys, i, row - 2 + (uint64_t)i + (i >= n - 2 ? row : 0));
    for (int64_t i = 0; i < m; i++) ks_put(d.queries, i, row - 4 + check_below(2 * row + 8));
    for (int64_t i = 0; i < mb; i++) {
      uint64_t lo = row - 4 + check_below(2 * row + 8);
      ks_put(d.bounds, 2 * i, lo);
      ks_put(d.bounds, 2 * i + 1, lo + check_below(i % 4 ? 64 : ((uint64_t)1 << 16)));
    }
    checked += kc_check_kind(ctx, RDX_KIND_RX, 0, d.keys, d.rows, d.queries, d.bounds);
    ks_free(&d);
  }
  CASE(rx_available);
  if (checked == 0) CHECK_FAIL_("%s", "kind rx is not available on this backend");
  return check_end(ctx);
}
