"""A real browser opens an exported report: headless Chromium renders the plotly figures (needs Chromium:
Debian's `chromium` package, which .ci/run installs when apt-get is available)."""
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from PIL import Image

import workbench as wb

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (apt-get install chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")  # not "module": made again whenever a worker comes back to this module
def exported(tmp_path_factory):
    enc = wb.untrained_encoder("random-sp-average", pair="en-fr")
    df = pd.concat([wb.probe_all([enc], ["length"], sizes={"train": 400, "valid": 100, "test": 100}),
                    wb.evaluate(enc, "sts")])
    return wb.report(df, tmp_path_factory.mktemp("report") / "report.html")


@pytest.mark.slow
def test_report_renders_in_headless_chromium(exported, tmp_path):
    url = exported.resolve().as_uri()
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    # plotly draws its SVG into each figure div only when plotly.js ran (it is inlined: no network needed)
    assert 'id="fig-probing"' in dom and 'id="fig-sts"' in dom and dom.count('class="main-svg"') >= 2
    assert dom.count('class="trace bars"') >= 2 and dom.count('class="point"') >= 6  # bars drawn, one per value
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--virtual-time-budget=10000",
                    "--window-size=1200,900", f"--screenshot={shot}", url], capture_output=True, timeout=120)
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (900, 1200) and pixels.std() > 10  # not a blank page


def test_static_png_and_pdf_exports_are_valid(exported):
    for name in ("probing", "sts"):
        png = exported.parent / f"report-{name}.png"
        with Image.open(png) as image:
            assert image.format == "PNG" and image.size == (1100, 600)
            assert np.asarray(image.convert("L"), dtype=float).std() > 5
        assert (exported.parent / f"report-{name}.pdf").read_bytes()[:5] == b"%PDF-"
        assert len(pd.read_csv(exported.parent / f"report-{name}.csv")) > 0


@pytest.mark.slow
def test_layer_figures_as_drawn_give_each_band_its_lines_colour_and_keep_buttons_off_the_title(tmp_path):
    """What a reader sees in the browser, not the figure object: every CI band is filled in the colour its line is
    stroked in, no two lines share one, and the heat map's metric buttons do not overlap its title."""
    playwright = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (test extra)")
    enc = wb.load("bgt-en-fr").encoder("semantic")  # any layered encoder; this one encodes in a fraction of a second
    df = wb.probe_layers(enc, ["length", "punct_num", "bigram_shift"], [0, 2], show_progress=False,
                         sizes={"train": 200, "valid": 40, "test": 80})
    path = wb.report(df, tmp_path / "layers.html", static=False)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                                                    "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.goto(path.resolve().as_uri())
        page.wait_for_selector(".main-svg", timeout=30_000)
        drawn = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => ({
            bands: [...plot.querySelectorAll('.scatterlayer .trace')].map(t => t.querySelector('.js-fill'))
                   .filter(f => f).map(f => getComputedStyle(f).fill),
            lines: [...plot.querySelectorAll('.scatterlayer .trace')].filter(t => !t.querySelector('.js-fill'))
                   .map(t => t.querySelector('.js-line')).filter(l => l).map(l => getComputedStyle(l).stroke),
            title: plot.querySelector('.gtitle')?.getBoundingClientRect().toJSON(),
            buttons: [...plot.querySelectorAll('.updatemenu-button')].map(b => b.getBoundingClientRect().toJSON())
        }))""")
        browser.close()
    with_bands = [fig for fig in drawn if fig["bands"]]
    assert with_bands, "no figure with CI bands was drawn"
    for fig in with_bands:
        assert len(fig["bands"]) == 3 and len(set(fig["lines"])) == len(fig["lines"]) == 3  # one colour per task
        assert sorted(fig["bands"]) == sorted(fig["lines"])  # each band in its line's colour
    with_buttons = [fig for fig in drawn if fig["buttons"]]
    assert with_buttons, "no heat map with metric buttons was drawn"
    for fig in with_buttons:
        title = fig["title"]
        for button in fig["buttons"]:
            apart = (button["left"] >= title["right"] or button["right"] <= title["left"]
                     or button["top"] >= title["bottom"] or button["bottom"] <= title["top"])
            assert apart, (title, button)
