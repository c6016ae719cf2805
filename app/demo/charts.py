"""The demo's pictures (matplotlib, drawn off-screen):

* ``icefloe-demo-rounds.png``: icefloe against Iceberg, one figure of four panels: the bytes
  each side rewrote, cumulative over the rounds (and the bytes ingested); the data files and
  manifests a reader plans against after each round; the files each reader's query opens;
  and the skew section's join-stage task times, plain against salted;
* ``icefloe-demo-sizes.png``: per table, the sizes of every file ingested (the table as it
  would be uncompacted) and of the files after icefloe's last round, the target marked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from textwrap import fill
from typing import Any

MIB = 1 << 20
ROUNDS_CHART = "icefloe-demo-rounds.png"
SIZES_CHART = "icefloe-demo-sizes.png"
LABELS = {"icefloe": "icefloe", "iceberg": "Iceberg rewrite_data_files"}
COLORS = {"icefloe": "#1f77b4", "iceberg": "#ff7f0e"}


def _pyplot() -> Any:
    # matplotlib: only when a chart is drawn
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    _pyplot().close(fig)
    return path


def render_chart(
    path: Path,
    before: Mapping[str, Sequence[int]],
    after: Mapping[str, Sequence[int]],
    targets: Mapping[str, int],
) -> Path:
    """One histogram panel per table: the sizes of every file ingested and of the files
    after icefloe's last round, with the target marked."""
    plt = _pyplot()
    tables = list(before)
    fig, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 3.6), squeeze=False)
    for ax, name in zip(axes[0], tables, strict=True):
        target = targets[name]
        top = max([*before[name], *after.get(name, []), target]) / MIB * 1.05
        bins = [top * i / 30 for i in range(31)]
        for sizes, label in ((before[name], "uncompacted"), (after.get(name, []), "icefloe after")):
            ax.hist([s / MIB for s in sizes], bins=bins, alpha=0.6, label=f"{label} ({len(sizes)})")
        ax.axvline(target / MIB, color="black", linestyle="--", linewidth=1, label="target")
        ax.set_title(f"{name}: file sizes")
        ax.set_xlabel("MiB")
        ax.set_ylabel("files")
        ax.legend(fontsize=8)
    return _save(fig, path)


def _bytes_panel(ax: Any, result: Mapping[str, Any], xs: list[int]) -> None:
    """Both sides' cumulative bytes rewritten, round by round, beside the bytes ingested."""
    rounds = result["rounds"]
    for side in LABELS:
        total, ys = 0, []
        for r in rounds:
            total += int(r[side]["bytes_rewritten"])
            ys.append(total / MIB)
        ax.plot(xs, ys, marker="o", color=COLORS[side], label=f"{LABELS[side]} ({ys[-1]:.1f} MiB)")
    ingested = result["totals"]["bytes_ingested"] / MIB
    ax.axhline(ingested, color="grey", linestyle=":", label=f"ingested ({ingested:.1f} MiB)")
    ax.set_title("bytes rewritten, cumulative")
    ax.set_xlabel("round")
    ax.set_xticks(xs)
    ax.set_ylabel("MiB")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def render_rounds_chart(path: Path, result: Mapping[str, Any]) -> Path:
    """The demo's four panels, both sides in each (``result``: the demo's JSON)."""
    plt = _pyplot()
    rounds = result["rounds"]
    xs = [int(r["round"]) for r in rounds]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    _bytes_panel(axes[0][0], result, xs)

    ax = axes[0][1]
    for side in LABELS:
        files = [r[side]["files"] for r in rounds]
        manifests = [r[side]["manifests"] for r in rounds]
        ax.plot(xs, files, marker="o", color=COLORS[side], label=f"{side}: data files")
        ax.plot(
            xs,
            manifests,
            marker="s",
            linestyle="--",
            color=COLORS[side],
            label=f"{side}: manifests",
        )
    ax.set_title("what a reader plans against, after each round")
    ax.set_xlabel("round")
    ax.set_xticks(xs)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)

    ax = axes[1][0]
    queries = result["readers"]
    ys = list(range(len(queries)))
    height = 0.4
    for i, side in enumerate(LABELS):
        values = [q[side]["files"] for q in queries]
        bars = ax.barh(
            [y + (i - 0.5) * height for y in ys], values, height, color=COLORS[side], label=side
        )
        for bar, q in zip(bars, queries, strict=True):
            ax.annotate(
                f" {q[side]['files']} · {q[side]['plan_ms']:.0f} ms",
                (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                va="center",
                fontsize=7,
            )
    ax.set_yticks(ys)
    ax.set_yticklabels([fill(f"{q['table']}: {q['query']}", 24) for q in queries], fontsize=7)
    ax.invert_yaxis()
    ax.set_title("files each query opens · planning ms (fresh reader)")
    ax.set_xlabel("data files")
    ax.legend(fontsize=8, loc="lower right")

    ax = axes[1][1]
    skew = result["skew"]
    for label, color in (("plain", "#d62728"), ("salted", "#2ca02c")):
        m = skew[label]
        times = m.get("task_seconds") or []
        name = "plain (AQE on)" if label == "plain" else "icefloe SQL extension"
        ax.plot(
            range(1, len(times) + 1),
            times,
            marker="o",
            color=color,
            label=f"{name}: max/median {m['max_over_median']:.1f}x, {m['wall']:.1f} s",
        )
    ax.set_title("skewed LEFT join: join-stage task times")
    ax.set_xlabel("task (longest first)")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return _save(fig, path)
