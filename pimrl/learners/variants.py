"""The kernel variant registry: the one place that says which variants exist, what they are
called, which integer codes the compiled kernels use for them, and how the kernel's
parameter words are laid out.

A variant is one choice on each axis: algorithm x dtype x sampling order x SARSA's next
action. Every backend takes its variants from here: the reference learner and the CPU
baseline (:mod:`pimrl.learners.kernels`, one compiled loop per variant), the simulator's
numba DPU kernel (``pimrl.rlkernel.launch``), the GPU baseline, the UPMEM C kernel (its ``-D``
flags: :meth:`Variant.c_defines`) and ``host/app.c`` (through ``kernels/swiftrl_variants.h``,
generated from :func:`c_header` by ``python -m pimrl.rlkernel.cprogram --write-header``; a
test keeps it current).

Adding a choice to an axis (a third algorithm, say) adds one :class:`Choice` here; the
compiled kernels then need the arithmetic of the new choice and nothing else needs editing
to learn its name or code.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product


@dataclass(frozen=True)
class Choice:
    """One option of an axis: its name (as users write it), code (as kernels see it) and a
    one-line description."""

    name: str
    code: int
    description: str
    c_name: str          # the C header's macro for the code


@dataclass(frozen=True)
class Axis:
    """One dimension of the variant space."""

    name: str
    description: str
    c_macro: str         # the C kernel's -D flag for this axis ("": a launch parameter)
    choices: tuple

    @property
    def names(self) -> tuple:
        return tuple(c.name for c in self.choices)

    def code(self, name: str) -> int:
        return self.choice(name).code

    def choice(self, name: str) -> Choice:
        for c in self.choices:
            if c.name == name:
                return c
        raise ValueError(f"{self.name} must be one of {', '.join(self.names)}; got {name!r}")


ALGO = Axis("algo", "learning rule", "SWIFTRL_ALGO", (
    Choice("q", 0, "Q-learning: bootstraps from max_a' Q[s', a']", "SWIFTRL_ALGO_Q"),
    Choice("sarsa", 1, "SARSA: bootstraps from Q[s', b'], b' the next action", "SWIFTRL_ALGO_SARSA"),
))
DTYPE = Axis("dtype", "arithmetic of the Q-table", "SWIFTRL_DTYPE", (
    Choice("fp32", 0, "IEEE float32, no fused multiply-add", "SWIFTRL_FP32"),
    Choice("int32", 1, "saturating Q-format fixed point (F fractional bits)", "SWIFTRL_INT32"),
))
SAMPLING = Axis("sampling", "order in which a lane visits its records", "SWIFTRL_SAMPLING", (
    Choice("seq", 0, "sequential: start, start+1, ...", "SWIFTRL_SEQ"),
    Choice("str", 1, "strided: offsets 0..k-1 in turn, each in steps of k", "SWIFTRL_STR"),
    Choice("ran", 2, "random: n draws with replacement from the lane's xorshift32 stream", "SWIFTRL_RAN"),
))
NEXT_ACTION = Axis("next_action", "SARSA's next action b'", "", (
    Choice("logged", 0, "the behaviour policy's action stored in the record", "SWIFTRL_NEXT_LOGGED"),
    Choice("epsilon-greedy", 1, "drawn epsilon-greedily from Q[s'] with the lane's stream",
           "SWIFTRL_NEXT_EPSILON_GREEDY"),
))
BOOTSTRAP = Axis("bootstrap", "where a non-terminal update reads the value of s'", "SWIFTRL_BOOTSTRAP", (
    Choice("table", 0, "the DPU's own table, every state", "SWIFTRL_BOOTSTRAP_TABLE"),
    Choice("owned", 1, "own rows for the s' it alone holds, else the broadcast V[s'] "
           "(state-owned learning, --aggregate own:R; SARSA bootstraps from the expected "
           "value of its target policy, drawing nothing)", "SWIFTRL_BOOTSTRAP_OWNED"),
))
TASKLET_MODE = Axis("tasklet_mode", "how a DPU's tasklets share its Q-table (docs/design.md)",
                    "SWIFTRL_TASKLET_MODE", (
    Choice("ring", 0, "one tasklet at a time: a token passed round the tasklets applies the "
           "updates round-robin on one table (1/11 of the pipeline)", "SWIFTRL_MODE_RING"),
    Choice("rows", 1, "every tasklet at once: each writes the rows of the states the host gives "
           "it (a heavy state's entries may be spread), bootstrapping from a snapshot taken "
           "each epoch for its siblings' states (deterministic)", "SWIFTRL_MODE_ROWS"),
    Choice("unlocked", 2, "every tasklet at once on one table with no lock, SwiftRL's scheme: "
           "pimrl computes the ring's table, prices the full pipeline and counts the "
           "conflicts where hardware could lose an update", "SWIFTRL_MODE_UNLOCKED"),
))
AXES = (ALGO, DTYPE, SAMPLING, NEXT_ACTION, BOOTSTRAP, TASKLET_MODE)

ALGOS, DTYPES, SAMPLINGS, NEXT_ACTIONS, BOOTSTRAPS, TASKLET_MODES = (a.names for a in AXES)
#: The tasklet mode pimrl uses when none is named (docs/design.md says why).
DEFAULT_TASKLET_MODE = "rows"


@dataclass(frozen=True)
class Variant:
    """One compiled kernel: a choice on every axis. Q-learning ignores ``next_action`` (it is
    normalised to ``logged`` so equal kernels compare equal). Under the ``owned`` bootstrap
    SARSA draws nothing: ``next_action`` chooses the target policy whose expected value it
    bootstraps from (docs/state-owned.md)."""

    algo: str = "q"
    dtype: str = "fp32"
    sampling: str = "seq"
    next_action: str = "logged"
    bootstrap: str = "table"
    tasklet_mode: str = "ring"

    def __post_init__(self):
        for axis in AXES:
            axis.choice(getattr(self, axis.name))
        if self.algo != "sarsa" and self.next_action != "logged":
            object.__setattr__(self, "next_action", "logged")

    @classmethod
    def of(cls, params) -> "Variant":
        """The variant a :class:`~pimrl.learners.params.LearnerParams` (or any object with
        these attributes) asks for."""
        return cls(params.algo, params.dtype, params.sampling, params.next_action,
                   getattr(params, "bootstrap", "table"), getattr(params, "tasklet_mode", "ring"))

    @property
    def name(self) -> str:
        """``algo-dtype-sampling`` (the twelve names the study uses; SARSA's next action is a
        separate setting)."""
        return f"{self.algo}-{self.dtype}-{self.sampling}"

    @property
    def key(self) -> str:
        """A name that tells every axis apart (``sarsa-fp32-seq+epsilon-greedy@owned/rows``;
        the ring, the default of the contract, is left out)."""
        return (self.name + (f"+{self.next_action}" if self.epsilon_greedy else "")
                + ("@owned" if self.owned else "")
                + (f"/{self.tasklet_mode}" if self.tasklet_mode != "ring" else ""))

    @property
    def rows(self) -> bool:
        """Tasklets own state ranges and run at once (tasklet mode ``rows``)."""
        return self.tasklet_mode == "rows"

    @property
    def parallel(self) -> bool:
        """Tasklets run at once (the pipeline fills), in ``rows`` or ``unlocked`` mode."""
        return self.tasklet_mode != "ring"

    @property
    def snapshot_rows(self) -> bool:
        """Under ``rows`` the snapshot holds whole rows (table-bootstrap SARSA reads Q[s', b']),
        else one value per state (the bootstrap value: Q-learning's max, owned SARSA's policy
        value)."""
        return self.rows and self.algo == "sarsa" and not self.owned

    @property
    def owned(self) -> bool:
        """Bootstraps from a broadcast value vector for states other DPUs own."""
        return self.bootstrap == "owned"

    @property
    def is_int(self) -> bool:
        return self.dtype == "int32"

    @property
    def epsilon_greedy(self) -> bool:
        """SARSA whose target policy is epsilon-greedy (drawn, or its expected value when
        ``owned``)."""
        return self.algo == "sarsa" and self.next_action == "epsilon-greedy"

    @property
    def draws_next_action(self) -> bool:
        return self.epsilon_greedy and not self.owned

    @property
    def uses_rng(self) -> bool:
        return self.sampling == "ran" or self.draws_next_action

    def codes(self) -> dict:
        """{axis name: integer code}."""
        return {axis.name: axis.code(getattr(self, axis.name)) for axis in AXES}

    def c_defines(self) -> dict:
        """The C kernel's ``-D`` flags for this variant."""
        return {axis.c_macro: axis.code(getattr(self, axis.name)) for axis in AXES if axis.c_macro}


