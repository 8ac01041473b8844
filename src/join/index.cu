/*
 * index.cu: the join index built on the GPU from the layer's device arrays: the steps of index.c
 * as kernels, with index_hd.h's functions, so the groups and boxes equal the CPU build's bit for
 * bit: one thread per block of edges counts its groups (RayJoin's greedy rule walks the block in
 * order), a scan gives each block its first group, one thread per block writes its groups' first
 * edges, and one thread per group its conservative box and y-span. The rings: one thread per group
 * finds its ring (binary search over the ring offsets), CUB's ReduceByKey unions the boxes and
 * spans of each ring's run of groups (one pass over the groups, however long a ring), and one
 * thread per ring writes its box, one per group its ring's span. The rings the ring scene keeps
 * (index_hd.h's dominance rule): CUB's InclusiveScanByKey over the rings keyed by feature gives
 * each ring the largest box so far, and DeviceSelect::Flagged keeps the boxes in ring order. Then
 * the scenes over the group
 * and ring boxes (rdx_rt_scene_build): soft BVHs on the device for CUDA contexts, compacted OptiX
 * GASes for OptiX contexts, whose joins run the join's OptiX programs (src/join/optix/).
 */
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/cuda_util.cuh"
#include "join/index_hd.h"
#include "join/join.h"

namespace {

constexpr int TPB = 128;

__global__ void count_kernel(rdx_jn_arrays a, int64_t n_blocks, double s, uint64_t *counts) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n_blocks; k += (int64_t)gridDim.x * blockDim.x)
    counts[k] = rdx_jn_group_block(a.xy, a.edge_end, a.n_vertices, k, s, NULL);
}

__global__ void starts_kernel(rdx_jn_arrays a, int64_t n_blocks, double s, const uint64_t *block_first,
                              uint32_t *group_first, int64_t n_groups) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n_blocks; k += (int64_t)gridDim.x * blockDim.x)
    rdx_jn_group_block(a.xy, a.edge_end, a.n_vertices, k, s, group_first + block_first[k]);
  if (blockIdx.x == 0 && threadIdx.x == 0) group_first[n_groups] = (uint32_t)a.n_vertices;
}

__global__ void boxes_kernel(rdx_jn_arrays a, const uint32_t *group_first, int64_t n_groups, int pad_ulps,
                             double abs_pad, float *boxes, float *spans, uint32_t *ring_of) {
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < n_groups; g += (int64_t)gridDim.x * blockDim.x) {
    rdx_jn_group_box(a.xy, a.edge_end, group_first[g], group_first[g + 1], pad_ulps, abs_pad, boxes + 6 * g,
                     spans + 2 * g);
    ring_of[g] = rdx_jn_run_of(a.ring_off, a.n_rings, group_first[g]);
  }
}

/* Group g as a ring accumulator (ReduceByKey's values). */
struct group_acc {
  const float *boxes, *spans;
  __device__ rdx_jn_ring_acc operator()(int64_t g) const { return rdx_jn_ring_of_group(boxes + 6 * g, spans + 2 * g); }
};
struct ring_union {
  __device__ rdx_jn_ring_acc operator()(const rdx_jn_ring_acc &a, const rdx_jn_ring_acc &b) const {
    return rdx_jn_ring_union(a, b);
  }
};

__global__ void ring_boxes_kernel(const rdx_jn_ring_acc *acc, int64_t n_rings, float *ring_boxes) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < n_rings; r += (int64_t)gridDim.x * blockDim.x)
    rdx_jn_ring_box(acc + r, ring_boxes + 6 * r);
}

__global__ void spans_kernel(const rdx_jn_ring_acc *acc, const uint32_t *ring_of, int64_t n_groups, float *spans) {
  for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < n_groups; g += (int64_t)gridDim.x * blockDim.x) {
    const rdx_jn_ring_acc &a = acc[ring_of[g]];
    spans[2 * g] = a.span[0];
    spans[2 * g + 1] = a.span[1];
  }
}

/* The ring boxes (ring_boxes, 6 floats per ring) from the group boxes and spans, and each group's
 * span replaced by its ring's (the file comment). Every ring starts a group, so the runs of equal
 * ring_of are the rings in order, each ring one run. */
