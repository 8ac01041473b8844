/*
 * cgrxu.c: the cgrxu kind on the CPU (soft BVH), and the node store both backends share.
 *
 * Build: sort the pairs (entries.c), build cgRX's scene over buckets of C/2 (cgrx.c), fill each
 * bucket's representative node with its pairs, keep the representatives (cgrxu.h), free the
 * sorted pairs. Updates and queries: cgrxu_hd.h's per-bucket and per-query functions, in chunks
 * on the thread pool. Resident: the scene, the representatives, the slabs and the free stack.
 */
#include <stdatomic.h>

#define RDX_CGRXU_ATOMIC_ADD32(p, v) atomic_fetch_add_explicit((_Atomic uint32_t *)(p), (v), memory_order_relaxed)

#include "keys/cgrxu.h"

#include <stdlib.h>
#include <string.h>

#define QCHUNK 1024
#define BCHUNK 4096

/* ---- the node store (both backends) ---- */

static rdx_status copy_any(rdx_context *ctx, void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return RDX_OK;
  if (rdx_compute_location(ctx) == RDX_HOST) {
    memcpy(dst, src, bytes);
    return RDX_OK;
  }
  return rdx_cuda_memcpy(ctx, dst, src, bytes);
}

rdx_status rdx_cgrxu_store_init(rdx_context *ctx, rdx_cgrxu_impl *u, int64_t nb) {
  /* slabs of about a quarter of the build's nodes (at least 2^10, at most 2^22 nodes), so
   * growth comes in steps of a quarter and RDX_CGRXU_MAX_SLABS slabs hold 1000 times the build */
  int shift = 10;
  while (shift < 22 && ((int64_t)1 << shift) < (nb + 1) / 4) shift++;
  u->v.shift = shift;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_build: cgrxu slab table", (void **)&u->slab_table,
                          RDX_CGRXU_MAX_SLABS * sizeof(char *), RDX_HOST));
  memset(u->slab_table, 0, RDX_CGRXU_MAX_SLABS * sizeof(char *));
  const rdx_location where = rdx_compute_location(ctx);
  if (where == RDX_DEVICE)
    RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_build: cgrxu slab table", (void **)&u->dev_table,
                            RDX_CGRXU_MAX_SLABS * sizeof(char *), RDX_DEVICE));
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_build: cgrxu counters", (void **)&u->counters, 16, where));
  u->n_nodes = (uint32_t)(nb + 1);
  return rdx_cgrxu_reserve(ctx, u, 0);
}

rdx_status rdx_cgrxu_reserve(rdx_context *ctx, rdx_cgrxu_impl *u, uint64_t more) {
  static const char what[] = "cgrxu: node slabs";
  const uint64_t per = (uint64_t)1 << u->v.shift, cap = (uint64_t)u->n_slabs * per;
  const uint64_t want = (uint64_t)u->n_nodes + more; /* free nodes are ids below n_nodes */
  if (want <= cap && u->free_ids != NULL) return RDX_OK;
  const uint64_t slabs = (want + per - 1) / per;
  if (slabs > RDX_CGRXU_MAX_SLABS || slabs * per > (uint64_t)UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_UNSUPPORTED, "%s: %llu nodes are more than a cgrxu index holds (%llu)", what,
                    (unsigned long long)want, (unsigned long long)(RDX_CGRXU_MAX_SLABS * per));
  const rdx_location where = rdx_compute_location(ctx);
  char *fresh[RDX_CGRXU_MAX_SLABS];
  int n_fresh = 0;
  uint32_t *ids = NULL;
  rdx_status st = RDX_OK;
  for (uint64_t s = (uint64_t)u->n_slabs; s < slabs; s++) {
    st = rdx_mem_alloc(ctx, what, (void **)&fresh[n_fresh], rdx_cgrxu_slab_bytes(&u->v), where);
    if (st != RDX_OK) goto fail;
    n_fresh++;
  }
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&ids, (size_t)(slabs * per) * 4, where), st, fail);
  RDX_CHECK_GOTO(copy_any(ctx, ids, u->free_ids, (size_t)u->n_free * 4), st, fail);
  if (where == RDX_DEVICE) {
    char *table[RDX_CGRXU_MAX_SLABS];
    memcpy(table, u->slab_table, sizeof table);
    for (int k = 0; k < n_fresh; k++) table[u->n_slabs + k] = fresh[k];
    RDX_CHECK_GOTO(rdx_cuda_memcpy(ctx, u->dev_table, table, sizeof table), st, fail);
  }
  /* nothing fails from here */
  for (int k = 0; k < n_fresh; k++) u->slab_table[u->n_slabs + k] = fresh[k];
  u->n_slabs += n_fresh;
  rdx_mem_free(ctx, u->free_ids);
  u->free_ids = ids;
  u->v.slabs = where == RDX_DEVICE ? (char *const *)u->dev_table : (char *const *)u->slab_table;
  return RDX_OK;
