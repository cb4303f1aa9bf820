"""Speed fixes for the fixed cost of every request to moto 5.2.5 (the rules are moto_speed.py's).

Measured on `benchmarks/bench_inline.py`'s throughput run (3-step workflows, in-process moto,
cProfile): a handful of small items per request, yet each DynamoDB or SQS call cost 2-4 ms of CPU,
most of it outside the emulated service. Four generic parts of moto did much of it:

- The response serializer asks its attribute picker for every member of every output shape, and
  the picker builds a context object, six alias providers and `xform_name` spellings for each ask:
  an item of 5 attributes is 50 asks, since a DynamoDB AttributeValue has 10 members. For a
  plain `dict` value the spellings to try depend only on the member's name and shape (a `dict`
  has no `Meta`, and its class name is always `dict`), so they are worked out once per
  (name, shape, parent shape) and tried in the same order; anything else goes to moto's code.
- Random identifiers (a 52-character request id on every response, a 185-letter receipt handle
  per received message) are drawn one `random.choice` per character. `choices(pool, k=n)` from the
  same generator draws the same alphabet, length and distribution in one call (moto's seeding
  still makes them repeatable; the strings differ from an unpatched moto's, as any two runs do).
- Routing a request to its service scans about 100 URL patterns, then rebuilds the service's
  URL table (a `str.format` and an `re.sub` per path) to scan it too. Which patterns match a
  URL, and which handler a service's table gives it, are fixed by moto's modules, so both answers
  are kept per URL; every other step of moto's routing (passthrough and allow-list checks, the
  backend lookup, the 404 for an unknown amazonaws.com URL) still runs on each request, in order.
  S3, whose URL table depends on settings, is routed by moto's code as before. The action name's
  conversion to a method name (a pure function of the name) is kept per name, as clock.py does
  for SQS's attribute names.
- A DynamoDB condition expression is parsed twice per conditional write (once to check the names
  it uses, once to evaluate it), 125-250 us each, though Orbit sends the same few expressions all
  the time. moto's syntax tree depends on the expression, the names and which values exist (the
  lexer looks each one up); the values themselves only sit in its leaves and are read when the
  operators are made. So the tree (and the names and values it uses) is kept per (expression,
  names, value names), and each parse puts the request's values into its leaves and makes the
  operators with moto's own `_make_op_condition`: the same verdicts and errors (a parse that fails
  raises as before and is not kept). Only plain JSON names and values (what a request carries) are
  kept, keyed by their repr.

Each replaced function keeps moto's as `.original`; tests/e2e/test_local_moto_speed_calls.py runs
the same requests through both and compares the answers.
"""

from __future__ import annotations

from typing import Any

CONDITION_CACHE_SIZE = 4096  # distinct (expression, names, value names) kept


def install() -> None:
    _patch_routing()
    _patch_serializer()
    _patch_random()
    _patch_condition_parser()


