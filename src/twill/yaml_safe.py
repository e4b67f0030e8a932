"""Bounded YAML reading for every twill reader: hostile files give one clear error.

PyYAML's ``safe_load`` accepts three kinds of input that a reader must refuse:

* *alias bombs* ("billion laughs"): a few anchors that refer to lists of aliases expand to
  billions of values when the result is walked (validated, printed);
* *deep nesting* (``[[[[...]]]]``): the composer recurses once per level and ends in a
  :class:`RecursionError`;
* *duplicate keys*: the last value silently wins.

:func:`load_yaml_text` composes the document with a depth limit, measures the size the
document would have with every alias expanded (without expanding it), refuses duplicate keys,
and only then constructs Python values. The limits are documented in ``docs/formats.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from twill.errors import InputFormatError

__all__ = [
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "load_yaml_text",
    "load_yaml_file",
    "short_repr",
]

MAX_YAML_DEPTH = 64
"""Deepest nesting of lists and mappings accepted (real files use fewer than 10 levels)."""

MAX_YAML_NODES = 1_000_000
"""Most values a document may hold once every alias is expanded."""


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, so that no message grows with the input.

    Containers are described by type and length instead of being printed.

    Examples
    --------
    >>> short_repr("x" * 100, limit=10)
    "'xxxxx...' (100 characters)"
    >>> short_repr([1, 2, 3])
    'a list of 3 items'
    """
    if isinstance(value, list | tuple | dict | set):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    if len(text) <= limit:
        return text
    extra = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return text[: limit - 4] + "...'"[: 4 if isinstance(value, str) else 3] + extra


def _loader_class() -> type:
    """A :class:`yaml.SafeLoader` with a depth limit and no duplicate keys (built on first use,
    so that importing :mod:`twill.io` does not import yaml)."""
    import yaml
    from yaml.constructor import ConstructorError

    class _BoundedLoader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: ANN401 (PyYAML API)
            self._depth += 1
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(
                    f"nesting deeper than {MAX_YAML_DEPTH} levels at line {mark.line + 1}"
                )
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> dict:  # noqa: ANN401
            seen: dict[object, int] = {}
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = key_node.value if isinstance(key_node.value, str) else id(key_node)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise ConstructorError(
                        None,
                        None,
                        f"duplicate key {short_repr(key)} at line {line} "
                        f"(first at line {seen[key]})",
                        key_node.start_mark,
                    )
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return _BoundedLoader


def _expanded_size(root: Any) -> int:  # noqa: ANN401 (a yaml.Node)
    """Number of nodes of ``root`` with every alias expanded, computed without expanding:
    a node's size is 1 plus its children's sizes, memoised per node (aliases share nodes)."""
    import yaml

    size: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            size[id(node)] = 1
            continue
        if done:
            size[id(node)] = min(1 + sum(size[id(c)] for c in children), MAX_YAML_NODES + 1)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    return size[id(root)]


def load_yaml_text(text: str, source: str) -> Any:  # noqa: ANN401 (any YAML value)
    """Parse YAML ``text`` within the limits above.

    Raises
    ------
    InputFormatError
        Invalid YAML, nesting deeper than :data:`MAX_YAML_DEPTH`, more than
        :data:`MAX_YAML_NODES` values after alias expansion, or a duplicate key; the message
        names ``source`` and the line.
    """
    import yaml

    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        n = _expanded_size(node)
        if n > MAX_YAML_NODES:
            raise InputFormatError(
                f"the document expands to more than {MAX_YAML_NODES:,} values (YAML aliases); "
                "refusing to read it",
                source=source,
            )
        return loader.construct_document(node)
    except InputFormatError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputFormatError(f"not valid YAML{where}: {problem}", source=source) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputFormatError(
            f"not valid YAML: {short_repr(str(exc), 120)}", source=source
        ) from None
    except RecursionError:  # belt and braces: the depth limit should come first
        raise InputFormatError("not valid YAML: nested too deeply", source=source) from None
    finally:
        loader.dispose()


def load_yaml_file(path: str | Path) -> Any:  # noqa: ANN401 (any YAML value)
    """Read and parse a YAML file with :func:`load_yaml_text` (UTF-8 and size-limited, as
    :func:`~twill.text.read_text_file` reads it)."""
    from twill.text import read_text_file

    p = Path(path)
    return load_yaml_text(read_text_file(p), str(p))
