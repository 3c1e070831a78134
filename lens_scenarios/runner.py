"""Runs one scenario end to end: broker, topics, record stream, fleet, timeline, ground truth.

Outline:
1. start the embedded broker (or use ``bootstrap``) and create run-private topics;
2. start the feeder and every initial member (each its own OS process);
3. wait until the fleet owns every partition and the assignment has been quiet for
   ``SETTLE_QUIET_S`` (the group has formed), then start the timeline clock;
4. play the timeline until ``duration_s`` after that start, stop the members gracefully,
   stop the feeder; write ``manifest.json`` and ``truth.json`` into the run folder.
Any exception or Ctrl-C on the way stops the members (SIGKILL after a short grace) and
the broker before it propagates: no process outlives the run.
"""
from __future__ import annotations

import contextlib
import functools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from consumer_agent import DEFAULT_TELEMETRY_TOPIC

from lens_runtime.errors import LensError
from lens_scenarios.consumer_config import (CLASSIC_SESSION_TIMEOUT_MS, PROGRESS_INTERVAL_MS, check_choice,
                                            check_online_upgrade, member_assignor, member_config, protocol_of)
from lens_scenarios.feeder import Feeder
from lens_scenarios.fleet import Fleet
from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.java_member import java_config
from lens_scenarios.spec import RUNTIMES, MemberApp, MemberSpec, Scenario, on_runtime, with_topic_prefix
from lens_scenarios.timeline import Timeline

SETTLE_QUIET_S = 2.0
SETTLE_TIMEOUT_S = 45.0
INTERRUPT_GRACE_S = 5.0


@dataclass(frozen=True)
class RunOptions:
    assignor: str = "range"
    commit: str = "batch"
    out_dir: Path = Path("scenario-runs")
    bootstrap: str | None = None
    telemetry_topic: str = DEFAULT_TELEMETRY_TOPIC
    session_timeout_ms: int = CLASSIC_SESSION_TIMEOUT_MS  # classic groups (KIP-848: the broker's)
    # The telemetry's cluster when it is not the run's own (a central one, as several clusters share).
    telemetry_bootstrap: str | None = None
    # Every member on this runtime (python | java | app), whatever the scenario declares; None: each member's own.
    runtime: str | None = None
    # Runtime app: the application every member runs (``spec.MemberApp``).
    app: MemberApp | None = None
    # What names the run's group and topics (random by default): two runs given one token on two
    # clusters have one group name and the same topic names (each its own out_dir).
    token: str | None = None
    # Each timeline action up to this much later, drawn per run (``timeline.Timeline.jitter_s``).
    phase_jitter_s: float = 0.0
    # The agents' lens.progress.interval.ms (a crash's bounds narrow in proportion: benchmarks/crash_bounds.py).
    progress_interval_ms: int = PROGRESS_INTERVAL_MS


@dataclass
class Progress:
    """What the CLI's progress bar shows, refreshed a few times a second."""

    phase: str
    elapsed_s: float
    duration_s: float
    produced: int
    delivered: int
    members: int
    assigned: int
    last_action: str


@dataclass
class RunResult:
    run_dir: Path
    manifest: dict[str, Any]
    truth: GroundTruth
    wall_s: float


