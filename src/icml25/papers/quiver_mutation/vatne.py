"""Vatne's four families of type-D quivers: a labeller for the paper's hidden-representation study.

Vatne (2010, "The mutation class of D_n quivers") shows that the mutation class of ``D_n``
(n >= 5) is the disjoint union of four families, each made by gluing quivers of mutation type A
to a small core. A type-A quiver ``G`` is glued at one of its *connecting vertices* ``c``: a vertex
with at most one neighbour in ``G``, or with two neighbours that lie on a 3-cycle with ``c``.
Gluing identifies ``c`` with a vertex of the core and adds no other arrows.

- **Type I**: two vertices ``a``, ``b``, each joined by one arrow (either direction) to a vertex ``c``
  only; a type-A quiver on ``n - 2`` vertices is glued at ``c``.
- **Type II**: two oriented 3-cycles ``c' -> a -> c'' -> c'`` and ``c' -> b -> c'' -> c'`` sharing the
  arrow ``c'' -> c'``; type-A quivers are glued at ``c'`` and at ``c''``.
- **Type III**: the oriented 4-cycle ``c' -> a -> c'' -> b -> c'``; type-A quivers are glued at ``c'``
  and at ``c''`` (opposite corners).
- **Type IV**: an oriented *central cycle* of length ``k >= 3``. Each of its arrows ``v -> w`` may carry a
  spike: a vertex ``s`` with ``w -> s -> v``; a type-A quiver is glued at each spike vertex.

The definitions were written from memory of Vatne's paper, which could not be read here; they are
checked instead against the ground truth: :func:`vatne_type_table` builds every member of every
family by construction and the test suite asserts that the union is exactly the BFS mutation class
of ``D_n`` and that the families are disjoint, for n = 5..9 (on 4 vertices Type II with trivial
pieces coincides with Type IV with one spike, and Type III with Type IV on a 4-cycle; those two
quivers get the lower type number). Moving the Type II pieces to ``a`` and ``b`` instead breaks
the equality, so the check discriminates.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from icml25.papers.quiver_mutation.quivers import (
    canonical_form_unchecked,
    check_exchange_matrix,
    from_canonical,
    type_class_certificates,
)

VATNE_TYPES = (1, 2, 3, 4)
"""Vatne's type-D families, numbered as in his paper (Types I-IV)."""


def is_connecting_vertex(B: np.ndarray, c: int) -> bool:
    """Whether ``c`` is a connecting vertex of ``B``: at most one neighbour, or two that close a 3-cycle with it."""
    nbrs = np.flatnonzero(B[c])
    return nbrs.size <= 1 or (nbrs.size == 2 and B[nbrs[0], nbrs[1]] != 0)


@lru_cache(maxsize=None)
def _type_a_pieces(m: int) -> tuple[tuple[np.ndarray, int], ...]:
    """Every (type-A quiver on m vertices, connecting vertex) pair, quivers up to isomorphism."""
    pieces = []
    for cert in type_class_certificates("A", m):
        B = from_canonical(cert)
        pieces.extend((B, c) for c in range(m) if is_connecting_vertex(B, c))
    return tuple(pieces)


def _arrows(n: int, arrows: list[tuple[int, int]]) -> np.ndarray:
    B = np.zeros((n, n), dtype=np.int64)
    for i, j in arrows:
        B[i, j] += 1
        B[j, i] -= 1
    return B


def _glue(core: np.ndarray, attachments: list[tuple[int, np.ndarray, int]]) -> np.ndarray:
    """Glue each piece ``(core vertex v, quiver G, connecting vertex c)`` to the core by identifying c with v."""
    k = core.shape[0]
    n = k + sum(G.shape[0] - 1 for _, G, _ in attachments)
    out = np.zeros((n, n), dtype=np.int64)
    out[:k, :k] = core
    nxt = k
    for v, G, c in attachments:
        idx = np.empty(G.shape[0], dtype=np.int64)
        for i in range(G.shape[0]):
            if i == c:
                idx[i] = v
            else:
                idx[i], nxt = nxt, nxt + 1
        out[np.ix_(idx, idx)] += G
    return out


def _compositions(total: int, parts: int, smallest: int) -> Iterator[tuple[int, ...]]:
    if parts == 0:
        if total == 0:
            yield ()
        return
    for first in range(smallest, total - smallest * (parts - 1) + 1):
        for rest in _compositions(total - first, parts - 1, smallest):
            yield (first, *rest)


