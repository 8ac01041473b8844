/*
 * cli.h: what the subcommands of the raydex program share: argument parsing, the exit-2
 * convention for bad input (one line on stderr), reading inputs and opening contexts.
 */
#ifndef RDX_CLI_H
#define RDX_CLI_H

#include <stdint.h>

#include "raydex.h"

#define CLI_EXIT_BAD_INPUT 2
#define CLI_EXIT_FAILURE 1

/* Print "raydex <cmd>: <message>" on one line and exit 2 (bad input) or 1 (failure). */
void cli_die(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;
/* Exit with the context's message: 2 for statuses caused by the input, 1 otherwise. */
void cli_die_status(rdx_context *ctx, rdx_status st, const char *what)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;
void cli_set_command(const char *name);

/* --name value options; flags without value; positional arguments rejected. */
typedef struct cli_args {
  int argc;
  char **argv;
  unsigned char *used;
} cli_args;
/* Starts parsing argv; with --help or -h among the arguments it prints usage on stdout and
 * exits 0 instead (each command's synopsis lives in its usage string, once). */
void cli_args_init(cli_args *a, int argc, char **argv, const char *usage);
/* Whether an argument asks for help (--help or -h). */
int cli_is_help(const char *arg);
const char *cli_opt(cli_args *a, const char *name);            /* NULL if absent */
int cli_flag(cli_args *a, const char *name);                    /* 1 if present */
int64_t cli_int(cli_args *a, const char *name, int64_t dflt);   /* accepts 2^k and 1e6 */
double cli_double(cli_args *a, const char *name, double dflt);
void cli_args_done(cli_args *a);                                /* dies on unknown arguments */
int64_t cli_parse_int(const char *name, const char *s);

rdx_backend cli_backend(const char *s);
rdx_kind cli_kind(const char *s);
rdx_dtype cli_dtype(const char *s);
const char *cli_dtype_name(rdx_dtype d);

/* Open a context on the backend; dies with exit 2 when that backend cannot run here. */
rdx_context *cli_context(rdx_backend b);
/* Destroy a context from cli_context (also done for all of them at exit). */
void cli_context_close(rdx_context *ctx);

/* Exit through cli_die_status unless st is RDX_OK. */
void cli_must(rdx_context *ctx, rdx_status st, const char *what);
int cli_is_gpu(const rdx_context *ctx);
/* A device copy of a host array for GPU contexts (the array itself on the CPU), and its release. */
rdx_array cli_place(rdx_context *ctx, rdx_array h);
void cli_unplace(rdx_context *ctx, rdx_array a);
/* Read or write (1-D) a .npy file named by option --opt, exiting with its message on failure. */
rdx_array cli_read_npy(rdx_context *ctx, const char *opt, const char *path, int *ndim);
void cli_write_npy(rdx_context *ctx, const char *opt, const char *path, rdx_array a);

int cmd_info(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_keys(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_demo(int argc, char **argv);
/* Spatial point indexes: cmd_points.c, cmd_gen_points.c ("gen points|point-queries", argv[0] is
 * the word), cmd_bench_points.c ("bench points", argv after the word). */
int cmd_points(int argc, char **argv);
int cmd_gen_points(int argc, char **argv);
int cmd_bench_points(int argc, char **argv);
/* Their usage, which `raydex gen --help` and `raydex bench --help` print after their own. */
extern const char cli_gen_points_usage[], cli_bench_points_usage[];

#endif
