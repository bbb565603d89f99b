"""Built-in labelers; one module per component family.

Each module registers its components with a decorator; the registry imports
the modules when it is first asked for a name.
"""

from realitycheck.labelers._base import Labeler, labeler, labelers

__all__ = ["Labeler", "labeler", "labelers"]
