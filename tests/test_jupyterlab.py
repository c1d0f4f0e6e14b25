"""JupyterLab opens the style-transfer notebook, runs it on a live kernel, and its widgets render and respond
(Playwright driving Debian's headless Chromium; skipped without them)."""
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (test extra)")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (apt-get install chromium)")]
NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "03_style_transfer.ipynb"


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_QUICK", "1")
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
                               "--ServerApp.token=", "--ServerApp.password=", "--allow-root",
                               f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=None"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    yield f"{url}/lab/tree/{NOTEBOOK.name}"
    server.terminate()
    server.wait(timeout=30)


@pytest.mark.slow
def test_style_transfer_widgets_render_and_respond_in_jupyterlab(lab):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                    "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        page.goto(lab)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        page.get_by_text("| Idle").wait_for(timeout=60_000)  # the status bar: kernel started
        page.mouse.click(700, 400)  # focus the notebook, command mode, run every cell in turn
        page.keyboard.press("Escape")
        for _ in range(6):
            page.keyboard.press("Shift+Enter")
            page.wait_for_timeout(500)
        page.wait_for_selector(".widget-textarea textarea", timeout=180_000)
        page.wait_for_function("document.querySelector('.widget-html-content')?.innerText.startsWith('Output:')",
                               timeout=120_000)
        boxes = page.query_selector_all(".widget-textarea textarea")
        source, style = boxes[0].input_value(), boxes[1].input_value()
        assert source and style and len(page.query_selector_all("button.widget-button")) == 2
        before = page.inner_text(".widget-html-content")
        page.click("button.widget-button:has-text('Swap')")
        page.wait_for_function(f"document.querySelector('.widget-html-content').innerText !== {before!r}",
                               timeout=60_000)
        assert (boxes[0].input_value(), boxes[1].input_value()) == (style, source)
        browser.close()
