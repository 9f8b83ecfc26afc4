"""The rules of the policy engine, one module per concern.

Each rule module exposes `check(...) -> list[Denial]` (or, for approvals, the rules that ask for
a human). `ledger` holds the shared arithmetic: what an action changes and the running totals of
a plan, so that plan-level effects (two scale-downs crossing a minimum together) are judged on
the state as the earlier actions of the plan leave it.
"""
