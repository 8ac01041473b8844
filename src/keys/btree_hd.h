/*
 * btree_hd.h: the btree kind's node layout, bulk load and search, shared by the CPU (btree.c)
 * and CUDA (btree.cu) backends.
 *
 * A B+-tree of 128-byte nodes (one GPU cache line: four 32-byte sectors, fetched by eight lanes
 * with one 16-byte load each), bulk-loaded from the sorted (key, row) entries. Unlike the
 * sorted kind's implicit k-ary tree (sorted_hd.h), these are real nodes: leaves hold the pairs
 * themselves with a next-leaf link, inner nodes hold separators and the index of their first
 * child. Children of a node are consecutive in the level below.
 *
 *   width 32 (u32 keys, rows < 2^32):                 width 64 (u64 keys, or rows >= 2^32):
 *   leaf   bytes   0..119  15 pairs {u32 key, u32 row}   bytes   0..111  7 pairs {u64 key, u64 row}
 *          bytes 120..123  count (pairs used, 1..15)     bytes 112..115  count (1..7)
 *          bytes 124..127  next leaf (or NONE)           bytes 116..119  next leaf (or NONE)
 *                                                        bytes 120..127  zero
 *   inner  bytes   0..123  31 separators (u32)          bytes   0..119  15 separators (u64)
 *          bytes 124..127  first child (u32)             bytes 120..127  first child (u64)
 *   fan-out 32, 8.53 bytes per key in the leaves         fan-out 16, 18.3 bytes per key in the leaves
 *
 * Eight "lanes" of 16 bytes make a node. Lane l of a width-32 leaf holds pairs 2l and 2l+1
 * (lane 7: pair 14 and the header); lane l of a width-64 leaf holds pair l (lane 7: the header).
 * Lane l of a width-32 inner node holds separators 4l..4l+3 (lane 7: 28..30 and the first
 * child); of a width-64 one, separators 2l, 2l+1 (lane 7: 14 and the first child). The search
 * is written per lane: the GPU gives each lane of an 8-thread tile its own slice (one coalesced
 * 128-byte load per node), the CPU sums the same per-lane counts in a loop.
 *
 * Separators: sep[k] = the largest key in child k's subtree, for every child but the last; the
 * slots past a node's children hold the maximum key value. The child to descend into is
 * first_child + (number of separators < q): every subtree to its left holds only keys < q, and
 * its own largest key is >= q (or it is the rightmost child). So the descent ends in the leaf
 * that holds lower_bound(q), the first entry with key >= q -- also when a run of equal keys
 * spans several leaves, and its smallest row comes first because entries are sorted by
 * (key, row). Leaf slots past `count` hold the maximum key, so counting keys < q over the whole
 * leaf gives the position without reading `count` first.
 *
 * Bulk load: every leaf is full except the last, and every inner node has `fanout` children
 * except the last of its level. Then the subtree of node j at depth d covers the entries
 * [j * below[d] * leaf_cap, (j + 1) * below[d] * leaf_cap), so each separator is read straight
 * from the entries (the last entry of the subtree) and every node -- leaves and all inner
 * levels -- is written in one parallel pass, with no level waiting for the one below. The same
 * fact turns (leaf, slot) into a global entry position (leaf * leaf_cap + slot), so a count is
 * the difference of two descents. Inner nodes are stored top-down (root first), so the top
 * levels are one prefix of the array, which the GPU copies into shared memory.
 *
 * The papers' B+ baseline (RX, Henneberg and Schuhknecht 2023, section 4.1; cgRX section 6) is
 * Awad et al.'s GPU B+-tree: bulk-loaded after a CUB radix sort, searched by 16-thread tiles,
 * 32-bit keys only. This one keeps the bulk load after a radix sort, searches with 8-thread
 * tiles (a 128-byte node is eight 16-byte loads), and takes u64 keys too.
 *
 * Tuned for 2^20..2^28 keys, random point lookups and ranges of any width (H200 target: 2^26
 * u32 keys at under 10 bytes per key: leaves 8.53, inner nodes 0.28).
 */
#ifndef RDX_BTREE_HD_H
#define RDX_BTREE_HD_H

#include "keys/keys.h"

