"""What the trainable sentence models share: config (de)serialisation and their Encoder views."""
from __future__ import annotations

from dataclasses import asdict, fields

from torch import nn

from ..errors import WorkbenchError


class ModelConfig:
    """Mixin for the model config dataclasses: the dict stored in ``config.json`` and back."""

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
