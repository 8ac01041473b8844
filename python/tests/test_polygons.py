"""raydex.PolygonLayer, raydex.join, raydex.pip and raydex.sjoin: layers from arrays, shapely,
WKB, GeoPandas and files; joins and point in polygon against a shapely (GEOS) brute force on
random and adversarial layers; sjoin against geopandas.sjoin; errors carry the library's message."""
import gc
import json
import os

import numpy as np
import pytest

import raydex

shapely = pytest.importorskip("shapely")
from shapely import geometry as sg  # noqa: E402
from shapely import wkb as swkb  # noqa: E402
from shapely import wkt as swkt  # noqa: E402

OPS = ["intersects", "overlay", "contains", "within", "boxes"]


def square(x, y, w, h=None):
    return sg.box(x, y, x + w, y + (w if h is None else h))


def adversarial():
    """Shared edges, a touching corner, a hole with an island and a polygon touching the hole, a
    polygon inside another, a duplicate, a collinear overlap, a multipolygon, empty features."""
    donut = sg.Polygon([(6, 6), (10, 6), (10, 10), (6, 10)], [[(7, 7), (9, 7), (9, 9), (7, 9)]])
    return [
        square(0, 0, 2),                                    # 0
        square(2, 0, 2),                                    # 1 shares an edge with 0
        square(4, 2, 1),                                    # 2 touches 1 at the corner (4, 2)
        donut,                                              # 3 a hole
        square(7.5, 7.5, 1),                                # 4 an island in 3's hole
        square(0.5, 0.5, 1),                                # 5 inside 0
        sg.MultiPolygon([square(0, 5, 1), square(3, 5, 1)]),  # 6 a multipolygon
        square(0, 0, 2),                                    # 7 equal to 0
        sg.Polygon([(1, 0), (3, 0), (2, -1)]),              # 8 an edge along 0's and 1's bottoms
        None,                                               # 9 missing
        square(7, 7, 1),                                    # 10 in 3's hole, touching it
        sg.Polygon(),                                       # 11 empty
        square(1, 1, 2),                                    # 12 overlaps 0, 1, 5, 7
        sg.Polygon([(0, 2), (2, 2), (1, 3)]),               # 13 sits on 0's top edge
    ]


def random_layer(rng, n, span=12):
    """Boxes, triangles and boxes with holes on a coarse grid, so shared edges, touching vertices
    and collinear overlaps are common."""
    out = []
    for _ in range(n):
        x, y = rng.integers(0, span, 2) / 2
        w, h = rng.integers(1, 6, 2) / 2
        kind = rng.integers(0, 4)
        if kind == 0:
            out.append(sg.Polygon([(x, y), (x + w, y), (x, y + h)]))
        elif kind == 1 and w >= 1.5 and h >= 1.5:
            out.append(sg.Polygon(square(x, y, w, h).exterior.coords,
                                  [square(x + 0.5, y + 0.5, w - 1, h - 1).exterior.coords]))
        elif kind == 2:
            out.append(sg.MultiPolygon([square(x, y, w, h), square(x + w + 0.5, y, 0.5, 0.5)]))
        else:
            out.append(square(x, y, w, h))
    return out


def missing(g):
    return g is None or g.is_empty


def reference(r, s, op):
    """Sorted (r, s) pairs satisfying op by shapely, brute force."""
    pairs = []
    for i, a in enumerate(r):
        for j, b in enumerate(s):
            if missing(a) or missing(b):
                continue
            if op == "intersects":
                ok = a.intersects(b)
            elif op == "contains":
                ok = a.contains(b)
            elif op == "within":
                ok = a.within(b)
            elif op == "overlay":
                ok = a.relate(b)[0] != "F"  # interiors meet: relate pattern T********
            else:
                ax0, ay0, ax1, ay1 = a.bounds
                bx0, by0, bx1, by1 = b.bounds
                ok = ax0 <= bx1 and bx0 <= ax1 and ay0 <= by1 and by0 <= ay1
            if ok:
                pairs.append((i, j))
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def check_pairs(got, want):
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


