"""Who may do what on the twin: the request's attributes, the `Authorizer` seam, the 403.

Every resource request is described as the API server's authorizer sees it (user, verb, API
group, resource, subresource, namespace, name) and handed to an `Authorizer`; a denial is a 403
worded as a real cluster words it. The default allows everything; lab/twin/rbac.py enforces a
manifest's Roles. The user comes from the bearer token (`Authorization: Bearer T`, mapped by
`tokens`), else `system:anonymous`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lab.twin.store import ApiError


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
    if method == "DELETE" and not has_name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def named_in_selector(field_selector: str | None) -> str:
    """The one name a list or watch asks for (`metadata.name=N`), which the API server
    authorizes as that object's name; "" otherwise."""
    for term in (field_selector or "").split(","):
        key, sep, value = term.partition("=")
        if sep and key.strip() == "metadata.name" and not value.startswith("="):
            return value.strip()
    return ""


def forbidden(a: Attributes) -> ApiError:
    what = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    qualified = f"{a.resource}.{a.group}" if a.group else a.resource
    subject = f'{qualified} "{a.name}"' if a.name else qualified
    scope = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{subject} is forbidden: User "{a.user}" cannot {a.verb} resource "{what}" in API '
        f'group "{a.group}" {scope}',
        {"name": a.name, "group": a.group, "kind": a.resource},
    )
