/*
 * nompi.c: stands in for mpi.c when the library is built without MPI: no communicator can be
 * made, so no distributed index can exist, and rdx_dist_info_get says MPI is not built.
 */
#include "dist/dist.h"

rdx_status rdx_comm_create_mpi(rdx_context *ctx, const void *mpi_comm, rdx_comm **out) {
  RDX_CHECK(rdx_check_context(ctx));
  if (out != NULL) *out = NULL;
  (void)mpi_comm;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND,
                  "rdx_comm_create_mpi: this raydex was built without MPI (CMake found no MPI C library; "
                  "install libopenmpi-dev and configure again)");
}

void rdx_dist_mpi_info(rdx_dist_info *info) { info->mpi_built = false; }

rdx_status rdx_dist_world_begin(rdx_context *ctx, rdx_comm **out) {
  RDX_CHECK(rdx_check_context(ctx));
  *out = NULL;
  return rdx_fail(ctx, RDX_ERR_NO_BACKEND, "mpi: this raydex was built without MPI, so it cannot run under mpirun");
}

void rdx_dist_world_end(rdx_comm *comm) { (void)comm; }
