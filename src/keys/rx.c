/*
 * rx.c: the rx kind on the CPU (soft BVH): one triangle per key (rx_hd.h), lookups are rays.
 * Also the parts of the build that every backend shares: the facts taken from the sorted keys
 * (duplicates present, populated rows for ranges).
 *
 * Build: triangles in input order (primitive i = input position i), the LBVH over them, the
 * input's row ids when given (else the row id is the primitive index, as in the paper), and one
 * sort of the keys for two facts the rays cannot see cheaply: whether keys repeat (point lookups
 * then visit every hit, RX's multi-hit path) and which rows are populated (ranges fire one ray
 * per populated row instead of one per row of the whole span). The sort is charged to the build.
 * Queries run in chunks of 1024 on the thread pool.
 */
#include "keys/rx.h"

#include <stdlib.h>
#include <string.h>

#define QCHUNK 1024

typedef struct tri_job {
  const rdx_key_input *in;
  float *tris;
  uint64_t *codes; /* key order for the soft tree, or NULL */
} tri_job;

static inline uint64_t key_at(const void *keys, rdx_dtype dt, int64_t i) {
  return dt == RDX_U32 ? ((const uint32_t *)keys)[i] : ((const uint64_t *)keys)[i];
}

static void tri_task(void *arg, int64_t t, int thread) {
  tri_job *j = (tri_job *)arg;
  int64_t end = (t + 1) * 65536 < j->in->n ? (t + 1) * 65536 : j->in->n;
  for (int64_t i = t * 65536; i < end; i++) {
    uint64_t k = key_at(j->in->keys, j->in->key_dtype, i);
    rdx_rx_triangle(k, j->tris + i * 9);
    if (j->codes) j->codes[i] = k;
  }
}

/* Facts from sorted entries on the host (CPU) or after a copy (see rx.cu for the GPU). */
rdx_status rdx_rx_facts_from_sorted_cpu(rdx_context *ctx, const rdx_entries *e, rdx_rx_impl *x) {
  int64_t n = e->n;
  uint64_t prev_row = UINT64_MAX;
  int64_t distinct = 0;
  x->unique = 1;
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i].key : ((const rdx_pair64 *)e->pairs)[i].key;
    uint64_t kp = i == 0 ? 0
                         : (e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i - 1].key
                                           : ((const rdx_pair64 *)e->pairs)[i - 1].key);
    if (i > 0 && k == kp) x->unique = 0;
    if ((k >> 22) != prev_row) distinct++, prev_row = k >> 22;
  }
  uint64_t k0 = e->width == 32 ? ((const rdx_pair32 *)e->pairs)[0].key : ((const rdx_pair64 *)e->pairs)[0].key;
  uint64_t k1 = e->width == 32 ? ((const rdx_pair32 *)e->pairs)[n - 1].key : ((const rdx_pair64 *)e->pairs)[n - 1].key;
  x->rows_info.min_row = k0 >> 22;
  x->rows_info.max_row = k1 >> 22;
  x->rows_info.list = NULL;
  x->rows_info.n_list = 0;
  if (x->rows_info.max_row - x->rows_info.min_row < RDX_RX_ROW_SPAN_MAX) return RDX_OK;
  uint64_t *list = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_index_build: rx populated rows", (void **)&list, (size_t)distinct * 8, RDX_HOST));
  prev_row = UINT64_MAX;
  int64_t j = 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = e->width == 32 ? ((const rdx_pair32 *)e->pairs)[i].key : ((const rdx_pair64 *)e->pairs)[i].key;
    if ((k >> 22) != prev_row) list[j++] = prev_row = k >> 22;
  }
  x->row_list = list;
  x->rows_info.list = list;
  x->rows_info.n_list = distinct;
  return RDX_OK;
}

