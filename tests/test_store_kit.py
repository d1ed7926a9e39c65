"""The store kits' shared plumbing (kb_core.testing.store_kit): a kit whose factory is missing says which kit's
subclass needs it, and every handle a test opens is closed after it."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    ("module", "kit"),
    [
        ("kb_core.testing", "RecordStoreContract"),
        ("kb_core.testing.shared_store", "SharedStoreContract"),
        ("kb_core.testing.access_store", "AccessStoreContract"),
    ],
)
def test_a_kit_without_a_factory_names_itself(pytester: pytest.Pytester, module: str, kit: str) -> None:
    pytester.makepyfile(f"from {module} import {kit}\n\n\nclass TestMine({kit}):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-x", "-q")
    result.stdout.fnmatch_lines([f"*define a 'store_factory' fixture in your {kit} subclass*"])
    assert result.ret != 0


def test_every_handle_a_test_opens_is_closed_after_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from kb_core.testing.store_kit import StoreKit

        CLOSED = []


        class Handle:
            def __init__(self, ctx):
                self.folder = ctx.directory.name

            def close(self):
                CLOSED.append(self.folder)


        class TestKit(StoreKit):
            @pytest.fixture
            def store_factory(self):
                return Handle

            def test_opens(self, open_store):
                assert open_store().folder == "kb" and open_store(folder="other").folder == "other"
                assert CLOSED == []


        def test_after():
            assert CLOSED == ["kb", "other"]
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-q")
    result.assert_outcomes(passed=2)
