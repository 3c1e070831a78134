"""The report's charts: small pure functions, a mart's rows in, a Plotly figure out.

Bounded figures (a crash's pause and duplicates are known only within bounds) are drawn
as the lower bound with an error bar up to the upper one, never as one number.
"""
from __future__ import annotations

from datetime import timedelta

import plotly.graph_objects as go
import polars as pl

from pipelines.vocabulary import (CAUSES, JOIN_STEP_NAMES, JOIN_STEPS, PHASE_SOURCES_DECLARED, REBALANCE_PHASE_NAMES,
                                  REBALANCE_PHASES)

# One colour and label per cause (declared with the causes), the same in every chart of the page.
CAUSE_COLOURS = {c.name: c.colour for c in CAUSES}
CAUSE_LABELS = {c.name: c.label for c in CAUSES}
# Every chart's template. The page carries it once and draws each chart with it (tuning_report.page); a figure
# does not carry it: setting it copies Plotly's whole template into the figure (30 ms each, most of a
# 500-group report's writing time), and the page would strip it again.
TEMPLATE = "plotly_white"
LAYOUT = dict(height=360, margin=dict(l=60, r=20, t=40, b=40),
              font=dict(family="system-ui, sans-serif", size=12),
              legend=dict(orientation="h", yanchor="top", y=-0.22, x=0))


def cause_label(cause: str) -> str:
    return CAUSE_LABELS.get(cause, cause)


def _above(lower: pl.Series, upper: pl.Series) -> list[float]:
    """How far each upper bound sits above its lower bound (the error bar)."""
    return [max(0.0, float(u or 0) - float(lo or 0)) for lo, u in zip(lower, upper)]


def daily_trend(daily: pl.DataFrame) -> go.Figure:
    """Duplicates (bars, with their upper bound) and paused partition-seconds (line) per day."""
    daily = daily.sort("day")
    days = [d.isoformat() for d in daily["day"]]  # one bar per day, not a time axis in milliseconds
    fig = go.Figure()
    fig.add_bar(x=days, y=daily["duplicates"].to_list(), name="duplicated records",
                marker_color="#4c78a8", text=daily["duplicates"].to_list(), textposition="outside",
                error_y=dict(type="data", symmetric=False, array=_above(daily["duplicates"], daily["duplicates_upper"]),
                             arrayminus=[0] * daily.height))
    fig.add_scatter(x=days, y=daily["pause_s"].to_list(), yaxis="y2",
                    name="paused partition-seconds", mode="lines+markers", line_color="#e45756")
    fig.update_layout(**LAYOUT, title="Per day (UTC)", xaxis=dict(type="category"),
                      yaxis_title="duplicated records",
                      yaxis2=dict(title="paused partition-s", overlaying="y", side="right", rangemode="tozero"))
    return fig


def timeline(episodes: pl.DataFrame) -> go.Figure:
    """Each rebalance episode at its start, its height the partition-seconds it paused (with the
    upper bound), coloured by cause; hover for the rest."""
    fig = go.Figure()
    for cause in sorted(set(episodes["cause"])):
        part = episodes.filter(pl.col("cause") == cause).sort("started_at")
        fig.add_scatter(
            x=part["started_at"].to_list(), y=part["pause_s"].to_list(), mode="markers",
            name=cause_label(cause), marker=dict(color=CAUSE_COLOURS.get(cause, "#555"), size=11,
                                                 line=dict(width=1, color="#333")),
            error_y=dict(type="data", symmetric=False, array=_above(part["pause_s"],
                                                                    part["pause_upper_s"]),
                         arrayminus=[0] * part.height),
            customdata=list(zip(part["duration_s"].to_list(), part["partitions_moved"].to_list(),
                                part["duplicates"].to_list(), part["duplicates_upper"].to_list())),
            hovertemplate=("%{x}<br>lasted %{customdata[0]:.1f} s, %{customdata[1]} partitions moved<br>"
                           "paused %{y:.1f} partition-s, duplicates %{customdata[2]}..%{customdata[3]}"
                           "<extra>" + cause_label(cause) + "</extra>"))
    fig.update_layout(**LAYOUT, title="Rebalance episodes (time in UTC)",
                      yaxis_title="paused partition-seconds", yaxis_rangemode="tozero")
    return fig