static rdx_status rx_build(rdx_context *ctx, rdx_index *idx, const rdx_key_input *in) {
  rdx_rx_impl *x = (rdx_rx_impl *)calloc(1, sizeof *x);
  if (x == NULL) return rdx_fail(ctx, RDX_ERR_HOST_OUT_OF_MEMORY, "rdx_index_build: rx handle");
  rdx_status st;
  float *tris = NULL;
  uint64_t *codes = NULL;
  rdx_entries e = {0};
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx triangles", (void **)&tris, (size_t)in->n * 36, RDX_HOST), st,
                 fail);
  int morton = (in->opts.flags & RDX_BUILD_RT_MORTON) != 0;
  if (!morton)
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx sort codes", (void **)&codes, (size_t)in->n * 8, RDX_HOST), st,
                   fail);
  tri_job tj = {in, tris, codes};
  rdx_parallel_for(ctx, (in->n + 65535) / 65536, tri_task, &tj);
  rdx_bvh_options bo = {codes, 0}; /* width 0: the context's forced width, else BVH4 */
  RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_TRIANGLES, tris, in->n, &bo, &x->scene), st, fail);
  rdx_mem_free(ctx, tris); /* the tree keeps its own copy, like a GAS */
  rdx_mem_free(ctx, codes);
  tris = NULL;
  codes = NULL;
  if (in->rows) {
    size_t w = in->row_dtype == RDX_U32 ? 4 : 8;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx row ids", &x->rows, (size_t)in->n * w, RDX_HOST), st, fail);
    memcpy(x->rows, in->rows, (size_t)in->n * w);
    x->row_width = (int)w * 8;
  } else if (in->first_row != 0) { /* implied rows past 0 (an insert into an empty index): spelt out */
    int w = in->first_row + (uint64_t)in->n - 1 <= UINT32_MAX ? 4 : 8;
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rdx_index_build: rx row ids", &x->rows, (size_t)in->n * w, RDX_HOST), st, fail);
    for (int64_t i = 0; i < in->n; i++) {
      if (w == 4) ((uint32_t *)x->rows)[i] = (uint32_t)(in->first_row + (uint64_t)i);
      else ((uint64_t *)x->rows)[i] = in->first_row + (uint64_t)i;
    }
    x->row_width = w * 8;
  }
  RDX_CHECK_GOTO(rdx_entries_build_cpu(ctx, in, &e), st, fail);
  RDX_CHECK_GOTO(rdx_rx_facts_from_sorted_cpu(ctx, &e, x), st, fail);
  rdx_entries_free(ctx, &e);
  idx->impl = x;
  return RDX_OK;
fail:
  rdx_entries_free(ctx, &e);
  rdx_mem_free(ctx, tris);
  rdx_mem_free(ctx, codes);
  rdx_rx_impl_free(ctx, x);
  return st;
}

void rdx_rx_impl_free(rdx_context *ctx, rdx_rx_impl *x) {
  if (x == NULL) return;
  rdx_rt_scene_free(ctx, &x->scene);
  rdx_mem_free(ctx, x->rows);
  rdx_mem_free(ctx, x->row_list);
  rdx_mem_free(ctx, x->keys);
  free(x);
}

static void rx_destroy(rdx_context *ctx, rdx_index *idx) { rdx_rx_impl_free(ctx, (rdx_rx_impl *)idx->impl); }

/* ---- entries (snapshots and the rebuild of rdx_keys_rebuild) ----
 * rx keeps no key array: each key is read back from its triangle in the tree (rx_hd.h: vertex 0
 * is (x - 1/2, y + 1/2, z - 1/2), every value exact in float), and its row from the primitive's
 * input position. */

static inline uint64_t key_of_triangle(const float *v) {
  uint64_t x = (uint64_t)(v[0] + 0.5f), y = (uint64_t)(v[1] - 0.5f), z = (uint64_t)(v[2] + 0.5f);
  return x | y << 22 | z << 44;
}

