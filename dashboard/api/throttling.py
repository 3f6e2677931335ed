from rest_framework.throttling import BaseThrottle

from slingshot import throttle
from slingshot.proxies import client_address
from tokens.models import ApiToken


class TokenOrUserRateThrottle(BaseThrottle):
    """API_THROTTLE_RATE requests per token; session requests share one
    budget per user, anonymous ones one per address (the address sign-in
    throttling sees, slingshot/proxies.py). slingshot/throttle.py counts
    them, in Redis, shared by every worker and by the YOURLS API."""

    def ident(self, request) -> str:
        if isinstance(request.auth, ApiToken):
            return throttle.token_caller(request.auth.pk)
        if request.user and request.user.is_authenticated:
            return throttle.user_caller(request.user.pk)
        return throttle.address_caller(client_address(request))

    def allow_request(self, request, view) -> bool:
        allowed, self.retry_after = throttle.admit(self.ident(request))
        return allowed

    def wait(self) -> float:
        return self.retry_after