UNSEEN_OWNER = "a member without the agent"


def ownership(handoffs: pl.DataFrame, started_at, ended_at) -> go.Figure:
    """One episode's partitions: who owned each before and after, and the pause between them
    (grey; hatched up to its upper bound when it is known only within bounds)."""
    pad = max(timedelta(seconds=2), (ended_at - started_at) * 0.25)
    rows = handoffs.sort("topic", "partition")
    labels = [f"{t}-{p}" for t, p in zip(rows["topic"], rows["partition"])]
    fig = go.Figure()
    def owner_of(client: str | None, agent: str | None) -> str | None:
        return UNSEEN_OWNER if agent is None else client  # no agent id: a member without the agent

    prev = [owner_of(c, a) for c, a in zip(rows["prev_client_id"], rows["prev_agent_id"])]
    nxt = [owner_of(c, a) for c, a in zip(rows["next_client_id"], rows["next_agent_id"])]
    owners = sorted({c for c in prev + nxt if c})
    palette = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#eeca3b", "#ff9da6", "#9d755d"]
    for i, owner in enumerate(owners):
        starts, spans, ys = [], [], []
        for r, y, before, after in zip(rows.iter_rows(named=True), labels, prev, nxt):
            if before == owner:
                begin = started_at - pad
                starts.append(begin)
                spans.append(_ms(r["released_at"] - begin))
                ys.append(y)
            if after == owner:
                resumed = r["released_at"] + timedelta(seconds=r["pause_upper_s"] or 0)
                starts.append(resumed)
                spans.append(_ms(ended_at + pad - resumed))
                ys.append(y)
        fig.add_bar(y=ys, x=spans, base=starts, orientation="h", name=owner,
                    marker_color=palette[i % len(palette)])
    fig.add_bar(y=labels, x=[s * 1000 for s in rows["pause_s"].to_list()], base=rows["released_at"].to_list(),
                orientation="h", name="paused (records waiting)", marker_color="#bbbbbb")
    extra = _above(rows["pause_s"], rows["pause_upper_s"])
    if any(extra):
        fig.add_bar(y=labels, x=[e * 1000 for e in extra],
                    base=[r + timedelta(seconds=p) for r, p in zip(rows["released_at"], rows["pause_s"])],
                    orientation="h", name="pause, upper bound", marker=dict(color="#dddddd", pattern_shape="/"))
        _most_likely(fig, rows, labels, extra)
    fig.update_layout(**{**LAYOUT, "height": max(220, 28 * len(labels) + 120)}, barmode="overlay",
                      title="Who owned each partition (time in UTC)", xaxis=dict(type="date"),
                      yaxis=dict(title="partition", autorange="reversed"))
    return fig


def _most_likely(fig: go.Figure, rows: pl.DataFrame, labels: list[str], extra: list[float]) -> None:
    """A tick where a bounded pause most likely ended (gold's estimate: not a bound)."""
    if "pause_estimate_s" not in rows.columns:  # a mart built before the estimates
        return
    marks = [(y, r["released_at"] + timedelta(seconds=r["pause_estimate_s"]))
             for y, r, e in zip(labels, rows.iter_rows(named=True), extra) if e and r["pause_estimate_s"] is not None]
    if marks:
        fig.add_scatter(y=[y for y, _ in marks], x=[x for _, x in marks], mode="markers", name="pause, most likely",
                        marker=dict(symbol="line-ns-open", size=14, color="#333333"))


def _ms(delta: timedelta) -> float:
    return max(0.0, delta.total_seconds() * 1000)