#: The twelve algorithm x dtype x sampling names, Q-learning first, then SARSA; FP32 before
#: INT32; SEQ, STR, RAN.
ALL_VARIANTS = tuple(f"{a}-{d}-{s}" for a, d, s in product(ALGOS, DTYPES, SAMPLINGS))


def all_variants(next_action: str = "logged") -> tuple:
    """Every :class:`Variant` of :data:`ALL_VARIANTS`, SARSA with ``next_action``."""
    return tuple(get_variant(n, next_action) for n in ALL_VARIANTS)


def parse_variant(name: str) -> dict:
    """``"sarsa-int32-ran"`` -> ``{"algo": "sarsa", "dtype": "int32", "sampling": "ran"}``
    (the :class:`~pimrl.learners.params.LearnerParams` fields a variant name sets)."""
    parts = str(name).strip().lower().split("-")
    if len(parts) != 3 or parts[0] not in ALGOS or parts[1] not in DTYPES or parts[2] not in SAMPLINGS:
        raise ValueError(f"unknown variant {name!r}; expected algo-dtype-sampling with algo in "
                         f"{ALGOS}, dtype in {DTYPES}, sampling in {SAMPLINGS} (e.g. q-fp32-seq)")
    return {"algo": parts[0], "dtype": parts[1], "sampling": parts[2]}


