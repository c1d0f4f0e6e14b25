"""Encoding throughput (sentences/s) on the same real sentences, side by side.

    .venv/bin/python benchmarks/encode_throughput.py [--n 20000] [--models NAME_OR_RUN ...] [--named NAME ...]

Takes about 11 minutes with its defaults on 2 CPU cores (every shipped model, three timings each); ``--n 2000``
and a few ``--models`` take under a minute.

By default: the shipped SP, BILSTM, b-WMF, multilingual NMT and BGT (semantic view) models, the untrained
encoders, and all-MiniLM-L6-v2 when the 'minilm' extra is installed. Two rates per encoder:

* ``text_per_s``: from raw text, as a user pays it (Moses + sentencepiece + network);
* ``ids_per_s``: from sentencepiece ids (the network alone; what the SP paper's 855k sentences/s on a GPU times).

``x_bgt`` divides each rate by the BGT semantic encoder's. A warm-up call precedes the timings; each rate is the
best of three (a single timing of a fraction of a second varied by ±10% between runs here). Then the
preprocessing alone: sacremoses one sentence at a time (how it was done before), the rules of
:mod:`workbench.data.moses` as regular expressions over the batch and compiled (the same output), and
sentencepiece; last, each SP-style encoder (a bag of pieces) from raw text against its own sentencepiece model
alone, timed in turn (``--rounds``).

Where SP's time from raw text goes (2 cores, nothing else running, 20,000 en-fr sentences, 2026-12-06, best of 9,
one call of each part): the compiled Moses rules with lower-casing 0.009 s (0.015 s in one thread; the regular
expressions took 0.058 s), sentencepiece's batch call 0.035-0.040 s (two threads; 0.059 s in one), its id lists
into one array 0.0009 s in C (``encode_bags``; 0.0115 s in numpy, and the lists with EOS took 0.0065 s and masks
0.003 s more), freeing the lists 0.003 s, the averaging 0.007-0.013 s in batches of 1,024 (a gather of 2 KB rows:
memory-bound, so it varies most with the machine's neighbours) and the output's first touch 0.003-0.005 s. Raw
text runs at 0.45-0.63x bare sentencepiece side by side, most runs 0.52-0.60x (6520b3b, before the compiled
rules and bags: 0.24-0.27x in the same minutes). Running sentencepiece on the next chunk in a thread while this chunk
is averaged was slower (0.26-0.36x: both want both cores).

A cache of each word's ids (Moses reads a word's neighbours only through whether it starts or ends the sentence
and, after a period, the next word's first character; sentencepiece never cuts across a space) was tried and
dropped (2026-12-06, same 20,000 sentences, ids only): 0.54-0.58x bare sentencepiece once every word was cached,
but 0.13-0.29x from an empty cache or after 20,000 other sentences (half the words still new), slower than these
rules; and sentencepiece breaks ties between equally likely cuts by the sentence around a word ("6000" as
"_6 00 0" or "_6 0 00"), so 25 of 200,000 sentences came out with the same pieces in another order.
"""
import argparse
import time

import pandas as pd
import torch
from sacremoses import MosesTokenizer

from workbench.data.corpora import load_splits
from workbench.data import moses
from workbench.data.tokenizer import preprocess_many
from workbench.encoders import named_encoder, NAMED_ENCODERS
from workbench.checks import WorkbenchError
from workbench.models.folder import load
from workbench.models.pins import shipped

DEFAULT_MODELS = ("sp-en-fr", "bilstm-en-fr", "wmf-en-fr", "nmt-all", "bgt-en-fr")


_moses = MosesTokenizer(lang="en")


def _sacremoses(sentence: str) -> str:
    return _moses.tokenize(sentence, escape=False, return_str=True).lower()


def _regular_expressions(sentences: list[str]) -> list[str]:
    """:func:`preprocess_many` by the regular expressions, as where the C rules were not built."""
    compiled, moses._compiled = moses._compiled, None
    try:
        return preprocess_many(sentences)
    finally:
        moses._compiled = compiled


