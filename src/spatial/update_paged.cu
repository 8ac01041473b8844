/*
 * update_paged.cu: bulk moves, inserts and erases of a paged quadtree on the GPU: G-PICS Section 5
 * with paging, planned on the device. Each leaf owns a page of pool slots [fpos, fpos + room)
 * whose first len hold its points, and an id map (pts->slot) finds a point's slot; the pool keeps
 * no codes (kernels derive them from the coordinates, pcodes). Work grows with the batch, not with
 * the pool, so batches of up to a tenth of the points page and larger ones rebuild (update.c).
 *  0. At the first update, and when the pool's free end runs short of the batch, the pages are
 *     spread out again (rdx_sp_qt_relayout_cuda).
 *  1. pg_rows_kernel, a thread per row: ids checked against the map, each vacated slot marked in
 *     a dead bitmap (a bit set twice: an id named twice), new points checked and coded. The
 *     batch's codes are sorted (CUB) while, on a second stream, a leaf's removals are counted from
 *     the dead bits of its page and added up the tree.
 *  2. Per old node its incoming (a run of the sorted codes) and new count; pg_decide_kernel
 *     applies the leaf rule: a leaf that stays one keeps its page if its points fit its room; one
 *     that outgrew it, and an internal node that falls to a leaf (a merge), get a new page; a leaf
 *     that splits, and points in quadrants without a node, become groups. The host reads the
 *     totals (bad input ends the update here, nothing changed) and takes all the memory the rest
 *     needs.
 *  3. Each split leaf's survivors are sorted in one block (pg_sort_split_kernel) and the groups'
 *     subtrees built over them and the batch (split_tree_kernel); new leaves take new pages, reused
 *     ones first (update.cuh, pgfree). Beside this, on the second stream, pg_plan_kernel (a warp a
 *     node) plans where the points of kept, moved and merged leaves go: a kept leaf repairs its
 *     page in place (update_hd.h's hole repair).
 *  4. The subtrees' plan, and pg_move_kernel, which moves every point that moves, a thread each,
 *     and updates the id map, on the second stream beside the BFS order of the new nodes.
 * The nodes equal a fresh build's with the same box.
 */
#include "spatial/update_qt.cuh"

namespace {

using namespace rdx_sp;

/* A paged pool's Morton codes: from the coordinates, as the build computes them. */
template <typename T, typename K>
struct pcodes {
  const T *x, *y;
  rdx_sp_grid g;
  __device__ K operator[](int64_t s) const { return (K)rdx_sp_point_key(&g, (double)x[s], (double)y[s]); }
};

/* 1. One thread per batch row: the ids checked against the id map, the slots they vacate (a
 * dead bit each), and the incoming (code, row) sort entries. A live id has a slot of its own, so
 * a slot's bit set twice is an id named twice (bad bit 1), with no bits by id to clear. Bad rows
 * get entries too (the batch is then dropped before anything of the index changes). */
template <typename K>
__global__ void pg_rows_kernel(int op, const void *ids, int ids64, const void *xy, int f64, int64_t m, uint64_t id_end,
                               const uint64_t *slot, int check_xy, rdx_sp_grid g, K *ikey, uint32_t *irow, uint32_t *dead,
                               qtot *tot) {
  SP_FOR(i, m) {
    if (op != RDX_SP_INSERT) {
      uint64_t id = id_at(ids, ids64, i);
      uint64_t sl = id < id_end ? slot[id] : RDX_SP_NONE;
      const uint32_t bit = 1u << (sl & 31); /* scratch: the index changes only after the wait */
      if (sl == RDX_SP_NONE || (atomicOr(&dead[sl >> 5], bit) & bit)) atomicOr(&tot->bad, 1ull);
    }
    if (op == RDX_SP_ERASE) continue;
    double x, y;
    ikey[i] = 0, irow[i] = (uint32_t)i;
    if (row_point(xy, f64, i, check_xy, g, &x, &y)) ikey[i] = (K)rdx_sp_point_key(&g, x, y);
    else atomicOr(&tot->bad, 4ull);
  }
}

/* For each slot of [lo, hi) whose dead bit is `want`, in slot order, f(rank, slot); returns how
 * many. One warp, every lane with the same arguments; 32 bitmap words (1024 slots) a step. */
template <class F>
__device__ int64_t warp_slots(const uint32_t *dead, int64_t lo, int64_t hi, bool want, F f) {
  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  int64_t k = 0;
  if (hi <= lo) return 0;
  const int64_t w0 = lo >> 5, w1 = (hi - 1) >> 5;
  for (int64_t wb = w0; wb <= w1; wb += 32) {
    const int64_t w = wb + lane;
    uint32_t bits = 0;
    if (w <= w1) {
      bits = want ? dead[w] : ~dead[w];
      if (w == w0) bits &= ~0u << (lo & 31);
      if (w == w1 && (hi & 31) != 0) bits &= (1u << (hi & 31)) - 1;
    }
    const int c = __popc(bits);
    int pre = c;
    for (int d = 1; d < 32; d <<= 1) {
      int t = __shfl_up_sync(FULL, pre, d);
      if (lane >= d) pre += t;
    }
    int64_t kk = k + pre - c;
    while (bits) {
      const int bit = __ffs(bits) - 1;
      bits &= bits - 1;
      f(kk++, w * 32 + bit);
    }
    k += __shfl_sync(FULL, pre, 31);
  }
  return k;
}

/* The live slots of [f, f + len) in slot order, f(rank, slot), one slot a lane (for pages that
 * are mostly live: their codes and columns load coalesced); returns how many. One warp, every
 * lane with the same arguments. */
template <class F>
__device__ int64_t warp_live_slots(const uint32_t *dead, int64_t f, int64_t len, F fn) {
  const int lane = threadIdx.x & 31;
  int64_t w = 0;
  for (int64_t j0 = 0; j0 < len; j0 += 32) {
    const int64_t sl = f + j0 + lane;
    const bool live = j0 + lane < len && !bit_get(dead, (uint64_t)sl);
    const unsigned mk = __ballot_sync(0xffffffffu, live);
    if (live) fn(w + __popc(mk & ((1u << lane) - 1)), sl);
    w += __popc(mk);
  }
  return w;
}

/* 2a. One warp per old node: a leaf's removals (the dead bits of its page) in rl, 0 for internal
 * nodes; its children's parent and the quadrants that have a child; rs (removals below an
 * internal node, which pg_up_kernel adds up) zeroed. */
__global__ void pg_links_kernel(rdx_sp_nodes N, const uint32_t *dead, int64_t *rl, int64_t *rs, int64_t *parent,
                                uint8_t *have) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t u = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; u < N.n; u += warps) {
    const int64_t c = N.leaf[u] ? warp_slots(dead, N.fpos[u], N.fpos[u] + N.len[u], true, [](int64_t, int64_t) {}) : 0;
    if (lane == 0) {
      node_links(N, u, parent, have);
      rl[u] = c, rs[u] = 0;
    }
  }
}

