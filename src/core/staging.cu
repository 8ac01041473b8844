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
  /* rdx_staged_map's pipeline: a stream per direction, so chunk i+1 goes up and chunk i-1 comes
   * down while chunk i is worked on, and an event per stage and buffer (chunks alternate between
   * two device buffers each way) */
  cudaStream_t up, down;
  cudaEvent_t up_done[2], work_done[2], down_done[2];
  int busy; /* a pipeline holds the slots: other copies meanwhile go the driver's way */
};
constexpr int RING_EVENTS = RING_SLOTS + 6;

cudaEvent_t *event_at(ring_state *r, int i) {
  return i < RING_SLOTS ? &r->done[i] : i < RING_SLOTS + 2 ? &r->up_done[i - RING_SLOTS]
                      : i < RING_SLOTS + 4 ? &r->work_done[i - RING_SLOTS - 2] : &r->down_done[i - RING_SLOTS - 4];
}

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
  int made = 0, streams = 0;
  for (; made < RING_EVENTS; made++)
    if (cudaEventCreateWithFlags(event_at(r, made), cudaEventDisableTiming) != cudaSuccess) break;
  if (cudaStreamCreateWithPriority(&r->up, cudaStreamNonBlocking, ctx->stream_priority) == cudaSuccess) streams++;
  if (streams == 1 && cudaStreamCreateWithPriority(&r->down, cudaStreamNonBlocking, ctx->stream_priority) == cudaSuccess)
    streams++;
  void *ring = NULL;
  if (made < RING_EVENTS || streams < 2 ||
      rdx_mem_alloc(ctx, "rdx_context_create: staging ring", &ring, r->chunk * RING_SLOTS, RDX_HOST_PINNED) != RDX_OK) {
    while (made > 0) cudaEventDestroy(*event_at(r, --made));
    if (streams > 0) cudaStreamDestroy(r->up);
    if (streams > 1) cudaStreamDestroy(r->down);
    free(r);
    (void)cudaGetLastError();
    ctx->message[0] = '\0'; /* the context works without it: nothing failed */
    return;
  }
  ctx->ring = ring;
  ctx->ring_state = r;
}

/* Events and streams only: the ring's memory is the account's, freed with the context's other allocations. */
extern "C" void rdx_staging_fini(rdx_context *ctx) {
  ring_state *r = (ring_state *)ctx->ring_state;
  if (r == NULL) return;
  for (int k = 0; k < RING_EVENTS; k++) cudaEventDestroy(*event_at(r, k));
  cudaStreamDestroy(r->up);
  cudaStreamDestroy(r->down);
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
  const ring_state *r = (const ring_state *)ctx->ring_state;
  if (r && !r->busy && mode != RDX_STAGING_DIRECT && (mode == RDX_STAGING_RING || bytes >= STAGE_MIN_BYTES)) {
    mem_kind d = kind_of(dst), s = kind_of(src);
    if (s == PAGEABLE && d == DEVICE) return ring_in(ctx, (char *)dst, (const char *)src, bytes);
    if (s == DEVICE && d == PAGEABLE) return ring_out(ctx, (char *)dst, (const char *)src, bytes);
  }
  RDX_CUDA(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, rdx_stream(ctx)), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(rdx_stream(ctx)), what);
  return RDX_OK;
}

/* ---- a batch answered chunk by chunk, the copies overlapping the work ---- */

extern "C" int64_t rdx_staged_map_chunk(const rdx_context *ctx, int64_t n, size_t in_item, size_t out_item) {
  const ring_state *r = (const ring_state *)ctx->ring_state;
  const int mode = ctx->force.staging;
  if (r == NULL || r->busy || mode == RDX_STAGING_DIRECT || n <= 0) return 0;
  const size_t item = in_item > out_item ? in_item : out_item;
  const int64_t per = (int64_t)(r->chunk / (item ? item : 1));
  if (per == 0) return 0;                              /* a slot holds less than one item */
  if (mode != RDX_STAGING_RING && n <= per) return 0;  /* one chunk: nothing to overlap */
  /* whole groups of 64 items where a slot holds more: every chunk and buffer starts 256-byte
   * aligned for the kernels' vector loads */
  return per >= 64 ? per & ~(int64_t)63 : per;
}

/* Chunk i (of `per` items) goes up into device buffer i % 2 on the ring's up stream, is worked on
 * on the context's stream, and comes down on the down stream; chunk i+1's host copy into its ring
 * slot and chunk i-1's copy out of its slot run on the context's threads meanwhile. Events order
 * the reuse: a ring slot is refilled once its upload has left (up_done), a device input buffer
 * once its chunk was worked on (work_done), a device output buffer once its answers came down
 * (down_done). Slots 0 and 1 carry inputs, 2 and 3 answers. Pinned caller memory is copied from
 * and to directly. Every stream is idle again when this returns, on every path. */
