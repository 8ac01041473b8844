/*
 * fuzz_npy.c: libFuzzer target for the .npy parser. Every input must give RDX_OK or
 * RDX_ERR_PARSE with a message, never a crash, hang or leak. Built and run by CTest's fuzz_npy
 * entry in a RAYDEX_FUZZ=ON build (tests/CMakeLists.txt, scripts/test.sh), over the seeds in
 * corpus_npy/ (valid files of every dtype and version, and the refused headers of issue 26) with
 * npy.dict. To fuzz longer by hand:
 *   CC=clang cmake -S . -B build-fuzz -DRAYDEX_CUDA=OFF -DRAYDEX_FUZZ=ON
 *   cmake --build build-fuzz --target raydex_fuzzers
 *   build-fuzz/tests/fuzz_npy -dict=tests/fuzz/npy.dict -max_total_time=600 /tmp/npy-corpus tests/fuzz/corpus_npy
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
