/*
 * raydex.c: the raydex program's commands: one subcommand per concept, each in its own cmd_*.c
 * file, dispatched by cli_main (main.c calls it; the CLI fuzz target calls it through cli_check).
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
    {"info", cmd_info, "version, backends built, GPU name, whether OptiX is usable, settings"},
    {"gen", cmd_gen, "generate keys, lookups, ranges, points or point queries as .npy (gen --help)"},
    {"keys", cmd_keys, "build a key index and answer point or range lookups from .npy files"},
    {"points", cmd_points, "build a point index and answer match, window, within or kNN queries from .npy files"},
    {"convert", cmd_convert, "a polygon layer (GeoJSON, TopoJSON, Shapefile, ... or .rdxp) to raydex's .rdxp"},
    {"join", cmd_join, "exact spatial joins of polygon layers: point in polygon, segment intersection"},
    {"bench", cmd_bench, "benchmark key or point indexes, CSV rows on stdout (bench --help)"},
    {"demo", cmd_demo, "the main job: every key index kind on the best backend, checked, as a table"},
};

static const char *usage(void) {
  static char text[1024];
  size_t k = (size_t)snprintf(text, sizeof text,
                              "usage: raydex <command> [options]   (raydex <command> --help for its options)\n\n"
                              "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0] && k < sizeof text; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "  %-6s %s\n", commands[i].name, commands[i].help);
  return text;
}

int cli_main(int argc, char **argv) {
  if (argc < 1) cli_usage(usage(), CLI_EXIT_BAD_INPUT);
  if (cli_is_help(argv[0])) cli_usage(usage(), 0);
  if (strcmp(argv[0], "--version") == 0) {
    static char version[64];
    snprintf(version, sizeof version, "raydex %s\n", rdx_version_string());
    cli_usage(version, 0);
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[0], commands[i].name) == 0) {
      static char name[64];
      snprintf(name, sizeof name, "raydex %s", commands[i].name);
      cli_set_command(name);
      return commands[i].fn(argc - 1, argv + 1);
    }
  }
  cli_set_command("raydex");
  cli_die(CLI_EXIT_BAD_INPUT, "unknown command '%s' (raydex --help lists them)", argv[0]);
}
