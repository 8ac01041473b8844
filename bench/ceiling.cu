// ceiling.cu: the physical limits the key-index lookups are measured against (METHOD.md: count
// the bytes, measure the ceiling): device-to-device copy bandwidth, and random reads of 8, 32,
// 64 and 128 aligned bytes from a buffer far larger than L2 (one independent read per thread,
// addresses from a hash, results summed so nothing is optimised away). Prints CSV:
//   date,device,what,bytes_per_access,accesses_per_s,gb_per_s
// Build: nvcc -O3 -arch=sm_90 bench/ceiling.cu -o ceiling
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// n_units is a power of two, so the address is a mask, not a 64-bit modulo; each thread keeps
// UNROLL independent reads in flight.
template <int BYTES>
__global__ void random_read(const uint4 *buf, unsigned long long n_units, unsigned long long n, unsigned long long seed,
                            unsigned long long *sink) {
  constexpr int UNROLL = 4;
  unsigned long long acc = 0, stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += stride * UNROLL) {
#pragma unroll
    for (int r = 0; r < UNROLL; r++) {
      unsigned long long u = mix(i + r * stride + seed) & (n_units - 1);  // unit of BYTES bytes
      if (BYTES == 8) {
        acc += __ldcs((const unsigned long long *)buf + u);
      } else {
        const uint4 *p = buf + u * (BYTES / 16);
#pragma unroll
        for (int k = 0; k < BYTES / 16; k++) { uint4 v = __ldcs(p + k); acc += v.x ^ v.w; }
      }
    }
  }
  if (acc == 0x123456789ull) *sink = acc;
}

// The same with LANES cooperating lanes per access, each reading one 16-byte piece of the unit,
// so the warp issues one coalesced request per unit (how the hash kind reads a 32-byte window
// with 2 lanes and the btree kind a 128-byte node with 8).
template <int BYTES, int LANES>
__global__ void random_read_coop(const uint4 *buf, unsigned long long n_units, unsigned long long n,
                                 unsigned long long seed, unsigned long long *sink) {
  constexpr int UNROLL = 4;
  unsigned long long acc = 0;
  unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long group = tid / LANES, lane = tid % LANES;
  unsigned long long groups = (unsigned long long)gridDim.x * blockDim.x / LANES;
  for (unsigned long long i = group; i < n; i += groups * UNROLL) {
#pragma unroll
    for (int r = 0; r < UNROLL; r++) {
      unsigned long long u = mix(i + r * groups + seed) & (n_units - 1);
      uint4 v = __ldcs(buf + u * (BYTES / 16) + lane);
      acc += v.x ^ v.w;
    }
  }
  if (acc == 0x123456789ull) *sink = acc;
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  char date[32];
  time_t now = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  size_t bytes = (size_t)8 << 30;  // 8 GiB: far beyond L2
  uint4 *a, *b;
  unsigned long long *sink;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&sink, 8));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  printf("date,device,what,bytes_per_access,accesses_per_s,gb_per_s\n");
  auto time_it = [&](auto fn) {
    std::vector<float> t;
    fn();
    for (int r = 0; r < 5; r++) {
      cudaEventRecord(e0);
      fn();
      cudaEventRecord(e1);
      CK(cudaEventSynchronize(e1));
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[2];
  };
  float ms = time_it([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  printf("%s,%s,d2d copy (read+write),%d,%.4g,%.1f\n", date, p.name, 1, 0.0, 2.0 * bytes / ms / 1e6);
  unsigned long long n = 1ull << 28;
  int grid = p.multiProcessorCount * 16;
  ms = time_it([&] { random_read<8><<<grid, 256>>>(a, bytes / 8, n, 7, sink); });
  printf("%s,%s,random read,8,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 32.0 / ms / 1e6);
  ms = time_it([&] { random_read<32><<<grid, 256>>>(a, bytes / 32, n, 7, sink); });
  printf("%s,%s,random read,32,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 32.0 / ms / 1e6);
  ms = time_it([&] { random_read<64><<<grid, 256>>>(a, bytes / 64, n, 7, sink); });
  printf("%s,%s,random read,64,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 64.0 / ms / 1e6);
  ms = time_it([&] { random_read<128><<<grid, 256>>>(a, bytes / 128, n, 7, sink); });
  printf("%s,%s,random read,128,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 128.0 / ms / 1e6);
  ms = time_it([&] { random_read_coop<32, 2><<<grid, 256>>>(a, bytes / 32, n, 7, sink); });
  printf("%s,%s,random read 2 lanes x 16B,32,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 32.0 / ms / 1e6);
  ms = time_it([&] { random_read_coop<64, 4><<<grid, 256>>>(a, bytes / 64, n, 7, sink); });
  printf("%s,%s,random read 4 lanes x 16B,64,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 64.0 / ms / 1e6);
  ms = time_it([&] { random_read_coop<128, 8><<<grid, 256>>>(a, bytes / 128, n, 7, sink); });
  printf("%s,%s,random read 8 lanes x 16B,128,%.4g,%.1f\n", date, p.name, n / (ms / 1e3), n * 128.0 / ms / 1e6);
  CK(cudaGetLastError());
  return 0;
}
