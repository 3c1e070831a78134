"""``rebalance-lens pipeline run [STAGE] [--since ...] [settings]``: the pipeline from the command line.

Every pipeline setting is a flag here, built from ``pipelines.config.SETTINGS`` (each also
an environment variable), so a new tunable needs no change in this file.
"""
from __future__ import annotations

import argparse
from datetime import datetime, timezone

from lens_runtime.errors import LensError


def parse_since(text: str | None) -> int | None:
    """ISO date/time (UTC unless it says otherwise) or epoch milliseconds -> epoch milliseconds."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise LensError(f"--since {text!r} is not a time: use ISO 8601 (2026-01-31 or 2026-01-31T12:00:00Z) "
                        "or epoch milliseconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def _cmd_pipeline_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lens_cli.live_spark import run_stages, start_spark
    from lens_runtime.broker_choice import Fallback, broker_for
    from pipelines.config import SETTINGS, PipelineConfig
    from pipelines.ingest import check_topic
    from pipelines.lake_lock import locked
    from pipelines.stages import resolve_stages

    since_ms = parse_since(args.since)  # a bad --since is said first, whatever else is missing
    given = {s.field: getattr(args, s.field) for s in SETTINGS}
    stages = resolve_stages([args.stage])
    console = Console(highlight=False)
    if "ingest" in stages:  # the one broker rule; none found is said before Spark takes seconds to start
        with broker_for(args.bootstrap_servers, Fallback.NONE, say=lambda line: console.print(line, markup=False)) \
                as broker:
            given["bootstrap_servers"] = broker.bootstrap_servers
    config = PipelineConfig.resolve(since_ms=since_ms, **given)
    # The lake's lock before Spark starts: a second run on the lake stops in a second, not after
    # Spark's start-up (the stages take it again, re-entrantly).
    with locked(config.lake_path, config.lock_wait_s):
        if "ingest" in stages:
            check_topic(config)  # a missing topic is said before Spark takes seconds to start
        spark = start_spark(config.spark_settings("rebalance-lens-pipeline"), console)
        try:
            run_stages(spark, config, stages, console)
        finally:
            spark.stop()
    return 0


def _cmd_pipeline_maintain(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lens_cli.live_spark import start_spark
    from pipelines.config import PipelineConfig
    from pipelines.lake_lock import locked
    from pipelines.maintenance import maintain

    config = PipelineConfig.resolve(lake_path=args.lake, spark_master=args.master)
    if args.retain_hours < 168:
        raise LensError(f"--retain-hours {args.retain_hours} is under Delta's 168 (7 days): a reader or rerun of an "
                        "older version would lose its files; use 168 or more")
    with locked(config.lake_path, config.lock_wait_s):  # before Spark starts, as for `pipeline run`
        console = Console(highlight=False)
        spark = start_spark(config.spark_settings("rebalance-lens-maintain"), console)
        try:
            maintain(spark, config, args.retain_hours, progress=console.print)
        finally:
            spark.stop()
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pipeline run`` to the CLI."""
    from pipelines.config import SETTINGS

    pipeline = subparsers.add_parser("pipeline", help="the telemetry pipeline: Kafka -> bronze -> silver -> gold "
                                                      "-> recommend -> SQL marts")
    actions = pipeline.add_subparsers(dest="pipeline_action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="run one stage or all of them, incrementally")
    run.add_argument("stage", nargs="?", default="all",
                     help="ingest, broker, validate, silver, gold, recommend, sql or all (default)")
    run.add_argument("--since", default=None,
                     help="recompute silver/gold for events from this time (ISO 8601 or epoch ms); "
                          "a first ingest starts from it")
    for setting in SETTINGS:
        run.add_argument(setting.flag, dest=setting.field, default=None, metavar="VALUE",
                         help=f"{setting.help}; env {setting.env}")
    run.set_defaults(func=_cmd_pipeline_run)
    maintain = actions.add_parser("maintain", help="compact (OPTIMIZE) then VACUUM every lake table: once a day")
    maintain.add_argument("--lake", default=None, metavar="PATH", help="Delta lake path; env LENS_LAKE")
    maintain.add_argument("--master", default=None, metavar="MASTER", help="Spark master; env LENS_SPARK_MASTER")
    maintain.add_argument("--retain-hours", type=int, default=168,
                          help="VACUUM keeps files a version of the last N hours reads (default 168, the minimum)")
    maintain.set_defaults(func=_cmd_pipeline_maintain)
