"""AlphaQCM: the paper's China A-share data read from a qlib data folder (``load_qlib_market``,
``load_paper_market``) and the ``paper_data`` experiment's ``data_dir`` / ``pool`` settings.

Every fixture is written into ``tmp_path`` in qlib's binary daily layout, as qlib's ``dump_bin.py`` writes it
(checked against microsoft/qlib's ``qlib/data/storage/file_storage.py`` and the official AlphaQCM
``data_collection/qlib_dump_bin.py``): ``calendars/day.txt``, ``instruments/<pool>.txt`` (``SYMBOL<tab>start<tab>
end``, one line per membership span), ``features/<symbol lower case>/<field>.day.bin`` (little-endian float32, the
first value the calendar index of the series' first day). The expected panels are written out by hand (a 12-day
folder) or rebuilt from the writer's arrays (``tests/paper_files/alphaqcm.py``, the suite's batteries' folder) with
the documented rules: values outside a stock's membership are NaN, the window runs 100 trading days before and 30
after each period (clipped to the calendar), the target is Ref(close, -20) / close - 1 on the period's days only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from icml25.common.checks import ConfigError
from icml25.papers.alphaqcm import (
    PAPER_SPLITS,
    QLIB_POOLS,
    AlphaEnv,
    AlphaPool,
    AlphaQCMConfig,
    evaluate_rpn,
    load_paper_market,
    load_qlib_market,
    normalize_by_day,
    parse_rpn,
    random_search,
    reduced_token_set,
)
from icml25.papers.alphaqcm.data import read_qlib_feature
from icml25.papers.alphaqcm.repro import EXPERIMENTS, PaperDataConfig, SyntheticSearchConfig
from paper_files.alphaqcm import FIELDS, LISTED, MEMBERS, NO_FILES, write_feature, write_qlib_folder

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


# ----------------------------------------------------------------------------- a 12-day folder, by hand
def _tiny(root: Path) -> None:
    """Calendar 2020-01-01..12 (indices 0..11); SH600000 a member throughout with close = day index + 1;
    SZ000001 listed on day 2 (close 10.5, 20.5, ...) and out of the pool from 2020-01-05 to 2020-01-07;
    SH600001 a member only in 2019; SZ000009 a member without files."""
    (root / "calendars").mkdir(parents=True)
    (root / "calendars" / "day.txt").write_text("\n".join(f"2020-01-{d:02d}" for d in range(1, 13)) + "\n")
    (root / "instruments").mkdir()
    (root / "instruments" / "csi300.txt").write_text(
        "SH600000\t2020-01-01\t2020-01-12\nSZ000001\t2020-01-01\t2020-01-04\nSZ000001\t2020-01-08\t2099-12-31\n"
        "SH600001\t2019-01-01\t2019-12-31\nSZ000009\t2020-01-01\t2020-01-12\n")
    for j, f in enumerate(FIELDS):
        write_feature(root / "features" / "sh600000" / f"{f}.day.bin", 0, np.arange(1.0, 13.0) + 100 * j)
        write_feature(root / "features" / "sz000001" / f"{f}.day.bin", 2, 10.0 * np.arange(1, 11) + 0.5 + 100 * j)
        write_feature(root / "features" / "sh600001" / f"{f}.day.bin", 0, np.ones(12))


def test_feature_file_is_read_as_qlib_writes_it(tmp_path):
    _tiny(tmp_path)
    raw = (tmp_path / "features" / "sz000001" / "close.day.bin").read_bytes()
    assert len(raw) == 4 * 11 and np.frombuffer(raw[:4], "<f4")[0] == 2.0  # the start index, then 10 values
    start, values = read_qlib_feature(tmp_path / "features" / "sz000001" / "close.day.bin", 12)
    assert start == 2 and values.dtype == np.float32
    assert values.tolist() == [110.5, 120.5, 130.5, 140.5, 150.5, 160.5, 170.5, 180.5, 190.5, 200.5]


def test_tiny_market_values_membership_window_and_target_by_hand(tmp_path):
    _tiny(tmp_path)
    m = load_qlib_market(tmp_path, "csi300", "2020-01-05", "2020-01-08", backtrack_days=2, future_days=3, horizon=2)
    # period: days 4..7; window: 2 days before (from index 2) and 3 after (to index 10)
    assert m.dates == tuple(f"2020-01-{d:02d}" for d in range(3, 12))
    assert m.period == slice(2, 6)
    assert m.symbols == ("SH600000", "SZ000001") and m.skipped == ("SZ000009",)  # SH600001: not a member then
    nan = np.nan
    np.testing.assert_array_equal(m.panel["close"][:, 0], np.arange(3.0, 12.0) + 100)
    np.testing.assert_array_equal(m.panel["close"][:, 1], [110.5, 120.5, nan, nan, nan, 160.5, 170.5, 180.5, 190.5])
    np.testing.assert_array_equal(m.panel["open"][:, 1], [10.5, 20.5, nan, nan, nan, 60.5, 70.5, 80.5, 90.5])
    np.testing.assert_array_equal(m.panel["vwap"][:, 0], np.arange(3.0, 12.0) + 500)
    assert set(m.panel) == set(FIELDS) and all(v.shape == (9, 2) and v.dtype == np.float64 for v in m.panel.values())
    # target Ref(close, -2) / close - 1 on the period's rows 2..5 only
    expected = np.full((9, 2), nan)
    expected[2:6, 0] = [107 / 105 - 1, 108 / 106 - 1, 109 / 107 - 1, 110 / 108 - 1]
    expected[5, 1] = 180.5 / 160.5 - 1  # rows 2-4 of SZ000001 need a close outside its membership
    np.testing.assert_allclose(m.target, expected, rtol=0, atol=1e-15)
    assert np.array_equal(np.isnan(m.target), np.isnan(expected))


def test_window_is_clipped_to_the_calendar_and_folders_are_found_in_any_case(tmp_path):
    _tiny(tmp_path)
    (tmp_path / "features" / "sh600000").rename(tmp_path / "features" / "SH600000")  # qlib tries both cases
    m = load_qlib_market(tmp_path, "csi300", "2020-01-02", "2020-01-11", backtrack_days=5, future_days=10, horizon=2)
    assert m.dates[0] == "2020-01-01" and m.dates[-1] == "2020-01-12" and m.period == slice(1, 11)
    np.testing.assert_array_equal(m.panel["close"][:, 0], np.arange(101.0, 113.0))
    assert np.isnan(m.target[[0, 11]]).all() and np.isnan(m.target[10:]).all()  # no close 2 days after day 10
    assert m.target[1, 0] == pytest.approx(104 / 102 - 1)
    # the dates snap to trading days: the first on or after start, the last on or before end
    same = load_qlib_market(tmp_path, "csi300", "2019-12-25", "2020-01-11", backtrack_days=0, future_days=0)
    assert same.dates[same.period][0] == "2020-01-01" and same.dates[-1] == "2020-01-11"


@pytest.mark.parametrize("remove, match", [
    ("calendars/day.txt", "calendar .*calendars/day.txt not found; expected qlib's daily layout"),
    ("instruments/csi300.txt", "instruments file of pool 'csi300' .*instruments/csi300.txt not found"),
    ("features/sz000001/vwap.day.bin", "feature file of SZ000001 .*sz000001/vwap.day.bin not found"),
    ("features", "features folder .*features not found"),
])
def test_a_missing_file_raises_one_error_naming_it(tmp_path, remove, match):
    _tiny(tmp_path)
    path = tmp_path / remove
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    with pytest.raises(FileNotFoundError, match=match):
        load_qlib_market(tmp_path, "csi300", "2020-01-05", "2020-01-08")


def test_bad_folders_and_files_raise(tmp_path):
    with pytest.raises(FileNotFoundError, match="folder .*nowhere not found"):
        load_paper_market(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="pool must be one of"):
        load_paper_market(tmp_path, "csi100")
    _tiny(tmp_path)
    with pytest.raises(ValueError, match="no trading day in"):
        load_qlib_market(tmp_path, "csi300", "2021-01-01", "2021-12-31")
    with pytest.raises(ValueError, match="must include 'close'"):
        load_qlib_market(tmp_path, "csi300", "2020-01-05", "2020-01-08", fields=("open",))
    bad = tmp_path / "features" / "sh600000" / "close.day.bin"
    bad.write_bytes(b"\x00" * 7)
    with pytest.raises(ValueError, match="close.day.bin must hold float32 values"):
        load_qlib_market(tmp_path, "csi300", "2020-01-05", "2020-01-08")
    write_feature(bad, 9, np.arange(5.0))  # days 9..13 of a 12-day calendar
    with pytest.raises(ValueError, match="outside the calendar's 12 days"):
        load_qlib_market(tmp_path, "csi300", "2020-01-05", "2020-01-08")
    for folder in ("sh600000", "sz000001"):
        shutil.rmtree(tmp_path / "features" / folder)
    with pytest.raises(FileNotFoundError, match="no member of pool 'csi300' under .*features has feature files"):
        load_qlib_market(tmp_path, "csi300", "2020-01-05", "2020-01-08")
    (tmp_path / "calendars" / "day.txt").write_text("2020-01-02\n2020-01-01\n")
    with pytest.raises(ValueError, match="strictly increasing"):
        load_qlib_market(tmp_path, "csi300", "2020-01-01", "2020-01-02")


# ----------------------------------------------------------------------------- the paper's periods
def _expected_column(written: dict, symbol: str, field: str, days: np.ndarray) -> np.ndarray:
    """A stock's values on calendar indices ``days``: the file's value where it has one and the stock is a member."""
    calendar = written["calendar"]
    out = np.full(len(days), np.nan)
    if symbol not in written:
        return out
    start, values = written[symbol]["start"], written[symbol][field]
    for k, d in enumerate(days):
        member = any(b <= calendar[d] <= e for b, e in MEMBERS[symbol])
        if member and start <= d < start + len(values):
            out[k] = float(values[d - start])
    return out


def test_paper_periods_windows_and_values_of_the_writers_folder(tmp_path):
    written = write_qlib_folder(tmp_path)
    calendar = written["calendar"]
    markets = load_paper_market(tmp_path, "csi300")
    assert list(markets) == ["train", "valid", "test"] and PAPER_SPLITS["test"] == ("2021-01-01", "2022-12-31")
    firsts = {"train": "2010-01-04", "valid": "2020-01-06", "test": "2021-01-04"}  # first Mondays on/after start
    lasts = {"train": "2019-12-30", "valid": "2020-12-28", "test": "2022-12-26"}  # last Mondays on/before end
    for split, m in markets.items():
        first, last = calendar.index(firsts[split]), calendar.index(lasts[split])
        lo, hi = first - 100, min(last + 30, len(calendar) - 1)  # the test window is clipped to the calendar end
        assert m.dates == tuple(calendar[lo:hi + 1])
        assert m.period == slice(first - lo, last - lo + 1) and m.dates[m.period][0] == firsts[split]
        kept = tuple(s for s in sorted(MEMBERS) if s not in NO_FILES and s != "SZ000063")
        assert m.symbols == kept and m.skipped == NO_FILES
        days = np.arange(lo, hi + 1)
        for f in FIELDS:
            expected = np.stack([_expected_column(written, s, f, days) for s in kept], 1)
            np.testing.assert_array_equal(m.panel[f], expected)
        close = m.panel["close"]
        target = np.full_like(close, np.nan)
        target[m.period] = close[m.period.start + 20:m.period.stop + 20] / close[m.period] - 1
        np.testing.assert_array_equal(m.target, target)
    assert markets["test"].dates[-1] == calendar[-1] and markets["test"].period.stop + 30 > len(markets["test"].dates)
    train = markets["train"]
    # the membership gaps, by date: SH600004 out from 2014-07-01 to 2016-12-31, SZ000002 in from 2012, SH600009 listed
    col = {s: k for k, s in enumerate(train.symbols)}
    date = {d: k for k, d in enumerate(train.dates)}
    assert np.isnan(train.panel["close"][date["2014-07-07"]:date["2016-12-26"] + 1, col["SH600004"]]).all()
    assert np.isfinite(train.panel["close"][[date["2014-06-30"], date["2017-01-02"]], col["SH600004"]]).all()
    assert np.isnan(train.panel["vwap"][:date["2011-12-26"] + 1, col["SZ000002"]]).all()
    assert np.isfinite(train.panel["vwap"][date["2012-01-02"]:, col["SZ000002"]]).all()
    assert np.isnan(train.panel["low"][:date["2011-02-28"] + 1, col["SH600009"]]).all()
    assert train.panel["low"][date["2011-03-07"], col["SH600009"]] == written["SH600009"]["low"][0]
    assert LISTED["SH600009"] == "2011-03-01"
    # other pools: csi500 is the last three lines; all lists every stock with files over its listing
    assert load_paper_market(tmp_path, "csi500")["valid"].symbols == ("SZ000002", "SZ000069")
    assert "SZ000063" in load_paper_market(tmp_path, "all")["train"].symbols


# ----------------------------------------------------------------------------- the paper_data experiment
def _paper_data():
    return next(e for e in EXPERIMENTS if e.name == "paper_data")


def test_paper_data_experiment_holds_the_data_setting_and_the_stand_in_does_not(tmp_path):
    exp = _paper_data()
    assert exp.data_setting == "data_dir" and exp.missing_data(exp.make_config("smoke"))
    assert not exp.missing_data(exp.make_config("smoke", {"data_dir": str(tmp_path)}))
    assert not hasattr(SyntheticSearchConfig(), "data_dir") and not hasattr(SyntheticSearchConfig(), "instruments")
    assert PaperDataConfig().data_dir == "" and PaperDataConfig().instruments == "csi300" and QLIB_POOLS[0] == "csi300"
    assert [exp.fidelity[p].level for p in ("smoke", "quick", "full")] == ["mechanism", "reduced", "reduced"]
    assert "2M of the official 2M env steps" in exp.fidelity["full"].note


def test_paper_data_config_errors_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match="PaperDataConfig.data_dir must be an existing qlib data folder"):
        PaperDataConfig(data_dir=str(tmp_path / "missing")).validate()
    with pytest.raises(ConfigError, match="instruments"):
        PaperDataConfig(data_dir=str(tmp_path), instruments="csi100").validate()
    PaperDataConfig(data_dir=str(tmp_path), instruments="all").validate()  # an existing folder is all validate() checks


def test_paper_data_runs_the_official_recipe():
    cfg = _paper_data().make_config("full")
    assert (cfg.env_steps, cfg.capacity, cfg.max_len, cfg.reduced_tokens, cfg.l1_alpha) == (2_000_000, 20, 20,
                                                                                             False, 5e-3)
    assert cfg.agent == AlphaQCMConfig() and cfg.agent.std_lam == 1.0
    a = cfg.agent  # qcm_config/qrdqn.yaml
    assert (a.n_quantiles, a.lr, a.batch_size, a.memory_size, a.multi_step, a.gamma) == (200, 5e-5, 128, 100_000, 3,
                                                                                          1.0)
    assert (a.learning_starts, a.target_update, a.eps_decay_steps, a.update_every, a.use_per) == (10_000, 5_000,
                                                                                                   25_000, 1, True)
    assert _paper_data().make_config("quick") == cfg and _paper_data().seeds == {"smoke": 1, "quick": 3, "full": 5}


def test_paper_data_smoke_runs_end_to_end_and_its_ics_are_rederived(tmp_path):
    write_qlib_folder(tmp_path)
    exp = _paper_data()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    m = exp.run(cfg, seed=0)
    assert all(np.isfinite(v) for v in m.values())
    # determined by the folder: 6 stocks with data; 522 / 52 / 104 Mondays in the three periods
    assert [m[f"n_stocks_{s}"] for s in PAPER_SPLITS] == [6.0, 6.0, 6.0]
    assert [m[f"n_days_{s}"] for s in PAPER_SPLITS] == [522.0, 52.0, 104.0]
    assert m["evaluations_random"] == m["evaluations_alphaqcm"] > 0
    assert m["qcm_minus_lam0"] == m["test_ic_alphaqcm"] - m["test_ic_lam0"]
    assert m["qcm_minus_random_train_ic"] == m["train_ic_alphaqcm"] - m["train_ic_random"]
    # the random arm again, by hand: its pool on the train period, then the daily Pearson IC of the weighted z-scored
    # members with the target over the valid / test periods' days only
    markets = load_paper_market(tmp_path, "csi300")
    tokens = reduced_token_set()
    train = markets["train"]
    assert np.isnan(train.target[:train.period.start]).all() and np.isnan(train.target[train.period.stop:]).all()
    pool = AlphaPool(cfg.capacity, train.target, l1_alpha=cfg.l1_alpha, tokens=tokens)
    random_search(AlphaEnv(pool, train.panel, tokens, cfg.max_len), int(m["evaluations_random"]), seed=0)
    assert pool.ic == m["train_ic_random"] and len(pool.exprs) > 0
    for split in ("valid", "test"):
        mk = markets[split]
        combo = sum(w * normalize_by_day(evaluate_rpn(parse_rpn(e, tokens), tokens, mk.panel))
                    for w, e in zip(pool.weights, pool.exprs))
        ics = []
        for t in range(mk.period.start, mk.period.stop):
            ok = np.isfinite(mk.target[t])
            if ok.sum() >= 2 and np.std(combo[t, ok]) > 0:
                ics.append(np.corrcoef(combo[t, ok], mk.target[t, ok])[0, 1])
        assert m[f"{split}_ic_random"] == pytest.approx(np.mean(ics), rel=1e-9, abs=1e-12)


def test_paper_data_figure_has_its_own_file(tmp_path):
    pytest.importorskip("matplotlib")
    exp = _paper_data()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    per_seed = [{f"{s}_ic_{k}": 0.05 + 0.01 * i for s in ("valid", "test") for k in ("alphaqcm", "lam0", "random")}
                for i in range(2)]
    paths = exp.figures(per_seed, cfg, tmp_path)
    assert [p.name for p in paths] == ["paper_data_ic.png"] and paths[0].is_file()
    assert "alphaqcm_test_ic.png" not in [p.name for p in paths]
