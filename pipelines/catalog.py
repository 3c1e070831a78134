"""Every table of the lake, declared once: layer, path, grain, keys, the stage that writes it,
its columns and its file layout.

The stages write through these declarations (``pipelines.lake`` takes a ``Table``), the tests
check each written table's schema against them, and the SQL models and the report read their
sources from here. Column types are Spark SQL DDL types, so the pure per-group modules (which
run in Spark's Python workers) import this module without importing Spark.

Figures are named by one vocabulary (``pipelines.measures``: ``duplicates``, ``pause_s``,
``_upper`` for bounds, ``predicted_`` / ``measured_`` and the other qualifiers); a lake written
under older names is renamed in place by ``pipelines.migrations``.

Layers: ``bronze`` (the topic as it arrived, and what validation rejected), ``silver``
(validated, typed events and what follows from one event at a time), ``gold`` (what follows
from a group's whole timeline: ownership, handoffs, episodes, metrics), ``audit`` (the
pipeline's own progress).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

Columns = tuple[tuple[str, str], ...]

# What names a group: its cluster and its group id. One group id on two clusters is two groups
# (prod-eu and prod-us, or prod and staging, sending telemetry to one topic); events of agents
# older than the cluster id read as contract.CLUSTER_UNKNOWN (the empty string, never null, so
# the key compares, joins and groups as plainly as a group id did).
GROUP_KEY = ("cluster_id", "group_id")


@dataclass(frozen=True)
class Table:
    """One Delta table of the lake.

    ``scope``: the columns a stage replaces rows by when it recomputes part of the table (the
    incremental unit: a group, ``GROUP_KEY``), None for tables written otherwise. ``sort_by``
    and ``stats_columns`` default to the scope then the keys: what reads and replaces prune files by.
    """

    path: str
    grain: str
    keys: tuple[str, ...]
    written_by: str
    columns: Columns = ()
    derived_columns: Callable[[], Columns] | None = None  # for columns that follow from the contract
    scope: tuple[str, ...] | None = GROUP_KEY
    sort_by: tuple[str, ...] = ()
    stats_columns: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        pruning = tuple(dict.fromkeys([*(self.scope or ()), *self.keys]))
        if not self.sort_by:
            object.__setattr__(self, "sort_by", pruning)
        if not self.stats_columns:
            object.__setattr__(self, "stats_columns", self.sort_by)

    @property
    def layer(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.path.split("/", 1)[1]

    def location(self, lake_path: str) -> str:
        return f"{lake_path.rstrip('/')}/{self.path}"

    def all_columns(self) -> Columns:
        return self.derived_columns() if self.derived_columns else self.columns

    def column_names(self) -> list[str]:
        return [name for name, _ in self.all_columns()]

    def ddl(self, separator: str = " ") -> str:
        return ddl_of(self.all_columns(), separator)

    def schema(self) -> StructType:
        """The Spark schema (parsed by the driver's JVM: needs an active session)."""
        from pyspark.sql.types import StructType

        return StructType.fromDDL(self.ddl())


def ddl_of(columns: Columns, separator: str = " ") -> str:
    """``name type, ...``; with ``separator=": "`` the inside of a ``struct<...>``."""
    return ", ".join(f"`{name}`{separator}{kind}" for name, kind in columns)


def _columns(ddl: str) -> Columns:
    """``"a string, b bigint"`` as ((a, string), (b, bigint)); types without commas only."""
    return tuple(tuple(part.strip().split(" ", 1)) for part in ddl.split(","))  # type: ignore[misc]


KAFKA_PLACE = _columns("topic string, kafka_partition int, kafka_offset bigint")
BRONZE_KEYS = tuple(name for name, _ in KAFKA_PLACE)  # a record's place in the topic

BRONZE = Table(
    "bronze/telemetry_raw", grain="one row per record of the telemetry topic, as it arrived",
    keys=BRONZE_KEYS, written_by="ingest", scope=None, partition_by=("date",),
    columns=(*KAFKA_PLACE, *_columns("kafka_timestamp timestamp, key string, value binary, date date")))
QUARANTINE = Table(
    "bronze/quarantine", grain="one row per rejected telemetry record, with every rule it failed",
    keys=BRONZE_KEYS, written_by="validate", scope=None, partition_by=("date",),
    stats_columns=(*BRONZE_KEYS, "validate_batch"),
    columns=(*BRONZE.columns, ("reasons", "array<string>"), ("validate_batch", "bigint")))
VALIDATION_SUMMARY = Table(
    "audit/validation_summary", grain="one row per validation batch: its counts, rule failures and verdict",
    keys=("validate_batch",), written_by="validate", scope=None,
    columns=_columns("validate_batch bigint, rows bigint, quarantined bigint, valid bigint, duplicates bigint, "
                     "new_events bigint, sequence_gaps bigint, missing_events bigint")
    + (("rule_failures", "map<string,bigint>"),)
    + _columns("passed boolean, max_bad_row_fraction double, validated_at timestamp"))
STAGE_PROGRESS = Table(
    "audit/stage_progress", grain="one row per stage: the last validation batch it has processed",
    keys=("stage",), written_by="every stage", scope=None, columns=_columns("stage string, last_batch bigint"))


def _event_columns() -> Columns:
    from pipelines.telemetry_types import event_columns

    return event_columns()


# What the later stages prune events by: a group's events (silver, gold), a batch's (changed
# groups), an agent's (gaps); and validation, the rows some rule could flag (suspected_by).
EVENTS = Table(
    "silver/events", grain="one row per telemetry event (unique event_id), typed by the contract",
    keys=("event_id",), written_by="validate", scope=None, derived_columns=_event_columns,
    sort_by=(*GROUP_KEY, "event_time_ms"), partition_by=("event_date",),
    stats_columns=(*GROUP_KEY, "validate_batch", "agent_id", "event_time_ms", "suspected_by"))
# Validation's state between batches (``pipelines.sequences``): per agent, the runs of sequence
# numbers validated through a batch, so a batch's gaps need no reread of the agent's events.
SEQUENCES = Table(
    "silver/agent_sequences",
    grain="one row per agent and validation batch that brought its events: every run of sequence numbers "
          "validated through that batch",
    keys=("agent_id", "validate_batch"), written_by="validate", scope=None,
    columns=_columns("agent_id string, group_id string, validate_batch bigint")
    + (("runs", "array<struct<lo: bigint, hi: bigint>>"),))
MEMBER_STATES = Table(
    "silver/member_states", grain="one row per state a member was in, from when to when (end open while current)",
    keys=("event_id",), written_by="silver",
    columns=_columns("cluster_id string, group_id string, agent_id string, member_id string, "
                     "group_instance_id string, host string, "
                     "client_id string, event_id string, seq bigint, from_state string, state string, reason string, "
                     "allowed boolean, start_ms bigint, end_ms bigint"))
COMMITS = Table(
    "silver/commits", grain="one row per partition offset of a commit event",
    keys=("event_id", "topic", "partition"), written_by="silver",
    columns=_columns("cluster_id string, group_id string, agent_id string, member_id string, event_id string, "
                     "event_time_ms bigint, "
                     "mode string, sync boolean, in_revoke boolean, request_error string, duration_ms double, "
                     "topic string, partition bigint, offset bigint, error string, validate_batch bigint"),
    scope=None, sort_by=(*GROUP_KEY, "event_time_ms"), stats_columns=(*GROUP_KEY, "validate_batch", "event_time_ms"))
OWNERSHIP = Table(
    "gold/partition_ownership",
    grain="one row per ownership interval: one member holding one partition, from its assignment to its release",
    keys=("assign_event_id", "topic", "partition"), written_by="gold",
    columns=_columns(
        "cluster_id string, group_id string, topic string, partition bigint, agent_id string, member_id string, "
        "group_instance_id string, host string, client_id string, generation bigint, assign_event_id string, "
        "assigned_ms bigint, first_fetch_ms bigint, first_fetch_offset bigint, first_fetch_window_ms double, "
        "first_fetch_timestamp_ms bigint, release_kind string, "
        "release_event_id string, released_ms bigint, callback_ms double, commit_in_revoke boolean, "
        "position_at_release bigint, last_processed_at_release bigint, committed_at_release bigint, "
        "committed_max bigint, last_progress_ms bigint, last_progress_processed_offset bigint, "
        "last_progress_lag bigint, max_rate_per_s double, processed bigint, first_progress_log_end bigint, "
        "next_assigned_ms bigint, next_first_fetch_ms bigint, last_progress_position bigint, "
        "max_progress_interval_ms double, first_progress_log_end_ms bigint, last_record_after_ms bigint, "
        "uncommitted_sum bigint, uncommitted_samples bigint, handed_out_at_release boolean, progress_due_ms double, "
        "last_commit_ms bigint"))
# The handoffs' estimates: the most likely figures and their intervals, never bounds (``pipelines.measures``'s
# ``_estimate``, ``_low / _high``; ``pipelines.gold.handoffs`` draws them).
ESTIMATES = ("duplicates_estimate", "duplicates_estimate_low", "duplicates_estimate_high", "pause_estimate_s",
             "pause_estimate_low_s", "pause_estimate_high_s")
HANDOFFS = Table(
    "gold/handoffs",
    grain="one row per partition handoff (an ownership interval and the next one of its partition) and what it cost",
    keys=("handoff_id",), written_by="gold",
    columns=_columns(
        "handoff_id string, cluster_id string, group_id string, topic string, partition bigint, prev_agent_id string, "
        "prev_member_id string, next_agent_id string, next_member_id string, same_owner boolean, "
        "prev_assigned_ms bigint, generation bigint, release_kind string, revoke_ms bigint, assigned_ms bigint, "
        "first_fetch_ms bigint, first_fetch_offset bigint, first_fetch_window_ms double, "
        "first_fetch_timestamp_ms bigint, last_processed_at_revoke bigint, committed_at_revoke bigint, "
        "uncommitted_at_revoke bigint, "
        "revoke_callback_ms double, revoke_event_id string, commit_in_revoke boolean, pause_s double, "
        "pause_upper_s double, duplicates bigint, duplicates_upper bigint, "
        "episode_id string, episode_start_ms bigint, cause string, unseen_owner boolean, "
        # the broker source (issue 52): where the figures came from (pipelines.vocabulary.FIGURE_SOURCES), how sure
        # the cause is (CAUSE_CONFIDENCES) and the previous owner's stop window; the most likely figures (a crash's
        # from its owner's pace, the broker's from the log's stop window) with their intervals
        "source string, cause_confidence string, "
        "duplicates_estimate bigint, duplicates_estimate_low bigint, duplicates_estimate_high bigint, "
        "pause_estimate_s double, pause_estimate_low_s double, pause_estimate_high_s double, "
        "stopped_after_ms bigint, stopped_by_ms bigint"))
EPISODES = Table(
    "gold/episodes", grain="one row per rebalance episode of a group, with its causes",
    keys=("episode_id",), written_by="gold",
    columns=_columns("episode_id string, cluster_id string, group_id string, start_ms bigint, end_ms bigint, "
                     "duration_s double, "
                     "generation_min bigint, generation_max bigint")
    + (("members", "array<string>"), ("members_joined", "array<string>"), ("members_left", "array<string>"))
    + _columns("partitions_moved bigint, partitions_lost bigint, events bigint, cause string")
    + (("causes", "array<string>"),)
    # where its time went (pipelines.vocabulary.REBALANCE_PHASES): its slowest member's phases, its classic join
    # step by step (JOIN_STEPS) and how they were timed (PHASE_SOURCES)
    + _columns("join_s double, callbacks_s double, reconcile_s double, slowest_agent_id string, source string")
    + _columns("join_group_s double, leader_assign_s double, sync_group_s double, phase_source string"))
MEMBERS = Table(
    "gold/members",
    grain="one row per member process (agent) of a group: configuration, join, leave, subscriptions, stalls",
    keys=("agent_id",), written_by="gold",
    columns=_columns(
        "cluster_id string, group_id string, agent_id string, member_id string, group_instance_id string, host string, "
        "client_id string, group_protocol string, assignor string, remote_assignor string, commit_on_revoke boolean, "
        "enable_auto_commit boolean, auto_commit_interval_ms bigint, session_timeout_ms bigint, "
        "heartbeat_interval_ms bigint, max_poll_interval_ms bigint, joined_ms bigint, join_cause string, "
        "left_ms bigint, leave_cause string, last_seen_ms bigint, crashed boolean")
    + (("subscriptions", "array<struct<at_ms: bigint, topics: array<string>>>"),
       ("stalls", "array<struct<began_ms: bigint, at_ms: bigint, back_ms: bigint>>"), ("enforced_ms", "array<bigint>"))
    # what the KIP-848 readiness lint reads (recommend/readiness.py): setting names only, never their values
    + _columns("librdkafka_version string, pattern string")
    + (("config_keys", "array<string>"), ("callback_calls", "array<string>"), ("client_errors", "array<string>")))
METRICS = Table(
    "gold/metrics", grain="one row per group, grain (hour or day), period and cause (or 'all')",
    keys=("cluster_id", "group_id", "grain", "period_start", "cause"), written_by="gold",
    columns=_columns(
        "cluster_id string, group_id string, grain string, period_start timestamp, cause string, rebalances bigint, "
        "partitions_moved bigint, pause_s double, pause_upper_s double, duplicates bigint, duplicates_upper bigint, "
        "lost_partitions bigint, commit_on_revoke_coverage double, revoke_callback_s double, "
        "records_processed bigint, duplicate_rate double, covered_s double, owned_s double, coverage double, "
        "broker_covered_s double, broker_coverage double"))

# Gold's own state between runs (written by gold, read only by gold): per partition, the
# ownership fold's state as of ``before_ms`` (the intervals later events can still change, as
# JSON: a list of interval rows whose length varies); per group (topic and partition null),
# that time and the agents stalled at it (null for a group no agent reported), and the broker's
# last record of the group gold priced (``broker_through_offset``; null: none). A run folds the
# events from ``before_ms`` on.
FOLD_STATE = Table(
    "gold/fold_state", grain="one row per partition of a group (its ownership fold's state), and one per group",
    keys=("cluster_id", "group_id", "topic", "partition"), written_by="gold",
    columns=_columns("cluster_id string, group_id string, topic string, partition bigint, before_ms bigint, "
                     "tail string")
    + (("stalled", "array<string>"), ("broker_through_offset", "bigint")))
REBALANCE_EVENTS = Table(
    "gold/rebalance_events",
    grain="one row per rebalance event (assignment, revoke, loss, state move, config, request, poll-interval error)",
    keys=("event_id",), written_by="gold",
    columns=_columns("event_id string, kind string, event_time_ms bigint, agent_id string, seq bigint, "
                     "cluster_id string, group_id string, member_id string, group_instance_id string, "
                     "client_id string, host string, "
                     "generation bigint, group_protocol string, assignor string, body string, validate_batch bigint"),
    scope=None, sort_by=(*GROUP_KEY, "event_time_ms"), stats_columns=(*GROUP_KEY, "validate_batch"))
COVERAGE = Table(
    "gold/coverage",
    grain="one row per group and hour: the partition-seconds its members held, and how many of them ran the agent",
    keys=("cluster_id", "group_id", "hour_start"), written_by="gold",
    columns=_columns("cluster_id string, group_id string, hour_start timestamp, covered_s double, owned_s double, "
                     "broker_covered_s double"))
# The broker's bounds against the agent's figures, of the handoffs both saw (pipelines.gold.broker_merge):
# a disagreement is counted here, never hidden.
SOURCE_AGREEMENT = Table(
    "gold/source_agreement",
    grain="one row per group and figure: the handoffs the agent and the broker both saw, and how many of the "
          "agent's figures fell outside the broker's bounds",
    keys=("cluster_id", "group_id", "figure"), written_by="gold",
    columns=_columns("cluster_id string, group_id string, figure string, handoffs bigint, outside bigint, "
                     "most_outside double"))
PROTOCOL_PHASES = Table(
    "gold/protocol_phases",
    grain="one row per group and protocol phase: a span in which its live members were all classic, all on "
          "KIP-848's consumer protocol, or both (mixed: a migration or its rollback under way)",
    keys=("cluster_id", "group_id", "start_ms"), written_by="gold",
    columns=_columns("cluster_id string, group_id string, phase string, start_ms bigint, end_ms bigint"))
PROCESSED = Table(
    "gold/records_processed", grain="one row per group and hour: the records its members processed",
    keys=("cluster_id", "group_id", "hour_start"), written_by="gold",
    columns=_columns("cluster_id string, group_id string, hour_start timestamp, records_processed bigint"))
WHAT_IF = Table(
    "gold/what_if",
    grain="one row per group and candidate configuration: its replay's predicted rebalances and costs",
    keys=("cluster_id", "group_id", "config"), written_by="recommend",
    columns=_columns(
        "cluster_id string, group_id string, config string, is_current boolean, group_protocol string, "
        "assignor string, "
        "static_membership boolean, commit_on_revoke boolean, session_timeout_ms bigint, max_poll_interval_ms bigint, "
        "window_start_ms bigint, window_end_ms bigint, predicted_rebalances bigint, predicted_handoffs bigint, "
        "predicted_partitions_moved bigint, predicted_duplicates double, predicted_pause_s double, "
        "predicted_duplicates_saved double, predicted_pause_saved_s double, "
        "measured_duplicates double, measured_pause_s double, replayed_duplicates double, replayed_pause_s double"))
RECOMMENDATIONS = Table(
    "gold/recommendations",
    grain="one row per group and recommendation (a change, a warning, or the healthy verdict), ranked",
    keys=("cluster_id", "group_id", "rank"), written_by="recommend",
    columns=_columns("cluster_id string, group_id string, rank int, kind string, title string, current_config string, "
                     "recommended_config string, target_assignor string, target_static_membership boolean, "
                     "target_commit_on_revoke boolean, target_session_timeout_ms bigint, "
                     "target_max_poll_interval_ms bigint")
    + (("config_change", "array<string>"), ("rollout", "array<string>"), ("evidence", "array<string>"))
    + _columns("evidence_query string, predicted_duplicates_before double, predicted_duplicates_after double, "
               "predicted_duplicates_saved double, predicted_duplicates_saved_pct double, "
               "predicted_pause_before_s double, predicted_pause_after_s double, predicted_pause_saved_s double, "
               "predicted_pause_saved_pct double, measured_duplicates double, measured_pause_s double, "
               "tradeoff string, confidence string, confidence_reason string, "
               "predicted_duplicates_mixed_phase double, predicted_pause_mixed_phase_s double, "
               "replayed_duplicates double, replayed_pause_s double, replayed_duplicates_error_pct double, "
               "replayed_pause_error_pct double, "
               # where the figures it rests on came from (pipelines.vocabulary.FIGURE_SOURCES)
               "source string"))

RECOMMEND_FAILURES = Table(
    "audit/recommend_failures",
    grain="one row per group whose last recommend pass raised: the error and where, while every other group's "
          "what-if and recommendations were written (the group's own are cleared: none computed on its new events)",
    keys=GROUP_KEY, written_by="recommend",
    columns=_columns("cluster_id string, group_id string, error string, raised_at string, traceback string, "
                     "validate_batch bigint"))

# Written by `recommend --verify` (the closed loop), not by a stage: each row is one
# recommendation applied to a rerun of the scenario run it was made from, with the saving the
# recommendation predicted beside the one both runs' ground truth measured.
VERIFICATIONS = Table(
    "gold/verifications",
    grain="one row per closed-loop check: a recommendation applied to a rerun of the run it was made from",
    keys=("cluster_id", "group_id", "verified_at"), written_by="recommend --verify",
    columns=_columns("cluster_id string, group_id string, verified_at timestamp, scenario string, kind string, "
                     "title string")
    + (("config_change", "array<string>"),)
    + _columns("predicted_duplicates_saved double, measured_duplicates_saved double, "
               "predicted_pause_saved_s double, measured_pause_saved_s double, measured_duplicates_before double, "
               "measured_duplicates_after double, measured_pause_before_s double, measured_pause_after_s double, "
               "holds boolean, rerun_group_id string, predicted_duplicates_mixed_phase double, "
               "measured_duplicates_mixed_phase double, predicted_pause_mixed_phase_s double, "
               "measured_pause_mixed_phase_s double, reruns int, measured_duplicates_saved_se double, "
               "measured_pause_saved_se_s double"))

# The broker stage's tables (``pipelines.broker``): each group's history rebuilt from the records
# its coordinator wrote into ``__consumer_offsets`` (``pipelines.broker_log``), for every group of
# the clusters read, whatever its members run. Their columns are the fields of the plain rows
# ``pipelines.broker_log`` returns, plus the cluster: what gold's bounds read is what the history
# functions write. A record's place in the topic (``offsets_partition``, ``offset``) names each row.
BROKER_PLACE = _columns("cluster_id string, group_id string, offsets_partition int, offset bigint")
BROKER_SORT = ("cluster_id", "group_id", "offsets_partition", "offset")
_TOPIC_PARTITIONS = "array<struct<topic: string, partitions: array<bigint>>>"
_ID_PARTITIONS = ("array<struct<topic: string, topic_id: string, partitions: array<bigint>, "
                  "assignment_epochs: array<bigint>>>")
BROKER_MEMBER = ("struct<member_id: string, instance_id: string, client_id: string, client_host: string, "
                 "session_timeout_ms: bigint, rebalance_timeout_ms: bigint, subscribed_topics: array<string>, "
                 f"rack_id: string, owned_partitions: {_TOPIC_PARTITIONS}, subscription_generation: bigint, "
                 f"assigned_partitions: {_TOPIC_PARTITIONS}>")
BROKER_GENERATIONS = Table(
    "silver/broker_generations",
    grain="one row per GroupMetadata record of a classic group: a completed generation (members, subscriptions, "
          "assignments), the group emptied, a static member replaced, or the group deleted",
    keys=("cluster_id", "offsets_partition", "offset"), written_by="broker", scope=None, sort_by=BROKER_SORT,
    columns=(*BROKER_PLACE, *_columns(
        "synced_ms bigint, kind string, generation bigint, protocol_type string, assignor string, "
        "rebalance_protocol string, leader_id string, join_completed_ms bigint, failed_rounds bigint"),
        ("members", f"array<{BROKER_MEMBER}>"), ("joined", "array<string>"), ("left", "array<string>"),
        ("replaced", "array<struct<old_member_id: string, new_member_id: string>>")))
BROKER_EVENTS = Table(
    "silver/broker_group_events",
    grain="one row per record of a consumer-protocol (KIP-848) group: an epoch bump, a target assignment, a member "
          "joining, changing or leaving, a member's assignment (revocation asked, acknowledged, partitions given)",
    keys=("cluster_id", "offsets_partition", "offset"), written_by="broker", scope=None, sort_by=BROKER_SORT,
    columns=(*BROKER_PLACE, *_columns(
        "at_ms bigint, kind string, member_id string, instance_id string, group_epoch bigint, "
        "assignment_epoch bigint, assignment_timestamp_ms bigint, member_epoch bigint, previous_member_epoch bigint, "
        "member_state string"),
        *((name, _ID_PARTITIONS) for name in ("assigned", "pending_revocation", "added", "removed", "target")),
        ("subscribed_topics", "array<string>"), ("subscribed_regex", "string"), ("replaces_member_id", "string"),
        *_columns("client_id string, client_host string, rebalance_timeout_ms bigint, member_protocol string")))
BROKER_OWNERSHIP = Table(
    "silver/broker_ownership_changes",
    grain="one row per change of a partition's owner the broker logged (assigned: a handoff with its previous "
          "owner's release; released; reassigned by an eager round; replaced: a static member's new id)",
    keys=("cluster_id", "offsets_partition", "offset", "topic_id", "topic", "partition"), written_by="broker",
    scope=None, sort_by=BROKER_SORT,
    columns=(*BROKER_PLACE, *_columns(
        "protocol string, topic string, topic_id string, partition bigint, kind string, at_ms bigint, owner string, "
        "owner_instance_id string, previous_owner string, previous_instance_id string, previous_since_ms bigint, "
        "revoke_requested_ms bigint, released_ms bigint, release_kind string, generation bigint, "
        "join_completed_ms bigint, member_epoch bigint")))
BROKER_COMMITS = Table(
    "silver/broker_commits",
    grain="one row per offset commit the bounds read: the last before and the first after each ownership change "
          "of its partition, the first that advances, checkpoints before it, deleted offsets (reasons say which)",
    keys=("cluster_id", "offsets_partition", "offset"), written_by="broker", scope=None, sort_by=BROKER_SORT,
    columns=(*BROKER_PLACE, *_columns(
        "topic string, partition bigint, committed_offset bigint, leader_epoch bigint, commit_timestamp_ms bigint, "
        "at_ms bigint"), ("reasons", "array<string>")))
# ``silver/broker_log_ends``: the records a data partition had by ``at_ms`` (``offsets_for_times(at_ms + 1)``:
# the first offset stamped after it, or the log end when none is); ``at_ms`` LOG_START_MS reads its log start.
LOG_START_MS = 0
BROKER_LOG_ENDS = Table(
    "silver/broker_log_ends",
    grain="one row per data partition and time an ownership change needs its log end at (offsets_for_times)",
    keys=("cluster_id", "topic", "partition", "at_ms"), written_by="broker", scope=None,
    columns=_columns("cluster_id string, topic string, partition bigint, at_ms bigint, log_end_offset bigint, "
                     "found boolean, asked_ms bigint"))
BROKER_TOPICS = Table(
    "silver/broker_topics", grain="one row per topic id a cluster's records or its Admin API named",
    keys=("cluster_id", "topic_id"), written_by="broker", scope=None,
    columns=_columns("cluster_id string, topic_id string, topic string"))
# The broker stage's state between runs: per group, what its next record is read against
# (``GroupHistory.state`` as JSON) and its last record read (``through_offset``, stamped ``through_ms``:
# gold reads these two, to find the groups with new history and where an open tenure ends); per
# partition of ``__consumer_offsets`` (group_id null), the next offset to read. One commit replaces
# both for the partitions a run read.
BROKER_STATE = Table(
    "silver/broker_state",
    grain="one row per group (its history's state, as of through_offset), and one per partition of "
          "__consumer_offsets (group_id null: the next offset to read)",
    keys=("cluster_id", "offsets_partition", "group_id"), written_by="broker", scope=None,
    columns=_columns("cluster_id string, group_id string, offsets_partition int, through_offset bigint, "
                     "through_ms bigint, next_offset bigint, state string"))
BROKER_DECODED = Table(
    "audit/broker_decode",
    grain="one row per partition of __consumer_offsets, slice read and outcome: records decoded (by record name), "
          "skipped (unknown type, unknown version, malformed), unknown tags stepped over, member bytes unreadable",
    keys=("cluster_id", "offsets_partition", "from_offset", "outcome", "record_type", "name", "version"),
    written_by="broker", scope=None,
    columns=_columns("cluster_id string, offsets_partition int, from_offset bigint, to_offset bigint, "
                     "outcome string, record_type int, name string, version int, records bigint"))

# The tables the pipeline's stages write (a run of every stage writes each), then the closed loop's.
TABLES: tuple[Table, ...] = (BRONZE, QUARANTINE, VALIDATION_SUMMARY, STAGE_PROGRESS, EVENTS, SEQUENCES, MEMBER_STATES,
                             COMMITS,
                             OWNERSHIP, HANDOFFS, EPISODES, MEMBERS, COVERAGE, SOURCE_AGREEMENT, PROTOCOL_PHASES,
                             PROCESSED, METRICS,
                             FOLD_STATE, REBALANCE_EVENTS, WHAT_IF,
                             RECOMMENDATIONS, RECOMMEND_FAILURES)
CLOSED_LOOP_TABLES: tuple[Table, ...] = (VERIFICATIONS,)
# Written by the broker stage when the broker source is on (``PipelineConfig.broker_source``).
BROKER_TABLES: tuple[Table, ...] = (BROKER_GENERATIONS, BROKER_EVENTS, BROKER_OWNERSHIP, BROKER_COMMITS,
                                    BROKER_LOG_ENDS, BROKER_TOPICS, BROKER_STATE, BROKER_DECODED)
