"""Debian's chromium, headless, driven by Selenium through the system chromedriver: nothing
is downloaded at test time (the service names the driver; SE_OFFLINE stops Selenium Manager)."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def headless_chromium(width: int = 1280, height: int = 2400) -> Iterator:
    from selenium import webdriver

    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not driver_path:
        pytest.fail("chromium and chromedriver are needed (./lens test installs them: apt-get install -y chromium "
                    "chromium-driver)")
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def draw_every_chart(driver, timeout_s: float = 30.0, within=None) -> list:
    """Scroll each chart of the page (or of the element ``within``) into view (the report draws a chart as it
    nears the screen) and wait until it drew its traces; the charts, in page order."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    charts = (within or driver).find_elements(By.CSS_SELECTOR, ".plotly-graph-div")
    for chart in charts:
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", chart)
        WebDriverWait(driver, timeout_s).until(
            lambda _d, c=chart: c.find_elements(By.CSS_SELECTOR, ".main-svg g.trace"))
    return charts
