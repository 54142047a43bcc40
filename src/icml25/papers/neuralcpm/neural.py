"""Neural Hamiltonians for the CPM, the approximate parallel sampler, and EBM training (PyTorch).

Minartz et al., "Deep Neural Cellular Potts Models" (arXiv 2502.02129). Lattices are long tensors
``sigma (N, h, w)`` with a shared ``cell_types (C + 1,)`` (0 = medium). Every Hamiltonian here is an
``nn.Module`` mapping ``(sigma, cell_types)`` to one energy per lattice, shape ``(N,)``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.common.checks import ConfigError, check_fields
from icml25.papers.neuralcpm.cpm import MOORE, CellsortHamiltonian, parallel_cellsort_cpm

_HALF = ((0, 1), (1, -1), (1, 0), (1, 1))


def _check_lattices(sigma: torch.Tensor, cell_types: torch.Tensor) -> None:
    """``sigma`` is a (N, h, w) integer tensor of ids in [0, C], ``cell_types`` a (C + 1,) integer tensor.

    The id range is a value check: it is skipped on the meta device, where tensors have no values.
    """
    if not (isinstance(sigma, torch.Tensor) and isinstance(cell_types, torch.Tensor)):
        raise TypeError(f"sigma and cell_types must be tensors, got {type(sigma).__name__}, "
                        f"{type(cell_types).__name__}")
    if sigma.is_floating_point() or sigma.is_complex() or sigma.dtype == torch.bool:
        raise TypeError(f"sigma must hold integer cell ids, got dtype {sigma.dtype}")
    if cell_types.is_floating_point() or cell_types.is_complex() or cell_types.dtype == torch.bool:
        raise TypeError(f"cell_types must hold integer type ids, got dtype {cell_types.dtype}")
    if sigma.ndim != 3:
        raise ValueError(f"sigma must be a batch of lattices (N, h, w), got shape {tuple(sigma.shape)}")
    if cell_types.ndim != 1 or cell_types.numel() < 1:
        raise ValueError(f"cell_types must have shape (C + 1,), got {tuple(cell_types.shape)}")
    if not sigma.is_meta and sigma.numel() and int(sigma.min()) < 0:
        raise ValueError(f"sigma ids must be >= 0 (0 = medium), got {int(sigma.min())}")
    if not sigma.is_meta and sigma.numel() and int(sigma.max()) >= cell_types.numel():
        raise ValueError(f"cell_types must give a type for every id in sigma (length >= {int(sigma.max()) + 1}, as "
                         f"sigma holds id {int(sigma.max())}), got length {cell_types.numel()}")


def _contact_features(sigma: torch.Tensor, cell_types: torch.Tensor, n_types: int,
                      dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Contact counts per type pair (a <= b), shape (N, (n_types+1)(n_types+2)/2), in ``dtype``."""
    k = n_types + 1
    tau = cell_types[sigma]
    counts = torch.zeros(sigma.shape[0], k * k, dtype=dtype, device=sigma.device)
    for di, dj in _HALF:
        s2 = torch.roll(sigma, (-di, -dj), (1, 2))
        t2 = torch.roll(tau, (-di, -dj), (1, 2))
        a, b = torch.minimum(tau, t2), torch.maximum(tau, t2)
        idx = (a * k + b).flatten(1)
        counts.scatter_add_(1, idx, (sigma != s2).flatten(1).to(dtype))
    iu = torch.triu_indices(k, k, device=sigma.device)
    return counts[:, iu[0] * k + iu[1]]


