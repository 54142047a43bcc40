"""Reproduction: early-stopped GD on a wide two-layer ReLU net vs. early-stopped NTK kernel GD.

Two experiments, both on covariates on S^3 (d = 4, the paper assumes d >= 4) and a target in
the NTK's RKHS:

* ``rate``: for each n and each covariate distribution P (uniform, vMF mixture), train the
  network and kernel GD on the same data, stop at the paper's data-dependent time T_hat (its
  Eq. 8, critical radius with constant 1) and compare test risks with eps_hat^2. The bound
  constant C is ``slack x`` the mean of the network's risk/eps_hat^2 over ``calibration_draws``
  (5) independent uniform calibration draws at n = 250, then held fixed for every n and both
  distributions (a single draw gave C = 0.69 and 0.97 on two seeds; issue 25). Our earlier rule
  (``gd.stop_rule="calibrated"``: ``T_hat = c / (eta eps_hat^2)`` with c picked from a grid on
  the calibration draws, radius constant 2e) stays an option.
* ``width_tracking``: at n = 500, the largest gap ``max_{t <= T} max_x |f_NN(t,x) - f_KGD(t,x)|``
  for several widths.

All settings below were frozen in this file before the quick run that first used them looked at
any claim's outcome (the move to d = 4, constant 1 and Eq. 8 was made from the paper's text,
before a run with them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from icml25.core.experiment import (
    ConfigError,
    Experiment,
    ExperimentConfig,
    Fidelity,
    Metrics,
    ProgressFn,
    check_fields,
    no_progress,
)
from icml25.core.paper import Claim
from icml25.papers.ntk_early_stopping.figures import rate_figures, tracking_figures
from icml25.papers.ntk_early_stopping.kernels import (
    DISTRIBUTIONS,
    KernelGD,
    make_rkhs_target,
    sample_sphere,
    theory_stopping_time,
)
from icml25.papers.ntk_early_stopping.network import GDConfig, network_predictions_at


def loglog_slope(x, y) -> float:
    """Least-squares slope of log y on log x."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def _seed(*parts: int) -> np.random.Generator:
    return np.random.default_rng([int(p) for p in parts])


