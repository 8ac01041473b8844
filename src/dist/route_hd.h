/*
 * route_hd.h: which shard holds a key, shared by the host (keys.c) and the device (gpu.cu) halves
 * of the sharded key index, so both route every key alike.
 *
 * Hash (RDX_KIND_HASH): the low half of Murmur3's mix scaled to the ranks, so it is independent of
 * the high half that picks a key's window in the shard's own hash table. Every other kind: the
 * first p with k <= splitters[p], else the last; monotone in k, so a range [lo, hi] meets exactly
 * the shards of lo .. hi.
 */
#ifndef RDX_DIST_ROUTE_HD_H
#define RDX_DIST_ROUTE_HD_H

#include "keys/hash_hd.h"

/* splitters: size - 1 ascending keys (unused when hashed). */
RDX_HD int rdx_dist_shard_of(int hashed, int size, const uint64_t *splitters, uint64_t k) {
  if (size == 1) return 0;
  if (hashed) return (int)(((rdx_hash_mix64(k) & 0xFFFFFFFFull) * (uint64_t)size) >> 32);
  int lo = 0, hi = size - 1; /* answer in [lo, hi] */
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (k <= splitters[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

#endif /* RDX_DIST_ROUTE_HD_H */
