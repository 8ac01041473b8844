/*
 * snapshot.c: the snapshot container (layout and invariant: snapshot.h): the header, the
 * checksummed sections, the crash-safe write (temporary, fsync, rename, directory fsync) and the
 * checked read (mmap).
 *
 * Tuned for indexes of 2^26 keys and more (1 GiB of pairs): a section is written straight from
 * the caller's array in blocks of up to 64 MiB (no copy on little-endian hosts), and read in
 * place from the mapping, so a save or load costs one CRC32C pass (SSE4.2, rdxp.c's) and the
 * disk's time.
 */
#include "io/snapshot.h"
#include "io/layers.h" /* rdx_crc32c */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char MAGIC[8] = {'R', 'D', 'X', 'S', 'N', 'A', 'P', 0};
static const unsigned char RDXP_MAGIC[7] = {'R', 'D', 'X', 'P', 'O', 'L', 'Y'};
static const char *const CONTENT_NAME[3] = {"?", "a key index", "a point index"};
#define SECTION_HEAD 16u
#define BLOCK ((size_t)64 << 20)    /* bytes per write() at most */
#define CRC_BLOCK ((size_t)8 << 20) /* bytes checksummed, then written, at a time (and converted on
                                       big-endian hosts): they are still in cache for the write */

int rdx_snap_host_le(void) {
  const uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The test hook (bench_api.h): -1 off; else the writer kills its own process once more than this
 * many bytes of the temporary would be written, or, at the file's size or past it, after the
 * fsync and before the rename. One process's writes share it: tests set it in a forked child. */
static int64_t kill_at = -1;
void rdx_snapshot_kill_at(int64_t bytes) { kill_at = bytes < 0 ? -1 : bytes; }

/* ---- writing ---- */

typedef struct writer {
  int fd;
  uint64_t written;
  int err;                   /* errno of the first failure, 0 while none */
  unsigned char *conv;       /* big-endian hosts: BLOCK bytes for little-endian copies, else NULL */
} writer;

static void w_raw(writer *w, const void *p, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  if (kill_at >= 0 && w->written + n > (uint64_t)kill_at) { /* the crash the tests ask for */
    size_t part = (size_t)((uint64_t)kill_at - w->written);
    while (part > 0) {
      ssize_t k = write(w->fd, c, part);
      if (k <= 0) break;
      c += k, part -= (size_t)k;
    }
    raise(SIGKILL);
  }
  while (n > 0 && !w->err) {
    ssize_t k = write(w->fd, c, n < BLOCK ? n : BLOCK);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      w->err = k < 0 ? errno : EIO;
      break;
    }
    c += k, n -= (size_t)k, w->written += (uint64_t)k;
  }
}

/* Elements of s from element `first`, `count` of them, little-endian into w->conv. */
static void to_le(const rdx_snap_out *s, uint64_t first, size_t count, unsigned char *out) {
  const unsigned char *src = (const unsigned char *)s->data + first * (uint64_t)s->elem_bytes;
  for (size_t i = 0; i < count; i++) {
    if (s->elem_bytes == 8) {
      uint64_t v;
      memcpy(&v, src + 8 * i, 8);
      put_u64(out + 8 * i, v);
    } else {
      uint32_t v;
      memcpy(&v, src + 4 * i, 4);
      put_u32(out + 4 * i, v);
    }
  }
}

/* A section: its head with a zero CRC, then its little-endian data a block at a time, each block
 * checksummed just before it is written (one pass over the data, while it is in cache), then the
 * head again with the CRC of its number, length and data. */
