"""Two runs on one store compute each job once: a lease per job, taken over when its holder dies."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from icml25.core.runner import plan
from icml25.core.store import Store, holder_alive, new_holder


def test_two_runs_on_one_store_compute_each_job_once(tmp_path):
    home = tmp_path / "h"
    env = {**os.environ, "ICML25_HOME": str(home)}
    args = [sys.executable, "-m", "icml25.cli", "reproduce", "pas", "--preset", "smoke", "--seeds", "6", "--jobs", "1",
            "--set", "replicates=150"]
    procs = []
    for i in range(2):
        procs.append(subprocess.Popen(args + ["--reports", str(tmp_path / f"r{i}")], env=env, cwd=tmp_path,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        time.sleep(0.5)
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outputs]
    ran = [re.findall(r"\] (pas/\w+ seed \d+): ok", err) for _, err in outputs]
    computed = ran[0] + ran[1]
    assert len(computed) == len(set(computed)) == 12, ran  # every job once, by one of the two runs
    with Store(home) as store:
        assert len(store.finished(j.key for j in plan(["pas"], "smoke", 6, {"replicates": "150"}, skipped=[]))) == 12


def test_a_dead_holders_lease_is_taken_over(tmp_path):
    jobs = plan(["pas"], "smoke", 1, skipped=[])
    keys = [j.key for j in jobs]
    with Store(tmp_path) as store:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout.strip()
        dead_holder = f"{new_holder().split(':')[0]}:{dead}:x"
        assert not holder_alive(dead_holder)
        live = new_holder()
        assert store.acquire(keys, dead_holder, 60) == set(keys)
        assert store.leased_by_others(keys, live) == set()  # its holder is gone: the lease is void
        assert store.acquire(keys, live, 60) == set(keys)
        assert store.acquire(keys, "elsewhere:1:y", 60) == set()  # a live (or unknown) holder keeps it
        store.release(keys, live)
        assert store.acquire(keys, "elsewhere:1:y", 60) == set(keys)
        assert store.acquire(keys, live, -1) == set()  # still held by the other machine's run...
        store.renew("elsewhere:1:y", -1)  # ...until its lease expires
        assert store.acquire(keys, live, 60) == set(keys)


def test_run_waits_for_a_live_lease_and_takes_over_when_it_expires(monkeypatch, tmp_path):
    import icml25.core.runner as runner
    from icml25.core.runner import run_jobs

    jobs = plan(["pas"], "smoke", 1, skipped=[])
    ran_here = []

    def fake_batch(batch, n_jobs, backend, ray_address, record, on_progress):  # noqa: ANN001
        for job in batch:
            ran_here.append(job.key)
            record(job, runner.JobOutcome("ok", {"x": 1.0}, None, 0.0, 0.0, {}))

    monkeypatch.setattr(runner, "_run_batch", fake_batch)
    with Store(tmp_path) as store:
        other = "another-host:1:z"  # a run elsewhere holds the first job for 0.6 s more, then stops renewing
        assert store.acquire([jobs[0].key], other, 0.6) == {jobs[0].key}
        started = time.time()
        ran, reused = run_jobs(jobs, store, poll_s=0.05)
        waited = time.time() - started
        assert ran_here[0] == jobs[1].key and ran_here[1] == jobs[0].key  # its own job first, the other's after
        assert waited >= 0.5 and len(ran) == 2 and reused == []
        assert store.leased_by_others([j.key for j in jobs], "someone-else:2:w") == set()  # all released
        assert store.get(jobs[0].key).status == "ok" and store.get(jobs[0].key).metrics == {"x": 1.0}
