"""The timeline's jitter: each change lands at a drawn point after its second, so reruns are
independent draws of where a change meets the members' heartbeat cycles."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from lens_scenarios.spec import parse
from lens_scenarios.timeline import Timeline

SCENARIO = parse({"name": "jittered", "topics": [{"name": "orders", "partitions": 4}], "members": ["a", "b", "c"],
                  "duration_s": 10, "timeline": [
                      {"at": 0.2, "action": "rolling_restart", "members": ["a", "b", "c"], "down_s": 0.05,
                       "interval_s": 0.1},
                      {"at": 1.5, "action": "scale_in", "members": ["c"]}]}, "test")


@dataclass
class _Recorder:
    """Stands in for the fleet of processes: the timeline only calls it; records when."""

    calls: list[tuple[str, str, float]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def stop(self, names: list[str]) -> None:
        self.calls.extend(("stop", n, time.monotonic() - self.started) for n in names)

    def start(self, member) -> None:
        self.calls.append(("start", member.name, time.monotonic() - self.started))


def _stops(jitter_s: float, seed: int) -> list[float]:
    fleet = _Recorder()
    timeline = Timeline(SCENARIO, fleet, jitter_s, rng=random.Random(seed))  # type: ignore[arg-type]
    timeline.run()
    return [at for kind, _, at in fleet.calls if kind == "stop"]


def test_without_jitter_changes_come_on_their_seconds():
    stops = _stops(0.0, 0)
    gaps = [b - a for a, b in zip(stops, stops[1:3])]
    late = 0.1  # a busy machine's thread wake-ups
    assert 0.2 <= stops[0] < 0.2 + late and all(0.15 <= g < 0.15 + late for g in gaps) and 1.5 <= stops[3] < 1.5 + late


def test_jitter_delays_each_change_and_each_restart_by_its_own_draw():
    runs = [_stops(0.3, seed) for seed in range(3)]
    for stops in runs:
        gaps = [b - a for a, b in zip(stops, stops[1:3])]
        assert 0.2 <= stops[0] < 0.6 and all(0.15 <= g < 0.55 for g in gaps) and 1.5 <= stops[3] < 1.9
    assert len({round(stops[0], 2) for stops in runs}) == 3  # each run a draw of its own
