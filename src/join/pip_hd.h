/*
 * pip_hd.h: point in polygon (RayJoin's PIP, digest section 4) for the CPU (pip.c) and CUDA
 * (pip.cu): the upward ray of a query point, the exact decision per edge, the two rules and their
 * custom intersection programs over the join index (index_hd.h), written once.
 *
 * A query point p (f64) fires one ray from (c(p.x), c(p.y)) straight up (+y), c = index_hd.h's
 * rdx_jn_ray_coord; index_hd.h proves that every edge below decides p's answer has its group's box
 * visited. The intersection program scans the group's edges and decides each one exactly on the
 * f64 data (exact_hd.h's orientation):
 *   BOUNDARY  p lies on the closed edge: the edge's feature contains p (boundaries are closed);
 *   CROSS     (a.x <= p.x) != (b.x <= p.x) and the edge passes strictly above p at x = p.x: a
 *             crossing of the upward ray. The half-open rule counts a vertex at x = p.x once for
 *             the two edges meeting there and never counts a vertical edge.
 *
 * General rule (any layer, features may overlap): a feature contains p when p is on its boundary
 * or the ray crosses its rings an odd number of times (even-odd over all of the feature's rings,
 * raydex.h's definition of a feature). Events (feature << 1 | boundary) are collected per point:
 * pass 1 keeps a small set that toggles a feature's crossing entry on each crossing (so it holds
 * the features of odd parity and those with p on their boundary) and answers the point when the
 * set never outgrew its capacity; otherwise the point's events are counted, and pass 2 traces it
 * again, appends every event into a buffer sized by that count, sorts and reduces them
 * (rdx_jn_pip_reduce). Both passes answer the same; which one answers a point never shows.
 *
 * Only the rings whose box holds p matter to the general rule: a ring whose f64 bounding box does
 * not hold p has no edge with p on it and an even number of crossings. (Around a closed ring, the
 * edges with (a.x <= p.x) != (b.x <= p.x) are even in number, as each moves the walk to the other
 * side of x = p.x. If p is below the whole ring they are all crossings; if p.x is outside the
 * ring's x-range there are none; if p is above the ring none passes above p.) So each point is
 * answered in two phases:
 *  (A) rings: a point ray (direction 0: the boxes holding (c(p.x), c(p.y)), rt_hd.h's zero
 *      direction, OptiX's +z over [0, 1]) through the index's ring scene gives top and bottom, the
 *      largest hi.y and the smallest lo.y of the ring boxes holding it. When none does, p is in
 *      no feature and on no boundary (every ring box is conservative, index_hd.h: it holds the f64
 *      box): done. Else phase (B) takes the shorter way out of those boxes, up or down, and phase
 *      (A) returns its reach (rdx_jn_pip_rings_reach): -inf for none, t > 0 for the upward ray over
 *      (0, t], -t for the downward one, where t is the float just above fl32(top - o.y), resp.
 *      fl32(o.y - bottom), so above the exact difference too. Callers may also pass +inf,
 *      "unknown": the whole upward ray, as before phase (A) existed.
 *  (B) edges: the ray over (0, t] and the events of the groups it meets, except the groups whose
 *      ring lies wholly beyond p on the ray's side (upward: the ring's floor, index_hd.h, is above
 *      p.y; downward: its ceiling is below): their boxes do not hold p, and they are skipped
 *      without reading an edge.
 * The downward ray is the upward ray of the layer turned by a half turn, (x, y) -> (-x, -y): the
 * turn is exact on doubles and floats, maps conservative boxes to conservative boxes of the turned
 * edges, and swaps floors with negated ceilings and top with the negated bottom; the group scan
 * turns p and each vertex (rdx_jn_pip_state's q and sign), so CROSS is the definition above in
 * the turned frame. Its parity per ring is the same even-odd answer, and each point takes one
 * frame in both passes. So it is enough to argue for the upward ray.
 * Why the answer is the one of the whole ray. Let R be a ring and G one of its groups with an
 * edge that gives an event (p on the edge, or a crossing: the edge spans p.x and passes above p).
 * If G's floor is above p.y, R lies wholly above p and its events are all dropped: an even number
 * of crossings and no boundary, which changes no feature's answer. Otherwise p.y >= floor, R's
 * x-range holds p.x (the edge spans it) and R's top is at or above p.y (the edge meets x = p.x at
 * or above p), so R's box holds p from below by the floor's margin and sideways by its pads
 * (index_hd.h): phase (A) met R's box, whose hi.y >= R's top is at most top. Every edge of R that
 * gives an event meets x = p.x at a height y_e <= R's top; its group's box has lo.y <= y_e (the
 * box is conservative), so fl32(lo.y - o.y) <= fl32(top - o.y) < t (rounding is monotone) and
 * the box and all its BVH ancestors pass the traversal's test: every event of R is counted, as on
 * the whole ray. (The downward ray takes rt_hd.h's general box test, which computes the same
 * float differences negated, then widens its interval: the inequalities hold there too.)
 * Hardware traversals (OptiX) see the same margins: y_e - o.y < t in exact arithmetic, with the
 * box's pads around the edge. The rings of p's answer are thus counted whole, the others
 * contribute nothing, and both passes drop and keep the same events, so their counts agree.
 *
 * Planar rule (RayJoin's nearest edge; the caller states that features do not overlap): among the
 * CROSS edges, the first in the order "lower at x = p.x; then lower just right of p.x (every CROSS
 * edge extends right of p.x, and tied edges meet at one point there, so the one whose right end
 * lies below the other's line is lower); then the one running right to left; then the smaller
 * index" is the edge the ray meets first when p is moved an infinitesimal step right, which stays
 * in p's face since p is on no boundary. Rings keep their feature's interior on their left (join.h),
 * so an edge running right to left (a.x > b.x) has its feature just below it and p lies in that
 * feature; an edge running left to right has its feature above and nothing of that feature below.
 * A boundary shared by two features is stored twice, once per feature in opposite directions, at
 * the same place: the tie then goes to the right-to-left copy, whose feature lies below, which is
 * p's. With no such copy, no feature lies just below the edge in a planar layer (another feature
 * there would have to share the edge), so p is in none. The order is total, so the answer does
 * not depend on the order in which the traversal meets the edges. If p lies on a boundary, the
 * planar rule cannot see every feature whose boundary holds p: such points take the general rule.
 * The closest-hit traversal shrinks tmax to a float32 bound at or above the best edge's height at
 * p.x (rdx_jn_pip_t_bound), never below, so no box holding an edge as low or lower is culled.
 * Phase (A) serves the planar rule only to answer points whose ray meets no ring box (-inf); its
 * ray is always the whole upward one, as its first edge need not lie below top when p is in no
 * feature.
 *
 * Side queries (for the overlay: join.h's rdx_jn_pip_query with dir_end). Query i is the point
 *      q = a + delta u + s eps n,   u = b - a != 0,   n = (-u.y, u.x),   0 < eps << delta << 1,
 * a = xy[i], b = xy[dir_end[i]], s = side (+1: just left of the edge a -> b, just after a; -1:
 * right), delta and eps infinitesimal, eps infinitely smaller than delta. It runs the general
 * rule (never the planar one) with every comparison against q decided exactly, lexicographically:
 *  - v.x against q.x: v.x against a.x, then on a tie the sign of q.x - a.x = delta u.x - s eps u.y,
 *    which is sign(u.x), or sign(-s u.y) when u.x = 0: never 0, so no vertex has q's x and each
 *    edge either spans q.x or not, under the half-open rule as for points. Likewise v.y against
 *    q.y with sign(u.y), or sign(s u.x) when u.y = 0 (rdx_jn_pip_side_q; pert in the state).
 *  - CROSS: an edge spanning q.x, ends l (left) and r (right), passes above q iff orient(l, r, q)
 *    < 0, and orient(l, r, q) = orient(l, r, a) + delta cross(r - l, u) + s eps dot(r - l, u):
 *    its sign is that of the first non-zero of the three (exact_hd.h's rdx_jn_orient,
 *    rdx_jn_cross_segs, rdx_jn_dot_segs on a and b). The last is not 0: r.x != l.x, as the ends
 *    lie on the two sides of q.x, and cross and dot both 0 would make r - l = 0 (u != 0).
 *  - No BOUNDARY event: q lies on no edge (c, d), since orient(c, d, q) = 0 would need the three
 *    terms to vanish, which the last one forbids for c != d. So the planar rule's boundary
 *    fallback is never needed, and the general rule's answer is the parity alone.
 *  - The downward frame turns a, b and every vertex by the half turn; the turned query is
 *    -q = (-a) + delta (-u) + s eps (-n), and -n is the left normal of -u: the same formula for
 *    the turned a and b with the same s, so the state keeps the turned b beside q and negates pert.
 * Why the traversal misses nothing for q. The rays, phase (A), the span skip and the boxes all work
 * on a (the ray's origin is (c(a.x), c(a.y))), and every argument above uses only comparisons
 * that a q-event implies for a with non-strict inequalities, and a strict one where it skips:
 *  - an edge giving a q-event spans q.x, so its closed x-range holds a.x (v.x < q.x implies
 *    v.x <= a.x); it passes above q, so orient(l, r, a) <= 0 (the first term of the sum), i.e.
 *    its height at a.x is >= a.y. These are exactly the facts the argument above uses for an
 *    event of p = a (p.x in the closed x-range, the edge at or above p at p.x), so the ring's box
 *    holds (c(a.x), c(a.y)) for phase (A), within the pads sideways, and the group's box is
 *    entered before reach, on the soft BVH and on OptiX alike;
 *  - the span skip drops a ring when floor > a.y (upward; ceiling < a.y downward): then its lowest
 *    y is > a.y, a strict inequality of finite numbers that no infinitesimal step undoes, so the
 *    ring lies wholly above q: an even number of crossings and no boundary, as for p. A ring
 *    with floor <= a.y holds c(a.y) strictly inside its box from below, as for p;
 *  - a ring not wholly beyond q on the ray's side has lowest y <= a.y; one with an event has its
 *    x-range holding a.x and its top >= a.y: its box holds the origin, so "no ring box holds the
 *    origin" still means no crossing of an odd count anywhere, i.e. in no feature.
 * Every margin the point argument needs is thus met by a itself, none depends on q's offset, and
 * the answer is the crossing parity of q's ray per feature. The queries' order (pip.cu's Morton
 * order) and the two passes are the points', as query i reads only xy[i] and xy[dir_end[i]].
 */