# ------------------------------------------------------------------------------------------------
# layers


def test_from_arrays_describe_save_load(tmp_path, context):
    coords = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [0.5, 0.5], [1.5, 0.5], [1.5, 1.5], [0.5, 1.5],
                       [5, 5], [6, 5], [6, 6], [5, 5]], dtype=np.float64)  # ring 2 closes itself
    rings = np.array([0, 4, 8, 12], dtype=np.uint64)
    features = np.array([0, 2, 2, 3], dtype=np.uint64)  # a square with a hole, an empty feature, a triangle
    layer = raydex.PolygonLayer.from_arrays(coords, rings, features, context=context)
    assert isinstance(layer, raydex.PolygonLayer)
    assert (len(layer), layer.backend, layer.dtype, layer.context) == (3, context.backend, np.float64, context)
    d = layer.describe()
    assert (d["n_features"], d["n_rings"], d["n_vertices"], d["n_empty"]) == (3, 3, 11, 1)
    assert d["box"] == (0.0, 0.0, 6.0, 6.0) and d["dtype"] == "float64" and not d["indexed"]
    layer.build_index()
    assert layer.describe()["indexed"]
    path = tmp_path / "layer.rdxp"
    layer.save(path)
    again = raydex.PolygonLayer.from_file(str(path), context=context)
    assert isinstance(again, raydex.PolygonLayer)
    d2 = again.describe()
    for k in ("n_features", "n_rings", "n_vertices", "n_empty", "box", "dtype"):
        assert d2[k] == d[k]
    pts = np.array([[1, 1], [0.25, 0.25], [0.5, 0.5], [5.5, 5.2], [9, 9]], dtype=np.float64)
    for lay in (layer, again):
        offsets, ids = raydex.pip(lay, pts)
        assert offsets.tolist() == [0, 0, 1, 2, 3, 3] and ids.tolist() == [0, 0, 2]
        assert raydex.pip(lay, pts, first=True).tolist() == [-1, 0, 0, 2, -1]
    check_pairs(raydex.join(layer, again, "intersects"), ([0, 2], [0, 2]))
    # float32 coordinates stay float32
    f32 = raydex.PolygonLayer.from_arrays(coords.astype(np.float32), rings, features, context=context)
    assert f32.dtype == np.float32 and f32.describe()["dtype"] == "float32"


def test_lifetime_close_and_errors(context):
    layer = raydex.PolygonLayer.from_shapely([square(0, 0, 1)], context=context)
    with layer as same:
        assert same is layer
    assert layer.closed
    for call in (lambda: len(layer), layer.describe, lambda: layer.save("x.rdxp"),
                 lambda: raydex.join(layer, layer), lambda: raydex.pip(layer, np.zeros((1, 2)))):
        with pytest.raises(ValueError, match="closed"):
            call()
    layer.close()  # twice is fine
    assert "closed" in repr(layer)
    # a layer keeps its context alive; results outlive their layer
    ctx = raydex.Context(backend=context.backend)
    layer = raydex.PolygonLayer.from_shapely([square(0, 0, 1), square(0.5, 0.5, 1)], context=ctx)
    del ctx
    gc.collect()
    r, s = raydex.join(layer, layer)
    offsets, ids = raydex.pip(layer, np.array([[0.75, 0.75]]))
    del layer
    gc.collect()
    assert r.tolist() == [0, 0, 1, 1] and s.tolist() == [0, 1, 0, 1] and ids.tolist() == [0, 1]
    with pytest.raises(TypeError):
        raydex.PolygonLayer()
    with pytest.raises(TypeError, match="PolygonLayer"):
        raydex.join(np.zeros(3), np.zeros(3))


