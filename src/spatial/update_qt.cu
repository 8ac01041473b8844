/*
 * update_qt.cu: bulk moves, inserts and erases of a quadtree, all on the GPU (G-PICS Section 5,
 * Fig. 11). update.c's planned path (used by the k-d tree and the CPU) walks the nodes on the
 * host; here every step is a kernel and the host only reads a few totals:
 *
 *  1. classify_kernel, one thread per batch row (Movement-Check and Leaf-Finding): the old leaf
 *     by descent with the slot's stored code, the new place by descent with the new code: a leaf,
 *     or (5 v + 1 + q) a missing quadrant q of internal node v. A move that stays in its leaf is
 *     in place; the others count out of the old leaf and into the target (atomics, whose return
 *     value is the row's rank there). Nothing of the index is written.
 *  2. Plan, one thread per node (Node-Partitioning and Node-Merging): new counts (each node's
 *     change added up its ancestors, warp-aggregated), then the structure, each node looking up
 *     its ancestors, with the rule of a fresh build (leaf iff count <= capacity or at max
 *     depth; an empty quadrant is no node). Each point's destination is a *home*, named by a
 *     target: KEEP (a leaf repaired in place), EXT (a relocated leaf, a merged subtree or a new
 *     quadrant: a fresh extent with spare room at the pool's end) or SPLIT (an overfull leaf or
 *     quadrant: its points are gathered, sorted and built into a subtree as a build would).
 *  3. The host reads the totals (its one wait before the end): bad ids or points (then the caller
 *     words the error: check_ids, or points.c's scan), extents, split points, node bounds. Split
 *     points are gathered and sorted by code; one block per group builds its subtree breadth
 *     first; the new nodes are sorted into BFS order (level, key); all memory the index keeps
 *     (nodes, pool growth, id map growth) is then allocated. Up to here nothing of the index
 *     changed, so any failure leaves it as it was.
 *  4. Commit (Leaf-Lists-Update with paging): in place moves; in a KEEP leaf, incoming points fill
 *     the holes below the new length, live tail points fill the rest, surplus is appended; EXT
 *     homes take their stayers and incoming by atomic ranks; the sorted split points go to one
 *     region; the new nodes are linked.
 *
 * The nodes come out equal to a fresh build's with the same box (update.c says why); where each
 * leaf keeps its points, and their order inside a leaf, depend on the atomics' order.
 *
 * H200, 16.5M taxi-like points, leaf capacity 1024 (bench/results/NVIDIA-H200): 0.6 ms for 1% of
 * the points moved (a rebuild: 3.0-3.2 ms; the planned path: 8.6 ms), 1.9 ms for 10%. At 10% the
 * time is random accesses: the rows' descents and placements, and shrinking leaves' tails.
 */
#include <cooperative_groups.h>
#include <cooperative_groups/scan.h>

#include "spatial/update.cuh"