#ifndef RDX_JOIN_PIP_HD_H
#define RDX_JOIN_PIP_HD_H

#include "join/index_hd.h"

#define RDX_JN_NO_EDGE 0xFFFFFFFFu
/* Capacity of pass 1's event set per point: CPU threads keep it on the stack; GPU threads in
 * local memory, where it costs 8 bytes per entry per thread. */
#define RDX_JN_PIP_SET_CPU 128
#define RDX_JN_PIP_SET_GPU 16

enum { RDX_JN_PIP_NONE = 0, RDX_JN_PIP_CROSS = 1, RDX_JN_PIP_BOUNDARY = 2 };

/* The layer and its index in the traversing code's memory. */
typedef struct rdx_jn_pip_geom {
  const double *xy;          /* 2 * n_vertices */
  const uint32_t *edge_end;  /* n_vertices */
  const uint32_t *edge_feat; /* n_vertices */
  const uint32_t *group_first; /* n_groups + 1 */
  const float *group_span;   /* 2 * n_groups: each group's ring's y-span, floor then ceiling */
} rdx_jn_pip_geom;

/* Phase (A)'s state: the point ray's origin, and the top and bottom so far. */
typedef struct rdx_jn_pip_rings_state {
  float o[2];                /* (c(p.x), c(p.y)) */
  float top, bottom;         /* the largest hi.y and smallest lo.y of the ring boxes holding o;
                                -inf and +inf for none yet */
} rdx_jn_pip_rings_state;

