/*
 * hash_hd.h: the hash kind's table layout, hash function, probing and slot protocol, shared by
 * the CPU (hash.c) and CUDA (hash.cu) backends.
 *
 * Open addressing with bucketised linear probing: the table is an array of 32-byte windows (one
 * GPU sector, half a CPU cache line), a key's probe sequence is its home window, then the next
 * windows in order, wrapping at the end. Every key value is valid, so "empty" lives in the value
 * word, out of band:
 *
 *   u32 keys: slot = one 64-bit word, key in the high half:  key << 32 | value   (4 per window)
 *     value 0x00000000..0x7FFFFFFF  the key's only row (rows < 2^31)
 *     value 0x80000000 | d          the key's rows are csr[dir[d] .. dir[d+1]), d <= 0x7FFFFFFD
 *     value 0xFFFFFFFE              PENDING: build only, the key goes to the side CSR
 *     value 0xFFFFFFFF              EMPTY (the whole word is all ones)
 *   u64 keys: slot = {u64 key, u64 value}, 16 bytes (2 per window)
 *     value < 2^63                  the key's only row
 *     value 2^63 | d                csr[dir[d] .. dir[d+1])
 *     value 2^64 - 3                PENDING;  2^64 - 2 BUSY (claimed, key being written);
 *     value 2^64 - 1                EMPTY (the whole slot is all ones)
 *
 * So the common case -- a unique key with a row that fits the value -- costs one window: one
 * 32-byte read. Keys with several rows, and rows too big for the value, live in a side CSR:
 * the (key, row) pairs sorted by (key, row) with a directory of where each key's rows start;
 * the slot points at its directory entry, so a fast-path lookup of such a key reads the window,
 * the directory and the first (smallest) row.
 *
 * Build (both backends, concurrent): each input (key, row) walks its probe sequence. A slot
 * holding the same key means a duplicate: the slot becomes PENDING (atomic max: PENDING is
 * above every row value). An EMPTY slot is claimed by an atomic compare-and-swap; u32 slots
 * swap key and value in one 64-bit word, u64 slots first swap the value EMPTY -> BUSY, write
 * the key, then publish the value with a release store (readers that meet BUSY wait for it).
 * Slots are never emptied, so the occupied slots of a window are always a prefix of it: a probe
 * ends at the first empty slot. Two inserts of the same key meet in the same slot, since an
 * insert passes a slot only after seeing it hold another key. Then the inputs whose slot is
 * PENDING are collected, sorted by (key, row) into the CSR, and their slots get the flag and
 * the directory index.
 *
 * Updates (insert, erase) keep two invariants, so a probe still ends at the first window with an
 * empty slot: (W) the occupied slots of a window are a prefix of it; (P) a key in window j with
 * home window h has every window h .. j-1 (cyclically) full. No slot is PENDING between calls.
 *
 * Erase removes keys without tombstones. The marked keys (value PENDING: erase repurposes the
 * build's marker, which no slot holds between calls) are removed cluster by cluster, a cluster
 * being a maximal run of full windows plus the non-full window that ends it: by (P) no probe
 * crosses a non-full window, so every key of a cluster has its home inside it and clusters can be
 * rewritten independently (one thread each, no atomics). A cluster is rewritten in place, window
 * by window from its start: the window's live keys are taken out, the window cleared, and each
 * key put in the first window from its home with room (never past the one it came from, so only
 * windows already rewritten are written). That is linear probing's backward-shift deletion
 * (Knuth 6.4, algorithm R) at window granularity and for many deletions at once: the table ends
 * as if the surviving keys had been inserted alone, so lookups stay as fast after any number of
 * insert and erase waves, and no key value or value word is set aside for deleted slots. The
 * probing windows make this cheaper than per-slot backward shift: a cluster at load 0.5 is
 * about one window.
 *
 * The table has ceil(ceil(n / load_factor) / slots per window) windows; the home window is the
 * high bits of a Murmur3 finalizer times the number of windows (a multiply, not a modulo, so
 * any table size works and a load factor of 0.5 costs exactly 16 bytes per u32 key).
 *
 * The papers' hash baseline (RX, Henneberg and Schuhknecht 2023, section 4.1; cgRX section 6) is
 * WarpCore: open addressing with cooperative probing by groups of 8 threads, load factor 0.8,
 * keys inserted one by one, two reserved key values as sentinels. Here no key value is
 * reserved (the sentinels live in the value word), a 32-byte window replaces the group's probe
 * (one sector: the window is read by one thread with two 16-byte loads), and duplicate keys
 * keep every row. cuCollections' static_map (linear probing, 4-thread groups) is the anchor the
 * benchmarks run beside it.
 *
 * Tuned for unique keys, random hit lookups, load factor 0.5 (H200 target: 2^26 u32 keys at
 * 16 bytes per key, one sector per lookup against a ceiling of about 38 G random sectors/s).
 */
