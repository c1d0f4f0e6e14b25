"""A model card's page for people (``card.md``): written from its ``card.json`` alone, so the page can never say
what the card's numbers do not."""
from __future__ import annotations

from ..models.kinds import fitted
from ..probing.tasks import get_task


def _with_english(pair: str) -> bool:
    return pair.startswith(("en-", "all"))


def _dev_name(pair: str) -> str:
    """What chose a run's checkpoints, in words (:attr:`workbench.training.trainer.Trainer.dev_metric`)."""
    return "STS-B dev" if _with_english(pair) else "retrieval of its validation pairs"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 3600:.2f} h ({seconds:.0f} s)"


def _kept_decoders(info: dict) -> str:
    why = "style transfer; " if info.get("style_transfer") else ""
    return f"kept ({why}`workbench train --init-from {info['name']}` continues its training)"


def card_markdown(info: dict, config: dict) -> str:
    train, record = config.get("train", {}), info["training"]
    model_cfg = {k: v for k, v in config["model"].items() if k not in ("languages", "setting", "pad_id", "eos_id")}
    lines = [f"# {info['name']}", "",
             f"- **model**: `{info['model']}` on **"
             + ("every pair (en–fr, es, ar, tr, ja)" if info["pair"] == "all" else info["pair"])
             + "** (" + ("the shared parallel data's training split" if _with_english(info["pair"])
                         else "the training split of its corpus") + ")",
             f"- **preset**: `{info['preset']}`; model settings: "
             + ", ".join(f"{k}={v}" for k, v in model_cfg.items() if not isinstance(v, (list, dict))),
             (f"- **training**: {record['updates']} {one_go.counts} on {record['pairs_seen']} pairs"
              if (one_go := fitted(info["model"])) else
              f"- **training**: {record['updates']} updates, {record['pairs_seen']} pairs seen"
              + (f" (sampled from {train['max_pairs']} pairs)" if train.get("max_pairs") else "")
              + (f"; the checkpoint with the best semantic {_dev_name(info['pair'])} of a run of "
                 f"{record['run_updates']} updates" if record.get("checkpoint", "").startswith("best") else ""))
             + f", {_duration(record['train_seconds'])} of update time on {record['hardware']}",
             *([f"- **learning curve**: `curve.csv` ({_dev_name(info['pair'])} "
                f"{'per view' if _with_english(info['pair']) else 'of the semantic view'}, validation loss); "
                f"`workbench curve {info['name']}` draws it"] if info.get("curve") else []),
             f"- **weights**: float16, {info['megabytes']} MB"
             + ("" if one_go else "; decoders " + (_kept_decoders(info) if info["decoders"]
                                                                    else "dropped (encoders only)")), "",
             "Numbers: Pearson's r × 100 (STS) and test accuracy × 100 (logistic-regression probes, "
             f"{info['probing_sizes']['train']}/{info['probing_sizes']['valid']}/{info['probing_sizes']['test']} "
             "sentences). Recomputed by the tests from these weights.", ""]
    if info.get("halves"):
        lines += _halves_markdown(info["halves"])
    if info.get("style_transfer"):
        lines += _transfer_markdown(info["style_transfer"])
    for section in ("first_language", "languages"):
        if info.get(section):
            lines += _languages_markdown(info[section])
    for view, entry in info["views"].items():
        lines += _view_markdown(view, entry)
    return "\n".join(lines)


