"""SIRA: n-gram LM against hand-computed Kneser-Ney, SI masking rules, watermark nulls and closed forms,
rewriter invariants, bad input, and a smoke run.

The attack's defining elements (the official ``scripts/attack_onestep.py``, see docs/papers/sira.md, "Method") and
the tests that fail when one is removed or altered (each checked by a mutation of a scratch copy):

1. Self-information ``SI_i = -log p(t_i | t_<i)`` of tokens 1..n-1 under the attacker's surrogate LM (a sign flip or
   an off-by-one): ``test_self_information_matches_hand_computed_kneser_ney``,
   ``test_trigram_rows_are_distributions_and_si_gathers_them``, ``test_smoke_run_values``.
2. The masking rule: ``tau = percentile_p(SI)``, tokens with ``SI <= tau`` kept, the surprising rest blanked, the first
   token kept: ``test_blank_template_percentile_rule``, ``test_sira_blanks_high_si_tokens``,
   ``test_rewriter_keeps_unblanked_and_preserves_concepts``, ``test_attack_settings_are_one_nested_sira_config``,
   ``test_smoke_run_values``.
3. The official constant p = 30: ``test_sira_attack_default_is_the_official_30th_percentile``,
   ``test_defaults_are_the_official_markllm_configs``, ``test_attack_settings_are_one_nested_sira_config``.
4. The rewrite carries the reference paraphrase's information (each blank filled within R's concept):
   ``test_rewriter_keeps_unblanked_and_preserves_concepts``, ``test_smoke_run_values``.
5. The rewrite is the attacker LM's, left to right on the already rewritten prefix (the stand-in for the attack LLM):
   ``test_rewriter_fills_each_blank_by_the_lm_on_the_rewritten_left_context``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from icml25.core.experiment import ConfigError
from icml25.papers.sira import (
    KGW,
    ConceptRewriter,
    EntropyGatedKGW,
    HighSIMaskRewrite,
    KneserNeyLM,
    LowSIMaskRewrite,
    RandomMaskRewrite,
    SIRAAttack,
    SIRAConfig,
    Unigram,
    WordSubstitution,
    blank_template,
    build_lexicon,
    green_list_matrix,
    markllm_green_lists,
    reference_paraphrase,
    sample_corpus,
    self_information,
)
from icml25.papers.sira.data import load_prompts, sample_prompts
from icml25.papers.sira.repro import EXPERIMENTS, SyntheticConfig, make_prompts


@pytest.fixture(scope="module")
def world():
    lex = build_lexicon()
    target = KneserNeyLM(lex.vocab_size, order=3, pad_id=lex.end_id).fit(sample_corpus(lex, 3000, seed=0))
    surrogate = KneserNeyLM(lex.vocab_size, order=2, pad_id=lex.end_id).fit(sample_corpus(lex, 3000, seed=1))
    return lex, target, surrogate


def _kn_bigram_by_hand(stream, V, d, prev, w):
    """Interpolated KN bigram probability with explicit counting loops (independent of the library)."""
    pairs = list(zip(stream[:-1], stream[1:]))
    distinct = set(pairs)
    cont = sum(1 for (a, b) in distinct if b == w) / len(distinct)
    cont = (1 - 1e-6) * cont + 1e-6 / V
    c_prev = sum(1 for (a, b) in pairs if a == prev)
    c_pw = sum(1 for (a, b) in pairs if a == prev and b == w)
    types = sum(1 for (a, b) in distinct if a == prev)
    return max(c_pw - d, 0) / c_prev + d * types / c_prev * cont


def test_self_information_matches_hand_computed_kneser_ney():
    stream = [0, 1, 0, 2, 0, 1, 3, 1, 0]
    lm = KneserNeyLM(4, order=2, discount=0.75, pad_id=3).fit(stream)
    text = [0, 1, 3, 1, 0, 2]
    expected = [-math.log(_kn_bigram_by_hand(stream, 4, 0.75, a, b)) for a, b in zip(text[:-1], text[1:])]
    np.testing.assert_allclose(self_information(lm, text), expected, rtol=1e-12)


def test_trigram_rows_are_distributions_and_si_gathers_them(world):
    lex, target, _ = world
    np.testing.assert_allclose(target.probs_.sum(axis=-1), 1.0, atol=1e-10)
    assert target.probs_.min() > 0
    x = sample_corpus(lex, 5, seed=3)[:12]
    si = self_information(target, x)
    ctx = np.concatenate([[lex.end_id], x])  # pad then text
    manual = [-np.log(target.probs_[ctx[i - 1], ctx[i], x[i]]) for i in range(1, len(x))]
    np.testing.assert_allclose(si, manual, rtol=1e-12)


def test_blank_template_percentile_rule():
    rng = np.random.default_rng(0)
    toks = list(range(21))
    si = rng.exponential(size=20)
    for p in (10, 30, 70):
        tmpl = blank_template(toks, si, p)
        assert tmpl[0] == 0  # first token (no SI) is kept
        n_blank = sum(t is None for t in tmpl)
        assert n_blank == 20 - int((si <= np.percentile(si, p)).sum())
        assert all((t is None) == (s > np.percentile(si, p)) for t, s in zip(tmpl[1:], si))
    assert None not in blank_template(toks, si, 100)
    kept = [t for t in blank_template(toks, si, 0)[1:] if t is not None]
    assert kept == [1 + int(np.argmin(si))]


def test_green_lists_reproducible_and_exact_size():
    g1, g2 = green_list_matrix(50, 0.25, key=7), green_list_matrix(50, 0.25, key=7)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(g1.sum(axis=1), np.full(50, 12))  # round(0.25*50)
    assert (g1 != green_list_matrix(50, 0.25, key=8)).any()
    uni = Unigram(0.25, 2.0, key=7).green_matrix(50)
    assert (uni == uni[0]).all()


def test_z_closed_form_on_all_green_path():
    wm = KGW(gamma=0.25, key=3)
    G = wm.green_matrix(30)
    toks = [0]
    for _ in range(40):
        toks.append(int(np.flatnonzero(G[toks[-1]])[0]))
    T = 40
    assert wm.detect(toks, vocab_size=30)[0] == pytest.approx(math.sqrt(T * 0.75 / 0.25))


def test_unwatermarked_z_is_standard_normal_and_delta_zero_is_keyless(world):
    lex, target, _ = world
    prompt = np.full((1000, 1), lex.end_id)
    plain = KGW(delta=0.0, key=1).generate(target, prompt, 60, seed=5)
    np.testing.assert_array_equal(plain, KGW(delta=0.0, key=999).generate(target, prompt, 60, seed=5))
    # the null is over the secret key: one independent key per text (a fixed key correlates texts
    # through their shared near-deterministic bigrams)
    z = np.array([KGW(key=k).detect(plain[k], lm=target)[0] for k in range(1000)])
    # repeated bigrams within a text share their green status, so language text is overdispersed
    assert abs(z.mean()) < 0.1 and 0.9 < z.std() < 1.3
    # i.i.d. uniform tokens (no repeats to speak of): exactly the N(0, 1) null of the z-test
    iid = np.random.default_rng(0).integers(0, lex.vocab_size, size=(1000, 60))
    z_iid = KGW(key=12345).detect(iid, vocab_size=lex.vocab_size)
    assert abs(z_iid.mean()) < 0.1 and 0.9 < z_iid.std() < 1.1
    zw = KGW(key=12345).detect(KGW(key=12345).generate(target, prompt[:200], 60, seed=6), lm=target)
    assert zw.mean() > 4


def test_entropy_gate_limits(world):
    lex, target, _ = world
    prompt = np.full((50, 1), lex.end_id)
    x = KGW(key=4).generate(target, prompt, 40, seed=1)
    # threshold 0: every token (all entropies > 0) is biased and scored, i.e. plain KGW
    np.testing.assert_array_equal(EntropyGatedKGW(0.0, key=4).generate(target, prompt, 40, seed=1), x)
    np.testing.assert_allclose(EntropyGatedKGW(0.0, key=4).detect(x, lm=target), KGW(key=4).detect(x, lm=target))
    # threshold above log V: nothing is biased or scored
    big = EntropyGatedKGW(10.0, key=4)
    np.testing.assert_array_equal(big.generate(target, prompt, 40, seed=1),
                                  KGW(delta=0.0, key=4).generate(target, prompt, 40, seed=1))
    assert (big.detect(x, lm=target) == 0).all()
    with pytest.raises(ValueError, match="lm"):
        big.detect(x)


def test_rewriter_keeps_unblanked_and_preserves_concepts(world):
    lex, _, surrogate = world
    x = KGW(key=1).generate(world[1], np.full((30, 1), lex.end_id), 50, seed=2)
    ref = reference_paraphrase(lex, x)
    rw = ConceptRewriter(lex, surrogate, seed=0)
    blanks = np.random.default_rng(1).random(x.shape) < 0.5
    y = rw.fill(x, blanks, ref)
    np.testing.assert_array_equal(y[~blanks], x[~blanks])
    np.testing.assert_array_equal(lex.concept_of[y], ref)
    assert (y[blanks] != x[blanks]).mean() > 0.2  # blanks really are resampled
    np.testing.assert_array_equal(SIRAAttack(surrogate, rw, percentile=100).attack(x, ref), x)
    np.testing.assert_array_equal(RandomMaskRewrite(rw, 0.3).blanks(x).sum(axis=1), round(0.3 * 49))
    ws = WordSubstitution(lex, 1.0, seed=0).attack(x)
    np.testing.assert_array_equal(lex.concept_of[ws], ref)
    multi = lex.members[lex.concept_of[x]].sum(axis=2) > 1
    assert (ws[multi] != x[multi]).all() and (ws[~multi] == x[~multi]).all()


def test_sira_blanks_high_si_tokens(world):
    lex, target, surrogate = world
    x = KGW(key=1).generate(target, np.full((20, 1), lex.end_id), 60, seed=3)
    sira = SIRAAttack(surrogate, ConceptRewriter(lex, surrogate), percentile=30)
    b = sira.blanks(x)
    si = self_information(surrogate, x)
    assert not b[:, 0].any()
    tau = np.percentile(si, 30, axis=1, keepdims=True)
    np.testing.assert_array_equal(b[:, 1:], si > tau)
    assert 0.6 < b[:, 1:].mean() < 0.72


@pytest.mark.parametrize("call, match", [
    (lambda: KneserNeyLM(10, order=4), "order"),
    (lambda: KneserNeyLM(10, discount=1.5), "discount"),
    (lambda: KneserNeyLM(5).fit([0, 1, 9]), "token ids"),
    (lambda: KneserNeyLM(5).next_probs([[0, 1]]), "not fitted"),
    (lambda: KGW(gamma=1.2), "gamma"),
    (lambda: KGW(delta=-1), "delta"),
    (lambda: KGW(context=2), "context"),
    (lambda: EntropyGatedKGW(threshold=-1), "threshold"),
    (lambda: blank_template([1, 2, 3], [0.1], 30), "len"),
    (lambda: blank_template([1, 2, 3], [0.1, 0.2], 130), "percentile"),
    (lambda: RandomMaskRewrite(None, 1.5), "rate"),
    (lambda: build_lexicon().encode("the zebra"), "zebra"),
])
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: e.name)
def test_smoke_run_values(exp):
    m = exp.run(exp.make_config("smoke"), seed=0)
    assert m["max_fpr"] <= 0.05
    assert m["uniform_nll"] == pytest.approx(math.log(149))
    assert m["target_lm_nll"] < m["uniform_nll"] - 2 and m["surrogate_lm_nll"] < m["uniform_nll"] - 2  # they learned
    for s in ("kgw", "unigram", "gated"):
        assert m[f"{s}_none_edit"] == 0 and m[f"{s}_none_concept_acc"] == 1
        assert m[f"{s}_sira_concept_acc"] == 1.0
        # Unigram's strength in a 149-word language depends on which function words its one list holds
        assert m[f"{s}_sira_z"] < m[f"{s}_none_z"] - (1 if s == "unigram" else 3)
        assert 0.6 < m[f"{s}_sira_blank_rate"] < 0.75
        assert m[f"{s}_entropy_blanked"] > m[f"{s}_entropy_kept"]
        assert m[f"{s}_green_excess_share_blanked"] > 0.7


@pytest.fixture(scope="module")
def tiny_lm():
    return KneserNeyLM(4, order=2, discount=0.75, pad_id=3).fit([0, 1, 0, 2, 0, 1, 3, 1, 0])


@pytest.mark.parametrize("ids, exc, match", [
    ([[0, -1, 1]], ValueError, r"token_ids must be token ids in \[0, 4\) \(vocab_size=4\), got range \[-1, 1\]"),
    ([0, 1.0, 2], TypeError, "token_ids must be integer token ids, got dtype float64"),
    (np.array([[0.0, 1.7, 2.0]], dtype=np.float32), TypeError, "token_ids must be integer token ids"),
    ([True, False, True], TypeError, "token_ids must be integer token ids, got dtype bool"),
    ([0, 1, 4], ValueError, r"token_ids must be token ids in \[0, 4\) \(vocab_size=4\), got range \[0, 4\]"),
    (np.array([[0, 1], [2, 7]], dtype=np.uint8), ValueError, r"vocab_size=4"),
])
def test_bad_input_self_information_token_ids(tiny_lm, ids, exc, match):
    with pytest.raises(exc, match=match):
        self_information(tiny_lm, ids)


def test_self_information_accepts_integer_dtypes_unchanged(tiny_lm):
    ref = self_information(tiny_lm, np.array([[0, 1, 3, 1, 0, 2]], dtype=np.int64))
    for ids in ([[0, 1, 3, 1, 0, 2]], np.array([[0, 1, 3, 1, 0, 2]], dtype=np.uint8),
                np.array([[0, 1, 3, 1, 0, 2]], dtype=np.int32), np.array([[0, 1, 3, 1, 0, 2]], dtype=object),
                [[np.int64(0), 1, 3, np.int16(1), 0, 2]]):
        np.testing.assert_array_equal(self_information(tiny_lm, ids), ref)
    np.testing.assert_array_equal(self_information(tiny_lm, [0, 1, 3, 1, 0, 2]), ref[0])


def test_bad_input_token_ids_across_public_api(world, tiny_lm):
    lex, target, surrogate = world
    V = lex.vocab_size
    x = KGW(key=1).generate(target, np.full((3, 1), lex.end_id), 12, seed=0)
    ref = reference_paraphrase(lex, x)
    rw = ConceptRewriter(lex, surrogate, seed=0)
    neg, big, flt = x.copy(), x.copy(), x.astype(float)
    neg[1, 4], big[2, 5] = -1, V
    vs = rf"\[0, {V}\) \(vocab_size={V}\)"
    bad = [  # (call, exception, message)
        (lambda: KneserNeyLM(4).fit([0, 1, 2.5, 3]), TypeError, "stream must be integer token ids"),
        (lambda: tiny_lm.next_probs([[0, -1]]), ValueError, r"context must be token ids in \[0, 4\)"),
        (lambda: tiny_lm.next_probs([[0, 1.5]]), TypeError, "context must be integer token ids"),
        (lambda: tiny_lm.next_probs([[4]]), ValueError, r"vocab_size=4"),
        (lambda: tiny_lm.sequence_probs([0, -2, 1]), ValueError, r"ids must be token ids in \[0, 4\)"),
        (lambda: tiny_lm.token_logprobs([0, 1, 5]), ValueError, r"ids must be token ids in \[0, 4\) \(vocab_size=4\)"),
        (lambda: tiny_lm.token_logprobs([0.0, 1.0]), TypeError, "ids must be integer token ids"),
        (lambda: KGW().generate(target, [[lex.end_id, -1]], 3), ValueError, rf"prompt must be token ids in {vs}"),
        (lambda: KGW().generate(target, [[1.5]], 3), TypeError, "prompt must be integer token ids"),
        (lambda: KGW().detect(neg, lm=target), ValueError, rf"tokens must be token ids in {vs}"),
        (lambda: KGW().detect(big, vocab_size=V), ValueError, rf"tokens must be token ids in {vs}"),
        (lambda: KGW().detect(flt, lm=target), TypeError, "tokens must be integer token ids"),
        (lambda: Unigram().green_flags(neg, V), ValueError, rf"tokens must be token ids in {vs}"),
        (lambda: EntropyGatedKGW().detect(flt, lm=target), TypeError, "tokens must be integer token ids"),
        (lambda: EntropyGatedKGW().scored_mask(big, lm=target), ValueError, rf"vocab_size={V}"),
        (lambda: reference_paraphrase(lex, neg), ValueError, rf"tokens must be token ids in {vs}"),
        (lambda: reference_paraphrase(lex, flt), TypeError, "tokens must be integer token ids"),
        (lambda: rw.fill(big, np.ones(x.shape, bool), ref), ValueError, rf"tokens must be token ids in {vs}"),
        (lambda: rw.fill(flt, np.ones(x.shape, bool), ref), TypeError, "tokens must be integer token ids"),
        (lambda: SIRAAttack(surrogate, rw).blanks(neg), ValueError, rf"text_tokens must be token ids in {vs}"),
        (lambda: SIRAAttack(surrogate, rw).blanks(flt), TypeError, "text_tokens must be integer token ids"),
        (lambda: SIRAAttack(surrogate, rw).attack(flt, ref), TypeError, "text_tokens must be integer token ids"),
        (lambda: SIRAAttack(surrogate, rw).attack(big, ref), ValueError, rf"text_tokens must be token ids in {vs}"),
        (lambda: RandomMaskRewrite(rw, 0.3).attack(flt, ref), TypeError, "text_tokens must be integer token ids"),
        (lambda: LowSIMaskRewrite(surrogate, rw, 0.3).blanks(neg), ValueError, "text_tokens must be token ids"),
        (lambda: HighSIMaskRewrite(surrogate, rw, 0.3).blanks(flt), TypeError, "text_tokens must be integer"),
        (lambda: WordSubstitution(lex, 0.5).attack(neg), ValueError, rf"text_tokens must be token ids in {vs}"),
        (lambda: WordSubstitution(lex, 0.5).attack(flt), TypeError, "text_tokens must be integer token ids"),
        (lambda: lex.decode([0, -1]), ValueError, rf"ids must be token ids in {vs}"),
        (lambda: lex.decode([0, 1.9]), TypeError, "ids must be integer token ids"),
    ]
    for call, exc, match in bad:
        with pytest.raises(exc, match=match):
            call()
    # valid integer input of another dtype still gives the same results
    x32 = x.astype(np.int32)
    np.testing.assert_array_equal(reference_paraphrase(lex, x32), ref)
    np.testing.assert_array_equal(KGW(key=1).detect(x32, lm=target), KGW(key=1).detect(x, lm=target))
    np.testing.assert_array_equal(SIRAAttack(surrogate, ConceptRewriter(lex, surrogate, seed=0)).attack(x32, ref),
                                  SIRAAttack(surrogate, ConceptRewriter(lex, surrogate, seed=0)).attack(x, ref))
    assert lex.decode(list(x[0])) == lex.decode(x[0])


# ------------------------------------------------------------------ bad token ids (hypothesis)


@settings(max_examples=40, deadline=None)
@given(bad=st.one_of(st.integers(-2**62, -1), st.integers(0, 10_000)), pos=st.integers(0, 4))
def test_self_information_accepts_exactly_ids_in_the_vocabulary(bad, pos):
    from icml25.papers.sira import KneserNeyLM, build_lexicon, sample_corpus, self_information

    lex = build_lexicon()
    lm = KneserNeyLM(lex.vocab_size, order=2, pad_id=lex.end_id).fit(sample_corpus(lex, 50, seed=0))
    ids = np.zeros(5, dtype=np.int64)
    ids[pos] = bad
    if 0 <= bad < lex.vocab_size:
        assert self_information(lm, ids).shape == (4,)
    else:
        with pytest.raises(ValueError, match="token ids"):
            self_information(lm, ids)


# ------------------------------------------------------------------ official settings (issue 13)
def test_defaults_are_the_official_markllm_configs():
    # config/KGW.json, Unigram.json, SWEET.json of Allencheng97/Self-information-Rewrite-Attack @ a077e74:
    # gamma 0.5, delta 2.0, prefix_length 1, z_threshold 4.0, SWEET entropy_threshold 0.9;
    # scripts/generate_watermark.py: max_new_tokens 200, min_length 230; attack threshold (percentile) 30
    for wm in (KGW(), Unigram(), EntropyGatedKGW()):
        assert (wm.gamma, wm.delta, wm.context) == (0.5, 2.0, 1)
    assert EntropyGatedKGW().threshold == 0.9
    cfg = SyntheticConfig()
    assert (cfg.gamma, cfg.delta, cfg.entropy_threshold, cfg.z_threshold) == (0.5, 2.0, 0.9, 4.0)
    assert cfg.sira.percentile == 30.0
    assert cfg.text_len == 200 and cfg.prompt_len + cfg.text_len == 230 and cfg.include_prompt
    assert {e.make_config("quick").prompt_style for e in EXPERIMENTS} == {"opengen", "c4"}


def test_green_list_size_is_floor_gamma_v_as_markllm():
    # MarkLLM: greenlist_size = int(vocab_size * gamma); round() would give 38 here
    assert (green_list_matrix(150, 0.25, key=1).sum(axis=1) == 37).all()
    assert (green_list_matrix(149, 0.5, key=1).sum(axis=1) == 74).all()


class _FixedLM:
    """Every position's next-token distribution is uniform over the first ``k[i]`` tokens."""

    def __init__(self, V, ks):
        self.vocab_size, self.ks = V, ks

    def sequence_probs(self, x):
        p = np.zeros((x.shape[0], x.shape[1] - 1, self.vocab_size))
        for i, k in enumerate(self.ks):
            p[:, i, :k] = 1.0 / k
        return p


