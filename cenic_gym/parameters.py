"""Physical parameters of a simulation, by name: what system identification fits (:mod:`cenic_gym.sim2real.fit`),
what the env option ``physics`` sets after every reset and what a ``domain_randomization`` dict may draw, on any env.

==================  ==============  ===========================================================  ===============
name                unit            what it sets                                                 physical range
==================  ==============  ===========================================================  ===============
``kp_scale[/J]``    –               × K_p of the joint controllers on the joints J               (0, 10]
``kd_scale[/J]``    –               × K_d of those controllers                                   (0, 10]
``effort_scale[/J]`` –              × their effort limits (torque saturation)                    (0, 10]
``damping[/J]``     N m s/rad, N s/m  viscous damping of the joints J (implicit)                 [0, 1e3]
``friction[/J]``    N m, N          Coulomb friction of the joints J (:class:`JointFriction`)    [0, 1e3]
``armature[/J]``    kg m², kg       reflected rotor inertia of the joints J                      [0, 1e2]
``mass/B``          kg              mass of body B (a free body or a robot link; inertia scales  (0, 1e4]
                                    with it)
``mu/G``            –               static = dynamic friction coefficient of geometry G          [0, 10]
``stiffness/G``     N/m             contact stiffness of geometry G (pairs combine in series)    (0, 1e9]
``dissipation/G``   s/m             Hunt & Crossley dissipation of geometry G                    [0, 1e4]
==================  ==============  ===========================================================  ===============

J is a pattern (``fnmatch``: ``*``, ``panda_joint[1-7]``, one joint's name) over the names of the env's
controlled joints (those of its joint controllers, as in a robot log: ``panda_joint1`` … ``panda_finger_joint1``
for CenicFranka-v0); without ``/J`` the parameter covers every controlled joint. One name is one number: all the
joints it matches get the same value. The scales multiply what the env's reset set (its nominal or randomized
gains and limits); every other kind replaces the value. Friction needs a :class:`~cenic_gym.external.JointFriction`
on the joints: an env builds one when its ``physics`` or ``domain_randomization`` names a ``friction`` parameter.

In a ``domain_randomization`` dict a task's own key wins: the Go1's ``friction`` and ``kp_scale`` are its
randomization ranges (ground friction, its PD scale), not these parameters (name the joints: ``friction/*``).

A name that does not parse, a joint pattern that matches no controlled joint, an unknown body or geometry, and a
value outside the physical range raise ``ValueError`` naming it.
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .external import JointController, JointFriction

class Kind(NamedTuple):
    """A kind of parameter: its ``unit``, physical range (``low``, ``high``], whether ``low`` itself is allowed,
    whether it is a ``scale`` (a multiplier of the reset's values, nominal 1) and what it acts on (``target``:
    "joints", "body" or "geometry")."""

    unit: str
    low: float
    high: float
    low_inclusive: bool
    scale: bool
    target: str


KINDS = {
    "kp_scale": Kind("", 0.0, 10.0, False, True, "joints"),
    "kd_scale": Kind("", 0.0, 10.0, False, True, "joints"),
    "effort_scale": Kind("", 0.0, 10.0, False, True, "joints"),
    "damping": Kind("N m s/rad", 0.0, 1e3, True, False, "joints"),
    "friction": Kind("N m", 0.0, 1e3, True, False, "joints"),
    "armature": Kind("kg m^2", 0.0, 1e2, True, False, "joints"),
    "mass": Kind("kg", 0.0, 1e4, False, False, "body"),
    "mu": Kind("", 0.0, 10.0, True, False, "geometry"),
    "stiffness": Kind("N/m", 0.0, 1e9, False, False, "geometry"),
    "dissipation": Kind("s/m", 0.0, 1e4, True, False, "geometry"),
}


SCALED = {"kp_scale": "kp", "kd_scale": "kd", "effort_scale": "effort_limit"}  # scale kind -> controller attribute


def controlled_joints(sim):
    """[(short joint name, v index, the JointController, its entry)] of ``sim``'s joint controllers, in order."""
    m = sim.system.model
    out = []
    for s in sim.external:
        if isinstance(s, JointController):
            for k, iv in enumerate(s.dofs):
                j = next(j for j in range(1, m.njoints) if m.idx_vs[j] == iv)
                out.append((m.names[j].split("/", 1)[-1], int(iv), s, k))
    return out


def is_parameter_name(name):
    """Whether ``name`` has the form of a physical parameter (its kind is known); it may still not resolve."""
    return isinstance(name, str) and name.split("/", 1)[0] in KINDS


