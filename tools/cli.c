/*
 * cli.c: argument parsing and error exits shared by the raydex subcommands.
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *command = "raydex";

void cli_set_command(const char *name) { command = name; }

void cli_die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", command);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}

void cli_die_status(rdx_context *ctx, rdx_status st, const char *what) {
  int bad_input = st == RDX_ERR_INVALID_ARGUMENT || st == RDX_ERR_PARSE || st == RDX_ERR_IO ||
                  st == RDX_ERR_UNSUPPORTED || st == RDX_ERR_NO_BACKEND;
  const char *msg = ctx ? rdx_context_message(ctx) : "";
  cli_die(bad_input ? CLI_EXIT_BAD_INPUT : CLI_EXIT_FAILURE, "%s: %s%s%s", what, rdx_status_name(st),
          *msg ? ": " : "", msg);
}

int cli_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

void cli_args_init(cli_args *a, int argc, char **argv, const char *usage) {
  for (int i = 0; i < argc; i++)
    if (cli_is_help(argv[i])) {
      fputs(usage, stdout);
      exit(0);
    }
  a->argc = argc;
  a->argv = argv;
  a->used = (unsigned char *)calloc((size_t)argc + 1, 1);
  if (a->used == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
}

static int find(cli_args *a, const char *name) {
  for (int i = 0; i < a->argc; i++)
    if (strncmp(a->argv[i], "--", 2) == 0 && strcmp(a->argv[i] + 2, name) == 0) return i;
  return -1;
}

const char *cli_opt(cli_args *a, const char *name) {
  int i = find(a, name);
  if (i < 0) return NULL;
  if (i + 1 >= a->argc) cli_die(CLI_EXIT_BAD_INPUT, "--%s needs a value", name);
  a->used[i] = a->used[i + 1] = 1;
  return a->argv[i + 1];
}

int cli_flag(cli_args *a, const char *name) {
  int i = find(a, name);
  if (i < 0) return 0;
  a->used[i] = 1;
  return 1;
}

int64_t cli_parse_int(const char *name, const char *s) {
  /* 2^26, 1e6, 12345 */
  char *end;
  errno = 0;
  if (strncmp(s, "2^", 2) == 0) {
    long e = strtol(s + 2, &end, 10);
    if (*end || e < 0 || e > 62) cli_die(CLI_EXIT_BAD_INPUT, "--%s: '%s' is not an integer", name, s);
    return (int64_t)1 << e;
  }
  long long v = strtoll(s, &end, 10);
  if (*end == 'e' || *end == 'E' || *end == '.') {
    double d = strtod(s, &end);
    if (*end || d < -9.2e18 || d > 9.2e18 || d != floor(d))
      cli_die(CLI_EXIT_BAD_INPUT, "--%s: '%s' is not an integer", name, s);
    return (int64_t)d;
  }
  if (*end || errno || end == s) cli_die(CLI_EXIT_BAD_INPUT, "--%s: '%s' is not an integer", name, s);
  return (int64_t)v;
}

int64_t cli_int(cli_args *a, const char *name, int64_t dflt) {
  const char *s = cli_opt(a, name);
  return s ? cli_parse_int(name, s) : dflt;
}

double cli_double(cli_args *a, const char *name, double dflt) {
  const char *s = cli_opt(a, name);
  if (s == NULL) return dflt;
  char *end;
  double v = strtod(s, &end);
  if (*end || end == s || !isfinite(v)) cli_die(CLI_EXIT_BAD_INPUT, "--%s: '%s' is not a number", name, s);
  return v;
}

void cli_args_done(cli_args *a) {
  for (int i = 0; i < a->argc; i++)
    if (!a->used[i]) cli_die(CLI_EXIT_BAD_INPUT, "unknown argument '%s'", a->argv[i]);
  free(a->used);
  a->used = NULL;
}

rdx_backend cli_backend(const char *s) {
  static const rdx_backend all[] = {RDX_BACKEND_AUTO, RDX_BACKEND_CPU, RDX_BACKEND_CUDA, RDX_BACKEND_OPTIX};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(s, rdx_backend_name(all[i])) == 0) return all[i];
  cli_die(CLI_EXIT_BAD_INPUT, "--backend '%s' is not one of auto, cpu, cuda, optix", s);
}