def test_bad_input_raises_library_message(context):
    ok_rings, ok_features = np.array([0, 4], np.uint64), np.array([0, 1], np.uint64)
    square_xy = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=np.float64)
    with pytest.raises(raydex.InvalidArgumentError, match="feature 0 ring 0") as e:
        raydex.PolygonLayer.from_arrays(np.array([[0, 0], [1, 1], [0, 0], [1, 1.0]]), ok_rings, ok_features,
                                        context=context)
    assert e.value.status == "RDX_ERR_INVALID_ARGUMENT"
    nan = square_xy.copy()
    nan[2, 0] = np.nan
    with pytest.raises(raydex.InvalidArgumentError, match="feature 0"):
        raydex.PolygonLayer.from_arrays(nan, ok_rings, ok_features, context=context)
    with pytest.raises(raydex.InvalidArgumentError):
        raydex.PolygonLayer.from_arrays(square_xy, np.array([0, 9], np.uint64), ok_features, context=context)
    with pytest.raises(ValueError, match="uint64"):
        raydex.PolygonLayer.from_arrays(square_xy, ok_rings.astype(np.int64), ok_features, context=context)
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        raydex.PolygonLayer.from_arrays(square_xy.ravel(), ok_rings, ok_features, context=context)
    with pytest.raises(ValueError, match="C-contiguous"):
        raydex.PolygonLayer.from_arrays(np.asfortranarray(square_xy), ok_rings, ok_features, context=context)
    with pytest.raises(TypeError, match="LineString"):
        raydex.PolygonLayer.from_shapely([square(0, 0, 1), sg.LineString([(0, 0), (1, 1)])], context=context)
    layer = raydex.PolygonLayer.from_arrays(square_xy, ok_rings, ok_features, context=context)
    with pytest.raises(ValueError, match="op must be"):
        raydex.join(layer, layer, "touches")
    with pytest.raises(ValueError, match="overlay"):
        raydex.join(layer, layer, "intersects", areas=True)
    with pytest.raises(raydex.InvalidArgumentError):
        raydex.pip(layer, np.array([[np.inf, 0.0]]))
    with pytest.raises(ValueError, match="same raydex.Context"):
        raydex.join(layer, raydex.PolygonLayer.from_arrays(square_xy, ok_rings, ok_features,
                                                          context=raydex.Context(backend=context.backend)))
    with pytest.raises(raydex.Error):
        raydex.PolygonLayer.from_file(os.path.join(os.path.dirname(__file__), "no-such-file.rdxp"),
                                      context=context)
    # an empty layer is valid and meets nothing
    empty = raydex.PolygonLayer.from_arrays(np.zeros((0, 2)), np.zeros(1, np.uint64), np.zeros(1, np.uint64),
                                            context=context)
    assert len(empty) == 0
    for op in OPS:
        check_pairs(raydex.join(empty, layer, op), ([], []))
    assert raydex.pip(empty, np.zeros((2, 2)), first=True).tolist() == [-1, -1]


def test_from_shapely_wkb_geopandas_round_trip(tmp_path, context):
    geoms = adversarial()
    layer = raydex.PolygonLayer.from_shapely(geoms, context=context)
    d = layer.describe()
    n_rings = sum(0 if missing(g) else sum(1 + len(p.interiors) for p in getattr(g, "geoms", [g]))
                  for g in geoms)
    assert (d["n_features"], d["n_rings"], d["n_empty"]) == (len(geoms), n_rings, 2)
    wkbs = [None if g is None else swkb.dumps(g) for g in geoms]
    from_wkb = raydex.PolygonLayer.from_wkb(wkbs, context=context)
    assert from_wkb.describe()["n_vertices"] == d["n_vertices"]
    layer.save(tmp_path / "adv.rdxp")
    loaded = raydex.PolygonLayer.from_file(tmp_path / "adv.rdxp", context=context)
    want = reference(geoms, geoms, "intersects")
    for a, b in ((layer, from_wkb), (from_wkb, loaded), (loaded, layer)):
        check_pairs(raydex.join(a, b), want)
    gpd = pytest.importorskip("geopandas")
    gdf = gpd.GeoDataFrame({"v": range(len(geoms))}, geometry=geoms)
    check_pairs(raydex.join(raydex.PolygonLayer.from_geopandas(gdf, context=context), layer), want)


