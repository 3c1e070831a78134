"""One group's history, read record by record and resumable: what a stage that tails the topic runs.

The history functions read a group's whole list of records; a tail reads a few at a time, run
after run. ``GroupHistory`` feeds each record (``records.record_row``, in log order) to the same
steps (``classic_history.generation_row`` and ``apply_generation``, ``ConsumerGroupWalk``,
``CommitKeeper``), hands on the rows each one wrote (``taken``), and carries between runs only
what the next record is read against (``state``: the previous generation, who owns what, the
members' current assignments, the commits a later change needs): its size follows the group's
members and partitions, not its age. Fed in pieces with the state carried over, it writes the
rows it writes when fed all at once.
"""
from __future__ import annotations

from typing import Any

from pipelines.broker_log.classic_history import GROUP_METADATA, apply_generation, generation_row
from pipelines.broker_log.commit_window import OFFSET_COMMITS, CommitKeeper, commit_row
from pipelines.broker_log.consumer_history import ConsumerGroupWalk, is_consumer_group_record
from pipelines.broker_log.ownership_changes import OwnerBook

# What a group's history writes (``GroupHistory.taken``' keys): classic generations, consumer-group
# events, ownership changes of both, the commits kept.
OUTPUTS: tuple[str, ...] = ("generations", "events", "changes", "commits")


class GroupHistory:
    def __init__(self, group_id: str, topic_names: dict[str, str], state: dict[str, Any] | None = None) -> None:
        state = state or {}
        self.group_id = group_id
        self.previous: dict[str, Any] | None = state.get("previous_generation")
        self.classic = OwnerBook.restored(group_id, "classic", state.get("classic"))
        self.consumer = ConsumerGroupWalk(group_id, topic_names, state.get("consumer"))
        self.keeper = CommitKeeper(state.get("commits"))
        self.out: dict[str, list[dict[str, Any]]] = {name: [] for name in OUTPUTS}

    def feed(self, row: dict[str, Any]) -> None:
        """One decoded record of the group (``records.record_row``), the next in log order."""
        if row["name"] == GROUP_METADATA:
            generation = generation_row(row, self.previous)
            self.previous = None if generation["kind"] == "deleted" else generation
            self.out["generations"].append(generation)
            apply_generation(self.classic, generation)
            self._changed(self.classic.taken())
        elif is_consumer_group_record(row):
            self.consumer.feed(row)
            self.out["events"] += self.consumer.events
            self.consumer.events = []
            self._changed(self.consumer.book.taken())
        elif row["name"] in OFFSET_COMMITS:
            self.out["commits"] += self.keeper.commit(commit_row(row))

    def _changed(self, changes: list[dict[str, Any]]) -> None:
        self.out["changes"] += changes
        for change in changes:
            self.out["commits"] += self.keeper.change(change)

    def taken(self) -> dict[str, list[dict[str, Any]]]:
        """The rows written since the last call, by output."""
        out, self.out = self.out, {name: [] for name in OUTPUTS}
        return out

    def state(self) -> dict[str, Any]:
        """What the next record is read against, as plain data (JSON): what ``GroupHistory`` resumes from."""
        return {"previous_generation": self.previous, "classic": self.classic.state(),
                "consumer": self.consumer.state(), "commits": self.keeper.state()}
