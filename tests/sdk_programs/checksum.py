"""checksum.c from Python: one buffer per DPU (bytes for some, bytearrays for others), the
launch, the per-tasklet sums read back into a list of bytearrays and as a symbol attribute."""
import random
import struct

from dpu import ALLOCATE_ALL, DpuError, DpuSet  # noqa: F401

NR_DPUS, NR_TASKLETS, BUFFER_SIZE = 6, 16, 1 << 16

rng = random.Random(11)
data = [bytes(rng.getrandbits(8) for _ in range(BUFFER_SIZE)) for _ in range(NR_DPUS)]
with DpuSet(nr_dpus=NR_DPUS, binary="./checksum") as dpus:
    assert len(dpus) == NR_DPUS and sum(len(rank) for rank in dpus.ranks()) == NR_DPUS
    dpus.copy("buffer", [d if i % 2 else bytearray(d) for i, d in enumerate(data)])
    dpus.exec()
    sums = [bytearray(4 * NR_TASKLETS) for _ in dpus]
    dpus.copy(sums, "checksums")
    for d, raw in enumerate(sums):
        got = sum(struct.unpack(f"<{NR_TASKLETS}I", raw)) & 0xFFFFFFFF
        assert got == sum(data[d]) & 0xFFFFFFFF, (d, got, sum(data[d]))
    per_dpu = dpus.checksums.uint32()                      # symbol attribute: every DPU
    assert [sum(s) & 0xFFFFFFFF for s in per_dpu] == [sum(d) & 0xFFFFFFFF for d in data]
    assert dpus.launches.uint32() == [1] * NR_DPUS
    for dpu in dpus:                                       # one DPU: one value
        assert dpu.launches.uint32() == 1
    dpus.launches = bytearray(struct.pack("<I", 40))       # symbol attribute: write all
    dpus.exec()
    assert dpus.launches.uint32() == [41] * NR_DPUS
    first = dpus.dpus()[0]
    one = bytearray(4)
    first.copy(one, "launches")
    assert struct.unpack("<I", one)[0] == 41
    try:
        dpus.copy("buffer", b"1234")                        # 4 bytes: not a multiple of 8
    except DpuError as exc:
        assert "multiple" in str(exc), exc
    else:
        raise AssertionError("an unaligned MRAM transfer was accepted")
    try:
        dpus.copy([b"x" * 4] * NR_DPUS, "launches")         # bytes cannot be written into
    except DpuError as exc:
        assert "read-only" in str(exc), exc
    else:
        raise AssertionError("a transfer into bytes was accepted")
print("OK")
