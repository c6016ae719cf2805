"""The README's dashboard screenshot, on the demo's warehouse (or ICEFLOE_CONFIG's):

    make demo
    .venv/bin/python scripts/dashboard_screenshot.py docs/dashboard.png demo.events

Serves ``icefloe ui`` on a free loopback port in this process, opens it in headless
Chromium (Debian's ``chromium`` and ``chromium-driver``: ``scripts/test.sh`` installs them),
waits for the tables and a chart, selects TABLE (the worst one by default) and saves
the page.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from icefloe.app.web.server import make_server, serve_in_thread
from icefloe.base.config import load_config

READY = """return document.querySelectorAll('#tables tbody tr[data-table]').length > 0
  && document.querySelectorAll('#histogram svg rect.mark').length > 0
  && document.querySelectorAll('#actions tbody tr').length > 0"""


def main(out: str, table: str | None) -> None:
    server = make_server(load_config(), "127.0.0.1", 0, None)
    serve_in_thread(server)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1720")
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        driver.get(server.url)
        deadline = time.monotonic() + 60
        while not driver.execute_script(READY):
            if time.monotonic() > deadline:
                sys.exit("the dashboard showed no tables, chart or actions within 60 s")
            time.sleep(0.5)
        if table:
            driver.execute_script(
                "document.querySelector(`tr[data-table='${arguments[0]}']`).click()", table
            )
        time.sleep(3)  # one more poll: that table, the planning times of the newest actions
        driver.save_screenshot(str(Path(out)))
        print(f"saved {out}")
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0] if args else "docs/dashboard.png", args[1] if len(args) > 1 else None)