#ifndef RDX_HASH_HD_H
#define RDX_HASH_HD_H

#include "keys/keys.h"

#define RDX_HASH_WINDOW_BYTES 32

#define RDX_HASH32_SLOTS 4                       /* slots per window */
#define RDX_HASH32_EMPTY 0xFFFFFFFFFFFFFFFFull   /* an empty slot word */
#define RDX_HASH32_V_EMPTY 0xFFFFFFFFu
#define RDX_HASH32_V_PENDING 0xFFFFFFFEu
#define RDX_HASH32_FLAG 0x80000000u
#define RDX_HASH32_ROW_MAX 0x7FFFFFFFu           /* largest row stored in a slot */
#define RDX_HASH32_DIR_MAX 0x7FFFFFFDu           /* largest directory index */

#define RDX_HASH64_SLOTS 2
#define RDX_HASH64_EMPTY 0xFFFFFFFFFFFFFFFFull
#define RDX_HASH64_BUSY 0xFFFFFFFFFFFFFFFEull
#define RDX_HASH64_PENDING 0xFFFFFFFFFFFFFFFDull
#define RDX_HASH64_FLAG 0x8000000000000000ull
#define RDX_HASH64_ROW_MAX 0x7FFFFFFFFFFFFFFFull
#define RDX_HASH64_DIR_MAX 0x7FFFFFFFFFFFFFFCull

typedef struct rdx_hash_layout {
  int key_bits;          /* 32 or 64 */
  int slots;             /* slots per window: 4 or 2 */
  int64_t n;             /* entries inserted (duplicates included) */
  uint64_t n_windows;    /* 1 .. 2^32 */
} rdx_hash_layout;

/* Size the table for n >= 1 entries at the load factor (0, 0.95]. Returns 0, or -1 when it
 * would need more than 2^32 windows (128 GiB of slots). The slot count is bounded in double
 * before it is converted, so a tiny load factor (1e-300: n / load_factor is inf) is refused
 * instead of overflowing the conversion. */
RDX_HD int rdx_hash_plan(rdx_hash_layout *L, int64_t n, int key_bits, double load_factor) {
  L->key_bits = key_bits;
  L->slots = key_bits == 32 ? RDX_HASH32_SLOTS : RDX_HASH64_SLOTS;
  L->n = n;
  L->n_windows = 0;
  const int64_t most = ((int64_t)1 << 32) * L->slots; /* slots in 2^32 windows */
  if (!((double)n / load_factor < (double)most)) return -1;
  int64_t want = (int64_t)((double)n / load_factor); /* ceil(n / load_factor), at least n + 1 */
  while ((double)want * load_factor < (double)n || want <= n) want++;
  L->n_windows = (uint64_t)((want + L->slots - 1) / L->slots);
  return L->n_windows <= ((uint64_t)1 << 32) ? 0 : -1;
}

/* Murmur3's finalizers: every input bit reaches every output bit. */
RDX_HD uint32_t rdx_hash_mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}
RDX_HD uint64_t rdx_hash_mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

/* Home window: the hash scaled onto [0, n_windows) (n_windows <= 2^32). */
RDX_HD uint64_t rdx_hash_home32(const rdx_hash_layout *L, uint32_t key) {
  return ((uint64_t)rdx_hash_mix32(key) * L->n_windows) >> 32;
}
RDX_HD uint64_t rdx_hash_home64(const rdx_hash_layout *L, uint64_t key) {
  return ((rdx_hash_mix64(key) >> 32) * L->n_windows) >> 32;
}
RDX_HD uint64_t rdx_hash_next(const rdx_hash_layout *L, uint64_t w) {
  return w + 1 == L->n_windows ? 0 : w + 1;
}

