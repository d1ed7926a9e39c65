"""Planning updates from file-system changes (real folders in a temp dir; hypothesis for the event paths)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_watch.plan import make_plan, plan_changes


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "a" / "b").mkdir(parents=True)
    (root / "c").mkdir()
    (root / "a" / "b" / "x.md").write_text("x")
    (root / "top.md").write_text("t")
    return root


def test_changes_map_to_their_nearest_existing_folder(tmp_path: Path) -> None:
    root = tree(tmp_path)
    plan, lost = plan_changes([str(root / "a" / "b" / "x.md"), str(root / "c" / "gone" / "deep" / "y.md")], [root], [])
    assert plan.folders == (root / "a" / "b", root / "c") and not lost


def test_a_folder_covers_its_subfolders_and_the_root_itself(tmp_path: Path) -> None:
    root = tree(tmp_path)
    plan, _ = plan_changes([str(root / "top.md"), str(root / "a" / "b" / "x.md"), str(root)], [root], [])
    assert plan.folders == (root,)


def test_outside_paths_and_the_kb_folder_are_ignored(tmp_path: Path) -> None:
    root = tree(tmp_path)
    (root / ".kb").mkdir()
    plan, lost = plan_changes(
        [str(tmp_path / "other.md"), str(root / ".kb" / "kb.sqlite3")], [root], [], skip=root / ".kb"
    )
    assert plan.empty and not lost


def test_a_watched_folder_that_is_gone_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "vanished"
    plan, lost = plan_changes([str(root / "a.md")], [root], [])
    assert plan.empty and lost == [root]


def test_watched_files_are_ingested_or_removed(tmp_path: Path) -> None:
    root = tree(tmp_path)
    kept, gone = root / "top.md", root / "old.md"
    plan, _ = plan_changes([str(kept), str(gone), str(root / "sibling.md")], [], [kept, gone])
    assert (plan.files, plan.gone_files, plan.folders) == ((kept,), (gone,), ())


def test_merge_keeps_both_plans_work(tmp_path: Path) -> None:
    root = tree(tmp_path)
    first = make_plan([root / "a" / "b"], [], [])
    second = make_plan([root / "c"], [root / "top.md"], [])
    assert first.merge(second) == make_plan([root / "a" / "b", root / "c"], [root / "top.md"], [])
    assert make_plan([root / "a"], [], []).merge(make_plan([root], [], [])).folders == (root,)


PARTS = st.lists(st.sampled_from(["a", "b", "c", "gone", "x.md", "top.md", "..", "new"]), min_size=0, max_size=5)


@settings(max_examples=200, deadline=None)
@given(st.lists(PARTS, max_size=8))
def test_every_planned_folder_exists_inside_the_root_and_none_nests(
    tmp_path_factory: object, paths: list[list[str]]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = tree(Path(folder))
        events = [str(root.joinpath(*parts)) for parts in paths]
        plan, lost = plan_changes(events, [root], [])
        assert not lost
        for chosen in plan.folders:
            assert chosen.is_dir() and (chosen == root or root in chosen.parents)
            assert not any(other in chosen.parents for other in plan.folders)
        inside = [Path(e) for e in events if Path(e) == root or root in Path(e).parents]
        for event in inside:  # every change inside the root is covered by some planned folder
            assert any(f == event or f in event.parents for f in plan.folders)
