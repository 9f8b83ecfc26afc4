"""What one replica serves within the latency targets, from its profile, corrected online.

The profile (the model catalogue's figures for this model on this card) gives the prefill rate
and the inter-token latency as a function of the batch, ITL(b) = a + b x batch: so the largest
batch that meets the ITL target is known, and with it the request slots one replica offers. A
replica spends part of each step prefilling (the share `prefill_share`); decode runs in the
rest, so the ITL a stream sees is ITL(b) / (1 - prefill share), and the slots shrink with it.

What replicas actually serve corrects the profile's speed: the ratio of observed to predicted
decode throughput, smoothed and clamped to +-25 % (`CORRECTION_BOUND`); a raw ratio outside
that band is a drift to report (a finding), never a silent re-fit.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from tools.model import ServingProfile

CORRECTION_BOUND = 0.25
"""The correction never moves the profile's speed by more than this share either way."""
CORRECTION_WEIGHT = 0.1
"""Weight of one reading in the smoothed correction (a few minutes of readings)."""
MIN_BATCH_FOR_CORRECTION = 4
"""Readings with fewer streams per replica say little about the aggregate speed."""
KV_HEADROOM = 0.9
"""Share of the KV cache planned for: the rest absorbs long requests and fragmentation."""


def itl_s(profile: ServingProfile, batch: float) -> float:
    """ITL(b) = a + b x batch: the profile's inter-token latency at `batch` streams."""
    return profile.itl_base_s + profile.itl_per_seq_s * max(batch, 1.0)


def largest_batch(profile: ServingProfile, itl_target_s: float) -> int:
    """The largest batch whose ITL meets the target (at least 1: a replica serves one stream
    however slow), within the engine's sequence limit."""
    if profile.itl_per_seq_s <= 0:
        return profile.max_num_seqs
    fits = math.floor((itl_target_s - profile.itl_base_s) / profile.itl_per_seq_s + 1e-9)
    return max(1, min(profile.max_num_seqs, fits))


class Capacity(BaseModel):
    """One replica at the targets: request slots, speeds, and why the slots are what they are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slots: int
    """Requests one replica serves at once within the ITL target (and its KV cache)."""
    itl_s: float
    """The ITL a stream sees at that batch, prefill included."""
    decode_tok_s: float
    prefill_tok_s: float
    limited_by: str
    """"itl", "kv" or "max_num_seqs"."""
    correction: float = 1.0


def capacity(
    profile: ServingProfile,
    itl_target_s: float,
    *,
    prefill_share: float = 0.0,
    tokens_per_request: float | None = None,
    correction: float = 1.0,
) -> Capacity:
    """One replica's capacity at an ITL target, with `prefill_share` of its time prefilling and
    requests of `tokens_per_request` (prompt + output) held in its KV cache."""
    speed = min(1 + CORRECTION_BOUND, max(1 - CORRECTION_BOUND, correction))
    share = min(0.9, max(0.0, prefill_share))
    # Decode has (1 - share) of each step, and runs `speed` times the profile: the batch must
    # meet target x (1 - share) x speed on the profile's curve.
    target = itl_target_s * (1 - share) * speed
    slots = largest_batch(profile, target)
    limited = "max_num_seqs" if slots == profile.max_num_seqs else "itl"
    if profile.kv_tokens and tokens_per_request and tokens_per_request > 0:
        kv_slots = max(1, math.floor(profile.kv_tokens * KV_HEADROOM / tokens_per_request))
        if kv_slots < slots:
            slots, limited = kv_slots, "kv"
    itl = itl_s(profile, slots) / speed / (1 - share)
    return Capacity(
        slots=slots,
        itl_s=itl,
        decode_tok_s=slots / itl,
        prefill_tok_s=profile.prefill_tok_s * speed,
        limited_by=limited,
        correction=speed,
    )


def corrected(
    previous: float, observed_tok_s: float, streams: float, profile: ServingProfile
) -> tuple[float, float]:
    """The smoothed correction after one reading of a replica's decode speed at `streams`
    streams, and the reading's raw ratio (observed / predicted). Readings at small batches are
    skipped (the raw ratio is returned as 1)."""
    if streams < MIN_BATCH_FOR_CORRECTION or observed_tok_s <= 0:
        return previous, 1.0
    predicted = streams / itl_s(profile, streams)
    raw = observed_tok_s / predicted
    bounded = min(1 + CORRECTION_BOUND, max(1 - CORRECTION_BOUND, raw))
    smoothed = previous + CORRECTION_WEIGHT * (bounded - previous)
    return smoothed, raw


def drifted(raw: float) -> bool:
    """A raw ratio beyond the correction's bounds: the profile no longer describes the replica."""
    return abs(raw - 1.0) > CORRECTION_BOUND