namespace {

using namespace rdx_sp;

enum { R_INPLACE = 0, R_MOVE = 1, R_ERASE = 2, R_INSERT = 3 };
enum { H_NONE = 0, H_KEEP = 1, H_EXT = 2, H_SPLIT = 3 };

#define QB 128 /* threads per block of the per-leaf kernels */

/* One node of the new tree before sorting. */
struct qnode {
  uint64_t key;
  int64_t fpos, len, count, room;
  int32_t level, leaf;
};

/* A split group: home t, a cell at (level, key) holding `count` points at sbase of the split
 * scratch; its subtree's nodes go to [nbase, nbase + n_nodes) of the split node list (a bound;
 * unused entries have level -1). */
struct qgroup {
  int64_t t, count, sbase, n_nodes, nbase;
  uint64_t key;
  int32_t level;
};

/* Totals the host reads after the plan (one copy). */
struct qtot {
  unsigned long long bad;   /* 1: a bad id (check_ids finds which); 4: a bad point (the caller's scan
                               finds which). Internal checks: 2 a point without a leaf, or a split
                               group whose points do not match its count; 8 an internal node
                               without children; 16 a subtree past its bound; 32 a home not
                               filled to its count */
  unsigned long long ext;   /* pool slots of EXT extents */
  unsigned long long s;     /* split points */
  unsigned long long groups, nodes, gathers[2], tails, inplace, subnodes, subused;
  unsigned long long splits, merges, relocated, new_leaves, live, root, tail_slots;
};

/* Per batch row. */
struct qrows {
  int64_t *slot, *leaf, *tgt, *rank;
  uint64_t *id, *code;
  double *x, *y;
  uint8_t *cls;
};

/* Per old node and per target (5 per node: the node itself, then its quadrants 0..3). */
struct qplan {
  int64_t nn;
  unsigned long long *cin;  /* [5 nn] incoming per target */
  unsigned long long *cout; /* [nn] removals per leaf */
  int64_t *cnt;             /* [nn] new count */
  int64_t *home;            /* [5 nn] the home of points arriving at a target (-1: none) */
  uint8_t *hkind;           /* [5 nn] H_* of a home */
  int64_t *hbase;           /* [5 nn] KEEP: leaf's first slot; EXT: offset past pool.used; SPLIT: scratch offset */
  int64_t *hcount;          /* [5 nn] points a home receives */
  unsigned long long *hfill;/* [5 nn] EXT and SPLIT fill counters */
  int64_t *gath[2];         /* old leaves whose stayers go to an EXT [0] or a SPLIT [1] home */
  int64_t *tails;           /* KEEP leaves that shrink (tail points fill holes) */
  qgroup *groups;
  qnode *tn;                /* nodes of the new tree, except split subtrees */
  qtot *tot;
};

namespace cg = cooperative_groups;

/* atomicAdd(ctr, v) for the threads that call it together, with one atomic per warp: many
 * threads append to the same few lists. Returns this thread's old value. */
__device__ __forceinline__ unsigned long long agg_add(unsigned long long *ctr, unsigned long long v) {
  cg::coalesced_group g = cg::coalesced_threads();
  unsigned long long pre = cg::exclusive_scan(g, v, cg::plus<unsigned long long>());
  unsigned long long base = 0;
  if (g.thread_rank() == g.size() - 1) base = atomicAdd(ctr, pre + v);
  return g.shfl(base, g.size() - 1) + pre;
}

__device__ __forceinline__ int bit_get(const uint32_t *b, int64_t s) { return (b[s >> 5] >> (s & 31)) & 1u; }

/* ---- 1. classify ---- */

/* The descent word of a node: first child (bits 0..39), the mask of quadrants that have a child
 * (40..43), leaf (44), level (48..55). A descent step is one load instead of one per array. */
#define DESC_FIRST ((1ull << 40) - 1)

/* rdx_sp_qt_find's answer, with one load per level, starting from the node at table cell
 * code >> tshift. */
__device__ __forceinline__ int64_t qt_find_fast(const uint64_t *desc, const int64_t *tab, int tshift, int D, uint64_t code,
                                                int *quadrant) {
  int64_t nd = tab[code >> tshift];
  for (;;) {
    uint64_t e = desc[nd];
    if (e >> 44 & 1) {
      *quadrant = -1;
      return nd;
    }
    int l = (int)(e >> 48 & 255), q = (int)(code >> (2 * (D - l - 1)) & 3);
    unsigned mask = (unsigned)(e >> 40 & 15);
    if (!(mask >> q & 1)) {
      *quadrant = q;
      return nd;
    }
    nd = (int64_t)(e & DESC_FIRST) + __popc(mask & ((1u << q) - 1));
  }
}

/* Per node: its descent word and its children's parent. And where descents start: for each
 * cell of level L0, the deepest node that holds it (a node at L0, a leaf above it, or an
 * internal node above it whose quadrant towards the cell is missing); each cell is written
 * once. Saves the L0 top levels of the two descents per batch row. */
__global__ void start_table_kernel(rdx_sp_nodes N, int L0, int64_t *tab, int64_t *parent, uint64_t *desc) {
  SP_FOR(u, N.n) {
    if (u == 0) parent[0] = -1;
    int have = 0;
    if (!N.leaf[u])
      for (int64_t c = N.fpos[u]; c < N.fpos[u] + N.len[u]; c++) {
        parent[c] = u;
        have |= 1 << (N.key[c] & 3);
      }
    int l = N.level[u];
    desc[u] = (N.leaf[u] ? 1ull << 44 : (uint64_t)N.fpos[u] | (uint64_t)have << 40) | (uint64_t)l << 48;
    if (l > L0) continue;
    uint64_t k = N.key[u];
    if (l == L0) {
      tab[k] = u;
    } else if (N.leaf[u]) {
      for (uint64_t c = k << (2 * (L0 - l)); c < (k + 1) << (2 * (L0 - l)); c++) tab[c] = u;
    } else {
      for (int q = 0; q < 4; q++) {
        if (have >> q & 1) continue;
        uint64_t qk = 4 * k + (uint64_t)q;
        for (uint64_t c = qk << (2 * (L0 - l - 1)); c < (qk + 1) << (2 * (L0 - l - 1)); c++) tab[c] = u;
      }
    }
  }
}

__global__ void classify_kernel(rdx_sp_view v, dpool pool, const uint64_t *slot, int op, const void *ids, int ids64,
                                const void *xy, int f64, int64_t m, uint64_t first_id, uint64_t id_end, uint32_t *touched,
                                uint32_t *gone, int check_xy, const uint64_t *desc, const int64_t *tab, int tshift, int D,
                                qplan P, qrows R) {
  SP_FOR(i, m) {
    uint64_t id = op == RDX_SP_INSERT ? first_id + (uint64_t)i : id_at(ids, ids64, i);
    int64_t s = -1, old = -1;
    if (op != RDX_SP_INSERT) {
      if (id >= id_end || slot[id] == RDX_SP_NONE) {
        atomicOr(&P.tot->bad, 1ull);
        continue;
      }
      s = (int64_t)slot[id];
      uint32_t bit = 1u << (s & 31);
      if (atomicOr(&touched[s >> 5], bit) & bit) { /* the id's second row */
        atomicOr(&P.tot->bad, 1ull);
        continue;
      }
      int q;
      old = qt_find_fast(desc, tab, tshift, D, pkey(pool, s), &q);
      if (q != -1) {
        atomicOr(&P.tot->bad, 2ull);
        continue;
      }
    }
    int cls = op == RDX_SP_ERASE ? R_ERASE : op == RDX_SP_INSERT ? R_INSERT : R_MOVE;
    int64_t t = -1, rank = 0;
    uint64_t code = 0;
    double x = 0, y = 0;
    if (cls != R_ERASE) {
      x = rdx_sp_at(xy, 2 * i, f64), y = rdx_sp_at(xy, 2 * i + 1, f64);
      if (check_xy && !(x >= v.g.x0 && x <= v.g.x1 && y >= v.g.y0 && y <= v.g.y1)) { /* NaN fails too */
        atomicOr(&P.tot->bad, 4ull);
        continue;
      }
      code = rdx_sp_point_key(&v.g, x, y);
      int q;
      int64_t nd = qt_find_fast(desc, tab, tshift, D, code, &q);
      t = 5 * nd + q + 1;
      if (cls == R_MOVE && t == 5 * old) cls = R_INPLACE;
    }
    if (cls == R_MOVE || cls == R_INSERT) rank = (int64_t)atomicAdd(&P.cin[t], 1ull);
    if (cls == R_MOVE || cls == R_ERASE) {
      atomicAdd(&P.cout[old], 1ull);
      atomicOr(&gone[s >> 5], 1u << (s & 31));
    }
    if (cls == R_INPLACE) agg_add(&P.tot->inplace, 1ull);
    R.slot[i] = s, R.leaf[i] = old, R.tgt[i] = t, R.rank[i] = rank;
    R.id[i] = id, R.code[i] = code, R.x[i] = x, R.y[i] = y, R.cls[i] = (uint8_t)cls;
  }
}

/* ---- 2. plan ---- */

__device__ void push_node(const qplan &P, uint64_t key, int level, int leaf, int64_t count, int64_t fpos, int64_t room) {
  qnode n;
  n.key = key, n.level = level, n.leaf = leaf, n.count = count;
  n.len = leaf ? count : 0, n.fpos = fpos, n.room = room;
  P.tn[agg_add(&P.tot->nodes, 1ull)] = n;
}

/* Home t becomes a fresh extent (a relocated or merged leaf, or a new quadrant). */
__device__ void home_ext(const qplan &P, int64_t t, uint64_t key, int level, int64_t c, int64_t used) {
  int64_t room = RDX_SP_GROW(c);
  int64_t off = (int64_t)agg_add(&P.tot->ext, (unsigned long long)room);
  P.hkind[t] = H_EXT, P.hbase[t] = off, P.hcount[t] = c;
  agg_add(&P.tot->live, (unsigned long long)room);
  push_node(P, key, level, 1, c, used + off, room);
}

/* Home t is split: its points are gathered and built into a subtree (split_tree_kernel) in a
 * node region of n_nodes entries, a bound: each level below holds at most c / (cap + 1)
 * internal nodes, each with at most 4 children. */
__device__ void home_split(const qplan &P, int64_t t, uint64_t key, int level, int64_t c, int D, int64_t cap) {
  qgroup g;
  g.t = t, g.count = c, g.key = key, g.level = level;
  g.n_nodes = 1 + 4 * (int64_t)(D - level) * (c / (cap + 1));
  g.nbase = (int64_t)agg_add(&P.tot->subnodes, (unsigned long long)g.n_nodes);
  g.sbase = (int64_t)agg_add(&P.tot->s, (unsigned long long)c);
  P.hkind[t] = H_SPLIT, P.hbase[t] = g.sbase, P.hcount[t] = c;
  P.groups[agg_add(&P.tot->groups, 1ull)] = g;
  agg_add(&P.tot->splits, 1ull);
  agg_add(&P.tot->live, (unsigned long long)c);
}

/* New counts: every node's own change (a leaf's incoming minus removals; an internal node's
 * points arriving in missing quadrants) added to it and its ancestors. Siblings are contiguous
 * in BFS order, so a warp's nodes share most ancestors: each step up, lanes with the same
 * ancestor add once, by their leader. */
__global__ void count_kernel(rdx_sp_nodes N, qplan P, const int64_t *parent, unsigned long long *acc) {
  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t base = (int64_t)blockIdx.x * blockDim.x; base < N.n; base += stride) {
    int64_t u = base + threadIdx.x;
    long long d = 0;
    if (u < N.n) {
      if (N.leaf[u]) d = (long long)P.cin[5 * u] - (long long)P.cout[u];
      else
        for (int q = 1; q < 5; q++) d += (long long)P.cin[5 * u + q];
    }
    int64_t a = u < N.n && d != 0 ? u : -1;
    while (__any_sync(FULL, a >= 0)) {
      long long sum = 0;
      int leader = a >= 0;
      for (int j = 0; j < 32; j++) {
        int64_t aj = __shfl_sync(FULL, a, j);
        long long dj = __shfl_sync(FULL, d, j);
        if (a >= 0 && aj == a) {
          sum += dj;
          if (j < lane) leader = 0;
        }
      }
      if (leader) atomicAdd(&acc[a], (unsigned long long)sum);
      d = sum;
      a = leader ? parent[a] : -1;
    }
  }
}