#define RDX_BTREE_NODE_BYTES 128
#define RDX_BTREE_LANES 8               /* 16-byte slices per node */
#define RDX_BTREE_MAX_LEVELS 24         /* inner levels: 16^24 leaves is far past any memory */
#define RDX_BTREE_NONE 0xFFFFFFFFu      /* next link of the last leaf */
#define RDX_BTREE_LEAF_CAP32 15
#define RDX_BTREE_LEAF_CAP64 7
#define RDX_BTREE_FANOUT32 32
#define RDX_BTREE_FANOUT64 16

typedef struct rdx_btree_leaf32 {
  rdx_pair32 pairs[RDX_BTREE_LEAF_CAP32]; /* sorted by (key, row); unused: {UINT32_MAX, 0} */
  uint32_t count;                         /* pairs used, 1..15 (< 15 only in the last leaf) */
  uint32_t next;                          /* index of the next leaf, RDX_BTREE_NONE at the end */
} rdx_btree_leaf32;

typedef struct rdx_btree_leaf64 {
  rdx_pair64 pairs[RDX_BTREE_LEAF_CAP64]; /* sorted by (key, row); unused: {UINT64_MAX, 0} */
  uint32_t count;                         /* pairs used, 1..7 */
  uint32_t next;                          /* next leaf or RDX_BTREE_NONE */
  uint64_t pad;                           /* zero */
} rdx_btree_leaf64;

typedef struct rdx_btree_inner32 {
  uint32_t sep[RDX_BTREE_FANOUT32 - 1];   /* sep[k] = largest key under child k; UINT32_MAX past the children */
  uint32_t first_child;                   /* index of child 0 in the level below (inner array or leaves) */
} rdx_btree_inner32;

typedef struct rdx_btree_inner64 {
  uint64_t sep[RDX_BTREE_FANOUT64 - 1];   /* as above, UINT64_MAX past the children */
  uint64_t first_child;                   /* < 2^32 */
} rdx_btree_inner64;

typedef struct rdx_btree_layout {
  int width;                                /* 32 or 64, as the entries */
  int leaf_cap;                             /* pairs per leaf: 15 or 7 */
  int fanout;                               /* children per inner node: 32 or 16 */
  int n_levels;                             /* inner levels; 0 when one leaf is the whole tree */
  int64_t n;                                /* entries, >= 1 */
  int64_t n_leaves;
  int64_t n_inner;                          /* inner nodes over all levels */
  int64_t off[RDX_BTREE_MAX_LEVELS];        /* first node of depth d (0 = root) in the inner array */
  int64_t len[RDX_BTREE_MAX_LEVELS + 1];    /* nodes at depth d; len[n_levels] = n_leaves */
  int64_t below[RDX_BTREE_MAX_LEVELS + 1];  /* leaves under one node of depth d; below[n_levels] = 1 */
} rdx_btree_layout;

/* Plan the levels for n >= 1 entries of the given width. Returns 0, or -1 when the tree would
 * need leaf or node indices past 32 bits (far beyond any memory today). */
RDX_HD int rdx_btree_plan(rdx_btree_layout *L, int64_t n, int width) {
  L->width = width;
  L->leaf_cap = width == 32 ? RDX_BTREE_LEAF_CAP32 : RDX_BTREE_LEAF_CAP64;
  L->fanout = width == 32 ? RDX_BTREE_FANOUT32 : RDX_BTREE_FANOUT64;
  L->n = n;
  L->n_leaves = (n + L->leaf_cap - 1) / L->leaf_cap;
  int64_t up[RDX_BTREE_MAX_LEVELS]; /* level sizes, bottom inner level first */
  int h = 0;
  for (int64_t len = L->n_leaves; len > 1;) {
    if (h == RDX_BTREE_MAX_LEVELS) return -1;
    len = (len + L->fanout - 1) / L->fanout;
    up[h++] = len;
  }
  L->n_levels = h;
  int64_t off = 0;
  for (int d = 0; d < h; d++) {
    L->len[d] = up[h - 1 - d];
    L->off[d] = off;
    off += L->len[d];
  }
  L->len[h] = L->n_leaves;
  L->n_inner = off;
  L->below[h] = 1;
  for (int d = h - 1; d >= 0; d--) L->below[d] = L->below[d + 1] * L->fanout;
  if (L->n_leaves >= (int64_t)RDX_BTREE_NONE || L->n_inner >= (int64_t)RDX_BTREE_NONE) return -1;
  return 0;
}

