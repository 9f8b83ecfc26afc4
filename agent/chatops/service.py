"""Chat-ops in the daemon: the Slack client, app, commands and sender started and stopped together.

`SlackService.start` is what `steward run` calls when `slack.enabled` is set. In Socket Mode the
app dials out (`apps.connections.open`, then a WebSocket), trying again with backoff while Slack
is unreachable; in HTTP mode it answers Bolt's `/slack/events` on the daemon's HTTP port. The
sender thread posts approvals and the outbox. Rotations asked for in Slack are handed to the
tick thread (`TickRotations`): the daemon stays the one writer of the cluster and of the log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import structlog
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk import WebClient
from tenacity import Retrying, retry_if_exception_type, wait_exponential

from agent.chatops.app import EVENTS_PATH, build_app, events_handler
from agent.chatops.commands import Commands, Reply
from agent.chatops.notifier import SlackNotifier
from agent.chatops.sender import Sender
from agent.chatops.store import ChatopsStore
from agent.daemon.slack_settings import SlackSettings, load_secrets
from agent.rotation.request import RequestResult, RotationRequests
from agent.support.notices import Notifier
from agent.support.telemetry import Telemetry
from policies.model import Policy
from tools.model import ClusterState

if TYPE_CHECKING:
    from agent.daemon.config import StewardConfig
    from agent.daemon.runtime import Runtime

T = TypeVar("T")
ROTATION_WAIT_S = 300.0
CLOSE_WAIT_S = 10.0
"""How long stopping waits for the Slack connection to open or to close."""
log = structlog.get_logger("steward.slack")


class TickRotations:
    """Rotation requests run on the daemon's tick thread, between two decisions."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def request(self, target: str) -> RequestResult:
        return self._between_ticks(lambda: self._desk().request(target))

    def answered(self, decision_id: str, target: str) -> RequestResult:
        return self._between_ticks(lambda: self._desk().answered(decision_id, target))

    def _desk(self) -> RotationRequests:
        r = self.runtime
        return RotationRequests(r.parts, r.data_dir, r.ctx.policy, r.ctx.audit)

    def _between_ticks(self, work: Callable[[], T]) -> T:
        done: Future[T] = Future()

        def chore() -> None:
            try:
                done.set_result(work())
            except Exception as exc:  # handed back to the Slack thread that asked
                done.set_exception(exc)

        self.runtime.chores.put(chore)
        return done.result(timeout=ROTATION_WAIT_S)


@dataclass
class SlackService:
    settings: SlackSettings
    store: ChatopsStore
    commands: Commands
    sender: Sender
    notifier: SlackNotifier
    socket: SocketModeHandler | None
    stopping: threading.Event
    connecting: threading.Thread | None = None
    """The thread opening the Socket Mode connection (retrying while Slack is unreachable)."""

    @classmethod
    def start(
        cls,
        settings: SlackSettings,
        data_dir: Path,
        policy: Policy,
        *,
        observe: Callable[[], ClusterState],
        plan: Callable[[], dict[str, object]],
        runtime: Runtime | None,
        telemetry: Telemetry | None,
        then: Notifier | None = None,
        environ: Mapping[str, str] | None = None,
        now: Callable[[], datetime] | None = None,
        ask: Callable[[str, str], Reply] | None = None,
    ) -> SlackService:
        """Everything of chat-ops, started; InvalidInput when a secret or the channel is missing."""
        secrets = load_secrets(settings, environ)
        client = WebClient(token=secrets.bot_token, base_url=settings.api_url, timeout=10)
        store = ChatopsStore.open(data_dir)
        sender = Sender(settings, client, store, data_dir)
        notifier = SlackNotifier(store, sender.wake, then)
        rotations = TickRotations(runtime) if runtime is not None else None
        commands = Commands(
            data_dir, policy, observe, store, dry_run=plan, rotations=rotations, now=now, ask=ask
        )
        app = build_app(settings, secrets, client, commands, store, web_api_up=sender.reachable)
        stopping = threading.Event()
        socket = None
        connecting = None
        if settings.mode == "http":
            if telemetry is None:
                raise ValueError("slack http mode needs the daemon's HTTP server")
            telemetry.posts[EVENTS_PATH] = events_handler(app)
        else:
            assert secrets.app_token is not None
            socket = SocketModeHandler(app, secrets.app_token)
            connecting = threading.Thread(
                target=_connect, args=(socket, stopping), name="steward-slack-socket", daemon=True
            )
            connecting.start()
        sender.start()
        log.info("slack chat-ops started", mode=settings.mode, channel=settings.channel)
        return cls(settings, store, commands, sender, notifier, socket, stopping, connecting)

    def stop(self) -> None:
        self.stopping.set()
        self.sender.stop()
        if self.socket is not None:
            if self.connecting is not None:  # a connection opening now would outlive the close
                self.connecting.join(CLOSE_WAIT_S)
            _close(self.socket)
        self.store.close()


