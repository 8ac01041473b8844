/*
 * traverse_hd.h: walking the trees, shared by the CPU backend (query.c, update_cpu.c) and the
 * CUDA kernels (query.cu, update*.cu): G-PICS Step I (each query descends and lists the leaves it
 * needs), leaf finding for updates, and the exact kNN branch-and-bound.
 *
 * Both kinds use one node layout (spatial.h, rdx_sp_nodes): nodes in BFS order, children
 * contiguous at fpos .. fpos + len - 1, leaves' points at fpos .. fpos + len - 1 of the pool.
 *  - Quadtree: a node's cell comes from (key, level) and the grid. Children are sorted by key.
 *  - k-d tree: internal node at level l splits on axis l % 2 (x first) at split s; the left child
 *    (fpos) holds points with c <= s, the right (fpos + 1) points with c >= s. Regions are closed
 *    on both sides, so equal coordinates on both sides of a median are always found; a region is
 *    the box cut by its ancestors' splits, carried down the stack.
 *
 * Stacks are explicit and bounded: a quadtree pop pushes at most 4 children, so depth D <= 31
 * needs at most 3 * D + 1 entries; a k-d pop pushes 2, so depth <= 56 needs 57.
 */
#ifndef RDX_SPATIAL_TRAVERSE_HD_H
#define RDX_SPATIAL_TRAVERSE_HD_H

#include "spatial/geom_hd.h"

#define RDX_SP_STACK 96

/* Raw pointers to one tree in one memory (host or device), passed by value to kernels. */
typedef struct rdx_sp_view {
  const uint64_t *key;    /* nodes: Morton code (quadtree) or path bits (k-d) at the node's level */
  const int64_t *fpos;    /* first child / first point slot */
  const int64_t *len;     /* children / points */
  const double *split;    /* k-d internal nodes: split coordinate */
  const uint8_t *level;
  const uint8_t *leaf;
  int64_t n_nodes;
  const void *x, *y;      /* pool coordinates, f32 or f64 */
  const uint64_t *id;     /* pool ids */
  const void *pkey;       /* quadtree: pool Morton codes (u32, or u64 when key64), or NULL (a paged GPU
                             pool: codes from the coordinates); k-d: NULL */
  int key64;
  int f64;                /* coordinates are f64 */
  int kd;                 /* 1: k-d tree, 0: quadtree */
  rdx_sp_grid g;
} rdx_sp_view;

/* ---- node tests ---- */

/* Quadtree windows in cell space: intersect when the cell ranges overlap; "full" (every point of
 * the node answers) when the node lies inside [fxl, fxh] x [fyl, fyh]: cells strictly inside the
 * query's edge cells, or up to an edge cell when the query edge lies beyond the box. */
typedef struct rdx_sp_cellq {
  int64_t cxl, cxh, cyl, cyh; /* cells the window touches */
  int64_t fxl, fxh, fyl, fyh; /* cells whose points all answer */
  int empty;                  /* the window is empty (xmin > xmax or ymin > ymax) */
} rdx_sp_cellq;

RDX_HD rdx_sp_cellq rdx_sp_window_cells(const rdx_sp_grid *g, double xmin, double ymin, double xmax, double ymax) {
  rdx_sp_cellq c;
  c.empty = !(xmin <= xmax && ymin <= ymax);
  c.cxl = rdx_sp_cell(xmin, g->x0, g->sx, g->max_cell);
  c.cxh = rdx_sp_cell(xmax, g->x0, g->sx, g->max_cell);
  c.cyl = rdx_sp_cell(ymin, g->y0, g->sy, g->max_cell);
  c.cyh = rdx_sp_cell(ymax, g->y0, g->sy, g->max_cell);
  c.fxl = xmin <= g->x0 ? c.cxl : c.cxl + 1;
  c.fxh = xmax >= g->x1 ? c.cxh : c.cxh - 1;
  c.fyl = ymin <= g->y0 ? c.cyl : c.cyl + 1;
  c.fyh = ymax >= g->y1 ? c.cyh : c.cyh - 1;
  return c;
}

