"""The command line a kernel engineer types: values out, one clear line and exit 2 for bad input."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from harness import cli, registry
from harness.spec import layouts
from tests.cli_in_process import run

pytestmark = pytest.mark.spread  # no module-scoped fixture: under pytest -n, each test on any free worker


def test_desc_encode_and_decode_agree():
    out = run("desc", "--arch", "sm_90a", "--start", "1024", "--lbo", "16", "--sbo", "1024", "--swizzle", "128B",
              "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["value"] == "0x4000004000010040"
    back = json.loads(run("desc", "--arch", "sm_90a", "--decode", info["value"], "--json").stdout)
    assert back["fields"] == info["fields"]


def test_desc_tcgen05_absolute_mode():
    out = run("desc", "--arch", "sm_103a", "--start", "1024", "--lbo", "4096", "--sbo", "1024", "--swizzle",
              "128B", "--lbo-mode", "absolute", "--json")
    info = json.loads(out.stdout)
    assert info["fields"]["lbo_mode"] == "absolute" and info["fields"]["leading_byte_address"] == 4096


def test_decode_with_problems_exits_1_and_says_why():
    out = run("desc", "--arch", "sm_100a", "--decode", "0x7000000000000000")
    assert out.returncode == 1
    assert "swizzle code 3 is invalid" in out.stdout and "0b001" in out.stdout


def test_idesc_round_trip():
    out = run("idesc", "--kind", "f16", "--atype", "bf16", "--btype", "bf16", "--dtype", "f32", "--m", "128",
              "--n", "256", "--transpose-b", "--json")
    info = json.loads(out.stdout)
    back = json.loads(run("idesc", "--kind", "f16", "--decode", info["value"], "--json").stdout)
    assert back["fields"]["n"] == 256 and back["fields"]["transpose_b"] is True and back["fields"]["atype"] == "bf16"


def test_layout_json_addresses_match_the_model():
    out = run("layout", "--major", "MN", "--swizzle", "64B", "--dtype", "bf16", "--rows", "64", "--cols", "16",
              "--lbo", "512", "--sbo", "1024", "--json")
    info = json.loads(out.stdout)
    want = layouts.smem_address(layouts.SmemLayout("MN", "64B", "bf16", 64, 16, 512, 1024))
    assert np.array_equal(np.array(info["address"]), want)
    assert len(info["address"]) == 64 and len(info["address"][0]) == 16


def test_layout_picture():
    out = run("layout", "--major", "K", "--swizzle", "128B", "--dtype", "f16", "--rows", "8", "--cols", "64",
              "--lbo", "16", "--sbo", "1024")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert lines[3].split()[1:9] == ["0"] * 8 and lines[4].split()[1] == "9"  # row 1 starts in chunk 8^1


def test_zmask():
    out = run("zmask", "--m", "128", "--n", "16", "--skip-span", "2", "--use-span", "3", "--json")
    assert json.loads(out.stdout)["mask_lsb_first"] == "0000111000011100"


@pytest.mark.parametrize("args,msg", [
    (["desc", "--arch", "sm_80", "--decode", "0"], "invalid choice"),
    (["desc", "--arch", "sm_90a", "--start", "0"], "give --lbo, --sbo"),
    (["desc", "--arch", "sm_90a", "--decode", "zz"], "is not an integer"),
    (["idesc", "--kind", "f99", "--decode", "0"], "invalid choice"),
    (["layout", "--major", "K", "--swizzle", "32B", "--dtype", "tf32", "--rows", "16", "--cols", "16", "--lbo",
      "16", "--sbo", "256"], "64 bytes wide along K"),
    (["layout", "--major", "K", "--swizzle", "none", "--dtype", "f12", "--rows", "8", "--cols", "8", "--lbo",
      "16", "--sbo", "256"], "unknown element type"),
    (["sweep", "--n", "12"], "--n 12: no case of the selected families has it (they have 8, 16, 24, 32, ..., 248, 256)"),
    (["sweep", "--family", "f64"], "invalid choice"),
    (["sweep", "--gpus", "0,x"], "use 'all', device indices such as 0 or 0,1, or count:N"),
    (["sweep", "--shard", "4/4"], "need 0 <= I < N"),
    (["sweep", "--shard", "half"], "write I/N"),
    (["sweep", "--resume", "--out", "results/2026-11-23-h100-sp-seq/sweep-sp.jsonl.gz"],
     "results are written as plain JSON Lines; write sweep-sp.jsonl and gzip it"),  # resume must not cut a .gz
    (["merge", "a.jsonl", "--out", "m.jsonl.gz"], "results are written as plain JSON Lines"),
    (["nonsense"], "invalid choice"),
    ([], "give a command"),
])
def test_bad_input_is_one_line_and_exit_2(args, msg):
    out = run(*args)
    assert out.returncode == 2
    assert msg in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr


IDESC = ["idesc", "--atype", "f16", "--btype", "f16", "--dtype", "f32"]


@pytest.mark.parametrize("args,rule", [
    (["desc", "--arch", "sm_90a", "--start", "8", "--lbo", "16", "--sbo", "16"], "not 16-byte aligned"),
    (["desc", "--arch", "sm_100a", "--start", "1024", "--lbo", "4096", "--sbo", "1024", "--swizzle", "128B",
      "--lbo-mode", "absolute"], "sm_103a only"),
    (["desc", "--arch", "sm_103a", "--start", "1024", "--lbo", "4096", "--sbo", "1024", "--swizzle", "64B",
      "--lbo-mode", "absolute"], "only 128B swizzle"),
    (IDESC + ["--kind", "f16", "--m", "128", "--n", "250"], "N = 250 is not legal"),
    (["idesc", "--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "128", "--n", "40"], "N = 40 is not legal"),
    (["idesc", "--kind", "i8", "--atype", "s8", "--btype", "s8", "--m", "256", "--n", "48", "--cta-group", "2"],
     "N = 48 is not legal"),
    (["idesc", "--kind", "f8f6f4", "--atype", "e4m3", "--btype", "e4m3", "--m", "128", "--n", "24",
      "--transpose-b"], "B is MN-major"),
    (["idesc", "--kind", "mxf4nvf4", "--atype", "e2m1", "--btype", "e2m1", "--m", "128", "--n", "128",
      "--scale-type", "ue4m3", "--a-sf-id", "2"], "scale_vec::4X"),
    (["idesc", "--kind", "mxf4nvf4", "--atype", "e2m1", "--btype", "e2m1", "--m", "128", "--n", "128", "--k96",
      "--arch", "sm_100a"], "sm_103a shape"),
    (["idesc", "--kind", "mxf4nvf4", "--atype", "e2m1", "--btype", "e2m1", "--m", "128", "--n", "128", "--k96",
      "--transpose-a"], "K-major A and B"),
    (IDESC + ["--kind", "f16", "--m", "64", "--n", "128", "--max-shift", "2"], "applies to .ws only"),
])
def test_illegal_values_exit_1_with_the_rule(args, rule):
    out = run(*args)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"problem: " in out.stdout and rule in out.stdout, out.stdout
    info = json.loads(run(*args, "--json").stdout)
    assert any(rule in p for p in info["problems"])


@pytest.mark.parametrize("args", [
    IDESC + ["--kind", "f16", "--m", m, "--n", "128", "--ws", "--max-shift", "3"] for m in ("32", "64", "128")
] + [
    ["idesc", "--kind", "i8", "--atype", "u8", "--btype", "s8", "--m", "128", "--n", "24"],
    ["idesc", "--kind", "mxf4", "--atype", "e2m1", "--btype", "e2m1", "--m", "128", "--n", "64", "--cta-group", "2"],
    ["idesc", "--kind", "mxf4nvf4", "--atype", "e2m1", "--btype", "e2m1", "--m", "256", "--n", "128", "--k96",
     "--cta-group", "2", "--arch", "sm_103a", "--scale-type", "ue4m3"],
    ["desc", "--arch", "sm_103a", "--start", "1024", "--lbo", "4096", "--sbo", "1024", "--swizzle", "128B",
     "--lbo-mode", "absolute"],
])
def test_legal_values_exit_0_without_a_problem_line(args):
    out = run(*args)
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert "problem:" not in out.stdout and "(no spec violations)" in out.stdout


def test_decode_of_a_ws_descriptor_uses_the_given_ws():
    v = json.loads(run(*IDESC, "--kind", "f16", "--m", "64", "--n", "128", "--ws", "--max-shift", "1",
                       "--json").stdout)["value"]
    assert run("idesc", "--kind", "f16", "--decode", v, "--ws").returncode == 0
    out = run("idesc", "--kind", "f16", "--decode", v)  # without --ws: M = 64 reads as the non-.ws form
    assert out.returncode == 1 and "applies to .ws only" in out.stdout


def test_main_is_importable_without_a_gpu():
    assert cli.main(["desc", "--arch", "sm_90a", "--decode", "0"]) == 0


def test_what_the_command_line_prints_reaches_a_pipe_before_the_process_leaves():
    """The process leaves without the interpreter's teardown (cli.entry): what it printed into a pipe's buffer is
    flushed first. Block-buffered as on a fleet node's CI runner (this project's machines set PYTHONUNBUFFERED)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    out = subprocess.run([sys.executable, "-m", "harness", "desc", "--arch", "sm_90a", "--decode", "0x4000004000010040",
                          "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["fields"]["swizzle"] == "128B"
    bad = subprocess.run([sys.executable, "-m", "harness", "desc", "--arch", "sm_91a", "--decode", "0"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and "sm_91a" in bad.stderr


def test_output_the_command_line_could_not_write_is_not_an_exit_0(tmp_path):
    """A full disk under stdout: Python's own exit says 120; the command line's fast exit says so too."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "harness", "desc", "--arch", "sm_90a", "--decode", "0", "--json"],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    assert out.returncode == 120 and "stdout" in out.stderr and len(out.stderr.splitlines()) == 1


def test_every_command_of_every_group_is_listed_once():
    """The command groups (harness/cli/*.py) each add their own commands; cli.COMMANDS orders them for --help. A
    command a group adds that the list leaves out would be no command at all, and two groups adding one name would
    leave one of them unreachable."""
    names = [name for group in cli.GROUPS for name in group.PARSERS]
    assert len(names) == len(set(names)) and sorted(names) == sorted(cli.COMMANDS)
    assert list(cli.build_parser()._subparsers._group_actions[0].choices) == list(cli.COMMANDS)


def test_the_parser_is_built_once_for_each_set_of_families(monkeypatch, capsys):
    """main() reuses the parser (argparse took ~10 ms a build, ~1,000 builds a test session), but a family added by
    TC_HARNESS_FAMILIES since is still a --family choice."""
    monkeypatch.delenv(registry.EXTRA, raising=False)
    assert cli.build_parser() is cli.build_parser()
    assert cli.main(["compile", "--family", "toy", "--out", "x", "--no-such-flag"]) == 2
    assert "invalid choice: 'toy'" in capsys.readouterr().err
    monkeypatch.setenv(registry.EXTRA, "toy=tests.simulated.toy_family")
    assert cli.main(["compile", "--family", "toy", "--out", "x", "--no-such-flag"]) == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    assert "toy" in cli.build_parser()._subparsers._group_actions[0].choices["sweep"]._option_string_actions[
        "--family"].choices
