/*
 * fuzz_cli.c: libFuzzer target for the raydex command line's parsing and validation: the input,
 * split into arguments at newlines and NULs (at most 64), runs through cli_check, which parses
 * and validates as `raydex ARGS` would and returns where the command would start its work
 * (cli.c aborts if a command reaches a context or an output write under cli_check). Every input
 * must end in 0 (valid), 2 (bad input, exactly one printable line) or 1 (a failure, also one
 * line), never in a crash, a leak, undefined behaviour or a file written.
 *   clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -DRDX_HAVE_ORACLE -Iinclude -Isrc \
 *     -Itools -Itools/oracle tests/fuzz/fuzz_cli.c tools/cli.c tools/raydex.c tools/cmd_[a-z_]*.c \
 *     tools/bench/brute_nocuda.c tools/oracle/[a-z_]*.c build/libraydex.a -lm -lpthread -o fuzz_cli
 *   ./fuzz_cli tests/fuzz/corpus_cli -dict=tests/fuzz/cli.dict
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0; /* command lines are short; longer inputs only slow the search */
  char *buf = (char *)malloc(size + 1), *argv[MAX_ARGS + 1];
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  int argc = 0;
  char *word = buf;
  for (size_t i = 0; i <= size && argc < MAX_ARGS; i++)
    if (i == size || buf[i] == '\n' || buf[i] == '\0') {
      buf[i] = '\0';
      argv[argc++] = word;
      word = buf + i + 1;
    }
  if (size == 0) argc = 0;
  argv[argc] = NULL;
  int code = cli_check(argc, argv);
  const char *msg = cli_message();
  if (code != 0 && code != CLI_EXIT_BAD_INPUT && code != CLI_EXIT_FAILURE) abort();
  /* a refusal says why (only a bare `raydex` answers with its usage instead) */
  if (code != 0 && argc > 0 && msg[0] == '\0') abort();
  for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
    if (*p < 0x20 || *p == 0x7f) abort(); /* one printable line */
  free(buf);
  return 0;
}