def test_from_file_geojson(tmp_path):
    if not raydex.info()["have_gdal"]:
        pytest.skip("raydex was built without GDAL: from_file reads .rdxp only")
    geoms = [square(0, 0, 2), sg.MultiPolygon([square(3, 0, 1), square(5, 0, 1)]), square(1, 1, 3)]
    doc = {"type": "FeatureCollection",
           "features": [{"type": "Feature", "properties": {"i": i}, "geometry": sg.mapping(g)}
                        for i, g in enumerate(geoms)]}
    path = tmp_path / "layer.geojson"
    path.write_text(json.dumps(doc))
    layer = raydex.PolygonLayer.from_file(path)
    assert len(layer) == 3
    check_pairs(raydex.join(layer, raydex.PolygonLayer.from_shapely(geoms, context=layer.context), "within"),
                reference(geoms, geoms, "within"))


# ------------------------------------------------------------------------------------------------
# joins and point in polygon


@pytest.mark.parametrize("op", OPS)
def test_join_adversarial_matches_shapely(context, op):
    geoms = adversarial()
    r = raydex.PolygonLayer.from_shapely(geoms, context=context)
    s = raydex.PolygonLayer.from_shapely(geoms[::-1], context=context)
    check_pairs(raydex.join(r, r, op), reference(geoms, geoms, op))
    check_pairs(raydex.join(r, s, op), reference(geoms, geoms[::-1], op))


@pytest.mark.parametrize("op", OPS)
def test_join_random_matches_shapely(context, rng, op):
    a, b = random_layer(rng, 40), random_layer(rng, 30)
    r = raydex.PolygonLayer.from_shapely(a, context=context)
    s = raydex.PolygonLayer.from_shapely(b, context=context)
    if rng.integers(0, 2):
        r.build_index()
    check_pairs(raydex.join(r, s, op), reference(a, b, op))


def test_overlay_areas(context, rng):
    a, b = random_layer(rng, 25), adversarial()
    r = raydex.PolygonLayer.from_shapely(a, context=context)
    s = raydex.PolygonLayer.from_shapely(b, context=context)
    ri, si, areas = raydex.join(r, s, "overlay", areas=True)
    check_pairs((ri, si), reference(a, b, "overlay"))
    want = [a[i].intersection(b[j]).area for i, j in zip(ri, si)]
    np.testing.assert_allclose(areas, want, rtol=1e-9, atol=1e-12)
    assert (areas > 0).all()


def test_pip_matches_shapely(context, rng):
    geoms = adversarial() + random_layer(rng, 20)
    layer = raydex.PolygonLayer.from_shapely(geoms, context=context)
    xy = np.concatenate([rng.integers(-2, 24, (400, 2)) / 2,  # vertices and edges are hit often
                         rng.random((200, 2)) * 12]).astype(np.float64)
    offsets, ids = raydex.pip(layer, xy)
    first = raydex.pip(layer, xy, first=True)
    assert offsets.dtype == np.uint64 and first.dtype == np.int64 and len(offsets) == len(xy) + 1
    for i, (x, y) in enumerate(xy):
        p = sg.Point(x, y)
        want = [j for j, g in enumerate(geoms) if not missing(g) and g.intersects(p)]
        assert ids[offsets[i]:offsets[i + 1]].tolist() == want, (i, x, y)
        assert first[i] == (want[0] if want else -1)
    f32 = raydex.pip(layer, xy.astype(np.float32))
    np.testing.assert_array_equal(f32[1], ids)


# ------------------------------------------------------------------------------------------------
# sjoin against geopandas.sjoin


