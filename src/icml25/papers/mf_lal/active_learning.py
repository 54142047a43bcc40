"""MF-LAL's acquisition and active-learning loop, and the baselines run at equal oracle cost.

One round of the loop (official ``main.py``, ``__main__``):

1. Train every fidelity's loss (:func:`~icml25.papers.mf_lal.model.level_loss`) for ``train_iters`` passes.
2. Generate at fidelity 0 (:func:`generate`): optimise ``M`` latent points of the level's SVGP with Adam for
   ``acq_steps`` steps on ``mean - beta * var + c_l2 |z|^2 - c_lik * density(z; target) + c_sim * cos-sim``,
   decode them (argmax), re-encode the molecules to get their posterior (the next level's target), and
   replace molecules that fail the filter by fresh ones until all ``M`` pass.
3. Chain: generate at fidelity 1 with fidelity 0's posterior as the target, and so on up to the current
   fidelity.
4. Query the first of the ``M`` molecules at the current fidelity and add it to that fidelity's data.
5. Move up one fidelity when the SVGP's posterior variance at that molecule is below ``gamma`` or after more
   than ``max_iters`` queries at the current fidelity (:func:`should_move_up`).

Baselines: single-fidelity latent BO (the same loop with one level, the top fidelity), multi-fidelity with a
fixed latent space (a VAE pre-trained alone, frozen; every fidelity's SVGP on its latent) and random sampling
from the prior (z ~ N(0, I), decoded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from icml25.common.checks import check_fields
from icml25.papers.mf_lal.chem import CODE_FILTER, MoleculeFilter, SelfiesVocab, canonical_smiles
from icml25.papers.mf_lal.model import MFLAL, level_loss
from icml25.papers.mf_lal.oracles import MultiFidelityOracle


@dataclass
class MFLALSettings:
    """MF-LAL's settings: the loop's hyper-parameters (:func:`run_active_learning`: training passes, acquisition,
    fidelity switch) and the model's sizes (:meth:`make_model`); defaults are the official ``main.py`` config.

    Per-level tuples have one entry per fidelity (``gammas`` and ``max_iters``: one per level below the top).
    """

    lr: float = 0.000114869430262957
    """Adam learning rate of the model."""
    kld_weight: float = 0.08232923258333508
    """Weight of the KL term."""
    mll_weight: float = 1.3247001146843511
    """Weight of the SVGP's negative ELBO."""
    train_iters: int = 64
    """Training passes over every fidelity's data per round."""
    pretrain_iters: int = 0
    """Extra passes before the first round (0 in the code; CPU presets front-load training here)."""
    batch_size: int = 2 ** 14
    """Rows per mini-batch."""
    M: int = 30
    """Latent points optimised per acquisition."""
    acq_steps: int = 100
    """Adam steps of the acquisition."""
    acq_lr: float = 0.1
    """Adam learning rate of the acquisition."""
    ucb_beta: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)
    """Weight of the posterior variance (lower score is better: mean - beta * var)."""
    l2_coef: tuple[float, ...] = (0.7054918003005689,) * 4
    """Weight of the mean squared latent norm."""
    likelihood_coef: tuple[float, ...] = (0.06407401672042821,) * 4
    """Weight of the density of z under the previous level's posterior."""
    sim_coef: tuple[float, ...] = (0.033837829719624596, 0.5, 4.0, 4.0)
    """Weight of the mean cosine similarity among the M points."""
    gammas: tuple[float, ...] = (0.1, 0.1, 0.1)
    """Move up when the posterior variance of the queried point falls below gamma."""
    max_iters: tuple[int, ...] = (100, 100, 100)
    """...or after more than this many queries at the level."""
    max_resample: int = 30
    """Fresh acquisitions tried to replace molecules failing the filter (the code loops without a limit)."""
    target_in_level_space: bool = True
    """Target distribution of level l: the previous level's molecules re-encoded at level l (True), or their
    posterior at the previous level as the code has it (False; see the docs)."""

    max_len: int = 60
    """SELFIES tokens per molecule, in [8, 10^3] (the model's sequence length)."""
    latent_dim: int = 64
    """Latent dimension of every level, in [1, 10^4]."""
    embedding_dim: int = 64
    """Token embedding size, in [1, 10^4]."""
    hidden: int = 512
    """Width of encoder, decoders and transforms, in [1, 10^4]."""
    kernel_widths: tuple[int, ...] = (512, 256, 32)
    """Deep-kernel feature map widths, each in [1, 10^4]."""
    n_inducing: int = 1000
    """Inducing points per SVGP, in [1, 10^5]."""

    def __post_init__(self) -> None:
        # bounds: a job beyond these would need > ~100 GB or days (model widths, K_ZZ of n_inducing^2 in float64,
        # training and acquisition steps)
        check_fields(self, integer=("train_iters", "pretrain_iters", "batch_size", "M", "acq_steps", "max_iters",
                                    "max_resample", "max_len", "latent_dim", "embedding_dim", "hidden",
                                    "kernel_widths", "n_inducing"),
                     finite=("lr", "kld_weight", "mll_weight", "acq_lr", "ucb_beta", "l2_coef", "likelihood_coef",
                             "sim_coef", "gammas"),
                     positive=("lr", "acq_lr", "train_iters", "batch_size", "M", "acq_steps", "max_resample",
                               "latent_dim", "embedding_dim", "hidden", "kernel_widths", "n_inducing"),
                     nonnegative=("pretrain_iters", "max_iters", "kld_weight", "mll_weight"),
                     nonempty=("ucb_beta", "l2_coef", "likelihood_coef", "sim_coef", "gammas", "max_iters",
                               "kernel_widths"),
                     at_least={"max_len": 8},
                     at_most={"train_iters": 10**6, "pretrain_iters": 10**6, "batch_size": 10**7, "M": 10**4,
                              "acq_steps": 10**6, "max_iters": 10**6, "max_resample": 10**5, "max_len": 10**3,
                              "latent_dim": 10**4, "embedding_dim": 10**4, "hidden": 10**4, "kernel_widths": 10**4,
                              "n_inducing": 10**5})

    def make_model(self, vocab_size: int, n_levels: int) -> MFLAL:
        """A fresh :class:`MFLAL` of these sizes (draws its initial weights from torch's global RNG)."""
        return MFLAL(vocab_size, self.max_len, n_levels, self.latent_dim, self.embedding_dim, self.hidden,
                     tuple(self.kernel_widths), self.n_inducing)


