"""steward.yaml: which backend, which parts, where things live — one file, every key overridable.

`load_config(path)` reads the file (`--config FILE` on any command, or $STEWARD_CONFIG; none: the
defaults), lays the environment over it and validates the whole: every key, at any depth, is
overridden by its variable (agent/daemon/envvars.py: `STEWARD_METRICS__PROMETHEUS__URL`, or with
single underscores, `STEWARD_LLM_BASE_URL`, `STEWARD_SLACK_CHANNEL`, as they always were), and a
STEWARD_* variable that sets nothing is reported (`StewardConfig.warnings`). Problems name their
place: `steward.yaml:4:3: unknown key 'bakend' …`, or the variable they came from. Each key
remembers where its value came from (`origins`: the file, a variable, a command-line flag; absent:
the default), which `steward config show` prints.

Secrets never live in the file: tokens, keys and signing secrets come from the environment (or
files the environment names) and `steward config show` masks them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ruamel.yaml.comments import CommentedMap

from agent.daemon import envvars
from agent.daemon.slack_settings import SlackSettings
from tools.backends.kubernetes.settings import KubernetesSettings
from tools.errors import InvalidInput
from tools.metrics.prometheus.settings import PrometheusSettings
from tools.yamlbounds import parse_mapping, read_text
from tools.yamldoc import Problem, YamlProblem, plain, schema_problem

CONFIG_ENV = "STEWARD_CONFIG"
SECRET_WORDS = ("token", "secret", "api_key", "password", "key_file")


class ConfigError(InvalidInput):
    """A configuration that cannot be used: every problem, each with its place."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Listen(Section):
    """Where /healthz and /metrics (and Slack's HTTP mode) listen."""

    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=0, le=65535)
    """None: no HTTP endpoint (the embedded demo); 0: any free port."""


class LLMSection(Section):
    """The LLM planner's endpoint (agent/planners/llm/settings.py); the key only from the
    environment (STEWARD_LLM_API_KEY / OPENAI_API_KEY)."""

    base_url: str | None = None
    model: str | None = None
    output: Literal["tools", "json_schema", "json_object"] | None = None
    tool_choice: Literal["required", "submit_plan"] | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=600)
    deadline_s: float | None = Field(default=None, gt=0, le=3600)
    max_steps: int | None = Field(default=None, ge=1, le=16)
    max_tokens: int | None = Field(default=None, ge=16, le=32_768)


class KubernetesSection(KubernetesSettings, Section):
    """How to reach the cluster: in-cluster config, else a kubeconfig found as kubectl finds it
    (the keys: tools/backends/kubernetes/settings.py)."""


class MetricsSection(Section):
    sources: tuple[Literal["prometheus", "nvml", "twin"], ...] = ()
    """Metric sources merged into each observation, besides what the backend itself reports
    (`twin`: the simulated measurements of `steward twin`, for trying Steward on it)."""
    twin_url: str | None = None
    """Where `steward twin` serves (None: kubernetes.server)."""
    max_age_s: float = Field(default=90.0, gt=0, le=86_400, allow_inf_nan=False)
    """A reading older than this is stale to the loop, however fresh its source calls it: its
    pool is held (no scale-down) and a finding says so. Above the slowest scrape interval."""
    prometheus: PrometheusSettings = PrometheusSettings()
    """Where Prometheus is and what to ask it (docs/metrics.md lists the queries)."""


class AuditSection(Section):
    """The decision log's witness outside the data dir (docs/audit.md); its key only from the
    environment (STEWARD_AUDIT_KEY)."""

    witness: str | None = None
    """A file (one JSON line appended each time the log's head moves) or an http(s) URL (the
    same line POSTed), out of the data dir's reach: `steward audit verify --witness` checks
    the log against it."""


