// launch_probe.cu: the host time of a stream's first kernel launch after what an update call
// finds before it (PROBES.md section 27: a paged update's first launch took 20-37 us in the
// bench, the next 4-6): a pageable or pinned 13 MB upload, a small pageable read, GPU work, or
// a sweep of 256 MB of host memory (as the bench's shuffle of the batch's ids does), each after
// a sync, 35 times; medians and maxima of the first and second launch.
// Build and run: nvcc -O2 -arch=sm_90 bench/launch_probe.cu -o build-gpu/launch_probe && build-gpu/launch_probe
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
__global__ void empty() {}
__global__ void busy(float *p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += 1.f; }
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const size_t bytes = 13 << 20;
  void *d; cudaMalloc(&d, bytes);
  void *hp = malloc(bytes); void *hq; cudaMallocHost(&hq, bytes);
  memset(hp, 1, bytes); memset(hq, 1, bytes);
  float *w; cudaMalloc(&w, 1 << 24);
  unsigned long long *small; cudaMalloc(&small, 64); unsigned long long hs[8];
  const char *names[] = {"pageable H2D 13MB", "pinned H2D 13MB", "sync only", "pageable D2H 64B", "busy work + sync", "host sweep 256MB"};
  char *big = (char *)malloc((size_t)256 << 20);
  for (int mode = 0; mode < 6; mode++) {
    std::vector<double> first, second;
    for (int r = 0; r < 40; r++) {
      for (int k = 0; k < 30; k++) busy<<<64, 256, 0, s>>>(w, 1 << 14); // some prior work, like an update
      cudaStreamSynchronize(s);
      if (mode == 0) cudaMemcpyAsync(d, hp, bytes, cudaMemcpyHostToDevice, s);
      if (mode == 1) cudaMemcpyAsync(d, hq, bytes, cudaMemcpyHostToDevice, s);
      if (mode == 3) cudaMemcpyAsync(hs, small, 64, cudaMemcpyDeviceToHost, s);
      if (mode == 4) busy<<<4096, 256, 0, s>>>(w, 1 << 20);
      cudaStreamSynchronize(s);
      if (mode == 5) { for (size_t i = 0; i < ((size_t)256 << 20); i += 64) big[i] = (char)(i + r); }
      double t0 = now_us();
      empty<<<1, 32, 0, s>>>();
      double t1 = now_us();
      empty<<<1, 32, 0, s>>>();
      double t2 = now_us();
      cudaStreamSynchronize(s);
      if (r >= 5) first.push_back(t1 - t0), second.push_back(t2 - t1);
    }
    std::sort(first.begin(), first.end()); std::sort(second.begin(), second.end());
    printf("%-20s first launch median %.1f us (max %.1f), second %.1f us\n", names[mode], first[first.size() / 2], first.back(), second[second.size() / 2]);
  }
  return 0;
}