fail:
  for (int k = 0; k < n_fresh; k++) rdx_mem_free(ctx, fresh[k]);
  rdx_mem_free(ctx, ids);
  return st;
}

void rdx_cgrxu_adopt_reps(rdx_cgrxu_impl *u, void *reps) {
  rdx_cgrx_params *P = &u->x.P;
  u->v.max_key = P->max_key;
  u->x.e.pairs = reps;
  u->x.e.n = P->nb;
  P->pairs = reps;
  P->n = P->nb; /* each representative is its own bucket of one: rdx_cgrx_rep(P, b) = reps[b] */
  P->bucket = 1;
  u->v.reps = reps;
  u->v.nb = P->nb;
}

void rdx_cgrxu_impl_free(rdx_context *ctx, rdx_cgrxu_impl *u) {
  if (u == NULL) return;
  if (u->slab_table)
    for (int s = 0; s < u->n_slabs; s++) rdx_mem_free(ctx, u->slab_table[s]);
  rdx_mem_free(ctx, u->slab_table);
  rdx_mem_free(ctx, u->dev_table);
  rdx_mem_free(ctx, u->free_ids);
  rdx_mem_free(ctx, u->counters);
  rdx_rt_scene_free(ctx, &u->x.scene);
  rdx_entries_free(ctx, &u->x.e);
  rdx_mem_free(ctx, u->x.flag);
  rdx_mem_free(ctx, (void *)u->v.eff);
  free(u);
}

/* ---- build ---- */

typedef struct fill_job {
  rdx_cgrxu_impl *u;
  const rdx_entries *e;
  int64_t bucket;
  void *reps;
  uint64_t *eff;
} fill_job;

static inline uint64_t e_key(const rdx_entries *e, int64_t i) {
  return e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i].key : ((const rdx_pair64 *)e->pairs)[i].key;
}
static inline uint64_t e_row(const rdx_entries *e, int64_t i) {
  return e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i].row : ((const rdx_pair64 *)e->pairs)[i].row;
}

static void fill_task(void *arg, int64_t t, int thread) {
  fill_job *j = (fill_job *)arg;
  const rdx_cgrxu_view *v = &j->u->v;
  const int64_t nb = j->u->x.P.nb, B = j->bucket;
  int64_t end = (t + 1) * BCHUNK < nb + 1 ? (t + 1) * BCHUNK : nb + 1;
  for (int64_t b = t * BCHUNK; b < end; b++) {
    rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, (uint32_t)b);
    char *p = rdx_cgrxu_pairs_of(v, (uint32_t)b);
    int64_t lo = b * B, hi = lo + B < j->e->n ? lo + B : j->e->n;
    if (b == nb) lo = hi = j->e->n; /* the overflow bucket starts empty */
    for (int64_t i = lo; i < hi; i++) rdx_cgrxu_put(v, p, (int)(i - lo), e_key(j->e, i), e_row(j->e, i));
    h->size = (uint32_t)(hi - lo);
    h->next = RDX_CGRXU_NONE;
    h->max_key = hi > lo ? e_key(j->e, hi - 1) : 0;
    if (b < nb) { /* representative: the bucket's last key; bmin: its first; eff: its triangle's cell */
      j->eff[b] = rdx_cgrxu_eff(&j->u->x.P, b, e_key(j->e, hi - 1), hi < j->e->n ? e_key(j->e, hi) : 0,
                                e_key(j->e, j->e->n - 1));
      if (j->e->width == 32) {
        ((rdx_pair32 *)j->reps)[b].key = (uint32_t)e_key(j->e, hi - 1);
        ((rdx_pair32 *)j->reps)[b].row = (uint32_t)e_key(j->e, lo);
      } else {
        ((rdx_pair64 *)j->reps)[b].key = e_key(j->e, hi - 1);
        ((rdx_pair64 *)j->reps)[b].row = e_key(j->e, lo);
      }
    }
  }
}

static void cgrxu_destroy(rdx_context *ctx, rdx_index *idx) { rdx_cgrxu_impl_free(ctx, (rdx_cgrxu_impl *)idx->impl); }