def test_sweet_gate_is_shannon_entropy_in_nats_at_0_9():
    # uniform over k tokens has entropy ln k: ln 2 = 0.693 <= 0.9 < ln 3 = 1.099, so k = 2 is not scored
    ks = [1, 2, 3, 5, 2]
    lm = _FixedLM(8, ks)
    mask = EntropyGatedKGW().scored_mask(np.zeros((1, 6), dtype=np.int64), lm=lm)
    np.testing.assert_array_equal(mask[0], [math.log(k) > 0.9 for k in ks])
    np.testing.assert_array_equal(mask[0], [False, False, True, True, False])


def test_prompt_styles(world):
    lex = world[0]
    op = sample_prompts(lex, 200, 30, "opengen", seed=3)
    c4 = sample_prompts(lex, 200, 30, "c4", seed=3)
    assert op.shape == c4.shape == (200, 30)
    assert (op[:, -1] == lex.end_id).all()  # OpenGen prefixes end with a complete sentence
    assert (c4[:, -1] == lex.end_id).mean() < 0.3  # C4 prompts are cut anywhere (mostly mid-sentence)
    # every prompt is a window of grammar text: the word after "." starts a sentence (DET, TIME or ADJ-less DET)
    starts = {lex.concept_category[lex.concept_of[t]] for p in (op, c4) for a, t in zip(p[:, :-1].ravel(),
              p[:, 1:].ravel()) if a == lex.end_id}
    assert starts <= {"DET", "TIME"}
    np.testing.assert_array_equal(sample_prompts(lex, 5, 12, "c4", seed=1), sample_prompts(lex, 5, 12, "c4", seed=1))
    with pytest.raises(ValueError, match="style"):
        sample_prompts(lex, 5, 12, "wiki")
    with pytest.raises(ValueError, match="length"):
        sample_prompts(lex, 5, 0)