__global__ void new_count_kernel(rdx_sp_nodes N, qplan P, const unsigned long long *acc) {
  SP_FOR(u, N.n) {
    const int64_t c = N.count[u] + (long long)acc[u];
    P.cnt[u] = c;
    if (u == 0) P.tot->root = (unsigned long long)c;
  }
}
/* The structure, one thread per old node, top-down by looking up: a node inside a subtree whose
 * top becomes a leaf is merged into it (its points go to that top's home); an empty node other
 * than the root is no node; the others are decided by their own new count. */
__global__ void decide_kernel(rdx_sp_nodes N, qplan P, const int64_t *parent, int64_t cap, int D, int64_t used) {
  SP_FOR(u, N.n) {
    const int64_t t = 5 * u, c = P.cnt[u], f = N.fpos[u], n = N.len[u];
    const int leaf = N.leaf[u], l = N.level[u];
    const uint64_t key = N.key[u];
    int64_t r = -1; /* the topmost ancestor that becomes a leaf */
    for (int64_t a = parent[u]; a >= 0; a = parent[a])
      if (P.cnt[a] <= cap || (int)N.level[a] >= D) r = a;
    for (int q = 0; q < 5; q++) P.home[t + q] = -1;
    if (c == 0 && u != 0) continue; /* no points here: no node */
    if (r >= 0) { /* inside a merged subtree: everything goes to the merge's extent */
      for (int q = 0; q < 5; q++) P.home[t + q] = 5 * r;
      if (leaf && n > 0) P.gath[0][agg_add(&P.tot->gathers[0], 1ull)] = u;
    } else if (leaf) {
      P.home[t] = t;
      if (c > cap && l < D) {
        home_split(P, t, key, l, c, D, cap);
        if (n > 0) P.gath[1][agg_add(&P.tot->gathers[1], 1ull)] = u;
      } else if (c <= N.room[u]) {
        P.hkind[t] = H_KEEP, P.hbase[t] = f, P.hcount[t] = c;
        agg_add(&P.tot->live, (unsigned long long)N.room[u]);
        push_node(P, key, l, 1, c, f, N.room[u]);
        if ((int64_t)P.cin[t] < (int64_t)P.cout[u]) {
          P.tails[agg_add(&P.tot->tails, 1ull)] = u;
          agg_add(&P.tot->tail_slots, P.cout[u] - P.cin[t]);
        }
      } else {
        agg_add(&P.tot->relocated, 1ull);
        home_ext(P, t, key, l, c, used);
        if (n > 0) P.gath[0][agg_add(&P.tot->gathers[0], 1ull)] = u;
      }
    } else if (c <= cap || l >= D) { /* merge: the subtree and its incoming become one leaf */
      agg_add(&P.tot->merges, 1ull);
      for (int q = 0; q < 5; q++) P.home[t + q] = t;
      home_ext(P, t, key, l, c, used);
    } else { /* stays internal; points arriving in missing quadrants materialise them */
      push_node(P, key, l, 0, c, 0, 0);
      for (int q = 0; q < 4; q++) {
        int64_t k = (int64_t)P.cin[t + 1 + q];
        if (k == 0) continue;
        P.home[t + 1 + q] = t + 1 + q;
        agg_add(&P.tot->new_leaves, 1ull);
        if (k <= cap || l + 1 >= D) home_ext(P, t + 1 + q, 4 * key + (uint64_t)q, l + 1, k, used);
        else home_split(P, t + 1 + q, 4 * key + (uint64_t)q, l + 1, k, D, cap);
      }
    }
  }
}

