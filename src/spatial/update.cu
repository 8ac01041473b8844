/*
 * update.cu: the CUDA backend of update.c's planned updates (the k-d tree's; quadtrees on the
 * GPU merge in update_qt.cu, which shares update.cuh). update.c plans on the host; this
 * file moves the points on the device, with the same lists as update_cpu.c:
 *   R  removals (old leaf, slot, id), sorted by (leaf, slot)
 *   I  incoming (target, Morton code, id, x, y), sorted by (target, code)
 *   P  in-place moves (slot, code, x, y), sorted by slot
 *   mark[slot]: 0 live, 1 removed, 2 moved in place
 * G-PICS's kernels map as: Movement-Check and Leaf-Finding = classify_kernel (one thread per
 * moved point: old leaf by descent, new leaf by descent, same leaf = in place); the structural
 * changes (split, merge, materialisation) are planned on the host from the per-leaf runs; the
 * Leaf-Lists-Update = segment_kernel (one block per rewritten leaf, block-wide scans keep point
 * order) and repair_kernel (one thread per leaf repaired in place: incoming points fill holes).
 * Coordinates travel as doubles and are stored back in the index dtype (exact for f32 input).
 * Only what moves is touched, plus one byte per pool slot for the marks (memset per update).
 */
#include <vector>

#include <thrust/iterator/constant_iterator.h>

#include "spatial/update.cuh"

namespace {

using namespace rdx_sp;

#define UB 128

/* The pool as kernels see it: coordinates f32/f64, codes u32/u64 (k-d: leaf codes, u64). */
struct dpool {
  void *x, *y;
  uint64_t *id;
  void *key;         /* NULL in a paged GPU quadtree's pool: codes come from the coordinates */
  int f64, key64;
  rdx_sp_grid g;
};

static __device__ __forceinline__ double px(const dpool &p, int64_t s) {
  return p.f64 ? ((const double *)p.x)[s] : (double)((const float *)p.x)[s];
}
static __device__ __forceinline__ double py(const dpool &p, int64_t s) {
  return p.f64 ? ((const double *)p.y)[s] : (double)((const float *)p.y)[s];
}
static __device__ __forceinline__ uint64_t pkey(const dpool &p, int64_t s) {
  if (!p.key) return rdx_sp_point_key(&p.g, px(p, s), py(p, s));
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
  if (!p.key) return;
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
  if (p.key) put_key(p, d, pkey(p, s));
  slot[id] = (uint64_t)d;
}

static inline dpool pool_of(const rdx_points *pts, const rdx_sp_pool *pool) {
  dpool p;
  p.x = pool->x, p.y = pool->y, p.id = pool->id, p.key = pool->key;
  p.f64 = pts->f64;
  p.key64 = pts->kind == RDX_POINTS_KDTREE || pts->key64;
  p.g = pts->grid;
  return p;
}

}  // namespace

/* The lists of one update (device memory unless noted). */
struct rdx_sp_work {
  rdx_context *ctx;
  scratch *mm;         /* owns every device buffer below */
  int op;
  int64_t m, nr, ni, np;
  int64_t *r_leaf, *r_slot;
  uint64_t *r_id;
  int64_t *i_tgt;
  uint64_t *i_key, *i_id;
  double *i_x, *i_y;
  int64_t *p_slot;
  uint64_t *p_key;
  double *p_x, *p_y;
  uint8_t *mark;
  int64_t ns;
  double *s_x, *s_y;
  uint64_t *s_id, *s_key;
  rdx_sp_pool newpool; /* reserved growth (block NULL if none) */
  uint64_t *newslot;
  int64_t newslot_cap;
  rdx_sp_nodes dnodes; /* reserved device nodes */
  rdx_sp_seg *d_segs;
  rdx_sp_keep *d_keeps;
  int64_t *d_order;
};

