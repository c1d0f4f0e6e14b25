import re
import subprocess
import sys
from html import escape

import pandas as pd
import pytest

from workbench import cli
from workbench.reports.demo import run_demo


@pytest.mark.slow
def test_demo_end_to_end_on_reduced_sizes(tmp_path):
    path = run_demo(tmp_path / "demo", sizes={"train": 600, "valid": 200, "test": 200}, years=(2016,),
                    tasks=("length", "subj_num"), show_progress=False)
    html = path.read_text()
    assert "Plotly.newPlot" in html and 'id="fig-probing"' in html and 'id="fig-sts"' in html
    assert '<script src="http' not in html and len(html) > 3_000_000  # plotly.js inlined: works offline
    df = pd.read_csv(path.with_suffix(".csv"))
    acc = df[df.metric == "accuracy"]
    assert set(acc.encoder) == {"bgt-en-fr:semantic", "bgt-en-fr:en", "bilingual_trans-en-fr:semantic",
                                "bgt-en-fr:fr"}  # Table 3's encoders; the fr language encoder for Gender
    assert set(acc.task) == {"length", "subj_num", "gender_fr"}
    assert set(acc[acc.encoder == "bgt-en-fr:fr"].task) == {"gender_fr"}
    assert set(df.metric) >= {"accuracy", "majority", "selectivity", "pearson"}
    assert ((acc.value > 0) & (acc.value <= 1)).all()
    sts = df[(df.metric == "pearson") & (df.dataset == "all")]
    assert set(sts.task) == {"STS16"} and len(sts) == 3
    assert (tmp_path / "demo" / "results.csv").is_file()
    # the style-transfer lines: the card's evaluation beside held-out examples
    from workbench.models.pins import card
    closer = next(v for m, v in card("bgt-en-fr")["style_transfer"].items() if m.startswith("closer_to_source"))
    assert "Style transfer with bgt-en-fr" in html and f"in {closer[0]}% of pairs" in html
    assert html.count("<tr><td>") >= 3
    # the finding first (what holds of Table 3's form result, which model and why), then the figures, then the
    # style transfer, then every number collapsed with its notes as footnotes
    finding, figures = html.index(escape("Table 3's form result")), html.index('id="fig-probing"')
    assert finding < figures < html.index("Style transfer with bgt-en-fr") < html.index("<details><summary>All ")
    assert "is the en-fr BGT shown because" in html and "<ol class='footnotes'>" in html
    notes = df["note"].dropna().unique()
    text = re.sub(r"<script.*?</script>", "", html, flags=re.S)  # the page as read (figures' hover texts apart)
    assert len(notes) and all(text.count(escape(note)) == 1 for note in notes)  # each once, as a footnote
    # the steps ran side by side in threads (one per core, shipped here with two or more): the numbers of one
    # probe fitted again alone, in this thread
    import workbench as wb
    for task in ("length", "subj_num"):
        alone = wb.probe(wb.load("bgt-en-fr").encoder("en"), task, sizes={"train": 600, "valid": 200, "test": 200},
                         refit=True)
        assert acc[(acc.encoder == "bgt-en-fr:en") & (acc.task == task)].value.item() == alone.accuracy


def test_compare_refuses_a_bad_number_of_jobs_before_any_work():
    from workbench.checks import WorkbenchError
    from workbench.reports.demo import compare
    for jobs in (0, -1, 1.5, True):
        with pytest.raises(WorkbenchError, match=rf"n_jobs={jobs!r}: give a whole number of steps"):
            compare(tasks=("length",), n_jobs=jobs, show_progress=False)


