"""Every ``workbench`` command's record and its arguments: what ``--help`` and the argument checks read. Light on
purpose: a command's work is imported when it runs (:class:`~.common.Command`), and the few choices that live
beside heavier code are imported by the one parser that lists them."""
from __future__ import annotations

import argparse

from ..data.eval_sets import STS17_TRACKS, STS_DATASETS
from ..data.languages import PAIRS
from ..encoders import NAMED_ENCODERS
from ..models import KIND_NAMES, PRESET_NAMES
from .common import Command, encoder_args, size_args


def _sts_years() -> list[int]:
    return list(STS_DATASETS)


def _encode_arguments(p: argparse.ArgumentParser) -> None:
    encoder_args(p)
    p.add_argument("--input", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true", help="replace --out if it exists")


ENCODE_COMMAND = Command(
    "encode", "encode a file of sentences (one per line) into a .npy matrix",
    _encode_arguments, "measuring:encode_command", out="file")


OWN_TASK_OPTIONS = {"sentence_column": "sentence", "label_column": "label", "task_language": "en"}  # and defaults


def _probe_arguments(p: argparse.ArgumentParser) -> None:
    encoder_args(p)
    p.add_argument("--task", nargs="+", metavar="TASK",
                   help="task names (`workbench probes list`; default: every task in the languages the encoder "
                        "reads) or files of your own labelled sentences (.tsv/.csv/.jsonl with sentence and label "
                        "columns, optionally split and word; or a SentEval file)")
    for option, default in OWN_TASK_OPTIONS.items():
        p.add_argument(f"--{option.replace('_', '-')}", help=f"own task files: the {option.replace('_', ' ')} "
                                                             f"({default})")
    p.add_argument("--classifier", choices=("logreg", "mlp"), default="logreg")
    p.add_argument("--control", choices=("word", "first_word"),
                   help="the control task's labels are a random function of the word the label is read from "
                        "(default: that word, the first word where a task has none; word: the label word only, "
                        "refused for a task without one) or of the first word (first_word)")
    p.add_argument("--no-control", action="store_true", help="skip the control task (no selectivity)")
    p.add_argument("--transfer", metavar="LANG", help="also test the English-trained probe on the test sentences' "
                                                     "translations into LANG (tasks whose label survives translation)")
    p.add_argument("--given", metavar="VIEW", help="with --model: a conditional probe, what --encoder's view adds "
                                                   "beyond this view of the same model (e.g. --encoder semantic "
                                                   "--given en)")
    p.add_argument("--mdl", action="store_true", help="also the MDL online codelength (logreg)")
    p.add_argument("--seeds", type=int, default=1,
                   help="fit the probe with this many seeds and report the mean and the seed sd (default 1; the "
                        "logistic probe is seed-free, the MLP is not)")
    p.add_argument("--layers", nargs="+", metavar="LAYER",
                   help="probe at each of these layers of the encoder (numbers, or 'all'): one row per task and "
                        "layer, with where each property peaks and is lost")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="with --layers: fit the layers' probes N at a time (joblib threads; -1: one per core)")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.add_argument("--predictions", metavar="DIR",
                   help="also write each task's test sentences with their label, the label the probe gave, its "
                        "probability and whether it was right, as DIR/TASK.tsv (error analysis)")
    p.add_argument("--force", action="store_true", help="replace --out or --predictions' files if they exist")
    size_args(p, unset="default: the model cards' 6000/1000/1000 for named tasks, all of an own task's sentences")


PROBE_COMMAND = Command(
    "probe", "train probing classifiers and print test accuracy, selectivity, ...",
    _probe_arguments, "measuring:probe_command", out="file")


