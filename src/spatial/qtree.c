/*
 * qtree.c: PR quadtree construction on the CPU, both methods of Zhang and Gruenwald, "Efficient
 * Quadtree Construction for Indexing Large-Scale Point Data on GPUs: Bottom-Up vs. Top-Down":
 *
 *  - Bottom-up (Section 4, Fig. 5): sort the points once by finest Morton code; Phase 1 reduces
 *    level by level from the finest level to the root, giving every non-empty quadrant ("full
 *    quadrants") with its key, number of non-empty children (clen), points (nlen) and first point
 *    position (the minimum over its children, Section 4.1); Phase 2 expands parent ids
 *    (exclusive scan, scatter, inclusive max scan), removes quadrants whose parent holds <= n_t
 *    points, marks leaves (nlen <= n_t or finest level) and scans child offsets.
 *  - Top-down (Section 3, Fig. 3): for each level, stably sort the unfinished points by their
 *    Morton code at that level, count the quadrants, move the points of leaf quadrants to the
 *    finished prefix; then derive child counts and offsets from the leaf quadrants.
 * Both give the same nodes (key, level, leaf flag, length, count, internal fpos); only the leaf
 * fpos differ because the point orders differ (Morton order vs leaves in BFS order).
 *
 * The leaf-offset bug: Fig. 5 line 9 takes leaf point offsets as an exclusive scan of leaf
 * counts in BFS order. That is TD's point order, not BU's: with leaves on several levels a
 * level-1 leaf of quadrant 3 precedes level-2 leaves of quadrant 0 in BFS order but its points
 * come last in Morton order. We take the first position carried up by the min-reduction instead
 * (the fix the paper's Section 4.1 prose implies). RDX_SP_DEBUG_PAPER_LINE9 computes line 9 as
 * printed, so tests/test_spatial_build.c can show that it fails.
 *
 * Differences from the paper, all equivalent: the root is stored (node 0, level 0), so an index
 * of <= n_t points is a single leaf and n_top = 1; Phase 2 runs per level over the level blocks
 * of the BFS arrays rather than over their concatenation (remove_if is stable, so the order is
 * the same); a leaf is nlen <= n_t in both methods (the paper's TD text says < n_t).
 *
 * Tuned for: tests and the CPU baseline of the benchmarks (up to ~10^7 points on 16 cores); the
 * sort is the parallel radix sort of cpu_util.c, the per-level passes are sequential.
 */
#include "spatial/spatial.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK 16384

/* ---- keys and the final gather (shared by both methods) ---- */

typedef struct key_job {
  const void *xy;
  int f64;
  int64_t n;
  const rdx_sp_grid *g;
  uint64_t *keys, *vals;
} key_job;

static void key_task(void *arg, int64_t t, int thread) {
  key_job *j = (key_job *)arg;
  int64_t lo = t * CHUNK, hi = lo + CHUNK < j->n ? lo + CHUNK : j->n;
  for (int64_t i = lo; i < hi; i++) {
    j->keys[i] = rdx_sp_point_key(j->g, rdx_sp_at(j->xy, 2 * i, j->f64), rdx_sp_at(j->xy, 2 * i + 1, j->f64));
    j->vals[i] = (uint64_t)i;
  }
}

typedef struct gather_job {
  const void *xy;
  int f64, key64;
  int64_t n;
  const uint64_t *keys, *vals;
  rdx_sp_pool *pool;
} gather_job;

static void gather_task(void *arg, int64_t t, int thread) {
  gather_job *j = (gather_job *)arg;
  int64_t lo = t * CHUNK, hi = lo + CHUNK < j->n ? lo + CHUNK : j->n;
  for (int64_t i = lo; i < hi; i++) {
    rdx_sp_pool_put(j->pool, i, j->xy, j->f64, (int64_t)j->vals[i]);
    if (j->key64) ((uint64_t *)j->pool->key)[i] = j->keys[i];
    else ((uint32_t *)j->pool->key)[i] = (uint32_t)j->keys[i];
  }
}

