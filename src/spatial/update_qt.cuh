/*
 * update_qt.cuh: the new nodes of a quadtree after a batch, on the GPU, as both quadtree engines
 * make them (update_qt.cu's merge, update_paged.cu's paging): per old node its new count, and by
 * the leaf rule (rdx_sp_leaf) a decision per old node; nodes that split, and quadrants without a
 * node that receive points (G-PICS's materialisation), become groups whose subtrees
 * split_tree_kernel builds over the sorted codes, as a build would. The nodes then go to BFS
 * order (update.cuh, bfs_order): the kept ones are in it already, the subtrees' are sorted and
 * merged in. The result equals a fresh build's nodes with the same box.
 */
#ifndef RDX_SP_UPDATE_QT_CUH
#define RDX_SP_UPDATE_QT_CUH

#include "spatial/update.cuh"

namespace rdx_sp {

/* One node of the new tree before its BFS place. The paging engine (PG_*) also says how its leaves
 * get their points: a fresh leaf (of a split subtree) copies entries [a0, a0 + an) of the sorted
 * survivors and [b0, b0 + count - an) of the sorted batch into its new page; a moved leaf
 * receives a0 survivors from old leaves and then batch entries [b0, ...); a kept leaf fills the
 * holes of its page (a0: its old length, an: its removals, h0: its entries of the move list) from
 * batch entries [b0, ...) and its own tail. A subtree's node keeps its group in h0. */
enum { PG_NODE = 0, PG_KEPT = 1, PG_FRESH = 2, PG_MOVED = 3 };
struct qnode {
  uint64_t key;
  int64_t fpos, len, count, room;
  int64_t a0, an, b0, h0;
  int32_t level, leaf, kind; /* level -1: an unused entry */
};

/* A group: a cell at (level, key) holding `count` points whose subtree split_tree_kernel builds
 * into [nbase, nbase + n_nodes) of the subtree list (a bound; unused entries at level -1). */
struct qgroup {
  int64_t count, n_nodes, nbase;
  int64_t s0, sn; /* paging: its survivors' entries in the sorted survivors, or s0 = -1 */
  uint64_t key;
  int32_t level;
};

/* Totals the host reads (one copy). */
struct qtot {
  unsigned long long bad;   /* 1 a bad id (check_ids finds which); 4 a bad point (points.c's scan
                               finds which); internal checks: 2 points that do not match a count,
                               16 a subtree past its bound, 32 nodes out of BFS order or without
                               their children */
  unsigned long long nodes, groups, subnodes, subused, splits, merges, new_leaves;
  unsigned long long surv, pages, pgused, holes, relocs, freed, reused; /* paging */
};

static __device__ __forceinline__ rdx_sp_hnode as_hnode(const qnode &n) {
  return rdx_sp_hnode{n.key, n.fpos, n.len, n.count, n.room, 0.0, n.level, n.leaf};
}

/* The new nodes as one list: the kept ones (compacted, n_base) and then the subtrees' (a bound of
 * entries). */
struct qlist {
  const qnode *kept, *sub;
  int64_t n_base;
  __device__ qnode q(int64_t i) const { return i < n_base ? kept[i] : sub[i - n_base]; }
};

/* lower() by a whole warp (every lane calls it with the same arguments): 32 probes a round, so a
 * search of 2^24 codes takes 5 dependent loads instead of 24. Returns hi when no k >= v. */
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

__device__ __forceinline__ qnode make_node(uint64_t key, int level, int leaf, int64_t count, int64_t fpos) {
  qnode n;
  n.key = key, n.level = level, n.leaf = leaf, n.count = count;
  n.len = leaf ? count : 0, n.fpos = leaf ? fpos : 0, n.room = n.len;
  n.a0 = 0, n.an = 0, n.b0 = 0, n.h0 = 0, n.kind = PG_NODE;
  return n;
}
/* A node the decisions keep, at old node u's place; kidx[u] >= 0 marks it (bfs_order::compact). */
__device__ __forceinline__ void push_node(qnode *tn, qtot *tot, const qnode &n, int64_t *kidx, int64_t u) {
  kidx[u] = (int64_t)agg_add(&tot->nodes, 1ull);
  tn[u] = n;
}

/* A subtree to build at (level, key) for c points. Its node bound: each level below holds at
 * most c / (cap + 1) internal nodes, each with at most 4 children. */
__device__ __forceinline__ void push_group(qgroup *groups, qtot *tot, uint64_t key, int level, int64_t c, int D,
                                           int64_t cap, int64_t s0 = -1, int64_t sn = 0) {
  qgroup g;
  g.count = c, g.key = key, g.level = level, g.s0 = s0, g.sn = sn;
  g.n_nodes = 1 + 4 * (int64_t)(D - level) * (c / (cap + 1));
  g.nbase = (int64_t)agg_add(&tot->subnodes, (unsigned long long)g.n_nodes);
  agg_add(&tot->pages, (unsigned long long)(c + c / 2 + (8 + PAGE_UNIT) * g.n_nodes)); /* paging: its leaves' rooms */
  groups[agg_add(&tot->groups, 1ull)] = g;
}

/* Internal node u (level l) that stays: its quadrants without a node that receive points (codes
 * keys[a0, e0) of its cell) become groups (G-PICS's materialisation). */
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

/* The sorted codes subtrees are built over: the merged pool (a; b empty), or, paging, the
 * sorted survivors of the split leaves (a) and the sorted batch (b), whose leaves then take new
 * pages of room RDX_SP_GROW(points) from page_base up or reused ones (F). */
template <typename K>
struct sublists {
  const K *a;
  int64_t na;
  const K *b;
  int64_t nb;
  int64_t page_base;
  int paged;
  int ranges; /* a group's a-range is its s0, sn (else searched) */
  pgfree F;
};

/* Threads of a split_tree_kernel block: each warp takes one node of a level at a time, so the
 * deepest, widest group bounds the kernel, and more warps shorten it. */
enum { SPLIT_THREADS = 512 };

/* One block per group: its cell's ranges in both lists, then its subtree breadth first by the
 * build's split rule (rdx_sp_leaf; the quadrant bounds as rdx_sp_qt_quadrants finds them, here
 * one warp per node), its node region serving as the queue (a waiting node's a0, an, b0 hold its
 * ranges). Merge leaf fpos: the leaf's first pool slot. */
template <typename K>
__global__ void split_tree_kernel(const qgroup *groups, int64_t ng, sublists<K> L, int D, int64_t cap, qnode *out,
                                  qtot *tot) {
  const unsigned FULL = 0xffffffffu;
  __shared__ int64_t head, tail, next;
  __shared__ int wsum[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  for (int64_t g = blockIdx.x; g < ng; g += gridDim.x) {
    const qgroup G = groups[g];
    qnode *reg = out + G.nbase;
    if (warp == 0) {
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
        qnode r = make_node(G.key, G.level, 0, (e - a) + (f - b), 0);
        r.a0 = a, r.an = e - a, r.b0 = b, r.h0 = g;
        reg[0] = r;
        head = 0, tail = 1, next = 1;
      }
    }
    __syncthreads();
    while (head < tail) {
      const int64_t h = head, t = tail;
      for (int64_t base = h; base < t; base += nwarps) {
        const int64_t i = base + warp;
        bool child = false;
        qnode c;
        if (i < t) {
          qnode nd = reg[i];
          if (rdx_sp_leaf(nd.count, nd.level, D, cap)) {
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
            const int64_t na = lane < 4 ? ba[lane + 1] - ba[lane] : 0, nb = lane < 4 ? bb[lane + 1] - bb[lane] : 0;
            if (lane < 4 && na + nb > 0) {
              child = true;
              c = make_node(4 * nd.key + (uint64_t)lane, nd.level + 1, 0, na + nb, 0);
              c.a0 = ba[lane], c.an = na, c.b0 = bb[lane], c.h0 = nd.h0;
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

/* The host's mid-way read of the totals into *H: a bad point or id ends the update with nothing
 * changed (*go = 0; b->bad_xy, or b->bad_row from check_ids, says which); another check bit is an
 * internal error. */
static inline rdx_status read_plan(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, scratch &mm, const qtot *tot,
                                   qtot *H, int *go, const char *fn) {
  *go = 0;
  RDX_CHECK(to_host(ctx, H, tot, 1, fn));
  if (H->bad & 4) {
    b->bad_xy = 1;
    return RDX_OK;
  }
  if (H->bad & 1) return check_ids(ctx, pts, b, mm);
  if (H->bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: an internal check failed before the writes (check %llu)", fn, H->bad);
  *go = 1;
  return RDX_OK;
}

/* The final read: whether the new tree holds together (*H), and the nodes' count. */
static inline rdx_status read_nodes(rdx_context *ctx, int64_t n_base, rdx_sp_nodes *nodes, qtot *tot, qtot *H,
                                    const char *fn) {
  RDX_CHECK(to_host(ctx, H, tot, 1, fn));
  if (H->bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the new tree is inconsistent (check %llu)", fn, H->bad);
  nodes->n = n_base + (int64_t)H->subused;
  return RDX_OK;
}

}  // namespace rdx_sp

#endif /* RDX_SP_UPDATE_QT_CUH */
