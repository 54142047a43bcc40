"""Synthetic protein fitness tasks (a Potts landscape with GGS-style difficulty filters) and the metrics.

The GGS benchmark (Kirjner et al., ICLR 2024) restricts the training set to low-fitness sequences that are
several mutations away from the best ones; an oracle trained on all data scores the designs. Here the
landscape is an explicit Potts model, so the oracle is the exact fitness (min-max normalised over the
library), and the same filters carve the training set out of a library of random point mutants.

Metrics (GGS / VLGPO, official ``utils/ggs_predictor.py``): median oracle fitness, diversity = *mean* pairwise
Levenshtein distance among the designs (the median is reported beside it), novelty = median over designs of the
Levenshtein distance to the nearest training sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
"""The 20 amino acids; token ``k`` is ``AMINO_ACIDS[k]``."""
_INDEX = {a: i for i, a in enumerate(AMINO_ACIDS)}


def encode_sequences(seqs: Sequence[str] | np.ndarray, n_tokens: int = 20) -> np.ndarray:
    """Turn strings over :data:`AMINO_ACIDS` (or an int array) into an ``(n, L)`` int64 token array.

    All sequences must have the same length. Raises ValueError on unknown letters or tokens.
    """
    if isinstance(seqs, np.ndarray) and seqs.dtype.kind == "f":
        if not (np.isfinite(seqs).all() and np.array_equal(seqs, np.round(seqs))):
            raise ValueError("a float token array must hold integral, finite values")
        seqs = seqs.astype(np.int64)
    if isinstance(seqs, np.ndarray) and seqs.dtype.kind in "iu":
        arr = np.asarray(seqs, dtype=np.int64)
        if arr.ndim != 2:
            raise ValueError(f"token array must be 2-D (n, L), got shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= n_tokens):
            raise ValueError(f"tokens must lie in [0, {n_tokens}), got range [{arr.min()}, {arr.max()}]")
        return arr
    seqs = list(seqs)
    if not seqs:
        raise ValueError("need at least one sequence")
    lengths = {len(s) for s in seqs}
    if len(lengths) != 1:
        raise ValueError(f"all sequences must have the same length, got lengths {sorted(lengths)[:5]}")
    try:
        return np.array([[_INDEX[c] for c in s] for s in seqs], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"unknown amino-acid letter {exc.args[0]!r}; alphabet is {AMINO_ACIDS}") from None


def decode_tokens(tokens: np.ndarray) -> list[str]:
    """Turn an ``(n, L)`` token array back into strings."""
    letters = np.array(list(AMINO_ACIDS))
    return ["".join(row) for row in letters[np.asarray(tokens)]]


# ----------------------------------------------------------------------------------------------- distances
def _levenshtein_bitparallel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Myers/Hyyrö bit-parallel edit distance for all pairs, pattern length <= 63, vectorised over pairs."""
    n, m_len = a.shape
    tokens = int(max(a.max(initial=0), b.max(initial=0))) + 1
    # Peq[s, c]: bit i set where a[s, i] == c
    peq = np.zeros((n, tokens), dtype=np.uint64)
    for i in range(m_len):
        np.bitwise_or.at(peq, (np.arange(n), a[:, i]), np.uint64(1) << np.uint64(i))
    shape = (n, b.shape[0])
    pv = np.full(shape, np.uint64((1 << m_len) - 1))
    mv = np.zeros(shape, dtype=np.uint64)
    score = np.full(shape, m_len, dtype=np.int64)
    top = np.uint64(1) << np.uint64(m_len - 1)
    one = np.uint64(1)
    for j in range(b.shape[1]):
        eq = peq[:, b[:, j]]                                   # (n, m)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        score += (ph & top).astype(bool).astype(np.int64) - (mh & top).astype(bool).astype(np.int64)
        ph = (ph << one) | one                                  # row 0 of the DP grows by 1 per column
        mh = mh << one
        pv = mh | ~(xv | ph)
        mv = ph & xv
    return score


