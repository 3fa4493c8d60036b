# SPDX-License-Identifier: BSD-3-Clause
# Tests of the reference env plugin libnccl-env-chorus.so (plugins/env_chorus). Included by
# tests/plugins/CMakeLists.txt, after env.cmake (alphabetical), whose test_env_loader it uses; the
# global property keeps a second include harmless.
get_property(ec_tests_added GLOBAL PROPERTY CHORUS_ENV_CHORUS_TESTS_ADDED)
if(ec_tests_added OR NOT TARGET nccl-env-chorus OR NOT TARGET test_env_loader)
  return()
endif()
set_property(GLOBAL PROPERTY CHORUS_ENV_CHORUS_TESTS_ADDED TRUE)
set(EC_LIB $<TARGET_FILE:nccl-env-chorus>)
add_dependencies(test_env_loader nccl-env-chorus)

# The settings file wins over the environment; names it lacks come from getenv; a file that cannot be
# used fails the plugin's init, with the reason through the logger, and Chorus reads getenv instead.
set(EC_FILE ${CMAKE_CURRENT_BINARY_DIR}/env_chorus_site.env)
file(WRITE ${EC_FILE} "# site settings\nexport NCCL_BUFFSIZE = 131072\n\nCHORUS_PLUGIN_STRICT=0\n")
set(EC_BAD ${CMAKE_CURRENT_BINARY_DIR}/env_chorus_bad.env)
file(WRITE ${EC_BAD} "NCCL_BUFFSIZE=131072\nthis line has no equals sign\n")
chorus_env_test(chorus.file PLUGIN ${EC_LIB} ENV CHORUS_ENV_PLUGIN_FILE=${EC_FILE} NCCL_ALGO=ring
  ARGS load buffsize=131072 "source=env plugin" warns=0 "log=Chorus env plugin: 2 settings from ${EC_FILE}"
  "log=loaded env plugin 'Chorus' from ${EC_LIB} (ABI v2)" "log=NCCL_ALGO set by env plugin to ring")
chorus_env_test(chorus.badfile PLUGIN ${EC_LIB} ENV CHORUS_ENV_PLUGIN_FILE=${EC_BAD}
  ARGS load buffsize=65536 source=env warns=2 "log=Chorus env plugin: ${EC_BAD}:2: expected KEY=VALUE"
  "log=(Chorus, ABI v2): init returned 5; reading the environment with getenv instead")
chorus_env_test(chorus.nofile PLUGIN ${EC_LIB} ENV CHORUS_ENV_PLUGIN_FILE= ARGS load buffsize=65536 warns=2
  "log=CHORUS_ENV_PLUGIN_FILE is not set")

# NVIDIA's NCCL looks for these objects by name: both must be in the dynamic symbol table, and
# nothing else of the library may be exported.
find_program(EC_NM nm)
if(EC_NM)
  add_test(NAME plugins.env_chorus.symbols COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has " [DR] ncclEnvPlugin_v2$" --has " [DR] ncclEnvPlugin_v1$" --lacks " [TtWiB] [^_]" --lacks " [TtWiB] _[^_]"
           -- ${EC_NM} -D --defined-only ${EC_LIB})
  set_tests_properties(plugins.env_chorus.symbols PROPERTIES TIMEOUT 30)
endif()

# End to end: chorus-perf on 4 ranks with the plugin found by its bare name next to libchorus, its
# file forcing NCCL_ALGO=tree (the model alone picks RING for the large sizes) and setting
# NCCL_BUFFSIZE and the log settings, over an environment that says otherwise: every result must be
# right (-c 1), every size must run TREE, and the log must show the values came from the plugin.
if(TARGET chorus-perf)
  set(EC_RUN_FILE ${CMAKE_CURRENT_BINARY_DIR}/env_chorus_run.env)
  file(WRITE ${EC_RUN_FILE} "NCCL_ALGO=tree\nNCCL_BUFFSIZE=262144\nNCCL_DEBUG=INFO\nNCCL_DEBUG_SUBSYS=INIT,ENV\n")
  add_test(NAME plugins.env_chorus.perf COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has "Out of bounds values : 0 OK" --has "TREE/SIMPLE" --lacks "RING/" --lacks "WARN"
           --has "NCCL_ALGO set by env plugin to tree" --has "NCCL_BUFFSIZE set by env plugin to 262144"
           --has "loaded env plugin 'Chorus' from .*/libnccl-env-chorus.so \\(ABI v2\\)"
           -- $<TARGET_FILE:chorus-perf> -np 4 -T 60 allreduce -b 8 -e 1M -f 32 -n 2 -w 1 -c 1)
  set_tests_properties(plugins.env_chorus.perf PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_ENV_PLUGIN=chorus;CHORUS_ENV_PLUGIN_FILE=${EC_RUN_FILE};HOME=${CMAKE_CURRENT_BINARY_DIR};CHORUS_CONF=;NCCL_CONF_FILE=;NCCL_ALGO=ring;NCCL_BUFFSIZE=65536;NCCL_DEBUG=WARN;NCCL_DEBUG_FILE=;NCCL_PROTO=;NCCL_TUNER_PLUGIN=;CHORUS_PLUGIN_STRICT=1")
endif()
