/*
 * npy.c: NumPy .npy reader and writer for the dtypes raydex uses (u32, u64, i64, f32, f64),
 * 1-D or 2-D, little-endian, C order, format versions 1.0, 2.0 and 3.0.
 *
 * The reader trusts nothing: the magic, version, header length, every dict key and value (as
 * strictly as numpy's own reader, see the grammar below), the shape's arithmetic (overflow) and
 * the exact data length are checked, and each failure names what was wrong, quoting the file's
 * bytes escaped. It parses from memory (rdx_npy_parse) so the fuzzer reaches every branch
 * without files.
 */
#include "io/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The header dict, read as numpy's read_array_header reads it (numpy/lib/format.py: the text is
 * ast.literal_eval'd, then its keys must be exactly descr, fortran_order and shape, shape a tuple
 * of ints, fortran_order a bool). The grammar is the part of Python's literals that numpy
 * writes, strict where literal_eval is loose:
 *   header := '{' [item (',' item)* [',']] '}' ' '* ['\n']      spaces allowed between tokens
 *   item   := key ':' value, each of the three keys once, quoted with ' or "
 *   shape  := '(' ')' | '(' int ',' ')' | '(' int (',' int)+ [','] ')'   int := 0 | [1-9][0-9]*
 *   fortran_order := True | False                descr := a quoted string
 * Every header byte is printable ASCII except the final newline, so no NUL or control byte
 * reaches a message; the bytes a message quotes are escaped all the same. */
typedef struct cursor {
  const char *p, *end;
} cursor;

static void spaces(cursor *c) {
  while (c->p < c->end && *c->p == ' ') c->p++;
}

