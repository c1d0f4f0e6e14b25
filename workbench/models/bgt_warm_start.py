"""How a BGT starts from a trained BILINGUALTRANS (a recipe's ``warm_start``): the CPU recipe's way to the order of
learning the paper's scale reaches, where the semantic encoder knows the meaning before the language encoders learn
anything, and a small CPU run from scratch gets the reverse (the language encoder learns the whole sentence first).
"""
from __future__ import annotations

import torch

from ..checks import WorkbenchError


def from_translation(model, source_config, weights: dict) -> list[str]:
    """Load into ``model`` (a BGT with language latents) the semantic encoder and translation decoders of a
    BILINGUALTRANS of the same pair and shape as they are, and each generative decoder from the translation
    decoder into its language, its conditioning widened for z_lang by zero weights (so at update 0 it decodes
    from z_sem alone, as the translation model did). The language encoders start fresh and learn only what z_sem
    leaves to them. Returns the parameters taken."""
    if not model.setting.language_latents or source_config.setting != "bilingual_trans":
        raise WorkbenchError(f"a {model.cfg.setting} model starts only from scratch or from its own kind; "
                             f"warm start is BGT from BILINGUALTRANS (not from {source_config.setting})")
    shape = ("vocab_size", "languages", "d_model", "ffn_dim", "n_heads", "enc_layers", "dec_layers",
             "latent_dim")
    differ = [f"{k} {getattr(source_config, k)!r} vs {getattr(model.cfg, k)!r}" for k in shape
              if getattr(source_config, k) != getattr(model.cfg, k)]
    if differ:
        raise WorkbenchError(f"the BILINGUALTRANS to start from has another shape: {', '.join(differ)}")
    own, taken, lang_dim = model.state_dict(), {}, model.cfg.language_dim
    for name, tensor in weights.items():
        if name in own and own[name].shape == tensor.shape:
            taken[name] = tensor
    for lang in model.cfg.languages:
        other = next(x for x in model.cfg.languages if x != lang)
        prefix, source = f"decoders.{lang}.", f"decoders.{other}->{lang}."
        for name, tensor in weights.items():
            if not name.startswith(source):
                continue
            target = prefix + name[len(source):]
            if name.endswith(".out"):  # W_out [c ; x], c = [z_lang ; z_sem]
                tensor = torch.cat([tensor.new_zeros(tensor.shape[0], lang_dim), tensor], dim=1)
            elif name.endswith(".cond.weight"):  # W_a [x ; c]
                d = model.cfg.d_model
                tensor = torch.cat([tensor[:, :d], tensor.new_zeros(tensor.shape[0], lang_dim), tensor[:, d:]],
                                   dim=1)
            taken[target] = tensor
    model.load_state_dict({**own, **taken})
    return sorted(taken)