/* One query as the traversal reads it: the point a, or a side query (the file comment). */
typedef struct rdx_jn_pip_at {
  double a[2];               /* the point, or the start a of X's edge */
  double b[2];               /* side queries: the edge's end b (u = b - a != 0); points: a */
  int side;                  /* side queries: +1 left, -1 right; 0 for a point */
} rdx_jn_pip_at;

/* Query i of a batch (join.h's rdx_jn_pip_query). */
RDX_HD rdx_jn_pip_at rdx_jn_pip_at_of(const rdx_jn_pip_query *q, int64_t i) {
  rdx_jn_pip_at t;
  t.a[0] = q->xy[2 * i];
  t.a[1] = q->xy[2 * i + 1];
  uint64_t j = q->dir_end ? (uint64_t)q->dir_end[i] : (uint64_t)i;
  t.b[0] = q->xy[2 * j];
  t.b[1] = q->xy[2 * j + 1];
  t.side = q->dir_end ? q->side : 0;
  return t;
}

/* One query's traversal state. */
typedef struct rdx_jn_pip_state {
  const rdx_jn_pip_geom *g;
  double p[2];               /* the query point (side queries: a, the ray's and skip's point) */
  float oy;                  /* the ray's origin y */
  /* general rule: the frame of the ray (the file comment) */
  double sign;               /* 1 for the upward ray, -1 for the downward one (the turn) */
  double q[2];               /* sign * p, exact */
  /* side queries (the file comment), in the ray's frame */
  double qb[2];              /* sign * b */
  int side;                  /* +1 / -1; 0 for a point (then qb and pert are unused) */
  int pert[2];               /* the signs of q.x - a.x and q.y - a.y, each +1 or -1 */
  /* general rule */
  uint64_t *ev;              /* events (pass 1: the toggling set; pass 2: every event) */
  uint32_t cap;              /* room in ev */
  uint32_t n_live;           /* entries in ev */
  uint32_t n_ev;             /* events met in all */
  int append;                /* pass 2: append every event */
  int overflow;              /* pass 1: the set outgrew cap */
  /* planar rule */
  uint32_t best;             /* the first CROSS edge so far, or RDX_JN_NO_EDGE */
  int boundary;              /* p lies on an edge met so far */
} rdx_jn_pip_state;

/* The upward ray of (px, py) (the downward one: d[1] = -1). */
RDX_HD rdx_ray rdx_jn_pip_ray(double px, double py) {
  rdx_ray r;
  r.o[0] = rdx_jn_ray_coord(px);
  r.o[1] = rdx_jn_ray_coord(py);
  r.o[2] = 0.0f;
  r.d[0] = 0.0f;
  r.d[1] = 1.0f;
  r.d[2] = 0.0f;
  r.tmin = 0.0f;
  r.tmax = INFINITY;
  return r;
}

/* Phase (A)'s ray of (px, py): the point (c(p.x), c(p.y)), direction 0, over [0, 1]. */
RDX_HD rdx_ray rdx_jn_pip_point_ray(double px, double py) {
  rdx_ray r = rdx_jn_pip_ray(px, py);
  r.d[1] = 0.0f;
  r.tmax = 1.0f;
  return r;
}

