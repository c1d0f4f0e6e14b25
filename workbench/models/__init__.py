"""The models: BGT and its baselines (:mod:`.bgt`, :mod:`.paraphrastic`, :mod:`.nmt`, :mod:`.wmf`), their registry
(:mod:`.kinds`), folders (:mod:`.folder`) and encoders of other libraries (:mod:`.huggingface`).

This face is light on purpose: the names below are what ``workbench train --help`` lists and its arguments are
checked against before torch is imported; :data:`.kinds.KINDS` and :data:`workbench.training.recipes.PRESETS`
refuse to load when they disagree with them.
"""
KIND_NAMES = ("bgt", "bgt_no_prior", "bgt_no_langvars", "bilingual_trans", "english_trans", "english_ae",
              "english_vae", "sp", "bilstm", "nmt", "wmf")
PRESET_NAMES = ("tiny", "cpu", "small", "paper")  # the training presets, smallest first
