"""What the GPU campaign trains (``scripts/gpu_campaign``, ``docs/campaign.md``): its jobs, each a recipe of
``recipes/campaign/``, the dry run's toy sizes, and the size of the package each returns."""
from __future__ import annotations

import os

from workbench.checks import WorkbenchError, check_keys
from workbench.paths import REPO_ROOT

# In order of priority for the return: en-fr (the paper's style-transfer pair, Table 3), then by corpus size (the
# CPU warm starts cover es, tr and ar), ja first among the rest as the language furthest from English.
JOBS = tuple(f"bgt-small-{pair}" for pair in ("en-fr", "en-ja", "en-es", "en-tr", "en-ar"))
RECIPES = REPO_ROOT / "recipes" / "campaign"
PRECISION = "int8"  # a GPU-scale BGT with decoders in one return (docs/campaign.md#how-the-packages-travel)
TOY_FIELDS = ("vocab_size", "max_pairs", "tokenizer_pairs", "max_sentence_len", "max_tokens", "max_valid_pairs")


def preset() -> str:
    return os.environ.get("CAMPAIGN_PRESET", "recipes")


def eager() -> bool:
    """``CAMPAIGN_COMPILE=off``: every job eager — where a compiled update fails on the device in a way the
    per-part fallback does not catch, or a dry run tests what compiling has no part in."""
    value = os.environ.get("CAMPAIGN_COMPILE", "")
    if value not in ("", "off"):
        raise WorkbenchError(f"CAMPAIGN_COMPILE={value!r}: valid: off (every job eager), or unset (the recipes')")
    return value == "off"


def chosen() -> tuple[str, ...]:
    """The jobs ``CAMPAIGN_JOBS`` names (default: all), in the order of the return."""
    named = tuple(j for j in os.environ.get("CAMPAIGN_JOBS", "").split(",") if j) or JOBS
    check_keys(named, JOBS, "CAMPAIGN_JOBS", "jobs")
    return tuple(job for job in JOBS if job in named)


def job_config(job: str, seconds: float):
    """A job's TrainConfig: its recipe in ``recipes/campaign/`` under the time budget; the dry run
    (``CAMPAIGN_PRESET=tiny``) keeps every setting of the recipe but the sizes (:data:`TOY_FIELDS` and the
    network's), which the preset gives, measures every 10 updates, and compiles its first job with ``aot_eager``
    (dynamo's graph capture and autograd tracing, as on the GPU, without the minute of CPU code generation; the
    jobs differ in their sizes alone, so the others run eager: capturing each took ~10 s of CPU)."""
    from workbench.models.kinds import KINDS
    from workbench.training.recipes import PRESETS, TrainConfig
    cfg = TrainConfig.from_file(RECIPES / f"{job}.toml")
    changes = {"max_seconds": seconds}
    if preset() != "recipes":
        toy = PRESETS[preset()]
        changes.update({k: toy[k] for k in TOY_FIELDS if k in toy}, eval_every=10, valid_every=10, save_every=10,
                       overrides={**cfg.overrides, **KINDS[cfg.model].presets[preset()]["model"]},
                       compile="aot_eager" if cfg.compile != "off" and job == chosen()[0] else "off")
    if eager():
        changes["compile"] = "off"
    return TrainConfig(**{**cfg.__dict__, **changes})


def package_bytes(job: str) -> int:
    """The bytes of a job's weights in a :data:`PRECISION` package, decoders included, before compression: one
    byte per matrix entry, two per vector entry (its ``spm.model`` adds ~0.3 MiB for 4k pieces)."""
    import torch
    from workbench.models.kinds import build_model
    with torch.device("meta"):  # the shapes only
        model = build_model(job_config(job, 1).model_config())
    return sum(t.numel() * (1 if t.dim() >= 2 else 2) for t in model.state_dict().values())
