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