/* 2b. One thread per old node: a leaf's removals count for every ancestor (one atomic per
 * ancestor and warp: BFS neighbours share most of theirs). */
__global__ void pg_up_kernel(rdx_sp_nodes N, const int64_t *rl, const int64_t *parent, int64_t *rs) {
  SP_FOR(u, N.n) {
    const int64_t v = rl[u];
    if (v == 0) continue;
    for (int64_t a = parent[u]; a >= 0; a = parent[a]) {
      cg::coalesced_group g = cg::coalesced_threads();
      cg::coalesced_group same = cg::labeled_partition(g, (unsigned long long)a);
      const unsigned long long sum = cg::reduce(same, (unsigned long long)v, cg::plus<unsigned long long>());
      if (same.thread_rank() == 0) atomicAdd((unsigned long long *)&rs[a], sum);
    }
  }
}

/* An old node's removals, incoming and new count, from pg_links_kernel, pg_up_kernel and
 * pg_incoming_kernel (lf: the rule's verdict on the new count). */
struct pgcount {
  const int64_t *rl, *rs, *A, *ci;
  const uint8_t *lf;
  __device__ int64_t removed(const rdx_sp_nodes &N, int64_t u) const { return N.leaf[u] ? rl[u] : rs[u]; }
  __device__ int64_t after(const rdx_sp_nodes &N, int64_t u) const { return N.count[u] - removed(N, u) + ci[u]; }
};

/* 2c. One thread per old node: the batch entries in its cell, ik[A[u]] .. ik[A[u] + ci[u] - 1],
 * and whether the build's rule makes it a leaf with its new count (lf[u], which the decisions
 * read for every ancestor). Q gives the removals; its A, ci and lf are the ones written here. */
template <typename K>
__global__ void pg_incoming_kernel(rdx_sp_nodes N, const K *ik, int64_t ni, int D, int64_t cap, pgcount Q, int64_t *A,
                                   int64_t *ci, uint8_t *lf) {
  SP_FOR(u, N.n) {
    const int sh = 2 * (D - (int)N.level[u]);
    const int64_t a = lower(ik, 0, ni, N.key[u] << sh), c = lower(ik, a, ni, (N.key[u] + 1) << sh) - a;
    A[u] = a, ci[u] = c;
    lf[u] = (uint8_t)rdx_sp_leaf(N.count[u] - Q.removed(N, u) + c, N.level[u], D, cap);
  }
}

/* Per old node, what happens to its points (the paged plan). A split leaf's survivors go to
 * the gather list at soff, sorted by code (its subtree is built over them); those of a relocated leaf or
 * of a leaf inside a merge move to the new page mpage[mto] of the new leaf, from position
 * mpos, through entries moff.. of the move list (mfill: the merge's running fill). */
struct pgold {
  int64_t *soff, *mto, *mpos, *moff, *mpage;
  unsigned long long *mfill;
  int64_t *split; /* the split leaves, in tot->splits entries */
  int64_t *pend;  /* the pages old leaves give up, (fpos, room) pairs, tot->freed of them */
  __device__ void give_up(const rdx_sp_nodes &N, int64_t u, qtot *tot) const {
    const int64_t i = (int64_t)agg_add(&tot->freed, 1ull);
    pend[2 * i] = N.fpos[u], pend[2 * i + 1] = N.room[u];
  }
};

/* 2d. One thread per old node, by the leaf rule (update_qt.cu's decide_kernel): a leaf that
 * stays one keeps its page when its points fit in its room (PG_KEPT); a leaf that outgrew its
 * room and a merge (an internal node that becomes a leaf) get a new page (PG_MOVED); a leaf that
 * splits and points in quadrants that had no node become groups, whose subtrees
 * split_tree_kernel builds. */
