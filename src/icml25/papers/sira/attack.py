"""SIRA: self-information rewrite attack, and the rewrite baselines it is compared with.

Pipeline (official ``scripts/attack_onestep.py``):
1. reference paraphrase R of the watermarked text T_w;
2. surrogate LM scores ``SI_i = -log p(t_i | t_<i)``; tokens with ``SI_i <= percentile_p(SI)``
   are kept, the others (the surprising ~70% for p=30) become blanks;
3. the rewriter fills the blanked template so that it carries R's information.

Here the attack LLM is replaced by :class:`ConceptRewriter`: the reference is the
text's concept sequence (its meaning), and each blank is filled with a word of the
reference concept, sampled in proportion to the surrogate LM given the rewritten left
context. No watermark key, scheme or detector is an input of any attack. :class:`SIRAConfig` holds the attack's
settings (the percentile of step 2, the rewriter's sampling temperature of step 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.common.checks import check_fields
from icml25.papers.sira.data import Lexicon, check_token_ids


@dataclass
class SIRAConfig:
    """Settings of the attack: :class:`SIRAAttack`'s percentile (step 2) and the sampling temperature of the
    :class:`ConceptRewriter` that fills the blanks (step 3; the rewrite baselines share that rewriter).

    The experiments nest it whole as ``sira`` (``--set sira.percentile=50``). A value out of range raises
    :class:`~icml25.common.checks.ConfigError` (a ``ValueError``) naming the field.
    """

    percentile: float = 30.0
    """Tokens whose self-information is at or below this percentile of the text's SI are kept, the others
    blanked (the official default 30)."""
    rewriter_temperature: float = 1.0
    """The rewriter samples a blank's word with the surrogate LM's probabilities raised to ``1 / temperature``
    (1: in proportion to them)."""

    def __post_init__(self) -> None:
        check_fields(self, finite=("percentile", "rewriter_temperature"), positive=("rewriter_temperature",),
                     at_least={"percentile": 0.0}, at_most={"percentile": 100.0})


def self_information(lm, token_ids) -> np.ndarray:
    """Self-information ``SI_i = -log p(t_i | t_<i)`` (nats) of tokens ``i = 1..n-1``.

    Args:
        lm: a fitted LM with ``token_logprobs`` (e.g. :class:`~icml25.papers.sira.lm.KneserNeyLM`).
        token_ids: 1-D sequence of ``n >= 2`` token ids, or ``(B, n)``.

    Returns:
        ``(n-1,)`` for a 1-D input, else ``(B, n-1)``.
    """
    x = np.asarray(token_ids, dtype=np.int64)
    if x.ndim not in (1, 2) or x.shape[-1] < 2:
        raise ValueError(f"token_ids must be 1-D or 2-D with at least 2 tokens, got shape {x.shape}")
    check_token_ids(token_ids, getattr(lm, "vocab_size", None), "token_ids")
    si = -lm.token_logprobs(np.atleast_2d(x))
    return si[0] if x.ndim == 1 else si


def blank_mask(si, percentile: float = 30.0) -> np.ndarray:
    """Boolean blanks ``(B, n-1)`` (or 1-D): ``SI_i > percentile_p(SI)`` within each text."""
    if not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile must be in [0, 100], got {percentile}")
    s = np.atleast_2d(np.asarray(si, dtype=float))
    if s.ndim != 2 or s.shape[1] == 0:
        raise ValueError(f"si must be a non-empty 1-D or (B, n-1) array, got shape {np.shape(si)}")
    if not np.all(np.isfinite(s)):
        raise ValueError("si must be finite")
    tau = np.percentile(s, percentile, axis=1, keepdims=True)
    out = s > tau
    return out[0] if np.ndim(si) == 1 else out


def blank_template(tokens, si, percentile: float = 30.0) -> list:
    """The SIRA template: ``None`` where a token is blanked, the token itself where kept.

    ``si`` has one value per token from the second on (``len(tokens) - 1``, as returned by
    :func:`self_information`); the first token has no self-information and is kept
    (the official code drops it instead). A token is kept iff ``SI_i <= percentile_p(SI)``:
    ``percentile=100`` blanks nothing, ``percentile=0`` keeps only the minimum-SI token(s).
    """
    toks = list(tokens)
    s = np.asarray(si, dtype=float).ravel()
    if s.size != len(toks) - 1:
        raise ValueError(f"si must have len(tokens)-1 = {len(toks) - 1} values, got {s.size}")
    blanks = blank_mask(s, percentile)
    return [toks[0]] + [None if b else t for t, b in zip(toks[1:], blanks)]


def reference_paraphrase(lexicon: Lexicon, tokens) -> np.ndarray:
    """Stand-in for step 1: the reference R is the text's concept sequence (its meaning)."""
    check_token_ids(tokens, lexicon.vocab_size, "tokens")
    return lexicon.concept_of[np.asarray(tokens, dtype=np.int64)]


