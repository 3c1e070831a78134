"""``rebalance-lens pipeline run [STAGE] [--since ...]``: the pipeline from the command line."""
from __future__ import annotations

import argparse
from datetime import datetime, timezone

from pipelines.errors import LensError


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


def _local_broker() -> str | None:
    """The address of the broker `rebalance-lens kafka up` started, if it runs."""
    import os

    if os.environ.get("LENS_KAFKA_BOOTSTRAP"):
        return None
    from pipelines.cli import _local_kafka

    broker = _local_kafka().load()
    return broker.bootstrap_servers if broker is not None and broker.alive() else None


def _cmd_pipeline_run(args: argparse.Namespace) -> int:
    from pipelines.config import PipelineConfig
    from pipelines.jobs import run_pipeline
    from pipelines.runtime.spark_session import SparkSettings, build_spark

    since_ms = parse_since(args.since)
    overrides = {} if args.max_bad_fraction is None else {"max_bad_row_fraction": args.max_bad_fraction}
    config = PipelineConfig.resolve(bootstrap_servers=args.bootstrap or _local_broker(), lake_path=args.lake,
                                    topic=args.topic, **overrides)
    spark = build_spark(SparkSettings.resolve(master=args.master, lake=config.lake_path,
                                              app_name="rebalance-lens-pipeline"))
    try:
        run_pipeline(spark, config, stages=[args.stage], since_ms=since_ms,
                     progress=lambda m: print(f"[pipeline] {m}", flush=True))
    finally:
        spark.stop()
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pipeline run`` to the CLI."""
    pipeline = subparsers.add_parser("pipeline", help="the telemetry pipeline: Kafka -> bronze -> silver -> gold")
    actions = pipeline.add_subparsers(dest="pipeline_action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="run one stage or all of them, incrementally")
    run.add_argument("stage", nargs="?", default="all", choices=["ingest", "validate", "silver", "gold", "all"])
    run.add_argument("--since", default=None,
                     help="recompute silver/gold for events from this time (ISO 8601 or epoch ms); "
                          "a first ingest starts from it")
    run.add_argument("--bootstrap", default=None, help="Kafka bootstrap servers (default: $LENS_KAFKA_BOOTSTRAP "
                                                       "or the local broker of `rebalance-lens kafka up`)")
    run.add_argument("--topic", default=None, help="telemetry topic (default: rebalance-lens-telemetry)")
    run.add_argument("--lake", default=None, help="Delta lake path (default: $LENS_LAKE or <home>/lake)")
    run.add_argument("--master", default=None, help="Spark master (default: $LENS_SPARK_MASTER or local[2])")
    run.add_argument("--max-bad-fraction", type=float, default=None,
                     help="fail a validation batch with more than this share of bad rows (default 0.05)")
    run.set_defaults(func=_cmd_pipeline_run)