template <typename K>
__global__ void pg_decide_kernel(rdx_sp_nodes N, const K *ik, const int64_t *parent, const uint8_t *have, pgcount Q, int D,
                                 int64_t cap, int64_t page_base, pgfree F, qnode *tn, int64_t *kidx, qgroup *groups,
                                 pgold O, qtot *tot) {
  SP_FOR(u, N.n) {
    O.soff[u] = -1, O.mto[u] = -1, kidx[u] = -1;
    const int64_t c = Q.after(N, u), r = Q.removed(N, u), surv = N.leaf[u] ? N.count[u] - r : 0;
    const int64_t top = leaf_above(parent, u, [&](int64_t a) { return Q.lf[a] != 0; });
    if (top >= 0) {
      if (N.leaf[u]) O.give_up(N, u, tot);
      if (surv > 0) {
        O.mto[u] = top, O.mpos[u] = (int64_t)atomicAdd(&O.mfill[top], (unsigned long long)surv);
        O.moff[u] = (int64_t)agg_add(&tot->holes, (unsigned long long)surv);
      }
      continue;
    }
    if (c == 0 && u != 0) {
      if (N.leaf[u]) O.give_up(N, u, tot);
      continue;
    }
    const int l = N.level[u];
    const uint64_t key = N.key[u];
    if (rdx_sp_leaf(c, l, D, cap)) {
      if (N.leaf[u] && c <= N.room[u]) {
        qnode n = make_node(key, l, 1, c, N.fpos[u]);
        n.room = N.room[u], n.kind = PG_KEPT, n.a0 = N.len[u], n.an = r, n.b0 = Q.A[u];
        n.h0 = r > 0 ? (int64_t)agg_add(&tot->holes, (unsigned long long)r) : 0;
        push_node(tn, tot, n, kidx, u);
        continue;
      }
      const int64_t want = F.room_for(c);
      int64_t room = want;
      const int64_t page = F.take(&room, page_base, &tot->pgused, &tot->reused);
      qnode n = make_node(key, l, 1, c, page);
      n.room = room, n.kind = PG_MOVED, n.a0 = N.count[u] - r, n.b0 = Q.A[u]; /* survivors, then incoming */
      push_node(tn, tot, n, kidx, u);
      O.mpage[u] = page;
      agg_add(&tot->pages, (unsigned long long)want);
      if (N.leaf[u]) O.give_up(N, u, tot);
      agg_add(N.leaf[u] ? &tot->relocs : &tot->merges, 1ull);
      if (surv > 0) O.mto[u] = u, O.mpos[u] = 0, O.moff[u] = (int64_t)agg_add(&tot->holes, (unsigned long long)surv);
    } else if (N.leaf[u]) {
      const int64_t o = (int64_t)agg_add(&tot->surv, (unsigned long long)surv);
      O.soff[u] = o;
      push_group(groups, tot, key, l, c, D, cap, o, surv);
      O.split[agg_add(&tot->splits, 1ull)] = u;
      O.give_up(N, u, tot);
    } else {
      push_node(tn, tot, make_node(key, l, 0, c, 0), kidx, u);
      push_new_quadrants(N, u, have, ik, Q.A[u], Q.A[u] + Q.ci[u], D, cap, groups, tot, 0); /* its incoming */
    }
  }
}

/* Erased ids leave the id map. */
__global__ void pg_erase_kernel(const void *ids, int ids64, int64_t m, uint64_t *slot) {
  SP_FOR(i, m) slot[id_at(ids, ids64, i)] = RDX_SP_NONE;
}

/* One warp per old leaf whose points move: its surviving slots as (code, slot) entries at soff. */
template <typename T, typename K>
__global__ void pg_gather_kernel(rdx_sp_nodes N, const int64_t *soff, const int64_t *rl, const uint32_t *dead,
                                 pcodes<T, K> pkey, K *sk, uint32_t *ss, qtot *tot) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t u = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; u < N.n; u += warps) {
    const int64_t o = soff[u];
    if (o < 0) continue;
    const int64_t w = warp_live_slots(dead, N.fpos[u], N.len[u], [&](int64_t r, int64_t sl) {
      sk[o + r] = pkey[sl], ss[o + r] = (uint32_t)sl;
    });
    if (lane == 0 && w != N.count[u] - rl[u]) atomicOr(&tot->bad, 2ull);
  }
}

/* One block per split leaf (list[0..n)): its surviving slots as (code, slot) entries at soff,
 * sorted by code in shared memory. A leaf above the maximum depth holds at most the capacity,
 * so TB * IPT >= capacity covers every one (else pg_gather_kernel and a device sort serve). */
