"""Plots of the key indexes' update experiment (scripts/gpu-check.d/update.sh, issue 30; the cgRX
paper's Section VI), loaded by bench/plot.py: per kind, against the wave (0 the build, then the
insert waves, then the erase waves), the wave's time, its update throughput per byte of index,
and the time of the lookup batch after it.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def update_waves(rs, out):
    rs = [r for r in rs if r["op"] not in ("save", "load")]
    kinds = []
    for r in rs:
        if (r["kind"], r["backend"]) not in kinds:
            kinds.append((r["kind"], r["backend"]))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    panels = [
        ("update_ms", "wave time (ms)", True),
        ("updates_per_s_per_byte", "updates per s per byte of index", True),
        ("lookup_ms", "lookups after the wave (ms)", False),
    ]
    for ax, (col, title, log) in zip(axes, panels):
        for kind, backend in kinds:
            sel = [r for r in rs if r["kind"] == kind and r["backend"] == backend and (col != "update_ms" or r["wave"] != "0")]
            ax.plot([int(r["wave"]) for r in sel], [float(r[col]) for r in sel], marker="o", ms=3, label=f"{kind} ({backend})")
        ax.set_xlabel("wave (0 build; insert waves, then erase waves)")
        ax.set_title(title, fontsize=9)
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    r0 = rs[0]
    checks = sorted({r["check"] for r in rs})
    fig.suptitle(f"{r0['n']} {r0['dtype']} keys, {r0['lookups']} lookups a wave, {r0['device']}; checks: {', '.join(checks)}",
                 fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(out, dpi=120)
    plt.close(fig)


PLOTS = {"update_waves": update_waves}
