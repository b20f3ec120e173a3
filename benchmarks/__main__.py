"""``python -m benchmarks``: run the workloads, print the table, write JSON and PNG."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchmarks import (
    b1_enqueue,
    b2_drain,
    b3_latency,
    b4_io,
    b5_depth,
    b6_footprint,
    b7_round_trips,
    b8_sqlite_normal,
    b9_steps,
    b10_retention,
    peer_report,
    peers,
)
from benchmarks.harness import Env, Workload
from benchmarks.report import Report, git_state, load_average, machine_info, table, write
from benchmarks.runner import run_workload
from benchmarks.stores import PostgresStore, RedisStore, SqliteStore, Store
from benchmarks.workers import ROOT

WORKLOADS: tuple[Workload, ...] = (
    b1_enqueue.WORKLOAD,
    b2_drain.WORKLOAD,
    b3_latency.WORKLOAD,
    b4_io.WORKLOAD,
    b5_depth.WORKLOAD,
    b6_footprint.WORKLOAD,
    b7_round_trips.WORKLOAD,
    b8_sqlite_normal.WORKLOAD,
    b9_steps.WORKLOAD,
    b10_retention.WORKLOAD,
    peers.WORKLOAD,
)
BACKENDS = ("sqlite", "redis", "postgres")
SKIPPED_WHEN_QUICK = frozenset({"B8", "B10", "PEERS"})
"""Left out of --quick unless named in --only: B8 and PEERS are comparisons, not bars
(PEERS needs the peers extra: make bench-peers); B10 runs 100,000 runs (all three keep
--quick under 2 min)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smaller workloads, 1 repetition unless --repeat"
    )
    parser.add_argument(
        "--only",
        help="comma-separated workload ids, e.g. B1,B3 or PEERS (default: all; "
        "--quick: all but B8, B10 and PEERS)",
    )
    parser.add_argument("--backends", default=",".join(BACKENDS), help="sqlite,redis,postgres")
    parser.add_argument("--repeat", type=int, help="repetitions per figure (3; --quick: 1)")
    parser.add_argument(
        "--retries",
        type=int,
        help="times a repetition disturbed by other load is run again (2; --quick: 0)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 3)
    if args.retries is None:
        args.retries = 0 if args.quick else 2
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    known = [workload.id for workload in WORKLOADS]
    default = [name for name in known if not (args.quick and name in SKIPPED_WHEN_QUICK)]
    args.only = [part.strip().upper() for part in args.only.split(",")] if args.only else default
    if unknown := set(args.only) - set(known):
        parser.error(f"unknown workloads {sorted(unknown)}; known: {sorted(known)}")
    args.backends = [part.strip().lower() for part in args.backends.split(",") if part.strip()]
    if unknown := set(args.backends) - set(BACKENDS):
        parser.error(f"unknown backends {sorted(unknown)}; known: {', '.join(BACKENDS)}")
    if not any(set(w.backends) & set(args.backends) for w in WORKLOADS if w.id in args.only):
        parser.error(f"none of {args.only} runs on {args.backends}")
    return args


async def open_stores(backends: set[str], work: Path) -> dict[str, Store]:
    """A SQLite store in ``work``, a private redis-server and a private PostgreSQL server
    (never the machine's own), as needed."""
    stores: dict[str, Store] = {}
    if "sqlite" in backends:
        (work / "sqlite").mkdir()
        stores["sqlite"] = SqliteStore(work / "sqlite")
    if "redis" in backends:
        stores["redis"] = RedisStore()
    if "postgres" in backends:
        try:
            stores["postgres"] = await PostgresStore.start()
        except BaseException:
            for store in stores.values():
                await store.close()
            raise
    return stores


def peer_comparison(report: Report, out: Path) -> None:
    """PEERS: drop the figures of skipped peers, print the ratio table, write peers.md."""
    report.figures = [
        f for f in report.figures if f.workload != peers.WORKLOAD.id or f.values or f.failed
    ]
    for entry in report.details:
        for name, reason in (entry.get("skipped") or {}).items():
            warning = f"PEERS [{entry['backend']}] {name} skipped: {reason}"
            if warning not in report.warnings:
                report.warnings.append(warning)
    report.peer_ratios = peers.ratio_rows(report.figures)
    if report.peer_ratios:
        text = peer_report.ratio_table(report.peer_ratios)
        print("\nworkpool / best peer and / raw bar (medians of this run):\n" + text)
        out.mkdir(parents=True, exist_ok=True)
        (out / "peers.md").write_text(text + "\n")


def summarize(report: Report, out: Path) -> int:
    """Print the table, write the files, list missed bars and failures; the exit status."""
    peer_comparison(report, out)
    print()
    print(table(report.figures))
    json_path, png_path = write(report, out)
    print(
        f"\n{len(report.figures)} figures in {report.duration_seconds:.0f} s; "
        f"wrote {json_path} and {png_path}"
    )
    missed = [f for f in report.figures if f.passed is False and not f.failed]
    if missed:
        print(
            "bars missed: " + "; ".join(f"{f.workload} {f.backend} {f.spec.name}" for f in missed)
        )
    for warning in report.warnings:
        print(f"!!! {warning}")
    if not report.errors:
        return 0
    print(f"\n!!! {len(report.errors)} REPETITIONS FAILED (runs lost or failed, or a crash):")
    for entry in report.errors:
        first_line = entry["error"].splitlines()[0]
        print(f"!!! {entry['workload']} [{entry['backend']}] #{entry['repetition']}: {first_line}")
    return 1


async def main(args: argparse.Namespace) -> int:
    started_at, started = datetime.now().astimezone(), time.monotonic()
    selected = [w for w in WORKLOADS if w.id in args.only]
    needed = {b for w in selected for b in w.backends} & set(args.backends)
    with tempfile.TemporaryDirectory(prefix="workpool-bench-") as scratch:
        work = Path(scratch)
        (work / "logs").mkdir()
        try:
            stores = await open_stores(needed, work)
        except RuntimeError as problem:
            print(f"cannot start a server: {problem}; or run with --backends sqlite")
            return 2
        redis_store = stores.get("redis")
        redis_version, redis_pid = None, None
        if isinstance(redis_store, RedisStore):
            redis_version, redis_pid = await redis_store.version(), redis_store.server.pid
        report = Report(
            mode="quick" if args.quick else "full",
            repeat=args.repeat,
            started=started_at,
            machine=machine_info(redis_version),
        )
        postgres_store = stores.get("postgres")
        if isinstance(postgres_store, PostgresStore):
            report.machine["postgresql_server"] = await postgres_store.version()
        try:
            for workload in selected:
                for backend in [b for b in args.backends if b in workload.backends]:
                    env = Env(stores[backend], args.quick, work / "logs", redis_pid=redis_pid)
                    figures = await run_workload(workload, env, args.repeat, args.retries, report)
                    report.figures.extend(figures)
        finally:
            for store in stores.values():
                await store.close()
    report.duration_seconds = time.monotonic() - started
    report.machine["load_average_at_end"] = load_average()
    note_code_changes(report)
    return summarize(report, args.out)


def note_code_changes(report: Report) -> None:
    """Flag (in the JSON and loudly here) a src/ that changed while it was measured."""
    now = git_state()
    keys = ("workpool_src_tree", "workpool_src_dirty", "workpool_src_diff_sha1")
    changed = any(report.machine[key] != now[key] for key in keys)
    report.machine["workpool_changed_during_run"] = changed
    if changed:
        report.machine["workpool_at_end"] = now
        print("\n!!! workpool's code changed during the run: figures mix two versions")


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args(sys.argv[1:]))))
