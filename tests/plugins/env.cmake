# SPDX-License-Identifier: BSD-3-Clause
# ABI conformance tests of the env plugin loader (core/config/env_plugin.c) and of the configuration read
# through it: tiny test env plugins, one per ABI version and two broken ones, driven by
# test_env_loader; chorus-info's view; finalize at exit; the reference plugin libnccl-env-chorus.so
# in a real run. Each scenario is its own process. Included by tests/plugins/CMakeLists.txt (after
# the net test plugins: testnet_nosym is used).

set(TESTENV_DIR ${CMAKE_CURRENT_BINARY_DIR}/envlib)
set(TESTENV_DEFAULT_DIR ${CMAKE_CURRENT_BINARY_DIR}/envdefault) # holds a libnccl-env.so
set(TESTENV_LOG_DIR ${CMAKE_CURRENT_BINARY_DIR}/log)
file(MAKE_DIRECTORY ${TESTENV_LOG_DIR})

# A test env plugin: a module named libnccl-env-<name>.so that exports only its ncclEnvPlugin_vN
# (and testEnvStats / testEnvAsked for the tests).
function(chorus_test_env target name version)
  add_library(${target} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testenv_plugin.c)
  target_include_directories(${target} PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${target} PRIVATE TESTENV_VERSION=${version} TESTENV_NAME="${name}" ${ARGN})
  target_compile_options(${target} PRIVATE -fvisibility=hidden)
  set_target_properties(${target} PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-env-${name}
                        LIBRARY_OUTPUT_DIRECTORY ${TESTENV_DIR})
endfunction()

foreach(v 1 2)
  chorus_test_env(testenv_v${v} testv${v} ${v})
endforeach()
chorus_test_env(testenv_initfail initfail 2 TESTENV_INIT_FAIL)
chorus_test_env(testenv_nullslot nullslot 1 TESTENV_NULL_SLOT)
# The default name libnccl-env.so, in a folder of its own (found through LD_LIBRARY_PATH only).
chorus_test_env(testenv_default default 2)
set_target_properties(testenv_default PROPERTIES OUTPUT_NAME nccl-env LIBRARY_OUTPUT_DIRECTORY ${TESTENV_DEFAULT_DIR})

