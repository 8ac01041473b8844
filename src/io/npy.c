/*
 * npy.c: NumPy .npy reader and writer for the dtypes raydex uses (u32, u64, i64, f32, f64),
 * 1-D or 2-D, little-endian, C order, format versions 1.0, 2.0 and 3.0.
 *
 * The reader trusts nothing: the magic, version, header length, every dict key and value, the
 * shape's arithmetic (overflow) and the exact data length are checked, and each failure names
 * what was wrong. It parses from memory (rdx_npy_parse) so the fuzzer reaches every branch
 * without files.
 */
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* Parse a non-negative decimal integer; returns NULL on overflow or no digits. */
static const char *parse_int(const char *p, const char *end, int64_t *v) {
  int64_t x = 0;
  const char *s = p;
  while (p < end && *p >= '0' && *p <= '9') {
    if (x > (INT64_MAX - 9) / 10) return NULL;
    x = x * 10 + (*p - '0');
    p++;
  }
  if (p == s) return NULL;
  *v = x;
  return p;
}

/* Parse a quoted string 'abc' or "abc" into buf. */
static const char *parse_str(const char *p, const char *end, char *buf, size_t cap) {
  if (p >= end || (*p != '\'' && *p != '"')) return NULL;
  char q = *p++;
  size_t n = 0;
  while (p < end && *p != q) {
    if (n + 1 >= cap) return NULL;
    buf[n++] = *p++;
  }
  if (p >= end) return NULL;
  buf[n] = '\0';
  return p + 1;
}

static int dtype_of(const char *descr, rdx_dtype *dt) {
  static const struct {
    const char *d;
    rdx_dtype t;
  } map[] = {{"<u4", RDX_U32}, {"<u8", RDX_U64}, {"<i8", RDX_I64}, {"<f4", RDX_F32}, {"<f8", RDX_F64}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(descr, map[i].d) == 0) {
      *dt = map[i].t;
      return 1;
    }
  return 0;
}

static const char *descr_of(rdx_dtype dt) {
  switch (dt) {
    case RDX_U32: return "<u4";
    case RDX_U64: return "<u8";
    case RDX_I64: return "<i8";
    case RDX_F32: return "<f4";
    case RDX_F64: return "<f8";
  }
  return NULL;
}

#define PARSE_FAIL(...) return rdx_fail(ctx, RDX_ERR_PARSE, __VA_ARGS__)

