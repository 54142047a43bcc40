"""MATS: noise injection, Santa against a brute-force reference, mapper, text-only training, data, smoke run.

The method's defining elements (the paper's Sec. 3.1 and Santa of Sec. 3.4, section numbers second-hand, and the
official code; see docs/papers/mats.md, "The method") and the tests that fail when one is removed or altered:

1. Text-only training through a frozen CLAP: the loss reads the caption's text embedding, never audio, and no
   gradient reaches CLAP: ``test_text_only_training_never_calls_encode_audio``,
   ``test_train_mats_text_mode_fits_without_audio_and_is_deterministic``.
2. Noise injection ``t~ = normalize(normalize(t) + eps)``, ``eps ~ N(0, sigma^2 I)``, applied to the text embedding
   that conditions the LM in training: ``test_noise_injection_normalises_first``,
   ``test_noise_injection_variance_matches``, ``test_text_only_loss_conditions_on_the_noised_caption_embedding``.
3. Santa's retrieval: the nearest k-means centre, the cluster padded by its first member, its k nearest items:
   ``test_santa_matches_bruteforce_and_weights_sum_to_one``,
   ``test_santa_on_the_raw_audio_embedding_and_the_normalised_option``,
   ``test_santa_padding_when_cluster_smaller_than_k``, ``test_santa_limits``, ``test_smoke_run``.
4. Santa's weights ``w = softmax(T <a, m~_j>)``: ``test_santa_matches_bruteforce_and_weights_sum_to_one``,
   ``test_santa_on_the_raw_audio_embedding_and_the_normalised_option``,
   ``test_santa_padding_when_cluster_smaller_than_k``, ``test_santa_limits``.
5. Santa's fusion ``normalize((1 - lambda) a + lambda sum_j w_j m~_j)`` on the raw audio embedding a, with the
   retrieved items noised (m~_j): ``test_santa_matches_bruteforce_and_weights_sum_to_one``,
   ``test_santa_on_the_raw_audio_embedding_and_the_normalised_option``, ``test_santa_limits``,
   ``test_santa_noises_the_retrieved_memory_items``.
6. The key constants sigma^2 = 0.015, 100 clusters, k = 32, T = 10, lambda = 0.3 (official code):
   ``test_method_defaults_are_the_papers_constants``.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.common.checks import ConfigError
from icml25.papers.mats import (
    MATS,
    SantaMemory,
    TinyLM,
    TransformerMapper,
    kmeans,
    make_scenes,
    noise_injection,
    train_mats,
)
from icml25.papers.mats.data import CAPTION_PROMPT, TinyCLAP, concepts_in, set_f1
from icml25.papers.mats.model import MATSConfig
from icml25.papers.mats.repro import EXPERIMENTS, WorldConfig


def _unit(n, d, seed):
    return F.normalize(torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=-1)


def test_noise_injection_unit_norm_and_zero_variance():
    x = torch.randn(50, 16) * 3
    g = torch.Generator().manual_seed(0)
    for uniform in (False, True):
        y = noise_injection(x, 0.015, uniform=uniform, generator=g)
        assert torch.allclose(y.norm(dim=-1), torch.ones(50), atol=1e-6)
        assert not torch.allclose(y, F.normalize(x, dim=-1))
    assert torch.allclose(noise_injection(x, 0.0), F.normalize(x, dim=-1))


def test_noise_injection_variance_matches():
    # for a unit vector in d dims, E||t + eps||^2 = 1 + d * variance; check via the unnormalised noise cosine
    d, var = 256, 0.015
    t = F.normalize(torch.ones(1, d), dim=-1).expand(4000, -1)
    cos = (noise_injection(t, var, generator=torch.Generator().manual_seed(1)) * t).sum(1).mean()
    assert abs(float(cos) - (1 + d * var) ** -0.5) < 0.01


def test_noise_injection_normalises_first():
    # official utils.noise_injection: normalize(normalize(x) + sqrt(var) * N(0, I)); the input's scale is irrelevant
    x = torch.randn(40, 8) * 7
    eps = torch.randn(40, 8, generator=torch.Generator().manual_seed(3)) * 0.015 ** 0.5
    expected = F.normalize(F.normalize(x, dim=-1) + eps, dim=-1)
    for scale in (1.0, 0.01, 50.0):
        got = noise_injection(scale * x, 0.015, generator=torch.Generator().manual_seed(3))
        assert torch.allclose(got, expected, atol=1e-6)


def _santa_reference(santa: SantaMemory, v: torch.Tensor) -> torch.Tensor:
    """Loop-based Santa with zero noise, written independently of the vectorised code.

    The query is used as given (the official encode_audio works on the raw CLAP audio embedding), or as its
    unit vector when the memory was built with ``normalize_query=True``.
    """
    out = []
    labels = torch.cdist(santa.bank, santa.centres).argmin(1)
    for q in v:
        q = q / q.norm() if santa.normalize_query else q
        c = int(((santa.centres - q) ** 2).sum(1).argmin())
        members = torch.nonzero(labels == c).flatten().tolist()
        members += [members[0]] * max(0, santa.k - len(members))  # pad with the cluster's first member
        members.sort(key=lambda i: float(((santa.bank[i] - q) ** 2).sum()))
        m = santa.bank[members[: santa.k]]
        w = torch.softmax(santa.temperature * (m @ q), 0)
        out.append(F.normalize((1 - santa.lam) * q + santa.lam * (w[:, None] * m).sum(0), dim=0))
    return torch.stack(out)


def test_santa_matches_bruteforce_and_weights_sum_to_one():
    bank, v = _unit(300, 8, 0), _unit(20, 8, 1)
    santa = SantaMemory(bank, n_clusters=10, k=16, temperature=10.0, lam=0.3, noise_variance=0.0,
                        generator=torch.Generator().manual_seed(0))
    assert torch.allclose(santa.fuse(v), _santa_reference(santa, v), atol=1e-5)
    idx = santa.neighbours(v)
    w = santa.weights(v, noise_injection(santa.bank[idx], 0.015, generator=torch.Generator().manual_seed(1)))
    assert idx.shape == (20, 16) and torch.allclose(w.sum(1), torch.ones(20), atol=1e-6) and (w > 0).all()


def test_santa_on_the_raw_audio_embedding_and_the_normalised_option():
    bank, unit = _unit(300, 8, 10), _unit(25, 8, 11)
    raw = 3.0 * unit  # a LayerNorm output of width 8 has norm about sqrt(8)
    kw = dict(n_clusters=10, k=16, temperature=10.0, lam=0.3, noise_variance=0.0)
    santa = SantaMemory(bank, generator=torch.Generator().manual_seed(0), **kw)
    normed = SantaMemory(bank, generator=torch.Generator().manual_seed(0), normalize_query=True, **kw)
    assert not santa.normalize_query and normed.normalize_query
    # default: Santa on the raw query, f = normalize((1 - lam) a + lam sum w m), w = softmax(T <a, m>)
    assert torch.allclose(santa.fuse(raw), _santa_reference(santa, raw), atol=1e-5)
    # hand formula for one query, with its neighbours taken from the brute-force order
    a = raw[0]
    labels = torch.cdist(santa.bank, santa.centres).argmin(1)
    c = int(torch.cdist(a[None], santa.centres).argmin())
    members = sorted(torch.nonzero(labels == c).flatten().tolist(), key=lambda i: float((santa.bank[i] - a).norm()))
    m = santa.bank[(members + [members[0]] * 16)[:16]]
    w = torch.exp(10.0 * (m @ a)) / torch.exp(10.0 * (m @ a)).sum()
    assert torch.allclose(santa.fuse(raw)[0], F.normalize(0.7 * a + 0.3 * (w[:, None] * m).sum(0), dim=0), atol=1e-5)
    # the normalised option is Santa on a / |a|; the two agree on unit queries and differ on raw ones
    assert torch.allclose(normed.fuse(raw), santa.fuse(unit), atol=1e-6)
    assert torch.allclose(normed.fuse(unit), santa.fuse(unit), atol=1e-6)
    assert (santa.fuse(raw) - normed.fuse(raw)).abs().max() > 1e-2
    # on a raw query the audio term dominates more: the fused vector stays closer to the audio direction
    assert (santa.fuse(raw) * unit).sum(1).mean() > (normed.fuse(raw) * unit).sum(1).mean()
    with pytest.raises(ValueError, match="normalize_query"):
        SantaMemory(bank, normalize_query="yes", **kw)


def test_santa_padding_when_cluster_smaller_than_k():
    bank, v = _unit(40, 6, 2), _unit(10, 6, 3)
    santa = SantaMemory(bank, n_clusters=8, k=32, lam=0.5, noise_variance=0.0, generator=torch.Generator().manual_seed(0))
    assert santa.members.shape[1] < 32  # every cluster is smaller than k
    idx = santa.neighbours(v)
    assert idx.shape == (10, 32)
    first = santa.members[torch.cdist(v, santa.centres).argmin(1), 0]
    size = (santa.members[torch.cdist(v, santa.centres).argmin(1)] >= 0).sum(1)
    assert torch.equal((idx == first[:, None]).sum(1), 32 - size + 1)  # first member repeated to fill k
    assert torch.allclose(santa.fuse(v), _santa_reference(santa, v), atol=1e-5)


def test_santa_limits():
    bank, v = _unit(200, 8, 4), _unit(15, 8, 5)
    g = torch.Generator().manual_seed(0)
    assert torch.allclose(SantaMemory(bank, 10, 8, lam=0.0, generator=g).fuse(v), v, atol=1e-6)
    santa = SantaMemory(bank, 10, 8, temperature=1e5, lam=1.0, noise_variance=0.0, generator=g)
    idx = santa.neighbours(v)
    assert torch.allclose(santa.fuse(v), bank[idx[:, 0]], atol=1e-5)  # nearest item of the nearest cluster


def test_kmeans_labels_are_nearest_centres():
    x = torch.cat([_unit(50, 4, 6) + 3, _unit(50, 4, 7) - 3])
    centres, labels = kmeans(x, 2, 10, torch.Generator().manual_seed(0))
    assert torch.equal(labels, torch.cdist(x, centres).argmin(1))
    assert len(set(labels[:50].tolist())) == 1 and labels[0] != labels[50]


def test_mapper_shape_and_bad_input():
    mapper = TransformerMapper(dim_clip=32, dim_embed=48, prefix_len=5, clip_len=3, n_layers=2, n_heads=4)
    assert mapper(torch.randn(7, 32)).shape == (7, 5, 48)
    with pytest.raises(ValueError, match="shape"):
        mapper(torch.randn(7, 31))
    with pytest.raises(ValueError, match="n_layers"):
        TransformerMapper(32, 48, n_layers=0)


def test_text_only_training_never_calls_encode_audio():
    torch.manual_seed(0)
    clap, lm = TinyCLAP(), TinyLM(d=32, n_layers=1)
    mapper = TransformerMapper(32, 32, prefix_len=2, clip_len=2, n_layers=1, n_heads=4)
    model = MATS(clap, mapper, lm, use_santa=False)
    s = make_scenes(16, seed=0)
    cap, ans = torch.from_numpy(s.caption), torch.from_numpy(s.caption)
    prompt = torch.full((16, 1), CAPTION_PROMPT)
    with mock.patch.object(clap, "encode_audio", side_effect=AssertionError("audio used in training")):
        loss = model.loss((cap, prompt, ans))
        loss.backward()
    assert torch.isfinite(loss) and mapper.linear.weight.grad.abs().sum() > 0
    assert clap.word.weight.grad is None  # CLAP stays frozen


def test_tiny_clap_returns_raw_layernorm_embeddings_and_cosine_logits():
    torch.manual_seed(0)
    clap = TinyCLAP()
    audio, text = torch.randn(5, 64), torch.from_numpy(make_scenes(4, seed=1).caption)
    a, t = clap.encode_audio(audio), clap.encode_text(text)
    # LayerNorm output (unit gain at init): zero mean, norm sqrt(dim) per row, i.e. not unit vectors
    assert torch.allclose(a.mean(1), torch.zeros(5), atol=1e-5)
    assert torch.allclose(a.norm(dim=1), torch.full((5,), 32 ** 0.5), rtol=1e-3)
    cos = F.normalize(a, dim=-1) @ F.normalize(t, dim=-1).T
    assert torch.allclose(clap(audio, text), clap.log_scale.exp().clamp(max=100) * cos, atol=1e-5)


def test_scenes_captions_name_the_concepts_and_f1():
    s = make_scenes(200, seed=3)
    assert np.array_equal(concepts_in(s.caption), s.concepts)
    assert np.array_equal(concepts_in(s.sounds), s.concepts)
    assert set(s.concepts.sum(1)) == {1, 2}
    pred, true = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 0]]), np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0]])
    assert np.allclose(set_f1(pred, true), [2 / 3, 0.0, 1.0])


def test_bad_input_raises():
    with pytest.raises(ValueError, match="variance"):
        noise_injection(torch.randn(3, 4), -0.1)
    with pytest.raises(ValueError, match="lam"):
        SantaMemory(_unit(10, 4, 0), 2, 2, lam=1.5)
    with pytest.raises(ValueError, match="n_clusters"):
        SantaMemory(_unit(10, 4, 0), 20, 2)
    with pytest.raises(ValueError, match="use_santa"):
        MATS(TinyCLAP(), TransformerMapper(32, 32, 2, 2, 1, 4), TinyLM(d=32), use_santa=True)


def test_smoke_run():
    exp = EXPERIMENTS[0]
    m = exp.run(exp.make_config("smoke"), seed=0)
    for c in "abcd":
        assert 0.0 <= m[f"f1_{c}"] <= 1.0 and 0.0 <= m[f"acc_{c}"] <= 1.0
    assert m["text_dist_ratio"] < 1.0  # Santa moves audio embeddings toward the training text
    assert 0.0 < m["paired_cosine"] < 0.99  # a modality gap exists
    assert m["f1_santa_minus_noise"] == pytest.approx(m["f1_c"] - m["f1_b"])


def test_santa_memory_is_buffers_and_loads_into_an_instance_of_another_size():
    g = torch.Generator().manual_seed(0)
    santa = SantaMemory(_unit(60, 8, 0), n_clusters=5, k=4, noise_variance=0.0, generator=g)
    assert {name for name, _ in santa.named_buffers()} == {"bank", "centres", "members"}
    other = SantaMemory(_unit(30, 8, 1), n_clusters=7, k=4, noise_variance=0.0)
    other.load_state_dict(santa.state_dict())  # buffers take the stored memory's shapes
    v = _unit(9, 8, 2)
    assert torch.equal(other(v), santa.fuse(v))
    wide = santa.double()
    assert wide.bank.dtype == torch.float64 and wide(v.double()).dtype == torch.float64


def test_mats_forward_is_the_teacher_forced_logits_and_holds_santa():
    torch.manual_seed(0)
    clap, lm = TinyCLAP(), TinyLM(d=32, n_layers=1)
    mapper = TransformerMapper(32, 32, prefix_len=2, clip_len=2, n_layers=1, n_heads=4)
    santa = SantaMemory(_unit(50, 32, 3), n_clusters=4, k=3, noise_variance=0.0)
    model = MATS(clap, mapper, lm, use_santa=True, santa=santa).eval()
    audio, tokens = torch.randn(3, 64), torch.full((3, 2), CAPTION_PROMPT)
    logits = model(audio, tokens)
    emb = santa.fuse(clap.encode_audio(audio))  # Santa on the raw audio embedding
    assert logits.shape == (3, 1 + 2 + 2, lm.head.out_features)
    assert torch.allclose(logits, model._logits_from_embedding(emb, tokens))
    assert any(k.startswith("santa.") for k in model.state_dict())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False).filter(lambda v: abs(v) > 1e-3), min_size=2, max_size=8),
       st.floats(0.0, 0.5))
def test_noise_injection_rows_are_unit_vectors(values, variance):
    x = torch.tensor([values], dtype=torch.float64)
    y = noise_injection(x, variance, generator=torch.Generator().manual_seed(0))
    assert y.dtype == torch.float64 and torch.allclose(y.norm(dim=-1), torch.ones(1, dtype=torch.float64))


def test_method_settings_are_one_nested_mats_config():
    """The experiment holds MATS's settings as one MATSConfig (``mats``): presets and ``--set`` reach it by dotted
    keys, and a bad value raises ConfigError naming the dotted key."""
    exp = EXPERIMENTS[0]
    assert WorldConfig().mats == MATSConfig()
    assert not {"train_steps", "noise_variance", "prefix_len", "lam"} & set(exp.fields)
    assert {"mats.train_steps", "mats.noise_variance", "mats.prefix_len", "mats.lam", "mats.lr"} <= set(exp.fields)
    smoke = exp.make_config("smoke")
    assert (smoke.mats.train_steps, smoke.mats.n_clusters, smoke.n_train) == (30, 20, 300)
    full = exp.make_config("full")
    assert (full.mats.train_steps, full.mats.prefix_len, full.mats.mapper_layers) == (2000, 10, 8)
    cfg = exp.make_config("smoke", {"mats.noise_variance": 0.02, "mats.santa_normalize_query": True})
    assert (cfg.mats.noise_variance, cfg.mats.santa_normalize_query, cfg.mats.train_steps) == (0.02, True, 30)
    with pytest.raises(ConfigError, match=r"WorldConfig\.mats\.lam must be in \[0, 1\]"):
        exp.make_config("smoke", {"mats.lam": 1.5})
    with pytest.raises(ConfigError, match=r"WorldConfig\.mats\.k must be > 0"):
        exp.make_config("smoke", {"mats.k": 0})
    with pytest.raises(ConfigError, match=r"WorldConfig\.mats\.prefix_len must be <= 57"):
        exp.make_config("smoke", {"mats.prefix_len": 58})  # the tiny LM's 64 positions


def test_train_mats_text_mode_fits_without_audio_and_is_deterministic():
    """The recipe: text-only training lowers the loss on its own data, never reads audio, and repeats exactly."""
    scenes = make_scenes(64, seed=0)
    cfg = MATSConfig(prefix_len=2, mapper_layers=1, train_steps=15, batch_size=16)

    def fresh():
        torch.manual_seed(0)
        return MATS(TinyCLAP(), TransformerMapper(32, 32, 2, 2, 1, 4), TinyLM(d=32), use_santa=False,
                    noise_variance=cfg.noise_variance)

    cap = torch.from_numpy(scenes.caption[:32])
    prompt = torch.full((32, 1), CAPTION_PROMPT)

    def loss(m):
        with torch.no_grad():
            return float(m.loss((cap, prompt, cap), generator=torch.Generator().manual_seed(1)))

    before = loss(fresh())
    model = fresh()
    with mock.patch.object(TinyCLAP, "encode_audio", side_effect=AssertionError("audio read")):
        assert train_mats(model, scenes, cfg, seed=0) is model
    assert loss(model) < before
    again = train_mats(fresh(), scenes, cfg, seed=0)
    for p, q in zip(model.parameters(), again.parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="mode"):
        train_mats(fresh(), scenes, cfg, seed=0, mode="image")


def test_text_only_loss_conditions_on_the_noised_caption_embedding():
    """MATS.loss is the next-token loss given normalize(normalize(E_T(caption)) + eps), eps ~ N(0, 0.015 I): a spy sees
    that embedding (noise generator replayed), not the clean one, and the loss is the loss from it."""
    torch.manual_seed(0)
    clap, lm = TinyCLAP(), TinyLM(d=32, n_layers=1)
    model = MATS(clap, TransformerMapper(32, 32, 2, 2, 1, 4), lm, use_santa=False, noise_variance=0.015)
    s = make_scenes(16, seed=0)
    cap = torch.from_numpy(s.caption)
    prompt = torch.full((16, 1), CAPTION_PROMPT)
    seen = []
    real = model._loss_from_embedding

    def spy(emb, *args):
        seen.append(emb)
        return real(emb, *args)

    with torch.no_grad(), mock.patch.object(model, "_loss_from_embedding", side_effect=spy):
        got = model.loss((cap, prompt, cap), generator=torch.Generator().manual_seed(5))
    t = F.normalize(clap.encode_text(cap), dim=-1).detach()
    noised = noise_injection(t, 0.015, generator=torch.Generator().manual_seed(5))
    assert len(seen) == 1 and torch.equal(seen[0], noised)
    assert (seen[0] - t).norm(dim=-1).min() > 0.1  # the noise moves every row (|eps| ~ sqrt(32 * 0.015) ~ 0.7)
    with torch.no_grad():
        assert torch.equal(got, real(noised, prompt, cap))


def test_santa_noises_the_retrieved_memory_items():
    """f_Santa uses the noised items m~_j = noise_injection(m_j, 0.015) in both the softmax and the sum (generator
    replayed: exact up to float32 rounding, atol 1e-6), so it differs from Santa on the clean items."""
    bank, v = _unit(200, 8, 20), 3.0 * _unit(12, 8, 21)
    kw = dict(n_clusters=10, k=8, temperature=10.0, lam=0.3)
    santa = SantaMemory(bank, noise_variance=0.015, generator=torch.Generator().manual_seed(0), **kw)
    clean = SantaMemory(bank, noise_variance=0.0, generator=torch.Generator().manual_seed(0), **kw)
    got = santa.fuse(v, generator=torch.Generator().manual_seed(4))
    mem = noise_injection(santa.bank[santa.neighbours(v)], 0.015, generator=torch.Generator().manual_seed(4))
    w = torch.softmax(10.0 * torch.einsum("bd,bkd->bk", v, mem), dim=1)
    assert torch.allclose(got, F.normalize(0.7 * v + 0.3 * (w[:, None, :] @ mem).squeeze(1), dim=-1), atol=1e-6)
    assert (got - clean.fuse(v)).abs().max() > 1e-3


def test_method_defaults_are_the_papers_constants():
    """sigma^2 = 0.015, 100 k-means clusters, k = 32, T = 10, lambda = 0.3, Santa on the raw query: in MATSConfig and
    in the defaults of noise_injection, SantaMemory and MATS."""
    import inspect

    cfg = MATSConfig()
    assert (cfg.noise_variance, cfg.n_clusters, cfg.k, cfg.temperature, cfg.lam, cfg.santa_normalize_query) == (
        0.015, 100, 32, 10.0, 0.3, False)
    santa = inspect.signature(SantaMemory).parameters
    assert {k: santa[k].default for k in ("n_clusters", "k", "temperature", "lam", "noise_variance",
                                          "kmeans_iters", "normalize_query")} == dict(
        n_clusters=100, k=32, temperature=10.0, lam=0.3, noise_variance=0.015, kmeans_iters=10, normalize_query=False)
    assert inspect.signature(noise_injection).parameters["variance"].default == 0.015
    assert inspect.signature(MATS).parameters["noise_variance"].default == 0.015
