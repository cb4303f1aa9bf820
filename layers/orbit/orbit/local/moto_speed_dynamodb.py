"""A speed fix for moto 5.2.5's DynamoDB Query on a table's own key (see moto_speed.py for the rules).

Measured on an execution of 10,000 events (`benchmarks/bench_console.py`, cProfile): moto answers
every Query by walking every item of the table (all partitions) to compare its hash key, then
sorts the partition with `DynamoType.__lt__`, which recomputes both keys' `cast_value` on each
comparison. With ~3,400 commits in one partition and 10,000 index rows beside them, a Query with
`Limit=1` took 0.3-0.6 s, so opening a large execution in the console took seconds locally.

This replacement takes the partition straight from the table's dict (keyed by the same
`DynamoType`, so the same equality) and sorts it by each item's key computed once (the same
order: `__lt__` compares exactly those values; the sort is stable). From there it runs moto's
own loop unchanged: the same start-key skipping, limits, size cap, key comparisons, deep copy,
filter and projection, so the answer is the same. Queries on an index, with legacy
`KeyConditions` filters or a multi-attribute key, go to moto's code as before, with one fix:
their sort computes each item's key once (`sorted_items`).

Every item moto builds (each PutItem, each key of a GetItem) fills a `LimitedSizeDict`, whose
`__setitem__` re-sums the sizes of all the attributes already in it to check the 400 KB limit: an
item of n attributes costs n*(n+1)/2 size computations. `Item.__init__` here keeps the running sum
instead: the same sizes, the same check at the same attribute (ItemSizeTooLarge as before), the
same dict. And PutItem's check for empty sets works the table's key attributes out again (a property
that copies and walks the indexes) for every attribute of the item; they cannot change during the
check, so `validate_put_has_empty_attrs` here works them out once.
"""

from __future__ import annotations

import copy
from typing import Any


