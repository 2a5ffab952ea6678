"""Every `python -m harness` line of the README's bash blocks runs, with the exit status the README documents for a
machine without a GPU.

Lines run in this process (harness.cli.main), from the repository root, verbatim except for where they write:
  - `--out FILE`, `--png FILE`, `--junit FILE` and `--kernels DIR` are redirected to the same name in a temporary
    folder (a `--kernels DIR` is first built there by the README's `compile ... --out DIR` line), and a `sweep` or
    `probe` line without `--out` gets `--out TMP/<command>.jsonl` (the README's default, results/scratch/ under the
    current folder, is checked by name only);
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
from harness.enums import ExitCode

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FILTERS = ("--family", "--kind", "--n", "--a-src", "--cta-group", "--dtype", "--data", "--match")


def command_lines() -> list[str]:
    """Every line of a ```bash block that starts with `python -m harness` (continuations joined)."""
    lines, block = [], None
    for raw in README.read_text().splitlines():
        if raw.startswith("```"):
            block = [] if raw.strip() == "```bash" and block is None else None
            continue
        if block is None:
            continue
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + " " + raw.strip()
        elif raw.startswith("python -m harness"):
            lines.append(raw.strip())
    return lines


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


def adapt(argv: list[str], tmp: Path) -> list[str]:
    out = list(argv)
    if "--kernels" in out:
        i = out.index("--kernels") + 1
        kernel_folder_for(out[i], tmp)
        out[i] = str(tmp / Path(out[i]).name)
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


def test_the_commands_section_has_a_line_for_every_command():
    cmds = {split(line)[0][0] for line in LINES}
    assert cmds >= {"sweep", "compile", "doctor", "toolchains", "compare", "merge", "junit", "probe", "desc", "idesc", "zmask",
                    "layout", "--version"}


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
    rc = cli.main(adapt(argv, tmp_path))
    out = capsys.readouterr()
    assert rc == expected(argv, comment), (line, rc, out.err[-2000:])
    assert "Traceback" not in out.err


def test_the_default_results_folder_is_documented():
    text = README.read_text()
    assert f"`{cli.DEFAULT_RESULTS_DIR}/` under the current folder" in text


def test_ci_runs_exactly_the_readmes_test_command():
    text = README.read_text()
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    test_command = first_block[1].split("  #", 1)[0].strip()
    assert "pytest" in test_command
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith(("#", "set ", "cd "))]
    exports = [ln.split()[1] for ln in ci if ln.startswith("export ")]
    # before the command, only what the README says CI does first (upgrading pip and setuptools), and nothing after it
    before = [ln for ln in ci if not ln.startswith("export ")]
    assert ci[-1] == test_command and all(f"`{ln}`" in text for ln in before[:-1]), ci
    for setting in exports:  # what CI sets around the command, the README says (`PIP_COMPILE=0`)
        assert f"`{setting}`" in text, setting
