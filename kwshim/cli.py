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
    parser = argparse.ArgumentParser(prog="kwshim", description="kwshim's tools for Triton kernel authors")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="statically find kernels that need @kwsafe and misplaced @kwsafe")
    check.add_argument("paths", nargs="+", metavar="PATH", help="Python files or directories (walked)")
    check.add_argument("--format", choices=("text", "json"), default="text")
    doctor = commands.add_parser("doctor", help="probe this environment's Triton interpreter")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    run = commands.add_parser("run", help="run a script or module with the switch on (kwshim.activate)")
    run.add_argument("--autotune", choices=("first", "all", "verify"), default="all",
                     help="autotune policy for interpreted autotuners (default: all)")
    run.add_argument("--rtol", type=float, default=1e-05, help="verify: relative tolerance for floats (default 1e-05)")
    run.add_argument("--atol", type=float, default=1e-08, help="verify: absolute tolerance for floats (default 1e-08)")
    run.add_argument("--no-equal-nan", dest="equal_nan", action="store_false",
                     help="verify: NaN in the same place counts as a difference (by default it agrees)")
    run.add_argument("-m", dest="module", action="store_true", help="run a module, as python -m")
    run.add_argument("target", metavar="SCRIPT|MODULE")
    run.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")
    options = parser.parse_args(argv)
    if options.command == "run":
        from .runner import run_target

        try:
            from .autotune import Settings

            Settings(options.autotune, options.rtol, options.atol, options.equal_nan)
        except ValueError as exc:
            parser.error(str(exc))  # exits with status 2
        return run_target(options.target, options.args, module=options.module, policy=options.autotune,
                          rtol=options.rtol, atol=options.atol, equal_nan=options.equal_nan)
    if options.command == "check":
        return _check(options, parser)
    return _doctor(options)


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

    report = diagnose()
    if options.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(report))
    return 1 if report["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
