"""HaploVL-mini: attention mask semantics, placeholder checks, exact LM inheritance, stage-1 plumbing, smoke run.

The method's defining elements (the project page's Figs. 1-2 and the paper's Algorithm 1, second-hand, and the
released model code; see docs/papers/single_transformer_lmm.md, "Method") and the tests that fail when one is removed
or altered:

1. Early fusion: the patch embeddings are scattered into the one token sequence at the ``<image>`` placeholders:
   ``test_future_text_never_changes_earlier_logits_but_image_is_bidirectional``,
   ``test_stage1_loss_is_zero_when_pre_decoder_is_the_teacher``,
   ``test_stage1_ctp_closed_form_with_an_orthogonal_embedding_table``.
2. The attention mask: causal for text, bidirectional inside each image (``attention_start_ids``):
   ``test_mask_matches_brute_force``, ``test_vectorised_mask_matches_the_span_mask``,
   ``test_future_text_never_changes_earlier_logits_but_image_is_bidirectional``.
3. Pre-decoder -> connector -> post-decoder, the post-decoder inherited from the LLM:
   ``test_init_post_from_lm_is_exact_and_identity_pre_reproduces_lm``.
4. Stage 1's text loss, current-token prediction (Algorithm 1): ``logit_scale * (H_t h_pre) E_LLM^T`` classified
   against the token at each position: ``test_current_token_prediction_loss_matches_a_brute_force_softmax``,
   ``test_stage1_ctp_closed_form_with_an_orthogonal_embedding_table``.
5. Stage 1's visual loss: the visual head's outputs at the image positions distilled toward the frozen vision
   teacher, ``L1 = L_v + w L_t``: ``test_stage1_visual_loss_is_the_distance_to_the_frozen_vision_teacher``,
   ``test_stage1_loss_is_zero_when_pre_decoder_is_the_teacher``,
   ``test_stage1_ctp_closed_form_with_an_orthogonal_embedding_table``.
6. Stage 1 trains the pre-decoder (and the embeddings) on the pre-decoder's outputs; the inherited post-decoder and
   the teachers stay fixed: ``test_stage1_trains_the_pre_decoder_and_keeps_the_post_decoder_and_teachers_fixed``,
   ``test_stage1_visual_loss_is_the_distance_to_the_frozen_vision_teacher``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.common.checks import ConfigError
from icml25.papers.single_transformer_lmm import (
    DistillHeads,
    EarlyFusionLMM,
    HaploConfig,
    TinyLM,
    TinyViT,
    attention_mask_from_ids,
    build_attention_mask,
    current_token_prediction_loss,
    init_post_from_lm,
    make_vqa,
    pretrain_stage1,
    render_scenes,
    stage1_loss,
    train_teacher_lm,
    train_vision_teacher,
)
from icml25.papers.single_transformer_lmm.data import TOK, make_questions
from icml25.papers.single_transformer_lmm.repro import EXPERIMENTS, MiniConfig

IMG = 1


def _model(**kw):
    torch.manual_seed(0)
    args = dict(vocab=40, d_pre=32, d_post=32, n_pre=1, n_post=2, n_heads=2, patch=8, img=32)
    args.update(kw)
    return EarlyFusionLMM(**args)


def test_mask_matches_brute_force():
    # text, image(3), text(2), image(2), text
    types = torch.tensor([[0, 1, 1, 1, 0, 0, 1, 1, 0]])
    spans = [[(1, 4), (6, 8)]]
    mask = build_attention_mask(types, spans)[0]
    L = types.shape[1]
    img_of = {1: 0, 2: 0, 3: 0, 6: 1, 7: 1}
    for i in range(L):
        for j in range(L):
            expected = j <= i or (i in img_of and j in img_of and img_of[i] == img_of[j])
            assert bool(mask[i, j]) == expected, (i, j)
    ids = torch.where(types == 1, IMG, 5)
    # the ids-based version agrees when images are not adjacent
    assert torch.equal(attention_mask_from_ids(ids, IMG), build_attention_mask(types, spans))


def test_mask_rejects_bad_spans():
    types = torch.tensor([[0, 1, 1, 0]])
    with pytest.raises(ValueError, match="span"):
        build_attention_mask(types, [[(0, 2)]])
    with pytest.raises(ValueError, match="cover"):
        build_attention_mask(types, [[(1, 2)]])


def test_future_text_never_changes_earlier_logits_but_image_is_bidirectional():
    m = _model().eval()
    pix = torch.rand(1, 3, 32, 32)
    ids = torch.tensor([[4] + [IMG] * 16 + [5, 6, 7]])
    base = m(ids, pix, IMG)
    ids2 = ids.clone()
    ids2[0, -1] = 9
    np.testing.assert_allclose(m(ids2, pix, IMG)[0, :-1].detach(), base[0, :-1].detach(), atol=1e-6)
    # changing the last patch changes the FIRST image token's output (bidirectional) but not the text before
    pix2 = pix.clone()
    pix2[..., 24:, 24:] += 1.0
    out2 = m(ids, pix2, IMG)
    assert torch.allclose(out2[0, 0], base[0, 0], atol=1e-6)
    assert not torch.allclose(out2[0, 1], base[0, 1], atol=1e-4)


def test_placeholder_count_must_match_images():
    m = _model()
    with pytest.raises(ValueError, match="placeholders"):
        m(torch.tensor([[IMG] * 15 + [3]]), torch.rand(1, 3, 32, 32), IMG)
    with pytest.raises(ValueError, match="no pixel_values"):
        m(torch.tensor([[IMG, 3]]), None, IMG)
    with pytest.raises(ValueError, match="pixel_values"):
        m(torch.tensor([[IMG] * 16]), torch.rand(1, 3, 30, 30), IMG)


def test_init_post_from_lm_is_exact_and_identity_pre_reproduces_lm():
    torch.manual_seed(1)
    lm = TinyLM(40, d=32, n_layers=2, n_heads=2)
    m = init_post_from_lm(_model(), lm, identity_pre=True)
    lm_sd, post_sd = lm.blocks.state_dict(), m.post.state_dict()
    assert all(torch.equal(lm_sd[k], post_sd[k]) for k in lm_sd)
    assert torch.equal(m.head.weight, lm.head.weight) and torch.equal(m.embed.weight, lm.embed.weight)
    ids = torch.randint(2, 40, (3, 7))
    np.testing.assert_allclose(m(ids).detach(), lm(ids).detach(), atol=1e-5)
    # same text-only perplexity
    ce = [torch.nn.functional.cross_entropy(f(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()) for f in (m, lm)]
    assert abs(float((ce[0] - ce[1]).detach())) < 1e-5
    with pytest.raises(ValueError, match="does not match"):
        init_post_from_lm(_model(n_post=1), lm)


def test_stage1_loss_is_zero_when_pre_decoder_is_the_teacher():
    torch.manual_seed(2)
    vit = TinyViT(d=32, n_layers=0, n_heads=2, patch=8, img=32)  # teacher = its patch embedding
    lm = TinyLM(40, d=32, n_layers=2, n_heads=2)
    m = init_post_from_lm(_model(), lm, identity_pre=True)
    m.patch_embed.load_state_dict(vit.patch_embed.state_dict())
    heads = DistillHeads(32, 32, 32)
    with torch.no_grad():
        for h in (heads.visual, heads.text):
            h.weight.copy_(torch.eye(32))
            h.bias.zero_()
    ids = torch.tensor([[3] + [IMG] * 16 + [5, 6]] * 2)
    pix = torch.rand(2, 3, 32, 32)
    for kind in ("mse", "cosine"):
        for vkind in ("mse", "cosine"):
            assert float(stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, loss=kind, visual_loss=vkind).detach()) \
                < 1e-6
    # a random pre-decoder is far from the teacher
    assert float(stage1_loss(_model(), DistillHeads(32, 32, 32), vit, lm.embed, ids, pix, IMG).detach()) > 1e-2
    with pytest.raises(ValueError, match="loss"):
        stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, loss="kl")
    with pytest.raises(ValueError, match="visual_loss"):
        stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, visual_loss="ctp")


def test_current_token_prediction_loss_matches_a_brute_force_softmax():
    # Algorithm 1: logits = logit_scale * hidden @ E^T, cross-entropy against the CURRENT token ids
    g = torch.Generator().manual_seed(4)
    hidden, table = torch.randn(7, 6, generator=g), torch.randn(11, 6, generator=g)
    ids = torch.randint(0, 11, (7,), generator=g)
    for scale in (1.0, 0.3, 14.0):
        terms = []
        for n in range(7):
            z = [scale * float(hidden[n] @ table[k]) for k in range(11)]
            zmax = max(z)
            terms.append(-(z[int(ids[n])] - zmax - np.log(sum(np.exp(v - zmax) for v in z))))
        got = float(current_token_prediction_loss(hidden, table, ids, scale))
        assert got == pytest.approx(float(np.mean(terms)), rel=1e-5)
    # the table is a fixed classifier: no gradient reaches it
    table.requires_grad_(True)
    current_token_prediction_loss(hidden.requires_grad_(True), table, ids).backward()
    assert table.grad is None and hidden.grad is not None
    for bad in (dict(logit_scale=0.0), dict(logit_scale=float("inf"))):
        with pytest.raises(ValueError, match="logit_scale"):
            current_token_prediction_loss(hidden, table, ids, **bad)
    with pytest.raises(ValueError, match="share C"):
        current_token_prediction_loss(hidden, table[:, :5], ids)
    with pytest.raises(ValueError, match="token_ids"):
        current_token_prediction_loss(hidden, table, ids[:3])


def test_stage1_ctp_closed_form_with_an_orthogonal_embedding_table():
    # E = c I (vocab = width = 32), identity pre-decoder and heads: text logits are s c^2 at the current token and
    # 0 elsewhere, so L_ctp = log(1 + (K - 1) exp(-s c^2)); the visual side is exact (teacher = patch embedding)
    torch.manual_seed(5)
    K, c, s = 32, 1.5, 0.7
    vit = TinyViT(d=K, n_layers=0, n_heads=2, patch=8, img=32)
    lm = TinyLM(K, d=K, n_layers=2, n_heads=2)
    with torch.no_grad():
        lm.embed.weight.copy_(c * torch.eye(K))
    m = init_post_from_lm(_model(vocab=K, d_pre=K, d_post=K), lm, identity_pre=True)
    m.patch_embed.load_state_dict(vit.patch_embed.state_dict())
    heads = DistillHeads(K, K, K)
    with torch.no_grad():
        for h in (heads.visual, heads.text):
            h.weight.copy_(torch.eye(K))
            h.bias.zero_()
    ids = torch.tensor([[3] + [IMG] * 16 + [5, 6, 9]] * 2)
    pix = torch.rand(2, 3, 32, 32)
    got = float(stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, loss="ctp", logit_scale=s).detach())
    assert got == pytest.approx(float(np.log1p((K - 1) * np.exp(-s * c * c))), rel=1e-5)
    # negative control: the NEXT token as target would be far costlier (it scores 0, not s c^2)
    nxt = current_token_prediction_loss(torch.eye(K)[[3, 5, 6]] * c, lm.embed.weight, torch.tensor([5, 6, 9]), s)
    assert float(nxt) > got + 0.5
    # the weight multiplies the text side only
    w = float(stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, loss="ctp", logit_scale=s, text_weight=2.0).detach())
    assert w == pytest.approx(2 * got, rel=1e-5)


def test_data_answers_follow_scene_attributes():
    rng = np.random.default_rng(0)
    pix, attrs = render_scenes(200, rng)
    q, ans, qt = make_questions(attrs, rng)
    for i in range(200):
        if qt[i] == 2:
            c = q[i, 1] - TOK["col0"]
            assert ans[i] - TOK["n0"] == (attrs[i, :, 0] == c).sum()
        if qt[i] == 0:
            cell = attrs[i, q[i, 1] - TOK["cell0"]]
            assert ans[i] == (TOK["none"] if cell[0] < 0 else TOK["col0"] + cell[0])
            # an empty cell is black (only noise)
            if cell[0] < 0:
                r, c = divmod(int(q[i, 1] - TOK["cell0"]), 2)
                assert np.abs(pix[i, :, r * 16:(r + 1) * 16, c * 16:(c + 1) * 16]).max() < 0.4
    with pytest.raises(ValueError):
        render_scenes(0, rng)


def test_generate_is_greedy_argmax():
    m = _model().eval()
    d = make_vqa(4, 0)
    ids, pix = d["input_ids"], d["pixel_values"]
    out = m.generate(ids, pix, int(TOK["IMG"]), max_new_tokens=2)
    first = m(ids, pix, int(TOK["IMG"]))[:, -1].argmax(-1)
    assert torch.equal(out[:, 0], first)
    second = m(torch.cat([ids, first[:, None]], 1), pix, int(TOK["IMG"]))[:, -1].argmax(-1)
    assert torch.equal(out[:, 1], second)
    with pytest.raises(ValueError):
        m.generate(ids, pix, int(TOK["IMG"]), max_new_tokens=0)


def test_smoke_run_metrics_consistent():
    exp = EXPERIMENTS[0]
    m = exp.run(exp.make_config("smoke"), seed=0)
    for k in ("haplo", "no_stage1", "scratch", "compositional"):
        assert 0.0 <= m[f"acc_{k}"] <= 1.0
    assert m["haplo_minus_scratch"] == pytest.approx(m["acc_haplo"] - m["acc_scratch"])
    assert m["stage1_loss_last"] < m["stage1_loss_first"]


def test_modules_follow_float64_and_distill_heads_forward():
    model = _model().double().eval()
    ids = torch.cat([torch.full((2, 16), IMG), torch.randint(3, 40, (2, 3))], 1)
    with torch.no_grad():
        assert model(ids, torch.rand(2, 3, 32, 32, dtype=torch.float64), IMG).dtype == torch.float64
    heads, h = DistillHeads(32, 6, 4), torch.randn(2, 5, 32)
    vis, txt = heads(h)
    assert torch.equal(vis, heads.visual(h)) and torch.equal(txt, heads.text(h))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=3))
def test_vectorised_mask_matches_the_span_mask(rows):
    is_img = torch.tensor(rows)
    spans = []
    for row in rows:  # maximal runs of image tokens, written out by hand
        runs, start = [], None
        for i, flag in enumerate([*row, False]):
            if flag and start is None:
                start = i
            if not flag and start is not None:
                runs.append((start, i))
                start = None
        spans.append(runs)
    ids = torch.where(is_img, IMG, 5)
    assert torch.equal(attention_mask_from_ids(ids, IMG), build_attention_mask(is_img.long(), spans))


def test_recipe_settings_are_one_nested_haplo_config():
    """The experiment holds the recipe's settings as one HaploConfig (``haplo``): presets and ``--set`` reach it by
    dotted keys, and a bad value raises ConfigError naming the dotted key."""
    exp = EXPERIMENTS[0]
    assert MiniConfig().haplo == HaploConfig()
    assert not {"s1_steps", "s2_steps", "lr", "batch", "n_pre", "distill_loss"} & set(exp.fields)
    assert {"haplo.s1_steps", "haplo.s2_steps", "haplo.lr", "haplo.distill_loss"} <= set(exp.fields)
    smoke = exp.make_config("smoke")
    assert (smoke.haplo.s1_steps, smoke.haplo.s2_steps, smoke.haplo.batch, smoke.d) == (5, 5, 32, 32)
    assert exp.make_config("full").haplo.n_pre == 4
    cfg = exp.make_config("smoke", {"haplo.distill_loss": "mse", "haplo.ctp_logit_scale": 2.0})
    assert (cfg.haplo.distill_loss, cfg.haplo.ctp_logit_scale, cfg.haplo.s1_steps) == ("mse", 2.0, 5)
    with pytest.raises(ConfigError, match=r"MiniConfig\.haplo\.distill_loss must be one of"):
        exp.make_config("smoke", {"haplo.distill_loss": "kl"})
    with pytest.raises(ConfigError, match=r"MiniConfig\.haplo\.lr must be > 0"):
        exp.make_config("smoke", {"haplo.lr": 0.0})


def test_teacher_recipes_learn_and_repeat():
    """The teachers' training loops lower their losses on the synthetic scenes and are deterministic per generator."""
    data = make_vqa(128, 0, 16, 32)

    def vit_acc(steps):
        torch.manual_seed(0)
        return train_vision_teacher(TinyViT(16, 1, 2, 16, 32), data, steps, 3e-3, 32, torch.Generator().manual_seed(0))

    assert vit_acc(60) > 0.9 > vit_acc(1)  # per-cell colour/shape/size, 'empty' included
    # constant rows: the next token is the current one
    seqs = torch.randint(3, 20, (64, 1), generator=torch.Generator().manual_seed(3)).repeat(1, 6)

    def lm_loss(steps):
        torch.manual_seed(1)
        return train_teacher_lm(TinyLM(40, 16, 1, 2), seqs, steps, 3e-3, 16, torch.Generator().manual_seed(2))

    assert lm_loss(80) < 0.5 * lm_loss(1) and lm_loss(80) == lm_loss(80)
    with pytest.raises(ValueError, match="batch"):
        train_teacher_lm(TinyLM(40, 16, 1, 2), seqs, 1, 3e-3, 0, torch.Generator())


