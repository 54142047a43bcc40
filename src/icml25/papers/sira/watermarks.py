"""Green-list text watermarks (the attacked schemes) with their z-score detectors.

* :class:`KGW` (Kirchenbauer et al. 2023): the previous token and a secret key seed a
  green list of ``gamma*V`` tokens; green logits get ``+delta``.
* :class:`Unigram` (Zhao et al. 2024): one fixed, key-seeded green list.
* :class:`EntropyGatedKGW` (SWEET-like, Lee et al. 2024): KGW applied, and scored, only
  where the model's next-token entropy exceeds ``threshold`` nats.

Detection: ``z = (|green| - gamma T) / sqrt(T gamma (1-gamma))`` over the T scored tokens
(tokens ``1..n-1`` of the text; token 0 has no in-text predecessor).

Defaults are the MarkLLM configs the official SIRA code ships (``config/KGW.json``,
``Unigram.json``, ``SWEET.json``): ``gamma = 0.5``, ``delta = 2.0``, one-token context,
SWEET entropy threshold ``0.9`` nats (MarkLLM's SWEET computes the entropy with the natural
log), detection threshold ``z = 4``.

Green lists: by default key-seeded NumPy permutations (:func:`green_list_matrix`);
``green_lists="markllm"`` builds the very lists MarkLLM 0.1.5 (the toolkit the official code
uses) draws for the same key and vocabulary, with its hashing and ``torch.randperm``
(:func:`markllm_green_lists`; needs the ``[torch]`` extra). The two are equally random green
lists; the detectors and z-scores are the same for both, and tests/fixtures/official/sira holds
MarkLLM's own outputs that the ``markllm`` lists reproduce.
"""

from __future__ import annotations

import numpy as np

from icml25.papers.sira.data import check_token_ids


def _check_common(gamma: float, delta: float) -> None:
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma must be in (0, 1), got {gamma}")
    if not np.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be finite and >= 0, got {delta}")


