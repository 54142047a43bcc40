"""Primphormer's GPS layer against PyG's ``GPSConv`` with full softmax and Performer attention.

One GPS layer (GINE local MPNN + global attention), width 64, 4 heads (Primphormer rank 16), on
one Erdos-Renyi graph of mean degree 10 with N = 4k, 16k, 64k nodes; forward pass under
``torch.no_grad()`` on one CPU thread; time = best of 2 passes; peak memory = rise of the
process's peak RSS over its RSS before the passes, each layer measured in a fresh process (see
``icml25.papers.primphormer.scaling``). Sizes whose quadratic projection from the previous
size exceeds ``--memory-cap-gb`` (default 3 GB: this machine is shared) or ``--time-cap-s`` are
not run and printed as projections, marked ``~``.

Run: ``python benchmarks/bench_primphormer.py [--sizes 4000,16000,64000] [--memory-cap-gb 3]``
"""

from __future__ import annotations

import argparse

from icml25.papers.primphormer.scaling import measure

LABELS = {"primphormer": "Primphormer (ours)", "multihead": "GPSConv multihead", "performer": "GPSConv performer"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4000,16000,64000")
    parser.add_argument("--memory-cap-gb", type=float, default=3.0)
    parser.add_argument("--time-cap-s", type=float, default=60.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for method, label in LABELS.items():
        out = measure(method, sizes, dim=64, heads=4, rank=16, avg_degree=10.0, repeats=2, seed=0,
                      memory_cap_gb=args.memory_cap_gb, time_cap_s=args.time_cap_s)
        cells = []
        for sec, mb, ran in zip(out["seconds"], out["peak_mb"], out["measured"]):
            mark = "" if ran else "~"
            cells.append(f"{mark}{sec:.3g} s / {mark}{mb:.4g} MB")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    print("| layer | " + " | ".join(f"N = {n:,}" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    print("\n".join(rows))
    print("\n~ = not run: projected from the last two measured sizes (growth exponent in [1, 2]) beyond the cap")


if __name__ == "__main__":
    main()
