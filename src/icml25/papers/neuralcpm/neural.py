"""Neural Hamiltonians for the CPM, the approximate parallel sampler, and EBM training (PyTorch).

Minartz et al., "Deep Neural Cellular Potts Models" (arXiv 2502.02129). Lattices are long tensors
``sigma (N, h, w)`` with a shared ``cell_types (C + 1,)`` (0 = medium). Every Hamiltonian here is an
``nn.Module`` mapping ``(sigma, cell_types)`` to one energy per lattice, shape ``(N,)``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from icml25.papers.neuralcpm.cpm import MOORE, CellsortHamiltonian

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
    if not sigma.is_meta and sigma.numel() and (int(sigma.min()) < 0 or int(sigma.max()) >= cell_types.numel()):
        raise ValueError(f"sigma ids must lie in [0, {cell_types.numel() - 1}], got "
                         f"[{int(sigma.min())}, {int(sigma.max())}]")


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
    """Differentiable cell-sorting Hamiltonian with learnable J, lam (softplus) and optionally V*.

    ``H = 1/4 sum_{a<=b} J_ab M_ab + softplus(lam_raw) sum_c (V_c - V*)^2`` with one shared V* and lam,
    as in the paper's symbolic baseline; ``J_00`` is fixed to 0.
    """

    def __init__(self, n_types: int, J_init: float = 1.0, lam_init: float = 0.5, v_star: float = 100.0,
                 learn_v_star: bool = False):
        super().__init__()
        if n_types < 1:
            raise ValueError(f"n_types must be >= 1, got {n_types}")
        if not all(map(math.isfinite, (J_init, lam_init, v_star))) or not lam_init > 0:
            raise ValueError(f"need finite J_init and v_star and a finite lam_init > 0, got J_init={J_init}, "
                             f"lam_init={lam_init}, v_star={v_star}")
        self.n_types = n_types
        n_pairs = (n_types + 1) * (n_types + 2) // 2 - 1
        self.J_pairs = nn.Parameter(torch.full((n_pairs,), float(J_init), dtype=torch.float64))
        self.lam_raw = nn.Parameter(torch.tensor(float(lam_init), dtype=torch.float64).expm1().log())
        self.v_star = nn.Parameter(torch.tensor(float(v_star), dtype=torch.float64), requires_grad=learn_v_star)

    @property
    def lam(self) -> torch.Tensor:
        """Volume stiffness softplus(lam_raw)."""
        return F.softplus(self.lam_raw)

    def J_matrix(self) -> torch.Tensor:
        """The symmetric ``(n_types+1, n_types+1)`` contact matrix."""
        k = self.n_types + 1
        like = {"dtype": self.J_pairs.dtype, "device": self.J_pairs.device}
        iu = torch.triu_indices(k, k, device=like["device"])
        J = torch.zeros(k, k, **like)
        vals = torch.cat([torch.zeros(1, **like), self.J_pairs])
        J = J.index_put((iu[0], iu[1]), vals)
        return J + J.T - torch.diag(torch.diag(J))

    def to_cellsort(self) -> CellsortHamiltonian:
        """Export the current parameters as an exact NumPy :class:`CellsortHamiltonian`."""
        with torch.no_grad():
            return CellsortHamiltonian(self.J_matrix().cpu().numpy(), float(self.lam), float(self.v_star))

    def forward(self, sigma: torch.Tensor, cell_types: torch.Tensor) -> torch.Tensor:
        """Energies (N,) of lattices ``sigma`` (N, h, w), in the parameters' dtype (float64 unless converted)."""
        _check_lattices(sigma, cell_types)
        dtype = self.J_pairs.dtype
        feats = _contact_features(sigma, cell_types, self.n_types, dtype)
        contact = 0.25 * (feats[:, 1:] * self.J_pairs).sum(1)
        n_ids = cell_types.numel()
        vol = F.one_hot(sigma.flatten(1), n_ids).sum(1)[:, 1:].to(dtype)
        return contact + self.lam * ((vol - self.v_star) ** 2).sum(1)


