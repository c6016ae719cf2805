"""The demo's picture: file-size histograms before/after per table, and MSE over time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

MIB = 1 << 20


def render_chart(
    path: Path,
    before: Mapping[str, Sequence[int]],
    after: Mapping[str, Sequence[int]],
    timeline: Sequence[tuple[float, str, float]],
    targets: Mapping[str, int],
) -> Path:
    """Write a PNG: one histogram panel per table (file sizes before and after, with the
    target marked) and a last panel of each table's mean partition MSE over time.

    ``timeline`` holds ``(seconds since start, table, mean partition MSE in bytes²)``.
    """
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
            label=f"before ({len(before[name])} files)",
        )
        ax.hist(
            [s / MIB for s in after.get(name, [])],
            bins=bins,
            alpha=0.6,
            label=f"after ({len(after.get(name, []))} files)",
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
