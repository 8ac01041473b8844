/*
 * update.c: bulk moves, inserts and erases, G-PICS Section 5 (Fig. 11), for both kinds and both
 * backends. This file plans on the host; the backend (update_cpu.c, update.cu) moves the points.
 * On a GPU, quadtrees take update_qt.cu's paths instead (the same paging planned on the device,
 * or for large batches a merge into a pool kept in Morton order; see prepare_paged) and k-d
 * trees update_kd.cu's (this file's rule, planned on the device, or a rebuild for batches of more
 * than half the points; see rdx_sp_kd_rebuilds); this path remains for the CPU and
 * RAYDEX_SP_UPDATE=plan.
 *
 * Pipeline of one batch (all-or-nothing: nothing is written before step 5):
 *  1. Movement-Check and Leaf-Finding (backend `find`): each moved point's old leaf is found (by
 *     descent with its stored Morton code, or, k-d, by the leaf code stored with it); its new
 *     place by descent. A point whose new place is its old leaf is moved in place. The others are
 *     removed from their old leaf (list R, sorted by leaf and slot) and become incoming (list I,
 *     sorted by target, Morton code, id), with inserts; erases only remove. The host receives the
 *     runs of R per leaf and of I per target: a leaf, or (quadtree) a missing quadrant of an
 *     internal node, which G-PICS materialises.
 *  2. Counts (here): every node's new count, bottom-up.
 *  3. Structure (here), top-down from the root: a node is a leaf iff its count <= capacity or it
 *     is at max depth; a quadtree node with no points disappears (the root stays). So
 *       - a leaf that stays a leaf keeps its extent if it has room (in-place repair: incoming
 *         points fill the holes of removed ones, tail points move into remaining holes), else it
 *         is relocated to a new extent with spare room;
 *       - an internal node whose count falls to <= capacity is merged: its subtree's points and
 *         incoming points gather into one new leaf;
 *       - a leaf (or a new quadrant) over capacity is split: its points are gathered into scratch,
 *         sorted, and its subtree is built exactly as a build would (rdx_sp_qt_subtree,
 *         rdx_sp_kd_subtree); the new leaves take contiguous extents.
 *     For a quadtree this gives exactly the nodes of a fresh build (keys, levels, leaf flags,
 *     lengths, counts, internal fpos); leaf fpos differ because leaves keep their extents. For
 *     the k-d tree, untouched nodes keep their splits and queries stay exact (closed regions).
 *  4. Reserve (backend): pool growth, slot map growth, new node arrays, upload buffers.
 *  5. Commit (backend): erase marks, in-place moves, segment copies, leaf repairs, new nodes.
 *  6. Compaction when dead pool space exceeds the live extents (a relayout, like the first
 *     update's, which spreads leaves out with spare room and builds the id -> slot map).
 *
 * Cost: the backend touches the moved points, the holes they leave and the leaves that split,
 * merge or relocate (G-PICS's paging, one variable-size page per leaf); the plan touches every
 * node a few times, O(nodes) on the host (nodes ~ 1.3 n / capacity), plus the subtree builds of
 * the split groups (O(points gathered x levels)). On this development VM (2 cores, slow memory)
 * counts + visit + node list of 50K nodes still take 3-5 ms, bound by memory latency: visit reads
 * the old BFS node arrays depth first. The k-d plan's time is mostly rdx_sp_kd_subtree's
 * quickselects over large split groups.
 */
#include "spatial/spatial.h"

#include <stdlib.h>
#include <string.h>

#define GROW(c) RDX_SP_GROW(c)
#define SLACK(c) RDX_SP_SLACK(c)

typedef struct group {
  int level;
  uint64_t key;
  int64_t start, n;   /* scratch range */
  int64_t first, end; /* its subtree's nodes in plan.gl */
} group;

/* hnode.leaf of a node-list entry that stands for a split group's subtree (fpos: the group) */
#define GROUP_SLOT 2

typedef struct plan {
  rdx_context *ctx;
  rdx_points *pts;
  const rdx_sp_nodes *H;  /* old nodes, host */
  const rdx_sp_found *f;
  int kd;
  int64_t cap;
  int64_t *cnt;           /* new count per old node */
  int64_t *r_of;          /* R run per old node, or -1 */
  int64_t *i_first;       /* first I run of each old node (runs of node v: i_first[v] .. i_first[v + 1]) */
  int64_t *stack;         /* subtree walks */
  rdx_sp_hlist nl;        /* new nodes in depth-first order, each level's in key order (see visit) */
  rdx_sp_hlist gl;        /* split groups' subtrees, each breadth first */
  rdx_sp_seg *segs;
  int64_t n_segs, cap_segs;
  rdx_sp_keep *keeps;
  int64_t n_keeps, cap_keeps;
  group *groups;
  int64_t n_groups, cap_groups;
  int64_t scratch_n;      /* points gathered for splits */
  int64_t bump;           /* next free pool slot */
} plan;

