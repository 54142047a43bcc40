"""alphaqcm: a qlib data folder in qlib's binary daily layout (as qlib's ``dump_bin.py`` and the official
``data_collection/fetch_baostock_data.py`` write it): ``calendars/day.txt``, ``instruments/{csi300,csi500,all}.txt``
(``SYMBOL<tab>start<tab>end``), ``features/<symbol lower case>/<field>.day.bin`` (little-endian float32: the calendar
index of the first value, then the daily values)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

FIELDS = ("open", "close", "high", "low", "volume", "vwap")

MEMBERS = {  # the csi300 file: symbol -> membership spans (two lines for SH600004)
    "SH600000": [("2005-04-08", "2099-12-31")],
    "SH600004": [("2006-01-01", "2014-06-30"), ("2017-01-01", "2099-12-31")],
    "SH600009": [("2005-04-08", "2099-12-31")],  # listed (its files start) in 2011
    "SH600010": [("2005-04-08", "2099-12-31")],  # no feature folder: left out, as qlib does
    "SZ000001": [("2005-04-08", "2099-12-31")],
    "SZ000002": [("2012-01-01", "2099-12-31")],  # joins in 2012 (its files start in 2007)
    "SZ000063": [("2005-04-08", "2006-06-30")],  # a member only before the calendar: never loaded
    "SZ000069": [("2005-04-08", "2099-12-31")],
}
LISTED = {"SH600009": "2011-03-01"}
"""First day of a stock's files when not the calendar's first."""
NO_FILES = ("SH600010",)


def weekly_calendar(first: str = "2007-01-01", last: str = "2023-06-30") -> list[str]:
    """A short calendar: every Monday from ``first`` to ``last`` (qlib's are daily; the layout is the same)."""
    days = np.arange(np.datetime64(first), np.datetime64(last) + 1)
    return [str(d) for d in days if d.astype("datetime64[D]").astype(object).weekday() == 0]


def write_feature(path: Path, start: int, values: np.ndarray) -> None:
    """One ``<field>.day.bin`` as ``dump_bin`` writes it: ``np.hstack([start, values]).astype("<f")``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.hstack([start, values]).astype("<f").tofile(str(path))


def write_qlib_folder(folder: Path, seed: int = 0) -> dict:
    """Write the folder; returns ``{"calendar": [...], symbol: {"start": index, field: float32 values}}`` for every
    symbol with files (random-walk prices, volumes ~1e6, vwap between low and high)."""
    rng = np.random.default_rng(seed)
    calendar = weekly_calendar()
    (folder / "calendars").mkdir(parents=True, exist_ok=True)
    (folder / "calendars" / "day.txt").write_text("\n".join(calendar) + "\n")
    (folder / "instruments").mkdir(exist_ok=True)
    lines = [f"{s}\t{b}\t{e}" for s, spans in MEMBERS.items() for b, e in spans]
    (folder / "instruments" / "csi300.txt").write_text("\n".join(lines) + "\n")
    (folder / "instruments" / "csi500.txt").write_text("\n".join(lines[-3:]) + "\n")
    written: dict = {"calendar": calendar}
    all_lines = []
    for symbol in MEMBERS:
        if symbol in NO_FILES:
            continue
        start = int(np.searchsorted(calendar, LISTED.get(symbol, calendar[0])))
        n = len(calendar) - start
        close = 10.0 * np.exp(np.cumsum(0.03 * rng.standard_normal(n)))
        opn = close * np.exp(0.01 * rng.standard_normal(n))
        high = np.maximum(opn, close) * np.exp(np.abs(0.01 * rng.standard_normal(n)))
        low = np.minimum(opn, close) * np.exp(-np.abs(0.01 * rng.standard_normal(n)))
        volume = np.round(np.exp(rng.normal(13.8, 0.5, n)))
        vwap = low + (high - low) * rng.uniform(0.2, 0.8, n)
        series = dict(zip(FIELDS, (opn, close, high, low, volume, vwap)))
        written[symbol] = {"start": start, **{f: v.astype("<f") for f, v in series.items()}}
        for f, v in series.items():
            write_feature(folder / "features" / symbol.lower() / f"{f}.day.bin", start, v)
        all_lines.append(f"{symbol}\t{calendar[start]}\t{calendar[-1]}")
    (folder / "instruments" / "all.txt").write_text("\n".join(all_lines) + "\n")
    return written


def _paper_data(folder: Path) -> dict[str, str]:
    write_qlib_folder(folder)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
