#!/usr/bin/env python3
"""plot_bvh.py: the soft traversal's tree layouts (scripts/gpu-check.d/bvh.sh), for bench/plot.py.

rt_bvh.csv: `raydex bench keys` rows with a `layout` column (2: binary LBVH, 4: BVH4, optix).
One figure: G lookups/s of rx and cgrx per batch size and layout, bytes per key in the labels.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rt_bvh(rs, out):
    """Binary LBVH against BVH4 (and OptiX) for rx and cgrx point lookups."""
    groups = sorted({(r["kind"], int(r["lookups"])) for r in rs}, key=lambda g: (g[0], -g[1]))
    layouts = [l for l in ("2", "4", "optix") if any(r["layout"] == l for r in rs)]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / max(1, len(layouts))
    for j, lay in enumerate(layouts):
        xs, ys = [], []
        for i, (kind, m) in enumerate(groups):
            pts = [r for r in rs if r["layout"] == lay and r["kind"] == kind and int(r["lookups"]) == m]
            if not pts:
                continue
            best = max(pts, key=lambda r: float(r["lookups_per_s"]))
            x, y = i + j * width, float(best["lookups_per_s"]) / 1e9
            xs.append(x)
            ys.append(y)
            ax.annotate(f"{y:.2f}\n{float(best['bytes_per_key']):.1f} B", (x, y), fontsize=6, ha="center",
                        xytext=(0, 2), textcoords="offset points")
        name = {"2": "soft binary LBVH", "4": "soft BVH4", "optix": "optix"}[lay]
        ax.bar(xs, ys, width=width, label=name)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))])
    ax.set_xticklabels([f"{k}\n{m} lookups" for k, m in groups], fontsize=7)
    ax.set_ylabel("G lookups/s (labels: G/s, bytes per key)")
    dev = rs[0].get("device", "?") if rs else "?"
    ax.set_title(f"tree layouts of the soft traversal, 2^26 u32 keys ({dev})", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


PLOTS = {"rt_bvh": rt_bvh}