/* The query's window in doubles (match: a degenerate window). */
RDX_HD void rdx_sp_query_window(int type, const rdx_sp_q *q, double *w) {
  if (type == RDX_SP_WINDOW) {
    w[0] = q->a, w[1] = q->b, w[2] = q->c, w[3] = q->d;
  } else {
    w[0] = w[2] = q->a;
    w[1] = w[3] = q->b;
  }
}

/* Test a node against a (non-kNN) query. Returns 0 (prune), 1 (visit) or 2 (every point answers).
 * region: the k-d node's region (NULL for quadtrees). */
RDX_HD int rdx_sp_node_test(const rdx_sp_view *v, int64_t node, const double *region, int type, const rdx_sp_q *q,
                            const rdx_sp_cellq *cq) {
  if (type == RDX_SP_WITHIN) {
    double b[4];
    if (v->kd) {
      b[0] = region[0], b[1] = region[1], b[2] = region[2], b[3] = region[3];
      if (rdx_sp_box_min_d2(b, q->a, q->b) > q->r2) return 0;
      return rdx_sp_box_max_d2(b, q->a, q->b) <= q->r2 ? 2 : 1;
    }
    uint32_t xl, xh, yl, yh;
    rdx_sp_node_cells(&v->g, v->key[node], v->level[node], &xl, &xh, &yl, &yh);
    rdx_sp_cells_box(&v->g, xl, xh, yl, yh, b);
    if (rdx_sp_box_min_d2(b, q->a, q->b) > rdx_sp_mul(q->r2, 1.0 + RDX_SP_PRUNE_MARGIN)) return 0;
    if (q->r2 >= RDX_SP_R2_FULL_MIN && rdx_sp_box_max_d2(b, q->a, q->b) <= rdx_sp_mul(q->r2, 1.0 - RDX_SP_PRUNE_MARGIN))
      return 2;
    return 1;
  }
  if (v->kd) {
    double w[4];
    rdx_sp_query_window(type, q, w);
    if (!(region[0] <= w[2] && w[0] <= region[2] && region[1] <= w[3] && w[1] <= region[3])) return 0;
    return (w[0] <= region[0] && region[2] <= w[2] && w[1] <= region[1] && region[3] <= w[3]) ? 2 : 1;
  }
  uint32_t xl, xh, yl, yh;
  rdx_sp_node_cells(&v->g, v->key[node], v->level[node], &xl, &xh, &yl, &yh);
  if ((int64_t)xh < cq->cxl || (int64_t)xl > cq->cxh || (int64_t)yh < cq->cyl || (int64_t)yl > cq->cyh) return 0;
  return ((int64_t)xl >= cq->fxl && (int64_t)xh <= cq->fxh && (int64_t)yl >= cq->fyl && (int64_t)yh <= cq->fyh) ? 2 : 1;
}

/* ---- Step I: the leaves one (non-kNN) query needs, one at a time ---- */

typedef struct rdx_sp_iter {
  int type;
  rdx_sp_q q;
  rdx_sp_cellq cq;
  int top;
  int64_t node[RDX_SP_STACK];
  double box[RDX_SP_STACK][4]; /* k-d regions, parallel to node[] */
} rdx_sp_iter;

RDX_HD void rdx_sp_iter_init(rdx_sp_iter *it, const rdx_sp_view *v, int type, const rdx_sp_q *q) {
  it->type = type;
  it->q = *q;
  double w[4];
  rdx_sp_query_window(type, q, w);
  it->cq = rdx_sp_window_cells(&v->g, w[0], w[1], w[2], w[3]);
  it->top = 0;
  if (v->n_nodes == 0 || (type != RDX_SP_WITHIN && it->cq.empty)) return;
  it->node[0] = 0;
  it->box[0][0] = v->g.x0, it->box[0][1] = v->g.y0, it->box[0][2] = v->g.x1, it->box[0][3] = v->g.y1;
  it->top = 1;
}

/* Next leaf: returns 1 with *leaf and *full (every point of the leaf answers), 0 when done. Empty
 * leaves are skipped. */
