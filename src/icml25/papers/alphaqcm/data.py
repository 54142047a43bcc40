"""The market data of the reproduction: a synthetic market whose 20-day forward returns load on planted formulaic
alphas (:func:`synthetic_market`), and the paper's China A-share data read from a qlib data folder
(:func:`load_qlib_market`, :func:`load_paper_market`; nothing is downloaded)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.papers.alphaqcm.expressions import FEATURES, TokenSet, evaluate_rpn, parse_rpn

DEFAULT_PLANTED = ("close close 10 Mean Div", "close volume 20 Corr")
"""Short-term reversal close/Mean(close,10) (negative loading) and Corr(close, volume, 20) (positive)."""


@dataclass
class SyntheticMarket:
    """OHLCV/vwap panels, the forward-return target and the planted alphas."""

    panel: dict[str, np.ndarray]
    """Feature name -> ``(days, stocks)`` array."""
    target: np.ndarray
    """``Ref(close, -horizon) / close - 1``; NaN in the last ``horizon`` days."""
    planted: tuple[str, ...]
    """RPN strings of the planted alphas."""
    loadings: np.ndarray
    """Loading of the next-day return on each standardised planted alpha."""

    def split(self, start: int, stop: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The panel and target restricted to days ``[start, stop)``."""
        return {k: v[start:stop] for k, v in self.panel.items()}, self.target[start:stop]


def forward_return(close: np.ndarray, horizon: int = 20) -> np.ndarray:
    """``Ref(close, -horizon) / close - 1`` (NaN for the last ``horizon`` days)."""
    if int(horizon) != horizon or horizon < 1:
        raise ValueError(f"horizon must be a positive integer, got {horizon!r}")
    close = np.asarray(close, dtype=float)
    if close.ndim != 2:
        raise ValueError(f"close must be a (days, stocks) array, got shape {close.shape}")
    out = np.full_like(close, np.nan, dtype=float)
    out[:-horizon] = close[horizon:] / close[:-horizon] - 1
    return out


def synthetic_market(n_stocks: int = 100, n_days: int = 750, planted_alphas: tuple[str, ...] = DEFAULT_PLANTED,
                     noise: float = 1.0, seed: int = 0, loadings: tuple[float, ...] = (-2.0, 1.0),
                     signal_vol: float = 0.004, horizon: int = 20, tokens: TokenSet | None = None) -> SyntheticMarket:
    """Simulate a market day by day in which returns load on planted formulaic signals.

    Each day ``t`` the planted alphas are evaluated on the history up to ``t`` and
    z-scored across stocks (``s_k(t)``); the next daily log-return is
    ``signal_vol * sum_k loading_k s_k(t) + noise * 0.02 * (0.6 e_market + 0.8 e_idio)``.
    Volume follows a log-AR(1) plus a term in ``|return|``; open/high/low/vwap are
    noisy transforms of close, so ratios of prices act as correlated decoys of the
    reversal signal. The 20-day forward return therefore correlates with the planted
    alphas (strength set by ``signal_vol / noise``).

    Args:
        n_stocks, n_days: panel size (``n_days > 60 + horizon``).
        planted_alphas: RPN strings over the features (default: reversal and price-volume correlation).
        noise: scale of the return noise (larger = weaker signal).
        seed: random seed.
        loadings: one loading per planted alpha.
        signal_vol: daily return per unit of standardised signal.
        horizon: forward-return horizon in days (the paper uses 20).
        tokens: token set in which to parse the planted alphas (default: the full paper set).
    """
    if n_stocks < 2:
        raise ValueError(f"n_stocks must be >= 2, got {n_stocks}")
    if n_days <= 60 + horizon:
        raise ValueError(f"n_days must exceed 60 + horizon = {60 + horizon}, got {n_days}")
    if not (noise > 0 and np.isfinite(noise)):
        raise ValueError(f"noise must be a finite number > 0, got {noise}")
    if len(loadings) != len(planted_alphas):
        raise ValueError(f"need one loading per planted alpha: {len(planted_alphas)} alphas, {len(loadings)} loadings")
    tokens = tokens or TokenSet()
    seqs = [parse_rpn(p, tokens) for p in planted_alphas]
    rng = np.random.default_rng(seed)
    warm = 60  # days simulated without signal so rolling windows are defined
    logc = np.zeros((n_days, n_stocks))
    logv = np.zeros((n_days, n_stocks))
    logc[0] = rng.normal(3.0, 0.5, n_stocks)
    v_level = rng.normal(13.0, 0.7, n_stocks)
    logv[0] = v_level
    eps = 0.02 * noise * (0.6 * rng.standard_normal((n_days, 1)) + 0.8 * rng.standard_normal((n_days, n_stocks)))
    vshock = rng.standard_normal((n_days, n_stocks))
    load = np.asarray(loadings, dtype=float)
    lookback = 40  # every planted signal needs at most this much history
    for t in range(1, n_days):
        r = eps[t]
        if t - 1 >= warm:
            lo = t - lookback
            hist = {"close": np.exp(logc[lo:t]), "volume": np.exp(logv[lo:t])}
            hist.update({f: hist["close"] for f in FEATURES if f not in hist})
            s = np.stack([evaluate_rpn(q, tokens, hist)[-1] for q in seqs])
            s = (s - s.mean(1, keepdims=True)) / (s.std(1, keepdims=True) + 1e-12)
            r = r + signal_vol * (load @ np.nan_to_num(s))
        logc[t] = logc[t - 1] + r
        logv[t] = v_level + 0.8 * (logv[t - 1] - v_level) + 0.3 * vshock[t] + 8.0 * np.abs(r)
    close = np.exp(logc)
    prev = np.vstack([close[:1], close[:-1]])
    opn = prev * np.exp(0.005 * rng.standard_normal(close.shape))
    high = np.maximum(opn, close) * np.exp(np.abs(0.008 * rng.standard_normal(close.shape)))
    low = np.minimum(opn, close) * np.exp(-np.abs(0.008 * rng.standard_normal(close.shape)))
    vwap = (high + low + close) / 3 * np.exp(0.002 * rng.standard_normal(close.shape))
    panel = {"open": opn, "close": close, "high": high, "low": low, "volume": np.exp(logv), "vwap": vwap}
    return SyntheticMarket(panel, forward_return(close, horizon), tuple(planted_alphas), load)


