"""The lens's enumerations, each declared once: causes, release kinds, recommendation kinds,
KIP-848 readiness findings, assignors, grains, confidence levels, rebalance phases and their sources.

Everything else is generated from these declarations or checked against them (``tests/vocabulary``):
the dbt YAML's ``accepted_values`` lists (``python -m pipelines.vocabulary_yaml --write``), the
report's colours and labels (``tuning_report.figures``), the CLI's ``--kind`` choices, the
simulator's models, and the scenario runner's assignor words (``lens_scenarios.consumer_config.RUNS``
maps each to a name declared here; the scenarios never import the pipelines). The protocols are
the telemetry contract's: ``telemetry-v1.schema.json`` declares the envelope's enums. Pure: Spark's
Python workers import it.
"""
from __future__ import annotations

from dataclasses import dataclass

from consumer_agent.contract import GROUP_PROTOCOLS, REBALANCE_PROTOCOLS, TIMING_SOURCES
from consumer_agent.member_states import ConsumerProtocolState


@dataclass(frozen=True)
class Cause:
    """Why a handoff's previous owner let its partition go (gold/handoffs, episodes, metrics)."""

    name: str
    label: str  # the report's words for it
    colour: str  # the report's colour for it, the same in every chart


# In precedence order: when several triggers meet in one rebalance, the first listed is its cause
# (pipelines.gold.causes explains each).
CAUSES: tuple[Cause, ...] = (
    Cause("enforced", "enforced rebalance", "#eeca3b"),
    Cause("subscription_change", "subscription change", "#72b7b2"),
    Cause("poll_interval_exceeded", "poll timeout (stall)", "#f58518"),
    Cause("crash", "crash", "#e45756"),
    Cause("session_lost", "session lost", "#b279a2"),
    # a restart on the other group.protocol: KIP-848's online migration, member by member, or its rollback
    Cause("protocol_migration", "protocol migration", "#1f5f99"),
    Cause("restart", "restart", "#4c78a8"),
    Cause("scale_in", "member removed", "#88d27a"),
    Cause("scale_out", "member added", "#54a24b"),
    # the subscribed topics' partitions changed (partitions added, a topic created or deleted, a regex matching
    # another topic): seen in the broker's log (pipelines.gold.broker_causes), never in telemetry
    Cause("metadata_change", "topic metadata change", "#9d755d"),
    Cause("start", "group forming", "#9aa5b1"),
    # no instrumented member triggered it, and gold sees owners without the agent (pipelines.gold.unseen)
    Cause("unseen_member", "member without the agent", "#d6a5c9"),
    Cause("unknown", "unknown", "#bab0ac"),
)
CAUSE_NAMES: tuple[str, ...] = tuple(c.name for c in CAUSES)
# The causes of a process that left and came back (the what-if replays each as one bounce).
RESTART_CAUSES: tuple[str, ...] = ("protocol_migration", "restart")

# How sure a handoff's cause is (gold/handoffs.cause_confidence). ``exact``: the record says it (the agent's
# telemetry; in the broker's log a join, a static member's restart, a subscription or metadata change, a
# KIP-848 fencing after the rebalance timeout). ``probable``: the log leaves a choice and the likelier one is
# named (a graceful leave against a session timeout or a stall: the coordinator writes no reason).
CAUSE_CONFIDENCES: tuple[str, ...] = ("exact", "probable")
# Where a gold figure came from (gold/handoffs.source, gold/episodes.source): the agent's telemetry, the
# broker's own log (``__consumer_offsets``: bounds), or both (the agent's exact figure, within the broker's bounds).
FIGURE_SOURCES: tuple[str, ...] = ("agent", "broker", "both")

# How an ownership interval ended (gold/partition_ownership; null: still owned). ``unreleased``:
# its owner never released it (killed or gone silent), found when someone else was assigned it.
INTERVAL_RELEASE_KINDS: tuple[str, ...] = ("revoked", "lost", "unreleased")
# How a handoff's previous owner let go (gold/handoffs): an unreleased interval is a ``crash``.
RELEASE_KINDS: tuple[str, ...] = ("revoked", "lost", "crash")


