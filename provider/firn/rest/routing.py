"""Routes that read request bodies as strict JSON (RFC 8259).

Python's ``json`` module accepts ``NaN``, ``Infinity`` and ``-Infinity``, which are not JSON:
a number Iceberg stores as an integer or a long would then arrive as a float that cannot
become one. The server's routes read bodies with those constants refused, so such a request
is a 400 "malformed JSON" like any other, naming the constant and where it is; so are bodies
nested too deeply to parse and integers of more digits than Python converts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute


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
                self._json = json.loads(body, parse_constant=refuse)
            except json.JSONDecodeError:
                raise
            except RecursionError:
                raise json.JSONDecodeError("it is nested too deeply", doc, 0) from None
            except ValueError as e:  # e.g. an integer of more digits than Python converts
                raise json.JSONDecodeError(str(e), doc, 0) from None
        return self._json


class StrictJsonRoute(APIRoute):
    """An ``APIRoute`` handing its endpoint a :class:`StrictJsonRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict_handler


__all__ = ["StrictJsonRequest", "StrictJsonRoute"]
