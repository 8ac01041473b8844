/*
 * update_qt.cu: bulk moves, inserts and erases of a quadtree on the GPU, two ways that share the
 * node machinery (decisions by the rule of a fresh build, split subtrees, BFS order and links).
 * update.c picks one per batch (prepare_paged): paging for batches of up to 1/10 of the points,
 * the merge for larger ones.
 *
 * PAGING (update_paged; G-PICS Section 5 with paging). Each leaf owns a page of pool slots
 * [fpos, fpos + room) whose first len hold its points, and an id -> slot map (pts->slot) finds
 * a point's slot; rdx_sp_qt_relayout_cuda spreads a dense pool out so at the first paged update.
 * The paged pool keeps no codes: kernels that need them derive them from the coordinates
 * (pcodes). Work grows with the batch, not with the pool:
 *  1. pg_rows_kernel, one thread per row: ids checked against the map (a repeated id, found by
 *     its slot's dead bit set twice, is an error), each vacated slot marked in a dead bitmap,
 *     new points checked and coded. The batch's codes are sorted (CUB).
 *  2. Per old node: a leaf's removals are the dead bits of its page, added up the tree by
 *     warp-aggregated atomics (on a second stream, beside the batch's sort: rdx_cuda_fork); its
 *     incoming are a run of the sorted codes (two binary searches).
 *     That gives every node's new count, and pg_decide_kernel applies the build's rule: a leaf
 *     that stays one keeps its page if its points fit its room; one that outgrew it, and an
 *     internal node that falls to a leaf (a merge), get a new page; a leaf that splits, and
 *     points in quadrants that had no node, become groups. The host reads the totals here (its
 *     mid-way wait): bad ids or points leave the index as it was; otherwise all memory the
 *     update needs is taken before the first write.
 *  3. Each split leaf's survivors are sorted in one block (pg_sort_split_kernel) and its subtree
 *     is built over them and its incoming (split_tree_kernel); new leaves take new pages. Both
 *     are launched before the host's read (qspec), which a side stream makes (rdx_cuda_peek_*),
 *     so the GPU works on while the host reads and allocates.
 *  4. pg_plan_kernel, a warp per node: a kept leaf repairs its page in place (incoming fill the
 *     holes, then tail points fill the rest, the leftover incoming are appended); moved and new
 *     leaves list where their points go. The plan of the nodes the decisions listed and of the
 *     old leaves runs on the second stream beside the split work, that of the split subtrees
 *     after it. pg_move_kernel then moves every point that moves, one thread each, and updates
 *     the id map, on the second stream beside the node order: the nodes go to their BFS places
 *     (by counts, node_place_kernel) and are linked. (The latency-bound kernels gain from
 *     running beside others; the moves, bound by random accesses, do not: PROBES.md §28.)
 * New pages are pages that leaves gave up in earlier batches, of their room class (update.cuh,
 * pgfree; the batch's own go back after its moves), or come from the pool's free end; what no
 * class reuses is reclaimed by the next relayout (update.c runs one when the free end runs
 * short).
 *
 * MERGING (update). The pool stays what a bottom-up build leaves: slots [0, n) hold the live
 * points in Morton order, with no spare room and no id map (a live-id bitmap instead). The
 * batch's codes are sorted and merged with the surviving points in one streaming pass over the
 * pool: tiles of TILE slots, one block each (merge_tile_kernel drops the claimed slots, ranks
 * the survivors with a decoupled look-back, and places them and the batch points of its tile;
 * merge_crowded_kernel places those of tiles that receive more than a block caches). Node
 * counts are binary searches over the merged codes; the split subtrees are launched ahead of
 * the host's read as in paging.
 *
 * Both leave the nodes equal to a fresh build's with the same box. Costs on an H200, 16.5M
 * taxi-like f32 points, leaf capacity 1024, rebuild about 2.9-3.3 ms (bench/results/NVIDIA-H200,
 * spatial_update.csv, PROBES.md §21, §24-§29): paging takes about 0.36-0.37 ms at 1% of the
 * points moved, 0.52-0.53 ms at 3% and 0.61 ms at 5% over a run of batches (relayouts
 * included), its cost mostly random accesses (the moved points' three pool columns and id map
 * entries: the move kernel is about a third of a 5% update) and some 25 launches; the merge
 * costs about 0.4 ms of streaming over the pool whatever the batch (0.64 ms at 1%, 0.92 ms at
 * 10%, 2.0 ms at 50%). Paging needs about 57-62 bytes per point (spare room, a free end as
 * large as the points and two batches of a tenth, id map) against the merge's 25-27.
 */
#include "spatial/merge.cuh"

