"""Explainability study helpers: motifs picked out by edge importances, and the mutation type of a small quiver.

The paper reads GNNExplainer edge masks on D~ quivers to find the sub-quivers that drive the
classification, then turns them into a criterion. We make the first step measurable:

- :func:`connected_motif` grows a connected set of ``k`` arrows greedily from the most important
  arrow, always adding the most important arrow that touches the vertices chosen so far (or, with
  no importances, a uniformly random one: the baseline). The motif is the full sub-quiver on the
  vertices reached.
- :func:`identify_mutation_type` names the mutation type of a small connected quiver among the
  paper's six types by looking its canonical form up in the BFS-enumerated classes.

Full sub-quivers of a quiver of mutation type A are of type A (each connected component), so a
motif that is *not* of type A certifies that the whole quiver is not of type A. The study asks how
often the explainer's motif is such a certificate, compared with a random connected motif of the
same number of arrows.
"""

from __future__ import annotations

import numpy as np

from icml25.papers.quiver_mutation.quivers import (
    QUIVER_TYPES,
    canonical_form_unchecked,
    check_exchange_matrix,
    is_mutation_type_A,
    type_class_certificates,
)


def connected_motif(B: np.ndarray, k: int, importance: dict[tuple[int, int], float] | None = None,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """Vertices of a connected motif of ``k`` arrows of ``B``.

    Args:
        B: exchange matrix.
        k: number of arrows to pick (fewer if the connected component runs out of arrows).
        importance: ``{(i, j): score}`` for the arrows ``i -> j`` of ``B`` (as returned by :func:`explain`);
            the motif starts at the best arrow and greedily adds the best adjacent one. ``None``: random
            start and random adjacent arrows (needs ``rng``).
        rng: random generator for the random motif.

    Returns:
        Sorted vertex indices of the motif; take ``B[np.ix_(v, v)]`` for the full sub-quiver.
    """
    B = check_exchange_matrix(B)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive number of arrows, got {k!r}")
    arrows = [(int(i), int(j)) for i, j in zip(*np.nonzero(B > 0))]
    if not arrows:
        raise ValueError("the quiver has no arrows")
    if importance is None:
        if rng is None:
            raise ValueError("a random motif needs rng")
        score = dict(zip(arrows, rng.random(len(arrows))))
    else:
        missing = [a for a in arrows if a not in importance]
        if missing:
            raise ValueError(f"importance has no score for arrow {missing[0]}")
        score = {a: float(importance[a]) for a in arrows}
    first = max(arrows, key=score.__getitem__)
    chosen, vertices = {first}, set(first)
    while len(chosen) < k:
        frontier = [a for a in arrows if a not in chosen and (a[0] in vertices or a[1] in vertices)]
        if not frontier:
            break
        best = max(frontier, key=score.__getitem__)
        chosen.add(best)
        vertices.update(best)
    return np.array(sorted(vertices), dtype=np.int64)


def identify_mutation_type(B: np.ndarray) -> str | None:
    """The paper's mutation type (one of ``QUIVER_TYPES``) of a connected quiver, or ``None`` if none fits.

    Type A is decided by the Buan-Vatne criterion; the other types by looking the canonical form up
    in the BFS-enumerated class on the same number of vertices (each class is enumerated once and
    cached; this is fast up to about 9 vertices). On few vertices types coincide (D_3 = A_3,
    A~_2 ... ); the first match in ``QUIVER_TYPES`` order is returned.
    """
    B = check_exchange_matrix(B)
    if is_mutation_type_A(B):
        return "A"
    cert = canonical_form_unchecked(B)
    for kind in QUIVER_TYPES[1:]:
        if cert in _class_set(kind, B.shape[0]):
            return kind
    return None


_CLASS_SETS: dict[tuple[str, int], frozenset[bytes]] = {}


def _class_set(kind: str, n: int) -> frozenset[bytes]:
    if (kind, n) not in _CLASS_SETS:
        _CLASS_SETS[kind, n] = frozenset(type_class_certificates(kind, n))
    return _CLASS_SETS[kind, n]


def remove_arrows(B: np.ndarray, arrows: list[tuple[int, int]]) -> np.ndarray:
    """``B`` with every arrow ``i -> j`` in ``arrows`` deleted (all its multiplicity; the vertices stay).

    The masking study of the paper: delete the arrows an explainer ranks highest and classify again.

    Raises:
        ValueError: an entry of ``arrows`` is not an arrow ``i -> j`` (``b_ij > 0``) of ``B``.
    """
    B = check_exchange_matrix(B).copy()
    for a in arrows:
        i, j = (int(x) for x in a)
        if not (0 <= i < B.shape[0] and 0 <= j < B.shape[0]) or B[i, j] <= 0:
            raise ValueError(f"({i}, {j}) is not an arrow of the quiver")
        B[i, j] = B[j, i] = 0
    return B