def by_cause(costs: pl.DataFrame) -> go.Figure:
    """Duplicates and paused partition-seconds per cause, each with its upper bound."""
    costs = costs.sort("duplicates", descending=True)
    names = [cause_label(c) for c in costs["cause"]]
    colours = [CAUSE_COLOURS.get(c, "#555") for c in costs["cause"]]
    fig = go.Figure()
    fig.add_bar(x=names, y=costs["duplicates"].to_list(), name="duplicated records", marker_color=colours,
                text=costs["duplicates"].to_list(), textposition="outside", offsetgroup=0,
                error_y=dict(type="data", symmetric=False, array=_above(costs["duplicates"], costs["duplicates_upper"]),
                             arrayminus=[0] * costs.height))
    fig.add_bar(x=names, y=costs["pause_s"].to_list(), name="paused partition-seconds", yaxis="y2",
                marker=dict(color=colours, pattern_shape="x"), offsetgroup=1,
                text=[f"{v:.1f} s" for v in costs["pause_s"]], textposition="outside",
                error_y=dict(type="data", symmetric=False,
                             array=_above(costs["pause_s"], costs["pause_upper_s"]),
                             arrayminus=[0] * costs.height))
    fig.update_layout(**LAYOUT, title="By cause (what made the previous owner let go)", showlegend=True,
                      xaxis=dict(tickangle=-25, automargin=True),
                      yaxis=dict(title="duplicated records", rangemode="tozero"),
                      yaxis2=dict(title="paused partition-s (hatched)", overlaying="y", side="right",
                                  rangemode="tozero"))
    return fig


PHASE_COLOURS = {"classic": "#9aa5b1", "mixed": "#f58518", "consumer": "#1f5f99"}


def rebalance_time_by_cause(episodes: pl.DataFrame) -> pl.DataFrame:
    """Per cause: its episodes whose agents showed any rebalance phase, and the seconds each phase
    took in them (each episode's slowest member's, summed), the most first; no rows when none did
    (or the mart predates the phases)."""
    names = list(REBALANCE_PHASE_NAMES)
    if not set(names) <= set(episodes.columns):
        return pl.DataFrame()
    shown = episodes.filter(pl.any_horizontal(pl.col(names).is_not_null()))
    return (shown.group_by("cause").agg(pl.len().alias("episodes"), *(pl.col(n).sum() for n in names))
            .with_columns(pl.sum_horizontal(names).alias("total_s"))
            .sort(["total_s", "cause"], descending=[True, False]))


def rebalance_time(by_cause: pl.DataFrame) -> go.Figure:
    """Where rebalance time goes, per cause: one stacked bar of join and sync, callbacks and KIP-848
    reconciliation (``rebalance_time_by_cause``), the member the group waited for in each episode."""
    names = [cause_label(c) for c in by_cause["cause"]]
    fig = go.Figure()
    for phase in REBALANCE_PHASES:
        fig.add_bar(x=names, y=by_cause[phase.name].to_list(), name=phase.label, marker_color=phase.colour,
                    customdata=by_cause["episodes"].to_list(),
                    hovertemplate="%{y:.2f} s over %{customdata} episodes<extra>" + phase.label + "</extra>")
    fig.update_layout(**LAYOUT, barmode="stack", title="Where rebalance time goes (the slowest member per episode)",
                      xaxis=dict(tickangle=-25, automargin=True), yaxis=dict(title="seconds", rangemode="tozero"))
    return fig


EPISODES_PHASED = 12  # per group: its longest rebalances, phase by phase
PRECISION = {s.name: s.label for s in PHASE_SOURCES_DECLARED}  # the precision each bar states
PHASE_COLUMNS = (*REBALANCE_PHASE_NAMES, *JOIN_STEP_NAMES, "phase_source")


