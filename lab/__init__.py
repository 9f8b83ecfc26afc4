"""How good Steward's decisions are: scenario evals and trace benchmarks."""