@dataclass
class RateConfig(ExperimentConfig):
    d: int = 4
    """Ambient dimension (covariates on S^{d-1})."""
    ns: tuple[int, ...] = (125, 250, 500, 1000)
    """Training-set sizes."""
    dists: tuple[str, ...] = ("uniform", "vmf_mixture")
    """Covariate distributions P (train and test from the same P)."""
    sigma: float = 0.5
    """Gaussian noise level of y = f*(x) + noise (also the sigma of the critical radius)."""
    n_test: int = 2000
    """Test points per distribution (risk = mean squared error to f* on them)."""
    width: int = 2048
    """Hidden width m of the network (even: antisymmetric init)."""
    gd: GDConfig = field(default_factory=GDConfig)
    """Early-stopped GD's settings, for the network and kernel GD (``gd.eta``, ``gd.kappa``, ``gd.radius_const``,
    ``gd.stop_rule``: 'eq8', the paper's data-dependent T_hat, or 'calibrated', c / (eta eps_hat^2) with c from the
    grid below)."""
    stop_const_grid: tuple[float, ...] = (0.5, 1.0, 2.0)
    """gd.stop_rule='calibrated' only: candidates for c, one picked at the calibration point."""
    calibration_n: int = 250
    """Size of each independent uniform calibration draw that fixes C (and c for stop_rule='calibrated')."""
    calibration_draws: int = 5
    """Independent calibration draws (data, noise and network init); C uses the mean of their ratios."""
    bound_slack: float = 2.0
    """C = bound_slack x mean over the calibration draws of (network risk at T_hat / eps_hat^2)."""
    overrun: int = 6
    """The over-trained comparison point is overrun x T_hat (run only for n <= early_stop_max_n)."""
    n_centers: int = 20
    """Kernel centres of the RKHS target."""
    rkhs_norm: float = 1.0
    """RKHS norm of the target."""
    early_stop_max_n: int = 500
    """Claim 4 (early stopping matters) is checked for n <= this."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("ns", "sigma", "n_test", "width", "stop_const_grid", "calibration_n",
                                     "calibration_draws", "bound_slack", "n_centers"),
                     nonnegative=("rkhs_norm",), nonempty=("ns", "dists", "stop_const_grid"),
                     at_least={"d": 2, "overrun": 1}, choices={"dists": DISTRIBUTIONS})
        # bounds: a job beyond these would need > ~100 GB or days (dense n x n kernel matrices, n x width activations)
        check_fields(self, at_most={"d": 10**4, "ns": 10**5, "n_test": 10**6, "width": 10**6, "calibration_n": 10**5,
                                    "calibration_draws": 10**3, "overrun": 10**4, "n_centers": 10**6,
                                    "early_stop_max_n": 10**5})
        _check_even_widths(self, (self.width,), "width")
        if len(set(self.ns)) < 2:
            raise ConfigError(f"RateConfig.ns must hold at least two different sizes (the rate is a slope), "
                              f"got {self.ns}")
        if self.early_stop_max_n < min(self.ns):
            raise ConfigError(f"RateConfig.early_stop_max_n must be >= the smallest n ({min(self.ns)}) so that the "
                              f"early-stopping claim has a point, got {self.early_stop_max_n}")


def _check_even_widths(cfg: ExperimentConfig, widths: tuple[int, ...], name: str) -> None:
    """Network widths are positive and even (antisymmetric initialisation)."""
    if any(m < 2 or m % 2 for m in widths):
        raise ConfigError(f"{type(cfg).__name__}.{name} must be even and >= 2 (antisymmetric init), "
                          f"got {getattr(cfg, name)}")


def _kgd_risks(kgd: KernelGD, X_test: np.ndarray, f_test: np.ndarray, T: int) -> tuple[float, float, float]:
    """Kernel-GD risk at T, at the oracle time (log grid up to 200 T) and the oracle time."""
    grid = np.unique(np.concatenate([[T], np.geomspace(1, 200 * T, 80).round()])).astype(int)
    risks = kgd.risk_path(X_test, f_test, grid)
    return float(risks[grid == T][0]), float(risks.min()), float(grid[risks.argmin()])


def run_rate(cfg: RateConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """Risks of the early-stopped network and kernel GD across n and P, with the calibrated (c, C)."""
    f_star = make_rkhs_target(cfg.d, cfg.n_centers, cfg.rkhs_norm, _seed(seed, 0))
    tests = {}
    for k, dist in enumerate(cfg.dists):
        X_test = sample_sphere(cfg.n_test, cfg.d, dist, _seed(seed, 3, k))
        tests[dist] = (X_test, f_star(X_test))
    total = 1 + len(cfg.dists) * len(cfg.ns)
    out: Metrics = {}

    # --- calibration at n = calibration_n, uniform, on calibration_draws draws of their own -------
    Xu, fu = tests["uniform"] if "uniform" in tests else (
        sample_sphere(cfg.n_test, cfg.d, "uniform", _seed(seed, 3, 99)), None)
    fu = f_star(Xu) if fu is None else fu
    draws = []
    for j in range(cfg.calibration_draws):
        Xc = sample_sphere(cfg.calibration_n, cfg.d, "uniform", _seed(seed, 1, j))
        yc = f_star(Xc) + cfg.sigma * _seed(seed, 1, j, 1).standard_normal(cfg.calibration_n)
        draws.append((Xc, yc, cfg.gd.kernel_gd(cfg.sigma).fit(Xc, yc)))
    if cfg.gd.stop_rule == "calibrated":  # c minimises kernel GD's risk averaged over the calibration draws
        cal_risks = np.mean([kgd.risk_path(Xu, fu, [theory_stopping_time(kgd.epsilon_hat_, cfg.gd.eta, c)
                                                    for c in cfg.stop_const_grid]) for _, _, kgd in draws], axis=0)
        c = float(cfg.stop_const_grid[int(np.argmin(cal_risks))])
    else:
        c = math.nan

    def stopping_time(kgd: KernelGD, n: int) -> int:
        return cfg.gd.stopping_time(kgd, n, cfg.sigma, c)

    cal_ratios = []
    for j, (Xc, yc, kgd) in enumerate(draws):
        T_cal = stopping_time(kgd, cfg.calibration_n)
        nn_cal = network_predictions_at(Xc, yc, Xu, cfg.width, cfg.gd.eta, [T_cal], cfg.gd.kappa, True,
                                        seed * 1000 + 999 - j)
        cal_ratios.append(float(np.mean((nn_cal[T_cal] - fu) ** 2)) / kgd.epsilon_hat_**2)
    C = cfg.bound_slack * float(np.mean(cal_ratios))
    out.update(stop_const=c, bound_C=C, calibration_ratio_min=min(cal_ratios), calibration_ratio_max=max(cal_ratios))
    progress(1, total)

    # --- main grid -------------------------------------------------------------------------
    done = 1
    per_dist: dict[str, dict[str, list[float]]] = {}
    for k, dist in enumerate(cfg.dists):
        X_test, f_test = tests[dist]
        rec = per_dist.setdefault(dist, {key: [] for key in
                                         ("eps2", "nn", "nn_half", "nn_over", "kgd", "kgd_oracle", "ratio",
                                          "ratio_half", "T")})
        for n in cfg.ns:
            X = sample_sphere(n, cfg.d, dist, _seed(seed, 2, k, n))
            y = f_star(X) + cfg.sigma * _seed(seed, 2, k, n, 1).standard_normal(n)
            kgd = cfg.gd.kernel_gd(cfg.sigma).fit(X, y)
            eps2 = kgd.epsilon_hat_**2
            T = stopping_time(kgd, n)
            T_half = max(1, T // 2)  # the theorem covers every t in [c_t T_hat, T_hat]; c_t = 1/2
            kgd_T, kgd_oracle, t_oracle = _kgd_risks(kgd, X_test, f_test, T)
            # the over-trained point is only needed where claim 4 looks (n <= early_stop_max_n)
            overrun = n <= cfg.early_stop_max_n
            steps = sorted({T_half, T, cfg.overrun * T} if overrun else {T_half, T})
            preds = network_predictions_at(X, y, X_test, cfg.width, cfg.gd.eta, steps, cfg.gd.kappa, True,
                                           seed * 1000 + 10 * k + cfg.ns.index(n))
            nn_T = float(np.mean((preds[T] - f_test) ** 2))
            nn_half = float(np.mean((preds[T_half] - f_test) ** 2))
            untrained = float(np.mean(f_test**2))  # the antisymmetric init makes the untrained network exactly 0
            nn_over = float(np.mean((preds[cfg.overrun * T] - f_test) ** 2)) if overrun else math.nan
            p = f"{dist}_n{n}_"
            out.update({p + "eps2": eps2, p + "T_hat": T, p + "nn_risk": nn_T, p + "nn_risk_half": nn_half,
                        p + "nn_risk_over_untrained": nn_T / untrained,
                        p + "kgd_risk": kgd_T, p + "kgd_oracle_risk": kgd_oracle, p + "kgd_oracle_t": t_oracle,
                        p + "nn_over_kgd": nn_T / kgd_T, p + "nn_risk_over_eps2": nn_T / eps2})
            if overrun:
                out.update({p + "nn_risk_overrun": nn_over, p + "overrun_over_stopped": nn_over / nn_T})
            for key, v in (("eps2", eps2), ("nn", nn_T), ("nn_half", nn_half), ("nn_over", nn_over),
                           ("kgd", kgd_T), ("kgd_oracle", kgd_oracle), ("ratio", nn_T / eps2),
                           ("ratio_half", nn_half / eps2), ("T", T)):
                rec[key].append(v)
            done += 1
            progress(done, total)

    ns = np.array(cfg.ns, float)
    small = ns <= cfg.early_stop_max_n
    out["rate_ratio_over_C_max"] = max(max(r["ratio"]) for r in per_dist.values()) / C
    out["rate_ratio_half_over_C_max"] = max(max(r["ratio_half"]) for r in per_dist.values()) / C
    out["nn_risk_over_untrained_max"] = max(out[f"{dist}_n{n}_nn_risk_over_untrained"] for dist in per_dist
                                            for n in cfg.ns)
    out["nn_over_kgd_max"] = max(max(np.divide(r["nn"], r["kgd"])) for r in per_dist.values())
    out["overrun_over_stopped_min_small_n"] = min(
        float(np.min(np.divide(r["nn_over"], r["nn"])[small])) for r in per_dist.values())
    for dist, r in per_dist.items():
        out[f"{dist}_slope_ratio"] = loglog_slope(ns, r["ratio"])
        out[f"{dist}_slope_nn_risk"] = loglog_slope(ns, r["nn"])
        out[f"{dist}_slope_eps2"] = loglog_slope(ns, r["eps2"])
        out[f"{dist}_slope_kgd_oracle"] = loglog_slope(ns, r["kgd_oracle"])
        out[f"{dist}_slope_T_hat"] = loglog_slope(ns, r["T"])
    out["slope_ratio_max"] = max(out[f"{dist}_slope_ratio"] for dist in per_dist)
    if "uniform" in per_dist:
        out["uniform_kgd_oracle_slope"] = out["uniform_slope_kgd_oracle"]
        # Corollary 5.2: T_hat ~ n^{d/(2d-1)} under the NTK's eigenvalue decay on the uniform sphere
        out["uniform_T_hat_slope_gap"] = abs(out["uniform_slope_T_hat"] - cfg.d / (2 * cfg.d - 1))
    return out


@dataclass
class TrackingConfig(ExperimentConfig):
    d: int = 4
    """Ambient dimension."""
    n: int = 500
    """Training-set size."""
    dist: str = "uniform"
    """Covariate distribution."""
    widths: tuple[int, ...] = (512, 2048, 8192)
    """Network widths m compared (first and last enter the claim)."""
    sigma: float = 0.5
    """Noise level."""
    n_test: int = 1000
    """Test points on which the sup-gap is taken."""
    gd: GDConfig = field(default_factory=GDConfig)
    """Early-stopped GD's settings (``gd.eta``, ``gd.kappa``, ``gd.radius_const``; ``gd.stop_rule`` sets the
    horizon T: 'eq8', the paper's data-dependent T_hat, or 'calibrated', stop_const / (eta eps_hat^2))."""
    stop_const: float = 2.0
    """gd.stop_rule='calibrated' only: c in the horizon (2 = the largest c of the rate experiment's grid)."""
    check_every: int = 2
    """The gap is evaluated every this many steps (and at T)."""
    n_centers: int = 20
    """Kernel centres of the RKHS target."""
    rkhs_norm: float = 1.0
    """RKHS norm of the target."""

    def validate(self) -> None:
        super().validate()
        check_fields(self, positive=("n", "widths", "sigma", "n_test", "stop_const", "check_every", "n_centers"),
                     nonnegative=("rkhs_norm",), nonempty=("widths",), at_least={"d": 2},
                     choices={"dist": DISTRIBUTIONS})
        # bounds: a job beyond these would need > ~100 GB or days (dense n x n kernel matrices, n x width activations)
        check_fields(self, at_most={"d": 10**4, "n": 10**5, "widths": 10**6, "n_test": 10**6, "check_every": 10**6,
                                    "n_centers": 10**6})
        _check_even_widths(self, self.widths, "widths")
        if len(set(self.widths)) < 2:
            raise ConfigError(f"TrackingConfig.widths must hold at least two different widths (the claim compares "
                              f"the first and the last), got {self.widths}")


