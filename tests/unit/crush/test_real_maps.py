"""generate (+ verify) on CRUSH maps that users and Ceph's own tests published.

Sources and shapes: tests/data/real-maps/README.md.  Every map is either
served (exit 0, and its own verify accepts it) or refused with exit 2 and one
line naming the reason; the expected reason is a stable substring of it.
"""

import json
from pathlib import Path

import pytest

from crush_rules.cli import main

MAPS = Path(__file__).resolve().parents[2] / "data" / "real-maps"

SERVED = "served"
# (map file, extra generate options, SERVED or a substring of the refusal)
CASES = [
    ("birkhoffxia-ceph.txt", [], "no 'ssd' devices under root default (classes there: hdd)"),
    ("ceph-check-overlapped-rules.txt", [], "does not compile"),
    ("ceph-choose-args-one-more-3.txt", [], "no 'hdd' devices under root default"),
    ("ceph-choose-args.txt", [], "pass --root with one of: root"),
    ("ceph-choose-args.txt", ["--root", "root"], "set-all-straw-buckets-to-straw2"),
    ("ceph-device-class.txt", ["--root", "root"], "are not straw2"),
    ("ceph-multitype-before.txt", ["--root", "cluster0"], "do nothing on list/straw/tree"),
    ("ceph-rules.txt", [], "hold hdd devices, fewer than --size 3"),
    ("ceph-rules.txt", ["--size", "2"], "only 1 host buckets under default hold hdd"),
    ("ceph-tree-template-final.txt", ["--root", "cluster0"], "do nothing on tree buckets"),
    ("galeksandrp-proxmox-ceph.txt", [], "no 'hdd' devices under root default"),
    ("jeffb-nova-confs.txt", [], "set-all-straw-buckets-to-straw2"),
    ("pcadmin-second-device-class.txt", [], "no 'ssd' devices under root default"),
    ("pcadmin-second-device-class.txt", ["--urgent-class", "hdd_rs", "--size", "2"], SERVED),
    ("pcadmin-stretch-mode.txt", [], "stretch maps are not supported"),
]


def test_every_map_in_the_corpus_has_a_case_and_a_source():
    files = {p.name for p in MAPS.glob("*.txt")}
    assert len(files) >= 8
    assert files == {c[0] for c in CASES}
    readme = (MAPS / "README.md").read_text()
    for name in files:
        assert f"`{name}`" in readme, name


@pytest.mark.parametrize(("name", "extra", "expected"), CASES,
                         ids=[f"{c[0]}{''.join(c[1])}" for c in CASES])
def test_generate_serves_or_refuses_with_the_reason(tmp_path, capsys, name, extra, expected):
    out, text = tmp_path / "out.bin", tmp_path / "out.txt"
    rc = main(["generate", "--in", str(MAPS / name), "--out", str(out), "--text", str(text),
               "--pool-id", "5", *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    if expected != SERVED:
        err = captured.err.strip()
        assert rc == 2, captured.out
        assert len(err.splitlines()) == 1 and expected in err, err
        assert "internal error" not in err
        assert not out.exists() and not text.exists()
        return
    assert rc == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["ok"] and summary["failures"] == []
    assert out.stat().st_mode & 0o777 == 0o644 and text.stat().st_mode & 0o777 == 0o644
    assert main(["verify", "--map", str(out), "--pool-id", "5", *extra]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rules"]["sla_shared"]["pgs_differing_from_isolated"] == 0
    assert report["isolated_normal_to_shared"]["replicas_moved"] == 0
    # the --text output is the same map (exact weights)
    assert main(["verify", "--map", str(text), "--pool-id", "5", *extra]) == 0
    capsys.readouterr()
