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
from lens_scenarios.consumer_config import (CLASSIC_SESSION_TIMEOUT_MS, check_choice, check_online_upgrade,
                                            member_assignor, member_config, protocol_of)
from lens_scenarios.feeder import Feeder
from lens_scenarios.fleet import Fleet
from lens_scenarios.ground_truth import GroundTruth
from lens_scenarios.java_member import java_config
from lens_scenarios.spec import RUNTIMES, MemberSpec, Scenario, on_runtime, with_topic_prefix
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
    # Every member on this runtime (python | java), whatever the scenario declares; None: each member's own.
    runtime: str | None = None
    # What names the run's group and topics (random by default): two runs given one token on two
    # clusters have one group name and the same topic names (each its own out_dir).
    token: str | None = None
    # Each timeline action up to this much later, drawn per run (``timeline.Timeline.jitter_s``).
    phase_jitter_s: float = 0.0


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


def run_scenario(scenario: Scenario, options: RunOptions,
                 on_progress: Callable[[Progress], None] = lambda _p: None) -> RunResult:
    if "consumer" in scenario.migrations:
        check_online_upgrade(options.assignor, scenario.name)
    if options.runtime is not None:
        scenario = on_runtime(scenario, check_choice(options.runtime, RUNTIMES, "--runtime"))
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

    with contextlib.ExitStack() as stack:
        if options.bootstrap is None:
            from lens_runtime.kafka_broker import EmbeddedKafka

            on_progress(Progress("starting broker", 0, scenario.duration_s, 0, 0, 0, 0, ""))
            bootstrap = stack.enter_context(EmbeddedKafka()).bootstrap_servers
        else:
            bootstrap = options.bootstrap
        manifest["bootstrap"] = bootstrap
        _create_topics(bootstrap, scenario, options.telemetry_topic)

        def spec_for(member: MemberSpec, process: str) -> dict[str, Any]:
            instance = member.group_instance_id and f"{group_id}-{member.group_instance_id}"
            config = member_config(bootstrap=bootstrap, group_id=group_id,
                                   assignor=member_assignor(options.assignor, member.group_protocol),
                                   commit=options.commit, client_id=f"{run_id}-{process}",
                                   group_instance_id=instance, max_poll_interval_ms=scenario.max_poll_interval_ms,
                                   telemetry_topic=options.telemetry_topic,
                                   session_timeout_ms=options.session_timeout_ms, agent=member.agent,
                                   telemetry_bootstrap=options.telemetry_bootstrap,
                                   remote_assignor=member.remote_assignor)
            if member.runtime == "java":
                config = java_config(config)
            if member.agent:
                manifest.setdefault("consumer_config", {k: v for k, v in config.items() if k != "client.id"})
            return {"run_dir": str(run_dir.resolve()), "member": member.name, "process": process, "agent": member.agent,
                    "topics": [t.name for t in scenario.topics],
                    "subscribe": list(member.topics or scenario.subscribe), "config": config,
                    "processing_ms": scenario.processing_ms, "commit": options.commit,
                    "commit_batch_records": scenario.commit_batch_records}

        fleet = Fleet(run_dir, spec_for)
        feeder = Feeder(bootstrap, scenario.topics, scenario.rate_per_partition)
        timeline = Timeline(scenario, fleet, options.phase_jitter_s)

        def report(phase: str, elapsed: float = 0.0) -> None:
            last = timeline.log[-1] if timeline.log else None
            on_progress(Progress(phase, elapsed, scenario.duration_s, feeder.produced, fleet.delivered_total(),
                                 len(fleet.running), fleet.assigned_total(),
                                 f"{last['action']} {last['step']} {','.join(last['members'])}" if last else ""))

        try:
            feeder.start()
            for member in scenario.members:
                fleet.start(member)
            manifest["settled"] = _wait_settled(fleet, scenario.partitions, report)
            manifest["timeline_start_mono_ns"] = time.monotonic_ns()
            manifest["timeline_start_wall_ns"] = time.time_ns()
            timeline.start()
            end = time.monotonic() + scenario.duration_s
            while time.monotonic() < end or timeline.is_alive():
                report("running", min(scenario.duration_s, scenario.duration_s - (end - time.monotonic())))
                time.sleep(0.25)
            report("stopping members", scenario.duration_s)
            # the end of the run is a scale-in of every member: the handoffs it makes get that cause in truth
            timeline.log.append({"action": "scale_in", "step": "stop all (end of run)", "members": sorted(fleet.running),
                                 "planned_s": scenario.duration_s,
                                 "at_s": round(time.monotonic() - timeline.started_mono, 3), "wall": time.time()})
            fleet.stop_all()
        except BaseException:
            timeline.cancelled.set()
            try:
                fleet.stop_all(timeout_s=INTERRUPT_GRACE_S)
            finally:
                fleet.kill_all()
            raise
        finally:
            feeder.stop()
            manifest.update({"end_wall": time.time(), "produced": feeder.produced,
                             "produce_errors": feeder.errors, "actions": timeline.log,
                             "processes": [h.describe() for h in fleet.history],
                             "client_errors": {h.process: h.errors[:20] for h in fleet.history if h.errors}})
            (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str))
    truth = GroundTruth.load(run_dir)
    (run_dir / "truth.json").write_text(json.dumps(truth.to_json(), indent=2))
    return RunResult(run_dir, manifest, truth, time.monotonic() - started_mono)
