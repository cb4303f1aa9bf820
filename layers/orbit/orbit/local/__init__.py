"""The local stack: moto + template.yaml + the real handlers, on a virtual clock."""

from orbit.local.stack import LocalStack, find_template, load_workers

__all__ = ["LocalStack", "find_template", "load_workers"]
