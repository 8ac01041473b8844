// merge_probe.cu: the quadtree update's merge (src/spatial/update_qt.cu) alone, against the copy
// of the same bytes, on a pool shaped like the update benchmark's (16.5M f32 points, u32 codes in
// hot spots; a batch of 1% or 10% of the ids moved into new hot spots). Each variant's output is
// compared with the production kernels' output. Prints CSV:
//   date,device,n,moved_pct,variant,ms,gb_per_s,check
// Build (after a CUDA build of raydex in build-gpu):
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Isrc -Iinclude bench/merge_probe.cu \
//        build-gpu/libraydex.a -o build-gpu/merge_probe
#include "spatial/update_qt.cu"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* codes: a share `hot` of them in `spots` ranges of 2^width codes around seeded centres */
__global__ void gen_codes(uint32_t *k, uint32_t *v, int64_t n, uint64_t seed, double hot, int spots, int width) {
  SP_FOR(i, n) {
    uint64_t r = mix(seed * 1000003 + (uint64_t)i);
    uint32_t c;
    if ((double)(r & 0xFFFF) / 65536.0 < hot) {
      uint64_t h = (r >> 16) % (uint64_t)spots;
      uint32_t centre = (uint32_t)mix(seed * 77 + h);
      c = centre + (uint32_t)(mix(r) & ((1u << width) - 1));
    } else {
      c = (uint32_t)(r >> 32);
    }
    k[i] = c;
    if (v) v[i] = (uint32_t)i;
  }
}
__global__ void gen_rand(uint32_t *k, uint32_t *v, int64_t n, uint64_t seed) {
  SP_FOR(i, n) k[i] = (uint32_t)mix(seed * 7919 + (uint64_t)i), v[i] = (uint32_t)i;
}
__global__ void fill_pool(float *x, float *y, uint64_t *id, const uint32_t *perm, int64_t n) {
  SP_FOR(i, n) {
    x[i] = (float)(mix(3 * i) & 0xFFFFFF), y[i] = (float)(mix(3 * i + 1) & 0xFFFFFF);
    id[i] = perm[i];
  }
}
__global__ void fill_batch(float *xy, uint64_t *ids, const uint32_t *perm, int64_t m, uint32_t *claim) {
  SP_FOR(i, m) {
    xy[2 * i] = (float)(mix(5 * i) & 0xFFFFFF), xy[2 * i + 1] = (float)(mix(5 * i + 1) & 0xFFFFFF);
    ids[i] = perm[i];
    atomicOr(&claim[perm[i] >> 5], 1u << (perm[i] & 31));
  }
}
__global__ void diff_kernel(const uint32_t *a, const uint32_t *b, int64_t words, unsigned long long *bad) {
  SP_FOR(i, words) if (a[i] != b[i]) atomicAdd(bad, 1ull);
}
/* the ceiling: every slot read and written once, same arrays */
__global__ void copy_kernel(const float *ox, const float *oy, const uint64_t *oid, const uint32_t *ok, int64_t n, float *x,
                            float *y, uint64_t *id, uint32_t *k) {
  SP_FOR(i, n) x[i] = ox[i], y[i] = oy[i], id[i] = oid[i], k[i] = ok[i];
}


/* ---- variant: persistent blocks that prefetch the next tile into shared memory (cp.async)
 * while they merge the current one ---- */
#include <cuda_pipeline.h>

template <typename T, typename K>
struct tile_buf {
  uint64_t id[TILE];
  T x[TILE], y[TILE];
  K key[TILE];
};

