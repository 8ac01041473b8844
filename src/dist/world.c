/*
 * world.c: what the command line needs beyond the distributed indexes (bench_api.h): one rank's
 * answers gathered to rank 0, which writes the outputs, through the communicator's transport.
 */
#include <stdlib.h>
#include <string.h>

#include "bench_api.h"
#include "dist/dist.h"

rdx_status rdx_dist_gather_root(rdx_comm *comm, const char *fn, const void *mine, int64_t count, size_t item,
                                void **all, int64_t *total) {
  RDX_CHECK(rdx_comm_check(comm));
  rdx_context *ctx = comm->ctx;
  const int p = comm->size;
  *all = NULL;
  *total = 0;
  int64_t *counts = (int64_t *)calloc((size_t)p * 3, sizeof *counts);
  rdx_status st = counts ? RDX_OK : rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for %d counts", fn, p);
  RDX_CHECK_GOTO(rdx_comm_agree(comm, fn, st), st, done);
  int64_t *send = counts + p, *recv = counts + 2 * p;
  RDX_CHECK_GOTO(comm->ops->allgather(comm, &count, counts, sizeof count), st, done);
  int64_t sum = 0;
  for (int r = 0; r < p; r++) sum += counts[r];
  send[0] = count;
  if (comm->rank == 0) memcpy(recv, counts, (size_t)p * sizeof *counts);
  void *buf = NULL;
  if (comm->rank == 0 && (buf = malloc(sum > 0 ? (size_t)sum * item : 1)) == NULL)
    st = rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: no memory for %lld gathered items", fn, (long long)sum);
  RDX_CHECK_GOTO(rdx_comm_agree(comm, fn, st), st, fail);
  RDX_CHECK_GOTO(comm->ops->alltoallv(comm, mine, send, buf, recv, item), st, fail);
  *all = buf;
  *total = comm->rank == 0 ? sum : 0;
  goto done;
fail:
  free(buf);
done:
  free(counts);
  return st;
}
