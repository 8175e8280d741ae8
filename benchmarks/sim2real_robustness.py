"""Sim-to-real robustness sweeps of CenicFranka-v0's scripted expert.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_robustness.py [--episodes 10] [--policy scripted]
        [--no-write]

:func:`cenic_gym.sim2real.robustness.robustness_sweep` at ε = 1e-3 (defaults, no domain randomization), seeds
0 … episodes−1, 200 steps, every family at its default levels; each episode's perturbation is drawn from
``default_rng([seed, family, level])``. Levels (``cenic_gym.sim2real.robustness``): obs_noise, a multiplier of the
task's noise scales; action_delay, control periods; gain, friction, mass: a spread s, the factor log-uniform in
[1/(1+s), 1+s]; effort_limit: a reduction r, the factor U(1−r, 1); push: a horizontal impulse [N s] on the box at a
uniform step. The scripted expert plans from the simulator's state, not from the observation, so observation noise
cannot reach it (its row tests the pipeline only; a learned policy is needed to measure it).

Writes the curves to ``benchmarks/sim2real_robustness.png``, every episode (seed, draw, outcome) to
``benchmarks/sim2real_robustness.jsonl``, and the ``sim2real-robustness`` section of ``benchmarks/RESULTS.md``.
About 2 min at 10 episodes (28 levels × 10 episodes of 10 s); not a timing benchmark.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from bench_common import provenance, write_section  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.report import plot_robustness  # noqa: E402
from cenic_gym.sim2real.robustness import robustness_sweep, robustness_table  # noqa: E402

HERE = Path(__file__).resolve().parent
ENV_ID = "CenicFranka-v0"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--policy", default="scripted")
    p.add_argument("--no-write", action="store_true")
    a = p.parse_args(argv)
    policy = load_policy(a.policy, ENV_ID)
    t0 = time.time()
    load0 = os.getloadavg()[0]
    res = robustness_sweep(ENV_ID, policy, range(a.episodes),
                           progress=lambda f, lv, s: print(f"{f} {lv:g}: {s['success_rate']:.2f}", flush=True))
    cmd = f"NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_robustness.py --episodes {a.episodes}" + \
        ("" if a.policy == "scripted" else f" --policy {a.policy}")

    def drawn(e):  # the sampled factors of an episode (not the family/level labels)
        vals = [f"{k} {v:.3g}" for k, v in e.perturbation.items() if isinstance(v, float) and k != "level"]
        return f" ({', '.join(vals)})" if vals else ""

    fails = []
    for fam in res.values():
        for level, eps in zip(fam.levels, fam.episodes):
            bad = [f"{e.seed}{drawn(e)}" for e in eps if not e.success]
            if bad:
                fails.append(f"{fam.family} = {level:g}: " + ("all" if len(bad) == len(eps) else ", ".join(bad)))
    scripted = a.policy == "scripted"
    body = "\n".join([
        *provenance("benchmarks/sim2real_robustness.py", f"`{cmd}`", time.time() - t0, load0,
                    ("numba", ("pinocchio (pin)", "pin"), "numpy", "gymnasium")),
        f"Policy **{policy.name}** on `{ENV_ID}` at ε = 1e-3 (defaults, no domain randomization), seeds "
        f"0–{a.episodes - 1}, 200 steps; levels and their draws as in `cenic_gym.sim2real.robustness` (the "
        "script's docstring)" + (" — the scripted expert reads the simulator's state, so obs_noise cannot reach it"
                                 if scripted else "") + ". Plot: `benchmarks/sim2real_robustness.png`; every "
        "episode with its draw: `benchmarks/sim2real_robustness.jsonl`.", "",
        robustness_table(res), "",
        "Failing seeds (drawn factor): " + ("; ".join(fails) if fails else "none") + "."])
    print(body)
    if not a.no_write:
        plot_robustness(res, policy.name, ENV_ID, HERE / "sim2real_robustness.png")
        with open(HERE / "sim2real_robustness.jsonl", "w") as f:
            for fam in res.values():
                for level, eps in zip(fam.levels, fam.episodes):
                    for e in eps:
                        f.write(json.dumps(dict(family=fam.family, level=level, **e.row())) + "\n")
        write_section("sim2real-robustness", body, f"## Sim-to-real: robustness sweeps ({policy.name}, {ENV_ID})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