static void write_section(writer *w, uint32_t number, const rdx_snap_out *s) {
  const uint64_t bytes = s->count * (uint64_t)s->elem_bytes;
  const uint64_t at = w->written;
  unsigned char head[SECTION_HEAD];
  put_u32(head, number);
  put_u32(head + 4, 0);
  put_u64(head + 8, bytes);
  unsigned char crc_head[12];
  memcpy(crc_head, head, 4);
  memcpy(crc_head + 4, head + 8, 8);
  uint32_t crc = rdx_crc32c(0, crc_head, sizeof crc_head);
  w_raw(w, head, sizeof head);
  const size_t per = CRC_BLOCK / (size_t)s->elem_bytes;
  for (uint64_t i = 0; i < s->count && !w->err; i += per) {
    const size_t k = s->count - i < per ? (size_t)(s->count - i) : per, n = k * (size_t)s->elem_bytes;
    const unsigned char *src = (const unsigned char *)s->data + i * (uint64_t)s->elem_bytes;
    if (w->conv) {
      to_le(s, i, k, w->conv);
      src = w->conv;
    }
    crc = rdx_crc32c(crc, src, n);
    w_raw(w, src, n);
  }
  static const unsigned char zeros[8] = {0};
  if (bytes % 8) w_raw(w, zeros, (size_t)(8 - bytes % 8));
  put_u32(head + 4, crc);
  if (!w->err && pwrite(w->fd, head, sizeof head, (off_t)at) != (ssize_t)sizeof head) w->err = errno ? errno : EIO;
}

/* The directory holding path, for its fsync. */
static void dir_of(char *dir, size_t cap, const char *path) {
  snprintf(dir, cap, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir) dir[1] = 0;
  else if (slash) *slash = 0;
  else snprintf(dir, cap, ".");
}

