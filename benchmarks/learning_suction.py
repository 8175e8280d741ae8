"""The suction pick-and-place recipe, three seeds: learning curves, held-out success, the shipped policy and its
accuracy sweep.

    python benchmarks/learning_suction.py [--seeds 0 1 2] [--parallel 2] [--episodes 50] [--sweep-episodes 20]
        [--plot-only] [--note TEXT]

Each seed runs exactly what a user runs, ``cenic-gym train CenicSuction-v0 --seed S`` (the env's default recipe:
``CONFIGS["CenicSuction-v0"]["dagger"]``), ``--parallel`` at a time, into ``runs/learning_suction/seedS``
(``learning_common``: ``--resume`` of an interrupted seed, a finished one kept). Each final ``model.zip`` plays
``--episodes`` held-out episodes of the UNMODIFIED task (seeds 10 000…: default starts, success test and accuracy
1e-3, the network alone acting), beside the recipe's teacher (``SuctionExpert``) and the open-loop
``ScriptedPicker`` on the same episodes. The best seed ships to ``training/policies/CenicSuction-v0/`` (model,
normalizer, ``run.json``, ONNX export, ``training.json``, ``curve.png``, generated README). Then the shipped policy's
accuracy sweep (``cenic_gym.sim2real.accuracy``: ε = 1e-1 … 1e-5 and fixed steps of 50, 10 and 2 ms, seeds
0 … sweep-episodes−1), once with the env's implicit suction and once with ``explicit_suction=True`` (the force
evaluated at each step's start, as most simulators do: CENIC Fig. 13b). Writes ``benchmarks/learning_suction.
{json,png}``, ``benchmarks/learning_suction_accuracy.png`` and the RESULTS.md section ``suction-learning``. About
15 min on 2 cores (three seeds two at a time, then the sweeps); ``--plot-only`` rebuilds the plots and the section
from the JSON in seconds, ``--sweep-only`` reruns the sweeps only (a few minutes). Wall times are reported, so run it
on an otherwise idle machine (or say what else ran with ``--note``).
"""
from __future__ import annotations

import json
import os
import shlex
import sys
import time

from bench_common import provenance, write_section
from learning_common import (FINAL_SEED, Benchmark, arg_parser, best_seed, evaluate_seeds, files_table,
                             median_success, plot_curves, scripted_eval, seed_lines, ship, stamp, stamp_note, steps_to,
                             table, train_seeds)

ENV_ID = "CenicSuction-v0"
BENCH = Benchmark(ENV_ID, "learning_suction")
OUT, POLICY = BENCH.out, BENCH.policy
SWEEPS = {"implicit": {}, "explicit": {"explicit_suction": True}}  # the suction inside the convex step, or not


def plot(runs, path, title):
    plot_curves(seed_lines(ENV_ID, runs), path, title, f"{ENV_ID} evaluation return (200 steps)")


def accuracy_sweeps(episodes):
    """{name: {table, rows: {setting: {success, penetration [m]}}}} of the shipped policy's accuracy sweeps (implicit
    and explicit suction); the implicit one's plot."""
    from cenic_gym.sim2real.accuracy import accuracy_sweep, sweep_table
    from cenic_gym.sim2real.policy import load_policy
    from cenic_gym.sim2real.report import plot_accuracy

    policy = load_policy(POLICY / "model.zip", ENV_ID)
    out = {}
    for name, kwargs in SWEEPS.items():
        sweep = accuracy_sweep(ENV_ID, policy, range(episodes), env_kwargs=kwargs,
                               progress=lambda label, s: print(f"{name} {label}: {s['success_rate']:.2f} "
                                                               f"({s['wall_s']:.0f} s)", flush=True))
        out[name] = dict(table=sweep_table(sweep), rows={
            r.label: dict(success=r.summary["success_rate"], penetration=r.summary["max_penetration"])
            for r in sweep.rows})
        if name == "implicit":
            plot_accuracy(sweep, OUT.parent / f"{OUT.name}_accuracy.png")
    return out