def sorted_frame(df, key):
    out = df.reset_index()
    cols = [out.columns[0], key]
    return out.sort_values(cols, kind="stable").reset_index(drop=True)


def assert_same_sjoin(got, want, how, key=None):
    from geopandas.testing import assert_geodataframe_equal

    if key is None:
        key = "index_left" if how == "right" else "index_right"
    assert list(got.columns) == list(want.columns) and got.index.name == want.index.name
    assert_geodataframe_equal(sorted_frame(got, key), sorted_frame(want, key))


def frames(rng):
    gpd = pytest.importorskip("geopandas")
    pytest.importorskip("rtree" if not getattr(__import__("geopandas")._compat, "USE_PYGEOS", False) else "pygeos")
    a, b = random_layer(rng, 30), random_layer(rng, 25) + adversarial()
    left = gpd.GeoDataFrame({"name": [f"l{i}" for i in range(len(a))], "v": rng.random(len(a))}, geometry=a,
                            index=rng.permutation(len(a)) + 100)
    right = gpd.GeoDataFrame({"name": [f"r{i}" for i in range(len(b))], "w": np.arange(len(b))}, geometry=b)
    xy = np.concatenate([rng.integers(0, 20, (60, 2)) / 2, rng.random((40, 2)) * 10])
    points = gpd.GeoDataFrame({"pid": np.arange(len(xy))}, geometry=[sg.Point(x, y) for x, y in xy])
    return gpd, left, right, points


@pytest.mark.parametrize("predicate", ["intersects", "contains", "within"])
def test_sjoin_polygons_equals_geopandas(rng, predicate):
    gpd, left, right, _ = frames(rng)
    for how in ("inner", "left", "right"):
        want = gpd.sjoin(left, right, how=how, predicate=predicate)
        got = raydex.sjoin(left, right, how=how, predicate=predicate, backend="cpu")
        assert_same_sjoin(got, want, how)
    want = gpd.sjoin(right, right, predicate=predicate)  # adversarial self-join
    assert_same_sjoin(raydex.sjoin(right, right, predicate=predicate), want, "inner")


@pytest.mark.parametrize("predicate", ["intersects", "contains", "within"])
def test_sjoin_points_equals_geopandas(rng, predicate):
    gpd, _, right, points = frames(rng)
    for how in ("inner", "left", "right"):
        for a, b in ((points, right), (right, points), (points, points.iloc[::3])):
            want = gpd.sjoin(a, b, how=how, predicate=predicate)
            got = raydex.sjoin(a, b, how=how, predicate=predicate)
            assert_same_sjoin(got, want, how)


def test_sjoin_edges(rng):
    gpd, left, right, points = frames(rng)
    empty = right.iloc[:0]
    for how in ("inner", "left", "right"):
        assert_same_sjoin(raydex.sjoin(left, empty, how=how), gpd.sjoin(left, empty, how=how), how)
    named = left.set_index("v", append=True)  # a MultiIndex on the left, a named index on the right
    renamed = right.rename_axis("rid")
    for how in ("inner", "left", "right"):
        assert_same_sjoin(raydex.sjoin(named, renamed, how=how), gpd.sjoin(named, renamed, how=how), how,
                          key="index_left0" if how == "right" else "index_right")
        assert_same_sjoin(raydex.sjoin(left, right, how=how, lsuffix="a", rsuffix="b"),
                          gpd.sjoin(left, right, how=how, lsuffix="a", rsuffix="b"),
                          "right" if how == "right" else "inner", key="index_a" if how == "right" else "index_b")
    with pytest.raises(NotImplementedError, match="touches"):
        raydex.sjoin(left, right, predicate="touches")
    with pytest.raises(ValueError, match="how"):
        raydex.sjoin(left, right, how="outer")
    lines = gpd.GeoDataFrame({"a": [1]}, geometry=[sg.LineString([(0, 0), (1, 1)])])
    with pytest.raises(NotImplementedError, match="LineString"):
        raydex.sjoin(lines, right)
    clash = left.rename(columns={"v": "index_right"})
    with pytest.raises(ValueError, match="cannot be names"):
        raydex.sjoin(clash, right)