/* Phase (A)'s intersection program: widen top and bottom to the ring box's. The box test is
 * repeated for hardware traversals, which may report a box the ray misses (never one it meets). */
RDX_HD int rdx_jn_pip_rings_isect(rdx_jn_pip_rings_state *s, uint32_t ring, const float *box, const rdx_ray *r,
                                  const rdx_ray_pre *pre, float tmin, float tmax, float *t) {
  (void)ring, (void)r, (void)pre, (void)tmin, (void)tmax, (void)t;
  if (box[0] <= s->o[0] && s->o[0] <= box[3] && box[1] <= s->o[1] && s->o[1] <= box[4]) {
    s->top = box[4] > s->top ? box[4] : s->top;
    s->bottom = box[1] < s->bottom ? box[1] : s->bottom;
  }
  return 0;
}
RDX_HD int rdx_jn_pip_rings_hit(rdx_jn_pip_rings_state *s, uint32_t id, float t, int front, float *tmax) {
  (void)s, (void)id, (void)t, (void)front, (void)tmax;
  return RDX_RT_CONTINUE; /* not reached: the program reports nothing */
}

/* Phase (A)'s reach from its state (the file comment): -inf when no ring box held the origin,
 * else the shorter of the ways up and down, each the float above the float distance to top or
 * bottom (>= 0: the boxes hold o.y), positive up, negative down; up on a tie. */
RDX_HD float rdx_jn_pip_rings_reach(const rdx_jn_pip_rings_state *s) {
  if (s->top == -INFINITY) return -INFINITY;
  const float up = RDX_FSUB(s->top, s->o[1]), down = RDX_FSUB(s->o[1], s->bottom);
  return up <= down ? nextafterf(up, INFINITY) : -nextafterf(down, INFINITY);
}

/* What edge (a, b) is to p: RDX_JN_PIP_BOUNDARY, _CROSS or _NONE (file comment). Exact. */
RDX_HD int rdx_jn_pip_edge(const double *p, const double *a, const double *b) {
  double xlo = a[0] < b[0] ? a[0] : b[0], xhi = a[0] < b[0] ? b[0] : a[0];
  double ylo = a[1] < b[1] ? a[1] : b[1], yhi = a[1] < b[1] ? b[1] : a[1];
  if (p[0] < xlo || p[0] > xhi || p[1] > yhi) return RDX_JN_PIP_NONE; /* off the x-range, or all below p */
  if (p[1] >= ylo && rdx_jn_on_segment(p, a, b)) return RDX_JN_PIP_BOUNDARY;
  if ((a[0] <= p[0]) == (b[0] <= p[0])) return RDX_JN_PIP_NONE;
  if (p[1] < ylo) return RDX_JN_PIP_CROSS; /* the edge spans p.x and lies wholly above p */
  return rdx_jn_cmp_y_at_x_pt(p[0], p[1], a, b) > 0 ? RDX_JN_PIP_CROSS : RDX_JN_PIP_NONE;
}

/* Where vertex v lies against p, as bits: 1 when v.x < p.x, 2 when v.x > p.x, 4 when v.y < p.y.
 * An edge whose two ends share a bit lies wholly left of, right of or below p: it is NONE, the
 * first test of rdx_jn_pip_edge, decided here once per vertex as a group's edges are walked. */
RDX_HD uint32_t rdx_jn_pip_side(const double *v, const double *p) {
  return (uint32_t)(v[0] < p[0]) | (uint32_t)(v[0] > p[0]) << 1 | (uint32_t)(v[1] < p[1]) << 2;
}
/* The same bits against a side query's q (the file comment): q = a (frame coordinates) moved by
 * pert's signs; a tie with a breaks by pert, so each vertex has exactly one of bits 1 and 2. */
RDX_HD uint32_t rdx_jn_pip_side_q(const double *v, const double *a, const int *pert) {
  return (uint32_t)(v[0] < a[0] || (v[0] == a[0] && pert[0] > 0)) |
         (uint32_t)(v[0] > a[0] || (v[0] == a[0] && pert[0] < 0)) << 1 |
         (uint32_t)(v[1] < a[1] || (v[1] == a[1] && pert[1] > 0)) << 2;
}
/* Whether edge (v, w) is a CROSS for the side query of s (the file comment), given the bits fv,
 * fw of its ends with fv & fw == 0: the edge spans q.x (each end has one x bit, and they differ)
 * and some end lies above q. Exact. */
RDX_HD int rdx_jn_pip_edge_q(const rdx_jn_pip_state *s, const double *v, const double *w, uint32_t fv, uint32_t fw) {
  if (((fv | fw) & 4) == 0) return 1; /* both ends above q: the edge lies wholly above it */
  const double *l = (fv & 1) ? v : w, *r = (fv & 1) ? w : v;
  int o = rdx_jn_orient(l[0], l[1], r[0], r[1], s->q[0], s->q[1]);
  if (o == 0) o = rdx_jn_cross_segs(l, r, s->q, s->qb);
  if (o == 0) o = s->side * rdx_jn_dot_segs(l, r, s->q, s->qb);
  return o < 0; /* q lies right of l -> r, i.e. below the edge */
}
/* The vertex edge e ends at, for e in a group whose edges end before `end`: e + 1, except for the
 * group's last edge, which may close its ring (groups never cross rings and only a ring's last
 * edge ends elsewhere than at the next vertex, join.h): the walk reads edge_end once per group. */
