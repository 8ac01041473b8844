/*
 * update_cpu.c: the CPU backend of bulk updates (update.c plans; this file moves points).
 *
 * Lists of one batch, in host memory:
 *   R  removals: (old leaf, slot, id), sorted by (leaf, slot)
 *   I  incoming: (target, Morton code, id, x, y), sorted by (target, code, id); target =
 *      node * 5 + quadrant + 1 (quadrant -1: the node is the leaf)
 *   P  in-place moves: (slot, x, y, code), sorted by slot
 *   mark[slot]: 0 live, 1 removed, 2 moved in place (new coordinates in P)
 * Coordinates travel as doubles (exact for f32 input) and are stored back in the index dtype.
 */
#include "spatial/spatial.h"

#include <stdlib.h>
#include <string.h>

typedef struct rrec {
  int64_t leaf, slot;
  uint64_t id;
} rrec;
typedef struct irec {
  int64_t tgt;
  uint64_t key, id;
  double x, y;
} irec;
typedef struct prec {
  int64_t slot;
  uint64_t key;
  double x, y;
} prec;

struct rdx_sp_work {
  int op;
  int64_t nr, ni, np;
  rrec *R;
  irec *I;
  prec *P;
  uint8_t *mark;      /* pool.used entries */
  int64_t ns;         /* scratch (split groups) */
  double *s_x, *s_y;
  uint64_t *s_id, *s_key;
  rdx_sp_pool newpool; /* reserved pool growth (block == NULL if none) */
  uint64_t *newslot;   /* reserved slot map growth */
  int64_t newslot_cap;
};

/* ---- pool access ---- */

static void put_xy(rdx_points *pts, rdx_sp_pool *pool, int64_t s, double x, double y) {
  if (pts->f64) {
    ((double *)pool->x)[s] = x;
    ((double *)pool->y)[s] = y;
  } else {
    ((float *)pool->x)[s] = (float)x;
    ((float *)pool->y)[s] = (float)y;
  }
}
static uint64_t get_key(const rdx_points *pts, const rdx_sp_pool *pool, int64_t s) {
  if (pts->kind == RDX_POINTS_QUADTREE && !pts->key64) return ((const uint32_t *)pool->key)[s];
  return ((const uint64_t *)pool->key)[s];
}
static void put_key(rdx_points *pts, rdx_sp_pool *pool, int64_t s, uint64_t k) {
  if (pts->kind == RDX_POINTS_QUADTREE && !pts->key64) ((uint32_t *)pool->key)[s] = (uint32_t)k;
  else ((uint64_t *)pool->key)[s] = k;
}
/* Copy slot s of `from` to slot d of `to` (all arrays), and point the id's slot at d. */
static void move_slot(rdx_points *pts, const rdx_sp_pool *from, int64_t s, rdx_sp_pool *to, int64_t d) {
  size_t es = pts->f64 ? 8 : 4;
  memcpy((char *)to->x + (size_t)d * es, (const char *)from->x + (size_t)s * es, es);
  memcpy((char *)to->y + (size_t)d * es, (const char *)from->y + (size_t)s * es, es);
  to->id[d] = from->id[s];
  put_key(pts, to, d, get_key(pts, from, s));
  pts->slot[to->id[d]] = (uint64_t)d;
}

/* ---- relayout ---- */

static rdx_status cpu_relayout(rdx_context *ctx, rdx_points *pts, const int64_t *new_fpos, int64_t new_cap) {
  int kd = pts->kind == RDX_POINTS_KDTREE;
  rdx_sp_pool np;
  RDX_CHECK(rdx_sp_pool_alloc(ctx, new_cap, pts->f64, kd || pts->key64 ? 8 : 4, &np));
  uint64_t *slot = pts->slot;
  int64_t slot_cap = pts->slot_cap;
  if (slot == NULL) {
    slot_cap = (int64_t)pts->id_end + (int64_t)pts->id_end / 4 + 64;
    rdx_status st = rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&slot, (size_t)slot_cap * 8, RDX_HOST);
    if (st != RDX_OK) {
      rdx_sp_pool_free(ctx, &np);
      return st;
    }
    memset(slot, 0xFF, (size_t)slot_cap * 8);
  }
  pts->slot = slot;
  pts->slot_cap = slot_cap;
  const rdx_sp_nodes *H = &pts->host;
  int has_key = pts->pool.key != NULL;
  for (int64_t i = 0; i < H->n; i++) {
    if (!H->leaf[i]) continue;
    uint64_t code = rdx_sp_code(H->level[i], H->key[i]);
    for (int64_t j = 0; j < H->len[i]; j++) {
      int64_t s = H->fpos[i] + j, d = new_fpos[i] + j;
      size_t es = pts->f64 ? 8 : 4;
      memcpy((char *)np.x + (size_t)d * es, (const char *)pts->pool.x + (size_t)s * es, es);
      memcpy((char *)np.y + (size_t)d * es, (const char *)pts->pool.y + (size_t)s * es, es);
      np.id[d] = pts->pool.id[s];
      if (kd) ((uint64_t *)np.key)[d] = code;
      else if (has_key) put_key(pts, &np, d, get_key(pts, &pts->pool, s));
      slot[np.id[d]] = (uint64_t)d;
    }
  }
  np.used = new_cap;
  rdx_sp_pool_free(ctx, &pts->pool);
  pts->pool = np;
  return RDX_OK;
}

