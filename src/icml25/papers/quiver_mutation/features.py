"""Feature baselines of the quiver classifiers: hand-made invariants and the sorted spectrum (NumPy only).

Fed to logistic regression and an MLP in the ``generalisation`` experiment, against DirGINE.
"""

from __future__ import annotations

import numpy as np

from icml25.papers.quiver_mutation.quivers import check_exchange_matrix


def count_features(B: np.ndarray, max_degree: int = 8) -> np.ndarray:
    """Hand-made invariants: n, arrows by multiplicity (1, 2, >=3), histograms of undirected degree,
    in-degree and out-degree (0..max_degree), oriented and non-oriented 3-cycles."""
    if isinstance(max_degree, bool) or not isinstance(max_degree, (int, np.integer)) or max_degree < 0:
        raise ValueError(f"max_degree must be a non-negative integer, got {max_degree!r}")
    B = check_exchange_matrix(B)
    adj = B != 0
    pos = B > 0
    n = B.shape[0]
    mult = np.abs(B[np.triu_indices(n, 1)])
    hist = lambda d: np.bincount(np.minimum(d, max_degree), minlength=max_degree + 1)  # noqa: E731
    P = pos.astype(np.int64)
    oriented = int(np.trace(P @ P @ P)) // 3
    triangles = int(np.trace(adj.astype(np.int64) @ adj @ adj)) // 6
    return np.concatenate([[n, (mult == 1).sum(), (mult == 2).sum(), (mult >= 3).sum()],
                           hist(adj.sum(1)), hist(pos.sum(0)), hist(pos.sum(1)),
                           [oriented, triangles - oriented]]).astype(float)


def spectrum_features(B: np.ndarray, length: int = 12) -> np.ndarray:
    """Singular values of ``B`` (|eigenvalues| of the skew-symmetric matrix), descending, zero-padded to ``length``."""
    B = check_exchange_matrix(B)
    if B.shape[0] > length:
        raise ValueError(f"quiver has {B.shape[0]} vertices, more than the spectrum length {length}")
    s = np.linalg.svd(B.astype(float), compute_uv=False)
    return np.pad(np.sort(s)[::-1], (0, length - s.size))
