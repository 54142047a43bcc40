"""The MF-LAL model: one SELFIES VAE with a latent space per fidelity, a decoder and a sparse GP per fidelity.

As the official ``main.py`` has it (lower scores are better):

1. Tokens -> embedding (64) -> MLP encoder (512-512) -> (mu_0, logvar_0) in R^64.
2. Fidelity k+1's latent is a transform of fidelity k's: (mu_{k+1}, logvar_{k+1}) = MLP_k([mu_k, logvar_k]).
3. Each fidelity k has its own MLP decoder z_k -> token logits, and its own surrogate, a whitened sparse
   variational GP (:class:`SVGP`, 1,000 learnable inducing points in the latent space) whose kernel is
   ScaleKernel(Matern 5/2) on a deep feature map 64-512-256-32 (a deep kernel).
4. Loss at fidelity k on its rows: cross-entropy reconstruction + 0.0823 KL + 1.3247 (-ELBO of the SVGP on
   the labelled rows), with Adam (lr 1.15e-4).

The acquisition and the active-learning loop are in :mod:`icml25.papers.mf_lal.active_learning`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


def _mlp(widths: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _softplus_inv(x: float) -> float:
    return math.log(math.expm1(x))


# gpytorch's defaults: ``settings.variational_cholesky_jitter`` (added to K_ZZ and to k(x, x)) by the model's dtype,
# and ``psd_safe_cholesky``'s retries (jitter 1e-8 for float64 times 10^i, 3 tries) if the factorisation fails.
_VARIATIONAL_JITTER = {torch.float32: 1e-4, torch.float64: 1e-6}
_SAFE_CHOLESKY_JITTER, _SAFE_CHOLESKY_TRIES = 1e-8, 3


def _psd_safe_cholesky(a: torch.Tensor) -> torch.Tensor:
    """Lower Cholesky factor of ``a`` (float64); on failure retry with ``1e-8 * 10^i`` added (gpytorch's rule)."""
    chol, info = torch.linalg.cholesky_ex(a)
    if a.is_meta or not bool(info.any()):  # a meta tensor has no values to check
        return chol
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    for i in range(_SAFE_CHOLESKY_TRIES):
        chol, info = torch.linalg.cholesky_ex(a + _SAFE_CHOLESKY_JITTER * 10 ** i * eye)
        if not bool(info.any()):
            return chol
    raise torch.linalg.LinAlgError("K_ZZ is not positive definite even with jitter "
                                   f"{_SAFE_CHOLESKY_JITTER * 10 ** (_SAFE_CHOLESKY_TRIES - 1):g} added")


class SVGP(nn.Module):
    """Whitened sparse variational GP with a deep Matern-5/2 kernel and a Gaussian likelihood.

    ``f ~ GP(c, s * Matern52(g(z), g(z') / l))``, ``y = f + eps``, ``eps ~ N(0, noise)``, with inducing values
    ``u = f(Z) = L v`` (``L L^T = K_ZZ``) and ``q(v) = N(m, S S^T)`` (gpytorch's ``VariationalStrategy`` with a
    ``CholeskyVariationalDistribution``; initial values as gpytorch's: ``q(v) = N(0, I)``, ``s = l = noise =
    softplus(0)``).

    Numerics as gpytorch's ``VariationalStrategy``: the kernel is evaluated in the model's dtype, ``jitter`` (by
    default gpytorch's ``variational_cholesky_jitter``: 1e-4 for float32, 1e-6 for float64) is added to ``K_ZZ``
    and to ``k(x, x)``, and the Cholesky factor of ``K_ZZ`` and ``L^{-1} K_Zx`` are computed in float64 (with
    ``psd_safe_cholesky``'s retries) and cast back. Distances are computed directly (``torch.cdist`` without the
    ``|a|^2 + |b|^2 - 2 a.b`` shortcut, which loses the digits of small distances in float32 and whose rounding
    depends on the CPU's matmul kernel). A float32 factorisation with a 1e-6 jitter (our earlier code) amplifies
    rounding by up to ``1 / sqrt(jitter)`` when two inducing points come close.

    Training is still sensitive at large step sizes, in exact arithmetic too: the whitened ``v`` of two nearby
    inducing points is tied to their order in ``L``, so the ELBO is steep where they meet (in a 1-D input they
    must cross), and large steps of the deep feature map move the kernel a lot. With Adam at lr 0.05 (435 times
    the code's 1.15e-4) the ELBO can lose several nats in one step, so where a short run ends depends on rounding;
    at lr 0.01 the test's run ends at the same ELBO (to ~0.01) on every CPU kernel.

    Args:
        in_dim: dimension of the inputs (the latent dimension).
        n_inducing: number of inducing points (learnable, drawn N(0, I) at the start as in the code).
        feature_widths: hidden and output widths of the deep feature map ``g``; ``()`` means ``g`` = identity.
        jitter: added to the diagonal of ``K_ZZ`` and of ``k(x, x)``; ``None`` (default) = gpytorch's default for
            the parameters' dtype at the time of the call (1e-4 float32, 1e-6 float64).
    """

    def __init__(self, in_dim: int, n_inducing: int, feature_widths: Sequence[int] = (512, 256, 32),
                 jitter: float | None = None):
        super().__init__()
        if in_dim < 1 or n_inducing < 1:
            raise ValueError(f"in_dim and n_inducing must be >= 1, got {in_dim} and {n_inducing}")
        if jitter is not None and not (math.isfinite(jitter) and jitter >= 0):
            raise ValueError(f"jitter must be a finite float >= 0 or None, got {jitter!r}")
        self.features = _mlp((in_dim, *feature_widths)) if feature_widths else nn.Identity()
        self.inducing = nn.Parameter(torch.randn(n_inducing, in_dim))
        self.q_mean = nn.Parameter(torch.zeros(n_inducing))
        self.q_chol = nn.Parameter(torch.eye(n_inducing))
        self.constant = nn.Parameter(torch.zeros(()))
        self.raw_outputscale = nn.Parameter(torch.zeros(()))
        self.raw_lengthscale = nn.Parameter(torch.zeros(()))
        self.raw_noise = nn.Parameter(torch.zeros(()))
        self.jitter = jitter

    @property
    def outputscale(self) -> torch.Tensor:
        return F.softplus(self.raw_outputscale)

    @property
    def lengthscale(self) -> torch.Tensor:
        return F.softplus(self.raw_lengthscale)

    @property
    def noise(self) -> torch.Tensor:
        return F.softplus(self.raw_noise) + 1e-4  # gpytorch's GreaterThan(1e-4) noise constraint

    def _jitter(self) -> float:
        if self.jitter is not None:
            return float(self.jitter)
        return _VARIATIONAL_JITTER.get(self.inducing.dtype, 1e-4)

    def kernel(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``s * Matern52(|g(a) - g(b)| / l)``, shape ``(len(a), len(b))``."""
        ga, gb = self.features(a), self.features(b)
        r = torch.cdist(ga, gb, compute_mode="donot_use_mm_for_euclid_dist").clamp_min(1e-12) / self.lengthscale
        r5 = math.sqrt(5.0) * r
        return self.outputscale * (1 + r5 + r5 ** 2 / 3) * torch.exp(-r5)

    def _chol_q(self) -> torch.Tensor:
        return torch.tril(self.q_chol)

    def _interp(self, z: torch.Tensor) -> torch.Tensor:
        """``L^{-1} K_Zz`` (M, n) with ``L L^T = K_ZZ + jitter I``, factorised and solved in float64, in float64."""
        m = self.inducing.shape[0]
        kzz = self.kernel(self.inducing, self.inducing).double()
        kzz = kzz + self._jitter() * torch.eye(m, dtype=torch.float64, device=kzz.device)
        chol = _psd_safe_cholesky(kzz)
        return torch.linalg.solve_triangular(chol, self.kernel(self.inducing, z).double(), upper=False)

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Latent posterior mean and variance of ``f(z)`` under q, each shape ``(n,)``.

        ``A = L^{-1} K_Zz``; mean ``c + A^T m``; variance ``k(z, z) + jitter - |A|^2 + |S^T A|^2`` (per column).
        """
        if z.ndim != 2 or z.shape[1] != self.inducing.shape[1]:
            raise ValueError(f"z must have shape (n, {self.inducing.shape[1]}), got {tuple(z.shape)}")
        a = self._interp(z).to(z.dtype)
        mean = self.constant + a.T @ self.q_mean
        kxx = self.outputscale.expand(z.shape[0]) + self._jitter()  # k(z, z) of a stationary kernel
        var = kxx - (a ** 2).sum(0) + ((self._chol_q().T @ a) ** 2).sum(0)
        return mean, var.clamp_min(1e-10)

    def kl(self) -> torch.Tensor:
        """KL(q(v) || N(0, I)) = (tr(S S^T) + m^T m - M - log det(S S^T)) / 2."""
        s = self._chol_q()
        return 0.5 * ((s ** 2).sum() + (self.q_mean ** 2).sum() - s.shape[0]
                      - 2 * torch.log(torch.diagonal(s).abs().clamp_min(1e-30)).sum())

    def elbo(self, z: torch.Tensor, y: torch.Tensor, num_data: int) -> torch.Tensor:
        """gpytorch's ``VariationalELBO`` per datum: ``mean_i E_q[log N(y_i; f_i, noise)] - KL / num_data``."""
        mean, var = self(z)
        noise = self.noise
        ell = -0.5 * torch.log(2 * math.pi * noise) - ((y - mean) ** 2 + var) / (2 * noise)
        return ell.mean() - self.kl() / num_data

    @torch.no_grad()
    def set_optimal_variational(self, z: torch.Tensor, y: torch.Tensor) -> None:
        """Set q(v) to the optimum of the ELBO for data (z, y) at the current kernel (Titsias 2009):
        ``Sigma_u = K_ZZ (K_ZZ + K_Zz K_zZ / noise)^{-1} K_ZZ``, ``mu_u = Sigma_u K_ZZ^{-1} K_Zz (y - c) / noise``,
        whitened by ``L^{-1}``. With ``Z = z`` the predictive is then the exact GP posterior. Computed in float64."""
        m = self.inducing.shape[0]
        b = self._interp(z)  # L^{-1} K_Zz, float64
        noise = float(self.noise)
        eye = torch.eye(m, dtype=torch.float64, device=b.device)
        # in whitened coordinates: S S^T = (I + B B^T / noise)^{-1}, m = S S^T B (y - c) / noise
        prec = eye + b @ b.T / noise
        cov = torch.cholesky_inverse(torch.linalg.cholesky(prec))
        resid = (y - self.constant).double()
        self.q_mean.copy_(cov @ b @ resid / noise)
        self.q_chol.copy_(torch.linalg.cholesky(cov + 1e-10 * eye))


class MFLAL(nn.Module):
    """The multi-fidelity latent model of MF-LAL (official ``main.py``: class ``MFLAL``).

    Args:
        vocab_size: SELFIES vocabulary size (index 0 = padding).
        max_len: tokens per molecule (code: 60).
        n_levels: number of fidelities (code: 4).
        latent_dim: latent dimension of every level (code: 64).
        embedding_dim: token embedding size (code: 64).
        hidden: width of the encoder, decoders and transforms (code: 512).
        kernel_widths: the deep kernel's feature map after the latent (code: 512, 256, 32).
        n_inducing: inducing points per SVGP (code: 1,000).
    """

    def __init__(self, vocab_size: int, max_len: int = 60, n_levels: int = 4, latent_dim: int = 64,
                 embedding_dim: int = 64, hidden: int = 512, kernel_widths: Sequence[int] = (512, 256, 32),
                 n_inducing: int = 1000):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("max_len", max_len), ("n_levels", n_levels),
                        ("latent_dim", latent_dim), ("embedding_dim", embedding_dim), ("hidden", hidden),
                        ("n_inducing", n_inducing)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2 (padding + one token), got {vocab_size}")
        self.vocab_size, self.max_len, self.n_levels, self.latent_dim = vocab_size, max_len, n_levels, latent_dim
        self.embedder = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.encoder = _mlp((embedding_dim * max_len, hidden, hidden, 2 * latent_dim))
        self.transforms = nn.ModuleList(_mlp((2 * latent_dim, hidden, hidden, 2 * latent_dim))
                                        for _ in range(n_levels - 1))
        self.decoders = nn.ModuleList(_mlp((latent_dim, hidden, hidden, vocab_size * max_len))
                                      for _ in range(n_levels))
        self.surrogates = nn.ModuleList(SVGP(latent_dim, n_inducing, kernel_widths) for _ in range(n_levels))

    def _sample(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, log_var = h[:, :self.latent_dim], h[:, self.latent_dim:]
        if self.training:  # reparameterisation; the mean in eval mode, as the code
            return mu + torch.randn_like(mu) * torch.exp(0.5 * log_var), mu, log_var
        return mu, mu, log_var

    def _check_tokens(self, x: torch.Tensor) -> None:
        if x.dtype not in (torch.int64, torch.int32) or x.ndim != 2 or x.shape[1] != self.max_len:
            raise ValueError(f"x must be integer tokens of shape (n, {self.max_len}), got {x.dtype} {tuple(x.shape)}")

    def _check_level(self, level: int) -> None:
        if not 0 <= level < self.n_levels:
            raise ValueError(f"level must be in 0..{self.n_levels - 1}, got {level}")

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Level-0 latent ``(z, mu, log_var)`` of token sequences ``x`` (n, max_len)."""
        self._check_tokens(x)
        return self._sample(self.encoder(self.embedder(x).flatten(1)))

    def latent(self, x: torch.Tensor, level: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(z, mu, log_var)`` at ``level``: encode, then chain the transforms 1..level on (mu, log_var)."""
        self._check_level(level)
        z, mu, log_var = self.encode(x)
        for k in range(level):
            z, mu, log_var = self._sample(self.transforms[k](torch.cat([mu, log_var], 1)))
        return z, mu, log_var

    def decode(self, z: torch.Tensor, level: int) -> torch.Tensor:
        """Token logits ``(n, max_len, vocab_size)`` of latent points ``z`` (n, latent_dim) at ``level``."""
        self._check_level(level)
        if z.ndim != 2 or z.shape[1] != self.latent_dim:
            raise ValueError(f"z must have shape (n, {self.latent_dim}), got {tuple(z.shape)}")
        return self.decoders[level](z).view(len(z), self.max_len, self.vocab_size)

    def forward(self, x: torch.Tensor, level: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(logits, z, mu, log_var)`` of ``x`` at ``level``."""
        z, mu, log_var = self.latent(x, level)
        return self.decode(z, level), z, mu, log_var


def level_loss(model: MFLAL, x: torch.Tensor, y: torch.Tensor, level: int, num_data: int,
               kld_weight: float = 0.08232923258333508, mll_weight: float = 1.3247001146843511,
               shared_latent: bool = False, train_vae: bool = True) -> torch.Tensor:
    """The code's ``loss_function`` at ``level``: CE + kld_weight * KL + mll_weight * (-ELBO).

    ``y`` holds one score per row, NaN for unlabelled rows (the code marks them with 0); the ELBO uses the
    labelled rows only. KL is summed and divided by ``n * max_len``, as in the code.

    ``shared_latent=True`` (the fixed-latent baseline) uses the level-0 latent and decoder for every level;
    ``train_vae=False`` detaches the latent and drops the reconstruction and KL terms, so only the surrogate
    learns.
    """
    if y.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},), got {tuple(y.shape)}")
    z, mu, log_var = model.latent(x, 0 if shared_latent else level)
    mask = torch.isfinite(y)
    loss = torch.zeros((), dtype=z.dtype)
    if train_vae:
        logits = model.decode(z, 0 if shared_latent else level)
        recon = F.cross_entropy(logits.flatten(0, 1), x.flatten())
        kld = -0.5 * torch.sum(1 + log_var - mu ** 2 - log_var.exp()) / (x.shape[0] * x.shape[1])
        loss = recon + kld_weight * kld
    else:
        z = z.detach()
    if mask.any() and mll_weight > 0:
        loss = loss - mll_weight * model.surrogates[level].elbo(z[mask], y[mask], num_data)
    return loss
