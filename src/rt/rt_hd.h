/*
 * rt_hd.h: the ray-tracing engine's per-ray logic, written once for the CPU, for CUDA and (the
 * parts an OptiX program needs) for OptiX device code: the BVH node layout, the ray/box and
 * ray/triangle tests, and the stack traversal, instantiated per hit program by macros (the C
 * form of a template; DESIGN.md §4 asks for a closed set of hit programs, not function pointers).
 *
 * Precision rules (what the soft traversal promises):
 *  - The triangle test is the watertight test of Woop, Benthin and Wald (JCGT 2(1), 2013): shear
 *    into a ray-aligned space, 2-D edge functions U, V, W in float, recomputed in double when one
 *    is zero, a hit when all three share a sign (edges and vertices count, as in the paper). The
 *    hit distance T/det is evaluated in double from the float edge functions, and a hit needs
 *    tmin < t < tmax: both ends are exclusive, as the RX paper (Section 3.2, footnote 2) relies on
 *    and as the DirectX ray-tracing specification states for hardware triangles.
 *  - For the rays RX and cgRX fire (axis-aligned, direction exactly +x, +y or +z) and triangles
 *    whose coordinates lie on their mapping's half-step grid (x in units of 1/2, scaled y and z in
 *    units of 2^14 and 2^24, each coordinate below 2^24 units), every quantity above is exact:
 *    the shear factors are 0 and 1, the translated coordinates are differences of grid values,
 *    the edge functions are products of half steps, and T/det is the exact distance to the plane.
 *    So the soft test answers exactly what the real-number geometry says; tests/test_rt_bvh.c
 *    checks this on every layout the key indexes emit.
 *  - Box tests are conservative (never reject a box that an exact ray meets): the axis-aligned
 *    path compares in t-space with monotone rounding; the general path widens tfar by 2 gamma(3)
 *    (Ize, "Robust BVH ray traversal", JCGT 2013) and treats a zero direction component exactly.
 *  - Device code uses __fmul_rn-style intrinsics so that nvcc never contracts a*b+c into an FMA:
 *    the CPU and CUDA traversals then compute bit-identical hits.
 *  - Front face, as OptiX defines it (counter-clockwise winding seen from the ray origin in a
 *    right-handed space): (v1 - v0) x (v2 - v0) points against the ray direction. In Woop's
 *    formulation that is det = U + V + W > 0 (the shear has a positive determinant).
 */
#ifndef RDX_RT_HD_H
#define RDX_RT_HD_H

#include <math.h>
#include <stdint.h>

#include "core/core.h"

#if defined(__CUDA_ARCH__)
#define RDX_FMUL(a, b) __fmul_rn((a), (b))
#define RDX_FADD(a, b) __fadd_rn((a), (b))
#define RDX_FSUB(a, b) __fsub_rn((a), (b))
#define RDX_DMUL(a, b) __dmul_rn((a), (b))
#define RDX_DADD(a, b) __dadd_rn((a), (b))
#define RDX_DSUB(a, b) __dsub_rn((a), (b))
#else
#define RDX_FMUL(a, b) ((a) * (b))
#define RDX_FADD(a, b) ((a) + (b))
#define RDX_FSUB(a, b) ((a) - (b))
#define RDX_DMUL(a, b) ((a) * (b))
#define RDX_DADD(a, b) ((a) + (b))
#define RDX_DSUB(a, b) ((a) - (b))
#endif

/* Leaves hold up to this many primitives: two fewer levels than one per leaf for the same
 * number of box tests per leaf visit (one triangle is 36 bytes, a node 64). */
#define RDX_RT_LEAF_MAX 4
/* Traversal stack entries. The LBVH depth is at most 64 + 32 (code bits plus the index bits that
 * break ties), and a stack holds at most one entry per level. */
#define RDX_RT_STACK 96
/* child[] value of a missing child (the root of a tree of one leaf). */
#define RDX_BVH_NONE 0xFFFFFFFFu

/* Primitive kinds of a scene. */
typedef enum rdx_rt_prim_kind {
  RDX_RT_TRIANGLES = 1,  /* 9 floats per primitive: v0, v1, v2 */
  RDX_RT_AABBS = 2       /* 6 floats per primitive: lo x, y, z, hi x, y, z; custom intersection */
} rdx_rt_prim_kind;

