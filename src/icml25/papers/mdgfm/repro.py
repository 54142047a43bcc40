"""MDGFM reproduction: leave-one-domain-out few-shot transfer on six generated domains, clean and noisy.

Six synthetic domains (degree-corrected CSBM graphs with bag-of-words features of different widths;
three homophilic, three heterophilic) stand in for Cora/CiteSeer/PubMed/Chameleon/Squirrel/Cornell,
which cannot be downloaded here. For each target domain, MDGFM and the MDGPT-like ablation are
pre-trained on the five other domains only, then prompt-tuned on few-shot tasks of the target with the
official settings of the real data set the target stands in for (5-shot, 3-shot on the Cornell and
Squirrel analogues; per-target learning rates and epochs from the official README); the supervised
baselines see only the target's support set. The robustness test adds 50% random edges to the target
graph before prompt tuning (a weaker proxy for the paper's adversarial attacks). Settings and claim
thresholds were fixed before the first quick run.

The ``paper_data`` experiment runs the same protocol on the paper's six real graphs, read from the user's raw files
under ``data_root`` (``data.load_paper_graphs``), at each target's official settings, with its own pre-registered
claims (``paper_data_*``, the same statistics and thresholds as the stand-in's). Without ``data_root``
``reproduce`` skips it with one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

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
from icml25.papers.mdgfm.baselines import GCNProto, MLPProto, PretrainNoRefine
from icml25.papers.mdgfm.data import (
    HOMOPHILIC_PAPER_GRAPHS,
    PAPER_GRAPHS,
    PAPER_GRAPHS_LAYOUT,
    PAPER_TARGET_SETTINGS,
    SIX_DOMAINS,
    DomainSpec,
    TargetSettings,
    few_shot_tasks,
    inject_random_edges,
    load_paper_graphs,
    make_domains,
    target_settings,
)
from icml25.papers.mdgfm.figures import transfer_figures
from icml25.papers.mdgfm.model import MDGFM, MDGFMConfig

METHODS = ("mdgfm", "mdgfm_no_down_refine", "norefine", "gcnproto", "mlpproto")
"""mdgfm_no_down_refine: the same pre-trained MDGFM, prompt-tuned on A^ only (no target graph learner)."""


def leave_one_out(domains: list, target: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The ``(x, edge_index)`` pairs of every domain except ``target``: what pre-training receives."""
    return [(d.x, d.edge_index) for i, d in enumerate(domains) if i != target]


