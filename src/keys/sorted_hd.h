/*
 * sorted_hd.h: the sorted kind's search structure, shared by the CPU (sorted.c) and CUDA
 * (sorted.cu) backends.
 *
 * Layout: the (key, row) entries sorted by (key, row), cut into leaf blocks of 64 bytes (8 pairs
 * at width 32, 4 at width 64: one 64-byte DRAM access on the GPU, one cache line on the CPU).
 * Above them sits an implicit k-ary separator tree (a CSS-tree, Rao and Ross 1999):
 *
 *   level 0:  sep0[i]   = key of the last entry of leaf block i          (n / B entries)
 *   level l:  sep_l[i]  = sep_{l-1}[min(F*i + F - 1, len_{l-1} - 1)]     (len_{l-1} / F entries)
 *   ...up to a top level of at most F entries.
 *
 * F = 8 separators (32 bytes, one GPU sector, at width 32). The separators take about
 * n/B * 8/7 keys, 0.57 bytes per key at width 32, so the whole tree stays in the L2 cache of a
 * Hopper GPU up to 2^26 keys, and its upper levels in shared memory. This follows the RX
 * authors' 2025 advice for sorted-array baselines: k-ary search instead of binary search, with
 * the upper levels cache-resident.
 *
 * lower_bound(q) = the first entry with key >= q. At each level the child is the number of
 * separators in the node that are < q (a branch-free count); a block whose last key is < q
 * cannot hold the answer, so counting such blocks gives the block that does.
 */
#ifndef RDX_SORTED_HD_H
#define RDX_SORTED_HD_H

#include "keys/keys.h"



#define RDX_SORTED_FANOUT 8
#define RDX_SORTED_MAX_LEVELS 32

typedef struct rdx_sorted_layout {
  int width;                             /* 32 or 64, as the entries */
  int64_t n;                             /* entries */
  int block;                             /* entries per leaf block: 8 or 4 */
  int n_levels;                          /* separator levels, >= 1 */
  int64_t off[RDX_SORTED_MAX_LEVELS];    /* element offset of level l in the separator buffer */
  int64_t len[RDX_SORTED_MAX_LEVELS];    /* elements of level l */
  int64_t total;                         /* elements in the separator buffer */
} rdx_sorted_layout;

/* Plan the levels for n entries of the given width. */
RDX_HD void rdx_sorted_plan(rdx_sorted_layout *L, int64_t n, int width) {
  L->width = width;
  L->n = n;
  L->block = width == 32 ? 8 : 4;
  int64_t len = (n + L->block - 1) / L->block, off = 0;
  int l = 0;
  for (;;) {
    L->off[l] = off;
    L->len[l] = len;
    /* each level starts on a node boundary, so a node is one aligned 32- or 64-byte access */
    off += (len + RDX_SORTED_FANOUT - 1) / RDX_SORTED_FANOUT * RDX_SORTED_FANOUT;
    l++;
    if (len <= RDX_SORTED_FANOUT || l == RDX_SORTED_MAX_LEVELS) break;
    len = (len + RDX_SORTED_FANOUT - 1) / RDX_SORTED_FANOUT;
  }
  L->n_levels = l;
  L->total = off;
}

/* Separator i of level l (l = 0 reads entries, l > 0 reads level l - 1). */
#define RDX_SORTED_DEFINE(W, PAIR, KEY)                                                          \
  RDX_HD KEY rdx_sorted_sep_source##W(const PAIR *e, const KEY *seps, const rdx_sorted_layout *L, \
                                      int l, int64_t i) {                                        \
    if (l == 0) {                                                                                \
      int64_t j = i * L->block + L->block - 1;                                                   \
      return e[j < L->n ? j : L->n - 1].key;                                                     \
    }                                                                                            \
    int64_t j = i * RDX_SORTED_FANOUT + RDX_SORTED_FANOUT - 1;                                   \
    int64_t last = L->len[l - 1] - 1;                                                            \
    return seps[L->off[l - 1] + (j < last ? j : last)];                                          \
  }                                                                                              \
  /* First entry index with key >= q (n if none). */                                             \
  RDX_HD int64_t rdx_sorted_lower##W(const PAIR *e, const KEY *seps, const rdx_sorted_layout *L, \
                                     KEY q) {                                                    \
    int64_t c = 0;                                                                               \
    for (int l = L->n_levels - 1; l >= 0; l--) {                                                 \
      const KEY *s = seps + L->off[l];                                                           \
      int64_t b = c * RDX_SORTED_FANOUT, end = b + RDX_SORTED_FANOUT;                             \
      if (l == L->n_levels - 1) b = 0, end = L->len[l];                                          \
      if (end > L->len[l]) end = L->len[l];                                                      \
      int64_t cnt = 0;                                                                           \
      for (int64_t i = b; i < end; i++) cnt += s[i] < q;                                         \
      c = b + cnt;                                                                               \
      if (c == L->len[l]) return L->n; /* every key is < q */                                     \
    }                                                                                            \
    int64_t b = c * L->block, end = b + L->block;                                                \
    if (end > L->n) end = L->n;                                                                  \
    int64_t cnt = 0;                                                                             \
    for (int64_t i = b; i < end; i++) cnt += e[i].key < q;                                       \
    return b + cnt;                                                                              \
  }                                                                                              \
  /* First entry index with key > q. */                                                          \
  RDX_HD int64_t rdx_sorted_upper##W(const PAIR *e, const KEY *seps, const rdx_sorted_layout *L, \
                                     KEY q) {                                                    \
    if (q == (KEY)~(KEY)0) return L->n;                                                          \
    return rdx_sorted_lower##W(e, seps, L, (KEY)(q + 1));                                        \
  }

RDX_SORTED_DEFINE(32, rdx_pair32, uint32_t)
RDX_SORTED_DEFINE(64, rdx_pair64, uint64_t)

#endif /* RDX_SORTED_HD_H */
