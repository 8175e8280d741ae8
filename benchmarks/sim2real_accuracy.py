"""Sim-to-real accuracy sweep of CenicFranka-v0's scripted expert (issue 16).

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_accuracy.py [--episodes 10] [--policy scripted]
        [--env CenicFranka-v0] [--env-kwargs JSON]

:func:`cenic_gym.sim2real.accuracy.accuracy_sweep`: the policy runs the same seeded episodes (seeds 0 … episodes−1,
200 steps, defaults, no domain randomization) at ε ∈ {1e-1, 1e-2, 1e-3, 1e-4, 1e-5} and at fixed steps δt ∈
{0.05, 0.01, 0.002} s; success, mean return and the final-state divergence from the ε = 1e-5 run of the same seed.
Writes the ``sim2real-accuracy`` section of ``benchmarks/RESULTS.md`` (appended if absent) and
``benchmarks/sim2real_accuracy.png``, and prints the section. Same as
``cenic-gym sim2real accuracy --policy scripted --episodes 10``, plus the provenance lines. A trained policy is
swept on its own env (``--env``, e.g. ``CenicFrankaGoal-v0`` with the reach preset in ``--env-kwargs``).
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from bench_common import provenance, replace_marked_section  # noqa: E402
from cenic_gym.sim2real.accuracy import accuracy_sweep, sweep_table  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.report import plot_accuracy  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
ENV_ID = "CenicFranka-v0"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--policy", default="scripted", help="'scripted', an SB3 .zip, an .onnx or a TorchScript .pt")
    p.add_argument("--env", default=ENV_ID, help=f"env id (default {ENV_ID})")
    p.add_argument("--env-kwargs", default="{}", help="env options as JSON (e.g. for a policy trained on a variant)")
    p.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    a = p.parse_args(argv)
    env_id = a.env
    policy = load_policy(a.policy, env_id)
    t0 = time.time()
    load0 = os.getloadavg()[0]
    env_kwargs = json.loads(a.env_kwargs)
    sweep = accuracy_sweep(env_id, policy, range(a.episodes), env_kwargs=env_kwargs,
                           progress=lambda label, s: print(f"{label}: {s['success_rate']:.2f} "
                                                           f"({s['wall_s']:.0f} s)", flush=True))
    stem = Path(a.policy).parent.name if Path(a.policy).stem == "model" else Path(a.policy).stem  # policy folder
    name = "sim2real-accuracy" if a.policy == "scripted" else f"sim2real-accuracy-{stem}"
    plot = RESULTS.parent / f"{name.replace('-', '_')}.png"
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_accuracy.py"
    cmd += f" --episodes {a.episodes}" + ("" if a.policy == "scripted" else f" --policy {a.policy}")
    cmd += f" --env {env_id}" if env_id != ENV_ID else ""
    cmd += f" --env-kwargs '{a.env_kwargs}'" if env_kwargs else ""
    ref = next(r for r in sweep.rows if r.label == sweep.reference).episodes
    steps, seconds = max(e.steps for e in ref), max(e.t for e in ref)
    body = "\n".join([
        *provenance("benchmarks/sim2real_accuracy.py", f"`{cmd}`", time.time() - t0, load0, ('numba', ('pinocchio (pin)', 'pin'), 'numpy', 'gymnasium'),
                    note="; the machine was shared"),
        f"Policy **{policy.name}** on `{env_id}` "
        f"({'options ' + json.dumps(env_kwargs) if env_kwargs else 'defaults, no domain randomization'}), "
        f"seeds 0–{a.episodes - 1}, "
        f"{steps} steps ({seconds:.3g} s) per episode, the same episodes in every setting. "
        "Success: `info[\"is_success\"]` at the "
        "last step.", "",
        sweep_table(sweep), "", f"Plot: `benchmarks/{plot.name}`."])
    print(body)
    if not a.no_write:
        plot_accuracy(sweep, plot)
        heading = f"## Sim-to-real: accuracy sweep ({policy.name}, {env_id})"
        RESULTS.write_text(replace_marked_section(RESULTS.read_text(), name, body, heading=heading))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