/* ---- find ---- */

static int cmp_r(const void *a, const void *b) {
  const rrec *x = (const rrec *)a, *y = (const rrec *)b;
  if (x->leaf != y->leaf) return x->leaf < y->leaf ? -1 : 1;
  return (x->slot > y->slot) - (x->slot < y->slot);
}
static int cmp_i(const void *a, const void *b) {
  const irec *x = (const irec *)a, *y = (const irec *)b;
  if (x->tgt != y->tgt) return x->tgt < y->tgt ? -1 : 1;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}
static int cmp_p(const void *a, const void *b) {
  const prec *x = (const prec *)a, *y = (const prec *)b;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

static void cpu_release(rdx_context *ctx, rdx_sp_work *w) {
  if (w == NULL) return;
  rdx_mem_free(ctx, w->R);
  rdx_mem_free(ctx, w->I);
  rdx_mem_free(ctx, w->P);
  rdx_mem_free(ctx, w->mark);
  rdx_mem_free(ctx, w->s_x);
  rdx_mem_free(ctx, w->s_y);
  rdx_mem_free(ctx, w->s_id);
  rdx_mem_free(ctx, w->s_key);
  rdx_sp_pool_free(ctx, &w->newpool);
  rdx_mem_free(ctx, w->newslot);
  free(w);
}

static rdx_status make_runs(rdx_context *ctx, int64_t n, const int64_t *what, size_t stride, rdx_sp_run **out,
                            int64_t *n_out) {
  int64_t runs = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t a = *(const int64_t *)((const char *)what + (size_t)i * stride);
    int64_t p = i ? *(const int64_t *)((const char *)what + (size_t)(i - 1) * stride) : 0;
    runs += i == 0 || a != p;
  }
  *out = NULL;
  *n_out = runs;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: update runs", (void **)out, (size_t)(runs ? runs : 1) * sizeof **out, RDX_HOST));
  int64_t r = -1;
  for (int64_t i = 0; i < n; i++) {
    int64_t a = *(const int64_t *)((const char *)what + (size_t)i * stride);
    if (i == 0 || a != (*out)[r].what) {
      r++;
      (*out)[r].what = a;
      (*out)[r].start = i;
      (*out)[r].n = 0;
    }
    (*out)[r].n++;
  }
  return RDX_OK;
}