namespace {

using namespace rdx_sp;

/* One node of the new tree before sorting. The paged path (PG_*) also says how its leaves get
 * their points: a fresh leaf (of a split subtree) copies entries [a0, a0 + an) of the gathered
 * survivors and [b0, b0 + count - an) of the sorted batch into its new page; a moved leaf
 * receives a0 survivors from old leaves (pg_plan_old) and then batch entries [b0, ...);
 * a kept leaf fills the holes of its page (a0: its old length, an: its removals, h0: its entries
 * of the move list) from batch entries [b0, ...) and its own tail. A split subtree's node keeps
 * its group in h0. */
enum { PG_NODE = 0, PG_KEPT = 1, PG_FRESH = 2, PG_MOVED = 3 };
struct qnode {
  uint64_t key;
  int64_t fpos, len, count, room;
  int64_t a0, an, b0, h0;
  int32_t level, leaf, kind;
};

/* A group: a cell at (level, key) holding `count` merged points whose subtree split_tree_kernel
 * builds into [nbase, nbase + n_nodes) of the node list (a bound; unused entries: level -1). */
struct qgroup {
  int64_t count, n_nodes, nbase;
  int64_t s0, sn; /* paged: its survivors' entries in the gather list (sorted), or s0 = -1 */
  uint64_t key;
  int32_t level;
};

/* Totals the host reads (one copy). */
struct qtot {
  unsigned long long bad;   /* 1 a bad id (check_ids finds which); 4 a bad point (the caller's scan
                               finds which); internal checks: 2 a merged point past the pool, or
                               a group whose points do not match its count; 8 an internal node
                               without children; 16 a subtree past its bound; 32 new nodes out
                               of BFS order */
  unsigned long long nodes, groups, subnodes, subused, splits, merges, new_leaves;
  unsigned long long surv, pages, pgused, holes, relocs, freed, reused; /* paged path */
};

/* A launch made before the host has read the plan's totals (update_paged launches the split
 * leaves' sort and subtrees ahead of its mid-way read, on scratch sized from the last batch):
 * it takes its counts from the totals t and runs only when they fit that scratch, the test the
 * host repeats once it has read them, launching again with exact sizes if they did not. t NULL:
 * the launch's own counts hold. */
struct qspec {
  const qtot *t;
  unsigned long long surv, subnodes, groups; /* the scratch's room */
  unsigned blocks;                           /* for the split leaves' sort (a grid-stride loop) */
  __host__ __device__ bool fits(const qtot &h) const {
    return h.bad == 0 && h.surv <= surv && h.subnodes <= subnodes && h.groups <= groups;
  }
};

/* The pool's Morton codes as kernels read them: its key column, or, in a paged pool, which keeps
 * none (rdx_sp_qt_relayout_cuda), from the coordinates (the build's codes of the same points).
 * The paged moves then write 16 bytes a point instead of 20. */
template <typename T, typename K>
struct pcodes {
  const K *key;
  const T *x, *y;
  rdx_sp_grid g;
  __device__ K operator[](int64_t s) const { return key ? key[s] : (K)rdx_sp_point_key(&g, (double)x[s], (double)y[s]); }
};
template <typename T, typename K>
pcodes<T, K> pcodes_of(const rdx_points *pts) {
  return pcodes<T, K>{(const K *)pts->pool.key, (const T *)pts->pool.x, (const T *)pts->pool.y, pts->grid};
}

/* lower() by a whole warp (every lane calls it with the same arguments): 32 probes a round, so
 * a search of 2^24 codes takes 5 dependent loads instead of 24. Returns hi when no k >= v. */
template <typename K>
__device__ int64_t warp_lower(const K *k, int64_t lo, int64_t hi, uint64_t v) {
  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  while (hi - lo > 32) {
    int64_t step = (hi - lo + 31) / 32, p = lo + (int64_t)(lane + 1) * step - 1;
    if (p > hi - 1) p = hi - 1;
    unsigned m = __ballot_sync(FULL, (uint64_t)k[p] >= v);
    if (m == 0) return hi; /* even k[hi - 1] < v */
    int f = __ffs(m) - 1;  /* the first probe >= v: the answer is in (probe f-1, probe f] */
    int64_t pf = __shfl_sync(FULL, p, f);
    lo = f == 0 ? lo : lo + (int64_t)f * step;
    hi = pf;
    if (lo >= hi) return pf;
  }
  int64_t p = lo + lane;
  unsigned m = __ballot_sync(FULL, p < hi && (uint64_t)k[p] >= v);
  return m ? lo + __ffs(m) - 1 : hi;
}

/* ---- 1. the batch ---- */

/* Row i's point and its code into *key: false, with bad bit 4, when check_xy finds it outside
 * the box or not finite. */
template <typename K>
__device__ __forceinline__ bool row_code(const void *xy, int f64, int64_t i, int check_xy, const rdx_sp_grid &g, qtot *tot,
                                         K *key) {
  double x = rdx_sp_at(xy, 2 * i, f64), y = rdx_sp_at(xy, 2 * i + 1, f64);
  if (check_xy && !(x >= g.x0 && x <= g.x1 && y >= g.y0 && y <= g.y1)) { /* NaN fails too */
    atomicOr(&tot->bad, 4ull);
    return false;
  }
  *key = (K)rdx_sp_point_key(&g, x, y);
  return true;
}

/* Every move or insert row gets a sort entry (code, row), bad rows too (the batch is then
 * dropped before anything of the index changes). */
template <typename K>
__global__ void rows_kernel(int op, const void *ids, int ids64, const void *xy, int f64, int64_t m, uint64_t id_end,
                            const uint32_t *live, uint32_t *claim, int check_xy, rdx_sp_grid g, K *keys, uint32_t *rows,
                            qtot *tot) {
  SP_FOR(i, m) {
    if (op != RDX_SP_ERASE) keys[i] = 0, rows[i] = (uint32_t)i;
    if (op != RDX_SP_INSERT) {
      uint64_t id = id_at(ids, ids64, i);
      if (id >= id_end || !bit_get(live, id)) {
        atomicOr(&tot->bad, 1ull);
        continue;
      }
      if (!claim_id(id, claim, &tot->bad)) continue;
    }
    if (op != RDX_SP_ERASE) row_code(xy, f64, i, check_xy, g, tot, &keys[i]);
  }
}

/* ---- 2. the merge ---- */

/* ---- 3. the nodes ---- */

/* Old node u: its children's parent, and the quadrants that have a child (have[u]). */
__device__ __forceinline__ void node_links(const rdx_sp_nodes &N, int64_t u, int64_t *parent, uint8_t *have) {
  if (u == 0) parent[0] = -1;
  int h = 0;
  if (!N.leaf[u])
    for (int64_t c = N.fpos[u]; c < N.fpos[u] + N.len[u]; c++) {
      parent[c] = u;
      h |= 1 << (N.key[c] & 3);
    }
  have[u] = (uint8_t)h;
}

/* Per old node: its parent, the quadrants that have a child, and its new count and first
 * position among the merged codes. (One thread per node: a warp per node with 32-way searches
 * took twice as long on an H200.) */
template <typename K>
__global__ void count_kernel(rdx_sp_nodes N, const K *keys, int64_t n, int D, int64_t *parent, uint8_t *have, int64_t *A,
                             int64_t *C) {
  SP_FOR(u, N.n) {
    node_links(N, u, parent, have);
    int sh = 2 * (D - (int)N.level[u]);
    int64_t a = lower(keys, 0, n, N.key[u] << sh);
    A[u] = a;
    C[u] = lower(keys, a, n, (N.key[u] + 1) << sh) - a;
  }
}

__device__ qnode make_node(uint64_t key, int level, int leaf, int64_t count, int64_t fpos) {
  qnode n;
  n.key = key, n.level = level, n.leaf = leaf, n.count = count;
  n.len = leaf ? count : 0, n.fpos = leaf ? fpos : 0, n.room = n.len;
  n.a0 = 0, n.an = 0, n.b0 = 0, n.h0 = 0, n.kind = PG_NODE;
  return n;
}
/* A kept node into the decisions' list; kidx[u] says where old node u went. */
__device__ void push_node(qnode *tn, qtot *tot, const qnode &n, int64_t *kidx, int64_t u) {
  const int64_t k = (int64_t)agg_add(&tot->nodes, 1ull);
  tn[k] = n, kidx[u] = k;
}

/* A subtree to build at (level, key) for c points. Its node bound: each level below holds at
 * most c / (cap + 1) internal nodes, each with at most 4 children. */
__device__ void push_group(qgroup *groups, qtot *tot, uint64_t key, int level, int64_t c, int D, int64_t cap,
                           int64_t s0 = -1, int64_t sn = 0) {
  qgroup g;
  g.count = c, g.key = key, g.level = level, g.s0 = s0, g.sn = sn;
  g.n_nodes = 1 + 4 * (int64_t)(D - level) * (c / (cap + 1));
  g.nbase = (int64_t)agg_add(&tot->subnodes, (unsigned long long)g.n_nodes);
  agg_add(&tot->pages, (unsigned long long)(c + c / 2 + (8 + PAGE_UNIT) * g.n_nodes)); /* paged: its leaves' rooms */
  groups[agg_add(&tot->groups, 1ull)] = g;
}

/* Internal node u (level l) that stays: its quadrants without a node that receive points, codes
 * keys[a0, e0) of its cell, become groups (G-PICS's materialisation). */
template <typename K>
__device__ void push_new_quadrants(const rdx_sp_nodes &N, int64_t u, const uint8_t *have, const K *keys, int64_t a0,
                                   int64_t e0, int D, int64_t cap, qgroup *groups, qtot *tot, int64_t s0) {
  const int l = N.level[u], sh = 2 * (D - l - 1);
  for (int q = 0; q < 4; q++) {
    if (have[u] >> q & 1) continue;
    uint64_t qk = 4 * N.key[u] + (uint64_t)q;
    int64_t a = lower(keys, a0, e0, qk << sh), cq = lower(keys, a, e0, (qk + 1) << sh) - a;
    if (cq == 0) continue;
    push_group(groups, tot, qk, l + 1, cq, D, cap, s0, 0);
    agg_add(&tot->new_leaves, 1ull);
  }
}

/* One thread per old node, by the rule of a fresh build: a node inside a subtree whose top is a
 * leaf now, or without points (the root aside), is no node; a leaf stays one or is split; an
 * internal node becomes a leaf (a merge) or stays internal, its quadrants without a node
 * becoming groups when points arrived there. */
template <typename K>
__global__ void decide_kernel(rdx_sp_nodes N, const K *keys, const int64_t *parent, const uint8_t *have, const int64_t *A,
                              const int64_t *C, int D, int64_t cap, qnode *tn, int64_t *kidx, qgroup *groups, qtot *tot) {
  SP_FOR(u, N.n) {
    kidx[u] = -1;
    const int64_t c = C[u];
    if (c == 0 && u != 0) continue;
    int inside = 0;
    for (int64_t a = parent[u]; a >= 0 && !inside; a = parent[a]) inside = rdx_sp_qt_leaf(C[a], N.level[a], D, cap);
    if (inside) continue;
    const int l = N.level[u];
    const uint64_t key = N.key[u];
    if (rdx_sp_qt_leaf(c, l, D, cap)) {
      push_node(tn, tot, make_node(key, l, 1, c, A[u]), kidx, u);
      if (!N.leaf[u]) agg_add(&tot->merges, 1ull);
    } else if (N.leaf[u]) {
      push_group(groups, tot, key, l, c, D, cap);
      agg_add(&tot->splits, 1ull);
    } else {
      push_node(tn, tot, make_node(key, l, 0, c, 0), kidx, u);
      push_new_quadrants(N, u, have, keys, A[u], A[u] + c, D, cap, groups, tot, -1);
    }
  }
}

/* The sorted codes subtrees are built over: the merged pool (a; b empty), or on the paged path
 * the gathered survivors (a) and the sorted batch (b), whose leaves then get new pages of
 * room RDX_SP_GROW(points) from page_base up. */
template <typename K>
struct sublists {
  const K *a;
  int64_t na;
  const K *b;
  int64_t nb;
  int64_t page_base;
  int paged;
  int ranges; /* a group's a-range is its s0, sn (else searched) */
  pgfree F;   /* paged: pages given up before */
};

/* Threads of a split_tree_kernel block. A block walks its subtree a level at a time, each warp
 * taking one node of the level at a time, so the deepest, widest group bounds the kernel: with
 * 16 warps instead of 4 a 5% update's split subtrees took 65-70 us instead of 110 on an H200. */
enum { SPLIT_THREADS = 512 };

/* Where each level of each group's subtree lies in its node region: first[g * lv + l] and
 * cnt[g * lv + l] (lv = D + 1 levels), for node_order_kernel. NULL pointers: not wanted. */
struct qlevels {
  int32_t *first, *cnt;
  int lv;
};

/* One block per group: its cell's ranges in both lists, then its subtree breadth first with the
 * build's split rule (rdx_sp_qt_leaf; the quadrant bounds as rdx_sp_qt_quadrants finds them,
 * here one warp per node), its node region serving as the queue (a waiting node's a0, an, b0
 * hold its ranges). A level's nodes are taken in rounds of one node per warp, and each round
 * appends its children in node order, quadrant by quadrant, so every level of the region is in
 * Morton order (the group's BFS order, which node_order_kernel relies on). Merge path leaf fpos:
 * the leaf's first pool slot. */
template <typename K>
__global__ void split_tree_kernel(const qgroup *groups, int64_t ng, sublists<K> L, int D, int64_t cap, qnode *out,
                                  qlevels Q, qtot *tot, qspec sp) {
  const unsigned FULL = 0xffffffffu;
  __shared__ int64_t head, tail, next;
  __shared__ int wsum[32];
  if (sp.t) {
    if (!sp.fits(*sp.t)) return;
    ng = (int64_t)sp.t->groups;
    if (L.paged) L.na = (int64_t)sp.t->surv; /* the merge's list is its new pool, whose size the host knows */
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  for (int64_t g = blockIdx.x; g < ng; g += gridDim.x) {
    const qgroup G = groups[g];
    qnode *reg = out + G.nbase;
    if (warp == 0) {
      if (Q.first && lane < Q.lv) Q.first[g * Q.lv + lane] = 0, Q.cnt[g * Q.lv + lane] = 0;
      int sh = 2 * (D - G.level);
      int64_t a = G.s0, e = G.s0 + G.sn;
      if (!L.ranges || G.s0 < 0) {
        a = warp_lower(L.a, 0, L.na, G.key << sh);
        e = warp_lower(L.a, a, L.na, (G.key + 1) << sh);
      }
      int64_t b = 0, f = 0;
      if (L.nb > 0) {
        b = warp_lower(L.b, 0, L.nb, G.key << sh);
        f = warp_lower(L.b, b, L.nb, (G.key + 1) << sh);
      }
      if (lane == 0) {
        if ((e - a) + (f - b) != G.count) atomicOr(&tot->bad, 2ull);
        qnode r;
        r.key = G.key, r.level = G.level, r.leaf = 0, r.count = (e - a) + (f - b), r.fpos = 0, r.len = 0, r.room = 0;
        r.a0 = a, r.an = e - a, r.b0 = b, r.h0 = g, r.kind = PG_NODE;
        reg[0] = r;
        head = 0, tail = 1, next = 1;
      }
    }
    __syncthreads();
    for (int lev = G.level; head < tail; lev++) {
      const int64_t h = head, t = tail;
      if (Q.first && threadIdx.x == 0 && lev < Q.lv)
        Q.first[g * Q.lv + lev] = (int32_t)h, Q.cnt[g * Q.lv + lev] = (int32_t)(t - h);
      for (int64_t base = h; base < t; base += nwarps) {
        const int64_t i = base + warp;
        bool child = false;
        qnode c;
        if (i < t) {
          qnode nd = reg[i];
          if (rdx_sp_qt_leaf(nd.count, nd.level, D, cap)) {
            nd.leaf = 1, nd.len = nd.count;
            if (L.paged) {
              nd.room = L.F.room_for(nd.count), nd.kind = PG_FRESH;
              if (lane == 0) nd.fpos = L.F.take(&nd.room, L.page_base, &tot->pgused, &tot->reused);
            } else {
              nd.room = nd.count, nd.fpos = nd.a0;
            }
          } else {
            int64_t ba[5], bb[5];
            ba[0] = nd.a0, ba[4] = nd.a0 + nd.an, bb[0] = nd.b0, bb[4] = nd.b0 + nd.count - nd.an;
            int sh = 2 * (D - nd.level - 1);
            for (int q = 1; q < 4; q++) {
              uint64_t lo = (4 * nd.key + (uint64_t)q) << sh;
              ba[q] = warp_lower(L.a, ba[q - 1], ba[4], lo);
              bb[q] = bb[4] > bb[0] ? warp_lower(L.b, bb[q - 1], bb[4], lo) : bb[0];
            }
            nd.leaf = 0, nd.len = 0, nd.room = 0, nd.fpos = 0;
            const int64_t na = lane < 4 ? ba[lane + 1] - ba[lane] : 0, nb = lane < 4 ? bb[lane + 1] - bb[lane] : 0;
            if (lane < 4 && na + nb > 0) {
              child = true;
              c.key = 4 * nd.key + (uint64_t)lane, c.level = nd.level + 1, c.leaf = 0, c.count = na + nb;
              c.fpos = 0, c.len = 0, c.room = 0, c.a0 = ba[lane], c.an = na, c.b0 = bb[lane], c.h0 = nd.h0, c.kind = PG_NODE;
            }
          }
          if (lane == 0) reg[i] = nd;
        }
        const unsigned m = __ballot_sync(FULL, child);
        if (lane == 0) wsum[warp] = __popc(m);
        __syncthreads();
        if (child) {
          int64_t j = next + __popc(m & ((1u << lane) - 1));
          for (int w = 0; w < warp; w++) j += wsum[w];
          if (j >= G.n_nodes) atomicOr(&tot->bad, 16ull); /* the bound is a theorem; say so if it ever fails */
          else reg[j] = c;
        }
        __syncthreads();
        if (threadIdx.x == 0)
          for (int w = 0; w < nwarps; w++) next += wsum[w];
        __syncthreads();
      }
      if (threadIdx.x == 0) head = t, tail = next < G.n_nodes ? next : G.n_nodes;
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(&tot->subused, (unsigned long long)tail);
    __syncthreads();
  }
}

/* The new nodes: the kept ones (from the decisions) and the split subtrees' (a bound of
 * entries, unused ones at level -1), read as one list. */
struct qlist {
  const qnode *kept, *sub;
  int64_t n_base;
  __device__ qnode at(int64_t i) const { return i < n_base ? kept[i] : sub[i - n_base]; }
};

/* BFS sort keys of the new nodes: (level, key) packed when 2 D + 6 bits fit, else key alone
 * (a second, stable sort by level follows). */
__device__ __forceinline__ void node_key(const qnode &q, int64_t i, int packed, int D, uint64_t *k, int64_t *idx) {
  k[i] = q.level < 0 ? ~0ull : packed ? ((uint64_t)q.level << (2 * D)) | q.key : q.key;
  idx[i] = i;
}
__global__ void node_keys_kernel(qlist L, int64_t n, int packed, int D, uint64_t *k, int64_t *idx) {
  SP_FOR(i, n) node_key(L.at(i), i, packed, D, k, idx);
}
__global__ void node_levels_kernel(qlist L, const int64_t *idx, int64_t n, uint64_t *k) {
  SP_FOR(i, n) k[i] = L.at(idx[i]).level < 0 ? 63 : (uint64_t)L.at(idx[i]).level;
}

__global__ void node_put_kernel(qlist L, const int64_t *idx, const qtot *tot, rdx_sp_nodes out) {
  SP_FOR(i, L.n_base + (int64_t)tot->subused) {
    qnode q = L.at(idx[i]);
    out.key[i] = q.key, out.fpos[i] = q.fpos, out.len[i] = q.len, out.count[i] = q.count, out.room[i] = q.room;
    out.split[i] = 0.0, out.level[i] = (uint8_t)q.level, out.leaf[i] = (uint8_t)q.leaf;
  }
}

/* Internal nodes: children are the next level's nodes with key >> 2 == key, contiguous in BFS. */
__global__ void node_link_kernel(rdx_sp_nodes o, int64_t n_base, qtot *tot) {
  o.n = n_base + (int64_t)tot->subused;
  SP_FOR(i, o.n) {
    if (i > 0 && (o.level[i - 1] > o.level[i] || (o.level[i - 1] == o.level[i] && o.key[i - 1] >= o.key[i])))
      atomicOr(&tot->bad, 32ull);
    if (!o.leaf[i] && link_children(o, i, 2) == 0) atomicOr(&tot->bad, 8ull);
  }
}

/* ---- the new nodes' BFS order without a sort ----
 * The new tree's nodes are the old nodes that stay (their old BFS order is (level, key) order)
 * and the split subtrees' nodes (each group's levels in Morton order, split_tree_kernel). Groups
 * are disjoint cells, none inside a kept node's cell below it, so a node's BFS position is a sum
 * of counts: the kept nodes before it (a prefix over the old nodes), the subtree nodes of lower
 * levels, those of its level in groups whose cells come first, and, for a subtree node, its
 * place in its group's level. kept_scan_kernel and node_order_kernel (one block) find the
 * prefixes, and node_place_kernel writes every node at its position. On an H200 (~50K nodes, a
 * 3-5% update) the four kernels take 38-43 us where CUB's sort with its key and put kernels took
 * 64-66 (PROBES.md §24). sort_nodes remains for trees past ORDER_MAX_OLD nodes or
 * ORDER_MAX_GROUPS groups, and with RAYDEX_SP_NODES=sort (the tests use both). */
enum { ORDER_THREADS = 1024, ORDER_MAX_GROUPS = 2048 };
static const int64_t ORDER_MAX_OLD = (int64_t)ORDER_THREADS * ORDER_THREADS; /* one block's scan of block sums */

struct qorder {
  const int64_t *kidx; /* per old node: its entry among the kept nodes, or -1 (the decisions) */
  int32_t *kloc;       /* nn: kept old nodes before each within its block of ORDER_THREADS */
  int64_t *boff;       /* nn / ORDER_THREADS + 2: kept old nodes before each block (the sums first) */
  uint64_t *gstart;    /* ng: the groups' cell starts (codes at depth D), ascending */
  int32_t *grank;      /* ng: each group's place in that order */
  int64_t *offs;       /* (ng + 1) x lv: level-l subtree nodes of the groups before place j */
  int64_t *lbase;      /* lv: subtree nodes at levels below l */
  int64_t *gbase;      /* ng x lv: the place of a group's level-l node = gbase + its region index */
  qlevels Q;           /* split_tree_kernel's level table */
  uint64_t *nk, *nk2;  /* or, when sort_nodes orders the nodes: their sort keys (node_key) */
  int64_t *ni, *ni2;
  int64_t nn;
  /* kept old nodes before old node u (u <= nn) */
  __device__ int64_t kept_before(int64_t u) const {
    return u >= nn ? boff[(nn + ORDER_THREADS - 1) / ORDER_THREADS] : boff[u / ORDER_THREADS] + kloc[u];
  }
};

/* A block of old nodes: which are kept, as a prefix within the block and the block's sum. */
__global__ void __launch_bounds__(ORDER_THREADS) kept_scan_kernel(qorder O) {
  typedef cub::BlockScan<int32_t, ORDER_THREADS> scan_t;
  __shared__ typename scan_t::TempStorage ts;
  const int64_t u = (int64_t)blockIdx.x * ORDER_THREADS + threadIdx.x;
  int32_t pre, all;
  scan_t(ts).ExclusiveSum(u < O.nn && O.kidx[u] >= 0 ? 1 : 0, pre, all);
  if (u < O.nn) O.kloc[u] = pre;
  if (threadIdx.x == 0) O.boff[blockIdx.x] = all;
}

/* One block: the blocks' offsets, the groups in cell order, and per level (a warp each) the
 * subtree nodes of the groups before each place. */
__global__ void __launch_bounds__(ORDER_THREADS) node_order_kernel(const qgroup *groups, int64_t ng, int D, qorder O,
                                                                   qtot *tot) {
  typedef cub::BlockScan<int64_t, ORDER_THREADS> scan_t;
  __shared__ typename scan_t::TempStorage ts;
  __shared__ uint64_t st[ORDER_MAX_GROUPS];
  __shared__ int32_t sid[ORDER_MAX_GROUPS];
  __shared__ int64_t total[32];
  const int t = threadIdx.x, lane = t & 31, warp = t / 32, lv = O.Q.lv;
  const int64_t nb = (O.nn + ORDER_THREADS - 1) / ORDER_THREADS; /* <= ORDER_THREADS */
  int64_t pre, all;
  scan_t(ts).ExclusiveSum(t < nb ? O.boff[t] : 0, pre, all);
  __syncthreads(); /* every sum read before any offset is written over it */
  if (t < nb) O.boff[t] = pre;
  if (t == 0) {
    O.boff[nb] = all;
    if ((unsigned long long)all != tot->nodes) atomicOr(&tot->bad, 32ull);
  }
  /* the groups in cell order (a rank by counting: a few hundred groups) */
  for (int64_t g = t; g < ng; g += ORDER_THREADS) st[g] = groups[g].key << (2 * (D - groups[g].level));
  __syncthreads();
  for (int64_t g = t; g < ng; g += ORDER_THREADS) {
    const uint64_t v = st[g];
    int32_t r = 0;
    for (int64_t h = 0; h < ng; h++) r += st[h] < v || (st[h] == v && h < g);
    O.grank[g] = r, sid[r] = (int32_t)g;
  }
  __syncthreads();
  for (int64_t j = t; j < ng; j += ORDER_THREADS) O.gstart[j] = st[sid[j]];
  /* level `warp`: each lane a run of places, then a warp scan of the runs' sums */
  if (warp < lv) {
    const int64_t per = (ng + 31) / 32, lo = min(ng, lane * per), hi = min(ng, lo + per);
    int64_t sum = 0;
    for (int64_t j = lo; j < hi; j++) sum += O.Q.cnt[sid[j] * lv + warp];
    int64_t inc = sum;
    for (int d = 1; d < 32; d *= 2) {
      const int64_t y = __shfl_up_sync(0xffffffffu, inc, d);
      if (lane >= d) inc += y;
    }
    int64_t p = inc - sum;
    for (int64_t j = lo; j < hi; j++) O.offs[j * lv + warp] = p, p += O.Q.cnt[sid[j] * lv + warp];
    if (lane == 31) total[warp] = inc, O.offs[ng * lv + warp] = inc;
  }
  __syncthreads();
  if (t == 0) {
    int64_t below = 0;
    for (int l = 0; l < lv; l++) O.lbase[l] = below, below += total[l];
  }
}

/* The first old node at or after (level l, key k) in BFS order. */
__device__ __forceinline__ int64_t old_lower(const rdx_sp_nodes &N, int l, uint64_t k) {
  int64_t a = 0, b = N.n;
  while (a < b) {
    const int64_t mid = a + (b - a) / 2;
    if ((int)N.level[mid] < l || ((int)N.level[mid] == l && N.key[mid] < k)) a = mid + 1;
    else b = mid;
  }
  return a;
}
__device__ __forceinline__ void node_put(const rdx_sp_nodes &out, int64_t i, int64_t n_out, const qnode &q, qtot *tot) {
  if (i < 0 || i >= n_out) {
    atomicOr(&tot->bad, 32ull);
    return;
  }
  out.key[i] = q.key, out.fpos[i] = q.fpos, out.len[i] = q.len, out.count[i] = q.count, out.room[i] = q.room;
  out.split[i] = 0.0, out.level[i] = (uint8_t)q.level, out.leaf[i] = (uint8_t)q.leaf;
}

/* Per group and level: where its nodes of that level go. No kept node of that level lies in the
 * group's cell, so the kept nodes before any of them are those before the cell's first code. */
__global__ void group_base_kernel(rdx_sp_nodes N, const qgroup *groups, int64_t ng, qorder O) {
  const int lv = O.Q.lv;
  SP_FOR(x, ng * lv) {
    const int64_t g = x / lv;
    const int l = (int)(x % lv);
    if (O.Q.cnt[x] == 0) continue;
    const uint64_t first = groups[g].key << (2 * (l - groups[g].level));
    O.gbase[x] = O.kept_before(old_lower(N, l, first)) + O.lbase[l] + O.offs[O.grank[g] * lv + l] - O.Q.first[x];
  }
}

/* A thread per old node (a kept one goes to its place), then one per subtree entry. */
__global__ void node_place_kernel(qlist L, int64_t n_subs, rdx_sp_nodes N, const qgroup *groups, int64_t ng, int D, qorder O,
                                  qtot *tot, rdx_sp_nodes out) {
  const int64_t n_out = L.n_base + (int64_t)tot->subused;
  const int lv = O.Q.lv;
  SP_FOR(e, N.n + n_subs) {
    if (e < N.n) {
      const int64_t k = O.kidx[e];
      if (k < 0) continue;
      const qnode q = L.kept[k];
      const int64_t j = lower(O.gstart, 0, ng, q.key << (2 * (D - q.level)));
      node_put(out, O.kept_before(e) + O.lbase[q.level] + O.offs[j * lv + q.level], n_out, q, tot);
    } else {
      const qnode q = L.sub[e - N.n];
      if (q.level < 0) continue;
      node_put(out, O.gbase[q.h0 * lv + q.level] + (e - N.n - groups[q.h0].nbase), n_out, q, tot);
    }
  }
}

/* ---- what both updates do on the host ---- */

/* The host's mid-way wait: the totals into *H (by the peek when split work was launched ahead:
 * sp.t). A bad point or id ends the update with nothing changed (*go = 0; b->bad_xy, or
 * f->bad_row from check_ids, tells the caller); any other check bit is an internal error. */
rdx_status read_plan(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f, scratch &mm, const qtot *tot,
                     const qspec &sp, qtot *H, int *go, const char *fn) {
  *go = 0;
  if (sp.t) RDX_CHECK(rdx_cuda_peek_wait(ctx, H, sizeof *H, fn)); /* the plan alone, not the work launched ahead */
  else RDX_CHECK(to_host(ctx, H, tot, 1, fn));
  if (H->bad & 4) {
    b->bad_xy = 1;
    return RDX_OK;
  }
  if (H->bad & 1) return check_ids(ctx, pts, b, mm, f); /* sets f->bad_row */
  if (H->bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an internal check failed before the writes (check %llu)", fn, H->bad);
  *go = 1;
  return RDX_OK;
}

/* The new nodes' BFS order (*order), from their sort keys O.nk and indexes O.ni (node_key). */
rdx_status sort_nodes(scratch &mm, qlist nl, int64_t n_sort, int D, const qorder &O, int64_t **order, const char *fn) {
  cudaStream_t s = rdx_stream(mm.ctx);
  const int packed = 2 * D + 6 <= 64;
  cub::DoubleBuffer<uint64_t> kb(O.nk, O.nk2);
  cub::DoubleBuffer<int64_t> ib(O.ni, O.ni2);
  RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
    return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, ib, n_sort, 0, packed ? 2 * D + 6 : 2 * D, s);
  }));
  if (!packed) {
    node_levels_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nl, ib.Current(), n_sort, kb.Current());
    SP_LAUNCH_CHECK(mm.ctx, "rdx_points update: node levels kernel");
    RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, ib, n_sort, 0, 6, s);
    }));
  }
  *order = ib.Current();
  return RDX_OK;
}

