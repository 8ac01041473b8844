/*
 * scene.cu: the generic batched traversal (first, closest, all hits) on the GPU: one thread per
 * ray over the same RDX_HD traversal as the CPU; all-hits ids are then sorted per ray with CUB's
 * segmented sort so the output equals the CPU's byte for byte.
 */
#include <cub/cub.cuh>

#include "core/cuda_util.cuh"
#include "rt/rt.h"

namespace {

__global__ void trace_kernel(rdx_bvh_view v, const rdx_ray *rays, int64_t n, int mode, rdx_rt_hit *hits,
                             uint64_t *counts, const uint64_t *offsets, uint32_t *ids) {
  int tri = v.kind == RDX_RT_TRIANGLES;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    rdx_rt_generic_state s;
    s.hit.prim = RDX_RT_NO_HIT;
    s.hit.t = 0.0f;
    s.hit.front = 0;
    s.count = 0;
    s.out = NULL;
    rdx_ray r = rays[i];
    if (mode == RDX_RT_FIRST_HIT) {
      if (tri) rdx_rt_trace_first(&v, &r, &s);
      else rdx_rt_trace_first_aabb(&v, &r, &s);
      hits[i] = s.hit;
    } else if (mode == RDX_RT_CLOSEST_HIT) {
      if (tri) rdx_rt_trace_closest(&v, &r, &s);
      else rdx_rt_trace_closest_aabb(&v, &r, &s);
      hits[i] = s.hit;
    } else {
      if (ids) s.out = ids + offsets[i];
      if (tri) rdx_rt_trace_all(&v, &r, &s);
      else rdx_rt_trace_all_aabb(&v, &r, &s);
      if (counts) counts[i] = s.count;
    }
  }
}

}  // namespace

/* Sort each ray's ids (CSR segments) ascending: traversal order differs between backends. */
extern "C" rdx_status rdx_rt_sort_ids_cuda(rdx_context *ctx, const uint64_t *offsets, int64_t n, uint32_t *ids) {
  cudaStream_t s = rdx_stream(ctx);
  uint64_t total = 0;
  RDX_CUDA(ctx, cudaMemcpyAsync(&total, offsets + n, 8, cudaMemcpyDeviceToHost, s), "rdx_rt_trace: total");
  RDX_CUDA(ctx, cudaStreamSynchronize(s), "rdx_rt_trace");
  if (total < 2) return RDX_OK;
  void *tmp = NULL, *temp = NULL;
  size_t temp_bytes = 0;
  RDX_CHECK(rdx_scratch(ctx, "rdx_rt_trace: sort buffer", &tmp, (size_t)total * 4));
  cub::DoubleBuffer<uint32_t> buf(ids, (uint32_t *)tmp);
  rdx_status st = RDX_OK;
  cudaError_t e = cub::DeviceSegmentedSort::SortKeys(NULL, temp_bytes, buf, (int64_t)total, n, offsets, offsets + 1, s);
  if (e == cudaSuccess) {
    st = rdx_scratch(ctx, "rdx_rt_trace: sort scratch", &temp, temp_bytes);
    if (st == RDX_OK) {
      e = cub::DeviceSegmentedSort::SortKeys(temp, temp_bytes, buf, (int64_t)total, n, offsets, offsets + 1, s);
      if (e == cudaSuccess && buf.Current() != ids)
        e = cudaMemcpyAsync(ids, buf.Current(), (size_t)total * 4, cudaMemcpyDeviceToDevice, s);
      if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    }
  }
  if (st == RDX_OK && e != cudaSuccess) st = rdx_cuda_fail(ctx, e, "rdx_rt_trace: segmented sort");
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, tmp);
  return st;
}

extern "C" rdx_status rdx_rt_trace_cuda(rdx_context *ctx, const rdx_bvh *b, const rdx_ray *rays, int64_t n,
                                        rdx_rt_mode mode, rdx_rt_hit *hits, uint64_t *counts, const uint64_t *offsets,
                                        uint32_t *ids) {
  cudaStream_t s = rdx_stream(ctx);
  trace_kernel<<<rdx_grid(n, 128), 128, 0, s>>>(rdx_bvh_view_of(b), rays, n, (int)mode, hits, counts, offsets, ids);
  RDX_LAUNCH_CHECK(ctx, "rdx_rt_trace: trace kernel");
  if (mode == RDX_RT_ALL_HITS && ids != NULL) return rdx_rt_sort_ids_cuda(ctx, offsets, n, ids);
  return rdx_cuda_sync(ctx, "rdx_rt_trace");
}
