# SPDX-License-Identifier: BSD-3-Clause
# bundle_libfabric.cmake: copy libfabric.so.1 and the libraries it needs (but not the C library's own)
# into DEST, under their sonames, so a folder holding the plugin loads on a machine without libfabric.
#   cmake -DLIBFABRIC=/path/libfabric.so.1 -DDEST=/path/lib -P bundle_libfabric.cmake
# The plugin is linked with DT_RPATH $ORIGIN (not RUNPATH): the loader also searches the plugin's
# RPATH for the dependencies of libfabric, which has no run path of its own, so they are found here.
if(NOT LIBFABRIC OR NOT DEST)
  message(FATAL_ERROR "bundle_libfabric.cmake: set LIBFABRIC and DEST")
endif()
get_filename_component(real ${LIBFABRIC} REALPATH)
configure_file(${real} ${DEST}/libfabric.so.1 COPYONLY)
execute_process(COMMAND ldd ${real} OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bundle_libfabric.cmake: ldd ${real} failed")
endif()
string(REPLACE "\n" ";" lines "${deps}")
set(copied "")
foreach(line ${lines})
  # "	libibverbs.so.1 => /lib/x86_64-linux-gnu/libibverbs.so.1 (0x...)"
  if(line MATCHES "^[ \t]*([^ \t]+) => (/[^ \t]+)")
    set(soname ${CMAKE_MATCH_1})
    set(path ${CMAKE_MATCH_2})
    # The C library and its loader come with every system, and must match the one running.
    if(soname MATCHES "^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux.*)\\.so")
      continue()
    endif()
    get_filename_component(dep_real ${path} REALPATH)
    configure_file(${dep_real} ${DEST}/${soname} COPYONLY)
    list(APPEND copied ${soname})
  endif()
endforeach()
message(STATUS "net_ofi: carried libfabric.so.1 and ${copied} into ${DEST}")
