/*
 * update_cpu.c: bulk moves, inserts and erases on the CPU backend: the paged layout's planner,
 * G-PICS Section 5 (Fig. 11), for both kinds. Each leaf owns a page [fpos, fpos + room), an id ->
 * slot map (pts->slot) finds a point, and only the leaves that change are rewritten. One batch,
 * all-or-nothing (everything is read and allocated before the first write):
 *  1. Movement-Check and Leaf-Finding: the ids checked (update_hd.h's rule); each moved point's
 *     old leaf found by descent with its stored code, its new place by descent. A point whose new
 *     place is its old leaf moves in place (list P); the others leave their old leaf (list R, by
 *     leaf and slot) and arrive at a target (list I, by target, code, id): a leaf, or (quadtree)
 *     a missing quadrant of an internal node, which G-PICS materialises.
 *  2. Counts: every node's new count, bottom-up.
 *  3. Structure, top-down by the leaf rule (rdx_sp_leaf): a leaf that stays a leaf keeps its page
 *     when its points fit its room (update_hd.h's hole repair), else moves to a new page with
 *     spare room; an internal node that falls to the capacity merges into one new leaf; a leaf
 *     (or a new quadrant) over the capacity splits: its points are gathered and its subtree built
 *     as a build would (rdx_sp_qt_subtree, rdx_sp_kd_subtree), its leaves on contiguous pages. A
 *     quadtree gets exactly a fresh build's nodes; a k-d tree keeps its splits where nodes stay.
 *     Every point that lands somewhere new becomes a write (dst, point).
 *  4. The writes: pool and id map growth, erased ids, moves in place, the writes, the new nodes.
 *  5. When dead pool space passes the live pages, a relayout compacts the pool (best effort), as
 *     the first update's does when it spreads the build's leaves out and makes the id map.
 * The plan is O(nodes) on the host plus the subtree builds of the points that split.
 */
#include "spatial/spatial.h"

#include <stdlib.h>
#include <string.h>

typedef struct cpt { /* a point on its way: coordinates as doubles (exact for f32), its code */
  double x, y;
  uint64_t id, key;  /* quadtree: finest Morton code; k-d: its new leaf's rdx_sp_code, set when written */
} cpt;
typedef struct rrec {
  int64_t leaf, slot;
  uint64_t id;
} rrec;
typedef struct irec {
  int64_t tgt; /* node * 5 + quadrant + 1 (quadrant -1: the node is the leaf) */
  cpt p;
} irec;
typedef struct prec {
  int64_t slot;
  cpt p;
} prec;
typedef struct wrec { /* a write of the commit */
  int64_t dst;
  cpt p;
} wrec;
typedef struct group { /* a split: its points gp[start, start + n), its subtree gl[first, end) */
  int level;
  uint64_t key;
  int64_t start, n, first, end;
} group;

#define GROUP_SLOT 2 /* hnode.leaf of a node-list entry standing for a group's subtree (fpos: the group) */

typedef struct plan {
  rdx_context *ctx;
  rdx_points *pts;
  const rdx_sp_nodes *H; /* the old nodes */
  int kd;
  rrec *R;
  irec *I;
  prec *P;
  int64_t nr, ni, np;
  uint8_t *mark;         /* per pool slot below used: 0 live, 1 removed, 2 moved in place */
  int64_t *cnt, *rs, *rn, *i_first, *stack; /* per old node: new count, its R run, first I entry */
  rdx_sp_hlist nl;       /* new nodes, depth first, each level in key order (visit) */
  rdx_sp_hlist gl;       /* the groups' subtrees, each breadth first */
  wrec *w;
  cpt *gp;
  group *groups;
  int64_t n_w, cap_w, n_gp, cap_gp, n_groups, cap_groups;
  int64_t bump;          /* next free pool slot */
  int64_t splits, merges, relocated, new_leaves;
} plan;

static rdx_status grow(rdx_context *ctx, void **p, int64_t *cap, int64_t need, size_t es) {
  if (need <= *cap) return RDX_OK;
  int64_t nc = *cap ? *cap * 2 : 64;
  while (nc < need) nc *= 2;
  void *q = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: update plan", &q, (size_t)nc * es, RDX_HOST));
  if (*cap) memcpy(q, *p, (size_t)*cap * es);
  rdx_mem_free(ctx, *p);
  *p = q, *cap = nc;
  return RDX_OK;
}