/* C, pairs per node, and the view's constants for entries of `width`. */
static void plan_view(rdx_cgrxu_impl *u, const rdx_build_options *o, int width) {
  u->v.width = width;
  u->v.node_bytes = o->node_bytes;
  u->v.cap = o->node_bytes / (width == 32 ? (int)sizeof(rdx_pair32) : (int)sizeof(rdx_pair64));
}

static rdx_status cgrxu_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_cgrxu_impl *u = (rdx_cgrxu_impl *)calloc(1, sizeof *u);
  if (u == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: cgrxu handle");
  rdx_status st;
  void *reps = NULL;
  uint64_t *eff = NULL;
  RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, in, &u->x.e), st, fail);
  plan_view(u, &in->opts, u->x.e.width);
  rdx_build_options o = in->opts;
  o.bucket_size = u->v.cap / 2; /* nodes start half full */
  rdx_cgrx_plan(&u->x, &o);
  RDX_CHECK_GOTO(rdx_cgrx_scene_cpu(ctx, &u->x, 0, (o.flags & RDX_BUILD_RT_MORTON) != 0), st, fail);
  const int64_t nb = u->x.P.nb;
  RDX_CHECK_GOTO(rdx_cgrxu_store_init(ctx, u, nb), st, fail);
  const size_t pair = u->x.e.width == 32 ? sizeof(rdx_pair32) : sizeof(rdx_pair64);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: cgrxu representatives", &reps, (size_t)nb * pair, RDX_HOST), st,
                 fail);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: cgrxu routing", (void **)&eff, (size_t)nb * 8, RDX_HOST), st, fail);
  fill_job j = {u, &u->x.e, o.bucket_size, reps, eff};
  rdx_parallel_for(ctx, (nb + 1 + BCHUNK - 1) / BCHUNK, fill_task, &j);
  rdx_entries_free(ctx, &u->x.e);
  u->v.eff = eff;
  rdx_cgrxu_adopt_reps(u, reps);
  idx->impl = u;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, reps);
  rdx_mem_free(ctx, eff);
  rdx_cgrxu_impl_free(ctx, u);
  return st;
}

/* ---- queries ---- */

typedef struct query_job {
  const rdx_cgrxu_impl *u;
  rdx_bvh_view bv;
  const void *q;
  rdx_dtype dt;
  int64_t n;
  int op;
  uint64_t *out, *rows;
  int broken;
} query_job;

static inline uint64_t key_at(const void *keys, rdx_dtype dt, int64_t i) {
  return dt == RDX_U32 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
}

/* The bucket of k by the rays (nb above the build's largest key), or -1 for a broken scene. */
static inline int64_t bucket_of(const rdx_cgrxu_impl *u, const rdx_bvh_view *bv, uint64_t k) {
  int rays = 0;
  int64_t b = rdx_cgrx_locate_soft(&u->x.P, bv, k, &rays);
  return b == RDX_CGRX_BROKEN ? -1 : rdx_cgrxu_bucket(&u->v, b);
}

static void query_task(void *arg, int64_t t, int thread) {
  query_job *j = (query_job *)arg;
  const rdx_cgrxu_impl *u = j->u;
  const int range = j->op >= RDX_CGRX_OP_RANGE_COUNT, fill = j->op == RDX_CGRX_OP_LOOKUP_FILL || j->op == RDX_CGRX_OP_RANGE_FILL;
  int64_t end = (t + 1) * QCHUNK < j->n ? (t + 1) * QCHUNK : j->n;
  for (int64_t i = t * QCHUNK; i < end; i++) {
    uint64_t lo = key_at(j->q, j->dt, range ? 2 * i : i), hi = range ? key_at(j->q, j->dt, 2 * i + 1) : lo;
    rdx_cgrxu_found f = {0, RDX_MISS};
    if (lo <= hi) {
      int64_t b = bucket_of(u, &j->bv, lo), bh = range ? bucket_of(u, &j->bv, hi) : b;
      if (b < 0 || bh < 0) {
        __atomic_store_n(&j->broken, 1, __ATOMIC_RELAXED);
        b = bh = u->v.nb;
      }
      uint64_t *dst = fill ? j->rows + j->out[i] : NULL;
      f = rdx_cgrxu_walk(&u->v, b, bh, lo, hi, dst, fill ? j->out[i + 1] - j->out[i] : 0);
    }
    if (j->op == RDX_CGRX_OP_LOOKUP) j->out[i] = f.count ? f.min_row : RDX_MISS;
    else if (!fill) j->out[i] = f.count;
  }
}

