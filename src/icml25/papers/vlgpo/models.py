"""The three learned pieces of VLGPO: a sequence VAE, a flow-matching prior in its latent space, and a CNN
fitness predictor that accepts soft (probability) inputs.

Shapes: sequences are ``(n, L)`` token arrays (or strings, see :func:`encode_sequences`); one-hot / soft
inputs are ``(n, L, n_tokens)``; latents are ``(n, latent_dim)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from icml25.common.checks import check_fields
from icml25.papers.vlgpo.landscape import encode_sequences


def tokens_tensor(x: Sequence[str] | np.ndarray | torch.Tensor, n_tokens: int, seq_len: int | None,
                   device: torch.device | str = "cpu") -> torch.Tensor:
    """Token ids as an ``(n, L)`` long tensor on ``device``; ``seq_len=None`` accepts any length.

    A tensor must hold integers; its id range is checked except on the meta device (no values there).
    """
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
            raise TypeError(f"token tensors must hold integer ids, got dtype {x.dtype}")
        if x.ndim != 2:
            raise ValueError(f"token tensor must be 2-D (n, L), got shape {tuple(x.shape)}")
        if not x.is_meta and x.numel() and (int(x.min()) < 0 or int(x.max()) >= n_tokens):
            raise ValueError(f"tokens must lie in [0, {n_tokens}), got range [{int(x.min())}, {int(x.max())}]")
        tokens = x.to(device=device, dtype=torch.long)
    else:
        tokens = torch.as_tensor(encode_sequences(x, n_tokens), dtype=torch.long, device=device)
    if seq_len is not None and tokens.shape[1] != seq_len:
        raise ValueError(f"sequences have length {tokens.shape[1]}, the model expects {seq_len}")
    return tokens


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
        w = self.enc[0].weight
        onehot = F.one_hot(tokens_tensor(x, self.n_tokens, self.seq_len, w.device), self.n_tokens).to(w.dtype)
        mu, logvar = self.enc(onehot.flatten(1)).chunk(2, dim=-1)
        return mu, logvar

    def forward(self, x: Sequence[str] | np.ndarray | torch.Tensor, sample: bool = False,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reconstruction logits ``(n, L, n_tokens)``, ``mu`` and ``logvar`` (each ``(n, latent_dim)``).

        The decoder reads ``z = mu`` (deterministic), or ``z = mu + exp(logvar / 2) eps`` when ``sample``
        (``eps`` drawn on the generator's device, the CPU by default, and moved to ``mu``'s).
        """
        mu, logvar = self.encode(x)
        z = mu
        if sample:
            eps = torch.randn(mu.shape, generator=generator, dtype=mu.dtype,
                              device=generator.device if generator is not None else "cpu").to(mu.device)
            z = mu + eps * (0.5 * logvar).exp()
        return self.decode(z), mu, logvar

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
        """Train on sequences with the ELBO (reconstruction cross-entropy + beta * KL) on the module's device.

        Minibatches and noise come from a CPU generator seeded by ``seed``. Returns self.
        """
        _check_fit_args(n_steps, batch_size, lr)
        device = self.enc[0].weight.device
        tokens = tokens_tensor(x, self.n_tokens, self.seq_len, device)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        self.train()
        for _ in range(n_steps):
            xb = tokens[torch.randint(len(tokens), (batch_size,), generator=gen).to(device)]
            mu, logvar = self.encode(xb)
            z = mu + torch.randn(mu.shape, generator=gen).to(device) * (0.5 * logvar).exp()
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
        tokens = tokens_tensor(x, self.n_tokens, self.seq_len)
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
        if z.ndim != 2 or z.shape[1] != self.latent_dim:
            raise ValueError(f"z must have shape (n, {self.latent_dim}), got {tuple(z.shape)}")
        t = torch.as_tensor(t, dtype=z.dtype, device=z.device)
        if t.ndim > 1 or (t.ndim == 1 and t.shape[0] != z.shape[0]):
            raise ValueError(f"t must be a scalar or have shape ({z.shape[0]},), got {tuple(t.shape)}")
        t = t.expand(z.shape[0])
        ang = t[:, None] * self.freqs[None, :]
        return self.net(torch.cat([z, ang.sin(), ang.cos()], dim=-1))

    def fit(self, z1: torch.Tensor | np.ndarray, n_steps: int = 3000, batch_size: int = 256, lr: float = 2e-3,
            seed: int = 0) -> "LatentFlowPrior":
        """Conditional flow matching on data latents ``z1`` of shape ``(n, latent_dim)``. Returns self.

        Trains on the module's device; minibatches and noise come from a CPU generator seeded by ``seed``.
        """
        _check_fit_args(n_steps, batch_size, lr)
        device = self.freqs.device
        z1 = torch.as_tensor(np.asarray(z1) if not isinstance(z1, torch.Tensor) else z1, dtype=torch.float32)
        if z1.ndim != 2 or z1.shape[1] != self.latent_dim or len(z1) == 0:
            raise ValueError(f"Z must have shape (n, {self.latent_dim}) with n >= 1, got {tuple(z1.shape)}")
        if not torch.isfinite(z1).all():
            raise ValueError("Z must be finite (no NaN or inf)")
        z1 = z1.to(device)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(n_steps, 1))
        self.train()
        for _ in range(n_steps):
            x1 = z1[torch.randint(len(z1), (batch_size,), generator=gen).to(device)]
            x0 = torch.randn(x1.shape, generator=gen).to(device)
            t = torch.rand(batch_size, generator=gen).to(device)
            zt = (1 - t[:, None]) * x0 + t[:, None] * x1
            loss = ((self(zt, t) - (x1 - x0)) ** 2).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        self.eval()
        return self

    def sample(self, n: int, ode_steps: int = 32, seed: int = 0) -> torch.Tensor:
        """Plain Euler integration of dz/dt = v(z, t) from z_0 ~ N(0, I) at t = 0 to t = 1 (module's device)."""
        if n < 1 or ode_steps < 1:
            raise ValueError(f"n and ode_steps must be >= 1, got {n}, {ode_steps}")
        z = torch.randn(n, self.latent_dim, generator=torch.Generator().manual_seed(seed)).to(self.freqs.device)
        h = 1.0 / ode_steps
        with torch.no_grad():
            for k in range(ode_steps):
                z = z + h * self(z, k * h)
        return z