def _close(socket: SocketModeHandler) -> None:
    """Close the Socket Mode connection, waiting at most CLOSE_WAIT_S.

    slack_sdk's built-in client can hang in close: its session runner marks the session live
    again when it starts, so a close that lands while a session is starting waits on a loop
    that never ends. The close runs aside and the session is marked over again until it
    returns; past the wait it is left to end with the process (its threads are daemons)."""
    closing = threading.Thread(target=socket.close, name="steward-slack-close", daemon=True)
    closing.start()
    state = getattr(socket.client, "current_session_state", None)
    deadline = time.monotonic() + CLOSE_WAIT_S
    while closing.is_alive() and time.monotonic() < deadline:
        if state is not None:
            state.terminated = True
        closing.join(0.1)
    if closing.is_alive():
        log.warning("slack socket mode: the connection did not close", wait_s=CLOSE_WAIT_S)


def _nap(stopping: threading.Event, seconds: float) -> None:
    stopping.wait(seconds)  # a stop cuts the wait short


def _connect(socket: SocketModeHandler, stopping: threading.Event) -> None:
    """Open the Socket Mode connection, retrying while Slack is unreachable."""
    for attempt in Retrying(
        retry=retry_if_exception_type(Exception),
        wait=wait_exponential(multiplier=1, max=60),
        sleep=lambda seconds: _nap(stopping, seconds),
    ):
        with attempt:
            if stopping.is_set():
                return
            try:
                socket.connect()  # type: ignore[no-untyped-call]
            except Exception as exc:
                log.warning("slack socket mode: cannot connect yet", error=str(exc))
                raise


def start_for_daemon(
    config: StewardConfig,
    runtime: Runtime,
    telemetry: Telemetry,
    *,
    policy_path: Path | None,
) -> SlackService:
    """Chat-ops for `steward run`: status and approvals observe the cluster as `steward status`
    and `steward approve` do (the composition root opens it); plan is `steward plan`'s dry run.
    Notifications go to Slack when `notifiers` lists slack, and to the log when it lists log."""
    from agent.chatops.questions import asker_for
    from agent.daemon.compose import assess_settings, dry_run, open_backend

    where = runtime.data_dir
    service = SlackService.start(
        config.slack,
        where,
        runtime.ctx.policy,
        observe=lambda: open_backend(config, where).parts.cluster().observe(),
        plan=lambda: dry_run(
            where,
            config.planner,
            policy_path,
            open_backend(config, where),
            thresholds=assess_settings(config),
        ),
        runtime=runtime,
        telemetry=telemetry,
        then=runtime.notifier if "log" in config.notifiers else None,
        now=runtime.parts.clock.now,  # answers at the cluster's time, not its last save's
        ask=asker_for(config, runtime),
    )
    if "slack" in config.notifiers:
        runtime.notifier = service.notifier
    return service
