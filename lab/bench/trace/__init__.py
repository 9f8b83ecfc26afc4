"""`steward bench trace`: real traces replayed under Steward and under today's autoscalers.

One module per controller family (static, keda, hpa, dynamo, rayserve, aibrix, steward), the load
(load.py), the referee (record.py, figures.py), one replay (replay.py), the training split's
choice of knobs (tuning.py, calibrate.py), the certified bound (bound.py), figures over seeds
(intervals.py, run.py), and the report (plots.py, report.py, docs.py).
"""
