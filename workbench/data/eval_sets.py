"""What the evaluation sets in ``eval/`` hold, by name: the STS years' datasets, the STS17 tracks, the Tatoeba
languages. Their readers are :mod:`.sts`; these names stand apart so that a parser can list them without pandas."""

# STS 2012–2016 sub-datasets. STS13 is FNWN + headlines + OnWN: SMT is not redistributable (SentEval's set).
STS_DATASETS: dict[int, tuple[str, ...]] = {
    2012: ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    2013: ("FNWN", "headlines", "OnWN"),
    2014: ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    2015: ("answers-forums", "answers-students", "belief", "headlines", "images"),
    2016: ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
# SemEval-2017 tracks as (file, language of sentence1, language of sentence2); the paper's Figure 4 names.
STS17_TRACKS: dict[str, tuple[str, str, str]] = {
    "ar-ar": ("ar-ar.tsv", "ar", "ar"),
    "en-ar": ("ar-en.tsv", "en", "ar"),
    "es-es": ("es-es.tsv", "es", "es"),
    "en-es": ("es-en.tsv", "es", "en"),  # track 4a (SNLI), the one BGT's evaluate.py uses
    "en-es-wmt": ("es-en-wmt.tsv", "en", "es"),  # track 4b
    "en-en": ("en-en.tsv", "en", "en"),
    "en-tr": ("tr-en.tsv", "en", "tr"),
}
TATOEBA_CODES = {"fr": "fra", "es": "spa", "ar": "ara", "tr": "tur", "ja": "jpn"}
STSB_SPLITS = ("train", "dev", "test")
HARD_STS = ("hard-pos", "hard-neg")
