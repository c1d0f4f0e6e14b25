"""The caches: an encoder's embeddings per (fingerprint, sentence list) (:mod:`.embeddings`), a network's layers
streamed into them from one pass (:mod:`.layers`), results computed from them (:mod:`.results`), and what is
stored and what to free (:mod:`.housekeeping`)."""
from .embeddings import CachedEncoder, cache_dir, cached, check_fingerprint, float16_is_exact, sentences_digest
from .housekeeping import cache_summary, clear_cache, clear_stale, stale_temp_files
from .layers import StreamedEntry, cache_layers
from .results import remember, results_dir, stored_results

__all__ = ["CachedEncoder", "StreamedEntry", "cache_dir", "cache_layers", "cache_summary", "cached",
           "check_fingerprint", "clear_cache", "clear_stale", "float16_is_exact", "remember", "results_dir",
           "sentences_digest", "stale_temp_files", "stored_results"]