def green_list_matrix(vocab_size: int, gamma: float, key: int) -> np.ndarray:
    """``(V, V)`` boolean: row ``prev`` is the green list after token ``prev``; exactly ``int(gamma V)`` per row.

    The list size is ``floor(gamma V)``, as MarkLLM's ``get_greenlist_ids`` takes it.

    Raises:
        ValueError: ``vocab_size`` not a positive integer or ``gamma`` outside [0, 1].
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    rng = np.random.default_rng([int(key), int(vocab_size), 1])
    k = int(gamma * vocab_size)
    ranks = np.argsort(np.argsort(rng.random((vocab_size, vocab_size)), axis=1), axis=1)
    return ranks < k


GREEN_LISTS = ("numpy", "markllm")


def markllm_green_lists(vocab_size: int, gamma: float, key: int, scheme: str = "kgw") -> np.ndarray:
    """``(V, V)`` boolean green lists as MarkLLM 0.1.5 draws them (row ``prev``: the list after token ``prev``).

    Each list is the first ``floor(gamma V)`` entries of ``torch.randperm(V)`` from a CPU generator seeded with:

    * ``scheme="kgw"`` (MarkLLM's KGW config: one-token prefix, ``f_scheme="time"``, ``window_scheme="left"``):
      ``(key * prf[prev]) % V``, where ``prf`` is ``torch.randperm(V)`` seeded with ``key``;
    * ``scheme="sweet"`` (MarkLLM's SWEET): ``key * prev``.

    Raises:
        ValueError: a bad ``vocab_size``, ``gamma`` or ``scheme``.
        ModuleNotFoundError: torch is not installed (``pip install icml25[torch]``).
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer, got {vocab_size!r}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if scheme not in ("kgw", "sweet"):
        raise ValueError(f"scheme must be 'kgw' or 'sweet', got {scheme!r}")
    import torch

    V, k = int(vocab_size), int(vocab_size * gamma)
    gen = torch.Generator(device="cpu")
    prf = torch.randperm(V, generator=gen.manual_seed(int(key))).tolist()
    green = np.zeros((V, V), dtype=bool)
    for prev in range(V):
        seed = (int(key) * prf[prev]) % V if scheme == "kgw" else int(key) * prev
        green[prev, torch.randperm(V, generator=gen.manual_seed(seed))[:k].numpy()] = True
    return green


def _z(green: np.ndarray, scored: np.ndarray, gamma: float) -> np.ndarray:
    T = scored.sum(axis=1)
    g = (green & scored).sum(axis=1)
    denom = np.sqrt(np.maximum(T, 1) * gamma * (1 - gamma))
    return np.where(T > 0, (g - gamma * T) / denom, 0.0)


def entropy(p: np.ndarray) -> np.ndarray:
    """Shannon entropy (nats) over the last axis."""
    return -(p * np.log(np.clip(p, 1e-300, None))).sum(axis=-1)


class KGW:
    """KGW watermark with a context of one previous token.

    Args:
        gamma: green-list fraction.
        delta: logit bias added to green tokens (0 = no watermark).
        key: secret integer key.
        context: number of previous tokens hashed into the seed (only 1 is supported).
        green_lists: ``"numpy"`` (default: :func:`green_list_matrix`) or ``"markllm"`` (MarkLLM 0.1.5's lists for the
            same key, :func:`markllm_green_lists`; needs torch).
    """

    _markllm_scheme = "kgw"

    def __init__(self, gamma: float = 0.5, delta: float = 2.0, key: int = 15485863, context: int = 1,
                 green_lists: str = "numpy"):
        _check_common(gamma, delta)
        if context != 1:
            raise ValueError(f"only context=1 is supported, got {context}")
        if green_lists not in GREEN_LISTS:
            raise ValueError(f"green_lists must be one of {GREEN_LISTS}, got {green_lists!r}")
        self.gamma, self.delta, self.key, self.context = gamma, delta, int(key), context
        self.green_lists = green_lists
        self._cache: dict[int, np.ndarray] = {}

    def green_matrix(self, vocab_size: int) -> np.ndarray:
        """The ``(V, V)`` green lists, reproducible from the key."""
        if vocab_size not in self._cache:
            self._cache[vocab_size] = (
                green_list_matrix(vocab_size, self.gamma, self.key) if self.green_lists == "numpy"
                else markllm_green_lists(vocab_size, self.gamma, self.key, self._markllm_scheme))
        return self._cache[vocab_size]

    def _green_next(self, prev: np.ndarray, V: int) -> np.ndarray:  # (B, V) candidates green?
        return self.green_matrix(V)[prev]

    def _active(self, p: np.ndarray) -> np.ndarray:  # (B,) where the bias is applied
        return np.ones(p.shape[0], dtype=bool)

    def generate(self, lm, prompt, n: int, seed: int = 0) -> np.ndarray:
        """Sample ``n`` watermarked tokens from ``lm`` after ``prompt`` (``(B, L)`` or 1-D); returns ``(B, n)``.

        Multinomial sampling from ``softmax(log p + delta * green)``; vectorised over rows.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"n must be an integer number of tokens, got {n!r}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        ctx = np.atleast_2d(np.asarray(prompt, dtype=np.int64))
        if ctx.shape[1] < 1:
            raise ValueError("prompt must contain at least one token")
        check_token_ids(prompt, lm.vocab_size, "prompt")
        rng = np.random.default_rng(seed)
        V = lm.vocab_size
        out = np.empty((ctx.shape[0], n), dtype=np.int64)
        for i in range(n):
            p = lm.next_probs(ctx)
            w = p * np.exp(self.delta * self._green_next(ctx[:, -1], V) * self._active(p)[:, None])
            cdf = np.cumsum(w, axis=1)
            u = rng.random(ctx.shape[0])[:, None] * cdf[:, -1:]
            tok = np.minimum((cdf < u).sum(axis=1), V - 1)
            out[:, i] = tok
            ctx = np.concatenate([ctx[:, -2:], tok[:, None]], axis=1)
        return out

    def scored_mask(self, tokens, lm=None) -> np.ndarray:
        """``(B, n-1)`` boolean: which tokens ``1..n-1`` the detector counts (all of them for KGW)."""
        x = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        return np.ones((x.shape[0], x.shape[1] - 1), dtype=bool)

    def green_flags(self, tokens, vocab_size: int) -> np.ndarray:
        """``(B, n-1)`` boolean: is token ``i`` (``i >= 1``) green given token ``i-1``."""
        check_token_ids(tokens, vocab_size, "tokens")
        x = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        return self.green_matrix(vocab_size)[x[:, :-1], x[:, 1:]]

    def detect(self, tokens, lm=None, vocab_size: int | None = None) -> np.ndarray:
        """z-scores ``(B,)`` of ``tokens`` (``(B, n)`` or 1-D). Needs ``vocab_size`` or ``lm``."""
        x = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        if x.shape[1] < 2:
            raise ValueError(f"need at least 2 tokens to detect, got {x.shape[1]}")
        V = vocab_size if vocab_size is not None else getattr(lm, "vocab_size", None)
        if V is None:
            raise ValueError("detect needs vocab_size or an lm with vocab_size")
        check_token_ids(tokens, V, "tokens")
        return _z(self.green_flags(x, V), self.scored_mask(x, lm), self.gamma)


class Unigram(KGW):
    """Unigram watermark: one fixed green list of ``gamma*V`` tokens, independent of context."""

    def __init__(self, gamma: float = 0.5, delta: float = 2.0, key: int = 15485863):
        super().__init__(gamma, delta, key, context=1)

    def green_matrix(self, vocab_size: int) -> np.ndarray:
        if vocab_size not in self._cache:
            row = green_list_matrix(vocab_size, self.gamma, self.key)[0]
            self._cache[vocab_size] = np.broadcast_to(row, (vocab_size, vocab_size))
        return self._cache[vocab_size]


class EntropyGatedKGW(KGW):
    """SWEET-like KGW: bias and score only tokens whose next-token entropy exceeds ``threshold`` (nats).

    Detection recomputes the entropies with the generating ``lm`` (as SWEET does), so
    ``detect`` needs it. ``green_lists="markllm"`` gives MarkLLM's SWEET lists (seed ``key * prev``).
    """

    _markllm_scheme = "sweet"

    def __init__(self, threshold: float = 0.9, gamma: float = 0.5, delta: float = 2.0, key: int = 15485863,
                 green_lists: str = "numpy"):
        if not np.isfinite(threshold) or threshold < 0:
            raise ValueError(f"threshold must be finite and >= 0, got {threshold}")
        super().__init__(gamma, delta, key, context=1, green_lists=green_lists)
        self.threshold = threshold

    def _active(self, p: np.ndarray) -> np.ndarray:
        return entropy(p) > self.threshold

    def scored_mask(self, tokens, lm=None) -> np.ndarray:
        """Tokens whose entropy under ``lm`` exceeds the threshold."""
        x = np.atleast_2d(np.asarray(tokens, dtype=np.int64))
        if lm is None:
            raise ValueError("EntropyGatedKGW.detect needs the generating lm to recompute entropies")
        check_token_ids(tokens, getattr(lm, "vocab_size", None), "tokens")
        return entropy(lm.sequence_probs(x)) > self.threshold
