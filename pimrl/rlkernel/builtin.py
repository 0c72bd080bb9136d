"""The SwiftRL kernel as the simulator's built-in program
``pimrl:swiftrl?states=S&actions=A[&tasklets=16&algo=q&dtype=fp32&sampling=seq&block=2048&visits=1]``,
which ``dpu_load`` resolves by the dotted name :data:`pimrl.pim.programs.BUILTINS` holds
(the simulator does not import this room)."""
from __future__ import annotations

from pimrl.learners.variants import ALGO, DTYPE, SAMPLING
from pimrl.pim.errors import fail
from pimrl.pim.programs import parse_options
from pimrl.rlkernel.program import RlProgram


def swiftrl_builtin(query: str, hardware) -> RlProgram:
    """The :class:`~pimrl.rlkernel.program.RlProgram` a ``pimrl:swiftrl?QUERY`` name asks for
    (bad names are ``DPU_ERR_ELF_INVALID_FILE``, as a bad program file)."""
    opts = parse_options("swiftrl", query, {"states": int, "actions": int, "tasklets": int,
                                            "algo": str, "dtype": str, "sampling": str,
                                            "block": int, "visits": int})
    for key in ("states", "actions"):
        if key not in opts:
            raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl needs {key}=N (the Q-table is "
                       "states x actions)")
    if opts["states"] < 1 or not 1 <= opts["actions"] <= 255:
        raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: states must be >= 1 and actions in "
                   f"[1, 255]; got states={opts['states']}, actions={opts['actions']}")
    choices = {axis.name: axis.names for axis in (ALGO, DTYPE, SAMPLING)}
    for key, allowed in choices.items():
        if key in opts and opts[key] not in allowed:
            raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: {key}={opts[key]!r}; use one of "
                       f"{', '.join(allowed)}")
    if opts.get("visits", 1) not in (0, 1):
        raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: visits={opts['visits']}; use 0 or 1")
    try:
        return RlProgram(opts["states"], opts["actions"], opts.get("tasklets", 16),
                         opts.get("algo", "q"), opts.get("dtype", "fp32"),
                         opts.get("sampling", "seq"), opts.get("block", 2048), hardware,
                         count_visits=bool(opts.get("visits", 1)))
    except ValueError as exc:
        raise fail("ELF_INVALID_FILE", f"pimrl:swiftrl: {exc}") from None