def test_load_prompts_reads_opengen_and_c4_jsonl(world, tmp_path):
    import json

    lex = world[0]
    p = tmp_path / "prompts.jsonl"
    lines = [{"prefix": "the dog saw a cat ."}, {"prompt": "yesterday , the big man found"}, {"prefix": "a b"}]
    p.write_text("\n".join(json.dumps(d) for d in lines[:2]) + "\n")
    got = load_prompts(p, lex, 2, 4)
    np.testing.assert_array_equal(got, [lex.encode("saw a cat ."), lex.encode("the big man found")])
    cfg = SyntheticConfig(n_texts=2, prompt_len=4, prompts_path=str(p))
    np.testing.assert_array_equal(make_prompts(cfg, lex, seed=0), got)
    for text, n, match in ((lines[:2], 3, "fewer than the 3"), (lines[:2], 2, None),
                           ([{"prefix": "the zebra ran ."}], 1, "zebra"), ([{"text": "the dog"}], 1, "prefix"),
                           ([{"prefix": "the dog"}], 1, "fewer than length")):
        p.write_text("\n".join(json.dumps(d) for d in text))
        if match is None:
            assert load_prompts(p, lex, n, 4).shape == (2, 4)
            continue
        with pytest.raises(ValueError, match=match):
            load_prompts(p, lex, n, 4)
    with pytest.raises(ConfigError, match="prompts_path"):
        SyntheticConfig(prompts_path=str(tmp_path / "missing.jsonl"))
    with pytest.raises(ConfigError, match="prompt_style"):
        SyntheticConfig(prompt_style="wiki")


