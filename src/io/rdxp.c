/*
 * rdxp.c: raydex's binary polygon layer format (.rdxp), for fast reloads and for machines
 * without GDAL. It stores a layer as rdx_polygons_create left it (rings closed implicitly,
 * duplicates merged, orientation normalized), so a reload makes the identical layer.
 *
 * Version 1. Every integer and float is little-endian; sections follow the header in this order
 * with no gaps, each padded so the next starts 8-aligned in the file:
 *
 *   offset  bytes         field
 *   0       8             magic "RDXPOLY\0"
 *   8       4             version, u32 = 1 (a reader refuses a larger one)
 *   12      4             coordinate dtype, u32: 0x304 f32 or 0x305 f64 (rdx_dtype's numbers)
 *   16      8             n_features, u64
 *   24      8             n_rings, u64
 *   32      8             n_vertices, u64 (kept vertices: no closing repeats)
 *   40      32            bounding box, f64: lo x, lo y, hi x, hi y (+inf, +inf, -inf, -inf empty)
 *   72      4             flags, u32: bit 0 RDXP_FLAG_NORMALIZED, the other bits 0 (a version 1
 *                         reader refuses others)
 *   76      4             CRC32C of bytes [0, 76)
 *   80      8 (nf + 1)    feature offsets, u64: feature f owns rings [fo[f], fo[f + 1])
 *           4 + 4         CRC32C of the section's data, then 4 zero bytes
 *           8 (nr + 1)    ring offsets, u64: ring r owns vertices [ro[r], ro[r + 1])
 *           4 + 4         CRC32C, 4 zero bytes
 *           2 nv size     coordinates x, y per vertex, in the dtype (f32 stays f32)
 *           4 + 4         CRC32C, 4 zero bytes; the file ends here
 *
 * The checks on reading, in order, each an RDX_ERR_PARSE naming what is wrong: at least a header's
 * bytes, the magic, the version, the header's checksum, dtype and flags, the sizes the counts
 * imply (overflow-checked) against the file's length (truncated, or bytes after the end), then each
 * section's checksum and padding. The geometry is checked afterwards by rdx_polygons_create's
 * validation, as for any other input, except for one step: a layer whose flags have
 * RDXP_FLAG_NORMALIZED (rdx_polygons_save sets it: a saved layer is one rdx_polygons_create made)
 * keeps its rings' orientation as stored, since normalizing a normalized layer changes nothing
 * (layer_orient.c) and costs more than the rest of a load. A file that sets the flag over rings
 * that are not normalized gets wrong join answers, never a fault: orientation is read, not
 * trusted for memory. Files written before the flag existed (flags 0) are normalized on load.
 * CRC32C is computed with SSE4.2's crc32 instruction where the CPU has it, else slice-by-8 (Intel's
 * method, Kounavis and Berry 2005), so a checksum costs less than reading the file.
 */
#include "io/layers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char MAGIC[8] = {'R', 'D', 'X', 'P', 'O', 'L', 'Y', 0};

/* ---- CRC32C ---- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 255];
}

static uint32_t crc_soft(uint32_t crc, const unsigned char *p, size_t len) {
  pthread_once(&crc_once, crc_init);
  crc = ~crc;
  while (len >= 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    crc = crc_table[7][lo & 255] ^ crc_table[6][(lo >> 8) & 255] ^ crc_table[5][(lo >> 16) & 255] ^
          crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
    p += 8;
    len -= 8;
  }
  while (len--) crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 255];
  return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* SSE4.2's crc32 instruction computes this very CRC (the Castagnoli polynomial, reflected) 8 bytes
 * at a time, about 4x the tables' speed, so reading a large layer is not bound by its checksums. */
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const unsigned char *p, size_t len) {
  uint64_t c = ~crc;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = (uint32_t)c;
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#endif

uint32_t rdx_crc32c(uint32_t crc, const void *buf, size_t len) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("sse4.2")) return crc_sse42(crc, (const unsigned char *)buf, len);
#endif
  return crc_soft(crc, (const unsigned char *)buf, len);
}

/* ---- little-endian fields ---- */

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }
static double get_f64(const unsigned char *p) {
  uint64_t u = get_u64(p);
  double d;
  memcpy(&d, &u, 8);
  return d;
}
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_f64(unsigned char *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  put_u64(p, u);
}