/* ---- the bulk load, one 16-byte lane of one node at a time (w: 4 little-endian words) ---- */

/* Depth of inner node `node` (index in the top-down inner array). */
RDX_HD int rdx_btree_depth(const rdx_btree_layout *L, int64_t node) {
  int d = 0;
  while (d + 1 < L->n_levels && node >= L->off[d + 1]) d++;
  return d;
}

/* Index (into the entries) of the last entry under child j of depth d + 1, for inner node
 * separators: the subtree of j covers below[d + 1] leaves of leaf_cap entries. */
RDX_HD int64_t rdx_btree_last_under(const rdx_btree_layout *L, int d, int64_t j) {
  int64_t end = (j + 1) * L->below[d + 1] * L->leaf_cap;
  return (end < L->n ? end : L->n) - 1;
}

/* What slot k of inner node `node` holds: returns 1 with *v = the first child's index when k is
 * the child slot (k = fanout - 1); else 0 with *v = the index of the entry whose key is
 * separator k, or -1 for a slot past the node's children (it holds the maximum key). */
RDX_HD int rdx_btree_inner_slot(const rdx_btree_layout *L, int64_t node, int k, int64_t *v) {
  int d = rdx_btree_depth(L, node);
  int64_t i = node - L->off[d];
  if (k == L->fanout - 1) {
    *v = (d + 1 < L->n_levels ? L->off[d + 1] : 0) + i * L->fanout;
    return 1;
  }
  int64_t kids = L->len[d + 1] - i * L->fanout; /* children of this node */
  if (kids > L->fanout) kids = L->fanout;
  *v = k < kids - 1 ? rdx_btree_last_under(L, d, i * L->fanout + k) : -1;
  return 0;
}

RDX_HD void rdx_btree_inner_lane32(const rdx_pair32 *e, const rdx_btree_layout *L, int64_t node,
                                   int lane, uint32_t w[4]) {
  for (int t = 0; t < 4; t++) {
    int64_t v;
    if (rdx_btree_inner_slot(L, node, 4 * lane + t, &v)) w[t] = (uint32_t)v;
    else w[t] = v < 0 ? UINT32_MAX : e[v].key;
  }
}

RDX_HD void rdx_btree_inner_lane64(const rdx_pair64 *e, const rdx_btree_layout *L, int64_t node,
                                   int lane, uint32_t w[4]) {
  for (int t = 0; t < 2; t++) {
    int64_t v;
    uint64_t x;
    if (rdx_btree_inner_slot(L, node, 2 * lane + t, &v)) x = (uint64_t)v;
    else x = v < 0 ? UINT64_MAX : e[v].key;
    w[2 * t] = (uint32_t)x;
    w[2 * t + 1] = (uint32_t)(x >> 32);
  }
}

RDX_HD void rdx_btree_leaf_lane32(const rdx_pair32 *e, const rdx_btree_layout *L, int64_t leaf,
                                  int lane, uint32_t w[4]) {
  int64_t base = leaf * RDX_BTREE_LEAF_CAP32;
  for (int t = 0; t < 2; t++) {
    int slot = 2 * lane + t;
    if (slot == RDX_BTREE_LEAF_CAP32) { /* lane 7, second half: the header */
      int64_t count = L->n - base;
      w[2] = (uint32_t)(count < RDX_BTREE_LEAF_CAP32 ? count : RDX_BTREE_LEAF_CAP32);
      w[3] = leaf + 1 < L->n_leaves ? (uint32_t)(leaf + 1) : RDX_BTREE_NONE;
    } else if (base + slot < L->n) {
      w[2 * t] = e[base + slot].key;
      w[2 * t + 1] = e[base + slot].row;
    } else {
      w[2 * t] = UINT32_MAX;
      w[2 * t + 1] = 0;
    }
  }
}

