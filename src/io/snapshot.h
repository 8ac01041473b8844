/*
 * snapshot.h: raydex's snapshot container (src/io/snapshot.c), shared by the key-index snapshots
 * (src/keys/snapshot.c) and the point-index snapshots (src/spatial/snapshot.c).
 *
 * A file is a fixed header and then n sections, every integer little-endian:
 *
 *   offset  bytes  field
 *   0       8      magic "RDXSNAP\0"
 *   8       4      format version, u32 = RDX_SNAP_VERSION (a reader refuses a larger one)
 *   12      4      content kind, u32: RDX_SNAP_KEYS or RDX_SNAP_POINTS
 *   16      4      header bytes, u32 = RDX_SNAP_HEADER_BYTES
 *   20      4      sections, u32
 *   24      128    RDX_SNAP_FIELDS u64 fields, their meaning the content kind's (keys/snapshot.c,
 *                  spatial/snapshot.c); unused ones 0
 *   152     4      flags, u32 = 0 (a version 1 reader refuses others)
 *   156     4      CRC32C of bytes [0, 156)
 *   160            section 0, section 1, ...; the file ends after the last
 *
 * A section:
 *   0       4      section number, u32 (0, 1, ... in file order)
 *   4       4      CRC32C of bytes [0, 4) and [8, 16 + length): number, length and data
 *   8       8      length of the data in bytes, u64
 *   16      length data: elements of 4 or 8 bytes, little-endian
 *   ...     0..7   zero bytes, so the next section starts 8-aligned
 *
 * Invariant: a file that passes rdx_snap_open and rdx_snap_sections has exactly the header's
 * bytes and sections, each of the length its reader expects, with no byte changed since the
 * write: a flipped byte anywhere fails a checksum, a length or the file's size.
 *
 * Writes are crash safe: the file is written to path + ".tmp.<pid>" beside it, flushed to the
 * disk (fsync), renamed over path, and the directory flushed, so a crash at any moment leaves
 * either the old file at path or the new one whole (a temporary may stay behind; a later save of
 * the same process truncates it, and none is ever read).
 */
#ifndef RDX_IO_SNAPSHOT_H
#define RDX_IO_SNAPSHOT_H

#include "core/core.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDX_SNAP_VERSION 1u
#define RDX_SNAP_HEADER_BYTES 160u
#define RDX_SNAP_FIELDS 16
#define RDX_SNAP_MAX_SECTIONS 8
enum { RDX_SNAP_KEYS = 1, RDX_SNAP_POINTS = 2 }; /* content kinds */

/* The header's meaning: what the writer fills in and what rdx_snap_open hands back. */
typedef struct rdx_snap_header {
  uint32_t content;                   /* RDX_SNAP_KEYS or RDX_SNAP_POINTS */
  uint32_t n_sections;                /* 0 .. RDX_SNAP_MAX_SECTIONS */
  uint64_t field[RDX_SNAP_FIELDS];    /* the content kind's fields */
} rdx_snap_header;

/* A section to write: count elements of elem_bytes (4 or 8) each, host memory, host byte order. */
typedef struct rdx_snap_out {
  const void *data;                   /* may be NULL when count == 0 */
  uint64_t count;
  int elem_bytes;
} rdx_snap_out;

/* Write h and its h->n_sections sections to path, crash safe (above). Returns RDX_OK, RDX_ERR_IO
 * naming the path and errno's sentence, RDX_ERR_HOST_OUT_OF_MEMORY. fn begins every message. On
 * failure the temporary is removed and path is as before. */
rdx_status rdx_snap_write(rdx_context *ctx, const char *fn, const char *path, const rdx_snap_header *h,
                          const rdx_snap_out *sections);

/* A file being read: mapped read-only (or read into the account's memory where it cannot be). */
typedef struct rdx_snap_file {
  rdx_snap_header h;
  const unsigned char *bytes;         /* the whole file */
  uint64_t len;
  const void *data[RDX_SNAP_MAX_SECTIONS]; /* rdx_snap_sections: each section's data, 8-aligned */
  void *map;                          /* mmap'd, or NULL */
  void *copy;                         /* read into the account, or NULL */
  char name[320];                     /* "fn: path" for messages */
} rdx_snap_file;

/* Open path and check its header: the magic (a foreign file, naming what it begins with; a .rdxp
 * layer by name), the size of a header, the version, the header's CRC, the content kind (the file
 * holds a key index where a point index is asked for, and so on), header bytes and flags, and the
 * sections' number against n_sections. Returns RDX_OK, RDX_ERR_IO, RDX_ERR_PARSE,
 * RDX_ERR_HOST_OUT_OF_MEMORY; on failure *f holds nothing. */
rdx_status rdx_snap_open(rdx_context *ctx, const char *fn, const char *path, uint32_t content, uint32_t n_sections,
                         rdx_snap_file *f);
/* Check every section against the length its reader computed from the header (bytes[i]; names[i]
 * for messages): the section's number, its length, the file's size (truncated, or bytes after the
 * end), its CRC and its padding; then f->data[i] points at each section's data. RDX_ERR_PARSE
 * names the section and what is wrong (expected and found). */
rdx_status rdx_snap_sections(rdx_context *ctx, rdx_snap_file *f, const uint64_t *bytes, const char *const *names);
void rdx_snap_close(rdx_context *ctx, rdx_snap_file *f);

/* Little-endian loads and stores of the sections' elements (a plain load on little-endian hosts). */
static inline uint32_t rdx_snap_le32(const void *p) {
  const unsigned char *b = (const unsigned char *)p;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t rdx_snap_le64(const void *p) {
  return (uint64_t)rdx_snap_le32(p) | (uint64_t)rdx_snap_le32((const unsigned char *)p + 4) << 32;
}
static inline uint64_t rdx_snap_f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static inline double rdx_snap_bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}
/* 1 on little-endian hosts: sections are then written from, and read in, place. */
int rdx_snap_host_le(void);

#ifdef __cplusplus
}
#endif
#endif /* RDX_IO_SNAPSHOT_H */
