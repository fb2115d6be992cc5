"""The reliability suite: real faults (Toxiproxy), server restarts, scale, bad input."""