RDX_HD uint32_t rdx_jn_pip_next(const rdx_jn_pip_geom *g, uint32_t e, uint32_t end) {
  return e + 1 < end ? e + 1 : g->edge_end[e];
}

/* The planar rule's order: 1 when CROSS edge e comes before CROSS edge f for p.x (file comment). */
RDX_HD int rdx_jn_pip_precedes(const rdx_jn_pip_geom *g, double px, uint32_t e, uint32_t f) {
  const double *ea = g->xy + 2 * (uint64_t)e, *eb = g->xy + 2 * (uint64_t)g->edge_end[e];
  const double *fa = g->xy + 2 * (uint64_t)f, *fb = g->xy + 2 * (uint64_t)g->edge_end[f];
  int e_rl = ea[0] > eb[0], f_rl = fa[0] > fb[0]; /* running right to left */
  /* the two copies of a shared boundary are the same segment: equal everywhere, no test needed
   * (the common case of a tie, which the filters could only settle in exact arithmetic) */
  int same = (ea[0] == fa[0] && ea[1] == fa[1] && eb[0] == fb[0] && eb[1] == fb[1]) ||
             (ea[0] == fb[0] && ea[1] == fb[1] && eb[0] == fa[0] && eb[1] == fa[1]);
  if (!same) {
    int c = rdx_jn_cmp_y_at_x(px, ea, eb, fa, fb);
    if (c != 0) return c < 0;
    /* equal height at p.x: both pass through one point there; compare just right of it */
    const double *er = e_rl ? ea : eb, *fl = f_rl ? fb : fa, *fr = f_rl ? fa : fb;
    int o = rdx_jn_orient(fl[0], fl[1], fr[0], fr[1], er[0], er[1]); /* e's right end against f's line */
    if (o != 0) return o < 0;
  }
  if (e_rl != f_rl) return e_rl; /* the same line: the copy whose feature lies below first */
  return e < f;
}

/* A float32 t at or above where the ray meets CROSS edge (a, b): from o.y up to a float32 bound
 * of the edge's height at px. The height in double, (px - ax) / (bx - ax) * (by - ay) + ay, is
 * within 7 u (|ay| + |by|) of the exact one (u = 2^-53: five roundings in the product, one in the
 * sum), so adding 16 u (|ay| + |by|) bounds it from above; the edge's top bounds it too. */
RDX_HD float rdx_jn_pip_t_bound(double px, double ax, double ay, double bx, double by, float oy) {
  double top = ay > by ? ay : by;
  double h = RDX_DADD(RDX_DMUL(RDX_DSUB(px, ax) / RDX_DSUB(bx, ax), RDX_DSUB(by, ay)), ay);
  double y = RDX_DADD(h, RDX_DMUL(0x1p-49, RDX_DADD(fabs(ay), fabs(by))));
  if (!(y < top)) y = top;
  return RDX_FSUB(rdx_jn_clamp_f32(rdx_jn_f32_up(y, 0)), oy);
}

/* Record an event of feature feat for the general rule. */
RDX_HD void rdx_jn_pip_event(rdx_jn_pip_state *s, uint32_t feat, int boundary) {
  uint64_t key = ((uint64_t)feat << 1) | (uint64_t)(boundary != 0);
  s->n_ev++;
  if (s->append) {
    if (s->n_live < s->cap) s->ev[s->n_live++] = key;
    return;
  }
  if (s->overflow) return;
  for (uint32_t i = 0; i < s->n_live; i++) {
    if (s->ev[i] == key) {
      if (!boundary) s->ev[i] = s->ev[--s->n_live]; /* a second crossing: even parity again */
      return;                                       /* a boundary entry stays */
    }
  }
  if (s->n_live == s->cap) {
    s->overflow = 1;
    return;
  }
  s->ev[s->n_live++] = key;
}

/* The general rule's events of group grp's edges for a point (side 0) or a side query (side 1;
 * a constant at each call, so each loop is compiled without the other's tests). */