@dataclass(frozen=True)
class Parameter:
    """One named physical parameter of a simulator: ``name``, its :class:`Kind` (``kind``: the name's first part;
    ``spec``: unit, range, scale) and what it acts on: ``joints`` (names), ``dofs`` (v indices), ``target`` (a body
    or geometry name)."""

    name: str
    kind: str
    joints: tuple = ()
    dofs: tuple = ()
    target: str = ""

    @property
    def spec(self) -> Kind:
        return KINDS[self.kind]

    unit = property(lambda self: self.spec.unit)
    scale = property(lambda self: self.spec.scale)

    def check(self, value):
        """``value`` as a float; ValueError naming the parameter if it is not finite or outside its physical range."""
        k = self.spec
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        x = float(value) if ok else math.nan
        if not (math.isfinite(x) and (x >= k.low if k.low_inclusive else x > k.low) and x <= k.high):
            raise ValueError(f"parameter {self.name!r} = {value!r} is outside its physical range "
                             f"{'[' if k.low_inclusive else '('}{k.low:g}, {k.high:g}] {k.unit}".rstrip())
        return x

    def get(self, sim):
        """The current value in ``sim`` (scales: 1, relative to what is set now; joints: the first joint's)."""
        if self.scale:
            return 1.0
        if self.spec.target == "joints":
            if self.kind == "friction":
                s, k = _friction_entry(sim, self)
                return float(s.friction[k[0]])
            return float(sim.joint_dynamics(self.joints[0])[self.kind])
        if self.kind == "mass":
            return float(sim.body_inertia(self.target)[0])
        m = sim.geometry_material(self.target)
        return float(m["mu_static" if self.kind == "mu" else self.kind])

    def set(self, sim, value):
        """Set (or, for a scale, multiply by) ``value`` in ``sim``, from its next step on."""
        x = self.check(value)
        if self.kind in SCALED:  # × the controllers' current gains or limits on these joints
            attr = SCALED[self.kind]
            for s, k in _controller_entries(sim, self.dofs):
                values = getattr(s, attr).copy()
                values[k] *= x
                s.set_gains(**{attr: values})
        elif self.kind == "friction":
            s, k = _friction_entry(sim, self)
            f = s.friction.copy()
            f[k] = x
            s.set_friction(f)
        elif self.kind in ("damping", "armature"):
            sim.set_joint_dynamics(list(self.joints), **{self.kind: x})
        elif self.kind == "mass":
            sim.set_body_inertia(self.target, mass=x)
        elif self.kind == "mu":
            sim.set_geometry_material(self.target, mu_static=x, mu_dynamic=x)
        else:
            sim.set_geometry_material(self.target, **{self.kind: x})


def _controller_entries(sim, dofs):
    """[(controller, entry indices)] of the joint controllers acting on v indices ``dofs``."""
    out = []
    for s in sim.external:
        if isinstance(s, JointController):
            k = np.flatnonzero(np.isin(s.dofs, dofs))
            if k.size:
                out.append((s, k))
    return out


def _friction_entry(sim, p):
    for s in sim.external:
        if isinstance(s, JointFriction):
            k = np.flatnonzero(np.isin(s.dofs, p.dofs))
            if k.size == len(p.dofs):
                return s, k
    raise ValueError(f"parameter {p.name!r}: the simulator has no JointFriction on joints {list(p.joints)} (an env "
                     "builds one when its physics or domain_randomization option names a friction parameter)")


def resolve(sim, name):
    """The :class:`Parameter` named ``name`` (see the module table) of simulator ``sim``; ValueError naming what
    does not resolve."""
    if not isinstance(name, str) or not is_parameter_name(name):
        raise ValueError(f"unknown physical parameter {name!r}; kinds: {list(KINDS)} (e.g. 'kp_scale', "
                         "'damping/panda_joint4', 'mass/box', 'mu/box/0')")
    kind, _, rest = name.partition("/")
    target = KINDS[kind].target
    if target == "joints":
        joints = controlled_joints(sim)
        if not joints:
            raise ValueError(f"parameter {name!r}: the simulator has no joint controllers")
        pattern = rest or "*"
        hit = [(n, iv) for n, iv, _, _ in joints if fnmatch.fnmatchcase(n, pattern)]
        if not hit:
            raise ValueError(f"parameter {name!r}: the pattern {pattern!r} matches none of the controlled joints "
                             f"{[n for n, *_ in joints]}")
        return Parameter(name, kind, tuple(dict.fromkeys(n for n, _ in hit)), tuple(dict.fromkeys(iv for _, iv in hit)))
    if not rest:
        raise ValueError(f"parameter {name!r} needs a target: '{kind}/<{target}>'")
    if target == "body":
        try:
            sim.body_inertia(rest)
        except (KeyError, ValueError) as e:
            raise ValueError(f"parameter {name!r}: {rest!r} is not a body with an inertia ({e})") from None
    else:
        names = [g.name for g in sim.system.geometries]
        if rest not in names:
            raise ValueError(f"parameter {name!r}: no geometry named {rest!r}; geometries: {names}")
    return Parameter(name, kind, target=rest)


def needs_friction(names):
    """Whether any of ``names`` is a joint friction parameter (then the env builds a JointFriction)."""
    return any(isinstance(n, str) and n.split("/", 1)[0] == "friction" for n in names)