namespace {

/* ---- relayout ---- */

struct leaf_move {
  int64_t from, len, to, room; /* room: slots at `to` (their spare part zeroed), or len */
  uint64_t code;
};

/* One block per leaf move: its points to their new slots, the rest of its room zeroed; the id
 * map pointed at them when slot is not NULL. 256 threads a block: 128 took 395 us for 16.5M
 * points on an H200, 256 took 305-336 and 512 took 351 (loading several slots per thread before
 * storing, or fewer blocks looping over the leaves, did worse; PROBES.md §26). */
#define RELAYOUT_THREADS 256
__global__ void relayout_kernel(const leaf_move *lm, int64_t n_leaves, dpool src, dpool dst, int kd, uint64_t *slot) {
  for (int64_t a = blockIdx.x; a < n_leaves; a += gridDim.x) {
    const leaf_move L = lm[a];
    for (int64_t j = threadIdx.x; j < L.room; j += blockDim.x) {
      const int64_t s = L.from + j, d = L.to + j;
      if (j >= L.len) { /* spare room */
        put_xy(dst, d, 0.0, 0.0);
        dst.id[d] = 0;
        put_key(dst, d, 0);
        continue;
      }
      put_xy(dst, d, px(src, s), py(src, s));
      const uint64_t id = src.id[s];
      dst.id[d] = id;
      if (kd) put_key(dst, d, L.code);
      else if (dst.key) put_key(dst, d, pkey(src, s));
      if (slot) slot[id] = (uint64_t)d;
    }
  }
}

/* The id map after a relayout, in id order: each entry's old slot lies in one leaf move's old
 * extent, and moves with it. The moves are sorted by old slot (from), and chunk[c] counts those
 * that start below slot c * REMAP_CHUNK, so a slot's move is found among the few that start in
 * its chunk, or the one before. On an H200 with 16.5M points, writing the map from the points
 * (a random write each) made the move kernel take 1.34-1.37 ms instead of 0.31-0.34, and a binary
 * search over all moves per id (16 dependent loads) took 0.56 ms; this pass takes 0.14 ms
 * (PROBES.md §26). */
#define REMAP_CHUNK 64
__global__ void remap_keys_kernel(const leaf_move *lm, int64_t n, uint32_t *key, uint32_t *idx) {
  SP_FOR(i, n) key[i] = lm[i].len > 0 ? (uint32_t)lm[i].from : 0xFFFFFFFFu, idx[i] = (uint32_t)i;
}
static __device__ int64_t first_from_at(const uint32_t *from, int64_t lo, int64_t hi, uint64_t s) { /* first from > s */
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if ((uint64_t)from[mid] <= s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
/* chunk[c] for c <= n_chunks, and delta[c]: the shift of chunk c's live slots when they all lie in
 * one move (most do: leaves hold hundreds of slots), else REMAP_MIXED. */
#define REMAP_MIXED INT64_MIN
__global__ void remap_chunks_kernel(const uint32_t *from, const uint32_t *idx, int64_t n, const leaf_move *lm,
                                    int64_t n_chunks, uint32_t *chunk, int64_t *delta) {
  SP_FOR(c, n_chunks + 1) {
    const int64_t lo = c == 0 ? 0 : first_from_at(from, 0, n, (uint64_t)c * REMAP_CHUNK - 1);
    chunk[c] = (uint32_t)lo;
    if (c == n_chunks) break;
    const int64_t hi = first_from_at(from, lo, n, (uint64_t)(c + 1) * REMAP_CHUNK - 1);
    int64_t one = -1, k = 0; /* the moves whose extents reach into the chunk */
    if (lo > 0) {
      const leaf_move &L = lm[idx[lo - 1]];
      if (L.from + L.len > c * REMAP_CHUNK) one = lo - 1, k++;
    }
    if (hi > lo) one = lo, k += hi - lo;
    delta[c] = k == 1 ? lm[idx[one]].to - lm[idx[one]].from : REMAP_MIXED;
  }
}
/* The old map's n entries into the new map (entries past n stay none there). */
__global__ void remap_ids_kernel(const uint64_t *slot, int64_t n, const uint32_t *from, const uint32_t *idx,
                                 const uint32_t *chunk, const int64_t *delta, int64_t n_chunks, const leaf_move *lm,
                                 uint64_t *out, unsigned *bad) {
  SP_FOR(i, n) {
    const uint64_t s = slot[i];
    uint64_t d = RDX_SP_NONE;
    const uint64_t c = s / REMAP_CHUNK;
    if (s == RDX_SP_NONE) {
    } else if (c >= (uint64_t)n_chunks) {
      *bad = 1u;
    } else if (delta[c] != REMAP_MIXED) {
      d = (uint64_t)((int64_t)s + delta[c]);
    } else {
      const int64_t e = first_from_at(from, chunk[c], chunk[c + 1], s); /* the first move past s */
      const leaf_move L = e > 0 ? lm[idx[e - 1]] : leaf_move{0, 0, 0, 0, 0};
      if (e == 0 || s - (uint64_t)L.from >= (uint64_t)L.len) *bad = 1u; /* a live id outside every leaf */
      else d = (uint64_t)(L.to + (int64_t)(s - (uint64_t)L.from));
    }
    out[i] = d;
  }
}

/* The points of the n_lm leaf moves d_lm (on the device) into a new pool of new_cap slots (with
 * a key column when keys), slots from zero_from on zeroed (below it, the moves' rooms), and an id
 * map pointed at them: the old one remapped into a new one, or, on first use, one written from
 * the points; waits. On failure the index is as it was. */
rdx_status relayout_to(rdx_context *ctx, rdx_points *pts, const leaf_move *d_lm, int64_t n_lm, int64_t new_cap,
                       int64_t zero_from, int keys) {
  const char *fn = "rdx_points update: relayout";
  const int kd = pts->kind == RDX_POINTS_KDTREE;
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx);
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, new_cap, pts->f64, !keys ? 0 : kd || pts->key64 ? 8 : 4, &np));
  const int remap = pts->slot != nullptr && pts->pool.cap < (int64_t)UINT32_MAX && n_lm > 0;
  int64_t slot_cap = pts->slot ? pts->slot_cap : (int64_t)pts->id_end + (int64_t)pts->id_end / 4 + 64;
  uint64_t *slot = nullptr;
  rdx_status st = rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&slot, (size_t)slot_cap * 8, RDX_DEVICE);
  const int64_t n_old = pts->slot ? ((int64_t)pts->id_end < pts->slot_cap ? (int64_t)pts->id_end : pts->slot_cap) : 0;
  const int64_t none_from = remap ? n_old : 0; /* entries the remap does not write start as none */
  if (st == RDX_OK && none_from < slot_cap)
    st = rdx_cuda_ok(ctx, cudaMemsetAsync(slot + none_from, 0xFF, (size_t)(slot_cap - none_from) * 8, s), fn);
  uint32_t *rk = nullptr, *ri = nullptr, *rk2 = nullptr, *ri2 = nullptr, *chunk = nullptr;
  int64_t *delta = nullptr;
  unsigned *bad = nullptr;
  const int64_t n_chunks = pts->pool.cap / REMAP_CHUNK + 1;
  if (st == RDX_OK && remap) st = mm.get(&rk, (size_t)n_lm, fn);
  if (st == RDX_OK && remap) st = mm.get(&ri, (size_t)n_lm, fn);
  if (st == RDX_OK && remap) st = mm.get(&rk2, (size_t)n_lm, fn);
  if (st == RDX_OK && remap) st = mm.get(&ri2, (size_t)n_lm, fn);
  if (st == RDX_OK && remap) st = mm.get(&chunk, (size_t)n_chunks + 1, fn);
  if (st == RDX_OK && remap) st = mm.get(&delta, (size_t)n_chunks, fn);
  if (st == RDX_OK && remap) st = mm.get(&bad, 1, fn);
  if (st == RDX_OK && remap) st = rdx_cuda_ok(ctx, cudaMemsetAsync(bad, 0, 4, s), fn);
  cub::DoubleBuffer<uint32_t> kb(rk, rk2), ib(ri, ri2);
  if (st == RDX_OK && remap) {
    remap_keys_kernel<<<blocks_for(n_lm, 256), 256, 0, s>>>(d_lm, n_lm, rk, ri);
    st = mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceRadixSort::SortPairs(t, b, kb, ib, n_lm, 0, 32, s); });
    if (st == RDX_OK)
      remap_chunks_kernel<<<blocks_for(n_chunks + 1, 256), 256, 0, s>>>(kb.Current(), ib.Current(), n_lm, d_lm, n_chunks,
                                                                         chunk, delta);
  }
  rdx_trace(ctx, "relayout: pool and id map allocated, moves sorted");
  if (st == RDX_OK) st = pool_zero_from(ctx, &np, zero_from, pts->f64, fn);
  rdx_trace(ctx, "relayout: pool zeroed");
  if (st == RDX_OK && n_lm > 0) {
    const unsigned grid = n_lm < 65536 ? (unsigned)n_lm : 65536u;
    relayout_kernel<<<grid, RELAYOUT_THREADS, 0, s>>>(d_lm, n_lm, pool_of(pts, &pts->pool), pool_of(pts, &np), kd,
                                                      remap ? nullptr : slot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  rdx_trace(ctx, "relayout: points moved");
  if (st == RDX_OK && remap && n_old > 0) {
    remap_ids_kernel<<<blocks_for(n_old, 256), 256, 0, s>>>(pts->slot, n_old, kb.Current(), ib.Current(), chunk, delta,
                                                            n_chunks, d_lm, slot, bad);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  unsigned bad_h = 0;
  if (st == RDX_OK) st = remap ? to_host(ctx, &bad_h, bad, 1, fn) : rdx_cuda_ok(ctx, cudaStreamSynchronize(s), fn); /* waits */
  if (st == RDX_OK && bad_h) st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an id of the map outside every leaf", fn);
  rdx_trace(ctx, "relayout: id map");
  if (st != RDX_OK) {
    if (slot) rdx_mem_free(ctx, slot);
    rdx_sp_pool_free(ctx, &np);
    return st;
  }
  if (pts->slot) rdx_mem_free(ctx, pts->slot);
  pts->slot = slot;
  pts->slot_cap = slot_cap;
  np.used = new_cap;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  if (!kd) pfree_reset(ctx, pts);
  return RDX_OK;
}

/* The relayout update.c planned on the host (new_fpos per node of the host copy). */
rdx_status cu_relayout(rdx_context *ctx, rdx_points *pts, const int64_t *new_fpos, int64_t new_cap) {
  const char *fn = "rdx_points update: relayout";
  const rdx_sp_nodes *H = &pts->host;
  std::vector<leaf_move> lm;
  for (int64_t i = 0; i < H->n; i++)
    if (H->leaf[i] && H->len[i] > 0)
      lm.push_back(leaf_move{H->fpos[i], H->len[i], new_fpos[i], H->len[i], rdx_sp_code(H->level[i], H->key[i])});
  scratch mm(ctx);
  leaf_move *d_lm = nullptr;
  RDX_CHECK(mm.get(&d_lm, lm.size() + 1, fn));
  RDX_CHECK(to_device(ctx, d_lm, lm.data(), lm.size(), fn));
  return relayout_to(ctx, pts, d_lm, (int64_t)lm.size(), new_cap, 0, 1);
}

/* rdx_sp_qt_relayout_cuda's plan, on the device: each leaf's room GROW(len) (room[n] = 0, so the
 * exclusive sum's last entry is the total), its move to the sum of the rooms before it (node order,
 * as rdx_sp_relayout), and then the nodes' new fpos and room. */
__global__ void qt_rooms_kernel(rdx_sp_nodes N, int64_t *room) {
  SP_FOR(i, N.n + 1) room[i] = i < N.n && N.leaf[i] ? RDX_SP_GROW(N.len[i]) : 0;
}
__global__ void qt_moves_kernel(rdx_sp_nodes N, const int64_t *nf, leaf_move *lm) {
  SP_FOR(i, N.n) lm[i] = N.leaf[i] ? leaf_move{N.fpos[i], N.len[i], nf[i], nf[i + 1] - nf[i], 0} : leaf_move{0, 0, 0, 0, 0};
}
__global__ void qt_place_kernel(rdx_sp_nodes N, const int64_t *nf, const int64_t *room) {
  SP_FOR(i, N.n) if (N.leaf[i]) N.fpos[i] = nf[i], N.room[i] = room[i];
}

}  // namespace

/* A GPU quadtree's leaves spread out to room GROW(len) each, `headroom` free slots past them, in
 * a pool without codes: rdx_sp_relayout(wide) planned on the device, with no round trip of the
 * nodes through the host (whose copy goes stale). The paged update runs it whenever its free end
 * runs short, so its cost is part of the batches': on an H200 with 16.5M points the host-planned
 * relayout took 6-7 ms, this one 0.6-0.8 ms (PROBES.md §25, §26). */
extern "C" rdx_status rdx_sp_qt_relayout_cuda(rdx_context *ctx, rdx_points *pts, int64_t headroom) {
  const char *fn = "rdx_points update: relayout";
  const rdx_sp_nodes &N = pts->nodes;
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx);
  int64_t *room = nullptr, *nf = nullptr, total = 0;
  leaf_move *lm = nullptr;
  RDX_CHECK(mm.get(&room, (size_t)N.n + 1, fn));
  RDX_CHECK(mm.get(&nf, (size_t)N.n + 1, fn));
  RDX_CHECK(mm.get(&lm, (size_t)N.n + 1, fn));
  qt_rooms_kernel<<<blocks_for(N.n + 1, 256), 256, 0, s>>>(N, room);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceScan::ExclusiveSum(t, b, room, nf, N.n + 1, s); }));
  qt_moves_kernel<<<blocks_for(N.n, 256), 256, 0, s>>>(N, nf, lm);
  RDX_CUDA(ctx, cudaGetLastError(), fn);
  RDX_CHECK(to_host(ctx, &total, nf + N.n, 1, fn));
  rdx_trace(ctx, "relayout: planned");
  /* The new pool's size in steps of n/16, so that the next relayout usually asks for no more than
   * this one frees: the stream-ordered pool then hands the freed block back at once, where fresh
   * memory (pool and id map, about 0.75 GB for 16.5M points) took 1.0-1.4 ms to map on an H200
   * (PROBES.md section 27). */
  const int64_t step = pts->n / 16 > 65536 ? pts->n / 16 : 65536;
  RDX_CHECK(relayout_to(ctx, pts, lm, N.n, (total + headroom + step - 1) / step * step, total, 0));
  qt_place_kernel<<<blocks_for(N.n, 256), 256, 0, s>>>(N, nf, room); /* a device error here is fatal anyway */
  RDX_CHECK(rdx_cuda_ok(ctx, cudaGetLastError(), fn));
  RDX_CHECK(rdx_cuda_sync(ctx, fn));
  rdx_trace(ctx, "relayout: old pool freed, nodes placed");
  pts->pool.used = total;
  pts->host_stale = 1;
  return RDX_OK;
}

