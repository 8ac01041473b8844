/*
 * test_snapshot.c: snapshots of key and point indexes (rdx_index_save/load, rdx_points_save/load)
 * on the backend given by --backend.
 *
 * Cases: snapshot_keys_roundtrip (every kind whose entries op exists, u32 and u64 keys, implied,
 * u32 and u64 row ids, duplicates, sizes 0, 1 and random; the loaded index against the oracle
 * through every query call, and its count, kind, dtype and next_row; a kind that cannot list its
 * pairs yet answers RDX_ERR_UNSUPPORTED and is reported, not failed); snapshot_points_roundtrip
 * (both kinds, both methods, f32 and f64, after moves, inserts and erases that leave gaps in the
 * ids); snapshot_refusals (truncated at many lengths, each header byte flipped, a byte flipped in
 * every section's head, data and padding, bytes appended, a newer version, foreign files: .npy,
 * .rdxp, text, the other content kind; missing files and directories); snapshot_crash (a child
 * saving over a snapshot is killed at many points of the write, by the writer's test hook and by
 * SIGKILL after a random sleep; the old snapshot still loads and answers as before, and the
 * stray temporaries break no later save).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "keys_check.h"
#include "points_check.h"

static char dir_[128];

static const char *path_in(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", dir_, name);
  return buf;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    CHECK_FAIL_("cannot open %s: %s", path, strerror(errno));
    *len = 0;
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static void spit(const char *path, const void *b, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b, 1, len, f) != len) CHECK_FAIL_("cannot write %s", path);
  if (f) fclose(f);
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
/* CRC32C, bitwise: the test's own reference, independent of the library's */
static uint32_t crc32c(const unsigned char *p, size_t n) {
  uint32_t c = ~0u;
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

/* ---- key data ---- */

typedef struct kdata {
  rdx_array keys, rows, queries, bounds;
  keys_oracle o;
} kdata;

static void kput(rdx_array a, int64_t i, uint64_t v) {
  if (a.dtype == RDX_U32) ((uint32_t *)a.data)[i] = (uint32_t)v;
  else ((uint64_t *)a.data)[i] = v;
}

/* n keys of dt, drawn from `range` values (small ranges: many duplicates); rows: 0 implied, 1 u32
 * shuffled, 2 u64 above 2^32; m queries and m ranges. */
static kdata kdata_make(rdx_dtype dt, int64_t n, int row_mode, uint64_t range, int64_t m) {
  kdata d;
  memset(&d, 0, sizeof d);
  size_t es = rdx_dtype_size(dt);
  uint64_t maxv = dt == RDX_U32 ? UINT32_MAX : UINT64_MAX;
  d.keys = rdx_host_array(malloc((size_t)(n + 1) * es), n, dt);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = check_below(range);
    if (check_below(50) == 0) v = check_below(2) ? 0 : maxv; /* the extremes */
    kput(d.keys, i, v);
  }
  d.rows = rdx_no_array();
  if (row_mode) {
    d.rows = rdx_host_array(malloc((size_t)(n + 1) * 8), n, row_mode == 1 ? RDX_U32 : RDX_U64);
    for (int64_t i = 0; i < n; i++) kput(d.rows, i, row_mode == 1 ? (uint64_t)(n - 1 - i) : ((uint64_t)1 << 33) + 7 * (uint64_t)i);
  }
  d.queries = rdx_host_array(malloc((size_t)(m + 1) * es), m, dt);
  d.bounds = rdx_host_matrix(malloc((size_t)(2 * m + 1) * es), m, 2, dt);
  for (int64_t i = 0; i < m; i++) {
    uint64_t q = n > 0 && check_below(2) ? kc_at(d.keys, (int64_t)check_below((uint64_t)n)) : check_below(range + 2);
    kput(d.queries, i, q);
    uint64_t lo = check_below(range), hi = lo + check_below(range / 4 + 2);
    if (i == 0) lo = 0, hi = maxv;
    kput(d.bounds, 2 * i, lo);
    kput(d.bounds, 2 * i + 1, hi);
  }
  CHECK(keys_oracle_build(&d.o, d.keys, d.rows));
  return d;
}

static void kdata_free(kdata *d) {
  free((void *)d->keys.data);
  free((void *)d->rows.data);
  free((void *)d->queries.data);
  free((void *)d->bounds.data);
  keys_oracle_free(&d->o);
}

