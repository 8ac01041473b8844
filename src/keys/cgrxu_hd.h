/*
 * cgrxu_hd.h: cgRXu (seed 000, Section IV): cgRX whose buckets are chains of fixed-size nodes, so
 * batches of inserts and erases never touch the BVH. Written once for the CPU (cgrxu.c) and CUDA
 * (cgrxu.cu); the atomics come from the includer (RDX_CGRXU_ATOMIC_ADD32/64).
 *
 * Buckets. The build cuts the sorted (key, row) pairs into buckets of C/2 (C: pairs per node), so
 * every node starts half full, and builds cgRX's scene over them; bucket nb (one past the last)
 * is the overflow bucket of keys above the build's largest. The scene and the buckets' borders
 * never change: a key k belongs to bucket locate(k), the bucket the rays find, or nb when they
 * find none (k above the build's largest key). The rays find the first triangle at or after k in
 * key order, so locate(k) is the first bucket whose triangle's cell (its position as a key, eff)
 * is >= k: the representative's own key, or the row's end x_max where the optimized layout moved
 * it (cgrx_hd.h's FIX(4): routing by representative values would disagree with the moved
 * ones). Updates route a sorted batch by binary searches over eff, one thread per bucket as the
 * paper does, and lookups cast rays; the tests check that they agree. locate is monotone in k,
 * so the chains stay sorted among themselves: every key of chain j is <= every key of chain j+1.
 * Duplicates of the build may span buckets: key k's build pairs lie in bucket locate(k) and in the
 * buckets after it whose first build key (bmin) is k. So a lookup of k walks chain locate(k), then
 * every next chain j with bmin[j] <= k; inserts go to chain locate(k) only.
 *
 * Nodes. Node b (b <= nb) is bucket b's representative node; the others are linked behind it.
 * Each node has a header {max key, next, size} and C pairs sorted by (key, row); a chain is
 * sorted by (key, row) across its nodes. Nodes live in slabs of 2^shift nodes (headers first,
 * then pairs, so each node's pairs are aligned to node_bytes); storage grows by whole slabs.
 * Node ids are u32; RDX_CGRXU_NONE ends a chain.
 *
 * Updates run one thread per bucket, without locks: the thread owns its chain.
 *  - Erase: every pair whose key is in the bucket's slice of the sorted erase keys goes; pairs
 *    shift left inside their node; a linked node left empty is unlinked and its id pushed on the
 *    free stack (an atomic bump of its top).
 *  - Insert: the bucket's slice of the batch, sorted by (key, row), goes into the chain in order:
 *    into the first node whose last pair is >= it (or the last node), shifting right; a full node
 *    splits first, its upper half moving to a new node that takes over its place in the chain.
 *    New nodes come from the free stack, then fresh ids (one atomic counter over both). The
 *    caller reserves room for the most splits a batch can cause before any change:
 *    rdx_cgrxu_split_bound.
 * The representatives keep the build's keys, so a lookup after any updates casts the same rays.
 */
#ifndef RDX_CGRXU_HD_H
#define RDX_CGRXU_HD_H

#include "keys/cgrx_hd.h"

#define RDX_CGRXU_NONE 0xFFFFFFFFu

typedef struct rdx_cgrxu_head {
  uint64_t max_key; /* the last pair's key (meaningless when size == 0) */
  uint32_t next;    /* the next node of the chain, or RDX_CGRXU_NONE */
  uint32_t size;    /* pairs in the node, 0..C */
} rdx_cgrxu_head;

/* The nodes as the code that reads or updates them sees them (its own memory). */
typedef struct rdx_cgrxu_view {
  char *const *slabs; /* slab s holds nodes [s 2^shift, (s+1) 2^shift) */
  int shift;
  int width;          /* 32 or 64: rdx_pair32 or rdx_pair64 */
  int cap;            /* C, pairs per node (node_bytes / pair size), a power of two >= 2 */
  int node_bytes;
  int64_t nb;         /* buckets of the build; chain nb is the overflow bucket */
  const void *reps;   /* nb pairs: key = the bucket's representative, row = its first build key
                         (bmin), both of the entries' width */
  const uint64_t *eff; /* nb: the largest key routed to bucket b (its triangle's cell; the last
                          bucket's is the build's largest key) */
  uint64_t max_key;   /* the build's largest key: larger ones go to the overflow bucket nb */
} rdx_cgrxu_view;

