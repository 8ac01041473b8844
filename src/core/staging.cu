/*
 * staging.cu: copies between pageable host memory and the device through the context's staging
 * ring, pinned host memory made with the context (rdx_context_options.staging_bytes, counted in
 * its memory account), and every other copy the core makes (rdx_cuda_memcpy).
 *
 * Why a ring: the copy engines read and write pinned memory only. From pageable memory the driver
 * copies through a small pinned buffer of its own, a piece at a time with one thread, and the link
 * waits while the CPU copies. Here the ring is cut into RING_SLOTS slots: the context's threads
 * copy chunk i+1 into a free slot while the copy engine moves chunk i, and an event per slot tells
 * when its bytes have left for the device (a slot is refilled only after) or arrived from it.
 * Memory that is pinned already (rdx_malloc's RDX_HOST_PINNED, cudaMallocHost, cudaHostRegister)
 * is copied directly: cudaPointerGetAttributes tells which is which.
 *
 * A copy that fails part way has waited for its queued pieces before it returns, so the ring is
 * never reused while the copy engine still reads it.
 */
#include <string.h>

#include "cuda_util.cuh"

namespace {

constexpr int RING_SLOTS = 4;
constexpr size_t RING_DEFAULT_BYTES = (size_t)64 << 20;
constexpr size_t STAGE_MIN_BYTES = (size_t)256 << 10; /* smaller copies: the driver's own path */
constexpr size_t COPY_PIECE = (size_t)512 << 10;      /* a thread's share of a chunk */

struct ring_state {
  cudaEvent_t done[RING_SLOTS]; /* slot k's last copy (in or out) finished */
  size_t chunk;                 /* bytes per slot */
};

enum mem_kind { PAGEABLE, PINNED, DEVICE };

mem_kind kind_of(const void *p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return PAGEABLE;
  }
  if (a.type == cudaMemoryTypeUnregistered) return PAGEABLE;
  return a.type == cudaMemoryTypeHost ? PINNED : DEVICE;
}

struct copy_job {
  char *dst;
  const char *src;
  size_t bytes;
};

void copy_task(void *arg, int64_t t, int thread) {
  (void)thread;
  const copy_job *j = (const copy_job *)arg;
  size_t at = (size_t)t * COPY_PIECE, len = j->bytes - at < COPY_PIECE ? j->bytes - at : COPY_PIECE;
  memcpy(j->dst + at, j->src + at, len);
}

/* A host-to-host copy on the context's threads (one piece per task). */
void host_copy(rdx_context *ctx, void *dst, const void *src, size_t bytes) {
  copy_job j = {(char *)dst, (const char *)src, bytes};
  int64_t n = (int64_t)((bytes + COPY_PIECE - 1) / COPY_PIECE);
  if (n <= 1 || ctx->n_threads <= 1 || rdx_parallel_for(ctx, n, copy_task, &j) != RDX_OK) memcpy(dst, src, bytes);
}

/* Wait for every queued piece, keeping the first error. */
rdx_status drain(rdx_context *ctx, rdx_status st, const char *what) {
  cudaError_t e = cudaStreamSynchronize(rdx_stream(ctx));
  if (st == RDX_OK && e != cudaSuccess) return rdx_cuda_fail(ctx, e, what);
  (void)cudaGetLastError();
  return st;
}

rdx_status ring_in(rdx_context *ctx, char *dst, const char *src, size_t bytes) {
  static const char what[] = "rdx_copy: to the device through the staging ring";
  ring_state *r = (ring_state *)ctx->ring_state;
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  for (size_t off = 0, c = 0; off < bytes; off += r->chunk, c++) {
    int k = (int)(c % RING_SLOTS);
    size_t len = bytes - off < r->chunk ? bytes - off : r->chunk;
    char *slot = (char *)ctx->ring + (size_t)k * r->chunk;
    if (c >= RING_SLOTS) RDX_CUDA_GOTO(ctx, cudaEventSynchronize(r->done[k]), what, st, out);
    host_copy(ctx, slot, src + off, len);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(dst + off, slot, len, cudaMemcpyHostToDevice, s), what, st, out);
    RDX_CUDA_GOTO(ctx, cudaEventRecord(r->done[k], s), what, st, out);
  }
out:
  return drain(ctx, st, what);
}

