"""What ``train`` and ``data`` do (their arguments: :mod:`.commands`)."""
from __future__ import annotations

from pathlib import Path

from ..checks import WorkbenchError
from ..data.corpora import PAIRS
from ..data.languages import pair_name
from ..data.download import OPUS_URL, STS_URLS, download, opus_moses_to_tsv, sts_archive_to_tsv
from ..models.kinds import KINDS
from ..models.folder import latest_checkpoint, read_config
from ..paths import check_outside_models, data_dir
from ..probing.pair_tasks import add_pair, pivot_pair, write_cards
from ..training import train
from ..training.recipes import TrainConfig


def _recorded_recipe(args) -> Path | None:
    """What a bare ``--resume --out RUN`` continues with: the recipe RUN's latest checkpoint records, so a resume
    cannot silently switch to the default preset. --model/--pair/--preset beside it must agree with the record."""
    if not (args.resume and args.out):
        return None
    try:
        folder = latest_checkpoint(args.out)
    except WorkbenchError:
        return None  # no run there: the Trainer says so with the options that start one
    recorded = read_config(folder).get("train")
    if not isinstance(recorded, dict):
        return None  # a checkpoint from before recipes were recorded: the flags decide, as they did
    given = {"model": args.model, "pair": args.pair, "preset": args.preset}
    clash = [f"--{k} {v} (the run has {recorded.get(k)})" for k, v in given.items()
             if v is not None and v != recorded.get(k)]
    if clash:
        raise WorkbenchError(f"--resume continues {args.out} with the recipe it records; {', '.join(clash)} would "
                             "change it: drop those options, or start a new run in another --out")
    return folder / "config.json"


def _corpus_files(files: list[str]) -> tuple[str, str | None]:
    if len(files) > 2:
        raise WorkbenchError(f"--corpus takes one file (first<TAB>second lines) or two (a Moses pair, the first "
                             f"language's first), not {len(files)}")
    return files[0], (files[1] if len(files) == 2 else None)


def _print_added(record: dict) -> None:
    names = " – ".join(record.get("language_names", [record["language_name"]]))
    pivot = (f" (the English pivot: {record['pivot']['shared_sentences']:,} English sentences both share)"
             if record.get("pivot") else "")
    print(f"{record['pair']} ({names}): {record['pairs']:,} pairs from {', '.join(record['source'])}{pivot}"
          f" ({record['duplicates_dropped']:,} duplicates dropped, {record['pairs_after_length_filter']:,} within the "
          f"length filter)\ntasks: {', '.join(record['tasks']) or 'the shipped tasks of its languages'}")


def train_command(args) -> None:
    if args.resume and args.init_from:
        raise WorkbenchError(f"--resume continues the run in --out; --init-from {args.init_from} starts a new run "
                             "from a trained model: give one of them")
    if args.out:  # trained/ holds exported models: a run goes elsewhere (then `models export`)
        check_outside_models(args.out, "--out")
    if args.corpus:
        if not args.pair or args.pair == "all":
            raise WorkbenchError("--corpus is the bitext of one language pair: give it with --pair (en-XX, or two "
                                 "other languages such as fr-es)")
        _print_added(add_pair(args.pair, *_corpus_files(args.corpus)))
    changes = {"max_updates": args.max_updates, "max_seconds": args.max_seconds, "seed": args.seed}
    recipe = args.config or _recorded_recipe(args)
    if recipe:
        cfg = TrainConfig.from_file(recipe)
        cfg = TrainConfig(**{**cfg.__dict__, **{k: v for k, v in changes.items() if v is not None}})
    else:
        cfg = TrainConfig.from_preset(args.preset or "tiny", model=args.model or "bgt", pair=args.pair, **changes)
    out = Path(args.out or f"runs/{cfg.model}-{cfg.pair}-{cfg.preset}")
    final = train(cfg, out, resume=args.resume, init_from=args.init_from)
    if KINDS[cfg.model].fitted is not None:
        print(f"{cfg.model} {cfg.pair} ({cfg.preset}): {final['pairs']} pairs, weighted loss "
              f"{final['loss']:.1f}, {final['seconds']:.0f} s\nmodel: {out.resolve()}")
    elif final.get("finished"):
        print(f"{out.resolve()} is already finished at update {final['update']} (max_updates {cfg.max_updates}); "
              "a larger --max-updates with --resume continues it")
    else:
        print(f"{cfg.model} {cfg.pair} ({cfg.preset}): update {final.get('update')}, loss {final.get('loss', 0):.3f}, "
              f"valid loss {final.get('valid_loss', float('nan')):.3f}\nrun: {out.resolve()}")


def data_command(args) -> None:
    """Every ``data`` action but ``info`` (:mod:`.listing`)."""
    if args.action == "add-pair":
        _print_added(pivot_pair(args.pair, force=args.force) if args.pivot else
                     add_pair(args.pair, *_corpus_files(args.corpus), force=args.force))
        return
    root = Path(args.dest) if args.dest else data_dir()
    if args.what == "opus":
        for pair in map(pair_name, args.pair or PAIRS):  # any en-XX OPUS has: it joins the data folder's pairs
            language = pair.split("-")[1]
            url = OPUS_URL.format(corpus=args.corpus, version=args.version, pair=pair)
            archive = download(url, root / "downloads" / f"{args.corpus}-{args.version}-{pair}.zip")
            n = opus_moses_to_tsv(archive, language, root / "parallel" / f"{pair}.tsv.gz")
            tasks = write_cards(pair) if pair not in PAIRS and root == data_dir() else []  # its language's tasks
            print(f"{pair}: {n} pairs -> {root / 'parallel' / f'{pair}.tsv.gz'}"
                  + (f"; tasks: {', '.join(tasks)}" if tasks else ""))
    else:
        for year in args.years:
            archive = download(STS_URLS[year], root / "downloads" / f"STS{year}-en-test.zip")
            counts = sts_archive_to_tsv(archive, year, root / "eval" / "sts" / f"STS{year % 100}")
            print(f"STS{year % 100}: {counts}")


