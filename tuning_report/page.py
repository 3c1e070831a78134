"""The page: the fleet table (every group, costliest first) and the costliest groups' sections laid
out in one HTML file that opens with no network.

Plotly's JavaScript is embedded once, and so is the charts' template (``figures.TEMPLATE``, which Plotly
would otherwise write into every chart: 60% of a group's charts' bytes); each chart is its figure's JSON
without it (Plotly's serializer escapes ``<``, ``>`` and ``/`` in it). Every other text from telemetry goes
through Jinja's autoescape, so a group named ``<img src=x onerror=...>`` shows as text.

Size (docs/running.md#the-tuning-report): Plotly's JavaScript is 4.8 MB of any page; each charted group
adds 20-60 KB, each other group a row of the fleet table, under 1 KB. So a cluster of hundreds of groups
stays one page that opens at once: charts for the ``CHARTED_GROUPS`` costliest groups, drawn as they near
the screen (Plotly's JavaScript read last), every group a row.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import polars as pl
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from plotly.io.json import to_json_plotly
from plotly.offline import get_plotlyjs

from pipelines.policy import MIN_COVERAGE
from tuning_report import figures
from tuning_report.fleet_table import Agreement, fleet_rows
from tuning_report.marts import Fleet, Group, read_fleet
from tuning_report.wording import SOURCE_WORDS, TERMS, Headline, bounded, headline_sentence, share

TEMPLATES = Path(__file__).resolve().parent / "templates"
EPISODES_CHARTED = 2  # ownership charts per group: its costliest episodes
# Groups drawn with their section of charts: the costliest (the fleet mart's cost_rank). Twenty sections of
# 20-60 KB keep the page under 6 MB whatever the fleet (Plotly's 4.8 MB of it), and as each chart is drawn
# when it nears the screen the page opens at once; the other groups are rows of the fleet table, and
# `rebalance-lens report --group NAME` draws any one of them.
CHARTED_GROUPS = 20
FLEET_SHOWN = 25  # rows of the fleet table open at first; the others behind one click, in the page


def _chart(fig: go.Figure, div_id: str) -> Markup:
    """The chart as a div and the call that draws it: its figure's JSON without the shared template."""
    spec = fig.to_plotly_json()
    spec["layout"].pop("template", None)
    height = spec["layout"].get("height", figures.LAYOUT["height"])
    return Markup(f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}px; width:100%;"></div>'
                  f'<script>lensPlot("{div_id}", {to_json_plotly(spec)});</script>')


