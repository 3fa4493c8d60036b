# SPDX-License-Identifier: BSD-3-Clause
# chorus-perf: nccl-tests-style benchmark. Uses nccl.h only and links the shared library by its
# SONAME (libnccl.so.2), so the same binary also runs on NVIDIA's NCCL (switch with LD_LIBRARY_PATH).
# Our include directory comes first: never NVIDIA's nccl.h from a CUDA include path.
set(CHORUS_PERF_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/chorus-perf.c
  ${CMAKE_CURRENT_SOURCE_DIR}/launch.c
  ${CMAKE_CURRENT_SOURCE_DIR}/args.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/options.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/colls.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/data.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/register.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/iter_times.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/report.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/calibrate.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/numeric.c
  ${CMAKE_CURRENT_SOURCE_DIR}/perf/parallel.c)
add_executable(chorus-perf ${CHORUS_PERF_SOURCES})
target_include_directories(chorus-perf BEFORE PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_CURRENT_SOURCE_DIR}
  ${CMAKE_CURRENT_SOURCE_DIR}/perf)
# --calibrate shares the cost model's formulas (core/plan/cost_model.h, inline functions only).
target_include_directories(chorus-perf PRIVATE ${CMAKE_SOURCE_DIR}/core)
# -M vmm lays its buffers out as PyTorch's expandable segments with the GPU tests' helper
# (device/memory/vmm_layout.h, header only).
target_include_directories(chorus-perf PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(chorus-perf PRIVATE chorus m ${CMAKE_DL_LIBS} Threads::Threads)
file(RELATIVE_PATH CHORUS_BIN_TO_LIB ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set_target_properties(chorus-perf PROPERTIES
  BUILD_RPATH "${CMAKE_BINARY_DIR}/lib"
  INSTALL_RPATH "\$ORIGIN/${CHORUS_BIN_TO_LIB}")
# A CUDA build of the buffers (-M cuda) is prepared in the sources under CHORUS_PERF_CUDA; it is
# switched on here when the CUDA runtime is found and CHORUS_PERF_CUDA is requested.
# On by default where nvcc is found; the CUDA runtime is linked statically, so the binary still runs
# (host buffers) where no CUDA is installed.
if(CMAKE_CUDA_COMPILER)
  set(CHORUS_PERF_CUDA_DEFAULT ON)
else()
  set(CHORUS_PERF_CUDA_DEFAULT OFF)
endif()
option(CHORUS_PERF_CUDA "build chorus-perf with -M cuda (cudaMalloc buffers)" ${CHORUS_PERF_CUDA_DEFAULT})
if(CHORUS_PERF_CUDA)
  find_package(CUDAToolkit REQUIRED)
  # The per-thread default stream: with -t, ranks are threads sharing a GPU, and a legacy-stream
  # copy or memset of one rank must not wait for another rank's kernel (which may wait for it).
  target_compile_definitions(chorus-perf PRIVATE CHORUS_PERF_CUDA=1 CUDA_API_PER_THREAD_DEFAULT_STREAM=1)
  target_link_libraries(chorus-perf PRIVATE CUDA::cudart_static)
endif()
install(TARGETS chorus-perf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