/* Skip spaces, then consume ch if it is next. */
static int take(cursor *c, char ch) {
  spaces(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string: *s and *n receive its contents (no escapes are decoded). */
static int parse_str(cursor *c, const char **s, size_t *n) {
  spaces(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
  char q = *c->p++;
  const char *close = memchr(c->p, q, (size_t)(c->end - c->p));
  if (close == NULL) return 0;
  *s = c->p;
  *n = (size_t)(close - c->p);
  c->p = close + 1;
  return 1;
}

/* A non-negative decimal integer as Python writes one: no sign, no leading zero, below 2^63. */
static int parse_int(cursor *c, int64_t *v) {
  spaces(c);
  const char *s = c->p;
  int64_t x = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    if (x > (INT64_MAX - 9) / 10) return 0;
    x = x * 10 + (*c->p++ - '0');
  }
  if (c->p == s || (*s == '0' && c->p - s > 1)) return 0;
  *v = x;
  return 1;
}

/* A tuple of at most 2 ints: 1 on success, 0 malformed, -1 more than 2 dimensions. */
static int parse_shape(cursor *c, int64_t shape[2], int *ndim) {
  *ndim = 0;
  if (!take(c, '(')) return 0;
  if (take(c, ')')) return 1; /* () is 0-D */
  for (;;) {
    int64_t v;
    if (!parse_int(c, &v)) return 0;
    if (*ndim == 2) return -1;
    shape[(*ndim)++] = v;
    if (take(c, ')')) return *ndim > 1; /* (5) is an int, not a tuple */
    if (!take(c, ',')) return 0;
    if (take(c, ')')) return 1;
  }
}

/* True or False as a whole word. */
static int parse_bool(cursor *c, int *v) {
  spaces(c);
  size_t left = (size_t)(c->end - c->p), n = 0;
  if (left >= 4 && memcmp(c->p, "True", 4) == 0) n = 4, *v = 1;
  else if (left >= 5 && memcmp(c->p, "False", 5) == 0) n = 5, *v = 0;
  else return 0;
  char next = n < left ? c->p[n] : ' ';
  if ((next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') || (next >= '0' && next <= '9') || next == '_')
    return 0;
  c->p += n;
  return 1;
}

/* The header text from `at` to the first `close` (included if it is a bracket) or 32 bytes,
 * without the padding after it, escaped, for a message. */
static const char *quote_from(const char *at, const char *end, char close, char *buf, size_t cap) {
  const char *stop = at;
  while (stop < end && stop - at < 32 && *stop != close) stop++;
  if (stop < end && *stop == close && (close == ')' || close == '}')) stop++;
  while (stop > at && (stop[-1] == ' ' || stop[-1] == '\n')) stop--;
  return rdx_escape(buf, cap, at, (size_t)(stop - at));
}

static const struct {
  const char *descr;
  rdx_dtype dtype;
} dtypes[] = {{"<u4", RDX_U32}, {"<u8", RDX_U64}, {"<i8", RDX_I64}, {"<f4", RDX_F32}, {"<f8", RDX_F64}};
#define N_DTYPES (sizeof dtypes / sizeof dtypes[0])

static int dtype_of(const char *descr, size_t n, rdx_dtype *dt) {
  for (size_t i = 0; i < N_DTYPES; i++)
    if (strlen(dtypes[i].descr) == n && memcmp(descr, dtypes[i].descr, n) == 0) {
      *dt = dtypes[i].dtype;
      return 1;
    }
  return 0;
}

static const char *descr_of(rdx_dtype dt) {
  for (size_t i = 0; i < N_DTYPES; i++)
    if (dtypes[i].dtype == dt) return dtypes[i].descr;
  return NULL;
}

#define PARSE_FAIL(...) return rdx_fail(ctx, RDX_ERR_PARSE, __VA_ARGS__)

/* The header of a .npy file of file_len bytes whose first len bytes are at buf: out's dtype,
 * count and columns (no data), and where the data starts. The data's length, file_len less the
 * header, must be exactly what the shape needs. */
static rdx_status parse_header(rdx_context *ctx, const char *name, const void *buf, size_t len, size_t file_len,
                               rdx_array *out, int *ndim_out, size_t *data_start) {
  const unsigned char *b = (const unsigned char *)buf;
  memset(out, 0, sizeof *out);
  out->dtype = RDX_U64;
  out->where = RDX_HOST;
  out->columns = 1;
  char file[256], text[RDX_ESCAPE_SHORT];
  rdx_escape(file, sizeof file, name, strlen(name));
  if (len < 10 || memcmp(b, MAGIC, 6) != 0)
    PARSE_FAIL("rdx_npy_read: %s is not a .npy file (no \\x93NUMPY magic)", file);
  unsigned major = b[6], minor = b[7];
  size_t hlen, hstart;
  if (major < 1 || major > 3 || minor != 0)
    PARSE_FAIL("rdx_npy_read: %s has format version %u.%u (1.0, 2.0 and 3.0 supported)", file, major, minor);
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    hstart = 10;
  } else {
    if (len < 12) PARSE_FAIL("rdx_npy_read: %s is truncated in its header length", file);
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    hstart = 12;
  }
  if (hlen > len - hstart)
    PARSE_FAIL("rdx_npy_read: %s is truncated: header of %zu bytes, file of %zu", file, hlen, len);
  const char *h = (const char *)b + hstart;
  for (size_t i = 0; i < hlen; i++) {
    unsigned char ch = (unsigned char)h[i];
    if ((ch < 0x20 || ch > 0x7E) && !(ch == '\n' && i == hlen - 1))
      PARSE_FAIL("rdx_npy_read: %s header has byte 0x%02x at offset %zu (printable ASCII and a final newline only)",
                 file, ch, i);
  }
  static const char *const keys[3] = {"descr", "fortran_order", "shape"};
  int have[3] = {0, 0, 0}, fortran = 0, ndim = 0;
  const char *descr = "";
  size_t descr_len = 0;
  int64_t shape[2] = {0, 1};
  cursor c = {h, h + hlen};
  if (!take(&c, '{')) PARSE_FAIL("rdx_npy_read: %s header is not a dict ('%s')", file, quote_from(h, c.end, '}', text, sizeof text));
  while (!take(&c, '}')) {
    const char *key, *at;
    size_t key_len;
    int k = 0;
    if (!parse_str(&c, &key, &key_len))
      PARSE_FAIL("rdx_npy_read: %s header has a malformed key ('%s')", file, quote_from(c.p, c.end, ':', text, sizeof text));
    while (k < 3 && !(strlen(keys[k]) == key_len && memcmp(key, keys[k], key_len) == 0)) k++;
    if (k == 3) PARSE_FAIL("rdx_npy_read: %s header has an unknown key '%s'", file, rdx_escape(text, sizeof text, key, key_len));
    if (have[k]) PARSE_FAIL("rdx_npy_read: %s header repeats the key '%s'", file, keys[k]);
    have[k] = 1;
    if (!take(&c, ':')) PARSE_FAIL("rdx_npy_read: %s header lacks ':' after '%s'", file, keys[k]);
    spaces(&c);
    at = c.p;
    if (k == 0 && !parse_str(&c, &descr, &descr_len))
      PARSE_FAIL("rdx_npy_read: %s has a malformed descr ('%s')", file, quote_from(at, c.end, ',', text, sizeof text));
    if (k == 1 && !parse_bool(&c, &fortran))
      PARSE_FAIL("rdx_npy_read: %s has a malformed fortran_order ('%s'; True or False)", file,
                 quote_from(at, c.end, ',', text, sizeof text));
    if (k == 2) {
      int r = parse_shape(&c, shape, &ndim);
      if (r < 0) PARSE_FAIL("rdx_npy_read: %s has more than 2 dimensions (1-D or 2-D supported)", file);
      if (r == 0)
        PARSE_FAIL("rdx_npy_read: %s has a malformed shape ('%s'; a tuple of non-negative integers below 2^63)", file,
                   quote_from(at, c.end, ')', text, sizeof text));
    }
    if (take(&c, ',')) continue;
    if (take(&c, '}')) break;
    PARSE_FAIL("rdx_npy_read: %s header is malformed after '%s' ('%s')", file, keys[k],
               quote_from(c.p, c.end, ',', text, sizeof text));
  }
  spaces(&c);
  if (c.p < c.end && !(c.p + 1 == c.end && *c.p == '\n'))
    PARSE_FAIL("rdx_npy_read: %s has '%s' after the header's closing '}'", file,
               rdx_escape(text, sizeof text, c.p, (size_t)(c.end - c.p)));
  for (int k = 0; k < 3; k++)
    if (!have[k]) PARSE_FAIL("rdx_npy_read: %s header lacks %s", file, keys[k]);
  if (!dtype_of(descr, descr_len, &out->dtype))
    PARSE_FAIL("rdx_npy_read: %s has dtype '%s' (supported: <u4 <u8 <i8 <f4 <f8, little-endian)", file,
               rdx_escape(text, sizeof text, descr, descr_len));
  if (ndim == 0) PARSE_FAIL("rdx_npy_read: %s holds a scalar (0-D); 1-D or 2-D expected", file);
  if (fortran && ndim == 2 && shape[0] > 1 && shape[1] > 1)
    PARSE_FAIL("rdx_npy_read: %s is in Fortran order; write it with C order", file);
  if (ndim == 2 && (shape[1] < 1 || shape[1] > INT32_MAX))
    PARSE_FAIL("rdx_npy_read: %s has %lld columns", file, (long long)shape[1]);
  size_t need, data_len = file_len - hstart - hlen;
  if (!rdx_size_rows(shape[0], shape[1], rdx_dtype_size(out->dtype), &need))
    PARSE_FAIL("rdx_npy_read: %s shape (%lld, %lld) overflows", file, (long long)shape[0], (long long)shape[1]);
  if (data_len != need)
    PARSE_FAIL("rdx_npy_read: %s holds %zu data bytes but its shape needs %zu (%s)", file, data_len,
               need, data_len < need ? "truncated" : "trailing bytes");
  out->count = shape[0];
  out->columns = (int32_t)shape[1];
  if (ndim_out) *ndim_out = ndim;
  *data_start = hstart + hlen;
  return RDX_OK;
}

rdx_status rdx_npy_parse(rdx_context *ctx, const char *name, const void *buf, size_t len,
                         rdx_array *out, int *ndim_out) {
  size_t start = 0;
  int ndim = 0;
  RDX_CHECK(parse_header(ctx, name, buf, len, len, out, &ndim, &start));
  const size_t need = len - start;
  void *data = malloc(need ? need : 1);
  if (data == NULL) {
    char file[256];
    rdx_escape(file, sizeof file, name, strlen(name));
    memset(out, 0, sizeof *out);
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_npy_read: %zu bytes for %s", need, file);
  }
  memcpy(data, (const char *)buf + start, need);
  out->data = data;
  if (ndim_out) *ndim_out = ndim;
  return RDX_OK;
}

rdx_status rdx_npy_read(rdx_context *ctx, const char *path, rdx_array *out, int *ndim) {
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL || path == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_read: %s is NULL", out ? "path" : "out");
  memset(out, 0, sizeof *out);
  char file[256];
  rdx_escape(file, sizeof file, path, strlen(path));
  FILE *f = fopen(path, "rb");
  if (f == NULL) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot open %s (%s)", file, strerror(errno));
  rdx_status st = RDX_OK;
  char *buf = NULL;
  struct stat info;
  long len = -1;
  /* a directory opens and reports a huge size: only a regular file is sized and read */
  if (fstat(fileno(f), &info) != 0 || !S_ISREG(info.st_mode)) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: %s is not a regular file", file);
  } else if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot size %s (%s)", file, strerror(errno));
  } else if ((buf = (char *)malloc((size_t)len + 1)) == NULL) {
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_npy_read: %ld bytes for %s", len, file);
  } else if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot read %s", file);
  } else {
    st = rdx_npy_parse(ctx, path, buf, (size_t)len, out, ndim);
  }
  free(buf);
  fclose(f);
  return st;
}

