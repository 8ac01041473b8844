/*
 * cli.h: what the subcommands of the raydex program share: one rule for bad input, reading
 * inputs, writing outputs all-or-nothing, and saying what happened.
 *
 * The rule: a command reads all its options first (cli_opt, cli_int, cli_input, cli_output ...),
 * each of which refuses a bad value with exit 2 and one stderr line naming the option and the
 * value; cli_args_done then refuses unknown arguments, and only after it does the command do
 * work (open contexts, read files, build). Outputs go to temporaries that cli_commit_outputs
 * renames once everything succeeded; every exit through cli_die removes them, so a failed
 * command leaves no output behind and an existing file at an output path untouched.
 *
 * cli_check runs a command's parsing and validation without doing its work and returns instead
 * of exiting (cli_die longjmps back to it): the CLI fuzz target's entry point.
 */
#ifndef RDX_CLI_H
#define RDX_CLI_H

#include <stdint.h>

#include "raydex.h"

#define CLI_EXIT_BAD_INPUT 2
#define CLI_EXIT_FAILURE 1

#if defined(__GNUC__)
#define CLI_NORETURN __attribute__((noreturn))
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_NORETURN
#define CLI_PRINTF(f, a)
#endif

/* Print "raydex <cmd>: <message>" on one line (bytes escaped by rdx_escape), remove pending output
 * temporaries and exit 2 (bad input) or 1 (failure). */
void cli_die(int code, const char *fmt, ...) CLI_PRINTF(2, 3) CLI_NORETURN;
/* Exit with the context's message: 2 for statuses caused by the input, 1 otherwise. */
void cli_die_status(rdx_context *ctx, rdx_status st, const char *what) CLI_NORETURN;
void cli_set_command(const char *name);

/* The program: argv[0] is the command word (raydex.c). */
int cli_main(int argc, char **argv);
/* cli_main's parsing and validation only: returns 0 where the command would start its work, or
 * the exit code of its refusal (whose line cli_message() then holds); prints nothing. */
int cli_check(int argc, char **argv);
const char *cli_message(void);

/* --name value options and flags; positional arguments are refused. */
typedef struct cli_args {
  int argc;
  char **argv;
  unsigned char *used; /* per argument: 0 unread, 1 an option's name, 2 its value */
} cli_args;
/* Starts parsing argv; with --help or -h among the arguments it prints usage on stdout and
 * exits 0 instead. Reads --quiet, which every command accepts. */
void cli_args_init(cli_args *a, int argc, char **argv, const char *usage);
int cli_is_help(const char *arg);
/* Prints a usage (on stdout for code 0, else on stderr; nothing under cli_check) and exits. */
void cli_usage(const char *usage, int code) CLI_NORETURN;
/* All options read: refuses unknown arguments; the command's work starts after it. */
void cli_args_done(cli_args *a);

/* The value of --name, NULL if absent; refuses a repeated option and a missing value. */
const char *cli_opt(cli_args *a, const char *name);
int cli_flag(cli_args *a, const char *name);
/* Integers: 12345, -5, 2^20, 1e6, 2.5e3 (a whole number); nothing else (no spaces, no trailing
 * characters). Values outside [lo, hi] are refused; dflt when the option is absent. */
int64_t cli_int(cli_args *a, const char *name, int64_t lo, int64_t hi, int64_t dflt);
double cli_double(cli_args *a, const char *name, double lo, double hi, double dflt);
/* The index of the option's value in names[0..n), dflt when absent. */
int cli_choice(cli_args *a, const char *name, const char *const *names, int n, int dflt);
/* The same for one entry of a comma-separated list given to --name. */
int64_t cli_parse_int(const char *name, const char *s, int64_t lo, int64_t hi);
double cli_parse_double(const char *name, const char *s, double lo, double hi);
int cli_parse_choice(const char *name, const char *s, const char *const *names, int n);
/* Refuses --name, if given, unless it applies; `to` completes "applies to ... only". */
void cli_applies(cli_args *a, const char *name, int applies, const char *to);
/* A comma-separated list (at most CLI_LIST entries of up to 31 bytes), split into items. */
#define CLI_LIST 32
typedef struct cli_list {
  int n;
  char v[CLI_LIST][32];
} cli_list;
void cli_split(cli_list *l, const char *name, const char *s);
/* A list option's entries (dflt's when absent) into v[0..CLI_LIST), checked as above; returns
 * their number. */
int cli_int_list(cli_args *a, const char *name, const char *dflt, int64_t lo, int64_t hi, int64_t *v);
int cli_double_list(cli_args *a, const char *name, const char *dflt, double lo, double hi, double *v);
int cli_choice_list(cli_args *a, const char *name, const char *dflt, const char *const *names, int n_names, int *v);

/* An input file named by --name: a readable regular file (NULL when absent, refused when
 * absent and required); *bytes (may be NULL) receives its size. */
const char *cli_input(cli_args *a, const char *name, int required, int64_t *bytes);
/* An output file named by --name, registered for cli_write_npy: refused when it names a
 * directory or a non-regular file, lies in a directory that is missing or not writable, or is
 * the same file as an input or another output. NULL when absent (refused when required). */
const char *cli_output(cli_args *a, const char *name, int required);
/* Writes a host array (ndim 1 or 2) to the temporary of output --name. */
void cli_write_npy(rdx_context *ctx, const char *name, rdx_array a, int ndim);
/* Renames every written temporary to its output path. */
void cli_commit_outputs(void);
/* Refuses, naming --name and its value, work whose memory estimate exceeds what the machine
 * has (MemAvailable, else physical memory). */
