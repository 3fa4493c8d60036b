# SPDX-License-Identifier: BSD-3-Clause
# Debian packages (cpack -G DEB in the build folder), split as Debian splits NVIDIA's NCCL:
#   chorus-libnccl2     runtime: libnccl.so.2 (the real file and its SONAME link), the device library
#   chorus-libnccl-dev  development: headers, libnccl.so, nccl.pc, the CMake package
#   chorus-plugins      Chorus's net, tuner, profiler and env plugins
#   chorus-tools        chorus-perf, chorus-info, chorus-netcheck
# They install the same files as libnccl2/libnccl-dev, so they conflict with (and provide) those.
# Dependencies come from dpkg-shlibdeps: the runtime package needs only the C library. A packager
# configures with -DCMAKE_INSTALL_PREFIX=/usr, so that the library goes to the multiarch folder.
set(CPACK_PACKAGE_NAME chorus)
set(CPACK_PACKAGE_VENDOR "Chorus")
set(CPACK_PACKAGE_CONTACT "Chorus developers <chorus@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "collective communication with NCCL's API, ABI and plugins")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL runtime development plugins tools)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME chorus-libnccl2)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_PROVIDES libnccl2)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONFLICTS libnccl2)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME chorus-libnccl-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_PROVIDES libnccl-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_CONFLICTS libnccl-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "chorus-libnccl2 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_PLUGINS_PACKAGE_NAME chorus-plugins)
set(CPACK_DEBIAN_PLUGINS_PACKAGE_DEPENDS "chorus-libnccl2 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME chorus-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "chorus-libnccl2 (= ${PROJECT_VERSION})")
include(CPack)
