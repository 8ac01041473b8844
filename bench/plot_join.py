"""Plots of the polygon joins (scripts/gpu-check.d/join.sh), loaded by bench/plot.py: one figure
per CSV, a panel per join (R with S).

LSI and PIP (issue 28): bars of build and query time per backend and grouping threshold s (log
scale), the check column under each bar.
Overlay and the predicates (issue 29): a stacked bar per (op, backend, s) of the per-stage times
that `raydex bench join` writes after the check column (index_ms ... result_ms), in ms above and as
shares of the row's time below, with the row's time and check over each bar; rows of older CSVs,
without stage times, stack build_ms and query_ms instead. The synthetic overlay (join_overlay_synth):
time against S's segments, a line per (backend, s), and the stages of each backend's largest size.
"""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def joins(rs, out, what):
    pairs = []
    for r in rs:
        key = (r["r"], r["s"] or f"{r['points']} points")
        if key not in pairs:
            pairs.append(key)
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.2 * len(pairs), 4.2), squeeze=False)
    for ax, (rn, sn) in zip(axes[0], pairs):
        sel = [r for r in rs if r["r"] == rn and (r["s"] or f"{r['points']} points") == sn]
        labels = [f"{r['backend']}\ns={r['group']}" + (" planar" if r.get("planar") == "1" else "") for r in sel]
        x = range(len(sel))
        build = [float(r["build_ms"]) for r in sel]
        query = [float(r["query_ms"]) for r in sel]
        ax.bar([i - 0.2 for i in x], build, width=0.4, label="index build")
        ax.bar([i + 0.2 for i in x], query, width=0.4, label=what)
        for i, r in enumerate(sel):
            ax.annotate(r["check"], (i, min(build[i], query[i])), fontsize=6, ha="center", va="bottom")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=6)
        ax.set_yscale("log")
        ax.set_ylabel("ms")
        ax.set_title(f"R {rn}\nS {sn}", fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].legend(fontsize=7)
    dev = sorted({r["device"] for r in rs})
    fig.suptitle(f"{what} ({', '.join(dev)})", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


# the polygon joins' stages, in the order they run (tools/cmd_bench_join.c); a stage column that is
# absent, empty or negative is left out of a row's bar
STAGES = ["index_ms", "pairs_ms", "classify_ms", "groups_ms", "pip_ms", "merge_ms", "select_ms", "areas_ms", "result_ms"]
COLORS = dict(zip(STAGES + ["build_ms", "query_ms"], plt.get_cmap("tab20").colors[::2] + plt.get_cmap("tab20").colors[1::2]))


def num(r, key):
    """float of r[key], or None when the column is absent, empty, not a number or negative"""
    try:
        v = float(r.get(key) or "")
    except ValueError:
        return None
    return v if v >= 0 and math.isfinite(v) else None


def stages(r):
    """[(column, ms)] of a row: its stage times, or build and query for a row without them"""
    st = [(k, num(r, k)) for k in STAGES if num(r, k) is not None]
    if not st:
        st = [(k, num(r, k) or 0.0) for k in ("build_ms", "query_ms")]
    return st


def devices(rs):
    return ", ".join(sorted({r.get("device", "?") for r in rs}))


def stacked(ax_ms, ax_share, sel, labels):
    """a stacked bar per row of sel: ms on ax_ms (log y when the bars span more than 20x), shares
    of the row's time on ax_share; the row's time and check over each bar; returns the stages drawn"""
    used = []
    tops = []
    for i, r in enumerate(sel):
        st = stages(r)
        top = sum(v for _, v in st)
        tops.append(top)
        bottom = 0.0
        for k, v in st:
            ax_ms.bar(i, v, bottom=bottom, width=0.7, color=COLORS[k])
            if top > 0:
                ax_share.bar(i, 100 * v / top, bottom=100 * bottom / top, width=0.7, color=COLORS[k])
            bottom += v
            if k not in used:
                used.append(k)
        check = r.get("check", "")
        ax_ms.annotate(f"{top:.3g}\n{check}", (i, top), fontsize=5.5, ha="center", va="bottom",
                       color="red" if check.startswith("DIFF") else "black")
    pos = [t for t in tops if t > 0]
    if pos and max(pos) > 20 * min(pos):
        ax_ms.set_yscale("log")
        ax_ms.set_ylim(min(pos) / 3, max(pos) * 4)
    else:
        ax_ms.set_ylim(0, max(pos or [1]) * 1.25)
    for ax in (ax_ms, ax_share):
        ax.set_xticks(range(len(sel)))
        ax.grid(alpha=0.3, axis="y")
    ax_ms.set_xticklabels([])
    ax_share.set_xticklabels(labels, fontsize=6)
    ax_share.set_ylim(0, 100)
    ax_ms.set_ylabel("ms")
    ax_share.set_ylabel("% of the row's time")
    return used


def stage_legend(fig, used):
    used = sorted(used, key=list(COLORS).index)  # the order the stages run in
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in used]
    names = [k[:-3] if k in STAGES else k[:-3] + " (no stage times)" for k in used]
    fig.legend(handles, names, loc="lower center", ncol=min(len(used), 6), fontsize=7, frameon=False)