namespace {

/* ---- find: validation, movement check, leaf finding ---- */

/* An id is in the index by the planned path's id map, or by the merge path's bitmap. */
__global__ void validate_kernel(const void *ids, int ids64, int64_t m, uint64_t id_end, const uint64_t *slot,
                                const uint32_t *live, unsigned long long *bad, uint64_t *keys, int64_t *rows) {
  SP_FOR(i, m) {
    uint64_t id = id_at(ids, ids64, i);
    int what = id >= id_end ? 1 : (slot ? slot[id] == RDX_SP_NONE : !bit_get(live, id)) ? 2 : 0;
    if (what) atomicMin(bad, (unsigned long long)i * 4 + (unsigned long long)what);
    keys[i] = id;
    rows[i] = i;
  }
}

__global__ void dup_kernel(const uint64_t *k, const int64_t *rows, int64_t m, unsigned long long *bad) {
  SP_FOR(j, m) {
    if (j > 0 && k[j] == k[j - 1]) atomicMin(bad, (unsigned long long)rows[j] * 4 + 3);
  }
}

enum { C_INPLACE = 0, C_MOVEOUT = 1, C_ERASE = 2, C_INSERT = 3 };

/* Movement check and leaf finding, one thread per batch row. Sort keys: R by (leaf, slot), I by
 * (target, code) or target alone, P by slot; rows not in a list get all ones (sorted last). */
__global__ void classify_kernel(rdx_sp_view v, dpool pool, const uint64_t *slot, int op, const void *ids, int ids64,
                                const void *xy, int f64, int64_t m, uint64_t first_id, int sbits, int kbits, int composite,
                                int64_t *r_leaf_row, int64_t *r_slot_row, uint64_t *id_row, int64_t *tgt_row,
                                uint64_t *key_row, double *x_row, double *y_row, uint64_t *rkey, uint64_t *ikey,
                                uint64_t *pkey_, int64_t *rows_r, int64_t *rows_i, int64_t *rows_p,
                                unsigned long long *counters, unsigned long long *bad) {
  SP_FOR(i, m) {
    uint64_t id = op == RDX_SP_INSERT ? first_id + (uint64_t)i : id_at(ids, ids64, i);
    int64_t old = -1, s = -1;
    if (op != RDX_SP_INSERT) {
      s = (int64_t)slot[id];
      uint64_t sk = pkey(pool, s);
      int q;
      old = v.kd ? rdx_sp_find_code(&v, sk) : rdx_sp_qt_find(&v, sk, &q);
      if (old < 0 || !v.leaf[old]) atomicMin(bad, (unsigned long long)i);
    }
    int cls;
    int64_t tgt = -1;
    uint64_t key = 0;
    double x = 0, y = 0;
    if (op == RDX_SP_ERASE) {
      cls = C_ERASE;
    } else {
      x = rdx_sp_at(xy, 2 * i, f64), y = rdx_sp_at(xy, 2 * i + 1, f64);
      int q = -1;
      if (v.kd) {
        tgt = rdx_sp_kd_find(&v, x, y);
      } else {
        key = rdx_sp_point_key(&v.g, x, y);
        tgt = rdx_sp_qt_find(&v, key, &q);
      }
      if (op == RDX_SP_MOVE && tgt == old && q == -1) cls = C_INPLACE;
      else cls = op == RDX_SP_MOVE ? C_MOVEOUT : C_INSERT;
      tgt = tgt * 5 + q + 1;
    }
    r_leaf_row[i] = old, r_slot_row[i] = s, id_row[i] = id, tgt_row[i] = tgt, key_row[i] = key, x_row[i] = x, y_row[i] = y;
    int in_r = cls == C_MOVEOUT || cls == C_ERASE, in_i = cls == C_MOVEOUT || cls == C_INSERT, in_p = cls == C_INPLACE;
    rkey[i] = in_r ? ((uint64_t)old << sbits) | (uint64_t)s : ~0ull;
    ikey[i] = in_i ? (composite ? ((uint64_t)tgt << kbits) | key : key) : ~0ull;
    pkey_[i] = in_p ? (uint64_t)s : ~0ull;
    rows_r[i] = rows_i[i] = rows_p[i] = i;
    if (in_r) atomicAdd(&counters[0], 1ull);
    if (in_i) atomicAdd(&counters[1], 1ull);
    if (in_p) atomicAdd(&counters[2], 1ull);
  }
}

/* Second pass of the I sort when (target, code) does not fit 64 bits: targets of the rows in
 * code order, to be sorted stably. */
__global__ void tgt_of_rows_kernel(const int64_t *rows, const int64_t *tgt_row, int64_t n, int64_t ni, uint64_t *out) {
  SP_FOR(j, n) out[j] = j < ni ? (uint64_t)tgt_row[rows[j]] : ~0ull;
}

__global__ void gather_r_kernel(const int64_t *rows, int64_t n, const int64_t *leaf_row, const int64_t *slot_row,
                                const uint64_t *id_row, int64_t *r_leaf, int64_t *r_slot, uint64_t *r_id) {
  SP_FOR(j, n) {
    int64_t i = rows[j];
    r_leaf[j] = leaf_row[i], r_slot[j] = slot_row[i], r_id[j] = id_row[i];
  }
}
__global__ void gather_i_kernel(const int64_t *rows, int64_t n, const int64_t *tgt_row, const uint64_t *key_row,
                                const uint64_t *id_row, const double *x_row, const double *y_row, int64_t *i_tgt,
                                uint64_t *i_key, uint64_t *i_id, double *i_x, double *i_y) {
  SP_FOR(j, n) {
    int64_t i = rows[j];
    i_tgt[j] = tgt_row[i], i_key[j] = key_row[i], i_id[j] = id_row[i], i_x[j] = x_row[i], i_y[j] = y_row[i];
  }
}
__global__ void gather_p_kernel(const int64_t *rows, int64_t n, const int64_t *slot_row, const uint64_t *key_row,
                                const double *x_row, const double *y_row, int64_t *p_slot, uint64_t *p_key, double *p_x,
                                double *p_y) {
  SP_FOR(j, n) {
    int64_t i = rows[j];
    p_slot[j] = slot_row[i], p_key[j] = key_row[i], p_x[j] = x_row[i], p_y[j] = y_row[i];
  }
}
__global__ void mark_kernel(const int64_t *r_slot, int64_t nr, const int64_t *p_slot, int64_t np, uint8_t *mark) {
  SP_FOR(j, nr + np) {
    if (j < nr) mark[r_slot[j]] = 1;
    else mark[p_slot[j - nr]] = 2;
  }
}

struct add_op {
  template <typename T>
  __host__ __device__ T operator()(const T &a, const T &b) const {
    return a + b;
  }
};

/* Runs of a sorted int64 list, to the host. */
rdx_status runs_to_host(rdx_context *ctx, scratch &mm, const int64_t *what, int64_t n, rdx_sp_run **out, int64_t *n_out) {
  const char *fn = "rdx_points update: runs";
  *out = nullptr;
  *n_out = 0;
  RDX_CHECK(rdx_mem_alloc(ctx, fn, (void **)out, (size_t)(n ? n : 1) * sizeof(rdx_sp_run), RDX_HOST));
  if (n == 0) return RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  int64_t *uniq, *len, *start, *d_runs;
  RDX_CHECK(mm.get(&uniq, (size_t)n, fn));
  RDX_CHECK(mm.get(&len, (size_t)n, fn));
  RDX_CHECK(mm.get(&start, (size_t)n, fn));
  RDX_CHECK(mm.get(&d_runs, 1, fn));
  auto ones = thrust::make_constant_iterator((int64_t)1);
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) {
    return cub::DeviceReduce::ReduceByKey(t, b, what, uniq, ones, len, d_runs, add_op(), n, s);
  }));
  int64_t runs = 0;
  RDX_CHECK(to_host(ctx, &runs, d_runs, 1, fn));
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceScan::ExclusiveSum(t, b, len, start, runs, s); }));
  std::vector<int64_t> hu((size_t)runs), hl((size_t)runs), hs((size_t)runs);
  RDX_CHECK(to_host(ctx, hu.data(), uniq, (size_t)runs, fn));
  RDX_CHECK(to_host(ctx, hl.data(), len, (size_t)runs, fn));
  RDX_CHECK(to_host(ctx, hs.data(), start, (size_t)runs, fn));
  for (int64_t r = 0; r < runs; r++) (*out)[r].what = hu[(size_t)r], (*out)[r].n = hl[(size_t)r], (*out)[r].start = hs[(size_t)r];
  *n_out = runs;
  return RDX_OK;
}