@dataclass(frozen=True)
class RecommendationKind:
    """What a recommendation is about (gold/recommendations.kind; ``recommend --kind``)."""

    name: str
    about: str  # a few words for the CLI's help
    rerun_checks: bool  # a config change a scenario rerun can apply and check (the closed loop)


RECOMMENDATION_KINDS: tuple[RecommendationKind, ...] = (
    RecommendationKind("assignor", "the assignor and group protocol", True),
    RecommendationKind("static_membership", "group.instance.id", True),
    RecommendationKind("commit_on_revoke", "commit processed offsets on revoke", True),
    RecommendationKind("max_poll_interval", "max.poll.interval.ms", True),
    RecommendationKind("session_timeout", "session.timeout.ms", True),
    # no config change a rerun can apply: the enforce policy changes the application's calls (which
    # a scenario's timeline fixes), the warnings and the verdict change nothing
    RecommendationKind("enforce_policy", "when to call enforce_rebalance", False),
    # a step of the staged plan (its config is the plan's configuration after that step: the closed loop
    # reruns it from the step before, a migration staged member by member as it would roll out)
    RecommendationKind("plan_step", "a step of the staged plan to the configuration that saves the most", True),
    # the plan's step that moves the group to KIP-848's consumer protocol (or back), member by member
    RecommendationKind("migration", "the staged plan's protocol migration, checked as it rolls out", True),
    # the verdict that a classic group should not migrate to KIP-848 yet
    RecommendationKind("migration_hold", "why a classic group should not move to KIP-848 yet", False),
    # the KIP-848 readiness lint's findings (recommend/readiness.py): what to fix before or with the migration
    RecommendationKind("migration_readiness", "a warning: what to fix before the group moves to KIP-848", False),
    RecommendationKind("storm", "a warning: a rebalance storm", False),
    RecommendationKind("mixed_protocols", "a warning: eager and cooperative members in one group", False),
    RecommendationKind("coverage", "a warning: too few of the group's members run the agent to price a change",
                       False),
    # run the agent on a group whose figures are the broker's bounds, too wide to choose between changes, where
    # the possible saving is large (recommend/instrument.py): it makes the figures exact, it saves nothing itself
    RecommendationKind("instrument", "run the agent on a group priced from the broker's bounds", False),
    RecommendationKind("healthy", "the verdict when no change pays", False),
)
RECOMMENDATION_KIND_NAMES: tuple[str, ...] = tuple(k.name for k in RECOMMENDATION_KINDS)
# A staged plan's rows: its steps, and the protocol move among them (checked from the step before it).
PLAN_KINDS: tuple[str, ...] = ("plan_step", "migration")
VERIFIABLE_KINDS: tuple[str, ...] = tuple(k.name for k in RECOMMENDATION_KINDS if k.rerun_checks)
CONFIDENCE_LEVELS: tuple[str, ...] = ("high", "medium", "low")

# How much a readiness finding holds the migration up: ``blocking`` is fixed before the first member
# moves to group.protocol=consumer (the move fails or breaks the group without it), ``warning``
# changes what the group does after the move, ``info`` is worth knowing.
FINDING_SEVERITIES: tuple[str, ...] = ("blocking", "warning", "info")


@dataclass(frozen=True)
class FindingKind:
    """One check of the KIP-848 readiness lint (``pipelines.recommend.readiness``), read from telemetry."""

    code: str
    severity: str
    about: str

    def __post_init__(self) -> None:
        if self.severity not in FINDING_SEVERITIES:
            raise ValueError(f"finding {self.code!r}: severity {self.severity!r} is not one of {FINDING_SEVERITIES}")


