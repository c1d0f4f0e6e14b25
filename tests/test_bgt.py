"""The BGT model and its ablations: shapes, masks, losses, the KL schedule, each ablation's difference."""
import pytest
import torch

from workbench.data.batching import collate
from workbench.checks import WorkbenchError
from workbench.models.transformer import shift_right
from workbench.models.bgt import BGT, Guided, semantic_side
from workbench.models.bgt_config import SETTINGS, BGTConfig
from workbench.models.losses import kl_to_standard_normal, token_loss

V = 50


def config(setting="bgt", **changes):
    return BGTConfig(**{"vocab_size": V, **changes}, setting=setting, d_model=16, ffn_dim=32, n_heads=2, enc_layers=1,
                     latent_dim=8, dropout=0.0, max_len=32, kl_x0=100)


def batch(seed=0, B=4):
    g = torch.Generator().manual_seed(seed)
    en = [torch.randint(4, V, (int(n),), generator=g).tolist() + [3] for n in torch.randint(2, 9, (B,), generator=g)]
    xx = [torch.randint(4, V, (int(n),), generator=g).tolist() + [3] for n in torch.randint(2, 9, (B,), generator=g)]
    return collate(en, xx, list(range(B)))


def backward_both(base, other, b):
    """Both models' training terms on batch ``b`` with the same random draws, each loss backpropagated."""
    outs = []
    for model in (base, other):
        torch.manual_seed(1)
        outs.append(model(b.en, b.xx, 50))
        outs[-1]["loss"].backward()
    return outs


def twin_with(english, french, **changes):
    """The shipped en-fr tokenizer, a small BGT, its twin with ``changes`` (the same weights: a setting that adds no
    parameters), both in training mode, and the sentences as a batch."""
    from workbench.data.tokenizer import Tokenizer
    from workbench.models.folder import model_path
    tokenizer = Tokenizer(model_path("bgt-en-fr") / "spm.model")
    torch.manual_seed(0)
    base = BGT(config(vocab_size=tokenizer.vocab_size))
    twin = BGT(config(vocab_size=tokenizer.vocab_size, **changes))
    assert twin.state_dict().keys() == base.state_dict().keys()  # no parameters of its own
    twin.load_state_dict(base.state_dict())
    base.train(), twin.train()
    batch = collate(tokenizer.encode(english), tokenizer.encode(french), list(range(len(english))))
    return tokenizer, base, twin, batch


def mean_grad(model, encoder):
    """The gradient on an encoder's posterior-mean layer: what a loss term pushes."""
    return model.encoders[encoder].hidden2mean.weight.grad


def test_shapes_and_conditioning_widths():
    torch.manual_seed(0)
    model = BGT(config())
    b = batch()
    mu, logv = model.encoders["semantic"](b.en)
    assert mu.shape == logv.shape == (4, 8)
    assert model.decoders["en"].out.shape == (V, 2 * 8 + 16)  # W_out: V × (C + d), C = 2L
    assert model.decoders["en->fr"].out.shape == (V, 8 + 16)
    logits = model.decoders["en"](shift_right(b.en, 3, 0), torch.zeros(4, 16))
    assert logits.shape == (*b.en.shape, V)
    assert set(model.views) == {"semantic", "en", "fr"}


def test_decoder_is_causal_and_encoder_ignores_padding():
    torch.manual_seed(0)
    model = BGT(config()).eval()
    b = batch()
    cond = torch.randn(4, 16)
    prev = shift_right(b.en, 3, 0)
    changed = prev.clone()
    changed[:, 3] = 7
    a, c = model.decoders["en"](prev, cond), model.decoders["en"](changed, cond)
    assert torch.equal(a[:, :3], c[:, :3]) and not torch.equal(a[:, 3:], c[:, 3:])
    single = model.encoders["semantic"](b.en[:1, : int((b.en[0] != 0).sum())])[0]
    padded = model.encoders["semantic"](torch.nn.functional.pad(b.en[:1], (0, 5)))[0]
    torch.testing.assert_close(single, padded, rtol=1e-5, atol=1e-6)