template <typename T, typename K, int TB, int IPT>
__global__ void __launch_bounds__(TB) pg_sort_split_kernel(rdx_sp_nodes N, const int64_t *list, int64_t n, const int64_t *soff,
                                                           const int64_t *rl, const uint32_t *dead, pcodes<T, K> pkey, int D,
                                                           K *sk, uint32_t *ss, qtot *tot) {
  typedef cub::BlockRadixSort<K, TB, IPT, uint32_t> sort_t;
  typedef cub::BlockScan<int, TB> scan_t;
  __shared__ union {
    typename sort_t::TempStorage sort;
    typename scan_t::TempStorage scan;
    struct {
      K k[TB * IPT];
      uint32_t v[TB * IPT];
    } stage;
  } sm;
  for (int64_t g = blockIdx.x; g < n; g += gridDim.x) {
    const int64_t u = list[g], f = N.fpos[u], len = N.len[u], o = soff[u];
    K k[IPT];
    uint32_t v[IPT];
    int live = 0;
    for (int i = 0; i < IPT; i++) {
      const int64_t j = (int64_t)threadIdx.x * IPT + i;
      const bool in = j < len && !bit_get(dead, (uint64_t)(f + j));
      k[i] = in ? pkey[f + j] : K(0);
      v[i] = in ? (uint32_t)(f + j) : ~0u;
      live += in;
    }
    int pre, total;
    scan_t(sm.scan).ExclusiveSum(live, pre, total);
    __syncthreads(); /* the stage reuses the scan's storage */
    for (int i = 0; i < IPT; i++)
      if (v[i] != ~0u) sm.stage.k[pre] = k[i], sm.stage.v[pre++] = v[i];
    __syncthreads();
    for (int i = 0; i < IPT; i++) { /* the survivors first; past them keys that sort last */
      const int j = threadIdx.x * IPT + i;
      k[i] = j < total ? sm.stage.k[j] : (K)~(K)0, v[i] = j < total ? sm.stage.v[j] : ~0u;
    }
    __syncthreads(); /* the sort reuses the stage (stable: the survivors stay ahead of the fill) */
    sort_t(sm.sort).Sort(k, v, 0, 2 * D);
    for (int i = 0; i < IPT; i++) {
      const int j = threadIdx.x * IPT + i;
      if (j < total) sk[o + j] = k[i], ss[o + j] = v[i];
    }
    if (threadIdx.x == 0 && total != N.count[u] - rl[u]) atomicOr(&tot->bad, 2ull);
    __syncthreads();
  }
}

/* Where the points go, planned by pg_plan_kernel and carried out by pg_move_kernel: survivor j
 * to dsurv[j], sorted batch entry j to dinc[j] (in that order fresh pages fill in runs), and the
 * tail moves of kept leaves and the survivors of moved leaves, entry x from slot msrc[x] (or
 * none: ~0u) to mdst[x]. */
struct pgdst {
  uint32_t *dsurv, *dinc, *msrc, *mdst;
};

/* The new node q's plan (one warp). A fresh leaf sends its survivors and incoming to its page; a
 * moved leaf its incoming after the survivors pg_plan_old sends; a kept leaf with removals or
 * incoming is repaired in place by update_hd.h's hole repair. */
__device__ void pg_plan_new(const qnode &q, const uint32_t *dead, const pgdst &P, qtot *tot) {
  const int lane = threadIdx.x & 31;
  if (q.level < 0 || !q.leaf) return;
  if (q.kind == PG_FRESH) {
    for (int64_t j = lane; j < q.an; j += 32) P.dsurv[q.a0 + j] = (uint32_t)(q.fpos + j);
    for (int64_t j = lane; j < q.count - q.an; j += 32) P.dinc[q.b0 + j] = (uint32_t)(q.fpos + q.an + j);
    return;
  }
  if (q.kind == PG_MOVED) {
    for (int64_t j = lane; j < q.count - q.a0; j += 32) P.dinc[q.b0 + j] = (uint32_t)(q.fpos + q.a0 + j);
    return;
  }
  const int64_t len0 = q.a0, r = q.an, c = q.count, inc = c - (len0 - r);
  if (r == 0 && inc == 0) return;
  const int64_t f = q.fpos, head = rdx_sp_repair_head(len0, c);
  const int64_t k = warp_slots(dead, f, f + head, true, [&](int64_t kk, int64_t sl) { /* holes below head */
    if (kk < inc) P.dinc[q.b0 + kk] = (uint32_t)sl;
    else P.mdst[q.h0 + kk - inc] = (uint32_t)sl;
  });
  for (int64_t t = k + lane; t < inc; t += 32) P.dinc[q.b0 + t] = (uint32_t)(f + len0 + (t - k)); /* appended */
  if (c >= len0) {
    if (lane == 0 && k != r) atomicOr(&tot->bad, 2ull);
    return;
  }
  const int64_t w = warp_slots(dead, f + c, f + len0, false, [&](int64_t ww, int64_t sl) { /* live tail points */
    if (ww < k - inc) P.msrc[q.h0 + ww] = (uint32_t)sl;
    else atomicOr(&tot->bad, 2ull);
  });
  if (lane == 0 && w != k - inc) atomicOr(&tot->bad, 2ull);
}

/* Old leaf u's plan (one warp) when its survivors move to a new page (relocated, or inside a
 * merge): each live slot becomes an entry of the move list. */
__device__ void pg_plan_old(const rdx_sp_nodes &N, int64_t u, const int64_t *rl, const pgold &O, const uint32_t *dead,
                            const pgdst &P, qtot *tot) {
  const int lane = threadIdx.x & 31;
  const int64_t to = O.mto[u];
  if (to < 0) return;
  const int64_t d0 = O.mpage[to] + O.mpos[u], x0 = O.moff[u];
  const int64_t w = warp_live_slots(dead, N.fpos[u], N.len[u], [&](int64_t x, int64_t sl) {
    P.msrc[x0 + x] = (uint32_t)sl, P.mdst[x0 + x] = (uint32_t)(d0 + x);
  });
  if (lane == 0 && w != N.count[u] - rl[u]) atomicOr(&tot->bad, 2ull);
}

