# SPDX-License-Identifier: BSD-3-Clause
# chorus-gpu-ceiling: the GPU's copy rate and kernel launch floor, measured beside the collectives
# (docs/perf/gpu.md). Built only when nvcc is found; needs nothing of Chorus.
if(CMAKE_CUDA_COMPILER)
  add_executable(chorus-gpu-ceiling ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_ceiling.cu)
  set_target_properties(chorus-gpu-ceiling PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  target_link_libraries(chorus-gpu-ceiling PRIVATE ${CMAKE_DL_LIBS}) # the driver's pointer queries, as the core opens it
endif()