def test_english_vae_decodes_a_sampled_z_in_training_and_english_ae_does_not():
    b = batch()
    for setting, differs in (("english_vae", True), ("english_ae", False), ("bgt", False)):
        torch.manual_seed(0)
        model = BGT(config(setting)).train()  # dropout 0: only sampling can make two passes differ
        first, second = (model(b.en, b.xx, update=50)["loss"].item() for _ in range(2))
        assert (first != second) is differs, setting
        model.eval()
        assert model(b.en, b.xx, 50)["loss"] == model(b.en, b.xx, 50)["loss"]  # mu in eval
    sampled = BGT(config("bgt", decoder_latent="sample")).train()
    assert sampled(b.en, b.xx, 50)["loss"] != sampled(b.en, b.xx, 50)["loss"]


def test_decoder_logits_equal_the_concatenated_form_w_out_c_x():
    torch.manual_seed(0)
    dec = BGT(config()).eval().decoders["en"]
    b = batch()
    cond, prev = torch.randn(4, 16), shift_right(b.en, 3, 0)
    x = dec.embed(prev)
    for layer in dec.layers:
        x = layer(x, cond)
    reference = torch.cat([cond[:, None, :].expand(-1, x.shape[1], -1), x], dim=-1) @ dec.out.t()  # W_out [c ; x]
    torch.testing.assert_close(dec(prev, cond), reference, rtol=1e-5, atol=1e-5)
    keep = b.en != 0
    torch.testing.assert_close(dec(prev, cond, keep), reference[keep], rtol=1e-5, atol=1e-5)


def test_kl_schedule_and_formula():
    model = BGT(config())
    assert [model.kl_weight(u) for u in (0, 50, 100, 500)] == [0.0, 0.5, 1.0, 1.0]
    assert BGT(config("bgt_no_prior")).kl_weight(50) == 0.0
    mu, logv = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    expected = 0.5 * (1.0 + (torch.e - 1 - 1))  # 0.5 (mu² + e^logv − 1 − logv) summed
    assert kl_to_standard_normal(mu, logv).item() == pytest.approx(expected)


def test_label_smoothing_matches_fairseq_form():
    logits = torch.randn(1, 3, 5)
    target = torch.tensor([[1, 2, 0]])
    loss, nll = token_loss(logits, target, pad_id=0, smoothing=0.1), token_loss(logits, target, 0, 0.0)
    logp = logits.log_softmax(-1)[0, :2]
    expected_nll = -(logp[0, 1] + logp[1, 2])
    assert nll.item() == pytest.approx(expected_nll.item(), rel=1e-5)
    assert loss.item() == pytest.approx((0.9 * expected_nll - 0.1 / 5 * logp.sum()).item(), rel=1e-5)


def parameters_of(model):
    return {name.split(".")[0] + "." + name.split(".")[1] for name, _ in model.named_parameters()}


def test_each_ablation_differs_in_the_intended_way():
    torch.manual_seed(0)
    b = batch()
    modules = {s: parameters_of(BGT(config(s))) for s in SETTINGS}
    assert modules["bgt"] == {"encoders.semantic", "encoders.en", "encoders.fr", "decoders.en", "decoders.fr",
                              "decoders.en->fr", "decoders.fr->en"}
    assert modules["bgt_no_prior"] == modules["bgt"]
    assert modules["bgt_no_langvars"] == modules["bgt"] - {"encoders.en", "encoders.fr"}
    assert modules["bilingual_trans"] == {"encoders.semantic", "decoders.en->fr", "decoders.fr->en"}
    assert modules["english_trans"] == {"encoders.semantic", "decoders.en->fr"}
    assert modules["english_ae"] == modules["english_vae"] == {"encoders.semantic", "decoders.en"}
    models = {s: BGT(config(s)) for s in SETTINGS}
    out = {s: model(b.en, b.xx, update=50) for s, model in models.items()}
    for s in ("bgt_no_prior", "bilingual_trans", "english_trans", "english_ae"):
        assert out[s]["kl"].item() == 0 and models[s].schedule(50)["kl_weight"] == 0  # no prior, no KL term
    for s in ("bgt", "bgt_no_langvars", "english_vae"):
        assert out[s]["kl"].item() > 0 and models[s].schedule(50)["kl_weight"] == 0.5
    assert out["bilingual_trans"]["recon"].item() == 0 and out["english_trans"]["recon"].item() == 0
    assert out["english_ae"]["trans"].item() == 0
    # english models never look at the foreign side
    changed_xx = b.xx.clone()
    changed_xx[b.xx > 3] = 5
    ae = BGT(config("english_ae"))
    assert ae(b.en, b.xx)["loss"].item() == ae(b.en, changed_xx)["loss"].item()
    assert BGT(config("bgt_no_langvars")).decoders["en"].out.shape[1] == 8 + 16  # z_sem only