add_executable(test_env_loader ${CMAKE_CURRENT_SOURCE_DIR}/test_env_loader.c ${CMAKE_CURRENT_SOURCE_DIR}/loader_check.c)
target_link_libraries(test_env_loader PRIVATE chorus_static)
target_include_directories(test_env_loader PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(test_env_loader testenv_v1 testenv_v2 testenv_initfail testenv_nullslot testenv_default testnet_nosym)

set(EV1 $<TARGET_FILE:testenv_v1>)
set(EV2 $<TARGET_FILE:testenv_v2>)
set(E_INITFAIL $<TARGET_FILE:testenv_initfail>)
set(E_NULLSLOT $<TARGET_FILE:testenv_nullslot>)
set(E_NOSYM $<TARGET_FILE:testnet_nosym>)

# The environment of every scenario: the real NCCL_BUFFSIZE is 65536, the test plugins answer 262144,
# so the value tells which one the configuration read. No config file leaks in (HOME, CHORUS_CONF).
function(chorus_env_environment out plugin log)
  set(env_plugin "NCCL_ENV_PLUGIN=${plugin}")
  if(plugin STREQUAL "UNSET")
    set(env_plugin "NCCL_ENV_PLUGIN=")
  endif()
  set(${out} "${env_plugin};NCCL_BUFFSIZE=65536;NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,ENV;NCCL_DEBUG_FILE=${TESTENV_LOG_DIR}/${log}.log;HOME=${CMAKE_CURRENT_BINARY_DIR};CHORUS_CONF=;NCCL_CONF_FILE=;CHORUS_PLUGIN_STRICT=0;LD_LIBRARY_PATH=" PARENT_SCOPE)
endfunction()

# chorus_env_test(<name> PLUGIN <NCCL_ENV_PLUGIN value or UNSET> [ENV k=v ...] ARGS <test_env_loader args>)
function(chorus_env_test name)
  cmake_parse_arguments(T "" "PLUGIN" "ENV;ARGS" ${ARGN})
  set(test plugins.env.${name})
  add_test(NAME ${test} COMMAND test_env_loader ${T_ARGS})
  chorus_env_environment(environment "${T_PLUGIN}" env.${name})
  set_tests_properties(${test} PROPERTIES TIMEOUT 30 ENVIRONMENT "${environment};${T_ENV}")
endfunction()

# Each version loads; its value reaches the parameters with the source "env plugin"; every parameter
# (and CHORUS_CONF, NCCL_CONF_FILE) is asked of it, again on a reload, which does not init again.
# v2's init gets the logger: what it logs while the configuration loads comes out afterwards.
set(E_ASKED buffsize=262144 "source=env plugin" inits=1 initargs=1 askedall=1 reload=1 warns=0
    "log=NCCL_BUFFSIZE set by env plugin to 262144")
chorus_env_test(abi.v2 PLUGIN ${EV2} ARGS load lib=${EV2} logger=1 ${E_ASKED} "out=${EV2}: name testv2, ABI v2"
  "log=loaded env plugin 'testv2' from ${EV2} (ABI v2)" "log=testenv testv2: init 2.30.7"
  "log=testenv testv2: answered NCCL_BUFFSIZE")
chorus_env_test(abi.v1 PLUGIN ${EV1} ARGS load lib=${EV1} logger=0 ${E_ASKED} "out=${EV1}: name testv1, ABI v1"
  "log=loaded env plugin 'testv1' from ${EV1} (ABI v1)")
# The logger's own init loads the configuration, and with it the plugin, whose init logs: no deadlock.
chorus_env_test(logfirst PLUGIN ${EV2} ARGS load logfirst=1 lib=${EV2} inits=1 buffsize=262144 warns=0
  "log=testenv testv2: init 2.30.7" "log=test_env_loader: the first line")
# A bare name resolves to libnccl-env-<name>.so through the loader search path.
chorus_env_test(byname PLUGIN testv1 ENV LD_LIBRARY_PATH=${TESTENV_DIR} ARGS load buffsize=262144
  "source=env plugin" warns=0 "log=loaded env plugin 'testv1' from ${TESTENV_DIR}/libnccl-env-testv1.so (ABI v1)")

# "none", and unset with no libnccl-env.so: plain getenv, nothing WARNed; unset with one: it is used.
chorus_env_test(none PLUGIN none ENV LD_LIBRARY_PATH=${TESTENV_DEFAULT_DIR} ARGS load buffsize=65536 source=env
  warns=0 "log=env plugins disabled (NCCL_ENV_PLUGIN=none)" nolog=loaded "out=none: env plugins disabled")
chorus_env_test(unset PLUGIN UNSET ARGS load buffsize=65536 source=env warns=0 "log=libnccl-env.so not found"
  "out=no libnccl-env.so (tried libnccl-env.so")
chorus_env_test(unset.default PLUGIN UNSET ENV LD_LIBRARY_PATH=${TESTENV_DEFAULT_DIR} ARGS load buffsize=262144
  "source=env plugin" warns=0 "log=loaded env plugin 'default' from ${TESTENV_DEFAULT_DIR}/libnccl-env.so (ABI v2)")

# Asked for and unusable: one WARN with the file and the exact reason, and getenv is read instead.
chorus_env_test(fallback.initfail PLUGIN ${E_INITFAIL} ARGS load lib=${E_INITFAIL} inits=1 buffsize=65536 source=env
  warns=1 "log=cannot use env plugin '${E_INITFAIL}' (initfail, ABI v2): init returned 3; reading the environment with getenv instead"
  "out=init returned 3; parameters are read with getenv")
chorus_env_test(fallback.missing PLUGIN /nonexistent/libnccl-env-missing.so ARGS load buffsize=65536 source=env
  warns=1 "log=/nonexistent/libnccl-env-missing.so: cannot open shared object file")
chorus_env_test(fallback.missing_name PLUGIN doesnotexist ARGS load buffsize=65536 source=env warns=1
  "log=cannot use env plugin 'doesnotexist'" "log=libnccl-env-doesnotexist.so")
chorus_env_test(fallback.nosym PLUGIN ${E_NOSYM} ARGS load buffsize=65536 source=env warns=1
  "log=cannot use env plugin '${E_NOSYM}': no ncclEnvPlugin_v2..v1 symbol")
chorus_env_test(fallback.nullslot PLUGIN ${E_NULLSLOT} ARGS load buffsize=65536 source=env warns=1
  "log=(nullslot, ABI v1): its ncclEnvPlugin_v1 table has a NULL getEnv slot")
chorus_env_test(fallback.static PLUGIN STATIC_PLUGIN ARGS load buffsize=65536 source=env warns=1
  "log=cannot use env plugin 'STATIC_PLUGIN' ((main program)): no ncclEnvPlugin_v2..v1 symbol")
# CHORUS_PLUGIN_STRICT=1: the same failures make the configuration unusable, with the reason.
set(STRICT ENV CHORUS_PLUGIN_STRICT=1)
chorus_env_test(strict.initfail PLUGIN ${E_INITFAIL} ${STRICT} ARGS load rc=5 "err=init returned 3"
  err=CHORUS_PLUGIN_STRICT warns=1)
chorus_env_test(strict.missing PLUGIN /nonexistent/libnccl-env-missing.so ${STRICT} ARGS load rc=5
  "err=cannot open shared object file" err=CHORUS_PLUGIN_STRICT)
chorus_env_test(strict.ok PLUGIN ${EV2} ${STRICT} ARGS load buffsize=262144 warns=0)
# NCCL_ENV_PLUGIN in a config file cannot choose the plugin (it is chosen before files are read): said so.
set(E_INI ${CMAKE_CURRENT_BINARY_DIR}/env_in_file.conf)
file(WRITE ${E_INI} "NCCL_ENV_PLUGIN=${TESTENV_DIR}/libnccl-env-testv2.so\n")
chorus_env_test(in_file PLUGIN UNSET ENV CHORUS_CONF=${E_INI} ARGS load buffsize=65536 warns=1
  "log=NCCL_ENV_PLUGIN has no effect in a file")

# finalize runs once, at exit, after the last getEnv: the plugin writes a line then.
foreach(v 1 2)
  set(test plugins.env.finalize.v${v})
  set(marker ${TESTENV_LOG_DIR}/env.finalize.v${v}.marker)
  add_test(NAME ${test} COMMAND ${CHORUS_EXPECT_OUTPUT} --has "^finalized testv${v} v${v} gets=[1-9][0-9]* inits=1 finalizes=1$"
           -- sh -c "rm -f \"$1\" && \"$0\" load buffsize=262144 && cat \"$1\"" $<TARGET_FILE:test_env_loader> ${marker})
  chorus_env_environment(environment ${EV${v}} env.finalize.v${v})
  set_tests_properties(${test} PROPERTIES TIMEOUT 30 ENVIRONMENT "${environment};TESTENV_FINALIZE_FILE=${marker}")
endforeach()

# chorus-info: the plugin's values have the source "env plugin" (a variable the plugin passes on from
# the environment too), plain environment values keep "env"; the plugin is listed.
if(TARGET chorus-info)
  set(E_INFO $<TARGET_FILE:chorus-info>)
  add_test(NAME plugins.env.chorus_info COMMAND ${CHORUS_EXPECT_OUTPUT} --has "^NCCL_BUFFSIZE +262144 +env plugin  "
           --has "^NCCL_ALGO +ring +env plugin  " --has "^env plugin \\(NCCL_ENV_PLUGIN=.*libnccl-env-testv2.so\\):"
           --has "name testv2, ABI v2; parameters are read through its getEnv" --lacks "NCCL WARN" -- ${E_INFO})
  chorus_env_environment(environment ${EV2} env.chorus_info)
  set_tests_properties(plugins.env.chorus_info PROPERTIES TIMEOUT 30 ENVIRONMENT "${environment};NCCL_ALGO=ring")
  add_test(NAME plugins.env.chorus_info.none COMMAND ${CHORUS_EXPECT_OUTPUT} --has "^NCCL_BUFFSIZE +65536 +env  "
           --lacks " env plugin  " --has "none: env plugins disabled" -- ${E_INFO})
  chorus_env_environment(environment none env.chorus_info.none)
  set_tests_properties(plugins.env.chorus_info.none PROPERTIES TIMEOUT 30 ENVIRONMENT "${environment}")
  # Strict and unusable: chorus-info says why and exits 1, as communicator init would fail.
  add_test(NAME plugins.env.chorus_info.strict COMMAND ${CHORUS_EXPECT_OUTPUT} --status fail
           --has "cannot use env plugin '.*initfail.so' \\(initfail, ABI v2\\): init returned 3; failing because CHORUS_PLUGIN_STRICT=1"
           --has "configuration is not usable" -- ${E_INFO})
  chorus_env_environment(environment ${E_INITFAIL} env.chorus_info.strict)
  set_tests_properties(plugins.env.chorus_info.strict PROPERTIES TIMEOUT 30 ENVIRONMENT "${environment};CHORUS_PLUGIN_STRICT=1")
endif()
