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

``paper_data`` runs the same methods and metrics on the paper's node-level text-attributed graphs (Cora, PubMed,
WikiCS, Arxiv) read from GFT's processed folder (``data_root``, :mod:`.data`): text-encoded node features, the
predefined splits (split number = seed). Without ``data_root`` ``reproduce`` skips it with one line. Its claims
repeat the stand-in's paper claims' statistics, thresholds and tie bands and were fixed before any run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from icml25.core.experiment import (
    ConfigError,
    Experiment,
    Fidelity,
    Metrics,
    ProgressFn,
    TorchConfig,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim
from icml25.papers.autogfm.data import PAPER_DATASETS, load_paper_suite
from icml25.papers.autogfm.figures import paper_data_figures, suite_figures
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


@dataclass
class PaperDataConfig(SuiteConfig):
    """The same methods and metrics on the paper's node-level data sets from GFT's processed folder ``data_root``
    (:func:`~icml25.papers.autogfm.data.load_paper_suite`). Node features are the file's text encodings as they are
    (one common width; no SVD), each data set on its predefined split number ``seed % n_splits``; ``max_train`` /
    ``max_test`` cap a split's training / validation and test nodes by a seeded subset. The generated suite's
    ``n_nodes``, ``n_graphs``, ``n_link_targets``, ``feature_dim`` and ``link_hops`` are unused."""

    data_root: str = ""
    """GFT's data folder holding ``<Name>/processed/geometric_data_processed.pt`` per data set (see
    :mod:`icml25.papers.autogfm.data`). The experiment runs only when it is set."""
    datasets: tuple[str, ...] = ("cora", "pubmed", "wikics", "arxiv")
    """Which of the paper's node-level data sets (GFT's names: cora, pubmed, wikics, arxiv), at least 2."""
    max_train: int = 1000
    """Most training nodes per data set (a seeded subset of a larger official training split)."""
    max_test: int = 1000
    """Most validation and most test nodes per data set (a seeded subset of a larger official part)."""

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.data_root, str) or (self.data_root and not Path(self.data_root).expanduser().is_dir()):
            raise ConfigError(f"PaperDataConfig.data_root must be an existing folder (empty: the experiment does not "
                              f"run), got {self.data_root!r}")
        bad = [d for d in self.datasets if d not in PAPER_DATASETS]
        if bad or len(set(self.datasets)) != len(self.datasets) or len(self.datasets) < 2:
            raise ConfigError(f"PaperDataConfig.datasets must name at least 2 distinct data sets of "
                              f"{', '.join(PAPER_DATASETS)}, got {self.datasets!r}")
        check_fields(self, at_least={"max_train": 2, "max_test": 1}, at_most={"max_train": 10**7, "max_test": 10**7})


