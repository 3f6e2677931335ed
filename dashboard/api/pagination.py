"""The API's page-number pagination (REST_FRAMEWORK's DEFAULT_PAGINATION_CLASS)."""

from rest_framework import exceptions, pagination


class PageNumberPagination(pagination.PageNumberPagination):
    """DRF's, except that `page` given empty is a 400, as for every other
    query parameter (api.common.QueryParameters), not page 1; a page
    that is not a number, or past the last, stays DRF's 404."""

    def get_page_number(self, request, paginator):
        if request.query_params.get(self.page_query_param) == "":
            raise exceptions.ValidationError({self.page_query_param: ["Leave the parameter out rather than empty."]})
        return super().get_page_number(request, paginator)
