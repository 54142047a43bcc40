"""Interpolated Kneser-Ney n-gram language models (orders 1-3), dense NumPy tables.

Stand-ins for the paper's LLMs: the *target* model that generates watermarked text
and the attacker's *surrogate* model that scores self-information. Small vocabularies
only (the order-3 table has V^3 entries).
"""

from __future__ import annotations

import numpy as np

from icml25.papers.sira.data import check_token_ids


class KneserNeyLM:
    """Word-level interpolated Kneser-Ney LM with absolute discount ``discount``.

    For order 3 (Chen & Goodman's interpolated KN):
    ``P(w|u,v) = max(c(u,v,w)-d,0)/c(u,v) + d N1+(u,v,.)/c(u,v) * P2(w|v)``, where the
    lower orders use continuation counts:
    ``P2(w|v) = max(N1+(.,v,w)-d,0)/N1+(.,v,.) + d N1+(v,.)/N1+(.,v,.) * P1(w)`` and
    ``P1(w) = N1+(.,w)/N1+(.,.)``. Unseen contexts back off entirely; a 1e-6 share of
    uniform mass keeps every probability positive.

    Args:
        vocab_size: number of token ids V.
        order: 1, 2 or 3.
        discount: absolute discount d in (0, 1).
        pad_id: token used as left context before the first token of a sequence.
    """

    def __init__(self, vocab_size: int, order: int = 3, discount: float = 0.75, pad_id: int = 0):
        if order not in (1, 2, 3):
            raise ValueError(f"order must be 1, 2 or 3, got {order}")
        if not 0.0 < discount < 1.0:
            raise ValueError(f"discount must be in (0, 1), got {discount}")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
            raise TypeError(f"vocab_size must be an integer, got {vocab_size!r}")
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        if not 0 <= pad_id < vocab_size:
            raise ValueError(f"pad_id must be a token id in [0, {vocab_size}), got {pad_id}")
        self.vocab_size, self.order, self.discount, self.pad_id = vocab_size, order, discount, pad_id

    def fit(self, stream) -> "KneserNeyLM":
        """Count n-grams of a 1-D token stream and build the probability table ``probs_``.

        ``probs_`` has shape ``(V,)*(order-1) + (V,)``: the next-token distribution of every context.
        """
        x = np.asarray(stream, dtype=np.int64).ravel()
        V, d = self.vocab_size, self.discount
        if x.size < self.order:
            raise ValueError(f"stream needs at least {self.order} tokens, got {x.size}")
        check_token_ids(stream, V, "stream")
        if x.min() < 0 or x.max() >= V:
            raise ValueError(f"token ids must lie in [0, {V}), got range [{x.min()}, {x.max()}]")
        c2 = np.bincount(x[:-1] * V + x[1:], minlength=V * V).reshape(V, V).astype(float)
        n1_2 = (c2 > 0).astype(float)
        p1 = n1_2.sum(axis=0) / n1_2.sum()  # continuation unigram
        p1 = (1 - 1e-6) * p1 + 1e-6 / V
        if self.order == 1:
            self.probs_ = p1
            return self

        def interpolate(counts: np.ndarray, lower: np.ndarray) -> np.ndarray:
            tot = counts.sum(axis=-1, keepdims=True)
            types = (counts > 0).sum(axis=-1, keepdims=True)
            safe = np.where(tot > 0, tot, 1.0)
            p = np.maximum(counts - d, 0.0) / safe + d * types / safe * lower
            return np.where(tot > 0, p, lower)

        if self.order == 2:
            self.probs_ = interpolate(c2, p1[None, :])
            return self
        # order 3: lower order uses continuation counts N1+(., v, w)
        c3 = np.bincount((x[:-2] * V + x[1:-1]) * V + x[2:], minlength=V ** 3).reshape(V, V, V).astype(float)
        p2 = interpolate((c3 > 0).sum(axis=0).astype(float), p1[None, :])
        self.probs_ = interpolate(c3, p2[None, :, :])
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "probs_"):
            raise ValueError("the language model is not fitted; call fit(stream) first")

    def next_probs(self, context) -> np.ndarray:
        """Next-token distributions ``(B, V)`` given the last ``order-1`` tokens of each row of ``context``.

        ``context`` is ``(B, L)`` (or 1-D for one sequence); rows shorter than ``order-1`` are
        left-padded with ``pad_id``.
        """
        self._check_fitted()
        check_token_ids(context, self.vocab_size, "context")
        ctx = np.atleast_2d(np.asarray(context, dtype=np.int64))
        k = self.order - 1
        if k == 0:
            return np.broadcast_to(self.probs_, (ctx.shape[0], self.vocab_size))
        if ctx.shape[1] < k:
            ctx = np.concatenate([np.full((ctx.shape[0], k - ctx.shape[1]), self.pad_id), ctx], axis=1)
        return self.probs_[tuple(ctx[:, -k:].T)]

    def sequence_probs(self, ids) -> np.ndarray:
        """``(B, n-1, V)``: the distribution of token ``i`` given tokens ``< i``, for ``i = 1..n-1``."""
        self._check_fitted()
        check_token_ids(ids, self.vocab_size, "ids")
        x = np.atleast_2d(np.asarray(ids, dtype=np.int64))
        k = self.order - 1
        padded = np.concatenate([np.full((x.shape[0], max(k - 1, 0)), self.pad_id), x], axis=1)
        n = x.shape[1]
        if k == 0:
            return np.broadcast_to(self.probs_, (x.shape[0], n - 1, self.vocab_size))
        idx = tuple(padded[:, j:j + n - 1] for j in range(k))
        return self.probs_[idx]

    def token_logprobs(self, ids) -> np.ndarray:
        """``(B, n-1)``: ``log p(t_i | t_<i)`` for ``i = 1..n-1``."""
        self._check_fitted()
        check_token_ids(ids, self.vocab_size, "ids")
        x = np.atleast_2d(np.asarray(ids, dtype=np.int64))
        p = self.sequence_probs(x)
        return np.log(np.take_along_axis(p, x[:, 1:, None], axis=2)[..., 0])
