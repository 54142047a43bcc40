"""Certified unlearning reproduction on scikit-learn's digits: accuracy per compute budget and MIA AUC.

A small MLP (64 -> 20 -> 10) is trained on 70% of the digits; a random 10% of the training set is the
forget set. Each method then spends a budget of B retain-set epochs (noisy steps included) and is scored
on the test set; a loss-threshold membership-inference attack scores forget versus test images. Claims
compare methods per seed (paired differences). Thresholds were fixed before the first run; the unlearning constants
of gradient clipping and output perturbation were tuned for this MLP on separate tuning seeds (repro_tuning.py) and
pre-registered before the runs that decide the claims.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

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
from icml25.core.plots import save_figure
from icml25.papers.certified_unlearning.digits import TensorBatches, accuracy, digits_split, mia_auc, mlp
from icml25.papers.certified_unlearning.figures import digits_figure
from icml25.papers.certified_unlearning.unlearning import (
    Certificate,
    UnlearningConfig,
    finetune,
    group_privacy,
    group_privacy_per_example_target,
    noisy_unlearning,
    renyi_to_dp,
    renyi_to_dp_released_code,
    retrain,
    train_dp_sgd,
)

METHODS = ("retrain", "finetune", "gc", "gc0", "mc", "mcb", "op", "dpsgd")
"""retrain from scratch, plain fine-tuning (uncertified), gradient clipping (lam > 0), gradient clipping
(lam = 0), model clipping (noise after projection), model clipping (noise before projection), output
perturbation, DP-SGD training with group privacy over the forget set."""
CERTIFIED = ("gc", "gc0", "mc", "mcb", "op", "dpsgd")


def _subseed(seed: int, *tags) -> int:
    return int.from_bytes(hashlib.sha256(repr((seed, *tags)).encode()).digest()[:6], "little")


@dataclass
class DigitsUnlearningConfig(TorchConfig):
    hidden: int = 20
    """Hidden units of the MLP 64 -> hidden -> 10."""
    train_epochs: int = 30
    """Epochs of the original training on the full training set (SGD, one-cycle)."""
    train_lr: float = 0.06
    """Peak learning rate of the original training (official MNIST configs)."""
    train_weight_decay: float = 5e-4
    """l2 penalty of the original training and of every fine-tuning."""
    batch_size: int = 64
    """Minibatch size everywhere."""
    forget_fraction: float = 0.1
    """Share of the training set to forget."""
    budgets: tuple[int, ...] = (1, 2, 5, 10, 20)
    """Compute budgets: retain-set epochs per method, noisy unlearning steps included."""
    unlearning: UnlearningConfig = field(default_factory=UnlearningConfig)
    """The unlearning methods' constants and target (``unlearning.epsilon``, ``unlearning.delta``, the tuned
    ``unlearning.gc_C0``, ``gc_C1``, ``gc_eta``, ``gc_lam``, ``gc0_C0``, ``gc0_C1``, ``gc0_eta``, ``op_C0``, the
    released ``mc_C2``, ``mc_sigma``, ``mc_eta``, ``mc_lam``, ``mcb_C1``, and the fine-tuning's ``ft_lr``); the
    DP-SGD baseline's settings below stay here, with the original training's."""
    dpsgd_clip: float = 0.5
    """DP-SGD baseline: per-example gradient clipping norm (Fig. 3's released configs, dp_sgd_runs/dp-sgd-*)."""
    dpsgd_forget_fraction: float = 0.005
    """DP-SGD baseline: the group it is private for, as a share of the training set (Fig. 3's released configs:
    forget_split 0.005, while their gradient-clipping runs forget 10%); round(0.005 x 1257) = 6 digits here."""
    dpsgd_epsilon: float = 50.0
    """DP-SGD baseline: the group's target epsilon (Fig. 3's released configs: target_epsilon 50), at
    ``unlearning.delta``."""

    def validate(self) -> None:
        super().validate()
        # (the unlearning constants' own ranges: UnlearningConfig)
        check_fields(self, positive=("hidden", "train_epochs", "train_lr", "batch_size", "budgets", "dpsgd_clip",
                                     "dpsgd_epsilon"),
                     nonnegative=("train_weight_decay",),
                     open_fraction=("forget_fraction", "dpsgd_forget_fraction"), nonempty=("budgets",))
        # bounds: a job beyond these would need > ~100 GB or days (MLP width, epochs over the digits set)
        check_fields(self, at_most={"hidden": 10**6, "train_epochs": 10**5, "batch_size": 10**6, "budgets": 10**5})


def train_original(data, cfg: DigitsUnlearningConfig, seed: int) -> nn.Module:
    model = mlp(hidden=cfg.hidden).to(cfg.device)  # initialised on the CPU, then moved
    loader = TensorBatches(data["X_train"], data["y_train"], cfg.batch_size, _subseed(seed, "train"))
    return finetune(model, loader, cfg.train_epochs * len(loader), max_lr=cfg.train_lr,
                    weight_decay=cfg.train_weight_decay)


def dpsgd_group_size(cfg: DigitsUnlearningConfig, n_train: int) -> int:
    """Records the DP-SGD baseline is private for: round(dpsgd_forget_fraction x n_train), at least 1."""
    return max(round(cfg.dpsgd_forget_fraction * n_train), 1)


def _train_dp_sgd(data, cfg: DigitsUnlearningConfig, seed: int) -> tuple[nn.Module, Certificate]:
    """The DP-SGD baseline's model: trained like the original (same epochs, batch, learning rate, init seed) but
    with DP-SGD, private for a group of ``dpsgd_group_size`` records at (dpsgd_epsilon, delta): Fig. 3's setting."""
    torch.manual_seed(_subseed(seed, "dpsgd", "init"))
    model = mlp(hidden=cfg.hidden).to(cfg.device)
    return train_dp_sgd(model, data["X_train"], data["y_train"], epochs=cfg.train_epochs, batch_size=cfg.batch_size,
                        clip=cfg.dpsgd_clip, epsilon=cfg.dpsgd_epsilon, delta=cfg.unlearning.delta,
                        group_size=dpsgd_group_size(cfg, len(data["y_train"])),
                        max_lr=cfg.train_lr, weight_decay=cfg.train_weight_decay,
                        gen=torch.Generator().manual_seed(_subseed(seed, "dpsgd", "noise")))


def unlearn(method: str, original: nn.Module, data, cfg: DigitsUnlearningConfig, seed: int, budget: int,
            dp_model: tuple[nn.Module, Certificate] | None = None) -> tuple[nn.Module, Certificate]:
    """``method`` within a budget of ``budget`` retain-set epochs: its noisy phase (``noisy_unlearning``; none for
    retraining and fine-tuning, DP-SGD's is training), then fine-tuning on the retain set for the remaining steps."""
    loader = TensorBatches(data["X_retain"], data["y_retain"], cfg.batch_size, _subseed(seed, method, budget))
    gen = torch.Generator().manual_seed(_subseed(seed, method, budget, "noise"))
    total = budget * len(loader)
    u = cfg.unlearning
    ft = {"max_lr": u.ft_lr, "weight_decay": cfg.train_weight_decay}
    if method == "retrain":
        torch.manual_seed(_subseed(seed, "init", budget))
        return retrain(lambda: mlp(hidden=cfg.hidden).to(cfg.device), loader, total, **ft)
    if method == "finetune":
        return finetune(original, loader, total, **ft), Certificate("finetune", math.inf, 1.0, u.epsilon, u.delta)
    if method == "dpsgd":  # no unlearning step: the DP-trained model is fine-tuned on the retain set
        if dp_model is None:
            raise ValueError("method 'dpsgd' needs the DP-SGD-trained model")
        model, cert = dp_model
    else:
        model, cert = noisy_unlearning(method, original, loader, u, gen=gen)
    noisy = 0 if method == "dpsgd" else cert.steps  # DP-SGD's noisy steps are training, not unlearning
    if noisy > total:
        raise ValueError(f"{method}: {noisy} noisy steps exceed the budget of {total} steps")
    return finetune(model, loader, total - noisy, **ft), cert


def run_digits(cfg: DigitsUnlearningConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Train once, then unlearn with every method at every budget; test accuracy, MIA AUC, certificates."""
    torch.manual_seed(seed)
    data = {k: v.to(cfg.device) for k, v in digits_split(seed, forget_fraction=cfg.forget_fraction).items()}
    original = train_original(data, cfg, seed)
    forget_test = (data["X_forget"], data["y_forget"], data["X_test"], data["y_test"])
    m: Metrics = {"acc_original": accuracy(original, data["X_test"], data["y_test"]),
                  "auc_original": mia_auc(original, *forget_test)}
    dp_model = _train_dp_sgd(data, cfg, seed)
    m["acc_dpsgd_trained"] = accuracy(dp_model[0], data["X_test"], data["y_test"])
    m["dpsgd_noise_multiplier"] = float(dp_model[1].sigmas[0])
    total, done = len(cfg.budgets) * len(METHODS), 0
    certs: dict[str, Certificate] = {}
    for b in cfg.budgets:
        for method in METHODS:
            model, cert = unlearn(method, original, data, cfg, seed, b, dp_model)
            certs[method] = cert
            m[f"acc_{method}_b{b}"] = accuracy(model, data["X_test"], data["y_test"])
            m[f"auc_{method}_b{b}"] = mia_auc(model, *forget_test)
            done += 1
            progress(done, total)
    ratio = 0.0
    for method in CERTIFIED:
        eps, dlt = certs[method].recompute()
        m[f"cert_eps_{method}"], m[f"cert_delta_{method}"] = eps, dlt
        m[f"noisy_steps_{method}"] = 0.0 if method == "dpsgd" else float(certs[method].steps)
        m[f"sigma_{method}"] = float(certs[method].sigmas[0]) if certs[method].sigmas else 0.0
        target = cfg.dpsgd_epsilon if method == "dpsgd" else cfg.unlearning.epsilon
        ratio = max(ratio, eps / target, dlt / cfg.unlearning.delta)
    m["cert_ratio_max"] = ratio
    m["eps_renyi_gc"] = certs["gc"].eps_renyi
    # the released code's calibration (Renyi level 1) and what it really guarantees at the same delta
    m["released_code_eps_claimed"] = renyi_to_dp_released_code(1.0, cfg.unlearning.delta)
    m["released_code_eps_actual"] = renyi_to_dp(1.0, cfg.unlearning.delta)
    # the released DP-SGD baseline's per-record delta, and the group delta it really gives over |D_f| records
    k = len(data["y_forget"])
    eps1, delta1_released = group_privacy_per_example_target(cfg.unlearning.epsilon, cfg.unlearning.delta, k,
                                                             released_code=True)
    m["released_code_group_delta_actual"] = group_privacy(eps1, delta1_released, k)[1]
    # the original model learned: test accuracy above the majority-class predictor (a trivial baseline)
    majority = float(torch.bincount(data["y_train"]).argmax())
    m["acc_majority_class"] = float((data["y_test"] == majority).float().mean())
    m["acc_original_minus_majority"] = m["acc_original"] - m["acc_majority_class"]
    for b in cfg.budgets:
        m[f"gc_minus_retrain_b{b}"] = m[f"acc_gc_b{b}"] - m[f"acc_retrain_b{b}"]
        m[f"gc_minus_op_b{b}"] = m[f"acc_gc_b{b}"] - m[f"acc_op_b{b}"]
        m[f"gc_minus_dpsgd_b{b}"] = m[f"acc_gc_b{b}"] - m[f"acc_dpsgd_b{b}"]
        m[f"auc_gap_gc_b{b}"] = abs(m[f"auc_gc_b{b}"] - m[f"auc_retrain_b{b}"])
    m["gc_minus_op_min"] = min(m[f"gc_minus_op_b{b}"] for b in cfg.budgets)
    m["gc_minus_dpsgd_min"] = min(m[f"gc_minus_dpsgd_b{b}"] for b in cfg.budgets)
    m["auc_gap_gc_mean"] = float(np.mean([m[f"auc_gap_gc_b{b}"] for b in cfg.budgets]))
    return m


def digits_figures(per_seed: list[Metrics], cfg: DigitsUnlearningConfig, outdir: Path) -> list[Path]:
    """Test accuracy and MIA AUC against the budget, per method."""
    return [save_figure(digits_figure(per_seed, cfg, METHODS), outdir / "digits_unlearning.png")]


EXPERIMENTS = [
    Experiment(
        name="digits",
        description="scikit-learn digits, MLP 64-20-10: gradient clipping (lam>0 and lam=0; constants tuned on "
                    "separate seeds), model clipping (noise after and before projection), output perturbation "
                    "(tuned C0), DP-SGD + group privacy (Fig. 3's 0.5% group at eps 50), plain fine-tuning "
                    "and retraining at budgets of 1-20 retain-set epochs; "
                    "test accuracy, loss-threshold MIA AUC on the forget set, recomputed (1, 1e-5) certificates.",
        config=DigitsUnlearningConfig,
        run=run_digits,
        presets={"smoke": {"train_epochs": 5, "budgets": (1, 2, 5)}, "quick": {}, "full": {}},
        seeds={"smoke": 2, "quick": 5, "full": 12},
        max_seeds={"full": 12},
        fidelity={
            "smoke": Fidelity("mechanism", "scikit-learn digits and an MLP 64-20-10 (5 training epochs, budgets 1-5) "
                                           "stand in for the paper's MNIST model; a smoke test of the code"),
            "quick": Fidelity("reduced", "the paper's MNIST protocol (10% forget set, 30 training epochs, budgets in "
                                         "retain-set epochs, (1, 1e-5), one-cycle post-processing at 0.1, unlearning "
                                         "constants tuned for the model on separate seeds) at a fraction of its "
                                         "scale: scikit-learn digits, 1,257 training images (2.3% of MNIST's 54,000), "
                                         "stand in for MNIST, and an MLP 64-20-10 (1,510 parameters) for tiny_net "
                                         "(784-5-10, 3,985); 5 seeds"),
            "full": Fidelity("reduced", "as quick (2.3% of MNIST's training images, an MLP 64-20-10 for tiny_net), "
                                        "with more seeds"),
        },
        figures=digits_figures,
        full_requirements="The paper's scale (MNIST, CIFAR-10 CNNs, ResNet-18 features for CIFAR-10/100) needs "
                          "dataset files and pretrained weights that cannot be downloaded here; 'full' runs the "
                          "digits study with 12 seeds. Use the API with your own model and loaders for more.",
    ),
]

# The paper's figures (accuracy against compute budget, Figs. 1 and 3) were not retrieved: no claim carries a
# number of the paper's. Thresholds and resolutions were fixed before the first run of each claim. The unlearning
# constants of gradient clipping and of output perturbation were re-tuned for the digits MLP on tuning seeds kept
# apart from the evaluation seeds (repro_tuning.py; pre-registered with these claims, issue 25): the released MNIST
# constants (C0 = 0.01) project this MLP to chance before any noisy step (facts note, 2026-12-04).
_TUNED = ("the comparison needs the paper's protocol with unlearning constants tuned for the model at hand (here "
          "on separate tuning seeds, repro_tuning.py); a smaller data set and model under that protocol still test it, "
          "constants moved untuned from another model do not")
_ACC = "accuracy difference in [0,1] (~5 of 540 test digits), no paper numbers"
CLAIMS = [
    # every seed: the noise is calibrated by the same accountant that recomputes the certificate
    Claim(id="certificate_met",
          statement="Every certified method (both gradient-clipping variants, both model-clipping "
          "variants, output perturbation) meets (1, 1e-5)-unlearning, and DP-SGD + group privacy its Fig. 3 target "
          "(50, 1e-5) for a 0.5% group, when its certificate is recomputed from its constants.",
          paper_value="(eps, delta) = (1, 1e-5)-unlearning by construction (Sec. 3-4; the released MNIST configs)",
          experiment="digits", metric="cert_ratio_max", op="<=", threshold=1.0, kind="check", aggregate="every_seed"),
    Claim(id="gc_vs_retrain_b1",
          statement="Budget 1 epoch: gradient clipping's test accuracy is at least retraining's.",
          paper_value="beats retraining at small budgets (Fig. 1; numbers not retrieved)", experiment="digits",
          metric="gc_minus_retrain_b1", op=">=", threshold=0.0, kind="paper", source="Fig. 1", resolution=0.01,
          resolution_reason=_ACC, requires=("original_model_learned",), fair_at="reduced", fair_at_reason=_TUNED),
    Claim(id="gc_vs_retrain_b2",
          statement="Budget 2 epochs: gradient clipping's test accuracy is at least retraining's.",
          paper_value="beats retraining at small budgets (Fig. 1; numbers not retrieved)", experiment="digits",
          metric="gc_minus_retrain_b2", op=">=", threshold=0.0, kind="paper", source="Fig. 1", resolution=0.01,
          resolution_reason=_ACC, requires=("original_model_learned",), fair_at="reduced", fair_at_reason=_TUNED),
    Claim(id="gc_vs_retrain_b5",
          statement="Budget 5 epochs: gradient clipping's test accuracy is at least retraining's.",
          paper_value="beats retraining at small budgets (Fig. 1; numbers not retrieved)", experiment="digits",
          metric="gc_minus_retrain_b5", op=">=", threshold=0.0, kind="paper", source="Fig. 1", resolution=0.01,
          resolution_reason=_ACC, requires=("original_model_learned",), fair_at="reduced", fair_at_reason=_TUNED),
    Claim(id="gc_vs_output_perturbation",
          statement="At every budget, gradient clipping's test accuracy is at least "
          "output perturbation's (per seed, the minimum over budgets of the difference).",
          paper_value="outperforms output perturbation (Fig. 1; numbers not retrieved)", experiment="digits",
          metric="gc_minus_op_min", op=">=", threshold=0.0, kind="paper", source="Fig. 1", resolution=0.01,
          resolution_reason=_ACC, requires=("original_model_learned",), fair_at="reduced", fair_at_reason=_TUNED),
    Claim(id="gc_vs_dp_sgd",
          statement="At every budget, gradient clipping's test accuracy (10% forget set, (1, 1e-5)) "
          "is at least that of DP-SGD training with group privacy in Fig. 3's released setting (private for a group "
          "of 0.5% of the training set at (50, 1e-5)), fine-tuned on the retain set with the same budget (per seed, "
          "the minimum over budgets of the difference).",
          paper_value="outperforms DP-SGD + group privacy (Fig. 3, CIFAR-10/100 features; its released configs: "
                      "DP-SGD for a 0.5% group at eps 50, gradient clipping for 10%; numbers not retrieved)",
          experiment="digits", metric="gc_minus_dpsgd_min", op=">=", threshold=0.0, kind="paper", source="Fig. 3",
          resolution=0.01,
          resolution_reason="the same accuracy resolution as the other comparisons, fixed before the first DP-SGD run",
          requires=("original_model_learned",), fair_at="reduced",
          fair_at_reason="Fig. 3's forget fractions and targets (DP-SGD: 0.5% group at eps 50) on a smaller data set "
                         "and model test it; the CIFAR features are not needed for the comparison's mechanism"),
    Claim(id="mia_matches_retrain",
          statement="(ours, beyond the paper) After unlearning, the forget-set MIA AUC of "
          "gradient clipping is within 0.05 of the retrained model's (mean over budgets of the absolute gap).",
          paper_value="none (the paper certifies unlearning; it reports no MIA number we could retrieve)",
          experiment="digits", metric="auc_gap_gc_mean", op="<=", threshold=0.05, kind="ours", resolution=0.01,
          resolution_reason="AUC in [0,1]; a 0.01 miss of the 0.05 bar does not matter",
          requires=("original_model_learned",)),
    # every seed: the trained model must beat the trivial majority-class predictor by a wide margin (chance ~0.1)
    Claim(id="original_model_learned",
          statement="(ours, beyond the paper) The original MLP learned: its test accuracy "
          "exceeds the majority-class predictor's by at least 0.5 on every seed.",
          paper_value="none (a sanity check of the setup)", experiment="digits",
          metric="acc_original_minus_majority", op=">=", threshold=0.5, kind="check", aggregate="every_seed"),
]

API_EXAMPLE = """
import torch
from icml25.papers.certified_unlearning import (TensorBatches, digits_split, mlp, finetune,
                                                unlearn_gradient_clipping)

data = digits_split(seed=0)
torch.manual_seed(0)
train = TensorBatches(data["X_train"], data["y_train"], batch_size=64, seed=0)
model = finetune(mlp(), train, steps=30 * len(train), max_lr=0.06)           # the original model
retain = TensorBatches(data["X_retain"], data["y_retain"], batch_size=64, seed=1)
unlearned, cert = unlearn_gradient_clipping(model, retain, C0=0.01, C1=10.0, eta=1e-3, lam=10.0,
                                            epsilon=1.0, delta=1e-5, gen=torch.Generator().manual_seed(0))
unlearned = finetune(unlearned, retain, steps=5 * len(retain))             # free post-processing
print("steps", cert.steps, "sigma", round(cert.sigmas[0], 4), "recomputed (eps, delta)", cert.recompute())
acc = (unlearned(data["X_test"]).argmax(1) == data["y_test"]).float().mean().item()
print("test accuracy after unlearning + 5 epochs", round(acc, 3))
"""
