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
STEWARD_LLM_TIMEOUT_S  one request's timeout (default 10)
STEWARD_LLM_DEADLINE_S one decision's total deadline, retries included (default 20)
STEWARD_LLM_MAX_STEPS  model turns per decision, look-ups included (default 4)
STEWARD_LLM_MAX_TOKENS completion tokens per turn (default 600)

For llama-cpp-python's server, STEWARD_LLM_OUTPUT=json_object (or tools with
STEWARD_LLM_TOOL_CHOICE=submit_plan) saves the turn it spends answering prose to required.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

OutputMode = Literal["tools", "json_schema", "json_object"]


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
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    deadline_s: float = Field(default=20.0, gt=0, le=3600)
    max_steps: int = Field(default=4, ge=1, le=16)
    max_tokens: int = Field(default=600, ge=16, le=32_768)
    temperature: float = Field(default=0.0, ge=0, le=2)