class _CellCNN(nn.Module):
    """Two 3x3 circular convolutions with SiLU, applied to every cell's map independently."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.c1 = nn.Conv2d(c_in, c_out, 3, padding=1, padding_mode="circular")
        self.c2 = nn.Conv2d(c_out, c_out, 3, padding=1, padding_mode="circular")

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.c2(F.silu(self.c1(z)))


class NeuralHamiltonian(nn.Module):
    """Neural Hamiltonian (NH): a cell-permutation- and (strided) translation-invariant energy.

    Per cell c the input is ``[mask_c, onehot(type 1..n_types)]`` of shape ``(1 + n_types, h, w)``;
    a 3x3 stride-3 convolution embeds it. Block l: ``A = sum_c phi_l(z_c)``,
    ``z_c <- psi_l([z_c, A]) + proj(z_c)``, then max-pool ``pools[l]``. Readout: 1x1 conv, sum over cells,
    sum over space, MLP to a scalar. Lattice sides must be multiples of ``3 * prod(pools)``.

    Args:
        n_types: number of cell types (medium excluded).
        node_dims: channels of z after each block (the embedding has ``node_dims[0]``).
        edge_dims: channels of the aggregated messages phi in each block.
        pools: max-pool size after each block (1 = none).
        mlp_dims: hidden widths of the readout MLP.
    """

    def __init__(self, n_types: int, node_dims: Sequence[int] = (8, 16), edge_dims: Sequence[int] = (8, 16),
                 pools: Sequence[int] = (1, 1), mlp_dims: Sequence[int] = (16, 16)):
        super().__init__()
        if not (len(node_dims) == len(edge_dims) == len(pools)) or len(node_dims) == 0:
            raise ValueError(f"node_dims, edge_dims and pools need one equal, non-zero length; got "
                             f"{len(node_dims)}, {len(edge_dims)}, {len(pools)}")
        if n_types < 1 or any(p < 1 for p in pools) or not mlp_dims:
            raise ValueError(f"need n_types >= 1, pools >= 1 and non-empty mlp_dims; got {n_types}, {pools}, "
                             f"{mlp_dims}")
        self.n_types, self.pools = n_types, tuple(pools)
        self.embed = nn.Conv2d(1 + n_types, node_dims[0], 3, stride=3)
        self.phi, self.psi, self.proj = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        c = node_dims[0]
        for nd, ed in zip(node_dims, edge_dims):
            self.phi.append(_CellCNN(c, ed))
            self.psi.append(_CellCNN(c + ed, nd))
            self.proj.append(nn.Identity() if c == nd else nn.Conv2d(c, nd, 1))
            c = nd
        self.readout = nn.Conv2d(c, mlp_dims[0], 1)
        layers: list[nn.Module] = []
        for a, b in zip(mlp_dims[:-1], mlp_dims[1:]):
            layers += [nn.SiLU(), nn.Linear(a, b)]
        self.mlp = nn.Sequential(*layers, nn.SiLU(), nn.Linear(mlp_dims[-1], 1))

    @property
    def stride(self) -> int:
        """Total spatial stride: shifts by multiples of it leave the energy unchanged."""
        s = 3
        for p in self.pools:
            s *= p
        return s

    def forward(self, sigma: torch.Tensor, cell_types: torch.Tensor) -> torch.Tensor:
        """Energies (N,) of lattices ``sigma`` (N, h, w), in the network's dtype."""
        _check_lattices(sigma, cell_types)
        n, h, w = sigma.shape
        if h % self.stride or w % self.stride:
            raise ValueError(f"lattice {h}x{w} must be a multiple of the total stride {self.stride}")
        c = cell_types.numel() - 1
        dtype = self.embed.weight.dtype
        masks = F.one_hot(sigma, c + 1)[..., 1:].permute(0, 3, 1, 2).to(dtype)  # (N, C, h, w)
        types = F.one_hot(cell_types[sigma], self.n_types + 1)[..., 1:].permute(0, 3, 1, 2).to(dtype)
        x = torch.cat([masks.unsqueeze(2), types.unsqueeze(1).expand(n, c, self.n_types, h, w)], 2)
        z = F.silu(self.embed(x.reshape(n * c, 1 + self.n_types, h, w)))
        for phi, psi, proj, pool in zip(self.phi, self.psi, self.proj, self.pools):
            m = F.silu(phi(z))
            agg = m.reshape(n, c, *m.shape[1:]).sum(1, keepdim=True).expand(n, c, *m.shape[1:])
            z = F.silu(psi(torch.cat([z, agg.reshape(n * c, *m.shape[1:])], 1)) + proj(z))
            if pool > 1:
                z = F.max_pool2d(z, pool)
        r = self.readout(z)
        pooled = r.reshape(n, c, *r.shape[1:]).sum((1, 3, 4))  # sum over cells, then space
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


