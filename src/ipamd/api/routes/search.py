"""GET /search?q=: prefixes, subnets, reservations, assignments and leases, best match first."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field, field_validator

from ipamd.api import paging
from ipamd.api.errors import bad_request
from ipamd.api.router import RequestContext, Router
from ipamd.api.routes.ipam_models import SearchPage
from ipamd.core import validate
from ipamd.ipam import search, search_terms

router = Router("search")


class SearchQuery(paging.PageQuery):
    q: str = Field(
        min_length=1, max_length=255,
        description="a CIDR, an IP address, a MAC (any common notation), a DUID or the start "
                    "of a host name",
    )

    @field_validator("q")
    @classmethod
    def _printable(cls, value: str) -> str:
        return validate.clean_text(value, max_length=255)


@router.route(
    "GET", "/search", role="viewer", summary="Search the address plan and leases",
    query=SearchQuery, response=SearchPage, errors=(400, 401, 403),
)
async def search_all(ctx: RequestContext) -> dict[str, Any]:
    query = ctx.query_as(SearchQuery)
    terms = search_terms.parse(query.q)
    if terms.empty:
        raise bad_request(
            "q: not a CIDR, IP address, MAC, DUID or host name prefix "
            "(host names are letters, digits, '-', '.' and '_')"
        )
    limit = paging.limit_of(query, ctx.state.config.limits)
    after = paging.after(query, [int, int, uuid.UUID])
    if after is not None and not (0 <= after[0] < 10_000 and 0 <= after[1] < len(search.KINDS)):
        raise bad_request("invalid cursor (take it from next_cursor)")
    hits = await ctx.run(search.run, terms, after, limit)
    page = paging.page(hits, limit, key=lambda h: h["_key"])
    for hit in page["items"]:
        hit.pop("_key", None)
    return page
