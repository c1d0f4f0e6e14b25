"""BGT probing workbench: what does a sentence encoder actually encode?

    import workbench as wb
    enc = wb.untrained_encoder("random-transformer", pair="en-fr")
    wb.probe(enc, "punct_num")          # ProbeResult(accuracy, ci, majority, ...)
    wb.probe(enc, "my_sentences.csv")   # your own labelled sentences (sentence, label[, split, word] columns)
    wb.evaluate(enc, "sts")             # tidy DataFrame, Pearson per STS dataset and year
    wb.compare_sts(enc, other)          # paired bootstrap: difference, CI and p-value per STS year
    wb.report(df, "reports/x.html")     # self-contained HTML + CSV/JSON (+ PNG/PDF with Chromium)
    bgt = wb.load("bgt-en-fr")          # a shipped model (wb.shipped() lists them), a run, or a checkpoint
    wb.learning_curve("bgt-en-fr")      # STS-B dev per view and validation loss during its training
    wb.transfer(bgt, ["source"], ["style"])   # style transfer
    wb.transfer_scores(bgt)             # does it transfer? meaning, content words and form on held-out pairs
    wb.erase(enc, "length")             # the encoder with the task's concept linearly erased (LEACE)
    mine = wb.hf_encoder("path/to/hf-model", layer=4)       # any local Hugging Face encoder ('hf' extra)
    wb.probe_layers(bgt.encoder("semantic"), ["length", "bigram_shift"])   # every layer: where does it live?
"""
from .cache import cached
from .data.corpora import load_splits
from .checks import WorkbenchError
from .encoders import Encoder, LayeredEncoder, untrained_encoder
from .evaluation import compare_hard_sts, compare_sts, evaluate
from .models.folder import load, shipped
from .models.runlog import learning_curve
from .models.huggingface import hf_encoder, minilm
from .probing.across import probe_across
from .probing.build import build_task
from .probing.erase import erase, erasure_effects
from .probing.layers import layer_profile, probe_layers
from .probing.own import own_task
from .probing.probe import probe, probe_all
from .probing.result import ProbeResult
from .probing.tasks import get_task, readable_tasks, task_names
from .reports.pages import report
from .style_transfer.evaluation import form_origins, transfer_scores
from .style_transfer.generation import latent_ablation, transfer, transfer_table
from .zoo.cards import CARD_SIZES, card

__all__ = ["WorkbenchError", "Encoder", "LayeredEncoder", "untrained_encoder", "evaluate", "compare_sts", "compare_hard_sts", "report",
           "build_task", "ProbeResult", "probe", "probe_all", "probe_across", "erase", "get_task", "task_names", "load", "learning_curve",
           "cached", "shipped", "transfer", "transfer_scores", "hf_encoder", "minilm", "probe_layers", "layer_profile",
           "own_task", "readable_tasks", "load_splits", "erasure_effects", "form_origins", "latent_ablation",
           "transfer_table", "card", "CARD_SIZES"]
