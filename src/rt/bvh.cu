/*
 * bvh.cu: the LBVH build on the GPU, the steps of bvh_hd.h as kernels, so the tree equals the CPU
 * build's bit for bit (same codes, same stable (code, index) order, same exact box unions).
 *
 * Kernels run on the context's stream; scratch comes from the account. The (code, index) sort is
 * CUB's radix sort (stable, indices ascending on entry), the renumbering a CUB exclusive scan, the
 * box pass Karras's bottom-up walk with one atomic counter per node.
 */
#include <string.h>

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "core/cuda_util.cuh"
#include "rt/bvh_hd.h"
#include "rt/rt.h"

namespace {

constexpr int TPB = 256;
constexpr int RUN_CHECK_MAX = 64;

__global__ void boxes_kernel(int kind, const float *prims, int64_t n, uint32_t *active, float *partial) {
  __shared__ float sh[6][TPB];
  float cb[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    float lo[3], hi[3];
    int ok = rdx_lbvh_prim_box(kind, prims, i, lo, hi);
    active[i] = (uint32_t)ok;
    if (!ok) continue;
    for (int a = 0; a < 3; a++) {
      float c = RDX_FMUL(RDX_FADD(lo[a], hi[a]), 0.5f);
      cb[a] = fminf(cb[a], c);
      cb[3 + a] = fmaxf(cb[3 + a], c);
    }
  }
  for (int a = 0; a < 6; a++) sh[a][threadIdx.x] = cb[a];
  __syncthreads();
  for (int s = TPB / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s)
      for (int a = 0; a < 6; a++)
        sh[a][threadIdx.x] = a < 3 ? fminf(sh[a][threadIdx.x], sh[a][threadIdx.x + s])
                                   : fmaxf(sh[a][threadIdx.x], sh[a][threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int a = 0; a < 6; a++) partial[blockIdx.x * 6 + a] = sh[a][0];
}

struct frame {
  float lo[3], scale[3];
};

__global__ void codes_kernel(int kind, const float *prims, const uint32_t *active_idx, int64_t n,
                             const uint64_t *user_codes, frame f, uint64_t *codes, uint32_t *idx) {
  for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < n; s += (int64_t)gridDim.x * blockDim.x) {
    uint32_t i = active_idx[s];
    idx[s] = i;
    if (user_codes) {
      codes[s] = user_codes[i];
    } else {
      float lo[3], hi[3];
      rdx_lbvh_prim_box(kind, prims, i, lo, hi);
      codes[s] = rdx_lbvh_code(lo, hi, f.lo, f.scale);
    }
  }
}

__global__ void gather_kernel(int kind, const float *prims, const uint32_t *idx, int64_t n, float *out, uint32_t *ids) {
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < n; s += (int64_t)gridDim.x * blockDim.x) {
    uint32_t i = idx[s];
    for (int k = 0; k < w; k++) out[s * w + k] = prims[(int64_t)i * w + k];
    ids[s] = i;
  }
}

__global__ void internal_kernel(const uint64_t *codes, int64_t n, rdx_lbvh_node *tree) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n - 1; i += (int64_t)gridDim.x * blockDim.x)
    rdx_lbvh_internal(codes, n, i, &tree[i]);
}

__global__ void kept_kernel(const rdx_lbvh_node *tree, int64_t n_int, uint32_t *kept) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_int; i += (int64_t)gridDim.x * blockDim.x)
    kept[i] = rdx_lbvh_kept(tree, i);
}

__global__ void emit_kernel(const rdx_lbvh_node *tree, const uint32_t *newidx, int64_t n_int, rdx_bvh_node *nodes,
                            uint32_t *parent, uint32_t *n_internal) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_int; i += (int64_t)gridDim.x * blockDim.x)
    if (rdx_lbvh_kept(tree, i)) rdx_lbvh_emit(tree, newidx, i, nodes, parent, n_internal);
}

/* finish_node with the internal children's boxes read past L1 (another SM wrote them) */
__device__ void finish_node_device(int kind, const float *prims, rdx_bvh_node *nodes, uint32_t m, float *out) {
  rdx_bvh_node *nd = nodes + m;
  float b[2][6];
  for (int c = 0; c < 2; c++) {
    if (nd->count[c] > 0) {
      rdx_lbvh_leaf_box(kind, prims, nd->child[c], nd->count[c], b[c]);
      for (int a = 0; a < 6; a++) nd->box[c][a] = b[c][a];
    } else {
      for (int a = 0; a < 6; a++) b[c][a] = __ldcg(&nd->box[c][a]);
    }
  }
  rdx_lbvh_union(b[0], b[1], out);
}

