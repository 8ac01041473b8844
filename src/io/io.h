/*
 * io.h: internals of the io module: .npy parsing from memory (for the reader and the fuzzer)
 * and the machinery of the data generators behind `raydex gen`, the tests and the benchmarks
 * (the generators themselves and their byte estimates: bench_api.h, which the tools use).
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