def get_variant(name: str, next_action: str = "logged") -> Variant:
    """``"sarsa-int32-ran"`` (or its :attr:`Variant.key`, ``...+epsilon-greedy@owned/rows``)
    -> Variant."""
    text = str(name).strip().lower()
    bootstrap, mode = "table", "ring"
    if "/" in text:
        text, mode = text.split("/", 1)
    if "@" in text:
        text, bootstrap = text.split("@", 1)
    if "+" in text:
        text, next_action = text.split("+", 1)
    return Variant(**parse_variant(text), next_action=next_action, bootstrap=bootstrap,
                   tasklet_mode=mode)


def variant_name(algo: str, dtype: str, sampling: str) -> str:
    return f"{algo}-{dtype}-{sampling}"


def expand_variants(spec) -> list:
    """``"all"`` or a list of names (each validated) -> names in the order given, no repeats."""
    if spec in (None, "all"):
        return list(ALL_VARIANTS)
    if isinstance(spec, str):
        spec = [spec]
    out = []
    for v in spec:
        names = ALL_VARIANTS if v == "all" else (variant_name(**parse_variant(v)),)
        out.extend(n for n in names if n not in out)
    return out


# --- the kernel's parameter words -------------------------------------------------------

#: The int64 words of a kernel's ``params`` (the WRAM symbol of the DPU programs, and the
#: scalars every compiled loop takes), in order; ``PARAMS_WORDS`` words in all, the rest
#: reserved. Built by ``LearnerParams.kernel_scalars()`` (all but ``HOST_FIELDS``, which the
#: host sets per DPU).
PARAM_FIELDS = (
    ("algo", "ALGO axis code"),
    ("dtype", "DTYPE axis code"),
    ("sampling", "SAMPLING axis code"),
    ("stride", "STR's stride k"),
    ("epochs", "epochs of this launch"),
    ("sarsa_draw", "NEXT_ACTION axis code (1: SARSA draws b' epsilon-greedily)"),
    ("eps_threshold", "floor(epsilon * 2^32)"),
    ("frac_bits", "F, the Q format's fractional bits"),
    ("alpha_f32_bits", "alpha as float32 bits"),
    ("gamma_f32_bits", "gamma as float32 bits"),
    ("alpha_fx", "alpha in Q format"),
    ("gamma_fx", "gamma in Q format"),
    ("n_records", "this DPU's transitions, at the start of its MRAM heap"),
    ("own_lo", "first state this DPU owns (bootstrap owned)"),
    ("own_hi", "one past the last state this DPU owns (bootstrap owned)"),
    ("own_shared", "bit 0: state own_lo, bit 1: state own_hi - 1 is shared with another DPU "
                   "(bootstraps from the broadcast V, not the DPU's partial row)"),
    ("policy_max_f32_bits", "owned epsilon-greedy SARSA: the weight 1 - p of max_a Q[s', a] in "
                            "V(s'), float32 bits"),
    ("policy_max_fx", "owned epsilon-greedy SARSA: the same weight in Q format"),
    ("policy_mean_f32_bits", "owned epsilon-greedy SARSA: the weight p / A of sum_a Q[s', a] in "
                             "V(s'), float32 bits"),
    ("policy_mean_fx", "owned epsilon-greedy SARSA: the same weight in Q format"),
    ("tasklet_mode", "TASKLET_MODE axis code"),
    ("epoch_continues", "1: this launch goes on with the epoch of the launch before it (a later "
                        "window of the records, docs/design.md): no snapshot; 0: every epoch "
                        "starts here"),
)
PARAMS_WORDS = 24
#: Words the host sets per DPU; the rest are the learner's scalars.
HOST_FIELDS = ("n_records", "own_lo", "own_hi", "own_shared", "policy_max_f32_bits",
               "policy_max_fx", "policy_mean_f32_bits", "policy_mean_fx", "epoch_continues")