@dataclass
class TransferConfig(TorchConfig):
    targets: tuple[str, ...] = ("homo80", "hetero15")
    """Held-out target domains: names in data.SIX_DOMAINS (one homophilic, one heterophilic: the metrics are keyed
    by kind)."""
    size_scale: float = 1.0
    """Multiplier on every generated domain's node count (1.0 = 600-1200 nodes)."""
    shots: int | None = None
    """Labelled nodes per class in a task; None = the official few-shot size of the target's analogue (5, or 3
    on the Cornell/Squirrel analogues). 1 gives the paper's 1-shot setting."""
    n_tasks: int = 20
    """Few-shot tasks per target (the paper: 50)."""
    noise_fraction: float = 0.5
    """Random edges injected into the target, as a fraction of its edges."""
    baseline_steps: int = 100
    """Training steps of GCNProto / MLPProto per task."""
    model: MDGFMConfig = field(default_factory=MDGFMConfig)
    """MDGFM's settings (``model.hidden``, ``model.pretrain_epochs``, ``model.pretrain_lr``, ``model.prompt_steps``,
    ``model.prompt_lr``, ``model.k_homophilic``, ``model.k_heterophilic``, ``model.learner_layers``); the
    PretrainNoRefine ablation shares its width, epochs, learning rates and prompt steps."""

    GRAPHS: ClassVar[str] = "the generated graphs; the paper's are the paper_data experiment's"
    """What the valid ``targets`` are, for error messages."""
    FIGURE: ClassVar[str] = "mdgfm_transfer.png"
    """File name of the experiment's figure (one per experiment: both write into one reports folder)."""

    def target_names(self) -> list[str]:
        """The valid ``targets``."""
        return [s.name for s in SIX_DOMAINS]

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"shots": 10**4, "n_tasks": 10**5, "baseline_steps": 10**7})
        valid = self.target_names()
        bad = [t for t in self.targets if t not in valid]
        if bad:
            raise ConfigError(f"{type(self).__name__}.targets must be among {', '.join(valid)} ({self.GRAPHS}), "
                              f"got {', '.join(map(repr, bad))}")
        check_fields(self, nonempty=("targets",), choices={"targets": valid},
                     positive=("size_scale", "shots", "n_tasks"),
                     nonnegative=("noise_fraction", "baseline_steps"))
        # every domain must keep at least unify_dim = 50 nodes for the PCA step
        smallest = min(s.n_nodes for s in SIX_DOMAINS)
        if round(smallest * self.size_scale) < 50:
            raise ConfigError(f"TransferConfig.size_scale must keep every domain at >= 50 nodes "
                              f"(>= {50 / smallest:.4f}), got {self.size_scale}")

    def figure_title(self, tag: str) -> str:
        """The figure's panel title for the target of kind ``tag`` (``homo`` / ``hetero``)."""
        return f"{tag}philic target (generated CSBM)"

    def target_protocol(self, spec: DomainSpec) -> TargetSettings:
        """The settings used when ``spec`` is the target: the official ones of its analogue, overridden by the
        fields that are set (not None): ``shots`` and ``model.pretrain_lr``, ``model.prompt_lr``,
        ``model.pretrain_epochs``."""
        return self.protocol_from(target_settings(spec), spec.homophilic)

    def protocol_from(self, official: TargetSettings, homophilic: bool) -> TargetSettings:
        """``official`` overridden by the fields that are set (see :meth:`target_protocol`); ``k_down`` from
        ``model.k_homophilic`` / ``model.k_heterophilic``."""
        m = self.model
        return TargetSettings(
            shots=official.shots if self.shots is None else self.shots,
            pretrain_lr=official.pretrain_lr if m.pretrain_lr is None else m.pretrain_lr,
            prompt_lr=official.prompt_lr if m.prompt_lr is None else m.prompt_lr,
            pretrain_epochs=official.pretrain_epochs if m.pretrain_epochs is None else m.pretrain_epochs,
            k_down=m.k_of(homophilic))


@dataclass
class PaperTransferConfig(TransferConfig):
    """The transfer study on the paper's six graphs, read from raw files under ``data_root`` (``size_scale`` is
    unused)."""

    targets: tuple[str, ...] = ("Cora", "Chameleon")
    """Held-out targets: names in data.PAPER_GRAPHS, at most one homophilic (Cora, CiteSeer, PubMed) and one
    heterophilic (Cornell, Chameleon, Squirrel); the metrics are keyed by kind."""
    data_root: str = ""
    """A directory holding the paper's six graphs as raw files in torch_geometric's layout
    (data.PAPER_GRAPHS_LAYOUT, read by data.load_paper_graphs; nothing is downloaded): each target is held out from
    the five others, at the official settings of that data set. The experiment runs only when it is set."""

    GRAPHS: ClassVar[str] = "the paper's graphs"
    FIGURE: ClassVar[str] = "mdgfm_paper_data.png"

    def target_names(self) -> list[str]:
        return list(PAPER_GRAPHS)

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.data_root, str) or (self.data_root and not Path(self.data_root).is_dir()):
            raise ConfigError(f"PaperTransferConfig.data_root must be an existing directory (the paper's graphs in "
                              f"torch_geometric's raw layout; empty: the experiment does not run), got "
                              f"{self.data_root!r}")
        # the metrics are keyed by homo / hetero: two targets of one kind would overwrite each other
        for kind, group in (("homophilic", HOMOPHILIC_PAPER_GRAPHS),
                            ("heterophilic", set(PAPER_GRAPHS) - HOMOPHILIC_PAPER_GRAPHS)):
            if len(group & set(self.targets)) > 1:
                raise ConfigError(f"PaperTransferConfig.targets may hold at most one {kind} data set (the metrics "
                                  f"are per kind), got {', '.join(self.targets)}")

    def figure_title(self, tag: str) -> str:
        name = next(t for t in self.targets if (t in HOMOPHILIC_PAPER_GRAPHS) == (tag == "homo"))
        return f"target {name} (the paper's graph)"


