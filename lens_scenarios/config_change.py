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
from lens_scenarios.spec import RESTARTS, Action, MemberSpec, Scenario, with_timeline

MIN_SESSION_TIMEOUT_MS = 6_000  # the embedded broker's group.min.session.timeout.ms (Kafka's default)
# A staged migration in a rerun, at a deploy's pace (kip848-migration's): from this second, each
# member down this long (as long as the scenario's own restarts, where it has any), the next one
# this much later; the scenario's own timeline starts one interval after the last member is back.
MIGRATION_AT_S, MIGRATION_DOWN_S, MIGRATION_INTERVAL_S = 2.0, 0.5, 5.0


@dataclass(frozen=True)
class Target:
    """The configuration a recommendation moves a group to, in the scenario's terms."""

    assignor: str  # the simulator's name: classic:range, consumer:uniform, ...
    static: bool
    commit_on_revoke: bool
    session_timeout_ms: int
    max_poll_interval_ms: int


def _membership(member: MemberSpec, static: bool) -> MemberSpec:
    """The member with a group.instance.id (its own, else its name) or, dynamic, without one."""
    if static:
        return member if member.group_instance_id else replace(member, group_instance_id=member.name)
    return replace(member, group_instance_id=None)


def _membership_action(action: Action, static: bool) -> Action:
    return action if action.members is None else replace(
        action, members=tuple(_membership(m, static) for m in action.members))


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
    # both ways: a plan step can make a static group dynamic (static-rolling-restart's "remove
    # group.instance.id" was rerun static, its rolling restart making no rebalance at all)
    scenario = replace(scenario, members=tuple(_membership(m, target.static) for m in scenario.members),
                       timeline=tuple(_membership_action(a, target.static) for a in scenario.timeline))
    scenario = replace(scenario, max_poll_interval_ms=target.max_poll_interval_ms)
    return scenario, replace(options, assignor=assignor, commit=commit, session_timeout_ms=session)


def migration_down_s(scenario: Scenario) -> float:
    """How long each member is down in a staged migration's rerun: as long as the scenario's own
    restarts (the plan prices the migration's restarts at the group's longest observed one: a deploy
    restarts a member as it always does; static-rolling-restart's 1 s restarts were priced 1.29 s a
    returning partition where a rerun at a fixed 0.5 s measured 0.75 s), else ``MIGRATION_DOWN_S``."""
    return max((float(a.params["down_s"]) for a in scenario.timeline if a.kind in RESTARTS),
               default=MIGRATION_DOWN_S)


def migrating_first(scenario: Scenario, remote_assignor: str | None) -> Scenario:
    """``scenario`` with a staged KIP-848 migration first: every member restarted on
    group.protocol=consumer one at a time while the group keeps consuming (the mixed phase), then
    the scenario's own timeline on the new protocol (the steady state after), shifted past the
    migration; members it scales out start on the consumer protocol, as a migrated deploy's would."""
    n, down_s = len(scenario.members), migration_down_s(scenario)
    shift = MIGRATION_AT_S + n * down_s + n * MIGRATION_INTERVAL_S
    migration = Action(MIGRATION_AT_S, "protocol_migration", None,
                       {"to": "consumer", "down_s": down_s, "interval_s": MIGRATION_INTERVAL_S,
                        "remote_assignor": remote_assignor})

    def after(a: Action) -> Action:
        moved = replace(a, at_s=a.at_s + shift)
        if a.kind != "scale_out":
            return moved
        return replace(moved, members=tuple(replace(m, group_protocol="consumer", remote_assignor=remote_assignor)
                                            for m in a.members or ()))

    return with_timeline(scenario, (migration, *(after(a) for a in scenario.timeline)), scenario.duration_s + shift)
