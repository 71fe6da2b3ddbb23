"""The KIP versions a nexus can be bootstrapped with: their official capsule sets and which one applies.

A *profile* is one published version of KIP's official capsules (``capsules/<profile>/``, the KIP
authors' files byte for byte with their Apache-2.0 licence): ``rc10`` (v1.0-RC10: Genesis and the
Appendix 3 set) and ``rc11`` (v1.0-RC11, the default: the same core plus the Experience Learning
profile — Experience, ExperienceStep, Skill and eight predicates). The core syntax and semantics
are the same in both. ``bootstrap`` records the profile on the nexus node; ``decide`` says what a
bootstrap applies over what the nexus holds (docs/kml.md, "Profiles and upgrades").
"""

from __future__ import annotations

from dataclasses import dataclass

from . import errors, resources
from .errors import KipError
from .version import __version__


@dataclass(frozen=True)
class Profile:
    name: str
    core_version: str  # the KIP version whose official capsules these are
    #: Dependency order (every capsule after those it names): Genesis, Person before the
    #: $self/$system instances, the type capsules, then the predicates that reference them.
    order: tuple[str, ...]


PROFILES = {
    "rc10": Profile("rc10", "v1.0-RC10", ("Genesis", "Person", "self", "system", "Event", "Preference", "Insight", "Commitment", "SleepTask")),
    "rc11": Profile(
        "rc11",
        "v1.0-RC11",
        (
            "Genesis",
            "Person",
            "self",
            "system",
            "Event",
            "Experience",
            "ExperienceStep",
            "Preference",
            "Insight",
            "Skill",
            "Commitment",
            "SleepTask",
            "involves",
            "mentions",
            "consolidated_to",
            "derived_from",
            "has_step",
            "caused_by",
            "derived_insight",
            "compiled_to",
        ),
    ),
}
#: Oldest first: an upgrade moves right only.
ORDER = ("rc10", "rc11")
DEFAULT = "rc11"


def get(name: str | None) -> Profile:
    """The profile ``name`` (None: the default); an unknown name is KIP_2002 naming the known ones."""
    profile = PROFILES.get(name or DEFAULT)
    if profile is None:
        raise KipError(errors.CONSTRAINT_VIOLATION, f"Unknown KIP profile {name!r}.", f"Use one of: {', '.join(ORDER)} (default {DEFAULT}).")
    return profile


def core_version(name: str | None) -> str | None:
    """The KIP version of a recorded profile (None: none recorded, or one this build does not know)."""
    profile = PROFILES.get(name) if name else None
    return profile.core_version if profile else None


#: The capsules that seed an actor (file stem → the Person they create).
ACTORS = {"self": "$self", "system": "$system"}


def capsules(profile: str | None, *, everything: bool, present: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The capsules a bootstrap of ``profile`` applies, in order: Genesis, or (``everything``) the
    whole set — except the capsule of an actor already ``present`` (its Person name). The official
    ``self``/``system`` files write every attribute of the actor (persona, strengths: [], …), so a
    replay would reset what the agent has learned; bootstrap seeds each actor once."""
    names = list(get(profile).order) if everything else ["Genesis"]
    return [n for n in names if ACTORS.get(n) not in present]


def capsule_text(name: str, profile: str | None) -> str:
    return resources.capsule_text(name, get(profile).name)


@dataclass(frozen=True)
class Step:
    """What one bootstrap does: apply ``profile``'s capsules (None: none — the nexus holds a profile
    this build does not know), as the engine when they replace older protected definitions
    (``engine``), then record ``profile``. ``note``: why the nexus keeps another profile than asked."""

    profile: str | None
    engine: bool
    note: str | None = None


def decide(requested: str | None, stored: str | None, genesis: bool, *, upgrade: bool) -> Step:
    """The bootstrap of ``requested`` over a nexus holding ``stored`` (its recorded profile; None:
    none recorded) and, ``genesis``, a Genesis.

    - A fresh nexus gets ``requested``. So does one bootstrapped before profiles were recorded
      (its Genesis is the one printed in the RC10 appendix, which differs from the published file):
      the official Genesis replaces it, as the engine.
    - Without ``upgrade`` a nexus keeps its profile — older or newer than asked, never a failure.
    - ``upgrade`` moves forward only: to a newer profile as the engine; to the same one it is a
      plain re-application; to an older one it is refused (KIP_3004 naming both)."""
    wanted = get(requested)
    if stored is None:
        return Step(wanted.name, engine=genesis)
    known = stored in PROFILES
    if not upgrade:
        if stored == wanted.name:
            return Step(stored, engine=False)
        note = f"this nexus is bootstrapped with {_named(stored)}; it keeps it (a plain bootstrap never changes a nexus's profile)"
        if known and ORDER.index(stored) < ORDER.index(wanted.name):
            note += f" — `bootstrap --upgrade --profile {wanted.name}` moves it to {_named(wanted.name)}"
        return Step(stored if known else None, engine=False, note=note + ".")
    if not known or ORDER.index(stored) > ORDER.index(wanted.name):
        raise KipError(
            errors.IMMUTABLE_TARGET,
            f"bootstrap --upgrade moves forward only: this nexus holds {_named(stored)}, newer than the requested {_named(wanted.name)}.",
            f"Keep {_named(stored)} (run bootstrap without --upgrade, or with --profile {stored}); a downgrade would change the protected "
            "structures that nexus's agents rely on. Bootstrap a fresh namespace to use the older profile.",
        )
    return Step(wanted.name, engine=stored != wanted.name)


def _named(profile: str) -> str:
    return f"profile {shown(profile)}"


def shown(profile: str | None) -> str:
    """A recorded profile for a person: its KIP version, or that this build does not know it
    (a nexus bootstrapped by a newer kip2cypher) and the profiles it does know."""
    version = core_version(profile)
    if version:
        return f"{profile} (KIP {version})"
    if profile is None:
        return "none recorded"
    return f"{profile} (unknown to this kip2cypher {__version__}, which knows {', '.join(ORDER)})"
