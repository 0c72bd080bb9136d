"""Offline experience datasets: the record, the file format, generation and SwiftRL import.

- ``TRANSITION_DTYPE`` / ``NO_ACTION`` / ``MAX_ACTIONS``: the 16-byte record (docs/design.md);
- ``save_dataset`` / ``load_dataset`` / ``Dataset``: the binary file (docs/dataset-format.md);
- ``generate_dataset``: run a behaviour policy in a ``TabularEnv`` (numba, seeded);
- ``import_swiftrl`` / ``export_swiftrl``: SwiftRL's ``s a r s'`` text files.
"""
from .records import MAX_ACTIONS, NO_ACTION, TRANSITION_DTYPE
from .format import (
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    Dataset,
    DatasetError,
    load_dataset,
    save_dataset,
    validate_records,
)
from .generate import generate_dataset, parse_policy, policy_description
from .swiftrl import SwiftRLFormatError, export_swiftrl, import_swiftrl

__all__ = [
    "TRANSITION_DTYPE", "NO_ACTION", "MAX_ACTIONS",
    "FORMAT_VERSION", "HEADER_SIZE", "MAGIC",
    "Dataset", "DatasetError", "load_dataset", "save_dataset", "validate_records",
    "generate_dataset", "parse_policy", "policy_description",
    "SwiftRLFormatError", "export_swiftrl", "import_swiftrl",
]