/* ---- 3. split groups: gather, sort, subtrees ---- */

/* The destination of the rows and stayers of one kind of home: the split scratch (SPLIT) or the
 * pool past `used` (EXT). */
struct qdst {
  int kind;
  double *sx, *sy;
  uint64_t *sid, *scode;
  dpool pool;
  int64_t used;
  uint64_t *slot;
};

__device__ __forceinline__ void put_point(const qdst &d, int64_t p, double x, double y, uint64_t id, uint64_t code) {
  if (d.kind == H_SPLIT) {
    d.sx[p] = x, d.sy[p] = y, d.sid[p] = id, d.scode[p] = code;
  } else {
    put_xy(d.pool, p, x, y);
    d.pool.id[p] = id;
    put_key(d.pool, p, code);
    d.slot[id] = (uint64_t)p;
  }
}

/* The home of a row's point: in place rows stay with their leaf's home. */
__device__ __forceinline__ int64_t row_home(const qplan &P, const qrows &R, int64_t i) {
  int c = R.cls[i];
  if (c == R_ERASE) return -1;
  return P.home[c == R_INPLACE ? 5 * R.leaf[i] : R.tgt[i]];
}

/* The first pass over the rows, before anything of the index is written: a removal from a leaf
 * repaired in place below its new length is a hole there (holes[hstart[v] ..], counted in
 * lowc[v]); a row whose home is split goes to the split scratch (d). */
__global__ void prep_rows_kernel(rdx_sp_nodes N, qplan P, qrows R, int64_t m, qdst d, const int64_t *hstart,
                                 unsigned long long *lowc, int64_t *holes) {
  SP_FOR(i, m) {
    int c = R.cls[i];
    if (c == R_MOVE || c == R_ERASE) {
      int64_t v = R.leaf[i], s = R.slot[i];
      if (P.home[5 * v] == 5 * v && P.hkind[5 * v] == H_KEEP && s < N.fpos[v] + P.cnt[v])
        holes[hstart[v] + (int64_t)atomicAdd(&lowc[v], 1ull)] = s;
    }
    int64_t h = row_home(P, R, i);
    if (h < 0 || P.hkind[h] != H_SPLIT) continue;
    int64_t p = P.hbase[h] + (int64_t)atomicAdd(&P.hfill[h], 1ull);
    put_point(d, p, R.x[i], R.y[i], R.id[i], R.code[i]);
  }
}

/* One block per old leaf of the list for d.kind's homes: its untouched points (stayers), in
 * tiles, each tile's places taken with one atomic. */
__global__ void __launch_bounds__(QB) stayers_kernel(rdx_sp_nodes N, qplan P, const int64_t *gath, int64_t n_gath, dpool pool,
                                                     const uint32_t *touched, qdst d) {
  typedef cub::BlockScan<int, QB> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  __shared__ int64_t base;
  for (int64_t g = blockIdx.x; g < n_gath; g += gridDim.x) {
    int64_t u = gath[g], h = P.home[5 * u];
    int64_t f = N.fpos[u], n = N.len[u];
    for (int64_t t0 = 0; t0 < n; t0 += QB) {
      int64_t s = f + t0 + threadIdx.x;
      int live = t0 + threadIdx.x < n && !bit_get(touched, s);
      int pre, total;
      scan_t(tmp).ExclusiveSum(live, pre, total);
      if (threadIdx.x == 0) base = P.hbase[h] + (int64_t)atomicAdd(&P.hfill[h], (unsigned long long)total);
      __syncthreads();
      if (live) {
        int64_t p = base + pre;
        if (d.kind == H_SPLIT) {
          d.sx[p] = px(pool, s), d.sy[p] = py(pool, s), d.sid[p] = pool.id[s], d.scode[p] = pkey(pool, s);
        } else {
          move_slot(pool, s, d.used + p, d.slot);
        }
      }
      __syncthreads();
    }
  }
}

/* One block per split group: its range among the sorted split codes (its cell's code range),
 * then its subtree breadth first with the build's split rule (rdx_sp_qt_quadrants), its node
 * region serving as the queue (a node's fpos holds its first code while it waits). Leaf fpos:
 * `base` plus the leaf's first position among the sorted split points. */