# -------------------------------------------------------------------------------------------- predictor
def _is_strings(x) -> bool:
    """True for a sequence of strings (amino-acid sequences) rather than a token array."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "US" or (x.dtype == object and x.ndim == 1 and x.size > 0 and isinstance(x[0], str))
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(s, str) for s in x)


class FitnessCNN(RegressorMixin, BaseEstimator, nn.Module):
    """GGS-style CNN regressor g_phi: conv over one-hot input, per-position MLP, max-pool over length, linear.

    Both a scikit-learn regressor (``fit(X, y)`` / ``predict(X)`` on NumPy data) and an ``nn.Module``
    (``forward`` on tokens, ``forward_soft`` on per-position probabilities ``(n, L, n_tokens)``, so that
    gradients can flow from the fitness to the decoder's output).

    ``X`` layout: one row per sequence, one column per position, each entry an integer token id in
    ``[0, n_tokens)`` (token ``k`` is ``AMINO_ACIDS[k]``); a list of amino-acid strings of one length is
    accepted too. Float arrays with integral values are read as token ids.

    The network is built at construction (so a ``state_dict`` loads into a fresh instance) and does not
    depend on the length L: the convolution slides over the positions and the max-pool removes them.
    ``fit`` trains from scratch every time: from the weights drawn at construction (the global torch RNG)
    when ``random_state`` is ``None``, else from weights drawn with ``random_state``.

    Args:
        seq_len: sequence length L; ``None`` accepts any L >= ``kernel_size`` (fixed by ``fit``).
        n_tokens: alphabet size.
        width: conv channels (GGS uses 256).
        kernel_size: conv kernel width (GGS uses 5).
        n_steps, batch_size, lr, weight_decay: Adam training of the MSE (``fit`` may override them).
        seed: seed of the minibatch order.
        random_state: seed of the initial weights (``None``: those drawn at construction).
    """

    def __init__(self, seq_len: int | None = None, n_tokens: int = 20, width: int = 32, kernel_size: int = 5,
                 n_steps: int = 1500, batch_size: int = 128, lr: float = 1e-3, weight_decay: float = 1e-4,
                 seed: int = 0, random_state: int | None = None):
        super().__init__()
        self.seq_len, self.n_tokens, self.width, self.kernel_size = seq_len, n_tokens, width, kernel_size
        self.n_steps, self.batch_size, self.lr, self.weight_decay = n_steps, batch_size, lr, weight_decay
        self.seed, self.random_state = seed, random_state
        self._check_sizes()
        self._build()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # integer token ids
        tags.input_tags.positive_only = True
        tags.regressor_tags.poor_score = True  # a token model: scikit-learn's continuous test data mean nothing
        return tags

    # ------------------------------------------------------------------ network
    def _check_sizes(self) -> None:
        if self.width < 1 or self.n_tokens < 1 or self.kernel_size < 1:
            raise ValueError(f"width, n_tokens and kernel_size must be >= 1, got {self.width}, {self.n_tokens}, "
                             f"{self.kernel_size}")
        if self.seq_len is not None and self.seq_len < self.kernel_size:
            raise ValueError(f"seq_len ({self.seq_len}) must be >= kernel_size ({self.kernel_size})")

    def _build(self) -> None:
        """Create the layers (from the global torch RNG) and remember their initial weights."""
        self.conv = nn.Conv1d(self.n_tokens, self.width, self.kernel_size)
        self.mlp = nn.Linear(self.width, 2 * self.width)
        self.out = nn.Linear(2 * self.width, 1)
        self._architecture = (self.n_tokens, self.width, self.kernel_size)
        self._initial_state = {k: v.detach().clone() for k, v in self.state_dict().items()}

    def _reset(self) -> None:
        """Put the weights back to their initial values before ``fit`` (rebuilding after ``set_params``)."""
        self._check_sizes()
        like = {"device": self.conv.weight.device, "dtype": self.conv.weight.dtype}
        if self.random_state is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.random_state)
                self._build()
        elif self._architecture != (self.n_tokens, self.width, self.kernel_size):
            self._build()
        else:
            self.load_state_dict(self._initial_state)
        self.to(**like)

    def _length_ok(self, length: int) -> None:
        if self.seq_len is not None and length != self.seq_len:
            raise ValueError(f"sequences have length {length}, the model expects {self.seq_len}")
        if length < self.kernel_size:
            raise ValueError(f"X has {length} feature(s) (positions) but the convolution needs at least "
                             f"kernel_size={self.kernel_size}")

    def forward_soft(self, probs: torch.Tensor) -> torch.Tensor:
        """Predicted fitness ``(n,)`` of soft sequences ``(n, L, n_tokens)`` (rows sum to one)."""
        if probs.ndim != 3 or probs.shape[2] != self.n_tokens:
            raise ValueError(f"probs must have shape (n, {self.seq_len or 'L'}, {self.n_tokens}), "
                             f"got {tuple(probs.shape)}")
        self._length_ok(probs.shape[1])
        h = self.conv(probs.transpose(1, 2)).transpose(1, 2)
        return self.out(F.relu(self.mlp(h)).max(dim=1).values).squeeze(-1)

    def forward(self, x: Sequence[str] | np.ndarray | torch.Tensor) -> torch.Tensor:
        """Predicted fitness ``(n,)`` of token sequences (strings, an ``(n, L)`` array or integer tensor)."""
        w = self.conv.weight
        tokens = tokens_tensor(x, self.n_tokens, self.seq_len, w.device)
        return self.forward_soft(F.one_hot(tokens, self.n_tokens).to(w.dtype))

    # ------------------------------------------------------------------ scikit-learn
    # nn.Module keeps its train/eval flag in the public attribute ``training``; scikit-learn allows only
    # constructor parameters and fitted attributes (trailing "_") there, so the flag lives in ``_training``.
    @property
    def training(self) -> bool:
        return self.__dict__["_training"]

    @training.setter
    def training(self, mode: bool) -> None:
        self.__dict__["_training"] = mode

    def _token_array(self, x: np.ndarray) -> np.ndarray:
        """Check a validated numeric ``x`` (n, L) holds token ids; returns it as int64."""
        if np.any(x < 0):
            raise ValueError("Negative values in data passed to FitnessCNN: token ids must be >= 0")
        if np.any(x >= self.n_tokens) or not np.array_equal(x, np.round(x)):
            raise ValueError(f"X must hold integer token ids in [0, {self.n_tokens})")
        self._length_ok(x.shape[1])
        return x.astype(np.int64)

    def fit(self, x: Sequence[str] | np.ndarray, y: np.ndarray, n_steps: int | None = None,
            batch_size: int | None = None, lr: float | None = None, weight_decay: float | None = None,
            seed: int | None = None) -> "FitnessCNN":
        """Mean-squared-error regression of fitness ``y`` (n,) on sequences ``x`` (n, L). Returns self.

        Keyword arguments left at ``None`` take the constructor's values. Training runs on the module's device.
        """
        n_steps = self.n_steps if n_steps is None else n_steps
        batch_size = self.batch_size if batch_size is None else batch_size
        lr = self.lr if lr is None else lr
        weight_decay = self.weight_decay if weight_decay is None else weight_decay
        seed = self.seed if seed is None else seed
        _check_fit_args(n_steps, batch_size, lr)
        x, y = validate_data(self, encode_sequences(x, self.n_tokens) if _is_strings(x) else x, y,
                             dtype="numeric", y_numeric=True)
        tokens, y = self._token_array(x), np.asarray(y, dtype=np.float32)
        self._reset()
        device = self.conv.weight.device
        tokens, y = torch.as_tensor(tokens, device=device), torch.as_tensor(y, device=device)
        onehot = F.one_hot(tokens, self.n_tokens).to(self.conv.weight.dtype)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=weight_decay)
        self.train()
        for _ in range(n_steps):
            idx = torch.randint(len(tokens), (batch_size,), generator=gen).to(device)
            loss = F.mse_loss(self.forward_soft(onehot[idx]), y[idx].to(onehot.dtype))
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.eval()
        self.n_train_steps_ = n_steps
        return self

    def predict(self, x: Sequence[str] | np.ndarray) -> np.ndarray:
        """Predicted fitness ``(n,)`` as a NumPy array (no gradients), after :meth:`fit`."""
        check_is_fitted(self)
        x = validate_data(self, encode_sequences(x, self.n_tokens) if _is_strings(x) else x, reset=False,
                          dtype="numeric")
        tokens = torch.as_tensor(self._token_array(x), device=self.conv.weight.device)
        with torch.no_grad():
            return self.forward_soft(F.one_hot(tokens, self.n_tokens).to(self.conv.weight.dtype)).cpu().numpy()


@dataclass(frozen=True)
class VLGPOConfig:
    """VLGPO's settings: the training of its three learned pieces (:func:`train_vlgpo`) and the sampler's
    (:func:`~icml25.papers.vlgpo.sampling.vlgpo_sample`, then :func:`~icml25.papers.vlgpo.sampling.select_top_k`).

    The official configs (uzh-dqbm-cmi/VLGPO configs/{aav,gfp}_{medium,hard}.yaml) set n_samples 512, ode_steps 32,
    top_k 128 and, for AAV, latent 16 with J 39 / 19 and alpha 34 / 38 (medium / hard, unsmoothed predictor; alpha
    is their "alpha * ode_steps"); the defaults are the reproduction's quick settings (J and alpha chosen on a
    development seed for the synthetic task, whose predictor has another output scale).
    """

    latent_dim: int = 16
    """VAE latent dimension (the official AAV config uses 16)."""
    vae_steps: int = 600
    """Adam steps of VAE training."""
    flow_steps: int = 1000
    """Adam steps of conditional flow matching."""
    predictor_steps: int = 500
    """Adam steps of predictor training."""
    n_samples: int = 512
    """Latent chains sampled (designs generated)."""
    top_k: int = 128
    """Designs kept after dedupe and ranking by the predictor."""
    ode_steps: int = 32
    """Euler steps K of the prior ODE."""
    J: int = 5
    """Likelihood steps per ODE step (official AAV unsmoothed: 39 medium, 19 hard; see ``official_step_settings``)."""
    alpha: float = 1000.0
    """Likelihood step size in units of h (chosen on development seed 100; official AAV unsmoothed: 34 medium,
    38 hard, tuned for the GGS predictor's raw-fitness gradients, which ours, trained on normalised fitness, lacks)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("latent_dim", "vae_steps", "flow_steps", "predictor_steps", "n_samples", "top_k",
                                    "ode_steps", "J"),
                     positive=("latent_dim", "n_samples", "top_k", "ode_steps"),
                     nonnegative=("vae_steps", "flow_steps", "predictor_steps", "J", "alpha"))
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"latent_dim": 10**4, "vae_steps": 10**7, "flow_steps": 10**7,
                                    "predictor_steps": 10**7, "n_samples": 10**6, "top_k": 10**6,
                                    "ode_steps": 10**4, "J": 10**4})