static rdx_status grow_array(rdx_context *ctx, void **p, int64_t *cap, int64_t need, size_t es) {
  if (need <= *cap) return RDX_OK;
  int64_t nc = *cap ? *cap * 2 : 64;
  while (nc < need) nc *= 2;
  void *q = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points: update plan", &q, (size_t)nc * es, RDX_HOST));
  if (*cap) memcpy(q, *p, (size_t)*cap * es);
  rdx_mem_free(ctx, *p);
  *p = q;
  *cap = nc;
  return RDX_OK;
}

static rdx_status add_seg(plan *P, int kind, int64_t src, int64_t n, int64_t dst, uint64_t code, int to_scratch) {
  if (n <= 0) return RDX_OK;
  RDX_CHECK(grow_array(P->ctx, (void **)&P->segs, &P->cap_segs, P->n_segs + 1, sizeof *P->segs));
  rdx_sp_seg s;
  memset(&s, 0, sizeof s);
  s.kind = kind, s.src = src, s.n = n, s.dst = dst, s.code = code, s.to_scratch = to_scratch;
  P->segs[P->n_segs++] = s;
  return RDX_OK;
}

static uint64_t leaf_code(int level, uint64_t key) { return rdx_sp_code(level, key); }

/* Incoming run of (node, quadrant): start and size, or 0 points. A node has at most 5 runs. */
static int64_t inc_of(const plan *P, int64_t v, int q, int64_t *start) {
  int64_t want = 5 * v + q + 1;
  for (int64_t r = P->i_first[v]; r < P->i_first[v + 1]; r++)
    if (P->f->i_runs[r].what == want) {
      *start = P->f->i_runs[r].start;
      return P->f->i_runs[r].n;
    }
  return 0;
}

static int64_t rem_of(const plan *P, int64_t v) { return P->r_of[v] < 0 ? 0 : P->f->r_runs[P->r_of[v]].n; }

static rdx_status push_node(plan *P, const rdx_sp_hnode *h) {
  if (P->nl.n < P->nl.cap) { /* the common case, without the call */
    P->nl.v[P->nl.n++] = *h;
    return RDX_OK;
  }
  return rdx_sp_hlist_push(P->ctx, &P->nl, *h);
}

/* Sources of a new leaf or split group at node v's place: either v alone (a leaf; with its
 * incoming) or v's whole old subtree (a merge). Segments go to dst .. (pool or scratch). */
static rdx_status add_sources(plan *P, int64_t v, int whole_subtree, int64_t dst, uint64_t code, int to_scratch,
                              int64_t *written) {
  const rdx_sp_nodes *H = P->H;
  int64_t top = 0, w = 0;
  P->stack[top++] = v;
  while (top > 0) {
    int64_t u = P->stack[--top];
    if (H->leaf[u]) {
      int64_t stay = H->len[u] - rem_of(P, u);
      RDX_CHECK(add_seg(P, RDX_SP_SEG_STAYERS, u, stay, dst + w, code, to_scratch));
      w += stay > 0 ? stay : 0;
    }
    for (int q = -1; q < 4; q++) {
      int64_t s = 0, k = inc_of(P, u, q, &s);
      RDX_CHECK(add_seg(P, RDX_SP_SEG_INCOMING, s, k, dst + w, code, to_scratch));
      w += k;
    }
    if (!H->leaf[u] && whole_subtree)
      for (int64_t c = H->fpos[u]; c < H->fpos[u] + H->len[u]; c++) P->stack[top++] = c;
  }
  *written = w;
  return RDX_OK;
}

/* A new leaf at (level, key) with `count` points from v (see add_sources) or from one incoming
 * run (v < 0): extent, segments; the node goes to *out. */
static rdx_status leaf_gather(plan *P, int level, uint64_t key, int64_t count, int64_t v, int whole, int64_t q_src,
                              int64_t q_n, rdx_sp_hnode *out) {
  rdx_sp_hnode h;
  memset(&h, 0, sizeof h);
  h.key = key, h.level = level, h.leaf = 1, h.count = count, h.len = count;
  h.room = GROW(count);
  h.fpos = P->bump;
  uint64_t code = leaf_code(level, key);
  int64_t w = 0;
  if (v >= 0) {
    RDX_CHECK(add_sources(P, v, whole, h.fpos, code, 0, &w));
  } else {
    RDX_CHECK(add_seg(P, RDX_SP_SEG_INCOMING, q_src, q_n, h.fpos, code, 0));
    w = q_n;
  }
  if (w != count)
    return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: leaf (level %d) gathers %lld points, expected %lld", level,
                    (long long)w, (long long)count);
  P->bump += h.room;
  *out = h;
  return RDX_OK;
}

