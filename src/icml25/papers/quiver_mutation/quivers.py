"""Quivers as skew-symmetric integer matrices: mutation, seed quivers, canonical forms, mutation classes.

A quiver on ``n`` vertices without loops or 2-cycles is stored as its exchange matrix ``B``
(``n x n`` integer, skew-symmetric), ``b_ij = #(i -> j) - #(j -> i)``. Vertices are 0-based.

Mutation at ``k`` (Fomin-Zelevinsky):

    b'_ij = -b_ij                                          if k in {i, j}
    b'_ij = b_ij + sgn(b_ik) * max(b_ik * b_kj, 0)         otherwise

It is an involution. Two quivers are mutation-equivalent when a sequence of mutations followed
by a relabelling of the vertices maps one to the other. Mutation classes of Dynkin (A, D, E) and
affine (A~, D~, E~) quivers are finite; :func:`mutation_class` enumerates them by breadth-first
search, deduplicated up to isomorphism with :func:`canonical_form` (individualisation-refinement:
colour refinement on arrow multiplicities and directions, then a search over the remaining ties
keeping the lexicographically smallest relabelled matrix; exact, not a hash).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from functools import lru_cache
from pathlib import Path

import numpy as np

QUIVER_TYPES = ("A", "D", "E", "Atilde", "Dtilde", "Etilde")
"""The six mutation types of the paper's data set, in label order."""


# ----------------------------------------------------------------------------- validation
def check_exchange_matrix(B: np.ndarray, name: str = "B") -> np.ndarray:
    """Return ``B`` as an ``int64`` array after checking it is a square, integer, skew-symmetric matrix.

    Raises:
        ValueError: not 2-D square, empty, non-integer entries, NaN/inf, or ``B != -B.T``.
    """
    arr = np.asarray(B)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square 2-D matrix, got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must have at least one vertex (got an empty matrix)")
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} has NaN or infinite entries")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must have integer entries (arrow counts), got non-integer values")
    out = arr.astype(np.int64)
    if not np.array_equal(out, -out.T):
        i, j = np.argwhere(out != -out.T)[0]
        raise ValueError(f"{name} must be skew-symmetric: {name}[{i},{j}]={out[i, j]} but {name}[{j},{i}]={out[j, i]}")
    return out


# ----------------------------------------------------------------------------- mutation
def mutate(B: np.ndarray, k: int) -> np.ndarray:
    """Mutate the exchange matrix ``B`` at vertex ``k`` (0-based).

    Args:
        B: ``(n, n)`` skew-symmetric integer matrix.
        k: vertex index in ``[0, n)``.

    Returns:
        The mutated ``(n, n)`` ``int64`` matrix ``mu_k(B)``; ``B`` is not modified.

    Raises:
        ValueError: ``B`` is not a skew-symmetric integer matrix, or ``k`` is out of range.
    """
    B = check_exchange_matrix(B)
    n = B.shape[0]
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer vertex index, got {k!r}")
    if not 0 <= k < n:
        raise ValueError(f"vertex index k={k} out of range for a quiver on {n} vertices (0..{n - 1})")
    return _mutate_unchecked(B, int(k))


def _mutate_unchecked(B: np.ndarray, k: int) -> np.ndarray:
    col, row = B[:, k], B[k, :]
    # b_ij += sgn(b_ik) max(b_ik b_kj, 0)  ==  (|b_ik| b_kj + b_ik |b_kj|) / 2
    out = B + (np.abs(col)[:, None] * row[None, :] + col[:, None] * np.abs(row)[None, :]) // 2
    out[k, :] = -row
    out[:, k] = -col
    return out


