"""Cellular Potts model (CPM): lattice helpers, the Graner-Glazier cell-sorting Hamiltonian and samplers.

A state is a cell-id lattice ``sigma`` of shape ``(h, w)`` (or a batch ``(B, h, w)``), with 0 the
medium and 1..C the cells, plus ``cell_types`` of shape ``(C + 1,)`` giving the type of every id
(``cell_types[0] == 0``, cell types are 1..n_types). Boundaries are periodic and the neighbourhood
is 2nd-order Moore (8 neighbours), as in Minartz et al. (arXiv 2502.02129).
"""

from __future__ import annotations

import operator

import numpy as np

MOORE = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
"""The 8 neighbour offsets (di, dj) of the Moore neighbourhood."""
HALF_MOORE = ((0, 1), (1, -1), (1, 0), (1, 1))
"""Four offsets that visit every unordered Moore pair exactly once."""


def _check_lattice(sigma: np.ndarray, cell_types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sigma = np.asarray(sigma)
    cell_types = np.asarray(cell_types)
    if sigma.ndim not in (2, 3):
        raise ValueError(f"sigma must have shape (h, w) or (B, h, w), got {sigma.shape}")
    if cell_types.ndim != 1 or cell_types.size < 1 or cell_types[0] != 0:
        raise ValueError(f"cell_types must be 1-D with cell_types[0] == 0 (medium), got {cell_types}")
    if sigma.dtype.kind not in "biu":
        raise TypeError(f"sigma must hold integer cell ids, got dtype {sigma.dtype}")
    if sigma.size and sigma.min() < 0:
        raise ValueError(f"sigma ids must be >= 0 (0 = medium), got {sigma.min()}")
    if sigma.size and sigma.max() >= cell_types.size:
        raise ValueError(f"cell_types must give a type for every id in sigma (length >= {sigma.max() + 1}, as sigma "
                         f"holds id {sigma.max()}), got length {cell_types.size}")
    return sigma.astype(np.int64), cell_types.astype(np.int64)


def _check_cell_types(cell_types: np.ndarray, k: int) -> None:
    """Every entry of ``cell_types`` must be a type id that indexes a ``(k, k)`` contact matrix J (0..k-1)."""
    if cell_types.size and (cell_types.min() < 0 or cell_types.max() >= k):
        bad = cell_types[(cell_types < 0) | (cell_types >= k)]
        raise ValueError(f"cell_types holds type {bad[0]} outside J of size {k} (types must be in [0, {k - 1}])")


def random_init(h: int, w: int, n_cells: int, types, radius: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random initial lattice: ``n_cells`` discs of ``radius`` around distinct random centres.

    Each pixel within ``radius`` (periodic distance) of a centre joins its nearest centre's cell, so
    every cell is non-empty. Args: ``types`` is a sequence of ``n_cells`` type ids (>= 1).
    Returns ``(sigma (h, w) int64, cell_types (n_cells + 1,) int64)``.
    """
    types = np.asarray(types, dtype=np.int64)
    if h < 3 or w < 3:
        raise ValueError(f"lattice must be at least 3x3, got {h}x{w}")
    if n_cells < 1 or n_cells > h * w:
        raise ValueError(f"n_cells must be in [1, {h * w}], got {n_cells}")
    if types.shape != (n_cells,) or types.min() < 1:
        raise ValueError(f"types must hold n_cells={n_cells} type ids >= 1, got {types}")
    if not np.isfinite(radius) or radius < 0:
        raise ValueError(f"radius must be a finite number >= 0, got {radius}")
    rng = np.random.default_rng(seed)
    centres = rng.choice(h * w, size=n_cells, replace=False)
    ci, cj = centres // w, centres % w
    ii, jj = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    di = np.abs(ii[None] - ci[:, None, None])
    dj = np.abs(jj[None] - cj[:, None, None])
    dist = np.hypot(np.minimum(di, h - di), np.minimum(dj, w - dj))
    nearest = dist.argmin(0)
    sigma = np.where(dist.min(0) <= radius, nearest + 1, 0)
    sigma[ci, cj] = np.arange(1, n_cells + 1)
    return sigma.astype(np.int64), np.concatenate([[0], types])


def volumes(sigma: np.ndarray, n_cells: int) -> np.ndarray:
    """Pixel count of every id 0..n_cells; shape ``(..., n_cells + 1)``, per frame for a batch ``(..., h, w)``.

    ``sigma`` must hold integer ids in ``[0, n_cells]`` (an id past ``n_cells`` would be counted in the next frame).
    """
    sigma = np.asarray(sigma)
    if isinstance(n_cells, (bool, np.bool_)):
        raise TypeError(f"n_cells must be an integer, got {n_cells!r}")
    try:
        n_cells = operator.index(n_cells)
    except TypeError:
        raise TypeError(f"n_cells must be an integer, got {n_cells!r}") from None
    if n_cells < 0:
        raise ValueError(f"n_cells must be >= 0, got {n_cells}")
    if sigma.ndim < 2:
        raise ValueError(f"sigma must have shape (..., h, w), got {sigma.shape}")
    if sigma.dtype.kind not in "biu":
        raise TypeError(f"sigma must hold integer cell ids, got dtype {sigma.dtype}")
    if sigma.size and (sigma.min() < 0 or sigma.max() > n_cells):
        raise ValueError(f"sigma ids must lie in [0, n_cells={n_cells}], got [{sigma.min()}, {sigma.max()}]")
    return _volumes(sigma, n_cells)


def _volumes(sigma: np.ndarray, n_cells: int) -> np.ndarray:
    """:func:`volumes` without input checks, for lattices already validated (ids in [0, n_cells])."""
    sigma = np.asarray(sigma, dtype=np.int64)
    flat = sigma.reshape(-1, sigma.shape[-2] * sigma.shape[-1])
    offs = (np.arange(flat.shape[0]) * (n_cells + 1))[:, None]
    v = np.bincount((flat + offs).ravel(), minlength=flat.shape[0] * (n_cells + 1))
    return v.reshape(sigma.shape[:-2] + (n_cells + 1,))


def contact_matrix(sigma: np.ndarray, cell_types: np.ndarray) -> np.ndarray:
    """Type-pair contact counts ``M[..., a, b]``: unordered Moore pairs with different ids and types {a, b}.

    Symmetric; every pair is counted once (an a-b pair with a != b adds 1 to both M[a,b] and M[b,a]).
    """
    sigma, cell_types = _check_lattice(sigma, cell_types)
    k = int(cell_types.max()) + 1
    tau = cell_types[sigma]
    batch = sigma.shape[:-2]
    flat_b = int(np.prod(batch)) if batch else 1
    out = np.zeros((flat_b, k * k), dtype=np.int64)
    for di, dj in HALF_MOORE:
        s2 = np.roll(sigma, (-di, -dj), axis=(-2, -1))
        t2 = np.roll(tau, (-di, -dj), axis=(-2, -1))
        diff = (sigma != s2).reshape(flat_b, -1)
        pair = (tau * k + t2).reshape(flat_b, -1)
        for b in range(flat_b):
            out[b] += np.bincount(pair[b][diff[b]], minlength=k * k)
    m = out.reshape(flat_b, k, k)
    m = m + np.swapaxes(m, 1, 2) - np.einsum("bii->bi", m)[:, :, None] * np.eye(k, dtype=np.int64)
    return m.reshape(batch + (k, k))


def sorting_index(sigma: np.ndarray, cell_types: np.ndarray) -> np.ndarray:
    """Fraction of like-type contacts among cell-cell contacts (medium excluded); shape ``sigma.shape[:-2]``."""
    m = contact_matrix(sigma, cell_types)[..., 1:, 1:]
    like = np.einsum("...ii->...", m)
    total = np.triu(np.ones(m.shape[-2:], dtype=bool))
    return like / np.maximum((m * total).sum((-2, -1)), 1)


def cell_shape_stats(sigma: np.ndarray, n_cells: int) -> dict[str, np.ndarray]:
    """Per-cell volume, perimeter/sqrt(area) compactness and number of 4-connected components.

    Perimeter counts von Neumann edges to another id; components ignore periodic wrap. Shapes ``(n_cells,)``.
    """
    from scipy import ndimage

    sigma = np.asarray(sigma)
    if sigma.ndim != 2:
        raise ValueError(f"sigma must be one (h, w) lattice, got {sigma.shape}")
    vol = volumes(sigma, n_cells)[1:]  # also checks the dtype and that ids lie in [0, n_cells]
    sigma = sigma.astype(np.int64)
    per = np.zeros(n_cells + 1)
    for di, dj in ((0, 1), (1, 0)):
        s2 = np.roll(sigma, (-di, -dj), axis=(0, 1))
        d = sigma != s2
        per += np.bincount(sigma[d], minlength=n_cells + 1) + np.bincount(s2[d], minlength=n_cells + 1)
    comps = np.array([ndimage.label(sigma == c)[1] for c in range(1, n_cells + 1)])
    return {"volume": vol, "compactness": per[1:] / np.sqrt(np.maximum(vol, 1)), "components": comps}


class CellsortHamiltonian:
    """Graner-Glazier cell-sorting Hamiltonian (float64, exact).

    ``H = 1/4 * sum_{Moore pairs p~q} J[tau_p, tau_q] 1[sigma_p != sigma_q] + sum_{c>=1} lam[tau_c] (V_c - V*[tau_c])^2``

    Args:
        J: symmetric ``(n_types + 1, n_types + 1)`` contact energies with ``J[0, 0] == 0``.
        lam: volume stiffness, a scalar or one value per type (index 0, the medium, is ignored).
        v_star: target volume, a scalar or one value per type (index 0 ignored).
    """

    def __init__(self, J, lam, v_star):
        J = np.asarray(J, dtype=np.float64)
        if J.ndim != 2 or J.shape[0] != J.shape[1] or J.shape[0] < 2:
            raise ValueError(f"J must be a square (n_types+1) matrix, got shape {J.shape}")
        if not np.all(np.isfinite(J)):
            raise ValueError(f"J must be finite, got {J}")
        if not np.allclose(J, J.T):
            raise ValueError("J must be symmetric")
        if J[0, 0] != 0:
            raise ValueError(f"J[0, 0] (medium-medium) must be 0, got {J[0, 0]}")
        k = J.shape[0]
        self.J = J
        self.lam = np.broadcast_to(np.asarray(lam, dtype=np.float64), (k,)).copy()
        self.v_star = np.broadcast_to(np.asarray(v_star, dtype=np.float64), (k,)).copy()
        if not np.all(np.isfinite(self.lam[1:]) & (self.lam[1:] >= 0)):
            raise ValueError(f"lam must be finite and >= 0 (index 0 ignored), got {lam}")
        if not np.all(np.isfinite(self.v_star[1:])):
            raise ValueError(f"v_star must be finite (index 0 ignored), got {v_star}")

    def energy(self, sigma: np.ndarray, cell_types: np.ndarray) -> np.ndarray:
        """Total energy of a lattice or a batch; shape ``sigma.shape[:-2]``."""
        sigma, cell_types = _check_lattice(sigma, cell_types)
        _check_cell_types(cell_types, self.J.shape[0])
        m = contact_matrix(sigma, cell_types)
        contact = 0.25 * (np.triu(np.ones_like(self.J)) * self.J * m).sum((-2, -1))
        v = _volumes(sigma, cell_types.size - 1)[..., 1:]
        t = cell_types[1:]
        return contact + (self.lam[t] * (v - self.v_star[t]) ** 2).sum(-1)

    def delta(self, sigma: np.ndarray, cell_types: np.ndarray, i: int, j: int, new_id: int,
              vol: np.ndarray | None = None) -> float:
        """Exact local energy change of setting ``sigma[i, j] = new_id`` on one ``(h, w)`` lattice.

        ``vol`` (optional) are the current volumes, to avoid recounting. Returns ``inf`` if the move makes
        a cell vanish.
        """
        _check_cell_types(np.asarray(cell_types), self.J.shape[0])
        return self._delta(sigma, cell_types, i, j, new_id, vol)

    def _delta(self, sigma: np.ndarray, cell_types: np.ndarray, i: int, j: int, new_id: int,
               vol: np.ndarray | None = None) -> float:
        """:meth:`delta` without the cell-type check (hoisted out of :func:`metropolis_cpm`'s flip loop)."""
        h, w = sigma.shape
        old = int(sigma[i, j])
        if old == new_id:
            return 0.0
        if vol is None:
            vol = volumes(sigma, cell_types.size - 1)
        if old != 0 and vol[old] <= 1:
            return float("inf")
        t_old, t_new = cell_types[old], cell_types[new_id]
        dh = 0.0
        for di, dj in MOORE:
            q = int(sigma[(i + di) % h, (j + dj) % w])
            tq = cell_types[q]
            dh += self.J[t_new, tq] * (q != new_id) - self.J[t_old, tq] * (q != old)
        dh *= 0.25
        # (V+1-V*)^2 - (V-V*)^2 = 2(V-V*)+1 ; (V-1-V*)^2 - (V-V*)^2 = -2(V-V*)+1
        if new_id != 0:
            dh += self.lam[t_new] * (2 * (vol[new_id] - self.v_star[t_new]) + 1)
        if old != 0:
            dh += self.lam[t_old] * (-2 * (vol[old] - self.v_star[t_old]) + 1)
        return float(dh)


PROPOSALS = ("push", "pull")
"""CPM proposals: ``"push"`` (the official code: a uniformly drawn boundary site's id is copied into a Moore
neighbour drawn with weight 1 if its id differs from the site's, 1e-6 otherwise) and ``"pull"`` (a uniformly
drawn site takes the id of a uniformly drawn Moore neighbour)."""


def _is_boundary(sigma: np.ndarray, i: int, j: int) -> bool:
    h, w = sigma.shape
    s = sigma[i, j]
    return any(sigma[(i + di) % h, (j + dj) % w] != s for di, dj in MOORE)


def metropolis_cpm(H, sigma0: np.ndarray, cell_types: np.ndarray, n_flips: int, T: float = 1.0,
                   rng: np.random.Generator | None = None, proposal: str = "push") -> np.ndarray:
    """Exact sequential CPM Metropolis kinetics on one lattice.

    Each flip proposes one copy and accepts it with ``min(1, exp(-dH/T))``; moves that make a cell vanish
    are rejected. ``proposal="push"`` (the official CPMKernel, default): a uniformly drawn boundary site (a site
    with a differently labelled Moore neighbour) copies its id into a neighbour drawn with weight 1 if that
    neighbour's id differs (1e-6 otherwise). ``"pull"``: a uniformly drawn site takes the id of a uniformly drawn
    Moore neighbour. Neither proposal is symmetric, so the kernel's stationary law is not exactly exp(-H/T)/Z.
    ``H`` is a :class:`CellsortHamiltonian` (local ``delta``) or any object with ``energy(sigma, cell_types)``
    (then two full evaluations per flip). Returns the final lattice.
    """
    sigma, cell_types = _check_lattice(sigma0, cell_types)
    if sigma.ndim != 2:
        raise ValueError(f"metropolis_cpm runs one (h, w) lattice, got {sigma.shape}")
    if not (n_flips >= 0):  # also rejects NaN
        raise ValueError(f"n_flips must be an integer >= 0, got {n_flips}")
    try:
        if isinstance(n_flips, (bool, np.bool_)):
            raise TypeError
        operator.index(n_flips)
    except TypeError:
        raise TypeError(f"n_flips must be an integer, got {n_flips!r}") from None
    if not (T > 0):  # also rejects NaN
        raise ValueError(f"T must be > 0, got {T}")
    if proposal not in PROPOSALS:
        raise ValueError(f"proposal must be one of {PROPOSALS}, got {proposal!r}")
    local = hasattr(H, "delta")
    delta = H.delta if local else None
    if isinstance(H, CellsortHamiltonian):
        _check_cell_types(cell_types, H.J.shape[0])  # once per call, not per flip
        if type(H).delta is CellsortHamiltonian.delta:
            delta = H._delta
    rng = np.random.default_rng() if rng is None else rng
    sigma = sigma.copy()
    h, w = sigma.shape
    vol = _volumes(sigma, cell_types.size - 1)
    if proposal == "push" and not any(_is_boundary(sigma, i, j) for i in range(h) for j in range(w)):
        return sigma  # one id fills the lattice: no move exists
    us = rng.random(n_flips)
    for u in us:
        if proposal == "push":
            while True:  # rejection sampling = a uniform draw among the boundary sites
                si, sj = divmod(int(rng.integers(h * w)), w)
                if _is_boundary(sigma, si, sj):
                    break
            src = sigma[si, sj]
            wts = np.array([(sigma[(si + di) % h, (sj + dj) % w] != src) + 1e-6 for di, dj in MOORE])
            di, dj = MOORE[int(rng.choice(8, p=wts / wts.sum()))]
            i, j, new = (si + di) % h, (sj + dj) % w, int(src)  # the neighbour takes the site's id
        else:
            i, j = divmod(int(rng.integers(h * w)), w)
            di, dj = MOORE[int(rng.integers(8))]
            new = int(sigma[(i + di) % h, (j + dj) % w])  # the site takes the neighbour's id
        old = int(sigma[i, j])
        if new == old:
            continue
        if local:
            dh = delta(sigma, cell_types, i, j, new, vol)
        else:
            if old != 0 and vol[old] <= 1:
                continue
            prop = sigma.copy()
            prop[i, j] = new
            dh = float(H.energy(prop, cell_types) - H.energy(sigma, cell_types))
        if dh <= 0 or u < np.exp(-dh / T):
            sigma[i, j] = new
            vol[old] -= 1
            vol[new] += 1
    return sigma


def parallel_cellsort_cpm(H: CellsortHamiltonian, sigma0: np.ndarray, cell_types: np.ndarray, n_steps: int,
                          n_parallel: int, T: float = 1.0, rng: np.random.Generator | None = None) -> np.ndarray:
    """The official parallel kernel (Algorithm 2) with the symbolic H's exact local dH, on a batch ``(B, h, w)``.

    Each step, every chain draws ``n_parallel`` distinct boundary sites uniformly (non-boundary sites only when
    fewer boundary sites exist; their moves change nothing), and each copies its id into a Moore neighbour drawn
    as in :func:`metropolis_cpm`'s ``"push"`` proposal. Every proposal gets its exact local dH w.r.t. the current
    state and its own Metropolis test; accepted flips are applied together (the first drawn wins when two write
    the same site). A cell never vanishes: a single flip that would empty it has dH = inf (as in the official
    symbolic dH), and all losses of a cell whose accepted losses together would empty it are rejected. This is
    the kernel of the official Exp 0 (data generation with 100 flips per step, and training). ``n_steps`` steps
    of ``n_parallel`` attempts are ``n_steps * n_parallel / (h * w)`` Monte-Carlo sweeps.
    """
    sigma, cell_types = _check_lattice(sigma0, cell_types)
    squeeze = sigma.ndim == 2
    sigma = sigma[None].copy() if squeeze else sigma.copy()
    b, h, w = sigma.shape
    if not (n_steps >= 0) or not (1 <= n_parallel <= h * w):  # also rejects NaN
        raise ValueError(f"need n_steps >= 0 and 1 <= n_parallel <= h * w = {h * w}; got n_steps={n_steps}, "
                         f"n_parallel={n_parallel}")
    if not (T > 0):  # also rejects NaN
        raise ValueError(f"T must be > 0, got {T}")
    _check_cell_types(cell_types, H.J.shape[0])
    rng = np.random.default_rng() if rng is None else rng
    n_ids = cell_types.size
    lam, vs = H.lam, H.v_star
    Jf, k = H.J.ravel(), H.J.shape[0]
    moves = np.array(MOORE)
    ii, jj = np.divmod(np.arange(h * w), w)
    nbr = ((ii[:, None] + moves[:, 0]) % h) * w + (jj[:, None] + moves[:, 1]) % w  # (h*w, 8) flat neighbours
    bi = np.arange(b)[:, None]
    n_cand = min(6 * n_parallel, 4 * h * w)
    flat = sigma.reshape(b, -1)  # a view: writes to flat are writes to sigma
    vol = _volumes(sigma, n_ids - 1)
    for _ in range(int(n_steps)):
        # n_parallel distinct boundary sites, uniformly: candidates drawn with replacement, duplicates and
        # non-boundary candidates sorted last (a non-boundary pick only when too few boundary ones were drawn)
        cand = np.sort(rng.integers(h * w, size=(b, n_cand)), axis=1)
        cnb = np.take_along_axis(flat, nbr[cand].reshape(b, -1), 1).reshape(b, n_cand, 8)
        csrc = np.take_along_axis(flat, cand, 1)
        boundary = (cnb != csrc[..., None]).any(-1)
        dup = np.zeros_like(boundary)
        dup[:, 1:] = cand[:, 1:] == cand[:, :-1]
        keys = rng.random(cand.shape) + 2 * dup + ~boundary
        pos = np.argpartition(keys, n_parallel - 1, axis=1)[:, :n_parallel]
        site = np.take_along_axis(cand, pos, 1)
        src = np.take_along_axis(csrc, pos, 1)
        nb = cnb[bi, pos]
        cw = np.cumsum((nb != src[..., None]) + 1e-6, axis=-1)
        pick = (cw < rng.random(src.shape)[..., None] * cw[..., -1:]).sum(-1)
        tgt = nbr[site, pick]  # the neighbour that takes the site's id
        old, new = np.take_along_axis(flat, tgt, 1), src
        tnb = np.take_along_axis(flat, nbr[tgt].reshape(b, -1), 1).reshape(b, n_parallel, 8)
        t_old, t_new, t_nb = cell_types[old], cell_types[new], cell_types[tnb]
        dh = 0.25 * (Jf[t_new[..., None] * k + t_nb] * (tnb != new[..., None])
                     - Jf[t_old[..., None] * k + t_nb] * (tnb != old[..., None])).sum(-1)
        v_new, v_old = vol[bi, new], vol[bi, old]
        dh += np.where(new != 0, lam[t_new] * (2 * (v_new - vs[t_new]) + 1), 0.0)
        dh += np.where(old != 0, lam[t_old] * (-2 * (v_old - vs[t_old]) + 1), 0.0)
        dh = np.where((old != 0) & (v_old <= 1), np.inf, dh)
        with np.errstate(over="ignore"):
            acc = (new != old) & (rng.random(old.shape) < np.exp(-np.maximum(dh, 0) / T))
        tid = (bi * (h * w) + tgt).ravel()
        first = np.zeros(tid.size, dtype=bool)
        _, idx = np.unique(np.where(acc.ravel(), tid, -1 - np.arange(tid.size)), return_index=True)
        first[idx] = True
        acc &= first.reshape(acc.shape)
        rows = np.broadcast_to(bi, old.shape)[acc]
        n_lost = np.zeros((b, n_ids), dtype=np.int64)
        np.add.at(n_lost, (rows, old[acc]), 1)
        n_lost[:, 0] = 0
        acc &= ~((old != 0) & (v_old - n_lost[bi, old] < 1))
        rows = np.broadcast_to(bi, old.shape)[acc]
        flat[rows, tgt[acc]] = new[acc]
        np.add.at(vol, (rows, old[acc]), -1)
        np.add.at(vol, (rows, new[acc]), 1)
    return sigma[0] if squeeze else sigma


def checkerboard_cpm(H: CellsortHamiltonian, sigma0: np.ndarray, cell_types: np.ndarray, n_sweeps: float,
                     T: float = 1.0, rng: np.random.Generator | None = None) -> np.ndarray:
    """Vectorised approximate CPM kinetics for the symbolic Hamiltonian on a batch ``(B, h, w)``.

    One sweep visits the 9 sublattices ``(i mod 3, j mod 3)`` in random order; all sites of a sublattice
    propose a copy from a random neighbour at once. Their contact terms do not interact (no two sites
    are neighbours), so each local dH is exact given the volumes at the start of the sublattice pass;
    only the volume coupling between simultaneous flips of one cell is approximated. A cell never
    vanishes (all losses of a cell that would reach 0 are rejected). ``h`` and ``w`` must be multiples of 3.
    ``n_sweeps`` may be fractional (whole sublattice passes, ``round(9 * n_sweeps)``).
    """
    sigma, cell_types = _check_lattice(sigma0, cell_types)
    squeeze = sigma.ndim == 2
    sigma = sigma[None].copy() if squeeze else sigma.copy()
    b, h, w = sigma.shape
    if h % 3 or w % 3:
        raise ValueError(f"checkerboard_cpm needs h and w divisible by 3, got {h}x{w}")
    if not (T > 0):  # also rejects NaN
        raise ValueError(f"T must be > 0, got {T}")
    if not (0 <= n_sweeps < np.inf):  # also rejects NaN
        raise ValueError(f"n_sweeps must be finite and >= 0, got {n_sweeps}")
    _check_cell_types(cell_types, H.J.shape[0])
    rng = np.random.default_rng() if rng is None else rng
    n_ids = cell_types.size
    lam, vs = H.lam, H.v_star
    Jf, k = H.J.ravel(), H.J.shape[0]
    bidx = np.arange(b)[:, None, None]
    n_pass = int(round(9 * n_sweeps))
    for p in range(n_pass):
        if p % 9 == 0:
            order = rng.permutation(9)
        a, c = divmod(int(order[p % 9]), 3)
        vol = _volumes(sigma, n_ids - 1)
        padded = np.pad(sigma, ((0, 0), (1, 1), (1, 1)), mode="wrap")
        old = sigma[:, a::3, c::3]
        nbs = np.stack([padded[:, 1 + a + di::3, 1 + c + dj::3][:, :h // 3, :w // 3] for di, dj in MOORE], 0)
        pick = rng.integers(8, size=old.shape)
        new = np.take_along_axis(nbs, pick[None], 0)[0]
        t_old, t_new, t_nb = cell_types[old], cell_types[new], cell_types[nbs]
        dh = 0.25 * (Jf[t_new[None] * k + t_nb] * (nbs != new[None])
                     - Jf[t_old[None] * k + t_nb] * (nbs != old[None])).sum(0)
        v_new, v_old = vol[bidx, new], vol[bidx, old]
        dh += np.where(new != 0, lam[t_new] * (2 * (v_new - vs[t_new]) + 1), 0.0)
        dh += np.where(old != 0, lam[t_old] * (-2 * (v_old - vs[t_old]) + 1), 0.0)
        with np.errstate(over="ignore"):
            acc = (new != old) & (rng.random(old.shape) < np.exp(-np.maximum(dh, 0) / T))
        # no vanishing: reject every loss of a cell whose accepted losses would empty it
        lost = np.where(acc & (old != 0), old, 0)
        n_lost = _volumes(lost, n_ids - 1)
        n_lost[:, 0] = 0
        acc &= ~((old != 0) & (vol[bidx, old] - n_lost[bidx, old] < 1))
        sigma[:, a::3, c::3] = np.where(acc, new, old)
    return sigma[0] if squeeze else sigma
