"""The SDK's Python API beyond the tutorials, on abi.c: rank allocation and iteration,
loading a program from its bytes, symbols as objects and attributes, offsets, per-DPU
logs, asynchronous runs, callbacks and errors."""
import io
import struct

from dpu import ALLOCATE_ALL, DpuError, DpuSet, DpuSymbol

try:
    DpuSet(nr_dpus=1, nr_ranks=1)
except DpuError as exc:
    assert "nr_dpus and nr_ranks" in str(exc)
else:
    raise AssertionError("nr_dpus and nr_ranks together were accepted")

with open("abi", "rb") as f:
    image = f.read()

with DpuSet(nr_ranks=2, profile="hardware=upmem-640") as dpus:
    assert len(dpus.ranks()) == 2 and len(dpus) == sum(len(r) for r in dpus.ranks()) == 128
    program = dpus.load(binary=image)                      # a program held in memory
    area = program.get_symbol("area")
    assert isinstance(area, DpuSymbol) and area.size() == 4096 and program.get_symbol("nothing") is None

    dpus.copy(area, bytes(range(8)) * 4, offset=64)        # a DpuSymbol and an offset
    back = [bytearray(32) for _ in dpus]
    dpus.copy(back, "area", offset=64)
    assert all(b == bytes(range(8)) * 4 for b in back)
    dpus.copy(back, "area", size=16, offset=0)             # size below the buffers' length
    assert all(b[:16] == bytes(16) and b[16:] == bytes(range(8)) * 2 for b in back)

    logs = [io.StringIO() for _ in dpus]
    dpus.exec(log=logs)
    assert all(log.getvalue().endswith("value 1\n") for log in logs)
    dpus.exec(async_mode=True)                             # returns at once; sync waits
    dpus.sync()
    assert dpus.value.uint32() == [2] * len(dpus)

    rank = dpus.ranks()[1]
    rank.value = bytearray(struct.pack("<I", 10))          # one rank only
    assert dpus.value.uint32()[:64] == [2] * 64 and dpus.value.uint32()[64:] == [10] * 64
    words = rank.words.uint64()
    assert len(words) == 64 and all(len(w) == 16 for w in words)

    seen = []
    dpus.call(lambda s, i, arg: arg.append((i, len(s))), seen)
    assert seen == [(0, 64), (1, 64)]
    try:
        dpus.call(lambda s, i, arg: None, None, is_blocking=False)
    except DpuError:
        pass
    else:
        raise AssertionError("a non-blocking synchronous callback was accepted")

    for bad in (lambda: dpus.copy("area", b"x" * 4096, offset=8),  # past the end
                lambda: dpus.copy([bytearray(8)] * 3, "area"),       # 3 buffers, 128 DPUs
                lambda: dpus.copy("value", "words"),                 # DPU to DPU
                lambda: dpus.load()):                                # nothing to load
        try:
            bad()
        except DpuError:
            pass
        else:
            raise AssertionError("accepted a bad transfer")
assert ALLOCATE_ALL == 0xFFFFFFFF
print("OK")
