"""``cenic-gym sim2real ...``: the evaluation toolkit on the command line (registered by :func:`add_parser`).

    cenic-gym sim2real accuracy   --policy scripted [--env CenicFranka-v0] [--episodes 5]
    cenic-gym sim2real robustness --policy ppo.zip  [--families gain friction] [--log episodes.jsonl]
    cenic-gym sim2real export     ppo.zip --out exported/            (ONNX + TorchScript, checked to 1e-5)
    cenic-gym sim2real record     --policy scripted --out log.csv    (a log made by our simulator)
    cenic-gym sim2real replay     log.csv [--accuracy 1e-5] [--plot replay.png]
    cenic-gym sim2real fit        log.csv --params kp_scale damping mass/box [--out fit/]   (real-to-sim)
    cenic-gym sim2real report     --policy scripted --out report/ [--log log.csv]
    cenic-gym sim2real sim2sim    --policy scripted [--env CenicFranka-v0] [--episodes 5] [--timestep 1e-3]
                                  [--peer mujoco|drake] [--integrator lagged|cenic] [--accuracy 1e-3]
                                  (the same seeded episodes in cenic-gym and with MuJoCo or Drake as the physics)
"""
from __future__ import annotations

import argparse
import json

from ..argtypes import env_options, integer_at_least, positive_number

DEFAULT_ENV = "CenicFranka-v0"


def _common(p, policy=True):
    p.add_argument("--env", default=None, help=f"env id (default: the policy's training run's, from the run.json "
                   f"beside or above it; else {DEFAULT_ENV})")
    p.add_argument("--env-kwargs", type=env_options, default=None, help="env options as JSON, e.g. "
                   "'{\"domain_randomization\": true}' (default: the policy's run's, when --env is not given; the "
                   "sweeps set accuracy / fixed_step themselves)")
    if policy:
        p.add_argument("--policy", required=True,
                       help="'scripted' (the env's scripted policy; 'trot' for the Go1), an SB3 .zip, an RLlib checkpoint "
                            "folder, an .onnx or a .pt")
        p.add_argument("--episodes", type=integer_at_least(1), default=5, help="seeded episodes per setting (default 5)")
        p.add_argument("--max-steps", type=integer_at_least(1), default=None, help="cut episodes at this many steps")


