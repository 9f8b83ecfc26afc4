"""`steward bench trace`: real traces replayed under Steward and under today's autoscalers.

One module per controller family (static and oracle, keda, hpa, dynamo, rayserve, aibrix,
steward), the load (load.py), the referee (record.py, figures.py), one replay (replay.py), the
grid and the choice at equal SLO (tuning.py), and the report (plots.py, report.py).
"""
