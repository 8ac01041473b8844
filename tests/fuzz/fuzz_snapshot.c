/*
 * fuzz_snapshot.c: libFuzzer target for raydex's snapshot files (src/io/snapshot.c, read by
 * rdx_index_load and rdx_points_load). Every input must load (an index or point index that
 * describes itself) or be refused with RDX_ERR_PARSE (a point index's ids with gaps too large to
 * restore: RDX_ERR_UNSUPPORTED) and a message, never crash, hang or leak.
 * Each input runs as given, then with its checksums made right (the fuzzer cannot forge CRC32C,
 * and the checks behind them, the header's fields and the sections' lengths, deserve its
 * mutations too). The bytes reach the loaders through a memfd's /proc path, as a file does.
 * Built and run by CTest's fuzz_snapshot entry in a RAYDEX_FUZZ=ON build, over the seeds in
 * corpus_snapshot/ (key indexes of several kinds and widths, an empty one, point indexes) with
 * snapshot.dict. To fuzz longer by hand:
 *   CC=clang cmake -S . -B build-fuzz -DRAYDEX_CUDA=OFF -DRAYDEX_FUZZ=ON
 *   cmake --build build-fuzz --target raydex_fuzzers
 *   build-fuzz/tests/fuzz_snapshot -dict=tests/fuzz/snapshot.dict -max_total_time=600 /tmp/snap-corpus \
 *     tests/fuzz/corpus_snapshot
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/layers.h" /* rdx_crc32c */
#include "raydex.h"

#define HEADER 160u

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static void put_u32(uint8_t *p, uint32_t c) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(c >> (8 * i));
}

/* Make the header's checksum and each section's (as far as the image holds them) right. A
 * section: number (4), CRC (4), length (8), the data padded to 8 bytes; its CRC covers the
 * number, the length and the data. */
static void fix_checksums(uint8_t *b, size_t size) {
  if (size < HEADER) return;
  put_u32(b + 156, rdx_crc32c(0, b, 156));
  for (uint64_t at = HEADER; at + 16 <= size;) {
    uint64_t len = get_u64(b + at + 8);
    if (len > size - at - 16) return;
    uint8_t head[12];
    memcpy(head, b + at, 4);
    memcpy(head + 4, b + at + 8, 8);
    put_u32(b + at + 4, rdx_crc32c(rdx_crc32c(0, head, sizeof head), b + at + 16, (size_t)len));
    at += 16 + (len + 7) / 8 * 8;
  }
}

static void one(rdx_context *ctx, int fd, const char *path, const uint8_t *buf, size_t size) {
  if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, size, 0) != (ssize_t)size) abort();
  rdx_index *idx = NULL;
  rdx_status st = rdx_index_load(ctx, path, &idx);
  if (st != RDX_OK && st != RDX_ERR_PARSE && st != RDX_ERR_HOST_OUT_OF_MEMORY) abort();
  if (st == RDX_OK) {
    if (idx == NULL || rdx_index_count(idx) < 0) abort();
    rdx_index_destroy(idx);
  } else if (idx != NULL || rdx_context_message(ctx)[0] == 0) {
    abort();
  }
  rdx_points *pts = NULL;
  st = rdx_points_load(ctx, path, &pts);
  /* UNSUPPORTED: ids with gaps too large to restore (spatial/snapshot.c), a refusal with a message */
  if (st != RDX_OK && st != RDX_ERR_PARSE && st != RDX_ERR_HOST_OUT_OF_MEMORY && st != RDX_ERR_UNSUPPORTED) abort();
  if (st == RDX_OK) {
    if (pts == NULL || rdx_points_count(pts) < 0) abort();
    rdx_points_destroy(pts);
  } else if (pts != NULL) {
    abort();
  }
  int64_t in_use = 0;
  rdx_context_memory(ctx, &in_use, NULL);
  if (in_use != 0) abort(); /* everything a load took is given back */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rdx_context *ctx;
  static int fd = -1;
  static char path[64];
  if (ctx == NULL) {
    rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
    o.backend = RDX_BACKEND_CPU;
    o.n_threads = 1;
    if (rdx_context_create(&o, &ctx) != RDX_OK) abort();
    fd = memfd_create("fuzz_snapshot", 0);
    if (fd < 0) abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  uint8_t *buf = (uint8_t *)malloc(size ? size : 1);
  if (buf == NULL) return 0;
  if (size) memcpy(buf, data, size);
  one(ctx, fd, path, buf, size);  /* as given: mostly the checksums' refusals */
  fix_checksums(buf, size);       /* and with its checksums right: the checks after them */
  one(ctx, fd, path, buf, size);
  free(buf);
  return 0;
}
