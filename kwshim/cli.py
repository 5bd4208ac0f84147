"""The ``kwshim`` command line: ``kwshim check PATH...``, ``kwshim doctor`` and
``kwshim run [--autotune POLICY] SCRIPT|-m MODULE [ARGS...]``.

Exit status: 0 clean, 1 findings (check) or a broken environment (doctor), 2 usage errors.
"""

import argparse
import json
import os
import sys

__all__ = ["main"]


def main(argv=None):
    from . import __version__
    from .check import CODES

    parser = argparse.ArgumentParser(prog="kwshim", description="kwshim's tools for Triton kernel authors")
    parser.add_argument("--version", action="version", version=f"kwshim {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="statically find kernels that need @kwsafe and misplaced @kwsafe",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Statically find kernels that need @kwsafe and misplaced @kwsafe (no Triton needed).",
        epilog="codes:\n" + "".join(f"  {code}  {meaning}\n" for code, meaning in CODES.items())
               + "exit status: 0 clean, 1 findings, 2 usage errors")
    check.add_argument("paths", nargs="+", metavar="PATH", help="Python files or directories (walked)")
    check.add_argument("--format", choices=("text", "json"), default="text")
    doctor = commands.add_parser("doctor", help="probe this environment's Triton interpreter")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    run = commands.add_parser(
        "run", help="run a script or module with the switch on (kwshim.activate)",
        usage="kwshim run [--autotune POLICY] [--rtol R] [--atol A] [--no-equal-nan] (SCRIPT | -m MODULE) [ARGS ...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run SCRIPT (or MODULE) as python would, with the switch on: every interpreted kernel binds\n"
                    "its launches as under @kwsafe and every autotuner tunes on the CPU. Sets TRITON_INTERPRET=1\n"
                    "when it is unset. ARGS, everything after SCRIPT or MODULE ('--' included), are the target's.",
        epilog="autotune policies:\n"
               "  first   no tuning: the first Config that survives pruning runs\n"
               "  all     each Config runs once with the autotuner's own hooks, nothing restored (as on a GPU)\n"
               "  verify  all, plus: every Config from one snapshot must agree (ConfigDivergenceError), and the\n"
               "          tuned launch must leave what one clean launch leaves (AutotuneSideEffectError)")
    run.add_argument("--autotune", choices=("first", "all", "verify"), default="all",
                     help="autotune policy for interpreted autotuners (default: all)")
    run.add_argument("--rtol", type=float, default=1e-05, help="verify: relative tolerance for floats (default 1e-05)")
    run.add_argument("--atol", type=float, default=1e-08, help="verify: absolute tolerance for floats (default 1e-08)")
    run.add_argument("--no-equal-nan", dest="equal_nan", action="store_false",
                     help="verify: NaN in the same place counts as a difference (by default it agrees)")
    run.add_argument("-m", dest="module", action="store_true", help="run a module, as python -m")
    run.add_argument("target", metavar="SCRIPT|MODULE")
    argv = list(sys.argv[1:] if argv is None else argv)
    target_args: list = []
    if argv and argv[0] == "run":
        own, target_args = _split_run(argv[1:])
        argv = ["run", *own]
    options = parser.parse_args(argv)
    if options.command == "run":
        return _run(options, target_args, run)
    if options.command == "check":
        return _check(options, parser)
    return _doctor(options)


#: ``kwshim run``'s own options that take a value
_RUN_VALUED = ("--autotune", "--rtol", "--atol")


def _split_run(argv):
    """``kwshim run``'s arguments: (its own options and the target, the target's arguments
    verbatim), as python splits ``python [options] script args``: ``--`` after the target is the
    target's."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":  # the target follows
            return argv[:index] + argv[index + 1:index + 2], argv[index + 2:]
        if token in _RUN_VALUED:
            index += 2
        elif token.startswith("-") and token != "-":
            index += 1
        else:
            return argv[:index + 1], argv[index + 1:]
    return argv, []


def _run(options, target_args, parser):
    import importlib.util

    from .autotune import Settings
    from .runner import run_target

    try:
        Settings(options.autotune, options.rtol, options.atol, options.equal_nan)
    except ValueError as exc:
        parser.error(str(exc))  # exits with status 2
    if options.module:
        try:
            found = importlib.util.find_spec(options.target) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            print(f"kwshim run: no module named {options.target!r}", file=sys.stderr)
            return 2
    elif not os.path.isfile(options.target):
        print(f"kwshim run: no such file: {options.target!r}", file=sys.stderr)
        return 2
    return run_target(options.target, target_args, module=options.module, policy=options.autotune,
                      rtol=options.rtol, atol=options.atol, equal_nan=options.equal_nan)


def _check(options, parser):
    from .check import check_paths, reserved_names

    missing = [path for path in options.paths if not os.path.exists(path)]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")  # exits with status 2
    findings = check_paths(options.paths, reserved_names())
    if options.format == "json":
        json.dump([finding._asdict() for finding in findings], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for finding in findings:
            print(finding)
    return 1 if findings else 0


def _doctor(options):
    from .doctor import diagnose, render

    print("kwshim doctor: probing the installed Triton's interpreter in subprocesses (about 10-15 s)...",
          file=sys.stderr, flush=True)
    report = diagnose()
    if options.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(report))
    return 1 if report["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
