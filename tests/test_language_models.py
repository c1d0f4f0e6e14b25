"""Decoder language models and encoder-decoders read layer by layer (#74): a tiny GPT-2, Llama and T5 made here
(random weights, a byte-level BPE trained on real STS sentences; nothing downloaded), each layer's pooled vector
checked against transformers' own ``output_hidden_states`` for the sentence alone, in float32 and bfloat16."""

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

import workbench as wb  # noqa: E402
from workbench.checks import WorkbenchError  # noqa: E402
from workbench.data.sts import load_sts  # noqa: E402

KINDS = ("gpt2", "llama", "t5")


@pytest.fixture(scope="module")
def sentences():
    frames = load_sts(2016).values()
    return list(dict.fromkeys(s for df in frames for s in [*df["sentence1"], *df["sentence2"]]))[:400]


@pytest.fixture(scope="module")
def folders(sentences, tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(sentences, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<unk>", "<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>")
    made = {}
    for kind in KINDS:
        torch.manual_seed(0)
        if kind == "gpt2":
            model = transformers.GPT2Model(transformers.GPT2Config(
                vocab_size=len(fast), n_embd=32, n_layer=3, n_head=2, n_positions=128))
        elif kind == "llama":
            model = transformers.LlamaModel(transformers.LlamaConfig(
                vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128))
        else:
            model = transformers.T5Model(transformers.T5Config(
                vocab_size=len(fast), d_model=32, d_ff=64, d_kv=16, num_layers=3, num_heads=2,
                decoder_start_token_id=0, pad_token_id=0))
        folder = tmp_path_factory.mktemp(kind)
        model.save_pretrained(folder)
        fast.save_pretrained(folder)
        made[kind] = folder
    return made


def reference(folder, sentence: str, pooling: str, dtype) -> list[np.ndarray]:
    """Each layer of transformers' own forward pass over the sentence alone (no padding), pooled."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    model = transformers.AutoModel.from_pretrained(str(folder)).to(dtype).eval()
    if model.config.is_encoder_decoder:
        model = model.get_encoder()
    ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        states = model(input_ids=ids, output_hidden_states=True).hidden_states
    return [(s[0, -1] if pooling == "last" else s[0].mean(0)).float().numpy() for s in states]


@pytest.mark.parametrize("kind, pooling", [("gpt2", "last"), ("gpt2", "mean"), ("llama", "last"),
                                           ("llama", "mean"), ("t5", "mean")])  # an encoder's last token: its EOS
def test_every_layer_of_a_decoder_lm_or_an_encoder_decoder_is_transformers_hidden_state(kind, pooling, folders,
                                                                                         sentences):
    encoder = wb.hf_encoder(folders[kind], pooling=pooling)
    batch = sentences[:24]  # lengths differ, so each batch is padded
    layers = encoder.encode_layers(batch, encoder.layers, batch_size=8)
    assert encoder.layers == (0, 1, 2, 3)
    for i in (0, 5, 17):
        expected = reference(folders[kind], batch[i], pooling, torch.float32)
        for layer in encoder.layers:
            np.testing.assert_allclose(layers[layer][i], expected[layer], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_bfloat16_matches_transformers_in_bfloat16_and_has_its_own_fingerprint(kind, folders, sentences):
    pooling = "mean" if kind == "t5" else "last"
    half = wb.hf_encoder(folders[kind], pooling=pooling, dtype="bfloat16")
    full = wb.hf_encoder(folders[kind], pooling=pooling)
    assert half.fingerprint != full.fingerprint and half.name == full.name
    vectors = half.encode_layers(sentences[:8], half.layers, batch_size=4)
    expected = reference(folders[kind], sentences[3], pooling, torch.bfloat16)
    for layer in half.layers:
        assert vectors[layer].dtype == np.float32
        np.testing.assert_allclose(vectors[layer][3], expected[layer], rtol=2e-2, atol=2e-2)


def test_bad_options_are_one_sentence_before_any_work(folders):
    with pytest.raises(WorkbenchError, match="the first token of a decoder-only"):
        wb.hf_encoder(folders["gpt2"], pooling="cls")
    with pytest.raises(WorkbenchError, match=r"unknown dtype 'int8'; valid: bfloat16, float16, float32"):
        wb.hf_encoder(folders["gpt2"], dtype="int8")
    with pytest.raises(WorkbenchError, match="dtype 'float16' on the CPU"):
        wb.hf_encoder(folders["gpt2"], dtype="float16")
    if not torch.cuda.is_available():
        with pytest.raises(WorkbenchError, match="no CUDA device"):
            wb.hf_encoder(folders["gpt2"], device="cuda")


def test_the_cli_probes_a_decoder_lm_at_every_layer_with_last_token_pooling_in_bfloat16(folders, tmp_path, capsys):
    from workbench.cli import main
    out = tmp_path / "sweep.csv"
    assert main(["probe", "--encoder", f"hf:{folders['llama']}", "--pooling", "last", "--dtype", "bfloat16", "--task",
                 "length", "--layers", "all", "--no-control", "--train-size", "300", "--valid-size", "100",
                 "--test-size", "100", "--out", str(out)]) == 0, capsys.readouterr().err[-2000:]
    import pandas as pd
    table = pd.read_csv(out)
    assert sorted(table["layer"].unique()) == [0, 1, 2, 3]
    capsys.readouterr()
    assert main(["probe", "--model", "bgt-en-fr", "--pooling", "last", "--task", "length"]) == 2
    assert "--pooling, --dtype and --device apply to a Hugging Face --encoder" in capsys.readouterr().err


def _copy(folder, tmp_path, name):
    import shutil
    return shutil.copytree(folder, tmp_path / name)


def test_a_tokenizer_that_is_not_the_models_is_refused(folders, sentences, tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    other = Tokenizer(models.BPE(unk_token="<unk>"))
    other.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    other.train_from_iterator(sentences, trainers.BpeTrainer(
        vocab_size=900, special_tokens=["<unk>", "<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    folder = _copy(folders["gpt2"], tmp_path, "gpt2-other-tokenizer")  # 400 embedding rows
    transformers.PreTrainedTokenizerFast(tokenizer_object=other, unk_token="<unk>", eos_token="<eos>"
                                         ).save_pretrained(folder)
    with pytest.raises(WorkbenchError, match=r"its tokenizer has 9\d\d tokens but the model's embedding has 400 "
                                             "rows: it is another model's tokenizer"):
        wb.hf_encoder(folder, pooling="last")
    wb.hf_encoder(folders["gpt2"], pooling="last")  # its own: read


def test_a_model_type_that_is_not_its_architectures_is_refused(folders, tmp_path):
    import json
    folder = _copy(folders["llama"], tmp_path, "llama-as-mistral")
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaModel"]
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "mistral"}))  # the tensor names agree
    with pytest.raises(WorkbenchError, match="model_type 'mistral', but the architecture it names, LlamaModel, is a "
                                             "'llama' model"):
        wb.hf_encoder(folder, pooling="last")
