"""The demo's pictures: file-size histograms per table (every file ingested, and the files
after icefloe's last round) with each table's entropy over time; and the bytes each side
rewrote, cumulative over the rounds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MIB = 1 << 20


def render_chart(
    path: Path,
    before: Mapping[str, Sequence[int]],
    after: Mapping[str, Sequence[int]],
    timeline: Sequence[tuple[float, str, float]],
    targets: Mapping[str, int],
) -> Path:
    """Write a PNG: one histogram panel per table (file sizes of every file ingested, as the
    table would be uncompacted, and after, with the target marked) and a last panel of each
    table's mean partition MSE over time.

    ``timeline`` holds ``(seconds since start, table, mean partition MSE in bytes²)``.
    """
    # matplotlib: only when a chart is drawn
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = list(before)
    fig, axes = plt.subplots(1, len(tables) + 1, figsize=(5 * (len(tables) + 1), 4))
    for ax, name in zip(axes, tables, strict=False):
        target = targets[name]
        top = max([*before[name], *after.get(name, []), target]) / MIB * 1.05
        bins = [top * i / 30 for i in range(31)]
        ax.hist(
            [s / MIB for s in before[name]],
            bins=bins,
            alpha=0.6,
            label=f"uncompacted ({len(before[name])} files)",
        )
        ax.hist(
            [s / MIB for s in after.get(name, [])],
            bins=bins,
            alpha=0.6,
            label=f"icefloe after ({len(after.get(name, []))} files)",
        )
        ax.axvline(target / MIB, color="black", linestyle="--", linewidth=1, label="target")
        ax.set_title(name)
        ax.set_xlabel("file size (MiB)")
        ax.set_ylabel("files")
        ax.legend(fontsize=8)
    ax = axes[-1]
    for name in tables:
        points = [(t, mse) for t, table, mse in timeline if table == name]
        if points:
            ax.plot(
                [t for t, _ in points],
                [(m**0.5) / targets[name] for _, m in points],
                marker="o",
                markersize=3,
                label=name,
            )
    ax.set_title("partition entropy over time")
    ax.set_xlabel("seconds")
    ax.set_ylabel("mean RMSE / target")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def render_rounds_chart(path: Path, rounds: Sequence[Mapping[str, Any]]) -> Path:
    """Write a PNG of the bytes rewritten, cumulative over the rounds: icefloe against
    Iceberg's ``rewrite_data_files``. ``rounds``: the demo's rounds, each with an
    ``icefloe`` and an ``iceberg`` mapping holding ``bytes_rewritten``."""
    # matplotlib: only when a chart is drawn
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [int(r["round"]) for r in rounds]
    fig, ax = plt.subplots(figsize=(6, 4))
    for side, label in (("icefloe", "icefloe"), ("iceberg", "Iceberg rewrite_data_files")):
        total, ys = 0, []
        for r in rounds:
            total += int(r[side]["bytes_rewritten"])
            ys.append(total / MIB)
        ax.plot(xs, ys, marker="o", label=f"{label} ({ys[-1]:.1f} MiB)")
    ax.set_title("bytes rewritten, cumulative over the rounds")
    ax.set_xlabel("round")
    ax.set_xticks(xs)
    ax.set_ylabel("MiB rewritten")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
