/*
 * test_keys_misuse.c: hostile input to the key-index calls, for every kind on the backend under
 * test: fill offsets that do not match the batch (refused before anything is written, with
 * row_ids sized exactly so that ASan sees any write past them), row id 2^64-1 (the miss marker,
 * refused at build with its position, from host and device arrays), hash load factors too small
 * to size a table, and arrays whose byte size overflows.
 */
#include "keys_check.h"

static const rdx_kind kinds[] = {RDX_KIND_SCAN, RDX_KIND_SORTED, RDX_KIND_BTREE,
                                 RDX_KIND_HASH, RDX_KIND_RX,     RDX_KIND_CGRX};
#define N_KINDS (sizeof kinds / sizeof kinds[0])
#define CANARY 0xABABABABABABABABull

/* keys 5 5 7 9 with rows 0..3: queries 5 7 8 have 2, 1, 0 rows; bounds [5, 7] [8, 8] [0, 9]
 * have 3, 0, 4. */
static const uint32_t keys[] = {5, 5, 7, 9};
static const uint32_t queries[] = {5, 7, 8};
static const uint32_t bounds[] = {5, 7, 8, 8, 0, 9};

/* One fill with the given offsets into exactly `slots` row ids, from host and (GPU contexts)
 * device offsets and queries: want the status, the needle in the message, and, when refused,
 * row_ids untouched. */
static void fill_with(rdx_context *ctx, const rdx_index *idx, int range, const uint64_t *offsets, int64_t slots,
                      rdx_status want, const char *needle) {
  rdx_array q = range ? rdx_host_matrix(bounds, 3, 2, RDX_U32) : rdx_host_array(queries, 3, RDX_U32);
  for (int dev = 0; dev <= kc_gpu(ctx); dev++) {
    rdx_array o = rdx_host_array(offsets, 4, RDX_U64), qd = q;
    if (dev) o = kc_to_device(ctx, o), qd = kc_to_device(ctx, q);
    uint64_t *rows = (uint64_t *)malloc((size_t)(slots ? slots : 1) * 8);
    for (int64_t i = 0; i < slots; i++) rows[i] = CANARY;
    rdx_array r = rdx_host_array(rows, slots, RDX_U64);
    rdx_status st = range ? rdx_index_range_fill(ctx, idx, qd, o, r) : rdx_index_lookup_fill(ctx, idx, qd, o, r);
    if (st != want)
      CHECK_FAIL_("kind %s, %s fill, %s offsets: %s, wanted %s (%s)", rdx_kind_name(rdx_index_kind(idx)),
                  range ? "range" : "lookup", dev ? "device" : "host", rdx_status_name(st), rdx_status_name(want),
                  rdx_context_message(ctx));
    else if (needle && strstr(rdx_context_message(ctx), needle) == NULL)
      CHECK_FAIL_("kind %s: message '%s' lacks '%s'", rdx_kind_name(rdx_index_kind(idx)), rdx_context_message(ctx),
                  needle);
    if (st != RDX_OK)
      for (int64_t i = 0; i < slots; i++) CHECK_EQ(rows[i], CANARY);
    free(rows);
    if (dev) kc_free_device(ctx, o), kc_free_device(ctx, qd);
  }
}

static void fill_offsets(rdx_context *ctx) {
  CASE(fill_offsets_checked);
  for (size_t k = 0; k < N_KINDS; k++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    bo.bucket_size = 2;
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx));
    if (idx == NULL) continue;
    const uint64_t good[] = {0, 2, 3, 3}, first[] = {1, 3, 4, 4}, short0[] = {0, 0, 0, 1}, descend[] = {0, 2, 1, 3},
                   late[] = {0, 2, 3, 2}, huge[] = {0, 2, 3, UINT64_MAX};
    fill_with(ctx, idx, 0, good, 3, RDX_OK, NULL);
    fill_with(ctx, idx, 0, first, 4, RDX_ERR_INVALID_ARGUMENT, "offsets[0] is 1, not 0");
    /* query 0's two rows would have gone to row_ids[0, 2) of one slot */
    fill_with(ctx, idx, 0, short0, 1, RDX_ERR_INVALID_ARGUMENT, "query 0 has 2 rows, offsets give 0");
    fill_with(ctx, idx, 0, descend, 3, RDX_ERR_INVALID_ARGUMENT, "offsets descend at query 1");
    fill_with(ctx, idx, 0, late, 2, RDX_ERR_INVALID_ARGUMENT, "offsets descend at query 2");
    fill_with(ctx, idx, 0, huge, 3, RDX_ERR_INVALID_ARGUMENT, "row_ids.count 3 < offsets[3]");
    if (kinds[k] != RDX_KIND_HASH) {
      const uint64_t rgood[] = {0, 3, 3, 7}, rshort[] = {0, 3, 3, 6}, rextra[] = {0, 3, 4, 7};
      fill_with(ctx, idx, 1, rgood, 7, RDX_OK, NULL);
      fill_with(ctx, idx, 1, rshort, 7, RDX_ERR_INVALID_ARGUMENT, "query 2 has 4 rows, offsets give 3");
      fill_with(ctx, idx, 1, rextra, 7, RDX_ERR_INVALID_ARGUMENT, "query 1 has 0 rows, offsets give 1");
    }
    /* the good fill wrote the right rows */
    uint64_t rows[3], offsets[4] = {0, 2, 3, 3};
    CHECK_OK(ctx, rdx_index_lookup_fill(ctx, idx, rdx_host_array(queries, 3, RDX_U32), rdx_host_array(offsets, 4, RDX_U64),
                                        rdx_host_array(rows, 3, RDX_U64)));
    CHECK(rows[0] == 0 && rows[1] == 1 && rows[2] == 2);
    rdx_index_destroy(idx);
  }

  CASE(fill_offsets_checked_empty);
  rdx_index *empty = NULL;
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 0, RDX_U32), rdx_no_array(), &bo, &empty));
  const uint64_t zeros[] = {0, 0, 0, 0}, one[] = {0, 1, 1, 1};
  fill_with(ctx, empty, 0, zeros, 0, RDX_OK, NULL);
  fill_with(ctx, empty, 0, one, 1, RDX_ERR_INVALID_ARGUMENT, "query 0 has 0 rows, offsets give 1");
  fill_with(ctx, empty, 1, one, 1, RDX_ERR_INVALID_ARGUMENT, "query 0 has 0 rows, offsets give 1");
  /* an empty batch's one offset is offsets[0] */
  uint64_t five = 5, slot;
  CHECK_STATUS(ctx, rdx_index_lookup_fill(ctx, empty, rdx_host_array(queries, 0, RDX_U32), rdx_host_array(&five, 1, RDX_U64),
                                          rdx_host_array(&slot, 5, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(ctx), "offsets[0] is 5, not 0") != NULL);
  rdx_index_destroy(empty);
}