rdx_status rings_cuda(rdx_context *ctx, const rdx_jn_arrays &a, int64_t n_groups, const float *boxes, float *spans,
                      const uint32_t *ring_of, float *ring_boxes) {
  static const char what[] = "rdx_polygons_build_index: ring boxes";
  cudaStream_t cs = rdx_stream(ctx);
  rdx_status st = RDX_OK;
  rdx_jn_ring_acc *acc = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  thrust::transform_iterator<group_acc, thrust::counting_iterator<int64_t>> values(
      thrust::counting_iterator<int64_t>(0), group_acc{boxes, spans});
  auto discard = thrust::make_discard_iterator();
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&acc, (size_t)a.n_rings * sizeof *acc), st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceReduce::ReduceByKey(NULL, temp_bytes, ring_of, discard, values, acc, discard,
                                                    ring_union(), n_groups, cs), what, st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceReduce::ReduceByKey(temp, temp_bytes, ring_of, discard, values, acc, discard,
                                                    ring_union(), n_groups, cs), what, st, done);
  ring_boxes_kernel<<<rdx_grid(a.n_rings, TPB), TPB, 0, cs>>>(acc, a.n_rings, ring_boxes);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: ring boxes kernel", st, done);
  spans_kernel<<<rdx_grid(n_groups, TPB), TPB, 0, cs>>>(acc, ring_of, n_groups, spans);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: spans kernel", st, done);
done:
  rdx_mem_free(ctx, temp); /* stream-ordered: after the kernels */
  rdx_mem_free(ctx, acc);
  return st;
}

__global__ void ring_feat_kernel(rdx_jn_arrays a, uint32_t *feat_of) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < a.n_rings; r += (int64_t)gridDim.x * blockDim.x)
    feat_of[r] = rdx_jn_run_of(a.feat_off, a.n_features, (uint64_t)r);
}

/* Ring r's box with its area, for the scan. */
struct ring_big_of {
  const float *ring_boxes;
  __device__ rdx_jn_ring_big operator()(int64_t r) const {
    return rdx_jn_ring_big_of(ring_boxes + 6 * r, (uint32_t)r);
  }
};
struct ring_bigger {
  __device__ rdx_jn_ring_big operator()(const rdx_jn_ring_big &a, const rdx_jn_ring_big &b) const {
    return rdx_jn_ring_bigger(a, b);
  }
};

/* keep[r]: 1 unless the largest earlier ring box of r's feature (big[r - 1], the inclusive scan)
 * holds r's box. */
__global__ void keep_kernel(const float *ring_boxes, const uint32_t *feat_of, const rdx_jn_ring_big *big,
                            int64_t n_rings, uint8_t *keep) {
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < n_rings; r += (int64_t)gridDim.x * blockDim.x)
    keep[r] = r == 0 || feat_of[r - 1] != feat_of[r] ||
              !rdx_jn_box_within(ring_boxes + 6 * r, ring_boxes + 6 * (uint64_t)big[r - 1].ring);
}

struct box6 {
  float v[6];
};

/* The boxes of the rings the ring scene keeps, in ring order, into kept (6 floats per ring of
 * room), *n_kept of them (index_hd.h's dominance rule). */
rdx_status keep_rings_cuda(rdx_context *ctx, const rdx_jn_arrays &a, const float *ring_boxes, float *kept,
                           int64_t *n_kept) {
  static const char what[] = "rdx_polygons_build_index: ring scene";
  cudaStream_t cs = rdx_stream(ctx);
  const int64_t n = a.n_rings;
  rdx_status st = RDX_OK;
  uint32_t *feat_of = NULL;
  rdx_jn_ring_big *big = NULL;
  uint8_t *keep = NULL;
  int64_t *d_kept = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  thrust::transform_iterator<ring_big_of, thrust::counting_iterator<int64_t>> values(
      thrust::counting_iterator<int64_t>(0), ring_big_of{ring_boxes});
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&feat_of, (size_t)n * 4), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&big, (size_t)n * sizeof *big), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&keep, (size_t)n), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&d_kept, 8), st, done);
  ring_feat_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(a, feat_of);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: ring features kernel", st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::InclusiveScanByKey(NULL, temp_bytes, feat_of, values, big, ring_bigger(), n,
                                                         cuda::std::equal_to<>(), cs), what, st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceScan::InclusiveScanByKey(temp, temp_bytes, feat_of, values, big, ring_bigger(), n,
                                                         cuda::std::equal_to<>(), cs), what, st, done);
  keep_kernel<<<rdx_grid(n, TPB), TPB, 0, cs>>>(ring_boxes, feat_of, big, n, keep);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: ring keep kernel", st, done);
  rdx_mem_free(ctx, temp);
  temp = NULL;
  RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(NULL, temp_bytes, (const box6 *)ring_boxes, keep, (box6 *)kept,
                                                d_kept, n, cs), what, st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, done);
  RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(temp, temp_bytes, (const box6 *)ring_boxes, keep, (box6 *)kept,
                                                d_kept, n, cs), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(n_kept, d_kept, 8, cudaMemcpyDeviceToHost, cs), what, st, done);
  RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(cs), what, st, done);
