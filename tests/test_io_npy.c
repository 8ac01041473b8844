/*
 * test_io_npy.c: the .npy reader and writer: round trips of every supported dtype and shape,
 * and every malformed input the reader must refuse with RDX_ERR_PARSE and a sentence (truncated
 * header or data, garbage, wrong magic, big-endian or unknown dtypes, Fortran order, 0-D and 3-D
 * arrays, overflowing shapes, trailing bytes), plus a mutation loop over valid files (the CI
 * stand-in for tests/fuzz/fuzz_npy.c) that must never crash or leak.
 */
#include "check.h"
#include "io/io.h"

#include <unistd.h>

static char path[256];

static void write_raw(const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
}

/* a header-only .npy (format 1.0) with the given dict, followed by `data` bytes */
static size_t make(unsigned char *buf, const char *dict, size_t data) {
  size_t h = strlen(dict);
  size_t total = 10 + h + 1, pad = (64 - total % 64) % 64;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  size_t hl = h + pad + 1;
  buf[8] = (unsigned char)(hl & 255);
  buf[9] = (unsigned char)(hl >> 8);
  memcpy(buf + 10, dict, h);
  memset(buf + 10 + h, ' ', pad);
  buf[10 + h + pad] = '\n';
  for (size_t i = 0; i < data; i++) buf[10 + hl + i] = (unsigned char)(i * 7);
  return 10 + hl + data;
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
  expect_parse_error(ctx, buf, len, "format version 9");

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
