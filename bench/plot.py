#!/usr/bin/env python3
"""Plots for the benchmark CSVs of `raydex bench` (one function per experiment).

usage: bench/plot.py CSV_DIR OUT_DIR
Each <experiment>.csv found in CSV_DIR that has a plot function below gets <experiment>.png in
OUT_DIR. Modules add their own functions to PLOTS (bench/plot_<module>.py files are imported).
"""
import csv
import glob
import importlib.util
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r.get("date") and not r["date"].startswith("date")]


def device_of(rs):
    return rs[0].get("device", "?") if rs else "?"


def keys_point(rs, out):
    """Point lookups: throughput and bytes per key, per kind and key width."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for r in rs:
        label = f"{r['backend']} {r['kind']} {r['dtype']}"
        x, y = float(r["bytes_per_key"]), float(r["lookups_per_s"]) / 1e9
        ax.scatter([x], [y], s=40)
        ax.annotate(label, (x, y), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set_xlabel("resident bytes per key")
    ax.set_ylabel("G lookups/s")
    ax.set_title(f"point lookups, 2^26 keys, 2^27 random hits ({device_of(rs)})", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def keys_range(rs, out):
    """Range lookups: result rows per second against hits per query."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = {}
    for r in rs:
        key = f"{r['backend']} {r['kind']} {r['op']}"
        hits = float(r["results"]) / max(1.0, float(r["lookups"])) if r["op"] == "range" else float(r["width"])
        series.setdefault(key, []).append((hits, float(r["results_per_s"] if r["op"] == "range" else r["lookups_per_s"]) / 1e9))
    for k, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("hits per range lookup")
    ax.set_ylabel("G rows/s (range) or G lookups/s (range-count)")
    ax.set_title(f"range lookups over 2^26 dense u32 keys ({device_of(rs)})", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


PLOTS = {"keys_point": keys_point, "keys_range": keys_range}

here = os.path.dirname(os.path.abspath(__file__))
for extra in sorted(glob.glob(os.path.join(here, "plot_*.py"))):
    spec = importlib.util.spec_from_file_location(os.path.basename(extra)[:-3], extra)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    PLOTS.update(getattr(mod, "PLOTS", {}))


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(src, "*.csv"))):
        name = os.path.basename(path)[:-4]
        if name in PLOTS:
            rs = rows(path)
            if rs:
                PLOTS[name](rs, os.path.join(dst, name + ".png"))
                print("plotted", name)


if __name__ == "__main__":
    main()