def polygon_joins(rs, out, what):
    """overlay / predicates: a panel per (R, S), a stacked bar of stages per (op, backend, s)"""
    pairs = []
    for r in rs:
        if (r["r"], r["s"]) not in pairs:
            pairs.append((r["r"], r["s"]))
    fig, axes = plt.subplots(2, len(pairs), figsize=(max(4.6, 0.62 * max(
        sum(1 for r in rs if (r["r"], r["s"]) == p) for p in pairs)) * len(pairs), 6.6), squeeze=False,
        gridspec_kw={"height_ratios": [3, 2]})
    used = []
    for j, (rn, sn) in enumerate(pairs):
        sel = [r for r in rs if (r["r"], r["s"]) == (rn, sn)]
        ops = []
        for r in sel:
            if r["op"] not in ops:
                ops.append(r["op"])
        sel.sort(key=lambda r: ops.index(r["op"]))  # stable: each op's rows in the CSV's order
        labels = [(f"{r['op']}\n" if len(ops) > 1 else "") + f"{r['backend']}\ns={r['group']}" for r in sel]
        for k in stacked(axes[0][j], axes[1][j], sel, labels):
            if k not in used:
                used.append(k)
        axes[0][j].set_title(f"R {rn}\nS {sn}", fontsize=8)
    stage_legend(fig, used)
    fig.suptitle(f"{what} ({devices(rs)})", fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(out, dpi=120)
    plt.close(fig)


def overlay_synth(rs, out):
    """synthetic overlay: query and total time against S's segments, a line per (backend, s); the
    stages of each backend's largest size beside"""
    fig, (ax, ax_ms, ax_share) = plt.subplots(1, 3, figsize=(14, 4.8), gridspec_kw={"width_ratios": [4, 3, 3]})
    series = {}
    for r in rs:
        series.setdefault((r["backend"], r["group"]), []).append(r)
    colors = plt.get_cmap("tab10").colors
    for c, ((b, g), sel) in enumerate(sorted(series.items())):
        sel.sort(key=lambda r: num(r, "s_edges") or 0)
        x = [num(r, "s_edges") for r in sel]
        for key, style in (("query_ms", "-"), ("total_ms", ":")):
            ax.plot(x, [num(r, key) for r in sel], style, marker="o", ms=3.5, color=colors[c % 10],
                    label=f"{b} s={g} {key[:-3]}")
        for r in sel:
            if r.get("check", "").startswith("DIFF"):
                ax.annotate(r["check"], (num(r, "s_edges"), num(r, "query_ms")), fontsize=6, color="red")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("S's segments (R has as many)")
    ax.set_ylabel("ms")
    ax.set_title("overlay with areas of two perturbed grids", fontsize=8)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3, which="both")
    # each backend's largest size, every threshold
    last = []
    for b in sorted({r["backend"] for r in rs}):
        big = max(num(r, "s_edges") or 0 for r in rs if r["backend"] == b)
        last += [r for r in rs if r["backend"] == b and (num(r, "s_edges") or 0) == big]
    labels = [f"{r['backend']}\ns={r['group']}\n{num(r, 's_edges'):.0e}" for r in last]
    used = stacked(ax_ms, ax_share, last, labels)
    ax_share.set_xticklabels(labels, fontsize=6)
    ax_ms.set_xticks(range(len(last)))
    ax_ms.set_xticklabels(labels, fontsize=6)
    ax_ms.set_title("stages at each backend's largest size", fontsize=8)
    ax_share.set_title("the same as shares", fontsize=8)
    stage_legend(fig, used)
    fig.suptitle(f"overlay of synthetic planar subdivisions ({devices(rs)})", fontsize=9)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out, dpi=120)
    plt.close(fig)


PLOTS = {
    "join_lsi": lambda rs, out: joins(rs, out, "LSI query"),
    "join_lsi_synth": lambda rs, out: joins(rs, out, "LSI query"),
    "join_pip": lambda rs, out: joins(rs, out, "PIP query"),
    "join_pip_synth": lambda rs, out: joins(rs, out, "PIP query"),
    "join_pip_rate": lambda rs, out: joins(rs, out, "PIP query"),
    "join_overlay": lambda rs, out: polygon_joins(rs, out, "overlay (the pairs; overlay+areas: with their areas)"),
    "join_predicates": lambda rs, out: polygon_joins(rs, out, "intersects, contains, within"),
    "join_overlay_synth": overlay_synth,
}