/* A split group at (level, key) with `count` points from leaf v or from one incoming run
 * (v < 0). Its subtree is built after the split gather (place_groups); the node list gets a
 * GROUP_SLOT entry where the subtree goes: at index `slot`, or pushed now (slot < 0). */
static rdx_status add_group(plan *P, int level, uint64_t key, int64_t count, int64_t v, int64_t q_src, int64_t q_n,
                            int64_t slot) {
  RDX_CHECK(grow_array(P->ctx, (void **)&P->groups, &P->cap_groups, P->n_groups + 1, sizeof *P->groups));
  group g;
  g.level = level, g.key = key, g.start = P->scratch_n, g.n = count, g.first = g.end = 0;
  int64_t w = 0;
  if (v >= 0) {
    RDX_CHECK(add_sources(P, v, 0, g.start, 0, 1, &w));
  } else {
    RDX_CHECK(add_seg(P, RDX_SP_SEG_INCOMING, q_src, q_n, g.start, 0, 1));
    w = q_n;
  }
  if (w != count)
    return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: split group gathers %lld points, expected %lld",
                    (long long)w, (long long)count);
  rdx_sp_hnode h;
  memset(&h, 0, sizeof h);
  h.key = key, h.level = level, h.leaf = GROUP_SLOT, h.fpos = P->n_groups, h.count = count;
  if (slot >= 0) P->nl.v[slot] = h;
  else RDX_CHECK(push_node(P, &h));
  P->groups[P->n_groups++] = g;
  P->scratch_n += count;
  P->pts->stats.splits++;
  return RDX_OK;
}

/* Decide node v's place in the new tree (step 3), depth first. The pool extents, segments,
 * repairs and groups are assigned in the order of this walk: a node's children first, then its
 * materialised quadrants. The node list instead gets a new quadrant's entry among its siblings,
 * in quadrant order, so that it holds the new tree depth first in key order, where the nodes of
 * each level come in key order; node_list then needs no sort. */
static rdx_status visit(plan *P, int64_t v) {
  const rdx_sp_nodes *H = P->H;
  int64_t c = P->cnt[v];
  int level = H->level[v], maxd = P->pts->depth;
  if (c == 0 && v != 0 && !P->kd) return RDX_OK; /* an empty quadrant is no node */
  int leaf_now = c <= P->cap || level >= maxd;
  rdx_sp_hnode h;
  if (H->leaf[v]) {
    if (leaf_now) {
      if (c <= H->room[v]) { /* repair in place */
        RDX_CHECK(grow_array(P->ctx, (void **)&P->keeps, &P->cap_keeps, P->n_keeps + 1, sizeof *P->keeps));
        rdx_sp_keep k;
        memset(&k, 0, sizeof k);
        k.start = H->fpos[v];
        k.old_len = H->len[v];
        int64_t r = P->r_of[v];
        if (r >= 0) k.r_start = P->f->r_runs[r].start, k.r_n = P->f->r_runs[r].n;
        k.i_n = inc_of(P, v, -1, &k.i_start);
        k.code = leaf_code(level, H->key[v]);
        if (k.r_n || k.i_n) P->keeps[P->n_keeps++] = k;
        memset(&h, 0, sizeof h);
        h.key = H->key[v], h.level = level, h.leaf = 1, h.count = c, h.len = c, h.room = H->room[v], h.fpos = H->fpos[v];
        return push_node(P, &h);
      }
      P->pts->stats.relocated++;
      RDX_CHECK(leaf_gather(P, level, H->key[v], c, v, 0, 0, 0, &h));
      return push_node(P, &h);
    }
    return add_group(P, level, H->key[v], c, v, 0, 0, -1);
  }
  if (leaf_now) {
    P->pts->stats.merges++;
    RDX_CHECK(leaf_gather(P, level, H->key[v], c, v, 1, 0, 0, &h));
    return push_node(P, &h);
  }
  memset(&h, 0, sizeof h);
  h.key = H->key[v], h.level = level, h.leaf = 0, h.count = c, h.split = H->split[v];
  RDX_CHECK(push_node(P, &h));
  if (P->kd) {
    for (int64_t ch = H->fpos[v]; ch < H->fpos[v] + H->len[v]; ch++) RDX_CHECK(visit(P, ch));
    return RDX_OK;
  }
  /* points arriving in quadrants that had no node: G-PICS's materialisation. slot[q]: the
   * node-list entry reserved for quadrant q, filled once the children are done */
  int64_t slot[4] = {-1, -1, -1, -1}, s = 0;
  int next = 0;
  memset(&h, 0, sizeof h);
  h.level = level + 1, h.leaf = 1;
  for (int64_t ch = H->fpos[v]; ch <= H->fpos[v] + H->len[v]; ch++) {
    int qc = ch < H->fpos[v] + H->len[v] ? (int)(H->key[ch] & 3) : 4;
    for (; next < qc; next++) {
      if (inc_of(P, v, next, &s) == 0) continue;
      h.key = 4 * H->key[v] + (uint64_t)next;
      slot[next] = P->nl.n;
      RDX_CHECK(push_node(P, &h));
    }
    if (next == qc) next++;
    if (qc < 4) RDX_CHECK(visit(P, ch));
  }
  for (int q = 0; q < 4; q++) {
    int64_t k = inc_of(P, v, q, &s);
    if (k == 0) continue;
    uint64_t key = 4 * H->key[v] + (uint64_t)q;
    if (slot[q] < 0)
      return rdx_fail(P->ctx, RDX_ERR_INTERNAL, "rdx_points update: points arrive in quadrant %d of node %lld, which has a child there",
                      q, (long long)v);
    P->pts->stats.new_leaves++;
    if (k <= P->cap || level + 1 >= maxd) RDX_CHECK(leaf_gather(P, level + 1, key, k, -1, 0, s, k, &P->nl.v[slot[q]]));
    else RDX_CHECK(add_group(P, level + 1, key, k, -1, s, k, slot[q]));
  }
  return RDX_OK;
}