def phased_episodes(episodes: pl.DataFrame, limit: int = EPISODES_PHASED) -> pl.DataFrame:
    """The group's episodes whose agents showed phases, its ``limit`` longest (their phases' sum, ``phases_s``) in
    time order; no rows when none did (or the mart predates the phase sources)."""
    if not set(PHASE_COLUMNS) <= set(episodes.columns):
        return pl.DataFrame()
    shown = episodes.filter(pl.col("phase_source").is_not_null())
    return (shown.with_columns(pl.sum_horizontal(list(REBALANCE_PHASE_NAMES)).alias("phases_s"))
            .sort(["phases_s", "started_at"], descending=[True, False]).head(limit).sort("started_at"))


def _segments(phased: pl.DataFrame) -> list[tuple[str, str, list[float]]]:
    """(label, colour, seconds per episode) in stacking order: the classic join by its steps where the client's
    coordinator timed them, else whole; then the callbacks and KIP-848's reconciliation."""
    split = phased["join_group_s"].is_not_null()
    whole = [0.0 if s else float(j or 0.0) for s, j in zip(split, phased["join_s"])]
    join = next(p for p in REBALANCE_PHASES if p.name == "join_s")
    out = [(step.label, step.colour, [float(v or 0.0) for v in phased[step.name]]) for step in JOIN_STEPS]
    out.append((f"{join.label} (not split)", "#bab0ac", whole))
    out += [(p.label, p.colour, [float(v or 0.0) for v in phased[p.name]]) for p in REBALANCE_PHASES if p is not join]
    return out


def episode_phases(phased: pl.DataFrame) -> go.Figure:
    """One bar per rebalance (``phased_episodes``): where its slowest member's time went, the classic join split
    into JoinGroup, the leader's assignment and SyncGroup where its client's coordinator timed them, each bar
    stating how precise it is (``phase_source``)."""
    names = [f"{t:%m-%d %H:%M:%S} {cause_label(c)}" for t, c in zip(phased["started_at"], phased["cause"])]
    fig = go.Figure()
    for label, colour, seconds in _segments(phased):
        if any(seconds):
            fig.add_bar(y=names, x=seconds, orientation="h", name=label, marker_color=colour,
                        hovertemplate="%{x:.3f} s<extra>" + label + "</extra>")
    totals = phased["phases_s"].to_list()
    fig.add_scatter(y=names, x=totals, mode="text", showlegend=False, hoverinfo="skip", textposition="middle right",
                    text=[f"  {t:.2f} s, {PRECISION[s]}" for t, s in zip(totals, phased["phase_source"])])
    fig.update_layout(**{**LAYOUT, "height": 200 + 28 * phased.height, "margin": dict(l=60, r=20, t=40, b=110),
                         "legend": dict(orientation="h", yanchor="top", y=-0.45, x=0, traceorder="normal")},
                      barmode="stack", title="Each rebalance's time, its slowest member (how precise: after each bar)",
                      xaxis=dict(title="seconds", rangemode="tozero", range=[0, max(totals) * 1.9]),
                      yaxis=dict(automargin=True, autorange="reversed"))
    return fig


def protocol_phases(phases: pl.DataFrame) -> go.Figure:
    """A migration's phases side by side: each one's pause per handoff (bars) and its handoffs, so
    the mixed phase reads against the steady states before and after it (the rollback criterion's figure)."""
    phases = phases.sort("started_at")
    names = [f"{p} from {t:%H:%M:%S}" + (f" ({d:,.0f} s)" if d is not None else " (goes on)")
             for p, t, d in zip(phases["phase"], phases["started_at"], phases["duration_s"])]
    fig = go.Figure()
    fig.add_bar(x=names, y=phases["pause_per_handoff_s"].fill_null(0.0).to_list(), name="pause per handoff (s)",
                marker_color=[PHASE_COLOURS.get(p, "#555") for p in phases["phase"]],
                text=[f"{v:.2f} s, {n} handoffs" if v is not None else "no handoff"
                      for v, n in zip(phases["pause_per_handoff_s"], phases["partitions_moved"])],
                textposition="outside")
    fig.update_layout(**LAYOUT, title="Protocol phases (KIP-848 migration): pause per handoff", showlegend=False,
                      xaxis=dict(automargin=True), yaxis=dict(title="seconds per handoff", rangemode="tozero"))
    return fig