def test_semantic_side_alternates_and_loss_is_per_sentence_sum():
    torch.manual_seed(0)
    model = BGT(config())
    b = batch()
    side = BGT(config(sem_side="microbatch"))
    side.load_state_dict(model.state_dict())
    english, foreign = (side(b.en, b.xx, 50, step)["loss"] for step in (0, 1))  # whole micro-batch one side
    assert english.item() != foreign.item()  # the generative path really reads the chosen side
    halves = sum(model(b.en[i:i + 2], b.xx[i:i + 2], 50)["loss"] for i in (0, 2))
    whole = model(b.en, b.xx, 50)["loss"]
    # summed over examples (the trainer divides by pairs); halves may be padded less, hence the tolerance
    assert whole.item() == pytest.approx(halves.item(), rel=1e-4)


def test_overfitting_a_few_pairs_and_greedy_equals_beam_one():
    torch.manual_seed(0)
    model = BGT(config("english_ae", label_smoothing=0.0))
    b = batch(B=4)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(300):
        optimiser.zero_grad()
        out = model(b.en, b.xx)
        out["loss"].backward()
        optimiser.step()
    assert out["recon"].item() / (b.en != 0).sum().item() < 0.05  # ≈ 0 nats per token
    model.eval()
    mu, _ = model.encoders["semantic"](b.en)
    greedy = model.generate(mu, decoder="en", max_len=12, beam=1)
    beam = model.generate(mu, decoder="en", max_len=12, beam=3)
    references = [row[row != 0].tolist()[:-1] for row in b.en]
    assert greedy == references and beam == references
    with pytest.raises(ValueError, match="no decoder 'fr'"):
        model.generate(mu, decoder="fr")


def test_style_transfer_conditioning_takes_both_latents():
    torch.manual_seed(0)
    model = BGT(config()).eval()
    b = batch()
    z_sem, _ = model.encoders["semantic"](b.en)
    z_style, _ = model.encoders["en"](b.en.flip(0))
    out = model.generate(z_sem, z_style, decoder="en", max_len=5, beam=2)
    assert len(out) == 4 and all(len(ids) <= 5 for ids in out)
    with pytest.raises(ValueError, match="conditioned on 16 dimensions, got 8; pass z_lang"):
        model.generate(z_sem, decoder="en")


def test_guided_decoding_weighs_the_style_latent_up_and_the_away_latent_down():
    torch.manual_seed(0)
    model = BGT(config()).eval()
    b = batch()
    z_sem, _ = model.encoders["semantic"](b.en)
    z_style, _ = model.encoders["en"](b.en.flip(0))
    z_source, _ = model.encoders["en"](b.en)
    decoder, prefix = model.decoders["en"], b.en[:, :3]
    toward, away = torch.cat([z_style, z_sem], -1), torch.cat([z_source, z_sem], -1)
    logp = {name: torch.log_softmax(decoder(prefix, cond)[:, -1], -1) for name, cond in (("toward", toward),
                                                                                        ("away", away))}
    def guided(weight):  # its log-probabilities after the prefix, fed position by position
        decoding = Guided(decoder, weight).incremental(torch.cat([toward, away], -1))
        return [decoding.step(prefix[:, i]) for i in range(prefix.shape[1])][-1]

    torch.testing.assert_close(guided(0.5), 1.5 * logp["toward"] - 0.5 * logp["away"])
    torch.testing.assert_close(guided(0.0), logp["toward"])
    plain = model.generate(z_sem, z_style, decoder="en", max_len=6, beam=2)
    assert model.generate(z_sem, z_style, decoder="en", max_len=6, beam=2, z_away=z_source, guidance=0.0) == plain
    assert model.generate(z_sem, z_style, decoder="en", max_len=6, beam=2, z_away=z_style, guidance=0.0) == plain
    steered_ids = model.generate(z_sem, z_style, decoder="en", max_len=6, beam=2, z_away=z_source, guidance=3.0)
    assert steered_ids != plain  # a strong push changes what an untrained decoder writes
    with pytest.raises(ValueError, match="guidance needs z_lang and a z_away of the same shape"):
        model.generate(z_sem, z_style, decoder="en", guidance=1.0)