static const rdx_kind all_kinds[] = {RDX_KIND_SCAN, RDX_KIND_SORTED, RDX_KIND_BTREE, RDX_KIND_HASH,
                                     RDX_KIND_RX,   RDX_KIND_CGRX,   RDX_KIND_CGRXU};
#define N_KINDS ((int)(sizeof all_kinds / sizeof all_kinds[0]))
static int saved_[N_KINDS], unsupported_[N_KINDS];

/* Build kind over d, save, load, and check the loaded index. Returns 1 when the kind saved. */
static int key_roundtrip(rdx_context *ctx, int ki, kdata *d) {
  rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
  bo.kind = all_kinds[ki];
  bo.bucket_size = 1 + (int)check_below(40);
  rdx_index *idx = NULL;
  rdx_status st = rdx_index_build(ctx, d->keys, d->rows, &bo, &idx);
  if (st == RDX_ERR_UNSUPPORTED) return 0; /* not on this backend */
  CHECK_OK(ctx, st);
  if (!idx) return 0;
  char p[256];
  path_in(p, sizeof p, "keys.snap");
  st = rdx_index_save(ctx, idx, p);
  if (st == RDX_ERR_UNSUPPORTED) {
    unsupported_[ki]++;
    rdx_index_destroy(idx);
    return 0;
  }
  CHECK_OK(ctx, st);
  rdx_index *back = NULL;
  CHECK_OK(ctx, rdx_index_load(ctx, p, &back));
  if (back) {
    saved_[ki]++;
    CHECK_EQ(rdx_index_kind(back), rdx_index_kind(idx));
    CHECK_EQ(rdx_index_dtype(back), rdx_index_dtype(idx));
    CHECK_EQ(rdx_index_count(back), rdx_index_count(idx));
    CHECK_EQ(rdx_index_next_row(back), rdx_index_next_row(idx));
    kc_check_index(ctx, back, &d->o, d->queries, d->bounds);
  }
  rdx_index_destroy(back);
  rdx_index_destroy(idx);
  return back != NULL;
}

static void case_keys_roundtrip(rdx_context *ctx) {
  if (!CASE_RUN(snapshot_keys_roundtrip)) return;
  static const int64_t sizes[] = {0, 1, 2, 777, 5000};
  for (int ki = 0; ki < N_KINDS; ki++)
    for (int dti = 0; dti < 2; dti++)
      for (int si = 0; si < 5; si++)
        for (int rm = 0; rm < 3; rm++) {
          rdx_dtype dt = dti ? RDX_U64 : RDX_U32;
          int64_t n = sizes[si];
          uint64_t range = si == 4 ? 300 : (dt == RDX_U32 ? UINT32_MAX : UINT64_MAX - 2); /* 5000: duplicates */
          kdata d = kdata_make(dt, n, rm, range, 200);
          key_roundtrip(ctx, ki, &d);
          kdata_free(&d);
        }
  /* next_row after an insert of implied rows comes back (where the kind updates already) */
  for (int ki = 0; ki < N_KINDS; ki++) {
    kdata d = kdata_make(RDX_U64, 300, 0, 1000, 50);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = all_kinds[ki];
    rdx_index *idx = NULL;
    if (rdx_index_build(ctx, d.keys, d.rows, &bo, &idx) == RDX_OK) {
      uint64_t extra[3] = {5, 5, 99999};
      rdx_update_options uo = RDX_UPDATE_OPTIONS_INIT;
      uo.flags = RDX_UPDATE_REBUILD;
      if (rdx_index_insert(ctx, idx, rdx_host_array(extra, 3, RDX_U64), rdx_no_array(), &uo) == RDX_OK) {
        char p[256];
        path_in(p, sizeof p, "next_row.snap");
        if (rdx_index_save(ctx, idx, p) == RDX_OK) {
          rdx_index *back = NULL;
          CHECK_OK(ctx, rdx_index_load(ctx, p, &back));
          CHECK_EQ(rdx_index_next_row(back), 303);
          CHECK_EQ(rdx_index_count(back), 303);
          uint64_t q = 99999, row = 0;
          CHECK_OK(ctx, rdx_index_lookup(ctx, back, rdx_host_array(&q, 1, RDX_U64), rdx_host_array(&row, 1, RDX_U64)));
          CHECK_EQ(row, 302);
          rdx_index_destroy(back);
        }
      }
    }
    rdx_index_destroy(idx);
    kdata_free(&d);
  }
  for (int ki = 0; ki < N_KINDS; ki++)
    printf("  keys %-6s: %d snapshots loaded and checked, %d refused as unsupported (no entries op yet)\n",
           rdx_kind_name(all_kinds[ki]), saved_[ki], unsupported_[ki]);
}

