"""Where an episode's rebalance time went (pipelines/gold/rebalance_phases.py), on synthetic fleets
whose phases are known by construction (tests/support/fleets.py): classic eager, cooperative and
KIP-848, and on every other fleet the bound. Pure: no Spark."""
from __future__ import annotations

import json

import pytest

from consumer_agent.member_states import STATE_ENUMS
from lens_scenarios.synthetic import P0, Fleet, fleet_telemetry
from pipelines import catalog
from pipelines.gold.group_pass import rebalance_bodies
from pipelines.gold.rebalance_phases import SLOWEST, episode_phases, member_phases
from pipelines.measures import MEASURES, follows_grammar
from pipelines.vocabulary import REBALANCE_PHASE_NAMES, REBALANCE_PHASES
from tests.support.fleets import (busy_fleet, eager_rolling_restarts, every_cause, phased_consumer_protocol,
                                  phased_cooperative, phased_eager, scale_out_then_crash, static_cooperative_restarts)
from tests.support.reference_ownership import gold_of_group

GAP_S = 10.0


def _phases(episode: dict) -> tuple:
    return tuple(None if episode[n] is None else round(episode[n], 6) for n in REBALANCE_PHASE_NAMES)


def _second_episode(fleet: Fleet) -> dict:
    _, _, episodes, _ = gold_of_group(fleet.events, gap_s=GAP_S)
    assert [e["cause"] for e in episodes] == ["start", "scale_out"]
    return episodes[1]


def _agent(fleet: Fleet, name: str) -> str:
    return next(e["agent_id"] for e in fleet.events if e["client_id"] == name)


def test_eager_the_slowest_member_is_the_one_that_waited_in_join_for_the_others_revoke():
    fleet = phased_eager()
    episode = _second_episode(fleet)
    assert _phases(episode) == (2.0, 0.02, None)  # join_s, callbacks_s, reconcile_s: classic has no reconciliation
    assert episode[SLOWEST] == _agent(fleet, "m2")
    start, end = episode["start_ms"], episode["end_ms"]
    bodies = [(e, b) for e, b in rebalance_bodies(fleet.events) if start <= e["event_time_ms"] <= end]
    spent = member_phases(bodies)
    assert spent[_agent(fleet, "m1")] == {"callbacks_s": 1_550.0, "join_s": 300.0}  # revoke 1.5 s + assign 50 ms
    assert spent[_agent(fleet, "m2")] == {"join_s": 2_000.0, "callbacks_s": 20.0}


def test_cooperative_counts_the_second_rounds_join_and_both_callbacks():
    fleet = phased_cooperative()
    episode = _second_episode(fleet)
    assert _phases(episode) == (0.5, 0.201, None)
    assert episode[SLOWEST] == _agent(fleet, "m1")


def test_kip848_reconciliation_is_the_time_reconciling_and_acknowledging_outside_the_callbacks():
    fleet = phased_consumer_protocol()
    episode = _second_episode(fleet)
    assert _phases(episode) == (1.0, 0.03, 0.02)
    assert episode[SLOWEST] == _agent(fleet, "m2")
    _, _, episodes, _ = gold_of_group(fleet.events, gap_s=GAP_S)
    assert _phases(episodes[0]) == (0.4, 0.1, 0.0)  # reconciled, all of it in the callback: shown, 0


def test_an_episode_without_callbacks_or_states_has_no_phases():
    fleet = Fleet()
    fleet.member("m1").at(0).requests_rebalance()
    _, _, episodes, _ = gold_of_group(fleet.events, gap_s=GAP_S)
    assert [(_phases(e), e[SLOWEST]) for e in episodes] == [((None, None, None), None)]


def test_a_callback_is_counted_from_the_episodes_first_event_at_the_earliest():
    """Its callback_ms reaches back before anything the episode saw: only the part inside counts."""
    fleet = Fleet()
    m1 = fleet.member("m1")
    m1.at(1_000).joins().at(1_200).assigned(P0, callback_ms=5_000.0)
    phases = episode_phases(rebalance_bodies(fleet.events))
    assert (phases["join_s"], phases["callbacks_s"]) == (0.0, 0.2)  # the join ends where the callback is taken to start


def test_a_join_begun_before_the_episode_is_not_counted():
    fleet = Fleet()
    m1 = fleet.member("m1")
    m1.at(0).joins()
    m1.at(30_000).state("assigning", "assign callback").at(30_010).assigned(P0, callback_ms=10.0)
    _, _, episodes, _ = gold_of_group(fleet.events, gap_s=GAP_S)
    assert [_phases(e) for e in episodes] == [(None, None, None), (None, 0.01, None)]


FLEETS = {**every_cause(), "busy": busy_fleet(), "crash": scale_out_then_crash(), "eager": eager_rolling_restarts(),
          "static_coop": static_cooperative_restarts(), "phased_eager": phased_eager(),
          "phased_coop": phased_cooperative(), "phased_kip848": phased_consumer_protocol()}


@pytest.mark.parametrize("name", sorted(FLEETS))
def test_an_episodes_phases_add_up_to_at_most_its_duration(name):
    _, _, episodes, _ = gold_of_group(FLEETS[name].events, gap_s=GAP_S)
    assert episodes
    for e in episodes:
        shown = [e[n] for n in REBALANCE_PHASE_NAMES if e[n] is not None]
        assert all(s >= 0 for s in shown) and sum(shown) <= e["duration_s"] + 1e-9, e
        assert (e[SLOWEST] is None) == (not shown) and (e[SLOWEST] is None or e[SLOWEST] in e["members"])


def test_the_phases_of_a_benchmark_fleet_are_bounded_too():
    fleet = fleet_telemetry(groups=2, members=4, partitions=8, rounds=4, seed=3)
    by_group: dict[str, list] = {}
    for _key, value, _ts in fleet:
        event = json.loads(value)
        by_group.setdefault(event["group_id"], []).append(event)
    for events in by_group.values():
        _, _, episodes, _ = gold_of_group(events, gap_s=GAP_S)
        assert any(e["join_s"] is not None for e in episodes)  # its members' joins end at their assign callbacks
        for e in episodes:
            assert sum(e[n] or 0 for n in REBALANCE_PHASE_NAMES) <= e["duration_s"] + 1e-9


def test_the_phases_are_declared_once_and_checked():
    """Each phase is a measure (named by the grammar), a gold/episodes column, and its states are the
    agent's member states; exactly one phase (the callbacks) is timed by callback_ms."""
    measures = {m.name for m in MEASURES}
    episode_columns = dict(catalog.EPISODES.all_columns())
    states = {s.value for enum in STATE_ENUMS.values() for s in enum}
    for phase in REBALANCE_PHASES:
        assert phase.name in measures and follows_grammar(phase.name)
        assert episode_columns[phase.name] == "double"
        assert phase.states <= states, phase
    assert [p.name for p in REBALANCE_PHASES if not p.states] == ["callbacks_s"]
    assert len({s for p in REBALANCE_PHASES for s in p.states}) == sum(len(p.states) for p in REBALANCE_PHASES)
    assert episode_columns[SLOWEST] == "string"