def test_decoding_position_by_position_gives_the_whole_prefixs_logits_and_follows_a_search_reordering():
    torch.manual_seed(0)
    model = BGT(config()).eval()
    decoder, tokens = model.decoders["en"], batch().en[:, :5]
    cond = torch.randn(tokens.shape[0], decoder.cond_dim)
    decoding = decoder.incremental(cond)
    for i in range(tokens.shape[1]):
        torch.testing.assert_close(decoding.step(tokens[:, i]), decoder(tokens[:, :i + 1], cond)[:, -1])
    rows = torch.tensor([2, 2, 0, 3])  # as a beam search does: row 2 kept twice, row 1 dropped
    decoding.reorder(rows)
    following = torch.tensor([5, 6, 7, 8])
    torch.testing.assert_close(decoding.step(following),
                               decoder(torch.cat([tokens[rows], following[:, None]], dim=1), cond[rows])[:, -1])


def test_bad_configs_are_explained():
    with pytest.raises(ValueError, match="setting must be one of bgt, .*not 'bgt_plus'"):
        config("bgt_plus")
    with pytest.raises(ValueError, match="decoder_latent must be one of .*, not 'z'"):
        config(decoder_latent="z")
    with pytest.raises(WorkbenchError, match="unknown model config keys"):
        BGTConfig.from_dict({"vocab_size": 10, "layers": 3})


def test_active_units_count_collapsed_latents():
    torch.manual_seed(0)
    model = BGT(config())
    b = batch()
    before = model(b.en, b.xx)["active_units"].item()
    assert 0 < before <= 3 * 8  # dimensions of [sem ; en ; fr] means that vary across the batch
    with torch.no_grad():
        model.encoders["en"].hidden2mean.weight.zero_()  # the English latent collapses to a constant
    assert model(b.en, b.xx)["active_units"].item() < before
    with torch.no_grad():
        for name in ("semantic", "fr"):
            model.encoders[name].hidden2mean.weight.zero_()
    assert model(b.en, b.xx)["active_units"].item() == 0


def test_sample_language_samples_the_language_latents_only():
    b = batch()
    torch.manual_seed(0)
    model = BGT(config(decoder_latent="sample_language")).train()
    first, second = model(b.en, b.xx, 50), model(b.en, b.xx, 50)
    assert first["recon"] != second["recon"]  # the decoders read noisy z_en / z_fr
    assert first["trans"] == second["trans"] and first["kl"] == second["kl"]  # z_sem and the posteriors: means
    seen = []
    hook = model.decoders["en"].register_forward_hook(lambda module, inputs, output: seen.append(inputs[1]))
    model(b.en, b.xx, 50)
    model(b.en, b.xx, 50)
    hook.remove()
    language, semantic = (torch.stack([c[:, :8] for c in seen]), torch.stack([c[:, 8:] for c in seen]))
    assert not torch.equal(language[0], language[1]) and torch.equal(semantic[0], semantic[1])


def test_language_kl_weight_and_a_smaller_language_latent():
    b = batch()
    torch.manual_seed(0)
    base = BGT(config(language_latent_dim=3))
    assert base.encoders["en"](b.en)[0].shape == (4, 3) and base.encoders["semantic"](b.en)[0].shape == (4, 8)
    assert base.decoders["en"].cond_dim == 3 + 8 and base.decoders["en->fr"].cond_dim == 8
    heavy = BGT(config(language_latent_dim=3, language_kl_weight=4.0))
    heavy.load_state_dict(base.state_dict())
    for model in (base, heavy):
        model.eval()
    out, out4 = base(b.en, b.xx, 50), heavy(b.en, b.xx, 50)
    beta = base.kl_weight(50)
    torch.testing.assert_close(out["kl"], out["kl_semantic"] + out["kl_language"])
    torch.testing.assert_close(out4["loss"] - out["loss"], 3 * beta * out["kl_language"])
    z_sem = torch.zeros(2, 8)
    assert len(base.generate(z_sem, torch.zeros(2, 3), max_len=4)) == 2