def test_prompt_is_part_of_the_detected_text(world):
    # include_prompt=True (official): z counts the unwatermarked prompt tokens, so it equals the closed form
    # over prompt + continuation; with include_prompt=False only the continuation is scored
    lex, target, _ = world
    wm = KGW(key=5)
    prompt = sample_prompts(lex, 50, 20, "opengen", seed=0)
    y = wm.generate(target, prompt, 60, seed=1)
    full = np.concatenate([prompt, y], axis=1)
    g = wm.green_flags(full, lex.vocab_size)
    T = full.shape[1] - 1
    np.testing.assert_allclose(wm.detect(full, lm=target), (g.sum(axis=1) - 0.5 * T) / math.sqrt(T * 0.25))
    # the first continuation token is green w.r.t. the prompt's last token far more often than gamma
    assert g[:, prompt.shape[1] - 1].mean() > 0.6


# --- parity with MarkLLM 0.1.5 (the toolkit the official SIRA code uses; tests/fixtures/official/sira) -------------

_MARKLLM = Path(__file__).parents[1] / "fixtures" / "official" / "sira"


class _Bigram:
    """The fixture's bigram LM, in the interface our detectors use (row ``prev`` of ``P`` predicts the next token)."""

    def __init__(self, P: np.ndarray):
        self.P, self.vocab_size = P, P.shape[0]

    def next_probs(self, ctx: np.ndarray) -> np.ndarray:
        return self.P[np.atleast_2d(ctx)[:, -1]]

    def sequence_probs(self, x: np.ndarray) -> np.ndarray:
        return self.P[np.atleast_2d(x)[:, :-1]]