/* The scratch of the node order (*O) for n_sort new nodes: by counts, or (O->kloc NULL) the sort
 * keys of sort_nodes. Taken after the mid-way wait, before the update's first write. kidx: the
 * decisions'. */
rdx_status order_alloc(scratch &mm, const int64_t *kidx, int64_t nn, int64_t ng, int64_t n_sort, int D, qorder *O,
                       const char *fn) {
  memset(O, 0, sizeof *O);
  O->kidx = kidx;
  const char *e = getenv("RAYDEX_SP_NODES");
  if (ng > ORDER_MAX_GROUPS || nn > ORDER_MAX_OLD || (e && strcmp(e, "sort") == 0)) {
    RDX_CHECK(mm.get(&O->nk, (size_t)n_sort, fn));
    RDX_CHECK(mm.get(&O->nk2, (size_t)n_sort, fn));
    RDX_CHECK(mm.get(&O->ni, (size_t)n_sort, fn));
    return mm.get(&O->ni2, (size_t)n_sort, fn);
  }
  const int lv = D + 1;
  RDX_CHECK(mm.get(&O->kloc, (size_t)nn + 1, fn));
  RDX_CHECK(mm.get(&O->boff, (size_t)(nn / ORDER_THREADS + 2), fn));
  O->nn = nn;
  RDX_CHECK(mm.get(&O->gstart, (size_t)ng + 1, fn));
  RDX_CHECK(mm.get(&O->grank, (size_t)ng + 1, fn));
  RDX_CHECK(mm.get(&O->offs, (size_t)(ng + 1) * lv, fn));
  RDX_CHECK(mm.get(&O->lbase, (size_t)lv, fn));
  RDX_CHECK(mm.get(&O->gbase, (size_t)ng * lv + 1, fn));
  RDX_CHECK(mm.get(&O->Q.first, (size_t)ng * lv + 1, fn));
  RDX_CHECK(mm.get(&O->Q.cnt, (size_t)ng * lv + 1, fn));
  O->Q.lv = lv;
  return RDX_OK;
}

