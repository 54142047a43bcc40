"""Speed of PAS against the ppi-python baseline, in one run, on m = 1000 problems.

ppi-python (``ppi_py``) estimates one problem at a time, so the natural way for a user to
get per-problem PPI++ means is a loop over problems. We time:

* ``ppi_py loop``: ``ppi_py.ppi_mean_pointestimate`` (lambda tuned) for each problem;
* ``icml25 PT-PPI``: our vectorised per-problem PPI++ (same estimates up to ppi_py's
  1/n vs 1/(n-1) covariance convention);
* ``icml25 PAS``: the whole PAS estimator (PT-PPI + CURE tuning of omega).

Run: ``python benchmarks/bench_pas.py`` (needs the dev extra for ppi-python).
"""

from __future__ import annotations

import time

import numpy as np

from icml25.papers.pas import gaussian_synthetic, pas_mean_pointestimate, pt_ppi_mean_pointestimate


def best_of(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(m: int = 1000, n: int = 20, N: int = 80) -> None:
    import ppi_py

    data = gaussian_synthetic(m=m, n=n, N=N, good_predictor=False, seed=0)
    args = data.arrays

    def ppi_loop():
        return np.array([float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, fl, fu))) for y, fl, fu in zip(*args)])

    t_ppi = best_of(ppi_loop, repeats=3)
    t_pt = best_of(lambda: pt_ppi_mean_pointestimate(*args))
    t_pas = best_of(lambda: pas_mean_pointestimate(*args))
    # sanity: the two PPI++ computations agree up to the covariance convention
    gap = np.max(np.abs(ppi_loop() - pt_ppi_mean_pointestimate(*args)))
    print(f"m={m} problems, n={n} labelled and N={N} unlabelled points each (best of repeats)")
    print(f"  ppi_py loop (PPI++ per problem): {t_ppi * 1e3:9.2f} ms")
    print(f"  icml25 PT-PPI (vectorised)     : {t_pt * 1e3:9.2f} ms   ratio ppi_py/ours = {t_ppi / t_pt:7.1f}x")
    print(f"  icml25 PAS (PT-PPI + CURE)     : {t_pas * 1e3:9.2f} ms   ratio ppi_py/ours = {t_ppi / t_pas:7.1f}x")
    print(f"  max |ppi_py - ours| over problems: {gap:.2e} (1/n vs 1/(n-1) covariance in lambda)")


if __name__ == "__main__":
    main()