def train_vlgpo(train_x: np.ndarray, train_y: np.ndarray, cfg: VLGPOConfig, seed: int = 0,
                device: torch.device | str = "cpu") -> tuple[SeqVAE, LatentFlowPrior, FitnessCNN]:
    """Train VLGPO's three pieces on the training split only: the VAE, the flow prior on its posterior means, and
    the fitness predictor.

    Args:
        train_x: ``(n, L)`` token array of the training sequences.
        train_y: ``(n,)`` their fitness.
        cfg: the step counts and latent size (``cfg.vae_steps``, ``cfg.flow_steps``, ``cfg.predictor_steps``,
            ``cfg.latent_dim``).
        seed: seeds the initial weights (drawn on the CPU, the same on every device) and every fit.
        device: where the models train.

    Returns:
        ``(vae, flow, predictor)``, trained.
    """
    seq_len = np.asarray(train_x).shape[1]
    torch.manual_seed(seed)
    # built on the CPU (the same initial weights on every device), trained on device
    vae = SeqVAE(seq_len, latent_dim=cfg.latent_dim).to(device)
    vae.fit(train_x, n_steps=cfg.vae_steps, seed=seed)
    flow = LatentFlowPrior(cfg.latent_dim).to(device)
    flow.fit(vae.embed(train_x), n_steps=cfg.flow_steps, seed=seed)
    predictor = FitnessCNN(seq_len).to(device)
    predictor.fit(train_x, train_y, n_steps=cfg.predictor_steps, seed=seed)
    return vae, flow, predictor