/* The room of split work launched ahead of the plan's read (qspec; sp.t NULL: not ahead), from
 * the last batch's per batch row, with half as much again. RAYDEX_SP_AHEAD=0 never launches
 * ahead; =tight (the tests) gives half the last batch's room, so that most batches with split
 * work miss. */
qspec ahead_room(const rdx_points *pts, int64_t m_new, qtot *tot) {
  const char *e = getenv("RAYDEX_SP_AHEAD");
  const auto &G = pts->plan_last;
  qspec sp = {};
  if (m_new == 0 || G.m == 0 || (e && strcmp(e, "0") == 0)) return sp;
  const int tight = e && strcmp(e, "tight") == 0;
  const double r = (tight ? 0.5 : 1.5) * (double)m_new / (double)G.m;
  const unsigned long long slack = tight ? 0 : 1024;
  sp.t = tot;
  sp.surv = (unsigned long long)(r * (double)G.surv) + slack;
  sp.subnodes = (unsigned long long)(r * (double)G.subnodes) + slack;
  sp.groups = (unsigned long long)(r * (double)G.groups) + slack / 64;
  if (sp.groups > ORDER_MAX_GROUPS) sp.groups = ORDER_MAX_GROUPS; /* the node order's mode stays the host's */
  const int64_t blocks = (int64_t)(r * (double)G.splits) + 64;
  sp.blocks = (unsigned)(blocks < 65535 ? blocks : 65535);
  return sp;
}

/* Split work launched ahead of the plan's read (sp.t set): the subtrees' scratch sized by sp's
 * room (*sub, *O), the peek of the totals tot, then before_tree() (the paged path's sort of
 * split leaves) and the subtrees. */
template <typename K, typename F>
rdx_status launch_ahead(scratch &mm, const qspec &sp, qtot *tot, const rdx_sp_nodes &old, const int64_t *kidx, int D,
                        int64_t cap, const qgroup *groups, const sublists<K> &L, qnode **sub, qorder *O, F before_tree,
                        const char *fn) {
  rdx_context *ctx = mm.ctx;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(mm.get(sub, (size_t)sp.subnodes + 1, fn));
  RDX_CHECK(order_alloc(mm, kidx, old.n, (int64_t)sp.groups, old.n + (int64_t)sp.subnodes, D, O, fn));
  RDX_CHECK(rdx_cuda_peek_start(ctx, tot, sizeof *tot, fn));
  before_tree();
  RDX_CUDA(ctx, sp_fill(*sub, (size_t)sp.subnodes * sizeof(qnode), 0xFFFFFFFFu, s), fn);
  split_tree_kernel<K><<<(unsigned)(sp.groups > 0 ? sp.groups : 1), SPLIT_THREADS, 0, s>>>(groups, 0, L, D, cap, *sub,
                                                                                           O->Q, tot, sp);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: split kernels (ahead)");
  return RDX_OK;
}

