/*
 * bvh.cu: the LBVH build on the GPU, the steps of bvh_hd.h as kernels, so the tree equals the CPU
 * build's bit for bit (same codes, same stable (code, index) order, same exact box unions).
 *
 * Kernels run on the context's stream; scratch comes from the account. The (code, index) sort is
 * CUB's radix sort (stable, indices ascending on entry), the renumbering a CUB exclusive scan, the
 * box pass Karras's bottom-up walk with one atomic counter per node.
 */
#include <string.h>

#include <utility>

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

/* A build's scratch, released together whatever step fails (rdx_mem_free takes NULL). */
struct build_scratch {
  uint32_t *flags, *active, *idx, *idx2, *kept, *newidx, *parent;
  uint64_t *codes, *codes2;
  float *partial;
  rdx_lbvh_node *tree;
  void *temp;
  size_t temp_bytes;
  int *found;
};

void release(rdx_context *ctx, build_scratch *b) {
  void *all[] = {b->flags, b->active, b->idx,   b->idx2,    b->kept, b->newidx, b->parent,
                 b->codes, b->codes2, b->partial, b->tree, b->temp,  b->found};
  for (void *p : all) rdx_mem_free(ctx, p);
  memset(b, 0, sizeof *b);
}

const char build_what[] = "rdx_bvh_build";

/* Step 1: boxes, active flags, the centroid box cb; b->active gets the active input indices and
 * *n their number. */
rdx_status select_active(rdx_context *ctx, build_scratch *b, int kind, const float *prims, int64_t n_in, float *cb,
                         int64_t *n) {
  const char *what = build_what;
  cudaStream_t s = rdx_stream(ctx);
  unsigned gb = rdx_grid(n_in, TPB) < 1024 ? rdx_grid(n_in, TPB) : 1024;
  float hp[6 * 1024];
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->flags, (size_t)n_in * 4));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->partial, (size_t)gb * 6 * 4));
  boxes_kernel<<<gb, TPB, 0, s>>>(kind, prims, n_in, b->flags, b->partial);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: boxes kernel");
  RDX_CUDA(ctx, cudaMemcpyAsync(hp, b->partial, (size_t)gb * 6 * 4, cudaMemcpyDeviceToHost, s), what);
  /* the selected count goes after the indices, at an 8-byte aligned place */
  int64_t n_even = (n_in + 1) & ~(int64_t)1;
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->active, (size_t)n_even * 4 + 8));
  int64_t *d_count = (int64_t *)(b->active + n_even);
  thrust::counting_iterator<uint32_t> it(0);
  RDX_CUDA(ctx, cub::DeviceSelect::Flagged(NULL, b->temp_bytes, it, b->flags, b->active, d_count, n_in, s), what);
  RDX_CHECK(rdx_scratch(ctx, what, &b->temp, b->temp_bytes));
  RDX_CUDA(ctx, cub::DeviceSelect::Flagged(b->temp, b->temp_bytes, it, b->flags, b->active, d_count, n_in, s), what);
  RDX_CUDA(ctx, cudaMemcpyAsync(n, d_count, 8, cudaMemcpyDeviceToHost, s), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
  rdx_mem_free(ctx, b->temp), b->temp = NULL, b->temp_bytes = 0;
  rdx_mem_free(ctx, b->flags), b->flags = NULL;
  rdx_mem_free(ctx, b->partial), b->partial = NULL;
  for (int a = 0; a < 3; a++) cb[a] = INFINITY, cb[3 + a] = -INFINITY;
  for (unsigned g = 0; g < gb; g++)
    for (int a = 0; a < 3; a++) {
      cb[a] = fminf(cb[a], hp[g * 6 + a]);
      cb[3 + a] = fmaxf(cb[3 + a], hp[g * 6 + 3 + a]);
    }
  return RDX_OK;
}

/* Steps 2 and 3: the n active primitives' codes (the caller's, or Morton codes in the centroid
 * box's frame), sorted with their indices into b->codes and b->idx. */