extern "C" rdx_status rdx_staged_map(rdx_context *ctx, const char *what, const void *in, size_t in_item, void *out,
                                     size_t out_item, int64_t n, rdx_chunk_fn work, void *arg) {
  ring_state *r = (ring_state *)ctx->ring_state;
  const int64_t per = rdx_staged_map_chunk(ctx, n, in_item, out_item);
  if (per == 0) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: no staging ring for a pipelined batch", what);
  const bool in_pinned = kind_of(in) == PINNED, out_pinned = kind_of(out) == PINNED;
  const size_t in_bytes = (size_t)per * in_item, out_bytes = (size_t)per * out_item;
  char *dev = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&dev, 2 * (in_bytes + out_bytes), RDX_DEVICE));
  char *dev_in[2] = {dev, dev + in_bytes}, *dev_out[2] = {dev + 2 * in_bytes, dev + 2 * in_bytes + out_bytes};
  char *ring = (char *)ctx->ring;
  char *slot_in[2] = {ring, ring + r->chunk}, *slot_out[2] = {ring + 2 * r->chunk, ring + 3 * r->chunk};
  cudaStream_t s = rdx_stream(ctx);
  const int64_t n_chunks = (n + per - 1) / per;
  const char *src = (const char *)in;
  char *dst = (char *)out;
  rdx_status st = RDX_OK;
  auto items = [&](int64_t i) { return n - i * per < per ? n - i * per : per; };
  auto up = [&](int64_t i) -> cudaError_t { /* chunk i to dev_in[i % 2] */
    const int b = (int)(i & 1);
    const size_t bytes = (size_t)items(i) * in_item;
    const char *from = src + (size_t)(i * per) * in_item;
    cudaError_t e;
    if (!in_pinned) {
      if ((e = cudaEventSynchronize(r->up_done[b])) != cudaSuccess) return e;
      host_copy(ctx, slot_in[b], from, bytes);
      from = slot_in[b];
    }
    if ((e = cudaStreamWaitEvent(r->up, r->work_done[b], 0)) != cudaSuccess) return e;
    if ((e = cudaMemcpyAsync(dev_in[b], from, bytes, cudaMemcpyHostToDevice, r->up)) != cudaSuccess) return e;
    return cudaEventRecord(r->up_done[b], r->up);
  };
  auto drain = [&](int64_t i) -> cudaError_t { /* chunk i's answers from their slot to the caller */
    if (out_pinned) return cudaSuccess;
    const int b = (int)(i & 1);
    cudaError_t e = cudaEventSynchronize(r->down_done[b]);
    if (e == cudaSuccess) host_copy(ctx, dst + (size_t)(i * per) * out_item, slot_out[b], (size_t)items(i) * out_item);
    return e;
  };
  r->busy = 1;
  /* the buffers come in the context's stream's order: neither side stream touches them before */
  RDX_CUDA_GOTO(ctx, cudaEventRecord(r->work_done[0], s), what, st, out);
  RDX_CUDA_GOTO(ctx, cudaEventRecord(r->work_done[1], s), what, st, out);
  RDX_CUDA_GOTO(ctx, cudaStreamWaitEvent(r->down, r->work_done[0], 0), what, st, out);
  RDX_CUDA_GOTO(ctx, up(0), what, st, out);
  for (int64_t i = 0; i < n_chunks; i++) {
    const int b = (int)(i & 1);
    RDX_CUDA_GOTO(ctx, cudaStreamWaitEvent(s, r->up_done[b], 0), what, st, out);
    RDX_CUDA_GOTO(ctx, cudaStreamWaitEvent(s, r->down_done[b], 0), what, st, out);
    RDX_CHECK_GOTO(work(arg, dev_in[b], dev_out[b], items(i)), st, out);
    RDX_CUDA_GOTO(ctx, cudaEventRecord(r->work_done[b], s), what, st, out);
    RDX_CUDA_GOTO(ctx, cudaStreamWaitEvent(r->down, r->work_done[b], 0), what, st, out);
    char *to = out_pinned ? dst + (size_t)(i * per) * out_item : slot_out[b];
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(to, dev_out[b], (size_t)items(i) * out_item, cudaMemcpyDeviceToHost, r->down),
                  what, st, out);
    RDX_CUDA_GOTO(ctx, cudaEventRecord(r->down_done[b], r->down), what, st, out);
    if (i + 1 < n_chunks) RDX_CUDA_GOTO(ctx, up(i + 1), what, st, out);
    if (i >= 1) RDX_CUDA_GOTO(ctx, drain(i - 1), what, st, out);
  }
  RDX_CUDA_GOTO(ctx, drain(n_chunks - 1), what, st, out);
out: {
  /* every queued copy has finished before the buffers and slots are given back */
  cudaError_t e1 = cudaStreamSynchronize(r->up), e2 = cudaStreamSynchronize(r->down);
  cudaError_t e3 = cudaStreamSynchronize(s);
  cudaError_t e = e1 != cudaSuccess ? e1 : e2 != cudaSuccess ? e2 : e3;
  if (st == RDX_OK && e != cudaSuccess) st = rdx_cuda_fail(ctx, e, what);
  (void)cudaGetLastError();
  r->busy = 0;
  rdx_mem_free(ctx, dev);
  return st;
}
}