/* One BVH2 node, 64 bytes, both children's boxes inline (Aila and Laine 2009) so a visit costs
 * one cache line and tests two boxes. As 32-bit words:
 *
 *   word  0..5    box of child 0: lo x, lo y, lo z, hi x, hi y, hi z
 *   word  6..11   box of child 1
 *   word 12, 13   child[0], child[1]: internal node index, or first leaf slot, or RDX_BVH_NONE
 *   word 14, 15   count[0], count[1]: 0 = internal node, 1..RDX_RT_LEAF_MAX = leaf of that size
 *
 * Leaf slots index the leaf-ordered primitive arrays (prims, ids) of the tree. */
typedef struct rdx_bvh_node {
  float box[2][6];
  uint32_t child[2];
  uint32_t count[2];
} rdx_bvh_node;

/* One BVH4 node, 128 bytes (one GPU L1 line, two CPU lines, eight 16-byte loads): up to four
 * children with their boxes inline, structure of arrays so that one slot's box is the same word
 * of six rows. As 32-bit words:
 *
 *   word  0..11   lo[axis][slot]: lo x of slots 0..3, lo y of slots 0..3, lo z of slots 0..3
 *   word 12..23   hi[axis][slot]
 *   word 24..27   child[slot]: BVH4 node index, or first leaf slot, or RDX_BVH_NONE (empty slot)
 *   word 28..31   count[slot]: 0 = internal node, 1..RDX_RT_LEAF_MAX = leaf of that size
 *
 * The wide tree is the binary tree with every other level removed (bvh_hd.h, step 7): the same
 * leaves and the same boxes, copied bit for bit, so every box test answers as on the binary tree.
 * It halves the dependent node loads of a root-to-leaf path (Wald et al., "Getting rid of packets",
 * 2008; Ylitie et al., "Efficient incoherent ray traversal on GPUs through compressed wide BVHs",
 * HPG 2017, who collapse a binary tree the same way but by SAH). Empty slots have lo = +inf,
 * hi = -inf and child = RDX_BVH_NONE. */
#define RDX_BVH4_WIDTH 4
typedef struct rdx_bvh4_node {
  float lo[3][4];
  float hi[3][4];
  uint32_t child[4];
  uint32_t count[4];
} rdx_bvh4_node;

/* Traversal stack of the BVH4: a wide level pushes at most three entries and the BVH4 has at most
 * half the binary depth (48 levels), so 144 entries never overflow. */
#define RDX_RT_STACK4 144

/* What a traversal needs, in the memory of the code that traverses (host or device). Exactly one
 * of nodes (binary tree) and nodes4 (BVH4) is set for a non-empty tree. */
typedef struct rdx_bvh_view {
  const rdx_bvh_node *nodes; /* node 0 is the root; NULL when the tree is empty or wide */
  const rdx_bvh4_node *nodes4; /* BVH4 nodes, root 0; NULL when the tree is empty or binary */
  const float *prims;        /* leaf order: 9 (triangles) or 6 (boxes) floats per primitive */
  const uint32_t *ids;       /* leaf order: the primitive's index in the scene's input */
  int64_t n_prims;           /* primitives in the tree (inactive inputs excluded) */
  int kind;                  /* rdx_rt_prim_kind */
} rdx_bvh_view;

/* A ray: points o + t d for tmin < t < tmax (triangles; boxes and custom primitives decide their
 * own ends). */
typedef struct rdx_ray {
  float o[3];
  float d[3];
  float tmin, tmax;
} rdx_ray;

/* Per-ray constants of the traversal and the triangle test. */
typedef struct rdx_ray_pre {
  int axis;         /* 0, 1, 2 when d is exactly +x, +y, +z; -1 otherwise */
  int kx, ky, kz;   /* Woop's axis permutation */
  float sx, sy, sz; /* shear */
  float inv[3];     /* 1 / d (inf for 0) for the general box test */
} rdx_ray_pre;

/* Element k (0..2, not a constant) of a three-element array by selects: GPU code indexing a small
 * array at run time keeps it in local memory (a stack frame behind the L1), and the box and
 * triangle tests below pick their axes at run time, once per node or triangle. */
#define RDX_SEL3(a, k) ((k) == 0 ? (a)[0] : (k) == 1 ? (a)[1] : (a)[2])