static int host_is_little_endian(void) {
  const uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* ---- reading ---- */

void rdx_layer_file_free(rdx_context *ctx, rdx_layer_file *f) {
  if (f->block) rdx_mem_free(ctx, f->block);
  if (f->file) rdx_mem_free(ctx, f->file);
  if (f->map) munmap(f->map, f->map_len);
  memset(f, 0, sizeof *f);
}

/* The file's sections: byte offsets and sizes, from the header's counts. 0 when they do not fit
 * 2^63 bytes (a hostile header). */
typedef struct sections {
  uint64_t at[3], bytes[3], total;
} sections;

static int section_sizes(uint64_t nf, uint64_t nr, uint64_t nv, size_t es, sections *s) {
  const uint64_t lim = (uint64_t)1 << 58; /* far past any file, far from overflow below */
  if (nf >= lim || nr >= lim || nv >= lim) return 0;
  s->bytes[0] = 8 * (nf + 1), s->bytes[1] = 8 * (nr + 1), s->bytes[2] = 2 * es * nv;
  uint64_t at = RDXP_HEADER_BYTES;
  for (int i = 0; i < 3; i++) {
    s->at[i] = at;
    at += s->bytes[i] + 8; /* data, CRC32C, 4 zero bytes; every size is a multiple of 8 */
  }
  s->total = at;
  return 1;
}

static const char *SECTION_NAME[3] = {"feature offsets", "ring offsets", "coordinates"};

rdx_status rdx_rdxp_parse(rdx_context *ctx, const char *fn, const void *buf, size_t len, rdx_layer_file *out) {
  memset(out, 0, sizeof *out);
  const unsigned char *b = (const unsigned char *)buf;
  if (len < 8 || memcmp(b, MAGIC, 8) != 0) {
    char seen[RDX_ESCAPE_SHORT];
    rdx_escape(seen, sizeof seen, b, len < 8 ? len : 8);
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: not a raydex polygon layer (.rdxp): it begins \"%s\", not \"RDXPOLY\\x00\"",
                    fn, seen);
  }
  if (len < RDXP_HEADER_BYTES)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: truncated .rdxp file: %zu bytes, less than the %u of its header", fn, len,
                    RDXP_HEADER_BYTES);
  uint32_t version = get_u32(b + 8);
  if (version > RDXP_VERSION)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: .rdxp version %u is newer than this library reads (%u)", fn, version,
                    RDXP_VERSION);
  if (version == 0) return rdx_fail(ctx, RDX_ERR_PARSE, "%s: .rdxp version 0 does not exist", fn);
  uint32_t crc = get_u32(b + 76), want = rdx_crc32c(0, b, 76);
  if (crc != want)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted .rdxp header: checksum 0x%08x, the bytes give 0x%08x", fn, crc,
                    want);
  uint32_t dt = get_u32(b + 12), flags = get_u32(b + 72);
  if (dt != RDX_F32 && dt != RDX_F64)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: .rdxp coordinate dtype 0x%x is not f32 (0x304) or f64 (0x305)", fn, dt);
  if (flags & ~RDXP_FLAG_NORMALIZED)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: .rdxp flags 0x%x are not known in version 1", fn, flags);
  uint64_t nf = get_u64(b + 16), nr = get_u64(b + 24), nv = get_u64(b + 32);
  size_t es = dt == RDX_F64 ? 8 : 4;
  sections s;
  if (!section_sizes(nf, nr, nv, es, &s))
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: .rdxp counts %llu features, %llu rings, %llu vertices are impossibly large",
                    fn, (unsigned long long)nf, (unsigned long long)nr, (unsigned long long)nv);
  if ((uint64_t)len < s.total)
    return rdx_fail(ctx, RDX_ERR_PARSE,
                    "%s: truncated .rdxp file: %zu bytes, but %llu features, %llu rings and %llu vertices need %llu", fn,
                    len, (unsigned long long)nf, (unsigned long long)nr, (unsigned long long)nv,
                    (unsigned long long)s.total);
  if ((uint64_t)len > s.total)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: %llu bytes after the end of the .rdxp layer (%llu bytes)", fn,
                    (unsigned long long)((uint64_t)len - s.total), (unsigned long long)s.total);
  for (int i = 0; i < 3; i++) {
    const unsigned char *d = b + s.at[i], *t = d + s.bytes[i];
    uint32_t c = get_u32(t), w = rdx_crc32c(0, d, (size_t)s.bytes[i]);
    if (c != w)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted .rdxp %s: checksum 0x%08x, the bytes give 0x%08x", fn,
                      SECTION_NAME[i], c, w);
    if (get_u32(t + 4) != 0)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: .rdxp padding after the %s is 0x%08x, not 0", fn, SECTION_NAME[i],
                      get_u32(t + 4));
  }
  out->normalized = (flags & RDXP_FLAG_NORMALIZED) != 0;
  out->lo[0] = get_f64(b + 40), out->lo[1] = get_f64(b + 48), out->hi[0] = get_f64(b + 56), out->hi[1] = get_f64(b + 64);
  const void *data[3];
  if (host_is_little_endian() && (uintptr_t)b % 8 == 0) {
    for (int i = 0; i < 3; i++) data[i] = b + s.at[i];
  } else { /* decode into a block of our own: a big-endian host, or a buffer that is not 8-aligned */
    unsigned char *blk = NULL;
    size_t total = (size_t)(s.bytes[0] + s.bytes[1] + s.bytes[2]);
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_polygons_load: the layer decoded", (void **)&blk, total, RDX_HOST));
    out->block = blk;
    unsigned char *w = blk;
    for (int i = 0; i < 3; i++) {
      const unsigned char *d = b + s.at[i];
      data[i] = w;
      size_t n = (size_t)s.bytes[i] / (i == 2 ? es : 8);
      for (size_t k = 0; k < n; k++, w += (i == 2 ? es : 8)) {
        if (i < 2 || es == 8) {
          uint64_t u = get_u64(d + 8 * k);
          memcpy(w, &u, 8);
        } else {
          uint32_t u = get_u32(d + 4 * k);
          memcpy(w, &u, 4);
        }
      }
    }
  }
  out->in.size = sizeof out->in;
  out->in.feature_offsets = rdx_host_array(data[0], (int64_t)nf + 1, RDX_U64);
  out->in.ring_offsets = rdx_host_array(data[1], (int64_t)nr + 1, RDX_U64);
  out->in.coords = rdx_host_matrix(data[2], (int64_t)nv, 2, (rdx_dtype)dt);
  return RDX_OK;
}