def test_a_free_bits_floor_makes_the_language_kl_free_below_it():
    b = batch()
    torch.manual_seed(0)
    base = BGT(config()).eval()
    floored = BGT(config(language_free_bits=1e3)).eval()
    floored.load_state_dict(base.state_dict())
    out, out_f = base(b.en, b.xx, 50), floored(b.en, b.xx, 50)
    torch.testing.assert_close(out_f["kl_language"], out["kl_language"])  # the reported KL is the real one
    beta, n = base.kl_weight(50), b.en.shape[0]
    torch.testing.assert_close(out_f["loss"] - out["loss"], beta * (2 * n * 1e3 - out["kl_language"]))
    out_f["loss"].backward()
    # with mean decoding the language latents' logv is trained by their KL alone: under the floor, not at all
    assert floored.encoders["en"].hidden2logv.weight.grad.abs().max() == 0
    assert floored.encoders["semantic"].hidden2logv.weight.grad.abs().max() > 0
    low = BGT(config(language_free_bits=1e-6)).eval()
    low.load_state_dict(base.state_dict())
    torch.testing.assert_close(low(b.en, b.xx, 50)["loss"], out["loss"])  # above the floor: as before


def test_word_dropout_pads_decoder_inputs_but_never_the_first():
    from workbench.models.losses import drop_words
    prev = torch.tensor([[3, 5, 6, 7, 8, 0], [3, 9, 9, 9, 0, 0]])
    torch.manual_seed(0)
    dropped = drop_words(prev, 0.5, 0)
    assert torch.equal(dropped[:, 0], prev[:, 0]) and torch.equal(dropped[prev == 0], prev[prev == 0])
    assert ((dropped == 0) & (prev != 0)).any() and torch.equal(drop_words(prev, 0.0, 0), prev)
    b = batch()
    torch.manual_seed(0)
    model = BGT(config(word_dropout=0.5)).train()
    assert model(b.en, b.xx, 50)["recon"] != model(b.en, b.xx, 50)["recon"]
    model.eval()
    assert model(b.en, b.xx, 50)["recon"] == model(b.en, b.xx, 50)["recon"]


def test_the_content_adversary_is_trained_to_predict_and_its_encoder_by_the_reversed_gradient_to_defeat_it():
    from workbench.models.adversary import ContentAdversary
    torch.manual_seed(0)
    adversary = ContentAdversary(4, 8, 3)
    latent, target = torch.randn(5, 4, requires_grad=True), torch.randn(5, 3)
    error = adversary(latent, target, 0.5)
    error.backward()
    reversed_grads = latent.grad.clone(), [p.grad.clone() for p in adversary.parameters()]
    latent.grad = None
    adversary.zero_grad()
    plain = (adversary.net(latent) - target).pow(2).sum()  # the same error without the reversal
    plain.backward()
    torch.testing.assert_close(error, plain)
    torch.testing.assert_close(reversed_grads[0], -0.5 * latent.grad)  # the encoder learns to defeat it
    for mine, theirs in zip(reversed_grads[1], adversary.parameters()):  # the adversary learns to predict
        torch.testing.assert_close(mine, theirs.grad)


