"""What the trainable sentence models share: config (de)serialisation and their Encoder views."""
from __future__ import annotations

from dataclasses import asdict, fields

from torch import nn

from ..errors import WorkbenchError


class ModelConfig:
    """Mixin for the model config dataclasses: the dict stored in ``config.json`` and back, and the checks every
    config shares."""

    def size_problems(self) -> list[str]:
        """What is wrong with the sizes: each ``int`` field (the token ids aside) must be a positive integer,
        the token ids integers below ``vocab_size``, each dropout-like rate a number in [0, 1)."""
        problems = []
        for f in fields(self):
            value = getattr(self, f.name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if f.type == "int" and f.name not in ("pad_id", "eos_id"):
                if not (number and isinstance(value, int) and value >= 1):
                    problems.append(f"{f.name} must be a positive integer, not {value!r}")
            elif f.name in ("dropout", "shuffle_prob") and not (number and 0 <= value < 1):
                problems.append(f"{f.name} must be a number in [0, 1), not {value!r}")
        vocab = getattr(self, "vocab_size", None)
        for name in ("pad_id", "eos_id"):
            value = getattr(self, name, 0)
            if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value
                    and (not isinstance(vocab, int) or value < vocab)):
                problems.append(f"{name} must be an integer in [0, vocab_size), not {value!r}")
        return problems

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkbenchError(f"unknown model config keys {unknown}; valid: {', '.join(sorted(known))}")
        return cls(**data)


class SentenceModel(nn.Module):
    """A model whose ``encoders`` (a ModuleDict of networks mapping ids to ``(embedding, _)``) give sentence
    embeddings; subclasses say which languages each view reads (:meth:`view_languages`)."""

    @property
    def views(self) -> tuple[str, ...]:
        """Names of the networks that give sentence embeddings (``semantic``, and language encoders)."""
        return tuple(self.encoders)

    def view_languages(self, view: str) -> tuple[str, ...]:
        return self.cfg.languages

    def encoder(self, view: str = "semantic", tokenizer=None):
        """An Encoder (``name``, ``dim``, ``fingerprint``, ``encode``) over one network: ``"semantic"`` or a
        language encoder (``"en"``, ``"fr"``, ...). Uses the tokenizer :func:`workbench.load` attached."""
        from ..encoders import NetworkEncoder
        from ..errors import check_name
        check_name("encoder view", view, self.views)
        tokenizer = tokenizer or getattr(self, "tokenizer", None)
        if tokenizer is None:
            raise ValueError("this model has no tokenizer attached; load it with workbench.load or pass tokenizer=")
        name = f"{self.cfg.setting}-{'-'.join(self.cfg.languages)}:{view}"
        return NetworkEncoder(name, self.encoders[view], tokenizer, languages=self.view_languages(view))
