"""The three learned pieces of VLGPO: a sequence VAE, a flow-matching prior in its latent space, and a CNN
fitness predictor that accepts soft (probability) inputs.

Shapes: sequences are ``(n, L)`` token arrays (or strings, see :func:`encode_sequences`); one-hot / soft
inputs are ``(n, L, n_tokens)``; latents are ``(n, latent_dim)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.papers.vlgpo.landscape import encode_sequences


def _tokens_tensor(x: Sequence[str] | np.ndarray | torch.Tensor, n_tokens: int, seq_len: int) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = encode_sequences(x, n_tokens)
    if arr.shape[1] != seq_len:
        raise ValueError(f"sequences have length {arr.shape[1]}, the model expects {seq_len}")
    return torch.as_tensor(arr, dtype=torch.long)


def _check_fit_args(n_steps: int, batch_size: int, lr: float) -> None:
    if n_steps < 0:
        raise ValueError(f"n_steps must be >= 0, got {n_steps}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")


# ------------------------------------------------------------------------------------------------------ VAE
class SeqVAE(nn.Module):
    """VAE over one-hot sequences: encoder E(x) -> (mu, logvar), decoder D(z) -> per-position logits.

    Encoder and decoder are two-layer MLPs on the flattened one-hot sequence (the official model uses 1-D
    convolutions; an MLP is cheaper on a CPU at L = 28).

    Args:
        seq_len: sequence length L.
        n_tokens: alphabet size.
        latent_dim: dimension of z.
        hidden: width of the hidden layers.
        beta: weight of the KL term in the training loss (cross-entropy + beta * KL).
    """

    def __init__(self, seq_len: int, n_tokens: int = 20, latent_dim: int = 32, hidden: int = 256, beta: float = 0.01):
        super().__init__()
        for name, v in (("seq_len", seq_len), ("n_tokens", n_tokens), ("latent_dim", latent_dim), ("hidden", hidden)):
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if beta < 0:
            raise ValueError(f"beta must be >= 0, got {beta}")
        self.seq_len, self.n_tokens, self.latent_dim, self.beta = seq_len, n_tokens, latent_dim, beta
        self.enc = nn.Sequential(nn.Linear(seq_len * n_tokens, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent_dim))
        self.dec = nn.Sequential(nn.Linear(latent_dim, hidden), nn.ReLU(), nn.Linear(hidden, seq_len * n_tokens))

    def encode(self, x: Sequence[str] | np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and log-variance, each ``(n, latent_dim)``, of token sequences."""
        onehot = F.one_hot(_tokens_tensor(x, self.n_tokens, self.seq_len), self.n_tokens).float()
        mu, logvar = self.enc(onehot.flatten(1)).chunk(2, dim=-1)
        return mu, logvar

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Per-position logits ``(n, L, n_tokens)`` of latents ``(n, latent_dim)``."""
        if z.ndim != 2 or z.shape[1] != self.latent_dim:
            raise ValueError(f"z must have shape (n, {self.latent_dim}), got {tuple(z.shape)}")
        return self.dec(z).view(z.shape[0], self.seq_len, self.n_tokens)

    def embed(self, x: Sequence[str] | np.ndarray) -> torch.Tensor:
        """E(x): the posterior mean, used as the data points of the flow prior."""
        with torch.no_grad():
            return self.encode(x)[0]

    def decode_tokens(self, z: torch.Tensor) -> np.ndarray:
        """Argmax decoding of latents to an ``(n, L)`` token array."""
        with torch.no_grad():
            return self.decode(z).argmax(-1).cpu().numpy()

    def fit(self, x: Sequence[str] | np.ndarray, n_steps: int = 2000, batch_size: int = 128, lr: float = 2e-3,
            seed: int = 0) -> "SeqVAE":
        """Train on sequences with the ELBO (reconstruction cross-entropy + beta * KL). Returns self."""
        _check_fit_args(n_steps, batch_size, lr)
        tokens = _tokens_tensor(x, self.n_tokens, self.seq_len)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        self.train()
        for _ in range(n_steps):
            xb = tokens[torch.randint(len(tokens), (batch_size,), generator=gen)]
            mu, logvar = self.encode(xb)
            z = mu + torch.randn(mu.shape, generator=gen) * (0.5 * logvar).exp()
            rec = F.cross_entropy(self.decode(z).reshape(-1, self.n_tokens), xb.reshape(-1))
            kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(-1).mean() / self.seq_len
            loss = rec + self.beta * kl
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.eval()
        return self

    def reconstruction_accuracy(self, x: Sequence[str] | np.ndarray) -> float:
        """Fraction of positions that argmax(D(E(x))) reproduces."""
        tokens = _tokens_tensor(x, self.n_tokens, self.seq_len)
        return float((torch.as_tensor(self.decode_tokens(self.embed(tokens))) == tokens).float().mean())


# --------------------------------------------------------------------------------------------- flow prior
class LatentFlowPrior(nn.Module):
    """Flow-matching prior over latents: velocity net v_theta(z, t), noise at t = 0, data at t = 1.

    Trained with the conditional flow-matching loss on the linear path
    ``z_t = (1 - t) z_0 + t z_1``, ``z_0 ~ N(0, I)``: ``E ||v_theta(z_t, t) - (z_1 - z_0)||^2``.

    Args:
        latent_dim: dimension of z.
        hidden: width of the MLP.
        n_freq: sinusoidal features of t.
    """

    def __init__(self, latent_dim: int, hidden: int = 128, n_freq: int = 8):
        super().__init__()
        if latent_dim < 1 or hidden < 1 or n_freq < 1:
            raise ValueError(f"latent_dim, hidden and n_freq must be >= 1, got {latent_dim}, {hidden}, {n_freq}")
        self.latent_dim = latent_dim
        self.register_buffer("freqs", math.pi * 2.0 ** torch.arange(n_freq, dtype=torch.float32) / 2)
        self.net = nn.Sequential(nn.Linear(latent_dim + 2 * n_freq, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, latent_dim))

    def forward(self, z: torch.Tensor, t: torch.Tensor | float) -> torch.Tensor:
        """Velocity ``v_theta(z, t)``, shape of ``z``; ``t`` is a scalar or ``(n,)``."""
        t = torch.as_tensor(t, dtype=z.dtype).expand(z.shape[0])
        ang = t[:, None] * self.freqs[None, :]
        return self.net(torch.cat([z, ang.sin(), ang.cos()], dim=-1))

    def fit(self, z1: torch.Tensor | np.ndarray, n_steps: int = 3000, batch_size: int = 256, lr: float = 2e-3,
            seed: int = 0) -> "LatentFlowPrior":
        """Conditional flow matching on data latents ``z1`` of shape ``(n, latent_dim)``. Returns self."""
        _check_fit_args(n_steps, batch_size, lr)
        z1 = torch.as_tensor(np.asarray(z1) if not isinstance(z1, torch.Tensor) else z1, dtype=torch.float32)
        if z1.ndim != 2 or z1.shape[1] != self.latent_dim:
            raise ValueError(f"Z must have shape (n, {self.latent_dim}), got {tuple(z1.shape)}")
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(n_steps, 1))
        self.train()
        for _ in range(n_steps):
            x1 = z1[torch.randint(len(z1), (batch_size,), generator=gen)]
            x0 = torch.randn(x1.shape, generator=gen)
            t = torch.rand(batch_size, generator=gen)
            zt = (1 - t[:, None]) * x0 + t[:, None] * x1
            loss = ((self(zt, t) - (x1 - x0)) ** 2).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        self.eval()
        return self

    def sample(self, n: int, ode_steps: int = 32, seed: int = 0) -> torch.Tensor:
        """Plain Euler integration of dz/dt = v(z, t) from z_0 ~ N(0, I) at t = 0 to t = 1."""
        if n < 1 or ode_steps < 1:
            raise ValueError(f"n and ode_steps must be >= 1, got {n}, {ode_steps}")
        z = torch.randn(n, self.latent_dim, generator=torch.Generator().manual_seed(seed))
        h = 1.0 / ode_steps
        with torch.no_grad():
            for k in range(ode_steps):
                z = z + h * self(z, k * h)
        return z


# -------------------------------------------------------------------------------------------- predictor
class FitnessCNN(nn.Module):
    """GGS-style CNN regressor g_phi: conv over one-hot input, per-position MLP, max-pool over length, linear.

    ``forward`` takes tokens; ``forward_soft`` takes per-position probabilities ``(n, L, n_tokens)`` so that
    gradients can flow from the fitness to the decoder's output.

    Args:
        seq_len: sequence length L.
        n_tokens: alphabet size.
        width: conv channels (GGS uses 256).
        kernel_size: conv kernel width (GGS uses 5).
    """

    def __init__(self, seq_len: int, n_tokens: int = 20, width: int = 32, kernel_size: int = 5):
        super().__init__()
        if seq_len < kernel_size:
            raise ValueError(f"seq_len ({seq_len}) must be >= kernel_size ({kernel_size})")
        if width < 1 or n_tokens < 1:
            raise ValueError(f"width and n_tokens must be >= 1, got {width}, {n_tokens}")
        self.seq_len, self.n_tokens = seq_len, n_tokens
        self.conv = nn.Conv1d(n_tokens, width, kernel_size)
        self.mlp = nn.Linear(width, 2 * width)
        self.out = nn.Linear(2 * width, 1)

    def forward_soft(self, probs: torch.Tensor) -> torch.Tensor:
        """Predicted fitness ``(n,)`` of soft sequences ``(n, L, n_tokens)`` (rows sum to one)."""
        if probs.ndim != 3 or probs.shape[1:] != (self.seq_len, self.n_tokens):
            raise ValueError(f"probs must have shape (n, {self.seq_len}, {self.n_tokens}), got {tuple(probs.shape)}")
        h = self.conv(probs.transpose(1, 2)).transpose(1, 2)
        return self.out(F.relu(self.mlp(h)).max(dim=1).values).squeeze(-1)

    def forward(self, x: Sequence[str] | np.ndarray | torch.Tensor) -> torch.Tensor:
        """Predicted fitness ``(n,)`` of token sequences."""
        tokens = _tokens_tensor(x, self.n_tokens, self.seq_len)
        return self.forward_soft(F.one_hot(tokens, self.n_tokens).float())

    def predict(self, x: Sequence[str] | np.ndarray) -> np.ndarray:
        """NumPy predictions without gradients."""
        with torch.no_grad():
            return self(x).cpu().numpy()

    def fit(self, x: Sequence[str] | np.ndarray, y: np.ndarray, n_steps: int = 1500, batch_size: int = 128,
            lr: float = 1e-3, weight_decay: float = 1e-4, seed: int = 0) -> "FitnessCNN":
        """Mean-squared-error regression of fitness ``y`` (n,) on sequences ``x``. Returns self."""
        _check_fit_args(n_steps, batch_size, lr)
        tokens = _tokens_tensor(x, self.n_tokens, self.seq_len)
        y = torch.as_tensor(np.asarray(y, dtype=np.float32))
        if y.shape != (len(tokens),):
            raise ValueError(f"y must have shape ({len(tokens)},), got {tuple(y.shape)}")
        if not torch.isfinite(y).all():
            raise ValueError("y contains non-finite values")
        onehot = F.one_hot(tokens, self.n_tokens).float()
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=weight_decay)
        self.train()
        for _ in range(n_steps):
            idx = torch.randint(len(tokens), (batch_size,), generator=gen)
            loss = F.mse_loss(self.forward_soft(onehot[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.eval()
        return self
