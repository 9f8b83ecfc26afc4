"""The simulator behind the embedded cluster (lab.sim.backend.SimCluster).

Split by noun: profiles (what hardware and workloads exist), demand (arrivals), serving (how a
replica turns requests into tokens), faults, lifecycle and placement (replicas and where they
go), metrics (scrapes and series), engine (one tick), snapshot (the frozen ClusterState, built
with structural sharing), scenario (YAML files), clock, state and store (persistence).
"""
