# keel_module(name DEPS ...): a static library keel_<name> from src/<name>/*.cpp.
# A module without sources yet is an INTERFACE library so later modules can name it.
function(keel_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cpp)
  if(srcs)
    add_library(keel_${name} STATIC ${srcs})
    target_include_directories(keel_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(keel_${name} PUBLIC ${M_DEPS})
  else()
    add_library(keel_${name} INTERFACE)
    target_include_directories(keel_${name} INTERFACE ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(keel_${name} INTERFACE ${M_DEPS})
  endif()
endfunction()

# keel_test_module(name LIBS ...): one GoogleTest executable test_<name> from
# tests/<name>/*.cpp; each test case is a CTest test labelled with the module name.
function(keel_test_module name)
  cmake_parse_arguments(T "" "" "LIBS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/${name}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(test_${name} ${srcs})
  target_link_libraries(test_${name} PRIVATE ${T_LIBS} keel_test_support GTest::gtest_main GTest::gmock)
  gtest_discover_tests(test_${name}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    PROPERTIES LABELS ${name} ENVIRONMENT "KEEL_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60)
endfunction()