def run_tracking(cfg: TrackingConfig, seed: int, progress: ProgressFn = no_progress) -> Metrics:
    """``max_{t<=T} max_x |f_NN(t,x) - f_KGD(t,x)|`` for each width, on the same data and test points."""
    f_star = make_rkhs_target(cfg.d, cfg.n_centers, cfg.rkhs_norm, _seed(seed, 0))
    X = sample_sphere(cfg.n, cfg.d, cfg.dist, _seed(seed, 5))
    y = f_star(X) + cfg.sigma * _seed(seed, 5, 1).standard_normal(cfg.n)
    X_test = sample_sphere(cfg.n_test, cfg.d, cfg.dist, _seed(seed, 6))
    kgd = cfg.gd.kernel_gd(cfg.sigma).fit(X, y)
    T = cfg.gd.stopping_time(kgd, cfg.n, cfg.sigma, cfg.stop_const)
    steps = sorted(set(range(cfg.check_every, T + 1, cfg.check_every)) | {T})
    f_kgd = kgd.predict_path(X_test, steps)
    out: Metrics = {"T_hat": T, "eps2": kgd.epsilon_hat_**2}
    for j, m in enumerate(cfg.widths):
        preds = network_predictions_at(X, y, X_test, m, cfg.gd.eta, steps, cfg.gd.kappa, True, seed * 1000 + j)
        out[f"gap_m{m}"] = max(float(np.abs(preds[t] - f_kgd[i]).max()) for i, t in enumerate(steps))
        progress(j + 1, len(cfg.widths))
    out["gap_ratio_largest_over_smallest"] = out[f"gap_m{cfg.widths[-1]}"] / out[f"gap_m{cfg.widths[0]}"]
    out["gap_width_slope"] = loglog_slope(cfg.widths, [out[f"gap_m{m}"] for m in cfg.widths])
    return out


