"""Plots of the polygon joins (scripts/gpu-check.d/join.sh), loaded by bench/plot.py: one figure
per CSV, a panel per join (R with S), bars of build and query time per backend and grouping
threshold s (log scale), the check column under each bar."""
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


PLOTS = {
    "join_lsi": lambda rs, out: joins(rs, out, "LSI query"),
    "join_lsi_synth": lambda rs, out: joins(rs, out, "LSI query"),
    "join_pip": lambda rs, out: joins(rs, out, "PIP query"),
    "join_pip_synth": lambda rs, out: joins(rs, out, "PIP query"),
    "join_pip_rate": lambda rs, out: joins(rs, out, "PIP query"),
}
