"""The main job: the paper's probing comparison (Table 3) and STS on the shipped models, as an HTML report.

For each language pair: BGT's semantic encoder, its English language encoder and BILINGUALTRANS on the Table 3
tasks (plus Gender with the fr/es language encoder) and STS 2012–16. Embeddings and results are cached, so a
second run takes seconds; ``results.csv`` is rewritten after every step, so an interrupted run keeps its work.
"""
from __future__ import annotations

import html
import logging
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pandas as pd
import torch

from ..cache import cached
from ..checks import WorkbenchError, check_sizes, whole
from ..data.corpora import language_of
from ..data.eval_sets import STS_DATASETS
from ..evaluation.sts import evaluate_sts
from ..models.folder import load
from ..models.pins import card, shipped
from ..paths import home_dir
from ..probing.background import SetBuilder
from ..probing.build import pending
from ..probing.probe import probe
from ..progress import progress_bar
from ..style_transfer.evaluation import transfer_pairs
from ..style_transfer.generation import GUIDANCE, transfer_table
from ..probing.tasks import get_task
from ..zoo.cards import CARD_SIZES, GENDER_TASKS, TABLE3_TASKS, halves_won
from .pages import report

log = logging.getLogger(__name__)


def demo_encoders(pair: str) -> list:
    """The encoders Table 3 compares for ``pair``, from the shipped models."""
    names = (f"bgt-{pair}", f"bilingual_trans-{pair}")
    missing = [n for n in names if n not in shipped()]
    if missing:
        raise WorkbenchError(f"the demo needs the shipped models {', '.join(missing)} in trained/; shipped: "
                             f"{', '.join(shipped()) or 'none'}")
    bgt, trans = load(names[0]), load(names[1])
    foreign = language_of(pair)
    return [bgt.encoder("semantic"), bgt.encoder("en"), trans.encoder("semantic"), bgt.encoder(foreign)]


def why_shown(name: str) -> str:
    """One sentence (plain text) on why ``name`` is the pair's BGT a page shows, from its card's both-halves
    section: the paper's language encoder wins the form tasks while its semantic encoder leads on STS."""
    info = card(name)
    pair, halves = info["pair"], info.get("halves")
    others = "any other shipped model can be given instead (`workbench models list`)"
    if not halves:
        return f"{name} is the {pair} BGT shown; {others}."
    form, sts = halves["english_minus_semantic"], halves["semantic_minus_english_sts"]
    won = [f"{get_task(t).title} by {form[t][0]:+.1f} [{form[t][1]:+.1f}, {form[t][2]:+.1f}]"
           for t in halves_won(halves)]
    return (f"{name} is the {pair} BGT shown because it shows both halves of BGT's story best among the shipped "
            f"BGTs with decoders: its English view beats its semantic view on "
            f"{', '.join(won) if won else 'no form task yet (the paper: all three)'} (probe accuracy, 95% CI), "
            f"while its semantic view leads on STS12–16 by {sts[0]:+.1f} [{sts[1]:+.1f}, {sts[2]:+.1f}]; {others}.")


def halves_finding(name: str) -> str:
    """One sentence: which of the paper's Table 3 form results ``name`` reproduces (its English language encoder
    wins Length, PunctNum and PunctFirst over its semantic encoder), from its card's both-halves section."""
    halves = card(name).get("halves")
    if not halves:
        return f"{name}'s card has no both-halves section yet (workbench models card {name} --section halves)."
    won = halves_won(halves)
    titles = [get_task(t).title for t in halves["english_minus_semantic"]]
    held = [get_task(t).title for t in won]
    claim = (f"Table 3's form result — the paper's English language encoder beats its semantic encoder on "
             f"{', '.join(titles[:-1])} and {titles[-1]} — holds for {name}")
    if len(held) == len(titles):
        return f"{claim} on all three."
    return f"{claim} on {' and '.join(held) + ' only' if held else 'none of the three'} (95% CIs)."


PARSE_RATE = 800  # pool sentences parsed per second by spaCy's small pipelines (measured on 2 CPU cores: 851 en)


def first_run_line(pairs: tuple[str, ...], sizes: dict[str, int], tasks: tuple[str, ...] = TABLE3_TASKS) -> str:
    """One line on what this run still has to build (parses: about how long), or that all of it is built."""
    gender = [GENDER_TASKS[language_of(p)] for p in pairs if language_of(p) in GENDER_TASKS]
    missing, to_parse = pending([*tasks, *gender], sizes)
    if not missing:
        return f"probing sets already built (cache: {home_dir()}); probes and STS already run are read from it"
    parsing = [f"parsing {n:,} {language} pool sentences once (~{n / PARSE_RATE:.0f} s)"
               for language, n in to_parse.items()]
    return (f"first run: building {len(missing)} probing sets" + "".join(", " + p for p in parsing)
            + f" in another process while encoding and probing run; later runs read all of it from the cache "
            f"({home_dir()})")