rdx_status rdx_snap_write(rdx_context *ctx, const char *fn, const char *path, const rdx_snap_header *h,
                          const rdx_snap_out *sections) {
  char file[256], tmp[4096];
  rdx_escape(file, sizeof file, path, strlen(path));
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
    return rdx_fail(ctx, RDX_ERR_IO, "%s: the path %s is too long", fn, file);
  if (h->n_sections > RDX_SNAP_MAX_SECTIONS)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: %u sections, more than a snapshot has", fn, h->n_sections);

  unsigned char head[RDX_SNAP_HEADER_BYTES];
  memset(head, 0, sizeof head);
  memcpy(head, MAGIC, 8);
  put_u32(head + 8, RDX_SNAP_VERSION);
  put_u32(head + 12, h->content);
  put_u32(head + 16, RDX_SNAP_HEADER_BYTES);
  put_u32(head + 20, h->n_sections);
  for (int i = 0; i < RDX_SNAP_FIELDS; i++) put_u64(head + 24 + 8 * i, h->field[i]);
  put_u32(head + 152, 0);
  put_u32(head + 156, rdx_crc32c(0, head, 156));

  writer w = {-1, 0, 0, NULL};
  if (!rdx_snap_host_le()) {
    rdx_status st = rdx_mem_alloc(ctx, "rdx_snap_write: a conversion block", (void **)&w.conv, CRC_BLOCK, RDX_HOST);
    if (st != RDX_OK) return st;
  }
  w.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (w.fd < 0) {
    int e = errno;
    if (w.conv) rdx_mem_free(ctx, w.conv);
    return rdx_fail(ctx, RDX_ERR_IO, "%s: cannot create %s.tmp.%ld (%s)", fn, file, (long)getpid(), strerror(e));
  }
  w_raw(&w, head, sizeof head);
  for (uint32_t i = 0; i < h->n_sections && !w.err; i++) write_section(&w, i, &sections[i]);
  if (kill_at >= 0 && !w.err && fsync(w.fd) == 0) raise(SIGKILL); /* past the file's end: before the rename */
  if (!w.err && fsync(w.fd) != 0) w.err = errno;
  if (close(w.fd) != 0 && !w.err) w.err = errno;
  if (w.conv) rdx_mem_free(ctx, w.conv);
  if (!w.err && rename(tmp, path) != 0) w.err = errno;
  if (w.err) {
    unlink(tmp);
    return rdx_fail(ctx, RDX_ERR_IO, "%s: cannot write %s (%s)", fn, file, strerror(w.err));
  }
  /* The rename reaches the disk with the directory's own flush. Best effort: the new file is
   * complete and in place; a file system that cannot sync a directory (EINVAL) has nothing to do. */
  char dir[4096];
  dir_of(dir, sizeof dir, path);
  int fd = open(dir, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  return RDX_OK;
}

/* ---- reading ---- */

void rdx_snap_close(rdx_context *ctx, rdx_snap_file *f) {
  if (f->map) munmap(f->map, (size_t)f->len);
  if (f->copy) rdx_mem_free(ctx, f->copy);
  memset(f, 0, sizeof *f);
}

static rdx_status check_header(rdx_context *ctx, rdx_snap_file *f, uint32_t content, uint32_t n_sections) {
  const unsigned char *b = f->bytes;
  const char *name = f->name;
  if (f->len < 8 || memcmp(b, MAGIC, 8) != 0) {
    if (f->len >= 7 && memcmp(b, RDXP_MAGIC, 7) == 0)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: a raydex polygon layer (.rdxp), not a raydex snapshot", name);
    if (f->len >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: a .npy array, not a raydex snapshot", name);
    char seen[RDX_ESCAPE_SHORT];
    rdx_escape(seen, sizeof seen, b, f->len < 8 ? (size_t)f->len : 8);
    if (f->len < 8 && memcmp(b, MAGIC, (size_t)f->len) == 0)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: truncated snapshot: %llu bytes, less than the %u of its header", name,
                      (unsigned long long)f->len, RDX_SNAP_HEADER_BYTES);
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: not a raydex snapshot: it begins \"%s\", not \"RDXSNAP\\x00\"", name, seen);
  }
  if (f->len < RDX_SNAP_HEADER_BYTES)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: truncated snapshot: %llu bytes, less than the %u of its header", name,
                    (unsigned long long)f->len, RDX_SNAP_HEADER_BYTES);
  uint32_t version = rdx_snap_le32(b + 8);
  if (version > RDX_SNAP_VERSION)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: snapshot format version %u is newer than this library reads (%u)", name,
                    version, RDX_SNAP_VERSION);
  if (version == 0) return rdx_fail(ctx, RDX_ERR_PARSE, "%s: snapshot format version 0 does not exist", name);
  uint32_t crc = rdx_snap_le32(b + 156), want = rdx_crc32c(0, b, 156);
  if (crc != want)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot header: its checksum is 0x%08x, its bytes give 0x%08x",
                    name, crc, want);
  uint32_t got = rdx_snap_le32(b + 12);
  if (got != content)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: the snapshot holds %s (content kind %u), not %s (%u)", name,
                    got == RDX_SNAP_KEYS || got == RDX_SNAP_POINTS ? CONTENT_NAME[got] : "something unknown", got,
                    CONTENT_NAME[content], content);
  uint32_t hb = rdx_snap_le32(b + 16), ns = rdx_snap_le32(b + 20), flags = rdx_snap_le32(b + 152);
  if (hb != RDX_SNAP_HEADER_BYTES)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: snapshot header bytes %u, expected %u in version %u", name, hb,
                    RDX_SNAP_HEADER_BYTES, version);
  if (flags != 0)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: snapshot flags 0x%x are not known in version %u (expected 0)", name, flags,
                    version);
  if (ns != n_sections)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: the snapshot has %u sections, %s has %u", name, ns, CONTENT_NAME[content],
                    n_sections);
  f->h.content = got;
  f->h.n_sections = ns;
  for (int i = 0; i < RDX_SNAP_FIELDS; i++) f->h.field[i] = rdx_snap_le64(b + 24 + 8 * i);
  return RDX_OK;
}