/* ---- points ---- */

typedef struct pstate {
  pset p;          /* the points now, with their ids */
  rdx_points *pts;
} pstate;

/* An index of kind ki (pc_kind_name) over gen's n points, then updates that leave gaps in the ids
 * when `updates`; p holds what the index holds. */
static pstate points_make(rdx_context *ctx, int ki, int gen, int64_t n, rdx_dtype dt, int updates) {
  pstate s;
  s.p = pset_make(gen, n, dt);
  s.pts = NULL;
  rdx_points_options o = RDX_POINTS_OPTIONS_INIT;
  o.kind = ki == 2 ? RDX_POINTS_KDTREE : RDX_POINTS_QUADTREE;
  o.method = ki == 1 ? RDX_POINTS_TOP_DOWN : RDX_POINTS_BOTTOM_UP;
  o.leaf_capacity = 1 + (int)check_below(16);
  CHECK_OK(ctx, rdx_points_build(ctx, pset_array(&s.p), &o, &s.pts));
  if (!updates || !s.pts || n < 4) return s;
  /* erase every third id, move a few, insert some at old points' places (inside the box) */
  int64_t ne = 0;
  uint64_t *er = (uint64_t *)malloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i += 3) er[ne++] = (uint64_t)i;
  CHECK_OK(ctx, rdx_points_erase(ctx, s.pts, rdx_host_array(er, ne, RDX_U64)));
  int64_t ni = n / 5 + 1;
  pset ins;
  pset_alloc(&ins, ni, dt);
  for (int64_t i = 0; i < ni; i++) {
    int64_t from = (int64_t)check_below((uint64_t)n);
    pset_set(&ins, i, s.p.x[from], s.p.y[from]);
  }
  uint64_t first = 0;
  CHECK_OK(ctx, rdx_points_insert(ctx, s.pts, pset_array(&ins), &first));
  /* the points now: the kept ones, then the inserted ones with ids first.. */
  pset now;
  pset_alloc(&now, n - ne + ni, dt);
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (i % 3 != 0) pset_set(&now, k, s.p.x[i], s.p.y[i]), now.id[k++] = s.p.id[i];
  for (int64_t i = 0; i < ni; i++) pset_set(&now, k, ins.x[i], ins.y[i]), now.id[k++] = first + (uint64_t)i;
  /* erase the last inserted one: id_end stays past the last id */
  uint64_t last = first + (uint64_t)ni - 1;
  CHECK_OK(ctx, rdx_points_erase(ctx, s.pts, rdx_host_array(&last, 1, RDX_U64)));
  now.n = k - 1;
  free(er);
  pset_free(&ins);
  pset_free(&s.p);
  s.p = now;
  return s;
}

static void points_check_against(rdx_context *ctx, rdx_points *pts, const pset *p) {
  points_oracle o;
  CHECK(points_oracle_init(&o, p->n, p->x, p->y, p->id));
  CHECK_EQ(rdx_points_count(pts), p->n);
  pc_check_all(ctx, pts, &o, p, 60);
  points_oracle_free(&o);
}