EXPERIMENTS = [
    Experiment(
        name="rate",
        description="Early-stopped GD on a two-layer ReLU net (m=2048) vs early-stopped NTK kernel GD on "
                    "S^3 (d=4), n in 125..1000, uniform and vMF-mixture covariates, RKHS target, sigma=0.5; "
                    "stop at the paper's data-dependent T_hat (Eq. 8), bound constant C = 2 x the mean ratio "
                    "over 5 independent calibration draws at n=250 uniform.",
        config=RateConfig,
        run=run_rate,
        presets={
            "smoke": {"ns": (60, 120), "n_test": 300, "width": 256, "calibration_n": 80},
            "quick": {},
            # n doubled once more than quick (the card's n range), 4000 test points; the network keeps quick's width
            # so that one seed stays near 5 minutes of CPU (about 2 at quick)
            "full": {"ns": (125, 250, 500, 1000, 2000), "n_test": 4000},
        },
        seeds={"smoke": 2, "quick": 3, "full": 5},
        figures=rate_figures,
        full_requirements="The card's larger scale (n up to 2e4, m up to 65536, d in {2,3,5}) needs hours of CPU or a "
                          "port of network.py to a GPU; App. D's own settings were not read.",
        fidelity={
            "smoke": Fidelity("mechanism", "our synthetic setting shrunk (d=4, RKHS target, n in {60, 120}, m=256); "
                                           "App. D's simulation settings were not read"),
            "quick": Fidelity("mechanism", "our synthetic setting (d=4, RKHS target, uniform and vMF covariates, n "
                                           "125..1000, m=2048) stands in for App. D's unread simulations; the "
                                           "theorem's width m >~ d^(8/3)/eps_n^(80/3) is unattainable"),
            "full": Fidelity("mechanism", "the same synthetic setting with n up to 2000 and 4000 test points (m=2048); "
                                          "still not App. D's protocol, which was not read"),
        },
    ),
    Experiment(
        name="width_tracking",
        description="Sup-norm gap between the network and kernel GD along the GD path up to the paper's "
                    "T_hat (Eq. 8), d=4, n=500 uniform, for widths 512, 2048, 8192.",
        config=TrackingConfig,
        run=run_tracking,
        presets={
            "smoke": {"n": 100, "widths": (128, 1024), "n_test": 200},
            "quick": {},
            "full": {"widths": (512, 2048, 8192, 32768), "n_test": 2000},
        },
        seeds={"smoke": 2, "quick": 3, "full": 5},
        figures=tracking_figures,
        fidelity={
            "smoke": Fidelity("mechanism", "our synthetic setting shrunk (d=4, n=100, widths 128 and 1024)"),
            "quick": Fidelity("mechanism", "our synthetic setting (d=4, n=500 uniform, widths 512..8192) stands in for "
                                           "the theorem's over-parameterised regime; the paper has no such experiment"),
            "full": Fidelity("mechanism", "the same setting with widths up to 32768 and 2000 test points; still far "
                                          "below the theorem's width requirement"),
        },
    ),
]