rdx_status sort_codes(rdx_context *ctx, build_scratch *b, int kind, const float *prims, int64_t n,
                      const uint64_t *user, const float *cb) {
  const char *what = build_what;
  cudaStream_t s = rdx_stream(ctx);
  frame f;
  rdx_bvh_code_frame(cb, f.lo, f.scale);
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->codes, (size_t)n * 8));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->codes2, (size_t)n * 8));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->idx, (size_t)n * 4));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->idx2, (size_t)n * 4));
  codes_kernel<<<grid_for(n), TPB, 0, s>>>(kind, prims, b->active, n, user, f, b->codes, b->idx);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: codes kernel");
  rdx_mem_free(ctx, b->active), b->active = NULL;
  cub::DoubleBuffer<uint64_t> kb(b->codes, b->codes2);
  cub::DoubleBuffer<uint32_t> vb(b->idx, b->idx2);
  int end_bit = user ? 64 : 63;
  RDX_CUDA(ctx, cub::DeviceRadixSort::SortPairs(NULL, b->temp_bytes, kb, vb, n, 0, end_bit, s), what);
  RDX_CHECK(rdx_scratch(ctx, what, &b->temp, b->temp_bytes));
  RDX_CUDA(ctx, cub::DeviceRadixSort::SortPairs(b->temp, b->temp_bytes, kb, vb, n, 0, end_bit, s), "rdx_bvh_build: sort");
  RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
  rdx_mem_free(ctx, b->temp), b->temp = NULL, b->temp_bytes = 0;
  if (kb.Current() != b->codes) std::swap(b->codes, b->codes2);
  if (vb.Current() != b->idx) std::swap(b->idx, b->idx2);
  rdx_mem_free(ctx, b->codes2), b->codes2 = NULL;
  rdx_mem_free(ctx, b->idx2), b->idx2 = NULL;
  return RDX_OK;
}

/* The tree over the n sorted primitives: leaf-ordered copies, then (n > RDX_RT_LEAF_MAX) steps 4
 * to 6, radix tree, collapse and renumber, boxes. *root receives node 0 (on the host once the
 * stream is synchronized). */
rdx_status make_tree(rdx_context *ctx, build_scratch *b, int kind, const float *prims, int64_t n, rdx_bvh *out,
                     rdx_bvh_node *root) {
  const char *what = build_what;
  cudaStream_t s = rdx_stream(ctx);
  const int w = kind == RDX_RT_TRIANGLES ? 9 : 6;
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&out->prims, (size_t)n * w * 4, RDX_DEVICE));
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&out->ids, (size_t)n * 4, RDX_DEVICE));
  gather_kernel<<<grid_for(n), TPB, 0, s>>>(kind, prims, b->idx, n, out->prims, out->ids);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: gather kernel");
  rdx_mem_free(ctx, b->idx), b->idx = NULL;
  if (n <= RDX_RT_LEAF_MAX) {
    memset(root, 0, sizeof *root);
    root->child[0] = 0;
    root->count[0] = (uint32_t)n;
    root->child[1] = RDX_BVH_NONE;
    root->count[1] = 0;
    for (int a = 0; a < 3; a++) root->box[1][a] = INFINITY, root->box[1][3 + a] = -INFINITY;
    float hprims[9 * RDX_RT_LEAF_MAX];
    RDX_CUDA(ctx, cudaMemcpyAsync(hprims, out->prims, (size_t)n * w * 4, cudaMemcpyDeviceToHost, s), what);
    RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
    rdx_lbvh_leaf_box(kind, hprims, 0, (uint32_t)n, root->box[0]);
    out->n_nodes = 1;
    RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&out->nodes, sizeof *root, RDX_DEVICE));
    RDX_CUDA(ctx, cudaMemcpyAsync(out->nodes, root, sizeof *root, cudaMemcpyHostToDevice, s), what);
    return RDX_OK;
  }
  int64_t n_int = n - 1;
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->tree, (size_t)n_int * sizeof(rdx_lbvh_node)));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->kept, (size_t)n_int * 4));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->newidx, (size_t)n_int * 4));
  internal_kernel<<<grid_for(n_int), TPB, 0, s>>>(b->codes, n, b->tree);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: internal kernel");
  kept_kernel<<<grid_for(n_int), TPB, 0, s>>>(b->tree, n_int, b->kept);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: kept kernel");
  RDX_CUDA(ctx, cub::DeviceScan::ExclusiveSum(NULL, b->temp_bytes, b->kept, b->newidx, n_int, s), what);
  RDX_CHECK(rdx_scratch(ctx, what, &b->temp, b->temp_bytes));
  RDX_CUDA(ctx, cub::DeviceScan::ExclusiveSum(b->temp, b->temp_bytes, b->kept, b->newidx, n_int, s), what);
  uint32_t last[2];
  RDX_CUDA(ctx, cudaMemcpyAsync(&last[0], b->newidx + n_int - 1, 4, cudaMemcpyDeviceToHost, s), what);
  RDX_CUDA(ctx, cudaMemcpyAsync(&last[1], b->kept + n_int - 1, 4, cudaMemcpyDeviceToHost, s), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
  rdx_mem_free(ctx, b->temp), b->temp = NULL, b->temp_bytes = 0;
  int64_t total = (int64_t)last[0] + last[1];
  out->n_nodes = total;
  RDX_CHECK(rdx_mem_alloc(ctx, what, (void **)&out->nodes, (size_t)total * sizeof(rdx_bvh_node), RDX_DEVICE));
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->parent, (size_t)total * 12));
  RDX_CUDA(ctx, cudaMemsetAsync(b->parent + 2 * total, 0, (size_t)total * 4, s), what);
  emit_kernel<<<grid_for(n_int), TPB, 0, s>>>(b->tree, b->newidx, n_int, out->nodes, b->parent, b->parent + total);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: emit kernel");
  refit_kernel<<<grid_for(total), TPB, 0, s>>>(kind, out->prims, out->nodes, total, b->parent, b->parent + total,
                                               (unsigned *)(b->parent + 2 * total));
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: refit kernel");
  RDX_CUDA(ctx, cudaMemcpyAsync(root, out->nodes, sizeof *root, cudaMemcpyDeviceToHost, s), what);
  return RDX_OK;
}

