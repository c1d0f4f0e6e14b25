"""BGT probing workbench: what does a sentence encoder actually encode?

    import workbench as wb
    enc = wb.untrained_encoder("random-transformer", pair="en-fr")
    wb.probe(enc, "punct_num")          # ProbeResult(accuracy, ci, majority, ...)
    wb.probe(enc, "my_sentences.csv")   # your own labelled sentences (sentence, label[, split, word] columns)
    wb.predictions(enc, "punct_num")    # what the probe said of each test sentence, with its probability
    wb.evaluate(enc, "sts")             # tidy DataFrame, Pearson per STS dataset and year
    wb.compare_sts(enc, other)          # paired bootstrap: difference, CI and p-value per STS year
    wb.report(df, "reports/x.html")     # self-contained HTML + CSV/JSON (+ PNG/PDF with Chromium)
    bgt = wb.load("bgt-en-fr")          # a shipped model (wb.shipped() lists them), a run, or a checkpoint
    wb.learning_curve("bgt-en-fr")      # STS-B dev per view and validation loss during its training
    wb.transfer(bgt, ["source"], ["style"])   # style transfer (**wb.PAPER_DECODING: the paper's beam search)
    wb.transfer_scores(bgt)             # does it transfer? meaning, content words and form on held-out pairs
    wb.erase(enc, "length")             # the encoder with the task's concept linearly erased (LEACE)
    mine = wb.hf_encoder("path/to/hf-model", layer=4)       # any local Hugging Face encoder ('hf' extra)
    wb.probe_layers(bgt.encoder("semantic"), ["length", "bigram_shift"])   # every layer: where does it live?
    wb.add_pair("en-pt", "my-bitext.tsv")   # your own bitext as a language pair (then: workbench train --pair en-pt)
    wb.pivot_pair("fr-es")              # two other languages, from the English their shipped pairs share
"""
from __future__ import annotations

import importlib

# Each public name and the module it lives in: ``import workbench`` imports none of them (no torch, no models),
# so the CLI and a first ``import`` are quick; a name is imported when it is first used.
_PUBLIC = {
    "WorkbenchError": ".checks",
    "Encoder": ".encoders",
    "LayeredEncoder": ".encoders",
    "untrained_encoder": ".models.untrained",
    "evaluate": ".evaluation",
    "compare_sts": ".evaluation",
    "compare_hard_sts": ".evaluation",
    "evaluate_held_out_retrieval": ".evaluation",
    "report": ".reports.pages",
    "cached_probes": ".reports.results",
    "build_task": ".probing.build",
    "ProbeResult": ".probing.result",
    "probe": ".probing.probe",
    "probe_all": ".probing.probe",
    "predictions": ".probing.probe",
    "probe_across": ".probing.across",
    "erase": ".probing.erase",
    "get_task": ".probing.tasks",
    "task_names": ".probing.tasks",
    "load": ".models.folder",
    "learning_curve": ".models.runlog",
    "cached": ".cache",
    "shipped": ".models.pins",
    "transfer": ".style_transfer.generation",
    "transfer_scores": ".style_transfer.evaluation",
    "hf_encoder": ".models.huggingface",
    "minilm": ".models.huggingface",
    "probe_layers": ".probing.layers",
    "layer_profile": ".probing.layers",
    "own_task": ".probing.own",
    "readable_tasks": ".probing.tasks",
    "load_splits": ".data.corpora",
    "known_pairs": ".data.corpora",
    "add_pair": ".probing.pair_tasks",
    "pivot_pair": ".probing.pair_tasks",
    "erasure_effects": ".probing.erase",
    "form_origins": ".style_transfer.evaluation",
    "latent_ablation": ".style_transfer.generation",
    "transfer_table": ".style_transfer.generation",
    "RERANK": ".style_transfer.generation",
    "GUIDANCE": ".style_transfer.generation",
    "PAPER_DECODING": ".style_transfer.generation",
    "without_punctuation": ".style_transfer.generation",
    "card": ".models.pins",
    "with_decoders": ".zoo.cards",
    "CARD_SIZES": ".zoo.cards",
}

__all__ = list(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
