/*
 * update.c: bulk moves, inserts and erases (G-PICS Section 5, Fig. 11): which engine takes a
 * batch, and what every engine's batch leaves behind (counts, ids, statistics, the words of a
 * failure). Each index keeps the layout its build chose, and each layout one engine per backend
 * and kind (its ops table's rdx_sp_engine; spatial.h has the list); a batch too large for that
 * engine rebuilds the index in the same layout (the ops' rebuild). The engines share their rules
 * through update_hd.h.
 */
#include "spatial/spatial.h"

#include <stddef.h>
#include <string.h>

void rdx_sp_force_rebuild(rdx_points *pts, int mode) { pts->force_rebuild = mode < 0 ? -1 : mode > 0; }

/* Paging's work and the k-d repair's grow with the batch and a rebuild's does not, so paging takes
 * batches of up to a tenth of the points (its lists hold 32-bit slots, so a pool that could pass
 * 2^31 of them rebuilds too) and the repair up to half, above which its splitting leaves would
 * hold most points (bench/results/NVIDIA-H200/UPDATES.md). The merge and the CPU planner take any
 * batch. */
int rdx_sp_rebuilds(const rdx_points *pts, int64_t m) {
  const rdx_sp_engine *e = rdx_sp_engine_of(pts->ops, pts->layout);
  const int64_t big = (int64_t)1 << 31;
  if (e->share == 0) return 0;
  if (e->slots32 && (4 * (pts->n + m) + 65536 >= big || pts->pool.cap >= big)) return 1; /* the engine cannot */
  if (pts->force_rebuild) return pts->force_rebuild > 0;
  return m * e->share > pts->n;
}

void rdx_sp_drop_pages(rdx_context *ctx, rdx_points *pts) {
  if (pts->pfree) rdx_mem_free(ctx, pts->pfree);
  pts->pfree = NULL, pts->pfree_k = 0, pts->pfree_bytes = 0;
}

static const char *op_name(int op) {
  return op == RDX_SP_MOVE ? "rdx_points_move" : op == RDX_SP_INSERT ? "rdx_points_insert" : "rdx_points_erase";
}

rdx_status rdx_sp_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  static const char *why[] = {"", "is not an id of this index", "was erased", "appears twice in the batch"};
  const int rebuilt = rdx_sp_rebuilds(pts, b->m);
  const rdx_sp_update_fn engine = rebuilt ? pts->ops->rebuild : rdx_sp_engine_of(pts->ops, pts->layout)->update;
  const rdx_sp_stats was = pts->stats; /* what a failed batch leaves */
  memset(&pts->stats.moved, 0, offsetof(rdx_sp_stats, relayouts) - offsetof(rdx_sp_stats, moved));
  b->bad_row = -1, b->bad_xy = 0, b->in_place = -1;
  rdx_status st = engine(ctx, pts, b);
  if (st == RDX_OK && b->bad_xy) st = RDX_ERR_INVALID_ARGUMENT; /* the caller words it */
  if (st == RDX_OK && b->bad_row >= 0)
    st = rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids row %lld (id %llu) %s", op_name(b->op), (long long)b->bad_row,
                  (unsigned long long)b->bad_id, why[b->bad_what]);
  if (st != RDX_OK) { /* the last update's figures stay; a relayout of this one counts */
    const int64_t relayouts = pts->stats.relayouts, growths = pts->stats.growths;
    pts->stats = was;
    pts->stats.relayouts = relayouts, pts->stats.growths = growths;
    return st;
  }
  rdx_sp_stats *S = &pts->stats;
  S->rebuilt = rebuilt;
  if (b->op == RDX_SP_INSERT) {
    pts->n += b->m, pts->id_end += (uint64_t)b->m;
    S->inserted = b->m;
  } else if (b->op == RDX_SP_ERASE) {
    pts->n -= b->m;
    S->erased = b->m;
  } else {
    S->moved = b->m;
    S->in_place = b->in_place;
    S->left_leaf = b->in_place < 0 ? -1 : b->m - b->in_place;
  }
  return RDX_OK;
}