def what_if(configs: pl.DataFrame) -> go.Figure:
    """Every configuration on the group's own history: duplicates against pause (down and left is
    better). Each candidate is what it would leave of the measured figures (its replay's ratio to the
    current configuration's replay, applied to them), so the current one sits on what was measured;
    the current configuration's own replay is drawn beside it as the model's fit."""
    fig = go.Figure()
    others = configs.filter(~pl.col("is_current"))
    fig.add_scatter(x=others["predicted_pause_s"].to_list(), y=others["predicted_duplicates"].to_list(),
                    mode="markers", name="candidate (predicted)", text=others["config"].to_list(),
                    marker=dict(size=10, color="#4c78a8"),
                    hovertemplate="%{text}<br>pause %{x:.1f} partition-s, duplicates %{y:.0f}<extra></extra>")
    current = configs.filter(pl.col("is_current"))
    measured = current.drop_nulls("measured_duplicates")
    fig.add_scatter(x=measured["measured_pause_s"].to_list(), y=measured["measured_duplicates"].to_list(),
                    mode="markers", name="current (measured)", text=measured["config"].to_list(),
                    marker=dict(size=16, color="rgba(0,0,0,0)", line=dict(width=3, color="#e45756")),
                    hovertemplate="%{text}<br>measured: pause %{x:.1f} partition-s, duplicates %{y:.0f}<extra></extra>")
    if "replayed_duplicates" in current.columns:  # marts built before the fit was kept have no replay column
        replayed = current.drop_nulls("replayed_duplicates")
        fig.add_scatter(x=replayed["replayed_pause_s"].to_list(), y=replayed["replayed_duplicates"].to_list(),
                        mode="markers", name="current (replayed: the model's fit)",
                        marker=dict(size=10, symbol="x", color="#e45756"),
                        hovertemplate="the model's replay of the observed period: pause %{x:.1f} partition-s, "
                                      "duplicates %{y:.0f}<extra></extra>")
    # the legend under the x axis title, not over the points (a candidate hid behind it)
    fig.update_layout(**{**LAYOUT, "margin": dict(l=60, r=20, t=40, b=60),
                         "legend": dict(orientation="h", yanchor="top", y=-0.3, x=0)},
                      title="What if: each configuration on this group's history",
                      xaxis=dict(title="paused partition-seconds", rangemode="tozero"),
                      yaxis=dict(title="duplicated records", rangemode="tozero"))
    return fig


def closed_loop(checks: pl.DataFrame) -> go.Figure:
    """Each closed-loop check: the saving predicted beside the one the reruns measured (their mean,
    with its standard error as an error bar), for duplicates (left) and paused partition-seconds (right)."""
    from plotly.subplots import make_subplots

    checks = checks.sort("verified_at")
    labels = [f"{t}<br>{v:%m-%d %H:%M}" for t, v in zip(checks["title"], checks["verified_at"])]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("duplicates saved",
                                                        "paused partition-s saved (below 0: a longer pause)"))
    for col, (predicted, measured, se) in enumerate((("predicted_duplicates_saved", "measured_duplicates_saved",
                                                     "measured_duplicates_saved_se"),
                                                    ("predicted_pause_saved_s", "measured_pause_saved_s",
                                                     "measured_pause_saved_se_s")), 1):
        errors = [float(v or 0.0) for v in checks[se]]
        for name, column, colour, error in (("predicted", predicted, "#9ecae9", None),
                                            ("measured by the reruns", measured, "#4c78a8",
                                             dict(type="data", array=errors, visible=any(errors)))):
            values = [round(float(v), 1) for v in checks[column]]
            fig.add_bar(x=labels, y=values, name=name, marker_color=colour, text=values, textposition="outside",
                        error_y=error, showlegend=col == 1, legendgroup=name, row=1, col=col)
    fig.update_layout(**LAYOUT, barmode="group")  # the section's heading names it; the subplots say what
    return fig