/* Whether two primitives share a box (out->coincident), and the tree's box from its root. */
rdx_status finish(rdx_context *ctx, build_scratch *b, int kind, int64_t n, const rdx_bvh_node *root, rdx_bvh *out) {
  const char *what = build_what;
  cudaStream_t s = rdx_stream(ctx);
  RDX_CHECK(rdx_scratch(ctx, what, (void **)&b->found, 4));
  RDX_CUDA(ctx, cudaMemsetAsync(b->found, 0, 4, s), what);
  coincident_kernel<<<grid_for(n), TPB, 0, s>>>(kind, out->prims, b->codes, n, b->found);
  RDX_CUDA(ctx, cudaGetLastError(), "rdx_bvh_build: coincident kernel");
  RDX_CUDA(ctx, cudaMemcpyAsync(&out->coincident, b->found, 4, cudaMemcpyDeviceToHost, s), what);
  RDX_CUDA(ctx, cudaStreamSynchronize(s), what);
  float rb[6];
  rdx_lbvh_union(root->box[0], root->box[1], rb);
  for (int a = 0; a < 3; a++) out->lo[a] = rb[a], out->hi[a] = rb[3 + a];
  return RDX_OK;
}

}  // namespace

extern "C" rdx_status rdx_bvh_build_cuda(rdx_context *ctx, int kind, const float *prims, int64_t n_in,
                                         const rdx_bvh_options *opts, rdx_bvh *out) {
  memset(out, 0, sizeof *out);
  out->kind = kind;
  out->n_input = n_in;
  for (int a = 0; a < 3; a++) out->lo[a] = INFINITY, out->hi[a] = -INFINITY;
  if (n_in >= (int64_t)UINT32_MAX)
    return rdx_fail(ctx, RDX_ERR_INVALID_ARGUMENT, "%s: %lld primitives exceed 2^32 - 1", build_what, (long long)n_in);
  int width = 4;
  RDX_CHECK(rdx_bvh_width(ctx, opts, &width));
  out->width = width;
  if (n_in == 0) return RDX_OK;
  build_scratch b;
  memset(&b, 0, sizeof b);
  float cb[6];
  int64_t n = 0;
  rdx_bvh_node root;
  rdx_status st = select_active(ctx, &b, kind, prims, n_in, cb, &n);
  out->n_prims = n;
  if (st == RDX_OK && n > 0) st = sort_codes(ctx, &b, kind, prims, n, opts ? opts->codes : NULL, cb);
  if (st == RDX_OK && n > 0) st = make_tree(ctx, &b, kind, prims, n, out, &root);
  if (st == RDX_OK && n > 0) st = finish(ctx, &b, kind, n, &root, out);
  release(ctx, &b);
  /* 7: the BVH4 */
  if (st == RDX_OK && n > 0 && width == 4) st = rdx_bvh_collapse_cuda(ctx, out);
  if (st != RDX_OK) rdx_bvh_free(ctx, out);
  return st;
}