/* Two u32 slots, half a window (the GPU reads a window as two halves, one per thread):
 * 1 = q found (value in *v, slot 0 or 1 in *s), -1 = an empty slot ends the probe first,
 * 0 = both slots hold other keys. */
RDX_HD int rdx_hash_half32(uint64_t s0, uint64_t s1, uint32_t q, uint32_t *v, int *s) {
  if ((uint32_t)s0 == RDX_HASH32_V_EMPTY) return -1;
  if ((uint32_t)(s0 >> 32) == q) {
    *v = (uint32_t)s0;
    *s = 0;
    return 1;
  }
  if ((uint32_t)s1 == RDX_HASH32_V_EMPTY) return -1;
  if ((uint32_t)(s1 >> 32) == q) {
    *v = (uint32_t)s1;
    *s = 1;
    return 1;
  }
  return 0;
}

/* One u64 slot {k, v}, half a window: as above. */
RDX_HD int rdx_hash_half64(uint64_t k, uint64_t v, uint64_t q, uint64_t *out) {
  if (v == RDX_HASH64_EMPTY) return -1;
  if (k == q) {
    *out = v;
    return 1;
  }
  return 0;
}

/* One window of u32 slots: 1 = q found (value in *v, slot index in *s), -1 = q is absent (an
 * empty slot ends the probe), 0 = the window is full of other keys: go on. */
RDX_HD int rdx_hash_window32(uint64_t s0, uint64_t s1, uint64_t s2, uint64_t s3, uint32_t q,
                             uint32_t *v, int *s) {
  int r = rdx_hash_half32(s0, s1, q, v, s);
  if (r != 0) return r;
  r = rdx_hash_half32(s2, s3, q, v, s);
  if (r > 0) *s += 2;
  return r;
}

/* One window of u64 slots {k0, v0}, {k1, v1}; as above. */
RDX_HD int rdx_hash_window64(uint64_t k0, uint64_t v0, uint64_t k1, uint64_t v1, uint64_t q,
                             uint64_t *v, int *s) {
  int r = rdx_hash_half64(k0, v0, q, v);
  *s = 0;
  if (r != 0) return r;
  *s = 1;
  return rdx_hash_half64(k1, v1, q, v);
}

/* Find q in a built table: the slot index (value in *v), or -1. Scalar form of the GPU probe. */
RDX_HD int64_t rdx_hash_find32(const uint64_t *table, const rdx_hash_layout *L, uint32_t q, uint32_t *v) {
  uint64_t w = rdx_hash_home32(L, q);
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    const uint64_t *x = table + w * RDX_HASH32_SLOTS;
    int s = 0;
    int r = rdx_hash_window32(x[0], x[1], x[2], x[3], q, v, &s);
    if (r > 0) return (int64_t)(w * RDX_HASH32_SLOTS) + s;
    if (r < 0) return -1;
  }
  return -1;
}

RDX_HD int64_t rdx_hash_find64(const uint64_t *table, const rdx_hash_layout *L, uint64_t q, uint64_t *v) {
  uint64_t w = rdx_hash_home64(L, q);
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    const uint64_t *x = table + w * RDX_HASH64_SLOTS * 2;
    int s = 0;
    int r = rdx_hash_window64(x[0], x[1], x[2], x[3], q, v, &s);
    if (r > 0) return (int64_t)(w * RDX_HASH64_SLOTS) + s;
    if (r < 0) return -1;
  }
  return -1;
}

/* A found value, widened: direct rows below the flag, directory entries above it. */
RDX_HD int rdx_hash_direct32(uint32_t v) { return v <= RDX_HASH32_ROW_MAX; }
RDX_HD int rdx_hash_direct64(uint64_t v) { return v <= RDX_HASH64_ROW_MAX; }

