/*
 * bvh4.cu: step 7 of the build on the GPU (rule in bvh_hd.h), the kernels of bvh4.c: parents,
 * kept flags, a CUB exclusive scan, the BVH4 nodes. Same rule, same numbering, so the BVH4
 * equals the CPU's bit for bit.
 */
#include <cub/cub.cuh>

#include "core/cuda_util.cuh"
#include "rt/bvh_hd.h"
#include "rt/rt.h"

namespace {

constexpr int TPB = 256;

unsigned grid4(int64_t n) {
  unsigned g = rdx_grid(n, TPB);
  return g > 65535u * 8 ? 65535u * 8 : g;
}

__global__ void parents_kernel(const rdx_bvh_node *nodes, int64_t n, uint32_t *parent) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    rdx_bvh4_parents(nodes, i, parent);
}

__global__ void kept_kernel(const uint32_t *parent, int64_t n, uint32_t *kept) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    kept[i] = rdx_bvh4_kept(parent, i);
}

__global__ void emit_kernel(const rdx_bvh_node *nodes, const uint32_t *parent, const uint32_t *newidx, int64_t n,
                            rdx_bvh4_node *out) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    if (rdx_bvh4_kept(parent, i)) rdx_bvh4_emit(nodes, newidx, i, out);
}

}  // namespace

extern "C" rdx_status rdx_bvh_collapse_cuda(rdx_context *ctx, rdx_bvh *b) {
  static const char what[] = "rdx_bvh_build";
  if (b->n_nodes == 0) {
    b->width = 4;
    return RDX_OK;
  }
  cudaStream_t s = rdx_stream(ctx);
  int64_t n = b->n_nodes;
  rdx_status st = RDX_OK;
  uint32_t *scratch = NULL, *parent, *kept, *newidx;
  void *temp = NULL;
  size_t temp_bytes = 0;
  rdx_bvh4_node *out = NULL;
  uint32_t last[2] = {0, 0};
  int64_t total = 0;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&scratch, (size_t)n * 12), st, fail);
  parent = scratch;
  kept = scratch + n;
  newidx = kept + n;
  RDX_CUDA_GOTO(ctx, cudaMemsetAsync(parent, 0, 4, s), what, st, fail);
  parents_kernel<<<grid4(n), TPB, 0, s>>>(b->nodes, n, parent);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: bvh4 parents kernel", st, fail);
  kept_kernel<<<grid4(n), TPB, 0, s>>>(parent, n, kept);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: bvh4 kept kernel", st, fail);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, kept, newidx, n, s), what, st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, fail);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(temp, temp_bytes, kept, newidx, n, s), what, st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last[0], newidx + n - 1, 4, cudaMemcpyDeviceToHost, s), what, st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last[1], kept + n - 1, 4, cudaMemcpyDeviceToHost, s), what, st, fail);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
  rdx_mem_free(ctx, temp);
  temp = NULL;
  total = (int64_t)last[0] + last[1];
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out, (size_t)total * sizeof(rdx_bvh4_node), RDX_DEVICE), st, fail);
  emit_kernel<<<grid4(n), TPB, 0, s>>>(b->nodes, parent, newidx, n, out);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: bvh4 emit kernel", st, fail);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
  rdx_mem_free(ctx, scratch);
  rdx_mem_free(ctx, b->nodes);
  b->nodes = NULL;
  b->n_nodes = 0;
  b->nodes4 = out;
  b->n_nodes4 = total;
  b->width = 4;
  return RDX_OK;
fail:
  rdx_mem_free(ctx, out);
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, scratch);
  return st;
}