def sweep_summary(sweeps):
    """What the two sweeps' numbers say, in sentences derived from them."""
    imp, exp = sweeps["implicit"]["rows"], sweeps["explicit"]["rows"]
    errs = [k for k in imp if k.startswith("ε")]
    ref = min(errs, key=lambda k: float(k.split("=")[1]))
    fixed = [k for k in imp if k.startswith("fixed")]
    pen = lambda rows, k: f"{1e3 * rows[k]['penetration']:.2f}"  # noqa: E731

    def span(keys):
        lo, hi = min(imp[k]["success"] for k in keys), max(imp[k]["success"] for k in keys)
        return f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"

    above = [k for k in errs if imp[k]["success"] > imp[ref]["success"] + 1e-9]
    changed = [k for k in imp if abs(imp[k]["success"] - exp[k]["success"]) > 1e-9]
    return (f"Implicit suction: success {span(errs)} over the ε settings, {span(fixed)} at fixed steps. "
            + (f"Loose ε beats the reference ({ref}: {imp[ref]['success']:.2f}) at {', '.join(above)}: check for "
               "numerical artefacts." if above else
               f"No loose ε beats the reference ({ref}: {imp[ref]['success']:.2f}).")
            + " With `explicit_suction=True` (the force evaluated at each step's start and held over it, as most "
            "simulators do: CENIC Fig. 13b) on the same episodes: success "
            + ("unchanged at every setting" if not changed else
               ", ".join(f"{k} {imp[k]['success']:.2f} → {exp[k]['success']:.2f}" for k in changed))
            + "; deepest contact at fixed steps " + ", ".join(f"{k} {pen(imp, k)} → {pen(exp, k)} mm" for k in fixed)
            + " (implicit → explicit).")


def aids(cfg):
    """The recipe's training aids in words (the training env's options beyond the evaluation env's)."""
    return f"`{cfg['train_env_kwargs']}` on the training env" if cfg["train_env_kwargs"] else "none"


def section(data, plot_only=False):
    from cenic_gym.train import get_config

    cfg = get_config(ENV_ID, "dagger")
    ours = data[ENV_ID]
    lines = provenance("benchmarks/learning_suction.py", ours["command"], ours["runtime_s"], ours["load0"],
                       ("stable-baselines3", "torch", "gymnasium", "numba"), note=stamp_note(ours, plot_only))
    d = cfg["dagger"]
    t, p = ours["teacher"], ours["picker"]
    lines += [
        f"Recipe: `cenic-gym train {ENV_ID} --seed S` (`dagger`, `SUCTION_DAGGER` in `cenic_gym/train/configs.py`): "
        "DAgger from the feedback teacher `SuctionExpert` (reads the simulator's state); the network (SB3 SAC actor, "
        f"{cfg['sb3']['policy_kwargs']['net_arch']}) sees only the task's observation; the task's own actions, starts, "
        f"200-step episodes and ε = 1e-3; training aids: {aids(cfg)}; {d['episodes_per_round']} episodes per round, "
        f"β = {d['beta0']}·{d['beta_decay']}^round, {d['gradient_steps']} Adam steps of {d['batch_size']} per round, "
        f"{cfg['steps']} env steps per seed; seeds ran {ours['parallel']} at a time, one thread each (besides them: "
        f"{ours.get('note', 'nothing')}).",
        f"Final success: {ours['runs'][0]['final']['episodes']} held-out episodes (seeds {FINAL_SEED}…) of the "
        f"unmodified task (`cenic-gym eval runs/learning_suction/seedS/model.zip --episodes 50 --seed {FINAL_SEED}`); "
        "success = `info[\"is_success\"]` at the episode's end (the target in the tote, on its floor, released, at "
        f"rest, the other boxes on the table). On the same episodes: the teacher {t['success_rate']:.2f}, the "
        f"open-loop `ScriptedPicker` {p['success_rate']:.2f}.", ""]
    rows, med = table(ours["runs"], ENV_ID)
    lines += rows + ["", f"Env steps to the first evaluation at ≥ 0.8 success (median of the seeds): "
                     f"{steps_to(ours['runs'])}. Median final success over the seeds: **{med:.2f}**.", "",
                     "![learning curves](learning_suction.png)"]
    if "sweeps" in ours:
        n = ours["sweep_episodes"]
        lines += ["", f"**The shipped policy's accuracy sweep** (`training/policies/{ENV_ID}/model.zip`, seeds "
                  f"0–{n - 1}, the env's implicit suction: the force linearized inside each convex step; success and "
                  "deepest contact per setting): "
                  + "; ".join(f"{k}: {r['success']:.2f}, {1e3 * r['penetration']:.2f} mm"
                              for k, r in ours["sweeps"]["implicit"]["rows"].items()) + ".", "",
                  sweep_summary(ours["sweeps"]), "",
                  "![accuracy sweep](learning_suction_accuracy.png)"]
    return "\n".join(lines)