RDX_HD void rdx_ray_prepare(const rdx_ray *r, rdx_ray_pre *p) {
  p->axis = -1;
  if (r->d[0] == 1.0f && r->d[1] == 0.0f && r->d[2] == 0.0f) p->axis = 0;
  if (r->d[0] == 0.0f && r->d[1] == 1.0f && r->d[2] == 0.0f) p->axis = 1;
  if (r->d[0] == 0.0f && r->d[1] == 0.0f && r->d[2] == 1.0f) p->axis = 2;
  float ax = fabsf(r->d[0]), ay = fabsf(r->d[1]), az = fabsf(r->d[2]);
  int kz = ax >= ay ? (ax >= az ? 0 : 2) : (ay >= az ? 1 : 2);
  int kx = kz == 2 ? 0 : kz + 1;
  int ky = kx == 2 ? 0 : kx + 1;
  const float dz = RDX_SEL3(r->d, kz);
  if (dz < 0.0f) { /* keep the winding: swap two axes when the ray points down kz */
    int t = kx;
    kx = ky;
    ky = t;
  }
  p->kx = kx;
  p->ky = ky;
  p->kz = kz;
  p->sx = RDX_SEL3(r->d, kx) / dz;
  p->sy = RDX_SEL3(r->d, ky) / dz;
  p->sz = 1.0f / dz;
  for (int i = 0; i < 3; i++) p->inv[i] = 1.0f / r->d[i];
}

/* Ray/box overlap over [tmin, tmax], conservative (see the file comment). lo/hi: 3 floats.
 * *tnear receives a lower bound of where the ray enters the box (>= tmin), so a traversal can skip
 * a stacked box once a closer hit has shrunk tmax below it. */
RDX_HD int rdx_rt_box_near(const float *lo, const float *hi, const rdx_ray *r, const rdx_ray_pre *p, float tmin,
                           float tmax, float *tnear) {
  if (p->axis >= 0) {
    const int a = p->axis, b = a == 0 ? 1 : 0, c = a == 2 ? 1 : 2;
    const float ob = RDX_SEL3(r->o, b), oc = RDX_SEL3(r->o, c), oa = RDX_SEL3(r->o, a);
    if (!(RDX_SEL3(lo, b) <= ob && ob <= RDX_SEL3(hi, b) && RDX_SEL3(lo, c) <= oc && oc <= RDX_SEL3(hi, c))) return 0;
    /* rounding is monotone, so exact >= tmin implies rounded >= tmin (and so on) */
    float t0 = RDX_FSUB(RDX_SEL3(lo, a), oa);
    *tnear = t0 > tmin ? t0 : tmin;
    return RDX_FSUB(RDX_SEL3(hi, a), oa) >= tmin && t0 <= tmax;
  }
  float tn = tmin, tf = tmax;
  for (int i = 0; i < 3; i++) {
    if (r->d[i] == 0.0f) {
      if (!(lo[i] <= r->o[i] && r->o[i] <= hi[i])) return 0;
      continue;
    }
    float t0 = RDX_FMUL(RDX_FSUB(lo[i], r->o[i]), p->inv[i]);
    float t1 = RDX_FMUL(RDX_FSUB(hi[i], r->o[i]), p->inv[i]);
    if (t0 > t1) {
      float s = t0;
      t0 = t1;
      t1 = s;
    }
    t1 = RDX_FMUL(t1, 1.0000003576f); /* 1 + 2 gamma(3), gamma(n) = n eps / (1 - n eps) */
    t0 = RDX_FMUL(t0, t0 > 0.0f ? 0.9999996424f : 1.0000003576f); /* and the entry lowered likewise */
    if (t0 > tn) tn = t0;
    if (t1 < tf) tf = t1;
    if (!(tn <= tf)) return 0;
  }
  *tnear = tn;
  return 1;
}

RDX_HD int rdx_rt_box_hit(const float *lo, const float *hi, const rdx_ray *r, const rdx_ray_pre *p, float tmin,
                          float tmax) {
  float tn;
  return rdx_rt_box_near(lo, hi, r, p, tmin, tmax, &tn);
}

/* Entry distance of a ray into a box (max(tmin, slab entry)); for the generic AABB program. */
RDX_HD float rdx_rt_box_entry(const float *lo, const float *hi, const rdx_ray *r, const rdx_ray_pre *p,
                              float tmin) {
  float tn = tmin;
  for (int i = 0; i < 3; i++) {
    if (r->d[i] == 0.0f) continue;
    float t0 = RDX_FMUL(RDX_FSUB(lo[i], r->o[i]), p->inv[i]);
    float t1 = RDX_FMUL(RDX_FSUB(hi[i], r->o[i]), p->inv[i]);
    float n = t0 < t1 ? t0 : t1;
    if (n > tn) tn = n;
  }
  return tn;
}

/* Watertight ray/triangle test (see the file comment). v: 9 floats. On a hit with
 * tmin < t < tmax, sets *t and *front and returns 1. */
