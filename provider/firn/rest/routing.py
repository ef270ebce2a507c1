"""Routes that read request bodies as strict JSON (RFC 8259).

Python's ``json`` module accepts ``NaN``, ``Infinity`` and ``-Infinity``, which are not JSON:
a number Iceberg stores as an integer or a long would then arrive as a float that cannot
become one. The server's routes read bodies with those constants refused, so such a request
is a 400 "malformed JSON" like any other, naming the constant and where it is; so are bodies
nested too deeply to parse, integers of more digits than Python converts, and strings holding
a lone surrogate (``"\\ud800"`` is a valid JSON escape but no Unicode character: no name,
location or property may hold one, and nothing could store or print it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

# A \uD800-\uDFFF escape: only bodies holding one can decode to a lone surrogate (raw UTF-8
# of a surrogate is not valid UTF-8 and fails decoding anyway), so only they are searched.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """The first string in a parsed JSON value that holds a lone surrogate, if any."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


class StrictJsonRequest(Request):
    """A request whose ``json()`` refuses the non-JSON constants ``NaN`` and ``±Infinity``."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            doc = body.decode("utf-8", errors="replace")

            def refuse(constant: str) -> Any:
                raise json.JSONDecodeError(
                    f"{constant} is not a JSON number", doc, max(doc.find(constant), 0)
                )

            try:
                parsed = json.loads(body, parse_constant=refuse)
            except json.JSONDecodeError:
                raise
            except RecursionError:
                raise json.JSONDecodeError("it is nested too deeply", doc, 0) from None
            except ValueError as e:  # e.g. an integer of more digits than Python converts
                raise json.JSONDecodeError(str(e), doc, 0) from None
            escape = _SURROGATE_ESCAPE.search(body)
            if escape is not None and (bad := _lone_surrogate(parsed)) is not None:
                shown = bad.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
                raise json.JSONDecodeError(
                    f"the string {shown[:80]!r} holds a lone surrogate, which is not Unicode text",
                    doc,
                    escape.start(),
                )
            self._json = parsed
        return self._json


class StrictJsonRoute(APIRoute):
    """An ``APIRoute`` handing its endpoint a :class:`StrictJsonRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict_handler


__all__ = ["StrictJsonRequest", "StrictJsonRoute"]
