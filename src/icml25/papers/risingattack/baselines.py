"""The baselines of RisingAttacK: QuadAttacK at its released settings, C&W top-K and top-K PGD.

:class:`QuadAttack` (Paniagua, Grainger & Wu, NeurIPS 2023) solves a QP in the penultimate feature space, then takes
AdamW steps to reach the QP's features (the released settings of thomaspaniagua/quadattack); :class:`CWTopK` is a
C&W-style ordered hinge + l2 penalty with Adam and :class:`TopKPGD` l2-ball PGD on the same hinge. All three keep,
per image, the successful iterate of smallest l2 perturbation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from icml25.papers.risingattack.attacks import min_norm_qp
from icml25.papers.risingattack.ordering import (
    check_attack_args,
    check_call,
    check_images,
    clip_box,
    ordered_topk_success,
    ordering_margins,
    ordering_matrices,
    topk_hinge_loss,
)


class _BestTracker:
    """Keeps, per image, the successful iterate of smallest l2 perturbation."""

    def __init__(self, x: Tensor) -> None:
        self.x = x
        self.best = x.clone()
        self.best_l2 = torch.full((x.shape[0],), math.inf, dtype=x.dtype, device=x.device)
        self.success = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)

    def update(self, x_adv: Tensor, succ: Tensor) -> Tensor:
        l2 = (x_adv - self.x).reshape(x_adv.shape[0], -1).norm(dim=1)
        better = succ & (l2 < self.best_l2)
        self.best[better] = x_adv[better].detach()
        self.best_l2[better] = l2[better]
        self.success |= succ
        return better

    def result(self, x_last: Tensor) -> Tensor:
        out = x_last.detach().clone()
        out[self.success] = self.best[self.success]
        return out


class _GradientAttack:
    """Shared loop of the gradient baselines: Adam/PGD on delta, best successful iterate kept."""

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float, max_iter: int,
                 clip: tuple[float, float] | None) -> None:
        check_attack_args(K, margin, max_iter)
        if clip is not None and not clip[0] < clip[1]:
            raise ValueError(f"clip must be (low, high) with low < high, got {clip!r}")
        self.model, self.K, self.margin, self.max_iter, self.clip = model, int(K), float(margin), int(max_iter), clip

    def _n_classes(self, x: Tensor) -> int:
        check_images(x)
        with torch.no_grad():
            return int(self.model(x[:1]).shape[1])

    def _finish(self, tracker: _BestTracker, x_last: Tensor, t: Tensor, iters: int) -> tuple[Tensor, dict]:
        x_adv = tracker.result(x_last)
        with torch.no_grad():
            z = self.model(x_adv)
        return x_adv, {"success": ordered_topk_success(z, t).cpu(), "iterations": torch.full((x_adv.shape[0],), iters),
                       "margins": ordering_margins(z, t).cpu()}


class QuadAttack(_GradientAttack):
    """QuadAttacK baseline (Paniagua, Grainger & Wu, NeurIPS 2023) at its released settings.

    Needs a model z = W phi(x) + b with a linear head. delta starts at N(0, ``init_std``^2). Each
    iteration, at the current iterate x + delta:

    1. record success (ordered top-K) and keep the smallest-l2 successful perturbation;
    2. solve the QP in feature space, anchored at the current features f = phi(x + delta):
       f* = f + argmin ||df||^2  s.t.  D (W (f + df) + b) >= m   (all C - 1 rows; :func:`min_norm_qp`);
    3. one AdamW step on  sum_b coef_b ||phi(x_b + delta_b) - f*_b||^2 + ``norm_weight`` ||delta||_2^2;
    4. coef_b *= ``coef_decay`` for images whose attack improved in step 1; clamp x + delta to ``clip``.

    The optimiser is re-created (its moments reset) after ``warmup_iters`` iterations. The gradient
    treats f* as a constant: by Danskin's theorem it equals the gradient through the QP's solution
    (the released code differentiates through qpth), since ||f - f*(f)||^2 is the squared distance
    of f to a convex set.

    Args:
        model: the classifier; ``feature_fn`` and ``head`` default to ``model.features`` and ``model.head``.
        K, margin, max_iter, clip: as in :class:`RisingAttack` (released: margin 0.2, 30 iterations).
        lr: AdamW learning rate on delta (released: 0.0022).
        norm_weight: weight of ||delta||_2^2 (released: 1).
        coef: initial weight of the feature loss (released: 10, the midpoint of one binary-search step
            over [0, 20]).
        coef_decay: factor on coef after each improving success (released: 0.75).
        warmup_iters: iteration at which the optimiser is reset (released: 5; 0 never resets).
        init_std: std of the random initial delta (released: 2e-3).
        weight_decay: AdamW's decoupled weight decay on delta (PyTorch's default 0.01, as released).
    """

    def __init__(self, model: nn.Module, K: int, margin: float = 0.2, max_iter: int = 30, lr: float = 0.0022,
                 norm_weight: float = 1.0, feature_fn: Callable[[Tensor], Tensor] | None = None,
                 head: nn.Linear | None = None, clip: tuple[float, float] | None = (0.0, 1.0), coef: float = 10.0,
                 coef_decay: float = 0.75, warmup_iters: int = 5, init_std: float = 2e-3,
                 weight_decay: float = 0.01) -> None:
        super().__init__(model, K, margin, max_iter, clip)
        self.feature_fn = feature_fn if feature_fn is not None else getattr(model, "features", None)
        self.head = head if head is not None else getattr(model, "head", None)
        if not callable(self.feature_fn) or not isinstance(self.head, nn.Linear):
            raise ValueError("QuadAttack needs feature_fn and a linear head (nn.Linear), or a model with "
                             "attributes .features and .head")
        if not (lr > 0 and norm_weight >= 0):
            raise ValueError(f"lr must be > 0 and norm_weight >= 0, got {lr!r}, {norm_weight!r}")
        if not (coef > 0 and 0 < coef_decay <= 1):
            raise ValueError(f"coef must be > 0 and coef_decay in (0, 1], got {coef!r}, {coef_decay!r}")
        if isinstance(warmup_iters, bool) or not isinstance(warmup_iters, (int, np.integer)) or warmup_iters < 0:
            raise ValueError(f"warmup_iters must be an integer >= 0, got {warmup_iters!r}")
        if not (init_std >= 0 and weight_decay >= 0):
            raise ValueError(f"init_std and weight_decay must be >= 0, got {init_std!r}, {weight_decay!r}")
        self.lr, self.norm_weight, self.coef, self.coef_decay = lr, norm_weight, float(coef), float(coef_decay)
        self.warmup_iters, self.init_std, self.weight_decay = int(warmup_iters), float(init_std), float(weight_decay)

    def feature_targets(self, feats: Tensor, targets: Tensor) -> Tensor:
        """The QP step in feature space: f* = f + argmin ||df||^2 s.t. D(W(f + df) + b) >= m, per row."""
        W = self.head.weight.detach().double()
        z = self.head(feats).detach().double()
        D = ordering_matrices(targets.cpu(), W.shape[0]).double().to(W.device)
        A = (D @ W).cpu().numpy()                           # (B, M, d)
        c = (self.margin - torch.einsum("bmc,bc->bm", D, z)).cpu().numpy()
        df = np.stack([min_norm_qp(A[b], c[b]) for b in range(A.shape[0])])
        return feats.detach() + torch.from_numpy(df).to(feats)

    def _optimizer(self, delta: Tensor) -> torch.optim.Optimizer:
        return torch.optim.AdamW([delta], lr=self.lr, weight_decay=self.weight_decay)

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch; returns x_adv and info (``success``, ``iterations``, ``margins``)."""
        x = x.detach()
        t = check_call(x, targets, self.K, self._n_classes(x))
        noise = torch.randn(x.shape, dtype=x.dtype).to(x.device) * self.init_std     # global RNG, as released
        delta = (clip_box(x + noise, self.clip) - x).requires_grad_(True)
        coef = torch.full((x.shape[0],), self.coef, dtype=x.dtype, device=x.device)
        opt = self._optimizer(delta)
        tracker = _BestTracker(x)
        for i in range(self.max_iter):
            if i == self.warmup_iters and i > 0:
                opt = self._optimizer(delta)                 # reset the moments after the warm-up
            x_adv = x + delta
            f = self.feature_fn(x_adv)
            improved = tracker.update(x_adv.detach(), ordered_topk_success(self.head(f).detach(), t))
            f_star = self.feature_targets(f, t)
            loss = (coef * ((f - f_star) ** 2).flatten(1).sum(1)).sum() + self.norm_weight * (delta ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            coef[improved] *= self.coef_decay
            with torch.no_grad():
                delta.copy_(clip_box(x + delta, self.clip) - x)
        x_last = x + delta.detach()
        with torch.no_grad():
            tracker.update(x_last, ordered_topk_success(self.model(x_last), t))
        return self._finish(tracker, x_last, t, self.max_iter)


class CWTopK(_GradientAttack):
    """C&W-style ordered top-K attack: Adam on delta for  hinge(z(x + delta)) + c ||delta||_2^2.

    The hinge is :func:`topk_hinge_loss`; the smallest successful perturbation is returned
    (a single fixed ``c``, no binary search).
    """

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float = 0.05, max_iter: int = 50,
                 lr: float = 0.01, c: float = 0.05, clip: tuple[float, float] | None = (0.0, 1.0)) -> None:
        super().__init__(model, K, margin, max_iter, clip)
        if not (lr > 0 and c >= 0):
            raise ValueError(f"lr must be > 0 and c >= 0, got {lr!r}, {c!r}")
        self.lr, self.c = lr, c

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch; returns x_adv and info (``success``, ``iterations``, ``margins``)."""
        x = x.detach()
        t = check_call(x, targets, self.K, self._n_classes(x))
        delta = torch.zeros_like(x, requires_grad=True)
        opt = torch.optim.Adam([delta], lr=self.lr)
        tracker = _BestTracker(x)
        for _ in range(self.max_iter):
            x_adv = clip_box(x + delta, self.clip)
            z = self.model(x_adv)
            tracker.update(x_adv.detach(), ordered_topk_success(z.detach(), t))
            loss = topk_hinge_loss(z, t, self.margin).sum() + self.c * (delta ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        x_last = clip_box(x + delta.detach(), self.clip)
        with torch.no_grad():
            tracker.update(x_last, ordered_topk_success(self.model(x_last), t))
        return self._finish(tracker, x_last, t, self.max_iter)


class TopKPGD(_GradientAttack):
    """l2 PGD on :func:`topk_hinge_loss` inside the ball ||delta||_2 <= eps (step 2.5 eps / max_iter).

    Returns the smallest successful iterate seen.
    """

    def __init__(self, model: Callable[[Tensor], Tensor], K: int, margin: float = 0.05, max_iter: int = 50,
                 eps: float = 2.0, clip: tuple[float, float] | None = (0.0, 1.0)) -> None:
        super().__init__(model, K, margin, max_iter, clip)
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        self.eps = eps

    def __call__(self, x: Tensor, targets: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """Attack a batch; returns x_adv and info (``success``, ``iterations``, ``margins``)."""
        x = x.detach()
        t = check_call(x, targets, self.K, self._n_classes(x))
        alpha = 2.5 * self.eps / self.max_iter
        x_adv = x.clone()
        tracker = _BestTracker(x)
        shape = (-1,) + (1,) * (x.dim() - 1)
        for _ in range(self.max_iter):
            x_adv.requires_grad_(True)
            z = self.model(x_adv)
            tracker.update(x_adv.detach(), ordered_topk_success(z.detach(), t))
            (grad,) = torch.autograd.grad(topk_hinge_loss(z, t, self.margin).sum(), x_adv)
            gnorm = grad.reshape(grad.shape[0], -1).norm(dim=1).clamp_min(1e-12).reshape(shape)
            d = x_adv.detach() - alpha * grad / gnorm - x
            dn = d.reshape(d.shape[0], -1).norm(dim=1).reshape(shape)
            d = d * torch.clamp(self.eps / dn.clamp_min(1e-12), max=1.0)       # project on the l2 ball
            x_adv = clip_box(x + d, self.clip).detach()
        with torch.no_grad():
            tracker.update(x_adv, ordered_topk_success(self.model(x_adv), t))
        return self._finish(tracker, x_adv, t, self.max_iter)
