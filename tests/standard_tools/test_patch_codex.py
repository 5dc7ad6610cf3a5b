"""apply_patch accepts what codex's own parser accepts (models are trained against it).

Heredoc wrappers, whitespace around markers, a first chunk without ``@@``, a bare empty context
line, a pure addition appended at the end of the file and the full Unicode folding set of the
last matching pass. Each case goes through the real tool and checks the bytes on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _file_tools_helpers import FileTools

from jupyter_codelia.standard_tools.patch._parse import parse_patch

E = "Error executing tool: "


@pytest.fixture
def tools(tmp_path: Path) -> FileTools:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\ngamma\n")
    return FileTools(root)


BODY = "*** Begin Patch\n*** Update File: a.txt\n@@\n-beta\n+BETA\n*** End Patch"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "wrapped",
    [
        f"<<'EOF'\n{BODY}\nEOF\n",
        f'<<"EOF"\n{BODY}\nEOF',
        f"<<EOF\n{BODY}\nEOF\n\n",
        f"\n  <<'EOF'  \n\n{BODY}\n\n  EOF\n",
        f"apply_patch <<'EOF'\n{BODY}\nEOF\n",
    ],
)
async def test_heredoc_wrapper_is_unwrapped(tools: FileTools, wrapped: str) -> None:
    result = await tools.json("apply_patch", patch=wrapped)
    assert result["summary"] == "Applied patch to 1 file(s)"
    assert (tools.root / "a.txt").read_text() == "alpha\nBETA\ngamma\n"


@pytest.mark.asyncio
async def test_markers_with_surrounding_whitespace(tools: FileTools) -> None:
    (tools.root / "gone.txt").write_text("bye\n")
    (tools.root / "old.txt").write_text("one\ntwo\n")
    patch = "\n".join(
        [
            "   *** Begin Patch  ",
            "\t*** Add File: new.txt   ",
            "+fresh",
            "  *** Delete File: gone.txt\t",
            "  *** Update File: old.txt ",
            "  *** Move to: moved.txt  ",
            "@@",
            " one",
            "-two",
            "+TWO",
            "   *** End of File   ",
            " *** Update File: a.txt  ",
            "@@ alpha",
            "-beta",
            "+BETA",
            "\t*** End Patch   ",
        ]
    )
    result = await tools.json("apply_patch", patch=patch)
    assert [f["summary"] for f in result["files"]] == [
        "A new.txt",
        "D gone.txt",
        "R old.txt -> moved.txt",
        "M a.txt",
    ]
    root = tools.root
    assert (root / "new.txt").read_text() == "fresh\n"
    assert not (root / "gone.txt").exists() and not (root / "old.txt").exists()
    assert (root / "moved.txt").read_text() == "one\nTWO\n"
    assert (root / "a.txt").read_text() == "alpha\nBETA\ngamma\n"


@pytest.mark.asyncio
async def test_a_context_line_that_reads_like_a_marker_stays_context(tools: FileTools) -> None:
    """' ' + exact marker text is the context form of a file line that reads like a marker."""
    doc = tools.root / "doc.md"
    doc.write_text("*** Begin Patch\n*** End of File\n*** End Patch\nafter\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: doc.md",
            "@@",
            " *** End of File",
            " *** End Patch",
            "-after",
            "+AFTER",
            "*** End Patch",
        ]
    )
    await tools.json("apply_patch", patch=patch)
    assert doc.read_text() == "*** Begin Patch\n*** End of File\n*** End Patch\nAFTER\n"


@pytest.mark.asyncio
async def test_first_chunk_without_at_at_header(tools: FileTools) -> None:
    patch = "*** Begin Patch\n*** Update File: a.txt\n alpha\n-beta\n+B\n*** End Patch"
    await tools.json("apply_patch", patch=patch)
    assert (tools.root / "a.txt").read_text() == "alpha\nB\ngamma\n"
    second = "*** Begin Patch\n*** Update File: a.txt\n alpha\n-B\n+b\n-gamma\n*** End Patch"
    await tools.json("apply_patch", patch=second)
    assert (tools.root / "a.txt").read_text() == "alpha\nb\n"


@pytest.mark.asyncio
async def test_bare_empty_line_inside_a_chunk_is_empty_context(tools: FileTools) -> None:
    code = tools.root / "code.py"
    code.write_text("import os\n\n\ndef main():\n    return 1\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: code.py",
            "@@",
            " import os",
            "",
            "",
            " def main():",
            "-    return 1",
            "+    return 2",
            "",
            "",
            "*** End Patch",
        ]
    )
    sections = parse_patch(patch)
    assert sections[0].chunks[0].old == ["import os", "", "", "def main():", "    return 1"]
    await tools.json("apply_patch", patch=patch)
    assert code.read_text() == "import os\n\n\ndef main():\n    return 2\n"


@pytest.mark.asyncio
async def test_pure_addition_without_anchor_is_appended_at_the_end(tools: FileTools) -> None:
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n+delta\n+epsilon\n*** End Patch"
    result = await tools.json("apply_patch", patch=patch)
    assert (tools.root / "a.txt").read_text() == "alpha\nbeta\ngamma\ndelta\nepsilon\n"
    assert "@@ -3,0 +4,2 @@" in result["diff"] or "+delta\n+epsilon" in result["diff"]
    # With an anchor the lines go right below it; with no '@@' line at all, at the end too.
    anchored = "*** Begin Patch\n*** Update File: a.txt\n@@ alpha\n+after-alpha\n*** End Patch"
    await tools.json("apply_patch", patch=anchored)
    bare = "*** Begin Patch\n*** Update File: a.txt\n+zeta\n*** End Patch"
    await tools.json("apply_patch", patch=bare)
    assert (tools.root / "a.txt").read_text() == (
        "alpha\nafter-alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\n"
    )


@pytest.mark.asyncio
async def test_pure_addition_after_an_unterminated_last_line(tools: FileTools) -> None:
    (tools.root / "a.txt").write_text("alpha\nbeta")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n+gamma\n*** End Patch"
    await tools.json("apply_patch", patch=patch)
    # codex ends a result with a newline: the added line is a whole line.
    assert (tools.root / "a.txt").read_text() == "alpha\nbeta\ngamma\n"


FOLDED = {
    "-": "\u2010\u2011\u2012\u2013\u2014\u2015\u2212",
    "'": "\u2018\u2019\u201a\u201b",
    '"': "\u201c\u201d\u201e\u201f",
    " ": "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000",
}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("ascii_char", "fancy"), [(a, f) for a, chars in FOLDED.items() for f in chars]
)
async def test_unicode_folding_covers_every_dash_quote_and_space(
    tools: FileTools, ascii_char: str, fancy: str
) -> None:
    target = tools.root / "u.txt"
    target.write_text(f"x{fancy}y = 1\nkeep\n")
    patch = (
        "*** Begin Patch\n*** Update File: u.txt\n@@\n"
        f"-x{ascii_char}y = 1\n+z = 2\n keep\n*** End Patch"
    )
    await tools.json("apply_patch", patch=patch)
    assert target.read_text() == "z = 2\nkeep\n"