# ----------------------------------------------------------------------------- the paper's data: a qlib folder
QLIB_POOLS = ("csi300", "csi500", "all")
"""The paper's stock pools (qlib ``instruments/<pool>.txt``): CSI300, CSI500 and the whole A-share market."""
PAPER_SPLITS = {"train": ("2010-01-01", "2019-12-31"), "valid": ("2020-01-01", "2020-12-31"),
                "test": ("2021-01-01", "2022-12-31")}
"""The official scripts' periods (``train_qcm_csi300.py``, ``train_qcm_csi500.py``, ``train_qcm.py``), inclusive."""
BACKTRACK_DAYS = 100
"""Trading days loaded before a period (AlphaGen's ``StockData.max_backtrack_days``): rolling windows' history."""
FUTURE_DAYS = 30
"""Trading days loaded after a period (``StockData.max_future_days``): the 20-day forward return's future."""
QLIB_LAYOUT = ("<data_dir>/calendars/day.txt (one trading date YYYY-MM-DD per line), "
               "<data_dir>/instruments/<pool>.txt (tab-separated SYMBOL, start date, end date per membership span), "
               "<data_dir>/features/<symbol, lower case>/<field>.day.bin (little-endian float32: the calendar index "
               "of the first value, then one value per trading day)")
"""qlib's binary daily layout, as ``dump_bin.py`` writes it."""


@dataclass
class QlibMarket:
    """One period of a qlib market: the features over the period plus its history and future, and the target."""

    panel: dict[str, np.ndarray]
    """Feature name -> ``(days, stocks)`` float64 array of the files' float32 values; NaN where a stock has no value
    or is outside its pool membership (as qlib's market instruments give it)."""
    target: np.ndarray
    """``Ref(close, -20) / close - 1`` on the panel's days, NaN outside :attr:`period`."""
    dates: tuple[str, ...]
    """The panel's trading days (``BACKTRACK_DAYS`` before the period to ``FUTURE_DAYS`` after it, clipped to the
    calendar)."""
    symbols: tuple[str, ...]
    """The stocks (columns), sorted: members of the pool on some day of the panel that have data there."""
    period: slice
    """The period's days within the panel (where the pool's IC is computed)."""
    skipped: tuple[str, ...] = ()
    """Members of the pool without any value in the window (no feature folder, or all NaN): left out, as qlib does."""


def _missing(path: Path, what: str) -> FileNotFoundError:
    return FileNotFoundError(f"qlib data: {what} {path} not found; expected qlib's daily layout: {QLIB_LAYOUT}")


def read_qlib_calendar(root: str | Path) -> list[str]:
    """The trading days of ``<root>/calendars/day.txt`` (dates ``YYYY-MM-DD``, ascending)."""
    path = Path(root).expanduser() / "calendars" / "day.txt"
    if not path.is_file():
        raise _missing(path, "calendar")
    days = [line.strip()[:10] for line in path.read_text().splitlines() if line.strip()]
    if not days or any(a >= b for a, b in zip(days, days[1:])):
        raise ValueError(f"qlib data: {path} must list trading days in strictly increasing order, one per line")
    return days


