"""pimrl: tabular Q-learning and SARSA on simulated UPMEM processing-in-memory systems."""

__version__ = "0.1.0"
