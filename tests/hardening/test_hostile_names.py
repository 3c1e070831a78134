"""Names from telemetry (group ids, hosts, client ids with quotes, backslashes, markup, SQL and
control characters) are data everywhere: kept exactly in silver, never spliced into SQL text
(gold replaces a group's rows by a quoted literal, which must match exactly that group: the
same timeline under each hostile name gives the same gold as under a plain name, after a
second run replaced the rows of the first), queried through parameters (the recommendations'
evidence SQL, ``--group``), and shown as text in the report (a real browser runs no script
and shows each name as it is)."""
from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipelines.recommend.closed_loop import recommendations_of
from pipelines import catalog, lake
from tests.support.hostile_world import NASTY_GROUPS, PLAIN_GROUP, REAL_GROUP
from tests.support.browser import headless_chromium
from tuning_report.marts import read_fleet

# The shared hostile lake takes about 5 min to build: slow (./lens test -m slow tests/hardening).
pytestmark = pytest.mark.slow

GOLD = (catalog.OWNERSHIP, catalog.HANDOFFS, catalog.EPISODES, catalog.MEMBERS, catalog.METRICS, catalog.PROCESSED,
        catalog.WHAT_IF)


def _figures(spark, lake_path: str, table: catalog.Table, group: str) -> list[tuple]:
    """The group's rows without the columns that name things (ids, hosts, clients, members):
    what gold measured, comparable across groups with the same timeline."""
    df = lake.read(spark, lake_path, table).where(F.col("group_id") == group)
    named = [c for c in df.columns if "id" in c or c in ("host", "client_id", "evidence_query")
             or c.startswith("members")]
    kept = sorted(c for c in df.columns if c not in named)
    return sorted(tuple(str(v) for v in r) for r in df.select(*kept).collect())


def test_names_are_kept_exactly(spark, world):
    events = lake.read(spark, world.config.lake_path, catalog.EVENTS)
    for group, fleet in world.fleets.items():
        sent = {(e["event_id"], e["group_id"], e["host"], e["client_id"]) for e in fleet.events}
        got = {tuple(r) for r in events.where(F.col("group_id") == group)
               .select("event_id", "group_id", "host", "client_id").collect()}
        assert got == sent, repr(group)


@pytest.mark.parametrize("group", NASTY_GROUPS, ids=lambda g: repr(g)[:24])
def test_gold_of_a_hostile_group_equals_the_same_timeline_under_a_plain_name(spark, world, group):
    path = world.config.lake_path
    for table in GOLD:
        plain = _figures(spark, path, table, PLAIN_GROUP)
        assert plain, table.path
        assert _figures(spark, path, table, group) == plain, (table.path, repr(group))
    for table in GOLD:  # and no row twice: the second run replaced the first run's rows of the group
        rows = lake.read(spark, path, table).where(F.col("group_id") == group)
        assert rows.count() == rows.select(*table.keys).distinct().count(), table.path


def test_parameters_carry_hostile_names(spark, world):
    """The recommendations' evidence SQL runs with the group as a parameter and finds its rows;
    ``recommend --group``'s filter and the report's ``--group`` find exactly the group."""
    for group in (*NASTY_GROUPS, REAL_GROUP):
        recommendations = recommendations_of(spark, world.config.lake_path, group)
        assert recommendations and {r["group_id"] for r in recommendations} == {group}, repr(group)
        for rec in recommendations:
            rows = spark.sql(rec["evidence_query"], args={"cluster_id": rec["cluster_id"], "group_id": group}).collect()
            assert rows or rec["kind"] == "healthy", (repr(group), rec["kind"], rec["evidence_query"])
        assert [name for _cluster, name in read_fleet(world.config.lake_path, group=group).groups()] == [group]


def test_the_report_shows_hostile_names_as_text(world):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    html = Path(world.report).read_text()
    assert "<script>alert('lens')</script>" not in html and "<img src=x onerror" not in html
    with headless_chromium() as driver:
        driver.get(Path(world.report).resolve().as_uri())
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".plotly-graph-div .main-svg"))
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert.text  # noqa: B018 (an alert would mean a name ran as script)
        assert not driver.find_elements(By.CSS_SELECTOR, "img[src=x]")
        shown = {h.get_attribute("textContent") for h in driver.find_elements(By.CSS_SELECTOR, "section.group h2")}
        cells = " ".join(td.get_attribute("textContent") for td in driver.find_elements(By.CSS_SELECTOR, "td"))
    for group in (*NASTY_GROUPS[1:3], REAL_GROUP):  # the printable ones, character for character
        assert group in shown, (repr(group), sorted(shown)[:8])
    assert "<img src=x onerror=alert(1)>#0" in cells  # a hostile host, in the costliest hosts' table