def compare(pairs: tuple[str, ...] = ("en-fr",), sizes: dict[str, int] = CARD_SIZES,
            years: tuple[int, ...] = tuple(STS_DATASETS), tasks: tuple[str, ...] = TABLE3_TASKS,
            control: bool = True, show_progress: bool = True, save_to: Path | None = None,
            n_jobs: int | None = None) -> pd.DataFrame:
    """Table 3's comparison as a tidy frame with a ``pair`` column: probes (with selectivity when
    ``control``) and STS for each pair's encoders (:func:`demo_encoders`). ``save_to``: a CSV rewritten after
    every step. The probes and STS run ``n_jobs`` at a time in threads (default: one per core, at most 4), torch's
    threads shared out among them (the same numbers as one at a time: each probe is deterministic). The probing
    sets not yet built are built meanwhile by another process, in the order the probes need them."""
    check_sizes(sizes)  # before any work
    jobs = min(4, os.cpu_count() or 1) if n_jobs is None else n_jobs
    if not whole(jobs, 1):
        raise WorkbenchError(f"n_jobs={n_jobs!r}: give a whole number of steps to run at a time (1 or more), or "
                             "None for one per core")
    plan = _steps(pairs, tasks)
    to_build = list(dict.fromkeys(task for _, _, task in plan if task is not None))
    # STS first (it needs no probing set), then each task's probes together, in the order their sets are built
    order = sorted(range(len(plan)), key=lambda i: -1 if plan[i][2] is None else to_build.index(plan[i][2]))
    missing, _ = pending(to_build, sizes)
    steps = progress_bar(total=len(missing) + len(plan), desc="compare", disable=not show_progress, unit="step")

    def run(pair: str, encoder, task: str | None, built: Future | None) -> pd.DataFrame:
        if task is None:
            return evaluate_sts(encoder, years).assign(pair=pair)
        if built is not None:
            built.result()  # its probing set, built by the other process
        result = probe(encoder, task, sizes=sizes, control=control)
        log.info("%s", result)
        return result.to_frame().assign(pair=pair)

    frames = _run_steps(plan, order, run, missing, sizes, jobs, steps, save_to)
    steps.close()
    df = pd.concat(frames, ignore_index=True)
    if save_to:
        df.to_csv(save_to, index=False)
    return df