static rdx_status cpu_find(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b, rdx_sp_work **wout,
                           rdx_sp_found *f) {
  rdx_sp_work *w = (rdx_sp_work *)calloc(1, sizeof *w);
  if (w == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_points update: work");
  *wout = w;
  w->op = b->op;
  f->bad_row = -1;
  int64_t m = b->m;
  rdx_sp_view v = rdx_sp_host_view_of(pts);
  int kd = v.kd;
  /* validation of ids: unknown, erased, repeated */
  if (b->op != RDX_SP_INSERT) {
    uint64_t *k = NULL, *r = NULL;
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: ids", (void **)&k, (size_t)m * 16, RDX_HOST));
    r = k + m;
    for (int64_t i = 0; i < m && f->bad_row < 0; i++) {
      uint64_t id = b->ids64 ? ((const uint64_t *)b->ids)[i] : ((const uint32_t *)b->ids)[i];
      k[i] = id;
      r[i] = (uint64_t)i;
      int what = id >= pts->id_end ? 1 : pts->slot[id] == RDX_SP_NONE ? 2 : 0;
      if (what) f->bad_row = i, f->bad_what = what, f->bad_id = id;
    }
    rdx_status st = RDX_OK;
    if (f->bad_row < 0) st = rdx_sp_radix_sort_cpu(ctx, k, r, m, 0, 64);
    for (int64_t i = 1; st == RDX_OK && f->bad_row < 0 && i < m; i++)
      if (k[i] == k[i - 1]) f->bad_row = (int64_t)r[i], f->bad_what = 3, f->bad_id = k[i];
    rdx_mem_free(ctx, k);
    if (st != RDX_OK || f->bad_row >= 0) return st;
  }
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: removals", (void **)&w->R, (size_t)m * sizeof *w->R, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: incoming", (void **)&w->I, (size_t)m * sizeof *w->I, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: in place", (void **)&w->P, (size_t)m * sizeof *w->P, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: marks", (void **)&w->mark, (size_t)pts->pool.used + 1, RDX_HOST));
  memset(w->mark, 0, (size_t)pts->pool.used + 1);
  for (int64_t i = 0; i < m; i++) {
    uint64_t id = b->op == RDX_SP_INSERT ? b->first_id + (uint64_t)i
                                         : (b->ids64 ? ((const uint64_t *)b->ids)[i] : ((const uint32_t *)b->ids)[i]);
    int64_t old = -1, s = -1;
    if (b->op != RDX_SP_INSERT) {
      s = (int64_t)pts->slot[id];
      uint64_t sk = get_key(pts, &pts->pool, s);
      int q;
      old = kd ? rdx_sp_find_code(&v, sk) : rdx_sp_qt_find(&v, sk, &q);
      if (old < 0 || !v.leaf[old])
        return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_points update: id %llu at slot %lld has no leaf",
                        (unsigned long long)id, (long long)s);
    }
    if (b->op == RDX_SP_ERASE) {
      rrec rr = {old, s, id};
      w->R[w->nr++] = rr;
      continue;
    }
    double x = rdx_sp_at(b->xy, 2 * i, pts->f64), y = rdx_sp_at(b->xy, 2 * i + 1, pts->f64);
    uint64_t key = kd ? 0 : rdx_sp_point_key(&v.g, x, y);
    int q = -1;
    int64_t tgt = kd ? rdx_sp_kd_find(&v, x, y) : rdx_sp_qt_find(&v, key, &q);
    if (b->op == RDX_SP_MOVE && tgt == old && q == -1) {
      prec p = {s, key, x, y};
      w->P[w->np++] = p;
      w->mark[s] = 2;
      continue;
    }
    if (b->op == RDX_SP_MOVE) {
      rrec rr = {old, s, id};
      w->R[w->nr++] = rr;
    }
    irec ir = {tgt * 5 + q + 1, key, id, x, y};
    w->I[w->ni++] = ir;
  }
  qsort(w->R, (size_t)w->nr, sizeof *w->R, cmp_r);
  qsort(w->I, (size_t)w->ni, sizeof *w->I, cmp_i);
  qsort(w->P, (size_t)w->np, sizeof *w->P, cmp_p);
  for (int64_t i = 0; i < w->nr; i++) w->mark[w->R[i].slot] = 1;
  f->n_remove = w->nr;
  f->n_incoming = w->ni;
  f->n_inplace = w->np;
  RDX_CHECK(make_runs(ctx, w->nr, &w->R[0].leaf, sizeof *w->R, &f->r_runs, &f->n_r_runs));
  RDX_CHECK(make_runs(ctx, w->ni, &w->I[0].tgt, sizeof *w->I, &f->i_runs, &f->n_i_runs));
  return RDX_OK;
}

/* The in-place move of slot s, if any (P is sorted by slot). */
static const prec *pending(const rdx_sp_work *w, int64_t s) {
  int64_t lo = 0, hi = w->np;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (w->P[mid].slot < s) lo = mid + 1;
    else hi = mid;
  }
  return lo < w->np && w->P[lo].slot == s ? &w->P[lo] : NULL;
}

/* ---- split groups ---- */