def _probes_arguments(p: argparse.ArgumentParser) -> None:
    from ..probing.baselines import BASELINES, SENTEVAL_NAMES  # (pandas)
    from ..probing.tasks import task_names
    psub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    psub.add_parser("list", help="the task cards")
    q = psub.add_parser("build", help="build datasets (already built ones are reused: resumable)")
    q.add_argument("--tasks", nargs="+", choices=task_names(), default=task_names(), metavar="TASK",
                   help="task names (`workbench probes list`; default: every task)")
    q.add_argument("--force", action="store_true", help="rebuild even if built")
    q.add_argument("--ship-parses", action="store_true",
                   help="write the shipped pairs' splits and the probe pools' parses into workbench/probes/splits/ "
                        "and parses/ (what a fresh clone reads instead of computing them; for maintainers, after "
                        "a corpus, split, pool, pipeline or parse change)")
    q.add_argument("--ship-manifests", action="store_true",
                   help="build every task (or those of --tasks) at its card's sizes and at the model cards' "
                        "probing sizes and record the manifests in workbench/probes/builds.json (the cache the docs "
                        "read their sizes from; for maintainers, after a card, pool or builder change)")
    size_args(q)
    q = psub.add_parser("baselines", help="Conneau et al. (2018)'s text-only baselines on our tasks, beside their "
                                          "published accuracies on SentEval's data (an external check)")
    q.add_argument("--tasks", nargs="+", choices=task_names(), default=list(SENTEVAL_NAMES), metavar="TASK",
                   help="task names (`workbench probes list`; default: the ten SentEval tasks)")
    q.add_argument("--baselines", nargs="+", choices=list(BASELINES), default=list(BASELINES),
                   help="; ".join(f"{name}: {what}" for name, (what, _, _) in BASELINES.items()))
    q.add_argument("--out", help="also write the tidy results as CSV")
    q.add_argument("--force", action="store_true", help="replace --out if it exists")
    size_args(q)


PROBES_COMMAND = Command(
    "probes", "list or build the probing datasets; run the text-only baselines",
    _probes_arguments, "measuring:probes_command", out="file", actions={"list": "listing:probes_list"})


def _cache_arguments(p: argparse.ArgumentParser) -> None:
    csub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    csub.add_parser("ls", help="entries and size per encoder")
    q = csub.add_parser("clear", help="delete cached embeddings and results")
    q.add_argument("--encoder", help="only this encoder (name or fingerprint prefix)")
    q.add_argument("--stale", action="store_true", help="only the temporary files that killed writers left behind")


CACHE_COMMAND = Command(
    "cache", "show or clear the embedding cache",
    _cache_arguments, "measuring:cache_command")


def _evaluate_arguments(p: argparse.ArgumentParser) -> None:
    from ..evaluation import SUITES  # (pandas)
    encoder_args(p)
    p.add_argument("--suite", choices=[*SUITES, "all"], default="sts",
                   help="; ".join(f"{s.name}: {s.about} (reads {s.describe_reads()})" for s in SUITES.values())
                   + "; all: every suite the encoder can take (default sts)")
    p.add_argument("--out", help="also write the tidy results as CSV")
    p.add_argument("--force", action="store_true", help="replace --out (and the results in --mteb) if they exist")
    p.add_argument("--force-languages", action="store_true",
                   help="evaluate a suite in languages the encoder does not declare (as MTEB does; rows marked)")
    p.add_argument("--against", metavar="ENCODER",
                   help="paired bootstrap test against this encoder on STS 2012-16 (--suite sts), Hard STS "
                        f"(--suite hard_sts) or both (--suite all): {', '.join(NAMED_ENCODERS)}, hf:PATH[@LAYER], "
                        "or MODEL[:VIEW] (a shipped model, run or checkpoint; e.g. bgt-en-fr-lang16:en); with "
                        "--out also written to OUT-comparison.csv")
    p.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples (2000)")
    p.add_argument("--tracks", nargs="+", metavar="TRACK",
                   help=f"the STS17 tracks to run, separated by spaces or commas (--suite sts17; default every one "
                        f"the encoder reads): "
                        f"{', '.join(STS17_TRACKS)}")
    p.add_argument("--mteb", metavar="DIR",
                   help="also write the results in MTEB's results layout (TASK.json per MTEB task) into DIR")


PAIRED = ("sts", "hard_sts", "all")  # the suites --against can test


EVALUATE_COMMAND = Command(
    "evaluate", "semantic evaluation: STS 2012-16, Hard STS, STS17, Tatoeba",
    _evaluate_arguments, "measuring:evaluate_command", out="file")


