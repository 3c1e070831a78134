"""``rebalance-lens report [--group G] [--since T] [--out DIR]``: the tuning report, one HTML file.

It reads the SQL marts with polars, so it starts no JVM and takes seconds.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def _cmd_report(args: argparse.Namespace) -> int:
    from pipelines.config import PipelineConfig
    from tuning_report import write_report
    from tuning_report.marts import parse_since

    since = parse_since(args.since)  # a bad --since fails before anything is read
    lake = PipelineConfig.resolve(lake_path=args.lake).lake_path
    out = Path(args.out) if args.out else Path(lake) / "report"
    path = write_report(lake, out, group=args.group, since=since, progress=lambda m: print(m, flush=True))
    print(f"report: {path}\n        {path.resolve().as_uri()}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``report`` to the CLI."""
    report = subparsers.add_parser("report", help="write the tuning report: one self-contained HTML page for "
                                                  "the fleet, from the SQL marts")
    report.add_argument("--group", default=None, help="only this consumer group (default: every group)")
    report.add_argument("--since", default=None, metavar="T",
                        help="only what happened since T: an ISO date or time (UTC), or an age such as 36h or 7d")
    report.add_argument("--out", default=None, metavar="DIR", help="where to write it (default: <lake>/report)")
    report.add_argument("--lake", default=None, help="Delta lake path (default: $LENS_LAKE or <home>/lake)")
    report.set_defaults(func=_cmd_report)
