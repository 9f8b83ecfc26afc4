"""`MetricsServer`: serves a scrape body on loopback, the way an exporter's /metrics does.

A threading HTTP server that answers GET /metrics with whatever `body()` returns at that moment
(or each of several paths with its own body, as many exporters behind one address would),
in the classic Prometheus text format (Prometheus asks for OpenMetrics first; it gets the
classic format, as a real vLLM or DCGM exporter serving text/plain gives). It binds 127.0.0.1
unless told otherwise; port 0 picks a free port (see `port`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tools.metrics.exposition import CONTENT_TYPE


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        # A scraper that hangs up mid-answer (its timeout, Prometheus killed) is not an error
        # of the exporter; the default handler prints a traceback for it.
        return


class MetricsServer:
    """GET /metrics -> body() (or GET path -> routes[path]()); started in a daemon thread by
    `start`, stopped by `stop`."""

    def __init__(
        self,
        body: Callable[[], bytes] | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        routes: Mapping[str, Callable[[], bytes]] | None = None,
    ):
        if routes is None:
            if body is None:
                raise ValueError("MetricsServer needs a body or routes to serve")
            routes = {"/metrics": body}
        elif body is not None:
            raise ValueError("MetricsServer serves one body or routes, not both")
        self._routes = routes
        self.scrapes = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                make = server._routes.get(self.path.split("?")[0])
                if make is None:
                    self.send_error(404, "no exporter at this path")
                    return
                try:
                    payload = make()
                except Exception as exc:  # an exporter that cannot read answers 500, like DCGM
                    self.send_error(500, f"reading failed: {exc}")
                    return
                server.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                return  # scrapes every second would flood the log

        self._http = _Server((host, port), Handler)
        self._http.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._http.serve_forever()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
