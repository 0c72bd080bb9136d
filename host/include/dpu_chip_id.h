/* dpu_chip_id.h: DPU chip versions (pimrl's libdpu). */
#ifndef __DPU_CHIP_H
#define __DPU_CHIP_H

#define __MAYBE_UNUSED__ __attribute__((unused))

typedef enum _dpu_chip_id_e {
    vD = 0,
    vD_cas = 1,
    vD_fun = 2,
    vD_asic1 = 3,
    vD_asic8 = 4,
    vD_fpga1 = 5,
    vD_fpga8 = 6,
    vD_asic4 = 7,
    vD_fpga4 = 8,
    vD_fun_v1_4 = 66,
    vD_asic1_v1_4 = 67,
    vD_asic8_v1_4 = 68,
    vD_fpga1_v1_4 = 69,
    vD_fpga8_v1_4 = 70,
    vD_asic4_v1_4 = 71,
    vD_fpga4_v1_4 = 72,
} dpu_chip_id_e;

#define NEXT_DPU_CHIP_IDX 16

/** A dense index for a chip id: 0..8 for the first nine, 9..15 for the v1.4 ones, else
 *  NEXT_DPU_CHIP_IDX. */
__MAYBE_UNUSED__ static inline unsigned int chip_id_to_idx(dpu_chip_id_e chip_id)
{
    if ((unsigned)chip_id <= (unsigned)vD_fpga4)
        return (unsigned)chip_id;
    if ((unsigned)chip_id >= (unsigned)vD_fun_v1_4 && (unsigned)chip_id <= (unsigned)vD_fpga4_v1_4)
        return 9u + (unsigned)chip_id - (unsigned)vD_fun_v1_4;
    return NEXT_DPU_CHIP_IDX;
}

#endif /* __DPU_CHIP_H */
