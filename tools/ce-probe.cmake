# SPDX-License-Identifier: BSD-3-Clause
# chorus-ce-probe: a prototype of copy-engine sends between two processes, measured beside the copy
# engine's own rate (docs/perf/gpu-2gpu.md, "Next" 0). Built only when nvcc is found; needs nothing
# of Chorus, and 2 GPUs with peer access to run.
if(CMAKE_CUDA_COMPILER)
  add_executable(chorus-ce-probe ${CMAKE_CURRENT_SOURCE_DIR}/gpu/ce_probe.cu ${CMAKE_CURRENT_SOURCE_DIR}/gpu/ce_probe_allreduce.cu)
  set_target_properties(chorus-ce-probe PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  target_include_directories(chorus-ce-probe PRIVATE ${CHORUS_INTERNAL_INCLUDE} ${CUDAToolkit_INCLUDE_DIRS}) # hostdev/ce_mailbox.h
  target_link_libraries(chorus-ce-probe PRIVATE ${CMAKE_DL_LIBS})
endif()