void cu_release(rdx_context *ctx, rdx_sp_work *w) {
  if (w == nullptr) return;
  rdx_sp_pool_free(ctx, &w->newpool);
  if (w->newslot) rdx_mem_free(ctx, w->newslot);
  rdx_sp_nodes_free(ctx, &w->dnodes);
  delete w->mm;
  delete w;
}

/* Sort (key, row) pairs over the low `bits` bits; *ks / *rs receive the sorted arrays. */
rdx_status sort_rows(rdx_context *ctx, scratch &mm, uint64_t *keys, int64_t *rows, int64_t m, int bits, uint64_t **ks,
                     int64_t **rs, const char *fn) {
  uint64_t *k2;
  int64_t *r2;
  RDX_CHECK(mm.get(&k2, (size_t)m, fn));
  RDX_CHECK(mm.get(&r2, (size_t)m, fn));
  cub::DoubleBuffer<uint64_t> kb(keys, k2);
  cub::DoubleBuffer<int64_t> rb(rows, r2);
  cudaStream_t s = rdx_stream(ctx);
  if (bits < 1) bits = 1;
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) { return cub::DeviceRadixSort::SortPairs(t, b, kb, rb, m, 0, bits, s); }));
  *ks = kb.Current();
  *rs = rb.Current();
  return RDX_OK;
}

}  // namespace

namespace {
__global__ void set_bits_kernel(const uint64_t *ids, int64_t n, uint32_t *bits) {
  SP_FOR(i, n) atomicOr(&bits[ids[i] >> 5], 1u << (ids[i] & 31));
}
}  // namespace

pgfree rdx_sp::pfree_of(const rdx_points *pts) {
  pgfree F;
  memset(&F, 0, sizeof F);
  if (pts->pfree == NULL) return F;
  F.K = pts->pfree_k;
  const char *e = getenv("RAYDEX_SP_REACH"); /* a probe's knob */
  F.reach = e ? atoi(e) : PAGE_REACH;
  F.cnt = (int32_t *)pts->pfree;
  F.off = (const int64_t *)((char *)pts->pfree + ((size_t)F.K * 4 + 7) / 8 * 8);
  F.page = (uint32_t *)(F.off + F.K + 1);
  return F;
}

