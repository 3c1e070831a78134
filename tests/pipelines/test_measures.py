"""One name per measure: the vocabulary (pipelines/measures.py) is what the README's glossary
shows, every column that speaks of a measure in the lake's tables and the SQL models follows
its grammar, and the shared computations keep the bounds rule. Pure: no Spark."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipelines import catalog, measures, migrations
from pipelines.measures import (MENTIONS, exact, follows_grammar, measured_duplicates, measured_pause_s, midpoint,
                                point_figure, upper_name)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "dbt_like_sql" / "models"


def _model_columns() -> dict[str, list[str]]:
    """Every SQL model's documented columns (its YAML), by model."""
    out = {}
    for path in MODELS.rglob("*.yml"):
        for model in (yaml.safe_load(path.read_text()) or {}).get("models", []):
            out[model["name"]] = [c["name"] for c in model.get("columns", [])]
    return out


def test_the_glossary_in_the_docs_is_the_one_the_module_renders():
    doc = measures.glossary_document(ROOT)
    text = doc.read_text(encoding="utf-8")
    section = text[text.index(measures.BEGIN) + len(measures.BEGIN):text.index(measures.END)]
    assert section.strip() == measures.render_glossary().strip(), "run: python -m pipelines.measures --write"
    for m in measures.MEASURES:
        assert f"| `{m.name}` | {m.unit} |" in section


def test_every_measure_column_of_the_lake_and_the_models_follows_the_grammar():
    tables = {t.path: t.column_names() for t in (*catalog.TABLES, *catalog.CLOSED_LOOP_TABLES)}
    named = {**tables, **_model_columns()}
    speaking = {(where, c) for where, columns in named.items() for c in columns if MENTIONS.search(c)}
    assert len(speaking) > 40  # the gold tables, staging and marts all carry the figures
    assert sorted((w, c) for w, c in speaking if not follows_grammar(c)) == []


def test_each_measure_is_a_column_of_gold_handoffs_with_its_upper_bound():
    """A handoff's measures are gold/handoffs columns; a group's and period's (coverage) gold/metrics';
    an episode's (its rebalance phases) gold/episodes'."""
    columns = catalog.HANDOFFS.column_names()
    for m in measures.MEASURES:
        assert m.name in {*columns, *catalog.METRICS.column_names(), *catalog.EPISODES.column_names()}, m.name
    assert {"duplicates_upper", "pause_upper_s"} <= set(columns)
    assert not [c for c in columns if c.endswith(("_lower", "_lower_s"))]  # the figure is the lower bound


def test_the_grammar_tells_the_new_names_from_the_old():
    assert all(follows_grammar(c) for c in ("pause_s", "pause_upper_s", "predicted_pause_saved_s",
                                            "predicted_duplicates_saved_pct", "measured_duplicates_before",
                                            "pause_change_s", "uncommitted_at_revoke"))
    assert not any(follows_grammar(c) for c in ("paused_partition_s", "pause", "duplicates_s",
                                                "partition_seconds_unavailable", "unavailable_lower_s"))


def test_every_new_name_of_the_migrations_follows_the_grammar_and_every_old_one_is_gone():
    now = {c for t in (*catalog.TABLES, *catalog.CLOSED_LOOP_TABLES) for c in t.column_names()}
    now |= {c for columns in _model_columns().values() for c in columns}
    for m in (*migrations.GOLD, *migrations.MARTS):
        for r in m.renames:
            assert r.new in now and (not MENTIONS.search(r.new) or follows_grammar(r.new)), (m.path, r)
    for m in migrations.GOLD:  # a gold table's older names are none of its columns now
        current = set(migrations.TABLES[m.path].column_names())
        assert not ({r.old for r in m.renames} | set(m.dropped)) & current, m.path


def test_the_point_figure_is_the_exact_figure_else_the_lower_bound():
    assert point_figure(5, 3) == 5
    assert point_figure(0, 3) == 0  # an exact 0 is a figure
    assert point_figure(None, 3) == 3
    assert point_figure(None, None) is None


def test_bounds_give_the_midpoint_and_tell_when_a_figure_is_exact():
    assert midpoint(2.0, 6.0) == 4.0
    assert midpoint(2.0, None) == 2.0  # no upper bound known: the figure
    assert midpoint(None, 6.0) is None
    assert exact(3, 3) == 3 and exact(3, 5) is None and exact(None, None) is None
    assert upper_name("pause_s") == "pause_upper_s" and upper_name("duplicates") == "duplicates_upper"


@pytest.mark.parametrize(("kind", "expected_pause"), [("revoked", 3.0), ("crash", 3.0), ("lost", 5.0)])
def test_measured_figures_are_midpoints_but_a_lost_partition_counts_its_upper_bound(kind, expected_pause):
    handoff = {"release_kind": kind, "pause_s": 1.0, "pause_upper_s": 5.0, "duplicates": 10, "duplicates_upper": 30}
    assert measured_pause_s(handoff) == expected_pause
    assert measured_duplicates(handoff) == 20.0
    unknown = {"release_kind": kind, "pause_s": None, "pause_upper_s": None, "duplicates": None,
               "duplicates_upper": None}
    assert measured_pause_s(unknown) is None and measured_duplicates(unknown) is None
