/*
 * registry.c: which ops table answers a (kind, backend) pair. Adding a kind touches its own
 * files and one line here. OptiX contexts run the non-ray-tracing kinds on their CUDA ops, and
 * rx and cgrx on their OptiX ops (a GAS and OptiX launches); cgrxu not yet on OptiX.
 */
#include "keys/keys.h"

#include <stddef.h>

static const rdx_key_ops *const cpu_ops[] = {
    &rdx_scan_cpu_ops,
    &rdx_sorted_cpu_ops,
    &rdx_btree_cpu_ops,
    &rdx_hash_cpu_ops,
    &rdx_rx_cpu_ops,
    &rdx_cgrx_cpu_ops,
    &rdx_cgrxu_cpu_ops,
    NULL,
};
#ifdef RDX_HAVE_CUDA
static const rdx_key_ops *const cuda_ops[] = {
    &rdx_scan_cuda_ops,
    &rdx_sorted_cuda_ops,
    &rdx_btree_cuda_ops,
    &rdx_hash_cuda_ops,
    &rdx_rx_cuda_ops,
    &rdx_cgrx_cuda_ops,
    &rdx_cgrxu_cuda_ops,
    NULL,
};
#endif
#ifdef RDX_HAVE_OPTIX
static const rdx_key_ops *const optix_ops[] = {
    &rdx_rx_optix_ops,
    &rdx_cgrx_optix_ops,
    &rdx_cgrxu_optix_ops,
    NULL,
};
#endif

static const rdx_key_ops *find(const rdx_key_ops *const *list, rdx_kind kind) {
  for (; *list != NULL; list++)
    if ((*list)->kind == kind) return *list;
  return NULL;
}

int rdx_keys_answers_ranges(rdx_kind kind) {
  const rdx_key_ops *ops = find(cpu_ops, kind); /* every kind has CPU ops; its others answer alike */
  return ops == NULL || ops->ranges;
}

const rdx_key_ops *rdx_keys_find_ops(rdx_kind kind, rdx_backend backend) {
  if (backend == RDX_BACKEND_CPU) return find(cpu_ops, kind);
#ifdef RDX_HAVE_OPTIX
  /* the ray-tracing kinds run on OptiX there, never on the soft BVH behind the caller's back */
  if (backend == RDX_BACKEND_OPTIX && (kind == RDX_KIND_RX || kind == RDX_KIND_CGRX || kind == RDX_KIND_CGRXU))
    return find(optix_ops, kind);
#endif
#ifdef RDX_HAVE_CUDA
  if (backend == RDX_BACKEND_OPTIX && (kind == RDX_KIND_RX || kind == RDX_KIND_CGRX || kind == RDX_KIND_CGRXU))
    return NULL;
  if (backend == RDX_BACKEND_CUDA || backend == RDX_BACKEND_OPTIX) return find(cuda_ops, kind);
#endif
  return NULL;
}
