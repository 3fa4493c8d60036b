# SPDX-License-Identifier: BSD-3-Clause
# chorus-vmm-probe: cuMemCreate memory shared between two processes by file descriptor, the driver's
# answers and every byte checked (docs/perf/gpu-2gpu.md, "Next" 00y). Built only when nvcc is found;
# needs nothing of Chorus but device/memory/fd_pass.c.
if(CMAKE_CUDA_COMPILER)
  add_executable(chorus-vmm-probe ${CMAKE_CURRENT_SOURCE_DIR}/gpu/vmm_probe.cu ${CMAKE_SOURCE_DIR}/device/memory/fd_pass.c)
  set_target_properties(chorus-vmm-probe PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  target_include_directories(chorus-vmm-probe PRIVATE ${CMAKE_SOURCE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(chorus-vmm-probe PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
endif()