static void miss_marker_rows(rdx_context *ctx) {
  CASE(build_refuses_row_id_miss_marker);
  const uint64_t bad[] = {7, RDX_MISS, 9}, top[] = {RDX_MISS - 1, 3, 4};
  const uint32_t k3[] = {1, 2, 3};
  for (size_t k = 0; k < N_KINDS; k++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = kinds[k];
    for (int dev = 0; dev <= kc_gpu(ctx); dev++) {
      rdx_array kr = rdx_host_array(k3, 3, RDX_U32), rr = rdx_host_array(bad, 3, RDX_U64);
      if (dev) kr = kc_to_device(ctx, kr), rr = kc_to_device(ctx, rr);
      rdx_index *idx = NULL;
      CHECK_STATUS(ctx, rdx_index_build(ctx, kr, rr, &bo, &idx), RDX_ERR_INVALID_ARGUMENT);
      CHECK(idx == NULL);
      if (strstr(rdx_context_message(ctx), "row_ids[1] is 2^64-1") == NULL)
        CHECK_FAIL_("kind %s: message '%s'", rdx_kind_name(kinds[k]), rdx_context_message(ctx));
      if (dev) kc_free_device(ctx, kr), kc_free_device(ctx, rr);
    }
    /* the largest row id that is not the marker is kept and found */
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(k3, 3, RDX_U32), rdx_host_array(top, 3, RDX_U64), &bo, &idx));
    uint64_t out[3];
    CHECK_OK(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(k3, 3, RDX_U32), rdx_host_array(out, 3, RDX_U64)));
    if (out[0] != RDX_MISS - 1 || out[1] != 3 || out[2] != 4)
      CHECK_FAIL_("kind %s: lookups gave %llu %llu %llu", rdx_kind_name(kinds[k]), (unsigned long long)out[0],
                  (unsigned long long)out[1], (unsigned long long)out[2]);
    rdx_index_destroy(idx);
  }
}

static void load_factors(rdx_context *ctx) {
  CASE(hash_load_factor_too_small);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = RDX_KIND_HASH;
  rdx_index *idx = NULL;
  static const double tiny[] = {1e-300, 4.9e-324, 1e-10};
  for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
    bo.load_factor = tiny[i];
    CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx),
                 RDX_ERR_INVALID_ARGUMENT);
    CHECK(idx == NULL && strstr(rdx_context_message(ctx), "opts->load_factor") != NULL);
  }
  CHECK(strstr(rdx_context_message(ctx), "1e-10") != NULL);
  /* a small factor that fits: 400 slots for 4 keys */
  bo.load_factor = 0.01;
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx));
  uint64_t out[3];
  CHECK_OK(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(queries, 3, RDX_U32), rdx_host_array(out, 3, RDX_U64)));
  CHECK(out[0] == 0 && out[1] == 2 && out[2] == RDX_MISS);
  rdx_index_destroy(idx);
}

static void array_sizes(rdx_context *ctx) {
  CASE(array_bytes_overflow);
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  rdx_index *idx = NULL;
  /* 2^62 u32 keys overflow size_t; 2^55 is 2^57 bytes, past any address space; the data pointer
   * is never read */
  static const int64_t counts[] = {(int64_t)1 << 62, (int64_t)1 << 55, INT64_MAX};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_array(keys, counts[i], RDX_U32), rdx_no_array(), &bo, &idx),
                 RDX_ERR_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "keys.count %lld", (long long)counts[i]);
    CHECK(idx == NULL && strstr(rdx_context_message(ctx), want) != NULL);
  }
  CHECK_STATUS(ctx, rdx_index_build(ctx, rdx_host_matrix(keys, (int64_t)1 << 34, INT32_MAX, RDX_U32), rdx_no_array(), &bo, &idx),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(keys, 4, RDX_U32), rdx_no_array(), &bo, &idx));
  uint64_t out[3];
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(queries, (int64_t)1 << 62, RDX_U32), rdx_host_array(out, 3, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(ctx), "queries.count 4611686018427387904") != NULL);
  CHECK_STATUS(ctx, rdx_index_lookup(ctx, idx, rdx_host_array(queries, 3, RDX_U32), rdx_host_array(out, (int64_t)1 << 61, RDX_U64)),
               RDX_ERR_INVALID_ARGUMENT);
  CHECK(strstr(rdx_context_message(ctx), "row_ids.count") != NULL);
  rdx_index_destroy(idx);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  fill_offsets(ctx);
  miss_marker_rows(ctx);
  load_factors(ctx);
  array_sizes(ctx);
  return check_end(ctx);
}
