/*
 * memory.c: the context's memory account and the staging of caller arrays.
 *
 * Every buffer raydex owns is registered in a small table of live allocations, so in_use and
 * peak are exact, the memory limit applies to index storage and scratch alike, and fault
 * injection (rdx_mem_fail_after) reaches every allocation site. The table holds tens of entries,
 * so a linear search on free is cheaper than any hashing.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rdx_mem_fail_after(rdx_context *ctx, int64_t n) { ctx->fail_countdown = n > 0 ? n : 0; }

/* The host cache. The C library hands large blocks back to the system on free and maps fresh
 * pages on the next malloc, so every call that needs a few megabytes of host scratch (an
 * update's plan, run lists copied from the device) pays a page fault per 4 KiB, which is slow in
 * the virtual machines GPUs are lent in (bench/README.md, "Measurements behind the library's
 * choices"). Freed blocks are kept and reused by size (best fit within 2x). Sanitizer builds
 * keep nothing, so use-after-free stays visible to them. */
#if defined(__SANITIZE_ADDRESS__)
#define RDX_HOST_CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RDX_HOST_CACHE_ON 0
#endif
#endif
#ifndef RDX_HOST_CACHE_ON
#define RDX_HOST_CACHE_ON 1
#endif

static void *host_take(rdx_context *ctx, size_t real, size_t *cap) {
  *cap = (real + 63) & ~(size_t)63;
  if (RDX_HOST_CACHE_ON && real >= RDX_HOST_CACHE_MIN) {
    int best = -1;
    for (int i = 0; i < ctx->n_host_cache; i++) {
      size_t c = ctx->host_cache[i].cap;
      if (c >= real && c / 2 <= real && (best < 0 || c < ctx->host_cache[best].cap)) best = i;
    }
    if (best >= 0) {
      void *p = ctx->host_cache[best].ptr;
      *cap = ctx->host_cache[best].cap;
      ctx->host_cache_bytes -= *cap;
      ctx->host_cache[best] = ctx->host_cache[--ctx->n_host_cache];
      return p;
    }
  }
  /* 64-byte alignment: cache lines for the CPU search structures */
  return aligned_alloc(64, *cap);
}

/* The most the cache keeps: large enough for a batch's result rows (hundreds of megabytes, which a
 * GPU fills faster than the kernel maps fresh pages: bench/README.md, "fresh host pages"), small
 * beside the machine's memory. */
static size_t host_cache_limit(void) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t sixteenth = pages > 0 && page > 0 ? (size_t)pages / 16 * (size_t)page : RDX_HOST_CACHE_LIMIT;
  return sixteenth < RDX_HOST_CACHE_LIMIT ? sixteenth : RDX_HOST_CACHE_LIMIT;
}

static void host_give(rdx_context *ctx, void *p, size_t cap) {
  const size_t limit = host_cache_limit();
  if (RDX_HOST_CACHE_ON && cap >= RDX_HOST_CACHE_MIN && cap <= limit) {
    while (ctx->n_host_cache > 0 &&
           (ctx->n_host_cache == RDX_HOST_CACHE_BLOCKS || ctx->host_cache_bytes + cap > limit)) {
      ctx->host_cache_bytes -= ctx->host_cache[0].cap; /* the oldest goes */
      free(ctx->host_cache[0].ptr);
      ctx->host_cache[0] = ctx->host_cache[--ctx->n_host_cache];
    }
    ctx->host_cache[ctx->n_host_cache].ptr = p;
    ctx->host_cache[ctx->n_host_cache++].cap = cap;
    ctx->host_cache_bytes += cap;
    return;
  }
  free(p);
}

void rdx_mem_trim(rdx_context *ctx) {
  for (int i = 0; i < ctx->n_host_cache; i++) free(ctx->host_cache[i].ptr);
  ctx->n_host_cache = 0;
  ctx->host_cache_bytes = 0;
}

rdx_location rdx_compute_location(const rdx_context *ctx) {
  return rdx_is_gpu(ctx) ? RDX_DEVICE : RDX_HOST;
}

static rdx_status oom(rdx_context *ctx, const char *what, size_t bytes, rdx_location where,
                      const char *why) {
  return rdx_fail(ctx, where == RDX_DEVICE ? RDX_ERR_DEVICE_OUT_OF_MEMORY : RDX_ERR_HOST_OUT_OF_MEMORY,
                  "%s: cannot allocate %zu bytes of %s memory (%s; %lld bytes in use, limit %lld)",
                  what, bytes, where == RDX_DEVICE ? "device" : "host", why,
                  (long long)ctx->in_use, (long long)ctx->memory_limit);
}

