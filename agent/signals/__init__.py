"""What assess finds in an observation, below the loop and the planners that read it."""