def _view_markdown(view: str, entry: dict) -> list[str]:
    """One view's section: its fingerprint, then each suite and the probes it was measured on."""
    lines = [f"## view `{view}`", "", f"fingerprint `{entry['fingerprint'][:16]}`", ""]
    if "sts" in entry:
        lines += ["| " + " | ".join(entry["sts"]) + " | Hard+ | Hard− | Hard avg |",
                  "|" + "---|" * (len(entry["sts"]) + 3),
                  "| " + " | ".join(f"{v:.1f}" for v in entry["sts"].values())
                  + f" | {entry['hard_sts'].get('hard+', float('nan')):.1f} | "
                    f"{entry['hard_sts'].get('hard-', float('nan')):.1f} | {entry['hard_sts']['avg']:.1f} |", ""]
    if "tatoeba" in entry:
        lines += ["Tatoeba similarity-search error (%, 1000 pairs per language):", "",
                  "| " + " | ".join(f"{lang}→en | en→{lang}" for lang in entry["tatoeba"]) + " |",
                  "|" + "---|" * (2 * len(entry["tatoeba"])),
                  "| " + " | ".join(f"{e['xx->en']:.1f} | {e['en->xx']:.1f}" for e in entry["tatoeba"].values())
                  + " |", ""]
    if "sts17" in entry:
        lines += ["STS17 (Pearson's r × 100): " + ", ".join(f"{track} {v:.1f}" for track, v in entry["sts17"].items()),
                  ""]
    if "held_out_retrieval" in entry:
        lines += ["Similarity-search error on the pair's held-out test pairs (%): " + ", ".join(
            f"{direction.replace('->', '→')} {v:.1f}" for direction, v in entry["held_out_retrieval"].items()), ""]
    if entry["probing"]:
        lines += ["| " + " | ".join(get_task(t).title for t in entry["probing"]) + " |",
                  "|" + "---|" * len(entry["probing"]),
                  "| " + " | ".join(f"{v:.1f}" for v in entry["probing"].values()) + " |", ""]
    return lines


def _halves_markdown(section: dict) -> list[str]:
    def cell(value: list) -> str:
        return f"{value[0]:+.1f} [{value[1]:+.1f}, {value[2]:+.1f}]"

    form = section["english_minus_semantic"]
    return ["## both halves", "", "English view minus semantic view on Table 3's form tasks (probe accuracy) and "
            "semantic minus English on STS12–16, × 100 with paired bootstrap 95% CIs; the paper's English encoder "
            "wins every form task and trails on STS.", "",
            "| " + " | ".join(get_task(t).title for t in form) + " | STS12–16 sem − en |", "|" + "---|" * (len(form) + 1),
            "| " + " | ".join(cell(v) for v in form.values()) + f" | {cell(section['semantic_minus_english_sts'])} |", ""]


def _transfer_markdown(section: dict) -> list[str]:
    lines = ["## style transfer", "", "`workbench transfer --eval` on its fixed held-out pairs (200 for shipped "
             "models; beam 5): share of pairs, % with bootstrap 95% CI; KL in nats per sentence.", "",
             "| metric | value |", "|---|---|"]
    lines += [f"| {metric} | {value if not isinstance(value, list) else f'{value[0]} ({value[1]}–{value[2]})'} |"
              for metric, value in section.items()]
    return lines + [""]


def _languages_markdown(section: dict) -> list[str]:
    language = section["language"]
    lines = [f"## {language}'s own tasks", "", f"The semantic encoder and the {language} encoder on tasks built from "
             f"held-out {language} sentences (`workbench probes list`): test accuracy × 100 [95% CI], selectivity "
             "over a control task in brackets.", "",
             f"| task | majority | semantic | {language} encoder |", "|---|---:|---:|---:|"]
    for task, entry in section["tasks"].items():
        cells = [f"{v[0]:.1f} [{v[1]:.1f}, {v[2]:.1f}] ({v[3]:+.1f})" for v in (entry["semantic"], entry[language])]
        lines.append(f"| {get_task(task).title} | {entry['majority']:.1f} | {cells[0]} | {cells[1]} |")
    if section.get("across"):
        lines += ["", f"The semantic encoder's probe trained on the English version of a task, tested on the "
                  f"{language} version's test sentences (the labels both share), beside the probe trained on "
                  f"{language} itself; ratio: the share of the in-language probe's lead over the majority that the "
                  "English probe keeps.", "", "| task | labels | majority | English probe | own probe | ratio |",
                  "|---|---|---:|---:|---:|---:|"]
        for task, entry in section["across"].items():
            cells = [f"{v[0]:.1f} [{v[1]:.1f}, {v[2]:.1f}]" for v in (entry["english probe"], entry["own probe"])]
            ratio = "–" if entry["ratio"] is None else f"{entry['ratio']:.2f}"
            lines.append(f"| {get_task(task).title} | {entry['labels']} | {entry['majority']:.1f} | {cells[0]} | "
                         f"{cells[1]} | {ratio} |")
    return lines + [""]
