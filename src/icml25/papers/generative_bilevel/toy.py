"""Toy pre-trained model with exact ground truth: an isotropic Gaussian mixture and its closed-form VP score.

The tilt of a mixture  sum_k pi_k N(mu_k, s^2 I)  by a linear reward  exp(a.x / lambda)  is again a mixture:
weights ∝ pi_k exp(a.mu_k / lambda), means mu_k + s^2 a / lambda, same covariance. With the quadratic upper
reward r1(x) = -||x - c||^2 the upper objective F(lambda) = E_{p_lambda}[r1] is therefore exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from icml25.papers.generative_bilevel.entropy_tuning import VPSchedule


@dataclass(frozen=True)
class GaussianMixture:
    """Isotropic mixture sum_k weights_k N(means_k, std^2 I)."""

    means: np.ndarray
    """(K, d) component means."""
    std: float
    """Common component standard deviation."""
    weights: np.ndarray
    """(K,) mixture weights summing to one."""

    def __post_init__(self) -> None:
        m, w = np.asarray(self.means, float), np.asarray(self.weights, float)
        if m.ndim != 2 or w.shape != (m.shape[0],):
            raise ValueError(f"means must be (K, d) and weights (K,), got {m.shape} and {w.shape}")
        if not (self.std > 0) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError(f"need std > 0 and weights >= 0 summing to 1, got std={self.std}, sum={w.sum()}")

    @property
    def dim(self) -> int:
        return int(np.shape(self.means)[1])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n i.i.d. samples, shape (n, d)."""
        k = rng.choice(len(self.weights), size=n, p=self.weights)
        return self.means[k] + self.std * rng.standard_normal((n, self.dim))

    def score(self, schedule: VPSchedule = VPSchedule()):
        """``score(x, t)``: grad_x log p_t(x) of the VP-diffused mixture (torch, differentiable in x)."""
        mu = torch.as_tensor(self.means, dtype=torch.float64)
        logw = torch.log(torch.as_tensor(self.weights, dtype=torch.float64))
        s2 = self.std**2

        def score_fn(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            mu_x, logw_x = mu.to(x.device), logw.to(x.device)  # no-ops on the CPU
            abar = schedule.alpha_bar(t)[:, None, None]  # (n, 1, 1)
            var = abar * s2 + 1 - abar
            diff = torch.sqrt(abar) * mu_x[None] - x[:, None, :]  # (n, K, d)
            logp = logw_x[None] - 0.5 * (diff**2).sum(-1) / var[..., 0] - 0.5 * x.shape[1] * torch.log(var[..., 0])
            resp = torch.softmax(logp, 1)
            return (resp[..., None] * diff / var).sum(1)

        return score_fn

    def linear_tilt(self, a: np.ndarray, lam: float) -> "GaussianMixture":
        """The exact tilt p ∝ p exp(a.x / lam): a mixture with shifted means and reweighted components."""
        a = np.asarray(a, float)
        logw = np.log(self.weights) + self.means @ a / lam
        w = np.exp(logw - logw.max())
        return GaussianMixture(self.means + self.std**2 * a / lam, self.std, w / w.sum())

    def expected_neg_sq_dist(self, c: np.ndarray) -> float:
        """E[-||x - c||^2] in closed form."""
        d = ((self.means - np.asarray(c, float)) ** 2).sum(1) + self.dim * self.std**2
        return float(-(self.weights * d).sum())


def ring_mixture(n_modes: int = 8, radius: float = 2.0, std: float = 0.5) -> GaussianMixture:
    """Equal-weight mixture of ``n_modes`` Gaussians on a circle of ``radius`` (the toy pre-trained model)."""
    if n_modes < 1 or radius < 0:
        raise ValueError(f"need n_modes >= 1 and radius >= 0, got {n_modes}, {radius}")
    th = 2 * np.pi * np.arange(n_modes) / n_modes
    return GaussianMixture(radius * np.stack([np.cos(th), np.sin(th)], 1), std, np.full(n_modes, 1.0 / n_modes))


def tilted_upper_value(model: GaussianMixture, a, c, lam) -> np.ndarray:
    """Exact F(lambda) = E_{p_lambda}[-||x - c||^2] with p_lambda ∝ p_pre exp(a.x/lambda), for each lambda."""
    lams = np.atleast_1d(np.asarray(lam, float))
    if np.any(~(lams > 0)):
        raise ValueError(f"lambda must be positive, got {lams.min()}")
    return np.array([model.linear_tilt(a, lam).expected_neg_sq_dist(c) for lam in lams])