FINDING_KINDS: tuple[FindingKind, ...] = (
    FindingKind("refused_config_key", "blocking",
                "a setting the member's client refuses under group.protocol=consumer"),
    FindingKind("client_too_old", "blocking", "a client where KIP-848 is not generally available (librdkafka before "
                "2.12, kafka-clients before 4.0)"),
    FindingKind("client_known_bugs", "warning", "librdkafka before 2.15, with known KIP-848 bugs"),
    FindingKind("sticky_user_data", "blocking", "a librdkafka cooperative-sticky classic group: no online upgrade"),
    FindingKind("cluster_refused", "blocking", "a consumer-protocol member the cluster refused"),
    FindingKind("shared_instance_id", "blocking", "static members sharing one group.instance.id at the same time"),
    FindingKind("eager_assign_calls", "blocking", "rebalance callbacks that call assign() or unassign()"),
    FindingKind("regex_full_match", "warning", "a regex subscription the broker matches in full (RE2)"),
    FindingKind("enforce_rebalance", "warning", "enforce_rebalance calls, unsupported under KIP-848"),
    FindingKind("range_to_uniform", "info", "classic range with migrants on the broker's default assignor"),
)
FINDING_CODES: tuple[str, ...] = tuple(f.code for f in FINDING_KINDS)


def finding_kind(code: str) -> FindingKind:
    """The declared finding ``code``; KeyError for any other."""
    return {f.code: f for f in FINDING_KINDS}[code]


@dataclass(frozen=True)
class Assignor:
    """One partition assignor the lens models.

    ``name`` is ``<group.protocol>:<strategy>`` (the simulator's, the what-if's and the
    recommendations' word), so classic ``range`` (client side) and KIP-848 ``range``
    (broker side) cannot be confused.
    """

    name: str
    rebalance_protocol: str  # how the client hands partitions over (every KIP-848 assignor: cooperative)

    def __post_init__(self) -> None:
        if self.group_protocol not in GROUP_PROTOCOLS or self.rebalance_protocol not in REBALANCE_PROTOCOLS:
            raise ValueError(f"assignor {self.name!r}: protocols outside the telemetry contract's")

    @property
    def group_protocol(self) -> str:
        return self.name.split(":", 1)[0]

    @property
    def strategy(self) -> str:
        """partition.assignment.strategy (classic) or group.remote.assignor (consumer)."""
        return self.name.split(":", 1)[1]


ASSIGNORS: tuple[Assignor, ...] = (
    Assignor("classic:range", "eager"),
    Assignor("classic:roundrobin", "eager"),
    Assignor("classic:cooperative-sticky", "cooperative"),
    Assignor("consumer:uniform", "cooperative"),  # the brokers' default group.remote.assignor
    Assignor("consumer:range", "cooperative"),
)
ASSIGNOR_NAMES: tuple[str, ...] = tuple(a.name for a in ASSIGNORS)
# gold/what_if.assignor: the strategy part of the name (its group_protocol column says which protocol)
ASSIGNOR_STRATEGIES: tuple[str, ...] = tuple(dict.fromkeys(a.strategy for a in ASSIGNORS))


def assignor(name: str) -> Assignor:
    """The declared assignor named ``name`` (``classic:range``); KeyError for any other."""
    return {a.name: a for a in ASSIGNORS}[name]


# The Java client's classic assignor classes by the strategy names librdkafka (and these names) use; a Java
# member's partition.assignment.strategy, as its agent reports it, lists the classes.
JAVA_ASSIGNOR_CLASSES: dict[str, str] = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


def classic_strategy(configured: str | None) -> str | None:
    """The first strategy of a classic member's partition.assignment.strategy in librdkafka's words, whichever
    client wrote it (``org.apache.kafka.clients.consumer.RangeAssignor, ...`` is ``range``); None when unset."""
    first = (configured or "").split(",")[0].strip()
    by_class = {cls: name for name, cls in JAVA_ASSIGNOR_CLASSES.items()}
    return by_class.get(first, first) or None


# gold/metrics.grain: the periods metrics are summed over.
GRAINS: tuple[str, ...] = ("hour", "day")

# A group's protocol phase (gold/protocol_phases): its live members all on one group.protocol, or
# both at once while it migrates member by member (KIP-848's online migration, or its rollback).
MIXED_PHASE = "mixed"
GROUP_PHASES: tuple[str, ...] = (*GROUP_PROTOCOLS, MIXED_PHASE)

@dataclass(frozen=True)
class RebalancePhase:
    """Where a member's rebalance time goes (gold/episodes' phase columns, the report's stacked bar).
    ``states``: the member states (``consumer_agent.member_states``, either protocol) whose time is
    this phase's; none: the phase is the application's callbacks, timed by their ``callback_ms``."""

    name: str  # its gold/episodes column (a measure of pipelines.measures)
    label: str  # the report's words for it
    colour: str
    states: frozenset[str]


