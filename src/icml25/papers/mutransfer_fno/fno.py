"""Fourier Neural Operator with the mode-count muP of Li, Yoo & Yang (ICML 2025, arXiv 2506.19396).

FNO:  G = Q o phi(W_L + K_L) o ... o phi(W_1 + K_1) o P, with the kernel integral operator
      (K v)(x) = F^{-1}[ R . T_K(F v) ](x),  R in C^{K^d x m x m}  (one m x m matrix per kept mode).

abc-parametrization of R only:  R = a(K) r,  r_ij ~ N(0, b(K)^2),  Adam LR of R = c(K) eta_0.
muP (Theorem 3.5):  a(K) = 1,  b(K)^2 = Theta(1 / (d log K)),  c(K) = Theta(1 / sqrt(d log K)).
Anchored at a base mode count k_base (where muP and the standard parametrization coincide):

    init_std(K) = init_std_base * sqrt(log k_base / log K)      (so sigma^2 scales as log k_base / log K)
    lr_multiplier(K) = sqrt(log k_base / log K)

The dimension d cancels in these ratios because k_base and K count modes per dimension.

Conventions, checked against neuraloperator 2.0.0 (``neuralop.layers.spectral_convolution``), the
library FNO work usually builds on (the official muTransfer-FNO code could not be read):

* Mode count. K is the number of modes per *corner*, as in the original FNO code (Li et al.
  2021, ``modes1``...): frequencies 0..K-1 and -K..-1 in every non-last dimension, 0..K-1 in the
  last (rfft) dimension, i.e. 2^(d-1) K^d kept modes. neuraloperator's ``n_modes`` counts the
  total per dimension instead (n//2 negative and n//2 + n%2 non-negative frequencies after an
  fftshift; n//2 + 1 in the last dimension); ``neuralop_n_modes(K, d)`` gives the ``n_modes``
  that keeps exactly our modes. The two agree only through that translation, e.g. neuraloperator
  ``n_modes=K`` keeps about 2^(1-d) times fewer modes than our K (d = 3: 4x fewer).
* Complex init. ``complex_init="per_part"`` (default) draws the real and the imaginary part of
  each entry of R with std b(K) (E|R_ij|^2 = 2 b^2); ``"complex_normal"`` draws R_ij ~ CN(0, b^2)
  (E|R_ij|^2 = b^2, each part b / sqrt 2), which is what neuraloperator's
  ``weight.normal_(0, init_std)`` on a complex tensor does. The constant factor does not change the
  muP ratio; neuraloperator's ``init_std="auto"`` is sqrt(2 / (in + out)), our default base too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch
from torch import nn

PARAMETRIZATIONS = ("sp", "mup")
COMPLEX_INITS = ("per_part", "complex_normal")


def _check_param(param: str) -> str:
    if param not in PARAMETRIZATIONS:
        raise ValueError(f"param must be 'sp' or 'mup', got {param!r}")
    return param


def _check_complex_init(complex_init: str) -> str:
    if complex_init not in COMPLEX_INITS:
        raise ValueError(f"complex_init must be one of {COMPLEX_INITS}, got {complex_init!r}")
    return complex_init


def _check_modes(k: int, name: str) -> int:
    if isinstance(k, bool) or not isinstance(k, (int,)) or k < 1:
        raise ValueError(f"{name} must be a positive integer, got {k!r}")
    return int(k)


def mup_scale(k: int, k_base: int) -> float:
    """sqrt(log k_base / log K): the muP factor of both the init std and the Adam LR of R.

    Equals 1 at ``K == k_base``; below 1 for ``K > k_base``. Both counts must be >= 2
    (log 1 = 0 leaves the rule undefined).
    """
    k, k_base = _check_modes(k, "K"), _check_modes(k_base, "k_base")
    if k < 2 or k_base < 2:
        raise ValueError(f"muP needs K >= 2 and k_base >= 2 (log 1 = 0), got K={k}, k_base={k_base}")
    return math.sqrt(math.log(k_base) / math.log(k))


def init_std(k: int, param: str, k_base: int, init_std_base: float) -> float:
    """Init std b(K) of R (per part under ``complex_init="per_part"``, of the complex entry under
    ``"complex_normal"``)."""
    if _check_param(param) == "sp":
        return float(init_std_base)
    return float(init_std_base) * mup_scale(k, k_base)


def lr_multiplier(k: int, param: str, k_base: int) -> float:
    """c(K) / c(k_base): multiplier of the base Adam LR for R (1 under the standard parametrization)."""
    if _check_param(param) == "sp":
        return 1.0
    return mup_scale(k, k_base)


def transfer_hyperparameters(lr_proxy: float, init_var_proxy: float, k_proxy: int, k_target: int) -> dict[str, float]:
    """Algorithm 1, step 2: move the spectral LR and init variance tuned at K_proxy to K_target.

    eta_{K*} = eta_{K_proxy} sqrt(log K_proxy / log K*);  sigma^2_{K*} = sigma^2_{K_proxy} log K_proxy / log K*.
    Every other hyperparameter is kept unchanged.
    """
    if not (lr_proxy > 0 and init_var_proxy > 0):
        raise ValueError(f"lr_proxy and init_var_proxy must be positive, got {lr_proxy!r}, {init_var_proxy!r}")
    s = mup_scale(k_target, k_proxy)
    return {"lr": lr_proxy * s, "init_var": init_var_proxy * s * s}


def neuralop_n_modes(k: int, d: int) -> tuple[int, ...]:
    """neuraloperator's ``n_modes`` that keeps exactly the modes of our K in d dimensions.

    ``(2K, ..., 2K, 2K - 1)``: 2K total modes (frequencies -K..K-1) in each non-last dimension and
    ``(2K - 1) // 2 + 1 = K`` modes (0..K-1) in the last, rfft dimension. Checked side by side with
    neuraloperator 2.0.0's ``SpectralConv`` (same weights, d = 1, 2, 3: outputs agree to float32 precision).
    """
    k = _check_modes(k, "K")
    if d not in (1, 2, 3):
        raise ValueError(f"d must be 1, 2 or 3, got {d!r}")
    return (2 * k,) * (d - 1) + (2 * k - 1,)


def _truncate(x_ft: torch.Tensor, k: int, d: int) -> torch.Tensor:
    """T_K: keep the lowest modes of an rfftn output (batch, ch, n_1, ..., n_d//2+1).

    Non-last dimensions keep the K lowest non-negative and the K lowest negative frequencies
    (as the original FNO does), the last (half-spectrum) dimension keeps 0..K-1.
    """
    x_ft = x_ft[..., :k]
    for dim in range(2, d + 1):
        x_ft = torch.cat([x_ft.narrow(dim, 0, k), x_ft.narrow(dim, x_ft.shape[dim] - k, k)], dim=dim)
    return x_ft


def _pad_spectrum(y: torch.Tensor, k: int, d: int, spec_shape: Sequence[int]) -> torch.Tensor:
    """Inverse of ``_truncate``: put the kept modes back into a zero spectrum of shape ``spec_shape``."""
    for dim in range(2, d + 1):
        n = spec_shape[dim - 2]
        zeros = y.new_zeros(y.shape[:dim] + (n - 2 * k,) + y.shape[dim + 1:])
        y = torch.cat([y.narrow(dim, 0, k), zeros, y.narrow(dim, k, k)], dim=dim)
    return torch.nn.functional.pad(y, (0, spec_shape[-1] - k))


class SpectralConvNd(nn.Module):
    """Kernel integral operator K v = F^{-1}[R . T_K(F v)] on a d-dimensional periodic grid.

    Args:
        in_ch, out_ch: channels m_in, m_out.
        modes: K per dimension, a tuple of d equal integers (the theory scales one K).
        param: ``"sp"`` (init std fixed at ``init_std_base``) or ``"mup"`` (std and LR scaled by
            sqrt(log k_base / log K)).
        k_base: the mode count where muP and SP coincide (the proxy model's K).
        init_std_base: the init std b at ``k_base``; ``None`` gives sqrt(2 / (in_ch + out_ch)) (as
            neuraloperator's ``init_std="auto"``).
        complex_init: ``"per_part"`` (real and imaginary parts each N(0, b(K)^2)) or
            ``"complex_normal"`` (R_ij ~ CN(0, b(K)^2), each part b(K) / sqrt 2, as neuraloperator).

    ``weight`` has shape (in_ch, out_ch, 2K, ..., 2K, K, 2) (real/imag last): 2^{d-1} K^d matrices
    (K modes per corner, the original FNO's count; neuraloperator's equivalent: ``neuralop_n_modes``).
    Inputs are (batch, in_ch, n_1, ..., n_d) with 2K <= n_i (non-last dims), K <= n_d // 2 + 1.
    """

    def __init__(self, in_ch: int, out_ch: int, modes: tuple[int, ...], param: str = "sp", k_base: int = 4,
                 init_std_base: float | None = None, complex_init: str = "per_part"):
        super().__init__()
        modes = tuple(modes) if isinstance(modes, Iterable) else (modes,)
        if not modes or len(set(modes)) != 1:
            raise ValueError(f"modes must be a non-empty tuple of equal mode counts, got {modes!r}")
        self.k = _check_modes(modes[0], "modes")
        self.d = len(modes)
        self.in_ch, self.out_ch = _check_modes(in_ch, "in_ch"), _check_modes(out_ch, "out_ch")
        self.param = _check_param(param)
        self.k_base = _check_modes(k_base, "k_base")
        self.init_std_base = math.sqrt(2.0 / (in_ch + out_ch)) if init_std_base is None else float(init_std_base)
        if not self.init_std_base > 0:
            raise ValueError(f"init_std_base must be positive, got {init_std_base!r}")
        self.init_std = init_std(self.k, param, self.k_base, self.init_std_base)
        self.lr_multiplier = lr_multiplier(self.k, param, self.k_base)
        self.complex_init = _check_complex_init(complex_init)
        shape = (in_ch, out_ch) + (2 * self.k,) * (self.d - 1) + (self.k, 2)
        part_std = self.init_std / math.sqrt(2.0) if complex_init == "complex_normal" else self.init_std
        self.weight = nn.Parameter(torch.randn(shape) * part_std)

    @property
    def complex_weight(self) -> torch.Tensor:
        """R as a complex tensor of shape (in_ch, out_ch, 2K, ..., K)."""
        return torch.view_as_complex(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, in_ch, n_1, ..., n_d) real input -> (batch, out_ch, n_1, ..., n_d), in the input's dtype.

        The FFT of a float64 input is complex128 and meets R in float64 (complex128 when viewed as complex);
        float32 gives complex64. The input's dtype must match the weight's, as for any ``nn.Linear``.
        """
        if not x.is_floating_point():
            raise TypeError(f"expected a real floating input, got dtype {x.dtype}")
        if x.dtype != self.weight.dtype:
            raise TypeError(f"input dtype {x.dtype} differs from the weight dtype {self.weight.dtype}; "
                            f"convert one with .to()")
        if x.dim() != self.d + 2 or x.shape[1] != self.in_ch:
            raise ValueError(f"expected input (batch, {self.in_ch}, {self.d} grid dims), got {tuple(x.shape)}")
        grid = x.shape[2:]
        if any(2 * self.k > n for n in grid[:-1]) or self.k > grid[-1] // 2 + 1:
            raise ValueError(f"K={self.k} modes do not fit grid {tuple(grid)}")
        dims = tuple(range(2, self.d + 2))
        x_ft = torch.fft.rfftn(x, dim=dims)
        kept = _truncate(x_ft, self.k, self.d)  # (b, i, 2K, ..., K)
        b, modes_shape = kept.shape[0], kept.shape[2:]
        # y_k = x_k R_k for every kept mode k, as one real batched matmul over modes:
        # (x_r, x_i) [[R_r, R_i], [-R_i, R_r]] = (y_r, y_i)
        xr = torch.view_as_real(kept.flatten(2).permute(2, 0, 1)).reshape(-1, b, 2 * self.in_ch)
        w = self.weight.flatten(2, -2).permute(2, 0, 1, 3)  # (M, i, o, 2)
        wr, wi = w[..., 0], w[..., 1]
        block = torch.stack([torch.stack([wr, wi], -1), torch.stack([-wi, wr], -1)], dim=2)
        block = block.reshape(-1, 2 * self.in_ch, 2 * self.out_ch)
        y = torch.view_as_complex(torch.bmm(xr, block).reshape(-1, b, self.out_ch, 2).contiguous())
        y = y.permute(1, 2, 0).reshape((b, self.out_ch) + tuple(modes_shape))
        out_ft = _pad_spectrum(y, self.k, self.d, x_ft.shape[2:])
        return torch.fft.irfftn(out_ft, s=grid, dim=dims)


class FNO(nn.Module):
    """FNO: pointwise lift P, ``n_layers`` of phi(W_l v + K_l v), pointwise projection Q (Li et al. 2021).

    Args:
        d: spatial dimension (1, 2 or 3).
        in_ch, out_ch: input and output channels (the grid coordinates are appended to the input).
        width: hidden width m.
        n_layers: Fourier layers L (GELU after every layer but the last, as in the original FNO).
        modes: K per dimension (an int or a d-tuple).
        param: ``"sp"`` or ``"mup"``; only the spectral weights R depend on it.
        k_base: mode count where SP and muP coincide.
        init_std_base: init std b of R at ``k_base`` (``None``: sqrt(1/width)).
        complex_init: ``"per_part"`` or ``"complex_normal"`` (see :class:`SpectralConvNd`).
    """

    def __init__(self, d: int, in_ch: int, out_ch: int, width: int = 32, n_layers: int = 4, modes: int | tuple = 16,
                 param: str = "sp", k_base: int = 4, init_std_base: float | None = None,
                 complex_init: str = "per_part"):
        super().__init__()
        if d not in (1, 2, 3):
            raise ValueError(f"d must be 1, 2 or 3, got {d!r}")
        _check_modes(n_layers, "n_layers")
        modes = (modes,) * d if isinstance(modes, int) else tuple(modes)
        if len(modes) != d:
            raise ValueError(f"modes must have d={d} entries, got {modes!r}")
        for name, value in (("in_ch", in_ch), ("out_ch", out_ch), ("width", width)):
            _check_modes(value, name)
        self.d, self.in_ch = d, in_ch
        self.lift = nn.Linear(in_ch + d, width)
        self.spectral = nn.ModuleList(SpectralConvNd(width, width, modes, param, k_base, init_std_base, complex_init)
                                      for _ in range(n_layers))
        conv = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[d - 1]
        self.pointwise = nn.ModuleList(conv(width, width, 1) for _ in range(n_layers))
        self.proj = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, out_ch))

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        """Map a (batch, n_1, ..., n_d, in_ch) input function to (batch, n_1, ..., n_d, out_ch)."""
        if a.dim() != self.d + 2 or a.shape[-1] != self.in_ch:
            raise ValueError(f"expected input (batch, {self.d} grid dims, {self.in_ch} channels), "
                             f"got {tuple(a.shape)}")
        if not a.is_floating_point():
            raise TypeError(f"expected a real floating input, got dtype {a.dtype}")
        axes = [torch.linspace(0, 1, n + 1, dtype=a.dtype, device=a.device)[:-1] for n in a.shape[1:-1]]
        grid = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).expand(a.shape[:-1] + (self.d,))
        v = self.lift(torch.cat([a, grid], dim=-1)).movedim(-1, 1)
        for i, (k_op, w) in enumerate(zip(self.spectral, self.pointwise)):
            v = k_op(v) + w(v)
            if i < len(self.spectral) - 1:
                v = nn.functional.gelu(v)
        return self.proj(v.movedim(1, -1))


