"""The ``kwshim`` command line: ``kwshim check PATH...``, ``kwshim doctor`` and
``kwshim run [--autotune POLICY] SCRIPT|-m MODULE [ARGS...]``.

Exit status: 0 clean, 1 findings (check) or a broken environment (doctor), 2 usage errors.
"""

import argparse
import json
import os
import sys

from ..settings import FIELDS, POLICIES

__all__ = ["main"]


def main(argv=None):
    from ..version import __version__
    from ..tools.check import CODES

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
        usage="kwshim run " + " ".join(f"[{field.flag()}]" if field.is_switch else f"[{field.flag()} {_metavar(field)}]"
                                       for field in FIELDS)
              + " [--asm KERNEL[:FORM]] (SCRIPT | DIRECTORY | -m MODULE) [ARGS ...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run SCRIPT (a DIRECTORY's __main__.py, or MODULE) as python would, with the switch on: "
                    "every interpreted kernel binds\n"
                    "its launches as under @kwsafe and every autotuner tunes on the CPU. Sets TRITON_INTERPRET=1\n"
                    "when it is unset. ARGS, everything after SCRIPT or MODULE ('--' included), are the target's.",
        epilog="autotune policies:\n" + "".join(f"  {name:<7} {meaning}\n" for name, meaning in POLICIES.items()))
    for field in FIELDS:
        if field.is_switch:
            run.add_argument(field.flag(), dest=field.name, action="store_false", default=None,
                             help=f"{field.help} (this flag turns it off)")
        else:
            run.add_argument(field.flag(), dest=field.name, default=None, choices=field.choices or None,
                             type=field.value_type, metavar=_metavar(field), help=field.help)
    run.add_argument("--asm", metavar="KERNEL[:FORM]", default=None,
                     help="after the target, print what the GPU's compiler made of KERNEL for the H200: FORM is ptx "
                          "(the default), ttgir, ttir or llir; implies --compile check")
    run.add_argument("-m", dest="module", action="store_true", help="run a module, as python -m")
    run.add_argument("target", metavar="SCRIPT|MODULE")
    argv = list(sys.argv[1:] if argv is None else argv)
    target_args: list = []
    if argv and argv[0] == "run":  # parsed by run's own parser: its errors show its usage
        own, target_args = _split_run(argv[1:], _own_flags(run))
        return _run(run.parse_args(own), target_args, run)
    options = parser.parse_args(argv)
    if options.command == "check":
        return _check(options, check)
    return _doctor(options)


#: ``kwshim run``'s own options that take a value
_RUN_VALUED = tuple(field.flag() for field in FIELDS if not field.is_switch) + ("--asm",)


def _metavar(field):
    return "POLICY" if field.name == "autotune" else field.name[0].upper()


def _own_flags(run):
    """Every option string of ``kwshim run``'s parser."""
    return [flag for action in run._actions for flag in action.option_strings]


def _takes_value(token, flags):
    """Whether option ``token`` of ``kwshim run`` is followed by its value: one of ``_RUN_VALUED``,
    or an abbreviation argparse reads as one (``--dev`` for ``--device``); ``--flag=value`` holds its own."""
    if "=" in token:
        return False
    if token in flags:
        return token in _RUN_VALUED
    matches = [flag for flag in flags if flag.startswith(token)]
    return len(matches) == 1 and matches[0] in _RUN_VALUED


def _split_run(argv, flags=_RUN_VALUED):
    """``kwshim run``'s arguments: (its own options and the target, the target's arguments
    verbatim), as python splits ``python [options] script args``: ``--`` after the target is the
    target's."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":  # the target follows
            return argv[:index] + argv[index + 1:index + 2], argv[index + 2:]
        if token.startswith("--") and _takes_value(token, flags):
            index += 2
        elif token.startswith("-") and token != "-":
            index += 1
        else:
            return argv[:index + 1], argv[index + 1:]
    return argv, []


def _run(options, target_args, parser):
    import importlib.util

    from .runner import run_target

    named = {field.name: getattr(options, field.name) for field in FIELDS if getattr(options, field.name) is not None}
    asm = None
    if options.asm is not None:
        from ..compiler import ASM_FORMS

        name, _, form = options.asm.partition(":")
        form = form or "ptx"
        if not name or form not in ASM_FORMS:
            print(f"kwshim run: --asm takes KERNEL or KERNEL:FORM with FORM one of {', '.join(ASM_FORMS)}, "
                  f"not {options.asm!r}", file=sys.stderr)
            return 2
        if named.get("compile", "check") != "check":
            print("kwshim run: --asm needs --compile check (what it prints is what the check compiles)",
                  file=sys.stderr)
            return 2
        named["compile"], asm = "check", (name, form)
    if options.module:
        sys.path.insert(0, os.getcwd())  # as python -m: the current directory first
        try:
            spec = importlib.util.find_spec(options.target)
            # a package runs its __main__ module, as python -m runs it
            runnable = spec is not None and (spec.submodule_search_locations is None
                                             or importlib.util.find_spec(options.target + ".__main__") is not None)
        except (ImportError, ValueError):
            spec, runnable = None, False
        finally:
            sys.path.remove(os.getcwd())
        if spec is None:
            print(f"kwshim run: no module named {options.target!r}", file=sys.stderr)
            return 2
        if not runnable:
            print(f"kwshim run: {options.target!r} is a package with no __main__ module, which python -m needs",
                  file=sys.stderr)
            return 2
    elif os.path.isdir(options.target):
        if not os.path.isfile(os.path.join(options.target, "__main__.py")):
            print(f"kwshim run: {options.target!r} is a directory with no __main__.py", file=sys.stderr)
            return 2
    elif not os.path.isfile(options.target):
        print(f"kwshim run: no such file or directory: {options.target!r}", file=sys.stderr)
        return 2
    return run_target(options.target, target_args, module=options.module, settings=named, asm=asm)


def _check(options, parser):
    from ..tools.check import check_paths, reserved_names

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
    from ..tools.doctor import diagnose, render

    report = diagnose(progress=lambda line: print(line, file=sys.stderr, flush=True))
    if options.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(report))
    return 1 if report["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