def _family_members(n: int) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(type, quiver)`` for every way of building an n-vertex member of each family."""
    pieces = {m: _type_a_pieces(m) for m in range(1, n)}
    for a_out, b_out in itertools.product((False, True), repeat=2):  # Type I: c = 0, a = 1, b = 2
        core = _arrows(3, [(0, 1) if a_out else (1, 0), (0, 2) if b_out else (2, 0)])
        for G, c in pieces[n - 2]:
            yield 1, _glue(core, [(0, G, c)])
    # Types II and III: c' = 0, c'' = 1, a = 2, b = 3
    two_triangles = _arrows(4, [(1, 0), (0, 2), (2, 1), (0, 3), (3, 1)])
    square = _arrows(4, [(0, 2), (2, 1), (1, 3), (3, 0)])
    for m1, m2 in _compositions(n - 2, 2, 1):
        for (G1, c1), (G2, c2) in itertools.product(pieces[m1], pieces[m2]):
            yield 2, _glue(two_triangles, [(0, G1, c1), (1, G2, c2)])
            yield 3, _glue(square, [(0, G1, c1), (1, G2, c2)])
    for k in range(3, n + 1):  # Type IV: central cycle 0 -> 1 -> ... -> k-1 -> 0
        cycle = [(i, (i + 1) % k) for i in range(k)]
        for sizes in _compositions(n - k, k, 0):  # sizes[i] > 0: arrow i carries a spike with that piece size
            spiked = [i for i in range(k) if sizes[i]]
            spikes = [arrow for s, i in enumerate(spiked) for arrow in (((i + 1) % k, k + s), (k + s, i))]
            core = _arrows(k + len(spiked), cycle + spikes)
            for choice in itertools.product(*(pieces[sizes[i]] for i in spiked)):
                yield 4, _glue(core, [(k + s, G, c) for s, (G, c) in enumerate(choice)])


@lru_cache(maxsize=None)
def vatne_family_sets(n: int) -> dict[int, frozenset[bytes]]:
    """Canonical certificates of the n-vertex members of each of Vatne's four families (n >= 4)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 4:
        raise ValueError(f"Vatne's families are defined for n >= 4 vertices, got {n!r}")
    families: dict[int, set[bytes]] = {t: set() for t in VATNE_TYPES}
    for t, B in _family_members(int(n)):
        families[t].add(canonical_form_unchecked(B))
    return {t: frozenset(s) for t, s in families.items()}


@lru_cache(maxsize=None)
def vatne_type_table(n: int) -> dict[bytes, int]:
    """``{certificate: Vatne type}`` for every quiver of the ``D_n`` mutation class (lowest type on overlaps)."""
    table: dict[bytes, int] = {}
    for t, certs in sorted(vatne_family_sets(n).items(), reverse=True):
        table.update(dict.fromkeys(certs, t))
    return table


def vatne_type(B: np.ndarray) -> int:
    """Vatne's type (1-4) of a quiver of mutation type ``D_n``.

    Raises:
        ValueError: ``B`` is not a skew-symmetric integer matrix, has fewer than 4 vertices, or is
            not mutation-equivalent to ``D_n``.
    """
    B = check_exchange_matrix(B)
    table = vatne_type_table(B.shape[0])
    cert = canonical_form_unchecked(B)
    if cert not in table:
        raise ValueError(f"the quiver is not of mutation type D_{B.shape[0]}")
    return table[cert]


def check_vatne_partition(n: int) -> dict[str, int]:
    """Compare the constructed families with the BFS class of ``D_n``.

    Returns counts: ``missing`` (in the class, in no family), ``extra`` (in a family, not in the
    class), ``overlaps`` (in more than one family), and the size of each family.
    """
    families = vatne_family_sets(n)
    union = frozenset().union(*families.values())
    truth = frozenset(type_class_certificates("D", n))
    in_several = sum(1 for cert in union if sum(cert in s for s in families.values()) > 1)
    return {"class_size": len(truth), "missing": len(truth - union), "extra": len(union - truth),
            "overlaps": in_several, **{f"type_{t}": len(families[t]) for t in VATNE_TYPES}}
