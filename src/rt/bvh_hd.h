/*
 * bvh_hd.h: the steps of the LBVH build, one element at a time, shared by the CPU (bvh.c) and
 * CUDA (bvh.cu) builders so that both build the same tree, bit for bit.
 *
 * The build follows Karras, "Maximizing parallelism in the construction of BVHs, octrees, and
 * k-d trees" (HPG 2012):
 *   1. primitive boxes; primitives with a NaN or infinite coordinate are inactive and left out
 *      (OptiX skips such triangles too, so cgRX can leave slots empty with NaN vertices);
 *   2. 63-bit Morton codes of the box centres, each axis normalised to the scene's centroid box
 *      (per axis, as Karras does), unless the caller gives its own sort codes;
 *   3. a sort of (code, input index), so ties are broken by index and the order is unique;
 *   4. the binary radix tree over the sorted codes: internal node i covers a range with one end
 *      at i, and its split is where the common prefix of the (code, index) keys ends;
 *   5. subtrees of at most RDX_RT_LEAF_MAX primitives become leaves; the nodes that remain are
 *      renumbered by a prefix sum in index order (the root stays 0);
 *   6. boxes bottom-up: a node's box is finished by whichever of its children arrives last
 *      (an atomic counter per node);
 *   7. (BVH4, the default) the binary tree collapsed into a 4-wide one: the binary nodes at even
 *      depth (root 0) become BVH4 nodes, each taking as its slots its grandchildren through its
 *      internal children and its leaf children directly, boxes copied from the binary nodes; BVH4
 *      nodes are numbered by a prefix sum in binary node order (the root stays 0). The rule is
 *      local to a node, so both backends collapse in parallel into the same tree. (A greedy
 *      surface-area collapse fills nodes better but needs a top-down pass; left for later.)
 * Box unions are exact (min/max of floats), so the tree is the same on every backend.
 */
#ifndef RDX_BVH_HD_H
#define RDX_BVH_HD_H

#include "rt/rt_hd.h"

/* Bit set on a child reference of the radix tree when it is a primitive, not a node. */
#define RDX_LBVH_LEAF 0x80000000u

/* The radix tree's internal node, before collapsing. 16 bytes. */
typedef struct rdx_lbvh_node {
  uint32_t first, last;   /* sorted primitive range covered */
  uint32_t left, right;   /* internal node index, or primitive position | RDX_LBVH_LEAF */
} rdx_lbvh_node;

RDX_HD int rdx_rt_finite(float v) { return v == v && v - v == 0.0f; }

/* Box of input primitive i; returns 0 for an inactive one. */
RDX_HD int rdx_lbvh_prim_box(int kind, const float *prims, int64_t i, float *lo, float *hi) {
  int ok = 1;
  if (kind == RDX_RT_TRIANGLES) {
    const float *v = prims + i * 9;
    for (int a = 0; a < 3; a++) {
      float x = v[a], y = v[3 + a], z = v[6 + a];
      ok &= rdx_rt_finite(x) & rdx_rt_finite(y) & rdx_rt_finite(z);
      float l = x < y ? x : y, h = x < y ? y : x;
      lo[a] = l < z ? l : z;
      hi[a] = h > z ? h : z;
    }
  } else {
    const float *b = prims + i * 6;
    for (int a = 0; a < 3; a++) {
      ok &= rdx_rt_finite(b[a]) & rdx_rt_finite(b[3 + a]) & (b[a] <= b[3 + a]);
      lo[a] = b[a];
      hi[a] = b[3 + a];
    }
  }
  return ok;
}

