# The torch-cpu class (kernels/torch-cpu: PyTorch 1.13's CPU operators
# served through the Python backend kit, docs/torch-cpu.md), label torch.
# Each is a skip (77) where /usr/bin/python3 cannot import torch (numpy for
# torch_planted).
add_test(NAME torch_campaign COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/torch_campaign.sh $<TARGET_FILE:parity>
         ${PROJECT_SOURCE_DIR}/kernels)
set_tests_properties(torch_campaign PROPERTIES LABELS torch SKIP_RETURN_CODE 77 TIMEOUT 900)
# A kit backend whose gemm realises another point than it declares: the
# campaign fails naming the point (red), and passes without the bug (green).
add_test(NAME torch_planted COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/torch_planted.sh $<TARGET_FILE:parity>)
set_tests_properties(torch_planted PROPERTIES LABELS torch SKIP_RETURN_CODE 77 TIMEOUT 300)
# The K blocks of torch's bf16 mm (gemm.mm_bf16) held by the exact reference
# through libparity.so: the declared tile at K = 200, 2048, 4096, not at
# K = 768, where supports() refuses (docs/torch-cpu.md).
add_test(NAME torch_kblocks COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/torch_kblocks.sh $<TARGET_FILE:parity_api>)
set_tests_properties(torch_kblocks PROPERTIES LABELS torch SKIP_RETURN_CODE 77 TIMEOUT 300)
