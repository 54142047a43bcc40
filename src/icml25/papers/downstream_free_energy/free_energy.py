"""Localised SGLD, the local learning coefficient (LLC) and the pretraining free energy (WBIC).

Munn & Wei, "A Bayesian Model Selection Criterion for Selecting Pretraining Checkpoints",
ICML 2025 (arXiv 2410.05612), Sec. 5. For a checkpoint w* = (v*, theta*) trained on n samples
with mean negative log-likelihood L_n, the pretraining free energy localised to a ball around
the checkpoint is

    F0(B_gamma(w*); beta) = -log  int exp(-n beta L_n(w)) phi(w) dw,

and it is estimated with a localised WBIC (Watanabe 2013): at beta* = 1 / log n,

    F_hat = n E_{beta*}[L_n]  = n L_n(w*) + lambda_hat log n,
    lambda_hat = n beta* (E_{beta*}[L_n] - L_n(w*))            (the LLC estimator),

where the expectation is over the tempered, localised posterior
p(theta) ∝ exp(-n beta* L_n(v*, theta) - gamma/2 ||theta - theta*||^2), sampled with minibatch
SGLD (Welling & Teh 2011):

    theta <- theta + eps/2 [ -n beta grad L_B(theta) - gamma (theta - theta*) ] + N(0, eps I).

Only the parameters named by ``params`` move ("backbone" = everything outside ``model.head``),
the others stay at the checkpoint (the paper's B_gamma(w*) moves theta with v* fixed).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from icml25.common.checks import check_fields

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``loss_fn(model_output, targets) -> scalar mean loss`` (a mean negative log-likelihood)."""


def check_positive(name: str, value: float, allow_zero: bool = False) -> float:
    """Return ``float(value)`` or raise ``ValueError`` naming ``name`` if it is not (strictly) positive."""
    value = float(value)
    ok = value >= 0 if allow_zero else value > 0
    if not (math.isfinite(value) and ok):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return value


def check_count(name: str, value: int, minimum: int = 1) -> int:
    """Return ``int(value)`` or raise ``ValueError`` naming ``name`` if it is not an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or int(value) != value or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_xy(data: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``data`` is ``(X, y)``: two tensors with the same, non-zero number of rows and finite inputs."""
    if len(data) != 2 or not all(isinstance(t, torch.Tensor) for t in data):
        raise TypeError("data must be a tuple (X, y) of tensors")
    X, y = data
    if X.shape[0] == 0 or y.shape[0] != X.shape[0]:
        raise ValueError(f"data must be non-empty with as many targets as inputs, got {X.shape[0]} and {y.shape[0]}")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError("X must be finite (found NaN or inf)")
    return X, y


def select_parameters(model: nn.Module, params: str | Iterable[str] = "backbone") -> list[tuple[str, nn.Parameter]]:
    """The (name, parameter) pairs that SGLD moves.

    Args:
        model: any ``nn.Module``.
        params: ``"all"``; ``"backbone"`` (every parameter outside the submodule ``model.head``,
            which must exist); or an iterable of parameter names.
    """
    named = dict(model.named_parameters())
    if params == "all":
        chosen = list(named)
    elif params == "backbone":
        if not isinstance(getattr(model, "head", None), nn.Module):
            raise ValueError("params='backbone' needs the model to have a submodule `head` (the pretraining head)")
        chosen = [k for k in named if not k.startswith("head.")]
    elif isinstance(params, str):
        raise ValueError(f"params must be 'all', 'backbone' or a list of parameter names, got {params!r}")
    else:
        chosen = list(params)
        unknown = [k for k in chosen if k not in named]
        if unknown:
            raise ValueError(f"unknown parameter name {unknown[0]!r}; the model has {sorted(named)}")
    if not chosen:
        raise ValueError("no parameters selected for sampling")
    return [(k, named[k]) for k in chosen]


