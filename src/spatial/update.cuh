/*
 * update.cuh: what the two CUDA update paths share (update.cu: the host-planned path of the k-d
 * tree; update_qt.cu: quadtrees, all on the device): the pool as kernels see it, and the
 * deterministic check of a batch's ids behind every "bad id" message.
 */
#ifndef RDX_SP_UPDATE_CUH
#define RDX_SP_UPDATE_CUH

#include "spatial/sp_cuda.cuh"

namespace rdx_sp {

/* The pool as kernels see it: coordinates f32/f64, codes u32/u64 (k-d: leaf codes, u64). */
struct dpool {
  void *x, *y;
  uint64_t *id;
  void *key;
  int f64, key64;
};

static __device__ __forceinline__ double px(const dpool &p, int64_t s) {
  return p.f64 ? ((const double *)p.x)[s] : (double)((const float *)p.x)[s];
}
static __device__ __forceinline__ double py(const dpool &p, int64_t s) {
  return p.f64 ? ((const double *)p.y)[s] : (double)((const float *)p.y)[s];
}
static __device__ __forceinline__ uint64_t pkey(const dpool &p, int64_t s) {
  return p.key64 ? ((const uint64_t *)p.key)[s] : ((const uint32_t *)p.key)[s];
}
static __device__ __forceinline__ void put_xy(const dpool &p, int64_t s, double x, double y) {
  if (p.f64) {
    ((double *)p.x)[s] = x;
    ((double *)p.y)[s] = y;
  } else {
    ((float *)p.x)[s] = (float)x;
    ((float *)p.y)[s] = (float)y;
  }
}
static __device__ __forceinline__ void put_key(const dpool &p, int64_t s, uint64_t k) {
  if (p.key64) ((uint64_t *)p.key)[s] = k;
  else ((uint32_t *)p.key)[s] = (uint32_t)k;
}
/* Copy slot s to slot d (same pool) and point the id there. */
static __device__ __forceinline__ void move_slot(const dpool &p, int64_t s, int64_t d, uint64_t *slot) {
  if (p.f64) {
    ((double *)p.x)[d] = ((const double *)p.x)[s];
    ((double *)p.y)[d] = ((const double *)p.y)[s];
  } else {
    ((float *)p.x)[d] = ((const float *)p.x)[s];
    ((float *)p.y)[d] = ((const float *)p.y)[s];
  }
  uint64_t id = p.id[s];
  p.id[d] = id;
  put_key(p, d, pkey(p, s));
  slot[id] = (uint64_t)d;
}

static inline dpool pool_of(const rdx_points *pts, const rdx_sp_pool *pool) {
  dpool p;
  p.x = pool->x, p.y = pool->y, p.id = pool->id, p.key = pool->key;
  p.f64 = pts->f64;
  p.key64 = pts->kind == RDX_POINTS_KDTREE || pts->key64;
  return p;
}

static __device__ __forceinline__ uint64_t id_at(const void *ids, int ids64, int64_t i) {
  return ids64 ? ((const uint64_t *)ids)[i] : ((const uint32_t *)ids)[i];
}

/* The first bad row of a move or erase batch (an unknown, erased or repeated id) into f->bad_row,
 * bad_what, bad_id, as update.c reports it; f->bad_row = -1 when every id is good. */
rdx_status check_ids(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, scratch &mm, rdx_sp_found *f);

}  // namespace rdx_sp

#endif /* RDX_SP_UPDATE_CUH */