def test_content_adversaries_read_each_language_latent_in_training_only():
    b = batch()
    torch.manual_seed(0)
    base = BGT(config())
    assert not any(k.startswith("adversaries.") for k in base.state_dict())
    adversarial = BGT(config(content_adversary=2.0))
    assert set(adversarial.adversaries) == {"en", "fr"}
    groups = adversarial.parameter_groups()  # a fresh adversary catches up at a higher learning rate
    assert [g.get("lr_scale", 1.0) for g in groups] == [1.0, adversarial.ADVERSARY_LR_SCALE]
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in adversarial.adversaries.parameters()}
    assert sum(len(g["params"]) for g in groups) == len(list(adversarial.parameters()))
    assert len(base.parameter_groups()) == 1
    adversarial.load_state_dict(adversarial.completed_state(base.state_dict()))  # a trained model: adversaries fresh
    assert base.completed_state(adversarial.state_dict()).keys() == base.state_dict().keys()
    trained = {k: v + 1 for k, v in adversarial.state_dict().items()}  # a model shipped with its adversaries
    kept = adversarial.completed_state(trained)
    assert all(kept[k] is trained[k] for k in trained)  # a continuation goes on with them
    words = BGT(config(content_adversary=2.0, adversary_target="words"))  # another target, another shape: fresh
    own = words.state_dict()
    moved = words.completed_state(trained)
    fresh = {k for k in own if k.startswith("adversaries.")}  # each adversary whole, though its first layer fits
    assert all(torch.equal(moved[k], own[k]) and not torch.equal(moved[k], trained[k]) for k in fresh)
    assert all(moved[k] is trained[k] for k in own if k not in fresh)
    words.load_state_dict(moved)
    for model in (base, adversarial):
        model.train()
    out, out_a = backward_both(base, adversarial, b)
    assert out["adversary"] == 0 and out_a["adversary"] > 0
    torch.testing.assert_close(out_a["loss"] - out["loss"], out_a["adversary"])
    assert adversarial.adversaries["en"].net[0].weight.grad.abs().max() > 0
    torch.testing.assert_close(mean_grad(adversarial, "semantic"), mean_grad(base, "semantic"))  # target detached
    assert not torch.allclose(mean_grad(adversarial, "en"), mean_grad(base, "en"))  # the latent it reads is pushed
    adversarial.eval()  # validation and encoding never see the adversaries
    torch.testing.assert_close(adversarial(b.en, b.xx, 50)["loss"], base.eval()(b.en, b.xx, 50)["loss"])


def test_content_words_are_word_initial_pieces_of_two_letters_that_are_not_stop_words():
    from workbench.models.adversary import content_bag, content_pieces
    pieces = ["<pad>", "<unk>", "<s>", "</s>", "\u2581the", "\u2581Cats", "s", "\u2581,", "\u2581les", "\u2581l",
              "\u258142", "\u2581maison"]
    english, french = (content_pieces(pieces, lang).tolist() for lang in ("en", "fr"))
    assert [p for p, keep in zip(pieces, english) if keep] == ["\u2581Cats", "\u2581les", "\u2581maison"]
    assert [p for p, keep in zip(pieces, french) if keep] == ["\u2581the", "\u2581Cats", "\u2581maison"]  # other stop words
    with pytest.raises(ValueError, match="no stop-word list for 'xx'"):
        content_pieces(pieces, "xx")
    mask = torch.tensor(english)
    tokens = torch.tensor([[5, 4, 11, 6, 3, 0, 0], [5, 4, 11, 5, 4, 11, 3], [4, 7, 3, 0, 0, 0, 0]])
    bag = content_bag(tokens, mask)
    assert bag[0, 5] == bag[0, 11] == 0.5 and bag[0].sum() == 1  # pad, stop words, endings, EOS left out
    torch.testing.assert_close(bag[1], bag[0])  # the same words twice over: the bag holds no length
    assert bag[2].sum() == 0  # no content word, no loss


def test_a_content_words_adversary_reads_each_sentences_own_words_and_pushes_only_its_language_encoder():
    from workbench.data.tokenizer import Tokenizer
    from workbench.models.folder import model_path
    tokenizer = Tokenizer(model_path("bgt-en-fr") / "spm.model")
    torch.manual_seed(0)
    base = BGT(config(vocab_size=tokenizer.vocab_size))
    words = BGT(config(vocab_size=tokenizer.vocab_size, content_adversary=1.0, adversary_target="words"))
    words.load_state_dict(words.completed_state(base.state_dict()))
    sentences = tokenizer.encode(["The old man bought three red apples.", "Is it raining?"])
    b = collate(sentences, tokenizer.encode(["Le vieil homme a acheté trois pommes.", "Pleut-il ?"]), [0, 1])
    base.train(), words.train()
    with pytest.raises(RuntimeError, match="use_tokenizer"):
        words(b.en, b.xx, 50)
    words.use_tokenizer(tokenizer)
    out, out_w = backward_both(base, words, b)
    assert out_w["adversary"] > 0
    torch.testing.assert_close(out_w["loss"] - out["loss"], out_w["adversary"])
    torch.testing.assert_close(mean_grad(words, "semantic"), mean_grad(base, "semantic"))
    assert not torch.allclose(mean_grad(words, "en"), mean_grad(base, "en"))


