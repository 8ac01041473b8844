/*
 * cli.c: the rule for bad input, the inputs and all-or-nothing outputs, and the messages shared
 * by the raydex subcommands (cli.h states the rule).
 *
 * Invariant: every exit goes through leave(), which removes the temporaries of outputs not yet
 * committed and frees what the parser holds, so under cli_check (where leave() longjmps back
 * instead of exiting) a refusal leaks nothing and leaves no file behind.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_api.h"

static const char *command = "raydex";
static int quiet;          /* --quiet: no success line, no progress */
static int progress_shown; /* a progress line is on the terminal and must be cleared first */
static char message[1024]; /* the last refusal, escaped, for cli_message */

/* Set while cli_check runs: leave() jumps there with jump_code instead of exiting. */
static jmp_buf *check_jump;
static int jump_code;

/* The files a command names: inputs (tmp NULL) and outputs, compared by canonical path. */
typedef struct cli_file {
  char option[32]; /* the option's name, without dashes */
  char *path;      /* as given (the argv string, not owned) */
  char *canon;     /* owned: realpath of the file, or of its directory plus its name */
  char *tmp;       /* owned, outputs only: the temporary written before the rename */
  int written;     /* the temporary may exist */
} cli_file;
#define MAX_FILES 8
static cli_file files[MAX_FILES];
static int n_files;
static cli_args *current; /* the parser whose `used` array leave() frees */

/* The names of the choices, in their enums' order. */
const char *const cli_key_dists[3] = {"dense", "sparse", "uniform"};      /* rdx_key_dist - 1 */
const char *const cli_key_dtypes[2] = {"u32", "u64"};
const char *const cli_misses[2] = {"inside", "outside"};                 /* rdx_miss_kind - 1 */
const char *const cli_point_dists[3] = {"uniform", "clustered", "taxi"}; /* rdx_point_dist - 1 */
const char *const cli_point_dtypes[2] = {"f64", "f32"};
const char *const cli_point_indexes[2] = {"quadtree", "kdtree"};
const char *const cli_point_builds[2] = {"bottomup", "topdown"};
const char *const cli_query_types[4] = {"match", "window", "within", "knn"}; /* rdx_gen_point_queries' type */

static void forget_files(void) {
  for (int i = 0; i < n_files; i++) {
    if (files[i].written) unlink(files[i].tmp);
    free(files[i].canon);
    free(files[i].tmp);
  }
  n_files = 0;
}

/* SIGINT, SIGTERM, SIGHUP: remove the temporaries (unlink is async-signal-safe), then die of
 * the signal as if not caught, so an interrupted command leaves no file behind either. */
static void on_signal(int sig) {
  for (int i = 0; i < n_files; i++)
    if (files[i].written) unlink(files[i].tmp);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void leave(int code) CLI_NORETURN;
static void leave(int code) {
  cli_progress_clear();
  forget_files();
  if (current) free(current->used), current->used = NULL, current = NULL;
  if (check_jump) {
    jump_code = code;
    longjmp(*check_jump, 1);
  }
  exit(code);
}

void cli_set_command(const char *name) { command = name; }

/* Prints "<command>: <text><lib>" on one line and leaves: text (which quotes the user's values)
 * escaped here, lib a library message, which the library has escaped already. */
static void die_line(int code, const char *text, const char *lib) CLI_NORETURN;
static void die_line(int code, const char *text, const char *lib) {
  int k = snprintf(message, sizeof message, "%s: ", command);
  rdx_escape(message + k, sizeof message - (size_t)k, text, strlen(text));
  k = (int)strlen(message);
  snprintf(message + k, sizeof message - (size_t)k, "%s", lib);
  if (!check_jump) {
    cli_progress_clear();
    fprintf(stderr, "%s\n", message);
  }
  leave(code);
}

void cli_die(int code, const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  die_line(code, text, "");
}

void cli_die_status(rdx_context *ctx, rdx_status st, const char *what) {
  int bad_input = st == RDX_ERR_INVALID_ARGUMENT || st == RDX_ERR_PARSE || st == RDX_ERR_IO ||
                  st == RDX_ERR_UNSUPPORTED || st == RDX_ERR_NO_BACKEND;
  const char *msg = ctx ? rdx_context_message(ctx) : "";
  char text[256];
  snprintf(text, sizeof text, "%s: %s%s", what, rdx_status_name(st), *msg ? ": " : "");
  die_line(bad_input ? CLI_EXIT_BAD_INPUT : CLI_EXIT_FAILURE, text, msg);
}

int cli_check(int argc, char **argv) {
  jmp_buf here;
  message[0] = '\0';
  if (setjmp(here) == 0) {
    check_jump = &here;
    jump_code = cli_main(argc, argv);
  }
  check_jump = NULL;
  return jump_code;
}

const char *cli_message(void) { return message; }

/* ---- reporting ---- */

void cli_report(const char *fmt, ...) {
  if (quiet || check_jump) return;
  cli_progress_clear();
  fflush(stdout); /* what the command printed comes first, also when stdout is a pipe */
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", command);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_progress(const char *fmt, ...) {
  if (quiet || check_jump || !isatty(STDERR_FILENO)) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "\r%s: ", command);
  vfprintf(stderr, fmt, ap);
  fputs("\033[K", stderr); /* erase the rest of a longer previous line */
  fflush(stderr);
  va_end(ap);
  progress_shown = 1;
}

