"""Ray-parallel vector envs: :class:`RayVectorEnv`, a Gymnasium 1.x ``VectorEnv`` (SB3 adapter: :mod:`cenic_gym.sb3`).

CENIC envs are CPU-bound per env, so throughput comes from many envs across processes and machines. Each Ray actor
(``num_cpus=1``) holds ``envs_per_actor`` sub-envs and steps them one after the other; a vector ``step`` sends one
call to every actor and waits for all of them (one round trip per actor per step: an actor round trip costs ~1.5 ms
on a 2-core machine, paid while the actors idle, so batch envs per actor: with CENIC envs at ~2 ms per env step,
16 envs per actor give 0.8 of in-process throughput per core, 4 give 0.75 with one actor and less with more,
``benchmarks/ray_scaling.py``). The same code runs on a local
``ray.init()`` and on a cluster (``ray.init(address="auto")`` or ``address="ray://head:10001"``); actors are spread
over the nodes (``scheduling_strategy="SPREAD"``).

Semantics (Gymnasium 1.x, ``metadata["autoreset_mode"]``):

- ``AutoresetMode.NEXT_STEP`` (Gymnasium's default): a sub-env that terminated or truncated is reset on the *next*
  ``step`` (its action is ignored; reward 0, both flags False). The observation returned with the final flags is
  the final observation, so it is available for bootstrapping as is.
- ``AutoresetMode.SAME_STEP``: the sub-env is reset inside the step that ended it; the observation returned is the
  first of the new episode and the final one is in ``infos["final_obs"]`` (with ``infos["final_info"]``), as
  Gymnasium's ``SyncVectorEnv`` puts them. The SB3 adapter (:mod:`cenic_gym.sb3`) uses this mode.

Seeds: ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (a list gives one seed per sub-env); autoresets continue
each sub-env's own generator, so a run is a pure function of the seed and the actions (bit-identical to an
in-process loop over the same sub-envs, ``tests/test_vector.py``).

Faults: an exception raised by a sub-env's ``step`` (a solver failure, a bad action) does not take the batch down:
that sub-env's episode is reported truncated with ``info["env_error"] = "<Type>: <message>"`` and its last valid
observation, and the sub-env is reset as after any episode end. An actor that dies (a crash, ``ray.kill``, a lost
node) is replaced by a new actor whose sub-envs are re-created and reset (seeds derived from the sub-env's seed and
the restart count); the episodes that were running there are reported truncated with ``info["actor_restarted"]``
(the reason) and the last observation seen; the other actors' sub-envs are not touched. After ``max_restarts``
restarts in one vector env a ``RuntimeError`` is raised.
"""
from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}