static rdx_status make_keys(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in, uint64_t **keys,
                            uint64_t **vals) {
  int64_t n = in->n;
  *keys = *vals = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points_build: keys", (void **)keys, (size_t)n * 8, RDX_HOST));
  rdx_status st = rdx_mem_alloc(ctx, "rdx_points_build: key order", (void **)vals, (size_t)n * 8, RDX_HOST);
  if (st != RDX_OK) {
    rdx_mem_free(ctx, *keys);
    *keys = NULL;
    return st;
  }
  key_job j = {in->xy, pts->f64, n, &pts->grid, *keys, *vals};
  return rdx_parallel_for(ctx, (n + CHUNK - 1) / CHUNK, key_task, &j);
}

static rdx_status fill_pool(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in, const uint64_t *keys,
                            const uint64_t *vals) {
  RDX_CHECK(rdx_sp_pool_alloc(ctx, in->n, pts->f64, pts->key64 ? 8 : 4, &pts->pool));
  pts->pool.used = in->n;
  gather_job j = {in->xy, pts->f64, pts->key64, in->n, keys, vals, &pts->pool};
  return rdx_parallel_for(ctx, (in->n + CHUNK - 1) / CHUNK, gather_task, &j);
}

/* ---- bottom-up ---- */

/* The full quadrants of one level (Phase 1 output): key, clen, nlen, first point position. */
typedef struct level_arrays {
  int64_t n;
  uint64_t *key;
  int64_t *clen, *nlen, *first;
} level_arrays;

static rdx_status level_alloc(rdx_context *ctx, int64_t n, level_arrays *a) {
  memset(a, 0, sizeof *a);
  a->n = n;
  size_t b = (size_t)(n ? n : 1) * 8;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_points_build: full quadrants", (void **)&a->key, 4 * b, RDX_HOST));
  a->clen = (int64_t *)(a->key + (n ? n : 1));
  a->nlen = a->clen + (n ? n : 1);
  a->first = a->nlen + (n ? n : 1);
  return RDX_OK;
}