RDX_HD void rdx_jn_pip_general_scan(rdx_jn_pip_state *s, uint32_t grp, int side) {
  const rdx_jn_pip_geom *g = s->g;
  const double sg = s->sign;
  uint32_t e = g->group_first[grp], end = g->group_first[grp + 1];
  const double *v = g->xy + 2 * (uint64_t)e;
  double a[2] = {RDX_DMUL(sg, v[0]), RDX_DMUL(sg, v[1])}; /* vertices in the ray's frame */
  uint32_t fa = side ? rdx_jn_pip_side_q(a, s->q, s->pert) : rdx_jn_pip_side(a, s->q);
  for (; e < end; e++) {
    v = g->xy + 2 * (uint64_t)rdx_jn_pip_next(g, e, end);
    const double b[2] = {RDX_DMUL(sg, v[0]), RDX_DMUL(sg, v[1])};
    const uint32_t fb = side ? rdx_jn_pip_side_q(b, s->q, s->pert) : rdx_jn_pip_side(b, s->q);
    if ((fa & fb) == 0) {
      if (side) {
        if (rdx_jn_pip_edge_q(s, a, b, fa, fb)) rdx_jn_pip_event(s, g->edge_feat[e], 0);
      } else {
        int k = rdx_jn_pip_edge(s->q, a, b);
        if (k != RDX_JN_PIP_NONE) rdx_jn_pip_event(s, g->edge_feat[e], k == RDX_JN_PIP_BOUNDARY);
      }
    }
    a[0] = b[0], a[1] = b[1], fa = fb;
  }
}

/* The general rule's intersection program: record the group's events, report nothing. */
RDX_HD int rdx_jn_pip_general_isect(rdx_jn_pip_state *s, uint32_t grp, const float *box, const rdx_ray *r,
                                    const rdx_ray_pre *pre, float tmin, float tmax, float *t) {
  (void)box, (void)r, (void)pre, (void)tmin, (void)tmax, (void)t;
  const rdx_jn_pip_geom *g = s->g;
  const double sg = s->sign;
  const float *span = g->group_span + 2 * (uint64_t)grp;
  if (sg > 0.0 ? (double)span[0] > s->p[1] : (double)span[1] < s->p[1])
    return 0; /* the group's ring lies wholly beyond p on the ray's side (the file comment) */
  if (s->side) rdx_jn_pip_general_scan(s, grp, 1);
  else rdx_jn_pip_general_scan(s, grp, 0);
  return 0;
}
RDX_HD int rdx_jn_pip_general_hit(rdx_jn_pip_state *s, uint32_t id, float t, int front, float *tmax) {
  (void)s, (void)id, (void)t, (void)front, (void)tmax;
  return RDX_RT_CONTINUE;
}

/* The planar rule's intersection program: keep the first CROSS edge; report a bound of its height
 * so the traversal shrinks tmax, or just past tmin when p is on an edge (the hit then ends the ray). */
RDX_HD int rdx_jn_pip_planar_isect(rdx_jn_pip_state *s, uint32_t grp, const float *box, const rdx_ray *r,
                                   const rdx_ray_pre *pre, float tmin, float tmax, float *t) {
  (void)box, (void)r, (void)pre, (void)tmax;
  if (s->boundary) return 0;
  const rdx_jn_pip_geom *g = s->g;
  uint32_t e = g->group_first[grp], end = g->group_first[grp + 1];
  int better = 0;
  const double *a = g->xy + 2 * (uint64_t)e;
  uint32_t fa = rdx_jn_pip_side(a, s->p);
  for (; e < end; e++) {
    const double *b = g->xy + 2 * (uint64_t)rdx_jn_pip_next(g, e, end);
    const uint32_t fb = rdx_jn_pip_side(b, s->p), both = fa & fb;
    a = b, fa = fb;
    if (both) continue; /* NONE */
    int k = rdx_jn_pip_edge(s->p, g->xy + 2 * (uint64_t)e, b);
    if (k == RDX_JN_PIP_BOUNDARY) {
      s->boundary = 1;
      *t = nextafterf(tmin, INFINITY);
      return 1;
    }
    if (k == RDX_JN_PIP_CROSS && (s->best == RDX_JN_NO_EDGE || rdx_jn_pip_precedes(g, s->p[0], e, s->best))) {
      s->best = e;
      better = 1;
    }
  }
  if (!better) return 0;
  uint64_t b = s->best, w = g->edge_end[b];
  *t = rdx_jn_pip_t_bound(s->p[0], g->xy[2 * b], g->xy[2 * b + 1], g->xy[2 * w], g->xy[2 * w + 1], s->oy);
  return 1;
}
RDX_HD int rdx_jn_pip_planar_hit(rdx_jn_pip_state *s, uint32_t id, float t, int front, float *tmax) {
  (void)id, (void)front;
  if (s->boundary) return RDX_RT_STOP;
  *tmax = t;
  return RDX_RT_CONTINUE;
}

RDX_RT_DEFINE_TRACE_AABB(rdx_jn_pip_trace_general, rdx_jn_pip_state, rdx_jn_pip_general_isect, rdx_jn_pip_general_hit)
RDX_RT_DEFINE_TRACE_AABB(rdx_jn_pip_trace_rings, rdx_jn_pip_rings_state, rdx_jn_pip_rings_isect, rdx_jn_pip_rings_hit)
RDX_RT_DEFINE_TRACE_AABB(rdx_jn_pip_trace_planar, rdx_jn_pip_state, rdx_jn_pip_planar_isect, rdx_jn_pip_planar_hit)

