"""Draining a node through the Eviction API, honouring PodDisruptionBudgets.

Cordon first; then ask for an eviction of every pod bound to the node except DaemonSet pods
(their controller puts them straight back) and mirror pods (the kubelet owns them). A 429 is
the budget saying "not now": asked again every `eviction_retry_s` until the deadline. Then wait
for the evicted pods to be gone. `Drainer.start` runs this on a thread and returns at once;
`status` says how far it got.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools.errors import InvalidInput, StewardError

Obj = dict[str, Any]
MIRROR = "kubernetes.io/config.mirror"


def skipped(pod: Obj) -> str | None:
    """Why a drain leaves this pod alone, or None."""
    meta = pod.get("metadata") or {}
    if MIRROR in (meta.get("annotations") or {}):
        return "mirror pod"
    if any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
        return "DaemonSet pod"
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return "finished"
    return None


@dataclass
class DrainState:
    node: str
    deadline: float
    dry_run: bool
    pending: list[str] = field(default_factory=list)
    """namespace/name of pods not yet evicted (the budget said no, so far)."""
    evicted: list[str] = field(default_factory=list)
    refused: int = 0
    """429 answers (budget) seen."""
    done: bool = False
    outcome: str = "running"
    error: str = ""


class Drainer:
    def __init__(
        self,
        pods_on: Callable[[str], list[Obj]],
        evict: Callable[[str, str, bool], bool],
        still_there: Callable[[str, str], bool],
        retry_s: float,
    ) -> None:
        self._pods_on, self._evict, self._still_there = pods_on, evict, still_there
        self.retry_s = retry_s
        self.states: dict[str, DrainState] = {}

    def start(self, node: str, deadline_s: float, dry_run: bool) -> DrainState:
        pods = [p for p in self._pods_on(node) if skipped(p) is None]
        st = DrainState(node, time.monotonic() + deadline_s, dry_run)
        st.pending = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]
        self.states[node] = st
        threading.Thread(target=self._run, args=(st,), daemon=True, name=f"drain-{node}").start()
        return st

    def run(self, node: str, deadline_s: float, dry_run: bool) -> DrainState:
        st = self.start(node, deadline_s, dry_run)
        while not st.done:
            time.sleep(0.02)
        return st

    def _run(self, st: DrainState) -> None:
        try:
            self._evict_all(st)
            if st.dry_run:
                st.outcome = "drained" if not st.pending else "deadline"
                return
            while time.monotonic() < st.deadline:
                if not any(self._still_there(*k.split("/", 1)) for k in st.evicted):
                    st.outcome = "drained" if not st.pending else "deadline"
                    return
                time.sleep(min(0.05, self.retry_s))
            st.outcome = "deadline"
        except StewardError as exc:
            st.outcome, st.error = "failed", str(exc)
        finally:
            st.done = True

    def _evict_all(self, st: DrainState) -> None:
        while st.pending:
            for key in list(st.pending):
                ns, name = key.split("/", 1)
                try:
                    allowed = self._evict(ns, name, st.dry_run)
                except InvalidInput:  # gone already
                    st.pending.remove(key)
                    continue
                if not allowed:  # the budget said no (429): ask again later
                    st.refused += 1
                    continue
                st.pending.remove(key)
                st.evicted.append(key)
            if not st.pending or st.dry_run or time.monotonic() >= st.deadline:
                return
            time.sleep(self.retry_s)