def test_direction_overlap_reads_which_sentences_are_alike_not_how_long_the_vectors_are():
    from workbench.models.losses import direction_overlap
    g = torch.Generator().manual_seed(0)
    reference = torch.randn(64, 12, generator=g)
    rotation, _ = torch.linalg.qr(torch.randn(12, 12, generator=g))
    lengths = torch.rand(64, 1, generator=g) * 5 + 0.1
    same = direction_overlap(reference @ rotation * lengths, reference)  # rotated, each row scaled anew
    alike = direction_overlap(reference / reference.norm(dim=1, keepdim=True) @ rotation, reference)
    torch.testing.assert_close(same, alike)  # a latent cannot lower it by changing its rows' lengths
    assert alike > 0.99
    unrelated = direction_overlap(torch.randn(64, 12, generator=g), reference)
    assert 0 <= unrelated < 0.3
    latent = (reference @ rotation).requires_grad_()
    direction_overlap(latent, reference.requires_grad_()).backward()
    assert latent.grad.abs().max() > 0 and reference.grad is None  # the reference is not moved


def test_the_independence_penalty_pushes_only_the_language_encoders_and_stays_out_of_validation():
    english = ["The old man bought three red apples.", "Is it raining?", "The old man sold apples.", "Hello!"]
    french = ["Le vieil homme a acheté trois pommes.", "Pleut-il ?", "Le vieil homme a vendu des pommes.", "Salut !"]
    tokenizer, base, penalised, b = twin_with(english, french, language_independence=2.0)
    with pytest.raises(RuntimeError, match="use_tokenizer"):
        penalised(b.en, b.xx, 50)
    penalised.use_tokenizer(tokenizer)
    assert set(penalised.content_words) == {"en", "fr"}
    out, out_p = backward_both(base, penalised, b)
    assert out["independence"] == 0 and 0 < out_p["independence"] <= 2 * 4  # two latents' CKA, each ≤ 1, × 4 pairs
    torch.testing.assert_close(out_p["loss"] - out["loss"], 2.0 * out_p["independence"], rtol=0,
                               atol=1e-6 * out["loss"].item())  # float32 sums of a few hundred
    torch.testing.assert_close(mean_grad(penalised, "semantic"), mean_grad(base, "semantic"))
    assert not torch.allclose(mean_grad(penalised, "en"), mean_grad(base, "en"))
    penalised.eval()
    assert penalised(b.en, b.xx, 50)["independence"] == 0


def test_marks_are_taken_out_of_a_padded_batch_and_the_rest_moves_left_in_order():
    from workbench.models.losses import punctuation_pieces, without_pieces
    marks = punctuation_pieces(["<pad>", "<unk>", "\u2581.", "?", "\u2581the", "n't", "\u2581\u00ab", "\u2581", "'s"])
    assert marks.tolist() == [False, False, True, True, False, False, True, False, False]  # apostrophes stay words
    drop = torch.zeros(V, dtype=torch.bool)
    drop[[5, 6]] = True
    tokens = torch.tensor([[5, 7, 6, 8, 3, 0], [9, 3, 0, 0, 0, 0], [6, 5, 3, 0, 0, 0]])
    assert without_pieces(tokens, drop, 0).tolist() == [[7, 8, 3, 0, 0, 0], [9, 3, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0]]


def test_hiding_punctuation_reads_z_sem_from_the_sentences_without_their_marks_in_training_only():
    from workbench.models.losses import without_pieces
    english = ["Is it raining?", "The old man sold apples.", "Hello, you!", "We went home"]
    french = ["Pleut-il ?", "Le vieil homme a vendu des pommes.", "Salut, toi !", "Nous sommes rentrés"]
    tokenizer, base, hiding, b = twin_with(english, french, hide_punctuation=1.0)
    with pytest.raises(RuntimeError, match="use_tokenizer"):
        hiding(b.en, b.xx, 50)
    hiding.use_tokenizer(tokenizer)
    out, out_h = backward_both(base, hiding, b)
    # every pair's z_sem (English on even positions, French on odd: sem_side "example") read without its marks
    side = semantic_side(4)[:, None]
    with torch.no_grad():
        bare = [hiding.encoders["semantic"](without_pieces(t, hiding.punctuation, 0)) for t in (b.en, b.xx)]
    mu, logv = (torch.where(side, bare[0][i], bare[1][i]) for i in (0, 1))
    torch.testing.assert_close(out_h["kl_semantic"], kl_to_standard_normal(mu, logv).sum())
    assert not torch.allclose(out_h["kl_semantic"], out["kl_semantic"])
    torch.testing.assert_close(out_h["trans"], out["trans"])  # the translation loss reads the whole sentences
    torch.testing.assert_close(out_h["kl_language"], out["kl_language"])
    assert not torch.allclose(mean_grad(hiding, "semantic"), mean_grad(base, "semantic"))
    unmarked = collate(tokenizer.encode(["We went home"]), tokenizer.encode(["Nous sommes rentrés"]), [0])
    torch.testing.assert_close(hiding(unmarked.en, unmarked.xx, 50)["loss"], base(unmarked.en, unmarked.xx, 50)["loss"])
    hiding.eval(), base.eval()
    with torch.no_grad():
        torch.testing.assert_close(hiding(b.en, b.xx, 50)["loss"], base(b.en, b.xx, 50)["loss"])


