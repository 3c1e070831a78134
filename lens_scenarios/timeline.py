"""Plays a scenario's timeline of churn actions against the running fleet.

Actions run in order on one thread, each at its ``at`` second after the timeline
starts; an action that takes time (a rolling restart walks the members one by one)
delays the ones after it, and the log records when each really happened.

``jitter_s`` puts each action, and each member's restart after the first, later by a uniform
draw of up to that many seconds. Members heartbeat every interval from when they joined, so a
timeline in whole seconds meets them at the same point of their heartbeat cycles in every run:
14 runs of scale-out-in's KIP-848 scale-in gave m3's partition 0.39-0.65 s and m2's 0.71-1.03 s
each time. A real deploy lands anywhere in the cycle; the closed loop, whose reruns must be
independent draws of what the model prices, sets one heartbeat interval.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lens_scenarios.fleet import Fleet
from lens_scenarios.spec import RESTARTS, Action, MemberSpec, Scenario, restarted_as

STALL_MARGIN_S = 3.0


@dataclass(eq=False)
class Timeline(threading.Thread):
    scenario: Scenario
    fleet: Fleet
    jitter_s: float = 0.0
    started_mono: float = 0.0
    log: list[dict[str, Any]] = field(default_factory=list)
    rng: random.Random = field(default_factory=random.Random)
    cancelled: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        super().__init__(daemon=True, name="timeline")

    def run(self) -> None:
        self.started_mono = time.monotonic()
        for action in self.scenario.timeline:
            due = self.started_mono + action.at_s + self._jitter()
            if self.cancelled.wait(max(0.0, due - time.monotonic())):
                return
            self._play(action)

    def _jitter(self) -> float:
        return self.rng.uniform(0.0, self.jitter_s) if self.jitter_s else 0.0

    def _wait(self, seconds: float) -> bool:
        """Sleep unless the run is cancelled; True when cancelled."""
        return self.cancelled.wait(seconds)

    def _note(self, action: Action, step: str, members: list[str]) -> None:
        self.log.append({"action": action.kind, "step": step, "members": members, "planned_s": action.at_s,
                         "at_s": round(time.monotonic() - self.started_mono, 3), "wall": time.time()})

    def _targets(self, action: Action) -> list[MemberSpec]:
        if action.members is None:
            return [self.fleet.running[n].member for n in sorted(self.fleet.running)]
        return list(action.members)

    def _play(self, action: Action) -> None:
        params = action.params
        targets = self._targets(action)
        names = [m.name for m in targets]
        if action.kind in RESTARTS:
            # one member at a time, each back (a protocol_migration: on its new group.protocol) before the next
            for i, member in enumerate(targets):
                self._note(action, "stop", [member.name])
                self.fleet.stop([member.name])
                if self._wait(params["down_s"]):
                    return
                restarted = restarted_as(action, member)
                self._note(action, f"start {restarted.group_protocol}" if restarted.group_protocol else "start",
                           [member.name])
                self.fleet.start(restarted)
                if i < len(targets) - 1 and self._wait(params["interval_s"] + self._jitter()):
                    return
        elif action.kind == "scale_out":
            self._note(action, "start", names)
            for member in targets:
                self.fleet.start(member)
        elif action.kind == "scale_in":
            self._note(action, "stop", names)
            self.fleet.stop(names)
        elif action.kind == "crash":
            self._note(action, "sigkill", names)
            running = {n: self.fleet.running[n].member for n in names if n in self.fleet.running}
            self.fleet.crash(names)
            if params["restart_after_s"] is not None and not self._wait(params["restart_after_s"]):
                self._note(action, "start", names)
                for member in running.values():
                    self.fleet.start(member)
        elif action.kind == "slow_processing":
            stall = params["stall_s"] or self.scenario.max_poll_interval_ms / 1000 + STALL_MARGIN_S
            self._note(action, f"stall {stall:g}s", names)
            for name in names:
                self.fleet.send(name, {"cmd": "stall", "seconds": stall})
        elif action.kind == "subscription_change":
            self._note(action, "subscribe " + ",".join(params["topics"]), names)
            for name in names:
                self.fleet.send(name, {"cmd": "subscribe", "topics": list(params["topics"])})
        elif action.kind == "enforce_rebalance":
            self._note(action, "enforce", names)
            for name in names:
                self.fleet.send(name, {"cmd": "enforce", "reason": params["reason"]})
