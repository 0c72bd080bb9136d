"""Import (and export) SwiftRL's plain-text datasets: one transition a line, ``s a r s'``.

Parsing is vectorised over the bytes of the file (numpy), so a million lines take well under
a second. Rules:

- lines are split on ``\\n``; ``\\r``, tabs and spaces are whitespace; everything from a
  ``#`` to the end of its line is a comment; blank (or comment-only) lines are skipped;
- every other line holds exactly four tokens: ``s``, ``a`` and ``s'`` are decimal integers
  (optional sign), ``r`` is an integer or a decimal float (``nan``/``inf`` are rejected);
- ``s``/``s'`` must lie in [0, S) and ``a`` in [0, A) of the environment, and the
  transition must be possible: some outcome of ``(s, a)`` with positive probability has
  that next state and that reward (within 1e-6);
- ``terminated`` comes from the first such outcome (in the env's order);
- line ``i`` *continues* into line ``i+1`` when it is not terminal and line ``i+1`` starts
  at its ``s'``; then ``next_action`` is line ``i+1``'s action. A non-terminal line whose
  successor starts elsewhere was cut: ``truncated = 1``. The last line has
  ``truncated = 0`` (nothing says its episode was cut). Every ``next_action`` not given by
  a continuing line (after a terminal, a cut, and on the last line) is imputed by a uniform
  draw over the actions from ``numpy.random.Generator(PCG64(seed))``:
  ``rng.integers(0, A, size=n_imputed)`` assigned in record order. The number imputed is
  stored in the dataset header (``n_imputed``).

A new episode that happens to start at the previous line's ``s'`` cannot be told apart from
a continuation; it is imported as one.

Errors raise ``SwiftRLFormatError`` (a ValueError) naming the file and the 1-based line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .records import MAX_ACTIONS, NO_ACTION, TRANSITION_DTYPE

_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 32]] = True
_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[48:58] = True
_SIGN = np.zeros(256, dtype=bool)
_SIGN[[43, 45]] = True
#: characters a float token may contain (digits, sign, point, exponent, nan/inf spelled out)
_FLOAT_CHARS = np.zeros(256, dtype=bool)
for _c in b"0123456789+-.eEnNaAiIfFtTyY":
    _FLOAT_CHARS[_c] = True
_MAX_INT_DIGITS = 10
_FIELD_NAMES = ("state", "action", "reward", "next state")
REWARD_TOL = 1e-6
#: Bytes of text read and tokenised at a time (bounds the per-byte temporaries).
_CHUNK_BYTES = 1 << 23
#: The longest line accepted (a data line is a few dozen bytes; comments may be longer). A
#: file with no line breaks (CR-only endings, binary data) fails here, in bounded memory.
MAX_LINE_BYTES = 1 << 16
#: Characters of an offending line quoted in an error message.
_EXCERPT = 60


class SwiftRLFormatError(ValueError):
    """A malformed or impossible line in a SwiftRL text file (``path``, ``line``)."""

    def __init__(self, path, line, message):
        self.path = str(path)
        self.line = line
        super().__init__(f"{self.path}:{line}: {message}")


def _env_of(env):
    if isinstance(env, str):
        from pimrl.envs import make

        return make(env)
    return env


def _token_text(b: np.ndarray, start: int, end: int) -> str:
    return _excerpt(bytes(b[start:min(end, start + 4 * _EXCERPT)]), end - start)


def _excerpt(raw: bytes, total: int | None = None) -> str:
    """Printable start of ``raw`` (at most _EXCERPT characters, '...' when cut)."""
    text = raw.decode("utf-8", errors="replace")
    text = "".join(c if c.isprintable() or c in "\t\r" else "?" for c in text[: _EXCERPT + 1])
    total = len(raw) if total is None else total
    if len(text) > _EXCERPT or total > len(raw):
        return text[:_EXCERPT] + "..."
    return text


def _line_problem(line: bytes) -> str:
    """A hint for a line that does not hold four fields."""
    if b"\r" in line.rstrip(b"\r"):
        return " (the file seems to end its lines with CR only: convert them to LF)"
    return ""


def _tokenize(raw: bytes, path, line_offset: int = 0):
    """Return (line numbers (n,), token starts (n, 4), token ends (n, 4), byte array).

    ``line_offset`` is the number of lines before ``raw`` in the file."""
    b = np.frombuffer(raw, dtype=np.uint8)
    if len(b) == 0 or b[-1] != 10:
        b = np.concatenate([b, np.array([10], dtype=np.uint8)])
    else:
        b = b.copy()
    nl = b == 10
    nl_pos = np.flatnonzero(nl)
    n_lines = len(nl_pos)
    line_of = np.cumsum(nl) - nl  # the newline belongs to its own line
    line_start = np.empty(n_lines, dtype=np.int64)
    line_start[0] = 0
    line_start[1:] = nl_pos[:-1] + 1
    hashes = b == 35
    if hashes.any():  # blank out comments: from a '#' to the end of its line
        ch = np.cumsum(hashes)
        before = ch[line_start] - hashes[line_start]
        in_comment = (ch - before[line_of]) > 0
        in_comment &= ~nl
        b[in_comment] = 32
    tok = ~_WS[b]
    prev = np.empty_like(tok)
    prev[0] = False
    prev[1:] = tok[:-1]
    nxt = np.empty_like(tok)
    nxt[-1] = False
    nxt[:-1] = tok[1:]
    starts = np.flatnonzero(tok & ~prev)
    ends = np.flatnonzero(tok & ~nxt) + 1
    per_line = np.bincount(line_of[starts], minlength=n_lines)
    bad = np.flatnonzero((per_line != 0) & (per_line != 4))
    if len(bad):
        ln = int(bad[0])
        line = bytes(b[line_start[ln]:nl_pos[ln]]).strip()
        raise SwiftRLFormatError(
            path, line_offset + ln + 1, f"expected 4 whitespace-separated fields (s a r s'), found "
            f"{int(per_line[ln])}: {_excerpt(line)!r}{_line_problem(line)}")
    data_lines = np.flatnonzero(per_line == 4)
    return data_lines + 1 + line_offset, starts.reshape(-1, 4), ends.reshape(-1, 4), b


def _pieces(f, path, size: int):
    """Read the open file ``f`` in pieces of about ``size`` bytes cut after a newline:
    (piece, lines before it). Refuses NUL bytes (not a text file) and lines longer than
    MAX_LINE_BYTES, so memory stays bounded whatever the file holds."""
    carry, lines_before = b"", 0
    while True:
        block = f.read(size)
        buf = carry + block
        _check_nul(buf, path, lines_before)
        if not block:
            if buf:
                _check_piece(buf, path, lines_before)
                yield buf, lines_before
            return
        end = buf.rfind(b"\n")
        piece, carry = buf[: end + 1], buf[end + 1 :]
        _check_piece(piece, path, lines_before)
        n_lines = piece.count(b"\n")
        if len(carry) > MAX_LINE_BYTES:
            raise SwiftRLFormatError(
                path, lines_before + n_lines + 1, f"line longer than {MAX_LINE_BYTES} bytes with "
                f"no line break (starts {_excerpt(carry)!r}){_line_problem(carry[:MAX_LINE_BYTES])}"
                "; not a SwiftRL text file?")
        if piece:
            yield piece, lines_before
        lines_before += n_lines


def _check_nul(buf: bytes, path, lines_before: int) -> None:
    nul = buf.find(b"\0")
    if nul >= 0:
        line = lines_before + buf.count(b"\n", 0, nul) + 1
        raise SwiftRLFormatError(path, line, "NUL byte in the text: a binary file, not a SwiftRL "
                                 "text file")


def _check_piece(piece: bytes, path, lines_before: int) -> None:
    """Refuse a line longer than MAX_LINE_BYTES in ``piece``."""
    b = np.frombuffer(piece, dtype=np.uint8)
    nl = np.flatnonzero(b == 10)
    bounds = np.concatenate([[-1], nl, [len(b)]])
    long = np.flatnonzero(np.diff(bounds) - 1 > MAX_LINE_BYTES)
    if len(long):
        i = int(long[0])
        start = int(bounds[i]) + 1
        line = piece[start : start + MAX_LINE_BYTES + 1]
        raise SwiftRLFormatError(path, lines_before + i + 1, f"line longer than {MAX_LINE_BYTES} "
                                 f"bytes (starts {_excerpt(line)!r}){_line_problem(line)}; not a "
                                 "SwiftRL text file?")


def _parse_text(f, path, chunk_bytes: int):
    """Read, tokenise and parse the open file ``f`` piece by piece: (line numbers, s, a, r, s')."""
    parts = []
    for piece, before in _pieces(f, path, chunk_bytes):
        lines, starts, ends, b = _tokenize(piece, path, before)
        del piece
        if len(lines) == 0:
            continue
        s = _parse_ints(b, starts[:, 0], ends[:, 0], lines, path, 0)
        a = _parse_ints(b, starts[:, 1], ends[:, 1], lines, path, 1)
        ns = _parse_ints(b, starts[:, 3], ends[:, 3], lines, path, 3)
        r = _parse_rewards(b, starts[:, 2], ends[:, 2], lines, path)
        parts.append((lines, s, a, r, ns))
    if not parts:
        return (np.zeros(0, np.int64),) * 3 + (np.zeros(0),) + (np.zeros(0, np.int64),)
    return tuple(np.concatenate(col) for col in zip(*parts))


def _parse_ints(b, starts, ends, lines, path, col):
    """Vectorised parse of decimal integer tokens (optional sign, <= 10 digits)."""
    n = len(starts)
    lengths = ends - starts
    has_sign = _SIGN[b[starts]]
    n_digits = lengths - has_sign
    # every token byte, with the index of its token
    tok_id = np.repeat(np.arange(n), lengths)
    pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    idx = np.repeat(starts, lengths) + pos
    ch = b[idx]
    is_sign_pos = (pos == 0) & has_sign[tok_id]
    ok_char = _DIGIT[ch] | is_sign_pos
    bad_tok = (np.bincount(tok_id, weights=~ok_char, minlength=n) > 0) | (n_digits < 1)
    if bad_tok.any():
        i = int(np.argmax(bad_tok))
        text = _token_text(b, starts[i], ends[i])
        raise SwiftRLFormatError(path, int(lines[i]), f"{_FIELD_NAMES[col]} {text!r} is not an "
                                 "integer")
    too_long = n_digits > _MAX_INT_DIGITS
    if too_long.any():
        i = int(np.argmax(too_long))
        raise SwiftRLFormatError(path, int(lines[i]), f"{_FIELD_NAMES[col]} "
                                 f"{_token_text(b, starts[i], ends[i])!r} is out of range")
    # digit value times its power of ten (position from the token's end)
    from_end = np.repeat(ends, lengths) - 1 - idx
    pow10 = 10 ** np.arange(_MAX_INT_DIGITS + 1, dtype=np.int64)
    contrib = np.where(is_sign_pos, 0, (ch.astype(np.int64) - 48) * pow10[np.minimum(from_end, _MAX_INT_DIGITS)])
    # float64 sums are exact here: every value is below 10^11 < 2^53
    vals = np.bincount(tok_id, weights=contrib, minlength=n).astype(np.int64)
    neg = has_sign & (b[starts] == 45)
    vals[neg] = -vals[neg]
    return vals


def _parse_rewards(b, starts, ends, lines, path):
    """Rewards: integer tokens fast (vectorised), others through numpy's float parser."""
    lengths = ends - starts
    tok_id = np.repeat(np.arange(len(starts)), lengths)
    pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    ch = b[np.repeat(starts, lengths) + pos]
    has_sign = _SIGN[b[starts]]
    nonint = np.bincount(tok_id, weights=~(_DIGIT[ch] | ((pos == 0) & has_sign[tok_id])),
                         minlength=len(starts)) > 0
    nonint |= (lengths - has_sign) < 1
    nonint |= (lengths - has_sign) > 15
    out = np.empty(len(starts), dtype=np.float64)
    ints = ~nonint
    if ints.any():
        out[ints] = _parse_ints(b, starts[ints], ends[ints], lines[ints], path, 2)
    if nonint.any():
        idx = np.flatnonzero(nonint)
        badc = np.bincount(tok_id, weights=~_FLOAT_CHARS[ch], minlength=len(starts)) > 0
        bad = badc[idx]
        if bad.any():
            i = int(idx[np.argmax(bad)])
            raise SwiftRLFormatError(path, int(lines[i]), f"reward "
                                     f"{_token_text(b, starts[i], ends[i])!r} is not a number")
        s, e = starts[idx], ends[idx]
        width = int((e - s).max())
        mat = np.zeros((len(idx), width), dtype=np.uint8)
        L = e - s
        rows = np.repeat(np.arange(len(idx)), L)
        cols = np.arange(int(L.sum())) - np.repeat(np.cumsum(L) - L, L)
        mat[rows, cols] = b[np.repeat(s, L) + cols]
        strings = mat.view(f"S{width}").ravel()
        try:
            vals = strings.astype(np.float64)
        except ValueError:
            for j, text in enumerate(strings):  # error path only: find the first offender
                try:
                    float(text)
                except ValueError:
                    i = int(idx[j])
                    raise SwiftRLFormatError(path, int(lines[i]), f"reward {_excerpt(text)!r}"
                                             " is not a number") from None
            raise
        out[idx] = vals
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.argmax(bad))
        raise SwiftRLFormatError(path, int(lines[i]), f"reward "
                                 f"{_token_text(b, starts[i], ends[i])!r} is not finite (NaN or "
                                 "infinite rewards are not allowed)")
    return out


