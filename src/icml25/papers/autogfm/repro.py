"""AutoGFM reproduction: a generated 4-dataset multi-domain suite, all baselines in one run.

Per seed: one suite (homophilous / heterophilous node classification, tree-vs-cycles graph
classification, DC-SBM link prediction; features unified to 32 dims by per-dataset SVD), then
the five fixed-op GNNs, shared-alpha DARTS, AutoGFM and its three ablations (the paper's: w/o D
replaces the disentangled encoder by a standard GNN, w/o I drops L_inv, w/o C the curriculum) are
trained on it with the same super-network, heads, steps and optimiser. AutoGFM's losses follow the
paper's text: Eq. 9 with one candidate per data set, Eqs. 10 and 14 summed over the data sets, no
temperature in Eq. 12's softmax, lam and beta on the (second-hand) grid 1e-4..1e-1. Scores: test
accuracy (node/graph) or ROC-AUC (link). Comparisons are per-seed differences of the mean score over
the 4 datasets. Settings and claim thresholds were fixed before the quick run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

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
from icml25.papers.autogfm.figures import suite_figures
from icml25.papers.autogfm.model import OPS, AutoGFM, FixedOpGNN, SharedDARTS
from icml25.papers.autogfm.suite import make_suite
from icml25.papers.autogfm.train import AutoGFMConfig, evaluate, fit_gfm, mean_architecture

DATASETS = ("homophilous", "heterophilous", "cycles", "links")
ABLATIONS = ("no_dis", "no_inv", "no_cur")
METHODS = tuple(f"fixed_{op}" for op in OPS) + ("darts", "autogfm") + ABLATIONS


@dataclass
class SuiteConfig(TorchConfig):
    n_nodes: int = 400
    """Nodes of each node-level / link-level SBM graph."""
    n_graphs: int = 400
    """Graphs of the graph-classification dataset."""
    n_link_targets: int = 300
    """Held-out positive edges of the link dataset (as many negatives are drawn)."""
    feature_dim: int = 32
    """Common feature width after per-dataset truncated SVD."""
    hops: int = 2
    """Hops of a node task's NOI (ego) graph."""
    link_hops: int = 1
    """Hops of each endpoint's ego graph in a link task's NOI graph."""
    model: AutoGFMConfig = field(default_factory=AutoGFMConfig)
    """AutoGFM's settings and the shared training recipe (``model.hid``, ``model.n_layers``, ``model.epochs``,
    ``model.batch_size``, ``model.lr`` for every method; ``model.lam``, ``model.beta``, ``model.t_e``,
    ``model.tau``, ``model.arch_temperature``, ``model.loss_form`` for AutoGFM and its ablations)."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_link_targets", "feature_dim"),
                     nonnegative=("hops", "link_hops"),
                     # 4 SBM classes; at least one training graph after the 40/20/40 split
                     at_least={"n_nodes": 4, "n_graphs": 3})
        # bounds: a job beyond these would need > ~100 GB or days (one NOI graph per node/graph/target, widths)
        check_fields(self, at_most={"n_nodes": 10**6, "n_graphs": 10**6, "n_link_targets": 10**6, "feature_dim": 10**4,
                                    "hops": 10**3, "link_hops": 10**3})


def _build(method: str, cfg: SuiteConfig, specs) -> torch.nn.Module:
    args = (cfg.feature_dim, cfg.model.hid, specs, cfg.model.n_layers)
    if method.startswith("fixed_"):
        return FixedOpGNN(method.removeprefix("fixed_"), *args)
    if method == "darts":
        return SharedDARTS(*args)
    kw = cfg.model.model_kwargs()
    if method == "no_dis":  # the paper's "w/o D": a standard GNN encoder instead of the disentangled one
        kw["disentangled"] = False
    elif method == "no_inv":
        kw["beta"] = 0.0
    elif method == "no_cur":
        kw["t_e"] = 0.0
    return AutoGFM(*args, **kw)


def constant_score(data) -> float:
    """Test score of the best constant predictor: the majority test class's share (node/graph), 0.5 AUC (link)."""
    if data.spec.level == "link":
        return 0.5
    y = np.array([int(data.graphs[i].y) for i in data.splits["test"]])
    return float(np.bincount(y).max() / y.size)