rdx_status ring_out(rdx_context *ctx, char *dst, const char *src, size_t bytes) {
  static const char what[] = "rdx_copy: from the device through the staging ring";
  ring_state *r = (ring_state *)ctx->ring_state;
  cudaStream_t s = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  size_t n = (bytes + r->chunk - 1) / r->chunk, queued = 0;
  for (size_t c = 0; c < n; c++) {
    for (; queued < n && queued < c + RING_SLOTS; queued++) { /* keep every slot busy */
      int k = (int)(queued % RING_SLOTS);
      size_t off = queued * r->chunk, len = bytes - off < r->chunk ? bytes - off : r->chunk;
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync((char *)ctx->ring + (size_t)k * r->chunk, src + off, len,
                                         cudaMemcpyDeviceToHost, s), what, st, out);
      RDX_CUDA_GOTO(ctx, cudaEventRecord(r->done[k], s), what, st, out);
    }
    int k = (int)(c % RING_SLOTS);
    size_t off = c * r->chunk, len = bytes - off < r->chunk ? bytes - off : r->chunk;
    RDX_CUDA_GOTO(ctx, cudaEventSynchronize(r->done[k]), what, st, out);
    host_copy(ctx, dst + off, (const char *)ctx->ring + (size_t)k * r->chunk, len);
  }
out:
  return drain(ctx, st, what);
}

}  // namespace

/* The ring, made at the end of the GPU context's creation. Best effort: where the pinned memory
 * or the events cannot be had (the memory limit is below the ring, the host is short of pinned
 * memory), the context copies without a ring, as the driver does. */
extern "C" void rdx_staging_init(rdx_context *ctx, size_t bytes) {
  if (bytes == 0) bytes = RING_DEFAULT_BYTES;
  if (bytes < RING_SLOTS) bytes = RING_SLOTS;
  ring_state *r = (ring_state *)calloc(1, sizeof *r);
  if (r == NULL) return;
  r->chunk = bytes / RING_SLOTS;
  int made = 0;
  for (; made < RING_SLOTS; made++)
    if (cudaEventCreateWithFlags(&r->done[made], cudaEventDisableTiming) != cudaSuccess) break;
  void *ring = NULL;
  if (made < RING_SLOTS || rdx_mem_alloc(ctx, "rdx_context_create: staging ring", &ring, r->chunk * RING_SLOTS,
                                         RDX_HOST_PINNED) != RDX_OK) {
    while (made > 0) cudaEventDestroy(r->done[--made]);
    free(r);
    (void)cudaGetLastError();
    ctx->message[0] = '\0'; /* the context works without it: nothing failed */
    return;
  }
  ctx->ring = ring;
  ctx->ring_state = r;
}

/* Events only: the ring's memory is the account's, freed with the context's other allocations. */
extern "C" void rdx_staging_fini(rdx_context *ctx) {
  ring_state *r = (ring_state *)ctx->ring_state;
  if (r == NULL) return;
  for (int k = 0; k < RING_SLOTS; k++) cudaEventDestroy(r->done[k]);
  free(r);
  ctx->ring_state = NULL;
  ctx->ring = NULL;
  (void)cudaGetLastError();
}

extern "C" size_t rdx_staging_bytes(const rdx_context *ctx) {
  const ring_state *r = (const ring_state *)ctx->ring_state;
  return r ? r->chunk * RING_SLOTS : 0;
}

extern "C" void rdx_staging_force(rdx_context *ctx, int mode) { ctx->force.staging = mode; }

/* A copy with the device on one side or both (rdx_copy, staged arrays): through the ring when one
 * side is pageable host memory and the copy is large enough to gain from it. Returns when the
 * bytes are at dst. */
extern "C" rdx_status rdx_cuda_memcpy(rdx_context *ctx, void *dst, const void *src, size_t bytes) {
  static const char what[] = "rdx_copy: cudaMemcpy";
  int mode = ctx->force.staging;
  if (ctx->ring && mode != RDX_STAGING_DIRECT && (mode == RDX_STAGING_RING || bytes >= STAGE_MIN_BYTES)) {
    mem_kind d = kind_of(dst), s = kind_of(src);
    if (s == PAGEABLE && d == DEVICE) return ring_in(ctx, (char *)dst, (const char *)src, bytes);
    if (s == DEVICE && d == PAGEABLE) return ring_out(ctx, (char *)dst, (const char *)src, bytes);
  }
  RDX_CUDA(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, rdx_stream(ctx)), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(rdx_stream(ctx)), what);
  return RDX_OK;
}
