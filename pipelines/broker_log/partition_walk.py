"""One partition of ``__consumer_offsets``, its new records in log order: every group's history in it.

A group's records all go to one partition of the topic (the coordinator's, by the group id's
hash), so a partition's records in offset order are each of its groups' records in order. This is
the function a Spark task runs over one partition's rows (``pipelines.broker.stage``): first the
stored state of each of its groups (``GroupHistory.state`` as JSON), then its new records (raw key
and value bytes). Each record is decoded (``records.RecordDecoder``; what the schemas cannot read
is counted and skipped) and fed to its group's ``GroupHistory``; the rows it writes come out as
they are written, so a task holds the partition's group states, not its records. At the end: every
group's state (those without new records as they came), the decoder's counts, and the topic ids
the records named (``topic_ids.ids_in``).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from pipelines.broker_log.classic_history import GROUP_METADATA
from pipelines.broker_log.commit_window import OFFSET_COMMITS
from pipelines.broker_log.consumer_history import is_consumer_group_record
from pipelines.broker_log.group_history import OUTPUTS, GroupHistory
from pipelines.broker_log.records import RecordDecoder, Skipped, record_row
from pipelines.broker_log.schema_set import SchemaSet
from pipelines.broker_log.topic_ids import ids_in

# The walk's output rows: one of these keys set per row (the others None).
ROW_KINDS: tuple[str, ...] = (*OUTPUTS, "state", "count", "topic")
# Counts besides the decoded records and the skipped ones (records.SKIP_REASONS).
TAGS_SKIPPED, MEMBER_BYTES_UNREADABLE = "unknown_tag", "unreadable_member_bytes"
# A group's state row: its history's state as of its last record read (``through_offset``, stamped ``through_ms``).
STATE_FIELDS = ("group_id", "offsets_partition", "through_offset", "through_ms", "state")


def _out(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    return {**dict.fromkeys(ROW_KINDS), kind: row}


def _is_history(row: dict[str, Any]) -> bool:
    """A record a group's history reads (share and streams groups' own records are not)."""
    return row["name"] == GROUP_METADATA or row["name"] in OFFSET_COMMITS or is_consumer_group_record(row)


class PartitionWalk:
    """The groups of one partition; ``walk`` runs it over the partition's rows."""

    def __init__(self, schemas: SchemaSet, topic_names: dict[str, str]) -> None:
        self.decoder = RecordDecoder(schemas)
        self.names = dict(topic_names)  # the commits' topic ids are added as they come
        self.learned: dict[str, str] = {}
        self.stored: dict[str, dict[str, Any]] = {}  # group -> its state row, as it came
        self.groups: dict[str, GroupHistory] = {}
        self.through: dict[str, tuple[int, int]] = {}  # group -> the last record fed to it: (offset, its time)
        self.partition: int | None = None

    def walk(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for row in rows:
            self.partition = row["offsets_partition"]
            if row["offset"] is None:
                self.stored[row["group_id"]] = row
                continue
            yield from self._record(row)
        yield from self._finish()

    def _record(self, raw: dict[str, Any]) -> Iterator[dict[str, Any]]:
        record = self.decoder.decode(raw["key"], raw["value"])
        if isinstance(record, Skipped):
            return
        row = record_row(record, raw["offsets_partition"], raw["offset"], raw["timestamp_ms"])
        for topic_id, topic in ids_in(row["name"], row["key"], row["value"]).items():
            if self.names.get(topic_id) != topic:
                self.names[topic_id] = self.learned[topic_id] = topic
        if row["group_id"] is None or not _is_history(row):
            return
        history = self._history(row["group_id"])
        history.feed(row)
        self.through[row["group_id"]] = (row["offset"], row["timestamp_ms"])
        for kind, made in history.taken().items():
            for out in made:
                yield _out(kind, out)

    def _history(self, group_id: str) -> GroupHistory:
        history = self.groups.get(group_id)
        if history is None:
            stored = self.stored.pop(group_id, None)
            state = orjson.loads(stored["state"]) if stored else None
            history = self.groups[group_id] = GroupHistory(group_id, self.names, state)
        return history

    def _finish(self) -> Iterator[dict[str, Any]]:
        for group_id, history in self.groups.items():
            yield _out("state", {"group_id": group_id, "offsets_partition": self.partition,
                                 "through_offset": self.through[group_id][0],
                                 "through_ms": self.through[group_id][1],
                                 "state": orjson.dumps(history.state()).decode()})
        for stored in self.stored.values():
            yield _out("state", {k: stored.get(k) for k in STATE_FIELDS})
        yield from (_out("count", row) for row in self.counts())
        for topic_id, topic in sorted(self.learned.items()):
            yield _out("topic", {"topic_id": topic_id, "topic": topic})

    def counts(self) -> list[dict[str, Any]]:
        """What the decoder read, by outcome: ``decoded`` per record name, each skip reason per type
        and version, the unknown tags stepped over and the member bytes that did not parse."""
        stats, types = self.decoder.stats, {r.name: t for t, r in self.decoder.schemas.records.items()}
        base = {"offsets_partition": self.partition}
        rows = [{**base, "outcome": "decoded", "record_type": types.get(name), "name": name, "version": None,
                 "records": n} for name, n in sorted(stats.decoded.items())]
        rows += [{**base, "outcome": reason, "record_type": record_type, "name": None, "version": version,
                  "records": n} for (reason, record_type, version), n in sorted(stats.skipped.items(), key=str)]
        rows += [{**base, "outcome": TAGS_SKIPPED, "record_type": None, "name": f"{struct}#{tag}", "version": None,
                  "records": n} for (struct, tag), n in sorted(stats.skipped_tags.items(), key=str)]
        rows += [{**base, "outcome": MEMBER_BYTES_UNREADABLE, "record_type": None, "name": message, "version": None,
                  "records": n} for message, n in sorted(stats.unreadable_member_bytes.items())]
        return rows


def walk_partition(schemas: SchemaSet, topic_names: dict[str, str],
                   rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One partition's rows (its groups' states, then its records in offset order) -> its output rows."""
    return PartitionWalk(schemas, topic_names).walk(rows)