typedef struct skey {
  uint64_t key, id;
  int64_t at;
} skey;
static int cmp_s(const void *a, const void *b) {
  const skey *x = (const skey *)a, *y = (const skey *)b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

static rdx_status cpu_split_gather(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs,
                                   int64_t n_segs, int64_t n_points, const int64_t *group_start, int64_t n_groups,
                                   uint64_t *keys_h, double *x_h, double *y_h, uint64_t *id_h) {
  size_t b = (size_t)(n_points ? n_points : 1) * 8;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: split scratch", (void **)&w->s_x, b, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: split scratch", (void **)&w->s_y, b, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: split scratch", (void **)&w->s_id, b, RDX_HOST));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: split scratch", (void **)&w->s_key, b, RDX_HOST));
  w->ns = n_points;
  const rdx_sp_nodes *H = &pts->host;
  for (int64_t g = 0; g < n_segs; g++) {
    const rdx_sp_seg *sg = &segs[g];
    if (!sg->to_scratch) continue;
    int64_t d = sg->dst;
    if (sg->kind == RDX_SP_SEG_INCOMING) {
      for (int64_t t = 0; t < sg->n; t++, d++) {
        const irec *r = &w->I[sg->src + t];
        w->s_x[d] = r->x, w->s_y[d] = r->y, w->s_id[d] = r->id, w->s_key[d] = r->key;
      }
    } else { /* stayers of an old leaf, with pending in-place moves applied */
      for (int64_t s = H->fpos[sg->src]; s < H->fpos[sg->src] + H->len[sg->src]; s++) {
        if (w->mark[s] == 1) continue;
        const prec *p = w->mark[s] == 2 ? pending(w, s) : NULL;
        w->s_x[d] = p ? p->x : rdx_sp_at(pts->pool.x, s, pts->f64);
        w->s_y[d] = p ? p->y : rdx_sp_at(pts->pool.y, s, pts->f64);
        w->s_key[d] = p ? p->key : get_key(pts, &pts->pool, s);
        w->s_id[d] = pts->pool.id[s];
        d++;
      }
    }
    if (d != sg->dst + sg->n)
      return rdx_fail(ctx, RDX_ERR_INTERNAL, "rdx_points update: split segment wrote %lld of %lld points",
                      (long long)(d - sg->dst), (long long)sg->n);
  }
  if (pts->kind == RDX_POINTS_KDTREE) {
    memcpy(x_h, w->s_x, (size_t)n_points * 8);
    memcpy(y_h, w->s_y, (size_t)n_points * 8);
    memcpy(id_h, w->s_id, (size_t)n_points * 8);
    return RDX_OK;
  }
  /* quadtree groups: sort by (code, id) so the subtree's leaves are contiguous ranges */
  skey *t = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points update: split sort", (void **)&t, (size_t)(n_points ? n_points : 1) * sizeof *t,
                          RDX_HOST));
  double *tx = NULL;
  rdx_status st = rdx_mem_alloc(ctx, "rdx_points update: split sort", (void **)&tx, b * 3, RDX_HOST);
  if (st == RDX_OK) {
    double *ty = tx + (n_points ? n_points : 1);
    uint64_t *tid = (uint64_t *)(ty + (n_points ? n_points : 1));
    for (int64_t g = 0; g < n_groups; g++) {
      int64_t a = group_start[g], e = group_start[g + 1];
      for (int64_t i = a; i < e; i++) t[i].key = w->s_key[i], t[i].id = w->s_id[i], t[i].at = i;
      qsort(t + a, (size_t)(e - a), sizeof *t, cmp_s);
    }
    for (int64_t i = 0; i < n_points; i++) tx[i] = w->s_x[t[i].at], ty[i] = w->s_y[t[i].at], tid[i] = w->s_id[t[i].at];
    for (int64_t i = 0; i < n_points; i++) {
      w->s_x[i] = tx[i], w->s_y[i] = ty[i], w->s_id[i] = tid[i], w->s_key[i] = t[i].key;
      keys_h[i] = t[i].key;
    }
  }
  rdx_mem_free(ctx, tx);
  rdx_mem_free(ctx, t);
  return st;
}

/* ---- reserve and commit ---- */

static rdx_status cpu_reserve(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, int64_t new_cap, int64_t slot_cap,
                              int64_t n_nodes, int64_t n_segs, int64_t n_keeps, int64_t n_order) {
  if (new_cap > pts->pool.cap)
    RDX_CHECK(rdx_sp_pool_alloc(ctx, new_cap, pts->f64, pts->kind == RDX_POINTS_KDTREE || pts->key64 ? 8 : 4, &w->newpool));
  if (slot_cap > pts->slot_cap) {
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: id map", (void **)&w->newslot, (size_t)slot_cap * 8, RDX_HOST));
    w->newslot_cap = slot_cap;
  }
  return RDX_OK;
}

/* Write incoming entry r into slot d of the pool. */
static void put_incoming(rdx_points *pts, const irec *r, int64_t d, uint64_t code) {
  put_xy(pts, &pts->pool, d, r->x, r->y);
  pts->pool.id[d] = r->id;
  put_key(pts, &pts->pool, d, pts->kind == RDX_POINTS_KDTREE ? code : r->key);
  pts->slot[r->id] = (uint64_t)d;
}

