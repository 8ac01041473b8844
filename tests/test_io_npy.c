/*
 * test_io_npy.c: the .npy reader and writer: round trips of every supported dtype and shape,
 * and every malformed input the reader must refuse with RDX_ERR_PARSE and a sentence (truncated
 * header or data, garbage, wrong magic, big-endian or unknown dtypes, Fortran order, 0-D and 3-D
 * arrays, overflowing shapes, trailing bytes), the header parsed as strictly as numpy parses it
 * (issue 26: repeated keys, bytes after the dict, NUL and control bytes, unknown versions,
 * malformed shapes and booleans; what numpy writes still read), messages that quote file bytes
 * and paths escaped, plus a mutation loop over valid files (the CI stand-in for
 * tests/fuzz/fuzz_npy.c) that must never crash or leak.
 */
#include "check.h"
#include "bench_api.h"
#include "io/io.h"

#include <unistd.h>

static char path[256];

static void write_raw(const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
}

/* A .npy of format major.0 whose header is the h bytes of dict, padded as numpy pads it (spaces
 * and a final newline, to a multiple of 64) unless raw, followed by `data` bytes. */
static size_t make_version(unsigned char *buf, int major, const char *dict, size_t h, int raw, size_t data) {
  size_t pre = major == 1 ? 10 : 12, total = pre + h + 1, pad = raw ? 0 : (64 - total % 64) % 64;
  size_t hl = raw ? h : h + pad + 1;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major, buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(hl >> (8 * i));
  memcpy(buf + pre, dict, h);
  if (!raw) {
    memset(buf + pre + h, ' ', pad);
    buf[pre + h + pad] = '\n';
  }
  for (size_t i = 0; i < data; i++) buf[pre + hl + i] = (unsigned char)(i * 7);
  return pre + hl + data;
}
/* a header-only .npy (format 1.0) with the given dict, followed by `data` bytes */
static size_t make(unsigned char *buf, const char *dict, size_t data) {
  return make_version(buf, 1, dict, strlen(dict), 0, data);
}

static void expect_parse_error(rdx_context *ctx, const void *buf, size_t len, const char *needle) {
  write_raw(buf, len);
  rdx_array a;
  int nd = -1;
  rdx_status st = rdx_npy_read(ctx, path, &a, &nd);
  if (st != RDX_ERR_PARSE) CHECK_FAIL_("wanted RDX_ERR_PARSE (%s), got %s", needle, rdx_status_name(st));
  else if (strstr(rdx_context_message(ctx), needle) == NULL)
    CHECK_FAIL_("message '%s' lacks '%s'", rdx_context_message(ctx), needle);
  CHECK(a.data == NULL);
  rdx_npy_free(&a);
  /* a share is refused with the same sentence: its header is checked against the whole file */
  st = rdx_npy_read_share(ctx, path, 0, 2, &a, &nd, NULL, NULL);
  if (st != RDX_ERR_PARSE && st != RDX_ERR_IO) CHECK_FAIL_("share: wanted RDX_ERR_PARSE (%s), got %s", needle, rdx_status_name(st));
  else if (st == RDX_ERR_PARSE && strstr(rdx_context_message(ctx), needle) == NULL)
    CHECK_FAIL_("share: message '%s' lacks '%s'", rdx_context_message(ctx), needle);
  CHECK(a.data == NULL);
}

