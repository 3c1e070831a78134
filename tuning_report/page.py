"""The page: every group's section laid out in one HTML file that opens with no network.

Plotly's JavaScript is embedded once; each chart is its figure's JSON (Plotly escapes
``<``, ``>`` and ``/`` in it). Every other text from telemetry goes through Jinja's
autoescape, so a group named ``<img src=x onerror=...>`` shows as text.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import plotly.graph_objects as go
import polars as pl
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from pipelines.policy import MIN_COVERAGE
from tuning_report import figures
from tuning_report.marts import Fleet, Group, read_fleet
from tuning_report.wording import TERMS, Headline, bounded, headline_sentence, share

TEMPLATES = Path(__file__).resolve().parent / "templates"
EPISODES_CHARTED = 2  # ownership charts per group: its costliest episodes


def _chart(fig: go.Figure, div_id: str) -> Markup:
    return Markup(fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                              config={"displayModeBar": False, "responsive": True}))


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


def render(fleet: Fleet, title: str, window: str) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["bounded"] = bounded
    env.filters["share"] = share
    env.filters["cause"] = figures.cause_label
    sections = [group_section(fleet, g, i) for i, g in enumerate(fleet.groups())]
    return env.get_template("report.html.j2").render(
        title=title, window=window, sections=sections, terms=TERMS, plotly_js=Markup(get_plotlyjs()),
        min_coverage=MIN_COVERAGE,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write_report(lake_path: str, out_dir: str | Path, group: str | None = None, since: datetime | None = None,
                 progress=print) -> Path:
    """Read the marts, draw, write ``<out_dir>/rebalance-report.html``; its path."""
    started = time.monotonic()
    fleet = read_fleet(lake_path, group=group, since=since)
    progress(f"[report] read the marts: {len(fleet.groups())} group(s)")
    window = f"since {since:%Y-%m-%d %H:%M} UTC" if since else "all the data in the lake"
    html = render(fleet, title="Rebalance tuning report", window=window)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "rebalance-report.html"
    path.write_text(html, encoding="utf-8")
    progress(f"[report] wrote {path} ({path.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s")
    return path