/* Build the split groups' subtrees (into P->gl) from their gathered points (host copies) and give
 * their leaves contiguous extents. order[j]: scratch index of the j-th point copied to the pool. */
static rdx_status place_groups(plan *P, const uint64_t *keys, const double *x, const double *y, const uint64_t *id,
                               int64_t *order) {
  int D = P->pts->depth;
  for (int64_t g = 0; g < P->n_groups; g++) {
    group *G = &P->groups[g];
    int64_t first = P->gl.n;
    if (P->kd) {
      RDX_CHECK(rdx_sp_kd_subtree(P->ctx, x + G->start, y + G->start, id + G->start, G->n, G->level, G->key, D, P->cap,
                                  &P->gl, order + G->start));
      for (int64_t j = 0; j < G->n; j++) order[G->start + j] += G->start;
    } else {
      RDX_CHECK(rdx_sp_qt_subtree(P->ctx, keys + G->start, G->n, G->level, G->key, D, P->cap, &P->gl));
      for (int64_t j = 0; j < G->n; j++) order[G->start + j] = G->start + j;
    }
    G->first = first;
    G->end = P->gl.n;
    int64_t region = P->bump;
    P->bump += G->n;
    for (int64_t i = first; i < P->gl.n; i++) {
      rdx_sp_hnode *h = &P->gl.v[i];
      if (!h->leaf) continue;
      int64_t rel = h->fpos;
      h->fpos = region + rel;
      h->room = h->len;
      RDX_CHECK(add_seg(P, RDX_SP_SEG_SCRATCH, G->start + rel, h->len, region + rel, leaf_code(h->level, h->key), 0));
    }
  }
  return RDX_OK;
}

/* The new nodes in BFS order (level, then key) with their children linked. In the node list,
 * with each group's subtree (itself BFS) put in its entry's place, the nodes of each level come
 * in key order (visit), so a stable distribution by level gives BFS order: O(nodes), no sort.
 * rdx_sp_nodes_link checks the order. */
static rdx_status node_list(plan *P, rdx_sp_nodes *out) {
  enum { LEVELS = 64 };
  int64_t pos[LEVELS + 1];
  memset(pos, 0, sizeof pos);
  for (int64_t i = 0; i < P->nl.n; i++)
    if (P->nl.v[i].leaf != GROUP_SLOT) pos[P->nl.v[i].level & (LEVELS - 1)]++;
  for (int64_t i = 0; i < P->gl.n; i++) pos[P->gl.v[i].level & (LEVELS - 1)]++;
  int64_t total = 0;
  for (int l = 0; l < LEVELS; l++) {
    int64_t c = pos[l];
    pos[l] = total;
    total += c;
  }
  RDX_CHECK(rdx_sp_nodes_alloc(P->ctx, total, RDX_HOST, out));
  for (int64_t i = 0; i < P->nl.n; i++) {
    const rdx_sp_hnode *p = &P->nl.v[i];
    if (p->leaf != GROUP_SLOT) {
      rdx_sp_nodes_put(out, pos[p->level & (LEVELS - 1)]++, p);
      continue;
    }
    const group *G = &P->groups[p->fpos];
    for (int64_t j = G->first; j < G->end; j++) rdx_sp_nodes_put(out, pos[P->gl.v[j].level & (LEVELS - 1)]++, &P->gl.v[j]);
  }
  return rdx_sp_nodes_link(P->ctx, out, P->kd);
}

