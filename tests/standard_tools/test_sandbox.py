"""The path sandbox of the file tools: escapes refused, inside paths allowed, full-access."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from _file_tools_helpers import FileTools

from jupyter_codelia.standard_tools._sandbox import SANDBOX_KEY, Sandbox, SecurityError
from jupyter_codelia.tools import ToolContext


@pytest.fixture
def sandbox_layout(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): a sandbox root with symlinks of every kind, and a directory outside it."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (root / "a.txt").write_text("inside\n")
    (root / "sub" / "b.txt").write_text("inside b\n")
    (root / "..foo").write_text("dots\n")
    os.symlink(outside, root / "link_out")
    os.symlink(outside / "secret.txt", root / "link_file")
    os.symlink("../../outside", root / "sub" / "link_up")
    os.symlink("../outside/secret.txt", root / "link_rel_escape")
    os.symlink(root / "sub", root / "link_in")
    os.symlink("link_out", root / "link_chain")
    os.symlink("/", root / "link_root")
    os.symlink(tmp_path / "nowhere" / "file.txt", root / "dangling_out")
    os.symlink("a.txt", root / "link_to_a")
    (tmp_path / "root-evil").mkdir()
    (tmp_path / "root-evil" / "x.txt").write_text("evil\n")
    return root, outside


def escape_attempts(root: Path, outside: Path) -> list[str]:
    return [
        "../outside/secret.txt",
        "../../etc/passwd",
        "/etc/passwd",
        str(outside / "secret.txt"),
        "sub/../../outside",
        "./../outside",
        "sub/./../../x",
        "..",
        "~",
        "~/x",
        "~root/.bashrc",
        "link_out/secret.txt",
        "link_out",
        "link_file",
        "sub/link_up/secret.txt",
        "link_rel_escape",
        "a\x00b",
        "secret.txt\x00.png",
        "x" * 5000,
        "a/" + "b" * 300,
        "/",
        "//etc/passwd",
        str(root) + "/../outside",
        str(root) + "-evil/x.txt",
        "../root-evil/x.txt",
        "link_chain/secret.txt",
        "sub/../link_out/secret.txt",
        "link_root/etc/passwd",
        "dangling_out",
        "newdir/../../outside/new.txt",
        "link_out/new_file.txt",
        "../outside\n",
        "sub//..//..//outside",
        "sub/deep/../../../outside/secret.txt",
        str(outside),
    ]


def test_at_least_thirty_escape_attempts_are_all_refused(
    sandbox_layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, outside = sandbox_layout
    monkeypatch.setenv("HOME", str(outside))
    sandbox = Sandbox(root)
    attempts = escape_attempts(root, outside)
    assert len(attempts) >= 30
    for target in attempts:
        with pytest.raises(SecurityError, match=r"^Path escapes sandbox: ") as caught:
            sandbox.resolve(target)
        assert " -> " in str(caught.value), target


def test_escapes_from_a_working_directory_below_the_root(
    sandbox_layout: tuple[Path, Path],
) -> None:
    root, _ = sandbox_layout
    sandbox = Sandbox(root, working_dir="sub")
    assert sandbox.working_dir == root / "sub"
    assert sandbox.resolve("b.txt") == root / "sub" / "b.txt"
    assert sandbox.resolve("../a.txt") == root / "a.txt"
    with pytest.raises(SecurityError, match=r"Path escapes sandbox: \.\./\.\./outside"):
        sandbox.resolve("../../outside")


def test_error_text_names_target_and_resolved_path(sandbox_layout: tuple[Path, Path]) -> None:
    root, outside = sandbox_layout
    sandbox = Sandbox(root)
    with pytest.raises(SecurityError) as caught:
        sandbox.resolve("../outside/secret.txt")
    assert str(caught.value) == (
        f"Path escapes sandbox: ../outside/secret.txt -> {outside / 'secret.txt'}"
    )
    with pytest.raises(SecurityError) as caught:
        sandbox.resolve("link_out/secret.txt")
    assert str(caught.value) == (
        f"Path escapes sandbox: link_out/secret.txt -> {outside / 'secret.txt'} (through a symlink)"
    )
    with pytest.raises(SecurityError) as caught:
        sandbox.resolve("a\x00b")
    assert str(caught.value) == (
        "Path escapes sandbox: a\\x00b -> refused: the path contains a NUL byte"
    )
    with pytest.raises(SecurityError) as caught:
        sandbox.resolve("y" * 5000)
    assert "refused: the path is 5000 bytes long (limit 4096)" in str(caught.value)
    assert "...(5000 chars)" in str(caught.value)
    with pytest.raises(SecurityError) as caught:
        sandbox.resolve("d/" + "z" * 256)
    assert "refused: a path component is 256 bytes long (limit 255)" in str(caught.value)


def test_paths_inside_are_allowed(
    sandbox_layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = sandbox_layout
    monkeypatch.setenv("HOME", str(root / "sub"))
    sandbox = Sandbox(root)
    assert sandbox.resolve("a.txt") == root / "a.txt"
    assert sandbox.resolve("./sub/../a.txt") == root / "a.txt"
    assert sandbox.resolve(str(root / "sub" / "b.txt")) == root / "sub" / "b.txt"
    assert sandbox.resolve("") == root
    assert sandbox.resolve(".") == root
    assert sandbox.resolve(str(root)) == root
    # a name that merely starts with '..' is an ordinary entry (the reference refused it)
    assert sandbox.resolve("..foo") == root / "..foo"
    # symlinks that stay inside are fine, and the link itself is returned (not its target)
    assert sandbox.resolve("link_in/b.txt") == root / "link_in" / "b.txt"
    assert sandbox.resolve("link_to_a") == root / "link_to_a"
    # '~' expands like a shell would, and is allowed when home is inside the sandbox
    assert sandbox.resolve("~/b.txt") == root / "sub" / "b.txt"
    assert sandbox.resolve("new/dir/file.txt") == root / "new" / "dir" / "file.txt"


def test_full_access_lifts_the_guard(sandbox_layout: tuple[Path, Path]) -> None:
    root, outside = sandbox_layout
    sandbox = Sandbox(root, approval_mode="full-access")
    assert sandbox.resolve("../outside/secret.txt") == outside / "secret.txt"
    assert sandbox.resolve("link_out/secret.txt") == root / "link_out" / "secret.txt"
    assert sandbox.resolve("/etc/passwd") == Path("/etc/passwd")
    with pytest.raises(SecurityError, match="NUL byte"):
        sandbox.resolve("a\x00b")  # not a path on any OS, whatever the mode


@pytest.mark.asyncio
async def test_full_access_tools_read_outside(sandbox_layout: tuple[Path, Path]) -> None:
    root, _ = sandbox_layout
    tools = FileTools(root, approval_mode="full-access")
    text = await tools.text("read", file_path="../outside/secret.txt")
    assert text.startswith("    1  top secret\n")


def test_sandbox_construction(tmp_path: Path) -> None:
    root = tmp_path / "made" / "on" / "demand"
    sandbox = Sandbox(root)
    assert root.is_dir()
    assert sandbox.root_dir == root
    assert sandbox.root == root
    assert sandbox.working_dir == root
    assert len(sandbox.session_id) == 8
    int(sandbox.session_id, 16)
    assert sandbox.approval_mode == "minimal"
    with pytest.raises(ValueError, match="approval_mode must be 'minimal', 'trusted' or "):
        Sandbox(root, approval_mode="yolo")  # type: ignore[arg-type]
    with pytest.raises(SecurityError, match="Path escapes sandbox"):
        Sandbox(root, working_dir=tmp_path)
    assert SANDBOX_KEY.id == "sandbox-context"


@pytest.mark.asyncio
async def test_sandbox_key_default_is_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    sandbox = await ToolContext().resolve(SANDBOX_KEY)
    assert sandbox.root_dir == tmp_path


@pytest.mark.asyncio
async def test_every_tool_refuses_escapes_and_touches_nothing(
    sandbox_layout: tuple[Path, Path],
) -> None:
    root, outside = sandbox_layout
    tools = FileTools(root)
    secret = outside / "secret.txt"
    prefix = "Error executing tool: Security error: SecurityError: Path escapes sandbox: "
    expected = f"{prefix}../outside/secret.txt -> {secret}"
    assert await tools.error("read", file_path="../outside/secret.txt") == expected
    assert await tools.error("read_line", file_path="../outside/secret.txt", line_number=1) == (
        expected
    )
    assert await tools.error("write", file_path="../outside/secret.txt", content="x") == expected
    assert (
        await tools.error(
            "edit", file_path="../outside/secret.txt", old_string="top", new_string="x"
        )
        == expected
    )
    assert await tools.error("view_image", file_path="../outside/secret.txt") == expected
    assert (await tools.error("grep", pattern="secret", path="../outside")).startswith(prefix)
    assert (await tools.error("glob", pattern="*", path="link_out")).startswith(prefix)
    assert (await tools.error("write", file_path="link_out/new.txt", content="x")).startswith(
        prefix
    )
    assert (await tools.error("write", file_path="dangling_out", content="x")).startswith(prefix)
    patch = "*** Begin Patch\n*** Delete File: link_file\n*** End Patch"
    assert await tools.error("apply_patch", patch=patch) == (
        f"Error executing tool: Path escapes sandbox: link_file -> {secret} (through a symlink)"
    )
    patch = "*** Begin Patch\n*** Add File: ../outside/new.txt\n+x\n*** End Patch"
    assert (await tools.error("apply_patch", patch=patch)).startswith(
        "Error executing tool: Path escapes sandbox: ../outside/new.txt -> "
    )
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../outside/moved.txt\n"
        "@@\n-inside\n+moved\n*** End Patch"
    )
    assert (await tools.error("apply_patch", patch=patch)).startswith(
        "Error executing tool: Path escapes sandbox: ../outside/moved.txt -> "
    )
    assert secret.read_text() == "top secret\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (tmp := outside.parent / "nowhere").exists(), tmp
    assert (root / "a.txt").read_text() == "inside\n"


@pytest.mark.asyncio
async def test_grep_does_not_follow_symlinks_out_of_the_sandbox(
    sandbox_layout: tuple[Path, Path],
) -> None:
    root, _ = sandbox_layout
    tools = FileTools(root)
    text = await tools.text("grep", pattern="secret|evil")
    assert text.startswith("No matches"), text
    listing = await tools.text("glob", pattern="*.txt")
    assert "secret" not in listing
    assert "a.txt" in listing.splitlines()


@pytest.mark.asyncio
async def test_context_override_replaces_the_sandbox(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "only_here.txt").write_text("second sandbox\n")
    tools = FileTools(first)
    other = Sandbox(second)
    ctx = ToolContext(overrides={"sandbox-context": lambda: other})
    result = await tools.tools["read"].execute_raw(json.dumps({"file_path": "only_here.txt"}), ctx)
    assert result.text.startswith("    1  second sandbox")

    def broken() -> Sandbox:
        raise RuntimeError("no sandbox configured")

    ctx = ToolContext(overrides={"sandbox-context": broken})
    with pytest.raises(Exception, match=r"^Security error: RuntimeError: no sandbox configured$"):
        await tools.tools["read"].execute_raw(json.dumps({"file_path": "x"}), ctx)


def test_root_reached_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real_root"
    (real / "d").mkdir(parents=True)
    (real / "d" / "f.txt").write_text("x")
    link = tmp_path / "link_root"
    link.symlink_to(real)
    sandbox = Sandbox(link)
    assert sandbox.resolve("d/f.txt") == link / "d" / "f.txt"
    assert sandbox.resolve(str(real / "d" / "f.txt")) == real / "d" / "f.txt"
    with pytest.raises(SecurityError, match="Path escapes sandbox"):
        sandbox.resolve(str(tmp_path))


@pytest.mark.asyncio
async def test_search_results_are_relative_to_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("marker = 1\n")
    (tmp_path / "docs" / "d.md").write_text("marker here\n")
    tools = FileTools(tmp_path)
    tools.sandbox.working_dir = tmp_path / "pkg"
    text = await tools.text("grep", pattern="marker", path="..")
    assert sorted(text.splitlines()[:2]) == ["../docs/d.md:1: marker here", "m.py:1: marker = 1"]
    assert (await tools.text("read", file_path="../docs/d.md")).startswith("    1  marker here")


def test_file_tools_family_and_schemas(tmp_path: Path) -> None:
    tools = FileTools(tmp_path).tools
    assert list(tools) == [
        "read",
        "read_line",
        "write",
        "edit",
        "apply_patch",
        "grep",
        "glob",
        "view_image",
    ]
    required = {
        "read": ["file_path"],
        "read_line": ["file_path", "line_number"],
        "write": ["file_path", "content"],
        "edit": ["file_path", "old_string", "new_string"],
        "apply_patch": ["patch"],
        "grep": ["pattern"],
        "glob": ["pattern"],
        "view_image": ["file_path"],
    }
    for name, tool in tools.items():
        schema = tool.definition.parameters
        jsonschema.Draft7Validator.check_schema(schema)
        assert schema["additionalProperties"] is False, name
        assert sorted(schema.get("required", [])) == sorted(required[name]), name
        assert tool.definition.description, name
    edit_modes = tools["edit"].definition.parameters["properties"]["match_mode"]["enum"]
    assert edit_modes == ["exact", "line_trimmed", "block_anchor", "auto"]