RDX_HD rdx_cgrxu_head *rdx_cgrxu_head_of(const rdx_cgrxu_view *v, uint32_t id) {
  return (rdx_cgrxu_head *)v->slabs[id >> v->shift] + (id & ((1u << v->shift) - 1));
}
RDX_HD char *rdx_cgrxu_pairs_of(const rdx_cgrxu_view *v, uint32_t id) {
  return v->slabs[id >> v->shift] + ((size_t)16 << v->shift) + (size_t)(id & ((1u << v->shift) - 1)) * v->node_bytes;
}
RDX_HD uint64_t rdx_cgrxu_key(const rdx_cgrxu_view *v, const char *p, int i) {
  return v->width == 32 ? ((const rdx_pair32 *)p)[i].key : ((const rdx_pair64 *)p)[i].key;
}
RDX_HD uint64_t rdx_cgrxu_row(const rdx_cgrxu_view *v, const char *p, int i) {
  return v->width == 32 ? ((const rdx_pair32 *)p)[i].row : ((const rdx_pair64 *)p)[i].row;
}
RDX_HD void rdx_cgrxu_put(const rdx_cgrxu_view *v, char *p, int i, uint64_t k, uint64_t r) {
  if (v->width == 32) {
    ((rdx_pair32 *)p)[i].key = (uint32_t)k;
    ((rdx_pair32 *)p)[i].row = (uint32_t)r;
  } else {
    ((rdx_pair64 *)p)[i].key = k;
    ((rdx_pair64 *)p)[i].row = r;
  }
}
RDX_HD void rdx_cgrxu_move(const rdx_cgrxu_view *v, char *dst, int di, const char *src, int si) {
  rdx_cgrxu_put(v, dst, di, rdx_cgrxu_key(v, src, si), rdx_cgrxu_row(v, src, si));
}
/* The first build key of bucket j (j < nb; the overflow bucket has none: UINT64_MAX). */
RDX_HD uint64_t rdx_cgrxu_bmin(const rdx_cgrxu_view *v, int64_t j) {
  if (j >= v->nb) return UINT64_MAX;
  return v->width == 32 ? ((const rdx_pair32 *)v->reps)[j].row : ((const rdx_pair64 *)v->reps)[j].row;
}
/* The cell of bucket b's triangle as a key (rdx_cgrx_emit): the representative r, or the row's
 * end when the optimized layout moves it there (the next key is in a later row); clamped to the
 * largest key for the last bucket, since the rays find nothing past it. */
RDX_HD uint64_t rdx_cgrxu_eff(const rdx_cgrx_params *P, int64_t b, uint64_t r, uint64_t next_key, uint64_t max_key) {
  if (b == P->nb - 1) return max_key;
  if (!P->naive && rdx_cgrx_row(next_key) != rdx_cgrx_row(r)) return rdx_cgrx_pos(RDX_CGRX_XMAX, rdx_cgrx_y(r), rdx_cgrx_z(r));
  return r;
}

/* The keys bucket b takes, [lo, hi]: 0 when the bucket takes none (the overflow bucket of a build
 * whose largest key is the largest value). Inserts: (eff[b-1], eff[b]]. Erases (spill set): from
 * the bucket's first build key too when that is <= eff[b-1] (a build duplicate spanning buckets). */
RDX_HD int rdx_cgrxu_keys_of(const rdx_cgrxu_view *v, int64_t b, int spill, uint64_t *lo, uint64_t *hi) {
  if (b == v->nb) {
    if (v->max_key == UINT64_MAX) return 0;
    *lo = v->max_key + 1, *hi = UINT64_MAX;
    return 1;
  }
  *hi = v->eff[b];
  *lo = b == 0 ? 0 : v->eff[b - 1] + 1;
  if (spill && b > 0) {
    uint64_t m = rdx_cgrxu_bmin(v, b);
    if (m < *lo) *lo = m;
  }
  return *lo <= *hi;
}

/* First index of sorted keys[0, m) with key >= x (strict: > x). */
RDX_HD int64_t rdx_cgrxu_search(const uint64_t *keys, int64_t m, uint64_t x, int strict) {
  int64_t a = 0, z = m;
  while (a < z) {
    int64_t h = a + (z - a) / 2;
    if (keys[h] < x || (strict && keys[h] == x)) a = h + 1;
    else z = h;
  }
  return a;
}
/* Bucket b's slice [*a, *z) of the sorted batch keys[0, m). */
RDX_HD void rdx_cgrxu_slice(const rdx_cgrxu_view *v, int64_t b, int spill, const uint64_t *keys, int64_t m, int64_t *a,
                            int64_t *z) {
  uint64_t lo, hi;
  if (!rdx_cgrxu_keys_of(v, b, spill, &lo, &hi)) {
    *a = *z = 0;
    return;
  }
  *a = rdx_cgrxu_search(keys, m, lo, 0);
  *z = rdx_cgrxu_search(keys, m, hi, 1);
}