RDX_HD int rdx_rt_tri_hit(const float *v, const rdx_ray *r, const rdx_ray_pre *p, float tmin, float tmax,
                          float *t_out, int *front) {
  int kx = p->kx, ky = p->ky, kz = p->kz;
  float A[3], B[3], C[3];
  for (int i = 0; i < 3; i++) {
    A[i] = RDX_FSUB(v[i], r->o[i]);
    B[i] = RDX_FSUB(v[3 + i], r->o[i]);
    C[i] = RDX_FSUB(v[6 + i], r->o[i]);
  }
  const float Akz = RDX_SEL3(A, kz), Bkz = RDX_SEL3(B, kz), Ckz = RDX_SEL3(C, kz);
  float Ax = RDX_FSUB(RDX_SEL3(A, kx), RDX_FMUL(p->sx, Akz)), Ay = RDX_FSUB(RDX_SEL3(A, ky), RDX_FMUL(p->sy, Akz));
  float Bx = RDX_FSUB(RDX_SEL3(B, kx), RDX_FMUL(p->sx, Bkz)), By = RDX_FSUB(RDX_SEL3(B, ky), RDX_FMUL(p->sy, Bkz));
  float Cx = RDX_FSUB(RDX_SEL3(C, kx), RDX_FMUL(p->sx, Ckz)), Cy = RDX_FSUB(RDX_SEL3(C, ky), RDX_FMUL(p->sy, Ckz));
  double U = RDX_FSUB(RDX_FMUL(Cx, By), RDX_FMUL(Cy, Bx));
  double V = RDX_FSUB(RDX_FMUL(Ax, Cy), RDX_FMUL(Ay, Cx));
  double W = RDX_FSUB(RDX_FMUL(Bx, Ay), RDX_FMUL(By, Ax));
  if (U == 0.0 || V == 0.0 || W == 0.0) { /* the paper's fallback: exact products in double */
    U = RDX_DSUB(RDX_DMUL((double)Cx, (double)By), RDX_DMUL((double)Cy, (double)Bx));
    V = RDX_DSUB(RDX_DMUL((double)Ax, (double)Cy), RDX_DMUL((double)Ay, (double)Cx));
    W = RDX_DSUB(RDX_DMUL((double)Bx, (double)Ay), RDX_DMUL((double)By, (double)Ax));
  }
  if ((U < 0.0 || V < 0.0 || W < 0.0) && (U > 0.0 || V > 0.0 || W > 0.0)) return 0;
  double det = RDX_DADD(RDX_DADD(U, V), W);
  if (det == 0.0) return 0;
  float Az = RDX_FMUL(p->sz, Akz), Bz = RDX_FMUL(p->sz, Bkz), Cz = RDX_FMUL(p->sz, Ckz);
  double T = RDX_DADD(RDX_DADD(RDX_DMUL(U, (double)Az), RDX_DMUL(V, (double)Bz)), RDX_DMUL(W, (double)Cz));
  double t = T / det;
  if (!((double)tmin < t && t < (double)tmax)) return 0;
  *t_out = (float)t;
  *front = det > 0.0;
  return 1;
}

/* A node in registers: on the GPU four 16-byte read-only loads of one cache line. */
RDX_HD rdx_bvh_node rdx_bvh_fetch(const rdx_bvh_node *nodes, uint32_t i) {
#if defined(__CUDA_ARCH__)
  const float4 *p = (const float4 *)(nodes + i);
  float4 a = __ldg(p), b = __ldg(p + 1), c = __ldg(p + 2), d = __ldg(p + 3);
  rdx_bvh_node n;
  n.box[0][0] = a.x, n.box[0][1] = a.y, n.box[0][2] = a.z, n.box[0][3] = a.w;
  n.box[0][4] = b.x, n.box[0][5] = b.y, n.box[1][0] = b.z, n.box[1][1] = b.w;
  n.box[1][2] = c.x, n.box[1][3] = c.y, n.box[1][4] = c.z, n.box[1][5] = c.w;
  n.child[0] = __float_as_uint(d.x), n.child[1] = __float_as_uint(d.y);
  n.count[0] = __float_as_uint(d.z), n.count[1] = __float_as_uint(d.w);
  return n;
#else
  return nodes[i];
#endif
}