@pytest.fixture(scope="module")
def markllm():
    pytest.importorskip("torch")
    out = json.loads((_MARKLLM / "markllm_outputs.json").read_text())
    return out, _Bigram(np.load(_MARKLLM / "bigram_P.npy"))


@pytest.mark.parametrize(("scheme", "cls"), [("kgw", KGW), ("sweet", EntropyGatedKGW)])
def test_markllm_green_lists_are_markllms(markllm, scheme, cls):
    out, lm = markllm
    V = out["vocab_size"]
    green = markllm_green_lists(V, out["gamma"], out["hash_key"], scheme)
    want = np.zeros((V, V), dtype=bool)
    for prev, ids in enumerate(out[f"{scheme}_green_lists"]):
        want[prev, ids] = True
    np.testing.assert_array_equal(green, want)
    np.testing.assert_array_equal(cls(key=out["hash_key"], green_lists="markllm").green_matrix(V), want)
    # the default NumPy lists are other, equally sized lists: the option is what makes them MarkLLM's
    numpy_lists = cls(key=out["hash_key"]).green_matrix(V)
    assert (numpy_lists != want).any() and (numpy_lists.sum(1) == want.sum(1)).all()


def test_kgw_detector_matches_markllm(markllm):
    out, lm = markllm
    wm = KGW(out["gamma"], out["delta"], out["hash_key"], green_lists="markllm")
    for kind, seqs in out["sequences"].items():
        x = np.array(seqs)
        flags = np.array(out["kgw_green_flags"][kind])[:, 1:] == 1  # MarkLLM marks the unscored first token -1
        np.testing.assert_array_equal(wm.green_flags(x, out["vocab_size"]), flags)
        # same counts, same formula: equal up to float64 rounding
        np.testing.assert_allclose(wm.detect(x, vocab_size=out["vocab_size"]), out["kgw_z"][kind], rtol=1e-12,
                                   atol=1e-12)
    # MarkLLM's own KGW-watermarked sequences score z > 2 with ours (40 tokens)
    assert (wm.detect(np.array(out["sequences"]["kgw"]), vocab_size=out["vocab_size"]) > 2).all()