void cli_progress_clear(void) {
  if (!progress_shown) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  progress_shown = 0;
}

const char *cli_backend_label(char buf[32], const rdx_context *ctx, rdx_backend asked) {
  snprintf(buf, 32, "%s%s", rdx_backend_name(rdx_context_backend(ctx)), asked == RDX_BACKEND_AUTO ? " (auto)" : "");
  return buf;
}

const char *cli_bytes(char buf[32], double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, u++;
  snprintf(buf, 32, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

/* ---- options ---- */

int cli_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

void cli_usage(const char *usage, int code) {
  if (!check_jump) fputs(usage, code ? stderr : stdout);
  leave(code);
}

static int find(const cli_args *a, const char *name, int from) {
  for (int i = from; i < a->argc; i++)
    if (strncmp(a->argv[i], "--", 2) == 0 && strcmp(a->argv[i] + 2, name) == 0) return i;
  return -1;
}

/* The position of --name, refusing a second one (naming both values where there are values). */
static int find_once(const cli_args *a, const char *name) {
  int i = find(a, name, 0), j = i >= 0 ? find(a, name, i + 1) : -1;
  if (j >= 0 && j + 1 < a->argc)
    cli_die(CLI_EXIT_BAD_INPUT, "--%s is given more than once (%s, then %s)", name, a->argv[i + 1], a->argv[j + 1]);
  if (j >= 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s is given more than once", name);
  return i;
}

void cli_args_init(cli_args *a, int argc, char **argv, const char *usage) {
  for (int i = 0; i < argc; i++)
    if (cli_is_help(argv[i])) cli_usage(usage, 0);
  a->argc = argc;
  a->argv = argv;
  a->used = (unsigned char *)calloc((size_t)argc + 1, 1);
  if (a->used == NULL) cli_die(CLI_EXIT_FAILURE, "out of memory");
  current = a;
  quiet = cli_flag(a, "quiet");
}

void cli_args_done(cli_args *a) {
  for (int i = 0; i < a->argc; i++)
    if (!a->used[i]) cli_die(CLI_EXIT_BAD_INPUT, "unknown argument '%s'", a->argv[i]);
  free(a->used);
  a->used = NULL;
  current = NULL;
  if (check_jump) leave(0); /* validated: the work is not cli_check's */
}

const char *cli_opt(cli_args *a, const char *name) {
  int i = find_once(a, name);
  if (i < 0) return NULL;
  if (i + 1 >= a->argc || strncmp(a->argv[i + 1], "--", 2) == 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s needs a value", name);
  a->used[i] = 1;
  a->used[i + 1] = 2;
  return a->argv[i + 1];
}

int cli_flag(cli_args *a, const char *name) {
  int i = find_once(a, name);
  if (i < 0) return 0;
  a->used[i] = 1;
  return 1;
}

/* 1 with *out set, 0 for a malformed integer, -1 for one outside int64. The forms: -?D+ (D a
 * digit), 2^D+, and -?D+(.D+)?[eE]D+ whose value is whole; computed exactly, no doubles. */
static int parse_int(const char *s, int64_t *out) {
  const char *p = s;
  if (p[0] == '2' && p[1] == '^') {
    int e = 0;
    p += 2;
    if (!isdigit((unsigned char)*p)) return 0;
    for (; isdigit((unsigned char)*p); p++) e = e > 63 ? 64 : e * 10 + (*p - '0');
    if (*p) return 0;
    if (e > 62) return -1;
    *out = (int64_t)1 << e;
    return 1;
  }
  int neg = *p == '-';
  p += neg;
  const char *whole = p, *frac = NULL;
  while (isdigit((unsigned char)*p)) p++;
  long n_whole = (long)(p - whole), n_frac = 0, e = 0;
  if (n_whole == 0) return 0;
  if (*p == '.') {
    frac = ++p;
    while (isdigit((unsigned char)*p)) p++;
    n_frac = (long)(p - frac);
    if (n_frac == 0) return 0;
  }
  if (*p == 'e' || *p == 'E') {
    if (!isdigit((unsigned char)*++p)) return 0;
    for (; isdigit((unsigned char)*p); p++) e = e > 999 ? 1000 : e * 10 + (*p - '0');
  } else if (frac) {
    return 0; /* 2.5 is not an integer; 2.5e3 is */
  }
  if (*p) return 0;
  /* value = (whole and fraction digits) * 10^(e - n_frac); digits past the point must be 0 */
  const uint64_t limit = (uint64_t)INT64_MAX + (uint64_t)neg;
  long shift = e - n_frac, keep = n_whole + n_frac + (shift < 0 ? shift : 0);
  uint64_t v = 0;
  for (long i = 0; i < n_whole + n_frac; i++) {
    int d = (i < n_whole ? whole[i] : frac[i - n_whole]) - '0';
    if (i >= keep) {
      if (d != 0) return 0;
      continue;
    }
    if (v > (limit - (uint64_t)d) / 10) return -1;
    v = v * 10 + (uint64_t)d;
  }
  for (; shift > 0 && v != 0; shift--) {
    if (v > limit / 10) return -1;
    v *= 10;
  }
  *out = !neg ? (int64_t)v : v == limit ? INT64_MIN : -(int64_t)v;
  return 1;
}

/* Bounds as a person writes them: 2^63-1 rather than 19 digits. */
static const char *int_text(char buf[32], int64_t v) {
  if (v == INT64_MAX) return "2^63-1";
  snprintf(buf, 32, "%lld", (long long)v);
  return buf;
}

int64_t cli_parse_int(const char *name, const char *s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  int r = parse_int(s, &v);
  if (r == 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' is not an integer (forms: 12345, 2^20, 1e6)", name, s);
  char l[32], h[32];
  if (r < 0 || v < lo || v > hi) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is not in [%s, %s]", name, s, int_text(l, lo), int_text(h, hi));
  return v;
}

int64_t cli_int(cli_args *a, const char *name, int64_t lo, int64_t hi, int64_t dflt) {
  const char *s = cli_opt(a, name);
  return s ? cli_parse_int(name, s, lo, hi) : dflt;
}

double cli_parse_double(const char *name, const char *s, double lo, double hi) {
  /* -?D*(.D*)?([eE][+-]?D+)? with at least one mantissa digit: no spaces, hex, inf or nan */
  const char *p = s + (*s == '-');
  int digits = 0;
  for (; isdigit((unsigned char)*p); p++) digits++;
  if (*p == '.')
    for (p++; isdigit((unsigned char)*p); p++) digits++;
  if (digits && (*p == 'e' || *p == 'E')) {
    p += 1 + (p[1] == '+' || p[1] == '-');
    if (!isdigit((unsigned char)*p)) digits = 0;
    while (isdigit((unsigned char)*p)) p++;
  }
  if (!digits || *p) cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' is not a number", name, s);
  double v = strtod(s, NULL);
  if (!(v >= lo && v <= hi)) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is not in [%g, %g]", name, s, lo, hi);
  return v;
}

double cli_double(cli_args *a, const char *name, double lo, double hi, double dflt) {
  const char *s = cli_opt(a, name);
  return s ? cli_parse_double(name, s, lo, hi) : dflt;
}

int cli_parse_choice(const char *name, const char *s, const char *const *names, int n) {
  char list[256];
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(s, names[i]) == 0) return i;
    k += (size_t)snprintf(list + k, k < sizeof list ? sizeof list - k : 0, "%s%s", i ? ", " : "", names[i]);
    if (k >= sizeof list) k = sizeof list - 1;
  }
  cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' is not one of %s", name, s, list);
}

int cli_choice(cli_args *a, const char *name, const char *const *names, int n, int dflt) {
  const char *s = cli_opt(a, name);
  return s ? cli_parse_choice(name, s, names, n) : dflt;
}

void cli_applies(cli_args *a, const char *name, int applies, const char *to) {
  int i = applies ? -1 : find(a, name, 0);
  if (i < 0) return;
  const char *v = i + 1 < a->argc && a->used[i + 1] == 2 ? a->argv[i + 1] : "";
  cli_die(CLI_EXIT_BAD_INPUT, "--%s%s%s applies to %s only", name, *v ? " " : "", v, to);
}

void cli_split(cli_list *l, const char *name, const char *s) {
  l->n = 0;
  for (const char *p = s;; p++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0 || len >= sizeof l->v[0]) cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' has an empty or overlong entry", name, s);
    if (l->n == CLI_LIST) cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' has more than %d entries", name, s, CLI_LIST);
    memcpy(l->v[l->n], p, len);
    l->v[l->n++][len] = '\0';
    if (!e) break;
    p = e;
  }
}

/* --name's list, or dflt's when absent. */
static void option_list(cli_args *a, const char *name, const char *dflt, cli_list *l) {
  const char *s = cli_opt(a, name);
  cli_split(l, name, s ? s : dflt);
}

int cli_int_list(cli_args *a, const char *name, const char *dflt, int64_t lo, int64_t hi, int64_t *v) {
  cli_list l;
  option_list(a, name, dflt, &l);
  for (int i = 0; i < l.n; i++) v[i] = cli_parse_int(name, l.v[i], lo, hi);
  return l.n;
}

int cli_double_list(cli_args *a, const char *name, const char *dflt, double lo, double hi, double *v) {
  cli_list l;
  option_list(a, name, dflt, &l);
  for (int i = 0; i < l.n; i++) v[i] = cli_parse_double(name, l.v[i], lo, hi);
  return l.n;
}

int cli_choice_list(cli_args *a, const char *name, const char *dflt, const char *const *names, int n_names, int *v) {
  cli_list l;
  option_list(a, name, dflt, &l);
  for (int i = 0; i < l.n; i++) v[i] = cli_parse_choice(name, l.v[i], names, n_names);
  return l.n;
}

/* ---- files ---- */

/* Registers a file (taking canon and tmp), refusing an output that is the same file as one named
 * before, or an input that is the same file as an earlier output. */
static void add_file(const char *name, const char *path, char *canon, char *tmp) {
  for (int i = 0; i < n_files; i++)
    if ((tmp || files[i].tmp) && strcmp(files[i].canon, canon) == 0) {
      free(canon);
      free(tmp);
      cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is the same file as --%s %s", name, path, files[i].option, files[i].path);
    }
  if (n_files == MAX_FILES) {
    free(canon);
    free(tmp);
    cli_die(CLI_EXIT_FAILURE, "more than %d files named", MAX_FILES);
  }
  cli_file *f = &files[n_files++];
  snprintf(f->option, sizeof f->option, "%s", name);
  f->path = (char *)path;
  f->canon = canon;
  f->tmp = tmp;
  f->written = 0;
}

const char *cli_input(cli_args *a, const char *name, int required, int64_t *bytes) {
  const char *path = cli_opt(a, name);
  if (!path) {
    if (required) cli_die(CLI_EXIT_BAD_INPUT, "--%s is required", name);
    return NULL;
  }
  struct stat st;
  if (*path == '\0') cli_die(CLI_EXIT_BAD_INPUT, "--%s '' names no file", name);
  if (stat(path, &st) != 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s cannot be read: %s", name, path, strerror(errno));
  if (S_ISDIR(st.st_mode)) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is a directory, not a file", name, path);
  if (!S_ISREG(st.st_mode)) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is not a regular file", name, path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s cannot be read: %s", name, path, strerror(errno));
  close(fd);
  char *canon = realpath(path, NULL);
  if (!canon) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s cannot be resolved: %s", name, path, strerror(errno));
  add_file(name, path, canon, NULL);
  if (bytes) *bytes = (int64_t)st.st_size;
  return path;
}

const char *cli_output(cli_args *a, const char *name, int required) {
  const char *path = cli_opt(a, name);
  if (!path) {
    if (required) cli_die(CLI_EXIT_BAD_INPUT, "--%s is required", name);
    return NULL;
  }
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' names a directory, not a file", name, path);
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (!exists && errno != ENOENT) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s cannot be checked: %s", name, path, strerror(errno));
  if (exists && S_ISDIR(st.st_mode)) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is a directory, not a file", name, path);
  if (exists && !S_ISREG(st.st_mode)) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is not a regular file", name, path);
  /* the rename would replace a read-only file that writing in place could not change */
  if (exists && access(path, W_OK) != 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s is not writable", name, path);
  /* the directory: "/" for /x, "." for x; canonical for comparison, as given for the temporary */
  size_t dir_len = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
  char dir[4096];
  if (dir_len >= sizeof dir) cli_die(CLI_EXIT_BAD_INPUT, "--%s: the path is too long", name);
  memcpy(dir, slash ? path : ".", dir_len);
  dir[dir_len] = '\0';
  struct stat ds;
  if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode))
    cli_die(CLI_EXIT_BAD_INPUT, "--%s %s: directory %s does not exist", name, path, dir);
  if (access(dir, W_OK | X_OK) != 0) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s: directory %s is not writable", name, path, dir);
  char *canon_dir = realpath(exists ? path : dir, NULL);
  if (!canon_dir) cli_die(CLI_EXIT_BAD_INPUT, "--%s %s cannot be resolved: %s", name, path, strerror(errno));
  size_t n = strlen(canon_dir) + strlen(base) + 2, t = dir_len + strlen(base) + 40;
  char *canon = exists ? canon_dir : (char *)malloc(n), *tmp = (char *)malloc(t);
  if (!canon || !tmp) {
    free(canon_dir), free(canon), free(tmp);
    cli_die(CLI_EXIT_FAILURE, "out of memory");
  }
  if (!exists) {
    snprintf(canon, n, "%s/%s", strcmp(canon_dir, "/") ? canon_dir : "", base);
    free(canon_dir);
  }
  snprintf(tmp, t, "%s/.%s.tmp.%ld", dir, base, (long)getpid());
  add_file(name, path, canon, tmp);
  if (!check_jump) { /* the fuzzer keeps its own handlers */
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
  }
  return path;
}

void cli_write_npy(rdx_context *ctx, const char *name, rdx_array a, int ndim) {
  cli_file *f = NULL;
  for (int i = 0; i < n_files; i++)
    if (files[i].tmp && strcmp(files[i].option, name) == 0) f = &files[i];
  if (!f || check_jump) abort(); /* a command writes only what it registered, and not under cli_check */
  f->written = 1;
  rdx_status st = rdx_npy_write(ctx, f->tmp, a, ndim);
  if (st != RDX_OK) {
    char what[64];
    snprintf(what, sizeof what, "--%s", name);
    cli_die_status(ctx, st, what);
  }
}

void cli_commit_outputs(void) {
  for (int i = 0; i < n_files; i++)
    if (files[i].written) {
      if (rename(files[i].tmp, files[i].path) != 0)
        cli_die(CLI_EXIT_FAILURE, "--%s %s: cannot move the written file into place: %s", files[i].option, files[i].path,
                strerror(errno));
      files[i].written = 0;
    }
  forget_files();
}

/* Bytes the machine can give this process: MemAvailable, else the physical memory. */
static double available_memory(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  unsigned long long kb;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
      fclose(f);
      return (double)kb * 1024;
    }
  if (f) fclose(f);
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? (double)pages * (double)size : INFINITY;
}

