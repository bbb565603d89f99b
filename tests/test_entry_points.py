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