/* One warp per new node of [e0, e1) (its plan), then, with old, one per old node. */
__global__ void pg_plan_kernel(qlist L, int64_t e0, int64_t e1, int old, rdx_sp_nodes N, const int64_t *rl, pgold O,
                               const uint32_t *dead, pgdst P, qtot *tot) {
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32, n = e1 - e0, all = n + (old ? N.n : 0);
  for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < all; i += warps) {
    if (i < n) {
      pg_plan_new(L.q(e0 + i), dead, P, tot);
    } else {
      pg_plan_old(N, i - n, rl, O, dead, P, tot);
    }
  }
}
/* pg_plan_kernel over the new nodes [e0, e1), and the old nodes with old. */
static void pg_plan(cudaStream_t s, qlist L, int64_t e0, int64_t e1, int old, const rdx_sp_nodes &N, const int64_t *rl,
                    const pgold &O, const uint32_t *dead, const pgdst &P, qtot *tot) {
  const int64_t warps = e1 - e0 + (old ? N.n : 0);
  pg_plan_kernel<<<blocks_for(warps * 32, 256), 256, 0, s>>>(L, e0, e1, old, N, rl, O, dead, P, tot);
}

/* The pool (no codes) and the batch as pg_move_kernel reads and writes them. */
template <typename T>
struct pgio {
  T *x, *y;
  uint64_t *id;
  uint64_t *slot;
  const T *bxy;       /* the batch's points */
  const void *ids;    /* NULL for inserts: ids first_id + row */
  int ids64;
  uint64_t first_id;
  const uint32_t *irow; /* the sorted batch's rows */
  const uint32_t *ss; /* sorted survivors' slots */
  __device__ void from_slot(int64_t d, int64_t sl) const {
    uint64_t v = id[sl];
    x[d] = x[sl], y[d] = y[sl], id[d] = v;
    slot[v] = (uint64_t)d;
  }
  __device__ void from_batch(int64_t d, int64_t j) const {
    const uint32_t r = irow[j];
    const uint64_t v = ids ? id_at(ids, ids64, r) : first_id + r;
    x[d] = bxy[2 * (int64_t)r], y[d] = bxy[2 * (int64_t)r + 1], id[d] = v;
    slot[v] = (uint64_t)d;
  }
};

/* One thread per point that moves: survivors, batch entries, entries of the move list. Every
 * destination is a hole, an appended slot or a new page, written once; no source is a
 * destination. */
template <typename T>
__global__ void pg_move_kernel(pgio<T> P, pgdst D, int64_t n_surv, int64_t m_new, int64_t n_moves) {
  SP_FOR(i, n_surv + m_new + n_moves) {
    if (i < n_surv) {
      P.from_slot(D.dsurv[i], P.ss[i]);
    } else if (i < n_surv + m_new) {
      P.from_batch(D.dinc[i - n_surv], i - n_surv);
    } else {
      const int64_t x = i - n_surv - m_new;
      if (D.msrc[x] != ~0u) P.from_slot(D.mdst[x], D.msrc[x]);
    }
  }
}

/* After the moves, one block: the counts that takes left below zero back to zero, then the pages
 * the batch's old leaves gave up into the classes they cover (pgfree). */
__global__ void pg_free_kernel(pgfree F, const int64_t *pend, const qtot *tot) {
  for (int k = threadIdx.x; k < F.K; k += blockDim.x)
    if (F.cnt[k] < 0) F.cnt[k] = 0;
  __syncthreads();
  const int64_t n = F.K > 0 ? (int64_t)tot->freed : 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t f = pend[2 * i], r = pend[2 * i + 1];
    int k = (int)(r / PAGE_UNIT) - 1;
    if (k < 0) continue; /* too small to reuse */
    if (k >= F.K) k = F.K - 1;
    const int j = atomicAdd(&F.cnt[k], 1);
    if (F.off[k] + j < F.off[k + 1]) F.page[F.off[k] + j] = (uint32_t)f;
    else atomicSub(&F.cnt[k], 1); /* full (the pool grew since the reset): the page stays unused */
  }
}

/* A copy of the pool with room for cap slots (the used part copied, the rest zeroed). */
rdx_status pg_grow_pool(rdx_context *ctx, rdx_points *pts, int64_t cap) {
  const char *fn = "rdx_points update: pool growth";
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, cap, pts->f64, 0, &np));
  rdx_status st = pool_copy_used(ctx, &np, &pts->pool, pts->f64, fn);
  if (st == RDX_OK) st = rdx_cuda_ok(ctx, cudaStreamSynchronize(rdx_stream(ctx)), fn);
  if (st != RDX_OK) {
    rdx_sp_pool_free(ctx, &np);
    return st;
  }
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  return RDX_OK;
}

/* An id map with room for ids below cap (the old entries kept, the rest none). */
rdx_status pg_grow_slots(rdx_context *ctx, rdx_points *pts, int64_t cap) {
  const char *fn = "rdx_points update: id map growth";
  uint64_t *ns = nullptr;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&ns, (size_t)cap * 8, RDX_DEVICE));
  cudaError_t e = cudaMemsetAsync(ns, 0xFF, (size_t)cap * 8, s);
  if (e == cudaSuccess) e = cudaMemcpyAsync(ns, pts->slot, (size_t)pts->slot_cap * 8, cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) {
    rdx_mem_free(ctx, ns);
    return rdx_cuda_fail(ctx, e, fn);
  }
  rdx_mem_free(ctx, pts->slot);
  pts->slot = ns, pts->slot_cap = cap;
  return RDX_OK;
}