static rdx_status cgrxu_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                              uint64_t *out, uint64_t *rows) {
  const rdx_cgrxu_impl *u = (const rdx_cgrxu_impl *)idx->impl;
  query_job j = {u, rdx_bvh_view_of(&u->x.scene.bvh), q, idx->dtype, n, (int)op, out, rows, 0};
  RDX_CHECK(rdx_parallel_for(ctx, (n + QCHUNK - 1) / QCHUNK, query_task, &j));
  if (j.broken)
    return rdx_fail(ctx, RDX_ERR_INTERNAL, "cgrxu: a lookup's ray sequence found no representative (a broken scene)");
  /* a key's rows may sit in several chains (build duplicates spanning buckets, then inserts):
   * a lookup's rows come out in chain order, and are put in ascending order here */
  if (op == RDX_KEY_LOOKUP_FILL) return rdx_csr_sort(ctx, out, n, rows);
  return RDX_OK;
}

/* ---- updates ---- */

typedef struct update_job {
  rdx_cgrxu_impl *u;
  const uint64_t *keys, *rows; /* the sorted batch (rows: inserts only) */
  int64_t m;
  int64_t *off;                /* inserts: bucket b's slice is [off[b], off[b+1]) */
  _Atomic uint64_t sum;
} update_job;

/* off[b] = the first batch key routed to bucket b or later, b in [0, nb + 1]. */
static void offsets_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  const int64_t nb = j->u->v.nb;
  int64_t end = (t + 1) * BCHUNK < nb + 2 ? (t + 1) * BCHUNK : nb + 2;
  for (int64_t b = t * BCHUNK; b < end; b++)
    j->off[b] = rdx_cgrxu_insert_offset(&j->u->v, b, j->keys, j->m);
}

static void bound_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  const int64_t nb = j->u->v.nb;
  int64_t end = (t + 1) * BCHUNK < nb + 1 ? (t + 1) * BCHUNK : nb + 1;
  uint64_t s = 0;
  for (int64_t b = t * BCHUNK; b < end; b++)
    s += rdx_cgrxu_split_bound(&j->u->v, b, (uint64_t)(j->off[b + 1] - j->off[b]));
  atomic_fetch_add(&j->sum, s);
}

static void insert_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  rdx_cgrxu_impl *u = j->u;
  const int64_t nb = u->v.nb;
  int64_t end = (t + 1) * BCHUNK < nb + 1 ? (t + 1) * BCHUNK : nb + 1;
  for (int64_t b = t * BCHUNK; b < end; b++) {
    int64_t a = j->off[b], z = j->off[b + 1];
    if (a < z)
      rdx_cgrxu_insert_chain(&u->v, b, j->keys + a, j->rows + a, z - a, u->free_ids, u->n_free, u->n_nodes,
                             &u->counters[1]);
  }
}

static void erase_task(void *arg, int64_t t, int thread) {
  update_job *j = (update_job *)arg;
  rdx_cgrxu_impl *u = j->u;
  const int64_t nb = u->v.nb;
  int64_t end = (t + 1) * BCHUNK < nb + 1 ? (t + 1) * BCHUNK : nb + 1;
  uint64_t gone = 0;
  for (int64_t b = t * BCHUNK; b < end; b++) {
    int64_t a, z;
    rdx_cgrxu_slice(&u->v, b, 1, j->keys, j->m, &a, &z);
    if (a < z) gone += rdx_cgrxu_erase_chain(&u->v, b, j->keys + a, z - a, u->free_ids, &u->counters[0]);
  }
  atomic_fetch_add(&j->sum, gone);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static rdx_status cgrxu_insert(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  static const char what[] = "rdx_index_insert: cgrxu batch";
  rdx_cgrxu_impl *u = (rdx_cgrxu_impl *)idx->impl;
  rdx_entries be = {0};
  uint64_t *kr = NULL;
  int64_t *off = NULL;
  rdx_status st;
  RDX_CHECK(rdx_entries_build_cpu(ctx, in, &be));
  if (be.width > u->v.width) { /* rows past 2^32 into 32-bit nodes: the nodes must widen */
    rdx_entries_free(ctx, &be);
    return rdx_keys_rebuild(ctx, idx, in, NULL, 0, NULL);
  }
  const int64_t m = be.n, nb = u->v.nb;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&kr, (size_t)m * 16, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&off, (size_t)(nb + 2) * 8, RDX_HOST), st, done);
  for (int64_t i = 0; i < m; i++) kr[i] = e_key(&be, i), kr[m + i] = e_row(&be, i);
  update_job j = {u, kr, kr + m, m, off, 0};
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (nb + 2 + BCHUNK - 1) / BCHUNK, offsets_task, &j), st, done);
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (nb + 1 + BCHUNK - 1) / BCHUNK, bound_task, &j), st, done);
  const uint64_t bound = atomic_load(&j.sum);
  /* room for every split the batch can cause, before anything changes */
  RDX_CHECK_GOTO(rdx_cgrxu_reserve(ctx, u, bound > u->n_free ? bound - u->n_free : 0), st, done);
  u->counters[1] = 0;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (nb + 1 + BCHUNK - 1) / BCHUNK, insert_task, &j), st, done);
  {
    uint32_t taken = u->counters[1], from_free = taken < u->n_free ? taken : u->n_free;
    u->n_free -= from_free;
    u->n_nodes += taken - from_free;
  }
