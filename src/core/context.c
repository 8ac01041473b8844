/*
 * context.c: contexts, status names, failure messages, version and build information.
 *
 * A context is created even when its backend cannot start, so that rdx_context_message can say
 * why (sqlite3_open's habit). The message buffer belongs to the context, never to the process
 * (unlike NCCL's global last-error string), so independent contexts never see each other's errors.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *rdx_status_name(rdx_status status) {
  switch (status) {
#define RDX_STATUS_NAME_(name, number, sentence) \
  case RDX_##name:                               \
    return "RDX_" #name;
    RDX_STATUS_MAP(RDX_STATUS_NAME_)
#undef RDX_STATUS_NAME_
  }
  return "RDX_UNKNOWN_STATUS";
}

const char *rdx_status_string(rdx_status status) {
  switch (status) {
#define RDX_STATUS_STRING_(name, number, sentence) \
  case RDX_##name:                                 \
    return sentence;
    RDX_STATUS_MAP(RDX_STATUS_STRING_)
#undef RDX_STATUS_STRING_
  }
  return "unknown status";
}

int rdx_version_number(void) { return RDX_VERSION_NUMBER; }

const char *rdx_version_string(void) {
#define RDX_STR2_(x) #x
#define RDX_STR_(x) RDX_STR2_(x)
  return RDX_STR_(RDX_VERSION_MAJOR) "." RDX_STR_(RDX_VERSION_MINOR) "." RDX_STR_(RDX_VERSION_PATCH);
}

const char *rdx_kind_name(rdx_kind kind) {
  switch (kind) {
    case RDX_KIND_SCAN: return "scan";
    case RDX_KIND_SORTED: return "sorted";
    case RDX_KIND_BTREE: return "btree";
    case RDX_KIND_HASH: return "hash";
    case RDX_KIND_RX: return "rx";
    case RDX_KIND_CGRX: return "cgrx";
    case RDX_KIND_CGRXU: return "cgrxu";
  }
  return NULL;
}

const char *rdx_backend_name(rdx_backend backend) {
  switch (backend) {
    case RDX_BACKEND_AUTO: return "auto";
    case RDX_BACKEND_CPU: return "cpu";
    case RDX_BACKEND_CUDA: return "cuda";
    case RDX_BACKEND_OPTIX: return "optix";
  }
  return NULL;
}

size_t rdx_dtype_size(rdx_dtype dtype) {
  switch (dtype) {
    case RDX_U32: case RDX_F32: return 4;
    case RDX_U64: case RDX_I64: case RDX_F64: return 8;
  }
  return 0;
}

rdx_status rdx_fail(rdx_context *ctx, rdx_status code, const char *fmt, ...) {
  if (ctx == NULL) return code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
  va_end(ap);
  if (ctx->log_fn) ctx->log_fn(RDX_LOG_ERROR, ctx->message, ctx->log_user);
  return code;
}

void rdx_clear_message(rdx_context *ctx) { ctx->message[0] = '\0'; }

/* Characters rdx_escape writes for byte c. */
static size_t escaped_width(unsigned c) { return c == '\\' ? 2 : c >= 0x20 && c < 0x7F ? 1 : 4; }

const char *rdx_escape(char *out, size_t cap, const void *bytes, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *b = (const unsigned char *)bytes;
  if (cap == 0) return out;
  /* the whole text if it fits, else as much as fits before "..." (no escape is split) */
  size_t need = 0;
  for (size_t i = 0; i < len && need < cap; i++) need += escaped_width(b[i]);
  int cut = need > cap - 1;
  size_t room = cut && cap > 4 ? cap - 4 : cap - 1, n = 0;
  for (size_t i = 0; i < len && n + escaped_width(b[i]) <= room; i++) {
    unsigned c = b[i];
    if (escaped_width(c) == 1) {
      out[n++] = (char)c;
    } else if (c == '\\') {
      out[n++] = '\\', out[n++] = '\\';
    } else {
      out[n++] = '\\', out[n++] = 'x', out[n++] = hex[c >> 4], out[n++] = hex[c & 15];
    }
  }
  if (cut && cap > 4) memcpy(out + n, "...", 3), n += 3;
  out[n] = '\0';
  return out;
}

rdx_status rdx_check_context(rdx_context *ctx) {
  if (ctx == NULL) return RDX_ERR_INVALID_ARGUMENT;
  if (ctx->magic != RDX_CONTEXT_MAGIC) return RDX_ERR_MISUSE;
  ctx->message[0] = '\0';
  if (rdx_is_gpu(ctx)) rdx_cuda_make_current(ctx); /* every call's first step: its device */
  return RDX_OK;
}

int rdx_trace_on(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("RAYDEX_TRACE");
    on = e != NULL && *e != '\0'; /* empty means unset, as for every variable (rdx_env_check) */
  }
  return on;
}

