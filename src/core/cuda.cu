/*
 * cuda.cu: the CUDA side of the core: device selection, the context's stream, device memory for
 * the account, pointer checks and device information for rdx_info (copies: staging.cu).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_util.cuh"

extern "C" int rdx_cuda_built(void) { return 1; }

extern "C" int rdx_cuda_device_count(void) {
  static int cached = -1;
  if (cached < 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)cudaGetLastError();
    cached = n;
  }
  return cached;
}

static cudaError_t side_make(rdx_context *ctx);

extern "C" rdx_status rdx_cuda_context_init(rdx_context *ctx) {
  int n = rdx_cuda_device_count();
  if (n == 0)
    return rdx_fail(ctx, RDX_ERR_NO_BACKEND,
                    "rdx_context_create: backend %s needs a CUDA GPU and none is visible",
                    rdx_backend_name(ctx->backend));
  if (ctx->device < 0 || ctx->device >= n)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_context_create: device %d is not in [0, %d)", ctx->device, n);
  RDX_CUDA(ctx, cudaSetDevice(ctx->device), "rdx_context_create: cudaSetDevice");
  /* The context's stream at the default priority unless the caller asked for another
   * (rdx_context_options.stream_priority): a greater one would change the caller's other work on
   * the device. CUDA clamps the value to the device's range. */
  cudaStream_t s;
  RDX_CUDA(ctx, cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, ctx->stream_priority),
           "rdx_context_create: cudaStreamCreate");
  ctx->stream = (void *)s;
  /* Device memory comes from the device's stream-ordered pool (cudaMallocAsync), which keeps
   * freed memory for the next allocation instead of returning it to the driver. cudaMalloc and
   * cudaFree cost milliseconds per gigabyte and cudaFree synchronises the device: a 1.7e8-point
   * quadtree build spent three quarters of its time there. The context trims the pool when it is
   * destroyed. */
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ctx->device) == cudaSuccess && pools) {
    cudaMemPool_t mp;
    if (cudaDeviceGetDefaultMemPool(&mp, ctx->device) == cudaSuccess) {
      uint64_t keep = UINT64_MAX;
      if (cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess) ctx->pooled = 1;
    }
  }
  (void)side_make(ctx); /* or at the first fork */
  (void)cudaGetLastError();
  return RDX_OK;
}

struct side_state {
  cudaStream_t aux;          /* rdx_cuda_fork's stream */
  cudaEvent_t forked, joined;
  cudaEvent_t waited;        /* rdx_context_wait_stream's: recorded on the caller's stream */
  cudaStream_t own;          /* the context's stream while switched to aux (rdx_cuda_switch), else NULL */
};

static void side_destroy(rdx_context *ctx) {
  side_state *p = (side_state *)ctx->side;
  if (!p) return;
  if (p->own) ctx->stream = p->own; /* a switch left on: the context keeps its own stream */
  if (p->aux) cudaStreamSynchronize(p->aux), cudaStreamDestroy(p->aux);
  if (p->forked) cudaEventDestroy(p->forked);
  if (p->joined) cudaEventDestroy(p->joined);
  if (p->waited) cudaEventDestroy(p->waited);
  free(p);
  ctx->side = NULL;
  (void)cudaGetLastError();
}

/* Made with the context, or by the first fork if that failed. */
static cudaError_t side_make(rdx_context *ctx) {
  if (ctx->side) return cudaSuccess;
  side_state *p = (side_state *)calloc(1, sizeof *p);
  if (!p) return cudaErrorMemoryAllocation;
  ctx->side = p;
  cudaError_t e = cudaStreamCreateWithPriority(&p->aux, cudaStreamNonBlocking, ctx->stream_priority);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&p->forked, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&p->joined, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&p->waited, cudaEventDisableTiming);
  if (e != cudaSuccess) side_destroy(ctx);
  return e;
}