/* The value an insert of `row` starts with: the row itself, or PENDING when it does not fit. */
RDX_HD uint32_t rdx_hash_value32(uint64_t row) {
  return row <= RDX_HASH32_ROW_MAX ? (uint32_t)row : RDX_HASH32_V_PENDING;
}
RDX_HD uint64_t rdx_hash_value64(uint64_t row) {
  return row <= RDX_HASH64_ROW_MAX ? row : RDX_HASH64_PENDING;
}

/* ---- updates: plain slot access, growth and cluster compaction ----
 * These run where no other thread touches the same windows (one thread per cluster, or a phase
 * of its own), so they use plain loads and stores. Slot s is 0 .. n_windows * slots - 1. */

/* The most keys (occupied slots) the table may hold: the load factor's share of its slots, and
 * always fewer than all of them, so some window has an empty slot (probes and clusters end). */
RDX_HD int64_t rdx_hash_limit(const rdx_hash_layout *L, double load_factor) {
  int64_t slots = (int64_t)L->n_windows * L->slots;
  double lim = (double)slots * load_factor;
  int64_t most = slots - 1;
  return lim < (double)most ? (int64_t)lim : most;
}

RDX_HD uint64_t rdx_hash_home(const rdx_hash_layout *L, uint64_t key) {
  return L->key_bits == 32 ? rdx_hash_home32(L, (uint32_t)key) : rdx_hash_home64(L, key);
}
RDX_HD uint64_t rdx_hash_prev(const rdx_hash_layout *L, uint64_t w) {
  return w == 0 ? L->n_windows - 1 : w - 1;
}
/* Slot s's key and value, the value widened to u64 words' meaning kept per width (u32 values
 * stay 32-bit numbers: compare them with the RDX_HASH32_V_* constants). */
RDX_HD void rdx_hash_get(const uint64_t *table, const rdx_hash_layout *L, uint64_t s, uint64_t *key,
                         uint64_t *val) {
  if (L->key_bits == 32) {
    uint64_t x = table[s];
    *key = x >> 32;
    *val = (uint32_t)x;
  } else {
    *key = table[2 * s];
    *val = table[2 * s + 1];
  }
}
RDX_HD void rdx_hash_set(uint64_t *table, const rdx_hash_layout *L, uint64_t s, uint64_t key, uint64_t val) {
  if (L->key_bits == 32) {
    table[s] = key << 32 | (uint32_t)val;
  } else {
    table[2 * s] = key;
    table[2 * s + 1] = val;
  }
}
RDX_HD void rdx_hash_clear(uint64_t *table, const rdx_hash_layout *L, uint64_t s) {
  if (L->key_bits == 32) {
    table[s] = RDX_HASH32_EMPTY;
  } else {
    table[2 * s] = RDX_HASH64_EMPTY;
    table[2 * s + 1] = RDX_HASH64_EMPTY;
  }
}
RDX_HD int rdx_hash_is_empty(const rdx_hash_layout *L, uint64_t val) {
  return L->key_bits == 32 ? val == RDX_HASH32_V_EMPTY : val == RDX_HASH64_EMPTY;
}
/* PENDING: during an erase (and an insert's undo), the mark of a key to be removed. */
RDX_HD int rdx_hash_is_mark(const rdx_hash_layout *L, uint64_t val) {
  return L->key_bits == 32 ? val == RDX_HASH32_V_PENDING : val == RDX_HASH64_PENDING;
}
RDX_HD uint64_t rdx_hash_mark_value(const rdx_hash_layout *L) {
  return L->key_bits == 32 ? RDX_HASH32_V_PENDING : RDX_HASH64_PENDING;
}
/* Window w is full when its last slot is occupied (W). */
RDX_HD int rdx_hash_full(const uint64_t *table, const rdx_hash_layout *L, uint64_t w) {
  uint64_t k, v;
  rdx_hash_get(table, L, w * L->slots + L->slots - 1, &k, &v);
  return !rdx_hash_is_empty(L, v);
}