/* One paged update, for pool coordinates T and codes K: its state between the steps. Members
 * are destroyed in reverse: the second stream joins before the scratch is freed. */
template <typename T, typename K>
struct paged {
  rdx_context *ctx;
  rdx_points *pts;
  rdx_sp_batch *b;
  cudaStream_t s;
  scratch mm;
  side_by_side fork;
  const char *fn = "rdx_points update";
  const int64_t m, nn, cap, m_new;
  const int D, op, block_sort; /* split leaves sorted one block each up to capacity 4096 */
  double t0, t1 = 0, t2 = 0;
  qtot *tot = nullptr, H;
  uint32_t *dead = nullptr;
  K *ik = nullptr, *ik2 = nullptr, *sk = nullptr, *sk2 = nullptr;
  uint32_t *irow = nullptr, *irow2 = nullptr, *ss = nullptr, *ss2 = nullptr;
  int64_t *parent, *A, *ci, *rl, *rs, *kidx;
  pgold O;
  uint8_t *have, *lf;
  qnode *tn = nullptr, *kept = nullptr, *sub = nullptr;
  qgroup *groups;
  pgfree F;
  int32_t *saved_cnt = nullptr; /* the reuse counts before the decisions took pages, until the writes */
  int64_t page_base = 0, n_base = 0, ng = 0, n_sort = 0, n_surv = 0, n_moves = 0;
  pgdst dst;
  bfs_order<qnode> order;
  rdx_sp_nodes nodes;

  paged(rdx_context *c, rdx_points *p, rdx_sp_batch *bt)
      : ctx(c), pts(p), b(bt), s(rdx_stream(c)), mm(c, &p->arena, &p->arena_bytes, arena_limit(p)), fork{c}, m(bt->m),
        nn(p->nodes.n), cap(p->cap), m_new(bt->op == RDX_SP_ERASE ? 0 : bt->m), D(p->depth), op(bt->op),
        block_sort(p->cap <= 4096), t0(rdx_now_ms()) {
    memset(&nodes, 0, sizeof nodes);
    memset(&H, 0, sizeof H);
  }
  ~paged() {
    if (saved_cnt) (void)cudaMemcpyAsync(F.cnt, saved_cnt, (size_t)F.K * 4, cudaMemcpyDeviceToDevice, s);
    rdx_sp_nodes_free(ctx, &nodes);
  }

  /* 1: the batch's rows and sort; the removals per leaf and up the tree beside the sort */
  rdx_status batch() {
    const int64_t dead_words = pts->pool.used / 32 + 1;
    const size_t tot_bytes = (sizeof(qtot) + 15) & ~(size_t)15;
    const size_t zero_bytes = tot_bytes + (size_t)nn * 8 + (size_t)dead_words * 4; /* totals, fills, dead bits */
    char *zero;
    RDX_CHECK(mm.get(&zero, zero_bytes, fn));
    RDX_CUDA(ctx, sp_fill(zero, zero_bytes, 0, s), fn);
    tot = (qtot *)zero;
    O.mfill = (unsigned long long *)(zero + tot_bytes);
    dead = (uint32_t *)(O.mfill + nn);
    if (m_new > 0) {
      RDX_CHECK(mm.get(&ik, (size_t)m, fn));
      RDX_CHECK(mm.get(&ik2, (size_t)m, fn));
      RDX_CHECK(mm.get(&irow, (size_t)m, fn));
      RDX_CHECK(mm.get(&irow2, (size_t)m, fn));
    }
    int64_t **arrays[] = {&parent, &A, &ci, &rl, &rs, &kidx, &O.soff, &O.mto, &O.mpos, &O.moff, &O.mpage, &O.split};
    for (int64_t **a : arrays) RDX_CHECK(mm.get(a, (size_t)nn, fn));
    RDX_CHECK(mm.get(&O.pend, (size_t)(2 * nn), fn));
    RDX_CHECK(mm.get(&have, (size_t)nn, fn));
    RDX_CHECK(mm.get(&lf, (size_t)nn, fn));
    RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
    RDX_CHECK(mm.get(&groups, (size_t)(4 * nn), fn));
    pg_rows_kernel<K><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, b->xy, pts->f64, m, pts->id_end, pts->slot,
                                                         b->check_xy, pts->grid, ik, irow, dead, tot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
    RDX_CHECK(fork.start(fn));
    pg_links_kernel<<<blocks_for(nn * 32, 256), 256, 0, fork.aux>>>(pts->nodes, dead, rl, rs, parent, have);
    pg_up_kernel<<<blocks_for(nn, 256), 256, 0, fork.aux>>>(pts->nodes, rl, parent, rs);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: removal kernels");
    RDX_CHECK(sort_batch(mm, m_new, 0, 2 * D, &ik, ik2, &irow, irow2, fn));
    RDX_CHECK(fork.join(fn));
    rdx_trace(ctx, "qt paged: rows, batch sort, removals per leaf beside it");
    return RDX_OK;
  }