def run_suite(cfg: SuiteConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Train every method on the same generated suite; per-dataset scores and paired comparisons."""
    suite = make_suite(cfg.n_nodes, cfg.n_graphs, cfg.n_link_targets, cfg.feature_dim, cfg.hops, cfg.link_hops,
                       seed=seed)
    specs = [d.spec for d in suite]
    out: Metrics = {}
    scores: dict[str, np.ndarray] = {}
    for k, method in enumerate(METHODS):
        torch.manual_seed(1000 * seed + k)
        model = fit_gfm(_build(method, cfg, specs).to(cfg.device), suite, cfg.model.epochs, cfg.model.batch_size,
                        cfg.model.lr, seed=seed)
        evals = [evaluate(model, d) for d in suite]
        scores[method] = np.array([s for s, _ in evals])
        for d, (s, alphas) in zip(suite, evals):
            out[f"score_{method}_{d.spec.name}"] = s
            if method in ("autogfm", "darts"):
                out[f"alpha_{method}_{d.spec.name}"] = mean_architecture(alphas).tolist()
        out[f"mean_{method}"] = float(scores[method].mean())
        if method == "autogfm":
            out["autogfm_n_distinct_argmax"] = float(len({int(np.argmax(out[f"alpha_autogfm_{n}"]))
                                                          for n in DATASETS}))
        progress(k + 1, len(METHODS))
    fixed = np.stack([scores[f"fixed_{op}"] for op in OPS])  # (ops, datasets)
    winners = fixed.argmax(0)
    for j, name in enumerate(DATASETS):
        out[f"best_fixed_op_{name}"] = float(winners[j])
    out["n_distinct_best_fixed_ops"] = float(len(set(winners.tolist())))
    constant = np.array([constant_score(d) for d in suite])
    for d, c in zip(suite, constant):
        out[f"score_constant_{d.spec.name}"] = float(c)
    out["mean_constant"] = float(constant.mean())
    out["autogfm_minus_constant"] = out["mean_autogfm"] - out["mean_constant"]
    out["autogfm_minus_best_fixed"] = out["mean_autogfm"] - float(fixed.mean(1).max())
    out["autogfm_minus_darts"] = out["mean_autogfm"] - out["mean_darts"]
    for a in ABLATIONS:
        out[f"autogfm_minus_{a}"] = out["mean_autogfm"] - out[f"mean_{a}"]
    table = np.stack([scores[m] for m in METHODS])  # rank 1 = best, per dataset
    ranks = (-table).argsort(0).argsort(0) + 1
    out["autogfm_mean_rank"] = float(ranks[METHODS.index("autogfm")].mean())
    return out


EXPERIMENTS = [
    Experiment(
        name="suite",
        description="Generated 4-dataset multi-domain suite (homophilous/heterophilous CSBM nodes, tree-vs-cycle "
                    "graphs, DC-SBM links) cast as NOI-graph classification; 5 fixed-op GNNs, shared-alpha DARTS, "
                    "AutoGFM and its 3 ablations trained with the same super-network, heads and steps.",
        config=SuiteConfig,
        run=run_suite,
        presets={
            "smoke": {"n_nodes": 60, "n_graphs": 40, "n_link_targets": 30, "model.hid": 8, "model.epochs": 1.0,
                      "model.batch_size": 8, "model.t_e": 0.5},
            "quick": {},
            "full": {"model.epochs": 100.0, "model.hid": 128},
        },
        seeds={"smoke": 1, "quick": 3, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "a tiny generated 4-dataset suite (60 nodes, 40 graphs), 1 epoch, width "
                                           "8: a harness run"),
            "quick": Fidelity("mechanism", "a generated 4-dataset suite (SBM nodes/links, tree-vs-cycle graphs, SVD "
                                           "features) stands in for GFT with text-encoded graphs on 8 real data sets; "
                                           "8 epochs from scratch, width 32, 3 of 10 repetitions"),
            "full": Fidelity("mechanism", "the generated suite, 100 epochs, width 128, 10 seeds; no GFT base model "
                                          "or real data sets"),
        },
        figures=suite_figures,
        full_requirements="The paper's scale needs the GFT code base and the text-attributed graphs (Cora, PubMed, "
                          "Arxiv, WikiCS, WN18RR, FB15K237, HIV, PCBA, ChEMBL) with a Sentence-BERT/LLM text encoder "
                          "and a GPU; none is bundled. The 'full' preset only scales the generated suite.",
    ),
]

_AVG = "80.86% vs 79.84% (GraphSAGE in GFT), average accuracy over the data sets (second-hand: auto-generated summary)"

_ABL_TIE = "ablation gaps not retrieved; ~half the paper's 1.02-point margin of the full model"
_ABL_FAIR = ("Fig. 3 compares the full model with its ablations after the paper's GFT-based training on five real "
             "data sets; fewer repetitions or a shorter run of that protocol still test the direction")
_AVG_FAIR = ("the paper's ~1-point average margin is measured after GFT pre-training and fine-tuning on its 8 real "
             "data sets with 10 repetitions; a margin that small depends on that protocol and budget")
CLAIMS = [
    # "no single op wins everywhere" is a property of each suite: the generated suite is built to have it
    Claim(id="inconsistency", kind="check",
          statement="Architecture inconsistency: the best hand-designed GNN differs across datasets "
                    "(at least 2 distinct winners among the 5 fixed ops on the 4 datasets).",
          paper_value="no single op wins everywhere (Fig. 1, Table 1)", experiment="suite",
          metric="n_distinct_best_fixed_ops", op=">=", threshold=2.0, aggregate="every_seed"),
    Claim(id="beats_best_fixed", kind="paper", source="second-hand: auto-generated summary (80.86% vs 79.84%)",
          statement="AutoGFM's mean score over the datasets is at least that of the best single fixed-op "
                    "GNN (paired difference >= 0; the paper: +1.02 points).",
          paper_value=f"AutoGFM {_AVG}", experiment="suite", metric="autogfm_minus_best_fixed", op=">=",
          threshold=0.0, aggregate="mean",
          resolution=0.005,
          resolution_reason="paper's gap over the best hand-designed GNN is 80.86 - 79.84 = 1.02 points; take ~half",
          requires=("learned", "inconsistency"), fair_at="paper", fair_at_reason=_AVG_FAIR),
    Claim(id="beats_darts", kind="paper", source="second-hand: auto-generated summary (80.86% vs 79.84%)",
          statement="AutoGFM's mean score is at least that of DARTS with one shared alpha.",
          paper_value="AutoGFM 80.86% on average; DARTS/GraphNAS/GASSO/Graces below the runner-up's 79.84% "
                      "(second-hand)",
          experiment="suite", metric="autogfm_minus_darts", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005,
          resolution_reason="DARTS is at most the next best (79.84), so the paper's gap is >= 1.02 points; take ~half",
          requires=("learned",), fair_at="paper", fair_at_reason=_AVG_FAIR),
    # every seed: a count >= 1 by construction; customisation is a property of each trained model
    Claim(id="customised", kind="paper", source="second-hand: auto-generated summary (App. B.1 heat maps)",
          statement="AutoGFM customises: the argmax op of its predicted alpha (mean over test NOI graphs and "
                    "layers) differs for at least two datasets.",
          paper_value="architectures differ per dataset (App. B.1 heat maps; second-hand)", experiment="suite",
          metric="autogfm_n_distinct_argmax", op=">=", threshold=2.0, aggregate="every_seed",
          requires=("inconsistency",),
          fair_at="reduced",
          fair_at_reason="App. B.1 shows the architectures the predictor has learned after the paper's training on "
                         "its data sets; how far the alphas separate depends on training, not on the method alone"),
    Claim(id="ablation_dis", kind="paper", source="Fig. 3",
          statement="w/o D: replacing the disentangled contrastive encoder by a standard GNN encoder (no "
                    "L_dis) lowers the mean score.",
          paper_value="full model best on all five ablation data sets (Fig. 3; values not retrieved)",
          experiment="suite", metric="autogfm_minus_no_dis", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005, resolution_reason=_ABL_TIE,
          requires=("learned",), fair_at="reduced", fair_at_reason=_ABL_FAIR),
    Claim(id="ablation_inv", kind="paper", source="Fig. 3",
          statement="w/o I: removing the invariance loss (beta = 0) lowers the mean score.",
          paper_value="full model best (Fig. 3); invariant-guided customisation matters most (values not retrieved)",
          experiment="suite", metric="autogfm_minus_no_inv", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005, resolution_reason=_ABL_TIE,
          requires=("learned",), fair_at="reduced", fair_at_reason=_ABL_FAIR),
    Claim(id="ablation_cur", kind="paper", source="Fig. 3",
          statement="w/o C: removing the curriculum (gamma = 0) lowers the mean score.",
          paper_value="full model best (Fig. 3; values not retrieved)", experiment="suite",
          metric="autogfm_minus_no_cur", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005, resolution_reason=_ABL_TIE,
          requires=("learned",), fair_at="reduced", fair_at_reason=_ABL_FAIR),
    Claim(id="learned", kind="check",
          statement="(ours, beyond the paper) AutoGFM learned: its mean score beats the best constant predictor's "
                    "(majority test class; AUC 0.5 on links).",
          paper_value="not claimed by the paper", experiment="suite", metric="autogfm_minus_constant",
          op=">=", threshold=0.0, aggregate="mean",
          resolution=0.01,
          resolution_reason="one point of score (accuracy / AUC) is the smallest gain over a constant that means "
                            "learning"),
]

API_EXAMPLE = """
from icml25.papers.autogfm import make_suite, fit_autogfm, evaluate

suite = make_suite(n_nodes=80, n_graphs=60, n_link_targets=40, seed=0)   # 4 generated datasets
model = fit_autogfm(suite, epochs=1, t_e=0.5, batch_size=8, hid=16)
for data in suite:
    score, alphas = evaluate(model, data)              # alphas: (n_test_graphs, layers, ops)
    print(data.spec.name, round(score, 3), alphas.mean(axis=(0, 1)).round(2))
print(model.customize(suite[0].graphs[0]).shape)       # architecture of one NOI graph
"""