class ConceptRewriter:
    """Fills blanks with a word of the reference concept, weighted by ``lm`` (stand-in for the attack LLM).

    Args:
        lexicon: word/concept structure (the rewriter's knowledge of synonyms).
        lm: the attacker's LM (its next-token probabilities weight the synonyms).
        temperature: probabilities are raised to ``1/temperature`` before sampling.
        seed: random seed of the sampling.
    """

    def __init__(self, lexicon: Lexicon, lm, temperature: float = 1.0, seed: int = 0):
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.lexicon, self.lm, self.temperature = lexicon, lm, temperature
        self.rng = np.random.default_rng(seed)

    def fill(self, tokens, blanks, reference) -> np.ndarray:
        """Rewrite left to right: keep unblanked tokens, sample blanks; all arrays ``(B, n)`` or 1-D."""
        x = np.atleast_2d(np.asarray(tokens, dtype=np.int64)).copy()
        b = np.atleast_2d(np.asarray(blanks, dtype=bool))
        ref = np.atleast_2d(np.asarray(reference, dtype=np.int64))
        if not (x.shape == b.shape == ref.shape):
            raise ValueError(f"tokens, blanks and reference must have one shape, got {x.shape}, {b.shape}, {ref.shape}")
        check_token_ids(tokens, self.lexicon.vocab_size, "tokens")
        check_token_ids(reference, self.lexicon.n_concepts, "reference")
        V = self.lexicon.vocab_size
        k = self.lm.order - 1
        pad = np.full((x.shape[0], max(k, 1)), self.lm.pad_id, dtype=np.int64)
        for i in range(x.shape[1]):
            rows = np.flatnonzero(b[:, i])
            if rows.size == 0:
                continue
            ctx = np.concatenate([pad[rows], x[rows, :i]], axis=1)
            p = self.lm.next_probs(ctx) ** (1.0 / self.temperature) * self.lexicon.members[ref[rows, i]]
            cdf = np.cumsum(p, axis=1)
            u = self.rng.random(rows.size)[:, None] * cdf[:, -1:]
            x[rows, i] = np.minimum((cdf < u).sum(axis=1), V - 1)
        return x[0] if np.ndim(tokens) == 1 else x


class SIRAAttack:
    """Self-Information Rewrite Attack.

    Args:
        surrogate_lm: the attacker's scoring LM (no relation to the watermarked model needed).
        rewriter: fills a blanked template given the reference (e.g. :class:`ConceptRewriter`).
        percentile: tokens with SI at or below this percentile are kept (paper default 30).
    """

    def __init__(self, surrogate_lm, rewriter, percentile: float = 30.0):
        if not 0.0 <= percentile <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {percentile}")
        self.surrogate_lm, self.rewriter, self.percentile = surrogate_lm, rewriter, percentile

    def blanks(self, text_tokens) -> np.ndarray:
        """``(B, n)`` blanks: high-SI tokens; token 0 is always kept."""
        check_token_ids(text_tokens, getattr(self.surrogate_lm, "vocab_size", None), "text_tokens")
        x = np.atleast_2d(np.asarray(text_tokens, dtype=np.int64))
        si = self_information(self.surrogate_lm, x)
        return np.concatenate([np.zeros((x.shape[0], 1), bool), blank_mask(si, self.percentile)], axis=1)

    def attack(self, text_tokens, reference) -> np.ndarray:
        """Attacked tokens (same shape as ``text_tokens``) carrying the reference's meaning."""
        lexicon = getattr(self.rewriter, "lexicon", None)
        check_token_ids(text_tokens, getattr(lexicon, "vocab_size", None), "text_tokens")
        x = np.asarray(text_tokens, dtype=np.int64)
        out = self.rewriter.fill(np.atleast_2d(x), self.blanks(x), np.atleast_2d(reference))
        return out[0] if x.ndim == 1 else out