void cli_need_memory(cli_args *a, const char *name, double bytes) {
  double have = available_memory();
  if (bytes <= have) return;
  int i = find(a, name, 0);
  const char *value = i >= 0 && i + 1 < a->argc ? a->argv[i + 1] : "(default)";
  char need_s[32], have_s[32];
  if (!(bytes < (double)RDX_MAX_ARRAY_BYTES))
    cli_die(CLI_EXIT_BAD_INPUT, "--%s %s needs more memory than an address space holds", name, value);
  cli_die(CLI_EXIT_BAD_INPUT, "--%s %s needs about %s of memory, more than the %s available here", name, value,
          cli_bytes(need_s, bytes), cli_bytes(have_s, have));
}

/* ---- names ---- */

rdx_backend cli_parse_backend(const char *name, const char *s) {
  static const rdx_backend all[] = {RDX_BACKEND_AUTO, RDX_BACKEND_CPU, RDX_BACKEND_CUDA, RDX_BACKEND_OPTIX};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(s, rdx_backend_name(all[i])) == 0) return all[i];
  cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' is not one of auto, cpu, cuda, optix", name, s);
}

rdx_backend cli_backend(cli_args *a, const char *name) {
  const char *s = cli_opt(a, name);
  return s ? cli_parse_backend(name, s) : RDX_BACKEND_AUTO;
}