/* After the plan's read H: whether the split work launched ahead (sp) ran, counted in the stats;
 * and this batch's figures kept for the next one's room. */
int ahead_done(rdx_points *pts, const qspec &sp, const qtot &H, int64_t m_new) {
  const int ran = sp.t && sp.fits(H);
  pts->stats.ahead += ran, pts->stats.ahead_missed += sp.t && !ran;
  if (m_new > 0) pts->plan_last = {m_new, (int64_t)H.surv, (int64_t)H.subnodes, (int64_t)H.groups, (int64_t)H.splits};
  return ran;
}

/* The new nodes into *nodes at their BFS places, by counts (after split_tree_kernel filled O.Q). */
rdx_status place_nodes(rdx_context *ctx, qlist nl, int64_t n_sort, const rdx_sp_nodes &old, const qgroup *groups, int64_t ng,
                       int D, const qorder &O, qtot *tot, rdx_sp_nodes *nodes) {
  cudaStream_t s = rdx_stream(ctx);
  kept_scan_kernel<<<blocks_for(old.n, ORDER_THREADS), ORDER_THREADS, 0, s>>>(O);
  node_order_kernel<<<1, ORDER_THREADS, 0, s>>>(groups, ng, D, O, tot);
  if (ng > 0) group_base_kernel<<<blocks_for(ng * O.Q.lv, 256), 256, 0, s>>>(old, groups, ng, O);
  const int64_t n_subs = n_sort - nl.n_base;
  node_place_kernel<<<blocks_for(old.n + n_subs, 256), 256, 0, s>>>(nl, n_subs, old, groups, ng, D, O, tot, *nodes);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: node order kernels");
  return RDX_OK;
}

/* The new nodes written in BFS order into nodes (by *order, unless place_nodes did) and linked. */
rdx_status put_nodes(rdx_context *ctx, qlist nl, const int64_t *order, int64_t n_sort, rdx_sp_nodes *nodes, qtot *tot) {
  cudaStream_t s = rdx_stream(ctx);
  if (order) node_put_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nl, order, tot, *nodes);
  node_link_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(*nodes, nl.n_base, tot);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_points update: node kernels");
  return RDX_OK;
}

/* The final wait, whose totals (*H) say whether the tree holds together, and the nodes' count. */
rdx_status read_nodes(rdx_context *ctx, qlist nl, rdx_sp_nodes *nodes, qtot *tot, qtot *H, const char *fn) {
  RDX_CHECK(to_host(ctx, H, tot, 1, fn));
  if (H->bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the new tree is inconsistent (check %llu)", fn, H->bad);
  nodes->n = nl.n_base + (int64_t)H->subused;
  return RDX_OK;
}

/* ---- a pool not in Morton order ---- */

__global__ void leaf_len_kernel(rdx_sp_nodes N, int64_t *len) {
  SP_FOR(u, N.n) len[u] = N.leaf[u] ? N.len[u] : 0;
}
/* The live slots, as (code, slot) sort entries at their leaf's offset. */
template <typename T, typename K>
__global__ void live_slots_kernel(rdx_sp_nodes N, const int64_t *off, pcodes<T, K> pkey, K *k, int64_t *slot) {
  for_leaf_slots(N, [&](int64_t u, int64_t j, int64_t s) {
    k[off[u] + j] = pkey[s];
    slot[off[u] + j] = s;
  });
}
template <typename T, typename K>
__global__ void gather_kernel(const int64_t *slot, const K *k, int64_t n, const T *ox, const T *oy, const uint64_t *oid, T *x,
                              T *y, uint64_t *id, K *key) {
  SP_FOR(i, n) {
    int64_t s = slot[i];
    x[i] = ox[s], y[i] = oy[s], id[i] = oid[s], key[i] = k[i];
  }
}

/* The update, for pool coordinates T and codes K. */
template <typename T, typename K>
rdx_status update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  const int64_t m = b->m, nn = pts->nodes.n, cap = pts->cap;
  const int D = pts->depth, op = b->op;
  const int64_t m_new = op == RDX_SP_ERASE ? 0 : m;
  f->bad_row = -1;
  if (m >= ((int64_t)1 << 32)) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: a batch of %lld rows", fn, (long long)m);
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "qt update: start");

  /* the old pool in Morton order: the index's own, or sorted here from its leaves */
  rdx_sp_pool src = pts->pool;
  rdx_sp_pool sorted_src;
  memset(&sorted_src, 0, sizeof sorted_src);
  const int64_t n_old = pts->n;
  if (!pts->sorted && n_old > 0) {
    scratch rs(ctx); /* once per index: outside the arena, which would keep it */
    int64_t *len, *off, *slot, *slot2;
    K *k1, *k2;
    RDX_CHECK(rs.get(&len, (size_t)nn, fn));
    RDX_CHECK(rs.get(&off, (size_t)nn, fn));
    RDX_CHECK(rs.get(&slot, (size_t)n_old, fn));
    RDX_CHECK(rs.get(&slot2, (size_t)n_old, fn));
    RDX_CHECK(rs.get(&k1, (size_t)n_old, fn));
    RDX_CHECK(rs.get(&k2, (size_t)n_old, fn));
    leaf_len_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, len);
    RDX_CHECK(rs.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceScan::ExclusiveSum(tmp, bytes, len, off, nn, s); }));
    live_slots_kernel<T, K><<<blocks_for(nn * 32, 256), 256, 0, s>>>(pts->nodes, off, pcodes_of<T, K>(pts), k1, slot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: live slots kernel");
    cub::DoubleBuffer<K> kb(k1, k2);
    cub::DoubleBuffer<int64_t> sb(slot, slot2);
    RDX_CHECK(rs.cub(fn, [&](void *tmp, size_t &bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, sb, n_old, 0, 2 * D, s);
    }));
    RDX_CHECK(rdx_sp_pool_alloc(ctx, n_old, pts->f64, (int)sizeof(K), &sorted_src));
    gather_kernel<T, K><<<blocks_for(n_old, 256), 256, 0, s>>>(sb.Current(), kb.Current(), n_old, (const T *)src.x,
                                                               (const T *)src.y, src.id, (T *)sorted_src.x,
                                                               (T *)sorted_src.y, sorted_src.id, (K *)sorted_src.key);
    rdx_status st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: gather kernel");
    if (st != RDX_OK) {
      rdx_sp_pool_free(ctx, &sorted_src);
      return st;
    }
    src = sorted_src;
    rdx_trace(ctx, "qt update: pool sorted");
  }
  /* frees the sorted copy on every return from here */
  pool_hold guard{ctx, &sorted_src};

  /* 1: the batch */
  qtot *tot;
  mrows<K> r;
  RDX_CHECK(merge_rows_alloc(mm, pts, b, src.id, n_old, &r, fn));
  RDX_CHECK(mm.get(&tot, 1, fn));
  RDX_CUDA(ctx, sp_fill(tot, sizeof *tot, 0, s), fn);
  rows_kernel<K><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, b->xy, pts->f64, m, pts->id_end, pts->live, r.claim,
                                                    b->check_xy, pts->grid, r.k, r.row, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  rdx_trace(ctx, "qt update: rows");
  RDX_CHECK(sort_batch(mm, m_new, 0, 2 * D, &r.k, r.k2, &r.row, r.row2, fn));
  rdx_trace(ctx, "qt update: batch sort");

  /* 2: the merge into a new pool */
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  pool_hold np_guard{ctx, &np}; /* freed on failure; emptied (kept) on success */
  int64_t n_new = 0;
  RDX_CHECK((merge_into<T, K>)(mm, pts, b, src, n_old, r, &tot->bad, &np, &n_new, fn));
  rdx_trace(ctx, "qt update: merge");

  /* 3: the nodes */
  const K *keys = (const K *)np.key;
  int64_t *parent, *A, *C;
  uint8_t *have;
  qnode *tn;
  qgroup *groups;
  int64_t *kidx;
  RDX_CHECK(mm.get(&parent, (size_t)nn, fn));
  RDX_CHECK(mm.get(&A, (size_t)nn, fn));
  RDX_CHECK(mm.get(&C, (size_t)nn, fn));
  RDX_CHECK(mm.get(&kidx, (size_t)nn, fn));
  RDX_CHECK(mm.get(&have, (size_t)nn, fn));
  RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
  RDX_CHECK(mm.get(&groups, (size_t)(4 * nn), fn));
  const unsigned gn = blocks_for(nn, 256);
  count_kernel<K><<<gn, 256, 0, s>>>(pts->nodes, keys, n_new, D, parent, have, A, C);
  rdx_trace(ctx, "qt update: node counts");
  decide_kernel<K><<<gn, 256, 0, s>>>(pts->nodes, keys, parent, have, A, C, D, cap, tn, kidx, groups, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  /* the split subtrees launched ahead of the plan's read, as update_paged does */
  qspec sp = ahead_room(pts, m_new, tot);
  qnode *sub = NULL;
  qorder O;
  if (sp.t) {
    sp.surv = ~0ull; /* the merge has no survivor lists */
    const sublists<K> L = {keys, n_new, nullptr, 0, 0, 0, 0};
    RDX_CHECK(launch_ahead(mm, sp, tot, pts->nodes, kidx, D, cap, groups, L, &sub, &O, [] {}, fn));
    rdx_trace(ctx, "qt update: split subtrees launched ahead");
  }
  qtot H;
  int go;
  RDX_CHECK(read_plan(ctx, pts, b, f, mm, tot, sp, &H, &go, fn)); /* the host's wait */
  rdx_trace(ctx, "qt update: plan");
  if (!go) return RDX_OK;
  const int ran_ahead = ahead_done(pts, sp, H, m_new);
  const int64_t n_base = (int64_t)H.nodes, ng = (int64_t)H.groups, n_sort = n_base + (int64_t)H.subnodes;
  if (rdx_trace_on())
    fprintf(stderr, "[raydex trace] qt update: %lld rows, %lld nodes, %lld kept, %lld groups (%llu splits, %llu new), "
            "%llu merges; split subtrees %s\n", (long long)m, (long long)nn, (long long)n_base, (long long)ng, H.splits,
            H.new_leaves, H.merges, ran_ahead ? "ran ahead" : sp.t ? "did not fit ahead" : "not ahead");
  double t1 = rdx_now_ms();

  if (!ran_ahead) {
    RDX_CHECK(mm.get(&sub, (size_t)(n_sort - n_base) + 1, fn));
    RDX_CHECK(order_alloc(mm, kidx, nn, ng, n_sort, D, &O, fn));
  }
  const qlist nl = {tn, sub, n_base};
  if (ng > 0 && !ran_ahead) {
    RDX_CUDA(ctx, sp_fill(sub, (size_t)(n_sort - n_base) * sizeof(qnode), 0xFFFFFFFFu, s), fn);
    const sublists<K> L = {keys, n_new, nullptr, 0, 0, 0, 0};
    split_tree_kernel<K><<<blocks_for(ng, 1), SPLIT_THREADS, 0, s>>>(groups, ng, L, D, cap, sub, O.Q, tot, qspec{});
    SP_LAUNCH_CHECK(ctx, "rdx_points update: split tree kernel");
    rdx_trace(ctx, "qt update: split subtrees");
  }
  int64_t *order = NULL;
  if (!O.kloc) {
    node_keys_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nl, n_sort, 2 * D + 6 <= 64, D, O.nk, O.ni);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: node keys kernel");
    RDX_CHECK(sort_nodes(mm, nl, n_sort, D, O, &order, fn));
  }
  /* memory the index keeps: the nodes (room for the subtrees' bound; n set at the end) and a
   * larger live-id bitmap for inserts past it */
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_sort, RDX_DEVICE, &nodes));
  uint32_t *nlive = NULL;
  int64_t nlive_bits = 0;
  rdx_status st = live_grow(ctx, pts, b, &nlive, &nlive_bits, fn);
  double t2 = rdx_now_ms();
  rdx_trace(ctx, "qt update: allocations (and the node sort, when sorting)");

  /* 4: the new nodes, checked; then the swap. Only device errors can fail from here on. */
  if (st == RDX_OK && O.kloc) st = place_nodes(ctx, nl, n_sort, pts->nodes, groups, ng, D, O, tot, &nodes);
  if (st == RDX_OK) st = put_nodes(ctx, nl, order, n_sort, &nodes, tot);
  if (st == RDX_OK) st = read_nodes(ctx, nl, &nodes, tot, &H, fn);
  rdx_trace(ctx, "qt update: nodes put and linked, read");
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    if (nlive) rdx_mem_free(ctx, nlive);
    return st;
  }
  RDX_CHECK(merge_swap(ctx, pts, b, nlive, nlive_bits, nodes, &np, n_new));
  rdx_sp_stats *S = &pts->stats;
  S->splits = (int64_t)H.splits, S->merges = (int64_t)H.merges, S->relocated = 0, S->new_leaves = (int64_t)H.new_leaves;
  f->n_inplace = -1; /* not tracked: a merge moves every point */
  RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
  double t3 = rdx_now_ms();
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = t3 - t2, S->phase_ms[3] = 0;
  mm.settle();
  return RDX_OK;
}