void rdx_sp::pfree_reset(rdx_context *ctx, rdx_points *pts) {
  rdx_sp_drop_pages(ctx, pts);
  const int K = (int)((RDX_SP_GROW(pts->cap) + PAGE_UNIT - 1) / PAGE_UNIT);
  std::vector<int64_t> off((size_t)K + 1, 0);
  for (int k = 0; k < K; k++) off[k + 1] = off[k] + pts->pool.cap / ((int64_t)PAGE_UNIT * (k + 1)) + 1;
  const size_t head = ((size_t)K * 4 + 7) / 8 * 8, bytes = head + ((size_t)K + 1) * 8 + (size_t)off[K] * 4;
  keep_message keep(ctx); /* no failure of the caller */
  void *b = NULL;
  cudaStream_t s = rdx_stream(ctx);
  if (rdx_mem_alloc(ctx, "rdx_points: free pages", &b, bytes, RDX_DEVICE) == RDX_OK &&
      cudaMemsetAsync(b, 0, (size_t)K * 4, s) == cudaSuccess &&
      cudaMemcpyAsync((char *)b + head, off.data(), ((size_t)K + 1) * 8, cudaMemcpyHostToDevice, s) == cudaSuccess &&
      cudaStreamSynchronize(s) == cudaSuccess) {
    pts->pfree = b, pts->pfree_k = K, pts->pfree_bytes = (int64_t)bytes;
  } else {
    if (b) rdx_mem_free(ctx, b);
    (void)cudaGetLastError();
  }
}

rdx_status rdx_sp::pool_zero_from(rdx_context *ctx, rdx_sp_pool *p, int64_t from, int f64, const char *fn) {
  if (from >= p->cap) return RDX_OK;
  const size_t f = (size_t)from, c = (size_t)p->cap, es = f64 ? 8 : 4, kb = (size_t)p->key_bytes;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CUDA(ctx, cudaMemsetAsync((char *)p->x + f * es, 0, (c - f) * es, s), fn);
  RDX_CUDA(ctx, cudaMemsetAsync((char *)p->y + f * es, 0, (c - f) * es, s), fn);
  RDX_CUDA(ctx, cudaMemsetAsync(p->id + f, 0, (c - f) * 8, s), fn);
  if (p->key) RDX_CUDA(ctx, cudaMemsetAsync((char *)p->key + f * kb, 0, (c - f) * kb, s), fn);
  return RDX_OK;
}

rdx_status rdx_sp::pool_copy_used(rdx_context *ctx, rdx_sp_pool *dst, const rdx_sp_pool *src, int f64, const char *fn) {
  const size_t u = (size_t)src->used, es = f64 ? 8 : 4, kb = (size_t)src->key_bytes;
  cudaStream_t s = rdx_stream(ctx);
  if (src->used > dst->cap || (src->key == NULL) != (dst->key == NULL) || kb != (size_t)dst->key_bytes)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a pool of %lld slots into one of %lld", fn, (long long)src->used,
                    (long long)dst->cap);
  RDX_CUDA(ctx, cudaMemcpyAsync(dst->x, src->x, u * es, cudaMemcpyDeviceToDevice, s), fn);
  RDX_CUDA(ctx, cudaMemcpyAsync(dst->y, src->y, u * es, cudaMemcpyDeviceToDevice, s), fn);
  RDX_CUDA(ctx, cudaMemcpyAsync(dst->id, src->id, u * 8, cudaMemcpyDeviceToDevice, s), fn);
  if (src->key) RDX_CUDA(ctx, cudaMemcpyAsync(dst->key, src->key, u * kb, cudaMemcpyDeviceToDevice, s), fn);
  RDX_CHECK(pool_zero_from(ctx, dst, src->used, f64, fn));
  dst->used = src->used;
  return RDX_OK;
}

rdx_status rdx_sp::live_bitmap(rdx_context *ctx, const uint64_t *pid, int64_t n, int64_t bits, uint32_t **out) {
  const char *fn = "rdx_points update: live ids";
  cudaStream_t s = rdx_stream(ctx);
  const size_t bytes = (size_t)(bits / 32 + 1) * 4;
  uint32_t *live = nullptr;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: live ids", (void **)&live, bytes, RDX_DEVICE));
  rdx_status st = rdx_cuda_ok(ctx, cudaMemsetAsync(live, 0, bytes, s), fn);
  if (st == RDX_OK && n > 0) {
    set_bits_kernel<<<blocks_for(n, 256), 256, 0, s>>>(pid, n, live);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), fn);
  }
  if (st != RDX_OK) {
    rdx_mem_free(ctx, live);
    return st;
  }
  *out = live;
  return RDX_OK;
}

/* Unknown or erased ids first (the lowest such row), then repeated ones (by a sort of the ids). */
rdx_status rdx_sp::check_ids(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, scratch &mm, rdx_sp_found *f) {
  const char *fn = "rdx_points update: ids";
  const int64_t m = b->m;
  cudaStream_t s = rdx_stream(ctx);
  const unsigned grid = blocks_for(m, 256);
  f->bad_row = -1;
  unsigned long long *bad, hb = ~0ull;
  uint64_t *keys, *ks;
  int64_t *rows, *rs;
  RDX_CHECK(mm.get(&bad, 1, fn));
  RDX_CHECK(mm.get(&keys, (size_t)m, fn));
  RDX_CHECK(mm.get(&rows, (size_t)m, fn));
  RDX_CHECK(to_device(ctx, bad, &hb, 1, fn));
  validate_kernel<<<grid, 256, 0, s>>>(b->ids, b->ids64, m, pts->id_end, pts->slot, pts->live, bad, keys, rows);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: validate kernel");
  RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
  if (hb == ~0ull) {
    RDX_CHECK(sort_rows(ctx, mm, keys, rows, m, bits_for(pts->id_end), &ks, &rs, fn));
    dup_kernel<<<grid, 256, 0, s>>>(ks, rs, m, bad);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: repeated ids kernel");
    RDX_CHECK(to_host(ctx, &hb, bad, 1, fn));
  }
  if (hb == ~0ull) return RDX_OK;
  f->bad_row = (int64_t)(hb / 4);
  f->bad_what = (int)(hb % 4);
  if (b->ids64) {
    RDX_CHECK(to_host(ctx, &f->bad_id, (const uint64_t *)b->ids + f->bad_row, 1, fn));
  } else {
    uint32_t id32 = 0;
    RDX_CHECK(to_host(ctx, &id32, (const uint32_t *)b->ids + f->bad_row, 1, fn));
    f->bad_id = id32;
  }
  return RDX_OK;
}