int rdx_rdxp_sniff(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return -1;
  unsigned char b[7];
  size_t n = fread(b, 1, sizeof b, f);
  fclose(f);
  return n == sizeof b && memcmp(b, MAGIC, sizeof b) == 0;
}

rdx_status rdx_rdxp_read(rdx_context *ctx, const char *fn, const char *path, rdx_layer_file *out) {
  memset(out, 0, sizeof *out);
  char file[256];
  rdx_escape(file, sizeof file, path, strlen(path));
  FILE *f = fopen(path, "rb");
  if (f == NULL) return rdx_fail(ctx, RDX_ERR_IO, "%s: cannot open %s (%s)", fn, file, strerror(errno));
  rdx_status st = RDX_OK;
  void *buf = NULL, *map = NULL;
  struct stat info;
  /* a directory opens and reports a huge size: only a regular file is sized and read */
  if (fstat(fileno(f), &info) != 0 || !S_ISREG(info.st_mode)) {
    st = rdx_fail(ctx, RDX_ERR_IO, "%s: %s is not a regular file", fn, file);
  } else if ((uint64_t)info.st_size > RDX_MAX_ARRAY_BYTES) {
    st = rdx_fail(ctx, RDX_ERR_IO, "%s: %s has %lld bytes, more than an address space holds", fn, file,
                  (long long)info.st_size);
  } else if (info.st_size > 0 && (map = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE,
                                             fileno(f), 0)) != MAP_FAILED) {
    /* mapped, its pages read ahead: no copy of the file and no fresh pages to fault in (a file
     * that cannot be mapped is read into the account's memory below) */
    char name[320];
    snprintf(name, sizeof name, "%s: %s", fn, file);
    st = rdx_rdxp_parse(ctx, name, map, (size_t)info.st_size, out);
    fclose(f);
    if (st != RDX_OK || out->block) {
      munmap(map, (size_t)info.st_size);
      return st;
    }
    out->map = map;
    out->map_len = (size_t)info.st_size;
    return RDX_OK;
  } else if ((st = rdx_mem_alloc(ctx, "rdx_polygons_load: the file's bytes", &buf, (size_t)info.st_size, RDX_HOST)) ==
             RDX_OK) {
    size_t len = (size_t)info.st_size;
    if (fread(buf, 1, len, f) != len || ferror(f)) {
      st = rdx_fail(ctx, RDX_ERR_IO, "%s: cannot read %s (%s)", fn, file, ferror(f) ? strerror(errno) : "shorter than its size");
    } else {
      char name[320];
      snprintf(name, sizeof name, "%s: %s", fn, file);
      st = rdx_rdxp_parse(ctx, name, buf, len, out);
    }
  }
  fclose(f);
  if (st != RDX_OK) {
    if (buf) rdx_mem_free(ctx, buf);
    return st;
  }
  if (out->block) rdx_mem_free(ctx, buf); /* decoded: the bytes are no longer needed */
  else out->file = buf;
  return RDX_OK;
}

