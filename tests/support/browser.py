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
