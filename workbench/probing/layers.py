"""Where in a network a property lives: the same probe at every layer (Tenney et al. 2019; Jawahar et al. 2019).

:func:`probe_layers` probes each task at each layer of an encoder that offers layers (a Hugging Face encoder,
or a Transformer view of our models: ``load("bgt-en-fr").encoder("semantic")``), encoding every task's sentences
once for all layers (one forward pass, one cache entry per layer), and returns the tidy probing rows with a
``layer`` column. :func:`layer_profile` summarises each task: where it is strongest, where depth loses it and,
for a property gained with depth, Tenney's expected layer — the mean layer weighted by the accuracy each layer
adds over the one below, E[l] = Σ l·Δ(l) / Σ Δ(l) with Δ(l) = max(0, acc(l) − acc(l − 1)): where along the
network the property is picked up, rather than where it is best.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from ..cache import cache_layers
from ..paths import process_rank
from ..checks import WorkbenchError
from ..encoders import Encoder, LayeredEncoder
from ..progress import progress_bar
from .build import ProbingDataset, build_task, probing_sizes
from .own import dataset_or_card
from .probe import check_options, probe


def encoder_layers(encoder: Encoder, layers: str | Sequence[int] = "all") -> list[int]:
    """The layers of ``encoder`` a sweep visits: ``"all"`` (0…L, and -1 where the sentence embedding is not
    simply the top layer, as BGT's ``mu``), or the ones named (each checked)."""
    if not isinstance(encoder, LayeredEncoder):
        raise WorkbenchError(f"encoder {encoder.name!r} offers no layers to sweep; layer sweeps need a Hugging "
                             "Face encoder (workbench.hf_encoder) or a Transformer view of a trained model "
                             "(load(name).encoder(view))")
    offered = encoder.layers
    if isinstance(layers, str):
        if layers != "all":
            raise WorkbenchError(f"layers={layers!r}: give 'all' or a list of layer numbers ({list(offered)})")
        return list(offered)
    chosen = [encoder.at_layer(layer).layer for layer in layers]  # at_layer refuses a layer that is not there
    if not chosen:
        raise WorkbenchError(f"no layers given; {encoder.name!r} offers {list(offered)}")
    return list(dict.fromkeys(chosen))


def probe_layers(encoder: Encoder, tasks, layers: str | Sequence[int] = "all", show_progress: bool = True,
                 sizes: dict[str, int] | str | None = None, n_jobs: int = 1, **probe_options) -> pd.DataFrame:
    """Probe each of ``tasks`` (names, own tasks or built datasets, as :func:`probe` takes; or one of them) at
    each of ``layers`` of ``encoder``: the rows of :meth:`ProbeResult.to_frame` with ``layer`` and
    ``layer_encoder`` columns (``sizes`` and ``probe_options`` — ``classifier``, ``control``, ``mdl``, ``seed``, ...
    — as for :func:`probe`).

    ``n_jobs``: the layers' probes of a task are fitted by that many joblib workers (threads by default: the
    embeddings are read from the cache, and the fits release the GIL; -1: one per core); the results are the same
    as with one. Inside ``joblib.parallel_config(backend=...)`` another joblib backend (Dask, Ray) takes them.
    Under torchrun (``torchrun --nproc_per_node=N -m workbench.cli probe ... --layers all``) the processes share
    the encoding, batch by batch, and the first fits the probes (the others return an empty frame)."""
    tasks = [tasks] if isinstance(tasks, (str, Path, pd.DataFrame, ProbingDataset)) else list(tasks)
    if not tasks:
        raise WorkbenchError(f"no tasks to probe {encoder.name!r} on: give one or more (task_names(), or your own)")
    resolved = [dataset_or_card(task, **({"sizes": sizes} if sizes else {})) for task in tasks]  # fail early
    for _, card in resolved:
        card.check_encoder(encoder)
    check_options(probe_options.get("classifier", "logreg"), probe_options.get("control", True),
                  probe_options.get("mdl", False))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise WorkbenchError(f"n_jobs={n_jobs!r}: give a whole number of workers (1, the default: one at a time; "
                             "-1: one per core)")
    chosen = encoder_layers(encoder, layers)
    name = encoder.base_name  # the network, whichever layer it was read at
    frames, encoded = [], []
    bar = progress_bar(total=len(resolved) * len(chosen), desc=f"layers of {encoder.name}", unit="probe",
                       disable=not show_progress)  # one bar, a step per (task, layer): fitting a layer shows progress
    for dataset, card in resolved:  # every task encoded first: under torchrun, what the processes do together
        if dataset is None:
            dataset = build_task(card, sizes=probing_sizes(sizes))
        bar.set_postfix_str(f"{card.name}: encoding")
        sentences = list(dict.fromkeys(dataset.data["sentence"]))
        encoded.append((dataset, card, cache_layers(encoder, sentences, chosen, show_progress=show_progress)))
    if process_rank()[0] > 0:  # the others shared the encoding; the first fits the probes
        bar.close()
        return pd.DataFrame()
    for dataset, card, views in encoded:
        bar.set_postfix_str(f"{card.name}: fitting {len(views)} layers" + (f", {n_jobs} at a time" if n_jobs != 1
                                                                           else ""))
        fits = Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
            delayed(probe)(view, dataset, **probe_options) for view in views)
        for layer, view, result in zip(chosen, views, fits):  # in layer order, as each is done
            frames.append(result.to_frame().assign(encoder=name, layer=layer, layer_encoder=view.name))
            bar.update()
    bar.close()
    return pd.concat(frames, ignore_index=True)