rdx_kind cli_kind(const char *s) {
  for (int k = RDX_KIND_SCAN; k <= RDX_KIND_CGRX; k++)
    if (strcmp(s, rdx_kind_name((rdx_kind)k)) == 0) return (rdx_kind)k;
  cli_die(CLI_EXIT_BAD_INPUT, "--kind '%s' is not one of scan, sorted, btree, hash, rx, cgrx", s);
}

rdx_dtype cli_dtype(const char *s) {
  if (strcmp(s, "u32") == 0) return RDX_U32;
  if (strcmp(s, "u64") == 0) return RDX_U64;
  cli_die(CLI_EXIT_BAD_INPUT, "--dtype '%s' is not u32 or u64", s);
}

const char *cli_dtype_name(rdx_dtype d) {
  switch (d) {
    case RDX_U32: return "u32";
    case RDX_U64: return "u64";
    case RDX_I64: return "i64";
    case RDX_F32: return "f32";
    case RDX_F64: return "f64";
  }
  return "?";
}

/* Contexts opened by subcommands, destroyed at exit so an early exit (cli_die) leaks nothing. */
static rdx_context *opened[16];
static int n_opened;

static void close_all(void) {
  while (n_opened > 0) rdx_context_destroy(opened[--n_opened]);
}

void cli_context_close(rdx_context *ctx) {
  for (int i = 0; i < n_opened; i++)
    if (opened[i] == ctx) {
      opened[i] = opened[--n_opened];
      break;
    }
  rdx_context_destroy(ctx);
}

rdx_context *cli_context(rdx_backend b) {
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = b;
  rdx_context *ctx = NULL;
  rdx_status st = rdx_context_create(&o, &ctx);
  if (st != RDX_OK) {
    char msg[1100];
    snprintf(msg, sizeof msg, "%s", ctx ? rdx_context_message(ctx) : "no memory");
    rdx_context_destroy(ctx);
    cli_die(CLI_EXIT_BAD_INPUT, "backend %s cannot run here: %s", rdx_backend_name(b), msg);
  }
  if (n_opened == 0) atexit(close_all);
  if (n_opened < (int)(sizeof opened / sizeof opened[0])) opened[n_opened++] = ctx;
  return ctx;
}

void cli_must(rdx_context *ctx, rdx_status st, const char *what) {
  if (st != RDX_OK) cli_die_status(ctx, st, what);
}

int cli_is_gpu(const rdx_context *ctx) { return rdx_context_backend(ctx) != RDX_BACKEND_CPU; }

rdx_array cli_place(rdx_context *ctx, rdx_array h) {
  if (!cli_is_gpu(ctx)) return h;
  size_t bytes = (size_t)h.count * (size_t)h.columns * rdx_dtype_size(h.dtype);
  void *d = NULL;
  cli_must(ctx, rdx_malloc(ctx, &d, bytes ? bytes : 1, RDX_DEVICE), "device input");
  cli_must(ctx, rdx_copy(ctx, d, RDX_DEVICE, h.data, RDX_HOST, bytes), "device input");
  rdx_array a = h;
  a.data = d;
  a.where = RDX_DEVICE;
  return a;
}

void cli_unplace(rdx_context *ctx, rdx_array a) {
  if (a.where == RDX_DEVICE) rdx_free(ctx, a.data, RDX_DEVICE);
}

rdx_array cli_read_npy(rdx_context *ctx, const char *opt, const char *path, int *ndim) {
  rdx_array a;
  rdx_status st = rdx_npy_read(ctx, path, &a, ndim);
  if (st != RDX_OK) {
    char what[64];
    snprintf(what, sizeof what, "--%s", opt);
    cli_die_status(ctx, st, what);
  }
  return a;
}

void cli_write_npy(rdx_context *ctx, const char *opt, const char *path, rdx_array a) {
  rdx_status st = rdx_npy_write(ctx, path, a, 1);
  if (st != RDX_OK) {
    char what[64];
    snprintf(what, sizeof what, "--%s", opt);
    cli_die_status(ctx, st, what);
  }
}
