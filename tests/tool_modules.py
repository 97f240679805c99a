"""The scripts under tools/ imported as modules, for tests of their parts (tools/ is not a package)."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def load_tool(name: str) -> ModuleType:
    """tools/<name>.py as the module `name`, registered in sys.modules (a dataclass looks its module up there), with
    tools/ on sys.path as when the script runs (a tool imports another by its bare name)."""
    if str(TOOLS) not in sys.path:
        sys.path.append(str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