/* ==== the paged path: G-PICS's leaf lists, repaired where they change ==== */

/* 1. One thread per batch row: the ids checked against the id map, the slots they vacate (a
 * dead bit each), and the incoming (code, row) sort entries. A live id has a slot of its own, so
 * a slot's bit set twice is an id named twice (bad bit 1). Claim bits by id, a second atomic a
 * row, made this L2-bound kernel 70 us instead of 57-60 at 10% on an H200 (PROBES.md §29). Bad
 * rows get entries too (the batch is then dropped before anything of the index changes). */
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
    ikey[i] = 0, irow[i] = (uint32_t)i;
    row_code(xy, f64, i, check_xy, g, tot, &ikey[i]);
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
    lf[u] = (uint8_t)rdx_sp_qt_leaf(N.count[u] - Q.removed(N, u) + c, N.level[u], D, cap);
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

/* 3. One thread per old node, by the rule of a fresh build (decide_kernel): a leaf that stays
 * one keeps its page when its points fit in its room (PG_KEPT); a leaf that outgrew its room
 * and a merge (an internal node that becomes a leaf) get a new page (PG_MOVED); a leaf that
 * splits and points in quadrants that had no node become groups, whose subtrees
 * split_tree_kernel builds. */
template <typename K>
__global__ void pg_decide_kernel(rdx_sp_nodes N, const K *ik, const int64_t *parent, const uint8_t *have, pgcount Q, int D,
                                 int64_t cap, int64_t page_base, pgfree F, qnode *tn, int64_t *kidx, qgroup *groups,
                                 pgold O, qtot *tot) {
  SP_FOR(u, N.n) {
    O.soff[u] = -1, O.mto[u] = -1, kidx[u] = -1;
    const int64_t c = Q.after(N, u), r = Q.removed(N, u), surv = N.leaf[u] ? N.count[u] - r : 0;
    int64_t top = -1; /* the new leaf above u: its highest ancestor that the rule makes a leaf */
    for (int64_t a = parent[u]; a >= 0; a = parent[a])
      if (Q.lf[a]) top = a;
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
    if (rdx_sp_qt_leaf(c, l, D, cap)) {
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
                                                           K *sk, uint32_t *ss, qtot *tot, qspec sp) {
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
  if (sp.t) {
    if (!sp.fits(*sp.t)) return;
    n = (int64_t)sp.t->splits;
  }
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
 * to dsurv[j], sorted batch entry j to dinc[j] (in that order fresh pages fill in runs), and
 * the tail moves of kept leaves and the survivors of
 * moved leaves, entry x from slot msrc[x] (or none: ~0u) to mdst[x]. */
struct pgdst {
  uint32_t *dsurv, *dinc, *msrc, *mdst;
};

/* The new node q's plan (one warp). A fresh leaf sends its survivors and incoming to its page; a
 * moved leaf its incoming after the survivors pg_plan_old sends. A kept leaf with removals or
 * incoming is repaired in place: holes below its new length take the incoming first, then the
 * points of its tail, and incoming left over are appended (G-PICS's Leaf-Lists-Update with
 * paging: moved-in points fill the holes moved-out points left). */
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
  const int64_t f = q.fpos, head = c < len0 ? c : len0;
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

/* One warp per new node of [e0, e1) (its plan, and its BFS sort key for sort_nodes), then, with
 * old, one per old node. */
__global__ void pg_plan_kernel(qlist L, int64_t e0, int64_t e1, int old, int packed, int D, uint64_t *nkey,
                               int64_t *nidx, rdx_sp_nodes N, const int64_t *rl, pgold O, const uint32_t *dead, pgdst P,
                               qtot *tot) {
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32, n = e1 - e0, all = n + (old ? N.n : 0);
  for (int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < all; i += warps) {
    if (i < n) {
      const int64_t e = e0 + i;
      const qnode q = L.at(e);
      if (nkey && (threadIdx.x & 31) == 0) node_key(q, e, packed, D, nkey, nidx); /* for sort_nodes */
      pg_plan_new(q, dead, P, tot);
    } else {
      pg_plan_old(N, i - n, rl, O, dead, P, tot);
    }
  }
}
/* pg_plan_kernel over the new nodes [e0, e1), and the old nodes with old. */
static void pg_plan(cudaStream_t s, qlist L, int64_t e0, int64_t e1, int old, int D, const qorder &QO,
                    const rdx_sp_nodes &N, const int64_t *rl, const pgold &O, const uint32_t *dead, const pgdst &P,
                    qtot *tot) {
  const int64_t warps = e1 - e0 + (old ? N.n : 0);
  pg_plan_kernel<<<blocks_for(warps * 32, 256), 256, 0, s>>>(L, e0, e1, old, 2 * D + 6 <= 64, D, QO.nk, QO.ni, N, rl, O,
                                                            dead, P, tot);
}

/* The pool and the batch as pg_move_kernel reads and writes them. */
template <typename T, typename K>
struct pgio {
  T *x, *y;
  uint64_t *id;
  K *key;             /* NULL: the pool keeps no codes (rdx_sp_qt_relayout_cuda's) */
  uint64_t *slot;
  const T *bxy;       /* the batch's points */
  const void *ids;    /* NULL for inserts: ids first_id + row */
  int ids64;
  uint64_t first_id;
  const K *ik;        /* sorted batch codes and their rows */
  const uint32_t *irow;
  const uint32_t *ss; /* sorted survivors' slots */
  __device__ void from_slot(int64_t d, int64_t sl) const {
    uint64_t v = id[sl];
    x[d] = x[sl], y[d] = y[sl], id[d] = v;
    if (key) key[d] = key[sl];
    slot[v] = (uint64_t)d;
  }
  __device__ void from_batch(int64_t d, int64_t j) const {
    const uint32_t r = irow[j];
    const uint64_t v = ids ? id_at(ids, ids64, r) : first_id + r;
    x[d] = bxy[2 * (int64_t)r], y[d] = bxy[2 * (int64_t)r + 1], id[d] = v;
    if (key) key[d] = ik[j];
    slot[v] = (uint64_t)d;
  }
};

/* One thread per point that moves: survivors, batch entries, entries of the move list. Every destination is a hole, an appended slot or a new page, written once; no
 * source is a destination. */
template <typename T, typename K>
__global__ void pg_move_kernel(pgio<T, K> P, pgdst D, int64_t n_surv, int64_t m_new, int64_t n_moves) {
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
rdx_status pg_grow_pool(rdx_context *ctx, rdx_points *pts, int64_t cap, int key_bytes) {
  const char *fn = "rdx_points update: pool growth";
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, cap, pts->f64, key_bytes, &np));
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

/* The paged update, for pool coordinates T and codes K. The pool has room per leaf and an id
 * map (rdx_sp_relayout gave them). */
template <typename T, typename K>
rdx_status update_paged(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  const int64_t m = b->m, nn = pts->nodes.n, cap = pts->cap;
  const int D = pts->depth, op = b->op;
  const int64_t m_new = op == RDX_SP_ERASE ? 0 : m;
  f->bad_row = -1;
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "qt paged update: start");

  /* 1: the batch. Zeroed scratch in one block (one memset): the totals, the merges' fill
   * counters and the dead bits of slots below the pool's used end (a growth after the wait
   * copies only those). */
  const int64_t dead_words = pts->pool.used / 32 + 1;
  const size_t tot_bytes = (sizeof(qtot) + 15) & ~(size_t)15;
  const size_t zero_bytes = tot_bytes + (size_t)nn * 8 + (size_t)dead_words * 4; /* words */
  char *zero;
  RDX_CHECK(mm.get(&zero, zero_bytes, fn));
  RDX_CUDA(ctx, sp_fill(zero, zero_bytes, 0, s), fn);
  rdx_trace(ctx, "qt paged update: scratch zeroed");
  qtot *tot = (qtot *)zero;
  unsigned long long *mfill = (unsigned long long *)(zero + tot_bytes);
  uint32_t *dead = (uint32_t *)(mfill + nn);
  K *ik = NULL, *ik2 = NULL;
  uint32_t *irow = NULL, *irow2 = NULL;
  if (m_new > 0) {
    RDX_CHECK(mm.get(&ik, (size_t)m, fn));
    RDX_CHECK(mm.get(&ik2, (size_t)m, fn));
    RDX_CHECK(mm.get(&irow, (size_t)m, fn));
    RDX_CHECK(mm.get(&irow2, (size_t)m, fn));
  }
  /* the plan's scratch over the old nodes (2), taken before the first fork */
  int64_t *parent, *A, *ci, *rl, *rs;
  pgold O;
  uint8_t *have, *lf;
  qnode *tn;
  qgroup *groups;
  int64_t *kidx;
  int64_t **arrays[] = {&parent, &A, &ci, &rl, &rs, &kidx, &O.soff, &O.mto, &O.mpos, &O.moff, &O.mpage, &O.split};
  for (int64_t **a : arrays) RDX_CHECK(mm.get(a, (size_t)nn, fn));
  O.mfill = mfill;
  RDX_CHECK(mm.get(&O.pend, (size_t)(2 * nn), fn));
  RDX_CHECK(mm.get(&have, (size_t)nn, fn));
  RDX_CHECK(mm.get(&lf, (size_t)nn, fn));
  RDX_CHECK(mm.get(&tn, (size_t)nn, fn));
  RDX_CHECK(mm.get(&groups, (size_t)(4 * nn), fn));
  pg_rows_kernel<K><<<blocks_for(m, 256), 256, 0, s>>>(op, b->ids, b->ids64, b->xy, pts->f64, m, pts->id_end, pts->slot,
                                                       b->check_xy, pts->grid, ik, irow, dead, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  rdx_trace(ctx, "qt paged update: rows");
  /* The removals per leaf need only the dead bits: they run beside the batch's sort, which at
   * these sizes leaves most of the GPU idle. */
  side_by_side fork{ctx};
  RDX_CHECK(fork.start(fn));
  const unsigned gn = blocks_for(nn, 256);
  pg_links_kernel<<<blocks_for(nn * 32, 256), 256, 0, fork.aux>>>(pts->nodes, dead, rl, rs, parent, have);
  pg_up_kernel<<<gn, 256, 0, fork.aux>>>(pts->nodes, rl, parent, rs);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: removal kernels");
  RDX_CHECK(sort_batch(mm, m_new, 0, 2 * D, &ik, ik2, &irow, irow2, fn));
  RDX_CHECK(fork.join(fn));
  rdx_trace(ctx, "qt paged update: batch sort, removals per leaf and up the tree beside it");

  /* 2: the plan over the old nodes */
  /* The decisions take reused pages: their counts come back unless the writes start. */
  const pgfree F = pfree_of(pts);
  struct pfree_guard {
    rdx_context *c;
    int32_t *cnt, *saved;
    int k;
    ~pfree_guard() {
      if (saved) (void)cudaMemcpyAsync(cnt, saved, (size_t)k * 4, cudaMemcpyDeviceToDevice, rdx_stream(c));
    }
  } fguard{ctx, F.cnt, NULL, F.K};
  if (F.K > 0) {
    int32_t *saved;
    RDX_CHECK(mm.get(&saved, (size_t)F.K, fn));
    RDX_CUDA(ctx, cudaMemcpyAsync(saved, F.cnt, (size_t)F.K * 4, cudaMemcpyDeviceToDevice, s), fn);
    fguard.saved = saved;
  }
  const pgcount Q = {rl, rs, A, ci, lf};
  pg_incoming_kernel<K><<<gn, 256, 0, s>>>(pts->nodes, ik, m_new, D, cap, Q, A, ci, lf);
  rdx_trace(ctx, "qt paged update: incoming per node");
  const int64_t page_base = pts->pool.used; /* new pages from here (a growth after the wait keeps used) */
  pg_decide_kernel<K><<<gn, 256, 0, s>>>(pts->nodes, ik, parent, have, Q, D, cap, page_base, F, tn, kidx, groups, O, tot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  rdx_trace(ctx, "qt paged update: decisions");
  /* A second stream from here, for the placement plan of the nodes the decisions listed and of
   * the old leaves (4), which needs neither the split work below nor the host's read. */
  RDX_CHECK(fork.start(fn));

  /* 3: the split leaves' sort and subtrees, launched ahead of the host's read of the plan (a
   * peek on a side stream) on scratch sized from the last batch, so the GPU does not wait while
   * the host reads and allocates (it waited about 60 us there in a 5% batch on an H200; medians
   * fell about 30 us at 3-5%: PROBES.md section 27). They write
   * only scratch, the totals and the reused pages' stacks (which the guard restores), and run
   * only if the plan fits the scratch (qspec); if not, the host launches them again with exact
   * sizes. */
  const int block_sort = cap <= 4096; /* split leaves sorted one block each (pg_sort_split_kernel) */
  qspec sp = block_sort ? ahead_room(pts, m_new, tot) : qspec{};
  K *sk = NULL, *sk2 = NULL;
  uint32_t *ss = NULL, *ss2 = NULL;
  qnode *sub = NULL;
  qorder QO;
  /* The split leaves' survivors sorted one block each, in the shape that covers the capacity:
   * n of them, or (q.t) as many as the plan will say. */
  auto sort_split = [&](unsigned grid, int64_t n, qspec q) {
    const pcodes<T, K> pk = pcodes_of<T, K>(pts);
    if (cap <= 1024)
      pg_sort_split_kernel<T, K, 256, 4><<<grid, 256, 0, s>>>(pts->nodes, O.split, n, O.soff, rl, dead, pk, D, sk, ss, tot, q);
    else
      pg_sort_split_kernel<T, K, 512, 8><<<grid, 512, 0, s>>>(pts->nodes, O.split, n, O.soff, rl, dead, pk, D, sk, ss, tot, q);
  };
  if (sp.t) {
    RDX_CHECK(mm.get(&sk, (size_t)sp.surv, fn));
    RDX_CHECK(mm.get(&ss, (size_t)sp.surv, fn));
    const sublists<K> L = {sk, 0, ik, m_new, page_base, 1, block_sort, F};
    RDX_CHECK(launch_ahead(mm, sp, tot, pts->nodes, kidx, D, cap, groups, L, &sub, &QO,
                           [&] { sort_split(sp.blocks, 0, sp); }, fn));
    rdx_trace(ctx, "qt paged update: split work launched ahead");
  }
  qtot H;
  int go;
  RDX_CHECK(read_plan(ctx, pts, b, f, mm, tot, sp, &H, &go, fn)); /* the host's wait */
  rdx_trace(ctx, "qt paged update: the host read the plan");
  if (!go) return RDX_OK;
  const int ran_ahead = ahead_done(pts, sp, H, m_new);
  const int64_t n_base = (int64_t)H.nodes, ng = (int64_t)H.groups, n_sort = n_base + (int64_t)H.subnodes;
  const int64_t n_surv = (int64_t)H.surv;
  if (rdx_trace_on())
    fprintf(stderr, "[raydex trace] qt paged update: %lld rows, %lld nodes, %lld kept, %lld groups (%llu splits, %llu new, "
            "%llu relocated), %llu merges, %lld survivors moved, %llu holes, %llu page slots; split work %s\n",
            (long long)m, (long long)nn, (long long)n_base, (long long)ng, H.splits, H.new_leaves, H.relocs, H.merges,
            (long long)n_surv, H.holes, H.pages, ran_ahead ? "ran ahead" : sp.t ? "did not fit ahead" : "not ahead");
  double t1 = rdx_now_ms();

  /* 3: room. A larger pool or id map changes nothing visible, so either may be swapped in before
   * the first write, and everything else this update needs is allocated before it too. H.pages
   * bounds the slots new pages take from the free end: the split groups' subtrees are not built
   * yet, and their bound allows a leaf for every node a group might have, several times what
   * they take. So when the free end is short of the bound, the pool grows only if the pages
   * really taken, read once the subtrees are built, do not fit (in 4). */
  const int64_t free_end = pts->pool.cap - page_base;
  const int maybe_short = (int64_t)H.pages > free_end;
  if (op == RDX_SP_INSERT && (int64_t)(b->first_id + (uint64_t)m) > pts->slot_cap) {
    int64_t want = (int64_t)(b->first_id + (uint64_t)m);
    RDX_CHECK(pg_grow_slots(ctx, pts, want + want / 2 + 64));
  }
  const int64_t cap_slots = pts->pool.cap;
  if (cap_slots >= ((int64_t)1 << 32)) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: paged pool past 2^32 slots", fn);
  pgdst dst;
  const int64_t n_moves = (int64_t)H.holes;
  if (n_surv > 0 && !ran_ahead) {
    RDX_CHECK(mm.get(&sk, (size_t)n_surv, fn));
    RDX_CHECK(mm.get(&ss, (size_t)n_surv, fn));
    if (!block_sort) {
      RDX_CHECK(mm.get(&sk2, (size_t)n_surv, fn));
      RDX_CHECK(mm.get(&ss2, (size_t)n_surv, fn));
    }
  }
  const int fresh0 = mm.n;
  RDX_CHECK(mm.get(&dst.dsurv, (size_t)n_surv + 1, fn));
  RDX_CHECK(mm.get(&dst.dinc, (size_t)m_new + 1, fn));
  RDX_CHECK(mm.get(&dst.msrc, (size_t)n_moves + 1, fn));
  RDX_CHECK(mm.get(&dst.mdst, (size_t)n_moves + 1, fn));
  const int lists_from_arena = mm.n == fresh0;
  if (!ran_ahead) {
    RDX_CHECK(mm.get(&sub, (size_t)(n_sort - n_base) + 1, fn));
    RDX_CHECK(order_alloc(mm, kidx, nn, ng, n_sort, D, &QO, fn));
  }
  /* The plan of the listed and old nodes goes to the second stream, beside the split work, when
   * all it writes was there before the fork: its lists from the arena (memory allocated on this
   * stream after the fork is not the second stream's until this stream gets there), and no sort
   * keys (the node order by counts). */
  const int side = fork.aux != s && lists_from_arena && QO.kloc;
  rdx_trace(ctx, "qt paged update: pool room, scratch");
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  RDX_CHECK(rdx_sp_nodes_alloc(ctx, n_sort, RDX_DEVICE, &nodes));
  struct nodes_guard {
    rdx_context *c;
    rdx_sp_nodes *n;
    ~nodes_guard() { rdx_sp_nodes_free(c, n); }
  } ng_guard{ctx, &nodes};
  rdx_trace(ctx, "qt paged update: node order scratch, nodes");
  /* the CUB sorts' temporary storage, at its largest, before the first write */
  {
    cub::DoubleBuffer<K> kb2(sk, sk2);
    cub::DoubleBuffer<uint32_t> sb(ss, ss2);
    cub::DoubleBuffer<uint64_t> nkb(QO.nk, QO.nk2);
    cub::DoubleBuffer<int64_t> nib(QO.ni, QO.ni2);
    size_t b1 = 0, b2 = 0;
    if (!block_sort) RDX_CUDA(ctx, cub::DeviceRadixSort::SortPairs(nullptr, b1, kb2, sb, n_surv, 0, 2 * D, s), fn);
    if (!QO.kloc) RDX_CUDA(ctx, cub::DeviceRadixSort::SortPairs(nullptr, b2, nkb, nib, n_sort, 0, 64, s), fn);
    const size_t need = b1 > b2 ? b1 : b2;
    if (need > mm.temp_bytes || mm.temp == nullptr) {
      const size_t grow = need + need / 4 + 256;
      RDX_CHECK(mm.raw(&mm.temp, grow, fn));
      mm.temp_bytes = grow;
    }
  }
  double t2 = rdx_now_ms();
  rdx_trace(ctx, "qt paged update: allocations");

  /* 4: the split groups (into scratch), the placement plan, then the writes */
  rdx_status st = RDX_OK;
  const qlist nl = {tn, sub, n_base};
  const cudaStream_t ps = side ? fork.aux : s;
  if (n_moves > 0) st = rdx_cuda_ok(ctx, sp_fill(dst.msrc, (size_t)n_moves * 4, 0xFFFFFFFFu, ps), fn);
  if (st == RDX_OK) {
    pg_plan(ps, nl, 0, n_base, 1, D, QO, pts->nodes, rl, O, dead, dst, tot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: plan kernel");
  }
  const int64_t n_split = (int64_t)H.splits;
  const unsigned sgrid = (unsigned)(n_split < 65535 ? (n_split > 0 ? n_split : 1) : 65535);
  const int sort_here = st == RDX_OK && n_surv > 0 && !ran_ahead; /* the split leaves' survivors */
  if (sort_here && block_sort) {
    sort_split(sgrid, n_split, qspec{});
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: split sort kernel");
    rdx_trace(ctx, "qt paged update: split leaves sorted");
  } else if (sort_here) {
    pg_gather_kernel<T, K><<<blocks_for(nn * 32, 256), 256, 0, s>>>(pts->nodes, O.soff, rl, dead, pcodes_of<T, K>(pts), sk,
                                                                    ss, tot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: gather kernel");
    cub::DoubleBuffer<K> kb2(sk, sk2);
    cub::DoubleBuffer<uint32_t> sb(ss, ss2);
    if (st == RDX_OK)
      st = mm.cub(fn, [&](void *tmp, size_t &bytes) {
        return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb2, sb, n_surv, 0, 2 * D, s);
      });
    sk = kb2.Current(), ss = sb.Current();
  }
  if (st == RDX_OK && ng > 0 && !ran_ahead) {
    st = rdx_cuda_ok(ctx, sp_fill(sub, (size_t)(n_sort - n_base) * sizeof(qnode), 0xFFFFFFFFu, s), fn);
    const sublists<K> L = {sk, n_surv, ik, m_new, page_base, 1, block_sort, F};
    if (st == RDX_OK)
      split_tree_kernel<K><<<blocks_for(ng, 1), SPLIT_THREADS, 0, s>>>(groups, ng, L, D, cap, sub, QO.Q, tot, qspec{});
    rdx_trace(ctx, "qt paged update: split subtrees");
  }
  if (st == RDX_OK && maybe_short) { /* the pages taken, now known */
    unsigned long long taken = 0;
    st = to_host(ctx, &taken, &tot->pgused, 1, fn);
    if (st == RDX_OK && (int64_t)taken > free_end) {
      const int64_t want = page_base + (int64_t)taken;
      st = pg_grow_pool(ctx, pts, want + want / 4 + 65536, pts->pool.key_bytes);
      if (st == RDX_OK) pts->stats.growths++;
    }
    if (st == RDX_OK && pts->pool.cap >= ((int64_t)1 << 32))
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: paged pool past 2^32 slots", fn);
    if (st != RDX_OK) return st; /* nothing written: the guard gives the reused pages back */
  }
  /* the split subtrees' plan, once the rest of it is done */
  if (st == RDX_OK) {
    pg_plan(s, nl, n_base, n_sort, 0, D, QO, pts->nodes, rl, O, dead, dst, tot);
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: plan kernel");
  }
  if (st == RDX_OK) st = fork.join(fn);
  rdx_trace(ctx, "qt paged update: placement plan, the listed nodes' beside the split work");
  /* Only device errors can fail from here on. */
  fguard.saved = NULL; /* the reused pages are taken */
  /* The points' moves and the new nodes' order touch different memory: with the order by counts
   * (which reads no key the plan writes), the points move on a second stream beside it. The
   * order's small kernels go first, so the moves' large grids fill the GPU around them rather
   * than ahead of them. */
  int64_t *order = NULL;
  if (st == RDX_OK && QO.kloc) st = fork.start(fn);
  if (st == RDX_OK && QO.kloc) st = place_nodes(ctx, nl, n_sort, pts->nodes, groups, ng, D, QO, tot, &nodes);
  const cudaStream_t ms = fork.aux ? fork.aux : s;
  if (st == RDX_OK) {
    const pgio<T, K> P = {(T *)pts->pool.x, (T *)pts->pool.y, pts->pool.id, (K *)pts->pool.key, pts->slot,
                          (const T *)b->xy, op == RDX_SP_INSERT ? NULL : b->ids, b->ids64, b->first_id, ik, irow, ss};
    if (op == RDX_SP_ERASE) pg_erase_kernel<<<blocks_for(m, 256), 256, 0, ms>>>(b->ids, b->ids64, m, pts->slot);
    pg_move_kernel<T, K><<<blocks_for(n_surv + m_new + n_moves, 256), 256, 0, ms>>>(P, dst, n_surv, m_new, n_moves);
    if (F.K > 0) pg_free_kernel<<<1, 1024, 0, ms>>>(F, O.pend, tot); /* after the moves read the old pages */
    st = rdx_cuda_ok(ctx, cudaGetLastError(), "rdx_points update: place kernels");
  }
  if (st == RDX_OK && !QO.kloc) st = sort_nodes(mm, nl, n_sort, D, QO, &order, fn);
  if (st == RDX_OK) st = put_nodes(ctx, nl, order, n_sort, &nodes, tot);
  if (st == RDX_OK) st = fork.join(fn);
  rdx_trace(ctx, "qt paged update: moves, node order and links beside them");
  if (st == RDX_OK) st = read_nodes(ctx, nl, &nodes, tot, &H, fn);
  rdx_trace(ctx, "qt paged update: read");
  if (st != RDX_OK) return st; /* a device error: the index is unusable anyway */
  if (rdx_trace_on())
    fprintf(stderr, "[raydex trace] qt paged update: %llu slots from the free end (%lld left), %llu pages reused, %llu "
            "given up; planned %s\n", H.pgused, (long long)(pts->pool.cap - page_base - (int64_t)H.pgused), H.reused,
            H.freed, side ? "beside the split work" : "in order");
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->nodes = nodes;
  memset(&nodes, 0, sizeof nodes);
  pts->host_stale = 1;
  pts->pool.used = page_base + (int64_t)H.pgused;
  pts->sorted = 0;
  rdx_sp_stats *S = &pts->stats;
  S->splits = (int64_t)H.splits, S->merges = (int64_t)H.merges, S->relocated = (int64_t)H.relocs;
  S->new_leaves = (int64_t)H.new_leaves, S->reused_pages = (int64_t)H.reused;
  f->n_inplace = -1; /* not tracked: moves within a leaf fill holes like any incoming point */
  double t3 = rdx_now_ms();
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = t3 - t2, S->phase_ms[3] = 0;
  mm.settle();
  return RDX_OK;
}

}  // namespace

static rdx_status qt_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  if (pts->slot) {
    if (pts->f64)
      return pts->key64 ? update_paged<double, uint64_t>(ctx, pts, b, f) : update_paged<double, uint32_t>(ctx, pts, b, f);
    return pts->key64 ? update_paged<float, uint64_t>(ctx, pts, b, f) : update_paged<float, uint32_t>(ctx, pts, b, f);
  }
  if (pts->f64) return pts->key64 ? update<double, uint64_t>(ctx, pts, b, f) : update<double, uint32_t>(ctx, pts, b, f);
  return pts->key64 ? update<float, uint64_t>(ctx, pts, b, f) : update<float, uint32_t>(ctx, pts, b, f);
}

extern "C" rdx_status rdx_sp_qt_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f) {
  rdx_status st = qt_update(ctx, pts, b, f);
  rdx_trace_flush(ctx);
  return st;
}
