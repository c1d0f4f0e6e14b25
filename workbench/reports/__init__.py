"""Reports, paper tables and figures: the public reporting surface the notebooks use (names in ``__all__``;
the interactive explorers are in :mod:`workbench.reports.widgets`, which needs the ``notebooks`` extra). What is
not listed here is internal and may move."""
from .demo import compare, why_shown
from .distance import gap_correlations, language_distances, missing_features
from .languages import own_language_gaps, own_language_results, own_language_transfer, partner_results
from .figures import (conditional_figure, curve_figure, erasure_figure, gap_figure, halves_figure, layer_heatmap, pair_figure,
                      table3_figure)
from .paper import (LANGUAGES, ROLES, language_gaps, our_table3, pair_languages, pairs_without_english, paper_table,
                    retrieval_by_language, table3_cells, training_budgets, unequal_budgets, vocabulary_overlap)
from .reproduction import transfer_evaluations

__all__ = ["compare", "why_shown", "gap_correlations", "language_distances", "missing_features", "conditional_figure",
           "curve_figure", "erasure_figure", "gap_figure", "halves_figure", "layer_heatmap", "pair_figure", "table3_figure",
           "LANGUAGES", "ROLES", "language_gaps", "our_table3", "pair_languages", "paper_table", "retrieval_by_language",
           "table3_cells", "training_budgets", "unequal_budgets", "vocabulary_overlap", "transfer_evaluations", "own_language_gaps", "own_language_results",
           "own_language_transfer", "pairs_without_english", "partner_results"]
