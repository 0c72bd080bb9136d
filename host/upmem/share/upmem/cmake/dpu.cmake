# pimrl's stand-in for the UPMEM SDK's ${UPMEM_HOME}/share/upmem/cmake/dpu.cmake: the toolchain
# file of a CMake project whose targets are DPU programs
#
#   cmake -DCMAKE_TOOLCHAIN_FILE=${UPMEM_HOME}/share/upmem/cmake/dpu.cmake ...
#   add_executable(task task.c)     # a DPU program, for pimrl's simulator
#
# The C compiler is this tree's bin/dpu-upmem-dpurte-clang (pimrl's DPU compiler: the program
# becomes a host shared object that the simulator's dpu_load runs; docs/dpu-runtime.md). Not
# the SDK's: no sysroot (pimrl's DPU headers come with its compiler) and no assembler (DPU
# assembly cannot run in the simulator).

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR dpu)

get_filename_component(_pimrl_upmem_home "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT DEFINED UPMEM_HOME)
    set(UPMEM_HOME "${_pimrl_upmem_home}")
endif()

set(CMAKE_C_COMPILER "${_pimrl_upmem_home}/bin/dpu-upmem-dpurte-clang")
set(CMAKE_C_COMPILER_FORCED 1)
set(CMAKE_USER_MAKE_RULES_OVERRIDE_C "${CMAKE_CURRENT_LIST_DIR}/pimrl-dpu-rules.cmake")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
