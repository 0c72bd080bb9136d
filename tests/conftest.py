import os

# Two numba threads everywhere, so thread-count tests run the same on any machine.
os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import numpy as np
import pytest

from pimrl.data.records import TRANSITION_DTYPE


def random_records(n, n_states, n_actions, seed=0, p_terminal=0.1, reward_range=(-3, 5)):
    """Synthetic transitions covering every field (not from an environment)."""
    rs = np.random.default_rng(seed)
    rec = np.zeros(n, TRANSITION_DTYPE)
    rec["state"] = rs.integers(0, n_states, n)
    rec["next_state"] = rs.integers(0, n_states, n)
    rec["action"] = rs.integers(0, n_actions, n)
    rec["next_action"] = rs.integers(0, n_actions, n)
    rec["reward"] = rs.integers(reward_range[0], reward_range[1], n)
    rec["terminated"] = rs.random(n) < p_terminal
    return rec


@pytest.fixture
def records_small():
    return random_records(1237, 11, 4, seed=7)


def cli_parsers(parser=None, prefix="pimrl"):
    """(command name, parser) of every ``pimrl`` command and sub-command."""
    import argparse

    from pimrl.cli import build_parser

    parser = parser or build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}", sub
                yield from cli_parsers(sub, f"{prefix} {name}")
