"""The client layer: how components talk to the API.

`Client` is the interface; `LocalClient` calls an in-process `APIServer` (simulated mode, and
components inside `pinnace up`). Informers list and watch into a local cache and call
handlers on changes (those a handler's `interest.Interest` names, when it gives one); an
`InformerFactory` shares one informer per kind and selection. An
`EventRecorder` writes core/v1 Events as client-go's record package does (kubelets,
controllers); `events_v1.EventBroadcaster` writes events.k8s.io/v1 ones as its events package
does (the scheduler).
"""

from pinnace.client.events import EventRecorder
from pinnace.client.factory import InformerFactory
from pinnace.client.informer import EventHandlers, Informer, object_key
from pinnace.client.interface import Client, Mutation, PatchType
from pinnace.client.local import LocalClient
from pinnace.client.retry import retry_on_conflict

__all__ = [
    "Client",
    "EventHandlers",
    "EventRecorder",
    "Informer",
    "InformerFactory",
    "LocalClient",
    "Mutation",
    "PatchType",
    "object_key",
    "retry_on_conflict",
]
