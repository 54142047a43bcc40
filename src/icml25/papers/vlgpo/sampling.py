"""VLGPO posterior sampling (Bogensperger et al., ICML 2025, arXiv 2501.19200) and the baselines.

Posterior p(z | y) ∝ p(y | D(z)) p(z): the prior is the flow-matching ODE, the likelihood is
``p(y | x) ∝ exp(-(g_phi(x) - y)^2 / 2)`` with a predictor g_phi. Each Euler step of the prior ODE is
followed by J gradient steps on the likelihood, evaluated at the one-step estimate of the clean latent
(the manifold constraint):

    z      <- z + h v(z, t)                                 prior step,  t = k h, h = 1 / K
    repeat J times:
        z1_hat = z + (1 - t - h) v(z, t)
        L      = 0.5 (norm(g_phi(softmax D(z1_hat))) - y)^2,   norm(f) = (f - f_min) / (f_max - f_min)
        z      <- z - h alpha grad_z L

Then: argmax-decode, remove duplicates, rank by the predictor (never the oracle), keep the top k.
Baselines here: prior-only sampling (J = 0), latent gradient ascent without the prior, and an AdaLead-style
greedy evolution guided by the same predictor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from icml25.papers.vlgpo.landscape import decode_tokens, encode_sequences
from icml25.papers.vlgpo.models import FitnessCNN, LatentFlowPrior, SeqVAE


def _likelihood_loss(vae: SeqVAE, predictor: FitnessCNN, z: torch.Tensor, target: float, f_min: float,
                     f_max: float) -> torch.Tensor:
    """Per-sample ``0.5 (norm(g(softmax D(z))) - target)^2``, shape (n,)."""
    f = (predictor.forward_soft(torch.softmax(vae.decode(z), dim=-1)) - f_min) / (f_max - f_min)
    return 0.5 * (f - target) ** 2


def _check_common(n_samples: int, J: int, alpha: float, f_min: float, f_max: float) -> None:
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if J < 0:
        raise ValueError(f"J must be >= 0, got {J}")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if not f_max > f_min:
        raise ValueError(f"f_max must exceed f_min, got f_min={f_min}, f_max={f_max}")


def vlgpo_sample(flow: LatentFlowPrior, vae: SeqVAE, predictor: FitnessCNN, n_samples: int = 512,
                 ode_steps: int = 32, J: int = 5, alpha: float = 0.5, target: float = 1.0, seed: int = 0,
                 f_min: float = 0.0, f_max: float = 1.0, return_latents: bool = False):
    """VLGPO: Euler steps of the flow prior interleaved with J manifold-constrained likelihood steps.

    Args:
        flow: trained :class:`LatentFlowPrior` (noise at t = 0, data at t = 1), or any velocity module
            ``v(z, t)`` on ``(n, latent_dim)`` latents with a ``latent_dim`` attribute.
        vae: trained :class:`SeqVAE` or :class:`ConvSeqVAE`; its decoder maps latents to logits.
        predictor: trained :class:`FitnessCNN` g_phi (guidance only).
        n_samples: number of latent chains.
        ode_steps: K, Euler steps; h = 1 / K.
        J: likelihood gradient steps after each prior step (``J = 0``: plain prior sampling).
        alpha: likelihood step size, in units of the ODE step (the official config's "alpha * ode_steps";
            :func:`official_step_settings` gives the released (J, alpha) per split).
        target: conditioning fitness y on the normalised scale.
        seed: seeds z_0 ~ N(0, I).
        f_min, f_max: the predictor's output is normalised as (g - f_min) / (f_max - f_min).
        return_latents: also return the final latents ``(n_samples, latent_dim)``.

    Returns:
        The ``n_samples`` argmax-decoded sequences (duplicates kept), and the latents when asked.
    """
    _check_common(n_samples, J, alpha, f_min, f_max)
    if ode_steps < 1:
        raise ValueError(f"ode_steps must be >= 1, got {ode_steps}")
    device = next(iter(flow.parameters()), torch.empty(0)).device
    z = torch.randn(n_samples, flow.latent_dim, generator=torch.Generator().manual_seed(seed)).to(device)
    h = 1.0 / ode_steps
    for k in range(ode_steps):
        t = k * h
        with torch.no_grad():
            z = z + h * flow(z, t)                                      # prior step
        for _ in range(J):                                              # likelihood steps
            z = z.detach().requires_grad_(True)
            z1_hat = z + (1 - t - h) * flow(z, t)                       # manifold constraint
            loss = _likelihood_loss(vae, predictor, z1_hat, target, f_min, f_max).sum()
            (grad,) = torch.autograd.grad(loss, z)
            z = (z - h * alpha * grad).detach()
    z = z.detach()
    seqs = decode_tokens(vae.decode_tokens(z))
    return (seqs, z) if return_latents else seqs


def latent_ascent_sample(vae: SeqVAE, predictor: FitnessCNN, start_seqs: Sequence[str] | np.ndarray,
                         n_samples: int = 512, n_steps: int = 160, step_size: float = 0.5 / 32,
                         target: float = 1.0, seed: int = 0, f_min: float = 0.0, f_max: float = 1.0) -> list[str]:
    """Baseline: gradient descent on the same likelihood loss directly in the VAE latent space, no prior.

    Starts from the encodings E(x) of ``n_samples`` training sequences drawn with replacement, then takes
    ``n_steps`` steps ``z <- z - step_size * grad L(z)`` with ``L = 0.5 (norm(g(softmax D(z))) - target)^2``.
    Returns the argmax-decoded sequences (duplicates kept).
    """
    _check_common(n_samples, 0, 0.0, f_min, f_max)
    if n_steps < 0 or step_size < 0:
        raise ValueError(f"n_steps and step_size must be >= 0, got {n_steps}, {step_size}")
    start = encode_sequences(start_seqs)
    rng = np.random.default_rng([seed, 31])
    z = vae.embed(start[rng.integers(len(start), size=n_samples)])
    for _ in range(n_steps):
        z = z.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(_likelihood_loss(vae, predictor, z, target, f_min, f_max).sum(), z)
        z = (z - step_size * grad).detach()
    return decode_tokens(vae.decode_tokens(z))


def adalead_sample(predictor: FitnessCNN, start_seqs: Sequence[str] | np.ndarray, n_samples: int = 512,
                   rounds: int = 10, kappa: float = 0.05, mutation_rate: float = 1.0, recomb_rate: float = 0.2,
                   n_tokens: int = 20, seed: int = 0) -> list[str]:
    """Baseline: AdaLead-style greedy evolution (Sinai et al., 2020) with the predictor as the model.

    Each round: elites are the pool members whose predicted fitness is within ``kappa * (max - min)`` of the
    best; ``n_samples`` children are drawn from random elites, recombined (uniform crossover) with another
    elite with probability ``recomb_rate``, and mutated at each site with probability ``mutation_rate / L``;
    children join the pool. Returns the ``n_samples`` distinct non-training children with the highest
    predicted fitness (fewer if fewer exist).
    """
    if n_samples < 1 or rounds < 1:
        raise ValueError(f"n_samples and rounds must be >= 1, got {n_samples}, {rounds}")
    if not 0 <= kappa <= 1 or not 0 <= recomb_rate <= 1 or mutation_rate < 0:
        raise ValueError(f"need kappa, recomb_rate in [0, 1] and mutation_rate >= 0, "
                         f"got {kappa}, {recomb_rate}, {mutation_rate}")
    rng = np.random.default_rng([seed, 47])
    pool = np.unique(encode_sequences(start_seqs), axis=0)
    train_keys = {r.tobytes() for r in pool}
    score = predictor.predict(pool)
    L = pool.shape[1]
    for _ in range(rounds):
        elite = pool[score >= score.max() - kappa * (score.max() - score.min())]
        parents = elite[rng.integers(len(elite), size=n_samples)]
        mates = elite[rng.integers(len(elite), size=n_samples)]
        cross = (rng.random(n_samples) < recomb_rate)[:, None] & (rng.random(parents.shape) < 0.5)
        children = np.where(cross, mates, parents)
        mutate = rng.random(children.shape) < mutation_rate / L
        children = np.where(mutate, (children + rng.integers(1, n_tokens, size=children.shape)) % n_tokens, children)
        pool, first = np.unique(np.concatenate([pool, children]), axis=0, return_index=True)
        score = np.concatenate([score, predictor.predict(children)])[first]
    novel = np.array([r.tobytes() not in train_keys for r in pool])
    cand, cand_score = pool[novel], score[novel]
    order = np.argsort(-cand_score, kind="stable")[:n_samples]
    return decode_tokens(cand[order])


def select_top_k(seqs: Sequence[str], predictor: FitnessCNN, k: int = 128) -> list[str]:
    """Remove duplicates (first occurrence kept), rank by the predictor, return the top ``k``.

    Only the predictor is consulted: selecting with the oracle would leak the evaluation.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    unique = list(dict.fromkeys(seqs))
    if not unique:
        raise ValueError("seqs is empty")
    pred = predictor.predict(unique)
    order = np.argsort(-pred, kind="stable")[:k]
    return [unique[i] for i in order]