class StewardConfig(Section):
    """The effective configuration (see the module docstring)."""

    backend: Literal["sim", "kubernetes"] = "sim"
    data_dir: Path = Path(".steward")
    policy: Path | None = None
    """None: the one the last `steward run` in the data dir used, else the shipped default."""
    planner: Literal["rules", "llm"] = "rules"
    scenario: Path | None = None
    """The simulated cluster's scenario (backend sim only; None: the built-in day)."""
    interval_s: float = Field(default=15.0, gt=0, le=86_400, allow_inf_nan=False)
    listen: Listen = Listen()
    llm: LLMSection = LLMSection()
    kubernetes: KubernetesSection = KubernetesSection()
    metrics: MetricsSection = MetricsSection()
    audit: AuditSection = AuditSection()
    slack: SlackSettings = SlackSettings()
    """Chat-ops (docs/slack.md); its tokens only from the environment or files."""
    notifiers: tuple[Literal["log", "slack"], ...] = ("log",)
    source: str = Field(default="(defaults)", exclude=True)
    """Where it was read from: a file, or the defaults; plus the variables laid over it."""
    origins: dict[str, str] = Field(default={}, exclude=True)
    """Dotted key -> where its value came from: `file FILE`, `environment NAME`, `flag --X`
    (a key not listed has its default)."""
    warnings: tuple[str, ...] = Field(default=(), exclude=True)
    """What was read but set nothing: unknown STEWARD_* variables, by name."""

    def with_flags(self, flags: dict[str, tuple[str, Any]]) -> StewardConfig:
        """This configuration with command-line flags over it, each remembered as their source
        (`flag --port`): dotted key (`listen.port`) -> (flag, value); a flag given as None is
        not given. InvalidInput names the flag whose value the schema refuses."""
        given = {k: v for k, v in flags.items() if v[1] is not None}
        if not given:
            return self
        data = self.model_dump()
        for key, (_, value) in given.items():
            *parents, leaf = key.split(".")
            section = data
            for name in parents:
                section = section[name]
            section[leaf] = value
        try:
            config = StewardConfig.model_validate(data)
        except ValidationError as exc:
            flag_of = {tuple(key.split(".")): flag for key, (flag, _) in given.items()}
            raise InvalidInput(
                "; ".join(
                    f"{flag_of.get(tuple(str(p) for p in e['loc']), '.'.join(map(str, e['loc'])))} "
                    f"{e['input']!r}: {str(e['msg']).removeprefix('Value error, ')}"
                    for e in exc.errors()
                )
            ) from exc
        origins = {**self.origins, **{key: f"flag {flag}" for key, (flag, _) in given.items()}}
        return config.model_copy(
            update={"source": self.source, "origins": origins, "warnings": self.warnings}
        )

    def origin(self, key: str) -> tuple[str, str]:
        """Where a dotted key's value came from: (default|file|environment|flag, which)."""
        kind, _, where = self.origins.get(key, "default").partition(" ")
        return kind, where


def config_path(option: Path | None = None) -> Path | None:
    """The file chosen: the option, else $STEWARD_CONFIG, else none."""
    if option is not None:
        return option
    value = os.environ.get(CONFIG_ENV)
    return Path(value) if value else None


def load_config(path: Path | None = None, env: dict[str, str] | None = None) -> StewardConfig:
    """The file at `path` (see `config_path`) with the environment laid over it."""
    env = dict(os.environ) if env is None else env
    if path is None and env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV])
    doc: CommentedMap = CommentedMap()
    file = str(path) if path is not None else "(defaults)"
    if path is not None:
        try:
            text = read_text(path, file, "the config file")
        except YamlProblem as exc:
            raise ConfigError([exc.problem]) from exc
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or "not UTF-8 text"
            raise ConfigError([Problem(file, 1, 1, f"cannot read the config file: {why}")]) from exc
        if text.strip():
            try:
                doc = parse_mapping(text, file, "steward.yaml is a mapping of keys: backend, …")
            except YamlProblem as exc:
                raise ConfigError([exc.problem]) from exc
    try:
        StewardConfig.model_validate(plain(doc))
    except ValidationError as exc:
        raise ConfigError(
            [schema_problem(file, doc, e, StewardConfig) for e in exc.errors()]
        ) from exc
    data = plain(doc)
    written = plain(doc)
    laid = envvars.lay(data, env, StewardConfig)
    try:
        config = StewardConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError([_env_problem(e, laid) for e in exc.errors()]) from exc
    names = sorted({v.name for v in laid})
    source = file + (f" + {', '.join(names)}" if names else "")
    return config.model_copy(
        update={
            "source": source,
            "origins": _origins(written, laid, env, file),
            "warnings": tuple(envvars.unknown(env, StewardConfig)),
        }
    )


def _origins(
    written: dict[str, Any], laid: list[envvars.Laid], env: dict[str, str], file: str
) -> dict[str, str]:
    """Each key set by the file or a variable -> `file FILE` or `environment NAME`."""
    origins: dict[str, str] = {}
    for leaf in envvars.leaves(StewardConfig):
        key = ".".join(leaf)
        if envvars.holds(written, leaf):
            origins[key] = f"file {file}"
        for variable in laid:  # in the order laid: the deepest, last, wins
            depth = len(variable.path)
            if leaf[:depth] == variable.path and envvars.holds(
                {"v": envvars.value(env[variable.name])}, ("v", *leaf[depth:])
            ):
                origins[key] = f"environment {variable.name}"
    return origins


def _env_problem(err: Any, laid: list[envvars.Laid]) -> Problem:
    loc = tuple(str(p) for p in err["loc"])
    dotted = ".".join(loc)
    variable = next((v.name for v in reversed(laid) if loc[: len(v.path)] == v.path), None)
    message = str(err["msg"]).removeprefix("Value error, ")
    if variable is None:
        return Problem("(environment)", 0, 0, f"{dotted}: {message}")
    where = f"{dotted}: " if loc != _variable_path(laid, variable) else ""
    return Problem(variable, 0, 0, f"{where}{message} (got {err.get('input')!r})")


def _variable_path(laid: list[envvars.Laid], name: str) -> tuple[str, ...]:
    return next(v.path for v in laid if v.name == name)


def masked(config: StewardConfig) -> dict[str, Any]:
    """The effective values as JSON, every secret-looking value replaced by '***'."""
    shown: dict[str, Any] = _mask(config.model_dump(mode="json"))
    return shown


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if value is not None and any(word in key.lower() for word in SECRET_WORDS):
        return "***"
    return value
