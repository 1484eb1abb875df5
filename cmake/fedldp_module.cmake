# fedldp_module(NAME SOURCES ... DEPS ...)
# One static library per module, named fedldp_NAME with the alias fedldp::NAME,
# which is also its name once installed (find_package(fedldp)). Public
# headers live under include/fedldp/NAME/.
function(fedldp_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(fedldp_${name} STATIC ${ARG_SOURCES})
  add_library(fedldp::${name} ALIAS fedldp_${name})
  target_include_directories(fedldp_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_link_libraries(fedldp_${name} PUBLIC ${ARG_DEPS})
  set_target_properties(fedldp_${name} PROPERTIES EXPORT_NAME ${name})
  set_property(GLOBAL APPEND PROPERTY FEDLDP_INSTALLED_LIBRARIES fedldp_${name})
endfunction()

# fedldp_test(NAME SOURCES ... DEPS ... [LABELS ...] [COST N] [SERIAL])
# One GoogleTest executable, registered with CTest test by test.
function(fedldp_test name)
  cmake_parse_arguments(ARG "SERIAL" "COST" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  # Tests whose workload costs minutes under ASan + UBSan run a smaller one
  # there (if FEDLDP_SANITIZED), the same code on fewer draws, seeds or rounds.
  target_compile_definitions(${name} PRIVATE FEDLDP_SANITIZED=$<BOOL:${FEDLDP_SANITIZE}>)
  # GoogleTest and the standard headers, parsed once for every test
  # (tests/CMakeLists.txt's fedldp_test_headers), with its flags: -pthread
  # (_REENTRANT), which gRPC's and Torch's targets add to some tests.
  target_precompile_headers(${name} REUSE_FROM fedldp_test_headers)
  target_compile_options(${name} PRIVATE -pthread)
  # COST: CTest starts higher-cost tests first when it has no timings yet (a
  # fresh clone), so the long ones run beside the short ones, not last.
  set(properties)
  if(ARG_LABELS)
    list(APPEND properties LABELS "${ARG_LABELS}")
  endif()
  if(ARG_COST)
    list(APPEND properties COST ${ARG_COST})
  endif()
  # SERIAL: the test runs alone (timings, which another test on the other core
  # would disturb).
  if(ARG_SERIAL)
    list(APPEND properties RUN_SERIAL TRUE)
  endif()
  # Leaks in third-party code that fedldp cannot free (tests/lsan.supp).
  if(FEDLDP_SANITIZE)
    list(APPEND properties ENVIRONMENT
         "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/lsan.supp")
  endif()
  if(properties)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${properties})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# fedldp_proto_library(NAME [GRPC] PROTOS a.proto ... [DEPS ...])
# A static library of the C++ code protoc generates for proto/<each PROTOS>:
# the messages ("fedldp/v1/x.pb.h"), or with GRPC the service stubs only
# ("x.grpc.pb.h"; DEPS then names the messages' library). Code that handles
# the messages links no gRPC. (FindProtobuf's protobuf_generate would put the
# files under an extra proto/ folder.)
function(fedldp_proto_library name)
  cmake_parse_arguments(ARG "GRPC" "" "PROTOS;DEPS" ${ARGN})
  set(out ${PROJECT_BINARY_DIR}/proto)
  set(sources)
  foreach(proto ${ARG_PROTOS})
    string(REGEX REPLACE "\\.proto$" "" stem ${proto})
    if(ARG_GRPC)
      set(outputs ${out}/${stem}.grpc.pb.cc ${out}/${stem}.grpc.pb.h)
      set(args --grpc_out=${out} --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>)
      set(tools protobuf::protoc gRPC::grpc_cpp_plugin)
    else()
      set(outputs ${out}/${stem}.pb.cc ${out}/${stem}.pb.h)
      set(args --cpp_out=${out})
      set(tools protobuf::protoc)
    endif()
    list(APPEND sources ${outputs})
    add_custom_command(OUTPUT ${outputs}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
      COMMAND protobuf::protoc ${args} -I ${PROJECT_SOURCE_DIR}/proto
              ${PROJECT_SOURCE_DIR}/proto/${proto}
      DEPENDS ${PROJECT_SOURCE_DIR}/proto/${proto} ${tools}
      COMMENT "protoc ${proto}")
  endforeach()
  add_library(${name} STATIC ${sources})
  # Installed for linking only: no public header includes generated code.
  target_include_directories(${name} SYSTEM PUBLIC $<BUILD_INTERFACE:${out}>)
  set_property(GLOBAL APPEND PROPERTY FEDLDP_INSTALLED_LIBRARIES ${name})
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf ${ARG_DEPS})
  if(ARG_GRPC)
    target_link_libraries(${name} PUBLIC gRPC::grpc++)
  endif()
endfunction()
