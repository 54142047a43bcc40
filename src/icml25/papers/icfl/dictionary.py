"""ICFL: Iterative Codebook Feature Learning with control-based PCA whitening.

Donhauser, Ulicna, Moran, Ravuri, Kenyon-Dean, Eastwood & Hartford, "Towards scientific discovery
with dictionary learning: extracting biological concepts from microscopy foundation models",
ICML 2025 (arXiv 2412.16247).

Read top to bottom:

1. :class:`ControlWhitener`: ``T(x) = W_pca (x - mu_c)`` fitted on *control* samples, then every
   sample rescaled to unit norm. Variance shared with the controls (a nuisance) is shrunk.
2. :func:`batched_omp`: the ICFL encoder. ``J`` rounds; each picks the ``L`` dictionary columns most
   aligned with the residual, fits them by least squares and subtracts their fit.
3. :class:`ICFL`: decoder-only dictionary learning. Codes come from :func:`batched_omp` under
   ``torch.no_grad``; the decoder ``W_dec, b_pre`` minimises ``||x - W_dec z - b_pre||^2`` (Eq. 4) by Adam,
   with random resets of near-duplicate columns and, as in the paper, no unit-norm constraint. Its settings
   as an experiment sets them: :class:`ICFLConfig`.
4. :class:`TopKSAE`: the TopK sparse autoencoder baseline (Gao et al., 2024) with the AuxK loss.
5. :func:`selectivity` and :func:`dictionary_recovery`: the evaluation measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from icml25.common.checks import check_ranges

Selection = Literal["signed", "abs"]
Refit = Literal["round", "support"]


# ----------------------------------------------------------------------------- input checks
def _as_matrix(X, name: str = "X") -> torch.Tensor:
    """A finite 2-D float32 tensor (copying NumPy input); raises ValueError otherwise."""
    t = torch.as_tensor(np.asarray(X) if not isinstance(X, torch.Tensor) else X).float()
    if t.ndim != 2 or t.shape[0] < 1 or t.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty 2-D array (n_samples, n_dims), got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


def _to_tensor(X: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """A tensor on ``device`` holding a validated NumPy array (copied when read-only)."""
    return torch.from_numpy(np.require(X, requirements=("C", "W"))).to(device)


def _check_device(device) -> torch.device:
    """``torch.device(device)``, with a ValueError (not torch's RuntimeError) for a malformed name."""
    try:
        return torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from None


def _float32_only_tags(tags):
    """Estimator tags of a float32 transformer: outputs are float32 whatever the input's float type."""
    tags.transformer_tags.preserves_dtype = ["float32"]
    return tags


# ----------------------------------------------------------------------------- 1. whitening
class ControlWhitener(TransformerMixin, BaseEstimator):
    """PCA whitening fitted on control samples, then centring and unit-norm rescaling (a scikit-learn transformer).

    ``transform(x) = n(W_pca (x - mu_c))`` where ``mu_c`` and ``Sigma_c = V diag(lam) V^T`` are the mean
    and covariance of the controls, ``W_pca = diag(lam + eps)^(-1/2) V^T`` and ``n(v) = v / ||v||``.
    Controls are mapped to mean 0 and (up to ``eps``) identity covariance before the rescaling, so
    directions along which controls already vary a lot (e.g. the cell cycle) are down-weighted.
    The paper applies ``T`` before the normalisation; so do we.

    Inputs are NumPy arrays (or anything ``np.asarray`` takes, CPU tensors included) of shape
    (n_samples, d); they are read as float32, the moments are computed in float64 and every output is a
    float32 NumPy array.

    Args:
        eps: added to the eigenvalues before inverting (guards near-singular covariances).
        whiten: apply ``W_pca`` (False: only centre on the control mean).
        center: subtract the control mean (ignored when ``whiten``; whitening always centres).
        normalize: rescale every transformed sample to unit Euclidean norm.

    Attributes (after ``fit``, float64 NumPy arrays): ``mean_`` (d,), ``eigenvalues_`` (d,) in decreasing
    order, ``components_`` (d, d) with the principal directions as rows, ``whitening_matrix_`` (d, d)
    ``= W_pca``; ``n_features_in_``.
    """

    def __init__(self, eps: float = 1e-6, whiten: bool = True, center: bool = True, normalize: bool = True):
        self.eps = eps
        self.whiten = whiten
        self.center = center
        self.normalize = normalize

    def __sklearn_tags__(self):
        return _float32_only_tags(super().__sklearn_tags__())

    def fit(self, X_control, y=None) -> "ControlWhitener":
        """Estimate ``mu_c`` and ``W_pca`` from control samples of shape (n, d); needs n >= 2. ``y`` is ignored."""
        if isinstance(self.eps, bool) or not (isinstance(self.eps, (int, float, np.floating)) and self.eps >= 0
                                              and math.isfinite(self.eps)):
            raise ValueError(f"eps must be a finite number >= 0, got {self.eps!r}")
        X = validate_data(self, X_control, dtype=np.float32)
        if X.shape[0] < 2:
            raise ValueError(f"X_control needs at least 2 samples, got n_samples={X.shape[0]}")
        Xc = torch.from_numpy(X.astype(np.float64))
        cov = torch.cov(Xc.T).reshape(Xc.shape[1], Xc.shape[1])
        lam, V = torch.linalg.eigh(cov)
        lam = lam.clamp_min(0.0)
        if self.whiten and float(lam.min()) + self.eps <= 0:
            raise ValueError("the control covariance is singular and eps=0: set eps > 0")
        eigenvalues = lam.flip(0)
        components = V.flip(1).T  # rows: principal directions, largest variance first
        self.mean_ = Xc.mean(0).numpy()
        self.eigenvalues_ = eigenvalues.numpy()
        self.components_ = components.numpy()
        self.whitening_matrix_ = (components / torch.sqrt(eigenvalues + self.eps)[:, None]).numpy()
        return self

    def _check(self, X) -> torch.Tensor:
        check_is_fitted(self, "mean_", msg="this %(name)s is not fitted yet: call fit(X_control) first")
        return torch.from_numpy(validate_data(self, X, reset=False, dtype=np.float32).astype(np.float64))

    def transform_directions(self, V) -> np.ndarray:
        """Apply only the linear part (``W_pca`` or the identity) to direction vectors, rows of V (n, d).

        Use it to map ground-truth dictionary atoms into the transformed space (no centring, no
        rescaling: a direction has no offset). Returns a float32 array of shape (n, d).
        """
        t = self._check(V)
        out = t @ torch.from_numpy(self.whitening_matrix_).T if self.whiten else t
        return out.float().numpy()

    def transform(self, X) -> np.ndarray:
        """Whitened (or centred), unit-norm samples: a float32 array of shape (n, d)."""
        t = self._check(X)
        if self.whiten or self.center:
            t = t - torch.from_numpy(self.mean_)
        if self.whiten:
            t = t @ torch.from_numpy(self.whitening_matrix_).T
        if self.normalize:
            t = t / t.norm(dim=1, keepdim=True).clamp_min(1e-12)
        return t.float().numpy()

    def fit_transform(self, X_control, y=None, X=None) -> np.ndarray:
        """Fit on the controls and transform ``X`` (the controls themselves when ``X`` is None).

        ``y`` is ignored (scikit-learn's signature). The older call form ``fit_transform(X_control, X)``
        still works: a 2-D second positional argument is taken as the samples ``X`` to transform.
        """
        if X is None and y is not None and np.asarray(y).ndim == 2:
            X = y
        self.fit(X_control)
        return self.transform(X_control if X is None else X)


# ----------------------------------------------------------------------------- 2. the encoder
def _least_squares(A: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Batched argmin_c ||r - A c||^2 (A: B x d x L, r: B x d) via the normal equations.

    A relative ridge of 1e-6 keeps duplicated columns solvable (it tends to the minimum-norm
    solution); rows whose Cholesky factorisation still fails fall back to ``torch.linalg.lstsq``.
    """
    At = A.transpose(1, 2)
    G = At @ A
    h = At @ r.unsqueeze(-1)
    ridge = 1e-6 * G.diagonal(dim1=1, dim2=2).mean(1).clamp_min(1e-30)
    G = G + ridge[:, None, None] * torch.eye(G.shape[-1], dtype=G.dtype, device=G.device)
    chol, info = torch.linalg.cholesky_ex(G)
    c = torch.cholesky_solve(h, chol).squeeze(-1)
    bad = info != 0
    if bad.any():
        c[bad] = torch.linalg.lstsq(A[bad], r[bad].unsqueeze(-1)).solution.squeeze(-1)
    return c


def _nonneg_least_squares(A: torch.Tensor, r: torch.Tensor, iters: int = 100) -> torch.Tensor:
    """Batched min_{c >= 0} ||r - A c||^2 by projected gradient from c = 0 (A: B x d x L, r: B x d)."""
    G = A.transpose(1, 2) @ A
    h = (A.transpose(1, 2) @ r.unsqueeze(-1)).squeeze(-1)
    step = 1.0 / torch.linalg.matrix_norm(G, ord=2).clamp_min(1e-12)
    c = torch.zeros_like(h)
    for _ in range(iters):
        c = (c - step[:, None] * ((G @ c.unsqueeze(-1)).squeeze(-1) - h)).clamp_min(0.0)
    return c


@torch.no_grad()
def batched_omp(X, W, b=None, J: int = 20, L: int = 5, selection: Selection = "signed",
                refit: Refit = "round", nonneg: bool = False) -> torch.Tensor:
    """ICFL's encoder: J rounds that each add the L best-aligned dictionary columns.

    ``r(1) = x - b``; for ``t = 1..J``: ``S_t`` = the ``L`` columns with the largest ``<W_m, r(t)>``,
    ``z(t) = argmin_c ||r(t) - W_{S_t} c||^2``, ``r(t+1) = r(t) - W z(t)``; the code is ``z = sum_t z(t)``,
    with at most ``J L`` nonzeros. Runs under ``torch.no_grad``: the encoder has no parameters.

    Args:
        X: samples, shape (B, d).
        W: dictionary, shape (d, M). Columns need not have unit norm (ICFL's do not), but the selection
            score ``<W_m, r>`` then favours longer columns.
        b: offset ``b_pre``, shape (d,), or None for zero.
        J: number of rounds.
        L: columns added per round (``L <= M``).
        selection: ``"signed"`` ranks columns by ``<W_m, r>`` (the paper's Algorithm 1, our default);
            ``"abs"`` by ``|<W_m, r>|`` (classic OMP).
        refit: ``"round"`` fits only the L new columns to the current residual (the update as written
            in the paper); ``"support"`` re-fits all columns chosen so far to ``x - b`` (orthogonal
            matching pursuit; with ``L = 1`` it is exactly OMP).
        nonneg: constrain each least-squares fit to nonnegative coefficients.

    Returns:
        Dense codes Z, shape (B, M), float32, on the device of ``X`` (``W`` and ``b`` are moved there).
    """
    X = _as_matrix(X, "X")
    W = _as_matrix(W, "W").to(X.device)
    d, M = W.shape
    if X.shape[1] != d:
        raise ValueError(f"X has {X.shape[1]} columns but the dictionary W has {d} rows")
    check_ranges("batched_omp", {"J": J, "L": L}, integer=True, positive=True)
    J, L = int(J), int(L)
    if L > M:
        raise ValueError(f"L={L} exceeds the number of dictionary columns M={M}")
    if selection not in ("signed", "abs"):
        raise ValueError(f"selection must be 'signed' or 'abs', got {selection!r}")
    if refit not in ("round", "support"):
        raise ValueError(f"refit must be 'round' or 'support', got {refit!r}")
    b = torch.zeros(d, device=X.device) if b is None else torch.as_tensor(b, device=X.device).float().reshape(-1)
    if b.shape[0] != d:
        raise ValueError(f"b must have {d} entries, got {b.shape[0]}")
    target = X - b
    r = target.clone()
    Z = torch.zeros(X.shape[0], M, device=X.device)
    Wt = W.T.contiguous()  # (M, d): row m is column m of W
    support = torch.empty(X.shape[0], 0, dtype=torch.long, device=X.device)
    for _ in range(J):
        scores = r @ W  # <W_m, r(t)> for every column, (B, M)
        if selection == "abs":
            scores = scores.abs()
        if refit == "support" and support.shape[1]:
            scores.scatter_(1, support, -math.inf)  # OMP never re-picks a column of its support
        S = scores.topk(L, dim=1).indices  # S_t, (B, L)
        if refit == "round":
            A = Wt[S].transpose(1, 2)  # W_{S_t}, (B, d, L)
            rhs = r
        else:
            support = torch.cat([support, S], dim=1)
            A = Wt[support].transpose(1, 2)
            rhs = target
        if nonneg:
            c = _nonneg_least_squares(A, rhs)
        else:
            c = _least_squares(A, rhs)
        if refit == "round":
            Z.scatter_add_(1, S, c)  # z = sum_t z(t)
            r = r - (A @ c.unsqueeze(-1)).squeeze(-1)  # r(t+1) = r(t) - W z(t)
        else:
            Z.zero_().scatter_(1, support, c)
            r = target - (A @ c.unsqueeze(-1)).squeeze(-1)
    return Z


# ----------------------------------------------------------------------------- 3. dictionary learning
def _default_linear_init(d: int, M: int, gen: torch.Generator) -> torch.Tensor:
    """PyTorch's default ``nn.Linear(M, d)`` weight init: U(-1/sqrt(M), 1/sqrt(M)), shape (d, M)."""
    bound = 1.0 / math.sqrt(M)
    return (torch.rand(d, M, generator=gen) * 2 - 1) * bound


def _unit_columns(W: torch.Tensor) -> torch.Tensor:
    return W / W.norm(dim=0, keepdim=True).clamp_min(1e-12)


@torch.no_grad()
def reset_duplicate_columns(W: torch.Tensor, cos_threshold: float = 0.9, generator: torch.Generator | None = None,
                            max_rounds: int = 10, keep_norm: bool = False) -> torch.Tensor:
    """Re-draw, uniformly on the unit sphere, one column of every pair with cosine > ``cos_threshold``.

    Edits ``W`` (shape (d, M)) in place and returns the boolean mask of re-drawn columns (on ``W``'s
    device). The later column of each offending pair is re-drawn; this repeats (at most ``max_rounds``
    times) until no pair exceeds the threshold. A re-drawn column is a unit vector, "a vector selected
    uniformly at random from the hypersphere" (the paper, Sec. 4); ``keep_norm=True`` rescales it to the
    norm of the column it replaces. The fresh directions are drawn on the generator's device (the CPU by
    default), so a seed gives the same columns wherever ``W`` lives.
    """
    if not isinstance(W, torch.Tensor) or W.ndim != 2:
        raise TypeError(f"W must be a 2-D torch tensor (d, M), got {type(W).__name__}")
    if not 0 < cos_threshold <= 1:
        raise ValueError(f"cos_threshold must be in (0, 1], got {cos_threshold!r}")
    redrawn = torch.zeros(W.shape[1], dtype=torch.bool, device=W.device)
    for _ in range(max_rounds):
        Wn = _unit_columns(W)
        C = torch.triu(Wn.T @ Wn, diagonal=1)
        bad = (C > cos_threshold).any(dim=0)  # column j duplicates some earlier column i < j
        if not bad.any():
            break
        draw_on = generator.device if generator is not None else "cpu"
        fresh = torch.randn(W.shape[0], int(bad.sum()), generator=generator, device=draw_on).to(W.device)
        scale = W[:, bad].norm(dim=0, keepdim=True).clamp_min(1e-12) if keep_norm else 1.0
        W[:, bad] = _unit_columns(fresh) * scale
        redrawn |= bad
    return redrawn


class _DictionaryLearner(TransformerMixin, BaseEstimator):
    """Shared parts of ICFL and TopKSAE: validation, minibatching, dead-feature bookkeeping.

    Both are scikit-learn transformers: ``fit(X)`` learns a dictionary of ``n_features`` columns from
    samples X (n, d) (NumPy, or anything ``np.asarray`` takes; read as float32), ``transform(X)`` returns
    the sparse codes (n, M) and ``inverse_transform(Z)`` the reconstructions (n, d), all float32 NumPy
    arrays. Training runs on ``device``; the minibatch order and the initialisation come from a CPU
    generator seeded by ``seed``, so a seed gives the same draws on every device.
    """

    n_features: int | None
    lr: float
    batch_size: int
    n_steps: int
    dead_window: int
    dead_fraction: float
    seed: int
    device: str

    def __sklearn_tags__(self):
        return _float32_only_tags(super().__sklearn_tags__())

    def _validate(self) -> None:
        where = type(self).__name__
        counts = {"n_features": self.n_features, "batch_size": self.batch_size, "n_steps": self.n_steps,
                  "dead_window": self.dead_window}
        check_ranges(where, counts, integer=True, positive=True)  # n_features=None: the input's width
        check_ranges(where, {"lr": self.lr}, finite=True, positive=True)
        check_ranges(where, {"dead_fraction": self.dead_fraction}, nonnegative=True, at_most={"dead_fraction": 1})
        if self.dead_fraction == 1:
            raise ValueError(f"{where}.dead_fraction must be in [0, 1), got 1")
        _check_device(self.device)

    def _init(self, X) -> tuple[torch.Tensor, torch.Generator]:
        self._validate()
        X = _to_tensor(validate_data(self, X, dtype=np.float32), self.device)
        self.n_features_out_ = int(self.n_features) if self.n_features is not None else 8 * X.shape[1]
        gen = torch.Generator().manual_seed(int(self.seed))
        self._fire_counts = torch.zeros(self.n_features_out_, device=X.device)
        self._window_tokens = 0
        return X, gen

    def _batch(self, X: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """A minibatch of ``batch_size`` rows drawn with replacement (indices from the CPU generator)."""
        return X[torch.randint(X.shape[0], (self.batch_size,), generator=gen).to(X.device)]

    def _record(self, step: int, Z: torch.Tensor) -> None:
        if step >= self.n_steps - self.dead_window:  # the last dead_window steps
            self._fire_counts += (Z != 0).sum(0)
            self._window_tokens += Z.shape[0]

    def _finish(self) -> None:
        # Table 1: dead = "active in less than a fraction 1e-5 [dead_fraction] during the last 1000 [dead_window]
        # training steps"; a feature that never fires in the window is dead for any dead_fraction > 0
        self.fire_rate_ = (self._fire_counts / max(self._window_tokens, 1)).cpu().numpy()
        self.dead_features_ = (self._fire_counts < self.dead_fraction * self._window_tokens).cpu().numpy()

    def _check_fitted(self, X) -> torch.Tensor:
        check_is_fitted(self, "W_dec_", msg="this %(name)s is not fitted yet: call fit(X) first")
        return _to_tensor(validate_data(self, X, reset=False, dtype=np.float32), self.W_dec_.device)

    def inverse_transform(self, Z) -> np.ndarray:
        """Reconstruction ``W_dec z + b_pre`` of codes Z, shape (n, M) -> (n, d)."""
        check_is_fitted(self, "W_dec_", msg="this %(name)s is not fitted yet: call fit(X) first")
        Z = check_array(Z, dtype=np.float32, input_name="Z")
        if Z.shape[1] != self.n_features_out_:
            raise ValueError(f"Z has {Z.shape[1]} columns, the dictionary has {self.n_features_out_}")
        Z = _to_tensor(Z, self.W_dec_.device)
        return (Z @ self.W_dec_.T + self.b_pre_).cpu().numpy()

    @property
    def dictionary_(self) -> np.ndarray:
        """The learned dictionary ``W_dec``, shape (d, M)."""
        return self.W_dec_.cpu().numpy()


@dataclass
class ICFLConfig:
    """Settings of :class:`ICFL`, as an experiment sets them (``--set icfl.J=...``); defaults are the paper's run:
    M = 8192, J = 20 rounds of L = 5 columns (Algorithm 1), Adam at lr 5e-5 ("for all experiments", App. C), batches
    of 8192, 300k steps, duplicate resets every 100 steps, dead features over the last 1000 steps (Table 1).
    :meth:`ICFL.from_config` builds the estimator.
    """

    n_features: int = 8192
    """Learned dictionary size M (the paper's 8192)."""
    J: int = 20
    """Encoder rounds of Algorithm 1 (the paper's 20: J L = 100 nonzeros, at most)."""
    L: int = 5
    """Columns picked per round (the paper's 5)."""
    lr: float = 5e-5
    """Adam learning rate (the paper's, "LR 5e-5 for all experiments")."""
    batch_size: int = 8192
    """Samples per step (the paper's 8192)."""
    n_steps: int = 300_000
    """Optimisation steps (the paper's 300k)."""
    reset_every: int = 100
    """Steps between duplicate-column resets (the paper's 100)."""
    dead_window: int = 1000
    """Final steps over which dead features are counted (Table 1: 1000; dead = active in < 1e-5 of their tokens)."""
    normalize_columns: bool = False
    """Keep the decoder columns at unit norm (False: the paper's unconstrained columns)."""

    def __post_init__(self) -> None:
        # bounds: beyond these a job needs > ~100 GB or days (n x M codes, steps of a Python training loop);
        # the paper's MAE-G setting stays inside
        check_ranges(type(self).__name__, vars(self), integer=("n_features", "J", "L", "batch_size", "n_steps",
                                                             "reset_every", "dead_window"),
                     finite=("lr",),
                     positive=("n_features", "J", "L", "lr", "batch_size", "n_steps", "reset_every", "dead_window"),
                     at_most={"n_features": 10**5, "J": 10**4, "L": 10**5, "batch_size": 10**6, "n_steps": 10**8,
                              "reset_every": 10**8, "dead_window": 10**8})


class ICFL(_DictionaryLearner):
    """Iterative Codebook Feature Learning: decoder-only dictionary learning with batched-OMP codes.

    Each step draws a minibatch, encodes it with :func:`batched_omp` (no gradient), and takes an Adam
    step on ``mean_i ||x_i - W_dec z_i - b_pre||^2`` (Eq. 4) over ``W_dec`` and ``b_pre``. Every
    ``reset_every`` steps one column of every pair with cosine > ``reset_cos`` is re-drawn as a unit vector
    uniformly on the sphere. The columns are otherwise unconstrained (the paper states no unit-norm
    constraint; ``normalize_columns=True`` adds one). No auxiliary loss: any column aligned with some
    residual is selected and therefore trained, so dead features are rare.

    Args:
        n_features: dictionary size M; None gives ``8 d`` (the paper's 8192 features for 1024-dim tokens).
        J, L: rounds and columns per round of the encoder (at most ``J L`` nonzeros).
        lr: Adam learning rate (paper: 5e-5 over 300k steps; short runs need more).
        batch_size: samples per step (paper: 8192).
        n_steps: optimisation steps (paper: 300k).
        reset_every: steps between duplicate resets (paper: 100).
        reset_cos: cosine above which a pair of columns counts as duplicate (paper: 0.9).
        selection, refit, nonneg: encoder options, see :func:`batched_omp`.
        normalize_columns: renormalise the columns of ``W_dec`` to unit norm after every step (False, the
            default, follows the paper, which constrains the columns only through the resets).
        fit_bias: learn ``b_pre`` (initialised at 0); False keeps it at 0.
        dead_window: steps at the end of training over which firing is counted (paper: 1000).
        dead_fraction: a feature active in less than this fraction of those tokens is dead (paper: 1e-5).
        seed: seed of the initialisation and the minibatch order.
        device: where training and encoding run (``"cpu"``, ``"cuda"``...).

    Attributes (after fit): ``W_dec_`` (d, M) and ``b_pre_`` (d,) torch tensors on ``device``,
    ``dictionary_`` (``W_dec_`` as NumPy), ``n_features_out_`` (M), ``dead_features_`` (M,) bool,
    ``fire_rate_`` (M,), ``loss_curve_`` (list of per-step losses), ``n_resets_``, ``n_features_in_``.
    """

    def __init__(self, n_features: int | None = None, J: int = 20, L: int = 5, lr: float = 5e-5,
                 batch_size: int = 8192, n_steps: int = 1000, reset_every: int = 100, reset_cos: float = 0.9,
                 seed: int = 0, selection: Selection = "signed", refit: Refit = "round", nonneg: bool = False,
                 normalize_columns: bool = False, fit_bias: bool = True, dead_window: int = 1000,
                 dead_fraction: float = 1e-5, device: str = "cpu"):
        self.n_features = n_features
        self.J = J
        self.L = L
        self.lr = lr
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.reset_every = reset_every
        self.reset_cos = reset_cos
        self.seed = seed
        self.selection = selection
        self.refit = refit
        self.nonneg = nonneg
        self.normalize_columns = normalize_columns
        self.fit_bias = fit_bias
        self.dead_window = dead_window
        self.dead_fraction = dead_fraction
        self.device = device

    @classmethod
    def from_config(cls, config: ICFLConfig, **params) -> "ICFL":
        """The estimator with ``config``'s settings; ``params`` sets the others (``seed``, ``device``, ``J`` for
        another sparsity, ...)."""
        settings = {"n_features": config.n_features, "J": config.J, "L": config.L, "lr": config.lr,
                    "batch_size": config.batch_size, "n_steps": config.n_steps, "reset_every": config.reset_every,
                    "dead_window": config.dead_window, "normalize_columns": config.normalize_columns}
        return cls(**{**settings, **params})

    def _encode(self, X: torch.Tensor) -> torch.Tensor:
        return batched_omp(X, self.W_dec_, self.b_pre_, self.J, self.L, self.selection, self.refit, self.nonneg)

    def fit(self, X, y=None) -> "ICFL":
        """Learn ``W_dec`` and ``b_pre`` from samples X, shape (n, d); ``y`` is ignored."""
        check_ranges("ICFL", {"J": self.J, "L": self.L, "reset_every": self.reset_every}, integer=True, positive=True)
        X, gen = self._init(X)
        d, M = X.shape[1], self.n_features_out_
        if self.L > M:
            raise ValueError(f"L={self.L} exceeds n_features={M}")
        W = _default_linear_init(d, M, gen).to(X.device)
        if self.normalize_columns:
            W = _unit_columns(W)
        W = torch.nn.Parameter(W)
        b = torch.nn.Parameter(torch.zeros(d, device=X.device), requires_grad=self.fit_bias)
        opt = torch.optim.Adam([W, b] if self.fit_bias else [W], lr=self.lr)
        self.W_dec_, self.b_pre_ = W.data, b.data  # views: the encoder always sees the current decoder
        self.loss_curve_, self.n_resets_ = [], 0
        for step in range(self.n_steps):
            x = self._batch(X, gen)
            Z = self._encode(x)  # codes held fixed: no gradient through the encoder
            loss = ((x - Z @ W.T - b) ** 2).sum(1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                if self.normalize_columns:
                    W.data = _unit_columns(W.data)
                    self.W_dec_ = W.data
                if (step + 1) % self.reset_every == 0:
                    redrawn = reset_duplicate_columns(W.data, self.reset_cos, gen)
                    self.n_resets_ += int(redrawn.sum())
                    _zero_adam_columns(opt, W, redrawn)
            self._record(step, Z)
            self.loss_curve_.append(loss.item())
        self.W_dec_, self.b_pre_ = W.detach().clone(), b.detach().clone()
        self._finish()
        return self

    def transform(self, X) -> np.ndarray:
        """Sparse codes of X from :func:`batched_omp`, shape (n, M)."""
        return self._encode(self._check_fitted(X)).cpu().numpy()


def _zero_adam_columns(opt: torch.optim.Optimizer, W: torch.nn.Parameter, cols: torch.Tensor) -> None:
    """Forget Adam's moment estimates of re-drawn columns (they start afresh)."""
    if cols.any() and W in opt.state:
        for key in ("exp_avg", "exp_avg_sq"):
            opt.state[W][key][:, cols] = 0.0


def auxk_loss(e: torch.Tensor, pre: torch.Tensor, dead: torch.Tensor, W_dec: torch.Tensor, aux_k: int) -> torch.Tensor:
    """Gao et al.'s AuxK term (without its coefficient): ``mean_i ||e_i - W_dec z_aux,i||^2``.

    ``z_aux`` keeps, for every sample, the ``min(aux_k, #dead)`` largest ReLU'd pre-activations among the
    ``dead`` features (mask of shape (M,)); ``e`` (B, d) is the main reconstruction error, detached here,
    so the term trains only the dead features' encoder rows and decoder columns to explain what the
    live ones miss. Zero when no feature is dead.
    """
    n_dead = int(dead.sum())
    if aux_k <= 0 or n_dead == 0:
        return e.new_zeros(())
    vals, idx = pre.masked_fill(~dead, -math.inf).topk(min(aux_k, n_dead), dim=1)
    z_aux = torch.zeros_like(pre).scatter(1, idx, torch.relu(vals))
    return ((e.detach() - z_aux @ W_dec.T) ** 2).sum(1).mean()


class TopKSAE(_DictionaryLearner):
    """TopK sparse autoencoder baseline (Gao et al., 2024), with the same fit/transform API as ICFL.

    ``z = ReLU(TopK_k(W_enc (x - b_pre) + b_enc))``, ``x_hat = W_dec z + b_pre``; loss
    ``||x - x_hat||^2 + aux_coef ||e - W_dec z_aux||^2`` where ``e = x - x_hat`` and ``z_aux`` keeps the
    ``aux_k`` largest pre-activations among features that have not fired for ``aux_dead_steps``
    steps (the AuxK loss). ``W_enc`` is initialised as ``W_dec^T``; decoder columns are kept at unit norm.

    Args:
        n_features: dictionary size M; None gives ``8 d``.
        k: active features per sample.
        aux_k: features in the auxiliary reconstruction (0 turns the AuxK loss off).
        aux_coef: weight of the AuxK loss (Gao et al.: 1/32).
        aux_dead_steps: steps without firing after which a feature counts as dead for AuxK.
        lr, batch_size, n_steps, dead_window, dead_fraction, seed, device: as in :class:`ICFL`.

    Attributes (after fit): those of :class:`ICFL` (no ``n_resets_``) plus ``W_enc_`` (M, d) and
    ``b_enc_`` (M,).
    """

    def __init__(self, n_features: int | None = None, k: int = 100, aux_k: int = 512, aux_coef: float = 1 / 32,
                 aux_dead_steps: int = 50, lr: float = 5e-5, batch_size: int = 8192, n_steps: int = 1000,
                 seed: int = 0, dead_window: int = 1000, dead_fraction: float = 1e-5, device: str = "cpu"):
        self.n_features = n_features
        self.k = k
        self.aux_k = aux_k
        self.aux_coef = aux_coef
        self.aux_dead_steps = aux_dead_steps
        self.lr = lr
        self.batch_size = batch_size
        self.n_steps = n_steps
        self.seed = seed
        self.dead_window = dead_window
        self.dead_fraction = dead_fraction
        self.device = device

    def _pre(self, x: torch.Tensor, W_enc: torch.Tensor, b_enc: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (x - b) @ W_enc.T + b_enc

    def _topk(self, pre: torch.Tensor, k: int) -> torch.Tensor:
        vals, idx = pre.topk(k, dim=1)
        return torch.zeros_like(pre).scatter(1, idx, torch.relu(vals))

    def fit(self, X, y=None) -> "TopKSAE":
        """Train encoder and decoder on samples X, shape (n, d); ``y`` is ignored."""
        check_ranges("TopKSAE", {"k": self.k, "aux_dead_steps": self.aux_dead_steps}, integer=True, positive=True)
        check_ranges("TopKSAE", {"aux_k": self.aux_k}, integer=True, nonnegative=True)
        k = int(self.k)
        X, gen = self._init(X)
        d, M = X.shape[1], self.n_features_out_
        if k > M:
            raise ValueError(f"k={k} exceeds n_features={M}")
        W_dec = torch.nn.Parameter(_unit_columns(_default_linear_init(d, M, gen).to(X.device)))
        W_enc = torch.nn.Parameter(W_dec.data.T.clone())
        b_enc = torch.nn.Parameter(torch.zeros(M, device=X.device))
        b = torch.nn.Parameter(torch.zeros(d, device=X.device))
        opt = torch.optim.Adam([W_dec, W_enc, b_enc, b], lr=self.lr)
        since_fired = torch.zeros(M, device=X.device)
        self.loss_curve_ = []
        for step in range(self.n_steps):
            x = self._batch(X, gen)
            pre = self._pre(x, W_enc, b_enc, b)
            z = self._topk(pre, k)
            e = x - z @ W_dec.T - b
            loss = (e**2).sum(1).mean()
            dead = since_fired >= self.aux_dead_steps
            if self.aux_k and dead.any():
                loss = loss + self.aux_coef * auxk_loss(e, pre, dead, W_dec, int(self.aux_k))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                W_dec.data = _unit_columns(W_dec.data)
                fired = (z != 0).any(0)
                since_fired = torch.where(fired, torch.zeros_like(since_fired), since_fired + 1)
            self._record(step, z.detach())
            self.loss_curve_.append(loss.item())
        self.W_dec_, self.W_enc_ = W_dec.detach().clone(), W_enc.detach().clone()
        self.b_enc_, self.b_pre_ = b_enc.detach().clone(), b.detach().clone()
        self._finish()
        return self

    @torch.no_grad()
    def transform(self, X) -> np.ndarray:
        """TopK codes of X, shape (n, M)."""
        x = self._check_fitted(X)
        return self._topk(self._pre(x, self.W_enc_, self.b_enc_, self.b_pre_), int(self.k)).cpu().numpy()


# ----------------------------------------------------------------------------- 5. evaluation
def selectivity(Z, labels, active: Literal["nonzero", "positive"] = "nonzero") -> tuple[np.ndarray, np.ndarray]:
    """Per-feature, per-label selectivity of sparse codes.

    With ``p_i = P(feature active | label i)``: ``avg[m, i] = p_i - P(active | label != i)`` and
    ``max[m, i] = p_i - max_{j != i} p_j``. Both lie in [-1, 1]; 1 means the feature fires on every
    sample of label i and on no other.

    Args:
        Z: codes, shape (n, M).
        labels: one label per sample, shape (n,); at least two distinct labels.
        active: ``"nonzero"`` (z != 0, our default) or ``"positive"`` (z > 0).

    Returns:
        ``(avg, max)``, each of shape (M, C) with labels in ``np.unique(labels)`` order.
    """
    Z = np.asarray(Z)
    labels = np.asarray(labels)
    if Z.ndim != 2 or labels.ndim != 1 or labels.shape[0] != Z.shape[0]:
        raise ValueError(f"Z must be (n, M) and labels (n,), got {Z.shape} and {labels.shape}")
    if not np.all(np.isfinite(Z)):
        raise ValueError("Z contains NaN or infinite values")
    if active not in ("nonzero", "positive"):
        raise ValueError(f"active must be 'nonzero' or 'positive', got {active!r}")
    classes, y = np.unique(labels, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"selectivity needs at least two distinct labels, got {classes.size}")
    A = (Z != 0) if active == "nonzero" else (Z > 0)
    onehot = np.zeros((Z.shape[0], classes.size))
    onehot[np.arange(Z.shape[0]), y] = 1.0
    n_i = onehot.sum(0)  # (C,)
    counts = onehot.T @ A.astype(float)  # (C, M): active samples per label
    p = counts / n_i[:, None]
    p_rest = (counts.sum(0, keepdims=True) - counts) / (Z.shape[0] - n_i)[:, None]
    avg = p - p_rest
    top2 = np.sort(p, axis=0)[-2:]  # second largest, largest per feature (equal under a tie)
    best_other = np.where(p >= top2[1][None, :], top2[0][None, :], top2[1][None, :])  # max_{j != i} p_j
    mx = p - best_other
    return avg.T, mx.T


def dictionary_recovery(W, W_true, thr: float = 0.9, absolute: bool = False) -> float:
    """Fraction of true atoms matched by some learned column with cosine > ``thr``.

    Args:
        W: learned dictionary, shape (d, M) (columns are atoms).
        W_true: true dictionary, shape (d, K).
        thr: cosine threshold (paper-style 0.9).
        absolute: compare ``|cos|`` (sign-agnostic) instead of the signed cosine.

    Returns:
        The recovered fraction in [0, 1].
    """
    W = np.asarray(W, dtype=float)
    W_true = np.asarray(W_true, dtype=float)
    if W.ndim != 2 or W_true.ndim != 2 or W.shape[0] != W_true.shape[0]:
        raise ValueError(f"W (d, M) and W_true (d, K) need the same d, got {W.shape} and {W_true.shape}")
    if W.shape[1] < 1 or W_true.shape[1] < 1:
        raise ValueError(f"W and W_true need at least one column (atom), got {W.shape} and {W_true.shape}")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(W_true))):
        raise ValueError("W and W_true must be finite (no NaN or inf)")
    if not -1 <= thr <= 1:
        raise ValueError(f"thr must be in [-1, 1], got {thr!r}")
    Wn = W / np.maximum(np.linalg.norm(W, axis=0, keepdims=True), 1e-12)
    Tn = W_true / np.maximum(np.linalg.norm(W_true, axis=0, keepdims=True), 1e-12)
    C = Tn.T @ Wn
    if absolute:
        C = np.abs(C)
    return float((C.max(axis=1) > thr).mean())


def reconstruction_cosine(X, X_hat) -> float:
    """Mean cosine similarity between samples and their reconstructions (rows).

    Raises:
        ValueError: ``X`` and ``X_hat`` not 2-D of the same shape with at least one row, not finite, or
            with an all-zero row (a zero-norm row has no cosine).
    """
    X, X_hat = np.asarray(X, dtype=float), np.asarray(X_hat, dtype=float)
    if X.shape != X_hat.shape or X.ndim != 2:
        raise ValueError(f"X and X_hat must be 2-D of the same shape, got {X.shape} and {X_hat.shape}")
    if X.shape[0] < 1:
        raise ValueError("X and X_hat need at least one row")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(X_hat))):
        raise ValueError("X and X_hat must be finite (no NaN or inf)")
    norm, norm_hat = np.linalg.norm(X, axis=1), np.linalg.norm(X_hat, axis=1)
    for name, nrm in (("X", norm), ("X_hat", norm_hat)):
        zero = np.flatnonzero(nrm == 0)
        if zero.size:
            raise ValueError(f"{name} row {zero[0]} is all zeros ({zero.size} such rows): a zero-norm row has no "
                             f"cosine; every row of X and X_hat must be non-zero")
    num = (X * X_hat).sum(1)
    den = np.maximum(norm * norm_hat, 1e-12)
    return float((num / den).mean())
