"""muTransfer-FNO reproduction: does the LR tuned at K_proxy modes stay optimal at K_target under muP?

One seed = one Burgers data set (drawn with that seed) and one paired LR sweep: for each K, every
(parametrization, LR) model starts from the same draws and sees the same minibatches. SP and muP
coincide at K = k_base = K_proxy. Per seed we compute the optimum LR (in grid steps, refined by a
parabola through the log-errors), its shift from K_proxy to K_target, and the transfer regret
err(K_target at the LR best at K_proxy) / min_lr err(K_target). Claims use the 95% interval over
seeds. Settings and thresholds were fixed before the first quick run (the LR grid is centred on a
pilot run at K_proxy with a seed that is not among the evaluation seeds).

``paper_data`` runs the same sweep on Li et al.'s FNO benchmark files (Darcy, Navier-Stokes or Burgers) read
from ``data_dir``; it runs only when ``data_dir`` is set (``reproduce`` skips it with one line otherwise), and its
claims were fixed before any run of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from icml25.common.checks import check_ranges
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
from icml25.core.paper import Claim, Summary
from icml25.core.plots import save_figure
from icml25.papers.mutransfer_fno.data import PAPER_DATASETS, burgers_dataset, load_paper_dataset
from icml25.papers.mutransfer_fno.figures import lr_curve_figure
from icml25.papers.mutransfer_fno.fno import mup_scale, relative_l2
from icml25.papers.mutransfer_fno.transfer import TrainSettings, optimum_index, train_fno_lr_grid

PARAMS = ("sp", "mup")


@dataclass
class BurgersTransferConfig(TorchConfig):
    n_train: int = 200
    """Training pairs (a, u(., T))."""
    n_test: int = 100
    """Test pairs."""
    res: int = 128
    """Grid points the FNO sees."""
    solver_res: int = 256
    """Grid of the pseudo-spectral solver (a multiple of res)."""
    nu: float = 0.01
    """Viscosity (small, so that high modes matter)."""
    T: float = 1.0
    """Final time of the operator a -> u(., T)."""
    ks: tuple[int, ...] = (4, 16, 64)
    """Mode counts K of the sweep."""
    k_target: int = 64
    """Target K the LR is transferred to."""
    lr_center: float = 0.00711
    """Geometric centre of the LR grid (pilot optimum at K=4, seed 100, width 64, beta2 0.98: 8.46e-3, put at index
    3 of 6; the width-16, beta2-0.999 pilot before it gave 2.66e-2)."""
    n_lrs: int = 6
    """LR grid size."""
    lr_ratio: float = math.sqrt(2.0)
    """Ratio of consecutive LRs (sqrt 2: a muP shift of sqrt(log 4 / log 64) is 1.6 steps)."""
    train: TrainSettings = field(default_factory=lambda: TrainSettings(epochs=15))
    """Training settings of every cell of the sweep (:class:`TrainSettings`): ``train.width`` (FNO hidden width m,
    64), ``train.n_layers`` (Fourier layers, 4), ``train.epochs`` (15), ``train.batch_size`` (20), ``train.k_base``
    (the proxy K_proxy of Algorithm 1, also the muP base: SP and muP coincide there; one of ``ks``, 4),
    ``train.clip`` (element-wise gradient clip, 0.01; ``none`` switches it off), ``train.cosine`` (cosine LR
    schedule, on), ``train.complex_init`` (init of R: ``"per_part"``, each part std b, ours, or
    ``"complex_normal"``, neuraloperator's convention) and ``train.beta2`` (Adam's beta2, 0.98). Width 64, 4 layers,
    GELU, Adam with beta2 0.98, batch 20 and element-wise clipping at 0.01 are the paper's recipe (second-hand)."""

    GENERATED: ClassVar[bool] = True
    """Whether the data come from our solver on ``res`` points (then the modes must fit ``res``)."""

    def validate(self) -> None:
        super().validate()
        # bounds: a job beyond these would need > ~100 GB or days
        check_fields(self, at_most={"n_train": 10**6, "n_test": 10**6, "res": 10**5, "solver_res": 10**5,
                                    "ks": 10**5, "n_lrs": 10**3})
        check_fields(self, positive=("n_train", "n_test", "nu", "T", "lr_center"),
                     at_least={"res": 4, "ks": 2, "k_target": 2, "n_lrs": 3}, nonempty=("ks",))
        name = type(self).__name__
        # TrainSettings checks its own ranges (positive sizes, clip > 0 or None, complex_init); the job's bounds:
        check_ranges(f"{name}.train", vars(self.train),
                     at_most={"width": 10**3, "n_layers": 10**3, "epochs": 10**6, "batch_size": 10**6})
        if self.res % 2:
            raise ConfigError(f"{name}.res must be even, got {self.res}")
        if self.solver_res < self.res or self.solver_res % self.res:
            raise ConfigError(f"{name}.solver_res must be a multiple of res={self.res}, got {self.solver_res}")
        if not self.lr_ratio > 1:
            raise ConfigError(f"{name}.lr_ratio must be > 1, got {self.lr_ratio!r}")
        if self.train.k_base not in self.ks:
            raise ConfigError(f"{name}.train.k_base must be one of ks={self.ks}, got {self.train.k_base}")
        if self.k_target not in self.ks:
            raise ConfigError(f"{name}.k_target must be one of ks={self.ks}, got {self.k_target}")
        if self.GENERATED and max(self.ks) > self.res // 2 + 1:  # paper data: the file's grid, checked by FNO
            raise ConfigError(f"{name}.ks must be <= res // 2 + 1 = {self.res // 2 + 1} (the modes must fit the "
                              f"grid), got {self.ks}")


