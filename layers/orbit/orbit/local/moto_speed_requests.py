"""Speed fixes for how moto 5.2.5 turns a botocore request into its own (the rules are moto_speed.py's).

Measured on `benchmarks/bench_inline.py`'s throughput run (3-step workflows, in-process moto): after
last session's fixes a DynamoDB or SQS request still cost ~1.8 ms of CPU, spread thin over botocore,
werkzeug and moto. This file takes the parts that do the same work on every request:

- moto hands each in-process request to werkzeug's `EnvironBuilder` to get a WSGI environ, then a
  `Request` over it (~0.2 ms). The builder's URL half (the scheme, host, path and query split,
  IRI-quoted and WSGI-encoded) depends only on the method and URL, so it is built once per
  (method, URL) by the builder itself and kept; the per-request half (the body stream, the content
  type and length, the headers folded into `HTTP_*` keys) is done as `EnvironBuilder.get_environ`
  does it, with werkzeug's own check of each header value (`_str_header_value`). The result is the same
  environ, key for key and in the same order. A body that is not plain bytes (a stream, a chunked
  upload, none) goes to moto's code. werkzeug's `url_root` (scheme, host and root path, computed
  lazily and kept on the request) is worked out once per (method, URL) too, and put in the
  request's cache only when the request's environ has the template's values for all it reads.
- moto builds a response's `Date` header with `http_date(utcnow())` on every request; the text
  depends only on the time to the second, so the last one is kept (the clock is still read).
- Every response goes through a regular expression that puts the request id into an XML body's
  `<RequestId>` element; a body without that text has nothing to replace, so the search is skipped.
- moto's JSON request parser walks each structure's members, looking up each member's shape and
  wire name for every value (an AttributeValue has 10 members), and finds each parse method by
  formatting its name. The (member, wire name, shape) list of a structure, and the method for a
  type, are fixed by botocore's model, so they are kept per shape and per parser class; the walk,
  its order and its results are moto's.
- moto's response serializer asks for every member of every structure it writes (an AttributeValue's
  10, for each attribute of each item returned). For a plain `dict` the spellings it tries are the
  ones moto_speed_calls.py keeps per member; a member none of whose spellings is in the dict is
  None to moto, which then writes nothing for it, so it is passed over without the call. Members
  found are serialised by moto's code, in member order; any other value, picker or transformer
  goes to moto's loop.

Each replaced function keeps moto's as `.original`; tests/e2e/test_local_moto_speed_requests.py runs
the same requests through both and compares what comes out.
"""

from __future__ import annotations

import sys
from io import BytesIO
from typing import Any

URL_CACHE_SIZE = 1024  # distinct (method, URL) kept; in process these are a handful of endpoints


URL_ROOT_KEYS = ("wsgi.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT", "SCRIPT_NAME")


def install() -> None:
    _patch_request_building()
    _patch_response_headers()
    _patch_json_parser()
    _patch_serializer_structures()