def test_no_leaks_over_many_calls():
    """10^4 joins, point-in-polygon calls and layers made and closed: the context's memory account
    returns to where it was and the process does not grow (results are freed with their arrays)."""
    ctx = raydex.Context(backend="cpu")
    geoms = adversarial()
    r = raydex.PolygonLayer.from_shapely(geoms, context=ctx)
    arrays = raydex._polygons._polygon_arrays(geoms)
    xy = np.array([[1.0, 1.0], [7.5, 8.0], [20.0, 20.0]])

    def rss_pages():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    def burst(n):
        for i in range(n):
            raydex.join(r, r, OPS[i % len(OPS)])
            raydex.join(r, r, "overlay", areas=True)
            raydex.pip(r, xy)
            raydex.pip(r, xy, first=True)
            if i % 10 == 0:
                raydex.PolygonLayer.from_arrays(*arrays, context=ctx).close()

    burst(1000)
    held, rss = ctx.memory()[0], rss_pages()
    burst(10000)
    assert ctx.memory()[0] == held
    assert rss_pages() - rss < 2560  # 10 MiB of 4 KiB pages; a leak of one result per call is far more


SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "data", "sample")


@pytest.mark.parametrize("name", ["tiles", "us-counties-ri-de"])
def test_sample_layers_files_and_sjoin(name):
    """The committed sample layers (a hole with an island, a shell touching its hole, real county
    boundaries): .rdxp (and GeoJSON with GDAL) read by from_file join like the same file read by
    GeoPandas, and sjoin of the layer with itself equals geopandas.sjoin for each predicate."""
    gpd = pytest.importorskip("geopandas")
    pytest.importorskip("fiona")
    gdf = gpd.read_file(os.path.join(SAMPLES, name + ".geojson"))
    ctx = raydex.Context(backend="cpu")
    mine = raydex.PolygonLayer.from_geopandas(gdf, context=ctx)
    files = [raydex.PolygonLayer.from_file(os.path.join(SAMPLES, name + ".rdxp"), context=ctx)]
    if raydex.info()["have_gdal"]:
        files.append(raydex.PolygonLayer.from_file(os.path.join(SAMPLES, name + ".geojson"), context=ctx))
    geoms = list(gdf.geometry)
    for op in OPS:
        want = reference(geoms, geoms, op)
        for layer in [mine] + files:
            check_pairs(raydex.join(layer, mine, op), want)
    for predicate in ("intersects", "contains", "within"):
        assert_same_sjoin(raydex.sjoin(gdf, gdf, predicate=predicate), gpd.sjoin(gdf, gdf, predicate=predicate),
                          "inner")


def test_join_releases_the_gil():
    """A join of some 8000 boxes on another thread (about 0.2 s) leaves this thread running Python
    meanwhile: the longest pause it sees is far shorter than the call."""
    import threading
    import time

    rng = np.random.default_rng(7)
    n = 8000
    lo, wh, z = rng.random((n, 2)) * 100, rng.random((n, 2)) * 2 + 0.1, np.zeros(n)
    coords = np.stack([lo, lo + np.c_[wh[:, 0], z], lo + wh, lo + np.c_[z, wh[:, 1]]], axis=1).reshape(-1, 2)
    layer = raydex.PolygonLayer.from_arrays(np.ascontiguousarray(coords), np.arange(0, 4 * n + 1, 4, dtype=np.uint64),
                                            np.arange(n + 1, dtype=np.uint64),
                                            context=raydex.Context(backend="cpu", threads=1))
    go, done, took = threading.Event(), threading.Event(), []

    def work():
        go.wait()
        t0 = time.perf_counter()
        raydex.join(layer, layer, "overlay")
        took.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    last = time.perf_counter()
    longest = 0.0
    go.set()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    t.join()
    assert longest < took[0] / 2, (longest, took[0])


