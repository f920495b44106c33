"""Which model a step uses: a precedence ladder, highest first.

From the highest: a ``LoopHooks.prepare_step`` override; the hints of the tools the previous
step ran (an explicit ``"provider:model"`` spec beats a tier; among tiers the strongest
wins); the agent's own ``ModelOptions.preferred``; the agent's ``model``. Tiers (``"fast"``,
``"balanced"``, ``"smart"``) resolve through the agent's ``ModelOptions.tiers``. The fallback
models follow a model chosen by tier or by the agent's preference. A model named
explicitly (by ``prepare_step``, or by a tool's ``"provider:model"`` spec) is pinned: when
it fails, the step fails rather than moving to a fallback model nobody named for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bastion import providers
from bastion.core import Model, UserError

__all__ = ["TIERS", "TierResolver", "is_tier"]

TIERS = ("fast", "balanced", "smart")


def is_tier(hint: str) -> bool:
    """Whether ``hint`` names a tier (a role any mapped model fills), not a pinned model."""
    return hint in TIERS


class TierResolver:
    """Resolves tier names and model specs, validated when the agent is built."""

    __slots__ = ("_resolve", "_specs", "_tiers")

    def __init__(
        self,
        tier_map: Mapping[str, Model | str],
        hints: Iterable[tuple[str, str]],
    ) -> None:
        def as_model(value: Model | str) -> Model:
            return value if isinstance(value, Model) else providers.resolve_model(value)

        self._resolve = as_model
        unknown = sorted(set(tier_map) - set(TIERS))
        if unknown:
            raise UserError(
                f"model_options.tiers has unknown tier(s) {unknown}; use {', '.join(TIERS)}."
            )
        self._tiers = {tier: as_model(model) for tier, model in tier_map.items()}
        self._specs: dict[str, Model] = {}
        for owner, hint in hints:
            if hint in TIERS:
                if hint not in self._tiers:
                    raise UserError(
                        f"{owner} prefers the {hint!r} tier, but model_options.tiers has no "
                        f"{hint!r} entry. Add one, e.g. ModelOptions(tiers={{{hint!r}: '...'}})."
                    )
            elif hint not in self._specs:
                self._specs[hint] = as_model(hint)  # a "provider:model" spec; checked now

    def model(self, hint: str) -> Model:
        """The model a tier or spec (validated at construction) names."""
        return self._tiers[hint] if hint in TIERS else self._specs[hint]

    def strongest(self, hints: Iterable[str]) -> str | None:
        """The hint that wins among several: an explicit spec first, else the strongest tier."""
        best: str | None = None
        for hint in hints:
            if hint not in TIERS:
                return hint
            if best is None or TIERS.index(hint) > TIERS.index(best):
                best = hint
        return best