/* A BVH4 node in registers: on the GPU eight 16-byte read-only loads of one 128-byte line. */
RDX_HD rdx_bvh4_node rdx_bvh4_fetch(const rdx_bvh4_node *nodes, uint32_t i) {
#if defined(__CUDA_ARCH__)
  const float4 *p = (const float4 *)(nodes + i);
  rdx_bvh4_node n;
  float4 v;
  v = __ldg(p + 0);
  n.lo[0][0] = v.x, n.lo[0][1] = v.y, n.lo[0][2] = v.z, n.lo[0][3] = v.w;
  v = __ldg(p + 1);
  n.lo[1][0] = v.x, n.lo[1][1] = v.y, n.lo[1][2] = v.z, n.lo[1][3] = v.w;
  v = __ldg(p + 2);
  n.lo[2][0] = v.x, n.lo[2][1] = v.y, n.lo[2][2] = v.z, n.lo[2][3] = v.w;
  v = __ldg(p + 3);
  n.hi[0][0] = v.x, n.hi[0][1] = v.y, n.hi[0][2] = v.z, n.hi[0][3] = v.w;
  v = __ldg(p + 4);
  n.hi[1][0] = v.x, n.hi[1][1] = v.y, n.hi[1][2] = v.z, n.hi[1][3] = v.w;
  v = __ldg(p + 5);
  n.hi[2][0] = v.x, n.hi[2][1] = v.y, n.hi[2][2] = v.z, n.hi[2][3] = v.w;
  v = __ldg(p + 6);
  n.child[0] = __float_as_uint(v.x), n.child[1] = __float_as_uint(v.y), n.child[2] = __float_as_uint(v.z), n.child[3] = __float_as_uint(v.w);
  v = __ldg(p + 7);
  n.count[0] = __float_as_uint(v.x), n.count[1] = __float_as_uint(v.y), n.count[2] = __float_as_uint(v.z), n.count[3] = __float_as_uint(v.w);
  return n;
#else
  return nodes[i];
#endif
}

/* nd: the BVH4 node i, in registers on the GPU, read in place on the CPU. */
#if defined(__CUDA_ARCH__)
#define RDX_BVH4_LOAD_(nd, nodes, i)                                                             \
  const rdx_bvh4_node nd##_copy_ = rdx_bvh4_fetch(nodes, i);                                     \
  const rdx_bvh4_node *nd = &nd##_copy_;
#else
#define RDX_BVH4_LOAD_(nd, nodes, i) const rdx_bvh4_node *nd = (nodes) + (i);
#endif

/* Element k (0..3, not a constant) of a four-element array by selects, so that GPU code keeps
 * the array in registers instead of indexing it in local memory. */
#define RDX_SEL4(a, k) ((k) == 0 ? (a)[0] : (k) == 1 ? (a)[1] : (k) == 2 ? (a)[2] : (a)[3])
/* Order slots i < j of a BVH4 visit: the hit one first, then the nearer; equal keep i first. */
#define RDX_RT_CSWAP4_(i, j)                                                                     \
  if (ch_[j] != RDX_BVH_NONE && (ch_[i] == RDX_BVH_NONE || tn_[j] < tn_[i])) {                   \
    float t_s = tn_[i];                                                                          \
    uint32_t c_s = ch_[i], n_s = cn_[i];                                                         \
    tn_[i] = tn_[j], ch_[i] = ch_[j], cn_[i] = cn_[j];                                           \
    tn_[j] = t_s, ch_[j] = c_s, cn_[j] = n_s;                                                    \
  }

/* Hit program actions. */
#define RDX_RT_CONTINUE 0 /* keep traversing (any-hit: ignore, or accept with *tmax shrunk) */
#define RDX_RT_STOP 1     /* terminate the ray */

/*
 * RDX_RT_DEFINE_TRACE(NAME, STATE, HIT) defines
 *     RDX_HD void NAME(const rdx_bvh_view *bv, const rdx_ray *ray, STATE *st)
 * a stack traversal of a triangle tree that calls, for each triangle hit with tmin < t < tmax,
 *     int HIT(STATE *st, uint32_t id, float t, int front, float *tmax)
 * HIT returns RDX_RT_STOP to end the ray or RDX_RT_CONTINUE; a closest-hit program records the hit
 * and sets *tmax = t so that only nearer hits follow (OptiX's accept-and-shrink). Children are
 * visited near first along the ray's main axis, so closest-hit rays shrink early. NAME serves both
 * tree layouts (NAME_bvh2, NAME_bvh4, chosen by the view): the box and primitive tests are the
 * same, so all-hits sets, closest-hit distances and whether a ray hits are identical on both; only
 * the order of visits differs, so a first-hit program may get another (valid) hit, and a
 * closest-hit program another primitive among those hit at exactly the closest t.
 *
 * RDX_RT_DEFINE_TRACE_AABB(NAME, STATE, ISECT, HIT) is the same over an AABB tree, with a custom
 * intersection int ISECT(STATE *st, uint32_t id, const float *box, const rdx_ray *ray,
 * const rdx_ray_pre *pre, float tmin, float tmax, float *t) that reports a hit at *t (the caller
 * then applies tmin < t < tmax like OptiX's optixReportIntersection) and HIT as above (front = 1).
 */