/* ---- the pool ---- */

static uint64_t get_key(const rdx_points *pts, const rdx_sp_pool *pool, int64_t s) {
  return pts->kind == RDX_POINTS_QUADTREE && !pts->key64 ? ((const uint32_t *)pool->key)[s] : ((const uint64_t *)pool->key)[s];
}
static void put_point(const rdx_points *pts, rdx_sp_pool *pool, int64_t s, const cpt *p) {
  if (pts->f64) ((double *)pool->x)[s] = p->x, ((double *)pool->y)[s] = p->y;
  else ((float *)pool->x)[s] = (float)p->x, ((float *)pool->y)[s] = (float)p->y;
  pool->id[s] = p->id;
  if (pts->kind == RDX_POINTS_QUADTREE && !pts->key64) ((uint32_t *)pool->key)[s] = (uint32_t)p->key;
  else ((uint64_t *)pool->key)[s] = p->key;
}
static int key_bytes(const rdx_points *pts) { return pts->kind == RDX_POINTS_KDTREE || pts->key64 ? 8 : 4; }

/* Every leaf on a page of RDX_SP_SLACK(len) slots in a new pool, with the id map (made on first
 * use) pointing at them; k-d slots get their leaf's code. All-or-nothing. */
static rdx_status relayout(rdx_context *ctx, rdx_points *pts) {
  rdx_sp_nodes *H = &pts->nodes;
  int64_t total = 0;
  for (int64_t i = 0; i < H->n; i++) total += H->leaf[i] ? RDX_SP_SLACK(H->len[i]) : 0;
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, total, pts->f64, key_bytes(pts), &np));
  if (pts->slot == NULL) {
    const int64_t cap = (int64_t)pts->id_end + (int64_t)pts->id_end / 4 + 64;
    rdx_status st = rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&pts->slot, (size_t)cap * 8, RDX_HOST);
    if (st != RDX_OK) {
      rdx_sp_pool_free(ctx, &np);
      return st;
    }
    memset(pts->slot, 0xFF, (size_t)cap * 8);
    pts->slot_cap = cap;
  }
  memset(np.x, 0, (size_t)total * (pts->f64 ? 8 : 4)), memset(np.y, 0, (size_t)total * (pts->f64 ? 8 : 4));
  memset(np.id, 0, (size_t)total * 8), memset(np.key, 0, (size_t)total * (size_t)key_bytes(pts));
  for (int64_t i = 0, to = 0; i < H->n; i++) {
    if (!H->leaf[i]) continue;
    for (int64_t j = 0; j < H->len[i]; j++) {
      const int64_t s = H->fpos[i] + j;
      const cpt p = {rdx_sp_at(pts->pool.x, s, pts->f64), rdx_sp_at(pts->pool.y, s, pts->f64), pts->pool.id[s],
                     pts->kind == RDX_POINTS_KDTREE ? rdx_sp_code(H->level[i], H->key[i]) : get_key(pts, &pts->pool, s)};
      put_point(pts, &np, to + j, &p);
      pts->slot[p.id] = (uint64_t)(to + j);
    }
    H->fpos[i] = to, H->room[i] = RDX_SP_SLACK(H->len[i]);
    to += H->room[i];
  }
  np.used = total;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  pts->stats.relayouts++;
  return RDX_OK;
}

/* ---- 1. Movement-Check and Leaf-Finding ---- */

