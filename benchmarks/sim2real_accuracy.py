"""Sim-to-real accuracy sweep of a policy: the scripted expert of CenicFranka-v0 by default, or a trained policy.

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_accuracy.py [--episodes 10] [--policy scripted]
        [--env CenicFranka-v0] [--env-kwargs JSON] [--no-write]

:func:`cenic_gym.sim2real.accuracy.accuracy_sweep`: the policy runs the same seeded episodes (seeds 0 … episodes−1,
the env's episode length, no domain randomization) at ε ∈ {1e-1, 1e-2, 1e-3, 1e-4, 1e-5} and at fixed steps
δt ∈ {0.05, 0.01, 0.002} s; per setting: success, mean return, the final-state divergence from the ε = 1e-5 run of
the same seed, substeps per env step, the deepest penetration. A setting is flagged when its success rate beats the
reference's by more than 20 points (the policy exploits loose integration). Same as ``cenic-gym sim2real accuracy``,
plus the provenance lines.

A trained policy (an SB3 ``.zip`` with its ``run.json``) is swept on the env and options it was trained with (read
from its ``run.json``; ``--env`` / ``--env-kwargs`` override them). Sections of ``benchmarks/RESULTS.md``:

* ``sim2real-accuracy``: ``--policy scripted`` (the default) on CenicFranka-v0, about 1 min at 10 episodes
  on an idle machine;
* ``sim2real-accuracy-<policy folder>``, e.g. ``sim2real-accuracy-CenicFrankaGoal-v0`` for
  ``--policy training/policies/CenicFrankaGoal-v0/model.zip`` (the reach policy, 50-step episodes: about 10 s).

Also writes the plot ``benchmarks/<section name with _>.png``. Not a timing benchmark.
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
from cenic_gym.sim2real.accuracy import accuracy_sweep, sweep_table  # noqa: E402
from cenic_gym.sim2real.policy import load_policy  # noqa: E402
from cenic_gym.sim2real.report import plot_accuracy  # noqa: E402

HERE = Path(__file__).resolve().parent
ENV_ID = "CenicFranka-v0"


def trained_env(policy):
    """(env id, options) a policy file was trained with (its ``run.json``), or None."""
    if policy == "scripted":
        return None
    from cenic_gym.train.common import RunSpec

    try:
        spec = RunSpec.find(policy)
    except FileNotFoundError:
        return None
    return spec.env_id, spec.options_without_accuracy()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--policy", default="scripted", help="'scripted', an SB3 .zip, an .onnx or a TorchScript .pt")
    p.add_argument("--env", default=None, help=f"env id (default: the policy's run.json's, else {ENV_ID})")
    p.add_argument("--env-kwargs", default=None, help="env options as JSON (default: the policy's run.json's)")
    p.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    a = p.parse_args(argv)
    trained = trained_env(a.policy)
    env_id = a.env or (trained[0] if trained else ENV_ID)
    env_kwargs = json.loads(a.env_kwargs) if a.env_kwargs is not None else \
        (trained[1] if trained and not a.env else {})
    policy = load_policy(a.policy, env_id)
    t0 = time.time()
    load0 = os.getloadavg()[0]
    sweep = accuracy_sweep(env_id, policy, range(a.episodes), env_kwargs=env_kwargs,
                           progress=lambda label, s: print(f"{label}: {s['success_rate']:.2f} "
                                                           f"({s['wall_s']:.0f} s)", flush=True))
    stem = Path(a.policy).parent.name if Path(a.policy).stem == "model" else Path(a.policy).stem  # policy folder
    name = "sim2real-accuracy" if a.policy == "scripted" else f"sim2real-accuracy-{stem}"
    plot = HERE / f"{name.replace('-', '_')}.png"
    cmd = "NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/sim2real_accuracy.py"
    cmd += f" --episodes {a.episodes}" + ("" if a.policy == "scripted" else f" --policy {a.policy}")
    cmd += f" --env {a.env}" if a.env else ""
    cmd += f" --env-kwargs '{a.env_kwargs}'" if a.env_kwargs is not None else ""
    ref = next(r for r in sweep.rows if r.label == sweep.reference).episodes
    steps, seconds = max(e.steps for e in ref), max(e.t for e in ref)
    options = f"options `{json.dumps(env_kwargs)}`" if env_kwargs else "default options"
    body = "\n".join([
        *provenance("benchmarks/sim2real_accuracy.py", f"`{cmd}`", time.time() - t0, load0,
                    ("numba", ("pinocchio (pin)", "pin"), "numpy", "gymnasium")),
        f"Policy **{policy.name}** on `{env_id}` ({options}, no domain randomization), seeds 0–{a.episodes - 1}, "
        f"{steps} steps ({seconds:.3g} s) per episode, the same episodes in every setting; success: "
        f"`info[\"is_success\"]` at the last step. Plot: `benchmarks/{plot.name}`.", "",
        sweep_table(sweep)])
    print(body)
    if not a.no_write:
        plot_accuracy(sweep, plot)
        write_section(name, body, f"## Sim-to-real: accuracy sweep ({policy.name}, {env_id})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
