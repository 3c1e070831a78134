"""The vocabulary of the figures, declared once: what each measure is called from gold to the
report, its unit and meaning, the grammar of the names built on it, and the computations
every reader of a bounded figure shares (the point figure, the midpoint, exactness).

Pure Python (no Spark), so gold's per-group pass, the recommend stage's what-if and the
tests import it alike. The README's "What the figures mean" table is generated from here
(``python -m pipelines.measures --write``) and a test keeps the two in step; the dbt twin of
``point_figure`` is ``dbt_like_sql/macros/point_figure.sql``.

The rule for bounds: a figure is what surely happened, the exact figure where gold knows
it, else its lower bound (the point figure a dashboard sums); ``<figure>_upper`` is the
most it can have been, equal to the figure when exact. There is no ``_lower`` column.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consumer_agent.schema_docs import cell, replace_between

Number = float | int


@dataclass(frozen=True)
class Measure:
    """One measure: its column name (unit last), the unit in words, and what it counts."""

    name: str
    unit: str
    meaning: str


MEASURES: tuple[Measure, ...] = (
    Measure("duplicates", "records",
            "records the previous owner processed that a later owner reads again"),
    Measure("pause_s", "partition-seconds",
            "partition-seconds during which a partition's records waited to be consumed again "
            "(the report's words: paused partition-seconds)"),
    Measure("uncommitted_at_revoke", "records",
            "records the previous owner had processed past its last commit when it let the partition go "
            "(`gold/handoffs`; what a new owner starting from that commit reads again, the duplicates' upper "
            "bound when the new owner's first offset is unknown)"),
    Measure("covered_s", "partition-seconds",
            "partition-seconds held by members that run the agent, each from its assignment to its release (a "
            "crashed owner's to its last sign of life; `gold/coverage`, `gold/metrics`)"),
    Measure("owned_s", "partition-seconds",
            "partition-seconds held by any member: `covered_s` plus what members without the agent held, estimated "
            "from the rebalances the agent saw (`pipelines/gold/unseen.py`; time mid-rebalance counts for neither), "
            "or, where the broker's log shows the group and says more, their tenures in it "
            "(`pipelines/gold/broker_gold.py`)"),
    Measure("coverage", "share (0 to 1)",
            "`covered_s` / `owned_s` of a group and period (from the first round that gave a member with the agent "
            "a partition: what the agent watched): below 1, members without the agent held the rest. "
            "Handoffs to or from them are split there (`unseen_owner`) and never priced across them; the figures "
            "count only what the agent saw, and no change is priced below 0.9 (the group gets the `coverage` "
            "warning instead)"),
    Measure("broker_covered_s", "partition-seconds",
            "partition-seconds of ownership the broker's log shows: every member's, whatever it runs, each tenure "
            "from its assignment to its partition's next change (`gold/coverage`, `gold/metrics`; null where no "
            "broker source reads the cluster)"),
    Measure("broker_coverage", "share (0 to 1)",
            "`broker_covered_s` / `owned_s`, at most 1: the share of the group's partition-time seen by the broker, "
            "beside `coverage`, the share seen exactly by the agent (where both saw a handoff the agent's figures "
            "win). A tenure runs from one change to the next, through a round and a static member's absence, which "
            "the agent's intervals leave out, so the agent's members' tenures never enter `owned_s`: a group fully "
            "on the agent keeps a `coverage` of 1"),
    Measure("join_s", "seconds",
            "a rebalance episode's join and sync: its slowest member's time waiting for the group (classic: from "
            "its first JoinGroup to its SyncGroup answer as its Java client timed them, else from entering `joining`, "
            "after its revoke callback under eager, to its assign callback; KIP-848: until its first assignment), "
            "as precise as `phase_source` says (`gold/episodes`; null: no member showed one)"),
    Measure("join_group_s", "seconds",
            "the part of the same member's `join_s` from its first JoinGroup sent to the JoinGroup answer: the "
            "coordinator waiting for every member to join (classic; null unless the `-javaagent` timed its client's "
            "coordinator)"),
    Measure("leader_assign_s", "seconds",
            "the part of it the group's leader spent running the assignor (the member's own if it led; a follower's "
            "SyncGroup waits for it)"),
    Measure("sync_group_s", "seconds",
            "the rest of it: the SyncGroup until its answer; `join_group_s` + `leader_assign_s` + `sync_group_s` = "
            "`join_s`"),
    Measure("callbacks_s", "seconds",
            "the same member's time in the application's rebalance callbacks (revoke, assign, lost: `callback_ms`)"),
    Measure("reconcile_s", "seconds",
            "the same member's KIP-848 reconciliation outside its callbacks (`reconciling` until `acknowledging` "
            "or `stable`; with the `-javaagent`, from its client receiving the target assignment to its last "
            "callback); null under the classic protocol"),
)


@dataclass(frozen=True)
class Qualifier:
    """A word a figure's name takes: a ``prefix`` before the measure, a ``suffix`` after it (in
    the order listed), or a ``unit`` that replaces the measure's own; ``word`` lists alternatives
    with " / "."""

    word: str
    place: str  # "prefix" | "suffix" | "unit"
    meaning: str
    example: str


QUALIFIERS: tuple[Qualifier, ...] = (
    Qualifier("_upper", "suffix", "the most the figure can have been; equal to the figure when exact",
              "duplicates_upper, pause_upper_s"),
    Qualifier("_estimate", "suffix", "the most likely figure: an estimate, not a bound (the figure itself when "
              "exact; a crash handoff's from its owner's measured pace up to its death, a broker-only handoff's from "
              "the log's window in which the previous owner stopped); null: nothing to estimate from",
              "duplicates_estimate, pause_estimate_s"),
    Qualifier("_low / _high", "suffix", "an estimate's interval: a crash's estimate taken to the first and the last "
              "moment its owner can have died, within the bounds (elsewhere the bounds themselves)",
              "duplicates_estimate_low, pause_estimate_high_s"),
    Qualifier("_from_broker", "suffix", "the part of a group's figure from the handoffs only the broker saw (`source` "
              "broker: its log's bounds), where the rest is the agent's (`fleet_group_costs`)",
              "duplicates_upper_from_broker, pause_from_broker_s"),
    Qualifier("predicted_", "prefix", "a what-if's prediction: what a configuration leaves of the measured figure "
              "(its replay's ratio to the current configuration's replay, times the measured figure; `gold/what_if`, "
              "`gold/recommendations`)", "predicted_pause_s"),
    Qualifier("replayed_", "prefix", "a what-if replay's own figure over the observed period, before it is anchored "
              "to the measured one; the current configuration's, set beside `measured_`, is the model's fit",
              "replayed_duplicates"),
    Qualifier("measured_", "prefix", "observed: gold's figure set beside a prediction (the midpoint of its "
              "bounds), or a scenario's ground truth (`gold/verifications`)", "measured_duplicates"),
    Qualifier("_saved", "suffix", "the current configuration's figure minus the candidate's",
              "predicted_pause_saved_s"),
    Qualifier("_before / _after", "suffix", "the figure without and with a change",
              "predicted_duplicates_before, measured_pause_after_s"),
    Qualifier("_mixed_phase", "suffix", "during a KIP-848 migration's mixed phase (classic and consumer-protocol "
              "members in one group): a staged plan's migration step and its check", "predicted_pause_mixed_phase_s"),
    Qualifier("_per_handoff", "suffix", "the figure over the handoffs it sums (a migration's rollback criterion "
              "compares phases by it: `group_protocol_phases`)", "pause_per_handoff_s"),
    Qualifier("_change", "suffix", "period over period (this day's figure minus the day before's)",
              "pause_change_s"),
    Qualifier("_se", "suffix", "the standard error of a mean over several runs (a closed-loop check with "
              "`--reruns`: the measured saving is the reruns' mean)", "measured_duplicates_saved_se"),
    Qualifier("_error", "suffix", "the figure minus the measured one (a replay's error on the observed period: "
              "the model's fit; with `_pct`, in percent of the measured, + where the replay counts more)",
              "replayed_pause_error_pct"),
    Qualifier("_pct", "unit", "a share in percent of the figure it qualifies (the unit it ends with)",
              "predicted_duplicates_saved_pct"),
)

# Why a prediction is anchored to the measured figure by the replays' ratio, not their difference.
ANCHORING = ("A what-if replays the observed period under the current configuration too, and that replay's figure "
             "differs from the measured one (the model's fit: the demo's KIP-848 run measured 314 duplicates and "
             "replayed 378). A prediction is what a configuration leaves of the measured figure: `predicted_` = "
             "`measured_` x the configuration's `replayed_` / the current configuration's `replayed_`, so "
             "`predicted_..._saved` is a share of what was measured and never more than it. The ratio, not the "
             "difference of the two replays, because the model's figures are products (a partition's rate x the "
             "uncommitted window x the handoffs; a pause per handoff x the handoffs): a window or a rate fitted a "
             "fifth too high makes both replays a fifth too high, which the ratio cancels and the difference would "
             "carry whole into the saving (378 saved of 314). Where the current configuration's replay costs "
             "nothing there is no ratio, and a prediction is the measured figure plus what its replay adds (a "
             "cost, never a saving). The current configuration's `replayed_` figure and its `_error_pct` stand "
             "beside every prediction as the model's fit; the closed loop judges the anchored saving.")

# The bounds of a handoff seen only in the broker's log (``pipelines/gold/broker_handoffs.py`` says why each holds):
# (figure, what it is, from the log).
BROKER_FORMULAS: tuple[tuple[str, str, str], ...] = (
    ("`duplicates`", "D- = max(0, c_A - C_B)", "A's last commit c_A, where B starts C_B (the last commit before B's "
     "assignment; none: the log start): 0 unless a commit went backwards"),
    ("`duplicates_upper`", "D+ = max(0, LEO(S+) - C_B)", "A cannot have read a record produced after it surely "
     "stopped; LEO(t): the records produced by t (`offsets_for_times(t + 1)`)"),
    ("`pause_s`", "W- = max(0, T_asg - max(S+, ts(C_B)))", "nobody read p from A surely stopping to B's "
     "assignment T_asg; 0 unless record C_B was produced by T_asg"),
    ("`pause_upper_s`", "W+ = T_end - max(S-, ts(C_B))", "T_end: B's first commit past C_B, or B's own stop if it "
     "let go first; null (open) while B has neither"),
    ("`pause_estimate_s`", "T_asg - max(S~, ts(C_B))", "S~: when the log told A to let go (KIP-848's revocation "
     "request, a cooperative revocation's sync, a static leave)"),
    ("`duplicates_estimate`", "min(LEO(S~), c_A + r_A (S~ - t_A)) - C_B", "r_A: A's last advance over the time "
     "since the commit before it"),
    ("[S-, S+]", "A's stop window", "KIP-848 [revocation request, its acknowledgement] (a leave or fence: [A's "
     "commits, its tombstone]); classic cooperative [the revoking sync, the next round's join]; classic eager, or "
     "an owner that left: [A's commits, the round's join]; a static member's [A's commits, its leave or "
     "replacement]. 'A's commits': the commit before the one that first reached A's last offset"),
)

# What changed for readers of the marts when the vocabulary landed (the one figure that moved).
FIGURE_CHANGE = ("The pause the marts sum (`pause_s`) is the point figure of every handoff: a bounded pause (a "
                 "crash, a lost partition, a first record found at a progress tick) counts its lower bound, where "
                 "the marts' pause columns under their older names counted only exact pauses (a bounded one "
                 "counted 0); the recommendations' evidence sentences sum it the same way. `gold/metrics` keeps its "
                 "lower-bound sum as `pause_s` and drops its exact-only sum. Every other figure is the same number "
                 "under its new name.")


UNITS = ("_s", "_pct")  # seconds; a share in percent (a unit of its own: it replaces the measure's)


def _split_unit(name: str) -> tuple[str, str]:
    """(a figure's name without its unit, the unit suffix): ``pause_s`` -> (``pause``, ``_s``)."""
    for unit in UNITS:
        if name.endswith(unit):
            return name[:-len(unit)], unit
    return name, ""


def _grammar() -> re.Pattern[str]:
    """[prefix] measure [suffix ...] [unit], from the qualifiers' data."""
    def words(*of: Qualifier) -> list[str]:
        return [w.strip() for q in of for w in q.word.split("/")]

    prefixes = "|".join(words(*(q for q in QUALIFIERS if q.place == "prefix")))
    suffixes = "".join(f"(?:{'|'.join(words(q))})?" for q in QUALIFIERS if q.place == "suffix")
    stems = "|".join(re.escape(_split_unit(m.name)[0]) for m in MEASURES)
    units = "|".join(dict.fromkeys([*UNITS, *words(*(q for q in QUALIFIERS if q.place == "unit"))]))
    return re.compile(rf"^(?:{prefixes})?(?P<stem>{stems}){suffixes}(?P<unit>{units})?$")


GRAMMAR = _grammar()
# A column name that speaks of a measure: the measures' words, and the older words for them.
MENTIONS = re.compile(r"(?:^|_)(?:pause|paused|unavailable|duplicates)(?:_|$)")


def follows_grammar(column: str) -> bool:
    """``column`` names a measure by the grammar: prefix, the measure's word, suffixes, its unit
    (or ``_pct``) last; ``predicted_pause_saved_s`` does, ``pause`` (no unit) does not."""
    found = GRAMMAR.match(column)
    if found is None:
        return False
    unit = next(_split_unit(m.name)[1] for m in MEASURES if _split_unit(m.name)[0] == found["stem"])
    return (found["unit"] or "") in (unit, *[q.word for q in QUALIFIERS if q.place == "unit"])


def upper_name(figure: str) -> str:
    """The name of a figure's upper bound: ``_upper`` before the unit (``pause_s`` -> ``pause_upper_s``)."""
    word, unit = _split_unit(figure)
    return f"{word}_upper{unit}"


def point_figure(exact: Number | None, lower: Number | None) -> Number | None:
    """The figure a dashboard sums: the exact figure where it is known, else its lower bound
    (what surely happened); None when neither is known."""
    return exact if exact is not None else lower


def midpoint(figure: Number | None, upper: Number | None) -> float | None:
    """The middle of ``[figure, upper]`` (the figure itself when exact, or when no upper bound
    is known); None when the figure is unknown."""
    if figure is None:
        return None
    return (figure + (upper if upper is not None else figure)) / 2.0


def exact(figure: Number | None, upper: Number | None) -> Number | None:
    """The figure where it is exact (its bounds meet), else None: what a fit takes as an observation."""
    return figure if figure is not None and figure == upper else None


def measured_duplicates(handoff: Mapping[str, Any]) -> float | None:
    """A ``gold/handoffs`` row's duplicates as set beside a prediction (``measured_duplicates``):
    the midpoint of its bounds; None when unknown."""
    return midpoint(handoff["duplicates"], handoff["duplicates_upper"])


def measured_pause_s(handoff: Mapping[str, Any]) -> float | None:
    """A ``gold/handoffs`` row's pause as set beside a prediction (``measured_pause_s``): the
    midpoint of its bounds, but a lost partition's upper bound (a stalled owner read nothing
    after its last progress, where that bound starts); None when unknown."""
    if handoff["release_kind"] == "lost":
        return handoff["pause_upper_s"]
    return midpoint(handoff["pause_s"], handoff["pause_upper_s"])


# --- the glossary as Markdown, kept in the README between these markers -------------------------

BEGIN = "<!-- measures-table:begin -->"
END = "<!-- measures-table:end -->"
ROOT = Path(__file__).resolve().parents[1]


def render_glossary() -> str:
    """Markdown: the measures, the rule for bounds, the qualifiers, the broker's bounds, and the figure that changed."""
    out = ["Generated from `pipelines/measures.py` by `python -m pipelines.measures --write`; a test keeps it "
           "current.", "", "| measure | unit | what it counts |", "|---|---|---|"]
    out += [f"| `{m.name}` | {m.unit} | {cell(m.meaning)} |" for m in MEASURES]
    out += ["", "**Bounds.** A figure is what surely happened: the exact figure where gold knows it, else its "
                "lower bound. That point figure is what a dashboard sums (`pipelines.measures.point_figure`, "
                "the dbt macro `point_figure`). `<figure>_upper` is the most it can have been, equal to the "
                "figure when exact; there is no `_lower` column. Null: not known (a sum counts it 0). "
                "**Estimates.** `<figure>_estimate` is the most likely figure, never a bound: where gold knows "
                "the figure it is the figure; a crash's takes its owner's measured pace from its last tick up "
                "to a death as likely at any moment of its silence (`pipelines/gold/handoffs.py`), with its "
                "interval in `_estimate_low` and `_estimate_high`; it is what to sum for the most likely total, "
                "the bounds what surely happened and the most it can have been.",
            "", "| qualifier | where | meaning | example |", "|---|---|---|---|"]
    out += [f"| `{q.word}` | {q.place} | {cell(q.meaning)} | `{q.example}` |" for q in QUALIFIERS]
    out += ["", "Qualifiers go around the measure and the unit comes last (`predicted_pause_saved_s`).",
            "", f"**Predictions, anchored to what was measured.** {ANCHORING}",
            "", "**From the broker's log** (`source` broker: a handoff of partition p from owner A to owner B that no "
                "agent saw; `pipelines/gold/broker_handoffs.py`). Tight where the protocol writes the moments down "
                "(KIP-848), wide where it cannot (an eager classic round's start is not logged):",
            "", "| figure | formula | from the log |", "|---|---|---|"]
    out += [f"| {figure} | {cell(formula)} | {cell(source)} |" for figure, formula, source in BROKER_FORMULAS]
    out += ["", f"**Changed with this vocabulary.** {FIGURE_CHANGE} The older names, and what each became, are "
                "the table in `pipelines/migrations.py`, which renames them in place on an existing lake (one "
                "line per table says what changed)."]
    return "\n".join(out)


def glossary_document(root: Path = ROOT) -> Path:
    """The document that holds the glossary's markers (the README, or the doc it moved to)."""
    found = [p for p in (root / "README.md", *sorted((root / "docs").glob("*.md"))) if p.is_file()
             and BEGIN in p.read_text(encoding="utf-8")]
    if len(found) != 1:
        raise ValueError(f"expected the marker {BEGIN} in exactly one of README.md, docs/*.md; found {found}")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="replace the glossary in the document holding it")
    args = parser.parse_args()
    glossary = render_glossary()
    if args.write:
        doc = glossary_document()
        doc.write_text(replace_between(doc.read_text(encoding="utf-8"), glossary, BEGIN, END), encoding="utf-8")
    else:
        print(glossary)


if __name__ == "__main__":
    main()