static int cmp_r(const void *a, const void *b) {
  const rrec *x = (const rrec *)a, *y = (const rrec *)b;
  if (x->leaf != y->leaf) return x->leaf < y->leaf ? -1 : 1;
  return (x->slot > y->slot) - (x->slot < y->slot);
}
static int cmp_i(const void *a, const void *b) {
  const irec *x = (const irec *)a, *y = (const irec *)b;
  if (x->tgt != y->tgt) return x->tgt < y->tgt ? -1 : 1;
  if (x->p.key != y->p.key) return x->p.key < y->p.key ? -1 : 1;
  return (x->p.id > y->p.id) - (x->p.id < y->p.id);
}
static int cmp_p(const void *a, const void *b) {
  const prec *x = (const prec *)a, *y = (const prec *)b;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

static uint64_t batch_id(const rdx_sp_batch *b, int64_t i) {
  if (b->op == RDX_SP_INSERT) return b->first_id + (uint64_t)i;
  return b->ids64 ? ((const uint64_t *)b->ids)[i] : ((const uint32_t *)b->ids)[i];
}

/* The reported bad row of a move or erase (update_hd.h) into b; b->bad_row stays -1 if none. */
static rdx_status check_ids(rdx_context *ctx, const rdx_points *pts, rdx_sp_batch *b) {
  const int64_t m = b->m;
  uint64_t *k = NULL, best = ~0ull;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: ids", (void **)&k, (size_t)m * 16, RDX_HOST));
  uint64_t *r = k + m;
  for (int64_t i = 0; i < m; i++) {
    const uint64_t id = batch_id(b, i);
    const int what = rdx_sp_id_state(id, pts->id_end, id < pts->id_end && pts->slot[id] != RDX_SP_NONE);
    if (what && rdx_sp_bad_rank(i, what) < best) best = rdx_sp_bad_rank(i, what);
    k[i] = id, r[i] = (uint64_t)i;
  }
  rdx_status st = rdx_sp_radix_sort_cpu(ctx, k, r, m, 0, 64); /* stable: rows ascend within an id */
  for (int64_t i = 1; st == RDX_OK && i < m; i++)
    if (k[i] == k[i - 1] && rdx_sp_bad_rank((int64_t)r[i], RDX_SP_BAD_REPEATED) < best)
      best = rdx_sp_bad_rank((int64_t)r[i], RDX_SP_BAD_REPEATED);
  rdx_mem_free(ctx, k);
  if (st == RDX_OK && best != ~0ull) {
    best &= ((uint64_t)1 << 62) - 1;
    b->bad_row = (int64_t)(best / 4), b->bad_what = (int)(best % 4), b->bad_id = batch_id(b, b->bad_row);
  }
  return st;
}

static rdx_status find(plan *P, const rdx_sp_batch *b) {
  rdx_context *ctx = P->ctx;
  rdx_points *pts = P->pts;
  const int64_t m = b->m;
  const rdx_sp_view v = rdx_sp_host_view_of(pts);
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: removals", (void **)&P->R, (size_t)m * sizeof *P->R, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: incoming", (void **)&P->I, (size_t)m * sizeof *P->I, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: in place", (void **)&P->P, (size_t)m * sizeof *P->P, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: marks", (void **)&P->mark, (size_t)pts->pool.used + 1, RDX_HOST));
  memset(P->mark, 0, (size_t)pts->pool.used + 1);
  for (int64_t i = 0; i < m; i++) {
    const uint64_t id = batch_id(b, i);
    int64_t old = -1, s = -1;
    int q = -1;
    if (b->op != RDX_SP_INSERT) {
      s = (int64_t)pts->slot[id];
      const uint64_t sk = get_key(pts, &pts->pool, s);
      old = P->kd ? rdx_sp_find_code(&v, sk) : rdx_sp_qt_find(&v, sk, &q);
      if (old < 0 || !v.leaf[old])
        return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_points update: id %llu at slot %lld has no leaf", (unsigned long long)id,
                        (long long)s);
      if (b->op == RDX_SP_ERASE) {
        P->R[P->nr++] = (rrec){old, s, id};
        continue;
      }
    }
    cpt p = {rdx_sp_at(b->xy, 2 * i, pts->f64), rdx_sp_at(b->xy, 2 * i + 1, pts->f64), id, 0};
    p.key = P->kd ? 0 : rdx_sp_point_key(&v.g, p.x, p.y);
    const int64_t tgt = P->kd ? rdx_sp_kd_find(&v, p.x, p.y) : rdx_sp_qt_find(&v, p.key, &q);
    if (b->op == RDX_SP_MOVE && tgt == old && q == -1) {
      P->P[P->np++] = (prec){s, p};
      P->mark[s] = 2;
      continue;
    }
    if (b->op == RDX_SP_MOVE) P->R[P->nr++] = (rrec){old, s, id};
    P->I[P->ni++] = (irec){tgt * 5 + q + 1, p};
  }
  qsort(P->R, (size_t)P->nr, sizeof *P->R, cmp_r);
  qsort(P->I, (size_t)P->ni, sizeof *P->I, cmp_i);
  qsort(P->P, (size_t)P->np, sizeof *P->P, cmp_p);
  for (int64_t i = 0; i < P->nr; i++) P->mark[P->R[i].slot] = 1;
  return RDX_OK;
}

