"""``rebalance-lens sql build [--select ...] | sql test | sql docs | sql freshness``: the SQL models over the lake.

All run dbt in-process on a SparkSession made like the pipeline's (same ``--master``,
jars and settings), so the models see exactly the lake the pipeline wrote.
"""
from __future__ import annotations

import argparse
from contextlib import nullcontext


def _cmd_sql(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lens_cli.live_spark import live, start_spark
    from lens_runtime.errors import LensError
    from pipelines import catalog, lake, sql_build
    from pipelines.config import PipelineConfig
    from pipelines.lake_lock import locked

    config = PipelineConfig.resolve(lake_path=args.lake, spark_master=args.master)
    if lake.missing_locally(config.lake_path, catalog.STAGE_PROGRESS):
        raise LensError(f"no pipeline output in {config.lake_path}: run `rebalance-lens pipeline run` first, "
                        "or pass --lake")
    console = Console(highlight=False)
    # A build writes the marts and the sql mark: it holds the lake's lock, taken before Spark starts (the
    # whole suite too: it reads the marts as one build left them).
    with locked(config.lake_path, config.lock_wait_s) if args.sql_action in ("build", "test") else nullcontext():
        spark = start_spark(config.spark_settings("rebalance-lens-sql"), console)
        try:
            if args.sql_action == "build":
                with live(spark, console, "dbt build: models and their tests") as say:
                    sql_build.build(spark, config.lake_path, select=args.select or (),
                                    full_refresh=args.full_refresh, progress=say)
            elif args.sql_action == "test":
                with live(spark, console, "dbt build: the whole suite of tests") as say:
                    sql_build.check(spark, config.lake_path, progress=say)
            elif args.sql_action == "freshness":
                found = sql_build.freshness(spark, config.lake_path)
                for source, status, age_s in found:
                    print(f"{source:>12}: {status:5}  newest record {age_s / 3600:.1f} h old")
                return 1 if any(status == "error" for _, status, _ in found) else 0
            else:
                site = sql_build.docs(spark, config.lake_path)
                print(f"docs: {site / 'index.html'} (or serve them: python -m http.server -d {site})")
        finally:
            spark.stop()
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``sql build``, ``sql test``, ``sql docs`` and ``sql freshness`` to the CLI."""
    sql = subparsers.add_parser("sql", help="the SQL models (dbt_like_sql/) over the lake: build | test | docs | "
                                            "freshness")
    actions = sql.add_subparsers(dest="sql_action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="build the marts with new data and check their rules on what they "
                                             "wrote (dbt build, incremental)")
    build.add_argument("--select", nargs="+", default=None, metavar="SELECTOR",
                       help="dbt selectors, e.g. group_hourly_costs+ or marts (default: the marts with new data)")
    build.add_argument("--full-refresh", action="store_true",
                       help="rebuild the incremental marts from all of gold, not only the groups with new events")
    test = actions.add_parser("test", help="run every data and unit test over every row (the daily whole suite)")
    docs = actions.add_parser("docs", help="generate the models' documentation site (dbt docs generate)")
    fresh = actions.add_parser("freshness", help="how old the newest telemetry is (dbt source freshness: warn "
                                                 "after 2 h, error after a day; exit 1 on error)")
    for action in (build, test, docs, fresh):
        action.add_argument("--lake", default=None, help="Delta lake path (default: $LENS_LAKE or <home>/lake)")
        action.add_argument("--master", default=None, help="Spark master (default: $LENS_SPARK_MASTER or local[2])")
        action.set_defaults(func=_cmd_sql)