def test_sweet_detector_matches_markllm(markllm):
    out, lm = markllm
    wm = EntropyGatedKGW(out["entropy_threshold"], out["gamma"], out["delta"], out["hash_key"], green_lists="markllm")
    for kind, seqs in out["sequences"].items():
        x = np.array(seqs)
        np.testing.assert_array_equal(wm.scored_mask(x, lm), np.array(out["sweet_weights"][kind])[:, 1:] == 1)
        np.testing.assert_array_equal(wm.green_flags(x, out["vocab_size"]),
                                      np.array(out["sweet_green_flags"][kind])[:, 1:] == 1)
        np.testing.assert_allclose(wm.detect(x, lm), out["sweet_z"][kind], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("scheme", "cls"), [("kgw", KGW), ("sweet", EntropyGatedKGW)])
def test_generation_bias_matches_markllms_logits_processor(markllm, scheme, cls):
    """MarkLLM adds delta to the green logits (SWEET: only where the entropy exceeds the threshold); our generator
    samples from softmax(log p + delta * green * active), the same distribution."""
    out, lm = markllm
    wm = cls(key=out["hash_key"], green_lists="markllm")
    V = out["vocab_size"]
    prev = np.arange(V)
    p = lm.next_probs(prev[:, None])
    ours = np.log(p) + wm.delta * wm._green_next(prev, V) * wm._active(p)[:, None]
    np.testing.assert_allclose(ours, np.array(out[f"{scheme}_biased_scores"]), rtol=0, atol=1e-12)


