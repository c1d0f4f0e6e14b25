"""The package as researchers install it: a wheel in a folder outside the repository, run from elsewhere."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.paths import data_dir, home_dir

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent('''
    import sys
    from pathlib import Path
    import workbench as wb
    from workbench.checks import WorkbenchError
    assert Path(wb.__file__).is_relative_to(Path(sys.argv[1])), wb.__file__  # the wheel's copy, not the checkout
    print("tasks", len(wb.task_names()))
    print("shipped", wb.shipped())
    try:
        wb.load("bgt-en-fr")
    except WorkbenchError as err:
        print("refused:", err)
    sizes = {"train": 300, "valid": 100, "test": 100}
    result = wb.probe(wb.untrained_encoder("random-sp-average", pair="en-fr"), "punct_first", sizes=sizes,
                      control=False, cache=False)
    print("untrained", round(result.accuracy, 3), round(result.majority, 3))
    model = wb.load(sys.argv[2])  # a shipped model named by its path
    print("by-path", round(wb.probe(model.encoder("semantic"), "punct_first", sizes=sizes, control=False).accuracy, 3))
    sts = wb.evaluate(model.encoder("semantic"), "sts")
    print("sts", len(sts))
''')


@pytest.mark.slow
def test_a_wheel_installed_outside_the_repository_finds_its_tasks_and_named_models(tmp_path, en_fr_tokenizer):
    source = tmp_path / "source"  # the files a wheel is built from, so the build leaves the checkout untouched
    shutil.copytree(ROOT / "workbench", source / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", source], check=True)
    wheel = next((tmp_path / "dist").glob("bgt_workbench-*.whl"))
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", site, wheel], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the suite's home: its tokenizers (en-fr's, copied from the checkout's shipped model by the fixture: the wheel
    # ships none to copy from) and probe pools are reused (cards and manifests still come from the wheel)
    env = {**os.environ, "PYTHONPATH": str(site), "WORKBENCH_HOME": str(home_dir()), "WORKBENCH_DATA": str(data_dir())}
    env.pop("WORKBENCH_MODELS", None)
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(site), str(ROOT / "trained" / "bgt-en-fr")],
                         cwd=elsewhere, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    assert {"tasks", "shipped", "refused:", "untrained", "by-path", "sts"} <= set(out), run.stdout
    assert int(out["tasks"]) == len(list((ROOT / "workbench" / "probes").glob("*.toml")))
    assert out["shipped"] == "[]" and "no shipped models: " in run.stderr  # said, with where to point
    assert "set WORKBENCH_MODELS to a folder of models" in run.stderr.split("no shipped models: ")[1].splitlines()[0]
    assert "set WORKBENCH_MODELS to a folder of models" in out["refused:"]
    accuracy, majority = map(float, out["untrained"].split())
    assert 0 < majority < 1 and 0 < accuracy <= 1
    assert float(out["by-path"]) > majority  # the trained semantic view reads the first punctuation mark
    assert int(out["sts"]) > 0
    models = subprocess.run([sys.executable, "-c", "import workbench as wb; print(wb.shipped())"], cwd=elsewhere,
                            env={**env, "WORKBENCH_MODELS": str(ROOT / "trained")}, capture_output=True, text=True)
    assert "bgt-en-fr" in models.stdout  # a models folder the user names
