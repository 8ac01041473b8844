/*
 * comm.c: the communicator's transport-independent half: its queries and destruction, the
 * agreement every collective call makes before it acts, and rdx_dist_info_get.
 *
 * Agreement is what makes a distributed call all-or-nothing: a rank that fails (a bad argument,
 * memory past its limit) cannot just return, or the others would wait for it in the next
 * collective; so every local phase ends in rdx_comm_agree, a minimum over the ranks (the lowest
 * failing rank) and a broadcast of that rank's status and sentence, after which every rank takes
 * the same path.
 */
#include "dist/dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_comm(const rdx_comm *comm) { return comm != NULL && comm->magic == RDX_COMM_MAGIC; }

int rdx_comm_rank(const rdx_comm *comm) { return is_comm(comm) ? comm->rank : -1; }
int rdx_comm_size(const rdx_comm *comm) { return is_comm(comm) ? comm->size : -1; }
rdx_context *rdx_comm_context(const rdx_comm *comm) { return is_comm(comm) ? comm->ctx : NULL; }
const char *rdx_dist_comm_transport(const rdx_comm *comm) { return is_comm(comm) ? comm->ops->name : NULL; }

void rdx_comm_destroy(rdx_comm *comm) {
  if (!is_comm(comm)) return;
  comm->ops->destroy(comm);
  comm->magic = 0;
  free(comm);
}

rdx_status rdx_comm_check(rdx_comm *comm) {
  if (comm == NULL) return RDX_ERR_INVALID_ARGUMENT; /* no context to write a sentence in */
  if (comm->magic != RDX_COMM_MAGIC) return RDX_ERR_MISUSE;
  return rdx_check_context(comm->ctx);
}

rdx_status rdx_comm_agree(rdx_comm *comm, const char *fn, rdx_status st) {
  int first = st != RDX_OK ? comm->rank : comm->size;
  RDX_CHECK(comm->ops->allreduce_min_int(comm, &first));
  if (first >= comm->size) return RDX_OK;
  struct {
    int32_t status;
    char text[sizeof comm->ctx->message - 64];
  } m;
  memset(&m, 0, sizeof m);
  if (comm->rank == first) {
    m.status = (int32_t)st;
    const char *text = comm->ctx->message;
    size_t k = strlen(fn);
    if (strncmp(text, fn, k) == 0 && text[k] == ':' && text[k + 1] == ' ') text += k + 2;
    size_t len = strlen(text);
    if (len >= sizeof m.text) len = sizeof m.text - 1; /* a sentence that long is cut, not refused */
    memcpy(m.text, text, len);
  }
  RDX_CHECK(comm->ops->bcast(comm, &m, sizeof m, first));
  return rdx_fail(comm->ctx, (rdx_status)m.status, "%s: rank %d: %s", fn, first, m.text);
}

/* The launcher's word for this process's rank and the job's size, read only where MPI itself is
 * not initialised (rdx_dist_info_get initialises nothing): Open MPI's mpirun, PMIx, PMI (MPICH's
 * Hydra), Slurm's srun. */
static void launcher_rank(int *rank, int *size) {
  static const char *const names[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                         {"PMIX_RANK", "OMPI_UNIVERSE_SIZE"},
                                         {"PMI_RANK", "PMI_SIZE"},
                                         {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *r = getenv(names[i][0]), *s = getenv(names[i][1]);
    if (r == NULL || s == NULL) continue;
    char *end1 = NULL, *end2 = NULL;
    long rv = strtol(r, &end1, 10), sv = strtol(s, &end2, 10);
    if (*r && *s && *end1 == '\0' && *end2 == '\0' && rv >= 0 && sv >= 1 && rv < sv && sv <= INT_MAX) {
      *rank = (int)rv;
      *size = (int)sv;
      return;
    }
  }
}

rdx_status rdx_dist_info_get(rdx_dist_info *info) {
  if (info == NULL || info->size < sizeof(rdx_dist_info)) return RDX_ERR_INVALID_ARGUMENT;
  memset(info, 0, sizeof *info);
  info->size = sizeof *info;
  info->mpi_rank = -1;
  rdx_dist_mpi_info(info);
  rdx_dist_nccl_info(info);
  if (info->mpi_rank < 0) launcher_rank(&info->mpi_rank, &info->mpi_size);
  if (info->mpi_rank < 0) info->mpi_size = 0;
  return RDX_OK;
}
