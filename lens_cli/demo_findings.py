"""What the demo's runs showed, in plain words: each configuration against the same deploy
under eager range with batch commits, from the figures gold measured in this run.

The sentences are built from the measured numbers (the direction words too), so a run in
which, say, commit-on-revoke did not lengthen the pause says so.
"""
from __future__ import annotations

from dataclasses import dataclass

BASELINE = ("rolling-restart", "range", "batch")
SAME = 0.05  # a change under 5% is within a run's noise: "about the same", not "cut by 0%"
PROTOCOLS = {"cooperative-sticky": "Cooperative-sticky (incremental rebalancing, KIP-429)",
             "consumer": "The KIP-848 protocol (the broker assigns, members reconcile one partition at a time)",
             "roundrobin": "Roundrobin (eager)"}


@dataclass(frozen=True)
class RunCosts:
    """One run's costs, from gold and from ground truth, side by side."""

    scenario: str
    assignor: str
    commit: str
    episodes: int
    handoffs_gold: int
    handoffs_truth: int
    duplicates_gold: int
    duplicates_gold_upper: int
    duplicates_truth: int
    pause_gold_s: float
    pause_gold_upper_s: float
    pause_truth_s: float
    agent: bool = True  # False: its members ran the plain client, gold saw the group in the broker's log alone

    @property
    def label(self) -> str:
        return f"{self.scenario} / {self.assignor} / {self.commit}" + ("" if self.agent else " / no agent")

    @property
    def bounded(self) -> bool:
        """Gold gives a range, not a figure (a crash: what the dead member processed is unknown; a group
        without the agent: the broker's log shows when partitions moved and what was committed, not
        what each member processed)."""
        return (self.duplicates_gold_upper != self.duplicates_gold
                or self.pause_gold_upper_s != self.pause_gold_s)

    @property
    def seen(self) -> str:
        """Where gold's figures came from and what they are, in a few words."""
        return f"{'bounds' if self.bounded else 'exact'}, {'agent' if self.agent else 'broker log'}"


def bounds(lower: float, upper: float, spec: str) -> str:
    """A figure, or its bounds ``lower..upper`` when it is not known exactly."""
    return format(lower, spec) if upper == lower else f"{lower:{spec}}..{upper:{spec}}"


def change(before: float, after: float, unit: str, spec: str = ",.0f") -> str:
    """``cut duplicates 5.1x (1,939 -> 378)`` in words that follow the measured direction."""
    figures = f"({before:{spec}} -> {after:{spec}})"
    if after == before or (before and abs(after - before) / before < SAME):
        return f"left {unit} about the same {figures}"
    if after == 0:
        return f"took {unit} to zero {figures}"
    ratio = before / after if after < before else after / before
    verb = "cut" if after < before else "raised"
    how = f"{ratio:.1f}x" if ratio >= 1.5 else f"by {abs(after - before) / before:.0%}" if before else ""
    return f"{verb} {unit} {how} {figures}".replace("  ", " ")


def _against(base: RunCosts, run: RunCosts) -> str:
    return (f"{change(base.duplicates_gold, run.duplicates_gold, 'duplicated records')} and "
            f"{change(base.pause_gold_s, run.pause_gold_s, 'paused partition-seconds', ',.1f')}")


def _from_the_broker(run: RunCosts) -> str:
    return (f"A group without the agent ({run.label}: every member on the plain client) is seen from the "
            f"broker's __consumer_offsets alone: {run.handoffs_gold} handoffs, "
            f"{bounds(run.duplicates_gold, run.duplicates_gold_upper, ',d')} duplicated records (ground truth: "
            f"{run.duplicates_truth:,}), {bounds(run.pause_gold_s, run.pause_gold_upper_s, ',.1f')} paused "
            f"partition-seconds (truth: {run.pause_truth_s:,.1f}); bounds, since the log shows when partitions "
            "moved and what was committed, not what each member processed. The agent makes them exact.")


def findings(runs: list[RunCosts]) -> list[str]:
    """One sentence per run the baseline can be compared with, and one for a bounded run."""
    by_key = {(r.scenario, r.assignor, r.commit): r for r in runs if r.agent}
    base = by_key.get(BASELINE)
    said: list[str] = []
    if base is not None:
        said.append(f"The baseline deploy (three members restarted one by one, eager range, a commit every batch) "
                    f"duplicated {base.duplicates_gold:,} records and paused partitions for "
                    f"{base.pause_gold_s:,.1f} partition-seconds in {base.episodes} rebalance episode(s).")
        for run in runs:
            if run is base or run.bounded or not run.agent:
                continue
            if run.scenario == base.scenario and run.commit == base.commit and run.assignor in PROTOCOLS:
                said.append(f"{PROTOCOLS[run.assignor]} {_against(base, run)}.")
            elif run.scenario == base.scenario and run.assignor == base.assignor and run.commit == "revoke":
                grew = run.pause_gold_s > base.pause_gold_s * (1 + SAME)
                why = (" The pause grows because a revoked member finishes and commits its in-flight records "
                       "before it lets go." if grew else "")
                said.append(f"Commit-on-revoke (commit what was processed when partitions are taken away) "
                            f"{_against(base, run)}.{why}")
            elif run.scenario == "static-rolling-restart" and (run.assignor, run.commit) == BASELINE[1:]:
                said.append(f"Static membership (group.instance.id) {_against(base, run)}: a restarted member "
                            f"gets its own partitions back without moving the others ({run.handoffs_gold} "
                            f"handoffs against {base.handoffs_gold}), but they wait for it while it restarts.")
                if run.duplicates_gold:
                    said.append("It still duplicates on restart: the member resumes from its last committed "
                                "offset, so what it processed after that commit is processed again "
                                "(commit-on-revoke, or a commit at shutdown, closes that gap).")
    for run in runs:
        if not run.agent:
            said.append(_from_the_broker(run))
        elif run.bounded:
            said.append(f"A crash ({run.label}) is known only as a range: "
                        f"{bounds(run.duplicates_gold, run.duplicates_gold_upper, ',d')} duplicated records "
                        f"(ground truth: {run.duplicates_truth:,}), "
                        f"{bounds(run.pause_gold_s, run.pause_gold_upper_s, ',.1f')} paused "
                        f"partition-seconds (truth: {run.pause_truth_s:,.1f}); a killed member cannot "
                        "report what it processed last, so gold bounds it instead of guessing.")
    return said
