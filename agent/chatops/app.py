"""The Slack app: Bolt listeners for `/steward`, mentions and the approval buttons.

Each listener acknowledges first (Slack wants an answer within 3 s) and then asks the commands
(agent/chatops/commands.py); what it answers goes to the channel, long parts threaded, refusals as
ephemeral messages only the asker sees. A button press is bound to its message: the decision
named by the button must be the one chatops.db posted in that very message, so a press cannot be
moved to another decision. In HTTP mode Bolt checks each request's signature and timestamp
(401 when forged or more than 5 minutes off); a middleware here refuses a request whose signature
was seen before (a replay), with 401 as well.

A request is authorised without asking Slack (`auth.test`): the app holds its one workspace's bot
token, and a Web API that cannot be reached must not turn a signed command into an HTTP 500.
When posting an answer fails, the asker still gets one, ephemeral: in the command's own HTTP
answer when the sender already knows the Web API is down, else through the command's
`response_url`; the log gets one line, never a traceback.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

import structlog
from slack_bolt import App, BoltResponse
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.request import BoltRequest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from agent.chatops import blocks
from agent.chatops.commands import Commands, Reply
from agent.chatops.store import ChatopsStore
from agent.daemon.slack_settings import SlackSecrets, SlackSettings

COMMAND = "/steward"
EVENTS_PATH = "/slack/events"
MENTION = re.compile(r"^\s*(<@[A-Z0-9]+>\s*)+")

log = structlog.get_logger("steward.slack")
Say = Callable[..., Any]
POST_FAILED = (SlackApiError, SlackClientError, OSError)
"""What a Web API call raises when Slack cannot be reached or refuses the call."""
CANNOT_POST = (
    "Steward got your command but cannot post to this channel: Slack's Web API does not "
    "answer it ({why}). The agent keeps running; `steward status` on its host answers meanwhile."
)


def build_app(
    settings: SlackSettings,
    secrets: SlackSecrets,
    client: WebClient,
    commands: Commands,
    store: ChatopsStore,
    *,
    now: Callable[[], float] = time.time,
    web_api_up: Callable[[], bool] = lambda: True,
) -> App:
    """The Bolt app, its listeners bound to `commands` and `store`; `web_api_up`: whether the last
    Web API call went through (the sender knows)."""
    http = settings.mode == "http"
    bolt_log = logging.getLogger("steward.slack.bolt")
    bolt_log.addFilter(_NoTokenNotice())
    app = App(
        logger=bolt_log,
        client=client,
        signing_secret=secrets.signing_secret or "",
        request_verification_enabled=http,
        # Started without asking Slack: an unreachable Slack must not stop the agent.
        token_verification_enabled=False,
        authorize=lambda enterprise_id, team_id, user_id: AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            user_id=user_id,
            bot_token=secrets.bot_token,
        ),
        process_before_response=False,
    )

    @app.error
    def failed(error: Exception) -> None:  # one line in the log, not Bolt's traceback
        log.error("slack listener failed", error=f"{type(error).__name__}: {error}")

    @app.middleware
    def refuse_replays(
        req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]
    ) -> BoltResponse:
        if req.mode == "http":
            signature = _header(req.headers, "x-slack-signature")
            if not store.first_sight(signature, now()):
                log.warning("refused a replayed request", signature=signature[:16])
                return BoltResponse(status=401, body="replayed request")
        return next()

    def send(
        reply: Reply, channel: str, user: str, respond: Say | None = None, thread: str | None = None
    ) -> None:
        """Post `reply` (in `thread`, if given), then update the approval message it answered;
        one that cannot be posted is logged, and told through `respond` where a command gave one."""
        try:
            deliver(client, reply, channel, user, thread_ts=thread)
            _settle(client, store, reply)
        except POST_FAILED as exc:
            _cannot_post(exc, respond)

    @app.command(COMMAND)
    def command(ack: Callable[..., None], command: dict[str, Any], respond: Say) -> None:
        if not web_api_up():
            ack(response_type="ephemeral", text=CANNOT_POST.format(why="it did not answer lately"))
            log.warning("slack command answered in its ack: the Web API is down")
            return
        ack()
        channel, user = command["channel_id"], command["user_id"]
        reply = commands.handle(command.get("text", ""), user, f"command in channel {channel}")
        send(reply, channel, user, respond=respond)

    @app.event("app_mention")
    def mention(event: dict[str, Any]) -> None:
        channel, user, ts = event["channel"], event.get("user", ""), event["ts"]
        text = MENTION.sub("", event.get("text", ""))
        reply = commands.handle(text, user, f"message {channel}/{ts}")
        send(reply, channel, user, thread=event.get("thread_ts") or ts)

    def press(body: dict[str, Any], approved: bool) -> None:
        user = body["user"]["id"]
        channel = body["channel"]["id"]
        ts = body["container"].get("message_ts") or body["message"]["ts"]
        decision = body["actions"][0]["value"]
        posted = store.message(decision)
        if posted is None or (posted.channel, posted.ts) != (channel, ts):
            reply = Reply(
                f"this message is not the approval request of {decision}; nothing changed",
                ephemeral=True,
            )
        else:
            note = f"Slack message {channel}/{ts}"
            reply = commands.press(decision, user, approved=approved, note=note)
        send(reply, channel, user)

    @app.action(blocks.APPROVE_ID)
    def approve(ack: Callable[[], None], body: dict[str, Any]) -> None:
        ack()
        press(body, approved=True)

    @app.action(blocks.DENY_ID)
    def deny(ack: Callable[[], None], body: dict[str, Any]) -> None:
        ack()
        press(body, approved=False)

    return app


def _cannot_post(exc: Exception, respond: Say | None) -> None:
    """An answer that could not be posted: one log line, and the asker told through the
    command's response_url when there is one (it may work where the Web API does not)."""
    why = f"{type(exc).__name__}: {str(exc)[:160]}"
    log.warning("slack: cannot post the answer", error=why)
    if respond is None:
        return
    try:
        respond(response_type="ephemeral", text=CANNOT_POST.format(why=why))
    except Exception as failed:  # the asker cannot be reached either: the log has it
        log.warning("slack: cannot answer through response_url either", error=str(failed))