def _run_steps(plan: list[tuple], order: list[int], run, missing: list[str], sizes: dict[str, int], jobs: int,
               steps, save_to: Path | None) -> list[pd.DataFrame]:
    """Each step's ``run(*step, its set's build or None)``, ``jobs`` at a time in threads, taken in ``order``, while
    another process builds the ``missing`` sets one after the other (:mod:`~workbench.probing.background`); the
    frames in the plan's order."""
    frames: list[pd.DataFrame | None] = [None] * len(plan)
    builder = SetBuilder(missing, sizes) if missing else nullcontext({})
    with _torch_threads(max(1, torch.get_num_threads() // jobs)), builder as built, ThreadPoolExecutor(jobs) as pool:
        for task in missing:
            built[task].add_done_callback(lambda _, task=task: (steps.set_postfix_str(f"probing set {task}"),
                                                                steps.update()))
        futures = {pool.submit(run, *plan[i], built[plan[i][2]] if plan[i][2] in missing else None): i
                   for i in order}
        try:
            for future in as_completed(futures):
                i = futures[future]
                frames[i] = future.result()
                steps.set_postfix_str(f"{'STS' if plan[i][2] is None else 'probe ' + plan[i][2]} / "
                                      f"{plan[i][1].name}")
                steps.update()
                if save_to:
                    pd.concat([f for f in frames if f is not None], ignore_index=True).to_csv(save_to, index=False)
        except BaseException:  # an error or Ctrl-C: what has not started does not start, nor waits on a set
            pool.shutdown(cancel_futures=True)
            if missing:
                built.stop()
            raise
    return frames


def _steps(pairs: tuple[str, ...], tasks: tuple[str, ...]) -> list[tuple]:
    """The comparison's steps in the report's order: (pair, encoder, task), or (pair, encoder, None) for STS."""
    plan = []
    for pair in pairs:
        *english, foreign = [cached(e) for e in demo_encoders(pair)]
        gender = GENDER_TASKS.get(language_of(pair))
        for e in english:
            plan += [(pair, e, task) for task in (*tasks, *([gender] if gender and "semantic" in e.name else []))]
            plan.append((pair, e, None))
        if gender:
            plan.append((pair, foreign, gender))
    return plan


@contextmanager
def _torch_threads(n: int):
    """torch's intra-op threads set to ``n`` for the block. Each of several steps side by side gets its share; a
    probe's small operations on two threads of a busy machine also ran 5-12x slower than on one (measured)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def style_transfer_note(name: str = "bgt-en-fr", n_examples: int = 3) -> str:
    """HTML: the style-transfer model's transfer evaluation (from its card: 200 fixed held-out pairs) beside
    ``n_examples`` transfers of fixed held-out pairs, decoded as the card's were (``transfer``'s defaults), so the
    examples are read with the numbers."""
    scores = card(name).get("style_transfer")
    if not scores:
        return ""
    closer = next(v for m, v in scores.items() if m.startswith("closer_to_source"))
    form = scores["form_follows_style"]
    others = []
    for other in shipped():
        measured = card(other).get("style_transfer") if other != name else None
        if measured:
            near = next(v for m, v in measured.items() if m.startswith("closer_to_source"))
            others.append(f"{html.escape(other)}: closer to the source {near[0]}%, form follows the style "
                          f"{measured['form_follows_style'][0]}%")
    table = transfer_table(load(name), transfer_pairs(n_examples))
    rows = "".join(f"<tr><td>{html.escape(r.source)}</td><td>{html.escape(r.style)}</td>"
                   f"<td>{html.escape(r.output)}</td></tr>" for r in table.itertuples())
    return (f"<h2>Style transfer with {html.escape(name)}</h2><p>Meaning from the source (semantic latent), form "
            f"from the style sentence (English language latent), decoded by <code>workbench transfer</code>'s default "
            f"(beam 5, re-ranked, a style push of {GUIDANCE:g}, the source read without its punctuation; "
            f"<code>--paper</code> for the paper's beam search). On 200 fixed held-out pairs (its card; "
            f"<code>workbench transfer --eval</code>): the output is closer in meaning to the source than to the "
            f"style sentence in {closer[0]}% of pairs [{closer[1]}–{closer[2]}], and its form (length, "
            f"punctuation, first word, sentence type, negation, person) follows the style sentence in {form[0]}% [{form[1]}–{form[2]}]: "
            f"{_verdict(closer[0], form[0])} (<code>trained/HISTORY.md</code>)."
            + (f" Beside it: {'; '.join(others)}." if others else "") + "</p>"
            f"<table><tr><th>source</th><th>style</th><th>output</th></tr>{rows}</table>")


def _verdict(closer: float, form: float) -> str:
    if closer >= 60 and form >= 60:
        return "it keeps the source's meaning and takes the style's form"
    if closer >= 60:
        return "it keeps the source's meaning but mostly not the style's form"
    return "it mostly follows the style sentence, not the source's meaning"


def run_demo(out_dir: str | Path = "reports/demo", pairs: tuple[str, ...] = ("en-fr",),
             sizes: dict[str, int] = CARD_SIZES, years: tuple[int, ...] = tuple(STS_DATASETS),
             tasks: tuple[str, ...] = TABLE3_TASKS, show_progress: bool = True) -> Path:
    """Run the demo pipeline and return the path of the HTML report."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    df = compare(pairs, sizes, years, tasks, show_progress=show_progress, save_to=out_dir / "results.csv")
    notes = (f"<p>Shipped models (<code>trained/</code>, see each <code>card.md</code>) for {', '.join(pairs)}: "
             "BGT's semantic encoder, its English (and, for Gender, foreign) language encoder, and BILINGUALTRANS — "
             "the comparison of the paper's Table 3. Probing tasks built from held-out sentences of the shared "
             f"parallel data ({sizes['train']}/{sizes['valid']}/{sizes['test']} per task; logistic-regression probe, "
             f"selectivity against a control task); STS {min(years)}–{max(years)} from <code>eval/sts</code> "
             f"(STS13 without SMT). The probes and STS took {time.perf_counter() - start:.0f} s of this run (cached "
             "results are read, not recomputed; the command's own total adds setup and this report). "
             "<code>workbench reproduce</code> puts these next to the paper's numbers.</p>")
    finding = "".join(f"<p><b>{html.escape(halves_finding(f'bgt-{pair}'))}</b> "
                      f"{html.escape(why_shown(f'bgt-{pair}'))}</p>" for pair in pairs)
    return report(df, out_dir / "report.html", title="BGT workbench demo", notes_html=finding + notes,
                  after_figures_html=style_transfer_note() if "en-fr" in pairs else "")
