"""Real-to-sim: fit an env's physical parameters to a robot log (:mod:`cenic_gym.sim2real.replay` format).

The log is cut into windows (``window`` seconds each). Every window is replayed from the logged state at its first
row — joint positions and velocities, object poses (object velocities from the poses' forward differences) — with
the logged commands held over each control period, ``delay`` periods late (a robot whose command path is
``delay`` control periods slower than the log says), and the simulated joints and objects are compared with the
log's at every row. The residual is

    r = [(q_sim − q_log) / σ_q,  (v_sim − v_log) / σ_v,  (p_sim − p_log) / σ_p]   over every row of every window

(σ_q, σ_v, σ_p: ``weights``; p: object positions). With ε-controlled simulation the numerical error of the
replay is bounded by the accuracy, so what the fit removes is model error. Restarting each window from the log
keeps a wrong start from compounding (and a contact event from making the loss jump).

The continuous parameters (:mod:`cenic_gym.parameters` names: ``kp_scale``, ``damping/panda_joint4``, ``mass/box``,
``mu/box/0``, ...) are fitted by ``scipy.optimize.least_squares`` (trust-region reflective, forward-difference
Jacobian, within the physical ranges), by CMA-ES (``method="cma"``: the ``cma`` package, on ½‖r‖²), or by least
squares polished by CMA-ES from its solution (``"lsq+cma"``: where the loss is kinked near the minimum, as with
contact; docs/real-to-sim.md); the delay,
a whole number of control periods, by search: the delay of least loss at the start values, refitted, then its
neighbours tried with the fitted values until none is better. Uncertainty: the Gauss–Newton covariance
s² (JᵀJ)⁻¹ at the solution (s² = ‖r‖² / (m − p)) or, with ``bootstrap`` = B, the spread of B refits on windows
drawn with replacement.

Output (:class:`FitResult`): the fitted values with their standard deviations, the replay error before and after
(RMS joint error over the whole log replayed as one window, and over the windows), the ``env_kwargs`` of the
fitted robot (``physics`` and ``action_delay``, for ``gym.make``) and a ``domain_randomization`` dict centred on the
fit (± max(k σ, rel |value|), within the physical ranges) that ``gym.make(env, domain_randomization=...)`` accepts.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pinocchio as pin

from .. import parameters
from ..errors import SimulationError
from .replay import LogError, RobotLog, controlled_joints, load_log, set_log_state
from .rollout import make_env

WEIGHTS = dict(q=1e-3, v=2e-2, pose=1e-3)  # σ of the residual per channel [rad or m, rad/s or m/s, m]
FLOORS = {"damping": 0.1, "friction": 0.1, "armature": 0.01}  # typical magnitude where the start value is 0
DIFF_STEP = 1e-2  # least squares' forward-difference step, relative to each value (see fit)
METHODS = ("lsq", "cma", "lsq+cma")
POLISH_SIGMA = 0.05  # lsq+cma: CMA-ES's initial step from the least-squares solution (a fraction of each value)
COARSE_NFEV = 3  # residual evaluations (least squares: iterations, each with its Jacobian) of the per-delay fits
FAILED = 1e3  # residual entries of a window whose replay failed (finite, so the optimizer steps back)


@dataclass
class Window:
    """Rows ``start`` … ``stop`` − 1 of the log, replayed from row ``start``."""

    start: int
    stop: int


class LogReplayer:
    """Replays windows of ``log`` in ``env_id`` for given parameter values and delay (see the module docstring).

    params: names of :mod:`cenic_gym.parameters`; the env is made once (``env_kwargs``, ``accuracy`` or
    ``fixed_step``; friction parameters add a JointFriction) and reset with ``seed`` (objects without a logged
    pose keep that reset's pose); each replay restores that state and sets the values."""

    def __init__(self, env_id, log, params, accuracy=1e-5, fixed_step=None, seed=0, env_kwargs=None,
                 window=2.0, max_delay=3, weights=None):
        kw = dict(env_kwargs or {})
        physics = dict(kw.pop("physics", None) or {})
        for name in params:
            if parameters.needs_friction([name]) and name not in physics:
                physics[name] = 0.0  # builds the JointFriction the parameter acts on
        kw.update(accuracy=accuracy, physics=physics or None)
        if fixed_step is not None:
            kw["fixed_step"] = fixed_step
        self.env = make_env(env_id, **kw)
        self.env.reset(seed=seed)
        u = self.env.unwrapped
        self.sim = u.sim
        self.control_period = u.control_period
        joints, self.qidx, self.vidx, self.parts = controlled_joints(self.env)
        if not isinstance(log, RobotLog):
            log = load_log(log, joints)
        elif tuple(log.joints) != joints:
            raise LogError(f"log joints {list(log.joints)} do not match the env's controlled joints {list(joints)}")
        self.log = log
        if len(set(params)) != len(params):
            raise ValueError(f"parameters named twice: {sorted(p for p in params if list(params).count(p) > 1)}")
        self.params = [parameters.resolve(self.sim, n) for n in params]
        self.state0 = self.sim.get_state()
        self.start_values = np.array([p.get(self.sim) for p in self.params])
        if not (isinstance(max_delay, (int, np.integer)) and 0 <= max_delay < len(log.t) - 1):
            raise ValueError(f"max_delay must be an integer in [0, {len(log.t) - 2}] (control periods), got "
                             f"{max_delay!r}")
        self.max_delay = int(max_delay)
        self.windows = make_windows(log.t, window, self.max_delay)
        self.weights = {**WEIGHTS, **(weights or {})}
        for k, w in self.weights.items():
            if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
                raise ValueError(f"weights[{k!r}] must be a number > 0, got {w!r}")
        self.object_v = {b: _pose_velocities(log.t, p) for b, p in log.poses.items()}
        self.replays = 0

    def check(self, values):
        """``values`` (p,) as floats, each within its parameter's physical range (ValueError naming it)."""
        return np.array([p.check(float(x)) for p, x in zip(self.params, values)])

    def simulate(self, values, delay, window):
        """(q (R, n), v (R, n), {body: positions (R, 3)}, failure or None) of rows window.start … stop − 1."""
        sim, log = self.sim, self.log
        sim.restore(self.state0)
        for p, x in zip(self.params, values):
            p.set(sim, x)
        s = window.start
        set_log_state(sim, log, s, self.qidx, self.vidx, self.object_v)
        qs, vs = [log.q[s]], [log.v[s]]
        ps = {b: [p[s, :3]] for b, p in log.poses.items()}
        failure = None
        for k in range(s, window.stop - 1):
            cmd = log.cmd[max(k - delay, 0)]
            for ctrl, sl in self.parts:
                ctrl.set_target(q_d=cmd[sl], v_d=0.0)
            try:
                sim.advance_to(float(log.t[k + 1]), inputs_changed=True)
            except (SimulationError, FloatingPointError) as e:
                failure = f"{type(e).__name__} at t = {log.t[k]:g} s (row {k}): {e}"
                break
            qs.append(sim.q[self.qidx])
            vs.append(sim.v[self.vidx])
            for b in log.poses:
                ps[b].append(sim.body_pose(b)[0])
        self.replays += 1
        return np.array(qs), np.array(vs), {b: np.array(p) for b, p in ps.items()}, failure

    def residual(self, values, delay, windows=None):
        """The weighted residual (module docstring) over ``windows`` (default all)."""
        w, log, out = self.weights, self.log, []
        for win in self.windows if windows is None else windows:
            q, v, ps, failure = self.simulate(values, delay, win)
            n = win.stop - win.start
            if failure is not None:
                out.append(np.full(n * (2 * log.q.shape[1] + 3 * len(log.poses)), FAILED))
                continue
            sl = slice(win.start, win.stop)
            out += [((q - log.q[sl]) / w["q"]).ravel(), ((v - log.v[sl]) / w["v"]).ravel()]
            out += [((ps[b] - log.poses[b][sl, :3]) / w["pose"]).ravel() for b in log.poses]
        return np.concatenate(out)

    def replay_error(self, values, delay):
        """RMS joint error [rad or m] and max object position error [m] of the whole log replayed from its first
        row, and the RMS joint error over the windows."""
        whole = Window(0, len(self.log.t))
        q, _, ps, failure = self.simulate(values, delay, whole)
        rows = q.shape[0]
        err = q - self.log.q[:rows]
        wq = [self.simulate(values, delay, win)[0] - self.log.q[win.start:win.stop] for win in self.windows]
        return dict(rms_q=float(np.sqrt(np.mean(err ** 2))), max_q=float(np.max(np.abs(err))),
                    max_pose={b: float(np.max(np.linalg.norm(p - self.log.poses[b][:rows, :3], axis=1)))
                              for b, p in ps.items()},
                    window_rms_q=float(np.sqrt(np.mean(np.concatenate(wq) ** 2))), failure=failure)

    def trajectories(self, values, delay):
        """(t, q, {body: positions}) of the whole log replayed from its first row (for plots)."""
        q, _, ps, _ = self.simulate(values, delay, Window(0, len(self.log.t)))
        return self.log.t[:q.shape[0]], q, ps

    def close(self):
        self.env.close()


def make_windows(t, window, first=0):
    """Consecutive windows of about ``window`` seconds (at least 2 rows each) from row ``first`` on."""
    if not (isinstance(window, (int, float)) and math.isfinite(window) and window > 0):
        raise ValueError(f"window must be a duration > 0 [s], got {window!r}")
    out, s, T = [], int(first), len(t)
    while s < T - 1:
        e = int(np.searchsorted(t, t[s] + window - 1e-9 * max(1.0, abs(window)), side="left")) + 1
        e = min(max(e, s + 2), T)
        if T - e < 2:  # a last sliver joins the window before it
            e = T
        out.append(Window(s, e))
        s = e - 1
    return out


def _pose_velocities(t, poses):
    """(T, 6) free-body velocities [world linear, body angular] by forward differences of poses (T, 7)."""
    out = np.zeros((len(t), 6))
    for k in range(len(t) - 1):
        dt = t[k + 1] - t[k]
        out[k, :3] = (poses[k + 1, :3] - poses[k, :3]) / dt
        R0 = pin.Quaternion(poses[k, 6], *poses[k, 3:6]).normalized().matrix()
        R1 = pin.Quaternion(poses[k + 1, 6], *poses[k + 1, 3:6]).normalized().matrix()
        out[k, 3:] = pin.log3(R0.T @ R1) / dt
    out[-1] = out[-2] if len(t) > 1 else 0.0
    return out


@dataclass
class FittedParameter:
    """name, unit, start (the env's value before the fit), value (fitted), std (one standard deviation)."""

    name: str
    unit: str
    start: float
    value: float
    std: float


@dataclass
class FitResult:
    """The fit of :func:`fit`: ``parameters`` (:class:`FittedParameter`), ``delay`` [control periods], loss
    (½‖r‖²) before and after, replay errors (:meth:`LogReplayer.replay_error`) before and after, the method,
    replays run, wall time [s], the env and the options it was fitted with."""

    env_id: str
    parameters: list
    delay: int
    loss_before: float
    loss_after: float
    replay_before: dict
    replay_after: dict
    method: str
    replays: int
    wall_s: float
    accuracy: float
    windows: int
    uncertainty: str
    delays_tried: dict = field(default_factory=dict)

    @property
    def physics(self):
        """{name: fitted value}: the env option ``physics`` of the fitted robot."""
        return {p.name: p.value for p in self.parameters}

    def env_kwargs(self):
        """``gym.make`` options of the fitted robot: ``physics`` and ``action_delay``."""
        return dict(physics=self.physics, action_delay=int(self.delay))

    def domain_randomization(self, k=2.0, rel=0.05):
        """{name: (low, high)} centred on the fit: ± max(k σ, rel |value|), clipped to the physical ranges; pass it
        as ``gym.make(env_id, domain_randomization=...)`` (with ``action_delay`` from :meth:`env_kwargs`)."""
        out = {}
        for p in self.parameters:
            spec = parameters.KINDS[p.name.split("/", 1)[0]]
            half = max(k * p.std, rel * abs(p.value)) if math.isfinite(p.std) else rel * abs(p.value)
            lo = max(p.value - half, spec.low if spec.low_inclusive else spec.low + 1e-9 * max(1.0, abs(p.value)))
            out[p.name] = (float(lo), float(min(p.value + half, spec.high)))
        return out

    def to_dict(self):
        return dict(asdict(self), env_kwargs=self.env_kwargs(), domain_randomization=self.domain_randomization())

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)

    def lines(self):
        """A text report."""
        out = [f"{self.env_id}: {len(self.parameters)} parameter(s) and the delay fitted by {self.method} over "
               f"{self.windows} window(s) at accuracy {self.accuracy:g} ({self.replays} window replays, "
               f"{self.wall_s:.1f} s)",
               f"  action delay: {self.delay} control period(s) (loss per delay tried: "
               + ", ".join(f"{d}: {v:.4g}" for d, v in sorted(self.delays_tried.items())) + ")"]
        for p in self.parameters:
            out.append(f"  {p.name:28s} {p.start:12.5g} -> {p.value:12.5g} ± {p.std:.2g} {p.unit}")
        b, a = self.replay_before, self.replay_after
        out.append(f"  replay RMS joint error {b['rms_q']:.4g} -> {a['rms_q']:.4g} (whole log), "
                   f"{b['window_rms_q']:.4g} -> {a['window_rms_q']:.4g} (windows); loss {self.loss_before:.4g} -> "
                   f"{self.loss_after:.4g}")
        for body in a["max_pose"]:
            out.append(f"  {body}: max position error {b['max_pose'][body]:.4g} -> {a['max_pose'][body]:.4g} m")
        return out