int main(int argc, char **argv) {
  rdx_context *ctx = check_begin(argc, argv);
  snprintf(path, sizeof path, "/tmp/raydex_test_npy_%d.npy", (int)getpid());

  CASE(npy_round_trip);
  static const rdx_dtype dts[] = {RDX_U32, RDX_U64, RDX_I64, RDX_F32, RDX_F64};
  for (size_t d = 0; d < 5; d++)
    for (int cols = 1; cols <= 4; cols++)
      for (int64_t n = 0; n < 300; n += 97) {
        size_t es = rdx_dtype_size(dts[d]), bytes = (size_t)n * cols * es;
        unsigned char *data = (unsigned char *)malloc(bytes + 1);
        for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)check_rand_();
        rdx_array a = rdx_host_matrix(data, n, cols, dts[d]);
        int ndim = cols == 1 && (n % 2) ? 1 : 2;
        CHECK_OK(ctx, rdx_npy_write(ctx, path, a, ndim));
        rdx_array b;
        int nd = 0;
        CHECK_OK(ctx, rdx_npy_read(ctx, path, &b, &nd));
        CHECK_EQ(nd, ndim);
        CHECK_EQ(b.count, n);
        CHECK_EQ(b.columns, cols);
        CHECK_EQ(b.dtype, dts[d]);
        CHECK(bytes == 0 || memcmp(b.data, data, bytes) == 0);
        rdx_npy_free(&b);
        /* shares: in order, near-equal, together the whole file */
        for (int parts = 1; parts <= 4; parts++) {
          int64_t next = 0;
          for (int part = 0; part < parts; part++) {
            int64_t first = -1, total = -1;
            CHECK_OK(ctx, rdx_npy_read_share(ctx, path, part, parts, &b, &nd, &first, &total));
            CHECK_EQ(nd, ndim);
            CHECK_EQ(first, next);
            CHECK_EQ(total, n);
            CHECK_EQ(b.count, n / parts + (part < n % parts));
            CHECK(b.count == 0 || memcmp(b.data, data + (size_t)first * cols * es, (size_t)b.count * cols * es) == 0);
            next += b.count;
            rdx_npy_free(&b);
          }
          CHECK_EQ(next, n);
        }
        CHECK(rdx_npy_read_share(ctx, path, 2, 2, &b, &nd, NULL, NULL) == RDX_ERR_INVALID_ARGUMENT);
        free(data);
      }

  CASE(npy_malformed);
  unsigned char buf[4096];
  size_t len;
  rdx_array a;
  CHECK_STATUS(ctx, rdx_npy_read(ctx, "/nonexistent/raydex.npy", &a, NULL), RDX_ERR_IO);
  CHECK(strstr(rdx_context_message(ctx), "cannot open") != NULL);
  expect_parse_error(ctx, "hello", 5, "not a .npy file");
  expect_parse_error(ctx, "", 0, "not a .npy file");
  len = make(buf, "{'descr': '<u4', 'fortran_order': False, 'shape': (10,), }", 40);
  expect_parse_error(ctx, buf, len - 1, "truncated");
  expect_parse_error(ctx, buf, 20, "truncated");
  memcpy(buf + len, "xx", 2);
  expect_parse_error(ctx, buf, len + 2, "trailing bytes");
  len = make(buf, "{'descr': '>u4', 'fortran_order': False, 'shape': (10,), }", 40);
  expect_parse_error(ctx, buf, len, "dtype '>u4'");
  len = make(buf, "{'descr': '<i4', 'fortran_order': False, 'shape': (10,), }", 40);
  expect_parse_error(ctx, buf, len, "dtype '<i4'");
  len = make(buf, "{'descr': '<u8', 'fortran_order': True, 'shape': (3, 2), }", 48);
  expect_parse_error(ctx, buf, len, "Fortran");
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (2, 2, 2), }", 64);
  expect_parse_error(ctx, buf, len, "more than 2 dimensions");
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (), }", 8);
  expect_parse_error(ctx, buf, len, "scalar");
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0);
  expect_parse_error(ctx, buf, len, "shape");
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 0);
  expect_parse_error(ctx, buf, len, "overflows");
  len = make(buf, "{'descr': '<u8', 'shape': (1,), }", 8);
  expect_parse_error(ctx, buf, len, "lacks fortran_order");
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 8);
  expect_parse_error(ctx, buf, len, "unknown key");
  len = make(buf, "['descr']", 0);
  expect_parse_error(ctx, buf, len, "not a dict");
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", 8);
  buf[6] = 9;
  expect_parse_error(ctx, buf, len, "format version 9.0");

  CASE(npy_strict_header);
  /* numpy's reader refuses these (ast.literal_eval, then the exact key set and value types); so
   * does this one, and its messages quote the header's bytes escaped */
  static const struct {
    const char *dict, *needle;
  } refused[] = {
      {"{'descr': '<u8', 'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", "repeats the key 'descr'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), } x", "has 'x"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }}", "has '}"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }\n ", "byte 0x0a at offset 57"},
      {"{'descr': '<u8', 'fortran_order': False,\t'shape': (1,), }", "byte 0x09 at offset 40"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), \x1b}", "byte 0x1b"},
      {"{'descr': '<\xc3\xa4" "8', 'fortran_order': False, 'shape': (1,), }", "byte 0xc3"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,,), }", "malformed shape ('(1,,)'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (,), }", "malformed shape ('(,)'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (-1,), }", "malformed shape ('(-1,)'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (+1,), }", "malformed shape"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1 1), }", "malformed shape ('(1 1)'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1), }", "malformed shape ('(1)'"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (01,), }", "malformed shape"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': 1, }", "malformed shape"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,", "malformed shape"},
      {"{'descr': '<u8', 'fortran_order': Falsey, 'shape': (1,), }", "malformed fortran_order ('Falsey'"},
      {"{'descr': '<u8', 'fortran_order': True1, 'shape': (1,), }", "malformed fortran_order"},
      {"{'descr': '<u8', 'fortran_order': 0, 'shape': (1,), }", "malformed fortran_order"},
      {"{'descr': '<u8', 'fortran_order': false, 'shape': (1,), }", "malformed fortran_order"},
      {"{'descr': 8, 'fortran_order': False, 'shape': (1,), }", "malformed descr ('8'"},
      {"{'descr' '<u8', 'fortran_order': False, 'shape': (1,), }", "lacks ':' after 'descr'"},
      {"{'descr': '<u8' 'fortran_order': False, 'shape': (1,), }", "malformed after 'descr'"},
      {"{,}", "malformed key (',}')"},
      {"{'descr': '<u8',, 'fortran_order': False, 'shape': (1,), }", "malformed key"},
      {"{'de\\scr': '<u8', 'fortran_order': False, 'shape': (1,), }", "unknown key 'de\\\\scr'"},
      {"{'descr': '<u\\8', 'fortran_order': False, 'shape': (1,), }", "dtype '<u\\\\8'"},
      {"{}", "lacks descr"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    len = make(buf, refused[i].dict, 8);
    expect_parse_error(ctx, buf, len, refused[i].needle);
  }
  /* a NUL inside the header */
  len = make_version(buf, 1, "{'descr': '<u8',\0'fortran_order': False, 'shape': (1,), }", 56, 0, 8);
  expect_parse_error(ctx, buf, len, "byte 0x00 at offset 16");
  /* a long key is quoted capped */
  char dict[600];
  snprintf(dict, sizeof dict, "{'%0400d': 1, }", 7);
  len = make(buf, dict, 0);
  expect_parse_error(ctx, buf, len, "unknown key '0000");
  CHECK(strlen(rdx_context_message(ctx)) < 200 && strstr(rdx_context_message(ctx), "...'") != NULL);
  /* versions: x.1 and 4.0 are not numpy's */
  len = make(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", 8);
  buf[7] = 1;
  expect_parse_error(ctx, buf, len, "format version 1.1");
  buf[6] = 2;
  expect_parse_error(ctx, buf, len, "format version 2.1");
  buf[6] = 0, buf[7] = 0;
  expect_parse_error(ctx, buf, len, "format version 0.0");

  CASE(npy_strict_header_accepts_numpy);
  /* what numpy writes or reads, parsed to the same array */
  static const struct {
    const char *dict;
    int64_t rows;
    int cols, ndim;
  } accepted[] = {
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1, 2,), }", 1, 2, 2},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (2,)}", 2, 1, 1},
      {"{\"descr\": \"<u8\", \"fortran_order\": False, \"shape\": (2,), }", 2, 1, 1},
      {"{'shape': (2, 1), 'fortran_order': True, 'descr': '<u8', }", 2, 1, 2},
      {"{ 'descr' : '<u8' , 'fortran_order' : False , 'shape' : ( 2 , ) , }", 2, 1, 1},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (0,), }", 0, 1, 1},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (0, 3), }", 0, 3, 2},
  };
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
    for (int major = 1; major <= 3; major++) {
      size_t data = (size_t)accepted[i].rows * (size_t)accepted[i].cols * 8;
      len = make_version(buf, major, accepted[i].dict, strlen(accepted[i].dict), 0, data);
      rdx_array m;
      int nd = 0;
      rdx_status st = rdx_npy_parse(ctx, "accepted", buf, len, &m, &nd);
      if (st != RDX_OK) {
        CHECK_FAIL_("version %d.0, %s: %s", major, accepted[i].dict, rdx_context_message(ctx));
        continue;
      }
      CHECK_EQ(m.count, accepted[i].rows);
      CHECK_EQ(m.columns, accepted[i].cols);
      CHECK_EQ(nd, accepted[i].ndim);
      rdx_npy_free(&m);
    }
  /* no final newline (numpy does not insist on one) */
  {
    const char *d = "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }   ";
    len = make_version(buf, 1, d, strlen(d), 1, 8);
    rdx_array m;
    CHECK_OK(ctx, rdx_npy_parse(ctx, "raw", buf, len, &m, NULL));
    rdx_npy_free(&m);
  }

  CASE(npy_paths_escaped);
  CHECK_STATUS(ctx, rdx_npy_read(ctx, "/nonexistent/a\x01" "b\nc.npy", &a, NULL), RDX_ERR_IO);
  CHECK(strstr(rdx_context_message(ctx), "/nonexistent/a\\x01b\\x0ac.npy") != NULL);
  CHECK_STATUS(ctx, rdx_npy_read(ctx, "/tmp", &a, NULL), RDX_ERR_IO); /* a directory */
  CHECK(strstr(rdx_context_message(ctx), "/tmp is not a regular file") != NULL);
  CHECK(a.data == NULL);
  CHECK_STATUS(ctx, rdx_npy_write(ctx, "/nonexistent/\x7f.npy", rdx_host_array(buf, 1, RDX_U64), 1), RDX_ERR_IO);
  CHECK(strstr(rdx_context_message(ctx), "/nonexistent/\\x7f.npy") != NULL);

  CASE(npy_mutations);
  /* valid files, mutated at random: every outcome is OK or PARSE, never a crash or leak */
  for (int iter = 0; iter < 3000; iter++) {
    int cols = 1 + (int)check_below(3);
    len = make(buf, cols == 1 ? "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }"
                              : "{'descr': '<u4', 'fortran_order': False, 'shape': (4, 2), }",
               cols == 1 ? 40 : 32);
    int n_mut = 1 + (int)check_below(4);
    for (int k = 0; k < n_mut && len > 0; k++) {
      size_t at = check_below(len);
      switch (check_below(3)) {
        case 0: buf[at] = (unsigned char)check_rand_(); break;
        case 1: len = at; break;                                   /* truncate */
        default: buf[at] = "0123456789(),:' {}TF"[check_below(20)]; /* plausible characters */
      }
    }
    rdx_array m;
    int nd;
    rdx_status st = rdx_npy_parse(ctx, "mutant", buf, len, &m, &nd);
    CHECK(st == RDX_OK || st == RDX_ERR_PARSE);
    if (st == RDX_OK) CHECK(m.count >= 0 && m.columns >= 1);
    else CHECK(m.data == NULL && strlen(rdx_context_message(ctx)) > 10);
    rdx_npy_free(&m);
  }
  remove(path);
  return check_end(ctx);
}
