/*
 * registry.c: which ops table answers a (kind, backend) pair. Adding a kind touches its own
 * files and one line here. OptiX contexts run the non-ray-tracing kinds on their CUDA ops.
 */
#include "keys/keys.h"

#include <stddef.h>

static const rdx_key_ops *const cpu_ops[] = {
    &rdx_scan_cpu_ops,
    &rdx_sorted_cpu_ops,
    &rdx_rx_cpu_ops,
    &rdx_cgrx_cpu_ops,
    NULL,
};
#ifdef RDX_HAVE_CUDA
static const rdx_key_ops *const cuda_ops[] = {
    NULL,
};
#endif

static const rdx_key_ops *find(const rdx_key_ops *const *list, rdx_kind kind) {
  for (; *list != NULL; list++)
    if ((*list)->kind == kind) return *list;
  return NULL;
}

const rdx_key_ops *rdx_keys_find_ops(rdx_kind kind, rdx_backend backend) {
  if (backend == RDX_BACKEND_CPU) return find(cpu_ops, kind);
#ifdef RDX_HAVE_CUDA
  if (backend == RDX_BACKEND_CUDA || backend == RDX_BACKEND_OPTIX) return find(cuda_ops, kind);
#endif
  return NULL;
}
