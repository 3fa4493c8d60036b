# SPDX-License-Identifier: BSD-3-Clause
# ABI tests of nccl.h and the exported symbols (test_abi_compare.sh):
#   unit.abi_exports   every function of our header is exported as weak nccl* + strong pncclX, nothing else
#   unit.abi_compare   our header against NVIDIA's, key by key (abi_dump built with each), and NVIDIA's
#                      functions all declared in ours; skipped (not passed) when NVIDIA's header is absent
set(CHORUS_NV_NCCL_H "/usr/local/cuda/include/nccl.h" CACHE FILEPATH
    "NVIDIA's nccl.h for unit.abi_compare; the test is skipped when the file does not exist")
add_executable(abi_dump_chorus ${CMAKE_CURRENT_SOURCE_DIR}/abi_dump.c)
target_include_directories(abi_dump_chorus BEFORE PRIVATE ${CHORUS_PUBLIC_INCLUDE})
if(EXISTS ${CHORUS_NV_NCCL_H})
  get_filename_component(nv_include ${CHORUS_NV_NCCL_H} DIRECTORY)
  add_executable(abi_dump_nvidia ${CMAKE_CURRENT_SOURCE_DIR}/abi_dump.c)
  target_include_directories(abi_dump_nvidia BEFORE PRIVATE ${nv_include})
  set(nv_dump $<TARGET_FILE:abi_dump_nvidia>)
  set(nv_hdr ${CHORUS_NV_NCCL_H})
else()
  set(nv_dump none)
  set(nv_hdr none)
endif()
add_test(NAME unit.abi_exports COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_abi_compare.sh exports
         $<TARGET_FILE:chorus> ${CHORUS_PUBLIC_INCLUDE}/nccl.h)
add_test(NAME unit.abi_compare COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_abi_compare.sh nvidia
         $<TARGET_FILE:abi_dump_chorus> ${nv_dump} ${CHORUS_PUBLIC_INCLUDE}/nccl.h ${nv_hdr})
set_tests_properties(unit.abi_exports unit.abi_compare PROPERTIES TIMEOUT 60)
set_tests_properties(unit.abi_compare PROPERTIES SKIP_RETURN_CODE ${CHORUS_SKIP_CODE})
