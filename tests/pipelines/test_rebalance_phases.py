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
from pipelines.gold.rebalance_phases import SLOWEST, SOURCE, episode_phases, member_phases, minus, union
from pipelines.measures import MEASURES, follows_grammar
from pipelines.vocabulary import JOIN_STEP_NAMES, JOIN_STEPS, PHASE_SOURCES, REBALANCE_PHASE_NAMES, REBALANCE_PHASES
from tests.support.fleets import (busy_fleet, eager_rolling_restarts, every_cause, phased_consumer_protocol,
                                  phased_cooperative, phased_eager, scale_out_then_crash, static_cooperative_restarts,
                                  timed_consumer_protocol, timed_cooperative, timed_crash)
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


def _steps(episode: dict) -> tuple:
    return tuple(None if episode[n] is None else round(episode[n], 6) for n in JOIN_STEP_NAMES)


def test_the_clients_timings_replace_the_agents_inference_and_split_the_classic_join():
    """Cooperative: the agent sees nothing of a member's join (no callback runs in it); the client timed both
    rounds, the -javaagent each step of them, the library their totals."""
    fleet = timed_cooperative()
    episode = _second_episode(fleet)
    assert _phases(episode) == (0.318, 0.201, None) and episode[SOURCE] == "client_coordinator"
    assert _steps(episode) == (0.267, 0.015, 0.036)  # m1 led both rounds: its own assignments
    assert episode[SLOWEST] == _agent(fleet, "m1")
    spent = member_phases([(e, b) for e, b in rebalance_bodies(fleet.events)
                           if episode["start_ms"] <= e["event_time_ms"] <= episode["end_ms"]])
    assert {k: round(v, 6) for k, v in spent[_agent(fleet, "m2")].items()} == {"join_s": 300.0, "callbacks_s": 31.0}
    library = _second_episode(timed_cooperative(coordinator=False))
    assert _phases(library) == (0.318, 0.201, None) and library[SOURCE] == "client_metrics"
    assert _steps(library) == (None, None, None)


def test_a_followers_sync_holds_the_leaders_assignment_and_a_crash_episode_starts_where_the_client_rejoined():
    fleet = timed_crash()
    _, _, episodes, _ = gold_of_group(fleet.events, gap_s=GAP_S)
    scale_out, crash = episodes[1], episodes[2]
    assert scale_out[SLOWEST] == _agent(fleet, "m2")  # a follower: m1 (the leader) assigned for 5 ms
    assert _phases(scale_out) == (0.335, 0.01, None) and _steps(scale_out) == (0.3, 0.005, 0.03)
    first_seen = min(e["event_time_ms"] for e in fleet.events if e["event_time_ms"] >= 145_000 + fleet.base_ms)
    assert crash["start_ms"] == first_seen - 20 and crash["duration_s"] == pytest.approx(0.025)
    assert _phases(crash) == (0.02, 0.005, None) and _steps(crash) == (0.01, 0.001, 0.009)


def test_kip848_reconciliation_is_timed_from_the_assignment_the_client_received():
    fleet = timed_consumer_protocol()
    episode = _second_episode(fleet)
    assert _phases(episode) == (0.8, 0.03, 0.2) and episode[SOURCE] == "client_coordinator"
    assert _steps(episode) == (None, None, None)  # KIP-848 has no JoinGroup nor SyncGroup
    spent = member_phases([(e, b) for e, b in rebalance_bodies(fleet.events)
                           if episode["start_ms"] <= e["event_time_ms"] <= episode["end_ms"]])
    assert spent[_agent(fleet, "m1")] == {"callbacks_s": 101.0, "reconcile_s": 301.0}  # its callbacks cut out


def test_agent_states_are_the_source_where_no_client_timed_anything():
    assert _second_episode(phased_eager())[SOURCE] == "agent_states"


def test_spans_merge_and_cut():
    assert union([(5, 7), (0, 2), (1, 3), (3, 4), (9, 9)]) == [(0, 4), (5, 7)]
    assert minus([(0, 10)], [(2, 3), (5, 6), (9, 12)]) == [(0, 2), (3, 5), (6, 9)]
    assert minus([(0, 1), (4, 5)], [(1, 4)]) == [(0, 1), (4, 5)]


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
          "phased_coop": phased_cooperative(), "phased_kip848": phased_consumer_protocol(),
          "timed_coop": timed_cooperative(), "timed_coop_metrics": timed_cooperative(coordinator=False),
          "timed_crash": timed_crash(), "timed_kip848": timed_consumer_protocol()}


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
    for step in JOIN_STEPS:  # the join's parts: only the client sees them
        assert step.name in measures and follows_grammar(step.name) and not step.states
        assert episode_columns[step.name] == "double"
    assert episode_columns[SOURCE] == "string" and PHASE_SOURCES[-1] == "agent_states"
    assert len({s for p in REBALANCE_PHASES for s in p.states}) == sum(len(p.states) for p in REBALANCE_PHASES)
    assert episode_columns[SLOWEST] == "string"
