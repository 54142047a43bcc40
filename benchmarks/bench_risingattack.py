"""RisingAttacK (K = 1, targeted) against torchattacks' C&W and PGD-L2 on the same model and images, in one run.

The peer library has no ordered top-K attack, so the comparison is at K = 1 (one target class per image), where
each method is a standard targeted attack. Same trained CNN (the ``templates100`` experiment's quick settings:
100 classes of 16 x 16 template images), the same 50 correctly classified test images and the same random target
per image. Reported per method: targeted success rate, mean l2 norm of the successful perturbations, and
wall time per image (one thread). RisingAttacK runs at its reproduction settings (margin 0.2, at most 30 SQP
steps); torchattacks' C&W at c = 1 and 10, kappa = 0, lr 0.01 and 100 steps (its defaults but the step count), PGD-L2 at
eps 1 and 4 with 30 steps of 0.2 eps. C&W also at c = 10 (at c = 1 it rarely reaches the target
in 100 steps on this model).

Run: ``python benchmarks/bench_risingattack.py`` (needs the bench extra for torchattacks).
"""

from __future__ import annotations

import time

import torch

from icml25.papers.risingattack import RisingAttack
from icml25.papers.risingattack.data import SmallCNN, attack_set, template_dataset, train_classifier
from icml25.papers.risingattack.repro import TemplatesConfig


def _report(name: str, x: torch.Tensor, x_adv: torch.Tensor, success: torch.Tensor, seconds: float) -> None:
    norms = (x_adv - x).flatten(1).norm(dim=1)
    ok = success.bool()
    mean_l2 = float(norms[ok].mean()) if ok.any() else float("nan")
    print(f"{name:28s} success {float(ok.float().mean()):5.2f}   mean l2 (successes) {mean_l2:6.3f}   "
          f"{1e3 * seconds / x.shape[0]:8.1f} ms/image")


def main(n_images: int = 50, seed: int = 0) -> None:
    import torchattacks

    torch.set_num_threads(1)
    cfg = TemplatesConfig()
    torch.manual_seed(seed)
    X, y = template_dataset(cfg.n_classes, cfg.size, cfg.n_train_per_class + cfg.n_test_per_class, cfg.noise,
                            cfg.smooth, seed=seed)
    n_train = cfg.n_classes * cfg.n_train_per_class
    model = SmallCNN((1, cfg.size, cfg.size), cfg.n_classes, cfg.width, cfg.feat_dim)
    train_classifier(model, X[:n_train], y[:n_train], cfg.epochs, seed=seed)
    x, _, targets = attack_set(model, X[n_train:], y[n_train:], n_images, cfg.n_classes, 1, seed)
    target = targets[:, 0]

    def hits(x_adv: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(x_adv).argmax(1) == target

    start = time.perf_counter()
    x_adv, info = RisingAttack(model, K=1, margin=cfg.margin, max_iter=cfg.max_iter)(x, targets[:, :1])
    _report("icml25 RisingAttacK (K=1)", x, x_adv, hits(x_adv), time.perf_counter() - start)

    peers = {f"torchattacks CW (c={c:g})": torchattacks.CW(model, c=c, kappa=0.0, steps=100, lr=0.01)
             for c in (1.0, 10.0)}
    for eps in (1.0, 4.0):
        peers[f"torchattacks PGDL2 (eps={eps:g})"] = torchattacks.PGDL2(model, eps=eps, alpha=0.2 * eps, steps=30,
                                                                        random_start=False)
    for name, attack in peers.items():
        attack.set_mode_targeted_by_function(lambda images, labels: target)
        start = time.perf_counter()
        x_adv = attack(x, y[n_train:][:0].new_zeros(x.shape[0]))  # labels are unused in targeted mode
        _report(name, x, x_adv, hits(x_adv), time.perf_counter() - start)


if __name__ == "__main__":
    main()
