/*
 * update.cuh: what the two CUDA update paths share (update.cu: the host-planned path of the k-d
 * tree; update_qt.cu: the quadtree's merge): reading a batch's ids, bitmaps, and the
 * deterministic check of a batch's ids behind every "bad id" message.
 */
#ifndef RDX_SP_UPDATE_CUH
#define RDX_SP_UPDATE_CUH

#include "spatial/sp_cuda.cuh"

namespace rdx_sp {

/* Bit s of a bitmap of u32 words (the merge's claim and live-id bitmaps). */
static __device__ __forceinline__ int bit_get(const uint32_t *b, uint64_t s) { return (b[s >> 5] >> (s & 31)) & 1u; }

static __device__ __forceinline__ uint64_t id_at(const void *ids, int ids64, int64_t i) {
  return ids64 ? ((const uint64_t *)ids)[i] : ((const uint32_t *)ids)[i];
}

/* The first bad row of a move or erase batch (an unknown, erased or repeated id) into f->bad_row,
 * bad_what, bad_id, as update.c reports it; f->bad_row = -1 when every id is good. */
rdx_status check_ids(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, scratch &mm, rdx_sp_found *f);

}  // namespace rdx_sp

#endif /* RDX_SP_UPDATE_CUH */
