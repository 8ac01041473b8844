#!/usr/bin/env python3
"""plot_rt.py: plots and a summary of the ray-tracing key-index benchmarks (scripts/gpu-check.d/rt.sh).

    python3 bench/plot_rt.py CSV_DIR OUT_DIR

Reads rt_memory.csv, rt_range.csv, rt_range_count.csv, rt_batch.csv, rt_hits_inside.csv, rt_hits_outside.csv and rt_zipf.csv
(rows of `raydex bench keys`), writes one PNG per experiment (the cgRX paper's Figures 12-17) and
rt_summary.txt: the issue's targets (cgrx memory per key, cgrx throughput per byte against rx, cgrx ranges
against rx, rx point lookups on OptiX) and which GPU backend wins by how much. Without matplotlib only the
summary is written. One plot function per experiment, as bench/plot.py.
"""
import csv
import math
import os
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # the summary still gets written
    plt = None


def read(csv_dir, name):
    path = os.path.join(csv_dir, name + ".csv")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if r.get("date") and r["date"] != "date"]
    for r in rows:
        for k in ("n", "lookups", "width", "batch", "bucket", "results"):
            r[k] = int(float(r[k]))
        for k in ("uniformity", "hit_ratio", "zipf", "build_ms", "query_ms", "lookups_per_s", "results_per_s",
                  "bytes_per_key", "peak_bytes_per_key"):
            r[k] = float(r[k])
    return rows


def label(r):
    """kind (with bucket for cgrx) and backend, e.g. 'cgrx(32) optix'"""
    k = r["kind"]
    if k.startswith("cgrx"):
        k = "%s(%d)" % (k, r["bucket"])
    return "%s %s" % (k, r["backend"])


def style(r):
    color = {"optix": "tab:red", "cuda": "tab:blue", "cpu": "tab:gray"}.get(r["backend"], "black")
    k = r["kind"].split("+")[0]
    marker = {"rx": "^", "cgrx": "o", "sorted": "s", "btree": "D", "hash": "x", "scan": "."}.get(k, "*")
    if k in ("sorted", "btree", "hash", "scan"):
        color = {"sorted": "tab:green", "btree": "tab:purple", "hash": "tab:orange"}.get(k, "black")
    return color, marker


def tput_per_byte(r):
    """lookups per second per byte of index (the paper's throughput / memory footprint)"""
    return r["lookups_per_s"] / max(r["bytes_per_key"] * r["n"], 1.0)