/* Inserts partition the sorted batch keys[0, m): bucket b takes [off(b), off(b + 1)), where
 * off(b), b in [0, nb + 1], is the first key routed to bucket b or later. */
RDX_HD int64_t rdx_cgrxu_insert_offset(const rdx_cgrxu_view *v, int64_t b, const uint64_t *keys, int64_t m) {
  if (b == 0) return 0;
  if (b > v->nb) return m;
  return rdx_cgrxu_search(keys, m, v->eff[b - 1], 1);
}

/* (k, r) < (k2, r2) */
RDX_HD int rdx_cgrxu_less(uint64_t k, uint64_t r, uint64_t k2, uint64_t r2) { return k < k2 || (k == k2 && r < r2); }

/* ---- queries ---- */

/* What one query found in chains [b, ...]: count (of keys in [lo, hi]), the smallest row, and
 * with dst its rows written (at most `room`, in chain order). */
typedef struct rdx_cgrxu_found {
  uint64_t count;
  uint64_t min_row;
} rdx_cgrxu_found;

/* Walk the chains of a query of [lo, hi] (a point lookup: lo == hi) that the rays started at
 * bucket b (locate(lo), nb for none) and that cannot reach past bucket b_hi (locate(hi)), then
 * on while the next bucket's first build key is <= hi. */
RDX_HD rdx_cgrxu_found rdx_cgrxu_walk(const rdx_cgrxu_view *v, int64_t b, int64_t b_hi, uint64_t lo, uint64_t hi,
                                      uint64_t *dst, uint64_t room) {
  rdx_cgrxu_found f;
  f.count = 0;
  f.min_row = RDX_MISS;
  for (int64_t j = b; j <= v->nb; j++) {
    if (j > b_hi && rdx_cgrxu_bmin(v, j) > hi) break;
    for (uint32_t id = (uint32_t)j; id != RDX_CGRXU_NONE;) {
      const rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, id);
      const uint32_t next = h->next;
      const int size = (int)h->size;
      if (size == 0 || h->max_key < lo) {
        id = next;
        continue;
      }
      const char *p = rdx_cgrxu_pairs_of(v, id);
      int a = 0, z = size; /* the first pair with key >= lo */
      while (a < z) {
        int m = (a + z) / 2;
        if (rdx_cgrxu_key(v, p, m) < lo) a = m + 1;
        else z = m;
      }
      for (int i = a; i < size; i++) {
        uint64_t k = rdx_cgrxu_key(v, p, i);
        if (k > hi) return f; /* chains and nodes are sorted: nothing later is in range */
        uint64_t r = rdx_cgrxu_row(v, p, i);
        if (dst && f.count < room) dst[f.count] = r;
        if (r < f.min_row) f.min_row = r;
        f.count++;
      }
      id = next;
    }
  }
  return f;
}

/* ---- updates ---- */

/* The most splits a batch of m inserts into a chain can cause, from the chain's sizes now: a
 * split of a full node leaves two of C/2, so each split uses up C/2 of the potential
 * sum(max(0, size - C/2)), which each insert raises by at most one. */
RDX_HD uint64_t rdx_cgrxu_split_bound(const rdx_cgrxu_view *v, int64_t j, uint64_t m) {
  if (m == 0) return 0;
  uint64_t phi = 0, half = (uint64_t)v->cap / 2;
  for (uint32_t id = (uint32_t)j; id != RDX_CGRXU_NONE;) {
    const rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, id);
    if (h->size > half) phi += h->size - half;
    id = h->next;
  }
  uint64_t b = (phi + m) / half;
  return b < m ? b : m;
}

#ifdef RDX_CGRXU_ATOMIC_ADD32 /* the updaters' (cgrxu.c, cgrxu.cu) */

/* Erase from chain j every pair whose key is in keys[0, m) (sorted ascending, unique); returns
 * the pairs removed. Linked nodes left empty are unlinked and pushed on the free stack
 * (free_ids, its top at *free_top, bumped with RDX_CGRXU_ATOMIC_ADD32). */