#define RDX_RT_TRAVERSE2_(NAME, STATE, LEAF_TEST)                                                \
  RDX_HD void NAME##_bvh2(const rdx_bvh_view *bv, const rdx_ray *ray, STATE *st) {               \
    if (bv->n_prims <= 0) return;                                                                \
    rdx_ray_pre pre;                                                                             \
    rdx_ray_prepare(ray, &pre);                                                                  \
    float tmin = ray->tmin, tmax = ray->tmax;                                                    \
    /* a short stack of (node, where the ray enters its box) */                                  \
    uint32_t stack[RDX_RT_STACK];                                                                \
    float stack_t[RDX_RT_STACK];                                                                 \
    int sp = 0;                                                                                  \
    uint32_t node = 0;                                                                           \
    for (;;) {                                                                                   \
      const rdx_bvh_node nd_ = rdx_bvh_fetch(bv->nodes, node);                                   \
      const rdx_bvh_node *nd = &nd_;                                                             \
      float tn0 = 0.0f, tn1 = 0.0f;                                                              \
      int hit0 = nd->child[0] != RDX_BVH_NONE &&                                                 \
                 rdx_rt_box_near(nd->box[0], nd->box[0] + 3, ray, &pre, tmin, tmax, &tn0);       \
      int hit1 = nd->child[1] != RDX_BVH_NONE &&                                                 \
                 rdx_rt_box_near(nd->box[1], nd->box[1] + 3, ray, &pre, tmin, tmax, &tn1);       \
      /* leaves at once, nearer first: no stack traffic for them */                              \
      for (int c = 0; c < 2; c++) {                                                              \
        int ci = (tn1 < tn0) ? 1 - c : c;                                                        \
        if (!(ci ? hit1 : hit0) || nd->count[ci] == 0) continue;                                 \
        if ((ci ? tn1 : tn0) > tmax) continue; /* a closer hit came first */                     \
        uint32_t first = nd->child[ci], end = first + nd->count[ci];                             \
        for (uint32_t s = first; s < end; s++) {                                                 \
          LEAF_TEST                                                                              \
        }                                                                                        \
      }                                                                                          \
      hit0 = hit0 && nd->count[0] == 0 && tn0 <= tmax;                                           \
      hit1 = hit1 && nd->count[1] == 0 && tn1 <= tmax;                                           \
      if (hit0 && hit1) {                                                                        \
        /* near child next, far child on the stack */                                            \
        int near0 = tn0 <= tn1;                                                                  \
        if (sp < RDX_RT_STACK) {                                                                 \
          stack[sp] = near0 ? nd->child[1] : nd->child[0];                                       \
          stack_t[sp++] = near0 ? tn1 : tn0;                                                     \
        }                                                                                        \
        node = near0 ? nd->child[0] : nd->child[1];                                              \
        continue;                                                                                \
      }                                                                                          \
      if (hit0 || hit1) {                                                                        \
        node = hit0 ? nd->child[0] : nd->child[1];                                               \
        continue;                                                                                \
      }                                                                                          \
      /* pop, skipping boxes that begin beyond a hit found since they were pushed */             \
      for (;;) {                                                                                 \
        if (sp == 0) return;                                                                     \
        --sp;                                                                                    \
        if (stack_t[sp] <= tmax) break;                                                          \
      }                                                                                          \
      node = stack[sp];                                                                          \
    }                                                                                            \
  }

/* The same over a BVH4, in strict near-first order: the (up to) four boxes of a node are tested
 * and the slots sorted by entry distance (a five-comparator network on (hit, distance), skipped
 * when at most one box is hit, as for most of the thin rays of rx and cgrx); the nearest slot is
 * visited next and the others are pushed farthest first, leaves included (a leaf entry carries
 * its size), so a closest-hit ray tests a far leaf only when no nearer hit has shrunk tmax below
 * the leaf's entry. (Testing all hit leaves of a node at once, as the binary traversal does, makes
 * closest-hit rays test far leaves of two levels.) One place tests leaves, so each hit program's
 * leaf test is compiled once. */