/* ---- writing ---- */

typedef struct writer {
  FILE *f;
  unsigned char buf[1 << 16];
  size_t n;
  uint32_t crc;
  int ok;
} writer;

static void w_flush(writer *w) {
  if (w->n && fwrite(w->buf, 1, w->n, w->f) != w->n) w->ok = 0;
  w->n = 0;
}
static void w_bytes(writer *w, const void *p, size_t n) {
  w->crc = rdx_crc32c(w->crc, p, n);
  const unsigned char *c = (const unsigned char *)p;
  while (n) {
    if (w->n == sizeof w->buf) w_flush(w);
    size_t k = sizeof w->buf - w->n < n ? sizeof w->buf - w->n : n;
    memcpy(w->buf + w->n, c, k);
    w->n += k, c += k, n -= k;
  }
}
/* A section's trailer: its CRC32C and 4 zero bytes; the next section's CRC starts afresh. */
static void w_trailer(writer *w) {
  unsigned char t[8] = {0};
  put_u32(t, w->crc);
  w_bytes(w, t, 8);
  w->crc = 0;
}
static void w_u64s(writer *w, const uint64_t *v, int64_t n) {
  unsigned char b[8 * 64];
  for (int64_t i = 0; i < n;) {
    int k = 0;
    for (; k < 64 && i < n; k++, i++) put_u64(b + 8 * k, v[i]);
    w_bytes(w, b, 8 * (size_t)k);
  }
}
static void w_coords(writer *w, const double *xy, int64_t n, rdx_dtype dtype) {
  unsigned char b[8 * 64];
  for (int64_t i = 0; i < n;) {
    size_t k = 0;
    for (; k < sizeof b && i < n; i++) {
      if (dtype == RDX_F64) {
        put_f64(b + k, xy[i]);
        k += 8;
      } else {
        float f = (float)xy[i]; /* exact: the value was widened from this f32 */
        uint32_t u;
        memcpy(&u, &f, 4);
        put_u32(b + k, u);
        k += 4;
      }
    }
    w_bytes(w, b, k);
  }
}

rdx_status rdx_rdxp_write(rdx_context *ctx, const char *fn, const char *path, const rdx_rdxp_layer *L) {
  char file[256], tmp[4096];
  rdx_escape(file, sizeof file, path, strlen(path));
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return rdx_fail(ctx, RDX_ERR_IO, "%s: the path %s is too long", fn, file);
  writer *w = (writer *)malloc(sizeof *w);
  if (w == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for a write buffer", fn);
  w->n = 0, w->crc = 0, w->ok = 1;
  w->f = fopen(tmp, "wb");
  if (w->f == NULL) {
    rdx_status st = rdx_fail(ctx, RDX_ERR_IO, "%s: cannot create %s.tmp.%ld (%s)", fn, file, (long)getpid(),
                             strerror(errno));
    free(w);
    return st;
  }
  unsigned char h[RDXP_HEADER_BYTES];
  memset(h, 0, sizeof h);
  memcpy(h, MAGIC, 8);
  put_u32(h + 8, RDXP_VERSION);
  put_u32(h + 12, (uint32_t)L->dtype);
  put_u64(h + 16, (uint64_t)L->n_features);
  put_u64(h + 24, (uint64_t)L->n_rings);
  put_u64(h + 32, (uint64_t)L->n_vertices);
  put_f64(h + 40, L->lo[0]), put_f64(h + 48, L->lo[1]), put_f64(h + 56, L->hi[0]), put_f64(h + 64, L->hi[1]);
  put_u32(h + 72, L->normalized ? RDXP_FLAG_NORMALIZED : 0);
  put_u32(h + 76, rdx_crc32c(0, h, 76));
  w_bytes(w, h, sizeof h);
  w->crc = 0;
  w_u64s(w, L->feat_off, L->n_features + 1);
  w_trailer(w);
  w_u64s(w, L->ring_off, L->n_rings + 1);
  w_trailer(w);
  w_coords(w, L->xy, 2 * L->n_vertices, L->dtype);
  w_trailer(w);
  errno = 0;
  w_flush(w);
  int err = 0;
  if (!w->ok || fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) err = errno ? errno : EIO;
  if (fclose(w->f) != 0 && !err) err = errno ? errno : EIO;
  free(w);
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) {
    unlink(tmp);
    return rdx_fail(ctx, RDX_ERR_IO, "%s: cannot write %s (%s)", fn, file, strerror(err));
  }
  /* the rename itself reaches the disk with the directory: best effort, the file is complete */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir) dir[1] = 0;
  else if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  return RDX_OK;
}