def add_parser(subparsers):
    """Add the ``sim2real`` command (with its subcommands) to an argparse subparsers object; each parsed namespace
    carries ``func(args) -> exit status``."""
    top = subparsers.add_parser("sim2real", help="sim-to-real evaluation of a policy (accuracy, robustness, export, "
                                                 "log replay, report)", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="sim2real_cmd", required=True)

    a = sub.add_parser("accuracy", help="success and final-state divergence vs ε and fixed δt")
    _common(a)
    a.add_argument("--accuracies", type=positive_number(), nargs="+", default=None, help="ε values (default 1e-1 … 1e-5)")
    a.add_argument("--fixed-steps", type=positive_number(), nargs="+", default=None, help="δt values [s]")
    a.add_argument("--plot", default=None, help="write the accuracy plot (PNG) here")
    a.set_defaults(func=_accuracy)

    r = sub.add_parser("robustness", help="success-rate curves under perturbations")
    _common(r)
    r.add_argument("--families", nargs="+", default=None, help="families (default: all)")
    r.add_argument("--log", default=None, help="write every episode (seed, perturbation, outcome) as JSON lines")
    r.add_argument("--plot", default=None, help="write the curves (PNG) here")
    r.set_defaults(func=_robustness)

    e = sub.add_parser("export", help="SB3 / RLlib policy -> ONNX + TorchScript, normalization folded in, checked")
    e.add_argument("model", help="SB3 .zip (its <stem>.vecnormalize.pkl is folded in when present) or an RLlib "
                                 "checkpoint folder (its obs_normalization.npz folded in when present)")
    e.add_argument("--out", required=True, help="output folder")
    e.add_argument("--env", default=None, help="env whose observations the check uses (default: the model's "
                   f"training run's, from its run.json; else {DEFAULT_ENV})")
    e.add_argument("--env-kwargs", type=env_options, default=None, help="its options as JSON (e.g. a goal-conditioned "
                   "form: '{\"goal_conditioned\": true}'; default: the run's)")
    e.add_argument("--tol", type=positive_number(), default=1e-5, help="largest allowed action difference (default 1e-5)")
    e.set_defaults(func=_export)

    rec = sub.add_parser("record", help="record a log (documented format) of a policy in our simulator")
    _common(rec, policy=False)
    rec.add_argument("--policy", required=True)
    rec.add_argument("--seed", type=int, default=0)
    rec.add_argument("--accuracy", type=positive_number(), default=1e-5)
    rec.add_argument("--max-steps", type=integer_at_least(1), default=None)
    rec.add_argument("--out", required=True, help="log file (.csv or .npz)")
    rec.set_defaults(func=_record)

    rp = sub.add_parser("replay", help="replay a robot log's commands; tracking error over time")
    _common(rp, policy=False)
    rp.add_argument("log", help="log file (.csv or .npz; format: cenic_gym.sim2real.replay)")
    rp.add_argument("--accuracy", type=positive_number(), default=1e-3)
    rp.add_argument("--fixed-step", type=positive_number(), default=None)
    rp.add_argument("--plot", default=None, help="write the tracking-error plot (PNG) here")
    rp.set_defaults(func=_replay)

    ft = sub.add_parser("fit", help="fit the env's physical parameters (and the action delay) to a robot log")
    _common(ft, policy=False)
    ft.add_argument("log", help="log file (.csv or .npz; format: cenic_gym.sim2real.replay), or the name of a "
                                "shipped log: franka_example_log (our simulator, the nominal robot) or franka_mujoco_log "
                                "(the MuJoCo twin, K_p x 0.75, K_d x 1.3, commands one period late)")
    ft.add_argument("--params", nargs="+", required=True,
                    help="physical parameters (cenic_gym.parameters names), e.g. 'kp_scale/panda_joint[1-7]' "
                         "'damping' 'friction/panda_joint4' 'mass/box' 'mu/box/0' 'stiffness/box/0'")
    ft.add_argument("--method", choices=("lsq", "cma", "lsq+cma"), default="lsq",
                    help="scipy least squares (default), CMA-ES (the cma package), or least squares polished by "
                         "CMA-ES (logs with contact)")
    ft.add_argument("--accuracy", type=positive_number(), default=1e-5,
                    help="replay accuracy (default 1e-5: the replay's own error far below the model error)")
    ft.add_argument("--window", type=positive_number(), default=2.0, help="replay window [s] (default 2)")
    ft.add_argument("--max-delay", type=integer_at_least(0), default=3,
                    help="largest action delay tried [control periods] (default 3)")
    ft.add_argument("--delay", type=integer_at_least(0), default=None, help="a known delay instead of the search")
    ft.add_argument("--bootstrap", type=integer_at_least(0), default=0,
                    help="refits on resampled windows for the uncertainty (default 0: Gauss-Newton covariance)")
    ft.add_argument("--max-nfev", type=integer_at_least(1), default=None,
                    help="iterations per fit (least squares; CMA-ES: that many times (parameters + 1) evaluations)")
    ft.add_argument("--diff-step", type=positive_number(), default=None,
                    help="least squares' forward-difference step, relative to each value (default 1e-2)")
    ft.add_argument("--out", default=None, help="write fit.json and fit.png (logged vs simulated) into this folder")
    ft.set_defaults(func=_fit)

    rep = sub.add_parser("report", help="accuracy + robustness (+ replay) report: Markdown and PNGs")
    _common(rep)
    rep.add_argument("--out", required=True, help="report folder")
    rep.add_argument("--log", default=None, help="also replay this robot log")
    rep.add_argument("--accuracies", type=positive_number(), nargs="+", default=None)
    rep.add_argument("--fixed-steps", type=positive_number(), nargs="+", default=None)
    rep.add_argument("--families", nargs="+", default=None)
    rep.add_argument("--no-sim2sim", action="store_true", help="leave out the sim-to-sim section (MuJoCo, Drake)")
    rep.set_defaults(func=_report)

    s2 = sub.add_parser("sim2sim", help="the same seeded episodes in cenic-gym and with MuJoCo or Drake as the "
                                        "physics: success rates and gaps")
    _common(s2)
    _peer_options(s2)
    s2.add_argument("--plot", default=None, help="write the per-step divergence plot (PNG) here")
    s2.add_argument("--xml", default=None,
                    help="also write the generated MuJoCo scene (MJCF) of the first episode here")
    s2.add_argument("--log", default=None, help="write every episode's summary as JSON lines")
    s2.set_defaults(func=_sim2sim)
    return top


