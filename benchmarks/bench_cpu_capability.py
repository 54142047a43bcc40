"""How much do verdicts depend on torch's CPU kernels? The same quick runs under two capabilities.

Torch picks its CPU kernels by the processor (``AVX512``, ``AVX2``, ``DEFAULT``), so the same code and seeds
can give torch-based metrics that differ in their last digits between machines, and a claim whose interval
ends near a boundary can change verdict. This benchmark runs ``icml25 reproduce ROWS --preset quick`` twice,
with the machine's own kernels and with ``ATEN_CPU_CAPABILITY=default``, each into its own results store,
and prints, claim by claim, both verdicts and means, then how many verdicts differ.

    python benchmarks/bench_cpu_capability.py                       # ibfs mats single_transformer_lmm
    python benchmarks/bench_cpu_capability.py --rows mats --native-home .icml25   # reuse a store's native run
    python benchmarks/bench_cpu_capability.py --seeds 3          # every experiment at 3 seeds (about half the cost)

It is a measurement, not a test: it takes the quick preset's time twice (about 15-30 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_ROWS = ("ibfs", "mats", "downstream_free_energy")


def run(rows: list[str], home: Path, capability: str | None, out: Path, jobs: int, seeds: int | None) -> dict:
    env = {**os.environ, "ICML25_HOME": str(home)}
    env.pop("ATEN_CPU_CAPABILITY", None)
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    cmd = [sys.executable, "-m", "icml25.cli", "reproduce", *rows, "--preset", "quick", "--jobs", str(jobs),
           "--json", str(out), "--reports", str(out.parent / f"reports-{capability or 'native'}")]
    if seeds is not None:  # a fixed number of seeds for both runs (one look), to halve the cost
        cmd += ["--seeds", str(seeds), "--max-seeds", str(seeds)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def claims(payload: dict) -> dict[tuple[str, str], dict]:
    return {(slug, c["claim"]): c for slug, paper in payload["papers"].items() for c in paper["claims"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=list(DEFAULT_ROWS))
    parser.add_argument("--native-home", type=Path, default=None,
                        help="a results store that already holds the native run (it is reused, not recomputed)")
    parser.add_argument("--lower", default="default", help="the lower capability (default: default)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=None,
                        help="run every experiment at exactly this many seeds (default: the quick preset's adaptive "
                             "seeds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        native_home = args.native_home or tmp_path / "native"
        native = claims(run(args.rows, native_home, None, tmp_path / "native.json", args.jobs, args.seeds))
        lower = claims(run(args.rows, tmp_path / "lower", args.lower, tmp_path / "lower.json", args.jobs,
                           args.seeds))
    machine = sorted({str(c.get("machine", {}).get("torch_cpu_capability", "?")) for c in native.values()})
    print(f"{'claim':<52} {'native (' + '/'.join(machine) + ')':<32} {args.lower:<32}")
    differ = 0
    for key in sorted(native):
        a, b = native[key], lower.get(key, {})
        mark = ""
        if a.get("verdict") != b.get("verdict"):
            differ += 1
            mark = "  <- differs"
        def fmt(c: dict) -> str:
            value = f"{c['mean']:.6g}" if c.get("mean") is not None else "n/a"
            return f"{c.get('verdict', '-'):<13} {value}"

        print(f"{key[0] + '/' + key[1]:<52} {fmt(a):<32} {fmt(b):<32}{mark}")
    same_mean = sum(1 for k in native if native[k].get("mean") == lower.get(k, {}).get("mean"))
    print(f"\n{differ} of {len(native)} verdicts differ; {same_mean} of {len(native)} means are bit-identical.")


if __name__ == "__main__":
    main()
