"""Structured output: the schema sent to the model and the parsing of its answer (SPEC C17)."""

from __future__ import annotations

import re
from typing import Any

from bastion.core import OutputSpec

__all__ = ["OutputSchema", "OutputValidationError"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class OutputValidationError(Exception):
    """The model's answer does not fit the output type."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems

    def retry_prompt(self) -> str:
        """The message sent back to the model so it can correct itself."""
        listed = "\n".join(f"- {p}" for p in self.problems)
        return (
            f"Your answer does not match the required output schema:\n{listed}\n"
            "Answer again with only the JSON value, fixed."
        )


class OutputSchema:
    """The output type of an agent other than ``str``, as a JSON schema and a validator."""

    def __init__(self, output_type: Any) -> None:
        from pydantic import TypeAdapter

        self.output_type = output_type
        self._adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = self._adapter.json_schema()
        name = getattr(output_type, "__name__", None) or "output"
        self.spec = OutputSpec(name=re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64], json_schema=schema)

    def parse(self, text: str) -> Any:
        """Parse and validate the model's text (a fenced code block is unwrapped).

        Raises:
            OutputValidationError: The text is not valid JSON or does not fit the type.
        """
        from pydantic import ValidationError

        candidate = text.strip()
        fenced = _FENCE.search(candidate)
        if fenced:
            candidate = fenced.group(1).strip()
        if not candidate:
            raise OutputValidationError(["the answer is empty; a JSON value is required"])
        try:
            return self._adapter.validate_json(candidate)
        except ValidationError as exc:
            problems: list[str] = []
            for err in exc.errors(include_url=False):
                loc = ".".join(str(p) for p in err["loc"])
                problems.append(f"`{loc}`: {err['msg']}" if loc else str(err["msg"]))
            raise OutputValidationError(problems) from None
