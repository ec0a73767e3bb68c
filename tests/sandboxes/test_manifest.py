import pytest

from sandboxes.manifest import ManifestError, load_manifest
from sandboxes.registry import discover, select

GOOD = """
[sandbox]
name = "tiny"
kind = "web"
[start]
command = ["{python}", "-m", "http.server", "{port}"]
[state]
kind = "files"
[[sensitive]]
kind = "delete"
name = "Delete( all)?"
"""


def test_shipped_sandboxes_load():
    found, errors = discover()
    assert {"shop", "mail"} <= {m.name for m in found}
    assert not errors


def test_broken_toml_is_one_clear_error(tmp_path):
    (tmp_path / "sandbox.toml").write_text("[sandbox\nname = 'x'")
    with pytest.raises(ManifestError) as err:
        load_manifest(tmp_path)
    assert "not valid TOML" in str(err.value) and "sandbox.toml" in str(err.value)


def test_missing_and_wrong_keys_are_named(tmp_path):
    (tmp_path / "sandbox.toml").write_text('[sandbox]\nname = "Bad Name"\nkind = "tv"\n[state]\nkind = "sqlite"\n')
    with pytest.raises(ManifestError) as err:
        load_manifest(tmp_path)
    msg = str(err.value)
    assert "sandbox.name" in msg and "sandbox.kind" in msg and "start" in msg and "sandbox.example.toml" in msg


def test_sensitive_controls_match_by_visible_name(tmp_path):
    (tmp_path / "sandbox.toml").write_text(GOOD)
    m = load_manifest(tmp_path)
    assert m.sensitive_kind("Delete all") == "delete"
    assert m.sensitive_kind("delete") == "delete"
    assert m.sensitive_kind("Deleted items") is None


def test_unknown_sandbox_name_suggests_close_ones():
    chosen, problems = select(["shopp"])
    assert not chosen and "did you mean shop" in str(problems[0])


def test_a_broken_manifest_does_not_hide_the_good_ones(tmp_path):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "sandbox.toml").write_text(GOOD)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "sandbox.toml").write_text("nope = ")
    found, errors = discover(tmp_path)
    assert [m.name for m in found] == ["tiny"] and list(errors) == ["bad"]
