"""A recommended configuration applied to a scenario run: what the closed loop reruns.

The recommendation's target configuration (``recommended``: assignor and protocol,
static membership, commit-on-revoke, max.poll.interval.ms, session timeout) becomes the
run's choices: ``RunOptions.assignor``, ``commit`` and ``session_timeout_ms``, each member's
``group_instance_id``, the scenario's ``max_poll_interval_ms``. What a scenario run
cannot set is refused with a LensError, never silently dropped.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from lens_runtime.errors import LensError
from lens_scenarios.consumer_config import RUNS, protocol_of
from lens_scenarios.runner import RunOptions
from lens_scenarios.spec import Action, MemberSpec, Scenario

MIN_SESSION_TIMEOUT_MS = 6_000  # the embedded broker's group.min.session.timeout.ms (Kafka's default)


@dataclass(frozen=True)
class Target:
    """The configuration a recommendation moves a group to, in the scenario's terms."""

    assignor: str  # the simulator's name: classic:range, consumer:uniform, ...
    static: bool
    commit_on_revoke: bool
    session_timeout_ms: int
    max_poll_interval_ms: int


def _static(member: MemberSpec) -> MemberSpec:
    return member if member.group_instance_id else replace(member, group_instance_id=member.name)


def _static_action(action: Action) -> Action:
    return action if action.members is None else replace(action, members=tuple(_static(m) for m in action.members))


def apply(scenario: Scenario, options: RunOptions, target: Target) -> tuple[Scenario, RunOptions]:
    """The scenario and run options that run ``target``."""
    word = {name: word for word, name in RUNS.items()}.get(target.assignor)
    if word is None:
        raise LensError(f"a scenario run cannot choose the {target.assignor!r} assignor (the embedded broker's "
                        "default, uniform, is what --protocol consumer runs); verify a classic or uniform change")
    assignor, protocol = word, protocol_of(word)
    session = options.session_timeout_ms
    if protocol == "classic":
        if target.session_timeout_ms < MIN_SESSION_TIMEOUT_MS:
            raise LensError(f"session.timeout.ms={target.session_timeout_ms} is under the broker's minimum "
                            f"({MIN_SESSION_TIMEOUT_MS})")
        session = target.session_timeout_ms  # KIP-848: the broker's group.consumer.session.timeout.ms
    commit = options.commit
    if target.commit_on_revoke and commit != "revoke":
        if commit != "batch":
            raise LensError(f"commit-on-revoke runs on batch commits; the run used --commit {commit}")
        commit = "revoke"
    if protocol == "classic" and not 7_000 <= target.max_poll_interval_ms <= 600_000:
        raise LensError(f"max.poll.interval.ms={target.max_poll_interval_ms} is outside a scenario's [7000, 600000]")
    if target.static:
        scenario = replace(scenario, members=tuple(_static(m) for m in scenario.members),
                           timeline=tuple(_static_action(a) for a in scenario.timeline))
    scenario = replace(scenario, max_poll_interval_ms=target.max_poll_interval_ms)
    return scenario, replace(options, assignor=assignor, commit=commit, session_timeout_ms=session)