class _Scaled:
    """Optimizer coordinates x = value / typical (typical: |start| or the kind's floor), within the physical
    ranges (an open lower bound is kept 1e-6 typical inside)."""

    def __init__(self, replayer, start):
        self.typ = np.array([max(abs(x), FLOORS.get(p.kind, 1e-3)) for p, x in zip(replayer.params, start)])
        specs = [p.spec for p in replayer.params]
        lo = np.array([k.low + (0.0 if k.low_inclusive else 1e-6 * t) for k, t in zip(specs, self.typ)])
        hi = np.array([k.high for k in specs])
        self.lo, self.hi = lo / self.typ, hi / self.typ

    def values(self, x):
        return np.clip(x, self.lo, self.hi) * self.typ

    def x(self, values):
        return np.asarray(values, dtype=float) / self.typ


def fit(env_id, log, params, method="lsq", accuracy=1e-5, fixed_step=None, seed=0, env_kwargs=None, window=2.0,
        max_delay=3, delay=None, start=None, weights=None, bootstrap=0, max_nfev=None, diff_step=DIFF_STEP,
        progress=None):
    """Fit ``params`` (and the action delay, unless ``delay`` is given) of ``env_id`` to ``log`` (a
    :class:`RobotLog` or a path): see the module docstring. ``start``: {name: value} start values (default the
    env's own); ``method``: "lsq" or "cma"; ``bootstrap``: refits on resampled windows for the uncertainty (0: the
    Gauss–Newton covariance); ``progress``: a callable given one line per stage. Returns a :class:`FitResult`."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if not params:
        raise ValueError("fit: no parameters to fit (params is empty)")
    if not (isinstance(diff_step, (int, float)) and math.isfinite(diff_step) and 0 < diff_step < 1):
        raise ValueError(f"diff_step must be a relative step in (0, 1), got {diff_step!r}")
    if not (isinstance(bootstrap, (int, np.integer)) and bootstrap >= 0):
        raise ValueError(f"bootstrap must be an integer >= 0, got {bootstrap!r}")
    w0 = time.perf_counter()
    rep = LogReplayer(env_id, log, list(params), accuracy, fixed_step, seed, env_kwargs, window, max_delay, weights)
    try:
        x0v = rep.start_values.copy()
        if start:
            unknown = set(start) - set(params)
            if unknown:
                raise ValueError(f"start values for parameters not fitted: {sorted(unknown)}")
            x0v = rep.check([start.get(p.name, x) for p, x in zip(rep.params, x0v)])
        scaled = _Scaled(rep, x0v)
        solver = Solver(method, max_nfev, float(diff_step))
        say = progress or (lambda line: None)
        delays = list(range(rep.max_delay + 1)) if delay is None else [int(delay)]
        if delay is not None and not 0 <= int(delay) <= rep.max_delay:
            raise ValueError(f"delay must be in [0, max_delay={rep.max_delay}], got {delay!r}")
        loss = lambda values, d: 0.5 * float(np.sum(rep.residual(values, d) ** 2))  # noqa: E731
        d_before = 0 if 0 in delays else delays[0]  # the robot as the env models it: no delay
        loss_before = loss(x0v, d_before)
        coarse = {}  # a short fit at every delay (a wrong gain can make a wrong delay look best at the start)
        for dc in delays:
            coarse_method = "lsq" if method == "lsq+cma" else method
            xc, _, cc = _minimize(rep, scaled, scaled.x(x0v), dc, Solver(coarse_method, COARSE_NFEV, diff_step))
            coarse[dc] = (cc, xc)
        say("coarse loss per delay: " + ", ".join(f"{k}: {v[0]:.6g}" for k, v in coarse.items()))
        d = min(coarse, key=lambda k: coarse[k][0])
        tried, fitted_at = {k: v[0] for k, v in coarse.items()}, set()
        x, jac = coarse[d][1], None
        while True:  # fit at d; move to a neighbouring delay while it is better at the fitted values
            x, jac, cost = _minimize(rep, scaled, x, d, solver)
            tried[d] = cost
            fitted_at.add(d)
            say(f"delay {d}: loss {cost:.6g} at {dict(zip(params, scaled.values(x)))}")
            near = {dn: loss(scaled.values(x), dn) for dn in (d - 1, d + 1) if dn in delays and dn not in fitted_at}
            near = {dn: c for dn, c in near.items() if c < cost}
            if not near:
                break
            d = min(near, key=near.get)
        values = scaled.values(x)
        std = _std(rep, scaled, x, d, jac, bootstrap, solver)
        replay_before = rep.replay_error(x0v, d_before)
        replay_after = rep.replay_error(values, d)
        result = FitResult(env_id, [FittedParameter(p.name, p.unit, float(s), float(v), float(e))
                                    for p, s, v, e in zip(rep.params, x0v, values, std)],
                           int(d), float(loss_before), float(tried[d]), replay_before, replay_after, method,
                           rep.replays, time.perf_counter() - w0, float(accuracy) if fixed_step is None else math.nan,
                           len(rep.windows), f"bootstrap over windows ({bootstrap})" if bootstrap else
                           "Gauss-Newton covariance", {int(k): float(v) for k, v in tried.items()})
        result.replayer = rep  # for plots (not serialized)
        return result
    except BaseException:
        rep.close()
        raise


@dataclass(frozen=True)
class Solver:
    """How one continuous fit runs: ``method`` ("lsq", "cma", or "lsq+cma": least squares, then CMA-ES from its
    solution), ``max_nfev`` (least-squares iterations; CMA-ES: that many times (p + 1) evaluations; None: 50 (p + 1)
    iterations, 200 (p + 1) evaluations, and 15 (p + 1) for the CMA-ES polish of lsq+cma) and ``diff_step`` (least
    squares' forward-difference step relative to each value)."""

    method: str
    max_nfev: int | None
    diff_step: float


def _minimize(rep, scaled, x0, d, solver, windows=None):
    """(x, Jacobian in x or None, loss) of one continuous fit at delay ``d``."""
    fun = lambda x: rep.residual(scaled.values(x), d, windows)  # noqa: E731
    max_nfev = solver.max_nfev
    if solver.method == "lsq+cma":  # least squares, then CMA-ES from its solution (a kinked loss near the minimum)
        x, jac, cost = _minimize(rep, scaled, x0, d, Solver("lsq", max_nfev, solver.diff_step), windows)
        polished = _cma(fun, scaled, x, POLISH_SIGMA, (max_nfev or 15) * (len(x0) + 1))
        return polished if polished[2] < cost else (x, jac, cost)  # CMA-ES's samples need not beat its start
    if solver.method == "lsq":
        from scipy.optimize import least_squares

        r = least_squares(fun, x0, bounds=(scaled.lo, scaled.hi), method="trf", diff_step=solver.diff_step,
                          x_scale=1.0, max_nfev=max_nfev or 50 * (len(x0) + 1), xtol=1e-6, ftol=1e-8, gtol=1e-8)
        return r.x, r.jac, float(r.cost)
    n = len(x0)
    return _cma(fun, scaled, x0, 0.1, max_nfev * (n + 1) if max_nfev else 200 * (n + 1))  # the budget in residuals


def _cma(fun, scaled, x0, sigma, maxfevals):
    """CMA-ES on ½‖fun(x)‖² from x0 with initial step ``sigma`` (optimizer coordinates), within the bounds."""
    try:
        import cma
    except ImportError:
        raise ImportError("method 'cma' / 'lsq+cma' needs the cma package: pip install cma (or cenic-gym[sim2real])") \
            from None
    opts = dict(bounds=[list(scaled.lo), list(scaled.hi)], verbose=-9, seed=1, tolfun=1e-9, maxfevals=int(maxfevals))
    es = cma.CMAEvolutionStrategy(list(x0), sigma, opts)
    es.optimize(lambda x: 0.5 * float(np.sum(fun(np.asarray(x)) ** 2)))
    xb = np.asarray(es.result.xbest, dtype=float)
    return xb, None, 0.5 * float(np.sum(fun(xb) ** 2))


def _jacobian(rep, scaled, x, d, step):
    r0 = rep.residual(scaled.values(x), d)
    J = np.empty((r0.shape[0], x.shape[0]))
    for i in range(x.shape[0]):
        h = step * max(1.0, abs(x[i]))
        xp = x.copy()
        xp[i] = x[i] + h if x[i] + h <= scaled.hi[i] else x[i] - h
        J[:, i] = (rep.residual(scaled.values(xp), d) - r0) / (xp[i] - x[i])
    return J, r0


def _std(rep, scaled, x, d, jac, bootstrap, solver):
    """Standard deviations of the fitted values (module docstring)."""
    if bootstrap:
        rng = np.random.default_rng(0)
        fits = []
        for _ in range(bootstrap):
            pick = [rep.windows[i] for i in rng.integers(0, len(rep.windows), len(rep.windows))]
            xb, _, _ = _minimize(rep, scaled, x.copy(), d, solver, pick)
            fits.append(scaled.values(xb))
        return np.std(np.array(fits), axis=0, ddof=1) if bootstrap > 1 else np.full(x.shape, math.nan)
    if jac is not None:
        J, r = jac, rep.residual(scaled.values(x), d)
    else:
        J, r = _jacobian(rep, scaled, x, d, solver.diff_step)
    m, p = J.shape
    s2 = float(r @ r) / max(m - p, 1)
    try:
        cov = np.linalg.pinv(J.T @ J) * s2
    except np.linalg.LinAlgError:
        return np.full(p, math.inf)
    return np.sqrt(np.maximum(np.diag(cov), 0.0)) * scaled.typ


def plot_fit(result, path):
    """Logged vs simulated joints (start values and fitted) and object positions over the whole log, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rep = result.replayer
    log = rep.log
    start = [p.start for p in result.parameters]
    fitted = [p.value for p in result.parameters]
    t0, q0, p0 = rep.trajectories(start, 0)
    t1, q1, p1 = rep.trajectories(fitted, result.delay)
    n = log.q.shape[1]
    rows = n + len(log.poses)
    fig, axes = plt.subplots(rows, 1, figsize=(9, 1.6 * rows), sharex=True)
    axes = np.atleast_1d(axes)
    for i in range(n):
        ax = axes[i]
        ax.plot(log.t, log.q[:, i], "k-", lw=1.5, label="log")
        ax.plot(t0, q0[:, i], "C0--", lw=1, label="start values")
        ax.plot(t1, q1[:, i], "C3-", lw=1, label="fitted")
        ax.set_ylabel(log.joints[i].replace("panda_", ""), fontsize=7)
    for k, b in enumerate(log.poses):
        ax = axes[n + k]
        for c in range(3):
            ax.plot(log.t, log.poses[b][:, c], "k-", lw=1.5)
            ax.plot(t0, p0[b][:, c], "C0--", lw=1)
            ax.plot(t1, p1[b][:, c], "C3-", lw=1)
        ax.set_ylabel(f"{b} xyz [m]", fontsize=7)
    axes[0].legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"{result.env_id}: log vs replay (RMS joint error {result.replay_before['rms_q']:.3g} -> "
                 f"{result.replay_after['rms_q']:.3g})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# -- logs made by a simulator standing in for the robot ----------------------------------------------------------

def record_commands(env, cmd, dt=None, delay=0, bodies=None, physics=None, rows=None):
    """A :class:`RobotLog` of ``env`` (reset already, its simulator the "robot"; ``physics``: an optional stand-in
    with ``advance_to``, e.g. :class:`~cenic_gym.sim2real.sim2sim.MujocoPhysics`) executing the set-points ``cmd``
    of its controlled joints — an array (T, n), or a callable ``cmd(k, sim) -> (n,)`` asked at each of ``rows``
    rows (a program that reads the robot's state) — row k held over [t_k, t_k + dt) (dt: the control period), each
    applied ``delay`` periods late (the robot's true command delay; the log records the commands as sent)."""
    from ..model import matrix_to_quat_xyzw

    u = env.unwrapped
    sim = u.sim if physics is None else physics
    joints, qidx, vidx, parts = controlled_joints(env)
    if callable(cmd):
        program, T = cmd, int(rows)
    else:
        table = np.asarray(cmd, dtype=float)
        if table.ndim != 2 or table.shape[1] != len(joints):
            raise ValueError(f"cmd must have shape (T, {len(joints)}) for joints {list(joints)}, got {table.shape}")
        program, T = (lambda k, _: table[k]), table.shape[0]
    if not (isinstance(delay, (int, np.integer)) and delay >= 0):
        raise ValueError(f"delay must be an integer >= 0 (control periods), got {delay!r}")
    dt = u.control_period if dt is None else float(dt)
    bodies = list(u.sim.system.body_names if bodies is None else bodies)

    def pose(b):
        p, R = sim.body_pose(b)
        return np.concatenate([p, matrix_to_quat_xyzw(R)])

    t0, sent = sim.t, []
    rows_q, rows_v, rows_p = [sim.q[qidx]], [sim.v[vidx]], [[pose(b) for b in bodies]]
    for k in range(T):
        row = np.asarray(program(k, sim), dtype=float)
        if row.shape != (len(joints),) or not np.all(np.isfinite(row)):
            raise ValueError(f"command row {k} must be {len(joints)} finite set-points, got {row!r}")
        sent.append(row)
        if k == T - 1:
            break
        applied = sent[max(k - delay, 0)]
        for ctrl, sl in parts:
            ctrl.set_target(q_d=applied[sl], v_d=0.0)
        sim.advance_to(t0 + (k + 1) * dt, inputs_changed=True)
        rows_q.append(sim.q[qidx])
        rows_v.append(sim.v[vidx])
        rows_p.append([pose(b) for b in bodies])
    t = t0 + dt * np.arange(T)
    return RobotLog(t, np.array(rows_q), np.array(rows_v), np.array(sent), joints,
                    {b: np.array([r[i] for r in rows_p]) for i, b in enumerate(bodies)})


def add_noise(log, sigma_q=0.0, sigma_v=0.0, sigma_pose=0.0, seed=0):
    """A copy of ``log`` with Gaussian noise on the measured joints (σ_q [rad or m], σ_v [rad/s or m/s]) and on the
    object positions (σ_pose [m]); commands and time are exact."""
    rng = np.random.default_rng(seed)
    poses = {b: np.column_stack([p[:, :3] + rng.normal(0.0, sigma_pose, p[:, :3].shape), p[:, 3:]])
             for b, p in log.poses.items()}
    return RobotLog(log.t.copy(), log.q + rng.normal(0.0, sigma_q, log.q.shape),
                    log.v + rng.normal(0.0, sigma_v, log.v.shape), log.cmd.copy(), log.joints, poses)