/* ---- 3. structure ---- */

/* Incoming of (node v, quadrant q): *start and the count. */
static int64_t inc_of(const plan *P, int64_t v, int q, int64_t *start) {
  int64_t a = P->i_first[v], e = P->i_first[v + 1], want = 5 * v + q + 1;
  while (a < e && P->I[a].tgt < want) a++;
  int64_t c = 0;
  while (a + c < e && P->I[a + c].tgt == want) c++;
  *start = a;
  return c;
}

/* Slot s's point, with its move in place applied. */
static cpt slot_point(const plan *P, int64_t s) {
  if (P->mark[s] == 2) {
    int64_t lo = 0, hi = P->np;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (P->P[mid].slot < s) lo = mid + 1;
      else hi = mid;
    }
    return P->P[lo].p;
  }
  const rdx_points *pts = P->pts;
  const cpt p = {rdx_sp_at(pts->pool.x, s, pts->f64), rdx_sp_at(pts->pool.y, s, pts->f64), pts->pool.id[s],
                 P->kd ? 0 : get_key(pts, &pts->pool, s)};
  return p;
}

/* Where gathered points go: pool slots dst, dst + 1, ... (k-d: with that leaf's code), or, with
 * dst < 0, the split groups' points. n counts them. */
typedef struct sink {
  int64_t dst, n;
  uint64_t code;
} sink;
static rdx_status emit(plan *P, sink *k, cpt p) {
  k->n++;
  if (k->dst < 0) {
    RDX_CHECK(grow(P->ctx, (void **)&P->gp, &P->cap_gp, P->n_gp + 1, sizeof *P->gp));
    P->gp[P->n_gp++] = p;
    return RDX_OK;
  }
  if (P->kd) p.key = k->code;
  RDX_CHECK(grow(P->ctx, (void **)&P->w, &P->cap_w, P->n_w + 1, sizeof *P->w));
  P->w[P->n_w++] = (wrec){k->dst++, p};
  return RDX_OK;
}

/* The points of v (a leaf's survivors and its incoming), or of v's whole old subtree, to k. */
static rdx_status gather(plan *P, int64_t v, int whole, sink *k) {
  const rdx_sp_nodes *H = P->H;
  int64_t top = 0;
  P->stack[top++] = v;
  while (top > 0) {
    const int64_t u = P->stack[--top];
    if (H->leaf[u])
      for (int64_t s = H->fpos[u]; s < H->fpos[u] + H->len[u]; s++)
        if (P->mark[s] != 1) RDX_CHECK(emit(P, k, slot_point(P, s)));
    for (int q = -1; q < 4; q++) {
      int64_t a, c = inc_of(P, u, q, &a);
      for (int64_t j = 0; j < c; j++) RDX_CHECK(emit(P, k, P->I[a + j].p));
    }
    if (!H->leaf[u] && whole)
      for (int64_t c = H->fpos[u]; c < H->fpos[u] + H->len[u]; c++) P->stack[top++] = c;
  }
  return RDX_OK;
}

/* A new leaf at (level, key) on a new page with spare room: v's points (v < 0: the incoming run
 * [a, a + count)). */
static rdx_status new_leaf(plan *P, int level, uint64_t key, int64_t count, int64_t v, int whole, int64_t a,
                           rdx_sp_hnode *out) {
  const rdx_sp_hnode h = {key, P->bump, count, count, RDX_SP_GROW(count), 0.0, level, 1};
  sink k = {h.fpos, 0, rdx_sp_code(level, key)};
  if (v >= 0) RDX_CHECK(gather(P, v, whole, &k));
  for (int64_t j = 0; v < 0 && j < count; j++) RDX_CHECK(emit(P, &k, P->I[a + j].p));
  if (k.n != count)
    return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: a leaf gathers %lld points, expected %lld",
                    (long long)k.n, (long long)count);
  P->bump += h.room;
  *out = h;
  return RDX_OK;
}

/* A split at (level, key) of count points from leaf v (v < 0: the incoming run [a, a + count)):
 * gathered now, its subtree built after the structure (place_groups); node list entry `slot`
 * (pushed when < 0) stands for it. */