def _levenshtein_dp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-by-row Wagner-Fischer DP for all pairs, vectorised over pairs (any lengths)."""
    la, lb = a.shape[1], b.shape[1]
    prev = np.broadcast_to(np.arange(lb + 1), (a.shape[0], b.shape[0], lb + 1)).copy()
    for i in range(1, la + 1):
        cur = np.empty_like(prev)
        cur[..., 0] = i
        sub = prev[..., :-1] + (a[:, None, i - 1, None] != b[None, :, :])
        best = np.minimum(prev[..., 1:] + 1, sub)
        for j in range(1, lb + 1):
            cur[..., j] = np.minimum(best[..., j - 1], cur[..., j - 1] + 1)
        prev = cur
    return prev[..., lb]


def levenshtein_matrix(a: Sequence[str] | np.ndarray, b: Sequence[str] | np.ndarray) -> np.ndarray:
    """All pairwise Levenshtein distances between the rows of ``a`` (n, La) and ``b`` (m, Lb).

    Uses the bit-parallel algorithm (Myers 1999; Hyyrö 2001) when ``La <= 63`` and a vectorised DP
    otherwise. Returns an ``(n, m)`` int64 array.
    """
    a, b = encode_sequences(a), encode_sequences(b)
    if a.shape[1] == 0:
        return np.broadcast_to(np.full(b.shape[0], b.shape[1]), (a.shape[0], b.shape[0])).astype(np.int64)
    if a.shape[1] <= 63:
        return _levenshtein_bitparallel(a, b)
    return _levenshtein_dp(a, b)


def diversity(seqs: Sequence[str] | np.ndarray, statistic: str = "mean") -> float:
    """Pairwise Levenshtein diversity of a set of designs (0.0 for fewer than two sequences).

    ``statistic="mean"`` (default, the official VLGPO/GGS metric): the sum of the distances over ordered pairs
    ``i != j`` divided by ``n (n - 1)``, i.e. the mean over distinct pairs. ``statistic="median"``: the median
    over distinct pairs (a collapse-robust variant used by our no-collapse check).
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    x = encode_sequences(seqs)
    if x.shape[0] < 2:
        return 0.0
    d = levenshtein_matrix(x, x)[np.triu_indices(x.shape[0], k=1)]
    return float(np.mean(d) if statistic == "mean" else np.median(d))


def novelty(seqs: Sequence[str] | np.ndarray, train_seqs: Sequence[str] | np.ndarray) -> float:
    """Median over ``seqs`` of the Levenshtein distance to the nearest training sequence."""
    x, t = encode_sequences(seqs), encode_sequences(train_seqs)
    mins = np.full(x.shape[0], np.iinfo(np.int64).max)
    for start in range(0, t.shape[0], 2048):       # chunks bound memory
        mins = np.minimum(mins, levenshtein_matrix(x, t[start:start + 2048]).min(axis=1))
    return float(np.median(mins))


def evaluate(seqs: Sequence[str] | np.ndarray, oracle, train_seqs: Sequence[str] | np.ndarray) -> dict[str, float]:
    """GGS metrics of a set of designs: median oracle fitness, diversity and novelty.

    Args:
        seqs: the designs (already deduplicated and selected).
        oracle: callable mapping an ``(n, L)`` token array to ``n`` fitness values (normalised).
        train_seqs: the optimiser's training sequences.

    Returns:
        ``{"fitness": median oracle fitness, "diversity": mean pairwise distance (official),
        "diversity_median": median pairwise distance, "novelty": median distance to the training set}``.
    """
    x = encode_sequences(seqs)
    return {"fitness": float(np.median(oracle(x))), "diversity": diversity(x, "mean"),
            "diversity_median": diversity(x, "median"), "novelty": novelty(x, train_seqs)}