namespace {

rdx_status cu_find(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, rdx_sp_work **wout, rdx_sp_found *f) {
  const char *fn = "rdx_points update: find";
  rdx_sp_work *w = new (std::nothrow) rdx_sp_work();
  if (w == nullptr) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: work", fn);
  memset((void *)w, 0, sizeof *w);
  w->ctx = ctx;
  w->mm = new (std::nothrow) scratch(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  if (w->mm == nullptr) {
    delete w;
    return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "%s: work", fn);
  }
  *wout = w;
  scratch &mm = *w->mm;
  w->op = b->op;
  w->m = b->m;
  f->bad_row = -1;
  const int64_t m = b->m;
  cudaStream_t s = rdx_stream(ctx);
  const unsigned grid = blocks_for(m, 256);
  unsigned long long *bad; /* [0] first bad row * 4 + what; [1..3] list sizes */
  RDX_CHECK(mm.get(&bad, 4, fn));
  unsigned long long init[4] = {~0ull, 0, 0, 0}, hb[4];

  if (b->op != RDX_SP_INSERT) {
    RDX_CHECK(check_ids(ctx, pts, b, mm, f));
    if (f->bad_row >= 0) return RDX_OK;
  }
  RDX_CHECK(to_device(ctx, bad, init, 4, fn));

  /* Movement check and leaf finding. */
  rdx_sp_view v = rdx_sp_view_of(pts);
  int kd = v.kd;
  int sbits = bits_for((uint64_t)pts->pool.used), lbits = bits_for((uint64_t)v.n_nodes);
  int kbits = kd ? 0 : 2 * pts->depth, tbits = bits_for((uint64_t)v.n_nodes * 5);
  if (sbits + lbits > 64)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld slots and %lld nodes exceed 64-bit sort keys", fn,
                    (long long)pts->pool.used, (long long)v.n_nodes);
  int composite = kd || tbits + kbits <= 64;
  int64_t *leaf_row, *slot_row, *tgt_row, *rows_r, *rows_i, *rows_p;
  uint64_t *id_row, *key_row, *rkey, *ikey, *pk;
  double *x_row, *y_row;
  RDX_CHECK(mm.get(&leaf_row, (size_t)m, fn));
  RDX_CHECK(mm.get(&slot_row, (size_t)m, fn));
  RDX_CHECK(mm.get(&tgt_row, (size_t)m, fn));
  RDX_CHECK(mm.get(&rows_r, (size_t)m, fn));
  RDX_CHECK(mm.get(&rows_i, (size_t)m, fn));
  RDX_CHECK(mm.get(&rows_p, (size_t)m, fn));
  RDX_CHECK(mm.get(&id_row, (size_t)m, fn));
  RDX_CHECK(mm.get(&key_row, (size_t)m, fn));
  RDX_CHECK(mm.get(&rkey, (size_t)m, fn));
  RDX_CHECK(mm.get(&ikey, (size_t)m, fn));
  RDX_CHECK(mm.get(&pk, (size_t)m, fn));
  RDX_CHECK(mm.get(&x_row, (size_t)m, fn));
  RDX_CHECK(mm.get(&y_row, (size_t)m, fn));
  classify_kernel<<<grid, 256, 0, s>>>(v, pool_of(pts, &pts->pool), pts->slot, b->op, b->ids, b->ids64, b->xy, pts->f64, m,
                                       b->first_id, sbits, kbits, composite, leaf_row, slot_row, id_row, tgt_row, key_row,
                                       x_row, y_row, rkey, ikey, pk, rows_r, rows_i, rows_p, bad + 1, bad);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: classify kernel");
  RDX_CHECK(to_host(ctx, hb, bad, 4, fn));
  if (hb[0] != ~0ull)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the point of batch row %llu has no leaf", fn, hb[0]);
  w->nr = (int64_t)hb[1], w->ni = (int64_t)hb[2], w->np = (int64_t)hb[3];

  /* R by (leaf, slot); I by (target, code); P by slot */
  uint64_t *sk;
  int64_t *sr_r, *sr_i, *sr_p;
  RDX_CHECK(sort_rows(ctx, mm, rkey, rows_r, m, lbits + sbits, &sk, &sr_r, fn));
  if (composite) {
    RDX_CHECK(sort_rows(ctx, mm, ikey, rows_i, m, kd ? tbits : tbits + kbits, &sk, &sr_i, fn));
  } else {
    int64_t *by_key;
    RDX_CHECK(sort_rows(ctx, mm, ikey, rows_i, m, kbits, &sk, &by_key, fn));
    uint64_t *tk;
    RDX_CHECK(mm.get(&tk, (size_t)m, fn));
    tgt_of_rows_kernel<<<grid, 256, 0, s>>>(by_key, tgt_row, m, w->ni, tk);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: targets kernel");
    RDX_CHECK(sort_rows(ctx, mm, tk, by_key, m, tbits, &sk, &sr_i, fn));
  }
  RDX_CHECK(sort_rows(ctx, mm, pk, rows_p, m, sbits, &sk, &sr_p, fn));
  size_t nr = (size_t)w->nr + 1, ni = (size_t)w->ni + 1, np = (size_t)w->np + 1;
  RDX_CHECK(mm.get(&w->r_leaf, nr, fn));
  RDX_CHECK(mm.get(&w->r_slot, nr, fn));
  RDX_CHECK(mm.get(&w->r_id, nr, fn));
  RDX_CHECK(mm.get(&w->i_tgt, ni, fn));
  RDX_CHECK(mm.get(&w->i_key, ni, fn));
  RDX_CHECK(mm.get(&w->i_id, ni, fn));
  RDX_CHECK(mm.get(&w->i_x, ni, fn));
  RDX_CHECK(mm.get(&w->i_y, ni, fn));
  RDX_CHECK(mm.get(&w->p_slot, np, fn));
  RDX_CHECK(mm.get(&w->p_key, np, fn));
  RDX_CHECK(mm.get(&w->p_x, np, fn));
  RDX_CHECK(mm.get(&w->p_y, np, fn));
  if (w->nr) gather_r_kernel<<<blocks_for(w->nr, 256), 256, 0, s>>>(sr_r, w->nr, leaf_row, slot_row, id_row, w->r_leaf, w->r_slot, w->r_id);
  if (w->ni)
    gather_i_kernel<<<blocks_for(w->ni, 256), 256, 0, s>>>(sr_i, w->ni, tgt_row, key_row, id_row, x_row, y_row, w->i_tgt,
                                                           w->i_key, w->i_id, w->i_x, w->i_y);
  if (w->np)
    gather_p_kernel<<<blocks_for(w->np, 256), 256, 0, s>>>(sr_p, w->np, slot_row, key_row, x_row, y_row, w->p_slot, w->p_key,
                                                           w->p_x, w->p_y);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: gather kernels");
  RDX_CHECK(mm.get(&w->mark, (size_t)pts->pool.used + 1, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(w->mark, 0, (size_t)pts->pool.used + 1, s), fn);
  if (w->nr + w->np)
    mark_kernel<<<blocks_for(w->nr + w->np, 256), 256, 0, s>>>(w->r_slot, w->nr, w->p_slot, w->np, w->mark);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: mark kernel");
  f->n_remove = w->nr, f->n_incoming = w->ni, f->n_inplace = w->np;
  RDX_CHECK(runs_to_host(ctx, mm, w->r_leaf, w->nr, &f->r_runs, &f->n_r_runs));
  RDX_CHECK(runs_to_host(ctx, mm, w->i_tgt, w->ni, &f->i_runs, &f->n_i_runs));
  return RDX_OK;
}

/* ---- segment copies (split scratch and pool) ---- */

/* The destination of segment copies: the pool, or the split scratch (doubles, u64 codes). */
struct ddst {
  dpool pool;
  double *sx, *sy;
  uint64_t *sid, *skey;
};

__device__ __forceinline__ const int64_t *find_slot(const int64_t *p_slot, int64_t np, int64_t s) {
  int64_t lo = 0, hi = np;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (p_slot[mid] < s) lo = mid + 1;
    else hi = mid;
  }
  return lo < np && p_slot[lo] == s ? p_slot + lo : nullptr;
}

/* One block per segment. STAYERS: the old leaf's extent minus removed slots, in order (a block
 * scan per tile); in the split gather, slots moved in place take their new coordinates from P.
 * INCOMING: entries of I. SCRATCH: scratch entries through `order`. Every point written to the
 * pool gets its id's slot, and (k-d) its leaf's code. */