static int trace_events(void) {
  static int on = -1;
  if (on < 0) on = rdx_trace_on() && strcmp(getenv("RAYDEX_TRACE"), "events") == 0;
  return on;
}

/* A diagnostic the caller asked for through the environment: the context's log when it has one,
 * else stderr, since RAYDEX_TRACE's whole point is to be seen (raydex.h, rdx_context_options). */
void rdx_trace_line(rdx_context *ctx, const char *text) {
  char line[600];
  snprintf(line, sizeof line, "[raydex trace] %s", text);
  if (ctx->log_fn) ctx->log_fn(RDX_LOG_DEBUG, line, ctx->log_user);
  else fprintf(stderr, "%s\n", line);
}

void rdx_trace(rdx_context *ctx, const char *what) {
  if (!rdx_trace_on()) return;
  if (trace_events() && rdx_is_gpu(ctx)) {
    rdx_cuda_trace_mark(ctx, what);
    return;
  }
  if (rdx_is_gpu(ctx)) (void)rdx_cuda_sync(ctx, what);
  double t = rdx_now_ms();
  char text[512];
  snprintf(text, sizeof text, "%9.3f ms  %s", ctx->trace_ms > 0 ? t - ctx->trace_ms : 0.0, what);
  rdx_trace_line(ctx, text);
  ctx->trace_ms = t;
}

void rdx_trace_flush(rdx_context *ctx) {
  if (trace_events() && rdx_is_gpu(ctx)) rdx_cuda_trace_flush(ctx);
}

double rdx_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* AUTO picks CUDA when a GPU is present: every key kind on CUDA beats the CPU backend by far
 * (bench/results/). On GPUs with RT cores and a working OptiX it picks OPTIX, so rx and cgrx run
 * on the RT cores (the other kinds run on the same CUDA code there). Without RT cores OptiX
 * traverses in software too, and raydex's own soft BVH is the one tuned for these scenes; the
 * H200 runs of scripts/gpu-check.d/rt.sh measure both (bench/results/<gpu>/rt_*.csv). */
static rdx_backend pick_auto(void) {
  if (!(rdx_cuda_built() && rdx_cuda_device_count() > 0)) return RDX_BACKEND_CPU;
  rdx_info gi;
  memset(&gi, 0, sizeof gi);
  rdx_cuda_info(&gi);
  if (gi.rt_cores && rdx_optix_built() && rdx_optix_usable()) return RDX_BACKEND_OPTIX;
  return RDX_BACKEND_CUDA;
}

/* The environment variables the library reads and what each accepts: a word from `words`
 * ("a|b"; empty means unset, the default), or else a decimal integer in [lo, hi]. No tuning knob
 * is read from the environment: tests and benchmarks force paths through internal entry points
 * (rdx_context.force; spatial.h, rdx_sp_force_rebuild). */
static const struct env_var {
  const char *name;
  const char *words; /* NULL: an integer */
  int64_t lo, hi;
} env_vars[] = {
    {"RAYDEX_THREADS", NULL, 1, 4096},       /* CPU threads (pool.c) */
    {"RAYDEX_TRACE", "1|events", 0, 0},      /* rdx_trace marks */
};

static int env_word_ok(const char *words, const char *v) {
  size_t n = strlen(v);
  if (n == 0) return 1;
  for (const char *w = words; *w;) {
    size_t k = strcspn(w, "|");
    if (k == n && memcmp(w, v, n) == 0) return 1;
    w += k + (w[k] == '|');
  }
  return 0;
}

static int env_int_ok(const char *v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (*v == '\0') return 0;
  for (; *v; v++) {
    if (*v < '0' || *v > '9') return 0;
    x = x * 10 + (*v - '0');
    if (x > hi) return 0;
  }
  return x >= lo;
}

rdx_status rdx_env_check(rdx_context *ctx) {
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
    const struct env_var *e = &env_vars[i];
    const char *v = getenv(e->name);
    if (v == NULL || (e->words ? env_word_ok(e->words, v) : env_int_ok(v, e->lo, e->hi))) continue;
    char shown[RDX_ESCAPE_SHORT];
    rdx_escape(shown, sizeof shown, v, strlen(v));
    if (e->words)
      return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "rdx_context_create: %s must be one of %s or empty ('%s')",
                      e->name, e->words, shown);
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_context_create: %s must be an integer in [%lld, %lld] ('%s')", e->name,
                    (long long)e->lo, (long long)e->hi, shown);
  }
  return RDX_OK;
}

