# Out-of-tree class backends (docs/backends.md), in the default suite: a
# backend library written against devices/ext/parity_backend.h alone,
# loaded in a child and in process, served through a hostile process that
# misbehaves in every way the protocol allows, planted kernel bugs seen
# red, and the registry's backend key refused where malformed.
add_library(ext_gemm SHARED ${CMAKE_CURRENT_SOURCE_DIR}/backends/ext_gemm.c)
target_include_directories(ext_gemm PRIVATE ${PROJECT_SOURCE_DIR}/devices/ext)
target_link_libraries(ext_gemm PRIVATE ${MATH_LIB})
set_target_properties(ext_gemm PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/backends)
add_test(NAME cli_backends COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_backends.sh $<TARGET_FILE:parity>
         $<TARGET_FILE:ext_gemm> ${PROJECT_SOURCE_DIR}/kernels ${CMAKE_CURRENT_SOURCE_DIR}/backends)
set_tests_properties(cli_backends PROPERTIES TIMEOUT 300)
# TTBP against a target, model shapes, zero-day from the registry and the
# gate's promotions and timing shapes, over set clock days (docs/ledger.md)
add_test(NAME cli_parity_target COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_parity_target.sh $<TARGET_FILE:parity>
         ${PROJECT_SOURCE_DIR}/kernels ${CMAKE_CURRENT_SOURCE_DIR}/backends $<TARGET_FILE:ext_gemm>)
set_tests_properties(cli_parity_target PROPERTIES TIMEOUT 600)
