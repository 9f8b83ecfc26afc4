"""Capacity planning, pure: how much work a workload is offered, what it will be one model load
ahead, what one replica serves within the latency targets, and how many replicas that takes.

Everything here is a function of numbers (no cluster, no clock, no I/O), so assess and the rules
planner share one arithmetic and the tests can check it on its own:
- `forecast`: Holt's linear trend over irregular ticks, with the spread of its errors;
- `windows`: offered work over short, medium and long windows, and a high percentile of the short;
- `replica`: one replica's capacity from its profile (prefill rate, ITL(b) = a + b x batch),
  corrected online within bounds;
- `staffing`: Erlang-C / square-root staffing of request slots;
- `sizing`: the replicas the SLO needs, term by term, in plain words;
- `reactive`: what adds replicas at once, whatever the forecast said (an over-full batch too);
- `release`: when one replica fewer pays, and when to go to zero.
"""
