# gitrev.cmake: writes OUT, a header holding the git revision of SRC
# (`git describe --always --dirty`), at every build, and rewrites it only
# when the revision changed, so that `parity --version` names the revision
# it was built from without rebuilding anything else.
#   cmake -DSRC=<source dir> -DOUT=<header> -P gitrev.cmake
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown: not built from a git checkout")
endif()
set(text "#define PARITY_GIT_REVISION \"${rev}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
