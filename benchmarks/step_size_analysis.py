"""Where the attempted CENIC steps of an env step go, and why steps are rejected.

    python benchmarks/step_size_analysis.py [--steps 300] [--accuracy 1e-3] [--case CenicQuadruped-v0:random ...]

For each case (env id and policy: ``random`` = seeded uniform actions, ``scripted`` = the task's scripted policy of
``cenic_gym.envs.SCRIPTED_POLICIES``), ``gym.make(id, accuracy=ε)``, ``reset(seed=0)``,
then ``--steps`` env steps with the integrator recording its ``history`` (t, δt, accepted, error per attempt).
The integrator's nominal step size at the start of every control period is read before ``env.step`` (with the
period-start predictor :func:`cenic_gym.cenic.period_start_step` applied where the tree has it); from it the
controller (:func:`cenic_gym.cenic.adjust_step_size` and the clip to the period end in ``CenicIntegrator.step``) is
replayed attempt by attempt — the replay must reproduce every recorded δt (checked), so the tables describe what
the integrator did, not a model of it. Columns (per env step unless stated; "first" = attempts of a period before
its first accepted step, i.e. right after the set-points changed; "later" = the rest):

* attempts, rejected: all attempts and rejected ones; rej first / rej later: rejections of the two kinds;
* acc / period: accepted steps per control period; clipped: share of accepted steps shortened to land on the
  period end; tiny last: share of periods whose last step is < 25 % of the step before it;
* δt first / δt later: median accepted step [ms] (first accepted of a period / the others);
* first δt / prev first: median ratio of a period's first attempted δt to the previous period's first accepted δt;
* e/ε acc (p10, p50, p90) and e/ε rej (p50): error-estimate ratios of accepted and rejected attempts (finite
  ones; "rej ∞": rejections of a failed solve, error = ∞);
* what set the next δt after an accepted step (shares): "grow cap" (the error allowed more than K_MAX_GROW = 5×),
  "dead band" (the proposal was within 0.9–1.2× and was ignored), "kept" (error asked for a shrink that an
  accepted step does not get), "error" (δt = 0.9 δt (ε/e)^½ applied), "max_step" (capped by δt_max).

No RESULTS.md section: it prints its tables. The default run (eight cases × 300 env steps) takes about 1 minute.
"""
from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from cenic_gym import cenic  # noqa: E402  (importing cenic_gym registers the envs)
from env_throughput import RandomPolicy, load  # noqa: E402
from cenic_gym.envs import SCRIPTED_POLICIES  # noqa: E402

SCRIPTED_ALL = SCRIPTED_POLICIES  # every task's scripted policy (env_throughput.SCRIPTED lacks the Allegro's)
DEFAULT_CASES = ["CenicQuadruped-v0:random", "CenicQuadruped-v0:scripted", "CenicAllegro-v0:random",
                 "CenicAllegro-v0:scripted", "CenicFranka-v0:random", "CenicFranka-v0:scripted",
                 "CenicSuction-v0:random", "CenicSuction-v0:scripted"]
LIMITERS = ("grow cap", "dead band", "kept", "error", "max_step")


def classify(dt, err, tol, max_step, accepted):
    """Which rule of :func:`cenic_gym.cenic.adjust_step_size` set the step after an attempt of size dt."""
    if err == 0.0:
        raw = math.inf
    else:
        raw = cenic.K_SAFE * dt * (tol / err) ** (1.0 / cenic.ERROR_ORDER)
    new, _ = cenic.adjust_step_size(dt, err, tol, 0.0, max_step)
    if new >= max_step and raw > max_step and (raw <= cenic.K_MAX_GROW * dt or max_step < cenic.K_MAX_GROW * dt):
        return "max_step"
    if cenic.K_LOW * dt < raw < cenic.K_HIGH * dt:
        return "dead band"
    if raw > cenic.K_MAX_GROW * dt:
        return "grow cap"
    if raw < dt and accepted:
        return "kept"
    return "error"


def period_start(it):
    """The first nominal step of the next control period (the period-start predictor where the code has it)."""
    if hasattr(cenic, "period_start_step"):
        return cenic.period_start_step(it.dt, it.period_dt)
    return it.dt