def _build(method: str, cfg: SuiteConfig, specs, in_dim: int | None = None) -> torch.nn.Module:
    args = (cfg.feature_dim if in_dim is None else in_dim, cfg.model.hid, specs, cfg.model.n_layers)
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
    """Train every method on the same generated suite; per-dataset scores and paired comparisons. On the paper's
    data (:class:`PaperDataConfig`) the suite is its node-level data sets on their predefined splits."""
    if isinstance(cfg, PaperDataConfig):
        suite = load_paper_suite(cfg.data_root, cfg.datasets, cfg.hops, cfg.max_train, cfg.max_test, seed)
        in_dim = suite[0].graphs[0].x.size(1)
    else:
        suite = make_suite(cfg.n_nodes, cfg.n_graphs, cfg.n_link_targets, cfg.feature_dim, cfg.hops, cfg.link_hops,
                           seed=seed)
        in_dim = cfg.feature_dim
    names = [d.spec.name for d in suite]
    specs = [d.spec for d in suite]
    out: Metrics = {}
    scores: dict[str, np.ndarray] = {}
    for k, method in enumerate(METHODS):
        torch.manual_seed(1000 * seed + k)
        model = fit_gfm(_build(method, cfg, specs, in_dim).to(cfg.device), suite, cfg.model.epochs,
                        cfg.model.batch_size, cfg.model.lr, seed=seed)
        evals = [evaluate(model, d) for d in suite]
        scores[method] = np.array([s for s, _ in evals])
        for d, (s, alphas) in zip(suite, evals):
            out[f"score_{method}_{d.spec.name}"] = s
            if method in ("autogfm", "darts"):
                out[f"alpha_{method}_{d.spec.name}"] = mean_architecture(alphas).tolist()
        out[f"mean_{method}"] = float(scores[method].mean())
        if method == "autogfm":
            out["autogfm_n_distinct_argmax"] = float(len({int(np.argmax(out[f"alpha_autogfm_{n}"]))
                                                          for n in names}))
        progress(k + 1, len(METHODS))
    fixed = np.stack([scores[f"fixed_{op}"] for op in OPS])  # (ops, datasets)
    winners = fixed.argmax(0)
    for j, name in enumerate(names):
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
    if isinstance(cfg, PaperDataConfig):
        for d in suite:
            out[f"train_nodes_{d.spec.name}"] = d.info["train"]
            out[f"test_nodes_{d.spec.name}"] = d.info["test"]
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
                          "and a GPU; none is bundled. The 'full' preset only scales the generated suite. The "
                          "paper's node-level data sets run in the experiment 'paper_data' (--set data_root=PATH).",
    ),
    Experiment(
        name="paper_data",
        description="The same 5 fixed-op GNNs, shared-alpha DARTS, AutoGFM and its 3 ablations on the paper's "
                    "node-level text-attributed graphs (Cora, PubMed, WikiCS, Arxiv) from GFT's processed folder: "
                    "Sentence-Transformer node features, the predefined splits (split number = seed).",
        config=PaperDataConfig,
        run=run_suite,
        presets={
            "smoke": {"model.hid": 8, "model.epochs": 1.0, "model.batch_size": 8, "model.t_e": 0.5,
                      "max_train": 16, "max_test": 16},
            "quick": {"max_train": 500, "max_test": 500},
            "full": {"model.epochs": 100.0, "model.hid": 128, "max_train": 2000, "max_test": 2000},
        },
        seeds={"smoke": 1, "quick": 3, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "the paper's node-level data sets at <= 16 train / test nodes each, 1 "
                                           "epoch, width 8: a harness run"),
            "quick": Fidelity("reduced", "the paper's 4 node-level data sets (Cora, PubMed, WikiCS, Arxiv; its 2 link "
                                         "and 2 graph data sets left out) with their text-encoded features and "
                                         "predefined splits, <= 500 train and <= 500 test nodes each (seeded subset); "
                                         "substitutions: the shared multi-task super-network trained from scratch "
                                         "for 8 epochs at width 32 instead of GFT pre-training + fine-tuning, "
                                         "3 of 10 repetitions"),
            "full": Fidelity("reduced", "the 4 node-level data sets, <= 2000 train and <= 2000 test nodes each "
                                        "(Cora and PubMed whole, WikiCS and Arxiv subsets), 100 epochs, width 128, 10 "
                                        "splits/seeds; still no GFT base model and no link or graph data sets"),
        },
        figures=paper_data_figures,
        data_setting="data_root",
        full_requirements=(
            "icml25 reproduce autogfm --preset quick --set data_root=/path/to/GFT/data "
            "[--set datasets=cora,pubmed,wikics,arxiv]. data_root is GFT's data folder (its --data_path; GFT's "
            "preprocessed archive unpacks to it, or GFT/OFA writes it on a first run) holding "
            "<data_root>/{Cora,Pubmed,wikics,arxiv}/processed/geometric_data_processed.pt, each "
            "torch.save((Data, slices)) with node_text_feat (the nodes' texts encoded by the Sentence-Transformer "
            "multi-qa-distilbert-cos-v1, 768-d), edge_index, y and the split masks (Cora/PubMed "
            "train_masks/val_masks/test_masks, 10 splits; WikiCS train_mask/val_mask (N, 20) and test_mask; Arxiv "
            "OGB's train_mask/val_mask/test_mask). Only the named data sets' files are read "
            "(torch.load weights_only=True); nothing is downloaded and no text encoder runs here: "
            "icml25.papers.autogfm.data.write_processed_graph computes such a file from OFA's raw cora.pt / "
            "pubmed.pt with any encoder object that has sentence-transformers' encode method. What still differs "
            "from the paper: the base model is our multi-task super-network trained from scratch, not GFT "
            "pre-training and fine-tuning; the link (WN18RR, FB15K237) and graph (HIV, PCBA) data sets and the "
            "few-shot protocol are not run; train / val / test nodes are capped per data set (quick 500, full "
            "2000); lam/beta as the stand-in. Cost: smoke takes seconds on the tests' files; quick measured about "
            "12 minutes per seed (1 thread, a shared CPU) on four synthetic 2,700-3,000-node graphs with 768-d "
            "features in this layout; the real WikiCS and Arxiv have far larger 2-hop neighbourhoods (mean degree "
            "~37 and ~14), so expect tens of CPU-minutes per seed; full (width 128, 100 epochs, <= 2000 nodes "
            "per part, 10 seeds) wants a GPU."),
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

# ---- paper_data: twins of the stand-in's paper claims and of their gates, pre-registered before any run
_PD = "the paper's node-level data sets (Cora, PubMed, WikiCS, Arxiv; GFT's text-encoded features and splits)"
_PD_AVG_FAIR = (_AVG_FAIR + "; our node-level subset without GFT reaches that protocol only in part, so even the "
                "'full' preset (reduced) is not a fair test of the ~1-point margin")
_PD_ABL_FAIR = (_ABL_FAIR + " (Cora, PubMed, WikiCS, Arxiv are among them); the node-level data sets on their "
                "predefined splits test the direction with the stated substitutions")
