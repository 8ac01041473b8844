"""raydex.PointIndex against brute-force numpy references: window, within, match and kNN on both
tree kinds and build methods, f32 and f64, on every backend present; updates; snapshots; errors."""
import gc

import numpy as np
import pytest

import oracle
import raydex

TREES = [("quadtree", "bottomup"), ("quadtree", "topdown"), ("kdtree", "bottomup")]
DTYPES = [np.float32, np.float64]


def make_points(rng, dtype, n):
    """Clustered points on a coarse grid, so exact duplicates and boundary ties are common."""
    xy = np.round(rng.random((n, 2)) * 64) / 4
    xy[: n // 10] = xy[0]  # a heap of duplicates (leaves at max_depth)
    return xy.astype(dtype)


def check_csr(got, want):
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("tree", TREES, ids=["-".join(t) for t in TREES])
@pytest.mark.parametrize("dtype", DTYPES)
def test_queries_match_numpy(context, rng, tree, dtype):
    n = 3000
    xy = make_points(rng, dtype, n)
    ids = np.arange(n, dtype=np.uint64)
    pts = raydex.PointIndex(xy, index=tree[0], build=tree[1], context=context, leaf_capacity=16)
    assert (pts.index, pts.dtype, len(pts), pts.backend) == (tree[0], np.dtype(dtype), n, context.backend)
    lo = np.round(rng.random((60, 2)) * 64) / 4
    wh = np.round(rng.random((60, 2)) * 16) / 4
    boxes = np.concatenate([lo, lo + wh], axis=1)
    boxes[0] = [5, 5, 4, 4]  # an empty window (xmin > xmax)
    boxes[1] = [-1, -1, 17, 17]  # everything
    boxes = boxes.astype(dtype)
    check_csr(pts.window(boxes), oracle.window(xy, ids, boxes))
    circles = np.concatenate([lo, rng.random((60, 1)) * 3], axis=1).astype(dtype)
    circles[0, 2] = 0  # r = 0: exact matches
    circles[1] = [xy[0, 0], xy[0, 1], 0]
    check_csr(pts.within(circles), oracle.within(xy, ids, circles))
    q = np.concatenate([xy[rng.integers(0, n, 30)], lo[:30].astype(dtype)]).astype(dtype)
    check_csr(pts.match(q), oracle.match(xy, ids, q))
    for k in (1, 7, 1024):
        check_csr(pts.knn(q, k), oracle.knn(xy, ids, q, k))
    check_csr(pts.knn(q, k=5), oracle.knn(xy, ids, q, 5))


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_index_and_batches(context, dtype):
    pts = raydex.PointIndex(np.zeros((0, 2), dtype=dtype), context=context)
    assert len(pts) == 0
    q = np.zeros((3, 2), dtype=dtype)
    check_csr(pts.knn(q, 4), (np.zeros(4, np.uint64), np.zeros(0, np.uint64)))
    check_csr(pts.window(np.zeros((0, 4), dtype=dtype)), (np.zeros(1, np.uint64), np.zeros(0, np.uint64)))


@pytest.mark.parametrize("tree", TREES, ids=["-".join(t) for t in TREES])
def test_updates_match_a_model(context, rng, tree):
    n = 1000
    xy = make_points(rng, np.float64, n)
    pts = raydex.PointIndex(xy, index=tree[0], build=tree[1], context=context,
                            box=(-1.0, -1.0, 20.0, 20.0))
    model = {i: xy[i] for i in range(n)}
    new = make_points(rng, np.float64, 200)
    first = pts.insert(new)
    assert first == n
    model.update({first + i: new[i] for i in range(200)})
    gone = rng.choice(n + 200, 150, replace=False).astype(np.uint64)
    pts.erase(gone)
    for i in gone:
        del model[int(i)]
    move_ids = np.array(sorted(model)[:100], dtype=np.uint64)
    to = make_points(rng, np.float64, 100)
    pts.move(move_ids, to)
    model.update({int(i): to[j] for j, i in enumerate(move_ids)})
    assert len(pts) == len(model)
    ids = np.array(sorted(model), dtype=np.uint64)
    all_xy = np.array([model[int(i)] for i in ids])
    boxes = np.array([[0, 0, 8, 8], [4, 4, 16, 16], [2.5, 0, 3, 20]], dtype=np.float64)
    check_csr(pts.window(boxes), oracle.window(all_xy, ids, boxes))
    q = all_xy[:20]
    check_csr(pts.knn(q, 9), oracle.knn(all_xy, ids, q, 9))
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_points_erase"):
        pts.erase(gone[:1])  # erased already
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_points_insert"):
        pts.insert(np.array([[100.0, 100.0]]))  # outside the box
    assert len(pts) == len(model)


def test_save_load_round_trip(rng, tmp_path):
    xy = make_points(rng, np.float64, 500)
    pts = raydex.PointIndex(xy, index="kdtree")
    pts.save(tmp_path / "p.rdx")
    again = raydex.load_points(tmp_path / "p.rdx")
    assert (again.index, len(again), again.dtype) == ("kdtree", 500, np.float64)
    q = xy[:50]
    check_csr(again.knn(q, 5), pts.knn(q, 5))
    with pytest.raises(raydex.FileError):
        raydex.load_points(tmp_path / "missing.rdx")


def test_errors_carry_the_library_message():
    xy = np.array([[0.0, 0.0], [1.0, 1.0], [np.nan, 2.0]])
    with pytest.raises(raydex.InvalidArgumentError, match=r"rdx_points_build: .*2"):
        raydex.PointIndex(xy)
    pts = raydex.PointIndex(xy[:2])
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_points_query"):
        pts.knn(np.zeros((1, 2)), 0)
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_points_query"):
        pts.knn(np.zeros((1, 2)), 1025)
    with pytest.raises(raydex.InvalidArgumentError, match="rdx_points_query"):
        pts.within(np.array([[0.0, 0.0, -1.0]]))
    with pytest.raises(ValueError, match=r"boxes must be a \(n, 4\) array of float64 .*got float32"):
        pts.window(np.zeros((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match=r"xy must be a \(n, 2\) array of float32 or float64; got int64"):
        raydex.PointIndex(np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        raydex.PointIndex(np.zeros((2, 3))[:, :2])
    with pytest.raises(ValueError, match="index must be"):
        raydex.PointIndex(xy[:2], index="rtree")
    with pytest.raises(ValueError, match="build must be"):
        raydex.PointIndex(xy[:2], build="sideways")


def test_lifetimes():
    ctx = raydex.Context(backend="cpu")
    pts = raydex.PointIndex(np.random.default_rng(1).random((100, 2)), context=ctx)
    del ctx
    gc.collect()
    offsets, ids = pts.knn(np.array([[0.5, 0.5]]), 3)
    with pts:
        pass
    assert pts.closed and "closed" in repr(pts)
    assert len(ids) == 3  # results outlive the index
    for call in (lambda: pts.knn(np.zeros((1, 2)), 1), lambda: pts.window(np.zeros((1, 4))),
                 lambda: pts.insert(np.zeros((1, 2))), lambda: pts.erase(np.zeros(1, np.uint64)),
                 lambda: len(pts), lambda: pts.describe()):
        with pytest.raises(ValueError, match="closed"):
            call()


def test_describe_and_u32_ids(context):
    xy = np.array([[0.0, 0.0], [4.0, 2.0], [1.0, 1.0]], dtype=np.float32)
    pts = raydex.PointIndex(xy, index="quadtree", build="topdown", context=context, leaf_capacity=1,
                            max_depth=5)
    d = pts.describe()
    assert (d["index"], d["build"], d["count"], d["id_end"]) == ("quadtree", "topdown", 3, 3)
    assert (d["leaf_capacity"], d["max_depth"], d["box"]) == (1, 5, (0.0, 0.0, 4.0, 2.0))
    assert d["n_leaves"] >= 3 and d["n_nodes"] > d["n_leaves"]
    pts.erase(np.array([1], dtype=np.uint32))
    pts.move(np.array([2], dtype=np.uint32), np.array([[3.0, 2.0]], dtype=np.float32))
    assert pts.window(np.array([[2, 0, 4, 2]], dtype=np.float32))[1].tolist() == [2]
    assert len(pts) == 2 and pts.describe()["id_end"] == 3
