# Loaded by pimrl's dpu.cmake (CMAKE_USER_MAKE_RULES_OVERRIDE_C): objects are named .o, not
# the .obj of CMake's Generic platform, since pimrl's DPU compiler links .o files.
set(CMAKE_C_OUTPUT_EXTENSION .o)