CLAIMS += [
    Claim(id="paper_data_inconsistency", kind="check",
          statement=f"Architecture inconsistency on {_PD}: the best hand-designed GNN differs across the data sets "
                    "(at least 2 distinct winners among the 5 fixed ops).",
          paper_value="no single op wins everywhere (Fig. 1, Table 1)", experiment="paper_data",
          metric="n_distinct_best_fixed_ops", op=">=", threshold=2.0, aggregate="every_seed"),
    Claim(id="paper_data_beats_best_fixed", kind="paper",
          source="second-hand: auto-generated summary (80.86% vs 79.84%)",
          statement=f"On {_PD}, AutoGFM's mean test accuracy over the data sets is at least that of the best single "
                    "fixed-op GNN (paired difference >= 0; the paper: +1.02 points over its 8 data sets).",
          paper_value=f"AutoGFM {_AVG}", experiment="paper_data", metric="autogfm_minus_best_fixed", op=">=",
          threshold=0.0, aggregate="mean", resolution=0.005,
          resolution_reason="as beats_best_fixed: paper's gap over the best hand-designed GNN is 80.86 - 79.84 = "
                            "1.02 points; take ~half",
          requires=("paper_data_learned", "paper_data_inconsistency"), fair_at="paper", fair_at_reason=_PD_AVG_FAIR),
    Claim(id="paper_data_beats_darts", kind="paper", source="second-hand: auto-generated summary (80.86% vs 79.84%)",
          statement=f"On {_PD}, AutoGFM's mean test accuracy is at least that of DARTS with one shared alpha.",
          paper_value="AutoGFM 80.86% on average; DARTS/GraphNAS/GASSO/Graces below the runner-up's 79.84% "
                      "(second-hand)",
          experiment="paper_data", metric="autogfm_minus_darts", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005,
          resolution_reason="as beats_darts: DARTS is at most the next best (79.84), so the paper's gap is >= 1.02 "
                            "points; take ~half",
          requires=("paper_data_learned",), fair_at="paper", fair_at_reason=_PD_AVG_FAIR),
    Claim(id="paper_data_customised", kind="paper", source="second-hand: auto-generated summary (App. B.1 heat maps)",
          statement=f"On {_PD}, AutoGFM customises: the argmax op of its predicted alpha (mean over test NOI graphs "
                    "and layers) differs for at least two data sets.",
          paper_value="architectures differ per dataset (App. B.1 heat maps; second-hand)", experiment="paper_data",
          metric="autogfm_n_distinct_argmax", op=">=", threshold=2.0, aggregate="every_seed",
          requires=("paper_data_inconsistency",), fair_at="reduced",
          fair_at_reason="App. B.1 shows the architectures the predictor has learned after the paper's training on "
                         "its data sets; on these data sets at a reduced budget the alphas' separation is tested"),
    Claim(id="paper_data_ablation_dis", kind="paper", source="Fig. 3",
          statement=f"On {_PD}, w/o D: replacing the disentangled contrastive encoder by a standard GNN encoder "
                    "(no L_dis) lowers the mean test accuracy.",
          paper_value="full model best on all five ablation data sets (Fig. 3; values not retrieved)",
          experiment="paper_data", metric="autogfm_minus_no_dis", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005, resolution_reason=f"as ablation_dis: {_ABL_TIE}",
          requires=("paper_data_learned",), fair_at="reduced", fair_at_reason=_PD_ABL_FAIR),
    Claim(id="paper_data_ablation_inv", kind="paper", source="Fig. 3",
          statement=f"On {_PD}, w/o I: removing the invariance loss (beta = 0) lowers the mean test accuracy.",
          paper_value="full model best (Fig. 3); invariant-guided customisation matters most (values not retrieved)",
          experiment="paper_data", metric="autogfm_minus_no_inv", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005, resolution_reason=f"as ablation_inv: {_ABL_TIE}",
          requires=("paper_data_learned",), fair_at="reduced", fair_at_reason=_PD_ABL_FAIR),
    Claim(id="paper_data_ablation_cur", kind="paper", source="Fig. 3",
          statement=f"On {_PD}, w/o C: removing the curriculum (gamma = 0) lowers the mean test accuracy.",
          paper_value="full model best (Fig. 3; values not retrieved)", experiment="paper_data",
          metric="autogfm_minus_no_cur", op=">=", threshold=0.0, aggregate="mean",
          resolution=0.005, resolution_reason=f"as ablation_cur: {_ABL_TIE}",
          requires=("paper_data_learned",), fair_at="reduced", fair_at_reason=_PD_ABL_FAIR),
    Claim(id="paper_data_learned", kind="check",
          statement=f"(ours, beyond the paper) AutoGFM learned on {_PD}: its mean test accuracy beats the best "
                    "constant predictor's (the majority test class of each data set).",
          paper_value="not claimed by the paper", experiment="paper_data", metric="autogfm_minus_constant",
          op=">=", threshold=0.0, aggregate="mean", resolution=0.01,
          resolution_reason="as learned: one point of accuracy is the smallest gain over a constant that means "
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