RDX_HD uint64_t rdx_cgrxu_erase_chain(const rdx_cgrxu_view *v, int64_t j, const uint64_t *keys, int64_t m,
                                      uint32_t *free_ids, uint32_t *free_top) {
  uint64_t gone = 0;
  int64_t e = 0;
  uint32_t prev = RDX_CGRXU_NONE;
  for (uint32_t id = (uint32_t)j; id != RDX_CGRXU_NONE && e < m;) {
    rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, id);
    const uint32_t next = h->next;
    char *p = rdx_cgrxu_pairs_of(v, id);
    int w = 0;
    for (int i = 0; i < (int)h->size; i++) {
      uint64_t k = rdx_cgrxu_key(v, p, i);
      while (e < m && keys[e] < k) e++;
      if (e < m && keys[e] == k) {
        gone++;
        continue;
      }
      if (w != i) rdx_cgrxu_move(v, p, w, p, i);
      w++;
    }
    h->size = (uint32_t)w;
    if (w > 0) h->max_key = rdx_cgrxu_key(v, p, w - 1);
    if (w == 0 && id != (uint32_t)j) { /* unlink and free an emptied linked node */
      rdx_cgrxu_head_of(v, prev)->next = next;
      h->next = RDX_CGRXU_NONE;
      free_ids[RDX_CGRXU_ATOMIC_ADD32(free_top, 1u)] = id;
    } else {
      prev = id;
    }
    id = next;
  }
  return gone;
}

/* A node for a split: from the free stack's top n_free entries first, then fresh ids. */
RDX_HD uint32_t rdx_cgrxu_new_node(const uint32_t *free_ids, uint32_t n_free, uint32_t fresh, uint32_t *taken) {
  uint32_t t = RDX_CGRXU_ATOMIC_ADD32(taken, 1u);
  return t < n_free ? free_ids[n_free - 1 - t] : fresh + (t - n_free);
}

/* Insert pairs (keys[i], rows[i]), i < m, sorted by (key, row), into chain j. */
RDX_HD void rdx_cgrxu_insert_chain(const rdx_cgrxu_view *v, int64_t j, const uint64_t *keys, const uint64_t *rows,
                                   int64_t m, const uint32_t *free_ids, uint32_t n_free, uint32_t fresh,
                                   uint32_t *taken) {
  uint32_t id = (uint32_t)j;
  const int C = v->cap;
  for (int64_t i = 0; i < m; i++) {
    const uint64_t k = keys[i], r = rows[i];
    /* the first node whose last pair is >= (k, r), or the chain's last; the inserts come in
     * order, so the search goes on from the node the last one went to */
    for (;;) {
      rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, id);
      if (h->next == RDX_CGRXU_NONE) break;
      if (h->size > 0) {
        const char *p = rdx_cgrxu_pairs_of(v, id);
        uint64_t lk = rdx_cgrxu_key(v, p, (int)h->size - 1), lr = rdx_cgrxu_row(v, p, (int)h->size - 1);
        if (!rdx_cgrxu_less(lk, lr, k, r)) break;
      }
      id = h->next;
    }
    rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, id);
    char *p = rdx_cgrxu_pairs_of(v, id);
    if ((int)h->size == C) { /* split: the upper half moves to a new node after this one */
      uint32_t nid = rdx_cgrxu_new_node(free_ids, n_free, fresh, taken);
      rdx_cgrxu_head *nh = rdx_cgrxu_head_of(v, nid);
      char *np = rdx_cgrxu_pairs_of(v, nid);
      const int half = C / 2;
      for (int t = half; t < C; t++) rdx_cgrxu_move(v, np, t - half, p, t);
      nh->size = (uint32_t)(C - half);
      nh->max_key = h->max_key;
      nh->next = h->next;
      h->size = (uint32_t)half;
      h->max_key = rdx_cgrxu_key(v, p, half - 1);
      h->next = nid;
      uint64_t lk = rdx_cgrxu_key(v, p, half - 1), lr = rdx_cgrxu_row(v, p, half - 1);
      if (rdx_cgrxu_less(lk, lr, k, r)) { /* (k, r) belongs to the upper half */
        id = nid;
        h = nh;
        p = np;
      }
    }
    int at = (int)h->size; /* after every pair <= (k, r) */
    while (at > 0 && rdx_cgrxu_less(k, r, rdx_cgrxu_key(v, p, at - 1), rdx_cgrxu_row(v, p, at - 1))) {
      rdx_cgrxu_move(v, p, at, p, at - 1);
      at--;
    }
    rdx_cgrxu_put(v, p, at, k, r);
    h->size++;
    h->max_key = rdx_cgrxu_key(v, p, (int)h->size - 1);
  }
}

#endif /* RDX_CGRXU_ATOMIC_ADD32 */

/* The bucket of each key: locate's, or nb for keys above the build's largest (RDX_CGRX_MISS). */
RDX_HD int64_t rdx_cgrxu_bucket(const rdx_cgrxu_view *v, int64_t located) {
  return located == RDX_CGRX_MISS ? v->nb : located;
}

#endif /* RDX_CGRXU_HD_H */