template <typename T, typename K>
__device__ __forceinline__ void load_tile(tile_buf<T, K> &b, const T *ox, const T *oy, const uint64_t *oid, const K *okey,
                                          int64_t n_old, int64_t t) {
  const int64_t a = t * TILE;
  if (a + TILE <= n_old) {
    for (int c = threadIdx.x; c < TILE * 8 / 16; c += TB) __pipeline_memcpy_async((char *)b.id + 16 * c, (const char *)(oid + a) + 16 * c, 16);
    for (int c = threadIdx.x; c < TILE * (int)sizeof(T) / 16; c += TB) {
      __pipeline_memcpy_async((char *)b.x + 16 * c, (const char *)(ox + a) + 16 * c, 16);
      __pipeline_memcpy_async((char *)b.y + 16 * c, (const char *)(oy + a) + 16 * c, 16);
    }
    for (int c = threadIdx.x; c < TILE * (int)sizeof(K) / 16; c += TB)
      __pipeline_memcpy_async((char *)b.key + 16 * c, (const char *)(okey + a) + 16 * c, 16);
  } else {
    for (int i = threadIdx.x; i < TILE; i += TB)
      if (a + i < n_old) b.id[i] = oid[a + i], b.x[i] = ox[a + i], b.y[i] = oy[a + i], b.key[i] = okey[a + i];
  }
  __pipeline_commit();
}

__global__ void pipe_init_kernel(tile_state ts, int ntiles, unsigned *ticket) {
  ts.InitializeStatus(ntiles);
  if (blockIdx.x == 0 && threadIdx.x == 0) *ticket = 0;
}

template <typename T, typename K>
__global__ void __launch_bounds__(TB, 2) merge_pipe_kernel(const T *ox, const T *oy, const uint64_t *oid, const K *okey,
                                                         int64_t n_old, int drop, const uint32_t *claim, nbatch<T, K> B,
                                                         const int64_t *jlo, tile_state ts, int ntiles, unsigned *ticket,
                                                         int64_t *surv, int64_t *sbase, uint16_t *sp, npool<T, K> P) {
  typedef cub::BlockScan<unsigned long long, TB> scan_t;
  typedef cub::TilePrefixCallbackOp<long long, ::cuda::std::plus<long long>, tile_state> prefix_t;
  __shared__ union {
    typename scan_t::TempStorage scan;
    typename prefix_t::TempStorage prefix;
  } tmp;
  __shared__ K snk[SNK];
  __shared__ uint16_t ssp[TILE];
  __shared__ long long s_base;
  __shared__ int s_next;
  extern __shared__ __align__(16) unsigned char dyn[];
  tile_buf<T, K> *buf = (tile_buf<T, K> *)dyn;
  if (threadIdx.x == 0) s_next = (int)atomicAdd(ticket, 1u);
  __syncthreads();
  int t = s_next, cur = 0;
  if (t >= ntiles) return;
  load_tile(buf[0], ox, oy, oid, okey, n_old, t);
  for (;;) {
    __syncthreads();
    if (threadIdx.x == 0) s_next = (int)atomicAdd(ticket, 1u);
    __syncthreads();
    const int tn = s_next;
    if (tn < ntiles) {
      load_tile(buf[cur ^ 1], ox, oy, oid, okey, n_old, tn);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
    const tile_buf<T, K> &b = buf[cur];
    const int64_t j0 = jlo[t], kn = jlo[t + 1] - j0, a = (int64_t)t * TILE;
    const int size = n_old - a < TILE ? (int)(n_old - a) : TILE;
    const int shared = kn <= SNK;
    if (shared)
      for (int64_t q = threadIdx.x; q < kn; q += TB) snk[q] = B.nk[j0 + q];
    unsigned long long flags = 0, pre, all;
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int i = q * TB + threadIdx.x;
      flags |= (unsigned long long)(i < size && !(drop && bit_get(claim, b.id[i]))) << (16 * q);
    }
    scan_t(tmp.scan).ExclusiveSum(flags, pre, all);
    __syncthreads();
    int run = 0;
    unsigned v[4];
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const int i = q * TB + threadIdx.x;
      v[q] = (unsigned)(run + (int)((pre >> (16 * q)) & 0xFFFF)) | ((flags >> (16 * q)) & 1 ? 0u : SP_GONE);
      ssp[i] = (uint16_t)v[q];
      if (!shared && i < size) sp[a + i] = (uint16_t)v[q];
      run += (int)((all >> (16 * q)) & 0xFFFF);
    }
    if (t == 0) {
      if (threadIdx.x == 0) ts.SetInclusive(0, run), s_base = 0;
    } else if (threadIdx.x < 32) {
      prefix_t op(ts, tmp.prefix, ::cuda::std::plus<long long>(), t);
      long long e = op(run);
      if (threadIdx.x == 0) s_base = e;
    }
    __syncthreads();
    const int64_t base = s_base;
    if (threadIdx.x == 0) surv[t] = run, sbase[t] = base;
#pragma unroll
    for (int q = 0; q < 4; q++) {
      if (v[q] & SP_GONE) continue;
      const int i = q * TB + threadIdx.x;
      const K k = b.key[i];
      int64_t below = shared ? j0 + lower(snk, 0, kn, (uint64_t)k) : lower(B.nk, j0, j0 + kn, (uint64_t)k);
      P.put(base + v[q] + below, b.x[i], b.y[i], b.id[i], k);
    }
    if (shared)
      for (int64_t q = threadIdx.x; q < kn; q += TB) {
        int64_t p = upper(b.key, 0, size, (uint64_t)snk[q]);
        B.put(P, j0 + q + base + (p < size ? (int64_t)(ssp[p] & ~SP_GONE) : run), j0 + q);
      }
    __syncthreads();
    if (tn >= ntiles) break;
    t = tn, cur ^= 1;
  }
}