  /* 2: the decisions over the old nodes, and the host's read of their totals */
  rdx_status plan(int *go) {
    F = pfree_of(pts);
    if (F.K > 0) { /* the decisions take reused pages: their counts come back unless the writes start */
      int32_t *saved;
      RDX_CHECK(mm.get(&saved, (size_t)F.K, fn));
      RDX_CUDA(ctx, cudaMemcpyAsync(saved, F.cnt, (size_t)F.K * 4, cudaMemcpyDeviceToDevice, s), fn);
      saved_cnt = saved;
    }
    const pgcount Q = {rl, rs, A, ci, lf};
    const unsigned gn = blocks_for(nn, 256);
    pg_incoming_kernel<K><<<gn, 256, 0, s>>>(pts->nodes, ik, m_new, D, cap, Q, A, ci, lf);
    page_base = pts->pool.used; /* new pages from here (a growth after the read keeps used) */
    pg_decide_kernel<K><<<gn, 256, 0, s>>>(pts->nodes, ik, parent, have, Q, D, cap, page_base, F, tn, kidx, groups, O, tot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
    RDX_CHECK(bfs_order<qnode>::compact(mm, tn, kidx, nn, &kept, &tot->nodes, fn));
    RDX_CHECK(read_plan(ctx, pts, b, mm, tot, &H, go, fn)); /* the host's wait */
    rdx_trace(ctx, "qt paged: decisions, the host read them");
    n_base = (int64_t)H.nodes, ng = (int64_t)H.groups, n_sort = n_base + (int64_t)H.subnodes;
    n_surv = (int64_t)H.surv, n_moves = (int64_t)H.holes;
    t1 = rdx_now_ms();
    return RDX_OK;
  }

  /* 3: everything the rest needs, taken before the first write (a larger id map changes nothing
   * visible, so it may be swapped in now) */
  rdx_status room() {
    if (op == RDX_SP_INSERT && (int64_t)(b->first_id + (uint64_t)m) > pts->slot_cap) {
      const int64_t want = (int64_t)(b->first_id + (uint64_t)m);
      RDX_CHECK(pg_grow_slots(ctx, pts, want + want / 2 + 64));
    }
    if (n_surv > 0) {
      RDX_CHECK(mm.get(&sk, (size_t)n_surv, fn));
      RDX_CHECK(mm.get(&ss, (size_t)n_surv, fn));
      if (!block_sort) {
        RDX_CHECK(mm.get(&sk2, (size_t)n_surv, fn));
        RDX_CHECK(mm.get(&ss2, (size_t)n_surv, fn));
        RDX_CHECK(mm.cub_reserve(fn, [&](void *t, size_t &bytes) { return sort_survivors(t, bytes); }));
      }
    }
    RDX_CHECK(mm.get(&dst.dsurv, (size_t)n_surv + 1, fn));
    RDX_CHECK(mm.get(&dst.dinc, (size_t)m_new + 1, fn));
    RDX_CHECK(mm.get(&dst.msrc, (size_t)n_moves + 1, fn));
    RDX_CHECK(mm.get(&dst.mdst, (size_t)n_moves + 1, fn));
    RDX_CHECK(mm.get(&sub, (size_t)(n_sort - n_base) + 1, fn));
    RDX_CHECK(order.alloc(mm, n_sort - n_base, D, 0, fn));
    RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_sort, RDX_DEVICE, &nodes));
    t2 = rdx_now_ms();
    rdx_trace(ctx, "qt paged: allocations");
    return RDX_OK;
  }
  cudaError_t sort_survivors(void *t, size_t &bytes) {
    cub::DoubleBuffer<K> kb(sk, sk2);
    cub::DoubleBuffer<uint32_t> sb(ss, ss2);
    const cudaError_t e = cub::DeviceRadixSort::SortPairs(t, bytes, kb, sb, n_surv, 0, 2 * D, s);
    if (t) sk = kb.Current(), ss = sb.Current();
    return e;
  }

  /* 4a: the split leaves' survivors sorted and the groups' subtrees, and beside them the
   * placement plan of the kept and the old nodes */
  rdx_status split_and_plan(const qlist &nl) {
    const int64_t n_split = (int64_t)H.splits;
    const pcodes<T, K> pk = {(const T *)pts->pool.x, (const T *)pts->pool.y, pts->grid};
    RDX_CHECK(fork.start(fn));
    if (n_moves > 0) RDX_CUDA(ctx, sp_fill(dst.msrc, (size_t)n_moves * 4, 0xFFFFFFFFu, fork.aux), fn);
    pg_plan(fork.aux, nl, 0, n_base, 1, pts->nodes, rl, O, dead, dst, tot);
    const unsigned sgrid = (unsigned)(n_split < 65535 ? (n_split > 0 ? n_split : 1) : 65535);
    if (n_surv > 0 && cap <= 1024)
      pg_sort_split_kernel<T, K, 256, 4><<<sgrid, 256, 0, s>>>(pts->nodes, O.split, n_split, O.soff, rl, dead, pk, D, sk, ss, tot);
    else if (n_surv > 0 && block_sort)
      pg_sort_split_kernel<T, K, 512, 8><<<sgrid, 512, 0, s>>>(pts->nodes, O.split, n_split, O.soff, rl, dead, pk, D, sk, ss, tot);
    else if (n_surv > 0)
      pg_gather_kernel<T, K><<<blocks_for(nn * 32, 256), 256, 0, s>>>(pts->nodes, O.soff, rl, dead, pk, sk, ss, tot);
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: split sort kernel");
    if (n_surv > 0 && !block_sort) RDX_CHECK(mm.cub(fn, [&](void *t, size_t &bytes) { return sort_survivors(t, bytes); }));
    if (ng > 0) {
      RDX_CUDA(ctx, sp_fill(sub, (size_t)(n_sort - n_base) * sizeof(qnode), 0xFFFFFFFFu, s), fn);
      const sublists<K> L = {sk, n_surv, ik, m_new, page_base, 1, block_sort, F};
      split_tree_kernel<K><<<blocks_for(ng, 1), SPLIT_THREADS, 0, s>>>(groups, ng, L, D, cap, sub, tot);
      RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: split tree kernel");
    }
    /* H.pages bounds what new pages take from the free end, but the subtrees' bound allows a leaf
     * for every node a group might have: the pool grows only if the pages really taken do not fit */
    const int64_t free_end = pts->pool.cap - page_base;
    if ((int64_t)H.pages > free_end) {
      unsigned long long taken = 0;
      RDX_CHECK(to_host(ctx, &taken, &tot->pgused, 1, fn));
      if ((int64_t)taken > free_end) {
        const int64_t want = page_base + (int64_t)taken;
        RDX_CHECK(pg_grow_pool(ctx, pts, want + want / 4 + 65536)); /* nothing written yet */
        pts->stats.growths++;
      }
      if (pts->pool.cap >= ((int64_t)1 << 32)) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: paged pool past 2^32 slots", fn);
    }
    RDX_CHECK(fork.join(fn));
    rdx_trace(ctx, "qt paged: split work, and the placement plan beside it");
    return RDX_OK;
  }

  /* 4b: the writes: the subtrees' plan and the points' moves beside the new nodes' BFS order
   * (different memory; the order's small kernels first, so the moves' large grids fill the GPU
   * around them). Only device errors can fail from here on. */
  rdx_status write() {
    const qlist nl = {kept, sub, n_base};
    RDX_CHECK(split_and_plan(nl));
    saved_cnt = nullptr; /* the reused pages are taken */
    RDX_CHECK(fork.start(fn));
    RDX_CHECK(order.run(mm, bfs_lists<qnode>{kept, sub, &tot->nodes, &tot->subused}, n_base, &nodes, &tot->bad, fn));
    pg_plan(fork.aux, nl, n_base, n_sort, 0, pts->nodes, rl, O, dead, dst, tot);
    const pgio<T> P = {(T *)pts->pool.x, (T *)pts->pool.y, pts->pool.id, pts->slot, (const T *)b->xy,
                       op == RDX_SP_INSERT ? NULL : b->ids, b->ids64, b->first_id, irow, ss};
    if (op == RDX_SP_ERASE) pg_erase_kernel<<<blocks_for(m, 256), 256, 0, fork.aux>>>(b->ids, b->ids64, m, pts->slot);
    pg_move_kernel<T><<<blocks_for(n_surv + m_new + n_moves, 256), 256, 0, fork.aux>>>(P, dst, n_surv, m_new, n_moves);
    if (F.K > 0) pg_free_kernel<<<1, 1024, 0, fork.aux>>>(F, O.pend, tot); /* after the moves read the old pages */
    RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: move kernels");
    RDX_CHECK(fork.join(fn));
    RDX_CHECK(read_nodes(ctx, n_base, &nodes, tot, &H, fn));
    rdx_trace(ctx, "qt paged: moves, and the nodes' order beside them");
    rdx_sp_nodes_free(ctx, &pts->nodes);
    pts->nodes = nodes;
    memset(&nodes, 0, sizeof nodes);
    pts->host_stale = 1;
    pts->pool.used = page_base + (int64_t)H.pgused;
    rdx_sp_stats *S = &pts->stats;
    S->splits = (int64_t)H.splits, S->merges = (int64_t)H.merges, S->relocated = (int64_t)H.relocs;
    S->new_leaves = (int64_t)H.new_leaves, S->reused_pages = (int64_t)H.reused;
    b->in_place = -1; /* a move within its leaf fills a hole like any incoming point */
    S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = rdx_now_ms() - t2, S->phase_ms[3] = 0;
    mm.settle();
    return RDX_OK;
  }
};