@dataclass
class LevelData:
    """Token rows and scores of one fidelity (NaN = unlabelled, used for reconstruction only)."""

    smiles: list[str]
    x: torch.Tensor
    y: torch.Tensor

    def add(self, smiles: str, tokens: list[int], value: float) -> None:
        self.smiles.append(smiles)
        self.x = torch.cat([self.x, torch.tensor([tokens])])
        self.y = torch.cat([self.y, torch.tensor([value], dtype=self.y.dtype)])


def make_level_data(smiles: Sequence[str], values: Sequence[float], vocab: SelfiesVocab, max_len: int) -> LevelData:
    """Tokenise ``smiles`` (rows with ``>= max_len`` tokens are dropped, as in the code)."""
    if len(smiles) != len(values):
        raise ValueError(f"need one value per SMILES, got {len(smiles)} and {len(values)}")
    keep = [(s, v, t) for s, v in zip(smiles, values) if (t := vocab.encode(s, max_len)) is not None]
    x = torch.tensor([t for _, _, t in keep], dtype=torch.long).reshape(-1, max_len)
    y = torch.tensor([v for _, v, _ in keep], dtype=torch.float32)
    return LevelData([s for s, _, _ in keep], x, y)


def should_move_up(posterior_var: float, n_queries: int, level: int, gammas: Sequence[float],
                   max_iters: Sequence[int], top_level: int) -> bool:
    """The code's fidelity switch: below the top, move up when ``posterior_var < gammas[level]`` or
    ``n_queries > max_iters[level]`` (queries made at the current level)."""
    if level >= top_level:
        return False
    return bool(posterior_var < gammas[level] or n_queries > max_iters[level])