def test_first_run_line_names_what_is_still_to_build():
    from workbench.data.splitting import SplitConfig
    from workbench.reports.demo import first_run_line
    from workbench.probing.build import build_task, pending
    from workbench.probing.parse import stored_parses
    from workbench.data.corpora import tokenised_pool
    sizes = {"train": 301, "valid": 31, "test": 31}  # sizes no other test builds
    assert pending(("length", "punct_num"), sizes) == (["length", "punct_num"], {})  # neither parses
    build_task("length", sizes=sizes)
    pool = tokenised_pool("en", SplitConfig())
    parsed = stored_parses(pool, "en") is not None  # shipped with the repository, or parsed by an earlier test
    assert pending(("length", "subj_num"), sizes) == (["subj_num"], {} if parsed else {"en": len(pool)})
    line = first_run_line(("en-fr",), sizes, tasks=("length", "subj_num"))
    assert line.startswith("first run: building 2 probing sets")  # subj_num and gender_fr
    assert (f"parsing {len(pool):,} en pool sentences" in line) != parsed and "later runs read" in line
    build_task("punct_num", sizes=sizes)
    assert first_run_line(("en-es",), sizes, tasks=("length", "punct_num")).startswith("first run: building 1 ")
    assert pending(("length", "punct_num"), sizes) == ([], {})


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("demo", "train", "encode", "probe", "evaluate", "transfer", "report", "data", "models",
                    "reproduce"):
        assert command in out


def test_help_argument_errors_and_the_lists_answer_without_torch_scikit_learn_or_the_models():
    """Only the command given is built, and its work is imported when it runs (#78): --help, a bad choice and a
    missing argument import neither torch nor scikit-learn, and neither do ``probes list``, ``models list`` and
    ``data info`` (the cards and the corpora alone); ``train`` lists the model kinds and presets by the names the registry is checked against."""
    from workbench.cli.commands import COMMANDS
    code = ("import sys; from workbench.cli import main\n"
            "try: code = main(sys.argv[1:])\n"
            "except SystemExit as exit_: code = exit_.code\n"
            "print('torch' in sys.modules or 'sklearn' in sys.modules, code)")
    lines = [[], ["--help"], ["probe", "--classifier", "nope"], ["encode"], ["train", "--model", "nope"],
             ["probes", "list"], ["models", "list"], ["data", "info", "--pair", "en-tr"],
             *[[command.name, "--help"] for command in COMMANDS]]
    for argv in lines:
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True).stdout
        loaded, status = out.split()[-2:]  # after the help text
        assert loaded == "False" and status in ("0", "2"), (argv, out)