def test_from_wkb_flavours_and_errors(context):
    """Little- and big-endian WKB, EWKB with Z and an SRID, ISO Z, and malformed or foreign blobs."""
    import struct

    donut = adversarial()[3]
    multi = adversarial()[6]
    want = raydex.PolygonLayer.from_shapely([donut, multi], context=context).describe()
    z = sg.Polygon([(x, y, 7.0) for x, y in donut.exterior.coords], [[(x, y, 1.0) for x, y in r.coords]
                                                                      for r in donut.interiors])
    iso = struct.pack("<BII", 1, 1003, 1) + struct.pack("<I", 4) + np.array(
        [[0, 0, 5], [1, 0, 5], [1, 1, 5], [0, 0, 5]], dtype="<f8").tobytes()
    for blobs in ([donut.wkb, multi.wkb],
                  [swkb.dumps(donut, big_endian=True), swkb.dumps(multi, big_endian=True)],
                  [swkb.dumps(z, srid=4326), swkb.dumps(multi, srid=4326)]):
        got = raydex.PolygonLayer.from_wkb(blobs, context=context).describe()
        assert {k: got[k] for k in ("n_features", "n_rings", "n_vertices", "box")} == \
            {k: want[k] for k in ("n_features", "n_rings", "n_vertices", "box")}
    tri = raydex.PolygonLayer.from_wkb([iso, None], context=context).describe()
    assert (tri["n_features"], tri["n_rings"], tri["n_vertices"], tri["n_empty"]) == (2, 1, 3, 1)
    with pytest.raises(TypeError, match="feature 1 is a LineString"):
        raydex.PolygonLayer.from_wkb([donut.wkb, sg.LineString([(0, 0), (1, 1)]).wkb], context=context)
    with pytest.raises(ValueError, match="feature 0: malformed WKB"):
        raydex.PolygonLayer.from_wkb([donut.wkb[:-5]], context=context)


def test_wkb_arrays_match_shapely_and_refuse_every_truncation(rng):
    """The C WKB reader against shapely's own reading of random polygons and multipolygons, in both
    byte orders, with Z; every prefix of a blob is refused with an error, never read past its end."""
    from raydex._polygons import _wkb_arrays

    def poly():
        n = int(rng.integers(3, 9))
        shell = [tuple(p) for p in rng.random((n, 2))]
        hole = [tuple(0.4 + 0.1 * p) for p in rng.random((3, 2))]
        return sg.Polygon(shell, [hole] if rng.random() < 0.3 else [])

    for trial in range(100):
        geoms = []
        for _ in range(int(rng.integers(0, 6))):
            k = rng.random()
            geoms.append(None if k < 0.2 else poly() if k < 0.6 else
                         sg.MultiPolygon([poly() for _ in range(int(rng.integers(1, 4)))]))
        blobs = [None if g is None else swkb.dumps(g, big_endian=bool(rng.random() < 0.5)) for g in geoms]
        coords, rings, features = _wkb_arrays(blobs)
        want_xy, want_rings, want_features = [], [0], [0]
        for g in geoms:
            n_rings = 0
            for p in [] if g is None else [g] if g.geom_type == "Polygon" else list(g.geoms):
                for ring in [p.exterior, *p.interiors]:
                    want_xy.extend(ring.coords)
                    want_rings.append(len(want_xy))
                    n_rings += 1
            want_features.append(want_features[-1] + n_rings)
        assert np.array_equal(coords, np.array(want_xy, dtype=np.float64).reshape(-1, 2)), trial
        assert rings.tolist() == want_rings and features.tolist() == want_features, trial
        for b in blobs[:2]:
            if b is None:
                continue
            for cut in range(len(b)):
                with pytest.raises((ValueError, TypeError), match="feature 0"):
                    _wkb_arrays([b[:cut]])