class _NoTokenNotice(logging.Filter):
    """Bolt warns that SLACK_BOT_TOKEN in the environment is unused when it is given a client;
    here the client is made from that very token, so the warning is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def deliver(
    client: WebClient, reply: Reply, channel: str, user: str, thread_ts: str | None = None
) -> None:
    """Send a reply: ephemeral to the asker, or to the channel with the long part threaded."""
    if reply.ephemeral:
        client.chat_postEphemeral(
            channel=channel,
            user=user,
            text=reply.title,
            blocks=blocks.answer(reply.title, reply.lines),
        )
        return
    shown, rest = blocks.split(reply.lines)
    rest += reply.thread
    sent = client.chat_postMessage(
        channel=channel,
        text=reply.title,
        blocks=blocks.answer(reply.title, shown),
        thread_ts=thread_ts,
    )
    for text in blocks.chunks(rest):
        client.chat_postMessage(channel=channel, text=text, thread_ts=thread_ts or sent["ts"])


def _settle(client: WebClient, store: ChatopsStore, reply: Reply) -> None:
    """An answer given from Slack shows on its approval message at once: who and when."""
    found = reply.answered
    posted = store.message(found.decision_id) if found else None
    if found is None or posted is None:
        return
    text = blocks.answered_line(found)
    client.chat_update(
        channel=posted.channel, ts=posted.ts, text=text, blocks=blocks.approval_settled(found, text)
    )
    store.shown(found.decision_id, found.status)


def events_handler(app: App) -> Callable[[bytes, Mapping[str, str], str], tuple[int, str, bytes]]:
    """Bolt's `/slack/events` as a POST handler of the daemon's HTTP server."""

    def handle(body: bytes, headers: Mapping[str, str], query: str) -> tuple[int, str, bytes]:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return 400, "text/plain", f"body is not UTF-8 (byte {exc.start})\n".encode()
        problem = malformed(text)
        if problem is not None:
            log.warning("malformed Slack request", problem=problem)
            return 400, "text/plain", f"malformed Slack request: {problem}\n".encode()
        try:
            request = BoltRequest(
                body=text, query=query, headers={k.lower(): [v] for k, v in headers.items()}
            )
            response = app.dispatch(request)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
            # Signed, but not what Slack sends (a payload that is not JSON, or JSON of
            # another shape): the sender's error, said as such, not a dropped connection.
            log.warning("malformed Slack request", error=f"{type(exc).__name__}: {exc}"[:300])
            return 400, "text/plain", b"malformed Slack request\n"

        kind = (response.headers.get("content-type") or ["text/plain;charset=utf-8"])[0]
        return response.status, kind, response.body.encode("utf-8")

    return handle


_OBJECTS = ("user", "team", "channel", "container", "message", "view", "enterprise")


def malformed(body: str) -> str | None:
    """What makes a form body unlike anything Slack sends (None: nothing): an interaction's
    `payload` must be a JSON object whose parts Bolt reads are of the types Slack gives them."""
    form = parse_qs(body, keep_blank_values=True)
    given = form.get("payload")
    if not given:
        return None
    try:
        payload = json.loads(given[0])
    except ValueError:
        return "payload is not JSON"
    if not isinstance(payload, dict):
        return f"payload is a JSON {type(payload).__name__}, not an object"
    if not isinstance(payload.get("type"), str):
        return "payload.type is not a string"
    for key in _OBJECTS:
        if payload.get(key) is not None and not isinstance(payload[key], dict):
            return f"payload.{key} is not an object"
    actions = payload.get("actions")
    if actions is not None and not (
        isinstance(actions, list) and all(isinstance(a, dict) for a in actions)
    ):
        return "payload.actions is not a list of objects"
    return None


def _header(headers: Mapping[str, Any], name: str) -> str:
    value = headers.get(name)
    if isinstance(value, list | tuple):
        return str(value[0]) if value else ""
    return str(value or "")