done:
  rdx_entries_free(ctx, &be);
  rdx_mem_free(ctx, kr);
  rdx_mem_free(ctx, off);
  return st;
}

static rdx_status cgrxu_erase(rdx_context *ctx, rdx_index *idx, const void *keys, int64_t m, int64_t *n_erased) {
  static const char what[] = "rdx_index_erase: cgrxu batch";
  rdx_cgrxu_impl *u = (rdx_cgrxu_impl *)idx->impl;
  const int64_t nb = u->v.nb;
  uint64_t *k = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&k, (size_t)m * 8, RDX_HOST), st, done);
  for (int64_t i = 0; i < m; i++) k[i] = key_at(keys, idx->dtype, i);
  qsort(k, (size_t)m, 8, cmp_u64);
  int64_t mu = 0;
  for (int64_t i = 0; i < m; i++)
    if (mu == 0 || k[mu - 1] != k[i]) k[mu++] = k[i];
  update_job j = {u, k, NULL, mu, NULL, 0};
  /* nothing below fails: the free stack holds every node id */
  u->counters[0] = u->n_free;
  RDX_CHECK_GOTO(rdx_parallel_for(ctx, (nb + 1 + BCHUNK - 1) / BCHUNK, erase_task, &j), st, done);
  u->n_free = u->counters[0];
  *n_erased = (int64_t)atomic_load(&j.sum);
done:
  rdx_mem_free(ctx, k);
  return st;
}

/* ---- entries: every chain's pairs, in chain order (sorted by key), then sorted by (key, row) ---- */

static rdx_status cgrxu_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const rdx_cgrxu_impl *u = (const rdx_cgrxu_impl *)idx->impl;
  const rdx_cgrxu_view *v = &u->v;
  const int64_t n = idx->n;
  const int k32 = idx->dtype == RDX_U32;
  void *keys = NULL;
  uint64_t *rows = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "cgrxu: entries", &keys, (size_t)(n > 0 ? n : 1) * 8, RDX_HOST));
  rdx_status st = rdx_mem_alloc(ctx, "cgrxu: entries", (void **)&rows, (size_t)(n > 0 ? n : 1) * 8, RDX_HOST);
  int64_t w = 0;
  for (int64_t b = 0; st == RDX_OK && b <= v->nb; b++)
    for (uint32_t id = (uint32_t)b; id != RDX_CGRXU_NONE; id = rdx_cgrxu_head_of(v, id)->next) {
      const rdx_cgrxu_head *h = rdx_cgrxu_head_of(v, id);
      const char *p = rdx_cgrxu_pairs_of(v, id);
      for (int i = 0; i < (int)h->size && w < n; i++, w++) {
        if (k32) ((uint32_t *)keys)[w] = (uint32_t)rdx_cgrxu_key(v, p, i);
        else ((uint64_t *)keys)[w] = rdx_cgrxu_key(v, p, i);
        rows[w] = rdx_cgrxu_row(v, p, i);
      }
    }
  if (st == RDX_OK && w != n)
    st = rdx_fail(ctx, RDX_ERR_INTERNAL, "cgrxu: %lld pairs in the chains, %lld counted", (long long)w, (long long)n);
  if (st == RDX_OK) {
    rdx_key_input in;
    memset(&in, 0, sizeof in);
    in.keys = keys;
    in.rows = rows;
    in.n = n;
    in.key_dtype = idx->dtype;
    in.row_dtype = RDX_U64;
    in.opts = idx->opts;
    st = rdx_entries_build_cpu(ctx, &in, out); /* sorted by (key, row); width as a build's */
  }
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  return st;
}

const rdx_key_ops rdx_cgrxu_cpu_ops = {
    RDX_KIND_CGRXU, RDX_BACKEND_CPU, cgrxu_build, cgrxu_destroy, cgrxu_query, 1, 0, cgrxu_insert, cgrxu_erase,
    cgrxu_entries,
};