/* Spread the low 21 bits of v to every third bit. */
RDX_HD uint64_t rdx_morton_spread(uint64_t v) {
  v &= 0x1FFFFFull;
  v = (v | v << 32) & 0x1F00000000FFFFull;
  v = (v | v << 16) & 0x1F0000FF0000FFull;
  v = (v | v << 8) & 0x100F00F00F00F00Full;
  v = (v | v << 4) & 0x10C30C30C30C30C3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

/* Morton code of a box centre; lo/scale map the centroid box onto [0, 2^21). The operations
 * (add, halve, subtract, multiply) cannot be contracted into FMAs, so CPU and GPU agree. */
RDX_HD uint64_t rdx_lbvh_code(const float *blo, const float *bhi, const float *lo, const float *scale) {
  uint64_t q[3];
  for (int a = 0; a < 3; a++) {
    float c = RDX_FMUL(RDX_FADD(blo[a], bhi[a]), 0.5f);
    float f = RDX_FMUL(RDX_FSUB(c, lo[a]), scale[a]);
    q[a] = f <= 0.0f ? 0 : f >= 2097151.0f ? 2097151 : (uint64_t)f;
  }
  return rdx_morton_spread(q[0]) << 2 | rdx_morton_spread(q[1]) << 1 | rdx_morton_spread(q[2]);
}

RDX_HD int rdx_clz64(uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __clzll((long long)v);
#else
  return v ? __builtin_clzll(v) : 64;
#endif
}
RDX_HD int rdx_clz32(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __clz((int)v);
#else
  return v ? __builtin_clz(v) : 32;
#endif
}

/* Common prefix length of the (code, position) keys at sorted positions i and j; -1 outside. */
RDX_HD int rdx_lbvh_delta(const uint64_t *codes, int64_t n, int64_t i, int64_t j) {
  if (j < 0 || j >= n) return -1;
  uint64_t a = codes[i], b = codes[j];
  if (a != b) return rdx_clz64(a ^ b);
  return 64 + rdx_clz32((uint32_t)i ^ (uint32_t)j);
}

/* Step 4: internal node i of n - 1 (n >= 2 sorted codes). */
RDX_HD void rdx_lbvh_internal(const uint64_t *codes, int64_t n, int64_t i, rdx_lbvh_node *out) {
  int d = rdx_lbvh_delta(codes, n, i, i + 1) - rdx_lbvh_delta(codes, n, i, i - 1) > 0 ? 1 : -1;
  int dmin = rdx_lbvh_delta(codes, n, i, i - d);
  int64_t lmax = 2;
  while (rdx_lbvh_delta(codes, n, i, i + lmax * d) > dmin) lmax *= 2;
  int64_t l = 0;
  for (int64_t t = lmax / 2; t >= 1; t /= 2)
    if (rdx_lbvh_delta(codes, n, i, i + (l + t) * d) > dmin) l += t;
  int64_t j = i + l * d;
  int dnode = rdx_lbvh_delta(codes, n, i, j);
  int64_t s = 0;
  for (int64_t div = 2;; div *= 2) {
    int64_t t = (l + div - 1) / div;
    if (rdx_lbvh_delta(codes, n, i, i + (s + t) * d) > dnode) s += t;
    if (t <= 1) break;
  }
  int64_t g = i + s * d + (d < 0 ? -1 : 0);
  int64_t lo = i < j ? i : j, hi = i < j ? j : i;
  out->first = (uint32_t)lo;
  out->last = (uint32_t)hi;
  out->left = lo == g ? (uint32_t)g | RDX_LBVH_LEAF : (uint32_t)g;
  out->right = hi == g + 1 ? (uint32_t)(g + 1) | RDX_LBVH_LEAF : (uint32_t)(g + 1);
}

RDX_HD uint32_t rdx_lbvh_size(const rdx_lbvh_node *t, uint32_t ref) {
  if (ref & RDX_LBVH_LEAF) return 1;
  return t[ref].last - t[ref].first + 1;
}

/* Step 5: whether internal node i survives collapsing. */
RDX_HD uint32_t rdx_lbvh_kept(const rdx_lbvh_node *t, int64_t i) {
  return i == 0 || t[i].last - t[i].first + 1 > RDX_RT_LEAF_MAX;
}

/* Step 5: the final node of kept internal node i (newidx: exclusive prefix sum of kept flags),
 * boxes left empty; records for each kept child its parent and slot, and how many kept children
 * node i has. */
RDX_HD void rdx_lbvh_emit(const rdx_lbvh_node *t, const uint32_t *newidx, int64_t i, rdx_bvh_node *nodes,
                          uint32_t *parent, uint32_t *n_internal) {
  uint32_t me = newidx[i];
  rdx_bvh_node *nd = nodes + me;
  uint32_t refs[2] = {t[i].left, t[i].right};
  uint32_t k = 0;
  for (int c = 0; c < 2; c++) {
    uint32_t r = refs[c];
    for (int a = 0; a < 6; a++) nd->box[c][a] = 0.0f;
    if (r & RDX_LBVH_LEAF) {
      nd->child[c] = r & ~RDX_LBVH_LEAF;
      nd->count[c] = 1;
    } else if (t[r].last - t[r].first + 1 <= RDX_RT_LEAF_MAX) {
      nd->child[c] = t[r].first;
      nd->count[c] = t[r].last - t[r].first + 1;
    } else {
      nd->child[c] = newidx[r];
      nd->count[c] = 0;
      parent[newidx[r]] = me << 1 | (uint32_t)c;
      k++;
    }
  }
  n_internal[me] = k;
}

/* Union box of leaf slots [first, first + count) of the leaf-ordered primitives. */
RDX_HD void rdx_lbvh_leaf_box(int kind, const float *prims, uint32_t first, uint32_t count, float *box) {
  for (int a = 0; a < 3; a++) {
    box[a] = INFINITY;
    box[3 + a] = -INFINITY;
  }
  for (uint32_t s = first; s < first + count; s++) {
    float lo[3], hi[3];
    rdx_lbvh_prim_box(kind, prims, s, lo, hi);
    for (int a = 0; a < 3; a++) {
      if (lo[a] < box[a]) box[a] = lo[a];
      if (hi[a] > box[3 + a]) box[3 + a] = hi[a];
    }
  }
}

RDX_HD void rdx_lbvh_union(const float *a, const float *b, float *out) {
  for (int i = 0; i < 3; i++) {
    out[i] = a[i] < b[i] ? a[i] : b[i];
    out[3 + i] = a[3 + i] > b[3 + i] ? a[3 + i] : b[3 + i];
  }
}

/* Fill the leaf boxes of node m and return its own box in out. */
RDX_HD void rdx_lbvh_finish_node(int kind, const float *prims, rdx_bvh_node *nodes, uint32_t m, float *out) {
  rdx_bvh_node *nd = nodes + m;
  for (int c = 0; c < 2; c++)
    if (nd->count[c] > 0) rdx_lbvh_leaf_box(kind, prims, nd->child[c], nd->count[c], nd->box[c]);
  rdx_lbvh_union(nd->box[0], nd->box[1], out);
}

/* Step 7: record node i as the parent of its internal children (parent[0] is left alone). */
RDX_HD void rdx_bvh4_parents(const rdx_bvh_node *nodes, int64_t i, uint32_t *parent) {
  for (int c = 0; c < 2; c++)
    if (nodes[i].count[c] == 0 && nodes[i].child[c] != RDX_BVH_NONE) parent[nodes[i].child[c]] = (uint32_t)i;
}

/* Step 7: whether binary node i becomes a BVH4 node (its depth is even). */
RDX_HD uint32_t rdx_bvh4_kept(const uint32_t *parent, int64_t i) {
  uint32_t d = 0;
  for (uint32_t m = (uint32_t)i; m != 0; m = parent[m]) d++;
  return (d & 1u) == 0;
}

RDX_HD void rdx_bvh4_put(rdx_bvh4_node *w, int k, const float *box, uint32_t child, uint32_t count) {
  for (int a = 0; a < 3; a++) {
    w->lo[a][k] = box[a];
    w->hi[a][k] = box[3 + a];
  }
  w->child[k] = child;
  w->count[k] = count;
}

/* Step 7: the BVH4 node of kept binary node i (newidx: exclusive prefix sum of kept flags). */
RDX_HD void rdx_bvh4_emit(const rdx_bvh_node *nodes, const uint32_t *newidx, int64_t i, rdx_bvh4_node *out) {
  rdx_bvh4_node *w = out + newidx[i];
  for (int k = 0; k < 4; k++) {
    for (int a = 0; a < 3; a++) w->lo[a][k] = INFINITY, w->hi[a][k] = -INFINITY;
    w->child[k] = RDX_BVH_NONE;
    w->count[k] = 0;
  }
  int k = 0;
  const rdx_bvh_node *b = nodes + i;
  for (int c = 0; c < 2; c++) {
    if (b->child[c] == RDX_BVH_NONE) continue;
    if (b->count[c] > 0) {
      rdx_bvh4_put(w, k++, b->box[c], b->child[c], b->count[c]);
      continue;
    }
    const rdx_bvh_node *g = nodes + b->child[c];
    for (int e = 0; e < 2; e++) {
      if (g->child[e] == RDX_BVH_NONE) continue;
      if (g->count[e] > 0) rdx_bvh4_put(w, k++, g->box[e], g->child[e], g->count[e]);
      else rdx_bvh4_put(w, k++, g->box[e], newidx[g->child[e]], 0);
    }
  }
}

#endif /* RDX_BVH_HD_H */