rdx_status rdx_npy_read_share(rdx_context *ctx, const char *path, int part, int n_parts, rdx_array *out, int *ndim,
                              int64_t *first_row, int64_t *total_rows) {
  RDX_CHECK(rdx_check_context(ctx));
  if (out == NULL || path == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_read: %s is NULL", out ? "path" : "out");
  if (n_parts < 1 || part < 0 || part >= n_parts)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_read: part %d of %d", part, n_parts);
  memset(out, 0, sizeof *out);
  char file[256];
  rdx_escape(file, sizeof file, path, strlen(path));
  FILE *f = fopen(path, "rb");
  if (f == NULL) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot open %s (%s)", file, strerror(errno));
  rdx_status st = RDX_OK;
  unsigned char pre[12];
  char *head = NULL;
  struct stat info;
  size_t got = 0, hlen = 0, start = 0;
  rdx_array h;
  memset(&h, 0, sizeof h);
  /* the header alone is read first (its length is in the first 10 or 12 bytes), then the rows */
  if (fstat(fileno(f), &info) != 0 || !S_ISREG(info.st_mode)) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: %s is not a regular file", file);
    goto done;
  }
  got = fread(pre, 1, sizeof pre, f);
  hlen = got < 10 ? got : pre[6] == 1 ? 10 + ((size_t)pre[8] | (size_t)pre[9] << 8)
                        : got < 12 ? got : 12 + ((size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                                                 (size_t)pre[11] << 24);
  if (hlen > (size_t)info.st_size) hlen = (size_t)info.st_size; /* parse_header says it is truncated */
  if ((head = (char *)malloc(hlen + 1)) == NULL) {
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_npy_read: %zu header bytes for %s", hlen, file);
    goto done;
  }
  if (fseek(f, 0, SEEK_SET) != 0 || fread(head, 1, hlen, f) != hlen) {
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot read %s", file);
    goto done;
  }
  RDX_CHECK_GOTO(parse_header(ctx, path, head, hlen, (size_t)info.st_size, &h, ndim, &start), st, done);
  const int64_t first = h.count / n_parts * part + (h.count % n_parts < part ? h.count % n_parts : part);
  const int64_t count = h.count / n_parts + (part < h.count % n_parts);
  const size_t row = (size_t)h.columns * rdx_dtype_size(h.dtype), bytes = (size_t)count * row;
  void *data = malloc(bytes ? bytes : 1);
  if (data == NULL) {
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_npy_read: %zu bytes for %s", bytes, file);
    goto done;
  }
  if (fseeko(f, (off_t)(start + (size_t)first * row), SEEK_SET) != 0 || fread(data, 1, bytes, f) != bytes) {
    free(data);
    st = rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_read: cannot read rows %lld..%lld of %s", (long long)first,
                  (long long)(first + count), file);
    goto done;
  }
  *out = h;
  out->data = data;
  out->count = count;
  if (first_row) *first_row = first;
  if (total_rows) *total_rows = h.count;
done:
  free(head);
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
  char file[256];
  rdx_escape(file, sizeof file, path, strlen(path));
  size_t bytes;
  if (!rdx_size_rows(a.count, a.columns, rdx_dtype_size(a.dtype), &bytes)) /* rdx_array_check bounds it */
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_npy_write: a.count %lld overflows size_t", (long long)a.count);
  FILE *f = fopen(path, "wb");
  if (f == NULL) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_write: cannot create %s (%s)", file, strerror(errno));
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)hlen, f) == (size_t)hlen &&
           (bytes == 0 || fwrite(a.data, 1, bytes, f) == bytes);
  ok = (fclose(f) == 0) && ok;
  if (!ok) return rdx_fail(ctx, RDX_ERR_IO, "rdx_npy_write: cannot write %s (%s)", file, strerror(errno));
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