__global__ void refit_kernel(int kind, const float *prims, rdx_bvh_node *nodes, int64_t n_nodes, const uint32_t *parent,
                             const uint32_t *n_internal, unsigned int *counter) {
  for (int64_t m0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; m0 < n_nodes; m0 += (int64_t)gridDim.x * blockDim.x) {
    if (n_internal[m0] != 0) continue;
    uint32_t m = (uint32_t)m0;
    float box[6];
    finish_node_device(kind, prims, nodes, m, box);
    while (m != 0) {
      uint32_t p = parent[m] >> 1, slot = parent[m] & 1;
      for (int a = 0; a < 6; a++) __stcg(&nodes[p].box[slot][a], box[a]);
      __threadfence(); /* our box is visible before the counter says so */
      unsigned old = atomicAdd(&counter[p], 1u);
      if (old + 1 < n_internal[p]) break;
      __threadfence();
      finish_node_device(kind, prims, nodes, p, box);
      m = p;
    }
  }
}

__global__ void coincident_kernel(int kind, const float *prims, const uint64_t *codes, int64_t n, int *found) {
  for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < n; s += (int64_t)gridDim.x * blockDim.x) {
    if (s > 0 && codes[s] == codes[s - 1]) continue;
    if (s + 1 >= n || codes[s + 1] != codes[s]) continue; /* a run of one */
    int64_t e = s + 1;
    while (e < n && codes[e] == codes[s] && e - s <= RUN_CHECK_MAX) e++;
    if (e - s > RUN_CHECK_MAX) {
      atomicExch(found, 1);
      continue;
    }
    int hit = 0;
    for (int64_t a = s; a < e && !hit; a++)
      for (int64_t b = a + 1; b < e && !hit; b++) {
        float la[3], ha[3], lb[3], hb[3];
        rdx_lbvh_prim_box(kind, prims, a, la, ha);
        rdx_lbvh_prim_box(kind, prims, b, lb, hb);
        hit = la[0] == lb[0] && la[1] == lb[1] && la[2] == lb[2] && ha[0] == hb[0] && ha[1] == hb[1] && ha[2] == hb[2];
      }
    if (hit) atomicExch(found, 1);
  }
}

unsigned grid_for(int64_t n) {
  unsigned g = rdx_grid(n, TPB);
  return g > 65535u * 8 ? 65535u * 8 : g;
}

}  // namespace