rdx_status rdx_context_create(const rdx_context_options *opts, rdx_context **out) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  if (out == NULL) return RDX_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (opts != NULL) {
    /* read only the fields the caller's struct has */
    size_t n = opts->size < sizeof o ? opts->size : sizeof o;
    if (n < sizeof(size_t)) n = 0;
    memcpy(&o, opts, n);
    o.size = sizeof o;
  }
  rdx_context *ctx = (rdx_context *)calloc(1, sizeof *ctx);
  if (ctx == NULL) return RDX_ERR_HOST_OUT_OF_MEMORY;
  ctx->magic = RDX_CONTEXT_MAGIC;
  ctx->log_fn = o.log_fn;
  ctx->log_user = o.log_user;
  ctx->stream_priority = o.stream_priority;
  ctx->device = o.device;
  ctx->memory_limit = o.memory_limit;
  ctx->n_threads = o.n_threads > 0 ? o.n_threads : rdx_default_threads();
  ctx->backend = RDX_BACKEND_CPU;
  *out = ctx;

  if (opts != NULL && opts->size < sizeof(size_t) + sizeof(rdx_backend) && opts->size != 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_context_create: opts->size %zu is too small", opts->size);
  if (o.backend == 0) o.backend = RDX_BACKEND_AUTO;
  if (rdx_backend_name(o.backend) == NULL)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_context_create: backend 0x%x is not an rdx_backend", (unsigned)o.backend);
  if (o.memory_limit < 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_context_create: memory_limit %lld is negative",
                    (long long)o.memory_limit);
  RDX_CHECK(rdx_env_check(ctx));
  if (o.backend == RDX_BACKEND_AUTO) o.backend = pick_auto();
  ctx->backend = o.backend;
  if (o.backend == RDX_BACKEND_CUDA || o.backend == RDX_BACKEND_OPTIX) {
    rdx_status st = rdx_cuda_context_init(ctx);
    if (st == RDX_OK && o.backend == RDX_BACKEND_OPTIX) st = rdx_optix_context_init(ctx);
    if (st != RDX_OK) {
      rdx_cuda_context_fini(ctx);
      ctx->backend = RDX_BACKEND_CPU; /* a usable, honest state: the message says what failed */
      return st;
    }
    rdx_staging_init(ctx, o.staging_bytes);
  }
  return RDX_OK;
}

void rdx_context_destroy(rdx_context *ctx) {
  if (ctx == NULL || ctx->magic != RDX_CONTEXT_MAGIC) return;
  /* Free anything still accounted (results the caller forgot), so nothing leaks. */
  while (ctx->n_live > 0) rdx_mem_free(ctx, ctx->live[ctx->n_live - 1].ptr);
  free(ctx->live);
  rdx_mem_trim(ctx);
  rdx_pool_destroy(ctx->pool);
  rdx_optix_context_fini(ctx);
  rdx_cuda_context_fini(ctx);
  free(ctx);
}

const char *rdx_context_message(const rdx_context *ctx) {
  if (ctx == NULL) return "rdx_context_message: ctx is NULL";
  if (ctx->magic != RDX_CONTEXT_MAGIC) return "rdx_context_message: ctx is not a live context";
  return ctx->message;
}

rdx_backend rdx_context_backend(const rdx_context *ctx) {
  return ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC ? ctx->backend : RDX_BACKEND_CPU;
}

rdx_status rdx_context_set_memory_limit(rdx_context *ctx, int64_t bytes) {
  RDX_CHECK(rdx_check_context(ctx));
  if (bytes < 0)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT,
                    "rdx_context_set_memory_limit: bytes %lld is negative", (long long)bytes);
  ctx->memory_limit = bytes;
  return RDX_OK;
}

void rdx_context_memory(const rdx_context *ctx, int64_t *in_use, int64_t *peak) {
  int ok = ctx != NULL && ctx->magic == RDX_CONTEXT_MAGIC;
  if (in_use) *in_use = ok ? ctx->in_use : 0;
  if (peak) *peak = ok ? ctx->peak : 0;
}

static void read_cpu_name(char *buf, size_t n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  buf[0] = '\0';
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      const char *p = strchr(line, ':');
      if (p) {
        p++;
        while (*p == ' ') p++;
        snprintf(buf, n, "%s", p);
        size_t len = strlen(buf);
        if (len && buf[len - 1] == '\n') buf[len - 1] = '\0';
      }
      break;
    }
  }
  fclose(f);
}

rdx_status rdx_info_get(rdx_info *info) {
  if (info == NULL || info->size < sizeof(rdx_info)) return RDX_ERR_INVALID_ARGUMENT;
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  info->version = rdx_version_string();
  info->cuda_built = rdx_cuda_built() != 0;
  info->cpu_threads = rdx_default_threads();
  read_cpu_name(info->cpu_name, sizeof info->cpu_name);
  if (info->cuda_built) rdx_cuda_info(info);
  info->optix_built = rdx_optix_built() != 0;
  info->optix_usable = info->optix_built && info->n_gpus > 0 && rdx_optix_usable() != 0;
  info->auto_backend = pick_auto();
#ifdef RDX_HAVE_GDAL
  info->have_gdal = true;
#endif
  return RDX_OK;
}
