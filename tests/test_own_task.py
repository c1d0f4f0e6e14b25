"""A researcher's own labelled sentences as a probing task, wherever a task name goes (docs/probing.md#own)."""
import json

import numpy as np
import pandas as pd
import pytest

import workbench as wb
from workbench import cli
from workbench.checks import WorkbenchError
from workbench.data.corpora import probe_pool
from workbench.probing.layers import probe_layers
from workbench.probing.own import own_task
from workbench.probing.probe import probe

N = 150  # questions and as many statements: real held-out sentences


@pytest.fixture(scope="module")
def questions(tmp_path_factory) -> pd.DataFrame:
    """Held-out English sentences labelled question/statement by their final mark, the mark then removed (so the
    label is read from the words: wh-words, inversion), in a CSV file as a researcher would bring them."""
    pool = probe_pool()
    asked = [s[:-1].strip() for s in pool if s.endswith("?")][:N]
    said = [s[:-1].strip() for s in pool if s.endswith(".")][:N]
    frame = pd.DataFrame({"text": asked + said, "kind": ["question"] * N + ["statement"] * N})
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    path = tmp_path_factory.mktemp("own") / "questions.csv"
    frame.to_csv(path, index=False)
    frame.attrs["path"] = path
    return frame


class Counting:
    """An encoder that counts its calls: a few word features (a question opens with a wh-word or an auxiliary)
    plus noise."""

    OPENERS = ("what", "where", "who", "why", "how", "when", "do", "does", "did", "is", "are", "can", "will")

    def __init__(self, name="openers"):
        self.name, self.dim, self.fingerprint, self.calls = name, 8, name, 0

    def encode(self, sentences, batch_size=256, show_progress=False):
        self.calls += 1
        rng = np.random.default_rng(0)
        out = rng.standard_normal((len(sentences), self.dim)).astype(np.float32)
        out[:, 0] = [s.split()[0].lower() in self.OPENERS if s.split() else 0 for s in sentences]
        return out


def test_a_file_and_a_frame_give_the_same_task_and_a_readable_probe(questions):
    from_file = own_task(questions.attrs["path"], sentence="text", label="kind")
    from_frame = own_task(questions, name="questions", sentence="text", label="kind")
    assert from_file.card.name == "questions" and from_file.manifest["sha256"] == from_frame.manifest["sha256"]
    assert from_file.manifest["sizes"] == {"tr": 210, "va": 30, "te": 60}  # 70/10/20 of each label
    assert from_file.manifest["label_counts"]["te"] == {"question": 30, "statement": 30}
    by_split = from_file.data.groupby("split")["sentence"].apply(set)
    assert not (by_split["tr"] & by_split["te"]) and not (by_split["va"] & by_split["te"])
    result = probe(Counting(), from_file)
    assert result.task == "questions" and result.ci_low < result.accuracy < result.ci_high
    assert result.accuracy > result.majority + 0.15  # the openers tell most questions apart
    assert abs(result.majority - 0.5) < 0.01 and result.control.kind == "first_word"


def test_a_path_goes_wherever_a_task_name_goes_and_its_results_are_cached(questions, tmp_path):
    path = tmp_path / "asked.csv"
    questions.rename(columns={"text": "sentence", "kind": "label"}).to_csv(path, index=False)
    encoder = Counting("openers-cached")
    first = probe(encoder, str(path))
    again = probe(encoder, path)  # a Path too; the same rows: the stored result, no new encoding
    assert again.accuracy == first.accuracy and encoder.calls == 1
    frame = wb.probe_all([encoder], [str(path), "length"], sizes={"train": 200, "valid": 50, "test": 50})
    assert set(frame["task"]) == {"asked", "length"}
    changed = pd.read_csv(path, dtype=str)
    changed.loc[:9, "label"] = changed.loc[:9, "label"].map({"question": "statement", "statement": "question"})
    changed.to_csv(path, index=False)
    assert probe(encoder, path).accuracy != first.accuracy and encoder.calls > 1  # a changed file is a new task


def test_own_splits_are_kept_and_a_senteval_file_reads_as_it_is(questions, tmp_path):
    tags = np.array(["tr"] * 200 + ["va"] * 40 + ["te"] * 60)
    lines = [f"{tag}\t{label}\t{text}" for tag, label, text in zip(tags, questions["kind"], questions["text"])]
    (tmp_path / "senteval.tsv").write_text("\n".join(lines) + "\n")
    dataset = own_task(tmp_path / "senteval.tsv")
    assert dataset.manifest["split"] == "own" and dataset.manifest["sizes"] == {"tr": 200, "va": 40, "te": 60}
    assert list(dataset.split("te")["sentence"]) == list(questions["text"][240:])
    with pytest.raises(WorkbenchError, match="gives its own splits; sizes= draws splits"):
        own_task(tmp_path / "senteval.tsv", sizes={"train": 10, "valid": 5, "test": 5})