/* ---- variant: one block per tile as in production, the tile's slots fetched into shared
 * memory by cp.async at the block's start (no registers held by loads in flight, so three
 * blocks fit an SM) ---- */
template <typename T, typename K, int MINB>
__global__ void __launch_bounds__(TB, MINB) merge_async_kernel(const T *ox, const T *oy, const uint64_t *oid, const K *okey,
                                                            int64_t n_old, int drop, const uint32_t *claim, nbatch<T, K> B,
                                                            const int64_t *jlo, tile_state ts, int64_t *surv,
                                                            int64_t *sbase, uint16_t *sp, npool<T, K> P) {
  typedef cub::BlockScan<unsigned long long, TB> scan_t;
  typedef cub::TilePrefixCallbackOp<long long, ::cuda::std::plus<long long>, tile_state> prefix_t;
  __shared__ union {
    typename scan_t::TempStorage scan;
    typename prefix_t::TempStorage prefix;
  } tmp;
  __shared__ K snk[SNK];
  __shared__ uint16_t ssp[TILE];
  __shared__ long long s_base;
  extern __shared__ __align__(16) unsigned char dyn[];
  tile_buf<T, K> &b = *(tile_buf<T, K> *)dyn;
  const int t = (int)blockIdx.x;
  load_tile(b, ox, oy, oid, okey, n_old, t);
  const int64_t j0 = jlo[t], kn = jlo[t + 1] - j0, a = (int64_t)t * TILE;
  const int size = n_old - a < TILE ? (int)(n_old - a) : TILE;
  const int shared = kn <= SNK;
  if (shared)
    for (int64_t q = threadIdx.x; q < kn; q += TB) snk[q] = B.nk[j0 + q];
  __pipeline_wait_prior(0);
  __syncthreads();
  unsigned long long flags = 0, pre, all;
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const int i = q * TB + threadIdx.x;
    flags |= (unsigned long long)(i < size && !(drop && bit_get(claim, b.id[i]))) << (16 * q);
  }
  scan_t(tmp.scan).ExclusiveSum(flags, pre, all);
  __syncthreads();
  int run = 0;
  unsigned v[4];
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const int i = q * TB + threadIdx.x;
    v[q] = (unsigned)(run + (int)((pre >> (16 * q)) & 0xFFFF)) | ((flags >> (16 * q)) & 1 ? 0u : SP_GONE);
    ssp[i] = (uint16_t)v[q];
    if (!shared && i < size) sp[a + i] = (uint16_t)v[q];
    run += (int)((all >> (16 * q)) & 0xFFFF);
  }
  if (t == 0) {
    if (threadIdx.x == 0) ts.SetInclusive(0, run), s_base = 0;
  } else if (threadIdx.x < 32) {
    prefix_t op(ts, tmp.prefix, ::cuda::std::plus<long long>(), t);
    long long e = op(run);
    if (threadIdx.x == 0) s_base = e;
  }
  __syncthreads();
  const int64_t base = s_base;
  if (threadIdx.x == 0) surv[t] = run, sbase[t] = base;