void cli_need_memory(cli_args *a, const char *name, double bytes);
/* Host bytes an index build over n keys or points holds at its peak on backend b, coarsely
 * (cli.c); 0 for a build on a GPU. */
double cli_index_peak_bytes(rdx_kind kind, double n_keys, rdx_backend b);
double cli_points_peak_bytes(rdx_points_kind kind, double n_points, rdx_backend b);
/* "1.5 GiB" */
const char *cli_bytes(char buf[32], double bytes);

/* Saying what happened, on stderr: the one success line (not with --quiet), and progress on a
 * terminal (a single line, overwritten per stage, cleared by the next output). */
void cli_report(const char *fmt, ...) CLI_PRINTF(1, 2);
void cli_progress(const char *fmt, ...) CLI_PRINTF(1, 2);
void cli_progress_clear(void);
/* "cuda (auto)" when auto chose cuda, "cpu" when asked for. */
const char *cli_backend_label(char buf[32], const rdx_context *ctx, rdx_backend asked);

rdx_backend cli_backend(cli_args *a, const char *name);
rdx_backend cli_parse_backend(const char *name, const char *s);
rdx_kind cli_parse_kind(const char *name, const char *s);
/* Refuses a kind on a backend or operation it does not run: --backend optix runs rx and cgrx
 * only (the others would quietly run on cuda); hash answers no ranges (range_opt names the
 * option that asks for them, NULL when none does). */
void cli_kind_fits(rdx_kind kind, rdx_backend backend, const char *range_opt);
const char *cli_dtype_name(rdx_dtype d);

/* Open a context on the backend (under an MPI launcher, a GPU backend's context on GPU local rank
 * modulo the machine's GPUs); dies with exit 2 when that backend cannot run here. */
rdx_context *cli_context(rdx_backend b);
/* Destroy a context from cli_context (also done for all of them at exit). */
void cli_context_close(rdx_context *ctx);

/* Exit through cli_die_status unless st is RDX_OK. */
void cli_must(rdx_context *ctx, rdx_status st, const char *what);
int cli_is_gpu(const rdx_context *ctx);
/* A device copy of a host array for GPU contexts (the array itself on the CPU), and its release. */
rdx_array cli_place(rdx_context *ctx, rdx_array h);
void cli_unplace(rdx_context *ctx, rdx_array a);
/* Read a .npy input named by option --opt, exiting with its message on failure. */
rdx_array cli_read_npy(rdx_context *ctx, const char *opt, const char *path, int *ndim);
/* The median of v[0..n) (sorts v). */
double cli_median(double *v, int n);

/* The brute-force GPU baselines of `raydex bench points` (bench/brute.cu; without CUDA,
 * bench/brute_nocuda.c answers RDX_ERR_NO_BACKEND): every query of type 0..3 (match, window,
 * within, kNN; cli_query_types) against every one of the n points xy (interleaved, f32 or f64),
 * all in device memory, on the context's GPU. Counts: counts[m]. kNN: rows[m * k], query i's
 * min(k, n) nearest ids at i * k. */
rdx_status bench_brute_count(rdx_context *ctx, const void *xy, int f64, int64_t n, int type, const void *q, int64_t m,
                             uint64_t *counts);
rdx_status bench_brute_knn(rdx_context *ctx, const void *xy, int f64, int64_t n, const void *q, int64_t m, int k,
                           uint64_t *rows);

/* The names of the choices, in their enums' order (cli_key_dists[d - 1] for rdx_key_dist d). */
extern const char *const cli_key_dists[3], *const cli_key_dtypes[2], *const cli_misses[2], *const cli_point_dists[3],
    *const cli_point_dtypes[2], *const cli_point_indexes[2], *const cli_point_builds[2], *const cli_query_types[4];

int cmd_info(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_keys(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_join(int argc, char **argv); /* exact spatial joins of polygon layers (cmd_join.c) */
int cmd_convert(int argc, char **argv); /* polygon layers to .rdxp (cmd_convert.c) */
/* `gen polygons` (cmd_gen_polygons.c; argv[0] is the word) and its usage, which `gen --help` prints */
int cmd_gen_polygons(int argc, char **argv);
extern const char cli_gen_polygons_usage[];
/* Spatial point indexes: cmd_points.c, cmd_gen_points.c ("gen points|point-queries", argv[0] is
 * the word), cmd_bench_points.c ("bench points", argv after the word). */
int cmd_points(int argc, char **argv);
int cmd_gen_points(int argc, char **argv);
int cmd_bench_points(int argc, char **argv);
int cmd_bench_join(int argc, char **argv); /* polygon joins (cmd_bench_join.c) */
extern const char cli_bench_join_usage[];
int cmd_bench_update(int argc, char **argv); /* key index updates (cmd_bench_update.c) */
extern const char cli_bench_update_usage[];
int cmd_bench_host(int argc, char **argv); /* calls from host memory against device memory (cmd_bench_host.c) */
extern const char cli_bench_host_usage[];
/* `bench keys --gpus`: a sharded key index over the GPUs of this process (cmd_bench_gpus.c; argv
 * after the word keys) */
int cmd_bench_keys_gpus(int argc, char **argv);
extern const char cli_bench_gpus_usage[];
int cmd_bench_points_gpus(int argc, char **argv); /* `bench points --gpus` (cmd_bench_points_gpus.c) */
extern const char cli_bench_points_gpus_usage[];
/* Their usage, which `raydex gen --help` and `raydex bench --help` print after their own. */
extern const char cli_gen_points_usage[], cli_bench_points_usage[];

#endif
