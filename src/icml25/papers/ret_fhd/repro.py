"""ReT-FHD reproduction: heterogeneous federated distillation on digits and a 20-class mixture.

Every method of a seed uses the same data split, the same client architectures and the same
initial weights; claims use per-seed differences. Settings and thresholds were fixed before the
first quick run. The ``paper_data`` experiment runs the same protocol on the paper's CIFAR-10/100 or Tiny-ImageNet
files read from the user's folder ``data_dir`` (data.load_paper_dataset), still with the multi-exit MLP clients; it
runs only when ``data_dir`` is set (``reproduce`` skips it with one line otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
from icml25.papers.ret_fhd.data import PAPER_DATASETS, dirichlet_split, load_dataset, load_paper_dataset, make_clients
from icml25.papers.ret_fhd.federated import FDFixedT, LocalOnly, ReTFHD, ReTFHDConfig, n_parameters
from icml25.papers.ret_fhd.figures import fhd_figures

METHODS = ("retfhd", "fd_t1", "fd_t4", "local", "no_elastic", "no_category")
"""Clean-run methods; the attack runs are ``attack_guard`` and ``attack_noguard``."""


def _experiment_training() -> ReTFHDConfig:
    """The experiment's training settings: the method's defaults with 64-sample batches and Adam at 3e-3."""
    return ReTFHDConfig(rounds=20, local_epochs=2, batch_size=64, lr=3e-3)


@dataclass
class FHDConfig(TorchConfig):
    dataset: str = "digits"
    """``digits`` (sklearn, 10 classes) or ``gmm20`` (20-class Gaussian mixture, 50-d)."""
    n_clients: int = 10
    """Number of clients."""
    alpha: float = 0.3
    """Dirichlet label-skew concentration."""
    n_attackers: int = 3
    """Malicious clients in the attack runs (alternating label flip / model poisoning)."""
    attack_scale: float = 3.0
    """Spread of the poisoned random logits, in units of the attacker's honest logit spread."""
    last_rounds: int = 3
    """Accuracy is the mean over the last this-many rounds."""
    fhd: ReTFHDConfig = field(default_factory=_experiment_training)
    """Training settings of every run (``--set fhd.rounds=...``); each baseline and ablation switches off its part."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("alpha", "last_rounds"), nonnegative=("n_attackers", "attack_scale"),
                     at_least={"n_clients": 3},
                     choices={"dataset": ("digits", "gmm20")})
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"n_clients": 10**4, "n_attackers": 10**4, "last_rounds": 10**6})
        if self.n_attackers >= self.n_clients / 2:
            raise ConfigError(f"FHDConfig.n_attackers must be below half of n_clients = {self.n_clients}, "
                              f"got {self.n_attackers}")
        if self.last_rounds > self.fhd.rounds:
            raise ConfigError(f"FHDConfig.last_rounds must be <= fhd.rounds = {self.fhd.rounds}, "
                              f"got {self.last_rounds}")


@dataclass
class PaperDataConfig(FHDConfig):
    """The same protocol on the paper's own image data set, read from ``data_dir`` (``dataset`` is unused)."""

    data_dir: str = ""
    """A folder holding the paper's ``paper_dataset`` in its official layout (``cifar-10-batches-py/``,
    ``cifar-100-python/`` or ``tiny-imagenet-200/``; see data.load_paper_dataset): its official training set is
    partitioned over the clients and its test set is the global test set (nothing is downloaded). The experiment
    runs only when it is set."""
    paper_dataset: str = "cifar10"
    """The paper's data set read from ``data_dir``: ``cifar10``, ``cifar100`` or ``tinyimagenet``."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, choices={"paper_dataset": PAPER_DATASETS})
        if not isinstance(self.data_dir, str) or (self.data_dir and not Path(self.data_dir).expanduser().is_dir()):
            raise ConfigError(f"PaperDataConfig.data_dir must be an existing folder with the paper's "
                              f"{self.paper_dataset} files (empty: the experiment does not run), got {self.data_dir!r}")


def load_data(cfg: FHDConfig, seed: int):
    """``(X_train, y_train, X_test, y_test, n_classes)`` of a run: the paper's ``paper_dataset`` from
    ``cfg.data_dir`` (:class:`PaperDataConfig`; official train / test split, the same for every seed), else the
    bundled ``cfg.dataset``."""
    if isinstance(cfg, PaperDataConfig):
        return load_paper_dataset(cfg.paper_dataset, cfg.data_dir)
    return load_dataset(cfg.dataset, seed)


def run_fhd(cfg: FHDConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """All methods, the two attack runs, and the metrics the claims use, on one seed."""
    Xtr, ytr, Xte, yte, C = load_data(cfg, seed)
    parts = dirichlet_split(ytr, cfg.n_clients, cfg.alpha, seed)  # on the CPU, before the data moves
    device = torch.device(cfg.device)
    Xtr, ytr, Xte, yte = (t.to(device) for t in (Xtr, ytr, Xte, yte))
    run_args = dict(seed=seed, eval_data=(Xte, yte))
    train = cfg.fhd
    rng = np.random.default_rng([seed, 23])
    bad = sorted(rng.choice(cfg.n_clients, cfg.n_attackers, replace=False).tolist())
    attackers = {k: ("label_flip", "model_poison")[i % 2] for i, k in enumerate(bad)}
    honest = [k for k in range(cfg.n_clients) if k not in attackers]
    runs = {
        "retfhd": (lambda cl: ReTFHD(cl, train, **run_args), None),
        "fd_t1": (lambda cl: FDFixedT(cl, train, T=1.0, **run_args), None),
        "fd_t4": (lambda cl: FDFixedT(cl, train, T=4.0, **run_args), None),
        "local": (lambda cl: LocalOnly(cl, train, **run_args), None),
        "no_elastic": (lambda cl: ReTFHD(cl, replace(train, elastic=False), **run_args), None),
        "no_category": (lambda cl: ReTFHD(cl, replace(train, category=False), **run_args), None),
        "attack_guard": (lambda cl: ReTFHD(cl, train, **run_args), attackers),
        "attack_noguard": (lambda cl: ReTFHD(cl, replace(train, guard=False), **run_args), attackers),
    }
    m: Metrics = {}
    hists = {}
    for i, (name, (make, att)) in enumerate(runs.items()):
        clients = make_clients(Xtr, ytr, parts, C, seed=seed, attackers=att)
        for c in clients:
            c.attack_scale = cfg.attack_scale
        hists[name] = make(clients).run()
        m[f"acc_{name}"] = float(np.mean(hists[name].accuracy[-cfg.last_rounds:]))
        progress(i + 1, len(runs))
    for name in ("retfhd", "fd_t1", "fd_t4", "local"):
        m[f"curve_{name}"] = hists[name].accuracy
    # (i) accuracy against the baselines, and (iv) ablations
    m["retfhd_minus_fd_t1"] = m["acc_retfhd"] - m["acc_fd_t1"]
    m["retfhd_minus_fd_t4"] = m["acc_retfhd"] - m["acc_fd_t4"]
    m["retfhd_minus_local"] = m["acc_retfhd"] - m["acc_local"]
    m["full_minus_no_elastic"] = m["acc_retfhd"] - m["acc_no_elastic"]
    m["full_minus_no_category"] = m["acc_retfhd"] - m["acc_no_category"]
    # (ii) communication: bytes one client uploads per round vs its model's parameter bytes
    models = make_clients(Xtr, ytr, parts, C, seed=seed)
    param_bytes = np.array([4 * n_parameters(c.model) for c in models])
    upload = hists["retfhd"].bytes_per_round[0] / cfg.n_clients
    m["upload_bytes_per_client"] = upload
    m["upload_over_smallest_model"] = upload / param_bytes.min()
    m["upload_over_mean_model"] = upload / param_bytes.mean()
    # (iii) guard: detection rates over all rounds, accuracy of the honest clients
    flagged = np.zeros((train.rounds, cfg.n_clients), bool)
    for t, ids in enumerate(hists["attack_guard"].flagged):
        flagged[t, ids] = True
    m["guard_recall"] = float(flagged[:, bad].mean())
    m["guard_fpr"] = float(flagged[:, honest].mean())
    clean_flags = np.zeros((train.rounds, cfg.n_clients), bool)
    for t, ids in enumerate(hists["retfhd"].flagged):
        clean_flags[t, ids] = True
    m["guard_fpr_clean"] = float(clean_flags.mean())
    clean_honest = float(np.mean(np.asarray(hists["retfhd"].client_accuracy)[-cfg.last_rounds:, honest]))
    m["acc_clean_honest"] = clean_honest
    m["attack_loss_guard"] = clean_honest - m["acc_attack_guard"]
    m["attack_loss_noguard"] = clean_honest - m["acc_attack_noguard"]
    m["guard_half_loss_margin"] = 0.5 * m["attack_loss_noguard"] - m["attack_loss_guard"]
    m["guard_minus_noguard_attack"] = m["acc_attack_guard"] - m["acc_attack_noguard"]
    return m


_SMOKE = {"n_clients": 6, "fhd.rounds": 3, "n_attackers": 1, "last_rounds": 1}
_FULL_REQ = ("The paper's setting (CIFAR-10/100, Tiny-ImageNet, Flowers-102 with ResNet/VGG/MobileNet mixes) needs "
             "the data sets and a GPU; the paper's own data sets are the paper_data experiment's (it runs when "
             "data_dir is set). This one runs its bundled stand-in for 100 rounds.")
_PAPER_DATA_REQ = (
    "The paper's data: extract the official archives into one folder (cifar-10-batches-py/ with data_batch_1..5, "
    "test_batch, batches.meta; cifar-100-python/ with train, test, meta; tiny-imagenet-200/ with wnids.txt, "
    "train/<wnid>/images/, val/images/ and val/val_annotations.txt) and run `icml25 reproduce ret_fhd --preset full "
    "--set data_dir=/path/to/folder --set paper_dataset=cifar10` (or cifar100, tinyimagenet; Flowers-102 is not "
    "read); without data_dir the experiment is skipped with one line. Nothing is downloaded; the pickles are read "
    "directly (trusted files only); pixels are scaled to [-1, 1] as the official code's Normalize(0.5, 0.5), "
    "flattened channel-major; the official train / test split is used. The paper's ResNet/VGG/MobileNet clients are "
    "not implemented: the heterogeneous multi-exit MLPs of the stand-in experiments run on the flattened images "
    "(3,072 or 12,288 inputs), so such a run tests the protocol on the real label skew, not the paper's model mixes. "
    "CPU cost, measured on random arrays of the real size on 1 thread of a busy 2-core machine: one ReTFHD round (10 "
    "clients, 2 local epochs, test on 10,000) ~5.4 s for CIFAR-10 (50,000 x 3,072), ~7.4 s for CIFAR-100, ~16 s for "
    "20,000 Tiny-ImageNet-sized rows (so ~80 s for its 100,000, ~12 GB RAM); a seed runs 8 such runs, so quick (20 "
    "rounds) is ~15 CPU-minutes per seed on CIFAR-10 and full (100 rounds) ~1.2 CPU-hours per seed on CIFAR-10, ~1.6 "
    "on CIFAR-100, ~18 on Tiny-ImageNet (10 seeds: ~12, ~16 and ~180 CPU-hours; the MLPs need no GPU, the paper's "
    "CNNs would).")
_PAPER_DATA_NOTE = ("the paper's {data} (paper_dataset) with its official train / test split and pixel scaling, "
                    "Dirichlet(0.3) label skew over 10 clients; heterogeneous multi-exit MLPs (2-10k parameters on "
                    "the stand-ins, a 3,072- or 12,288-input first layer here) stand in for the paper's "
                    "ResNet/VGG/MobileNet mixes; {rounds} rounds of 2 local epochs, Adam lr 3e-3, batch 64 (the "
                    "paper's client and round counts were not read first-hand)")
EXPERIMENTS = [
    Experiment(
        name=ds,
        description=f"{label}: 10 clients with heterogeneous multi-exit MLPs, Dirichlet(0.3) label skew; ReT-FHD vs "
                    "FD (T=1, T=4), local training and ablations, plus 3 attackers (label flip / poisoned logits) "
                    "with and without the Z-score guard.",
        config=FHDConfig,
        run=run_fhd,
        presets={"smoke": {"dataset": ds, **_SMOKE}, "quick": {"dataset": ds},
                 "full": {"dataset": ds, "fhd.rounds": 100}},
        seeds={"smoke": 2, "quick": 3, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", f"{label} and multi-exit MLPs stand in for the paper's image data sets "
                                           "and CNN mixes; 6 clients, 3 rounds"),
            "quick": Fidelity("mechanism", f"{label} and 2-10k-parameter multi-exit MLPs stand in for CIFAR-10/100, "
                                           "Tiny-ImageNet, Flowers-102 and ResNet/VGG/MobileNet mixes; 10 clients, "
                                           "20 rounds"),
            "full": Fidelity("mechanism", f"the same stand-in ({label}, MLPs) run longer: 100 rounds"),
        },
        figures=fhd_figures,
        full_requirements=_FULL_REQ,
    )
    for ds, label in (("digits", "sklearn digits"), ("gmm20", "20-class Gaussian mixture (50-d)"))
] + [
    Experiment(
        name="paper_data",
        description="The paper's CIFAR-10, CIFAR-100 or Tiny-ImageNet (data_dir, paper_dataset) from the official "
                    "archives: 10 clients with heterogeneous multi-exit MLPs, Dirichlet(0.3) label skew; ReT-FHD vs "
                    "FD (T=1, T=4), local training and ablations, plus 3 attackers (label flip / poisoned logits) "
                    "with and without the Z-score guard, as the stand-in experiments.",
        config=PaperDataConfig,
        run=run_fhd,
        presets={"smoke": dict(_SMOKE), "quick": {}, "full": {"fhd.rounds": 100}},
        seeds={"smoke": 2, "quick": 3, "full": 10},
        fidelity={
            "smoke": Fidelity("mechanism", "6 clients, 3 rounds: a harness run on the paper's files"),
            "quick": Fidelity("reduced", _PAPER_DATA_NOTE.format(data="CIFAR-10/100 or Tiny-ImageNet", rounds=20)),
            "full": Fidelity("reduced", _PAPER_DATA_NOTE.format(data="CIFAR-10/100 or Tiny-ImageNet", rounds=100)),
        },
        figures=fhd_figures,
        data_setting="data_dir",
        full_requirements=_PAPER_DATA_REQ,
    ),
]


_REAL = ("the paper compares on CIFAR-10/100, Tiny-ImageNet and Flowers-102 with heterogeneous CNN mixes; fewer "
         "clients or rounds there would still test the direction, small MLPs on digits or a Gaussian mixture do not")


def _claims(ds: str) -> list[Claim]:
    nr = "table numbers not retrieved"
    return [
        Claim(id=f"{ds}_beats_fd_t1", kind="paper",
              statement=f"{ds}: ReT-FHD's mean client accuracy is at least 1 point above FD with T=1.",
              paper_value=f"significant accuracy gains over baselines (abstract; {nr})", source="abstract",
              experiment=ds, metric="retfhd_minus_fd_t1", op=">=", threshold=0.01, resolution=0.005,
              resolution_reason="accuracy in [0,1]; half the claimed 1-point margin (paper's table gap not "
              "retrieved; the 1-point bar is ours)",
              fair_at="reduced", fair_at_reason=_REAL),
        Claim(id=f"{ds}_beats_fd_t4", kind="paper",
              statement=f"{ds}: ReT-FHD's mean client accuracy is no lower than FD with fixed T=4.",
              paper_value=f"adaptive temperatures beat a fixed one (abstract; {nr})", source="abstract",
              experiment=ds, metric="retfhd_minus_fd_t4", op=">=", threshold=0.0, resolution=0.01,
              resolution_reason="accuracy in [0,1]; a gap under 1 point does not matter (paper's numbers not "
              "retrieved)",
              fair_at="reduced", fair_at_reason=_REAL),
        # every seed: upload size is fixed by construction (L*C*C floats vs parameter bytes); a per-run bound.
        # A check: the ratio is fixed by the config; the 1% criterion is the card's, not the paper's, and cannot
        # be met by 2-10k-parameter MLPs.
        Claim(id=f"{ds}_upload_vs_smallest", kind="check",
              statement=f"{ds}: a client's upload is at most 1% of the smallest client model's parameter bytes "
              "(the card's criterion).",
              paper_value="substantially lower communication (abstract)", source="abstract (the 1% bar is the card's)",
              experiment=ds, metric="upload_over_smallest_model", op="<=", threshold=0.01, aggregate="every_seed"),
        # every seed: upload size is fixed by construction (L*C*C floats vs parameter bytes); a per-run bound.
        # A check: the ratio is fixed by the config, although the paper states lower communication.
        Claim(id=f"{ds}_upload_vs_fedavg", kind="check",
              statement=f"{ds}: a client's upload is at most 10% of what FedAvg would send (the mean client model's "
              "parameter bytes).",
              paper_value="substantially lower communication (abstract)", source="abstract",
              experiment=ds, metric="upload_over_mean_model", op="<=", threshold=0.1, aggregate="every_seed"),
        # ours: the paper's only number is that the guard "mitigates 44% of attacks"; the 80% recall bar is ours
        Claim(id=f"{ds}_guard_recall", kind="ours",
              statement=f"{ds}: the Z-score guard rejects at least 80% of malicious uploads.",
              paper_value="mitigates 44% of label-flipping and model-poisoning attacks (abstract)",
              source="abstract gives 44% mitigated; the 80% recall bar is ours",
              experiment=ds, metric="guard_recall", op=">=", threshold=0.8, resolution=0.02,
              resolution_reason="a detection rate in [0,1]; 2 points around the 80% bar do not matter"),
        Claim(id=f"{ds}_guard_fpr", kind="ours",
              statement=f"{ds}: the guard rejects at most 10% of honest uploads under attack.",
              paper_value="not reported", experiment=ds, metric="guard_fpr", op="<=", threshold=0.1, resolution=0.02,
              resolution_reason="a false-positive rate in [0,1]; 2 points around the 10% bar do not matter"),
        # ours: the paper says the guard mitigates attacks, not that it halves the accuracy loss
        Claim(id=f"{ds}_guard_halves_loss", kind="ours",
              statement=f"{ds}: with the guard, the accuracy lost to the attack is at most half the loss without it "
              "(0.5 loss_noguard - loss_guard >= 0).",
              paper_value="Z-Score Guard mitigates attacks (abstract)",
              experiment=ds, metric="guard_half_loss_margin", op=">=", threshold=0.0, resolution=0.01,
              resolution_reason="accuracy units; a margin under 1 accuracy point does not matter"),
        Claim(id=f"{ds}_ablation_elastic", kind="paper",
              statement=f"{ds}: removing the multi-level elastic temperature lowers accuracy.",
              paper_value="ablation (Sec. 5; numbers not retrieved)", source="Sec. 5 (ablation)",
              experiment=ds, metric="full_minus_no_elastic", op=">=", threshold=0.0, resolution=0.01,
              resolution_reason="accuracy in [0,1]; an ablation effect under 1 point does not matter (numbers not "
              "retrieved)",
              fair_at="reduced",
              fair_at_reason="the elastic temperature targets heterogeneous CNN depths on the paper's image "
              "benchmarks; fewer clients or rounds there would still test it, small multi-exit MLPs do not"),
        Claim(id=f"{ds}_ablation_category", kind="paper",
              statement=f"{ds}: removing the category-aware temperature lowers accuracy.",
              paper_value="ablation (Sec. 5; numbers not retrieved)", source="Sec. 5 (ablation)",
              experiment=ds, metric="full_minus_no_category", op=">=", threshold=0.0, resolution=0.01,
              resolution_reason="accuracy in [0,1]; an ablation effect under 1 point does not matter (numbers not "
              "retrieved)",
              fair_at="reduced", fair_at_reason=_REAL),
        Claim(id=f"{ds}_ablation_guard", kind="paper",
              statement=f"{ds}: under attack, removing the guard lowers accuracy.",
              paper_value="ablation (Sec. 5; numbers not retrieved)", source="Sec. 5 (ablation)",
              experiment=ds, metric="guard_minus_noguard_attack", op=">=", threshold=0.0, resolution=0.01,
              resolution_reason="accuracy in [0,1]; an ablation effect under 1 point does not matter (numbers not "
              "retrieved)",
              fair_at="mechanism",
              fair_at_reason="filtering outlying poisoned or flipped logit uploads is what the guard is for; any "
              "faithful stand-in with the paper's two attacks must show it"),
    ]


CLAIMS = _claims("digits") + _claims("gmm20")

# the paper's own data sets: the paper claims of the stand-ins with the same metrics, thresholds, aggregates and
# resolutions (fixed before any paper_data run); decided only when a user gives data_dir
_PD = "paper_data"
_DATA = "The paper's CIFAR-10, CIFAR-100 or Tiny-ImageNet (paper_dataset)"
_PD_FAIR = ("the paper compares on these data sets under label skew; clients heterogeneous in depth and width (the "
            "multi-exit MLPs, a substitution stated in the presets' notes) with fewer rounds test the direction of "
            "the abstract's gains, not the magnitudes of its CNN mixes")
_NR = "table numbers not retrieved"
CLAIMS += [
    Claim(id="paper_data_beats_fd_t1", kind="paper",
          statement=f"{_DATA}: ReT-FHD's mean client accuracy is at least 1 point above FD with T=1.",
          paper_value=f"significant accuracy gains over baselines (abstract; {_NR})", source="abstract",
          experiment=_PD, metric="retfhd_minus_fd_t1", op=">=", threshold=0.01, resolution=0.005,
          resolution_reason="as <ds>_beats_fd_t1: accuracy in [0,1]; half the claimed 1-point margin (paper's table "
          "gap not retrieved; the 1-point bar is ours)",
          fair_at="reduced", fair_at_reason=_PD_FAIR),
    Claim(id="paper_data_beats_fd_t4", kind="paper",
          statement=f"{_DATA}: ReT-FHD's mean client accuracy is no lower than FD with fixed T=4.",
          paper_value=f"adaptive temperatures beat a fixed one (abstract; {_NR})", source="abstract",
          experiment=_PD, metric="retfhd_minus_fd_t4", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as <ds>_beats_fd_t4: accuracy in [0,1]; a gap under 1 point does not matter (paper's "
          "numbers not retrieved)",
          fair_at="reduced", fair_at_reason=_PD_FAIR),
    Claim(id="paper_data_ablation_elastic", kind="paper",
          statement=f"{_DATA}: removing the multi-level elastic temperature lowers accuracy.",
          paper_value="ablation (Sec. 5; numbers not retrieved)", source="Sec. 5 (ablation)",
          experiment=_PD, metric="full_minus_no_elastic", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as <ds>_ablation_elastic: accuracy in [0,1]; an ablation effect under 1 point does not "
          "matter (numbers not retrieved)",
          fair_at="paper",
          fair_at_reason="as <ds>_ablation_elastic: the elastic temperature targets the depths of heterogeneous CNNs "
          "on these benchmarks; multi-exit MLPs on the same images do not test it, so no preset here decides it"),
    Claim(id="paper_data_ablation_category", kind="paper",
          statement=f"{_DATA}: removing the category-aware temperature lowers accuracy.",
          paper_value="ablation (Sec. 5; numbers not retrieved)", source="Sec. 5 (ablation)",
          experiment=_PD, metric="full_minus_no_category", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as <ds>_ablation_category: accuracy in [0,1]; an ablation effect under 1 point does not "
          "matter (numbers not retrieved)",
          fair_at="reduced",
          fair_at_reason="the category-wise temperature targets data heterogeneity, which the paper's data under "
          "Dirichlet label skew has with any client model; fewer rounds still test the direction"),
    Claim(id="paper_data_ablation_guard", kind="paper",
          statement=f"{_DATA}: under attack, removing the guard lowers accuracy.",
          paper_value="ablation (Sec. 5; numbers not retrieved)", source="Sec. 5 (ablation)",
          experiment=_PD, metric="guard_minus_noguard_attack", op=">=", threshold=0.0, resolution=0.01,
          resolution_reason="as <ds>_ablation_guard: accuracy in [0,1]; an ablation effect under 1 point does not "
          "matter (numbers not retrieved)",
          fair_at="mechanism",
          fair_at_reason="as <ds>_ablation_guard: filtering outlying poisoned or flipped logit uploads is what the "
          "guard is for; any faithful run with the paper's two attacks must show it"),
]

API_EXAMPLE = """
import torch
from icml25.papers.ret_fhd import ReTFHD, ReTFHDConfig, dirichlet_split, load_dataset, make_clients

torch.set_num_threads(1)
Xtr, ytr, Xte, yte, C = load_dataset("digits", seed=0)
parts = dirichlet_split(ytr, n_clients=6, alpha=0.3, seed=0)
clients = make_clients(Xtr, ytr, parts, C, seed=0, attackers={0: "model_poison"})
hist = ReTFHD(clients, ReTFHDConfig(rounds=3, local_epochs=1), seed=0, eval_data=(Xte, yte)).run()
print("accuracy per round", [round(a, 3) for a in hist.accuracy])
print("rejected uploads per round", hist.flagged, "bytes per round", hist.bytes_per_round[0])
"""