def _patch_routing() -> None:
    import re

    import moto.backend_index as backend_index
    import moto.core.botocore_stubber as stubber
    from moto.core.base_backend import BackendDict, BaseBackend
    from moto.core.exceptions import HTTPException

    cls = stubber.BotocoreStubber
    original = getattr(cls.process_request, "original", cls.process_request)
    services_for: dict[str, tuple[str, ...]] = {}
    handler_for: dict[tuple[type, str, bool], Any] = {}
    no_handler = object()
    aws_url = re.compile(r"https?://.+\.amazonaws.com/.*")

    def handler(backend: Any, clean_url: str) -> Any:
        """The first handler of the backend's URL table whose pattern matches, as moto's loop finds."""
        from moto.settings import enable_iso_regions

        kind = type(backend)
        if kind.urls is not BaseBackend.urls or kind._url_module is not BaseBackend._url_module:
            return None  # a table of its own (S3): not kept
        key = (kind, clean_url, enable_iso_regions())
        found = handler_for.get(key)
        if found is None:
            if len(handler_for) >= 1024:
                handler_for.clear()
            urls = backend.urls.items()
            found = next((h for url, h in urls if re.compile(url).match(clean_url)), no_handler)
            handler_for[key] = found
        return found

    def process_request(self: Any, request: Any) -> Any:
        import moto.backends as backends
        from moto.core import DEFAULT_ACCOUNT_ID

        parsed_url, _ = stubber.get_equivalent_url_in_aws_domain(request.url)
        clean_url = f"{parsed_url.scheme}://{parsed_url.netloc}{parsed_url.path}"
        if parsed_url.netloc.startswith("s3") or ".s3" in parsed_url.netloc:
            return original(self, request)
        if stubber.passthrough_url(clean_url):
            return None
        services = services_for.get(clean_url)
        if services is None:
            if len(services_for) >= 1024:
                services_for.clear()
            patterns = backend_index.backend_url_patterns
            services = services_for[clean_url] = tuple(s for s, p in patterns if p.match(clean_url))
        for service in services:  # moto's loop from here, with the two scans answered from memory
            if stubber.passthrough_service(service):
                return None
            if not stubber.service_whitelisted(service):
                raise stubber.ServiceNotWhitelisted(service)
            backend_dict = backends.get_backend(service)  # type: ignore[call-overload]
            if isinstance(backend_dict, BackendDict):
                if "us-east-1" in backend_dict[DEFAULT_ACCOUNT_ID]:
                    backend = backend_dict[DEFAULT_ACCOUNT_ID]["us-east-1"]
                else:
                    backend = backend_dict[DEFAULT_ACCOUNT_ID]["aws"]
            else:
                backend = backend_dict["global"]
            method_to_execute = handler(backend, clean_url)
            if method_to_execute is None:
                return original(self, request)
            if method_to_execute is no_handler:
                continue
            from moto.moto_api import recorder

            normalized_request = stubber.normalize_request(request)
            try:
                recorder._record_request(normalized_request)
                status, headers, body = method_to_execute(
                    normalized_request, normalized_request.raw_url, normalized_request.headers)
            except HTTPException as e:
                status, headers, body = e.code, e.get_headers(), e.get_body()
            return status, headers, body
        if aws_url.match(clean_url):
            return 404, {}, "Not yet implemented"
        return None

    process_request.original = original  # type: ignore[attr-defined]
    cls.process_request = process_request  # type: ignore[method-assign]

    import moto.core.responses as responses

    from orbit.local.clock import camelcase_to_underscores

    responses.camelcase_to_underscores = camelcase_to_underscores  # type: ignore[assignment]


def _patch_serializer() -> None:
    import moto.core.serialize as ser
    from moto.core.utils import MISSING, get_value

    cls = ser.ResponseSerializer
    original = getattr(cls.get_value, "original", cls.get_value)
    no_parent = object()
    keys_for: dict[tuple[str, Any, Any], tuple[str, ...] | None] = {}

    def dict_keys(picker: Any, key: str, shape: Any) -> tuple[str, ...] | None:
        parent = getattr(shape, "parent", no_parent)
        cache_key = (key, shape, parent)
        try:
            return keys_for[cache_key]
        except KeyError:
            pass
        # The picker's own answer, for a dict (its providers read nothing else of it). moto asks
        # lazily and stops at the first spelling found; if asking them all raised, keep moto's way.
        try:
            keys: tuple[str, ...] | None = tuple(
                picker.get_possible_keys(ser.AttributePickerContext(obj={}, key=key, shape=shape)))
        except Exception:  # noqa: BLE001
            keys = None
        if len(keys_for) >= 4096:  # shapes are cached by botocore's models: a guard, not expected
            keys_for.clear()
        keys_for[cache_key] = keys
        return keys

    def fast_get_value(self: Any, value: Any, key: str, shape: Any) -> Any:
        picker = self._value_picker
        if (type(value) is not dict or type(picker) is not ser.XFormedAttributePicker
                or picker.alias_providers is not ser.DEFAULT_ALIAS_PROVIDERS):
            return original(self, value, key, shape)
        keys = dict_keys(picker, key, shape)
        if keys is None:
            return original(self, value, key, shape)
        for possible_key in keys:
            found = get_value(value, possible_key, MISSING)
            if found is not MISSING:
                break
        else:
            found = None
        if picker.response_transformers:  # AttributePicker.__call__'s transform, same key path
            key_path = f"{'.'.join(self.path)}.{key}"
            for transform_path, transform in picker.response_transformers.items():
                if key_path.endswith(transform_path):
                    return transform(found)
        return found

    fast_get_value.original = original  # type: ignore[attr-defined]
    fast_get_value.dict_keys = dict_keys  # type: ignore[attr-defined]  # moto_speed_requests reads them
    cls.get_value = fast_get_value  # type: ignore[method-assign]