class SymbolicHamiltonian(nn.Module):
    """Differentiable cell-sorting Hamiltonian (Eq. 4) with learnable J, lam (softplus) and optionally V*.

    ``H = 1/4 sum_{a<=b} J_ab M_ab + softplus(lam_raw) sum_c (V_c - V*)^2 [+ offset * offset_scale]`` with one
    shared V* and lam, as in the paper's symbolic baseline; ``J_00`` is fixed to 0.

    Args:
        n_types: number of cell types (medium excluded).
        J_init: initial raw pair values ``J_pairs`` (a float, or one value per pair (0,1), (0,2), ..., (1,1), ...
            in row-major upper-triangle order without (0,0)).
        lam_init: initial lam (> 0).
        v_star: initial (or fixed) target volume.
        learn_v_star: whether V* is trained.
        J_bias: ``None``: J is the raw pairs (ours). A float (the official parameterisation, default, bias 2 as in
            every official config): ``J = softplus(gamma_J) * J_pairs + bias_J`` with trainable ``gamma_J``
            (initialised so that softplus(gamma_J) = 1) and ``bias_J`` (initialised to ``J_bias``).
        offset_scale: ``None``: no offset. A float: a trainable energy offset ``offset * offset_scale``
            (``offset`` initialised to 0; the official closure uses scale 1000). It does not change the dynamics;
            it lets the energy regulariser centre the energies.
    """

    def __init__(self, n_types: int, J_init: float | Sequence[float] = 0.0, lam_init: float = 0.5,
                 v_star: float = 100.0, learn_v_star: bool = False, J_bias: float | None = 2.0,
                 offset_scale: float | None = None):
        super().__init__()
        if n_types < 1:
            raise ValueError(f"n_types must be >= 1, got {n_types}")
        n_pairs = (n_types + 1) * (n_types + 2) // 2 - 1
        raw = torch.as_tensor(J_init, dtype=torch.float64).flatten()
        if raw.numel() == 1:
            raw = raw.expand(n_pairs).clone()
        if raw.numel() != n_pairs or not bool(torch.isfinite(raw).all()):
            raise ValueError(f"J_init must be a finite float or {n_pairs} finite pair values, got {J_init!r}")
        extra = [v for v in (J_bias, offset_scale) if v is not None]
        if not all(map(math.isfinite, (lam_init, v_star, *extra))) or not lam_init > 0:
            raise ValueError(f"need finite v_star, J_bias and offset_scale and a finite lam_init > 0, got "
                             f"lam_init={lam_init}, v_star={v_star}, J_bias={J_bias}, offset_scale={offset_scale}")
        self.n_types = n_types
        self.J_pairs = nn.Parameter(raw)
        self.lam_raw = nn.Parameter(torch.tensor(float(lam_init), dtype=torch.float64).expm1().log())
        self.v_star = nn.Parameter(torch.tensor(float(v_star), dtype=torch.float64), requires_grad=learn_v_star)
        self.J_bias = J_bias
        if J_bias is not None:
            self.gamma_J = nn.Parameter(torch.tensor(math.log(math.e - 1), dtype=torch.float64))
            self.bias_J = nn.Parameter(torch.tensor(float(J_bias), dtype=torch.float64))
        self.offset_scale = offset_scale
        if offset_scale is not None:
            self.offset = nn.Parameter(torch.tensor(0.0, dtype=torch.float64))

    @property
    def lam(self) -> torch.Tensor:
        """Volume stiffness softplus(lam_raw)."""
        return F.softplus(self.lam_raw)

    def pair_energies(self) -> torch.Tensor:
        """Contact energies of the pairs (0,1), ..., (n_types, n_types) (all but (0,0)), shape (n_pairs,)."""
        if self.J_bias is None:
            return self.J_pairs
        return F.softplus(self.gamma_J) * self.J_pairs + self.bias_J

    def J_matrix(self) -> torch.Tensor:
        """The symmetric ``(n_types+1, n_types+1)`` contact matrix."""
        k = self.n_types + 1
        like = {"dtype": self.J_pairs.dtype, "device": self.J_pairs.device}
        iu = torch.triu_indices(k, k, device=like["device"])
        J = torch.zeros(k, k, **like)
        vals = torch.cat([torch.zeros(1, **like), self.pair_energies()])
        J = J.index_put((iu[0], iu[1]), vals)
        return J + J.T - torch.diag(torch.diag(J))

    def to_cellsort(self) -> CellsortHamiltonian:
        """Export the current parameters as an exact NumPy :class:`CellsortHamiltonian` (without the offset)."""
        with torch.no_grad():
            return CellsortHamiltonian(self.J_matrix().cpu().numpy(), float(self.lam), float(self.v_star))

    def forward(self, sigma: torch.Tensor, cell_types: torch.Tensor) -> torch.Tensor:
        """Energies (N,) of lattices ``sigma`` (N, h, w), in the parameters' dtype (float64 unless converted)."""
        _check_lattices(sigma, cell_types)
        dtype = self.J_pairs.dtype
        feats = _contact_features(sigma, cell_types, self.n_types, dtype)
        contact = 0.25 * (feats[:, 1:] * self.pair_energies()).sum(1)
        n_ids = cell_types.numel()
        vol = F.one_hot(sigma.flatten(1), n_ids).sum(1)[:, 1:].to(dtype)
        energy = contact + self.lam * ((vol - self.v_star) ** 2).sum(1)
        if self.offset_scale is not None:
            energy = energy + self.offset * self.offset_scale
        return energy


PADDINGS = ("zeros", "circular")
"""Padding of the NH's 3x3 convolutions: ``"zeros"`` (the official code's 'SAME') or ``"circular"`` (periodic)."""