class EnvWorker:
    """The body of one Ray actor: ``len(indices)`` sub-envs stepped in turn (see :class:`RayVectorEnv`).

    ``seeds`` are used by the first reset of each sub-env when it happens inside ``step`` (an actor that replaces a
    dead one starts with ``needs_reset`` set)."""

    def __init__(self, make_env, indices, autoreset_mode, seeds=None, needs_reset=False):
        self.envs = [make_env() for _ in indices]
        self.space = self.envs[0].observation_space
        self.indices = list(indices)
        self.mode = autoreset_mode
        self.seeds = list(seeds) if seeds is not None else [None] * len(self.envs)
        self.needs_reset = [bool(needs_reset)] * len(self.envs)
        self.last_obs = [None] * len(self.envs)

    def node_id(self):
        """The Ray node this actor runs on (hex id)."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def spaces(self):
        e = self.envs[0]
        return e.observation_space, e.action_space, dict(e.metadata), e.spec

    def reset(self, seeds, options):
        """Reset every sub-env -> (batched observations, list of infos)."""
        infos = []
        for j, env in enumerate(self.envs):
            obs, info = env.reset(seed=seeds[j], options=options)
            self.last_obs[j] = obs
            self.seeds[j] = None
            self.needs_reset[j] = False
            infos.append(info)
        return self._batch(self.last_obs), infos

    def step(self, actions):
        """One action per sub-env (an array with one row per sub-env, a list, or None: resets only) -> one packed
        result (:class:`Packed`: batched observations, rewards, flags as arrays, one info dict per sub-env), so
        that the driver handles one small message per actor and no per-sub-env tuples."""
        items = [self._step_one(j, None if actions is None else actions[j]) for j in range(len(self.envs))]
        return Packed(self._batch([it[0] for it in items]), np.array([it[1] for it in items], dtype=np.float64),
                      np.array([it[2] for it in items], dtype=np.bool_),
                      np.array([it[3] for it in items], dtype=np.bool_), [it[4] for it in items])

    def _batch(self, obs_list):
        return concatenate(self.space, obs_list, create_empty_array(self.space, n=len(obs_list), fn=np.empty))

    def _step_one(self, j, action):
        env = self.envs[j]
        if self.needs_reset[j]:
            try:
                obs, info = env.reset(seed=self.seeds[j])
            except Exception as e:  # noqa: BLE001  (reported in info; the batch goes on)
                return self.last_obs[j], 0.0, False, True, {"env_error": _describe(e)}
            self.seeds[j] = None
            self.needs_reset[j] = False
            self.last_obs[j] = obs
            return obs, 0.0, False, False, info
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as e:  # noqa: BLE001  (reported in info; the batch goes on)
            obs, reward, terminated, truncated, info = self.last_obs[j], 0.0, False, True, {"env_error": _describe(e)}
        self.last_obs[j] = obs
        if not (terminated or truncated):
            return obs, reward, terminated, truncated, info
        if self.mode == AutoresetMode.NEXT_STEP:
            self.needs_reset[j] = True
            return obs, reward, terminated, truncated, info
        try:
            new_obs, new_info = env.reset()
        except Exception as e:  # noqa: BLE001
            self.needs_reset[j] = True
            return obs, reward, terminated, truncated, {**info, "env_error": _describe(e)}
        self.last_obs[j] = new_obs
        return new_obs, reward, terminated, truncated, {**new_info, "final_obs": obs, "final_info": info}

    def call(self, name, args, kwargs, which):
        """``env.<name>`` (a wrapper attribute or method, through Gymnasium wrappers) for the sub-envs ``which``
        (positions in this actor): its value, or the result of calling it with ``args``, ``kwargs``."""
        out = []
        for j in which:
            attr = self.envs[j].get_wrapper_attr(name)
            out.append(attr(*args, **kwargs) if callable(attr) else attr)
        return out

    def set_attr(self, name, values, which):
        for j, v in zip(which, values):
            self.envs[j].set_wrapper_attr(name, v)

    def is_wrapped(self, wrapper_class, which):
        out = []
        for j in which:
            env, found = self.envs[j], False
            while isinstance(env, gym.Wrapper) and not found:
                found, env = isinstance(env, wrapper_class), env.env
            out.append(found)
        return out

    def close(self):
        for env in self.envs:
            env.close()


def _describe(e):
    return f"{type(e).__name__}: {e}"


class Packed(NamedTuple):
    """The result of one actor's ``step`` for its ``n`` sub-envs: ``obs`` batched as the observation space's
    ``batch_space(space, n)``, ``rewards`` (n,) float64, ``terminated`` / ``truncated`` (n,) bool, ``infos`` one
    dict per sub-env."""

    obs: Any
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    infos: list


def concat_batches(space, batches, out):
    """Write the batches ``batches`` (each batched as ``batch_space(space, n_k)``) one after another into ``out``
    (batched as ``batch_space(space, sum n_k)``) and return it: one ``np.concatenate`` per array leaf."""
    if isinstance(space, gym.spaces.Dict):
        return {k: concat_batches(s, [b[k] for b in batches], out[k]) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(concat_batches(s, [b[i] for b in batches], out[i]) for i, s in enumerate(space.spaces))
    if isinstance(out, np.ndarray):
        return np.concatenate(batches, axis=0, out=out)
    return concatenate(space, [x for b in batches for x in iterate(space, b)], out)


class _MakeEnv:
    """Picklable factory: ``gym.make(env_id, **kwargs)`` (importing cenic_gym registers our ids in the worker)."""

    def __init__(self, env_id, kwargs):
        self.env_id, self.kwargs = env_id, dict(kwargs)

    def __call__(self):
        return gym.make(self.env_id, **self.kwargs)


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


LEAN_SYSTEM_CONFIG = {"task_events_report_interval_ms": 0}  # no task events (``ray list tasks``, dashboard)


def init_ray(address: str | None = None, **kwargs):
    """Start Ray (or join the cluster at ``address``) unless it is running, without the dashboard
    (``include_dashboard=False``), without forwarding the workers' stdout/stderr to this process
    (``log_to_driver=False``; the workers' logs stay in Ray's session folder) and, for a local Ray it starts, without
    task-event reporting (:data:`LEAN_SYSTEM_CONFIG`: ~0.2–0.3 ms less CPU per actor call, driver and actor together,
    ``docs/performance.md``, "Ray vector envs"): on a small machine all of these take CPU from the actors. ``kwargs`` go to
    ``ray.init``. A Ray already initialized (e.g. the user's own ``ray.init(address=...)``) is left as it is."""
    import ray

    if ray.is_initialized():
        return
    lean = {"include_dashboard": False, "log_to_driver": False}
    if address is None:  # a cluster's system config is its own
        lean["_system_config"] = dict(LEAN_SYSTEM_CONFIG)
    ray.init(address=address, **{**lean, **kwargs})


def restart_seed(seed, restarts):
    """Seed of a sub-env re-created after its actor's ``restarts``-th restart (None stays None): a pure function of
    the sub-env's seed and the count, so a recovered run is reproducible."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), int(restarts)]).generate_state(1, np.uint32)[0])


class RayVectorEnv(VectorEnv):
    """A Gymnasium ``VectorEnv`` whose ``num_envs`` sub-envs live in Ray actors (semantics: module docstring).

    Args:
        env: a registered env id (``"CenicFranka-v0"``; made with ``gym.make(env, **env_kwargs)`` in the actor), or
            a picklable callable with no arguments returning an env (then ``env_kwargs`` must be empty).
        num_envs: number of sub-envs (>= 1).
        env_kwargs: keyword arguments of ``gym.make`` (env options, ``max_episode_steps``, ...).
        envs_per_actor: sub-envs per actor (>= 1); ``ceil(num_envs / envs_per_actor)`` actors, the last may hold
            fewer. Several per actor amortize the ~1.5 ms round trip of an actor call.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``SAME_STEP`` (or the strings "next_step" /
            "same_step").
        actor_options: options of every actor (``ray.remote``), default ``{"num_cpus": 1,
            "scheduling_strategy": "SPREAD"}``; e.g. ``{"resources": {...}}`` to pin actors to nodes.
        max_restarts: actor restarts allowed over the life of this vector env before ``RuntimeError`` (>= 0).
        copy: return copies of the batched observation (Gymnasium's ``copy`` flag).

    Starts Ray with :func:`init_ray` (no dashboard, log forwarding, task events) if it is not running; on a
    cluster, call ``ray.init(address=...)`` first (``include_dashboard=False, log_to_driver=False`` are recommended there too when
    the driver shares a small machine with actors; ``RAY_USAGE_STATS_ENABLED=0`` turns usage reporting off).
    """

    def __init__(self, env: str | Callable[[], gym.Env], num_envs: int, *, env_kwargs: dict | None = None,
                 envs_per_actor: int = 1, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 actor_options: dict | None = None, max_restarts: int = 10, copy: bool = True):
        try:
            import ray
        except ImportError as e:
            raise ImportError("RayVectorEnv needs Ray: pip install 'cenic-gym[ray]'") from e

        self.num_envs = _positive_int("num_envs", num_envs)
        self.envs_per_actor = _positive_int("envs_per_actor", envs_per_actor)
        env_kwargs = {} if env_kwargs is None else env_kwargs
        if not isinstance(env_kwargs, dict):
            raise ValueError(f"env_kwargs must be a dict, got {env_kwargs!r}")
        if isinstance(env, str):
            if env not in gym.registry:
                cenic = sorted(k for k in gym.registry if k.startswith("Cenic"))
                raise ValueError(f"unknown env id {env!r}; registered cenic-gym ids: {cenic} "
                                 "(or any id in gymnasium.registry)")
            self._make_env = _MakeEnv(env, env_kwargs)
        elif callable(env):
            if env_kwargs:
                raise ValueError(f"env_kwargs={env_kwargs!r} only applies to an env id; bind them in the callable")
            self._make_env = env
        else:
            raise ValueError(f"env must be a registered env id or a callable returning an env, got {env!r}")
        if isinstance(autoreset_mode, str):
            if autoreset_mode.lower() not in MODES:
                raise ValueError(f"autoreset_mode={autoreset_mode!r}; choose one of {sorted(MODES)}")
            autoreset_mode = MODES[autoreset_mode.lower()]
        if autoreset_mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode={autoreset_mode!r}; choose AutoresetMode.NEXT_STEP or SAME_STEP")
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, (int, np.integer)) or max_restarts < 0:
            raise ValueError(f"max_restarts must be an integer >= 0, got {max_restarts!r}")
        self.autoreset_mode = autoreset_mode
        self.max_restarts = int(max_restarts)
        self.copy = bool(copy)
        self.actor_options = {"num_cpus": 1, "scheduling_strategy": "SPREAD", **(actor_options or {})}
        self.restarts = 0

        init_ray()
        self._remote = ray.remote(EnvWorker)
        self.slices = [list(range(k, min(k + self.envs_per_actor, self.num_envs)))
                       for k in range(0, self.num_envs, self.envs_per_actor)]
        self.actors = [self._start_actor(idx) for idx in self.slices]
        try:
            obs_space, act_space, metadata, spec = ray.get(self.actors[0].spaces.remote())
        except ray.exceptions.RayError as e:
            self.close()
            cause = str(e).strip().splitlines()[-1]  # the exception raised in the actor (the traceback is chained)
            raise ValueError(f"could not create the sub-envs of {env!r} (env_kwargs={env_kwargs!r}): {cause}") from e
        self.single_observation_space, self.single_action_space = obs_space, act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self.metadata = {**metadata, "autoreset_mode": autoreset_mode}
        self.spec = spec
        self.render_mode = None
        self._obs = create_empty_array(obs_space, n=self.num_envs, fn=np.zeros)
        self._seeds: list[int | None] = [None] * self.num_envs
        self._actor_obs: list[Any] = [None] * len(self.actors)  # each actor's last batched observation
        self.closed = False

    # -- actors --------------------------------------------------------------------------------------------------
    def _start_actor(self, indices, seeds=None, needs_reset=False):
        return self._remote.options(**self.actor_options).remote(self._make_env, indices, self.autoreset_mode,
                                                                 seeds, needs_reset)

    def _restart(self, k, error):
        """Replace dead actor ``k``; returns the reason string reported in ``info["actor_restarted"]``."""
        import ray

        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise RuntimeError(f"actor {k} (sub-envs {self.slices[k]}) died and max_restarts={self.max_restarts} "
                               f"restarts are spent: {error}") from error
        try:
            ray.kill(self.actors[k], no_restart=True)
        except Exception:  # noqa: BLE001  (already gone)
            pass
        seeds = [restart_seed(self._seeds[i], self.restarts) for i in self.slices[k]]
        self.actors[k] = self._start_actor(self.slices[k], seeds, needs_reset=True)
        return f"actor died ({type(error).__name__}); sub-envs {self.slices[k]} re-created and reset " \
               f"(restart {self.restarts})"

    def _gather(self, futures):
        """ray.get every actor's result; a dead actor's entry is the exception instead."""
        import ray

        try:
            return ray.get(futures)
        except ray.exceptions.RayActorError:
            pass
        out = []
        for f in futures:
            try:
                out.append(ray.get(f))
            except ray.exceptions.RayActorError as e:
                out.append(e)
        return out

    # -- Gymnasium API -------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None):
        """Reset every sub-env: ``seed`` an int (sub-env i gets seed + i), a list of one seed per sub-env, or None.
        ``options`` goes to every sub-env's ``reset``."""
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        elif isinstance(seed, (list, tuple)) and len(seed) == self.num_envs and all(
                s is None or (isinstance(s, (int, np.integer)) and not isinstance(s, bool)) for s in seed):
            seeds = [None if s is None else int(s) for s in seed]
        else:
            raise ValueError(f"seed must be None, an int or a list of {self.num_envs} ints/None, got {seed!r}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options must be a dict or None, got {options!r}")
        self._seeds = seeds
        results: list = [None] * len(self.actors)
        pending = list(range(len(self.actors)))
        while pending:
            futures = [self.actors[k].reset.remote([seeds[i] for i in self.slices[k]], options) for k in pending]
            got = self._gather(futures)
            retry = []
            for k, r in zip(pending, got):
                if isinstance(r, Exception):
                    self._restart(k, r)
                    retry.append(k)
                else:
                    results[k] = r
            pending = retry
        infos: dict = {}
        for k, (obs, actor_infos) in enumerate(results):
            self._actor_obs[k] = obs
            for i, info in zip(self.slices[k], actor_infos):
                infos = self._add_info(infos, info, i)
        return self._join([obs for obs, _ in results]), infos

    def step_packed(self, actions) -> Packed:
        """Step every sub-env: ``actions`` batched as ``action_space``; returns the whole batch packed
        (:class:`Packed`: batched observations, rewards, flags, and the list of ``num_envs`` info dicts, not yet
        merged into Gymnasium's vector-info dict; the SB3 adapter uses it). Each actor gets its rows of the
        actions as one array (Box action spaces) and returns one :class:`Packed`."""
        if self._actor_obs[0] is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        acts = _check_actions(actions, self.single_action_space, self.action_space, self.num_envs)
        futures = [a.step.remote(acts[idx[0]:idx[-1] + 1]) for a, idx in zip(self.actors, self.slices)]
        got = self._gather(futures)
        for k, r in enumerate(got):
            if isinstance(r, Exception):
                got[k] = self._recover(k, r)
            self._actor_obs[k] = got[k].obs
        return Packed(self._join([r.obs for r in got]), np.concatenate([r.rewards for r in got]),
                      np.concatenate([r.terminated for r in got]), np.concatenate([r.truncated for r in got]),
                      [info for r in got for info in r.infos])

    def _recover(self, k, error) -> Packed:
        """The result for the sub-envs of dead actor ``k``: each episode truncated with the reason in info."""
        import ray

        reason = self._restart(k, error)
        n = len(self.slices[k])
        last = self._actor_obs[k]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:  # the new actor resets them on the next step
            return Packed(last, np.zeros(n), np.zeros(n, np.bool_), np.ones(n, np.bool_),
                          [{"actor_restarted": reason} for _ in range(n)])
        try:
            fresh = ray.get(self.actors[k].step.remote(None))  # performs the resets
        except ray.exceptions.RayActorError as e:
            return self._recover(k, e)
        infos = [{**info, "actor_restarted": reason, "final_obs": obs, "final_info": {}}
                 for info, obs in zip(fresh.infos, iterate(self.single_observation_space, last))]
        return Packed(fresh.obs, np.zeros(n), np.zeros(n, np.bool_), np.ones(n, np.bool_), infos)

    def step(self, actions):
        r = self.step_packed(actions)
        infos: dict = {}
        for i, info in enumerate(r.infos):
            infos = self._add_info(infos, info, i)
        return r.obs, r.rewards, r.terminated, r.truncated, infos

    def _join(self, batches):
        """The actors' batched observations as one batch (a copy unless ``copy=False``)."""
        self._obs = concat_batches(self.single_observation_space, batches, self._obs)
        return copy.deepcopy(self._obs) if self.copy else self._obs

    # -- attributes and methods of the sub-envs ------------------------------------------------------------------
    def _by_actor(self, indices):
        indices = range(self.num_envs) if indices is None else ([indices] if isinstance(indices, int) else indices)
        indices = list(indices)
        for i in indices:
            if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.num_envs:
                raise ValueError(f"sub-env index {i!r} out of range(0, {self.num_envs})")
        groups: dict[int, list[int]] = {}
        for i in indices:
            groups.setdefault(int(i) // self.envs_per_actor, []).append(int(i))
        return indices, groups

    def call(self, name: str, *args, indices=None, **kwargs) -> tuple:
        """``env.<name>(*args, **kwargs)`` on every sub-env (or ``indices``); an attribute that is not callable is
        returned as is. One round trip per actor involved."""
        import ray

        indices, groups = self._by_actor(indices)
        futures = {k: self.actors[k].call.remote(name, args, kwargs, [i % self.envs_per_actor for i in idx])
                   for k, idx in groups.items()}
        results = dict(zip(futures, ray.get(list(futures.values()))))
        value = {i: v for k, idx in groups.items() for i, v in zip(idx, results[k])}
        return tuple(value[int(i)] for i in indices)

    def get_attr(self, name: str, indices=None) -> tuple:
        return self.call(name, indices=indices)

    def set_attr(self, name: str, values, indices=None):
        """Set ``env.<name>`` on the sub-envs (one value for all, or a list of one value per index)."""
        import ray

        indices, groups = self._by_actor(indices)
        if not isinstance(values, (list, tuple)):
            values = [values] * len(indices)
        if len(values) != len(indices):
            raise ValueError(f"set_attr needs {len(indices)} values, got {len(values)}")
        by_index = dict(zip((int(i) for i in indices), values))
        ray.get([self.actors[k].set_attr.remote(name, [by_index[i] for i in idx],
                                                [i % self.envs_per_actor for i in idx])
                 for k, idx in groups.items()])

    def is_wrapped(self, wrapper_class, indices=None) -> tuple:
        """Whether each sub-env (or ``indices``) is wrapped in ``wrapper_class`` somewhere in its wrapper chain."""
        import ray

        indices, groups = self._by_actor(indices)
        futures = {k: self.actors[k].is_wrapped.remote(wrapper_class, [i % self.envs_per_actor for i in idx])
                   for k, idx in groups.items()}
        got = dict(zip(futures, ray.get(list(futures.values()))))
        value = {i: v for k, idx in groups.items() for i, v in zip(idx, got[k])}
        return tuple(value[int(i)] for i in indices)

    def close_extras(self, **kwargs):
        ray = sys.modules.get("ray")  # None at interpreter shutdown (VectorEnv.__del__): nothing to stop then
        if ray is None or not ray.is_initialized():
            self.actors = []
            return
        for a in getattr(self, "actors", []):
            try:
                ray.kill(a, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []


def _check_actions(actions, single_space, space, n):
    """Batched actions -> one row per sub-env (the array itself for Box spaces, else a list); a wrong shape raises
    ValueError naming it."""
    if isinstance(single_space, gym.spaces.Box):
        a = np.asarray(actions)
        if a.shape != space.shape:
            raise ValueError(f"actions must have shape {space.shape} ({n} sub-envs x {single_space.shape}), "
                             f"got shape {a.shape}")
        return a
    out = list(iterate(space, actions))
    if len(out) != n:
        raise ValueError(f"expected {n} actions, got {len(out)}")
    return out