def patch_item() -> None:
    from moto.dynamodb.models import dynamo_type as d

    original = getattr(d.Item.__init__, "original", d.Item.__init__)

    def __init__(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        self.attrs = d.LimitedSizeDict()
        held = 0  # what LimitedSizeDict.__setitem__ sums over the keys and values already in
        for key, value in attrs.items():
            typed = d.DynamoType(value)
            value_size = typed.size()
            if held + d.bytesize(key) + value_size > 405000:
                raise d.ItemSizeTooLarge
            dict.__setitem__(self.attrs, key, typed)
            held += d.bytesize(str(key)) + value_size

    __init__.original = original  # type: ignore[attr-defined]
    d.Item.__init__ = __init__  # type: ignore[method-assign]


def patch_put_validation() -> None:
    import moto.dynamodb.responses as r

    original = getattr(r.validate_put_has_empty_attrs, "original", r.validate_put_has_empty_attrs)

    def _validate_attr(attr: dict[str, Any]) -> None:  # moto 5.2.5's nested check, unchanged
        for set_type, error in [("NS", "number"), ("SS", "string")]:
            if set_type in attr and attr[set_type] == []:
                raise r.MockValidationException(
                    f"1 validation error detected: One or more parameter values were invalid: An {error} set "
                    " may not be empty"
                )
        for val in attr.values():
            if isinstance(val, dict):
                _validate_attr(val)

    def validate_put_has_empty_attrs(field_updates: dict[str, Any], table: Any) -> None:
        # moto 5.2.5's, with `table.attribute_keys` read once instead of once per attribute
        if table:
            key_names = table.attribute_keys
            for attr, val in field_updates.items():
                if attr not in key_names:
                    _validate_attr(val)

    validate_put_has_empty_attrs.original = original  # type: ignore[attr-defined]
    r.validate_put_has_empty_attrs = validate_put_has_empty_attrs


def patch_query() -> None:
    import moto.dynamodb.models.table as t

    original = getattr(t.Table.query, "original", t.Table.query)

    def query(  # moto's signature
        self: Any,
        hash_key: Any,
        range_comparison: str | None,
        range_objs: list[Any],
        limit: int,
        exclusive_start_key: dict[str, Any],
        scan_index_forward: bool,
        projection_expressions: list[list[str]] | None,
        index_name: str | None = None,
        consistent_read: bool = False,
        filter_expression: Any = None,
        hash_key_conditions: list[tuple[str, Any]] | None = None,
        range_key_conditions: list[tuple[str, str, list[Any]]] | None = None,
        **filter_kwargs: Any,
    ) -> tuple[list[Any], int, dict[str, Any] | None]:
        if (index_name or filter_kwargs or hash_key is None or not self.range_key_attr
                or (range_key_conditions and len(range_key_conditions) > 1)):
            return original(self, hash_key, range_comparison, range_objs, limit, exclusive_start_key,  # type: ignore[no-any-return]
                            scan_index_forward, projection_expressions, index_name, consistent_read,
                            filter_expression, hash_key_conditions, range_key_conditions, **filter_kwargs)
        last_range_key_name = range_key_conditions[-1][0] if range_key_conditions else None
        hash_attrs, range_attrs = [self.hash_key_attr], [self.range_key_attr]
        partition = self.items.get(hash_key) or {}
        keyed = [(item.range_key.cast_value, n, item) for n, item in enumerate(partition.values())  # type: ignore[union-attr]
                 if isinstance(item, t.Item)]
        keyed.sort(key=lambda k: (k[0], k[1]))
        possible_results = [item for _, _, item in keyed]
        if scan_index_forward is False:
            possible_results.reverse()

        # From here on, moto 5.2.5's loop for a table query (Table.query, "FILTER" onwards).
        results: list[Any] = []
        result_size = 0
        scanned_count = 0
        last_evaluated_key = None
        processing_previous_page = exclusive_start_key is not None
        for result in possible_results:
            if processing_previous_page:
                if self._item_comes_before_dct(result, exclusive_start_key, hash_attrs, range_attrs,
                                               scan_index_forward):
                    continue
                processing_previous_page = False
            reached_length_limit = len(results) == limit
            reached_size_limit = (result_size + result.size()) > t.RESULT_SIZE_LIMIT
            if reached_length_limit or reached_size_limit:
                last_evaluated_key = self._get_last_evaluated_key(results[-1], index_name)
                break
            if not range_comparison:
                results.append(result)
                result_size += result.size()
                scanned_count += 1
            else:
                attr = last_range_key_name
                if attr and result.attrs.get(attr):
                    if result.attrs.get(attr).compare(range_comparison, range_objs):  # type: ignore[union-attr]
                        results.append(result)
                        result_size += result.size()
                        scanned_count += 1
                elif result.range_key.compare(range_comparison, range_objs):  # type: ignore[union-attr]
                    results.append(result)
                    result_size += result.size()
                    scanned_count += 1
        results = copy.deepcopy(results)
        if filter_expression is not None:
            results = [item for item in results if filter_expression.expr(item)]
        if projection_expressions:
            results = [r.project(projection_expressions) for r in results]
        return results, scanned_count, last_evaluated_key

    query.original = original  # type: ignore[attr-defined]  # tests compare both answers
    t.Table.query = query  # type: ignore[method-assign]

    # An index Query (the execution list) sorts by a tuple of DynamoTypes, recomputing their
    # `cast_value` on every comparison; a tuple of those values, computed once per item, sorts the
    # same (an index key attribute has one type, and `__eq__`/`__lt__` compare exactly these).
    def sorted_items(self: Any, hash_key_attrs: list[str], range_key_attrs: list[str | None],
                     items: list[Any]) -> list[Any]:
        attrs = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        items.sort(key=lambda x: tuple(x.attrs[key].cast_value for key in attrs))
        return items

    sorted_items.original = getattr(t.Table.sorted_items, "original", t.Table.sorted_items)  # type: ignore[attr-defined]
    t.Table.sorted_items = sorted_items  # type: ignore[method-assign]
