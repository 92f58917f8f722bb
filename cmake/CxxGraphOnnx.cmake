# ONNX export (onnx/, graph-export) needs the ONNX protobuf schema and its
# checker: Debian's libonnx-dev (1.12, with libprotobuf). Optional so that the
# default install stays lean: CXXGRAPH_ONNX=AUTO builds it when found, ON
# requires it, OFF skips it. Sets CXXGRAPH_HAS_ONNX.
set(CXXGRAPH_ONNX AUTO CACHE STRING "ONNX export: AUTO (when libonnx-dev is found), ON or OFF")
set_property(CACHE CXXGRAPH_ONNX PROPERTY STRINGS AUTO ON OFF)
set(CXXGRAPH_HAS_ONNX OFF)
if(NOT CXXGRAPH_ONNX STREQUAL "OFF")
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX QUIET)  # its targets name protobuf::libprotobuf: Protobuf first
  endif()
  if(ONNX_FOUND AND TARGET onnx AND TARGET onnx_proto)
    set(CXXGRAPH_HAS_ONNX ON)
    message(STATUS "ONNX export: on (ONNX ${ONNX_VERSION})")
  elseif(CXXGRAPH_ONNX STREQUAL "ON")
    message(FATAL_ERROR "CXXGRAPH_ONNX=ON but ONNX was not found: apt-get install libonnx-dev")
  else()
    message(STATUS "ONNX export: off (libonnx-dev not found; CXXGRAPH_ONNX=AUTO)")
  endif()
endif()