_RATE = ("a rate the paper proves for any continuous P on the sphere (d >= 4); App. D's settings are unknown, so "
         "synthetic instances of our choosing are a fair test")
_SLOPE_TIE = "log-log slope; 0.05 is small next to the rate exponents (-0.6) under test"
CLAIMS = [
    Claim(id="ntk_tracking",
          statement="Along the GD path up to the stopping time, the network stays close to NTK kernel "
                    "GD, and the gap shrinks with width: the sup-gap at m=8192 is at most half of that at m=512.",
          paper_value="uniform convergence to the NTK along the GD path (proof ingredient (i)); width needed depends "
                      "only on d and eps_n",
          experiment="width_tracking", metric="gap_ratio_largest_over_smallest", op="<=", threshold=0.5,
          resolution=0.025,
          resolution_reason="ratio metric, 5% of the 0.5 bar (theory sqrt(log m/m) gives ~0.3 at m 512 -> 8192)",
          kind="paper", source="Sec. 6 (Theorem 6.1 and the decomposition f_t = h_t + e_t)",
          fair_at="mechanism",
          fair_at_reason="a property the paper proves for over-parameterised nets on any data; its width requirement "
                         "is unattainable at any budget, so shrinking the gap with width is the testable part"),
    # every seed: risk <= C eps^2 is a w.h.p. bound, so it must hold in every run
    Claim(id="rate_bound",
          statement="One constant C serves every n and both distributions: the network stopped at the paper's "
                    "T_hat (Eq. 8) has risk <= C eps_hat^2 at each (n, P), with C = 2 x the mean risk/eps_hat^2 "
                    "of 5 independent calibration draws at n=250 uniform (metric: max risk/(C eps_hat^2)).",
          paper_value="risk O(eps_n^2) w.h.p., no distributional assumption beyond the sphere (Thm 5.1)",
          experiment="rate", metric="rate_ratio_over_C_max", op="<=", threshold=1.0, aggregate="every_seed",
          kind="ours",
          source="Theorem 5.1 states risk <~ eps_n^2 with an unspecified constant; C = 2 x the mean ratio of 5 "
                 "calibration draws (slack 2) is ours, so a miss does not contradict the theorem",
          requires=("network_learns",)),
    # every seed: Thm 5.1 holds for every t in [c_t T_hat, T_hat]; checked at c_t = 1/2 with the same C
    Claim(id="rate_bound_half",
          statement="The same bound at t = T_hat/2 (Thm 5.1 covers every t in [c_t T_hat, T_hat]; "
                    "c_t = 1/2), with the same C (metric: max risk(T_hat/2)/(C eps_hat^2)).",
          paper_value="risk O(eps_n^2) for every t in [c_t T_hat, T_hat], any c_t in (0, 1] (Thm 5.1)",
          experiment="rate", metric="rate_ratio_half_over_C_max", op="<=", threshold=1.0, aggregate="every_seed",
          kind="ours",
          source="Theorem 5.1 (every t in [c_t T_hat, T_hat]) with an unspecified constant; our C from 5 "
                 "calibration draws with slack 2",
          requires=("network_learns",)),
    Claim(id="rate_ratio_flat",
          statement="risk/eps_hat^2 does not grow with n: its log-log slope in n is <= 0.1 for each "
                    "distribution (metric: the larger of the two slopes).",
          paper_value="risk O(eps_n^2) for any P on the sphere (abstract)", experiment="rate",
          metric="slope_ratio_max", op="<=", threshold=0.1, resolution=0.05, resolution_reason=_SLOPE_TIE,
          kind="paper", source="abstract; Theorem 5.1", fair_at="mechanism", fair_at_reason=_RATE,
          requires=("network_learns",)),
    Claim(id="matches_kernel_gd",
          statement="The early-stopped network's risk is within 1.5x early-stopped kernel GD's at "
                    "the same T_hat, for every (n, P).",
          paper_value="same rate as kernel regression trained by GD with early stopping (abstract)",
          experiment="rate", metric="nn_over_kgd_max", op="<=", threshold=1.5, resolution=0.05,
          resolution_reason="risk ratio, ~3% of the 1.5x bar; smaller misses do not matter",
          kind="paper", source="abstract", fair_at="mechanism", fair_at_reason=_RATE,
          requires=("network_learns",)),
    # every seed: a sanity check of each run (ours); 1 = any gain over the untrained (identically zero) network
    Claim(id="network_learns",
          statement="(ours, beyond the paper) The network stopped at T_hat has a lower test risk than the "
                    "untrained network (identically 0 under the antisymmetric init) for every n and both "
                    "distributions (metric: max risk ratio).",
          paper_value="not a paper claim (a check that the network learned)", experiment="rate",
          metric="nn_risk_over_untrained_max", op="<=", threshold=1.0, aggregate="every_seed",
          kind="check"),
    Claim(id="early_stopping_matters",
          statement="(ours, beyond the paper) Training 6x longer than T_hat raises the risk, for "
                    "every n <= 500 and both distributions at sigma=0.5 (metric: min risk(6 T_hat)/risk(T_hat)).",
          paper_value="the paper covers t <= T_hat only: T_hat ~ eps_n^{-2}; risk <~ eps_n^2 for every t in "
                      "[c_t T_hat, T_hat] (Thm 5.1); nothing is claimed beyond T_hat",
          experiment="rate", metric="overrun_over_stopped_min_small_n", op=">=", threshold=1.0, resolution=0.02,
          resolution_reason="risk ratio; a risk change under 2% from 6x overtraining does not matter",
          kind="ours"),
    Claim(id="uniform_slope",
          statement="Uniform sphere, d=4: oracle early-stopped kernel GD's risk decays in n with "
                    "log-log slope <= -0.42 (theory: -d/(2d-1) = -0.571 worst case over the RKHS ball).",
          paper_value="O(n^{-d/(2d-1)}) = n^{-0.571} at d=4 (Cor. 5.2)", experiment="rate",
          metric="uniform_kgd_oracle_slope", op="<=", threshold=-0.42, resolution=0.05,
          resolution_reason="log-log slope; the bar keeps the earlier 0.15 margin above the theory's -d/(2d-1) = "
                            "-4/7 at d=4",
          kind="paper", source="Corollary 5.2 (stated for the network; tested here on oracle kernel GD)",
          fair_at="mechanism", fair_at_reason=_RATE),
    Claim(id="stopping_time_rate",
          statement="Uniform sphere, d=4: the paper's T_hat grows in n with a log-log slope within 0.15 "
                    "of d/(2d-1) = 0.571 (metric: |slope - 0.571|).",
          paper_value="T_hat ~ n^{d/(2d-1)} (Cor. 5.2)", experiment="rate",
          metric="uniform_T_hat_slope_gap", op="<=", threshold=0.15, resolution=0.05,
          resolution_reason="log-log slope units, as uniform_slope; the bar 0.15 is the same margin",
          kind="paper", source="Corollary 5.2", fair_at="mechanism", fair_at_reason=_RATE),
]

