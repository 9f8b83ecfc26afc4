"""A node's cards as the Kubernetes API describes them, with the models built once per content.

The GPU driver's DRA ResourceSlice lists each card (UUID, index, product, memory) where it is
published; otherwise the GPU feature discovery labels give the count, product and memory. The
same card, with the same clients and sharing, is the same `Gpu` object from tick to tick.
"""

from __future__ import annotations

from datetime import datetime

from tools.backends.kubernetes import contract as c
from tools.backends.kubernetes import objects as o
from tools.backends.kubernetes.objects import Obj, quantity
from tools.model import Gpu, Metric

SOURCE = "kubernetes"
MISSING = Metric.missing(SOURCE)
MEMO_LIMIT = 200_000
"""Cards remembered before the memo starts over (a fleet of 1,000 nodes has 8,000)."""


class Cards:
    """Builds each node's `Gpu` models, reusing those whose content did not change."""

    def __init__(self) -> None:
        self._memo: dict[tuple[object, ...], Gpu] = {}

    def of(
        self,
        node: str,
        labels: dict[str, str],
        alloc: Obj,
        *,
        slice_: Obj | None,
        clients: dict[str, list[str]],
        now: datetime,
        unified: bool,
        node_memory: int,
    ) -> tuple[Gpu, ...]:
        """The node's cards: from its ResourceSlice where the driver publishes one, else from
        the GPU feature discovery labels; memory is the host's on unified-memory machines."""
        sharing = o.sharing(labels, alloc)
        cards: list[tuple[str, int, str, int]] = []  # uuid, index, product, memory
        if slice_ is not None:
            for d in (slice_.get("spec") or {}).get("devices") or []:
                attrs = d.get("attributes") or {}
                cap = (d.get("capacity") or {}).get("memory") or {}
                cards.append(
                    (
                        (attrs.get("uuid") or {}).get("string") or f"{node}/{d.get('name')}",
                        int((attrs.get("index") or {}).get("int") or len(cards)),
                        (attrs.get("productName") or {}).get("string") or "",
                        quantity(cap.get("value", 0)),
                    )
                )
        else:
            count = int(labels.get(c.GFD_COUNT) or 0)
            product = labels.get(c.GFD_PRODUCT, "").removesuffix("-SHARED").replace("-", " ")
            mib = int(labels.get(c.GFD_MEMORY) or 0)
            cards = [(f"{node}/gpu-{i}", i, product, mib * 2**20) for i in range(count)]
        gpus = []
        for uuid, index, product, memory in sorted(cards, key=lambda x: x[1]):
            total = node_memory if unified else memory
            users = tuple(clients.get(uuid, ()))
            gkey = (uuid, index, product, total, sharing, users, node)
            gpu = self._memo.get(gkey)
            if gpu is None:
                if len(self._memo) > MEMO_LIMIT:
                    self._memo.clear()
                gpu = self._memo[gkey] = Gpu(
                    uuid=uuid,
                    index=index,
                    model=product,
                    node=node,
                    memory_total_bytes=Metric.fresh(float(total), now, SOURCE)
                    if total
                    else MISSING,
                    sharing=sharing,
                    clients=users,
                )
            gpus.append(gpu)
        return tuple(gpus)