def _patch_request_building() -> None:
    from moto.core import request as r
    from werkzeug.datastructures.headers import _str_header_value as str_header_value
    from werkzeug.test import EnvironBuilder

    cls = r.Request
    original = getattr(cls.from_primitives, "original", cls.from_primitives)
    url_parts: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}

    def url_part(method: str, url: str) -> tuple[dict[str, Any], str]:
        """The environ `EnvironBuilder` makes for this method and URL with no headers and no body,
        and the `url_root` werkzeug works out from it."""
        key = (method, url)
        found = url_parts.get(key)
        if found is None:
            parsed = r.urlparse(url)  # as moto's from_primitives splits it
            builder = EnvironBuilder(method=method, base_url=f"{parsed.scheme}://{parsed.netloc}",
                                     path=parsed.path, query_string=parsed.query)
            try:
                template = builder.get_environ()
            finally:
                builder.close()
            found = (template, cls(dict(template)).url_root)
            if len(url_parts) >= URL_CACHE_SIZE:
                url_parts.clear()
            url_parts[key] = found
        return found

    def environ(method: str, url: str, header_items: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
        """`EnvironBuilder(..., data=body, headers=header_items).get_environ()` for a non-empty bytes body."""
        # werkzeug's Headers(header_items): each value through its `_str_header_value` (str, no newlines),
        # in order; then the builder's first Content-Type, and every Content-Type and Content-Length
        # (any case) dropped: the builder sets its own length from the body; the environ carries the
        # content type and length as CONTENT_* and every other header as HTTP_*.
        items = [(key, str_header_value(value)) for key, value in header_items]
        content_type = next((value for key, value in items if key.lower() == "content-type"), None)
        dropped = ("content-type", "content-length")
        headers = [(key, value) for key, value in items if key.lower() not in dropped]
        result = dict(url_part(method, url)[0])
        result["wsgi.input"] = BytesIO(body)
        result["wsgi.errors"] = sys.stderr
        if content_type is not None:
            result["CONTENT_TYPE"] = content_type
        result["CONTENT_LENGTH"] = str(len(body))
        combined: dict[str, list[str]] = {}
        for key, value in headers:
            combined.setdefault(f"HTTP_{key.upper().replace('-', '_')}", []).append(value)
        for key, values in combined.items():
            result[key] = ", ".join(values)
        return result

    def from_primitives(request_cls: Any, method: str, url: str, headers: Any, body: Any = None) -> Any:
        if type(body) is not bytes or not body or request_cls is not cls:
            return original.__func__(request_cls, method, url, headers, body)  # type: ignore[union-attr]
        # From here, moto 5.2.5's from_primitives with the builder's environ made as above.
        header_items = [
            (key, value.decode("utf-8") if isinstance(value, bytes) else value)
            for key, value in headers.items()
            if key.lower() not in ["transfer-encoding"]
        ]
        request = cls(environ(method, url, header_items, body))
        template, url_root = url_part(method, url)
        env = request.environ
        if all(env.get(k) == template.get(k) for k in URL_ROOT_KEYS):  # a Host header may differ
            request.__dict__["url_root"] = url_root  # what werkzeug's cached_property keeps
        request.environ[r.PRESERVED_HEADER_NAMES_ENVIRON_KEY] = {
            r.environ_key_for_header(key): key
            for key, _ in header_items
            if r.should_preserve_original_header_name(key)
        }
        request.environ.setdefault("CONTENT_LENGTH", "0")
        return request

    from_primitives.original = original  # type: ignore[attr-defined]
    cls.from_primitives = classmethod(from_primitives)  # type: ignore[method-assign,assignment]


def _patch_response_headers() -> None:
    import datetime

    import moto.core.responses as responses

    original_date = getattr(responses.http_date, "original", responses.http_date)
    last: list[tuple[Any, str]] = [(None, "")]  # (second, its text), replaced whole: threads may share it

    def http_date(timestamp: Any = None) -> str:
        if type(timestamp) is not datetime.datetime or timestamp.tzinfo is not None:
            return original_date(timestamp)  # type: ignore[no-any-return]
        second = timestamp.replace(microsecond=0)
        kept = last[0]
        if kept[0] != second:
            kept = last[0] = (second, original_date(second))  # the text has no fraction of a second
        return kept[1]

    http_date.original = original_date  # type: ignore[attr-defined]
    responses.http_date = http_date  # the name setup_class calls

    cls = responses.BaseResponse
    enrich = cls.__dict__["_enrich_response"].__func__
    original_enrich = getattr(enrich, "original", enrich)

    def _enrich_response(headers: dict[str, str], body: Any) -> tuple[dict[str, str], Any]:
        if type(body) is not str or "<RequestId>" in body:
            return original_enrich(headers, body)  # type: ignore[no-any-return]
        # moto's, without the substitution that finds nothing to replace (its lookbehind needs the text)
        if "status" in headers:
            headers["status"] = str(headers["status"])
        responses.gen_amzn_requestid_long(headers)
        return headers, body

    _enrich_response.original = original_enrich  # type: ignore[attr-defined]
    cls._enrich_response = staticmethod(_enrich_response)  # type: ignore[method-assign,assignment]


def _patch_json_parser() -> None:
    import moto.core.parse as parse

    cls = parse.BaseJSONParser
    original_structure = getattr(cls._parse_structure, "original", cls._parse_structure)
    original_shape = getattr(cls._parse_shape, "original", cls._parse_shape)
    tables: dict[int, tuple[Any, tuple[tuple[str, str, Any], ...]]] = {}
    method_names: dict[str, str] = {}

    def members_of(shape: Any) -> tuple[tuple[str, str, Any], ...]:
        kept = tables.get(id(shape))
        if kept is None or kept[0] is not shape:
            member_shapes = shape.members
            table = tuple((name, member_shapes[name].serialization.get("name", name), member_shapes[name])
                          for name in member_shapes)
            if len(tables) >= 4096:  # botocore keeps its models' shapes: a guard, not expected
                tables.clear()
            kept = tables[id(shape)] = (shape, table)  # the shape is held, so its id stays its own
        return kept[1]

    def _parse_structure(self: Any, shape: Any, value: Any) -> Any:
        # moto 5.2.5's BaseJSONParser._parse_structure, with each member's name, wire name and shape kept
        if shape.is_document_type:
            return value
        if value is None:
            return None
        final_parsed = self.MAP_TYPE()
        for member_name, json_name, member_shape in members_of(shape):
            raw_value = value.get(json_name)
            if raw_value is not None:
                final_parsed[member_name] = self._parse_shape(member_shape, raw_value)
        return final_parsed

    def _parse_shape(self: Any, shape: Any, node: Any) -> Any:
        # moto's `getattr(self, f"_parse_{type_name}", self._default_handle)`, with the name kept; moto's
        # parsers define these methods on their classes only
        type_name = shape.type_name
        name = method_names.get(type_name)
        if name is None:
            name = method_names[type_name] = f"_parse_{type_name}"
        handler = getattr(type(self), name, None)
        if handler is None:
            return self._default_handle(shape, node)
        return handler(self, shape, node)

    _parse_structure.original = original_structure  # type: ignore[attr-defined]
    _parse_shape.original = original_shape  # type: ignore[attr-defined]
    cls._parse_structure = _parse_structure  # type: ignore[method-assign]
    cls._parse_shape = _parse_shape  # type: ignore[method-assign]


def _patch_serializer_structures() -> None:
    import moto.core.serialize as ser
    from moto.core.utils import MISSING, get_value

    cls = ser.ResponseSerializer
    original = getattr(cls._serialize_type_structure, "original", cls._serialize_type_structure)
    fast_get_value = cls.get_value
    dict_keys = getattr(fast_get_value, "dict_keys", None)
    if dict_keys is None:
        return  # moto_speed_calls' serializer fix is not in: nothing to share
    member_of_base = cls._serialize_structure_member

    def _serialize_type_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        picker = self._value_picker
        kind = type(self)
        if (type(value) is not dict or type(picker) is not ser.XFormedAttributePicker
                or picker.alias_providers is not ser.DEFAULT_ALIAS_PROVIDERS or picker.response_transformers
                or kind.get_value is not fast_get_value
                or kind._serialize_structure_member is not member_of_base):
            return original(self, serialized, value, shape, key)  # type: ignore[return-value]
        # moto 5.2.5's ResponseSerializer._serialize_type_structure, each member asked as get_value would
        wrapper: Any = self.MAP_TYPE() if key else serialized
        for member_key, member_shape in shape.members.items():
            member_shape.parent = shape
            keys = dict_keys(picker, member_key, member_shape)
            if keys is None:
                self._serialize_structure_member(wrapper, value, member_shape, member_key)
                continue
            found = None
            for possible_key in keys:
                got = get_value(value, possible_key, MISSING) if "." in possible_key else value.get(
                    possible_key, MISSING)
                if got is not MISSING:
                    found = got
                    break
            if found is not None:
                self._serialize(wrapper, found, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)
        return None

    _serialize_type_structure.original = original  # type: ignore[attr-defined]
    cls._serialize_type_structure = _serialize_type_structure  # type: ignore[method-assign]
