"""The pytest plugin of parity: registered by the package's entry point
(pytest11) when installed, or with `-p parity.pytest_plugin` /
`pytest_plugins = ["parity.pytest_plugin"]` in a conftest.py.

    def test_my_kernel(parity_bits):
        parity_bits(my_kernel(a, b), point='{ tree = "split(4, seq, pairwise)" }', a=a, b=b)

A mismatch fails the test with the verdict `parity check` prints (rows
that differ, first and worst mismatch with both bit patterns, the ulp
histogram), shown once, as the failure; a pass leaves the verdict in a
"parity verdict" section of the report (pytest -rP shows it).
"""

import pytest

import parity


def pytest_report_header(config):
    return "parity %s (libparity.so C ABI %d)" % (parity.version, parity._lib.API_VERSION)


@pytest.fixture
def parity_bits(request):
    """assert_bits with the verdict attached to the test's report."""
    def check(actual, *, point, a, b=None, name="actual", engine="fast"):
        __tracebackhide__ = True
        failed = None
        try:
            text = parity.assert_bits(actual, point=point, a=a, b=b, name=name, engine=engine)
        except AssertionError as e:
            failed = str(e)
        if failed is not None:
            # outside the except block: the verdict once, not chained to the
            # AssertionError it came from; the section is the report's copy
            pytest.fail(failed, pytrace=False)
        request.node.add_report_section("call", "parity verdict", text)
        return text
    return check