__global__ void __launch_bounds__(UB) segment_kernel(const rdx_sp_seg *segs, int64_t n_segs, int to_scratch, int kd,
                                                     const int64_t *old_fpos, const int64_t *old_len, dpool pool,
                                                     const uint8_t *mark, const int64_t *p_slot, const uint64_t *p_key,
                                                     const double *p_x, const double *p_y, int64_t np, const uint64_t *i_key,
                                                     const uint64_t *i_id, const double *i_x, const double *i_y,
                                                     const double *s_x, const double *s_y, const uint64_t *s_id,
                                                     const uint64_t *s_key, const int64_t *order, ddst out,
                                                     uint64_t *slot) {
  typedef cub::BlockScan<int, UB> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  for (int64_t g = blockIdx.x; g < n_segs; g += gridDim.x) {
    rdx_sp_seg sg = segs[g];
    for (int64_t t = threadIdx.x; sg.kind != RDX_SP_SEG_STAYERS && t < sg.n; t += UB) {
      int64_t d = sg.dst + t, e = sg.kind == RDX_SP_SEG_INCOMING ? sg.src + t : order[sg.src + t];
      double x = sg.kind == RDX_SP_SEG_INCOMING ? i_x[e] : s_x[e], y = sg.kind == RDX_SP_SEG_INCOMING ? i_y[e] : s_y[e];
      uint64_t id = sg.kind == RDX_SP_SEG_INCOMING ? i_id[e] : s_id[e];
      uint64_t k = sg.kind == RDX_SP_SEG_INCOMING ? i_key[e] : s_key[e];
      if (to_scratch) {
        out.sx[d] = x, out.sy[d] = y, out.sid[d] = id, out.skey[d] = k;
      } else {
        put_xy(out.pool, d, x, y);
        out.pool.id[d] = id;
        put_key(out.pool, d, kd ? sg.code : k);
        slot[id] = (uint64_t)d;
      }
    }
    if (sg.kind != RDX_SP_SEG_STAYERS) continue; /* uniform over the block */
    int64_t f0 = old_fpos[sg.src], fl = old_len[sg.src], base = 0;
    for (int64_t t0 = 0; t0 < fl; t0 += UB) {
      int64_t s = f0 + t0 + threadIdx.x;
      int live = t0 + threadIdx.x < fl && mark[s] != 1;
      int pre, total;
      scan_t(tmp).ExclusiveSum(live, pre, total);
      if (live) {
        int64_t d = sg.dst + base + pre;
        if (to_scratch) {
          const int64_t *pp = mark[s] == 2 ? find_slot(p_slot, np, s) : nullptr;
          int64_t a = pp ? pp - p_slot : 0;
          out.sx[d] = pp ? p_x[a] : px(pool, s);
          out.sy[d] = pp ? p_y[a] : py(pool, s);
          out.skey[d] = pp ? p_key[a] : pkey(pool, s);
          out.sid[d] = pool.id[s];
        } else {
          move_slot(out.pool, s, d, slot);
          if (kd) put_key(out.pool, d, sg.code);
        }
      }
      base += total;
      __syncthreads();
    }
  }
}

__global__ void permute_kernel(const int64_t *idx, int64_t n, const double *x, const double *y, const uint64_t *id,
                               const uint64_t *key, double *x2, double *y2, uint64_t *id2, uint64_t *key2) {
  SP_FOR(j, n) {
    int64_t i = idx[j];
    x2[j] = x[i], y2[j] = y[i], id2[j] = id[i], key2[j] = key[i];
  }
}
__global__ void iota64_kernel(int64_t *p, int64_t n) {
  SP_FOR(i, n) p[i] = i;
}

rdx_status cu_split_gather(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                           int64_t n_points, const int64_t *group_start, int64_t n_groups, uint64_t *keys_h, double *x_h,
                           double *y_h, uint64_t *id_h) {
  const char *fn = "rdx_points update: split gather";
  scratch &mm = *w->mm;
  cudaStream_t s = rdx_stream(ctx);
  std::vector<rdx_sp_seg> mine;
  for (int64_t i = 0; i < n_segs; i++)
    if (segs[i].to_scratch) mine.push_back(segs[i]);
  size_t np1 = (size_t)n_points + 1;
  RDX_CHECK(mm.get(&w->s_x, np1, fn));
  RDX_CHECK(mm.get(&w->s_y, np1, fn));
  RDX_CHECK(mm.get(&w->s_id, np1, fn));
  RDX_CHECK(mm.get(&w->s_key, np1, fn));
  w->ns = n_points;
  rdx_sp_seg *d_segs;
  RDX_CHECK(mm.get(&d_segs, mine.size() + 1, fn));
  RDX_CHECK(to_device(ctx, d_segs, mine.data(), mine.size(), fn));
  ddst out;
  memset(&out, 0, sizeof out);
  out.sx = w->s_x, out.sy = w->s_y, out.sid = w->s_id, out.skey = w->s_key;
  if (!mine.empty()) {
    unsigned grid = mine.size() < 65536 ? (unsigned)mine.size() : 65536u;
    segment_kernel<<<grid, UB, 0, s>>>(d_segs, (int64_t)mine.size(), 1, pts->kind == RDX_POINTS_KDTREE, pts->nodes.fpos,
                                       pts->nodes.len, pool_of(pts, &pts->pool), w->mark, w->p_slot, w->p_key, w->p_x, w->p_y,
                                       w->np, w->i_key, w->i_id, w->i_x, w->i_y, nullptr, nullptr, nullptr, nullptr, nullptr,
                                       out, pts->slot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: split gather kernel");
  }
  if (pts->kind == RDX_POINTS_KDTREE) {
    RDX_CHECK(to_host(ctx, x_h, w->s_x, (size_t)n_points, fn));
    RDX_CHECK(to_host(ctx, y_h, w->s_y, (size_t)n_points, fn));
    RDX_CHECK(to_host(ctx, id_h, w->s_id, (size_t)n_points, fn));
    return RDX_OK;
  }
  /* quadtree groups: a stable segmented sort by code, then the scratch in that order */
  int64_t *gs, *idx, *idx2;
  uint64_t *k2;
  RDX_CHECK(mm.get(&gs, (size_t)n_groups + 1, fn));
  RDX_CHECK(mm.get(&idx, np1, fn));
  RDX_CHECK(mm.get(&idx2, np1, fn));
  RDX_CHECK(mm.get(&k2, np1, fn));
  RDX_CHECK(to_device(ctx, gs, group_start, (size_t)n_groups + 1, fn));
  iota64_kernel<<<blocks_for(n_points, 256), 256, 0, s>>>(idx, n_points);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: iota kernel");
  RDX_CHECK(mm.cub(fn, [&](void *t, size_t &b) {
    return cub::DeviceSegmentedSort::StableSortPairs(t, b, w->s_key, k2, idx, idx2, n_points, n_groups, gs, gs + 1, s);
  }));
  double *x2, *y2;
  uint64_t *id2, *key2;
  RDX_CHECK(mm.get(&x2, np1, fn));
  RDX_CHECK(mm.get(&y2, np1, fn));
  RDX_CHECK(mm.get(&id2, np1, fn));
  RDX_CHECK(mm.get(&key2, np1, fn));
  permute_kernel<<<blocks_for(n_points, 256), 256, 0, s>>>(idx2, n_points, w->s_x, w->s_y, w->s_id, w->s_key, x2, y2, id2, key2);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: permute kernel");
  w->s_x = x2, w->s_y = y2, w->s_id = id2, w->s_key = key2;
  RDX_CHECK(to_host(ctx, keys_h, w->s_key, (size_t)n_points, fn));
  return RDX_OK;
}

/* ---- reserve and commit ---- */

rdx_status cu_reserve(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, int64_t new_cap, int64_t slot_cap, int64_t n_nodes,
                      int64_t n_segs, int64_t n_keeps, int64_t n_order) {
  const char *fn = "rdx_points update: reserve";
  scratch &mm = *w->mm;
  if (new_cap > pts->pool.cap)
    RDX_CHECK(rdx_sp_pool_alloc(ctx, new_cap, pts->f64, pts->kind == RDX_POINTS_KDTREE ? 8 : pts->pool.key_bytes,
                                  &w->newpool));
  if (slot_cap > pts->slot_cap) {
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&w->newslot, (size_t)slot_cap * 8, RDX_DEVICE));
    w->newslot_cap = slot_cap;
  }
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_nodes, RDX_DEVICE, &w->dnodes));
  RDX_CHECK(mm.get(&w->d_segs, (size_t)n_segs + 1, fn));
  RDX_CHECK(mm.get(&w->d_keeps, (size_t)n_keeps + 1, fn));
  RDX_CHECK(mm.get(&w->d_order, (size_t)n_order + 1, fn));
  return RDX_OK;
}

