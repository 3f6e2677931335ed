"""The events a webhook can subscribe to (docs/webhooks.md)."""

LINK_CREATED = "link.created"
LINK_UPDATED = "link.updated"
LINK_DELETED = "link.deleted"
LINK_CLICKED = "link.clicked"
LINK_LIMIT_REACHED = "link.limit_reached"
LINK_EXPIRED = "link.expired"
LINK_BROKEN = "link.broken"
IMPORT_FINISHED = "import.finished"
WEBHOOK_TEST = "webhook.test"

# What a webhook may subscribe to; webhook.test is sent when asked for, to any.
EVENT_TYPES = (
    LINK_CREATED,
    LINK_UPDATED,
    LINK_DELETED,
    LINK_CLICKED,
    LINK_LIMIT_REACHED,
    LINK_EXPIRED,
    LINK_BROKEN,
    IMPORT_FINISHED,
    WEBHOOK_TEST,
)
SUBSCRIBABLE = EVENT_TYPES[:-1]
