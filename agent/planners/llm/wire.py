"""The OpenAI chat protocol as the planner reads it: strict pydantic models of a server's answer.

An HTTP 200 is not yet an answer. The openai client builds its response objects without
validating them, so a body with a null message, `choices` as a string, an array instead of an
object, tool arguments as an object, a call without a function name, or negative or textual
token counts came through as objects that broke later (`'NoneType' object has no attribute
'tool_calls'`) and crashed the decision. Every body is validated here first, at the edge; what
does not fit raises `PlannerFailed` naming the first fields that are wrong, and the rules planner
decides. Fields a server adds beyond the protocol are ignored.
"""

from __future__ import annotations

import json
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from agent.planners.errors import PlannerFailed

Count = Annotated[StrictInt, Field(ge=0)]
"""A token count: an integer, never negative, never text."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WireFunction(_Wire):
    name: Annotated[StrictStr, Field(min_length=1)]
    arguments: StrictStr | None = None
    """JSON text, as the protocol says; an object here is a server bug, not a plan."""


class WireToolCall(_Wire):
    id: StrictStr | None = None
    type: StrictStr | None = None
    function: WireFunction


class WireMessage(_Wire):
    role: StrictStr | None = None
    content: StrictStr | None = None
    tool_calls: list[WireToolCall] | None = None


class WireChoice(_Wire):
    index: StrictInt | None = None
    message: WireMessage
    finish_reason: StrictStr | None = None


class WireUsage(_Wire):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    total_tokens: Count | None = None


class WireCompletion(_Wire):
    """A `POST /chat/completions` answer."""

    choices: Annotated[list[WireChoice], Field(min_length=1)]
    usage: WireUsage | None = None


class WireModel(_Wire):
    id: Annotated[StrictStr, Field(min_length=1)]


class WireModels(_Wire):
    """A `GET /models` answer."""

    data: list[WireModel]


M = TypeVar("M", bound=_Wire)


def parse(model: type[M], body: bytes, where: str) -> M:
    """`body` as `model`, or PlannerFailed saying what in it breaks the protocol."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PlannerFailed(f"{where}: the answer is not JSON: {str(exc)[:120]}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the body'}: {e['msg']}"
            for e in exc.errors(include_url=False)[:3]
        )
        raise PlannerFailed(
            f"{where}: the answer breaks the OpenAI chat protocol ({problems})"
        ) from exc