__global__ void erase_kernel(const uint64_t *r_id, int64_t nr, uint64_t *slot) {
  SP_FOR(j, nr) slot[r_id[j]] = RDX_SP_NONE;
}
__global__ void inplace_kernel(const int64_t *p_slot, const uint64_t *p_key, const double *p_x, const double *p_y, int64_t np,
                               dpool pool, int kd) {
  SP_FOR(j, np) {
    put_xy(pool, p_slot[j], p_x[j], p_y[j]);
    if (!kd) put_key(pool, p_slot[j], p_key[j]);
  }
}
__global__ void fill_none_kernel(uint64_t *p, int64_t from, int64_t to) {
  SP_FOR(j, to - from) p[from + j] = RDX_SP_NONE;
}

/* One thread per leaf repaired in place (update_cpu.c, cpu_commit, has the same steps): holes
 * below the new length are filled by the live points of the tail, then by incoming points;
 * with more incoming than holes, the rest is appended. */
__global__ void repair_kernel(const rdx_sp_keep *keeps, int64_t n_keeps, const int64_t *r_slot, const uint8_t *mark,
                              const uint64_t *i_key, const uint64_t *i_id, const double *i_x, const double *i_y, dpool pool,
                              int kd, uint64_t *slot) {
  SP_FOR(k, n_keeps) {
    rdx_sp_keep kp = keeps[k];
    const int64_t *R = r_slot + kp.r_start;
    int64_t r = kp.r_n, i = kp.i_n, c = kp.old_len, end = kp.start + c - r + i;
#define PUT_INCOMING(j, d)                                         \
  do {                                                             \
    int64_t e_ = kp.i_start + (j), d_ = (d);                       \
    put_xy(pool, d_, i_x[e_], i_y[e_]);                            \
    pool.id[d_] = i_id[e_];                                        \
    put_key(pool, d_, kd ? kp.code : i_key[e_]);                   \
    slot[i_id[e_]] = (uint64_t)d_;                                 \
  } while (0)
    if (i >= r) {
      for (int64_t j = 0; j < r; j++) PUT_INCOMING(j, R[j]);
      for (int64_t j = r; j < i; j++) PUT_INCOMING(j, kp.start + c + (j - r));
      continue;
    }
    int64_t h = 0, j = 0;
    for (int64_t s = end; s < kp.start + c; s++) {
      if (mark[s] == 1) continue;
      while (R[h] >= end) h++;
      move_slot(pool, s, R[h], slot);
      h++;
    }
    for (; h < r && j < i; h++) {
      if (R[h] >= end) continue;
      PUT_INCOMING(j, R[h]);
      j++;
    }
#undef PUT_INCOMING
  }
}

rdx_status cu_commit(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                     const rdx_sp_keep *keeps, int64_t n_keeps, const int64_t *order, int64_t n_order,
                     const rdx_sp_nodes *new_nodes) {
  const char *fn = "rdx_points update: commit";
  cudaStream_t s = rdx_stream(ctx);
  int kd = pts->kind == RDX_POINTS_KDTREE;
  /* uploads first: nothing below can fail for lack of memory */
  RDX_CHECK(to_device(ctx, w->d_segs, segs, (size_t)n_segs, fn));
  RDX_CHECK(to_device(ctx, w->d_keeps, keeps, (size_t)n_keeps, fn));
  RDX_CHECK(to_device(ctx, w->d_order, order, (size_t)n_order, fn));
  RDX_CHECK(rdx_sp_nodes_copy(ctx, &w->dnodes, new_nodes));
  if (w->newpool.block) {
    rdx_sp_pool *np = &w->newpool;
    RDX_CHECK(pool_copy_used(ctx, np, &pts->pool, pts->f64, fn));
    RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
    rdx_sp_pool_free(ctx, &pts->pool);
    pts->pool = *np;
    memset(np, 0, sizeof *np);
  }
  if (w->newslot) {
    RDX_CUDA(ctx, cudaMemcpyAsync(w->newslot, pts->slot, (size_t)pts->slot_cap * 8, cudaMemcpyDeviceToDevice, s), fn);
    fill_none_kernel<<<blocks_for(w->newslot_cap - pts->slot_cap, 256), 256, 0, s>>>(w->newslot, pts->slot_cap, w->newslot_cap);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: slot map kernel");
    RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
    rdx_mem_free(ctx, pts->slot);
    pts->slot = w->newslot;
    pts->slot_cap = w->newslot_cap;
    w->newslot = nullptr;
  }
  dpool pool = pool_of(pts, &pts->pool);
  if (w->op == RDX_SP_ERASE && w->nr) erase_kernel<<<blocks_for(w->nr, 256), 256, 0, s>>>(w->r_id, w->nr, pts->slot);
  if (w->np) inplace_kernel<<<blocks_for(w->np, 256), 256, 0, s>>>(w->p_slot, w->p_key, w->p_x, w->p_y, w->np, pool, kd);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: erase and in-place kernels");
  if (n_segs) {
    ddst out;
    memset(&out, 0, sizeof out);
    out.pool = pool;
    unsigned grid = n_segs < 65536 ? (unsigned)n_segs : 65536u;
    segment_kernel<<<grid, UB, 0, s>>>(w->d_segs, n_segs, 0, kd, pts->nodes.fpos, pts->nodes.len, pool, w->mark, w->p_slot,
                                       w->p_key, w->p_x, w->p_y, w->np, w->i_key, w->i_id, w->i_x, w->i_y, w->s_x, w->s_y,
                                       w->s_id, w->s_key, w->d_order, out, pts->slot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: segment kernel");
  }
  if (n_keeps) {
    repair_kernel<<<blocks_for(n_keeps, 128), 128, 0, s>>>(w->d_keeps, n_keeps, w->r_slot, w->mark, w->i_key, w->i_id, w->i_x,
                                                           w->i_y, pool, kd, pts->slot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: repair kernel");
  }
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->nodes = w->dnodes;
  memset(&w->dnodes, 0, sizeof w->dnodes);
  w->mm->settle(); /* the lists are spent: keep their size as the arena for the next batch */
  return RDX_OK;
}

}  // namespace

extern "C" {
const rdx_sp_backend rdx_sp_cuda_backend = {cu_relayout, cu_find, cu_split_gather, cu_reserve, cu_commit, cu_release};
}