def test_a_word_column_makes_the_split_lexical_and_keys_the_control(questions):
    frame = questions.assign(opener=questions["text"].str.split().str[0])
    dataset = own_task(frame, name="openers", sentence="text", label="kind", word="opener")
    assert dataset.manifest["split"] == "lexical" and dataset.card.lexical_split
    words = dataset.data.groupby("split")["word"].apply(lambda w: set(w.str.lower()))
    assert not (words["tr"] & words["te"])  # no test opener was seen in training
    result = probe(Counting("openers-lexical"), dataset)
    assert result.control.kind == "word" and result.words.unseen_accuracy is not None


def test_the_word_control_asked_for_by_name_is_refused_where_there_is_no_label_word(questions, capsys):
    dataset = own_task(questions, name="questions", sentence="text", label="kind")
    with pytest.raises(WorkbenchError, match="control='word' keys the control task on each example's label word, "
                                             "and task 'questions' has none .*control='first_word'"):
        probe(Counting("openers-control"), dataset, control="word")
    assert probe(Counting("openers-control"), dataset).control.kind == "first_word"  # the default falls back, says so
    code = cli.main(["probe", "--encoder", "random-sp-average", "--task", str(questions.attrs["path"]),
                     "--sentence-column", "text", "--label-column", "kind", "--control", "word"])
    assert code == 2 and "has none" in capsys.readouterr().err


def test_a_layer_sweep_takes_an_own_task(questions):
    semantic = wb.load("bgt-en-fr").encoder("semantic")
    dataset = own_task(questions, name="questions", sentence="text", label="kind")
    frame = probe_layers(semantic, dataset, layers=[0, -1], show_progress=False, control=False)
    accuracy = frame[frame["metric"] == "accuracy"].set_index("layer")["value"]
    assert set(frame["task"]) == {"questions"} and set(accuracy.index) == {0, -1}
    assert accuracy[-1] > 0.6  # the sentence embedding tells a question from a statement without its mark
    with pytest.raises(WorkbenchError, match="no tasks to probe"):
        probe_layers(semantic, [], show_progress=False)


def test_the_cli_probes_an_own_file_and_saves_it(questions, tmp_path, capsys):
    out = tmp_path / "own.csv"
    code = cli.main(["probe", "--encoder", "random-sp-average", "--task", str(questions.attrs["path"]),
                     "--sentence-column", "text", "--label-column", "kind", "--no-control", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "questions" in printed and "probing at the default sizes" not in printed  # an own task is probed whole
    rows = pd.read_csv(out)
    accuracy = rows.loc[rows["metric"] == "accuracy", "value"].item()
    assert rows["task"].unique().tolist() == ["questions"] and 0.5 < accuracy <= 1


@pytest.mark.parametrize("rows, message", [
    ([], "holds no sentences"),
    ([("a b", "x")] * 3 + [(f"s {i}", "y") for i in range(12)], "label(s) 'x' (1) have fewer than 10"),
    ([(f"s {i}", "") for i in range(12)], "12 row(s) with an empty label (first: row 1)"),
    ([(f"s {i}", None if i == 3 else "x") for i in range(12)], "1 row(s) with an empty label (first: row 4)"),
    ([(f"s {i}", str(i % 2)) for i in range(30)] + [("s 0", "1")], "1 sentence(s) carry two labels (first: 's 0')"),
    ([(f"s {i}", "x") for i in range(12)] + [(["a", "b"], "y")], "column 'sentence', row 13, is a list"),
    ([(f"s {i}", "x") for i in range(12)] + [(7, "y")], "column 'sentence', row 13, is a int (7), not text"),
])
def test_bad_rows_are_refused_in_one_sentence(rows, message):
    frame = pd.DataFrame(rows, columns=["sentence", "label"])
    with pytest.raises(WorkbenchError, match=message.replace("(", "\\(").replace(")", "\\)")):
        own_task(frame, name="mine")


def test_names_and_split_values_are_checked(tmp_path):
    frame = pd.DataFrame({"sentence": [f"s {i}" for i in range(30)], "label": [str(i % 2) for i in range(30)]})
    with pytest.raises(WorkbenchError, match="needs a name"):
        own_task(frame)
    with pytest.raises(WorkbenchError, match="use letters, digits"):
        own_task(frame, name="../up")
    with pytest.raises(WorkbenchError, match="split value\\(s\\) 'holdout' unknown; valid: tr, train"):
        own_task(frame.assign(split="holdout"), name="mine")
    with pytest.raises(WorkbenchError, match="no va or te rows"):
        own_task(frame.assign(split="train"), name="mine")
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps({"sentence": s, "label": int(l)}) + "\n"
                            for s, l in zip(frame["sentence"], frame["label"])) + "[1]\n")
    with pytest.raises(WorkbenchError, match="line 31 is not a JSON object of plain values"):
        own_task(path)