def import_swiftrl(text_path, env, seed: int = 0, *, impute: bool = True,
                   return_stats: bool = False):
    """Read a SwiftRL text file into TRANSITION_DTYPE records for ``env``.

    ``env`` is a ``TabularEnv`` or a spec string. Returns the records, or
    ``(records, stats)`` with ``return_stats=True``; ``stats`` holds ``n_imputed`` (next
    actions drawn uniformly with ``seed``, see the module docstring), ``n_lines``,
    ``n_terminated``, ``n_truncated`` and ``env_id``. With ``impute=False`` unknown next
    actions are stored as NO_ACTION (255) instead and ``n_imputed`` is 0."""
    path = Path(text_path)
    env = _env_of(env)
    S, A = env.n_states, env.n_actions
    if A > MAX_ACTIONS:
        raise ValueError(f"{env.env_id}: {A} actions, a record holds at most {MAX_ACTIONS}")
    from pimrl.io import check_regular_input

    check_regular_input(path)
    with open(path, "rb") as f:
        lines, s, a, r, ns = _parse_text(f, path, _CHUNK_BYTES)
    n = len(lines)
    if n == 0:
        raise SwiftRLFormatError(path, 0, "no transitions (the file holds no data lines)")
    for col, vals, hi in ((0, s, S), (1, a, A), (3, ns, S)):
        bad = (vals < 0) | (vals >= hi)
        if bad.any():
            i = int(np.argmax(bad))
            what = "states" if col != 1 else "actions"
            raise SwiftRLFormatError(path, int(lines[i]), f"{_FIELD_NAMES[col]} {int(vals[i])} "
                                     f"is out of range: {env.env_id} has {hi} {what} "
                                     f"[0, {hi})")
    # which outcome of (s, a) produced (s', r)?
    out_ns = env.next_state[s, a]  # (n, K)
    out_r = env.reward[s, a]
    match = (out_ns == ns[:, None]) & (env.prob[s, a] > 0)
    match &= np.abs(out_r - r[:, None]) <= REWARD_TOL * np.maximum(1.0, np.abs(r[:, None]))
    possible = match.any(axis=1)
    if not possible.all():
        i = int(np.argmin(possible))
        raise SwiftRLFormatError(
            path, int(lines[i]), f"impossible transition in {env.env_id}: no outcome of "
            f"(state {int(s[i])}, action {int(a[i])}) reaches state {int(ns[i])} with reward "
            f"{r[i]:g}")
    k = np.argmax(match, axis=1)
    term = env.terminated[s, a, k]

    cont = np.zeros(n, dtype=bool)
    cont[:-1] = (~term[:-1]) & (s[1:] == ns[:-1])
    trunc = np.zeros(n, dtype=bool)
    trunc[:-1] = (~term[:-1]) & ~cont[:-1]

    rec = np.empty(n, dtype=TRANSITION_DTYPE)
    rec["state"] = s
    rec["next_state"] = ns
    rec["reward"] = r
    rec["action"] = a
    na = np.full(n, NO_ACTION, dtype=np.uint8)
    na[:-1][cont[:-1]] = a[1:][cont[:-1]]
    unknown = ~cont
    n_imputed = 0
    if impute:
        n_imputed = int(unknown.sum())
        rng = np.random.Generator(np.random.PCG64(int(seed)))
        na[unknown] = rng.integers(0, A, size=n_imputed)
    rec["next_action"] = na
    rec["terminated"] = term
    rec["truncated"] = trunc
    if not return_stats:
        return rec
    stats = dict(env_id=env.env_id, n_lines=n, n_imputed=n_imputed,
                 n_terminated=int(term.sum()), n_truncated=int(trunc.sum()),
                 n_continuing=int(cont.sum()))
    return rec, stats


