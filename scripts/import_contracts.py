"""An import-linter contract type: private modules stay inside their package.

import-linter's built-in contracts name modules by whole path segments, so
none of them can say "a module whose name starts with ``_`` is imported only
from its own package". This contract does, over the same import graph the
layer contract checks (``pyproject.toml``, ``[tool.importlinter]``).

A module is private when any segment of its path after the root starts with
``_`` (``realitycheck.studies._base``). Its *owner* is the package that holds
the first private segment (``realitycheck.studies``). An import of a private
module is allowed only from a module whose own package is that owner: a
subpackage, a parent or a sibling package must go through the owner's public
``__init__``.
"""

from __future__ import annotations

from typing import Any

from importlinter import Contract, ContractCheck, fields, output

__all__ = ["PrivateModulesContract", "owner_of", "package_of"]


def owner_of(module: str) -> str | None:
    """Return the package owning ``module``'s first private segment, or None if public."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def package_of(module: str, packages: set[str]) -> str:
    """Return the package a module belongs to: itself for a package, else its parent."""
    return module if module in packages else module.rpartition(".")[0]


class PrivateModulesContract(Contract):
    """No module imports another package's private (``_name``) module."""

    type_name = "private_modules"
    root = fields.StringField()

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        """Find every import of a private module from outside its owner package."""
        root = str(self.root)  # type: ignore[arg-type]
        modules = {m for m in graph.modules if m == root or m.startswith(f"{root}.")}
        packages = {m for m in modules if graph.find_children(m)} | {root}
        broken = []
        for importer in sorted(modules):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                owner = owner_of(imported) if imported in modules else None
                if owner is None or package_of(importer, packages) == owner:
                    continue
                lines = [
                    d["line_number"]
                    for d in graph.get_import_details(importer=importer, imported=imported)
                ]
                broken.append({"importer": importer, "imported": imported, "lines": lines})
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check: ContractCheck) -> None:
        """Print each offending import with its line numbers."""
        for item in check.metadata["broken"]:
            lines = ", ".join(f"l.{n}" for n in item["lines"])
            output.print_error(
                f"{item['importer']} imports the private {item['imported']} ({lines})",
                bold=False,
            )
            output.new_line()