@dataclass
class PaperTransferConfig(BurgersTransferConfig):
    """The sweep on one of Li et al.'s FNO benchmark data sets, read from ``data_dir`` (``res``, ``solver_res``,
    ``nu`` and ``T`` are unused: the grid is the file's, subsampled by ``data_stride``)."""

    data_dir: str = ""
    """Folder holding Li et al.'s FNO benchmark files (:func:`~icml25.papers.mutransfer_fno.data.load_paper_dataset`;
    nothing is downloaded): ``paper_dataset`` is read from it, the same split for every seed. The experiment runs
    only when it is set."""
    paper_dataset: str = "darcy"
    """Which file set ``data_dir`` holds: ``burgers`` (burgers_data_R10.mat, 1-D FNO), ``darcy``
    (piececonst_r421_N1024_smooth1/2.mat, 2-D FNO) or ``navier_stokes`` (ns_V1e-3_N5000_T50.mat, 2-D FNO)."""
    data_stride: int = 0
    """Grid stride of the paper data (0: the FNO scripts' own, Burgers 8192 -> 1024, Darcy 421 -> 85, Navier-Stokes
    64 -> 64; Darcy 10 gives 43)."""
    ns_time_index: int = 9
    """Navier-Stokes target: the operator w(., 0) -> w(., t) at t = ns_time_index + 1 (the file's t = 1..50)."""

    GENERATED: ClassVar[bool] = False

    def validate(self) -> None:
        super().validate()
        check_fields(self, at_most={"data_stride": 10**4, "ns_time_index": 10**4},
                     nonnegative=("data_stride", "ns_time_index"), choices={"paper_dataset": PAPER_DATASETS})
        if not isinstance(self.data_dir, str) or (self.data_dir and not Path(self.data_dir).is_dir()):
            raise ConfigError(f"{type(self).__name__}.data_dir must be an existing folder with the FNO benchmark "
                              f"files (empty: the experiment does not run), got {self.data_dir!r}")


def lr_grid(cfg: BurgersTransferConfig) -> np.ndarray:
    """The geometric LR grid lr_center * ratio^(i - (n-1)/2), i = 0..n-1 (the config checks the ranges)."""
    return cfg.lr_center * cfg.lr_ratio ** (np.arange(cfg.n_lrs) - (cfg.n_lrs - 1) / 2)


