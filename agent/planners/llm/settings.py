"""Settings of the LLM planner, read from the environment by pydantic-settings.

STEWARD_LLM_BASE_URL   the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8431/v1
                       (fallback: OPENAI_BASE_URL; neither: the openai client's default)
STEWARD_LLM_MODEL      the model name (unset: the first model the endpoint lists)
STEWARD_LLM_API_KEY    the key (fallback: OPENAI_API_KEY; local servers need none)
STEWARD_LLM_OUTPUT     tools | json_schema | json_object: how the model answers (default
                       tools). json_schema is OpenAI's `response_format`; json_object is
                       llama.cpp's `{"type": "json_object", "schema": ...}`. A server that
                       rejects json_schema naming response_format is downgraded to
                       json_object; one that rejects tools, to json_schema.
STEWARD_LLM_TOOL_CHOICE  required | submit_plan, in tools mode (default required): required
                       lets the model call look-ups first; submit_plan names submit_plan on
                       every turn (one-shot planning). A server that answers prose to
                       required — llama-cpp-python's does, after generating up to max_tokens —
                       is switched to submit_plan for good after its first such answer.
STEWARD_LLM_TIMEOUT_S  one request's timeout (default 10; on a local endpoint, see below)
STEWARD_LLM_DEADLINE_S one decision's total deadline, retries included (default 20; local:
                       see below)
STEWARD_LLM_MAX_STEPS  model turns per decision, look-ups included (default 4)
STEWARD_LLM_MAX_TOKENS completion tokens per turn (default 600)

A local endpoint (a loopback or private address, `localhost`, a `.local` or single-label
host) is often a CPU-only server that decodes a few tokens a second: unless set, its timeout
scales with the answer asked for — max_tokens at LOCAL_DECODE_TOK_S, at least 30 s — and its
deadline is two such requests (600 tokens: 120 s and 240 s). Hosted endpoints keep 10 s / 20 s.

For llama-cpp-python's server, STEWARD_LLM_OUTPUT=json_object (or tools with
STEWARD_LLM_TOOL_CHOICE=submit_plan) saves the turn it spends answering prose to required.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

OutputMode = Literal["tools", "json_schema", "json_object"]

LOCAL_DECODE_TOK_S = 5.0
"""The decode speed assumed of a local endpoint when sizing its default timeout: a small model
on a 2-core CPU (scripts/llm-server's) answers at about this rate."""
HOSTED_TIMEOUT_S, HOSTED_DEADLINE_S = 10.0, 20.0


def is_local(base_url: str | None) -> bool:
    """Whether an endpoint is on this machine or its network (see the module docstring)."""
    host = (urlsplit(base_url).hostname or "") if base_url else ""
    if not host:
        return False
    if host == "localhost" or host.endswith((".local", ".localhost")) or "." not in host:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


class LLMSettings(BaseSettings):
    """Where the model is and how long it may take; see the module docstring for the variables."""

    model_config = SettingsConfigDict(
        env_prefix="STEWARD_LLM_", extra="forbid", frozen=True, populate_by_name=True
    )

    base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("STEWARD_LLM_BASE_URL", "OPENAI_BASE_URL")
    )
    model: str | None = None
    api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("STEWARD_LLM_API_KEY", "OPENAI_API_KEY")
    )
    output: OutputMode = "tools"
    tool_choice: Literal["required", "submit_plan"] = "required"
    timeout_s: float = Field(default=HOSTED_TIMEOUT_S, gt=0, le=600)
    deadline_s: float = Field(default=HOSTED_DEADLINE_S, gt=0, le=3600)
    max_steps: int = Field(default=4, ge=1, le=16)
    max_tokens: int = Field(default=600, ge=16, le=32_768)
    temperature: float = Field(default=0.0, ge=0, le=2)

    @model_validator(mode="before")
    @classmethod
    def _scaled_for_local(cls, data: Any) -> Any:
        """Unset timeouts of a local endpoint scale with max_tokens (module docstring)."""
        if not isinstance(data, dict):
            return data
        url = (
            data.get("base_url") or data.get("STEWARD_LLM_BASE_URL") or data.get("OPENAI_BASE_URL")
        )
        if not is_local(url if isinstance(url, str) else None):
            return data
        try:
            tokens = int(data.get("max_tokens", 600))
        except (TypeError, ValueError):
            return data  # the field's own validation names the problem
        timeout = min(600.0, max(30.0, tokens / LOCAL_DECODE_TOK_S))
        filled = dict(data)
        if "deadline_s" not in filled:
            try:
                per_request = float(filled.get("timeout_s", timeout))
            except (TypeError, ValueError):
                per_request = timeout  # the field's own validation names the problem
            filled["deadline_s"] = min(3600.0, 2 * per_request)
        filled.setdefault("timeout_s", timeout)
        return filled