done:
  rdx_mem_free(ctx, feat_of);
  rdx_mem_free(ctx, big);
  rdx_mem_free(ctx, keep);
  rdx_mem_free(ctx, d_kept);
  rdx_mem_free(ctx, temp);
  return st;
}

rdx_status index_build_cuda(rdx_context *ctx, const rdx_polygons *p, rdx_jn_index *out) {
  static const char what[] = "rdx_polygons_build_index";
  const rdx_jn_arrays a = p->dev;
  cudaStream_t st_ = rdx_stream(ctx);
  double t0 = rdx_now_ms();
  rdx_status st = RDX_OK;
  const int64_t n_blocks = (a.n_vertices + RDX_JN_GROUP_BLOCK - 1) / RDX_JN_GROUP_BLOCK;
  uint64_t *counts = NULL, *block_first = NULL, total = 0;
  float *boxes = NULL, *ring_boxes = NULL, *kept = NULL;
  uint32_t *ring_of = NULL;
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&counts, (size_t)n_blocks * 8), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&block_first, (size_t)(n_blocks + 1) * 8), st, done);
  count_kernel<<<rdx_grid(n_blocks, TPB), TPB, 0, st_>>>(a, n_blocks, out->group_threshold, counts);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: group count kernel", st, done);
  RDX_CHECK_GOTO(rdx_csr_scan_cuda(ctx, counts, n_blocks, block_first, &total), st, done);
  out->n_groups = (int64_t)total; /* at most one group per edge, so below 2^32 */
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->group_first, (size_t)(total + 1) * 4, RDX_DEVICE), st, done);
  starts_kernel<<<rdx_grid(n_blocks, TPB), TPB, 0, st_>>>(a, n_blocks, out->group_threshold, block_first,
                                                          out->group_first, out->n_groups);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: group starts kernel", st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&boxes, (size_t)total * 24), st, done);
  RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->group_span, (size_t)total * 8, RDX_DEVICE), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&ring_of, (size_t)total * 4), st, done);
  boxes_kernel<<<rdx_grid(out->n_groups, TPB), TPB, 0, st_>>>(a, out->group_first, out->n_groups, out->pad_ulps,
                                                                out->abs_pad, boxes, out->group_span, ring_of);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_polygons_build_index: group boxes kernel", st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&ring_boxes, (size_t)a.n_rings * 24), st, done);
  RDX_CHECK_GOTO(rings_cuda(ctx, a, out->n_groups, boxes, out->group_span, ring_of, ring_boxes), st, done);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&kept, (size_t)a.n_rings * 24), st, done);
  RDX_CHECK_GOTO(keep_rings_cuda(ctx, a, ring_boxes, kept, &out->n_ring_boxes), st, done);
  RDX_CHECK_GOTO(rdx_cuda_sync(ctx, what), st, done);
  out->group_ms = rdx_now_ms() - t0;
  {
    rdx_bvh_options bo = {NULL, 0}; /* Morton codes; width 0: the context's forced width, else BVH4 */
#ifdef RDX_HAVE_OPTIX
    if (ctx->backend == RDX_BACKEND_OPTIX) { /* room for the hardware's box tests (join.h) */
      RDX_CHECK_GOTO(rdx_jn_optix_boxes(ctx, boxes, out->n_groups), st, done);
      RDX_CHECK_GOTO(rdx_jn_optix_boxes(ctx, kept, out->n_ring_boxes), st, done);
    }
#endif
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_AABBS, boxes, out->n_groups, &bo, &out->scene), st, done);
    RDX_CHECK_GOTO(rdx_rt_scene_build(ctx, RDX_RT_AABBS, kept, out->n_ring_boxes, &bo, &out->rings), st, done);
  }
  st = rdx_cuda_sync(ctx, what);
done:
  rdx_mem_free(ctx, counts);
  rdx_mem_free(ctx, block_first);
  rdx_mem_free(ctx, boxes);
  rdx_mem_free(ctx, ring_of);
  rdx_mem_free(ctx, ring_boxes);
  rdx_mem_free(ctx, kept);
  return st; /* on failure rdx_jn_index_make frees what out holds */
}

}  // namespace

extern "C" const rdx_jn_ops rdx_jn_index_cuda_ops = {
    RDX_JN_OP_INDEX, RDX_BACKEND_CUDA, index_build_cuda, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
