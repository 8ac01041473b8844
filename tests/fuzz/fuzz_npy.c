/*
 * fuzz_npy.c: libFuzzer target for the .npy parser. Every input must give RDX_OK or
 * RDX_ERR_PARSE with a message, never a crash, hang or leak.
 *   clang -fsanitize=fuzzer,address -Iinclude -Isrc tests/fuzz/fuzz_npy.c src/io/npy.c \
 *     src/core/context.c src/core/memory.c src/core/pool.c src/core/nocuda.c -o fuzz_npy
 *   ./fuzz_npy tests/fuzz/corpus_npy -dict=tests/fuzz/npy.dict
 */
#include <stdint.h>
#include <stdlib.h>

#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rdx_context *ctx;
  if (ctx == NULL) {
    rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
    o.backend = RDX_BACKEND_CPU;
    if (rdx_context_create(&o, &ctx) != RDX_OK) abort();
  }
  rdx_array a;
  int nd;
  rdx_status st = rdx_npy_parse(ctx, "fuzz", data, size, &a, &nd);
  if (st != RDX_OK && st != RDX_ERR_PARSE && st != RDX_ERR_HOST_OUT_OF_MEMORY) abort();
  if (st == RDX_OK && (a.count < 0 || a.columns < 1 || (nd != 1 && nd != 2))) abort();
  rdx_npy_free(&a);
  return 0;
}
