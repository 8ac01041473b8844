/*
 * fuzz_rdxp.c: libFuzzer target for raydex's polygon layer format (.rdxp, src/io/rdxp.c) and the
 * layer validation behind it. Every input must give RDX_OK (then a layer that describes itself,
 * saves and parses again to the same counts) or RDX_ERR_PARSE with a message, never a crash,
 * hang or leak. Built and run by CTest's fuzz_rdxp entry in a RAYDEX_FUZZ=ON build
 * (tests/CMakeLists.txt), over the seeds in corpus_rdxp/ (the committed samples of data/sample/,
 * an f32 layer, an empty one, and refused files: truncated, corrupted, a future version) with
 * rdxp.dict. To fuzz longer by hand:
 *   CC=clang cmake -S . -B build-fuzz -DRAYDEX_CUDA=OFF -DRAYDEX_FUZZ=ON
 *   cmake --build build-fuzz --target raydex_fuzzers
 *   build-fuzz/tests/fuzz_rdxp -dict=tests/fuzz/rdxp.dict -max_total_time=600 /tmp/rdxp-corpus tests/fuzz/corpus_rdxp
 */
#include <stdint.h>
#include <stdlib.h>

#include "io/layers.h"

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
  void *buf = malloc(size ? size : 1);
  if (buf == NULL) return 0;
  if (size) __builtin_memcpy(buf, data, size);
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
  free(buf);
  int64_t in_use = 0;
  rdx_context_memory(ctx, &in_use, NULL);
  if (in_use != 0) abort(); /* everything a parse or a create took is given back */
  return 0;
}
