"""Combinatorial perturbation screens: the data layout NAIAD works on, and a synthetic generator.

A screen measures every (or many) unordered gene pairs (a, b). Each row holds the two
gene ids, the two single-gene phenotypes s_a, s_b (in a CRISPR screen: the same-gene
double-guide effect) and the measured combination phenotype y_ab (e.g. growth "gamma").
Strong perturbations are the most negative y (growth defects) unless stated otherwise.

The real screens of the paper (Norman 2019 K562 CRISPRa, Horlbeck 2018 K562/Jurkat
CRISPRi, Simpson 2023) ship as CSV files in the official repository, not on PyPI, so the
reproduction uses :func:`make_synthetic_screen`, which mimics a growth screen: most genes
are neutral, a minority is strongly negative, the pair effect is a nonlinear function of
the two single effects plus a low-rank gene-specific interaction, sparse synergy and noise.
A user can build a :class:`CombinatorialScreen` from their own table with
:func:`screen_from_arrays`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CombinatorialScreen:
    """A pairwise perturbation screen.

    Attributes:
        pairs: int array (n, 2), gene ids in [0, n_genes) of each measured pair.
        single: float array (n, 2), single-gene phenotypes of the two genes of each row
            (same column order as ``pairs``).
        y: float array (n,), measured combination phenotype.
        n_genes: number of genes (size of the embedding table).
        y_clean: float array (n,) of noise-free phenotypes when known (synthetic data), else ``None``.
        genes: gene names indexed by id, when known (screens read from a file).
    """

    pairs: np.ndarray
    single: np.ndarray
    y: np.ndarray
    n_genes: int
    y_clean: np.ndarray | None = None
    genes: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def subset(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows ``idx`` as ``(pairs, single, y)``."""
        return self.pairs[idx], self.single[idx], self.y[idx]


def check_pairs(pairs, n_genes: int | None = None) -> np.ndarray:
    """Validate gene-id pairs: shape (n, 2), n >= 1, integer values in ``[0, n_genes)``.

    Returns them as ``int64``; raises ``ValueError`` naming the problem.
    """
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n, 2), got {pairs.shape}")
    if pairs.shape[0] == 0:
        raise ValueError("pairs is empty: need at least one row")
    if not np.issubdtype(pairs.dtype, np.integer):
        if not np.all(np.isfinite(pairs)) or not np.all(pairs == np.round(pairs)):
            raise ValueError(f"pairs must hold integer gene ids, got dtype {pairs.dtype}")
    pairs = pairs.astype(np.int64)
    if pairs.min() < 0:
        raise ValueError(f"gene ids must be >= 0, got {pairs.min()}")
    if n_genes is not None and pairs.max() >= n_genes:
        raise ValueError(f"gene id {pairs.max()} is out of range for n_genes={n_genes}")
    return pairs


