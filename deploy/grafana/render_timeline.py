"""Render the SLA mode timeline (the dashboard's top panels) to a PNG from
Prometheus range-query results, for the docs.

    python3 deploy/grafana/render_timeline.py SERIES.json OUT.png

SERIES.json: {"mode": [[t, v], ...], "urgent_iops": [...], "threshold_iops": [...],
"threshold_low_iops": [...], "switches": [t, ...]} (what the Prometheus
integration test saves). Needs matplotlib.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def render(series: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(t for t, _ in series["mode"])
    fig, (ax_mode, ax_iops) = plt.subplots(2, 1, figsize=(10, 5), sharex=True,
                                           gridspec_kw={"height_ratios": [1, 2]})
    xs = [t - t0 for t, _ in series["mode"]]
    ax_mode.fill_between(xs, [v for _, v in series["mode"]], step="post", color="#d62728",
                         alpha=0.6, label="isolated")
    ax_mode.set_yticks([0, 1], ["shared", "isolated"])
    ax_mode.set_title("ceph_sla_mode")
    for name, style in [("urgent_iops", "-"), ("threshold_iops", "--"),
                        ("threshold_low_iops", ":")]:
        points = series.get(name) or []
        ax_iops.plot([t - t0 for t, _ in points], [v for _, v in points], style, label=name)
    for t in series.get("switches", []):
        for ax in (ax_mode, ax_iops):
            ax.axvline(t - t0, color="grey", linewidth=0.8)
    ax_iops.set_ylabel("IOPS")
    ax_iops.set_yscale("symlog", linthresh=10)
    ax_iops.set_ylim(bottom=0)
    ax_iops.set_xlabel("seconds (grey lines: mode switches)")
    ax_iops.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    render(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))