def test_stage1_visual_loss_is_the_distance_to_the_frozen_vision_teacher():
    """L_v = D(H_v h_pre[img], ViT(x)) on a random pre-decoder, heads and teacher (D = MSE or 1 - cos), computed
    independently from forward_pre and the teacher; L1 = L_v + w L_ctp. float32: rel 1e-5."""
    torch.manual_seed(6)
    vit, lm = TinyViT(d=16, n_layers=1, n_heads=2, patch=8, img=32), TinyLM(40, d=32, n_layers=1, n_heads=2)
    m, heads = _model(), DistillHeads(32, 16, 32)
    ids = torch.tensor([[3] + [IMG] * 16 + [5, 6]] * 2)
    pix = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        h, _ = m.forward_pre(ids, pix, IMG)
        is_img = ids == IMG
        pv, target = heads.visual(h[is_img]), vit(pix).reshape(-1, 16)
        mse = float(((pv - target) ** 2).mean())
        cos = float((1 - torch.nn.functional.cosine_similarity(pv, target, dim=-1)).mean())
        ctp = float(current_token_prediction_loss(heads.text(h[~is_img]), lm.embed.weight, ids[~is_img], 0.5))
        for vkind, lv in (("mse", mse), ("cosine", cos)):
            got = stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, text_weight=0.0, visual_loss=vkind)
            assert float(got) == pytest.approx(lv, rel=1e-5) and lv > 1e-2
        full = stage1_loss(m, heads, vit, lm.embed, ids, pix, IMG, text_weight=2.0, logit_scale=0.5)
        assert float(full) == pytest.approx(mse + 2.0 * ctp, rel=1e-5)