def _peer_options(p):
    from .sim2sim import DEFAULT_INTEGRATOR, DEFAULT_TIMESTEP, DRAKE_ACCURACY, DRAKE_INTEGRATORS, PEERS

    p.add_argument("--peer", default="mujoco", choices=sorted(PEERS),
                   help="the second simulator (default mujoco; drake needs pydrake: pip install 'cenic-gym[peers]')")
    p.add_argument("--timestep", type=positive_number(), default=None,
                   help=f"the peer's time step [s] (default {DEFAULT_TIMESTEP:g}; Drake cenic: how long an explicit "
                        "control law is held)")
    p.add_argument("--integrator", default=None,
                   choices=("implicitfast", "euler", "implicit", "rk4") + DRAKE_INTEGRATORS,
                   help=f"the peer's integrator: MuJoCo's (default {DEFAULT_INTEGRATOR}) or Drake's (default lagged: "
                        "SAP with the lagged contact approximation; cenic: Drake's error-controlled CENIC)")
    p.add_argument("--accuracy", type=positive_number(), default=None,
                   help=f"Drake cenic's accuracy (default {DRAKE_ACCURACY:g})")


def _policy_env(a, policy):
    """Fill ``a.env`` / ``a.env_kwargs`` left unset: from the training run of ``policy`` (its ``run.json``, beside
    or above the file: the env id and the options it was trained and evaluated with, accuracy aside), else the
    defaults. An explicit ``--env`` keeps its own (or no) options."""
    from ..train.common import RunSpec

    spec = None
    if a.env is None and policy not in (None, "scripted", "trot"):
        try:
            spec = RunSpec.find(policy)
        except FileNotFoundError:
            spec = None
    if a.env is None:
        a.env = spec.env_id if spec is not None else DEFAULT_ENV
    if a.env_kwargs is None:
        a.env_kwargs = spec.options_without_accuracy() if spec is not None else {}
    return a


def _families(names):
    from .robustness import FAMILIES

    if names is None:
        return None
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise SystemExit(f"cenic-gym sim2real: unknown families {unknown}; choose from {list(FAMILIES)}")
    return {n: FAMILIES[n] for n in names}


def _progress(*parts):
    *label, s = parts
    print(f"  {' '.join(str(x) for x in label)}: success {100 * s['success_rate']:.0f} %, return "
          f"{s['mean_return']:.1f} ({s['wall_s']:.1f} s)", flush=True)


def _accuracy(a):
    _policy_env(a, a.policy)
    from .accuracy import accuracy_sweep, sweep_table
    from .policy import load_policy

    kw = {k: v for k, v in (("accuracies", a.accuracies), ("fixed_steps", a.fixed_steps)) if v is not None}
    sweep = accuracy_sweep(a.env, load_policy(a.policy, a.env), range(a.episodes), max_steps=a.max_steps,
                           env_kwargs=a.env_kwargs, progress=_progress, **kw)
    print(sweep_table(sweep))
    if a.plot:
        from .report import plot_accuracy

        plot_accuracy(sweep, a.plot)
    return 0


def _robustness(a):
    _policy_env(a, a.policy)
    from .policy import load_policy
    from .robustness import robustness_sweep, robustness_table

    policy = load_policy(a.policy, a.env)
    res = robustness_sweep(a.env, policy, range(a.episodes), families=_families(a.families), max_steps=a.max_steps,
                           env_kwargs=a.env_kwargs, progress=_progress)
    print(robustness_table(res))
    if a.log:
        with open(a.log, "w") as f:
            for fam in res.values():
                for level, eps in zip(fam.levels, fam.episodes):
                    for e in eps:
                        f.write(json.dumps(dict(family=fam.family, level=level, **e.row())) + "\n")
    if a.plot:
        from .report import plot_robustness

        plot_robustness(res, policy.name, a.env, a.plot)
    return 0


def _export(a):
    _policy_env(a, a.model)
    from .export import export_policy

    for path, err in export_policy(a.model, a.out, a.env, tol=a.tol, env_kwargs=a.env_kwargs).items():
        print(f"{path}: reproduces the original actions to {err:.2e} (tol {a.tol:g})")
    return 0


def _record(a):
    _policy_env(a, a.policy)
    from .policy import load_policy
    from .replay import record_log
    from .rollout import make_env

    log = record_log(make_env(a.env, **{**a.env_kwargs, "accuracy": a.accuracy}), load_policy(a.policy, a.env),
                     a.seed, a.max_steps)
    log.save(a.out)
    print(f"{a.out}: {len(log.t)} rows, joints {list(log.joints)}, objects {list(log.poses)}")
    return 0