RDX_HD void rdx_btree_leaf_lane64(const rdx_pair64 *e, const rdx_btree_layout *L, int64_t leaf,
                                  int lane, uint32_t w[4]) {
  int64_t base = leaf * RDX_BTREE_LEAF_CAP64;
  if (lane == RDX_BTREE_LEAF_CAP64) { /* the header */
    int64_t count = L->n - base;
    w[0] = (uint32_t)(count < RDX_BTREE_LEAF_CAP64 ? count : RDX_BTREE_LEAF_CAP64);
    w[1] = leaf + 1 < L->n_leaves ? (uint32_t)(leaf + 1) : RDX_BTREE_NONE;
    w[2] = w[3] = 0;
  } else if (base + lane < L->n) {
    rdx_pair64 p = e[base + lane];
    w[0] = (uint32_t)p.key, w[1] = (uint32_t)(p.key >> 32);
    w[2] = (uint32_t)p.row, w[3] = (uint32_t)(p.row >> 32);
  } else {
    w[0] = w[1] = UINT32_MAX;
    w[2] = w[3] = 0;
  }
}

/* ---- the search, per lane: counts of keys < q in one 16-byte slice ---- */

/* Inner node, width 32: separators 4 lane .. 4 lane + 3 (lane 7's last word is the child). */
RDX_HD int rdx_btree_inner_count32(uint32_t a, uint32_t b, uint32_t c, uint32_t d, int lane,
                                   uint32_t q) {
  return (a < q) + (b < q) + (c < q) + (lane != RDX_BTREE_LANES - 1 && d < q);
}
/* Inner node, width 64: separators 2 lane, 2 lane + 1 (lane 7's second is the child). */
RDX_HD int rdx_btree_inner_count64(uint64_t a, uint64_t b, int lane, uint64_t q) {
  return (a < q) + (lane != RDX_BTREE_LANES - 1 && b < q);
}
/* Leaf, width 32: keys of pairs 2 lane and 2 lane + 1 (lane 7's second half is the header). */
RDX_HD int rdx_btree_leaf_count32(uint32_t key_a, uint32_t key_b, int lane, uint32_t q) {
  return (key_a < q) + (lane != RDX_BTREE_LANES - 1 && key_b < q);
}
/* Leaf, width 64: the key of pair `lane` (lane 7 is the header). */
RDX_HD int rdx_btree_leaf_count64(uint64_t key, int lane, uint64_t q) {
  return lane != RDX_BTREE_LANES - 1 && key < q;
}

/* lower_bound: the global position (leaf * leaf_cap + slot) of the first entry with key >= q;
 * a position >= n means none. The scalar form of the GPU's tile search (btree.cu). */
RDX_HD int64_t rdx_btree_lower32(const rdx_btree_inner32 *inner, const rdx_btree_leaf32 *leaves,
                                 const rdx_btree_layout *L, uint32_t q) {
  uint32_t node = 0;
  for (int d = 0; d < L->n_levels; d++) {
    const uint32_t *w = (const uint32_t *)(inner + node);
    int c = 0;
    for (int lane = 0; lane < RDX_BTREE_LANES; lane++)
      c += rdx_btree_inner_count32(w[4 * lane], w[4 * lane + 1], w[4 * lane + 2], w[4 * lane + 3], lane, q);
    node = inner[node].first_child + (uint32_t)c;
  }
  const uint32_t *w = (const uint32_t *)(leaves + node);
  int p = 0;
  for (int lane = 0; lane < RDX_BTREE_LANES; lane++)
    p += rdx_btree_leaf_count32(w[4 * lane], w[4 * lane + 2], lane, q);
  return (int64_t)node * RDX_BTREE_LEAF_CAP32 + p;
}

RDX_HD int64_t rdx_btree_lower64(const rdx_btree_inner64 *inner, const rdx_btree_leaf64 *leaves,
                                 const rdx_btree_layout *L, uint64_t q) {
  uint64_t node = 0;
  for (int d = 0; d < L->n_levels; d++) {
    const uint64_t *w = (const uint64_t *)(inner + node);
    int c = 0;
    for (int lane = 0; lane < RDX_BTREE_LANES; lane++)
      c += rdx_btree_inner_count64(w[2 * lane], w[2 * lane + 1], lane, q);
    node = inner[node].first_child + (uint64_t)c;
  }
  const uint64_t *w = (const uint64_t *)(leaves + node);
  int p = 0;
  for (int lane = 0; lane < RDX_BTREE_LANES; lane++) p += rdx_btree_leaf_count64(w[2 * lane], lane, q);
  return (int64_t)node * RDX_BTREE_LEAF_CAP64 + p;
}

#endif /* RDX_BTREE_HD_H */
