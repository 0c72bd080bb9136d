# pimrl's stand-in for the UPMEM SDK's ${UPMEM_HOME}/share/upmem/cmake/include/host/DpuHost.cmake.
#
#   include(${UPMEM_HOME}/share/upmem/cmake/include/host/DpuHost.cmake)
#   link_directories(${DPU_HOST_LINK_DIRECTORIES})
#   target_include_directories(app PUBLIC ${DPU_HOST_INCLUDE_DIRECTORIES})
#   target_link_libraries(app ${DPU_HOST_LIBRARIES})
#
# Sets the variables SDK projects read, pointing at pimrl's dpu.h (host/include) and its
# libdpu.so, the SDK host API served by the simulator (docs/real-hardware.md, "Building SDK
# projects"):
#   DPU_HOST_INCLUDE_DIRECTORIES  the folder of dpu.h
#   DPU_HOST_LINK_DIRECTORIES     the folder of libdpu.so (built here on first use, as
#                                 `dpu-pkg-config --libs dpu` does)
#   DPU_HOST_LIBRARIES            libdpu.so by its full path (a target linked with it finds it
#                                 at run time through the build RPATH)
# and UPMEM_HOME when the project has not. It also adds the library's folder to the link
# directories and to CMAKE_BUILD_RPATH and CMAKE_INSTALL_RPATH of the including scope, so a
# project that links plain `dpu` (as with the SDK's library in /usr/lib) builds and runs too.
# Every value comes from this tree's bin/dpu-pkg-config (PIMRL_SHIM_BUILD_DIR, PIMRL_PYTHON
# apply as there). Safe to include more than once (each include sets the variables in its
# own scope; dpu-pkg-config runs once per configure).

get_filename_component(_pimrl_upmem_home "${CMAKE_CURRENT_LIST_DIR}/../../../../.." ABSOLUTE)
if(NOT DEFINED UPMEM_HOME)
    set(UPMEM_HOME "${_pimrl_upmem_home}")
endif()

get_property(_pimrl_dpu_host GLOBAL PROPERTY PIMRL_DPU_HOST)
if(NOT _pimrl_dpu_host)
    set(_pimrl_pkg_config "${_pimrl_upmem_home}/bin/dpu-pkg-config")
    foreach(_pimrl_var includedir libdir)
        execute_process(
            COMMAND "${_pimrl_pkg_config}" "--variable=${_pimrl_var}" dpu
            OUTPUT_VARIABLE _pimrl_out
            ERROR_VARIABLE _pimrl_err
            RESULT_VARIABLE _pimrl_rc
            OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(NOT _pimrl_rc EQUAL 0 OR _pimrl_out STREQUAL "")
            message(FATAL_ERROR "DpuHost.cmake (pimrl): ${_pimrl_pkg_config} "
                    "--variable=${_pimrl_var} dpu failed (${_pimrl_rc}):\n${_pimrl_err}")
        endif()
        set(_pimrl_${_pimrl_var} "${_pimrl_out}")
    endforeach()
    if(NOT EXISTS "${_pimrl_libdir}/libdpu.so")
        message(FATAL_ERROR "DpuHost.cmake (pimrl): no libdpu.so in ${_pimrl_libdir}")
    endif()
    set_property(GLOBAL PROPERTY PIMRL_DPU_HOST "${_pimrl_includedir}|${_pimrl_libdir}")
    message(STATUS "DPU host API: pimrl simulator (dpu.h in ${_pimrl_includedir}, "
            "libdpu.so in ${_pimrl_libdir})")
else()
    string(REPLACE "|" ";" _pimrl_dpu_host "${_pimrl_dpu_host}")
    list(GET _pimrl_dpu_host 0 _pimrl_includedir)
    list(GET _pimrl_dpu_host 1 _pimrl_libdir)
endif()

set(DPU_HOST_INCLUDE_DIRECTORIES "${_pimrl_includedir}")
set(DPU_HOST_LINK_DIRECTORIES "${_pimrl_libdir}")
set(DPU_HOST_LIBRARIES "${_pimrl_libdir}/libdpu.so")
link_directories("${_pimrl_libdir}")
list(APPEND CMAKE_BUILD_RPATH "${_pimrl_libdir}")
list(APPEND CMAKE_INSTALL_RPATH "${_pimrl_libdir}")
