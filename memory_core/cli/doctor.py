"""`engram doctor [--repair]`: check the store, show its size by area, repair what is safe."""

from __future__ import annotations

import argparse
from typing import Any

from memory_core.cli.context import Context
from memory_core.errors import EXIT_FAILED, EXIT_OK


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    doctor = sub.add_parser(
        "doctor",
        parents=[common],
        help="check the store (integrity, indexes, orphans) and its size by area",
    )
    doctor.add_argument(
        "--repair",
        action="store_true",
        help="rebuild indexes, move orphaned rows aside (recoverable), drop unreferenced content",
    )
    doctor.set_defaults(handler=run_doctor)


def _size(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{nbytes} B"


def run_doctor(ctx: Context) -> int:
    from memory_core import doctor

    report = doctor.run(ctx.store(create=False), repair=ctx.args.repair, settings=ctx.settings)

    def human() -> str:
        rows: list[tuple[str, str]] = [
            (
                "integrity",
                "ok"
                if report["integrity"]["ok"]
                else "DAMAGED: " + report["integrity"]["messages"][0],
            )
        ]
        rows += [(f"index {name}", state) for name, state in report["indexes"].items()]
        content = report["checkpoint_content"]
        waiting = content["awaiting_collection"]
        files = report["files"]
        stray = len(files["orphaned_exports"]) + len(files["stale_temp_files"])
        rows += [
            ("orphaned rows", str(report["orphaned_rows"]["rows"])),
            ("orphaned blobs", f"{content['orphaned']} ({_size(content['orphaned_bytes'])})"),
            ("awaiting clean-up", f"{waiting['items']} ({_size(waiting['bytes'])})"),
            ("stray files", str(stray)),
            ("old gotcha anchors", str(len(report["annotations"]["stale"]))),
        ]
        width = max(len(label) for label, _value in rows) + 2
        lines = [f"engram doctor: {report['root']}"]
        lines += [f"  {label:<{width}}{value}" for label, value in rows]
        size = report["size"]
        lines.append(f"size {_size(size['total_bytes'])}:")
        for area, nbytes in size["areas"].items():
            lines.append(f"  {area:<24}{_size(nbytes):>10}")
        for name, nbytes in size["files"].items():
            lines.append(f"  file {name:<19}{_size(nbytes):>10}")
        for action in report["repaired"]:
            lines.append(f"repaired: {action}")
        for note in report["notes"]:
            lines.append(f"note: {note}")
        for problem in report["problems"]:
            lines.append(f"problem: {problem}")
        lines.append("healthy" if report["healthy"] else "problems found")
        return "\n".join(lines)

    ctx.emit(report, human)
    return EXIT_OK if report["healthy"] else EXIT_FAILED
