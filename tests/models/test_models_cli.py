"""`facecache models list|install|import` through the real command line entry point."""

import io
import json

from facecache.cli import main
from facecache.cli.models_cmd import ProgressBar
from facecache.models.catalog import DEFAULT_CATALOG
from facecache.models.download import Progress

from model_helpers import catalog_standin, crc32_hex


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_list_json_shows_every_model_not_installed(tmp_path, capsys):
    assert main(["models", "list", "--json", "--models-dir", str(tmp_path / "m")]) == 0
    data = _json(capsys)
    assert data["models_dir"] == str(tmp_path / "m")
    assert [m["name"] for m in data["models"]] == DEFAULT_CATALOG.names()
    row = {m["name"]: m for m in data["models"]}
    assert row["mtcnn"]["packs"] == ["default"] and row["mtcnn"]["kind"] == "detector"
    assert row["yoloface_8n"]["licence"] == "GPL-3.0"
    assert not any(m["installed"] for m in data["models"])
    assert data["packs"]["default"] == ["mtcnn", "face_mesh_468", "facenet_512"]


def test_install_json_then_list_shows_the_path(tmp_path, capsys, asset_server, monkeypatch):
    data = b"fake yolo" * 5000
    asset_server.add_release_file("models-3.0.0", "yoloface_8n.onnx", data)
    monkeypatch.setenv("FACECACHE_MODELS_URL", asset_server.base_url)
    monkeypatch.setenv("FACECACHE_MODELS", str(tmp_path / "m"))  # the folder from the environment
    assert main(["models", "install", "yoloface_8n", "--json"]) == 0
    [installed] = _json(capsys)["installed"]
    assert installed == {"name": "yoloface_8n", "downloaded": True,
                         "paths": {"model": str(tmp_path / "m" / "yoloface_8n.onnx")}}
    assert main(["models", "install", "yoloface_8n"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert main(["models", "list", "--json"]) == 0
    row = {m["name"]: m for m in _json(capsys)["models"]}["yoloface_8n"]
    assert row["installed"] and row["paths"] == {"model": str(tmp_path / "m" / "yoloface_8n.onnx")}
    assert row["location"] == "models folder"


def test_install_unknown_name_fails_with_a_hint(tmp_path, capsys):
    assert main(["models", "install", "nosuch", "--models-dir", str(tmp_path)]) == 2
    assert "facecache models list" in capsys.readouterr().err


def test_failed_download_exit_code_and_message(tmp_path, capsys, asset_server, monkeypatch):
    asset_server.add_release_file("models-3.0.0", "yoloface_8n.onnx", b"x" * 100, crc="12345678")
    monkeypatch.setenv("FACECACHE_MODELS_URL", asset_server.base_url)
    code = main(["models", "install", "yoloface_8n", "--models-dir", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2
    assert "crc32" in err and "12345678" in err and "deleted" in err
    assert "facecache models install yoloface_8n" in err


def test_import_json(tmp_path, capsys):
    assets = tmp_path / "ff" / ".assets" / "models"
    data = catalog_standin(assets / "scrfd_2.5g.onnx", "scrfd_2.5g").read_bytes()
    (assets / "scrfd_2.5g.hash").write_text(crc32_hex(data))
    assert main(["models", "import", str(tmp_path / "ff"), "--json", "--models-dir", str(tmp_path / "m")]) == 0
    report = _json(capsys)
    assert report["verified"] == ["scrfd_2.5g"] and report["folder"] == str(assets.resolve())
    assert report["refused"] == {}
    assert main(["models", "list", "--json", "--models-dir", str(tmp_path / "m")]) == 0
    listing = _json(capsys)
    assert listing["imported"] == [str(assets.resolve())]
    assert {m["name"]: m for m in listing["models"]}["scrfd_2.5g"]["installed"]


def test_list_text_is_a_table_with_headers_and_mentions_the_install_command(tmp_path, capsys):
    assert main(["models", "list", "--models-dir", str(tmp_path)]) == 0
    folder, header, *rows, hint = capsys.readouterr().out.splitlines()
    assert folder == f"models folder  {tmp_path}"
    assert header.split() == ["MODEL", "KIND", "INSTALLED", "LICENCE", "PACKS"]
    starts = [header.index(name) for name in header.split()]
    cells = {row.split()[0]: row.split() for row in rows}
    assert list(cells) == DEFAULT_CATALOG.names()  # no model has a file installed: a row each, nothing between
    for row in rows:  # one word a column, each under its header
        assert len(row.split()) == 5 and all(row[start] != " " and row[start - 1] == " " for start in starts[1:])
    assert cells["mtcnn"] == ["mtcnn", "detector", "no", "MIT", "default"]
    assert cells["yoloface_8n"][2:] == ["no", "GPL-3.0", "-"]
    assert "facecache models install NAME" in hint and "default=mtcnn" in hint


def test_list_text_shows_an_installed_model_with_its_files_under_it(tmp_path, capsys, asset_server, monkeypatch):
    asset_server.add_release_file("models-3.0.0", "yoloface_8n.onnx", b"fake yolo" * 5000)
    monkeypatch.setenv("FACECACHE_MODELS_URL", asset_server.base_url)
    assert main(["models", "install", "yoloface_8n", "--models-dir", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert main(["models", "list", "--models-dir", str(tmp_path / "m")]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("yoloface_8n "))
    assert lines[row].split()[2] == "yes"
    assert lines[row + 1] == f"      {tmp_path / 'm' / 'yoloface_8n.onnx'}"  # indented: not a row of the table


def test_progress_bar_draws_on_one_line():
    stream = io.StringIO()
    bar = ProgressBar(stream, width=10)
    bar(Progress("scrfd_2.5g.onnx", 0, 1000, model="scrfd_2.5g"))
    bar(Progress("scrfd_2.5g.onnx", 500, 1000, model="scrfd_2.5g"))
    bar.finish()
    text = stream.getvalue()
    assert "[#####.....]" in text and "scrfd_2.5g: scrfd_2.5g.onnx" in text and text.endswith("\n")
    assert text.count("\r") == 2


def test_import_lists_what_was_refused_and_why(tmp_path, capsys):
    assets = tmp_path / "ff"
    assets.mkdir()
    (assets / "scrfd_2.5g.onnx").write_text("not a model")
    (assets / "2dfan4.onnx").symlink_to("/etc/passwd")
    catalog_standin(assets / "yoloface_8n.onnx", "yoloface_8n")
    assert main(["models", "import", str(assets), "--models-dir", str(tmp_path / "m")]) == 1
    out = capsys.readouterr().out
    assert "refused (left as they are, not used):" in out
    assert "scrfd_2.5g.onnx: it is not a scrfd_2.5g model: it does not load as an ONNX model" in out
    assert "2dfan4.onnx: it is a symbolic link to /etc/passwd" in out
    assert "no sidecar, not checked: yoloface_8n" in out