@pytest.mark.parametrize("change, message", [
    ({"decoder_latent": "z"}, "decoder_latent must be one of mean, sample, sample_language, not 'z'"),
    ({"language_latent_dim": 0}, "language_latent_dim must be a positive integer"),
    ({"language_kl_weight": -1.0}, "language_kl_weight must be a number ≥ 0"),
    ({"language_free_bits": -2}, "language_free_bits must be a number of nats ≥ 0"),
    ({"word_dropout": 1.0}, r"word_dropout must be a number in \[0, 1\)"),
    ({"content_adversary": -0.5}, "content_adversary must be a number ≥ 0"),
    ({"adversary_target": "style"}, "adversary_target must be one of translation, words, not 'style'"),
    ({"setting": "bgt_no_langvars", "content_adversary": 1.0}, "content_adversary needs language latents"),
    ({"language_independence": -1}, "language_independence must be a number ≥ 0"),
    ({"setting": "bilingual_trans", "language_independence": 0.5}, "language_independence needs language latents"),
    ({"hide_punctuation": 1.5}, r"hide_punctuation must be a share in \[0, 1\]"),
    ({"setting": "bgt_no_langvars", "hide_punctuation": 0.5}, "hide_punctuation needs language latents")])
def test_bottleneck_settings_are_checked(change, message):
    with pytest.raises(ValueError, match=message):
        config(**change)


def test_semantic_side_rules():
    assert semantic_side(5, "example").tolist() == [True, False, True, False, True]
    assert semantic_side(3, "microbatch", step=0).all()
    assert not semantic_side(3, "microbatch", step=1).any()
    with pytest.raises(ValueError, match="valid: example, microbatch"):
        semantic_side(3, "random")


@pytest.mark.parametrize("setting", ["bgt", "bgt_no_prior", "bgt_no_langvars", "bilingual_trans"])
def test_the_alike_settings_take_a_pair_without_english_with_the_same_loss(setting):
    """The first side is not English in fr-es: the same network with its decoders and language encoders named by the
    pair's languages, and the same loss as the en-fr network on the same weights and batch."""
    torch.manual_seed(0)
    english = BGT(config(setting))
    other = BGT(config(setting, languages=("fr", "es")))
    rename = {"en": "fr", "fr": "es"}
    mapped = {}
    for name, tensor in english.state_dict().items():
        parts = name.split(".")
        if parts[0] in ("encoders", "decoders"):
            parts[1] = "->".join(rename.get(side, side) for side in parts[1].split("->"))
        mapped[".".join(parts)] = tensor
    other.load_state_dict(mapped)  # every tensor has its counterpart: the same shapes under the pair's names
    assert set(other.decoders) >= ({"fr->es", "es->fr"} if setting != "bgt_no_langvars" else {"fr->es"})
    assert other.view_languages("semantic") == ("fr", "es")
    b = batch()
    assert english(b.en, b.xx, 50)["loss"] == other(b.en, b.xx, 50)["loss"]


def test_the_english_settings_refuse_a_pair_without_english():
    for setting in ("english_trans", "english_ae", "english_vae"):
        with pytest.raises(ValueError, match=f"{setting} reads English on its first side"):
            config(setting, languages=("fr", "es"))
    with pytest.raises(ValueError, match="two different languages"):
        config(languages=("fr", "fr"))
