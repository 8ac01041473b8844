"""Plots of the spatial point index experiments (scripts/gpu-check.d/spatial.sh), loaded by
bench/plot.py: spatial_build, spatial_query, spatial_update (one function each)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _dev(rs):
    return rs[0].get("device", "?") if rs else "?"


def spatial_build(rs, out):
    """Quadtree build time against points, bottom-up vs top-down, device-resident and end to end."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.5))
    series = {}
    for r in rs:
        series.setdefault((r["build"], r["where"]), []).append((float(r["n"]), float(r["ms"])))
    for (b, w), pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{b}, {w}")
    ax.axhline(20, color="gray", ls=":", lw=1)
    ax.annotate("target: bottom-up 1.7e8 points <= 20 ms (device)", (2**24, 21), fontsize=7, color="gray")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("points (taxi-like, f32)")
    ax.set_ylabel("build ms (median)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    for w in ("device", "host"):
        bu = dict(series.get(("bottomup", w), []))
        td = dict(series.get(("topdown", w), []))
        ns = sorted(set(bu) & set(td))
        if ns:
            bx.plot(ns, [td[n] / bu[n] for n in ns], marker="o", label=f"top-down / bottom-up, {w}")
    bx.axhline(3.4, color="gray", ls=":", lw=1)
    bx.annotate("paper: 3.4x end to end, 4.9x device", (2**24, 3.5), fontsize=7, color="gray")
    bx.set_xscale("log", base=2)
    bx.set_xlabel("points")
    bx.set_ylabel("speedup of bottom-up")
    bx.legend(fontsize=7)
    bx.grid(alpha=0.3)
    fig.suptitle(f"quadtree construction, 16 levels, leaf capacity 200 ({_dev(rs)})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def spatial_query(rs, out):
    """Queries per second against batch size, per query type: index, brute-force scan, CPU."""
    types = ["window", "within", "match", "knn"]
    fig, axs = plt.subplots(1, 4, figsize=(16, 4.2), sharey=True)
    for ax, t in zip(axs, types):
        series = {}
        for r in rs:
            if r["type"] != t:
                continue
            series.setdefault(f"{r['index']} {r['engine']}", []).append((int(r["queries"]), float(r["per_s"])))
        for k, pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k)
        if t == "knn":
            ax.axhline(1e8, color="gray", ls=":", lw=1)
            ax.annotate("target 1e8/s (k=16)", (2**10, 1.1e8), fontsize=7, color="gray")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(t, fontsize=9)
        ax.set_xlabel("queries in the batch")
        ax.grid(alpha=0.3)
    axs[0].set_ylabel("queries/s")
    axs[0].legend(fontsize=7)
    fig.suptitle(f"batched queries over 16.5M points, leaf capacity 1024 ({_dev(rs)})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def spatial_update(rs, out):
    """Update time and speedup over a rebuild against the share of points moved."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.5))
    for idx in sorted({r["index"] for r in rs}):
        reb = sorted(float(r["ms"]) for r in rs if r["index"] == idx and r["engine"] == "rebuild")
        if reb:
            ax.axhline(reb[len(reb) // 2], ls="--", lw=1, label=f"{idx} rebuild (median of {len(reb)} runs)")
        # update: the path the library picks; update-paged / -merge / -rebuild: one path forced
        for eng in ("update", "update-paged", "update-merge", "update-rebuild"):
            ups = sorted((float(r["moved_pct"]), float(r["ms"])) for r in rs if r["index"] == idx and r["engine"] == eng)
            if not ups:
                continue
            style = {"marker": "o"} if eng == "update" else {"marker": ".", "ls": ":"}
            name = f"{idx} {eng}" if eng != "update" else f"{idx} update"
            ax.plot([u[0] for u in ups], [u[1] for u in ups], label=name, **style)
            if reb:
                bx.plot([u[0] for u in ups], [reb[len(reb) // 2] / u[1] for u in ups], label=name, **style)
    bx.axhline(5, color="gray", ls=":", lw=1)
    bx.annotate("target >= 5x at <= 10% moved", (1, 5.3), fontsize=7, color="gray")
    for a in (ax, bx):
        a.set_xscale("log")
        a.set_xlabel("% of points moved per batch")
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("ms (median)")
    bx.set_ylabel("rebuild ms / update ms")
    fig.suptitle(f"bulk moves over 16.5M taxi-like points ({_dev(rs)})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


PLOTS = {"spatial_build": spatial_build, "spatial_query": spatial_query, "spatial_update": spatial_update}
