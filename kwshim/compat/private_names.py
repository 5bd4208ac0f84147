"""The private Triton names kwshim relies on, in one list, with the releases where each was found.

kwshim reaches into Triton where no public API says what it needs: the interpreter's grid loop, its
one builder object, the patching of ``triton.language`` for a launch, the autotuner's benchmark.
Each such name is a probe of its own somewhere in kwshim (what kwshim does where a name is absent
is that probe's business); this module names them all, so a new Triton release can be checked in
one place: ``measure/private_names.py`` resolves every name under every release in ``.triton/`` and
rewrites ``FOUND`` below, and ``tests/test_compat.py`` holds the installed release to it.
"""

import importlib
from typing import Dict

__all__ = ["PRIVATE_NAMES", "PROBED", "FOUND", "resolves", "found_here"]

#: dotted name: what kwshim uses it for (and where)
PRIVATE_NAMES: Dict[str, str] = {
    "triton.runtime.interpreter.GridExecutor": "the grid seam: its __call__ computes the grid, then loops "
                                               "(batching/programs.py)",
    "triton.runtime.interpreter.GridExecutor.__call__": "wrapped to run a launch's programs batched "
                                                        "(batching/programs.py)",
    "triton.runtime.interpreter.InterpretedFunction": "the interpreted kernel class the switch patches "
                                                      "(compat/classes.py)",
    "triton.runtime.interpreter.InterpretedFunction.run": "replaced by the binding launch path (launch/kernel.py)",
    "triton.runtime.interpreter.InterpreterError": "unwrapped to the kernel's own exception (batching/programs.py)",
    "triton.runtime.interpreter.interpreter_builder": "the one builder object, given the GPU's arithmetic "
                                                      "(interpreter/gpu_builder.py)",
    "triton.runtime.interpreter.interpreter_semantic": "the semantic object libdevice stubs take "
                                                       "(arithmetic/libdevice.py)",
    "triton.runtime.interpreter.TensorHandle": "the interpreter's value: data and dtype (launch/scalars.py, "
                                               "interpreter/)",
    "triton.runtime.interpreter._implicit_cvt": "scalar arguments converted as compiled Triton types them "
                                                "(launch/scalars.py)",
    "triton.runtime.interpreter._get_np_dtype": "Triton dtypes to NumPy's (arithmetic/formats.py)",
    "triton.runtime.interpreter._patch_lang_tensor": "mended to give tl.tensor a working __index__ "
                                                     "(interpreter/fixes.py, program_axis.py)",
    "triton.runtime.interpreter._patch_lang_core": "the batched range (batching/program_range.py)",
    "triton.runtime.interpreter._LangPatchScope": "how 3.6+ patches triton.language for one launch "
                                                  "(compat/interpreter.py)",
    "triton.runtime.interpreter.FunctionRewriter": "the AST rewriting of kernels before 3.x's interpretation "
                                                   "(interpreter/fixes.py)",
    "triton.runtime.interpreter.RESERVED_KWS": "the launch keywords the bare interpreter strips (compat/)",
    "triton.runtime.interpreter._ir": "the interpreter's IR constants, ROUNDING_MODE (interpreter/gpu_builder.py)",
    "triton.runtime.autotuner.Autotuner._bench": "one Config's benchmark, run on the CPU (autotune/patch.py)",
    "triton.runtime.autotuner.Autotuner.do_bench": "the benchmarker of compiled autotuners (autotune/patch.py)",
    "triton.language.standard._sum_combine": "a reduction run natively over a program axis "
                                             "(batching/program_axis.py)",
    "triton.language.standard._elementwise_max": "a reduction run natively over a program axis "
                                                 "(batching/program_axis.py)",
    "triton.language.standard._argmax_combine_tie_break_left": "a reduction run natively over a program axis "
                                                               "(batching/program_axis.py)",
    "triton.runtime.driver.driver._active": "the virtual device's driver, 3.4 on (virtual_cuda/triton_driver.py)",
    "triton.runtime.driver.driver._obj": "the virtual device's driver, 2.x (virtual_cuda/triton_driver.py)",
    "triton.compiler.backends": "2.x's backend option classes (compat/backends.py)",
    "triton.backends.backends": "3.x's discovered backends (compat/backends.py)",
}


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module or an attribute in the installed Triton (importing only it)."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except Exception:
            continue
        for name in parts[split:]:
            if name not in dir(found):
                return False
            found = getattr(found, name)
        return True
    return False


def found_here() -> Dict[str, bool]:
    """Every private name, resolved in the installed Triton."""
    return {dotted: resolves(dotted) for dotted in PRIVATE_NAMES}


#: The releases probed (``PROBED``) and, of those, where each name resolved (``FOUND``), as
#: ``measure/private_names.py`` last found them.
# private-names:begin
PROBED = ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
          '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0')
FOUND: Dict[str, tuple] = {
    'triton.runtime.interpreter.GridExecutor':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.GridExecutor.__call__':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.InterpretedFunction':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.InterpretedFunction.run':
        ('3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.InterpreterError':
        ('3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1',
         '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.interpreter_builder':
        ('3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1',
         '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.interpreter_semantic':
        ('3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.TensorHandle':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter._implicit_cvt':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter._get_np_dtype':
        ('3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1',
         '3.8.0', '3.9.0'),
    'triton.runtime.interpreter._patch_lang_tensor':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter._patch_lang_core':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter._LangPatchScope':
        ('3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.FunctionRewriter':
        ('3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.interpreter.RESERVED_KWS':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0'),
    'triton.runtime.interpreter._ir':
        ('3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1',
         '3.8.0', '3.9.0'),
    'triton.runtime.autotuner.Autotuner._bench':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.autotuner.Autotuner.do_bench':
        ('3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.language.standard._sum_combine':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.language.standard._elementwise_max':
        ('3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1',
         '3.8.0', '3.9.0'),
    'triton.language.standard._argmax_combine_tie_break_left':
        ('2.2.0', '2.3.0', '2.3.1', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1',
         '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.driver.driver._active':
        ('3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1', '3.8.0', '3.9.0'),
    'triton.runtime.driver.driver._obj':
        ('2.2.0', '2.3.0', '2.3.1'),
    'triton.compiler.backends':
        ('2.3.0', '2.3.1'),
    'triton.backends.backends':
        ('3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.3.1', '3.4.0', '3.5.0', '3.5.1', '3.6.0', '3.7.0', '3.7.1',
         '3.8.0', '3.9.0'),
}
# private-names:end