rdx_status rdx_snap_open(rdx_context *ctx, const char *fn, const char *path, uint32_t content, uint32_t n_sections,
                         rdx_snap_file *f) {
  memset(f, 0, sizeof *f);
  char file[256];
  rdx_escape(file, sizeof file, path, strlen(path));
  snprintf(f->name, sizeof f->name, "%s: %s", fn, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return rdx_fail(ctx, RDX_ERR_IO, "%s: cannot open %s (%s)", fn, file, strerror(errno));
  struct stat info;
  rdx_status st = RDX_OK;
  /* a directory opens and reports a size: only a regular file is sized and read */
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    st = rdx_fail(ctx, RDX_ERR_IO, "%s: %s is not a regular file", fn, file);
  } else if ((uint64_t)info.st_size > RDX_MAX_ARRAY_BYTES) {
    st = rdx_fail(ctx, RDX_ERR_IO, "%s: %s has %lld bytes, more than an address space holds", fn, file,
                  (long long)info.st_size);
  } else {
    f->len = (uint64_t)info.st_size;
    void *map = f->len ? mmap(NULL, (size_t)f->len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : MAP_FAILED;
    if (map != MAP_FAILED) {
      f->map = map;
      f->bytes = (const unsigned char *)map;
    } else if ((st = rdx_mem_alloc(ctx, "rdx_snap_open: the file's bytes", &f->copy, (size_t)f->len, RDX_HOST)) ==
               RDX_OK) {
      /* an empty file, or one that cannot be mapped: read into the account's memory */
      unsigned char *p = (unsigned char *)f->copy;
      uint64_t got = 0;
      while (got < f->len) {
        ssize_t k = read(fd, p + got, f->len - got < BLOCK ? (size_t)(f->len - got) : BLOCK);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
          st = rdx_fail(ctx, RDX_ERR_IO, "%s: cannot read %s (%s)", fn, file, k < 0 ? strerror(errno) : "shorter than its size");
          break;
        }
        got += (uint64_t)k;
      }
      f->bytes = p;
    }
  }
  close(fd);
  if (st == RDX_OK) st = check_header(ctx, f, content, n_sections);
  if (st != RDX_OK) rdx_snap_close(ctx, f);
  return st;
}

rdx_status rdx_snap_sections(rdx_context *ctx, rdx_snap_file *f, const uint64_t *bytes, const char *const *names) {
  const char *name = f->name;
  uint64_t at = RDX_SNAP_HEADER_BYTES;
  for (uint32_t i = 0; i < f->h.n_sections; i++) {
    if (f->len - at < SECTION_HEAD)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: truncated snapshot: it ends at byte %llu, inside the head of section %u (%s)",
                      name, (unsigned long long)f->len, i, names[i]);
    const unsigned char *s = f->bytes + at;
    uint32_t number = rdx_snap_le32(s), crc = rdx_snap_le32(s + 4);
    uint64_t len = rdx_snap_le64(s + 8);
    if (number != i)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: section %u (%s) is numbered %u", name, i, names[i],
                      number);
    if (len != bytes[i])
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: section %u (%s) has %llu bytes, the header's counts "
                      "give %llu", name, i, names[i], (unsigned long long)len, (unsigned long long)bytes[i]);
    uint64_t pad = (8 - len % 8) % 8;
    at += SECTION_HEAD;
    if (f->len - at < len + pad)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: truncated snapshot: %llu bytes, but section %u (%s) needs %llu more from "
                      "byte %llu", name, (unsigned long long)f->len, i, names[i], (unsigned long long)(len + pad),
                      (unsigned long long)at);
    unsigned char head[12];
    memcpy(head, s, 4);
    memcpy(head + 4, s + 8, 8);
    uint32_t want = rdx_crc32c(rdx_crc32c(0, head, sizeof head), f->bytes + at, (size_t)len);
    if (crc != want)
      return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: section %u (%s) has checksum 0x%08x, its bytes give "
                      "0x%08x", name, i, names[i], crc, want);
    for (uint64_t k = 0; k < pad; k++)
      if (f->bytes[at + len + k] != 0)
        return rdx_fail(ctx, RDX_ERR_PARSE, "%s: corrupted snapshot: the padding after section %u (%s) is not zero",
                        name, i, names[i]);
    f->data[i] = f->bytes + at;
    at += len + pad;
  }
  if (at != f->len)
    return rdx_fail(ctx, RDX_ERR_PARSE, "%s: %llu bytes after the end of the snapshot (%llu bytes)", name,
                    (unsigned long long)(f->len - at), (unsigned long long)at);
  return RDX_OK;
}
