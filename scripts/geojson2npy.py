#!/usr/bin/env python3
"""A GeoJSON polygon layer as raydex's CSR arrays, for machines without GDAL (the GPU machine).

    scripts/geojson2npy.py IN.geo.json OUT_PREFIX

writes OUT_PREFIX.features.npy (u64, n_features + 1), OUT_PREFIX.rings.npy (u64, n_rings + 1)
and OUT_PREFIX.coords.npy (f64, (n_vertices, 2)), the input of
`raydex convert --features F --rings R --coords C --out L.rdxp`. Features keep the file's order;
a Polygon gives its rings, a MultiPolygon the rings of all its parts; any other geometry (or
none) is an error naming the feature, as rdx_polygons_load says for GDAL's formats. Coordinates
are the file's numbers parsed as f64, z dropped. Standard library only.
"""
import array
import json
import sys


def write_npy(path, typecode, descr, values, shape):
    data = array.array(typecode, values)
    if sys.byteorder != "little":
        data.byteswap()
    shape_s = "(%d,)" % shape[0] if len(shape) == 1 else "(%d, %d)" % shape
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_s)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("ascii"))
        data.tofile(f)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: geojson2npy.py IN.geo.json OUT_PREFIX")
    with open(sys.argv[1], "rb") as f:
        doc = json.load(f)
    feats = doc["features"] if doc.get("type") == "FeatureCollection" else [doc]
    fo, ro, xy = [0], [0], array.array("d")
    n_rings = n_verts = 0
    for i, feat in enumerate(feats):
        g = feat.get("geometry") if feat.get("type") == "Feature" else feat
        t = g.get("type") if g else None
        if t == "Polygon":
            parts = [g["coordinates"]]
        elif t == "MultiPolygon":
            parts = g["coordinates"]
        else:
            sys.exit("%s: feature %d is a %s, not a Polygon or MultiPolygon" % (sys.argv[1], i, t))
        for poly in parts:
            for ring in poly:
                for p in ring:
                    xy.append(float(p[0]))
                    xy.append(float(p[1]))
                n_verts += len(ring)
                n_rings += 1
                ro.append(n_verts)
        fo.append(n_rings)
    p = sys.argv[2]
    write_npy(p + ".features.npy", "Q", "<u8", fo, (len(fo),))
    write_npy(p + ".rings.npy", "Q", "<u8", ro, (len(ro),))
    write_npy(p + ".coords.npy", "d", "<f8", xy, (n_verts, 2))
    print("%s: %d features, %d rings, %d vertices" % (sys.argv[1], len(feats), n_rings, n_verts))


if __name__ == "__main__":
    main()
