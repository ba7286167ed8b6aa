"""Stand-in for cleanrl_utils (the benchmark's cleanrl programs): only buffers.ReplayBuffer."""