def rate(n: int, call, repeat: int = 3) -> float:
    """Sentences per second of ``call`` (``n`` sentences), the best of ``repeat`` timings."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return n / min(seconds)


def against_sentencepiece(encoder, sentences: list[str], batch_size: int, rounds: int) -> float:
    """Raw text through ``encoder`` against its sentencepiece model alone on the same sentences (preprocessed), timed
    in turn ``rounds`` times so that both see the same machine (here its speed drifts by ±20% within minutes): the
    best bare time over the best encoding time."""
    lowered = preprocess_many(sentences)
    bare, text = [], []
    for _ in range(rounds):
        for times, call in ((bare, lambda: encoder.tokenizer.sp.encode(lowered)),
                            (text, lambda: encoder.encode(sentences, batch_size=batch_size))):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
    return min(bare) / min(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="number of real sentences to encode (en-fr training "
                        "pairs, both sides)")
    parser.add_argument("--models", nargs="*", help="shipped names, runs, checkpoints or WMF folders (default: "
                        + ", ".join(DEFAULT_MODELS) + ", those shipped)")
    parser.add_argument("--named", nargs="*", choices=list(NAMED_ENCODERS), default=list(NAMED_ENCODERS),
                        help="named encoders to time beside them (default: all; the untrained 512-d Transformer and "
                             "MiniLM run at tens of sentences/s here, so they dominate the run)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=9, help="turns of the side-by-side timing against "
                        "sentencepiece (default 9)")
    args = parser.parse_args()
    sentences = [s for pair in load_splits("en-fr")["train"][: (args.n + 1) // 2] for s in pair][: args.n]
    models = args.models if args.models is not None else [m for m in DEFAULT_MODELS if m in shipped()]
    encoders = [load(name).encoder("semantic") for name in models]
    for name in args.named:
        try:
            encoders.append(named_encoder(name))
        except WorkbenchError as err:
            print(f"skipped {name}: {err}")
    rows = []
    for encoder in encoders:
        encoder.encode(sentences[:64], batch_size=args.batch_size)  # warm-up
        row = {"encoder": encoder.name, "dim": encoder.dim,
               "text_per_s": rate(len(sentences), lambda: encoder.encode(sentences, batch_size=args.batch_size))}
        if hasattr(encoder, "encode_ids"):
            ids = encoder.tokenizer.encode(sentences, max_len=encoder.max_len)
            row["ids_per_s"] = rate(len(ids), lambda: encoder.encode_ids(ids, batch_size=args.batch_size))
        rows.append(row)
    df = pd.DataFrame(rows)
    bgt = df[df.encoder.str.startswith("bgt-")]
    base = bgt.iloc[0] if len(bgt) else df.iloc[0]
    for column in ("text_per_s", "ids_per_s"):
        df[f"{column[:-6]}_x_bgt"] = df[column] / base[column]
    tokenizer = next((e.tokenizer for e in encoders if hasattr(e, "tokenizer")), None)
    sample = sentences[:5000]  # sacremoses one sentence at a time (the preprocessing before the batched rules)
    stages = {"moses (sacremoses, per sentence)": rate(len(sample), lambda: [_sacremoses(s) for s in sample]),
              "moses (regular expressions)": rate(len(sentences), lambda: _regular_expressions(sentences))}
    if moses._compiled is not None:
        stages["moses (compiled)"] = rate(len(sentences), lambda: preprocess_many(sentences))
    if tokenizer is not None:
        lowered = preprocess_many(sentences)
        stages["sentencepiece"] = rate(len(sentences), lambda: tokenizer.sp.encode(lowered))
    print(f"{len(sentences)} real sentences, CPU, {torch.get_num_threads()} threads, batch {args.batch_size}; "
          f"ratios against {base.encoder}\n")
    print(df.round(2).to_string(index=False))
    print("\npreprocessing alone (sentences/s): " + ", ".join(f"{k} {v:,.0f}" for k, v in stages.items()))
    bag = [e for e in encoders if hasattr(getattr(e, "module", None), "pooled_flat")]  # SP-style: a bag of pieces
    if bag:
        print("\nfrom raw text / bare sentencepiece, side by side: " + ", ".join(
            f"{e.name} {against_sentencepiece(e, sentences, args.batch_size, args.rounds):.2f}x" for e in bag))


if __name__ == "__main__":
    main()
