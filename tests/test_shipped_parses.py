"""The probe pools' parses ship in the package (workbench/probes/parses/): a fresh clone reads them instead of parsing,
they are what the pinned spaCy pipelines give on the pools today, and a damaged file is not used."""
import json
import shutil

import pytest

from workbench.data import sha256_of
from workbench.data.splitting import SplitConfig
from workbench.probing import parse as parse_module
from workbench.data.corpora import tokenised_pool
from workbench.probing.builders import PARSING
from workbench.probing.parse import SHIPPED, parse, stored_parses
from workbench.probing.tasks import get_task, task_names

LANGUAGES = sorted({get_task(t).language for t in task_names() if get_task(t).builder in PARSING})


def _parsed(docs):
    return [[(t.orth_, t.tag_, t.pos_, t.dep_, t.head.i, str(t.morph)) for t in doc] for doc in docs]


def test_every_parsing_language_has_its_pools_parses_shipped_with_their_digests():
    manifest = json.loads((SHIPPED / "manifest.json").read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in SHIPPED.glob("*.spacy"))
    assert all(sha256_of(SHIPPED / name) == digest for name, digest in manifest["files"].items())
    for language in LANGUAGES:  # the pools as the tasks read them today
        assert stored_parses(tokenised_pool(language, SplitConfig()), language) is not None, language


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_shipped_parses_equal_a_fresh_parse_of_a_slice(language, tmp_path, monkeypatch):
    pool = tokenised_pool(language, SplitConfig())
    shipped = parse(pool, language, show_progress=False)
    assert len(shipped) == len(pool)
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    sample = list(range(0, len(pool), len(pool) // 150))[:150]
    fresh = parse([pool[i] for i in sample], language, show_progress=False, fresh=True)
    assert _parsed(fresh) == _parsed([shipped[i] for i in sample])
    # a slice of the pool is read from the pool's parses (what parsing it again gives, as above), not parsed
    monkeypatch.setattr(parse_module, "FROM_POOL_AT", len(sample))
    monkeypatch.setattr(parse_module, "pipeline", lambda language: pytest.fail("parsed a slice of the pool"))
    again = parse([pool[i] for i in sample[::-1]] + [pool[sample[0]]], language, show_progress=False)
    assert _parsed(again) == _parsed([shipped[i] for i in sample[::-1]] + [shipped[sample[0]]])


def test_a_damaged_shipped_file_is_not_used(tmp_path, monkeypatch, caplog):
    copy = tmp_path / "parses"
    shutil.copytree(SHIPPED, copy)
    monkeypatch.setattr(parse_module, "SHIPPED", copy)
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    pool = tokenised_pool("en", SplitConfig())
    assert stored_parses(pool, "en").parent == copy
    target = stored_parses(pool, "en")
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    assert stored_parses(pool, "en") is None and "does not match its sha256" in caplog.text
