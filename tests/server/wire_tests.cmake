# Raw-wire tests of brig-test-server, and the raw client they share with the
# MCP benchmark (tests/bench). Included from tests/CMakeLists.txt.
add_library(brig_wire_client STATIC ${CMAKE_CURRENT_LIST_DIR}/wire_client.cc)
target_include_directories(brig_wire_client PUBLIC ${PROJECT_SOURCE_DIR})

brig_add_gtest(NAME wire_test LABELS server
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/wire_test.cc
  LIBS brig_wire_client nlohmann_json::nlohmann_json)
# The test runs its sibling bin/brig-test-server.
if(TARGET brig-test-server)
  add_dependencies(wire_test brig-test-server)
endif()
