"""The package surface: the README's examples run as written, and the .pyi stub names exactly
what the extension exports."""
import ast
import importlib.util
import pathlib
import re

import raydex

HERE = pathlib.Path(__file__).resolve().parent.parent


def test_readme_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", (HERE / "README.md").read_text(), re.S)
    assert len(blocks) >= 2
    for i, block in enumerate(blocks):
        needs = [m for m in ("shapely", "geopandas", "cupy", "torch", "pyarrow")
                 if re.search(rf"^import {m}|^from {m}", block, re.M)]
        if any(importlib.util.find_spec(m) is None for m in needs):
            continue  # examples whose optional packages are not installed here
        if re.search(r"^import cupy|^import torch", block, re.M) and not raydex.info()["n_gpus"]:
            continue  # the GPU examples, on a machine without one
        exec(compile(block, f"python/README.md block {i}", "exec"), {})


def test_stub_matches_the_module():
    tree = ast.parse((HERE / "raydex" / "__init__.pyi").read_text())
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed.add(node.target.id)
    stubbed = {n for n in stubbed if not n.startswith("_") or n == "__version__"}
    assert stubbed == set(raydex.__all__)
    for cls in ("Context", "KeyIndex", "PointIndex", "PolygonLayer", "DeviceArray", "ListArray"):
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
        members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} - {"__init__"}
        for name in members:
            assert hasattr(getattr(raydex, cls), name), f"{cls}.{name} is stubbed but missing"
        public = {n for n in dir(getattr(raydex, cls)) if not n.startswith("_")}
        assert public <= members, f"{cls}: not stubbed: {public - members}"