rdx_status rdx_mem_alloc(rdx_context *ctx, const char *what, void **ptr, size_t bytes,
                         rdx_location where) {
  *ptr = NULL;
  /* Checked before any rounding or accounting: the host block is rounded up to 64 bytes and the
   * account is int64_t, so a larger request would wrap into a small block. */
  if ((uint64_t)bytes > (uint64_t)INT64_MAX)
    return oom(ctx, what, bytes, where, "more than 2^63 - 1 bytes, past what the account can count");
  if (ctx->fail_countdown > 0 && --ctx->fail_countdown == 0)
    return oom(ctx, what, bytes, where, "fault injected");
  if (ctx->memory_limit > 0 && (int64_t)bytes > ctx->memory_limit - ctx->in_use)
    return oom(ctx, what, bytes, where, "over the context's memory limit");
  if (ctx->n_live == ctx->cap_live) {
    int cap = ctx->cap_live ? 2 * ctx->cap_live : 32;
    rdx_allocation *t = (rdx_allocation *)realloc(ctx->live, (size_t)cap * sizeof *t);
    if (t == NULL) return oom(ctx, what, bytes, RDX_HOST, "allocation table");
    ctx->live = t;
    ctx->cap_live = cap;
  }
  size_t real = bytes ? bytes : 1, cap = real;
  void *p = NULL;
  if (where == RDX_DEVICE || where == RDX_HOST_PINNED) {
    rdx_status st = rdx_cuda_malloc(ctx, &p, real, where == RDX_HOST_PINNED);
    if (st != RDX_OK) return oom(ctx, what, bytes, where, "cudaMalloc failed");
  } else {
    p = host_take(ctx, real, &cap);
    if (p == NULL) return oom(ctx, what, bytes, where, "malloc failed");
  }
  rdx_allocation *a = &ctx->live[ctx->n_live++];
  a->ptr = p;
  a->bytes = bytes;
  a->cap = cap;
  a->where = where;
  ctx->in_use += (int64_t)bytes;
  if (ctx->in_use > ctx->peak) ctx->peak = ctx->in_use;
  *ptr = p;
  return RDX_OK;
}

void rdx_mem_free(rdx_context *ctx, void *ptr) {
  if (ptr == NULL) return;
  for (int i = ctx->n_live - 1; i >= 0; i--) {
    if (ctx->live[i].ptr != ptr) continue;
    rdx_allocation a = ctx->live[i];
    ctx->live[i] = ctx->live[--ctx->n_live];
    ctx->in_use -= (int64_t)a.bytes;
    if (a.where == RDX_HOST)
      host_give(ctx, a.ptr, a.cap);
    else
      rdx_cuda_free(ctx, a.ptr, a.where == RDX_HOST_PINNED);
    return;
  }
  /* Not ours: a caller bug. Freeing it could corrupt the heap, so leave it. */
}

rdx_status rdx_malloc(rdx_context *ctx, void **ptr, size_t bytes, rdx_location where) {
  RDX_CHECK(rdx_check_context(ctx));
  if (ptr == NULL) return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_malloc: ptr is NULL");
  if (where != RDX_HOST && where != RDX_DEVICE && where != RDX_HOST_PINNED)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_malloc: where %d is not an rdx_location",
                    (int)where);
  if (where != RDX_HOST && !rdx_is_gpu(ctx))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_malloc: %s memory needs a cuda or optix context (this one is %s)",
                    where == RDX_DEVICE ? "device" : "pinned", rdx_backend_name(ctx->backend));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_malloc", ptr, bytes, where));
  /* the pool's allocation is ordered on the context's stream; the caller's streams may use it
   * as soon as this returns */
  if (where == RDX_DEVICE && ctx->pooled) {
    rdx_status st = rdx_cuda_sync(ctx, "rdx_malloc");
    if (st != RDX_OK) {
      rdx_mem_free(ctx, *ptr);
      *ptr = NULL;
      return st;
    }
  }
  return RDX_OK;
}

void rdx_free(rdx_context *ctx, void *ptr, rdx_location where) {
  (void)where;
  if (ctx == NULL || ctx->magic != RDX_CONTEXT_MAGIC || ptr == NULL) return;
  rdx_mem_release_to_caller(ctx, ptr);
}

/* The caller may have used this memory on streams of its own: cudaFree would have waited for
 * them (it synchronises the device), so the pool's stream-ordered free waits likewise. */
