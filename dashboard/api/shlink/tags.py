"""/rest/v3/tags: the tags of the links the request sees, with their
counts, renamed or deleted through links.tags (each link changed through
links.services, checked, audited and published)."""

from django.core.exceptions import ValidationError
from rest_framework.response import Response

from clicks.selectors import with_click_totals
from links.selectors import links_visible_to
from links.tags import TagStats, tag_rename, tag_stats, tags_delete

from .base import ShlinkView, paging
from .problems import Problem, invalid_data

ORDERS = {
    "tag": lambda stats: stats.tag,
    "shortUrlsCount": lambda stats: stats.links,
    "visits": lambda stats: stats.clicks,
    "nonBotVisits": lambda stats: stats.human_clicks,
}


def _tag_not_found(tag: str) -> Problem:
    return Problem(404, "tag-not-found", "Tag not found", f'Tag with name "{tag}" could not be found', tag=tag)


class _TagsView(ShlinkView):
    orders = ("tag",)
    forbidden_code = "forbidden-tag-operation"

    def page_of(self, request) -> tuple[list[TagStats], dict]:
        """The tags the request sees, searched, ordered and a page of them."""
        query = request.query_params
        pages = paging(query, default=None)
        found = tag_stats(with_click_totals(links_visible_to(request.user)))
        term = query.get("searchTerm", "").lower()
        if term:
            found = [stats for stats in found if term in stats.tag.lower()]
        if order := query.get("orderBy"):
            field, _, direction = order.partition("-")
            if field not in self.orders or direction.upper() not in ("", "ASC", "DESC"):
                choices = ", ".join(f"{name}-ASC, {name}-DESC" for name in self.orders)
                raise invalid_data({"orderBy": [f"Order by one of {choices}."]})
            found.sort(key=lambda stats: (ORDERS[field](stats), stats.tag), reverse=direction.upper() == "DESC")
        page = found[pages.offset : pages.offset + pages.per_page]
        return page, pages.of(len(found), len(page))


class TagsView(_TagsView):
    def get(self, request, version):
        page, pagination = self.page_of(request)
        return Response({"tags": {"data": [stats.tag for stats in page], "pagination": pagination}})

    def put(self, request, version):
        body = self.body()
        missing = {
            name: ["Give the name as a string."]
            for name in ("oldName", "newName")
            if not isinstance(body.get(name), str) or not body[name]
        }
        if missing:
            raise invalid_data(missing)
        old, new = body["oldName"], body["newName"]
        names = {stats.tag for stats in tag_stats(with_click_totals(links_visible_to(request.user)))}
        if old not in names:
            raise _tag_not_found(old)
        if new != old and new in names:
            raise Problem(
                409,
                "tag-conflict",
                "Tag conflict",
                f"You cannot rename tag {old} to {new}, because it already exists",
                oldName=old,
                newName=new,
            )
        try:
            tag_rename(links=links_visible_to(request.user), old=old, new=new, actor=request.user)
        except ValidationError as exc:
            raise invalid_data({"newName": exc.messages}) from None
        return Response(status=204)

    def delete(self, request, version):
        tags = [tag for tag in [*request.query_params.getlist("tags[]"), *request.query_params.getlist("tags")] if tag]
        tags_delete(links=links_visible_to(request.user), tags=tags, actor=request.user)
        return Response(status=204)


class TagsStatsView(_TagsView):
    orders = tuple(ORDERS)

    def get(self, request, version):
        page, pagination = self.page_of(request)
        data = [
            {
                "tag": stats.tag,
                "shortUrlsCount": stats.links,
                "visitsSummary": {
                    "total": stats.clicks,
                    "nonBots": stats.human_clicks,
                    "bots": stats.clicks - stats.human_clicks,
                },
            }
            for stats in page
        ]
        return Response({"tags": {"data": data, "pagination": pagination}})