def read_qlib_instruments(root: str | Path, pool: str) -> dict[str, list[tuple[str, str]]]:
    """Membership spans of ``<root>/instruments/<pool>.txt``: symbol -> [(start, end), ...], dates inclusive."""
    path = Path(root).expanduser() / "instruments" / f"{pool.lower()}.txt"
    if not path.is_file():
        raise _missing(path, f"instruments file of pool {pool!r}")
    spans: dict[str, list[tuple[str, str]]] = {}
    for k, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 3:
            raise ValueError(f"qlib data: {path} line {k} must be SYMBOL<tab>start<tab>end, got {line!r}")
        spans.setdefault(parts[0].strip(), []).append((parts[1].strip()[:10], parts[2].strip()[:10]))
    return spans


def read_qlib_feature(path: str | Path, n_calendar: int) -> tuple[int, np.ndarray]:
    """``(start index, values)`` of one ``<field>.day.bin`` file (little-endian float32; values as float32)."""
    path = Path(path)
    raw = np.fromfile(path, dtype="<f4")
    if path.stat().st_size % 4 or raw.size < 1:
        raise ValueError(f"qlib data: {path} must hold float32 values (a start index, then the series), got "
                         f"{path.stat().st_size} bytes")
    start = float(raw[0])
    if not (start == int(start) and 0 <= start and int(start) + raw.size - 1 <= n_calendar):
        raise ValueError(f"qlib data: {path} starts at calendar index {start} with {raw.size - 1} values, outside "
                         f"the calendar's {n_calendar} days")
    return int(start), raw[1:]


def _feature_dir(features: Path, symbol: str) -> Path | None:
    """The symbol's feature folder as qlib looks it up: lower case (dump_bin's), then as written, then upper case."""
    for name in (symbol.lower(), symbol, symbol.upper()):
        if (features / name).is_dir():
            return features / name
    return None


def _window(calendar: list[str], start: str, end: str, backtrack: int, future: int) -> tuple[int, int, int, int]:
    """Calendar indices (lo, first, last, hi): the period's first and last trading days and the loaded window.

    As AlphaGen's ``StockData``: the first day >= ``start``, the last day <= ``end``, ``backtrack`` days before and
    ``future`` after (clipped here to the calendar, where the official code would fail or wrap around).
    """
    first = int(np.searchsorted(calendar, start[:10], side="left"))
    last = int(np.searchsorted(calendar, end[:10], side="right")) - 1
    if first > last:
        raise ValueError(f"qlib data: the calendar has no trading day in [{start}, {end}] "
                         f"(it covers {calendar[0]} .. {calendar[-1]})")
    return max(first - backtrack, 0), first, last, min(last + future, len(calendar) - 1)


def _read_files(root: Path, members: dict[str, list[tuple[str, str]]], fields: tuple[str, ...], calendar: list[str],
                span: tuple[str, str]) -> dict[str, dict[str, tuple[int, np.ndarray]]]:
    """symbol -> field -> (start index, values) for every member during ``span`` that has a feature folder."""
    features = root / "features"
    if not features.is_dir():
        raise _missing(features, "features folder")
    files = {}
    for symbol in sorted(members):
        if not any(b <= span[1] and e >= span[0] for b, e in members[symbol]):
            continue  # never a member while any window is loaded
        folder = _feature_dir(features, symbol)
        if folder is None:
            continue  # no data at all: qlib leaves the instrument out
        series = {}
        for f in fields:
            path = folder / f"{f.lower()}.day.bin"
            if not path.is_file():
                raise _missing(path, f"feature file of {symbol}")
            series[f] = read_qlib_feature(path, len(calendar))
        files[symbol] = series
    return files


def _market(members: dict[str, list[tuple[str, str]]], files: dict[str, dict[str, tuple[int, np.ndarray]]],
            fields: tuple[str, ...], calendar: list[str], window: tuple[int, int, int, int], horizon: int,
            where: str) -> QlibMarket:
    """The :class:`QlibMarket` of one window ``(lo, first, last, hi)`` (calendar indices)."""
    lo, first, last, hi = window
    n = hi - lo + 1
    days = np.array(calendar[lo:hi + 1])
    keep, skipped, columns = [], [], {f: [] for f in fields}
    for symbol in sorted(members):
        member = np.zeros(n, dtype=bool)
        for b, e in members[symbol]:
            member |= (days >= b) & (days <= e)
        if not member.any():
            continue
        col = {f: np.full(n, np.nan) for f in fields}
        for f, (s0, values) in files.get(symbol, {}).items():
            a, b = max(s0, lo), min(s0 + len(values), hi + 1)  # calendar days covered by the file and the window
            if a < b:
                col[f][a - lo:b - lo] = values[a - s0:b - s0]
            col[f][~member] = np.nan
        if not any(np.isfinite(c).any() for c in col.values()):
            skipped.append(symbol)
            continue
        keep.append(symbol)
        for f in fields:
            columns[f].append(col[f])
    if not keep:
        raise FileNotFoundError(f"qlib data: no member of {where} has feature files with values in {calendar[lo]} .. "
                                f"{calendar[hi]}; expected qlib's daily layout: {QLIB_LAYOUT}")
    panel = {f: np.stack(columns[f], 1) for f in fields}
    target = forward_return(panel["close"], horizon) if n > horizon else np.full((n, len(keep)), np.nan)
    period = slice(first - lo, last - lo + 1)
    outside = np.ones(n, dtype=bool)
    outside[period] = False
    target[outside] = np.nan
    return QlibMarket(panel, target, tuple(calendar[lo:hi + 1]), tuple(keep), period, tuple(skipped))