static rdx_status build_bottom_up(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  int64_t n = in->n;
  int D = pts->depth;
  int64_t cap = pts->cap;
  uint64_t *keys = NULL, *vals = NULL;
  level_arrays lv[RDX_SP_MAX_QT_DEPTH + 1];
  memset(lv, 0, sizeof lv);
  int64_t *parent = NULL, *keep_rank = NULL;
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  rdx_status st;
  double t0 = rdx_now_ms();
  RDX_CHECK_GOTO(make_keys(ctx, pts, in, &keys, &vals), st, fail);
  RDX_CHECK_GOTO(rdx_sp_radix_sort_cpu(ctx, keys, vals, n, 0, 2 * D), st, fail);
  double t1 = rdx_now_ms();

  /* Phase 1, finest level: run-length encode the sorted codes. */
  {
    int64_t runs = 0;
    for (int64_t i = 0; i < n; i++) runs += i == 0 || keys[i] != keys[i - 1];
    RDX_CHECK_GOTO(level_alloc(ctx, runs, &lv[D]), st, fail);
    int64_t r = -1;
    for (int64_t i = 0; i < n; i++) {
      if (i == 0 || keys[i] != keys[i - 1]) {
        r++;
        lv[D].key[r] = keys[i];
        lv[D].clen[r] = 0;
        lv[D].nlen[r] = 0;
        lv[D].first[r] = i;
      }
      lv[D].nlen[r]++;
    }
  }
  /* Phase 1, levels D-1 .. 0: reduce_by_key on key >> 2, summing nlen, counting children and
   * keeping the minimum first position (the first child's, as codes are sorted). */
  for (int l = D - 1; l >= 0; l--) {
    const level_arrays *c = &lv[l + 1];
    int64_t runs = 0;
    for (int64_t i = 0; i < c->n; i++) runs += i == 0 || (c->key[i] >> 2) != (c->key[i - 1] >> 2);
    RDX_CHECK_GOTO(level_alloc(ctx, runs, &lv[l]), st, fail);
    int64_t r = -1;
    for (int64_t i = 0; i < c->n; i++) {
      if (i == 0 || (c->key[i] >> 2) != (c->key[i - 1] >> 2)) {
        r++;
        lv[l].key[r] = c->key[i] >> 2;
        lv[l].clen[r] = 0;
        lv[l].nlen[r] = 0;
        lv[l].first[r] = c->first[i];
      }
      lv[l].clen[r]++;
      lv[l].nlen[r] += c->nlen[i];
    }
  }
  double t2 = rdx_now_ms();

  /* Phase 2. keep_rank[l][i]: index of the kept node among its level's kept nodes, or -1. */
  {
    int64_t total_full = 0, max_level = 0;
    for (int l = 0; l <= D; l++) {
      total_full += lv[l].n;
      if (lv[l].n > max_level) max_level = lv[l].n;
    }
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: expand", (void **)&parent, (size_t)max_level * 8, RDX_HOST), st,
                   fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: kept", (void **)&keep_rank, (size_t)total_full * 8, RDX_HOST),
                   st, fail);
    int64_t *kr[RDX_SP_MAX_QT_DEPTH + 1];
    int64_t kept[RDX_SP_MAX_QT_DEPTH + 2];
    int64_t off = 0;
    for (int l = 0; l <= D; l++) {
      kr[l] = keep_rank + off;
      off += lv[l].n;
    }
    /* Lines 1-5: expand parent ids, keep a quadrant iff its parent holds more than n_t points. */
    for (int l = 0; l <= D; l++) {
      kept[l] = 0;
      if (l == 0) {
        kr[0][0] = kept[0]++;
        continue;
      }
      const level_arrays *p = &lv[l - 1];
      /* exclusive_scan(clen) -> first-child slots; scatter parent ids; inclusive max-scan */
      int64_t pos = 0;
      for (int64_t i = 0; i < lv[l].n; i++) parent[i] = 0;
      for (int64_t q = 0; q < p->n; q++) {
        parent[pos] = q;
        pos += p->clen[q];
      }
      for (int64_t i = 1; i < lv[l].n; i++)
        if (parent[i] < parent[i - 1]) parent[i] = parent[i - 1];
      for (int64_t i = 0; i < lv[l].n; i++) kr[l][i] = p->nlen[parent[i]] > cap ? kept[l]++ : -1;
    }
    int64_t n_nodes = 0, base[RDX_SP_MAX_QT_DEPTH + 2];
    for (int l = 0; l <= D; l++) {
      base[l] = n_nodes;
      n_nodes += kept[l];
    }
    base[D + 1] = n_nodes;
    RDX_CHECK_GOTO(rdx_sp_nodes_alloc(ctx, n_nodes, RDX_HOST, &nodes), st, fail);
    /* Lines 6-11: leaf flags, lengths, child offsets (+ n_top = base of the next level) and leaf
     * point offsets. */
    int64_t ppos = 0; /* line 9 as printed: running sum of leaf counts in BFS order */
    for (int l = 0; l <= D; l++) {
      int64_t cpos = base[l + 1];
      for (int64_t i = 0; i < lv[l].n; i++) {
        if (kr[l][i] < 0) continue;
        int64_t v = base[l] + kr[l][i];
        int leaf = lv[l].nlen[i] <= cap || l == D;
        nodes.key[v] = lv[l].key[i];
        nodes.level[v] = (uint8_t)l;
        nodes.leaf[v] = (uint8_t)leaf;
        nodes.count[v] = lv[l].nlen[i];
        nodes.split[v] = 0.0;
        if (leaf) {
          nodes.len[v] = lv[l].nlen[i];
          nodes.room[v] = lv[l].nlen[i];
          nodes.fpos[v] = (in->debug & RDX_SP_DEBUG_PAPER_LINE9) ? ppos : lv[l].first[i];
          ppos += lv[l].nlen[i];
        } else {
          nodes.len[v] = lv[l].clen[i];
          nodes.room[v] = 0;
          nodes.fpos[v] = cpos;
          cpos += lv[l].clen[i];
        }
      }
    }
  }
  double t3 = rdx_now_ms();
  RDX_CHECK_GOTO(fill_pool(ctx, pts, in, keys, vals), st, fail);
  pts->nodes = nodes;
  pts->stats.phase_ms[0] = t1 - t0;
  pts->stats.phase_ms[1] = t2 - t1;
  pts->stats.phase_ms[2] = t3 - t2;
  pts->stats.phase_ms[3] = rdx_now_ms() - t3;
  st = RDX_OK;
  goto done;
fail:
  rdx_sp_nodes_free(ctx, &nodes);
  rdx_sp_pool_free(ctx, &pts->pool);
done:
  for (int l = 0; l <= D; l++) rdx_mem_free(ctx, lv[l].key);
  rdx_mem_free(ctx, parent);
  rdx_mem_free(ctx, keep_rank);
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, vals);
  return st;
}