def run_case(env_id, policy, steps, accuracy):
    env = gym.make(env_id, accuracy=accuracy)
    u = env.unwrapped
    it = u.sim.integrator
    obs, _ = env.reset(seed=0)
    if policy == "random":
        pol = RandomPolicy(env, 0)
    else:
        pol = load(SCRIPTED_ALL[env_id])(env)
    pol.reset()
    periods = []  # (t0, t1, nominal dt at start, attempts)
    it.history = []
    episode = 0
    for _ in range(steps):
        action = pol(obs)
        t0, n0 = it.t, len(it.history)
        dt0 = period_start(it)
        obs, _, term, trunc, info = env.step(action)
        if "sim_failure" in info:
            raise RuntimeError(f"{env_id} {policy}: {info['sim_failure']}")
        periods.append((t0, t0 + u.control_period, dt0, list(it.history[n0:])))
        if term or trunc:
            episode += 1
            obs, _ = env.reset(seed=episode)
            pol.reset()
    tol, max_step = it.accuracy, it.max_step
    rows = dict(att=0, rej=0, rej_inf=0, rej_first=0, rej_later=0, acc=0, clipped=0, tiny=0)
    dt_first, dt_later, ratio_prev, e_acc, e_rej = [], [], [], [], []
    lim = dict.fromkeys(LIMITERS, 0)
    prev_first = None
    mismatches = 0
    for t0, t1, nominal, hist in periods:
        first_done = False
        accepted_dts = []
        for k, (t, dt, ok, err) in enumerate(hist):
            expect = min(nominal, t1 - t)
            if not math.isclose(expect, dt, rel_tol=1e-9, abs_tol=1e-15):
                mismatches += 1
            clipped = dt < nominal
            rows["att"] += 1
            if k == 0 and prev_first is not None:
                ratio_prev.append(dt / prev_first)
            new, _ = cenic.adjust_step_size(dt, err, tol, it.min_step, max_step)
            if ok:
                e_acc.append(err / tol)
                rows["acc"] += 1
                rows["clipped"] += clipped
                lim[classify(dt, err, tol, max_step, True)] += 1
                (dt_later if first_done else dt_first).append(dt)
                if not first_done:
                    prev_first = dt
                first_done = True
                accepted_dts.append(dt)
                nominal = max(new, nominal) if clipped else new
            else:
                if math.isfinite(err):
                    e_rej.append(err / tol)
                else:
                    rows["rej_inf"] += 1
                rows["rej"] += 1
                rows["rej_later" if first_done else "rej_first"] += 1
                nominal = new
        if len(accepted_dts) >= 2 and accepted_dts[-1] < 0.25 * accepted_dts[-2]:
            rows["tiny"] += 1
    env.close()
    n = len(periods)
    pct = lambda a, p: float(np.percentile(a, p)) if len(a) else math.nan  # noqa: E731
    na = max(rows["acc"], 1)
    return dict(case=f"{env_id} {policy}", attempts=rows["att"] / n, rejected=rows["rej"] / n,
                rej_first=rows["rej_first"] / n, rej_later=rows["rej_later"] / n, acc=rows["acc"] / n,
                clipped=rows["clipped"] / na, tiny=rows["tiny"] / n, dt_first=pct(dt_first, 50) * 1e3,
                dt_later=pct(dt_later, 50) * 1e3, ratio_prev=pct(ratio_prev, 50),
                e10=pct(e_acc, 10), e50=pct(e_acc, 50), e90=pct(e_acc, 90), erej=pct(e_rej, 50),
                rej_inf=rows["rej_inf"] / n, lim={k: v / na for k, v in lim.items()}, mismatches=mismatches,
                episodes=episode + 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--accuracy", type=float, default=1e-3)
    ap.add_argument("--case", action="append", help="EnvId:random|scripted (repeatable)")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    t_start = time.perf_counter()
    print(f"ε = {args.accuracy:g}, {args.steps} env steps per case, reset(seed=0) (seed k for the k-th restart)\n")
    print("| case | attempts | rejected | rej first | rej later | acc / period | clipped | tiny last | "
          "δt first [ms] | "
          "δt later [ms] | first δt / prev first | e/ε acc p10 / p50 / p90 | e/ε rej p50 | rej ∞ | "
          + " | ".join(f"next δt: {k}" for k in LIMITERS) + " |")
    print("|---" * (14 + len(LIMITERS)) + "|")
    for case in args.case or DEFAULT_CASES:
        env_id, policy = case.split(":")
        r = run_case(env_id, policy, args.steps, args.accuracy)
        if r["mismatches"]:
            raise RuntimeError(f"{case}: the replayed controller missed {r['mismatches']} recorded step sizes")
        print(f"| {r['case']} | {r['attempts']:.2f} | {r['rejected']:.2f} | {r['rej_first']:.2f} | "
              f"{r['rej_later']:.2f} | {r['acc']:.2f} | {r['clipped']:.0%} | {r['tiny']:.0%} | {r['dt_first']:.2f} | "
              f"{r['dt_later']:.2f} | {r['ratio_prev']:.2f} | {r['e10']:.2f} / {r['e50']:.2f} / {r['e90']:.2f} | "
              f"{r['erej']:.2f} | {r['rej_inf']:.2f} | " + " | ".join(f"{r['lim'][k]:.0%}" for k in LIMITERS) + " |",
              flush=True)
    print(f"\n{time.perf_counter() - t_start:.0f} s; load average at start {load0:.2f}, "
          f"at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