def write_policy_readme(run, spec, data):
    """The shipped policy's README: what it is, how it was trained, its evaluation and curve (numbers from this run)."""
    from cenic_gym.train import get_config

    cfg = get_config(ENV_ID, "dagger")
    f, c = run["final"], run["curve"]
    ours = data[ENV_ID]
    text = f"""# {ENV_ID}: a learned suction pick-and-place policy

An MLP (two hidden layers of {cfg['sb3']['policy_kwargs']['net_arch'][0]}, SB3 SAC actor; its deterministic action)
that moves the suction gantry over the target box, seals the cups on its top face, lifts it over the tote's walls,
carries it over the tote, lowers it and lets go, at 20 Hz, in the plain `{ENV_ID}` task (default options:
`run.json` holds `{json.dumps(spec['env_kwargs'])}`). Its observation is the task's 48 numbers (no privileged
state); its action the task's 5: gantry target changes x, y, z (2 cm), yaw (0.15 rad) and suction on/off.

## How it was trained

    cenic-gym train {ENV_ID} --seed {run['seed']}

The env's default recipe (`cenic_gym/train/configs.py`, `SUCTION_DAGGER`): DAgger (`cenic_gym/train/dagger.py`)
from the feedback teacher `cenic_gym.envs.suction_pick.SuctionExpert`, which reads the simulator's state and can act
from any state the learner reaches. {cfg['steps']} env steps on the task's own start distribution, 200-step
episodes and accuracy ε = 1e-3; training aids: {aids(cfg)}. {c[-1]['wall_s'] / 60:.1f} min of
training wall time in one process on a 2-core machine that ran {ours['parallel']} seeds at a time (and besides them:
{ours.get('note', 'nothing')}). This is seed {run['seed']}, the best of the {len(ours['runs'])} seeds of
`python benchmarks/learning_suction.py`; the median seed's held-out success is {median_success(ours['runs']):.2f}
(`benchmarks/RESULTS.md`, "Learning: the suction pick-and-place").

![learning curve](curve.png)

## Evaluation

    cenic-gym eval training/policies/{ENV_ID}/model.zip --episodes 50 --seed {FINAL_SEED}

{f['episodes']} held-out episodes of the unmodified task (default starts, success test and accuracy; the network
alone acting): success rate **{f['success_rate']:.2f}**, mean return {f['mean_return']:.1f}. Any other `--seed`
gives other held-out episodes. Its accuracy sweep (ε and fixed steps, implicit and explicit suction) is in the
same RESULTS section.

    cenic-gym demo {ENV_ID} --policy training/policies/{ENV_ID} --video suction_policy.mp4

plays one episode into a video and the CENIC plots (step size, real-time rate, contact force).

## Files

{files_table(48, 5)}

Generated by `python benchmarks/learning_suction.py`.
"""
    (POLICY / "README.md").write_text(text)


def main():
    p = arg_parser(__doc__, sweep_episodes=20)
    p.add_argument("--sweep-only", action="store_true", help="rerun the shipped policy's accuracy sweeps only")
    a = p.parse_args()
    data = BENCH.saved()
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    if a.sweep_only:
        data[ENV_ID]["sweeps"], data[ENV_ID]["sweep_episodes"] = accuracy_sweeps(a.sweep_episodes), a.sweep_episodes
        BENCH.save(data)
    elif not a.plot_only:
        from cenic_gym.envs.suction_pick import ScriptedPicker, SuctionExpert

        train_seeds(BENCH, a.seeds, a.parallel)
        runs = evaluate_seeds(BENCH, a.seeds, a.episodes)
        ours = dict(runs=runs, parallel=a.parallel, note=a.note, **stamp(),
                    command="`" + shlex.join(["python", "benchmarks/learning_suction.py", *sys.argv[1:]]) + "`",
                    teacher=scripted_eval(ENV_ID, SuctionExpert, a.episodes),
                    picker=scripted_eval(ENV_ID, ScriptedPicker, a.episodes))
        for path, err in ship(BENCH, runs, best_seed(runs)).items():
            print(f"exported {path}: reproduces the model's actions to {err:.1e}")
        ours["sweeps"], ours["sweep_episodes"] = accuracy_sweeps(a.sweep_episodes), a.sweep_episodes
        ours.update(runtime_s=time.perf_counter() - t0, load0=load0)
        data[ENV_ID] = ours
        BENCH.save(data)
    ours = data[ENV_ID]
    title = ("DAgger from a feedback teacher: CenicSuction-v0 pick-and-place\nperiodic evaluations: 10 held-out "
             "episodes of the unmodified task, the network alone")
    plot(ours["runs"], OUT.with_suffix(".png"), title)
    shipped, spec = BENCH.shipped()
    plot([shipped], POLICY / "curve.png", title)
    write_policy_readme(shipped, spec, data)
    write_section("suction-learning", section(data, a.plot_only or a.sweep_only),
                  f"## Learning: the suction pick-and-place ({ENV_ID}), three seeds, and the policy's accuracy sweep")
    print(f"wrote {OUT.with_suffix('.png')} and {BENCH.json}")


if __name__ == "__main__":
    main()
