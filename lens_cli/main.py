"""The ``rebalance-lens`` command line: ``setup``, ``kafka``, ``demo``, ``scenario``, ``pipeline``, ``recommend``,
``sql``, ``report``.

Subcommands import what they need lazily, so ``--help`` and ``kafka`` work on the
agent-only install, which has no Spark. A ``LensError`` (a problem the user can fix) is
printed as one line, with its stack trace only under ``--verbose``.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable, Sequence

from lens_cli import pipeline_commands, recommend_commands, report_commands, scenario_commands, sql_commands
from lens_runtime.errors import LensError


def _cmd_setup(args: argparse.Namespace) -> int:
    from lens_runtime.jvm_agent_build import ensure_agent_jar
    from lens_runtime.jvm_deps import ensure_jars, jars_dir

    ensure_jars()  # says when it fetches (the first run's minute of Maven), even under --quiet
    agent_jar = ensure_agent_jar()  # the Java agent, in a source checkout; Maven only when its sources changed
    if not args.quiet:
        print(f"rebalance-lens: JVM jars ready in {jars_dir()}" + (f"; Java agent {agent_jar}" if agent_jar else ""))
    return 0


def _cmd_kafka(args: argparse.Namespace) -> int:
    from lens_runtime.kafka_broker import local_state

    local = local_state()
    if args.action == "up":
        started = time.monotonic()
        broker = local.up(port=args.port, timeout_s=args.timeout)
        print(f"Kafka is up at {broker.bootstrap_servers} (pid {broker.pid}, "
              f"{time.monotonic() - started:.1f} s); log: {broker.log_path}")
        return 0
    if args.action == "status":
        broker = local.load()
        if broker is None or not broker.alive():
            print("Kafka is down")
            return 1
        print(f"Kafka is up at {broker.bootstrap_servers} (pid {broker.pid}); log: {broker.log_path}")
        return 0
    stopped = local.down()
    print("Kafka stopped" if stopped else "Kafka was not running")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from lens_cli.demo import DEMO_MATRIX, DEMO_PLAIN, parse_run, run_demo

    matrix, plain = DEMO_MATRIX, DEMO_PLAIN
    if args.run or args.plain_run:  # the runs named, and those alone
        matrix, plain = tuple(map(parse_run, args.run or ())), tuple(map(parse_run, args.plain_run or ()))
    return run_demo(lake=args.lake, master=args.master, matrix=matrix, bootstrap=args.bootstrap, plain=plain)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rebalance-lens",
        description="Measure what Kafka consumer-group rebalances cost, per rebalance, and recommend the fix.",
    )
    parser.add_argument("--verbose", action="store_true", help="print the stack trace of an error, not only its line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    setup = sub.add_parser("setup", help="check Java and Maven, fetch the pinned JVM jars once")
    setup.add_argument("--quiet", action="store_true", help="print nothing when already set up")
    setup.set_defaults(func=_cmd_setup)

    kafka = sub.add_parser("kafka", help="the embedded single-node KRaft broker: up | status | down")
    kafka.add_argument("action", choices=["up", "status", "down"])
    kafka.add_argument("--port", type=int, default=None, help="broker port on 127.0.0.1 (default: a free one)")
    kafka.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the broker to answer")
    kafka.set_defaults(func=_cmd_kafka)

    demo = sub.add_parser("demo", help="the main job end to end on the embedded defaults: fleet scenarios, "
                                       "pipeline, costs per run, the tuning report (about 6 minutes)")
    demo.add_argument("--lake", default=None, help="Delta lake path (default: a new folder under <home>/demo)")
    demo.add_argument("--master", default=None, help="Spark master (default: $LENS_SPARK_MASTER or local[2])")
    demo.add_argument("--run", action="append", default=None, metavar="SCENARIO/ASSIGNOR/COMMIT",
                      help="play these runs instead of the default ones (six with the agent, one without; repeatable), "
                           "e.g. --run crash/cooperative-sticky/batch")
    demo.add_argument("--plain-run", action="append", default=None, metavar="SCENARIO/ASSIGNOR/COMMIT",
                      help="play these runs with every member on the plain client, no agent: gold sees them "
                           "in the broker's log alone (repeatable; with --run or alone, instead of the defaults)")
    demo.add_argument("--bootstrap", default=None, metavar="HOST:PORT",
                      help="the Kafka cluster to run on (default: $LENS_KAFKA_BOOTSTRAP, else the broker of "
                           "`kafka up`, else one started for the demo)")
    demo.set_defaults(func=_cmd_demo)
    scenario_commands.register(sub)
    pipeline_commands.register(sub)
    recommend_commands.register(sub)
    sql_commands.register(sub)
    report_commands.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0
    try:
        return func(args)
    except LensError as err:
        if args.verbose:
            traceback.print_exc()
        print(f"rebalance-lens: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rebalance-lens: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
