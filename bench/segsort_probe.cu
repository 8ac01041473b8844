// segsort_probe.cu: how fast can each query's row ids be sorted (the last step of a range fill)?
// Compares CUB DeviceSegmentedSort with one global radix sort of packed (segment, row) keys, for
// equal-size segments of random u64 rows below 2^26. Prints CSV:
//   date,device,segments,segment_size,method,ms,g_rows_per_s
// Build: nvcc -O3 -arch=sm_90 bench/segsort_probe.cu -o segsort_probe
#include <cub/cub.cuh>
#include <cstdio>
#include <ctime>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void fill(uint64_t *rows, uint64_t *offsets, int64_t segs, int64_t size) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < segs * size; i += (int64_t)gridDim.x * blockDim.x) {
    uint64_t z = i * 0x9E3779B97F4A7C15ull;
    z ^= z >> 29;
    rows[i] = z & ((1ull << 26) - 1);
    if (i % size == 0) offsets[i / size] = i;
    if (i == 0) offsets[segs] = segs * size;
  }
}

__global__ void pack(const uint64_t *rows, uint64_t *keys, int64_t segs, int64_t size) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < segs * size; i += (int64_t)gridDim.x * blockDim.x)
    keys[i] = ((uint64_t)(i / size) << 26) | rows[i];
}
__global__ void unpack(const uint64_t *keys, uint64_t *rows, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    rows[i] = keys[i] & ((1ull << 26) - 1);
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  char date[32];
  time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  printf("date,device,segments,segment_size,method,ms,g_rows_per_s\n");
  // 96, 128 and 192 (added with csr_sort.cu) locate the cliff between CUB's in-register sort of
  // <= 64 u64 rows and its block radix sort of longer segments
  const int64_t cases[][2] = {{1 << 24, 16}, {1 << 22, 64}, {1 << 22, 96}, {1 << 22, 128}, {1 << 21, 192},
                              {1 << 22, 256}, {1 << 20, 1024}, {1 << 16, 16384}, {1 << 14, 65536}};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto &c : cases) {
    int64_t segs = c[0], size = c[1], n = segs * size;
    uint64_t *rows, *tmp, *offsets, *keys, *keys2;
    CK(cudaMalloc(&rows, n * 8));
    CK(cudaMalloc(&tmp, n * 8));
    CK(cudaMalloc(&keys, n * 8));
    CK(cudaMalloc(&keys2, n * 8));
    CK(cudaMalloc(&offsets, (segs + 1) * 8));
    for (int method = 0; method < 2; method++) {
      size_t tb = 0;
      void *temp = nullptr;
      int bits = 26;
      while ((1ll << (bits - 26)) < segs) bits++;
      if (method == 0)
        CK(cub::DeviceSegmentedSort::SortKeys(nullptr, tb, rows, tmp, n, segs, offsets, offsets + 1));
      else
        CK(cub::DeviceRadixSort::SortKeys(nullptr, tb, keys, keys2, n, 0, bits));
      CK(cudaMalloc(&temp, tb));
      std::vector<float> t;
      for (int r = 0; r < 4; r++) {
        fill<<<1024, 256>>>(rows, offsets, segs, size);
        cudaEventRecord(e0);
        if (method == 0) {
          CK(cub::DeviceSegmentedSort::SortKeys(temp, tb, rows, tmp, n, segs, offsets, offsets + 1));
        } else {
          pack<<<4096, 256>>>(rows, keys, segs, size);
          CK(cub::DeviceRadixSort::SortKeys(temp, tb, keys, keys2, n, 0, bits));
          unpack<<<4096, 256>>>(keys2, tmp, n);
        }
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r > 0) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      printf("%s,%s,%lld,%lld,%s,%.3f,%.3f\n", date, p.name, (long long)segs, (long long)size,
             method == 0 ? "cub-segmented-sort" : "packed-radix-sort", t[1], n / (t[1] / 1e3) / 1e9);
      fflush(stdout);
      cudaFree(temp);
    }
    cudaFree(rows); cudaFree(tmp); cudaFree(keys); cudaFree(keys2); cudaFree(offsets);
  }
  return 0;
}
