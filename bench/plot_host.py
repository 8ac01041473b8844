"""Plot of `raydex bench host` (scripts/gpu-check.d/host.sh, issue 31), loaded by bench/plot.py:
the link each way (pinned, pageable through the staging ring, pageable through the driver) and
each call's time with its inputs and outputs in device memory, from host memory through the ring,
and from host memory through the driver, with the ratio to bytes moved / pinned link + device time
written over the host bars.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def host(rs, out):
    links = [r for r in rs if r["op"].startswith("link")]
    calls = [r for r in rs if not r["op"].startswith("link")]
    fig, (a, b) = plt.subplots(1, 2, figsize=(14, 4.6), gridspec_kw={"width_ratios": [1, 2.4]})
    if links:
        names = [f"{r['op'][5:]}\n{r['where']}\n{r['path']}" for r in links]
        gbps = [float(r["bytes_moved"]) / float(r["ms"]) / 1e6 for r in links]
        a.bar(range(len(links)), gbps, color=["#4477aa" if r["where"] == "pinned" else "#66ccee" if r["path"] == "ring"
                                               else "#ee6677" for r in links])
        a.set_xticks(range(len(links)), names, fontsize=7)
        a.set_ylabel("GB/s")
        a.set_title("the link (rdx_copy of 1 GiB)", fontsize=9)
        a.grid(alpha=0.3, axis="y")
    ops = []
    for r in calls:
        if r["op"] not in ops:
            ops.append(r["op"])
    width = 0.27
    for j, (where, path, color) in enumerate([("device", "-", "#228833"), ("host", "ring", "#66ccee"),
                                              ("host", "direct", "#ee6677")]):
        xs, ys, sel = [], [], []
        for i, op in enumerate(ops):
            for r in calls:
                if r["op"] == op and r["where"] == where and r["path"] == path:
                    xs.append(i + (j - 1) * width)
                    ys.append(float(r["ms"]))
                    sel.append(r)
        label = "device memory" if where == "device" else f"host memory, {'staging ring' if path == 'ring' else 'driver copy'}"
        b.bar(xs, ys, width, color=color, label=label)
        if where == "host":
            for x, y, r in zip(xs, ys, sel):
                b.text(x, y, f"{float(r['ratio']):.2f}", ha="center", va="bottom", fontsize=7)
    b.set_xticks(range(len(ops)), ops, fontsize=8)
    b.set_yscale("log")
    b.set_ylabel("ms (median)")
    b.set_title("calls; over host bars: time / (bytes moved / pinned link + device time)", fontsize=9)
    b.legend(fontsize=7)
    b.grid(alpha=0.3, axis="y")
    r0 = rs[0]
    fig.suptitle(f"{r0['device']}, {r0['date']}; checks: {', '.join(sorted({r['check'] for r in rs}))}", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(out, dpi=120)
    plt.close(fig)


PLOTS = {"host": host}