def mup_param_groups(model: nn.Module, base_lr: float) -> list[dict]:
    """Adam parameter groups: each spectral weight R at ``base_lr * lr_multiplier(K)``, the rest at ``base_lr``."""
    if not base_lr > 0:
        raise ValueError(f"base_lr must be positive, got {base_lr!r}")
    spectral = [m for m in model.modules() if isinstance(m, SpectralConvNd)]
    ids = {id(m.weight) for m in spectral}
    groups = [{"params": [m.weight], "lr": base_lr * m.lr_multiplier, "name": f"spectral{i}"}
              for i, m in enumerate(spectral)]
    rest = [p for p in model.parameters() if id(p) not in ids]
    if rest:
        groups.append({"params": rest, "lr": base_lr, "name": "other"})
    return groups


def clip_grad_elementwise_(model: nn.Module, value: float) -> None:
    """Clamp every gradient entry to [-value, value] in place (keeps updates sub-Gaussian, Assumption 3.4)."""
    if not value > 0:
        raise ValueError(f"clip value must be positive, got {value!r}")
    for p in model.parameters():
        if p.grad is not None:
            p.grad.clamp_(-value, value)


def relative_l2(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-sample relative L2 error ||pred - target|| / ||target|| (shape: batch)."""
    if pred.shape != target.shape or pred.dim() < 1:
        raise ValueError(f"pred and target must have one shape (batch, ...), got {tuple(pred.shape)} and "
                         f"{tuple(target.shape)}")
    diff = (pred - target).flatten(1).norm(dim=1)
    return diff / target.flatten(1).norm(dim=1).clamp_min(1e-12)
