# SPDX-License-Identifier: BSD-3-Clause
# chorus-info shows each value with its source (env / file:line / default). Registered here, not in
# tools/, because add_test needs enable_testing(), which comes after tools/ is configured.
if(TARGET chorus-info)
  add_test(NAME unit.chorus_info
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_chorus_info.sh $<TARGET_FILE:chorus-info>)
  set_tests_properties(unit.chorus_info PROPERTIES TIMEOUT 30)
endif()

# NCCL_DEBUG=VERSION: the version line, once per process, naming Chorus.
if(TARGET chorus-perf)
  add_test(NAME unit.version_banner
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_version_banner.sh $<TARGET_FILE:chorus-perf>)
  set_tests_properties(unit.version_banner PROPERTIES TIMEOUT 30)
endif()

# Started by name through PATH (argv[0] without a folder), chorus-info and chorus-netcheck still find
# the plugins in the build's lib folder.
if(TARGET chorus-info AND TARGET chorus-netcheck AND TARGET nccl-net-socket)
  add_test(NAME unit.chorus_info_on_path
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_tools_on_path.sh ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}
                   ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
  set_tests_properties(unit.chorus_info_on_path PROPERTIES TIMEOUT 60)
endif()