class SGLD(torch.optim.Optimizer):
    """Localised, tempered SGLD as a torch optimizer.

    One ``step()`` after ``loss.backward()`` (loss = minibatch mean NLL) applies
    ``p <- p - eps/2 (nbeta grad + gamma (p - p0)) + sqrt(eps) xi``, xi ~ N(0, I),
    with p0 the parameter values when the optimizer was built.

    Args:
        params: the parameters to sample (the rest of the model stays fixed).
        eps: step size (> 0).
        nbeta: n * beta, the inverse temperature times the sample size (>= 0; 0 samples the prior).
        gamma: localisation strength of the Gaussian prior N(p0, I / gamma) (> 0).
        generator: ``torch.Generator`` for the noise (determinism).
    """

    def __init__(self, params: Iterable[nn.Parameter], eps: float, nbeta: float, gamma: float,
                 generator: torch.Generator | None = None) -> None:
        eps = check_positive("eps", eps)
        nbeta = check_positive("nbeta", nbeta, allow_zero=True)
        gamma = check_positive("gamma", gamma)
        super().__init__(params, dict(eps=eps, nbeta=nbeta, gamma=gamma))
        self.generator = generator
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["center"] = p.detach().clone()

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # noqa: D102
        for group in self.param_groups:
            eps, nbeta, gamma = group["eps"], group["nbeta"], group["gamma"]
            for p in group["params"]:
                drift = gamma * (p - self.state[p]["center"])
                if p.grad is not None and nbeta > 0:
                    drift = drift + nbeta * p.grad
                # drawn where the generator lives (the parameter's device without one), then moved there
                where = p.device if self.generator is None else self.generator.device
                noise = torch.randn(p.shape, generator=self.generator, dtype=p.dtype, device=where).to(p.device)
                p.add_(-0.5 * eps * drift + math.sqrt(eps) * noise)


def _dataset_size_and_batches(loader: Any, batch_size: int, generator: torch.Generator) -> tuple[int, Iterator]:
    """``loader`` is a tuple ``(X, y)`` of tensors (minibatches drawn here) or an iterable of batches."""
    if isinstance(loader, (tuple, list)) and len(loader) == 2 and all(isinstance(t, torch.Tensor) for t in loader):
        X, y = _check_xy(loader)
        n = X.shape[0]
        batch_size = min(check_count("batch_size", batch_size), n)

        def batches() -> Iterator:
            while True:
                perm = torch.randperm(n, generator=generator)
                for start in range(0, n - batch_size + 1, batch_size):
                    idx = perm[start:start + batch_size]
                    yield X[idx], y[idx]
        return n, batches()
    dataset = getattr(loader, "dataset", None)
    if dataset is None:
        raise ValueError("loader must be a tuple (X, y) of tensors or a DataLoader with a .dataset")
    n = len(dataset)

    def cycle() -> Iterator:
        while True:
            yield from loader
    return n, cycle()


def full_loss(model: nn.Module, loss_fn: LossFn, loader: Any) -> float:
    """Mean loss over the whole data set (``(X, y)`` tensors or a DataLoader)."""
    with torch.no_grad():
        if isinstance(loader, (tuple, list)):
            X, y = _check_xy(loader)
            return float(loss_fn(model(X), y))
        total, count = 0.0, 0
        for xb, yb in loader:
            total += float(loss_fn(model(xb), yb)) * len(xb)
            count += len(xb)
        return total / count


def default_nbeta(n: int) -> float:
    """n beta* with the WBIC temperature beta* = 1 / log n."""
    if n < 2:
        raise ValueError(f"the WBIC temperature 1/log n needs n >= 2 samples, got {n}")
    return n / math.log(n)


