"""The probing datasets' manifests ship in the package (workbench/probes/builds.json), a cache: the docs state sizes and
digests from them without building every dataset (a task it lacks is built: tests/test_probing.py's new card); they
are what a build gives today, and a changed builder or corpus refuses them."""
import json
import shutil

import pytest

from workbench.checks import WorkbenchError
from workbench.probing import build, pool
from workbench.probing.build import build_task, shipped_manifest
from workbench.probing.builders import BUILDERS, VERSIONS
from tools import docfacts
from workbench.zoo.cards import CARD_SIZES

REPO_BUILDS = build.SHIPPED_BUILDS


@pytest.mark.parametrize("task,sizes", [("length", None), ("word_content", CARD_SIZES), ("gender_fr", CARD_SIZES),
                                        ("language_id_en_ja", None), ("length_ja", None), ("punct_first_ar", None),
                                        ("subj_num_es", None), ("tense_ja", None), ("person_tr", None), ("somo", None)],
                         ids=lambda v: str(v))
def test_a_shipped_manifest_is_what_a_fresh_build_gives(task, sizes):
    # one task read from no parse at full size, one lexical split, one parsed (French), one pair's task, the
    # analysers' tasks, and SOMO (its builder's search was made faster: the same data, checked here)
    assert build_task(task, sizes=sizes).manifest == shipped_manifest(task, sizes)


def test_a_changed_builder_or_corpus_refuses_the_shipped_manifests(monkeypatch):
    assert "| length |" in docfacts._probe_sizes()
    monkeypatch.setitem(VERSIONS, "length_bins", VERSIONS["length_bins"] + 1)
    assert shipped_manifest("length") is None
    assert shipped_manifest("punct_num") is not None  # a version per builder: another builder's tasks stand
    monkeypatch.undo()
    monkeypatch.setattr(pool, "corpus_digest", lambda pair: "0" * 64)
    assert shipped_manifest("length") is None


def test_shipping_again_refuses_a_builder_changed_without_a_version_bump(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))  # the changed builder's data stays out of the session
    shipped = shipped_manifest("length")
    monkeypatch.setattr(build, "SHIPPED_BUILDS", tmp_path / "builds.json")
    shutil.copyfile(REPO_BUILDS, tmp_path / "builds.json")
    monkeypatch.setattr(build, "task_names", lambda own=True: ["length"])
    try:
        build.ship_manifests([None])  # the same code ships the same manifest
        assert json.loads((tmp_path / "builds.json").read_text())["builds"] == [shipped]
        original = BUILDERS["length_bins"]
        monkeypatch.setitem(BUILDERS, "length_bins", lambda *args, **params: original(*args, **params)[1:])
        with pytest.raises(WorkbenchError, match="length built from the spec of its shipped manifest gives other "
                                                 "data: its builder length_bins changed; bump its version"):
            build.ship_manifests([None])
    finally:
        pool.pool_candidates.cache_clear()  # nothing the changed builder gave outlives the test


@pytest.mark.parametrize("damage,message", [
    (lambda d: {"builds": "none"}, "it holds no list of 'builds'"),
    (lambda d: {"builds": [{k: v for k, v in d["builds"][0].items() if k != "spec"}]}, "record 0 lacks task, spec"),
    (lambda d: {"builds": [{**d["builds"][0], "sizes": {**d["builds"][0]["sizes"], "te": 7}}]},
     r"record 0 \(bigram_shift\): its sizes .* are not its label counts' sums"),  # an edited size: the docs read it
], ids=["not a list", "no spec", "edited size"])
def test_a_damaged_builds_file_is_refused_by_name_before_any_record_is_used(damage, message, monkeypatch, tmp_path):
    monkeypatch.setattr(build, "SHIPPED_BUILDS", tmp_path / "builds.json")
    (tmp_path / "builds.json").write_text(json.dumps(damage(json.loads(REPO_BUILDS.read_text()))))
    with pytest.raises(WorkbenchError, match=f"builds.json is damaged: {message}.*--ship-manifests"):
        shipped_manifest("length")
