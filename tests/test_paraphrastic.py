"""SP and BILSTM: the margin loss with hardest in-batch negatives, pooling, training through the Trainer."""
import json

import numpy as np
import pytest
import torch

from workbench.data.batching import collate
from workbench.evaluation.sts import evaluate_sts
from workbench.models.folder import load
from workbench.models.kinds import build_model
from workbench.models.paraphrastic import Paraphrastic, ParaphrasticConfig
from workbench.training.recipes import TrainConfig
from workbench.training.trainer import Trainer


def config(setting="sp", **changes):
    return ParaphrasticConfig(vocab_size=40, setting=setting, dim=8, hidden=4, max_len=32, **changes)


def test_margin_loss_uses_the_hardest_other_translation():
    torch.manual_seed(0)
    model = Paraphrastic(config())
    en = collate([[5, 6, 3], [7, 8, 3], [9, 10, 3]], [[11, 3], [12, 3], [13, 3]], np.arange(3))
    out = model(en.en, en.xx)
    e = torch.nn.functional.normalize(model.encoders["semantic"](en.en)[0], dim=-1)
    f = torch.nn.functional.normalize(model.encoders["semantic"](en.xx)[0], dim=-1)
    cos = e @ f.t()
    expected = sum(max(0.0, 0.4 - cos[i, i].item() + max(cos[i, j].item() for j in range(3) if j != i))
                   for i in range(3))
    assert out["loss"].item() == pytest.approx(expected, rel=1e-5)


def test_sp_averages_embeddings_without_eos_and_bilstm_pools_over_real_tokens():
    torch.manual_seed(0)
    sp = Paraphrastic(config()).encoders["semantic"]
    tokens = torch.tensor([[5, 6, 3, 0]])
    np.testing.assert_allclose(sp(tokens)[0][0].detach(), sp.embed.weight[[5, 6]].mean(0).detach(), rtol=1e-6)
    dropped = Paraphrastic(config(dropout=0.5)).encoders["semantic"]  # per-token dropout in training only
    batch = torch.tensor([[5, 6, 3, 0], [3, 0, 0, 0]])
    manual = torch.stack([dropped.embed.weight[[5, 6]].mean(0), dropped.embed.weight[3]])
    torch.testing.assert_close(dropped.eval()(batch)[0], manual)
    assert not torch.allclose(dropped.train()(batch)[0], manual)
    for pooling in ("max", "mean"):
        lstm = Paraphrastic(config("bilstm", pooling=pooling)).encoders["semantic"].eval()
        short, padded = lstm(torch.tensor([[5, 6, 3]]))[0], lstm(torch.tensor([[5, 6, 3, 0, 0]]))[0]
        torch.testing.assert_close(short, padded)
        assert short.shape == (1, 8)
    with pytest.raises(ValueError, match="pooling 'sum'"):
        config("bilstm", pooling="sum")


def test_sp_encodes_id_lists_unpadded_to_the_vectors_of_its_padded_forward():
    """The encoder's bag paths (no padding, batches in the input's order; from raw text, the tokenizer's bags
    without EOS) give bit for bit what the module's own forward gives each sentence padded, on real sentences and on
    odd id lists (EOS alone, pads inside, a repeated EOS), and a torchrun rank's share of the batches is those rows
    of the whole."""
    encoder = load("sp-en-fr").encoder("semantic")
    sentences = ["A man is playing a guitar.", "", "Un homme joue de la guitare.", "?", "The cat sat on the mat .",
                 "a very long one " * 60]  # more pieces than max_len: cut
    ids = encoder.tokenizer.encode(sentences * 5, max_len=encoder.max_len) + [[3], [5, 3, 3], [0, 0, 3], [3, 7, 3]]
    with torch.no_grad():
        padded = np.stack([encoder.module(torch.tensor([i + [0] * 3]))[0][0].numpy() for i in ids])
    np.testing.assert_array_equal(encoder.encode_ids(ids, batch_size=4), padded)
    np.testing.assert_array_equal(encoder.encode(sentences * 5, batch_size=4), padded[:30])  # raw text: the bags
    share = encoder._encode_ids(ids, (-1,), 3, False, part=(1, 2))[-1]
    rows = [j for start in range(3, len(ids), 6) for j in range(start, min(start + 3, len(ids)))]
    np.testing.assert_array_equal(share[rows], padded[rows])
    share = encoder.encode_layers(sentences * 5, [-1], 3, out={-1: np.zeros((30, encoder.dim), np.float32)},
                                  part=(1, 2))[-1]
    rows = [j for j in rows if j < 30]
    np.testing.assert_array_equal(share[rows], padded[rows])


def test_trained_sp_beats_the_untrained_sp_on_sts(tmp_path):
    cfg = TrainConfig.from_preset("tiny", model="sp", max_pairs=20000, max_updates=150, valid_every=150,
                                  save_every=150)
    Trainer(cfg, tmp_path / "sp", show_progress=False).run()
    trained = load(tmp_path / "sp")
    torch.manual_seed(1)
    untrained = build_model(trained.cfg.to_dict())
    untrained.tokenizer = trained.tokenizer

    def sts(model):
        rows = evaluate_sts(model.encoder()).query("task == 'STS12-16' and metric == 'pearson' and dataset == 'all'")
        return rows.value.item()

    assert sts(trained) > sts(untrained) + 2
    rows = [json.loads(line) for line in (tmp_path / "sp" / "metrics.jsonl").read_text().splitlines()][1:]  # updates
    assert np.mean([r["loss"] for r in rows[-10:]]) < np.mean([r["loss"] for r in rows[:10]])


def test_bilstm_loss_falls_on_real_pairs(tmp_path):
    cfg = TrainConfig.from_preset("tiny", model="bilstm", max_pairs=3000, max_updates=30, valid_every=15)
    Trainer(cfg, tmp_path / "bilstm", show_progress=False).run()
    rows = [json.loads(line) for line in (tmp_path / "bilstm" / "metrics.jsonl").read_text().splitlines()]
    valid = [r["valid_loss"] for r in rows if "valid_loss" in r]
    assert valid[-1] < valid[0]
    encoder = load(tmp_path / "bilstm").encoder()
    assert encoder.dim == 128 and encoder.encode(["A test.", "Un test."]).shape == (2, 128)