static void case_points_roundtrip(rdx_context *ctx) {
  if (!CASE_RUN(snapshot_points_roundtrip)) return;
  static const int64_t sizes[] = {0, 1, 300, 3000};
  int done = 0;
  for (int ki = 0; ki < 3; ki++)
    for (int dti = 0; dti < 2; dti++)
      for (int si = 0; si < 4; si++)
        for (int up = 0; up < 2; up++) {
          rdx_dtype dt = dti ? RDX_F64 : RDX_F32;
          int gen = (int)check_below(GEN_COUNT);
          snprintf(pc_label, sizeof pc_label, "%s %s n=%lld %s%s", pc_kind_name(ki), dti ? "f64" : "f32",
                   (long long)sizes[si], gen_names[gen], up ? " updated" : "");
          pstate s = points_make(ctx, ki, gen, sizes[si], dt, up);
          if (!s.pts) {
            pset_free(&s.p);
            continue;
          }
          char path[256];
          path_in(path, sizeof path, "points.snap");
          CHECK_OK(ctx, rdx_points_save(ctx, s.pts, path));
          rdx_points *back = NULL;
          CHECK_OK(ctx, rdx_points_load(ctx, path, &back));
          if (back) {
            rdx_points_info a, b;
            memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
            a.size = b.size = sizeof a;
            CHECK_OK(ctx, rdx_points_describe(ctx, s.pts, &a));
            CHECK_OK(ctx, rdx_points_describe(ctx, back, &b));
            CHECK_EQ(b.kind, a.kind);
            CHECK_EQ(b.dtype, a.dtype);
            CHECK_EQ(b.count, a.count);
            CHECK_EQ(b.id_end, a.id_end);
            CHECK_EQ(b.leaf_capacity, a.leaf_capacity);
            CHECK_EQ(b.max_depth, a.max_depth);
            CHECK(memcmp(a.box, b.box, sizeof a.box) == 0);
            points_check_against(ctx, back, &s.p);
            /* the loaded index takes updates: inserted points get ids from id_end on */
            uint64_t first = 0;
            rdx_array one = rdx_host_matrix(s.p.xy, s.p.n > 0 ? 1 : 0, 2, dt);
            CHECK_OK(ctx, rdx_points_insert(ctx, back, one, &first));
            CHECK_EQ(first, a.id_end);
            done++;
          }
          rdx_points_destroy(back);
          rdx_points_destroy(s.pts);
          pset_free(&s.p);
        }
  pc_label[0] = 0;
  printf("  points: %d snapshots loaded and checked\n", done);
}

/* ---- refusals ---- */

typedef rdx_status (*load_fn)(rdx_context *ctx, const char *path);
static rdx_status load_keys(rdx_context *ctx, const char *path) {
  rdx_index *idx = (rdx_index *)(uintptr_t)1;
  rdx_status st = rdx_index_load(ctx, path, &idx);
  CHECK(st == RDX_OK ? idx != NULL : idx == NULL);
  rdx_index_destroy(idx);
  return st;
}
static rdx_status load_points(rdx_context *ctx, const char *path) {
  rdx_points *pts = (rdx_points *)(uintptr_t)1;
  rdx_status st = rdx_points_load(ctx, path, &pts);
  CHECK(st == RDX_OK ? pts != NULL : pts == NULL);
  rdx_points_destroy(pts);
  return st;
}

/* The file `good` loaded by `load` after each damage must be RDX_ERR_PARSE whose message holds
 * `want` (NULL: any), and nothing held after it. */
static int refused_;
static void refuse(rdx_context *ctx, load_fn load, const char *path, const void *bytes, size_t len, const char *want,
                   const char *what) {
  spit(path, bytes, len);
  refused_++;
  int64_t before = 0, after = 0;
  rdx_context_memory(ctx, &before, NULL);
  rdx_status st = load(ctx, path);
  rdx_context_memory(ctx, &after, NULL);
  if (st != RDX_ERR_PARSE) {
    CHECK_FAIL_("%s: load returned %s (%s), wanted RDX_ERR_PARSE", what, rdx_status_name(st), rdx_context_message(ctx));
  } else if (want && !strstr(rdx_context_message(ctx), want)) {
    CHECK_FAIL_("%s: the message \"%s\" does not say \"%s\"", what, rdx_context_message(ctx), want);
  }
  CHECK_EQ(after, before);
}