/* The state of query at, upward (rdx_jn_pip_general_frame turns it). */
RDX_HD void rdx_jn_pip_state_init(rdx_jn_pip_state *s, const rdx_jn_pip_geom *g, const rdx_jn_pip_at *at, uint64_t *ev,
                                  uint32_t cap, int append) {
  const double px = at->a[0], py = at->a[1];
  s->g = g;
  s->p[0] = px;
  s->p[1] = py;
  s->oy = rdx_jn_ray_coord(py);
  s->sign = 1.0;
  s->q[0] = px;
  s->q[1] = py;
  s->qb[0] = at->b[0];
  s->qb[1] = at->b[1];
  s->side = at->side;
  /* q - a's signs (the file comment): u = b - a; sign(u.x), else sign(-s u.y); sign(u.y), else
   * sign(s u.x); unused (0) for points */
  const int ux = (at->b[0] > px) - (at->b[0] < px), uy = (at->b[1] > py) - (at->b[1] < py);
  s->pert[0] = ux != 0 ? ux : -at->side * uy;
  s->pert[1] = uy != 0 ? uy : at->side * ux;
  s->ev = ev;
  s->cap = cap;
  s->n_live = 0;
  s->n_ev = 0;
  s->append = append;
  s->overflow = 0;
  s->best = RDX_JN_NO_EDGE;
  s->boundary = 0;
}

/* The general rule's ray for phase (A)'s reach (not -inf): upward over (0, reach] (+inf: the whole
 * ray), or downward over (0, -reach] with s in the turned frame (the file comment). */
RDX_HD void rdx_jn_pip_general_frame(float reach, rdx_ray *ray, rdx_jn_pip_state *s) {
  ray->tmax = reach;
  if (reach > 0.0f) return;
  ray->tmax = -reach;
  ray->d[1] = -1.0f;
  s->sign = -1.0;
  s->q[0] = -s->p[0];
  s->q[1] = -s->p[1];
  s->qb[0] = -s->qb[0]; /* side queries: the turned b, and q - a's signs turned */
  s->qb[1] = -s->qb[1];
  s->pert[0] = -s->pert[0];
  s->pert[1] = -s->pert[1];
}

/* Insertion sort, for pass 1's small sets. */
RDX_HD void rdx_jn_sort_small(uint64_t *a, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) {
    uint64_t v = a[i];
    uint32_t j = i;
    for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
    a[j] = v;
  }
}

/* Sorted events -> the containing features, ascending: a feature contains p when one of its
 * events is a boundary event or it has an odd number of crossing events. Returns how many; *first
 * gets the smallest (-1 for none); out (may be NULL) receives them. */
RDX_HD uint64_t rdx_jn_pip_reduce(const uint64_t *ev, uint32_t n, int64_t *first, uint64_t *out) {
  uint64_t count = 0;
  *first = -1;
  for (uint32_t i = 0; i < n;) {
    uint64_t f = ev[i] >> 1;
    int boundary = 0, odd = 0;
    for (; i < n && (ev[i] >> 1) == f; i++) {
      if (ev[i] & 1) boundary = 1;
      else odd ^= 1;
    }
    if (!(boundary || odd)) continue;
    if (count == 0) *first = (int64_t)f;
    if (out) out[count] = f;
    count++;
  }
  return count;
}

/*
 * RDX_JN_PIP_DEFINE_POINT(QUAL, REACH, POINT, EVENTS, CTX, TRACE_RINGS, TRACE_PLANAR, TRACE_GENERAL)
 * defines
 *     QUAL float REACH(CTX c, double px, double py)
 * phase (A) for one point: its reach (the file comment; -inf when no ring box holds it);
 *     QUAL int POINT(CTX c, const rdx_jn_pip_geom *g, const rdx_jn_pip_at *at, float reach, int planar,
 *                    uint64_t *set, uint32_t cap, uint64_t *count, int64_t *first, uint64_t *fill,
 *                    uint32_t *n_ev)
 * pass 1 for one query (a point, or a side query, which ignores planar) whose phase (A), REACH of
 * at->a, gave reach (or +inf, unknown): answers it (returns 1:
 * *count, *first, and the features into fill when not NULL) or, when the general rule's set
 * outgrows cap, returns 0 with *n_ev its event count (>= 1) for pass 2 (set: room for cap
 * entries); and
 *     QUAL uint32_t EVENTS(CTX c, const rdx_jn_pip_geom *g, const rdx_jn_pip_at *at, float reach,
 *                          uint64_t *ev, uint32_t cap)
 * pass 2 for one query: every event of the general rule into ev (room for cap); returns how many
 * the ray met (the caller checks it equals pass 1's count, with the same reach). The rays are
 * cast by void TRACE_RINGS(CTX c, const rdx_ray *ray, rdx_jn_pip_rings_state *s) through the ring
 * scene, and void TRACE_PLANAR(CTX c, const rdx_ray *ray, rdx_jn_pip_state *s) and TRACE_GENERAL
 * (same arguments) through the group scene, which run the programs above on the boxes the ray
 * meets: the soft BVH's traversals (CTX const rdx_jn_pip_bvhs *, below), or OptiX's in the join's
 * OptiX programs (src/join/optix/programs.cu). QUAL is RDX_HD for the soft backends and a
 * device-only qualifier in OptiX programs.
 */
