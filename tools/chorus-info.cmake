# SPDX-License-Identifier: BSD-3-Clause
# chorus-info: effective configuration and plugins. It needs internal functions, so it links the
# internal static library, as a whole archive: chorus-info.c carries a weak chrPluginsDescribe stub,
# and a weak definition does not pull an archive member, so without WHOLE_ARCHIVE the plugin
# loader's real chrPluginsDescribe would never be linked in.
add_executable(chorus-info ${CMAKE_CURRENT_SOURCE_DIR}/chorus-info.c ${CMAKE_CURRENT_SOURCE_DIR}/args.c)
target_include_directories(chorus-info PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(chorus-info PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,chorus_static>")
install(TARGETS chorus-info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