static rdx_status add_group(plan *P, int level, uint64_t key, int64_t count, int64_t v, int64_t a, int64_t slot) {
  RDX_CHECK(grow(P->ctx, (void **)&P->groups, &P->cap_groups, P->n_groups + 1, sizeof *P->groups));
  const group g = {level, key, P->n_gp, count, 0, 0};
  sink k = {-1, 0, 0};
  if (v >= 0) RDX_CHECK(gather(P, v, 0, &k));
  for (int64_t j = 0; v < 0 && j < count; j++) RDX_CHECK(emit(P, &k, P->I[a + j].p));
  if (k.n != count)
    return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: a split gathers %lld points, expected %lld",
                    (long long)k.n, (long long)count);
  const rdx_sp_hnode h = {key, P->n_groups, 0, count, 0, 0.0, level, GROUP_SLOT};
  if (slot >= 0) P->nl.v[slot] = h;
  else RDX_CHECK(rdx_sp_hlist_push(P->ctx, &P->nl, h));
  P->groups[P->n_groups++] = g;
  P->splits++;
  return RDX_OK;
}

/* Leaf v, which keeps its page, repaired in place by update_hd.h's hole repair. */
static rdx_status repair(plan *P, int64_t v, int64_t c) {
  const rdx_sp_nodes *H = P->H;
  const int64_t f = H->fpos[v], len0 = H->len[v], head = rdx_sp_repair_head(len0, c);
  const rrec *R = P->R + P->rs[v];
  int64_t a, inc = inc_of(P, v, -1, &a), k = 0, tail = f + c;
  sink one = {0, 0, rdx_sp_code(H->level[v], H->key[v])};
  for (int64_t h = 0; h < P->rn[v] && R[h].slot < f + head; h++, k++) { /* the holes, in slot order */
    one.dst = R[h].slot;
    if (k < inc) {
      RDX_CHECK(emit(P, &one, P->I[a + k].p));
      continue;
    }
    while (P->mark[tail] == 1) tail++; /* the next live point of the tail */
    RDX_CHECK(emit(P, &one, slot_point(P, tail++)));
  }
  one.dst = f + len0;
  for (int64_t t = k; t < inc; t++) RDX_CHECK(emit(P, &one, P->I[a + t].p)); /* appended */
  return RDX_OK;
}

/* Node v's place in the new tree, depth first. Pages and writes follow this walk; the node list
 * gets a new quadrant's entry among its siblings, in quadrant order, so each level of it comes in
 * key order and node_list needs no sort. */
static rdx_status visit(plan *P, int64_t v) {
  const rdx_sp_nodes *H = P->H;
  const int64_t c = P->cnt[v];
  const int level = H->level[v], D = P->pts->depth;
  if (c == 0 && v != 0 && !P->kd) return RDX_OK; /* an empty quadrant is no node */
  rdx_sp_hnode h = {H->key[v], H->fpos[v], c, c, H->room[v], 0.0, level, 1};
  if (rdx_sp_leaf(c, level, D, P->pts->cap)) {
    if (H->leaf[v] && c <= H->room[v]) RDX_CHECK(repair(P, v, c));
    else RDX_CHECK(new_leaf(P, level, H->key[v], c, v, !H->leaf[v], 0, &h));
    P->relocated += H->leaf[v] && c > H->room[v], P->merges += !H->leaf[v];
    return rdx_sp_hlist_push(P->ctx, &P->nl, h);
  }
  if (H->leaf[v]) return add_group(P, level, H->key[v], c, v, 0, -1);
  h = (rdx_sp_hnode){H->key[v], 0, 0, c, 0, H->split[v], level, 0};
  RDX_CHECK(rdx_sp_hlist_push(P->ctx, &P->nl, h));
  if (P->kd) {
    for (int64_t ch = H->fpos[v]; ch < H->fpos[v] + H->len[v]; ch++) RDX_CHECK(visit(P, ch));
    return RDX_OK;
  }
  /* points in quadrants that had no node: an entry in quadrant order now, filled after the children */
  int64_t slot[4] = {-1, -1, -1, -1}, s;
  int next = 0;
  h = (rdx_sp_hnode){0, 0, 0, 0, 0, 0.0, level + 1, 1};
  for (int64_t ch = H->fpos[v]; ch <= H->fpos[v] + H->len[v]; ch++) {
    const int qc = ch < H->fpos[v] + H->len[v] ? (int)(H->key[ch] & 3) : 4;
    for (; next < qc; next++) {
      if (inc_of(P, v, next, &s) == 0) continue;
      h.key = 4 * H->key[v] + (uint64_t)next, slot[next] = P->nl.n;
      RDX_CHECK(rdx_sp_hlist_push(P->ctx, &P->nl, h));
    }
    if (next == qc) next++;
    if (qc < 4) RDX_CHECK(visit(P, ch));
  }
  for (int q = 0; q < 4; q++) {
    const int64_t k = inc_of(P, v, q, &s);
    if (k == 0) continue;
    const uint64_t key = 4 * H->key[v] + (uint64_t)q;
    if (slot[q] < 0) return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: quadrant %d of node %lld", q, (long long)v);
    P->new_leaves++;
    if (rdx_sp_leaf(k, level + 1, D, P->pts->cap)) RDX_CHECK(new_leaf(P, level + 1, key, k, -1, 0, s, &P->nl.v[slot[q]]));
    else RDX_CHECK(add_group(P, level + 1, key, k, -1, s, slot[q]));
  }
  return RDX_OK;
}