/* Every damage to a good snapshot file with n_sections sections. */
static void refusals_of(rdx_context *ctx, load_fn load, const char *good_path, const char *label) {
  size_t len = 0;
  unsigned char *good = slurp(good_path, &len);
  if (!good) return;
  char p[256], what[160];
  path_in(p, sizeof p, "damaged.snap");
  unsigned char *b = (unsigned char *)malloc(len + 64);
  CHECK_OK(ctx, load(ctx, good_path));
  /* truncated: every length up to the header and past it, then a sample */
  for (size_t cut = 0; cut < len; cut += cut < 200 ? 1 : 1 + (size_t)check_below(len / 40 + 1)) {
    snprintf(what, sizeof what, "%s truncated to %zu of %zu bytes", label, cut, len);
    refuse(ctx, load, p, good, cut, cut >= 8 ? "truncated" : NULL, what);
  }
  refuse(ctx, load, p, good, len - 1, "truncated", "truncated by one byte");
  /* each header byte flipped */
  for (size_t i = 0; i < 160 && i < len; i++) {
    memcpy(b, good, len);
    b[i] ^= (unsigned char)(1 + check_below(255));
    snprintf(what, sizeof what, "%s header byte %zu flipped", label, i);
    refuse(ctx, load, p, b, len, i < 8 ? "not a raydex snapshot" : NULL, what);
  }
  /* each section: every byte of its head, bytes of its data and padding */
  for (size_t at = 160, s = 0; at + 16 <= len; s++) {
    uint64_t bytes = get64(good + at + 8), pad = (8 - bytes % 8) % 8;
    for (size_t i = 0; i < 16; i++) {
      memcpy(b, good, len);
      b[at + i] ^= 0x40;
      snprintf(what, sizeof what, "%s section %zu head byte %zu flipped", label, s, i);
      refuse(ctx, load, p, b, len, "section", what);
    }
    for (int t = 0; t < 20 && bytes > 0; t++) {
      size_t i = at + 16 + (size_t)check_below(bytes);
      memcpy(b, good, len);
      b[i] ^= (unsigned char)(1 + check_below(255));
      snprintf(what, sizeof what, "%s section %zu data byte %zu flipped", label, s, i - at - 16);
      refuse(ctx, load, p, b, len, "checksum", what);
    }
    for (uint64_t i = 0; i < pad; i++) {
      memcpy(b, good, len);
      b[at + 16 + bytes + i] = 1;
      snprintf(what, sizeof what, "%s section %zu padding byte %llu set", label, s, (unsigned long long)i);
      refuse(ctx, load, p, b, len, "padding", what);
    }
    at += 16 + bytes + pad;
  }
  /* bytes appended */
  memcpy(b, good, len);
  memset(b + len, 0, 8);
  refuse(ctx, load, p, b, len + 8, "after the end", "8 bytes appended");
  /* a newer version, its header checksum made right: the version is what is wrong */
  memcpy(b, good, len);
  put32(b + 8, 2);
  put32(b + 156, crc32c(b, 156));
  refuse(ctx, load, p, b, len, "newer", "version 2");
  put32(b + 8, 0);
  put32(b + 156, crc32c(b, 156));
  refuse(ctx, load, p, b, len, "version 0", "version 0");
  /* a field changed with the header's checksum made right: the field's own check refuses it */
  memcpy(b, good, len);
  b[24 + 8 * 3] ^= 0x7f; /* keys: the count; points: the dtype */
  put32(b + 156, crc32c(b, 156));
  refuse(ctx, load, p, b, len, NULL, "a field changed under a valid checksum");
  CHECK_OK(ctx, load(ctx, good_path)); /* the good file is still good */
  free(b);
  free(good);
}