/* ---- top-down ---- */

typedef struct td_level {
  int64_t n;
  uint64_t *key;
  int64_t *cnt;
} td_level;

static rdx_status build_top_down(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  int64_t n = in->n;
  int D = pts->depth;
  int64_t cap = pts->cap;
  uint64_t *keys = NULL, *vals = NULL, *tk = NULL, *tv = NULL;
  td_level lv[RDX_SP_MAX_QT_DEPTH + 1];
  memset(lv, 0, sizeof lv);
  rdx_sp_nodes nodes;
  memset(&nodes, 0, sizeof nodes);
  rdx_status st;
  double t0 = rdx_now_ms();
  RDX_CHECK_GOTO(make_keys(ctx, pts, in, &keys, &vals), st, fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: partition buffer", (void **)&tk, (size_t)n * 8, RDX_HOST), st,
                 fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: partition buffer", (void **)&tv, (size_t)n * 8, RDX_HOST), st,
                 fail);
  /* Phase 1: the root, then one sort and partition per level of the unfinished suffix. */
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: quadrants", (void **)&lv[0].key, 16, RDX_HOST), st, fail);
  lv[0].cnt = (int64_t *)(lv[0].key + 1);
  lv[0].n = 1;
  lv[0].key[0] = 0;
  lv[0].cnt[0] = n;
  int64_t done = n <= cap ? n : 0;
  int last = 0;
  for (int k = 1; k <= D && done < n; k++) {
    int64_t rn = n - done;
    int sh = 2 * (D - k);
    RDX_CHECK_GOTO(rdx_sp_radix_sort_cpu(ctx, keys + done, vals + done, rn, sh, 2 * D), st, fail);
    int64_t runs = 0;
    for (int64_t i = done; i < n; i++) runs += i == done || (keys[i] >> sh) != (keys[i - 1] >> sh);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_points_build: quadrants", (void **)&lv[k].key, (size_t)runs * 16, RDX_HOST),
                   st, fail);
    lv[k].cnt = (int64_t *)(lv[k].key + runs);
    lv[k].n = runs;
    int64_t r = -1;
    for (int64_t i = done; i < n; i++) {
      if (i == done || (keys[i] >> sh) != (keys[i - 1] >> sh)) {
        lv[k].key[++r] = keys[i] >> sh;
        lv[k].cnt[r] = 0;
      }
      lv[k].cnt[r]++;
    }
    /* stable partition: points of leaf quadrants join the finished prefix in code order */
    int64_t w = 0, a = done;
    r = -1;
    int64_t lead = 0;
    for (int64_t i = done; i < n; i++) {
      if (i == done || (keys[i] >> sh) != (keys[i - 1] >> sh)) r++;
      if (lv[k].cnt[r] <= cap || k == D) {
        keys[a] = keys[i];
        vals[a] = vals[i];
        a++;
        lead++;
      } else {
        tk[w] = keys[i];
        tv[w] = vals[i];
        w++;
      }
    }
    memcpy(keys + a, tk, (size_t)w * 8);
    memcpy(vals + a, tv, (size_t)w * 8);
    done += lead;
    last = k;
  }
  double t1 = rdx_now_ms();
  /* Phase 2 (Fig. 3): nodes level by level; children per internal node from key >> 2 of the
   * next level; first child offsets by exclusive scan (+ the next level's base); leaf point
   * offsets by exclusive scan of leaf counts in BFS order. */
  {
    int64_t n_nodes = 0, base[RDX_SP_MAX_QT_DEPTH + 2];
    for (int l = 0; l <= last; l++) {
      base[l] = n_nodes;
      n_nodes += lv[l].n;
    }
    base[last + 1] = n_nodes;
    RDX_CHECK_GOTO(rdx_sp_nodes_alloc(ctx, n_nodes, RDX_HOST, &nodes), st, fail);
    int64_t ppos = 0;
    for (int l = 0; l <= last; l++) {
      int64_t c = 0, cpos = base[l + 1];
      for (int64_t i = 0; i < lv[l].n; i++) {
        int64_t v = base[l] + i;
        int leaf = lv[l].cnt[i] <= cap || l == D;
        nodes.key[v] = lv[l].key[i];
        nodes.level[v] = (uint8_t)l;
        nodes.leaf[v] = (uint8_t)leaf;
        nodes.count[v] = lv[l].cnt[i];
        nodes.split[v] = 0.0;
        if (leaf) {
          nodes.fpos[v] = ppos;
          nodes.len[v] = lv[l].cnt[i];
          nodes.room[v] = lv[l].cnt[i];
          ppos += lv[l].cnt[i];
        } else {
          /* reduce_by_key(next level's key >> 2): the children of this node */
          int64_t nc = 0;
          while (c < lv[l + 1].n && (lv[l + 1].key[c] >> 2) == lv[l].key[i]) c++, nc++;
          nodes.fpos[v] = cpos;
          nodes.len[v] = nc;
          nodes.room[v] = 0;
          cpos += nc;
        }
      }
    }
  }
  double t2 = rdx_now_ms();
  RDX_CHECK_GOTO(fill_pool(ctx, pts, in, keys, vals), st, fail);
  pts->nodes = nodes;
  pts->stats.phase_ms[0] = 0;
  pts->stats.phase_ms[1] = t1 - t0;
  pts->stats.phase_ms[2] = t2 - t1;
  pts->stats.phase_ms[3] = rdx_now_ms() - t2;
  st = RDX_OK;
  goto done;