def plot_memory(rows, out):
    """(a) Figures 12/13: throughput against memory, one panel per key width and uniformity"""
    if not rows or plt is None:
        return
    panels = sorted({(r["dtype"], r["uniformity"]) for r in rows})
    cols = min(4, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.6 * nrows), squeeze=False)
    for ax, (dt, u) in zip(axes.flat, panels):
        for r in rows:
            if (r["dtype"], r["uniformity"]) != (dt, u):
                continue
            c, m = style(r)
            ax.scatter(r["bytes_per_key"], r["lookups_per_s"] / 1e9, color=c, marker=m, s=36)
            ax.annotate(label(r), (r["bytes_per_key"], r["lookups_per_s"] / 1e9), fontsize=5.5,
                        xytext=(3, 2), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_title("%s keys, uniformity %g %%" % (dt, u), fontsize=9)
        ax.set_xlabel("resident bytes per key")
        ax.set_ylabel("point lookups [G/s]")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    n, m = rows[0]["n"], rows[0]["lookups"]
    fig.suptitle("(a) throughput vs memory, 2^%d keys, 2^%d lookups, %s" % (round(math.log2(n)), round(math.log2(m)),
                                                                             rows[0]["device"]), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rt_memory.png"), dpi=140)
    plt.close(fig)


def plot_lines(rows, out, name, x, y, xlabel, ylabel, title, logx=True, logy=True, split=None):
    """one line per (kind, bucket, backend) of y(x), optionally one panel per value of `split`"""
    if not rows or plt is None:
        return
    groups = [None] if split is None else sorted({r[split] for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(6 * len(groups), 4.2), squeeze=False)
    for ax, g in zip(axes.flat, groups):
        lines = defaultdict(list)
        for r in rows:
            if split is None or r[split] == g:
                lines[label(r)].append((x(r), y(r), r))
        for lab, pts in sorted(lines.items()):
            pts.sort(key=lambda p: p[0])
            c, m = style(pts[0][2])
            ls = "--" if pts[0][2]["backend"] == "optix" else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=m, color=c, linestyle=ls, label=lab, ms=4)
        if logx:
            ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
        if g is not None:
            ax.set_title("%s = %s" % (split, g), fontsize=9)
    fig.suptitle("%s (%s)" % (title, rows[0]["device"]), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name + ".png"), dpi=140)
    plt.close(fig)


def plot_range(rows, counts, out):
    """(b) Figure 14: time per returned (or counted) row against rows per lookup"""
    both = [dict(r, op="range (rows returned)") for r in rows] + [dict(r, op="range-count") for r in counts]
    # range-count rows carry no result total: the rows per lookup are the width (dense keys)
    for r in both:
        if r["op"] == "range-count":
            r["results"] = r["width"] * r["lookups"]
    plot_lines(both, out, "rt_range", lambda r: r["width"], lambda r: r["query_ms"] * 1e6 / max(r["results"], 1),
               "rows per range lookup", "ns per row", "(b) range lookups, dense u32 keys", split="op")


def plot_batch(rows, out):
    """(c) Figure 15: time per lookup against batch size"""
    plot_lines(rows, out, "rt_batch", lambda r: r["batch"], lambda r: r["query_ms"] * 1e6 / r["lookups"],
               "lookups per batch", "ns per lookup", "(c) batch size")


def plot_hits(inside, outside, out):
    """(d) Figure 16: lookup time against hit ratio, misses inside and outside the key range"""
    rows = [dict(r, miss="inside") for r in inside] + [dict(r, miss="outside") for r in outside]
    plot_lines(rows, out, "rt_hits", lambda r: r["hit_ratio"], lambda r: r["query_ms"], "hit ratio",
               "ms per batch", "(d) hit ratio", logx=False, split="miss")


def plot_zipf(rows, out):
    """(e) Figure 17: lookup time against Zipf coefficient"""
    plot_lines(rows, out, "rt_zipf", lambda r: r["zipf"], lambda r: r["query_ms"], "Zipf coefficient",
               "ms per batch", "(e) Zipf-skewed lookups", logx=False)


def summary(memory, ranges):
    """the issue's targets, per backend, from the same run"""
    lines = []
    if memory:
        lines.append("device: %s" % memory[0]["device"])
        by = {(r["dtype"], r["uniformity"], r["n"], r["backend"], r["kind"], r["bucket"]): r for r in memory}
        for (dt, u, n, be, kind, b), r in sorted(by.items()):
            if kind != "cgrx" or b != 32:
                continue
            rx = by.get((dt, u, n, be, "rx", 0))
            ratio = tput_per_byte(r) / tput_per_byte(rx) if rx else float("nan")
            lines.append("(a) %s u=%g%% n=%d %-5s cgrx(32): %.2f B/key (target <= 12 for u32), %.3g lookups/s; "
                         "throughput/byte vs rx %.2fx (targets >= 3.4x at 2^26, >= 5x at 2^24)"
                         % (dt, u, n, be, r["bytes_per_key"], r["lookups_per_s"], ratio))
        for (dt, u, n, be, kind, b), r in sorted(by.items()):
            if kind == "rx":
                lines.append("(a) %s u=%g%% n=%d %-5s rx: %.3g lookups/s (target on optix >= 1.28e9 at 2^26), "
                             "%.1f B/key, build %.1f ms" % (dt, u, n, be, r["lookups_per_s"], r["bytes_per_key"],
                                                           r["build_ms"]))
        # soft-CUDA against OptiX, kind by kind
        for (dt, u, n, be, kind, b), r in sorted(by.items()):
            if be != "cuda" or kind not in ("rx", "cgrx"):
                continue
            o = by.get((dt, u, n, "optix", kind, b))
            if o:
                f = r["lookups_per_s"] / o["lookups_per_s"]
                lines.append("(a) %s u=%g%% n=%d %s%s: soft-cuda %.3g/s, optix %.3g/s: %s wins by %.2fx"
                             % (dt, u, n, kind, "(%d)" % b if kind == "cgrx" else "", r["lookups_per_s"],
                                o["lookups_per_s"], "soft-cuda" if f >= 1 else "optix", f if f >= 1 else 1 / f))
    if ranges:
        by = {(r["backend"], r["op"], r["kind"], r["bucket"], r["width"]): r for r in ranges}
        for be in sorted({r["backend"] for r in ranges}):
            for op in sorted({r["op"] for r in ranges}):
                for w in sorted({r["width"] for r in ranges}):
                    c, x = by.get((be, op, "cgrx", 32, w)), by.get((be, op, "rx", 0, w))
                    if c and x:
                        lines.append("(b) %-5s %-11s %7d rows/lookup: cgrx(32) %.2fx faster than rx%s"
                                     % (be, op, w, x["query_ms"] / c["query_ms"],
                                        " (target >= 9.9x at 256)" if w == 256 else ""))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_rt.py CSV_DIR OUT_DIR")
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    memory, ranges = read(src, "rt_memory"), read(src, "rt_range")
    plot_memory(memory, out)
    plot_range(ranges, read(src, "rt_range_count"), out)
    plot_batch(read(src, "rt_batch"), out)
    plot_hits(read(src, "rt_hits_inside"), read(src, "rt_hits_outside"), out)
    plot_zipf(read(src, "rt_zipf"), out)
    text = summary(memory, ranges)
    with open(os.path.join(out, "rt_summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    if plt is None:
        print("matplotlib is missing: wrote the summary only")


if __name__ == "__main__":
    main()