def gaussian_density(z: torch.Tensor, mu: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """Per-dimension normal density N(z; mu, exp(log_var)), elementwise (the code's ``gaussian_likelihood``)."""
    std = torch.exp(0.5 * log_var)
    return torch.exp(-0.5 * ((z - mu) / std) ** 2) / (std * np.sqrt(2 * np.pi))


def acquisition_loss(mean: torch.Tensor, var: torch.Tensor, z: torch.Tensor, beta: float, l2_coef: float,
                     likelihood_coef: float, sim_coef: float,
                     target: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """The code's acquisition objective for M points ``z`` (M, d), to minimise:

    ``mean(mu - beta * var) + c_l2 * mean(z^2) - c_lik * L + c_sim * mean_ij cos(z_i, z_j)``, where ``L`` is the
    density of each point summed over dimensions, averaged over the M targets and the M points.
    """
    loss = (mean - beta * var).mean() + l2_coef * (z ** 2).mean()
    if target is not None:
        dens = gaussian_density(z[:, None, :], target[0][None], target[1][None]).sum(-1)  # (M, M targets)
        loss = loss - likelihood_coef * dens.mean()
    sims = F.cosine_similarity(z[:, None, :], z[None, :, :], dim=-1)  # diagonal included, as the code
    return loss + sim_coef * sims.mean()


def acquisition_points(model: MFLAL, level: int, settings: MFLALSettings, generator: torch.Generator,
                       target: tuple[torch.Tensor, torch.Tensor] | None = None, surrogate_level: int | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Optimise ``M`` latent points at ``level`` (code: ``get_top_latent_points``); returns ``(z, mean, var)`` of
    the SVGP at the final points. ``surrogate_level`` picks another level's SVGP (fixed-latent baseline)."""
    gp = model.surrogates[level if surrogate_level is None else surrogate_level]
    k = level if surrogate_level is None else surrogate_level
    z = torch.randn(settings.M, model.latent_dim, generator=generator).requires_grad_(True)
    opt = torch.optim.Adam([z], lr=settings.acq_lr)
    for _ in range(settings.acq_steps):
        opt.zero_grad()
        mean, var = gp(z)
        acquisition_loss(mean, var, z, settings.ucb_beta[k], settings.l2_coef[k], settings.likelihood_coef[k],
                         settings.sim_coef[k], target).backward()
        opt.step()
    with torch.no_grad():
        mean, var = gp(z)
    return z.detach(), mean, var


@dataclass
class Generation:
    """Molecules of one acquisition: ``smiles`` (all passing the filter unless the resampling gave up), their
    posterior at the level (``mu``, ``log_var``), the SVGP variance at their latent points, and counts."""

    smiles: list[str]
    mu: torch.Tensor
    log_var: torch.Tensor
    var: torch.Tensor
    decoded_valid: float
    """Share of the first M decoded molecules that RDKit parses (SELFIES guarantees it unless empty)."""
    first_pass_filter: float
    """Share of the first M decoded molecules passing the filter."""
    n_resample: int


@torch.no_grad()
def _decode(model: MFLAL, vocab: SelfiesVocab, z: torch.Tensor, level: int, latent_level: int
            ) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    x = model.decode(z, level).argmax(-1)
    smiles = [vocab.decode(row) for row in x]
    _, mu, log_var = model.latent(x, latent_level)
    return smiles, mu, log_var


def generate(model: MFLAL, vocab: SelfiesVocab, level: int, settings: MFLALSettings, generator: torch.Generator,
             target: tuple[torch.Tensor, torch.Tensor] | None = None, mol_filter: MoleculeFilter = CODE_FILTER,
             shared_latent: bool = False, next_level: int | None = None) -> Generation:
    """One acquisition step at ``level`` (code: ``acq_step``) with the resampling of invalid molecules.

    The returned posterior is that of the molecules at ``next_level`` when given (our default chain, see
    :attr:`MFLALSettings.target_in_level_space`), else at ``level``.
    """
    was_training = model.training
    model.eval()
    lat = 0 if shared_latent else level
    post = 0 if shared_latent else (level if next_level is None else next_level)
    sur = level if shared_latent else None
    z, _, var = acquisition_points(model, lat, settings, generator, target, surrogate_level=sur)
    smiles, mu, log_var = _decode(model, vocab, z, lat, post)
    decoded_valid = float(np.mean([bool(s) for s in smiles]))
    ok = [mol_filter(s) for s in smiles]
    first = float(np.mean(ok))
    n_resample = 0
    while not all(ok) and n_resample < settings.max_resample:
        n_resample += 1
        sz, _, svar = acquisition_points(model, lat, settings, generator, target, surrogate_level=sur)
        ssmiles, smu, slv = _decode(model, vocab, sz, lat, post)
        j = 0
        for i in range(len(smiles)):
            if ok[i] or j >= len(ssmiles):
                continue
            if mol_filter(ssmiles[j]) and ssmiles[j] not in smiles:
                smiles[i], mu[i], log_var[i], var[i], ok[i] = ssmiles[j], smu[j], slv[j], svar[j], True
            j += 1
    keep = [i for i in range(len(smiles)) if ok[i]]
    model.train(was_training)
    idx = torch.tensor(keep, dtype=torch.long)
    return Generation([smiles[i] for i in keep], mu[idx], log_var[idx], var[idx], decoded_valid, first, n_resample)


def train_passes(model: MFLAL, opt: torch.optim.Optimizer, data: Sequence[LevelData], n_passes: int,
                 settings: MFLALSettings, generator: torch.Generator, shared_latent: bool = False,
                 train_vae: bool = True, mll_weight: float | None = None) -> None:
    """``n_passes`` passes, each one epoch over every level's data in turn (code: ``train_iter`` per level)."""
    model.train()
    w = settings.mll_weight if mll_weight is None else mll_weight
    for _ in range(n_passes):
        for level, d in enumerate(data):
            if len(d.y) == 0:
                continue
            perm = torch.randperm(len(d.y), generator=generator)
            for start in range(0, len(perm), settings.batch_size):
                b = perm[start:start + settings.batch_size]
                opt.zero_grad()
                loss = level_loss(model, d.x[b], d.y[b], level, len(d.y), settings.kld_weight, w,
                                  shared_latent=shared_latent, train_vae=train_vae)
                if loss.requires_grad:
                    loss.backward()
                    opt.step()


@dataclass
class History:
    """What one active-learning run did, in query order."""

    levels: list[int] = field(default_factory=list)
    smiles: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    posterior_var: list[float] = field(default_factory=list)
    proportion_unique: list[float] = field(default_factory=list)
    decoded_valid: list[float] = field(default_factory=list)
    first_pass_filter: list[float] = field(default_factory=list)
    passes_filter: list[bool] = field(default_factory=list)
    switches: list[int] = field(default_factory=list)
    """Query index at which the fidelity went up."""
    failed_rounds: int = 0
    """Rounds whose M molecules all failed the filter after resampling (nothing queried)."""

    def at_level(self, level: int) -> tuple[list[str], list[float]]:
        pairs = [(s, v) for lv, s, v in zip(self.levels, self.smiles, self.values) if lv == level]
        return [s for s, _ in pairs], [v for _, v in pairs]


def run_active_learning(model: MFLAL, vocab: SelfiesVocab, oracle: MultiFidelityOracle, data: list[LevelData],
                        budget: float, settings: MFLALSettings, seed: int = 0,
                        oracle_levels: Sequence[int] | None = None, mol_filter: MoleculeFilter = CODE_FILTER,
                        fixed_latent: bool = False, max_rounds: int = 1000,
                        on_round: Callable[[History], None] | None = None) -> History:
    """The MF-LAL loop until the next query at the current fidelity would exceed ``budget``.

    Args:
        model: the model, with ``model.n_levels`` fidelities (1 = single-fidelity latent BO).
        data: one :class:`LevelData` per model level (its initial rows; queried rows are appended).
        oracle_levels: the oracle level queried for each model level (default ``0..n_levels-1``; the
            single-fidelity baseline maps its only level to the oracle's top).
        fixed_latent: the fixed-latent baseline: the VAE is pre-trained alone (reconstruction and KL on the
            level-0 rows) and frozen; every level's SVGP then learns on the frozen level-0 latent, and every
            level decodes with decoder 0.
        max_rounds: a safety stop for rounds that query nothing.
    """
    levels = list(range(model.n_levels)) if oracle_levels is None else list(oracle_levels)
    if len(levels) != model.n_levels or len(data) != model.n_levels:
        raise ValueError(f"need one data set and oracle level per model level ({model.n_levels}), "
                         f"got {len(data)} and {len(levels)}")
    if not budget > 0:
        raise ValueError(f"budget must be > 0, got {budget}")
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    top = model.n_levels - 1
    if fixed_latent:
        vae = torch.optim.Adam([p for n, p in model.named_parameters() if not n.startswith("surrogates")],
                               lr=settings.lr)
        train_passes(model, vae, data[:1], settings.pretrain_iters + settings.train_iters, settings, gen,
                     shared_latent=True, mll_weight=0.0)
        opt = torch.optim.Adam(model.surrogates.parameters(), lr=settings.lr)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    hist = History()
    current, n_here, rounds, first = 0, 0, 0, True
    while oracle.total_spent + oracle.costs[levels[current]] <= budget + 1e-9 and rounds < max_rounds:
        rounds += 1
        n_pass = settings.train_iters + (settings.pretrain_iters if first and not fixed_latent else 0)
        first = False
        train_passes(model, opt, data, n_pass, settings, gen, shared_latent=fixed_latent, train_vae=not fixed_latent)
        target = None
        for lv in range(current + 1):
            nxt = lv + 1 if (settings.target_in_level_space and lv < current) else None
            g = generate(model, vocab, lv, settings, gen, target, mol_filter, shared_latent=fixed_latent,
                         next_level=nxt)
            target = (g.mu, g.log_var)
        if not g.smiles:
            hist.failed_rounds += 1
            continue
        smiles = g.smiles[0]
        value = oracle.query(smiles, levels[current])
        n_here += 1
        tokens = vocab.encode(smiles, model.max_len)
        if tokens is not None:  # a score of 0 is a failed docking: unlabelled for the SVGP, as the code's mask
            data[current].add(smiles, tokens, value if value != 0.0 else float("nan"))
        hist.levels.append(levels[current])
        hist.smiles.append(smiles)
        hist.values.append(value)
        hist.posterior_var.append(float(g.var[0]))
        hist.proportion_unique.append(len(set(g.smiles)) / len(g.smiles))
        hist.decoded_valid.append(g.decoded_valid)
        hist.first_pass_filter.append(g.first_pass_filter)
        hist.passes_filter.append(bool(mol_filter(smiles)))
        if should_move_up(float(g.var[0]), n_here, current, settings.gammas, settings.max_iters, top):
            current, n_here = current + 1, 0
            hist.switches.append(len(hist.smiles))
        if on_round is not None:
            on_round(hist)
    return hist


@torch.no_grad()
def sample_prior(model: MFLAL, vocab: SelfiesVocab, n: int, generator: torch.Generator,
                 mol_filter: MoleculeFilter = CODE_FILTER, level: int = 0, max_draws: int = 100) -> list[str]:
    """Up to ``n`` distinct molecules decoded from z ~ N(0, I) at ``level`` that pass the filter."""
    model.eval()
    out: list[str] = []
    for _ in range(max_draws):
        z = torch.randn(max(n, 8), model.latent_dim, generator=generator)
        for row in model.decode(z, level).argmax(-1):
            s = vocab.decode(row)
            if s and s not in out and mol_filter(s):
                out.append(s)
                if len(out) == n:
                    return out
    return out


def train_prior_vae(model: MFLAL, data: Sequence[LevelData], settings: MFLALSettings, seed: int = 0) -> MFLAL:
    """The random-prior baseline's VAE: ``pretrain_iters + train_iters`` passes of Adam (``settings.lr``) over
    ``data`` (unlabelled rows: reconstruction and KL only), shuffled by ``seed``; returns the model."""
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    train_passes(model, opt, data, settings.pretrain_iters + settings.train_iters, settings,
                 torch.Generator().manual_seed(seed))
    return model


def run_random_prior(model: MFLAL, vocab: SelfiesVocab, oracle: MultiFidelityOracle, level: int, budget: float,
                     seed: int = 0, mol_filter: MoleculeFilter = CODE_FILTER,
                     on_query: Callable[[int], None] | None = None) -> History:
    """Random sampling from the VAE prior: query decoded prior samples at ``level`` until ``budget``."""
    n = int((budget + 1e-9) // oracle.costs[level])
    gen = torch.Generator().manual_seed(seed)
    hist = History()
    for s in sample_prior(model, vocab, n, gen, mol_filter):
        hist.levels.append(level)
        hist.smiles.append(canonical_smiles(s))
        hist.values.append(oracle.query(s, level))
        hist.passes_filter.append(True)
        if on_query is not None:
            on_query(len(hist.smiles))
    return hist
