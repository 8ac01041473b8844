/*
 * handle.h: the check of an object handle passed to a public call (STYLE rule 3, NCCL's
 * CommCheck), one sentence per failure so every object's messages read alike. The context itself
 * is checked first, by rdx_check_context (core.h).
 */
#ifndef RDX_HANDLE_H
#define RDX_HANDLE_H

#include "core/core.h"

/* The status of handle h (a struct with `uint32_t magic` and `rdx_context *ctx`) given to public
 * call fn in context ctx; name and what are string literals, the argument's name and "a ..." /
 * "an ..." for its kind of object:
 *  - h NULL: RDX_ERR_INVALID_ARGUMENT "<fn>: <name> is NULL";
 *  - h without the magic word (garbage, another kind of object): RDX_ERR_MISUSE
 *    "<fn>: <name> <h> is not <what>" (h->ctx is not read then);
 *  - h made in another context: RDX_ERR_MISUSE "<fn>: <name> <h> belongs to another context";
 *  - else RDX_OK.
 * A destroyed handle's memory is freed, so it cannot be told apart (core.h). h is evaluated
 * several times: pass a variable. */
#define RDX_HANDLE_CHECK(ctx, fn, h, magic_word, name, what)                                                \
  ((h) == NULL ? rdx_fail((ctx), RDX_ERR_INVALID_ARGUMENT, "%s: " name " is NULL", (fn))                     \
   : (h)->magic != (magic_word)                                                                              \
       ? rdx_fail((ctx), RDX_ERR_MISUSE, "%s: " name " %p is not " what, (fn), (const void *)(h))            \
   : (h)->ctx != (ctx)                                                                                       \
       ? rdx_fail((ctx), RDX_ERR_MISUSE, "%s: " name " %p belongs to another context", (fn), (const void *)(h)) \
       : RDX_OK)

#endif /* RDX_HANDLE_H */
