/*
 * main.c: the raydex program's entry point, apart from the commands (raydex.c) so that the CLI
 * fuzz target links every command without a second main.
 */
#include "cli.h"

int main(int argc, char **argv) { return cli_main(argc - 1, argv + 1); }
