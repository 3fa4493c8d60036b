# SPDX-License-Identifier: BSD-3-Clause
# chorus-tcp-stream: raw TCP bandwidth/latency, the baseline for net plugins (docs/perf/net.md).
add_executable(chorus-tcp-stream ${CMAKE_CURRENT_SOURCE_DIR}/bench/tcp_stream_main.c
  ${CMAKE_CURRENT_SOURCE_DIR}/bench/tcp_stream.c)
target_include_directories(chorus-tcp-stream PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/bench)
target_link_libraries(chorus-tcp-stream PRIVATE Threads::Threads)
