"""What ``icefloe demo`` prints: the rounds, the totals, each table, the skew section."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

MIB = 1 << 20
SIDES = (("icefloe", "icefloe"), ("iceberg", "Iceberg"))


def render_demo(console: Console, result: dict[str, Any]) -> None:
    render_rounds(console, result)
    render_tables(console, result)
    render_readers(console, result)
    loop = result["loop"]
    console.print(
        f"decider passes {loop['decider_passes']}, actions {loop['actions']}; partition "
        f"scans avoided by the rolling stats: {loop['scans_avoided_pct']:.0f}%"
    )
    render_skew(console, result["skew"])
    render_verdicts(console, result)
    charts = result["charts"]
    console.print(f"charts: {charts['rounds']}, {charts['sizes']}")
    cpu = result["cpu_seconds"]
    jvm = "" if cpu["jvm"] is None else f", {cpu['jvm']:.0f}s Spark's JVM"
    console.print(
        f"demo finished in {result['seconds']:.0f}s (CPU: {cpu['python']:.0f}s Python{jvm}); "
        "`icefloe status` explains the state it left behind"
    )


def _side_row(figures: dict[str, Any]) -> list[str]:
    return [
        f"{figures['bytes_rewritten'] / MIB:.1f}",
        str(figures["files_rewritten"]),
        str(figures["files"]),
        f"{figures['mean_mse_t2']:.3f}·T²",
        str(figures["manifests"]),
        f"{figures['plan_ms']:.0f}",
        str(figures["snapshots"]),
    ]


def render_rounds(console: Console, result: dict[str, Any]) -> None:
    """Per round and in total, both sides over all tables: the tables as ingested (files,
    manifests, planning time), then what each side rewrote, the files and entropy after,
    metadata health and planning time, and whether every row is there."""
    out = RichTable(
        title="each round: streaming ingest, then compaction (icefloe on the tables, "
        "Iceberg's rewrite_data_files on identical copies); all tables"
    )
    cols = ("round", "commits", "", "rewritten MiB", "files rewritten", "files after")
    for col in (*cols, "mean MSE after", "manifests", "plan ms", "snapshots", "rows"):
        out.add_column(col, justify="left" if col in ("round", "", "rows") else "right")
    for r in result["rounds"]:
        kept = "[green]all kept[/]" if r["rows_ok"] else "[red]MISMATCH[/]"
        before = r["before_compaction"]
        out.add_row(
            str(r["round"]),
            str(r["commits"]),
            "[dim]ingested[/]",
            "",
            "",
            str(before["files"]),
            "",
            str(before["manifests"]),
            f"{before['plan_ms']:.0f}",
        )
        for i, (side, label) in enumerate(SIDES):
            first = i == 0
            out.add_row(
                "",
                "",
                label,
                *_side_row(r[side]),
                kept if first else "",
                end_section=not first,
            )
    total = result["totals"]
    for i, (side, label) in enumerate(SIDES):
        out.add_row("total" if i == 0 else "", "", label, *_side_row(total[side]))
    console.print(out)
    ours, theirs = total["icefloe"]["bytes_rewritten"], total["iceberg"]["bytes_rewritten"]
    ingested = total["bytes_ingested"]
    if theirs:
        console.print(
            f"over {len(result['rounds'])} rounds ({ingested / MIB:.1f} MiB ingested) icefloe "
            f"rewrote {ours / MIB:.1f} MiB ({ours / ingested:.2f} per byte ingested), Iceberg "
            f"{theirs / MIB:.1f} MiB ({theirs / ingested:.2f}): {ours / theirs:.2f}×"
        )


def render_tables(console: Console, result: dict[str, Any]) -> None:
    """Per table after the last round: uncompacted (every file ingested), icefloe, Iceberg."""
    out = RichTable(title="per table after the last round (same data, same target T)")
    cols = ("table", "", "files", "MiB", "mean MSE", "max MSE", "rewritten MiB", "work")
    labels = {"uncompacted": "uncompacted", "icefloe": "icefloe", "iceberg": "Iceberg"}
    for col in (*cols, "manifests", "plan ms", "snapshots"):
        out.add_column(col, justify="left" if col in ("table", "") else "right")
    for t in result["tables"]:
        target2 = t["target_file_size_bytes"] ** 2
        for key in ("uncompacted", "icefloe", "iceberg"):
            row = t[key]
            rewritten = row.get("bytes_rewritten")
            work = {
                "icefloe": f"{row.get('actions')} actions ({row.get('strategy')})",
                "iceberg": f"{row.get('calls')} calls ({row.get('strategy')})",
            }
            out.add_row(
                t["table"].split(".")[-1] if key == "uncompacted" else "",
                labels[key],
                str(row["files"]),
                f"{row['bytes'] / MIB:.1f}",
                f"{row['mean_mse'] / target2:.3f}·T²",
                f"{row['max_mse'] / target2:.3f}·T²",
                "" if rewritten is None else f"{rewritten / MIB:.1f}",
                work.get(key, ""),
                str(row.get("manifests", "")),
                f"{row['plan_ms']:.0f}" if "plan_ms" in row else "",
                str(row.get("snapshots", "")),
            )
        kept = "[green]all kept[/]" if t["rows_ok"] else "[red]MISMATCH[/]"
        out.add_row("", "rows", str(t["rows_expected"]), "", kept, end_section=True)
    console.print(out)


def render_skew(console: Console, skew: dict[str, Any]) -> None:
    hot = ", ".join(f"{h['key']} ({h['rows']:,} rows, {h['share']:.0%})" for h in skew["hot_keys"])
    console.print(f"skew report for {skew['table']} ({skew['rows']:,} rows): hot user_id {hot}")
    console.print(f"SQL: {skew['sql']}")
    fired = skew.get("rewrite")
    console.print(
        f"icefloe's SQL extension rewrote it: {fired}" if fired else "[red]the rule did not fire[/]"
    )
    out = RichTable(title="LEFT join in SQL, skewed right side: plain (AQE on) vs the extension")
    for col in ("", "join-stage max/median task", "max shuffle read MiB", "tasks", "wall s"):
        out.add_column(col, justify="left" if not col else "right")
    for label in ("plain", "salted"):
        m = skew[label]
        out.add_row(
            label,
            f"{m['max_over_median']:.1f}x",
            f"{m['max_read_mb']:.1f}",
            str(m["tasks"]),
            f"{m['wall']:.1f}",
        )
    console.print(out)
    same = "[green]identical rows[/]" if skew["identical"] else "[red]RESULTS DIFFER[/]"
    console.print(f"with the extension vs plain: {same}")


def render_readers(console: Console, result: dict[str, Any]) -> None:
    """Per query, on both sides: files opened, their MiB, and a fresh reader's planning."""
    out = RichTable(
        title="readers after the last round: files each query opens (partitions and column "
        "bounds pruned) and a fresh reader's planning (PyIceberg load + plan_files, median of 3)"
    )
    for col in ("table", "query", "", "files", "MiB", "plan ms"):
        out.add_column(col, justify="right" if col in ("files", "MiB", "plan ms") else "left")
    for q in result["readers"]:
        for i, (side, label) in enumerate(SIDES):
            f = q[side]
            out.add_row(
                q["table"] if i == 0 else "",
                q["query"] if i == 0 else "",
                label,
                str(f["files"]),
                f"{f['bytes'] / MIB:.1f}",
                f"{f['plan_ms']:.0f}",
                end_section=i == 1,
            )
    console.print(out)


def render_verdicts(console: Console, result: dict[str, Any]) -> None:
    """The figures icefloe does not win, said plainly (lower is better for every one)."""
    lost = [v for v in result["verdicts"] if v["winner"] != "icefloe"]
    won = len(result["verdicts"]) - len(lost)
    console.print(f"icefloe wins {won} of the {len(result['verdicts'])} figures above.")
    for v in lost:
        word = "ties" if v["winner"] == "tie" else "loses"
        ours, theirs = (
            (f"{v[side] / MIB:.2f} MiB" if "bytes" in v["figure"] else f"{v[side]:g}")
            for side in ("icefloe", "baseline")
        )
        console.print(
            f"[yellow]icefloe {word} on {v['figure']}: {ours} against {v['against']}'s {theirs}[/]"
        )
