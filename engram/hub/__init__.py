"""The hub: a local web page to watch the brain and review what it learned (ADR 0042).

``engram hub`` serves it; :func:`create_app` builds the ASGI application over one engram.
Every page is a view of the projections and the ledger; the only write is a review, appended
through the lessons API. A token guards every request, CSRF every write.
"""

from engram.hub.app import HubConfig, create_app
from engram.hub.security import new_token

__all__ = ["HubConfig", "create_app", "new_token"]
