"""RVQ tokens and ResGen's coarse-to-fine forward masking (Kim et al., ICML 2025, arXiv 2412.10208).

An RVQ tokenizer maps each of L positions (a vector v_i in R^c) to D tokens x_{i,1..D}:
r_0 = v_i, x_{i,j} = argmin_k ||r_{j-1} - e(k; j)||, r_j = r_{j-1} - e(x_{i,j}; j), and decodes
v_i ~ sum_j e(x_{i,j}; j). ResGen masks a depth *suffix* at every position (finest depths first) and
learns the cumulative embedding of the masked suffix, z_i = sum_j e(x_{i,j}; j) m_{i,j}.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from sklearn.exceptions import NotFittedError
from torch import Tensor

SCHEDULES = ("cosine", "linear")


def mask_schedule(ratio: Tensor | float, schedule: str = "cosine") -> Tensor:
    """Masked fraction gamma(r) for r in [0, 1]: gamma(0) = 0 (nothing masked), gamma(1) = 1 (all masked).

    ``cosine``: gamma(r) = cos(pi/2 (1 - r)) (MaskGIT's cosine schedule written as a masking fraction);
    ``linear``: gamma(r) = r.
    """
    r = torch.as_tensor(ratio, dtype=torch.float64)
    if torch.any((r < 0) | (r > 1)) or torch.any(torch.isnan(r)):
        raise ValueError(f"ratio must lie in [0, 1], got {ratio!r}")
    if schedule == "cosine":
        return torch.cos(math.pi / 2 * (1 - r)).clamp(0.0, 1.0)
    if schedule == "linear":
        return r
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def forward_mask(tokens: Tensor, ratio: Tensor | float, schedule: str = "cosine",
                 generator: torch.Generator | None = None) -> Tensor:
    """ResGen's forward masking of RVQ tokens, coarse to fine.

    For each sequence, n = ceil(gamma(r) L D) of the L*D slots are masked: the n slots are drawn uniformly
    without replacement, which gives per-position counts k_i ~ multivariate hypergeometric(n; D, ..., D),
    and at position i the k_i *highest* depths are masked, so a mask is always a depth suffix.

    Args:
        tokens: (B, L, D) integer tokens (only the shape is used).
        ratio: r in [0, 1], a float or a (B,) tensor; r = 0 masks nothing, r = 1 masks everything.
        schedule: ``cosine`` or ``linear`` (see :func:`mask_schedule`).
        generator: torch random generator.

    Returns:
        (B, L, D) bool mask, True where a token is masked.
    """
    if tokens.dim() != 3:
        raise ValueError(f"tokens must have shape (B, L, D), got {tuple(tokens.shape)}")
    b, n_pos, depth = tokens.shape
    r = torch.as_tensor(ratio, dtype=torch.float64).reshape(-1)
    if r.numel() == 1:
        r = r.expand(b)
    if r.numel() != b:
        raise ValueError(f"ratio must be a float or have one value per sequence ({b}), got {r.numel()}")
    total = n_pos * depth
    n = torch.ceil(mask_schedule(r, schedule) * total - 1e-9).long().clamp(0, total)  # (B,)
    # n slots drawn without replacement: rank of uniform noise < n
    noise = torch.rand(b, total, generator=generator, device=tokens.device)
    rank = noise.argsort(dim=1).argsort(dim=1)
    chosen = (rank < n[:, None].to(tokens.device)).view(b, n_pos, depth)
    k = chosen.sum(-1)  # (B, L) hypergeometric counts
    j = torch.arange(depth, device=tokens.device)
    return j[None, None, :] >= (depth - k)[..., None]


class ResidualVQ:
    """Residual vector quantiser fitted by residual k-means (depth D, K codes per depth).

    Args:
        dim: dimension c of the vectors.
        depth: number of quantisation depths D.
        codebook_size: codes per depth K.
        n_init: k-means restarts per depth.
        random_state: seed of the k-means initialisation.

    Attributes (after :meth:`fit`):
        codebooks_: (D, K, c) float32 tensor, e(k; j) = codebooks_[j, k].
    """

    def __init__(self, dim: int, depth: int, codebook_size: int, n_init: int = 1, random_state: int | None = 0):
        for name, value in (("dim", dim), ("depth", depth), ("codebook_size", codebook_size), ("n_init", n_init)):
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.dim, self.depth, self.codebook_size = int(dim), int(depth), int(codebook_size)
        self.n_init, self.random_state = n_init, random_state

    def fit(self, x: np.ndarray | Tensor) -> "ResidualVQ":
        """Fit the D codebooks greedily: k-means on the data, then on its residual, and so on."""
        from sklearn.cluster import KMeans

        r = np.asarray(x, dtype=np.float64).reshape(-1, self.dim) if np.asarray(x).shape[-1] == self.dim else None
        if r is None:
            raise ValueError(f"x must have last dimension {self.dim}, got shape {np.asarray(x).shape}")
        if len(r) < self.codebook_size:
            raise ValueError(f"need at least codebook_size={self.codebook_size} vectors, got {len(r)}")
        books = []
        for j in range(self.depth):
            seed = None if self.random_state is None else self.random_state + j
            km = KMeans(self.codebook_size, n_init=self.n_init, random_state=seed).fit(r)
            books.append(km.cluster_centers_)
            r = r - km.cluster_centers_[km.labels_]
        self.codebooks_ = torch.tensor(np.stack(books), dtype=torch.float32)
        return self

    def _check(self) -> Tensor:
        if not hasattr(self, "codebooks_"):
            raise NotFittedError("ResidualVQ is not fitted: call fit(x) first")
        return self.codebooks_

    def to(self, device: torch.device | str) -> "ResidualVQ":
        """Move the fitted codebooks to ``device`` (in place, like ``nn.Module.to``); returns self."""
        self.codebooks_ = self._check().to(device)
        return self

    def residual_quantize(self, z: Tensor, start_depth: Tensor | int = 0) -> Tensor:
        """Greedy RVQ of ``z`` with the codebooks of depths ``start_depth .. D-1``.

        Args:
            z: (..., c) vectors.
            start_depth: int or (...,) long tensor; depths below it are not used.

        Returns:
            (..., D) long tokens, -1 at depths below ``start_depth``.
        """
        books = self._check()
        if not (isinstance(z, Tensor) and z.is_floating_point()):
            z = torch.as_tensor(z, dtype=torch.float32)
        books = books.to(device=z.device, dtype=z.dtype)
        if z.shape[-1] != self.dim:
            raise ValueError(f"z must have last dimension {self.dim}, got shape {tuple(z.shape)}")
        start = torch.as_tensor(start_depth, device=z.device).expand(z.shape[:-1])
        r = z.clone()
        out = torch.full((*z.shape[:-1], self.depth), -1, dtype=torch.long, device=z.device)
        for j in range(self.depth):  # loop over depths only; positions are vectorised
            active = start <= j
            code = torch.cdist(r.reshape(-1, self.dim), books[j]).argmin(-1).view(z.shape[:-1])
            out[..., j] = torch.where(active, code, out[..., j])
            r = r - books[j][code] * active[..., None]
        return out

    def encode(self, x: np.ndarray | Tensor) -> Tensor:
        """(..., c) vectors (an array, or a tensor on any device) -> (..., D) long tokens."""
        if isinstance(x, Tensor):
            return self.residual_quantize(x if x.is_floating_point() else x.to(torch.float32))
        return self.residual_quantize(torch.as_tensor(np.asarray(x), dtype=torch.float32))

    def embed(self, tokens: Tensor) -> Tensor:
        """(..., D) tokens -> (..., D, c) per-depth code vectors e(x_j; j) (zero where the token is -1)."""
        tokens = torch.as_tensor(tokens)
        books = self._check().to(tokens.device)
        if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be integers, got {tokens.dtype}")
        if tokens.shape[-1] != self.depth:
            raise ValueError(f"tokens must have last dimension depth={self.depth}, got {tuple(tokens.shape)}")
        if torch.any(tokens >= self.codebook_size) or torch.any(tokens < -1):
            raise ValueError(f"tokens must lie in [0, {self.codebook_size}) (or -1 for none)")
        j = torch.arange(self.depth, device=tokens.device).expand(tokens.shape)
        vec = books[j, tokens.clamp(min=0)]
        return vec * (tokens >= 0)[..., None]

    def decode(self, tokens: Tensor) -> Tensor:
        """(..., D) tokens -> (..., c) reconstruction sum_j e(x_j; j)."""
        return self.embed(tokens).sum(-2)


def cumulative_masked_embedding(tokens: Tensor, mask: Tensor, rvq: ResidualVQ) -> Tensor:
    """ResGen's prediction target z_i = sum_j e(x_{i,j}; j) m_{i,j}.

    Args:
        tokens: (B, L, D) tokens; mask: (B, L, D) bool, True where masked; rvq: a fitted :class:`ResidualVQ`.

    Returns:
        (B, L, c) sum of the code vectors of the masked depths (zero where nothing is masked).
    """
    if tokens.shape != mask.shape:
        raise ValueError(f"tokens {tuple(tokens.shape)} and mask {tuple(mask.shape)} must have the same shape")
    vectors = rvq.embed(tokens)
    return (vectors * mask[..., None].to(vectors.dtype)).sum(-2)
