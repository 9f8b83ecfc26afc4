"""The decision loop: the graph and its nodes, the decision state, execute."""
