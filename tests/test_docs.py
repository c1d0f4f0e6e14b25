"""The numbers the README and docs mark as facts are what their generators give now (bash scripts/docs)."""
import pytest

from tools.docfacts import FACTS, documents, refresh
from tools.docs import main as docs_main
from workbench.checks import WorkbenchError
from workbench.paths import REPO_ROOT


@pytest.mark.slow  # builds every probing dataset at its full size for the probe-sizes table (~2 min on a new home)
def test_every_marked_number_in_the_docs_is_current(capsys):
    assert docs_main([]) == 0, capsys.readouterr().err
    assert "the docs' numbers are current" in capsys.readouterr().out


def test_a_planted_drift_is_found_named_and_rewritten(tmp_path, capsys):
    doc = tmp_path / "doc.md"
    right = FACTS["shipped-count"]()
    doc.write_text(f"We ship <!-- fact: shipped-count -->{int(right) + 1}<!-- /fact --> models.\n")
    assert refresh([doc]) == [f"{doc}: shipped-count"]
    assert refresh([doc], write=True) == [f"{doc}: shipped-count"]
    assert doc.read_text() == f"We ship <!-- fact: shipped-count -->{right}<!-- /fact --> models.\n"
    assert refresh([doc]) == []
    doc.write_text("<!-- fact: no-such-fact -->1<!-- /fact -->")
    with pytest.raises(WorkbenchError, match="unknown fact 'no-such-fact'; known: trained-table"):
        refresh([doc])


@pytest.mark.parametrize("bad, message", [
    ("a <!-- fact: shipped-count -->1 b\nc\nd\n", "line 1: a fact marker is never closed"),
    ("<!-- fact: shipped-count -->1 <!-- fact: shipped-count -->2<!-- /fact --><!-- /fact -->\n",
     "line 1: a fact opens while the one opened at line 1 is not closed"),
    ("x\n<!-- /fact -->\n", "line 2: a closing <!-- /fact --> with no fact open"),
    ("<!-- fact: shipped-count ->1<!-- /fact -->\n", "line 1: malformed fact marker"),
    ("<!-- fact:shipped-count -->1<!-- / fact -->\n", "line 1: malformed fact marker"),
])
def test_docs_write_refuses_malformed_markers_and_changes_no_file(bad, message, tmp_path):
    good, broken = tmp_path / "a.md", tmp_path / "b.md"
    stale = f"<!-- fact: shipped-count -->{int(FACTS['shipped-count']()) + 1}<!-- /fact -->\n"
    good.write_text(stale)
    broken.write_text(bad)
    with pytest.raises(WorkbenchError, match=message):
        refresh([good, broken], write=True)
    assert good.read_text() == stale and broken.read_text() == bad  # neither file touched


def test_docs_names_a_document_that_is_not_utf8_and_changes_nothing(tmp_path):
    doc = tmp_path / "latin1.md"
    doc.write_bytes("Modèle <!-- fact: shipped-count -->1<!-- /fact -->\n".encode("latin-1"))
    with pytest.raises(WorkbenchError, match=r"latin1.md is not UTF-8 text \(byte 3: invalid continuation byte\)"):
        refresh([doc], write=True)
    assert doc.read_bytes() == "Modèle <!-- fact: shipped-count -->1<!-- /fact -->\n".encode("latin-1")


def test_the_documents_checked_include_the_readmes_and_every_doc():
    names = {p.relative_to(REPO_ROOT).as_posix() for p in documents()}
    assert {"README.md", "docs/method.md", "docs/probing.md"} <= names
    stated = "".join(p.read_text() for p in documents())
    assert all(f"<!-- fact: {name} -->" in stated or f"<!-- fact: {name} " in stated  # every generator states
               for name in FACTS)  # something, alone or with words


@pytest.mark.slow  # builds the ten SentEval-style datasets (shared with the check above)
def test_recorded_text_baselines_are_refused_once_a_dataset_changes(monkeypatch):
    from tools import measured_facts
    record = measured_facts.measured("text_baselines")
    assert "| BShift | 50.0 (50.0) |" in measured_facts.text_baselines()  # the majority class of a balanced task
    changed = {**record, "datasets": {**record["datasets"], "tense": "0" * 64}}
    monkeypatch.setattr(measured_facts, "measured", lambda name: changed)
    with pytest.raises(WorkbenchError, match="measured on other datasets of tense than these builds"):
        measured_facts.text_baselines()