static void case_refusals(rdx_context *ctx) {
  if (!CASE_RUN(snapshot_refusals)) return;
  char kp[256], pp[256], p[256];
  path_in(kp, sizeof kp, "refuse_keys.snap");
  path_in(pp, sizeof pp, "refuse_points.snap");
  /* a key snapshot: of a kind that saves pairs if one does, else an empty one */
  kdata d = kdata_make(RDX_U64, 1000, 2, 5000, 10);
  int have_pairs = 0;
  for (int ki = 0; ki < N_KINDS && !have_pairs; ki++) {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = all_kinds[ki];
    rdx_index *idx = NULL;
    if (rdx_index_build(ctx, d.keys, d.rows, &bo, &idx) == RDX_OK && rdx_index_save(ctx, idx, kp) == RDX_OK) have_pairs = 1;
    rdx_index_destroy(idx);
  }
  if (!have_pairs) {
    printf("  refusals: no kind saves pairs yet; the key file is an empty index\n");
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(NULL, 0, RDX_U32), rdx_no_array(), NULL, &idx));
    CHECK_OK(ctx, rdx_index_save(ctx, idx, kp));
    rdx_index_destroy(idx);
  }
  kdata_free(&d);
  pstate s = points_make(ctx, 0, GEN_UNIFORM, 500, RDX_F32, 1);
  CHECK_OK(ctx, rdx_points_save(ctx, s.pts, pp));
  rdx_points_destroy(s.pts);
  pset_free(&s.p);
  refusals_of(ctx, load_keys, kp, "keys");
  refusals_of(ctx, load_points, pp, "points");
  printf("  refusals: %d damaged files refused\n", refused_);

  /* foreign files */
  path_in(p, sizeof p, "foreign.npy");
  uint64_t v[3] = {1, 2, 3};
  CHECK_OK(ctx, rdx_npy_write(ctx, p, rdx_host_array(v, 3, RDX_U64), 1));
  CHECK_STATUS(ctx, load_keys(ctx, p), RDX_ERR_PARSE);
  CHECK(strstr(rdx_context_message(ctx), ".npy") != NULL);
  path_in(p, sizeof p, "foreign.rdxp");
  double sq[8] = {0, 0, 1, 0, 1, 1, 0, 1};
  uint64_t fo[2] = {0, 1}, ro[2] = {0, 4};
  rdx_polygons_input in;
  memset(&in, 0, sizeof in);
  in.size = sizeof in;
  in.feature_offsets = rdx_host_array(fo, 2, RDX_U64);
  in.ring_offsets = rdx_host_array(ro, 2, RDX_U64);
  in.coords = rdx_host_matrix(sq, 4, 2, RDX_F64);
  rdx_polygons *layer = NULL;
  CHECK_OK(ctx, rdx_polygons_create(ctx, &in, &layer));
  CHECK_OK(ctx, rdx_polygons_save(ctx, layer, p));
  rdx_polygons_destroy(layer);
  CHECK_STATUS(ctx, load_points(ctx, p), RDX_ERR_PARSE);
  CHECK(strstr(rdx_context_message(ctx), ".rdxp") != NULL);
  path_in(p, sizeof p, "foreign.txt");
  spit(p, "hello, world\n", 13);
  CHECK_STATUS(ctx, load_keys(ctx, p), RDX_ERR_PARSE);
  CHECK(strstr(rdx_context_message(ctx), "not a raydex snapshot") != NULL);
  /* the other content kind */
  CHECK_STATUS(ctx, load_keys(ctx, pp), RDX_ERR_PARSE);
  CHECK(strstr(rdx_context_message(ctx), "holds a point index") != NULL);
  CHECK_STATUS(ctx, load_points(ctx, kp), RDX_ERR_PARSE);
  CHECK(strstr(rdx_context_message(ctx), "holds a key index") != NULL);
  /* the file system */
  path_in(p, sizeof p, "missing.snap");
  CHECK_STATUS(ctx, load_keys(ctx, p), RDX_ERR_IO);
  CHECK(strstr(rdx_context_message(ctx), "missing.snap") && strstr(rdx_context_message(ctx), strerror(ENOENT)));
  CHECK_STATUS(ctx, load_points(ctx, dir_), RDX_ERR_IO);
  rdx_index *idx = NULL;
  CHECK_OK(ctx, rdx_index_build(ctx, rdx_host_array(NULL, 0, RDX_U64), rdx_no_array(), NULL, &idx));
  path_in(p, sizeof p, "no/such/dir/x.snap");
  CHECK_STATUS(ctx, rdx_index_save(ctx, idx, p), RDX_ERR_IO);
  CHECK(strstr(rdx_context_message(ctx), strerror(ENOENT)) != NULL);
  CHECK_STATUS(ctx, rdx_index_save(ctx, idx, NULL), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_index_save(ctx, NULL, kp), RDX_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, rdx_index_load(ctx, kp, NULL), RDX_ERR_INVALID_ARGUMENT);
  rdx_index_destroy(idx);
}

/* ---- crash safety ---- */

/* The object a crash test saves: a key index of a kind that saves pairs, else a point index. */
typedef struct crash_obj {
  int points;
  rdx_kind kind;
} crash_obj;

/* In a child: a fresh CPU context (the parent's threads do not survive fork), an index of n
 * items from seed, saved to path. Never returns. ready (a pipe, or -1) is told once the index is
 * built, just before the save. */
static void child_save(crash_obj c, const char *path, int64_t n, uint64_t seed, int64_t kill_at, int ready) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = RDX_BACKEND_CPU;
  rdx_context *ctx = NULL;
  if (rdx_context_create(&o, &ctx) != RDX_OK) _exit(10);
  check_seed_ = seed;
  rdx_status st;
  if (c.points) {
    pset p = pset_make(GEN_UNIFORM, n, RDX_F64);
    rdx_points *pts = NULL;
    if (rdx_points_build(ctx, pset_array(&p), NULL, &pts) != RDX_OK) _exit(11);
    if (ready >= 0 && write(ready, "r", 1) != 1) _exit(12);
    rdx_snapshot_kill_at(kill_at);
    st = rdx_points_save(ctx, pts, path);
  } else {
    kdata d = kdata_make(RDX_U64, n, 0, 1u << 30, 1);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = c.kind;
    rdx_index *idx = NULL;
    if (rdx_index_build(ctx, d.keys, d.rows, &bo, &idx) != RDX_OK) _exit(11);
    if (ready >= 0 && write(ready, "r", 1) != 1) _exit(12);
    rdx_snapshot_kill_at(kill_at);
    st = rdx_index_save(ctx, idx, path);
  }
  _exit(st == RDX_OK ? 0 : 13);
}

