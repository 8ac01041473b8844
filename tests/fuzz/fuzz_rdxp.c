/*
 * fuzz_rdxp.c: libFuzzer target for raydex's polygon layer format (.rdxp, src/io/rdxp.c) and the
 * layer validation behind it. Every input must give RDX_OK (then a layer that describes itself
 * with the file's counts) or RDX_ERR_PARSE with a message, never a crash, hang or leak. Each
 * input runs as given, then with its checksums made right (the fuzzer cannot forge CRC32C, and
 * the checks behind them, offsets and geometry, deserve its mutations too), then one byte off
 * 8-alignment. Built and run by CTest's fuzz_rdxp entry in a RAYDEX_FUZZ=ON build
 * (tests/CMakeLists.txt), over the seeds in corpus_rdxp/ (the committed samples of data/sample/,
 * an f32 layer, an empty one, and refused files: truncated, corrupted, a future version) with
 * rdxp.dict. To fuzz longer by hand:
 *   CC=clang cmake -S . -B build-fuzz -DRAYDEX_CUDA=OFF -DRAYDEX_FUZZ=ON
 *   cmake --build build-fuzz --target raydex_fuzzers
 *   build-fuzz/tests/fuzz_rdxp -dict=tests/fuzz/rdxp.dict -max_total_time=600 /tmp/rdxp-corpus tests/fuzz/corpus_rdxp
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/layers.h"

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static void put_crc(uint8_t *p, uint32_t c) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(c >> (8 * i));
}

/* Make every checksum of an image right (header, then each section the counts place inside the
 * image), so a mutation reaches the parser's later checks and the layer validation instead of
 * stopping at a checksum. */
static void fix_checksums(uint8_t *b, size_t size) {
  if (size < RDXP_HEADER_BYTES) return;
  put_crc(b + 76, rdx_crc32c(0, b, 76));
  uint64_t es = b[12] == 0x04 ? 4 : 8, n[3] = {get_u64(b + 16), get_u64(b + 24), get_u64(b + 32)};
  uint64_t at = RDXP_HEADER_BYTES;
  for (int i = 0; i < 3; i++) {
    if (n[i] > ((uint64_t)1 << 40)) return;
    uint64_t bytes = i < 2 ? 8 * (n[i] + 1) : 2 * es * n[i];
    if (at + bytes + 8 > size) return;
    put_crc(b + at + bytes, rdx_crc32c(0, b + at, (size_t)bytes));
    at += bytes + 8;
  }
}

static void one(rdx_context *ctx, uint8_t *buf, size_t size) {
  rdx_layer_file lf;
  rdx_status st = rdx_rdxp_parse(ctx, "fuzz", buf, size, &lf);
  if (st != RDX_OK && st != RDX_ERR_PARSE && st != RDX_ERR_HOST_OUT_OF_MEMORY) abort();
  if (st == RDX_OK) {
    rdx_polygons *p = NULL;
    st = rdx_polygons_create(ctx, &lf.in, &p);
    if (st != RDX_OK && st != RDX_ERR_INVALID_ARGUMENT && st != RDX_ERR_HOST_OUT_OF_MEMORY) abort();
    if (st == RDX_OK) {
      rdx_polygons_info info;
      info.size = sizeof info;
      if (rdx_polygons_describe(ctx, p, &info) != RDX_OK) abort();
      if (info.n_features != lf.in.feature_offsets.count - 1 || info.n_rings != lf.in.ring_offsets.count - 1 ||
          info.n_vertices > lf.in.coords.count)
        abort();
    }
    rdx_polygons_destroy(p);
  }
  rdx_layer_file_free(ctx, &lf);
  int64_t in_use = 0;
  rdx_context_memory(ctx, &in_use, NULL);
  if (in_use != 0) abort(); /* everything a parse or a create took is given back */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rdx_context *ctx;
  if (ctx == NULL) {
    rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
    o.backend = RDX_BACKEND_CPU;
    o.n_threads = 1;
    if (rdx_context_create(&o, &ctx) != RDX_OK) abort();
  }
  /* an 8-aligned copy, as a file's bytes are (the parser also takes unaligned ones, by copying) */
  uint8_t *buf = (uint8_t *)malloc(size ? size : 1);
  if (buf == NULL) return 0;
  if (size) memcpy(buf, data, size);
  one(ctx, buf, size);     /* as given: mostly the checksums' refusals */
  fix_checksums(buf, size); /* and with its checksums right: the checks after them */
  one(ctx, buf, size);
  if (size > 1) one(ctx, buf + 1, size - 1); /* unaligned: the parser decodes a copy */
  free(buf);
  return 0;
}