RDX_HD int rdx_sp_iter_next(rdx_sp_iter *it, const rdx_sp_view *v, int64_t *leaf, int *full) {
  while (it->top > 0) {
    int t = --it->top;
    int64_t nd = it->node[t];
    double r[4];
    r[0] = it->box[t][0], r[1] = it->box[t][1], r[2] = it->box[t][2], r[3] = it->box[t][3];
    int s = rdx_sp_node_test(v, nd, r, it->type, &it->q, &it->cq);
    if (s == 0) continue;
    if (v->leaf[nd]) {
      if (v->len[nd] == 0) continue;
      *leaf = nd;
      *full = s == 2;
      return 1;
    }
    int64_t c0 = v->fpos[nd], nc = v->len[nd];
    if (v->kd) {
      int axis = v->level[nd] & 1;
      double sp = v->split[nd];
      /* push right then left: left leaves come out first */
      for (int side = 1; side >= 0; side--) {
        int u = it->top++;
        it->node[u] = c0 + side;
        it->box[u][0] = r[0], it->box[u][1] = r[1], it->box[u][2] = r[2], it->box[u][3] = r[3];
        if (side == 0) it->box[u][2 + axis] = sp;
        else it->box[u][axis] = sp;
      }
    } else {
      for (int64_t c = c0 + nc - 1; c >= c0; c--) it->node[it->top++] = c;
    }
  }
  return 0;
}

/* ---- leaf finding (updates) ---- */

/* Quadtree: the leaf whose cell holds finest key k (returns it, *quadrant = -1), or the deepest
 * internal node whose child quadrant for k does not exist (returns it, *quadrant = 0..3). */
RDX_HD int64_t rdx_sp_qt_find(const rdx_sp_view *v, uint64_t k, int *quadrant) {
  int64_t nd = 0;
  int D = v->g.depth;
  for (;;) {
    if (v->leaf[nd]) {
      *quadrant = -1;
      return nd;
    }
    int l = v->level[nd] + 1;
    uint64_t ck = k >> (2 * (D - l));
    int64_t c0 = v->fpos[nd], nc = v->len[nd], next = -1;
    for (int64_t c = c0; c < c0 + nc; c++)
      if (v->key[c] == ck) next = c;
    if (next < 0) {
      *quadrant = (int)(ck & 3);
      return nd;
    }
    nd = next;
  }
}

/* The first of keys[lo, hi) (sorted) that is >= v, or hi. */
RDX_HD int64_t rdx_sp_lower_bound_u64(const uint64_t *keys, int64_t lo, int64_t hi, uint64_t v) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The leaf rule of both kinds, which builds and updates follow: a node is a leaf iff it holds at
 * most cap points or is at depth. */
RDX_HD int rdx_sp_leaf(int64_t count, int level, int depth, int64_t cap) { return count <= cap || level >= depth; }

/* The quadtree's split rule, for subtrees built from sorted finest codes (the planned update's
 * splits, on the host): the node at (level, key) holding keys[a, end) is a leaf by the rule above
 * (returns 1); else (returns 0) its quadrant q holds keys[b[q], b[q+1]). GPU updates find the same
 * bounds a warp at a time (update_qt.cu, split_tree_kernel). */
RDX_HD int rdx_sp_qt_quadrants(const uint64_t *keys, int64_t a, int64_t end, uint64_t key, int level, int depth,
                               int64_t cap, int64_t b[5]) {
  if (rdx_sp_leaf(end - a, level, depth, cap)) return 1;
  int sh = 2 * (depth - level - 1);
  b[0] = a, b[4] = end;
  for (int q = 1; q < 4; q++) b[q] = rdx_sp_lower_bound_u64(keys, b[q - 1], end, (4 * key + (uint64_t)q) << sh);
  return 0;
}

/* k-d tree: the leaf a point at (x, y) goes to (c <= s goes left). */
RDX_HD int64_t rdx_sp_kd_find(const rdx_sp_view *v, double x, double y) {
  int64_t nd = 0;
  while (!v->leaf[nd]) {
    double c = (v->level[nd] & 1) ? y : x;
    nd = v->fpos[nd] + (c <= v->split[nd] ? 0 : 1);
  }
  return nd;
}

/* k-d node code: level in the top 8 bits, path below (k-d depth <= 56); BFS order is ascending
 * code order. Quadtree keys reach 62 bits, so quadtrees never pack codes. */
RDX_HD uint64_t rdx_sp_code(int level, uint64_t key) { return ((uint64_t)level << 56) | key; }

