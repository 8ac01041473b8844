/*
 * io.h: internals of the io module: .npy parsing from memory (for the reader and the fuzzer)
 * and the data generators behind `raydex gen`, the tests and the benchmarks.
 */
#ifndef RDX_IO_H
#define RDX_IO_H

#include "core/core.h"

#ifdef __cplusplus
extern "C" {
#endif

rdx_status rdx_npy_parse(rdx_context *ctx, const char *name, const void *buf, size_t len,
                         rdx_array *out, int *ndim);

/* ---- random numbers: xoshiro256** seeded by splitmix64 (Blackman and Vigna) ---- */
typedef struct rdx_rng {
  uint64_t s[4];
} rdx_rng;
void rdx_rng_seed(rdx_rng *r, uint64_t seed);
uint64_t rdx_rng_next(rdx_rng *r);
/* Uniform in [0, bound), unbiased (Lemire's multiply-shift with rejection); bound >= 1. */
uint64_t rdx_rng_below(rdx_rng *r, uint64_t bound);
/* Uniform in [0, 1). */
double rdx_rng_double(rdx_rng *r);
/* The generator of chunk `chunk` of a batch made from `seed`: batches are made in chunks on the
 * thread pool, each chunk from its own generator, so they depend on the seed only. */
void rdx_rng_seed_chunk(rdx_rng *r, uint64_t seed, int64_t chunk);

/* ---- a keyed pseudo-random permutation (the key generator's; exposed for its tests) ----
 * A bijection of [0, last] (last + 1 values, up to 2^64) chosen by a seed: a Feistel network on
 * the k-bit numbers, 2^k the smallest power of two above last, and cycle-walking (Black and
 * Rogaway 2002): a result past last is permuted again until it lands in [0, last]. A Feistel
 * network is a bijection whatever its round function; with four rounds or more of pseudo-random
 * round functions it is a pseudo-random permutation (Luby and Rackoff 1988), so the image of any
 * range is a pseudo-random subset in pseudo-random order. On a few bits it needs more rounds to
 * look random: with 6, where a value goes is visibly non-uniform over the seeds on domains of 5
 * to 17 values (chi-square 74 sigma off at 5), with 24 it is not, so domains of up to 2^8 values
 * get 24 rounds and larger ones 6. The walk averages under two steps since 2^k <= 2 (last + 1).
 * O(1) memory and time per value. */
#define RDX_PERM_ROUNDS 24
typedef struct rdx_perm {
  uint64_t last;                   /* the largest value permuted: the domain is [0, last] */
  int bits;                        /* k, 0..64: last < 2^k, and 2^(k-1) <= last when k > 0 */
  int rounds;                      /* 6, or RDX_PERM_ROUNDS when k <= 8 */
  uint64_t keys[RDX_PERM_ROUNDS];  /* round keys, from the seed */
} rdx_perm;
void rdx_perm_init(rdx_perm *p, uint64_t last, uint64_t seed);
uint64_t rdx_perm_at(const rdx_perm *p, uint64_t x); /* x <= last; the result is <= last */

/* Zipf over ranks 1..n with exponent s >= 0 (s = 0 is uniform), by rejection-inversion
 * (Hoermann and Derflinger 1996): exact for every s, O(1) per draw, no table. */
typedef struct rdx_zipf {
  uint64_t n;
  double s, h_x1, h_n, s_const;
} rdx_zipf;
void rdx_zipf_init(rdx_zipf *z, uint64_t n, double s);
uint64_t rdx_zipf_draw(const rdx_zipf *z, rdx_rng *r); /* in [1, n] */

/* ---- key sets ---- */
typedef enum rdx_key_dist {
  RDX_DIST_DENSE = 1,   /* 0 .. n-1 */
  RDX_DIST_SPARSE = 2,  /* cgRX's uniformity u: 0 .. d-1 dense (d = (1-u) n) plus u n distinct keys
                           uniform in [d, 2^w - 1] */
  RDX_DIST_UNIFORM = 3  /* n distinct keys uniform over the whole width (sparse with u = 100%) */
} rdx_key_dist;

/* n distinct keys of dtype (u32/u64) in random order, malloc'd host array (free with
 * rdx_npy_free). uniformity in [0,1] is used by SPARSE only. Row ids are implied: a key's position
 * is its row id. The same seed gives the same keys whatever the thread count; no scratch beyond
 * the output (see rdx_gen_keys_bytes). */
rdx_status rdx_gen_keys(rdx_context *ctx, int64_t n, rdx_dtype dtype, rdx_key_dist dist,
                        double uniformity, uint64_t seed, rdx_array *out);

typedef enum rdx_miss_kind {
  RDX_MISS_INSIDE = 1,  /* absent keys between the smallest and largest key (where possible) */
  RDX_MISS_OUTSIDE = 2  /* keys above the largest (or below the smallest) key */
} rdx_miss_kind;

/* m lookups into keys: each a hit with probability hit_ratio, picking a key by Zipf(zipf) over
 * key positions (0 = uniform), else a miss of the given kind. */
rdx_status rdx_gen_lookups(rdx_context *ctx, rdx_array keys, int64_t m, double hit_ratio,
                           rdx_miss_kind miss, double zipf, uint64_t seed, rdx_array *out);

/* m ranges [lo, lo + width - 1] (clamped at the maximum) with lo a key of the set picked
 * uniformly; an (m, 2) array. */
rdx_status rdx_gen_ranges(rdx_context *ctx, rdx_array keys, int64_t m, uint64_t width,
                          uint64_t seed, rdx_array *out);

/* ---- point sets and spatial query batches (gen_points.c) ---- */
typedef enum rdx_point_dist {
  RDX_PDIST_UNIFORM = 1,    /* uniform in [0, 1)^2 */
  RDX_PDIST_CLUSTERED = 2,  /* 64 Gaussian clusters of varied spread in [0, 1)^2, 10% background */
  RDX_PDIST_TAXI = 3        /* taxi-pickup-like: Zipf-weighted hot spots in an NYC-sized box in feet
                               (EPSG:2263-like), street lines, exact duplicates at taxi stands */
} rdx_point_dist;

/* n points as an (n, 2) f32 or f64 host array (malloc'd; free with rdx_npy_free), reproducible
 * from the seed whatever the thread count. */
rdx_status rdx_gen_points(rdx_context *ctx, int64_t n, rdx_point_dist dist, rdx_dtype dtype, uint64_t seed,
                          rdx_array *out);

/* The box a distribution's points lie in: xmin, ymin, xmax, ymax. */
void rdx_gen_points_box(rdx_point_dist dist, double box[4]);

/* m queries over a host (n, 2) point array, in its dtype. type 0 match (m, 2): half existing
 * points, half anywhere in their box; 1 window (m, 4): squares of side `size` around existing
 * points (80%) or anywhere; 2 within (m, 3): circles of radius `size`, centred likewise; 3 kNN
 * (m, 2): near existing points (80%) or anywhere. */
rdx_status rdx_gen_point_queries(rdx_context *ctx, rdx_array points, int type, int64_t m, double size, uint64_t seed,
                                 rdx_array *out);

/* ---- memory: what a generator needs, known before it runs ----
 *
 * Each rdx_gen_*_bytes sets *bytes to the most host bytes the generator holds at once for that
 * request (its malloc'd output plus its scratch; the inputs the caller holds are not counted),
 * computed without allocating, so a caller can refuse a request that cannot fit before running
 * it. They refuse what the generator refuses for its sizes, with the same status and sentence:
 * a negative count, or one whose bytes do not fit in size_t (RDX_ERR_INVALID_ARGUMENT, the
 * sentence naming the count and the byte count). They read only counts and dtypes, so a caller
 * can ask from a .npy header before reading the data, and need no context: with ctx NULL they
 * return the status alone. */
rdx_status rdx_gen_keys_bytes(rdx_context *ctx, int64_t n, rdx_dtype dtype, size_t *bytes);
/* Inside misses need a sorted copy of the keys (n_keys elements of dtype) and a guide table of
 * at most n_keys / 64 + 2 entries of 8 bytes; it is counted whenever a miss may be drawn from a
 * non-empty key set (m > 0, hit_ratio < 1), since misses outside fall back to inside ones when
 * the keys reach both ends of the width. */
rdx_status rdx_gen_lookups_bytes(rdx_context *ctx, int64_t n_keys, rdx_dtype dtype, int64_t m, double hit_ratio,
                                 rdx_miss_kind miss, size_t *bytes);
rdx_status rdx_gen_ranges_bytes(rdx_context *ctx, rdx_dtype dtype, int64_t m, size_t *bytes);
rdx_status rdx_gen_points_bytes(rdx_context *ctx, int64_t n, rdx_dtype dtype, size_t *bytes);
rdx_status rdx_gen_point_queries_bytes(rdx_context *ctx, rdx_dtype dtype, int type, int64_t m, size_t *bytes);

/* The generators' output: count rows of `columns` elements of dtype, malloc'd (rdx_npy_free
 * frees it). rdx_gen_out_bytes computes its bytes with the overflow-checked helpers and refuses,
 * as fn, a negative count or one whose bytes do not fit in size_t; rdx_gen_alloc also allocates
 * (RDX_ERR_HOST_OUT_OF_MEMORY when malloc fails) and leaves *out empty on failure. */
rdx_status rdx_gen_out_bytes(rdx_context *ctx, const char *fn, const char *what, int64_t count, int columns,
                             rdx_dtype dtype, size_t *bytes);
rdx_status rdx_gen_alloc(rdx_context *ctx, const char *fn, const char *what, int64_t count, int columns,
                         rdx_dtype dtype, rdx_array *out);

#ifdef __cplusplus
}
#endif
#endif /* RDX_IO_H */