class _NHLayer(nn.Module):
    """One NH layer (Fig. 2 of the paper; the official NHLayer with one layer per block).

    ``z_c = down(x_c)`` (a ``f x f`` stride-``f`` convolution to ``edge_dim`` channels, 1x1 for ``f = 1``);
    ``A = up(sum_c act(conv(act(conv(z_c)))))`` (the cell-wise CNN phi, summed over cells, then a stride-``f``
    transposed convolution, zero-padded back to the lattice size); ``y_c = conv(act(conv([x_c, A]))) + res(x_c)``
    (the cell-interaction CNN psi, no activation after the residual sum; ``res`` is a 1x1 convolution when the
    channel count changes, else the identity).
    """

    def __init__(self, c_in: int, node_dim: int, edge_dim: int, padding: str, edge_downsampling: int):
        super().__init__()
        conv = {"kernel_size": 3, "padding": 1, "padding_mode": padding}
        f = edge_downsampling
        self.down = nn.Conv2d(c_in, edge_dim, f, stride=f)
        self.phi1, self.phi2 = nn.Conv2d(edge_dim, edge_dim, **conv), nn.Conv2d(edge_dim, edge_dim, **conv)
        self.up = nn.ConvTranspose2d(edge_dim, edge_dim, f, stride=f)
        self.psi1 = nn.Conv2d(c_in + edge_dim, node_dim, **conv)
        self.psi2 = nn.Conv2d(node_dim, node_dim, **conv)
        self.res = nn.Identity() if c_in == node_dim else nn.Conv2d(c_in, node_dim, 1)

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        """``x`` (n * C, c_in, h, w): ``n`` lattices of C set elements each; returns (n * C, node_dim, h, w)."""
        m = F.silu(self.phi2(F.silu(self.phi1(self.down(x)))))
        agg = self.up(m.reshape(n, -1, *m.shape[1:]).sum(1))  # (n, edge_dim, h', w')
        dh, dw = x.shape[-2] - agg.shape[-2], x.shape[-1] - agg.shape[-1]
        if dh or dw:  # f does not divide the side: zero-pad A back to it (floor before, ceil after)
            agg = F.pad(agg, (dw // 2, dw - dw // 2, dh // 2, dh - dh // 2))
        c = x.shape[0] // n
        agg = agg.unsqueeze(1).expand(n, c, *agg.shape[1:]).reshape(n * c, *agg.shape[1:])
        return self.psi2(F.silu(self.psi1(torch.cat([x, agg], 1)))) + self.res(x)


class _ResidualLinear(nn.Module):
    """``act(Linear(x)) + res(x)``: one block of the readout MLP (``res`` linear when the width changes)."""

    def __init__(self, a: int, b: int):
        super().__init__()
        self.lin = nn.Linear(a, b)
        self.res = nn.Identity() if a == b else nn.Linear(a, b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.lin(x)) + self.res(x)


class NeuralHamiltonian(nn.Module):
    """Neural Hamiltonian (NH): a cell-permutation-invariant energy (Minartz et al., Sec. 4.1, Fig. 2).

    The set elements are all ids ``c = 0..C``, the medium included. Element c's input is
    ``[mask_c, onehot(type 0..n_types)]`` (``2 + n_types`` channels: its own mask and the lattice-wide type map,
    type 0 = medium included). A 3x3 stride-3 convolution (no padding, no activation) embeds each element; each
    block is one NH layer (:class:`_NHLayer`) followed by a max-pool of ``pools[l]``. Readout: 1x1 convolution to
    ``readout_dim`` channels, sum over the set, sum over space, residual MLP blocks ``act(Linear) + res`` of
    widths ``mlp_dims``, and a final Linear to a scalar. This is the official architecture (kminartz/NeuralCPM,
    ``models.NeuralHamiltonian`` with ``use_residual=True`` and one layer per block).

    Args:
        n_types: number of cell types (medium excluded).
        node_dims: channels of z after each block (the embedding has ``node_dims[0]``).
        edge_dims: channels of the aggregate A in each block.
        pools: max-pool size after each block (1 = none).
        mlp_dims: widths of the readout MLP blocks.
        readout_dim: channels of the 1x1 convolution before the sums (default ``mlp_dims[0]``; official 32).
        padding: ``"zeros"`` (official 'SAME' zero padding; the energy is then not invariant to circular shifts)
            or ``"circular"`` (ours: periodic padding; with lattice sides that are multiples of :attr:`stride` the
            energy is then invariant to circular shifts by multiples of it).
        edge_downsampling: the factor ``f`` of the down/up-sampling around phi (official default 1).

    The official Exp 1/2 setting is ``node_dims = edge_dims = (8, 16, 32, 32)``, ``pools = (3, 2, 1, 1)``,
    ``readout_dim = 32``, ``mlp_dims = (32, 32)``. With ``padding="zeros"`` any lattice works whose side survives
    the strides (convolutions and pools round down, as in the official code).
    """

    def __init__(self, n_types: int, node_dims: Sequence[int] = (8, 16), edge_dims: Sequence[int] = (8, 16),
                 pools: Sequence[int] = (1, 1), mlp_dims: Sequence[int] = (16, 16), readout_dim: int | None = None,
                 padding: str = "zeros", edge_downsampling: int = 1):
        super().__init__()
        if not (len(node_dims) == len(edge_dims) == len(pools)) or len(node_dims) == 0:
            raise ValueError(f"node_dims, edge_dims and pools need one equal, non-zero length; got "
                             f"{len(node_dims)}, {len(edge_dims)}, {len(pools)}")
        if n_types < 1 or any(p < 1 for p in pools) or not mlp_dims:
            raise ValueError(f"need n_types >= 1, pools >= 1 and non-empty mlp_dims; got {n_types}, {pools}, "
                             f"{mlp_dims}")
        if padding not in PADDINGS:
            raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}")
        readout_dim = mlp_dims[0] if readout_dim is None else readout_dim
        if min(*node_dims, *edge_dims, *mlp_dims, readout_dim) < 1 or edge_downsampling < 1:
            raise ValueError(f"node_dims, edge_dims, mlp_dims, readout_dim and edge_downsampling must be >= 1; got "
                             f"{node_dims}, {edge_dims}, {mlp_dims}, {readout_dim}, {edge_downsampling}")
        self.n_types, self.pools, self.padding = n_types, tuple(pools), padding
        self.embed = nn.Conv2d(2 + n_types, node_dims[0], 3, stride=3)
        self.layers = nn.ModuleList()
        c = node_dims[0]
        for nd, ed in zip(node_dims, edge_dims):
            self.layers.append(_NHLayer(c, nd, ed, padding, edge_downsampling))
            c = nd
        self.readout = nn.Conv2d(c, readout_dim, 1)
        widths = (readout_dim, *mlp_dims)
        self.mlp = nn.Sequential(*[_ResidualLinear(a, b) for a, b in zip(widths[:-1], widths[1:])],
                                 nn.Linear(widths[-1], 1))

    @property
    def stride(self) -> int:
        """Total spatial stride 3 * prod(pools)."""
        s = 3
        for p in self.pools:
            s *= p
        return s

    def forward(self, sigma: torch.Tensor, cell_types: torch.Tensor) -> torch.Tensor:
        """Energies (N,) of lattices ``sigma`` (N, h, w), in the network's dtype."""
        _check_lattices(sigma, cell_types)
        n, h, w = sigma.shape
        if self.padding == "circular" and (h % self.stride or w % self.stride):
            raise ValueError(f"with circular padding the lattice {h}x{w} must be a multiple of the total stride "
                             f"{self.stride}")
        side = min(h, w) // 3
        for p in self.pools:
            side //= p
        if side < 1:
            raise ValueError(f"lattice {h}x{w} is too small for the total stride {self.stride}")
        if not cell_types.is_meta and (int(cell_types.max()) > self.n_types or int(cell_types.min()) < 0):
            raise ValueError(f"cell_types must hold types in [0, n_types={self.n_types}], got "
                             f"[{int(cell_types.min())}, {int(cell_types.max())}]")
        c = cell_types.numel()  # every id 0..C is a set element, the medium included
        dtype = self.embed.weight.dtype
        masks = F.one_hot(sigma, c).permute(0, 3, 1, 2).to(dtype)  # (N, C+1, h, w)
        types = F.one_hot(cell_types[sigma], self.n_types + 1).permute(0, 3, 1, 2).to(dtype)  # type 0 included
        x = torch.cat([masks.unsqueeze(2), types.unsqueeze(1).expand(n, c, self.n_types + 1, h, w)], 2)
        z = self.embed(x.reshape(n * c, 2 + self.n_types, h, w))
        for layer, pool in zip(self.layers, self.pools):
            z = layer(z, n)
            if pool > 1:
                z = F.max_pool2d(z, pool)
        r = self.readout(z)
        pooled = r.reshape(n, c, *r.shape[1:]).sum((1, 3, 4))  # sum over the set, then over space
        return self.mlp(pooled).squeeze(-1)


class ClosureHamiltonian(nn.Module):
    """Hybrid "neural closure": ``H = w_b * H_sym + w_n * H_NN`` with trainable weights (init 0.25 and 1.0).

    The energy has the dtype of ``w_b`` and ``w_n`` (float32 unless converted): the float64 symbolic energy
    is rounded to it before the sum.
    """

    def __init__(self, sym: nn.Module, nh: nn.Module, w_b: float = 0.25, w_n: float = 1.0):
        super().__init__()
        if not (isinstance(sym, nn.Module) and isinstance(nh, nn.Module)):
            raise TypeError(f"sym and nh must be nn.Modules (Hamiltonians), got {type(sym).__name__}, "
                            f"{type(nh).__name__}")
        if not (math.isfinite(w_b) and math.isfinite(w_n)):
            raise ValueError(f"w_b and w_n must be finite, got {w_b}, {w_n}")
        self.sym, self.nh = sym, nh
        self.w_b = nn.Parameter(torch.tensor(float(w_b)))
        self.w_n = nn.Parameter(torch.tensor(float(w_n)))

    def forward(self, sigma: torch.Tensor, cell_types: torch.Tensor) -> torch.Tensor:
        """Energies (N,) of lattices ``sigma`` (N, h, w)."""
        dtype = self.w_b.dtype
        return self.w_b * self.sym(sigma, cell_types).to(dtype) + self.w_n * self.nh(sigma, cell_types).to(dtype)


@dataclass(frozen=True)
class SymbolicFitConfig:
    """The official Exp-0 recipe for fitting a symbolic Hamiltonian's J and lam (V* fixed) with :func:`train_ebm`.

    Chains restart every step from the step's real batch (``chain_init="data"``), Adam, no energy regulariser
    (Sec. 4.3, Algorithm 1, as the official Exp-0 code runs it). The defaults are the quick preset's; the official
    values are in each field's note.
    """

    steps: int = 300
    """Training steps, in [0, 10^7] (official: 10,000)."""
    mcs_per_step: float = 0.25
    """Monte-Carlo sweeps of the data-started chains per step, > 0 (official: 1)."""
    batch_size: int = 16
    """Real lattices, and chains, per step, in [1, 10^5] (official: 16 + 16)."""
    lr: float = 1e-2
    """Adam learning rate, > 0 (official: 1e-3 for 10,000 steps)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("steps", "batch_size"), finite=("mcs_per_step", "lr"),
                     positive=("mcs_per_step", "batch_size", "lr"), nonnegative=("steps",),
                     at_most={"steps": 10**7, "batch_size": 10**5})


@dataclass(frozen=True)
class NeuralCPMConfig:
    """The NH's size (Sec. 4.1, Fig. 2) and the official Exp-1 training recipe (Sec. 4.3, Algorithm 1: persistent
    chains with type-permuted resets, one learning rate, energy regulariser) shared by the symbolic, NH and
    closure Hamiltonians.

    The NH is ``NeuralHamiltonian(n_types, node_dims=node_dims, edge_dims=node_dims, pools=pools,
    mlp_dims=(mlp_dim, mlp_dim), readout_dim=mlp_dim)``; each update runs ``mcmc_steps`` steps of
    :func:`parallel_cpm`. The defaults are the quick preset's (a smaller NH and budget than the official ones,
    given in each field's note).
    """

    node_dims: tuple[int, ...] = (4, 8)
    """NH node (and edge) channels per block, each in [1, 10^4] (official: 8, 16, 32, 32)."""
    pools: tuple[int, ...] = (2, 1)
    """NH max-pool after each block, one per block, each in [1, 10^4] (official: 3, 2, 1, 1)."""
    mlp_dim: int = 16
    """Width of the NH readout and of its two MLP blocks, in [1, 10^4] (official: 32)."""
    steps: int = 100
    """Training updates per model, in [0, 10^7] (official: 10,000)."""
    mcmc_steps: int = 2
    """Parallel-sampler steps per update, in [1, 10^6] (each proposes ``n_parallel`` flips per chain; official:
    0.5 MCS)."""
    n_chains: int = 8
    """Persistent chains, and real lattices per update, in [1, 10^5] (official: 16 + 16)."""
    lr: float = 1e-2
    """Adam learning rate of every parameter, > 0 (official: 1e-3 for 10,000 steps)."""
    reg: float = 5e-4
    """Energy regulariser of every model, >= 0 (official Exp 1/2: 5e-4)."""

    def __post_init__(self) -> None:
        check_fields(self, integer=("node_dims", "pools", "mlp_dim", "steps", "mcmc_steps", "n_chains"),
                     finite=("lr", "reg"), positive=("node_dims", "pools", "mlp_dim", "mcmc_steps", "n_chains", "lr"),
                     nonnegative=("steps", "reg"), nonempty=("node_dims", "pools"),
                     at_most={"node_dims": 10**4, "pools": 10**4, "mlp_dim": 10**4, "steps": 10**7,
                              "mcmc_steps": 10**6, "n_chains": 10**5})
        if len(self.pools) != len(self.node_dims):
            raise ConfigError(f"NeuralCPMConfig.pools must have one entry per block (len(node_dims) = "
                              f"{len(self.node_dims)}), got {self.pools!r}")


CHAIN_INITS = ("persistent", "data")
"""Chain starts of :func:`train_ebm`: persistent with type-permuted resets (Exp 1/2), or data every step (Exp 0)."""

PROPOSALS = ("push", "pull")
"""CPM proposals: ``"push"`` (the official code: a boundary site's id is copied into a Moore neighbour with a
different id) and ``"pull"`` (a boundary site takes the id of a uniformly drawn Moore neighbour)."""


def _neighbour_weights(sigma: torch.Tensor, i: torch.Tensor, j: torch.Tensor, moves: torch.Tensor,
                       ar: torch.Tensor) -> torch.Tensor:
    """Official neighbour weights (B, K, 8): 1 for a neighbour with another id than the site, plus 1e-6."""
    h, w = sigma.shape[1:]
    nb = sigma[ar[:, None, None], (i[..., None] + moves[:, 0]) % h, (j[..., None] + moves[:, 1]) % w]
    return (nb != sigma[ar[:, None], i, j][..., None]).double() + 1e-6


@torch.no_grad()
def parallel_cpm(H: nn.Module, sigma0: torch.Tensor, cell_types: torch.Tensor, n_steps: int, n_parallel: int,
                 T: float = 1.0, generator: torch.Generator | None = None, proposal: str = "push",
                 keep_cells: bool = False) -> torch.Tensor:
    """Approximate batched CPM kinetics for any Hamiltonian (one full energy per proposal; Algorithm 2).

    Each step, every chain draws ``n_parallel`` distinct boundary sites (sites with a differently labelled Moore
    neighbour). With ``proposal="push"`` (the official kernel) each site draws a neighbour with weight 1 if its
    id differs from the site's (1e-6 otherwise) and proposes copying the site's id into it; with ``"pull"`` the
    site proposes taking a uniformly drawn neighbour's id. Every single-flip proposal gets its own exact
    ``dH = H(x') - H(x)`` w.r.t. the current state and its own Metropolis test; all accepted flips are applied
    together (when two accepted flips write the same site, the first drawn wins). The joint move is not
    Metropolis-corrected (it breaks detailed balance; :func:`metropolis_cpm` is exact). ``keep_cells=True``
    rejects losses that would empty a cell (the official kernel has no such rule for a neural H). Returns the new
    lattices ``(B, h, w)`` on ``sigma0``'s device. Random numbers are drawn on ``generator``'s device (a CPU
    generator gives the same chains on every device) and moved to the lattices.
    """
    if sigma0.ndim != 3 or not (n_steps >= 0) or not (n_parallel >= 1):  # `not >=` also rejects NaN
        raise ValueError(f"need sigma0 (B, h, w), n_steps >= 0, n_parallel >= 1; got shape "
                         f"{tuple(sigma0.shape)}, n_steps={n_steps}, n_parallel={n_parallel}")
    if not (T > 0):  # also rejects NaN
        raise ValueError(f"T must be > 0, got {T}")
    if proposal not in PROPOSALS:
        raise ValueError(f"proposal must be one of {PROPOSALS}, got {proposal!r}")
    _check_lattices(sigma0, cell_types)
    sigma = sigma0.clone()
    b, h, w = sigma.shape
    if n_parallel > h * w:
        raise ValueError(f"n_parallel must be <= h * w = {h * w}, got {n_parallel}")
    n_ids = cell_types.numel()
    device = sigma.device
    draw = generator.device if generator is not None else device  # where the random numbers come from
    moves = torch.tensor(MOORE, device=device)
    ar = torch.arange(b, device=device)
    ks = torch.arange(n_parallel, device=device)
    for _ in range(n_steps):
        bound = torch.zeros_like(sigma, dtype=torch.bool)
        for di, dj in MOORE:
            bound |= sigma != torch.roll(sigma, (-di, -dj), (1, 2))
        prob = bound.flatten(1).float() + 1e-9
        site = torch.multinomial(prob.to(draw), n_parallel, replacement=False, generator=generator).to(device)
        i, j = site // w, site % w
        if proposal == "push":
            wts = _neighbour_weights(sigma, i, j, moves, ar)
            pick = torch.multinomial(wts.reshape(-1, 8).to(draw), 1, generator=generator).to(device)
            d = moves[pick.reshape(b, n_parallel)]
            ti, tj = (i + d[..., 0]) % h, (j + d[..., 1]) % w  # the target: a neighbour of the site
            new = sigma[ar[:, None], i, j]
        else:
            d = moves[torch.randint(8, (b, n_parallel), generator=generator, device=draw).to(device)]
            ti, tj = i, j  # the target is the site itself
            new = sigma[ar[:, None], (i + d[..., 0]) % h, (j + d[..., 1]) % w]
        old = sigma[ar[:, None], ti, tj]
        prop = sigma.unsqueeze(1).repeat(1, n_parallel, 1, 1)
        prop[ar[:, None], ks[None], ti, tj] = new
        e = H(torch.cat([sigma, prop.reshape(-1, h, w)]), cell_types)
        dh = e[b:].reshape(b, n_parallel).double() - e[:b, None].double()
        u = torch.rand(b, n_parallel, generator=generator, dtype=torch.float64, device=draw).to(device)
        acc = (new != old) & (u < torch.exp(-dh.clamp(min=0) / T))
        tid = ti * w + tj  # one write per site: the first accepted proposal of each target wins
        first = torch.full((b, h * w), n_parallel, dtype=torch.long, device=device)
        first.scatter_reduce_(1, tid, torch.where(acc, ks[None], n_parallel), "amin")
        acc &= first.gather(1, tid) == ks[None]
        if keep_cells:
            vol = F.one_hot(sigma.flatten(1), n_ids).sum(1)
            lost = torch.zeros(b, n_ids, dtype=torch.long, device=device).scatter_add_(1, old, acc.long())
            acc &= ~((old != 0) & (vol.gather(1, old) - lost.gather(1, old) < 1))
        sigma[ar[:, None].expand_as(ti)[acc], ti[acc], tj[acc]] = new[acc]
    return sigma


def permute_cell_ids(sigma: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Randomly relabel cell ids (medium stays 0); with shared cell_types this permutes the cells' types.

    The permutation is drawn on ``generator``'s device (CPU by default) and applied on ``sigma``'s.
    """
    if not isinstance(sigma, torch.Tensor) or sigma.is_floating_point() or sigma.is_complex():
        raise TypeError(f"sigma must be an integer tensor of cell ids, got "
                        f"{sigma.dtype if isinstance(sigma, torch.Tensor) else type(sigma).__name__}")
    if sigma.numel() and int(sigma.min()) < 0:
        raise ValueError(f"sigma ids must be >= 0, got {int(sigma.min())}")
    c = int(sigma.max()) if sigma.numel() else 0
    draw = generator.device if generator is not None else "cpu"
    perm = torch.cat([torch.zeros(1, dtype=torch.long, device=draw),
                      1 + torch.randperm(c, generator=generator, device=draw)])
    return perm.to(sigma.device)[sigma]


def train_ebm(H: nn.Module, data: torch.Tensor, cell_types: torch.Tensor, steps: int, lr: float = 1e-3,
              reg: float = 5e-4, p_reset: float = 0.025, n_chains: int = 16, batch_size: int = 16,
              mcs_per_step: float = 0.5, n_parallel: int = 50, ema: float = 0.0, seed: int = 0,
              sampler=None, lr_symbolic: float | None = None, chain_init: str = "persistent",
              proposal: str = "push", keep_cells: bool = False) -> dict[str, list[float]]:
    """Maximum-likelihood EBM training by short-run MCMC (Minartz et al., Sec. 4.3, Algorithm 1).

    Loss ``mean H(real) - mean H(sample) + reg * (mean H(real)^2 + mean H(sample)^2)`` with Adam. Each step
    draws a real batch of ``max(batch_size, n_chains)`` data lattices (the loss uses the first ``batch_size``).
    With ``chain_init="persistent"`` (the official Exp 1/2 setting) chains start at data and persist; before each
    step a chain is reset to a data lattice with permuted cell ids with probability ``p_reset * mcs_per_step``.
    With ``chain_init="data"`` (the official Exp 0 setting, parameter fitting) the chains restart every step
    from the step's real batch (its first ``n_chains`` lattices), i.e. contrastive divergence. Each step runs
    ``mcs_per_step`` Monte-Carlo sweeps of :func:`parallel_cpm` (``round(mcs_per_step * h * w / n_parallel)``
    steps, with ``proposal`` and ``keep_cells``), or of ``sampler(H, chains, n_sweeps, generator)`` if given.
    With ``ema > 0`` the EMA weights are loaded into ``H`` at the end (the official code tracks an EMA of 0.99
    but its authors "normally used the normal model weights": ``ema=0``). ``lr_symbolic`` (default ``lr``, as
    in the official code) is the learning rate of the parameters of :class:`SymbolicHamiltonian` submodules.
    Defaults are the official Exp 1 settings. Returns the loss and energy-gap history.

    ``H``, ``data`` and ``cell_types`` share one device; the random draws come from a CPU generator
    seeded by ``seed`` and are moved there, so every device runs the same chains.
    """
    if data.ndim != 3 or data.shape[0] < 1:
        raise ValueError(f"data must be (N, h, w) lattices, got shape {tuple(data.shape)}")
    _check_lattices(data, cell_types)
    if not (steps >= 0 and lr > 0 and 0 <= p_reset <= 1 and mcs_per_step > 0 and 0 <= ema < 1 and reg >= 0):
        raise ValueError(f"bad training settings: steps={steps}, lr={lr}, p_reset={p_reset}, "
                         f"mcs_per_step={mcs_per_step}, ema={ema}, reg={reg}")
    if n_chains < 1 or batch_size < 1 or n_parallel < 1:
        raise ValueError(f"n_chains, batch_size and n_parallel must be >= 1, got {n_chains}, {batch_size}, "
                         f"{n_parallel}")
    if chain_init not in CHAIN_INITS:
        raise ValueError(f"chain_init must be one of {CHAIN_INITS}, got {chain_init!r}")
    if proposal not in PROPOSALS:
        raise ValueError(f"proposal must be one of {PROPOSALS}, got {proposal!r}")
    g = torch.Generator().manual_seed(seed)
    n, h, w = data.shape
    device = data.device
    chains = data[torch.randint(n, (n_chains,), generator=g).to(device)].clone()
    sym_ids = {id(p) for m in H.modules() if isinstance(m, SymbolicHamiltonian) for p in m.parameters()}
    groups = [{"params": [p for p in H.parameters() if p.requires_grad and id(p) not in sym_ids], "lr": lr},
              {"params": [p for p in H.parameters() if p.requires_grad and id(p) in sym_ids],
               "lr": lr if lr_symbolic is None else lr_symbolic}]
    opt = torch.optim.Adam([gr for gr in groups if gr["params"]])
    avg = copy.deepcopy(H) if ema > 0 else None
    n_mcmc = max(1, round(mcs_per_step * h * w / n_parallel))
    hist: dict[str, list[float]] = {"loss": [], "gap": []}
    for _ in range(steps):
        real = data[torch.randint(n, (max(batch_size, n_chains),), generator=g).to(device)]
        if chain_init == "data":
            chains = real[:n_chains].clone()
        else:
            reset = (torch.rand(n_chains, generator=g) < p_reset * mcs_per_step).to(device)
            if reset.any():
                fresh = data[torch.randint(n, (int(reset.sum()),), generator=g).to(device)]
                chains[reset] = torch.stack([permute_cell_ids(x, g) for x in fresh])
        if sampler is None:
            chains = parallel_cpm(H, chains, cell_types, n_mcmc, n_parallel, generator=g, proposal=proposal,
                                  keep_cells=keep_cells)
        else:
            chains = sampler(H, chains, mcs_per_step, g)
        real = real[:batch_size]
        e_real, e_fake = H(real, cell_types), H(chains, cell_types)
        loss = e_real.mean() - e_fake.mean() + reg * ((e_real ** 2).mean() + (e_fake ** 2).mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if avg is not None:
            with torch.no_grad():
                for pa, p in zip(avg.parameters(), H.parameters()):
                    pa.mul_(ema).add_(p, alpha=1 - ema)
        hist["loss"].append(float(loss.detach()))
        hist["gap"].append(float((e_real.mean() - e_fake.mean()).detach()))
    if avg is not None:
        H.load_state_dict(avg.state_dict())
    return hist


def fit_symbolic(data: np.ndarray, cell_types: np.ndarray, v_star: float, cfg: SymbolicFitConfig, n_flips: int,
                 rng: np.random.Generator, seed: int = 0, device: str = "cpu"
                 ) -> tuple[SymbolicHamiltonian, CellsortHamiltonian]:
    """Fit J and lam of a symbolic Hamiltonian (V* known and fixed) by the official Exp-0 protocol.

    The official Exp-0 model: ``J = softplus(gamma) * J_raw + 2`` with ``J_raw ~ U(-1, 1)`` per pair and
    ``lam = softplus(raw)``, ``raw ~ U(0.1, 2)`` (both drawn from ``rng``, in that order). :func:`train_ebm` then
    runs ``cfg.steps`` steps with chains restarted from each step's real batch (``chain_init="data"``), no
    regulariser, and as sampler the official kernel :func:`parallel_cellsort_cpm` with the model's exact local
    dH: ``max(1, round(cfg.mcs_per_step * h * w / n_flips))`` kernel steps of ``n_flips`` simultaneous flip
    attempts per step (drawn from ``rng``, on the CPU).

    Args:
        data: lattices ``(N, h, w)`` (integer cell ids).
        cell_types: ``(C + 1,)`` type of each id (0 = medium), types ``1..n_types``.
        v_star: the known target volume.
        cfg: the recipe's settings.
        n_flips: flip attempts per kernel step.
        rng: the NumPy generator of the initial parameters and of the kernel.
        seed: seed of :func:`train_ebm`'s draws (real batches).
        device: where the model and the data live during training.

    Returns:
        ``(model, initial)``: the fitted :class:`SymbolicHamiltonian` and its initial parameters as a
        :class:`CellsortHamiltonian`.
    """
    n_types = int(np.max(cell_types))
    n_pairs = (n_types + 1) * (n_types + 2) // 2 - 1
    model = SymbolicHamiltonian(n_types, J_init=rng.uniform(-1, 1, n_pairs), lam_init=float(np.log1p(np.exp(
        rng.uniform(0.1, 2.0)))), v_star=v_star, J_bias=2.0).to(device)
    initial = model.to_cellsort()
    h, w = data.shape[1:]
    n_kernel_steps = max(1, round(cfg.mcs_per_step * (h * w) / n_flips))

    def sampler(H, chains, sweeps, g):  # the official kernel with the exact local dH, on the CPU
        out = parallel_cellsort_cpm(H.to_cellsort(), chains.cpu().numpy(), cell_types, n_kernel_steps, n_flips,
                                    rng=rng)
        return torch.from_numpy(out).to(chains.device)

    train_ebm(model, torch.from_numpy(data).to(device), torch.from_numpy(cell_types).to(device), cfg.steps,
              lr=cfg.lr, reg=0.0, n_chains=cfg.batch_size, batch_size=cfg.batch_size, mcs_per_step=cfg.mcs_per_step,
              seed=seed, sampler=sampler, chain_init="data")
    return model, initial
