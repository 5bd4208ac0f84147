"""Speed of `kwshim check` against merely `ast.parse`-ing the same files (read from disk both).

    .venv/bin/python benchmarks/check_speed.py [PATH ...]   # default: the installed torch and triton

Prints the ratio check/parse (target: at most 1.5), median of interleaved rounds in one process.
"""

import ast
import os
import statistics
import sys
import time

from kwshim.tools.check import RESERVED_NAMES, _python_files, check_paths


def default_paths():
    paths = []
    for name in ("torch", "triton"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        paths.append(os.path.dirname(module.__file__))
    return paths


def parse_only(files):
    for path in files:
        with open(path, "rb") as handle:
            source = handle.read()
        try:
            ast.parse(source, filename=path)
        except (SyntaxError, ValueError):
            pass


def main():
    paths = sys.argv[1:] or default_paths()
    files = list(_python_files(paths))
    rounds = 5
    parse_times, check_times, ratios = [], [], []
    findings = 0
    for index in range(rounds):
        order = ("parse", "check") if index % 2 == 0 else ("check", "parse")
        times = {}
        for side in order:
            start = time.perf_counter()
            if side == "parse":
                parse_only(files)
            else:
                findings = len(check_paths(paths, RESERVED_NAMES))
            times[side] = time.perf_counter() - start
        parse_times.append(times["parse"])
        check_times.append(times["check"])
        ratios.append(times["check"] / times["parse"])
    print(f"{len(files)} files under {', '.join(paths)}; {findings} findings")
    print(f"ast.parse only {statistics.median(parse_times):.2f} s, "
          f"kwshim check {statistics.median(check_times):.2f} s, "
          f"median ratio check/parse = {statistics.median(ratios):.3f} ({rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