API_EXAMPLE = """
import numpy as np
from icml25.papers.ntk_early_stopping import (KernelGD, TwoLayerReLUGD, make_rkhs_target, sample_sphere)

f_star = make_rkhs_target(d=4, n_centers=20, rkhs_norm=1.0, rng=0)
X = sample_sphere(300, 4, "vmf_mixture", rng=1)
y = f_star(X) + 0.5 * np.random.default_rng(2).standard_normal(300)
X_test = sample_sphere(1000, 4, "vmf_mixture", rng=3)

net = TwoLayerReLUGD(width=1024, eta=1.0, stop="eq8", sigma=0.5, seed=0)  # the paper's stopping rule
net.fit(X, y, X_eval=X_test, f_eval=f_star(X_test))
kgd = KernelGD(eta=1.0, sigma=0.5).fit(X, y)
print("eps_hat^2", round(net.epsilon_hat_ ** 2, 4), "T_hat", net.stopping_time_)
print("network risk   ", np.mean((net.predict(X_test) - f_star(X_test)) ** 2))
print("kernel GD risk ", kgd.risk_path(X_test, f_star(X_test), [net.stopping_time_])[0])
"""


def run_rate_experiment(ns=(125, 250, 500, 1000), d: int = 4, dists=("uniform", "vmf_mixture"),
                        widths=(2048,), seeds=(0, 1, 2), **overrides):
    """Run the ``rate`` experiment over widths and seeds; one row per (width, seed, dist, n).

    ``overrides`` are other :class:`RateConfig` fields (GD's settings as ``gd=GDConfig(eta=...)``).

    Returns a pandas DataFrame (pandas must be installed) with the per-(dist, n) metrics
    of :func:`run_rate` plus the calibrated ``stop_const`` and ``bound_C``.
    """
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("run_rate_experiment returns a DataFrame: pip install pandas") from exc
    rows = []
    for m in widths:  # RateConfig rejects a width that is not a positive even integer
        cfg = RateConfig(d=d, ns=tuple(ns), dists=tuple(dists), width=int(m), **overrides)
        for s in seeds:
            met = run_rate(cfg, int(s))
            for dist in dists:
                for n in ns:
                    p = f"{dist}_n{n}_"
                    row = {"width": m, "seed": s, "dist": dist, "n": n, "stop_const": met["stop_const"],
                           "bound_C": met["bound_C"]}
                    row.update({k[len(p):]: v for k, v in met.items() if k.startswith(p)})
                    rows.append(row)
    return pd.DataFrame(rows)