/* The node with this code (binary search over BFS order), or -1. */
RDX_HD int64_t rdx_sp_find_code(const rdx_sp_view *v, uint64_t code) {
  int64_t lo = 0, hi = v->n_nodes;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (rdx_sp_code(v->level[mid], v->key[mid]) < code) lo = mid + 1;
    else hi = mid;
  }
  return lo < v->n_nodes && rdx_sp_code(v->level[lo], v->key[lo]) == code ? lo : -1;
}

/* ---- exact kNN: depth-first branch and bound, nearest child first ----
 * The pieces below are shared by the CPU walk (rdx_sp_knn) and the warp-cooperative CUDA walk
 * (query.cu, k <= 32), so both visit the same nodes in the same order and prune by the same rule. */

/* May a node whose computed nearest squared distance is md be skipped, the k-th best candidate
 * being at worst? Quadtree boxes are geometric (slack), so they get the relative margin; k-d
 * regions are exact. Equal distances are kept: they may still win on id. */
RDX_HD int rdx_sp_knn_prune(const rdx_sp_view *v, double md, double worst) {
  return v->kd ? md > worst : md > rdx_sp_mul(worst, 1.0 + RDX_SP_PRUNE_MARGIN);
}

/* Quadtree node c: computed nearest squared distance from (qx, qy) to its widened cell box. */
RDX_HD double rdx_sp_qt_child_md(const rdx_sp_view *v, int64_t c, double qx, double qy) {
  uint32_t xl, xh, yl, yh;
  double b[4];
  rdx_sp_node_cells(&v->g, v->key[c], v->level[c], &xl, &xh, &yl, &yh);
  rdx_sp_cells_box(&v->g, xl, xh, yl, yh, b);
  return rdx_sp_box_min_d2(b, qx, qy);
}

/* Stack slot (0 = pushed first, popped last) of quadtree child c, at distance mc == cm[c], among
 * the n <= 4 children with nearest distances cm[0..n-1]: descending distance, equal distances in
 * child order, so the nearest child pops first. (The fixed trip count keeps cm in registers on
 * the GPU.) */
RDX_HD int rdx_sp_qt_child_slot(const double *cm, int n, double mc, int c) {
  int r = 0;
  for (int j = 0; j < 4; j++)
    if (j < n && (cm[j] > mc || (cm[j] == mc && j < c))) r++;
  return r;
}

/* k-d child s (0: left, c <= split; 1: right) of internal node nd whose region is r: its region
 * in out, and its computed nearest squared distance as the result. */
RDX_HD double rdx_sp_kd_child(const rdx_sp_view *v, int64_t nd, const double *r, int s, double qx, double qy, double *out) {
  int axis = v->level[nd] & 1; /* the left child's upper bound or the right's lower on the axis */
  double sp = v->split[nd];
  out[0] = s == 1 && axis == 0 ? sp : r[0]; /* selects, not out[axis]: no local memory on the GPU */
  out[1] = s == 1 && axis == 1 ? sp : r[1];
  out[2] = s == 0 && axis == 0 ? sp : r[2];
  out[3] = s == 0 && axis == 1 ? sp : r[3];
  return rdx_sp_box_min_d2(out, qx, qy);
}

/* Stack slot of k-d child s given both children's distances: the far child is pushed first, the
 * near one (the right only when strictly nearer) second, so it pops first. */
RDX_HD int rdx_sp_kd_child_slot(double m0, double m1, int s) {
  int nearf = m1 < m0 ? 1 : 0;
  return s == nearf ? 1 : 0;
}

/* Where the scan of a quadtree leaf [p0, p0 + pn) starts for a query whose finest Morton code
 * is qc: k/2 points before the first code >= qc. Builds leave a leaf's points in code order, so
 * the first k points scanned lie near the query and few later ones enter the heap. The scan goes
 * round the leaf from there; its order never changes the answer (the top k by (d2, id) is
 * unique), so leaves that updates left unsorted, and k-d leaves (start 0), lose only the head
 * start. */
