/*
 * registry.c: which ops table answers an (operation, backend) pair of the join module. Adding a
 * backend of an operation touches its own files and one line here. OptiX contexts build the index
 * with the CUDA table (index.cu makes an OptiX GAS there) and run PIP and LSI with the join's
 * OptiX programs (src/join/optix/).
 */
#include "join/join.h"

#include <stddef.h>

static const rdx_jn_ops *const cpu_ops[] = {
    &rdx_jn_index_cpu_ops,
    &rdx_jn_pip_cpu_ops,
    &rdx_jn_lsi_cpu_ops,
    &rdx_jn_polygons_cpu_ops,
    NULL,
};
#ifdef RDX_HAVE_CUDA
static const rdx_jn_ops *const cuda_ops[] = {
    &rdx_jn_index_cuda_ops,
    &rdx_jn_pip_cuda_ops,
    &rdx_jn_lsi_cuda_ops,
    &rdx_jn_polygons_cuda_ops,
    NULL,
};
#endif
#ifdef RDX_HAVE_OPTIX
static const rdx_jn_ops *const optix_ops[] = {
    &rdx_jn_index_cuda_ops,
    &rdx_jn_pip_optix_ops,
    &rdx_jn_lsi_optix_ops,
    &rdx_jn_polygons_optix_ops,
    NULL,
};
#endif

static const rdx_jn_ops *find(const rdx_jn_ops *const *list, rdx_jn_op op) {
  for (; *list != NULL; list++)
    if ((*list)->op == op) return *list;
  return NULL;
}

const rdx_jn_ops *rdx_jn_find_ops(rdx_jn_op op, rdx_backend backend) {
  if (backend == RDX_BACKEND_CPU) return find(cpu_ops, op);
#ifdef RDX_HAVE_CUDA
  if (backend == RDX_BACKEND_CUDA) return find(cuda_ops, op);
#endif
#ifdef RDX_HAVE_OPTIX
  if (backend == RDX_BACKEND_OPTIX) return find(optix_ops, op);
#endif
  return NULL;
}
