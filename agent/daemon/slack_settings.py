"""The `slack:` section of steward.yaml, and the Slack secrets, which never live there.

`SlackSettings` is what may be written down: whether chat-ops is on, Socket Mode or HTTP, the
channel, the Web API's base URL (tests point it at a stub), which Slack users belong to which
of the policy's approver groups, and how often the channel may be written to. The tokens and the
signing secret come from the environment (`SLACK_BOT_TOKEN`, `SLACK_SIGNING_SECRET`,
`SLACK_APP_TOKEN`) or from files (`SLACK_BOT_TOKEN_FILE`, ... or the `*_file` settings, for
mounted secrets), never from steward.yaml itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.errors import InvalidInput

Mode = Literal["socket", "http"]
DEFAULT_API_URL = "https://slack.com/api/"


class SlackSettings(BaseModel):
    """Chat-ops settings (no secrets)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    mode: Mode = "socket"
    """socket: the app dials out to Slack (no public URL needed); http: Slack posts to the
    daemon's `/slack/events` (needs an ingress)."""
    channel: str = ""
    """The channel id (C…) approvals and notifications go to."""
    api_url: str = DEFAULT_API_URL
    approvers: dict[str, tuple[str, ...]] = {}
    """Policy approver group -> Slack user ids (U…) that are members of it in Slack."""
    max_messages_per_minute: int = Field(default=6, ge=1)
    """Notifications beyond this in a minute are folded into one digest message."""
    poll_s: float = Field(default=2.0, gt=0)
    """How often the sender looks at the inbox and the outbox."""
    retry_max_s: float = Field(default=300.0, gt=0)
    """The longest wait between two attempts to reach Slack (the backoff doubles up to it)."""
    bot_token_file: Path | None = None
    signing_secret_file: Path | None = None
    app_token_file: Path | None = None

    @field_validator("api_url")
    @classmethod
    def _slash(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"


class SlackSecrets(BaseModel):
    """The tokens the app needs, read from the environment or files at start."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bot_token: str
    signing_secret: str | None = None
    app_token: str | None = None


def load_secrets(settings: SlackSettings, environ: Mapping[str, str] | None = None) -> SlackSecrets:
    """The secrets for `settings.mode`; InvalidInput naming every missing variable, unreadable
    file and the empty channel at once (one line each)."""
    env = os.environ if environ is None else environ
    problems: list[str] = []
    bot = _secret("SLACK_BOT_TOKEN", settings.bot_token_file, env, problems)
    signing = _secret("SLACK_SIGNING_SECRET", settings.signing_secret_file, env, problems)
    app = _secret("SLACK_APP_TOKEN", settings.app_token_file, env, problems)
    needed = {"SLACK_BOT_TOKEN": bot}
    needed.update({"SLACK_APP_TOKEN": app} if settings.mode == "socket" else {})
    needed.update({"SLACK_SIGNING_SECRET": signing} if settings.mode == "http" else {})
    problems += [
        f"slack ({settings.mode} mode) needs {name}: set it in the environment or point "
        f"{name}_FILE at a file holding it"
        for name, value in needed.items()
        if not value and not any(p.startswith(f"{name}:") for p in problems)
    ]
    if not settings.channel:
        problems.append(
            "slack.channel is empty: set the channel id (C…) in steward.yaml or "
            "STEWARD_SLACK_CHANNEL"
        )
    if problems:
        raise InvalidInput("\n".join(problems))
    assert bot is not None
    return SlackSecrets(bot_token=bot, signing_secret=signing, app_token=app)


def _secret(
    name: str, file: Path | None, env: Mapping[str, str], problems: list[str]
) -> str | None:
    if env.get(name):
        return env[name].strip()
    path = Path(env[f"{name}_FILE"]) if env.get(f"{name}_FILE") else file
    if path is None:
        return None
    try:
        return path.read_text().strip() or None
    except OSError as exc:
        problems.append(f"{name}: cannot read {path}: {exc.strerror}; fix the path")
        return None