static int cmp_cpt(const void *a, const void *b) { /* quadtree groups: by (code, id) */
  const cpt *x = (const cpt *)a, *y = (const cpt *)b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* The groups' subtrees (into gl), built as a build would, their leaves on contiguous pages. */
static rdx_status place_groups(plan *P) {
  int64_t most = 1;
  for (int64_t g = 0; g < P->n_groups; g++) most = P->groups[g].n > most ? P->groups[g].n : most;
  double *t = NULL;
  RDX_CHECK(rdx_mem_alloc(P->ctx, "rdx_points: split points", (void **)&t, (size_t)most * 32, RDX_HOST));
  uint64_t *keys = (uint64_t *)t, *id = (uint64_t *)(t + 2 * most);
  int64_t *perm = (int64_t *)(t + 3 * most);
  rdx_status st = RDX_OK;
  for (int64_t g = 0; g < P->n_groups && st == RDX_OK; g++) {
    group *G = &P->groups[g];
    cpt *pt = P->gp + G->start;
    G->first = P->gl.n;
    if (P->kd) {
      for (int64_t j = 0; j < G->n; j++) t[j] = pt[j].x, t[most + j] = pt[j].y, id[j] = pt[j].id;
      st = rdx_sp_kd_subtree(P->ctx, t, t + most, id, G->n, G->level, G->key, P->pts->depth, P->pts->cap, &P->gl, perm);
    } else {
      qsort(pt, (size_t)G->n, sizeof *pt, cmp_cpt);
      for (int64_t j = 0; j < G->n; j++) keys[j] = pt[j].key, perm[j] = j;
      st = rdx_sp_qt_subtree(P->ctx, keys, G->n, G->level, G->key, P->pts->depth, P->pts->cap, &P->gl);
    }
    G->end = P->gl.n;
    const int64_t region = P->bump;
    P->bump += G->n;
    for (int64_t i = G->first; i < G->end && st == RDX_OK; i++) {
      rdx_sp_hnode *h = &P->gl.v[i];
      if (!h->leaf) continue;
      sink k = {region + h->fpos, 0, rdx_sp_code(h->level, h->key)};
      for (int64_t j = 0; j < h->len && st == RDX_OK; j++) st = emit(P, &k, pt[perm[h->fpos + j]]);
      h->fpos += region, h->room = h->len;
    }
  }
  rdx_mem_free(P->ctx, t);
  return st;
}

/* The new nodes in BFS order, linked. Each level of the node list (with each group's subtree in
 * its entry's place) is in key order, so a stable distribution by level gives BFS order. */
static rdx_status node_list(plan *P, rdx_sp_nodes *out) {
  enum { LEVELS = 64 };
  int64_t pos[LEVELS + 1];
  memset(pos, 0, sizeof pos);
  for (int64_t i = 0; i < P->nl.n; i++)
    if (P->nl.v[i].leaf != GROUP_SLOT) pos[P->nl.v[i].level & (LEVELS - 1)]++;
  for (int64_t i = 0; i < P->gl.n; i++) pos[P->gl.v[i].level & (LEVELS - 1)]++;
  int64_t total = 0;
  for (int l = 0; l < LEVELS; l++) {
    const int64_t c = pos[l];
    pos[l] = total, total += c;
  }
  RDX_CHECK(rdx_sp_nodes_alloc(P->ctx, total, RDX_HOST, out));
  for (int64_t i = 0; i < P->nl.n; i++) {
    const rdx_sp_hnode *p = &P->nl.v[i];
    if (p->leaf != GROUP_SLOT) {
      rdx_sp_node_put(out, pos[p->level & (LEVELS - 1)]++, p);
      continue;
    }
    const group *G = &P->groups[p->fpos];
    for (int64_t j = G->first; j < G->end; j++) rdx_sp_node_put(out, pos[P->gl.v[j].level & (LEVELS - 1)]++, &P->gl.v[j]);
  }
  for (int64_t i = 0; i < total; i++)
    if (rdx_sp_link_children(out, total, i, P->kd))
      return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: node %lld out of BFS order or without children",
                      (long long)i);
  return RDX_OK;
}