extern "C" rdx_status rdx_bvh_build_cuda(rdx_context *ctx, int kind, const float *prims, int64_t n_in,
                                         const rdx_bvh_options *opts, rdx_bvh *out) {
  static const char what[] = "rdx_bvh_build";
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->n_input = n_in;
  for (int a = 0; a < 3; a++) out->lo[a] = INFINITY, out->hi[a] = -INFINITY;
  if (n_in >= (int64_t)UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld primitives exceed 2^32 - 1", what, (long long)n_in);
  int width = 4;
  RDX_CHECK(rdx_bvh_width(ctx, opts, &width));
  out->width = width;
  if (n_in == 0) return RDX_OK;
  cudaStream_t s = rdx_stream(ctx);
  int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  rdx_status st = RDX_OK;
  uint32_t *flags = NULL, *active = NULL, *idx = NULL, *idx2 = NULL, *kept = NULL, *newidx = NULL, *parent = NULL;
  uint64_t *codes = NULL, *codes2 = NULL;
  float *partial = NULL;
  rdx_lbvh_node *tree = NULL;
  void *temp = NULL;
  size_t temp_bytes = 0;
  int *found = NULL;
  int64_t n = 0;
  unsigned gb = rdx_grid(n_in, TPB) < 1024 ? rdx_grid(n_in, TPB) : 1024;
  float hp[6 * 1024];
  const uint64_t *user = opts ? opts->codes : NULL;

  /* 1: boxes, active flags, centroid box */
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&flags, (size_t)n_in * 4), st, fail);
  RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&partial, (size_t)gb * 6 * 4), st, fail);
  boxes_kernel<<<gb, TPB, 0, s>>>(kind, prims, n_in, flags, partial);
  RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: boxes kernel", st, fail);
  RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(hp, partial, (size_t)gb * 6 * 4, cudaMemcpyDeviceToHost, s), what, st, fail);
  {
    /* active indices: select the flagged positions */
    /* the selected count goes after the indices, at an 8-byte aligned place */
    int64_t n_even = (n_in + 1) & ~(int64_t)1;
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&active, (size_t)n_even * 4 + 8), st, fail);
    int64_t *d_count = (int64_t *)(active + n_even);
    thrust::counting_iterator<uint32_t> it(0);
    RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(NULL, temp_bytes, it, flags, active, d_count, n_in, s), what, st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, fail);
    RDX_CUDA_GOTO(ctx, cub::DeviceSelect::Flagged(temp, temp_bytes, it, flags, active, d_count, n_in, s), what, st, fail);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&n, d_count, 8, cudaMemcpyDeviceToHost, s), what, st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
    rdx_mem_free(ctx, temp);
    temp = NULL;
    temp_bytes = 0;
  }
  rdx_mem_free(ctx, flags);
  flags = NULL;
  rdx_mem_free(ctx, partial);
  partial = NULL;
  out->n_prims = n;
  if (n == 0) goto done;
  {
    float cb[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (unsigned b = 0; b < gb; b++)
      for (int a = 0; a < 3; a++) {
        cb[a] = fminf(cb[a], hp[b * 6 + a]);
        cb[3 + a] = fmaxf(cb[3 + a], hp[b * 6 + 3 + a]);
      }
    frame f;
    rdx_bvh_code_frame(cb, f.lo, f.scale);
    /* 2, 3: codes, sort */
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&codes, (size_t)n * 8), st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&codes2, (size_t)n * 8), st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&idx, (size_t)n * 4), st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&idx2, (size_t)n * 4), st, fail);
    codes_kernel<<<grid_for(n), TPB, 0, s>>>(kind, prims, active, n, user, f, codes, idx);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: codes kernel", st, fail);
    rdx_mem_free(ctx, active);
    active = NULL;
    cub::DoubleBuffer<uint64_t> kb(codes, codes2);
    cub::DoubleBuffer<uint32_t> vb(idx, idx2);
    int end_bit = user ? 64 : 63;
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, kb, vb, n, 0, end_bit, s), what, st, fail);
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, fail);
    RDX_CUDA_GOTO(ctx, cub::DeviceRadixSort::SortPairs(temp, temp_bytes, kb, vb, n, 0, end_bit, s), "rdx_bvh_build: sort",
                  st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
    rdx_mem_free(ctx, temp);
    temp = NULL;
    temp_bytes = 0;
    if (kb.Current() != codes) {
      uint64_t *t = codes;
      codes = codes2;
      codes2 = t;
    }
    if (vb.Current() != idx) {
      uint32_t *t = idx;
      idx = idx2;
      idx2 = t;
    }
    rdx_mem_free(ctx, codes2);
    rdx_mem_free(ctx, idx2);
    codes2 = NULL;
    idx2 = NULL;

    /* leaf-ordered primitives */
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->prims, (size_t)n * w * 4, RDX_DEVICE), st, fail);
    RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->ids, (size_t)n * 4, RDX_DEVICE), st, fail);
    gather_kernel<<<grid_for(n), TPB, 0, s>>>(kind, prims, idx, n, out->prims, out->ids);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: gather kernel", st, fail);
    rdx_mem_free(ctx, idx);
    idx = NULL;

    rdx_bvh_node root;
    if (n <= RDX_RT_LEAF_MAX) {
      memset(&root, 0, sizeof root);
      root.child[0] = 0;
      root.count[0] = (uint32_t)n;
      root.child[1] = RDX_BVH_NONE;
      root.count[1] = 0;
      for (int a = 0; a < 3; a++) root.box[1][a] = INFINITY, root.box[1][3 + a] = -INFINITY;
      float hprims[9 * RDX_RT_LEAF_MAX];
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(hprims, out->prims, (size_t)n * w * 4, cudaMemcpyDeviceToHost, s), what, st, fail);
      RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
      rdx_lbvh_leaf_box(kind, hprims, 0, (uint32_t)n, root.box[0]);
      out->n_nodes = 1;
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->nodes, sizeof root, RDX_DEVICE), st, fail);
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(out->nodes, &root, sizeof root, cudaMemcpyHostToDevice, s), what, st, fail);
    } else {
      /* 4: radix tree; 5: collapse and renumber; 6: boxes */
      int64_t n_int = n - 1;
      RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&tree, (size_t)n_int * sizeof(rdx_lbvh_node)), st, fail);
      RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&kept, (size_t)n_int * 4), st, fail);
      RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&newidx, (size_t)n_int * 4), st, fail);
      internal_kernel<<<grid_for(n_int), TPB, 0, s>>>(codes, n, tree);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: internal kernel", st, fail);
      kept_kernel<<<grid_for(n_int), TPB, 0, s>>>(tree, n_int, kept);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: kept kernel", st, fail);
      RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, kept, newidx, n_int, s), what, st, fail);
      RDX_CHECK_GOTO(rdx_scratch(ctx, what, &temp, temp_bytes), st, fail);
      RDX_CUDA_GOTO(ctx, cub::DeviceScan::ExclusiveSum(temp, temp_bytes, kept, newidx, n_int, s), what, st, fail);
      uint32_t last[2];
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last[0], newidx + n_int - 1, 4, cudaMemcpyDeviceToHost, s), what, st, fail);
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&last[1], kept + n_int - 1, 4, cudaMemcpyDeviceToHost, s), what, st, fail);
      RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), what, st, fail);
      rdx_mem_free(ctx, temp);
      temp = NULL;
      int64_t total = (int64_t)last[0] + last[1];
      out->n_nodes = total;
      RDX_CHECK_GOTO(rdx_mem_alloc(ctx, what, (void **)&out->nodes, (size_t)total * sizeof(rdx_bvh_node), RDX_DEVICE), st,
                     fail);
      RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&parent, (size_t)total * 12), st, fail);
      RDX_CUDA_GOTO(ctx, cudaMemsetAsync(parent + 2 * total, 0, (size_t)total * 4, s), what, st, fail);
      emit_kernel<<<grid_for(n_int), TPB, 0, s>>>(tree, newidx, n_int, out->nodes, parent, parent + total);
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: emit kernel", st, fail);
      refit_kernel<<<grid_for(total), TPB, 0, s>>>(kind, out->prims, out->nodes, total, parent, parent + total,
                                                   (unsigned *)(parent + 2 * total));
      RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: refit kernel", st, fail);
      RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&root, out->nodes, sizeof root, cudaMemcpyDeviceToHost, s), what, st, fail);
    }
    RDX_CHECK_GOTO(rdx_scratch(ctx, what, (void **)&found, 4), st, fail);
    RDX_CUDA_GOTO(ctx, cudaMemsetAsync(found, 0, 4, s), what, st, fail);
    coincident_kernel<<<grid_for(n), TPB, 0, s>>>(kind, out->prims, codes, n, found);
    RDX_CUDA_GOTO(ctx, cudaGetLastError(), "rdx_bvh_build: coincident kernel", st, fail);
    RDX_CUDA_GOTO(ctx, cudaMemcpyAsync(&out->coincident, found, 4, cudaMemcpyDeviceToHost, s), what, st, fail);
    RDX_CUDA_GOTO(ctx, cudaStreamSynchronize(s), "rdx_bvh_build", st, fail);
    float rb[6];
    rdx_lbvh_union(root.box[0], root.box[1], rb);
    for (int a = 0; a < 3; a++) out->lo[a] = rb[a], out->hi[a] = rb[3 + a];
  }
done:
  rdx_mem_free(ctx, found);
  rdx_mem_free(ctx, tree);
  rdx_mem_free(ctx, kept);
  rdx_mem_free(ctx, newidx);
  rdx_mem_free(ctx, parent);
  rdx_mem_free(ctx, codes);
  /* 7: the BVH4 */
  if (width == 4 && (st = rdx_bvh_collapse_cuda(ctx, out)) != RDX_OK) {
    rdx_bvh_free(ctx, out);
    return st;
  }
  return RDX_OK;
fail:
  rdx_mem_free(ctx, found);
  rdx_mem_free(ctx, temp);
  rdx_mem_free(ctx, flags);
  rdx_mem_free(ctx, partial);
  rdx_mem_free(ctx, active);
  rdx_mem_free(ctx, codes);
  rdx_mem_free(ctx, codes2);
  rdx_mem_free(ctx, idx);
  rdx_mem_free(ctx, idx2);
  rdx_mem_free(ctx, tree);
  rdx_mem_free(ctx, kept);
  rdx_mem_free(ctx, newidx);
  rdx_mem_free(ctx, parent);
  rdx_bvh_free(ctx, out);
  return st;
}
