"""The evidence queries: the SQL that reproduces a recommendation's evidence over the lake's tables.

Each is written to ``gold/recommendations.evidence_query`` with the lake's path in place of
``{lake}``; the group is two parameters (``:cluster_id``, ``:group_id``), never text spliced into
the query.
"""
from __future__ import annotations

Q_COST_BY_CAUSE = ("SELECT cause, count(*) AS handoffs, sum(duplicates) AS duplicates, "
                   "sum(duplicates_upper) AS duplicates_upper, sum(pause_s) AS pause_s, "
                   "sum(pause_upper_s) AS pause_upper_s "
                   "FROM delta.`{lake}/gold/handoffs` WHERE cluster_id = :cluster_id AND group_id = :group_id "
                   "GROUP BY cause")
Q_MEMBERS = ("SELECT agent_id, client_id, group_instance_id, assignor, join_cause, leave_cause, joined_ms, left_ms, "
             "crashed, stalls, enforced_ms, session_timeout_ms, max_poll_interval_ms, commit_on_revoke "
             "FROM delta.`{lake}/gold/members` WHERE cluster_id = :cluster_id AND group_id = :group_id "
             "ORDER BY joined_ms")
Q_READINESS = ("SELECT agent_id, client_id, group_instance_id, group_protocol, assignor, remote_assignor, "
               "librdkafka_version, pattern, config_keys, callback_calls, client_errors, enforced_ms, joined_ms, "
               "left_ms, last_seen_ms FROM delta.`{lake}/gold/members` "
               "WHERE cluster_id = :cluster_id AND group_id = :group_id ORDER BY joined_ms")
Q_WHAT_IF = ("SELECT config, predicted_rebalances, predicted_handoffs, predicted_partitions_moved, "
             "predicted_duplicates, predicted_pause_s, predicted_duplicates_saved, predicted_pause_saved_s "
             "FROM delta.`{lake}/gold/what_if` WHERE cluster_id = :cluster_id AND group_id = :group_id "
             "ORDER BY predicted_duplicates_saved DESC")
Q_COVERAGE = ("SELECT hour_start, covered_s, owned_s, covered_s / owned_s AS coverage "
              "FROM delta.`{lake}/gold/coverage` WHERE cluster_id = :cluster_id AND group_id = :group_id "
              "ORDER BY hour_start")
Q_EPISODES = ("SELECT date_trunc('hour', timestamp_millis(start_ms)) AS hour, cause, count(*) AS rebalances "
              "FROM delta.`{lake}/gold/episodes` WHERE cluster_id = :cluster_id AND group_id = :group_id "
              "AND cause <> 'start' "
              "GROUP BY 1, 2 ORDER BY 1")
Q_BY_SOURCE = ("SELECT source, count(*) AS handoffs, sum(duplicates) AS duplicates, "
               "sum(duplicates_upper) AS duplicates_upper, sum(duplicates_estimate) AS duplicates_estimate, "
               "sum(pause_s) AS pause_s, sum(pause_upper_s) AS pause_upper_s, "
               "sum(pause_estimate_s) AS pause_estimate_s "
               "FROM delta.`{lake}/gold/handoffs` WHERE cluster_id = :cluster_id AND group_id = :group_id "
               "AND cause <> 'start' GROUP BY source")
