"""The agent is a drop-in for ``confluent_kafka.Consumer``: every program of
tests/support/drop_in_programs.py (context manager, drop without close, a consumer in a
reference cycle with the host's objects, broker-less config, ``Consumer(**conf)``, callbacks as
keyword arguments, every public method before and after close, constructor errors,
``__init__`` again, a subclass that skips ``__init__``, pickling and the rest of Python's
protocols, Ctrl-C, fork, exit with the consumer open) is played by a plain
``Consumer``, an ``InstrumentedConsumer`` and an ``AsyncInstrumentedConsumer``, each in its own
process, all at once. The plain client's transcript is the oracle: the others must equal it line
for line, threads left behind and how fast the group sees a member go included; the few known
differences are checked against docs/agent-compatibility.md's table instead."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import KafkaException

from consumer_agent import InstrumentedConsumer
from consumer_agent.member_states import ClassicState
from tests.support import child_play
from tests.support.drop_in_programs import ASYNC_OWN, NOT_ASYNC, PER_PARTITION, PROGRAMS
from tests.support.telemetry_log import TelemetryLog

AT_ONCE = 4        # programs played at the same time (2-3 processes each)
LIMIT_S = 90
# The "differs" lines: what each kind shows, and why (docs/agent-compatibility.md).
KNOWN = {
    # a wrong number of arguments to poll/consume/subscribe: a TypeError either way, in Python's
    # wording (the wrappers are Python functions; keeping the C wording would cost the hot path)
    ("arity", "poll"): {"plain": ["raised", "TypeError"], "instrumented": ["raised", "TypeError"]},
    ("arity", "consume"): {"plain": ["raised", "TypeError"], "instrumented": ["raised", "TypeError"]},
    ("arity", "subscribe"): {"plain": ["raised", "TypeError"], "instrumented": ["raised", "TypeError"]},
    ("arity", "poll unknown keyword"): {"plain": ["raised", "TypeError"], "instrumented": ["raised", "TypeError"]},
    # a Python subclass has a __weakref__ and a __dict__; the C type has neither
    ("python_protocols", "weak reference"): {"plain": ["raised", "TypeError"], "instrumented": ["returned", "made"]},
    ("python_protocols", "new attribute"): {"plain": ["raised", "AttributeError"], "instrumented": ["returned", None]},
}
TELEMETRY_OFF = "telemetry is off"
# The agent's log lines at WARNING, per program: one line per consumer with nowhere to send
# telemetry (required); kwargs_callbacks' consumer whose cluster is a closed port may log its
# telemetry producer's first error, if it came before the close (allowed). Nothing else.
AGENT_WARNINGS = {"broker_less": [TELEMETRY_OFF], "signal_interrupt": [TELEMETRY_OFF], "init_errors": [TELEMETRY_OFF]}
ALLOWED_WARNINGS = {"kwargs_callbacks": "rebalance-lens telemetry: producer"}
PYTHON_ERROR = re.compile(r"Traceback|Exception ignored|Fatal Python error")


def kinds(program: str) -> tuple[str, ...]:
    return ("plain", "instrumented") if program in NOT_ASYNC else ("plain", "instrumented", "async")


def host_lines(played: child_play.Played, kind: str) -> list[list]:
    """What the host saw, and how the process ended (exit status, a Python error on stderr)."""
    lines = [line for line in played.lines if line[0] not in ("measure", "agent", "differs")]
    if kind == "async":
        lines = [line for line in lines if line[0].removeprefix("after close: ") not in ASYNC_OWN]
    return lines + [["exit", played.returncode, bool(PYTHON_ERROR.search(played.stderr))]]


def tagged(played: child_play.Played, tag: str) -> dict[str, object]:
    return {line[1]: line[2] for line in played.lines if line[0] == tag}


def test_every_program_behaves_as_with_the_plain_client(kafka, unique):
    topic = kafka.create_topic(f"drop-in-{unique}", partitions=2)
    kafka.seed_partitions(topic, 2, PER_PARTITION)
    telemetry = f"drop-in-telemetry-{unique}"

    def play(program: str) -> dict:
        return child_play.play("tests.support.drop_in_programs", kinds(program),
                               [kafka.bootstrap_servers, topic, telemetry, program], LIMIT_S)

    with ThreadPoolExecutor(AT_ONCE) as pool:
        played = dict(zip(PROGRAMS, pool.map(play, PROGRAMS)))
    # The oracle itself, the plain client, once hung to the limit in `every_method` on a loaded machine (its
    # agent twins ended in 3 s): a program whose plain run never ended is played again, once.
    for program in [p for p, runs in played.items() if ["end"] not in host_lines(runs["plain"], "plain")]:
        played[program] = play(program)
    for program, runs in played.items():
        print(f"\n{program}: " + "; ".join(f"{kind}: {tagged(run, 'measure')}, {run.seconds:.1f} s"
                                          for kind, run in runs.items()))

    for program, runs in played.items():
        oracle = host_lines(runs["plain"], "plain")
        assert ["end"] in oracle and oracle[-1] == ["exit", 0, False], (program, oracle)
        for kind, run in runs.items():
            assert host_lines(run, kind) == (host_lines(runs["plain"], kind) if kind == "async" else oracle), \
                (program, kind, run.lines, runs["plain"].lines)
            for what, value in tagged(run, "differs").items():
                assert KNOWN[(program, what)][kind] == value, (program, what, kind, value)
            if kind != "plain":
                warnings = [line for line in tagged(run, "agent")["log"] if line.startswith("WARNING")
                            and not (program in ALLOWED_WARNINGS and ALLOWED_WARNINGS[program] in line)]
                expected = AGENT_WARNINGS.get(program, [])
                assert len(warnings) == len(expected) and all(e in w for e, w in zip(expected, warnings)), \
                    (program, kind, warnings)

    # the programs did what they say, so no comparison is between two empty transcripts
    plain = {program: runs["plain"].lines for program, runs in played.items()}
    assert ["survivor took the partition over", "left the group"] in plain["context_manager"]
    assert ["survivor took the partition over", "session timed out"] in plain["drop_without_close"]
    for program, what in [("context_manager", "after the with block"), ("drop_without_close", "after del"),
                          ("drop_in_a_cycle", "after del and a collection"),
                          ("broker_less", "after close"), ("kwargs_config", "after close"), ("fork", "after close"),
                          ("init_errors", "after refused constructions"), ("init_again", "after close")]:
        assert ["threads left", what, 0] in plain[program], program  # equal for the agents: none outlives
    assert ["public methods not called", []] in plain["every_method"]
    assert ["records", 2 * PER_PARTITION] in plain["kwargs_callbacks"]
    assert ["called", ["error_cb", "on_assign", "on_commit", "on_revoke", "stats_cb"]] in plain["kwargs_callbacks"]
    assert ["poll", "KeyboardInterrupt", "within 3 s"] in plain["signal_interrupt"]
    assert ["child", "del", "signal SIGABRT", "within 5 s"] in plain["fork"]  # librdkafka's, with or without the agent
    assert ["pickle", "raised", "TypeError", "cannot pickle '<class>' object"] in plain["python_protocols"]

    # telemetry off costs no thread; the async consumer's one worker thread is its design
    broker_less = {kind: tagged(run, "measure")["threads while open"] for kind, run in played["broker_less"].items()}
    assert broker_less["instrumented"] == broker_less["plain"] and broker_less["async"] == broker_less["plain"] + 1
    for kind in ("instrumented", "async"):
        assert tagged(played["drop_without_close"][kind], "agent")["freed by del"] is True

    # with closes through the agent's close(): its leave reached the telemetry topic (the final
    # flush); a dropped consumer never left the group, and says nothing of the kind
    log = TelemetryLog(kafka.bootstrap_servers, telemetry)
    try:
        closed = [tagged(played["context_manager"][kind], "agent")["agent_id"] for kind in ("instrumented", "async")]
        log.wait_for(lambda lg: all(left_on_close(lg, agent) for agent in closed), 30, "the leave events")
        for kind in ("instrumented", "async"):
            dropped = tagged(played["drop_without_close"][kind], "agent")["agent_id"]
            assert log.of(dropped, "member_config") and not left_on_close(log, dropped)
    finally:
        log.close()


def left_on_close(log: TelemetryLog, agent_id: str) -> bool:
    return any(e["body"]["to_state"] == ClassicState.UNSUBSCRIBED.value and e["body"]["reason"] == "close"
               for e in log.of(agent_id, "state_transition"))


def test_the_clients_error_comes_before_the_agents():
    """A config both refuse raises the client's error; the agent's own (naming the key) only when
    the client takes the rest, and the client it built to ask is gone (no thread left)."""
    before = set(os.listdir("/proc/self/task"))
    with pytest.raises(ValueError, match="^Failed to create consumer: group.id must be set$"):
        InstrumentedConsumer({"bootstrap.servers": "127.0.0.1:1"})  # no lens.telemetry.topic either
    with pytest.raises(KafkaException, match="No such configuration property"):
        InstrumentedConsumer({"group.id": "g", "no.such.property": 1, "lens.processing": "later"})
    with pytest.raises(ValueError, match='"lens.telemetry.topic"'):
        InstrumentedConsumer({"group.id": "g"})
    with pytest.raises(ValueError, match="lens.processing"):
        InstrumentedConsumer(**{"group.id": "g", "lens.telemetry.topic": "t", "lens.processing": "later"})
    assert set(os.listdir("/proc/self/task")) - before == set()