def _models_arguments(p: argparse.ArgumentParser) -> None:
    msub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = msub.add_parser("list", help="the models in trained/ with their headline numbers")
    q.add_argument("--markdown", action="store_true", help="trained/README.md's table, from the cards "
                                                           "(`bash scripts/docs --write` puts it there)")
    q = msub.add_parser("export", help="copy a run into trained/NAME (fp16) and measure it for its card")
    q.add_argument("run", help="run directory, or one of its checkpoints (RUN/checkpoints/update-N)")
    q.add_argument("--name", required=True, help="model name, e.g. bgt-en-fr (letters, digits, _ . -)")
    q.add_argument("--force", action="store_true", help="replace an existing model of that name (once the new "
                                                         "one is measured)")
    q.add_argument("--keep-decoders", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the decoders (default: only for bgt-en-fr, the style-transfer model)")
    q.add_argument("--checkpoint", default="best", metavar="best|latest|UPDATE",
                   help="best: the run's best semantic dev score (best/: STS-B dev, or a pair without English's "
                        "validation retrieval), where it has one; latest: its last; UPDATE: its checkpoint of that "
                        "update")
    q = msub.add_parser("card", help="measure one section of shipped models' cards again (after its evaluation "
                                     "or its tasks changed); the other numbers stay as measured")
    q.add_argument("names", nargs="+", metavar="NAME", help="shipped BGTs")
    q.add_argument("--section", choices=("style_transfer", "languages", "halves"), default="style_transfer",
                   help="style_transfer (BGTs with decoders), languages (each view on the pair's other "
                        "language's own tasks) or halves (English minus semantic view on the form tasks and STS)")
    q = msub.add_parser("retrain", help="train shipped models again from scratch with their recorded recipes "
                                        "(config.json) and export them (scripts/train_shipped)")
    q.add_argument("--only", nargs="+", metavar="NAME", help="these shipped models (default: all)")
    q.add_argument("--runs", default="runs/shipped", help="where the runs go (runs/shipped; resumable)")
    q.add_argument("--dry-run", action="store_true", help="print the plan and the hours it took, train nothing")
    q.add_argument("--force", action="store_true", help="replace the shipped models with the retrained ones")
    q = msub.add_parser("import", help="rebuild trained/NAME from a model package (scripts/gpu_campaign's shards), "
                                       "checking every file's sha256, and measure it for its card")
    q.add_argument("package", help="package folder (manifest.json, model-*.safetensors, spm.model)")
    q.add_argument("--name", help="model name (default: the package's)")
    q.add_argument("--force", action="store_true", help="replace an existing model of that name (once the new "
                                                         "one is measured)")
    q = msub.add_parser("migrate", help="check older-format model folders as written and seal them in the current "
                                        "format (whose seal covers every file's digest)")
    q.add_argument("paths", nargs="*", metavar="PATH",
                   help="model folders, run directories or shipped names (default: every shipped model)")
    q = msub.add_parser("rename", help="give a model of trained/ another name (its folder, card and pin; the weights "
                                       "and numbers stay)")
    q.add_argument("name", help="the model's name now")
    q.add_argument("new", help="its new name (free: move the model of that name aside first)")


MODELS_COMMAND = Command(
    "models", "list the shipped models, export a training run into trained/, or retrain them",
    _models_arguments, "models:models_command", actions={"list": "listing:models_list"})


def _curve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories or shipped model names")
    p.add_argument("--out", default="reports/curve", help="output folder (reports/curve)")
    p.add_argument("--no-static", action="store_true", help="skip the PNG export (needs Chromium)")


CURVE_COMMAND = Command(
    "curve", "learning curves of training runs or shipped models (dev score, valid loss)",
    _curve_arguments, "models:curve_command", out="folder")


def _train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", choices=KIND_NAMES, help="the kind of model (default bgt)")
    p.add_argument("--pair", metavar="PAIR",
                   help=f"language pair: {', '.join(PAIRS)}, a pair registered from your own bitext, or a new one "
                        "with --corpus (default en-fr; nmt: all, every shipped pair through one encoder)")
    p.add_argument("--corpus", nargs="+", metavar="FILE",
                   help="your own bitext for --pair: first<TAB>second lines (.tsv or .tsv.gz; english<TAB>other for "
                        "en-XX), or two files of a Moses pair (the first language's first); checked whole and "
                        "registered once (`workbench data add-pair`)")
    p.add_argument("--preset", choices=PRESET_NAMES,
                   help="tiny (default; CI, <1 min CPU), cpu (what trained/ holds), small (the GPU recipe), paper")
    p.add_argument("--config", help="TOML/JSON file of training settings (instead of --model/--pair/--preset)")
    p.add_argument("--out", help="run directory (runs/MODEL-PAIR-PRESET)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its latest checkpoint, with the recipe it records")
    p.add_argument("--init-from", metavar="MODEL",
                   help="start a new run from a trained model of the same settings (a name in trained/ or a folder): "
                        "its weights, update count and curve go on, the optimizer starts afresh (when the run "
                        "directory is lost)")
    p.add_argument("--max-updates", type=int, help="override the preset's number of updates")
    p.add_argument("--max-seconds", type=float,
                   help="stop after this many seconds with a checkpoint (continue with --resume); so do Ctrl-C and "
                        "SIGTERM, after the update in progress")
    p.add_argument("--seed", type=int)


TRAIN_COMMAND = Command(
    "train", "train a model: BGT, its baselines or the references (`workbench train --help` lists the kinds)",
    _train_arguments, "training:train_command")


def _data_arguments(p: argparse.ArgumentParser) -> None:
    dsub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = dsub.add_parser("info", help="pairs per split for each language pair, shipped and registered")
    q.add_argument("--pair", nargs="+", metavar="PAIR")
    q = dsub.add_parser("add-pair", help="register your own bitext as a language pair (checked whole first), with "
                                         "its languages' probing tasks")
    q.add_argument("pair", metavar="PAIR", help="en-XX, XX an ISO 639-1 or 639-3 code (en-pt, en-por, en-swh), or "
                                                "two other languages (fr-es)")
    source = q.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", nargs="+", metavar="FILE",
                        help="first<TAB>second lines in the pair's order (.tsv or .tsv.gz), or two files of a Moses "
                             "pair (the first language's first)")
    source.add_argument("--pivot", action="store_true",
                        help="a pair of two other languages made from the English en-XX and en-YY share (fr-es from "
                             "en-fr and en-es): each translation beside each translation of the same English")
    q.add_argument("--force", action="store_true", help="replace the corpus of a pair registered before")
    q = dsub.add_parser("download", help="download OPUS parallel data or the STS test sets")
    q.add_argument("what", choices=("opus", "sts"))
    q.add_argument("--pair", nargs="+", metavar="PAIR", help=f"opus: en-XX pairs ({', '.join(PAIRS)})")
    q.add_argument("--corpus", default="OpenSubtitles", help="OPUS corpus (OpenSubtitles)")
    q.add_argument("--version", default="v2018", help="OPUS corpus version (v2018)")
    q.add_argument("--years", type=int, nargs="+", choices=_sts_years(), default=_sts_years())
    q.add_argument("--dest", help="data root to write into (default: the workbench data folder)")


