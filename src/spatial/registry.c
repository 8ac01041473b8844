/*
 * registry.c: which ops table answers a (kind, backend) pair of point indexes (spatial.h). Adding
 * a kind touches its own files and one line here. OPTIX contexts run the CUDA ops: no point index
 * uses rays. Without CUDA there are no CUDA entries, and no GPU context to ask for them.
 */
#include "spatial/spatial.h"

#include <stddef.h>

static const rdx_sp_ops *const cpu_ops[] = {
    &rdx_sp_qt_cpu_ops,
    &rdx_sp_kd_cpu_ops,
    NULL,
};
#ifdef RDX_HAVE_CUDA
static const rdx_sp_ops *const cuda_ops[] = {
    &rdx_sp_qt_cuda_ops,
    &rdx_sp_kd_cuda_ops,
    NULL,
};
#endif

static const rdx_sp_ops *find(const rdx_sp_ops *const *list, rdx_points_kind kind) {
  for (; *list != NULL; list++)
    if ((*list)->kind == kind) return *list;
  return NULL;
}

const rdx_sp_ops *rdx_sp_find_ops(rdx_points_kind kind, rdx_backend backend) {
  if (backend == RDX_BACKEND_CPU) return find(cpu_ops, kind);
#ifdef RDX_HAVE_CUDA
  if (backend == RDX_BACKEND_CUDA || backend == RDX_BACKEND_OPTIX) return find(cuda_ops, kind);
#endif
  return NULL;
}