/* The first window of the cluster holding window w: back while the window before is full. */
RDX_HD uint64_t rdx_hash_cluster_start(const uint64_t *table, const rdx_hash_layout *L, uint64_t w) {
  for (uint64_t p = 0; p + 1 < L->n_windows; p++) {
    uint64_t b = rdx_hash_prev(L, w);
    if (!rdx_hash_full(table, L, b)) return w;
    w = b;
  }
  return w;
}

/* Whether marked slot s is the first marked slot of its cluster: its owner, the one thread that
 * compacts the cluster. */
RDX_HD int rdx_hash_owns_cluster(const uint64_t *table, const rdx_hash_layout *L, uint64_t s) {
  uint64_t w = s / (uint64_t)L->slots;
  uint64_t x = rdx_hash_cluster_start(table, L, w) * (uint64_t)L->slots;
  uint64_t total = L->n_windows * (uint64_t)L->slots;
  for (; x != s; x = x + 1 == total ? 0 : x + 1) {
    uint64_t k, v;
    rdx_hash_get(table, L, x, &k, &v);
    if (rdx_hash_is_mark(L, v)) return 0;
  }
  return 1;
}

/* Put (key, val) in the first slot with room from the key's home window on (plain stores). */
RDX_HD int rdx_hash_place(uint64_t *table, const rdx_hash_layout *L, uint64_t key, uint64_t val) {
  uint64_t w = rdx_hash_home(L, key);
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    for (int i = 0; i < L->slots; i++) {
      uint64_t s = w * (uint64_t)L->slots + (uint64_t)i, k, v;
      rdx_hash_get(table, L, s, &k, &v);
      if (rdx_hash_is_empty(L, v)) {
        rdx_hash_set(table, L, s, key, val);
        return 1;
      }
    }
  }
  return 0;
}

/* Remove the marked keys of the cluster that starts at window c, rewriting it in place (see the
 * top of this file). Returns the keys removed. */
RDX_HD int64_t rdx_hash_compact_cluster(uint64_t *table, const rdx_hash_layout *L, uint64_t c) {
  int64_t removed = 0;
  uint64_t w = c;
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    uint64_t k[RDX_HASH32_SLOTS], v[RDX_HASH32_SLOTS];
    int n = 0;
    for (int i = 0; i < L->slots; i++) {
      uint64_t s = w * (uint64_t)L->slots + (uint64_t)i;
      rdx_hash_get(table, L, s, &k[n], &v[n]);
      if (rdx_hash_is_empty(L, v[n])) break;
      n++;
    }
    /* only the occupied slots are cleared: the last slot of the cluster's end window is never
     * written, so the owners of neighbouring clusters may read it (rdx_hash_cluster_start) */
    for (int i = 0; i < n; i++) rdx_hash_clear(table, L, w * (uint64_t)L->slots + (uint64_t)i);
    for (int i = 0; i < n; i++) {
      if (rdx_hash_is_mark(L, v[i])) {
        removed++;
        continue;
      }
      rdx_hash_place(table, L, k[i], v[i]); /* lands in a window from c to w */
    }
    if (n < L->slots) break; /* w was not full: the cluster ends here */
  }
  return removed;
}

/* ---- the insert protocol, written once over the backend's atomics ----
 *
 * The including file defines, before including this header with RDX_HASH_INSERT defined:
 *   RDX_HASH_LOAD(p)            relaxed 64-bit load      (u32 slots)
 *   RDX_HASH_LOAD_ACQ(p)        acquire 64-bit load      (u64 slot values)
 *   RDX_HASH_CAS(p, expect, want) 64-bit compare-and-swap returning the old value
 *   RDX_HASH_STORE(p, v)        relaxed 64-bit store     (u64 slot keys)
 *   RDX_HASH_STORE_REL(p, v)    release 64-bit store     (u64 slot values)
 *   RDX_HASH_MAX(p, v)          atomic 64-bit maximum
 *   RDX_HASH_PAUSE()            a short wait while another insert writes its key
 * and may define RDX_HASH_INSERT_FN (default RDX_HD), e.g. device-only for CUDA.
 * rdx_hash_put32/64 insert a key with its value word (the build, an insert batch, a rehash);
 * rdx_hash_insert32/64 are the build's form, from a row. */