DATA_COMMAND = Command(
    "data", "inspect the corpora, register your own bitext, or download public data",
    _data_arguments, "training:data_command", actions={"info": "listing:data_info"})


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="reports/demo", help="output folder (reports/demo)")
    p.add_argument("--pair", choices=PAIRS, nargs="+", default=["en-fr"], help="language pairs (en-fr)")
    p.add_argument("--all", action="store_true", help="every language pair")
    p.add_argument("--years", type=int, nargs="+", choices=_sts_years(), default=_sts_years())
    size_args(p, 6000, 1000, 1000)


DEMO_COMMAND = Command(
    "demo", "run the demo pipeline on real data and write an HTML report",
    _demo_arguments, "reporting:demo_command", out="folder")


def _reproduce_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="reports/reproduction.html")
    p.add_argument("--recompute", action="store_true", help="measure the models again instead of reading their cards")
    p.add_argument("--no-disentanglement", action="store_true",
                   help="leave out the disentanglement section (language ID and erasing it: minutes per pair)")
    p.add_argument("--years", type=int, nargs="+", choices=_sts_years(), default=_sts_years(),
                   help="the STS years of the paired bootstraps (default all five, the paper's STS12-16; encoding "
                        "them is most of the report's time, and --years 2016 alone is a quick look)")
    p.add_argument("--no-static", action="store_true", help="skip the figures' PNG/PDF export (needs Chromium; "
                                                            "the HTML and the CSVs are complete without it)")
    size_args(p, 6000, 1000, 1000)  # of the probes it fits itself: the disentanglement's (every one with --recompute)


