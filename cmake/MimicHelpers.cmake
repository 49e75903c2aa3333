# mimic_add_component(NAME SOURCES ... DEPS ...)
#   One folder = one library target `mimic_<NAME>`, aliased `mimic::<NAME>`, with its public
#   headers under <folder>/include/mimic/<NAME>/ and everything else private.
function(mimic_add_component name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(mimic_${name} STATIC ${ARG_SOURCES})
  add_library(mimic::${name} ALIAS mimic_${name})
  target_include_directories(mimic_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(mimic_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  mimic_set_warnings(mimic_${name})
endfunction()

function(mimic_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()

# mimic_add_test(NAME SOURCES ... DEPS ...): one gtest binary, its tests discovered by CTest.
function(mimic_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} mimic_testing GTest::gmock_main)
  mimic_set_warnings(${name})
  gtest_discover_tests(${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    PROPERTIES ENVIRONMENT "MIMIC_SOURCE_DIR=${PROJECT_SOURCE_DIR};MIMIC_BINARY_DIR=${PROJECT_BINARY_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()