def _patch_random() -> None:
    import string

    import moto.sqs.models as sqs_models
    import moto.sqs.utils as sqs_utils
    from moto.moto_api._internal import mock_random
    from moto.moto_api._internal.moto_random import MotoRandom

    original = getattr(MotoRandom.get_random_string, "original", MotoRandom.get_random_string)

    def get_random_string(self: Any, length: int = 20, include_digits: bool = True,
                          lower_case: bool = False) -> str:
        pool = string.ascii_letters + (string.digits if include_digits else "")
        random_str = "".join(self.choices(pool, k=length))
        return random_str.lower() if lower_case else random_str

    get_random_string.original = original  # type: ignore[attr-defined]
    MotoRandom.get_random_string = get_random_string  # type: ignore[method-assign]

    receipt = sqs_utils.generate_receipt_handle
    receipt_original = getattr(receipt, "original", receipt)

    def generate_receipt_handle() -> str:
        return "".join(mock_random.choices(string.ascii_lowercase, k=185))

    generate_receipt_handle.original = receipt_original  # type: ignore[attr-defined]
    sqs_utils.generate_receipt_handle = generate_receipt_handle
    sqs_models.generate_receipt_handle = generate_receipt_handle  # the name models.py imported


def _json_data(value: Any) -> bool:
    """None or a dict of JSON values (str, bool, None, lists and dicts of them), as a request carries:
    two such values with the same repr are equal."""
    if value is None:
        return True
    if type(value) is not dict:
        return False
    todo: list[Any] = [value]
    while todo:
        v = todo.pop()
        t = type(v)
        if t is dict:
            if not all(type(k) is str for k in v):
                return False
            todo.extend(v.values())
        elif t is list:
            todo.extend(v)
        elif t is not str and t is not bool and v is not None:
            return False
    return True


def _patch_condition_parser() -> None:
    from moto.dynamodb.comparisons import ConditionExpressionParser as Parser

    original = getattr(Parser.parse, "original", Parser.parse)
    value_kind = Parser.Kind.EXPRESSION_ATTRIBUTE_VALUE
    trees: dict[tuple[str, str, tuple[str, ...] | None], tuple[Any, list[str], list[str]]] = {}

    def syntax_tree(self: Any) -> Any:
        """moto 5.2.5's ConditionExpressionParser.parse up to the tree it makes its operators from."""
        nodes = self._lex_condition_expression()
        nodes = self._parse_paths(nodes)
        nodes = self._apply_functions(nodes)
        nodes = self._apply_comparator(nodes)
        nodes = self._apply_in(nodes)
        nodes = self._apply_between(nodes)
        nodes = self._apply_parens_and_booleans(nodes)
        node = nodes[0]
        self._assert_no_redundant_parentheses(node)
        return node

    def with_values(node: Any, values: dict[str, Any]) -> Any:
        if node.kind == value_kind:
            return node._replace(value=values[node.text])
        if not node.children:
            return node
        return node._replace(children=[with_values(child, values) for child in node.children])

    def parse(self: Any) -> Any:
        names, values = self.expression_attribute_names, self.expression_attribute_values
        if not self.condition_expression or not (_json_data(names) and _json_data(values)):
            return original(self)
        # The tree depends on the expression, the names and which values exist (a missing one fails
        # the parse); the values themselves only sit in its leaves, so they are put in afresh.
        key = (self.condition_expression, repr(names), None if values is None else tuple(values))
        kept = trees.get(key)
        if kept is None:
            node = syntax_tree(self)  # a parse that fails raises here, as moto's does, and is not kept
            kept = (node, self._find_literals(node), self._find_expr_attr_values(node))
            if len(trees) >= CONDITION_CACHE_SIZE:
                trees.clear()
            trees[key] = kept
        else:
            node = with_values(kept[0], values or {})
        self.expr_attr_names_found.extend(kept[1])
        self.expr_attr_values_found.extend(kept[2])
        return self._make_op_condition(node)

    parse.original = original  # type: ignore[attr-defined]
    Parser.parse = parse  # type: ignore[method-assign]
