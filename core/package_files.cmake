# SPDX-License-Identifier: BSD-3-Clause
# What a program that builds against an installed Chorus finds: nccl.pc (pkg-config) and the CMake
# package Chorus (find_package(Chorus) gives Chorus::nccl, which links like -lnccl, and
# Chorus::plugin for plugin authors: the ABI headers under include/chorus/plugin). Both compute the
# install prefix from where they lie, so the tree can move.
file(RELATIVE_PATH CHORUS_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/package/nccl.pc.in ${CMAKE_BINARY_DIR}/package/nccl.pc @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/package/chorus-plugin.pc.in ${CMAKE_BINARY_DIR}/package/chorus-plugin.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/nccl.pc ${CMAKE_BINARY_DIR}/package/chorus-plugin.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)

set(CHORUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Chorus)
file(RELATIVE_PATH CHORUS_CMAKE_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CHORUS_CMAKE_DIR} ${CMAKE_INSTALL_PREFIX})
configure_file(${CMAKE_CURRENT_LIST_DIR}/package/ChorusConfig.cmake.in ${CMAKE_BINARY_DIR}/package/ChorusConfig.cmake @ONLY)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/ChorusConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/ChorusConfig.cmake ${CMAKE_BINARY_DIR}/package/ChorusConfigVersion.cmake
        DESTINATION ${CHORUS_CMAKE_DIR} COMPONENT development)