KERNEL_SCALARS = tuple(name for name, _ in PARAM_FIELDS if name not in HOST_FIELDS)
P_ALGO, P_DTYPE, P_SAMPLING, P_STRIDE, P_EPOCHS, P_SARSA_DRAW, P_EPS, P_FRAC, P_ALPHA32, \
    P_GAMMA32, P_ALPHA_FX, P_GAMMA_FX, P_N_RECORDS, P_OWN_LO, P_OWN_HI, P_OWN_SHARED, \
    P_POLICY_MAX32, P_POLICY_MAX_FX, P_POLICY_MEAN32, P_POLICY_MEAN_FX, \
    P_TASKLET_MODE, P_EPOCH_CONTINUES = range(len(PARAM_FIELDS))
assert len(PARAM_FIELDS) <= PARAMS_WORDS


# --- the C header -------------------------------------------------------------------------

HEADER = "swiftrl_variants.h"


def c_header() -> str:
    """The text of ``kernels/swiftrl_variants.h``: the codes and parameter word indices."""
    lines = [
        "/* swiftrl_variants.h: the SwiftRL kernels' variant codes and parameter words.",
        " * Generated from pimrl/learners/variants.py (python -m pimrl.rlkernel.cprogram --write-header);",
        " * do not edit: a test checks that it matches. Plain C99. */",
        "#ifndef SWIFTRL_VARIANTS_H",
        "#define SWIFTRL_VARIANTS_H",
        "",
    ]
    for axis in AXES:
        how = f"-D{axis.c_macro}=code" if axis.c_macro else "a launch parameter, params.sarsa_draw"
        lines.append(f"/* {axis.name}: {axis.description} ({how}) */")
        for c in axis.choices:
            lines.append(f"#define {c.c_name} {c.code} /* {c.name}: {c.description} */")
        names = ", ".join(f'"{c.name}"' for c in sorted(axis.choices, key=lambda c: c.code))
        lines.append(f"#define SWIFTRL_{axis.name.upper()}_NAMES {names} /* by code */")
        lines.append(f"#define SWIFTRL_N_{axis.name.upper()}S {len(axis.choices)}")
        lines.append("")
    lines.append(f"#define SWIFTRL_PARAMS_WORDS {PARAMS_WORDS}")
    lines.append("/* The word index of each field of the WRAM symbol \"params\". */")
    lines.append("enum swiftrl_param_index {")
    for i, (name, what) in enumerate(PARAM_FIELDS):
        lines.append(f"    SWIFTRL_P_{_c_field(name)} = {i}, /* {what} */")
    lines.append("};")
    lines.append("")
    lines.append("#endif /* SWIFTRL_VARIANTS_H */")
    return "\n".join(lines) + "\n"


def _c_field(name: str) -> str:
    return {"eps_threshold": "EPS", "frac_bits": "FRAC", "alpha_f32_bits": "ALPHA32",
            "gamma_f32_bits": "GAMMA32", "policy_max_f32_bits": "POLICY_MAX32",
            "policy_mean_f32_bits": "POLICY_MEAN32"}.get(name, name.upper())


# --- online kernels: environments stepped on the DPU (pimrl.online) -------------------------
# An online kernel has no dataset and so no sampling order or logged next action: its
# variants are the algorithm (Q-learning, or on-policy SARSA whose next action is the one
# the lane then takes) and the dtype, with the codes of ALGO and DTYPE. The epsilon schedule
# (constant or linearly decaying) is a launch parameter.

