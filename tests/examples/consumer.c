/* The README's example, verbatim (tests/examples/check_readme.cmake compares the two): build a
 * sorted index over a key column, look keys up, and read every row of a range. It is built
 * against an installed raydex by scripts/check-install.sh (find_package and pkg-config). */
#include <stdio.h>

#include "raydex.h"

int main(void) {
  if (rdx_version_number() != RDX_VERSION_NUMBER) return 1; /* header and library agree */
  rdx_context *ctx = NULL;
  if (rdx_context_create(NULL, &ctx) != RDX_OK) { /* the message is readable even then */
    fprintf(stderr, "%s\n", rdx_context_message(ctx));
    rdx_context_destroy(ctx);
    return 1;
  }
  uint32_t keys[] = {42, 7, 42, 1000, 0}; /* row ids 0..4 by position */
  uint32_t queries[] = {42, 5, 0};
  uint32_t bounds[] = {7, 42}; /* one range, [7, 42], both ends included */
  uint64_t rows[3];
  rdx_build_options opts = RDX_BUILD_OPTIONS_INIT; /* kind: sorted */
  rdx_index *idx = NULL;
  rdx_result *r = NULL; /* every row of every range, as CSR */
  rdx_status st = rdx_index_build(ctx, rdx_host_array(keys, 5, RDX_U32), rdx_no_array(), &opts, &idx);
  if (st == RDX_OK)
    st = rdx_index_lookup(ctx, idx, rdx_host_array(queries, 3, RDX_U32), rdx_host_array(rows, 3, RDX_U64));
  if (st == RDX_OK) st = rdx_index_range_alloc(ctx, idx, rdx_host_matrix(bounds, 1, 2, RDX_U32), &r);
  if (st != RDX_OK) {
    fprintf(stderr, "%s: %s\n", rdx_status_name(st), rdx_context_message(ctx));
  } else {
    /* 42 -> row 0 (the smallest of rows 0 and 2), 5 -> miss, 0 -> row 4; [7, 42] -> rows 0, 1, 2 */
    printf("42 -> %llu, 5 -> %s, 0 -> %llu; [7, 42] -> %llu rows\n", (unsigned long long)rows[0],
           rows[1] == RDX_MISS ? "miss" : "?", (unsigned long long)rows[2], (unsigned long long)r->total);
    if (rows[0] != 0 || rows[1] != RDX_MISS || rows[2] != 4 || r->total != 3 || r->row_ids[0] != 0 ||
        r->row_ids[1] != 1 || r->row_ids[2] != 2)
      st = RDX_ERR_INTERNAL;
  }
  rdx_result_free(ctx, r);
  rdx_index_destroy(idx);
  rdx_context_destroy(ctx);
  return st == RDX_OK ? 0 : 1;
}