def test_attack_settings_are_one_nested_sira_config():
    """The experiments hold the attack's settings as one SIRAConfig (``sira``): ``--set`` reaches it by dotted
    keys, a bad value raises ConfigError naming the dotted key, and the run uses it (percentile 100 keeps every
    token, so SIRA edits nothing)."""
    exp = EXPERIMENTS[0]
    assert SyntheticConfig().sira == SIRAConfig() == SIRAConfig(percentile=30.0, rewriter_temperature=1.0)
    assert "percentile" not in exp.fields and {"sira.percentile", "sira.rewriter_temperature"} <= set(exp.fields)
    cfg = exp.make_config("smoke", {"sira.percentile": 100.0})
    assert (cfg.sira.percentile, cfg.n_texts) == (100.0, 40)
    with pytest.raises(ConfigError, match=r"SyntheticConfig\.sira\.percentile must be <= 100"):
        exp.make_config("smoke", {"sira.percentile": 130.0})
    with pytest.raises(ConfigError, match=r"SyntheticConfig\.sira\.rewriter_temperature must be > 0"):
        exp.make_config("smoke", {"sira.rewriter_temperature": 0.0})
    m = exp.run(exp.make_config("smoke", {"sira.percentile": 100.0, "n_texts": 4, "matched_rates": (0.9,)}), seed=0)
    assert all(m[f"{s}_sira_edit"] == 0.0 and m[f"{s}_sira_blank_rate"] == 0.0 for s in ("kgw", "unigram", "gated"))


