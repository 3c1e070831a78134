"""One fleet member: a real consumer in its own OS process, writing ground truth.

The consumer is the rebalance-lens agent, or for a member declared ``agent: false`` the plain
``confluent_kafka.Consumer`` with the same loop, commits and truth log but no telemetry.

Started by the fleet as ``python -m lens_scenarios.member '<json spec>'``. It reads
commands as JSON lines on stdin (quiesce, stop, stall, subscribe, enforce) and reports what it
sees as JSON lines on stdout, which the runner turns into the progress bar. End of
stdin means the runner is gone: the member then closes and exits, so a killed runner
cannot leave members behind.

The application loop is the usual one: consume a batch, write it down (ground truth),
process it (sleep ``processing_ms`` per record), commit per the run's style.
"""
from __future__ import annotations

import json
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from lens_scenarios.truth_log import TruthWriter

BATCH = 500
POLL_TIMEOUT_S = 0.1
REPORT_EVERY_S = 0.5


def make_consumer(config: dict[str, Any], agent: bool = True):
    """The one place the member builds its consumer: the rebalance-lens agent, which emits the
    telemetry, or the plain client (a member that has not adopted the agent)."""
    if not agent:
        from confluent_kafka import Consumer

        return Consumer(config)
    from consumer_agent import InstrumentedConsumer

    return InstrumentedConsumer(config)


def _say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def _read_commands(inbox: "queue.Queue[dict]") -> None:
    for line in sys.stdin:
        line = line.strip()
        if line:
            inbox.put(json.loads(line))
    inbox.put({"cmd": "stop", "why": "stdin closed"})


class Member:
    """The application loop of one member process."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.agent = bool(spec.get("agent", True))
        self.truth = TruthWriter(Path(spec["run_dir"]), spec["member"], spec["process"], spec["topics"],
                                 agent=self.agent, group_protocol=spec["config"].get("group.protocol"))
        self.consumer = make_consumer(spec["config"], self.agent)
        self.assigned: set[tuple[str, int]] = set()
        self.inbox: queue.Queue[dict] = queue.Queue()
        self.delivered = 0
        self.uncommitted = 0
        self.stopping = False
        self.quiesced = False  # reads nothing more: the fleet is about to stop (``Fleet.stop_all``)

    # The callbacks only record; the agent (or, for the plain client, confluent_kafka once the
    # callback returns) performs the (incremental) assign itself.
    def _on_assign(self, _consumer, partitions) -> None:
        tps = [(tp.topic, tp.partition) for tp in partitions]
        self.assigned.update(tps)
        self._callback("assign", tps)

    def _on_revoke(self, consumer, partitions) -> None:
        tps = [(tp.topic, tp.partition) for tp in partitions]
        if not self.agent and self.spec["commit"] == "revoke":
            self._commit_revoked(consumer, partitions)
        self.assigned.difference_update(tps)
        self._callback("revoke", tps)

    def _commit_revoked(self, consumer, partitions) -> None:
        """The plain client's commit-on-revoke (the agent's ``lens.commit.on.revoke``): the loop
        processes a batch before it polls again, so the positions are the processed frontier."""
        try:
            frontier = [tp for tp in consumer.position(partitions) if tp.offset >= 0]
            if frontier:
                consumer.commit(offsets=frontier, asynchronous=False)
        except KafkaException as err:
            _say(ev="commit_failed", error=str(err.args[0]))

    def _on_lost(self, _consumer, partitions) -> None:
        tps = [(tp.topic, tp.partition) for tp in partitions]
        self.assigned.difference_update(tps)
        self._callback("lost", tps)

    def _callback(self, kind: str, tps: list[tuple[str, int]]) -> None:
        self.truth.event(kind, tps, member_id=self.consumer.memberid() or None)
        _say(ev=kind, partitions=len(tps), assigned=len(self.assigned), delivered=self.delivered)

    def subscribe(self, topics: list[str]) -> None:
        self.consumer.subscribe(topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)

    def _handle(self, command: dict) -> None:
        cmd = command["cmd"]
        if cmd == "stop":
            self.stopping = True
        elif cmd == "quiesce":
            self.quiesced = True
        elif cmd == "stall":
            # Processing one record takes longer than max.poll.interval.ms: no poll meanwhile.
            self.truth.event("stall")
            time.sleep(float(command["seconds"]))
        elif cmd == "subscribe":
            self.truth.event("subscribe")
            self.subscribe(command["topics"])
        elif cmd == "enforce":
            self.truth.event("enforce")
            self.consumer.enforce_rebalance(command.get("reason", "scenario"))
        _say(ev="done", cmd=cmd)

    def _commit(self) -> None:
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as err:
            # Commits can fail around a rebalance (no offset, rebalance in progress): the
            # uncommitted records are then duplicates by design, which the truth counts.
            _say(ev="commit_failed", error=str(err.args[0]))

    def run(self) -> None:
        self.truth.event("start")
        self.subscribe(list(self.spec["subscribe"]))
        _say(ev="started")
        processing_s = float(self.spec["processing_ms"]) / 1000.0
        batch_commits = self.spec["commit"] in ("batch", "revoke")
        last_report = 0.0
        while not self.stopping:
            while not self.inbox.empty():
                self._handle(self.inbox.get_nowait())
            if self.stopping:
                break
            if self.quiesced:
                time.sleep(POLL_TIMEOUT_S)
                continue
            rows = []
            for msg in self.consumer.consume(BATCH, POLL_TIMEOUT_S):
                err = msg.error()
                if err is None:
                    rows.append((msg.topic(), msg.partition(), msg.offset(), int(msg.value()), msg.timestamp()[1]))
                elif err.code() != KafkaError._PARTITION_EOF:
                    _say(ev="client_error", error=err.str(), code=err.code())
            self.delivered += self.truth.records(rows)
            if rows:
                time.sleep(processing_s * len(rows))
                self.uncommitted += len(rows)
            if batch_commits and self.uncommitted >= self.spec["commit_batch_records"]:
                self._commit()
                self.uncommitted = 0
            now = time.monotonic()
            if now - last_report >= REPORT_EVERY_S:
                _say(ev="progress", assigned=len(self.assigned), delivered=self.delivered)
                last_report = now
        self.truth.event("closing")
        self.consumer.close()
        self.truth.event("exit")
        self.truth.close()
        _say(ev="exit", delivered=self.delivered)


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    member = Member(spec)
    signal.signal(signal.SIGTERM, lambda *_: member.inbox.put({"cmd": "stop", "why": "SIGTERM"}))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when members stop
    threading.Thread(target=_read_commands, args=(member.inbox,), daemon=True, name="commands").start()
    member.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