REPRODUCE_COMMAND = Command(
    "reproduce", "our shipped models next to the paper's tables (reports/reproduction.html)",
    _reproduce_arguments, "reporting:reproduce_command", out="page")


def _transfer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="bgt-en-fr", help="a BGT with decoders (bgt-en-fr)")
    p.add_argument("--source", help="sentence whose meaning is kept (semantic encoder)")
    p.add_argument("--style", help="sentence whose style is used (English language encoder)")
    p.add_argument("--language", default="en", help="the language of --style and of the output (en; a model of a "
                                                    "pair without English: one of its two languages)")
    p.add_argument("--pairs", help="batch mode: CSV/TSV with source and style columns")
    p.add_argument("--out", help="batch mode: write the table with an output column as CSV")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--beam", type=int, default=5, help="beam size (1 = greedy; 5)")
    p.add_argument("--max-len", type=int, help="maximum generated pieces (the model's maximum)")
    p.add_argument("--rerank", metavar="MEANING,FORM|none",
                   help="pick among the beam's sentences by the model's own encoders: the decoder's score plus "
                        "MEANING x cosine to the source's semantic latent plus FORM x cosine to the style's language "
                        "latent (default 2,1; none: the decoder's best)")
    p.add_argument("--guidance", type=float, metavar="G",
                   help="steer each step toward the style's form and away from the source's own (default 0.2; 0 = "
                        "off; more trades meaning for form, docs/method.md#guidance)")
    p.add_argument("--keep-punctuation", action="store_true",
                   help="the semantic encoder reads the source with its punctuation (by default it reads it without, "
                        "so the marks and sentence type come from the style: docs/method.md#decoding)")
    p.add_argument("--paper", action="store_true",
                   help="the paper's decoding: beam search alone (as --rerank none --guidance 0 --keep-punctuation)")
    p.add_argument("--eval", action="store_true",
                   help="score the transfer: meaning kept from the source (judged by sp-en-fr, and MiniLM when "
                        "installed), content words, form taken from the style, and the latent ablation, on --pairs "
                        "or a fixed sample of held-out pairs; --out writes the summary and OUT-pairs.csv")
    p.add_argument("--n", type=int, help="--eval: pairs in the held-out sample (200)")


TRANSFER_COMMAND = Command(
    "transfer", "style transfer with BGT: meaning from --source, style from --style",
    _transfer_arguments, "reporting:transfer_command", out="file")


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", required=True)
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--title", default="BGT workbench report")


REPORT_COMMAND = Command(
    "report", "HTML report (+ CSV/JSON) from a results CSV",
    _report_arguments, "reporting:report_command", out="folder")


def _results_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", help="one task (its name)")
    p.add_argument("--encoder", help="encoders whose name holds this text (bgt-en-fr, hf:, @4)")
    p.add_argument("--layer", type=int, help="one layer of layered encoders (the @L of their names)")
    p.add_argument("--out", help="CSV of the whole table (runtime, device and library versions included)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")


RESULTS_COMMAND = Command(
    "results", "every probe result the cache holds, encoder by task, with 95%% CIs; the best marked where CIs "
               "separate", _results_arguments, "reporting:results_command", out="file")


COMMANDS: tuple[Command, ...] = (
    DEMO_COMMAND, MODELS_COMMAND, CURVE_COMMAND, REPRODUCE_COMMAND, TRANSFER_COMMAND, DATA_COMMAND, TRAIN_COMMAND,
    ENCODE_COMMAND, PROBE_COMMAND, PROBES_COMMAND, RESULTS_COMMAND, CACHE_COMMAND, EVALUATE_COMMAND, REPORT_COMMAND)
