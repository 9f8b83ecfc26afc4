"""The agent's side of the mode-rotation saga: under the policy, in the decision log."""