void rdx_mem_release_to_caller(rdx_context *ctx, void *ptr) {
  if (ctx->pooled) rdx_cuda_device_sync(ctx);
  rdx_mem_free(ctx, ptr);
}

rdx_status rdx_copy(rdx_context *ctx, void *dst, rdx_location dst_where, const void *src,
                    rdx_location src_where, size_t bytes) {
  RDX_CHECK(rdx_check_context(ctx));
  if (bytes == 0) return RDX_OK;
  if (dst == NULL || src == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_copy: %s is NULL", dst ? "src" : "dst");
  if (dst_where == RDX_DEVICE || src_where == RDX_DEVICE) {
    if (!rdx_is_gpu(ctx))
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                      "rdx_copy: device memory needs a cuda or optix context (this one is %s)",
                      rdx_backend_name(ctx->backend));
    return rdx_cuda_memcpy(ctx, dst, src, bytes);
  }
  memmove(dst, src, bytes);
  return RDX_OK;
}

/* ---- arrays ---- */

rdx_status rdx_array_check(rdx_context *ctx, const char *fn, const char *name, rdx_array a) {
  if (rdx_dtype_size(a.dtype) == 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.dtype 0x%x is not an rdx_dtype", fn,
                    name, (unsigned)a.dtype);
  if (a.count < 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.count %lld is negative", fn, name,
                    (long long)a.count);
  if (a.columns < 1)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.columns %d is not positive", fn, name,
                    a.columns);
  size_t bytes;
  if (!rdx_size_rows(a.count, a.columns, rdx_dtype_size(a.dtype), &bytes) || bytes > RDX_MAX_ARRAY_BYTES)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: %s.count %lld of %d x %zu bytes is more than an address space holds (2^56 bytes)",
                    fn, name, (long long)a.count, a.columns, rdx_dtype_size(a.dtype));
  if (a.data == NULL && a.count > 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.data is NULL but count is %lld", fn,
                    name, (long long)a.count);
  if (a.where != RDX_HOST && a.where != RDX_DEVICE && a.where != RDX_HOST_PINNED)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %s.where %d is not an rdx_location", fn,
                    name, (int)a.where);
  if (a.where == RDX_DEVICE && !rdx_is_gpu(ctx))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "%s: %s is device memory but the context's backend is %s", fn, name,
                    rdx_backend_name(ctx->backend));
  if (a.count > 0 && rdx_cuda_built() && rdx_cuda_device_count() > 0) {
    /* NCCL's CudaPtrCheck: a claim about the location is verified, not trusted. */
    int dev = rdx_cuda_is_device_pointer(a.data);
    if (a.where == RDX_DEVICE && dev == 0)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                      "%s: %s.data %p is claimed as device memory but is host memory", fn, name,
                      a.data);
    if (a.where != RDX_DEVICE && dev == 1)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                      "%s: %s.data %p is claimed as host memory but is device memory", fn, name,
                      a.data);
  }
  return RDX_OK;
}

rdx_status rdx_array_stage(rdx_context *ctx, const char *what, rdx_array a, int copy_in,
                           rdx_staged *out) {
  rdx_location loc = rdx_compute_location(ctx);
  out->owned = 0;
  out->data = a.data;
  out->bytes = 0;
  if (!rdx_size_rows(a.count, a.columns, rdx_dtype_size(a.dtype), &out->bytes))
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: array count %lld of %d x %zu bytes overflows size_t",
                    what, (long long)a.count, a.columns, rdx_dtype_size(a.dtype));
  int here = (loc == RDX_DEVICE) == (a.where == RDX_DEVICE);
  if (here) return RDX_OK;
  RDX_CHECK(rdx_mem_alloc(ctx, what, &out->data, out->bytes, loc));
  out->owned = 1;
  if (copy_in && out->bytes) {
    rdx_status st = rdx_cuda_memcpy(ctx, out->data, a.data, out->bytes);
    if (st != RDX_OK) {
      rdx_mem_free(ctx, out->data);
      out->data = NULL;
      out->owned = 0;
      return st;
    }
  }
  return RDX_OK;
}

rdx_status rdx_array_unstage(rdx_context *ctx, rdx_array a, const rdx_staged *s) {
  if (!s->owned || s->bytes == 0) return RDX_OK;
  return rdx_cuda_memcpy(ctx, a.data, s->data, s->bytes);
}

void rdx_array_release(rdx_context *ctx, rdx_staged *s) {
  if (s->owned) rdx_mem_free(ctx, s->data);
  s->owned = 0;
  s->data = NULL;
}
