"""Every `python -m harness` line of the bash blocks of README.md and docs/commands.md (which holds the rest of the
commands) runs, with the exit status the file documents for a machine without a GPU; the README's bash blocks hold
nothing else but its two commands, which CI runs (.ci/run).

Lines run in this process (harness.cli.main), from the repository root, verbatim except for where they write:
  - `--out FILE`, `--png FILE`, `--junit FILE` and `--kernels DIR` are redirected to the same name in a temporary
    folder (a `--kernels DIR` is first built there by the `compile ... --out DIR` line, and a file another line reads
    by the line that writes it with `--out`, as a reader would run them), and a `sweep` or `probe` line without
    `--out` gets `--out TMP/<command>.jsonl` (the README's default, results/scratch/ under the current folder, is
    checked by name only);
  - a `sweep` line with no selection filter gets `--family tcgen05 --kind f16 --cta-group 1` (three kernels), so
    the whole-sweep line stays quick on a CPU-only machine.
Expected status: the `exit N` a line's comment names, else 3 (nothing could run) for `sweep` and `probe`, else 0.
Without a GPU only; on a GPU machine the sweep and probe lines would really run and are skipped.
"""
import re
import shlex
from pathlib import Path

import pytest

from harness import cli
from harness.cli.common import DEFAULT_RESULTS_DIR
from harness.enums import ExitCode

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = (README, ROOT / "docs" / "commands.md")
FILTERS = ("--family", "--kind", "--n", "--a-src", "--cta-group", "--dtype", "--data", "--match")


def bash_lines(path: Path) -> list[str]:
    """Every line of the file's ```bash blocks (continuations joined)."""
    lines, block = [], None
    for raw in path.read_text().splitlines():
        if raw.startswith("```"):
            block = [] if raw.strip() == "```bash" and block is None else None
            continue
        if block is None:
            continue
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + " " + raw.strip()
        elif raw.strip():
            lines.append(raw.strip())
    return lines


def command_lines() -> list[str]:
    """Every line of a ```bash block that starts with `python -m harness` (continuations joined), of every file."""
    return [ln for path in DOCS for ln in bash_lines(path) if ln.startswith("python -m harness")]


LINES = command_lines()


def split(line: str) -> tuple[list[str], str]:
    """(argv after `python -m harness`, the comment)."""
    code, _, comment = line.partition("  #")
    words = shlex.split(code)
    assert words[:3] == ["python", "-m", "harness"], line
    return words[3:], comment


def kernel_folder_for(folder: str, tmp: Path) -> None:
    """`sweep --kernels DIR`: run the README's `compile ... --out DIR` line first, into `tmp`, as a reader would."""
    for line in LINES:
        argv, _ = split(line)
        if argv[0] == "compile" and argv[argv.index("--out") + 1] == folder:
            assert cli.main(adapt(argv, tmp)) == ExitCode.OK, line
            return
    raise AssertionError(f"no README line compiles the kernel folder {folder}")


def written_by(path: str, line: str) -> str | None:
    """The other line that writes `path` with `--out` (a file a later command reads), if any."""
    for other in LINES:
        argv, _ = split(other)
        if other != line and "--out" in argv and argv[argv.index("--out") + 1] == path:
            return other
    return None


def file_for(path: str, line: str, tmp: Path) -> str:
    """A path the line reads: where the line that writes it wrote it here, run first, else the path as it is."""
    writer = written_by(path, line)
    if writer is None:
        return path
    argv, comment = split(writer)
    assert cli.main(adapt(argv, tmp, writer)) == expected(argv, comment), writer
    return str(tmp / Path(path).name)


def adapt(argv: list[str], tmp: Path, line: str = "") -> list[str]:
    out = list(argv)
    if "--kernels" in out:
        i = out.index("--kernels") + 1
        kernel_folder_for(out[i], tmp)
        out[i] = str(tmp / Path(out[i]).name)
    writes = {out.index(flag) + 1 for flag in ("--out", "--png", "--junit", "--kernels") if flag in out}
    for i, word in enumerate(out):
        if i > 0 and i not in writes and not word.startswith("-"):
            out[i] = file_for(word, line, tmp)
    for flag in ("--out", "--png", "--junit"):
        if flag in out:
            i = out.index(flag) + 1
            out[i] = str(tmp / Path(out[i]).name)
    cmd = out[0] if out and not out[0].startswith("-") else None
    if cmd in ("sweep", "probe") and "--out" not in out:
        out += ["--out", str(tmp / f"{cmd}.jsonl")]
    if cmd == "sweep" and not any(f in out for f in FILTERS):
        out += ["--family", "tcgen05", "--kind", "f16", "--cta-group", "1"]
    return out


def expected(argv: list[str], comment: str) -> int:
    m = re.search(r"\bexit (\d)\b", comment)
    if m:
        return int(m.group(1))
    return ExitCode.NOTHING_RAN if argv and argv[0] in ("sweep", "probe") else ExitCode.OK


def test_there_is_a_line_for_every_command():
    cmds = {split(line)[0][0] for line in LINES}
    assert cmds >= {"sweep", "compile", "doctor", "toolchains", "compare", "merge", "junit", "report", "verdict",
                    "textfile", "bundle", "bench", "probe", "desc", "idesc", "zmask", "layout", "--version"}


def test_the_readmes_bash_blocks_hold_only_commands_a_test_runs():
    """Its `python -m harness` lines run here; its two commands (the first block) run in CI, as .ci/run's last lines."""
    lines = bash_lines(README)
    two = [ln.split("  #", 1)[0].strip() for ln in lines[:2]]
    others = [ln for ln in lines[2:] if not ln.startswith("python -m harness")]
    assert others == [] and all("pip install" in c and "python -m" in c for c in two), others


@pytest.mark.parametrize("line", LINES)
def test_every_line_is_pasteable(line):
    argv, _ = split(line)
    for word in argv:
        assert "..." not in word and not re.search(r"[|\[\]<>]", word), f"placeholder {word!r} in: {line}"
        assert not re.fullmatch(r"0x\.*", word)


@pytest.mark.parametrize("line", LINES)
def test_every_line_runs_with_its_documented_exit_status(line, tmp_path, monkeypatch, capsys):
    from harness.run import gpu
    argv, comment = split(line)
    if argv[0] in ("sweep", "probe") and gpu.device_count():
        pytest.skip("the documented status is for a machine without a GPU; here this would run the GPU")
    monkeypatch.chdir(ROOT)
    rc = cli.main(adapt(argv, tmp_path, line))
    out = capsys.readouterr()
    assert rc == expected(argv, comment), (line, rc, out.err[-2000:])
    assert "Traceback" not in out.err


def test_the_default_results_folder_is_documented():
    text = README.read_text()
    assert f"`{DEFAULT_RESULTS_DIR}/` under the current folder" in text


def test_ci_runs_exactly_the_readmes_test_command():
    text = README.read_text()
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    main_command, test_command = (ln.split("  #", 1)[0].strip() for ln in first_block[:2])
    assert "pytest" in test_command and "harness sweep" in main_command
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith(("#", "set ", "cd "))]
    exports = [ln.split()[1] for ln in ci if ln.startswith("export ")]
    # the README's test command last, and its main job before it (.ci/run runs both in a venv it keeps)
    assert ci[-1] == test_command, ci
    assert any(ln.startswith(main_command + " ") for ln in ci[:-1]), (main_command, ci)
    for setting in exports:  # what CI sets around the commands, the README says (`PIP_COMPILE=0`)
        assert f"`{setting}`" in text, setting