template <typename T, typename K>
rdx_status paged_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  b->bad_row = -1;
  /* 0: the pages, spread out at the first update and again when the free end runs short of the
   * batch; the free room left is the points and twice the largest batch that pages */
  if (pts->slot == NULL || pts->pool.cap - pts->pool.used < 2 * b->m + pts->n / 16 + 65536) {
    const int64_t most = 2 * pts->n / RDX_SP_PAGED_SHARE, twice = 2 * b->m > most ? 2 * b->m : most;
    RDX_CHECK(rdx_sp_qt_relayout_cuda(ctx, pts, pts->n + twice + 65536));
  }
  paged<T, K> u(ctx, pts, b);
  int go = 0;
  RDX_CHECK(u.batch());
  RDX_CHECK(u.plan(&go));
  if (!go) return RDX_OK;
  RDX_CHECK(u.room());
  return u.write();
}

}  // namespace

extern "C" rdx_status rdx_sp_qt_paged_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  rdx_status st;
  if (pts->f64) st = pts->key64 ? paged_update<double, uint64_t>(ctx, pts, b) : paged_update<double, uint32_t>(ctx, pts, b);
  else st = pts->key64 ? paged_update<float, uint64_t>(ctx, pts, b) : paged_update<float, uint32_t>(ctx, pts, b);
  rdx_trace_flush(ctx);
  return st;
}
