/*
 * scan.cu: the input scan on the GPU (see rdx_sp_scan_cpu in cpu_util.c for the contract): every
 * value finite, radii >= 0, points inside the box, and the bounding box of columns 0 and 1.
 *
 * One pass; each thread keeps its own minima, maxima and first bad row, a warp combines them with
 * shuffles, and lane 0 publishes with 64-bit atomics on order-preserving images of the doubles
 * (atomicMin/atomicMax on unsigned long long), so the result does not depend on scheduling.
 */
#include "spatial/sp_cuda.cuh"

namespace {

using namespace rdx_sp;

struct scan_out {
  unsigned long long bad;      /* row * 4 + what, minimum */
  unsigned long long lo[2];    /* order bits of the minima */
  unsigned long long hi[2];    /* order bits of the maxima */
};

template <typename T>
__global__ void scan_kernel(const T *data, int64_t rows, int cols, int radius_col, int use_box, double bx0, double by0,
                            double bx1, double by1, scan_out *out) {
  unsigned long long bad = ~0ull, lo0 = ~0ull, lo1 = ~0ull, hi0 = 0, hi1 = 0;
  SP_FOR(r, rows) {
    int what = 0;
    for (int c = 0; c < cols; c++) {
      double v = (double)data[r * cols + c];
      if (!isfinite(v)) what = 1;
      else if (c == radius_col && v < 0 && what == 0) what = 3;
    }
    double x = (double)data[r * cols], y = (double)data[r * cols + 1];
    if (what == 0 && use_box && !(bx0 <= x && x <= bx1 && by0 <= y && y <= by1)) what = 2;
    if (what) {
      unsigned long long k = (unsigned long long)r * 4 + (unsigned long long)what;
      if (k < bad) bad = k;
      continue;
    }
    unsigned long long ox = order_bits(x), oy = order_bits(y);
    lo0 = ox < lo0 ? ox : lo0;
    lo1 = oy < lo1 ? oy : lo1;
    hi0 = ox > hi0 ? ox : hi0;
    hi1 = oy > hi1 ? oy : hi1;
  }
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long t;
    t = __shfl_xor_sync(0xffffffffu, bad, o), bad = t < bad ? t : bad;
    t = __shfl_xor_sync(0xffffffffu, lo0, o), lo0 = t < lo0 ? t : lo0;
    t = __shfl_xor_sync(0xffffffffu, lo1, o), lo1 = t < lo1 ? t : lo1;
    t = __shfl_xor_sync(0xffffffffu, hi0, o), hi0 = t > hi0 ? t : hi0;
    t = __shfl_xor_sync(0xffffffffu, hi1, o), hi1 = t > hi1 ? t : hi1;
  }
  if ((threadIdx.x & 31) == 0) {
    if (bad != ~0ull) atomicMin(&out->bad, bad);
    atomicMin(&out->lo[0], lo0);
    atomicMin(&out->lo[1], lo1);
    atomicMax(&out->hi[0], hi0);
    atomicMax(&out->hi[1], hi1);
  }
}

}  // namespace

extern "C" rdx_status rdx_sp_scan_cuda(rdx_context *ctx, const void *data, int f64, int64_t rows, int cols,
                                       const double *box, int radius_col, rdx_sp_scan *out) {
  out->bad_row = -1;
  out->bad_what = 0;
  out->box[0] = out->box[1] = out->box[2] = out->box[3] = 0;
  if (rows == 0) return RDX_OK;
  scratch m(ctx);
  scan_out *d = nullptr;
  RDX_CHECK(m.get(&d, 1, "rdx_points: scan"));
  scan_out h;
  h.bad = ~0ull;
  h.lo[0] = h.lo[1] = ~0ull;
  h.hi[0] = h.hi[1] = 0;
  RDX_CHECK(to_device(ctx, d, &h, 1, "rdx_points: scan"));
  cudaStream_t s = rdx_stream(ctx);
  unsigned grid = blocks_for(rows, 256);
  if (grid > 4096) grid = 4096;
  double b[4] = {0, 0, 0, 0};
  if (box) b[0] = box[0], b[1] = box[1], b[2] = box[2], b[3] = box[3];
  if (f64)
    scan_kernel<double><<<grid, 256, 0, s>>>((const double *)data, rows, cols, radius_col, box != nullptr, b[0], b[1], b[2],
                                             b[3], d);
  else
    scan_kernel<float><<<grid, 256, 0, s>>>((const float *)data, rows, cols, radius_col, box != nullptr, b[0], b[1], b[2],
                                            b[3], d);
  SP_LAUNCH_CHECK(ctx, "rdx_points: scan kernel");
  RDX_CHECK(to_host(ctx, &h, d, 1, "rdx_points: scan"));
  if (h.bad != ~0ull) {
    out->bad_row = (int64_t)(h.bad / 4);
    out->bad_what = (int)(h.bad % 4);
    return RDX_OK;
  }
  out->box[0] = from_order_bits(h.lo[0]);
  out->box[1] = from_order_bits(h.lo[1]);
  out->box[2] = from_order_bits(h.hi[0]);
  out->box[3] = from_order_bits(h.hi[1]);
  for (int c = 0; c < 4; c++)
    if (out->box[c] == 0.0) out->box[c] = 0.0;
  return RDX_OK;
}
