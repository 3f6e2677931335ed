from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination


class StrictPageNumberPagination(PageNumberPagination):
    """DRF's page numbers, with `page` given empty refused as any page that
    is not a number is (404), rather than read as the first page."""

    def get_page_number(self, request, paginator):
        if request.query_params.get(self.page_query_param) == "":
            raise NotFound(self.invalid_page_message.format(page_number="", message="That page number is empty"))
        return super().get_page_number(request, paginator)
