"""The shared figure helpers draw exactly the claims' 95% t intervals."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

from icml25.core.paper import Summary  # noqa: E402
from icml25.core.plots import HIGHLIGHT, OTHER, mean_and_half_width, seed_bars  # noqa: E402


def test_half_width_is_the_t_interval():
    x = [1.0, 2.0, 4.0]
    expected = stats.t.ppf(0.975, 2) * np.std(x, ddof=1) / np.sqrt(3)
    assert Summary.of(x).half_width == pytest.approx(expected)
    assert Summary.of([5.0]).half_width == 0.0


def test_mean_and_half_width_skips_missing_keys():
    per_seed = [{"a": 1.0, "b": 2.0}, {"a": 3.0}]
    mean, half = mean_and_half_width(per_seed, ["a", "b", "c"])
    assert mean[0] == 2.0 and mean[1] == 2.0 and np.isnan(mean[2])
    assert half[0] == pytest.approx(stats.t.ppf(0.975, 1) * np.std([1, 3], ddof=1) / np.sqrt(2))
    assert half[1] == 0.0


def test_seed_bars_heights_colours_and_bad_labels():
    fig, ax = plt.subplots()
    per_seed = [{"x": 1.0, "y": 4.0}, {"x": 3.0, "y": 6.0}]
    bars = seed_bars(ax, per_seed, ["x", "y"], ["ours", "base"], highlight="ours", threshold=2.5)
    assert [b.get_height() for b in bars] == [2.0, 5.0]
    assert matplotlib.colors.to_hex(bars[0].get_facecolor()) == HIGHLIGHT
    assert matplotlib.colors.to_hex(bars[1].get_facecolor()) == OTHER
    assert any(np.allclose(line.get_ydata(), 2.5) for line in ax.get_lines())
    with pytest.raises(ValueError, match="labels"):
        seed_bars(ax, per_seed, ["x", "y"], ["only one"])
    plt.close(fig)