/* What the snapshot at path must answer: the old index's items. */
typedef struct crash_want {
  kdata d;
  pset p;
} crash_want;

static void check_old(rdx_context *ctx, crash_obj c, const char *path, crash_want *w, const char *what) {
  snprintf(pc_label, sizeof pc_label, "%s", what);
  if (c.points) {
    rdx_points *pts = NULL;
    CHECK_OK(ctx, rdx_points_load(ctx, path, &pts));
    if (pts) points_check_against(ctx, pts, &w->p);
    rdx_points_destroy(pts);
  } else {
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_load(ctx, path, &idx));
    if (idx) kc_check_index(ctx, idx, &w->d.o, w->d.queries, w->d.bounds);
    rdx_index_destroy(idx);
  }
  pc_label[0] = 0;
}

static void case_crash(rdx_context *ctx) {
  if (!CASE_RUN(snapshot_crash)) return;
  crash_obj c = {1, (rdx_kind)0};
  { /* a key kind that saves pairs, if any */
    kdata d = kdata_make(RDX_U64, 100, 0, 1000, 1);
    char p[256];
    path_in(p, sizeof p, "probe.snap");
    for (int ki = 0; ki < N_KINDS && c.points; ki++) {
      rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
      bo.kind = all_kinds[ki];
      rdx_index *idx = NULL;
      if (rdx_index_build(ctx, d.keys, d.rows, &bo, &idx) == RDX_OK && rdx_index_save(ctx, idx, p) == RDX_OK)
        c.points = 0, c.kind = all_kinds[ki];
      rdx_index_destroy(idx);
    }
    kdata_free(&d);
    printf("  crash: saving %s\n", c.points ? "point indexes (no key kind saves pairs yet)" : rdx_kind_name(c.kind));
  }
  char path[256];
  path_in(path, sizeof path, "crash.snap");
  /* the old snapshot: small, made in this process */
  crash_want w;
  memset(&w, 0, sizeof w);
  if (c.points) {
    w.p = pset_make(GEN_CLUSTERED, 2000, RDX_F64);
    rdx_points *pts = NULL;
    CHECK_OK(ctx, rdx_points_build(ctx, pset_array(&w.p), NULL, &pts));
    CHECK_OK(ctx, rdx_points_save(ctx, pts, path));
    rdx_points_destroy(pts);
  } else {
    w.d = kdata_make(RDX_U64, 2000, 2, 500, 100);
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = c.kind;
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, w.d.keys, w.d.rows, &bo, &idx));
    CHECK_OK(ctx, rdx_index_save(ctx, idx, path));
    rdx_index_destroy(idx);
  }
  /* the new one's size, for the kill points: a full save by a child that is not killed */
  char probe[256];
  path_in(probe, sizeof probe, "crash_size.snap");
  const int64_t n_new = 1 << 16;
  pid_t pid = fork();
  if (pid == 0) child_save(c, probe, n_new, 777, -1, -1);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct stat sb;
  CHECK(stat(probe, &sb) == 0);
  int64_t size = (int64_t)sb.st_size;
  /* killed by the hook at these byte counts, the last ones after the fsync, before the rename */
  int64_t at[16] = {0, 1, 100, 159, 160, 176, 4096, size / 3, size / 2, size - 9, size - 1, size, size + 1};
  int n_at = 13;
  for (int i = 0; i < 3; i++) at[n_at++] = (int64_t)check_below((uint64_t)size);
  for (int i = 0; i < n_at; i++) {
    pid = fork();
    if (pid == 0) child_save(c, path, n_new, 777, at[i], -1);
    waitpid(pid, &status, 0);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      CHECK_FAIL_("the child killed at byte %lld of %lld ended with status 0x%x", (long long)at[i], (long long)size, status);
    char what[96];
    snprintf(what, sizeof what, "killed at byte %lld of %lld", (long long)at[i], (long long)size);
    check_old(ctx, c, path, &w, what);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)pid);
    CHECK(access(tmp, F_OK) == 0); /* the stray temporary is there, and harmless */
    unlink(tmp);
  }
  /* killed from outside after a random sleep, while saving a larger index */
  const int64_t n_big = 1 << 20;
  for (int i = 0; i < 6; i++) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid = fork();
    if (pid == 0) {
      close(fds[0]);
      child_save(c, path, n_big, 999, -1, fds[1]);
    }
    close(fds[1]);
    char r;
    CHECK(read(fds[0], &r, 1) == 1);
    close(fds[0]);
    usleep((useconds_t)check_below(i < 3 ? 3000 : 60000));
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) { /* the save won the race: its file is whole */
      rdx_status st = c.points ? load_points(ctx, path) : load_keys(ctx, path);
      CHECK_OK(ctx, st);
      printf("  crash: the save finished before the kill (sleep %d)\n", i);
      break; /* the old snapshot is gone; the hook's runs above covered it */
    }
    CHECK(WIFSIGNALED(status));
    check_old(ctx, c, path, &w, "killed after a random sleep");
  }
  /* a stray temporary with this process's own name (an earlier run of the same pid) and junk */
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  unsigned char *junk = (unsigned char *)malloc(1 << 20);
  memset(junk, 0xEE, 1 << 20);
  spit(tmp, junk, 1 << 20);
  free(junk);
  if (c.points) {
    rdx_points *pts = NULL;
    CHECK_OK(ctx, rdx_points_build(ctx, pset_array(&w.p), NULL, &pts));
    CHECK_OK(ctx, rdx_points_save(ctx, pts, path));
    rdx_points_destroy(pts);
  } else {
    rdx_build_options bo = RDX_BUILD_OPTIONS_INIT;
    bo.kind = c.kind;
    rdx_index *idx = NULL;
    CHECK_OK(ctx, rdx_index_build(ctx, w.d.keys, w.d.rows, &bo, &idx));
    CHECK_OK(ctx, rdx_index_save(ctx, idx, path));
    rdx_index_destroy(idx);
  }
  CHECK(access(tmp, F_OK) != 0); /* renamed away */
  check_old(ctx, c, path, &w, "saved over a stray temporary");
  if (c.points) pset_free(&w.p);
  else kdata_free(&w.d);
}