#ifdef RDX_HASH_INSERT
#ifndef RDX_HASH_INSERT_FN
#define RDX_HASH_INSERT_FN RDX_HD
#endif

/* Put key with value val: 1 = placed in an empty slot, 2 = the key holds a slot already (with
 * mark_dup its value is raised to PENDING, as the build does; without, nothing changes), 0 = no
 * room. */
RDX_HASH_INSERT_FN int rdx_hash_put32(uint64_t *table, const rdx_hash_layout *L, uint32_t key, uint32_t val,
                                      int mark_dup) {
  uint64_t mine = (uint64_t)key << 32 | val, dup = (uint64_t)key << 32 | RDX_HASH32_V_PENDING;
  uint64_t w = rdx_hash_home32(L, key);
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    for (int i = 0; i < RDX_HASH32_SLOTS; i++) {
      uint64_t *slot = table + w * RDX_HASH32_SLOTS + i;
      uint64_t cur = RDX_HASH_LOAD(slot);
      if ((uint32_t)cur == RDX_HASH32_V_EMPTY) {
        uint64_t old = RDX_HASH_CAS(slot, RDX_HASH32_EMPTY, mine);
        if (old == RDX_HASH32_EMPTY) return 1;
        cur = old; /* someone else claimed it: maybe with our key */
      }
      if ((uint32_t)(cur >> 32) == key) {
        if (mark_dup && (uint32_t)cur != RDX_HASH32_V_PENDING) RDX_HASH_MAX(slot, dup);
        return 2;
      }
    }
  }
  return 0;
}

RDX_HASH_INSERT_FN int rdx_hash_put64(uint64_t *table, const rdx_hash_layout *L, uint64_t key, uint64_t val,
                                      int mark_dup) {
  uint64_t w = rdx_hash_home64(L, key);
  for (uint64_t p = 0; p < L->n_windows; p++, w = rdx_hash_next(L, w)) {
    for (int i = 0; i < RDX_HASH64_SLOTS; i++) {
      uint64_t *slot = table + (w * RDX_HASH64_SLOTS + i) * 2; /* slot[0] key, slot[1] value */
      uint64_t cur = RDX_HASH_LOAD_ACQ(slot + 1);
      if (cur == RDX_HASH64_EMPTY) {
        uint64_t old = RDX_HASH_CAS(slot + 1, RDX_HASH64_EMPTY, RDX_HASH64_BUSY);
        if (old == RDX_HASH64_EMPTY) {
          RDX_HASH_STORE(slot, key);
          RDX_HASH_STORE_REL(slot + 1, val);
          return 1;
        }
        cur = old;
      }
      while (cur == RDX_HASH64_BUSY) { /* its key is being written: wait for the value */
        RDX_HASH_PAUSE();
        cur = RDX_HASH_LOAD_ACQ(slot + 1);
      }
      if (RDX_HASH_LOAD(slot) == key) {
        if (mark_dup && cur != RDX_HASH64_PENDING) RDX_HASH_MAX(slot + 1, RDX_HASH64_PENDING);
        return 2;
      }
    }
  }
  return 0;
}

/* The build's insert of (key, row): 1 when placed or met, 0 when the table had no room (cannot
 * happen at load factors <= 0.95, checked anyway); sets *pending when the key needs the CSR. */
RDX_HASH_INSERT_FN int rdx_hash_insert32(uint64_t *table, const rdx_hash_layout *L, uint32_t key, uint64_t row,
                                         int *pending) {
  uint32_t val = rdx_hash_value32(row);
  int r = rdx_hash_put32(table, L, key, val, 1);
  if (val == RDX_HASH32_V_PENDING || r == 2) *pending = 1;
  return r != 0;
}
RDX_HASH_INSERT_FN int rdx_hash_insert64(uint64_t *table, const rdx_hash_layout *L, uint64_t key, uint64_t row,
                                         int *pending) {
  uint64_t val = rdx_hash_value64(row);
  int r = rdx_hash_put64(table, L, key, val, 1);
  if (val == RDX_HASH64_PENDING || r == 2) *pending = 1;
  return r != 0;
}

#endif /* RDX_HASH_INSERT */

#endif /* RDX_HASH_HD_H */