static const rdx_sp_backend *backend_of(rdx_context *ctx) {
  return rdx_is_gpu(ctx) ? &rdx_sp_cuda_backend : &rdx_sp_cpu_backend;
}

/* What every relayout leaves behind: counted, and the merge path's pool order and live-id
 * bitmap no longer hold. */
static void relayouted(rdx_context *ctx, rdx_points *pts) {
  pts->stats.relayouts++;
  pts->sorted = 0;
  if (pts->live) {
    rdx_mem_free(ctx, pts->live);
    pts->live = NULL, pts->live_bits = 0;
  }
}

/* Spread every leaf to room = SLACK(len) (GROW(len) when wide) in a new pool with `headroom`
 * free slots past them (builds the slot map on first use). */
rdx_status rdx_sp_relayout(rdx_context *ctx, rdx_points *pts, int wide, int64_t headroom) {
  const rdx_sp_backend *be = backend_of(ctx);
  rdx_sp_nodes *H = &pts->host;
  int64_t *fpos = NULL, *room = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: relayout", (void **)&fpos, (size_t)H->n * 16 + 8, RDX_HOST), st, done);
  room = fpos + H->n;
  int64_t total = 0;
  for (int64_t i = 0; i < H->n; i++) {
    fpos[i] = H->fpos[i];
    room[i] = 0;
    if (!H->leaf[i]) continue;
    fpos[i] = total;
    room[i] = wide ? RDX_SP_GROW(H->len[i]) : SLACK(H->len[i]);
    total += room[i];
  }
  RDX_CHECK_GOTO(be->relayout(ctx, pts, fpos, total + headroom), st, done);
  pts->pool.used = total;
  for (int64_t i = 0; i < H->n; i++) {
    H->fpos[i] = fpos[i];
    H->room[i] = room[i];
  }
  if (rdx_is_gpu(ctx)) RDX_CHECK_GOTO(rdx_sp_nodes_copy(ctx, &pts->nodes, H), st, done);
  relayouted(ctx, pts);
done:
  rdx_mem_free(ctx, fpos);
  return st;
}

static const char *op_name(int op) {
  return op == RDX_SP_MOVE ? "rdx_points_move" : op == RDX_SP_INSERT ? "rdx_points_insert" : "rdx_points_erase";
}

static rdx_status bad_ids(rdx_context *ctx, const rdx_sp_batch *b, const rdx_sp_found *f) {
  static const char *why[] = {"", "is not an id of this index", "was erased", "appears twice in the batch"};
  return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: ids row %lld (id %llu) %s", op_name(b->op), (long long)f->bad_row,
                  (unsigned long long)f->bad_id, why[f->bad_what]);
}

/* The batch's effect on the point and id counts, and the stats that follow from it. */
static void count_batch(rdx_points *pts, const rdx_sp_batch *b, int64_t in_place) {
  if (b->op == RDX_SP_INSERT) {
    pts->n += b->m;
    pts->id_end += (uint64_t)b->m;
    pts->stats.inserted = b->m;
  } else if (b->op == RDX_SP_ERASE) {
    pts->n -= b->m;
    pts->stats.erased = b->m;
  } else {
    pts->stats.moved = b->m;
    pts->stats.in_place = in_place; /* -1: not tracked (the GPU quadtree's merge) */
    pts->stats.left_leaf = in_place < 0 ? -1 : b->m - in_place;
  }
}

/* Step 6: a relayout when dead pool space passes the live extents (best effort). */
static void compact(rdx_context *ctx, rdx_points *pts, int64_t live) {
  if (pts->pool.used <= 2 * live + 65536) return;
  if (rdx_sp_sync_host_nodes(ctx, pts) != RDX_OK || rdx_sp_relayout(ctx, pts, 0, 0) != RDX_OK) rdx_clear_message(ctx); /* optional */
}

/* On a GPU, both kinds update on the device (update_qt.cu, update_kd.cu), unless
 * RAYDEX_SP_UPDATE=plan asks for this file's path (for comparisons and tests). */
static int direct_update(rdx_context *ctx, const rdx_points *pts) {
  const char *e = getenv("RAYDEX_SP_UPDATE");
  return rdx_is_gpu(ctx) && !(e && strcmp(e, "plan") == 0);
}

