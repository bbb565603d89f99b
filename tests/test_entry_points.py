import subprocess
import sys
import textwrap


def test_a_third_party_package_adds_a_labeler_through_its_entry_point(tmp_path):
    (tmp_path / "rc_plugin_demo.py").write_text(
        textwrap.dedent(
            '''
            from dataclasses import dataclass
            from realitycheck.labelers import Labeler, labeler

            @labeler("always_wrong")
            @dataclass(frozen=True, kw_only=True)
            class AlwaysWrong(Labeler):
                """Calls everything hallucinated."""

                def label(self, responses, examples):
                    return [self._label(r, True) for r in responses]
            '''
        )
    )
    dist = tmp_path / "rc_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rc-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[realitycheck.labelers]\ndemo = rc_plugin_demo\n")
    code = (
        "import realitycheck as rc; print(rc.labelers.names());"
        "print(rc.labelers.create('always_wrong').key)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
    )
    names, key = out.stdout.strip().splitlines()
    assert "'always_wrong'" in names and "'rouge_l'" in names
    assert key == "always_wrong"


def test_every_family_shares_one_entry_point_scan_per_process(monkeypatch):
    import importlib.metadata

    from realitycheck.registry import Registry, _discover

    calls = []
    real = importlib.metadata.entry_points

    def counting(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    _discover._scan.cache_clear()
    for family in ("datasets", "labelers", "detectors", "backends", "studies"):
        Registry(family, f"realitycheck.{family}").names()
    assert calls == [{}]
    _discover._scan.cache_clear()


def test_a_plugin_folder_put_on_sys_path_later_is_scanned(tmp_path, monkeypatch):
    from realitycheck.registry._discover import plugin_entry_points

    before = plugin_entry_points("labelers")
    dist = tmp_path / "rc_late_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rc-late-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[realitycheck.labelers]\nlate = rc_late_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    after = plugin_entry_points("labelers")
    assert [ep.value for ep in after if ep not in before] == ["rc_late_plugin"]
    assert plugin_entry_points("detectors") == tuple(
        ep for ep in importlib_metadata_entry_points("realitycheck.detectors")
    )


def importlib_metadata_entry_points(group):
    """The entry points of ``group``, read by importlib.metadata directly (the reference)."""
    import importlib.metadata

    return importlib.metadata.entry_points(group=group)
