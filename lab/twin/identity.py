"""Stable made-up identities for the twin's objects: hashes for names and ids, and IPs.

Derived from the object's name only, so a restarted twin gives every object the same ones.
"""

from __future__ import annotations

import hashlib


def stable_hash(text: str, n: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha1(text.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def fake_ip(name: str) -> str:
    d = hashlib.sha1(name.encode()).digest()
    return f"10.{d[0]}.{d[1]}.{max(1, d[2] % 255)}"