__global__ void split_tree_kernel(const qgroup *groups, int64_t ng, const uint64_t *keys, int64_t ns, int D, int64_t cap,
                                  qnode *out, int64_t base, qtot *tot) {
  __shared__ int64_t head, tail, next;
  for (int64_t g = blockIdx.x; g < ng; g += gridDim.x) {
    const qgroup G = groups[g];
    qnode *reg = out + G.nbase;
    if (threadIdx.x == 0) {
      int sh = 2 * (D - G.level);
      int64_t a = rdx_sp_lower_bound_u64(keys, 0, ns, G.key << sh);
      int64_t e = rdx_sp_lower_bound_u64(keys, a, ns, (G.key + 1) << sh);
      if (e - a != G.count) atomicOr(&tot->bad, 2ull);
      qnode r;
      r.key = G.key, r.level = G.level, r.leaf = 0, r.count = e - a, r.fpos = a, r.len = 0, r.room = 0;
      reg[0] = r;
      head = 0, tail = 1, next = 1;
    }
    __syncthreads();
    while (head < tail) {
      for (int64_t i = head + threadIdx.x; i < tail; i += blockDim.x) {
        qnode nd = reg[i];
        int64_t b[5], a = nd.fpos;
        if (rdx_sp_qt_quadrants(keys, a, a + nd.count, nd.key, nd.level, D, cap, b)) {
          nd.leaf = 1, nd.len = nd.count, nd.room = nd.count, nd.fpos = base + a;
        } else {
          nd.leaf = 0, nd.len = 0, nd.room = 0, nd.fpos = 0;
          for (int q = 0; q < 4; q++) {
            if (b[q + 1] == b[q]) continue;
            int64_t j = (int64_t)atomicAdd((unsigned long long *)&next, 1ull);
            if (j >= G.n_nodes) { /* the bound is a theorem; say so if it ever fails */
              atomicOr(&tot->bad, 16ull);
              continue;
            }
            qnode c;
            c.key = 4 * nd.key + (uint64_t)q, c.level = nd.level + 1, c.leaf = 0, c.count = b[q + 1] - b[q];
            c.fpos = b[q], c.len = 0, c.room = 0;
            reg[j] = c;
          }
        }
        reg[i] = nd;
      }
      __syncthreads();
      if (threadIdx.x == 0) head = tail, tail = next < G.n_nodes ? next : G.n_nodes;
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(&tot->subused, (unsigned long long)tail);
    __syncthreads();
  }
}

/* ---- 4. commit ---- */

/* The commit's pass over the rows: erased ids leave the id map; in a KEEP leaf, in place moves
 * are written where they are and the j-th incoming point fills the j-th hole below the new length,
 * the rest going past the old length (there are more incoming than removals then, so every hole
 * is below); an EXT home takes its rows at the next places of its extent. Runs before
 * keep_tail_kernel, which moves tail points (in place moves included) into the other holes. */
__global__ void place_rows_kernel(rdx_sp_nodes N, qplan P, qrows R, int64_t m, qdst d, const int64_t *hstart,
                                  const unsigned long long *lowc, const int64_t *holes) {
  SP_FOR(i, m) {
    int c = R.cls[i];
    if (c == R_ERASE) {
      d.slot[R.id[i]] = RDX_SP_NONE;
      continue;
    }
    int64_t h = row_home(P, R, i);
    if (h < 0) continue;
    int kind = P.hkind[h];
    int64_t p;
    if (kind == H_KEEP && c == R_INPLACE) {
      put_xy(d.pool, R.slot[i], R.x[i], R.y[i]);
      put_key(d.pool, R.slot[i], R.code[i]);
      continue;
    }
    if (kind == H_KEEP) {
      int64_t v = h / 5, j = R.rank[i], a = (int64_t)lowc[v];
      p = j < a ? holes[hstart[v] + j] : N.fpos[v] + N.len[v] + (j - a);
    } else if (kind == H_EXT) {
      p = d.used + P.hbase[h] + (int64_t)atomicAdd(&P.hfill[h], 1ull);
    } else {
      continue;
    }
    put_point(d, p, R.x[i], R.y[i], R.id[i], R.code[i]);
  }
}

/* One warp per shrinking KEEP leaf: the live points of its tail [new length, old length) move
 * into the holes below the new length that incoming points did not fill. Tails are short (at
 * most the leaf's removals), so a warp, not a block. */
__global__ void keep_tail_kernel(rdx_sp_nodes N, qplan P, int64_t n_tails, dpool pool, uint64_t *slot, const uint32_t *gone,
                                 const int64_t *hstart, const int64_t *holes) {
  const unsigned FULL = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
  for (int64_t g = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; g < n_tails; g += warps) {
    int64_t v = P.tails[g], end = N.fpos[v] + N.len[v], done = 0;
    const int64_t *h = holes + hstart[v] + (int64_t)P.cin[5 * v];
    for (int64_t s0 = N.fpos[v] + P.cnt[v]; s0 < end; s0 += 32) {
      int64_t s = s0 + lane;
      int live = s < end && !bit_get(gone, s);
      unsigned mask = __ballot_sync(FULL, live);
      if (live) move_slot(pool, s, h[done + __popc(mask & ((1u << lane) - 1))], slot);
      done += __popc(mask);
    }
  }
}

/* The sorted split points to their region (pool slots base ..). */
__global__ void split_place_kernel(const int64_t *perm, int64_t ns, const double *sx, const double *sy,
                                   const uint64_t *sid, const uint64_t *scode, dpool pool, int64_t base, uint64_t *slot) {
  SP_FOR(j, ns) {
    int64_t e = perm[j], d = base + j;
    put_xy(pool, d, sx[e], sy[e]);
    pool.id[d] = sid[e];
    put_key(pool, d, scode[e]);
    slot[sid[e]] = (uint64_t)d;
  }
}

/* Every EXT home received exactly its count (a check of the plan against the moves). */
__global__ void check_fill_kernel(qplan P, int64_t nt, unsigned long long *bad) {
  SP_FOR(t, nt) {
    if (P.home[t] == t && (P.hkind[t] == H_EXT || P.hkind[t] == H_SPLIT) && (int64_t)P.hfill[t] != P.hcount[t])
      atomicOr(bad, 32ull);
  }
}

/* BFS sort keys of the new nodes: (level, key) packed when 2 D + 6 bits fit, else key alone
 * (a second, stable sort by level follows). */
__global__ void node_keys_kernel(const qnode *nl, int64_t n, int packed, int D, uint64_t *k, int64_t *idx) {
  SP_FOR(i, n) {
    qnode q = nl[i];
    k[i] = q.level < 0 ? ~0ull : packed ? ((uint64_t)q.level << (2 * D)) | q.key : q.key;
    idx[i] = i;
  }
}
__global__ void node_levels_kernel(const qnode *nl, const int64_t *idx, int64_t n, uint64_t *k) {
  SP_FOR(i, n) k[i] = nl[idx[i]].level < 0 ? 63 : (uint64_t)nl[idx[i]].level;
}

__global__ void node_put_kernel(const qnode *nl, const int64_t *idx, int64_t n_base, const qtot *tot, rdx_sp_nodes out) {
  SP_FOR(i, n_base + (int64_t)tot->subused) {
    qnode q = nl[idx[i]];
    out.key[i] = q.key, out.fpos[i] = q.fpos, out.len[i] = q.len, out.count[i] = q.count, out.room[i] = q.room;
    out.split[i] = 0.0, out.level[i] = (uint8_t)q.level, out.leaf[i] = (uint8_t)q.leaf;
  }
}

__device__ __forceinline__ bool node_less(const rdx_sp_nodes &o, int64_t i, int level, uint64_t key) {
  return (int)o.level[i] < level || ((int)o.level[i] == level && o.key[i] < key);
}

/* Internal nodes: children are the next level's nodes with key >> 2 == key, contiguous in BFS. */
__global__ void node_link_kernel(rdx_sp_nodes o, int64_t n_base, qtot *tot) {
  o.n = n_base + (int64_t)tot->subused;
  unsigned long long *bad = &tot->bad;
  SP_FOR(i, o.n) {
    if (o.leaf[i]) continue;
    int l = o.level[i] + 1;
    uint64_t k = o.key[i];
    int64_t a = i + 1, b = o.n;
    while (a < b) {
      int64_t mid = a + (b - a) / 2;
      if (node_less(o, mid, l, 4 * k)) a = mid + 1;
      else b = mid;
    }
    int64_t e = a;
    while (e < o.n && (int)o.level[e] == l && (o.key[e] >> 2) == k) e++;
    o.fpos[i] = a, o.len[i] = e - a;
    if (e == a) atomicOr(bad, 8ull);
  }
}

__global__ void iota_kernel(int64_t *p, int64_t n) {
  SP_FOR(i, n) p[i] = i;
}

__global__ void fill_none_kernel(uint64_t *p, int64_t from, int64_t to) {
  SP_FOR(j, to - from) p[from + j] = RDX_SP_NONE;
}

}  // namespace