#pragma unroll
  for (int q = 0; q < 4; q++) {
    if (v[q] & SP_GONE) continue;
    const int i = q * TB + threadIdx.x;
    const K k = b.key[i];
    int64_t below = shared ? j0 + lower(snk, 0, kn, (uint64_t)k) : lower(B.nk, j0, j0 + kn, (uint64_t)k);
    P.put(base + v[q] + below, b.x[i], b.y[i], b.id[i], k);
  }
  if (shared)
    for (int64_t q = threadIdx.x; q < kn; q += TB) {
      int64_t p = upper(b.key, 0, size, (uint64_t)snk[q]);
      B.put(P, j0 + q + base + (p < size ? (int64_t)(ssp[p] & ~SP_GONE) : run), j0 + q);
    }
}

int main(int argc, char **argv) {
  const int64_t n = argc > 1 ? atoll(argv[1]) : 16500000;
  const int reps = getenv("PROBE_REPS") ? atoi(getenv("PROBE_REPS")) : 9;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  char date[32];
  time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  printf("date,device,n,moved_pct,variant,ms,gb_per_s,check\n");
  cudaStream_t s = 0;
  typedef float T;
  typedef uint32_t K;
  /* the old pool: sorted codes, random ids */
  K *okey, *k2;
  uint32_t *v1, *v2, *perm, *bperm;
  T *ox, *oy;
  uint64_t *oid;
  CK(cudaMalloc(&okey, n * 4));
  CK(cudaMalloc(&k2, n * 4));
  CK(cudaMalloc(&v1, n * 4));
  CK(cudaMalloc(&v2, n * 4));
  CK(cudaMalloc(&perm, n * 4));
  CK(cudaMalloc(&bperm, n * 4));
  CK(cudaMalloc(&ox, n * 4));
  CK(cudaMalloc(&oy, n * 4));
  CK(cudaMalloc(&oid, n * 8));
  void *tmp = nullptr;
  size_t tb = 0, tb2 = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, tb, okey, k2, v1, v2, n);
  CK(cudaMalloc(&tmp, tb));
  gen_codes<<<4096, 256>>>(k2, nullptr, n, 1, 0.8, 64, 22);
  cub::DeviceRadixSort::SortKeys(nullptr, tb2, k2, okey, n);
  CK(tb2 <= tb ? cudaSuccess : cudaErrorMemoryAllocation);
  CK(cub::DeviceRadixSort::SortKeys(tmp, tb2, k2, okey, n));
  gen_rand<<<4096, 256>>>(k2, v1, n, 2);
  CK(cub::DeviceRadixSort::SortPairs(tmp, tb, k2, (K *)v2, v1, perm, n)); /* perm: ids */
  fill_pool<<<4096, 256>>>(ox, oy, oid, perm, n);
  gen_rand<<<4096, 256>>>(k2, v1, n, 3);
  CK(cub::DeviceRadixSort::SortPairs(tmp, tb, k2, (K *)v2, v1, bperm, n)); /* bperm: moved ids */
  CK(cudaDeviceSynchronize());

  const double pcts[] = {1, 10};
  for (double pct : pcts) {
    const int64_t m = (int64_t)(n * pct / 100);
    const int64_t n_new = n; /* moves */
    K *nk, *nk2;
    uint32_t *nrow, *nrow2, *claim;
    T *bxy;
    uint64_t *bids;
    CK(cudaMalloc(&nk, m * 4));
    CK(cudaMalloc(&nk2, m * 4));
    CK(cudaMalloc(&nrow, m * 4));
    CK(cudaMalloc(&nrow2, m * 4));
    CK(cudaMalloc(&bxy, m * 8));
    CK(cudaMalloc(&bids, m * 8));
    const int64_t cw = n / 32 + 1;
    CK(cudaMalloc(&claim, cw * 4));
    CK(cudaMemset(claim, 0, cw * 4));
    gen_codes<<<4096, 256>>>(nk2, nrow2, m, 11 + (uint64_t)pct, 0.8, 8, 20);
    CK(cub::DeviceRadixSort::SortPairs(tmp, tb, nk2, nk, nrow2, nrow, m));
    fill_batch<<<4096, 256>>>(bxy, bids, bperm, m, claim);
    /* outputs: one per variant */
    T *x[7], *y[7];
    uint64_t *id[7];
    K *key[7];
    for (int v = 0; v < 7; v++) {
      CK(cudaMalloc(&x[v], (n + m) * 4));
      CK(cudaMalloc(&y[v], (n + m) * 4));
      CK(cudaMalloc(&id[v], (n + m) * 8));
      CK(cudaMalloc(&key[v], (n + m) * 4));
    }
    const int64_t ntiles = (n + TILE - 1) / TILE;
    int64_t *surv, *sbase, *jlo;
    uint16_t *sp;
    qtot *tot;
    void *ts_mem;
    size_t ts_bytes = 0;
    tile_state ts;
    CK(cudaMalloc(&surv, ntiles * 8));
    CK(cudaMalloc(&sbase, ntiles * 8));
    CK(cudaMalloc(&jlo, (ntiles + 1) * 8));
    CK(cudaMalloc(&sp, ntiles * TILE * 2));
    CK(cudaMalloc(&tot, sizeof(qtot)));
    CK(cudaMemset(tot, 0, sizeof(qtot)));
    CK(tile_state::AllocationSize((int)ntiles, ts_bytes));
    CK(cudaMalloc(&ts_mem, ts_bytes));
    CK(ts.Init((int)ntiles, ts_mem, ts_bytes));
    const nbatch<T, K> B = {nk, nrow, bxy, bids, 1, 0};
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const char *names[] = {"merge (production)", "merge without claim check", "copy of the same bytes",
                           "merge, persistent blocks prefetching tiles (cp.async)",
                           "merge, each block's tile fetched by cp.async, 3 blocks an SM", "cudaMemcpyAsync of the 4 arrays",
                           "merge, each block's tile fetched by cp.async, 2 blocks an SM"};
    const size_t dyn1 = sizeof(tile_buf<T, K>);
    CK(cudaFuncSetAttribute(merge_async_kernel<T, K, 3>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn1));
    CK(cudaFuncSetAttribute(merge_async_kernel<T, K, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn1));
    int occ1 = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ1, merge_async_kernel<T, K, 3>, TB, dyn1));
    printf("# async kernel: %d blocks per SM\n", occ1);
    unsigned *ticket;
    CK(cudaMalloc(&ticket, 4));
    const size_t dyn = 2 * sizeof(tile_buf<T, K>);
    CK(cudaFuncSetAttribute(merge_pipe_kernel<T, K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, merge_pipe_kernel<T, K>, TB, dyn));
    const int pgrid = (int)std::min<int64_t>(ntiles, (int64_t)occ * prop.multiProcessorCount);
    printf("# pipe kernel: %d blocks per SM, %d blocks, %zu bytes of dynamic shared memory\n", occ, pgrid, dyn);
    const double bytes = (double)n * 40;
    for (int v = 0; v < 7; v++) {
      const npool<T, K> P = {x[v], y[v], id[v], key[v], v == 1 ? n + m : n_new, tot};
      std::vector<float> t;
      for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, s));
        if (v == 5) {
          CK(cudaMemcpyAsync(x[v], ox, n * 4, cudaMemcpyDeviceToDevice, s));
          CK(cudaMemcpyAsync(y[v], oy, n * 4, cudaMemcpyDeviceToDevice, s));
          CK(cudaMemcpyAsync(id[v], oid, n * 8, cudaMemcpyDeviceToDevice, s));
          CK(cudaMemcpyAsync(key[v], okey, n * 4, cudaMemcpyDeviceToDevice, s));
        } else if (v == 4 || v == 6) {
          tile_init_kernel<<<(unsigned)((ntiles + 255) / 256), 256, 0, s>>>(ts, (int)ntiles);
          jlo_kernel<K><<<blocks_for(ntiles + 1, 256), 256, 0, s>>>(okey, nk, m, ntiles, jlo);
          if (v == 6) merge_async_kernel<T, K, 2><<<(unsigned)ntiles, TB, dyn1, s>>>(ox, oy, oid, okey, n, 1, claim, B, jlo, ts, surv, sbase,
                                                                      sp, P);
          else merge_async_kernel<T, K, 3><<<(unsigned)ntiles, TB, dyn1, s>>>(ox, oy, oid, okey, n, 1, claim, B, jlo, ts, surv, sbase,
                                                                      sp, P);
          merge_crowded_kernel<T, K><<<blocks_for(m, 256), 256, 0, s>>>(B, m, okey, n, jlo, surv, sbase, sp, ntiles, P);
        } else if (v == 3) {
          pipe_init_kernel<<<(unsigned)((ntiles + 255) / 256), 256, 0, s>>>(ts, (int)ntiles, ticket);
          jlo_kernel<K><<<blocks_for(ntiles + 1, 256), 256, 0, s>>>(okey, nk, m, ntiles, jlo);
          merge_pipe_kernel<T, K><<<pgrid, TB, dyn, s>>>(ox, oy, oid, okey, n, 1, claim, B, jlo, ts, (int)ntiles, ticket,
                                                          surv, sbase, sp, P);
          merge_crowded_kernel<T, K><<<blocks_for(m, 256), 256, 0, s>>>(B, m, okey, n, jlo, surv, sbase, sp, ntiles, P);
        } else if (v == 2) {
          copy_kernel<<<blocks_for(n, 256), 256, 0, s>>>(ox, oy, oid, okey, n, x[v], y[v], id[v], key[v]);
        } else {
          tile_init_kernel<<<(unsigned)((ntiles + 255) / 256), 256, 0, s>>>(ts, (int)ntiles);
          jlo_kernel<K><<<blocks_for(ntiles + 1, 256), 256, 0, s>>>(okey, nk, m, ntiles, jlo);
          merge_tile_kernel<T, K><<<(unsigned)ntiles, TB, 0, s>>>(ox, oy, oid, okey, n, v == 1 ? 0 : 1, claim, B, jlo, ts,
                                                                  surv, sbase, sp, P);
          merge_crowded_kernel<T, K><<<blocks_for(m, 256), 256, 0, s>>>(B, m, okey, n, jlo, surv, sbase, sp, ntiles, P);
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      const char *check = "ref";
      if (v == 1 || v == 2 || v == 5) check = "timing-only";
      if (v == 3 || v == 4 || v == 6) {
        unsigned long long *bad, hb = 0;
        CK(cudaMalloc(&bad, 8));
        CK(cudaMemset(bad, 0, 8));
        diff_kernel<<<4096, 256>>>((const uint32_t *)x[0], (const uint32_t *)x[v], n_new, bad);
        diff_kernel<<<4096, 256>>>((const uint32_t *)y[0], (const uint32_t *)y[v], n_new, bad);
        diff_kernel<<<4096, 256>>>((const uint32_t *)id[0], (const uint32_t *)id[v], 2 * n_new, bad);
        diff_kernel<<<4096, 256>>>((const uint32_t *)key[0], (const uint32_t *)key[v], n_new, bad);
        CK(cudaMemcpy(&hb, bad, 8, cudaMemcpyDeviceToHost));
        cudaFree(bad);
        check = hb == 0 ? "same-as-production" : "DIFFERENT";
      }
      printf("%s,%s,%lld,%g,%s,%.4f,%.1f,%s\n", date, prop.name, (long long)n, pct, names[v], t[t.size() / 2],
             bytes / (t[t.size() / 2] * 1e6), check);
      fflush(stdout);
    }
    qtot H;
    CK(cudaMemcpy(&H, tot, sizeof H, cudaMemcpyDeviceToHost));
    if (H.bad & ~2ull) printf("# tot.bad = %llu\n", H.bad);
    cudaFree(ticket);
    for (int v = 0; v < 7; v++) cudaFree(x[v]), cudaFree(y[v]), cudaFree(id[v]), cudaFree(key[v]);
    cudaFree(nk), cudaFree(nk2), cudaFree(nrow), cudaFree(nrow2), cudaFree(bxy), cudaFree(bids), cudaFree(claim);
    cudaFree(surv), cudaFree(sbase), cudaFree(jlo), cudaFree(sp), cudaFree(tot), cudaFree(ts_mem);
  }
  return 0;
}