rdx_kind cli_parse_kind(const char *name, const char *s) {
  for (int k = RDX_KIND_SCAN; k <= RDX_KIND_CGRXU; k++)
    if (strcmp(s, rdx_kind_name((rdx_kind)k)) == 0) return (rdx_kind)k;
  cli_die(CLI_EXIT_BAD_INPUT, "--%s '%s' is not one of scan, sorted, btree, hash, rx, cgrx, cgrxu", name, s);
}

void cli_kind_fits(rdx_kind kind, rdx_backend backend, const char *range_opt) {
  if (backend == RDX_BACKEND_OPTIX && kind != RDX_KIND_RX && kind != RDX_KIND_CGRX && kind != RDX_KIND_CGRXU)
    cli_die(CLI_EXIT_BAD_INPUT, "--backend optix runs the ray-tracing kinds rx, cgrx and cgrxu only; use --backend cuda for --kind %s",
            rdx_kind_name(kind));
  if (range_opt && !rdx_keys_answers_ranges(kind))
    cli_die(CLI_EXIT_BAD_INPUT, "%s: UNSUPPORTED: --kind %s answers point lookups only", range_opt, rdx_kind_name(kind));
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

/* ---- contexts and arrays ---- */

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

/* Under an MPI launcher, this process's rank among those of its machine: the launcher's word
 * (Open MPI, MPICH/Hydra, Slurm, PMI), else the world rank; -1 when not launched so. */
static int local_rank(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK"};
  rdx_dist_info dist;
  dist.size = sizeof dist;
  if (rdx_dist_info_get(&dist) != RDX_OK || dist.mpi_rank < 0) return -1;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v != NULL && *v >= '0' && *v <= '9') return atoi(v);
  }
  return dist.mpi_rank;
}