# ----------------------------------------------------------------------------- seeds
def _path_orientation(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    B = np.zeros((n, n), dtype=np.int64)
    for i, j in edges:
        B[i, j], B[j, i] = 1, -1
    return B


def _tree_with_arms(arms: tuple[int, ...]) -> np.ndarray:
    """Star-shaped tree: a centre (vertex 0) with arms of the given lengths, arrows pointing outwards."""
    edges, nxt = [], 1
    for length in arms:
        prev = 0
        for _ in range(length):
            edges.append((prev, nxt))
            prev, nxt = nxt, nxt + 1
    return _path_orientation(nxt, edges)


def seed_quiver(kind: str, n: int, split: tuple[int, int] | None = None) -> np.ndarray:
    """An orientation of the (extended) Dynkin diagram of ``kind`` on ``n`` vertices.

    ``n`` is always the number of vertices: ``A_n``, ``D_n`` (n >= 4), ``E_n`` (n in 6, 7, 8);
    ``Atilde`` is ``A~_{n-1}``, an n-cycle with ``p`` arrows one way and ``q`` the other
    (``split=(p, q)``, p + q = n, p >= q >= 1; default ``(n-1, 1)``); ``Dtilde`` is ``D~_{n-1}`` (n >= 5);
    ``Etilde`` is ``E~6``, ``E~7``, ``E~8`` for n = 7, 8, 9.

    Raises:
        ValueError: unknown kind, or a size or split where the type is not defined.
    """
    if kind not in QUIVER_TYPES:
        raise ValueError(f"kind must be one of {QUIVER_TYPES}, got {kind!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer number of vertices, got {n!r}")
    n = int(n)
    if split is not None and kind != "Atilde":
        raise ValueError("split is only meaningful for kind='Atilde'")
    if kind == "A":
        return _path_orientation(n, [(i, i + 1) for i in range(n - 1)])
    if kind == "D":
        if n < 4:
            raise ValueError(f"type D needs n >= 4 vertices, got {n}")
        return _tree_with_arms((1, 1, n - 3))
    if kind == "E":
        if n not in (6, 7, 8):
            raise ValueError(f"type E is defined for n in (6, 7, 8), got {n}")
        return _tree_with_arms((1, 2, n - 4))
    if kind == "Atilde":
        p, q = split if split is not None else (n - 1, 1)
        if p + q != n or q < 1 or p < q:
            raise ValueError(f"Atilde split must be (p, q) with p + q = n = {n} and p >= q >= 1, got {split}")
        B = np.zeros((n, n), dtype=np.int64)
        for i in range(n):  # the first p arrows go clockwise, the last q anticlockwise
            a, b = (i, (i + 1) % n) if i < p else ((i + 1) % n, i)
            B[a, b] += 1
            B[b, a] -= 1
        return B
    if kind == "Dtilde":
        if n < 5:
            raise ValueError(f"type Dtilde (D~_{{n-1}}) needs n >= 5 vertices, got {n}")
        m = n - 4  # spine length; two leaves at each end of the spine
        edges = [(i, i + 1) for i in range(m - 1)] + [(0, m), (0, m + 1), (m - 1, m + 2), (m - 1, m + 3)]
        return _path_orientation(n, edges)
    arms = {7: (2, 2, 2), 8: (1, 3, 3), 9: (1, 2, 5)}
    if n not in arms:
        raise ValueError(f"type Etilde is defined for n in (7, 8, 9) vertices (E~6, E~7, E~8), got {n}")
    return _tree_with_arms(arms[n])


def atilde_splits(n: int) -> list[tuple[int, int]]:
    """All splits (p, q) of an n-cycle with p + q = n and p >= q >= 1: one mutation class of A~_{n-1} each."""
    return [(n - q, q) for q in range(1, n // 2 + 1)]


# ----------------------------------------------------------------------------- canonical form
def _refine(nbrs: list[list[tuple[int, int]]], colours: list[int]) -> list[int]:
    """Colour refinement to a stable colouring; colours are ranks of label-free signatures."""
    n = len(colours)
    n_col = len(set(colours))
    while True:
        sigs = [(colours[i], tuple(sorted((colours[j], w) for j, w in nbrs[i]))) for i in range(n)]
        ranks = {s: r for r, s in enumerate(sorted(set(sigs)))}
        new = [ranks[s] for s in sigs]
        if len(ranks) == n_col:
            return new
        colours, n_col = new, len(ranks)


def _search(B: np.ndarray, nbrs, colours: list[int], best: list) -> None:
    n = len(colours)
    if len(set(colours)) == n:  # discrete: a leaf of the search tree
        perm = sorted(range(n), key=colours.__getitem__)
        cert = B[np.ix_(perm, perm)].astype(np.int8).tobytes()
        if best[0] is None or cert < best[0]:
            best[0] = cert
        return
    counts: dict[int, int] = {}
    for c in colours:
        counts[c] = counts.get(c, 0) + 1
    target = min(c for c, m in counts.items() if m > 1)  # first non-singleton cell: label-invariant choice
    for v in range(n):
        if colours[v] == target:
            individualised = [2 * c + (0 if (i == v or c != target) else 1) for i, c in enumerate(colours)]
            _search(B, nbrs, _refine(nbrs, individualised), best)


def canonical_form(B: np.ndarray) -> bytes:
    """Canonical certificate of a quiver up to relabelling of its vertices.

    Two exchange matrices get the same certificate iff they are isomorphic quivers (same arrow
    multiplicities and directions after a permutation of the vertices). The certificate is the
    lexicographically smallest ``int8`` byte string of ``P B P^T`` over the leaves of an
    individualisation-refinement search tree, prefixed by ``n``.

    Raises:
        ValueError: ``B`` is not a skew-symmetric integer matrix, or has entries beyond +-127.
    """
    B = check_exchange_matrix(B)
    if np.abs(B).max(initial=0) > 127:
        raise ValueError("canonical_form supports arrow multiplicities up to 127")
    return canonical_form_unchecked(B)


def canonical_form_unchecked(B: np.ndarray) -> bytes:
    n = B.shape[0]
    nz = [np.nonzero(B[i])[0] for i in range(n)]
    nbrs = [[(int(j), int(B[i, j])) for j in nz[i]] for i in range(n)]
    best: list = [None]
    _search(B, nbrs, _refine(nbrs, [0] * n), best)
    return bytes([n]) + best[0]


def from_canonical(cert: bytes) -> np.ndarray:
    """The exchange matrix encoded by a :func:`canonical_form` certificate."""
    n = cert[0]
    return np.frombuffer(cert[1:], dtype=np.int8).reshape(n, n).astype(np.int64)


def are_isomorphic(B1: np.ndarray, B2: np.ndarray) -> bool:
    """Whether two quivers are equal up to relabelling of the vertices."""
    return canonical_form(B1) == canonical_form(B2)


# ----------------------------------------------------------------------------- mutation classes
def mutation_class(B: np.ndarray, max_size: int | None = None) -> list[np.ndarray]:
    """All quivers mutation-equivalent to ``B``, one per isomorphism class, by breadth-first search.

    Args:
        B: exchange matrix of any quiver.
        max_size: stop once this many quivers are found (the class of a mutation-infinite quiver
            is infinite, so a bound is required there); ``None`` means no bound.

    Returns:
        List of exchange matrices in canonical labelling, the class of ``B`` first, in BFS order.
    """
    B = check_exchange_matrix(B)
    if max_size is not None and max_size < 1:
        raise ValueError(f"max_size must be a positive integer or None, got {max_size}")
    return [from_canonical(c) for c in _mutation_class_certs(canonical_form(B), max_size)]


def _mutation_class_certs(start: bytes, max_size: int | None = None) -> tuple[bytes, ...]:
    seen = {start}
    order = [start]
    queue = deque([start])
    n = start[0]
    while queue:
        Q = from_canonical(queue.popleft())
        for k in range(n):
            cert = canonical_form_unchecked(_mutate_unchecked(Q, k))
            if cert not in seen:
                if np.abs(from_canonical(cert)).max() > 100:
                    raise ValueError("arrow multiplicities exceed 100: the class looks mutation-infinite; pass max_size")
                seen.add(cert)
                order.append(cert)
                queue.append(cert)
                if max_size is not None and len(order) >= max_size:
                    return tuple(order)
    return tuple(order)


DISK_CACHE_MIN_SIZE = 9
"""Classes on at least this many vertices are also cached on disk (they take seconds to minutes to enumerate)."""


def _disk_cache_path(kind: str, n: int) -> Path | None:
    """Where the class of ``kind`` on ``n`` vertices is cached on disk, or ``None`` (small class, or disabled).

    The folder is ``$ICML25_CACHE_DIR/quiver_mutation`` (default ``$XDG_CACHE_HOME/icml25`` or ``~/.cache/icml25``;
    ``ICML25_CACHE_DIR=off`` disables it); the file name carries a hash of this module's source, so any change to
    the enumeration starts a new cache.
    """
    root = os.environ.get("ICML25_CACHE_DIR")
    if n < DISK_CACHE_MIN_SIZE or root == "off":
        return None
    if not root:
        root = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "icml25")
    code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return Path(root) / "quiver_mutation" / f"{kind}_{n}_{code}.npy"


@lru_cache(maxsize=None)
def type_class_certificates(kind: str, n: int) -> tuple[bytes, ...]:
    """Canonical certificates of the whole mutation class of ``kind`` on ``n`` vertices (cached).

    For ``Atilde`` this is the union over all splits ``(p, q)``; it is empty where the type is
    not defined on ``n`` vertices (E off 6-8, Etilde off 7-9, D below 4, Dtilde below 5). Cached in memory, and
    on disk for ``n >= 9`` (see :func:`_disk_cache_path`): the 11-vertex classes take minutes of pure Python.
    """
    path = _disk_cache_path(kind, n)
    if path is not None and path.exists():
        try:
            arr = np.load(path)
        except (OSError, ValueError):
            arr = None  # unreadable: enumerate again and overwrite it
        if (arr is not None and arr.dtype == np.uint8 and arr.ndim == 2 and arr.shape[1] == 1 + n * n
                and (arr.size == 0 or np.all(arr[:, 0] == n))):
            return tuple(bytes(row) for row in arr)
    certs = _enumerate_type_class(kind, n)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
            np.save(tmp, np.frombuffer(b"".join(certs), dtype=np.uint8).reshape(len(certs), 1 + n * n))
            os.replace(tmp, path)  # atomic: concurrent jobs never read a half-written file
        except OSError:
            pass  # an unwritable cache only costs time
    return certs


def _enumerate_type_class(kind: str, n: int) -> tuple[bytes, ...]:
    if kind == "Atilde":
        certs: list[bytes] = []
        for split in atilde_splits(n):
            certs.extend(_mutation_class_certs(canonical_form(seed_quiver("Atilde", n, split))))
        return tuple(certs)
    try:
        seed = seed_quiver(kind, n)
    except ValueError:
        return ()
    return _mutation_class_certs(canonical_form(seed))


def sample_mutation_class(kind: str, n: int, count: int, rng: np.random.Generator, steps: int | None = None,
                          max_tries: int | None = None) -> list[np.ndarray]:
    """Distinct quivers of mutation type ``kind`` on ``n`` vertices, drawn by random mutation walks.

    For sizes whose classes are too large to enumerate (the paper's size-generalisation curve goes to n = 20).
    Each draw starts at the seed quiver (for ``Atilde`` a split drawn uniformly from :func:`atilde_splits`),
    mutates ``steps`` uniformly chosen vertices (default ``4 n``) and keeps the result if its isomorphism
    class is new. The draws follow the walk's law, not the uniform law on the class (a long walk on the
    mutation graph weights a quiver by its number of distinct neighbours); the paper does not say how it
    built its sets beyond n = 11.

    Returns:
        Up to ``count`` distinct quivers in canonical labelling (fewer if ``max_tries`` draws, default
        ``20 * count``, find no more: a class smaller than ``count``); empty where ``kind`` is not defined
        on ``n`` vertices.
    """
    for name, value in (("n", n), ("count", count)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if kind not in QUIVER_TYPES:
        raise ValueError(f"kind must be one of {QUIVER_TYPES}, got {kind!r}")
    steps = 4 * int(n) if steps is None else steps
    max_tries = 20 * int(count) if max_tries is None else max_tries
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    if kind == "Atilde":
        seeds = [seed_quiver("Atilde", int(n), split) for split in atilde_splits(int(n))] if n >= 2 else []
    else:
        try:
            seeds = [seed_quiver(kind, int(n))]
        except ValueError:
            seeds = []
    if not seeds:
        return []
    seen: dict[bytes, None] = {}
    for _ in range(max_tries):
        Q = seeds[int(rng.integers(len(seeds)))]
        for k in rng.integers(0, int(n), size=steps):
            Q = _mutate_unchecked(Q, int(k))
        seen.setdefault(canonical_form_unchecked(Q), None)
        if len(seen) >= count:
            break
    return [from_canonical(c) for c in seen]


def make_dataset(types: tuple[str, ...] = QUIVER_TYPES, sizes: tuple[int, ...] = (6, 7, 8)
                 ) -> tuple[list[np.ndarray], np.ndarray]:
    """Every quiver of the given mutation types and sizes, with its type label.

    Args:
        types: subset of :data:`QUIVER_TYPES`; the label is the index in :data:`QUIVER_TYPES`
            (so labels stay comparable across data sets with different ``types``).
        sizes: numbers of vertices; a type not defined at a size contributes nothing.

    Returns:
        ``(quivers, labels)``: list of exchange matrices (canonical labelling) and an int array.
    """
    bad = [t for t in types if t not in QUIVER_TYPES]
    if bad:
        raise ValueError(f"unknown quiver type {bad[0]!r}; valid: {QUIVER_TYPES}")
    bad_sizes = [n for n in sizes if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1]
    if bad_sizes:
        raise ValueError(f"sizes must be positive integers (numbers of vertices), got {bad_sizes[0]!r}")
    quivers, labels = [], []
    for n in sizes:
        for t in types:
            for cert in type_class_certificates(t, int(n)):
                quivers.append(from_canonical(cert))
                labels.append(QUIVER_TYPES.index(t))
    return quivers, np.asarray(labels, dtype=np.int64)


# ----------------------------------------------------------------------------- Buan-Vatne oracle
def is_mutation_type_A(B: np.ndarray) -> bool:
    """Buan-Vatne (2008) criterion: is the quiver mutation-equivalent to ``A_n``?

    A connected quiver is of mutation type A_n iff all arrows are simple, every (chordless) cycle
    of the underlying graph is an oriented 3-cycle, every vertex has at most 4 neighbours, a
    vertex with 4 neighbours has two arrows in each of two 3-cycles, and a vertex with 3
    neighbours has two of its arrows in one 3-cycle. A disconnected quiver returns ``False``.
    """
    B = check_exchange_matrix(B)
    n = B.shape[0]
    if np.abs(B).max(initial=0) > 1:
        return False
    adj = B != 0
    if n > 1 and not _connected(adj):
        return False
    n_edges = int(adj.sum()) // 2
    triangles = [(i, j, k) for i in range(n) for j in range(i + 1, n) for k in range(j + 1, n)
                 if adj[i, j] and adj[j, k] and adj[i, k]]
    # every cycle is a 3-cycle and 3-cycles share no edge  <=>  cycle rank == number of triangles
    # and edge-disjoint triangles (a chordless longer cycle or two triangles on one edge add rank)
    edge_use: dict[tuple[int, int], int] = {}
    for i, j, k in triangles:
        if not ((B[i, j] == B[j, k] == B[k, i]) and B[i, j] != 0):  # oriented: i->j->k->i or reverse
            return False
        for e in ((i, j), (j, k), (i, k)):
            edge_use[e] = edge_use.get(e, 0) + 1
    if any(c > 1 for c in edge_use.values()):
        return False
    if n_edges - n + 1 != len(triangles):
        return False
    for v in range(n):
        deg = int(adj[v].sum())
        in_tri = sum(1 for t in triangles if v in t)  # each triangle through v uses two of its arrows
        if deg > 4 or (deg == 4 and in_tri != 2) or (deg == 3 and in_tri != 1):
            return False
    return True


def _connected(adj: np.ndarray) -> bool:
    n = adj.shape[0]
    seen, stack = {0}, [0]
    while stack:
        v = stack.pop()
        for w in np.nonzero(adj[v])[0]:
            if int(w) not in seen:
                seen.add(int(w))
                stack.append(int(w))
    return len(seen) == n