def _replay(a):
    _policy_env(a, None)
    from .replay import LogError, replay
    from .report import plot_replay, replay_table

    try:
        res = replay(a.env, a.log, accuracy=a.accuracy, fixed_step=a.fixed_step, env_kwargs=a.env_kwargs)
    except LogError as e:
        raise SystemExit(f"cenic-gym sim2real replay: {e}") from None
    print(replay_table([res]))
    if a.plot:
        plot_replay(res, a.plot)
    return 0


def _fit(a):
    _policy_env(a, None)
    from pathlib import Path

    from .fit import fit, plot_fit
    from .replay import LogError

    log = a.log
    shipped = Path(__file__).resolve().parent / "data" / f"{log}.csv"
    if not Path(log).exists() and "/" not in log and shipped.is_file():
        log = shipped
    try:
        res = fit(a.env, log, a.params, method=a.method, accuracy=a.accuracy, env_kwargs=a.env_kwargs,
                  window=a.window, max_delay=a.max_delay, delay=a.delay, bootstrap=a.bootstrap, max_nfev=a.max_nfev,
                  **({} if a.diff_step is None else {"diff_step": a.diff_step}),
                  progress=lambda line: print(f"  {line}", flush=True))
    except (LogError, ValueError, KeyError) as e:
        raise SystemExit(f"cenic-gym sim2real fit: {e}") from None
    print("\n".join(res.lines()))
    print("gym.make options of the fitted robot:", json.dumps(res.env_kwargs()))
    print("domain_randomization centred on the fit:", json.dumps(res.domain_randomization()))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        res.save(out / "fit.json")
        plot_fit(res, out / "fit.png")
        print(f"wrote {out / 'fit.json'} and {out / 'fit.png'}")
    res.replayer.close()
    return 0


def _report(a):
    _policy_env(a, a.policy)
    from .policy import load_policy
    from .report import write_report

    kw = {k: v for k, v in (("accuracies", a.accuracies), ("fixed_steps", a.fixed_steps)) if v is not None}
    path = write_report(a.env, load_policy(a.policy, a.env), a.out, list(range(a.episodes)),
                        families=_families(a.families), max_steps=a.max_steps, log=a.log, env_kwargs=a.env_kwargs,
                        progress=lambda *p: _progress(*p), sim2sim=not a.no_sim2sim, **kw)
    print(f"report written to {path}")
    return 0


def _sim2sim(a):
    _policy_env(a, a.policy)
    from .policy import load_policy
    from .sim2sim import peer_physics, scene_xml, sim2sim, sim2sim_table

    name = peer_physics(a.peer).name

    def progress(seed, ep):
        r = ep.row()
        print(f"  seed {seed}: success cenic-gym {r['success_cenic']}, {name} {r['success_peer']}; max divergence "
              f"{r['max_divergence']:.2e}", flush=True)

    from ..drake_model import DrakeMissing
    from ..peer_map import MappingError

    if a.xml and a.peer != "mujoco":
        raise SystemExit(f"cenic-gym sim2real sim2sim: --xml writes the MuJoCo scene; it needs --peer mujoco, got "
                         f"--peer {a.peer}")
    try:
        res = sim2sim(a.env, load_policy(a.policy, a.env), range(a.episodes), max_steps=a.max_steps,
                      timestep=a.timestep, integrator=a.integrator, env_kwargs=a.env_kwargs, progress=progress,
                      peer=a.peer, accuracy=a.accuracy)
    except MappingError as e:
        raise SystemExit(f"cenic-gym sim2real sim2sim: {a.env} cannot run in {name}: {e}") from None
    except (DrakeMissing, ValueError) as e:
        raise SystemExit(f"cenic-gym sim2real sim2sim: {e}") from None
    print(sim2sim_table([res]))
    if a.log:
        with open(a.log, "w") as f:
            for e in res.episodes:
                f.write(json.dumps(dict(env=res.env_id, policy=res.policy, peer=res.peer, **res.options,
                                        **e.row())) + "\n")
    if a.plot:
        from .report import plot_sim2sim

        plot_sim2sim([res], a.plot)
    if a.xml:
        with open(a.xml, "w") as f:
            f.write(scene_xml(a.env, a.env_kwargs, seed=0, **res.options))
    return 0


def main(argv=None):
    """``python -m cenic_gym.sim2real.cli ...`` (the same as ``cenic-gym sim2real ...``)."""
    p = argparse.ArgumentParser(prog="cenic-gym")
    add_parser(p.add_subparsers(dest="cmd", required=True))
    a = p.parse_args(argv)
    return a.func(a)


if __name__ == "__main__":
    raise SystemExit(main())