@dataclass(frozen=True)
class OnlineVariant:
    """One compiled online kernel: ``algo`` (q | sarsa) x ``dtype`` (fp32 | int32)."""

    algo: str = "q"
    dtype: str = "fp32"

    def __post_init__(self):
        ALGO.choice(self.algo)
        DTYPE.choice(self.dtype)

    @property
    def name(self) -> str:
        return f"online-{self.algo}-{self.dtype}"

    @property
    def is_int(self) -> bool:
        return self.dtype == "int32"

    def codes(self) -> dict:
        return {"algo": ALGO.code(self.algo), "dtype": DTYPE.code(self.dtype)}

    def c_defines(self) -> dict:
        return {ALGO.c_macro: ALGO.code(self.algo), DTYPE.c_macro: DTYPE.code(self.dtype)}


#: Every online variant: Q-learning first, FP32 before INT32.
ONLINE_VARIANTS = tuple(OnlineVariant(a, d) for a, d in product(ALGOS, DTYPES))


def get_online_variant(name: str) -> OnlineVariant:
    """``"online-sarsa-int32"`` or ``"sarsa-int32"`` -> OnlineVariant."""
    text = str(name).strip().lower().removeprefix("online-")
    for v in ONLINE_VARIANTS:
        if v.name == "online-" + text:
            return v
    raise ValueError(f"unknown online variant {name!r}; expected one of "
                     f"{', '.join(v.name for v in ONLINE_VARIANTS)}")


#: The int64 words of an online kernel's ``params`` (WRAM symbol), in order.
ONLINE_PARAM_FIELDS = (
    ("algo", "ALGO axis code"),
    ("dtype", "DTYPE axis code"),
    ("eps_start", "floor(epsilon_start * 2^32): the threshold at a lane's step 0"),
    ("eps_end", "floor(epsilon_end * 2^32): the threshold from step eps_decay_steps on"),
    ("eps_decay_steps", "steps of the linear decay (0: constant epsilon_start)"),
    ("frac_bits", "F, the Q format's fractional bits"),
    ("alpha_f32_bits", "alpha as float32 bits"),
    ("gamma_f32_bits", "gamma as float32 bits"),
    ("alpha_fx", "alpha in Q format"),
    ("gamma_fx", "gamma in Q format"),
    ("max_episode_steps", "truncation limit of an episode"),
    ("n_start", "entries of the start table"),
    ("steps", "environment steps of this DPU in this launch (split over its lanes)"),
)
ONLINE_PARAMS_WORDS = 16
OP_ALGO, OP_DTYPE, OP_EPS_START, OP_EPS_END, OP_EPS_DECAY, OP_FRAC, OP_ALPHA32, OP_GAMMA32, \
    OP_ALPHA_FX, OP_GAMMA_FX, OP_MAX_STEPS, OP_N_START, OP_STEPS = range(len(ONLINE_PARAM_FIELDS))
assert len(ONLINE_PARAM_FIELDS) <= ONLINE_PARAMS_WORDS
#: The int64 work counters of an online launch, per DPU (WRAM symbol ``stats``), in order.
ONLINE_COUNTERS = ("steps", "terminal_steps", "episodes", "resets", "start_scans",
                   "outcome_scans", "row_reads", "entry_reads", "rng_draws", "below_draws",
                   "saturations", "fault")
ONLINE_HEADER = "online_params.h"


def online_c_header() -> str:
    """The text of ``kernels/online_params.h``: the online kernel's parameter word indices."""
    lines = [
        "/* online_params.h: the online kernel's parameter words (kernels/online.c).",
        " * Generated from pimrl/learners/variants.py (python -m pimrl.online.cprogram --write-header);",
        " * do not edit: a test checks that it matches. Plain C99. */",
        "#ifndef ONLINE_PARAMS_H",
        "#define ONLINE_PARAMS_H",
        "",
        f"#define ONLINE_PARAMS_WORDS {ONLINE_PARAMS_WORDS}",
        "enum online_param_index {",
    ]
    for i, (name, what) in enumerate(ONLINE_PARAM_FIELDS):
        lines.append(f"    ONLINE_P_{name.upper()} = {i}, /* {what} */")
    lines += ["};", "", "/* The work counters of WRAM symbol \"stats\" (int64 each). */",
              "enum online_counter {"]
    for i, name in enumerate(ONLINE_COUNTERS):
        lines.append(f"    ONLINE_C_{name.upper()} = {i},")
    lines += [f"    ONLINE_N_COUNTERS = {len(ONLINE_COUNTERS)}", "};", "",
              "#endif /* ONLINE_PARAMS_H */"]
    return "\n".join(lines) + "\n"
