/*
 * keys_oracle.h: the brute-force reference for key indexes: (key, row) pairs sorted with qsort
 * and searched with a textbook binary search. Obviously right and independent of src/keys; the
 * tests also check it against a plain linear scan (keys_oracle_self_check).
 */
#ifndef RDX_KEYS_ORACLE_H
#define RDX_KEYS_ORACLE_H

#include <stdint.h>

#include "raydex.h"

typedef struct keys_oracle {
  uint64_t *keys;   /* sorted by (key, row) */
  uint64_t *rows;
  int64_t n;
} keys_oracle;

/* keys: u32/u64 host array; rows: host array or data NULL for implied. Returns 0 on no memory. */
int keys_oracle_build(keys_oracle *o, rdx_array keys, rdx_array rows);
void keys_oracle_free(keys_oracle *o);
/* smallest row with key == q, or RDX_MISS */
uint64_t keys_oracle_lookup(const keys_oracle *o, uint64_t q);
/* number of keys in [lo, hi] (0 if lo > hi) */
uint64_t keys_oracle_count(const keys_oracle *o, uint64_t lo, uint64_t hi);
/* rows of keys in [lo, hi], ascending, into out (keys_oracle_count entries) */
void keys_oracle_rows(const keys_oracle *o, uint64_t lo, uint64_t hi, uint64_t *out);

/* The same answers by a linear scan of the unsorted input, for small inputs. */
uint64_t keys_oracle_scan_lookup(rdx_array keys, rdx_array rows, uint64_t q);
uint64_t keys_oracle_scan_count(rdx_array keys, uint64_t lo, uint64_t hi);

/* The self-check (STYLE rule 26): the oracle o, built from keys and rows, against the linear scan
 * for each of the m point queries q (lookup, and count and rows of [q, q] and of [q, q + span]).
 * Returns how many answers disagree, 0 for a sound oracle; a corrupted one must give more
 * (tests/test_keys_lookup.c shows both). */
int64_t keys_oracle_self_check(const keys_oracle *o, rdx_array keys, rdx_array rows, const uint64_t *q, int64_t m,
                               uint64_t span);

#endif
