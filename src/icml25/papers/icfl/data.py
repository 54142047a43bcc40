"""A synthetic "perturbation screen" standing in for microscopy foundation-model tokens.

Every sample, control or perturbed, carries a strong low-rank nuisance (the analogue of the cell
cycle or well position); perturbed samples add a sparse combination of ground-truth atoms, some of
them tied to the perturbation label. Without the control-shared nuisance, whitening from controls
would have nothing to remove and the comparison would be a misleading toy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PerturbationScreen:
    """Samples of the synthetic screen.

    Attributes:
        X_control: unperturbed samples, shape (n_control, d).
        X: perturbed samples, shape (n_perturbed, d).
        labels: perturbation label of each perturbed sample, shape (n_perturbed,), in 0..n_labels-1.
        codes: true sparse codes of the perturbed samples, shape (n_perturbed, n_atoms).
        D_true: true dictionary, unit-norm columns, shape (d, n_atoms); atoms
            ``l * atoms_per_label ... (l + 1) * atoms_per_label - 1`` belong to label l.
        nuisance_basis: orthonormal basis U of the nuisance subspace, shape (d, nuisance_rank).
        mean: the shared offset mu, shape (d,).
    """

    X_control: np.ndarray
    X: np.ndarray
    labels: np.ndarray
    codes: np.ndarray
    D_true: np.ndarray
    nuisance_basis: np.ndarray
    mean: np.ndarray


def perturbation_screen(n_control: int = 20_000, n_perturbed: int = 60_000, d: int = 64, n_atoms: int = 256,
                        n_labels: int = 32, atoms_per_label: int = 3, p_on: float = 0.8, n_background: int = 5,
                        nuisance_rank: int = 8, nuisance_std: float = 3.0, noise_std: float = 0.05,
                        seed: int = 0) -> PerturbationScreen:
    """Draw the synthetic perturbation screen.

    Controls: ``x = mu + U s + eps``. Perturbed with label l: ``x = mu + U s + D* z + eps`` where
    ``s ~ N(0, nuisance_std^2 I)``, ``eps ~ N(0, noise_std^2 I)``, the label's own ``atoms_per_label``
    atoms are each on with probability ``p_on``, ``n_background`` further atoms are drawn uniformly
    from the atoms that belong to no label, and every active magnitude is Exp(1).

    Args:
        n_control, n_perturbed: sample counts.
        d: ambient dimension.
        n_atoms: size of the true dictionary D* (random unit vectors).
        n_labels: perturbation labels (labels are assigned uniformly at random).
        atoms_per_label: atoms owned by each label; needs ``n_labels * atoms_per_label <= n_atoms``.
        p_on: probability that each of a label's atoms is active.
        n_background: label-independent active atoms per perturbed sample.
        nuisance_rank, nuisance_std: rank and per-direction std of the nuisance shared with controls.
        noise_std: isotropic noise std.
        seed: generator seed.

    Returns:
        PerturbationScreen.
    """
    for name, v in dict(n_control=n_control, n_perturbed=n_perturbed, d=d, n_atoms=n_atoms, n_labels=n_labels,
                        atoms_per_label=atoms_per_label).items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if n_labels * atoms_per_label > n_atoms:
        raise ValueError(f"n_labels * atoms_per_label = {n_labels * atoms_per_label} exceeds n_atoms = {n_atoms}")
    n_free = n_atoms - n_labels * atoms_per_label
    if not 0 <= n_background <= n_free:
        raise ValueError(f"n_background must be in [0, {n_free}] (atoms owned by no label), got {n_background!r}")
    if not 0 <= nuisance_rank < d:
        raise ValueError(f"nuisance_rank must be in [0, d), got {nuisance_rank!r}")
    if not 0 <= p_on <= 1:
        raise ValueError(f"p_on must be in [0, 1], got {p_on!r}")
    if nuisance_std < 0 or noise_std < 0:
        raise ValueError(f"nuisance_std and noise_std must be >= 0, got {nuisance_std!r}, {noise_std!r}")
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((d, n_atoms))
    D /= np.linalg.norm(D, axis=0, keepdims=True)
    U = np.linalg.qr(rng.standard_normal((d, max(nuisance_rank, 1))))[0][:, :nuisance_rank]
    mu = rng.standard_normal(d)

    def base(n: int) -> np.ndarray:
        nuisance = nuisance_std * rng.standard_normal((n, nuisance_rank)) @ U.T
        return mu + nuisance + noise_std * rng.standard_normal((n, d))

    labels = rng.integers(n_labels, size=n_perturbed)
    on = np.zeros((n_perturbed, n_atoms), dtype=bool)
    own = labels[:, None] * atoms_per_label + np.arange(atoms_per_label)[None, :]
    on[np.arange(n_perturbed)[:, None], own] = rng.random((n_perturbed, atoms_per_label)) < p_on
    if n_background:
        # n_background distinct free atoms per sample: the smallest keys of a random permutation
        keys = rng.random((n_perturbed, n_free))
        picks = np.argpartition(keys, n_background - 1, axis=1)[:, :n_background] + n_labels * atoms_per_label
        on[np.arange(n_perturbed)[:, None], picks] = True
    codes = on * rng.exponential(1.0, size=(n_perturbed, n_atoms))
    X = base(n_perturbed) + codes @ D.T
    return PerturbationScreen(X_control=base(n_control).astype(np.float32), X=X.astype(np.float32), labels=labels,
                              codes=codes.astype(np.float32), D_true=D, nuisance_basis=U, mean=mu)