_CP = ConsumerProtocolState
# Disjoint by construction (pipelines.gold.rebalance_phases): time in a callback is the callbacks',
# even while the member is in a state of another phase (KIP-848 runs them while reconciling).
REBALANCE_PHASES: tuple[RebalancePhase, ...] = (
    # classic: JoinGroup + the leader's assignment + SyncGroup; KIP-848: heartbeats until an assignment
    # (ClassicState.JOINING has the same name)
    RebalancePhase("join_s", "join and sync", "#4c78a8", frozenset({_CP.JOINING.value})),
    RebalancePhase("callbacks_s", "rebalance callbacks", "#f58518", frozenset()),
    # KIP-848 only: the member applying its target assignment until it is acknowledged
    RebalancePhase("reconcile_s", "reconciliation (KIP-848)", "#54a24b",
                   frozenset({_CP.RECONCILING.value, _CP.ACKNOWLEDGING.value})),
)
REBALANCE_PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in REBALANCE_PHASES)
# The classic protocol's join and sync, step by step (the design's KIP-795 page: the coordinator waits for every
# member to join, the leader assigns, the members sync): the slowest member's, when the -javaagent's advice on
# its client's coordinator timed them; they add up to its join_s. No states: only the client sees them.
JOIN_STEPS: tuple[RebalancePhase, ...] = (
    RebalancePhase("join_group_s", "JoinGroup (waiting for every member)", "#4c78a8", frozenset()),
    RebalancePhase("leader_assign_s", "the leader's assignment", "#9d755d", frozenset()),
    RebalancePhase("sync_group_s", "SyncGroup", "#72b7b2", frozenset()),
)
JOIN_STEP_NAMES: tuple[str, ...] = tuple(p.name for p in JOIN_STEPS)


@dataclass(frozen=True)
class PhaseSource:
    """How an episode's phases were timed (gold/episodes.phase_source): the precision the report states."""

    name: str
    label: str  # the report's words for it
    precision: str  # what the figures rest on


# The client's own timings (the telemetry's rebalance_timing.source), best first, then the agents' inference.
AGENT_STATES = "agent_states"
PHASE_SOURCES_DECLARED: tuple[PhaseSource, ...] = (
    PhaseSource("client_coordinator", "exact, each step (the client's coordinator)",
                "the Java agent's -javaagent advice on the client's coordinator: each JoinGroup, the leader's "
                "assignment and each SyncGroup timed where the client runs them (classic), the reconciliation from "
                "the target assignment received (KIP-848)"),
    PhaseSource("client_metrics", "exact in total (the client's rebalance-latency)",
                "the Java client's own rebalance-latency-total and rebalance-total (the library path): join and "
                "sync exact as one span, not split"),
    PhaseSource(AGENT_STATES, "poll granularity (the agent's states)",
                "member states the agent infers from the callbacks and poll (the Python agent: librdkafka shows "
                "none; the Java agent where the client timed nothing): a join ends when the poll that runs the "
                "assign callback does"),
)
PHASE_SOURCES: tuple[str, ...] = tuple(s.name for s in PHASE_SOURCES_DECLARED)
if PHASE_SOURCES[:-1] != TIMING_SOURCES:
    raise ValueError("pipelines.vocabulary: the client's phase sources are the telemetry contract's")

# Every enumeration a dbt YAML list can follow, by the name its ``# vocabulary:`` marker gives.
ENUMERATIONS: dict[str, tuple[str, ...]] = {
    "causes": CAUSE_NAMES,
    "release_kinds": RELEASE_KINDS,
    "recommendation_kinds": RECOMMENDATION_KIND_NAMES,
    "confidence_levels": CONFIDENCE_LEVELS,
    "figure_sources": FIGURE_SOURCES,
    "group_protocols": GROUP_PROTOCOLS,
    "group_phases": GROUP_PHASES,
    "phase_sources": PHASE_SOURCES,
    "assignor_strategies": ASSIGNOR_STRATEGIES,
    "grains": GRAINS,
}