def expected_layer(layers: Sequence[int], accuracies: Sequence[float]) -> float:
    """Tenney et al.'s expected layer over consecutive layers 0…L: Σ l·Δ(l) / Σ Δ(l) with
    Δ(l) = max(0, acc(l) − acc(l−1)). Only gains count: with losses in the sum the weights are no distribution and
    the "expected" layer can fall outside 0…L (NaN when no layer adds anything)."""
    order = np.argsort(layers)
    layer, accuracy = np.asarray(layers)[order], np.asarray(accuracies, dtype=float)[order]
    gains = np.clip(np.diff(accuracy), 0, None)
    if not gains.any():
        return float("nan")
    return float((layer[1:] * gains).sum() / gains.sum())


def layer_profile(frame: pd.DataFrame, metric: str = "accuracy") -> pd.DataFrame:
    """Per encoder and task of a :func:`probe_layers` frame, the questions a layer sweep asks (docs/probing.md#layers):

    - ``peak_layer`` / ``peak``: where the property is strongest (``first`` and ``top``: its value at layer 0 and
      at the top layer);
    - ``lost_layer``: the first layer after the peak whose value falls below the peak's 95% CI (NaN: kept to the
      top), i.e. where depth loses it;
    - ``trend``: ``"at chance"`` where even the peak's 95% CI reaches down to the majority baseline (no layer
      holds the property), ``"flat"`` where all layers lie within the peak's CI, else ``"gained"`` where the gains
      from layer to layer outweigh the losses and ``"lost"`` where they do not;
    - ``expected_layer``: Tenney et al.'s expected layer, only where the property is gained (for a property that
      is lost with depth, the layer of its few small gains answers no question)."""
    rows = []
    majority = frame[frame["metric"] == "majority"].groupby(["encoder", "task"])["value"].first()
    for (encoder, task), group in frame[frame["metric"] == metric].groupby(["encoder", "task"], sort=False):
        ordered = group[group["layer"] >= 0].sort_values("layer")
        peak = group.loc[group["value"].idxmax()]
        values = ordered["value"].to_numpy(dtype=float)
        steps = np.diff(values)
        gained = steps.clip(min=0).sum() > -steps.clip(max=0).sum()
        floor = peak["ci_low"] if "ci_low" in peak and pd.notna(peak["ci_low"]) else peak["value"]
        chance = metric == "accuracy" and floor <= majority.get((encoder, task), -np.inf)
        trend = ("at chance" if chance else "flat" if len(values) and values.min() >= floor else
                 "gained" if gained else "lost") if len(values) > 1 else ""
        below = ordered[(ordered["layer"] > peak["layer"]) & (ordered["value"] < floor)]
        rows.append({"encoder": encoder, "task": task, "metric": metric, "peak_layer": int(peak["layer"]),
                     "peak": float(peak["value"]),
                     "first": float(values[0]) if len(values) else np.nan,
                     "top": float(values[-1]) if len(values) else np.nan,
                     "lost_layer": int(below["layer"].iloc[0]) if len(below) else np.nan,
                     "trend": trend,
                     "expected_layer": expected_layer(ordered["layer"].to_list(), values.tolist())
                     if trend == "gained" else np.nan})
    return pd.DataFrame(rows)
