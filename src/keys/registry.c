/*
 * registry.c: which ops table answers a (kind, backend) pair. Adding a kind touches its own
 * files and one line here. OptiX contexts run the non-ray-tracing kinds on their CUDA ops.
 */
#include "keys/keys.h"

#include <stddef.h>

static const rdx_key_ops *const cpu_ops[] = {
    &rdx_scan_cpu_ops, &rdx_sorted_cpu_ops,
};
#ifdef RDX_HAVE_CUDA
static const rdx_key_ops *const cuda_ops[] = {
    &rdx_scan_cuda_ops, &rdx_sorted_cuda_ops,
};
#endif

const rdx_key_ops *rdx_keys_find_ops(rdx_kind kind, rdx_backend backend) {
  if (backend == RDX_BACKEND_CPU) {
    for (size_t i = 0; i < sizeof cpu_ops / sizeof cpu_ops[0]; i++)
      if (cpu_ops[i]->kind == kind) return cpu_ops[i];
    return NULL;
  }
#ifdef RDX_HAVE_CUDA
  if (backend == RDX_BACKEND_CUDA || backend == RDX_BACKEND_OPTIX) {
    for (size_t i = 0; i < sizeof cuda_ops / sizeof cuda_ops[0]; i++)
      if (cuda_ops[i]->kind == kind) return cuda_ops[i];
  }
#endif
  return NULL;
}
