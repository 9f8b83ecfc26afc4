"""Who may do what on the twin: the seam where RBAC plugs in (issue 13).

Every resource request is described as the API server's authorizer sees it (user, verb, API
group, resource, subresource, namespace, name) and handed to an `Authorizer`; a denial is a 403
worded as a real cluster words it. The default allows everything. The user comes from the
bearer token (`Authorization: Bearer T`, mapped by `tokens`), else `system:anonymous`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from evals.twin.store import ApiError


@dataclass(frozen=True, slots=True)
class Attributes:
    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str


class Authorizer(Protocol):
    def allowed(self, attrs: Attributes) -> bool: ...


class AllowAll:
    def allowed(self, attrs: Attributes) -> bool:
        return True


def verb_of(method: str, has_name: bool, watching: bool) -> str:
    if method == "GET":
        return "watch" if watching else ("get" if has_name else "list")
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def forbidden(a: Attributes) -> ApiError:
    what = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    subject = f'{what} "{a.name}"' if a.name else what
    scope = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{subject} is forbidden: User "{a.user}" cannot {a.verb} resource "{what}" in API '
        f'group "{a.group}" {scope}',
        {"name": a.name, "kind": a.resource},
    )