def test_geos_arrays_match_wkb_arrays(rng, monkeypatch):
    """shapely 1.8's geometries read through GEOS's C API (python/src/wkb.c) give the arrays their
    WKB gives: random polygons and multipolygons with holes, Z, empty parts, None, NaN and empty
    geometries; other types are refused with the WKB reader's words; without the GEOS path the WKB
    one is taken."""
    from raydex import _polygons

    if int(shapely.__version__.split(".")[0]) >= 2:
        pytest.skip("shapely 2 converts with its vectorized functions, not through the extension")
    if _polygons._geos_api() is None:
        pytest.skip("the extension lacks _geos_polygon_arrays (registered in python/src/raydex_module.c) "
                    "or GEOS < 3.10: from_shapely reads WKB")

    def poly(z=False):
        n = int(rng.integers(3, 9))
        shell = [tuple(p) for p in rng.random((n, 3 if z else 2))]
        hole = [tuple(0.4 + 0.1 * p) for p in rng.random((3, 3 if z else 2))]
        return sg.Polygon(shell, [hole] if rng.random() < 0.3 else [])

    def via_wkb(geoms):
        return _polygons._wkb_arrays([None if _polygons._is_missing(g) else g.wkb for g in geoms])

    for trial in range(100):
        geoms = []
        for _ in range(int(rng.integers(0, 6))):
            k, z = rng.random(), bool(rng.random() < 0.2)
            geoms.append(None if k < 0.1 else float("nan") if k < 0.15 else sg.Polygon() if k < 0.2 else
                         poly(z) if k < 0.6 else
                         sg.MultiPolygon([poly(z) for _ in range(int(rng.integers(1, 4)))]))
        got, want = _polygons._polygon_arrays(geoms), via_wkb(geoms)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), trial
    # a MultiPolygon with an empty part: WKB writes the part without rings
    multi = swkt.loads("MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), EMPTY, ((5 5, 6 5, 6 6, 5 5)))")
    for a, b in zip(_polygons._polygon_arrays([multi, adversarial()[3]]), via_wkb([multi, adversarial()[3]])):
        assert np.array_equal(a, b)
    for bad, name in ((sg.LineString([(0, 0), (1, 1)]), "LineString"),
                      (sg.LinearRing([(0, 0), (1, 0), (1, 1)]), "LineString"), (sg.Point(0, 0), "Point"),
                      (sg.GeometryCollection([square(0, 0, 1)]), "GeometryCollection")):
        with pytest.raises(TypeError, match=f"feature 1 is a {name}, not a Polygon or MultiPolygon"):
            _polygons._polygon_arrays([square(0, 0, 1), bad])
        with pytest.raises(TypeError, match=f"feature 1 is a {name}, not a Polygon or MultiPolygon"):
            via_wkb([square(0, 0, 1), bad])
    with pytest.raises(TypeError, match="feature 0 is a str"):
        _polygons._polygon_arrays(np.array(["POLYGON"], dtype=object))
    # shapely 1.8's deprecated adapters remake their GEOS geometry on each access: read as copies,
    # the same adapter twice included
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from shapely.geometry import asPolygon

        shell, hole = [(0, 0), (4, 0), (4, 4), (0, 4)], [(1, 1), (2, 1), (2, 2), (1, 1)]
        adapter = asPolygon(shell, [hole])
        geoms = [adapter, square(5, 5, 1), adapter]
        want = via_wkb([sg.Polygon(shell, [hole]), square(5, 5, 1), sg.Polygon(shell, [hole])])
        for a, b in zip(_polygons._polygon_arrays(geoms), want):
            assert np.array_equal(a, b)
    geoms = adversarial()
    want = [a.copy() for a in _polygons._polygon_arrays(geoms)]
    monkeypatch.setattr(_polygons, "_geos_api", lambda: None)
    for a, b in zip(_polygons._polygon_arrays(geoms), want):
        assert np.array_equal(a, b)
