"""CD-CVAE: a V-structure conditional VAE for survival data with a censor-dependent encoder.

Liu & Wang, "Censor Dependent Variational Inference", ICML 2025 (arXiv 2502.09591).

Generative model (both x and z point to the event time U)::

    z ~ N(0, I_p),   U | x, z ~ primitive(loc = mu_theta(z, x), scale = s),   y = min(U, C),  delta = 1[U <= C]

with ``primitive`` Normal (log-normal AFT mixture when time is on the log scale) or Gumbel-min (log-Weibull).
Per sample the ELBO is

    ELBO = E_q[ delta log f(y|x,z) + beta (1 - delta) log S(y|x,z) ] - KL(q(z|.) || N(0, I)).

The optimal q is the true posterior p(z | x, y, delta), which depends on delta: CD-CVAE feeds delta to the
encoder (``encoder="dense"``: one MLP on [x, y, delta]; ``"split"``: one MLP per value of delta).
``encoder="none"`` is the plain CVAE baseline q(z | x, y).

:class:`CDCVAEConfig` holds the estimator's settings (architecture, ELBO temperature, training and model
selection), :meth:`CDCVAE.from_config` builds the estimator from it. The module also holds the reference baseline
:class:`LogNormalAFT` (the decoder with no latent, fitted by maximum likelihood with SciPy).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np
import torch
from scipy import optimize, special
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from icml25.common.checks import check_fields

_LOG_2PI = math.log(2 * math.pi)
PRIMITIVES = ("normal", "gumbel")
ENCODERS = ("dense", "split", "none")
SIGMAS = ("joint", "fixed", "x")
CRITERIA = ("ctd", "elbo")
"""Model-selection criteria on validation data: the official ``"ctdpycox"`` C_td, or the validation ELBO."""
VAL_QUANTILES = np.linspace(0.1, 1.0, 10)
"""Quantiles of the training event times at which the official fit scores the validation C_td."""


# ----------------------------------------------------------------------------- primitives
def primitive_logpdf(u: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor,
                     primitive: str = "normal") -> torch.Tensor:
    """Log density of the primitive at ``u``.

    Normal: ``-r^2/2 - log s - log(2 pi)/2``; Gumbel-min (``scipy.stats.gumbel_l``): ``r - e^r - log s``,
    with ``r = (u - loc) / scale``. Shapes broadcast.
    """
    r = (u - loc) / scale
    if primitive == "normal":
        return -0.5 * r * r - torch.log(scale) - 0.5 * _LOG_2PI
    if primitive == "gumbel":
        return r - torch.exp(r) - torch.log(scale)
    raise ValueError(f"primitive must be one of {PRIMITIVES}, got {primitive!r}")


def primitive_logsf(u: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, primitive: str = "normal") -> torch.Tensor:
    """Log survival function log P(U > u) of the primitive.

    Normal: ``log Phi(-r)`` through ``torch.special.log_ndtr`` (exact in the deep tail, unlike the official
    code's ``log(1 + 1e-6 - Phi(r))``); Gumbel-min: ``-e^r``.
    """
    r = (u - loc) / scale
    if primitive == "normal":
        return torch.special.log_ndtr(-r)
    if primitive == "gumbel":
        return -torch.exp(r)
    raise ValueError(f"primitive must be one of {PRIMITIVES}, got {primitive!r}")


def censored_loglik(u, delta, loc, scale, primitive: str = "normal", beta: float = 1.0) -> torch.Tensor:
    """``delta * log f(u) + beta * (1 - delta) * log S(u)``, elementwise (the reconstruction term of the ELBO).

    Raises:
        ValueError: ``delta`` holds values other than 0/1 (or booleans), or ``scale`` is not > 0 everywhere.
    """
    d = torch.as_tensor(delta).detach()
    if not bool(((d == 0) | (d == 1)).all()):
        bad = d[~((d == 0) | (d == 1))].flatten()[0].item()
        raise ValueError(f"delta (the censoring indicator) must hold only 0/1 or booleans, got {bad!r}")
    s = torch.as_tensor(scale).detach()
    if not bool((s > 0).all()):  # "not (s > 0)" also rejects NaN
        bad = s[~(s > 0)].flatten()[0].item()
        raise ValueError(f"scale must be > 0 everywhere, got {bad!r}")
    return _censored_loglik(u, delta, loc, scale, primitive, beta)


def _censored_loglik(u, delta, loc, scale, primitive: str = "normal", beta: float = 1.0) -> torch.Tensor:
    """:func:`censored_loglik` without the input checks, for the training loop (delta is checked once by
    :func:`split_survival_array`, the network's scale is an exponential)."""
    lp = primitive_logpdf(u, loc, scale, primitive)
    ls = primitive_logsf(u, loc, scale, primitive)
    return torch.where(delta > 0.5, lp, beta * ls)


# ----------------------------------------------------------------------------- structured survival arrays
def make_survival_array(event, time, *, allow_negative: bool = False) -> np.ndarray:
    """Structured array with fields ``event`` (bool) and ``time`` (float), as scikit-survival uses.

    ``time`` must be finite and, as in scikit-survival, >= 0; ``allow_negative=True`` admits times on the
    whole real line (the synthetic generator's outcomes, modelled with ``log_time=False``).
    """
    event = np.asarray(event)
    time = np.asarray(time, dtype=float)
    if event.ndim != 1 or time.shape != event.shape:
        raise ValueError(f"event and time must be 1-D of equal length, got shapes {event.shape} and {time.shape}")
    if not np.all(np.isin(event, (0, 1, True, False))):
        raise ValueError("event must hold only 0/1 or booleans")
    if not np.all(np.isfinite(time)):
        raise ValueError(f"time must hold only finite numbers, got {time[~np.isfinite(time)][0]}")
    if not allow_negative and np.any(time < 0):
        raise ValueError(f"time must be >= 0 (pass allow_negative=True for times on the real line), "
                         f"got {time.min()}")
    out = np.empty(event.shape[0], dtype=[("event", bool), ("time", float)])
    out["event"], out["time"] = event.astype(bool), time
    return out


def split_survival_array(y) -> tuple[np.ndarray, np.ndarray]:
    """(event, time) from a scikit-survival structured array (first field: event indicator, second: time)."""
    y = np.asarray(y)
    if y.dtype.names is None or len(y.dtype.names) != 2:
        raise ValueError("y must be a structured array with two fields (event indicator, time), "
                         "e.g. from make_survival_array or sksurv.util.Surv")
    event = np.asarray(y[y.dtype.names[0]])
    time = np.asarray(y[y.dtype.names[1]], dtype=float)
    if not np.all(np.isin(event, (0, 1, True, False))):
        raise ValueError(f"the first field of y ({y.dtype.names[0]!r}) must be a 0/1 event indicator")
    if not np.all(np.isfinite(time)):
        raise ValueError("survival times must be finite")
    return event.astype(bool), time


def _check_X(X, n_features: int | None = None) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model was fitted with {n_features}")
    return X


# ----------------------------------------------------------------------------- network
def _mlp(sizes: list[int], out: int) -> nn.Sequential:
    """tanh MLP through ``sizes`` followed by a linear layer to ``out`` units."""
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.Tanh()]
    layers.append(nn.Linear(sizes[-1], out))
    return nn.Sequential(*layers)


class CDCVAENet(nn.Module):
    """Encoder q(z | x, y[, delta]), decoder mu_theta(z, x) and scale of the primitive (all on standardised time).

    Args:
        n_features: covariates p of x.
        latent_dim: dimension of z.
        enc_hidden, dec_hidden: hidden widths of the tanh MLPs (empty: linear).
        encoder: ``"dense"`` (q on [x, t, delta]), ``"split"`` (one MLP per value of delta) or ``"none"``
            (q on [x, t], the CVAE baseline).
        sigma: ``"joint"`` (learned scalar log-scale, init 1), ``"fixed"`` (log-scale 0) or ``"x"`` (MLP of x).

    ``forward(x, t, d)`` draws one reparameterised z ~ q(z | x, t, d) and returns
    ``(loc, scale, mean, logvar)``: the primitive's location ``(n,)`` and scale (a scalar, or ``(n,)``
    for ``sigma="x"``) given that z, and the encoder's mean and log-variance ``(n, latent_dim)``.
    """

    def __init__(self, n_features: int, latent_dim: int, enc_hidden, dec_hidden, encoder: str, sigma: str):
        super().__init__()
        if encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
        if sigma not in SIGMAS:
            raise ValueError(f"sigma must be one of {SIGMAS}, got {sigma!r}")
        for name, value in (("n_features", n_features), ("latent_dim", latent_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.encoder_kind, self.sigma_kind, self.latent_dim = encoder, sigma, int(latent_dim)
        enc_in = n_features + 1 + (1 if encoder == "dense" else 0)
        self.enc = _mlp([enc_in, *enc_hidden], 2 * latent_dim)
        # split encoder: a second, unshared network used for censored samples (delta = 0)
        self.enc_censored = _mlp([enc_in, *enc_hidden], 2 * latent_dim) if encoder == "split" else None
        self.dec = _mlp([latent_dim + n_features, *dec_hidden], 1)
        self.sigma_net = _mlp([n_features, 32, 16], 1) if sigma == "x" else None
        for m in self.modules():  # official code: xavier_uniform weights, bias 0.01
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.constant_(m.bias, 0.01)
        # log-scale: learned scalar initialised at 1 ("joint") or fixed at 0 ("fixed")
        self.log_sigma = nn.Parameter(torch.tensor(1.0), requires_grad=(sigma == "joint"))
        if sigma == "fixed":
            self.log_sigma.data.zero_()

    def forward(self, x: torch.Tensor, t: torch.Tensor, d: torch.Tensor):
        """One reparameterised pass: ``z = mean + exp(logvar / 2) * eps``, then the decoder at z.

        Args:
            x: covariates ``(n, n_features)``; t: standardised (log-)times ``(n,)``; d: event indicators ``(n,)``.
        Returns:
            ``(loc, scale, mean, logvar)``, see the class docstring.
        """
        mean, logvar = self.encode(x, t, d)
        z = mean + torch.exp(0.5 * logvar) * torch.randn_like(mean)
        return self.decode(z, x), self.scale(x), mean, logvar

    def encode(self, x, t, d):
        """Mean and log-variance of q(z | x, t[, d]), each ``(n, latent_dim)``."""
        h = torch.cat([x, t[:, None]] + ([d[:, None]] if self.encoder_kind == "dense" else []), dim=1)
        out = self.enc(h)
        if self.enc_censored is not None:
            out = torch.where(d[:, None] > 0.5, out, self.enc_censored(h))
        return out[:, : self.latent_dim], out[:, self.latent_dim:]

    def decode(self, z, x):
        """Location mu_theta(z, x); ``z`` is ``(..., n, latent_dim)``, the result ``(..., n)``."""
        x = x.expand(*z.shape[:-1], x.shape[-1])
        return self.dec(torch.cat([z, x], dim=-1)).squeeze(-1)

    def scale(self, x):
        """Scale s of the primitive, broadcastable against ``(n,)``."""
        if self.sigma_net is not None:
            return torch.exp(self.sigma_net(x).squeeze(-1))
        return torch.exp(self.log_sigma)


# ----------------------------------------------------------------------------- estimator
@dataclass
class CDCVAEConfig:
    """Settings of :class:`CDCVAE` (and of the CVAE baseline, the same estimator with ``encoder="none"``): the
    architecture, the ELBO's censored-term temperature, training and model selection. Defaults are
    :class:`CDCVAE`'s.

    What a comparison varies per run (``encoder``, ``log_time``, ``seed``, ``device``) is not part of it: pass it
    to :meth:`CDCVAE.from_config`. The experiments nest it whole as ``model`` (``--set model.epochs=300
    model.primitive=gumbel``). A value out of range raises :class:`~icml25.common.checks.ConfigError` (a
    ``ValueError``) naming the field.
    """

    latent_dim: int = 4
    """Dimension p of z."""
    enc_hidden: tuple[int, ...] = (32, 16)
    """Hidden widths of the encoder MLP(s) (tanh); ``()`` gives a linear encoder."""
    dec_hidden: tuple[int, ...] = (32, 16)
    """Hidden widths of the decoder MLP (tanh); ``()`` gives a linear decoder."""
    primitive: str = "normal"
    """Primitive of the event time: ``normal`` (log-normal when on log-time) or ``gumbel`` (Gumbel-min,
    log-Weibull)."""
    sigma: str = "joint"
    """Scale of the primitive: ``joint`` (learned scalar log-scale, init 1), ``fixed`` (log-scale 0) or ``x``
    (an MLP of x)."""
    beta: float = 1.0
    """Temperature on the censored term of the ELBO (1 = the exact likelihood; the official demo uses 0.9)."""
    lr: float = 1e-3
    """Adam learning rate."""
    weight_decay: float = 1e-2
    """Adam weight decay (official: 0.01)."""
    epochs: int = 100
    """Training epochs (at most, with validation data and ``patience``)."""
    batch_size: int = 256
    """Minibatch size (the loss is the batch *sum* of -ELBO, as in the official code)."""
    n_mc: int = 100
    """Draws of z ~ N(0, I) averaged in S(t | x) (:meth:`CDCVAE.predict_survival_function`)."""
    patience: int = 30
    """With validation data: stop when the validation criterion (checked every 2 epochs) has not improved for
    this many epochs, and keep the best weights."""
    criterion: str = "ctd"
    """What selects the kept weights on validation data: ``ctd`` (the official ``fit(criterion="ctdpycox")``:
    pycox's C_td) or ``elbo`` (the validation ELBO)."""

    def __post_init__(self) -> None:
        # bounds: a fit beyond these would need > ~100 GB or days
        check_fields(self, positive=("latent_dim", "enc_hidden", "dec_hidden", "lr", "epochs", "batch_size", "n_mc"),
                     nonnegative=("beta", "weight_decay", "patience"), finite=("beta", "lr", "weight_decay"),
                     choices={"primitive": PRIMITIVES, "sigma": SIGMAS, "criterion": CRITERIA},
                     at_most={"latent_dim": 10**4, "enc_hidden": 10**5, "dec_hidden": 10**5, "epochs": 10**6,
                              "batch_size": 10**7, "n_mc": 10**5, "patience": 10**6})


@dataclass
class CDCVAE:
    """Censor-dependent CVAE survival estimator (scikit-learn style, PyTorch inside).

    Args:
        latent_dim: dimension p of z.
        enc_hidden: hidden widths of the encoder MLP(s) (tanh); ``()`` gives a linear encoder.
        dec_hidden: hidden widths of the decoder MLP (tanh); ``()`` gives a linear decoder.
        encoder: ``"dense"`` (q on [x, y, delta], the official default), ``"split"`` (one MLP per delta) or
            ``"none"`` (plain CVAE, q(z | x, y): the baseline that ignores delta).
        primitive: ``"normal"`` (log-normal when ``log_time``) or ``"gumbel"`` (Gumbel-min, log-Weibull).
        sigma: ``"joint"`` (learned scalar log-scale, init 1), ``"fixed"`` (log-scale 0) or ``"x"`` (MLP of x).
        beta: temperature on the censored term of the ELBO (1 = the exact likelihood).
        lr, weight_decay: Adam settings (official: weight decay 0.01).
        epochs, batch_size: training length; the loss is the batch *sum* of -ELBO, as in the official code.
        n_mc: draws of z ~ N(0, I) averaged in :meth:`predict_survival_function`.
        log_time: model log(time) (times must be > 0); ``False`` models the time as given (synthetic data).
        patience: with validation data, stop when the validation criterion (checked every 2 epochs) has not
            improved for this many epochs, and keep the best weights.
        criterion: what selects the kept weights on validation data. ``"ctd"`` (default, the official
            ``fit(criterion="ctdpycox")``): pycox's adjusted-Antolini C_td (:func:`metrics.ctd_pycox`) of the
            predicted S(t | x) at the 10%, 20%, ..., 100% quantiles of the training event times, higher is
            better. ``"elbo"``: the validation ELBO (4 draws), higher is better.
        seed: seeds initialisation, minibatches and Monte Carlo draws.
        device: where the network and its tensors live (``"cpu"``, ``"cuda"``...); results come back as
            NumPy arrays and floats on the CPU.

    Internally the (log-)time is standardised by the training mean and standard deviation; every reported
    density (ELBO, IWAE) is converted back to the (log-)time scale.
    """

    latent_dim: int = 4
    enc_hidden: tuple[int, ...] = (32, 16)
    dec_hidden: tuple[int, ...] = (32, 16)
    encoder: str = "dense"
    primitive: str = "normal"
    sigma: str = "joint"
    beta: float = 1.0
    lr: float = 1e-3
    weight_decay: float = 1e-2
    epochs: int = 100
    batch_size: int = 256
    n_mc: int = 100
    log_time: bool = True
    patience: int = 30
    criterion: str = "ctd"
    seed: int = 0
    device: str = "cpu"

    @classmethod
    def from_config(cls, config: CDCVAEConfig, **kwargs) -> CDCVAE:
        """The estimator with ``config``'s settings; ``kwargs`` set the others (``encoder``, ``log_time``,
        ``seed``, ``device``)."""
        return cls(**asdict(config), **kwargs)

    # -- validation and preprocessing
    def _check_params(self) -> None:
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {self.encoder!r}")
        if self.primitive not in PRIMITIVES:
            raise ValueError(f"primitive must be one of {PRIMITIVES}, got {self.primitive!r}")
        if self.sigma not in SIGMAS:
            raise ValueError(f"sigma must be one of {SIGMAS}, got {self.sigma!r}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, got {self.criterion!r}")
        for name in ("latent_dim", "epochs", "batch_size", "n_mc"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if not (self.beta >= 0):
            raise ValueError(f"beta must be >= 0, got {self.beta!r}")
        if not (self.lr > 0):
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {self.device!r}") from None

    def _generator(self, offset: int) -> torch.Generator:
        """A generator on the model's device seeded by ``seed + offset`` (evaluation draws)."""
        return torch.Generator(device=self.device).manual_seed(self.seed + offset)

    def _transform_time(self, time: np.ndarray) -> np.ndarray:
        if self.log_time:
            if np.any(time <= 0):
                raise ValueError(f"log_time=True needs positive times, got min {time.min()!r}")
            return np.log(time)
        return time

    def _tensors(self, X, y):
        X = _check_X(X, getattr(self, "n_features_in_", None))
        event, time = split_survival_array(y)
        if len(event) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {len(event)}")
        t = (self._transform_time(time) - self.t_mean_) / self.t_scale_
        f = lambda a: torch.as_tensor(a, dtype=torch.float32, device=self.device)  # noqa: E731
        return f(X), f(t), f(event.astype(float))

    # -- objectives (per sample, on standardised time)
    def _elbo_terms(self, x, t, d, n_samples: int = 1, generator=None):
        """Per-sample ELBO averaged over ``n_samples`` reparameterised draws, shape ``(n,)``."""
        net = self.net_
        mean, logvar = net.encode(x, t, d)
        eps = torch.randn((n_samples, *mean.shape), generator=generator, dtype=mean.dtype, device=mean.device)
        z = mean + torch.exp(0.5 * logvar) * eps
        rec = _censored_loglik(t, d, net.decode(z, x), net.scale(x), self.primitive, self.beta).mean(0)
        kl = 0.5 * (mean.pow(2) + logvar.exp() - 1.0 - logvar).sum(-1)
        return rec - kl

    def _iwae_terms(self, x, t, d, K: int, generator=None):
        """Per-sample IWAE bound log (1/K) sum_k p(y, d | x, z_k) p(z_k) / q(z_k), shape ``(n,)``."""
        net = self.net_
        mean, logvar = net.encode(x, t, d)
        std = torch.exp(0.5 * logvar)
        eps = torch.randn((K, *mean.shape), generator=generator, dtype=mean.dtype, device=mean.device)
        z = mean + std * eps
        log_lik = _censored_loglik(t, d, net.decode(z, x), net.scale(x), self.primitive, self.beta)
        log_prior = (-0.5 * z.pow(2) - 0.5 * _LOG_2PI).sum(-1)
        log_q = (-0.5 * eps.pow(2) - 0.5 * _LOG_2PI - 0.5 * logvar).sum(-1)
        return torch.logsumexp(log_lik + log_prior - log_q, dim=0) - math.log(K)

    def _to_time_scale(self, per_sample: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        # density of the standardised time -> density of the (log-)time: subtract log(scale) for events
        return per_sample - d * math.log(self.t_scale_)

    # -- public API
    def fit(self, X, y, X_val=None, y_val=None) -> "CDCVAE":
        """Maximise the ELBO with Adam on minibatches; with validation data, keep the best weights.

        Every 2 epochs the validation ``criterion`` is scored (C_td as the official fit does, or the ELBO);
        the weights of the best score are kept, and training stops once the score has not improved for
        ``patience`` epochs. (The official fit means to do this, but compares the criterion with a misspelled
        name, so it never keeps a best model: see the doc.)

        Args:
            X: covariates ``(n, p)``.
            y: structured array (event indicator, time), e.g. ``sksurv.util.Surv.from_arrays``.
            X_val, y_val: optional validation data for model selection and early stopping.

        Returns:
            ``self``, with ``net_`` (the trained :class:`CDCVAENet`), ``history_`` (train loss per epoch),
            and with validation data ``val_history_`` (``(epoch, score)`` pairs), ``best_epoch_`` and
            ``best_score_``.

        Raises:
            ValueError: ``criterion="ctd"`` with no event in the training or the validation data (C_td is
                then undefined; use ``criterion="elbo"``).
        """
        self._check_params()
        for attr in ("n_features_in_", "net_", "val_history_", "best_epoch_", "best_score_"):
            self.__dict__.pop(attr, None)
        X = _check_X(X)
        event, time = split_survival_array(y)
        if len(event) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {len(event)}")
        t = self._transform_time(time)
        self.t_mean_, self.t_scale_ = float(t.mean()), float(t.std() if t.std() > 0 else 1.0)
        self.n_features_in_ = X.shape[1]
        x_t, t_t, d_t = self._tensors(X, y)
        val = self._tensors(X_val, y_val) if X_val is not None else None
        if val is not None and self.criterion == "ctd":
            from icml25.papers.cdvi.metrics import ctd_pycox

            if not event.any() or not split_survival_array(y_val)[0].any():
                raise ValueError("criterion='ctd' needs at least one event in the training and in the validation "
                                 "data; use criterion='elbo'")
            grid = np.unique(np.quantile(time[event], VAL_QUANTILES))

            def val_score() -> float:
                return ctd_pycox(y_val, self.predict_survival_function(X_val, grid), grid)
        elif val is not None:
            def val_score() -> float:
                return float(self._elbo_terms(*val, n_samples=4, generator=self._generator(4)).mean())
        device = torch.device(self.device)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(self.seed)
            self.net_ = CDCVAENet(X.shape[1], self.latent_dim, list(self.enc_hidden), list(self.dec_hidden),
                                  self.encoder, self.sigma).to(device)
            params = [p for p in self.net_.parameters() if p.requires_grad]
            opt = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
            n, self.history_ = X.shape[0], []
            if val is not None:
                self.val_history_ = []
            best, best_epoch, best_state = -math.inf, 0, None
            for epoch in range(self.epochs):
                perm, total = torch.randperm(n).to(device), 0.0  # CPU draws: one order on every device
                for i in range(0, n, self.batch_size):
                    idx = perm[i: i + self.batch_size]
                    loss = -self._elbo_terms(x_t[idx], t_t[idx], d_t[idx]).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach())
                self.history_.append(total / n)
                if val is not None and epoch % 2 == 0:
                    with torch.no_grad():
                        score = val_score()
                    self.val_history_.append((epoch, score))
                    if score > best:
                        best, best_epoch = score, epoch
                        best_state = {k: v.clone() for k, v in self.net_.state_dict().items()}
                    elif epoch - best_epoch > self.patience:
                        break
            if best_state is not None:
                self.net_.load_state_dict(best_state)
                self.best_epoch_, self.best_score_ = best_epoch, best
        self.net_.eval()
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "net_"):
            raise NotFittedError("this CDCVAE is not fitted yet: call fit(X, y) first")

    @torch.no_grad()
    def elbo(self, X, y, n_samples: int = 10) -> float:
        """Mean per-sample ELBO (nats, density of the (log-)time), each averaged over ``n_samples`` draws of z."""
        self._check_fitted()
        x, t, d = self._tensors(X, y)
        g = self._generator(1)
        return float(self._to_time_scale(self._elbo_terms(x, t, d, n_samples, g), d).mean())

    @torch.no_grad()
    def iwae_loglik(self, X, y, K: int = 100) -> float:
        """Mean per-sample importance-weighted bound log p_K(y, delta | x) with the encoder as proposal (K >= 1).

        ``K = 1`` is an unbiased single-sample ELBO; the bound increases with K towards log p(y, delta | x).
        """
        self._check_fitted()
        if int(K) < 1:
            raise ValueError(f"K must be >= 1, got {K!r}")
        x, t, d = self._tensors(X, y)
        g = self._generator(2)
        return float(self._to_time_scale(self._iwae_terms(x, t, d, int(K), g), d).mean())

    @torch.no_grad()
    def encode(self, X, y) -> tuple[np.ndarray, np.ndarray]:
        """Mean and log-variance of q(z | x, y[, delta]), each ``(n, latent_dim)``."""
        self._check_fitted()
        mean, logvar = self.net_.encode(*self._tensors(X, y))
        return mean.cpu().numpy(), logvar.cpu().numpy()

    @torch.no_grad()
    def predict_survival_function(self, X, times) -> np.ndarray:
        """S(t | x) = E_{z ~ N(0, I)} S(t | x, z) by ``n_mc`` Monte Carlo draws; returns ``(n, len(times))``."""
        self._check_fitted()
        x = torch.as_tensor(_check_X(X, self.n_features_in_), dtype=torch.float32, device=self.device)
        times = np.atleast_1d(np.asarray(times, dtype=float))
        if times.ndim != 1:
            raise ValueError(f"times must be 1-D, got shape {times.shape}")
        if self.log_time:  # S(t) = 1 for t <= 0
            with np.errstate(divide="ignore"):
                tt = np.log(np.where(times > 0, times, 0.0))
        else:
            tt = times
        tt = torch.as_tensor((tt - self.t_mean_) / self.t_scale_, dtype=torch.float32, device=x.device)
        z = torch.randn((self.n_mc, x.shape[0], self.latent_dim), generator=self._generator(3), device=x.device)
        loc = self.net_.decode(z, x)[..., None].double()  # (n_mc, n, 1)
        scale = self.net_.scale(x).double()
        scale = scale[:, None] if scale.ndim == 1 else scale
        tt = tt.double()
        chunk = max(1, 2_000_000 // (self.n_mc * x.shape[0]))  # bound memory: n_mc * n * chunk doubles
        return torch.cat([torch.exp(primitive_logsf(tt[i: i + chunk], loc, scale, self.primitive)).mean(0)
                          for i in range(0, len(tt), chunk)], dim=1).cpu().numpy()


# ----------------------------------------------------------------------------- reference baseline
def survival_target(y) -> tuple[np.ndarray, np.ndarray]:
    """(event, time) from any survival-target layout the estimators here accept.

    * a structured array with two fields (event indicator, time), as :func:`make_survival_array` and
      ``sksurv.util.Surv`` make;
    * a 2-D array with two columns ``(time, event)`` (the lifelines order: duration, then indicator);
    * a 1-D array (or an ``(n, 1)`` column, with a ``DataConversionWarning``) of times, all observed events.

    Returns ``event`` (bool, ``(n,)``) and ``time`` (float, ``(n,)``); finiteness of the times is left to
    the caller's ``validate_data``. Raises ``ValueError`` on any other shape or a non-0/1 indicator.
    """
    arr = np.asarray(y)
    if arr.dtype.names is not None:
        names = arr.dtype.names
        if len(names) != 2 or arr.ndim != 1:
            raise ValueError("a structured y must be 1-D with two fields (event indicator, time), "
                             "e.g. from make_survival_array or sksurv.util.Surv")
        event, time = np.asarray(arr[names[0]]), np.asarray(arr[names[1]], dtype=float)
    elif arr.ndim == 2 and arr.shape[1] == 2:
        time, event = np.asarray(arr[:, 0], dtype=float), arr[:, 1]
    elif arr.ndim == 1 or (arr.ndim == 2 and arr.shape[1] == 1):
        if arr.ndim == 2:
            warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape "
                          "of y to (n_samples,), for example using ravel().", DataConversionWarning, stacklevel=3)
        time = np.asarray(arr.reshape(-1), dtype=float)
        event = np.ones(time.shape[0], dtype=bool)
    else:
        raise ValueError(f"y must be a structured (event, time) array, an (n, 2) array of (time, event) or "
                         f"an (n,) array of event times, got shape {arr.shape}")
    if not np.all(np.isin(event, (0, 1, True, False))):
        raise ValueError("the event indicator of y must hold only 0/1 or booleans")
    return event.astype(bool), time


class LogNormalAFT(RegressorMixin, BaseEstimator):
    """Log-normal accelerated failure time model by maximum likelihood (the CD-CVAE decoder with no latent).

    log T = X b + b0 + s * eps, eps ~ N(0, 1); censored samples contribute log Phi(-r). Fitted with L-BFGS
    on the exact gradient. With no censoring this is ordinary least squares on log T with s^2 = RSS / n.

    A scikit-learn regressor: ``fit(X, y)`` takes covariates ``X`` ``(n, p)`` and a survival target ``y``
    in any layout of :func:`survival_target`: a structured (event, time) array, an ``(n, 2)`` array of
    ``(time, event)`` columns, or an ``(n,)`` array of fully observed times. ``predict`` returns the
    median survival time ``exp(x b + b0)`` (``x b + b0`` with ``log_time=False``, where median and mean
    agree); ``score`` is the R^2 of that prediction and needs uncensored targets (use :meth:`loglik` for
    censored data).

    Args:
        log_time: model log(time) (default; times must be > 0); ``False`` models the time as given (normal AFT).
        max_iter: L-BFGS iterations.

    Attributes (after ``fit``): ``coef_`` ``(p,)``, ``intercept_``, ``scale_`` (s), ``loglik_`` (total
    training log-likelihood), ``n_iter_`` (L-BFGS iterations run), ``n_features_in_``.
    """

    def __init__(self, log_time: bool = True, max_iter: int = 500):
        self.log_time = log_time
        self.max_iter = max_iter

    def _negloglik(self, theta, X1, t, d):
        beta, log_s = theta[:-1], theta[-1]
        s = math.exp(log_s)
        r = (t - X1 @ beta) / s
        lsf = special.log_ndtr(-r)
        ll = np.where(d, -0.5 * r * r - log_s - 0.5 * _LOG_2PI, lsf)
        # d ll / d r: events -r; censored -phi(r)/Phi(-r)
        dr = np.where(d, -r, -np.exp(-0.5 * r * r - 0.5 * _LOG_2PI - lsf))
        g_beta = -(X1.T @ dr) / s
        g_logs = float(np.sum(-dr * r) - np.sum(d))
        return -float(ll.sum()), -np.append(g_beta, g_logs)

    def _data(self, X, y, reset: bool):
        """Validated ``(X, event, t)`` with ``t`` the modelled (log-)time."""
        if y is None:  # validate_data raises scikit-learn's "requires y" error
            validate_data(self, X, y, reset=reset)
        event, time = survival_target(y)
        X, time = validate_data(self, X, time, reset=reset, dtype=np.float64, y_numeric=True)
        if self.log_time:
            if np.any(time <= 0):
                raise ValueError(f"log_time=True needs positive times, got min {time.min()!r}")
            return X, event, np.log(time)
        return X, event, time

    def fit(self, X, y) -> "LogNormalAFT":
        """Maximum-likelihood fit; sets ``coef_``, ``intercept_`` and ``scale_``. See the class for ``y``'s layout."""
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        X, d, t = self._data(X, y, reset=True)
        X1 = np.column_stack([X, np.ones(len(t))])
        theta0 = np.zeros(X1.shape[1] + 1)
        theta0[-2], theta0[-1] = t.mean(), math.log(t.std() + 1e-12)
        res = optimize.minimize(self._negloglik, theta0, args=(X1, t, d), jac=True, method="L-BFGS-B",
                                options={"maxiter": self.max_iter})
        self.coef_, self.intercept_, self.scale_ = res.x[:-2], float(res.x[-2]), float(math.exp(res.x[-1]))
        self.loglik_ = -float(res.fun)
        self.n_iter_ = int(res.nit)
        return self

    def _check_fitted(self) -> None:
        check_is_fitted(self, "coef_", msg="this %(name)s is not fitted yet: call fit(X, y) first")

    def _location(self, X) -> np.ndarray:
        """x b + b0, the mean (and median) of the modelled (log-)time, shape ``(n,)``."""
        self._check_fitted()
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_

    def predict(self, X) -> np.ndarray:
        """Median survival time ``exp(x b + b0)`` (``x b + b0`` when ``log_time=False``), shape ``(n,)``."""
        mu = self._location(X)
        return np.exp(mu) if self.log_time else mu

    def score(self, X, y, sample_weight=None) -> float:
        """R^2 of :meth:`predict` against fully observed times (any layout of :func:`survival_target`)."""
        event, time = survival_target(y)
        if not event.all():
            raise ValueError("score (R^2 of the predicted median) needs uncensored times; "
                             "use loglik(X, y) for censored data")
        return float(r2_score(time, self.predict(X), sample_weight=sample_weight))

    def loglik(self, X, y) -> float:
        """Mean per-sample censored log-likelihood (density of the (log-)time)."""
        self._check_fitted()
        X, d, t = self._data(X, y, reset=False)
        X1 = np.column_stack([X, np.ones(len(t))])
        theta = np.append(np.append(self.coef_, self.intercept_), math.log(self.scale_))
        return -self._negloglik(theta, X1, t, d)[0] / len(t)

    def predict_survival_function(self, X, times) -> np.ndarray:
        """S(t | x) = Phi(-(log t - x b - b0) / s); returns ``(n, len(times))``."""
        mu = self._location(X)
        times = np.atleast_1d(np.asarray(times, dtype=float))
        if times.ndim != 1 or np.isnan(times).any():
            raise ValueError(f"times must be a 1-D array of numbers, got shape {times.shape}")
        tt = np.log(np.maximum(times, 1e-300)) if self.log_time else times
        return special.ndtr(-(tt[None, :] - mu[:, None]) / self.scale_)