@dataclass(frozen=True)
class SGLDConfig:
    """Settings of the localised SGLD that estimates the pretraining free energy and the LLC (the WBIC estimator of
    Sec. 5.2, second-hand; the paper's own SGLD settings, App. D.1, were not seen): the keywords of
    :func:`sgld_sample`, passed on by :func:`pretraining_free_energy` and :func:`llc_estimate`
    (``pretraining_free_energy(model, loss_fn, data, **cfg.kwargs())``).

    The defaults are the reproduction's quick settings, frozen before any correlation was seen.
    """

    eps: float = 3e-5
    """SGLD step size (card range 1e-5 to 1e-4)."""
    gamma: float = 100.0
    """Localisation strength gamma of the Gaussian prior around the checkpoint's backbone."""
    n_chains: int = 2
    """SGLD chains per checkpoint."""
    n_burnin: int = 100
    """Discarded SGLD steps per chain."""
    n_draws: int = 200
    """Recorded SGLD steps per chain."""
    batch_size: int = 128
    """SGLD minibatch size."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("n_chains", "n_burnin", "n_draws", "batch_size"),
                     positive=("eps", "gamma", "n_chains", "n_draws", "batch_size"), nonnegative=("n_burnin",))
        # bounds: a job beyond these would need days
        check_fields(self, at_most={"n_chains": 10**4, "n_burnin": 10**7, "n_draws": 10**7, "batch_size": 10**5})

    def kwargs(self) -> dict[str, Any]:
        """The settings as keywords of :func:`sgld_sample`."""
        return asdict(self)


def sgld_sample(model: nn.Module, loss_fn: LossFn, loader: Any, params: str | Iterable[str] = "backbone",
                nbeta: float | None = None, gamma: float = 100.0, eps: float = 1e-4, n_chains: int = 4,
                n_burnin: int = 100, n_draws: int = 200, batch_size: int = 256, seed: int = 0,
                record_params: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Run localised SGLD chains from the checkpoint ``model`` and record minibatch losses.

    The model itself is not modified (each chain samples a deep copy).

    Args:
        model: the checkpoint w*.
        loss_fn: ``loss_fn(output, y)`` -> mean NLL of a batch.
        loader: ``(X, y)`` tensors (minibatches of ``batch_size`` drawn without replacement per epoch)
            or a DataLoader (its batches are used in order, cyclically).
        params: which parameters move, see :func:`select_parameters`.
        nbeta: n * beta; default n / log n (WBIC).
        gamma: localisation strength.
        eps: SGLD step size.
        n_chains, n_burnin, n_draws: chains, discarded steps and recorded steps per chain.
        batch_size: minibatch size when ``loader`` is ``(X, y)``.
        seed: seeds the noise and the minibatch order.
        record_params: also return the flattened sampled parameters at every draw.

    Returns:
        ``losses`` of shape ``(n_chains, n_draws)``: the minibatch loss at the iterate before each
        recorded step; with ``record_params`` also ``draws`` of shape ``(n_chains, n_draws, d)``.
    """
    n_chains = check_count("n_chains", n_chains)
    n_burnin = check_count("n_burnin", n_burnin, minimum=0)
    n_draws = check_count("n_draws", n_draws)
    eps = check_positive("eps", eps)
    gamma = check_positive("gamma", gamma)
    gen = torch.Generator().manual_seed(int(seed))
    n, batches = _dataset_size_and_batches(loader, batch_size, gen)
    nbeta = default_nbeta(n) if nbeta is None else check_positive("nbeta", nbeta, allow_zero=True)
    losses = np.empty((n_chains, n_draws))
    draws = []
    for c in range(n_chains):
        chain_model = copy.deepcopy(model)
        chosen = select_parameters(chain_model, params)
        chosen_ids = {id(p) for _, p in chosen}
        for p in chain_model.parameters():
            p.requires_grad_(id(p) in chosen_ids)
        opt = SGLD([p for _, p in chosen], eps=eps, nbeta=nbeta, gamma=gamma, generator=gen)
        chain_draws = []
        for t in range(n_burnin + n_draws):
            xb, yb = next(batches)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(chain_model(xb), yb)
            if nbeta > 0:
                loss.backward()
            value = loss.item()
            if not math.isfinite(value):
                raise FloatingPointError(f"SGLD diverged in chain {c} at step {t} (loss {value}); lower eps")
            if t >= n_burnin:
                losses[c, t - n_burnin] = value
                if record_params:
                    chain_draws.append(torch.cat([p.detach().reshape(-1) for _, p in chosen]).cpu().numpy().copy())
            opt.step()
        if record_params:
            draws.append(np.stack(chain_draws))
    if record_params:
        return losses, np.stack(draws)
    return losses