static rdx_status rx_entries(rdx_context *ctx, const rdx_index *idx, rdx_entries *out) {
  const rdx_rx_impl *x = (const rdx_rx_impl *)idx->impl;
  const rdx_bvh *b = &x->scene.bvh;
  int64_t n = b->n_prims;
  uint64_t *keys = NULL, *rows = NULL;
  rdx_status st;
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rx: entries keys", (void **)&keys, (size_t)n * 8, RDX_HOST), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, "rx: entries rows", (void **)&rows, (size_t)n * 8, RDX_HOST), st, done);
  for (int64_t i = 0; i < n; i++) {
    keys[i] = key_of_triangle(b->prims + i * 9);
    rows[i] = rdx_rx_row_of(x->rows, x->row_width, b->ids[i]);
  }
  rdx_key_input in;
  memset(&in, 0, sizeof in);
  in.keys = keys;
  in.rows = rows;
  in.n = n;
  in.key_dtype = RDX_U64;
  in.row_dtype = RDX_U64;
  in.opts = idx->opts;
  if (idx->dtype == RDX_U32) { /* u32 keys keep width 32 when every row fits: narrow in place */
    for (int64_t i = 0; i < n; i++) ((uint32_t *)keys)[i] = (uint32_t)keys[i];
    in.key_dtype = RDX_U32;
  }
  st = rdx_entries_build_cpu(ctx, &in, out);
done:
  rdx_mem_free(ctx, keys);
  rdx_mem_free(ctx, rows);
  return st;
}

/* ---- queries ---- */

typedef struct query_job {
  const rdx_rx_impl *x;
  rdx_bvh_view v;
  const void *q;
  rdx_dtype dt;
  int64_t n;
  int op;             /* RDX_RX_OP_* */
  uint64_t *out;      /* rows / counts / offsets */
  uint64_t *rows;     /* fill target */
} query_job;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void query_task(void *arg, int64_t t, int thread) {
  const query_job *j = (const query_job *)arg;
  int64_t end = (t + 1) * QCHUNK < j->n ? (t + 1) * QCHUNK : j->n;
  for (int64_t i = t * QCHUNK; i < end; i++) {
    rdx_rx_state s;
    int fill = j->op == RDX_RX_OP_LOOKUP_FILL || j->op == RDX_RX_OP_RANGE_FILL;
    rdx_rx_state_init(j->x->rows, j->x->row_width, j->x->unique, j->op, &s, fill ? j->rows + j->out[i] : NULL);
    if (j->op >= RDX_RX_OP_RANGE_COUNT)
      rdx_rx_soft_range(&j->v, &j->x->rows_info, key_at(j->q, j->dt, 2 * i), key_at(j->q, j->dt, 2 * i + 1), &s);
    else
      rdx_rx_soft_point(&j->v, key_at(j->q, j->dt, i), &s);
    rdx_rx_finish(j->op, i, &s, j->out, j->rows);
    if (j->op == RDX_RX_OP_LOOKUP_FILL && s.mode != RDX_RX_FIRST && s.count > 1)
      qsort(j->rows + j->out[i], (size_t)s.count, 8, cmp_u64);
  }
}

static rdx_status run(rdx_context *ctx, const rdx_index *idx, const void *q, int64_t n, int op, uint64_t *out,
                      uint64_t *rows) {
  const rdx_rx_impl *x = (const rdx_rx_impl *)idx->impl;
  query_job j = {x, rdx_bvh_view_of(&x->scene.bvh), q, idx->dtype, n, op, out, rows};
  return rdx_parallel_for(ctx, (n + QCHUNK - 1) / QCHUNK, query_task, &j);
}

_Static_assert(RDX_RX_OP_LOOKUP_FILL == (int)RDX_KEY_LOOKUP_FILL && RDX_RX_OP_RANGE_FILL == (int)RDX_KEY_RANGE_FILL,
               "rx ops follow rdx_key_op");
static rdx_status rx_query(rdx_context *ctx, const rdx_index *idx, rdx_key_op op, const void *q, int64_t n,
                           uint64_t *out, uint64_t *rows) {
  return run(ctx, idx, q, n, (int)op, out, rows); /* RDX_RX_OP_* share rdx_key_op's numbers */
}

const rdx_key_ops rdx_rx_cpu_ops = {
    RDX_KIND_RX, RDX_BACKEND_CPU, rx_build, rx_destroy, rx_query, 1, 0, NULL, NULL, rx_entries,
};
