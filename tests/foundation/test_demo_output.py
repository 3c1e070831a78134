"""The demo's tables show a bounded figure (after a crash) as its bounds, never one number."""
from __future__ import annotations

from rich.console import Console

from lens_cli.demo import RunCosts, _table

EXACT = RunCosts(label="rolling-restart / range / batch", episodes=4, handoffs_gold=12, handoffs_truth=12,
                 duplicates_gold=30, duplicates_gold_upper=30, duplicates_truth=30, unavailable_gold_s=2.5,
                 unavailable_gold_upper_s=2.5, unavailable_truth_s=2.49)
CRASH = RunCosts(label="crash / cooperative-sticky / batch", episodes=2, handoffs_gold=3, handoffs_truth=3,
                 duplicates_gold=40, duplicates_gold_upper=90, duplicates_truth=55, unavailable_gold_s=6.25,
                 unavailable_gold_upper_s=17.67, unavailable_truth_s=15.88)


def test_table_shows_bounds_where_gold_has_them():
    console = Console(record=True, width=240)
    console.print(_table([EXACT, CRASH]))
    text = console.export_text()
    assert "40..90" in text and "6.25..17.67" in text
    assert "30..30" not in text and "2.50" in text


def test_recommendations_sit_beside_the_measured_cost():
    from lens_cli.demo import _recommendations

    top = {"title": "Use static membership (group.instance.id)", "config_change": ["group.instance.id=<pod name>"],
           "duplicates_saved": 410.0, "pause_saved_s": 12.5}
    console = Console(record=True, width=240)
    console.print(_recommendations([EXACT, CRASH], {EXACT.label: top}))
    text = console.export_text()
    assert "group.instance.id=<pod name>" in text and "410 / 12.5" in text and "30 / 2.5" in text
    assert CRASH.label not in text  # no recommendation read for it: no row
