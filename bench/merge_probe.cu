// merge_probe.cu: the updates' merge (src/spatial/merge.cuh, through update_qt.cu) alone, against the copy
// of the same bytes, on a pool shaped like the update benchmark's (16.5M f32 points, u32 codes in
// hot spots; a batch of 1% or 10% of the ids moved into new hot spots). The production merge's
// output is checked (codes in order, every id once); the other rows only time. Prints CSV:
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
/* the merged pool: codes in order, every id of [0, n) once */
__global__ void check_kernel(const uint32_t *key, const uint64_t *id, int64_t n, uint32_t *seen, unsigned long long *bad) {
  SP_FOR(i, n) {
    if (i + 1 < n && key[i] > key[i + 1]) atomicAdd(bad, 1ull);
    uint64_t d = id[i];
    if (d >= (uint64_t)n || (atomicOr(&seen[d >> 5], 1u << (d & 31)) >> (d & 31) & 1u)) atomicAdd(bad, 1ull);
  }
}
/* the ceiling: every slot read and written once, same arrays */
__global__ void copy_kernel(const float *ox, const float *oy, const uint64_t *oid, const uint32_t *ok, int64_t n, float *x,
                            float *y, uint64_t *id, uint32_t *k) {
  SP_FOR(i, n) x[i] = ox[i], y[i] = oy[i], id[i] = oid[i], k[i] = ok[i];
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
  CK(cub::DeviceRadixSort::SortPairs(nullptr, tb, okey, k2, v1, v2, n));
  CK(cudaMalloc(&tmp, tb));
  gen_codes<<<4096, 256>>>(k2, nullptr, n, 1, 0.8, 64, 22);
  CK(cub::DeviceRadixSort::SortKeys(nullptr, tb2, k2, okey, n));
  CK(tb2 <= tb ? cudaSuccess : cudaErrorMemoryAllocation);
  CK(cub::DeviceRadixSort::SortKeys(tmp, tb2, k2, okey, n));
  gen_rand<<<4096, 256>>>(k2, v1, n, 2);
  CK(cub::DeviceRadixSort::SortPairs(tmp, tb, k2, v2, v1, perm, n)); /* perm: ids */
  fill_pool<<<4096, 256>>>(ox, oy, oid, perm, n);
  gen_rand<<<4096, 256>>>(k2, v1, n, 3);
  CK(cub::DeviceRadixSort::SortPairs(tmp, tb, k2, v2, v1, bperm, n)); /* bperm: moved ids */
  CK(cudaGetLastError());
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
    CK(cudaGetLastError());
    /* outputs: one per variant (the merge without claim check keeps every old point) */
    const int NV = 4;
    T *x[NV], *y[NV];
    uint64_t *id[NV];
    K *key[NV];
    for (int v = 0; v < NV; v++) {
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
    const char *names[NV] = {"merge (production: tile init + jlo + merge_tile + merge_crowded)", "merge without claim check",
                             "copy kernel of the same bytes", "cudaMemcpyAsync of the 4 arrays"};
    const double bytes = (double)n * 40;
    for (int v = 0; v < NV; v++) {
      const npool<T, K> P = {x[v], y[v], id[v], key[v], v == 1 ? n + m : n_new, &tot->bad};
      std::vector<float> t;
      for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(e0, s));
        if (v <= 1) {
          tile_init_kernel<<<(unsigned)((ntiles + 255) / 256), 256, 0, s>>>(ts, (int)ntiles);
          jlo_kernel<K><<<blocks_for(ntiles + 1, 256), 256, 0, s>>>(okey, nk, m, ntiles, jlo);
          merge_tile_kernel<T, K><<<(unsigned)ntiles, TB, 0, s>>>(ox, oy, oid, okey, n, v == 0, claim, B, jlo, ts, surv,
                                                                  sbase, sp, P);
          merge_crowded_kernel<T, K><<<blocks_for(m, 256), 256, 0, s>>>(B, m, okey, n, jlo, surv, sbase, sp, ntiles, P);
        } else if (v == 2) {
          copy_kernel<<<blocks_for(n, 256), 256, 0, s>>>(ox, oy, oid, okey, n, x[v], y[v], id[v], key[v]);
        } else {
          CK(cudaMemcpyAsync(x[v], ox, n * 4, cudaMemcpyDeviceToDevice, s));
          CK(cudaMemcpyAsync(y[v], oy, n * 4, cudaMemcpyDeviceToDevice, s));
          CK(cudaMemcpyAsync(id[v], oid, n * 8, cudaMemcpyDeviceToDevice, s));
          CK(cudaMemcpyAsync(key[v], okey, n * 4, cudaMemcpyDeviceToDevice, s));
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      const char *check = "timing-only";
      if (v == 0) {
        unsigned long long *bad, hb = 0;
        uint32_t *seen;
        CK(cudaMalloc(&bad, 8));
        CK(cudaMalloc(&seen, cw * 4));
        CK(cudaMemset(bad, 0, 8));
        CK(cudaMemset(seen, 0, cw * 4));
        check_kernel<<<4096, 256>>>(key[0], id[0], n_new, seen, bad);
        CK(cudaMemcpy(&hb, bad, 8, cudaMemcpyDeviceToHost));
        cudaFree(bad), cudaFree(seen);
        check = hb == 0 ? "ok" : "WRONG";
      }
      printf("%s,%s,%lld,%g,%s,%.4f,%.1f,%s\n", date, prop.name, (long long)n, pct, names[v], t[t.size() / 2],
             bytes / (t[t.size() / 2] * 1e6), check);
      fflush(stdout);
    }
    qtot H;
    CK(cudaMemcpy(&H, tot, sizeof H, cudaMemcpyDeviceToHost));
    if (H.bad & ~2ull) printf("# tot.bad = %llu\n", H.bad);
    for (int v = 0; v < NV; v++) cudaFree(x[v]), cudaFree(y[v]), cudaFree(id[v]), cudaFree(key[v]);
    cudaFree(nk), cudaFree(nk2), cudaFree(nrow), cudaFree(nrow2), cudaFree(bxy), cudaFree(bids), cudaFree(claim);
    cudaFree(surv), cudaFree(sbase), cudaFree(jlo), cudaFree(sp), cudaFree(tot), cudaFree(ts_mem);
  }
  return 0;
}
