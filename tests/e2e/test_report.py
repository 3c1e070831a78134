"""The tuning report on the scenarios' lake, opened in a real headless browser (Debian's
chromium): it renders every chart with no console error, shows the marts' figures, keeps
names from telemetry as text, and is small and quick to write."""
from __future__ import annotations

import time
from pathlib import Path

import polars as pl
import pytest
from plotly.offline import get_plotlyjs

from tests.support.browser import draw_every_chart, headless_chromium
from tuning_report import write_report
from tuning_report.marts import Fleet, read_fleet
from tuning_report.page import render
from tuning_report.wording import share

HOSTILE = "<img src=x onerror=alert(1)>"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output"


@pytest.fixture(scope="module")
def report(landed, tmp_path_factory) -> dict:
    started = time.monotonic()
    path = write_report(landed["config"].lake_path, tmp_path_factory.mktemp("report"), progress=lambda _m: None)
    return {"path": path, "took": time.monotonic() - started}


def _open(driver, path: Path, screenshot: str) -> list[dict]:
    """Load the page, scroll every chart into view and wait for Plotly to draw it, save a screenshot; the
    browser's console errors."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.group"))
    draw_every_chart(driver)  # each is drawn as it nears the screen
    driver.execute_script("window.scrollTo(0, 0)")
    SCREENSHOTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / screenshot))
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_the_report_renders_every_chart_in_a_real_browser(report, landed):
    from selenium.webdriver.common.by import By

    with headless_chromium() as driver:
        errors = _open(driver, report["path"], "report.png")
        assert errors == []
        charts = driver.find_elements(By.CSS_SELECTOR, ".plotly-graph-div")
        groups = driver.find_elements(By.CSS_SELECTOR, "section.group")
        assert len(groups) == len({r.manifest["group_id"] for r in landed["runs"].values()})
        drawn = {c.get_attribute("id") for c in charts}
        for n in range(len(groups)):  # every group has its timeline, its costs by cause and its what-if
            assert {f"g{n}-timeline", f"g{n}-causes", f"g{n}-whatif"} <= drawn
        for chart in charts:  # each drew its traces (bars, points or lines) within its box: nothing clipped
            assert chart.find_elements(By.CSS_SELECTOR, ".main-svg g.trace"), chart.get_attribute("id")
            drawn_width = driver.execute_script("return arguments[0].querySelector('.main-svg').getBoundingClientRect()"
                                                ".width", chart)
            box_width = driver.execute_script("return arguments[0].parentElement.getBoundingClientRect().width", chart)
            assert drawn_width <= box_width + 1, (chart.get_attribute("id"), drawn_width, box_width)
            assert chart.find_elements(By.CSS_SELECTOR, "path.point, g.point, path.js-line, path.bar, g.points path")


def test_the_report_is_small_quick_and_shows_the_marts_figures(report, landed):
    assert report["path"].stat().st_size < 10e6
    assert report["took"] < 30
    html = report["path"].read_text()
    fleet = read_fleet(landed["config"].lake_path)
    for group in fleet.groups():
        daily = fleet.of("group_daily_costs", group)
        lower, upper = int(daily["duplicates"].sum()), int(daily["duplicates_upper"].sum())
        shown = f"{lower:,}" if lower == upper else f"{lower:,} to {upper:,}"
        assert f"duplicated records<b>{shown}</b>" in html, group
        seen = share(daily["covered_s"].sum() / daily["owned_s"].sum())
        assert f"partition-time seen by the agent<b>{seen}</b>" in html, group
    partial = landed["runs"]["partial-adoption"].manifest["group_id"]  # members without the agent: said so
    section = html[html.index(f"<h2>{partial}</h2>"):]
    assert "Members without the agent held" in section[:section.index("</section>")]
    # opens with no network: Plotly's JavaScript inside the file, once, and nothing fetched
    assert html.count(get_plotlyjs()[:400]) == 1
    assert "<script src=" not in html and "<link " not in html


def test_a_group_named_like_markup_shows_as_text(landed, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    fleet = read_fleet(landed["config"].lake_path)
    _cluster, victim = fleet.groups()[0]
    renamed = Fleet({mart: frame.with_columns(pl.col("group_id").replace(victim, HOSTILE))
                     for mart, frame in fleet.frames.items()})
    page = tmp_path / "hostile.html"
    page.write_text(render(renamed, title="hostile names", window="test"))
    with headless_chromium() as driver:
        _open(driver, page, "report-hostile-name.png")
        with pytest.raises(NoAlertPresentException):
            driver.switch_to.alert.text  # noqa: B018 (an alert would mean the name ran as markup)
        assert HOSTILE in [h.text for h in driver.find_elements(By.CSS_SELECTOR, "section.group h2")]
        assert not driver.find_elements(By.CSS_SELECTOR, "img[src=x]")


def test_each_closed_loop_check_shows_predicted_against_measured(landed, spark, tmp_path):
    """The checks test_gold_vs_truth.py's closed loop kept in the lake, through their mart, in the page."""
    from pipelines import catalog, lake, sql_build

    path = landed["config"].lake_path
    checks = [r.asDict() for r in lake.read(spark, path, catalog.VERIFICATIONS).collect()] \
        if lake.exists(spark, path, catalog.VERIFICATIONS) else []
    if not checks:
        pytest.skip("no closed-loop check in this run's lake: tests/e2e/test_gold_vs_truth.py's closed loop keeps them")
    sql_build.build(spark, path, select=["recommendation_checks"], progress=lambda _m: None)
    page = write_report(path, tmp_path, progress=lambda _m: None).read_text()
    fleet = read_fleet(path)
    for check in checks:
        n = fleet.groups().index((check["cluster_id"], check["group_id"]))
        section = page[page.index(f'id="g{n}"'):]
        section = section[:section.index("</section>")]
        assert f'id="g{n}-checks"' in section, check["group_id"]
        row = (f"{check['predicted_duplicates_saved']:,.0f} / {check['measured_duplicates_saved']:,.0f}</td>\n"
               f"      <td class=\"n\">{check['predicted_pause_saved_s']:,.1f} / "
               f"{check['measured_pause_saved_s']:,.1f}</td>\n"
               f"      <td>{'yes' if check['holds'] else 'no'}</td>")
        assert row in section, (check["group_id"], row)