rdx_status rdx_npy_parse(rdx_context *ctx, const char *name, const void *buf, size_t len,
                         rdx_array *out, int *ndim_out) {
  const unsigned char *b = (const unsigned char *)buf;
  memset(out, 0, sizeof *out);
  out->dtype = RDX_U64;
  out->where = RDX_HOST;
  out->columns = 1;
  if (len < 10 || memcmp(b, MAGIC, 6) != 0)
    PARSE_FAIL("rdx_npy_read: %s is not a .npy file (no \\x93NUMPY magic)", name);
  unsigned major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) PARSE_FAIL("rdx_npy_read: %s is truncated in its header length", name);
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    hstart = 12;
  } else {
    PARSE_FAIL("rdx_npy_read: %s has format version %u.%u (1.0 to 3.0 supported)", name, major, b[7]);
  }
  if (hlen > len - hstart)
    PARSE_FAIL("rdx_npy_read: %s is truncated: header of %zu bytes, file of %zu", name, hlen, len);
  const char *p = (const char *)b + hstart, *end = p + hlen;
  char descr[16] = "";
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  int64_t shape[2] = {0, 1};
  int ndim = 0;
  p = skip_ws(p, end);
  if (p >= end || *p != '{') PARSE_FAIL("rdx_npy_read: %s header is not a dict", name);
  p++;
  for (;;) {
    p = skip_ws(p, end);
    if (p < end && *p == '}') break;
    char key[32];
    p = parse_str(p, end, key, sizeof key);
    if (p == NULL) PARSE_FAIL("rdx_npy_read: %s header has a malformed key", name);
    p = skip_ws(p, end);
    if (p >= end || *p != ':') PARSE_FAIL("rdx_npy_read: %s header lacks ':' after '%s'", name, key);
    p = skip_ws(p + 1, end);
    if (strcmp(key, "descr") == 0) {
      p = parse_str(p, end, descr, sizeof descr);
      if (p == NULL) PARSE_FAIL("rdx_npy_read: %s has a malformed descr", name);
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0) {
      if (end - p >= 4 && memcmp(p, "True", 4) == 0) {
        fortran = 1;
        p += 4;
      } else if (end - p >= 5 && memcmp(p, "False", 5) == 0) {
        p += 5;
      } else {
        PARSE_FAIL("rdx_npy_read: %s has a malformed fortran_order", name);
      }
      have_order = 1;
    } else if (strcmp(key, "shape") == 0) {
      if (p >= end || *p != '(') PARSE_FAIL("rdx_npy_read: %s has a malformed shape", name);
      p = skip_ws(p + 1, end);
      while (p < end && *p != ')') {
        int64_t v;
        if (ndim == 2) PARSE_FAIL("rdx_npy_read: %s has more than 2 dimensions (1-D or 2-D supported)", name);
        p = parse_int(p, end, &v);
        if (p == NULL) PARSE_FAIL("rdx_npy_read: %s has a malformed or huge shape entry", name);
        shape[ndim++] = v;
        p = skip_ws(p, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
      }
      if (p >= end) PARSE_FAIL("rdx_npy_read: %s has an unterminated shape", name);
      p++;
      have_shape = 1;
    } else {
      PARSE_FAIL("rdx_npy_read: %s header has an unknown key '%s'", name, key);
    }
    p = skip_ws(p, end);
    if (p < end && *p == ',') p++;
    else if (p < end && *p == '}') break;
    else PARSE_FAIL("rdx_npy_read: %s header is malformed after '%s'", name, key);
  }
  if (!have_descr || !have_order || !have_shape)
    PARSE_FAIL("rdx_npy_read: %s header lacks %s", name,
               !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  if (!dtype_of(descr, &out->dtype))
    PARSE_FAIL("rdx_npy_read: %s has dtype '%s' (supported: <u4 <u8 <i8 <f4 <f8, little-endian)", name,
               descr);
  if (ndim == 0) PARSE_FAIL("rdx_npy_read: %s holds a scalar (0-D); 1-D or 2-D expected", name);
  if (fortran && ndim == 2 && shape[0] > 1 && shape[1] > 1)
    PARSE_FAIL("rdx_npy_read: %s is in Fortran order; write it with C order", name);
  if (ndim == 2 && (shape[1] < 1 || shape[1] > INT32_MAX))
    PARSE_FAIL("rdx_npy_read: %s has %lld columns", name, (long long)shape[1]);
  size_t esz = rdx_dtype_size(out->dtype);
  size_t data_len = len - hstart - hlen;
  if (shape[0] > (int64_t)(SIZE_MAX / esz / (size_t)shape[1]))
    PARSE_FAIL("rdx_npy_read: %s shape overflows", name);
  size_t need = (size_t)shape[0] * (size_t)shape[1] * esz;
  if (data_len != need)
    PARSE_FAIL("rdx_npy_read: %s holds %zu data bytes but its shape needs %zu (%s)", name, data_len,
               need, data_len < need ? "truncated" : "trailing bytes");
  void *data = malloc(need ? need : 1);
  if (data == NULL)
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_npy_read: %zu bytes for %s", need, name);
  memcpy(data, b + hstart + hlen, need);
  out->data = data;
  out->count = shape[0];
  out->columns = (int32_t)shape[1];
  if (ndim_out) *ndim_out = ndim;
  return RDX_OK;
}

rdx_status rdx_npy_read(rdx_context *ctx, const char *path, rdx_array *out, int *ndim) {
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL || path == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_read: %s is NULL", out ? "path" : "out");
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (f == NULL) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot open %s (%s)", path, strerror(errno));
  rdx_status st = RDX_OK;
  char *buf = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot size %s (%s)", path, strerror(errno));
  } else if ((buf = (char *)malloc((size_t)len + 1)) == NULL) {
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_npy_read: %ld bytes for %s", len, path);
  } else if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot read %s", path);
  } else {
    st = rdx_npy_parse(ctx, path, buf, (size_t)len, out, ndim);
  }
  free(buf);
  fclose(f);
  return st;
}

rdx_status rdx_npy_write(rdx_context *ctx, const char *path, rdx_array a, int ndim) {
  RDX_CHECK(rdx_check_context(ctx));
  if (path == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_write: path is NULL");
  RDX_CHECK(rdx_array_check(ctx, "rdx_npy_write", "a", a));
  if (a.where == RDX_DEVICE)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_write: a must be host memory");
  if (ndim != 1 && ndim != 2)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_write: ndim %d is not 1 or 2", ndim);
  if (ndim == 1 && a.columns != 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_write: a 1-D file needs columns 1 (%d)", a.columns);
  const char *descr = descr_of(a.dtype);
  char header[256];
  int h = ndim == 1
              ? snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
                         descr, (long long)a.count)
              : snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %d), }",
                         descr, (long long)a.count, a.columns);
  /* pad with spaces so the data starts on a 64-byte boundary, newline-terminated (format 1.0) */
  int total = 10 + h + 1;
  int pad = (64 - total % 64) % 64;
  memset(header + h, ' ', (size_t)pad);
  header[h + pad] = '\n';
  int hlen = h + pad + 1;
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 255),
                           (unsigned char)(hlen >> 8)};
  FILE *f = fopen(path, "wb");
  if (f == NULL) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_write: cannot create %s (%s)", path, strerror(errno));
  size_t bytes = (size_t)a.count * (size_t)a.columns * rdx_dtype_size(a.dtype);
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)hlen, f) == (size_t)hlen &&
           (bytes == 0 || fwrite(a.data, 1, bytes, f) == bytes);
  ok = (fclose(f) == 0) && ok;
  if (!ok) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_write: cannot write %s (%s)", path, strerror(errno));
  return RDX_OK;
}

void rdx_npy_free(rdx_array *a) {
  if (a == NULL) return;
  free(a->data);
  memset(a, 0, sizeof *a);
  a->dtype = RDX_U64;
  a->where = RDX_HOST;
  a->columns = 1;
}