def _load_windows(root: str | Path, pool: str, periods: list[tuple[str, str]], fields: tuple[str, ...],
                  backtrack: int, future: int, horizon: int) -> list[QlibMarket]:
    root = Path(root).expanduser()
    if not root.is_dir():
        raise _missing(root, "folder")
    if "close" not in fields:
        raise ValueError(f"fields must include 'close' (the target is built from it), got {fields!r}")
    calendar = read_qlib_calendar(root)
    members = read_qlib_instruments(root, pool)
    windows = [_window(calendar, s, e, backtrack, future) for s, e in periods]
    span = calendar[min(w[0] for w in windows)], calendar[max(w[3] for w in windows)]
    files = _read_files(root, members, fields, calendar, span)
    where = f"pool {pool!r} under {root / 'features'}"
    return [_market(members, files, fields, calendar, w, horizon, where) for w in windows]


def load_qlib_market(root: str | Path, pool: str, start: str, end: str, fields: tuple[str, ...] = FEATURES,
                     backtrack_days: int = BACKTRACK_DAYS, future_days: int = FUTURE_DAYS,
                     horizon: int = 20) -> QlibMarket:
    """The daily features of a qlib pool over ``[start, end]`` plus history and future, and the 20-day target.

    Reads qlib's binary layout (``calendars/day.txt``, ``instruments/<pool>.txt``, ``features/<symbol>/<field>
    .day.bin``; see :data:`QLIB_LAYOUT`) as the official AlphaQCM scripts get it through AlphaGen's ``StockData``
    and pyqlib: the folder the official ``data_collection/fetch_baostock_data.py`` writes
    (``AlphaQCM_data/qlib_data/cn_data_rolling``: baostock prices, forward-adjusted, ``vwap = amount / volume``)
    or qlib's own ``cn_data``. pyqlib is not needed and nothing is downloaded: missing files raise
    ``FileNotFoundError`` naming the file and the expected layout.

    As qlib gives a market's features: the stocks are the pool's members on some day of the loaded window that
    have data there, sorted by symbol; a stock's values are NaN outside its membership spans and where its file
    has no value. The window runs from ``backtrack_days`` trading days before the period's first day to
    ``future_days`` after its last (AlphaGen's 100 and 30), clipped to the calendar. The target is
    ``Ref(close, -horizon) / close - 1`` of the masked close on the period's days, NaN elsewhere.

    Args:
        root: the qlib data folder (the one holding ``calendars/``, ``instruments/``, ``features/``).
        pool: the instruments file's name (``csi300``, ``csi500``, ``all``).
        start, end: the period's first and last dates (``YYYY-MM-DD``, inclusive).
        fields: the feature files to read (default: open, close, high, low, volume, vwap; must include close).
        backtrack_days, future_days: trading days of history and future loaded around the period.
        horizon: the forward-return horizon of the target in trading days.
    """
    if min(backtrack_days, future_days) < 0 or horizon < 1:
        raise ValueError(f"backtrack_days and future_days must be >= 0 and horizon >= 1, got {backtrack_days}, "
                         f"{future_days}, {horizon}")
    return _load_windows(root, pool, [(start, end)], tuple(fields), backtrack_days, future_days, horizon)[0]


def load_paper_market(root: str | Path, pool: str = "csi300",
                      fields: tuple[str, ...] = FEATURES) -> dict[str, QlibMarket]:
    """The paper's three periods of ``pool`` (:data:`PAPER_SPLITS`: train 2010-2019, valid 2020, test 2021-2022),
    each as :func:`load_qlib_market` loads it (every file is read once)."""
    if pool not in QLIB_POOLS:
        raise ValueError(f"pool must be one of {QLIB_POOLS}, got {pool!r}")
    markets = _load_windows(root, pool, list(PAPER_SPLITS.values()), tuple(fields), BACKTRACK_DAYS, FUTURE_DAYS, 20)
    return dict(zip(PAPER_SPLITS, markets))
