"""Speed of icml25.common.mdp against pymdptoolbox on the same Garnet MDPs.

Run: ``python benchmarks/bench_mdp.py`` (needs ``pip install pymdptoolbox``; the
``mdptoolbox-hiive`` fork installs the same ``mdptoolbox`` module).

Fairness. Both libraries take P of shape (A, S, S) and R of shape (S, A). pymdptoolbox's
ValueIteration stops when the *span* of ``V_{k+1} - V_k`` is below
``epsilon (1 - gamma) / gamma`` (and caps iterations by a bound of its own), whereas ours
stops when the *sup-norm* residual ``||T v_k - v_k||`` is ``<= tol``. So we (1) run ours
to ``tol``, (2) make pymdptoolbox run exactly the same number of Bellman iterations
(``thresh = 0``, ``max_iter = ours``) from the same ``v0 = 0`` and time that, and
(3) also report pymdptoolbox with its own stopping rule at ``epsilon = tol``, with its
iteration count and the sup-norm residual it reaches. Policy iteration: both use exact
linear solves (pymdptoolbox ``eval_type=0``). Only ``run()`` is timed for
pymdptoolbox (its constructor's input checks are excluded); our time includes input
validation. Ours applies P as a CSR matrix when it is sparse (Garnet branching 50 of
500 states: 10% non-zeros); the column "ours dense" forces the dense path, which
does the same per-action products as pymdptoolbox. Best of ``REPEATS`` runs, the two libraries taking turns; the
whole comparison runs twice: default BLAS threading, then both limited to one thread.
"""

from __future__ import annotations

import functools
import time

import numpy as np

from icml25.common import mdp as mdp_module
from icml25.common.mdp import bellman_optimality, garnet_mdp, policy_iteration, value_iteration

N_STATES, N_ACTIONS, BRANCHING = 500, 10, 50
GAMMAS = (0.9, 0.99)
TOL = 1e-6
N_MDPS = 2
REPEATS = 3


def interleaved(fns):
    """Best-of-REPEATS time of each ``fn() -> (seconds, result)``, the functions taking turns."""
    best = [np.inf] * len(fns)
    results = [None] * len(fns)
    for _ in range(REPEATS):
        for j, fn in enumerate(fns):
            dt, results[j] = fn()
            best[j] = min(best[j], dt)
    return best, results


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def toolbox_vi(P, R, gamma, epsilon, iterations=None):
    from mdptoolbox.mdp import ValueIteration

    vi = ValueIteration(P, R, gamma, epsilon=epsilon)
    if iterations is not None:  # same number of iterations as ours, no early stop
        vi.max_iter, vi.thresh = iterations, 0.0
    t = time.perf_counter()
    vi.run()
    return time.perf_counter() - t, vi


def toolbox_pi(P, R, gamma):
    from mdptoolbox.mdp import PolicyIteration

    pi = PolicyIteration(P, R, gamma, eval_type=0)
    t = time.perf_counter()
    pi.run()
    return time.perf_counter() - t, pi


def dense_value_iteration(P, r, gamma):
    """Our VI with the sparse path switched off (dense per-action products, as pymdptoolbox)."""
    saved, mdp_module.SPARSE_DENSITY = mdp_module.SPARSE_DENSITY, 0.0
    try:
        return value_iteration(P, r, gamma, tol=TOL)
    finally:
        mdp_module.SPARSE_DENSITY = saved


def sup_residual(P, r, v, gamma):
    Tv, _ = bellman_optimality(P, r, v, gamma)
    return float(np.max(np.abs(Tv - v)))


def main() -> None:
    from threadpoolctl import threadpool_limits

    for threads in (None, 1):
        label = "default BLAS threads" if threads is None else "BLAS limited to 1 thread (both libraries)"
        print(f"\n== {label} ==")
        with threadpool_limits(limits=threads):
            compare()


def compare() -> None:
    try:
        import mdptoolbox  # noqa: F401
    except ImportError:
        raise SystemExit("needs pymdptoolbox: pip install pymdptoolbox") from None
    print(f"Garnet S={N_STATES} A={N_ACTIONS} branching={BRANCHING}, tol={TOL:g}, {N_MDPS} MDPs, best of {REPEATS}")
    header = ("gamma", "mdp", "VI iters", "ours s", "ours dense s", "toolbox s (same iters)", "ratio toolbox/ours",
              "toolbox own-rule iters", "its sup residual", "PI ours s", "PI toolbox s", "PI ratio")
    print(" | ".join(header))
    ratios_vi, ratios_pi, ratios_dense = [], [], []
    for gamma in GAMMAS:
        for i in range(N_MDPS):
            P, r = garnet_mdp(N_STATES, N_ACTIONS, BRANCHING, seed=i)
            n_iter = value_iteration(P, r, gamma, tol=TOL).n_iter
            (t_ours, t_dense, t_tb), (ours, _, tb) = interleaved([
                functools.partial(timed, functools.partial(value_iteration, P, r, gamma, tol=TOL)),
                functools.partial(timed, functools.partial(dense_value_iteration, P, r, gamma)),
                functools.partial(toolbox_vi, P, r, gamma, TOL, iterations=n_iter),
            ])
            assert tb.iter == ours.n_iter
            # ours reports v_K with residual <= tol; the toolbox's V after K updates is T v_{K-1} = v_K's successor
            np.testing.assert_allclose(np.asarray(tb.V), value_iteration(P, r, gamma, tol=1e-300,
                                                                         max_iter=ours.n_iter + 1).v, atol=1e-9)
            _, tb_own = toolbox_vi(P, r, gamma, TOL)
            res_own = sup_residual(P, r, np.asarray(tb_own.V), gamma)
            (t_pi, t_pi_tb), (pi, pi_tb) = interleaved([
                functools.partial(timed, functools.partial(policy_iteration, P, r, gamma)),
                functools.partial(toolbox_pi, P, r, gamma),
            ])
            np.testing.assert_allclose(np.asarray(pi_tb.V), pi.v, atol=1e-8)
            ratios_vi.append(t_tb / t_ours)
            ratios_pi.append(t_pi_tb / t_pi)
            ratios_dense.append(t_tb / t_dense)
            print(f"{gamma} | {i} | {ours.n_iter} | {t_ours:.3f} | {t_dense:.3f} | {t_tb:.3f} | {t_tb / t_ours:.2f} | "
                  f"{tb_own.iter} | {res_own:.2e} | {t_pi:.3f} | {t_pi_tb:.3f} | {t_pi_tb / t_pi:.2f}")
    print(f"geometric-mean time ratio toolbox/ours: VI {np.exp(np.mean(np.log(ratios_vi))):.2f}, "
          f"VI with our dense path {np.exp(np.mean(np.log(ratios_dense))):.2f}, "
          f"PI {np.exp(np.mean(np.log(ratios_pi))):.2f} (> 1 means ours is faster)")


if __name__ == "__main__":
    main()