class _ParityLM:
    """A bigram stub: after token t the next token is (t + 2) mod 6 with probability ~1 (1e-9 elsewhere)."""

    order, pad_id, vocab_size = 2, 5, 6

    def next_probs(self, ctx):
        p = np.full((len(ctx), 6), 1e-9)
        p[np.arange(len(ctx)), (np.asarray(ctx)[:, -1] + 2) % 6] = 1.0
        return p


def test_rewriter_fills_each_blank_by_the_lm_on_the_rewritten_left_context():
    """Step 3 (stand-in): each blank gets the synonym of its reference concept that the attacker's LM prefers after the
    already rewritten prefix. Concepts {0, 1}, {2, 3}, {4, 5}; the stub LM continues t with t + 2: from the kept
    token 1 the blanks become 3, 5, 1 (not 3, 4, 0, which the original left context would give; a rewriter without
    the LM picks each synonym at random)."""
    from types import SimpleNamespace

    members = np.zeros((3, 6))
    for c in range(3):
        members[c, 2 * c:2 * c + 2] = 1.0
    lex = SimpleNamespace(vocab_size=6, n_concepts=3, members=members, concept_of=np.array([0, 0, 1, 1, 2, 2]))
    x = np.tile([1, 2, 4, 0], (20, 1))
    blanks = np.tile([False, True, True, True], (20, 1))
    ref = lex.concept_of[x]
    y = ConceptRewriter(lex, _ParityLM(), seed=0).fill(x, blanks, ref)
    np.testing.assert_array_equal(y, np.tile([1, 3, 5, 1], (20, 1)))


def test_sira_attack_default_is_the_official_30th_percentile(world):
    """SIRAAttack's and SIRAConfig's default percentile is the official 30: the same blanks as percentile=30."""
    lex, target, surrogate = world
    x = KGW(key=1).generate(target, np.full((10, 1), lex.end_id), 40, seed=4)
    rw = ConceptRewriter(lex, surrogate)
    assert SIRAConfig().percentile == 30.0 and SIRAAttack(surrogate, rw).percentile == 30.0
    np.testing.assert_array_equal(SIRAAttack(surrogate, rw).blanks(x), SIRAAttack(surrogate, rw, 30.0).blanks(x))
    assert (SIRAAttack(surrogate, rw).blanks(x) != SIRAAttack(surrogate, rw, 50.0).blanks(x)).any()
