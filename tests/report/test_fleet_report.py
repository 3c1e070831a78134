"""A cluster of 500 groups keeps the report one page that opens at once (issue 52): the marts of a synthetic
fleet (tests/support/fleet_marts.py: a third of the groups with every member running the agent, a third
with some, a third seen by the broker alone) make a page under 10 MB with every group a row of the fleet
table, costliest first, saying what is exact and what is bounded, and sections of charts for the
costliest; a real browser opens it (Debian's chromium), draws each kind of section's charts as they near
the screen, and shows a name from telemetry as text."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs

from tests.support.browser import draw_every_chart, headless_chromium
from tests.support.fleet_marts import HOSTILE, synthetic_fleet
from tuning_report.page import CHARTED_GROUPS, FLEET_SHOWN, render
from tuning_report.wording import SOURCE_WORDS

GROUPS = 500
ROW = re.compile(r'<tr class="(agent|broker|both)"><td class="n">(\d+)</td><td>(?:<a href="#(g\d+)">)?([^<]*)<')


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> dict:
    fleet = synthetic_fleet(GROUPS)
    started = time.monotonic()
    html = render(fleet, "Rebalance tuning report", "all the data in the lake")
    path = tmp_path_factory.mktemp("fleet-report") / "rebalance-report.html"
    path.write_text(html, encoding="utf-8")
    print(f"\n{GROUPS} groups: {path.stat().st_size / 1e6:.2f} MB, written in {time.monotonic() - started:.1f} s "
          f"(Plotly's JavaScript {len(get_plotlyjs()) / 1e6:.2f} MB of it)")
    return {"fleet": fleet, "html": html, "path": path}


def test_a_500_group_report_is_one_page_under_10_mb_with_every_group_a_row_costliest_first(page):
    html, fleet = page["html"], page["fleet"]
    assert page["path"].stat().st_size < 10e6
    rows = ROW.findall(html)
    ranked = fleet["fleet_group_costs"].sort("cost_rank")
    assert [int(rank) for _, rank, _, _ in rows] == list(range(1, GROUPS + 1))
    assert [source for source, *_ in rows] == ranked["source"].to_list()
    assert [name for *_, name in rows][1:] == ranked["group_id"].to_list()[1:]  # the first is the markup name
    # the costliest are charted and linked from their rows; every other group is a row only
    assert [anchor for _, _, anchor, _ in rows] == [f"g{i}" for i in range(CHARTED_GROUPS)] + [""] * (
        GROUPS - CHARTED_GROUPS)
    assert html.count('<section class="group"') == CHARTED_GROUPS
    assert f"The other {GROUPS - FLEET_SHOWN} groups</summary>" in html
    for source, words in SOURCE_WORDS.items():  # what is exact and what is bounded, in every row
        assert html.count(f'<tr class="{source}"><td class="n">') == html.count(f"<td>{words}") > 0
    # one copy of Plotly's JavaScript and of the charts' template; the charts carry neither
    assert html.count(get_plotlyjs()[:400]) == 1 and html.count("const LENS_TEMPLATE = ") == 1
    assert '"template":' not in html and "<script src=" not in html


def test_a_name_from_telemetry_stays_text(page):
    html = page["html"]
    assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_500_group_report_opens_in_a_real_browser(page):
    """Every row in the page's table; at load no chart beyond the screen is drawn yet (each is, as it nears
    the screen: the page opens at once); the charts of the first section of each kind of group (the agent's
    alone, the agent's and the broker's, the broker's alone) all draw, with no console error."""
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    with headless_chromium(1280, 1000) as driver:
        driver.get(page["path"].resolve().as_uri())
        loaded = driver.execute_script("return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
        print(f"\nDOMContentLoaded after {loaded / 1000:.2f} s")
        assert len(driver.find_elements(By.CSS_SELECTOR, "table.fleet tr[class]")) == GROUPS
        charts = driver.find_elements(By.CSS_SELECTOR, ".plotly-graph-div")
        assert len(charts) > 3 * CHARTED_GROUPS and not charts[-1].find_elements(By.CSS_SELECTOR, ".main-svg")
        firsts = {}
        for section in driver.find_elements(By.CSS_SELECTOR, "section.group"):
            firsts.setdefault(section.get_attribute("data-source"), section)
        assert set(firsts) == set(SOURCE_WORDS)
        for section in firsts.values():
            assert draw_every_chart(driver, within=section)
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert.text  # noqa: B018 (an alert would mean the name ran as markup)
        assert driver.find_element(By.CSS_SELECTOR, "section.group h2").text == HOSTILE
        assert not driver.find_elements(By.CSS_SELECTOR, "img[src=x]")
        shots = Path(__file__).resolve().parents[2] / "test-output"
        shots.mkdir(exist_ok=True)
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(shots / "report-500-groups.png"))