fail:
  rdx_sp_nodes_free(ctx, &nodes);
  rdx_sp_pool_free(ctx, &pts->pool);
done:
  for (int l = 0; l <= D; l++) rdx_mem_free(ctx, lv[l].key);
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, vals);
  rdx_mem_free(ctx, tk);
  rdx_mem_free(ctx, tv);
  return st;
}

rdx_status rdx_sp_qt_build_cpu(rdx_context *ctx, rdx_points *pts, const rdx_sp_build_in *in) {
  return pts->method == RDX_POINTS_TOP_DOWN ? build_top_down(ctx, pts, in) : build_bottom_up(ctx, pts, in);
}

const rdx_sp_ops rdx_sp_qt_cpu_ops = {
    RDX_POINTS_QUADTREE, RDX_BACKEND_CPU, "quadtree",
    1, RDX_SP_MAX_QT_DEPTH, RDX_SP_DEFAULT_QT_DEPTH, 1,              /* top-down, depths, Morton */
    RDX_POINTS_PAGED, "the dense layout needs a GPU backend; the CPU backend pages",
    {{rdx_sp_update_cpu, 0, 0}, {NULL, 0, 0}}, NULL, 0,             /* the planner takes any batch */
    rdx_sp_scan_cpu, rdx_sp_qt_build_cpu, rdx_sp_query_cpu, rdx_sp_resident, rdx_sp_storage_free, NULL,
};

/* ---- nodes from sorted codes by binary search (updates' split groups, test reference) ---- */

rdx_status rdx_sp_qt_subtree(rdx_context *ctx, const uint64_t *keys, int64_t n, int level, uint64_t key, int depth,
                             int64_t cap, rdx_sp_hlist *out) {
  /* Breadth first: out doubles as the queue; fpos holds a node's first code while it waits. */
  int64_t head = out->n;
  rdx_sp_hnode root;
  memset(&root, 0, sizeof root);
  root.key = key;
  root.level = level;
  root.count = n;
  root.fpos = 0;
  RDX_CHECK(rdx_sp_hlist_push(ctx, out, root));
  for (int64_t i = head; i < out->n; i++) {
    rdx_sp_hnode nd = out->v[i];
    int64_t b[5];
    if (rdx_sp_qt_quadrants(keys, nd.fpos, nd.fpos + nd.count, nd.key, nd.level, depth, cap, b)) {
      out->v[i].leaf = 1;
      out->v[i].len = nd.count;
      out->v[i].room = nd.count;
      continue;
    }
    out->v[i].leaf = 0;
    for (int q = 0; q < 4; q++) {
      if (b[q + 1] == b[q]) continue;
      rdx_sp_hnode c;
      memset(&c, 0, sizeof c);
      c.key = 4 * nd.key + (uint64_t)q;
      c.level = nd.level + 1;
      c.count = b[q + 1] - b[q];
      c.fpos = b[q];
      RDX_CHECK(rdx_sp_hlist_push(ctx, out, c));
    }
  }
  return RDX_OK;
}