/* GPU quadtrees update paged (leaves with room, an id map; update_qt.cu) when the batch is at
 * most 1/PAGED_SHARE of the points, and otherwise by the merge into a dense pool in Morton
 * order, which costs one pass over the pool whatever the batch (RAYDEX_SP_UPDATE=paged or merge
 * forces one). On 16.5M taxi-like points on an H200, over runs of 18 batches (relayouts
 * included), paging is ahead of the merge to 5% of the points moved to other hot spots (0.67
 * against 0.78 ms at 5%) and about even at 10% (0.99 against 0.91-0.95 ms: two relayouts in 18
 * batches); with moves resampled from the index's hot spots or uniform in the box it leads at
 * 10% (0.65-0.68 and 0.72-0.75 ms against 0.89-0.90 and 0.84-1.02), so batches up to a tenth page
 * (bench/results/NVIDIA-H200, spatial_update*.csv, PROBES.md §21, §25-§29). A paged
 * update first spreads the leaves out (rdx_sp_qt_relayout_cuda) when the index has no id map yet
 * or too little free pool for the batch; the free room it leaves is as many slots as points
 * plus twice the largest batch that pages (n/5, or twice this one if it is larger; 16 bytes a
 * slot: paged pools keep no codes). Pages that leaves give up
 * are reused (update.cuh, pgfree), so a run of 5% batches relayouts about once in 10-18 (0.7-0.8
 * ms each on 16.5M points; PROBES.md §25-§27). */
#define PAGED_SHARE 10

void rdx_sp_drop_pages(rdx_context *ctx, rdx_points *pts) {
  if (pts->pfree) rdx_mem_free(ctx, pts->pfree);
  pts->pfree = NULL, pts->pfree_k = 0, pts->pfree_bytes = 0;
}

static rdx_status prepare_paged(rdx_context *ctx, rdx_points *pts, const rdx_sp_batch *b) {
  if (pts->kind != RDX_POINTS_QUADTREE) return RDX_OK;
  const char *e = getenv("RAYDEX_SP_UPDATE");
  const int64_t big = (int64_t)1 << 31; /* paged slots are u32 */
  int paged = e && strcmp(e, "paged") == 0 ? 1 : e && strcmp(e, "merge") == 0 ? 0 : b->m * PAGED_SHARE <= pts->n;
  if (!paged || 4 * (pts->n + b->m) + 65536 >= big || pts->pool.cap >= big) {
    if (pts->slot) { /* the merge keeps a live-id bitmap instead */
      rdx_mem_free(ctx, pts->slot);
      pts->slot = NULL, pts->slot_cap = 0;
    }
    rdx_sp_drop_pages(ctx, pts); /* and no pages to reuse */
    return RDX_OK;
  }
  const int64_t need = 2 * b->m + pts->n / 16 + 65536;
  if (pts->slot != NULL && pts->pool.cap - pts->pool.used >= need) return RDX_OK;
  const int64_t most = 2 * pts->n / PAGED_SHARE, twice = 2 * b->m > most ? 2 * b->m : most; /* twice any batch that pages */
  RDX_CHECK(rdx_sp_qt_relayout_cuda(ctx, pts, pts->n + twice + 65536));
  relayouted(ctx, pts);
  return RDX_OK;
}

/* GPU k-d trees are repaired on the device (update_kd.cu: the batch merged into the pool in leaf
 * order, leaves split at their medians and siblings merged as update.c's planner does) unless the
 * batch holds more than half the points: a rebuild then costs little more and leaves the tree
 * balanced. RAYDEX_SP_UPDATE=merge or rebuild forces one. */
int rdx_sp_kd_rebuilds(const rdx_points *pts, int64_t m) {
  const char *e = getenv("RAYDEX_SP_UPDATE");
  if (e && strcmp(e, "rebuild") == 0) return 1;
  if (e && strcmp(e, "merge") == 0) return 0;
  return 2 * m > pts->n;
}

int rdx_sp_update_checks_xy(rdx_context *ctx, const rdx_points *pts) {
  return direct_update(ctx, pts) && pts->kind == RDX_POINTS_QUADTREE;
}

/* pts->stats at the start of an update: the last update's figures zeroed, those since the build
 * (relayouts, growths) kept; returns them as they were, for a batch that fails. */
static rdx_sp_stats stats_begin(rdx_points *pts) {
  rdx_sp_stats was = pts->stats;
  memset(&pts->stats.moved, 0, offsetof(rdx_sp_stats, relayouts) - offsetof(rdx_sp_stats, moved));
  return was;
}

