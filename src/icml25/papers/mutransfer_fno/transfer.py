"""Training, learning-rate sweeps over the mode count K, and the transfer regret of muTransfer-FNO.

Algorithm 1 of the paper: tune on a proxy FNO with K_proxy modes, move the spectral LR and init
variance to K* with ``transfer_hyperparameters`` (here implicit: a muP model is built with
``k_base = K_proxy`` and uses the *same* base LR), train the target once. ``lr_sweep`` measures
whether that works: the test error of every (parametrization, K, LR) cell on the same data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from icml25.papers.mutransfer_fno.fno import COMPLEX_INITS, FNO, clip_grad_elementwise_, mup_param_groups, relative_l2

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class TrainSettings:
    """Everything but the LR, K and parametrization; shared by every cell of a sweep (the experiment nests it as
    ``train``: ``--set train.width=...``)."""

    width: int = 64
    """Hidden width m (64, the paper's Burgers FNO, second-hand: see the row's doc)."""
    n_layers: int = 4
    """Fourier layers."""
    epochs: int = 25
    """Passes over the training set."""
    batch_size: int = 20
    """Minibatch size."""
    k_base: int = 4
    """Mode count where SP and muP coincide (the proxy's K, K_proxy of Algorithm 1)."""
    clip: float | None = 0.01
    """Element-wise gradient clip value (``None``: no clipping)."""
    cosine: bool = True
    """Cosine-anneal the LR to 0 over training (else constant)."""
    complex_init: str = "per_part"
    """Init of R: ``"per_part"`` (each part std b) or ``"complex_normal"`` (neuraloperator, E|R|^2 = b^2)."""
    beta2: float = 0.98
    """Adam's second-moment decay (0.98, the paper's recipe, second-hand; PyTorch's default is 0.999)."""

    def __post_init__(self) -> None:
        for name in ("width", "n_layers", "epochs", "batch_size", "k_base"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"TrainSettings.{name} must be a positive integer, got {value!r}")
        if self.complex_init not in COMPLEX_INITS:
            raise ValueError(f"TrainSettings.complex_init must be one of {COMPLEX_INITS}, got {self.complex_init!r}")
        if self.clip is not None and not self.clip > 0:
            raise ValueError(f"TrainSettings.clip must be positive or None, got {self.clip!r}")
        if isinstance(self.beta2, bool) or not isinstance(self.beta2, (int, float)) or not 0 <= self.beta2 < 1:
            raise ValueError(f"TrainSettings.beta2 must be in [0, 1), got {self.beta2!r}")


def _check_data(a_train, u_train, a_test, u_test) -> int:
    """Inputs and targets are (n, res) tensors (1-D grids; (n, s1, s2) or (n, s1, s2, s3) for 2-D or 3-D) with
    matching shapes, on one device; returns the grid dimension d."""
    for name, a, u in (("train", a_train, u_train), ("test", a_test, u_test)):
        if not (isinstance(a, torch.Tensor) and isinstance(u, torch.Tensor)):
            raise TypeError(f"a_{name} and u_{name} must be tensors")
        if a.ndim not in (2, 3, 4) or a.shape != u.shape or len(a) == 0:
            raise ValueError(f"a_{name} and u_{name} must be non-empty (n, res) tensors of one shape (or (n, s1, s2), "
                             f"(n, s1, s2, s3)), got {tuple(a.shape)} and {tuple(u.shape)}")
    if a_train.shape[1:] != a_test.shape[1:]:
        raise ValueError(f"train and test grids differ: {tuple(a_train.shape[1:])} and {tuple(a_test.shape[1:])} "
                         f"points")
    return a_train.ndim - 1


def train_fno(a_train: torch.Tensor, u_train: torch.Tensor, a_test: torch.Tensor, u_test: torch.Tensor, *,
              modes: int, param: str, lr: float, settings: TrainSettings, seed: int) -> float:
    """Train an FNO with Adam on the relative L2 loss; return the mean test relative L2 error.

    Inputs are (n, res) tensors (a 1-D FNO), or (n, s1, s2) / (n, s1, s2, s3) for a 2-D / 3-D FNO; the model is
    built on the CPU (the same init on every device) and trained on ``a_train``'s device. The seed fixes the init
    and the minibatch order, so two calls with the same seed that build the same model (e.g. SP and muP at
    K = k_base) are bit-identical.
    A diverged run (non-finite loss) returns ``inf``.
    """
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    d = _check_data(a_train, u_train, a_test, u_test)
    device = a_train.device
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = FNO(d, 1, 1, width=settings.width, n_layers=settings.n_layers, modes=modes, param=param,
                k_base=settings.k_base, complex_init=settings.complex_init).to(device)
    opt = torch.optim.Adam(mup_param_groups(model, lr), betas=(0.9, settings.beta2))
    n = a_train.shape[0]
    steps_per_epoch = math.ceil(n / settings.batch_size)
    total = settings.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, total) if settings.cosine else None
    x_train, y_train = a_train[..., None], u_train[..., None]
    for _ in range(settings.epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(steps_per_epoch):
            idx = perm[i * settings.batch_size:(i + 1) * settings.batch_size].to(device)
            loss = relative_l2(model(x_train[idx]), y_train[idx]).mean()
            if not torch.isfinite(loss):
                return math.inf
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if settings.clip is not None:
                clip_grad_elementwise_(model, settings.clip)
            opt.step()
            if sched is not None:
                sched.step()
    with torch.no_grad():
        err = relative_l2(model(a_test[..., None]), u_test[..., None]).mean().item()
    return err if math.isfinite(err) else math.inf


def _member_lrs(model: torch.nn.Module, lr: float) -> dict[str, float]:
    """Per-parameter Adam LR of one model under ``mup_param_groups`` (name -> lr)."""
    lr_of = {id(p): g["lr"] for g in mup_param_groups(model, lr) for p in g["params"]}
    return {name: lr_of[id(p)] for name, p in model.named_parameters()}


def train_fno_lr_grid(a_train: torch.Tensor, u_train: torch.Tensor, a_test: torch.Tensor, u_test: torch.Tensor, *,
                      modes: int, params: Sequence[str], lrs: Sequence[float], settings: TrainSettings,
                      seed: int) -> np.ndarray:
    """Train one FNO per (param, lr) at once, as a ``torch.func.vmap`` ensemble; return test errors (P, L).

    Every member starts from the same random draws (muP weights are the SP draws times the muP
    factor) and sees the same minibatches: the LR curves are paired, which makes their argmins far
    less noisy than independent runs. Each member is updated by Adam with its own per-parameter LR
    (``mup_param_groups``), element-wise clipping and the shared cosine schedule, exactly as
    ``train_fno`` would train it alone (tested to agree). The members are built on the CPU and trained
    on ``a_train``'s device.
    """
    from torch.func import functional_call, stack_module_state, vmap

    if len(params) == 0 or len(lrs) == 0 or any(not lr > 0 for lr in lrs):
        raise ValueError(f"need at least one param and positive lrs, got {params!r}, {lrs!r}")
    d = _check_data(a_train, u_train, a_test, u_test)
    device = a_train.device
    members, lr_maps = [], []
    for param in params:
        for lr in lrs:
            torch.manual_seed(seed)
            model = FNO(d, 1, 1, width=settings.width, n_layers=settings.n_layers, modes=modes, param=param,
                        k_base=settings.k_base, complex_init=settings.complex_init).to(device)
            members.append(model)
            lr_maps.append(_member_lrs(model, lr))
    weights, buffers = stack_module_state(members)
    names = list(weights)
    lr_t = {n: torch.tensor([m[n] for m in lr_maps], device=device).view((-1,) + (1,) * (weights[n].dim() - 1))
            for n in names}
    base = members[0].to("meta")
    n_members = len(members)

    def forward(w, b, x):
        return functional_call(base, (w, b), (x,))

    batched = vmap(forward, in_dims=(0, 0, None))
    state = {n: (torch.zeros_like(weights[n]), torch.zeros_like(weights[n])) for n in names}
    beta1, beta2, eps = 0.9, settings.beta2, 1e-8  # as train_fno's torch.optim.Adam
    gen = torch.Generator().manual_seed(seed)
    n = a_train.shape[0]
    steps_per_epoch = math.ceil(n / settings.batch_size)
    total = settings.epochs * steps_per_epoch
    x_train, y_train = a_train[..., None], u_train[..., None]
    tile = (n_members,) + (1,) * (d + 1)  # the targets, once per member
    step = 0
    for _ in range(settings.epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(steps_per_epoch):
            idx = perm[i * settings.batch_size:(i + 1) * settings.batch_size].to(device)
            out = batched(weights, buffers, x_train[idx])  # (members, batch, *grid, 1)
            loss = relative_l2(out.flatten(0, 1), y_train[idx].repeat(tile)).view(n_members, -1)
            grads = torch.autograd.grad(loss.mean(1).sum(), [weights[k] for k in names])
            # cosine schedule as CosineAnnealingLR: factor for the step being taken
            sched = 0.5 * (1 + math.cos(math.pi * step / total)) if settings.cosine else 1.0
            step += 1
            with torch.no_grad():
                for name, g in zip(names, grads):
                    if settings.clip is not None:
                        g = g.clamp(-settings.clip, settings.clip)
                    m, v = state[name]
                    m.mul_(beta1).add_(g, alpha=1 - beta1)
                    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                    denom = (v.sqrt() / math.sqrt(1 - beta2**step)).add_(eps)
                    weights[name].sub_(lr_t[name] * sched / (1 - beta1**step) * m / denom)
    with torch.no_grad():
        out = batched(weights, buffers, a_test[..., None])
        err = relative_l2(out.flatten(0, 1), u_test[..., None].repeat(tile)).view(n_members, -1)
        err = err.mean(1).cpu().numpy().astype(float)
    err[~np.isfinite(err)] = np.inf
    return err.reshape(len(params), len(lrs))


def _pandas():
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("lr_sweep and transfer_regret return pandas objects: pip install 'icml25[tables]'") from exc
    return pandas


def lr_sweep(data: tuple, params: Sequence[str], ks: Sequence[int], lrs: Sequence[float], seeds: Sequence[int],
             settings: TrainSettings | None = None,
             progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Test error of every (param, K, lr, seed) cell on the same data.

    Args:
        data: ``(a_train, u_train, a_test, u_test)`` arrays or tensors of shape (n, res) (or (n, s1, s2) for a
            2-D FNO, (n, s1, s2, s3) for a 3-D one).
        params: parametrizations, e.g. ``("sp", "mup")``.
        ks: mode counts. lrs: base learning rates. seeds: training seeds.
    Returns:
        DataFrame with columns param, K, lr, seed, test_err.
    """
    pd = _pandas()
    settings = settings or TrainSettings()
    if min(len(params), len(ks), len(lrs), len(seeds)) == 0:
        raise ValueError("params, ks, lrs and seeds must all be non-empty")
    # tensors keep their device (the sweep trains there); arrays and lists become CPU tensors
    a_tr, u_tr, a_te, u_te = (torch.as_tensor(x if isinstance(x, torch.Tensor) else np.asarray(x),
                                              dtype=torch.float32) for x in data)
    rows, total, done = [], len(ks) * len(seeds), 0
    for k in ks:
        # at K = k_base SP and muP are the same model with the same LRs (bit-identical): train it once
        todo = list(dict.fromkeys("sp" if k == settings.k_base else p for p in params))
        for s in seeds:
            err = train_fno_lr_grid(a_tr, u_tr, a_te, u_te, modes=k, params=todo, lrs=lrs, settings=settings, seed=s)
            for param in params:
                row = err[todo.index("sp" if k == settings.k_base else param)]
                rows.extend({"param": param, "K": k, "lr": lr, "seed": s, "test_err": float(e)}
                            for lr, e in zip(lrs, row))
            done += 1
            if progress is not None:
                progress(done, total)
    return pd.DataFrame(rows)


def optimum_index(errors: Sequence[float]) -> float:
    """Grid index of the minimum, refined by a parabola through log-errors at the argmin and its neighbours.

    The vertex is clipped to within half a step of the discrete argmin; an argmin at the edge of
    the grid is returned as is. On a geometric LR grid this is log(lr*) in grid steps. Errors must be
    positive; ``inf`` marks a diverged run.
    """
    errors = np.asarray(errors, dtype=float)
    if errors.ndim != 1 or errors.size < 1:
        raise ValueError("errors must be a non-empty 1-D sequence")
    if not np.all(errors > 0):  # also rejects NaN
        raise ValueError(f"errors must be positive (inf for a diverged run), got {errors}")
    e = np.log(errors)
    i = int(np.argmin(e))
    if i == 0 or i == e.size - 1 or not np.all(np.isfinite(e[i - 1:i + 2])):
        return float(i)
    left, mid, right = e[i - 1], e[i], e[i + 1]
    curv = left - 2 * mid + right
    if curv <= 0:
        return float(i)
    return float(i + np.clip(0.5 * (left - right) / curv, -0.5, 0.5))


def transfer_regret(df: pd.DataFrame, k_proxy: int, k_target: int, param: str | None = None) -> pd.Series | float:
    """err(K_target at the LR that is best at K_proxy) / min_lr err(K_target), per parametrization.

    The LR is chosen from the seed-averaged errors in ``df`` (as produced by ``lr_sweep``).
    1 means perfect zero-shot transfer. Returns a Series indexed by param, or a float for ``param``.
    """
    pd = _pandas()
    missing = {"param", "K", "lr", "test_err"} - set(df.columns)
    if missing:
        raise ValueError(f"df lacks columns {sorted(missing)}")
    mean = df.groupby(["param", "K", "lr"])["test_err"].mean()
    out = {}
    for p in mean.index.get_level_values("param").unique():
        ks = mean.loc[p].index.get_level_values("K")
        if k_proxy not in ks or k_target not in ks:
            raise ValueError(f"df has no K={k_proxy} or K={k_target} rows for param {p!r}")
        best_lr = mean.loc[(p, k_proxy)].idxmin()
        target = mean.loc[(p, k_target)]
        out[p] = float(target.loc[best_lr] / target.min())
    series = pd.Series(out, name="transfer_regret")
    return float(series[param]) if param is not None else series
