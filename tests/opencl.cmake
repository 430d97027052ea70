# The opencl class (devices/opencl, docs/opencl.md): CTest label `opencl`.
# Each test exits 77, a skip said on stdout, where no OpenCL platform or
# device is present; none is registered where devices/opencl built nothing
# (no OpenCL headers and loader).
find_package(OpenCL QUIET)
if(TARGET parity_opencl AND OpenCL_FOUND)
  # The library through its C ABI alone: known answers, refusals, bad inputs.
  add_executable(test_opencl_backend test_opencl_backend.c)
  target_include_directories(test_opencl_backend PRIVATE ${PROJECT_SOURCE_DIR}/devices/ext)
  target_link_libraries(test_opencl_backend PRIVATE ${CMAKE_DL_LIBS} m)
  add_dependencies(test_opencl_backend parity_opencl)
  add_test(NAME test_opencl_backend COMMAND test_opencl_backend $<TARGET_FILE:parity_opencl>)

  # exp_cr and rsqrt_cr of ocl_math.cl against MPFR (and the double-double
  # path forced on every argument).
  add_executable(test_opencl_math test_opencl_math.c)
  target_compile_definitions(test_opencl_math PRIVATE CL_TARGET_OPENCL_VERSION=120)
  target_link_libraries(test_opencl_math PRIVATE OpenCL::OpenCL PkgConfig::MPFR m)
  add_test(NAME test_opencl_math COMMAND test_opencl_math ${PROJECT_SOURCE_DIR}/devices/opencl)

  # The campaign on the class, --against cpu, and the planted bugs caught.
  add_test(NAME opencl_campaign
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/opencl_campaign.sh $<TARGET_FILE:parity> ${PROJECT_SOURCE_DIR}/kernels
                   $<TARGET_FILE:test_opencl_backend> $<TARGET_FILE:parity_opencl>)

  set_tests_properties(test_opencl_backend test_opencl_math opencl_campaign PROPERTIES LABELS opencl SKIP_RETURN_CODE 77)
  set_tests_properties(test_opencl_math PROPERTIES TIMEOUT 300)
  set_tests_properties(opencl_campaign PROPERTIES TIMEOUT 600)
endif()