rdx_context *cli_context(rdx_backend b) {
  if (check_jump) abort(); /* a context is work: cli_check stops at cli_args_done, before any */
  rdx_context_options o = RDX_CONTEXT_OPTIONS_INIT;
  o.backend = b;
  /* the ranks of a machine spread over its GPUs, one each where there are enough (then MPI ranks
   * exchange device data through NCCL where it is built) */
  rdx_info info;
  info.size = sizeof info;
  const int lr = b != RDX_BACKEND_CPU ? local_rank() : -1;
  if (lr >= 0 && rdx_info_get(&info) == RDX_OK && info.n_gpus > 0) o.device = lr % info.n_gpus;
  rdx_context *ctx = NULL;
  rdx_status st = rdx_context_create(&o, &ctx);
  if (st != RDX_OK) {
    char text[64], msg[1100];
    snprintf(text, sizeof text, "backend %s cannot run here: ", rdx_backend_name(b));
    snprintf(msg, sizeof msg, "%s", ctx ? rdx_context_message(ctx) : "no memory");
    rdx_context_destroy(ctx);
    die_line(CLI_EXIT_BAD_INPUT, text, msg);
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
  size_t bytes = 0;
  if (!rdx_size_rows(h.count, h.columns, rdx_dtype_size(h.dtype), &bytes))
    cli_die(CLI_EXIT_FAILURE, "an array of %lld rows is too large to copy", (long long)h.count);
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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double cli_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- memory estimates ---- */

/* Whether an index on backend b is built in host memory: the CPU's, and auto's where no CUDA
 * backend was built (a GPU build's peak is in device memory, which the library refuses itself). */
static int builds_on_host(rdx_backend b) { return b == RDX_BACKEND_CPU || (b == RDX_BACKEND_AUTO && !rdx_cuda_built()); }

/* Host bytes per key a CPU build holds at its peak (index plus scratch), the larger of u32 and
 * u64 keys: `raydex bench keys` peak_bytes_per_key, 2^20 uniform keys, CPU backend. */
double cli_index_peak_bytes(rdx_kind kind, double n_keys, rdx_backend b) {
  if (!builds_on_host(b)) return 0;
  return (kind == RDX_KIND_RX ? 144 : kind == RDX_KIND_BTREE ? 40 : 32) * n_keys;
}

/* The same for point indexes (`raydex bench points --exp build`, 2^20 uniform f64 points). */
double cli_points_peak_bytes(rdx_points_kind kind, double n_points, rdx_backend b) {
  if (!builds_on_host(b)) return 0;
  return (kind == RDX_POINTS_KDTREE ? 80 : 330) * n_points;
}