@pytest.mark.parametrize("content,named", [("[1, 2]", r"\(the file is not a JSON object\)"),
                                           ('{"demo": {"seconds": 5}}', "demo not a record"),
                                           ("{broken", "line 1, column 2: cannot parse it as JSON")])
def test_a_damaged_measurements_file_is_named_with_what_is_wrong(content, named, monkeypatch, tmp_path):
    from tools import measurements
    monkeypatch.setattr(measurements, "MEASUREMENTS", tmp_path / "measurements.json")
    (tmp_path / "measurements.json").write_text(content)
    with pytest.raises(WorkbenchError, match=f"measurements.json.*{named}"):
        measurements.measured("demo")
    with pytest.raises(WorkbenchError, match=f"measurements.json.*{named}"):
        measurements.record("demo", {"what": "x", "date": "today"})
    assert (tmp_path / "measurements.json").read_text() == content


def test_recorded_pair_contrasts_are_refused_once_a_model_changes(monkeypatch):
    from tools import measured_facts
    record = measured_facts.measured("pair_contrasts")
    table = measured_facts.pair_contrasts()
    assert {f"| en-{lang} |" for lang in ("fr", "es", "ar", "tr", "ja")} <= {row[:9] for row in table.splitlines()}
    es = next(r for r in record["rows"] if r["pair"] == "en-es" and r["contrast"] == "BGT − BILINGUALTRANS")
    assert f"{es['ours']:+.1f} [{es['ci_low']:.1f}, {es['ci_high']:.1f}] ({es['paper']:+.1f})" in table
    retrained = [{**r, "fingerprints": "0" * 16 + " " + r["fingerprints"].split()[1]} if r is es else r
                 for r in record["rows"]]
    monkeypatch.setattr(measured_facts, "measured", lambda name: {**record, "rows": retrained})
    with pytest.raises(WorkbenchError, match="en-es contrasts in measurements.json were measured on other models"):
        measured_facts.pair_contrasts()


@pytest.mark.slow  # builds the ten SentEval-style datasets (shared with the check above)
def test_a_number_in_prose_comes_from_the_recorded_cell_it_names(tmp_path):
    from tools import measured_facts
    doc = tmp_path / "doc.md"
    doc.write_text("SubjNum from length alone: <!-- fact: text-baseline subj_num length ci -->57%<!-- /fact -->; "
                   "Tense <!-- fact: text-baseline tense nb-uni-tfidf gap -->+9<!-- /fact --> over SentEval.")
    assert refresh([doc], write=True) == [f"{doc}: text-baseline subj_num length ci",
                                          f"{doc}: text-baseline tense nb-uni-tfidf gap"]
    cells = {(r["task"], r["baseline"]): r for r in measured_facts.measured("text_baselines")["rows"]}
    length, tense = cells["subj_num", "length"], cells["tense", "nb-uni-tfidf"]
    text = doc.read_text()
    assert f"-->{length['accuracy']:.1f}% [" in text and f"-->{tense['accuracy'] - tense['published']:+.1f}<" in text
    low, high = (float(v) for v in text.split("% [")[1].split("]")[0].split("–"))
    assert low < length["accuracy"] < high and high - low < 2 * 1.96 * 100 * (0.25 / length["n"]) ** 0.5 + 0.1
    doc.write_text("<!-- fact: text-baseline subj_num lenght -->1<!-- /fact -->")
    with pytest.raises(WorkbenchError, match="no text baseline subj_num lenght accuracy: tasks length, "):
        refresh([doc])


@pytest.mark.slow  # builds two datasets at the cards' sizes
def test_the_recorded_minilm_layer_sweep_is_refused_once_a_dataset_changes(monkeypatch):
    from tools import measured_facts
    entry = measured_facts.measured("minilm_layers")
    table = measured_facts.minilm_layers()
    assert "| WordContent (WC) |" in table and "| BShift |" in table
    changed = {**entry, "datasets": {**entry["datasets"], "bigram_shift": "0" * 64}}
    monkeypatch.setattr(measured_facts, "measured", lambda name: changed)
    with pytest.raises(WorkbenchError, match="measured on other datasets of bigram_shift"):
        measured_facts.minilm_layers()