#define RDX_RT_TRAVERSE4_(NAME, STATE, LEAF_TEST)                                                \
  RDX_HD void NAME##_bvh4(const rdx_bvh_view *bv, const rdx_ray *ray, STATE *st) {               \
    if (bv->n_prims <= 0) return;                                                                \
    rdx_ray_pre pre;                                                                             \
    rdx_ray_prepare(ray, &pre);                                                                  \
    float tmin = ray->tmin, tmax = ray->tmax;                                                    \
    /* entries: (node or first leaf slot, leaf size or 0, where the ray enters the box) */       \
    uint32_t stack[RDX_RT_STACK4];                                                               \
    uint8_t stack_n[RDX_RT_STACK4];                                                              \
    float stack_t[RDX_RT_STACK4];                                                                \
    int sp = 0;                                                                                  \
    uint32_t cur = 0, cur_n = 0; /* the root */                                                  \
    for (;;) {                                                                                   \
      if (cur_n != 0) {                                                                          \
        uint32_t end = cur + cur_n;                                                              \
        for (uint32_t s = cur; s < end; s++) {                                                   \
          LEAF_TEST                                                                              \
        }                                                                                        \
      } else {                                                                                   \
        RDX_BVH4_LOAD_(nd, bv->nodes4, cur)                                                      \
        float tn_[4];                                                                            \
        uint32_t ch_[4], cn_[4];                                                                 \
        for (int c = 0; c < 4; c++) { /* constant trip count: unrolled, registers only */        \
          float lo_[3] = {nd->lo[0][c], nd->lo[1][c], nd->lo[2][c]};                             \
          float hi_[3] = {nd->hi[0][c], nd->hi[1][c], nd->hi[2][c]};                             \
          tn_[c] = 0.0f;                                                                         \
          ch_[c] = nd->child[c];                                                                 \
          cn_[c] = nd->count[c];                                                                 \
          if (ch_[c] != RDX_BVH_NONE && !rdx_rt_box_near(lo_, hi_, ray, &pre, tmin, tmax, &tn_[c]))\
            ch_[c] = RDX_BVH_NONE;                                                               \
        }                                                                                        \
        int nhit_ = (ch_[0] != RDX_BVH_NONE) + (ch_[1] != RDX_BVH_NONE) + (ch_[2] != RDX_BVH_NONE) +\
                    (ch_[3] != RDX_BVH_NONE);                                                    \
        if (nhit_ > 1) {                                                                         \
          RDX_RT_CSWAP4_(0, 1)                                                                   \
          RDX_RT_CSWAP4_(2, 3)                                                                   \
          RDX_RT_CSWAP4_(0, 2)                                                                   \
          RDX_RT_CSWAP4_(1, 3)                                                                   \
          RDX_RT_CSWAP4_(1, 2)                                                                   \
        }                                                                                        \
        /* the nearest next, the others on the stack, farthest first */                          \
        uint32_t next_ = RDX_BVH_NONE, next_n_ = 0;                                              \
        float next_t_ = 0.0f;                                                                    \
        for (int k = 3; k >= 0; k--) {                                                           \
          uint32_t c_ = RDX_SEL4(ch_, k);                                                        \
          float t_ = RDX_SEL4(tn_, k);                                                           \
          if (c_ == RDX_BVH_NONE) continue;                                                      \
          if (next_ != RDX_BVH_NONE && sp < RDX_RT_STACK4) {                                     \
            stack[sp] = next_;                                                                   \
            stack_n[sp] = (uint8_t)next_n_;                                                      \
            stack_t[sp++] = next_t_;                                                             \
          }                                                                                      \
          next_ = c_;                                                                            \
          next_n_ = RDX_SEL4(cn_, k);                                                            \
          next_t_ = t_;                                                                          \
        }                                                                                        \
        if (next_ != RDX_BVH_NONE) {                                                             \
          cur = next_;                                                                           \
          cur_n = next_n_;                                                                       \
          continue;                                                                              \
        }                                                                                        \
      }                                                                                          \
      /* pop, skipping boxes that begin beyond a hit found since they were pushed */             \
      for (;;) {                                                                                 \
        if (sp == 0) return;                                                                     \
        --sp;                                                                                    \
        if (stack_t[sp] <= tmax) break;                                                          \
      }                                                                                          \
      cur = stack[sp];                                                                           \
      cur_n = stack_n[sp];                                                                       \
    }                                                                                            \
  }

/* Both traversals, and NAME choosing by the tree the view holds. */
#define RDX_RT_TRAVERSE_(NAME, STATE, LEAF_TEST)                                                 \
  RDX_RT_TRAVERSE2_(NAME, STATE, LEAF_TEST)                                                      \
  RDX_RT_TRAVERSE4_(NAME, STATE, LEAF_TEST)                                                      \
  RDX_HD void NAME(const rdx_bvh_view *bv, const rdx_ray *ray, STATE *st) {                      \
    if (bv->nodes4) NAME##_bvh4(bv, ray, st);                                                    \
    else NAME##_bvh2(bv, ray, st);                                                               \
  }

