# fedldp_module(NAME SOURCES ... DEPS ...)
# One static library per module, named fedldp_NAME with the alias fedldp::NAME.
# Public headers live under include/fedldp/NAME/.
function(fedldp_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(fedldp_${name} STATIC ${ARG_SOURCES})
  add_library(fedldp::${name} ALIAS fedldp_${name})
  target_include_directories(fedldp_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(fedldp_${name} PUBLIC ${ARG_DEPS})
endfunction()

# fedldp_test(NAME SOURCES ... DEPS ... [LABELS ...])
# One GoogleTest executable, registered with CTest test by test.
function(fedldp_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()
