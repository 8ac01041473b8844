/*
 * nonccl.c: stands in for nccl.c when the library is built without NCCL (or without CUDA or MPI,
 * which NCCL needs here): no MPI communicator gets a device all-to-all, so the device data of MPI
 * ranks is staged through the host, and rdx_dist_info_get says NCCL is not built.
 */
#include "dist/dist.h"

rdx_status rdx_dist_nccl_begin(rdx_comm *comm, rdx_nccl **out) {
  (void)comm;
  *out = NULL;
  return RDX_OK;
}
rdx_status rdx_dist_nccl_alltoallv(rdx_comm *comm, rdx_nccl *nccl, const void *send, const int64_t *send_counts,
                                   void *recv, const int64_t *recv_counts, size_t item) {
  (void)nccl, (void)send, (void)send_counts, (void)recv, (void)recv_counts, (void)item;
  return rdx_fail(comm->ctx, RDX_ERR_INTERNAL, "device all-to-all: NCCL is not built");
}
void rdx_dist_nccl_end(rdx_comm *comm, rdx_nccl *nccl) { (void)comm, (void)nccl; }
void rdx_dist_nccl_info(rdx_dist_info *info) { info->nccl_built = false; }
