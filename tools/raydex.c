/*
 * raydex.c: the raydex program: one subcommand per concept, each in its own cmd_*.c file.
 * Exit status 0 on success, 2 with one line on stderr for bad input, 1 for other failures.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
} commands[] = {
    {"info", cmd_info, "version, backends built, GPU name, whether OptiX is usable"},
    {"gen", cmd_gen, "generate keys, lookups, ranges, points or point queries as .npy (gen --help)"},
    {"keys", cmd_keys, "build a key index and answer point or range lookups from .npy files"},
    {"points", cmd_points, "build a point index and answer match, window, within or kNN queries from .npy files"},
    {"bench", cmd_bench, "benchmark key or point indexes, CSV rows on stdout (bench --help)"},
    {"demo", cmd_demo, "the main job: every key index kind on the best backend, checked, as a table"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: raydex <command> [options]   (raydex <command> --help for its options)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-6s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_EXIT_BAD_INPUT : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("raydex %s\n", rdx_version_string());
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[1], commands[i].name) == 0) {
      static char name[64];
      snprintf(name, sizeof name, "raydex %s", commands[i].name);
      cli_set_command(name);
      return commands[i].fn(argc - 2, argv + 2);
    }
  }
  fprintf(stderr, "raydex: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return CLI_EXIT_BAD_INPUT;
}