def test_recorded_control_types_are_the_uninformative_rules_count_and_refused_once_a_dataset_changes(monkeypatch):
    from workbench.probing.build import build_task
    from workbench.probing.control import uninformative
    from tools import measured_facts
    from workbench.zoo.cards import CARD_SIZES
    entry = measured_facts.measured("control_types")
    said = measured_facts.control_types("punct_first")  # the number the probe's own caveat states for that dataset
    assert f"with {said} effective types" in uninformative(build_task("punct_first", sizes=CARD_SIZES).data)
    assert float(measured_facts.control_types("rest")) >= 100
    changed = {**entry, "datasets": {**entry["datasets"], "length": "0" * 64}}
    monkeypatch.setattr(measured_facts, "measured", lambda name: changed)
    with pytest.raises(WorkbenchError, match="counted on other datasets of length"):
        measured_facts.control_types("length")


def test_a_card_number_in_prose_is_the_cards_and_a_wrong_key_names_what_is_there(tmp_path):
    from workbench.models.pins import card
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- fact: card bgt-en-fr views.semantic.sts.STS12-16 -->0<!-- /fact --> after "
                   "<!-- fact: card bgt-en-fr training.updates -->0<!-- /fact --> updates")
    refresh([doc], write=True)
    stated = card("bgt-en-fr")
    assert doc.read_text().count(f"-->{stated['views']['semantic']['sts']['STS12-16']:.1f}<") == 1
    assert f"-->{stated['training']['updates']:,}<" in doc.read_text()
    doc.write_text("<!-- fact: card bgt-en-fr views.semantic.stz -->0<!-- /fact -->")
    with pytest.raises(WorkbenchError, match="card bgt-en-fr: no 'stz' in 'views.semantic.stz'; there: fingerprint"):
        refresh([doc])


def test_a_cards_item_and_a_curves_point_in_prose_are_the_shipped_ones(tmp_path):
    import pandas as pd
    from workbench.models.folder import model_path
    from workbench.models.pins import card
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- fact: card bgt-en-fr style_transfer.form_follows_style.0 -->0<!-- /fact -->, "
                   "<!-- fact: card nmt-all views.semantic.tatoeba.fr.xx->en -->0<!-- /fact -->, "
                   "<!-- fact: curve sp-en-fr 300 -->0<!-- /fact -->, "
                   "<!-- fact: curve-range sp-en-fr 0 200 -->0<!-- /fact -->")
    refresh([doc], write=True)
    curve = pd.read_csv(model_path("sp-en-fr") / "curve.csv").query("metric == 'stsb_dev'").set_index("update")["value"]
    said = [part.split("-->")[1] for part in doc.read_text().split("<!-- /fact -->")[:-1]]
    assert said == [f"{card('bgt-en-fr')['style_transfer']['form_follows_style'][0]:.1f}",
                    f"{card('nmt-all')['views']['semantic']['tatoeba']['fr']['xx->en']:.1f}",
                    f"{curve[300]:.1f}", f"{curve.loc[0:200].min():.1f}–{curve.loc[0:200].max():.1f}"]
    doc.write_text("<!-- fact: curve sp-en-fr 250 -->0<!-- /fact -->")
    with pytest.raises(WorkbenchError, match="no STS-B dev at update 250; it has updates 0, 100, 200, …, 6000"):
        refresh([doc])


def test_the_tatoeba_table_gives_each_pairs_models_one_row_from_their_cards():
    from tools import docfacts
    from workbench.models.pins import card
    rows = {row.split(" |")[0]: row for row in docfacts._tatoeba_table().splitlines() if row.startswith("| `")}
    ar = card("bgt-en-ar")["views"]["semantic"]["tatoeba"]["ar"]
    assert f"{ar['xx->en']:.1f} / {ar['en->xx']:.1f}" in rows["| `bgt-en-XX` (each pair's own model)"]
    assert "| `bgt-en-fr`" not in rows and "| `nmt-all`" in rows


def test_recorded_figure3_orderings_are_refused_once_a_model_changes(monkeypatch):
    from tools import measured_facts
    entry = measured_facts.measured("figure3")
    table = measured_facts.figure3("cpu")
    assert "| `sp-en-fr` |" in table and "| `nmt-all` |" in table and "27 orderings:" in table
    assert "| `sp-en-fr` |" in measured_facts.figure3("gpu") and "6 orderings:" in measured_facts.figure3("gpu")
    retrained = [{**r, "fingerprints": r["fingerprints"].split()[0] + " " + "0" * 16} if r["model"] == "sp" else r
                 for r in entry["rows"]]
    monkeypatch.setattr(measured_facts, "measured", lambda name: {**entry, "rows": retrained})
    with pytest.raises(WorkbenchError, match="orderings of bgt-en-fr and sp-en-fr in measurements.json were measured"):
        measured_facts.figure3("cpu")