def _create_topics(bootstrap: str, scenario: Scenario, telemetry_topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [NewTopic(t.name, num_partitions=t.partitions, replication_factor=1) for t in scenario.topics]
    wanted.append(NewTopic(telemetry_topic, num_partitions=3, replication_factor=1))
    for name, future in admin.create_topics(wanted, operation_timeout=30).items():
        try:
            future.result(timeout=30)
        except KafkaException as err:
            if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS or name != telemetry_topic:
                raise LensError(f"Creating topic {name} on {bootstrap} failed: {err.args[0].str()}. "
                                "Check that the broker is reachable and allows topic creation.") from err


def _wait_settled(fleet: Fleet, partitions: int, tick: Callable[[str], None]) -> bool:
    """True once every partition is owned and no assignment changed for SETTLE_QUIET_S."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now_assigned = fleet.assigned_total()
        if now_assigned != last:
            last, since = now_assigned, time.monotonic()
        elif now_assigned == partitions and time.monotonic() - since >= SETTLE_QUIET_S:
            return True
        tick("forming group")
        time.sleep(0.2)
    return False


@dataclass
class _Run:
    """One run's names, folder and manifest, fixed before anything starts."""

    scenario: Scenario  # with the run's topic names
    options: RunOptions
    run_id: str
    run_dir: Path
    group_id: str
    manifest: dict[str, Any]
    started_mono: float


def _prepare(scenario: Scenario, options: RunOptions) -> _Run:
    """The scenario checked against the options, the run's names, its folder and the manifest's first keys."""
    if "consumer" in scenario.migrations:
        check_online_upgrade(options.assignor, scenario.name)
    if options.runtime is not None:
        runtime = check_choice(options.runtime, RUNTIMES, "--runtime")
        if (runtime == "app") != (options.app is not None):
            raise LensError("RunOptions: runtime app and an app go together: give both, or neither.")
        scenario = on_runtime(scenario, runtime, app=options.app)
    token = options.token or uuid.uuid4().hex[:6]
    run_id = f"{scenario.name}-{options.assignor}-{options.commit}-{token}"
    run_dir = Path(options.out_dir) / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    logical = scenario
    scenario = with_topic_prefix(scenario, f"lens-{token}-")
    group_id = f"lens-{run_id}"
    started_wall = time.time()
    started_mono = time.monotonic()
    manifest: dict[str, Any] = {
        "run_id": run_id, "scenario": logical.name, "scenario_source": logical.source,
        "assignor": options.assignor, "protocol": protocol_of(options.assignor), "commit": options.commit,
        "group_id": group_id, "topics": {t.name: s.name for t, s in zip(logical.topics, scenario.topics)},
        "partitions": {t.name: t.partitions for t in scenario.topics},
        "telemetry_topic": options.telemetry_topic, "telemetry_bootstrap": options.telemetry_bootstrap,
        "embedded_broker": options.bootstrap is None,
        "rate_per_partition": scenario.rate_per_partition, "processing_ms": scenario.processing_ms,
        "commit_batch_records": scenario.commit_batch_records, "duration_s": scenario.duration_s,
        "start_wall": started_wall,
    }
    return _Run(scenario, options, run_id, run_dir, group_id, manifest, started_mono)


def _broker(stack: contextlib.ExitStack, run: _Run, on_progress: Callable[[Progress], None]) -> str:
    """The run's bootstrap servers: ``options.bootstrap``, else an embedded broker stopped with ``stack``."""
    if run.options.bootstrap is not None:
        return run.options.bootstrap
    from lens_runtime.kafka_broker import EmbeddedKafka

    on_progress(Progress("starting broker", 0, run.scenario.duration_s, 0, 0, 0, 0, ""))
    return stack.enter_context(EmbeddedKafka()).bootstrap_servers


def _member_spec(run: _Run, bootstrap: str, member: MemberSpec, process: str) -> dict[str, Any]:
    """What a member process is started with (``lens_scenarios.member``); the first agent member's
    config (its client id aside) goes into the manifest."""
    options, scenario = run.options, run.scenario
    instance = member.group_instance_id and f"{run.group_id}-{member.group_instance_id}"
    config = member_config(bootstrap=bootstrap, group_id=run.group_id,
                           assignor=member_assignor(options.assignor, member.group_protocol),
                           commit=options.commit, client_id=f"{run.run_id}-{process}",
                           group_instance_id=instance, max_poll_interval_ms=scenario.max_poll_interval_ms,
                           telemetry_topic=options.telemetry_topic,
                           session_timeout_ms=options.session_timeout_ms, agent=member.agent,
                           telemetry_bootstrap=options.telemetry_bootstrap,
                           remote_assignor=member.remote_assignor, progress_interval_ms=options.progress_interval_ms)
    if member.runtime in ("java", "app"):
        config = java_config(config)
    if member.agent:
        run.manifest.setdefault("consumer_config", {k: v for k, v in config.items() if k != "client.id"})
    return {"run_dir": str(run.run_dir.resolve()), "member": member.name, "process": process, "agent": member.agent,
            "topics": [t.name for t in scenario.topics],
            "subscribe": list(member.topics or scenario.subscribe), "config": config,
            "processing_ms": scenario.processing_ms, "commit": options.commit,
            "commit_batch_records": scenario.commit_batch_records,
            "app": dict(member.app.settings) if member.app is not None else {}}


@dataclass
class _Players:
    """What plays a run: the member processes, the record stream, the timeline."""

    fleet: Fleet
    feeder: Feeder
    timeline: Timeline
    duration_s: float
    on_progress: Callable[[Progress], None]

    def report(self, phase: str, elapsed: float = 0.0) -> None:
        last = self.timeline.log[-1] if self.timeline.log else None
        self.on_progress(Progress(phase, elapsed, self.duration_s, self.feeder.produced,
                                  self.fleet.delivered_total(), len(self.fleet.running), self.fleet.assigned_total(),
                                  f"{last['action']} {last['step']} {','.join(last['members'])}" if last else ""))


def _play(run: _Run, players: _Players) -> None:
    """Start the feeder and the initial members, wait for the group to form, play the timeline
    for ``duration_s``, then stop every member gracefully."""
    scenario, fleet, timeline = run.scenario, players.fleet, players.timeline
    players.feeder.start()
    for member in scenario.members:
        fleet.start(member)
    run.manifest["settled"] = _wait_settled(fleet, scenario.partitions, players.report)
    run.manifest["timeline_start_mono_ns"] = time.monotonic_ns()
    run.manifest["timeline_start_wall_ns"] = time.time_ns()
    timeline.start()
    end = time.monotonic() + scenario.duration_s
    while time.monotonic() < end or timeline.is_alive():
        players.report("running", min(scenario.duration_s, scenario.duration_s - (end - time.monotonic())))
        time.sleep(0.25)
    players.report("stopping members", scenario.duration_s)
    # the end of the run is a scale-in of every member: the handoffs it makes get that cause in truth
    timeline.log.append({"action": "scale_in", "step": "stop all (end of run)", "members": sorted(fleet.running),
                         "planned_s": scenario.duration_s,
                         "at_s": round(time.monotonic() - timeline.started_mono, 3), "wall": time.time()})
    fleet.stop_all()


def _stop_abruptly(players: _Players) -> None:
    """On an exception or Ctrl-C: cancel the timeline, stop the members (SIGKILL after a short grace)."""
    players.timeline.cancelled.set()
    try:
        players.fleet.stop_all(timeout_s=INTERRUPT_GRACE_S)
    finally:
        players.fleet.kill_all()


def _write_manifest(run: _Run, players: _Players) -> None:
    """The manifest's closing keys (what was produced, the actions played, the processes), and its file."""
    fleet, feeder = players.fleet, players.feeder
    run.manifest.update({"end_wall": time.time(), "produced": feeder.produced,
                         "produce_errors": feeder.errors, "actions": players.timeline.log,
                         "processes": [h.describe() for h in fleet.history],
                         "client_errors": {h.process: h.errors[:20] for h in fleet.history if h.errors}})
    (run.run_dir / "manifest.json").write_text(json.dumps(run.manifest, indent=2, default=str))


def run_scenario(scenario: Scenario, options: RunOptions,
                 on_progress: Callable[[Progress], None] = lambda _p: None) -> RunResult:
    """Play ``scenario`` under ``options`` as the module docstring outlines: broker and topics,
    feeder and members, the group formed, the timeline played, manifest and ground truth written."""
    run = _prepare(scenario, options)
    with contextlib.ExitStack() as stack:
        bootstrap = _broker(stack, run, on_progress)
        run.manifest["bootstrap"] = bootstrap
        _create_topics(bootstrap, run.scenario, options.telemetry_topic)
        fleet = Fleet(run.run_dir, functools.partial(_member_spec, run, bootstrap))
        players = _Players(fleet, Feeder(bootstrap, run.scenario.topics, run.scenario.rate_per_partition),
                           Timeline(run.scenario, fleet, options.phase_jitter_s), run.scenario.duration_s, on_progress)
        try:
            _play(run, players)
        except BaseException:
            _stop_abruptly(players)
            raise
        finally:
            players.feeder.stop()
            _write_manifest(run, players)
    truth = GroundTruth.load(run.run_dir)
    (run.run_dir / "truth.json").write_text(json.dumps(truth.to_json(), indent=2))
    return RunResult(run.run_dir, run.manifest, truth, time.monotonic() - run.started_mono)