def _check_rate(rate: float) -> None:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate}")


class RandomMaskRewrite(SIRAAttack):
    """Baseline: blank ``round(rate*(n-1))`` uniformly random tokens (never token 0), same rewriter."""

    def __init__(self, rewriter, rate: float, seed: int = 0):
        _check_rate(rate)
        self.rewriter, self.rate, self.rng = rewriter, rate, np.random.default_rng(seed)

    def blanks(self, text_tokens) -> np.ndarray:
        check_token_ids(text_tokens, None, "text_tokens")
        x = np.atleast_2d(np.asarray(text_tokens))
        k = int(round(self.rate * (x.shape[1] - 1)))
        order = np.argsort(self.rng.random((x.shape[0], x.shape[1] - 1)), axis=1)
        out = np.zeros(x.shape, dtype=bool)
        np.put_along_axis(out[:, 1:], order[:, :k], True, axis=1)
        return out


class LowSIMaskRewrite(SIRAAttack):
    """Baseline (inverted SIRA): blank the ``round(rate*(n-1))`` lowest-SI tokens, same rewriter."""

    def __init__(self, surrogate_lm, rewriter, rate: float):
        _check_rate(rate)
        self.surrogate_lm, self.rewriter, self.rate = surrogate_lm, rewriter, rate

    def blanks(self, text_tokens) -> np.ndarray:
        check_token_ids(text_tokens, getattr(self.surrogate_lm, "vocab_size", None), "text_tokens")
        x = np.atleast_2d(np.asarray(text_tokens, dtype=np.int64))
        k = int(round(self.rate * (x.shape[1] - 1)))
        si = self_information(self.surrogate_lm, x)
        out = np.zeros(x.shape, dtype=bool)
        np.put_along_axis(out[:, 1:], np.argsort(si, axis=1, kind="stable")[:, :k], True, axis=1)
        return out


class HighSIMaskRewrite(LowSIMaskRewrite):
    """SIRA's ranking with an exact budget: blank the ``round(rate*(n-1))`` highest-SI tokens."""

    def blanks(self, text_tokens) -> np.ndarray:
        check_token_ids(text_tokens, getattr(self.surrogate_lm, "vocab_size", None), "text_tokens")
        x = np.atleast_2d(np.asarray(text_tokens, dtype=np.int64))
        k = int(round(self.rate * (x.shape[1] - 1)))
        si = self_information(self.surrogate_lm, x)
        out = np.zeros(x.shape, dtype=bool)
        np.put_along_axis(out[:, 1:], np.argsort(-si, axis=1, kind="stable")[:, :k], True, axis=1)
        return out


class FullParaphrase(SIRAAttack):
    """Baseline: rewrite every token from the reference (blank everything)."""

    def __init__(self, rewriter):
        self.rewriter = rewriter

    def blanks(self, text_tokens) -> np.ndarray:
        return np.ones(np.atleast_2d(np.asarray(text_tokens)).shape, dtype=bool)


class WordSubstitution:
    """Baseline: replace a ``rate`` share of tokens by a different synonym, chosen uniformly (no LM)."""

    def __init__(self, lexicon: Lexicon, rate: float, seed: int = 0):
        _check_rate(rate)
        self.lexicon, self.rate, self.rng = lexicon, rate, np.random.default_rng(seed)

    def attack(self, text_tokens, reference=None) -> np.ndarray:
        """Substituted tokens; ``reference`` is ignored (kept for a common signature)."""
        check_token_ids(text_tokens, self.lexicon.vocab_size, "text_tokens")
        x = np.atleast_2d(np.asarray(text_tokens, dtype=np.int64)).copy()
        lex = self.lexicon
        others = lex.members[lex.concept_of[x]] & (np.arange(lex.vocab_size) != x[..., None])  # (B, n, V)
        has = others.any(axis=2)
        pick = (self.rng.random(x.shape) < self.rate) & has
        cdf = np.cumsum(others[pick], axis=1)
        u = self.rng.random(cdf.shape[0])[:, None] * cdf[:, -1:]
        x[pick] = (cdf < u).sum(axis=1)
        return x[0] if np.ndim(text_tokens) == 1 else x
