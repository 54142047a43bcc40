"""ResGen: masking invariants and hypergeometric counts, MoG likelihood vs torch.distributions, RVQ
invertibility of the cumulative embedding, sampler termination / NFE / guidance, baselines, bad input, smoke run.

The method's defining elements (docs/papers/resgen.md, "The method", steps 1-5; the paper's method sections were not
readable, so these follow its abstract, Fig. 1 caption and second-hand summaries) and the tests that fail when one is
removed or altered:

1. Coarse-to-fine forward masking: ``n = ceil(gamma(r) L D)`` slots drawn without replacement (multivariate
   hypergeometric counts per position), the finest depths masked first (a depth suffix), with the cosine schedule
   ``gamma(r) = cos(pi/2 (1 - r))``: ``test_forward_mask_counts_suffix_and_endpoints``,
   ``test_forward_mask_counts_are_multivariate_hypergeometric`` (also catches a linear schedule),
   ``test_cumulative_embedding_is_recovered_by_residual_quantisation``,
   ``test_select_prefix_tokens_reveals_n_and_keeps_suffix_masks``.
2. The target, the cumulative embedding of the masked tokens ``z_i = sum_j e(x_{i,j}; j) m_{i,j}`` (one vector per
   position), and the training loss on it at positions with a masked token:
   ``test_cumulative_embedding_is_recovered_by_residual_quantisation``,
   ``test_sampler_with_oracle_mixture_reproduces_the_data``,
   ``test_training_loss_is_on_the_cumulative_embedding_of_the_masked_suffix``.
3. A mixture-of-Gaussians output over z and its loss, ``-log p(z | x^(t))`` trained through the Jensen split
   (CE on the nearest component k*, the scale-free regression of mu_k*, the NLL of sigma_k*):
   ``test_mog_nll_matches_torch_distributions_and_gradcheck``, ``test_split_loss_bounds_nll_when_regression_is_exact``,
   ``test_split_loss_is_the_jensen_split_rederived_by_hand``.
4. Sampling selection rule: residual-quantise the sampled z with the masked depths' codebooks, score each new token
   by ``log softmax_k(-||r - e(k; j)||^2 / (2 s^2))``, keep the most confident as depth prefixes, re-mask the rest:
   ``test_sampler_keeps_the_most_confident_tokens_and_re_masks_the_rest`` (random or least-confident choice),
   ``test_sampler_with_oracle_mixture_reproduces_the_data`` (quantising from depth 0),
   ``test_select_prefix_tokens_reveals_min_n_masked_as_prefixes``.
5. T network evaluations for any depth D (the abstract's claim): ``test_sampler_terminates_and_counts_nfe``,
   ``test_smoke_run_metrics``, ``test_sampler_keeps_the_most_confident_tokens_and_re_masks_the_rest``.
6. Classifier-free guidance ``u + s (c - u)`` on the mixture's parameters: ``test_cfg_scale_zero_is_unconditional``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.papers.resgen import (
    ARRQ,
    DepthSequentialMask,
    MoGParams,
    ResGenConfig,
    ResGenTransformer,
    ResidualVQ,
    TokenMaskGIT,
    cumulative_masked_embedding,
    digits_patches,
    forward_mask,
    frechet_distance,
    images_to_patches,
    mask_schedule,
    masked_counts,
    mog_nll,
    patches_to_images,
    sample,
    select_prefix_tokens,
)
from icml25.papers.resgen.model import split_mog_loss
from icml25.papers.resgen.repro import EXPERIMENTS

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def digits_rvq():
    patches, labels = digits_patches()
    rvq = ResidualVQ(4, 4, 32, random_state=0).fit(patches.reshape(-1, 4)[:4000])
    return patches, labels, rvq, rvq.encode(patches)


def _is_suffix(mask: torch.Tensor) -> bool:
    """True where every masked set is a depth suffix (once masked, all finer depths masked)."""
    return bool(torch.all(mask[..., 1:] >= mask[..., :-1]))


def test_forward_mask_counts_suffix_and_endpoints():
    tokens = torch.zeros(500, 16, 4, dtype=torch.long)
    g = torch.Generator().manual_seed(0)
    r = torch.rand(500, generator=g, dtype=torch.float64)
    mask = forward_mask(tokens, r, generator=g)
    n = torch.ceil(mask_schedule(r) * 64 - 1e-9).long()
    assert torch.equal(mask.sum((1, 2)), n)
    assert _is_suffix(mask)
    assert forward_mask(tokens[:3], 1.0).all() and not forward_mask(tokens[:3], 0.0).any()


def test_forward_mask_counts_are_multivariate_hypergeometric():
    # n of L*D slots without replacement: k_i has mean n/L and hypergeometric variance
    L, D, n = 8, 4, 12
    ratio = math.asin(n / (L * D)) * 2 / math.pi  # gamma(r) = sin(pi r / 2) = n / (L D)
    mask = forward_mask(torch.zeros(20000, L, D, dtype=torch.long), ratio, generator=torch.Generator().manual_seed(1))
    k = mask.sum(-1).double()
    assert torch.all(mask.sum((1, 2)) == n)
    var = n * (D / (L * D)) * (1 - D / (L * D)) * (L * D - n) / (L * D - 1)
    assert abs(k.mean().item() - n / L) < 0.02
    assert abs(k.var().item() - var) < 0.05 * var


def test_mog_nll_matches_torch_distributions_and_gradcheck():
    g = torch.Generator().manual_seed(0)
    logits, means = torch.randn(3, 5, 4, generator=g), torch.randn(3, 5, 4, 2, generator=g)
    log_scales, z = 0.3 * torch.randn(3, 5, 4, 2, generator=g), torch.randn(3, 5, 2, generator=g)
    dist = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(logits=logits),
        torch.distributions.Independent(torch.distributions.Normal(means, log_scales.exp()), 1))
    torch.testing.assert_close(mog_nll(MoGParams(logits, means, log_scales), z), -dist.log_prob(z))
    args = [t.double().requires_grad_() for t in (logits[:1, :2], means[:1, :2], log_scales[:1, :2], z[:1, :2])]
    assert torch.autograd.gradcheck(lambda a, b, c, x: mog_nll(MoGParams(a, b, c), x), args)


def test_split_loss_bounds_nll_when_regression_is_exact():
    # with one component the split loss's CE is 0 and, at mu = z, it equals sum log sigma = NLL - c/2 log 2pi
    z = torch.randn(2, 3, 4)
    p = MoGParams(torch.zeros(2, 3, 1), z[..., None, :].clone(), torch.full((2, 3, 1, 4), -1.0))
    loss = split_mog_loss(p, z, torch.ones(2, 3, dtype=torch.bool))
    nll = mog_nll(p, z).mean()
    assert loss.item() == pytest.approx(nll.item() - 2 * math.log(2 * math.pi), abs=1e-5)


def test_rvq_depth_one_is_kmeans_and_error_decreases(digits_rvq):
    from sklearn.cluster import KMeans

    patches = digits_rvq[0]
    x = patches.reshape(-1, 4)[:3000]
    rvq1 = ResidualVQ(4, 1, 16, random_state=3).fit(x)
    km = KMeans(16, n_init=1, random_state=3).fit(x)
    assert np.array_equal(rvq1.encode(x)[:, 0].numpy(), km.predict(x))
    errs = [float(((ResidualVQ(4, d, 16, random_state=3).fit(x).decode(
        ResidualVQ(4, d, 16, random_state=3).fit(x).encode(x)).numpy() - x) ** 2).mean()) for d in (1, 2, 3)]
    assert errs[0] > errs[1] > errs[2]


def test_cumulative_embedding_is_recovered_by_residual_quantisation(digits_rvq):
    _, _, rvq, tokens = digits_rvq
    g = torch.Generator().manual_seed(0)
    mask = forward_mask(tokens, torch.rand(len(tokens), generator=g, dtype=torch.float64), generator=g)
    z = cumulative_masked_embedding(tokens, mask, rvq)
    prefix = rvq.embed(tokens) * (~mask)[..., None]
    torch.testing.assert_close(prefix.sum(-2) + z, rvq.decode(tokens))
    rec = rvq.residual_quantize(z, 4 - mask.sum(-1))
    assert torch.all((rec == -1) == ~mask)
    token_rate = (rec == tokens)[mask].float().mean().item()
    position_rate = ((rec == tokens) | ~mask).all(-1)[mask.any(-1)].float().mean().item()
    # greedy RVQ is not idempotent: measured ~0.94 of tokens and ~0.88 of positions on digits (card asked 0.95)
    assert token_rate >= 0.9 and position_rate >= 0.8


def test_select_prefix_tokens_reveals_n_and_keeps_suffix_masks():
    g = torch.Generator().manual_seed(2)
    masked = forward_mask(torch.zeros(50, 6, 5, dtype=torch.long), 0.8, generator=g)
    reveal = select_prefix_tokens(torch.randn(50, 6, 5, generator=g), masked, 7)
    assert torch.all(reveal.sum((1, 2)) == 7) and not (reveal & ~masked).any()
    assert _is_suffix(masked & ~reveal)


def test_masked_counts_schedule():
    c = masked_counts(8, 64)
    assert c[-1] == 0 and all(a > b for a, b in zip([64] + c, c))
    assert masked_counts(1, 10) == [0]


def _tiny(kind: str, depth: int = 3):
    torch.manual_seed(0)
    if kind == "resgen":
        return ResGenTransformer(16, depth, 32, 16, 1, 2, 3, 10, 4)
    return {"maskgit": TokenMaskGIT, "dsm": DepthSequentialMask, "ar": ARRQ}[kind](16, depth, 32, 16, 1, 2, 10)


@pytest.mark.parametrize("kind,nfe", [("resgen", 5), ("maskgit", 5), ("dsm", 15), ("ar", 48)])
def test_sampler_terminates_and_counts_nfe(digits_rvq, kind, nfe):
    rvq = ResidualVQ(4, 3, 32, random_state=0).fit(digits_rvq[0].reshape(-1, 4)[:2000])
    model = _tiny(kind).eval()
    before = model.forward_calls
    out = sample(model, rvq, 5, class_labels=torch.arange(4), generator=torch.Generator().manual_seed(0))
    assert out.shape == (4, 16, 3) and out.min() >= 0 and out.max() < 32
    assert model.forward_calls - before == nfe


def test_cfg_scale_zero_is_unconditional(digits_rvq):
    rvq = ResidualVQ(4, 3, 32, random_state=0).fit(digits_rvq[0].reshape(-1, 4)[:2000])
    for kind in ("resgen", "maskgit"):
        model = _tiny(kind).eval()
        guided = sample(model, rvq, 4, cfg_scale=0.0, class_labels=torch.arange(6),
                        generator=torch.Generator().manual_seed(5))
        uncond = sample(model, rvq, 4, n_samples=6, generator=torch.Generator().manual_seed(5))
        cond = sample(model, rvq, 4, cfg_scale=1.0, class_labels=torch.arange(6),
                      generator=torch.Generator().manual_seed(5))
        assert torch.equal(guided, uncond) and not torch.equal(cond, uncond)


def test_sampler_with_oracle_mixture_reproduces_the_data(digits_rvq):
    _, labels, rvq, tokens = digits_rvq
    target = tokens[:40]

    class Oracle(ResGenTransformer):
        def forward(self, tok, mask, class_labels=None):
            self.trunk.forward_calls += 1
            z = cumulative_masked_embedding(target, mask, rvq)
            b, n = z.shape[:2]
            return MoGParams(torch.zeros(b, n, 2), z[:, :, None].repeat(1, 1, 2, 1), torch.full((b, n, 2, 4), -8.0))

    out = sample(Oracle(16, 4, 32, 8, 1, 2, 2, 10, 4), rvq, 8, class_labels=torch.as_tensor(labels[:40]),
                 generator=torch.Generator().manual_seed(0))
    assert (out == target).float().mean().item() >= 0.9


def test_arrq_is_causal():
    model = _tiny("ar", depth=2).eval()
    seq = torch.randint(0, 32, (2, 20))
    changed = seq.clone()
    changed[:, 10:] = torch.randint(0, 32, (2, 10))
    with torch.no_grad():
        a, b = model(seq, torch.tensor([1, 2])), model(changed, torch.tensor([1, 2]))
    torch.testing.assert_close(a[:, :11], b[:, :11])
    assert not torch.allclose(a[:, 11:], b[:, 11:])


def test_patches_roundtrip_and_frechet_distance():
    x = np.random.default_rng(0).random((5, 8, 8))
    assert np.array_equal(patches_to_images(images_to_patches(x, 2)), x)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4000, 3)), rng.normal(size=(4000, 3)) + np.array([2.0, 0, 0])
    assert frechet_distance(a, b) == pytest.approx(4.0, abs=0.3)  # ||mu_a - mu_b||^2, equal covariances


def test_bad_input_raises():
    with pytest.raises(ValueError, match="ratio"):
        forward_mask(torch.zeros(2, 4, 2, dtype=torch.long), 1.5)
    with pytest.raises(ValueError, match="schedule"):
        mask_schedule(0.5, "foo")
    with pytest.raises(ValueError, match="depth"):
        ResidualVQ(4, 0, 8)
    with pytest.raises(ValueError, match="divisible"):
        ResGenTransformer(16, 2, 8, 10, 1, 3, 2, 10, 4)
    rvq = ResidualVQ(2, 2, 4).fit(np.random.default_rng(0).random((50, 2)))
    with pytest.raises(ValueError, match="tokens must lie"):
        rvq.decode(torch.tensor([[0, 9]]))
    with pytest.raises(ValueError, match="n_samples"):
        sample(ResGenTransformer(4, 2, 4, 8, 1, 2, 2, 3, 2), rvq, 2)
    exp = EXPERIMENTS[0]
    with pytest.raises(ValueError, match="baseline_depth"):
        exp.run(exp.make_config("smoke", {"baseline_depth": 3}), seed=0)


def test_model_settings_are_one_nested_config_set_by_dotted_keys():
    """ResGen's (and the baselines') network, training and sampler settings are ResGenConfig (model.py), nested as
    ``model``: presets and overrides reach it by dotted keys, and a bad value is refused with the dotted name."""
    from icml25.core.experiment import ConfigError

    exp = EXPERIMENTS[0]
    assert exp.make_config("smoke").model == ResGenConfig(dim=32, n_layers=1, train_steps=15, batch_size=32,
                                                          sample_steps=4)
    assert exp.make_config("full").model == ResGenConfig(dim=256, n_layers=6, n_heads=8, train_steps=20000)
    assert exp.make_config("quick", {"model.top_p": 0.9}).model.top_p == 0.9
    with pytest.raises(ConfigError, match=r"model\.top_p must be <= 1"):
        exp.make_config("quick", {"model.top_p": 1.5})
    with pytest.raises(ConfigError, match=r"model\.n_heads must divide dim=64"):
        exp.make_config("quick", {"model.n_heads": 3})


def test_smoke_run_metrics():
    exp = EXPERIMENTS[0]
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["nfe_resgen_d1"] == m["nfe_resgen_d2"] == 4 and m["nfe_resgen_abs_diff_across_depths"] == 0
    assert m["nfe_dsm_d2"] == 8 and m["nfe_dsm_over_resgen_d2"] == 2
    assert m["rvq_mse_d2"] < m["rvq_mse_d1"] and m["classifier_test_accuracy"] > 0.9
    assert m["fd_rvq_recon_d1"] < m["fd_resgen_d1"]  # an untrained-ish generator is far from the data
    assert m["fd_ratio_resgen_over_dsm_d2"] == pytest.approx(m["fd_resgen_d2"] / m["fd_dsm_d2"])
    # the autoregressive baseline on the same tokens (the paper's Table 2): one evaluation per token
    assert m["nfe_ar_d2"] == 16 * 2
    assert m["fd_ratio_resgen_over_ar"] == pytest.approx(m["fd_resgen_d2"] / m["fd_ar_d2"])
    assert m["sample_seconds_ratio_resgen_over_ar"] == pytest.approx(m["sample_seconds_resgen_d2"]
                                                                     / m["sample_seconds_ar_d2"])
    # guided samples (cfg_scale 2 by default) and the untrained networks, for every model
    assert m["fd_cfg_resgen_deepest_minus_shallowest"] == pytest.approx(m["fd_cfg_resgen_d2"] - m["fd_cfg_resgen_d1"])
    names = ("resgen_d1", "resgen_d2", "dsm_d2", "ar_d2")
    ratios = [m[f"fd_{n}"] / m[f"fd_untrained_{n}"] for n in names]
    assert m["fd_ratio_trained_over_untrained_max"] == pytest.approx(max(ratios))
    assert all(f"fd_cfg_{n}" in m and 0 <= m[f"class_acc_cfg_{n}"] <= 1 for n in names)


def test_digit_features_is_a_transformer_with_the_old_split():
    from sklearn.neural_network import MLPClassifier

    from icml25.papers.resgen import DigitFeatures

    x = np.random.default_rng(0).random((60, 6))
    y = (x[:, 0] > 0.5).astype(int)
    feats = DigitFeatures(hidden=5, seed=3, max_iter=50).fit(x, y)
    idx = np.random.default_rng(3).permutation(60)  # 80% train / 20% test split drawn from the seed
    ref = MLPClassifier((5,), max_iter=50, random_state=3).fit(x[idx[:48]], y[idx[:48]])
    assert feats.test_accuracy == pytest.approx(ref.score(x[idx[48:]], y[idx[48:]]))
    expected = np.maximum(x @ ref.coefs_[0] + ref.intercepts_[0], 0.0)
    np.testing.assert_allclose(feats.transform(x), expected)
    np.testing.assert_allclose(feats.fit_transform(x, y), expected)
    assert np.array_equal(feats.predict(x), ref.predict(x)) and feats.n_features_in_ == 6


def test_tokens_outside_the_codebook_are_rejected_not_read_from_another_depth():
    model = ResGenTransformer(3, 2, 5, 8, 1, 2, 2, 3, 4)
    ok = torch.zeros(1, 3, 2, dtype=torch.long)
    masked = torch.zeros(1, 3, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match="tokens must lie"):
        model(ok + 5, masked)  # id 5 = depth 0's mask embedding
    masked[..., 1] = True
    model(ok.index_fill(2, torch.tensor([1]), 99), masked)  # ids at masked slots are ignored
    with pytest.raises(TypeError, match="integer"):
        model(ok.float(), masked)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 12), st.integers(0, 2 ** 31 - 1))
def test_select_prefix_tokens_reveals_min_n_masked_as_prefixes(n_reveal, seed):
    g = torch.Generator().manual_seed(seed)
    masked = torch.arange(3).expand(2, 4, 3) >= torch.randint(0, 4, (2, 4, 1), generator=g)
    reveal = select_prefix_tokens(torch.rand(2, 4, 3, generator=g), masked, n_reveal)
    assert torch.equal(reveal.sum((1, 2)), torch.clamp(masked.sum((1, 2)), max=n_reveal))
    assert _is_suffix(masked & ~reveal) and not bool((reveal & ~masked).any())


def test_split_loss_is_the_jensen_split_rederived_by_hand():
    """split_mog_loss = mean over the counted positions of CE(logits, k*) + ||z - mu_k*||^2 / mean||z||^2
    + sum_d [log sigma_k*,d + (z - mu_k*)_d^2 / (2 sigma_k*,d^2)], k* the component nearest to z; re-derived
    element by element in NumPy (float64, rel 1e-12)."""
    g = torch.Generator().manual_seed(11)
    b, n, m, c = 2, 5, 3, 2
    logits, means = torch.randn(b, n, m, generator=g, dtype=torch.float64), torch.randn(b, n, m, c, generator=g,
                                                                                        dtype=torch.float64)
    log_scales = 0.5 * torch.randn(b, n, m, c, generator=g, dtype=torch.float64)
    z = torch.randn(b, n, c, generator=g, dtype=torch.float64)
    weight = torch.rand(b, n, generator=g) < 0.6
    weight[0, 0] = True
    lo, mu, ls, zz, w = (t.numpy() for t in (logits, means, log_scales, z, weight))
    power = sum(float(zz[p, q] @ zz[p, q]) for p in range(b) for q in range(n) if w[p, q]) / w.sum()
    terms = []
    for p in range(b):
        for q in range(n):
            if not w[p, q]:
                continue
            k = int(np.argmin([np.sum((zz[p, q] - mu[p, q, kk]) ** 2) for kk in range(m)]))
            ce = -(lo[p, q, k] - math.log(np.sum(np.exp(lo[p, q]))))
            d = zz[p, q] - mu[p, q, k]
            terms.append(ce + np.sum(d**2) / power + np.sum(ls[p, q, k] + d**2 / (2 * np.exp(2 * ls[p, q, k]))))
    got = split_mog_loss(MoGParams(logits, means, log_scales), z, weight).item()
    assert got == pytest.approx(np.mean(terms), rel=1e-12)


def test_training_loss_is_on_the_cumulative_embedding_of_the_masked_suffix(digits_rvq):
    """ResGenTransformer.loss draws r ~ U[0, 1), a coarse-to-fine mask and 10% label dropout from the generator, and
    scores the network's mixture on z_i = sum of the code vectors of the masked depths (summed here by an explicit
    loop over the codebooks), counting only positions with a masked token: the split loss by default, the exact
    mixture NLL with kind="nll". Same float32 operations on both sides (rel 1e-6)."""
    _, labels, rvq, tokens = digits_rvq
    torch.manual_seed(0)
    model = ResGenTransformer(16, 4, 32, 16, 1, 2, 3, 10, 4)
    tok, lab = tokens[:24], torch.as_tensor(labels[:24])
    for kind in ("split", "nll"):
        got = model.loss(tok, lab, rvq, generator=torch.Generator().manual_seed(5), kind=kind)
        g = torch.Generator().manual_seed(5)
        mask = forward_mask(tok, torch.rand(24, generator=g, dtype=torch.float64), generator=g)
        y = torch.where(torch.rand(24, generator=g) < 0.1, 10, lab)
        z = torch.zeros(24, 16, 4)
        for j in range(4):
            z += rvq.codebooks_[j][tok[..., j]] * mask[..., j, None]
        with torch.no_grad():
            params = model(tok, mask, y)
        has_mask = mask.any(-1)
        assert 0 < int(has_mask.sum()) < has_mask.numel()  # some positions are not counted
        want = split_mog_loss(params, z, has_mask) if kind == "split" else mog_nll(params, z)[has_mask].mean()
        assert got.item() == pytest.approx(want.item(), rel=1e-6)


def test_sampler_keeps_the_most_confident_tokens_and_re_masks_the_rest(digits_rvq):
    """Sampling selection rule: a token's confidence is log softmax_k(-||r - e(k; j)||^2 / (2 s^2)) at its code,
    so positions whose mixture is sharp (sigma = e^-8) are sure of their codes and positions with sigma = e^3 are
    not. Without Gumbel noise (choice_temperature 0), every token kept after each step, until the sharp positions
    are used up, lies at a sharp position (a spy records the mask the network sees at each step)."""
    _, labels, rvq, tokens = digits_rvq
    target, sharp = tokens[:6], torch.arange(16) < 8
    seen = []

    class Spy(ResGenTransformer):
        def forward(self, tok, mask, class_labels=None):
            self.trunk.forward_calls += 1
            seen.append(mask.clone())
            z = cumulative_masked_embedding(target, mask, rvq)
            b, n = z.shape[:2]
            log_s = torch.where(sharp[None, :, None, None], -8.0, 3.0).expand(b, n, 1, 4)
            return MoGParams(torch.zeros(b, n, 1), z[:, :, None], log_s)

    out = sample(Spy(16, 4, 32, 8, 1, 2, 1, 10, 4), rvq, 8, class_labels=torch.as_tensor(labels[:6]),
                 choice_temperature=0.0, generator=torch.Generator().manual_seed(0))
    counts = [64] + masked_counts(8, 64)
    assert len(seen) == 8 and bool(out.ge(0).all())
    for t in range(1, 8):
        kept = ~seen[t]
        assert torch.equal(kept.sum((1, 2)), torch.full((6,), 64 - counts[t]))
        if 64 - counts[t] <= 32:  # fewer than the sharp slots: every kept token is at a sharp position
            assert not bool(kept[:, ~sharp].any()), f"step {t}: a low-confidence token was kept"
        else:  # all sharp slots kept first
            assert bool(kept[:, sharp].all()), f"step {t}: a confident token was re-masked"