def llc_estimate(model: nn.Module, loss_fn: LossFn, loader: Any, nbeta: float | None = None,
                 **sgld_kwargs: Any) -> tuple[float, float]:
    """Local learning coefficient lambda_hat = n beta (E_beta[L_n] - L_n(w*)) and its standard error.

    The standard error is the spread of the per-chain estimates over sqrt(n_chains) (nan with one chain).
    ``sgld_kwargs`` go to :func:`sgld_sample`.
    """
    lam, se, _, _ = _llc_parts(model, loss_fn, loader, nbeta, **sgld_kwargs)
    return lam, se


def _llc_parts(model: nn.Module, loss_fn: LossFn, loader: Any, nbeta: float | None,
               **sgld_kwargs: Any) -> tuple[float, float, float, float]:
    n, _ = _dataset_size_and_batches(loader, 1, torch.Generator())
    nbeta = default_nbeta(n) if nbeta is None else check_positive("nbeta", nbeta)
    losses = sgld_sample(model, loss_fn, loader, nbeta=nbeta, **sgld_kwargs)
    l_star = full_loss(model, loss_fn, loader)
    per_chain = nbeta * (losses.mean(axis=1) - l_star)
    se = float(per_chain.std(ddof=1) / math.sqrt(len(per_chain))) if len(per_chain) > 1 else math.nan
    return float(per_chain.mean()), se, l_star, nbeta


def pretraining_free_energy(model: nn.Module, loss_fn: LossFn, data: Any, beta_star: float | None = None,
                            **sgld_kwargs: Any) -> tuple[float, float, float]:
    """Localised WBIC estimate of the pretraining free energy of checkpoint ``model``.

    Args:
        model: the pretrained checkpoint (``params="backbone"`` by default localises to the backbone).
        loss_fn: mean NLL of a batch (e.g. ``nn.functional.cross_entropy``).
        data: the pretraining data, ``(X, y)`` tensors or a DataLoader.
        beta_star: inverse temperature; default 1 / log n (Watanabe's WBIC).
        **sgld_kwargs: forwarded to :func:`sgld_sample` (``gamma``, ``eps``, ``n_chains`` ...).

    Returns:
        ``(F_hat, lambda_hat, L_star)`` with ``F_hat = n L_star + lambda_hat / beta_star``
        (``= n L_star + lambda_hat log n`` at the default temperature), ``L_star = L_n(w*)``.
    """
    n, _ = _dataset_size_and_batches(data, 1, torch.Generator())
    beta = 1.0 / math.log(n) if beta_star is None else check_positive("beta_star", beta_star)
    lam, _, l_star, _ = _llc_parts(model, loss_fn, data, n * beta, **sgld_kwargs)
    return n * l_star + lam / beta, lam, l_star


def hessian_trace(model: nn.Module, loss_fn: LossFn, data: tuple[torch.Tensor, torch.Tensor],
                  params: str | Iterable[str] = "backbone", n_probes: int = 20, seed: int = 0) -> float:
    """Hutchinson estimate tr(H) ~ mean_k v_k^T H v_k (Rademacher v_k) of the full-data loss Hessian
    with respect to the selected parameters (the Hessian-trace baseline, Liu et al. 2023)."""
    n_probes = check_count("n_probes", n_probes)
    chosen = [p for _, p in select_parameters(model, params)]
    X, y = _check_xy(data)
    loss = loss_fn(model(X), y)
    grads = torch.autograd.grad(loss, chosen, create_graph=True)
    gen = torch.Generator().manual_seed(int(seed))
    total = 0.0
    for k in range(n_probes):
        vs = [torch.randint(0, 2, p.shape, generator=gen).to(device=p.device, dtype=p.dtype) * 2 - 1 for p in chosen]
        hv = torch.autograd.grad(grads, chosen, grad_outputs=vs, retain_graph=k < n_probes - 1)
        total += float(sum((h * v).sum() for h, v in zip(hv, vs)))
    return total / n_probes