#define RDX_RT_DEFINE_TRACE(NAME, STATE, HIT)                                                    \
  RDX_RT_TRAVERSE_(NAME, STATE, {                                                                \
    float t_;                                                                                    \
    int front_;                                                                                  \
    if (rdx_rt_tri_hit(bv->prims + (int64_t)s * 9, ray, &pre, tmin, tmax, &t_, &front_) &&       \
        HIT(st, bv->ids[s], t_, front_, &tmax) == RDX_RT_STOP)                                   \
      return;                                                                                    \
  })

#define RDX_RT_DEFINE_TRACE_AABB(NAME, STATE, ISECT, HIT)                                        \
  RDX_RT_TRAVERSE_(NAME, STATE, {                                                                \
    const float *box_ = bv->prims + (int64_t)s * 6;                                              \
    float t_ = 0.0f; /* set by ISECT when it reports a hit; zeroed for the compiler's sake */   \
    if (rdx_rt_box_hit(box_, box_ + 3, ray, &pre, tmin, tmax) &&                                 \
        ISECT(st, bv->ids[s], box_, ray, &pre, tmin, tmax, &t_) && tmin < t_ && t_ < tmax &&     \
        HIT(st, bv->ids[s], t_, 1, &tmax) == RDX_RT_STOP)                                        \
      return;                                                                                    \
  })

/* ---- the generic hit programs of rdx_rt_trace: first hit, closest hit, all hits ---- */

#define RDX_RT_NO_HIT 0xFFFFFFFFu

/* One hit: the primitive (RDX_RT_NO_HIT for none), its distance and facing. 12 bytes. */
typedef struct rdx_rt_hit {
  uint32_t prim;
  float t;
  uint32_t front;
} rdx_rt_hit;

/* State of the generic programs: the hit, or the all-hits count and where to write ids. */
typedef struct rdx_rt_generic_state {
  rdx_rt_hit hit;
  uint64_t count;
  uint32_t *out; /* all hits: ids written here when not NULL */
} rdx_rt_generic_state;

RDX_HD int rdx_rt_first_hit_prog(rdx_rt_generic_state *s, uint32_t id, float t, int front, float *tmax) {
  s->hit.prim = id;
  s->hit.t = t;
  s->hit.front = (uint32_t)front;
  return RDX_RT_STOP;
}
RDX_HD int rdx_rt_closest_hit_prog(rdx_rt_generic_state *s, uint32_t id, float t, int front, float *tmax) {
  s->hit.prim = id;
  s->hit.t = t;
  s->hit.front = (uint32_t)front;
  *tmax = t;
  return RDX_RT_CONTINUE;
}
RDX_HD int rdx_rt_all_hits_prog(rdx_rt_generic_state *s, uint32_t id, float t, int front, float *tmax) {
  if (s->out) s->out[s->count] = id;
  s->count++;
  return RDX_RT_CONTINUE;
}
/* The generic custom intersection of AABB scenes: the ray's entry into the box. */
RDX_HD int rdx_rt_box_entry_isect(rdx_rt_generic_state *s, uint32_t id, const float *box, const rdx_ray *r,
                                  const rdx_ray_pre *p, float tmin, float tmax, float *t) {
  /* report just after tmin when the ray starts inside, so the exclusive test keeps it */
  float e = rdx_rt_box_entry(box, box + 3, r, p, tmin);
  *t = e > tmin ? e : nextafterf(tmin, INFINITY);
  return 1;
}

RDX_RT_DEFINE_TRACE(rdx_rt_trace_first, rdx_rt_generic_state, rdx_rt_first_hit_prog)
RDX_RT_DEFINE_TRACE(rdx_rt_trace_closest, rdx_rt_generic_state, rdx_rt_closest_hit_prog)
RDX_RT_DEFINE_TRACE(rdx_rt_trace_all, rdx_rt_generic_state, rdx_rt_all_hits_prog)
RDX_RT_DEFINE_TRACE_AABB(rdx_rt_trace_first_aabb, rdx_rt_generic_state, rdx_rt_box_entry_isect,
                         rdx_rt_first_hit_prog)
RDX_RT_DEFINE_TRACE_AABB(rdx_rt_trace_closest_aabb, rdx_rt_generic_state, rdx_rt_box_entry_isect,
                         rdx_rt_closest_hit_prog)
RDX_RT_DEFINE_TRACE_AABB(rdx_rt_trace_all_aabb, rdx_rt_generic_state, rdx_rt_box_entry_isect,
                         rdx_rt_all_hits_prog)

#endif /* RDX_RT_HD_H */