def check_pairs_single(pairs, single, n_genes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``pairs`` (n, 2) non-negative ints and ``single`` (n, 2) finite floats.

    Returns them as ``int64`` and ``float32`` arrays; raises ``ValueError`` naming the problem.
    """
    pairs = check_pairs(pairs, n_genes)
    single = np.asarray(single, dtype=np.float64)
    if single.shape != pairs.shape:
        raise ValueError(f"single must have the shape of pairs {pairs.shape}, got {single.shape}")
    if not np.all(np.isfinite(single)):
        raise ValueError("single contains NaN or infinite values (drop pairs with missing single effects)")
    return pairs, single.astype(np.float32)


def screen_from_arrays(pairs, single, y, n_genes: int | None = None) -> CombinatorialScreen:
    """Build a validated :class:`CombinatorialScreen` from user arrays.

    Args:
        pairs: (n, 2) gene ids.
        single: (n, 2) single-gene phenotypes of the two genes.
        y: (n,) combination phenotypes.
        n_genes: size of the gene vocabulary; default ``max(pairs) + 1``.
    """
    pairs, single = check_pairs_single(pairs, single, n_genes)
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (pairs.shape[0],):
        raise ValueError(f"y must have shape ({pairs.shape[0]},), got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    n_genes = int(pairs.max()) + 1 if n_genes is None else int(n_genes)
    return CombinatorialScreen(pairs, single, y.astype(np.float32), n_genes)


def make_synthetic_screen(
    n_genes: int = 150,
    product_coef: float = 2.0,
    rank: int = 4,
    interaction_scale: float = 0.05,
    synergy_frac: float = 0.01,
    synergy_effect: float = -0.3,
    noise: float = 0.02,
    strong_frac: float = 0.2,
    seed: int = 0,
) -> CombinatorialScreen:
    """All n_genes (n_genes - 1) / 2 pairs of a synthetic growth screen.

    Single effects: ``s_g ~ (1 - strong_frac) N(0, 0.02^2) + strong_frac N(-0.25, 0.1^2)``.
    Pair phenotype:

        y_ab = s_a + s_b + c s_a s_b + u_a^T W u_b + synergy_ab + eps,

    with ``c = product_coef``, ``u_g ~ N(0, I_rank)``, W symmetric and rescaled so that the
    interaction term has standard deviation ``interaction_scale`` over all pairs,
    ``synergy_ab = synergy_effect`` on a random ``synergy_frac`` of the pairs (0 elsewhere)
    and ``eps ~ N(0, noise^2)``. The measured single effects are the true s_g (the screen
    measures them with many guides). The column order within each row is random, as in
    the official data loader (``shuffle_ids``).

    ``product_coef = interaction_scale = synergy_frac = 0`` gives a purely additive screen,
    on which the linear model ``s_a + s_b`` is the truth.
    """
    if n_genes < 3:
        raise ValueError(f"n_genes must be >= 3, got {n_genes}")
    if rank < 1:
        raise ValueError(f"rank must be >= 1, got {rank}")
    if not 0 <= synergy_frac <= 1:
        raise ValueError(f"synergy_frac must be in [0, 1], got {synergy_frac}")
    if not 0 <= strong_frac <= 1:
        raise ValueError(f"strong_frac must be in [0, 1], got {strong_frac}")
    if noise < 0 or interaction_scale < 0:
        raise ValueError(f"noise and interaction_scale must be >= 0, got {noise}, {interaction_scale}")
    rng = np.random.default_rng([seed, 2411])
    strong = rng.random(n_genes) < strong_frac
    s = np.where(strong, rng.normal(-0.25, 0.1, n_genes), rng.normal(0.0, 0.02, n_genes))
    a, b = np.triu_indices(n_genes, k=1)
    u = rng.standard_normal((n_genes, rank))
    w0 = rng.standard_normal((rank, rank))
    w0 = (w0 + w0.T) / 2
    inter = np.einsum("ni,ij,nj->n", u[a], w0, u[b])
    inter = inter * (interaction_scale / inter.std()) if interaction_scale > 0 else np.zeros_like(inter)
    synergy = np.where(rng.random(a.size) < synergy_frac, synergy_effect, 0.0)
    y_clean = s[a] + s[b] + product_coef * s[a] * s[b] + inter + synergy
    y = y_clean + noise * rng.standard_normal(a.size)
    pairs = np.stack([a, b], axis=1)
    swap = rng.random(a.size) < 0.5
    pairs[swap] = pairs[swap][:, ::-1]
    return CombinatorialScreen(
        pairs=pairs.astype(np.int64),
        single=s[pairs].astype(np.float32),
        y=y.astype(np.float32),
        n_genes=n_genes,
        y_clean=y_clean.astype(np.float32),
    )


def load_screen_csv(path, control: str = "negative") -> CombinatorialScreen:
    """Read a screen in the official repository's raw format (``tutorials/data/*_gamma.csv``).

    The file has columns ``id1, id2, score``; a row with exactly one id equal to ``control``
    gives the single-gene phenotype of the other id. As in the official
    ``load_naiad_data``: the ids of each row are sorted and duplicate pairs averaged, single
    and control-only rows are removed from the pairs, and pairs whose single effects are
    missing are dropped. Returns the pairs with their single effects, gene names in ``genes``.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("load_screen_csv needs pandas: pip install 'icml25[tables]'") from exc

    df = pd.read_csv(path, encoding="utf-8-sig")
    missing = {"id1", "id2", "score"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: expected columns id1, id2, score; missing {sorted(missing)}")
    ids = np.sort(df[["id1", "id2"]].astype(str).to_numpy(), axis=1)
    df = pd.DataFrame({"id1": ids[:, 0], "id2": ids[:, 1], "score": df["score"].astype(float)})
    df = df.groupby(["id1", "id2"], as_index=False)["score"].mean()
    is_ctrl = df[["id1", "id2"]].to_numpy() == control
    single_rows = is_ctrl.sum(axis=1) == 1
    single = df[single_rows]
    single_ids = np.where(single["id1"] == control, single["id2"], single["id1"])
    single_score = pd.Series(single["score"].to_numpy(), index=single_ids)
    pairs = df[~is_ctrl.any(axis=1)]
    s1, s2 = pairs["id1"].map(single_score), pairs["id2"].map(single_score)
    keep = (s1.notna() & s2.notna()).to_numpy()
    pairs, s1, s2 = pairs[keep], s1[keep].to_numpy(), s2[keep].to_numpy()
    if len(pairs) == 0:
        raise ValueError(f"{path}: no pair has both single effects (control id {control!r})")
    genes = tuple(sorted(set(pairs["id1"]) | set(pairs["id2"])))
    index = {g: i for i, g in enumerate(genes)}
    gid = np.stack([pairs["id1"].map(index).to_numpy(), pairs["id2"].map(index).to_numpy()], axis=1)
    return CombinatorialScreen(gid.astype(np.int64), np.stack([s1, s2], axis=1).astype(np.float32),
                               pairs["score"].to_numpy(np.float32), len(genes), None, genes)
