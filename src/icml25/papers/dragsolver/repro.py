"""DragSolver reproduction on the offline synthetic-car harness (proxy Newtonian C_d, not real aerodynamics).

One experiment trains DragSolver, three ablations (-gating, -multiscale, -normalisation) and
three baselines (PointNet, lite DGCNN, plain point Transformer) on the same data and seed,
then measures relative L2 error on an in-distribution test split with interior clutter, a
scale-shifted copy of it, an OOD rear type, MC-dropout uncertainty and CPU latency per car.
Settings and thresholds were fixed before the first quick run; the learned-vs-mean checks, the 1024-car
30-epoch quick budget and the default initialisation were pre-registered (issue 26) before their quick run.

``paper_data`` runs the same models and metrics on the paper's DrivAerNet++ drag coefficients and preprocessed point
clouds with the official train/test split, read from a user's folder (``data_dir``, :mod:`.data`); without
``data_dir`` ``reproduce`` skips it with one line. Its claims repeat the stand-in's paper claims' statistics,
thresholds and tie bands and were fixed before any run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy import stats

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
from icml25.papers.dragsolver.data import CD_CSV, POINT_CLOUD_DIR, load_paper_dataset
from icml25.papers.dragsolver.figures import paper_data_figures, synthetic_figures
from icml25.papers.dragsolver.mesh import point_clouds, synthetic_cars
from icml25.papers.dragsolver.model import (
    DGCNNRegressor,
    DragSolver,
    DragSolverConfig,
    PlainPointTransformer,
    PointNetRegressor,
    relative_l2,
    train_regressor,
)

MODELS = ("dragsolver", "no_gating", "no_multiscale", "no_norm", "pointnet", "dgcnn", "plain")
BASELINES = ("pointnet", "dgcnn", "plain")


@dataclass
class SyntheticCarsConfig(TorchConfig):
    n_train: int = 1024
    """Training meshes (squareback and fastback rears)."""
    n_test: int = 128
    """In-distribution test meshes (same distribution: interior clutter, scales, mm units, re-tessellation)."""
    n_ood: int = 48
    """OOD test meshes: the unseen hatchback rear (slant > 30 deg)."""
    n_points: int = 128
    """Area-weighted surface samples per mesh."""
    model: DragSolverConfig = field(default_factory=DragSolverConfig)
    """DragSolver's settings (``model.scales``, ``model.d_model``, ``model.depth``, ``model.heads``,
    ``model.dropout``, ``model.epochs``, ``model.batch_size``, ``model.lr``, ``model.mc_samples``). The ablations
    use them all (-multiscale keeps the first scale); the baselines train with the same recipe and dropout, PointNet
    at hidden width d_model, DGCNN at d_model // 2, the plain Transformer on the first scale."""
    subdivide_max: int = 0
    """Random re-tessellation levels drawn in 0..subdivide_max."""
    shift_scale: float = 20.0
    """The scale-shifted split multiplies test clouds by U(shift_scale/4, shift_scale)."""
    latency_cars: int = 20
    """Cars timed one at a time (batch 1) for the latency metric."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n_points", "shift_scale", "latency_cars"), nonnegative=("subdivide_max",),
                     at_least={"n_train": 2, "n_test": 2, "n_ood": 1})
        # bounds: a job beyond these would need > ~100 GB or days (meshes x points, attention over sum of S tokens;
        # each re-tessellation level quadruples a mesh: level 11 alone is > 100 GB for one car)
        check_fields(self, at_most={"n_train": 10**6, "n_test": 10**6, "n_ood": 10**6, "n_points": 10**6,
                                    "subdivide_max": 10, "latency_cars": 10**5})


@dataclass
class PaperDataConfig(SyntheticCarsConfig):
    """The same models and metrics on the paper's DrivAerNet++ data (drag table, official split, preprocessed point
    clouds) read from ``data_dir``. ``n_train`` / ``n_test`` cap the official train / test splits (a seeded subset
    when a split is larger; 10**6 keeps it whole); ``n_points`` is drawn from each design's cloud by a seeded choice.
    The synthetic harness's ``n_ood`` and ``subdivide_max`` are unused (no OOD rear type, no meshes)."""

    data_dir: str = ""
    """A folder holding the drag table, ``subset_dir/{train,val,test}_design_ids.txt`` and the point-cloud folder
    (see :func:`~icml25.papers.dragsolver.data.load_paper_dataset`). The experiment runs only when it is set."""
    cd_csv: str = CD_CSV
    """File name of the drag table in ``data_dir`` (columns ``Design``, ``Average Cd``)."""
    point_cloud_dir: str = POINT_CLOUD_DIR
    """Name of the folder in ``data_dir`` holding one ``<Design>.pt`` tensor (N, 3) per design."""

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.data_dir, str) or (self.data_dir and not Path(self.data_dir).expanduser().is_dir()):
            raise ConfigError(f"PaperDataConfig.data_dir must be an existing folder (empty: the experiment does not "
                              f"run), got {self.data_dir!r}")
        for name in ("cd_csv", "point_cloud_dir"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip() or "/" in v or "\\" in v or v in (".", ".."):
                raise ConfigError(f"PaperDataConfig.{name} must be a plain file or folder name inside data_dir, "
                                  f"got {v!r}")


def _models(cfg: SyntheticCarsConfig, name: str) -> torch.nn.Module:
    """The model ``name`` of :data:`MODELS`, built on the CPU (its initial draws come from the current seed)."""
    m = cfg.model
    sc = m.scale_pairs
    kw = dict(d_model=m.d_model, depth=m.depth, heads=m.heads, dropout=m.dropout)
    if name == "pointnet":
        return PointNetRegressor(hidden=m.d_model, dropout=m.dropout)
    if name == "dgcnn":
        return DGCNNRegressor(k=20, hidden=m.d_model // 2, dropout=m.dropout)
    if name == "plain":
        return PlainPointTransformer(sc[0], **kw)
    ablation = {"dragsolver": {}, "no_gating": {"gating": False, "exterior_cues": False},
                "no_multiscale": {}, "no_norm": {"normalize": False}}[name]
    return DragSolver(sc[:1] if name == "no_multiscale" else sc, **ablation, **kw)


def _tensors(data: dict, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(torch.as_tensor(data[k], dtype=torch.float32, device=device) for k in ("xyz", "normals", "cues"))


@torch.no_grad()
def _predict(model, x, batch: int = 64) -> np.ndarray:
    return np.concatenate([model(*(t[s:s + batch] for t in x)).cpu().numpy() for s in range(0, len(x[0]), batch)])


def _auroc(score: np.ndarray, label: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for the positive class ``label`` (Mann-Whitney)."""
    r = stats.rankdata(score)
    pos = label.astype(bool)
    n1, n0 = pos.sum(), (~pos).sum()
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)) if n1 and n0 else float("nan")


def run_synthetic_cars(cfg: SyntheticCarsConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Train all models on one seed's harness data and return errors, ablation ratios, uncertainty and latency; on
    the paper's data (:class:`PaperDataConfig`) the official train/test designs, without the OOD, gate and
    interior metrics (a point cloud has no interior labels and no unseen rear type)."""
    if isinstance(cfg, PaperDataConfig):
        d = load_paper_dataset(cfg.data_dir, cfg.n_train, cfg.n_test, cfg.n_points, seed, cd_csv=cfg.cd_csv,
                               point_cloud_dir=cfg.point_cloud_dir)
        x_tr, x_te = (_tensors(d[s], cfg.device) for s in ("train", "test"))
        y_tr, y_te = d["train"]["cd"], d["test"]["cd"]
        ood = data = None
    else:
        sub = (0, cfg.subdivide_max)
        n_id = cfg.n_train + cfg.n_test
        meshes, cd, _ = synthetic_cars(n_id, seed, subdivide=sub)
        ood_meshes, cd_ood, _ = synthetic_cars(cfg.n_ood, seed + 10_000, subdivide=sub, rear_types=("hatchback",))
        data = point_clouds(meshes, cfg.n_points, seed)
        ood = _tensors(point_clouds(ood_meshes, cfg.n_points, seed + 10_000), cfg.device)
        x = _tensors(data, cfg.device)
        tr, te = slice(0, cfg.n_train), slice(cfg.n_train, n_id)
        x_tr, x_te = tuple(t[tr] for t in x), tuple(t[te] for t in x)
        y_tr, y_te = cd[tr], cd[te]
    n_test = len(y_te)
    g = torch.Generator().manual_seed(seed)
    shift = cfg.shift_scale * (0.25 + 0.75 * torch.rand(n_test, 1, 1, generator=g)).to(cfg.device)
    x_shift = (x_te[0] * shift, x_te[1], x_te[2])  # winding numbers and normals are scale-free
    total = len(MODELS) + 1
    out: Metrics = {}
    # every model keeps PyTorch's default initialisation, drawn on the CPU right after seeding (same draws on every
    # device); an earlier xavier re-init of every matrix kept all models at the label mean at this budget
    models = {}
    for i, name in enumerate(MODELS):
        torch.manual_seed(seed)
        model = models[name] = _models(cfg, name).to(cfg.device)
        train_regressor(model, *x_tr, y_tr, cfg.model.epochs, cfg.model.batch_size, cfg.model.lr, seed=seed)
        out[f"rel_l2_{name}"] = relative_l2(_predict(model, x_te), y_te)
        out[f"rel_l2_shift_{name}"] = relative_l2(_predict(model, x_shift), y_te)
        progress(i + 1, total)
    # learned beyond the label mean? the trivial predictor answers the training mean for every car
    out["rel_l2_mean"] = relative_l2(np.full(len(y_te), y_tr.mean()), y_te)
    for name in MODELS:
        out[f"{name}_over_mean"] = out[f"rel_l2_{name}"] / out["rel_l2_mean"]
    out["best_over_mean"] = min(out[f"{name}_over_mean"] for name in MODELS)
    ds = models["dragsolver"]
    e = out["rel_l2_dragsolver"]
    out["ds_over_pointnet"] = e / out["rel_l2_pointnet"]
    out["ds_over_plain"] = e / out["rel_l2_plain"]
    out["mean_reduction_vs_baselines"] = float(np.mean([1 - e / out[f"rel_l2_{b}"] for b in BASELINES]))
    out["no_gating_over_ds"] = out["rel_l2_no_gating"] / e
    out["no_multiscale_over_ds"] = out["rel_l2_no_multiscale"] / e
    out["no_norm_over_ds_shift"] = out["rel_l2_shift_no_norm"] / out["rel_l2_shift_dragsolver"]
    # MC dropout: error-uncertainty rank correlation (in-distribution) and OOD shift of the mean std
    torch.manual_seed(seed)
    mean_id, std_id = ds.predict_mc(x_te, cfg.model.mc_samples)
    mean_id, std_id = mean_id.cpu(), std_id.cpu()
    out["mc_rel_l2"] = relative_l2(mean_id.numpy(), y_te)
    out["mc_spearman"] = float(stats.spearmanr(std_id.numpy(), np.abs(mean_id.numpy() - y_te))[0])
    if ood is not None:
        mean_ood, std_ood = (t.cpu() for t in ds.predict_mc(ood, cfg.model.mc_samples))
        out["mc_rel_l2_ood"] = relative_l2(mean_ood.numpy(), cd_ood)
        out["ood_std_ratio"] = float(std_ood.mean() / std_id.mean())
    if data is not None:
        # gate: does it separate exterior from interior points? AUROC of the token gate for "exterior token"
        with torch.no_grad():
            _, gate, cue = (t.cpu() for t in ds.tokens(*x_te))
        ext_tok = (cue[..., 0] < 1.0).numpy().ravel()  # group mean winding number < 1: mostly exterior points
        out["gate_auroc"] = _auroc(gate.numpy().ravel(), ext_tok)
        out["interior_fraction"] = float(1 - data["exterior"][te].mean())
    # latency: one car at a time, MC dropout with T passes, single thread, after a warm-up
    cars = [tuple(t[j:j + 1] for t in x_te) for j in range(min(cfg.latency_cars, n_test))]
    ds.predict_mc(cars[0], cfg.model.mc_samples)
    synchronize = torch.cuda.synchronize if cfg.device.startswith("cuda") else (lambda: None)
    synchronize()
    t0 = time.perf_counter()
    for c in cars:
        ds.predict_mc(c, cfg.model.mc_samples)
    synchronize()
    out["latency_ms"] = 1000 * (time.perf_counter() - t0) / len(cars)
    if data is None:  # the paper's data: how many designs each split gave
        out["designs_train"], out["designs_test"] = float(len(y_tr)), float(n_test)
    progress(total, total)
    return out


_PAPER_STUDY = ("DrivAerNet++ drag coefficients and preprocessed point clouds with the official train/test split; "
                "substitutions: the architecture and recipe are inferred (the paper was not retrieved), normals "
                "estimated from the sampled points, no interior cues (every point's winding-number cue is 1/2), our "
                "PointNet / lite DGCNN / plain point Transformer instead of the paper's baselines")
_PAPER_DATA_NOTE = (
    "The paper's data: DrivAerNet++ (or DrivAerNet) as the official repository's point-cloud loader reads them, "
    "`icml25 reproduce dragsolver --preset quick --set data_dir=/path/to/DrivAerNetPlusPlus` (--preset full for all "
    "official designs; --set cd_csv=NAME.csv and --set point_cloud_dir=NAME for a copy that names them otherwise, "
    "e.g. DrivAerNet v1; --set device=cuda for a GPU); without data_dir the experiment is skipped with one line. "
    "Layout (nothing is downloaded; STL meshes are not read): <data_dir>/DrivAerNetPlusPlus_Drag_8k.csv (columns "
    "Design, Average Cd), <data_dir>/subset_dir/{train,val,test}_design_ids.txt (the official split), "
    "<data_dir>/DrivAerNetPlusPlus_Processed_Point_Clouds_100k/<Design>.pt (a torch tensor (N, 3), loaded with "
    "weights_only=True). A split holds the CSV's designs listed in its file; the val split is not used (no early "
    "stopping, as the stand-in). Still differs from the paper: the inferred architecture and recipe (smaller "
    "widths and point counts at quick), our three baselines instead of the paper's, normals from a 16-neighbour PCA "
    "of the sampled points, no interior/exterior cues (so the gate claim is not repeated here), subsets of the "
    "official train split drawn by seed at quick. Cost: the smoke preset runs in seconds on the tests' folder; "
    "quick (1024 training designs of 128 points, the whole test split) is about the stand-in's quick, ~10 "
    "CPU-minutes per seed plus loading 2,200 clouds of 100k points; full (every official training design, 1024 "
    "points, d 96, depth 4, 30 epochs) is hours per seed on a CPU, less on a GPU.")


EXPERIMENTS = [
    Experiment(
        name="synthetic_cars",
        description="Parametric car meshes with interior clutter, random scale/mm units and re-tessellation; "
                    "proxy Newtonian C_d on the outer hull; DragSolver vs ablations and PointNet/DGCNN/plain "
                    "Transformer baselines, MC-dropout uncertainty and CPU latency per car.",
        config=SyntheticCarsConfig,
        run=run_synthetic_cars,
        presets={
            "smoke": {"n_train": 32, "n_test": 16, "n_ood": 8, "n_points": 64, "model.scales": (16, 8, 4, 16),
                      "model.d_model": 32, "model.depth": 1, "model.epochs": 2, "model.mc_samples": 8,
                      "latency_cars": 3},
            "quick": {},
            "full": {"n_train": 2000, "model.batch_size": 32, "model.lr": 2e-3, "n_test": 500, "n_ood": 200,
                     "n_points": 1024, "model.scales": (256, 16, 64, 48), "model.d_model": 96, "model.depth": 4,
                     "model.epochs": 30, "subdivide_max": 2},
        },
        seeds={"smoke": 1, "quick": 3, "full": 5},
        fidelity={
            "smoke": Fidelity("mechanism", "synthetic convex-part cars with a proxy Newtonian C_d stand in for "
                                           "DrivAerNet meshes and CFD drag; 32 cars of 64 points, 2 epochs"),
            "quick": Fidelity("mechanism", "synthetic convex-part cars with a proxy Newtonian C_d stand in for "
                                           "DrivAerNet / DrivAerNet++ / DrivAerML and CFD drag; 1024 training cars "
                                           "of 128 points, 30 epochs (train_regressor's default), a 32-wide "
                                           "1-layer model"),
            "full": Fidelity("mechanism", "a larger run of the same synthetic harness (2000 cars of 1024 points, "
                                          "30 epochs); still a proxy label, not CFD data"),
        },
        figures=synthetic_figures,
        full_requirements="The paper's DrivAerNet / DrivAerNet++ data are the paper_data experiment's (it runs "
                          "when data_dir names a folder of their drag table, split files and point clouds; "
                          "DrivAerML is not supported); 'full' here is a larger run of the synthetic harness.",
        timed=True,
    ),
    Experiment(
        name="paper_data",
        description="The paper's DrivAerNet++ data (drag table, official train/test split, preprocessed point "
                    "clouds) from a user's folder (data_dir): DragSolver vs ablations and PointNet/DGCNN/plain "
                    "Transformer baselines, MC-dropout uncertainty and CPU latency per car, as synthetic_cars.",
        config=PaperDataConfig,
        run=run_synthetic_cars,
        presets={
            "smoke": {"n_train": 32, "n_test": 16, "n_points": 64, "model.scales": (16, 8, 4, 16),
                      "model.d_model": 32, "model.depth": 1, "model.epochs": 2, "model.mc_samples": 8,
                      "latency_cars": 3},
            "quick": {"n_test": 10**6},
            "full": {"n_train": 10**6, "n_test": 10**6, "model.batch_size": 32, "model.lr": 2e-3,
                     "n_points": 1024, "model.scales": (256, 16, 64, 48), "model.d_model": 96, "model.depth": 4,
                     "model.epochs": 30},
        },
        seeds={"smoke": 1, "quick": 3, "full": 5},
        fidelity={
            "smoke": Fidelity("mechanism", "a harness run on the given folder: at most 32 training and 16 test "
                                           "designs of 64 points, 2 epochs, a 32-wide 1-layer model"),
            "quick": Fidelity("reduced", f"{_PAPER_STUDY}; 1024 of the official training designs (a seeded "
                                         f"subset), the whole test split, 128 of 100k points per design, the "
                                         f"stand-in's quick model (32 wide, 1 layer, 30 epochs)"),
            "full": Fidelity("reduced", f"{_PAPER_STUDY}; every official training and test design, 1024 of 100k "
                                        f"points per design, d 96, depth 4, 30 epochs"),
        },
        figures=paper_data_figures,
        data_setting="data_dir",
        full_requirements=_PAPER_DATA_NOTE,
        timed=True,
    ),
]

_NR = "no per-dataset numbers retrieved"
_GATE = ("a comparison of errors means something only when the task is learnable at this budget: some model's error "
         "is at most 0.8 of the label-mean predictor's")
_REAL = ("the paper's comparison is on real CFD meshes and drag labels (DrivAerNet, DrivAerNet++, DrivAerML); a "
         "subset of them with smaller models would still test the direction, a proxy label on synthetic cars does not")
_REAL_TWIN = ("the paper's comparison is on these data; a subset of the designs and points with smaller models still "
              "tests the direction")
CLAIMS = [
    # every seed: preconditions. The error comparisons require some_model_learns; the claims about DragSolver's own
    # outputs (MC uncertainty, the gate) require dragsolver_learns
    Claim(id="some_model_learns", kind="check",
          statement="(ours, sanity) At least one of the seven models learns beyond the label mean: its test relative "
          "L2 error is at most 0.8 of the training-mean predictor's (min over models of the ratio <= 0.8).",
          paper_value="not a paper claim (precondition of every error comparison)", experiment="synthetic_cars",
          metric="best_over_mean", op="<=", threshold=0.8, aggregate="every_seed"),
    Claim(id="dragsolver_learns", kind="check",
          statement="(ours, sanity) DragSolver learns beyond the label mean: its test relative L2 error is at most "
          "0.8 of the training-mean predictor's.",
          paper_value="not a paper claim (precondition of the claims on DragSolver's own outputs)",
          experiment="synthetic_cars", metric="dragsolver_over_mean", op="<=", threshold=0.8, aggregate="every_seed"),
    Claim(id="beats_pointnet", kind="paper",
          statement="DragSolver's relative L2 error is below PointNet's (ratio <= 1).",
          paper_value=f"lower error than existing methods ({_NR})", source="abstract", experiment="synthetic_cars",
          metric="ds_over_pointnet", op="<=", threshold=1.0, resolution=0.1,
          resolution_reason="paper's average reduction is 58.7% (ratio ~0.41); under 10% of the baseline's error "
          "does not matter",
          fair_at="reduced", fair_at_reason=_REAL,
          requires=("some_model_learns",)),
    Claim(id="beats_plain_transformer", kind="paper",
          statement="DragSolver's relative L2 error is below a plain single-scale point Transformer's (ratio <= 1).",
          paper_value=f"lower error than existing methods ({_NR})", source="abstract", experiment="synthetic_cars",
          metric="ds_over_plain", op="<=", threshold=1.0, resolution=0.1,
          resolution_reason="paper's average reduction is 58.7% (ratio ~0.41); under 10% of the baseline's error "
          "does not matter",
          fair_at="reduced", fair_at_reason=_REAL,
          requires=("some_model_learns",)),
    Claim(id="avg_reduction_58_7", kind="paper",
          statement="Average relative-L2 reduction over the paper's baselines on real CFD data is at least 58.7% "
          "(the paper's baselines were not retrieved; ours averages over PointNet, DGCNN and a plain point "
          "Transformer, a stand-in read at paper fidelity only).",
          paper_value="58.7% average reduction in relative L2 over the paper's baselines on real CFD data (abstract)",
          source="abstract",
          experiment="synthetic_cars", metric="mean_reduction_vs_baselines", op=">=", threshold=0.587,
          resolution=0.05, resolution_reason="a reduction within 5 points of the paper's 58.7% is the same headline "
          "number",
          fair_at="paper", fair_at_reason="quotes the paper's number, measured against its own baselines on real CFD "
          "data at its scale; our three baselines on synthetic cars are not those",
          requires=("some_model_learns",)),
    Claim(id="gating_helps", kind="ours",
          statement="Removing the surface-guided gate raises error on the interior-clutter test split by >= 10%.",
          paper_value="surface-guided gating suppresses interior parts (abstract; card's check)",
          source="abstract names the gate; the ablation and its 10% bar are the spec card's",
          experiment="synthetic_cars", metric="no_gating_over_ds", op=">=", threshold=1.1, resolution=0.05,
          resolution_reason="ratio; half of the claimed 10% error increase",
          requires=("some_model_learns",)),
    Claim(id="normalisation_helps", kind="ours",
          statement="Removing scale normalisation raises error on the scale-shifted split by >= 10%.",
          paper_value="heterogeneous scale normalisation (abstract; card's check)",
          source="abstract names the normalisation; the ablation and its 10% bar are the spec card's",
          experiment="synthetic_cars", metric="no_norm_over_ds_shift", op=">=", threshold=1.1, resolution=0.05,
          resolution_reason="ratio; half of the claimed 10% error increase",
          requires=("some_model_learns",)),
    Claim(id="mc_uncertainty_ranks_error", kind="paper",
          statement="MC-dropout std has Spearman >= 0.3 with absolute error.",
          paper_value="reliable uncertainty (abstract; card's check)",
          source="abstract (the Spearman >= 0.3 bar is the spec card's)", experiment="synthetic_cars",
          metric="mc_spearman", op=">=", threshold=0.3, resolution=0.05,
          resolution_reason="a rank correlation; 0.05 around the 0.3 bar does not matter",
          fair_at="reduced", fair_at_reason="the paper's uncertainty is judged on real CFD meshes; a subset of them "
          "would still test it, a proxy label on synthetic cars does not",
          requires=("dragsolver_learns",)),
    Claim(id="ood_uncertainty_higher", kind="ours",
          statement="Mean MC-dropout std on the unseen rear type exceeds the in-distribution mean (ratio >= 1).",
          paper_value="uncertainty flags OOD geometry (card's check)", source="the spec card's check",
          experiment="synthetic_cars", metric="ood_std_ratio", op=">=", threshold=1.0, resolution=0.05,
          resolution_reason="ratio of mean stds; an OOD std within 5% of the in-distribution one flags nothing",
          requires=("dragsolver_learns",)),
    Claim(id="gate_separates_interior", kind="paper",
          statement="The learned gate separates exterior from interior tokens (AUROC >= 0.8).",
          paper_value="gating suppresses interior structure (card's check)",
          source="abstract (surface-guided gating suppresses interior parts; the AUROC bar is the spec card's)",
          experiment="synthetic_cars", metric="gate_auroc", op=">=", threshold=0.8, resolution=0.02,
          resolution_reason="AUROC is a probability in [0,1]; 2 points around 0.8 do not matter",
          fair_at="mechanism", fair_at_reason="what the gate is for: any faithful gate must suppress interior "
          "parts planted in a mesh, whatever the data",
          requires=("dragsolver_learns",)),
    Claim(id="real_time", kind="paper",
          statement="Inference with T=30 MC passes takes < 50 ms per car on one CPU thread.",
          paper_value="first reliable real-time C_d inference (abstract)", source="abstract",
          experiment="synthetic_cars", metric="latency_ms", op="<=", threshold=50.0, resolution=5.0,
          resolution_reason="10% of the 50 ms real-time budget (timing noise on a shared CPU); below that does not "
          "matter",
          fair_at="paper", fair_at_reason="latency depends on the paper's model size and mesh resolution"),

    # the paper's data (paper_data): twins of the paper claims above with the same statistics, pre-registered before
    # any run; gate_separates_interior has no twin (a point cloud carries no interior labels)
    Claim(id="paper_data_some_model_learns", kind="check",
          statement="(ours, sanity) On DrivAerNet++'s official test split, at least one of the seven models learns "
          "beyond the label mean: its relative L2 error is at most 0.8 of the training-mean predictor's.",
          paper_value="not a paper claim (precondition of every error comparison on the paper's data)",
          experiment="paper_data", metric="best_over_mean", op="<=", threshold=0.8, aggregate="every_seed"),
    Claim(id="paper_data_dragsolver_learns", kind="check",
          statement="(ours, sanity) On DrivAerNet++'s official test split, DragSolver learns beyond the label mean: "
          "its relative L2 error is at most 0.8 of the training-mean predictor's.",
          paper_value="not a paper claim (precondition of the claims on DragSolver's own outputs on the paper's data)",
          experiment="paper_data", metric="dragsolver_over_mean", op="<=", threshold=0.8, aggregate="every_seed"),
    Claim(id="paper_data_beats_pointnet", kind="paper",
          statement="On DrivAerNet++ (official split), DragSolver's relative L2 error of C_d is below PointNet's "
          "(ratio <= 1).",
          paper_value=f"lower error than existing methods ({_NR})", source="abstract", experiment="paper_data",
          metric="ds_over_pointnet", op="<=", threshold=1.0, resolution=0.1,
          resolution_reason="as beats_pointnet: paper's average reduction is 58.7% (ratio ~0.41); under 10% of the "
          "baseline's error does not matter",
          fair_at="reduced", fair_at_reason=_REAL_TWIN,
          requires=("paper_data_some_model_learns",)),
    Claim(id="paper_data_beats_plain_transformer", kind="paper",
          statement="On DrivAerNet++ (official split), DragSolver's relative L2 error of C_d is below a plain "
          "single-scale point Transformer's (ratio <= 1).",
          paper_value=f"lower error than existing methods ({_NR})", source="abstract", experiment="paper_data",
          metric="ds_over_plain", op="<=", threshold=1.0, resolution=0.1,
          resolution_reason="as beats_plain_transformer: paper's average reduction is 58.7% (ratio ~0.41); under "
          "10% of the baseline's error does not matter",
          fair_at="reduced", fair_at_reason=_REAL_TWIN,
          requires=("paper_data_some_model_learns",)),
    Claim(id="paper_data_avg_reduction_58_7", kind="paper",
          statement="On DrivAerNet++ (official split), the average relative-L2 reduction over the baselines is at "
          "least 58.7% (ours averages over PointNet, DGCNN and a plain point Transformer, not the paper's "
          "baselines, so it is read at paper fidelity only).",
          paper_value="58.7% average reduction in relative L2 over the paper's baselines on real CFD data (abstract)",
          source="abstract", experiment="paper_data", metric="mean_reduction_vs_baselines", op=">=",
          threshold=0.587, resolution=0.05, resolution_reason="as avg_reduction_58_7: a reduction within 5 points "
          "of the paper's 58.7% is the same headline number",
          fair_at="paper", fair_at_reason="quotes the paper's number, measured against its own baselines at its "
          "scale; our three baselines are not those",
          requires=("paper_data_some_model_learns",)),
    Claim(id="paper_data_mc_uncertainty_ranks_error", kind="paper",
          statement="On DrivAerNet++ (official test split), DragSolver's MC-dropout std has Spearman >= 0.3 with "
          "its absolute C_d error.",
          paper_value="reliable uncertainty (abstract; card's check)",
          source="abstract (the Spearman >= 0.3 bar is the spec card's)", experiment="paper_data",
          metric="mc_spearman", op=">=", threshold=0.3, resolution=0.05,
          resolution_reason="as mc_uncertainty_ranks_error: a rank correlation; 0.05 around the 0.3 bar does not "
          "matter",
          fair_at="reduced", fair_at_reason="the paper's uncertainty is judged on these data; a subset of the "
          "designs and a smaller model still test it",
          requires=("paper_data_dragsolver_learns",)),
    Claim(id="paper_data_real_time", kind="paper",
          statement="On DrivAerNet++ designs, inference with T=30 MC passes takes < 50 ms per car on one CPU "
          "thread.",
          paper_value="first reliable real-time C_d inference (abstract)", source="abstract",
          experiment="paper_data", metric="latency_ms", op="<=", threshold=50.0, resolution=5.0,
          resolution_reason="as real_time: 10% of the 50 ms real-time budget (timing noise on a shared CPU); below "
          "that does not matter",
          fair_at="paper", fair_at_reason="latency depends on the paper's model size and mesh resolution"),
]

API_EXAMPLE = """
import torch
from icml25.papers.dragsolver import DragSolver, synthetic_cars, point_clouds, train_regressor

meshes, cd, meta = synthetic_cars(40, seed=0, subdivide=(0, 0))
pc = point_clouds(meshes, n_points=128, seed=0)
x = [torch.tensor(pc[k], dtype=torch.float32) for k in ("xyz", "normals", "cues")]
model = DragSolver(scales=((32, 8), (8, 16)), d_model=32, depth=1, heads=4)
train_regressor(model, *[t[:32] for t in x], cd[:32], epochs=2)
mean, std = model.predict_mc([t[32:] for t in x], T=10)
print("proxy C_d", cd[32:36].round(3), "pred", mean[:4].numpy().round(3), "std", std[:4].numpy().round(3))
"""