def _accuracy(pred, y: torch.Tensor, support: torch.Tensor) -> float:
    pred = torch.as_tensor(pred).cpu()
    test = torch.ones_like(y, dtype=torch.bool)
    test[support] = False
    return 100.0 * float((pred[test] == y[test]).float().mean())


def _constant_accuracy(y: torch.Tensor, support: torch.Tensor) -> float:
    """Accuracy (%) on the non-support nodes of the best constant predictor (the majority test class): the
    trivial baseline that shows whether a method learned anything."""
    test = torch.ones_like(y, dtype=torch.bool)
    test[support] = False
    return 100.0 * float(torch.bincount(y[test]).max()) / int(test.sum())


def _check_shots(name: str, y: torch.Tensor, shots: int) -> None:
    """A clear error when a class of target ``name`` has fewer than ``shots`` nodes (no support set can be drawn)."""
    counts = torch.bincount(y)
    small = [c for c in range(len(counts)) if 0 < int(counts[c]) < shots]
    if small:
        raise ValueError(f"target {name!r}: class(es) {small} have fewer than shots = {shots} nodes "
                         f"(counts {[int(counts[c]) for c in small]}); set a smaller 'shots'")


def run_transfer(cfg: TransferConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Few-shot accuracy of every method on each held-out target, clean and with random edges injected.

    Each target uses the official settings of the real data set it stands in for (``TransferConfig.target_protocol``):
    shots, pre-training and prompt learning rates, pre-training epochs. With a :class:`PaperTransferConfig` the six
    domains are the paper's graphs (``load_paper_graphs(cfg.data_root)``; ``size_scale`` unused) and each target
    takes its own official settings (``PAPER_TARGET_SETTINGS``); the few-shot tasks are drawn by seed as for the
    generated domains.
    """
    if isinstance(cfg, PaperTransferConfig):  # the paper's six graphs, read from the user's raw files
        domains = load_paper_graphs(cfg.data_root)
        names = [d.name for d in domains]
        homophilic = [bool(d.homophilic) for d in domains]
        n_nodes = [d.num_nodes for d in domains]
        official = [PAPER_TARGET_SETTINGS[n] for n in names]
    else:
        specs = tuple(replace(s, n_nodes=int(round(s.n_nodes * cfg.size_scale))) for s in SIX_DOMAINS)
        domains = make_domains(specs, seed=seed)
        names = [s.name for s in specs]
        homophilic = [s.homophilic for s in specs]
        n_nodes = [s.n_nodes for s in specs]
        official = [None] * len(specs)
    mc = cfg.model
    k_of = [mc.k_of(h) for h in homophilic]
    metrics: Metrics = {}
    total, done = len(cfg.targets) * (2 + 2 * cfg.n_tasks), 0
    for t_name in cfg.targets:
        ti = names.index(t_name)
        proto = (cfg.target_protocol(specs[ti]) if official[ti] is None
                 else cfg.protocol_from(official[ti], homophilic[ti]))
        target = domains[ti]
        tag = "homo" if homophilic[ti] else "hetero"
        _check_shots(t_name, target.y, proto.shots)
        sources = leave_one_out(domains, ti)
        assert all(x is not target.x for x, _ in sources)  # the target never reaches pre-training
        torch.manual_seed(seed)
        model = MDGFM(hidden=mc.hidden, learner_layers=mc.learner_layers, n_sources=len(sources)).to(cfg.device)
        model.pretrain(sources, epochs=proto.pretrain_epochs, lr=proto.pretrain_lr,
                       k=[k for i, k in enumerate(k_of) if i != ti])
        torch.manual_seed(seed)
        ablation = PretrainNoRefine(hidden=mc.hidden, n_sources=len(sources)).to(cfg.device)
        ablation.pretrain(sources, epochs=proto.pretrain_epochs, lr=proto.pretrain_lr, seed=seed)
        done += 2
        progress(done, total)
        graphs = {"clean": target.edge_index,
                  "noisy": inject_random_edges(target.edge_index, n_nodes[ti], cfg.noise_fraction, seed=seed + 1)}
        acc = {(m, c): [] for m in METHODS for c in graphs}
        constant = []
        for task_i, support in enumerate(few_shot_tasks(target.y, proto.shots, cfg.n_tasks, seed=seed + 2)):
            y_s = target.y[support]
            constant.append(_constant_accuracy(target.y, support))
            for cond, ei in graphs.items():
                torch.manual_seed(seed * 1000 + task_i)
                for refine, name in ((True, "mdgfm"), (False, "mdgfm_no_down_refine")):
                    model.refine_downstream = refine
                    model.prompt_tune(target.x, ei, support, y_s, steps=mc.prompt_steps, lr=proto.prompt_lr,
                                      k_down=proto.k_down)
                    acc[name, cond].append(_accuracy(model.predict(target.x, ei), target.y, support))
                ablation.prompt_tune(target.x, ei, support, y_s, steps=mc.prompt_steps, lr=proto.prompt_lr)
                acc["norefine", cond].append(_accuracy(ablation.predict(target.x, ei), target.y, support))
                for name, cls in (("gcnproto", GCNProto), ("mlpproto", MLPProto)):
                    base = cls(device=cfg.device).fit(target.x, ei, support, y_s, steps=cfg.baseline_steps)
                    acc[name, cond].append(_accuracy(base.predict(target.x, ei), target.y, support))
                done += 1
                progress(done, total)
        mean = {key: float(np.mean(v)) for key, v in acc.items()}
        for m in METHODS:
            metrics[f"acc_{m}_{tag}_clean"] = mean[m, "clean"]
            metrics[f"acc_{m}_{tag}_noisy"] = mean[m, "noisy"]
            metrics[f"drop_{m}_{tag}"] = mean[m, "clean"] - mean[m, "noisy"]
        for m in METHODS[1:]:
            metrics[f"{tag}_mdgfm_minus_{m}"] = mean["mdgfm", "clean"] - mean[m, "clean"]
        metrics[f"acc_constant_{tag}"] = float(np.mean(constant))
        metrics[f"{tag}_mdgfm_minus_constant"] = mean["mdgfm", "clean"] - metrics[f"acc_constant_{tag}"]
        metrics[f"{tag}_drop_mdgfm_minus_gcnproto"] = metrics[f"drop_mdgfm_{tag}"] - metrics[f"drop_gcnproto_{tag}"]
        metrics[f"{tag}_target_edge_homophily"] = float(target.homophily)
        metrics[f"{tag}_shots"] = float(proto.shots)
    return metrics


_PAPER_DATA_NOTE = ("the paper's six graphs from the user's raw files, leave-one-out, the official per-target "
                    "settings (README shots 5 / 3, learning rates, 60-100 pre-training epochs), 400 prompt steps, "
                    "hidden 256; 2 of the paper's 6 targets (Cora, Chameleon by default); substitutions: support "
                    "sets drawn by seed (the official index files are not published), test nodes all non-support "
                    "nodes (official: the last <= 10,000), random edges for Metattack")

EXPERIMENTS = [
    Experiment(
        name="transfer",
        description="Leave-one-domain-out few-shot node classification on six generated domains (bag-of-words "
                    "CSBMs, homophily 0.85..0.10; 5-shot, 3-shot on the Cornell/Squirrel analogues, official "
                    "per-target learning rates and epochs): MDGFM vs its no-refinement ablations, supervised "
                    "GCN/MLP prototype baselines and the constant predictor, on the clean target and with 50% "
                    "random edges injected.",
        config=TransferConfig,
        run=run_transfer,
        presets={
            "smoke": {"targets": ("hetero10",), "size_scale": 0.15, "n_tasks": 1, "model.hidden": 16,
                      "model.pretrain_epochs": 2, "model.prompt_steps": 3, "baseline_steps": 3,
                      "model.k_homophilic": 5, "model.k_heterophilic": 5},
            "quick": {"size_scale": 0.4, "n_tasks": 3, "model.hidden": 64},
            "full": {"n_tasks": 50},
        },
        seeds={"smoke": 1, "quick": 3, "full": 5},
        fidelity={
            "smoke": Fidelity("mechanism", "one generated target (Cornell analogue) at 15% size, 1 task, 2 epochs, "
                                           "3 prompt steps: a harness run"),
            "quick": Fidelity("mechanism", "generated CSBM domains (240-480 nodes) stand in for Cora/CiteSeer/PubMed/"
                                           "Chameleon/Squirrel/Cornell and random edges for Metattack; the official "
                                           "400 prompt steps, 3 of 50 tasks, hidden 64 of 256"),
            "full": Fidelity("mechanism", "the generated CSBM domains (600-1200 nodes) at the official settings "
                                          "(400 prompt steps, 50 tasks, hidden 256); random edges for Metattack"),
        },
        figures=transfer_figures,
        full_requirements="The paper's own graphs are the paper_data experiment's (it runs when data_root is set); "
                          "this one runs the generated domains at the paper's model size.",
        not_at_smoke={m: "the smoke preset runs the heterophilic suite only"
                      for m in ("homo_mdgfm_minus_gcnproto", "homo_drop_mdgfm_minus_gcnproto",
                                "homo_mdgfm_minus_constant")},
    ),
    Experiment(
        name="paper_data",
        description="Leave-one-domain-out few-shot node classification on the paper's six graphs (Cora, CiteSeer, "
                    "PubMed, Cornell, Chameleon, Squirrel), read from the user's raw files (data_root): each target "
                    "held out from the five others at its official settings (README shots, learning rates, epochs); "
                    "MDGFM vs its no-refinement ablations, supervised GCN/MLP prototype baselines and the constant "
                    "predictor, on the clean target and with 50% random edges injected, as the transfer "
                    "experiment.",
        config=PaperTransferConfig,
        run=run_transfer,
        presets={
            "smoke": {"targets": ("Cora", "Cornell"), "n_tasks": 1, "model.hidden": 16, "model.pretrain_epochs": 2,
                      "model.prompt_steps": 3, "baseline_steps": 3, "model.k_homophilic": 5,
                      "model.k_heterophilic": 5},
            "quick": {"n_tasks": 3},
            "full": {"n_tasks": 50},
        },
        seeds={"smoke": 1, "quick": 3, "full": 5},
        fidelity={
            "smoke": Fidelity("mechanism", "targets Cora and Cornell, 1 task, hidden 16, 2 pre-training epochs, 3 "
                                           "prompt steps: a harness run on the paper's files"),
            "quick": Fidelity("reduced", _PAPER_DATA_NOTE + "; 3 of the official 50 few-shot tasks per target"),
            "full": Fidelity("reduced", _PAPER_DATA_NOTE + "; the official 50 few-shot tasks per target"),
        },
        figures=transfer_figures,
        data_setting="data_root",
        full_requirements="The paper's six graphs as raw files (nothing is downloaded): icml25 reproduce mdgfm "
                          "--preset full --set data_root=/path/to/pyg (--set targets=CiteSeer,Squirrel picks other "
                          "targets: at most one of Cora, CiteSeer, PubMed and one of Cornell, Chameleon, Squirrel; "
                          "each is held out and the five others pre-train; the default is Cora and Chameleon); "
                          "without data_root the experiment is skipped with one line. Layout (what "
                          "torch_geometric's Planetoid(root, 'Cora'), WebKB(root, 'Cornell') and "
                          "WikipediaNetwork(root, 'chameleon', geom_gcn_preprocess=True) write): "
                          + PAPER_GRAPHS_LAYOUT + ". Differences from the paper: the few-shot support sets are drawn "
                          "by seed (the official index files are not available); test nodes are all non-support "
                          "nodes; shots follow the README (5, 3 on Cornell/Squirrel; --set shots=1 gives the 1-shot "
                          "setting); random edges stand in for Metattack. Cost, measured on 1 CPU thread on "
                          "generated graphs of the real sizes (node counts, feature widths): one MDGFM prompt-tuning "
                          "step takes about 0.3 s at Chameleon's size, 0.5-0.7 s at CiteSeer's and Cora's, 2 s at "
                          "Squirrel's and 34 s at PubMed's; the full preset takes 50 tasks x 2 graphs (clean, noisy) "
                          "x 400 such steps per target, plus the cheaper no-refinement and ablation passes: about 6 h "
                          "(Chameleon) to 10 h (Cora) per target and seed, weeks with PubMed as target, times 5 "
                          "seeds; quick (3 tasks) about 3/50 of that. Every pre-training with PubMed among its "
                          "sources (every target but PubMed) adds about 3 min per epoch (60-100 epochs) and needs "
                          "about 20 GB of memory. A GPU is needed (time there not measured).",
    ),
]

_ACC_TIE = "accuracy in %, 1 point (0.01) is the smallest gap that matters; paper's numbers not retrieved"
_DROP_TIE = "difference of accuracy drops in %, 1 point (0.01) matters; paper's numbers not retrieved"
_T2_SOURCE = "Table 2 (not read first-hand; numbers not retrieved)"
_T2_FAIR = ("Table 2 compares trained models on the real data sets with the official 400 prompt steps; fewer few-shot "
            "tasks or seeds of that protocol still test its direction")
_ROBUST_FAIR = ("Sec. 5.3 perturbs the real target graphs (noisy edges, Metattack); the same protocol with fewer tasks "
                "or seeds still tests its direction")
CLAIMS = [
    Claim(id="hetero_beats_no_down_refine", kind="paper",
          source="the abstract and Sec. 4 (topology refinement is the method's core idea; Table 2's MDGFM > MDGPT, not "
                 "read first-hand, numbers not retrieved); isolating the refinement by removing it from the same "
                 "pre-trained model is ours",
          statement="Heterophilic target, few-shot: MDGFM's accuracy is at least that of the same pre-trained "
                    "model prompt-tuned on the normalised graph A^ alone (no target graph learner; paired "
                    "difference >= 0).",
          paper_value="the refined graph makes transfer to heterophilic graphs work (MDGFM > MDGPT on "
                      "Chameleon/Squirrel/Cornell, Table 2; numbers not retrieved)",
          experiment="transfer", metric="hetero_mdgfm_minus_mdgfm_no_down_refine", op=">=", threshold=0.0,
          resolution=1.0, resolution_reason=_ACC_TIE,
          requires=("hetero_learned",), fair_at="reduced", fair_at_reason=_T2_FAIR),
    Claim(id="hetero_beats_gcn", kind="paper", source=_T2_SOURCE,
          statement="Heterophilic target, few-shot: MDGFM beats a GCN trained on the support set.",
          paper_value="MDGFM > supervised GCN on heterophilic graphs (Table 2; numbers not retrieved)",
          experiment="transfer", metric="hetero_mdgfm_minus_gcnproto", op=">=", threshold=0.0,
          resolution=1.0, resolution_reason=_ACC_TIE,
          requires=("hetero_learned",), fair_at="reduced", fair_at_reason=_T2_FAIR),
    Claim(id="homo_beats_gcn", kind="paper", source=_T2_SOURCE,
          statement="Homophilic target, few-shot: MDGFM beats a GCN trained on the support set.",
          paper_value="MDGFM > supervised GCN on Cora/CiteSeer/PubMed (Table 2; numbers not retrieved)",
          experiment="transfer", metric="homo_mdgfm_minus_gcnproto", op=">=", threshold=0.0,
          resolution=1.0, resolution_reason=_ACC_TIE,
          requires=("homo_learned",), fair_at="reduced", fair_at_reason=_T2_FAIR),
    Claim(id="homo_robust", kind="paper", source="Sec. 5.3 (not read first-hand; numbers not retrieved)",
          statement="Homophilic target, +50% random edges: MDGFM's accuracy drop is no larger than "
                    "GCNProto's (random noise, a weaker proxy for the paper's attacks).",
          paper_value="MDGFM degrades least under noisy edges / Metattack (Sec. 5.3; numbers not retrieved)",
          experiment="transfer", metric="homo_drop_mdgfm_minus_gcnproto", op="<=", threshold=0.0,
          resolution=1.0, resolution_reason=_DROP_TIE,
          requires=("homo_learned",), fair_at="reduced", fair_at_reason=_ROBUST_FAIR),
    Claim(id="hetero_robust", kind="paper", source="Sec. 5.3 (not read first-hand; numbers not retrieved)",
          statement="Heterophilic target, +50% random edges: MDGFM's accuracy drop is no larger than "
                    "GCNProto's.",
          paper_value="MDGFM degrades least under noisy edges / Metattack (Sec. 5.3; numbers not retrieved)",
          experiment="transfer", metric="hetero_drop_mdgfm_minus_gcnproto", op="<=", threshold=0.0,
          resolution=1.0, resolution_reason=_DROP_TIE,
          requires=("hetero_learned",), fair_at="reduced", fair_at_reason=_ROBUST_FAIR),
    Claim(id="homo_learned", kind="check",
          statement="(ours, beyond the paper) Homophilic target: MDGFM beats the constant predictor "
                    "(majority class of the test nodes).",
          paper_value="not claimed by the paper", experiment="transfer", metric="homo_mdgfm_minus_constant",
          op=">=", threshold=0.0,
          resolution=1.0,
          resolution_reason="accuracy in %, 1 point is the smallest gap that matters; the check that the "
                            "pre-trained, prompt-tuned model learned anything at all"),
    Claim(id="hetero_learned", kind="check",
          statement="(ours, beyond the paper) Heterophilic target: MDGFM beats the constant predictor "
                    "(majority class of the test nodes).",
          paper_value="not claimed by the paper", experiment="transfer", metric="hetero_mdgfm_minus_constant",
          op=">=", threshold=0.0,
          resolution=1.0, resolution_reason="as homo_learned: 1 point of accuracy is the smallest gap that matters"),
]

# the paper's own graphs: the same statistics, thresholds and resolutions as the stand-in's paper claims and gates
# (fixed before any paper_data run); decided only when a user gives data_root
_HOMO = "Homophilic target from the paper's Cora / CiteSeer / PubMed (the one in targets; Cora by default)"
_HETERO = ("Heterophilic target from the paper's Cornell / Chameleon / Squirrel (the one in targets; Chameleon by "
           "default)")
CLAIMS += [
    Claim(id="paper_data_hetero_beats_no_down_refine", kind="paper",
          source="the abstract and Sec. 4 (topology refinement is the method's core idea; Table 2's MDGFM > MDGPT, not "
                 "read first-hand, numbers not retrieved); isolating the refinement by removing it from the same "
                 "pre-trained model is ours",
          statement=f"{_HETERO}, few-shot: MDGFM's accuracy is at least that of the same pre-trained model "
                    "prompt-tuned on the normalised graph A^ alone (no target graph learner; paired difference >= 0).",
          paper_value="the refined graph makes transfer to heterophilic graphs work (MDGFM > MDGPT on "
                      "Chameleon/Squirrel/Cornell, Table 2; numbers not retrieved)",
          experiment="paper_data", metric="hetero_mdgfm_minus_mdgfm_no_down_refine", op=">=", threshold=0.0,
          aggregate="mean", resolution=1.0, resolution_reason=f"{_ACC_TIE} (as hetero_beats_no_down_refine)",
          requires=("paper_data_hetero_learned",), fair_at="reduced", fair_at_reason=_T2_FAIR),
    Claim(id="paper_data_hetero_beats_gcn", kind="paper", source=_T2_SOURCE,
          statement=f"{_HETERO}, few-shot: MDGFM beats a GCN trained on the support set.",
          paper_value="MDGFM > supervised GCN on heterophilic graphs (Table 2; numbers not retrieved)",
          experiment="paper_data", metric="hetero_mdgfm_minus_gcnproto", op=">=", threshold=0.0, aggregate="mean",
          resolution=1.0, resolution_reason=f"{_ACC_TIE} (as hetero_beats_gcn)",
          requires=("paper_data_hetero_learned",), fair_at="reduced", fair_at_reason=_T2_FAIR),
    Claim(id="paper_data_homo_beats_gcn", kind="paper", source=_T2_SOURCE,
          statement=f"{_HOMO}, few-shot: MDGFM beats a GCN trained on the support set.",
          paper_value="MDGFM > supervised GCN on Cora/CiteSeer/PubMed (Table 2; numbers not retrieved)",
          experiment="paper_data", metric="homo_mdgfm_minus_gcnproto", op=">=", threshold=0.0, aggregate="mean",
          resolution=1.0, resolution_reason=f"{_ACC_TIE} (as homo_beats_gcn)",
          requires=("paper_data_homo_learned",), fair_at="reduced", fair_at_reason=_T2_FAIR),
    Claim(id="paper_data_homo_robust", kind="paper", source="Sec. 5.3 (not read first-hand; numbers not retrieved)",
          statement=f"{_HOMO}, +50% random edges: MDGFM's accuracy drop is no larger than GCNProto's (random noise, "
                    "a weaker proxy for the paper's attacks).",
          paper_value="MDGFM degrades least under noisy edges / Metattack (Sec. 5.3; numbers not retrieved)",
          experiment="paper_data", metric="homo_drop_mdgfm_minus_gcnproto", op="<=", threshold=0.0,
          aggregate="mean", resolution=1.0, resolution_reason=f"{_DROP_TIE} (as homo_robust)",
          requires=("paper_data_homo_learned",), fair_at="reduced", fair_at_reason=_ROBUST_FAIR),
    Claim(id="paper_data_hetero_robust", kind="paper", source="Sec. 5.3 (not read first-hand; numbers not retrieved)",
          statement=f"{_HETERO}, +50% random edges: MDGFM's accuracy drop is no larger than GCNProto's.",
          paper_value="MDGFM degrades least under noisy edges / Metattack (Sec. 5.3; numbers not retrieved)",
          experiment="paper_data", metric="hetero_drop_mdgfm_minus_gcnproto", op="<=", threshold=0.0,
          aggregate="mean", resolution=1.0, resolution_reason=f"{_DROP_TIE} (as hetero_robust)",
          requires=("paper_data_hetero_learned",), fair_at="reduced", fair_at_reason=_ROBUST_FAIR),
    Claim(id="paper_data_homo_learned", kind="check",
          statement=f"(ours, beyond the paper) {_HOMO}: MDGFM beats the constant predictor (majority class of the "
                    "test nodes).",
          paper_value="not claimed by the paper", experiment="paper_data", metric="homo_mdgfm_minus_constant",
          op=">=", threshold=0.0, aggregate="mean", resolution=1.0,
          resolution_reason="as homo_learned: 1 point of accuracy is the smallest gap that matters"),
    Claim(id="paper_data_hetero_learned", kind="check",
          statement=f"(ours, beyond the paper) {_HETERO}: MDGFM beats the constant predictor (majority class of the "
                    "test nodes).",
          paper_value="not claimed by the paper", experiment="paper_data", metric="hetero_mdgfm_minus_constant",
          op=">=", threshold=0.0, aggregate="mean", resolution=1.0,
          resolution_reason="as hetero_learned: 1 point of accuracy is the smallest gap that matters"),
]

API_EXAMPLE = """
import torch
from icml25.papers.mdgfm import MDGFM, make_domains, few_shot_tasks
from icml25.papers.mdgfm.data import SIX_DOMAINS
from dataclasses import replace

specs = tuple(replace(s, n_nodes=s.n_nodes // 5) for s in SIX_DOMAINS)   # small, for a fast example
domains = make_domains(specs, seed=0)
target = domains[4]                                                      # a heterophilic domain, held out
sources = [(d.x, d.edge_index) for i, d in enumerate(domains) if i != 4]
model = MDGFM(hidden=32, n_sources=5).pretrain(sources, epochs=5, lr=1e-2, k=[10] * 5)
support = few_shot_tasks(target.y, shots=3, n_tasks=1, seed=0)[0]          # 3-shot, as for Squirrel
model.prompt_tune(target.x, target.edge_index, support, target.y[support], steps=20, lr=1e-2, k_down=10)
pred = model.predict(target.x, target.edge_index)
print("3-shot accuracy:", float((pred == target.y).float().mean()))
"""