/* ---- 2. counts, and the plan as a whole ---- */

static rdx_status counts(plan *P, const rdx_sp_batch *b) {
  const rdx_sp_nodes *H = P->H;
  const int64_t nn = H->n;
  RDX_CHECK(rdx_mem_alloc(P->ctx, "rdx_points: update plan", (void **)&P->cnt, ((size_t)nn * 5 + 1) * 8, RDX_HOST));
  P->rs = P->cnt + nn, P->rn = P->rs + nn, P->i_first = P->rn + nn, P->stack = P->i_first + nn + 1;
  memset(P->rs, 0, (size_t)nn * 16); /* rs and rn */
  for (int64_t r = 0; r < P->nr; r++) {
    if (r == 0 || P->R[r].leaf != P->R[r - 1].leaf) P->rs[P->R[r].leaf] = r;
    P->rn[P->R[r].leaf]++;
  }
  for (int64_t r = 0, v = 0; v <= nn; v++) { /* I is sorted by target, 5 targets per node */
    while (r < P->ni && P->I[r].tgt < 5 * v) r++;
    P->i_first[v] = r;
  }
  for (int64_t v = nn - 1; v >= 0; v--) { /* children follow parents in BFS order */
    int64_t c = P->i_first[v + 1] - P->i_first[v];
    if (H->leaf[v]) c += H->len[v] - P->rn[v];
    else
      for (int64_t ch = H->fpos[v]; ch < H->fpos[v] + H->len[v]; ch++) c += P->cnt[ch];
    P->cnt[v] = c;
  }
  const int64_t want = P->pts->n - (b->op == RDX_SP_ERASE ? b->m : 0) + (b->op == RDX_SP_INSERT ? b->m : 0);
  if (P->cnt[0] != want)
    return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: the plan counts %lld points, not %lld",
                    (long long)P->cnt[0], (long long)want);
  return RDX_OK;
}

/* ---- 4. the writes ---- */

static rdx_status commit(plan *P, const rdx_sp_batch *b, rdx_sp_nodes *newh) {
  rdx_context *ctx = P->ctx;
  rdx_points *pts = P->pts;
  rdx_sp_pool np;
  memset(&np, 0, sizeof np);
  uint64_t *ns = NULL;
  const int64_t ids = (int64_t)(b->op == RDX_SP_INSERT ? b->first_id + (uint64_t)b->m : pts->id_end);
  const int64_t slot_cap = ids > pts->slot_cap ? ids + ids / 2 + 64 : pts->slot_cap;
  if (P->bump > pts->pool.cap) RDX_CHECK(rdx_sp_pool_alloc(ctx, P->bump + P->bump / 2 + 1024, pts->f64, key_bytes(pts), &np));
  if (slot_cap > pts->slot_cap) {
    rdx_status st = rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&ns, (size_t)slot_cap * 8, RDX_HOST);
    if (st != RDX_OK) {
      rdx_sp_pool_free(ctx, &np);
      return st;
    }
  }
  /* nothing can fail from here on */
  if (np.block) {
    const size_t u = (size_t)pts->pool.used, es = pts->f64 ? 8 : 4;
    memcpy(np.x, pts->pool.x, u * es), memcpy(np.y, pts->pool.y, u * es), memcpy(np.id, pts->pool.id, u * 8);
    memcpy(np.key, pts->pool.key, u * (size_t)key_bytes(pts));
    rdx_sp_pool_free(ctx, &pts->pool);
    pts->pool = np;
  }
  if (ns) {
    memcpy(ns, pts->slot, (size_t)pts->slot_cap * 8);
    memset(ns + pts->slot_cap, 0xFF, (size_t)(slot_cap - pts->slot_cap) * 8);
    rdx_mem_free(ctx, pts->slot);
    pts->slot = ns, pts->slot_cap = slot_cap;
  }
  if (b->op == RDX_SP_ERASE)
    for (int64_t i = 0; i < P->nr; i++) pts->slot[P->R[i].id] = RDX_SP_NONE;
  for (int64_t i = 0; i < P->np; i++) {
    cpt p = P->P[i].p;
    if (P->kd) p.key = get_key(pts, &pts->pool, P->P[i].slot); /* its leaf's code stays */
    put_point(pts, &pts->pool, P->P[i].slot, &p);
  }
  for (int64_t i = 0; i < P->n_w; i++) {
    put_point(pts, &pts->pool, P->w[i].dst, &P->w[i].p);
    pts->slot[P->w[i].p.id] = (uint64_t)P->w[i].dst;
  }
  pts->pool.used = P->bump;
  rdx_sp_nodes_free(ctx, &pts->nodes);
  pts->nodes = *newh;
  memset(newh, 0, sizeof *newh);
  return rdx_sp_sync_host_nodes(ctx, pts); /* the host copy aliases the nodes */
}