rdx_status rdx_sp_update(rdx_context *ctx, rdx_points *pts, rdx_sp_batch *b) {
  const char *fn = op_name(b->op);
  const rdx_sp_backend *be = backend_of(ctx);
  if (direct_update(ctx, pts)) {
    if (pts->kind == RDX_POINTS_QUADTREE) rdx_trace(ctx, "qt update call: start"); /* flushed by the update */
    RDX_CHECK(prepare_paged(ctx, pts, b));
    rdx_sp_stats keep = stats_begin(pts);
    rdx_sp_found f;
    memset(&f, 0, sizeof f);
    rdx_status st = pts->kind == RDX_POINTS_QUADTREE ? rdx_sp_qt_update_cuda(ctx, pts, b, &f)
                                                     : rdx_sp_kd_update_cuda(ctx, pts, b, &f);
    if (st == RDX_OK && b->bad_xy) st = RDX_ERR_INVALID_ARGUMENT; /* the caller words it */
    if (st == RDX_OK && f.bad_row >= 0) st = bad_ids(ctx, b, &f);
    if (st != RDX_OK) {
      pts->stats = keep;
      return st;
    }
    count_batch(pts, b, f.n_inplace);
    return RDX_OK;
  }
  rdx_sp_drop_pages(ctx, pts);
  RDX_CHECK(rdx_sp_sync_host_nodes(ctx, pts)); /* the plan reads the host copy */
  if (pts->slot == NULL) RDX_CHECK(rdx_sp_relayout(ctx, pts, 0, 0)); /* first update: slot map, spare room */
  double t0 = rdx_now_ms(), t1 = t0, t2 = t0;
  rdx_sp_stats keep_stats = stats_begin(pts);

  rdx_sp_work *w = NULL;
  rdx_sp_found f;
  memset(&f, 0, sizeof f);
  plan P;
  memset(&P, 0, sizeof P);
  rdx_sp_nodes newh;
  memset(&newh, 0, sizeof newh);
  uint64_t *keys_h = NULL, *id_h = NULL;
  double *x_h = NULL, *y_h = NULL;
  int64_t *order = NULL;
  rdx_status st;
  rdx_trace(ctx, "update: start");
  RDX_CHECK_GOTO(be->find(ctx, pts, b, &w, &f), st, fail);
  rdx_trace(ctx, "update: find");
  if (f.bad_row >= 0) {
    st = bad_ids(ctx, b, &f);
    goto fail;
  }
  t1 = rdx_now_ms();

  /* step 2: counts */
  const rdx_sp_nodes *H = &pts->host;
  int64_t nn = H->n;
  P.ctx = ctx, P.pts = pts, P.H = H, P.f = &f, P.kd = pts->kind == RDX_POINTS_KDTREE, P.cap = pts->cap;
  P.bump = pts->pool.used;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: update plan", (void **)&P.cnt, ((size_t)nn * 4 + 1) * 8, RDX_HOST), st,
                 fail);
  P.r_of = P.cnt + nn;
  P.i_first = P.r_of + nn;
  P.stack = P.i_first + nn + 1;
  memset(P.r_of, 0xff, (size_t)nn * 8); /* -1 */
  for (int64_t r = 0; r < f.n_r_runs; r++) {
    int64_t v = f.r_runs[r].what;
    if (v < 0 || v >= nn || (r > 0 && v <= f.r_runs[r - 1].what)) {
      st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: removal run %lld is of node %lld (of %lld)", fn, (long long)r, (long long)v,
                    (long long)nn);
      goto fail;
    }
    P.r_of[v] = r;
  }
  for (int64_t r = 0, v = 0; v <= nn; v++) { /* the I runs are sorted by target, 5 targets per node */
    while (r < f.n_i_runs && f.i_runs[r].what < 5 * v) {
      if (f.i_runs[r].what < 0 || (r > 0 && f.i_runs[r].what <= f.i_runs[r - 1].what)) break;
      r++;
    }
    P.i_first[v] = r;
  }
  if (P.i_first[nn] != f.n_i_runs) {
    int64_t r = P.i_first[nn];
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: incoming run %lld has target %lld (of %lld nodes)", fn, (long long)r,
                  (long long)f.i_runs[r].what, (long long)nn);
    goto fail;
  }
  for (int64_t v = nn - 1; v >= 0; v--) { /* children follow parents in BFS order */
    int64_t c = 0;
    for (int64_t r = P.i_first[v]; r < P.i_first[v + 1]; r++) c += f.i_runs[r].n;
    if (H->leaf[v]) c += H->len[v] - rem_of(&P, v);
    else
      for (int64_t ch = H->fpos[v]; ch < H->fpos[v] + H->len[v]; ch++) c += P.cnt[ch];
    P.cnt[v] = c;
  }
  if (P.cnt[0] != pts->n - (b->op == RDX_SP_ERASE ? b->m : 0) + (b->op == RDX_SP_INSERT ? b->m : 0)) {
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "%s: the plan counts %lld points", fn, (long long)P.cnt[0]);
    goto fail;
  }

  rdx_trace(ctx, "update: counts");
  /* step 3: structure. The new tree has about as many nodes as the old: one node list of that
   * capacity up front instead of doublings (each a fresh block to copy and fault in) */
  RDX_CHECK_GOTO(rdx_sp_hlist_reserve(ctx, &P.nl, nn + nn / 8 + 64), st, fail);
  RDX_CHECK_GOTO(visit(&P, 0), st, fail);
  rdx_trace(ctx, "update: visit");
  if (P.n_groups > 0) {
    int64_t s = P.scratch_n;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: split points", (void **)&order, (size_t)s * 8, RDX_HOST), st, fail);
    if (P.kd) {
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: split points", (void **)&x_h, (size_t)s * 8, RDX_HOST), st, fail);
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: split points", (void **)&y_h, (size_t)s * 8, RDX_HOST), st, fail);
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: split points", (void **)&id_h, (size_t)s * 8, RDX_HOST), st, fail);
    } else {
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: split points", (void **)&keys_h, (size_t)s * 8, RDX_HOST), st, fail);
    }
    int64_t *gstart = NULL;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points: split groups", (void **)&gstart, (size_t)(P.n_groups + 1) * 8, RDX_HOST),
                   st, fail);
    for (int64_t g = 0; g < P.n_groups; g++) gstart[g] = P.groups[g].start;
    gstart[P.n_groups] = s;
    st = be->split_gather(ctx, pts, w, P.segs, P.n_segs, s, gstart, P.n_groups, keys_h, x_h, y_h, id_h);
    rdx_mem_free(ctx, gstart);
    if (st != RDX_OK) goto fail;
    rdx_trace(ctx, "update: split gather");
    /* the scratch segments are done; the pool segments follow */
    int64_t k = 0;
    for (int64_t i = 0; i < P.n_segs; i++)
      if (!P.segs[i].to_scratch) P.segs[k++] = P.segs[i];
    P.n_segs = k;
    RDX_CHECK_GOTO(place_groups(&P, keys_h, x_h, y_h, id_h, order), st, fail);
    rdx_trace(ctx, "update: split subtrees");
  }
  RDX_CHECK_GOTO(node_list(&P, &newh), st, fail);
  rdx_trace(ctx, "update: node list");

  t2 = rdx_now_ms();
  /* step 4: reserve */
  {
    int64_t new_cap = pts->pool.cap;
    if (P.bump > new_cap) new_cap = P.bump + P.bump / 2 + 1024;
    int64_t need_ids = (int64_t)(b->op == RDX_SP_INSERT ? b->first_id + (uint64_t)b->m : pts->id_end);
    int64_t slot_cap = pts->slot_cap;
    if (need_ids > slot_cap) slot_cap = need_ids + need_ids / 2 + 64;
    RDX_CHECK_GOTO(be->reserve(ctx, pts, w, new_cap, slot_cap, newh.n, P.n_segs, P.n_keeps, P.n_groups ? P.scratch_n : 0),
                   st, fail);
  }

  rdx_trace(ctx, "update: reserve");
  /* step 5: commit (from here on only device errors can fail) */
  RDX_CHECK_GOTO(be->commit(ctx, pts, w, P.segs, P.n_segs, P.keeps, P.n_keeps, order, P.n_groups ? P.scratch_n : 0, &newh),
                 st, fail);
  rdx_trace(ctx, "update: commit");
  pts->pool.used = P.bump;
  if (rdx_is_gpu(ctx)) {
    rdx_sp_nodes_free(ctx, &pts->host);
    pts->host = newh;
  } else {
    rdx_sp_nodes_free(ctx, &pts->nodes);
    pts->nodes = newh;
    pts->host = newh;
    pts->host.block = NULL;
  }
  memset(&newh, 0, sizeof newh);
  pts->kd_levels = 0; /* this path does not track it */
  count_batch(pts, b, f.n_inplace);
  /* where an update's time goes: find (device, with the run lists' copy to the host), plan
   * (host), reserve and commit (device) */
  pts->stats.phase_ms[0] = t1 - t0;
  pts->stats.phase_ms[1] = t2 - t1;
  pts->stats.phase_ms[2] = rdx_now_ms() - t2;
  pts->stats.phase_ms[3] = 0;
  st = RDX_OK;

  {
    int64_t live = 0;
    for (int64_t i = 0; i < pts->host.n; i++)
      if (pts->host.leaf[i]) live += pts->host.room[i];
    compact(ctx, pts, live);
  }
  goto done;
fail:
  pts->stats = keep_stats;
done:
  if (w) be->release(ctx, w);
  rdx_mem_free(ctx, f.r_runs);
  rdx_mem_free(ctx, f.i_runs);
  rdx_mem_free(ctx, P.cnt);
  rdx_sp_hlist_free(ctx, &P.nl);
  rdx_sp_hlist_free(ctx, &P.gl);
  rdx_mem_free(ctx, P.segs);
  rdx_mem_free(ctx, P.keeps);
  rdx_mem_free(ctx, P.groups);
  rdx_sp_nodes_free(ctx, &newh);
  rdx_mem_free(ctx, keys_h);
  rdx_mem_free(ctx, x_h);
  rdx_mem_free(ctx, y_h);
  rdx_mem_free(ctx, id_h);
  rdx_mem_free(ctx, order);
  return st;
}