/* The caller's stream gets an event, the context's stream waits for it: no host wait. The event
 * is the context's own (side_state), reused: a wait takes the event's state when it is enqueued,
 * so recording it again later changes no earlier wait. */
extern "C" rdx_status rdx_context_wait_stream(rdx_context *ctx, void *stream) {
  static const char what[] = "rdx_context_wait_stream";
  RDX_CHECK(rdx_check_context(ctx));
  if (!rdx_is_gpu(ctx)) return RDX_OK;
  RDX_CUDA(ctx, side_make(ctx), what);
  side_state *p = (side_state *)ctx->side;
  RDX_CUDA(ctx, cudaEventRecord(p->waited, (cudaStream_t)stream), what);
  RDX_CUDA(ctx, cudaStreamWaitEvent(rdx_stream(ctx), p->waited, 0), what);
  return RDX_OK;
}
extern "C" rdx_status rdx_cuda_fork(rdx_context *ctx, void **stream, const char *what) {
  *stream = ctx->stream;
  if (side_make(ctx) != cudaSuccess) { /* no side stream: the work runs in order on the context's */
    (void)cudaGetLastError();
    return RDX_OK;
  }
  side_state *p = (side_state *)ctx->side;
  RDX_CUDA(ctx, cudaEventRecord(p->forked, rdx_stream(ctx)), what);
  RDX_CUDA(ctx, cudaStreamWaitEvent(p->aux, p->forked, 0), what);
  *stream = (void *)p->aux;
  return RDX_OK;
}

extern "C" void rdx_cuda_switch(rdx_context *ctx, void *stream) {
  side_state *p = (side_state *)ctx->side;
  if (!p || !p->aux) return; /* the fork gave the context's own stream */
  if (stream == (void *)p->aux && !p->own) {
    p->own = rdx_stream(ctx);
    ctx->stream = (void *)p->aux;
  } else if (stream == NULL && p->own) {
    ctx->stream = (void *)p->own;
    p->own = NULL;
  }
}

extern "C" int rdx_cuda_switched(const rdx_context *ctx) {
  const side_state *p = (const side_state *)ctx->side;
  return p && p->own;
}

extern "C" rdx_status rdx_cuda_join(rdx_context *ctx, void *stream, const char *what) {
  side_state *p = (side_state *)ctx->side;
  if (p && p->own) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a join while switched to the side stream", what);
  if (stream == ctx->stream) return RDX_OK;
  if (!p || stream != (void *)p->aux) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a join without its fork", what);
  RDX_CUDA(ctx, cudaEventRecord(p->joined, p->aux), what);
  RDX_CUDA(ctx, cudaStreamWaitEvent(rdx_stream(ctx), p->joined, 0), what);
  return RDX_OK;
}

extern "C" void rdx_cuda_context_fini(rdx_context *ctx) {
  rdx_cuda_make_current(ctx);
  rdx_staging_fini(ctx);
  side_destroy(ctx);
  if (ctx->stream) {
    cudaStreamSynchronize(rdx_stream(ctx));
    cudaStreamDestroy(rdx_stream(ctx));
    ctx->stream = NULL;
  }
  if (ctx->pooled) {
    cudaMemPool_t mp;
    if (cudaDeviceGetDefaultMemPool(&mp, ctx->device) == cudaSuccess) cudaMemPoolTrimTo(mp, 0);
    (void)cudaGetLastError();
  }
}

extern "C" rdx_status rdx_cuda_malloc(rdx_context *ctx, void **ptr, size_t bytes, int pinned) {
  cudaError_t e;
  if (pinned) e = cudaMallocHost(ptr, bytes);
  else if (ctx->pooled) e = cudaMallocAsync(ptr, bytes, rdx_stream(ctx));
  else e = cudaMalloc(ptr, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *ptr = NULL;
    return RDX_ERR_DEVICE_OUT_OF_MEMORY;
  }
  return RDX_OK;
}