def test_stage1_trains_the_pre_decoder_and_keeps_the_post_decoder_and_teachers_fixed():
    """Stage 1 moves the token/patch embeddings and the pre-decoder; the inherited post-decoder, connector, final norm,
    LM head and both teachers stay bit-identical."""
    torch.manual_seed(8)
    vit, lm = TinyViT(d=16, n_layers=1, n_heads=2, patch=8, img=32), TinyLM(40, d=32, n_layers=2, n_heads=2)
    m = init_post_from_lm(_model(), lm)
    data = make_vqa(16, 0)
    assert int(TOK["IMG"]) == IMG and int(data["input_ids"].max()) < 40
    frozen = {k: v.clone() for k, v in m.state_dict().items() if not k.startswith(("embed.", "patch_embed.", "pre."))}
    moving = {k: v.clone() for k, v in m.state_dict().items() if k.startswith(("embed.", "patch_embed.", "pre."))}
    teachers = [p.detach().clone() for p in (*vit.parameters(), *lm.parameters())]
    pretrain_stage1(m, vit, lm.embed, data, steps=3, image_token_id=IMG, lr=1e-2, batch=8)
    state = m.state_dict()
    assert all(torch.equal(state[k], v) for k, v in frozen.items())
    assert all(not torch.equal(state[k], v) for k, v in moving.items() if "weight" in k)
    assert all(torch.equal(a, b) for a, b in zip(teachers, (*vit.parameters(), *lm.parameters())))
