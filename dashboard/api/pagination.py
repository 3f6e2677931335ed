"""The API's page-number pagination, strict about its parameter as the other
query parameters are (serializers.QueryParameters): `page=` given empty is
a 400, not page 1."""

from rest_framework import pagination, serializers


class PageNumberPagination(pagination.PageNumberPagination):
    def get_page_number(self, request, paginator):
        if request.query_params.get(self.page_query_param, None) == "":
            raise serializers.ValidationError({self.page_query_param: ["Leave the parameter out rather than empty."]})
        return super().get_page_number(request, paginator)
