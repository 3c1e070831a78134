"""A fleet member on the JVM: the Java client's settings for a member's config, and the commands that run one.

The member program is ``JavaMember.java`` beside this module, not a class of ``jvm_agent/``: the agent's jar
is what users put on their classpath, and a scenario harness does not belong in it. It is compiled once per
run (``javac`` against the agent's jar, a few seconds) into the run folder, with the Java members' truth
writer (``java/io/rebalancelens/scenarios/TruthWriter.java``, which applications run as members use too), not
by the single-file launcher at every start: a restart would then pay a compile, and a rolling restart's
``down_s`` would mean seconds more on the JVM than on Python.

A member that is an application of its own (``runtime: app``, ``spec.MemberApp``) runs its command with the
javaagent added (``app_command``): ``-javaagent:`` and the agent's ``lens.*`` options as ``-D`` flags, as a
user adopting the agent adds them, and nothing else.
"""
from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from lens_runtime.errors import LensError
from consumer_agent.agent_spec import spec as agent_spec
from lens_runtime.jvm_agent_build import agent_classpath, javaagent_jar
from lens_scenarios.member import BATCH
from lens_scenarios.spec import MemberApp

SOURCE = Path(__file__).resolve().parent / "JavaMember.java"
TRUTH_WRITER = Path(__file__).resolve().parent / "java" / "io" / "rebalancelens" / "scenarios" / "TruthWriter.java"
MAIN_CLASS = SOURCE.stem
# librdkafka's assignor names -> the Java client's classes (the run's --assignor words say the former)
JAVA_ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                  "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                  "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}
STRING_DESERIALIZER = "org.apache.kafka.common.serialization.StringDeserializer"
# A light JVM: members are many small processes on a busy machine.
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m")
LENS_PREFIX = agent_spec()["options"]["prefix"]
_compile_lock = threading.Lock()


def java_config(config: dict[str, Any]) -> dict[str, Any]:
    """A member's settings (``consumer_config.member_config``, librdkafka's words) for the Java client.

    The keys the scenarios set mean the same on both clients but for the assignor's name; the Java client
    also takes deserializers, and ``max.poll.records`` is the Python member's consume batch. The Java agent
    refuses ``lens.commit.on.revoke`` (not built there yet): a Java member committing on revoke commits in
    its own listener, as the plain Python member does."""
    out = {k: v for k, v in config.items() if k != "lens.commit.on.revoke"}
    if "partition.assignment.strategy" in out:
        out["partition.assignment.strategy"] = JAVA_ASSIGNORS[out["partition.assignment.strategy"]]
    out.update({"key.deserializer": STRING_DESERIALIZER, "value.deserializer": STRING_DESERIALIZER,
                "max.poll.records": BATCH})
    return out


def _compiled(run_dir: Path) -> Path:
    """The member class compiled into ``<run>/java``, once per run (the fleet starts members from two threads)."""
    classes = run_dir / "java"
    with _compile_lock:
        if not (classes / f"{MAIN_CLASS}.class").is_file():
            classes.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(["javac", "-nowarn", "-cp", agent_classpath(), "-d", str(classes), str(SOURCE),
                                   str(TRUTH_WRITER)], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise LensError(f"Compiling {SOURCE.name} failed: {done.stderr.strip()[-2000:]}. "
                                "Check that a JDK 17+ `javac` is on PATH and the agent jar is current "
                                "(`rebalance-lens setup`).")
    return classes


def command(run_dir: Path, spec_json: str) -> list[str]:
    """``java`` running one member process with ``spec_json`` (what ``lens_scenarios.member`` takes)."""
    return ["java", *JVM_FLAGS, "-cp", f"{_compiled(run_dir)}:{agent_classpath()}", MAIN_CLASS, spec_json]


def app_command(app: MemberApp, spec: dict[str, Any]) -> list[str]:
    """``app``'s command running one member process with ``spec`` (its last argument); on a member with the agent,
    ``-javaagent:`` and the spec's ``lens.*`` options (as ``-Dlens.x=v``) right after the java executable."""
    java, *rest = app.command
    added: list[str] = []
    if spec["agent"]:
        added = [f"-javaagent:{javaagent_jar()}",
                 *(f"-D{key}={value}" for key, value in spec["config"].items() if key.startswith(LENS_PREFIX))]
    return [java, *added, *rest, json.dumps(spec)]