def group_section(fleet: Fleet, group: Group, index: int) -> dict:
    """Everything one group's section shows: figures, sentences, tables."""
    daily, episodes = fleet.of("group_daily_costs", group), fleet.of("rebalance_episodes", group)
    causes = fleet.of("group_cause_costs", group)
    head = Headline.of(daily)
    section = {"name": fleet.name_of(group), "anchor": f"g{index}", "headline": head,
               "sentence": headline_sentence(head, causes), "charts": {}, "ownership": []}
    if daily.height > 1:  # one day is the headline already
        section["charts"]["trend"] = _chart(figures.daily_trend(daily), f"g{index}-trend")
    if episodes.height:
        section["charts"]["timeline"] = _chart(figures.timeline(episodes), f"g{index}-timeline")
    if causes.height:
        section["charts"]["causes"] = _chart(figures.by_cause(causes), f"g{index}-causes")
    timed = figures.rebalance_time_by_cause(episodes)
    if timed.height:
        section["charts"]["rebalance_time"] = _chart(figures.rebalance_time(timed), f"g{index}-rebalance-time")
    phased = figures.phased_episodes(episodes)
    if phased.height:
        section["charts"]["episode_phases"] = _chart(figures.episode_phases(phased), f"g{index}-episode-phases")
    handoffs = fleet.of("episode_handoffs", group)
    costly = (episodes.filter(pl.col("cause") != "start")
              .sort(["duplicates", "pause_s"], descending=True).head(EPISODES_CHARTED))
    for n, ep in enumerate(costly.iter_rows(named=True)):
        moved = handoffs.filter(pl.col("episode_id") == ep["episode_id"])
        if moved.height:
            section["ownership"].append({
                "episode": ep, "cause": figures.cause_label(ep["cause"]),
                "chart": _chart(figures.ownership(moved, ep["started_at"], ep["ended_at"]), f"g{index}-own{n}")})
    phases = fleet.of("group_protocol_phases", group)
    if phases.height > 1:  # a migration (or its rollback): each phase beside the others
        section["charts"]["phases"] = _chart(figures.protocol_phases(phases), f"g{index}-phases")
        section["phases"] = phases.sort("started_at").to_dicts()
    configs = fleet.of("config_comparison", group)
    if configs.height:
        section["charts"]["what_if"] = _chart(figures.what_if(configs), f"g{index}-whatif")
        ranked = configs.sort("cost_rank")  # the cheapest, and the current one wherever it ranks
        section["configs"] = pl.concat([ranked.head(7), ranked.slice(7).filter(pl.col("is_current"))]).to_dicts()
    section["members"] = fleet.of("member_costs", group).sort("cost_rank").head(5).to_dicts()
    section["hosts"] = (fleet.of("host_costs", group).sort("duplicates", "pause_s", descending=True)
                        .head(5).to_dicts())
    section["recommendations"] = fleet.of("open_recommendations", group).sort("rank").to_dicts()
    checks = fleet.of("recommendation_checks", group)
    section["checks"] = checks.sort("verified_at").to_dicts()
    if checks.height:
        section["charts"]["checks"] = _chart(figures.closed_loop(checks), f"g{index}-checks")
    return section


def _agreement(fleet: Fleet, group: Group | None = None) -> dict[str, Agreement | None]:
    """Per figure, the broker's bounds against the agent's figures (``source_agreement``), the fleet's or a
    group's; None where no handoff was seen by both."""
    rows = fleet.frames.get("source_agreement")
    if rows is not None and rows.height and group is not None:
        rows = fleet.of("source_agreement", group)
    return {figure: Agreement.of(rows, figure) if rows is not None and rows.height else None
            for figure in ("duplicates", "pause_s")}


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["bounded"] = bounded
    env.filters["share"] = share
    env.filters["cause"] = figures.cause_label
    return env


def render(fleet: Fleet, title: str, window: str) -> str:
    """The page: the fleet table of every group, then the sections of the ``CHARTED_GROUPS`` costliest."""
    charted = fleet.groups()[:CHARTED_GROUPS]
    rows = fleet_rows(fleet, {g: f"g{i}" for i, g in enumerate(charted)})  # the anchors group_section gives
    sections = [{**group_section(fleet, g, i), "fleet": rows[i], "agreement": _agreement(fleet, g)}
                for i, g in enumerate(charted)]
    return _environment().get_template("report.html.j2").render(
        title=title, window=window, sections=sections, fleet=rows, fleet_shown=FLEET_SHOWN, terms=TERMS,
        sources=SOURCE_WORDS,
        agreement=_agreement(fleet),
        plotly_js=Markup(get_plotlyjs()), template_json=Markup(to_json_plotly(pio.templates[figures.TEMPLATE])),
        min_coverage=MIN_COVERAGE, generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write_report(lake_path: str, out_dir: str | Path, group: str | None = None, since: datetime | None = None,
                 progress=print) -> Path:
    """Read the marts, draw, write ``<out_dir>/rebalance-report.html``; its path."""
    started = time.monotonic()
    fleet = read_fleet(lake_path, group=group, since=since)
    groups = len(fleet.groups())
    progress(f"[report] read the marts: {groups} group(s), the {min(CHARTED_GROUPS, groups)} costliest charted")
    window = f"since {since:%Y-%m-%d %H:%M} UTC" if since else "all the data in the lake"
    html = render(fleet, title="Rebalance tuning report", window=window)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rebalance-report.html"
    path.write_text(html, encoding="utf-8")
    progress(f"[report] wrote {path} ({path.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s")
    return path