def test_help_shows_every_registered_suite_and_named_encoder(capsys):
    from workbench.encoders import NAMED_ENCODERS
    from workbench.evaluation import SUITES
    for command in ("evaluate", "probe", "encode"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
        for name, (about, _) in NAMED_ENCODERS.items():
            assert f"{name}: {' '.join(about.split())}" in out
        assert "hf:PATH[@LAYER]" in out
        if command == "evaluate":
            for suite in SUITES.values():
                assert f"{suite.name}: {' '.join(suite.about.split())}" in out
    assert set(SUITES) == {"sts", "stsb", "hard_sts", "sts17", "tatoeba"}  # the registry is what evaluate() runs
    assert {"random-transformer", "random-sp-average", "minilm"} <= set(NAMED_ENCODERS)


def test_unknown_choice_lists_valid_ones(capsys):
    assert cli.main(["probe", "--task", "nope"]) == 2
    assert "unknown probing task 'nope'; valid: bigram_shift, bigram_shift_ar, bigram_shift_es" in \
        capsys.readouterr().err


def test_transfer_command(capsys):
    assert cli.main(["transfer", "--source", "where is the car ?", "--style", "thank you very much .",
                     "--beam", "1"]) == 0
    plain = capsys.readouterr().out.strip()
    assert plain
    assert cli.main(["transfer", "--source", "where is the car ?", "--style", "thank you very much .",
                     "--beam", "1", "--guidance", "3"]) == 0  # a strong push toward the style's form
    assert capsys.readouterr().out.strip() not in ("", plain)
    assert cli.main(["transfer", "--source", "where is the car ?", "--style", "thank you very much .",
                     "--guidance", "-1"]) == 2
    assert "guidance must be a number from 0 (off) to 10, got -1.0" in capsys.readouterr().err
    assert cli.main(["transfer", "--source", "where is the car ?"]) == 2
    assert "give --source and --style" in capsys.readouterr().err


def test_transfer_decodes_as_python_does_and_paper_is_the_papers_beam_search(capsys):
    import workbench as wb
    model = wb.load("bgt-en-fr")
    source, style = "where did you go last night ?", "you are late again ."
    for flags, options in (([], {}), (["--paper"], wb.PAPER_DECODING),
                           (["--rerank", "none", "--guidance", "0.5", "--keep-punctuation"],
                            {"rerank": None, "guidance": 0.5, "strip_punctuation": False})):
        assert cli.main(["transfer", "--source", source, "--style", style, *flags]) == 0
        assert capsys.readouterr().out.strip() == wb.transfer(model, [source], [style], **options)[0]
    assert cli.main(["transfer", "--source", source, "--style", style, "--paper", "--guidance", "0.3"]) == 2
    assert "give it alone" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the help states the defaults Python uses (it imports no torch to say them)
        cli.main(["transfer", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"default {wb.GUIDANCE:g};" in shown and "default {:g},{:g};".format(*wb.RERANK) in shown


def test_report_command_from_csv(tmp_path, capsys):
    df = pd.DataFrame({"encoder": ["a", "b"], "task": ["length"] * 2, "metric": ["accuracy"] * 2,
                       "value": [0.5, 0.7], "ci_low": [0.45, 0.65], "ci_high": [0.55, 0.75], "n": [100, 100]})
    df.to_csv(tmp_path / "r.csv", index=False)
    assert cli.main(["report", "--results", str(tmp_path / "r.csv"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "report.json").is_file()
    assert pd.read_csv(tmp_path / "out" / "report-probing.csv")["value"].tolist() == [0.5, 0.7]


def test_report_without_a_browser_says_so_and_still_writes_html(tmp_path, monkeypatch, caplog):
    from workbench.reports import pages

    no_browser = "raise RuntimeError('Kaleido requires Google Chrome to be installed.')"
    monkeypatch.setattr(pages, "_DRAW", no_browser)
    df = pd.DataFrame({"encoder": ["a"], "task": ["length"], "metric": ["accuracy"], "value": [0.5]})
    path = pages.report(df, tmp_path / "r.html")
    text = path.read_text()
    assert "static PNG and PDF export skipped" in text and "Kaleido requires Google Chrome" in text
    assert "apt-get install chromium" in caplog.text
    assert not list(tmp_path.glob("*.png")) and (tmp_path / "r-probing.csv").is_file()


def test_a_browser_that_hangs_is_stopped_and_named(tmp_path):
    """kaleido's Chromium can hang for ever: the child that draws is killed at its time limit."""
    import time

    import plotly.graph_objects as go

    from workbench.reports.pages import _draw_static
    started = time.perf_counter()
    reason = _draw_static([(go.Figure(), tmp_path / "f.png", "png")], timeout=2, code="import time; time.sleep(60)")
    assert reason == "the browser did not finish within 2 s" and time.perf_counter() - started < 20


def test_data_info(capsys):
    assert cli.main(["data", "info", "--pair", "en-ar"]) == 0
    out = capsys.readouterr().out
    assert "en-ar" in out and "probe" in out


def test_probes_list_and_build_then_probe_table(capsys, tmp_path):
    assert cli.main(["probes", "list"]) == 0
    out = capsys.readouterr().out
    assert "tree_depth" in out and "dependency-depth analogue" in out and "gender_fr" in out
    small = ["--train-size", "600", "--valid-size", "200", "--test-size", "200"]
    assert cli.main(["probes", "build", "--tasks", "length", "punct_first", *small]) == 0
    out = capsys.readouterr().out
    assert "punct_first" in out and "classes" in out
    assert cli.main(["probe", "--encoder", "random-sp-average", "--task", "length", "--out",
                     str(tmp_path / "p.csv"), "--predictions", str(tmp_path / "said"), *small]) == 0
    out = capsys.readouterr().out
    said = pd.read_csv(tmp_path / "said" / "length.tsv", sep="\t", keep_default_na=False)
    assert list(said.columns) == ["sentence", "label", "word", "predicted", "probability", "correct"]
    assert "selectivity" in out and "length" in out
    df = pd.read_csv(tmp_path / "p.csv")
    accuracy = df.set_index("metric").loc["accuracy"]
    assert said["correct"].mean() == pytest.approx(accuracy["value"]) and accuracy["n"] == len(said)
    again = ["probe", "--encoder", "random-sp-average", "--task", "length", "--predictions", str(tmp_path / "said")]
    assert cli.main([*again, *small]) == 2  # refused before any work: the file would be replaced
    assert "already holds length.tsv; --force replaces them" in capsys.readouterr().err
    assert cli.main([*again, "--layers", "0", *small]) == 2 and "drop --seeds / --layers" in capsys.readouterr().err  # the printed table gives the accuracy with its CI and n
    header, row = out.splitlines()[-3], out.splitlines()[-1]
    assert "accuracy 95% CI" in header and header.split()[-4] == "n"
    assert f"[{100 * accuracy['ci_low']:.1f}, {100 * accuracy['ci_high']:.1f}]  {accuracy['n']}" in row
    assert set(df.metric) == {"accuracy", "majority", "control_accuracy", "selectivity"}
    note = df.set_index("metric").loc["selectivity", "note"]
    assert "uninformative" not in str(note) and "keys on first words" in str(note)  # Length's first-word control
    assert cli.main(["probe", "--encoder", "random-sp-average", "--task", "length", "--classifier", "mlp",
                     "--no-control", "--seeds", "2", *small]) == 0
    assert "seed_std" in capsys.readouterr().out
    assert cli.main(["probe", "--task", "length", "--train-size", "600"]) == 2
    assert "give all of --train-size" in capsys.readouterr().err


def test_evaluate_with_bootstrap_against_another_encoder(capsys):
    assert cli.main(["evaluate", "--encoder", "random-sp-average", "--suite", "hard_sts",
                     "--against", "random-sp-average", "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    comparison = out.split("paired bootstrap")[1]
    assert "hard+" in comparison and "hard-" in comparison and "STS12-16" not in comparison  # the suite asked
    assert cli.main(["evaluate", "--encoder", "random-sp-average", "--suite", "sts",
                     "--against", "random-sp-average", "--n-boot", "200"]) == 0
    comparison = capsys.readouterr().out.split("paired bootstrap")[1]
    assert "STS12-16" in comparison and "hard+" not in comparison


def test_any_encoder_against_any_other_and_the_comparison_saved(tmp_path, capsys):
    out = tmp_path / "eval.csv"
    assert cli.main(["evaluate", "--model", "bgt-en-fr", "--suite", "hard_sts", "--against", "bgt-en-fr-lang16:en",
                     "--n-boot", "200", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.split("paired bootstrap")[1]
    saved = pd.read_csv(tmp_path / "eval-comparison.csv")
    assert set(saved["a"]) == {"bgt-en-fr:semantic"} and set(saved["b"]) == {"bgt-en-fr-lang16:en"}
    assert len(saved) == len(printed.strip().splitlines()) - 3  # the printed rows, all saved (title, header, path)
    for p in saved["p_value"]:  # below the test's resolution a p-value reads "< 0.01", never 0.0
        assert (f"{p:.3f}" in printed) if p >= 0.01 else ("< 0.01" in printed)


def test_the_probe_table_puts_each_ci_on_its_own_tasks_row_and_a_task_given_twice_once():
    from workbench.reports.results import probe_table
    rows = [("word_content", "accuracy", 0.9, 0.85, 0.95), ("word_content", "accuracy_seen_word", 0.6, None, None),
            ("bigram_shift", "accuracy", 0.6, 0.55, 0.65), ("bigram_shift", "accuracy", 0.6, 0.55, 0.65)]
    df = pd.DataFrame(rows, columns=["task", "metric", "value", "ci_low", "ci_high"]).assign(n=100)
    table = probe_table(df)  # only word_content has the seen-word subset: the rows' orders differ
    assert table.loc["word_content", "accuracy 95% CI"] == "[85.0, 95.0]" and len(table) == 2
    assert table.loc["bigram_shift", "accuracy 95% CI"] == "[55.0, 65.0]"
