# `parity check TRACE... --ledger FILE --class C` (docs/ledger.md): traces of
# a cpu campaign checked into a ledger under set clocks, a planted failing
# day, TTBP worked out by hand, and the refusals that leave the ledger as it was.
add_test(NAME cli_check_ledger COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli_check_ledger.sh $<TARGET_FILE:parity>
         ${PROJECT_SOURCE_DIR}/kernels $<TARGET_FILE:st_flip>)
