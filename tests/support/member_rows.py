"""``gold/members`` rows for the what-if replay's tests: a member's timeline, nothing else."""
from __future__ import annotations


def member_row(agent: str, joined: int, join_cause: str = "start", left: int | None = None,
               leave_cause: str | None = None, **extra) -> dict:
    return {"agent_id": agent, "member_id": None, "joined_ms": joined, "join_cause": join_cause, "left_ms": left,
            "leave_cause": leave_cause, "last_seen_ms": left or 60_000, "crashed": False, "stalls": [],
            "enforced_ms": [],
            "subscriptions": [{"at_ms": joined, "topics": ["orders"]}], **extra}