# ------------------------------------------------------------------------------------------------ landscape
@dataclass
class PottsOracle:
    """Exact Potts fitness ``f(x) = sum_i h_i(x_i) + sum_(i,j in E) J_ij(x_i, x_j)``, min-max normalised.

    ``n_calls`` counts evaluations, so a pipeline can prove it never looked at the oracle.
    """

    h: np.ndarray
    """Fields, shape (L, 20)."""
    edges: np.ndarray
    """Coupled pairs, shape (E, 2)."""
    couplings: np.ndarray
    """Coupling tables, shape (E, 20, 20)."""
    f_min: float = 0.0
    """Raw fitness mapped to 0."""
    f_max: float = 1.0
    """Raw fitness mapped to 1."""
    n_calls: int = field(default=0)
    """How many times the oracle has been called."""

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Unnormalised Potts energy of an ``(n, L)`` token array (does not count as a call)."""
        x = encode_sequences(x)
        if x.shape[1] != self.h.shape[0]:
            raise ValueError(f"sequences have length {x.shape[1]}, landscape has length {self.h.shape[0]}")
        f = self.h[np.arange(x.shape[1]), x].sum(axis=1)
        if len(self.edges):
            f = f + self.couplings[np.arange(len(self.edges)), x[:, self.edges[:, 0]], x[:, self.edges[:, 1]]].sum(1)
        return f

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.n_calls += 1
        return (self.raw(x) - self.f_min) / (self.f_max - self.f_min)


@dataclass
class LandscapeTask:
    """A GGS-style optimisation task: training data, the held-out rest of the library, and the oracle."""

    wild_type: np.ndarray
    """Token array (L,)."""
    train_x: np.ndarray
    """Training sequences (n, L), low fitness and far from the top."""
    train_y: np.ndarray
    """Their normalised fitness."""
    library_x: np.ndarray
    """The whole mutant library (N, L)."""
    library_y: np.ndarray
    """Its normalised fitness (for predictor diagnostics only)."""
    oracle: PottsOracle
    """Exact fitness, normalised to [0, 1] over the library."""


def make_landscape_task(L: int = 28, kind: str = "potts", difficulty: str = "medium", seed: int = 0,
                        n_library: int = 20000, max_mutations: int = 10, edge_prob: float = 0.1,
                        coupling_scale: float = 0.6) -> LandscapeTask:
    """Synthetic AAV-like task: a random sparse Potts landscape and a GGS difficulty split.

    Library: ``n_library`` random 1..``max_mutations``-point mutants of a random wild type. Filters (GGS):
    ``medium`` keeps fitness in the 20-40th percentile and >= 6 mutations from every top-1% sequence;
    ``hard`` keeps fitness below the 30th percentile and >= 7 mutations away.

    Args:
        L: sequence length.
        kind: only ``"potts"``.
        difficulty: ``"medium"`` or ``"hard"``.
        seed: fixes the landscape, the library and hence the split.
        n_library: library size.
        max_mutations: largest number of point mutations from the wild type.
        edge_prob: probability that a pair of positions is coupled (sparse epistasis).
        coupling_scale: standard deviation of the coupling entries (fields have standard deviation 1).
    """
    if kind != "potts":
        raise ValueError(f"kind must be 'potts', got {kind!r}")
    if difficulty not in ("medium", "hard"):
        raise ValueError(f"difficulty must be 'medium' or 'hard', got {difficulty!r}")
    if L < 2:
        raise ValueError(f"L must be >= 2, got {L}")
    if not 1 <= max_mutations <= L:
        raise ValueError(f"max_mutations must be in [1, L={L}], got {max_mutations}")
    if n_library < 100:
        raise ValueError(f"n_library must be >= 100, got {n_library}")
    rng = np.random.default_rng([seed, 2025])
    h = rng.normal(size=(L, 20))
    iu, ju = np.triu_indices(L, k=1)
    keep = rng.random(iu.size) < edge_prob
    edges = np.stack([iu[keep], ju[keep]], axis=1)
    couplings = rng.normal(scale=coupling_scale, size=(len(edges), 20, 20))
    wt = rng.integers(0, 20, size=L)
    # library: k-point mutants, k uniform in 1..max_mutations, each mutation to a different amino acid
    k = rng.integers(1, max_mutations + 1, size=n_library)
    pos_rank = np.argsort(rng.random((n_library, L)), axis=1)
    mutate = pos_rank < k[:, None]
    shift = rng.integers(1, 20, size=(n_library, L))
    lib = np.where(mutate, (wt[None, :] + shift) % 20, wt[None, :])
    lib = np.unique(lib, axis=0)
    oracle = PottsOracle(h, edges, couplings)
    raw = oracle.raw(lib)
    oracle.f_min, oracle.f_max = float(raw.min()), float(raw.max())
    y = (raw - oracle.f_min) / (oracle.f_max - oracle.f_min)
    top = lib[y >= np.quantile(y, 0.99)]
    gap = np.full(len(lib), L)
    for t in top:                                   # equal lengths: mutations = Hamming distance
        gap = np.minimum(gap, (lib != t).sum(axis=1))
    if difficulty == "medium":
        mask = (y >= np.quantile(y, 0.2)) & (y <= np.quantile(y, 0.4)) & (gap >= 6)
    else:
        mask = (y < np.quantile(y, 0.3)) & (gap >= 7)
    if mask.sum() < 10:
        raise ValueError(f"the {difficulty} filter left {mask.sum()} sequences; use a larger n_library")
    return LandscapeTask(wt, lib[mask], y[mask], lib, y, oracle)