rdx_status rdx_sp_update_cpu(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  RDX_CHECK(rdx_sp_sync_host_nodes(ctx, pts));
  if (pts->slot == NULL) RDX_CHECK(relayout(ctx, pts)); /* first update: the pages and the id map */
  const double t0 = rdx_now_ms();
  double t1 = t0, t2 = t0;
  if (b->op != RDX_SP_INSERT) {
    RDX_CHECK(check_ids(ctx, pts, b));
    if (b->bad_row >= 0) return RDX_OK;
  }
  plan P;
  memset(&P, 0, sizeof P);
  P.ctx = ctx, P.pts = pts, P.H = &pts->host, P.kd = pts->kind == RDX_POINTS_KDTREE, P.bump = pts->pool.used;
  rdx_sp_nodes newh;
  memset(&newh, 0, sizeof newh);
  rdx_status st;
  RDX_CHECK_GOTO(find(&P, b), st, done);
  t1 = rdx_now_ms();
  RDX_CHECK_GOTO(counts(&P, b), st, done);
  RDX_CHECK_GOTO(rdx_sp_hlist_reserve(ctx, &P.nl, pts->host.n + pts->host.n / 8 + 64), st, done);
  RDX_CHECK_GOTO(visit(&P, 0), st, done);
  RDX_CHECK_GOTO(place_groups(&P), st, done);
  RDX_CHECK_GOTO(node_list(&P, &newh), st, done);
  t2 = rdx_now_ms();
  RDX_CHECK_GOTO(commit(&P, b, &newh), st, done);
  rdx_sp_stats *S = &pts->stats;
  S->splits = P.splits, S->merges = P.merges, S->relocated = P.relocated, S->new_leaves = P.new_leaves;
  S->phase_ms[0] = t1 - t0, S->phase_ms[1] = t2 - t1, S->phase_ms[2] = rdx_now_ms() - t2, S->phase_ms[3] = 0;
  b->in_place = P.np;
  int64_t live = 0; /* 5: compaction when dead pool space passes the live pages (best effort) */
  for (int64_t i = 0; i < pts->nodes.n; i++) live += pts->nodes.leaf[i] ? pts->nodes.room[i] : 0;
  if (pts->pool.used > 2 * live + 65536 && relayout(ctx, pts) != RDX_OK) rdx_clear_message(ctx);
done:
  rdx_mem_free(ctx, P.R), rdx_mem_free(ctx, P.I), rdx_mem_free(ctx, P.P), rdx_mem_free(ctx, P.mark);
  rdx_mem_free(ctx, P.cnt), rdx_mem_free(ctx, P.w), rdx_mem_free(ctx, P.gp), rdx_mem_free(ctx, P.groups);
  rdx_sp_hlist_free(ctx, &P.nl);
  rdx_sp_hlist_free(ctx, &P.gl);
  rdx_sp_nodes_free(ctx, &newh);
  return st;
}
