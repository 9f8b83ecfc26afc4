"""RBAC on the twin: the Roles, ClusterRoles and their bindings of a manifest, enforced as the
API server's RBAC authorizer enforces them.

`Rbac.load(path, namespace)` reads a multi-document manifest (docker/k8s/rbac.yaml); objects
without a namespace take `namespace`, as `kubectl apply -k` gives them the kustomization's. A
request is allowed when a binding names the requesting user (or one of its groups) and its role
has a rule that matches: `apiGroups`, `resources` (`pods/eviction` names a subresource, `*` and
`*/scale` match as Kubernetes matches them), `verbs` and `resourceNames`. A ClusterRoleBinding
grants everywhere; a RoleBinding only in its own namespace, whether it refers to a Role or a
ClusterRole. A list or watch asking for one object (`fieldSelector=metadata.name=N`) counts N as
its name, so `resourceNames` can restrict it, as the API server does.

`grants(user)` lists what a user may do, one `Grant` per verb, resource and name, for tests that
hold the Roles to what the backend really asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lab.twin.auth import Attributes

SA_PREFIX = "system:serviceaccount:"
CLUSTER = ""
"""The scope of a grant that holds in every namespace and at the cluster scope."""


@dataclass(frozen=True, slots=True)
class Rule:
    groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]
    names: frozenset[str]

    def matches(self, a: Attributes) -> bool:
        what = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        resource_ok = (
            "*" in self.resources
            or what in self.resources
            or (bool(a.subresource) and f"*/{a.subresource}" in self.resources)
        )
        return (
            ("*" in self.groups or a.group in self.groups)
            and resource_ok
            and ("*" in self.verbs or a.verb in self.verbs)
            and (not self.names or a.name in self.names)
        )


@dataclass(frozen=True, slots=True)
class Binding:
    scope: str
    """CLUSTER for a ClusterRoleBinding, else the RoleBinding's namespace."""
    subjects: frozenset[str]
    """Users and groups, as the authenticator names them."""
    rules: tuple[Rule, ...]


@dataclass(frozen=True, slots=True, order=True)
class Grant:
    verb: str
    group: str
    resource: str
    """`pods` or `pods/eviction`."""
    scope: str
    """CLUSTER, or the namespace the grant is limited to."""
    name: str = ""
    """The one object it is limited to ("" for any)."""


def groups_of(user: str) -> tuple[str, ...]:
    """The groups the API server puts a user in (a service account's, or anonymous)."""
    if user == "system:anonymous":
        return ("system:unauthenticated",)
    if user.startswith(SA_PREFIX):
        namespace = user[len(SA_PREFIX) :].split(":", 1)[0]
        return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                "system:authenticated")  # fmt: skip
    return ("system:authenticated",)


class Rbac:
    """An Authorizer over a manifest's RBAC objects (see the module docstring)."""

    def __init__(self, bindings: tuple[Binding, ...]) -> None:
        self.bindings = bindings

    @classmethod
    def load(cls, path: Path, namespace: str) -> Rbac:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        return cls.of(docs, namespace)

    @classmethod
    def of(cls, docs: list[dict[str, Any]], namespace: str) -> Rbac:
        def ns_of(doc: dict[str, Any]) -> str:
            return str((doc.get("metadata") or {}).get("namespace") or namespace)

        roles: dict[tuple[str, str], tuple[Rule, ...]] = {}
        for doc in docs:
            kind, name = doc.get("kind"), doc["metadata"]["name"]
            if kind in ("Role", "ClusterRole"):
                where = ns_of(doc) if kind == "Role" else CLUSTER
                roles[(str(kind), f"{where}/{name}")] = tuple(
                    _rule(r) for r in doc.get("rules") or () if "nonResourceURLs" not in r
                )
        bindings: list[Binding] = []
        for doc in docs:
            kind = doc.get("kind")
            if kind not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            scope = ns_of(doc) if kind == "RoleBinding" else CLUSTER
            ref = doc["roleRef"]
            where = scope if ref["kind"] == "Role" else CLUSTER
            rules = roles.get((ref["kind"], f"{where}/{ref['name']}"), ())
            subjects = frozenset(_subject(s, ns_of(doc)) for s in doc.get("subjects") or ())
            bindings.append(Binding(scope, subjects, rules))
        return cls(tuple(bindings))

    def allowed(self, attrs: Attributes) -> bool:
        who = {attrs.user, *groups_of(attrs.user)}
        for b in self.bindings:
            if not who & b.subjects:
                continue
            if b.scope not in (CLUSTER, attrs.namespace):
                continue
            if any(rule.matches(attrs) for rule in b.rules):
                return True
        return False

    def grants(self, user: str) -> set[Grant]:
        who = {user, *groups_of(user)}
        found: set[Grant] = set()
        for b in self.bindings:
            if not who & b.subjects:
                continue
            for rule in b.rules:
                for verb in rule.verbs:
                    for group in rule.groups:
                        for resource in rule.resources:
                            for name in rule.names or {""}:
                                found.add(Grant(verb, group, resource, b.scope, name))
        return found


def _rule(raw: dict[str, Any]) -> Rule:
    return Rule(
        groups=frozenset(raw.get("apiGroups") or ()),
        resources=frozenset(raw.get("resources") or ()),
        verbs=frozenset(raw.get("verbs") or ()),
        names=frozenset(raw.get("resourceNames") or ()),
    )


def _subject(raw: dict[str, Any], namespace: str) -> str:
    if raw["kind"] == "ServiceAccount":
        return f"{SA_PREFIX}{raw.get('namespace') or namespace}:{raw['name']}"
    return str(raw["name"])  # User or Group
