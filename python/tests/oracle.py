"""Brute-force numpy references for the key and point queries."""
import numpy as np

MISS = np.uint64(2**64 - 1)


def lookup(keys, rows, queries):
    out = np.full(len(queries), MISS, dtype=np.uint64)
    for i, q in enumerate(queries):
        hit = rows[keys == q]
        if len(hit):
            out[i] = hit.min()
    return out


def csr(lists):
    offsets = np.zeros(len(lists) + 1, dtype=np.uint64)
    offsets[1:] = np.cumsum([len(x) for x in lists], dtype=np.uint64) if lists else []
    rows = np.concatenate([np.asarray(x, dtype=np.uint64) for x in lists]) if lists else np.zeros(0, np.uint64)
    return offsets, rows.astype(np.uint64)


def lookup_all(keys, rows, queries):
    return csr([np.sort(rows[keys == q]) for q in queries])


def key_range(keys, rows, lo, hi):
    return csr([np.sort(rows[(keys >= a) & (keys <= b)]) for a, b in zip(lo, hi)])


def window(xy, ids, boxes):
    x, y = xy[:, 0], xy[:, 1]
    return csr([np.sort(ids[(x >= b[0]) & (y >= b[1]) & (x <= b[2]) & (y <= b[3])]) for b in boxes])


def dist2(xy, q):
    p = xy.astype(np.float64)
    dx = p[:, 0] - np.float64(q[0])
    dy = p[:, 1] - np.float64(q[1])
    return dx * dx + dy * dy


def within(xy, ids, circles):
    return csr([np.sort(ids[dist2(xy, c) <= np.float64(c[2]) * np.float64(c[2])]) for c in circles])


def match(xy, ids, queries):
    return csr([np.sort(ids[(xy[:, 0] == q[0]) & (xy[:, 1] == q[1])]) for q in queries])


def knn(xy, ids, queries, k):
    out = []
    for q in queries:
        d = dist2(xy, q)
        order = np.lexsort((ids, d))
        out.append(ids[order[:k]])
    return csr(out)