/* Remove the test's directory and what is left in it. */
static void cleanup(void) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir_);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir_);
}

/* A point index whose ids have gaps past 4 times its points (and 2^16) saves, and its load is
 * refused with RDX_ERR_UNSUPPORTED and a sentence (spatial/snapshot.c restores ids with fillers,
 * which a small file must not size from its header alone), holding nothing. */
static void case_points_gaps(rdx_context *ctx) {
  if (!CASE_RUN(snapshot_points_gaps)) return;
  const int64_t n = 70000;
  double *xy = (double *)malloc((size_t)n * 16);
  uint64_t *ids = (uint64_t *)malloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i++) xy[2 * i] = (double)(i % 1000), xy[2 * i + 1] = (double)(i / 1000), ids[i] = (uint64_t)i;
  rdx_points_options po = RDX_POINTS_OPTIONS_INIT;
  rdx_points *pts = NULL;
  CHECK_OK(ctx, rdx_points_build(ctx, rdx_host_matrix(xy, n, 2, RDX_F64), &po, &pts));
  if (pts) {
    CHECK_OK(ctx, rdx_points_erase(ctx, pts, rdx_host_array(ids + 1, n - 1, RDX_U64))); /* one point, id_end 70000 */
    char path[256];
    path_in(path, sizeof path, "gaps.snap");
    CHECK_OK(ctx, rdx_points_save(ctx, pts, path));
    int64_t in_use = 0, before = 0;
    rdx_context_memory(ctx, &before, NULL);
    rdx_points *back = NULL;
    CHECK_STATUS(ctx, rdx_points_load(ctx, path, &back), RDX_ERR_UNSUPPORTED);
    CHECK(back == NULL);
    CHECK(strstr(rdx_context_message(ctx), "cannot be restored yet") != NULL);
    rdx_context_memory(ctx, &in_use, NULL);
    CHECK_EQ(in_use, before);
    rdx_points_destroy(pts);
  }
  free(xy), free(ids);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  pc_watchdog(600);
  snprintf(dir_, sizeof dir_, "/tmp/rdx_snapshot_XXXXXX");
  if (!mkdtemp(dir_)) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  case_keys_roundtrip(ctx);
  case_points_roundtrip(ctx);
  case_points_gaps(ctx);
  case_refusals(ctx);
  case_crash(ctx);
  cleanup();
  return check_end(ctx);
}
