# SPDX-License-Identifier: BSD-3-Clause
# chorus-netcheck: conformance and stress checker for net plugins (tools/netcheck/README.md). It loads
# a plugin exactly as Chorus does, so it links the core's loader and adapters from the internal static
# library; the raw TCP baseline comes from tools/bench/tcp_stream.c, the strict option values from
# tools/args.c.
file(GLOB CHORUS_NETCHECK_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/netcheck/*.c)
add_executable(chorus-netcheck ${CHORUS_NETCHECK_SOURCES} ${CMAKE_CURRENT_SOURCE_DIR}/bench/tcp_stream.c
  ${CMAKE_CURRENT_SOURCE_DIR}/args.c)
target_include_directories(chorus-netcheck BEFORE PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CHORUS_INTERNAL_INCLUDE}
  ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/netcheck ${CMAKE_CURRENT_SOURCE_DIR}/bench)
target_link_libraries(chorus-netcheck PRIVATE chorus_static Threads::Threads m)
install(TARGETS chorus-netcheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