#define RDX_JN_PIP_DEFINE_POINT(QUAL, REACH, POINT, EVENTS, CTX, TRACE_RINGS, TRACE_PLANAR, TRACE_GENERAL) \
  QUAL float REACH(CTX c, double px, double py) {                                                 \
    rdx_ray ray = rdx_jn_pip_point_ray(px, py);                                                   \
    rdx_jn_pip_rings_state s;                                                                     \
    s.o[0] = ray.o[0];                                                                            \
    s.o[1] = ray.o[1];                                                                            \
    s.top = -INFINITY;                                                                            \
    s.bottom = INFINITY;                                                                          \
    TRACE_RINGS(c, &ray, &s);                                                                     \
    return rdx_jn_pip_rings_reach(&s);                                                                \
  }                                                                                               \
  QUAL int POINT(CTX c, const rdx_jn_pip_geom *g, const rdx_jn_pip_at *at, float reach, int planar, \
                 uint64_t *set, uint32_t cap, uint64_t *count, int64_t *first, uint64_t *fill,    \
                 uint32_t *n_ev) {                                                                \
    if (reach == -INFINITY) { /* no ring box holds p: in no feature, on no boundary */           \
      *count = 0;                                                                                 \
      *first = -1;                                                                                \
      return 1;                                                                                   \
    }                                                                                             \
    rdx_ray ray = rdx_jn_pip_ray(at->a[0], at->a[1]);                                             \
    rdx_jn_pip_state s;                                                                           \
    if (planar && at->side == 0) {                                                                \
      rdx_jn_pip_state_init(&s, g, at, set, cap, 0);                                              \
      TRACE_PLANAR(c, &ray, &s);                                                                  \
      if (!s.boundary) {                                                                          \
        uint32_t b = s.best;                                                                      \
        int in = b != RDX_JN_NO_EDGE && g->xy[2 * (uint64_t)b] > g->xy[2 * (uint64_t)g->edge_end[b]]; \
        *count = (uint64_t)in;                                                                    \
        *first = in ? (int64_t)g->edge_feat[b] : -1;                                              \
        if (in && fill) fill[0] = g->edge_feat[b];                                                \
        return 1;                                                                                 \
      }                                                                                           \
    }                                                                                             \
    rdx_jn_pip_state_init(&s, g, at, set, cap, 0);                                                \
    rdx_jn_pip_general_frame(reach, &ray, &s);                                                    \
    TRACE_GENERAL(c, &ray, &s);                                                                   \
    if (s.overflow) {                                                                             \
      *n_ev = s.n_ev;                                                                             \
      return 0;                                                                                   \
    }                                                                                             \
    rdx_jn_sort_small(set, s.n_live);                                                             \
    *count = rdx_jn_pip_reduce(set, s.n_live, first, fill);                                       \
    return 1;                                                                                     \
  }                                                                                               \
  QUAL uint32_t EVENTS(CTX c, const rdx_jn_pip_geom *g, const rdx_jn_pip_at *at, float reach, uint64_t *ev, \
                       uint32_t cap) {                                                            \
    if (reach == -INFINITY) return 0;                                                             \
    rdx_ray ray = rdx_jn_pip_ray(at->a[0], at->a[1]);                                             \
    rdx_jn_pip_state s;                                                                           \
    rdx_jn_pip_state_init(&s, g, at, ev, cap, 1);                                                 \
    rdx_jn_pip_general_frame(reach, &ray, &s);                                                    \
    TRACE_GENERAL(c, &ray, &s);                                                                   \
    return s.n_ev;                                                                                \
  }

/* The soft BVHs of an index, for the soft backends' traversals. */
typedef struct rdx_jn_pip_bvhs {
  rdx_bvh_view groups;       /* the group scene */
  rdx_bvh_view rings;        /* the ring scene */
} rdx_jn_pip_bvhs;

RDX_HD void rdx_jn_pip_soft_rings(const rdx_jn_pip_bvhs *b, const rdx_ray *ray, rdx_jn_pip_rings_state *s) {
  rdx_jn_pip_trace_rings(&b->rings, ray, s);
}
RDX_HD void rdx_jn_pip_soft_planar(const rdx_jn_pip_bvhs *b, const rdx_ray *ray, rdx_jn_pip_state *s) {
  rdx_jn_pip_trace_planar(&b->groups, ray, s);
}
RDX_HD void rdx_jn_pip_soft_general(const rdx_jn_pip_bvhs *b, const rdx_ray *ray, rdx_jn_pip_state *s) {
  rdx_jn_pip_trace_general(&b->groups, ray, s);
}

RDX_JN_PIP_DEFINE_POINT(RDX_HD, rdx_jn_pip_reach, rdx_jn_pip_point, rdx_jn_pip_events, const rdx_jn_pip_bvhs *,
                        rdx_jn_pip_soft_rings, rdx_jn_pip_soft_planar, rdx_jn_pip_soft_general)

#endif /* RDX_JOIN_PIP_HD_H */