@torch.no_grad()
def parallel_cpm(H: nn.Module, sigma0: torch.Tensor, cell_types: torch.Tensor, n_steps: int, n_parallel: int,
                 T: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """Approximate batched CPM kinetics for any Hamiltonian (one full energy per proposal).

    Each step, every chain draws ``n_parallel`` boundary sites (sites with a differently labelled
    neighbour) and a random Moore neighbour for each; every single-flip proposal gets its own exact
    ``dH = H(x') - H(x)`` and Metropolis test, and all accepted flips are applied together. The joint
    move is not Metropolis-corrected (it breaks detailed balance; :func:`metropolis_cpm` is exact).
    Losses that would empty a cell are rejected. Returns the new lattices ``(B, h, w)`` on ``sigma0``'s
    device. Random numbers are drawn on ``generator``'s device (a CPU generator gives the same chains on
    every device) and moved to the lattices.
    """
    if sigma0.ndim != 3 or not (n_steps >= 0) or not (n_parallel >= 1):  # `not >=` also rejects NaN
        raise ValueError(f"need sigma0 (B, h, w), n_steps >= 0, n_parallel >= 1; got shape "
                         f"{tuple(sigma0.shape)}, n_steps={n_steps}, n_parallel={n_parallel}")
    if not (T > 0):  # also rejects NaN
        raise ValueError(f"T must be > 0, got {T}")
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
    for _ in range(n_steps):
        bound = torch.zeros_like(sigma, dtype=torch.bool)
        for di, dj in MOORE:
            bound |= sigma != torch.roll(sigma, (-di, -dj), (1, 2))
        prob = bound.flatten(1).float() + 1e-9
        site = torch.multinomial(prob.to(draw), n_parallel, replacement=False, generator=generator).to(device)
        d = moves[torch.randint(8, (b, n_parallel), generator=generator, device=draw).to(device)]
        i, j = site // w, site % w
        new = sigma[ar[:, None], (i + d[..., 0]) % h, (j + d[..., 1]) % w]
        old = sigma[ar[:, None], i, j]
        prop = sigma.unsqueeze(1).repeat(1, n_parallel, 1, 1)
        prop[ar[:, None], torch.arange(n_parallel, device=device)[None], i, j] = new
        e = H(torch.cat([sigma, prop.reshape(-1, h, w)]), cell_types)
        dh = e[b:].reshape(b, n_parallel).double() - e[:b, None].double()
        vol = F.one_hot(sigma.flatten(1), n_ids).sum(1)
        u = torch.rand(b, n_parallel, generator=generator, dtype=torch.float64, device=draw).to(device)
        acc = (new != old) & (u < torch.exp(-dh.clamp(min=0) / T))
        lost = torch.zeros(b, n_ids, dtype=torch.long, device=device).scatter_add_(1, old, acc.long())
        acc &= ~((old != 0) & (vol.gather(1, old) - lost.gather(1, old) < 1))
        sigma[ar[:, None].expand_as(i)[acc], i[acc], j[acc]] = new[acc]
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
              reg: float = 5e-3, p_reset: float = 0.025, n_chains: int = 16, batch_size: int = 16,
              mcs_per_step: float = 0.25, n_parallel: int = 16, ema: float = 0.0, seed: int = 0,
              sampler=None, lr_symbolic: float | None = None) -> dict[str, list[float]]:
    """Maximum-likelihood EBM training by short-run persistent MCMC (Minartz et al., Sec. 3).

    Loss ``mean H(real) - mean H(sample) + reg * (mean H(real)^2 + mean H(sample)^2)`` with Adam.
    Chains start at data and persist; before each step a chain is reset to a random data lattice with
    permuted cell ids with probability ``p_reset * mcs_per_step``. Each step runs ``mcs_per_step``
    Monte-Carlo sweeps of :func:`parallel_cpm` (``round(mcs_per_step * h * w / n_parallel)`` steps), or
    of ``sampler(H, chains, n_sweeps, generator)`` if given. With ``ema > 0`` the EMA weights are loaded
    into ``H`` at the end. ``lr_symbolic`` (default ``lr``) is the learning rate of the parameters of
    :class:`SymbolicHamiltonian` submodules. Returns the loss and energy-gap history.

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
        reset = (torch.rand(n_chains, generator=g) < p_reset * mcs_per_step).to(device)
        if reset.any():
            fresh = data[torch.randint(n, (int(reset.sum()),), generator=g).to(device)]
            chains[reset] = torch.stack([permute_cell_ids(x, g) for x in fresh])
        if sampler is None:
            chains = parallel_cpm(H, chains, cell_types, n_mcmc, n_parallel, generator=g)
        else:
            chains = sampler(H, chains, mcs_per_step, g)
        real = data[torch.randint(n, (batch_size,), generator=g).to(device)]
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
