"""Every surface labels a model with its own name: a copy renamed is that name everywhere, never the model it
was copied from (#63: an exported bgt-tiny was "bgt-en-fr:semantic", and its results collided)."""
import shutil

import pandas as pd

import workbench as wb
from workbench import cli
from workbench.paths import trained_dir

SIZES = {"train": 300, "valid": 100, "test": 100}


def test_a_renamed_copy_carries_its_name_on_every_surface(tmp_path, capsys):
    folder = tmp_path / "my-bgt"
    shutil.copytree(trained_dir() / "bgt-en-fr", folder)
    model = wb.load(folder)
    assert [model.encoder(view).name for view in model.views] == ["my-bgt:semantic", "my-bgt:en", "my-bgt:fr"]
    assert model.encoder("semantic", layer=1).name == "my-bgt:semantic@1"
    assert set(wb.learning_curve(folder)["run"]) == {"my-bgt"}  # not the run it was exported from
    assert set(wb.learning_curve("bgt-en-fr")["run"]) == {"bgt-en-fr"}
    assert set(wb.learning_curve("bgt-en-fr-lang16")["run"]) == {"bgt-en-fr-lang16"}
    assert wb.load("bgt-en-fr-lang16").encoder("en").name == "bgt-en-fr-lang16:en"
    mine, shipped = (wb.probe(m.encoder("semantic"), "length", sizes=SIZES, control=False).to_frame()
                     for m in (model, wb.load("bgt-en-fr")))
    assert set(mine["encoder"]) == {"my-bgt:semantic"} and set(shipped["encoder"]) == {"bgt-en-fr:semantic"}
    path = wb.report(pd.concat([mine, shipped]), tmp_path / "both.html", title="two models")  # no name clash
    assert set(pd.read_csv(path.with_suffix(".csv"))["encoder"]) == {"my-bgt:semantic", "bgt-en-fr:semantic"}
    assert cli.main(["curve", str(folder), "--out", str(tmp_path / "curve"), "--no-static"]) == 0
    shown = (tmp_path / "curve" / "curve.csv").read_text() if (tmp_path / "curve" / "curve.csv").exists() else ""
    assert "my-bgt" in capsys.readouterr().out + shown
