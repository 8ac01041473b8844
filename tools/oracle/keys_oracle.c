/*
 * keys_oracle.c: see keys_oracle.h. Deliberately naive: qsort and binary search.
 */
#include "keys_oracle.h"

#include <stdlib.h>

typedef struct kr {
  uint64_t key, row;
} kr;

static int cmp_kr(const void *a, const void *b) {
  const kr *x = (const kr *)a, *y = (const kr *)b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static uint64_t at(rdx_array a, int64_t i) {
  return a.dtype == RDX_U32 ? ((const uint32_t *)a.data)[i] : ((const uint64_t *)a.data)[i];
}

static uint64_t row_of(rdx_array rows, int64_t i) { return rows.data ? at(rows, i) : (uint64_t)i; }

int keys_oracle_build(keys_oracle *o, rdx_array keys, rdx_array rows) {
  int64_t n = keys.count;
  kr *t = (kr *)malloc((size_t)(n ? n : 1) * sizeof *t);
  o->keys = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
  o->rows = (uint64_t *)malloc((size_t)(n ? n : 1) * 8);
  o->n = n;
  if (!t || !o->keys || !o->rows) {
    free(t);
    keys_oracle_free(o);
    return 0;
  }
  for (int64_t i = 0; i < n; i++) {
    t[i].key = at(keys, i);
    t[i].row = row_of(rows, i);
  }
  qsort(t, (size_t)n, sizeof *t, cmp_kr);
  for (int64_t i = 0; i < n; i++) {
    o->keys[i] = t[i].key;
    o->rows[i] = t[i].row;
  }
  free(t);
  return 1;
}

void keys_oracle_free(keys_oracle *o) {
  free(o->keys);
  free(o->rows);
  o->keys = o->rows = NULL;
  o->n = 0;
}

/* first index with key >= q */
static int64_t lower(const keys_oracle *o, uint64_t q) {
  int64_t lo = 0, hi = o->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (o->keys[mid] < q) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* first index with key > q */
static int64_t upper(const keys_oracle *o, uint64_t q) {
  int64_t lo = 0, hi = o->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (o->keys[mid] <= q) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

uint64_t keys_oracle_lookup(const keys_oracle *o, uint64_t q) {
  int64_t i = lower(o, q);
  return i < o->n && o->keys[i] == q ? o->rows[i] : RDX_MISS;
}

uint64_t keys_oracle_count(const keys_oracle *o, uint64_t lo, uint64_t hi) {
  if (lo > hi) return 0;
  return (uint64_t)(upper(o, hi) - lower(o, lo));
}

void keys_oracle_rows(const keys_oracle *o, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (lo > hi) return;
  int64_t b = lower(o, lo), e = upper(o, hi);
  for (int64_t i = b; i < e; i++) out[i - b] = o->rows[i];
  /* rows of one key are already ascending (pairs sorted by key, then row) */
  if (e - b > 1 && o->keys[b] != o->keys[e - 1]) qsort(out, (size_t)(e - b), 8, cmp_u64);
}

uint64_t keys_oracle_scan_lookup(rdx_array keys, rdx_array rows, uint64_t q) {
  uint64_t best = RDX_MISS;
  for (int64_t i = 0; i < keys.count; i++)
    if (at(keys, i) == q && row_of(rows, i) < best) best = row_of(rows, i);
  return best;
}

uint64_t keys_oracle_scan_count(rdx_array keys, uint64_t lo, uint64_t hi) {
  uint64_t c = 0;
  for (int64_t i = 0; i < keys.count; i++) c += at(keys, i) >= lo && at(keys, i) <= hi;
  return c;
}

/* Rows of keys in [lo, hi] by the scan, ascending, into out (the scan's count of them). */
static void scan_rows(rdx_array keys, rdx_array rows, uint64_t lo, uint64_t hi, uint64_t *out) {
  int64_t c = 0;
  for (int64_t i = 0; i < keys.count; i++)
    if (at(keys, i) >= lo && at(keys, i) <= hi) out[c++] = row_of(rows, i);
  qsort(out, (size_t)c, 8, cmp_u64);
}

int64_t keys_oracle_self_check(const keys_oracle *o, rdx_array keys, rdx_array rows, const uint64_t *q, int64_t m,
                               uint64_t span) {
  int64_t bad = 0;
  uint64_t *a = (uint64_t *)malloc((size_t)(keys.count + 1) * 8), *b = (uint64_t *)malloc((size_t)(keys.count + 1) * 8);
  if (!a || !b) {
    free(a);
    free(b);
    return -1;
  }
  for (int64_t i = 0; i < m; i++) {
    bad += keys_oracle_lookup(o, q[i]) != keys_oracle_scan_lookup(keys, rows, q[i]);
    for (int w = 0; w < 2; w++) {
      uint64_t lo = q[i], hi = w && q[i] <= UINT64_MAX - span ? q[i] + span : q[i];
      uint64_t c = keys_oracle_count(o, lo, hi);
      if (c != keys_oracle_scan_count(keys, lo, hi)) {
        bad++;
        continue;
      }
      keys_oracle_rows(o, lo, hi, a);
      scan_rows(keys, rows, lo, hi, b);
      for (uint64_t j = 0; j < c; j++) bad += a[j] != b[j];
    }
  }
  free(a);
  free(b);
  return bad;
}
