"""The report's sentences and its --since: plain data in, text out."""
from __future__ import annotations

from datetime import date, datetime, timezone

import polars as pl
import pytest

from lens_runtime.errors import LensError
from tuning_report.marts import parse_since
from tuning_report.wording import Headline, bounded, headline_sentence, share

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def test_a_bounded_figure_reads_as_its_range_and_an_exact_one_as_one_number():
    assert bounded(1411, 2098) == "1,411 to 2,098"
    assert bounded(30, 30) == "30"
    assert bounded(4.1, 17.83, ",.1f") == "4.1 to 17.8"


def test_a_range_names_its_most_likely_figure_where_gold_estimates_one():
    """A crash's range with gold's estimate beside it, worded as no bound; an exact figure stays one number, and
    a mart without the estimate (None) or a template's undefined value leaves the range as it was."""
    assert bounded(90, 254, ",.0f", 180) == "90 to 254 (most likely 180)"
    assert bounded(9.7, 20.4, ",.1f", 16.46) == "9.7 to 20.4 (most likely 16.5)"
    assert bounded(30, 30, ",.0f", 30) == "30"
    assert bounded(90, 254, ",.0f", None) == bounded(90, 254, ",.0f", "") == "90 to 254"


def test_since_takes_an_age_or_an_iso_time_and_names_the_fix_otherwise():
    assert parse_since("36h", NOW) == datetime(2026, 11, 24, 0, 0, tzinfo=timezone.utc)
    assert parse_since("7d", NOW) == datetime(2026, 11, 18, 12, 0, tzinfo=timezone.utc)
    assert parse_since("2026-11-24", NOW) == datetime(2026, 11, 24, tzinfo=timezone.utc)
    assert parse_since(None) is None
    with pytest.raises(LensError, match=r"--since 'yesterday'.*36h, 7d"):
        parse_since("yesterday", NOW)


def _daily(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, orient="row", schema=["day", "rebalances", "duplicates", "duplicates_upper",
                                                    "pause_s", "pause_upper_s",
                                                    "records_processed", "duplicates_change", "covered_s", "owned_s"])


def test_the_headline_sums_the_days_keeps_the_bounds_and_names_the_costliest_cause():
    daily = _daily([(date(2026, 11, 24), 3, 100, 100, 2.0, 2.0, 10_000, None, 900.0, 1000.0),
                    (date(2026, 11, 25), 2, 40, 90, 1.5, 6.0, 10_000, -60, 3000.0, 3000.0)])
    head = Headline.of(daily)
    assert (head.rebalances, head.duplicates, head.duplicates_upper, head.last_day_change) == (5, 140, 190, -60)
    assert head.coverage == pytest.approx(3900 / 4000)  # the window's partition-seconds, not a mean of the days' shares
    assert share(head.coverage) == "98%" and share(None) == "n/a"
    causes = pl.DataFrame({"cause": ["start", "crash", "restart"], "duplicates": [500, 40, 100],
                           "pause_s": [9.0, 1.5, 2.0]})
    sentence = headline_sentence(head, causes)
    assert "3.5 to 8.0 partition-seconds" in sentence and "140 to 190 records were processed twice" in sentence
    assert "from restart (71% of the duplicates)" in sentence  # the group forming is nobody's fault


def test_a_quiet_group_says_so():
    head = Headline.of(_daily([(date(2026, 11, 25), 0, 0, 0, 0.0, 0.0, 5_000, None, 0.0, 0.0)]))
    assert head.coverage is None  # nothing held: no share
    assert headline_sentence(head, pl.DataFrame({"cause": [], "duplicates": [], "pause_s": []})) \
        == "No rebalance cost anything in this window."
