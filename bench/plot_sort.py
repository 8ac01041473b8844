"""Plots of the range-fill sort experiment (scripts/gpu-check.d/sort.sh), loaded by bench/plot.py:
keys_sort (one function)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def keys_sort(rs, out):
    """Range fills: result rows per second against rows per range, per sort path (auto, packed
    radix sort, CUB segmented sort)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = {}
    for r in rs:
        hits = float(r["results"]) / max(1.0, float(r["lookups"]))
        series.setdefault(f"{r['kind']} {r.get('sort', '?')}", []).append((hits, float(r["results_per_s"]) / 1e9))
    for k, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k, ls="-" if k.endswith("auto") else "--")
    ax.axvline(64, color="gray", ls=":", lw=1)
    ax.annotate("CUB in-register limit (64 u64 rows)", (66, ax.get_ylim()[0] * 1.2), fontsize=7, color="gray")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("rows per range lookup")
    ax.set_ylabel("G rows/s (count + scan + fill + sort)")
    dev = rs[0].get("device", "?") if rs else "?"
    ax.set_title(f"range fills over 2^26 dense u32 keys in random order, by sort path ({dev})", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


PLOTS = {"keys_sort": keys_sort}
