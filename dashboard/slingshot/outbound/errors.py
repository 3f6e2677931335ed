"""What a request to an address someone gave can fail with
(slingshot/outbound/)."""


class OutboundError(Exception):
    """A request refused or cut short; its text is a sentence for the person
    who gave the address, which never holds what another server answered."""


class UrlRefused(OutboundError):
    pass


class AddressRefused(OutboundError):
    pass


class TooLarge(OutboundError):
    pass


class TooSlow(OutboundError):
    pass