extern "C" rdx_status rdx_sp_qt_update_cuda(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b, rdx_sp_found *f,
                                             int64_t *live) {
  const char *fn = "rdx_points update";
  cudaStream_t s = rdx_stream(ctx);
  scratch mm(ctx, &pts->arena, &pts->arena_bytes, arena_limit(pts));
  const int64_t m = b->m, nn = pts->nodes.n, used = pts->pool.used, cap = pts->cap;
  const int D = pts->depth;
  f->bad_row = -1;
  double t0 = rdx_now_ms();
  rdx_trace(ctx, "qt update: start");

  /* 1-2: classify and plan (scratch only) */
  qplan P;
  qrows R;
  int64_t words = used / 32 + 1;
  uint32_t *touched, *gone;
  P.nn = nn;
  /* everything that starts at zero, in one block and one memset: counters (u64) first */
  unsigned long long *zero, *lowc;
  size_t z_u64 = 13 * (size_t)nn + (sizeof(qtot) + 7) / 8, z_bytes = z_u64 * 8 + (size_t)words * 8 + (size_t)nn * 5;
  RDX_CHECK(mm.raw((void **)&zero, z_bytes, fn));
  P.cin = zero;                          /* 5 nn */
  P.cout = P.cin + 5 * nn;               /* nn */
  P.hfill = P.cout + nn;                 /* 5 nn */
  unsigned long long *acc = P.hfill + 5 * nn; /* nn */
  lowc = acc + nn;                       /* nn */
  P.tot = (qtot *)(lowc + nn);
  touched = (uint32_t *)(zero + z_u64);  /* 2 words (u32) */
  gone = touched + words;
  P.hkind = (uint8_t *)(touched + 2 * words); /* 5 nn bytes */
  RDX_CHECK(mm.get(&P.cnt, (size_t)nn, fn));
  int64_t *parent;
  RDX_CHECK(mm.get(&parent, (size_t)nn, fn));
  RDX_CHECK(mm.get(&P.home, (size_t)(5 * nn), fn));
  RDX_CHECK(mm.get(&P.hbase, (size_t)(5 * nn), fn));
  RDX_CHECK(mm.get(&P.hcount, (size_t)(5 * nn), fn));
  RDX_CHECK(mm.get(&P.gath[0], (size_t)(2 * nn), fn));
  P.gath[1] = P.gath[0] + nn;
  RDX_CHECK(mm.get(&P.tails, (size_t)nn, fn));
  RDX_CHECK(mm.get(&P.groups, (size_t)(5 * nn), fn));
  RDX_CHECK(mm.get(&P.tn, (size_t)(5 * nn), fn));
  RDX_CHECK(mm.get(&R.slot, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.leaf, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.tgt, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.rank, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.id, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.code, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.x, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.y, (size_t)m, fn));
  RDX_CHECK(mm.get(&R.cls, (size_t)m, fn));
  RDX_CUDA(ctx, cudaMemsetAsync(zero, 0, z_bytes, s), fn);
  rdx_trace(ctx, "qt update: scratch");
  rdx_sp_view v = rdx_sp_view_of(pts);
  dpool pool = pool_of(pts, &pts->pool);
  int L0 = 0; /* the table has at most max(nn, 4^8) cells: small trees start nearer the root */
  while (L0 < 8 && L0 < D && ((int64_t)1 << (2 * (L0 + 1))) <= nn) L0++;
  int64_t *tab;
  uint64_t *desc;
  RDX_CHECK(mm.get(&tab, (size_t)1 << (2 * L0), fn));
  RDX_CHECK(mm.get(&desc, (size_t)nn, fn));
  if (nn >= (int64_t)DESC_FIRST) return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %lld nodes", fn, (long long)nn);
  start_table_kernel<<<blocks_for(nn, 256), 256, 0, s>>>(pts->nodes, L0, tab, parent, desc);
  classify_kernel<<<blocks_for(m, 256), 256, 0, s>>>(v, pool, pts->slot, b->op, b->ids, b->ids64, b->xy, pts->f64, m,
                                                     b->first_id, pts->id_end, touched, gone, b->check_xy, desc, tab, 2 * (D - L0), D, P, R);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: classify kernel");
  rdx_trace(ctx, "qt update: classify");
  const unsigned gn = blocks_for(nn, 256);
  count_kernel<<<gn, 256, 0, s>>>(pts->nodes, P, parent, acc);
  new_count_kernel<<<gn, 256, 0, s>>>(pts->nodes, P, acc);
  decide_kernel<<<gn, 256, 0, s>>>(pts->nodes, P, parent, cap, D, used);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: plan kernels");
  rdx_trace(ctx, "qt update: plan");
  qtot T;
  RDX_CHECK(to_host(ctx, &T, P.tot, 1, fn));
  if (T.bad & 4) {
    b->bad_xy = 1;
    return RDX_OK;
  }
  if (T.bad & 1) return check_ids(ctx, pts, b, mm, f); /* sets f->bad_row */
  if (T.bad) return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: a point of the index lies in no leaf", fn);
  int64_t expect = pts->n + (b->op == RDX_SP_INSERT ? m : b->op == RDX_SP_ERASE ? -m : 0);
  if ((int64_t)T.root != expect)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the plan counts %lld points, expected %lld", fn, (long long)T.root,
                    (long long)expect);
  const int64_t n_ext = (int64_t)T.ext, ns = (int64_t)T.s, ng = (int64_t)T.groups, n_base = (int64_t)T.nodes;
  if (rdx_trace_on())
    fprintf(stderr, "[raydex trace] qt update: %lld rows, %lld nodes, %llu in place, %llu tails (%llu slots), %llu+%llu "
            "gathers, %lld extent slots, %lld split points in %lld groups\n", (long long)m, (long long)nn, T.inplace, T.tails,
            T.tail_slots, T.gathers[0], T.gathers[1], (long long)n_ext, (long long)ns, (long long)ng);
  double t1 = rdx_now_ms();

  /* 3: split groups (scratch only), then every allocation. The node list holds the plan's nodes
   * and the split groups' node regions (bounds; unused entries sort last). */
  const int64_t n_sort = n_base + (int64_t)T.subnodes, sbase = used + n_ext;
  qnode *nl;
  RDX_CHECK(mm.get(&nl, (size_t)n_sort, fn));
  RDX_CUDA(ctx, cudaMemcpyAsync(nl, P.tn, (size_t)n_base * sizeof(qnode), cudaMemcpyDeviceToDevice, s), fn);
  int64_t *hstart, *holes;
  RDX_CHECK(mm.get(&hstart, (size_t)nn + 1, fn));
  RDX_CHECK(mm.get(&holes, (size_t)m, fn));
  RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) { return cub::DeviceScan::ExclusiveSum(tmp, bytes, P.cout, hstart, nn, s); }));
  double *sx = nullptr, *sy = nullptr;
  uint64_t *sid = nullptr, *scode = nullptr;
  int64_t *perm = nullptr;
  if (ns > 0) {
    RDX_CHECK(mm.get(&sx, (size_t)ns, fn));
    RDX_CHECK(mm.get(&sy, (size_t)ns, fn));
    RDX_CHECK(mm.get(&sid, (size_t)ns, fn));
    RDX_CHECK(mm.get(&scode, (size_t)ns, fn));
  }
  qdst sd; /* the split scratch as a destination */
  memset(&sd, 0, sizeof sd);
  sd.kind = H_SPLIT, sd.sx = sx, sd.sy = sy, sd.sid = sid, sd.scode = scode;
  prep_rows_kernel<<<blocks_for(m, 256), 256, 0, s>>>(pts->nodes, P, R, m, sd, hstart, lowc, holes);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: rows kernel");
  if (ng > 0) {
    uint64_t *sorted;
    int64_t *p1;
    RDX_CHECK(mm.get(&sorted, (size_t)ns, fn));
    RDX_CHECK(mm.get(&p1, (size_t)ns, fn));
    RDX_CHECK(mm.get(&perm, (size_t)ns, fn));
    int64_t ng1 = (int64_t)T.gathers[1];
    if (ng1) stayers_kernel<<<blocks_for(ng1 * QB, QB), QB, 0, s>>>(pts->nodes, P, P.gath[1], ng1, pool, touched, sd);
    iota_kernel<<<blocks_for(ns, 256), 256, 0, s>>>(p1, ns);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: split gather kernels");
    rdx_trace(ctx, "qt update: split gather");
    RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, scode, sorted, p1, perm, ns, 0, 2 * D, s);
    }));
    rdx_trace(ctx, "qt update: split sort");
    RDX_CUDA(ctx, cudaMemsetAsync(nl + n_base, 0xFF, (size_t)(n_sort - n_base) * sizeof(qnode), s), fn);
    split_tree_kernel<<<blocks_for(ng * 128, 128), 128, 0, s>>>(P.groups, ng, sorted, ns, D, cap, nl + n_base, sbase, P.tot);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: split tree kernel");
    rdx_trace(ctx, "qt update: split trees");
  }
  uint64_t *nk, *nk2;
  int64_t *ni, *ni2;
  RDX_CHECK(mm.get(&nk, (size_t)n_sort, fn));
  RDX_CHECK(mm.get(&nk2, (size_t)n_sort, fn));
  RDX_CHECK(mm.get(&ni, (size_t)n_sort, fn));
  RDX_CHECK(mm.get(&ni2, (size_t)n_sort, fn));
  int packed = 2 * D + 6 <= 64;
  node_keys_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nl, n_sort, packed, D, nk, ni);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: node keys kernel");
  int64_t *order;
  {
    cub::DoubleBuffer<uint64_t> kb(nk, nk2);
    cub::DoubleBuffer<int64_t> ib(ni, ni2);
    RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
      return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, ib, n_sort, 0, packed ? 2 * D + 6 : 2 * D, s);
    }));
    if (!packed) {
      node_levels_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nl, ib.Current(), n_sort, kb.Current());
      SP_LAUNCH_CHECK(ctx, "rdx_points update: node levels kernel");
      RDX_CHECK(mm.cub(fn, [&](void *tmp, size_t &bytes) {
        return cub::DeviceRadixSort::SortPairs(tmp, bytes, kb, ib, n_sort, 0, 6, s);
      }));
    }
    order = ib.Current();
  }
  rdx_trace(ctx, "qt update: node sort");
  /* memory the index keeps; freed again on any failure before the swap */
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  uint64_t *nslot = nullptr;
  int64_t nslot_cap = pts->slot_cap;
  /* the split subtrees' node count stays on the device: room for their bound, n set at the end */
  rdx_status st = rdx_sp_nodes_alloc(ctx, n_sort, RDX_DEVICE, &nodes);
  int64_t need = sbase + ns;
  if (st == RDX_OK && need > pts->pool.cap)
    st = rdx_sp_pool_alloc(ctx, need + need / 2 + 1024, pts->f64, pts->key64 ? 8 : 4, &np);
  int64_t need_ids = (int64_t)(b->op == RDX_SP_INSERT ? b->first_id + (uint64_t)m : pts->id_end);
  if (st == RDX_OK && need_ids > pts->slot_cap) {
    nslot_cap = need_ids + need_ids / 2 + 64;
    st = rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&nslot, (size_t)nslot_cap * 8, RDX_DEVICE);
  }
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    rdx_sp_pool_free(ctx, &np);
    return st;
  }
  double t2 = rdx_now_ms();
  rdx_trace(ctx, "qt update: allocations");

  /* 4: commit; only device errors can fail from here on */
  if (np.block) {
    size_t es = pts->f64 ? 8 : 4, u = (size_t)used, kb = pts->key64 ? 8 : 4;
    RDX_CUDA(ctx, cudaMemcpyAsync(np.x, pts->pool.x, u * es, cudaMemcpyDeviceToDevice, s), fn);
    RDX_CUDA(ctx, cudaMemcpyAsync(np.y, pts->pool.y, u * es, cudaMemcpyDeviceToDevice, s), fn);
    RDX_CUDA(ctx, cudaMemcpyAsync(np.id, pts->pool.id, u * 8, cudaMemcpyDeviceToDevice, s), fn);
    RDX_CUDA(ctx, cudaMemcpyAsync(np.key, pts->pool.key, u * kb, cudaMemcpyDeviceToDevice, s), fn);
    RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
    rdx_sp_pool_free(ctx, &pts->pool);
    pts->pool = np;
    pool = pool_of(pts, &pts->pool);
  }
  if (nslot) {
    RDX_CUDA(ctx, cudaMemcpyAsync(nslot, pts->slot, (size_t)pts->slot_cap * 8, cudaMemcpyDeviceToDevice, s), fn);
    fill_none_kernel<<<blocks_for(nslot_cap - pts->slot_cap, 256), 256, 0, s>>>(nslot, pts->slot_cap, nslot_cap);
    SP_LAUNCH_CHECK(ctx, "rdx_points update: id map kernel");
    RDX_CUDA(ctx, cudaStreamSynchronize(s), fn);
    rdx_mem_free(ctx, pts->slot);
    pts->slot = nslot;
    pts->slot_cap = nslot_cap;
  }
  const rdx_sp_nodes &N = pts->nodes;
  const unsigned gm = blocks_for(m, 256);
  qdst d;
  memset(&d, 0, sizeof d);
  d.kind = H_EXT, d.pool = pool, d.used = used, d.slot = pts->slot;
  place_rows_kernel<<<gm, 256, 0, s>>>(N, P, R, m, d, hstart, lowc, holes);
  if (T.tails)
    keep_tail_kernel<<<blocks_for((int64_t)T.tails * 32, 256), 256, 0, s>>>(N, P, (int64_t)T.tails, pool, pts->slot, gone,
                                                                           hstart, holes);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: keep kernels");
  rdx_trace(ctx, "qt update: keep leaves");
  int64_t ng0 = (int64_t)T.gathers[0];
  if (ng0) stayers_kernel<<<blocks_for(ng0 * QB, QB), QB, 0, s>>>(N, P, P.gath[0], ng0, pool, touched, d);
  if (ns) split_place_kernel<<<blocks_for(ns, 256), 256, 0, s>>>(perm, ns, sx, sy, sid, scode, pool, sbase, pts->slot);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: extent kernels");
  rdx_trace(ctx, "qt update: extents and split points");
  node_put_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nl, order, n_base, P.tot, nodes);
  node_link_kernel<<<blocks_for(n_sort, 256), 256, 0, s>>>(nodes, n_base, P.tot);
  check_fill_kernel<<<blocks_for(5 * nn, 256), 256, 0, s>>>(P, 5 * nn, &P.tot->bad);
  SP_LAUNCH_CHECK(ctx, "rdx_points update: node kernels");
  rdx_trace(ctx, "qt update: nodes");
  st = to_host(ctx, &T, P.tot, 1, fn);
  if (st == RDX_OK && T.bad)
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the new tree is inconsistent (check %llu)", fn, T.bad);
  nodes.n = n_base + (int64_t)T.subused;
  if (st != RDX_OK) {
    rdx_sp_nodes_free(ctx, &nodes);
    return st;
  }
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->nodes = nodes;
  pts->host_stale = 1;
  pts->pool.used = need;
  rdx_sp_stats *S = &pts->stats;
  S->splits = (int64_t)T.splits, S->merges = (int64_t)T.merges, S->relocated = (int64_t)T.relocated;
  S->new_leaves = (int64_t)T.new_leaves;
  f->n_inplace = (int64_t)T.inplace;
  *live = (int64_t)T.live;
  double t3 = rdx_now_ms();
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = t3 - t2, S->phase_ms[3] = 0;
  mm.settle();
  return RDX_OK;
}
