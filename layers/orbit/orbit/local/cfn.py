"""Read a (SAM) CloudFormation template the way the local stack needs it.

The loader keeps CloudFormation short-form tags (`!Ref`, `!GetAtt`, `!Sub`, ...)
as their long-form dicts, so `template.yaml` stays the one source of truth for
table keys, queues, redrive policies and schedules. `Resolver` evaluates the
intrinsic functions against the resources the local stack created.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import yaml

from orbit.errors import OrbitError


class TemplateError(OrbitError):
    """template.yaml cannot be read or uses something the local stack cannot emulate."""


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that turns `!Tag value` into `{"Fn::Tag": value}` (and `!Ref` into `{"Ref": ...}`)."""


def _construct(tag: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def build(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if tag == "Ref":
            return {"Ref": value}
        if tag == "GetAtt" and isinstance(value, str):
            # "!GetAtt Res.Attr" is the short form of ["Res", "Attr"]
            value = value.split(".", 1)
        if tag == "Condition":
            return {"Condition": value}
        return {f"Fn::{tag}": value}

    return build


for _tag in (
    "Ref",
    "GetAtt",
    "Sub",
    "Join",
    "If",
    "Not",
    "Equals",
    "And",
    "Or",
    "Select",
    "Split",
    "FindInMap",
    "ImportValue",
    "Base64",
    "GetAZs",
    "Cidr",
    "Condition",
    "Transform",
):
    _CfnLoader.add_constructor(f"!{_tag}", _construct(_tag))


def load_template(path: str | Path) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML template, keeping intrinsic functions as dicts."""
    p = Path(path)
    try:
        doc = yaml.load(p.read_text(), Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
    except FileNotFoundError as exc:
        raise TemplateError(f"{p}: template not found") from exc
    except yaml.YAMLError as exc:
        raise TemplateError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("Resources"), dict):
        raise TemplateError(f"{p}: a template needs a top-level 'Resources' mapping")
    return doc


_NO_VALUE = object()
_SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


class Resolver:
    """Evaluates intrinsic functions. `refs` maps a logical id (or parameter, or pseudo
    parameter) to its `Ref` value; `attrs` maps (logical id, attribute) to `GetAtt` values."""

    def __init__(
        self, template: dict[str, Any], refs: dict[str, Any], attrs: dict[tuple[str, str], Any]
    ) -> None:
        self.template = template
        self.refs = refs
        self.attrs = attrs

    def condition(self, name: str) -> bool:
        conditions = self.template.get("Conditions") or {}
        if name not in conditions:
            raise TemplateError(f"Conditions.{name}: not declared")
        return bool(self.resolve(conditions[name], f"Conditions.{name}"))

    def resolve(self, value: Any, where: str = "") -> Any:
        out = self._resolve(value, where)
        return None if out is _NO_VALUE else out

    def _resolve(self, value: Any, where: str) -> Any:
        if isinstance(value, list):
            items = [self._resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return [v for v in items if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self._ref(arg, where)
            if key == "Condition":
                return self.condition(arg)
            if key.startswith("Fn::"):
                return self._function(key[4:], arg, where)
        out = {}
        for k, v in value.items():
            r = self._resolve(v, f"{where}.{k}")
            if r is not _NO_VALUE:
                out[k] = r
        return out

    def _ref(self, name: str, where: str) -> Any:
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name not in self.refs:
            raise TemplateError(f"{where}: !Ref {name}: no such resource or parameter in the local stack")
        return self.refs[name]

    def _getatt(self, res: str, attr: str, where: str) -> Any:
        if (res, attr) not in self.attrs:
            raise TemplateError(f"{where}: !GetAtt {res}.{attr}: not known to the local stack")
        return self.attrs[(res, attr)]

    def _function(self, fn: str, arg: Any, where: str) -> Any:
        if fn == "GetAtt":
            res, attr = self._resolve(arg, where)
            return self._getatt(res, attr, where)
        if fn == "Sub":
            return self._sub(arg, where)
        if fn == "Join":
            sep, items = arg
            return str(sep).join(str(x) for x in self._resolve(items, where))
        if fn == "If":
            cond, yes, no = arg
            return self._resolve(yes if self.condition(cond) else no, where)
        if fn == "Not":
            return not self._resolve(arg[0], where)
        if fn == "Equals":
            a, b = self._resolve(arg, where)
            return str(a) == str(b)  # CloudFormation compares strings (a Number parameter is one)
        if fn == "And":
            return all(self._resolve(arg, where))
        if fn == "Or":
            return any(self._resolve(arg, where))
        if fn == "Select":
            index, items = self._resolve(arg, where)
            return items[int(index)]
        if fn == "Split":
            sep, text = self._resolve(arg, where)
            return str(text).split(sep)
        raise TemplateError(f"{where}: Fn::{fn} is not supported by the local stack")

    def _sub(self, arg: Any, where: str) -> str:
        if isinstance(arg, list):
            text, extra = arg[0], self._resolve(arg[1], where)
        else:
            text, extra = arg, {}

        def one(m: re.Match[str]) -> str:
            name = m.group(1).strip()
            if name in extra:
                return str(extra[name])
            if "." in name and not name.startswith("AWS::"):
                res, attr = name.split(".", 1)
                return str(self._getatt(res, attr, where))
            return str(self._ref(name, where))

        return _SUB_VAR.sub(one, text).replace("${!", "${")