def _format_ints(v: np.ndarray) -> np.ndarray:
    """Decimal text of int64 values as a (n, W) uint8 matrix, right-aligned, 0-padded."""
    v = np.asarray(v, dtype=np.int64)
    neg = v < 0
    mag = np.abs(v)
    W = 11
    digits = (mag[:, None] // (10 ** np.arange(W - 2, -1, -1, dtype=np.int64))[None, :]) % 10
    mat = (digits + 48).astype(np.uint8)
    nd = np.maximum(1, np.searchsorted(10 ** np.arange(W, dtype=np.int64), mag, side="right"))
    lead = (W - 1) - nd  # columns before the first digit (in the W-1 digit columns)
    col = np.arange(W - 1)[None, :]
    mat[col < lead[:, None]] = 0
    sign = np.zeros((len(v), 1), dtype=np.uint8)
    full = np.concatenate([sign, mat], axis=1)
    full[np.flatnonzero(neg), lead[neg]] = 45  # '-' just before the first digit
    return full


def _export_chunk(records: np.ndarray, integral: bool) -> bytes:
    n = len(records)
    r = records["reward"].astype(np.float64)
    space = np.full((n, 1), 32, dtype=np.uint8)
    newline = np.full((n, 1), 10, dtype=np.uint8)
    if integral:
        r_mat = _format_ints(r.astype(np.int64))
    else:
        text = np.char.mod("%.9g", r).astype("S")
        r_mat = text.view(np.uint8).reshape(n, -1)
    mat = np.concatenate([
        _format_ints(records["state"]), space, _format_ints(records["action"]), space,
        r_mat, space, _format_ints(records["next_state"]), newline], axis=1)
    flat = mat.ravel()
    return flat[flat != 0].tobytes()


def export_swiftrl(records: np.ndarray, text_path, chunk: int = 1 << 19) -> Path:
    """Write records as SwiftRL text lines ``s a r s'`` (vectorised, in chunks; rewards are
    written as integers when every reward is integral, else with 9 significant digits,
    which round-trips float32). The file is written atomically (``pimrl.io``)."""
    path = Path(text_path)
    records = np.asarray(records)
    if records.dtype != TRANSITION_DTYPE:
        raise ValueError(f"records have dtype {records.dtype}, expected TRANSITION_DTYPE")
    r = records["reward"]
    integral = bool(np.all(r == np.round(r)) and np.all(np.abs(r) < 1e9))
    from pimrl.io import atomic_writer

    with atomic_writer(path) as f:
        for start in range(0, len(records), chunk):
            f.write(_export_chunk(records[start : start + chunk], integral))
    return path