/* The finest Morton code of a quadtree's pool slot p: stored, or (a paged GPU pool) from its point. */
RDX_HD uint64_t rdx_sp_slot_code(const rdx_sp_view *v, int64_t p) {
  if (!v->pkey) return rdx_sp_point_key(&v->g, rdx_sp_at(v->x, p, v->f64), rdx_sp_at(v->y, p, v->f64));
  return v->key64 ? ((const uint64_t *)v->pkey)[p] : ((const uint32_t *)v->pkey)[p];
}

RDX_HD int64_t rdx_sp_leaf_scan_start(const rdx_sp_view *v, int64_t p0, int64_t pn, uint64_t qc, int k) {
  if (v->kd || pn <= k) return 0;
  int64_t lo = 0, hi = pn;
  while (lo < hi) {
    int64_t m = lo + (hi - lo) / 2;
    uint64_t c = rdx_sp_slot_code(v, p0 + m);
    if (c < qc) lo = m + 1;
    else hi = m;
  }
  int64_t s0 = lo - k / 2;
  return s0 < 0 ? 0 : s0 > pn - k ? pn - k : s0;
}

/* hd/hi: k slots of scratch for the candidate heap. Returns the number of neighbours found
 * (min(k, points)), sorted ascending by (d2, id) in hd/hi. */
RDX_HD int rdx_sp_knn(const rdx_sp_view *v, double qx, double qy, int k, double *hd, uint64_t *hi) {
  int size = 0, top = 0;
  int64_t st_node[RDX_SP_STACK];
  double st_md[RDX_SP_STACK];
  double st_box[RDX_SP_STACK][4]; /* k-d regions, parallel to st_node (depth <= 56 needs 57) */
  if (v->n_nodes == 0) return 0;
  const uint64_t qc = v->kd ? 0 : rdx_sp_point_key(&v->g, qx, qy);
  st_node[0] = 0;
  st_md[0] = 0.0;
  st_box[0][0] = v->g.x0, st_box[0][1] = v->g.y0, st_box[0][2] = v->g.x1, st_box[0][3] = v->g.y1;
  top = 1;
  while (top > 0) {
    int t = --top;
    int64_t nd = st_node[t];
    double md = st_md[t];
    if (size == k && rdx_sp_knn_prune(v, md, hd[0])) continue; /* prune on the current k-th distance */
    if (v->leaf[nd]) {
      int64_t p0 = v->fpos[nd], pn = v->len[nd], s0 = rdx_sp_leaf_scan_start(v, p0, pn, qc, k);
      for (int64_t j = 0; j < pn; j++) {
        int64_t p = p0 + (s0 + j < pn ? s0 + j : s0 + j - pn);
        double d = rdx_sp_d2(rdx_sp_at(v->x, p, v->f64), rdx_sp_at(v->y, p, v->f64), qx, qy);
        if (size < k || rdx_sp_less(d, v->id[p], hd[0], hi[0])) rdx_sp_heap_offer(hd, hi, &size, k, d, v->id[p]);
      }
      continue;
    }
    int64_t c0 = v->fpos[nd], nc = v->len[nd];
    if (v->kd) {
      double r[2][4], m2[2], pr[4];
      pr[0] = st_box[t][0], pr[1] = st_box[t][1], pr[2] = st_box[t][2], pr[3] = st_box[t][3];
      for (int s = 0; s < 2; s++) m2[s] = rdx_sp_kd_child(v, nd, pr, s, qx, qy, r[s]);
      for (int s = 0; s < 2; s++) {
        int u = top + rdx_sp_kd_child_slot(m2[0], m2[1], s);
        st_node[u] = c0 + s;
        st_md[u] = m2[s];
        st_box[u][0] = r[s][0], st_box[u][1] = r[s][1], st_box[u][2] = r[s][2], st_box[u][3] = r[s][3];
      }
      top += 2;
    } else {
      double cm[4];
      int n = (int)nc;
      for (int c = 0; c < n; c++) cm[c] = rdx_sp_qt_child_md(v, c0 + c, qx, qy);
      for (int c = 0; c < n; c++) {
        int u = top + rdx_sp_qt_child_slot(cm, n, cm[c], c);
        st_node[u] = c0 + c;
        st_md[u] = cm[c];
      }
      top += n;
    }
  }
  rdx_sp_heap_sort(hd, hi, size);
  return size;
}

#endif /* RDX_SPATIAL_TRAVERSE_HD_H */