/* Pool memory is freed in stream order: every use of it by raydex was queued on the context's
 * stream before this point, so the next allocation may reuse it without a device-wide sync. */
extern "C" void rdx_cuda_free(rdx_context *ctx, void *ptr, int pinned) {
  if (pinned)
    cudaFreeHost(ptr);
  else if (ctx->pooled)
    cudaFreeAsync(ptr, rdx_stream(ctx));
  else
    cudaFree(ptr);
  (void)cudaGetLastError();
}


extern "C" void rdx_cuda_make_current(rdx_context *ctx) {
  int now = -1;
  if (cudaGetDevice(&now) != cudaSuccess || now != ctx->device) (void)cudaSetDevice(ctx->device);
  (void)cudaGetLastError();
}

extern "C" void rdx_cuda_device_sync(rdx_context *ctx) {
  rdx_cuda_make_current(ctx);
  cudaDeviceSynchronize();
  (void)cudaGetLastError();
}

extern "C" rdx_status rdx_cuda_sync(rdx_context *ctx, const char *what) {
  RDX_CUDA(ctx, cudaStreamSynchronize(rdx_stream(ctx)), what);
  return RDX_OK;
}

/* RAYDEX_TRACE=events (core.h): marks of one call at a time, on one thread; a diagnostic. */
enum { TRACE_MAX = 256 };
static cudaEvent_t trace_ev[TRACE_MAX];
static const char *trace_what[TRACE_MAX];
static double trace_host[TRACE_MAX];
static int trace_n;

extern "C" void rdx_cuda_trace_mark(rdx_context *ctx, const char *what) {
  if (trace_n >= TRACE_MAX) return;
  if (trace_ev[trace_n] == nullptr && cudaEventCreate(&trace_ev[trace_n]) != cudaSuccess) return;
  trace_what[trace_n] = what;
  trace_host[trace_n] = rdx_now_ms();
  if (cudaEventRecord(trace_ev[trace_n], rdx_stream(ctx)) == cudaSuccess) trace_n++;
}

/* The first mark finds an idle stream, so its event time stands for its host time; a later
 * mark's "ahead" is then how long before the GPU reached it the host had enqueued it. */
extern "C" void rdx_cuda_trace_flush(rdx_context *ctx) {
  if (trace_n == 0 || cudaStreamSynchronize(rdx_stream(ctx)) != cudaSuccess) {
    trace_n = 0;
    return;
  }
  float prev = 0.0f;
  for (int i = 0; i < trace_n; i++) {
    float at = 0.0f;
    if (i > 0) cudaEventElapsedTime(&at, trace_ev[0], trace_ev[i]);
    double host = trace_host[i] - trace_host[0];
    char text[512];
    snprintf(text, sizeof text, "gpu %+8.3f ms at %8.3f, host at %8.3f (ahead %7.3f)  %s", at - prev, at, host, at - host,
             trace_what[i]);
    rdx_trace_line(ctx, text);
    prev = at;
  }
  trace_n = 0;
}

extern "C" int rdx_cuda_is_device_pointer(const void *ptr) {
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

extern "C" void rdx_cuda_info(rdx_info *info) {
  info->n_gpus = rdx_cuda_device_count();
  if (info->n_gpus == 0) return;
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  memcpy(info->gpu_name, p.name, sizeof info->gpu_name - 1); /* p.name is 256 bytes */
  info->gpu_name[sizeof info->gpu_name - 1] = 0;
  info->gpu_sms = p.multiProcessorCount;
  info->gpu_memory = (int64_t)p.totalGlobalMem;
  /* RT cores arrived with Turing (sm_75) on GeForce/RTX/professional parts; the data-centre
   * chips (sm_80 A100, sm_90 H100/H200) have none. */
  int cc = p.major * 10 + p.minor;
  info->rt_cores = cc >= 75 && cc != 80 && cc != 90 && cc != 100;
}