static rdx_status cpu_commit(rdx_context *ctx, rdx_points *pts, rdx_sp_work *w, const rdx_sp_seg *segs, int64_t n_segs,
                             const rdx_sp_keep *keeps, int64_t n_keeps, const int64_t *order, int64_t n_order,
                             const rdx_sp_nodes *new_nodes) {
  int kd = pts->kind == RDX_POINTS_KDTREE;
  const rdx_sp_nodes *H = &pts->host; /* the old nodes, still */
  if (w->newpool.block) { /* grow the pool: copy the used part */
    rdx_sp_pool *np = &w->newpool;
    size_t es = pts->f64 ? 8 : 4, u = (size_t)pts->pool.used;
    memcpy(np->x, pts->pool.x, u * es);
    memcpy(np->y, pts->pool.y, u * es);
    memcpy(np->id, pts->pool.id, u * 8);
    memcpy(np->key, pts->pool.key, u * (kd || pts->key64 ? 8 : 4));
    np->used = pts->pool.used;
    rdx_sp_pool_free(ctx, &pts->pool);
    pts->pool = *np;
    memset(np, 0, sizeof *np);
  }
  if (w->newslot) {
    memcpy(w->newslot, pts->slot, (size_t)pts->slot_cap * 8);
    memset(w->newslot + pts->slot_cap, 0xFF, (size_t)(w->newslot_cap - pts->slot_cap) * 8);
    rdx_mem_free(ctx, pts->slot);
    pts->slot = w->newslot;
    pts->slot_cap = w->newslot_cap;
    w->newslot = NULL;
  }
  if (w->op == RDX_SP_ERASE)
    for (int64_t i = 0; i < w->nr; i++) pts->slot[w->R[i].id] = RDX_SP_NONE;
  for (int64_t i = 0; i < w->np; i++) {
    put_xy(pts, &pts->pool, w->P[i].slot, w->P[i].x, w->P[i].y);
    if (!kd) put_key(pts, &pts->pool, w->P[i].slot, w->P[i].key);
  }
  for (int64_t g = 0; g < n_segs; g++) {
    const rdx_sp_seg *sg = &segs[g];
    int64_t d = sg->dst;
    if (sg->kind == RDX_SP_SEG_INCOMING) {
      for (int64_t t = 0; t < sg->n; t++) put_incoming(pts, &w->I[sg->src + t], d + t, sg->code);
    } else if (sg->kind == RDX_SP_SEG_SCRATCH) {
      for (int64_t t = 0; t < sg->n; t++) {
        int64_t s = order[sg->src + t];
        irec r = {0, w->s_key[s], w->s_id[s], w->s_x[s], w->s_y[s]};
        put_incoming(pts, &r, d + t, sg->code);
      }
    } else {
      for (int64_t s = H->fpos[sg->src]; s < H->fpos[sg->src] + H->len[sg->src]; s++) {
        if (w->mark[s] == 1) continue;
        move_slot(pts, &pts->pool, s, &pts->pool, d);
        if (kd) put_key(pts, &pts->pool, d, sg->code);
        d++;
      }
    }
  }
  /* leaves repaired in place: fill the holes below the new length with the live points of the
   * tail and the incoming points, append the rest */
  for (int64_t k = 0; k < n_keeps; k++) {
    const rdx_sp_keep *kp = &keeps[k];
    const rrec *R = w->R + kp->r_start;
    const irec *I = w->I + kp->i_start;
    int64_t r = kp->r_n, i = kp->i_n, c = kp->old_len, nc = c - r + i, end = kp->start + nc;
    if (i >= r) {
      for (int64_t j = 0; j < r; j++) put_incoming(pts, &I[j], R[j].slot, kp->code);
      for (int64_t j = r; j < i; j++) put_incoming(pts, &I[j], kp->start + c + (j - r), kp->code);
      continue;
    }
    int64_t h = 0, j = 0;
    for (int64_t s = end; s < kp->start + c; s++) {
      if (w->mark[s] == 1) continue;
      while (R[h].slot >= end) h++;
      move_slot(pts, &pts->pool, s, &pts->pool, R[h].slot);
      h++;
    }
    for (; h < r && j < i; h++) {
      if (R[h].slot >= end) continue;
      put_incoming(pts, &I[j++], R[h].slot, kp->code);
    }
  }
  (void)new_nodes;
  (void)n_order;
  return RDX_OK;
}

const rdx_sp_backend rdx_sp_cpu_backend = {cpu_relayout, cpu_find, cpu_split_gather, cpu_reserve, cpu_commit, cpu_release};
