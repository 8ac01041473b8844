/*
 * update.c: rdx_keys_rebuild, the update of the kinds without one in place (rx, cgrx).
 */
#include "keys/keys.h"

rdx_status rdx_keys_rebuild(rdx_context *ctx, rdx_index *idx, const rdx_key_input *ins, const void *erase,
                            int64_t m_erase, int64_t *n_erased) {
  (void)idx, (void)ins, (void)erase, (void)m_erase, (void)n_erased;
  return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "rdx_keys_rebuild: in progress");
}