def run_burgers_transfer(cfg: BurgersTransferConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Paired SP/muP LR sweeps over K on one Burgers data set (or, with :class:`PaperTransferConfig`, one of the FNO
    benchmark data sets from ``cfg.data_dir``, with a 1-D or 2-D FNO as its grid has); transfer metrics
    K_proxy -> K_target."""
    lrs = lr_grid(cfg)
    if isinstance(cfg, PaperTransferConfig):
        parts = load_paper_dataset(cfg.paper_dataset, cfg.data_dir, cfg.n_train, cfg.n_test, stride=cfg.data_stride,
                                   time_index=cfg.ns_time_index)
    else:
        a, u = burgers_dataset(cfg.n_train + cfg.n_test, cfg.res, cfg.nu, cfg.T, seed=seed,
                               solver_res=cfg.solver_res)
        parts = (a[:cfg.n_train], u[:cfg.n_train], a[cfg.n_train:], u[cfg.n_train:])
    a_tr, u_tr, a_te, u_te = (torch.from_numpy(x).to(cfg.device) for x in parts)
    settings, k_proxy = cfg.train, cfg.train.k_base
    errs: dict[tuple[str, int], np.ndarray] = {}
    for i, k in enumerate(cfg.ks):
        todo = ["sp"] if k == k_proxy else list(PARAMS)  # SP == muP at the base
        grid = train_fno_lr_grid(a_tr, u_tr, a_te, u_te, modes=k, params=todo, lrs=lrs, settings=settings,
                                 seed=seed)
        for p in PARAMS:
            errs[p, k] = grid[todo.index(p) if p in todo else 0]
        progress(i + 1, len(cfg.ks))

    out: Metrics = {"lrs": lrs.tolist()}
    for p in PARAMS:
        for k in cfg.ks:
            out[f"{p}_err_K{k}"] = errs[p, k].tolist()
            out[f"{p}_opt_index_K{k}"] = optimum_index(errs[p, k])
            out[f"{p}_best_err_K{k}"] = float(errs[p, k].min())
        shift = out[f"{p}_opt_index_K{cfg.k_target}"] - out[f"{p}_opt_index_K{k_proxy}"]
        out[f"{p}_shift_steps"] = shift
        out[f"{p}_abs_shift_steps"] = abs(shift)
        target = errs[p, cfg.k_target]
        out[f"{p}_regret"] = float(target[int(np.argmin(errs[p, k_proxy]))] / target.min())
    out["mup_minus_sp_regret"] = out["mup_regret"] - out["sp_regret"]
    # trivial predictor: the training-set mean of u(., T) for every test input (the zero predictor scores 1)
    mean_u = u_tr.mean(dim=0, keepdim=True).expand_as(u_te)
    out["mean_predictor_err"] = float(relative_l2(mean_u, u_te).mean())
    out["mup_best_err_target_over_mean_predictor"] = out[f"mup_best_err_K{cfg.k_target}"] / out["mean_predictor_err"]
    out["mup_best_err_target_over_proxy"] = out[f"mup_best_err_K{cfg.k_target}"] / out[f"mup_best_err_K{k_proxy}"]
    # the SP shift that muP's LR rule predicts: log(sqrt(log Kp / log Kt)) in grid steps
    out["predicted_sp_shift_steps"] = math.log(mup_scale(cfg.k_target, k_proxy)) / math.log(cfg.lr_ratio)
    return out


def _mean_lo_hi(values: np.ndarray) -> tuple[float, float, float]:
    """Mean over seeds and its 95% t interval."""
    s = Summary.of(values)
    return s.mean, s.lo, s.hi


def lr_curve_figures(per_seed: list[Metrics], cfg: BurgersTransferConfig, outdir: Path) -> list[Path]:
    """Test error against LR for every K, SP and muP side by side (mean over seeds, 95% t interval); the paper_data
    experiment's in its own file."""
    name = "paper_data_lr_curves.png" if isinstance(cfg, PaperTransferConfig) else "burgers_lr_curves.png"
    return [save_figure(lr_curve_figure(per_seed, cfg, PARAMS, _mean_lo_hi), outdir / name)]


_PAPER_DATA_REQ = (
    "Li et al.'s FNO benchmark files, read from a folder (nothing is downloaded; the files as linked from "
    "github.com/zongyi-li/fourier_neural_operator, unchanged; the paper's own release LDA1020/muTransfer-FNO-data "
    "could not be read, so it is not supported); without data_dir the experiment is skipped with one line. Darcy "
    "(the default): `icml25 reproduce mutransfer_fno --preset full --set data_dir=/path --set paper_dataset=darcy "
    "--set device=cuda` with /path/piececonst_r421_N1024_smooth1.mat (training: first n_train) and "
    "/path/piececonst_r421_N1024_smooth2.mat (test: first n_test), MATLAB v5, coeff and sol (1024, 421, 421), read "
    "at stride 5 (85 x 85; --set data_stride=10: 43 x 43, where K 24 no longer fits) into a 2-D FNO. Navier-Stokes: "
    "the same with paper_dataset=navier_stokes and /path/ns_V1e-3_N5000_T50.mat (MATLAB v7.3, read with h5py; a "
    "(5000, 64, 64), u (5000, 64, 64, 50)): the operator w(., 0) -> w(., t) at t = ns_time_index + 1 = 10, 2-D FNO "
    "on 64 x 64, train = first n_train, test = last n_test. Burgers: paper_dataset=burgers, "
    "/path/burgers_data_R10.mat (v5, a and u (2048, 8192), stride 8: 1,024 points, train first / test last rows; "
    "the paper's Burgers K range 3 -> 512 is `--set ks=3,24,128,512 --set k_target=512`). The presets sweep the "
    "paper's Darcy / Navier-Stokes K range 3 -> 24 (K_proxy 3) with 10 LRs spaced by sqrt 2 around 2.5e-3, which "
    "covers every optimum the paper reports (SP 7.4e-4 at K 24 to 1.8e-3 at K 3, muP 4.2e-3, PINO 5.6e-3; "
    "second-hand) and the Burgers pilot's 8.5e-3 with a grid step to spare at each end. What still differs from "
    "the paper: its Navier-Stokes study is an FNO-3D (space-time) one, ours maps one vorticity snapshot to another "
    "with an FNO-2D; Li et al.'s Gaussian normalisation of inputs and outputs and the domain padding of the "
    "non-periodic Darcy problem are not applied; the paper's training length is unknown (100 epochs here; Li et "
    "al.'s FNO scripts train 500); the split is fixed, seeds change only init and batch order. Cost, measured on "
    "one shared CPU core: one Adam step of one width-64 FNO-2D (batch 20) on 85 x 85 took 11 s at K=12 and 19 s at "
    "K=24, so one full Darcy seed (70 LR-grid members x 5,000 steps) is ~1,000 CPU-hours and a quick seed (30 "
    "members x 1,000 steps) ~100 CPU-hours (estimated from those step times); it needs a GPU with >= 40 GB (the "
    "16-member step at 85 x 85 ran out of 20 GB of RAM here); GPU time not measured (no GPU was available). "
    "Burgers R10 at 1,024 points: ~10 s per 16-member step.")
_PAPER_DATA_STUDY = ("Li et al.'s Darcy (or Navier-Stokes, Burgers: paper_dataset) benchmark files at the FNO "
                     "scripts' grids, the paper's recipe (width 64, 4 layers, GELU, Adam beta2 0.98, batch 20, clip "
                     "0.01; second-hand), K_proxy 3 -> K_target 24 (the paper's Darcy / Navier-Stokes range), 10 "
                     "LRs; Navier-Stokes as one snapshot -> snapshot FNO-2D, not the paper's FNO-3D; 100 epochs (the "
                     "paper's length not found)")


EXPERIMENTS = [
    Experiment(
        name="burgers_transfer",
        description="1-D Burgers (nu=0.01): paired LR sweeps of FNO-1D with K in {4, 16, 64} under SP and "
                    "muP; does the LR tuned at K=4 stay optimal at K=64?",
        config=BurgersTransferConfig,
        run=run_burgers_transfer,
        presets={
            "smoke": {"n_train": 40, "n_test": 20, "res": 64, "solver_res": 128, "ks": (4, 16), "k_target": 16,
                      "train.width": 8, "train.n_layers": 2, "train.epochs": 2, "n_lrs": 3},
            "quick": {},
            "full": {"n_train": 1000, "n_test": 200, "res": 256, "solver_res": 1024, "ks": (4, 16, 64, 128),
                     "k_target": 128, "train.epochs": 100, "n_lrs": 8},
        },
        seeds={"smoke": 2, "quick": 3, "full": 5},
        figures=lr_curve_figures,
        full_requirements="Generated Burgers at the card's full scale runs on CPU in hours (or pass device=cuda). "
                          "The paper's data (Li et al.'s FNO benchmark files) are the paper_data experiment's (it "
                          "runs when data_dir is set).",
        fidelity={
            "smoke": Fidelity("mechanism", "tiny: 40 Burgers pairs from our solver, width 8, 2 layers, K 4->16, "
                                           "2 epochs, 3 LRs"),
            "quick": Fidelity("mechanism", "1-D Burgers from our own solver with inferred settings (nu 0.01, 200 "
                                           "pairs), the paper's width 64 and Adam recipe (second-hand), K 4->64 of "
                                           "3->512, 15 epochs; the paper's data and Burgers settings were not "
                                           "found"),
            "full": Fidelity("mechanism", "the same inferred Burgers setup, width 64, K 4->128 of 3->512, 1,000 "
                                          "pairs, 100 epochs"),
        },
    ),
    Experiment(
        name="paper_data",
        description="Li et al.'s FNO benchmark files (Darcy by default; Navier-Stokes or Burgers with paper_dataset) "
                    "from data_dir: paired LR sweeps of FNO-2D (FNO-1D for Burgers) with K in the paper's 3 -> 24 "
                    "under SP and muP; does the LR tuned at K=3 stay optimal at K=24?",
        config=PaperTransferConfig,
        run=run_burgers_transfer,
        presets={
            "smoke": {"n_train": 40, "n_test": 20, "ks": (3, 6), "train.k_base": 3, "k_target": 6,
                      "train.width": 8, "train.n_layers": 2, "train.epochs": 2, "n_lrs": 3},
            "quick": {"n_train": 200, "n_test": 100, "ks": (3, 24), "train.k_base": 3, "k_target": 24,
                      "train.epochs": 100, "n_lrs": 10, "lr_center": 2.5e-3},
            "full": {"n_train": 1000, "n_test": 200, "ks": (3, 6, 12, 24), "train.k_base": 3, "k_target": 24,
                     "train.epochs": 100, "n_lrs": 10, "lr_center": 2.5e-3},
        },
        seeds={"smoke": 2, "quick": 3, "full": 5},
        figures=lr_curve_figures,
        data_setting="data_dir",
        full_requirements=_PAPER_DATA_REQ,
        fidelity={
            "smoke": Fidelity("mechanism", "40 / 20 pairs of the paper's files, width 8, 2 layers, K 3->6, 2 epochs, "
                                           "3 LRs: a harness run"),
            "quick": Fidelity("reduced", f"{_PAPER_DATA_STUDY}; 200 of the 1,000 training pairs (20%), 100 test "
                                         "pairs, only K 3 and 24 of the sweep"),
            "full": Fidelity("reduced", f"{_PAPER_DATA_STUDY}; 1,000 training and 200 test pairs (Li et al.'s "
                                        "Darcy / Navier-Stokes training size), K 3, 6, 12, 24"),
        },
    ),
]

_NEEDS = ("modes_help", "fno_learns")
_THEORY = ("a consequence of the paper's muP rule (Theorem 3.5): R's update scale grows as sqrt(d log K) under SP "
           "and not under muP, which any trained FNO task must show")
CLAIMS = [
    Claim(id="mup_lr_stable",
          statement="Under muP the optimal LR at K=64 is within one sqrt(2) grid step of the optimum at K=4 "
                    "(|shift| <= 1 step).",
          paper_value="muP optimum ~4.2e-3 for every K (FNO-3D, K 3->24; second-hand)", experiment="burgers_transfer",
          metric="mup_abs_shift_steps", op="<=", threshold=1.0, resolution=0.25,
          resolution_reason="~1/6 of the 1.6-step SP drift muP predicts here (0.25 sqrt2-step = 9% in LR)",
          kind="paper", source="abstract (zero-shot transfer across K); FNO-3D numbers second-hand from summaries",
          fair_at="mechanism", fair_at_reason=_THEORY, requires=_NEEDS),
    Claim(id="mup_transfer_regret",
          statement="muTransfer-FNO: training K=64 at the LR tuned at K=4 costs at most 5% test error over tuning at "
                    "K=64 directly (muP regret <= 1.05).",
          paper_value="5.34% (muTransfer) vs 5.69% (direct), NS FNO-3D; second-hand", experiment="burgers_transfer",
          metric="mup_regret", op="<=", threshold=1.05, resolution=0.02,
          resolution_reason="error ratio; ~1/3 of the paper's 5.34% vs 5.69% (6.5%) transfer-vs-direct gap",
          kind="paper", source="second-hand: machine-written notes of the paper (Navier-Stokes result)",
          fair_at="mechanism",
          fair_at_reason="Algorithm 1 (tune at small K, reuse at large K) costs little wherever the muP optimum is "
                         "K-stable, a consequence of the rule on any trained FNO task",
          requires=_NEEDS),
    Claim(id="mup_beats_sp_transfer",
          statement="Zero-shot transfer of the K=4 LR hurts muP no more than SP (per-seed muP regret minus SP "
                    "regret <= 0).",
          paper_value="SP LR drifts, muP does not (Fig. 1)", experiment="burgers_transfer",
          metric="mup_minus_sp_regret", op="<=", threshold=0.0, resolution=0.02,
          resolution_reason="difference of error ratios; ~1/3 of the paper's 6.5% (5.34% vs 5.69%) gap",
          kind="paper", source="second-hand: Fig. 1 as described by summaries", fair_at="mechanism",
          fair_at_reason=_THEORY, requires=_NEEDS),
    Claim(id="sp_lr_drifts",
          statement="Under SP the optimal LR decreases from K=4 to K=64 by at least half a sqrt(2) step (a drift the "
                    "muP rule predicts to be 1.6 steps).",
          paper_value="SP optimum 1.8e-3 (K=3) -> 7.4e-4 (K=24), FNO-3D; second-hand", experiment="burgers_transfer",
          metric="sp_shift_steps", op="<=", threshold=-0.5, resolution=0.25,
          resolution_reason="~1/6 of the predicted 1.6-step drift (paper: 1.8e-3 -> 7.4e-4, 2.6 steps, FNO-3D)",
          kind="paper", source="second-hand: summaries of the paper's FNO-3D LR sweep (Fig. 1)", fair_at="mechanism",
          fair_at_reason=_THEORY, requires=_NEEDS),
    Claim(id="modes_help",
          statement="Precondition: more modes help on this task (best muP error at K=64 at most 0.95x the best at "
                    "K=4), so the transfer question is not empty (precondition, ours beyond the paper).",
          paper_value="larger K is more accurate (motivation, Sec. 1)", experiment="burgers_transfer",
          metric="mup_best_err_target_over_proxy", op="<=", threshold=0.95, resolution=0.02,
          resolution_reason="error ratio, a 2% relative error difference is the smallest that matters", kind="check"),
    # every seed: a setup check that the FNO learned at all; "half the error of the best constant" is its meaning
    Claim(id="fno_learns",
          statement="The tuned muP FNO at K=64 has at most half the test error of the training-mean predictor "
                    "(setup check, ours beyond the paper).",
          paper_value="setup (no paper number)", experiment="burgers_transfer",
          metric="mup_best_err_target_over_mean_predictor", op="<=", threshold=0.5, aggregate="every_seed",
          kind="check"),
]

# the paper's own data: the same statistics, thresholds and resolutions as the burgers_transfer claims (fixed before
# any paper_data run); decided only when a user gives data_dir
_PAPER_DATA_NEEDS = ("paper_data_modes_help", "paper_data_fno_learns")
_PAPER_DATA_SETS = "Li et al.'s Darcy, Navier-Stokes or Burgers benchmark files (paper_dataset)"
_PAPER_DATA_FAIR = ("the paper's data and training recipe with fewer training pairs, K points or epochs than the "
                    "paper's still test whether the LR tuned at K_proxy stays optimal at K_target on the paper's own "
                    "problems; the smoke preset's 2 epochs at width 8 do not")
CLAIMS += [
    Claim(id="paper_data_mup_lr_stable",
          statement=f"{_PAPER_DATA_SETS}: under muP the optimal LR at K_target (24 in the presets) is within one "
                    "sqrt(2) grid step of the optimum at K_proxy (3) (|shift| <= 1 step).",
          paper_value="muP optimum ~4.2e-3 for every K (FNO-3D, K 3->24; second-hand)", experiment="paper_data",
          metric="mup_abs_shift_steps", op="<=", threshold=1.0, resolution=0.25,
          resolution_reason="~1/6 of the 1.6-step SP drift muP predicts here (0.25 sqrt2-step = 9% in LR) (as "
                            "mup_lr_stable)",
          kind="paper", source="abstract (zero-shot transfer across K); FNO-3D numbers second-hand from summaries",
          fair_at="reduced", fair_at_reason=_PAPER_DATA_FAIR, requires=_PAPER_DATA_NEEDS),
    Claim(id="paper_data_mup_transfer_regret",
          statement=f"{_PAPER_DATA_SETS}: muTransfer-FNO, training K_target at the LR tuned at K_proxy costs at most "
                    "5% test error over tuning at K_target directly (muP regret <= 1.05).",
          paper_value="5.34% (muTransfer) vs 5.69% (direct), NS FNO-3D; Darcy 1.22% vs 1.25%; second-hand",
          experiment="paper_data", metric="mup_regret", op="<=", threshold=1.05, resolution=0.02,
          resolution_reason="error ratio; ~1/3 of the paper's 5.34% vs 5.69% (6.5%) transfer-vs-direct gap (as "
                            "mup_transfer_regret)",
          kind="paper", source="second-hand: machine-written notes of the paper (Navier-Stokes result)",
          fair_at="reduced", fair_at_reason=_PAPER_DATA_FAIR, requires=_PAPER_DATA_NEEDS),
    Claim(id="paper_data_mup_beats_sp_transfer",
          statement=f"{_PAPER_DATA_SETS}: zero-shot transfer of the K_proxy LR hurts muP no more than SP (per-seed "
                    "muP regret minus SP regret <= 0).",
          paper_value="SP LR drifts, muP does not (Fig. 1)", experiment="paper_data",
          metric="mup_minus_sp_regret", op="<=", threshold=0.0, resolution=0.02,
          resolution_reason="difference of error ratios; ~1/3 of the paper's 6.5% (5.34% vs 5.69%) gap (as "
                            "mup_beats_sp_transfer)",
          kind="paper", source="second-hand: Fig. 1 as described by summaries", fair_at="reduced",
          fair_at_reason=_PAPER_DATA_FAIR, requires=_PAPER_DATA_NEEDS),
    Claim(id="paper_data_sp_lr_drifts",
          statement=f"{_PAPER_DATA_SETS}: under SP the optimal LR decreases from K_proxy (3) to K_target (24) by at "
                    "least half a sqrt(2) step (a drift the muP rule predicts to be 1.5 steps for 3 -> 24).",
          paper_value="SP optimum 1.8e-3 (K=3) -> 7.4e-4 (K=24), FNO-3D; second-hand", experiment="paper_data",
          metric="sp_shift_steps", op="<=", threshold=-0.5, resolution=0.25,
          resolution_reason="~1/6 of the predicted 1.6-step drift (paper: 1.8e-3 -> 7.4e-4, 2.6 steps, FNO-3D) (as "
                            "sp_lr_drifts)",
          kind="paper", source="second-hand: summaries of the paper's FNO-3D LR sweep (Fig. 1)", fair_at="reduced",
          fair_at_reason=_PAPER_DATA_FAIR, requires=_PAPER_DATA_NEEDS),
    Claim(id="paper_data_modes_help",
          statement=f"{_PAPER_DATA_SETS}: more modes help (best muP error at K_target at most 0.95x "
                    "the best at K_proxy), so the transfer question is not empty (precondition, ours beyond the "
                    "paper).",
          paper_value="larger K is more accurate (motivation, Sec. 1)", experiment="paper_data",
          metric="mup_best_err_target_over_proxy", op="<=", threshold=0.95, resolution=0.02,
          resolution_reason="error ratio, a 2% relative error difference is the smallest that matters (as "
                            "modes_help)", kind="check"),
    # every seed: a setup check that the FNO learned at all; "half the error of the best constant" is its meaning
    Claim(id="paper_data_fno_learns",
          statement=f"{_PAPER_DATA_SETS}: the tuned muP FNO at K_target has at most half the test error of the "
                    "training-mean predictor (setup check, ours beyond the paper).",
          paper_value="setup (no paper number)", experiment="paper_data",
          metric="mup_best_err_target_over_mean_predictor", op="<=", threshold=0.5, aggregate="every_seed",
          kind="check"),
]


API_EXAMPLE = """
import torch
torch.set_num_threads(1)  # a small model: one thread is fastest on CPU
from icml25.papers.mutransfer_fno import FNO, mup_param_groups, clip_grad_elementwise_, burgers_dataset

a, u = burgers_dataset(n=40, res=64, nu=0.01, seed=0, solver_res=128)
a, u = torch.from_numpy(a)[..., None], torch.from_numpy(u)[..., None]
model = FNO(d=1, in_ch=1, out_ch=1, width=16, n_layers=2, modes=16, param="mup", k_base=4)
opt = torch.optim.Adam(mup_param_groups(model, base_lr=4e-3))  # spectral LR x sqrt(log 4 / log 16)
for step in range(20):
    loss = ((model(a) - u).norm(dim=1) / u.norm(dim=1)).mean()
    opt.zero_grad(); loss.backward(); clip_grad_elementwise_(model, 0.01); opt.step()
print([round(g["lr"], 5) for g in opt.param_groups], "loss", round(loss.item(), 3))
"""
