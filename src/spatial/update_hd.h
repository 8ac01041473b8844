/*
 * update_hd.h: the rules every update engine follows, written once for the host (update_cpu.c)
 * and the device (update*.cu). G-PICS Section 5 (Fig. 11) leaves three of them open; raydex's
 * answers are here. The leaf rule itself, which builds follow too, is rdx_sp_leaf
 * (traverse_hd.h): after any batch the tree is what that rule gives top-down from the root, so a
 * quadtree has exactly a fresh build's nodes, and a k-d tree keeps its splits where nodes stay.
 *
 * Batch ids. A move or an erase names live ids, each once. A row is bad when its id was never
 * given (UNKNOWN), was erased (ERASED) or repeats an earlier row's (REPEATED); the row reported is
 * the lowest row of the first two kinds, else the lowest repeating row, whatever the engine. The
 * device ranks bad rows by rdx_sp_bad_rank with an atomicMin.
 *
 * Hole repair (paged layouts; G-PICS's Leaf-Lists-Update with paging). A leaf that stays a leaf
 * and whose new length c fits its room keeps its page: of its old len0 slots, the holes that
 * removed points left below head = min(c, len0) take, in slot order, the incoming points first
 * and then the live points of the tail [c, len0), in slot order; incoming points past the holes
 * are appended at len0, len0 + 1, ... Only points that must move do, and the leaf's points end
 * up in [fpos, fpos + c).
 *
 * Nodes. The new tree's nodes are sorted into BFS order by rdx_sp_bfs_rank, written by
 * rdx_sp_node_put, and each internal node linked to its children by rdx_sp_link_children, which
 * also says whether it has them all (a k-d node has two).
 */
#ifndef RDX_SPATIAL_UPDATE_HD_H
#define RDX_SPATIAL_UPDATE_HD_H

enum { RDX_SP_BAD_UNKNOWN = 1, RDX_SP_BAD_ERASED = 2, RDX_SP_BAD_REPEATED = 3 };

/* 0 for a good id, else RDX_SP_BAD_UNKNOWN or _ERASED (live: whether the index holds it). */
RDX_HD int rdx_sp_id_state(uint64_t id, uint64_t id_end, int live) {
  return id >= id_end ? RDX_SP_BAD_UNKNOWN : !live ? RDX_SP_BAD_ERASED : 0;
}
/* A bad row's rank: the lowest rank is the row reported (repeats rank after every unknown or
 * erased id). */
RDX_HD uint64_t rdx_sp_bad_rank(int64_t row, int what) {
  return (what == RDX_SP_BAD_REPEATED ? (uint64_t)1 << 62 : 0) + (uint64_t)row * 4 + (uint64_t)what;
}

/* The hole repair's head: holes below it are filled, points at or past it fill them. */
RDX_HD int64_t rdx_sp_repair_head(int64_t len0, int64_t c) { return c < len0 ? c : len0; }

/* BFS order as one integer: the nodes of the levels above plus the key (G-PICS's node ids: a
 * quadtree's levels hold 4^l keys, a k-d tree's 2^l). Depth <= 31 (quadtree) or 56 (k-d) keeps
 * it below 2^63; the bits it needs are rdx_sp_bfs_bits. */
RDX_HD uint64_t rdx_sp_bfs_rank(int level, uint64_t key, int kd) {
  return kd ? ((uint64_t)1 << level) - 1 + key : ((((uint64_t)1 << (2 * level)) - 1) / 3) + key;
}
RDX_HD int rdx_sp_bfs_bits(int max_level, int kd) { return kd ? max_level + 1 : 2 * max_level + 1; }

/* Node i of N (any memory the caller can write) from a list node; room only for leaves. */
RDX_HD void rdx_sp_node_put(const rdx_sp_nodes *N, int64_t i, const rdx_sp_hnode *p) {
  N->key[i] = p->key, N->fpos[i] = p->fpos, N->len[i] = p->len, N->count[i] = p->count;
  N->room[i] = p->leaf ? p->room : 0, N->split[i] = p->split;
  N->level[i] = (uint8_t)p->level, N->leaf[i] = (uint8_t)p->leaf;
}

/* Internal node i of nodes o[0, n) in BFS order: its children are the next level's nodes whose
 * key without its last 2 bits (1 for k-d) is its key, contiguous. Sets fpos and len; returns 0
 * when i comes after node i - 1 in BFS order and has its children (two for k-d), else 1. */
RDX_HD int rdx_sp_link_children(const rdx_sp_nodes *o, int64_t n, int64_t i, int kd) {
  if (i > 0 && rdx_sp_bfs_rank(o->level[i - 1], o->key[i - 1], kd) >= rdx_sp_bfs_rank(o->level[i], o->key[i], kd)) return 1;
  if (o->leaf[i]) return 0;
  const int bits = kd ? 1 : 2, l = o->level[i] + 1;
  const uint64_t k = o->key[i], first = rdx_sp_bfs_rank(l, k << bits, kd);
  int64_t a = i + 1, b = n;
  while (a < b) {
    const int64_t mid = a + (b - a) / 2;
    if (rdx_sp_bfs_rank(o->level[mid], o->key[mid], kd) < first) a = mid + 1;
    else b = mid;
  }
  int64_t e = a;
  while (e < n && (int)o->level[e] == l && (o->key[e] >> bits) == k) e++;
  o->fpos[i] = a, o->len[i] = e - a;
  return e == a || (kd && e - a != 2);
}

#endif /* RDX_SPATIAL_UPDATE_HD_H */
