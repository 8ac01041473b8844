/*
 * cuda_util.cuh: helpers for raydex's .cu files: error mapping, launch checks, grid sizing and
 * scratch buffers drawn from the context's memory account. CUDA types stay inside .cu files.
 */
#ifndef RDX_CUDA_UTIL_CUH
#define RDX_CUDA_UTIL_CUH

#include <cuda_runtime.h>
#include <string.h>

#include "core.h"

/* Map a CUDA error to a status with a sentence, clearing the sticky last error (NCCL checks.h). */
static inline rdx_status rdx_cuda_fail(rdx_context *ctx, cudaError_t e, const char *what) {
  (void)cudaGetLastError();
  if (e == cudaErrorMemoryAllocation)
    return rdx_fail(ctx, RDX_ERR_DEVICE_OUT_OF_MEMORY, "%s: %s", what, cudaGetErrorString(e));
  return rdx_fail(ctx, RDX_ERR_CUDA, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* The status of a CUDA call, for code that must clean up before it returns: RDX_OK or the
 * error worded as rdx_cuda_fail does. */
static inline rdx_status rdx_cuda_ok(rdx_context *ctx, cudaError_t e, const char *what) {
  return e == cudaSuccess ? RDX_OK : rdx_cuda_fail(ctx, e, what);
}

#define RDX_CUDA(ctx, call, what)                                    \
  do {                                                               \
    cudaError_t rdx_cuda_e_ = (call);                                \
    if (rdx_cuda_e_ != cudaSuccess) return rdx_cuda_fail((ctx), rdx_cuda_e_, (what)); \
  } while (0)

#define RDX_CUDA_GOTO(ctx, call, what, st, label)                    \
  do {                                                               \
    cudaError_t rdx_cuda_e_ = (call);                                \
    if (rdx_cuda_e_ != cudaSuccess) {                                \
      (st) = rdx_cuda_fail((ctx), rdx_cuda_e_, (what));              \
      goto label;                                                    \
    }                                                                \
  } while (0)

/* After a kernel launch: catch launch errors at once. */
#define RDX_LAUNCH_CHECK(ctx, what) RDX_CUDA(ctx, cudaGetLastError(), what)

static inline cudaStream_t rdx_stream(const rdx_context *ctx) { return (cudaStream_t)ctx->stream; }

/* Blocks for n threads of `threads` each, capped so grid-stride loops cover the rest. */
static inline unsigned rdx_grid(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > (int64_t)1 << 30) b = (int64_t)1 << 30;
  return (unsigned)b;
}

/* Scratch device memory through the account; freed by the destructor-free helper below. */
static inline rdx_status rdx_scratch(rdx_context *ctx, const char *what, void **p, size_t bytes) {
  return rdx_mem_alloc(ctx, what, p, bytes, RDX_DEVICE);
}

#ifdef __cplusplus
/* A CUB call made twice: once for its scratch size, once to run (f(temp, bytes) returns the
 * cudaError_t of the call). */
template <typename F>
rdx_status rdx_cub_run(rdx_context *ctx, const char *what, F f) {
  size_t bytes = 0;
  void *temp = NULL;
  RDX_CUDA(ctx, f(NULL, bytes), what);
  RDX_CHECK(rdx_scratch(ctx, what, &temp, bytes));
  cudaError_t e = f(temp, bytes);
  rdx_mem_free(ctx, temp);
  return rdx_cuda_ok(ctx, e, what);
}

/* A best-effort step's failure is no failure of the call: the context's message is put back as
 * it was when the guard was made. */
struct keep_message {
  rdx_context *ctx;
  char saved[sizeof rdx_context::message];
  explicit keep_message(rdx_context *c) : ctx(c) { memcpy(saved, ctx->message, sizeof saved); }
  ~keep_message() { memcpy(ctx->message, saved, sizeof saved); }
};

/* Independent steps side by side (rdx_cuda_fork): start() gives aux, a stream that begins after
 * what the context's stream has so far, join() makes the context's stream wait for aux. Declared
 * after the call's scratch, it joins on every way out, before the scratch is freed. on_aux() and
 * on_own() switch the context's stream (rdx_cuda_switch), so that code written for the context's
 * stream runs on aux; join() switches back first. */
struct side_by_side {
  rdx_context *ctx;
  cudaStream_t aux = nullptr;
  rdx_status start(const char *what) {
    void *p = nullptr;
    RDX_CHECK(rdx_cuda_fork(ctx, &p, what));
    aux = (cudaStream_t)p;
    return RDX_OK;
  }
  void on_aux() {
    if (aux) rdx_cuda_switch(ctx, (void *)aux);
  }
  void on_own() { rdx_cuda_switch(ctx, NULL); }
  rdx_status join(const char *what) {
    cudaStream_t a = aux;
    aux = nullptr;
    on_own();
    return a ? rdx_cuda_join(ctx, (void *)a, what) : RDX_OK;
  }
  ~side_by_side() { /* a way out on an error: that error's message stays */
    if (!aux) return;
    keep_message keep(ctx);
    (void)join("side_by_side");
  }
};
#endif

#endif /* RDX_CUDA_UTIL_CUH */
