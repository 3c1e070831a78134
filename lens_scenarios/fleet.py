"""The member processes of one run: start, command, stop gracefully, SIGKILL, and reap them all.

Each member runs in its own session (process group) so a terminal's Ctrl-C reaches
only the runner, which then stops the members in order (graceful close, then SIGKILL
of the whole group after a deadline). A member also exits on its own when its stdin
closes, which covers a runner that was itself killed.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lens_scenarios import java_member
from lens_scenarios.spec import MemberSpec

STOP_TIMEOUT_S = 25.0
QUIESCE_TIMEOUT_S = 5.0  # a member mid-batch acknowledges within a batch's processing (<= 0.5 s)


@dataclass
class MemberProcess:
    """One incarnation of a member: ``m1.1`` is m1's first process, ``m1.2`` its restart."""

    member: MemberSpec
    process: str
    popen: subprocess.Popen
    started_wall: float
    assigned: int = 0
    delivered: int = 0
    ended_wall: float | None = None
    ended_by: str | None = None
    quiesced: bool = False
    errors: list[str] = field(default_factory=list)

    def send(self, command: dict[str, Any]) -> None:
        try:
            assert self.popen.stdin is not None
            self.popen.stdin.write(json.dumps(command) + "\n")
            self.popen.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # already gone; stop/kill reaps it

    def alive(self) -> bool:
        return self.popen.poll() is None

    def describe(self) -> dict[str, Any]:
        return {"member": self.member.name, "process": self.process, "pid": self.popen.pid,
                "group_instance_id": self.member.group_instance_id, "agent": self.member.agent,
                "runtime": self.member.runtime,
                "started": self.started_wall, "ended": self.ended_wall, "ended_by": self.ended_by,
                "exit_code": self.popen.returncode}


class Fleet:
    """Spawns and tracks the member processes of one run."""

    def __init__(self, run_dir: Path, spec_for: Callable[[MemberSpec, str], dict[str, Any]]) -> None:
        self.run_dir = run_dir
        self.spec_for = spec_for
        self.running: dict[str, MemberProcess] = {}
        self.history: list[MemberProcess] = []
        self._incarnations: dict[str, int] = {}
        (run_dir / "logs").mkdir(parents=True, exist_ok=True)

    def start(self, member: MemberSpec) -> MemberProcess:
        n = self._incarnations.get(member.name, 0) + 1
        self._incarnations[member.name] = n
        process = f"{member.name}.{n}"
        spec = self.spec_for(member, process)
        if member.runtime == "app" and member.app is not None:
            argv = java_member.app_command(member.app, spec)
        elif member.runtime == "java":
            argv = java_member.command(self.run_dir, json.dumps(spec))
        else:
            argv = [sys.executable, "-m", "lens_scenarios.member", json.dumps(spec)]
        log = open(self.run_dir / "logs" / f"{process}.log", "wb")  # noqa: SIM115 - handed to the child
        try:
            popen = subprocess.Popen(argv,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                                     start_new_session=True, bufsize=1)
        finally:
            log.close()
        handle = MemberProcess(member, process, popen, time.time())
        self.running[member.name] = handle
        self.history.append(handle)
        threading.Thread(target=self._listen, args=(handle,), daemon=True, name=f"listen-{process}").start()
        return handle

    @staticmethod
    def _listen(handle: MemberProcess) -> None:
        assert handle.popen.stdout is not None
        for line in handle.popen.stdout:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            handle.assigned = msg.get("assigned", handle.assigned)
            handle.delivered = msg.get("delivered", handle.delivered)
            if msg.get("ev") == "done" and msg.get("cmd") == "quiesce":
                handle.quiesced = True
            if msg.get("ev") in ("client_error", "commit_failed"):
                handle.errors.append(msg.get("error", ""))

    def send(self, name: str, command: dict[str, Any]) -> None:
        self.running[name].send(command)

    def stop(self, names: list[str], timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Graceful close (the consumer leaves the group), SIGKILL after ``timeout_s``."""
        handles = [self.running.pop(n) for n in names if n in self.running]
        for handle in handles:
            handle.send({"cmd": "stop"})
        deadline = time.monotonic() + timeout_s
        for handle in handles:
            try:
                handle.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
                self._ended(handle, "stop")
            except subprocess.TimeoutExpired:
                self._kill(handle, "stop-timeout")

    def crash(self, names: list[str]) -> None:
        for name in names:
            if name in self.running:
                self._kill(self.running.pop(name), "crash")

    def _kill(self, handle: MemberProcess, why: str) -> None:
        try:
            os.killpg(handle.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        handle.popen.wait(timeout=10)
        self._ended(handle, why)

    @staticmethod
    def _ended(handle: MemberProcess, why: str) -> None:
        handle.ended_wall = time.time()
        handle.ended_by = why
        if handle.popen.stdin is not None:
            try:
                handle.popen.stdin.close()
            except OSError:
                pass

    def stop_all(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """The end of a run: every member stops reading, then all close.

        Without the first step the members close in a race: one leaves, another still reading
        takes its partitions and reads them before it closes too, so each run's shutdown adds
        a random set of handoffs (a closed loop saw 338 duplicates in one run, none in its
        rerun). A scenario measures its timeline, not how its harness stops."""
        handles = list(self.running.values())
        for handle in handles:
            handle.send({"cmd": "quiesce"})
        deadline = time.monotonic() + min(timeout_s, QUIESCE_TIMEOUT_S)
        while time.monotonic() < deadline and not all(h.quiesced or not h.alive() for h in handles):
            time.sleep(0.05)
        self.stop(list(self.running), timeout_s)

    def kill_all(self) -> None:
        """Last resort (interrupt, error): every process group of this run gets SIGKILL."""
        for handle in self.history:
            if handle.alive():
                self._kill(handle, "interrupted")
        self.running.clear()

    def assigned_total(self) -> int:
        return sum(h.assigned for h in self.running.values())

    def delivered_total(self) -> int:
        return sum(h.delivered for h in self.history)
